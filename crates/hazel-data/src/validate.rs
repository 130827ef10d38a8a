//! Checking parsed JSON against a declaration.

use crate::json::{Node, NumBlock, Numbers};
use crate::{
    element_count, element_name, format_dims, format_number, BaseType, Bound, Constraint, DataDecl,
    DataError, DataFile, DataType, DataValue, Values,
};

/// Stan's tolerance for structural constraints (`CONSTRAINT_TOLERANCE`).
const CONSTRAINT_TOLERANCE: f64 = 1e-8;

/// Reads the declared variable `decl` from `file`, checking its sizes, integer-ness, bounds
/// and constraint. The value is returned row-major (see the crate documentation).
pub fn read_var(file: &DataFile, decl: &DataDecl) -> Result<DataValue, DataError> {
    let node = file.get(&decl.name).ok_or_else(|| DataError::Missing {
        name: decl.name.clone(),
    })?;
    convert(node, &decl.ty, &decl.name)
}

fn describe_expected(shape: &[usize], base: &BaseType) -> String {
    let unit = match base {
        BaseType::Complex => "a complex number [re, im]",
        BaseType::Tuple(_) => "a tuple (an object with keys \"1\", \"2\", …)",
        _ => "a single number",
    };
    match shape.len() {
        0 => unit.to_string(),
        1 if matches!(base, BaseType::Int | BaseType::Real) => {
            format!("an array of {} numbers", shape[0])
        }
        _ => format!("{} ({})", format_dims(shape), plural_unit(base)),
    }
}

fn plural_unit(base: &BaseType) -> &'static str {
    match base {
        BaseType::Complex => "complex numbers",
        BaseType::Tuple(_) => "tuples",
        _ => "numbers",
    }
}

fn describe_found(node: &Node) -> String {
    match node {
        Node::Block(b) if b.dims.len() == 1 => format!("an array of {} numbers", b.dims[0]),
        Node::Block(b) if !b.dims.is_empty() => format_dims(&b.dims),
        other => other.describe(),
    }
}

fn convert(node: &Node, ty: &DataType, name: &str) -> Result<DataValue, DataError> {
    if let BaseType::Tuple(components) = &ty.base {
        return convert_tuple(node, ty, components, name);
    }
    let mut expected_dims = ty.shape.clone();
    if ty.base == BaseType::Complex {
        expected_dims.push(2);
    }
    let shape_error = || DataError::Shape {
        name: name.to_string(),
        expected: describe_expected(&ty.shape, &ty.base),
        found: describe_found(node),
    };
    let block = match node {
        Node::Block(b) => b,
        _ => return Err(shape_error()),
    };
    let sizes_match = block.dims == expected_dims
        // An empty container may be written `[]` whatever its declared nesting.
        || (expected_dims.contains(&0) && block.numbers.is_empty() && block.dims == [0]);
    if !sizes_match {
        return Err(shape_error());
    }
    let values = match &ty.base {
        BaseType::Int => Values::Ints(to_ints(block, &ty.shape, name)?),
        BaseType::Real => Values::Reals(to_reals(&block.numbers)),
        BaseType::Complex => Values::Complex(to_reals(&block.numbers)),
        // Dispatched to `convert_tuple` at the top of this function.
        BaseType::Tuple(components) => return convert_tuple(node, ty, components, name),
    };
    if ty.base != BaseType::Complex {
        check_bounds(&values, ty, name)?;
        if let Values::Reals(v) = &values {
            check_constraint(v, ty, name)?;
        } else if ty.constraint != Constraint::None {
            let v: Vec<f64> = to_reals(&block.numbers);
            check_constraint(&v, ty, name)?;
        }
    }
    Ok(DataValue {
        dims: ty.shape.clone(),
        values,
    })
}

fn to_reals(numbers: &Numbers) -> Vec<f64> {
    match numbers {
        Numbers::Ints(v) => v.iter().map(|&i| i as f64).collect(),
        Numbers::Reals(v) => v.clone(),
    }
}

