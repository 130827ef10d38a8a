//! Adaptive quadrature for Stan's `integrate_1d` family, of a vector-valued integrand (the
//! value and its partials in the parameters, integrated at the same points, since
//! `∂/∂θ ∫ f = ∫ ∂f/∂θ`).
//!
//! - Double-exponential rules, as Stan runs Boost's: tanh-sinh on a finite interval (the
//!   integrand gets `xc`, the signed distance to the nearer end: `a − x` on the left half,
//!   `b − x` on the right, computed without cancellation), exp-sinh on a half-infinite one and
//!   sinh-sinh on the whole line (`xc` = NaN). Each level halves the step and adds the odd
//!   points; at least 4 levels, then until successive estimates differ by at most
//!   `max(rel_tol · L1, abs_tol)` (`L1 = ∫|f|`) or `max_levels` is reached.
//! - Adaptive Gauss–Kronrod (7/15 points), bisecting an interval while its error estimate
//!   `|K15 − G7|` exceeds `max(rel_tol · L1, abs_tol)` of that interval, at most `max_depth`
//!   times; infinite limits through `x = a + t/(1−t)` or `x = t/(1−t²)` (`xc` = NaN).
//!
//! The integrand writes `dim` values for one `(x, xc)`; convergence is judged on the first
//! (the value) and the others are accumulated on the same points. Nothing allocates except an
//! error message; the caller passes `work` of [`work_len`]`(dim)` values.

// Negated comparisons are deliberate: a NaN must fail every check.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use crate::dist::MathError;

/// The integrand: `(x, xc, out)` writes the value and its partials.
pub type Integrand<'f, E> = dyn FnMut(f64, f64, &mut [f64]) -> Result<(), E> + 'f;

/// Which rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    /// tanh-sinh / exp-sinh / sinh-sinh; at most this many refinements.
    DoubleExponential { max_levels: usize },
    /// Adaptive Gauss–Kronrod 7/15; at most this many bisections deep.
    GaussKronrod { max_depth: usize },
}

/// Scratch length for a `dim`-valued integrand.
pub fn work_len(dim: usize) -> usize {
    5 * dim
}

/// Largest |t| of the double-exponential rules (beyond it the abscissas reach the ends or
/// overflow in double precision).
const T_MAX: f64 = 6.0;
const HALF_PI: f64 = std::f64::consts::FRAC_PI_2;

/// `∫_a^b f` into `out` (`dim` values); `a ≤ b` (either may be infinite). `name` starts every
/// error message.
#[allow(clippy::too_many_arguments)]
pub fn integrate<E: std::fmt::Display>(
    name: &str,
    f: &mut Integrand<'_, E>,
    a: f64,
    b: f64,
    rule: Rule,
    rel_tol: f64,
    abs_tol: f64,
    dim: usize,
    out: &mut [f64],
    work: &mut [f64],
) -> Result<(), MathError> {
    let out = &mut out[..dim];
    out.iter_mut().for_each(|v| *v = 0.0);
    if a.is_nan() || b.is_nan() || !(a <= b) {
        return Err(MathError::new(format!(
            "{name}: lower limit is {a}, but must be less than or equal to the upper limit {b}"
        )));
    }
    if a == b {
        return Ok(());
    }
    match rule {
        Rule::GaussKronrod { max_depth } => {
            let map = map_for_gauss_kronrod(a, b);
            let mut st = GkState {
                f,
                map,
                rel_tol,
                abs_tol,
                dim,
                worst: 0.0,
                failed: false,
                top: None,
            };
            let (scratch, _) = work.split_at_mut(4 * dim);
            gk_recurse(&mut st, map.t0, map.t1, max_depth, out, scratch)?;
            if st.failed {
                return Err(MathError::new(format!(
                    "{name}: error estimate of integral {} exceeds the given relative tolerance times norm of integral",
                    st.worst
                )));
            }
            Ok(())
        }
        Rule::DoubleExponential { max_levels } => {
            // Stan splits an interval that crosses zero there (Boost's advice for these rules).
            if a < 0.0 && b > 0.0 {
                let (w1, rest) = work.split_at_mut(dim);
                de_segment(
                    name, f, a, 0.0, max_levels, rel_tol, abs_tol, dim, out, rest,
                )?;
                de_segment(name, f, 0.0, b, max_levels, rel_tol, abs_tol, dim, w1, rest)?;
                for (o, v) in out.iter_mut().zip(w1.iter()) {
                    *o += v;
                }
                Ok(())
            } else {
                de_segment(name, f, a, b, max_levels, rel_tol, abs_tol, dim, out, work)
            }
        }
    }
}

