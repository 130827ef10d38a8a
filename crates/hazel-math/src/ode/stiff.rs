//! A stiff integrator: the L-stable, stiffly accurate singly diagonally implicit Runge–Kutta
//! method SDIRK4 of Hairer & Wanner (*Solving ODEs II*, §IV.6, Table 6.5: five stages,
//! `γ = 1/4`, order 4 with an embedded order-3 solution), with Newton iterations on the
//! exact Jacobian `∂f/∂y` the right-hand side provides, and forward sensitivities.
//!
//! - **Newton.** Each stage solves `Z_i = h Σ_{j<i} a_ij K_j + h γ f(t + c_i h, y + Z_i)` by
//!   simplified Newton with the matrix `I − h γ J(t, y)` (the Jacobian at the step's start,
//!   LU with partial pivoting from [`crate::linalg::lu_factor`]; `f` and the Jacobians at the
//!   start are those of the previous step's last stage, which ends where the step does, or of
//!   the rejected attempt from the same point, so they are evaluated anew only after a step
//!   cut to a requested time whose rounded end is not that time); it stops when the weighted
//!   RMS norm of the update is below 1e-3 (weights `atol + rtol |y_i|`), and fails the step
//!   (step ÷ 4) after 10 iterations or when the iteration diverges.
//! - **Error control.** The embedded estimate `h Σ (b_i − b̂_i) K_i`, filtered through
//!   `(I − h γ J)⁻¹` as Hairer's codes do for stiff problems, in the weighted RMS norm with
//!   weights `atol + rtol max(|y_n|, |y_{n+1}|)` over the states (not the sensitivities);
//!   step factor `0.9 err^(-1/4)` clamped to `[0.2, 5]` (no growth right after a rejection).
//!   The first step follows Hairer's rule of thumb `0.01 ‖y0‖ / ‖f(t0, y0)‖`. Steps end
//!   exactly on each requested time; `max_num_steps` bounds the steps between two of them.
//! - **Sensitivities** are those of the discrete method itself (the staggered direct
//!   approach): after a step is accepted, each stage's sensitivity solves
//!   `(I − h γ J(Y_i)) S_i = S_n + h Σ_{j<i} a_ij D_j + h γ ∂f/∂p(Y_i)` with
//!   `D_j = J(Y_j) S_j + ∂f/∂p(Y_j)`, the Jacobians evaluated exactly at the converged stage
//!   values, and `S_{n+1} = S_5` (stiffly accurate). So the gradient is the exact derivative
//!   of the computed solution for the step sequence taken.

use super::{check_times, sens_dims, OdeError, OdeRhs, OdeSolution, OdeTolerances};
use crate::linalg::{factor_len, lu_factor, lu_solve};

const GAMMA: f64 = 0.25;
const C: [f64; 5] = [0.25, 0.75, 11.0 / 20.0, 0.5, 1.0];
const A: [[f64; 5]; 5] = [
    [0.25, 0.0, 0.0, 0.0, 0.0],
    [0.5, 0.25, 0.0, 0.0, 0.0],
    [17.0 / 50.0, -1.0 / 25.0, 0.25, 0.0, 0.0],
    [371.0 / 1360.0, -137.0 / 2720.0, 15.0 / 544.0, 0.25, 0.0],
    [25.0 / 24.0, -49.0 / 48.0, 125.0 / 16.0, -85.0 / 12.0, 0.25],
];
/// `b − b̂`: the order-4 weights (the last row of `A`) minus the embedded order-3 ones.
const DB: [f64; 5] = [
    25.0 / 24.0 - 59.0 / 48.0,
    -49.0 / 48.0 + 17.0 / 96.0,
    125.0 / 16.0 - 225.0 / 32.0,
    0.0,
    0.25,
];
const NEWTON_MAX_ITER: usize = 10;
const NEWTON_TOL: f64 = 1e-3;
/// Consecutive rejected or failed steps before giving up.
const MAX_FAILURES: usize = 500;