fn to_ints(block: &NumBlock, dims: &[usize], name: &str) -> Result<Vec<i64>, DataError> {
    match &block.numbers {
        Numbers::Ints(v) => {
            if let Some(k) = v
                .iter()
                .position(|&i| i < i32::MIN as i64 || i > i32::MAX as i64)
            {
                return Err(DataError::NotInt {
                    element: element_name(name, dims, k),
                    value: v[k].to_string(),
                    reason: "is outside the range of a Stan int (32 bits)".to_string(),
                });
            }
            Ok(v.clone())
        }
        Numbers::Reals(v) => {
            let k = block
                .first_non_int
                .unwrap_or(0)
                .min(v.len().saturating_sub(1));
            let value = v
                .get(k)
                .map_or_else(|| "?".to_string(), |x| format_real_literal(*x));
            Err(DataError::NotInt {
                element: element_name(name, dims, k),
                value,
                reason: "is not an integer, but the variable is declared int".to_string(),
            })
        }
    }
}

/// A real literal that still reads as real (`2.0`, not `2`).
fn format_real_literal(x: f64) -> String {
    let s = format_number(x);
    if x.is_finite() && !s.contains(['.', 'e', 'E']) {
        format!("{s}.0")
    } else {
        s
    }
}

fn check_bounds(values: &Values, ty: &DataType, name: &str) -> Result<(), DataError> {
    if ty.lower.is_none() && ty.upper.is_none() {
        return Ok(());
    }
    let n = match values {
        Values::Ints(v) => v.len(),
        Values::Reals(v) => v.len(),
        _ => 0,
    };
    for (which, bound) in [("lower", &ty.lower), ("upper", &ty.upper)] {
        if let Some(Bound::PerElement(v)) = bound {
            if v.len() != n {
                return Err(DataError::BoundSize {
                    name: name.to_string(),
                    which,
                    bound_len: v.len(),
                    len: n,
                });
            }
        }
    }
    let get = |k: usize| match values {
        Values::Ints(v) => v[k] as f64,
        Values::Reals(v) => v[k],
        _ => f64::NAN,
    };
    for k in 0..n {
        let x = get(k);
        let element = || element_name(name, &ty.shape, k);
        if let Some(lower) = &ty.lower {
            let lb = lower.at(k);
            if x.is_nan() || x < lb {
                let message = if x.is_nan() {
                    format!(
                        "is not a number, but must be at least its lower bound {}",
                        format_number(lb)
                    )
                } else {
                    format!("is below its lower bound {}", format_number(lb))
                };
                return Err(DataError::Bound {
                    element: element(),
                    value: format_number(x),
                    message,
                });
            }
        }
        if let Some(upper) = &ty.upper {
            let ub = upper.at(k);
            if x.is_nan() || x > ub {
                let message = if x.is_nan() {
                    format!(
                        "is not a number, but must be at most its upper bound {}",
                        format_number(ub)
                    )
                } else {
                    format!("is above its upper bound {}", format_number(ub))
                };
                return Err(DataError::Bound {
                    element: element(),
                    value: format_number(x),
                    message,
                });
            }
        }
    }
    Ok(())
}

