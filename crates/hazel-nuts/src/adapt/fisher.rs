//! The metric that minimises the Fisher divergence (Seyboldt, Carlson & Carpenter 2026, the
//! estimators of nutpie), from draws `x` and their log-density gradients `g`.
//!
//! For an affine preconditioner `x = μ + A y`, the sample Fisher divergence between the
//! transformed posterior and a standard normal is minimised, for a diagonal `A = diag(σ)`, by
//! `σ_i⁴ = Var[x_i] / Var[g_i]`, and for a full `A Aᵀ = Σ` by the `Σ` with `Σ Cov[g] Σ = Cov[x]`:
//! the geometric mean of `Cov[x]` and `Cov[g]⁻¹`. For a Gaussian both covariances agree with
//! the posterior's (`Cov[g] = Cov[x]⁻¹`), so `Σ` is the covariance itself, from far fewer
//! draws than the sample covariance needs, since every gradient carries curvature.
//!
//! * [`diag_variance`] — the diagonal inverse metric `σ_i² = sqrt(Var[x_i] / Var[g_i])`.
//! * [`fit_low_rank`] — the low-rank plus diagonal inverse metric `D (I + U (Λ − I) Uᵀ) D`:
//!   `D = diag(σ)` as above; in the scaled coordinates `x̃ = (x − x̄)/σ`, `g̃ = (g − ḡ) σ`, the
//!   covariances are regularised as `C/(nγ) + I` (γ = 1e-5), restricted to the span of the
//!   scaled draws and gradients (outside it both are the identity, so `Σ` is too), `Σ` is
//!   their geometric mean there, and its eigen-directions with eigenvalue outside `[1/c, c]`
//!   (c = 2) are kept, at most [`MAX_RANK`] of them (those farthest from 1 on the log scale).
//!   When draws outside the window are given (held out), a direction is kept only if it lowers
//!   the Fisher divergence on them ([`held_out_gains`]): see below.
//!
//! # Held-out directions
//!
//! With fewer draws than dimensions the window's draws and gradients span different subspaces
//! unless the posterior is Gaussian (then `g = −P x` spans `P` times the draws' span). Where a
//! direction lies in one span and not the other, only the regulariser `I` determines one side of
//! the geometric mean, and its eigenvalue comes out near `(nγ)^{±1/2}` (about 35 or 1/35 for 80
//! draws): a direction fitted to the window's noise, not to the posterior. On the Bayesian neural
//! net example (113 parameters, 80-draw windows) every fit in the middle of warmup kept about 70
//! such directions, with eigenvalues from 0.02 to 50, and NUTS trees were 5× longer under them
//! than under the diagonal alone. The cutoff cannot tell them apart from real correlations of
//! the same size, but draws the fit did not see can: the Fisher divergence is a sum over the kept
//! directions, so each direction's effect on it can be measured on held-out draws and the
//! direction dropped when it makes the divergence larger.
//!
//! Everything is computed in a fixed order from the inputs alone (no threads, no randomness),
//! so a chain's metric depends only on its draws. The linear algebra is `hazel_math::linalg`'s
//! (symmetric eigendecomposition by cyclic Jacobi, products on column-major slices).

use crate::metric::MAX_RANK;
use hazel_math::linalg::{eigen_sym, multiply, tcrossprod};

/// Bounds on a learnt variance (nutpie's), so that one degenerate coordinate cannot make the
/// metric singular or overflow.
pub const VARIANCE_LIMITS: (f64, f64) = (1e-20, 1e20);

/// Settings of the low-rank fit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LowRankSettings {
    /// Regularisation: each covariance `C` (of `n` scaled draws) enters as `C/(nγ) + I`.
    pub gamma: f64,
    /// Directions whose eigenvalue lies in `[1/cutoff, cutoff]` are left to the diagonal.
    pub cutoff: f64,
    /// The most directions kept.
    pub max_rank: usize,
}

impl Default for LowRankSettings {
    fn default() -> Self {
        LowRankSettings {
            gamma: 1e-5,
            cutoff: 2.0,
            max_rank: MAX_RANK,
        }
    }
}

