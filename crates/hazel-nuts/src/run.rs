//! The runner: all chains of a run on a private rayon thread pool, each writing to its own sink.
//!
//! Chains run on their own (one task each) or, with [`RunConfig::batch_chains`] = K > 1, in
//! lockstep groups of K consecutive chains (one task per group), whose model evaluations are
//! made K points at a time by the model's batched entry point (see `run_lockstep`). Either way
//! a chain's sink receives the same calls with the same values, bit for bit.
//!
//! Chain `k` (0-based) of a run has id `first_chain_id + k`; its random streams are
//! `StreamRng::new(seed, id, purpose)`, so its draws depend only on the seed, its id, the model
//! and the settings — never on the thread count or on the other chains. Chains are independent
//! tasks: a chain that fails for a reason of its own (no starting point, a sink I/O error, a
//! panic) stops alone, and its [`ChainReport`] says why; the other chains run to the end. A
//! *fatal* model error (`fatal_error`, [`hazel_density::EvalError::is_fatal`]) stops the whole
//! run, as in Stan: the other chains stop before their next iteration with
//! [`ChainError::Stopped`]. Every draw already passed to a sink stays there, and every sink
//! that was begun is finished.
//!
//! For each chain the runner calls, from the thread running the chain, in order:
//! [`DrawSink::begin`] (after a starting point was found) with the algorithm's statistic columns
//! ([`Algorithm::stat_columns`]) and the model's output columns, [`DrawSink::draw`] for each
//! kept iteration (warmup iterations with `save_warmup`, every `thin`-th iteration of each
//! phase counted from its first, as CmdStan does), [`DrawSink::adaptation_done`] after warmup
//! (NUTS only: fixed_param adapts nothing, and CmdStan's fixed_param files have no adaptation
//! block), and [`DrawSink::finish`] — also when the chain stops early after `begin`, so a file
//! sink can flush what it has. Checkpoints reach [`DrawSink::checkpoint`] as
//! [`ChainCheckpoint`]s.

use crate::chain::{validate_config, Chain, ChainError, Iteration, IterationStatus};
use crate::checkpoint::{ChainCheckpoint, ChainCounters, ChainStart, CheckpointPolicy};
use crate::types::{Algorithm, Init, Lockstep, RunConfig};
use hazel_density::{EvalError, Model};
use hazel_draws::{AdaptationInfo, Columns, Draw, DrawSink, InverseMetric, Progress, Timing};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A problem with the run as a whole (nothing was sampled).
#[derive(Debug, Clone, PartialEq)]
pub enum RunError {
    /// One sink per chain is required.
    SinkCount { chains: usize, sinks: usize },
    /// Invalid settings.
    Config(String),
    /// The thread pool could not be built.
    ThreadPool(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::SinkCount { chains, sinks } => {
                write!(f, "{chains} chains need {chains} sinks, got {sinks}")
            }
            RunError::Config(e) => write!(f, "invalid settings: {e}"),
            RunError::ThreadPool(e) => write!(f, "could not start worker threads: {e}"),
        }
    }
}

impl std::error::Error for RunError {}

/// What happened in one chain.
#[derive(Debug)]
pub struct ChainReport {
    /// The chain's id (`first_chain_id + index`).
    pub chain_id: u64,
    /// Iterations completed (warmup + sampling).
    pub iterations: usize,
    /// Draws passed to the sink.
    pub draws_written: usize,
    /// Divergent transitions during warmup and during sampling.
    pub warmup_divergences: usize,
    pub divergences: usize,
    /// Sampling iterations that hit the maximum tree depth.
    pub max_treedepth_hits: usize,
    /// Step size and inverse metric after warmup (absent if the chain stopped before).
    pub stepsize: Option<f64>,
    pub inv_metric: Option<InverseMetric>,
    pub timing: Timing,
    /// Why the chain stopped early; `None` when it completed.
    pub error: Option<ChainError>,
}

impl ChainReport {
    /// The counters a checkpoint stores.
    fn counters(&self) -> ChainCounters {
        ChainCounters {
            draws_written: self.draws_written,
            warmup_divergences: self.warmup_divergences,
            divergences: self.divergences,
            max_treedepth_hits: self.max_treedepth_hits,
            warmup_secs: self.timing.warmup.as_secs_f64(),
            sampling_secs: self.timing.sampling.as_secs_f64(),
        }
    }

