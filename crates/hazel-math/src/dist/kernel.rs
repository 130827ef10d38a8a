//! Per-element log density rules (value and partials), the one place each family's formula
//! lives: the table entries ([`super::Distribution::lpdf`]) evaluate one element through
//! [`lpdf_via`], and the op graph's vectorised loops call the same kernels element by element.
//!
//! # Shape of a kernel
//!
//! A kernel is split so that a vectorised caller can hoist per-call work out of its element
//! loop when an argument is a broadcast scalar:
//!
//! 1. [`UnivariateKernel::new`]`(terms)` once per call: decides which summands are kept.
//! 2. [`UnivariateKernel::prepare`]`(k, x_k)` per argument value: Stan's checks on argument `k`
//!    alone, and the quantities derived from it alone ([`Derived`], e.g. `[1/σ, log σ, _]` or
//!    `[lgamma(α), digamma(α), _]`). A caller computes it once for a scalar argument and once
//!    per element for a vector argument.
//! 3. [`UnivariateKernel::element`]`(x, derived)`: the checks relating several arguments
//!    (uniform's bounds, binomial's `n ≤ N`), then the value and the partials of one element.
//!
//! The value keeps exactly the summands Stan Math keeps for `terms` (its `include_summand`),
//! and the partials are those of the returned value with respect to every argument (0 for
//! integer arguments). Since a summand that depends on a varying argument is always kept, the
//! partials of varying arguments are those of the full density.
//!
//! ```
//! use hazel_math::dist::kernel::{Normal, UnivariateKernel};
//! use hazel_math::dist::Terms;
//! // `y ~ normal(mu, sigma)`: data y, parameter vector mu, data scalar sigma (bit 1 varies).
//! let (y, mu, sigma) = ([0.1, -0.4, 2.0], [0.0, 0.5, 1.0], 1.5);
//! let kernel = Normal::new(Terms::propto(0b010));
//! let sigma_derived = kernel.prepare(2, sigma).unwrap(); // once: check and 1/σ
//! let (mut lp, mut d_mu) = (0.0, [0.0; 3]);
//! for i in 0..3 {
//!     let x = [y[i], mu[i], sigma, 0.0];
//!     let d = [
//!         kernel.prepare(0, y[i]).unwrap(),
//!         kernel.prepare(1, mu[i]).unwrap(),
//!         sigma_derived,
//!         [0.0; 3],
//!     ];
//!     let (v, g) = kernel.element(&x, &d).unwrap();
//!     lp += v;
//!     d_mu[i] = g[1];
//! }
//! let z: f64 = (0.1 - 0.0) / 1.5;
//! assert!((d_mu[0] - z / 1.5).abs() < 1e-15);
//! assert!(lp < 0.0);
//! ```
//!
//! The kernels are plain structs; every method is `#[inline]` so a caller's loop
//! monomorphised over the kernel type compiles to straight-line code.
//!
//! # Branch-free forms
//! The common families (`LANES = true`) also give [`UnivariateKernel::prepare_lanes`] and
//! [`UnivariateKernel::element_lanes`]: the same values, with the checks' outcome as a `bool`
//! instead of a `Result`, and no branch on the arguments (selects, and `crate::vmath`'s
//! functions), so a loop over elements vectorises. `prepare` and `element` are those forms
//! plus the messages, so both give the same bits; `tests/dist_lanes.rs` checks that they
//! agree on passing and failing arguments alike. Argument arrays are
//! fixed at 4 (the largest arity); entries past [`UnivariateKernel::ARITY`] are ignored.

use super::{all, bit, is_integer, Check, MathError, Terms};
use crate::special::{
    digamma, digamma_shift, lbeta, lchoose, lgamma, log1m, log1p_exp, LOG_PI, LOG_SQRT_PI,
    LOG_SQRT_TWO_PI,
};
use crate::vmath;
use std::f64::consts::LN_2;

/// The families that have a kernel, listed once: calls `$callback!(($($args)*) Normal StdNormal
/// …)` with every kernel type's name, so a caller generates its family list, names and
/// dispatch from it (hazel-graph's `DistKind` dispatch does; its enum variants carry the same
/// names and the compiler checks both ways). A new kernel is added here and in its family's
/// [`super::distribution`] entry (`lpdf_via::<Kernel>`; `tests/dist_families.rs` checks that
/// entry), and nowhere else.
#[macro_export]
macro_rules! univariate_kernels {
    ($callback:ident!($($args:tt)*)) => {
        $callback!(($($args)*)
            Normal StdNormal Cauchy StudentT Lognormal Exponential Gamma InvGamma Beta Uniform
            DoubleExponential Logistic Weibull ChiSquare Poisson PoissonLog Bernoulli
            BernoulliLogit Binomial BinomialLogit NegBinomial2 NegBinomial2Log)
    };
}

/// Stan's family name of kernel `K` (`"normal"` for `normal_lpdf`).
pub fn family<K: UnivariateKernel>() -> &'static str {
    let f = K::FUNCTION;
    f.strip_suffix("_lpdf")
        .or_else(|| f.strip_suffix("_lpmf"))
        .unwrap_or(f)
}

/// Whether kernel `K`'s variate is an integer (its function is an `_lpmf`).
pub fn is_discrete<K: UnivariateKernel>() -> bool {
    K::FUNCTION.ends_with("_lpmf")
}

/// Quantities derived from one argument alone; which slot holds what is each kernel's own
/// business (documented on its `prepare`). Unused slots are 0.
pub type Derived = [f64; 3];

/// One element's value and partials (`[∂/∂x_0, …]`, entries past the arity 0).
pub type ElementValue = (f64, [f64; 4]);

/// A univariate family's per-element log density rule; see the module documentation.
pub trait UnivariateKernel: Copy {
    /// Stan's function name as its messages show it, e.g. `"normal_lpdf"`.
    const FUNCTION: &'static str;
    /// Number of arguments including the variate.
    const ARITY: usize;
    /// The kernel for one call keeping the summands `terms` selects.
    fn new(terms: Terms) -> Self;
    /// Checks argument `k` (0 = the variate) on its own and derives what [`Self::element`]
    /// needs from it alone.
    fn prepare(&self, k: usize, x: f64) -> Result<Derived, MathError>;
    /// Value and partials of one element: `x[k]` are the arguments, `d[k] = prepare(k, x[k])`.
    fn element(&self, x: &[f64; 4], d: &[Derived; 4]) -> Result<ElementValue, MathError>;
    /// Whether [`Self::prepare_lanes`] and [`Self::element_lanes`] are branch-free (a loop
    /// over them vectorises); the defaults only wrap the checked forms.
    const LANES: bool = false;
    /// `(passes, derived)`: whether `prepare(k, x)` succeeds and what it derives (the same
    /// bits), computed without branching on `x`. Where the check fails, `derived` is
    /// unspecified.
    #[inline(always)]
    fn prepare_lanes(&self, k: usize, x: f64) -> (bool, Derived) {
        match self.prepare(k, x) {
            Ok(d) => (true, d),
            Err(_) => (false, NONE),
        }
    }
    /// `(passes, value)` of [`Self::element`] likewise.
    #[inline(always)]
    fn element_lanes(&self, x: &[f64; 4], d: &[Derived; 4]) -> (bool, ElementValue) {
        match self.element(x, d) {
            Ok(v) => (true, v),
            Err(_) => (false, ZERO),
        }
    }
    /// Whether this call keeps a summand whose branch-free form still calls a function that
    /// does not vectorise (poisson_log's `lgamma(n + 1)`, kept without `propto`;
    /// neg_binomial_2_log's `lchoose` and `digamma_shift` of a varying `φ`). A loop over
    /// [`Self::element_lanes`] is compiled once for calls that do and once for calls that do
    /// not, where this is known to be false and the branch around the call, which stops LLVM
    /// from vectorising the loop, is gone.
    #[inline(always)]
    fn calls_per_element(&self) -> bool {
        false
    }
    /// Whether [`Self::element_lanes_factored`] splits the term: a family whose term has a
    /// `−log(d)` part with `d` in [1, 2] (the logistic's `log(1 + e⁻|ˣ|)`), which a loop over
    /// many elements takes as the logarithm of a product of the `d`s.
    const LOG_FACTOR: bool = false;
    /// `(passes, (value + ln(d), partials), d)`: [`Self::element_lanes`] with its term split
    /// as `(value + ln(d)) − ln(d)`, `d` in [1, 2]; `element_lanes`'s value is exactly the
    /// first part minus `ln(d)` ([`crate::vmath::ln`]). Without [`Self::LOG_FACTOR`], `d = 1`.
    #[inline(always)]
    fn element_lanes_factored(&self, x: &[f64; 4], d: &[Derived; 4]) -> (bool, ElementValue, f64) {
        let (passes, value) = self.element_lanes(x, d);
        (passes, value, 1.0)
    }
    /// The arguments (bit k = argument k) that the summand kept only without `propto`
    /// (`terms.include(0)`) reads, where they are all integers (binomial's `log C(N, n)`);
    /// 0 where there is no such summand. A caller whose arguments in this mask are data
    /// computes that summand once ([`Self::integer_summand`]) and evaluates the rest with
    /// `propto`, which keeps every other summand when the remaining arguments vary.
    const INTEGER_SUMMAND: u32 = 0;
    /// That summand of one element (arguments as in [`Self::element`]); `None` where the
    /// counts fail the family's checks (the caller then leaves the element to the kernel,
    /// whose message names them).
    fn integer_summand(_x: &[f64; 4]) -> Option<f64> {
        None
    }
}

