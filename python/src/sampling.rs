//! `Model.sample()`: the sampling job `hazel sample` runs (`hazel_run::sample`, with the draws
//! kept in memory instead of written to files), on a thread of its own so that the calling
//! Python thread can show progress and take Ctrl-C while the chains run without the GIL.

use crate::{ChainTables, CompiledStan, DataError, HazelError};
use hazel_data::DataFile;
use hazel_density::EVALUATION_STACK_BYTES;
use hazel_draws::{ChainDraws, InverseMetric, Progress};
use hazel_graph::CompiledModel;
use hazel_nuts::{AdaptMethod, Algorithm, Init, MetricKind, RunConfig};
use hazel_output::{MemoryOutput, OutputConfig};
use hazel_rng::{Purpose, StreamRng};
use hazel_run::{SampleJob, SampleOutcome, Sampling};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Rejection messages kept for the Python side between two looks (older ones are dropped).
const MAX_MESSAGES: usize = 20;
/// At most this many rejection messages per chain and second are kept (the CLI's progress
/// rate-limits them the same way).
const MESSAGES_PER_SECOND: usize = 1;

/// The run's counters, written by the chains and read by the Python thread; also the
/// interruption flag the runner polls between iterations. It never influences the draws.
struct RunState {
    iterations: Vec<AtomicUsize>,
    warmup: Vec<AtomicBool>,
    divergences: Vec<AtomicUsize>,
    interrupted: AtomicBool,
    messages: Mutex<VecDeque<String>>,
    last_message: Mutex<Vec<Option<Instant>>>,
    chain_ids: Vec<u64>,
}

impl RunState {
    fn new(chain_ids: Vec<u64>) -> Self {
        let n = chain_ids.len();
        RunState {
            iterations: (0..n).map(|_| AtomicUsize::new(0)).collect(),
            warmup: (0..n).map(|_| AtomicBool::new(true)).collect(),
            divergences: (0..n).map(|_| AtomicUsize::new(0)).collect(),
            interrupted: AtomicBool::new(false),
            messages: Mutex::new(VecDeque::new()),
            last_message: Mutex::new(vec![None; n]),
            chain_ids,
        }
    }
}

impl Progress for RunState {
    fn iteration(&self, chain: usize, iteration: usize, warmup: bool, divergences: usize) {
        if chain < self.iterations.len() {
            self.iterations[chain].store(iteration, Ordering::Relaxed);
            self.warmup[chain].store(warmup, Ordering::Relaxed);
            self.divergences[chain].store(divergences, Ordering::Relaxed);
        }
    }

    fn message(&self, chain: usize, message: &str) {
        let now = Instant::now();
        {
            let mut last = self.last_message.lock().unwrap_or_else(|e| e.into_inner());
            let Some(slot) = last.get_mut(chain) else {
                return;
            };
            if slot.is_some_and(|t| {
                now.duration_since(t) < Duration::from_secs(1) / MESSAGES_PER_SECOND as u32
            }) {
                return;
            }
            *slot = Some(now);
        }
        let mut messages = self.messages.lock().unwrap_or_else(|e| e.into_inner());
        if messages.len() == MAX_MESSAGES {
            messages.pop_front();
        }
        let id = self.chain_ids.get(chain).copied().unwrap_or(0);
        messages.push_back(format!("chain {id}: {message}"));
    }

    fn interrupted(&self) -> bool {
        self.interrupted.load(Ordering::Relaxed)
    }
}

/// What the sampling thread returns: the outcome and the notes about the settings, or why the
/// job could not start.
type Finished = Result<(SampleOutcome, Vec<String>), String>;

/// A running (or finished) sampling job.
#[pyclass(module = "hazel._hazel", frozen)]
pub struct SampleRun {
    state: Arc<RunState>,
    handle: Mutex<Option<JoinHandle<Finished>>>,
    num_warmup: usize,
    num_samples: usize,
}

/// Where the chains start when no initial values are given.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Start {
    /// Uniform in (-radius, radius) on the unconstrained scale.
    Radius(f64),
    /// A draw of a multi-path Pathfinder run per chain.
    Pathfinder,
}

