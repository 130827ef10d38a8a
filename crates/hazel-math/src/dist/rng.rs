//! Random number generators on hazel's [`StreamRng`], written here on raw uniforms and normals
//! so that draws never change with a dependency update.

use super::{Check, MathError};
use crate::special::{inv_logit, lgamma};
use hazel_rng::StreamRng;
use std::f64::consts::PI;

/// normal_rng(mu, sigma)
pub fn normal(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "normal_rng",
    };
    let [mu, sigma] = check.params(params)?;
    check.finite("Location parameter", mu)?;
    check.positive_finite("Scale parameter", sigma)?;
    Ok(mu + sigma * rng.normal())
}

/// std_normal_rng()
pub fn std_normal(_params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    Ok(rng.normal())
}

/// cauchy_rng(mu, sigma) by inversion.
pub fn cauchy(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "cauchy_rng",
    };
    let [mu, sigma] = check.params(params)?;
    check.finite("Location parameter", mu)?;
    check.positive_finite("Scale parameter", sigma)?;
    Ok(mu + sigma * (PI * (rng.uniform_open() - 0.5)).tan())
}

/// Largest Poisson rate Stan's `poisson_rng` accepts (2^30).
const POISSON_MAX_RATE: f64 = 1_073_741_824.0;

/// poisson_rng(lambda)
pub fn poisson(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "poisson_rng",
    };
    let [lambda] = check.params(params)?;
    check.nonnegative("Rate parameter", lambda)?;
    if lambda >= POISSON_MAX_RATE {
        return Err(check_less(
            check,
            "Rate parameter",
            lambda,
            POISSON_MAX_RATE,
        ));
    }
    Ok(poisson_draw(lambda, rng))
}

fn check_less(check: Check, what: &str, x: f64, high: f64) -> MathError {
    MathError::new(format!(
        "{}: {} is {}, but must be less than {}",
        check.function,
        what,
        super::format_stan_number(x),
        super::format_stan_number(high)
    ))
}

/// A Poisson draw: multiplication of uniforms for small rates, Hörmann's transformed rejection
/// with squeeze (PTRS, 1993) otherwise.
pub(crate) fn poisson_draw(lambda: f64, rng: &mut StreamRng) -> f64 {
    if lambda == 0.0 {
        return 0.0;
    }
    if lambda < 10.0 {
        let limit = (-lambda).exp();
        let mut k = 0.0;
        let mut product = rng.uniform();
        while product > limit {
            k += 1.0;
            product *= rng.uniform();
        }
        return k;
    }
    let slam = lambda.sqrt();
    let loglam = lambda.ln();
    let b = 0.931 + 2.53 * slam;
    let a = -0.059 + 0.02483 * b;
    let inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
    let v_r = 0.9277 - 3.6224 / (b - 2.0);
    loop {
        let u = rng.uniform() - 0.5;
        let v = rng.uniform();
        let us = 0.5 - u.abs();
        let k = ((2.0 * a / us + b) * u + lambda + 0.43).floor();
        if us >= 0.07 && v <= v_r {
            return k;
        }
        if k < 0.0 || (us < 0.013 && v > us) {
            continue;
        }
        if v.ln() + inv_alpha.ln() - (a / (us * us) + b).ln()
            <= -lambda + k * loglam - lgamma(k + 1.0)
        {
            return k;
        }
    }
}

fn positive_finite_param(function: &'static str, what: &str, x: f64) -> Result<(), MathError> {
    Check { function }.positive_finite(what, x)
}

/// A standard gamma(shape, 1) draw: Marsaglia & Tsang (2000), with the boost
/// gamma(a) = gamma(a + 1) U^{1/a} for shape < 1.
pub(crate) fn gamma_draw(shape: f64, rng: &mut StreamRng) -> f64 {
    if shape < 1.0 {
        let boost = rng.uniform_open().powf(1.0 / shape);
        return gamma_draw(shape + 1.0, rng) * boost;
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = rng.normal();
        let v = 1.0 + c * x;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        let u = rng.uniform_open();
        if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
            return d * v;
        }
    }
}