/// One element through a kernel: prepares every argument, then evaluates.
#[inline]
pub fn evaluate<K: UnivariateKernel>(
    terms: Terms,
    x: &[f64; 4],
) -> Result<ElementValue, MathError> {
    let kernel = K::new(terms);
    let mut d = [[0.0; 3]; 4];
    for k in 0..K::ARITY {
        d[k] = kernel.prepare(k, x[k])?;
    }
    kernel.element(x, &d)
}

/// The table's `lpdf` entry over a kernel (the [`super::LpdfFn`] signature).
pub fn lpdf_via<K: UnivariateKernel>(
    args: &[f64],
    terms: Terms,
    grad: &mut [f64],
) -> Result<f64, MathError> {
    let n = K::ARITY;
    if args.len() < n || grad.len() < n {
        return Err(MathError::new(format!(
            "{}: expected {} arguments and gradient slots, got {} and {}",
            K::FUNCTION,
            n,
            args.len(),
            grad.len()
        )));
    }
    let mut x = [0.0; 4];
    x[..n].copy_from_slice(&args[..n]);
    let (lp, g) = evaluate::<K>(terms, &x)?;
    grad[..n].copy_from_slice(&g[..n]);
    Ok(lp)
}

const NONE: Derived = [0.0; 3];
const ZERO: ElementValue = (0.0, [0.0; 4]);
const NEG_INF: ElementValue = (f64::NEG_INFINITY, [0.0; 4]);

/// A location-scale family's scale σ, checked positive and finite, and what derives from it:
/// `[1/σ, log σ (when kept), _]` (cauchy, lognormal, double_exponential, logistic).
#[inline]
fn scale_derived(check: Check, sigma: f64, log_sigma: bool) -> Result<Derived, MathError> {
    check.positive_finite("Scale parameter", sigma)?;
    Ok([
        1.0 / sigma,
        if log_sigma { vmath::ln(sigma) } else { 0.0 },
        0.0,
    ])
}

/// `x_0 · log x_1` with `0 · log 0 = 0` (Stan's `multiply_log`), given `log x_1`.
#[inline]
fn times_log(n: f64, log_x: f64) -> f64 {
    if n == 0.0 {
        0.0
    } else {
        n * log_x
    }
}

// ---------------------------------------------------------------------------------------------
// Continuous families.
// ---------------------------------------------------------------------------------------------

/// normal(y | mu, sigma). σ derives `[1/σ, log σ, 1/σ]`, the last two 0 when log σ is
/// dropped (so the element rule subtracts them without a branch).
#[derive(Clone, Copy)]
pub struct Normal {
    any: bool,
    /// log √(2π) when kept, else 0.
    constant: f64,
    log_sigma: bool,
}

impl UnivariateKernel for Normal {
    const FUNCTION: &'static str = "normal_lpdf";
    const ARITY: usize = 3;
    #[inline]
    fn new(terms: Terms) -> Self {
        Normal {
            any: terms.include(all(3)),
            constant: if terms.include(0) {
                LOG_SQRT_TWO_PI
            } else {
                0.0
            },
            log_sigma: terms.include(bit(2)),
        }
    }
    #[inline]
    fn prepare(&self, k: usize, x: f64) -> Result<Derived, MathError> {
        let check = Check {
            function: Self::FUNCTION,
        };
        match k {
            0 => check.not_nan("Random variable", x)?,
            1 => check.finite("Location parameter", x)?,
            _ => check.positive("Scale parameter", x)?,
        }
        Ok(self.prepare_lanes(k, x).1)
    }
    #[inline]
    fn element(&self, x: &[f64; 4], d: &[Derived; 4]) -> Result<ElementValue, MathError> {
        Ok(self.element_lanes(x, d).1)
    }
    const LANES: bool = true;
    #[inline(always)]
    fn prepare_lanes(&self, k: usize, x: f64) -> (bool, Derived) {
        match k {
            0 => (!x.is_nan(), NONE),
            1 => (x.is_finite(), NONE),
            _ => {
                let inv_sigma = 1.0 / x;
                let derived = if self.log_sigma {
                    [inv_sigma, vmath::ln(x), inv_sigma]
                } else {
                    [inv_sigma, 0.0, 0.0]
                };
                (x > 0.0, derived)
            }
        }
    }
    #[inline(always)]
    fn element_lanes(&self, x: &[f64; 4], d: &[Derived; 4]) -> (bool, ElementValue) {
        if !self.any {
            return (true, ZERO);
        }
        let [inv_sigma, log_sigma_kept, inv_sigma_kept] = d[2];
        let z = (x[0] - x[1]) * inv_sigma;
        let lp = -0.5 * z * z - self.constant - log_sigma_kept;
        let d_sigma = z * z * inv_sigma - inv_sigma_kept;
        let d_y = -z * inv_sigma;
        (true, (lp, [d_y, -d_y, d_sigma, 0.0]))
    }
}

/// std_normal(y).
#[derive(Clone, Copy)]
pub struct StdNormal {
    any: bool,
    constant: bool,
}

impl UnivariateKernel for StdNormal {
    const FUNCTION: &'static str = "std_normal_lpdf";
    const ARITY: usize = 1;
    #[inline]
    fn new(terms: Terms) -> Self {
        StdNormal {
            any: terms.include(all(1)),
            constant: terms.include(0),
        }
    }
    #[inline]
    fn prepare(&self, _k: usize, x: f64) -> Result<Derived, MathError> {
        Check {
            function: Self::FUNCTION,
        }
        .not_nan("Random variable", x)
        .map(|_| NONE)
    }
    #[inline]
    fn element(&self, x: &[f64; 4], d: &[Derived; 4]) -> Result<ElementValue, MathError> {
        Ok(self.element_lanes(x, d).1)
    }
    const LANES: bool = true;
    #[inline(always)]
    fn prepare_lanes(&self, _k: usize, x: f64) -> (bool, Derived) {
        (!x.is_nan(), NONE)
    }
    #[inline(always)]
    fn element_lanes(&self, x: &[f64; 4], _d: &[Derived; 4]) -> (bool, ElementValue) {
        if !self.any {
            return (true, ZERO);
        }
        let y = x[0];
        let mut lp = -0.5 * y * y;
        if self.constant {
            lp -= LOG_SQRT_TWO_PI;
        }
        (true, (lp, [-y, 0.0, 0.0, 0.0]))
    }
}

/// cauchy(y | mu, sigma). σ derives `[1/σ, log σ (if kept), _]`.
#[derive(Clone, Copy)]
pub struct Cauchy {
    any: bool,
    constant: bool,
    log_sigma: bool,
}

