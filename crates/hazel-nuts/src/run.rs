//! The runner: all chains of a run on a private rayon thread pool, each writing to its own sink.
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

use crate::chain::{validate_config, Chain, ChainError, Iteration};
use crate::checkpoint::{ChainCheckpoint, ChainCounters, ChainStart, CheckpointPolicy};
use crate::types::{Algorithm, Init, RunConfig};
use hazel_density::Model;
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
    let threads = match config.threads {
        0 => std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        n => n,
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.min(config.chains.max(1)))
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
    let chains: Vec<ChainReport> = pool.install(|| {
        use rayon::prelude::*;
        sinks
            .into_par_iter()
            .zip(starts)
            .enumerate()
            .with_max_len(1)
            .map(|(index, (mut sink, start))| {
                let chain_id = config.first_chain_id + index as u64;
                let mut report = ChainReport::new(chain_id);
                let outcome = catch_unwind(AssertUnwindSafe(|| {
                    run_chain(
                        model,
                        &shared,
                        index,
                        chain_id,
                        start,
                        sink.as_mut(),
                        &mut report,
                    )
                }));
                report.error = match outcome {
                    Ok(Ok(())) => None,
                    Ok(Err(e)) => Some(e),
                    Err(payload) => Some(ChainError::Panicked(panic_message(payload.as_ref()))),
                };
                if let Some(ChainError::Fatal { .. }) = report.error {
                    let _ = stop.compare_exchange(
                        u64::MAX,
                        chain_id,
                        Ordering::SeqCst,
                        Ordering::SeqCst,
                    );
                }
                report
            })
            .collect()
    });
    Ok(RunReport { chains })
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
}

/// Runs one chain into its sink, recording progress in `report`.
fn run_chain<M: Model + ?Sized>(
    model: &M,
    shared: &Shared<'_>,
    index: usize,
    chain_id: u64,
    start: ChainStart,
    sink: &mut dyn DrawSink,
    report: &mut ChainReport,
) -> Result<(), ChainError> {
    let config = shared.config;
    let warmup_start = Instant::now();
    if let Some(by_chain) = shared.stopped_by() {
        return Err(ChainError::Stopped {
            iteration: 0,
            by_chain,
        });
    }
    let mut chain = match &start {
        ChainStart::Fresh => {
            let chain = Chain::new(model, &config.sampler, config.seed, chain_id, index)?;
            sink.begin(&Columns {
                stats: config.sampler.algorithm.stat_columns(),
                values: &model.output_names(),
            })
            .map_err(ChainError::Sink)?;
            chain
        }
        ChainStart::Resume(checkpoint) => {
            report.restore(&checkpoint.counters);
            let Some(state) = &checkpoint.state else {
                // Finished before the interruption: its output is complete.
                report.iterations = config.sampler.num_warmup + config.sampler.num_samples;
                return Ok(());
            };
            let mut chain = Chain::restore(model, &config.sampler, config.seed, chain_id, state)?;
            report.iterations = chain.completed();
            if chain.completed() >= config.sampler.num_warmup {
                report.stepsize = Some(chain.stepsize());
                report.inv_metric = Some(chain.inverse_metric().clone());
            }
            chain
        }
    };
    let result = sample_into(&mut chain, shared, index, sink, report, warmup_start);
    let finished = sink.finish(&report.timing).map_err(ChainError::Sink);
    result.and(finished)?;
    if !shared.config.checkpoint.is_off() {
        let last = ChainCheckpoint {
            state: None,
            counters: report.counters(),
        };
        sink.checkpoint(&last).map_err(ChainError::Sink)?;
    }
    Ok(())
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

/// The iteration loop of one chain after `begin` (or after restoring it).
fn sample_into<M: Model + ?Sized>(
    chain: &mut Chain<'_, M>,
    shared: &Shared<'_>,
    index: usize,
    sink: &mut dyn DrawSink,
    report: &mut ChainReport,
    warmup_start: Instant,
) -> Result<(), ChainError> {
    let (sampler, progress) = (&shared.config.sampler, shared.progress);
    let n_stats = sampler.algorithm.stat_columns().len();
    // Time already spent before a resume counts towards the phase it was spent in.
    let (warmup_before, sampling_before) = (report.timing.warmup, report.timing.sampling);
    let mut sampling_start = None;
    // Iterations into the current phase (thinning counts from each phase's first iteration).
    let mut phase_iteration = chain.completed();
    let mut clock = CheckpointClock::new(shared.config.checkpoint, chain.completed());
    let record_time =
        |report: &mut ChainReport, sampling_start: Option<Instant>| match sampling_start {
            None => report.timing.warmup = warmup_before + warmup_start.elapsed(),
            Some(start) => report.timing.sampling = sampling_before + start.elapsed(),
        };
    // Adaptation is over before the first sampling iteration, also when num_warmup = 0.
    if chain.completed() == 0 && sampler.num_warmup == 0 {
        finish_warmup(chain, sampler.algorithm, sink, report)?;
    }
    if chain.completed() >= sampler.num_warmup {
        sampling_start = Some(Instant::now());
        phase_iteration -= sampler.num_warmup;
    }
    while !chain.is_done() {
        if let Some(by_chain) = shared.stopped_by() {
            record_time(report, sampling_start);
            return Err(ChainError::Stopped {
                iteration: chain.completed(),
                by_chain,
            });
        }
        if shared.progress.interrupted() {
            record_time(report, sampling_start);
            return Err(ChainError::Interrupted {
                iteration: chain.completed(),
            });
        }
        let step = chain.next_iteration();
        if let Some(rejection) = chain.take_rejection() {
            progress.message(index, &rejection.to_string());
        }
        let Iteration {
            iteration,
            warmup,
            stats,
        } = match step {
            Ok(it) => it,
            Err(e) => {
                record_time(report, sampling_start);
                return Err(e);
            }
        };
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
        let keep = (!warmup || sampler.save_warmup) && phase_iteration.is_multiple_of(sampler.thin);
        if keep {
            let (values, problem) = chain
                .write_output()
                .map_err(|error| ChainError::Fatal { iteration, error })?;
            let stat_values = stats.values();
            sink.draw(&Draw {
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
        phase_iteration += 1;
        // Divergences of the current phase: warmup's are expected while the step size adapts
        // and are not counted in the sampling phase's (CmdStan's diagnostics count only those).
        let divergences = if warmup {
            report.warmup_divergences
        } else {
            report.divergences
        };
        progress.iteration(index, iteration, warmup, divergences);
        if warmup && iteration == sampler.num_warmup {
            record_time(report, None);
            finish_warmup(chain, sampler.algorithm, sink, report)?;
            sampling_start = Some(Instant::now());
            phase_iteration = 0;
        }
        // Between iterations, after everything this iteration writes; never at the end (the
        // final checkpoint follows `finish`). Taking one reads the state and changes nothing.
        if !chain.is_done() && clock.due(iteration) {
            let started = Instant::now();
            record_time(report, sampling_start);
            let checkpoint = ChainCheckpoint {
                state: Some(chain.snapshot()),
                counters: report.counters(),
            };
            sink.checkpoint(&checkpoint).map_err(ChainError::Sink)?;
            clock.taken(iteration, started);
        }
    }
    record_time(report, sampling_start);
    Ok(())
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
