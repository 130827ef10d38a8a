//! Univariate distributions: log densities / mass functions with their gradients, log cdfs and
//! log ccdfs, and random number generators, found by Stan's distribution name.
//!
//! # Lookup interface (stable)
//!
//! [`distribution`]`(name) -> Option<&'static Distribution>` with `name` the Stan family name
//! without suffix (`"normal"`, `"poisson_log"`, `"std_normal"`). A [`Distribution`] holds plain
//! function pointers:
//!
//! - `lpdf(args, terms, grad)`: `args[..arity]` are the variate followed by the parameters in
//!   Stan's order (`normal(y | mu, sigma)` → `[y, mu, sigma]`); integer arguments are passed as
//!   `f64` holding an integer. Returns the log density (or mass) keeping exactly the terms Stan
//!   keeps for `terms` (see [`Terms`]), and writes the partials of the returned value with respect
//!   to every argument into `grad[..arity]` (0 for integer arguments and for terms that were
//!   dropped). Argument checks mirror Stan Math's and fail with Stan's message, e.g.
//!   `normal_lpdf: Scale parameter is -1, but must be positive!`.
//! - `lcdf(args, grad)` / `lccdf(args, grad)`: log of the cdf / complementary cdf at the variate,
//!   with partials, where Stan has them.
//! - `rng(params, rng)`: one draw given the parameters only (`args[1..arity]`); integer-valued
//!   draws are returned as `f64`.
//!
//! No function allocates (errors aside), panics, or keeps state. Slices shorter than `arity`
//! give an error.
//!
//! The families the op graph evaluates in its vectorised loops (normal, gamma, poisson, …)
//! have their per-element rule in [`kernel`] (a `prepare` step per argument, so that a loop can
//! hoist the work on broadcast scalars, and an `element` step); their table entries are
//! [`kernel::lpdf_via`] over the same kernel, so each formula exists once.
//!
//! Vectorised Stan calls (`y ~ normal(mu, sigma)` with vector `y`) are loops over elements that
//! sum the values and accumulate the partials: Stan's `include_summand` depends only on which
//! arguments are parameters, never on sizes, so the per-element terms add up to Stan's result.
//!
//! ```
//! use hazel_math::dist::{distribution, Terms};
//! let normal = distribution("normal").unwrap();
//! let mut grad = [0.0; 3];
//! // `y ~ normal(mu, sigma)` with mu and sigma parameters (bits 1 and 2), y data:
//! let lp = (normal.lpdf)(&[0.3, -1.0, 2.0], Terms::propto(0b110), &mut grad).unwrap();
//! let z: f64 = (0.3 + 1.0) / 2.0;
//! assert!((lp - (-2f64.ln() - 0.5 * z * z)).abs() < 1e-15);
//! assert!((grad[1] - z / 2.0).abs() < 1e-15); // ∂/∂mu
//! let err = (normal.lpdf)(&[0.3, -1.0, -2.0], Terms::FULL, &mut grad).unwrap_err();
//! assert_eq!(err.message, "normal_lpdf: Scale parameter is -2, but must be positive!");
//! ```

pub(crate) mod cdf;
mod continuous;
mod discrete;
pub mod kernel;
pub mod mv_rng;
pub mod poisson_binomial;
mod rng;
pub mod wiener;

use hazel_rng::StreamRng;
use std::fmt;

/// Which terms of a log density to compute: Stan's `propto` with per-argument "is a parameter"
/// flags. A term is included iff `!propto` or it depends on at least one varying argument
/// (Stan Math's `include_summand`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Terms {
    /// Drop terms that do not depend on any varying argument (`~` statements, `_lupdf`).
    pub propto: bool,
    /// Bit i set = argument i (0 = the variate) is a parameter (an autodiff variable).
    pub varying: u32,
}

impl Terms {
    /// All terms (`target += normal_lpdf(...)`, and `lp` reported with constants).
    pub const FULL: Terms = Terms {
        propto: false,
        varying: u32::MAX,
    };

    /// `propto` with the given varying-argument mask.
    pub fn propto(varying: u32) -> Terms {
        Terms {
            propto: true,
            varying,
        }
    }

    /// Whether a term depending on the arguments in `mask` is included.
    #[inline]
    pub fn include(self, mask: u32) -> bool {
        !self.propto || (self.varying & mask) != 0
    }
}

