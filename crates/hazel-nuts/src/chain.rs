//! One chain: initialisation, warmup with adaptation, and sampling, one iteration at a time.
//!
//! [`Chain`] owns everything a chain mutates — the model workspace, the [`NutsState`], the
//! metric, the step size, the adaptation state and the chain's random streams — and advances by
//! [`Chain::next_iteration`], which is [`Chain::begin_iteration`] / [`Chain::resume_iteration`]
//! with the model evaluated in between: the iteration (transition, adaptation, the step-size
//! heuristic after a metric update) returns to its caller at every model evaluation. The runner
//! ([`crate::run()`]) drives a chain on its own with `next_iteration`, or many chains in
//! lockstep with `begin_iteration` / `resume_iteration`, evaluating all their points in one
//! batched call; the draws are the same bit for bit.
//!
//! The iteration follows Stan's `run_adaptive_sampler`: when adaptation is on (engaged and
//! `num_warmup > 0`) the step size is first set by the heuristic from `config.stepsize`, each
//! warmup transition is followed by dual averaging and the window schedule (with the heuristic
//! again after each metric update), and after the last warmup iteration the step size becomes
//! the dual-averaging average `exp(x̄)`. Without adaptation the configured step size and metric
//! are used throughout. The `stepsize__` reported for an iteration is the one its transition
//! used.

use crate::adapt::Adaptation;
use crate::checkpoint::ChainState;
use crate::fixed_param;
use crate::init::{initialize_screened, InitError};
use crate::metric::{Metric, MetricError};
use crate::nuts::{
    find_reasonable_stepsize, NutsSettings, NutsState, SearchStatus, StepStatus, StepsizeError,
    Transition,
};
use crate::types::{AdaptMethod, Algorithm, DrawStats, InverseMetric, MetricKind, SamplerConfig};
use hazel_density::{EvalError, Model};
use hazel_rng::{Purpose, StreamRng};
use std::io;

/// Why a chain stopped.
#[derive(Debug)]
pub enum ChainError {
    /// No starting point was found.
    Init(InitError),
    /// The model raised a fatal error at the given iteration (1-based over warmup + sampling;
    /// 0 when it happened in the step-size search before the first iteration).
    Fatal { iteration: usize, error: EvalError },
    /// The step size heuristic failed.
    Stepsize {
        iteration: usize,
        error: StepsizeError,
    },
    /// The supplied inverse metric is unusable, or an adapted one overflowed.
    Metric {
        iteration: usize,
        error: MetricError,
    },
    /// The chain's sink failed.
    Sink(io::Error),
    /// The settings are invalid.
    Config(String),
    /// The model (or a sink) panicked; the message is the panic payload when it is a string.
    Panicked(String),
    /// Another chain (`by_chain`) met a fatal error, which stops the whole run; this chain
    /// stopped after `iteration` completed iterations.
    Stopped { iteration: usize, by_chain: u64 },
    /// The caller interrupted the run ([`hazel_draws::Progress::interrupted`], Ctrl-C in
    /// Python); this chain stopped after `iteration` completed iterations.
    Interrupted { iteration: usize },
}

impl ChainError {
    /// Whether the chain stopped because the caller interrupted the run.
    pub fn is_interruption(&self) -> bool {
        matches!(self, ChainError::Interrupted { .. })
    }

    /// A fatal model error met by the step-size heuristic is reported as the fatal error.
    fn from_stepsize(iteration: usize, error: StepsizeError) -> Self {
        match error {
            StepsizeError::Fatal(error) => ChainError::Fatal { iteration, error },
            error => ChainError::Stepsize { iteration, error },
        }
    }
}

