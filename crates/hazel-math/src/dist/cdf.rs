//! Log cdfs and log ccdfs with their partials.
//!
//! Unlike Stan Math (which, e.g., returns -∞ from `normal_lcdf` below z = -37.5), these are
//! computed on the log scale throughout, so the far tails stay finite where the true value is.
//! At infinite variates the partials are 0.
//!
//! Accuracy: relative ~1e-13 where the tail probability is computed directly (normal, gamma,
//! beta, Student-t, … in both tails); skew_normal's Φ(z) ∓ 2T(z, α) and exp_mod_normal's
//! Φ(u) ∓ E are differences of O(1) terms, so their far-tail probabilities have absolute error
//! ~1e-17 (a tail of 1e-11 keeps ~6 digits).

use super::{Check, MathError};
use crate::special::{
    digamma, inv_logit, lbeta, lchoose, log1m, log1m_exp, log1m_inc_beta_grad, log1m_inv_logit,
    log_Phi, log_Phi_deriv, log_gamma_p_grad, log_gamma_q_grad, log_inc_beta_grad, log_inv_logit,
    owens_t, std_normal_pdf, IncBetaGrad, IncGammaGrad, Phi,
};
use std::f64::consts::LN_2;
use std::f64::consts::PI;

fn zero_grad(grad: &mut [f64], n: usize) {
    grad[..n].fill(0.0);
}

/// Shared tail of location-scale lcdf/lccdf: value f(z) and f'(z) turned into partials with
/// respect to (y, mu, sigma).
fn location_scale(z: f64, sigma: f64, value: f64, dz: f64, grad: &mut [f64]) -> f64 {
    if z.is_infinite() {
        zero_grad(grad, 3);
        return value;
    }
    grad[0] = dz / sigma;
    grad[1] = -dz / sigma;
    grad[2] = -dz * z / sigma;
    value
}

/// The checks and `z = (y − μ)/σ` of normal's cdfs: [`location_scale_args`]'s, except that σ
/// may be infinite (Stan's `normal_lcdf` checks it only positive).
fn normal_args(
    function: &'static str,
    args: &[f64],
    grad: &[f64],
) -> Result<(f64, f64), MathError> {
    let check = Check { function };
    let [y, mu, sigma] = check.args(args, grad)?;
    check.not_nan("Random variable", y)?;
    check.finite("Location parameter", mu)?;
    check.positive("Scale parameter", sigma)?;
    Ok(((y - mu) / sigma, sigma))
}

/// normal_lcdf(y | mu, sigma)
pub fn normal_lcdf(args: &[f64], grad: &mut [f64]) -> Result<f64, MathError> {
    let (z, sigma) = normal_args("normal_lcdf", args, grad)?;
    Ok(location_scale(z, sigma, log_Phi(z), log_Phi_deriv(z), grad))
}

/// normal_lccdf(y | mu, sigma)
pub fn normal_lccdf(args: &[f64], grad: &mut [f64]) -> Result<f64, MathError> {
    let (z, sigma) = normal_args("normal_lccdf", args, grad)?;
    Ok(location_scale(
        z,
        sigma,
        log_Phi(-z),
        -log_Phi_deriv(-z),
        grad,
    ))
}

/// std_normal_lcdf(y)
pub fn std_normal_lcdf(args: &[f64], grad: &mut [f64]) -> Result<f64, MathError> {
    let check = Check {
        function: "std_normal_lcdf",
    };
    let [y] = check.args(args, grad)?;
    check.not_nan("Random variable", y)?;
    grad[0] = if y.is_infinite() {
        0.0
    } else {
        log_Phi_deriv(y)
    };
    Ok(log_Phi(y))
}

/// std_normal_lccdf(y)
pub fn std_normal_lccdf(args: &[f64], grad: &mut [f64]) -> Result<f64, MathError> {
    let check = Check {
        function: "std_normal_lccdf",
    };
    let [y] = check.args(args, grad)?;
    check.not_nan("Random variable", y)?;
    grad[0] = if y.is_infinite() {
        0.0
    } else {
        -log_Phi_deriv(-y)
    };
    Ok(log_Phi(-y))
}

/// log of the standard Cauchy cdf and its derivative, accurate in both tails.
fn cauchy_log_cdf(z: f64) -> (f64, f64) {
    let pdf = 1.0 / (PI * (1.0 + z * z));
    if z < -1.0 {
        // cdf = atan(1/|z|)/π, small
        let cdf = (-1.0 / z).atan() / PI;
        (cdf.ln(), pdf / cdf)
    } else if z > 1.0 {
        // cdf = 1 - atan(1/z)/π, close to 1
        let upper = (1.0 / z).atan() / PI;
        ((-upper).ln_1p(), pdf / (1.0 - upper))
    } else {
        let cdf = 0.5 + z.atan() / PI;
        (cdf.ln(), pdf / cdf)
    }
}

/// cauchy_lcdf(y | mu, sigma)
pub fn cauchy_lcdf(args: &[f64], grad: &mut [f64]) -> Result<f64, MathError> {
    let (z, sigma) = location_scale_args("cauchy_lcdf", args, grad, false)?;
    let (value, dz) = cauchy_log_cdf(z);
    Ok(location_scale(z, sigma, value, dz, grad))
}

/// cauchy_lccdf(y | mu, sigma)
pub fn cauchy_lccdf(args: &[f64], grad: &mut [f64]) -> Result<f64, MathError> {
    let (z, sigma) = location_scale_args("cauchy_lccdf", args, grad, false)?;
    let (value, dz) = cauchy_log_cdf(-z);
    Ok(location_scale(z, sigma, value, -dz, grad))
}

fn poisson_args(
    function: &'static str,
    args: &[f64],
    grad: &[f64],
) -> Result<(f64, f64), MathError> {
    let check = Check { function };
    let [n, lambda] = check.args(args, grad)?;
    check.integer("Random variable", n)?;
    check.nonnegative("Rate parameter", lambda)?;
    Ok((n, lambda))
}

