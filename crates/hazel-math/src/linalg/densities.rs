//! Multivariate densities and mass functions, with gradients.
//!
//! Each returns the log density keeping exactly the terms Stan keeps for the given
//! [`Terms`](crate::dist::Terms) (argument bits in Stan's argument order, variate = bit 0), and
//! *adds* the partials of the returned value to the gradient slices that are `Some`. Matrices
//! are column-major (see [`crate::linalg`]).

// Negated comparisons are deliberate: a NaN must fail every check. Forward/adjoint pairs
// take each matrix with its sizes, which makes long argument lists unavoidable.
#![allow(clippy::neg_cmp_op_on_partial_ord, clippy::too_many_arguments)]

use super::{
    add_scaled, add_scaled_spd_inverse, check_symmetric, cholesky_lower_unchecked,
    solve_lower_in_place, solve_lower_transpose_in_place, spd_inverse_from_cholesky, TOLERANCE,
};
use crate::dist::{MathError, Terms};
use crate::special::{digamma, lbeta, lgamma};

const LOG_TWO_PI: f64 = 1.837_877_066_409_345_5;

fn check_finite(function: &str, what: &str, v: &[f64]) -> Result<(), MathError> {
    if let Some(i) = v.iter().position(|x| !x.is_finite()) {
        return Err(MathError::new(format!(
            "{function}: {what}[{}] is {}, but must be finite!",
            i + 1,
            v[i]
        )));
    }
    Ok(())
}

fn check_not_nan(function: &str, what: &str, v: &[f64]) -> Result<(), MathError> {
    if let Some(i) = v.iter().position(|x| x.is_nan()) {
        return Err(MathError::new(format!(
            "{function}: {what}[{}] is nan, but must not be nan!",
            i + 1
        )));
    }
    Ok(())
}

pub(crate) fn check_simplex(function: &str, what: &str, theta: &[f64]) -> Result<(), MathError> {
    if theta.is_empty() {
        return Err(MathError::new(format!(
            "{function}: {what} has size 0, but must have a non-zero size"
        )));
    }
    let s: f64 = theta.iter().sum();
    if !((s - 1.0).abs() <= TOLERANCE) {
        return Err(MathError::new(format!(
            "{function}: {what} is not a valid simplex. sum({what}) = {s}, but should be 1"
        )));
    }
    if let Some(i) = theta.iter().position(|x| !(*x >= 0.0)) {
        return Err(MathError::new(format!("{function}: {what} is not a valid simplex. {what}[{}] = {}, but should be greater than or equal to 0", i + 1, theta[i])));
    }
    Ok(())
}

/// Scratch length for [`multi_normal_cholesky_lpdf`] with dimension `n`.
pub fn multi_normal_cholesky_workspace_len(n: usize) -> usize {
    2 * n
}

/// `multi_normal_cholesky_lpdf(y | mu, L)` for `n_obs` observations of dimension `n`:
/// `y` is `n_obs × n` with each observation contiguous; `mu` is either one vector (length n,
/// shared) or `n_obs` vectors like `y`; `L` is `n × n` lower-triangular (column-major).
///
/// Terms (bits: y = 0, mu = 1, L = 2): `−½ n_obs n log 2π` only without `propto`;
/// `−n_obs Σ log L_ii` when L varies (or without `propto`); the quadratic form when anything
/// varies. Gradient slices have the shapes of their arguments. `ws` needs
/// [`multi_normal_cholesky_workspace_len`] entries.
#[allow(clippy::too_many_arguments)]
pub fn multi_normal_cholesky_lpdf(
    y: &[f64],
    mu: &[f64],
    l: &[f64],
    n: usize,
    n_obs: usize,
    terms: Terms,
    mut y_adj: Option<&mut [f64]>,
    mut mu_adj: Option<&mut [f64]>,
    mut l_adj: Option<&mut [f64]>,
    ws: &mut [f64],
) -> Result<f64, MathError> {
    const F: &str = "multi_normal_cholesky_lpdf";
    check_not_nan(F, "Random variable", &y[..n * n_obs])?;
    check_finite(F, "Location parameter", mu)?;
    check_not_nan(F, "Cholesky factor", &l[..n * n])?;
    let shared_mu = mu.len() == n;
    if !shared_mu && mu.len() != n * n_obs {
        return Err(MathError::new(format!(
            "{F}: location has {} elements, but {} or {} are needed",
            mu.len(),
            n,
            n * n_obs
        )));
    }
    let mut lp = 0.0;
    if n == 0 || n_obs == 0 {
        return Ok(0.0);
    }
    if terms.include(0) {
        lp -= 0.5 * LOG_TWO_PI * (n * n_obs) as f64;
    }
    if terms.include(1 << 2) {
        lp -= n_obs as f64 * (0..n).map(|i| l[i + i * n].ln()).sum::<f64>();
        if let Some(la) = l_adj.as_deref_mut() {
            for i in 0..n {
                la[i + i * n] -= n_obs as f64 / l[i + i * n];
            }
        }
    }
    if terms.include(0b111) {
        let (z, w) = ws[..2 * n].split_at_mut(n);
        for o in 0..n_obs {
            let m = if shared_mu {
                &mu[..n]
            } else {
                &mu[o * n..(o + 1) * n]
            };
            for i in 0..n {
                z[i] = y[o * n + i] - m[i];
            }
            solve_lower_in_place(l, n, z, 1); // z = L⁻¹ (y − μ)
            lp -= 0.5 * z.iter().map(|v| v * v).sum::<f64>();
            let wants_grad = y_adj.is_some() || mu_adj.is_some() || l_adj.is_some();
            if !wants_grad {
                continue;
            }
            w.copy_from_slice(z);
            solve_lower_transpose_in_place(l, n, w, 1); // w = L⁻ᵀ z = Σ⁻¹ (y − μ)
            if let Some(ya) = y_adj.as_deref_mut() {
                for i in 0..n {
                    ya[o * n + i] -= w[i];
                }
            }
            if let Some(ma) = mu_adj.as_deref_mut() {
                let base = if shared_mu { 0 } else { o * n };
                for i in 0..n {
                    ma[base + i] += w[i];
                }
            }
            if let Some(la) = l_adj.as_deref_mut() {
                // ∂(−½‖L⁻¹r‖²)/∂L = L⁻ᵀ z zᵀ = w zᵀ, lower triangle.
                for j in 0..n {
                    for i in j..n {
                        la[i + j * n] += w[i] * z[j];
                    }
                }
            }
        }
    }
    Ok(lp)
}

/// Scratch length for [`multi_normal_lpdf`] with dimension `n`.
pub fn multi_normal_workspace_len(n: usize) -> usize {
    2 * n * n + 2 * n
}

/// `multi_normal_lpdf(y | mu, Sigma)`, layouts as [`multi_normal_cholesky_lpdf`]; Σ is
/// symmetric positive definite (`n × n`). Terms: bits y = 0, mu = 1, Sigma = 2. The Σ gradient
/// is the symmetric one, `½(Σ⁻¹ r rᵀ Σ⁻¹ − n_obs Σ⁻¹)` summed over observations. `ws` needs
/// [`multi_normal_workspace_len`] entries.
#[allow(clippy::too_many_arguments)]
pub fn multi_normal_lpdf(
    y: &[f64],
    mu: &[f64],
    sigma: &[f64],
    n: usize,
    n_obs: usize,
    terms: Terms,
    y_adj: Option<&mut [f64]>,
    mu_adj: Option<&mut [f64]>,
    sigma_adj: Option<&mut [f64]>,
    ws: &mut [f64],
) -> Result<f64, MathError> {
    const F: &str = "multi_normal_lpdf";
    check_symmetric(F, "Covariance matrix", sigma, n)?;
    let (l, rest) = ws[..2 * n * n + 2 * n].split_at_mut(n * n);
    let (inv, inner) = rest.split_at_mut(n * n);
    cholesky_lower_unchecked(sigma, n, l).map_err(|_| {
        MathError::new(format!(
            "{F}: Covariance matrix is not symmetric positive definite"
        ))
    })?;
    // Value and the y, mu partials are those of the Cholesky form.
    let lp = multi_normal_cholesky_lpdf(y, mu, l, n, n_obs, terms, y_adj, mu_adj, None, inner)?;
    if let Some(sa) = sigma_adj {
        if n == 0 || n_obs == 0 {
            return Ok(lp);
        }
        // Σ̄ = ½ Σ_o w wᵀ − ½ n_obs Σ⁻¹ with w = Σ⁻¹ (y − μ): the symmetric gradient.
        if terms.include(1 << 2) {
            add_scaled_spd_inverse(sa, l, n, -(0.5 * n_obs as f64), inv);
        }
        if terms.include(0b111) {
            let shared_mu = mu.len() == n;
            let w = &mut inner[..n];
            for o in 0..n_obs {
                let m = if shared_mu {
                    &mu[..n]
                } else {
                    &mu[o * n..(o + 1) * n]
                };
                for i in 0..n {
                    w[i] = y[o * n + i] - m[i];
                }
                solve_lower_in_place(l, n, w, 1);
                solve_lower_transpose_in_place(l, n, w, 1);
                for j in 0..n {
                    for i in 0..n {
                        sa[i + j * n] += 0.5 * w[i] * w[j];
                    }
                }
            }
        }
    }
    Ok(lp)
}