impl std::fmt::Display for ChainError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChainError::Init(e) => write!(f, "{e}"),
            ChainError::Fatal { iteration, error } => {
                write!(f, "fatal error at iteration {iteration}: {error}")
            }
            ChainError::Stepsize { iteration, error } => {
                write!(f, "at iteration {iteration}: {error}")
            }
            ChainError::Metric { iteration, error } => {
                if *iteration == 0 {
                    write!(f, "{error}")
                } else {
                    write!(
                        f,
                        "metric adaptation failed at iteration {iteration} ({error}); this happens when the sampler \
                         meets extreme values on the unconstrained space, e.g. with an improper or very wide posterior"
                    )
                }
            }
            ChainError::Sink(e) => write!(f, "writing draws failed: {e}"),
            ChainError::Config(e) => write!(f, "invalid settings: {e}"),
            ChainError::Panicked(e) => write!(f, "the chain panicked: {e}"),
            ChainError::Stopped {
                iteration,
                by_chain,
            } => {
                write!(
                    f,
                    "stopped after {iteration} iterations by a fatal error in chain {by_chain}"
                )
            }
            ChainError::Interrupted { iteration } => {
                write!(f, "interrupted after {iteration} iterations")
            }
        }
    }
}

impl std::error::Error for ChainError {}

/// One completed iteration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Iteration {
    /// 1-based over warmup + sampling.
    pub iteration: usize,
    pub warmup: bool,
    pub stats: DrawStats,
}

/// What an iteration needs next (see [`Chain::begin_iteration`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum IterationStatus {
    /// Evaluate the model at [`Chain::evaluation_point`] and pass the result to
    /// [`Chain::resume_iteration`].
    NeedsEvaluation,
    /// The iteration is complete.
    Done(Iteration),
}

/// Where an iteration stands between two model evaluations.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// No iteration in progress.
    Idle,
    /// The NUTS transition of iteration `iteration`, with step size `stepsize`.
    Transition {
        iteration: usize,
        warmup: bool,
        stepsize: f64,
    },
    /// The step-size heuristic after a metric update, following `transition`.
    StepsizeSearch {
        iteration: usize,
        stepsize: f64,
        transition: Transition,
    },
}

/// Checks the settings that do not depend on the model; returns a message naming the setting.
// Negated comparisons so that NaN settings are refused too.
#[allow(clippy::neg_cmp_op_on_partial_ord)]
pub(crate) fn validate_config(config: &SamplerConfig) -> Result<(), String> {
    let a = &config.adapt;
    if config.thin == 0 {
        return Err("thin must be at least 1".into());
    }
    if config.max_depth == 0 || config.max_depth > 62 {
        return Err(format!(
            "max_depth must be between 1 and 62, got {}",
            config.max_depth
        ));
    }
    if !(config.max_energy_error > 0.0) {
        return Err(format!(
            "max_energy_error must be positive, got {}",
            config.max_energy_error
        ));
    }
    if !(config.stepsize.is_finite() && config.stepsize > 0.0) {
        return Err(format!(
            "stepsize must be finite and positive, got {}",
            config.stepsize
        ));
    }
    if !(0.0..=1.0).contains(&config.stepsize_jitter) {
        return Err(format!(
            "stepsize_jitter must be between 0 and 1, got {}",
            config.stepsize_jitter
        ));
    }
    if a.engaged && config.num_warmup > 0 {
        let learnt = a.method.metric_kind(config.metric);
        if learnt != config.metric
            || (a.method == AdaptMethod::Stan && learnt == MetricKind::LowRank)
        {
            return Err(format!(
                "the {:?} adaptation cannot learn a {:?} metric (diag-grad learns a diagonal \
                 metric, low-rank a low-rank one, Stan's a unit, diagonal or dense one)",
                a.method, config.metric
            ));
        }
    }
    if a.engaged {
        if !(a.delta > 0.0 && a.delta < 1.0) {
            return Err(format!("adapt delta must be in (0, 1), got {}", a.delta));
        }
        if !(a.gamma > 0.0 && a.gamma.is_finite()) {
            return Err(format!("adapt gamma must be positive, got {}", a.gamma));
        }
        if !(a.kappa > 0.0 && a.kappa.is_finite()) {
            return Err(format!("adapt kappa must be positive, got {}", a.kappa));
        }
        if !(a.t0 > 0.0 && a.t0.is_finite()) {
            return Err(format!("adapt t0 must be positive, got {}", a.t0));
        }
    }
    Ok(())
}