/// poisson_lcdf(n | lambda) = log Q(n + 1, lambda)
pub fn poisson_lcdf(args: &[f64], grad: &mut [f64]) -> Result<f64, MathError> {
    let (n, lambda) = poisson_args("poisson_lcdf", args, grad)?;
    zero_grad(grad, 2);
    if n < 0.0 {
        return Ok(f64::NEG_INFINITY);
    }
    let g = log_gamma_q_grad(n + 1.0, lambda);
    grad[1] = if g.dx.is_finite() { g.dx } else { 0.0 };
    Ok(g.value)
}

/// poisson_lccdf(n | lambda) = log P(n + 1, lambda)
pub fn poisson_lccdf(args: &[f64], grad: &mut [f64]) -> Result<f64, MathError> {
    let (n, lambda) = poisson_args("poisson_lccdf", args, grad)?;
    zero_grad(grad, 2);
    if n < 0.0 {
        return Ok(0.0);
    }
    let g = log_gamma_p_grad(n + 1.0, lambda);
    grad[1] = if g.dx.is_finite() { g.dx } else { 0.0 };
    Ok(g.value)
}

/// Declares `<name>_lcdf` and `<name>_lccdf` from one function taking the function's name (for
/// its messages), the arguments, the partials and `upper: bool`.
macro_rules! cdf_pair {
    ($lcdf:ident, $lccdf:ident, $both:ident) => {
        #[doc = concat!("`", stringify!($lcdf), "` with partials.")]
        pub fn $lcdf(args: &[f64], grad: &mut [f64]) -> Result<f64, MathError> {
            $both(stringify!($lcdf), args, grad, false)
        }
        #[doc = concat!("`", stringify!($lccdf), "` with partials.")]
        pub fn $lccdf(args: &[f64], grad: &mut [f64]) -> Result<f64, MathError> {
            $both(stringify!($lccdf), args, grad, true)
        }
    };
}

/// d/du log(1 - e^u) = -1/expm1(-u), 0 at u = -∞.
fn d_log1m_exp(u: f64) -> f64 {
    if u == f64::NEG_INFINITY {
        0.0
    } else {
        -1.0 / (-u).exp_m1()
    }
}

/// Replaces non-finite partials (at the edges of the support) by 0.
fn finite_or_zero(grad: &mut [f64], n: usize) {
    for g in &mut grad[..n] {
        if !g.is_finite() {
            *g = 0.0;
        }
    }
}

/// Given log S = u for one tail with partials `du`, return log of the requested tail:
/// `u` itself when `want_same`, else log(1 - e^u) with chained partials; then the partials
/// that are not finite (at the edges of the support) become 0.
fn tail(u: f64, du: &mut [f64], n: usize, want_same: bool) -> f64 {
    let value = if want_same {
        u
    } else {
        let d = d_log1m_exp(u);
        for g in &mut du[..n] {
            *g *= d;
        }
        log1m_exp(u)
    };
    finite_or_zero(du, n);
    value
}

fn lognormal_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let check = Check { function };
    let [y, mu, sigma] = check.args(args, grad)?;
    check.nonnegative("Random variable", y)?;
    check.finite("Location parameter", mu)?;
    check.positive_finite("Scale parameter", sigma)?;
    zero_grad(grad, 3);
    if y == 0.0 {
        return Ok(if upper { 0.0 } else { f64::NEG_INFINITY });
    }
    let z = (y.ln() - mu) / sigma;
    let (value, dz) = if upper {
        (log_Phi(-z), -log_Phi_deriv(-z))
    } else {
        (log_Phi(z), log_Phi_deriv(z))
    };
    if z.is_infinite() {
        return Ok(value);
    }
    grad[0] = dz / (sigma * y);
    grad[1] = -dz / sigma;
    grad[2] = -dz * z / sigma;
    Ok(value)
}
cdf_pair!(lognormal_lcdf, lognormal_lccdf, lognormal_cdfs);

fn exponential_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let check = Check { function };
    let [y, beta] = check.args(args, grad)?;
    check.nonnegative("Random variable", y)?;
    check.positive_finite("Inverse scale parameter", beta)?;
    // log ccdf = -β y
    let u = -beta * y;
    grad[0] = -beta;
    grad[1] = -y;
    Ok(tail(u, grad, 2, upper))
}
cdf_pair!(exponential_lcdf, exponential_lccdf, exponential_cdfs);

fn weibull_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let check = Check { function };
    let [y, alpha, sigma] = check.args(args, grad)?;
    check.nonnegative("Random variable", y)?;
    check.positive_finite("Shape parameter", alpha)?;
    check.positive_finite("Scale parameter", sigma)?;
    // log ccdf = -(y/σ)^α
    let log_ratio = (y / sigma).ln();
    let v = (alpha * log_ratio).exp();
    grad[0] = -alpha * v / y;
    grad[1] = -v * log_ratio;
    grad[2] = alpha * v / sigma;
    Ok(tail(-v, grad, 3, upper))
}
cdf_pair!(weibull_lcdf, weibull_lccdf, weibull_cdfs);

fn frechet_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let check = Check { function };
    let [y, alpha, sigma] = check.args(args, grad)?;
    check.positive("Random variable", y)?;
    check.positive_finite("Shape parameter", alpha)?;
    check.positive_finite("Scale parameter", sigma)?;
    // log cdf = -(y/σ)^{-α}
    let log_ratio = (y / sigma).ln();
    let v = (-alpha * log_ratio).exp();
    grad[0] = alpha * v / y;
    grad[1] = v * log_ratio;
    grad[2] = -alpha * v / sigma;
    Ok(tail(-v, grad, 3, !upper))
}
cdf_pair!(frechet_lcdf, frechet_lccdf, frechet_cdfs);

fn rayleigh_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let check = Check { function };
    let [y, sigma] = check.args(args, grad)?;
    check.nonnegative("Random variable", y)?;
    check.positive("Scale parameter", sigma)?;
    // log ccdf = -y²/(2σ²)
    let u = -0.5 * y * y / (sigma * sigma);
    grad[0] = -y / (sigma * sigma);
    grad[1] = y * y / (sigma * sigma * sigma);
    Ok(tail(u, grad, 2, upper))
}
cdf_pair!(rayleigh_lcdf, rayleigh_lccdf, rayleigh_cdfs);

