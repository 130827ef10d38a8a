//! Generalised hypergeometric functions `pFq(a; b; z) = Σ_k Π(a_i)_k / Π(b_j)_k · z^k / k!`
//! with their partials in every a_i, b_j and z, summed term by term:
//! `t_{k+1} = t_k · Π(a_i + k) / Π(b_j + k) · z / (k + 1)`,
//! `∂t_k/∂a_i = t_k Σ_{m<k} 1/(a_i + m)`, `∂t_k/∂b_j = −t_k Σ_{m<k} 1/(b_j + m)` and
//! `∂t_{k+1}/∂z = (k + 1) t_{k+1} / z` (formed without dividing by z).
//!
//! Domain (Stan's convergence conditions): p ≤ q for any z; p = q + 1 for |z| < 1; and any p
//! when some a_i is a non-positive integer (a polynomial). `hypergeometric_2F1` below −½ is
//! first mapped by Pfaff's transformation `₂F₁(a, b; c; z) = (1 − z)^{−a} ₂F₁(a, c − b; c;
//! z/(z − 1))`, so that every z < 1 converges quickly.

use crate::dist::MathError;

/// The most terms summed before giving up.
const MAX_TERMS: usize = 1_000_000;

fn polynomial_degree(a: &[f64]) -> Option<usize> {
    a.iter()
        .filter(|x| **x <= 0.0 && x.fract() == 0.0 && x.abs() < 1e9)
        .map(|x| (-x) as usize)
        .min()
}

/// `pFq(a; b; z)` and `∂/∂z`, adding `∂/∂a_i` and `∂/∂b_j` to `da` and `db` when given.
pub fn hypergeometric_pfq_grad(
    function: &str,
    a: &[f64],
    b: &[f64],
    z: f64,
    da: Option<&mut [f64]>,
    db: Option<&mut [f64]>,
) -> Result<(f64, f64), MathError> {
    if a.iter().chain(b).any(|x| !x.is_finite()) || !z.is_finite() {
        return Err(MathError::new(format!(
            "{function}: arguments must be finite"
        )));
    }
    if let Some(j) = b.iter().position(|x| *x <= 0.0 && x.fract() == 0.0) {
        return Err(MathError::new(format!(
            "{function}: b[{}] is {}, but must not be a non-positive integer",
            j + 1,
            b[j]
        )));
    }
    let degree = polynomial_degree(a);
    let (p, q) = (a.len(), b.len());
    let converges = degree.is_some() || p <= q || (p == q + 1 && z.abs() < 1.0);
    if !converges {
        return Err(MathError::new(format!(
            "{function}: the series of a {p}F{q} function does not converge at z = {z}"
        )));
    }
    let mut term = 1.0;
    let mut sum = 1.0;
    let mut dz = 0.0;
    // Running Σ 1/(a_i + m) and Σ 1/(b_j + m) for the partials (at most 64 parameters each
    // are tracked without allocating; more is refused).
    const MAX_PARAMS: usize = 64;
    if p > MAX_PARAMS || q > MAX_PARAMS {
        return Err(MathError::new(format!(
            "{function}: at most {MAX_PARAMS} parameters of each kind"
        )));
    }
    let mut sa = [0.0f64; MAX_PARAMS];
    let mut sb = [0.0f64; MAX_PARAMS];
    let mut ga = [0.0f64; MAX_PARAMS];
    let mut gb = [0.0f64; MAX_PARAMS];
    let want_a = da.is_some();
    let want_b = db.is_some();
    let mut small = 0;
    for k in 0..MAX_TERMS {
        let kf = k as f64;
        let mut ratio = z / (kf + 1.0);
        let mut zratio = 1.0;
        for &ai in a {
            ratio *= ai + kf;
            zratio *= ai + kf;
        }
        for &bj in b {
            ratio /= bj + kf;
            zratio /= bj + kf;
        }
        // ∂t_{k+1}/∂z = (k + 1) t_k · zratio / (k + 1) = t_k · zratio.
        let dz_term = term * zratio;
        if want_a {
            for (i, &ai) in a.iter().enumerate() {
                sa[i] += 1.0 / (ai + kf);
            }
        }
        if want_b {
            for (j, &bj) in b.iter().enumerate() {
                sb[j] += 1.0 / (bj + kf);
            }
        }
        term *= ratio;
        sum += term;
        dz += dz_term;
        if term == 0.0 && degree.is_some() {
            // A polynomial: every further term is 0.
            break;
        }
        if want_a {
            for i in 0..p {
                ga[i] += term * sa[i];
            }
        }
        if want_b {
            for j in 0..q {
                gb[j] -= term * sb[j];
            }
        }
        let scale = sum.abs().max(1e-300);
        let tiny = term.abs() <= 1e-17 * scale && dz_term.abs() <= 1e-17 * dz.abs().max(1e-300);
        // Past the largest term (|ratio| < 1) and negligible for a few terms in a row.
        if tiny && ratio.abs() < 1.0 {
            small += 1;
            if small >= 3 {
                break;
            }
        } else {
            small = 0;
        }
        if !sum.is_finite() {
            return Err(MathError::new(format!(
                "{function}: the series overflowed at z = {z}"
            )));
        }
        if k + 1 == MAX_TERMS {
            return Err(MathError::new(format!(
                "{function}: the series did not converge in {MAX_TERMS} terms at z = {z}"
            )));
        }
    }
    if let Some(d) = da {
        for i in 0..p {
            d[i] += ga[i];
        }
    }
    if let Some(d) = db {
        for j in 0..q {
            d[j] += gb[j];
        }
    }
    Ok((sum, dz))
}

/// `₂F₁(a, b; c; z)` and its partials `[∂a, ∂b, ∂c, ∂z]`; Pfaff's transformation below
/// z = −½.
pub fn hypergeometric_2f1_grad(
    a: f64,
    b: f64,
    c: f64,
    z: f64,
) -> Result<(f64, [f64; 4]), MathError> {
    const F: &str = "hypergeometric_2F1";
    if z < -0.5 {
        // F = (1 − z)^{−a} G(a, c − b; c; w), w = z / (z − 1).
        let w = z / (z - 1.0);
        let mut dg_a = [0.0; 2];
        let mut dg_c = [0.0; 1];
        let (g, dg_w) =
            hypergeometric_pfq_grad(F, &[a, c - b], &[c], w, Some(&mut dg_a), Some(&mut dg_c))?;
        let l = (-z).ln_1p();
        let s = (-a * l).exp();
        let value = s * g;
        let dw_dz = -1.0 / ((z - 1.0) * (z - 1.0));
        let grad = [
            -l * value + s * dg_a[0],
            -s * dg_a[1],
            s * (dg_a[1] + dg_c[0]),
            a / (1.0 - z) * value + s * dg_w * dw_dz,
        ];
        return Ok((value, grad));
    }
    let mut dab = [0.0; 2];
    let mut dc = [0.0; 1];
    let (value, dz) = hypergeometric_pfq_grad(F, &[a, b], &[c], z, Some(&mut dab), Some(&mut dc))?;
    Ok((value, [dab[0], dab[1], dc[0], dz]))
}