/// A binomial(n, p) draw: inversion for small n·min(p, 1-p), Hörmann's BTRS (1993) otherwise.
pub(crate) fn binomial_draw(n: f64, p: f64, rng: &mut StreamRng) -> f64 {
    if p > 0.5 {
        return n - binomial_draw(n, 1.0 - p, rng);
    }
    if p == 0.0 || n == 0.0 {
        return 0.0;
    }
    let q = 1.0 - p;
    if n * p < 10.0 {
        // Sequential inversion from 0.
        let ratio = p / q;
        let mut prob = (n * q.ln()).exp();
        let mut u = rng.uniform();
        let mut k = 0.0;
        loop {
            if u < prob || k >= n {
                return k;
            }
            u -= prob;
            prob *= ratio * (n - k) / (k + 1.0);
            k += 1.0;
            if prob == 0.0 && u > 0.0 {
                // Numerical tail exhausted: restart rather than return a wrong value.
                u = rng.uniform();
                prob = (n * q.ln()).exp();
                k = 0.0;
            }
        }
    }
    let spq = (n * p * q).sqrt();
    let b = 1.15 + 2.53 * spq;
    let a = -0.0873 + 0.0248 * b + 0.01 * p;
    let c = n * p + 0.5;
    let v_r = 0.92 - 4.2 / b;
    let alpha = (2.83 + 5.1 / b) * spq;
    let lpq = (p / q).ln();
    let m = ((n + 1.0) * p).floor();
    let h = lgamma(m + 1.0) + lgamma(n - m + 1.0);
    loop {
        let u = rng.uniform() - 0.5;
        let v = rng.uniform();
        let us = 0.5 - u.abs();
        let k = ((2.0 * a / us + b) * u + c).floor();
        if k < 0.0 || k > n {
            continue;
        }
        if us >= 0.07 && v <= v_r {
            return k;
        }
        let v = (v * alpha / (a / (us * us) + b)).ln();
        if v <= h - lgamma(k + 1.0) - lgamma(n - k + 1.0) + (k - m) * lpq {
            return k;
        }
    }
}

/// lognormal_rng(mu, sigma)
pub fn lognormal(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "lognormal_rng",
    };
    let [mu, sigma] = check.params(params)?;
    check.finite("Location parameter", mu)?;
    check.positive_finite("Scale parameter", sigma)?;
    Ok((mu + sigma * rng.normal()).exp())
}

/// student_t_rng(nu, mu, sigma)
pub fn student_t(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "student_t_rng",
    };
    let [nu, mu, sigma] = check.params(params)?;
    check.positive_finite("Degrees of freedom parameter", nu)?;
    check.finite("Location parameter", mu)?;
    check.positive_finite("Scale parameter", sigma)?;
    let z = rng.normal();
    let chi2 = 2.0 * gamma_draw(0.5 * nu, rng);
    Ok(mu + sigma * z / (chi2 / nu).sqrt())
}

/// exponential_rng(beta)
pub fn exponential(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "exponential_rng",
    };
    let [beta] = check.params(params)?;
    check.positive_finite("Inverse scale parameter", beta)?;
    Ok(rng.exponential() / beta)
}

/// gamma_rng(alpha, beta)
pub fn gamma(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "gamma_rng",
    };
    let [alpha, beta] = check.params(params)?;
    check.positive_finite("Shape parameter", alpha)?;
    check.positive_finite("Inverse scale parameter", beta)?;
    Ok(gamma_draw(alpha, rng) / beta)
}

/// inv_gamma_rng(alpha, beta)
pub fn inv_gamma(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "inv_gamma_rng",
    };
    let [alpha, beta] = check.params(params)?;
    check.positive_finite("Shape parameter", alpha)?;
    check.positive_finite("Scale parameter", beta)?;
    Ok(beta / gamma_draw(alpha, rng))
}