fn pareto_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let check = Check { function };
    let [y, y_min, alpha] = check.args(args, grad)?;
    check.nonnegative("Random variable", y)?;
    check.positive_finite("Scale parameter", y_min)?;
    check.positive_finite("Shape parameter", alpha)?;
    zero_grad(grad, 3);
    if y < y_min {
        return Ok(if upper { 0.0 } else { f64::NEG_INFINITY });
    }
    // log ccdf = α log(y_min / y)
    let log_ratio = (y_min / y).ln();
    grad[0] = -alpha / y;
    grad[1] = alpha / y_min;
    grad[2] = log_ratio;
    Ok(tail(alpha * log_ratio, grad, 3, upper))
}
cdf_pair!(pareto_lcdf, pareto_lccdf, pareto_cdfs);

fn pareto_type_2_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let check = Check { function };
    let [y, mu, lambda, alpha] = check.args(args, grad)?;
    check.not_nan("Random variable", y)?;
    check.finite("Location parameter", mu)?;
    check.positive_finite("Scale parameter", lambda)?;
    check.positive_finite("Shape parameter", alpha)?;
    check.greater_or_equal("Random variable", y, mu)?;
    // log ccdf = -α log1p((y - μ)/λ)
    let r = (y - mu) / lambda;
    let log1p_r = r.ln_1p();
    let dr = -alpha / (1.0 + r);
    grad[0] = dr / lambda;
    grad[1] = -dr / lambda;
    grad[2] = -dr * r / lambda;
    grad[3] = -log1p_r;
    Ok(tail(-alpha * log1p_r, grad, 4, upper))
}
cdf_pair!(pareto_type_2_lcdf, pareto_type_2_lccdf, pareto_type_2_cdfs);

/// A location-scale family's checks (the variate finite when `y_finite`, else not NaN; μ
/// finite; σ positive and finite) and its `z = (y − μ)/σ` with σ.
fn location_scale_args(
    function: &'static str,
    args: &[f64],
    grad: &[f64],
    y_finite: bool,
) -> Result<(f64, f64), MathError> {
    let check = Check { function };
    let [y, mu, sigma] = check.args(args, grad)?;
    if y_finite {
        check.finite("Random variable", y)?;
    } else {
        check.not_nan("Random variable", y)?;
    }
    check.finite("Location parameter", mu)?;
    check.positive_finite("Scale parameter", sigma)?;
    Ok(((y - mu) / sigma, sigma))
}

fn logistic_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let (z, sigma) = location_scale_args(function, args, grad, false)?;
    let (value, dz) = if upper {
        (log1m_inv_logit(z), -inv_logit(z))
    } else {
        (log_inv_logit(z), inv_logit(-z))
    };
    Ok(location_scale(z, sigma, value, dz, grad))
}
cdf_pair!(logistic_lcdf, logistic_lccdf, logistic_cdfs);

fn gumbel_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let (z, sigma) = location_scale_args(function, args, grad, false)?;
    // log cdf = -e^{-z}
    let w = (-z).exp();
    let (value, dz) = if upper {
        (log1m_exp(-w), -w / w.exp_m1())
    } else {
        (-w, w)
    };
    Ok(location_scale(z, sigma, value, dz, grad))
}
cdf_pair!(gumbel_lcdf, gumbel_lccdf, gumbel_cdfs);

fn double_exponential_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let (z, sigma) = location_scale_args(function, args, grad, false)?;
    // Work in the tail t = -|z| where the cdf is ½ e^{t}; the other tail is log1m of it.
    let same_side = (z < 0.0) != upper;
    let t = -z.abs();
    let small_tail = t - LN_2;
    let (value, dt) = if same_side {
        (small_tail, 1.0)
    } else {
        (log1m_exp(small_tail), d_log1m_exp(small_tail))
    };
    let dz = if z < 0.0 { dt } else { -dt };
    Ok(location_scale(z, sigma, value, dz, grad))
}
cdf_pair!(
    double_exponential_lcdf,
    double_exponential_lccdf,
    double_exponential_cdfs
);

fn uniform_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let check = Check { function };
    let [y, alpha, beta] = check.args(args, grad)?;
    check.not_nan("Random variable", y)?;
    check.finite("Lower bound parameter", alpha)?;
    check.finite("Upper bound parameter", beta)?;
    check.greater("Upper bound parameter", beta, alpha)?;
    zero_grad(grad, 3);
    if y < alpha {
        return Ok(if upper { 0.0 } else { f64::NEG_INFINITY });
    }
    if y >= beta {
        return Ok(if upper { f64::NEG_INFINITY } else { 0.0 });
    }
    let width = beta - alpha;
    if upper {
        grad[0] = -1.0 / (beta - y);
        grad[1] = 1.0 / width;
        grad[2] = 1.0 / (beta - y) - 1.0 / width;
        Ok((beta - y).ln() - width.ln())
    } else {
        grad[0] = 1.0 / (y - alpha);
        grad[1] = -1.0 / (y - alpha) + 1.0 / width;
        grad[2] = -1.0 / width;
        Ok((y - alpha).ln() - width.ln())
    }
}
cdf_pair!(uniform_lcdf, uniform_lccdf, uniform_cdfs);

/// log P(a, x) (or log Q when `upper`) with partials.
fn log_inc_gamma(a: f64, x: f64, upper: bool) -> IncGammaGrad {
    if upper {
        log_gamma_q_grad(a, x)
    } else {
        log_gamma_p_grad(a, x)
    }
}

fn gamma_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let check = Check { function };
    let [y, alpha, beta] = check.args(args, grad)?;
    check.positive_finite("Shape parameter", alpha)?;
    check.positive_finite("Inverse scale parameter", beta)?;
    check.nonnegative("Random variable", y)?;
    let g = log_inc_gamma(alpha, beta * y, upper);
    grad[0] = g.dx * beta;
    grad[1] = g.da;
    grad[2] = g.dx * y;
    finite_or_zero(grad, 3);
    Ok(g.value)
}
cdf_pair!(gamma_lcdf, gamma_lccdf, gamma_cdfs);

