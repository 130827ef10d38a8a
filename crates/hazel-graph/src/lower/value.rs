//! Values of the tracing interpreter: every Stan value is either known at build time
//! (a constant) or lives in the graph's value buffer (a parameter-dependent node).
//! Containers share their storage through `Rc`, so copying a value is cheap.

use crate::tape::Arg;
use std::sync::Arc;

/// A real scalar: a constant, or the value-buffer slot of a node.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sc {
    C(f64),
    V(u32),
}

impl Sc {
    pub fn is_const(self) -> bool {
        matches!(self, Sc::C(_))
    }
}

/// Elements of a vector, row vector or matrix (matrices column-major).
#[derive(Debug, Clone)]
pub enum Elems {
    /// All constant.
    C(Arc<Vec<f64>>),
    /// A contiguous run of the value buffer.
    V(Arg),
    /// Anything else: one scalar each (containers assembled element by element).
    M(Arc<Vec<Sc>>),
}

impl Elems {
    pub fn len(&self) -> usize {
        match self {
            Elems::C(v) => v.len(),
            Elems::V(a) => a.len(),
            Elems::M(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn get(&self, i: usize) -> Sc {
        match self {
            Elems::C(v) => Sc::C(v[i]),
            Elems::V(a) => Sc::V(a.off + i as u32),
            Elems::M(v) => v[i],
        }
    }
    pub fn is_const(&self) -> bool {
        match self {
            Elems::C(_) => true,
            Elems::V(_) => false,
            Elems::M(v) => v.iter().all(|s| s.is_const()),
        }
    }
    /// The constant values, if every element is constant.
    pub fn consts(&self) -> Option<Vec<f64>> {
        match self {
            Elems::C(v) => Some(v.to_vec()),
            Elems::V(_) => None,
            Elems::M(v) => v
                .iter()
                .map(|s| match s {
                    Sc::C(c) => Some(*c),
                    Sc::V(_) => None,
                })
                .collect(),
        }
    }
    /// Elements `i0..i1` (contiguous runs stay runs).
    pub fn slice(&self, i0: usize, i1: usize) -> Elems {
        match self {
            Elems::C(v) => Elems::C(Arc::new(v[i0..i1].to_vec())),
            Elems::V(a) => Elems::V(Arg::var(a.off as usize + i0, i1 - i0)),
            Elems::M(v) => Elems::M(Arc::new(v[i0..i1].to_vec())),
        }
    }
    /// Elements at `idx` (0-based).
    pub fn select(&self, idx: &[usize]) -> Elems {
        match self {
            Elems::C(v) => Elems::C(Arc::new(idx.iter().map(|&i| v[i]).collect())),
            _ => Elems::from_scalars(idx.iter().map(|&i| self.get(i)).collect()),
        }
    }
    pub fn from_scalars(v: Vec<Sc>) -> Elems {
        if v.iter().all(|s| s.is_const()) {
            return Elems::C(Arc::new(
                v.iter()
                    .map(|s| match s {
                        Sc::C(c) => *c,
                        Sc::V(_) => unreachable!(),
                    })
                    .collect(),
            ));
        }
        // A run of consecutive slots is a plain run.
        if let Sc::V(first) = v[0] {
            if v.iter()
                .enumerate()
                .all(|(i, s)| *s == Sc::V(first + i as u32))
            {
                return Elems::V(Arg::var(first as usize, v.len()));
            }
        }
        Elems::M(Arc::new(v))
    }
    pub fn to_scalars(&self) -> Vec<Sc> {
        (0..self.len()).map(|i| self.get(i)).collect()
    }
    /// Sets element `i`, turning the storage into per-element form.
    pub fn set(&mut self, i: usize, s: Sc) {
        if let Elems::C(v) = self {
            if let Sc::C(c) = s {
                Arc::make_mut(v)[i] = c;
                return;
            }
        }
        if !matches!(self, Elems::M(_)) {
            *self = Elems::M(Arc::new(self.to_scalars()));
        }
        if let Elems::M(v) = self {
            Arc::make_mut(v)[i] = s;
        }
    }
}

/// A traced Stan value.
#[derive(Debug, Clone)]
pub enum Val {
    Int(i64),
    Real(Sc),
    Vector(Elems),
    RowVector(Elems),
    /// `rows × cols`, column-major.
    Matrix(usize, usize, Elems),
    Array(Arc<Vec<Val>>),
    Tuple(Arc<Vec<Val>>),
    /// A complex scalar, vector, row vector or matrix: its real and imaginary parts, two real
    /// values of the same shape (`Real`, `Vector`, `RowVector` or `Matrix`). Arrays of complex
    /// values are arrays of these.
    Complex(Arc<(Val, Val)>),
}

impl Val {
    pub fn real(v: f64) -> Val {
        Val::Real(Sc::C(v))
    }
    pub fn array(v: Vec<Val>) -> Val {
        Val::Array(Arc::new(v))
    }
    pub fn type_name(&self) -> &'static str {
        match self {
            Val::Int(_) => "int",
            Val::Real(_) => "real",
            Val::Vector(_) => "vector",
            Val::RowVector(_) => "row_vector",
            Val::Matrix(..) => "matrix",
            Val::Array(_) => "array",
            Val::Tuple(_) => "tuple",
            Val::Complex(parts) => match parts.0 {
                Val::Vector(_) => "complex_vector",
                Val::RowVector(_) => "complex_row_vector",
                Val::Matrix(..) => "complex_matrix",
                _ => "complex",
            },
        }
    }
    /// Shape: array dimensions then vector length / matrix rows and columns.
    pub fn dims(&self) -> Vec<usize> {
        match self {
            Val::Int(_) | Val::Real(_) | Val::Tuple(_) => vec![],
            Val::Complex(parts) => parts.0.dims(),
            Val::Vector(e) | Val::RowVector(e) => vec![e.len()],
            Val::Matrix(r, c, _) => vec![*r, *c],
            Val::Array(v) => {
                let mut d = vec![v.len()];
                if let Some(first) = v.first() {
                    d.extend(first.dims());
                }
                d
            }
        }
    }
    /// Whether nothing in the value depends on parameters.
    pub fn is_const(&self) -> bool {
        match self {
            Val::Int(_) => true,
            Val::Real(s) => s.is_const(),
            Val::Vector(e) | Val::RowVector(e) | Val::Matrix(_, _, e) => e.is_const(),
            Val::Array(v) | Val::Tuple(v) => v.iter().all(|x| x.is_const()),
            Val::Complex(parts) => parts.0.is_const() && parts.1.is_const(),
        }
    }

    /// A complex value from its parts.
    pub fn complex(re: Val, im: Val) -> Val {
        Val::Complex(Arc::new((re, im)))
    }
    /// Every real (or int) scalar in memory order: arrays element by element (row-major),
    /// matrices column-major. This is Stan's order for vectorised arguments.
    pub fn flatten(&self, out: &mut Vec<Sc>) {
        match self {
            Val::Int(i) => out.push(Sc::C(*i as f64)),
            Val::Real(s) => out.push(*s),
            Val::Vector(e) | Val::RowVector(e) | Val::Matrix(_, _, e) => out.extend(e.to_scalars()),
            Val::Array(v) | Val::Tuple(v) => v.iter().for_each(|x| x.flatten(out)),
            // The real part, then the imaginary part (the order `rebuild` reads back).
            Val::Complex(parts) => {
                parts.0.flatten(out);
                parts.1.flatten(out);
            }
        }
    }
    /// Whether this is an array (of arrays) of tuples.
    pub fn holds_tuples(&self) -> bool {
        match self {
            Val::Array(xs) => xs.first().is_some_and(|x| x.holds_tuples()),
            Val::Tuple(_) => true,
            _ => false,
        }
    }

    /// The element of an array (of arrays) at 0-based array indexes.
    pub fn at_path(&self, idx: &[usize]) -> &Val {
        match (self, idx.split_first()) {
            (Val::Array(xs), Some((i, rest))) => xs[*i].at_path(rest),
            _ => self,
        }
    }

    /// Scalars in Stan's CSV output order: every index column-major (the first index varies
    /// fastest), across array and matrix dimensions alike; a tuple slot by slot, and an array
    /// of tuples one whole tuple after another.
    pub fn flatten_output(&self, out: &mut Vec<Sc>) {
        let dims = self.dims();
        if dims.is_empty() {
            match self {
                Val::Tuple(v) => v.iter().for_each(|x| x.flatten_output(out)),
                Val::Complex(parts) => {
                    parts.0.flatten(out);
                    parts.1.flatten(out);
                }
                _ => self.flatten(out),
            }
            return;
        }
        let tuples = self.holds_tuples();
        let total: usize = dims.iter().product();
        let mut idx = vec![0usize; dims.len()];
        for _ in 0..total {
            if tuples {
                self.at_path(&idx).flatten_output(out);
            } else {
                // A complex element is written as its real then its imaginary part.
                let (x, imaginary) = self.at_multi_complex(&idx);
                out.push(x);
                out.extend(imaginary);
            }
            for (k, d) in dims.iter().enumerate() {
                idx[k] += 1;
                if idx[k] < *d {
                    break;
                }
                idx[k] = 0;
            }
        }
    }
    /// `self` with every real scalar replaced by `f(scalar)`, in memory order
    /// ([`Val::flatten`]'s); integers are kept.
    pub fn map_scalars(&self, f: &mut impl FnMut(Sc) -> Sc) -> Val {
        let elems = |e: &Elems, f: &mut dyn FnMut(Sc) -> Sc| {
            let v: Vec<Sc> = e.to_scalars().into_iter().map(f).collect();
            if v.is_empty() {
                Elems::C(Arc::new(Vec::new()))
            } else {
                Elems::from_scalars(v)
            }
        };
        match self {
            Val::Int(i) => Val::Int(*i),
            Val::Real(s) => Val::Real(f(*s)),
            Val::Vector(e) => Val::Vector(elems(e, f)),
            Val::RowVector(e) => Val::RowVector(elems(e, f)),
            Val::Matrix(r, c, e) => Val::Matrix(*r, *c, elems(e, f)),
            Val::Array(v) => Val::array(v.iter().map(|x| x.map_scalars(f)).collect()),
            Val::Tuple(v) => Val::Tuple(Arc::new(v.iter().map(|x| x.map_scalars(f)).collect())),
            Val::Complex(parts) => Val::complex(parts.0.map_scalars(f), parts.1.map_scalars(f)),
        }
    }

    /// The constant of `self`'s shape whose output columns ([`Val::flatten_output`]'s order,
    /// Stan's CSV order) are `columns`; `None` when their number differs from the shape's real
    /// scalars. The inverse of writing a value out, tuples and complex values included.
    pub fn with_output_columns(&self, columns: &[f64]) -> Option<Val> {
        // Number the scalars in memory order, see where the output order puts each number.
        let mut n = 0u32;
        let numbered = self.map_scalars(&mut |_| {
            n += 1;
            Sc::V(n - 1)
        });
        let mut order = Vec::new();
        numbered.flatten_output(&mut order);
        if order.len() != columns.len() || order.len() != n as usize {
            return None;
        }
        let mut memory = vec![f64::NAN; n as usize];
        for (s, &x) in order.iter().zip(columns) {
            match s {
                Sc::V(i) => memory[*i as usize] = x,
                Sc::C(_) => return None,
            }
        }
        let mut values = memory.into_iter();
        Some(self.map_scalars(&mut |_| Sc::C(values.next().unwrap_or(f64::NAN))))
    }

    /// The scalar at a full 0-based index.
    pub fn at_multi(&self, idx: &[usize]) -> Sc {
        match self {
            Val::Int(i) => Sc::C(*i as f64),
            Val::Real(s) => *s,
            Val::Vector(e) | Val::RowVector(e) => e.get(idx[0]),
            Val::Matrix(r, _, e) => e.get(idx[0] + idx[1] * r),
            Val::Array(v) => v[idx[0]].at_multi(&idx[1..]),
            Val::Tuple(_) => Sc::C(f64::NAN),
            Val::Complex(parts) => parts.0.at_multi(idx),
        }
    }

    /// The scalar at a full 0-based index, and its imaginary part if the element is complex.
    pub fn at_multi_complex(&self, idx: &[usize]) -> (Sc, Option<Sc>) {
        match self {
            Val::Array(v) => v[idx[0]].at_multi_complex(&idx[1..]),
            Val::Complex(parts) => (parts.0.at_multi(idx), Some(parts.1.at_multi(idx))),
            other => (other.at_multi(idx), None),
        }
    }

    /// Whether the elements are complex (a complex value or an array of them).
    pub fn holds_complex(&self) -> bool {
        match self {
            Val::Array(xs) => xs.first().is_some_and(|x| x.holds_complex()),
            Val::Complex(_) => true,
            _ => false,
        }
    }
}
