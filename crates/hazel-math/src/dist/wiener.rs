//! The Wiener first passage time distribution, Stan's 4-parameter `wiener_lpdf(y | α, τ, β,
//! δ)`: the density of hitting the upper boundary at time y of a diffusion with boundary
//! separation α, non-decision time τ, a-priori bias β and drift δ. It is the lower-boundary
//! density `f(t | v, a, w)` of Navarro & Fuss (2009) at `t = y − τ`, `v = −δ`, `w = 1 − β`:
//! `f = a⁻² exp(−v a w − v² t / 2) G(t / a², w)` with the small-time series
//! `G = (2π u³)^{−½} Σ_k (w + 2k) exp(−(w + 2k)² / (2u))` below u = 1 and the large-time
//! series `G = π Σ_k k exp(−k² π² u / 2) sin(k π w)` from u = 1, 10 (respectively 21) terms
//! each, which leaves a truncation error below e^{−190} relative. Partials by differentiating
//! the series term by term. The 5-parameter form adds drift variability sv in closed form;
//! the 7-parameter form ([`wiener7`]) integrates the 5-parameter density numerically over the
//! uniform variability of the bias (sw) and of the non-decision time (st0).

use super::MathError;
use std::f64::consts::PI;

/// log G(u, w) with ∂/∂u and ∂/∂w.
fn log_series(u: f64, w: f64) -> (f64, f64, f64) {
    if u < 1.0 {
        // Factor out the k = 0 term's exponential, the largest.
        let (mut s, mut su, mut sw) = (0.0, 0.0, 0.0);
        for k in -10i32..=10 {
            let x = w + 2.0 * k as f64;
            let e = (-(x * x - w * w) / (2.0 * u)).exp();
            s += x * e;
            su += x * e * x * x / (2.0 * u * u);
            sw += e * (1.0 - x * x / u);
        }
        // The k = 0 factor exp(−w²/(2u)) and its derivatives enter through the log.
        let log_g = -0.5 * (2.0 * PI).ln() - 1.5 * u.ln() - w * w / (2.0 * u) + s.ln();
        // d/du log G: −1.5/u + w²/(2u²) + (d/du of the scaled sum)/s, where the scaled sum's
        // u-derivative is Σ x e (x² − w²)/(2u²) = su − s w²/(2u²).
        let dlog_u = -1.5 / u + w * w / (2.0 * u * u) + (su - s * w * w / (2.0 * u * u)) / s;
        // d/dw: −w/u + (Σ ∂/∂w [x e'] )/s with e' = exp(−(x² − w²)/(2u)):
        // ∂/∂w [x e'] = e' (1 − x²/u) + x e' w/u.
        let dlog_w = -w / u + (sw + s * w / u) / s;
        (log_g, dlog_u, dlog_w)
    } else {
        let (mut s, mut su, mut sw) = (0.0, 0.0, 0.0);
        for k in 1..=21 {
            let kf = k as f64;
            let e = (-kf * kf * PI * PI * u / 2.0).exp();
            let (sn, cs) = (kf * PI * w).sin_cos();
            s += kf * e * sn;
            su += kf * e * sn * (-kf * kf * PI * PI / 2.0);
            sw += kf * e * cs * kf * PI;
        }
        (PI.ln() + s.ln(), su / s, sw / s)
    }
}

/// `wiener_lpdf(y | alpha, tau, beta, delta)`: `x[..5]`, partials into `grad[..5]`.
pub fn wiener4(x: &[f64], grad: &mut [f64]) -> Result<f64, MathError> {
    let mut g = [0.0; 6];
    let lp = wiener5(&[x[0], x[1], x[2], x[3], x[4], 0.0], &mut g)?;
    grad[..5].copy_from_slice(&g[..5]);
    Ok(lp)
}