fn inv_gamma_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let check = Check { function };
    let [y, alpha, beta] = check.args(args, grad)?;
    check.positive_finite("Shape parameter", alpha)?;
    check.positive_finite("Scale parameter", beta)?;
    check.nonnegative("Random variable", y)?;
    // cdf = Q(α, β / y)
    let x = beta / y;
    let g = log_inc_gamma(alpha, x, !upper);
    grad[0] = -g.dx * x / y;
    grad[1] = g.da;
    grad[2] = g.dx / y;
    finite_or_zero(grad, 3);
    Ok(g.value)
}
cdf_pair!(inv_gamma_lcdf, inv_gamma_lccdf, inv_gamma_cdfs);

fn chi_square_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let check = Check { function };
    let [y, nu] = check.args(args, grad)?;
    check.nonnegative("Random variable", y)?;
    check.positive_finite("Degrees of freedom parameter", nu)?;
    let g = log_inc_gamma(0.5 * nu, 0.5 * y, upper);
    grad[0] = 0.5 * g.dx;
    grad[1] = 0.5 * g.da;
    finite_or_zero(grad, 2);
    Ok(g.value)
}
cdf_pair!(chi_square_lcdf, chi_square_lccdf, chi_square_cdfs);

fn inv_chi_square_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let check = Check { function };
    let [y, nu] = check.args(args, grad)?;
    check.nonnegative("Random variable", y)?;
    check.positive_finite("Degrees of freedom parameter", nu)?;
    // cdf = Q(ν/2, 1/(2y))
    let x = 0.5 / y;
    let g = log_inc_gamma(0.5 * nu, x, !upper);
    grad[0] = -g.dx * x / y;
    grad[1] = 0.5 * g.da;
    finite_or_zero(grad, 2);
    Ok(g.value)
}
cdf_pair!(
    inv_chi_square_lcdf,
    inv_chi_square_lccdf,
    inv_chi_square_cdfs
);

fn scaled_inv_chi_square_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let check = Check { function };
    let [y, nu, s] = check.args(args, grad)?;
    check.nonnegative("Random variable", y)?;
    check.positive_finite("Degrees of freedom parameter", nu)?;
    check.positive_finite("Scale parameter", s)?;
    // cdf = Q(ν/2, ν s²/(2y))
    let x = 0.5 * nu * s * s / y;
    let g = log_inc_gamma(0.5 * nu, x, !upper);
    grad[0] = -g.dx * x / y;
    grad[1] = 0.5 * g.da + g.dx * 0.5 * s * s / y;
    grad[2] = g.dx * nu * s / y;
    finite_or_zero(grad, 3);
    Ok(g.value)
}
cdf_pair!(
    scaled_inv_chi_square_lcdf,
    scaled_inv_chi_square_lccdf,
    scaled_inv_chi_square_cdfs
);

/// log I_x(a, b) (or log(1 - I_x(a, b)) when `upper`) with partials.
fn log_inc_beta(a: f64, b: f64, x: f64, upper: bool) -> IncBetaGrad {
    if upper {
        log1m_inc_beta_grad(a, b, x)
    } else {
        log_inc_beta_grad(a, b, x)
    }
}

fn beta_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let check = Check { function };
    let [y, a, b] = check.args(args, grad)?;
    check.positive_finite("First shape parameter", a)?;
    check.positive_finite("Second shape parameter", b)?;
    check.bounded("Random variable", y, 0.0, 1.0)?;
    let g = log_inc_beta(a, b, y, upper);
    grad[0] = g.dx;
    grad[1] = g.da;
    grad[2] = g.db;
    finite_or_zero(grad, 3);
    Ok(g.value)
}
cdf_pair!(beta_lcdf, beta_lccdf, beta_cdfs);

/// log of the lower tail P(T ≤ t) of Student's t with ν degrees of freedom, with (∂/∂t, ∂/∂ν).
fn student_t_log_lower(t: f64, nu: f64) -> (f64, f64, f64) {
    if t == f64::NEG_INFINITY {
        return (f64::NEG_INFINITY, 0.0, 0.0);
    }
    if t == f64::INFINITY {
        return (0.0, 0.0, 0.0);
    }
    // P(T ≤ t) = ½ I_x(ν/2, ½) for t ≤ 0, with x = ν/(ν + t²)
    let t2 = t * t;
    let denom = nu + t2;
    let x = nu / denom;
    let dx_dt = -2.0 * t * nu / (denom * denom);
    let dx_dnu = t2 / (denom * denom);
    let g = log_inc_beta_grad(0.5 * nu, 0.5, x);
    let u = g.value - LN_2; // log of the tail beyond |t|
    let du_dt = g.dx * dx_dt;
    let du_dnu = 0.5 * g.da + g.dx * dx_dnu;
    if t <= 0.0 {
        (u, du_dt, du_dnu)
    } else {
        let d = d_log1m_exp(u);
        (log1m_exp(u), d * du_dt, d * du_dnu)
    }
}

fn student_t_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let check = Check { function };
    let [y, nu, mu, sigma] = check.args(args, grad)?;
    check.not_nan("Random variable", y)?;
    check.positive_finite("Degrees of freedom parameter", nu)?;
    check.finite("Location parameter", mu)?;
    check.positive_finite("Scale parameter", sigma)?;
    let t = (y - mu) / sigma;
    let (value, dt, dnu) = if upper {
        let (v, dt, dnu) = student_t_log_lower(-t, nu);
        (v, -dt, dnu)
    } else {
        student_t_log_lower(t, nu)
    };
    grad[0] = dt / sigma;
    grad[1] = dnu;
    grad[2] = -dt / sigma;
    grad[3] = -dt * t / sigma;
    finite_or_zero(grad, 4);
    Ok(value)
}
cdf_pair!(student_t_lcdf, student_t_lccdf, student_t_cdfs);

