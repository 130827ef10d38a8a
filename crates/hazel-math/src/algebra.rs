//! Systems of nonlinear algebraic equations `f(x) = 0`, `f: ℝⁿ → ℝⁿ`: the two solvers behind
//! Stan's `solve_newton` / `solve_powell` (and the deprecated `algebra_solver_newton` /
//! `algebra_solver`), and the implicit-function rule for their derivatives.
//!
//! - [`newton`] follows what Stan runs through SUNDIALS KINSOL (`kinsol_solve` with
//!   `KIN_LINESEARCH`, an exact Jacobian re-evaluated every 10 iterations, unit scaling):
//!   modified Newton steps `p = −J⁻¹ f`, cut to KINSOL's maximum step (`1000 ‖x₀‖₂`, or `n`
//!   when `x₀ = 0`, as Stan sets it), a backtracking line search on `½‖f‖²` (Armijo condition
//!   with α = 10⁻⁴, quadratic then cubic interpolation, λ kept in [0.1 λ, 0.5 λ]), and KINSOL's
//!   stopping rules: success when `max|fᵢ| ≤ function_tolerance` (at the initial guess already
//!   when `max|fᵢ| ≤ 0.01 function_tolerance`), a stop *without error* when the scaled step
//!   `max |Δxᵢ| / (1 + |xᵢ|)` falls below `scaling_step_size` with a current Jacobian (KINSOL's
//!   positive `KIN_STEP_LT_STPTOL`, which Stan accepts), and failures when the iteration limit
//!   is reached or the line search cannot decrease `‖f‖` with a current Jacobian.
//! - [`powell`] is Powell's hybrid (dogleg) trust-region method as in MINPACK's `hybrj` (which
//!   Eigen's `HybridNonLinearSolver`, Stan's `solve_powell`, ports): scaling by the Jacobian's
//!   column norms, MINPACK's radius updates and convergence test `Δ ≤ xtol ‖D x‖`, and Stan's
//!   checks afterwards (the function-evaluation limit, then `‖f(x)‖₂ ≤ function_tolerance`).
//!   Unlike `hybrj` it evaluates the exact Jacobian at every accepted point instead of
//!   Broyden-updating it, so the iterates differ from Eigen's; both stop within `xtol` of the
//!   same root.
//! - [`implicit_sensitivities`] and [`implicit_adjoint`]: at a root, `f(x(θ), θ) = 0` gives
//!   `∂x/∂θ = −[∂f/∂x]⁻¹ ∂f/∂θ` (Stan's rule for both solvers).
//!
//! Jacobians are row-major `n × n` (`jx[i*n + k] = ∂fᵢ/∂x_k`), as in [`crate::ode::OdeRhs`].
//! The solvers allocate their work arrays (a few vectors of length `n` and two `n × n`
//! matrices) per solve.

use crate::linalg::solve::{factor_len, lu_factor, lu_solve, lu_solve_transpose};
use std::fmt;

/// A system `f(x) = 0` with its Jacobian.
pub trait AlgebraSystem {
    /// The number of unknowns (and equations).
    fn n(&self) -> usize;
    /// `f(x)` into `fx`.
    fn eval(&mut self, x: &[f64], fx: &mut [f64]) -> Result<(), String>;
    /// `f(x)` into `fx` and `∂f/∂x` into `jx` (row-major `n × n`).
    fn eval_jac(&mut self, x: &[f64], fx: &mut [f64], jx: &mut [f64]) -> Result<(), String>;
}

/// Why a solve failed. `Display` gives Stan's wording where Stan has one; callers prefix the
/// Stan function's name.
#[derive(Debug, Clone, PartialEq)]
pub enum AlgebraError {
    /// Bad arguments (empty or non-finite guess, negative tolerance, ...).
    Input(String),
    /// The user's function failed (its message).
    System(String),
    /// The function returned a non-finite value.
    NonFinite { x: Vec<f64> },
    /// The iteration (Newton) or function-evaluation (Powell) limit was reached.
    MaxSteps { max_num_steps: u64 },
    /// Newton's line search found no decrease of `‖f‖` along a step from a current Jacobian
    /// (KINSOL's `KIN_LINESEARCH_NONCONV`).
    LineSearch,
    /// Newton: five consecutive steps of the maximum length (KINSOL's
    /// `KIN_MXNEWT_5X_EXCEEDED`: the iterates are diverging).
    Diverging,
    /// The Jacobian at the current point is singular.
    Singular,
    /// Powell stopped at a point that is not a root to the function tolerance.
    NotARoot { norm: f64, function_tolerance: f64 },
}

