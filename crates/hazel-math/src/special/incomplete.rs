//! Regularized incomplete gamma and beta functions with derivatives with respect to every
//! argument, shape parameters included.
//!
//! Values: the power series / Legendre continued fraction for the incomplete gamma function and
//! the continued fraction of the incomplete beta function (Abramowitz & Stegun 6.5.29, 6.5.31,
//! 26.5.8), evaluated by the modified Lentz method, each used on the side of the distribution's
//! mean where it converges fast, on the log scale so that tail probabilities do not underflow.
//!
//! Shape derivatives: the same series and continued fractions are evaluated on forward-mode
//! dual numbers carrying ∂/∂a and ∂/∂b, so the derivative is the exact derivative of the
//! converged approximation (the convergence test requires the tangents to have settled as well).
//! Derivatives with respect to x are the closed-form densities.

use super::{digamma, lbeta, lgamma, lgamma_stirling_diff, log1m, log1m_exp, LOG_SQRT_TWO_PI};

/// A value with its partial derivatives with respect to two shape parameters.
#[derive(Clone, Copy, Debug)]
struct Dual {
    v: f64,
    da: f64,
    db: f64,
}

impl Dual {
    fn constant(v: f64) -> Dual {
        Dual {
            v,
            da: 0.0,
            db: 0.0,
        }
    }
    fn add(self, o: Dual) -> Dual {
        Dual {
            v: self.v + o.v,
            da: self.da + o.da,
            db: self.db + o.db,
        }
    }
    fn mul(self, o: Dual) -> Dual {
        Dual {
            v: self.v * o.v,
            da: self.da * o.v + self.v * o.da,
            db: self.db * o.v + self.v * o.db,
        }
    }
    fn div(self, o: Dual) -> Dual {
        let inv = 1.0 / o.v;
        let v = self.v * inv;
        Dual {
            v,
            da: (self.da - v * o.da) * inv,
            db: (self.db - v * o.db) * inv,
        }
    }
    fn recip(self) -> Dual {
        let v = 1.0 / self.v;
        Dual {
            v,
            da: -self.da * v * v,
            db: -self.db * v * v,
        }
    }
    fn scale(self, s: f64) -> Dual {
        Dual {
            v: self.v * s,
            da: self.da * s,
            db: self.db * s,
        }
    }
    /// Lentz's guard against zero denominators, applied to the value only.
    fn guard(self) -> Dual {
        if self.v.abs() < TINY {
            Dual { v: TINY, ..self }
        } else {
            self
        }
    }
}

const TINY: f64 = 1e-300;
const EPS: f64 = 1e-16;
const MAX_ITER: usize = 100_000;

/// d - log(1 + d), accurate for small d (the leading term is d²/2).
fn d_minus_log1p(d: f64) -> f64 {
    if d.abs() < 0.01 {
        // d²/2 - d³/3 + d⁴/4 - … to 1e-17 relative
        let mut term = d * d;
        let mut sum = 0.0;
        for k in 2..12 {
            sum += term / k as f64 * if k % 2 == 0 { 1.0 } else { -1.0 };
            term *= d;
        }
        sum
    } else {
        d - d.ln_1p()
    }
}

/// Shapes from which the Stirling forms of the prefactors below are used: there the naive
/// forms lose ~|a log x| · ε to cancellation between terms of size a.
const STIRLING_SHAPE: f64 = 10.0;

/// log(x^a e^{-x} / Γ(a)), the prefactor of both incomplete gamma expansions.
fn log_gamma_prefactor(a: f64, x: f64) -> f64 {
    if a < STIRLING_SHAPE {
        return a * x.ln() - x - lgamma(a);
    }
    // a log x - x - log Γ(a) = -a (d - log1p d) + ½ log a - ½ log 2π - (Stirling remainder),
    // d = (x - a)/a
    let d = (x - a) / a;
    -a * d_minus_log1p(d) + 0.5 * a.ln() - LOG_SQRT_TWO_PI - lgamma_stirling_diff(a)
}