/// beta_rng(a, b) as a ratio of gamma draws (on the log scale for small shapes).
pub fn beta(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "beta_rng",
    };
    let [a, b] = check.params(params)?;
    check.positive_finite("First shape parameter", a)?;
    check.positive_finite("Second shape parameter", b)?;
    Ok(beta_draw(a, b, rng))
}

pub(crate) fn beta_draw(a: f64, b: f64, rng: &mut StreamRng) -> f64 {
    let x = gamma_draw(a, rng);
    let y = gamma_draw(b, rng);
    if x + y > 0.0 {
        x / (x + y)
    } else {
        // Both underflowed (tiny shapes): the mass sits at 0 or 1 in proportion a : b.
        if rng.uniform() * (a + b) < a {
            1.0
        } else {
            0.0
        }
    }
}

/// beta_proportion_rng(mu, kappa)
pub fn beta_proportion(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "beta_proportion_rng",
    };
    let [mu, kappa] = check.params(params)?;
    check.positive("Location parameter", mu)?;
    check.less("Location parameter", mu, 1.0)?;
    check.positive_finite("Precision parameter", kappa)?;
    Ok(beta_draw(mu * kappa, (1.0 - mu) * kappa, rng))
}

/// uniform_rng(alpha, beta)
pub fn uniform(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "uniform_rng",
    };
    let [alpha, beta] = check.params(params)?;
    check.finite("Lower bound parameter", alpha)?;
    check.finite("Upper bound parameter", beta)?;
    check.greater("Upper bound parameter", beta, alpha)?;
    Ok(rng.uniform_range(alpha, beta))
}

/// double_exponential_rng(mu, sigma)
pub fn double_exponential(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "double_exponential_rng",
    };
    let [mu, sigma] = check.params(params)?;
    check.finite("Location parameter", mu)?;
    check.positive_finite("Scale parameter", sigma)?;
    let magnitude = rng.exponential() * sigma;
    Ok(if rng.bernoulli(0.5) {
        mu + magnitude
    } else {
        mu - magnitude
    })
}

/// logistic_rng(mu, sigma) by inversion.
pub fn logistic(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "logistic_rng",
    };
    let [mu, sigma] = check.params(params)?;
    check.finite("Location parameter", mu)?;
    check.positive_finite("Scale parameter", sigma)?;
    let u = rng.uniform_open();
    Ok(mu + sigma * (u / (1.0 - u)).ln())
}

/// weibull_rng(alpha, sigma) by inversion.
pub fn weibull(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "weibull_rng",
    };
    let [alpha, sigma] = check.params(params)?;
    check.positive_finite("Shape parameter", alpha)?;
    check.positive_finite("Scale parameter", sigma)?;
    Ok(sigma * rng.exponential().powf(1.0 / alpha))
}

/// frechet_rng(alpha, sigma) by inversion.
pub fn frechet(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "frechet_rng",
    };
    let [alpha, sigma] = check.params(params)?;
    check.positive_finite("Shape parameter", alpha)?;
    check.positive_finite("Scale parameter", sigma)?;
    Ok(sigma * rng.exponential().powf(-1.0 / alpha))
}

/// gumbel_rng(mu, beta) by inversion.
pub fn gumbel(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "gumbel_rng",
    };
    let [mu, beta] = check.params(params)?;
    check.finite("Location parameter", mu)?;
    check.positive_finite("Scale parameter", beta)?;
    Ok(mu - beta * rng.exponential().ln())
}

/// pareto_rng(y_min, alpha) by inversion.
pub fn pareto(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "pareto_rng",
    };
    let [y_min, alpha] = check.params(params)?;
    check.positive_finite("Scale parameter", y_min)?;
    check.positive_finite("Shape parameter", alpha)?;
    Ok(y_min * (rng.exponential() / alpha).exp())
}

