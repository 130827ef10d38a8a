//! A whole sampling job from its configuration: what `hazel sample` does, minus parsing the
//! command line and printing. The CLI and the Python package both run it, so they produce the
//! same draws through the same code.
//!
//! ```text
//! SampleJob { run: RunConfig, output: OutputConfig, resume }
//!     │ Sampling::prepare(model, job)   fixed_param for a model without parameters (Stan's
//!     │                                 rule), checkpoints read back when resuming, every
//!     │                                 chain's sink created (files made or cut back here)
//!     ▼
//! Sampling ── run(progress) ──► hazel_nuts::run_from ──► SampleOutcome { report, paths, draws }
//! ```
//!
//! [`sample`] is both steps at once; [`Sampling`] lets a caller say something between them
//! (`hazel sample` prints what is being resumed). [`initial_points`] turns constrained initial
//! values (a CmdStan JSON file, a Python dict) into each chain's unconstrained starting point;
//! [`defaults`] decides what a run its caller left open uses (the adaptation, Pathfinder
//! starts).
//!
//! Invariants: the draws depend only on the model, the data and the [`SampleJob`]'s run
//! configuration — never on the outputs chosen; every draw a chain made is in its outputs when
//! [`Sampling::run`] returns, also when chains failed; the only files removed are the
//! header-only CSVs (and their checkpoints) of chains that found no starting point.

#![forbid(unsafe_code)]

pub mod defaults;
pub mod methods;

use hazel_data::DataFile;
use hazel_density::Model;
use hazel_draws::{ChainDraws, DrawSink, MemoryDraws, Progress};
use hazel_graph::CompiledModel;
use hazel_nuts::{
    Algorithm, ChainCheckpoint, ChainError, ChainStart, RunConfig, RunError, RunReport,
};
use hazel_output::{checkpoint_path, read_checkpoint, FileStart, Format, OutputConfig, Outputs};
use hazel_rng::{Purpose, StreamRng};
use std::fmt;
use std::path::PathBuf;

/// A sampling job: the run's settings and where its draws go.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleJob {
    pub run: RunConfig,
    pub output: OutputConfig,
    /// Continue an interrupted run whose CSV files (and their checkpoints) are in the output
    /// directory: each chain with a checkpoint continues from it, a finished chain is left
    /// alone, a chain without one starts afresh.
    pub resume: bool,
}

/// Why a job could not start (nothing was sampled).
#[derive(Debug)]
pub enum SampleError {
    /// The outputs could not be created.
    Output(std::io::Error),
    /// A chain's checkpoint cannot be read.
    Checkpoint { chain_id: u64, message: String },
    /// Only Stan CSV output carries checkpoints.
    ResumeNeedsCsv,
    /// Invalid settings, or no worker threads.
    Run(RunError),
}

impl fmt::Display for SampleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SampleError::Output(e) => write!(f, "{e}"),
            SampleError::Checkpoint { chain_id, message } => write!(
                f,
                "cannot resume chain {chain_id}: {message} (delete it to run that chain again from its start)"
            ),
            SampleError::ResumeNeedsCsv => write!(f, "only runs with CSV output can be resumed"),
            SampleError::Run(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SampleError {}

/// What a job produced.
#[derive(Debug)]
pub struct SampleOutcome {
    /// Per chain: what happened (draws written, divergences, timing, the error that stopped it).
    pub report: RunReport,
    /// The settings the chains ran with (fixed_param for a model without parameters).
    pub config: RunConfig,
    /// The files written: one per chain, or the one Zarr store.
    pub paths: Vec<PathBuf>,
    /// Each chain's draws when the job kept them in memory (`OutputConfig::memory`), in chain
    /// order; a resumed chain's include those read back from its file.
    pub draws: Vec<ChainDraws>,
    /// Header-only CSV files of chains that found no starting point, removed after the run.
    pub removed_unstarted: usize,
}

/// A job ready to run: settings fixed, outputs created.
pub struct Sampling<'m, M: Model + ?Sized> {
    model: &'m M,
    config: RunConfig,
    outputs: Outputs,
    starts: Vec<ChainStart>,
    notes: Vec<String>,
    format: Option<Format>,
}