impl UnivariateKernel for Cauchy {
    const FUNCTION: &'static str = "cauchy_lpdf";
    const ARITY: usize = 3;
    #[inline]
    fn new(terms: Terms) -> Self {
        Cauchy {
            any: terms.include(all(3)),
            constant: terms.include(0),
            log_sigma: terms.include(bit(2)),
        }
    }
    #[inline]
    fn prepare(&self, k: usize, x: f64) -> Result<Derived, MathError> {
        let check = Check {
            function: Self::FUNCTION,
        };
        match k {
            0 => check.not_nan("Random variable", x).map(|_| NONE),
            1 => check.finite("Location parameter", x).map(|_| NONE),
            _ => scale_derived(check, x, self.log_sigma),
        }
    }
    #[inline]
    fn element(&self, x: &[f64; 4], d: &[Derived; 4]) -> Result<ElementValue, MathError> {
        if !self.any {
            return Ok(ZERO);
        }
        let [inv_sigma, log_sigma, _] = d[2];
        let z = (x[0] - x[1]) * inv_sigma;
        let mut lp = -vmath::ln_1p(z * z);
        // d/dz -log1p(z²) = -2z/(1+z²)
        let dz = -2.0 * z / (1.0 + z * z);
        let mut d_sigma = -dz * z * inv_sigma;
        if self.constant {
            lp -= LOG_PI;
        }
        if self.log_sigma {
            lp -= log_sigma;
            d_sigma -= inv_sigma;
        }
        Ok((lp, [dz * inv_sigma, -dz * inv_sigma, d_sigma, 0.0]))
    }
}

/// student_t(y | nu, mu, sigma). ν derives the ν-only summand and its derivative
/// `[log Γ((ν+1)/2) − log Γ(ν/2) − ½ log ν, its ∂/∂ν, _]` (when kept); σ derives
/// `[log σ (if kept), _, _]`.
#[derive(Clone, Copy)]
pub struct StudentT {
    any: bool,
    constant: bool,
    nu_term: bool,
    log_sigma: bool,
}

impl UnivariateKernel for StudentT {
    const FUNCTION: &'static str = "student_t_lpdf";
    const ARITY: usize = 4;
    #[inline]
    fn new(terms: Terms) -> Self {
        StudentT {
            any: terms.include(all(4)),
            constant: terms.include(0),
            nu_term: terms.include(bit(1)),
            log_sigma: terms.include(bit(3)),
        }
    }
    #[inline]
    fn prepare(&self, k: usize, x: f64) -> Result<Derived, MathError> {
        let check = Check {
            function: Self::FUNCTION,
        };
        match k {
            0 => check.not_nan("Random variable", x)?,
            1 => check.positive_finite("Degrees of freedom parameter", x)?,
            2 => check.finite("Location parameter", x)?,
            _ => check.positive_finite("Scale parameter", x)?,
        }
        Ok(self.prepare_lanes(k, x).1)
    }
    #[inline]
    fn element(&self, x: &[f64; 4], d: &[Derived; 4]) -> Result<ElementValue, MathError> {
        Ok(self.element_lanes(x, d).1)
    }
    // Branch-free except ν's derived terms (`lbeta`, `digamma`): ν is almost always one value
    // per call, prepared once, so the loop over elements still vectorises.
    const LANES: bool = true;
    #[inline(always)]
    fn prepare_lanes(&self, k: usize, x: f64) -> (bool, Derived) {
        match k {
            0 => (!x.is_nan(), NONE),
            1 => {
                let passes = x > 0.0 && x.is_finite();
                if !self.nu_term {
                    return (passes, NONE);
                }
                // Where the check fails the result is unspecified: evaluated at 1 instead, so
                // the special functions see only valid arguments.
                let x = if passes { x } else { 1.0 };
                // lgamma((ν+1)/2) - lgamma(ν/2) = lgamma(½) - lbeta(ν/2, ½), without the
                // cancellation of two large lgammas at large ν.
                let value = LOG_SQRT_PI - lbeta(0.5 * x, 0.5) - 0.5 * vmath::ln(x);
                let d_nu = 0.5 * (digamma(0.5 * (x + 1.0)) - digamma(0.5 * x)) - 0.5 / x;
                (passes, [value, d_nu, 0.0])
            }
            2 => (x.is_finite(), NONE),
            _ => (
                x > 0.0 && x.is_finite(),
                [if self.log_sigma { vmath::ln(x) } else { 0.0 }, 0.0, 0.0],
            ),
        }
    }
    #[inline(always)]
    fn element_lanes(&self, x: &[f64; 4], d: &[Derived; 4]) -> (bool, ElementValue) {
        if !self.any {
            return (true, ZERO);
        }
        let [y, nu, mu, sigma] = *x;
        let z = (y - mu) / sigma;
        let r = z * z / nu;
        let log1p_r = vmath::ln_1p(r);
        let half_nu_p1 = 0.5 * (nu + 1.0);
        let mut lp = -half_nu_p1 * log1p_r;
        // d/dy of -(ν+1)/2 log1p(z²/ν) = -(ν+1) z / (σ ν (1 + r))
        let d_y = -(nu + 1.0) * z / (sigma * nu * (1.0 + r));
        let mut d_nu = -0.5 * log1p_r + half_nu_p1 * r / (nu * (1.0 + r));
        let mut d_sigma = (nu + 1.0) * r / (sigma * (1.0 + r));
        if self.constant {
            lp -= LOG_SQRT_PI;
        }
        if self.nu_term {
            lp += d[1][0];
            d_nu += d[1][1];
        }
        if self.log_sigma {
            lp -= d[3][0];
            d_sigma -= 1.0 / sigma;
        }
        (true, (lp, [d_y, d_nu, -d_y, d_sigma]))
    }
}

/// lognormal(y | mu, sigma). y derives `[log y, _, _]`; σ derives `[1/σ, log σ (if kept), _]`.
///
/// Stan Math's lognormal_lpdf keeps −log √(2π) even under propto (unlike normal_lpdf); mirrored
/// so that lp__ matches CmdStan's.
#[derive(Clone, Copy)]
pub struct Lognormal {
    any: bool,
    log_y: bool,
    log_sigma: bool,
}

impl UnivariateKernel for Lognormal {
    const FUNCTION: &'static str = "lognormal_lpdf";
    const ARITY: usize = 3;
    #[inline]
    fn new(terms: Terms) -> Self {
        Lognormal {
            any: terms.include(all(3)),
            log_y: terms.include(bit(0)),
            log_sigma: terms.include(bit(2)),
        }
    }
    #[inline]
    fn prepare(&self, k: usize, x: f64) -> Result<Derived, MathError> {
        let check = Check {
            function: Self::FUNCTION,
        };
        match k {
            0 => {
                check.nonnegative("Random variable", x)?;
                Ok([vmath::ln(x), 0.0, 0.0])
            }
            1 => check.finite("Location parameter", x).map(|_| NONE),
            _ => scale_derived(check, x, self.log_sigma),
        }
    }
    #[inline]
    fn element(&self, x: &[f64; 4], d: &[Derived; 4]) -> Result<ElementValue, MathError> {
        if !self.any {
            return Ok(ZERO);
        }
        let (y, mu) = (x[0], x[1]);
        if y == 0.0 {
            return Ok(NEG_INF);
        }
        let log_y = d[0][0];
        let [inv_sigma, log_sigma, _] = d[2];
        let z = (log_y - mu) * inv_sigma;
        let mut lp = -0.5 * z * z - LOG_SQRT_TWO_PI;
        let mut d_y = -z * inv_sigma / y;
        let mut d_sigma = z * z * inv_sigma;
        if self.log_sigma {
            lp -= log_sigma;
            d_sigma -= inv_sigma;
        }
        if self.log_y {
            lp -= log_y;
            d_y -= 1.0 / y;
        }
        Ok((lp, [d_y, z * inv_sigma, d_sigma, 0.0]))
    }
}

/// exponential(y | beta). β derives `[log β (if kept), _, _]`.
#[derive(Clone, Copy)]
pub struct Exponential {
    any: bool,
    log_beta: bool,
}