/// One double-exponential integral on `[a, b]` not crossing zero (or with an infinite end).
#[allow(clippy::too_many_arguments)]
fn de_segment<E: std::fmt::Display>(
    name: &str,
    f: &mut Integrand<'_, E>,
    a: f64,
    b: f64,
    max_levels: usize,
    rel_tol: f64,
    abs_tol: f64,
    dim: usize,
    out: &mut [f64],
    work: &mut [f64],
) -> Result<(), MathError> {
    // Abscissa, xc and weight at t (None: the point falls on an end or overflows).
    let point = |t: f64| -> Option<(f64, f64, f64)> {
        let u = HALF_PI * t.sinh();
        let du = HALF_PI * t.cosh();
        let (x, xc, w) = if a.is_finite() && b.is_finite() {
            let h = 0.5 * (b - a);
            // distance to the nearer end: h (1 − tanh|u|) = 2h / (1 + e^{2|u|})
            let e = (2.0 * u.abs()).exp();
            let d = 2.0 * h / (1.0 + e);
            let w = h * du * 4.0 * e / ((1.0 + e) * (1.0 + e));
            if u < 0.0 {
                (a + d, -d, w)
            } else {
                (b - d, d, w)
            }
        } else if a.is_finite() {
            let e = u.exp();
            (a + e, f64::NAN, e * du)
        } else if b.is_finite() {
            let e = u.exp();
            (b - e, f64::NAN, e * du)
        } else {
            (u.sinh(), f64::NAN, u.cosh() * du)
        };
        let inside = if a.is_finite() && b.is_finite() {
            x > a && x < b
        } else {
            x.is_finite()
        };
        (inside && w.is_finite() && w > 0.0).then_some((x, xc, w))
    };
    let (sum, rest) = work.split_at_mut(dim);
    let (l1, rest) = rest.split_at_mut(1);
    let (prev, rest) = rest.split_at_mut(dim);
    let fx = &mut rest[..dim];
    sum.iter_mut().for_each(|v| *v = 0.0);
    l1[0] = 0.0;
    let mut add = |t: f64, sum: &mut [f64], l1: &mut f64| -> Result<(), MathError> {
        let Some((x, xc, w)) = point(t) else {
            return Ok(());
        };
        f(x, xc, fx).map_err(|e| MathError::new(format!("{name}: {e}")))?;
        if !fx[0].is_finite() {
            return Err(MathError::new(format!(
                "{name}: the integrand is {} at x = {x}",
                fx[0]
            )));
        }
        for (s, v) in sum.iter_mut().zip(fx.iter()) {
            *s += w * v;
        }
        *l1 += w * fx[0].abs();
        Ok(())
    };
    // Level 0: step 1.
    let n0 = T_MAX as i64;
    for i in -n0..=n0 {
        add(i as f64, sum, &mut l1[0])?;
    }
    let mut h = 1.0;
    prev.copy_from_slice(sum);
    let mut err = f64::INFINITY;
    for level in 1..=max_levels.max(1) {
        h *= 0.5;
        // New points: odd multiples of h.
        let m = (T_MAX / h) as i64;
        let mut i = -m + if m % 2 == 0 { 1 } else { 0 };
        while i <= m {
            add(i as f64 * h, sum, &mut l1[0])?;
            i += 2;
        }
        let q = h * sum[0];
        let q_prev = 2.0 * h * prev[0];
        err = (q - q_prev).abs();
        prev.copy_from_slice(sum);
        if level >= 4 && err <= (rel_tol * h * l1[0]).max(abs_tol) {
            break;
        }
    }
    let l1_total = h * l1[0];
    if !(err <= (rel_tol * l1_total).max(abs_tol)) {
        return Err(MathError::new(format!(
            "{name}: error estimate of integral {err} exceeds the given relative tolerance times norm of integral"
        )));
    }
    for (o, s) in out.iter_mut().zip(sum.iter()) {
        *o = h * s;
    }
    Ok(())
}

/// The variable change of Boost's Gauss–Kronrod for infinite limits: `x(t)`, `dx/dt` on
/// `[t0, t1]`.
#[derive(Clone, Copy)]
struct GkMap {
    a: f64,
    b: f64,
    t0: f64,
    t1: f64,
}

fn map_for_gauss_kronrod(a: f64, b: f64) -> GkMap {
    match (a.is_finite(), b.is_finite()) {
        (true, true) => GkMap { a, b, t0: a, t1: b },
        (true, false) | (false, true) => GkMap {
            a,
            b,
            t0: 0.0,
            t1: 1.0,
        },
        (false, false) => GkMap {
            a,
            b,
            t0: -1.0,
            t1: 1.0,
        },
    }
}