fn binomial_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let check = Check { function };
    let [n, big_n, theta] = check.args(args, grad)?;
    check.integer("Successes variable", n)?;
    check.integer("Population size parameter", big_n)?;
    check.nonnegative("Population size parameter", big_n)?;
    check.bounded("Probability parameter", theta, 0.0, 1.0)?;
    zero_grad(grad, 3);
    if n < 0.0 {
        return Ok(if upper { 0.0 } else { f64::NEG_INFINITY });
    }
    if n >= big_n {
        return Ok(if upper { f64::NEG_INFINITY } else { 0.0 });
    }
    // P(X ≤ n) = I_{1-θ}(N - n, n + 1)
    let g = log_inc_beta(big_n - n, n + 1.0, 1.0 - theta, upper);
    grad[2] = -g.dx;
    finite_or_zero(grad, 3);
    Ok(g.value)
}
cdf_pair!(binomial_lcdf, binomial_lccdf, binomial_cdfs);

fn neg_binomial_2_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let check = Check { function };
    let [n, mu, phi] = check.args(args, grad)?;
    check.integer("Random variable", n)?;
    check.positive_finite("Location parameter", mu)?;
    check.positive_finite("Precision parameter", phi)?;
    zero_grad(grad, 3);
    if n < 0.0 {
        return Ok(if upper { 0.0 } else { f64::NEG_INFINITY });
    }
    // P(X ≤ n) = I_{φ/(μ+φ)}(φ, n + 1)
    let total = mu + phi;
    let x = phi / total;
    let g = log_inc_beta(phi, n + 1.0, x, upper);
    grad[1] = -g.dx * phi / (total * total);
    grad[2] = g.da + g.dx * mu / (total * total);
    finite_or_zero(grad, 3);
    Ok(g.value)
}
cdf_pair!(
    neg_binomial_2_lcdf,
    neg_binomial_2_lccdf,
    neg_binomial_2_cdfs
);

fn neg_binomial_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let check = Check { function };
    let [n, alpha, beta] = check.args(args, grad)?;
    check.integer("Random variable", n)?;
    check.positive_finite("Shape parameter", alpha)?;
    check.positive_finite("Inverse scale parameter", beta)?;
    zero_grad(grad, 3);
    if n < 0.0 {
        return Ok(if upper { 0.0 } else { f64::NEG_INFINITY });
    }
    // P(X ≤ n) = I_{β/(1+β)}(α, n + 1)
    let x = beta / (1.0 + beta);
    let g = log_inc_beta(alpha, n + 1.0, x, upper);
    grad[1] = g.da;
    grad[2] = g.dx / ((1.0 + beta) * (1.0 + beta));
    finite_or_zero(grad, 3);
    Ok(g.value)
}
cdf_pair!(neg_binomial_lcdf, neg_binomial_lccdf, neg_binomial_cdfs);

fn bernoulli_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let check = Check { function };
    let [n, theta] = check.args(args, grad)?;
    check.integer("Random variable", n)?;
    check.bounded("Probability parameter", theta, 0.0, 1.0)?;
    zero_grad(grad, 2);
    if n < 0.0 {
        return Ok(if upper { 0.0 } else { f64::NEG_INFINITY });
    }
    if n >= 1.0 {
        return Ok(if upper { f64::NEG_INFINITY } else { 0.0 });
    }
    if upper {
        grad[1] = 1.0 / theta;
        Ok(theta.ln())
    } else {
        grad[1] = -1.0 / (1.0 - theta);
        Ok(log1m(theta))
    }
}
cdf_pair!(bernoulli_lcdf, bernoulli_lccdf, bernoulli_cdfs);

fn beta_proportion_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let check = Check { function };
    let [y, mu, kappa] = check.args(args, grad)?;
    check.positive("Location parameter", mu)?;
    check.less("Location parameter", mu, 1.0)?;
    check.positive_finite("Precision parameter", kappa)?;
    check.bounded("Random variable", y, 0.0, 1.0)?;
    // beta(μκ, (1-μ)κ)
    let g = log_inc_beta(mu * kappa, (1.0 - mu) * kappa, y, upper);
    grad[0] = g.dx;
    grad[1] = kappa * (g.da - g.db);
    grad[2] = mu * g.da + (1.0 - mu) * g.db;
    finite_or_zero(grad, 3);
    Ok(g.value)
}
cdf_pair!(
    beta_proportion_lcdf,
    beta_proportion_lccdf,
    beta_proportion_cdfs
);

fn skew_normal_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let check = Check { function };
    let [y, xi, omega, alpha] = check.args(args, grad)?;
    check.not_nan("Random variable", y)?;
    check.finite("Location parameter", xi)?;
    check.positive("Scale parameter", omega)?;
    check.finite("Shape parameter", alpha)?;
    zero_grad(grad, 4);
    let z = (y - xi) / omega;
    if z.is_infinite() {
        let at_top = z > 0.0;
        return Ok(if at_top != upper {
            0.0
        } else {
            f64::NEG_INFINITY
        });
    }
    // F = Φ(z) - 2 T(z, α); dF/dz = 2 φ(z) Φ(αz); dF/dα = -exp(-z²(1+α²)/2) / (π (1+α²))
    let owens = owens_t(z, alpha);
    let (tail, sign) = if upper {
        (Phi(-z) + 2.0 * owens, -1.0)
    } else {
        (Phi(z) - 2.0 * owens, 1.0)
    };
    let one_plus = 1.0 + alpha * alpha;
    let df_dz = 2.0 * std_normal_pdf(z) * Phi(alpha * z);
    let df_dalpha = -(-0.5 * z * z * one_plus).exp() / (PI * one_plus);
    let dz = sign * df_dz / tail;
    grad[0] = dz / omega;
    grad[1] = -dz / omega;
    grad[2] = -dz * z / omega;
    grad[3] = sign * df_dalpha / tail;
    finite_or_zero(grad, 4);
    Ok(tail.ln())
}
cdf_pair!(skew_normal_lcdf, skew_normal_lccdf, skew_normal_cdfs);