/// log(x^a (1-x)^b / B(a, b)), the prefactor of the incomplete beta continued fraction.
fn log_beta_prefactor(a: f64, b: f64, x: f64) -> f64 {
    if a < STIRLING_SHAPE || b < STIRLING_SHAPE {
        return a * x.ln() + b * log1m(x) - lbeta(a, b);
    }
    // With p = a/(a+b), q = b/(a+b), d₁ = (x-p)/p, d₂ = (p-x)/q (so a d₁ + b d₂ = 0):
    // a log x + b log(1-x) - log B(a,b)
    //   = -a (d₁ - log1p d₁) - b (d₂ - log1p d₂) + ½ log(ab/(a+b)) - ½ log 2π - remainders.
    let total = a + b;
    let p = a / total;
    let q = b / total;
    let d1 = (x - p) / p;
    let d2 = (p - x) / q;
    let remainders =
        lgamma_stirling_diff(a) + lgamma_stirling_diff(b) - lgamma_stirling_diff(total);
    -a * d_minus_log1p(d1) - b * d_minus_log1p(d2) + 0.5 * (a * b / total).ln()
        - LOG_SQRT_TWO_PI
        - remainders
}

/// log of a probability and of its complement, with ∂/∂(shape) of each log.
#[derive(Clone, Copy, Debug)]
struct LogPair {
    log_lower: f64,
    dlog_lower: (f64, f64),
    log_upper: f64,
    dlog_upper: (f64, f64),
}

impl LogPair {
    /// From log P and its shape derivatives, fill in log(1 - P).
    fn from_lower(log_p: f64, d: (f64, f64)) -> LogPair {
        let log_q = log1m_exp(log_p.min(0.0));
        let ratio = -(log_p - log_q).exp();
        LogPair {
            log_lower: log_p,
            dlog_lower: d,
            log_upper: log_q,
            dlog_upper: (ratio * d.0, ratio * d.1),
        }
    }
    fn swapped(self) -> LogPair {
        LogPair {
            log_lower: self.log_upper,
            dlog_lower: self.dlog_upper,
            log_upper: self.log_lower,
            dlog_upper: self.dlog_lower,
        }
    }
}

/// Value and gradient of a regularized incomplete gamma function P(a, x) or Q(a, x).
#[derive(Clone, Copy, Debug)]
pub(crate) struct IncGammaGrad {
    /// The function value.
    pub value: f64,
    /// ∂/∂a.
    pub da: f64,
    /// ∂/∂x.
    pub dx: f64,
}

/// log P(a, x) and log Q(a, x) with their a-derivatives; a > 0, 0 < x < ∞.
fn inc_gamma_logs(a: f64, x: f64) -> LogPair {
    if x < a + 1.0 {
        // P = x^a e^{-x} / Γ(a+1) · Σ_n x^n / ((a+1)…(a+n))
        let mut term = Dual {
            v: 1.0,
            da: 0.0,
            db: 0.0,
        };
        let mut sum = term;
        for n in 1..MAX_ITER {
            let denom = a + n as f64;
            // term_n = term_{n-1} · x / (a + n), d/da: -term_n/(a+n) extra.
            let v = term.v * x / denom;
            let da = term.da * x / denom - v / denom;
            term = Dual { v, da, db: 0.0 };
            sum = sum.add(term);
            if term.v.abs() < EPS * sum.v.abs() && term.da.abs() <= EPS * sum.da.abs().max(1e-300) {
                break;
            }
        }
        let log_pref = log_gamma_prefactor(a, x) - a.ln();
        let dlog_pref = x.ln() - digamma(a + 1.0);
        let log_p = log_pref + sum.v.ln();
        let dlog_p = dlog_pref + sum.da / sum.v;
        LogPair::from_lower(log_p, (dlog_p, 0.0))
    } else {
        // Q = x^a e^{-x} / Γ(a) · 1/(x + 1 - a - 1·(1-a)/(x + 3 - a - …))
        let mut b = Dual {
            v: x + 1.0 - a,
            da: -1.0,
            db: 0.0,
        };
        let mut c = Dual::constant(1.0 / TINY);
        let mut d = b.guard().recip();
        let mut h = d;
        for i in 1..MAX_ITER {
            let fi = i as f64;
            let an = Dual {
                v: -fi * (fi - a),
                da: fi,
                db: 0.0,
            };
            b = b.add(Dual::constant(2.0));
            d = an.mul(d).add(b).guard().recip();
            c = b.add(an.div(c)).guard();
            let del = d.mul(c);
            h = h.mul(del);
            if (del.v - 1.0).abs() < EPS && (del.da * h.v).abs() <= EPS * h.da.abs().max(1e-300) {
                break;
            }
        }
        let log_pref = log_gamma_prefactor(a, x);
        let dlog_pref = x.ln() - digamma(a);
        let log_q = log_pref + h.v.ln();
        let dlog_q = dlog_pref + h.da / h.v;
        LogPair::from_lower(log_q, (dlog_q, 0.0)).swapped()
    }
}

