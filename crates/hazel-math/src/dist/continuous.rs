//! Log densities of continuous distributions with their partials (the families the op graph
//! also evaluates element by element live in [`super::kernel`] instead).
//!
//! Each function computes the terms Stan Math's `<name>_lpdf` computes, under the same
//! `include_summand` conditions (a term is kept iff `!propto` or one of the arguments it depends
//! on varies), and the partials of exactly the kept terms.

use super::{all, bit, Check, MathError, Terms};
use crate::special::{digamma, lgamma, log1m, log_erfc, log_erfc_deriv, LOG_SQRT_TWO_PI};
use std::f64::consts::{LN_2, SQRT_2};

/// inv_chi_square(y | nu)
pub fn inv_chi_square(args: &[f64], terms: Terms, grad: &mut [f64]) -> Result<f64, MathError> {
    let check = Check {
        function: "inv_chi_square_lpdf",
    };
    let [y, nu] = check.args(args, grad)?;
    check.positive_finite("Degrees of freedom parameter", nu)?;
    check.not_nan("Random variable", y)?;
    grad[..2].fill(0.0);
    if !terms.include(all(2)) {
        return Ok(0.0);
    }
    if y <= 0.0 {
        return Ok(f64::NEG_INFINITY);
    }
    let half_nu = 0.5 * nu;
    let log_y = y.ln();
    let mut lp = 0.0;
    if terms.include(bit(1)) {
        lp -= half_nu * LN_2 + lgamma(half_nu);
        grad[1] -= 0.5 * LN_2 + 0.5 * digamma(half_nu);
    }
    if terms.include(bit(0) | bit(1)) {
        lp -= (half_nu + 1.0) * log_y;
        grad[0] -= (half_nu + 1.0) / y;
        grad[1] -= 0.5 * log_y;
    }
    if terms.include(bit(0)) {
        lp -= 0.5 / y;
        grad[0] += 0.5 / (y * y);
    }
    Ok(lp)
}

/// scaled_inv_chi_square(y | nu, s)
pub fn scaled_inv_chi_square(
    args: &[f64],
    terms: Terms,
    grad: &mut [f64],
) -> Result<f64, MathError> {
    let check = Check {
        function: "scaled_inv_chi_square_lpdf",
    };
    let [y, nu, s] = check.args(args, grad)?;
    check.not_nan("Random variable", y)?;
    check.positive_finite("Degrees of freedom parameter", nu)?;
    check.positive_finite("Scale parameter", s)?;
    grad[..3].fill(0.0);
    if !terms.include(all(3)) {
        return Ok(0.0);
    }
    if y <= 0.0 {
        return Ok(f64::NEG_INFINITY);
    }
    let half_nu = 0.5 * nu;
    let log_y = y.ln();
    let log_s = s.ln();
    let mut lp = 0.0;
    if terms.include(bit(1)) {
        lp += half_nu * half_nu.ln() - lgamma(half_nu);
        grad[1] += 0.5 * half_nu.ln() + 0.5 - 0.5 * digamma(half_nu);
    }
    if terms.include(bit(1) | bit(2)) {
        lp += nu * log_s;
        grad[1] += log_s;
        grad[2] += nu / s;
    }
    if terms.include(bit(0) | bit(1)) {
        lp -= (half_nu + 1.0) * log_y;
        grad[0] -= (half_nu + 1.0) / y;
        grad[1] -= 0.5 * log_y;
    }
    if terms.include(all(3)) {
        lp -= half_nu * s * s / y;
        grad[0] += half_nu * s * s / (y * y);
        grad[1] -= 0.5 * s * s / y;
        grad[2] -= nu * s / y;
    }
    Ok(lp)
}

