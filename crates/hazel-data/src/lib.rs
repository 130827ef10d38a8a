//! CmdStan JSON data: parsing and validation against a program's data block.
//!
//! [`DataFile::parse`] reads a CmdStan JSON data file into typed flat buffers (numeric arrays
//! become one `Vec<i64>` or `Vec<f64>` each, never a tree of values). [`read_var`] then checks
//! one declared variable against its [`DataDecl`] (type, sizes, integer-ness, bounds,
//! constraint) and returns it as a [`DataValue`].
//!
//! The declaration type is independent of the Stan syntax tree: the front end evaluates sizes
//! and bounds and fills in a [`DataDecl`].
//!
//! **Layout.** A [`DataValue`] holds its elements in *row-major* order: every index outermost
//! first, and for vectors/matrices the row index before the column index, i.e. the order of
//! the JSON nesting. (`array[2] matrix[3, 4] x` → `x[1,1,1], x[1,1,2], …, x[1,1,4], x[1,2,1], …`.)
//! Stan's own memory order for matrices is column-major; [`DataValue::to_column_major`]
//! converts the trailing two dimensions.
//!
//! JSON conventions accepted (CmdStan's): integers and reals; the strings `"inf"`, `"-inf"`,
//! `"Infinity"`, `"-Infinity"`, `"NaN"` (and bare `Infinity`/`NaN`); vectors and arrays as JSON
//! arrays; matrices as lists of rows; complex numbers as `[re, im]`; tuples as objects with
//! keys `"1"`, `"2"`, …; empty containers as `[]`. Top-level fields nobody asks for are ignored.

#![forbid(unsafe_code)]

mod json;
mod validate;

use std::collections::HashMap;
use std::fmt;

pub use json::{Node, NumBlock, Numbers};
pub use validate::read_var;

/// A parsed data file: top-level variables by name.
#[derive(Debug, Clone)]
pub struct DataFile {
    vars: HashMap<String, Node>,
}

impl DataFile {
    /// Parses a CmdStan JSON data file. The top level must be an object; a name given twice is
    /// an error (CmdStan rejects it too).
    pub fn parse(text: &str) -> Result<DataFile, DataError> {
        let root = json::Parser::new(text).parse_document()?;
        let members = match root {
            Node::Object(members) => members,
            other => {
                return Err(DataError::Syntax {
                    line: 1,
                    column: 1,
                    message: format!(
                        "the top level of a data file must be an object, found {}",
                        other.describe()
                    ),
                })
            }
        };
        let mut vars = HashMap::with_capacity(members.len());
        for (name, node) in members {
            if vars.contains_key(&name) {
                return Err(DataError::Duplicate { name });
            }
            vars.insert(name, node);
        }
        Ok(DataFile { vars })
    }

    /// An empty data file (a model without data).
    pub fn empty() -> DataFile {
        DataFile {
            vars: HashMap::new(),
        }
    }

    /// The raw parsed value of a top-level field.
    pub fn get(&self, name: &str) -> Option<&Node> {
        self.vars.get(name)
    }

    /// Names of all top-level fields (unordered).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.vars.keys().map(|s| s.as_str())
    }
}

/// The base element type of a declared variable.
#[derive(Debug, Clone, PartialEq)]
pub enum BaseType {
    Int,
    Real,
    Complex,
    /// A tuple with these component types (each with its own shape, bounds and constraint).
    Tuple(Vec<DataType>),
}

/// A bound: one value for all elements, or one per element (row-major, same size as the
/// variable), as Stan allows `vector<lower=L>[N]` with a vector `L`.
#[derive(Debug, Clone, PartialEq)]
pub enum Bound {
    Scalar(f64),
    PerElement(Vec<f64>),
}

impl Bound {
    fn at(&self, flat_index: usize) -> f64 {
        match self {
            Bound::Scalar(b) => *b,
            Bound::PerElement(v) => v.get(flat_index).copied().unwrap_or(f64::NAN),
        }
    }
}

/// A structural constraint on the trailing vector (one dimension) or matrix (two dimensions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Constraint {
    None,
    Simplex,
    UnitVector,
    SumToZeroVector,
    Ordered,
    PositiveOrdered,
    SumToZeroMatrix,
    CholeskyFactorCorr,
    CholeskyFactorCov,
    CorrMatrix,
    CovMatrix,
    ColumnStochastic,
    RowStochastic,
}

