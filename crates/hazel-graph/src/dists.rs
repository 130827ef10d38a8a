//! Vectorised univariate log densities: value rule (with Stan's rule for dropping constant
//! terms) and gradient rule (partials for every argument) side by side, one function per
//! distribution evaluated per element inside one loop per op.
//!
//! Dropping terms (`~` and `_lupdf`): a summand is kept when the density is not
//! proportional (`propto == false`) or when it depends on an argument that varies (a
//! parameter-dependent argument); this is Stan's `include_summand`. Partials are only used
//! for varying arguments, and every summand a varying argument appears in is kept, so the
//! partials are always those of the full density.
//!
//! TO BE REPLACED (value formulas) by `hazel_math::dist` where its vectorised interface fits;
//! kept here meanwhile because the per-element inner loop must inline.

use crate::kernels::CHUNK;
use crate::special::{digamma, lgamma};
use crate::tape::{read, Arg};
use hazel_density::EvalError;

const LOG_SQRT_TWO_PI: f64 = 0.918_938_533_204_672_8;
const LOG_PI: f64 = 1.144_729_885_849_400_2;
const LN_2: f64 = std::f64::consts::LN_2;

/// Which summands to keep: `all` (not proportional) or any argument in the summand's mask
/// varies.
#[derive(Debug, Clone, Copy)]
pub struct Inc {
    pub all: bool,
    pub varying: u8,
}

impl Inc {
    #[inline(always)]
    fn t(&self, mask: u8) -> bool {
        self.all || (self.varying & mask) != 0
    }
}

type Res = Result<(f64, [f64; 4]), &'static str>;

/// What a table distribution op computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Lpdf,
    Lcdf,
    Lccdf,
}

/// A distribution of `hazel_math::dist`'s table (evaluated through its function pointers).
#[derive(Clone, Copy)]
pub struct TableDist {
    pub dist: &'static hazel_math::dist::Distribution,
    pub mode: Mode,
}

impl std::fmt::Debug for TableDist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{:?}", self.dist.name, self.mode)
    }
}

impl PartialEq for TableDist {
    fn eq(&self, other: &Self) -> bool {
        self.dist.name == other.dist.name && self.mode == other.mode
    }
}
impl Eq for TableDist {}

/// The univariate distributions with vectorised kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DistKind {
    Normal,
    StdNormal,
    Cauchy,
    StudentT,
    Lognormal,
    Exponential,
    Gamma,
    InvGamma,
    Beta,
    Uniform,
    DoubleExponential,
    Logistic,
    Weibull,
    ChiSquare,
    Poisson,
    PoissonLog,
    Bernoulli,
    BernoulliLogit,
    Binomial,
    BinomialLogit,
    NegBinomial2,
    NegBinomial2Log,
    /// Any other distribution (or a cdf) from `hazel_math::dist`.
    Table(TableDist),
}

impl DistKind {
    pub fn from_name(name: &str) -> Option<DistKind> {
        use DistKind::*;
        Some(match name {
            "normal" => Normal,
            "std_normal" => StdNormal,
            "cauchy" => Cauchy,
            "student_t" => StudentT,
            "lognormal" => Lognormal,
            "exponential" => Exponential,
            "gamma" => Gamma,
            "inv_gamma" => InvGamma,
            "beta" => Beta,
            "uniform" => Uniform,
            "double_exponential" => DoubleExponential,
            "logistic" => Logistic,
            "weibull" => Weibull,
            "chi_square" => ChiSquare,
            "poisson" => Poisson,
            "poisson_log" => PoissonLog,
            "bernoulli" => Bernoulli,
            "bernoulli_logit" => BernoulliLogit,
            "binomial" => Binomial,
            "binomial_logit" => BinomialLogit,
            "neg_binomial_2" => NegBinomial2,
            "neg_binomial_2_log" => NegBinomial2Log,
            _ => return None,
        })
    }

    /// A distribution by Stan family name: the inlined kernels first, then hazel_math's table.
    pub fn lookup(name: &str) -> Option<DistKind> {
        DistKind::from_name(name).or_else(|| {
            hazel_math::dist::distribution(name).map(|d| {
                DistKind::Table(TableDist {
                    dist: d,
                    mode: Mode::Lpdf,
                })
            })
        })
    }

    /// The log cdf (`ccdf = false`) or log ccdf of a family.
    pub fn cdf(name: &str, ccdf: bool) -> Option<DistKind> {
        let d = hazel_math::dist::distribution(name)?;
        let ok = if ccdf {
            d.lccdf.is_some()
        } else {
            d.lcdf.is_some()
        };
        ok.then_some(DistKind::Table(TableDist {
            dist: d,
            mode: if ccdf { Mode::Lccdf } else { Mode::Lcdf },
        }))
    }