/// `dirichlet_lpdf(theta | alpha)`, both length K. Terms (theta = 0, alpha = 1):
/// `lgamma(Σα) − Σ lgamma(α)` when alpha varies; `Σ (α−1) log θ` when either varies.
pub fn dirichlet_lpdf(
    theta: &[f64],
    alpha: &[f64],
    terms: Terms,
    mut theta_adj: Option<&mut [f64]>,
    mut alpha_adj: Option<&mut [f64]>,
) -> Result<f64, MathError> {
    const F: &str = "dirichlet_lpdf";
    if theta.len() != alpha.len() {
        return Err(MathError::new(format!(
            "{F}: size of probabilities ({}) and prior sample sizes ({}) must match",
            theta.len(),
            alpha.len()
        )));
    }
    if let Some(i) = alpha.iter().position(|a| !(*a > 0.0 && a.is_finite())) {
        return Err(MathError::new(format!(
            "{F}: prior sample sizes[{}] is {}, but must be positive finite!",
            i + 1,
            alpha[i]
        )));
    }
    check_simplex(F, "probabilities", theta)?;
    let mut lp = 0.0;
    if terms.include(1 << 1) {
        let sum_alpha: f64 = alpha.iter().sum();
        lp += lgamma(sum_alpha) - alpha.iter().map(|&a| lgamma(a)).sum::<f64>();
        if let Some(aa) = alpha_adj.as_deref_mut() {
            let d = digamma(sum_alpha);
            for i in 0..alpha.len() {
                aa[i] += d - digamma(alpha[i]);
            }
        }
    }
    if terms.include(0b11) {
        for i in 0..theta.len() {
            let log_t = theta[i].ln();
            // (α − 1) log θ with 0·log 0 = 0 (α = 1, θ = 0).
            if alpha[i] != 1.0 {
                lp += (alpha[i] - 1.0) * log_t;
            }
            if let Some(ta) = theta_adj.as_deref_mut() {
                ta[i] += (alpha[i] - 1.0) / theta[i];
            }
            if let Some(aa) = alpha_adj.as_deref_mut() {
                aa[i] += log_t;
            }
        }
    }
    Ok(lp)
}

/// The log normalising constant of the LKJ density of a K × K correlation matrix with shape
/// η (Lewandowski, Kurowicka & Joe 2009): `−log c_K(η)` with
/// `log c_K(η) = Σ_{k=1}^{K−1} [(2η − 2 + K − k)(K − k) log 2 + (K − k) lbeta(b_k, b_k)]`,
/// `b_k = η + (K − k − 1)/2`. Returns (value, d value / dη).
pub(crate) fn lkj_log_constant(eta: f64, k: usize) -> (f64, f64) {
    let kf = k as f64;
    let mut value = 0.0;
    let mut d_eta = 0.0;
    for i in 1..k {
        let m = kf - i as f64; // K − k
        let b = eta + 0.5 * (m - 1.0);
        value -= (2.0 * eta - 2.0 + m) * m * std::f64::consts::LN_2 + m * lbeta(b, b);
        d_eta -= 2.0 * m * std::f64::consts::LN_2 + m * 2.0 * (digamma(b) - digamma(2.0 * b));
    }
    (value, d_eta)
}

fn check_eta(function: &str, eta: f64) -> Result<(), MathError> {
    if !(eta > 0.0 && eta.is_finite()) {
        return Err(MathError::new(format!(
            "{function}: Shape parameter is {eta}, but must be positive finite!"
        )));
    }
    Ok(())
}

/// `lkj_corr_cholesky_lpdf(L | eta)` for a `K × K` Cholesky factor of a correlation matrix:
/// `const(η) + Σ_{i=1}^{K−1} (K − i − 1 + 2η − 2) log L_ii` (0-based i). Terms (L = 0,
/// eta = 1): the constant when eta varies; the sum when either varies.
pub fn lkj_corr_cholesky_lpdf(
    l: &[f64],
    k: usize,
    eta: f64,
    terms: Terms,
    l_adj: Option<&mut [f64]>,
    eta_adj: Option<&mut f64>,
) -> Result<f64, MathError> {
    const F: &str = "lkj_corr_cholesky_lpdf";
    check_eta(F, eta)?;
    for i in 0..k {
        if !(l[i + i * k] > 0.0) {
            return Err(MathError::new(format!(
                "{F}: Random variable is not a valid Cholesky factor: diagonal element {} is {}",
                i + 1,
                l[i + i * k]
            )));
        }
    }
    let mut lp = 0.0;
    let mut eta_grad = 0.0;
    if terms.include(1 << 1) {
        let (c, dc) = lkj_log_constant(eta, k);
        lp += c;
        eta_grad += dc;
    }
    if terms.include(0b11) {
        let mut l_adj = l_adj;
        for i in 1..k {
            let log_d = l[i + i * k].ln();
            let coef = (k - i - 1) as f64 + 2.0 * eta - 2.0;
            lp += coef * log_d;
            eta_grad += 2.0 * log_d;
            if let Some(la) = l_adj.as_deref_mut() {
                la[i + i * k] += coef / l[i + i * k];
            }
        }
    }
    if let Some(e) = eta_adj {
        *e += eta_grad;
    }
    Ok(lp)
}

/// `lkj_corr_lpdf(Omega | eta) = const(η) + (η − 1) log det Ω` for a `K × K` correlation
/// matrix. Terms (Omega = 0, eta = 1). The Ω gradient is the symmetric `(η − 1) Ω⁻¹`.
/// `ws` needs `2K²`.
pub fn lkj_corr_lpdf(
    omega: &[f64],
    k: usize,
    eta: f64,
    terms: Terms,
    omega_adj: Option<&mut [f64]>,
    eta_adj: Option<&mut f64>,
    ws: &mut [f64],
) -> Result<f64, MathError> {
    const F: &str = "lkj_corr_lpdf";
    check_eta(F, eta)?;
    check_symmetric(F, "Correlation matrix", omega, k)?;
    for i in 0..k {
        if !((omega[i + i * k] - 1.0).abs() <= TOLERANCE) {
            return Err(MathError::new(format!("{F}: Correlation matrix is not a valid correlation matrix: diagonal element {} is {}", i + 1, omega[i + i * k])));
        }
    }
    let (l, inv) = ws[..2 * k * k].split_at_mut(k * k);
    cholesky_lower_unchecked(omega, k, l)
        .map_err(|_| MathError::new(format!("{F}: Correlation matrix is not positive definite")))?;
    let mut lp = 0.0;
    let mut eta_grad = 0.0;
    if terms.include(1 << 1) {
        let (c, dc) = lkj_log_constant(eta, k);
        lp += c;
        eta_grad += dc;
    }
    if terms.include(0b11) {
        let log_det = 2.0 * (0..k).map(|i| l[i + i * k].ln()).sum::<f64>();
        lp += (eta - 1.0) * log_det;
        eta_grad += log_det;
        if let Some(oa) = omega_adj {
            add_scaled_spd_inverse(oa, l, k, eta - 1.0, inv);
        }
    }
    if let Some(e) = eta_adj {
        *e += eta_grad;
    }
    Ok(lp)
}

fn check_category(function: &str, y: i64, k: usize) -> Result<usize, MathError> {
    if y < 1 || y as usize > k {
        return Err(MathError::new(format!(
            "{function}: Number of categories is {y}, but must be in the interval [1, {k}]"
        )));
    }
    Ok((y - 1) as usize)
}

/// `categorical_lpmf(ys | theta)`: `Σ log θ_{y}` over the outcomes `ys` (1-based). Terms
/// (ys = 0, theta = 1): everything depends on theta, so under `propto` with constant theta the
/// result is 0.
pub fn categorical_lpmf(
    ys: &[i64],
    theta: &[f64],
    terms: Terms,
    theta_adj: Option<&mut [f64]>,
) -> Result<f64, MathError> {
    const F: &str = "categorical_lpmf";
    check_simplex(F, "Probabilities parameter", theta)?;
    for &y in ys {
        check_category(F, y, theta.len())?;
    }
    if !terms.include(1 << 1) {
        return Ok(0.0);
    }
    let mut lp = 0.0;
    let mut theta_adj = theta_adj;
    for &y in ys {
        let i = (y - 1) as usize;
        lp += theta[i].ln();
        if let Some(ta) = theta_adj.as_deref_mut() {
            ta[i] += 1.0 / theta[i];
        }
    }
    Ok(lp)
}

/// `categorical_logit_lpmf(ys | beta)`: `Σ (β_y − log_sum_exp(β))`.
pub fn categorical_logit_lpmf(
    ys: &[i64],
    beta: &[f64],
    terms: Terms,
    beta_adj: Option<&mut [f64]>,
) -> Result<f64, MathError> {
    const F: &str = "categorical_logit_lpmf";
    check_finite(F, "log odds parameter", beta)?;
    for &y in ys {
        check_category(F, y, beta.len())?;
    }
    if !terms.include(1 << 1) || ys.is_empty() {
        return Ok(0.0);
    }
    let lse = super::log_sum_exp(beta);
    let mut lp = 0.0;
    for &y in ys {
        lp += beta[(y - 1) as usize] - lse;
    }
    if let Some(ba) = beta_adj {
        let count = ys.len() as f64;
        for i in 0..beta.len() {
            ba[i] -= count * (beta[i] - lse).exp();
        }
        for &y in ys {
            ba[(y - 1) as usize] += 1.0;
        }
    }
    Ok(lp)
}

