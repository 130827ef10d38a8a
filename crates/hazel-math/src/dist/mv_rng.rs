// Negated comparisons are deliberate: a NaN must fail every check.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

//! Random draws of the ordinal and multivariate families, following Stan Math's `_rng`
//! constructions, on hazel's [`StreamRng`] variates only (through [`super::rng`]). Results go
//! to caller buffers; nothing allocates except an error message.

use super::rng::{beta, binomial, chi_square, gamma, inv_gamma};
use super::MathError;
use crate::linalg::{cholesky_decompose, multiply_lower_tri_self_transpose, symmetrise, TOLERANCE};
use crate::special::{inv_logit, Phi};
use hazel_rng::StreamRng;

fn err(function: &str, msg: impl std::fmt::Display) -> MathError {
    MathError::new(format!("{function}: {msg}"))
}

/// A 1-based category from the probabilities `p` (Stan's `categorical_rng`: the first k with
/// u < p_1 + … + p_k).
pub(crate) fn categorical(p: impl Iterator<Item = f64>, rng: &mut StreamRng) -> i64 {
    let u = rng.uniform();
    let mut acc = 0.0;
    let mut last = 0;
    for (i, pi) in p.enumerate() {
        acc += pi;
        last = i as i64 + 1;
        if u < acc {
            return last;
        }
    }
    last
}

fn check_ordered(function: &str, c: &[f64]) -> Result<(), MathError> {
    if c.is_empty() {
        return Err(err(
            function,
            "Cut-points has size 0, but must have a non-zero size",
        ));
    }
    for i in 1..c.len() {
        if !(c[i] > c[i - 1]) {
            return Err(err(function, format!("Cut-points is not a valid ordered vector. The element at {} is {}, but should be greater than the previous element, {}", i + 1, c[i], c[i - 1])));
        }
    }
    if let Some(i) = c.iter().position(|x| !x.is_finite()) {
        return Err(err(
            function,
            format!("Cut-points[{}] is {}, but must be finite!", i + 1, c[i]),
        ));
    }
    Ok(())
}

/// `ordered_logistic_rng(eta, c)`: P(1) = 1 − logistic(η − c₁), P(k) = logistic(η − c_{k−1})
/// − logistic(η − c_k), P(K) = logistic(η − c_{K−1}).
pub fn ordered_logistic_rng(eta: f64, c: &[f64], rng: &mut StreamRng) -> Result<i64, MathError> {
    ordered_rng("ordered_logistic_rng", eta, c, inv_logit, rng)
}

/// `ordered_probit_rng(eta, c)`: as [`ordered_logistic_rng`] with Φ.
pub fn ordered_probit_rng(eta: f64, c: &[f64], rng: &mut StreamRng) -> Result<i64, MathError> {
    ordered_rng("ordered_probit_rng", eta, c, Phi, rng)
}

/// An ordinal draw with cut-points `c` and the inverse link `link` (a CDF): category `k` has
/// probability `link(η − c_{k−1}) − link(η − c_k)`, with `c₀ = −∞` and `c_K = +∞`.
fn ordered_rng(
    function: &str,
    eta: f64,
    c: &[f64],
    link: fn(f64) -> f64,
    rng: &mut StreamRng,
) -> Result<i64, MathError> {
    if !eta.is_finite() {
        return Err(err(
            function,
            format!("Location parameter is {eta}, but must be finite!"),
        ));
    }
    check_ordered(function, c)?;
    let k = c.len() + 1;
    let cdf = |j: usize| {
        if j == 0 {
            1.0
        } else if j == k {
            0.0
        } else {
            link(eta - c[j - 1])
        }
    };
    Ok(categorical((0..k).map(|j| cdf(j) - cdf(j + 1)), rng))
}

fn check_simplex(function: &str, theta: &[f64]) -> Result<(), MathError> {
    let s: f64 = theta.iter().sum();
    if theta.is_empty() || !((s - 1.0).abs() <= TOLERANCE) || theta.iter().any(|t| !(*t >= 0.0)) {
        return Err(err(function, format!("Probabilities parameter is not a valid simplex. sum(Probabilities parameter) = {s}, but should be 1")));
    }
    Ok(())
}

/// `multinomial_rng(theta, N)` into `out` (length K): sequential binomials, as Stan.
pub fn multinomial_rng(
    theta: &[f64],
    n: i64,
    out: &mut [i64],
    rng: &mut StreamRng,
) -> Result<(), MathError> {
    const F: &str = "multinomial_rng";
    check_simplex(F, theta)?;
    multinomial_draw(F, theta, n, out, rng)
}

