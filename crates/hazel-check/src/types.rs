//! Stan's unsized types (what the type checker reasons about) and the promotion rules.
//!
//! Sizes never appear here: `vector[N]` and `vector[3]` are both [`Type::Vector`]. Arrays are
//! kept flat (`Array(dims, element)` with a non-array element) so that `array[,] real` and
//! `array[] array[] real` are the same value and comparisons are structural.

use std::fmt;

/// A Stan type without sizes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Type {
    Int,
    Real,
    Complex,
    Vector,
    RowVector,
    Matrix,
    ComplexVector,
    ComplexRowVector,
    ComplexMatrix,
    /// `array[,..] elem` with `dims >= 1`; `elem` is never itself an array.
    Array(usize, Box<Type>),
    Tuple(Vec<Type>),
    /// The type of a function used as a value (an argument of a higher-order built-in).
    Function(Box<FunctionType>),
    /// Return type of functions that return nothing.
    Void,
    /// The type of an expression that already produced a diagnostic; it matches everything,
    /// so that one mistake is reported once and not again by every enclosing expression.
    Error,
}

/// The type of a user-defined function as a value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FunctionType {
    pub args: Vec<(bool, Type)>,
    pub ret: Type,
}

impl Type {
    /// `array[dims] elem`, flattening nested arrays; `dims == 0` gives `elem` back.
    pub fn array(dims: usize, elem: Type) -> Type {
        if dims == 0 {
            return elem;
        }
        match elem {
            Type::Array(inner, e) => Type::Array(dims + inner, e),
            Type::Error => Type::Error,
            other => Type::Array(dims, Box::new(other)),
        }
    }

    /// Number of array dimensions (0 for non-arrays).
    pub fn array_dims(&self) -> usize {
        match self {
            Type::Array(d, _) => *d,
            _ => 0,
        }
    }

    /// The innermost non-array type.
    pub fn array_element(&self) -> &Type {
        match self {
            Type::Array(_, e) => e,
            t => t,
        }
    }

    /// The type of `x[i]` for a single index: one array dimension less, or an element of a
    /// vector/row vector, or a row of a matrix. `None` if the type cannot be indexed.
    pub fn index_once(&self) -> Option<Type> {
        Some(match self {
            Type::Array(1, e) => (**e).clone(),
            Type::Array(d, e) => Type::Array(d - 1, e.clone()),
            Type::Vector | Type::RowVector => Type::Real,
            Type::ComplexVector | Type::ComplexRowVector => Type::Complex,
            Type::Matrix => Type::RowVector,
            Type::ComplexMatrix => Type::ComplexRowVector,
            Type::Error => Type::Error,
            _ => return None,
        })
    }

    /// Number of indexes a value of this type accepts (array dims plus vector/matrix dims).
    pub fn index_capacity(&self) -> usize {
        self.array_dims() + self.array_element().own_dims()
    }

    /// Dimensions of the non-array part: 0 for scalars, 1 for vectors, 2 for matrices.
    pub fn own_dims(&self) -> usize {
        match self {
            Type::Vector | Type::RowVector | Type::ComplexVector | Type::ComplexRowVector => 1,
            Type::Matrix | Type::ComplexMatrix => 2,
            _ => 0,
        }
    }

    pub fn is_int(&self) -> bool {
        matches!(self, Type::Int)
    }

    /// `int` or `real` (the types a condition or a bound may have).
    pub fn is_int_or_real(&self) -> bool {
        matches!(self, Type::Int | Type::Real | Type::Error)
    }

    pub fn is_scalar(&self) -> bool {
        matches!(self, Type::Int | Type::Real | Type::Complex)
    }

    /// True if the base scalar is int (int, array of int).
    pub fn is_int_based(&self) -> bool {
        matches!(self.array_element(), Type::Int)
    }

