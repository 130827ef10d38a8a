//! Newton's method as Stan's `optimize algorithm=newton` runs it: at each iterate the Hessian
//! of the log density (finite differences of gradients), its eigenvalues replaced by their
//! absolute values so that the step always ascends (`d = V |Λ|⁻¹ Vᵀ ∇log p`), then the step
//! halved from 1 until the log density does not decrease (down to 1e-50, when the point stays).
//! The run stops when an iteration changes the log density by at most 1e-8, or after `iter`
//! iterations.

use crate::dense::{mat_t_vec, mat_vec};
use crate::hessian::finite_difference_hessian;
use hazel_density::EvalError;

/// Stan's stopping rule: |Δ log p| ≤ this.
pub const TOLERANCE: f64 = 1e-8;

/// One Newton step from `x` (updated in place) on the log density computed by `log_density`
/// (value and gradient); returns the log density at the new point. An error only if the log
/// density cannot be evaluated at `x` itself.
pub(crate) fn newton_step(
    log_density: &mut impl FnMut(&[f64], &mut [f64]) -> Result<f64, EvalError>,
    x: &mut [f64],
) -> Result<f64, EvalError> {
    let d = x.len();
    let mut grad = vec![0.0; d];
    let mut hessian = vec![0.0; d * d];
    let lp0 = finite_difference_hessian(log_density, x, &mut grad, &mut hessian)?;
    let mut values = vec![0.0; d];
    let mut vectors = vec![0.0; d * d];
    let mut ws = vec![0.0; d * d];
    hazel_math::linalg::eigen_sym("newton", &hessian, d, &mut values, &mut vectors, &mut ws)
        .map_err(|e| {
            EvalError::non_finite(format!("the Hessian has no eigendecomposition: {e}"))
        })?;
    // Projections of the gradient on the eigenvectors, scaled by 1/|λ| (a zero eigenvalue
    // contributes no step).
    let mut projection = vec![0.0; d];
    mat_t_vec(&vectors, d, d, &grad, &mut projection);
    for (p, l) in projection.iter_mut().zip(&values) {
        *p = if *l == 0.0 { 0.0 } else { *p / l.abs() };
    }
    let mut direction = vec![0.0; d];
    mat_vec(&vectors, d, d, &projection, &mut direction);
    let mut trial = vec![0.0; d];
    let mut step = 2.0;
    loop {
        step *= 0.5;
        if step < 1e-50 {
            return Ok(lp0);
        }
        for i in 0..d {
            trial[i] = x[i] + step * direction[i];
        }
        if let Ok(lp1) = log_density(&trial, &mut grad) {
            if lp1 >= lp0 {
                x.copy_from_slice(&trial);
                return Ok(lp1);
            }
        }
    }
}

/// Iterates [`newton_step`] from `x` until the log density changes by at most
/// [`TOLERANCE`] or `max_iterations` steps were made; `on_step(iteration, x, lp)` sees every
/// iterate. Returns the final log density and the number of iterations.
pub fn newton(
    log_density: &mut impl FnMut(&[f64], &mut [f64]) -> Result<f64, EvalError>,
    x: &mut [f64],
    max_iterations: usize,
    mut on_step: impl FnMut(usize, &[f64], f64),
) -> Result<(f64, usize), EvalError> {
    let mut grad = vec![0.0; x.len()];
    let mut lp = log_density(x, &mut grad)?;
    for iteration in 1..=max_iterations {
        let last = lp;
        lp = newton_step(log_density, x)?;
        on_step(iteration, x, lp);
        if (lp - last).abs() <= TOLERANCE {
            return Ok((lp, iteration));
        }
    }
    Ok((lp, max_iterations))
}