impl fmt::Display for AlgebraError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AlgebraError::Input(m) | AlgebraError::System(m) => f.write_str(m),
            AlgebraError::NonFinite { x } => {
                write!(f, "the algebraic system's value is not finite at x = {x:?}")
            }
            AlgebraError::MaxSteps { max_num_steps } => write!(
                f,
                "maximum number of iterations ({max_num_steps}) was exceeded in the solve."
            ),
            AlgebraError::LineSearch => f.write_str(
                "the line search failed to decrease the norm of the algebraic function \
                 (KINSOL's KIN_LINESEARCH_NONCONV); try another initial guess",
            ),
            AlgebraError::Diverging => f.write_str(
                "five consecutive steps of the maximum length were taken \
                 (KINSOL's KIN_MXNEWT_5X_EXCEEDED): the iterates diverge",
            ),
            AlgebraError::Singular => {
                f.write_str("the Jacobian of the algebraic system is singular")
            }
            AlgebraError::NotARoot {
                norm,
                function_tolerance,
            } => write!(
                f,
                "the norm of the algebraic function is {norm} but should be lower than the \
                 function tolerance: {function_tolerance}. Consider decreasing the relative \
                 tolerance and increasing max_num_steps."
            ),
        }
    }
}

impl std::error::Error for AlgebraError {}

/// `solve_newton_tol`'s control arguments.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NewtonOptions {
    pub scaling_step_size: f64,
    pub function_tolerance: f64,
    pub max_num_steps: i64,
}

impl Default for NewtonOptions {
    /// Stan's defaults for `solve_newton` and `algebra_solver_newton`.
    fn default() -> Self {
        NewtonOptions {
            scaling_step_size: 1e-3,
            function_tolerance: 1e-6,
            max_num_steps: 200,
        }
    }
}

/// `solve_powell_tol`'s control arguments.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PowellOptions {
    pub relative_tolerance: f64,
    pub function_tolerance: f64,
    pub max_num_steps: i64,
}

impl Default for PowellOptions {
    /// Stan's defaults for `solve_powell` (the deprecated `algebra_solver` allows 1000 steps).
    fn default() -> Self {
        PowellOptions {
            relative_tolerance: 1e-10,
            function_tolerance: 1e-6,
            max_num_steps: 200,
        }
    }
}

fn check_guess(x0: &[f64], n: usize) -> Result<(), AlgebraError> {
    if x0.is_empty() {
        return Err(AlgebraError::Input(
            "initial guess has size 0, but must have a non-zero size".into(),
        ));
    }
    if x0.len() != n {
        return Err(AlgebraError::Input(format!(
            "size of the algebraic system's output ({n}) and size of the vector of unknowns, \
             x, ({}) must match in size",
            x0.len()
        )));
    }
    if let Some(i) = x0.iter().position(|v| !v.is_finite()) {
        return Err(AlgebraError::Input(format!(
            "initial guess[{}] is {}, but must be finite!",
            i + 1,
            x0[i]
        )));
    }
    Ok(())
}

fn check_nonnegative(name: &str, v: f64) -> Result<(), AlgebraError> {
    if v >= 0.0 {
        Ok(())
    } else {
        Err(AlgebraError::Input(format!(
            "{name} is {v}, but must be nonnegative!"
        )))
    }
}

fn check_steps(v: i64) -> Result<u64, AlgebraError> {
    if v > 0 {
        Ok(v as u64)
    } else {
        Err(AlgebraError::Input(format!(
            "max_num_steps is {v}, but must be positive!"
        )))
    }
}

fn finite_or(x: &[f64], fx: &[f64]) -> Result<(), AlgebraError> {
    if fx.iter().all(|v| v.is_finite()) {
        Ok(())
    } else {
        Err(AlgebraError::NonFinite { x: x.to_vec() })
    }
}

fn norm2(v: &[f64]) -> f64 {
    // Scaled to avoid overflow, as Eigen's stableNorm.
    let scale = v.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    if scale == 0.0 || !scale.is_finite() {
        return scale;
    }
    scale * v.iter().map(|x| (x / scale).powi(2)).sum::<f64>().sqrt()
}