/// CmdStan's message when a model without parameters runs the fixed_param sampler.
pub const NO_PARAMETERS: &str =
    "Model contains no parameters; running fixed_param sampler, no updates to Markov chain";

impl<'m, M: Model + ?Sized> Sampling<'m, M> {
    /// Fixes the settings for `model` and creates every chain's outputs (reading the
    /// checkpoints first when resuming).
    pub fn prepare(model: &'m M, job: SampleJob) -> Result<Self, SampleError> {
        let SampleJob {
            mut run,
            output,
            resume,
        } = job;
        let notes = settle_algorithm(model, &mut run);
        let info = run.info_for_dim(model.dim());
        let format = output.files.as_ref().map(|f| f.format);
        let (starts, file_starts) = if resume {
            resume_points(&output, &run)?
        } else {
            (vec![ChainStart::Fresh; run.chains], Vec::new())
        };
        let outputs = output
            .open(&info, &model.output_names(), &file_starts)
            .map_err(SampleError::Output)?;
        Ok(Sampling {
            model,
            config: run,
            outputs,
            starts,
            notes,
            format,
        })
    }

    /// The settings the chains will run with.
    pub fn config(&self) -> &RunConfig {
        &self.config
    }
    /// Messages for the user about the settings (the switch to fixed_param).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }
    /// How each chain starts (fresh, or from a checkpoint).
    pub fn starts(&self) -> &[ChainStart] {
        &self.starts
    }
    /// The files the run writes.
    pub fn paths(&self) -> &[PathBuf] {
        &self.outputs.paths
    }

    /// Runs every chain into its outputs.
    pub fn run(self, progress: &dyn Progress) -> Result<SampleOutcome, SampleError> {
        let (model, parts) = self.into_parts();
        let SamplingParts {
            config,
            sinks,
            starts,
            paths,
            memory,
            format,
        } = parts;
        let report = hazel_nuts::run_from(model, &config, starts, sinks, progress)
            .map_err(SampleError::Run)?;
        let unstarted: Vec<bool> = report
            .chains
            .iter()
            .map(|c| matches!(c.error, Some(ChainError::Init(_))) && c.draws_written == 0)
            .collect();
        let removed_unstarted = remove_unstarted(format, &paths, &unstarted);
        Ok(SampleOutcome {
            report,
            config,
            paths,
            draws: memory.iter().map(|handle| handle.take()).collect(),
            removed_unstarted,
        })
    }

    /// The prepared job in pieces, for a caller that runs the chains itself (a distributed
    /// run, whose chains' output may arrive from other processes): after the run it takes the
    /// draws from `memory` and calls [`remove_unstarted`], as [`Sampling::run`] does.
    pub fn into_parts(self) -> (&'m M, SamplingParts) {
        let Outputs {
            sinks,
            paths,
            memory,
        } = self.outputs;
        (
            self.model,
            SamplingParts {
                config: self.config,
                sinks,
                starts: self.starts,
                paths,
                memory,
                format: self.format,
            },
        )
    }
}

/// A prepared job's pieces ([`Sampling::into_parts`]).
pub struct SamplingParts {
    /// The settings the chains run with.
    pub config: RunConfig,
    /// One sink per chain, in chain order.
    pub sinks: Vec<Box<dyn DrawSink>>,
    /// How each chain starts.
    pub starts: Vec<ChainStart>,
    /// The files written.
    pub paths: Vec<PathBuf>,
    /// One handle per chain on its draws kept in memory (empty when not kept).
    pub memory: Vec<MemoryDraws>,
    /// The files' format (`None`: no files).
    pub format: Option<Format>,
}

