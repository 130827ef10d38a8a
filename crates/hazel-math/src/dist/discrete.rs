//! Log mass functions of discrete distributions with their partials (the variate's partial is
//! always 0).

use super::{all, bit, Check, MathError, Terms};
use crate::special::{digamma, inv_logit, lbeta, lchoose, lgamma, log1m, log1p_exp, multiply_log};

/// poisson(n | lambda)
pub fn poisson(args: &[f64], terms: Terms, grad: &mut [f64]) -> Result<f64, MathError> {
    let check = Check {
        function: "poisson_lpmf",
    };
    let [n, lambda] = check.args(args, grad)?;
    check.integer("Random variable", n)?;
    check.nonnegative("Random variable", n)?;
    check.nonnegative("Rate parameter", lambda)?;
    grad[..2].fill(0.0);
    if !terms.include(all(2)) {
        return Ok(0.0);
    }
    if lambda == f64::INFINITY || (lambda == 0.0 && n != 0.0) {
        return Ok(f64::NEG_INFINITY);
    }
    let mut lp = 0.0;
    if terms.include(0) {
        lp -= lgamma(n + 1.0);
    }
    if terms.include(bit(1)) {
        lp += multiply_log(n, lambda) - lambda;
        grad[1] = if lambda == 0.0 {
            -1.0
        } else {
            n / lambda - 1.0
        };
    }
    Ok(lp)
}

/// poisson_log(n | alpha)
pub fn poisson_log(args: &[f64], terms: Terms, grad: &mut [f64]) -> Result<f64, MathError> {
    let check = Check {
        function: "poisson_log_lpmf",
    };
    let [n, alpha] = check.args(args, grad)?;
    check.integer("Random variable", n)?;
    check.nonnegative("Random variable", n)?;
    check.not_nan("Log rate parameter", alpha)?;
    grad[..2].fill(0.0);
    if !terms.include(all(2)) {
        return Ok(0.0);
    }
    if alpha == f64::INFINITY || (alpha == f64::NEG_INFINITY && n != 0.0) {
        return Ok(f64::NEG_INFINITY);
    }
    let mut lp = 0.0;
    if terms.include(0) {
        lp -= lgamma(n + 1.0);
    }
    if terms.include(bit(1)) {
        let rate = alpha.exp();
        // n α with 0 · (-∞) = 0
        if n != 0.0 {
            lp += n * alpha;
        }
        lp -= rate;
        grad[1] = n - rate;
    }
    Ok(lp)
}

fn check_count(check: Check, what: &str, n: f64) -> Result<(), MathError> {
    check.integer(what, n)?;
    check.nonnegative(what, n)
}

/// binomial(n | N, theta)
pub fn binomial(args: &[f64], terms: Terms, grad: &mut [f64]) -> Result<f64, MathError> {
    let check = Check {
        function: "binomial_lpmf",
    };
    let [n, big_n, theta] = check.args(args, grad)?;
    check.integer("Successes variable", n)?;
    check.integer("Population size parameter", big_n)?;
    check.bounded("Successes variable", n, 0.0, big_n)?;
    check.nonnegative("Population size parameter", big_n)?;
    check.bounded("Probability parameter", theta, 0.0, 1.0)?;
    grad[..3].fill(0.0);
    if !terms.include(all(3)) {
        return Ok(0.0);
    }
    let mut lp = 0.0;
    if terms.include(0) {
        lp += lchoose(big_n, n);
    }
    if terms.include(bit(2)) {
        let failures = big_n - n;
        lp += multiply_log(n, theta) + multiply_log(failures, 1.0 - theta);
        let mut d = 0.0;
        if n != 0.0 {
            d += n / theta;
        }
        if failures != 0.0 {
            d -= failures / (1.0 - theta);
        }
        grad[2] = d;
    }
    Ok(lp)
}

/// binomial_logit(n | N, alpha)
pub fn binomial_logit(args: &[f64], terms: Terms, grad: &mut [f64]) -> Result<f64, MathError> {
    let check = Check {
        function: "binomial_logit_lpmf",
    };
    let [n, big_n, alpha] = check.args(args, grad)?;
    check.integer("Successes variable", n)?;
    check.integer("Population size parameter", big_n)?;
    check.bounded("Successes variable", n, 0.0, big_n)?;
    check.nonnegative("Population size parameter", big_n)?;
    check.finite("Probability parameter", alpha)?;
    grad[..3].fill(0.0);
    if !terms.include(all(3)) {
        return Ok(0.0);
    }
    let mut lp = 0.0;
    if terms.include(0) {
        lp += lchoose(big_n, n);
    }
    if terms.include(bit(2)) {
        // n log σ(α) + (N - n) log(1 - σ(α))
        lp -= n * log1p_exp(-alpha) + (big_n - n) * log1p_exp(alpha);
        grad[2] = n - big_n * inv_logit(alpha);
    }
    Ok(lp)
}