/// `multinomial_lpmf(ns | theta)`: `lgamma(N+1) − Σ lgamma(n_k+1)` (without `propto`) plus
/// `Σ n_k log θ_k` (when theta varies; `0·log 0 = 0`). Terms: ns = 0, theta = 1.
pub fn multinomial_lpmf(
    ns: &[i64],
    theta: &[f64],
    terms: Terms,
    theta_adj: Option<&mut [f64]>,
) -> Result<f64, MathError> {
    const F: &str = "multinomial_lpmf";
    if ns.len() != theta.len() {
        return Err(MathError::new(format!("{F}: Size of number of trials variable ({}) and rows of probabilities parameter ({}) must match in size", ns.len(), theta.len())));
    }
    if let Some(i) = ns.iter().position(|&n| n < 0) {
        return Err(MathError::new(format!(
            "{F}: Number of trials variable[{}] is {}, but must be nonnegative!",
            i + 1,
            ns[i]
        )));
    }
    check_simplex(F, "Probabilities parameter", theta)?;
    let mut lp = 0.0;
    if terms.include(0) {
        let total: i64 = ns.iter().sum();
        lp += lgamma(total as f64 + 1.0) - ns.iter().map(|&n| lgamma(n as f64 + 1.0)).sum::<f64>();
    }
    if terms.include(1 << 1) {
        let mut theta_adj = theta_adj;
        for i in 0..ns.len() {
            if ns[i] > 0 {
                lp += ns[i] as f64 * theta[i].ln();
                if let Some(ta) = theta_adj.as_deref_mut() {
                    ta[i] += ns[i] as f64 / theta[i];
                }
            }
        }
    }
    Ok(lp)
}

/// `multinomial_logit_lpmf(ns | beta) = multinomial_lpmf(ns | softmax(beta))`.
pub fn multinomial_logit_lpmf(
    ns: &[i64],
    beta: &[f64],
    terms: Terms,
    beta_adj: Option<&mut [f64]>,
) -> Result<f64, MathError> {
    const F: &str = "multinomial_logit_lpmf";
    if ns.len() != beta.len() {
        return Err(MathError::new(format!("{F}: Size of number of trials variable ({}) and rows of log-probabilities parameter ({}) must match in size", ns.len(), beta.len())));
    }
    if let Some(i) = ns.iter().position(|&n| n < 0) {
        return Err(MathError::new(format!(
            "{F}: Number of trials variable[{}] is {}, but must be nonnegative!",
            i + 1,
            ns[i]
        )));
    }
    check_finite(F, "log-probabilities parameter", beta)?;
    let total: i64 = ns.iter().sum();
    let mut lp = 0.0;
    if terms.include(0) {
        lp += lgamma(total as f64 + 1.0) - ns.iter().map(|&n| lgamma(n as f64 + 1.0)).sum::<f64>();
    }
    if terms.include(1 << 1) {
        let lse = super::log_sum_exp(beta);
        for i in 0..ns.len() {
            if ns[i] > 0 {
                lp += ns[i] as f64 * (beta[i] - lse);
            }
        }
        if let Some(ba) = beta_adj {
            for i in 0..ns.len() {
                ba[i] += ns[i] as f64 - total as f64 * (beta[i] - lse).exp();
            }
        }
    }
    Ok(lp)
}

// ---------------------------------------------------------------------------------------------
// Ordinal regression: ordered_logistic, ordered_probit.
// ---------------------------------------------------------------------------------------------

/// Checks one cutpoint vector as Stan does: non-empty, strictly increasing, finite.
fn check_cutpoints(function: &str, c: &[f64]) -> Result<(), MathError> {
    if c.is_empty() {
        return Err(MathError::new(format!(
            "{function}: Size of cut points parameter is 0, but must be greater than 0"
        )));
    }
    for i in 1..c.len() {
        if !(c[i] > c[i - 1]) {
            return Err(MathError::new(format!(
                "{function}: Cut-points is not a valid ordered vector. The element at {} is {}, but should be greater than the previous element, {}",
                i + 1,
                c[i],
                c[i - 1]
            )));
        }
    }
    check_finite(function, "Cut-points", c)
}

/// Shape checks shared by the ordinal families: `eta` has 1 or `ys.len()` elements, `cuts`
/// holds one cutpoint vector of length `k1` or `ys.len()` of them. Returns whether the cuts
/// are shared.
fn check_ordinal(
    function: &str,
    ys: &[i64],
    eta: &[f64],
    cuts: &[f64],
    k1: usize,
) -> Result<bool, MathError> {
    let n = ys.len();
    if eta.len() != 1 && eta.len() != n {
        return Err(MathError::new(format!(
            "{function}: Size of integers ({n}) and locations ({}) must match in size",
            eta.len()
        )));
    }
    let shared = cuts.len() == k1;
    if !shared && cuts.len() != n * k1 {
        return Err(MathError::new(format!(
            "{function}: Length of location variables ({n}) and number of cutpoint vectors ({}) must match in size",
            cuts.len() / k1.max(1)
        )));
    }
    check_finite(function, "Location parameter", eta)?;
    for (i, &y) in ys.iter().enumerate() {
        if y < 1 || y as usize > k1 + 1 {
            return Err(MathError::new(format!(
                "{function}: Random variable[{}] is {y}, but must be in the interval [1, {}]",
                i + 1,
                k1 + 1
            )));
        }
    }
    if shared {
        check_cutpoints(function, cuts)?;
    } else {
        for c in cuts.chunks(k1.max(1)) {
            check_cutpoints(function, c)?;
        }
    }
    Ok(shared)
}

/// `ordered_logistic_lpmf(ys | eta, c)`: outcome `y ∈ 1..K` with `K − 1` cutpoints,
/// `P(y) = logistic(η − c_{y−1}) − logistic(η − c_y)` (`c_0 = −∞`, `c_K = +∞`), computed as
/// Stan does: `−log1p_exp(η − c_1)`, `−log1p_exp(c_{K−1} − η)` and `log_inv_logit_diff` in
/// between. `eta` is one location or one per outcome; `cuts` one vector of length `k1` or one
/// per outcome (concatenated). Terms (ys = 0, eta = 1, cuts = 2): every term depends on eta
/// and cuts, so under `propto` with both constant the result is 0.
pub fn ordered_logistic_lpmf(
    ys: &[i64],
    eta: &[f64],
    cuts: &[f64],
    k1: usize,
    terms: Terms,
    mut eta_adj: Option<&mut [f64]>,
    mut cuts_adj: Option<&mut [f64]>,
) -> Result<f64, MathError> {
    use crate::special::{inv_logit, log1p_exp, log_inv_logit_diff};
    const F: &str = "ordered_logistic";
    let shared = check_ordinal(F, ys, eta, cuts, k1)?;
    if !terms.include(0b110) {
        return Ok(0.0);
    }
    let mut lp = 0.0;
    for (i, &y) in ys.iter().enumerate() {
        let ei = if eta.len() == 1 { 0 } else { i };
        let cb = if shared { 0 } else { i * k1 };
        let lam = eta[ei];
        let y = y as usize;
        // (d/dη, index of cut a, d/dc_a, index of cut b, d/dc_b)
        let (v, d_eta, da, db) = if y == 1 {
            let x = lam - cuts[cb];
            let s = inv_logit(x);
            (-log1p_exp(x), -s, Some((cb, s)), None)
        } else if y == k1 + 1 {
            let x = cuts[cb + k1 - 1] - lam;
            let s = inv_logit(x);
            (-log1p_exp(x), s, Some((cb + k1 - 1, -s)), None)
        } else {
            // log(σ(c_y − η) − σ(c_{y−1} − η)) with a = c_y − η > b = c_{y−1} − η.
            let a = cuts[cb + y - 1] - lam;
            let b = cuts[cb + y - 2] - lam;
            let v = log_inv_logit_diff(a, b);
            let em = (a - b).exp_m1();
            let d_a = 1.0 - inv_logit(a) + 1.0 / em;
            let d_b = -1.0 / em - inv_logit(b);
            (
                v,
                -(d_a + d_b),
                Some((cb + y - 1, d_a)),
                Some((cb + y - 2, d_b)),
            )
        };
        lp += v;
        if let Some(ea) = eta_adj.as_deref_mut() {
            ea[ei] += d_eta;
        }
        if let Some(ca) = cuts_adj.as_deref_mut() {
            for (j, d) in [da, db].into_iter().flatten() {
                ca[j] += d;
            }
        }
    }
    Ok(lp)
}