/// `init`: a radius, `"pathfinder"`, or `None` for `hazel sample`'s default (Pathfinder for
/// NUTS, the radius 2 for fixed_param; see `hazel_run::defaults`).
fn start(init: Option<&str>, run: &RunConfig) -> Result<Start, String> {
    match init.map(str::trim) {
        None if hazel_run::defaults::pathfinder_by_default(run) => Ok(Start::Pathfinder),
        None => Ok(Start::Radius(2.0)),
        Some("pathfinder") => Ok(Start::Pathfinder),
        Some(text) => match text.parse::<f64>() {
            Ok(radius) if radius.is_finite() && radius >= 0.0 => Ok(Start::Radius(radius)),
            _ => Err(format!(
                "init {text}: expected a radius (a finite number ≥ 0) or \"pathfinder\""
            )),
        },
    }
}

/// The run's settings from `Model.sample`'s arguments (the fields `hazel sample`'s options
/// set, with the same checks and defaults), and where its chains start.
#[allow(clippy::too_many_arguments)]
fn run_config(
    chains: usize,
    warmup: usize,
    draws: usize,
    seed: u64,
    threads: usize,
    adapt_delta: f64,
    max_depth: u32,
    thin: usize,
    metric: Option<&str>,
    adaptation: Option<&str>,
    init: Option<&str>,
    save_warmup: bool,
    algorithm: &str,
) -> Result<(RunConfig, Start), String> {
    if chains == 0 {
        return Err("chains must be at least 1".into());
    }
    if thin == 0 {
        return Err("thin must be at least 1".into());
    }
    if !(adapt_delta > 0.0 && adapt_delta < 1.0) {
        return Err(format!(
            "adapt_delta {adapt_delta}: must be strictly between 0 and 1"
        ));
    }
    if !(1..=62).contains(&max_depth) {
        return Err("max_depth must be a whole number between 1 and 62".into());
    }
    let mut config = RunConfig {
        seed,
        chains,
        threads,
        ..RunConfig::default()
    };
    let sampler = &mut config.sampler;
    sampler.num_warmup = warmup;
    sampler.num_samples = draws;
    sampler.thin = thin;
    sampler.save_warmup = save_warmup;
    sampler.max_depth = max_depth;
    sampler.metric = match metric {
        None | Some("diag" | "diag_e") => MetricKind::Diag,
        Some("dense" | "dense_e") => MetricKind::Dense,
        Some(other) => return Err(format!("metric {other:?}: expected \"diag\" or \"dense\"")),
    };
    sampler.adapt.delta = adapt_delta;
    match algorithm {
        "nuts" => {}
        "fixed_param" => config.use_fixed_param(),
        other => {
            return Err(format!(
                "algorithm {other:?}: expected \"nuts\" or \"fixed_param\""
            ))
        }
    }
    let method = match adaptation {
        None => hazel_run::defaults::default_adaptation(&config, metric.is_some()),
        Some("stan") => AdaptMethod::Stan,
        Some("diag-grad" | "diag_grad") => AdaptMethod::DiagGrad,
        Some("low-rank" | "low_rank") => AdaptMethod::LowRank,
        Some(other) => {
            return Err(format!(
                "adaptation {other:?}: expected \"stan\", \"diag-grad\" or \"low-rank\""
            ))
        }
    };
    let sampler = &mut config.sampler;
    sampler.adapt.method = method;
    // The gradient adaptations learn their own form, as with `hazel sample`.
    sampler.metric = hazel_run::defaults::adapted_metric(sampler, sampler.metric, metric.is_some())
        .map_err(|learns| {
            format!(
                "metric {:?}: adaptation {:?} learns {learns}; leave metric out",
                metric.unwrap_or_default(),
                method.name(),
            )
        })?;
    let start = start(init, &config)?;
    if let Start::Radius(radius) = start {
        config.sampler.init = Init::Radius(radius);
    }
    Ok((config, start))
}