/// Weighted RMS norm of `v` with weights `w`.
#[inline(always)]
fn wrms(v: &[f64], w: &[f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let s: f64 = v.iter().zip(w).map(|(x, w)| (x / w) * (x / w)).sum();
    (s / v.len() as f64).sqrt()
}

/// Writes `I − hγ J` (column-major) from the row-major `jy` into `m` and factorises it into
/// `f`; `false` when singular.
#[inline(always)]
fn newton_matrix(jy: &[f64], n: usize, hg: f64, m: &mut [f64], f: &mut [f64]) -> bool {
    for i in 0..n {
        for k in 0..n {
            let d = if i == k { 1.0 } else { 0.0 };
            m[i + k * n] = d - hg * jy[i * n + k];
        }
    }
    lu_factor(m, n, f).is_some()
}

/// Solves `y' = f(t, y; p)` at `ts` with the stiff method (see the module docs), with
/// sensitivities with respect to `y0` (when `y0_sens`) and the parameters of `rhs`, in
/// [`OdeSolution`]'s layout.
pub(crate) fn solve_stiff<R: OdeRhs + ?Sized>(
    rhs: &mut R,
    y0: &[f64],
    y0_sens: bool,
    t0: f64,
    ts: &[f64],
    tol: &OdeTolerances,
) -> Result<OdeSolution, OdeError> {
    check_times(t0, ts, tol)?;
    let (n, n_y0, m) = sens_dims(rhs, y0, y0_sens)?;
    // One- and two-state systems (a one-compartment model's concentration) with `n` a
    // constant: the loops over states, the Newton matrix and its LU unroll (the same
    // operations in the same order, so the same bits).
    match n {
        1 => steps(1, n_y0, m, rhs, y0, t0, ts, tol),
        2 => steps(2, n_y0, m, rhs, y0, t0, ts, tol),
        _ => steps(n, n_y0, m, rhs, y0, t0, ts, tol),
    }
}

/// [`solve_stiff`] for `n` states, `n_y0` initial-state and `m` parameter sensitivities.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn steps<R: OdeRhs + ?Sized>(
    n: usize,
    n_y0: usize,
    m: usize,
    rhs: &mut R,
    y0: &[f64],
    t0: f64,
    ts: &[f64],
    tol: &OdeTolerances,
) -> Result<OdeSolution, OdeError> {
    let ns = n_y0 + m;
    let sens_on = ns > 0;
    let mut values = Vec::with_capacity(ts.len() * n);
    let mut sens_out = Vec::with_capacity(ts.len() * n * ns);

    let mut y = y0.to_vec();
    // S column-major n × ns: column k at s[k*n..].
    let mut s = vec![0.0; n * ns];
    for i in 0..n_y0 {
        s[i * n + i] = 1.0;
    }
    let mut f0 = vec![0.0; n];
    let mut jy0 = vec![0.0; n * n];
    let mut jp0 = vec![0.0; n * m];
    let mut mat = vec![0.0; n * n];
    let mut fac = vec![0.0; factor_len(n)];
    let mut fac_i = vec![0.0; factor_len(n)];
    let mut w = vec![0.0; n];
    let mut known = vec![0.0; n];
    let mut z = vec![0.0; n];
    let mut yi = vec![0.0; n];
    let mut fi = vec![0.0; n];
    let mut delta = vec![0.0; n];
    let mut err = vec![0.0; n];
    let mut k: Vec<Vec<f64>> = (0..5).map(|_| vec![0.0; n]).collect();
    let mut z_last = vec![0.0; n];
    // Per stage: J(Y_i) row-major and ∂f/∂p(Y_i) row-major (sensitivities only).
    // (The last stage's are also the next step's starting Jacobians.)
    let mut jy_st: Vec<Vec<f64>> = (0..5)
        .map(|st| vec![0.0; if sens_on || st == 4 { n * n } else { 0 }])
        .collect();
    let mut jp_st: Vec<Vec<f64>> = (0..5)
        .map(|st| vec![0.0; if sens_on || st == 4 { n * m } else { 0 }])
        .collect();
    let mut d_st: Vec<Vec<f64>> = (0..5).map(|_| vec![0.0; n * ns]).collect();
    let mut s_i = vec![0.0; n * ns];

    let mut t = t0;
    // Initial step (Hairer's rule of thumb). `f0`, `jy0`, `jp0` hold `f` and its Jacobians at
    // (`t`, `y`) whenever `start_known`: a rejected step retries from the same point, and an
    // accepted step ends where its last stage was evaluated (the method is stiffly accurate,
    // `Y_5 = y_{n+1}` bit for bit, and `c_5 = 1`), so only a step cut to a requested time whose
    // rounded `t + h` is not the time itself evaluates them afresh.
    rhs.eval_jac(t, &y, &mut f0, &mut jy0, &mut jp0)
        .map_err(OdeError::Rhs)?;
    let mut start_known = true;
    for i in 0..n {
        w[i] = tol.atol + tol.rtol * y[i].abs();
    }
    let (d0, d1) = (wrms(&y, &w), wrms(&f0, &w));
    let span = ts.last().map_or(1.0, |&te| te - t0);
    let mut h = if d0 < 1e-5 || d1 < 1e-5 {
        1e-6
    } else {
        0.01 * d0 / d1
    };
    h = h.min(span).max(1e-12 * span.max(t0.abs()));

    for &target in ts {
        let mut steps: u64 = 0;
        let mut failures = 0usize;
        let mut just_rejected = false;
        while target - t > 4.0 * f64::EPSILON * target.abs().max(1.0) {
            let cut = h >= target - t;
            let cur = if cut { target - t } else { h };
            let hg = cur * GAMMA;
            if !start_known {
                rhs.eval_jac(t, &y, &mut f0, &mut jy0, &mut jp0)
                    .map_err(OdeError::Rhs)?;
                start_known = true;
            }
            for i in 0..n {
                w[i] = tol.atol + tol.rtol * y[i].abs();
            }
            let mut ok = newton_matrix(&jy0, n, hg, &mut mat, &mut fac);
            // Stages.
            let mut st = 0;
            while ok && st < 5 {
                for i in 0..n {
                    let mut acc = 0.0;
                    for (j, kj) in k.iter().enumerate().take(st) {
                        acc += A[st][j] * kj[i];
                    }
                    known[i] = cur * acc;
                    // Predictor: the known part plus hγ times the last slope.
                    let last = if st == 0 { f0[i] } else { k[st - 1][i] };
                    z[i] = known[i] + hg * last;
                }
                let tc = t + C[st] * cur;
                let mut prev_norm = f64::INFINITY;
                let mut converged = false;
                for _ in 0..NEWTON_MAX_ITER {
                    for i in 0..n {
                        yi[i] = y[i] + z[i];
                    }
                    rhs.eval(tc, &yi, &mut fi).map_err(OdeError::Rhs)?;
                    for i in 0..n {
                        delta[i] = -(z[i] - known[i] - hg * fi[i]);
                    }
                    lu_solve(&fac, n, &mut delta, 1);
                    let norm = wrms(&delta, &w);
                    if !norm.is_finite() {
                        break;
                    }
                    for i in 0..n {
                        z[i] += delta[i];
                    }
                    if norm <= NEWTON_TOL {
                        converged = true;
                        break;
                    }
                    if norm > 0.9 * prev_norm && prev_norm.is_finite() {
                        break;
                    }
                    prev_norm = norm;
                }
                if !converged {
                    ok = false;
                    break;
                }
                for i in 0..n {
                    yi[i] = y[i] + z[i];
                }
                if sens_on || st == 4 {
                    rhs.eval_jac(tc, &yi, &mut k[st], &mut jy_st[st], &mut jp_st[st])
                        .map_err(OdeError::Rhs)?;
                } else {
                    rhs.eval(tc, &yi, &mut k[st]).map_err(OdeError::Rhs)?;
                }
                if st == 4 {
                    z_last.copy_from_slice(&z);
                }
                st += 1;
            }
            if !ok {
                h = cur * 0.25;
                failures += 1;
                just_rejected = true;
                if failures >= MAX_FAILURES || h < 1e-14 * t.abs().max(1.0) {
                    return Err(OdeError::StepSizeUnderflow { t });
                }
                continue;
            }
            // Error estimate, filtered through (I − hγJ)⁻¹.
            for i in 0..n {
                let mut e = 0.0;
                for (j, kj) in k.iter().enumerate() {
                    e += DB[j] * kj[i];
                }
                err[i] = cur * e;
            }
            lu_solve(&fac, n, &mut err, 1);
            for i in 0..n {
                w[i] = tol.atol + tol.rtol * y[i].abs().max((y[i] + z_last[i]).abs());
            }
            let e = wrms(&err, &w);
            if !e.is_finite() {
                h = cur * 0.25;
                failures += 1;
                just_rejected = true;
                if failures >= MAX_FAILURES {
                    return Err(OdeError::Rhs(format!("the solution became NaN at t = {t}")));
                }
                continue;
            }
            let factor = (0.9 * e.max(1e-10).powf(-0.25)).clamp(0.2, 5.0);
            if e > 1.0 {
                h = cur * factor;
                failures += 1;
                just_rejected = true;
                if failures >= MAX_FAILURES || h < 1e-14 * t.abs().max(1.0) {
                    return Err(OdeError::StepSizeUnderflow { t });
                }
                continue;
            }
            // Accepted: the sensitivities of the step.
            if ns > 0 {
                for st in 0..5 {
                    let hg_i = cur * GAMMA;
                    for col in 0..ns {
                        for i in 0..n {
                            let mut acc = 0.0;
                            for (j, dj) in d_st.iter().enumerate().take(st) {
                                acc += A[st][j] * dj[col * n + i];
                            }
                            let fp = if col >= n_y0 {
                                jp_st[st][i * m + (col - n_y0)]
                            } else {
                                0.0
                            };
                            s_i[col * n + i] = s[col * n + i] + cur * acc + hg_i * fp;
                        }
                    }
                    if !newton_matrix(&jy_st[st], n, hg_i, &mut mat, &mut fac_i) {
                        return Err(OdeError::Rhs(format!(
                            "the sensitivity system is singular at t = {t}"
                        )));
                    }
                    lu_solve(&fac_i, n, &mut s_i, ns);
                    let jy = &jy_st[st];
                    let d = &mut d_st[st];
                    for col in 0..ns {
                        for i in 0..n {
                            let mut acc = if col >= n_y0 {
                                jp_st[st][i * m + (col - n_y0)]
                            } else {
                                0.0
                            };
                            for l in 0..n {
                                acc += jy[i * n + l] * s_i[col * n + l];
                            }
                            d[col * n + i] = acc;
                        }
                    }
                }
                s.copy_from_slice(&s_i);
            }
            for i in 0..n {
                y[i] += z_last[i];
            }
            let t_last_stage = t + C[4] * cur;
            t = if cut { target } else { t + cur };
            start_known = t == t_last_stage;
            if start_known {
                f0.copy_from_slice(&k[4]);
                jy0.copy_from_slice(&jy_st[4]);
                jp0.copy_from_slice(&jp_st[4]);
            }
            failures = 0;
            let grow = if just_rejected {
                factor.min(1.0)
            } else {
                factor
            };
            just_rejected = false;
            // A step cut short for the requested time does not shrink the next one.
            h = if cut { h.max(cur * grow) } else { cur * grow };
            steps += 1;
            if steps > tol.max_num_steps {
                return Err(OdeError::MaxSteps { t: target });
            }
        }
        values.extend_from_slice(&y);
        sens_out.extend_from_slice(&s);
    }
    Ok(OdeSolution {
        n_states: n,
        n_sens: ns,
        values,
        sens: sens_out,
    })
}