/// A chain in progress.
pub struct Chain<'m, M: Model + ?Sized> {
    algorithm: Algorithm,
    model: &'m M,
    ws: M::Workspace,
    state: NutsState,
    metric: Metric,
    settings: NutsSettings,
    stepsize: f64,
    adaptation: Option<Adaptation>,
    /// `stepsize_jitter`: each transition's step size is drawn around the nominal one.
    stepsize_jitter: f64,
    rng: StreamRng,
    gq_rng: StreamRng,
    num_warmup: usize,
    num_samples: usize,
    /// Completed iterations.
    completed: usize,
    output: Vec<f64>,
    inv_metric_report: InverseMetric,
    phase: Phase,
}

impl<'m, M: Model + ?Sized> Chain<'m, M> {
    /// Initialises chain `chain_id` (its random streams) at position `chain_index` in its run
    /// (its row of explicit initial values): finds a starting point and, when adapting, the
    /// first step size.
    pub fn new(
        model: &'m M,
        config: &SamplerConfig,
        seed: u64,
        chain_id: u64,
        chain_index: usize,
    ) -> Result<Self, ChainError> {
        validate_config(config).map_err(ChainError::Config)?;
        if config.algorithm == Algorithm::FixedParam {
            fixed_param::validate(config).map_err(ChainError::Config)?;
        }
        let dim = model.dim();
        let given_metric = match config.inv_metric.len() {
            0 => None,
            1 => Some(&config.inv_metric[0]),
            n => Some(config.inv_metric.get(chain_index).ok_or_else(|| {
                ChainError::Config(format!(
                    "{n} inverse metrics were given, none for chain index {chain_index}"
                ))
            })?),
        };
        let mut metric = match given_metric {
            Some(given) => Metric::from_inverse(config.metric, dim, given),
            None => Ok(Metric::identity(config.metric, dim)),
        }
        .map_err(|error| ChainError::Metric {
            iteration: 0,
            error,
        })?;
        let mut ws = model.new_chain_workspace(chain_id);
        let start = initialize_screened(
            model,
            &mut ws,
            &config.init,
            config.init_attempts,
            config.init_candidates,
            seed,
            chain_id,
            chain_index,
        )
        .map_err(ChainError::Init)?;
        let mut state = NutsState::from_point(
            &start.position,
            &start.gradient,
            start.logp,
            config.max_depth,
        );
        let mut rng = StreamRng::new(seed, chain_id, Purpose::Sampler);
        let gq_rng = StreamRng::new(seed, chain_id, Purpose::GeneratedQuantities);
        let adapting =
            config.algorithm == Algorithm::Nuts && config.adapt.engaged && config.num_warmup > 0;
        let mut stepsize = config.stepsize;
        let adaptation = if adapting {
            let mut adaptation = Adaptation::new(
                &config.adapt,
                config.num_warmup,
                config.metric,
                dim,
                stepsize,
            );
            adaptation
                .start(
                    &start.position,
                    &start.gradient,
                    &mut metric,
                    given_metric.is_some(),
                )
                .map_err(|error| ChainError::Metric {
                    iteration: 0,
                    error,
                })?;
            stepsize =
                find_reasonable_stepsize(model, &mut ws, &mut state, &metric, stepsize, &mut rng)
                    .map_err(|error| ChainError::from_stepsize(0, error))?;
            Some(adaptation)
        } else {
            None
        };
        let n_out = model.output_names().len();
        let inv_metric_report = metric.to_inverse_metric();
        Ok(Chain {
            algorithm: config.algorithm,
            model,
            ws,
            state,
            metric,
            settings: NutsSettings {
                max_depth: config.max_depth,
                max_energy_error: config.max_energy_error,
            },
            stepsize,
            adaptation,
            stepsize_jitter: config.stepsize_jitter,
            rng,
            gq_rng,
            num_warmup: config.num_warmup,
            num_samples: config.num_samples,
            completed: 0,
            output: vec![0.0; n_out],
            inv_metric_report,
            phase: Phase::Idle,
        })
    }

