//! The integrator: a point of phase space and the leapfrog step, split in the two halves the
//! sampler runs around each model evaluation (half kick and drift before it, half kick and the
//! new velocity after it), so that a transition can return to its caller at every evaluation.

use crate::metric::Metric;
#[cfg(test)]
use hazel_density::{EvalError, LogDensity};

/// A point in phase space: position, momentum, log density and its gradient.
#[derive(Debug, Clone)]
pub(super) struct PhasePoint {
    pub(super) q: Vec<f64>,
    pub(super) p: Vec<f64>,
    pub(super) grad: Vec<f64>,
    pub(super) logp: f64,
}

impl PhasePoint {
    pub(super) fn zeros(dim: usize) -> Self {
        PhasePoint {
            q: vec![0.0; dim],
            p: vec![0.0; dim],
            grad: vec![0.0; dim],
            logp: f64::NAN,
        }
    }

    /// The first half of a leapfrog step of size `step` (negative: backward in time): half kick,
    /// then drift; the model is to be evaluated at the new `q`. `scratch` serves the dense
    /// metric's drift.
    #[inline]
    pub(super) fn kick_drift(&mut self, metric: &Metric, step: f64, scratch: &mut [f64]) {
        metric.kick_drift(
            0.5 * step,
            step,
            &self.grad,
            &mut self.p,
            &mut self.q,
            scratch,
        );
    }

    /// The second half of a leapfrog step of size `step`, once the gradient at the new `q` is
    /// in `grad`: the closing half kick. Writes the new velocity `M⁻¹ p` into `velocity` and
    /// returns the kinetic energy.
    #[inline]
    pub(super) fn kick_velocity(
        &mut self,
        metric: &Metric,
        step: f64,
        velocity: &mut [f64],
    ) -> f64 {
        metric.kick_velocity(0.5 * step, &self.grad, &mut self.p, velocity)
    }
}

/// One leapfrog step of size `epsilon` (negative: backward in time) applied in place to `z`.
/// On success returns the log density at the new point and its kinetic energy, with the new
/// velocity `M⁻¹ p` in `velocity`; on `Err` the point is unusable. (The sampler runs the two
/// halves around its own evaluation requests; this whole step is the tests' reference.)
#[cfg(test)]
pub(super) fn leapfrog<M: LogDensity + ?Sized>(
    model: &M,
    ws: &mut M::Workspace,
    metric: &Metric,
    z: &mut PhasePoint,
    epsilon: f64,
    velocity: &mut [f64],
    scratch: &mut [f64],
) -> Result<(f64, f64), EvalError> {
    z.kick_drift(metric, epsilon, scratch);
    let logp = model.log_density_gradient(ws, &z.q, &mut z.grad)?;
    let kinetic = z.kick_velocity(metric, epsilon, velocity);
    Ok((logp, kinetic))
}