/// Each chain's unconstrained start from constrained initial values: one JSON text for every
/// chain (as `hazel sample --init file.json`, through the same function), or one per chain.
/// Coordinates a text leaves out are drawn from the chain's own `Init` stream.
fn initial_points(
    model: &CompiledModel,
    texts: &[String],
    config: &RunConfig,
) -> PyResult<Vec<Vec<f64>>> {
    let parse =
        |text: &str| DataFile::parse(text).map_err(|e| DataError::new_err(format!("inits: {e}")));
    if let [one] = texts {
        let inits = parse(one)?;
        return hazel_run::initial_points(model, &inits, config)
            .map_err(|e| DataError::new_err(format!("inits: {e}")));
    }
    texts
        .iter()
        .enumerate()
        .map(|(k, text)| {
            let inits = parse(text)?;
            let id = config.first_chain_id + k as u64;
            let mut rng = StreamRng::new(config.seed, id, Purpose::Init);
            model
                .unconstrain_inits(&inits, || rng.uniform_range(-2.0, 2.0))
                .map_err(|e| {
                    DataError::new_err(format!("inits of chain {id}: {}", e.naming_variable()))
                })
        })
        .collect()
}

impl CompiledStan {
    /// Starts sampling on a thread of its own; returns at once (`CompiledStan.sample`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start_sampling(
        &self,
        chains: usize,
        warmup: usize,
        draws: usize,
        seed: u64,
        threads: usize,
        adapt_delta: f64,
        max_depth: u32,
        thin: usize,
        metric: Option<&str>,
        adaptation: Option<&str>,
        init: Option<&str>,
        inits: Option<Vec<String>>,
        save_warmup: bool,
        algorithm: &str,
    ) -> PyResult<SampleRun> {
        let (mut run, start) = run_config(
            chains,
            warmup,
            draws,
            seed,
            threads,
            adapt_delta,
            max_depth,
            thin,
            metric,
            adaptation,
            init,
            save_warmup,
            algorithm,
        )
        .map_err(HazelError::new_err)?;
        // Given initial values come first; Pathfinder runs on the sampling thread.
        let pathfinder = match &inits {
            Some(texts) => {
                run.sampler.init = Init::Unconstrained(initial_points(&self.model, texts, &run)?);
                false
            }
            None => start == Start::Pathfinder,
        };
        let chain_ids: Vec<u64> = (0..run.chains as u64)
            .map(|k| run.first_chain_id + k)
            .collect();
        let (num_warmup, num_samples) = (run.sampler.num_warmup, run.sampler.num_samples);
        let job = SampleJob {
            run,
            output: OutputConfig {
                files: None,
                memory: Some(MemoryOutput { keep_warmup: true }),
            },
            resume: false,
        };
        let state = Arc::new(RunState::new(chain_ids));
        let model = self.model.clone();
        let progress = state.clone();
        let handle = std::thread::Builder::new()
            .name("hazel-sample".into())
            .stack_size(EVALUATION_STACK_BYTES)
            .spawn(move || {
                let mut job = job;
                let mut notes: Vec<String> = Vec::new();
                if pathfinder {
                    notes.extend(hazel_run::defaults::start_at_pathfinder(
                        &*model,
                        &mut job.run,
                    ));
                }
                let sampling = Sampling::prepare(&*model, job).map_err(|e| e.to_string())?;
                notes.extend(sampling.notes().iter().cloned());
                let outcome = sampling.run(&*progress).map_err(|e| e.to_string())?;
                Ok((outcome, notes))
            })
            .map_err(|e| HazelError::new_err(format!("cannot start sampling: {e}")))?;
        Ok(SampleRun {
            state,
            handle: Mutex::new(Some(handle)),
            num_warmup,
            num_samples,
        })
    }
}

/// The metric's values and, for a matrix, its dimension, of the metric in CmdStan's form
/// (`to_stan_form`: a low-rank metric as its dense matrix, or its diagonal for a model of more
/// than `LOW_RANK_DENSE_MAX_DIM` dimensions, as the CSV holds it).
fn inv_metric_parts(m: &InverseMetric) -> Option<(&[f64], Option<usize>)> {
    match m {
        InverseMetric::Diag(v) => Some((v.as_slice(), None)),
        InverseMetric::Dense { dim, values } => Some((values.as_slice(), Some(*dim))),
        // Not in CmdStan's form: see `to_stan_form`.
        InverseMetric::LowRank { .. } => None,
    }
}