    /// True if this is a real-valued type (not int, not complex): real, vector, row_vector,
    /// matrix and arrays of those.
    pub fn is_real_based(&self) -> bool {
        matches!(
            self.array_element(),
            Type::Real | Type::Vector | Type::RowVector | Type::Matrix
        )
    }

    pub fn is_complex_based(&self) -> bool {
        matches!(
            self.array_element(),
            Type::Complex | Type::ComplexVector | Type::ComplexRowVector | Type::ComplexMatrix
        )
    }

    /// Whether this type contains no `int` anywhere: parameters must satisfy this.
    pub fn contains_int(&self) -> bool {
        match self {
            Type::Int => true,
            Type::Array(_, e) => e.contains_int(),
            Type::Tuple(ts) => ts.iter().any(|t| t.contains_int()),
            _ => false,
        }
    }

    /// The same shape with an int base replaced by real (the return type of `exp(x)`).
    pub fn with_real_base(&self) -> Type {
        match self {
            Type::Int => Type::Real,
            Type::Array(d, e) => Type::Array(*d, Box::new(e.with_real_base())),
            t => t.clone(),
        }
    }

    /// The same shape with the scalar base replaced by int (arrays of int; vectors have no
    /// int counterpart, so they give `None`).
    pub fn with_int_base(&self) -> Option<Type> {
        match self {
            Type::Int | Type::Real => Some(Type::Int),
            Type::Array(d, e) => Some(Type::Array(*d, Box::new(e.with_int_base()?))),
            _ => None,
        }
    }

    /// Number of promotion steps needed to use a value of type `self` where `to` is expected,
    /// or `None` if not allowed. Promotions: int → real → complex, vector → complex_vector
    /// (and row vectors, matrices), elementwise inside arrays and tuples.
    pub fn promotion_cost(&self, to: &Type) -> Option<u32> {
        if self == to {
            return Some(0);
        }
        match (self, to) {
            (Type::Error, _) | (_, Type::Error) => Some(0),
            (Type::Int, Type::Real) => Some(1),
            (Type::Int, Type::Complex) => Some(2),
            (Type::Real, Type::Complex) => Some(1),
            (Type::Vector, Type::ComplexVector)
            | (Type::RowVector, Type::ComplexRowVector)
            | (Type::Matrix, Type::ComplexMatrix) => Some(1),
            (Type::Array(d1, e1), Type::Array(d2, e2)) if d1 == d2 => e1.promotion_cost(e2),
            (Type::Tuple(a), Type::Tuple(b)) if a.len() == b.len() => {
                let mut total = 0;
                for (x, y) in a.iter().zip(b) {
                    total += x.promotion_cost(y)?;
                }
                Some(total)
            }
            (Type::Function(a), Type::Function(b)) => {
                // Function values must match exactly (modulo the `data` qualifier, which a
                // function may drop but not add).
                if a.ret != b.ret || a.args.len() != b.args.len() {
                    return None;
                }
                for ((_, x), (_, y)) in a.args.iter().zip(&b.args) {
                    if x != y {
                        return None;
                    }
                }
                Some(0)
            }
            _ => None,
        }
    }

    /// True if a value of `self` can be stored in a variable of type `to`.
    pub fn assignable_to(&self, to: &Type) -> bool {
        self.promotion_cost(to).is_some()
    }

