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

/// Fits the low-rank plus diagonal metric to `n` draws and gradients (`draws[j·dim + i]` is
/// coordinate `i` of draw `j`). `None` when fewer than 2 draws, a quantity is not finite, or the
/// window is too degenerate for a positive definite estimate.
pub fn fit_low_rank(
    dim: usize,
    draws: &[f64],
    grads: &[f64],
    settings: &LowRankSettings,
) -> Option<LowRankFit> {
    fit(dim, draws, grads, settings, false)
}

/// [`fit_low_rank`], with the subspace projection skipped when `full_space` (the tests check
/// that both give the same metric).
fn fit(
    dim: usize,
    draws: &[f64],
    grads: &[f64],
    settings: &LowRankSettings,
    full_space: bool,
) -> Option<LowRankFit> {
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
    // The directions far enough from 1, at most max_rank of them (the farthest on the log
    // scale; ties keep the lower index), in ascending eigenvalue order.
    let mut kept: Vec<usize> = (0..k)
        .filter(|&j| values[j] > settings.cutoff || values[j] < 1.0 / settings.cutoff)
        .collect();
    if kept.len() > settings.max_rank {
        kept.sort_by(|&a, &b| {
            values[b]
                .ln()
                .abs()
                .total_cmp(&values[a].ln().abs())
                .then(a.cmp(&b))
        });
        kept.truncate(settings.max_rank);
        kept.sort_unstable();
    }
    let mut out_values = Vec::with_capacity(kept.len());
    let mut out_vectors = Vec::with_capacity(kept.len() * dim);
    for &j in &kept {
        let e = &vectors[j * k..(j + 1) * k];
        let start = out_vectors.len();
        match &basis {
            None => out_vectors.extend_from_slice(e),
            Some((q, _)) => {
                out_vectors.resize(start + dim, 0.0);
                multiply(q, dim, k, e, 1, &mut out_vectors[start..]);
            }
        }
        let u = &mut out_vectors[start..];
        let norm = u.iter().map(|v| v * v).sum::<f64>().sqrt();
        if !(norm.is_finite() && norm > 0.0) {
            return None;
        }
        u.iter_mut().for_each(|v| *v /= norm);
        out_values.push(values[j]);
    }
    Some(LowRankFit {
        scale,
        values: out_values,
        vectors: out_vectors,
    })
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

    /// Draws of a correlated Gaussian with their exact gradients: the fit recovers the
    /// covariance (to the sampling error of the draws). With fewer draws than dimensions the
    /// estimate is biased towards the diagonal (only the draws' span is seen), which is the
    /// method's, not checked here; the projection onto that span is checked exactly below.
    #[test]
    fn low_rank_fit_recovers_a_gaussian_covariance() {
        for (dim, n) in [(3usize, 400usize), (40, 100)] {
            // Covariance: diag(s²) + a strong common direction.
            let s: Vec<f64> = (0..dim).map(|i| 0.5 + i as f64 * 0.1).collect();
            let mut rng = hazel_rng::StreamRng::new(11, dim as u64, hazel_rng::Purpose::Sampler);
            let mut draws = Vec::new();
            let mut grads = Vec::new();
            // x = s ⊙ (z + 3 w 1/√dim) with w ~ N(0,1): Cov = S (I + 9 e eᵀ) S, e = 1/√dim.
            let e = 1.0 / (dim as f64).sqrt();
            for _ in 0..n {
                let w = rng.normal();
                let z: Vec<f64> = (0..dim).map(|_| rng.normal()).collect();
                let x: Vec<f64> = (0..dim).map(|i| s[i] * (z[i] + 3.0 * w * e)).collect();
                // Precision = S⁻¹ (I − (9/10) e eᵀ) S⁻¹; gradient = −Precision x.
                let y: Vec<f64> = (0..dim).map(|i| x[i] / s[i]).collect();
                let ey: f64 = y.iter().sum::<f64>() * e;
                let g: Vec<f64> = (0..dim).map(|i| -(y[i] - 0.9 * ey * e) / s[i]).collect();
                draws.extend(x);
                grads.extend(g);
            }
            let fit = fit_low_rank(dim, &draws, &grads, &LowRankSettings::default()).unwrap();
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
        let projected = dense(fit(dim, &draws, &grads, &settings, false).unwrap());
        let full = dense(fit(dim, &draws, &grads, &settings, true).unwrap());
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