/// `ordered_probit_lpmf(ys | eta, c)`: `P(y) = Φ(c_y − η) − Φ(c_{y−1} − η)`, as Stan:
/// `std_normal_lcdf(c_1 − η)`, `std_normal_lcdf(η − c_{K−1})` and `log_diff_exp` of the two
/// lcdfs in between. Layouts and terms as [`ordered_logistic_lpmf`].
pub fn ordered_probit_lpmf(
    ys: &[i64],
    eta: &[f64],
    cuts: &[f64],
    k1: usize,
    terms: Terms,
    mut eta_adj: Option<&mut [f64]>,
    mut cuts_adj: Option<&mut [f64]>,
) -> Result<f64, MathError> {
    use crate::dist::cdf::std_normal_lcdf;
    use crate::special::log_diff_exp;
    const F: &str = "ordered_probit";
    let shared = check_ordinal(F, ys, eta, cuts, k1)?;
    if !terms.include(0b110) {
        return Ok(0.0);
    }
    let lcdf = |x: f64| -> Result<(f64, f64), MathError> {
        let mut g = [0.0];
        let v = std_normal_lcdf(&[x], &mut g)?;
        Ok((v, g[0]))
    };
    let mut lp = 0.0;
    for (i, &y) in ys.iter().enumerate() {
        let ei = if eta.len() == 1 { 0 } else { i };
        let cb = if shared { 0 } else { i * k1 };
        let lam = eta[ei];
        let y = y as usize;
        let (v, d_eta, da, db) = if y == 1 {
            let (v, d) = lcdf(cuts[cb] - lam)?;
            (v, -d, Some((cb, d)), None)
        } else if y == k1 + 1 {
            let (v, d) = lcdf(lam - cuts[cb + k1 - 1])?;
            (v, d, Some((cb + k1 - 1, -d)), None)
        } else {
            let (la, ga) = lcdf(cuts[cb + y - 1] - lam)?;
            let (lb, gb) = lcdf(cuts[cb + y - 2] - lam)?;
            let v = log_diff_exp(la, lb);
            // d/du log(Φ(u) − Φ(l)) = (dlogΦ(u)) e^{logΦ(u) − v}, likewise (negated) for l.
            let d_a = ga * (la - v).exp();
            let d_b = -gb * (lb - v).exp();
            (
                v,
                -(d_a + d_b),
                Some((cb + y - 1, d_a)),
                Some((cb + y - 2, d_b)),
            )
        };
        lp += v;
        if let Some(ea) = eta_adj.as_deref_mut() {
            ea[ei] += d_eta;
        }
        if let Some(ca) = cuts_adj.as_deref_mut() {
            for (j, d) in [da, db].into_iter().flatten() {
                ca[j] += d;
            }
        }
    }
    Ok(lp)
}

// ---------------------------------------------------------------------------------------------
// Multivariate Student-t and the precision-parameterised normal.
// ---------------------------------------------------------------------------------------------

const LOG_PI: f64 = 1.144_729_885_849_400_2;

fn check_location_shape(
    function: &str,
    mu: &[f64],
    n: usize,
    n_obs: usize,
) -> Result<bool, MathError> {
    let shared = mu.len() == n;
    if !shared && mu.len() != n * n_obs {
        return Err(MathError::new(format!(
            "{function}: Size of location parameter ({}) must be {n} or {}",
            mu.len(),
            n * n_obs
        )));
    }
    Ok(shared)
}

fn check_dof(function: &str, nu: f64) -> Result<(), MathError> {
    if nu.is_nan() {
        return Err(MathError::new(format!(
            "{function}: Degrees of freedom parameter is nan, but must not be nan!"
        )));
    }
    if !(nu > 0.0) {
        return Err(MathError::new(format!(
            "{function}: Degrees of freedom parameter is {nu}, but must be positive!"
        )));
    }
    Ok(())
}

/// Scratch length for [`multi_student_t_cholesky_lpdf`] with dimension `n`.
pub fn multi_student_t_cholesky_workspace_len(n: usize) -> usize {
    2 * n
}

/// `multi_student_t_cholesky_lpdf(y | nu, mu, L)` for `n_obs` observations of dimension `n`
/// (layouts as [`multi_normal_cholesky_lpdf`]), per observation
/// `lgamma((ν+n)/2) − lgamma(ν/2) − n/2 log ν − n/2 log π − Σ log L_ii
///  − (ν+n)/2 log1p(‖L⁻¹(y−μ)‖²/ν)`.
/// Terms (y = 0, nu = 1, mu = 2, L = 3), Stan's grouping: the lgamma and `log ν` terms when nu
/// varies, `log π` only without `propto`, `log L_ii` when L varies, the kernel when anything
/// varies. `ws` needs [`multi_student_t_cholesky_workspace_len`].
pub fn multi_student_t_cholesky_lpdf(
    y: &[f64],
    nu: f64,
    mu: &[f64],
    l: &[f64],
    n: usize,
    n_obs: usize,
    terms: Terms,
    mut y_adj: Option<&mut [f64]>,
    nu_adj: Option<&mut f64>,
    mut mu_adj: Option<&mut [f64]>,
    mut l_adj: Option<&mut [f64]>,
    ws: &mut [f64],
) -> Result<f64, MathError> {
    const F: &str = "multi_student_t_cholesky";
    check_dof(F, nu)?;
    if nu.is_infinite() {
        // Stan: the multivariate normal limit, with all its terms.
        let full = Terms {
            propto: false,
            varying: terms.varying,
        };
        return multi_normal_cholesky_lpdf(y, mu, l, n, n_obs, full, y_adj, mu_adj, l_adj, ws)
            .map_err(|e| MathError::new(e.message.replace("multi_normal_cholesky_lpdf", F)));
    }
    check_not_nan(F, "Random variable", &y[..n * n_obs])?;
    check_finite(F, "Location parameter", mu)?;
    check_finite(F, "Cholesky matrix", &l[..n * n])?;
    let shared_mu = check_location_shape(F, mu, n, n_obs)?;
    for i in 0..n {
        if !(l[i + i * n] > 0.0) {
            return Err(MathError::new(format!(
                "{F}: Cholesky matrix is not a valid Cholesky factor: diagonal element {} is {}",
                i + 1,
                l[i + i * n]
            )));
        }
    }
    if n == 0 || n_obs == 0 {
        return Ok(0.0);
    }
    let (nf, of) = (n as f64, n_obs as f64);
    let mut lp = 0.0;
    let mut d_nu = 0.0;
    if terms.include(1 << 1) {
        lp += of * (lgamma(0.5 * (nu + nf)) - lgamma(0.5 * nu) - 0.5 * nf * nu.ln());
        d_nu += of * (0.5 * digamma(0.5 * (nu + nf)) - 0.5 * digamma(0.5 * nu) - 0.5 * nf / nu);
    }
    if terms.include(0) {
        lp -= 0.5 * nf * LOG_PI * of;
    }
    if terms.include(1 << 3) {
        lp -= of * (0..n).map(|i| l[i + i * n].ln()).sum::<f64>();
        if let Some(la) = l_adj.as_deref_mut() {
            for i in 0..n {
                la[i + i * n] -= of / l[i + i * n];
            }
        }
    }
    if terms.include(0b1111) {
        let (z, w) = ws[..2 * n].split_at_mut(n);
        for o in 0..n_obs {
            let m = if shared_mu {
                &mu[..n]
            } else {
                &mu[o * n..(o + 1) * n]
            };
            for i in 0..n {
                z[i] = y[o * n + i] - m[i];
            }
            solve_lower_in_place(l, n, z, 1);
            let q: f64 = z.iter().map(|v| v * v).sum();
            let lg = (q / nu).ln_1p();
            lp -= 0.5 * (nu + nf) * lg;
            d_nu += -0.5 * lg + 0.5 * (nu + nf) * q / (nu * (nu + q));
            if y_adj.is_none() && mu_adj.is_none() && l_adj.is_none() {
                continue;
            }
            let s = (nu + nf) / (nu + q);
            w.copy_from_slice(z);
            solve_lower_transpose_in_place(l, n, w, 1); // Σ⁻¹ (y − μ)
            if let Some(ya) = y_adj.as_deref_mut() {
                for i in 0..n {
                    ya[o * n + i] -= s * w[i];
                }
            }
            if let Some(ma) = mu_adj.as_deref_mut() {
                let base = if shared_mu { 0 } else { o * n };
                for i in 0..n {
                    ma[base + i] += s * w[i];
                }
            }
            if let Some(la) = l_adj.as_deref_mut() {
                for j in 0..n {
                    for i in j..n {
                        la[i + j * n] += s * w[i] * z[j];
                    }
                }
            }
        }
    }
    if let Some(na) = nu_adj {
        *na += d_nu;
    }
    Ok(lp)
}

/// Scratch length for [`multi_student_t_lpdf`] with dimension `n`.
pub fn multi_student_t_workspace_len(n: usize) -> usize {
    2 * n * n + 2 * n
}