/// `wiener_lpdf(y | alpha, tau, beta, delta, sv)` with inter-trial drift variability sv:
/// the drift integrated out analytically (Blurton, Kesselmeier & Gondan 2017),
/// `log f = −2 log a + log G(u, w) + (a²w²sv² − 2avw − v²t) / (2(1 + sv²t)) − ½ log(1 + sv²t)`.
/// `x[..6]`, partials into `grad[..6]`.
pub fn wiener5(x: &[f64], grad: &mut [f64]) -> Result<f64, MathError> {
    let (y, alpha, tau, beta, delta, sv) = (x[0], x[1], x[2], x[3], x[4], x[5]);
    let err = |m: String| Err(MathError::new(format!("wiener_lpdf: {m}")));
    if !(y.is_finite() && y > 0.0) {
        return err(format!(
            "Random variable is {y}, but must be positive finite!"
        ));
    }
    if !(alpha.is_finite() && alpha > 0.0) {
        return err(format!(
            "Boundary separation is {alpha}, but must be positive finite!"
        ));
    }
    if !(tau.is_finite() && tau >= 0.0) {
        return err(format!(
            "Nondecision time is {tau}, but must be nonnegative finite!"
        ));
    }
    if !(beta > 0.0 && beta < 1.0) {
        return err(format!(
            "A-priori bias is {beta}, but must be in the interval (0, 1)"
        ));
    }
    if !delta.is_finite() {
        return err(format!("Drift rate is {delta}, but must be finite!"));
    }
    if !(sv.is_finite() && sv >= 0.0) {
        return err(format!(
            "Inter-trial variability in drift rate is {sv}, but must be nonnegative finite!"
        ));
    }
    if y <= tau {
        return err(format!(
            "Random variable = {y}, but must be greater than nondecision time = {tau}"
        ));
    }
    let t = y - tau;
    let (a, v, w) = (alpha, -delta, 1.0 - beta);
    let u = t / (a * a);
    let (log_g, gu, gw) = log_series(u, w);
    let sv2 = sv * sv;
    let d = 1.0 + sv2 * t;
    let num = a * a * w * w * sv2 - 2.0 * a * v * w - v * v * t;
    let lp = -2.0 * a.ln() + log_g + num / (2.0 * d) - 0.5 * d.ln();
    let d_t = gu / (a * a) + (-v * v * d - num * sv2) / (2.0 * d * d) - sv2 / (2.0 * d);
    let d_a = -2.0 / a + gu * (-2.0 * t / (a * a * a)) + (a * w * w * sv2 - v * w) / d;
    let d_w = gw + (a * a * w * sv2 - a * v) / d;
    let d_v = (-a * w - v * t) / d;
    let d_sv = a * a * w * w * sv / d - num * sv * t / (d * d) - sv * t / d;
    grad[..6].copy_from_slice(&[d_t, d_a, -d_t, -d_w, -d_v, d_sv]);
    Ok(lp)
}

/// Relative tolerance of [`wiener7`]'s quadratures (each of the nested two).
const W7_REL_TOL: f64 = 1e-10;
/// [`wiener7`]'s relative tolerance where [`W7_REL_TOL`] is not reached: Stan's density
/// precision.
const W7_REL_TOL_FALLBACK: f64 = 1e-6;
/// Absolute tolerance of [`wiener7`]'s quadratures, of the integrand scaled to about 1 at its
/// largest: contributions that small relative to the peak are not resolved.
const W7_ABS_TOL: f64 = 1e-12;
/// Bisection depth of [`wiener7`]'s Gauss–Kronrod quadratures.
const W7_MAX_DEPTH: usize = 24;
/// Values integrated by [`wiener7`]: the density and its 8 partials' numerators.
const W7_DIM: usize = 9;

