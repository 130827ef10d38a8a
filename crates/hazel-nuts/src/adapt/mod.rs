//! Warmup adaptation: a module that wraps the NUTS transition and, after each warmup iteration,
//! learns the step size and the metric from what the transition produced. The transition itself
//! ([`crate::nuts`]) knows nothing of it.
//!
//! Three methods ([`AdaptMethod`], `hazel sample --adaptation`), one interface ([`Adaptation`]):
//!
//! * [`windowed`] — Stan's: the draws' (co)variance over doubling slow windows between two fast
//!   buffers, the step-size heuristic and a dual-averaging restart after every metric update.
//! * [`gradient`] — nutpie's: the metric that minimises the Fisher divergence between the
//!   preconditioned posterior and a standard normal, estimated from the draws *and* their
//!   gradients over overlapping windows and updated throughout the first 85% of warmup;
//!   diagonal (`DiagGrad`) or low-rank plus diagonal (`LowRank`, [`fisher`]).
//! * [`stepsize`] — dual averaging of the step size, shared by both.
//!
//! Each chain owns its adaptation state (a field of the chain, in its checkpoint): nothing is
//! shared between chains, so lockstep batches and threads never change what a chain learns.

pub(crate) mod fisher;
pub(crate) mod gradient;
pub(crate) mod stepsize;
pub(crate) mod windowed;

pub(crate) use gradient::GradientAdaptation;
pub(crate) use stepsize::StepSizeAdaptation;
pub(crate) use windowed::WindowedAdaptation;

use crate::metric::{Metric, MetricError};
use crate::types::{AdaptConfig, AdaptMethod, MetricKind};
use serde::{Deserialize, Serialize};

/// What the adaptation did after one warmup transition.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaptOutcome {
    /// The step size for the next transition (before any heuristic re-initialisation).
    pub stepsize: f64,
    /// The caller must re-initialise the step size with the heuristic (the metric changed in a
    /// way that invalidates it) and pass the result to [`Adaptation::restart_stepsize`].
    pub search_stepsize: bool,
}

/// One chain's warmup adaptation, whichever the method.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Adaptation {
    Windowed(WindowedAdaptation),
    Gradient(GradientAdaptation),
}

impl Adaptation {
    /// The adaptation of `config.method` for a chain of `num_warmup` warmup iterations on a
    /// `dim`-dimensional space with metric form `kind`, starting from step size
    /// `initial_stepsize`.
    pub fn new(
        config: &AdaptConfig,
        num_warmup: usize,
        kind: MetricKind,
        dim: usize,
        initial_stepsize: f64,
    ) -> Self {
        match config.method {
            AdaptMethod::Stan => Adaptation::Windowed(WindowedAdaptation::new(
                config,
                num_warmup,
                kind,
                dim,
                initial_stepsize,
            )),
            AdaptMethod::DiagGrad | AdaptMethod::LowRank => {
                Adaptation::Gradient(GradientAdaptation::new(
                    config,
                    num_warmup,
                    config.method == AdaptMethod::LowRank,
                    dim,
                    initial_stepsize,
                ))
            }
        }
    }

    /// Before the first transition, at the initial point: the gradient-based methods record it
    /// and, unless `keep_metric` (a metric given by the user), set the metric from its
    /// gradient (`M⁻¹_ii = 1/|∂_i log p|`, nutpie's start). Stan's starts from the identity.
    pub fn start(
        &mut self,
        position: &[f64],
        gradient: &[f64],
        metric: &mut Metric,
        keep_metric: bool,
    ) -> Result<(), MetricError> {
        match self {
            Adaptation::Windowed(_) => Ok(()),
            Adaptation::Gradient(a) => a.start(position, gradient, metric, keep_metric),
        }
    }

    /// Learns from one warmup transition that moved the chain to `position` (with log-density
    /// gradient `gradient` there) with acceptance statistic `accept_stat`; may update `metric`.
    pub fn learn(
        &mut self,
        accept_stat: f64,
        position: &[f64],
        gradient: &[f64],
        metric: &mut Metric,
    ) -> Result<AdaptOutcome, MetricError> {
        match self {
            Adaptation::Windowed(a) => a.learn(accept_stat, position, metric),
            Adaptation::Gradient(a) => a.learn(accept_stat, position, gradient, metric),
        }
    }

    /// After the heuristic found `epsilon`: `μ = log(10 ε)` and dual averaging starts afresh.
    pub fn restart_stepsize(&mut self, epsilon: f64) {
        self.stepsize_mut().restart_at(epsilon);
    }

    /// The step size sampling uses once warmup ends, `exp(x̄)`.
    pub fn final_stepsize(&self) -> f64 {
        self.stepsize().final_stepsize()
    }

    /// The dual averaging state.
    pub fn stepsize(&self) -> &StepSizeAdaptation {
        match self {
            Adaptation::Windowed(a) => &a.stepsize,
            Adaptation::Gradient(a) => &a.stepsize,
        }
    }

    fn stepsize_mut(&mut self) -> &mut StepSizeAdaptation {
        match self {
            Adaptation::Windowed(a) => &mut a.stepsize,
            Adaptation::Gradient(a) => &mut a.stepsize,
        }
    }
}