/// `multi_student_t_lpdf(y | nu, mu, Sigma)` with a symmetric positive-definite scale matrix:
/// the Cholesky form with `−½ log det Σ`; the Σ gradient is the symmetric
/// `½ Σ_o s_o w_o w_oᵀ − ½ n_obs Σ⁻¹` (`w = Σ⁻¹(y − μ)`, `s = (ν+n)/(ν+q)`). Terms as
/// [`multi_student_t_cholesky_lpdf`] with Sigma = bit 3. `ws` needs
/// [`multi_student_t_workspace_len`].
pub fn multi_student_t_lpdf(
    y: &[f64],
    nu: f64,
    mu: &[f64],
    sigma: &[f64],
    n: usize,
    n_obs: usize,
    terms: Terms,
    y_adj: Option<&mut [f64]>,
    nu_adj: Option<&mut f64>,
    mu_adj: Option<&mut [f64]>,
    sigma_adj: Option<&mut [f64]>,
    ws: &mut [f64],
) -> Result<f64, MathError> {
    const F: &str = "multi_student_t";
    check_dof(F, nu)?;
    if nu.is_infinite() {
        // Stan: `multi_normal_log(y, mu, Sigma)`, with all its terms.
        let full = Terms {
            propto: false,
            varying: terms.varying,
        };
        return multi_normal_lpdf(y, mu, sigma, n, n_obs, full, y_adj, mu_adj, sigma_adj, ws)
            .map_err(|e| MathError::new(e.message.replace("multi_normal_lpdf", F)));
    }
    check_finite(F, "Location parameter", mu)?;
    check_not_nan(F, "Random variable", &y[..n * n_obs])?;
    check_symmetric(F, "Scale parameter", sigma, n)?;
    let (l, rest) = ws[..2 * n * n + 2 * n].split_at_mut(n * n);
    let (inv, inner) = rest.split_at_mut(n * n);
    cholesky_lower_unchecked(sigma, n, l).map_err(|_| {
        MathError::new(format!(
            "{F}: LDLT_Factor of scale parameter is not positive definite"
        ))
    })?;
    // Value and the y, nu, mu partials are those of the Cholesky form.
    let lp = multi_student_t_cholesky_lpdf(
        y, nu, mu, l, n, n_obs, terms, y_adj, nu_adj, mu_adj, None, inner,
    )?;
    if let Some(sa) = sigma_adj {
        if n == 0 || n_obs == 0 {
            return Ok(lp);
        }
        if terms.include(1 << 3) {
            add_scaled_spd_inverse(sa, l, n, -(0.5 * n_obs as f64), inv);
        }
        if terms.include(0b1111) {
            let shared_mu = mu.len() == n;
            let nf = n as f64;
            let (z, w) = inner[..2 * n].split_at_mut(n);
            for o in 0..n_obs {
                let m = if shared_mu {
                    &mu[..n]
                } else {
                    &mu[o * n..(o + 1) * n]
                };
                for i in 0..n {
                    z[i] = y[o * n + i] - m[i];
                }
                solve_lower_in_place(l, n, z, 1);
                let q: f64 = z.iter().map(|v| v * v).sum();
                let s = (nu + nf) / (nu + q);
                w.copy_from_slice(z);
                solve_lower_transpose_in_place(l, n, w, 1);
                for j in 0..n {
                    for i in 0..n {
                        sa[i + j * n] += 0.5 * s * w[i] * w[j];
                    }
                }
            }
        }
    }
    Ok(lp)
}

/// Scratch length for [`multi_normal_prec_lpdf`] with dimension `n`.
pub fn multi_normal_prec_workspace_len(n: usize) -> usize {
    2 * n * n + n
}

/// `multi_normal_prec_lpdf(y | mu, Omega)` with a symmetric positive-definite precision
/// matrix: `−½ n log 2π + ½ log det Ω − ½ (y−μ)ᵀ Ω (y−μ)` per observation. Terms (y = 0,
/// mu = 1, Omega = 2): `log 2π` only without `propto`, `log det Ω` when Omega varies, the
/// quadratic form when anything varies. The Ω gradient is the symmetric
/// `½ n_obs Ω⁻¹ − ½ Σ_o r_o r_oᵀ`. `ws` needs [`multi_normal_prec_workspace_len`].
pub fn multi_normal_prec_lpdf(
    y: &[f64],
    mu: &[f64],
    omega: &[f64],
    n: usize,
    n_obs: usize,
    terms: Terms,
    mut y_adj: Option<&mut [f64]>,
    mut mu_adj: Option<&mut [f64]>,
    mut omega_adj: Option<&mut [f64]>,
    ws: &mut [f64],
) -> Result<f64, MathError> {
    const F: &str = "multi_normal_prec";
    check_finite(F, "Location parameter", mu)?;
    check_not_nan(F, "Random variable", &y[..n * n_obs])?;
    check_symmetric(F, "Precision matrix", omega, n)?;
    let shared_mu = check_location_shape(F, mu, n, n_obs)?;
    let (l, rest) = ws[..2 * n * n + n].split_at_mut(n * n);
    let (inv, r) = rest.split_at_mut(n * n);
    cholesky_lower_unchecked(omega, n, l).map_err(|_| {
        MathError::new(format!(
            "{F}: LDLT_Factor of precision parameter is not positive definite"
        ))
    })?;
    if n == 0 || n_obs == 0 {
        return Ok(0.0);
    }
    let of = n_obs as f64;
    let mut lp = 0.0;
    if terms.include(0) {
        lp -= 0.5 * LOG_TWO_PI * (n * n_obs) as f64;
    }
    if terms.include(1 << 2) {
        lp += of * (0..n).map(|i| l[i + i * n].ln()).sum::<f64>();
        if let Some(oa) = omega_adj.as_deref_mut() {
            add_scaled_spd_inverse(oa, l, n, 0.5 * of, inv);
        }
    }
    if terms.include(0b111) {
        for o in 0..n_obs {
            let m = if shared_mu {
                &mu[..n]
            } else {
                &mu[o * n..(o + 1) * n]
            };
            for i in 0..n {
                r[i] = y[o * n + i] - m[i];
            }
            let mut q = 0.0;
            for j in 0..n {
                // (Ω r)_j, reading Ω symmetrically as given.
                let wj: f64 = (0..n).map(|i| omega[j + i * n] * r[i]).sum();
                q += r[j] * wj;
                if let Some(ya) = y_adj.as_deref_mut() {
                    ya[o * n + j] -= wj;
                }
                if let Some(ma) = mu_adj.as_deref_mut() {
                    let base = if shared_mu { 0 } else { o * n };
                    ma[base + j] += wj;
                }
            }
            lp -= 0.5 * q;
            if let Some(oa) = omega_adj.as_deref_mut() {
                for j in 0..n {
                    for i in 0..n {
                        oa[i + j * n] -= 0.5 * r[i] * r[j];
                    }
                }
            }
        }
    }
    Ok(lp)
}

// ---------------------------------------------------------------------------------------------
// Dirichlet-multinomial.
// ---------------------------------------------------------------------------------------------

/// `dirichlet_multinomial_lpmf(ns | alpha)` with `N = Σ n_k > 0`:
/// `log N + lbeta(α₀, N) − Σ_{n_k > 0} (log n_k + lbeta(α_k, n_k))`, 0 when `N = 0`. Terms
/// (ns = 0, alpha = 1): as Stan, nothing when alpha is constant under `propto`; the
/// `log N − Σ log n_k` part only without `propto`.
pub fn dirichlet_multinomial_lpmf(
    ns: &[i64],
    alpha: &[f64],
    terms: Terms,
    alpha_adj: Option<&mut [f64]>,
) -> Result<f64, MathError> {
    const F: &str = "dirichlet_multinomial_lpmf";
    if ns.len() != alpha.len() {
        return Err(MathError::new(format!("{F}: Size of number of trials variable ({}) and rows of prior size parameter ({}) must match in size", ns.len(), alpha.len())));
    }
    if let Some(i) = ns.iter().position(|&n| n < 0) {
        return Err(MathError::new(format!(
            "{F}: Number of trials variable[{}] is {}, but must be nonnegative!",
            i + 1,
            ns[i]
        )));
    }
    if let Some(i) = alpha.iter().position(|a| !(*a > 0.0 && a.is_finite())) {
        return Err(MathError::new(format!(
            "{F}: Prior size parameter[{}] is {}, but must be positive finite!",
            i + 1,
            alpha[i]
        )));
    }
    if !terms.include(1 << 1) {
        return Ok(0.0);
    }
    let n_sum: i64 = ns.iter().sum();
    if n_sum == 0 {
        return Ok(0.0);
    }
    let nf = n_sum as f64;
    let a_sum: f64 = alpha.iter().sum();
    let mut lp = 0.0;
    if terms.include(0) {
        lp += nf.ln()
            - ns.iter()
                .filter(|&&n| n > 0)
                .map(|&n| (n as f64).ln())
                .sum::<f64>();
    }
    lp += lbeta(a_sum, nf);
    for (k, &n) in ns.iter().enumerate() {
        if n > 0 {
            lp -= lbeta(alpha[k], n as f64);
        }
    }
    if let Some(aa) = alpha_adj {
        let common = digamma(a_sum) - digamma(a_sum + nf);
        for (k, &n) in ns.iter().enumerate() {
            aa[k] += common;
            if n > 0 {
                aa[k] += digamma(alpha[k] + n as f64) - digamma(alpha[k]);
            }
        }
    }
    Ok(lp)
}

// ---------------------------------------------------------------------------------------------
// Wishart family.
// ---------------------------------------------------------------------------------------------

const HALF_LOG_TWO: f64 = 0.5 * std::f64::consts::LN_2;

/// The log multivariate gamma function `log Γ_k(x) = k(k−1)/4 log π + Σ_{j=1}^k lgamma(x + (1−j)/2)`
/// and its derivative.
pub fn lmgamma(k: usize, x: f64) -> (f64, f64) {
    let kf = k as f64;
    let mut v = kf * (kf - 1.0) * 0.25 * LOG_PI;
    let mut d = 0.0;
    for j in 1..=k {
        let a = x + (1.0 - j as f64) / 2.0;
        v += lgamma(a);
        d += digamma(a);
    }
    (v, d)
}