/// log P(a, x), log Q(a, x) and their derivatives with respect to a and x, handling the
/// boundary values of x. Returns None outside the domain (a ≤ 0, x < 0, NaN).
fn gamma_logs_full(a: f64, x: f64) -> Option<(LogPair, f64, f64)> {
    if a.is_nan() || x.is_nan() || a <= 0.0 || x < 0.0 || a.is_infinite() {
        return None;
    }
    if x == 0.0 {
        let pair = LogPair {
            log_lower: f64::NEG_INFINITY,
            dlog_lower: (0.0, 0.0),
            log_upper: 0.0,
            dlog_upper: (0.0, 0.0),
        };
        return Some((pair, 0.0, 0.0));
    }
    if x == f64::INFINITY {
        let pair = LogPair {
            log_lower: 0.0,
            dlog_lower: (0.0, 0.0),
            log_upper: f64::NEG_INFINITY,
            dlog_upper: (0.0, 0.0),
        };
        return Some((pair, 0.0, 0.0));
    }
    let pair = inc_gamma_logs(a, x);
    // density of the gamma(a, 1) distribution at x, on the log scale
    let log_density = log_gamma_prefactor(a, x) - x.ln();
    let dlog_p_dx = (log_density - pair.log_lower).exp();
    let dlog_q_dx = -(log_density - pair.log_upper).exp();
    Some((pair, dlog_p_dx, dlog_q_dx))
}

/// Regularized lower incomplete gamma function P(a, x) = γ(a, x)/Γ(a). NaN outside a > 0, x ≥ 0.
pub fn gamma_p(a: f64, x: f64) -> f64 {
    gamma_p_grad(a, x).value
}

/// Regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x).
pub fn gamma_q(a: f64, x: f64) -> f64 {
    gamma_q_grad(a, x).value
}

/// P(a, x) with ∂P/∂a and ∂P/∂x.
pub(crate) fn gamma_p_grad(a: f64, x: f64) -> IncGammaGrad {
    inc_gamma_grad(a, x, false, false)
}

/// Q(a, x) with ∂Q/∂a and ∂Q/∂x.
pub(crate) fn gamma_q_grad(a: f64, x: f64) -> IncGammaGrad {
    inc_gamma_grad(a, x, true, false)
}

/// log P(a, x) with its derivatives (∂/∂a, ∂/∂x); accurate when P underflows.
pub(crate) fn log_gamma_p_grad(a: f64, x: f64) -> IncGammaGrad {
    inc_gamma_grad(a, x, false, true)
}

/// log Q(a, x) with its derivatives (∂/∂a, ∂/∂x); accurate when Q underflows.
pub(crate) fn log_gamma_q_grad(a: f64, x: f64) -> IncGammaGrad {
    inc_gamma_grad(a, x, true, true)
}