    /// Least common type of two branches (`c ? a : b`, array expression elements).
    pub fn common(a: &Type, b: &Type) -> Option<Type> {
        if a.promotion_cost(b).is_some() {
            Some(b.clone())
        } else if b.promotion_cost(a).is_some() {
            Some(a.clone())
        } else {
            None
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Int => write!(f, "int"),
            Type::Real => write!(f, "real"),
            Type::Complex => write!(f, "complex"),
            Type::Vector => write!(f, "vector"),
            Type::RowVector => write!(f, "row_vector"),
            Type::Matrix => write!(f, "matrix"),
            Type::ComplexVector => write!(f, "complex_vector"),
            Type::ComplexRowVector => write!(f, "complex_row_vector"),
            Type::ComplexMatrix => write!(f, "complex_matrix"),
            Type::Array(d, e) => {
                write!(f, "array[")?;
                for _ in 1..*d {
                    write!(f, ",")?;
                }
                write!(f, "] {e}")
            }
            Type::Tuple(ts) => {
                write!(f, "tuple(")?;
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{t}")?;
                }
                write!(f, ")")
            }
            Type::Function(ft) => {
                write!(f, "(")?;
                for (i, (data, t)) in ft.args.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    if *data {
                        write!(f, "data ")?;
                    }
                    write!(f, "{t}")?;
                }
                write!(f, ") => {}", ft.ret)
            }
            Type::Void => write!(f, "void"),
            Type::Error => write!(f, "<error>"),
        }
    }
}

/// Parses a type written as in Stan's signatures: `int`, `array[,] real`, `complex_matrix`,
/// `tuple(real, array[] int)`. Used by the signature table loader and by tests.
pub(crate) fn parse_type(text: &str) -> Option<Type> {
    let text = text.trim();
    if let Some(rest) = text.strip_prefix("array[") {
        let close = rest.find(']')?;
        let commas = &rest[..close];
        if !commas.chars().all(|c| c == ',' || c == ' ') {
            return None;
        }
        let dims = commas.chars().filter(|c| *c == ',').count() + 1;
        let elem = parse_type(&rest[close + 1..])?;
        return Some(Type::array(dims, elem));
    }
    if let Some(inner) = text
        .strip_prefix("tuple(")
        .and_then(|r| r.strip_suffix(')'))
    {
        let mut parts = Vec::new();
        for piece in split_top_level(inner) {
            parts.push(parse_type(piece)?);
        }
        return Some(Type::Tuple(parts));
    }
    Some(match text {
        "int" => Type::Int,
        "real" => Type::Real,
        "complex" => Type::Complex,
        "vector" => Type::Vector,
        "row_vector" => Type::RowVector,
        "matrix" => Type::Matrix,
        "complex_vector" => Type::ComplexVector,
        "complex_row_vector" => Type::ComplexRowVector,
        "complex_matrix" => Type::ComplexMatrix,
        "void" => Type::Void,
        _ => return None,
    })
}

/// Splits `a, tuple(b, c), d` at commas outside parentheses and brackets.
pub(crate) fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = text[start..].trim();
    if !last.is_empty() || !parts.is_empty() {
        parts.push(last);
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_flatten_and_print() {
        let t = Type::array(1, Type::array(2, Type::Real));
        assert_eq!(t, Type::Array(3, Box::new(Type::Real)));
        assert_eq!(t.to_string(), "array[,,] real");
        assert_eq!(parse_type("array[,,] real"), Some(t));
    }

    #[test]
    fn promotion_costs() {
        assert_eq!(Type::Int.promotion_cost(&Type::Real), Some(1));
        assert_eq!(Type::Int.promotion_cost(&Type::Complex), Some(2));
        assert_eq!(Type::Real.promotion_cost(&Type::Int), None);
        let ai = parse_type("array[] int").unwrap();
        let ar = parse_type("array[] real").unwrap();
        let arr = parse_type("array[,] real").unwrap();
        assert_eq!(ai.promotion_cost(&ar), Some(1));
        assert_eq!(ai.promotion_cost(&arr), None);
        assert_eq!(Type::Vector.promotion_cost(&Type::RowVector), None);
        assert_eq!(Type::Vector.promotion_cost(&Type::ComplexVector), Some(1));
    }

    #[test]
    fn indexing() {
        assert_eq!(Type::Matrix.index_once(), Some(Type::RowVector));
        assert_eq!(Type::Matrix.index_capacity(), 2);
        assert_eq!(parse_type("array[,] vector").unwrap().index_capacity(), 3);
        assert_eq!(Type::Int.index_once(), None);
    }
}
