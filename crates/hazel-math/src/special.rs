//! Scalar special functions, each with its value rule and its derivative rule side by side, and
//! the tables through which the op-graph engine finds Stan's scalar functions by name.
//!
//! # Lookup interface (stable)
//!
//! - [`unary`]`(name) -> Option<&'static UnaryFn>`: `value(x)` and `deriv(x, value)` = d value/dx.
//! - [`binary`]`(name) -> Option<&'static BinaryFn>`: `value(x, y)` and
//!   `grad(x, y, value) -> (∂/∂x, ∂/∂y)`.
//! - [`ternary`]`(name) -> Option<&'static TernaryFn>`: `value(x, y, z)` and
//!   `grad(x, y, z, value) -> [∂/∂x, ∂/∂y, ∂/∂z]`.
//!
//! The tables are `static` slices; lookups are a linear scan over names and allocate nothing.
//! Names are Stan's function names (`Phi`, `inv_logit`, `log1p_exp`, …); `abs` and `fabs` are
//! both present. Integer arguments of Stan functions (e.g. `n` in `choose`, `k` in `lmgamma`,
//! the order of `bessel_first_kind`) are passed as `f64` holding an integer, and their partials
//! are reported as 0.
//!
//! Outside a function's domain the value rule returns NaN (never panics); checking arguments
//! and turning NaN into Stan's error messages is the caller's job.
//!
//! The derivative rules receive the already computed value so that, e.g., `exp` reuses it.
//!
//! ```
//! use hazel_math::special::{binary, unary};
//! let lgamma = unary("lgamma").unwrap();
//! let v = (lgamma.value)(4.0); // log 3! = log 6
//! assert!((v - 6f64.ln()).abs() < 1e-15);
//! let d = (lgamma.deriv)(4.0, v); // digamma(4) = 1 + 1/2 + 1/3 - γ
//! assert!((d - (11.0 / 6.0 - 0.577_215_664_901_532_9)).abs() < 1e-15);
//! let pow = binary("pow").unwrap();
//! assert_eq!((pow.grad)(2.0, 3.0, 8.0).0, 12.0);
//! ```
//!
//! Accuracy (checked against mpmath in `tests/special_reference.rs`): elementary functions and
//! lgamma/erf/erfc from libm; digamma, trigamma, lbeta, inv_Phi, Lambert W to ~1e-14 relative;
//! incomplete gamma/beta and Owen's T to ~1e-12 relative, shapes up to 1e6 included (their
//! prefactors x^a e^{-x}/Γ(a) and x^a (1-x)^b/B(a, b) are formed from Stirling remainders so
//! that large shapes do not cancel).

mod hypergeometric;
mod incomplete;
pub mod rules;

pub use hypergeometric::{hypergeometric_2f1_grad, hypergeometric_pfq_grad};

pub use incomplete::{gamma_p, gamma_q, inc_beta, inv_inc_beta};
pub(crate) use incomplete::{
    gamma_p_grad, gamma_q_grad, inc_beta_grad, inv_inc_beta_grad, log1m_inc_beta_grad,
    log_gamma_p_grad, log_gamma_q_grad, log_inc_beta_grad, IncBetaGrad, IncGammaGrad,
};

use std::f64::consts::{FRAC_2_SQRT_PI, LN_2, PI, SQRT_2};

/// √(2π).
pub(crate) const SQRT_TWO_PI: f64 = 2.506_628_274_631_000_7;
/// log √(2π) = ½ log(2π).
pub(crate) const LOG_SQRT_TWO_PI: f64 = 0.918_938_533_204_672_8;
/// log √π.
pub(crate) const LOG_SQRT_PI: f64 = 0.572_364_942_924_700_1;
/// log π.
pub(crate) const LOG_PI: f64 = 1.144_729_885_849_400_2;
/// 1/√(2π).
pub(crate) const INV_SQRT_TWO_PI: f64 = 0.398_942_280_401_432_7;

/// A function of one real argument with its derivative rule.
pub struct UnaryFn {
    /// Stan's name of the function.
    pub name: &'static str,
    /// The value at `x`.
    pub value: fn(f64) -> f64,
    /// d value / dx, given `x` and the value at `x`.
    pub deriv: fn(f64, f64) -> f64,
}

/// A function of two real arguments with its gradient rule.
pub struct BinaryFn {
    /// Stan's name of the function.
    pub name: &'static str,
    /// The value at `(x, y)`.
    pub value: fn(f64, f64) -> f64,
    /// `(∂ value/∂x, ∂ value/∂y)` given `x`, `y` and the value.
    pub grad: fn(f64, f64, f64) -> (f64, f64),
}

/// A function of three real arguments with its gradient rule.
pub struct TernaryFn {
    /// Stan's name of the function.
    pub name: &'static str,
    /// The value at `(x, y, z)`.
    pub value: fn(f64, f64, f64) -> f64,
    /// The three partials given the arguments and the value.
    pub grad: fn(f64, f64, f64, f64) -> [f64; 3],
}

/// The unary function called `name` in Stan, if hazel has it.
pub fn unary(name: &str) -> Option<&'static UnaryFn> {
    UNARY.iter().find(|f| f.name == name)
}

/// The binary function called `name` in Stan, if hazel has it.
pub fn binary(name: &str) -> Option<&'static BinaryFn> {
    BINARY.iter().find(|f| f.name == name)
}

/// The ternary function called `name` in Stan, if hazel has it.
pub fn ternary(name: &str) -> Option<&'static TernaryFn> {
    TERNARY.iter().find(|f| f.name == name)
}

/// All unary functions (for listings and for tests that sweep the table).
pub fn unary_table() -> &'static [UnaryFn] {
    UNARY
}

/// All binary functions.
pub fn binary_table() -> &'static [BinaryFn] {
    BINARY
}

/// All ternary functions.
pub fn ternary_table() -> &'static [TernaryFn] {
    TERNARY
}

// ---------------------------------------------------------------------------------------------
// Plain-value functions.
// ---------------------------------------------------------------------------------------------

/// log Γ(x) (libm's `lgamma_r`, accurate to a few ulps away from the poles).
pub fn lgamma(x: f64) -> f64 {
    libm::lgamma_r(x).0
}

/// Γ(x).
pub(crate) fn tgamma(x: f64) -> f64 {
    libm::tgamma(x)
}

/// erf(x) (libm).
pub fn erf(x: f64) -> f64 {
    libm::erf(x)
}

/// erfc(x) (libm; accurate in the far tail, unlike 1 - erf).
pub fn erfc(x: f64) -> f64 {
    libm::erfc(x)
}

/// Coefficients B_{2k}/(2k) of the asymptotic series of digamma (k = 1..7).
const DIGAMMA_ASYMPTOTIC: [f64; 7] = [
    1.0 / 12.0,
    -1.0 / 120.0,
    1.0 / 252.0,
    -1.0 / 240.0,
    1.0 / 132.0,
    -691.0 / 32760.0,
    1.0 / 12.0,
];

/// Below this the polygamma functions are shifted upwards by the recurrence before the
/// asymptotic series is used (series truncation error < 1e-17 above it).
const POLYGAMMA_SHIFT: f64 = 12.0;