    pub fn name(self) -> &'static str {
        use DistKind::*;
        match self {
            Table(t) => t.dist.name,
            Normal => "normal",
            StdNormal => "std_normal",
            Cauchy => "cauchy",
            StudentT => "student_t",
            Lognormal => "lognormal",
            Exponential => "exponential",
            Gamma => "gamma",
            InvGamma => "inv_gamma",
            Beta => "beta",
            Uniform => "uniform",
            DoubleExponential => "double_exponential",
            Logistic => "logistic",
            Weibull => "weibull",
            ChiSquare => "chi_square",
            Poisson => "poisson",
            PoissonLog => "poisson_log",
            Bernoulli => "bernoulli",
            BernoulliLogit => "bernoulli_logit",
            Binomial => "binomial",
            BinomialLogit => "binomial_logit",
            NegBinomial2 => "neg_binomial_2",
            NegBinomial2Log => "neg_binomial_2_log",
        }
    }

    /// Number of arguments including the variate.
    pub fn nargs(self) -> usize {
        use DistKind::*;
        match self {
            Table(t) => t.dist.arity,
            StdNormal => 1,
            Exponential | ChiSquare | Poisson | PoissonLog | Bernoulli | BernoulliLogit => 2,
            StudentT | Binomial | BinomialLogit | Normal | Cauchy | Lognormal | Gamma
            | InvGamma | Beta | Uniform | DoubleExponential | Logistic | Weibull | NegBinomial2
            | NegBinomial2Log => {
                if matches!(self, StudentT) {
                    4
                } else {
                    3
                }
            }
        }
    }

    /// Whether the variate is an integer (a `_lpmf`).
    pub fn discrete(self) -> bool {
        use DistKind::*;
        if let Table(t) = self {
            return t.dist.kind == hazel_math::dist::Kind::Discrete;
        }
        matches!(
            self,
            Poisson
                | PoissonLog
                | Bernoulli
                | BernoulliLogit
                | Binomial
                | BinomialLogit
                | NegBinomial2
                | NegBinomial2Log
        )
    }

    /// Log density of one element: value (with dropped summands per `inc`) and partials.
    #[inline(always)]
    pub fn elem(
        self,
        x: &[f64; 4],
        inc: &Inc,
    ) -> Result<(f64, [f64; 4]), std::borrow::Cow<'static, str>> {
        use std::borrow::Cow;
        use DistKind::*;
        let r = match self {
            Table(t) => {
                let n = t.dist.arity;
                let mut g = [0.0; 4];
                let v = match t.mode {
                    Mode::Lpdf => (t.dist.lpdf)(
                        &x[..n],
                        hazel_math::dist::Terms {
                            propto: !inc.all,
                            varying: inc.varying as u32,
                        },
                        &mut g[..n],
                    ),
                    Mode::Lcdf => (t.dist.lcdf.expect("checked at lookup"))(&x[..n], &mut g[..n]),
                    Mode::Lccdf => (t.dist.lccdf.expect("checked at lookup"))(&x[..n], &mut g[..n]),
                };
                return v.map(|v| (v, g)).map_err(|e| Cow::Owned(e.message));
            }
            Normal => normal(x, inc),
            StdNormal => std_normal(x, inc),
            Cauchy => cauchy(x, inc),
            StudentT => student_t(x, inc),
            Lognormal => lognormal(x, inc),
            Exponential => exponential(x, inc),
            Gamma => gamma(x, inc),
            InvGamma => inv_gamma(x, inc),
            Beta => beta(x, inc),
            Uniform => uniform(x, inc),
            DoubleExponential => double_exponential(x, inc),
            Logistic => logistic(x, inc),
            Weibull => weibull(x, inc),
            ChiSquare => chi_square(x, inc),
            Poisson => poisson(x, inc),
            PoissonLog => poisson_log(x, inc),
            Bernoulli => bernoulli(x, inc),
            BernoulliLogit => bernoulli_logit(x, inc),
            Binomial => binomial(x, inc),
            BinomialLogit => binomial_logit(x, inc),
            NegBinomial2 => neg_binomial_2(x, inc),
            NegBinomial2Log => neg_binomial_2_log(x, inc),
        };
        r.map_err(Cow::Borrowed)
    }
}

// Argument masks: bit k is argument k (0 = the variate).
const A0: u8 = 1;
const A1: u8 = 2;
const A2: u8 = 4;
const A3: u8 = 8;