    /// The chain's whole state between iterations (see [`crate::checkpoint`]).
    pub fn snapshot(&self) -> ChainState {
        ChainState {
            completed: self.completed,
            dim: self.state.dim(),
            position: self.state.position().to_vec(),
            gradient: self.state.gradient().to_vec(),
            logp: self.state.logp(),
            stepsize: self.stepsize,
            inv_metric: self.metric.to_inverse_metric(),
            adaptation: self.adaptation.clone(),
            sampler_rng: self.rng.position(),
            gq_rng: self.gq_rng.position(),
        }
    }

    /// Chain `chain_id` rebuilt from a snapshot taken by [`Chain::snapshot`] in a run with the
    /// same model, settings and seed: it continues exactly as the original chain would have.
    /// A snapshot that does not fit the model or the settings is a [`ChainError::Config`].
    pub fn restore(
        model: &'m M,
        config: &SamplerConfig,
        seed: u64,
        chain_id: u64,
        snapshot: &ChainState,
    ) -> Result<Self, ChainError> {
        validate_config(config).map_err(ChainError::Config)?;
        let dim = model.dim();
        let mismatch = |what: &str| {
            ChainError::Config(format!(
                "the checkpoint does not fit this model and these settings ({what})"
            ))
        };
        if snapshot.dim != dim || snapshot.position.len() != dim || snapshot.gradient.len() != dim {
            return Err(mismatch(&format!(
                "{} dimensions, the model has {dim}",
                snapshot.dim
            )));
        }
        if snapshot.completed > config.num_warmup + config.num_samples {
            return Err(mismatch("more iterations than the run has"));
        }
        let adapting =
            config.algorithm == Algorithm::Nuts && config.adapt.engaged && config.num_warmup > 0;
        if snapshot.adaptation.is_some() != adapting {
            return Err(mismatch("adaptation state"));
        }
        if !matches!(
            (&snapshot.inv_metric, config.metric),
            (InverseMetric::Diag(_), MetricKind::Diag | MetricKind::Unit)
                | (InverseMetric::Dense { .. }, MetricKind::Dense)
                | (InverseMetric::LowRank { .. }, MetricKind::LowRank)
        ) {
            return Err(mismatch("metric kind"));
        }
        // The same inverse metric gives the same derived factors, bit for bit.
        let metric =
            Metric::from_inverse(config.metric, dim, &snapshot.inv_metric).map_err(|error| {
                ChainError::Metric {
                    iteration: snapshot.completed,
                    error,
                }
            })?;
        let state = NutsState::from_point(
            &snapshot.position,
            &snapshot.gradient,
            snapshot.logp,
            config.max_depth,
        );
        let n_out = model.output_names().len();
        let inv_metric_report = metric.to_inverse_metric();
        Ok(Chain {
            model,
            algorithm: config.algorithm,
            ws: model.new_chain_workspace(chain_id),
            state,
            metric,
            settings: NutsSettings {
                max_depth: config.max_depth,
                max_energy_error: config.max_energy_error,
            },
            stepsize: snapshot.stepsize,
            adaptation: snapshot.adaptation.clone(),
            stepsize_jitter: config.stepsize_jitter,
            rng: StreamRng::at_position(seed, chain_id, Purpose::Sampler, snapshot.sampler_rng),
            gq_rng: StreamRng::at_position(
                seed,
                chain_id,
                Purpose::GeneratedQuantities,
                snapshot.gq_rng,
            ),
            num_warmup: config.num_warmup,
            num_samples: config.num_samples,
            completed: snapshot.completed,
            output: vec![0.0; n_out],
            inv_metric_report,
            phase: Phase::Idle,
        })
    }