fn check_dof_greater(function: &str, nu: f64, k: usize) -> Result<(), MathError> {
    let low = k as f64 - 1.0;
    if !(nu > low) {
        return Err(MathError::new(format!(
            "{function}: Degrees of freedom parameter is {nu}, but must be greater than {low}"
        )));
    }
    Ok(())
}

/// Cholesky factor, `log det` and inverse of the SPD matrix `a`, into `l` and `inv`.
fn spd_factor(
    function: &str,
    what: &str,
    a: &[f64],
    k: usize,
    l: &mut [f64],
    inv: &mut [f64],
) -> Result<f64, MathError> {
    check_symmetric(function, what, a, k)?;
    cholesky_lower_unchecked(a, k, l).map_err(|_| {
        MathError::new(format!(
            "{function}: LDLT_Factor of {what} is not positive definite"
        ))
    })?;
    spd_inverse_from_cholesky(l, k, inv);
    Ok(2.0 * (0..k).map(|i| l[i + i * k].ln()).sum::<f64>())
}

fn check_cholesky_factor(function: &str, what: &str, l: &[f64], k: usize) -> Result<(), MathError> {
    for j in 0..k {
        if !(l[j + j * k] > 0.0) {
            return Err(MathError::new(format!(
                "{function}: {what} is not positive definite: diagonal element {} is {}",
                j + 1,
                l[j + j * k]
            )));
        }
        for i in 0..j {
            if l[i + j * k] != 0.0 {
                return Err(MathError::new(format!(
                    "{function}: {what} is not lower triangular; {what}[{},{}]={}",
                    i + 1,
                    j + 1,
                    l[i + j * k]
                )));
            }
        }
    }
    check_finite(function, what, &l[..k * k])
}

/// Scratch length of the Wishart densities with dimension `k`.
pub fn wishart_workspace_len(k: usize) -> usize {
    5 * k * k
}

/// `wishart_lpdf(W | nu, S)`, `k × k` SPD `W` and `S`:
/// `−νk/2 log 2 − log Γ_k(ν/2) − ν/2 log det S − ½ tr(S⁻¹W) + (ν−k−1)/2 log det W`.
/// Terms (W = 0, nu = 1, S = 2), Stan's grouping: the first two when nu varies, `log det S`
/// when nu or S varies, the trace when S or W varies, `log det W` when W or nu varies.
/// Matrix gradients are the symmetric ones. `ws` needs [`wishart_workspace_len`].
pub fn wishart_lpdf(
    w: &[f64],
    nu: f64,
    s: &[f64],
    k: usize,
    terms: Terms,
    w_adj: Option<&mut [f64]>,
    nu_adj: Option<&mut f64>,
    s_adj: Option<&mut [f64]>,
    ws: &mut [f64],
) -> Result<f64, MathError> {
    const F: &str = "wishart_lpdf";
    check_dof_greater(F, nu, k)?;
    let (lw, rest) = ws[..5 * k * k].split_at_mut(k * k);
    let (w_inv, rest) = rest.split_at_mut(k * k);
    let (ls, rest) = rest.split_at_mut(k * k);
    let (s_inv, t) = rest.split_at_mut(k * k);
    let logdet_w = spd_factor(F, "random variable", w, k, lw, w_inv)?;
    let logdet_s = spd_factor(F, "scale parameter", s, k, ls, s_inv)?;
    let kf = k as f64;
    let mut lp = 0.0;
    let mut d_nu = 0.0;
    if terms.include(1 << 1) {
        let (lm, dlm) = lmgamma(k, 0.5 * nu);
        lp -= nu * kf * HALF_LOG_TWO + lm;
        d_nu -= kf * HALF_LOG_TWO + 0.5 * dlm;
    }
    let (mut w_adj, mut s_adj) = (w_adj, s_adj);
    if terms.include(0b110) {
        lp -= 0.5 * nu * logdet_s;
        d_nu -= 0.5 * logdet_s;
        if let Some(sa) = s_adj.as_deref_mut() {
            add_scaled(&mut sa[..k * k], s_inv, -(0.5 * nu));
        }
    }
    if terms.include(0b101) {
        lp -= 0.5 * trace_inverse_product(s_inv, w, k, w_adj.as_deref_mut(), s_adj, t);
    }
    if terms.include(0b011) && nu != kf + 1.0 {
        lp += 0.5 * (nu - kf - 1.0) * logdet_w;
        d_nu += 0.5 * logdet_w;
        if let Some(wa) = &mut w_adj {
            add_scaled(&mut wa[..k * k], w_inv, 0.5 * (nu - kf - 1.0));
        }
    }
    if let Some(na) = nu_adj {
        *na += d_nu;
    }
    Ok(lp)
}

/// `inv_wishart_lpdf(W | nu, S)`:
/// `−log Γ_k(ν/2) + ν/2 log det S − (ν+k+1)/2 log det W − ½ tr(W⁻¹S) − νk/2 log 2`.
/// Terms (W = 0, nu = 1, S = 2), Stan's grouping (with its quirks): lmgamma when nu varies,
/// `log det S` and `νk/2 log 2` when nu or S varies, `log det W` when anything varies, the
/// trace when W or S varies. `ws` needs [`wishart_workspace_len`].
pub fn inv_wishart_lpdf(
    w: &[f64],
    nu: f64,
    s: &[f64],
    k: usize,
    terms: Terms,
    w_adj: Option<&mut [f64]>,
    nu_adj: Option<&mut f64>,
    s_adj: Option<&mut [f64]>,
    ws: &mut [f64],
) -> Result<f64, MathError> {
    const F: &str = "inv_wishart_lpdf";
    check_dof_greater(F, nu, k)?;
    let (lw, rest) = ws[..5 * k * k].split_at_mut(k * k);
    let (w_inv, rest) = rest.split_at_mut(k * k);
    let (ls, rest) = rest.split_at_mut(k * k);
    let (s_inv, t) = rest.split_at_mut(k * k);
    let logdet_w = spd_factor(F, "random variable", w, k, lw, w_inv)?;
    let logdet_s = spd_factor(F, "scale parameter", s, k, ls, s_inv)?;
    let kf = k as f64;
    let mut lp = 0.0;
    let mut d_nu = 0.0;
    let (mut w_adj, mut s_adj) = (w_adj, s_adj);
    if terms.include(1 << 1) {
        let (lm, dlm) = lmgamma(k, 0.5 * nu);
        lp -= lm;
        d_nu -= 0.5 * dlm;
    }
    if terms.include(0b110) {
        lp += 0.5 * nu * logdet_s - nu * kf * HALF_LOG_TWO;
        d_nu += 0.5 * logdet_s - kf * HALF_LOG_TWO;
        if let Some(sa) = s_adj.as_deref_mut() {
            add_scaled(&mut sa[..k * k], s_inv, 0.5 * nu);
        }
    }
    if terms.include(0b111) {
        lp -= 0.5 * (nu + kf + 1.0) * logdet_w;
        d_nu -= 0.5 * logdet_w;
        if let Some(wa) = w_adj.as_deref_mut() {
            add_scaled(&mut wa[..k * k], w_inv, -(0.5 * (nu + kf + 1.0)));
        }
    }
    if terms.include(0b101) {
        lp -= 0.5 * trace_inverse_product(w_inv, s, k, s_adj, w_adj, t);
    }
    if let Some(na) = nu_adj {
        *na += d_nu;
    }
    Ok(lp)
}

/// `tr(P⁻¹ Q)` for `k × k` matrices, given the symmetric `P⁻¹` as `p_inv`, adding the adjoints
/// of `−½ tr(P⁻¹ Q)`: `Q̄ −= ½ P⁻¹` and `P̄ += ½ P⁻¹ Q P⁻¹` (the product built in `t`, `k²`
/// entries). The trace of both [`wishart_lpdf`] (`tr(S⁻¹ W)`) and [`inv_wishart_lpdf`]
/// (`tr(W⁻¹ S)`).
fn trace_inverse_product(
    p_inv: &[f64],
    q: &[f64],
    k: usize,
    q_adj: Option<&mut [f64]>,
    p_adj: Option<&mut [f64]>,
    t: &mut [f64],
) -> f64 {
    let tr: f64 = (0..k)
        .map(|i| (0..k).map(|j| p_inv[i + j * k] * q[j + i * k]).sum::<f64>())
        .sum();
    if let Some(qa) = q_adj {
        add_scaled(&mut qa[..k * k], p_inv, -0.5);
    }
    if let Some(pa) = p_adj {
        for j in 0..k {
            for i in 0..k {
                let mut acc = 0.0;
                for a in 0..k {
                    let pq: f64 = (0..k).map(|b| p_inv[i + b * k] * q[b + a * k]).sum();
                    acc += pq * p_inv[a + j * k];
                }
                t[i + j * k] = acc;
            }
        }
        add_scaled(&mut pa[..k * k], t, 0.5);
    }
    tr
}