/// A chain kept in memory as the dict the Python half reads.
pub(crate) fn chain_dict<'py>(py: Python<'py>, chain: &ChainDraws) -> PyResult<Bound<'py, PyDict>> {
    let inv_metric = chain.inv_metric.as_ref().map(InverseMetric::to_stan_form);
    ChainTables {
        chain_id: chain.chain_id,
        stat_names: chain
            .stat_columns
            .iter()
            .map(|c| c.name.to_string())
            .collect(),
        names: &chain.names,
        warmup: (&chain.warmup.stats, &chain.warmup.values),
        sampling: (&chain.sampling.stats, &chain.sampling.values),
        stepsize: chain.stepsize,
        inv_metric: inv_metric.as_deref().and_then(inv_metric_parts),
    }
    .to_dict(py)
}

#[pymethods]
impl SampleRun {
    /// Waits up to `timeout` seconds (without the GIL); whether the run has finished.
    fn wait(&self, py: Python<'_>, timeout: f64) -> bool {
        let deadline = Instant::now() + Duration::from_secs_f64(timeout.max(0.0));
        py.detach(|| loop {
            let finished = self
                .handle
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
                .is_none_or(|h| h.is_finished());
            if finished || Instant::now() >= deadline {
                return finished;
            }
            std::thread::sleep(Duration::from_millis(10));
        })
    }

    /// Per chain: (iterations done, in warmup, divergent iterations of the current phase).
    fn states(&self) -> Vec<(usize, bool, usize)> {
        let s = &self.state;
        (0..s.iterations.len())
            .map(|k| {
                (
                    s.iterations[k].load(Ordering::Relaxed),
                    s.warmup[k].load(Ordering::Relaxed),
                    s.divergences[k].load(Ordering::Relaxed),
                )
            })
            .collect()
    }

    /// The chains' messages since the last call (rate-limited).
    fn messages(&self) -> Vec<String> {
        let mut messages = self
            .state
            .messages
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        messages.drain(..).collect()
    }

    /// Stops every chain before its next iteration (what was drawn is kept).
    fn interrupt(&self) {
        self.state.interrupted.store(true, Ordering::Relaxed);
    }

    fn chain_ids(&self) -> Vec<u64> {
        self.state.chain_ids.clone()
    }

    fn warmup(&self) -> usize {
        self.num_warmup
    }

    fn draws(&self) -> usize {
        self.num_samples
    }

    /// The finished run (waits for it): a dict with `chains` (one table per chain),
    /// `failures` (messages of chains that failed), `notes`, `algorithm`, `num_warmup`,
    /// `num_samples`.
    fn result<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let handle = self
            .handle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| HazelError::new_err("the run's result was already taken"))?;
        let (outcome, notes) = py
            .detach(|| handle.join())
            .map_err(|_| HazelError::new_err("the sampling thread panicked"))?
            .map_err(HazelError::new_err)?;
        let dict = PyDict::new(py);
        let chains = outcome
            .draws
            .iter()
            .map(|c| chain_dict(py, c))
            .collect::<PyResult<Vec<_>>>()?;
        dict.set_item("chains", chains)?;
        let interrupted = self.state.interrupted.load(Ordering::Relaxed);
        let failures: Vec<String> = outcome
            .report
            .failures()
            .filter(|(_, e)| !(interrupted && e.is_interruption()))
            .map(|(id, e)| format!("chain {id}: {e}"))
            .collect();
        dict.set_item("failures", failures)?;
        dict.set_item("notes", notes)?;
        let algorithm = match outcome.config.sampler.algorithm {
            Algorithm::Nuts => "nuts",
            Algorithm::FixedParam => "fixed_param",
        };
        dict.set_item("algorithm", algorithm)?;
        dict.set_item("num_warmup", outcome.config.sampler.num_warmup)?;
        dict.set_item("num_samples", outcome.config.sampler.num_samples)?;
        Ok(dict)
    }
}
