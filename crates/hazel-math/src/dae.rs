//! Implicit differential-algebraic equations `F(t, y, y'; θ) = 0` of index 1 (Stan's `dae`,
//! `dae_tol`), with forward sensitivities.
//!
//! Stan runs SUNDIALS IDAS; this is a variable-step, variable-order BDF (orders 1–5) of the same
//! family, written directly on the past values: at a new time `t₊`, `y'₊ = Σⱼ αⱼ y₍₊₋ⱼ₎` with
//! `αⱼ` the derivatives at `t₊` of the Lagrange basis on `t₊` and the `k` previous times, and
//! `F(t₊, y₊, y'₊) = 0` is solved by Newton's method with the exact iteration matrix
//! `∂F/∂y + α₀ ∂F/∂y'`. The predictor is the polynomial through the `k + 1` previous values
//! (at the first step `y₀ + h y'₀`); the local error is estimated from the corrector–predictor
//! difference (Milne's device) in IDAS's weighted RMS norm `wᵢ = rtol |yᵢ| + atol`, over the
//! states and the sensitivities (the latter once the predictor no longer reaches back to the
//! initial point, where an algebraic state's sensitivity column may jump). Steps change by at most a factor 2 up and 4 down; the order
//! rises after `k + 1` accepted steps at order `k` and falls after two failures in a row.
//! Steps end exactly at the requested times.
//!
//! Sensitivities (staggered direct): once a step's state has converged, each sensitivity
//! column solves the linear system `(∂F/∂y + α₀ ∂F/∂y') s₊ = −∂F/∂θ − ∂F/∂y' Σⱼ₌₁ αⱼ s₍₊₋ⱼ₎`
//! from the same BDF formula. Columns for the initial state start at the unit vectors. The
//! solution does not depend on `y'(t₀)` (a BDF step uses only past values of `y`; `y'₀` only
//! starts the predictor), so there are no columns for it — as in IDAS, whose order-1 corrector
//! is the same backward Euler step.
//!
//! The initial values must be consistent (`F(t₀, y₀, y'₀) ≈ 0`); like Stan, this solver does
//! not correct them.

// Index loops over several parallel arrays read more clearly than zipped iterators here.
#![allow(clippy::needless_range_loop)]

use crate::linalg::solve::{factor_len, lu_factor, lu_solve_transpose};
use std::fmt;

/// Why a DAE solve failed.
#[derive(Debug, Clone, PartialEq)]
pub enum DaeError {
    /// The residual function failed (its message).
    Residual(String),
    /// More than `max_num_steps` steps between two requested times.
    MaxSteps { t: f64, max_num_steps: u64 },
    /// The step size fell below what the time can resolve (error test or Newton failures).
    StepTooSmall { t: f64 },
    /// The iteration matrix `∂F/∂y + α₀ ∂F/∂y'` is singular (not an index-1 system, or
    /// inconsistent values).
    Singular { t: f64 },
    /// Invalid sizes, times or tolerances.
    Input(String),
}

impl fmt::Display for DaeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DaeError::Residual(m) => write!(f, "the DAE residual function failed: {m}"),
            DaeError::MaxSteps { t, max_num_steps } => write!(
                f,
                "max_num_steps ({max_num_steps}) exceeded before reaching t = {t}"
            ),
            DaeError::StepTooSmall { t } => write!(
                f,
                "at t = {t} the step size became too small (repeated error-test or \
                 convergence failures)"
            ),
            DaeError::Singular { t } => write!(
                f,
                "at t = {t} the iteration matrix dF/dy + c dF/dy' is singular (is the system \
                 of index 1?)"
            ),
            DaeError::Input(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for DaeError {}

/// `dae_tol`'s control arguments.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DaeTolerances {
    pub rtol: f64,
    pub atol: f64,
    pub max_num_steps: i64,
}

impl Default for DaeTolerances {
    /// Stan's defaults for `dae`.
    fn default() -> Self {
        DaeTolerances {
            rtol: 1e-10,
            atol: 1e-10,
            max_num_steps: 100_000_000,
        }
    }
}