/// ψ(x + n) − ψ(x) for a count `n ≥ 0`, without the cancellation of subtracting two
/// digammas when `x ≫ n` (a negative binomial's φ → ∞): the finite sum Σₖ 1/(x + k) for small
/// counts, the asymptotic expansion for large `x`.
pub fn digamma_shift(x: f64, n: f64) -> f64 {
    if n == 0.0 {
        return 0.0;
    }
    if n <= 64.0 && n.fract() == 0.0 && x > 0.0 {
        let mut s = 0.0;
        for k in 0..n as u32 {
            s += 1.0 / (x + f64::from(k));
        }
        return s;
    }
    if x > 1e6 * n.max(1.0) {
        // ψ(z) = ln z − 1/(2z) − 1/(12z²) + O(z⁻⁴)
        let y = x + n;
        return (n / x).ln_1p() + n / (2.0 * x * y) + (1.0 / (x * x) - 1.0 / (y * y)) / 12.0;
    }
    digamma(x + n) - digamma(x)
}

/// ψ(x) = d log Γ(x)/dx. NaN at the poles (0, -1, -2, …).
pub fn digamma(x: f64) -> f64 {
    if let Some(v) = polygamma_special_value(x, f64::INFINITY) {
        return v;
    }
    if x <= 0.0 {
        // Reflection: ψ(1-x) - ψ(x) = π cot(πx).
        return digamma(1.0 - x) - PI / tan_pi(x);
    }
    let (z, result) = polygamma_shift_up(x, |z| -(1.0 / z));
    let inv2 = 1.0 / (z * z);
    let mut series = 0.0;
    let mut power = inv2;
    for c in DIGAMMA_ASYMPTOTIC {
        series += c * power;
        power *= inv2;
    }
    result + z.ln() - 0.5 / z - series
}

/// The values all the polygamma functions ψₙ share: NaN at NaN, at −∞ and at the poles
/// (0, −1, −2, …), `at_infinity` at +∞; `None` elsewhere.
fn polygamma_special_value(x: f64, at_infinity: f64) -> Option<f64> {
    if x.is_nan() || x == f64::NEG_INFINITY {
        return Some(f64::NAN);
    }
    if x == f64::INFINITY {
        return Some(at_infinity);
    }
    if x <= 0.0 && x == x.floor() {
        return Some(f64::NAN);
    }
    None
}

/// The recurrence ψₙ(x) = ψₙ(x + 1) + `term(x)` applied until the argument reaches
/// [`POLYGAMMA_SHIFT`], where the asymptotic series is accurate: returns that argument and the
/// sum of the terms (added in increasing argument order).
fn polygamma_shift_up(x: f64, term: impl Fn(f64) -> f64) -> (f64, f64) {
    let mut sum = 0.0;
    let mut z = x;
    while z < POLYGAMMA_SHIFT {
        sum += term(z);
        z += 1.0;
    }
    (z, sum)
}

/// tan(πx) computed with the argument reduced exactly, so that it is accurate for large x.
fn tan_pi(x: f64) -> f64 {
    let r = x - x.round();
    (PI * r).tan()
}

/// sin(πx) with exact argument reduction.
fn sin_pi(x: f64) -> f64 {
    let n = x.round();
    let r = x - n;
    let s = (PI * r).sin();
    if (n as i64).rem_euclid(2) == 0 {
        s
    } else {
        -s
    }
}

/// cos(πx) with exact argument reduction.
fn cos_pi(x: f64) -> f64 {
    let n = x.round();
    let r = x - n;
    let c = (PI * r).cos();
    if (n as i64).rem_euclid(2) == 0 {
        c
    } else {
        -c
    }
}

/// Bernoulli numbers B_{2k}, k = 1..8, for the trigamma and tetragamma series.
const BERNOULLI_2K: [f64; 8] = [
    1.0 / 6.0,
    -1.0 / 30.0,
    1.0 / 42.0,
    -1.0 / 30.0,
    5.0 / 66.0,
    -691.0 / 2730.0,
    7.0 / 6.0,
    -3617.0 / 510.0,
];

/// ψ₁(x) = d²log Γ(x)/dx².
pub fn trigamma(x: f64) -> f64 {
    if let Some(v) = polygamma_special_value(x, 0.0) {
        return v;
    }
    if x <= 0.0 {
        // ψ₁(1-x) + ψ₁(x) = π² / sin²(πx).
        let s = sin_pi(x);
        return PI * PI / (s * s) - trigamma(1.0 - x);
    }
    let (z, result) = polygamma_shift_up(x, |z| 1.0 / (z * z));
    let inv = 1.0 / z;
    let inv2 = inv * inv;
    // 1/z + 1/(2z²) + Σ B_{2k} / z^{2k+1}
    let mut series = 0.0;
    let mut power = inv * inv2;
    for b in BERNOULLI_2K {
        series += b * power;
        power *= inv2;
    }
    result + inv + 0.5 * inv2 + series
}

/// ψ₂(x) = d³log Γ(x)/dx³ (the derivative rule of trigamma).
pub(crate) fn tetragamma(x: f64) -> f64 {
    if let Some(v) = polygamma_special_value(x, 0.0) {
        return v;
    }
    if x <= 0.0 {
        // Differentiating ψ₁(1-x) + ψ₁(x) = π²/sin²(πx):
        // ψ₂(x) = ψ₂(1-x) - 2π³ cos(πx)/sin³(πx).
        let s = sin_pi(x);
        let c = cos_pi(x);
        return tetragamma(1.0 - x) - 2.0 * PI * PI * PI * c / (s * s * s);
    }
    let (z, result) = polygamma_shift_up(x, |z| -(2.0 / (z * z * z)));
    let inv = 1.0 / z;
    let inv2 = inv * inv;
    // -1/z² - 1/z³ - Σ (2k+1) B_{2k} / z^{2k+2}
    let mut series = 0.0;
    let mut power = inv2 * inv2;
    for (k, b) in BERNOULLI_2K.iter().enumerate() {
        series += (2 * k + 3) as f64 * b * power;
        power *= inv2;
    }
    result - inv2 - inv2 * inv - series
}

/// log Γ(x) - Stirling's approximation ((x - ½) log x - x + ½ log 2π), for x ≥ 10, by its
/// asymptotic series; used where differences of lgamma at large arguments would cancel.
pub(crate) fn lgamma_stirling_diff(x: f64) -> f64 {
    if x < 10.0 {
        return lgamma(x) - ((x - 0.5) * x.ln() - x + LOG_SQRT_TWO_PI);
    }
    let inv = 1.0 / x;
    let inv2 = inv * inv;
    // Σ B_{2k} / (2k (2k-1) x^{2k-1})
    let mut series = 0.0;
    let mut power = inv;
    for (k, b) in BERNOULLI_2K.iter().enumerate().take(6) {
        let two_k = (2 * k + 2) as f64;
        series += b / (two_k * (two_k - 1.0)) * power;
        power *= inv2;
    }
    series
}

