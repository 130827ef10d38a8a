//! Elementwise functions of three or more real arguments from hazel-math
//! (`inc_beta`, `inv_inc_beta`, … from `hazel_math::special`'s ternary table; the per-element
//! `wiener_lpdf`): [`crate::tape::Op::Nary`]'s value and gradient rules.
//! Arguments broadcast (length 1 or the output's length); a NaN value from arguments that are
//! not NaN is outside the function's domain and fails the evaluation, as Stan throws there.

use crate::tape::{read, Arg};
use hazel_density::EvalError;

/// The most arguments an [`crate::tape::Op::Nary`] takes.
pub const MAX_NARY: usize = 8;

/// A function of hazel_math's ternary table.
#[derive(Clone, Copy)]
pub enum MathNary {
    Ternary(&'static hazel_math::special::TernaryFn),
    /// A function computing its value and partials together (`x[..arity]` →
    /// `grad[..arity]`), failing with Stan's message outside its domain.
    Rule {
        name: &'static str,
        arity: usize,
        f: NaryRule,
    },
}

/// The rule of a [`MathNary::Rule`].
pub type NaryRule = fn(&[f64], &mut [f64]) -> Result<f64, hazel_math::dist::MathError>;

impl std::fmt::Debug for MathNary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl MathNary {
    /// The table function called `name` with `arity` arguments.
    pub fn lookup(name: &str, arity: usize) -> Option<MathNary> {
        match arity {
            3 => hazel_math::special::ternary(name).map(MathNary::Ternary),
            _ => None,
        }
    }

    /// Stan's 4-, 5- or 7-parameter `wiener_lpdf` (`arity` 5, 6 or 8 with the variate), one
    /// element.
    pub fn wiener(arity: usize) -> Option<MathNary> {
        let f: NaryRule = match arity {
            5 => hazel_math::dist::wiener::wiener4,
            6 => hazel_math::dist::wiener::wiener5,
            8 => hazel_math::dist::wiener::wiener7,
            _ => return None,
        };
        Some(MathNary::Rule {
            name: "wiener_lpdf",
            arity,
            f,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            MathNary::Ternary(t) => t.name,
            MathNary::Rule { name, .. } => name,
        }
    }

    pub fn arity(self) -> usize {
        match self {
            MathNary::Ternary(_) => 3,
            MathNary::Rule { arity, .. } => arity,
        }
    }

    /// The value, or the message of a domain error.
    #[inline]
    fn value(self, x: &[f64; MAX_NARY]) -> Result<f64, String> {
        match self {
            MathNary::Ternary(t) => Ok((t.value)(x[0], x[1], x[2])),
            MathNary::Rule { f, arity, .. } => {
                let mut g = [0.0; MAX_NARY];
                f(&x[..arity], &mut g).map_err(|e| e.message)
            }
        }
    }

    #[inline]
    fn grad(self, x: &[f64; MAX_NARY], v: f64) -> [f64; MAX_NARY] {
        match self {
            MathNary::Ternary(t) => {
                let g = (t.grad)(x[0], x[1], x[2], v);
                let mut p = [0.0; MAX_NARY];
                p[..3].copy_from_slice(&g);
                p
            }
            MathNary::Rule { f, arity, .. } => {
                let mut g = [0.0; MAX_NARY];
                match f(&x[..arity], &mut g) {
                    Ok(_) => g,
                    Err(_) => [f64::NAN; MAX_NARY],
                }
            }
        }
    }
}

#[inline]
fn gather(args: &[Arg], lo: &[f64], consts: &[f64], i: usize) -> [f64; MAX_NARY] {
    let mut x = [0.0; MAX_NARY];
    for (k, a) in args.iter().enumerate() {
        let v = read(*a, lo, consts);
        x[k] = if v.len() == 1 { v[0] } else { v[i] };
    }
    x
}

/// Forward rule: `out[i] = f(args…[i])`.
pub fn forward(
    f: MathNary,
    args: &[Arg],
    lo: &[f64],
    consts: &[f64],
    out: &mut [f64],
) -> Result<(), EvalError> {
    for (i, o) in out.iter_mut().enumerate() {
        let x = gather(args, lo, consts, i);
        let v = f.value(&x).map_err(EvalError::domain)?;
        if v.is_nan() && !x[..args.len()].iter().any(|a| a.is_nan()) {
            let shown: Vec<String> = x[..args.len()].iter().map(|a| a.to_string()).collect();
            return Err(EvalError::domain(format!(
                "{}: arguments ({}) are outside the function's domain",
                f.name(),
                shown.join(", ")
            )));
        }
        *o = v;
    }
    Ok(())
}

/// Backward rule: adds `g[i] ∂f/∂args[k]` to every varying argument.
pub fn backward(
    f: MathNary,
    args: &[Arg],
    lo: &[f64],
    consts: &[f64],
    y: &[f64],
    g: &[f64],
    adj_lo: &mut [f64],
) {
    for i in 0..y.len() {
        if g[i] == 0.0 {
            continue;
        }
        let x = gather(args, lo, consts, i);
        let p = f.grad(&x, y[i]);
        for (k, a) in args.iter().enumerate() {
            if a.is_var() && p[k] != 0.0 {
                let j = a.off as usize + if a.len == 1 { 0 } else { i };
                adj_lo[j] += g[i] * p[k];
            }
        }
    }
}