/// pareto_type_2_rng(mu, lambda, alpha) by inversion.
pub fn pareto_type_2(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "pareto_type_2_rng",
    };
    let [mu, lambda, alpha] = check.params(params)?;
    check.finite("Location parameter", mu)?;
    check.positive_finite("Scale parameter", lambda)?;
    check.positive_finite("Shape parameter", alpha)?;
    Ok(mu + lambda * (rng.exponential() / alpha).exp_m1())
}

/// rayleigh_rng(sigma) by inversion.
pub fn rayleigh(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "rayleigh_rng",
    };
    let [sigma] = check.params(params)?;
    check.positive_finite("Scale parameter", sigma)?;
    Ok(sigma * (2.0 * rng.exponential()).sqrt())
}

/// chi_square_rng(nu)
pub fn chi_square(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "chi_square_rng",
    };
    let [nu] = check.params(params)?;
    check.positive_finite("Degrees of freedom parameter", nu)?;
    Ok(2.0 * gamma_draw(0.5 * nu, rng))
}

/// inv_chi_square_rng(nu)
pub fn inv_chi_square(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "inv_chi_square_rng",
    };
    let [nu] = check.params(params)?;
    check.positive_finite("Degrees of freedom parameter", nu)?;
    Ok(0.5 / gamma_draw(0.5 * nu, rng))
}

/// scaled_inv_chi_square_rng(nu, s)
pub fn scaled_inv_chi_square(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "scaled_inv_chi_square_rng",
    };
    let [nu, s] = check.params(params)?;
    check.positive_finite("Degrees of freedom parameter", nu)?;
    check.positive_finite("Scale parameter", s)?;
    Ok(nu * s * s / (2.0 * gamma_draw(0.5 * nu, rng)))
}

/// skew_normal_rng(xi, omega, alpha) by Azzalini's construction.
pub fn skew_normal(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "skew_normal_rng",
    };
    let [xi, omega, alpha] = check.params(params)?;
    check.finite("Location parameter", xi)?;
    check.positive_finite("Scale parameter", omega)?;
    check.finite("Shape parameter", alpha)?;
    let delta = alpha / (1.0 + alpha * alpha).sqrt();
    let u0 = rng.normal();
    let v = rng.normal();
    let u1 = delta * u0 + (1.0 - delta * delta).sqrt() * v;
    Ok(xi + omega * if u0 >= 0.0 { u1 } else { -u1 })
}

/// exp_mod_normal_rng(mu, sigma, lambda)
pub fn exp_mod_normal(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "exp_mod_normal_rng",
    };
    let [mu, sigma, lambda] = check.params(params)?;
    check.finite("Location parameter", mu)?;
    check.positive_finite("Scale parameter", sigma)?;
    check.positive_finite("Inv_scale parameter", lambda)?;
    Ok(mu + sigma * rng.normal() + rng.exponential() / lambda)
}

/// von_mises_rng(mu, kappa): Best & Fisher (1979), result in [mu - π, mu + π].
pub fn von_mises(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "von_mises_rng",
    };
    let [mu, kappa] = check.params(params)?;
    check.finite("Location parameter", mu)?;
    check.nonnegative("Scale parameter", kappa)?;
    check.finite("Scale parameter", kappa)?;
    if kappa < 1e-8 {
        return Ok(mu + PI * (2.0 * rng.uniform() - 1.0));
    }
    let r = 1.0 + (1.0 + 4.0 * kappa * kappa).sqrt();
    let rho = (r - (2.0 * r).sqrt()) / (2.0 * kappa);
    let s = (1.0 + rho * rho) / (2.0 * rho);
    loop {
        let u1 = rng.uniform();
        let z = (PI * u1).cos();
        let w = (1.0 + s * z) / (s + z);
        let y = kappa * (s - w);
        let u2 = rng.uniform_open();
        if y * (2.0 - y) - u2 > 0.0 || (y / u2).ln() + 1.0 - y >= 0.0 {
            let angle = w.clamp(-1.0, 1.0).acos();
            return Ok(mu + if rng.uniform() < 0.5 { -angle } else { angle });
        }
    }
}