    /// Continues from a checkpoint's counters.
    fn restore(&mut self, counters: &ChainCounters) {
        self.draws_written = counters.draws_written;
        self.warmup_divergences = counters.warmup_divergences;
        self.divergences = counters.divergences;
        self.max_treedepth_hits = counters.max_treedepth_hits;
        self.timing = Timing {
            warmup: counters.warmup_time(),
            sampling: counters.sampling_time(),
        };
    }

    fn new(chain_id: u64) -> Self {
        ChainReport {
            chain_id,
            iterations: 0,
            draws_written: 0,
            warmup_divergences: 0,
            divergences: 0,
            max_treedepth_hits: 0,
            stepsize: None,
            inv_metric: None,
            timing: Timing::default(),
            error: None,
        }
    }
}

/// The results of all chains, in chain order.
#[derive(Debug)]
pub struct RunReport {
    pub chains: Vec<ChainReport>,
}

impl RunReport {
    /// Whether every chain completed.
    pub fn all_ok(&self) -> bool {
        self.chains.iter().all(|c| c.error.is_none())
    }
    /// The chains that stopped early, with their errors.
    pub fn failures(&self) -> impl Iterator<Item = (u64, &ChainError)> {
        self.chains
            .iter()
            .filter_map(|c| c.error.as_ref().map(|e| (c.chain_id, e)))
    }
}

/// Runs `config.chains` chains of `model`, chain `k` writing to `sinks[k]`.
///
/// Returns `Err` only for problems with the run as a whole (detected before any sampling);
/// per-chain failures are in the [`RunReport`].
pub fn run<M: Model + ?Sized>(
    model: &M,
    config: &RunConfig,
    sinks: Vec<Box<dyn DrawSink>>,
    progress: &dyn Progress,
) -> Result<RunReport, RunError> {
    let starts = vec![ChainStart::Fresh; sinks.len()];
    run_from(model, config, starts, sinks, progress)
}

/// [`run()`] with each chain starting as `starts[k]` says: fresh, or from a checkpoint of an
/// interrupted run with the same model, data and settings, whose sink already holds exactly
/// the output written up to that checkpoint. A resumed chain writes what the uninterrupted
/// chain would have written from there on (its sink's `begin` is not called again; a chain
/// whose checkpoint says it finished is not run and its sink is left untouched).
pub fn run_from<M: Model + ?Sized>(
    model: &M,
    config: &RunConfig,
    starts: Vec<ChainStart>,
    sinks: Vec<Box<dyn DrawSink>>,
    progress: &dyn Progress,
) -> Result<RunReport, RunError> {
    if sinks.len() != config.chains || starts.len() != config.chains {
        return Err(RunError::SinkCount {
            chains: config.chains,
            sinks: sinks.len().min(starts.len()),
        });
    }
    validate_config(&config.sampler).map_err(RunError::Config)?;
    if let Init::Unconstrained(rows) = &config.sampler.init {
        if rows.len() != 1 && rows.len() != config.chains {
            return Err(RunError::Config(format!(
                "{} sets of initial values for {} chains: give one per chain or one shared",
                rows.len(),
                config.chains
            )));
        }
    }
    // Chains k·K .. (k+1)·K form a lockstep group; a group of one runs on its own.
    let batch = config.batch_chains.max(1);
    let mut groups: Vec<Vec<Member>> = Vec::new();
    for (index, (sink, start)) in sinks.into_iter().zip(starts).enumerate() {
        if index % batch == 0 {
            groups.push(Vec::with_capacity(batch));
        }
        groups.last_mut().expect("a group was opened").push(Member {
            index,
            chain_id: config.first_chain_id + index as u64,
            start,
            sink,
        });
    }
    let threads = match config.threads {
        0 => std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        n => n,
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.min(groups.len().max(1)))
        .thread_name(|i| format!("hazel-chain-{i}"))
        .stack_size(hazel_density::EVALUATION_STACK_BYTES)
        .build()
        .map_err(|e| RunError::ThreadPool(e.to_string()))?;
    // The id of the first chain that met a fatal error (u64::MAX: none).
    let stop = AtomicU64::new(u64::MAX);
    let shared = Shared {
        config,
        progress,
        stop: &stop,
    };
    let reports: Vec<Vec<ChainReport>> = pool.install(|| {
        use rayon::prelude::*;
        groups
            .into_par_iter()
            .with_max_len(1)
            .map(|mut group| {
                if group.len() == 1 {
                    let member = group.pop().expect("a group of one");
                    vec![run_alone(model, &shared, member)]
                } else {
                    run_lockstep(model, &shared, group)
                }
            })
            .collect()
    });
    Ok(RunReport {
        chains: reports.into_iter().flatten().collect(),
    })
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".to_string()
    }
}

