//! The value and derivative rules of the elementwise functions the op graph runs as its own
//! ops (`hazel_graph`'s `UnaryFn::value`/`deriv` and `BinaryFn::value`/`partials`), which this
//! module's tables also list under Stan's names: one definition serves both, so a fix is made
//! once.
//!
//! These are the rules hazel evaluates (the graph shadows the table entries of these names),
//! so where an older table rule was written differently (`tanh′ = 1/cosh²` against
//! `1 − tanh²`, `inv′ = −1/x²` against `−y²`, `fmin` by `f64::min`, …) the graph's form was
//! kept: it fixes the bits of every density and gradient hazel computes today. Derivative rules
//! take the value `y = f(x)` where reusing it saves a transcendental call. The elementary rules
//! the graph writes as one operation (`-x`, `x * x`, `x.sin()`) are not repeated here.

use crate::vmath;
use std::f64::consts::{LN_10, LN_2, PI};

/// logit(x) = log(x / (1 − x)), with [`vmath::ln`] (the vectorisable logarithm).
///
/// Not [`super::logit`], which uses `f64::ln`: that one inverts the bounded transforms for
/// user inits, and either change would move the bits of one of the two paths.
#[inline(always)]
pub fn logit(x: f64) -> f64 {
    vmath::ln(x / (1.0 - x))
}

/// d logit/dx = 1 / (x (1 − x)).
#[inline(always)]
pub fn logit_deriv(x: f64) -> f64 {
    1.0 / (x * (1.0 - x))
}

/// d log1p/dx.
#[inline(always)]
pub fn log1p_deriv(x: f64) -> f64 {
    1.0 / (1.0 + x)
}

/// d log1m/dx = −1/(1 − x).
#[inline(always)]
pub fn log1m_deriv(x: f64) -> f64 {
    -1.0 / (1.0 - x)
}

/// d expm1/dx = e^x = y + 1, from the value.
#[inline(always)]
pub fn expm1_deriv(y: f64) -> f64 {
    y + 1.0
}

/// d inv_logit/dx = σ(1 − σ), from the value σ.
#[inline(always)]
pub fn inv_logit_deriv(y: f64) -> f64 {
    y * (1.0 - y)
}

/// The sign of `x` (0 at ±0 and NaN): the derivative of `abs` (and `fabs`).
#[inline(always)]
pub fn sign(x: f64) -> f64 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        0.0
    }
}

/// d tan/dx = 1 + tan², from the value.
#[inline(always)]
pub fn tan_deriv(y: f64) -> f64 {
    1.0 + y * y
}

/// d tanh/dx = 1 − tanh², from the value.
#[inline(always)]
pub fn tanh_deriv(y: f64) -> f64 {
    1.0 - y * y
}

/// d asin/dx.
#[inline(always)]
pub fn asin_deriv(x: f64) -> f64 {
    1.0 / (1.0 - x * x).sqrt()
}

/// d acos/dx.
#[inline(always)]
pub fn acos_deriv(x: f64) -> f64 {
    -1.0 / (1.0 - x * x).sqrt()
}

/// d atan/dx.
#[inline(always)]
pub fn atan_deriv(x: f64) -> f64 {
    1.0 / (1.0 + x * x)
}

/// d log10/dx.
#[inline(always)]
pub fn log10_deriv(x: f64) -> f64 {
    1.0 / (x * LN_10)
}

/// d log2/dx.
#[inline(always)]
pub fn log2_deriv(x: f64) -> f64 {
    1.0 / (x * LN_2)
}

/// d exp2/dx = 2^x ln 2, from the value.
#[inline(always)]
pub fn exp2_deriv(y: f64) -> f64 {
    y * LN_2
}

/// d sqrt/dx = 1/(2√x), from the value.
#[inline(always)]
pub fn sqrt_deriv(y: f64) -> f64 {
    0.5 / y
}

/// d inv/dx = −1/x² = −y², from the value.
#[inline(always)]
pub fn inv_deriv(y: f64) -> f64 {
    -y * y
}

/// inv_sqrt(x) = 1/√x.
#[inline(always)]
pub fn inv_sqrt(x: f64) -> f64 {
    1.0 / x.sqrt()
}

/// d inv_sqrt/dx = −y/(2x).
#[inline(always)]
pub fn inv_sqrt_deriv(x: f64, y: f64) -> f64 {
    -0.5 * y / x
}

/// inv_square(x) = 1/x².
#[inline(always)]
pub fn inv_square(x: f64) -> f64 {
    1.0 / (x * x)
}

/// d inv_square/dx = −2y/x.
#[inline(always)]
pub fn inv_square_deriv(x: f64, y: f64) -> f64 {
    -2.0 * y / x
}