fn max_abs(v: &[f64]) -> f64 {
    v.iter().fold(0.0f64, |m, x| m.max(x.abs()))
}

/// Row-major `J` times `v`.
fn jac_times(jx: &[f64], n: usize, v: &[f64], out: &mut [f64]) {
    for i in 0..n {
        out[i] = (0..n).map(|k| jx[i * n + k] * v[k]).sum();
    }
}

/// Factorises the row-major Jacobian (the column-major buffer of `Jᵀ`) into `lu`.
fn factor(jx: &[f64], n: usize, lu: &mut [f64]) -> Result<(), AlgebraError> {
    lu_factor(jx, n, lu)
        .map(|_| ())
        .ok_or(AlgebraError::Singular)
}

/// Solves `J p = b` in place from [`factor`]'s buffer (which holds `Jᵀ`).
fn solve_j(lu: &[f64], n: usize, b: &mut [f64]) {
    lu_solve_transpose(lu, n, b, 1);
}

/// Solves `Jᵀ p = b` in place from [`factor`]'s buffer.
fn solve_jt(lu: &[f64], n: usize, b: &mut [f64]) {
    lu_solve(lu, n, b, 1);
}

/// KINSOL's Jacobian refresh interval as Stan sets it (`steps_eval_jacobian` = 10).
const NEWTON_SETUP_INTERVAL: u64 = 10;
/// KINSOL's Armijo constant.
const ALPHA: f64 = 1e-4;

