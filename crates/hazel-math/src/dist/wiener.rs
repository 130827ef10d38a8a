//! The Wiener first passage time distribution, Stan's 4-parameter `wiener_lpdf(y | α, τ, β,
//! δ)`: the density of hitting the upper boundary at time y of a diffusion with boundary
//! separation α, non-decision time τ, a-priori bias β and drift δ. It is the lower-boundary
//! density `f(t | v, a, w)` of Navarro & Fuss (2009) at `t = y − τ`, `v = −δ`, `w = 1 − β`:
//! `f = a⁻² exp(−v a w − v² t / 2) G(t / a², w)` with the small-time series
//! `G = (2π u³)^{−½} Σ_k (w + 2k) exp(−(w + 2k)² / (2u))` below u = 1 and the large-time
//! series `G = π Σ_k k exp(−k² π² u / 2) sin(k π w)` from u = 1, 10 (respectively 21) terms
//! each, which leaves a truncation error below e^{−190} relative. Partials by differentiating
//! the series term by term. The 5-parameter form adds drift variability sv in closed form;
//! the 7-parameter form (sw, st0, numerical integration in Stan) is not here.

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