/// P(a, x) (Q when `upper`), or its log when `log`, with the derivatives in `a` and `x`, from
/// [`gamma_logs_full`]'s logs (NaN everywhere outside its domain).
fn inc_gamma_grad(a: f64, x: f64, upper: bool, log: bool) -> IncGammaGrad {
    let Some((pair, dlog_p_dx, dlog_q_dx)) = gamma_logs_full(a, x) else {
        return IncGammaGrad {
            value: f64::NAN,
            da: f64::NAN,
            dx: f64::NAN,
        };
    };
    let (log_value, dlog_da, dlog_dx) = if upper {
        (pair.log_upper, pair.dlog_upper.0, dlog_q_dx)
    } else {
        (pair.log_lower, pair.dlog_lower.0, dlog_p_dx)
    };
    if log {
        IncGammaGrad {
            value: log_value,
            da: dlog_da,
            dx: dlog_dx,
        }
    } else {
        let value = log_value.exp();
        IncGammaGrad {
            value,
            da: value * dlog_da,
            dx: value * dlog_dx,
        }
    }
}

/// Value and gradient of the regularized incomplete beta function I_x(a, b) (or a log of it).
#[derive(Clone, Copy, Debug)]
pub(crate) struct IncBetaGrad {
    /// The value.
    pub value: f64,
    /// ∂/∂a.
    pub da: f64,
    /// ∂/∂b.
    pub db: f64,
    /// ∂/∂x.
    pub dx: f64,
}

/// log I_x(a, b) by the continued fraction, for x ≤ (a+1)/(a+b+2) where it converges fast.
fn inc_beta_cf_logs(a: f64, b: f64, x: f64) -> LogPair {
    let one = Dual::constant(1.0);
    let ad = Dual {
        v: a,
        da: 1.0,
        db: 0.0,
    };
    let bd = Dual {
        v: b,
        da: 0.0,
        db: 1.0,
    };
    let qab = ad.add(bd);
    let qap = ad.add(one);
    let qam = ad.add(Dual::constant(-1.0));
    let mut c = one;
    let mut d = one.add(qab.scale(-x).div(qap)).guard().recip();
    let mut h = d;
    for m in 1..MAX_ITER {
        let fm = m as f64;
        let m2 = 2.0 * fm;
        // even step: m (b - m) x / ((a + 2m - 1)(a + 2m))
        let num = bd.add(Dual::constant(-fm)).scale(fm * x);
        let den = qam.add(Dual::constant(m2)).mul(ad.add(Dual::constant(m2)));
        let aa = num.div(den);
        d = one.add(aa.mul(d)).guard().recip();
        c = one.add(aa.div(c)).guard();
        h = h.mul(d).mul(c);
        // odd step: -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1))
        let num = ad
            .add(Dual::constant(fm))
            .mul(qab.add(Dual::constant(fm)))
            .scale(-x);
        let den = ad.add(Dual::constant(m2)).mul(qap.add(Dual::constant(m2)));
        let aa = num.div(den);
        d = one.add(aa.mul(d)).guard().recip();
        c = one.add(aa.div(c)).guard();
        let del = d.mul(c);
        h = h.mul(del);
        if (del.v - 1.0).abs() < EPS
            && (del.da * h.v).abs() <= EPS * h.da.abs().max(1e-300)
            && (del.db * h.v).abs() <= EPS * h.db.abs().max(1e-300)
        {
            break;
        }
    }
    let dab = digamma(a + b);
    let log_pref = log_beta_prefactor(a, b, x) - a.ln();
    let dlog_pref_da = x.ln() - (digamma(a) - dab) - 1.0 / a;
    let dlog_pref_db = log1m(x) - (digamma(b) - dab);
    let log_i = log_pref + h.v.ln();
    LogPair::from_lower(
        log_i,
        (dlog_pref_da + h.da / h.v, dlog_pref_db + h.db / h.v),
    )
}