impl Constraint {
    /// How many trailing dimensions the constraint applies to as one unit.
    pub fn trailing_dims(self) -> usize {
        match self {
            Constraint::None => 0,
            Constraint::Simplex
            | Constraint::UnitVector
            | Constraint::SumToZeroVector
            | Constraint::Ordered
            | Constraint::PositiveOrdered => 1,
            _ => 2,
        }
    }

    /// The Stan type name, for messages.
    pub fn stan_name(self) -> &'static str {
        match self {
            Constraint::None => "unconstrained",
            Constraint::Simplex => "simplex",
            Constraint::UnitVector => "unit_vector",
            Constraint::SumToZeroVector => "sum_to_zero_vector",
            Constraint::Ordered => "ordered",
            Constraint::PositiveOrdered => "positive_ordered",
            Constraint::SumToZeroMatrix => "sum_to_zero_matrix",
            Constraint::CholeskyFactorCorr => "cholesky_factor_corr",
            Constraint::CholeskyFactorCov => "cholesky_factor_cov",
            Constraint::CorrMatrix => "corr_matrix",
            Constraint::CovMatrix => "cov_matrix",
            Constraint::ColumnStochastic => "column_stochastic_matrix",
            Constraint::RowStochastic => "row_stochastic_matrix",
        }
    }
}

/// A declared type with evaluated sizes.
#[derive(Debug, Clone, PartialEq)]
pub struct DataType {
    pub base: BaseType,
    /// Full shape: array sizes outermost first, then vector length or matrix rows × columns.
    /// Empty for a scalar. For a tuple, only the array sizes around the tuple.
    pub shape: Vec<usize>,
    pub lower: Option<Bound>,
    pub upper: Option<Bound>,
    pub constraint: Constraint,
}

impl DataType {
    /// An unbounded, unconstrained type.
    pub fn new(base: BaseType, shape: Vec<usize>) -> DataType {
        DataType {
            base,
            shape,
            lower: None,
            upper: None,
            constraint: Constraint::None,
        }
    }
    pub fn int(shape: Vec<usize>) -> DataType {
        DataType::new(BaseType::Int, shape)
    }
    pub fn real(shape: Vec<usize>) -> DataType {
        DataType::new(BaseType::Real, shape)
    }
    pub fn with_lower(mut self, lower: f64) -> DataType {
        self.lower = Some(Bound::Scalar(lower));
        self
    }
    pub fn with_upper(mut self, upper: f64) -> DataType {
        self.upper = Some(Bound::Scalar(upper));
        self
    }
    pub fn with_constraint(mut self, constraint: Constraint) -> DataType {
        self.constraint = constraint;
        self
    }
}

/// A declared data variable.
#[derive(Debug, Clone, PartialEq)]
pub struct DataDecl {
    pub name: String,
    pub ty: DataType,
}

impl DataDecl {
    pub fn new(name: impl Into<String>, ty: DataType) -> DataDecl {
        DataDecl {
            name: name.into(),
            ty,
        }
    }
}

/// The elements of a [`DataValue`], row-major (see the crate documentation).
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    Ints(Vec<i64>),
    Reals(Vec<f64>),
    /// Interleaved `re, im` pairs: element k is `(v[2k], v[2k+1])`.
    Complex(Vec<f64>),
    /// Structure of arrays: component j holds that component of every tuple in the array,
    /// with dims = the array's dims followed by the component's own dims.
    Tuple(Vec<DataValue>),
}

/// A validated data variable.
#[derive(Debug, Clone, PartialEq)]
pub struct DataValue {
    /// The declared shape (for a tuple: the array sizes around it).
    pub dims: Vec<usize>,
    pub values: Values,
}