/// Continuous (lpdf) or discrete (lpmf) variate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Real variate: `_lpdf`.
    Continuous,
    /// Integer variate: `_lpmf`; its partial is always 0.
    Discrete,
}

/// Log density / mass: `(args, terms, grad) -> value`.
pub type LpdfFn = fn(&[f64], Terms, &mut [f64]) -> Result<f64, MathError>;
/// Log cdf or log ccdf: `(args, grad) -> value`.
pub type CdfFn = fn(&[f64], &mut [f64]) -> Result<f64, MathError>;
/// Random draw: `(params, rng) -> draw`.
pub type RngFn = fn(&[f64], &mut StreamRng) -> Result<f64, MathError>;

/// One distribution family.
pub struct Distribution {
    /// Stan's family name, e.g. `"normal"`.
    pub name: &'static str,
    /// Continuous or discrete variate.
    pub kind: Kind,
    /// Number of arguments including the variate (normal: 3).
    pub arity: usize,
    /// Which arguments are integers (bit i = argument i), e.g. binomial's `n` and `N`.
    pub integer_args: u32,
    /// Log density / mass with partials.
    pub lpdf: LpdfFn,
    /// Log cdf with partials.
    pub lcdf: Option<CdfFn>,
    /// Log complementary cdf with partials.
    pub lccdf: Option<CdfFn>,
    /// Random number generator (parameters only).
    pub rng: Option<RngFn>,
}

/// The distribution family called `name` in Stan (without `_lpdf`/`_lpmf`/`_rng`), if hazel has
/// it.
pub fn distribution(name: &str) -> Option<&'static Distribution> {
    TABLE.iter().find(|d| d.name == name)
}

/// All distributions (for listings and tests that sweep the table).
pub fn distribution_table() -> &'static [Distribution] {
    TABLE
}

/// An argument error, phrased like Stan Math's (`"normal_lpdf: Scale parameter is -1, but must
/// be positive!"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MathError {
    /// The full message.
    pub message: String,
}

impl fmt::Display for MathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for MathError {}

impl MathError {
    /// An error with a free-form message.
    pub fn new(message: impl Into<String>) -> MathError {
        MathError {
            message: message.into(),
        }
    }
}