/// A residual `F(t, y, y'; θ)` with its Jacobians.
pub trait DaeResidual {
    /// Number of states.
    fn n_states(&self) -> usize;
    /// Number of parameters the sensitivities are taken with respect to.
    fn n_params(&self) -> usize;
    /// `F(t, y, y')` into `res`.
    fn eval(&mut self, t: f64, y: &[f64], yp: &[f64], res: &mut [f64]) -> Result<(), String>;
    /// `F`, `∂F/∂y`, `∂F/∂y'` (row-major `n × n`) and `∂F/∂θ` (row-major `n × m`).
    #[allow(clippy::too_many_arguments)]
    fn eval_jac(
        &mut self,
        t: f64,
        y: &[f64],
        yp: &[f64],
        res: &mut [f64],
        jy: &mut [f64],
        jyp: &mut [f64],
        jp: &mut [f64],
    ) -> Result<(), String>;
}

/// Solution and sensitivities at the requested times.
#[derive(Debug, Clone, PartialEq)]
pub struct DaeSolution {
    pub n_states: usize,
    /// Number of sensitivity columns: the initial states (when requested), then the
    /// parameters.
    pub n_sens: usize,
    /// `y(t_j)` at `values[j*n + i]`.
    pub values: Vec<f64>,
    /// `∂y_i(t_j)/∂v_k` at `sens[(j*n_sens + k)*n + i]`.
    pub sens: Vec<f64>,
}

const MAX_ORDER: usize = 5;
const MAX_NEWTON: usize = 6;
/// Newton's convergence bound, in the error test's weighted RMS norm.
const NEWTON_TOL: f64 = 0.03;

/// One past point: time, state, sensitivities (column-major `n × n_sens`).
#[derive(Clone)]
struct Point {
    t: f64,
    y: Vec<f64>,
    s: Vec<f64>,
    /// The initial point, whose sensitivities need not be consistent (an algebraic state's
    /// column jumps at the first step).
    initial: bool,
}

/// Derivatives at `nodes[0]` of the Lagrange basis on `nodes`.
fn bdf_alphas(nodes: &[f64], alpha: &mut [f64]) {
    let t0 = nodes[0];
    alpha[0] = nodes[1..].iter().map(|tm| 1.0 / (t0 - tm)).sum();
    for j in 1..nodes.len() {
        let mut num = 1.0;
        let mut den = 1.0;
        for (m, tm) in nodes.iter().enumerate() {
            if m != j {
                den *= nodes[j] - tm;
                if m != 0 {
                    num *= t0 - tm;
                }
            }
        }
        alpha[j] = num / den;
    }
}

/// Values at `t` of the Lagrange basis on `nodes`.
fn lagrange_weights(nodes: &[f64], t: f64, w: &mut [f64]) {
    for j in 0..nodes.len() {
        let mut v = 1.0;
        for (m, tm) in nodes.iter().enumerate() {
            if m != j {
                v *= (t - tm) / (nodes[j] - tm);
            }
        }
        w[j] = v;
    }
}

fn wrms(e: &[f64], y: &[f64], tol: &DaeTolerances) -> f64 {
    if e.is_empty() {
        return 0.0;
    }
    let s: f64 = e
        .iter()
        .zip(y)
        .map(|(ei, yi)| (ei / (tol.rtol * yi.abs() + tol.atol)).powi(2))
        .sum();
    (s / e.len() as f64).sqrt()
}