/// The diagonal Fisher minimiser `sqrt(Var[x] / Var[g])` for one coordinate, within
/// [`VARIANCE_LIMITS`]; `None` when it is undefined (0/0, or not finite), and the caller keeps
/// the previous value.
pub fn diag_variance(draw_var: f64, grad_var: f64) -> Option<f64> {
    let v = (draw_var / grad_var).sqrt();
    if v.is_finite() && v > 0.0 {
        Some(v.clamp(VARIANCE_LIMITS.0, VARIANCE_LIMITS.1))
    } else {
        None
    }
}

/// The diagonal inverse metric at a single point, from its gradient alone: `1/|g_i|`
/// (nutpie's start; a zero gradient gives the upper limit).
pub fn variance_from_gradient(gradient: f64) -> f64 {
    let v = 1.0 / gradient.abs().clamp(VARIANCE_LIMITS.0, VARIANCE_LIMITS.1);
    if v.is_finite() {
        v
    } else {
        1.0
    }
}

/// A low-rank plus diagonal inverse metric `D (I + U (Λ − I) Uᵀ) D`.
#[derive(Debug, Clone, PartialEq)]
pub struct LowRankFit {
    /// `σ`, the diagonal of `D`.
    pub scale: Vec<f64>,
    /// The kept eigenvalues `λ`, ascending.
    pub values: Vec<f64>,
    /// Their orthonormal eigenvectors, one after the other (`dim` entries each).
    pub vectors: Vec<f64>,
}

/// Draws and their gradients, one after the other (`draws[j·dim + i]` is coordinate `i` of draw
/// `j`).
#[derive(Debug, Clone, Copy)]
pub struct Window<'a> {
    pub draws: &'a [f64],
    pub grads: &'a [f64],
}

/// Fits the low-rank plus diagonal metric to the `n` draws and gradients of `window`, keeping
/// only the directions that lower the Fisher divergence on `held_out` (draws of the same chain
/// outside the window) when it holds at least 2 draws. `None` when fewer than 2 draws, a
/// quantity is not finite, or the window is too degenerate for a positive definite estimate.
pub fn fit_low_rank(
    dim: usize,
    window: Window<'_>,
    held_out: Window<'_>,
    settings: &LowRankSettings,
) -> Option<LowRankFit> {
    fit(dim, window, held_out, settings, false)
}