/// poisson_log_rng(alpha)
pub fn poisson_log(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "poisson_log_rng",
    };
    let [alpha] = check.params(params)?;
    check.not_nan("Log rate parameter", alpha)?;
    let lambda = alpha.exp();
    if lambda >= POISSON_MAX_RATE {
        return Err(check_less(
            check,
            "Log rate parameter",
            alpha,
            POISSON_MAX_RATE.ln(),
        ));
    }
    Ok(poisson_draw(lambda, rng))
}

fn check_trials(check: Check, n: f64) -> Result<(), MathError> {
    check.integer("Population size parameter", n)?;
    check.nonnegative("Population size parameter", n)
}

/// binomial_rng(N, theta)
pub fn binomial(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "binomial_rng",
    };
    let [n, theta] = check.params(params)?;
    check_trials(check, n)?;
    check.bounded("Probability parameter", theta, 0.0, 1.0)?;
    Ok(binomial_draw(n, theta, rng))
}

/// binomial_logit_rng(N, alpha)
pub fn binomial_logit(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "binomial_logit_rng",
    };
    let [n, alpha] = check.params(params)?;
    check_trials(check, n)?;
    check.finite("Probability parameter", alpha)?;
    Ok(binomial_draw(n, inv_logit(alpha), rng))
}

/// bernoulli_rng(theta)
pub fn bernoulli(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "bernoulli_rng",
    };
    let [theta] = check.params(params)?;
    check.bounded("Probability parameter", theta, 0.0, 1.0)?;
    Ok(if rng.uniform() < theta { 1.0 } else { 0.0 })
}

/// bernoulli_logit_rng(alpha)
pub fn bernoulli_logit(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "bernoulli_logit_rng",
    };
    let [alpha] = check.params(params)?;
    check.finite("Logit transformed probability parameter", alpha)?;
    Ok(if rng.uniform() < inv_logit(alpha) {
        1.0
    } else {
        0.0
    })
}

fn poisson_from_rate(check: Check, rate: f64, rng: &mut StreamRng) -> Result<f64, MathError> {
    // NaN rates (from overflowing gamma draws) are refused too.
    if rate.is_nan() || rate >= POISSON_MAX_RATE {
        return Err(MathError::new(format!(
            "{}: Random number that came from gamma distribution is {}, but must be less than {}",
            check.function,
            super::format_stan_number(rate),
            super::format_stan_number(POISSON_MAX_RATE)
        )));
    }
    Ok(poisson_draw(rate, rng))
}

/// neg_binomial_rng(alpha, beta)
pub fn neg_binomial(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "neg_binomial_rng",
    };
    let [alpha, beta] = check.params(params)?;
    check.positive_finite("Shape parameter", alpha)?;
    check.positive_finite("Inverse scale parameter", beta)?;
    let rate = gamma_draw(alpha, rng) / beta;
    poisson_from_rate(check, rate, rng)
}

/// neg_binomial_2_rng(mu, phi)
pub fn neg_binomial_2(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "neg_binomial_2_rng",
    };
    let [mu, phi] = check.params(params)?;
    check.positive_finite("Location parameter", mu)?;
    check.positive_finite("Precision parameter", phi)?;
    let rate = gamma_draw(phi, rng) * mu / phi;
    poisson_from_rate(check, rate, rng)
}

/// neg_binomial_2_log_rng(eta, phi)
pub fn neg_binomial_2_log(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "neg_binomial_2_log_rng",
    };
    let [eta, phi] = check.params(params)?;
    check.finite("Log-location parameter", eta)?;
    check.positive_finite("Precision parameter", phi)?;
    let rate = gamma_draw(phi, rng) * eta.exp() / phi;
    poisson_from_rate(check, rate, rng)
}