/// `a = L⁻¹ B` for lower-triangular `L` and `B` (both `k × k`), into `a`.
fn tri_solve_into(l: &[f64], b: &[f64], k: usize, a: &mut [f64]) {
    a[..k * k].copy_from_slice(&b[..k * k]);
    solve_lower_in_place(l, k, a, k);
}

/// Adds `c · m` (lower triangle only) into `adj`.
fn add_lower(adj: &mut [f64], m: &[f64], k: usize, c: f64) {
    for j in 0..k {
        for i in j..k {
            adj[i + j * k] += c * m[i + j * k];
        }
    }
}

/// Scratch length of the Cholesky-parameterised Wishart densities.
pub fn wishart_cholesky_workspace_len(k: usize) -> usize {
    2 * k * k
}

/// `−½‖A‖²` with `A = L⁻¹B` (both lower triangular) and, when asked, adds the partials
/// `−L⁻ᵀA` (for B) into `gb` and `L⁻ᵀAAᵀ` (for L) into `gl`, lower triangles.
fn half_frobenius(
    l: &[f64],
    b: &[f64],
    k: usize,
    gl: Option<&mut [f64]>,
    gb: Option<&mut [f64]>,
    ws: &mut [f64],
) -> f64 {
    let (a, t) = ws[..2 * k * k].split_at_mut(k * k);
    tri_solve_into(l, b, k, a);
    // A is lower triangular (L and B are); only its lower triangle counts.
    let mut v = 0.0;
    for j in 0..k {
        for i in j..k {
            v += a[i + j * k] * a[i + j * k];
        }
        for i in 0..j {
            a[i + j * k] = 0.0;
        }
    }
    if let Some(gb) = gb {
        t.copy_from_slice(a);
        solve_lower_transpose_in_place(l, k, t, k);
        add_lower(gb, t, k, -1.0);
    }
    if let Some(gl) = gl {
        // t = A Aᵀ, then L⁻ᵀ t.
        for j in 0..k {
            for i in 0..k {
                t[i + j * k] = (0..k).map(|m| a[i + m * k] * a[j + m * k]).sum();
            }
        }
        solve_lower_transpose_in_place(l, k, t, k);
        add_lower(gl, t, k, 1.0);
    }
    -0.5 * v
}

/// `k log 2 (1 − ν/2) − log Γ_k(ν/2)` and its `ν`-derivative: the constant of both
/// [`wishart_cholesky_lpdf`] and [`inv_wishart_cholesky_lpdf`].
fn wishart_cholesky_log_constant(k: usize, nu: f64) -> (f64, f64) {
    let kf = k as f64;
    let (lm, dlm) = lmgamma(k, 0.5 * nu);
    (
        kf * std::f64::consts::LN_2 * (1.0 - 0.5 * nu) - lm,
        -0.5 * kf * std::f64::consts::LN_2 - 0.5 * dlm,
    )
}

/// `wishart_cholesky_lpdf(L_W | nu, L_S)`: the density of the Cholesky factor of a Wishart
/// matrix, `k log 2 (1 − ν/2) − log Γ_k(ν/2) + Σ_i [−½‖(L_S⁻¹L_W)_{i·}‖² − ν log L_S,ii
/// + (ν − i − 1) log L_W,ii]` (0-based i). Terms (L_W = 0, nu = 1, L_S = 2): the first two
/// when nu varies, the rest when anything varies. `ws` needs [`wishart_cholesky_workspace_len`].
pub fn wishart_cholesky_lpdf(
    lw: &[f64],
    nu: f64,
    ls: &[f64],
    k: usize,
    terms: Terms,
    lw_adj: Option<&mut [f64]>,
    nu_adj: Option<&mut f64>,
    ls_adj: Option<&mut [f64]>,
    ws: &mut [f64],
) -> Result<f64, MathError> {
    const F: &str = "wishart_cholesky_lpdf";
    check_dof_greater(F, nu, k)?;
    check_cholesky_factor(F, "random variable", lw, k)?;
    check_cholesky_factor(F, "scale parameter", ls, k)?;
    let mut lp = 0.0;
    let mut d_nu = 0.0;
    if terms.include(1 << 1) {
        let (c, dc) = wishart_cholesky_log_constant(k, nu);
        lp += c;
        d_nu += dc;
    }
    if terms.include(0b111) {
        let (mut lw_adj, mut ls_adj) = (lw_adj, ls_adj);
        lp += half_frobenius(ls, lw, k, ls_adj.as_deref_mut(), lw_adj.as_deref_mut(), ws);
        for i in 0..k {
            let (a, b) = (lw[i + i * k], ls[i + i * k]);
            lp += (nu - i as f64 - 1.0) * a.ln() - nu * b.ln();
            d_nu += a.ln() - b.ln();
            if let Some(g) = lw_adj.as_deref_mut() {
                g[i + i * k] += (nu - i as f64 - 1.0) / a;
            }
            if let Some(g) = ls_adj.as_deref_mut() {
                g[i + i * k] -= nu / b;
            }
        }
    }
    if let Some(na) = nu_adj {
        *na += d_nu;
    }
    Ok(lp)
}

/// `inv_wishart_cholesky_lpdf(L_W | nu, L_S)`: `k log 2 (1 − ν/2) − log Γ_k(ν/2)
/// − ½‖L_W⁻¹L_S‖² − Σ_i (ν + 1 + i) log L_W,ii + ν Σ_i log L_S,ii` (0-based i). Terms as
/// [`wishart_cholesky_lpdf`].
pub fn inv_wishart_cholesky_lpdf(
    lw: &[f64],
    nu: f64,
    ls: &[f64],
    k: usize,
    terms: Terms,
    lw_adj: Option<&mut [f64]>,
    nu_adj: Option<&mut f64>,
    ls_adj: Option<&mut [f64]>,
    ws: &mut [f64],
) -> Result<f64, MathError> {
    const F: &str = "inv_wishart_cholesky_lpdf";
    check_dof_greater(F, nu, k)?;
    check_cholesky_factor(F, "Cholesky random variable", lw, k)?;
    check_cholesky_factor(F, "Cholesky Scale matrix", ls, k)?;
    let mut lp = 0.0;
    let mut d_nu = 0.0;
    if terms.include(1 << 1) {
        let (c, dc) = wishart_cholesky_log_constant(k, nu);
        lp += c;
        d_nu += dc;
    }
    if terms.include(0b111) {
        let (mut lw_adj, mut ls_adj) = (lw_adj, ls_adj);
        lp += half_frobenius(lw, ls, k, lw_adj.as_deref_mut(), ls_adj.as_deref_mut(), ws);
        for i in 0..k {
            let (a, b) = (lw[i + i * k], ls[i + i * k]);
            lp += nu * b.ln() - (nu + 1.0 + i as f64) * a.ln();
            d_nu += b.ln() - a.ln();
            if let Some(g) = lw_adj.as_deref_mut() {
                g[i + i * k] -= (nu + 1.0 + i as f64) / a;
            }
            if let Some(g) = ls_adj.as_deref_mut() {
                g[i + i * k] += nu / b;
            }
        }
    }
    if let Some(na) = nu_adj {
        *na += d_nu;
    }
    Ok(lp)
}

// ---------------------------------------------------------------------------------------------
// Multi-output Gaussian processes.
// ---------------------------------------------------------------------------------------------

/// Scratch length of [`multi_gp_cholesky_lpdf`] (`n` = points).
pub fn multi_gp_cholesky_workspace_len(n: usize) -> usize {
    2 * n
}

fn check_kernel_scales(function: &str, w: &[f64]) -> Result<(), MathError> {
    if let Some(i) = w.iter().position(|v| !(*v > 0.0 && v.is_finite())) {
        return Err(MathError::new(format!(
            "{function}: Kernel scales[{}] is {}, but must be positive finite!",
            i + 1,
            w[i]
        )));
    }
    Ok(())
}

