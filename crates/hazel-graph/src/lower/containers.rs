//! Constructors and reshaping: `ones_*`, `zeros_*`, `one_hot_*`, `uniform_simplex`,
//! `linspaced_int_array`, `to_matrix` with its row-/column-major flag, `to_array_2d`,
//! `symmetrize_from_lower_tri`, `append_array`, vectorised `to_int` and `quantile`.
//!
//! Constructors take only integers, so their results are constants. Reshaping moves elements
//! without arithmetic: a parameter element stays the same graph slot, so gradients flow
//! through unchanged and the model stays static.

use super::trace::{cerr, eerr, Tracer, R};
use super::value::{Elems, Sc, Val};
use hazel_syntax::Span;
use std::sync::Arc;

/// Whether `name` is lowered here.
pub(crate) fn is_container_fn(name: &str) -> bool {
    matches!(
        name,
        "ones_int_array"
            | "ones_array"
            | "ones_vector"
            | "ones_row_vector"
            | "zeros_int_array"
            | "zeros_array"
            | "zeros_vector"
            | "zeros_row_vector"
            | "one_hot_int_array"
            | "one_hot_array"
            | "one_hot_vector"
            | "one_hot_row_vector"
            | "uniform_simplex"
            | "linspaced_int_array"
            | "to_array_2d"
            | "symmetrize_from_lower_tri"
            | "append_array"
            | "to_int"
            | "quantile"
    )
}

/// A constant of the container kind named by a constructor's suffix.
fn constant(name: &str, values: Vec<f64>) -> Val {
    if name.ends_with("_int_array") {
        Val::array(values.into_iter().map(|v| Val::Int(v as i64)).collect())
    } else if name.ends_with("_row_vector") {
        Val::RowVector(Elems::C(Arc::new(values)))
    } else if name.ends_with("_vector") || name == "uniform_simplex" {
        Val::Vector(Elems::C(Arc::new(values)))
    } else {
        Val::array(values.into_iter().map(Val::real).collect())
    }
}

impl<'p> Tracer<'p> {
    pub(crate) fn container_call(&mut self, name: &str, args: &[Val], span: Span) -> R<Val> {
        let int = |tr: &Self, i: usize| -> R<i64> {
            match args.get(i) {
                Some(v) => tr.as_int(v, span),
                None => cerr(format!("{name}: missing argument {}", i + 1), span),
            }
        };
        match name {
            _ if name.starts_with("ones_") || name.starts_with("zeros_") => {
                let n = int(self, 0)?;
                if n < 0 {
                    return eerr(
                        format!("{name}: size is {n}, but must be non-negative"),
                        span,
                    );
                }
                let v = if name.starts_with("ones_") { 1.0 } else { 0.0 };
                Ok(constant(name, vec![v; n as usize]))
            }
            _ if name.starts_with("one_hot_") => {
                let (n, k) = (int(self, 0)?, int(self, 1)?);
                if n < 1 {
                    return eerr(format!("{name}: size is {n}, but must be positive!"), span);
                }
                if k < 1 || k > n {
                    return eerr(
                        format!("{name}: k is {k}, but must be in the interval [1, {n}]"),
                        span,
                    );
                }
                let mut v = vec![0.0; n as usize];
                v[(k - 1) as usize] = 1.0;
                Ok(constant(name, v))
            }
            "uniform_simplex" => {
                let n = int(self, 0)?;
                if n < 1 {
                    return eerr(format!("{name}: size is {n}, but must be positive!"), span);
                }
                Ok(constant(name, vec![1.0 / n as f64; n as usize]))
            }
            "linspaced_int_array" => {
                let (k, low, high) = (int(self, 0)?, int(self, 1)?, int(self, 2)?);
                if k < 0 {
                    return eerr(
                        format!("{name}: size is {k}, but must be non-negative"),
                        span,
                    );
                }
                if high < low {
                    return eerr(
                        format!(
                            "{name}: high is {high}, but must be greater than or equal to {low}"
                        ),
                        span,
                    );
                }
                Ok(constant(name, linspaced_ints(k, low, high)))
            }
            "to_array_2d" => {
                let Some(Val::Matrix(r, c, e)) = args.first() else {
                    return cerr("to_array_2d: expected a matrix", span);
                };
                Ok(Val::array(
                    (0..*r)
                        .map(|i| Val::array((0..*c).map(|j| Val::Real(e.get(i + j * r))).collect()))
                        .collect(),
                ))
            }
            "symmetrize_from_lower_tri" => {
                let Some(Val::Matrix(r, c, e)) = args.first() else {
                    return cerr("symmetrize_from_lower_tri: expected a matrix", span);
                };
                if r != c {
                    return eerr(
                        format!("symmetrize_from_lower_tri: Expecting a square matrix; rows of m ({r}) and columns of m ({c}) must match in size"),
                        span,
                    );
                }
                let n = *r;
                let sc = (0..n * n)
                    .map(|k| {
                        let (i, j) = (k % n, k / n);
                        e.get(i.max(j) + i.min(j) * n)
                    })
                    .collect();
                Ok(Val::Matrix(n, n, Elems::from_scalars_or_empty(sc)))
            }
            "append_array" => self.append_array(args, span),
            "to_int" => self.truncate_to_int(args.first(), span),
            "quantile" => self.quantile(args, span),
            _ => cerr(format!("function '{name}' is not supported"), span),
        }
    }