/// Settles the algorithm for `model`: a model without parameters runs fixed_param (CmdStan's
/// rule: NUTS has nothing to move in 0 dimensions). Returns the message for the user, if any.
/// Every process of a distributed run applies it, so all run the same settings.
pub fn settle_algorithm<M: Model + ?Sized>(model: &M, run: &mut RunConfig) -> Vec<String> {
    if model.dim() == 0 && run.sampler.algorithm != Algorithm::FixedParam {
        run.use_fixed_param();
        return vec![NO_PARAMETERS.to_string()];
    }
    Vec::new()
}

/// A chain that found no starting point (`unstarted`, in chain order) left a CSV with only its
/// header: removes it (and its checkpoint) so that no one mistakes it for output. Returns how
/// many were removed.
pub fn remove_unstarted(format: Option<Format>, paths: &[PathBuf], unstarted: &[bool]) -> usize {
    let mut removed = 0;
    if format == Some(Format::Csv) {
        for (path, _) in paths.iter().zip(unstarted).filter(|(_, &u)| u) {
            if std::fs::remove_file(path).is_ok() {
                let _ = std::fs::remove_file(checkpoint_path(path));
                removed += 1;
            }
        }
    }
    removed
}

/// Prepares and runs `job` on `model`.
pub fn sample<M: Model + ?Sized>(
    model: &M,
    job: SampleJob,
    progress: &dyn Progress,
) -> Result<SampleOutcome, SampleError> {
    Sampling::prepare(model, job)?.run(progress)
}

/// Each chain's start from the checkpoints beside its CSV: none → fresh, a finished one →
/// left alone, else continued from it.
fn resume_points(
    output: &OutputConfig,
    run: &RunConfig,
) -> Result<(Vec<ChainStart>, Vec<FileStart>), SampleError> {
    let files = match &output.files {
        Some(files) if files.format == Format::Csv => files,
        _ => return Err(SampleError::ResumeNeedsCsv),
    };
    let info = run.info();
    let mut starts = Vec::with_capacity(run.chains);
    let mut file_starts = Vec::with_capacity(run.chains);
    for (index, path) in files.paths(&info).iter().enumerate() {
        let stored =
            read_checkpoint::<ChainCheckpoint>(&checkpoint_path(path)).map_err(|message| {
                SampleError::Checkpoint {
                    chain_id: info.chain_id(index),
                    message,
                }
            })?;
        let (start, file_start) = match stored {
            None => (ChainStart::Fresh, FileStart::Fresh),
            Some(stored) if stored.chain.finished() => (
                ChainStart::Resume(Box::new(stored.chain)),
                FileStart::Finished,
            ),
            Some(stored) => (
                ChainStart::Resume(Box::new(stored.chain)),
                FileStart::Continue {
                    csv_bytes: stored.csv_bytes,
                },
            ),
        };
        starts.push(start);
        file_starts.push(file_start);
    }
    Ok((starts, file_starts))
}

/// One unconstrained starting point per chain from constrained initial values (a CmdStan JSON
/// file's contents, a Python dict). Coordinates `inits` does not give are drawn uniformly in
/// (-2, 2) from each chain's own `Init` stream, so the points depend only on (seed, chain id),
/// like everything else a chain does.
pub fn initial_points(
    model: &CompiledModel,
    inits: &DataFile,
    config: &RunConfig,
) -> Result<Vec<Vec<f64>>, String> {
    (0..config.chains)
        .map(|index| initial_point(model, inits, config, index))
        .collect()
}

/// The unconstrained starting point of chain `index` (0-based) from constrained initial
/// values: [`initial_points`] for one chain, for inputs that differ per chain (CmdStan's
/// `init_<id>.json` files).
pub fn initial_point(
    model: &CompiledModel,
    inits: &DataFile,
    config: &RunConfig,
    index: usize,
) -> Result<Vec<f64>, String> {
    let chain_id = config.first_chain_id + index as u64;
    let mut rng = StreamRng::new(config.seed, chain_id, Purpose::Init);
    model
        .unconstrain_inits(inits, || rng.uniform_range(-2.0, 2.0))
        .map_err(|e| e.message)
}