/// What every chain of a run shares.
struct Shared<'a> {
    config: &'a RunConfig,
    progress: &'a dyn Progress,
    stop: &'a AtomicU64,
}

impl Shared<'_> {
    /// The chain whose fatal error stopped the run, if any.
    fn stopped_by(&self) -> Option<u64> {
        match self.stop.load(Ordering::SeqCst) {
            u64::MAX => None,
            id => Some(id),
        }
    }

    /// A fatal model error of chain `chain_id` stops the whole run (the first one is named).
    fn stop_if_fatal(&self, chain_id: u64, error: &ChainError) {
        if let ChainError::Fatal { .. } = error {
            let _ =
                self.stop
                    .compare_exchange(u64::MAX, chain_id, Ordering::SeqCst, Ordering::SeqCst);
        }
    }
}

/// A chain of the run before it starts: its position, id, start and sink.
struct Member {
    index: usize,
    chain_id: u64,
    start: ChainStart,
    sink: Box<dyn DrawSink>,
}

/// One chain with everything the runner keeps around its iterations: the sink, the report,
/// the phase timers, thinning and the checkpoint clock. Both drivers — a chain on its own
/// ([`run_alone`]) and chains in lockstep ([`run_lockstep`]) — step a chain through these
/// methods, so the sink sees the same calls either way.
struct ChainTask<'m, M: Model + ?Sized> {
    index: usize,
    sink: Box<dyn DrawSink>,
    report: ChainReport,
    /// `None` until started, and for a chain that had finished before a resume.
    chain: Option<Chain<'m, M>>,
    /// Whether the sink was begun (or resumed), so that `finish` is owed.
    began: bool,
    warmup_start: Instant,
    /// Time already spent before a resume, per phase.
    warmup_before: Duration,
    sampling_before: Duration,
    sampling_start: Option<Instant>,
    /// Iterations into the current phase (thinning counts from each phase's first iteration).
    phase_iteration: usize,
    clock: CheckpointClock,
}

impl<'m, M: Model + ?Sized> ChainTask<'m, M> {
    fn new(member: Member) -> (Self, ChainStart) {
        let task = ChainTask {
            index: member.index,
            sink: member.sink,
            report: ChainReport::new(member.chain_id),
            chain: None,
            began: false,
            warmup_start: Instant::now(),
            warmup_before: Duration::ZERO,
            sampling_before: Duration::ZERO,
            sampling_start: None,
            phase_iteration: 0,
            clock: CheckpointClock::new(CheckpointPolicy::default(), 0),
        };
        (task, member.start)
    }