/// log B(a, b) = log Γ(a) + log Γ(b) - log Γ(a + b), without cancellation for large arguments.
pub fn lbeta(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        return f64::NAN;
    }
    let x = a.min(b);
    let y = a.max(b);
    if x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::INFINITY;
    }
    if y.is_infinite() {
        return f64::NEG_INFINITY;
    }
    if y < 10.0 {
        return lgamma(x) + lgamma(y) - lgamma(x + y);
    }
    let ratio = x / (x + y);
    if x < 10.0 {
        let stirling_diff = lgamma_stirling_diff(y) - lgamma_stirling_diff(x + y);
        let stirling = (y - 0.5) * (-ratio).ln_1p() + x * (1.0 - (x + y).ln());
        return stirling + lgamma(x) + stirling_diff;
    }
    let stirling_diff =
        lgamma_stirling_diff(x) + lgamma_stirling_diff(y) - lgamma_stirling_diff(x + y);
    let stirling = (x - 0.5) * ratio.ln() + y * (-ratio).ln_1p() + LOG_SQRT_TWO_PI - 0.5 * y.ln();
    stirling + stirling_diff
}

/// Gradient of [`lbeta`]: (ψ(a) - ψ(a+b), ψ(b) - ψ(a+b)).
pub fn lbeta_grad(a: f64, b: f64) -> (f64, f64) {
    let dab = digamma(a + b);
    (digamma(a) - dab, digamma(b) - dab)
}

/// log of the binomial coefficient for real arguments, log (n choose k), Stan's
/// `binomial_coefficient_log`/`lchoose`: -log(n+1) - log B(n-k+1, k+1).
pub fn lchoose(n: f64, k: f64) -> f64 {
    if n.is_nan() || k.is_nan() || n < -1.0 || k < -1.0 || k > n + 1.0 {
        return f64::NAN;
    }
    if k == 0.0 || k == n {
        return 0.0;
    }
    if n > -1.0 && n < 0.0 {
        // Only reachable for k in (-1, n+1) with n in (-1, 0); use the lgamma form.
        return lgamma(n + 1.0) - lgamma(k + 1.0) - lgamma(n - k + 1.0);
    }
    -(n + 1.0).ln() - lbeta(n - k + 1.0, k + 1.0)
}

/// Gradient of [`lchoose`] with respect to (n, k).
pub fn lchoose_grad(n: f64, k: f64) -> (f64, f64) {
    let d_rest = digamma(n - k + 1.0);
    (digamma(n + 1.0) - d_rest, d_rest - digamma(k + 1.0))
}

/// 1 / (1 + e^{-x}) without overflow ([`crate::vmath`]'s: the same bits in scalar and vector
/// code).
#[inline(always)]
pub fn inv_logit(x: f64) -> f64 {
    crate::vmath::inv_logit(x)
}

/// log(u / (1 - u)) with `f64::ln`: the inverse of the bounded transforms (user inits). The op
/// graph's `logit` is [`rules::logit`] (with `vmath::ln`, which rounds differently); each keeps
/// the bits of its own path.
pub fn logit(u: f64) -> f64 {
    (u / (1.0 - u)).ln()
}

/// log(1 + e^x) without overflow or loss of precision ([`crate::vmath`]'s).
#[inline(always)]
pub fn log1p_exp(x: f64) -> f64 {
    crate::vmath::log1p_exp(x)
}

/// log(1 - e^x) for x ≤ 0 (NaN for x > 0), accurate near 0 and in the tail.
pub fn log1m_exp(x: f64) -> f64 {
    if x > 0.0 || x.is_nan() {
        f64::NAN
    } else if x > -LN_2 {
        (-x.exp_m1()).ln()
    } else {
        (-x.exp()).ln_1p()
    }
}

/// log(1 - x).
#[inline(always)]
pub fn log1m(x: f64) -> f64 {
    crate::vmath::ln_1p(-x)
}

/// log inv_logit(x) = -log1p_exp(-x).
#[inline(always)]
pub fn log_inv_logit(x: f64) -> f64 {
    -log1p_exp(-x)
}

/// log(1 - inv_logit(x)) = -log1p_exp(x).
#[inline(always)]
pub fn log1m_inv_logit(x: f64) -> f64 {
    -log1p_exp(x)
}

/// log(e^x + e^y), as `log_mix` has always formed it (`x + log1p_exp(y − x)`); the op graph's
/// `log_sum_exp` of two values is [`rules::log_sum_exp`] (one `exp` and `ln` about the larger),
/// which rounds differently: each keeps the bits of its own path.
pub(crate) fn log_sum_exp2(x: f64, y: f64) -> f64 {
    if x == f64::NEG_INFINITY {
        return y;
    }
    if y == f64::NEG_INFINITY {
        return x;
    }
    if x > y {
        x + log1p_exp(y - x)
    } else {
        y + log1p_exp(x - y)
    }
}

/// log Σ e^{x_i}; -∞ for an empty slice.
pub fn log_sum_exp(xs: &[f64]) -> f64 {
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if max.is_infinite() {
        return max;
    }
    let sum: f64 = xs.iter().map(|x| (x - max).exp()).sum();
    max + sum.ln()
}

/// log(e^x - e^y), NaN for y > x.
pub fn log_diff_exp(x: f64, y: f64) -> f64 {
    if y > x || x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    if y == f64::NEG_INFINITY {
        return x;
    }
    if x == y {
        return f64::NEG_INFINITY;
    }
    x + log1m_exp(y - x)
}

/// log(θ e^{λ₁} + (1 - θ) e^{λ₂}).
pub fn log_mix(theta: f64, lambda1: f64, lambda2: f64) -> f64 {
    log_sum_exp2(theta.ln() + lambda1, log1m(theta) + lambda2)
}

/// Gradient of [`log_mix`] with respect to (θ, λ₁, λ₂).
pub(crate) fn log_mix_grad(theta: f64, lambda1: f64, lambda2: f64, value: f64) -> [f64; 3] {
    let w1 = (theta.ln() + lambda1 - value).exp();
    let w2 = (log1m(theta) + lambda2 - value).exp();
    [(lambda1 - value).exp() - (lambda2 - value).exp(), w1, w2]
}

/// log Σ_k θ_k e^{λ_k}: Stan's `log_mix(theta, lambda)` for a simplex θ and log densities λ
/// (slices of equal length; NaN if they differ).
pub fn log_mix_slices(theta: &[f64], lambda: &[f64]) -> f64 {
    if theta.len() != lambda.len() {
        return f64::NAN;
    }
    let max = theta
        .iter()
        .zip(lambda)
        .map(|(t, l)| t.ln() + l)
        .fold(f64::NEG_INFINITY, f64::max);
    if max.is_infinite() {
        return max;
    }
    let sum: f64 = theta
        .iter()
        .zip(lambda)
        .map(|(t, l)| (t.ln() + l - max).exp())
        .sum();
    max + sum.ln()
}

/// Gradient of [`log_mix_slices`] given its value: ∂/∂θ_k = e^{λ_k - v},
/// ∂/∂λ_k = θ_k e^{λ_k - v}.
pub fn log_mix_slices_grad(
    theta: &[f64],
    lambda: &[f64],
    value: f64,
    d_theta: &mut [f64],
    d_lambda: &mut [f64],
) {
    for (k, (t, l)) in theta.iter().zip(lambda).enumerate() {
        let w = (l - value).exp();
        if let Some(d) = d_theta.get_mut(k) {
            *d = w;
        }
        if let Some(d) = d_lambda.get_mut(k) {
            *d = t * w;
        }
    }
}