impl UnivariateKernel for Exponential {
    const FUNCTION: &'static str = "exponential_lpdf";
    const ARITY: usize = 2;
    #[inline]
    fn new(terms: Terms) -> Self {
        Exponential {
            any: terms.include(all(2)),
            log_beta: terms.include(bit(1)),
        }
    }
    #[inline]
    fn prepare(&self, k: usize, x: f64) -> Result<Derived, MathError> {
        let check = Check {
            function: Self::FUNCTION,
        };
        match k {
            0 => check.nonnegative("Random variable", x).map(|_| NONE),
            _ => {
                check.positive_finite("Inverse scale parameter", x)?;
                Ok([if self.log_beta { vmath::ln(x) } else { 0.0 }, 0.0, 0.0])
            }
        }
    }
    #[inline]
    fn element(&self, x: &[f64; 4], d: &[Derived; 4]) -> Result<ElementValue, MathError> {
        if !self.any {
            return Ok(ZERO);
        }
        let (y, beta) = (x[0], x[1]);
        let mut lp = -beta * y;
        let mut d_beta = -y;
        if self.log_beta {
            lp += d[1][0];
            d_beta += 1.0 / beta;
        }
        Ok((lp, [-beta, d_beta, 0.0, 0.0]))
    }
}

/// gamma(y | alpha, beta). y derives `[log y, _, _]`; α derives `[lgamma α, digamma α, _]`
/// (when kept); β derives `[log β, _, _]` (when kept). Rejects y ≤ 0 like Stan Math.
#[derive(Clone, Copy)]
pub struct Gamma {
    any: bool,
    alpha_only: bool,
    alpha_beta: bool,
    y_alpha: bool,
    y_beta: bool,
}

impl UnivariateKernel for Gamma {
    const FUNCTION: &'static str = "gamma_lpdf";
    const ARITY: usize = 3;
    #[inline]
    fn new(terms: Terms) -> Self {
        Gamma {
            any: terms.include(all(3)),
            alpha_only: terms.include(bit(1)),
            alpha_beta: terms.include(bit(1) | bit(2)),
            y_alpha: terms.include(bit(0) | bit(1)),
            y_beta: terms.include(bit(0) | bit(2)),
        }
    }
    #[inline]
    fn prepare(&self, k: usize, x: f64) -> Result<Derived, MathError> {
        let check = Check {
            function: Self::FUNCTION,
        };
        match k {
            0 => {
                check.positive_finite("Random variable", x)?;
                Ok([vmath::ln(x), 0.0, 0.0])
            }
            1 => {
                check.positive_finite("Shape parameter", x)?;
                if self.alpha_only {
                    Ok([lgamma(x), digamma(x), 0.0])
                } else {
                    Ok(NONE)
                }
            }
            _ => {
                check.positive_finite("Inverse scale parameter", x)?;
                Ok([if self.alpha_beta { vmath::ln(x) } else { 0.0 }, 0.0, 0.0])
            }
        }
    }
    #[inline]
    fn element(&self, x: &[f64; 4], d: &[Derived; 4]) -> Result<ElementValue, MathError> {
        if !self.any {
            return Ok(ZERO);
        }
        let [y, alpha, beta, _] = *x;
        let log_y = d[0][0];
        let mut lp = 0.0;
        let mut g = [0.0; 4];
        if self.alpha_only {
            lp -= d[1][0];
            g[1] -= d[1][1];
        }
        if self.alpha_beta {
            let log_beta = d[2][0];
            lp += alpha * log_beta;
            g[1] += log_beta;
            g[2] += alpha / beta;
        }
        if self.y_alpha {
            lp += (alpha - 1.0) * log_y;
            g[0] += (alpha - 1.0) / y;
            g[1] += log_y;
        }
        if self.y_beta {
            lp -= beta * y;
            g[0] -= beta;
            g[2] -= y;
        }
        Ok((lp, g))
    }
}

/// inv_gamma(y | alpha, beta). α derives `[lgamma α, digamma α, _]` (when kept); β derives
/// `[log β, _, _]` (when kept).
#[derive(Clone, Copy)]
pub struct InvGamma {
    any: bool,
    alpha_only: bool,
    alpha_beta: bool,
    y_alpha: bool,
    y_beta: bool,
}

impl UnivariateKernel for InvGamma {
    const FUNCTION: &'static str = "inv_gamma_lpdf";
    const ARITY: usize = 3;
    #[inline]
    fn new(terms: Terms) -> Self {
        InvGamma {
            any: terms.include(all(3)),
            alpha_only: terms.include(bit(1)),
            alpha_beta: terms.include(bit(1) | bit(2)),
            y_alpha: terms.include(bit(0) | bit(1)),
            y_beta: terms.include(bit(0) | bit(2)),
        }
    }
    #[inline]
    fn prepare(&self, k: usize, x: f64) -> Result<Derived, MathError> {
        let check = Check {
            function: Self::FUNCTION,
        };
        match k {
            0 => check.not_nan("Random variable", x).map(|_| NONE),
            1 => {
                check.positive_finite("Shape parameter", x)?;
                if self.alpha_only {
                    Ok([lgamma(x), digamma(x), 0.0])
                } else {
                    Ok(NONE)
                }
            }
            _ => {
                check.positive_finite("Scale parameter", x)?;
                Ok([if self.alpha_beta { vmath::ln(x) } else { 0.0 }, 0.0, 0.0])
            }
        }
    }
    #[inline]
    fn element(&self, x: &[f64; 4], d: &[Derived; 4]) -> Result<ElementValue, MathError> {
        if !self.any {
            return Ok(ZERO);
        }
        let [y, alpha, beta, _] = *x;
        if y <= 0.0 {
            return Ok(NEG_INF);
        }
        let log_y = vmath::ln(y);
        let inv_y = 1.0 / y;
        let mut lp = 0.0;
        let mut g = [0.0; 4];
        if self.alpha_only {
            lp -= d[1][0];
            g[1] -= d[1][1];
        }
        if self.alpha_beta {
            let log_beta = d[2][0];
            lp += alpha * log_beta;
            g[1] += log_beta;
            g[2] += alpha / beta;
        }
        if self.y_alpha {
            lp -= (alpha + 1.0) * log_y;
            g[0] -= (alpha + 1.0) * inv_y;
            g[1] -= log_y;
        }
        if self.y_beta {
            lp -= beta * inv_y;
            g[0] += beta * inv_y * inv_y;
            g[2] -= inv_y;
        }
        Ok((lp, g))
    }
}

/// beta(y | alpha, beta). y derives `[log y, log(1 − y), _]`; each shape derives
/// `[lgamma, digamma, _]` of itself when its own summand is kept.
///
/// Stan keeps −lgamma(a) iff a varies, −lgamma(b) iff b varies, +lgamma(a + b) iff either does;
/// when all three are kept they are summed as −lbeta(a, b), which is accurate for large shapes.
#[derive(Clone, Copy)]
pub struct Beta {
    any: bool,
    a_only: bool,
    b_only: bool,
    y_a: bool,
    y_b: bool,
}

impl UnivariateKernel for Beta {
    const FUNCTION: &'static str = "beta_lpdf";
    const ARITY: usize = 3;
    #[inline]
    fn new(terms: Terms) -> Self {
        Beta {
            any: terms.include(all(3)),
            a_only: terms.include(bit(1)),
            b_only: terms.include(bit(2)),
            y_a: terms.include(bit(0) | bit(1)),
            y_b: terms.include(bit(0) | bit(2)),
        }
    }
    #[inline]
    fn prepare(&self, k: usize, x: f64) -> Result<Derived, MathError> {
        let check = Check {
            function: Self::FUNCTION,
        };
        match k {
            0 => {
                check.bounded("Random variable", x, 0.0, 1.0)?;
                Ok([vmath::ln(x), log1m(x), 0.0])
            }
            1 => {
                check.positive_finite("First shape parameter", x)?;
                if self.a_only {
                    Ok([lgamma(x), digamma(x), 0.0])
                } else {
                    Ok(NONE)
                }
            }
            _ => {
                check.positive_finite("Second shape parameter", x)?;
                if self.b_only {
                    Ok([lgamma(x), digamma(x), 0.0])
                } else {
                    Ok(NONE)
                }
            }
        }
    }
    #[inline]
    fn element(&self, x: &[f64; 4], d: &[Derived; 4]) -> Result<ElementValue, MathError> {
        if !self.any {
            return Ok(ZERO);
        }
        let [y, a, b, _] = *x;
        let [log_y, log1m_y, _] = d[0];
        let mut lp = 0.0;
        let mut g = [0.0; 4];
        if self.a_only || self.b_only {
            if self.a_only && self.b_only {
                lp -= lbeta(a, b);
            } else if self.a_only {
                lp += lgamma(a + b) - d[1][0];
            } else {
                lp += lgamma(a + b) - d[2][0];
            }
            let dab = digamma(a + b);
            if self.a_only {
                g[1] -= d[1][1];
            }
            if self.b_only {
                g[2] -= d[2][1];
            }
            g[1] += dab;
            g[2] += dab;
        }
        if self.y_a {
            lp += (a - 1.0) * log_y;
            g[0] += (a - 1.0) / y;
            g[1] += log_y;
        }
        if self.y_b {
            lp += (b - 1.0) * log1m_y;
            g[0] -= (b - 1.0) / (1.0 - y);
            g[2] += log1m_y;
        }
        Ok((lp, g))
    }
}