fn check_trials(function: &str, n: i64) -> Result<(), MathError> {
    if n < 0 {
        return Err(err(
            function,
            format!("number of trials variables is {n}, but must be nonnegative!"),
        ));
    }
    Ok(())
}

fn multinomial_draw(
    function: &str,
    theta: &[f64],
    n: i64,
    out: &mut [i64],
    rng: &mut StreamRng,
) -> Result<(), MathError> {
    check_trials(function, n)?;
    let mut mass_left = 1.0;
    let mut n_left = n;
    for k in 0..theta.len() {
        out[k] = if n_left > 0 && k + 1 < theta.len() {
            let p = (theta[k] / mass_left).clamp(0.0, 1.0);
            binomial(&[n_left as f64, p], rng)? as i64
        } else if k + 1 == theta.len() {
            n_left
        } else {
            0
        };
        n_left -= out[k];
        mass_left -= theta[k];
    }
    Ok(())
}

/// `multinomial_logit_rng(beta, N)`: [`multinomial_rng`] at softmax(β); `ws` needs K.
pub fn multinomial_logit_rng(
    beta: &[f64],
    n: i64,
    out: &mut [i64],
    ws: &mut [f64],
    rng: &mut StreamRng,
) -> Result<(), MathError> {
    const F: &str = "multinomial_logit_rng";
    if let Some(i) = beta.iter().position(|b| !b.is_finite()) {
        return Err(err(
            F,
            format!(
                "log-probabilities parameter[{}] is {}, but must be finite!",
                i + 1,
                beta[i]
            ),
        ));
    }
    crate::linalg::softmax(beta, &mut ws[..beta.len()]);
    multinomial_draw(F, &ws[..beta.len()], n, out, rng)
}

/// `dirichlet_multinomial_rng(alpha, N)`: θ ~ Dirichlet(α) (normalised gamma draws), then
/// multinomial; all zeros when N = 0. `ws` needs K.
pub fn dirichlet_multinomial_rng(
    alpha: &[f64],
    n: i64,
    out: &mut [i64],
    ws: &mut [f64],
    rng: &mut StreamRng,
) -> Result<(), MathError> {
    const F: &str = "dirichlet_multinomial_rng";
    if let Some(i) = alpha.iter().position(|a| !(*a > 0.0 && a.is_finite())) {
        return Err(err(
            F,
            format!(
                "prior size parameter[{}] is {}, but must be positive finite!",
                i + 1,
                alpha[i]
            ),
        ));
    }
    check_trials(F, n)?;
    if n == 0 {
        out[..alpha.len()].iter_mut().for_each(|v| *v = 0);
        return Ok(());
    }
    let theta = &mut ws[..alpha.len()];
    for (t, a) in theta.iter_mut().zip(alpha) {
        *t = gamma(&[*a, 1.0], rng)?;
    }
    let s: f64 = theta.iter().sum();
    theta.iter_mut().for_each(|t| *t /= s);
    multinomial_draw(F, theta, n, out, rng)
}

/// `multi_student_t_cholesky_rng(nu, mu, L)` into `out` (length n): `μ + √w L z` with
/// `w ~ inv_gamma(ν/2, ν/2)` and standard normal z, as Stan.
pub fn multi_student_t_cholesky_rng(
    nu: f64,
    mu: &[f64],
    l: &[f64],
    out: &mut [f64],
    rng: &mut StreamRng,
) -> Result<(), MathError> {
    const F: &str = "multi_student_t_cholesky_rng";
    if !(nu > 0.0) || nu.is_nan() {
        return Err(err(
            F,
            format!("Degrees of freedom parameter is {nu}, but must be positive!"),
        ));
    }
    if let Some(i) = mu.iter().position(|m| !m.is_finite()) {
        return Err(err(
            F,
            format!(
                "Location parameter[{}] is {}, but must be finite!",
                i + 1,
                mu[i]
            ),
        ));
    }
    let n = mu.len();
    let w = inv_gamma(&[0.5 * nu, 0.5 * nu], rng)?.sqrt();
    // out = z first, then L z in place from the bottom row up.
    for o in out[..n].iter_mut() {
        *o = rng.normal();
    }
    for i in (0..n).rev() {
        let v: f64 = (0..=i).map(|j| l[i + j * n] * out[j]).sum();
        out[i] = mu[i] + w * v;
    }
    Ok(())
}