/// [`fit_low_rank`], with the subspace projection skipped when `full_space` (the tests check
/// that both give the same metric).
fn fit(
    dim: usize,
    window: Window<'_>,
    held_out: Window<'_>,
    settings: &LowRankSettings,
    full_space: bool,
) -> Option<LowRankFit> {
    let Window { draws, grads } = window;
    let n = draws.len().checked_div(dim)?;
    if n < 2 || grads.len() != draws.len() {
        return None;
    }
    let nf = n as f64;
    let mut x = draws.to_vec();
    let mut g = grads.to_vec();
    let mut scale = vec![0.0; dim];
    let (sd_low, sd_high) = (VARIANCE_LIMITS.0.sqrt(), VARIANCE_LIMITS.1.sqrt());
    for i in 0..dim {
        let (mut mx, mut mg) = (0.0, 0.0);
        for j in 0..n {
            mx += x[i + j * dim];
            mg += g[i + j * dim];
        }
        mx /= nf;
        mg /= nf;
        let (mut vx, mut vg) = (0.0, 0.0);
        for j in 0..n {
            let (dx, dg) = (x[i + j * dim] - mx, g[i + j * dim] - mg);
            vx += dx * dx;
            vg += dg * dg;
        }
        let ratio = vx / vg;
        if ratio.is_nan() {
            return None;
        }
        let sigma = ratio.sqrt().sqrt().clamp(sd_low, sd_high);
        scale[i] = sigma;
        for j in 0..n {
            x[i + j * dim] = (x[i + j * dim] - mx) / sigma;
            g[i + j * dim] = (g[i + j * dim] - mg) * sigma;
        }
    }
    if x.iter().chain(&g).any(|v| !v.is_finite()) {
        return None;
    }
    // The subspace the scaled draws and gradients span: all of ℝ^dim when they may, else an
    // orthonormal basis of their span.
    let basis = if full_space || dim <= 2 * n {
        None
    } else {
        Some(orthonormal_basis(
            dim,
            x.chunks_exact(dim).chain(g.chunks_exact(dim)),
        ))
    };
    let (k, px, pg) = match &basis {
        None => (dim, x, g),
        Some((q, k)) => (*k, project(q, dim, *k, &x, n), project(q, dim, *k, &g, n)),
    };
    if k == 0 {
        return Some(LowRankFit {
            scale,
            values: Vec::new(),
            vectors: Vec::new(),
        });
    }
    let c = 1.0 / (nf * nf * settings.gamma);
    let regularised = |p: &[f64]| {
        let mut a = vec![0.0; k * k];
        tcrossprod(p, k, n, &mut a);
        for (idx, v) in a.iter_mut().enumerate() {
            *v *= c;
            if idx % (k + 1) == 0 {
                *v += 1.0;
            }
        }
        a
    };
    let a = regularised(&px);
    let b = regularised(&pg);
    let sigma = spd_mean(&a, &b, k)?;
    let (values, vectors) = eigen(&sigma, k)?;
    // Σ is positive definite in exact arithmetic; a window so degenerate that rounding makes an
    // eigenvalue non-positive (a chain that has hardly moved) gives no usable metric.
    if values.iter().any(|&v| !(v > 0.0 && v.is_finite())) {
        return None;
    }
    // The directions far enough from 1, as unit vectors of ℝ^dim, in ascending eigenvalue order.
    let candidates: Vec<usize> = (0..k)
        .filter(|&j| values[j] > settings.cutoff || values[j] < 1.0 / settings.cutoff)
        .collect();
    let mut full_vectors = Vec::with_capacity(candidates.len() * dim);
    for &j in &candidates {
        let e = &vectors[j * k..(j + 1) * k];
        let start = full_vectors.len();
        match &basis {
            None => full_vectors.extend_from_slice(e),
            Some((q, _)) => {
                full_vectors.resize(start + dim, 0.0);
                multiply(q, dim, k, e, 1, &mut full_vectors[start..]);
            }
        }
        let u = &mut full_vectors[start..];
        let norm = u.iter().map(|v| v * v).sum::<f64>().sqrt();
        if !(norm.is_finite() && norm > 0.0) {
            return None;
        }
        u.iter_mut().for_each(|v| *v /= norm);
    }
    // Those that lower the held-out Fisher divergence (all of them without held-out draws).
    let gains = held_out_gains(dim, &scale, &candidates, &values, &full_vectors, held_out);
    let mut kept: Vec<usize> = (0..candidates.len())
        .filter(|&c| gains.as_ref().is_none_or(|g| g[c] > 0.0))
        .collect();
    // At most max_rank of them (the farthest from 1 on the log scale; ties keep the lower
    // index).
    if kept.len() > settings.max_rank {
        kept.sort_by(|&a, &b| {
            values[candidates[b]]
                .ln()
                .abs()
                .total_cmp(&values[candidates[a]].ln().abs())
                .then(a.cmp(&b))
        });
        kept.truncate(settings.max_rank);
        kept.sort_unstable();
    }
    let mut out_values = Vec::with_capacity(kept.len());
    let mut out_vectors = Vec::with_capacity(kept.len() * dim);
    for &c in &kept {
        out_values.push(values[candidates[c]]);
        out_vectors.extend_from_slice(&full_vectors[c * dim..(c + 1) * dim]);
    }
    Some(LowRankFit {
        scale,
        values: out_values,
        vectors: out_vectors,
    })
}

