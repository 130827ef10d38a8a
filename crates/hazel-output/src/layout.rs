//! From Stan CSV column names back to declared variables: `theta.2.3` is element (1, 2)
//! (0-based) of `theta`, whose shape is the largest index seen in each position.
//!
//! This is how ArviZ's `from_cmdstan` reads CSV columns, and it recovers the declared shape
//! because Stan writes every element of every output variable. Column order within a variable
//! does not matter (Stan writes matrices column-major); each column is placed by its indices.
//! Columns that do not fit this pattern — complex parts (`z.real`), tuple elements (`t:1`), or
//! an indexed variable with a missing element — become scalar variables named by the whole
//! column name, so no column is ever lost.

/// One output variable.
#[derive(Debug, Clone, PartialEq)]
pub struct Variable {
    pub name: String,
    /// Declared shape; empty for a scalar.
    pub shape: Vec<u64>,
    /// For each element in row-major (C) order of `shape`, its column among the model's columns.
    pub columns: Vec<usize>,
}

/// The model's variables from its column names (the names after the sampler's `__` columns),
/// in the order of their first column.
///
/// Allocation-light (one flat index list per variable, a hash map from name to variable): for
/// wide models this runs in the Zarr writer's `begin`, whose transient memory counts against
/// the sink's bound.
pub fn variables(names: &[String]) -> Vec<Variable> {
    /// The columns of one base name; `rank` is `None` once members disagree on it.
    struct Group<'a> {
        name: &'a str,
        rank: Option<usize>,
        columns: Vec<usize>,
        /// Every member's indices, `rank` per member.
        indices: Vec<u64>,
    }
    let mut groups: Vec<Group> = Vec::new();
    let mut by_name: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (column, name) in names.iter().enumerate() {
        let mut parts = name.split('.');
        let base = parts.next().unwrap_or_default();
        let mut indices = Vec::new();
        let mut is_index = true;
        for part in parts {
            match part.parse::<u64>().ok().filter(|&i| i >= 1) {
                Some(i) => indices.push(i),
                None => {
                    is_index = false;
                    break;
                }
            }
        }
        // A column that is not an array element is a scalar named by the whole name; one
        // that shares its name with an array's base makes them all scalars (as below).
        let (key, indices) = if !is_index || indices.is_empty() {
            (name.as_str(), Vec::new())
        } else {
            (base, indices)
        };
        let slot = *by_name.entry(key).or_insert_with(|| {
            groups.push(Group {
                name: key,
                rank: Some(indices.len()),
                columns: Vec::new(),
                indices: Vec::new(),
            });
            groups.len() - 1
        });
        let group = &mut groups[slot];
        if group.rank != Some(indices.len()) {
            group.rank = None;
        }
        group.columns.push(column);
        group.indices.extend_from_slice(&indices);
    }
    let mut variables = Vec::with_capacity(groups.len());
    for group in groups {
        let array = match group.rank {
            Some(0) if group.columns.len() == 1 => Some((Vec::new(), group.columns.clone())),
            Some(0) => None,
            Some(rank) => complete_array(rank, &group.columns, &group.indices),
            None => None,
        };
        match array {
            Some((shape, columns)) => variables.push(Variable {
                name: group.name.to_string(),
                shape,
                columns,
            }),
            None => {
                for column in group.columns {
                    variables.push(Variable {
                        name: names[column].clone(),
                        shape: Vec::new(),
                        columns: vec![column],
                    });
                }
            }
        }
    }
    variables
}

/// The shape and element → column map when the members (`columns`, with `rank` indices each
/// in `indices`) are exactly the elements of an array.
fn complete_array(
    rank: usize,
    columns: &[usize],
    indices: &[u64],
) -> Option<(Vec<u64>, Vec<usize>)> {
    let mut shape = vec![0u64; rank];
    for idx in indices.chunks_exact(rank) {
        for (extent, &i) in shape.iter_mut().zip(idx) {
            *extent = (*extent).max(i);
        }
    }
    let size = shape
        .iter()
        .try_fold(1u64, |acc, &extent| acc.checked_mul(extent))?;
    if size != columns.len() as u64 {
        return None;
    }
    let mut ordered = vec![usize::MAX; columns.len()];
    for (&column, idx) in columns.iter().zip(indices.chunks_exact(rank)) {
        let offset = idx
            .iter()
            .zip(&shape)
            .fold(0u64, |acc, (&i, &extent)| acc * extent + (i - 1));
        let slot = &mut ordered[offset as usize];
        if *slot != usize::MAX {
            return None;
        }
        *slot = column;
    }
    Some((shape, ordered))
}

/// ArviZ's name of an algorithm's statistic column (its `sample_stats` variable): NUTS's
/// columns get the names ArviZ's `from_cmdstan` gives them (`accept_stat__` → `acceptance_rate`,
/// `n_leapfrog__` → `n_steps`, …); any other column loses its trailing `__` (`lp_approx__` →
/// `lp_approx`, `log_g__` → `log_g`).
#[cfg(any(feature = "zarr", test))]
pub(crate) fn arviz_stat_name(column: &str) -> &str {
    match column {
        "lp__" => "lp",
        "accept_stat__" => "acceptance_rate",
        "stepsize__" => "step_size",
        "treedepth__" => "tree_depth",
        "n_leapfrog__" => "n_steps",
        "divergent__" => "diverging",
        "energy__" => "energy",
        other => other.strip_suffix("__").unwrap_or(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn statistic_columns_get_arviz_names() {
        let got: Vec<&str> = [
            "lp__",
            "accept_stat__",
            "n_leapfrog__",
            "divergent__",
            "lp_approx__",
            "log_g__",
            "odd",
        ]
        .map(arviz_stat_name)
        .to_vec();
        assert_eq!(
            got,
            [
                "lp",
                "acceptance_rate",
                "n_steps",
                "diverging",
                "lp_approx",
                "log_g",
                "odd"
            ]
        );
    }

    #[test]
    fn matrices_written_column_major_get_row_major_elements() {
        let vars = variables(&names(&[
            "mu", "S.1.1", "S.2.1", "S.1.2", "S.2.2", "S.1.3", "S.2.3", "v.1", "v.2",
        ]));
        assert_eq!(vars.len(), 3);
        assert_eq!(vars[0].shape, Vec::<u64>::new());
        assert_eq!(vars[1].name, "S");
        assert_eq!(vars[1].shape, vec![2, 3]);
        // Row-major: S[1,1], S[1,2], S[1,3], S[2,1], …
        assert_eq!(vars[1].columns, vec![1, 3, 5, 2, 4, 6]);
        assert_eq!(vars[2].columns, vec![7, 8]);
    }

    #[test]
    fn a_scalar_sharing_an_arrays_name_makes_them_all_scalars() {
        let vars = variables(&names(&["a", "b.1", "a.1", "a.2", "b.2"]));
        let got: Vec<(&str, Vec<usize>)> = vars
            .iter()
            .map(|v| (v.name.as_str(), v.columns.clone()))
            .collect();
        assert_eq!(
            got,
            [
                ("a", vec![0]),
                ("a.1", vec![2]),
                ("a.2", vec![3]),
                ("b", vec![1, 4])
            ]
        );
        assert_eq!(vars[3].shape, vec![2]);
    }

    #[test]
    fn columns_that_are_not_array_elements_stay_scalars() {
        let vars = variables(&names(&["z.real", "z.imag", "t:1", "a.1", "a.3"]));
        let got: Vec<&str> = vars.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(got, ["z.real", "z.imag", "t:1", "a.1", "a.3"]);
        assert!(vars.iter().all(|v| v.shape.is_empty()));
    }
}