/// skew_normal(y | xi, omega, alpha)
pub fn skew_normal(args: &[f64], terms: Terms, grad: &mut [f64]) -> Result<f64, MathError> {
    let check = Check {
        function: "skew_normal_lpdf",
    };
    let [y, xi, omega, alpha] = check.args(args, grad)?;
    check.not_nan("Random variable", y)?;
    check.finite("Location parameter", xi)?;
    check.positive("Scale parameter", omega)?;
    check.finite("Shape parameter", alpha)?;
    grad[..4].fill(0.0);
    if !terms.include(all(4)) {
        return Ok(0.0);
    }
    let z = (y - xi) / omega;
    let mut lp = 0.0;
    if terms.include(0) {
        lp -= LOG_SQRT_TWO_PI;
    }
    if terms.include(bit(2)) {
        lp -= omega.ln();
        grad[2] -= 1.0 / omega;
    }
    if terms.include(bit(0) | bit(1) | bit(2)) {
        lp -= 0.5 * z * z;
        grad[0] -= z / omega;
        grad[1] += z / omega;
        grad[2] += z * z / omega;
    }
    // log(2 Φ(α z)) = log erfc(-α z / √2)
    let u = -alpha * z / SQRT_2;
    lp += log_erfc(u);
    let du = log_erfc_deriv(u);
    // du/dz = -α/√2, du/dα = -z/√2
    let dz = du * (-alpha / SQRT_2);
    grad[0] += dz / omega;
    grad[1] -= dz / omega;
    grad[2] -= dz * z / omega;
    grad[3] = du * (-z / SQRT_2);
    Ok(lp)
}

/// gumbel(y | mu, beta)
pub fn gumbel(args: &[f64], terms: Terms, grad: &mut [f64]) -> Result<f64, MathError> {
    let check = Check {
        function: "gumbel_lpdf",
    };
    let [y, mu, beta] = check.args(args, grad)?;
    check.not_nan("Random variable", y)?;
    check.finite("Location parameter", mu)?;
    check.positive("Scale parameter", beta)?;
    grad[..3].fill(0.0);
    if !terms.include(all(3)) {
        return Ok(0.0);
    }
    let z = (y - mu) / beta;
    let exp_neg_z = (-z).exp();
    let mut lp = -z - exp_neg_z;
    let dz = -1.0 + exp_neg_z;
    let mut d_beta = -dz * z / beta;
    if terms.include(bit(2)) {
        lp -= beta.ln();
        d_beta -= 1.0 / beta;
    }
    grad[0] = dz / beta;
    grad[1] = -dz / beta;
    grad[2] = d_beta;
    Ok(lp)
}

/// frechet(y | alpha, sigma)
pub fn frechet(args: &[f64], terms: Terms, grad: &mut [f64]) -> Result<f64, MathError> {
    let check = Check {
        function: "frechet_lpdf",
    };
    let [y, alpha, sigma] = check.args(args, grad)?;
    check.positive("Random variable", y)?;
    check.positive_finite("Shape parameter", alpha)?;
    check.positive_finite("Scale parameter", sigma)?;
    grad[..3].fill(0.0);
    if !terms.include(all(3)) {
        return Ok(0.0);
    }
    let log_y = y.ln();
    let log_sigma = sigma.ln();
    let pow = (-alpha * (log_y - log_sigma)).exp(); // (y/σ)^{-α}
    let mut lp = -pow;
    grad[0] = alpha * pow / y;
    grad[1] = pow * (log_y - log_sigma);
    grad[2] = -alpha * pow / sigma;
    if terms.include(bit(1)) {
        lp += alpha.ln();
        grad[1] += 1.0 / alpha;
    }
    if terms.include(bit(0) | bit(1)) {
        lp -= (1.0 + alpha) * log_y;
        grad[0] -= (1.0 + alpha) / y;
        grad[1] -= log_y;
    }
    if terms.include(bit(1) | bit(2)) {
        lp += alpha * log_sigma;
        grad[1] += log_sigma;
        grad[2] += alpha / sigma;
    }
    Ok(lp)
}