    /// `to_matrix(x, m, n, col_major)`: column-major fill unless `col_major` is 0.
    pub(crate) fn reshape_to_matrix(&mut self, args: &[Val], span: Span) -> R<Val> {
        let e = self.to_elems(&args[0]);
        let r = self.as_int(&args[1], span)?;
        let c = self.as_int(&args[2], span)?;
        let col_major = self.as_int(&args[3], span)? != 0;
        if r < 0 || c < 0 || (r * c) as usize != e.len() {
            return eerr(
                format!(
                    "to_matrix: the requested size ({r} × {c}) does not match the {} elements",
                    e.len()
                ),
                span,
            );
        }
        let (r, c) = (r as usize, c as usize);
        if col_major {
            return Ok(Val::Matrix(r, c, e));
        }
        // Row-major: element k fills row k / c, column k % c.
        let sc = (0..r * c).map(|k| e.get((k % r) * c + k / r)).collect();
        Ok(Val::Matrix(r, c, Elems::from_scalars_or_empty(sc)))
    }

    fn append_array(&mut self, args: &[Val], span: Span) -> R<Val> {
        let (Some(Val::Array(a)), Some(Val::Array(b))) = (args.first(), args.get(1)) else {
            return cerr("append_array: expected two arrays", span);
        };
        if let (Some(x), Some(y)) = (a.first(), b.first()) {
            let (dx, dy) = (x.dims(), y.dims());
            if dx != dy {
                return eerr(
                    format!(
                        "append_array: the elements' sizes differ ({} and {})",
                        dims_text(&dx),
                        dims_text(&dy)
                    ),
                    span,
                );
            }
        }
        // An int array appended to a real one is promoted (the checker resolved T to real).
        let real = |xs: &[Val]| xs.first().is_some_and(has_real_leaf);
        let promote_ints = real(a) || real(b);
        let mut out: Vec<Val> = Vec::with_capacity(a.len() + b.len());
        for x in a.iter().chain(b.iter()) {
            out.push(if promote_ints {
                ints_to_reals(x)
            } else {
                x.clone()
            });
        }
        Ok(Val::array(out))
    }

    fn truncate_to_int(&mut self, v: Option<&Val>, span: Span) -> R<Val> {
        match v {
            Some(Val::Int(i)) => Ok(Val::Int(*i)),
            Some(Val::Array(xs)) => Ok(Val::array(
                xs.iter()
                    .map(|x| self.truncate_to_int(Some(x), span))
                    .collect::<R<_>>()?,
            )),
            Some(v) => {
                let x = self.real_value(v, span)?;
                // Stan: truncation toward zero, within the range of a 32-bit int.
                if !(x >= i32::MIN as f64 && x < i32::MAX as f64 + 1.0) {
                    return eerr(
                        format!(
                            "to_int: x is {x}, but must be in the interval [{}, {}]",
                            i32::MIN,
                            i32::MAX
                        ),
                        span,
                    );
                }
                Ok(Val::Int(x.trunc() as i64))
            }
            None => cerr("to_int expects 1 argument", span),
        }
    }

    /// Stan's sample quantile (type 7: linear interpolation between order statistics).
    fn quantile(&mut self, args: &[Val], span: Span) -> R<Val> {
        let xs = self.to_elems(&args[0]);
        let Some(mut x) = xs.consts() else {
            return cerr("quantile: the data argument depends on parameters", span);
        };
        if x.is_empty() {
            return eerr(
                "quantile: xs has size 0, but must have a non-zero size",
                span,
            );
        }
        if let Some(bad) = x.iter().find(|v| v.is_nan()) {
            return eerr(format!("quantile: xs is {bad}, but must not be nan!"), span);
        }
        x.sort_by(|a, b| a.total_cmp(b));
        let one = |p: f64| -> R<f64> {
            if !(0.0..=1.0).contains(&p) {
                return eerr(
                    format!("quantile: p is {p}, but must be in the interval [0, 1]"),
                    span,
                );
            }
            let index = (x.len() - 1) as f64 * p;
            let (lo, hi) = (index.floor() as usize, index.ceil() as usize);
            let h = index - lo as f64;
            Ok((1.0 - h) * x[lo] + h * x[hi])
        };
        match &args[1] {
            Val::Array(ps) => Ok(Val::array(
                ps.iter()
                    .map(|p| Ok(Val::real(one(self.real_value(p, span)?)?)))
                    .collect::<R<_>>()?,
            )),
            p => Ok(Val::real(one(self.real_value(p, span)?)?)),
        }
    }
}

/// Eigen's integer `LinSpaced` (what Stan's `linspaced_int_array` returns): steps of
/// `(high − low) / (K − 1)`, or, when there are more elements than integers in the range,
/// each integer repeated.
fn linspaced_ints(k: i64, low: i64, high: i64) -> Vec<f64> {
    if k == 0 {
        return Vec::new();
    }
    if k == 1 {
        return vec![high as f64];
    }
    let span = high - low;
    if span + 1 < k {
        let divisor = (k + span) / (span + 1);
        (0..k).map(|i| (low + i / divisor) as f64).collect()
    } else {
        let step = span / (k - 1);
        (0..k).map(|i| (low + i * step) as f64).collect()
    }
}

fn has_real_leaf(v: &Val) -> bool {
    match v {
        Val::Int(_) => false,
        Val::Array(xs) => xs.first().is_some_and(has_real_leaf),
        _ => true,
    }
}

fn ints_to_reals(v: &Val) -> Val {
    match v {
        Val::Int(i) => Val::Real(Sc::C(*i as f64)),
        Val::Array(xs) => Val::array(xs.iter().map(ints_to_reals).collect()),
        other => other.clone(),
    }
}

fn dims_text(d: &[usize]) -> String {
    let parts: Vec<String> = d.iter().map(|x| x.to_string()).collect();
    format!("[{}]", parts.join(", "))
}