/// `multi_student_t_rng(nu, mu, Sigma)`: the Cholesky form at `L = chol(Σ)`; `ws` needs n².
pub fn multi_student_t_rng(
    nu: f64,
    mu: &[f64],
    sigma: &[f64],
    out: &mut [f64],
    ws: &mut [f64],
    rng: &mut StreamRng,
) -> Result<(), MathError> {
    let n = mu.len();
    cholesky_decompose(sigma, n, &mut ws[..n * n]).map_err(|e| {
        MathError::new(
            e.message
                .replace("cholesky_decompose", "multi_student_t_rng"),
        )
    })?;
    multi_student_t_cholesky_rng(nu, mu, &ws[..n * n], out, rng).map_err(|e| {
        MathError::new(
            e.message
                .replace("multi_student_t_cholesky_rng", "multi_student_t_rng"),
        )
    })
}

fn check_eta(function: &str, eta: f64) -> Result<(), MathError> {
    if !(eta > 0.0 && eta.is_finite()) {
        return Err(err(
            function,
            format!("Shape parameter is {eta}, but must be positive finite!"),
        ));
    }
    Ok(())
}

/// `lkj_corr_cholesky_rng(K, eta)` into `out` (K × K): canonical partial correlations
/// `2 Beta(α_i, α_i) − 1` with `α_i = η + (K − 2 − i)/2` for column i, assembled as Stan's
/// `read_corr_L`. `ws` needs K.
pub fn lkj_corr_cholesky_rng(
    k: usize,
    eta: f64,
    out: &mut [f64],
    ws: &mut [f64],
    rng: &mut StreamRng,
) -> Result<(), MathError> {
    const F: &str = "lkj_corr_cholesky_rng";
    check_eta(F, eta)?;
    let l = &mut out[..k * k];
    l.iter_mut().for_each(|v| *v = 0.0);
    if k == 0 {
        return Ok(());
    }
    // acc[r]: the squared length still free in row r.
    let acc = &mut ws[..k];
    acc.iter_mut().for_each(|v| *v = 1.0);
    let mut alpha = eta + 0.5 * (k as f64 - 1.0);
    for i in 0..k.saturating_sub(1) {
        alpha -= 0.5;
        l[i + i * k] = acc[i].sqrt();
        for r in (i + 1)..k {
            let cpc = 2.0 * beta(&[alpha, alpha], rng)? - 1.0;
            l[r + i * k] = cpc * acc[r].sqrt();
            acc[r] *= 1.0 - cpc * cpc;
        }
    }
    l[(k - 1) + (k - 1) * k] = acc[k - 1].sqrt();
    Ok(())
}

/// `lkj_corr_rng(K, eta)`: `L Lᵀ` of [`lkj_corr_cholesky_rng`]. `ws` needs K² + K.
pub fn lkj_corr_rng(
    k: usize,
    eta: f64,
    out: &mut [f64],
    ws: &mut [f64],
    rng: &mut StreamRng,
) -> Result<(), MathError> {
    let (l, rest) = ws[..k * k + k].split_at_mut(k * k);
    lkj_corr_cholesky_rng(k, eta, l, rest, rng)
        .map_err(|e| MathError::new(e.message.replace("lkj_corr_cholesky_rng", "lkj_corr_rng")))?;
    multiply_lower_tri_self_transpose(l, k, k, &mut out[..k * k]);
    Ok(())
}

fn check_dof(function: &str, nu: f64, k: usize) -> Result<(), MathError> {
    if !(nu > k as f64 - 1.0) {
        return Err(err(
            function,
            format!(
                "degrees of freedom is {nu}, but must be greater than {}",
                k as f64 - 1.0
            ),
        ));
    }
    Ok(())
}

/// The checks of the two `_cholesky_rng` Wishart forms: [`check_dof`], then a positive
/// diagonal of the scale's Cholesky factor `ls`.
fn check_dof_and_cholesky_scale(
    function: &str,
    nu: f64,
    ls: &[f64],
    k: usize,
) -> Result<(), MathError> {
    check_dof(function, nu, k)?;
    for j in 0..k {
        if !(ls[j + j * k] > 0.0) {
            return Err(err(
                function,
                "Cholesky Scale matrix is not a valid Cholesky factor",
            ));
        }
    }
    Ok(())
}

