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
pub fn variables(names: &[String]) -> Vec<Variable> {
    struct Group {
        name: String,
        members: Vec<(usize, Vec<u64>)>,
    }
    let mut groups: Vec<Group> = Vec::new();
    for (column, name) in names.iter().enumerate() {
        let mut parts = name.split('.');
        let base = parts.next().unwrap_or_default();
        let indices: Option<Vec<u64>> = parts
            .map(|p| p.parse::<u64>().ok().filter(|&i| i >= 1))
            .collect();
        match indices {
            Some(indices) if !indices.is_empty() => {
                match groups.iter_mut().find(|g| g.name == base) {
                    Some(group) => group.members.push((column, indices)),
                    None => groups.push(Group {
                        name: base.to_string(),
                        members: vec![(column, indices)],
                    }),
                }
            }
            _ => groups.push(Group {
                name: name.clone(),
                members: vec![(column, Vec::new())],
            }),
        }
    }
    let mut variables = Vec::with_capacity(groups.len());
    for group in groups {
        match complete_array(&group.members) {
            Some((shape, columns)) => variables.push(Variable {
                name: group.name,
                shape,
                columns,
            }),
            None => {
                for (column, _) in group.members {
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

/// The shape and element → column map when the members are exactly the elements of an array.
fn complete_array(members: &[(usize, Vec<u64>)]) -> Option<(Vec<u64>, Vec<usize>)> {
    let rank = members[0].1.len();
    if members.iter().any(|(_, idx)| idx.len() != rank) {
        return None;
    }
    let mut shape = vec![0u64; rank];
    for (_, idx) in members {
        for (extent, &i) in shape.iter_mut().zip(idx) {
            *extent = (*extent).max(i);
        }
    }
    let size = shape.iter().product::<u64>();
    if size != members.len() as u64 {
        return None;
    }
    let mut columns = vec![usize::MAX; members.len()];
    for (column, idx) in members {
        let offset = idx
            .iter()
            .zip(&shape)
            .fold(0u64, |acc, (&i, &extent)| acc * extent + (i - 1));
        let slot = &mut columns[offset as usize];
        if *slot != usize::MAX {
            return None;
        }
        *slot = *column;
    }
    Some((shape, columns))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
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
    fn columns_that_are_not_array_elements_stay_scalars() {
        let vars = variables(&names(&["z.real", "z.imag", "t:1", "a.1", "a.3"]));
        let got: Vec<&str> = vars.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(got, ["z.real", "z.imag", "t:1", "a.1", "a.3"]);
        assert!(vars.iter().all(|v| v.shape.is_empty()));
    }
}