impl GkMap {
    fn at(&self, t: f64) -> (f64, f64) {
        match (self.a.is_finite(), self.b.is_finite()) {
            (true, true) => (t, 1.0),
            (true, false) => (self.a + t / (1.0 - t), 1.0 / ((1.0 - t) * (1.0 - t))),
            (false, true) => (self.b - t / (1.0 - t), 1.0 / ((1.0 - t) * (1.0 - t))),
            (false, false) => {
                let d = 1.0 - t * t;
                (t / d, (1.0 + t * t) / (d * d))
            }
        }
    }
}

struct GkState<'f, E> {
    f: &'f mut Integrand<'f, E>,
    map: GkMap,
    rel_tol: f64,
    abs_tol: f64,
    dim: usize,
    worst: f64,
    failed: bool,
    /// The whole interval's `L1` estimate and half-width: a piece is also accepted when its
    /// error is within its share of `rel_tol · L1` of the whole.
    top: Option<(f64, f64)>,
}

const XGK: [f64; 8] = [
    0.991_455_371_120_812_6,
    0.949_107_912_342_758_5,
    0.864_864_423_359_769_1,
    0.741_531_185_599_394_4,
    0.586_087_235_467_691_1,
    0.405_845_151_377_397_2,
    0.207_784_955_007_898_5,
    0.0,
];
const WGK: [f64; 8] = [
    0.022_935_322_010_529_22,
    0.063_092_092_629_978_55,
    0.104_790_010_322_250_18,
    0.140_653_259_715_525_92,
    0.169_004_726_639_267_9,
    0.190_350_578_064_785_4,
    0.204_432_940_075_298_9,
    0.209_482_141_084_727_83,
];
/// Gauss weights of the nodes XGK[1], XGK[3], XGK[5], XGK[7].
const WG: [f64; 4] = [
    0.129_484_966_168_869_7,
    0.279_705_391_489_276_7,
    0.381_830_050_505_118_9,
    0.417_959_183_673_469_4,
];