/// beta_binomial_rng(N, alpha, beta)
pub fn beta_binomial(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "beta_binomial_rng",
    };
    let [n, a, b] = check.params(params)?;
    check_trials(check, n)?;
    positive_finite_param("beta_binomial_rng", "First prior sample size parameter", a)?;
    positive_finite_param("beta_binomial_rng", "Second prior sample size parameter", b)?;
    let p = beta_draw(a, b, rng);
    Ok(binomial_draw(n, p, rng))
}

/// discrete_range_rng(lower, upper)
pub fn discrete_range(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "discrete_range_rng",
    };
    let [lower, upper] = check.params(params)?;
    check.integer("Lower bound parameter", lower)?;
    check.integer("Upper bound parameter", upper)?;
    check.greater_or_equal("Upper bound parameter", upper, lower)?;
    let count = upper - lower + 1.0;
    Ok((lower + (rng.uniform() * count).floor()).min(upper))
}

/// hypergeometric_rng(N, a, b) by sequential inversion over the support.
pub fn hypergeometric(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "hypergeometric_rng",
    };
    let [big_n, a, b] = check.params(params)?;
    check.integer("Draws parameter", big_n)?;
    check.integer("Successes in population parameter", a)?;
    check.integer("Failures in population parameter", b)?;
    check.nonnegative("Successes in population parameter", a)?;
    check.nonnegative("Failures in population parameter", b)?;
    check.bounded("Draws parameter", big_n, 0.0, a + b)?;
    let low = (big_n - b).max(0.0);
    let high = big_n.min(a);
    let log_total = crate::special::lchoose(a + b, big_n);
    let mut u = rng.uniform();
    let mut k = low;
    while k < high {
        let p = (crate::special::lchoose(a, k) + crate::special::lchoose(b, big_n - k) - log_total)
            .exp();
        if u < p {
            return Ok(k);
        }
        u -= p;
        k += 1.0;
    }
    Ok(high)
}

/// skew_double_exponential_rng(mu, sigma, tau) by inversion of the cdf, as Stan.
pub fn skew_double_exponential(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "skew_double_exponential_rng",
    };
    let [mu, sigma, tau] = check.params(params)?;
    check.finite("Location parameter", mu)?;
    check.positive_finite("Scale parameter", sigma)?;
    check.bounded("Skewness parameter", tau, 0.0, 1.0)?;
    let z = rng.uniform_open();
    Ok(if z < tau {
        mu + (z / tau).ln() * sigma / (2.0 * (1.0 - tau))
    } else {
        mu - ((1.0 - z) / (1.0 - tau)).ln() * sigma / (2.0 * tau)
    })
}

/// beta_neg_binomial_rng(r, alpha, beta): `p ~ beta(α, β)`, then the failures before the r-th
/// success with success probability p (`neg_binomial(r, p / (1 − p))`), as Stan.
pub fn beta_neg_binomial(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "beta_neg_binomial_rng",
    };
    let [r, a, b] = check.params(params)?;
    check.positive_finite("Number of successes parameter", r)?;
    check.positive_finite("Prior success parameter", a)?;
    check.positive_finite("Prior failure parameter", b)?;
    let p = beta(&[a, b], rng)?;
    if p >= 1.0 {
        return Ok(0.0);
    }
    let odds = p / (1.0 - p);
    if odds.is_nan() || odds <= 0.0 {
        return Err(MathError::new(
            "beta_neg_binomial_rng: the beta draw underflowed to 0".to_string(),
        ));
    }
    neg_binomial(&[r, odds], rng)
}

/// loglogistic_rng(alpha, beta) by inversion of the cdf: `α (U / (1 − U))^(1/β)`.
pub fn loglogistic(params: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    let check = Check {
        function: "loglogistic_rng",
    };
    let [alpha, beta] = check.params(params)?;
    check.positive_finite("Scale parameter", alpha)?;
    check.positive_finite("Shape parameter", beta)?;
    let u = rng.uniform_open();
    Ok(alpha * (u / (1.0 - u)).powf(1.0 / beta))
}