/// uniform(y | alpha, beta).
#[derive(Clone, Copy)]
pub struct Uniform {
    any: bool,
    width: bool,
}

impl UnivariateKernel for Uniform {
    const FUNCTION: &'static str = "uniform_lpdf";
    const ARITY: usize = 3;
    #[inline]
    fn new(terms: Terms) -> Self {
        Uniform {
            any: terms.include(all(3)),
            width: terms.include(bit(1) | bit(2)),
        }
    }
    #[inline]
    fn prepare(&self, k: usize, x: f64) -> Result<Derived, MathError> {
        let check = Check {
            function: Self::FUNCTION,
        };
        match k {
            0 => check.not_nan("Random variable", x),
            1 => check.finite("Lower bound parameter", x),
            _ => check.finite("Upper bound parameter", x),
        }
        .map(|_| NONE)
    }
    #[inline]
    fn element(&self, x: &[f64; 4], _d: &[Derived; 4]) -> Result<ElementValue, MathError> {
        let [y, alpha, beta, _] = *x;
        Check {
            function: Self::FUNCTION,
        }
        .greater("Upper bound parameter", beta, alpha)?;
        if !self.any {
            return Ok(ZERO);
        }
        if y < alpha || y > beta {
            return Ok(NEG_INF);
        }
        if !self.width {
            return Ok(ZERO);
        }
        let width = beta - alpha;
        Ok((-vmath::ln(width), [0.0, 1.0 / width, -1.0 / width, 0.0]))
    }
}

/// double_exponential(y | mu, sigma). σ derives `[1/σ, log σ (if kept), _]`.
#[derive(Clone, Copy)]
pub struct DoubleExponential {
    any: bool,
    constant: bool,
    log_sigma: bool,
}

impl UnivariateKernel for DoubleExponential {
    const FUNCTION: &'static str = "double_exponential_lpdf";
    const ARITY: usize = 3;
    #[inline]
    fn new(terms: Terms) -> Self {
        DoubleExponential {
            any: terms.include(all(3)),
            constant: terms.include(0),
            log_sigma: terms.include(bit(2)),
        }
    }
    #[inline]
    fn prepare(&self, k: usize, x: f64) -> Result<Derived, MathError> {
        let check = Check {
            function: Self::FUNCTION,
        };
        match k {
            0 => check.finite("Random variable", x).map(|_| NONE),
            1 => check.finite("Location parameter", x).map(|_| NONE),
            _ => scale_derived(check, x, self.log_sigma),
        }
    }
    #[inline]
    fn element(&self, x: &[f64; 4], d: &[Derived; 4]) -> Result<ElementValue, MathError> {
        if !self.any {
            return Ok(ZERO);
        }
        let [inv_sigma, log_sigma, _] = d[2];
        let diff = x[0] - x[1];
        let sign = crate::special::rules::sign(diff);
        let mut lp = -diff.abs() * inv_sigma;
        let mut d_sigma = diff.abs() * inv_sigma * inv_sigma;
        if self.constant {
            lp -= LN_2;
        }
        if self.log_sigma {
            lp -= log_sigma;
            d_sigma -= inv_sigma;
        }
        Ok((lp, [-sign * inv_sigma, sign * inv_sigma, d_sigma, 0.0]))
    }
}

/// logistic(y | mu, sigma). σ derives `[1/σ, log σ (if kept), _]`.
#[derive(Clone, Copy)]
pub struct Logistic {
    any: bool,
    log_sigma: bool,
}

impl UnivariateKernel for Logistic {
    const FUNCTION: &'static str = "logistic_lpdf";
    const ARITY: usize = 3;
    #[inline]
    fn new(terms: Terms) -> Self {
        Logistic {
            any: terms.include(all(3)),
            log_sigma: terms.include(bit(2)),
        }
    }
    #[inline]
    fn prepare(&self, k: usize, x: f64) -> Result<Derived, MathError> {
        let check = Check {
            function: Self::FUNCTION,
        };
        match k {
            0 => check.finite("Random variable", x).map(|_| NONE),
            1 => check.finite("Location parameter", x).map(|_| NONE),
            _ => scale_derived(check, x, self.log_sigma),
        }
    }
    #[inline]
    fn element(&self, x: &[f64; 4], d: &[Derived; 4]) -> Result<ElementValue, MathError> {
        if !self.any {
            return Ok(ZERO);
        }
        let [inv_sigma, log_sigma, _] = d[2];
        let z = (x[0] - x[1]) * inv_sigma;
        let mut lp = -z - 2.0 * log1p_exp(-z);
        // d/dz (-z - 2 log1p_exp(-z)) = -1 + 2 inv_logit(-z) = -tanh(z/2)
        let dz = -vmath::tanh(0.5 * z);
        let mut d_sigma = -dz * z * inv_sigma;
        if self.log_sigma {
            lp -= log_sigma;
            d_sigma -= inv_sigma;
        }
        Ok((lp, [dz * inv_sigma, -dz * inv_sigma, d_sigma, 0.0]))
    }
}

/// weibull(y | alpha, sigma). α derives `[log α (if kept), _, _]`; σ derives `[log σ, _, _]`.
#[derive(Clone, Copy)]
pub struct Weibull {
    any: bool,
    log_alpha: bool,
    y_alpha: bool,
    alpha_sigma: bool,
}

impl UnivariateKernel for Weibull {
    const FUNCTION: &'static str = "weibull_lpdf";
    const ARITY: usize = 3;
    #[inline]
    fn new(terms: Terms) -> Self {
        Weibull {
            any: terms.include(all(3)),
            log_alpha: terms.include(bit(1)),
            y_alpha: terms.include(bit(0) | bit(1)),
            alpha_sigma: terms.include(bit(1) | bit(2)),
        }
    }
    #[inline]
    fn prepare(&self, k: usize, x: f64) -> Result<Derived, MathError> {
        let check = Check {
            function: Self::FUNCTION,
        };
        match k {
            0 => check.finite("Random variable", x).map(|_| NONE),
            1 => {
                check.positive_finite("Shape parameter", x)?;
                Ok([if self.log_alpha { vmath::ln(x) } else { 0.0 }, 0.0, 0.0])
            }
            _ => {
                check.positive_finite("Scale parameter", x)?;
                Ok([vmath::ln(x), 0.0, 0.0])
            }
        }
    }
    #[inline]
    fn element(&self, x: &[f64; 4], d: &[Derived; 4]) -> Result<ElementValue, MathError> {
        if !self.any {
            return Ok(ZERO);
        }
        let [y, alpha, sigma, _] = *x;
        if y < 0.0 {
            return Ok(NEG_INF);
        }
        let log_y = vmath::ln(y);
        let log_sigma = d[2][0];
        let pow = vmath::exp(alpha * (log_y - log_sigma)); // (y/σ)^α
        let mut lp = -pow;
        let mut g = [
            -alpha * pow / y,
            -pow * (log_y - log_sigma),
            alpha * pow / sigma,
            0.0,
        ];
        if self.log_alpha {
            lp += d[1][0];
            g[1] += 1.0 / alpha;
        }
        if self.y_alpha {
            lp += (alpha - 1.0) * log_y;
            g[0] += (alpha - 1.0) / y;
            g[1] += log_y;
        }
        if self.alpha_sigma {
            lp -= alpha * log_sigma;
            g[1] -= log_sigma;
            g[2] -= alpha / sigma;
        }
        Ok((lp, g))
    }
}