/// pareto(y | y_min, alpha)
pub fn pareto(args: &[f64], terms: Terms, grad: &mut [f64]) -> Result<f64, MathError> {
    let check = Check {
        function: "pareto_lpdf",
    };
    let [y, y_min, alpha] = check.args(args, grad)?;
    check.not_nan("Random variable", y)?;
    check.positive_finite("Scale parameter", y_min)?;
    check.positive_finite("Shape parameter", alpha)?;
    grad[..3].fill(0.0);
    if !terms.include(all(3)) {
        return Ok(0.0);
    }
    if y < y_min {
        return Ok(f64::NEG_INFINITY);
    }
    let log_y = y.ln();
    let mut lp = 0.0;
    if terms.include(bit(2)) {
        lp += alpha.ln();
        grad[2] += 1.0 / alpha;
    }
    if terms.include(bit(0) | bit(2)) {
        lp -= (alpha + 1.0) * log_y;
        grad[0] -= (alpha + 1.0) / y;
        grad[2] -= log_y;
    }
    if terms.include(bit(1) | bit(2)) {
        lp += alpha * y_min.ln();
        grad[1] += alpha / y_min;
        grad[2] += y_min.ln();
    }
    Ok(lp)
}

/// pareto_type_2(y | mu, lambda, alpha)
pub fn pareto_type_2(args: &[f64], terms: Terms, grad: &mut [f64]) -> Result<f64, MathError> {
    let check = Check {
        function: "pareto_type_2_lpdf",
    };
    let [y, mu, lambda, alpha] = check.args(args, grad)?;
    // Stan Math checks only these three (a NaN variate fails the first).
    check.greater_or_equal("Random variable", y, mu)?;
    check.positive_finite("Scale parameter", lambda)?;
    check.positive_finite("Shape parameter", alpha)?;
    grad[..4].fill(0.0);
    if !terms.include(all(4)) {
        return Ok(0.0);
    }
    let r = (y - mu) / lambda;
    let log1p_r = r.ln_1p();
    let mut lp = -(alpha + 1.0) * log1p_r;
    // d/dr = -(α+1)/(1+r)
    let dr = -(alpha + 1.0) / (1.0 + r);
    grad[0] = dr / lambda;
    grad[1] = -dr / lambda;
    grad[2] = -dr * r / lambda;
    grad[3] = -log1p_r;
    if terms.include(bit(3)) {
        lp += alpha.ln();
        grad[3] += 1.0 / alpha;
    }
    if terms.include(bit(2)) {
        lp -= lambda.ln();
        grad[2] -= 1.0 / lambda;
    }
    Ok(lp)
}

/// exp_mod_normal(y | mu, sigma, lambda)
pub fn exp_mod_normal(args: &[f64], terms: Terms, grad: &mut [f64]) -> Result<f64, MathError> {
    let check = Check {
        function: "exp_mod_normal_lpdf",
    };
    let [y, mu, sigma, lambda] = check.args(args, grad)?;
    check.not_nan("Random variable", y)?;
    check.finite("Location parameter", mu)?;
    check.positive_finite("Scale parameter", sigma)?;
    check.positive_finite("Inv_scale parameter", lambda)?;
    grad[..4].fill(0.0);
    if !terms.include(all(4)) {
        return Ok(0.0);
    }
    let mut lp = 0.0;
    if terms.include(0) {
        lp -= LN_2;
    }
    if terms.include(bit(3)) {
        lp += lambda.ln();
        grad[3] += 1.0 / lambda;
    }
    let sigma_sq = sigma * sigma;
    // λ(μ + λσ²/2 - y) + log erfc((μ + λσ² - y)/(σ√2))
    lp += lambda * (mu + 0.5 * lambda * sigma_sq - y);
    grad[0] -= lambda;
    grad[1] += lambda;
    grad[2] += lambda * lambda * sigma;
    grad[3] += mu + lambda * sigma_sq - y;
    let u = (mu + lambda * sigma_sq - y) / (sigma * SQRT_2);
    lp += log_erfc(u);
    let du = log_erfc_deriv(u);
    grad[0] -= du / (sigma * SQRT_2);
    grad[1] += du / (sigma * SQRT_2);
    // ∂u/∂σ = λ/√2 - (μ - y)/(σ²√2)
    grad[2] += du * (lambda / SQRT_2 - (mu - y) / (sigma_sq * SQRT_2));
    grad[3] += du * sigma / SQRT_2;
    Ok(lp)
}