fn gk_recurse<E: std::fmt::Display>(
    st: &mut GkState<'_, E>,
    t0: f64,
    t1: f64,
    depth: usize,
    out: &mut [f64],
    scratch: &mut [f64],
) -> Result<(), MathError> {
    let dim = st.dim;
    let (k, rest) = scratch.split_at_mut(dim);
    let (g, rest) = rest.split_at_mut(dim);
    let fx = &mut rest[..dim];
    k.iter_mut().for_each(|v| *v = 0.0);
    g.iter_mut().for_each(|v| *v = 0.0);
    let c = 0.5 * (t0 + t1);
    let h = 0.5 * (t1 - t0);
    let mut l1 = 0.0;
    for i in 0..8 {
        for sign in [-1.0, 1.0] {
            if i == 7 && sign > 0.0 {
                continue;
            }
            let t = c + sign * h * XGK[i];
            let (x, dx) = st.map.at(t);
            (st.f)(x, f64::NAN, fx).map_err(|e| MathError::new(e.to_string()))?;
            if !fx[0].is_finite() {
                return Err(MathError::new(format!(
                    "the integrand is {} at x = {x}",
                    fx[0]
                )));
            }
            let wk = WGK[i] * h * dx;
            for (kv, v) in k.iter_mut().zip(fx.iter()) {
                *kv += wk * v;
            }
            l1 += wk * fx[0].abs();
            if i % 2 == 1 {
                let wg = WG[i / 2] * h * dx;
                for (gv, v) in g.iter_mut().zip(fx.iter()) {
                    *gv += wg * v;
                }
            }
        }
    }
    let err = (k[0] - g[0]).abs();
    let (l1_top, h_top) = *st.top.get_or_insert((l1, h));
    let tol = (st.rel_tol * l1)
        .max(st.abs_tol)
        .max(st.rel_tol * l1_top * h / h_top);
    if err <= tol || depth == 0 {
        if !(err <= tol) {
            st.failed = true;
            st.worst = st.worst.max(err);
        }
        for (o, v) in out.iter_mut().zip(k.iter()) {
            *o += v;
        }
        return Ok(());
    }
    gk_recurse(st, t0, c, depth - 1, out, scratch)?;
    gk_recurse(st, c, t1, depth - 1, out, scratch)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(f: &mut Integrand<'_, String>, a: f64, b: f64, rule: Rule, dim: usize) -> Vec<f64> {
        let mut out = vec![0.0; dim];
        let mut work = vec![0.0; work_len(dim)];
        integrate("t", f, a, b, rule, 1e-10, 0.0, dim, &mut out, &mut work).unwrap();
        out
    }

    #[test]
    fn closed_forms() {
        let de = Rule::DoubleExponential { max_levels: 15 };
        let gk = Rule::GaussKronrod { max_depth: 15 };
        for rule in [de, gk] {
            // ∫_0^1 exp(-a x²) and its a-derivative.
            let a = 1.3;
            let v = run(
                &mut |x, _, o: &mut [f64]| {
                    o[0] = (-a * x * x).exp();
                    o[1] = -x * x * o[0];
                    Ok(())
                },
                0.0,
                1.0,
                rule,
                2,
            );
            let h = 1e-6;
            let erf =
                |a: f64| (std::f64::consts::PI / a).sqrt() / 2.0 * crate::special::erf(a.sqrt());
            assert!((v[0] - erf(a)).abs() < 1e-12, "{rule:?} {}", v[0]);
            assert!(
                (v[1] - (erf(a + h) - erf(a - h)) / (2.0 * h)).abs() < 1e-8,
                "{rule:?}"
            );
            // ∫_0^∞ exp(-x) = 1, ∫_{-∞}^{∞} exp(-x²/2) = √(2π), ∫_{-∞}^{-1} e^x = e^{-1}.
            let v = run(
                &mut |x, _, o: &mut [f64]| {
                    o[0] = (-x).exp();
                    Ok(())
                },
                0.0,
                f64::INFINITY,
                rule,
                1,
            );
            assert!((v[0] - 1.0).abs() < 1e-10, "{rule:?} {}", v[0]);
            let v = run(
                &mut |x, _, o: &mut [f64]| {
                    o[0] = (-0.5 * x * x).exp();
                    Ok(())
                },
                f64::NEG_INFINITY,
                f64::INFINITY,
                rule,
                1,
            );
            assert!(
                (v[0] - (2.0 * std::f64::consts::PI).sqrt()).abs() < 1e-10,
                "{rule:?} {}",
                v[0]
            );
            let v = run(
                &mut |x, _, o: &mut [f64]| {
                    o[0] = x.exp();
                    Ok(())
                },
                f64::NEG_INFINITY,
                -1.0,
                rule,
                1,
            );
            assert!((v[0] - (-1.0f64).exp()).abs() < 1e-10, "{rule:?} {}", v[0]);
            // Across zero (split there by the double-exponential rule).
            let v = run(
                &mut |x, _, o: &mut [f64]| {
                    o[0] = x.cos();
                    Ok(())
                },
                -1.0,
                2.0,
                rule,
                1,
            );
            assert!(
                (v[0] - (2.0f64.sin() + 1.0f64.sin())).abs() < 1e-12,
                "{rule:?} {}",
                v[0]
            );
        }
        // An integrable endpoint singularity: ∫_0^1 x^{-1/2} = 2 (tanh-sinh).
        let v = run(
            &mut |x, _, o: &mut [f64]| {
                o[0] = 1.0 / x.sqrt();
                Ok(())
            },
            0.0,
            1.0,
            de,
            1,
        );
        assert!((v[0] - 2.0).abs() < 1e-9, "{}", v[0]);
    }

    #[test]
    fn xc_is_the_signed_distance_to_the_nearer_end() {
        let mut seen = 0;
        let mut f = |x: f64, xc: f64, o: &mut [f64]| -> Result<(), String> {
            let want = if x - 1.0 < 3.0 - x { 1.0 - x } else { 3.0 - x };
            assert!(
                (xc - want).abs() <= 1e-15 * x.abs().max(1.0),
                "x {x} xc {xc}"
            );
            seen += 1;
            o[0] = 1.0;
            Ok(())
        };
        let v = run(
            &mut f,
            1.0,
            3.0,
            Rule::DoubleExponential { max_levels: 15 },
            1,
        );
        assert!((v[0] - 2.0).abs() < 1e-12);
        assert!(seen > 20);
    }

    #[test]
    fn bad_limits_and_non_convergence_are_errors() {
        let mut out = [0.0];
        let mut work = vec![0.0; work_len(1)];
        let mut f = |_: f64, _: f64, o: &mut [f64]| -> Result<(), String> {
            o[0] = 1.0;
            Ok(())
        };
        let e = integrate(
            "integrate_1d",
            &mut f,
            2.0,
            1.0,
            Rule::GaussKronrod { max_depth: 5 },
            1e-8,
            0.0,
            1,
            &mut out,
            &mut work,
        )
        .unwrap_err();
        assert!(e.message.contains("lower limit"), "{e}");
        // A divergent integral does not converge.
        let mut g = |x: f64, _: f64, o: &mut [f64]| -> Result<(), String> {
            o[0] = 1.0 / (1.0 + x);
            Ok(())
        };
        let e = integrate(
            "integrate_1d",
            &mut g,
            0.0,
            f64::INFINITY,
            Rule::GaussKronrod { max_depth: 5 },
            1e-8,
            0.0,
            1,
            &mut out,
            &mut work,
        );
        assert!(e.is_err());
    }
}