/// Formats a number the way C++ iostreams do by default (`%g`, 6 significant digits), as Stan's
/// messages show it: `-1`, `0.5`, `1e+20`, `inf`, `nan`.
pub fn format_stan_number(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let sci = format!("{:.5e}", x);
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if !(-5..6).contains(&exponent) {
        let mantissa = trim_zeros(mantissa);
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    } else {
        let decimals = (5 - exponent).max(0) as usize;
        trim_zeros(&format!("{:.*}", decimals, x)).to_string()
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

// ---------------------------------------------------------------------------------------------
// Argument checks, named and phrased as Stan Math's check_* functions.
// ---------------------------------------------------------------------------------------------

/// Whether `x` passes Stan's integer argument check. Within the range test, an integer is
/// exactly a value that rounding to an integer leaves alone; rounding is two IEEE additions
/// ([`crate::vmath::round_int`]), which vectorise, where the cast `x as i32` saturates lane by
/// lane in scalar code and `x.trunc()` is a libm call on baseline x86-64. This runs per
/// element in the graph's density loops.
#[inline(always)]
pub(crate) fn is_integer(x: f64) -> bool {
    x.abs() <= i32::MAX as f64 && crate::vmath::round_int(x) == x
}

/// Context for the checks of one call: the function name (`normal_lpdf`).
#[derive(Clone, Copy)]
pub(crate) struct Check {
    pub function: &'static str,
}

// The checks run per element inside the op graph's loops (through the kernels): the passing
// branch is inlined there, the message formatting is kept out of line.
impl Check {
    #[cold]
    #[inline(never)]
    fn fail(self, what: &str, x: f64, requirement: &str) -> MathError {
        MathError {
            message: format!(
                "{}: {} is {}, but must {}",
                self.function,
                what,
                format_stan_number(x),
                requirement
            ),
        }
    }

    #[inline]
    pub fn not_nan(self, what: &str, x: f64) -> Result<(), MathError> {
        if x.is_nan() {
            Err(self.fail(what, x, "not be nan!"))
        } else {
            Ok(())
        }
    }

    #[inline]
    pub fn finite(self, what: &str, x: f64) -> Result<(), MathError> {
        if x.is_finite() {
            Ok(())
        } else {
            Err(self.fail(what, x, "be finite!"))
        }
    }

    #[inline]
    pub fn positive(self, what: &str, x: f64) -> Result<(), MathError> {
        if x > 0.0 {
            Ok(())
        } else {
            Err(self.fail(what, x, "be positive!"))
        }
    }

    #[inline]
    pub fn positive_finite(self, what: &str, x: f64) -> Result<(), MathError> {
        if x > 0.0 && x.is_finite() {
            Ok(())
        } else {
            Err(self.fail(what, x, "be positive finite!"))
        }
    }

    #[inline]
    pub fn nonnegative(self, what: &str, x: f64) -> Result<(), MathError> {
        if x >= 0.0 {
            Ok(())
        } else {
            Err(self.fail(what, x, "be nonnegative!"))
        }
    }

    #[inline]
    pub fn bounded(self, what: &str, x: f64, lo: f64, hi: f64) -> Result<(), MathError> {
        if x >= lo && x <= hi {
            Ok(())
        } else {
            Err(self.fail_interval(what, x, lo, hi))
        }
    }

    #[cold]
    #[inline(never)]
    fn fail_interval(self, what: &str, x: f64, lo: f64, hi: f64) -> MathError {
        let requirement = format!(
            "be in the interval [{}, {}]",
            format_stan_number(lo),
            format_stan_number(hi)
        );
        self.fail(what, x, &requirement)
    }

    #[inline]
    pub fn greater(self, what: &str, x: f64, low: f64) -> Result<(), MathError> {
        if x > low {
            Ok(())
        } else {
            Err(self.fail_greater(what, x, low))
        }
    }

    #[cold]
    #[inline(never)]
    fn fail_greater(self, what: &str, x: f64, low: f64) -> MathError {
        let requirement = format!("be greater than {}", format_stan_number(low));
        self.fail(what, x, &requirement)
    }

    pub fn greater_or_equal(self, what: &str, x: f64, low: f64) -> Result<(), MathError> {
        if x >= low {
            Ok(())
        } else {
            let requirement = format!("be greater than or equal to {}", format_stan_number(low));
            Err(self.fail(what, x, &requirement))
        }
    }

    pub fn less(self, what: &str, x: f64, high: f64) -> Result<(), MathError> {
        if x < high {
            Ok(())
        } else {
            let requirement = format!("be less than {}", format_stan_number(high));
            Err(self.fail(what, x, &requirement))
        }
    }

    /// Integer-valued arguments arrive as f64; a fractional or out-of-range value (Stan's `int`
    /// is 32 bits) is a caller bug but must not panic.
    #[inline]
    pub fn integer(self, what: &str, x: f64) -> Result<(), MathError> {
        if is_integer(x) {
            Ok(())
        } else {
            Err(self.fail(what, x, "be an integer!"))
        }
    }

    /// The argument slices hold at least `N` values; returns them as an array.
    pub fn args<const N: usize>(self, args: &[f64], grad: &[f64]) -> Result<[f64; N], MathError> {
        if args.len() < N || grad.len() < N {
            return Err(MathError::new(format!(
                "{}: expected {} arguments and gradient slots, got {} and {}",
                self.function,
                N,
                args.len(),
                grad.len()
            )));
        }
        let mut out = [0.0; N];
        out.copy_from_slice(&args[..N]);
        Ok(out)
    }

    /// The parameter slice of an rng holds at least `N` values.
    pub fn params<const N: usize>(self, params: &[f64]) -> Result<[f64; N], MathError> {
        if params.len() < N {
            return Err(MathError::new(format!(
                "{}: expected {} parameters, got {}",
                self.function,
                N,
                params.len()
            )));
        }
        let mut out = [0.0; N];
        out.copy_from_slice(&params[..N]);
        Ok(out)
    }
}

/// Bit mask of argument `i`.
pub(crate) const fn bit(i: u32) -> u32 {
    1 << i
}

/// Mask of all arguments 0..n.
pub(crate) const fn all(n: u32) -> u32 {
    (1 << n) - 1
}

use continuous as c;
use discrete as d;

macro_rules! dist {
    ($name:literal, $kind:ident, $arity:literal, ints = $ints:expr, $lpdf:expr,
     lcdf = $lcdf:expr, lccdf = $lccdf:expr, rng = $rng:expr) => {
        Distribution {
            name: $name,
            kind: Kind::$kind,
            arity: $arity,
            integer_args: $ints,
            lpdf: $lpdf,
            lcdf: $lcdf,
            lccdf: $lccdf,
            rng: $rng,
        }
    };
}

static TABLE: &[Distribution] = &[
    dist!(
        "normal",
        Continuous,
        3,
        ints = 0,
        kernel::lpdf_via::<kernel::Normal>,
        lcdf = Some(cdf::normal_lcdf),
        lccdf = Some(cdf::normal_lccdf),
        rng = Some(rng::normal)
    ),
    dist!(
        "std_normal",
        Continuous,
        1,
        ints = 0,
        kernel::lpdf_via::<kernel::StdNormal>,
        lcdf = Some(cdf::std_normal_lcdf),
        lccdf = Some(cdf::std_normal_lccdf),
        rng = Some(rng::std_normal)
    ),
    dist!(
        "cauchy",
        Continuous,
        3,
        ints = 0,
        kernel::lpdf_via::<kernel::Cauchy>,
        lcdf = Some(cdf::cauchy_lcdf),
        lccdf = Some(cdf::cauchy_lccdf),
        rng = Some(rng::cauchy)
    ),
    dist!(
        "student_t",
        Continuous,
        4,
        ints = 0,
        kernel::lpdf_via::<kernel::StudentT>,
        lcdf = Some(cdf::student_t_lcdf),
        lccdf = Some(cdf::student_t_lccdf),
        rng = Some(rng::student_t)
    ),
    dist!(
        "lognormal",
        Continuous,
        3,
        ints = 0,
        kernel::lpdf_via::<kernel::Lognormal>,
        lcdf = Some(cdf::lognormal_lcdf),
        lccdf = Some(cdf::lognormal_lccdf),
        rng = Some(rng::lognormal)
    ),
    dist!(
        "exponential",
        Continuous,
        2,
        ints = 0,
        kernel::lpdf_via::<kernel::Exponential>,
        lcdf = Some(cdf::exponential_lcdf),
        lccdf = Some(cdf::exponential_lccdf),
        rng = Some(rng::exponential)
    ),
    dist!(
        "gamma",
        Continuous,
        3,
        ints = 0,
        kernel::lpdf_via::<kernel::Gamma>,
        lcdf = Some(cdf::gamma_lcdf),
        lccdf = Some(cdf::gamma_lccdf),
        rng = Some(rng::gamma)
    ),
    dist!(
        "inv_gamma",
        Continuous,
        3,
        ints = 0,
        kernel::lpdf_via::<kernel::InvGamma>,
        lcdf = Some(cdf::inv_gamma_lcdf),
        lccdf = Some(cdf::inv_gamma_lccdf),
        rng = Some(rng::inv_gamma)
    ),
    dist!(
        "beta",
        Continuous,
        3,
        ints = 0,
        kernel::lpdf_via::<kernel::Beta>,
        lcdf = Some(cdf::beta_lcdf),
        lccdf = Some(cdf::beta_lccdf),
        rng = Some(rng::beta)
    ),
    dist!(
        "beta_proportion",
        Continuous,
        3,
        ints = 0,
        c::beta_proportion,
        lcdf = Some(cdf::beta_proportion_lcdf),
        lccdf = Some(cdf::beta_proportion_lccdf),
        rng = Some(rng::beta_proportion)
    ),
    dist!(
        "uniform",
        Continuous,
        3,
        ints = 0,
        kernel::lpdf_via::<kernel::Uniform>,
        lcdf = Some(cdf::uniform_lcdf),
        lccdf = Some(cdf::uniform_lccdf),
        rng = Some(rng::uniform)
    ),
    dist!(
        "double_exponential",
        Continuous,
        3,
        ints = 0,
        kernel::lpdf_via::<kernel::DoubleExponential>,
        lcdf = Some(cdf::double_exponential_lcdf),
        lccdf = Some(cdf::double_exponential_lccdf),
        rng = Some(rng::double_exponential)
    ),
    dist!(
        "logistic",
        Continuous,
        3,
        ints = 0,
        kernel::lpdf_via::<kernel::Logistic>,
        lcdf = Some(cdf::logistic_lcdf),
        lccdf = Some(cdf::logistic_lccdf),
        rng = Some(rng::logistic)
    ),
    dist!(
        "weibull",
        Continuous,
        3,
        ints = 0,
        kernel::lpdf_via::<kernel::Weibull>,
        lcdf = Some(cdf::weibull_lcdf),
        lccdf = Some(cdf::weibull_lccdf),
        rng = Some(rng::weibull)
    ),
    dist!(
        "frechet",
        Continuous,
        3,
        ints = 0,
        c::frechet,
        lcdf = Some(cdf::frechet_lcdf),
        lccdf = Some(cdf::frechet_lccdf),
        rng = Some(rng::frechet)
    ),
    dist!(
        "gumbel",
        Continuous,
        3,
        ints = 0,
        c::gumbel,
        lcdf = Some(cdf::gumbel_lcdf),
        lccdf = Some(cdf::gumbel_lccdf),
        rng = Some(rng::gumbel)
    ),
    dist!(
        "rayleigh",
        Continuous,
        2,
        ints = 0,
        c::rayleigh,
        lcdf = Some(cdf::rayleigh_lcdf),
        lccdf = Some(cdf::rayleigh_lccdf),
        rng = Some(rng::rayleigh)
    ),
    dist!(
        "pareto",
        Continuous,
        3,
        ints = 0,
        c::pareto,
        lcdf = Some(cdf::pareto_lcdf),
        lccdf = Some(cdf::pareto_lccdf),
        rng = Some(rng::pareto)
    ),
    dist!(
        "pareto_type_2",
        Continuous,
        4,
        ints = 0,
        c::pareto_type_2,
        lcdf = Some(cdf::pareto_type_2_lcdf),
        lccdf = Some(cdf::pareto_type_2_lccdf),
        rng = Some(rng::pareto_type_2)
    ),
    dist!(
        "chi_square",
        Continuous,
        2,
        ints = 0,
        kernel::lpdf_via::<kernel::ChiSquare>,
        lcdf = Some(cdf::chi_square_lcdf),
        lccdf = Some(cdf::chi_square_lccdf),
        rng = Some(rng::chi_square)
    ),
    dist!(
        "inv_chi_square",
        Continuous,
        2,
        ints = 0,
        c::inv_chi_square,
        lcdf = Some(cdf::inv_chi_square_lcdf),
        lccdf = Some(cdf::inv_chi_square_lccdf),
        rng = Some(rng::inv_chi_square)
    ),
    dist!(
        "scaled_inv_chi_square",
        Continuous,
        3,
        ints = 0,
        c::scaled_inv_chi_square,
        lcdf = Some(cdf::scaled_inv_chi_square_lcdf),
        lccdf = Some(cdf::scaled_inv_chi_square_lccdf),
        rng = Some(rng::scaled_inv_chi_square)
    ),
    dist!(
        "skew_normal",
        Continuous,
        4,
        ints = 0,
        c::skew_normal,
        lcdf = Some(cdf::skew_normal_lcdf),
        lccdf = Some(cdf::skew_normal_lccdf),
        rng = Some(rng::skew_normal)
    ),
    dist!(
        "exp_mod_normal",
        Continuous,
        4,
        ints = 0,
        c::exp_mod_normal,
        lcdf = Some(cdf::exp_mod_normal_lcdf),
        lccdf = Some(cdf::exp_mod_normal_lccdf),
        rng = Some(rng::exp_mod_normal)
    ),
    dist!(
        "von_mises",
        Continuous,
        3,
        ints = 0,
        c::von_mises,
        lcdf = Some(cdf::von_mises_lcdf),
        lccdf = Some(cdf::von_mises_lccdf),
        rng = Some(rng::von_mises)
    ),
    dist!(
        "poisson",
        Discrete,
        2,
        ints = bit(0),
        kernel::lpdf_via::<kernel::Poisson>,
        lcdf = Some(cdf::poisson_lcdf),
        lccdf = Some(cdf::poisson_lccdf),
        rng = Some(rng::poisson)
    ),
    dist!(
        "poisson_log",
        Discrete,
        2,
        ints = bit(0),
        kernel::lpdf_via::<kernel::PoissonLog>,
        lcdf = None,
        lccdf = None,
        rng = Some(rng::poisson_log)
    ),
    dist!(
        "binomial",
        Discrete,
        3,
        ints = bit(0) | bit(1),
        kernel::lpdf_via::<kernel::Binomial>,
        lcdf = Some(cdf::binomial_lcdf),
        lccdf = Some(cdf::binomial_lccdf),
        rng = Some(rng::binomial)
    ),
    dist!(
        "binomial_logit",
        Discrete,
        3,
        ints = bit(0) | bit(1),
        kernel::lpdf_via::<kernel::BinomialLogit>,
        lcdf = None,
        lccdf = None,
        rng = Some(rng::binomial_logit)
    ),
    dist!(
        "bernoulli",
        Discrete,
        2,
        ints = bit(0),
        kernel::lpdf_via::<kernel::Bernoulli>,
        lcdf = Some(cdf::bernoulli_lcdf),
        lccdf = Some(cdf::bernoulli_lccdf),
        rng = Some(rng::bernoulli)
    ),
    dist!(
        "bernoulli_logit",
        Discrete,
        2,
        ints = bit(0),
        kernel::lpdf_via::<kernel::BernoulliLogit>,
        lcdf = None,
        lccdf = None,
        rng = Some(rng::bernoulli_logit)
    ),
    dist!(
        "neg_binomial",
        Discrete,
        3,
        ints = bit(0),
        d::neg_binomial,
        lcdf = Some(cdf::neg_binomial_lcdf),
        lccdf = Some(cdf::neg_binomial_lccdf),
        rng = Some(rng::neg_binomial)
    ),
    dist!(
        "neg_binomial_2",
        Discrete,
        3,
        ints = bit(0),
        kernel::lpdf_via::<kernel::NegBinomial2>,
        lcdf = Some(cdf::neg_binomial_2_lcdf),
        lccdf = Some(cdf::neg_binomial_2_lccdf),
        rng = Some(rng::neg_binomial_2)
    ),
    dist!(
        "neg_binomial_2_log",
        Discrete,
        3,
        ints = bit(0),
        kernel::lpdf_via::<kernel::NegBinomial2Log>,
        lcdf = None,
        lccdf = None,
        rng = Some(rng::neg_binomial_2_log)
    ),
    dist!(
        "beta_neg_binomial",
        Discrete,
        4,
        ints = bit(0),
        d::beta_neg_binomial,
        lcdf = Some(cdf::beta_neg_binomial_lcdf),
        lccdf = Some(cdf::beta_neg_binomial_lccdf),
        rng = Some(rng::beta_neg_binomial)
    ),
    dist!(
        "skew_double_exponential",
        Continuous,
        4,
        ints = 0,
        c::skew_double_exponential,
        lcdf = Some(cdf::skew_double_exponential_lcdf),
        lccdf = Some(cdf::skew_double_exponential_lccdf),
        rng = Some(rng::skew_double_exponential)
    ),
    dist!(
        "loglogistic",
        Continuous,
        3,
        ints = 0,
        c::loglogistic,
        lcdf = Some(cdf::loglogistic_lcdf),
        lccdf = None,
        rng = Some(rng::loglogistic)
    ),
    dist!(
        "beta_binomial",
        Discrete,
        4,
        ints = bit(0) | bit(1),
        d::beta_binomial,
        lcdf = Some(cdf::beta_binomial_lcdf),
        lccdf = Some(cdf::beta_binomial_lccdf),
        rng = Some(rng::beta_binomial)
    ),
    dist!(
        "discrete_range",
        Discrete,
        3,
        ints = bit(0) | bit(1) | bit(2),
        d::discrete_range,
        lcdf = Some(cdf::discrete_range_lcdf),
        lccdf = Some(cdf::discrete_range_lccdf),
        rng = Some(rng::discrete_range)
    ),
    dist!(
        "hypergeometric",
        Discrete,
        4,
        ints = bit(0) | bit(1) | bit(2) | bit(3),
        d::hypergeometric,
        lcdf = None,
        lccdf = None,
        rng = Some(rng::hypergeometric)
    ),
];

#[cfg(test)]
mod tests {
    /// The rounding form of the integer check agrees with the cast it replaced, on the
    /// values where the two could part: halves, the edges of i32, signed zeros, the
    /// neighbours of integers, and non-finite values.
    #[test]
    fn is_integer_agrees_with_the_cast() {
        let by_cast = |x: f64| x.abs() <= i32::MAX as f64 && (x as i32) as f64 == x;
        let edge = i32::MAX as f64;
        let mut xs = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.5,
            -2.5,
            edge,
            -edge,
            edge + 1.0,
            -edge - 1.0,
            edge - 0.5,
            1e300,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
            4_503_599_627_370_496.0,
        ];
        for k in [-3.0f64, -1.0, 1.0, 2.0, 1e6, 2_147_483_000.0] {
            xs.extend([k, k.next_up(), k.next_down()]);
        }
        for x in xs {
            assert_eq!(super::is_integer(x), by_cast(x), "{x:e}");
        }
    }
}