/// How much each candidate direction `u_c` (unit vectors in the coordinates scaled by `scale`,
/// eigenvalue `λ = values[candidates[c]]`) lowers the Fisher divergence on the `held_out` draws:
/// `None` when they are fewer than 2 (then every candidate is kept).
///
/// For `S = I + Σ (λ_c − 1) u_c u_cᵀ`, the divergence of the scaled draws `x̃ = (x − x̄)/σ`
/// and gradients `g̃ = (g − ḡ) σ` (centred by the held-out means: the metric is about their
/// spread, not where the chain was) is, up to a term that does not depend on `S`,
/// `E[g̃ᵀ S g̃ + x̃ᵀ S⁻¹ x̃]`. Its change from the diagonal metric (`S = I`) is a sum over the
/// directions, so each direction's gain is `(1 − λ) E[(u·g̃)²] + (1 − 1/λ) E[(u·x̃)²]`,
/// positive when `λ` lies between 1 and `E[(u·x̃)²] / E[(u·g̃)²]` (the square of the held-out
/// optimum along `u`).
fn held_out_gains(
    dim: usize,
    scale: &[f64],
    candidates: &[usize],
    values: &[f64],
    vectors: &[f64],
    held_out: Window<'_>,
) -> Option<Vec<f64>> {
    let n = held_out.draws.len().checked_div(dim)?;
    if n < 2 || held_out.grads.len() != held_out.draws.len() {
        return None;
    }
    let nf = n as f64;
    let mut x_mean = vec![0.0; dim];
    let mut g_mean = vec![0.0; dim];
    for (x, g) in held_out
        .draws
        .chunks_exact(dim)
        .zip(held_out.grads.chunks_exact(dim))
    {
        for i in 0..dim {
            x_mean[i] += x[i];
            g_mean[i] += g[i];
        }
    }
    x_mean
        .iter_mut()
        .chain(g_mean.iter_mut())
        .for_each(|m| *m /= nf);
    let mut x_sq = vec![0.0; candidates.len()];
    let mut g_sq = vec![0.0; candidates.len()];
    let (mut xs, mut gs) = (vec![0.0; dim], vec![0.0; dim]);
    for (x, g) in held_out
        .draws
        .chunks_exact(dim)
        .zip(held_out.grads.chunks_exact(dim))
    {
        for i in 0..dim {
            xs[i] = (x[i] - x_mean[i]) / scale[i];
            gs[i] = (g[i] - g_mean[i]) * scale[i];
        }
        for (c, u) in vectors.chunks_exact(dim).enumerate() {
            let px: f64 = u.iter().zip(&xs).map(|(a, b)| a * b).sum();
            let pg: f64 = u.iter().zip(&gs).map(|(a, b)| a * b).sum();
            x_sq[c] += px * px;
            g_sq[c] += pg * pg;
        }
    }
    let gains: Vec<f64> = candidates
        .iter()
        .enumerate()
        .map(|(c, &j)| {
            let lambda = values[j];
            ((1.0 - lambda) * g_sq[c] + (1.0 - 1.0 / lambda) * x_sq[c]) / nf
        })
        .collect();
    // A held-out draw that is not finite tells nothing: keep every candidate, as without any.
    if gains.iter().all(|g| g.is_finite()) {
        Some(gains)
    } else {
        None
    }
}

/// An orthonormal basis (columns, `dim` entries each) of the span of `columns`, by modified
/// Gram–Schmidt applied twice (enough for orthogonality to rounding); a column whose remainder
/// is below 1e-10 of its norm is dependent and dropped. Returns the basis and its size.
fn orthonormal_basis<'a>(
    dim: usize,
    columns: impl Iterator<Item = &'a [f64]>,
) -> (Vec<f64>, usize) {
    let mut q: Vec<f64> = Vec::new();
    let mut k = 0;
    let mut v = vec![0.0; dim];
    for column in columns {
        if k == dim {
            break;
        }
        let norm0 = column.iter().map(|c| c * c).sum::<f64>().sqrt();
        // Also skips a NaN norm.
        if norm0.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
            continue;
        }
        v.copy_from_slice(column);
        for _ in 0..2 {
            for b in q.chunks_exact(dim) {
                let dot: f64 = b.iter().zip(&v).map(|(x, y)| x * y).sum();
                for (vi, &bi) in v.iter_mut().zip(b) {
                    *vi -= dot * bi;
                }
            }
        }
        let norm = v.iter().map(|c| c * c).sum::<f64>().sqrt();
        if norm <= 1e-10 * norm0 {
            continue;
        }
        q.extend(v.iter().map(|vi| vi / norm));
        k += 1;
    }
    (q, k)
}

/// `Qᵀ X` (`k × n`) for the basis `Q` (`dim × k`) and `X` (`dim × n`).
fn project(q: &[f64], dim: usize, k: usize, x: &[f64], n: usize) -> Vec<f64> {
    let mut out = vec![0.0; k * n];
    for j in 0..n {
        let col = &x[j * dim..(j + 1) * dim];
        for r in 0..k {
            out[r + j * k] = q[r * dim..(r + 1) * dim]
                .iter()
                .zip(col)
                .map(|(a, b)| a * b)
                .sum();
        }
    }
    out
}