/// Solves `F(t, y, y'; θ) = 0`, `y(t₀) = y₀`, `y'(t₀) = y'₀` at `ts`, with forward
/// sensitivities to `y₀` (when `y0_sens`) and the parameters of `res` (see the module docs).
pub fn solve_dae<R: DaeResidual>(
    res: &mut R,
    yy0: &[f64],
    yp0: &[f64],
    y0_sens: bool,
    t0: f64,
    ts: &[f64],
    tol: &DaeTolerances,
) -> Result<DaeSolution, DaeError> {
    let n = res.n_states();
    let m = res.n_params();
    check_inputs(n, yy0, yp0, t0, ts, tol)?;
    let max_steps = tol.max_num_steps as u64;
    let n_y0 = if y0_sens { n } else { 0 };
    let ns = n_y0 + m;
    let rerr = DaeError::Residual;

    // Work arrays.
    let mut r = vec![0.0; n];
    let mut jy = vec![0.0; n * n];
    let mut jyp = vec![0.0; n * n];
    let mut jp = vec![0.0; n * m];
    let mut iter = vec![0.0; n * n];
    let mut lu = vec![0.0; factor_len(n)];
    let mut y = vec![0.0; n];
    let mut yp = vec![0.0; n];
    let mut y_pred = vec![0.0; n];
    let mut s_new = vec![0.0; n * ns];
    let mut s_pred = vec![0.0; n * ns];
    let mut hist_yp = vec![0.0; n];
    let mut col = vec![0.0; n];
    let mut past = vec![0.0; n];
    let mut alpha = [0.0; MAX_ORDER + 1];
    let mut wts = [0.0; MAX_ORDER + 2];
    let mut nodes = [0.0; MAX_ORDER + 2];
    let mut e = vec![0.0; n * (1 + ns)];
    let mut scale_ref = vec![0.0; n * (1 + ns)];

    let mut s0 = vec![0.0; n * ns];
    for i in 0..n_y0 {
        s0[i * n + i] = 1.0;
    }
    // History, most recent first.
    let mut hist: Vec<Point> = vec![Point {
        t: t0,
        y: yy0.to_vec(),
        s: s0,
        initial: true,
    }];
    // y' at the latest point (for the first step's predictor).
    let mut latest_yp = yp0.to_vec();

    let mut values = Vec::with_capacity(ts.len() * n);
    let mut sens = Vec::with_capacity(ts.len() * n * ns);

    // Initial step (IDAS-like): a small fraction of the interval, and of the scale of y'.
    let tdist = ts[ts.len() - 1] - t0;
    let ypnorm = wrms(yp0, yy0, tol);
    let mut h = 0.001 * tdist;
    if ypnorm * h > 0.5 {
        h = 0.5 / ypnorm;
    }
    let mut k = 1usize;
    let mut steps_at_k = 0usize;
    let mut fails = 0usize;

    for &t_out in ts {
        let mut steps: u64 = 0;
        while hist[0].t < t_out {
            let t_n = hist[0].t;
            let mut h_try = h;
            let mut hit = false;
            if t_n + h_try >= t_out - 1e-14 * t_out.abs().max(1.0) {
                h_try = t_out - t_n;
                hit = true;
            }
            if h_try <= 1e-14 * t_n.abs().max(1.0) {
                return Err(DaeError::StepTooSmall { t: t_n });
            }
            let t1 = if hit { t_out } else { t_n + h_try };
            let k_use = k.min(hist.len());
            // Corrector coefficients on t1 and the k previous times.
            nodes[0] = t1;
            for j in 0..k_use {
                nodes[1 + j] = hist[j].t;
            }
            bdf_alphas(&nodes[..k_use + 1], &mut alpha);
            // Predictor: through k + 1 past points, or y + h y' at the start.
            let full_pred = hist.len() > k_use;
            if full_pred {
                let np = k_use + 1;
                let pn: Vec<f64> = hist[..np].iter().map(|p| p.t).collect();
                lagrange_weights(&pn, t1, &mut wts);
                for i in 0..n {
                    y_pred[i] = (0..np).map(|j| wts[j] * hist[j].y[i]).sum();
                }
                for c in 0..n * ns {
                    s_pred[c] = (0..np).map(|j| wts[j] * hist[j].s[c]).sum();
                }
            } else {
                for i in 0..n {
                    y_pred[i] = hist[0].y[i] + h_try * latest_yp[i];
                }
                s_pred.copy_from_slice(&hist[0].s);
            }
            // y' = α₀ y + Σ αⱼ y_past: the past part.
            for i in 0..n {
                hist_yp[i] = (1..=k_use).map(|j| alpha[j] * hist[j - 1].y[i]).sum();
            }
            // Newton on G(y) = F(t1, y, α₀ y + hist_yp).
            y.copy_from_slice(&y_pred);
            let mut converged = false;
            for _ in 0..MAX_NEWTON {
                for i in 0..n {
                    yp[i] = alpha[0] * y[i] + hist_yp[i];
                }
                res.eval_jac(t1, &y, &yp, &mut r, &mut jy, &mut jyp, &mut jp)
                    .map_err(rerr)?;
                if !r.iter().all(|v| v.is_finite()) {
                    break;
                }
                for c in 0..n * n {
                    iter[c] = jy[c] + alpha[0] * jyp[c];
                }
                if lu_factor(&iter, n, &mut lu).is_none() {
                    return Err(DaeError::Singular { t: t1 });
                }
                for i in 0..n {
                    col[i] = -r[i];
                }
                lu_solve_transpose(&lu, n, &mut col, 1);
                for i in 0..n {
                    y[i] += col[i];
                }
                // Converged well inside the error test (IDAS stops at 0.33 of it; a smaller
                // bound cannot be met where rounding of one state feeds another held to atol).
                if wrms(&col, &y, tol) <= NEWTON_TOL {
                    converged = true;
                    break;
                }
            }
            let mut err = f64::INFINITY;
            if converged {
                for i in 0..n {
                    yp[i] = alpha[0] * y[i] + hist_yp[i];
                }
                // Sensitivities with the iteration matrix at the converged point.
                if ns > 0 {
                    res.eval_jac(t1, &y, &yp, &mut r, &mut jy, &mut jyp, &mut jp)
                        .map_err(rerr)?;
                    for c in 0..n * n {
                        iter[c] = jy[c] + alpha[0] * jyp[c];
                    }
                    if lu_factor(&iter, n, &mut lu).is_none() {
                        return Err(DaeError::Singular { t: t1 });
                    }
                    for kk in 0..ns {
                        // Σⱼ₌₁ αⱼ s_past for this column.
                        for (l, p) in past.iter_mut().enumerate() {
                            *p = (1..=k_use)
                                .map(|j| alpha[j] * hist[j - 1].s[kk * n + l])
                                .sum();
                        }
                        for i in 0..n {
                            let mut acc = 0.0;
                            for l in 0..n {
                                acc += jyp[i * n + l] * past[l];
                            }
                            if kk >= n_y0 {
                                acc += jp[i * m + (kk - n_y0)];
                            }
                            col[i] = -acc;
                        }
                        lu_solve_transpose(&lu, n, &mut col, 1);
                        s_new[kk * n..(kk + 1) * n].copy_from_slice(&col);
                    }
                }
                // Error estimate.
                let factor = if full_pred {
                    h_try / (t1 - hist[k_use].t)
                } else {
                    0.5
                };
                for i in 0..n {
                    e[i] = factor * (y[i] - y_pred[i]);
                    scale_ref[i] = y[i];
                }
                let mut n_err = n;
                if full_pred && !hist[..=k_use].iter().any(|p| p.initial) {
                    for c in 0..n * ns {
                        e[n + c] = factor * (s_new[c] - s_pred[c]);
                        scale_ref[n + c] = s_new[c];
                    }
                    n_err += n * ns;
                }
                err = wrms(&e[..n_err], &scale_ref[..n_err], tol);
            }
            let q = (k_use + 1) as f64;
            if err <= 1.0 {
                // Accept.
                fails = 0;
                let mut point = if hist.len() > MAX_ORDER + 1 {
                    hist.pop().expect("non-empty history")
                } else {
                    Point {
                        t: 0.0,
                        y: vec![0.0; n],
                        s: vec![0.0; n * ns],
                        initial: false,
                    }
                };
                point.initial = false;
                point.t = t1;
                point.y.copy_from_slice(&y);
                point.s.copy_from_slice(&s_new);
                hist.insert(0, point);
                latest_yp.copy_from_slice(&yp);
                steps_at_k += 1;
                let ratio = if err == 0.0 {
                    2.0
                } else {
                    (0.9 * err.powf(-1.0 / q)).clamp(0.5, 2.0)
                };
                // A step cut to reach an output time keeps the step size it would have had.
                let h_base = if hit { h.max(h_try) } else { h_try };
                h = if ratio >= 1.0 || !hit {
                    h_base * ratio
                } else {
                    h_base
                };
                if steps_at_k > k_use && k < MAX_ORDER && hist.len() > k + 1 {
                    k += 1;
                    steps_at_k = 0;
                }
            } else {
                fails += 1;
                let ratio = if err.is_finite() {
                    (0.9 * err.powf(-1.0 / q)).clamp(0.25, 0.9)
                } else {
                    0.25
                };
                h = h_try * ratio;
                if fails >= 2 && k > 1 {
                    k -= 1;
                    steps_at_k = 0;
                }
                if fails > 50 {
                    return Err(DaeError::StepTooSmall { t: t_n });
                }
            }
            steps += 1;
            if steps > max_steps {
                return Err(DaeError::MaxSteps {
                    t: t_out,
                    max_num_steps: max_steps,
                });
            }
        }
        values.extend_from_slice(&hist[0].y);
        sens.extend_from_slice(&hist[0].s);
    }
    Ok(DaeSolution {
        n_states: n,
        n_sens: ns,
        values,
        sens,
    })
}