fn exp_mod_normal_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let check = Check { function };
    let [y, mu, sigma, lambda] = check.args(args, grad)?;
    check.not_nan("Random variable", y)?;
    check.finite("Location parameter", mu)?;
    check.positive_finite("Scale parameter", sigma)?;
    check.positive_finite("Inv_scale parameter", lambda)?;
    zero_grad(grad, 4);
    if y.is_infinite() {
        let at_top = y > 0.0;
        return Ok(if at_top != upper {
            0.0
        } else {
            f64::NEG_INFINITY
        });
    }
    // F = Φ(u) - E with u = (y - μ)/σ and E = exp(-λ(y-μ) + λ²σ²/2) Φ(u - λσ), formed on the
    // log scale. Partials (using exp(-λ(y-μ) + λ²σ²/2) φ(u - λσ) = φ(u)):
    // dF/dy = λE, dF/dμ = -λE, dF/dσ = λφ(u) - λ²σE, dF/dλ = σφ(u) - (λσ² - (y-μ))E.
    let d = y - mu;
    let u = d / sigma;
    let e =
        (-lambda * d + 0.5 * lambda * lambda * sigma * sigma + log_Phi(u - lambda * sigma)).exp();
    let phi_u = std_normal_pdf(u);
    let df = [
        lambda * e,
        -lambda * e,
        lambda * phi_u - lambda * lambda * sigma * e,
        sigma * phi_u - (lambda * sigma * sigma - d) * e,
    ];
    let (tail, sign) = if upper {
        (Phi(-u) + e, -1.0)
    } else {
        (Phi(u) - e, 1.0)
    };
    for i in 0..4 {
        grad[i] = sign * df[i] / tail;
    }
    finite_or_zero(grad, 4);
    Ok(tail.ln())
}
cdf_pair!(
    exp_mod_normal_lcdf,
    exp_mod_normal_lccdf,
    exp_mod_normal_cdfs
);

fn beta_binomial_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let check = Check { function };
    let [n, big_n, a, b] = check.args(args, grad)?;
    check.integer("Successes variable", n)?;
    check.integer("Population size parameter", big_n)?;
    check.nonnegative("Population size parameter", big_n)?;
    check.positive_finite("First prior sample size parameter", a)?;
    check.positive_finite("Second prior sample size parameter", b)?;
    zero_grad(grad, 4);
    if n < 0.0 {
        return Ok(if upper { 0.0 } else { f64::NEG_INFINITY });
    }
    if n >= big_n {
        return Ok(if upper { f64::NEG_INFINITY } else { 0.0 });
    }
    // Sum the mass over the shorter of the two tails, k in 0..=n or n+1..=N, on the log scale
    // with the partials of each term: log p_k = lchoose(N, k) + lbeta(k+a, N-k+b) - lbeta(a, b);
    // the requested tail is then that sum or its complement.
    let sum_lower = n + 1.0 <= big_n - n;
    if n.min(big_n - n - 1.0) > BETA_BINOMIAL_MAX_TERMS {
        return Err(MathError::new(format!(
            "{function}: Population size parameter is {}, but the cdf is summed term by term and \
             must have at most {} terms in its shorter tail",
            super::format_stan_number(big_n),
            BETA_BINOMIAL_MAX_TERMS
        )));
    }
    let (first, last) = if sum_lower {
        (0.0, n)
    } else {
        (n + 1.0, big_n)
    };
    let lbeta_ab = lbeta(a, b);
    let d_ab = digamma(a + b);
    let d_all = digamma(big_n + a + b);
    let (da_base, db_base) = (d_ab - digamma(a) - d_all, d_ab - digamma(b) - d_all);
    let mut max_log = f64::NEG_INFINITY;
    let mut k = first;
    while k <= last {
        let lp = lchoose(big_n, k) + lbeta(k + a, big_n - k + b) - lbeta_ab;
        max_log = max_log.max(lp);
        k += 1.0;
    }
    let (mut sum, mut sum_da, mut sum_db) = (0.0, 0.0, 0.0);
    let mut k = first;
    while k <= last {
        let lp = lchoose(big_n, k) + lbeta(k + a, big_n - k + b) - lbeta_ab;
        let w = (lp - max_log).exp();
        sum += w;
        sum_da += w * (digamma(k + a) + da_base);
        sum_db += w * (digamma(big_n - k + b) + db_base);
        k += 1.0;
    }
    let log_tail = max_log + sum.ln();
    let (da, db) = (sum_da / sum, sum_db / sum);
    if sum_lower != upper {
        grad[2] = da;
        grad[3] = db;
        Ok(log_tail)
    } else {
        // log(1 - e^t) with d/dt = -1/expm1(-t)
        let d = d_log1m_exp(log_tail);
        grad[2] = d * da;
        grad[3] = d * db;
        Ok(log1m_exp(log_tail))
    }
}

/// Most terms `beta_binomial_lcdf`/`lccdf` will sum (10 million, ~1 s).
const BETA_BINOMIAL_MAX_TERMS: f64 = 1e7;
cdf_pair!(beta_binomial_lcdf, beta_binomial_lccdf, beta_binomial_cdfs);

fn discrete_range_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let check = Check { function };
    let [y, lower, upper_bound] = check.args(args, grad)?;
    check.integer("Random variable", y)?;
    check.integer("Lower bound parameter", lower)?;
    check.integer("Upper bound parameter", upper_bound)?;
    check.greater_or_equal("Upper bound parameter", upper_bound, lower)?;
    zero_grad(grad, 3);
    let count = upper_bound - lower + 1.0;
    // P(Y ≤ y) = (y - lower + 1)/count, clamped to [0, 1]
    let below = (y - lower + 1.0).max(0.0).min(count);
    let mass = if upper { count - below } else { below };
    Ok(mass.ln() - count.ln())
}
cdf_pair!(
    discrete_range_lcdf,
    discrete_range_lccdf,
    discrete_range_cdfs
);