/// chi_square(y | nu). ν derives the ν-only summand and its derivative
/// `[ν/2 log 2 + lgamma(ν/2), ½ log 2 + ½ digamma(ν/2), _]` (when kept).
#[derive(Clone, Copy)]
pub struct ChiSquare {
    any: bool,
    nu_only: bool,
    y_nu: bool,
    y_only: bool,
}

impl UnivariateKernel for ChiSquare {
    const FUNCTION: &'static str = "chi_square_lpdf";
    const ARITY: usize = 2;
    #[inline]
    fn new(terms: Terms) -> Self {
        ChiSquare {
            any: terms.include(all(2)),
            nu_only: terms.include(bit(1)),
            y_nu: terms.include(bit(0) | bit(1)),
            y_only: terms.include(bit(0)),
        }
    }
    #[inline]
    fn prepare(&self, k: usize, x: f64) -> Result<Derived, MathError> {
        let check = Check {
            function: Self::FUNCTION,
        };
        match k {
            0 => check.nonnegative("Random variable", x).map(|_| NONE),
            _ => {
                check.positive_finite("Degrees of freedom parameter", x)?;
                if !self.nu_only {
                    return Ok(NONE);
                }
                let half_nu = 0.5 * x;
                Ok([
                    half_nu * LN_2 + lgamma(half_nu),
                    0.5 * LN_2 + 0.5 * digamma(half_nu),
                    0.0,
                ])
            }
        }
    }
    #[inline]
    fn element(&self, x: &[f64; 4], d: &[Derived; 4]) -> Result<ElementValue, MathError> {
        if !self.any {
            return Ok(ZERO);
        }
        let (y, nu) = (x[0], x[1]);
        let half_nu = 0.5 * nu;
        let log_y = vmath::ln(y);
        let mut lp = 0.0;
        let mut g = [0.0; 4];
        if self.nu_only {
            lp -= d[1][0];
            g[1] -= d[1][1];
        }
        if self.y_nu {
            lp += (half_nu - 1.0) * log_y;
            g[0] += (half_nu - 1.0) / y;
            g[1] += 0.5 * log_y;
        }
        if self.y_only {
            lp -= 0.5 * y;
            g[0] -= 0.5;
        }
        Ok((lp, g))
    }
}

// ---------------------------------------------------------------------------------------------
// Discrete families (the variate's partial is always 0).
// ---------------------------------------------------------------------------------------------

/// A count: a nonnegative integer. One combined test on the (per-element) passing path; the
/// separate checks, in Stan's order, only to phrase the failure.
#[inline]
fn check_count(check: Check, what: &str, n: f64) -> Result<Derived, MathError> {
    if is_count(n) {
        return Ok(NONE);
    }
    check.integer(what, n)?;
    check.nonnegative(what, n)?;
    Ok(NONE)
}

/// Whether `n` is a count ([`check_count`]'s test, as a `bool`).
#[inline(always)]
fn is_count(n: f64) -> bool {
    n >= 0.0 && is_integer(n)
}

/// Binomial's and binomial_logit's count argument `k` (0: n, 1: N) on its own: an integer.
#[inline]
fn check_binomial_count(check: Check, k: usize, x: f64) -> Result<Derived, MathError> {
    let what = if k == 0 {
        "Successes variable"
    } else {
        "Population size parameter"
    };
    check.integer(what, x).map(|_| NONE)
}

/// Binomial's and binomial_logit's counts together: `0 ≤ n ≤ N`.
#[inline]
fn check_binomial_counts(check: Check, n: f64, big_n: f64) -> Result<(), MathError> {
    check.bounded("Successes variable", n, 0.0, big_n)?;
    check.nonnegative("Population size parameter", big_n)
}

/// Binomial's and binomial_logit's integer summand `log C(N, n)` (their
/// [`UnivariateKernel::integer_summand`]), where the counts pass both kernels' checks.
fn binomial_coefficient_summand(x: &[f64; 4]) -> Option<f64> {
    let [n, big_n, _, _] = *x;
    let check = Check {
        function: "binomial_lpmf",
    };
    let counts = check_binomial_count(check, 0, n)
        .and(check_binomial_count(check, 1, big_n))
        .and(check_binomial_counts(check, n, big_n));
    counts.ok().map(|_| lchoose(big_n, n))
}

/// Bernoulli's and bernoulli_logit's variate: 0 or 1 (bounds first, as Stan phrases it).
#[inline]
fn check_binary(check: Check, n: f64) -> Result<Derived, MathError> {
    check.bounded("n", n, 0.0, 1.0)?;
    check.integer("n", n).map(|_| NONE)
}

/// Whether `n` is 0 or 1 ([`check_binary`]'s test, as a `bool`).
#[inline(always)]
fn is_binary(n: f64) -> bool {
    (0.0..=1.0).contains(&n) && is_integer(n)
}

/// The summand of neg_binomial_2 and neg_binomial_2_log that only φ (with n) enters,
/// `log C(n + φ − 1, n)`, and its φ-derivative `ψ(n + φ) − ψ(φ)`.
#[inline]
fn neg_binomial_2_phi_term(n: f64, phi: f64) -> (f64, f64) {
    (lchoose(n + phi - 1.0, n), digamma_shift(phi, n))
}

/// poisson(n | lambda). λ derives `[log λ (if kept), _, _]`.
#[derive(Clone, Copy)]
pub struct Poisson {
    any: bool,
    constant: bool,
    rate: bool,
}

impl UnivariateKernel for Poisson {
    const FUNCTION: &'static str = "poisson_lpmf";
    const ARITY: usize = 2;
    #[inline]
    fn new(terms: Terms) -> Self {
        Poisson {
            any: terms.include(all(2)),
            constant: terms.include(0),
            rate: terms.include(bit(1)),
        }
    }
    #[inline]
    fn prepare(&self, k: usize, x: f64) -> Result<Derived, MathError> {
        let check = Check {
            function: Self::FUNCTION,
        };
        match k {
            0 => check_count(check, "Random variable", x),
            _ => {
                check.nonnegative("Rate parameter", x)?;
                Ok([if self.rate { vmath::ln(x) } else { 0.0 }, 0.0, 0.0])
            }
        }
    }
    #[inline]
    fn element(&self, x: &[f64; 4], d: &[Derived; 4]) -> Result<ElementValue, MathError> {
        if !self.any {
            return Ok(ZERO);
        }
        let (n, lambda) = (x[0], x[1]);
        if lambda == f64::INFINITY || (lambda == 0.0 && n != 0.0) {
            return Ok(NEG_INF);
        }
        let mut lp = 0.0;
        let mut g = [0.0; 4];
        if self.constant {
            lp -= lgamma(n + 1.0);
        }
        if self.rate {
            lp += times_log(n, d[1][0]) - lambda;
            g[1] = if lambda == 0.0 {
                -1.0
            } else {
                n / lambda - 1.0
            };
        }
        Ok((lp, g))
    }
}

/// poisson_log(n | alpha). α derives `[e^α (if kept), _, _]`.
#[derive(Clone, Copy)]
pub struct PoissonLog {
    any: bool,
    constant: bool,
    rate: bool,
}