fn check_inputs(
    n: usize,
    yy0: &[f64],
    yp0: &[f64],
    t0: f64,
    ts: &[f64],
    tol: &DaeTolerances,
) -> Result<(), DaeError> {
    let bad = |m: String| Err(DaeError::Input(m));
    if yy0.is_empty() {
        return bad("initial state has size 0, but must have a non-zero size".into());
    }
    if yy0.len() != n || yp0.len() != n {
        return bad(format!(
            "initial state ({}) and initial state derivative ({}) must both have the \
             residual's size ({n})",
            yy0.len(),
            yp0.len()
        ));
    }
    for (what, v) in [("initial state", yy0), ("initial state derivative", yp0)] {
        if let Some(i) = v.iter().position(|x| !x.is_finite()) {
            return bad(format!(
                "{what}[{}] is {}, but must be finite!",
                i + 1,
                v[i]
            ));
        }
    }
    if !t0.is_finite() {
        return bad(format!("initial time is {t0}, but must be finite!"));
    }
    if ts.is_empty() {
        return bad("times has size 0, but must have a non-zero size".into());
    }
    if let Some(i) = ts.iter().position(|x| !x.is_finite()) {
        return bad(format!(
            "times[{}] is {}, but must be finite!",
            i + 1,
            ts[i]
        ));
    }
    if let Some(i) = (1..ts.len()).find(|&i| ts[i] < ts[i - 1]) {
        return bad(format!(
            "times is not a valid sorted vector. The element at {} is {}, but should be \
             greater than or equal to the previous element, {}",
            i + 1,
            ts[i],
            ts[i - 1]
        ));
    }
    if t0 >= ts[0] {
        return bad(format!(
            "initial time is {t0}, but must be less than {}",
            ts[0]
        ));
    }
    for (name, v) in [
        ("relative_tolerance", tol.rtol),
        ("absolute_tolerance", tol.atol),
    ] {
        if !(v > 0.0 && v.is_finite()) {
            return bad(format!("{name} is {v}, but must be positive finite!"));
        }
    }
    if tol.max_num_steps <= 0 {
        return bad(format!(
            "max_num_steps is {}, but must be positive!",
            tol.max_num_steps
        ));
    }
    Ok(())
}