/// log erfc(x), accurate for large positive x where erfc underflows.
pub(crate) fn log_erfc(x: f64) -> f64 {
    if x < 26.0 {
        erfc(x).ln()
    } else {
        // erfc(x) = e^{-x²}/(x√π) · (1 - 1/(2x²) + 3/(4x⁴) - 15/(8x⁶) + 105/(16x⁸) - …)
        -x * x - x.ln() - LOG_SQRT_PI + erfc_asymptotic_factor(x).ln()
    }
}

/// The bracketed factor of the asymptotic series of erfc for large x.
fn erfc_asymptotic_factor(x: f64) -> f64 {
    let t = 1.0 / (2.0 * x * x);
    let mut term = 1.0;
    let mut sum = 1.0;
    for k in 1..8 {
        term *= -((2 * k - 1) as f64) * t;
        sum += term;
    }
    sum
}

/// e^{x²} erfc(x), the scaled complementary error function (used for ratios φ/Φ in tails).
pub(crate) fn erfcx(x: f64) -> f64 {
    if x < 26.0 {
        if x < -26.0 {
            return f64::INFINITY;
        }
        (x * x).exp() * erfc(x)
    } else {
        erfc_asymptotic_factor(x) / (x * std::f64::consts::PI.sqrt())
    }
}

/// d log erfc(x) / dx = -2/√π e^{-x²}/erfc(x).
pub(crate) fn log_erfc_deriv(x: f64) -> f64 {
    if x < -6.0 {
        // erfc(x) ≈ 2, e^{-x²} tiny.
        -FRAC_2_SQRT_PI * (-x * x).exp() / erfc(x)
    } else {
        -FRAC_2_SQRT_PI / erfcx(x)
    }
}

/// The standard normal cdf Φ(x), accurate in both tails.
#[allow(non_snake_case)]
pub fn Phi(x: f64) -> f64 {
    0.5 * erfc(-x / SQRT_2)
}

/// log Φ(x), accurate in the lower tail.
#[allow(non_snake_case)]
pub(crate) fn log_Phi(x: f64) -> f64 {
    if x > 5.0 {
        // Φ(x) close to 1: log1p(-Φ(-x)).
        (-0.5 * erfc(x / SQRT_2)).ln_1p()
    } else {
        log_erfc(-x / SQRT_2) - LN_2
    }
}

/// d log Φ(x)/dx = φ(x)/Φ(x).
#[allow(non_snake_case)]
pub(crate) fn log_Phi_deriv(x: f64) -> f64 {
    -log_erfc_deriv(-x / SQRT_2) / SQRT_2
}

/// The standard normal density φ(x).
pub(crate) fn std_normal_pdf(x: f64) -> f64 {
    INV_SQRT_TWO_PI * (-0.5 * x * x).exp()
}

/// Stan's logistic approximation of Φ: inv_logit(0.07056 x³ + 1.5976 x).
#[allow(non_snake_case)]
pub(crate) fn Phi_approx(x: f64) -> f64 {
    inv_logit(0.07056 * x * x * x + 1.5976 * x)
}