impl UnivariateKernel for PoissonLog {
    const FUNCTION: &'static str = "poisson_log_lpmf";
    const ARITY: usize = 2;
    #[inline]
    fn new(terms: Terms) -> Self {
        PoissonLog {
            any: terms.include(all(2)),
            constant: terms.include(0),
            rate: terms.include(bit(1)),
        }
    }
    #[inline]
    fn prepare(&self, k: usize, x: f64) -> Result<Derived, MathError> {
        let check = Check {
            function: Self::FUNCTION,
        };
        match k {
            0 => {
                check_count(check, "Random variable", x)?;
            }
            _ => check.not_nan("Log rate parameter", x)?,
        };
        Ok(self.prepare_lanes(k, x).1)
    }
    #[inline]
    fn element(&self, x: &[f64; 4], d: &[Derived; 4]) -> Result<ElementValue, MathError> {
        Ok(self.element_lanes(x, d).1)
    }
    const LANES: bool = true;
    #[inline(always)]
    fn prepare_lanes(&self, k: usize, x: f64) -> (bool, Derived) {
        match k {
            0 => (is_count(x), NONE),
            _ => (
                !x.is_nan(),
                [if self.rate { vmath::exp(x) } else { 0.0 }, 0.0, 0.0],
            ),
        }
    }
    #[inline(always)]
    fn calls_per_element(&self) -> bool {
        self.constant
    }
    #[inline(always)]
    fn element_lanes(&self, x: &[f64; 4], d: &[Derived; 4]) -> (bool, ElementValue) {
        if !self.any {
            return (true, ZERO);
        }
        let (n, alpha) = (x[0], x[1]);
        let lp0 = if self.constant {
            0.0 - lgamma(n + 1.0)
        } else {
            0.0
        };
        let rate = d[1][0];
        let (lp, g1) = if self.rate {
            (lp0 + (n * alpha - rate), n - rate)
        } else {
            (lp0, 0.0)
        };
        // α = +∞: no mass anywhere; α = −∞: all mass at 0 (with n α = 0 · (−∞) = 0).
        let finite = alpha.is_finite();
        let lp = if finite {
            lp
        } else if alpha == f64::INFINITY || n != 0.0 {
            f64::NEG_INFINITY
        } else {
            lp0
        };
        (true, (lp, [0.0, if finite { g1 } else { 0.0 }, 0.0, 0.0]))
    }
}

/// binomial(n | N, theta). θ derives `[log θ, log(1 − θ), _]` (when kept).
#[derive(Clone, Copy)]
pub struct Binomial {
    any: bool,
    constant: bool,
    theta: bool,
}

impl UnivariateKernel for Binomial {
    const FUNCTION: &'static str = "binomial_lpmf";
    const ARITY: usize = 3;
    // `log C(N, n)`: the counts alone.
    const INTEGER_SUMMAND: u32 = 0b011;
    fn integer_summand(x: &[f64; 4]) -> Option<f64> {
        binomial_coefficient_summand(x)
    }
    #[inline]
    fn new(terms: Terms) -> Self {
        Binomial {
            any: terms.include(all(3)),
            constant: terms.include(0),
            theta: terms.include(bit(2)),
        }
    }
    #[inline]
    fn prepare(&self, k: usize, x: f64) -> Result<Derived, MathError> {
        let check = Check {
            function: Self::FUNCTION,
        };
        match k {
            0 | 1 => check_binomial_count(check, k, x),
            _ => {
                check.bounded("Probability parameter", x, 0.0, 1.0)?;
                if self.theta {
                    Ok([vmath::ln(x), vmath::ln(1.0 - x), 0.0])
                } else {
                    Ok(NONE)
                }
            }
        }
    }
    #[inline]
    fn element(&self, x: &[f64; 4], d: &[Derived; 4]) -> Result<ElementValue, MathError> {
        let [n, big_n, theta, _] = *x;
        let check = Check {
            function: Self::FUNCTION,
        };
        check_binomial_counts(check, n, big_n)?;
        if !self.any {
            return Ok(ZERO);
        }
        let mut lp = 0.0;
        let mut g = [0.0; 4];
        if self.constant {
            lp += lchoose(big_n, n);
        }
        if self.theta {
            let failures = big_n - n;
            let [log_theta, log1m_theta, _] = d[2];
            lp += times_log(n, log_theta) + times_log(failures, log1m_theta);
            let mut d_theta = 0.0;
            if n != 0.0 {
                d_theta += n / theta;
            }
            if failures != 0.0 {
                d_theta -= failures / (1.0 - theta);
            }
            g[2] = d_theta;
        }
        Ok((lp, g))
    }
}

/// binomial_logit(n | N, alpha). α derives `[log1p_exp(−α), log1p_exp(α), inv_logit(α)]`
/// (when kept).
#[derive(Clone, Copy)]
pub struct BinomialLogit {
    any: bool,
    constant: bool,
    alpha: bool,
}

impl UnivariateKernel for BinomialLogit {
    const FUNCTION: &'static str = "binomial_logit_lpmf";
    const ARITY: usize = 3;
    // `log C(N, n)`: the counts alone.
    const INTEGER_SUMMAND: u32 = 0b011;
    fn integer_summand(x: &[f64; 4]) -> Option<f64> {
        binomial_coefficient_summand(x)
    }
    #[inline]
    fn new(terms: Terms) -> Self {
        BinomialLogit {
            any: terms.include(all(3)),
            constant: terms.include(0),
            alpha: terms.include(bit(2)),
        }
    }
    #[inline]
    fn prepare(&self, k: usize, x: f64) -> Result<Derived, MathError> {
        let check = Check {
            function: Self::FUNCTION,
        };
        match k {
            0 | 1 => {
                check_binomial_count(check, k, x)?;
            }
            _ => check.finite("Probability parameter", x)?,
        };
        Ok(self.prepare_lanes(k, x).1)
    }
    #[inline]
    fn element(&self, x: &[f64; 4], d: &[Derived; 4]) -> Result<ElementValue, MathError> {
        let check = Check {
            function: Self::FUNCTION,
        };
        check_binomial_counts(check, x[0], x[1])?;
        Ok(self.element_lanes(x, d).1)
    }
    const LANES: bool = true;
    #[inline(always)]
    fn prepare_lanes(&self, k: usize, x: f64) -> (bool, Derived) {
        match k {
            0 | 1 => (is_integer(x), NONE),
            _ => {
                let derived = if self.alpha {
                    // One `exp` for the three.
                    let (softplus, softplus_neg, p) = vmath::log1p_exp_pair_and_inv_logit(x);
                    [softplus_neg, softplus, p]
                } else {
                    NONE
                };
                (x.is_finite(), derived)
            }
        }
    }
    #[inline(always)]
    fn calls_per_element(&self) -> bool {
        self.constant
    }
    #[inline(always)]
    fn element_lanes(&self, x: &[f64; 4], d: &[Derived; 4]) -> (bool, ElementValue) {
        let [n, big_n, _, _] = *x;
        // `check_binomial_counts`.
        let counts = n >= 0.0 && n <= big_n && big_n >= 0.0;
        if !self.any {
            return (counts, ZERO);
        }
        let mut lp = 0.0;
        let mut g = [0.0; 4];
        if self.constant {
            lp += lchoose(big_n, n);
        }
        if self.alpha {
            // n log σ(α) + (N - n) log(1 - σ(α))
            let [log1p_exp_neg, log1p_exp_pos, p] = d[2];
            lp -= n * log1p_exp_neg + (big_n - n) * log1p_exp_pos;
            g[2] = n - big_n * p;
        }
        (counts, (lp, g))
    }
}

/// bernoulli(n | theta). θ derives `[log θ, log(1 − θ), _]`.
#[derive(Clone, Copy)]
pub struct Bernoulli {
    any: bool,
}

impl UnivariateKernel for Bernoulli {
    const FUNCTION: &'static str = "bernoulli_lpmf";
    const ARITY: usize = 2;
    #[inline]
    fn new(terms: Terms) -> Self {
        Bernoulli {
            any: terms.include(all(2)),
        }
    }
    #[inline]
    fn prepare(&self, k: usize, x: f64) -> Result<Derived, MathError> {
        let check = Check {
            function: Self::FUNCTION,
        };
        match k {
            0 => check_binary(check, x),
            _ => {
                check.bounded("Probability parameter", x, 0.0, 1.0)?;
                Ok(self.prepare_lanes(k, x).1)
            }
        }
    }
    #[inline]
    fn element(&self, x: &[f64; 4], d: &[Derived; 4]) -> Result<ElementValue, MathError> {
        Ok(self.element_lanes(x, d).1)
    }
    const LANES: bool = true;
    #[inline(always)]
    fn prepare_lanes(&self, k: usize, x: f64) -> (bool, Derived) {
        match k {
            0 => (is_binary(x), NONE),
            _ => {
                // Both logarithms (the variate picks one per element, in `element_lanes`).
                let derived = if self.any {
                    [vmath::ln(x), vmath::ln_1p(-x), 0.0] // log1m, inlined
                } else {
                    NONE
                };
                ((0.0..=1.0).contains(&x), derived)
            }
        }
    }
    #[inline(always)]
    fn element_lanes(&self, x: &[f64; 4], d: &[Derived; 4]) -> (bool, ElementValue) {
        if !self.any {
            return (true, ZERO);
        }
        let (n, theta) = (x[0], x[1]);
        let one = n == 1.0;
        let lp = if one { d[1][0] } else { d[1][1] };
        let g = if one {
            1.0 / theta
        } else {
            -1.0 / (1.0 - theta)
        };
        (true, (lp, [0.0, g, 0.0, 0.0]))
    }
}