/// The Bartlett factor: lower-triangular `B` with `B_jj = √χ²(ν − j)` and standard normal
/// entries below the diagonal (0-based j).
fn bartlett(nu: f64, k: usize, b: &mut [f64], rng: &mut StreamRng) -> Result<(), MathError> {
    b[..k * k].iter_mut().for_each(|v| *v = 0.0);
    for j in 0..k {
        for i in (j + 1)..k {
            b[i + j * k] = rng.normal();
        }
        b[j + j * k] = chi_square(&[nu - j as f64], rng)?.sqrt();
    }
    Ok(())
}

/// `wishart_cholesky_rng(nu, L_S)`: `L_S B` with the Bartlett factor B, as Stan. `ws` needs
/// k².
pub fn wishart_cholesky_rng(
    nu: f64,
    ls: &[f64],
    k: usize,
    out: &mut [f64],
    ws: &mut [f64],
    rng: &mut StreamRng,
) -> Result<(), MathError> {
    const F: &str = "wishart_cholesky_rng";
    check_dof_and_cholesky_scale(F, nu, ls, k)?;
    let b = &mut ws[..k * k];
    bartlett(nu, k, b, rng)?;
    for j in 0..k {
        for i in 0..k {
            out[i + j * k] = if i < j {
                0.0
            } else {
                (j..=i).map(|m| ls[i + m * k] * b[m + j * k]).sum()
            };
        }
    }
    Ok(())
}

/// `wishart_rng(nu, S)`: `(L_S B)(L_S B)ᵀ`. `ws` needs 3k².
pub fn wishart_rng(
    nu: f64,
    s: &[f64],
    k: usize,
    out: &mut [f64],
    ws: &mut [f64],
    rng: &mut StreamRng,
) -> Result<(), MathError> {
    const F: &str = "wishart_rng";
    check_dof(F, nu, k)?;
    let (ls, rest) = ws[..3 * k * k].split_at_mut(k * k);
    let (a, inner) = rest.split_at_mut(k * k);
    crate::linalg::check_symmetric(F, "scale parameter", s, k)?;
    cholesky_decompose(s, k, ls).map_err(|_| err(F, "scale parameter is not positive definite"))?;
    wishart_cholesky_rng(nu, ls, k, a, inner, rng)?;
    multiply_lower_tri_self_transpose(a, k, k, &mut out[..k * k]);
    Ok(())
}

/// `inv_wishart_rng(nu, S)`: the inverse of a `wishart_rng(nu, S⁻¹)` draw, symmetrised.
/// `ws` needs 5k².
pub fn inv_wishart_rng(
    nu: f64,
    s: &[f64],
    k: usize,
    out: &mut [f64],
    ws: &mut [f64],
    rng: &mut StreamRng,
) -> Result<(), MathError> {
    const F: &str = "inv_wishart_rng";
    check_dof(F, nu, k)?;
    crate::linalg::check_symmetric(F, "scale parameter", s, k)?;
    let (s_inv, rest) = ws[..5 * k * k].split_at_mut(k * k);
    let (w, inner) = rest.split_at_mut(k * k);
    crate::linalg::inverse_spd(s, k, s_inv, inner)
        .map_err(|_| err(F, "scale parameter is not positive definite"))?;
    symmetrise(s_inv, k);
    wishart_rng(nu, s_inv, k, w, inner, rng)?;
    crate::linalg::inverse_spd(w, k, &mut out[..k * k], inner).map_err(|e| err(F, e.message))?;
    symmetrise(&mut out[..k * k], k);
    Ok(())
}

/// `inv_wishart_cholesky_rng(nu, L_S)`: the Cholesky factor of an `inv_wishart_rng(nu, L_S L_Sᵀ)`
/// draw. `ws` needs 7k².
pub fn inv_wishart_cholesky_rng(
    nu: f64,
    ls: &[f64],
    k: usize,
    out: &mut [f64],
    ws: &mut [f64],
    rng: &mut StreamRng,
) -> Result<(), MathError> {
    const F: &str = "inv_wishart_cholesky_rng";
    check_dof_and_cholesky_scale(F, nu, ls, k)?;
    let (s, rest) = ws[..7 * k * k].split_at_mut(k * k);
    let (w, inner) = rest.split_at_mut(k * k);
    multiply_lower_tri_self_transpose(ls, k, k, s);
    inv_wishart_rng(nu, s, k, w, inner, rng)?;
    cholesky_decompose(w, k, &mut out[..k * k]).map_err(|e| err(F, e.message))
}