    fn chain(&mut self) -> &mut Chain<'m, M> {
        self.chain.as_mut().expect("the chain was started")
    }

    /// Finds the starting point (or restores the checkpoint) and begins the sink. Returns
    /// whether there are iterations to run.
    fn start(
        &mut self,
        model: &'m M,
        shared: &Shared<'_>,
        start: ChainStart,
    ) -> Result<bool, ChainError> {
        let config = shared.config;
        let chain_id = self.report.chain_id;
        self.warmup_start = Instant::now();
        if let Some(by_chain) = shared.stopped_by() {
            return Err(ChainError::Stopped {
                iteration: 0,
                by_chain,
            });
        }
        let mut chain = match &start {
            ChainStart::Fresh => {
                let chain = Chain::new(model, &config.sampler, config.seed, chain_id, self.index)?;
                self.sink
                    .begin(&Columns {
                        stats: config.sampler.algorithm.stat_columns(),
                        values: &model.output_names(),
                    })
                    .map_err(ChainError::Sink)?;
                chain
            }
            ChainStart::Resume(checkpoint) => {
                self.report.restore(&checkpoint.counters);
                let Some(state) = &checkpoint.state else {
                    // Finished before the interruption: its output is complete.
                    self.report.iterations = config.sampler.num_warmup + config.sampler.num_samples;
                    return Ok(false);
                };
                let mut chain =
                    Chain::restore(model, &config.sampler, config.seed, chain_id, state)?;
                self.report.iterations = chain.completed();
                if chain.completed() >= config.sampler.num_warmup {
                    self.report.stepsize = Some(chain.stepsize());
                    self.report.inv_metric = Some(chain.inverse_metric().clone());
                    if config.sampler.algorithm == Algorithm::Nuts {
                        self.sink
                            .adaptation_resumed(&AdaptationInfo::Hmc {
                                stepsize: chain.stepsize(),
                                inv_metric: chain.inverse_metric(),
                            })
                            .map_err(ChainError::Sink)?;
                    }
                }
                chain
            }
        };
        self.began = true;
        let sampler = &config.sampler;
        (self.warmup_before, self.sampling_before) =
            (self.report.timing.warmup, self.report.timing.sampling);
        self.phase_iteration = chain.completed();
        self.clock = CheckpointClock::new(config.checkpoint, chain.completed());
        // Adaptation is over before the first sampling iteration, also when num_warmup = 0.
        if chain.completed() == 0 && sampler.num_warmup == 0 {
            finish_warmup(
                &mut chain,
                sampler.algorithm,
                self.sink.as_mut(),
                &mut self.report,
            )?;
        }
        if chain.completed() >= sampler.num_warmup {
            self.sampling_start = Some(Instant::now());
            self.phase_iteration -= sampler.num_warmup;
        }
        let more = !chain.is_done();
        self.chain = Some(chain);
        Ok(more)
    }

    /// Whether every iteration is done.
    fn is_done(&self) -> bool {
        self.chain.as_ref().is_none_or(|c| c.is_done())
    }

    /// Another chain's fatal error, or the caller's interruption, stops this chain before its
    /// next iteration.
    fn check_stop(&self, shared: &Shared<'_>) -> Result<(), ChainError> {
        let iteration = self.chain.as_ref().map_or(0, |c| c.completed());
        if let Some(by_chain) = shared.stopped_by() {
            return Err(ChainError::Stopped {
                iteration,
                by_chain,
            });
        }
        if shared.progress.interrupted() {
            return Err(ChainError::Interrupted { iteration });
        }
        Ok(())
    }

    fn record_time(&mut self) {
        match self.sampling_start {
            None => self.report.timing.warmup = self.warmup_before + self.warmup_start.elapsed(),
            Some(start) => self.report.timing.sampling = self.sampling_before + start.elapsed(),
        }
    }

    /// Everything that follows an iteration: the rejection message, the counters, the draw,
    /// progress, the end of warmup and a checkpoint when one is due. An iteration that failed
    /// is returned as the chain's error.
    fn record(
        &mut self,
        shared: &Shared<'_>,
        step: Result<Iteration, ChainError>,
    ) -> Result<(), ChainError> {
        let (sampler, progress) = (&shared.config.sampler, shared.progress);
        let index = self.index;
        let chain = self.chain.as_mut().expect("the chain was started");
        if let Some(rejection) = chain.take_rejection() {
            progress.message(index, &rejection.to_string());
        }
        let Iteration {
            iteration,
            warmup,
            stats,
        } = step?;
        let report = &mut self.report;
        report.iterations = iteration;
        if stats.divergent {
            if warmup {
                report.warmup_divergences += 1;
            } else {
                report.divergences += 1;
            }
        }
        if !warmup && stats.treedepth >= sampler.max_depth {
            report.max_treedepth_hits += 1;
        }
        let keep =
            (!warmup || sampler.save_warmup) && self.phase_iteration.is_multiple_of(sampler.thin);
        if keep {
            let (values, problem) = chain
                .write_output()
                .map_err(|error| ChainError::Fatal { iteration, error })?;
            let stat_values = stats.values();
            let n_stats = sampler.algorithm.stat_columns().len();
            self.sink
                .draw(&Draw {
                    warmup,
                    stats: &stat_values[..n_stats],
                    values,
                })
                .map_err(ChainError::Sink)?;
            report.draws_written += 1;
            if let Some(problem) = problem {
                progress.message(
                    index,
                    &format!("output values set to NaN: {}", problem.message),
                );
            }
        }
        self.phase_iteration += 1;
        // Divergences of the current phase: warmup's are expected while the step size adapts
        // and are not counted in the sampling phase's (CmdStan's diagnostics count only those).
        let divergences = if warmup {
            report.warmup_divergences
        } else {
            report.divergences
        };
        progress.iteration(index, iteration, warmup, divergences);
        if warmup && iteration == sampler.num_warmup {
            self.record_time();
            let chain = self.chain.as_mut().expect("the chain was started");
            finish_warmup(
                chain,
                sampler.algorithm,
                self.sink.as_mut(),
                &mut self.report,
            )?;
            self.sampling_start = Some(Instant::now());
            self.phase_iteration = 0;
        }
        // Between iterations, after everything this iteration writes; never at the end (the
        // final checkpoint follows `finish`). Taking one reads the state and changes nothing.
        let chain = self.chain.as_ref().expect("the chain was started");
        if !chain.is_done() && self.clock.due(iteration) {
            let started = Instant::now();
            self.record_time();
            let checkpoint = ChainCheckpoint {
                state: Some(self.chain.as_ref().expect("started").snapshot()),
                counters: self.report.counters(),
            };
            self.sink
                .checkpoint(&checkpoint)
                .map_err(ChainError::Sink)?;
            self.clock.taken(iteration, started);
        }
        Ok(())
    }

    /// After the last iteration or an error: the sink's `finish` (owed after a successful
    /// `begin`) and, when the run checkpoints and all went well, the final state-less
    /// checkpoint.
    fn conclude(
        &mut self,
        shared: &Shared<'_>,
        result: Result<(), ChainError>,
    ) -> Result<(), ChainError> {
        if !self.began {
            return result;
        }
        self.record_time();
        let finished = self
            .sink
            .finish(&self.report.timing)
            .map_err(ChainError::Sink);
        result.and(finished)?;
        if !shared.config.checkpoint.is_off() {
            let last = ChainCheckpoint {
                state: None,
                counters: self.report.counters(),
            };
            self.sink.checkpoint(&last).map_err(ChainError::Sink)?;
        }
        Ok(())
    }

    /// The chain's report with how it ended (a panic included); a fatal error stops the run.
    fn settle(
        mut self,
        shared: &Shared<'_>,
        outcome: std::thread::Result<Result<(), ChainError>>,
    ) -> ChainReport {
        self.report.error = match outcome {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e),
            Err(payload) => Some(ChainError::Panicked(panic_message(payload.as_ref()))),
        };
        if let Some(error) = &self.report.error {
            shared.stop_if_fatal(self.report.chain_id, error);
        }
        self.report
    }
}