/// `multi_gp_cholesky_lpdf(y | L, w)`: `y` is `m × n` (column-major; row i is output i over
/// the n points), `L` the `n × n` Cholesky factor of the kernel, `w` the m inverse scales:
/// `−½ m n log 2π − m Σ log L_jj + ½ n Σ log w_i − ½ Σ_i w_i ‖L⁻¹ y_i‖²`. Terms (y = 0, L = 1,
/// w = 2): `log 2π` without `propto`, `log L_jj` when L varies, `log w` when w varies, the
/// quadratic part when anything varies. `ws` needs [`multi_gp_cholesky_workspace_len`].
pub fn multi_gp_cholesky_lpdf(
    y: &[f64],
    l: &[f64],
    w: &[f64],
    m: usize,
    n: usize,
    terms: Terms,
    mut y_adj: Option<&mut [f64]>,
    mut l_adj: Option<&mut [f64]>,
    mut w_adj: Option<&mut [f64]>,
    ws: &mut [f64],
) -> Result<f64, MathError> {
    const F: &str = "multi_gp_cholesky_lpdf";
    if w.len() != m {
        return Err(MathError::new(format!("{F}: Size of random variable (rows y) ({m}) and Size of kernel scales (w) ({}) must match in size", w.len())));
    }
    check_finite(F, "Random variable", &y[..m * n])?;
    check_cholesky_factor(F, "Cholesky decomposition of kernel matrix", l, n)?;
    check_kernel_scales(F, w)?;
    if m == 0 {
        return Ok(0.0);
    }
    let (mf, nf) = (m as f64, n as f64);
    let mut lp = 0.0;
    if terms.include(0) {
        lp -= 0.5 * LOG_TWO_PI * mf * nf;
    }
    if terms.include(1 << 1) {
        lp -= mf * (0..n).map(|j| l[j + j * n].ln()).sum::<f64>();
        if let Some(la) = l_adj.as_deref_mut() {
            for j in 0..n {
                la[j + j * n] -= mf / l[j + j * n];
            }
        }
    }
    if terms.include(1 << 2) {
        lp += 0.5 * nf * w.iter().map(|v| v.ln()).sum::<f64>();
        if let Some(wa) = w_adj.as_deref_mut() {
            for i in 0..m {
                wa[i] += 0.5 * nf / w[i];
            }
        }
    }
    if terms.include(0b111) {
        let (z, v) = ws[..2 * n].split_at_mut(n);
        for i in 0..m {
            for j in 0..n {
                z[j] = y[i + j * m];
            }
            solve_lower_in_place(l, n, z, 1);
            let q: f64 = z.iter().map(|x| x * x).sum();
            lp -= 0.5 * w[i] * q;
            if let Some(wa) = w_adj.as_deref_mut() {
                wa[i] -= 0.5 * q;
            }
            if y_adj.is_none() && l_adj.is_none() {
                continue;
            }
            v.copy_from_slice(z);
            solve_lower_transpose_in_place(l, n, v, 1);
            if let Some(ya) = y_adj.as_deref_mut() {
                for j in 0..n {
                    ya[i + j * m] -= w[i] * v[j];
                }
            }
            if let Some(la) = l_adj.as_deref_mut() {
                for c in 0..n {
                    for r in c..n {
                        la[r + c * n] += w[i] * v[r] * z[c];
                    }
                }
            }
        }
    }
    Ok(lp)
}

/// Scratch length of [`multi_gp_lpdf`].
pub fn multi_gp_workspace_len(n: usize) -> usize {
    2 * n * n + 2 * n
}

/// `multi_gp_lpdf(y | Sigma, w)`: [`multi_gp_cholesky_lpdf`] with `L = chol(Σ)`; the Σ
/// gradient is the symmetric `−½ m Σ⁻¹ + ½ Σ_i w_i v_i v_iᵀ` (`v_i = Σ⁻¹ y_i`). Terms (y = 0,
/// Sigma = 1, w = 2). `ws` needs [`multi_gp_workspace_len`].
pub fn multi_gp_lpdf(
    y: &[f64],
    sigma: &[f64],
    w: &[f64],
    m: usize,
    n: usize,
    terms: Terms,
    y_adj: Option<&mut [f64]>,
    sigma_adj: Option<&mut [f64]>,
    w_adj: Option<&mut [f64]>,
    ws: &mut [f64],
) -> Result<f64, MathError> {
    const F: &str = "multi_gp_lpdf";
    if n == 0 {
        return Err(MathError::new(format!(
            "{F}: Kernel rows is 0, but must be positive!"
        )));
    }
    check_finite(F, "Kernel", &sigma[..n * n])?;
    check_symmetric(F, "Kernel", sigma, n)?;
    let (l, rest) = ws[..2 * n * n + 2 * n].split_at_mut(n * n);
    let (inv, inner) = rest.split_at_mut(n * n);
    cholesky_lower_unchecked(sigma, n, l).map_err(|_| {
        MathError::new(format!(
            "{F}: LDLT_Factor of Sigma is not positive definite"
        ))
    })?;
    let lp = multi_gp_cholesky_lpdf(y, l, w, m, n, terms, y_adj, None, w_adj, inner)
        .map_err(|e| MathError::new(e.message.replace("multi_gp_cholesky_lpdf", F)))?;
    if let Some(sa) = sigma_adj {
        if m == 0 {
            return Ok(lp);
        }
        if terms.include(1 << 1) {
            add_scaled_spd_inverse(sa, l, n, -(0.5 * m as f64), inv);
        }
        if terms.include(0b111) {
            let v = &mut inner[..n];
            for i in 0..m {
                for j in 0..n {
                    v[j] = y[i + j * m];
                }
                solve_lower_in_place(l, n, v, 1);
                solve_lower_transpose_in_place(l, n, v, 1);
                for c in 0..n {
                    for r in 0..n {
                        sa[r + c * n] += 0.5 * w[i] * v[r] * v[c];
                    }
                }
            }
        }
    }
    Ok(lp)
}

// ---------------------------------------------------------------------------------------------
// LKJ prior on a covariance matrix.
// ---------------------------------------------------------------------------------------------

/// Scratch length of [`lkj_cov_lpdf`].
pub fn lkj_cov_workspace_len(k: usize) -> usize {
    4 * k * k + k
}

/// `lkj_cov_lpdf(y | mu, sigma, eta)` (deprecated in Stan, kept for old programs): the
/// standard deviations `s_k = √y_kk` are lognormal(μ_k, σ_k) and the correlation matrix
/// `D y D` (`D = diag(1/s)`) is LKJ(η); each part keeps its own terms (`lognormal_lpdf` and
/// [`lkj_corr_lpdf`] under the same `propto`). `mu` and `sigma` have 1 or `k` elements. Terms
/// (y = 0, mu = 1, sigma = 2, eta = 3). `ws` needs [`lkj_cov_workspace_len`].
pub fn lkj_cov_lpdf(
    y: &[f64],
    mu: &[f64],
    sigma: &[f64],
    eta: f64,
    k: usize,
    terms: Terms,
    mut y_adj: Option<&mut [f64]>,
    mut mu_adj: Option<&mut [f64]>,
    mut sigma_adj: Option<&mut [f64]>,
    eta_adj: Option<&mut f64>,
    ws: &mut [f64],
) -> Result<f64, MathError> {
    const F: &str = "lkj_cov_lpdf";
    check_eta(F, eta)?;
    check_finite(F, "Location parameter", mu)?;
    check_finite(F, "Scale parameter", sigma)?;
    check_finite(F, "Covariance matrix", &y[..k * k])?;
    for (what, v) in [("location", mu), ("scale", sigma)] {
        if v.len() != 1 && v.len() != k {
            return Err(MathError::new(format!(
                "{F}: size of {what} parameter ({}) must be 1 or {k}",
                v.len()
            )));
        }
    }
    let lognormal = crate::dist::distribution("lognormal")
        .ok_or_else(|| MathError::new(format!("{F}: lognormal is missing")))?
        .lpdf;
    let (omega, rest) = ws[..4 * k * k + k].split_at_mut(k * k);
    let (g_omega, rest) = rest.split_at_mut(k * k);
    let (lkj_ws, sds) = rest.split_at_mut(2 * k * k);
    // The lognormal terms see the variate as varying when y does.
    let ln_terms = Terms {
        propto: terms.propto,
        varying: terms.varying & 0b111,
    };
    let mut lp = 0.0;
    let mut g_s = [0.0; 3];
    for i in 0..k {
        sds[i] = y[i + i * k].sqrt();
    }
    for i in 0..k {
        let (mi, si) = (
            if mu.len() == 1 { 0 } else { i },
            if sigma.len() == 1 { 0 } else { i },
        );
        g_s.iter_mut().for_each(|g| *g = 0.0);
        lp += lognormal(&[sds[i], mu[mi], sigma[si]], ln_terms, &mut g_s)?;
        if let Some(ya) = y_adj.as_deref_mut() {
            ya[i + i * k] += g_s[0] / (2.0 * sds[i]);
        }
        if let Some(ma) = mu_adj.as_deref_mut() {
            ma[mi] += g_s[1];
        }
        if let Some(sa) = sigma_adj.as_deref_mut() {
            sa[si] += g_s[2];
        }
    }
    for j in 0..k {
        for i in 0..k {
            omega[i + j * k] = if i == j {
                1.0
            } else {
                y[i + j * k] / (sds[i] * sds[j])
            };
        }
    }
    let lkj_terms = Terms {
        propto: terms.propto,
        varying: (terms.varying & 1) | ((terms.varying >> 3) & 1) << 1,
    };
    g_omega.iter_mut().for_each(|g| *g = 0.0);
    lp += lkj_corr_lpdf(
        omega,
        k,
        eta,
        lkj_terms,
        Some(&mut *g_omega),
        eta_adj,
        lkj_ws,
    )
    .map_err(|e| MathError::new(e.message.replace("lkj_corr_lpdf", F)))?;
    if let Some(ya) = y_adj {
        // Ω_ij = y_ij / (s_i s_j), s_i = √y_ii: the off-diagonal entries pass G/(s_i s_j), and
        // each s_i collects −(Σ_j G_ij Ω_ij + Σ_j G_ji Ω_ji)/s_i over j ≠ i.
        for j in 0..k {
            for i in 0..k {
                if i != j {
                    ya[i + j * k] += g_omega[i + j * k] / (sds[i] * sds[j]);
                }
            }
        }
        for i in 0..k {
            let mut g = 0.0;
            for j in 0..k {
                if j != i {
                    g -= (g_omega[i + j * k] * omega[i + j * k]
                        + g_omega[j + i * k] * omega[j + i * k])
                        / sds[i];
                }
            }
            ya[i + i * k] += g / (2.0 * sds[i]);
        }
    }
    Ok(lp)
}