/// rayleigh(y | sigma)
pub fn rayleigh(args: &[f64], terms: Terms, grad: &mut [f64]) -> Result<f64, MathError> {
    let check = Check {
        function: "rayleigh_lpdf",
    };
    let [y, sigma] = check.args(args, grad)?;
    check.positive("Scale parameter", sigma)?;
    check.positive("Random variable", y)?;
    grad[..2].fill(0.0);
    if !terms.include(all(2)) {
        return Ok(0.0);
    }
    let inv_sigma = 1.0 / sigma;
    let z = y * inv_sigma;
    let mut lp = -0.5 * z * z;
    grad[0] = -z * inv_sigma;
    grad[1] = z * z * inv_sigma;
    if terms.include(bit(1)) {
        lp -= 2.0 * sigma.ln();
        grad[1] -= 2.0 * inv_sigma;
    }
    if terms.include(bit(0)) {
        lp += y.ln();
        grad[0] += 1.0 / y;
    }
    Ok(lp)
}

/// beta_proportion(y | mu, kappa)
pub fn beta_proportion(args: &[f64], terms: Terms, grad: &mut [f64]) -> Result<f64, MathError> {
    let check = Check {
        function: "beta_proportion_lpdf",
    };
    let [y, mu, kappa] = check.args(args, grad)?;
    check.positive("Location parameter", mu)?;
    check.less("Location parameter", mu, 1.0)?;
    check.positive_finite("Precision parameter", kappa)?;
    check.bounded("Random variable", y, 0.0, 1.0)?;
    grad[..3].fill(0.0);
    if !terms.include(all(3)) {
        return Ok(0.0);
    }
    let a = mu * kappa;
    let b = kappa - a;
    let log_y = y.ln();
    let log1m_y = log1m(y);
    let mut lp = 0.0;
    if terms.include(bit(2)) {
        lp += lgamma(kappa);
        grad[2] += digamma(kappa);
    }
    if terms.include(bit(1) | bit(2)) {
        lp -= lgamma(a) + lgamma(b);
        let (da, db) = (digamma(a), digamma(b));
        grad[1] -= kappa * (da - db);
        grad[2] -= mu * da + (1.0 - mu) * db;
    }
    lp += (a - 1.0) * log_y + (b - 1.0) * log1m_y;
    grad[0] += (a - 1.0) / y - (b - 1.0) / (1.0 - y);
    grad[1] += kappa * (log_y - log1m_y);
    grad[2] += mu * log_y + (1.0 - mu) * log1m_y;
    Ok(lp)
}

/// von_mises(y | mu, kappa)
pub fn von_mises(args: &[f64], terms: Terms, grad: &mut [f64]) -> Result<f64, MathError> {
    let check = Check {
        function: "von_mises_lpdf",
    };
    let [y, mu, kappa] = check.args(args, grad)?;
    check.finite("Random variable", y)?;
    check.finite("Location parameter", mu)?;
    check.nonnegative("Scale parameter", kappa)?;
    check.finite("Scale parameter", kappa)?;
    grad[..3].fill(0.0);
    if !terms.include(all(3)) {
        return Ok(0.0);
    }
    let mut lp = 0.0;
    if terms.include(0) {
        lp -= LN_2 + std::f64::consts::PI.ln();
    }
    if terms.include(bit(2)) {
        lp -= crate::special::log_modified_bessel_first_kind(0.0, kappa);
        grad[2] -= crate::special::log_modified_bessel_first_kind_dz(0.0, kappa);
    }
    let diff = mu - y;
    lp += kappa * diff.cos();
    grad[0] = kappa * diff.sin();
    grad[1] = -kappa * diff.sin();
    grad[2] += diff.cos();
    Ok(lp)
}