/// `wiener_lpdf(y | alpha, tau, beta, delta, sv, sw, st0)`, Stan's 7-parameter form: the
/// 5-parameter density averaged over the a-priori bias `β' ~ U(β − sw/2, β + sw/2)` and the
/// non-decision time `τ' ~ U(τ, τ + st0)` (a dimension with zero width is not integrated).
/// With `β' = β + sw (s − ½)` and `τ' = τ + st0 r` the density is
/// `I = ∫₀^{r_max} ∫₀¹ f5(y | α, τ', β', δ, sv) ds dr` with `r_max = min(1, (y − τ)/st0)`
/// (`f5 = 0` for `τ' ≥ y`, and it tends to 0 with all its derivatives there), so every
/// partial is the integral of `f5 ∂log f5/∂θ` on the same fixed domain:
/// `∂/∂sw` integrates `f5 ∂_β log f5 (s − ½)` and `∂/∂st0` integrates `f5 ∂_τ log f5 r`
/// (equal to Stan's Leibniz-rule forms). Nested adaptive Gauss–Kronrod quadratures (relative
/// tolerance 1e-10 each, or 1e-6, Stan's density precision, where that fails; absolute 1e-12,
/// at most 24 bisections deep) of `f5 / max f5` (the
/// largest on a 9 × 9 grid), so a density far below the smallest double keeps its log. As Stan, a partial in sw (st0) is 0 where sw (st0) is 0, and sw = st0 = 0
/// is the 5-parameter form. `x[..8]`, partials into `grad[..8]`.
pub fn wiener7(x: &[f64], grad: &mut [f64]) -> Result<f64, MathError> {
    let (y, alpha, tau, beta, delta, sv, sw, st0) =
        (x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]);
    // The 5-parameter checks (y, α, τ, β, δ, sv and y > τ) first.
    let mut g5 = [0.0; 6];
    let lp_centre5 = wiener5(&x[..6], &mut g5)?;
    let err = |m: String| Err(MathError::new(format!("wiener_lpdf: {m}")));
    if !(0.0..=1.0).contains(&sw) {
        return err(format!(
            "Inter-trial variability in A-priori bias is {sw}, but must be in the interval [0, 1]"
        ));
    }
    if !(st0.is_finite() && st0 >= 0.0) {
        return err(format!(
            "Inter-trial variability in Nondecision time is {st0}, but must be nonnegative finite!"
        ));
    }
    if beta - 0.5 * sw <= 0.0 {
        return err(format!(
            "Inter-trial variability in A-priori bias = {sw}, but must be smaller than 2*(A-priori bias) = {}",
            2.0 * beta
        ));
    }
    if beta + 0.5 * sw >= 1.0 {
        return err(format!(
            "Inter-trial variability in A-priori bias = {sw}, but must be smaller than 2*(1-A-priori bias) = {}",
            2.0 * (1.0 - beta)
        ));
    }
    if sw == 0.0 && st0 == 0.0 {
        grad[..6].copy_from_slice(&g5);
        grad[6] = 0.0;
        grad[7] = 0.0;
        return Ok(lp_centre5);
    }
    let r_max = if st0 > 0.0 {
        (1.0f64).min((y - tau) / st0)
    } else {
        0.0
    };
    // The scale: the largest log density on a 9 × 9 grid of the domain (inside the t0 cut),
    // so the scaled integrand neither overflows nor underflows where it matters.
    let mut scale = f64::NEG_INFINITY;
    for i in 0..9 {
        let r = r_max * (i as f64 + 0.5) / 9.0;
        for j in 0..9 {
            let s = (j as f64 + 0.5) / 9.0;
            let t = tau + st0 * r;
            let lp = wiener5(&[y, alpha, t, beta + sw * (s - 0.5), delta, sv], &mut g5)?;
            scale = scale.max(lp);
        }
    }
    if !scale.is_finite() {
        return err(format!(
            "the log density is {scale} across the integration domain"
        ));
    }
    // f5 / e^scale and its weighted partials at (r, s).
    let point = |r: f64, s: f64, out: &mut [f64]| -> Result<(), MathError> {
        out[..W7_DIM].iter_mut().for_each(|v| *v = 0.0);
        let t = tau + st0 * r;
        if y - t <= 0.0 {
            return Ok(());
        }
        let mut g = [0.0; 6];
        let lp = wiener5(&[y, alpha, t, beta + sw * (s - 0.5), delta, sv], &mut g)?;
        let f = (lp - scale).exp();
        if f == 0.0 {
            return Ok(());
        }
        out[0] = f;
        for k in 0..6 {
            out[k + 1] = f * g[k];
        }
        out[7] = f * g[3] * (s - 0.5);
        out[8] = f * g[2] * r;
        Ok(())
    };
    // Both quadratures at relative tolerance `rel_tol`.
    let run = |rel_tol: f64| -> Result<[f64; W7_DIM], MathError> {
        // The integral over s at one r.
        let inner = |r: f64, out: &mut [f64]| -> Result<(), MathError> {
            if sw == 0.0 {
                return point(r, 0.5, out);
            }
            let mut work = [0.0; 5 * W7_DIM];
            let mut f = |s: f64, _xc: f64, o: &mut [f64]| point(r, s, o);
            crate::quadrature::integrate(
                "wiener_lpdf",
                &mut f,
                0.0,
                1.0,
                crate::quadrature::Rule::GaussKronrod {
                    max_depth: W7_MAX_DEPTH,
                },
                rel_tol,
                W7_ABS_TOL,
                W7_DIM,
                out,
                &mut work,
            )
        };
        let mut tot = [0.0; W7_DIM];
        if st0 == 0.0 {
            inner(0.0, &mut tot)?;
        } else {
            let mut work = [0.0; 5 * W7_DIM];
            let mut f = |r: f64, _xc: f64, o: &mut [f64]| inner(r, o);
            crate::quadrature::integrate(
                "wiener_lpdf",
                &mut f,
                0.0,
                r_max,
                crate::quadrature::Rule::GaussKronrod {
                    max_depth: W7_MAX_DEPTH,
                },
                rel_tol,
                W7_ABS_TOL,
                W7_DIM,
                &mut tot,
                &mut work,
            )?;
        }
        Ok(tot)
    };
    // Where the tight tolerance is not reached within the depth, Stan's own precision (1e-6).
    let tot = run(W7_REL_TOL).or_else(|_| run(W7_REL_TOL_FALLBACK))?;
    let dens = tot[0];
    if !(dens > 0.0 && dens.is_finite()) {
        return err(format!(
            "the integrated density is {dens} relative to its largest value"
        ));
    }
    for k in 0..8 {
        grad[k] = tot[k + 1] / dens;
    }
    if sw == 0.0 {
        grad[6] = 0.0;
    }
    if st0 == 0.0 {
        grad[7] = 0.0;
    }
    Ok(scale + dens.ln())
}