/// log I_x(a, b) and log(1 - I_x(a, b)) with derivatives (∂/∂a, ∂/∂b) and the x-derivatives of
/// each log. None outside a > 0, b > 0, 0 ≤ x ≤ 1.
fn beta_logs_full(a: f64, b: f64, x: f64) -> Option<(LogPair, f64, f64)> {
    if a.is_nan() || b.is_nan() || x.is_nan() || a <= 0.0 || b <= 0.0 || !(0.0..=1.0).contains(&x) {
        return None;
    }
    if a.is_infinite() || b.is_infinite() {
        return None;
    }
    if x == 0.0 || x == 1.0 {
        let (lower, upper) = if x == 0.0 {
            (f64::NEG_INFINITY, 0.0)
        } else {
            (0.0, f64::NEG_INFINITY)
        };
        let pair = LogPair {
            log_lower: lower,
            dlog_lower: (0.0, 0.0),
            log_upper: upper,
            dlog_upper: (0.0, 0.0),
        };
        return Some((pair, 0.0, 0.0));
    }
    let pair = if x <= (a + 1.0) / (a + b + 2.0) {
        inc_beta_cf_logs(a, b, x)
    } else {
        // I_x(a, b) = 1 - I_{1-x}(b, a): the roles of a and b swap in the derivatives too.
        let swapped = inc_beta_cf_logs(b, a, 1.0 - x);
        LogPair {
            log_lower: swapped.log_upper,
            dlog_lower: (swapped.dlog_upper.1, swapped.dlog_upper.0),
            log_upper: swapped.log_lower,
            dlog_upper: (swapped.dlog_lower.1, swapped.dlog_lower.0),
        }
    };
    let log_density = log_beta_prefactor(a, b, x) - x.ln() - log1m(x);
    let dlog_lower_dx = (log_density - pair.log_lower).exp();
    let dlog_upper_dx = -(log_density - pair.log_upper).exp();
    Some((pair, dlog_lower_dx, dlog_upper_dx))
}

const NAN_BETA: IncBetaGrad = IncBetaGrad {
    value: f64::NAN,
    da: f64::NAN,
    db: f64::NAN,
    dx: f64::NAN,
};

/// Regularized incomplete beta function I_x(a, b).
pub fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    inc_beta_grad(a, b, x).value
}

/// I_x(a, b) with its partials.
pub(crate) fn inc_beta_grad(a: f64, b: f64, x: f64) -> IncBetaGrad {
    match beta_logs_full(a, b, x) {
        None => NAN_BETA,
        Some((pair, dx, _)) => {
            let value = pair.log_lower.exp();
            IncBetaGrad {
                value,
                da: value * pair.dlog_lower.0,
                db: value * pair.dlog_lower.1,
                dx: value * dx,
            }
        }
    }
}

/// log I_x(a, b) with the partials of the log.
pub(crate) fn log_inc_beta_grad(a: f64, b: f64, x: f64) -> IncBetaGrad {
    log_inc_beta_tail_grad(a, b, x, false)
}

/// log(1 - I_x(a, b)) with the partials of the log.
pub(crate) fn log1m_inc_beta_grad(a: f64, b: f64, x: f64) -> IncBetaGrad {
    log_inc_beta_tail_grad(a, b, x, true)
}

/// The log of one tail of the incomplete beta function, `log I_x(a, b)` or (`upper`)
/// `log(1 - I_x(a, b))`, with the partials of the log; NaN outside the domain.
fn log_inc_beta_tail_grad(a: f64, b: f64, x: f64, upper: bool) -> IncBetaGrad {
    match beta_logs_full(a, b, x) {
        None => NAN_BETA,
        Some((pair, _, dx_upper)) if upper => IncBetaGrad {
            value: pair.log_upper,
            da: pair.dlog_upper.0,
            db: pair.dlog_upper.1,
            dx: dx_upper,
        },
        Some((pair, dx_lower, _)) => IncBetaGrad {
            value: pair.log_lower,
            da: pair.dlog_lower.0,
            db: pair.dlog_lower.1,
            dx: dx_lower,
        },
    }
}