fn check_constraint(v: &[f64], ty: &DataType, name: &str) -> Result<(), DataError> {
    let constraint = ty.constraint;
    let unit_dims = constraint.trailing_dims();
    if unit_dims == 0 {
        return Ok(());
    }
    let err = |message: String| DataError::Constraint {
        name: name.to_string(),
        constraint: constraint.stan_name(),
        message,
    };
    if ty.shape.len() < unit_dims {
        return Err(err(format!(
            "a {} needs {} dimension(s) but the declaration has {}",
            constraint.stan_name(),
            unit_dims,
            ty.shape.len()
        )));
    }
    let outer_dims = &ty.shape[..ty.shape.len() - unit_dims];
    let unit_shape = &ty.shape[ty.shape.len() - unit_dims..];
    let unit_len = element_count(unit_shape);
    if unit_len == 0 || v.is_empty() {
        return Ok(());
    }
    for (u, chunk) in v.chunks(unit_len).enumerate() {
        // Name of this vector/matrix within the array (`x[2]`), for messages.
        let unit_name = element_name(name, outer_dims, u);
        let at = |i: usize| element_name(&unit_name, unit_shape, i);
        let result = match constraint {
            Constraint::None => Ok(()),
            Constraint::Simplex => check_simplex(chunk, &at),
            Constraint::UnitVector => {
                let ss: f64 = chunk.iter().map(|x| x * x).sum();
                if (ss - 1.0).abs() <= CONSTRAINT_TOLERANCE {
                    Ok(())
                } else {
                    Err(format!(
                        "the sum of squares of `{unit_name}` is {ss}, but should be 1"
                    ))
                }
            }
            Constraint::SumToZeroVector => {
                let s: f64 = chunk.iter().sum();
                if s.abs() <= CONSTRAINT_TOLERANCE {
                    Ok(())
                } else {
                    Err(format!("the sum of `{unit_name}` is {s}, but should be 0"))
                }
            }
            Constraint::Ordered | Constraint::PositiveOrdered => {
                let mut r = Ok(());
                if constraint == Constraint::PositiveOrdered
                    && (chunk[0].is_nan() || chunk[0] < 0.0)
                {
                    r = Err(format!(
                        "`{}` = {} is negative",
                        at(0),
                        format_number(chunk[0])
                    ));
                }
                if r.is_ok() {
                    for i in 1..chunk.len() {
                        if chunk[i].partial_cmp(&chunk[i - 1]) != Some(std::cmp::Ordering::Greater)
                        {
                            r = Err(format!(
                                "`{}` = {} is not greater than `{}` = {}",
                                at(i),
                                format_number(chunk[i]),
                                at(i - 1),
                                format_number(chunk[i - 1])
                            ));
                            break;
                        }
                    }
                }
                r
            }
            _ => check_matrix_constraint(constraint, chunk, unit_shape[0], unit_shape[1], &at),
        };
        result.map_err(err)?;
    }
    Ok(())
}

fn check_simplex(v: &[f64], at: &dyn Fn(usize) -> String) -> Result<(), String> {
    if let Some(i) = v.iter().position(|x| x.is_nan() || *x < 0.0) {
        return Err(format!("`{}` = {} is negative", at(i), format_number(v[i])));
    }
    let s: f64 = v.iter().sum();
    if (s - 1.0).abs() > CONSTRAINT_TOLERANCE {
        return Err(format!("its elements sum to {s}, but should sum to 1"));
    }
    Ok(())
}