/// skew_double_exponential(y | mu, sigma, tau): `log 2 + log τ + log(1 − τ) − log σ
/// − 2 [(y < μ) (1 − τ)(μ − y) + (y ≥ μ) τ (y − μ)] / σ`. Terms as Stan Math: `log 2` without
/// `propto`, `log σ` when sigma varies, `log τ + log(1 − τ)` when tau varies, the kernel when
/// anything varies.
pub fn skew_double_exponential(
    args: &[f64],
    terms: Terms,
    grad: &mut [f64],
) -> Result<f64, MathError> {
    let check = Check {
        function: "skew_double_exponential_lpdf",
    };
    let [y, mu, sigma, tau] = check.args(args, grad)?;
    grad[..4].fill(0.0);
    if !terms.include(all(4)) {
        return Ok(0.0);
    }
    check.not_nan("Random variable", y)?;
    check.finite("Location parameter", mu)?;
    check.positive_finite("Scale parameter", sigma)?;
    check.bounded("Skewness parameter", tau, 0.0, 1.0)?;
    let inv_sigma = 1.0 / sigma;
    let diff = y - mu;
    let sign = if diff > 0.0 {
        1.0
    } else if diff < 0.0 {
        -1.0
    } else {
        0.0
    };
    // Stan: step(−sign) is 1 unless y > μ.
    let below = if sign > 0.0 { 0.0 } else { 1.0 };
    let abs_over = diff.abs() * inv_sigma;
    let expo = (below + sign * tau) * abs_over;
    let mut lp = -2.0 * expo;
    if terms.include(0) {
        lp += LN_2;
    }
    if terms.include(bit(2)) {
        lp -= sigma.ln();
    }
    if terms.include(bit(3)) {
        lp += tau.ln() + log1m(tau);
    }
    let deriv = 2.0 * (below + sign * tau) * sign * inv_sigma;
    grad[0] = -deriv;
    grad[1] = deriv;
    grad[2] = 2.0 * expo * inv_sigma
        - if terms.include(bit(2)) {
            inv_sigma
        } else {
            0.0
        };
    grad[3] = -2.0 * sign * abs_over
        + if terms.include(bit(3)) {
            1.0 / tau - 1.0 / (1.0 - tau)
        } else {
            0.0
        };
    Ok(lp)
}

/// loglogistic(y | alpha, beta) (α scale, β shape): `(β − 1) log y − 2 log1p((y/α)^β)`, kept
/// whenever anything varies, and `log β − β log α` when α or β varies, as Stan Math (no
/// constant-only term).
pub fn loglogistic(args: &[f64], terms: Terms, grad: &mut [f64]) -> Result<f64, MathError> {
    let check = Check {
        function: "loglogistic_lpdf",
    };
    let [y, alpha, beta] = check.args(args, grad)?;
    check.positive_finite("Scale parameter", alpha)?;
    check.positive_finite("Shape parameter", beta)?;
    check.bounded("Random variable", y, 0.0, f64::INFINITY)?;
    grad[..3].fill(0.0);
    if !terms.include(all(3)) {
        return Ok(0.0);
    }
    let log_y = y.ln();
    let log_alpha = alpha.ln();
    // t = (y/α)^β and s = t / (1 + t), on the log scale so large ratios stay finite.
    let log_ratio = log_y - log_alpha;
    let log_t = beta * log_ratio;
    let s = crate::special::inv_logit(log_t);
    let mut lp = (beta - 1.0) * log_y - 2.0 * crate::special::log1p_exp(log_t);
    grad[0] = (beta - 1.0) / y - 2.0 * beta * s / y;
    grad[1] = 2.0 * beta * s / alpha;
    grad[2] = log_y - 2.0 * s * log_ratio;
    if terms.include(bit(1) | bit(2)) {
        lp += beta.ln() - beta * log_alpha;
        grad[1] -= beta / alpha;
        grad[2] += 1.0 / beta - log_alpha;
    }
    Ok(lp)
}