/// Eigenvalues (ascending) and eigenvectors (columns) of the symmetric `k × k` matrix `a`.
fn eigen(a: &[f64], k: usize) -> Option<(Vec<f64>, Vec<f64>)> {
    let mut values = vec![0.0; k];
    let mut vectors = vec![0.0; k * k];
    let mut ws = vec![0.0; k * k];
    eigen_sym(
        "low-rank adaptation",
        a,
        k,
        &mut values,
        &mut vectors,
        &mut ws,
    )
    .ok()?;
    Some((values, vectors))
}

/// `V f(Λ) Vᵀ`, exactly symmetric.
fn spectral(values: &[f64], vectors: &[f64], k: usize, f: impl Fn(f64) -> f64) -> Vec<f64> {
    let mut out = vec![0.0; k * k];
    for (j, &lambda) in values.iter().enumerate() {
        let w = f(lambda);
        let v = &vectors[j * k..(j + 1) * k];
        for c in 0..k {
            let wc = w * v[c];
            for r in c..k {
                out[r + c * k] += v[r] * wc;
            }
        }
    }
    for c in 0..k {
        for r in c + 1..k {
            out[c + r * k] = out[r + c * k];
        }
    }
    out
}

/// `(a + aᵀ)/2` in place: products of symmetric matrices are symmetric only up to rounding.
fn symmetrise(a: &mut [f64], k: usize) {
    for c in 0..k {
        for r in c + 1..k {
            let m = 0.5 * (a[r + c * k] + a[c + r * k]);
            a[r + c * k] = m;
            a[c + r * k] = m;
        }
    }
}