/// `chunk` is one matrix, row-major, `rows × cols`.
fn check_matrix_constraint(
    constraint: Constraint,
    m: &[f64],
    rows: usize,
    cols: usize,
    at: &dyn Fn(usize) -> String,
) -> Result<(), String> {
    let get = |i: usize, j: usize| m[i * cols + j];
    let square = || {
        if rows == cols {
            Ok(())
        } else {
            Err(format!("it is {rows} × {cols}, but must be square"))
        }
    };
    let lower_triangular = || {
        for i in 0..rows {
            for j in (i + 1)..cols {
                if get(i, j) != 0.0 {
                    return Err(format!(
                        "`{}` = {} is above the diagonal and must be 0",
                        at(i * cols + j),
                        format_number(get(i, j))
                    ));
                }
            }
        }
        Ok(())
    };
    let positive_diagonal = || {
        for i in 0..rows.min(cols) {
            if get(i, i).is_nan() || get(i, i) <= 0.0 {
                return Err(format!(
                    "the diagonal element `{}` = {} is not positive",
                    at(i * cols + i),
                    format_number(get(i, i))
                ));
            }
        }
        Ok(())
    };
    let symmetric = || {
        for i in 0..rows {
            for j in (i + 1)..cols {
                if (get(i, j) - get(j, i)).abs() > CONSTRAINT_TOLERANCE || get(i, j).is_nan() {
                    return Err(format!(
                        "`{}` = {} but `{}` = {}: not symmetric",
                        at(i * cols + j),
                        format_number(get(i, j)),
                        at(j * cols + i),
                        format_number(get(j, i))
                    ));
                }
            }
        }
        Ok(())
    };
    let positive_definite = || {
        // Unblocked Cholesky on a copy; a non-positive pivot means not positive definite.
        let n = rows;
        let mut l = vec![0.0; n * n];
        for j in 0..n {
            let mut d = get(j, j);
            for k in 0..j {
                d -= l[j * n + k] * l[j * n + k];
            }
            if d.is_nan() || d <= 0.0 {
                return Err("it is not positive definite".to_string());
            }
            let djj = d.sqrt();
            l[j * n + j] = djj;
            for i in (j + 1)..n {
                let mut s = get(i, j);
                for k in 0..j {
                    s -= l[i * n + k] * l[j * n + k];
                }
                l[i * n + j] = s / djj;
            }
        }
        Ok(())
    };
    match constraint {
        Constraint::CholeskyFactorCov => {
            if rows < cols {
                return Err(format!(
                    "it is {rows} × {cols}, but must have at least as many rows as columns"
                ));
            }
            lower_triangular()?;
            positive_diagonal()
        }
        Constraint::CholeskyFactorCorr => {
            square()?;
            lower_triangular()?;
            positive_diagonal()?;
            for i in 0..rows {
                let ss: f64 = (0..cols).map(|j| get(i, j) * get(i, j)).sum();
                if (ss - 1.0).abs() > CONSTRAINT_TOLERANCE {
                    return Err(format!(
                        "row {} has squared length {ss}, but every row must have length 1",
                        i + 1
                    ));
                }
            }
            Ok(())
        }
        Constraint::CovMatrix => {
            square()?;
            symmetric()?;
            positive_definite()
        }
        Constraint::CorrMatrix => {
            square()?;
            for i in 0..rows {
                if (get(i, i) - 1.0).abs() > CONSTRAINT_TOLERANCE {
                    return Err(format!(
                        "the diagonal element `{}` = {} is not 1",
                        at(i * cols + i),
                        format_number(get(i, i))
                    ));
                }
            }
            symmetric()?;
            positive_definite()
        }
        Constraint::ColumnStochastic => {
            for j in 0..cols {
                let column: Vec<f64> = (0..rows).map(|i| get(i, j)).collect();
                check_simplex(&column, &|i| at(i * cols + j))
                    .map_err(|e| format!("column {}: {e}", j + 1))?;
            }
            Ok(())
        }
        Constraint::RowStochastic => {
            for i in 0..rows {
                check_simplex(&m[i * cols..(i + 1) * cols], &|j| at(i * cols + j))
                    .map_err(|e| format!("row {}: {e}", i + 1))?;
            }
            Ok(())
        }
        Constraint::SumToZeroMatrix => {
            for i in 0..rows {
                let s: f64 = (0..cols).map(|j| get(i, j)).sum();
                if s.abs() > CONSTRAINT_TOLERANCE {
                    return Err(format!("row {} sums to {s}, but should sum to 0", i + 1));
                }
            }
            for j in 0..cols {
                let s: f64 = (0..rows).map(|i| get(i, j)).sum();
                if s.abs() > CONSTRAINT_TOLERANCE {
                    return Err(format!("column {} sums to {s}, but should sum to 0", j + 1));
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// A tuple, or an array of tuples: collect the tuple objects in row-major order, then read
/// each component across all of them.
fn convert_tuple(
    node: &Node,
    ty: &DataType,
    components: &[DataType],
    name: &str,
) -> Result<DataValue, DataError> {
    let shape_error = || DataError::Shape {
        name: name.to_string(),
        expected: describe_expected(&ty.shape, &ty.base),
        found: describe_found(node),
    };
    let mut objects: Vec<&Vec<(String, Node)>> = Vec::new();
    collect_objects(node, &ty.shape, &mut objects).map_err(|_| shape_error())?;
    let count = element_count(&ty.shape);
    if objects.len() != count {
        return Err(shape_error());
    }
    let mut out_components = Vec::with_capacity(components.len());
    for (j, component_ty) in components.iter().enumerate() {
        let key = (j + 1).to_string();
        let mut parts = Vec::with_capacity(count);
        for (t, members) in objects.iter().enumerate() {
            let tuple_name = element_name(name, &ty.shape, t);
            let component_name = format!("{tuple_name}.{key}");
            let Some((_, component_node)) = members.iter().find(|(k, _)| *k == key) else {
                return Err(DataError::Missing {
                    name: component_name,
                });
            };
            parts.push(convert(component_node, component_ty, &component_name)?);
        }
        out_components.push(concat_values(&ty.shape, component_ty, parts));
    }
    Ok(DataValue {
        dims: ty.shape.clone(),
        values: Values::Tuple(out_components),
    })
}

fn collect_objects<'a>(
    node: &'a Node,
    shape: &[usize],
    out: &mut Vec<&'a Vec<(String, Node)>>,
) -> Result<(), ()> {
    if shape.is_empty() {
        return match node {
            Node::Object(members) => {
                out.push(members);
                Ok(())
            }
            _ => Err(()),
        };
    }
    match node {
        Node::List(items) if items.len() == shape[0] => {
            for item in items {
                collect_objects(item, &shape[1..], out)?;
            }
            Ok(())
        }
        // `[]` for an empty array of tuples.
        Node::Block(b) if b.numbers.is_empty() && shape.contains(&0) => Ok(()),
        _ => Err(()),
    }
}

/// Concatenates per-tuple component values (each of type `ty`) into one structure-of-arrays
/// value with dims `outer ++ ty.shape`.
fn concat_values(outer: &[usize], ty: &DataType, parts: Vec<DataValue>) -> DataValue {
    let mut dims = outer.to_vec();
    dims.extend_from_slice(&ty.shape);
    let values = match &ty.base {
        BaseType::Int => Values::Ints(
            parts
                .into_iter()
                .flat_map(|p| {
                    if let Values::Ints(v) = p.values {
                        v
                    } else {
                        Vec::new()
                    }
                })
                .collect(),
        ),
        BaseType::Real => Values::Reals(
            parts
                .into_iter()
                .flat_map(|p| {
                    if let Values::Reals(v) = p.values {
                        v
                    } else {
                        Vec::new()
                    }
                })
                .collect(),
        ),
        BaseType::Complex => Values::Complex(
            parts
                .into_iter()
                .flat_map(|p| {
                    if let Values::Complex(v) = p.values {
                        v
                    } else {
                        Vec::new()
                    }
                })
                .collect(),
        ),
        BaseType::Tuple(subtypes) => {
            // Each part's sub-component k has dims `ty.shape ++ subtypes[k].shape`; stacking
            // them over the outer array gives `outer ++ ty.shape ++ subtypes[k].shape`.
            let mut subs: Vec<Vec<DataValue>> = subtypes.iter().map(|_| Vec::new()).collect();
            for p in parts {
                if let Values::Tuple(cs) = p.values {
                    for (k, c) in cs.into_iter().enumerate() {
                        if let Some(s) = subs.get_mut(k) {
                            s.push(c);
                        }
                    }
                }
            }
            let components = subs
                .into_iter()
                .zip(subtypes)
                .map(|(sub_parts, sub_ty)| {
                    let mut sub_ty_full = sub_ty.clone();
                    let mut shape = ty.shape.clone();
                    shape.extend_from_slice(&sub_ty.shape);
                    sub_ty_full.shape = shape;
                    concat_values(outer, &sub_ty_full, sub_parts)
                })
                .collect();
            Values::Tuple(components)
        }
    };
    DataValue { dims, values }
}