    /// Whether all warmup and sampling iterations are done.
    pub fn is_done(&self) -> bool {
        self.completed >= self.num_warmup + self.num_samples
    }
    /// Whether the next iteration is a warmup iteration.
    pub fn in_warmup(&self) -> bool {
        self.completed < self.num_warmup
    }
    /// Iterations completed so far.
    pub fn completed(&self) -> usize {
        self.completed
    }
    /// The step size the next transition will use.
    pub fn stepsize(&self) -> f64 {
        self.stepsize
    }
    /// The current metric.
    pub fn metric(&self) -> &Metric {
        &self.metric
    }
    /// The sampler state (current position, log density, gradient).
    pub fn state(&self) -> &NutsState {
        &self.state
    }
    /// The current inverse metric as the contract type, refreshed in place (no allocation).
    pub fn inverse_metric(&mut self) -> &InverseMetric {
        self.metric.copy_inverse_into(&mut self.inv_metric_report);
        &self.inv_metric_report
    }
    /// The last rejected proposal's error, if any since the previous call.
    pub fn take_rejection(&mut self) -> Option<EvalError> {
        self.state.take_rejection()
    }

    /// Runs one iteration: a transition, then (during warmup) adaptation. This is
    /// [`Chain::begin_iteration`] and [`Chain::resume_iteration`] with the model evaluated in
    /// the chain's own workspace in between.
    pub fn next_iteration(&mut self) -> Result<Iteration, ChainError> {
        let mut status = self.begin_iteration()?;
        loop {
            match status {
                IterationStatus::Done(iteration) => return Ok(iteration),
                IterationStatus::NeedsEvaluation => {
                    let (q, grad) = self.state.evaluation_point();
                    let result = self.model.log_density_gradient(&mut self.ws, q, grad);
                    status = self.resume_iteration(result)?;
                }
            }
        }
    }

    /// Starts the next iteration, split at each model evaluation as
    /// [`NutsState::begin_transition`] splits a transition (the step-size heuristic after a
    /// metric update included), so that a driver can evaluate many chains' points in one call:
    /// while the status is [`IterationStatus::NeedsEvaluation`], evaluate the model at
    /// [`Chain::evaluation_point`] (the gradient into the slice it returns) and pass the result
    /// to [`Chain::resume_iteration`]. The iteration equals [`Chain::next_iteration`]'s bit for
    /// bit. After an `Err` the chain is stopped: no further iteration may begin.
    pub fn begin_iteration(&mut self) -> Result<IterationStatus, ChainError> {
        let iteration = self.completed + 1;
        if self.algorithm == Algorithm::FixedParam {
            self.completed = iteration;
            return Ok(IterationStatus::Done(Iteration {
                iteration,
                warmup: false,
                stats: fixed_param::transition_stats(),
            }));
        }
        // Stan's `sample_stepsize`: no draw at all without jitter, so such runs are unchanged.
        let stepsize = if self.stepsize_jitter > 0.0 {
            self.stepsize * (1.0 + self.stepsize_jitter * (2.0 * self.rng.uniform() - 1.0))
        } else {
            self.stepsize
        };
        self.phase = Phase::Transition {
            iteration,
            warmup: self.in_warmup(),
            stepsize,
        };
        let status =
            self.state
                .begin_transition(&self.metric, stepsize, &self.settings, &mut self.rng);
        self.after_transition(status)
    }

    /// The point at which the model must be evaluated next, and the buffer its gradient must
    /// be written into. Only meaningful after an [`IterationStatus::NeedsEvaluation`].
    pub fn evaluation_point(&mut self) -> (&[f64], &mut [f64]) {
        self.state.evaluation_point()
    }

    /// Continues the iteration with the model's result at [`Chain::evaluation_point`].
    pub fn resume_iteration(
        &mut self,
        result: Result<f64, EvalError>,
    ) -> Result<IterationStatus, ChainError> {
        match self.phase {
            Phase::Idle => Err(ChainError::Config(
                "resume_iteration without an iteration in progress".into(),
            )),
            Phase::Transition { iteration, .. } => {
                let status = self
                    .state
                    .resume_transition(&self.metric, &mut self.rng, result)
                    .map_err(|error| {
                        self.phase = Phase::Idle;
                        ChainError::Fatal { iteration, error }
                    })?;
                self.after_transition(status)
            }
            Phase::StepsizeSearch { .. } => {
                let status = self
                    .state
                    .resume_stepsize_search(&self.metric, &mut self.rng, result);
                self.after_search(status)
            }
        }
    }