/// Φ⁻¹(p): Acklam's rational approximation refined by two Halley steps on erfc
/// (accurate to a few ulps over (0, 1)). ±∞ at 0 and 1, NaN outside [0, 1].
#[allow(non_snake_case)]
pub fn inv_Phi(p: f64) -> f64 {
    if !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    if p == 0.0 {
        return f64::NEG_INFINITY;
    }
    if p == 1.0 {
        return f64::INFINITY;
    }
    const A: [f64; 6] = [
        -3.969683028665376e+01,
        2.209460984245205e+02,
        -2.759285104469687e+02,
        1.383_577_518_672_69e2,
        -3.066479806614716e+01,
        2.506628277459239e+00,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e+01,
        1.615858368580409e+02,
        -1.556989798598866e+02,
        6.680131188771972e+01,
        -1.328068155288572e+01,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-03,
        -3.223964580411365e-01,
        -2.400758277161838e+00,
        -2.549732539343734e+00,
        4.374664141464968e+00,
        2.938163982698783e+00,
    ];
    const D: [f64; 4] = [
        7.784695709041462e-03,
        3.224671290700398e-01,
        2.445134137142996e+00,
        3.754408661907416e+00,
    ];
    const P_LOW: f64 = 0.02425;
    let mut x = if p < P_LOW {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - P_LOW {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        let q = (-2.0 * (-p).ln_1p()).sqrt();
        -(((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    for _ in 0..2 {
        // Halley's step on f(x) = Φ(x) - p, computed in the tail where it is accurate.
        let e = if x < 0.0 {
            Phi(x) - p
        } else {
            (1.0 - p) - Phi(-x)
        };
        let u = e * SQRT_TWO_PI * (0.5 * x * x).exp();
        if !u.is_finite() {
            break;
        }
        x -= u / (1.0 + 0.5 * x * u);
    }
    x
}

/// erfc⁻¹(x) for x in [0, 2]: erfc⁻¹(x) = -Φ⁻¹(x/2)/√2.
pub(crate) fn inv_erfc(x: f64) -> f64 {
    -inv_Phi(0.5 * x) / SQRT_2
}

/// The principal branch W₀ of the Lambert W function (w e^w = x, w ≥ -1), x ≥ -1/e.
pub fn lambert_w0(x: f64) -> f64 {
    const NEG_INV_E: f64 = -0.367_879_441_171_442_33;
    if x.is_nan() || x < NEG_INV_E {
        return f64::NAN;
    }
    if x == f64::INFINITY {
        return f64::INFINITY;
    }
    if x == 0.0 {
        return 0.0;
    }
    let w = if x < -0.25 {
        let p = (2.0 * (std::f64::consts::E * x + 1.0)).max(0.0).sqrt();
        -1.0 + p - p * p / 3.0 + 11.0 / 72.0 * p * p * p
    } else if x < 3.0 {
        x.ln_1p() * (1.0 - x.ln_1p() / (2.0 + x.ln_1p()))
    } else {
        let l1 = x.ln();
        let l2 = l1.ln();
        l1 - l2 + l2 / l1
    };
    lambert_halley(x, w)
}

/// The lower branch W₋₁ of the Lambert W function (w ≤ -1), -1/e ≤ x < 0.
pub(crate) fn lambert_wm1(x: f64) -> f64 {
    const NEG_INV_E: f64 = -0.367_879_441_171_442_33;
    if x.is_nan() || !(NEG_INV_E..=0.0).contains(&x) {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    let w = if x < -0.25 {
        let p = -(2.0 * (std::f64::consts::E * x + 1.0)).max(0.0).sqrt();
        -1.0 + p - p * p / 3.0 + 11.0 / 72.0 * p * p * p
    } else {
        let l1 = (-x).ln();
        let l2 = (-l1).ln();
        l1 - l2 + l2 / l1
    };
    lambert_halley(x, w)
}

/// Halley iterations for w e^w = x from a starting value.
fn lambert_halley(x: f64, mut w: f64) -> f64 {
    for _ in 0..50 {
        let ew = w.exp();
        let f = w * ew - x;
        let wp1 = w + 1.0;
        if wp1 == 0.0 {
            break;
        }
        let step = f / (ew * wp1 - (w + 2.0) * f / (2.0 * wp1));
        if !step.is_finite() {
            break;
        }
        w -= step;
        if step.abs() <= 1e-15 * (1.0 + w.abs()) {
            break;
        }
    }
    w
}

/// Derivative of either Lambert W branch given x and w = W(x).
fn lambert_deriv(x: f64, w: f64) -> f64 {
    if x == 0.0 {
        1.0
    } else {
        w / (x * (1.0 + w))
    }
}

/// x log y with the convention 0 log 0 = 0 (Stan's `multiply_log`/`lmultiply`).
pub fn multiply_log(x: f64, y: f64) -> f64 {
    if x == 0.0 && y == 0.0 {
        0.0
    } else {
        x * y.ln()
    }
}

/// Owen's T function T(h, a) = 1/(2π) ∫₀ᵃ exp(-h²(1+x²)/2)/(1+x²) dx.
///
/// For |a| ≤ 1 the integral is computed by composite Gauss–Legendre quadrature (the integrand is
/// smooth and bounded there); for |a| > 1 by the identity (h ≥ 0, Q(x) = Φ(-x))
/// T(h, a) = ½[Q(h) + Q(ah)] - Q(h) Q(ah) - T(ah, 1/a), whose last term is again |a| ≤ 1.
pub fn owens_t(h: f64, a: f64) -> f64 {
    if h.is_nan() || a.is_nan() {
        return f64::NAN;
    }
    if a < 0.0 {
        return -owens_t(h, -a);
    }
    if a == 0.0 {
        return 0.0;
    }
    let h = h.abs();
    if a <= 1.0 {
        return owens_t_quadrature(h, a);
    }
    if a == f64::INFINITY {
        // T(h, ∞) = ½ Φ(-|h|).
        return 0.5 * Phi(-h);
    }
    let ah = a * h;
    let qh = Phi(-h);
    let qah = Phi(-ah);
    0.5 * (qh + qah) - qh * qah - owens_t_quadrature(ah, 1.0 / a)
}

/// T(h, a) for h ≥ 0, 0 < a ≤ 1 by composite 10-point Gauss–Legendre quadrature on [0, a]. The
/// integrand is a Gaussian bump of width ~1/h at 0, so the panels are made narrower than that
/// (at least 8, at most 256 panels).
fn owens_t_quadrature(h: f64, a: f64) -> f64 {
    const NODES: [f64; 5] = [
        0.148_874_338_981_631_2,
        0.433_395_394_129_247_2,
        0.679_409_568_299_024_4,
        0.865_063_366_688_984_5,
        0.973_906_528_517_171_7,
    ];
    const WEIGHTS: [f64; 5] = [
        0.295_524_224_714_752_9,
        0.269_266_719_309_996_4,
        0.219_086_362_515_982_1,
        0.149_451_349_150_580_6,
        0.066_671_344_308_688_1,
    ];
    let panels = (2.0 * a * h).ceil().clamp(8.0, 256.0) as usize;
    let hh = 0.5 * h * h;
    let width = a / panels as f64;
    let mut sum = 0.0;
    for panel in 0..panels {
        let mid = (panel as f64 + 0.5) * width;
        let half = 0.5 * width;
        for (node, weight) in NODES.iter().zip(WEIGHTS) {
            for x in [mid - half * node, mid + half * node] {
                let one_plus = 1.0 + x * x;
                sum += weight * half * (-hh * one_plus).exp() / one_plus;
            }
        }
    }
    sum / (2.0 * PI)
}

/// Gradient of Owen's T with respect to (h, a).
pub(crate) fn owens_t_grad(h: f64, a: f64) -> (f64, f64) {
    let one_plus = 1.0 + a * a;
    let dh = -std_normal_pdf(h) * erf(a * h / SQRT_2) / 2.0;
    let da = (-0.5 * h * h * one_plus).exp() / (2.0 * PI * one_plus);
    (dh, da)
}

/// log of the modified Bessel function of the first kind, log I_v(z), for v ≥ 0, z ≥ 0.
///
/// Power series Σ (z/2)^{2k+v} / (k! Γ(k+v+1)) summed on the log scale from its largest term
/// (converges for all z; the number of terms grows like z, capped at 100 000 beyond which the
/// uniform asymptotic expansion is used).
pub fn log_modified_bessel_first_kind(v: f64, z: f64) -> f64 {
    if v.is_nan() || z.is_nan() || z < 0.0 || v < 0.0 {
        return f64::NAN;
    }
    if z == 0.0 {
        return if v == 0.0 { 0.0 } else { f64::NEG_INFINITY };
    }
    if z == f64::INFINITY {
        return f64::INFINITY;
    }
    if z > 500.0 + 10.0 * v {
        return log_bessel_i_asymptotic(v, z);
    }
    let log_half_z = (0.5 * z).ln();
    // Terms t_k = (2k+v) log(z/2) - lgamma(k+1) - lgamma(k+v+1); the largest is near
    // k* = (sqrt(v² + z²) - v)/2.
    let k_star = ((v * v + z * z).sqrt() - v) / 2.0;
    let k0 = k_star.floor().max(0.0);
    let log_term = |k: f64| (2.0 * k + v) * log_half_z - lgamma(k + 1.0) - lgamma(k + v + 1.0);
    let lt0 = log_term(k0);
    let mut sum = 1.0;
    // Upward from k0: ratio t_{k+1}/t_k = (z/2)²/((k+1)(k+v+1)); at most 100 000 terms each way
    // (far more than convergence needs below the asymptotic branch's threshold).
    let q = 0.25 * z * z;
    let mut term = 1.0;
    let mut k = k0;
    for _ in 0..100_000 {
        term *= q / ((k + 1.0) * (k + v + 1.0));
        sum += term;
        k += 1.0;
        if term < 1e-17 * sum {
            break;
        }
    }
    let mut term = 1.0;
    let mut k = k0;
    for _ in 0..100_000 {
        if k <= 0.0 {
            break;
        }
        term *= (k * (k + v)) / q;
        sum += term;
        k -= 1.0;
        if term < 1e-17 * sum {
            break;
        }
    }
    lt0 + sum.ln()
}

/// Large-z expansion: I_v(z) ≈ e^z/√(2πz) Σ (-1)^k a_k(v)/z^k, a_k = Π (4v² - (2j-1)²)/(k! 8^k).
fn log_bessel_i_asymptotic(v: f64, z: f64) -> f64 {
    let mu = 4.0 * v * v;
    let mut term = 1.0;
    let mut sum = 1.0;
    for k in 1..30 {
        let odd = (2 * k - 1) as f64;
        let next = -term * (mu - odd * odd) / (k as f64 * 8.0 * z);
        if next.abs() > term.abs() {
            break;
        }
        term = next;
        sum += term;
        if term.abs() < 1e-17 * sum.abs() {
            break;
        }
    }
    z - 0.5 * (2.0 * PI * z).ln() + sum.ln()
}

/// d log I_v(z)/dz = I_{v+1}(z)/I_v(z) + v/z.
pub(crate) fn log_modified_bessel_first_kind_dz(v: f64, z: f64) -> f64 {
    if z == 0.0 {
        return if v == 0.0 { 0.0 } else { f64::INFINITY };
    }
    (log_modified_bessel_first_kind(v + 1.0, z) - log_modified_bessel_first_kind(v, z)).exp()
        + v / z
}

/// log of Stan's multivariate gamma Γ_k(x) = π^{k(k-1)/4} Π_{j=1..k} Γ(x + (1-j)/2).
///
/// NaN for k > [`MAX_SUM_TERMS`] (a sum of that many lgammas is not a sensible model term and
/// would take seconds).
pub fn lmgamma(k: f64, x: f64) -> f64 {
    if k.is_nan() || k > MAX_SUM_TERMS {
        return f64::NAN;
    }
    let mut result = k * (k - 1.0) * 0.25 * LOG_PI;
    let mut j = 1.0;
    while j <= k {
        result += lgamma(x + (1.0 - j) / 2.0);
        j += 1.0;
    }
    result
}

/// Largest integer order or count for which functions defined by a sum or recurrence of that
/// many terms (lmgamma, integer-order Bessel functions) are evaluated; beyond it they are NaN.
pub(crate) const MAX_SUM_TERMS: f64 = 1e6;

fn lmgamma_dx(k: f64, x: f64) -> f64 {
    if k.is_nan() || k > MAX_SUM_TERMS {
        return f64::NAN;
    }
    let mut result = 0.0;
    let mut j = 1.0;
    while j <= k {
        result += digamma(x + (1.0 - j) / 2.0);
        j += 1.0;
    }
    result
}

/// n choose k for integers (as f64), NaN out of range; rounded like Stan's `choose`.
pub fn choose(n: f64, k: f64) -> f64 {
    if n < 0.0 || k < 0.0 || n != n.floor() || k != k.floor() {
        return f64::NAN;
    }
    if k > n {
        return 0.0;
    }
    lchoose(n, k).exp().round()
}

/// log(inv_logit(x) - inv_logit(y)) for x > y.
pub(crate) fn log_inv_logit_diff(x: f64, y: f64) -> f64 {
    x - log1p_exp(x) + log1m_exp(y - x) - log1p_exp(y)
}

/// Bessel function of the first kind J_n(x) for integer order n.
pub fn bessel_first_kind(n: f64, x: f64) -> f64 {
    // libm's recurrences take O(|n|) steps.
    if n.is_nan() || n.abs() > MAX_SUM_TERMS {
        return f64::NAN;
    }
    libm::jn(n as i32, x)
}

/// Bessel function of the second kind Y_n(x) for integer order n.
pub fn bessel_second_kind(n: f64, x: f64) -> f64 {
    if n.is_nan() || n.abs() > MAX_SUM_TERMS {
        return f64::NAN;
    }
    libm::yn(n as i32, x)
}

/// log cosh(z) without overflow.
fn log_cosh(z: f64) -> f64 {
    let a = z.abs();
    a + (-2.0 * a).exp().ln_1p() - std::f64::consts::LN_2
}

/// K_n(x) and dK_n/dx for integer order n and x > 0, from
/// `K_n(x) = ∫₀^∞ exp(−x cosh t) cosh(n t) dt` (and `−∫ cosh t …` for the derivative) by the
/// trapezoidal rule with step 1/32, which converges geometrically for this analytic,
/// doubly-exponentially decaying integrand (error far below 1e-15 relative). The sums are
/// scaled by the integrand's largest value, so large orders and tiny x overflow only when
/// K itself does. NaN outside x > 0, |n| ≤ [`MAX_SUM_TERMS`].
pub(crate) fn modified_bessel_second_kind_grad(n: f64, x: f64) -> (f64, f64) {
    if n.is_nan() || x.is_nan() || n.abs() > MAX_SUM_TERMS || x <= 0.0 {
        return (f64::NAN, f64::NAN);
    }
    if x.is_infinite() {
        return (0.0, 0.0);
    }
    let n = n.abs();
    let h = 1.0 / 32.0;
    let g = |t: f64| -x * t.cosh() + log_cosh(n * t);
    // Pass 1: the largest log integrand and where the integrand has become negligible.
    let mut max = f64::NEG_INFINITY;
    let mut steps = 0usize;
    let mut prev = f64::NEG_INFINITY;
    loop {
        let t = steps as f64 * h;
        let v = g(t);
        max = max.max(v);
        let falling = v < prev;
        prev = v;
        steps += 1;
        if (falling && v < max - 60.0) || t > 800.0 || v.is_nan() {
            break;
        }
    }
    // Pass 2: the scaled sums.
    let (mut s, mut d) = (0.0, 0.0);
    for k in 0..steps {
        let t = k as f64 * h;
        let w = if k == 0 { 0.5 } else { 1.0 };
        let v = g(t) - max;
        s += w * v.exp();
        d += w * (v + log_cosh(t)).exp();
    }
    let scale = max.exp();
    (scale * s * h, -(scale * d * h))
}

/// hypergeometric_1F0(a, z) = (1 − z)^(−a) for |z| < 1 (NaN outside, where Stan throws).
pub(crate) fn hypergeometric_1f0(a: f64, z: f64) -> f64 {
    if z.is_nan() || z.abs() >= 1.0 || a.is_nan() {
        return f64::NAN;
    }
    (-a * (-z).ln_1p()).exp()
}

/// Modified Bessel function of the second kind K_n(x) for integer order n.
pub fn modified_bessel_second_kind(n: f64, x: f64) -> f64 {
    modified_bessel_second_kind_grad(n, x).0
}

/// Modified Bessel function of the first kind I_n(x) for integer order n.
pub fn modified_bessel_first_kind(n: f64, x: f64) -> f64 {
    let sign = if x < 0.0 && (n as i64) % 2 != 0 {
        -1.0
    } else {
        1.0
    };
    sign * log_modified_bessel_first_kind(n.abs(), x.abs()).exp()
}

// ---------------------------------------------------------------------------------------------
// Tables.
// ---------------------------------------------------------------------------------------------

static UNARY: &[UnaryFn] = &[
    UnaryFn {
        name: "exp",
        value: crate::vmath::exp,
        deriv: |_, v| v,
    },
    UnaryFn {
        name: "log",
        value: crate::vmath::ln,
        deriv: |x, _| 1.0 / x,
    },
    UnaryFn {
        name: "log1p",
        value: crate::vmath::ln_1p,
        deriv: |x, _| rules::log1p_deriv(x),
    },
    UnaryFn {
        name: "expm1",
        value: crate::vmath::expm1,
        deriv: |_, v| rules::expm1_deriv(v),
    },
    UnaryFn {
        name: "log1m",
        value: log1m,
        deriv: |x, _| rules::log1m_deriv(x),
    },
    UnaryFn {
        name: "lgamma",
        value: lgamma,
        deriv: |x, _| digamma(x),
    },
    UnaryFn {
        name: "digamma",
        value: digamma,
        deriv: |x, _| trigamma(x),
    },
    UnaryFn {
        name: "trigamma",
        value: trigamma,
        deriv: |x, _| tetragamma(x),
    },
    UnaryFn {
        name: "tgamma",
        value: tgamma,
        deriv: |x, v| v * digamma(x),
    },
    UnaryFn {
        name: "inv_logit",
        value: inv_logit,
        deriv: |_, v| rules::inv_logit_deriv(v),
    },
    UnaryFn {
        name: "logit",
        value: rules::logit,
        deriv: |x, _| rules::logit_deriv(x),
    },
    UnaryFn {
        name: "log1p_exp",
        value: log1p_exp,
        deriv: |x, _| inv_logit(x),
    },
    UnaryFn {
        name: "log1m_exp",
        value: log1m_exp,
        deriv: |x, _| -1.0 / (-x).exp_m1(),
    },
    UnaryFn {
        name: "log_inv_logit",
        value: log_inv_logit,
        deriv: |x, _| inv_logit(-x),
    },
    UnaryFn {
        name: "log1m_inv_logit",
        value: log1m_inv_logit,
        deriv: |x, _| -inv_logit(x),
    },
    UnaryFn {
        name: "inv_cloglog",
        value: |x| -(-x.exp()).exp_m1(),
        deriv: |x, _| (x - x.exp()).exp(),
    },
    UnaryFn {
        name: "Phi",
        value: Phi,
        deriv: |x, _| rules::Phi_deriv(x),
    },
    UnaryFn {
        name: "Phi_approx",
        value: Phi_approx,
        deriv: |x, v| v * (1.0 - v) * (3.0 * 0.07056 * x * x + 1.5976),
    },
    UnaryFn {
        name: "inv_Phi",
        value: inv_Phi,
        deriv: |_, v| SQRT_TWO_PI * (0.5 * v * v).exp(),
    },
    UnaryFn {
        name: "erf",
        value: erf,
        deriv: |x, _| rules::erf_deriv(x),
    },
    UnaryFn {
        name: "erfc",
        value: erfc,
        deriv: |x, _| rules::erfc_deriv(x),
    },
    UnaryFn {
        name: "sqrt",
        value: f64::sqrt,
        deriv: |_, v| rules::sqrt_deriv(v),
    },
    UnaryFn {
        name: "cbrt",
        value: f64::cbrt,
        deriv: rules::cbrt_deriv,
    },
    UnaryFn {
        name: "square",
        value: |x| x * x,
        deriv: |x, _| 2.0 * x,
    },
    UnaryFn {
        name: "inv",
        value: |x| 1.0 / x,
        deriv: |_, v| rules::inv_deriv(v),
    },
    UnaryFn {
        name: "inv_sqrt",
        value: rules::inv_sqrt,
        deriv: rules::inv_sqrt_deriv,
    },
    UnaryFn {
        name: "inv_square",
        value: rules::inv_square,
        deriv: rules::inv_square_deriv,
    },
    UnaryFn {
        name: "tanh",
        value: crate::vmath::tanh,
        deriv: |_, v| rules::tanh_deriv(v),
    },
    UnaryFn {
        name: "sinh",
        value: f64::sinh,
        deriv: |x, _| x.cosh(),
    },
    UnaryFn {
        name: "cosh",
        value: f64::cosh,
        deriv: |x, _| x.sinh(),
    },
    UnaryFn {
        name: "sin",
        value: f64::sin,
        deriv: |x, _| x.cos(),
    },
    UnaryFn {
        name: "cos",
        value: f64::cos,
        deriv: |x, _| -x.sin(),
    },
    UnaryFn {
        name: "tan",
        value: f64::tan,
        deriv: |_, v| rules::tan_deriv(v),
    },
    UnaryFn {
        name: "asin",
        value: f64::asin,
        deriv: |x, _| rules::asin_deriv(x),
    },
    UnaryFn {
        name: "acos",
        value: f64::acos,
        deriv: |x, _| rules::acos_deriv(x),
    },
    UnaryFn {
        name: "atan",
        value: f64::atan,
        deriv: |x, _| rules::atan_deriv(x),
    },
    UnaryFn {
        name: "asinh",
        value: f64::asinh,
        deriv: |x, _| 1.0 / (x * x + 1.0).sqrt(),
    },
    UnaryFn {
        name: "acosh",
        value: f64::acosh,
        deriv: |x, _| 1.0 / (x * x - 1.0).sqrt(),
    },
    UnaryFn {
        name: "atanh",
        value: f64::atanh,
        deriv: |x, _| 1.0 / (1.0 - x * x),
    },
    UnaryFn {
        name: "fabs",
        value: f64::abs,
        deriv: |x, _| rules::sign(x),
    },
    UnaryFn {
        name: "abs",
        value: f64::abs,
        deriv: |x, _| rules::sign(x),
    },
    UnaryFn {
        name: "log2",
        value: f64::log2,
        deriv: |x, _| rules::log2_deriv(x),
    },
    UnaryFn {
        name: "log10",
        value: f64::log10,
        deriv: |x, _| rules::log10_deriv(x),
    },
    UnaryFn {
        name: "exp2",
        value: f64::exp2,
        deriv: |_, v| rules::exp2_deriv(v),
    },
    UnaryFn {
        name: "lambert_w0",
        value: lambert_w0,
        deriv: lambert_deriv,
    },
    UnaryFn {
        name: "lambert_wm1",
        value: lambert_wm1,
        deriv: lambert_deriv,
    },
    UnaryFn {
        name: "step",
        value: |x| if x < 0.0 { 0.0 } else { 1.0 },
        deriv: |_, _| 0.0,
    },
    UnaryFn {
        name: "int_step",
        value: |x| if x > 0.0 { 1.0 } else { 0.0 },
        deriv: |_, _| 0.0,
    },
    UnaryFn {
        name: "floor",
        value: f64::floor,
        deriv: |_, _| 0.0,
    },
    UnaryFn {
        name: "ceil",
        value: f64::ceil,
        deriv: |_, _| 0.0,
    },
    UnaryFn {
        name: "round",
        value: f64::round,
        deriv: |_, _| 0.0,
    },
    UnaryFn {
        name: "trunc",
        value: f64::trunc,
        deriv: |_, _| 0.0,
    },
    UnaryFn {
        name: "std_normal_qf",
        value: inv_Phi,
        deriv: |_, v| SQRT_TWO_PI * (0.5 * v * v).exp(),
    },
    UnaryFn {
        name: "inv_erfc",
        value: inv_erfc,
        // d/dx erfc⁻¹(x) = -√π/2 · exp(v²)
        deriv: |_, v| -0.5 * std::f64::consts::PI.sqrt() * (v * v).exp(),
    },
    UnaryFn {
        name: "is_inf",
        value: |x| if x.is_infinite() { 1.0 } else { 0.0 },
        deriv: |_, _| 0.0,
    },
    UnaryFn {
        name: "is_nan",
        value: |x| if x.is_nan() { 1.0 } else { 0.0 },
        deriv: |_, _| 0.0,
    },
    UnaryFn {
        name: "std_normal_log_qf",
        value: |lp| inv_Phi(lp.exp()),
        deriv: |lp, v| SQRT_TWO_PI * (0.5 * v * v + lp).exp(),
    },
];

static BINARY: &[BinaryFn] = &[
    BinaryFn {
        name: "pow",
        value: f64::powf,
        grad: rules::pow_partials,
    },
    BinaryFn {
        name: "atan2",
        value: f64::atan2,
        grad: |y, x, _| rules::atan2_partials(y, x),
    },
    BinaryFn {
        name: "fmin",
        value: rules::fmin,
        grad: |x, y, _| rules::fmin_partials(x, y),
    },
    BinaryFn {
        name: "fmax",
        value: rules::fmax,
        grad: |x, y, _| rules::fmax_partials(x, y),
    },
    BinaryFn {
        name: "hypot",
        value: f64::hypot,
        grad: rules::hypot_partials,
    },
    BinaryFn {
        name: "beta",
        value: |a, b| lbeta(a, b).exp(),
        grad: |a, b, v| {
            let (da, db) = lbeta_grad(a, b);
            (v * da, v * db)
        },
    },
    BinaryFn {
        name: "ldexp",
        value: |x, n| x * n.exp2(),
        grad: |_, n, _| (n.exp2(), 0.0),
    },
    BinaryFn {
        name: "lbeta",
        value: lbeta,
        grad: |a, b, _| lbeta_grad(a, b),
    },
    BinaryFn {
        name: "lchoose",
        value: lchoose,
        grad: |n, k, _| lchoose_grad(n, k),
    },
    BinaryFn {
        name: "binomial_coefficient_log",
        value: lchoose,
        grad: |n, k, _| lchoose_grad(n, k),
    },
    BinaryFn {
        name: "choose",
        value: choose,
        grad: |_, _, _| (0.0, 0.0),
    },
    BinaryFn {
        name: "binary_log_loss",
        value: |y, y_hat| if y != 0.0 { -y_hat.ln() } else { -log1m(y_hat) },
        grad: |y, y_hat, _| {
            (
                0.0,
                if y != 0.0 {
                    -1.0 / y_hat
                } else {
                    1.0 / (1.0 - y_hat)
                },
            )
        },
    },
    BinaryFn {
        name: "log_diff_exp",
        value: log_diff_exp,
        grad: rules::log_diff_exp_partials,
    },
    BinaryFn {
        name: "log_sum_exp",
        value: rules::log_sum_exp,
        grad: rules::log_sum_exp_partials,
    },
    BinaryFn {
        name: "log_inv_logit_diff",
        value: log_inv_logit_diff,
        grad: |x, y, _| {
            // d/dx = -inv_logit(x)... derived from log(σ(x) - σ(y)).
            let dx = -inv_logit(x) - 1.0 / (y - x).exp_m1();
            let dy = -inv_logit(y) - 1.0 / (x - y).exp_m1();
            (dx, dy)
        },
    },
    BinaryFn {
        name: "multiply_log",
        value: multiply_log,
        grad: |x, y, _| (if x == 0.0 && y == 0.0 { 0.0 } else { y.ln() }, x / y),
    },
    BinaryFn {
        name: "lmultiply",
        value: multiply_log,
        grad: |x, y, _| (if x == 0.0 && y == 0.0 { 0.0 } else { y.ln() }, x / y),
    },
    BinaryFn {
        name: "gamma_p",
        value: gamma_p,
        grad: |a, x, _| {
            let g = gamma_p_grad(a, x);
            (g.da, g.dx)
        },
    },
    BinaryFn {
        name: "gamma_q",
        value: gamma_q,
        grad: |a, x, _| {
            let g = gamma_q_grad(a, x);
            (g.da, g.dx)
        },
    },
    BinaryFn {
        name: "fdim",
        value: rules::fdim,
        grad: |x, y, _| rules::fdim_partials(x, y),
    },
    BinaryFn {
        name: "fmod",
        value: |x, y| x % y,
        grad: |x, y, _| (1.0, -(x / y).trunc()),
    },
    BinaryFn {
        name: "owens_t",
        value: owens_t,
        grad: |h, a, _| owens_t_grad(h, a),
    },
    BinaryFn {
        name: "log_modified_bessel_first_kind",
        value: log_modified_bessel_first_kind,
        grad: |v, z, _| (0.0, log_modified_bessel_first_kind_dz(v, z)),
    },
    BinaryFn {
        name: "modified_bessel_first_kind",
        value: modified_bessel_first_kind,
        grad: |n, x, v| {
            // I_n'(x) = I_{n-1}(x) - (n/x) I_n(x).
            (
                0.0,
                modified_bessel_first_kind((n - 1.0).abs(), x) - n / x * v,
            )
        },
    },
    BinaryFn {
        name: "bessel_first_kind",
        value: bessel_first_kind,
        grad: |n, x, v| (0.0, n / x * v - bessel_first_kind(n + 1.0, x)),
    },
    BinaryFn {
        name: "hypergeometric_1F0",
        value: hypergeometric_1f0,
        grad: |a, z, v| (-(-z).ln_1p() * v, a * v / (1.0 - z)),
    },
    BinaryFn {
        name: "modified_bessel_second_kind",
        value: modified_bessel_second_kind,
        grad: |n, x, _| (0.0, modified_bessel_second_kind_grad(n, x).1),
    },
    BinaryFn {
        name: "bessel_second_kind",
        value: bessel_second_kind,
        grad: |n, x, v| (0.0, n / x * v - bessel_second_kind(n + 1.0, x)),
    },
    BinaryFn {
        name: "lmgamma",
        value: lmgamma,
        grad: |k, x, _| (0.0, lmgamma_dx(k, x)),
    },
    BinaryFn {
        name: "falling_factorial",
        value: |x, n| (lgamma(x + 1.0) - lgamma(x - n + 1.0)).exp(),
        grad: |x, n, v| (v * (digamma(x + 1.0) - digamma(x - n + 1.0)), 0.0),
    },
    BinaryFn {
        name: "rising_factorial",
        value: |x, n| (lgamma(x + n) - lgamma(x)).exp(),
        grad: |x, n, v| (v * (digamma(x + n) - digamma(x)), 0.0),
    },
    BinaryFn {
        name: "log_falling_factorial",
        value: |x, n| lgamma(x + 1.0) - lgamma(x - n + 1.0),
        grad: |x, n, _| {
            let d = digamma(x - n + 1.0);
            (digamma(x + 1.0) - d, d)
        },
    },
    BinaryFn {
        name: "log_rising_factorial",
        value: |x, n| lgamma(x + n) - lgamma(x),
        grad: |x, n, _| {
            let d = digamma(x + n);
            (d - digamma(x), d)
        },
    },
];

static TERNARY: &[TernaryFn] = &[
    TernaryFn {
        name: "log_mix",
        value: log_mix,
        grad: log_mix_grad,
    },
    TernaryFn {
        name: "fma",
        value: f64::mul_add,
        grad: |x, y, _, _| [y, x, 1.0],
    },
    TernaryFn {
        name: "inv_inc_beta",
        value: inv_inc_beta,
        grad: |a, b, _, x| inv_inc_beta_grad(a, b, x),
    },
    TernaryFn {
        name: "inc_beta",
        value: inc_beta,
        grad: |a, b, x, _| {
            let g = inc_beta_grad(a, b, x);
            [g.da, g.db, g.dx]
        },
    },
];