/// One chain on its own, evaluating the model in its own workspace.
fn run_alone<M: Model + ?Sized>(model: &M, shared: &Shared<'_>, member: Member) -> ChainReport {
    let (mut task, start) = ChainTask::new(member);
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let iterate = || -> Result<(), ChainError> {
            task.start(model, shared, start)?;
            while !task.is_done() {
                task.check_stop(shared)?;
                let step = task.chain().next_iteration();
                task.record(shared, step)?;
            }
            Ok(())
        };
        let result = iterate();
        task.conclude(shared, result)
    }));
    task.settle(shared, outcome)
}

/// Where a chain of a lockstep group stands.
enum Lane {
    /// Between iterations: begins its next iteration in this round.
    Ready,
    /// Its point is in the next batched evaluation.
    Waiting,
    /// Its iteration is over and it waits for the group's ([`Lockstep::Masked`]).
    Parked,
    /// Done (or stopped); the outcome is settled when the group ends.
    Over(std::thread::Result<Result<(), ChainError>>),
}

/// What advancing a lane gave.
enum Advance {
    /// Its point must be evaluated.
    Evaluate,
    /// An iteration ended.
    IterationDone,
    /// It has no more iterations.
    Finished,
}

/// Chains in lockstep on one thread: in each round every chain that needs the model hands its
/// point over, and all those points are evaluated by one
/// [`hazel_density::LogDensity::log_density_gradient_batch`] call (for a compiled model, one
/// pass of the batched executor, which reads a shared data matrix once for all of them). Each
/// chain keeps its own state, streams, adaptation and sink, and receives its own lane's result,
/// which equals the single-point evaluation bit for bit, so its draws are those it makes alone.
///
/// A chain whose iteration ends begins its next one at once ([`Lockstep::Desynchronised`]) or
/// waits for the group ([`Lockstep::Masked`]). A failed evaluation of one lane is that chain's
/// divergence (or its fatal error); a chain that stops leaves the group, which goes on with the
/// others. Finding the starting point and the first step size is done chain by chain (tens of
/// evaluations, against thousands for the run).
fn run_lockstep<M: Model + ?Sized>(
    model: &M,
    shared: &Shared<'_>,
    members: Vec<Member>,
) -> Vec<ChainReport> {
    let masked = shared.config.lockstep == Lockstep::Masked;
    let mut tasks = Vec::with_capacity(members.len());
    let mut lanes = Vec::with_capacity(members.len());
    for member in members {
        let (mut task, start) = ChainTask::new(member);
        let started = catch_unwind(AssertUnwindSafe(|| task.start(model, shared, start)));
        lanes.push(match started {
            Ok(Ok(true)) => Lane::Ready,
            Ok(result) => end_lane(&mut task, shared, result.map(|_| ())),
            Err(payload) => Lane::Over(Err(payload)),
        });
        tasks.push(task);
    }
    let k = tasks.len();
    let d = model.dim();
    let mut workspaces: Vec<M::Workspace> = if lanes.iter().any(|l| matches!(l, Lane::Ready)) {
        (0..k).map(|_| model.new_workspace()).collect()
    } else {
        Vec::new()
    };
    let (mut qs, mut grads) = (vec![0.0; k * d], vec![0.0; k * d]);
    let mut results: Vec<Result<f64, EvalError>> = vec![Ok(0.0); k];
    let mut waiting: Vec<usize> = Vec::with_capacity(k);
    loop {
        // Every chain between iterations begins its next one, until it needs the model.
        for (task, lane) in tasks.iter_mut().zip(lanes.iter_mut()) {
            while matches!(lane, Lane::Ready) {
                let advanced = catch_unwind(AssertUnwindSafe(|| {
                    if task.is_done() {
                        return Ok(Advance::Finished);
                    }
                    task.check_stop(shared)?;
                    let status = task.chain().begin_iteration();
                    settle_step(task, shared, status)
                }));
                *lane = next_lane(task, shared, advanced, masked);
            }
        }
        waiting.clear();
        waiting.extend((0..k).filter(|&c| matches!(lanes[c], Lane::Waiting)));
        if waiting.is_empty() {
            if !lanes.iter().any(|l| matches!(l, Lane::Parked)) {
                break;
            }
            // Masked: the whole group has ended this iteration; all begin the next.
            for lane in lanes.iter_mut().filter(|l| matches!(l, Lane::Parked)) {
                *lane = Lane::Ready;
            }
            continue;
        }
        let n = waiting.len();
        for (slot, &c) in waiting.iter().enumerate() {
            let (q, _) = tasks[c].chain().evaluation_point();
            qs[slot * d..(slot + 1) * d].copy_from_slice(q);
        }
        let evaluated = catch_unwind(AssertUnwindSafe(|| {
            model.log_density_gradient_batch(
                &mut workspaces[..n],
                &qs[..n * d],
                &mut grads[..n * d],
                &mut results[..n],
            )
        }));
        if let Err(payload) = evaluated {
            // The model panicked inside the batch: every chain in it stops, as a chain on its
            // own stops when its evaluation panics.
            let message = panic_message(payload.as_ref());
            for &c in &waiting {
                lanes[c] = Lane::Over(Ok(Err(ChainError::Panicked(message.clone()))));
            }
            continue;
        }
        for (slot, &c) in waiting.iter().enumerate() {
            let task = &mut tasks[c];
            let result = std::mem::replace(&mut results[slot], Ok(0.0));
            let advanced = catch_unwind(AssertUnwindSafe(|| {
                let (_, grad) = task.chain().evaluation_point();
                grad.copy_from_slice(&grads[slot * d..(slot + 1) * d]);
                let status = task.chain().resume_iteration(result);
                settle_step(task, shared, status)
            }));
            lanes[c] = next_lane(task, shared, advanced, masked);
        }
    }
    tasks
        .into_iter()
        .zip(lanes)
        .map(|(task, lane)| match lane {
            Lane::Over(outcome) => task.settle(shared, outcome),
            _ => unreachable!("the group ends when every chain is over"),
        })
        .collect()
}