    /// After a transition step: adaptation once the transition is complete (during warmup),
    /// which may start the step-size heuristic.
    fn after_transition(&mut self, status: StepStatus) -> Result<IterationStatus, ChainError> {
        let Phase::Transition {
            iteration,
            warmup,
            stepsize,
        } = self.phase
        else {
            unreachable!("a transition step outside a transition");
        };
        let transition = match status {
            StepStatus::NeedsEvaluation => return Ok(IterationStatus::NeedsEvaluation),
            StepStatus::Done(transition) => transition,
        };
        if warmup {
            if let Some(adaptation) = &mut self.adaptation {
                let outcome = adaptation
                    .learn(
                        transition.accept_stat,
                        self.state.position(),
                        self.state.gradient(),
                        &mut self.metric,
                    )
                    .map_err(|error| {
                        self.phase = Phase::Idle;
                        ChainError::Metric { iteration, error }
                    })?;
                self.stepsize = outcome.stepsize;
                if outcome.search_stepsize {
                    self.phase = Phase::StepsizeSearch {
                        iteration,
                        stepsize,
                        transition,
                    };
                    let status = self.state.begin_stepsize_search(
                        &self.metric,
                        self.stepsize,
                        &mut self.rng,
                    );
                    return self.after_search(status);
                }
            }
        }
        Ok(self.complete(iteration, warmup, stepsize, transition))
    }

    /// After a step of the step-size heuristic that follows a metric update.
    fn after_search(&mut self, status: SearchStatus) -> Result<IterationStatus, ChainError> {
        let Phase::StepsizeSearch {
            iteration,
            stepsize,
            transition,
        } = self.phase
        else {
            unreachable!("a step-size search step outside a search");
        };
        match status {
            SearchStatus::NeedsEvaluation => Ok(IterationStatus::NeedsEvaluation),
            SearchStatus::Done(Err(error)) => {
                self.phase = Phase::Idle;
                Err(ChainError::from_stepsize(iteration, error))
            }
            SearchStatus::Done(Ok(found)) => {
                self.stepsize = found;
                if let Some(adaptation) = &mut self.adaptation {
                    adaptation.restart_stepsize(found);
                }
                Ok(self.complete(iteration, true, stepsize, transition))
            }
        }
    }

    /// Ends iteration `iteration`, whose transition used `stepsize`: the final step size at the
    /// end of warmup, and the iteration's statistics.
    fn complete(
        &mut self,
        iteration: usize,
        warmup: bool,
        stepsize: f64,
        t: Transition,
    ) -> IterationStatus {
        if warmup && iteration == self.num_warmup {
            if let Some(adaptation) = &self.adaptation {
                self.stepsize = adaptation.final_stepsize();
            }
        }
        self.phase = Phase::Idle;
        self.completed = iteration;
        IterationStatus::Done(Iteration {
            iteration,
            warmup,
            stats: DrawStats {
                lp: t.lp,
                accept_stat: t.accept_stat,
                stepsize,
                treedepth: t.treedepth,
                n_leapfrog: t.n_leapfrog,
                divergent: t.divergent,
                energy: t.energy,
            },
        })
    }

    /// The model's output row (constrained parameters, transformed parameters, generated
    /// quantities) at the current position, drawing from the chain's generated-quantities
    /// stream. A non-fatal error gives a row of NaN (Stan's behaviour) and is returned alongside
    /// for reporting; a fatal error is `Err`.
    pub fn write_output(&mut self) -> Result<(&[f64], Option<EvalError>), EvalError> {
        match self.model.write_output(
            &mut self.ws,
            self.state.position(),
            &mut self.gq_rng,
            &mut self.output,
        ) {
            Ok(()) => Ok((&self.output, None)),
            Err(error) if error.is_fatal() => Err(error),
            Err(error) => {
                self.output.fill(f64::NAN);
                Ok((&self.output, Some(error)))
            }
        }
    }
}
