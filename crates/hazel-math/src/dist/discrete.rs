//! Log mass functions of discrete distributions with their partials (the variate's partial is
//! always 0); the families the op graph also evaluates element by element live in
//! [`super::kernel`].

use super::{all, bit, Check, MathError, Terms};
use crate::special::{digamma, digamma_shift, lbeta, lchoose};

fn check_count(check: Check, what: &str, n: f64) -> Result<(), MathError> {
    check.integer(what, n)?;
    check.nonnegative(what, n)
}

/// neg_binomial(n | alpha, beta)
pub fn neg_binomial(args: &[f64], terms: Terms, grad: &mut [f64]) -> Result<f64, MathError> {
    let check = Check {
        function: "neg_binomial_lpmf",
    };
    let [n, alpha, beta] = check.args(args, grad)?;
    check_count(check, "Failures variable", n)?;
    check.positive_finite("Shape parameter", alpha)?;
    check.positive_finite("Inverse scale parameter", beta)?;
    grad[..3].fill(0.0);
    if !terms.include(all(3)) {
        return Ok(0.0);
    }
    let mut lp = 0.0;
    if terms.include(bit(1)) {
        lp += lchoose(n + alpha - 1.0, n);
        grad[1] += digamma_shift(alpha, n);
    }
    // α log(β/(1+β)) - n log(1+β)
    let log1p_inv_beta = (1.0 / beta).ln_1p();
    let log1p_beta = beta.ln_1p();
    lp -= alpha * log1p_inv_beta + n * log1p_beta;
    grad[1] -= log1p_inv_beta;
    grad[2] = alpha / (beta * (1.0 + beta)) - n / (1.0 + beta);
    Ok(lp)
}

/// beta_binomial(n | N, alpha, beta)
pub fn beta_binomial(args: &[f64], terms: Terms, grad: &mut [f64]) -> Result<f64, MathError> {
    let check = Check {
        function: "beta_binomial_lpmf",
    };
    let [n, big_n, a, b] = check.args(args, grad)?;
    check.integer("Successes variable", n)?;
    check_count(check, "Population size parameter", big_n)?;
    check.positive_finite("First prior sample size parameter", a)?;
    check.positive_finite("Second prior sample size parameter", b)?;
    grad[..4].fill(0.0);
    if !terms.include(all(4)) {
        return Ok(0.0);
    }
    if n < 0.0 || n > big_n {
        return Ok(f64::NEG_INFINITY);
    }
    let mut lp = 0.0;
    if terms.include(0) {
        lp += lchoose(big_n, n);
    }
    if terms.include(bit(2) | bit(3)) {
        lp += lbeta(n + a, big_n - n + b) - lbeta(a, b);
        let d_total = digamma(big_n + a + b) - digamma(a + b);
        grad[2] = digamma(n + a) - digamma(a) - d_total;
        grad[3] = digamma(big_n - n + b) - digamma(b) - d_total;
    }
    Ok(lp)
}

/// discrete_range(y | lower, upper): uniform on the integers lower..=upper.
pub fn discrete_range(args: &[f64], terms: Terms, grad: &mut [f64]) -> Result<f64, MathError> {
    let check = Check {
        function: "discrete_range_lpmf",
    };
    let [y, lower, upper] = check.args(args, grad)?;
    check.integer("Random variable", y)?;
    check.integer("Lower bound parameter", lower)?;
    check.integer("Upper bound parameter", upper)?;
    check.greater_or_equal("Upper bound parameter", upper, lower)?;
    grad[..3].fill(0.0);
    // Every argument is an integer (data): under propto nothing is kept.
    if !terms.include(0) {
        return Ok(0.0);
    }
    if y < lower || y > upper {
        return Ok(f64::NEG_INFINITY);
    }
    Ok(-(upper - lower + 1.0).ln())
}

/// hypergeometric(n | N, a, b): n successes in N draws without replacement from a successes
/// and b failures.
pub fn hypergeometric(args: &[f64], terms: Terms, grad: &mut [f64]) -> Result<f64, MathError> {
    let check = Check {
        function: "hypergeometric_lpmf",
    };
    let [n, big_n, a, b] = check.args(args, grad)?;
    for (what, x) in [
        ("Successes variable", n),
        ("Draws parameter", big_n),
        ("Successes in population parameter", a),
        ("Failures in population parameter", b),
    ] {
        check.integer(what, x)?;
    }
    check.bounded("Successes variable", n, 0.0, a)?;
    check.bounded(
        "Draws parameter minus successes variable",
        big_n - n,
        0.0,
        b,
    )?;
    check.bounded("Draws parameter", big_n, 0.0, a + b)?;
    grad[..4].fill(0.0);
    if !terms.include(0) {
        return Ok(0.0);
    }
    Ok(lchoose(a, n) + lchoose(b, big_n - n) - lchoose(a + b, big_n))
}

/// beta_neg_binomial(n | r, alpha, beta): `lbeta(n + r, α + β) + lgamma(n + β) − lbeta(r, α)
/// − lgamma(β) − lgamma(n + 1)`. Terms as Stan Math: `lgamma(n + 1)` only without `propto`,
/// everything else whenever any parameter varies (Stan keeps each part even when the
/// parameters it depends on are data).
pub fn beta_neg_binomial(args: &[f64], terms: Terms, grad: &mut [f64]) -> Result<f64, MathError> {
    let check = Check {
        function: "beta_neg_binomial_lpmf",
    };
    let [n, r, a, b] = check.args(args, grad)?;
    check_count(check, "Failures variable", n)?;
    check.positive_finite("Number of successes parameter", r)?;
    check.positive_finite("Prior success parameter", a)?;
    check.positive_finite("Prior failure parameter", b)?;
    grad[..4].fill(0.0);
    if !terms.include(bit(1) | bit(2) | bit(3)) {
        return Ok(0.0);
    }
    let mut lp = 0.0;
    if terms.include(0) {
        lp -= crate::special::lgamma(n + 1.0);
    }
    lp += lbeta(n + r, a + b) + crate::special::lgamma(n + b)
        - lbeta(r, a)
        - crate::special::lgamma(b);
    let d_all = digamma(n + r + a + b);
    let d_ra = digamma(r + a);
    let d_ab = digamma(a + b);
    grad[1] = digamma(n + r) - d_all - (digamma(r) - d_ra);
    grad[2] = -d_all - (digamma(a) - d_ra) + d_ab;
    grad[3] = d_ab - d_all + digamma(n + b) - digamma(b);
    Ok(lp)
}