/// Records an iteration that ended (or failed) in a lockstep lane.
fn settle_step<M: Model + ?Sized>(
    task: &mut ChainTask<'_, M>,
    shared: &Shared<'_>,
    status: Result<IterationStatus, ChainError>,
) -> Result<Advance, ChainError> {
    match status {
        Ok(IterationStatus::NeedsEvaluation) => Ok(Advance::Evaluate),
        Ok(IterationStatus::Done(iteration)) => {
            task.record(shared, Ok(iteration))?;
            Ok(Advance::IterationDone)
        }
        Err(error) => task.record(shared, Err(error)).map(|()| Advance::Finished),
    }
}

/// A lane's next state after advancing it.
fn next_lane<M: Model + ?Sized>(
    task: &mut ChainTask<'_, M>,
    shared: &Shared<'_>,
    advanced: std::thread::Result<Result<Advance, ChainError>>,
    masked: bool,
) -> Lane {
    match advanced {
        Ok(Ok(Advance::Evaluate)) => Lane::Waiting,
        Ok(Ok(Advance::IterationDone)) if masked && !task.is_done() => Lane::Parked,
        Ok(Ok(Advance::IterationDone)) => Lane::Ready,
        Ok(Ok(Advance::Finished)) => end_lane(task, shared, Ok(())),
        Ok(Err(error)) => end_lane(task, shared, Err(error)),
        // A panic skips `finish`, as for a chain on its own.
        Err(payload) => Lane::Over(Err(payload)),
    }
}