/// d cbrt/dx = y/(3x).
#[inline(always)]
pub fn cbrt_deriv(x: f64, y: f64) -> f64 {
    y / (3.0 * x)
}

/// d erf/dx = 2/√π e^{−x²}.
#[inline(always)]
pub fn erf_deriv(x: f64) -> f64 {
    2.0 / PI.sqrt() * vmath::exp(-x * x)
}

/// d erfc/dx = −2/√π e^{−x²}.
#[inline(always)]
pub fn erfc_deriv(x: f64) -> f64 {
    -2.0 / PI.sqrt() * vmath::exp(-x * x)
}

/// dΦ/dx = φ(x), with [`vmath::exp`] (not [`super::std_normal_pdf`], whose `f64::exp` the
/// densities' bits depend on).
#[inline(always)]
#[allow(non_snake_case)]
pub fn Phi_deriv(x: f64) -> f64 {
    vmath::exp(-0.5 * x * x) / (2.0 * PI).sqrt()
}

/// `pow(a, b)`'s partials given `y = a^b`: 0 in `a` where `b = 0` and 0 in `b` where `a = 0`
/// (Stan's convention, finite where `ln a` is not).
#[inline(always)]
pub fn pow_partials(a: f64, b: f64, y: f64) -> (f64, f64) {
    let da = if b == 0.0 { 0.0 } else { b * a.powf(b - 1.0) };
    let db = if a == 0.0 { 0.0 } else { y * a.ln() };
    (da, db)
}

/// fmin(a, b): `b` where `b < a`, else `a` (so a NaN `a` gives NaN: the graph's rule since it
/// was written, kept for its bits; Stan returns the other argument).
#[inline(always)]
pub fn fmin(a: f64, b: f64) -> f64 {
    if b < a {
        b
    } else {
        a
    }
}

/// fmin's partials: all of the gradient goes to the argument [`fmin`] returned.
#[inline(always)]
pub fn fmin_partials(a: f64, b: f64) -> (f64, f64) {
    if b < a {
        (0.0, 1.0)
    } else {
        (1.0, 0.0)
    }
}

/// fmax(a, b): `b` where `b > a`, else `a` (NaN as in [`fmin`]).
#[inline(always)]
pub fn fmax(a: f64, b: f64) -> f64 {
    if b > a {
        b
    } else {
        a
    }
}

/// fmax's partials.
#[inline(always)]
pub fn fmax_partials(a: f64, b: f64) -> (f64, f64) {
    if b > a {
        (0.0, 1.0)
    } else {
        (1.0, 0.0)
    }
}

/// hypot's partials given `y = √(a² + b²)`.
#[inline(always)]
pub fn hypot_partials(a: f64, b: f64, y: f64) -> (f64, f64) {
    (a / y, b / y)
}

/// atan2(a, b)'s partials.
#[inline(always)]
pub fn atan2_partials(a: f64, b: f64) -> (f64, f64) {
    let d = a * a + b * b;
    (b / d, -a / d)
}

/// log(e^a + e^b).
#[inline(always)]
pub fn log_sum_exp(a: f64, b: f64) -> f64 {
    let m = a.max(b);
    if m == f64::NEG_INFINITY {
        m
    } else if m.is_finite() {
        // The larger term is `exp(0) = 1` exactly: one `exp`, the same bits (a NaN is never
        // `m`, so it stays the other term and the result stays NaN).
        let other = if a == m { b } else { a };
        m + (1.0 + (other - m).exp()).ln()
    } else {
        m + vmath::ln(vmath::exp(a - m) + vmath::exp(b - m))
    }
}

/// log_sum_exp's partials given its value `y`: the softmax weights.
#[inline(always)]
pub fn log_sum_exp_partials(a: f64, b: f64, y: f64) -> (f64, f64) {
    (vmath::exp(a - y), vmath::exp(b - y))
}

/// log_diff_exp's partials given `y = log(e^a − e^b)`: `e^a/(e^a − e^b)`, `−e^b/(e^a − e^b)`.
#[inline(always)]
pub fn log_diff_exp_partials(a: f64, b: f64, y: f64) -> (f64, f64) {
    (vmath::exp(a - y), -vmath::exp(b - y))
}

/// fdim(a, b) = max(a − b, 0).
#[inline(always)]
pub fn fdim(a: f64, b: f64) -> f64 {
    (a - b).max(0.0)
}

/// fdim's partials.
#[inline(always)]
pub fn fdim_partials(a: f64, b: f64) -> (f64, f64) {
    if a > b {
        (1.0, -1.0)
    } else {
        (0.0, 0.0)
    }
}