/// bernoulli(n | theta)
pub fn bernoulli(args: &[f64], terms: Terms, grad: &mut [f64]) -> Result<f64, MathError> {
    let check = Check {
        function: "bernoulli_lpmf",
    };
    let [n, theta] = check.args(args, grad)?;
    check.bounded("n", n, 0.0, 1.0)?;
    check.integer("n", n)?;
    check.bounded("Probability parameter", theta, 0.0, 1.0)?;
    grad[..2].fill(0.0);
    if !terms.include(all(2)) {
        return Ok(0.0);
    }
    if n == 1.0 {
        grad[1] = 1.0 / theta;
        Ok(theta.ln())
    } else {
        grad[1] = -1.0 / (1.0 - theta);
        Ok(log1m(theta))
    }
}

/// bernoulli_logit(n | alpha)
pub fn bernoulli_logit(args: &[f64], terms: Terms, grad: &mut [f64]) -> Result<f64, MathError> {
    let check = Check {
        function: "bernoulli_logit_lpmf",
    };
    let [n, alpha] = check.args(args, grad)?;
    check.bounded("n", n, 0.0, 1.0)?;
    check.integer("n", n)?;
    check.not_nan("Logit transformed probability parameter", alpha)?;
    grad[..2].fill(0.0);
    if !terms.include(all(2)) {
        return Ok(0.0);
    }
    // log σ(s α) with s = 2n - 1
    let s = 2.0 * n - 1.0;
    grad[1] = s * inv_logit(-s * alpha);
    Ok(-log1p_exp(-s * alpha))
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
        grad[1] += digamma(n + alpha) - digamma(alpha);
    }
    // α log(β/(1+β)) - n log(1+β)
    let log1p_inv_beta = (1.0 / beta).ln_1p();
    let log1p_beta = beta.ln_1p();
    lp -= alpha * log1p_inv_beta + n * log1p_beta;
    grad[1] -= log1p_inv_beta;
    grad[2] = alpha / (beta * (1.0 + beta)) - n / (1.0 + beta);
    Ok(lp)
}

/// neg_binomial_2(n | mu, phi)
pub fn neg_binomial_2(args: &[f64], terms: Terms, grad: &mut [f64]) -> Result<f64, MathError> {
    let check = Check {
        function: "neg_binomial_2_lpmf",
    };
    let [n, mu, phi] = check.args(args, grad)?;
    check_count(check, "Failures variable", n)?;
    check.positive_finite("Location parameter", mu)?;
    check.positive_finite("Precision parameter", phi)?;
    grad[..3].fill(0.0);
    if !terms.include(all(3)) {
        return Ok(0.0);
    }
    let mut lp = 0.0;
    if terms.include(bit(2)) {
        lp += lchoose(n + phi - 1.0, n);
        grad[2] += digamma(n + phi) - digamma(phi);
    }
    if terms.include(bit(1)) {
        lp += multiply_log(n, mu);
        grad[1] += n / mu;
    }
    let log_mu_plus_phi = (mu + phi).ln();
    let log1p_mu_over_phi = (mu / phi).ln_1p();
    lp += -phi * log1p_mu_over_phi - n * log_mu_plus_phi;
    grad[1] -= (n + phi) / (mu + phi);
    grad[2] += -log1p_mu_over_phi + (mu - n) / (mu + phi);
    Ok(lp)
}

/// neg_binomial_2_log(n | eta, phi)
pub fn neg_binomial_2_log(args: &[f64], terms: Terms, grad: &mut [f64]) -> Result<f64, MathError> {
    let check = Check {
        function: "neg_binomial_2_log_lpmf",
    };
    let [n, eta, phi] = check.args(args, grad)?;
    check_count(check, "Failures variable", n)?;
    check.finite("Log location parameter", eta)?;
    check.positive_finite("Precision parameter", phi)?;
    grad[..3].fill(0.0);
    if !terms.include(all(3)) {
        return Ok(0.0);
    }
    let log_phi = phi.ln();
    let u = eta - log_phi;
    let log1p_exp_u = log1p_exp(u);
    let s = inv_logit(u);
    let mut lp = 0.0;
    if terms.include(bit(2)) {
        lp += lchoose(n + phi - 1.0, n);
        grad[2] += digamma(n + phi) - digamma(phi);
    }
    if terms.include(bit(1)) {
        lp += n * eta;
        grad[1] += n;
    }
    lp += -phi * log1p_exp_u - n * (log_phi + log1p_exp_u);
    grad[1] -= (n + phi) * s;
    grad[2] += -log1p_exp_u + s * (1.0 + n / phi) - n / phi;
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