/// skew_double_exponential lcdf/lccdf: the lower tail `log τ − 2(1 − τ)(μ − y)/σ` for y < μ,
/// the upper tail `log(1 − τ) − 2τ(y − μ)/σ` otherwise; the other side is `log1m_exp` of it.
fn skew_double_exponential_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let check = Check { function };
    let [y, mu, sigma, tau] = check.args(args, grad)?;
    check.not_nan("Random variable", y)?;
    check.finite("Location parameter", mu)?;
    check.positive_finite("Scale parameter", sigma)?;
    check.bounded("Skewness parameter", tau, 0.0, 1.0)?;
    let below = y < mu;
    // The small tail's log and its partials in (y, mu, sigma, tau).
    let (t, dt) = if below {
        let d = mu - y;
        (
            tau.ln() - 2.0 * (1.0 - tau) * d / sigma,
            [
                2.0 * (1.0 - tau) / sigma,
                -2.0 * (1.0 - tau) / sigma,
                2.0 * (1.0 - tau) * d / (sigma * sigma),
                1.0 / tau + 2.0 * d / sigma,
            ],
        )
    } else {
        let d = y - mu;
        (
            (-tau).ln_1p() - 2.0 * tau * d / sigma,
            [
                -2.0 * tau / sigma,
                2.0 * tau / sigma,
                2.0 * tau * d / (sigma * sigma),
                -1.0 / (1.0 - tau) - 2.0 * d / sigma,
            ],
        )
    };
    // lcdf is the small tail below μ, lccdf above.
    let (value, scale) = if below != upper {
        (t, 1.0)
    } else {
        (log1m_exp(t), d_log1m_exp(t))
    };
    for i in 0..4 {
        grad[i] = scale * dt[i];
    }
    finite_or_zero(grad, 4);
    Ok(value)
}
cdf_pair!(
    skew_double_exponential_lcdf,
    skew_double_exponential_lccdf,
    skew_double_exponential_cdfs
);

/// beta_neg_binomial lcdf/lccdf: the mass of `0..=n` summed term by term on the log scale
/// (each term and its partials from the lpmf with all terms); the upper tail is `log1m_exp`
/// of it. The upper tail is an infinite sum, so where the cdf is within ~1e-4 of 1 the lcdf
/// keeps only about 1e-11 relative accuracy and the lccdf loses digits likewise (Stan sums
/// that tail with a 3F2 hypergeometric function instead).
fn beta_neg_binomial_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let check = Check { function };
    let [n, r, a, b] = check.args(args, grad)?;
    check.integer("Failures variable", n)?;
    check.positive_finite("Number of successes parameter", r)?;
    check.positive_finite("Prior success parameter", a)?;
    check.positive_finite("Prior failure parameter", b)?;
    zero_grad(grad, 4);
    if n < 0.0 {
        return Ok(if upper { 0.0 } else { f64::NEG_INFINITY });
    }
    if n > BETA_BINOMIAL_MAX_TERMS {
        return Err(MathError::new(format!(
            "{function}: Failures variable is {}, but the cdf is summed term by term and must \
             have at most {} terms",
            super::format_stan_number(n),
            BETA_BINOMIAL_MAX_TERMS
        )));
    }
    let mut term = [0.0; 4];
    let lp_k = |k: f64, g: &mut [f64; 4]| {
        super::discrete::beta_neg_binomial(&[k, r, a, b], super::Terms::FULL, g)
    };
    let mut max_log = f64::NEG_INFINITY;
    let mut k = 0.0;
    while k <= n {
        max_log = max_log.max(lp_k(k, &mut term)?);
        k += 1.0;
    }
    let mut sum = 0.0;
    let mut sum_g = [0.0; 4];
    let mut k = 0.0;
    while k <= n {
        let w = (lp_k(k, &mut term)? - max_log).exp();
        sum += w;
        for i in 1..4 {
            sum_g[i] += w * term[i];
        }
        k += 1.0;
    }
    let log_lower = max_log + sum.ln();
    let scale = if upper { d_log1m_exp(log_lower) } else { 1.0 };
    for i in 1..4 {
        grad[i] = scale * sum_g[i] / sum;
    }
    finite_or_zero(grad, 4);
    Ok(if upper {
        log1m_exp(log_lower)
    } else {
        log_lower.min(0.0)
    })
}
cdf_pair!(
    beta_neg_binomial_lcdf,
    beta_neg_binomial_lccdf,
    beta_neg_binomial_cdfs
);

/// loglogistic lcdf: `−log1p((y/α)^−β)` (Stan has only the cdf, its exponential).
pub fn loglogistic_lcdf(args: &[f64], grad: &mut [f64]) -> Result<f64, MathError> {
    let check = Check {
        function: "loglogistic_cdf",
    };
    let [y, alpha, beta] = check.args(args, grad)?;
    check.nonnegative("Random variable", y)?;
    check.positive_finite("Scale parameter", alpha)?;
    check.positive_finite("Shape parameter", beta)?;
    if y == 0.0 {
        zero_grad(grad, 3);
        return Ok(f64::NEG_INFINITY);
    }
    if y.is_infinite() {
        zero_grad(grad, 3);
        return Ok(0.0);
    }
    // u = log (y/α)^−β; lcdf = −log1p(e^u), d lcdf/du = −inv_logit(u).
    let log_ratio = y.ln() - alpha.ln();
    let u = -beta * log_ratio;
    let d = -inv_logit(u);
    grad[0] = d * (-beta / y);
    grad[1] = d * (beta / alpha);
    grad[2] = d * (-log_ratio);
    Ok(-crate::special::log1p_exp(u))
}

/// A value with its partials in (x, κ), for Stan's von Mises cdf recursions.
#[derive(Clone, Copy)]
struct Dual2 {
    v: f64,
    dx: f64,
    dk: f64,
}

impl Dual2 {
    fn new(v: f64, dx: f64, dk: f64) -> Dual2 {
        Dual2 { v, dx, dk }
    }
    fn mul(self, o: Dual2) -> Dual2 {
        Dual2::new(
            self.v * o.v,
            self.dx * o.v + self.v * o.dx,
            self.dk * o.v + self.v * o.dk,
        )
    }
    fn add(self, o: Dual2) -> Dual2 {
        Dual2::new(self.v + o.v, self.dx + o.dx, self.dk + o.dk)
    }
    fn sub(self, o: Dual2) -> Dual2 {
        Dual2::new(self.v - o.v, self.dx - o.dx, self.dk - o.dk)
    }
    fn recip(self) -> Dual2 {
        let r = 1.0 / self.v;
        Dual2::new(r, -self.dx * r * r, -self.dk * r * r)
    }
    fn scale(self, c: f64) -> Dual2 {
        Dual2::new(self.v * c, self.dx * c, self.dk * c)
    }
}