/// Newton's method with a line search, as Stan's `solve_newton` (see the module docs).
pub fn newton<S: AlgebraSystem>(
    sys: &mut S,
    x0: &[f64],
    opts: &NewtonOptions,
) -> Result<Vec<f64>, AlgebraError> {
    let n = sys.n();
    check_guess(x0, n)?;
    check_nonnegative("scaling_step_size", opts.scaling_step_size)?;
    check_nonnegative("function_tolerance", opts.function_tolerance)?;
    let max_iter = check_steps(opts.max_num_steps)?;
    let sys_err = AlgebraError::System;

    let mut x = x0.to_vec();
    let mut fx = vec![0.0; n];
    let mut jx = vec![0.0; n * n];
    let mut lu = vec![0.0; factor_len(n)];
    let mut p = vec![0.0; n];
    let mut x_new = vec![0.0; n];
    let mut f_new = vec![0.0; n];

    sys.eval(&x, &mut fx).map_err(sys_err)?;
    finite_or(&x, &fx)?;
    if max_abs(&fx) <= 0.01 * opts.function_tolerance {
        return Ok(x);
    }
    let x0_norm = norm2(x0);
    let max_step = if x0_norm == 0.0 {
        n as f64
    } else {
        1000.0 * x0_norm
    };
    let mut f1norm = 0.5 * norm2(&fx).powi(2);
    let mut iter: u64 = 0;
    let mut since_setup = NEWTON_SETUP_INTERVAL;
    let mut n_max_steps = 0;
    loop {
        iter += 1;
        // Re-evaluate the Jacobian every NEWTON_SETUP_INTERVAL iterations, or when a stop
        // below would otherwise be taken on a stale one.
        let jac_current = since_setup >= NEWTON_SETUP_INTERVAL;
        if jac_current {
            sys.eval_jac(&x, &mut fx, &mut jx).map_err(sys_err)?;
            factor(&jx, n, &mut lu)?;
            since_setup = 0;
        }
        since_setup += 1;
        for i in 0..n {
            p[i] = -fx[i];
        }
        solve_j(&lu, n, &mut p);
        if !p.iter().all(|v| v.is_finite()) {
            return Err(AlgebraError::Singular);
        }
        let mut pnorm = norm2(&p);
        let mut max_step_taken = false;
        if pnorm > max_step {
            let s = max_step / pnorm;
            p.iter_mut().for_each(|v| *v *= s);
            pnorm = max_step;
        }
        // Slope of ½‖f‖² along p: fᵀ J p with the Jacobian that gave p (−‖f‖²).
        let slope = -2.0 * f1norm;
        let rel_len = (0..n)
            .map(|i| p[i].abs() / (1.0 + x[i].abs()))
            .fold(0.0f64, f64::max);
        let lambda_min = opts.scaling_step_size / rel_len;
        let mut lambda = 1.0;
        let (mut prev_lambda, mut prev_f1) = (0.0f64, 0.0f64);
        let mut first = true;
        let too_small = loop {
            for i in 0..n {
                x_new[i] = x[i] + lambda * p[i];
            }
            let r = sys.eval(&x_new, &mut f_new);
            let f1new = match r {
                Ok(()) if f_new.iter().all(|v| v.is_finite()) => 0.5 * norm2(&f_new).powi(2),
                Ok(()) => f64::INFINITY,
                Err(e) => return Err(AlgebraError::System(e)),
            };
            if f1new <= f1norm + ALPHA * slope * lambda {
                if lambda == 1.0 && pnorm > 0.99 * max_step {
                    max_step_taken = true;
                }
                break false;
            }
            if lambda < lambda_min {
                break true;
            }
            let lambda_t = if first || !f1new.is_finite() || !prev_f1.is_finite() {
                if f1new.is_finite() {
                    -slope / (2.0 * (f1new - f1norm - slope))
                } else {
                    0.1 * lambda
                }
            } else {
                // Cubic backtracking (Dennis & Schnabel A6.3.1).
                let r1 = f1new - f1norm - lambda * slope;
                let r2 = prev_f1 - f1norm - prev_lambda * slope;
                let d = lambda - prev_lambda;
                let a = (r1 / (lambda * lambda) - r2 / (prev_lambda * prev_lambda)) / d;
                let b = (-prev_lambda * r1 / (lambda * lambda)
                    + lambda * r2 / (prev_lambda * prev_lambda))
                    / d;
                if a == 0.0 {
                    -slope / (2.0 * b)
                } else {
                    let disc = b * b - 3.0 * a * slope;
                    if disc < 0.0 {
                        0.5 * lambda
                    } else {
                        (-b + disc.sqrt()) / (3.0 * a)
                    }
                }
            };
            first = false;
            prev_lambda = lambda;
            prev_f1 = f1new;
            let lt = if lambda_t.is_finite() {
                lambda_t
            } else {
                0.1 * lambda
            };
            lambda = lt.min(0.5 * lambda).max(0.1 * lambda);
        };
        if too_small {
            if !jac_current {
                since_setup = NEWTON_SETUP_INTERVAL;
                continue;
            }
            return Err(AlgebraError::LineSearch);
        }
        // Accept the step.
        let step_len = (0..n)
            .map(|i| (x_new[i] - x[i]).abs() / (1.0 + x_new[i].abs()))
            .fold(0.0f64, f64::max);
        x.copy_from_slice(&x_new);
        fx.copy_from_slice(&f_new);
        f1norm = 0.5 * norm2(&fx).powi(2);
        if max_abs(&fx) <= opts.function_tolerance {
            return Ok(x);
        }
        if step_len <= opts.scaling_step_size {
            if !jac_current {
                since_setup = NEWTON_SETUP_INTERVAL;
            } else {
                // KINSOL's KIN_STEP_LT_STPTOL: Stan returns the point without error.
                return Ok(x);
            }
        }
        if iter >= max_iter {
            return Err(AlgebraError::MaxSteps {
                max_num_steps: max_iter,
            });
        }
        n_max_steps = if max_step_taken { n_max_steps + 1 } else { 0 };
        if n_max_steps == 5 {
            return Err(AlgebraError::Diverging);
        }
    }
}