impl DataValue {
    /// Number of elements (tuples count once each; complex numbers once each).
    pub fn len(&self) -> usize {
        element_count(&self.dims)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The same value with each trailing matrix (last two dims) stored column-major, Stan's
    /// (and `hazel_math::linalg`'s) memory order. Arrays around the matrices keep their order.
    /// A value with fewer than two dims is returned unchanged. Tuple components are converted
    /// recursively.
    pub fn to_column_major(&self) -> DataValue {
        fn transpose<T: Copy>(v: &[T], dims: &[usize], width: usize) -> Vec<T> {
            if dims.len() < 2 {
                return v.to_vec();
            }
            let rows = dims[dims.len() - 2];
            let cols = dims[dims.len() - 1];
            let block = rows * cols * width;
            let mut out = Vec::with_capacity(v.len());
            if block == 0 {
                return v.to_vec();
            }
            for chunk in v.chunks(block) {
                for j in 0..cols {
                    for i in 0..rows {
                        let at = (i * cols + j) * width;
                        out.extend_from_slice(&chunk[at..at + width]);
                    }
                }
            }
            out
        }
        let values = match &self.values {
            Values::Ints(v) => Values::Ints(transpose(v, &self.dims, 1)),
            Values::Reals(v) => Values::Reals(transpose(v, &self.dims, 1)),
            Values::Complex(v) => Values::Complex(transpose(v, &self.dims, 2)),
            Values::Tuple(components) => {
                Values::Tuple(components.iter().map(|c| c.to_column_major()).collect())
            }
        };
        DataValue {
            dims: self.dims.clone(),
            values,
        }
    }
}

/// The number of elements of a declared shape, saturating: declared sizes come from the data
/// and may multiply past `usize::MAX` (with an empty dimension, or in a shape no data file can
/// match).
pub(crate) fn element_count(shape: &[usize]) -> usize {
    shape.iter().fold(1, |n, &d| n.saturating_mul(d))
}

/// Why data could not be read. `Display` gives the message the user sees.
#[derive(Debug, Clone, PartialEq)]
pub enum DataError {
    /// The file is not valid JSON (1-based line and column).
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    /// A top-level name appears twice.
    Duplicate { name: String },
    /// A declared variable is absent.
    Missing { name: String },
    /// Wrong sizes or the wrong kind of JSON value.
    Shape {
        name: String,
        expected: String,
        found: String,
    },
    /// A non-integer where an `int` is declared, or an integer out of Stan's `int` range.
    NotInt {
        element: String,
        value: String,
        reason: String,
    },
    /// A value outside its declared lower/upper bound.
    Bound {
        element: String,
        value: String,
        message: String,
    },
    /// A per-element bound whose length differs from the variable's.
    BoundSize {
        name: String,
        which: &'static str,
        bound_len: usize,
        len: usize,
    },
    /// A structural constraint (simplex, ordered, cov_matrix, …) is violated.
    Constraint {
        name: String,
        constraint: &'static str,
        message: String,
    },
}

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataError::Syntax {
                line,
                column,
                message,
            } => {
                write!(
                    f,
                    "not valid JSON at line {line}, column {column}: {message}"
                )
            }
            DataError::Duplicate { name } => {
                write!(f, "variable `{name}` appears more than once in the data")
            }
            DataError::Missing { name } => write!(f, "variable `{name}` is missing from the data"),
            DataError::BoundSize {
                name,
                which,
                bound_len,
                len,
            } => {
                write!(
                    f,
                    "`{name}` has {len} elements, but its {which} bound has {bound_len}"
                )
            }
            DataError::Shape {
                name,
                expected,
                found,
            } => write!(f, "`{name}` should be {expected}, found {found}"),
            DataError::NotInt {
                element,
                value,
                reason,
            } => write!(f, "`{element}` = {value} {reason}"),
            DataError::Bound {
                element,
                value,
                message,
            } => write!(f, "`{element}` = {value} {message}"),
            DataError::Constraint {
                name,
                constraint,
                message,
            } => {
                write!(f, "`{name}` is not a valid {constraint}: {message}")
            }
        }
    }
}

impl std::error::Error for DataError {}

/// `434 × 3` style.
pub(crate) fn format_dims(dims: &[usize]) -> String {
    dims.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(" × ")
}

/// A number as a user would write it: integral values without a decimal point.
pub(crate) fn format_number(x: f64) -> String {
    if x.is_nan() {
        "NaN".to_string()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.to_string()
    } else if x == x.trunc() && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// `name[i, j]` with 1-based indices for the row-major flat index `flat` into `dims`.
pub(crate) fn element_name(name: &str, dims: &[usize], flat: usize) -> String {
    if dims.is_empty() {
        return name.to_string();
    }
    let mut idx = vec![0usize; dims.len()];
    let mut rest = flat;
    for (k, &d) in dims.iter().enumerate().rev() {
        if d > 0 {
            idx[k] = rest % d;
            rest /= d;
        }
    }
    let parts: Vec<String> = idx.iter().map(|i| (i + 1).to_string()).collect();
    format!("{name}[{}]", parts.join(", "))
}