/// Concludes a lane's chain (its sink's `finish` and final checkpoint); a fatal error stops
/// the run at once, so the group's other chains stop before their next iteration.
fn end_lane<M: Model + ?Sized>(
    task: &mut ChainTask<'_, M>,
    shared: &Shared<'_>,
    result: Result<(), ChainError>,
) -> Lane {
    let outcome = catch_unwind(AssertUnwindSafe(|| task.conclude(shared, result)));
    if let Ok(Err(error)) = &outcome {
        shared.stop_if_fatal(task.report.chain_id, error);
    }
    Lane::Over(outcome)
}

/// When the next checkpoint is due.
struct CheckpointClock {
    policy: CheckpointPolicy,
    last_iteration: usize,
    last: Instant,
    /// The time-based interval, stretched to 100 × the last checkpoint's cost.
    interval: Option<Duration>,
}

impl CheckpointClock {
    fn new(policy: CheckpointPolicy, iteration: usize) -> Self {
        CheckpointClock {
            policy,
            last_iteration: iteration,
            last: Instant::now(),
            interval: policy.every,
        }
    }

    fn due(&self, iteration: usize) -> bool {
        let by_count = self.policy.every_iterations > 0
            && iteration >= self.last_iteration + self.policy.every_iterations;
        by_count || self.interval.is_some_and(|t| self.last.elapsed() >= t)
    }

    fn taken(&mut self, iteration: usize, started: Instant) {
        let cost = started.elapsed();
        self.last_iteration = iteration;
        self.last = Instant::now();
        self.interval = self.policy.every.map(|t| t.max(cost * 100));
    }
}

fn finish_warmup<M: Model + ?Sized>(
    chain: &mut Chain<'_, M>,
    algorithm: Algorithm,
    sink: &mut dyn DrawSink,
    report: &mut ChainReport,
) -> Result<(), ChainError> {
    let stepsize = chain.stepsize();
    let inv_metric = chain.inverse_metric();
    if algorithm == Algorithm::Nuts {
        sink.adaptation_done(&AdaptationInfo::Hmc {
            stepsize,
            inv_metric,
        })
        .map_err(ChainError::Sink)?;
    }
    report.stepsize = Some(stepsize);
    report.inv_metric = Some(inv_metric.clone());
    Ok(())
}