/// Powell's hybrid (dogleg) method, as Stan's `solve_powell` (see the module docs).
pub fn powell<S: AlgebraSystem>(
    sys: &mut S,
    x0: &[f64],
    opts: &PowellOptions,
) -> Result<Vec<f64>, AlgebraError> {
    let n = sys.n();
    check_guess(x0, n)?;
    check_nonnegative("relative_tolerance", opts.relative_tolerance)?;
    check_nonnegative("function_tolerance", opts.function_tolerance)?;
    let max_fev = check_steps(opts.max_num_steps)?;
    let sys_err = AlgebraError::System;
    const FACTOR: f64 = 100.0;
    let eps = f64::EPSILON;

    let mut x = x0.to_vec();
    let mut fx = vec![0.0; n];
    let mut jx = vec![0.0; n * n];
    let mut lu = vec![0.0; factor_len(n)];
    let mut diag = vec![0.0; n];
    let mut gn = vec![0.0; n];
    let mut sd = vec![0.0; n];
    let mut jsd = vec![0.0; n];
    let mut p = vec![0.0; n];
    let mut x_new = vec![0.0; n];
    let mut f_new = vec![0.0; n];
    let mut jp = vec![0.0; n];

    sys.eval(&x, &mut fx).map_err(sys_err)?;
    finite_or(&x, &fx)?;
    let mut nfev: u64 = 1;
    let mut fnorm = norm2(&fx);
    let mut delta = 0.0;
    let mut xnorm = 0.0;
    let (mut ncsuc, mut nslow1) = (0u32, 0u32);
    let mut first = true;
    'outer: loop {
        if fnorm == 0.0 {
            break;
        }
        {
            sys.eval_jac(&x, &mut fx, &mut jx).map_err(sys_err)?;
            finite_or(&x, &jx)?;
            // Column norms of J scale the variables (MINPACK's mode 1).
            for k in 0..n {
                let c = (0..n).map(|i| jx[i * n + k].powi(2)).sum::<f64>().sqrt();
                if first {
                    diag[k] = if c == 0.0 { 1.0 } else { c };
                } else {
                    diag[k] = diag[k].max(c);
                }
            }
            if first {
                xnorm = (0..n).map(|k| (diag[k] * x[k]).powi(2)).sum::<f64>().sqrt();
                delta = FACTOR * xnorm;
                if delta == 0.0 {
                    delta = FACTOR;
                }
            }
            // Gauss–Newton step, when J is invertible.
            let gn_ok = factor(&jx, n, &mut lu).is_ok() && {
                for i in 0..n {
                    gn[i] = -fx[i];
                }
                solve_j(&lu, n, &mut gn);
                gn.iter().all(|v| v.is_finite())
            };
            if !gn_ok {
                gn.iter_mut().for_each(|v| *v = f64::NAN);
            }
            // Scaled steepest descent direction −D⁻¹ Jᵀ f (in D x coordinates).
            for k in 0..n {
                sd[k] = -(0..n).map(|i| jx[i * n + k] * fx[i]).sum::<f64>() / diag[k];
            }
        }
        // The inner loop: trial steps with the current Jacobian until one is accepted.
        loop {
            // Dogleg step in scaled coordinates z = D x.
            let gn_norm = if gn[0].is_nan() {
                f64::INFINITY
            } else {
                (0..n)
                    .map(|k| (diag[k] * gn[k]).powi(2))
                    .sum::<f64>()
                    .sqrt()
            };
            if gn_norm <= delta {
                p.copy_from_slice(&gn);
            } else {
                let sd_norm = norm2(&sd);
                if sd_norm == 0.0 {
                    // f is orthogonal to every column of J: no descent direction.
                    break 'outer;
                }
                for k in 0..n {
                    p[k] = sd[k] / diag[k];
                }
                jac_times(&jx, n, &p, &mut jsd);
                let jsd_norm = norm2(&jsd);
                // Cauchy point along sd: t* = ‖sd‖² / ‖J D⁻¹ sd‖².
                let t = if jsd_norm == 0.0 {
                    f64::INFINITY
                } else {
                    (sd_norm / jsd_norm).powi(2)
                };
                let cauchy = t * sd_norm;
                if cauchy >= delta || gn_norm.is_infinite() {
                    let s = delta / sd_norm;
                    for k in 0..n {
                        p[k] = s * sd[k] / diag[k];
                    }
                } else {
                    // On the segment from the Cauchy point c to the Gauss–Newton point g:
                    // ‖c + τ (g − c)‖ = Δ.
                    let (mut cc, mut cd, mut dd) = (0.0, 0.0, 0.0);
                    for k in 0..n {
                        let c = t * sd[k];
                        let d = diag[k] * gn[k] - c;
                        cc += c * c;
                        cd += c * d;
                        dd += d * d;
                    }
                    let tau = (-cd + (cd * cd + dd * (delta * delta - cc)).max(0.0).sqrt()) / dd;
                    for k in 0..n {
                        let c = t * sd[k];
                        p[k] = (c + tau * (diag[k] * gn[k] - c)) / diag[k];
                    }
                }
            }
            let pnorm = (0..n).map(|k| (diag[k] * p[k]).powi(2)).sum::<f64>().sqrt();
            if first {
                delta = delta.min(pnorm);
            }
            for k in 0..n {
                x_new[k] = x[k] + p[k];
            }
            sys.eval(&x_new, &mut f_new).map_err(sys_err)?;
            nfev += 1;
            let fnorm1 = if f_new.iter().all(|v| v.is_finite()) {
                norm2(&f_new)
            } else {
                f64::INFINITY
            };
            let actred = if fnorm1 < fnorm {
                1.0 - (fnorm1 / fnorm).powi(2)
            } else {
                -1.0
            };
            jac_times(&jx, n, &p, &mut jp);
            for i in 0..n {
                jp[i] += fx[i];
            }
            let temp = norm2(&jp);
            let prered = if temp < fnorm {
                1.0 - (temp / fnorm).powi(2)
            } else {
                0.0
            };
            let ratio = if prered > 0.0 { actred / prered } else { 0.0 };
            if ratio < 0.1 {
                ncsuc = 0;
                delta *= 0.5;
            } else {
                ncsuc += 1;
                if ratio >= 0.5 || ncsuc > 1 {
                    delta = delta.max(pnorm / 0.5);
                }
                if (ratio - 1.0).abs() <= 0.1 {
                    delta = pnorm / 0.5;
                }
            }
            first = false;
            let accepted = ratio >= 1e-4;
            if accepted {
                x.copy_from_slice(&x_new);
                fx.copy_from_slice(&f_new);
                xnorm = (0..n).map(|k| (diag[k] * x[k]).powi(2)).sum::<f64>().sqrt();
                fnorm = fnorm1;
            }
            nslow1 = if actred >= 0.001 { 0 } else { nslow1 + 1 };
            if delta <= opts.relative_tolerance * xnorm || fnorm == 0.0 {
                break 'outer;
            }
            if nfev >= max_fev {
                break 'outer;
            }
            if 0.1 * (0.1 * delta).max(pnorm) <= eps * xnorm {
                break 'outer;
            }
            if nslow1 == 10 {
                break 'outer;
            }
            if accepted {
                continue 'outer;
            }
        }
    }
    if nfev >= max_fev {
        return Err(AlgebraError::MaxSteps {
            max_num_steps: max_fev,
        });
    }
    sys.eval(&x, &mut fx).map_err(sys_err)?;
    let norm = norm2(&fx);
    if norm.is_nan() || norm > opts.function_tolerance {
        return Err(AlgebraError::NotARoot {
            norm,
            function_tolerance: opts.function_tolerance,
        });
    }
    Ok(x)
}