/// Stan Math's `von_mises_cdf_series`: Hill's backward recursion with
/// `p = ⌊28 + κ/2 − 100/(κ + 5) + 1⌋` terms, for the centred angle x ∈ [−π, π].
fn von_mises_cdf_series(x: f64, k: f64) -> Dual2 {
    let p = (28.0 + 0.5 * k - 100.0 / (k + 5.0) + 1.0) as i64;
    let (s, c) = x.sin_cos();
    let s = Dual2::new(s, c, 0.0);
    let c = Dual2::new(c, -s.v, 0.0);
    let pf = p as f64;
    let (spx, cpx) = (pf * x).sin_cos();
    let mut sn = Dual2::new(spx, pf * cpx, 0.0);
    let mut cn = Dual2::new(cpx, -pf * spx, 0.0);
    let mut r = Dual2::new(0.0, 0.0, 0.0);
    let mut v = Dual2::new(0.0, 0.0, 0.0);
    for n in (1..p).rev() {
        let nf = n as f64;
        let sn_tmp = sn.mul(c).sub(cn.mul(s));
        cn = cn.mul(c).add(sn.mul(s));
        sn = sn_tmp;
        // R = 1 / (2n/κ + R)
        let two_n_over_k = Dual2::new(2.0 * nf / k, 0.0, -2.0 * nf / (k * k));
        r = two_n_over_k.add(r).recip();
        v = r.mul(sn.scale(1.0 / nf).add(v));
    }
    let two_pi = 2.0 * PI;
    Dual2::new(
        0.5 + x / two_pi + v.v / PI,
        1.0 / two_pi + v.dx / PI,
        v.dk / PI,
    )
}

/// Stan Math's `von_mises_cdf_normalapprox`: Φ(b sin(x/2)) with `b = √(2/π) e^κ / I₀(κ)`,
/// with Stan's `normal_cdf` cut-offs (0 below z = −37.5, 1 above z = 8.25).
fn von_mises_cdf_normalapprox(x: f64, k: f64) -> Dual2 {
    let log_b = 0.5 * (2.0 / PI).ln() + k - crate::special::log_modified_bessel_first_kind(0.0, k);
    let b = log_b.exp();
    let db_dk = b * (1.0 - crate::special::log_modified_bessel_first_kind_dz(0.0, k));
    let (sh, ch) = (0.5 * x).sin_cos();
    let z = b * sh;
    if z < -37.5 {
        return Dual2::new(0.0, 0.0, 0.0);
    }
    if z > 8.25 {
        return Dual2::new(1.0, 0.0, 0.0);
    }
    let pdf = std_normal_pdf(z);
    Dual2::new(Phi(z), pdf * 0.5 * b * ch, pdf * db_dk * sh)
}

/// Stan Math's `von_mises_cdf_centered`: the series below κ = 49 (clamped to [0, 1]), the
/// normal approximation from κ = 50, a linear blend between.
fn von_mises_cdf_centered(x: f64, k: f64) -> Dual2 {
    if k < 49.0 {
        let f = von_mises_cdf_series(x, k);
        if f.v < 0.0 {
            Dual2::new(0.0, 0.0, 0.0)
        } else if f.v > 1.0 {
            Dual2::new(1.0, 0.0, 0.0)
        } else {
            f
        }
    } else if k < 50.0 {
        let a = von_mises_cdf_series(x, 49.0);
        let b = von_mises_cdf_normalapprox(x, 50.0);
        Dual2::new(
            (50.0 - k) * a.v + (k - 49.0) * b.v,
            (50.0 - k) * a.dx + (k - 49.0) * b.dx,
            b.v - a.v,
        )
    } else {
        von_mises_cdf_normalapprox(x, k)
    }
}

/// von_mises lcdf/lccdf as Stan Math computes them: the distribution lives on [−π, π], so the
/// cdf is `G(y − μ) − G(−π − μ)` for the centred cdf `G` continued past ±π by whole turns
/// (`G(x + 2π) = G(x) + 1`), each angle wrapped into [−π, π) for `G`; then the log of it or
/// of its complement.
fn von_mises_cdfs(
    function: &'static str,
    args: &[f64],
    grad: &mut [f64],
    upper: bool,
) -> Result<f64, MathError> {
    let check = Check { function };
    let [y, mu, k] = check.args(args, grad)?;
    check.bounded("Random variable", y, -PI, PI)?;
    check.finite("Location parameter", mu)?;
    check.positive("Scale parameter", k)?;
    let two_pi = 2.0 * PI;
    // The centred cdf continued by whole turns, at angle a.
    let continued = |a: f64| -> Dual2 {
        let turns = ((a + PI) / two_pi).floor();
        let g = von_mises_cdf_centered(a - turns * two_pi, k);
        Dual2::new(g.v + turns, g.dx, g.dk)
    };
    let hi = continued(y - mu);
    let lo = continued(-PI - mu);
    let mut f = Dual2::new(hi.v - lo.v, hi.dx, hi.dk - lo.dk);
    // ∂/∂μ of G(y − μ) − G(−π − μ).
    let mut dmu = -hi.dx + lo.dx;
    if f.v < 0.0 {
        f = Dual2::new(0.0, 0.0, 0.0);
        dmu = 0.0;
    }
    let (value, scale) = if upper {
        ((-f.v).ln_1p(), -1.0 / (1.0 - f.v))
    } else {
        (f.v.ln(), 1.0 / f.v)
    };
    grad[0] = scale * f.dx;
    grad[1] = scale * dmu;
    grad[2] = scale * f.dk;
    finite_or_zero(grad, 3);
    Ok(value)
}
cdf_pair!(von_mises_lcdf, von_mises_lccdf, von_mises_cdfs);