/// The inverse of the regularized incomplete beta function in x: the x in [0, 1] with
/// I_x(a, b) = p. NaN outside a > 0, b > 0, 0 ≤ p ≤ 1.
///
/// Newton's method on u = logit(x) applied to log I_x(a, b) - log p (or to the logs of the
/// complements when p > ½, so that both tails keep their relative accuracy), kept inside a
/// bracket that shrinks with every step and bisected when a step would leave it.
pub fn inv_inc_beta(a: f64, b: f64, p: f64) -> f64 {
    if a.is_nan() || b.is_nan() || p.is_nan() || a <= 0.0 || b <= 0.0 || !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    if a.is_infinite() || b.is_infinite() {
        return f64::NAN;
    }
    if p == 0.0 {
        return 0.0;
    }
    if p == 1.0 {
        return 1.0;
    }
    let upper = p > 0.5;
    let target = if upper { (-p).ln_1p() } else { p.ln() };
    // f(u) = log tail(x(u)) - target, increasing in u for the lower tail, decreasing for upper.
    let eval = |u: f64| -> (f64, f64) {
        let x = inv_logit_local(u);
        let g = if upper {
            log1m_inc_beta_grad(a, b, x)
        } else {
            log_inc_beta_grad(a, b, x)
        };
        (g.value - target, g.dx * x * (1.0 - x))
    };
    let mean = a / (a + b);
    let mut u = (mean / (1.0 - mean)).ln();
    let (mut lo, mut hi) = (f64::NEG_INFINITY, f64::INFINITY);
    for _ in 0..200 {
        let (f, df) = eval(u);
        // Exact hit, or u ran off to ±∞ (x underflowed to 0 or 1).
        if f == 0.0 || (!f.is_finite() && !u.is_finite()) {
            break;
        }
        // f > 0 means x is past the solution on the lower tail (before it on the upper).
        let too_far = (f > 0.0) != upper;
        if too_far {
            hi = u;
        } else {
            lo = u;
        }
        let newton = u - f / df;
        let next = if newton.is_finite() && newton > lo && newton < hi {
            newton
        } else if lo.is_finite() && hi.is_finite() {
            0.5 * (lo + hi)
        } else if lo.is_finite() {
            lo + 2.0 * (1.0 + lo.abs())
        } else {
            hi - 2.0 * (1.0 + hi.abs())
        };
        let done = (next - u).abs() <= 1e-15 * (1.0 + u.abs());
        u = next;
        if done || hi - lo <= 1e-15 * (1.0 + u.abs()) {
            break;
        }
    }
    inv_logit_local(u)
}

/// The logistic function as this Newton iteration was written, not [`crate::vmath::inv_logit`]:
/// the two round differently, and `inv_inc_beta`'s bits (hence the beta quantiles and rngs
/// built on it) are kept as they are.
fn inv_logit_local(u: f64) -> f64 {
    if u >= 0.0 {
        1.0 / (1.0 + (-u).exp())
    } else {
        let e = u.exp();
        e / (1.0 + e)
    }
}

/// Partials of [`inv_inc_beta`] with respect to (a, b, p), given x = inv_inc_beta(a, b, p), by
/// the implicit function theorem: ∂x/∂θ = -(∂I/∂θ)/(∂I/∂x), ∂x/∂p = 1/(∂I/∂x).
pub(crate) fn inv_inc_beta_grad(a: f64, b: f64, x: f64) -> [f64; 3] {
    let g = inc_beta_grad(a, b, x);
    [-g.da / g.dx, -g.db / g.dx, 1.0 / g.dx]
}