/// The geometric mean `Σ` of `A` and `B⁻¹` (the SPD solution of `Σ B Σ = A`):
/// `B^{-1/2} (B^{1/2} A B^{1/2})^{1/2} B^{-1/2}`.
fn spd_mean(a: &[f64], b: &[f64], k: usize) -> Option<Vec<f64>> {
    let (b_values, b_vectors) = eigen(b, k)?;
    // Not positive, or NaN.
    if b_values
        .iter()
        .any(|v| v.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater))
    {
        return None;
    }
    let b_half = spectral(&b_values, &b_vectors, k, f64::sqrt);
    let b_inv_half = spectral(&b_values, &b_vectors, k, |v| 1.0 / v.sqrt());
    let mut tmp = vec![0.0; k * k];
    let mut m = vec![0.0; k * k];
    multiply(&b_half, k, k, a, k, &mut tmp);
    multiply(&tmp, k, k, &b_half, k, &mut m);
    symmetrise(&mut m, k);
    let (m_values, m_vectors) = eigen(&m, k)?;
    let m_half = spectral(&m_values, &m_vectors, k, |v| v.max(0.0).sqrt());
    let mut sigma = vec![0.0; k * k];
    multiply(&b_inv_half, k, k, &m_half, k, &mut tmp);
    multiply(&tmp, k, k, &b_inv_half, k, &mut sigma);
    symmetrise(&mut sigma, k);
    if sigma.iter().any(|v| !v.is_finite()) {
        return None;
    }
    Some(sigma)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NO_HELD_OUT: Window<'static> = Window {
        draws: &[],
        grads: &[],
    };

    /// For diagonal `A` and `B`, the geometric mean of `A` and `B⁻¹` is `sqrt(a_i / b_i)`.
    #[test]
    fn spd_mean_of_diagonals() {
        let a = [1.0, 0.0, 0.0, 0.0, 4.0, 0.0, 0.0, 0.0, 8.0];
        let b = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.5];
        let s = spd_mean(&a, &b, 3).unwrap();
        let expected = [1.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 4.0];
        for (x, y) in s.iter().zip(expected) {
            assert!((x - y).abs() < 1e-12, "{s:?}");
        }
    }

    /// `Σ B Σ = A` for a random SPD pair.
    #[test]
    fn spd_mean_solves_the_riccati_equation() {
        let k = 4;
        let mut rng = hazel_rng::StreamRng::new(5, 1, hazel_rng::Purpose::Sampler);
        let mut random_spd = || {
            let m: Vec<f64> = (0..k * k).map(|_| rng.normal()).collect();
            let mut a = vec![0.0; k * k];
            tcrossprod(&m, k, k, &mut a);
            for i in 0..k {
                a[i + i * k] += 0.5;
            }
            a
        };
        let (a, b) = (random_spd(), random_spd());
        let s = spd_mean(&a, &b, k).unwrap();
        let (mut t, mut sbs) = (vec![0.0; k * k], vec![0.0; k * k]);
        multiply(&s, k, k, &b, k, &mut t);
        multiply(&t, k, k, &s, k, &mut sbs);
        for (x, y) in sbs.iter().zip(&a) {
            assert!((x - y).abs() < 1e-9 * (1.0 + y.abs()), "{sbs:?} vs {a:?}");
        }
    }

    /// `n` draws and their exact gradients from `x = s ⊙ (z + a w e)`, `z ~ N(0, I)`,
    /// `w ~ N(0, 1)`, `e = 1/√dim`, `s_i = 0.5 + 0.1 i`: covariance `S (I + a² e eᵀ) S`, a common
    /// direction of variance `1 + a²` in the coordinates scaled by `s` (none for `a = 0`).
    /// Returns the draws, the gradients and `s`.
    fn common_direction_gaussian(
        dim: usize,
        n: usize,
        a: f64,
        seed: u64,
    ) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let s: Vec<f64> = (0..dim).map(|i| 0.5 + i as f64 * 0.1).collect();
        let mut rng = hazel_rng::StreamRng::new(seed, dim as u64, hazel_rng::Purpose::Sampler);
        let mut draws = Vec::new();
        let mut grads = Vec::new();
        let e = 1.0 / (dim as f64).sqrt();
        // Precision = S⁻¹ (I − a²/(1 + a²) e eᵀ) S⁻¹; gradient = −Precision x.
        let shrink = a * a / (1.0 + a * a);
        for _ in 0..n {
            let w = rng.normal();
            let z: Vec<f64> = (0..dim).map(|_| rng.normal()).collect();
            let x: Vec<f64> = (0..dim).map(|i| s[i] * (z[i] + a * w * e)).collect();
            let y: Vec<f64> = (0..dim).map(|i| x[i] / s[i]).collect();
            let ey: f64 = y.iter().sum::<f64>() * e;
            let g: Vec<f64> = (0..dim).map(|i| -(y[i] - shrink * ey * e) / s[i]).collect();
            draws.extend(x);
            grads.extend(g);
        }
        (draws, grads, s)
    }

    /// Draws and gradients of a correlated Gaussian (covariance `S (I + 9 e eᵀ) S`, `e = 1/√dim`):
    /// the fit recovers the covariance (to the sampling error of the draws). With fewer draws than
    /// dimensions the estimate is biased towards the diagonal (only the draws' span is seen),
    /// which is the method's, not checked here; the projection onto that span is checked exactly
    /// below.
    #[test]
    fn low_rank_fit_recovers_a_gaussian_covariance() {
        for (dim, n) in [(3usize, 400usize), (40, 100)] {
            let (draws, grads, s) = common_direction_gaussian(dim, n, 3.0, 11);
            let e = 1.0 / (dim as f64).sqrt();
            let window = Window {
                draws: &draws,
                grads: &grads,
            };
            let fit = fit_low_rank(dim, window, NO_HELD_OUT, &LowRankSettings::default()).unwrap();
            // The common direction is kept: in the space scaled by the Fisher diagonal its
            // eigenvalue is 10 / sqrt(Var[x_i] Var[g_i]) > 2.
            assert!(!fit.values.is_empty(), "dim {dim}: no direction kept");
            let top = *fit.values.last().unwrap();
            assert!(top > 2.0, "dim {dim}: top eigenvalue {top}");
            let u = &fit.vectors[(fit.values.len() - 1) * dim..];
            let norm: f64 = u.iter().map(|v| v * v).sum();
            assert!((norm - 1.0).abs() < 1e-10);
            // The fitted inverse metric's variance of the sum direction matches the truth
            // within sampling error: Var[eᵀ S⁻¹ x] = 10.
            let metric = crate::types::InverseMetric::LowRank {
                scale: fit.scale.clone(),
                values: fit.values.clone(),
                vectors: fit.vectors.clone(),
            };
            let crate::types::InverseMetric::Dense { values: m, .. } =
                metric.to_dense().into_owned()
            else {
                unreachable!()
            };
            let mut var = 0.0;
            for i in 0..dim {
                for j in 0..dim {
                    var += e / s[i] * m[i * dim + j] * e / s[j];
                }
            }
            assert!((var / 10.0 - 1.0).abs() < 0.35, "dim {dim}: {var}");
        }
    }

    /// Held-out draws keep a direction the posterior has and drop one it has not: the window's
    /// common direction survives held-out draws of the same Gaussian, and is dropped against
    /// held-out draws without it (the same scales, independent coordinates), leaving the diagonal.
    #[test]
    fn held_out_draws_select_the_directions() {
        let (dim, n) = (20, 200);
        let (draws, grads, _) = common_direction_gaussian(dim, n, 3.0, 7);
        let window = Window {
            draws: &draws,
            grads: &grads,
        };
        let settings = LowRankSettings::default();
        let alone = fit_low_rank(dim, window, NO_HELD_OUT, &settings).unwrap();
        assert!(*alone.values.last().unwrap() > 2.0, "{:?}", alone.values);
        let (same_x, same_g, _) = common_direction_gaussian(dim, n, 3.0, 8);
        let same = Window {
            draws: &same_x,
            grads: &same_g,
        };
        let with_same = fit_low_rank(dim, window, same, &settings).unwrap();
        assert_eq!(with_same.scale, alone.scale);
        let top = *with_same.values.last().unwrap();
        assert_eq!(top, *alone.values.last().unwrap());
        let (other_x, other_g, _) = common_direction_gaussian(dim, n, 0.0, 9);
        let other = Window {
            draws: &other_x,
            grads: &other_g,
        };
        let with_other = fit_low_rank(dim, window, other, &settings).unwrap();
        assert!(
            with_other.values.iter().all(|&v| v < top),
            "{:?}",
            with_other.values
        );
        // Fewer than 2 held-out draws: no evidence, every candidate kept.
        let one = Window {
            draws: &other_x[..dim],
            grads: &other_g[..dim],
        };
        assert_eq!(fit_low_rank(dim, window, one, &settings).unwrap(), alone);
    }

    /// Restricting the problem to the span of the draws and gradients (dim > 2n) changes
    /// nothing: outside it both covariances are the identity.
    #[test]
    fn projection_onto_the_span_is_exact() {
        let (dim, n) = (30usize, 8usize);
        let mut rng = hazel_rng::StreamRng::new(3, 9, hazel_rng::Purpose::Sampler);
        let draws: Vec<f64> = (0..dim * n).map(|_| rng.normal()).collect();
        let grads: Vec<f64> = (0..dim * n)
            .map(|i| -draws[i] * (1.0 + (i % dim) as f64) + 0.3 * rng.normal())
            .collect();
        let settings = LowRankSettings {
            cutoff: 1.0 + 1e-9,
            ..LowRankSettings::default()
        };
        let dense = |f: LowRankFit| {
            let metric = crate::types::InverseMetric::LowRank {
                scale: f.scale,
                values: f.values,
                vectors: f.vectors,
            };
            match metric.to_dense().into_owned() {
                crate::types::InverseMetric::Dense { values, .. } => values,
                _ => unreachable!(),
            }
        };
        let window = Window {
            draws: &draws,
            grads: &grads,
        };
        let projected = dense(fit(dim, window, NO_HELD_OUT, &settings, false).unwrap());
        let full = dense(fit(dim, window, NO_HELD_OUT, &settings, true).unwrap());
        // Equal up to the eigendecompositions' rounding, which the large regularisation
        // factor 1/(n²γ) amplifies (a wrong projection is off by O(1)).
        for (a, b) in projected.iter().zip(&full) {
            assert!((a - b).abs() < 1e-5 * (1.0 + b.abs()), "{a} vs {b}");
        }
    }

    #[test]
    fn diagonal_estimate_and_limits() {
        assert_eq!(diag_variance(4.0, 0.25), Some(4.0));
        assert_eq!(diag_variance(0.0, 0.0), None);
        assert_eq!(diag_variance(1.0, 0.0), None);
        assert_eq!(diag_variance(1e30, 1e-30), Some(VARIANCE_LIMITS.1));
        assert_eq!(variance_from_gradient(0.5), 2.0);
        assert_eq!(variance_from_gradient(0.0), VARIANCE_LIMITS.1);
    }
}