#[inline(always)]
fn check_finite(v: f64, what: &'static str) -> Result<(), &'static str> {
    if v.is_finite() {
        Ok(())
    } else {
        Err(what)
    }
}

#[inline(always)]
fn check_pos(v: f64, what: &'static str) -> Result<(), &'static str> {
    if v > 0.0 && v.is_finite() {
        Ok(())
    } else {
        Err(what)
    }
}

#[inline(always)]
fn normal(x: &[f64; 4], inc: &Inc) -> Res {
    let (y, mu, sigma) = (x[0], x[1], x[2]);
    if y.is_nan() {
        return Err("Random variable is nan");
    }
    check_finite(mu, "Location parameter must be finite")?;
    check_pos(sigma, "Scale parameter must be positive finite")?;
    let inv_s = 1.0 / sigma;
    let z = (y - mu) * inv_s;
    let mut lp = 0.0;
    if inc.t(0) {
        lp -= LOG_SQRT_TWO_PI;
    }
    if inc.t(A2) {
        lp -= sigma.ln();
    }
    if inc.t(A0 | A1 | A2) {
        lp -= 0.5 * z * z;
    }
    let dy = -z * inv_s;
    Ok((lp, [dy, -dy, (z * z - 1.0) * inv_s, 0.0]))
}

#[inline(always)]
fn std_normal(x: &[f64; 4], inc: &Inc) -> Res {
    let y = x[0];
    if y.is_nan() {
        return Err("Random variable is nan");
    }
    let mut lp = 0.0;
    if inc.t(0) {
        lp -= LOG_SQRT_TWO_PI;
    }
    if inc.t(A0) {
        lp -= 0.5 * y * y;
    }
    Ok((lp, [-y, 0.0, 0.0, 0.0]))
}

#[inline(always)]
fn cauchy(x: &[f64; 4], inc: &Inc) -> Res {
    let (y, mu, sigma) = (x[0], x[1], x[2]);
    if y.is_nan() {
        return Err("Random variable is nan");
    }
    check_finite(mu, "Location parameter must be finite")?;
    check_pos(sigma, "Scale parameter must be positive finite")?;
    let d = y - mu;
    let s2 = sigma * sigma;
    let denom = s2 + d * d;
    let mut lp = 0.0;
    if inc.t(0) {
        lp -= LOG_PI;
    }
    if inc.t(A2) {
        lp -= sigma.ln();
    }
    if inc.t(A0 | A1 | A2) {
        lp -= (d * d / s2).ln_1p();
    }
    let dy = -2.0 * d / denom;
    let ds = (d * d - s2) / (sigma * denom);
    Ok((lp, [dy, -dy, ds, 0.0]))
}

#[inline(always)]
fn student_t(x: &[f64; 4], inc: &Inc) -> Res {
    let (y, nu, mu, sigma) = (x[0], x[1], x[2], x[3]);
    if y.is_nan() {
        return Err("Random variable is nan");
    }
    check_pos(nu, "Degrees of freedom parameter must be positive finite")?;
    check_finite(mu, "Location parameter must be finite")?;
    check_pos(sigma, "Scale parameter must be positive finite")?;
    let d = (y - mu) / sigma;
    let q = d * d / nu;
    let l1 = q.ln_1p();
    let mut lp = 0.0;
    if inc.t(A1) {
        lp += lgamma(0.5 * (nu + 1.0)) - lgamma(0.5 * nu) - 0.5 * nu.ln();
    }
    if inc.t(0) {
        lp -= 0.5 * LOG_PI;
    }
    if inc.t(A3) {
        lp -= sigma.ln();
    }
    if inc.t(A0 | A1 | A2 | A3) {
        lp -= 0.5 * (nu + 1.0) * l1;
    }
    // ∂/∂y = −(ν+1) d / (σ ν (1+q))
    let dy = -(nu + 1.0) * d / (sigma * nu * (1.0 + q));
    let dnu = 0.5 * (digamma(0.5 * (nu + 1.0)) - digamma(0.5 * nu)) - 0.5 / nu - 0.5 * l1
        + 0.5 * (nu + 1.0) * q / (nu * (1.0 + q));
    let dsigma = -1.0 / sigma + (nu + 1.0) * q / (sigma * (1.0 + q));
    Ok((lp, [dy, dnu, -dy, dsigma]))
}

#[inline(always)]
fn lognormal(x: &[f64; 4], inc: &Inc) -> Res {
    let (y, mu, sigma) = (x[0], x[1], x[2]);
    if y.is_nan() || y < 0.0 {
        return Err("Random variable must be nonnegative");
    }
    check_finite(mu, "Location parameter must be finite")?;
    check_pos(sigma, "Scale parameter must be positive finite")?;
    if y == 0.0 {
        return Ok((f64::NEG_INFINITY, [0.0; 4]));
    }
    let ly = y.ln();
    let z = (ly - mu) / sigma;
    let mut lp = 0.0;
    // Stan Math keeps −log √(2π) in lognormal_lpdf even under propto (unlike normal_lpdf).
    if inc.t(A0 | A1 | A2) {
        lp -= LOG_SQRT_TWO_PI;
    }
    if inc.t(A2) {
        lp -= sigma.ln();
    }
    if inc.t(A0) {
        lp -= ly;
    }
    if inc.t(A0 | A1 | A2) {
        lp -= 0.5 * z * z;
    }
    let dmu = z / sigma;
    Ok((lp, [-(1.0 + dmu) / y, dmu, (z * z - 1.0) / sigma, 0.0]))
}

#[inline(always)]
fn exponential(x: &[f64; 4], inc: &Inc) -> Res {
    let (y, beta) = (x[0], x[1]);
    if y.is_nan() || y < 0.0 {
        return Err("Random variable must be nonnegative");
    }
    check_pos(beta, "Inverse scale parameter must be positive finite")?;
    let mut lp = 0.0;
    if inc.t(A1) {
        lp += beta.ln();
    }
    if inc.t(A0 | A1) {
        lp -= beta * y;
    }
    Ok((lp, [-beta, 1.0 / beta - y, 0.0, 0.0]))
}

#[inline(always)]
fn gamma(x: &[f64; 4], inc: &Inc) -> Res {
    let (y, a, b) = (x[0], x[1], x[2]);
    if y.is_nan() || y < 0.0 {
        return Err("Random variable must be nonnegative");
    }
    check_pos(a, "Shape parameter must be positive finite")?;
    check_pos(b, "Inverse scale parameter must be positive finite")?;
    let ly = y.ln();
    let mut lp = 0.0;
    if inc.t(A1) {
        lp -= lgamma(a);
    }
    if inc.t(A1 | A2) {
        lp += a * b.ln();
    }
    if inc.t(A0 | A1) {
        lp += (a - 1.0) * ly;
    }
    if inc.t(A0 | A2) {
        lp -= b * y;
    }
    Ok((
        lp,
        [(a - 1.0) / y - b, -digamma(a) + b.ln() + ly, a / b - y, 0.0],
    ))
}

#[inline(always)]
fn inv_gamma(x: &[f64; 4], inc: &Inc) -> Res {
    let (y, a, b) = (x[0], x[1], x[2]);
    if y.is_nan() || y < 0.0 {
        return Err("Random variable must be nonnegative");
    }
    check_pos(a, "Shape parameter must be positive finite")?;
    check_pos(b, "Scale parameter must be positive finite")?;
    if y == 0.0 {
        return Ok((f64::NEG_INFINITY, [0.0; 4]));
    }
    let ly = y.ln();
    let mut lp = 0.0;
    if inc.t(A1) {
        lp -= lgamma(a);
    }
    if inc.t(A1 | A2) {
        lp += a * b.ln();
    }
    if inc.t(A0 | A1) {
        lp -= (a + 1.0) * ly;
    }
    if inc.t(A0 | A2) {
        lp -= b / y;
    }
    Ok((
        lp,
        [
            -(a + 1.0) / y + b / (y * y),
            -digamma(a) + b.ln() - ly,
            a / b - 1.0 / y,
            0.0,
        ],
    ))
}

#[inline(always)]
fn beta(x: &[f64; 4], inc: &Inc) -> Res {
    let (y, a, b) = (x[0], x[1], x[2]);
    if !(0.0..=1.0).contains(&y) {
        return Err("Random variable must be in [0, 1]");
    }
    check_pos(a, "First shape parameter must be positive finite")?;
    check_pos(b, "Second shape parameter must be positive finite")?;
    let ly = y.ln();
    let l1y = (-y).ln_1p();
    let mut lp = 0.0;
    if inc.t(A1) {
        lp -= lgamma(a);
    }
    if inc.t(A2) {
        lp -= lgamma(b);
    }
    if inc.t(A1 | A2) {
        lp += lgamma(a + b);
    }
    if inc.t(A0 | A1) {
        lp += (a - 1.0) * ly;
    }
    if inc.t(A0 | A2) {
        lp += (b - 1.0) * l1y;
    }
    let dab = digamma(a + b);
    Ok((
        lp,
        [
            (a - 1.0) / y - (b - 1.0) / (1.0 - y),
            ly + dab - digamma(a),
            l1y + dab - digamma(b),
            0.0,
        ],
    ))
}

#[inline(always)]
fn uniform(x: &[f64; 4], inc: &Inc) -> Res {
    let (y, a, b) = (x[0], x[1], x[2]);
    if y.is_nan() {
        return Err("Random variable is nan");
    }
    check_finite(a, "Lower bound parameter must be finite")?;
    check_finite(b, "Upper bound parameter must be finite")?;
    if b <= a {
        return Err("Upper bound parameter must be greater than the lower bound");
    }
    if y < a || y > b {
        return Ok((f64::NEG_INFINITY, [0.0; 4]));
    }
    let mut lp = 0.0;
    if inc.t(A1 | A2) {
        lp -= (b - a).ln();
    }
    let inv = 1.0 / (b - a);
    Ok((lp, [0.0, inv, -inv, 0.0]))
}

#[inline(always)]
fn double_exponential(x: &[f64; 4], inc: &Inc) -> Res {
    let (y, mu, sigma) = (x[0], x[1], x[2]);
    if y.is_nan() {
        return Err("Random variable is nan");
    }
    check_finite(mu, "Location parameter must be finite")?;
    check_pos(sigma, "Scale parameter must be positive finite")?;
    let d = y - mu;
    let mut lp = 0.0;
    if inc.t(0) {
        lp -= LN_2;
    }
    if inc.t(A2) {
        lp -= sigma.ln();
    }
    if inc.t(A0 | A1 | A2) {
        lp -= d.abs() / sigma;
    }
    let sgn = if d > 0.0 {
        1.0
    } else if d < 0.0 {
        -1.0
    } else {
        0.0
    };
    Ok((
        lp,
        [
            -sgn / sigma,
            sgn / sigma,
            -1.0 / sigma + d.abs() / (sigma * sigma),
            0.0,
        ],
    ))
}

#[inline(always)]
fn logistic(x: &[f64; 4], inc: &Inc) -> Res {
    let (y, mu, sigma) = (x[0], x[1], x[2]);
    if y.is_nan() {
        return Err("Random variable is nan");
    }
    check_finite(mu, "Location parameter must be finite")?;
    check_pos(sigma, "Scale parameter must be positive finite")?;
    let z = (y - mu) / sigma;
    let mut lp = 0.0;
    if inc.t(A0 | A1 | A2) {
        // −z − 2 log(1 + e^{−z})
        let l = if -z > 0.0 {
            -z + z.exp().ln_1p()
        } else {
            (-z).exp().ln_1p()
        };
        lp -= z + 2.0 * l;
    }
    if inc.t(A2) {
        lp -= sigma.ln();
    }
    // d/dz = −1 + 2 σ(−z) = −tanh(z/2)
    let dz = -(0.5 * z).tanh();
    Ok((
        lp,
        [dz / sigma, -dz / sigma, -dz * z / sigma - 1.0 / sigma, 0.0],
    ))
}

#[inline(always)]
fn weibull(x: &[f64; 4], inc: &Inc) -> Res {
    let (y, alpha, sigma) = (x[0], x[1], x[2]);
    if y.is_nan() || y < 0.0 {
        return Err("Random variable must be nonnegative");
    }
    check_pos(alpha, "Shape parameter must be positive finite")?;
    check_pos(sigma, "Scale parameter must be positive finite")?;
    let ly = y.ln();
    let ls = sigma.ln();
    let pw = (y / sigma).powf(alpha);
    let mut lp = 0.0;
    if inc.t(A1) {
        lp += alpha.ln();
    }
    if inc.t(A0 | A1) {
        lp += (alpha - 1.0) * ly;
    }
    if inc.t(A1 | A2) {
        lp -= alpha * ls;
    }
    if inc.t(A0 | A1 | A2) {
        lp -= pw;
    }
    Ok((
        lp,
        [
            (alpha - 1.0) / y - alpha * pw / y,
            1.0 / alpha + ly - ls - pw * (ly - ls),
            -alpha / sigma + alpha * pw / sigma,
            0.0,
        ],
    ))
}

#[inline(always)]
fn chi_square(x: &[f64; 4], inc: &Inc) -> Res {
    let (y, nu) = (x[0], x[1]);
    if y.is_nan() || y < 0.0 {
        return Err("Random variable must be nonnegative");
    }
    check_pos(nu, "Degrees of freedom parameter must be positive finite")?;
    let ly = y.ln();
    let h = 0.5 * nu;
    let mut lp = 0.0;
    if inc.t(A1) {
        lp -= h * LN_2 + lgamma(h);
    }
    if inc.t(A0 | A1) {
        lp += (h - 1.0) * ly;
    }
    if inc.t(A0) {
        lp -= 0.5 * y;
    }
    Ok((
        lp,
        [
            (h - 1.0) / y - 0.5,
            -0.5 * LN_2 - 0.5 * digamma(h) + 0.5 * ly,
            0.0,
            0.0,
        ],
    ))
}

#[inline(always)]
fn check_count(n: f64) -> Result<(), &'static str> {
    if n >= 0.0 {
        Ok(())
    } else {
        Err("Random variable must be nonnegative")
    }
}

#[inline(always)]
fn poisson(x: &[f64; 4], inc: &Inc) -> Res {
    let (n, lambda) = (x[0], x[1]);
    check_count(n)?;
    if lambda.is_nan() || lambda < 0.0 {
        return Err("Rate parameter must be nonnegative");
    }
    if lambda.is_infinite() {
        return Ok((f64::NEG_INFINITY, [0.0; 4]));
    }
    let mut lp = 0.0;
    if inc.t(0) {
        lp -= lgamma(n + 1.0);
    }
    if inc.t(A1) {
        if lambda == 0.0 {
            if n != 0.0 {
                return Ok((f64::NEG_INFINITY, [0.0; 4]));
            }
        } else {
            lp += n * lambda.ln() - lambda;
        }
    }
    Ok((lp, [0.0, n / lambda - 1.0, 0.0, 0.0]))
}

#[inline(always)]
fn poisson_log(x: &[f64; 4], inc: &Inc) -> Res {
    let (n, alpha) = (x[0], x[1]);
    check_count(n)?;
    if alpha.is_nan() {
        return Err("Log rate parameter is nan");
    }
    if alpha == f64::INFINITY {
        return Ok((f64::NEG_INFINITY, [0.0; 4]));
    }
    if alpha == f64::NEG_INFINITY && n != 0.0 {
        return Ok((f64::NEG_INFINITY, [0.0; 4]));
    }
    let ea = alpha.exp();
    let mut lp = 0.0;
    if inc.t(0) {
        lp -= lgamma(n + 1.0);
    }
    if inc.t(A1) && !(alpha == f64::NEG_INFINITY && n == 0.0) {
        lp += n * alpha - ea;
    }
    Ok((lp, [0.0, n - ea, 0.0, 0.0]))
}

#[inline(always)]
fn bernoulli(x: &[f64; 4], inc: &Inc) -> Res {
    let (n, theta) = (x[0], x[1]);
    if n != 0.0 && n != 1.0 {
        return Err("n must be 0 or 1");
    }
    if !(0.0..=1.0).contains(&theta) {
        return Err("Probability parameter must be in [0, 1]");
    }
    let mut lp = 0.0;
    if inc.t(A1) {
        lp += if n == 1.0 {
            theta.ln()
        } else {
            (-theta).ln_1p()
        };
    }
    let d = if n == 1.0 {
        1.0 / theta
    } else {
        -1.0 / (1.0 - theta)
    };
    Ok((lp, [0.0, d, 0.0, 0.0]))
}

#[inline(always)]
fn log_inv_logit(a: f64) -> f64 {
    if a < 0.0 {
        a - a.exp().ln_1p()
    } else {
        -(-a).exp().ln_1p()
    }
}

#[inline(always)]
fn inv_logit(a: f64) -> f64 {
    if a >= 0.0 {
        1.0 / (1.0 + (-a).exp())
    } else {
        let e = a.exp();
        e / (1.0 + e)
    }
}

#[inline(always)]
fn bernoulli_logit(x: &[f64; 4], inc: &Inc) -> Res {
    let (n, alpha) = (x[0], x[1]);
    if n != 0.0 && n != 1.0 {
        return Err("n must be 0 or 1");
    }
    if alpha.is_nan() {
        return Err("Logit transformed probability parameter is nan");
    }
    let s = 2.0 * n - 1.0;
    let mut lp = 0.0;
    if inc.t(A1) {
        lp += log_inv_logit(s * alpha);
    }
    Ok((lp, [0.0, s * inv_logit(-s * alpha), 0.0, 0.0]))
}

#[inline(always)]
fn binomial(x: &[f64; 4], inc: &Inc) -> Res {
    let (n, big_n, theta) = (x[0], x[1], x[2]);
    if n < 0.0 || big_n < 0.0 || n > big_n {
        return Err("Successes variable must be in [0, N]");
    }
    if !(0.0..=1.0).contains(&theta) {
        return Err("Probability parameter must be in [0, 1]");
    }
    let mut lp = 0.0;
    if inc.t(0) {
        lp += crate::special::lchoose(big_n, n);
    }
    if inc.t(A2) {
        if n > 0.0 {
            lp += n * theta.ln();
        }
        if big_n - n > 0.0 {
            lp += (big_n - n) * (-theta).ln_1p();
        }
    }
    Ok((lp, [0.0, 0.0, n / theta - (big_n - n) / (1.0 - theta), 0.0]))
}

#[inline(always)]
fn binomial_logit(x: &[f64; 4], inc: &Inc) -> Res {
    let (n, big_n, alpha) = (x[0], x[1], x[2]);
    if n < 0.0 || big_n < 0.0 || n > big_n {
        return Err("Successes variable must be in [0, N]");
    }
    if !alpha.is_finite() {
        return Err("Logit probability parameter must be finite");
    }
    let mut lp = 0.0;
    if inc.t(0) {
        lp += crate::special::lchoose(big_n, n);
    }
    if inc.t(A2) {
        lp += n * log_inv_logit(alpha) + (big_n - n) * log_inv_logit(-alpha);
    }
    Ok((lp, [0.0, 0.0, n - big_n * inv_logit(alpha), 0.0]))
}

#[inline(always)]
fn neg_binomial_2(x: &[f64; 4], inc: &Inc) -> Res {
    let (n, mu, phi) = (x[0], x[1], x[2]);
    check_count(n)?;
    check_pos(mu, "Location parameter must be positive finite")?;
    check_pos(phi, "Precision parameter must be positive finite")?;
    let lmp = (mu + phi).ln();
    if !inc.t(A0 | A1 | A2) {
        return Ok((0.0, [0.0; 4]));
    }
    let mut lp = 0.0;
    if inc.t(A2) {
        lp += crate::special::lchoose(n + phi - 1.0, n);
    }
    if inc.t(A1) && n != 0.0 {
        lp += n * mu.ln();
    }
    lp += -phi * (mu / phi).ln_1p() - n * lmp;
    let dmu = n / mu - (n + phi) / (mu + phi);
    let dphi = digamma(n + phi) - digamma(phi) + (phi / (mu + phi)).ln() + (mu - n) / (mu + phi);
    Ok((lp, [0.0, dmu, dphi, 0.0]))
}

#[inline(always)]
fn neg_binomial_2_log(x: &[f64; 4], inc: &Inc) -> Res {
    let (n, eta, phi) = (x[0], x[1], x[2]);
    check_count(n)?;
    check_finite(eta, "Log location parameter must be finite")?;
    check_pos(phi, "Precision parameter must be positive finite")?;
    let log_phi = phi.ln();
    let l = {
        let a = eta - log_phi;
        if a > 0.0 {
            a + (-a).exp().ln_1p()
        } else {
            a.exp().ln_1p()
        }
    };
    if !inc.t(A0 | A1 | A2) {
        return Ok((0.0, [0.0; 4]));
    }
    let mut lp = 0.0;
    if inc.t(A2) {
        lp += crate::special::lchoose(n + phi - 1.0, n);
    }
    if inc.t(A1) {
        lp += n * eta;
    }
    lp += -phi * l - n * (log_phi + l);
    let mu = eta.exp();
    let deta = n - (n + phi) * mu / (mu + phi);
    let dphi = digamma(n + phi) - digamma(phi) + (phi / (mu + phi)).ln() + (mu - n) / (mu + phi);
    Ok((lp, [0.0, deta, dphi, 0.0]))
}

/// Marker for a scratch entry of an argument that needs none (constant argument).
pub const NO_SCRATCH: u32 = u32::MAX;

/// The argument runs of one density op, resolved against the buffers.
pub struct DistArgs<'a> {
    pub kind: DistKind,
    pub slices: [&'a [f64]; 4],
    pub nargs: usize,
    pub inc: Inc,
    pub len: usize,
}

impl<'a> DistArgs<'a> {
    pub fn new(
        kind: DistKind,
        args: &[Arg],
        propto: bool,
        len: usize,
        lo: &'a [f64],
        consts: &'a [f64],
    ) -> Self {
        let mut varying = 0u8;
        let mut slices: [&[f64]; 4] = [&[0.0]; 4];
        for (k, a) in args.iter().enumerate() {
            slices[k] = read(*a, lo, consts);
            if a.is_var() {
                varying |= 1 << k;
            }
        }
        DistArgs {
            kind,
            slices,
            nargs: args.len(),
            inc: Inc {
                all: !propto,
                varying,
            },
            len,
        }
    }

    /// Elements `c0..c1` (one chunk): the sum of the log density and of the partials of
    /// broadcast scalar arguments; per-element partials of vector arguments are written at
    /// `scratch + sc[k] + i`.
    ///
    /// # Safety
    /// `scratch` must be valid for writes at `sc[k] + i` for every varying vector argument `k`
    /// and `i` in `c0..c1`, and no other thread may access those entries meanwhile.
    pub unsafe fn chunk(
        &self,
        c0: usize,
        c1: usize,
        sc: &[u32],
        scratch: *mut f64,
    ) -> Result<(f64, [f64; 4]), EvalError> {
        #[inline(always)]
        #[allow(clippy::needless_range_loop)]
        unsafe fn run<
            F: Fn(&[f64; 4], &Inc) -> Result<(f64, [f64; 4]), std::borrow::Cow<'static, str>>,
        >(
            a: &DistArgs,
            f: F,
            c0: usize,
            c1: usize,
            sc: &[u32],
            scratch: *mut f64,
        ) -> Result<(f64, [f64; 4]), EvalError> {
            let mut s = 0.0;
            let mut scalar_part = [0.0f64; 4];
            for i in c0..c1 {
                let mut x = [0.0; 4];
                for k in 0..a.nargs {
                    let sl = a.slices[k];
                    x[k] = if sl.len() == 1 { sl[0] } else { sl[i] };
                }
                let (lp, d) = f(&x, &a.inc).map_err(|m| match a.kind {
                    DistKind::Table(_) => EvalError::domain(m.into_owned()),
                    _ => EvalError::domain(format!(
                        "{}_lpdf: {m} (element {})",
                        a.kind.name(),
                        i + 1
                    )),
                })?;
                s += lp;
                for k in 0..a.nargs {
                    if sc[k] != NO_SCRATCH {
                        if a.slices[k].len() == 1 {
                            scalar_part[k] += d[k];
                        } else {
                            // SAFETY: see the caller's contract.
                            unsafe { *scratch.add(sc[k] as usize + i) = d[k] };
                        }
                    }
                }
            }
            Ok((s, scalar_part))
        }
        macro_rules! fast {
            ($f:ident) => {
                unsafe {
                    run(
                        self,
                        |x: &[f64; 4], inc: &Inc| $f(x, inc).map_err(std::borrow::Cow::Borrowed),
                        c0,
                        c1,
                        sc,
                        scratch,
                    )
                }
            };
        }
        // Normal with a scalar scale (the common case): log σ and 1/σ once per chunk.
        if self.kind == DistKind::Normal && self.slices[2].len() == 1 {
            return unsafe { self.normal_scalar_sigma(c0, c1, sc, scratch) };
        }
        // Dispatch once per chunk so the element loop inlines the density.
        match self.kind {
            DistKind::Normal => fast!(normal),
            DistKind::StdNormal => fast!(std_normal),
            DistKind::Cauchy => fast!(cauchy),
            DistKind::StudentT => fast!(student_t),
            DistKind::Lognormal => fast!(lognormal),
            DistKind::Exponential => fast!(exponential),
            DistKind::Gamma => fast!(gamma),
            DistKind::PoissonLog => fast!(poisson_log),
            DistKind::BernoulliLogit => fast!(bernoulli_logit),
            DistKind::NegBinomial2Log => fast!(neg_binomial_2_log),
            kind => unsafe {
                run(
                    self,
                    |x: &[f64; 4], inc: &Inc| kind.elem(x, inc),
                    c0,
                    c1,
                    sc,
                    scratch,
                )
            },
        }
    }

    /// `normal(y | mu, sigma)` over `c0..c1` with a scalar `sigma`: the same summands and
    /// partials as [`normal`], with the per-op invariants hoisted out of the element loop.
    ///
    /// # Safety
    /// As for [`DistArgs::chunk`].
    unsafe fn normal_scalar_sigma(
        &self,
        c0: usize,
        c1: usize,
        sc: &[u32],
        scratch: *mut f64,
    ) -> Result<(f64, [f64; 4]), EvalError> {
        let sigma = self.slices[2][0];
        let (ys, mus) = (self.slices[0], self.slices[1]);
        if !(sigma > 0.0 && sigma.is_finite()) {
            return Err(EvalError::domain(format!(
                "normal_lpdf: Scale parameter is {sigma}, but must be positive finite!"
            )));
        }
        let inv_s = 1.0 / sigma;
        let inc = self.inc;
        let keep_quad = inc.t(A0 | A1 | A2);
        let n = (c1 - c0) as f64;
        let mut quad = 0.0;
        let mut dsum = [0.0f64; 4];
        let (py, pm) = (
            sc[0] != NO_SCRATCH && ys.len() != 1,
            sc[1] != NO_SCRATCH && mus.len() != 1,
        );
        for i in c0..c1 {
            let y = if ys.len() == 1 { ys[0] } else { ys[i] };
            let mu = if mus.len() == 1 { mus[0] } else { mus[i] };
            if y.is_nan() {
                return Err(EvalError::domain(format!(
                    "normal_lpdf: Random variable is nan (element {})",
                    i + 1
                )));
            }
            if !mu.is_finite() {
                return Err(EvalError::domain(format!(
                    "normal_lpdf: Location parameter is {mu}, but must be finite! (element {})",
                    i + 1
                )));
            }
            let z = (y - mu) * inv_s;
            quad += z * z;
            let dy = -z * inv_s;
            // SAFETY: see `chunk`.
            if py {
                unsafe { *scratch.add(sc[0] as usize + i) = dy };
            } else {
                dsum[0] += dy;
            }
            if pm {
                unsafe { *scratch.add(sc[1] as usize + i) = -dy };
            } else {
                dsum[1] -= dy;
            }
            dsum[2] += (z * z - 1.0) * inv_s;
        }
        let mut lp = 0.0;
        if inc.t(0) {
            lp -= LOG_SQRT_TWO_PI * n;
        }
        if inc.t(A2) {
            lp -= sigma.ln() * n;
        }
        if keep_quad {
            lp -= 0.5 * quad;
        }
        Ok((lp, dsum))
    }

    /// Number of chunks.
    pub fn n_chunks(&self) -> usize {
        self.len.div_ceil(CHUNK)
    }
}

/// Combines chunk results in chunk order (the fixed reduction order) and stores the scalar
/// arguments' partials.
pub fn combine(
    parts: impl Iterator<Item = (f64, [f64; 4])>,
    nargs: usize,
    slices: &[&[f64]; 4],
    sc: &[u32],
    scratch: &mut [f64],
) -> f64 {
    let mut total = 0.0;
    let mut scalar_tot = [0.0f64; 4];
    for (s, sp) in parts {
        total += s;
        for k in 0..nargs {
            scalar_tot[k] += sp[k];
        }
    }
    for k in 0..nargs {
        if sc[k] != NO_SCRATCH && slices[k].len() == 1 {
            scratch[sc[k] as usize] = scalar_tot[k];
        }
    }
    total
}

/// Value of one density op: sum over `len` elements (chunked); partials of varying arguments
/// go to `scratch` at the offsets in `sc`.
#[allow(clippy::too_many_arguments)]
pub fn forward(
    kind: DistKind,
    args: &[Arg],
    propto: bool,
    len: usize,
    sc: &[u32],
    lo: &[f64],
    consts: &[f64],
    scratch: &mut [f64],
) -> Result<f64, EvalError> {
    let a = DistArgs::new(kind, args, propto, len, lo, consts);
    let ptr = scratch.as_mut_ptr();
    let mut total = 0.0;
    let mut scalar_tot = [0.0f64; 4];
    for c in 0..a.n_chunks() {
        // SAFETY: the builder sized `scratch` for every argument run; one thread.
        let (s, sp) = unsafe { a.chunk(c * CHUNK, ((c + 1) * CHUNK).min(len), sc, ptr)? };
        total += s;
        for k in 0..a.nargs {
            scalar_tot[k] += sp[k];
        }
    }
    for k in 0..a.nargs {
        if sc[k] != NO_SCRATCH && a.slices[k].len() == 1 {
            scratch[sc[k] as usize] = scalar_tot[k];
        }
    }
    Ok(total)
}

/// Gradient rule of a density op: `adj[arg] += g · partials`.
pub fn backward(
    args: &[Arg],
    _len: usize,
    sc: &[u32],
    g: f64,
    scratch: &[f64],
    adj_lo: &mut [f64],
) {
    for (k, a) in args.iter().enumerate() {
        if sc[k] == NO_SCRATCH {
            continue;
        }
        let s = &scratch[sc[k] as usize..sc[k] as usize + a.len()];
        for (d, p) in adj_lo[a.range()].iter_mut().zip(s) {
            *d += g * p;
        }
    }
}

/// Log density of constant arguments (for data-only calls folded at build time).
pub fn eval_const(kind: DistKind, args: &[&[f64]], propto: bool) -> Result<f64, String> {
    let len = args.iter().map(|a| a.len()).max().unwrap_or(1);
    let inc = Inc {
        all: !propto,
        varying: 0,
    };
    let mut total = 0.0;
    for c0 in (0..len).step_by(CHUNK) {
        let mut s = 0.0;
        for i in c0..(c0 + CHUNK).min(len) {
            let mut x = [0.0; 4];
            for (k, a) in args.iter().enumerate() {
                x[k] = if a.len() == 1 { a[0] } else { a[i] };
            }
            s += kind
                .elem(&x, &inc)
                .map_err(|m| format!("{}: {m}", kind.name()))?
                .0;
        }
        total += s;
    }
    Ok(total)
}
