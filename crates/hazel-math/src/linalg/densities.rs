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
    check_symmetric, cholesky_lower_unchecked, solve_lower_in_place,
    solve_lower_transpose_in_place, spd_inverse_from_cholesky, TOLERANCE,
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

fn check_simplex(function: &str, what: &str, theta: &[f64]) -> Result<(), MathError> {
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
            spd_inverse_from_cholesky(l, n, inv);
            for (a, v) in sa[..n * n].iter_mut().zip(inv.iter()) {
                *a -= 0.5 * n_obs as f64 * v;
            }
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
pub fn lkj_log_constant(eta: f64, k: usize) -> (f64, f64) {
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
            spd_inverse_from_cholesky(l, k, inv);
            for (a, v) in oa[..k * k].iter_mut().zip(inv.iter()) {
                *a += (eta - 1.0) * v;
            }
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

fn check_location_shape(function: &str, mu: &[f64], n: usize, n_obs: usize) -> Result<bool, MathError> {
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
    mut nu_adj: Option<&mut f64>,
    mut mu_adj: Option<&mut [f64]>,
    mut l_adj: Option<&mut [f64]>,
    ws: &mut [f64],
) -> Result<f64, MathError> {
    const F: &str = "multi_student_t_cholesky";
    check_dof(F, nu)?;
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
            let m = if shared_mu { &mu[..n] } else { &mu[o * n..(o + 1) * n] };
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
    if let Some(na) = nu_adj.as_deref_mut() {
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
            spd_inverse_from_cholesky(l, n, inv);
            for (a, v) in sa[..n * n].iter_mut().zip(inv.iter()) {
                *a -= 0.5 * n_obs as f64 * v;
            }
        }
        if terms.include(0b1111) {
            let shared_mu = mu.len() == n;
            let nf = n as f64;
            let (z, w) = inner[..2 * n].split_at_mut(n);
            for o in 0..n_obs {
                let m = if shared_mu { &mu[..n] } else { &mu[o * n..(o + 1) * n] };
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
            spd_inverse_from_cholesky(l, n, inv);
            for (a, v) in oa[..n * n].iter_mut().zip(inv.iter()) {
                *a += 0.5 * of * v;
            }
        }
    }
    if terms.include(0b111) {
        for o in 0..n_obs {
            let m = if shared_mu { &mu[..n] } else { &mu[o * n..(o + 1) * n] };
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