/// bernoulli_logit(n | alpha).
#[derive(Clone, Copy)]
pub struct BernoulliLogit {
    any: bool,
}

impl UnivariateKernel for BernoulliLogit {
    const FUNCTION: &'static str = "bernoulli_logit_lpmf";
    const ARITY: usize = 2;
    #[inline]
    fn new(terms: Terms) -> Self {
        BernoulliLogit {
            any: terms.include(all(2)),
        }
    }
    #[inline]
    fn prepare(&self, k: usize, x: f64) -> Result<Derived, MathError> {
        let check = Check {
            function: Self::FUNCTION,
        };
        match k {
            0 => check_binary(check, x),
            _ => check
                .not_nan("Logit transformed probability parameter", x)
                .map(|_| NONE),
        }
    }
    #[inline]
    fn element(&self, x: &[f64; 4], d: &[Derived; 4]) -> Result<ElementValue, MathError> {
        Ok(self.element_lanes(x, d).1)
    }
    const LANES: bool = true;
    #[inline(always)]
    fn prepare_lanes(&self, k: usize, x: f64) -> (bool, Derived) {
        match k {
            0 => (is_binary(x), NONE),
            _ => (!x.is_nan(), NONE),
        }
    }
    #[inline(always)]
    fn element_lanes(&self, x: &[f64; 4], d: &[Derived; 4]) -> (bool, ElementValue) {
        let (passes, (lp, g), factor) = self.element_lanes_factored(x, d);
        (passes, (lp - vmath::ln(factor), g))
    }
    const LOG_FACTOR: bool = true;
    #[inline(always)]
    fn element_lanes_factored(&self, x: &[f64; 4], _d: &[Derived; 4]) -> (bool, ElementValue, f64) {
        if !self.any {
            return (true, ZERO, 1.0);
        }
        // log σ(s α) = −log1p_exp(−s α), with s = 2n − 1; its derivative s σ(−s α).
        // log1p_exp(−s α) = base + ln(d): the term is −base − ln(d).
        let s = 2.0 * x[0] - 1.0;
        let sa = s * x[1];
        let (base, factor, p) = vmath::log1p_exp_split_and_inv_logit(-sa);
        (true, (-base, [0.0, s * p, 0.0, 0.0]), factor)
    }
}

/// neg_binomial_2(n | mu, phi). μ derives `[log μ (if kept), _, _]`; φ derives nothing
/// (ψ(n + φ) − ψ(φ) is computed by `digamma_shift`, accurate when φ ≫ n).
#[derive(Clone, Copy)]
pub struct NegBinomial2 {
    any: bool,
    phi_only: bool,
    mu_only: bool,
}

impl UnivariateKernel for NegBinomial2 {
    const FUNCTION: &'static str = "neg_binomial_2_lpmf";
    const ARITY: usize = 3;
    #[inline]
    fn new(terms: Terms) -> Self {
        NegBinomial2 {
            any: terms.include(all(3)),
            phi_only: terms.include(bit(2)),
            mu_only: terms.include(bit(1)),
        }
    }
    #[inline]
    fn prepare(&self, k: usize, x: f64) -> Result<Derived, MathError> {
        let check = Check {
            function: Self::FUNCTION,
        };
        match k {
            0 => check_count(check, "Failures variable", x),
            1 => {
                check.positive_finite("Location parameter", x)?;
                Ok([if self.mu_only { vmath::ln(x) } else { 0.0 }, 0.0, 0.0])
            }
            _ => {
                check.positive_finite("Precision parameter", x)?;
                Ok(NONE)
            }
        }
    }
    #[inline]
    fn element(&self, x: &[f64; 4], d: &[Derived; 4]) -> Result<ElementValue, MathError> {
        if !self.any {
            return Ok(ZERO);
        }
        let [n, mu, phi, _] = *x;
        let mut lp = 0.0;
        let mut g = [0.0; 4];
        if self.phi_only {
            let (value, d_phi) = neg_binomial_2_phi_term(n, phi);
            lp += value;
            g[2] += d_phi;
        }
        if self.mu_only {
            lp += times_log(n, d[1][0]);
            g[1] += n / mu;
        }
        let log_mu_plus_phi = vmath::ln(mu + phi);
        let log1p_mu_over_phi = vmath::ln_1p(mu / phi);
        lp += -phi * log1p_mu_over_phi - n * log_mu_plus_phi;
        g[1] -= (n + phi) / (mu + phi);
        g[2] += -log1p_mu_over_phi + (mu - n) / (mu + phi);
        Ok((lp, g))
    }
}

/// neg_binomial_2_log(n | eta, phi). φ derives `[log φ, _, _]`.
#[derive(Clone, Copy)]
pub struct NegBinomial2Log {
    any: bool,
    phi_only: bool,
    eta_only: bool,
}

impl UnivariateKernel for NegBinomial2Log {
    const FUNCTION: &'static str = "neg_binomial_2_log_lpmf";
    const ARITY: usize = 3;
    #[inline]
    fn new(terms: Terms) -> Self {
        NegBinomial2Log {
            any: terms.include(all(3)),
            phi_only: terms.include(bit(2)),
            eta_only: terms.include(bit(1)),
        }
    }
    #[inline]
    fn prepare(&self, k: usize, x: f64) -> Result<Derived, MathError> {
        let check = Check {
            function: Self::FUNCTION,
        };
        match k {
            0 => {
                check_count(check, "Failures variable", x)?;
            }
            1 => check.finite("Log location parameter", x)?,
            _ => check.positive_finite("Precision parameter", x)?,
        };
        Ok(self.prepare_lanes(k, x).1)
    }
    #[inline]
    fn element(&self, x: &[f64; 4], d: &[Derived; 4]) -> Result<ElementValue, MathError> {
        Ok(self.element_lanes(x, d).1)
    }
    const LANES: bool = true;
    #[inline(always)]
    fn prepare_lanes(&self, k: usize, x: f64) -> (bool, Derived) {
        match k {
            0 => (is_count(x), NONE),
            1 => (x.is_finite(), NONE),
            _ => (x > 0.0 && x.is_finite(), [vmath::ln(x), 0.0, 0.0]),
        }
    }
    #[inline(always)]
    fn calls_per_element(&self) -> bool {
        self.phi_only
    }
    #[inline(always)]
    fn element_lanes(&self, x: &[f64; 4], d: &[Derived; 4]) -> (bool, ElementValue) {
        if !self.any {
            return (true, ZERO);
        }
        let [n, eta, phi, _] = *x;
        let [log_phi, _, _] = d[2];
        let u = eta - log_phi;
        let (log1p_exp_u, s) = vmath::log1p_exp_and_inv_logit(u);
        let mut lp = 0.0;
        let mut g = [0.0; 4];
        if self.phi_only {
            let (value, d_phi) = neg_binomial_2_phi_term(n, phi);
            lp += value;
            g[2] += d_phi;
        }
        if self.eta_only {
            lp += n * eta;
            g[1] += n;
        }
        lp += -phi * log1p_exp_u - n * (log_phi + log1p_exp_u);
        g[1] -= (n + phi) * s;
        g[2] += -log1p_exp_u + s * (1.0 + n / phi) - n / phi;
        (true, (lp, g))
    }
}