/// `∂x/∂θ = −[∂f/∂x]⁻¹ ∂f/∂θ` at a root: `jx` row-major `n × n`, `jp` row-major `n × m`
/// (`jp[i*m + k] = ∂fᵢ/∂θ_k`); returns the row-major `n × m` sensitivities
/// (`s[i*m + k] = ∂xᵢ/∂θ_k`).
pub fn implicit_sensitivities(
    jx: &[f64],
    jp: &[f64],
    n: usize,
    m: usize,
) -> Result<Vec<f64>, AlgebraError> {
    let mut lu = vec![0.0; factor_len(n)];
    factor(jx, n, &mut lu)?;
    let mut s = vec![0.0; n * m];
    let mut col = vec![0.0; n];
    for k in 0..m {
        for i in 0..n {
            col[i] = -jp[i * m + k];
        }
        solve_j(&lu, n, &mut col);
        for i in 0..n {
            s[i * m + k] = col[i];
        }
    }
    if s.iter().all(|v| v.is_finite()) {
        Ok(s)
    } else {
        Err(AlgebraError::Singular)
    }
}

/// The reverse-mode rule of the same: adds `θ̄ += −(∂f/∂θ)ᵀ [∂f/∂x]⁻ᵀ x̄` to `p_adj`.
/// `x_adj` is overwritten with `η = [∂f/∂x]⁻ᵀ x̄`; `lu` is scratch of
/// [`factor_len`]`(n)`.
pub fn implicit_adjoint(
    jx: &[f64],
    jp: &[f64],
    n: usize,
    m: usize,
    x_adj: &mut [f64],
    p_adj: &mut [f64],
    lu: &mut [f64],
) -> Result<(), AlgebraError> {
    factor(jx, n, lu)?;
    solve_jt(lu, n, x_adj);
    for k in 0..m {
        let mut acc = 0.0;
        for i in 0..n {
            acc += jp[i * m + k] * x_adj[i];
        }
        p_adj[k] -= acc;
    }
    Ok(())
}
