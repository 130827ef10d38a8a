//! Stan's step-size heuristic (`base_hmc::init_stepsize`), split at each model evaluation as a
//! transition is ([`NutsState::begin_stepsize_search`] /
//! [`NutsState::resume_stepsize_search`]); [`find_reasonable_stepsize`] is the plain driver. It
//! shares the state's buffers and one leapfrog step of the integrator with the trajectory.

use super::{absorb_error, NutsState};
use crate::metric::Metric;
use hazel_density::{EvalError, LogDensity};
use hazel_rng::StreamRng;

/// Why [`find_reasonable_stepsize`] failed (Stan's `init_stepsize` errors, or a fatal error).
#[derive(Debug, Clone, PartialEq)]
pub enum StepsizeError {
    /// The step size grew beyond 1e7 with the energy error still acceptable.
    Improper,
    /// The step size shrank to zero with the energy error still too large.
    NoSmallStepsize,
    /// The model raised a fatal error.
    Fatal(EvalError),
}

impl std::fmt::Display for StepsizeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StepsizeError::Improper => f.write_str("posterior is improper (step size search passed 1e7); please check your model"),
            StepsizeError::NoSmallStepsize => f.write_str(
                "no acceptably small step size could be found; perhaps the posterior is not continuous",
            ),
            StepsizeError::Fatal(e) => write!(f, "fatal error: {e}"),
        }
    }
}

impl std::error::Error for StepsizeError {}

/// Stan's step-size heuristic (`base_hmc::init_stepsize`): starting from `epsilon`, double or
/// halve the step size until the acceptance of a single leapfrog step from the current position
/// (with a fresh momentum each try) crosses 0.8. The chain's position is unchanged.
///
/// Step sizes of 0, NaN or above 1e7 are returned as they are (Stan skips the search for them),
/// and so is any step size for a model with no parameters. This is
/// [`NutsState::begin_stepsize_search`] and [`NutsState::resume_stepsize_search`] with the
/// model evaluated in between.
pub fn find_reasonable_stepsize<M: LogDensity + ?Sized>(
    model: &M,
    ws: &mut M::Workspace,
    state: &mut NutsState,
    metric: &Metric,
    epsilon: f64,
    rng: &mut StreamRng,
) -> Result<f64, StepsizeError> {
    let mut status = state.begin_stepsize_search(metric, epsilon, rng);
    loop {
        match status {
            SearchStatus::Done(result) => return result,
            SearchStatus::NeedsEvaluation => {
                let (q, grad) = state.evaluation_point();
                let result = model.log_density_gradient(ws, q, grad);
                status = state.resume_stepsize_search(metric, rng, result);
            }
        }
    }
}

/// What a step-size search needs next (see [`NutsState::begin_stepsize_search`]).
#[derive(Debug, Clone, PartialEq)]
pub enum SearchStatus {
    /// Evaluate the model at [`NutsState::evaluation_point`] and pass the result to
    /// [`NutsState::resume_stepsize_search`].
    NeedsEvaluation,
    /// The search is over: the step size found, or why there is none.
    Done(Result<f64, StepsizeError>),
}

/// Where a step-size search stands between two model evaluations.
#[derive(Debug, Clone, Copy)]
pub(super) struct SearchProgress {
    /// The step size of the trial being evaluated.
    epsilon: f64,
    /// Whether the search doubles (`Some(true)`) or halves; `None` until the first trial,
    /// whose energy change decides it, is back.
    grow: Option<bool>,
    /// Hamiltonian at the start of the trial.
    h0: f64,
}

impl SearchProgress {
    pub(super) fn idle() -> Self {
        SearchProgress {
            epsilon: f64::NAN,
            grow: None,
            h0: f64::NAN,
        }
    }
}

impl NutsState {
    /// Starts Stan's step-size heuristic from `epsilon` (see [`find_reasonable_stepsize`]), split
    /// at each model evaluation as [`NutsState::begin_transition`] splits a transition: while
    /// the status is [`SearchStatus::NeedsEvaluation`], evaluate the model at
    /// [`NutsState::evaluation_point`] and pass the result to
    /// [`NutsState::resume_stepsize_search`], with the same `metric` and the chain's own `rng`.
    pub fn begin_stepsize_search(
        &mut self,
        metric: &Metric,
        epsilon: f64,
        rng: &mut StreamRng,
    ) -> SearchStatus {
        // A model without parameters has no energy error at any step size: nothing to tune.
        if epsilon == 0.0 || epsilon > 1e7 || epsilon.is_nan() || self.dim() == 0 {
            return SearchStatus::Done(Ok(epsilon));
        }
        self.search = SearchProgress {
            epsilon,
            grow: None,
            h0: f64::NAN,
        };
        self.start_trial(metric, rng)
    }

    /// Continues a step-size search with the model's result at
    /// [`NutsState::evaluation_point`] (the gradient already written there).
    // Stan's negated comparisons: a NaN energy change ends the search.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    pub fn resume_stepsize_search(
        &mut self,
        metric: &Metric,
        rng: &mut StreamRng,
        result: Result<f64, EvalError>,
    ) -> SearchStatus {
        let log_target = 0.8f64.ln();
        let search = &mut self.search;
        let epsilon = search.epsilon;
        let h = match result {
            Ok(logp) => {
                let z = &mut self.forward;
                let kinetic = z.kick_velocity(metric, epsilon, &mut self.v_forward);
                let h = -logp + kinetic;
                if h.is_nan() {
                    f64::INFINITY
                } else {
                    h
                }
            }
            Err(error) => {
                if let Err(fatal) = absorb_error(&mut self.rejection, error) {
                    return SearchStatus::Done(Err(StepsizeError::Fatal(fatal)));
                }
                f64::INFINITY
            }
        };
        let delta_h = search.h0 - h;
        match search.grow {
            // The first trial only decides the direction; the next repeats its step size.
            None => search.grow = Some(delta_h > log_target),
            Some(grow) => {
                if grow && !(delta_h > log_target) || !grow && !(delta_h < log_target) {
                    return SearchStatus::Done(Ok(epsilon));
                }
                search.epsilon = if grow { 2.0 * epsilon } else { 0.5 * epsilon };
                if search.epsilon > 1e7 {
                    return SearchStatus::Done(Err(StepsizeError::Improper));
                }
                if search.epsilon == 0.0 {
                    return SearchStatus::Done(Err(StepsizeError::NoSmallStepsize));
                }
            }
        }
        self.start_trial(metric, rng)
    }

    /// A trial of the search: a fresh momentum at the current position, then the first half of
    /// one leapfrog step forward; the model is evaluated at the forward end.
    fn start_trial(&mut self, metric: &Metric, rng: &mut StreamRng) -> SearchStatus {
        self.search.h0 = self.start_at_current(metric, rng);
        self.progress.forward = true;
        let epsilon = self.search.epsilon;
        let z = &mut self.forward;
        z.kick_drift(metric, epsilon, &mut self.scratch);
        SearchStatus::NeedsEvaluation
    }
}
