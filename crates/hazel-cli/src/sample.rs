//! `hazel sample`: NUTS draws from a Stan program's posterior, one Stan CSV file per chain, then
//! the summary table and the sampler diagnostics (the same as `hazel summary` on the files,
//! computed from the draws kept in memory as they were made).
//!
//! This module turns the command line into a [`hazel_run::SampleJob`] and prints; the job
//! itself (outputs, resuming, the run) is `hazel_run`'s, shared with the Python package.
//! Options follow CmdStan's meaning and defaults. Each chain writes and flushes its file draw
//! by draw, so a chain that fails (or a run that is interrupted) leaves every draw made so far
//! on disk; the summary then covers the chains that have draws, and the exit status is 1.

use crate::front::{check_program_as, compile_model_as, model_name, read_data, Reported};
use crate::progress::progress_for_run;
use crate::run_dir::{
    content_hash, remove_run_settings, Input, OutputLock, RunSettings, RUN_SETTINGS,
};
use crate::summary::{summarize_draws, table_with_warnings, write_output};
use crate::CliResult;
use clap::Parser as _;
use clap::{Args, ValueEnum};
use hazel_draws::{ChainDraws, Progress, Timing};
use hazel_graph::{CompileOptions, CompiledModel};
use hazel_nuts::{
    AdaptMethod, ChainError, ChainReport, ChainStart, CheckpointPolicy, Init, InverseMetric,
    Lockstep, MetricKind, RunConfig,
};
use hazel_output::{FileNaming, FileOutput, Format, HeaderNotes, MemoryOutput, OutputConfig};
use hazel_run::{initial_point, SampleJob, Sampling};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Args, Debug, Clone)]
pub struct SampleArgs {
    /// The Stan program.
    #[arg(required_unless_present = "resume")]
    pub model: Option<PathBuf>,
    /// Continue the interrupted run whose --output-dir is DIR, with the settings it was started
    /// with (stored in DIR/hazel-run.json); no other argument is needed, and other options
    /// given with it are not used (except --quiet).
    #[arg(long, value_name = "DIR", conflicts_with = "model")]
    pub resume: Option<PathBuf>,
    /// Write each chain's checkpoint (DIR/<model>-<chain>.checkpoint.json) at least this many
    /// seconds apart (0 = not by time). The interval grows to 100× a checkpoint's cost, so
    /// checkpoints never take more than 1% of the run.
    #[arg(long, default_value_t = 30.0, value_name = "SECONDS")]
    pub checkpoint_every_secs: f64,
    /// Also write a checkpoint every N iterations of a chain (0 = not by count).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub checkpoint_every_iters: usize,
    /// The data, as a CmdStan JSON file (omit for a program without data).
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Number of chains.
    #[arg(long, visible_alias = "num-chains", default_value_t = 4, value_parser = positive_count, allow_negative_numbers = true)]
    pub chains: u64,
    /// Worker threads running chains (0 = one per core). Never changes the draws.
    #[arg(long, default_value_t = 0, value_parser = thread_count, allow_negative_numbers = true)]
    pub threads: usize,
    /// Threads each chain may use inside one log-density evaluation (large vector operations).
    /// Never changes the draws.
    #[arg(long, default_value_t = 1, value_parser = positive_count, allow_negative_numbers = true)]
    pub threads_per_chain: u64,
    /// Chains stepped in lockstep, K at a time on one thread: in each round the gradients of
    /// all K chains are computed by one call of the batched executor (for a dense GLM, one pass
    /// over the design matrix serves the K chains). Never changes the draws.
    #[arg(long, default_value_t = 1, value_parser = positive_count, allow_negative_numbers = true, value_name = "K")]
    pub batch_chains: u64,
    /// With --batch-chains: what a chain does when its trajectory ends before the others' of
    /// its group: begin its next iteration at once (desync), or wait for the group (masked).
    /// Never changes the draws.
    #[arg(long, value_enum, default_value_t = LockstepArg::Desync)]
    pub lockstep: LockstepArg,
    /// Warmup (adaptation) iterations per chain (0 to 2147483647, CmdStan's range).
    #[arg(long, visible_aliases = ["num-warmup", "iter-warmup"], default_value_t = 1000, value_parser = iteration_count, allow_negative_numbers = true)]
    pub warmup: usize,
    /// Post-warmup draws per chain (0 to 2147483647; 0 runs warmup only).
    #[arg(long, visible_aliases = ["num-samples", "iter-sampling"], default_value_t = 1000, value_parser = iteration_count, allow_negative_numbers = true)]
    pub draws: usize,
    /// Keep every `thin`-th iteration.
    #[arg(long, default_value_t = 1, value_parser = positive_count, allow_negative_numbers = true)]
    pub thin: u64,
    /// Also write the warmup iterations to the files.
    #[arg(long)]
    pub save_warmup: bool,
    /// Seed of the run: an integer from 0 to 4294967295 (CmdStan's range), or -1 (the
    /// default) for one drawn from the clock and written to the files.
    #[arg(long, value_parser = parse_seed, allow_negative_numbers = true)]
    pub seed: Option<Seed>,
    /// How warmup learns the metric: Stan's windowed scheme (`stan`), nutpie's gradient-based
    /// diagonal (`diag-grad`), or its low-rank plus diagonal metric (`low-rank`); see the
    /// sampler's documentation for each. Default: low-rank (median 9.1× Stan's ESS per gradient
    /// on posteriordb tiers 1–3 and the examples, with the default Pathfinder inits); stan when
    /// an option of Stan's adaptation is given (--metric, --metric-file, --init-buffer,
    /// --term-buffer, --window) or nothing is adapted (--adapt-engaged 0, --warmup 0,
    /// fixed_param), as in CmdStan.
    #[arg(long, value_enum)]
    pub adaptation: Option<AdaptationArg>,
    /// Whether warmup adapts the step size and metric (CmdStan's `adapt engaged`; 0 or false
    /// samples with --stepsize and --metric-file, or the identity, as they are).
    #[arg(long, default_value = "1", value_parser = parse_switch, action = clap::ArgAction::Set)]
    pub adapt_engaged: bool,
    /// Target acceptance statistic of step-size adaptation, in (0, 1).
    #[arg(long, default_value_t = 0.8, allow_negative_numbers = true)]
    pub adapt_delta: f64,
    /// Stan's windowed adaptation: iterations of the initial fast buffer (step size only;
    /// default 75). Given without --adaptation, it selects Stan's adaptation.
    #[arg(long, visible_alias = "adapt-init-phase", value_parser = iteration_count)]
    pub init_buffer: Option<usize>,
    /// Stan's windowed adaptation: iterations of the terminal fast buffer (step size only;
    /// default 50). Given without --adaptation, it selects Stan's adaptation.
    #[arg(long, visible_alias = "adapt-step-size", value_parser = iteration_count)]
    pub term_buffer: Option<usize>,
    /// Stan's windowed adaptation: iterations of the first slow (metric) window (default 25).
    /// Given without --adaptation, it selects Stan's adaptation.
    #[arg(long, visible_alias = "adapt-metric-window", value_parser = iteration_count)]
    pub window: Option<usize>,
    /// Initial step size (re-tuned during warmup when adaptation is engaged).
    #[arg(
        long,
        visible_alias = "step-size",
        default_value_t = 1.0,
        allow_negative_numbers = true
    )]
    pub stepsize: f64,
    /// Each transition's step size is drawn uniformly from stepsize × (1 ± jitter), jitter in
    /// [0, 1].
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub stepsize_jitter: f64,
    /// Maximum tree depth of NUTS (1 to 62).
    #[arg(long, visible_alias = "max-treedepth", default_value_t = 10, value_parser = tree_depth, allow_negative_numbers = true)]
    pub max_depth: u32,
    /// The sampler: NUTS, or fixed_param (the point never moves; generated quantities are
    /// drawn at every iteration). A model without parameters always runs fixed_param, as in
    /// CmdStan.
    #[arg(long, value_enum, default_value_t = AlgorithmArg::Nuts)]
    pub algorithm: AlgorithmArg,
    /// The same as `--algorithm fixed_param` (cmdstanpy's spelling).
    #[arg(long)]
    pub fixed_param: bool,
    /// The metric: unit_e (the identity; only the step size adapts), diag_e or dense_e (`diag`
    /// and `dense` are accepted too), learnt by Stan's adaptation unless --adaptation says
    /// otherwise. Default: the low-rank plus diagonal metric of the default --adaptation
    /// low-rank; with --metric-file, the form of its matrix.
    #[arg(long, value_enum)]
    pub metric: Option<MetricArg>,
    /// A CmdStan JSON file whose `inv_metric` (a vector: diagonal; a matrix: dense) starts
    /// every chain (and is used as it is with --adapt-engaged 0). When FILE_<id>.json files
    /// exist beside it (FILE.json without its extension), chain <id> reads its own.
    #[arg(long, value_name = "FILE")]
    pub metric_file: Option<PathBuf>,
    /// Initial values: `pathfinder` (one draw of a multi-path Pathfinder run per chain, the
    /// default; where Pathfinder finds none, a warning and the radius 2), a radius R (uniform
    /// in (-R, R) on the unconstrained scale, Stan's default 2; 0 starts at the origin), or a
    /// CmdStan JSON file of constrained parameter values used by every chain (parameters it
    /// leaves out start uniformly in (-2, 2) on the unconstrained scale). When FILE_<id>.json
    /// files exist beside FILE.json, chain <id> starts from its own (CmdStan's convention).
    /// fixed_param's default is the radius 2.
    #[arg(long, allow_negative_numbers = true)]
    pub init: Option<String>,
    /// Random starting points screened per chain (the one with the highest log density is
    /// kept; 1 takes the first finite one, as Stan does; default 4): with --init R, or where
    /// Pathfinder found no initial values. Given without --init, the chains start from random
    /// points (--init 2).
    #[arg(long, value_parser = positive_count)]
    pub init_candidates: Option<u64>,
    /// Directory for the output: `<model>-<chain>.csv` or `.parquet` files, or the store
    /// `<model>.zarr` (created if needed).
    #[arg(long, default_value = ".")]
    pub output_dir: PathBuf,
    /// Output format: Stan CSV, Parquet (one file per chain, the CSV's columns) or Zarr (one
    /// ArviZ InferenceData store). Parquet and Zarr need a build with `--features parquet,zarr`.
    #[arg(long, value_enum, default_value_t = FormatArg::Csv)]
    pub format: FormatArg,
    /// No progress output (the summary is still printed).
    #[arg(long)]
    pub quiet: bool,
    /// Progress lines every N iterations (0: none). Default: a bar per chain on a terminal,
    /// else a line every 10% of the run.
    #[arg(long, value_name = "N")]
    pub refresh: Option<usize>,
    /// Significant digits of the numbers written to the CSV files, 1 to 18; -1 (the default)
    /// writes every number exactly (the shortest text that reads back to the same value).
    #[arg(long, default_value_t = -1, value_parser = sig_figs, allow_negative_numbers = true)]
    pub sig_figs: i32,
    /// Directories searched for `#include` files after the including file's own directory.
    #[arg(short = 'I', long = "include-path")]
    pub include_paths: Vec<PathBuf>,
    /// Under mpirun: how the ranks share the run. `chains`: each rank runs a block of the
    /// chains; `data`: every rank runs every chain and computes its share of the model's
    /// large operations (rows of a design matrix, observations); `auto`: `data` when the
    /// model's data-parallel work is at least 2^20 elements per gradient (and chains are not
    /// run in lockstep, --batch-chains), else `chains`. The files are the same in every mode
    /// and for any number of ranks. No effect without mpirun.
    #[arg(long, value_enum, default_value_t = DistributeArg::Auto)]
    pub distribute: DistributeArg,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DistributeArg {
    Auto,
    Chains,
    Data,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MetricArg {
    /// The identity (CmdStan's `unit_e`): only the step size adapts.
    #[value(name = "unit_e", alias = "unit")]
    Unit,
    /// Diagonal mass matrix (CmdStan's `diag_e`).
    #[value(name = "diag_e", alias = "diag")]
    Diag,
    /// Dense mass matrix (CmdStan's `dense_e`).
    #[value(name = "dense_e", alias = "dense")]
    Dense,
}

impl MetricArg {
    fn kind(self) -> MetricKind {
        match self {
            MetricArg::Unit => MetricKind::Unit,
            MetricArg::Diag => MetricKind::Diag,
            MetricArg::Dense => MetricKind::Dense,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AdaptationArg {
    /// Stan's windowed adaptation (the draws' variances over doubling windows).
    Stan,
    /// nutpie's diagonal metric from draws and gradients (Fisher divergence).
    #[value(name = "diag-grad", alias = "diag_grad")]
    DiagGrad,
    /// nutpie's low-rank plus diagonal metric from draws and gradients.
    #[value(name = "low-rank", alias = "low_rank")]
    LowRank,
}

impl AdaptationArg {
    fn method(self) -> AdaptMethod {
        match self {
            AdaptationArg::Stan => AdaptMethod::Stan,
            AdaptationArg::DiagGrad => AdaptMethod::DiagGrad,
            AdaptationArg::LowRank => AdaptMethod::LowRank,
        }
    }
}

/// CmdStan's boolean settings: `1`/`0`, also `true`/`false`.
fn parse_switch(text: &str) -> Result<bool, String> {
    match text.trim() {
        "1" | "true" => Ok(true),
        "0" | "false" => Ok(false),
        _ => Err("expected 1 or 0 (true or false)".to_string()),
    }
}

/// `--sig-figs`: -1 (exact) or 1 to 18, CmdStan's range.
fn sig_figs(text: &str) -> Result<i32, String> {
    match text.trim().parse::<i32>() {
        Ok(n) if n == -1 || (1..=18).contains(&n) => Ok(n),
        _ => Err("expected -1 (exact) or a number of significant digits from 1 to 18".to_string()),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LockstepArg {
    /// A chain whose iteration ends begins its next one at once: the batches stay full.
    Desync,
    /// A chain whose iteration ends waits until its whole group has ended that iteration.
    Masked,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AlgorithmArg {
    /// The No-U-Turn sampler with Stan's adaptation (CmdStan's `hmc` with `engine=nuts`).
    Nuts,
    /// Stan's fixed_param sampler: no warmup, no moves, `lp__` and `accept_stat__` are 0.
    #[value(name = "fixed_param")]
    FixedParam,
}

/// What `--seed` asked for: a seed, or one from the clock (`-1`, CmdStan's default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seed {
    Given(u64),
    FromClock,
}

/// CmdStan's seed range: a non-negative integer below 2^32, or -1 for a seed from the clock.
pub(crate) fn parse_seed(text: &str) -> Result<Seed, String> {
    let range = "the seed must be an integer from 0 to 4294967295, or -1 for a seed from the clock";
    match text.trim().parse::<i64>() {
        Ok(-1) => Ok(Seed::FromClock),
        Ok(seed) if (0..1 << 32).contains(&seed) => Ok(Seed::Given(seed as u64)),
        _ => Err(range.to_string()),
    }
}

/// The largest iteration count CmdStan accepts (its counts are C++ `int`s).
const MAX_ITERATIONS: usize = i32::MAX as usize;

/// An iteration count (`--warmup`, `--draws`): a whole number from 0 to 2147483647.
pub(crate) fn iteration_count(text: &str) -> Result<usize, String> {
    match text.trim().parse::<u64>() {
        Ok(n) if n <= MAX_ITERATIONS as u64 => Ok(n as usize),
        Ok(_) => Err(format!("at most {MAX_ITERATIONS} iterations are allowed")),
        Err(_) => Err(format!(
            "expected a whole number of iterations from 0 to {MAX_ITERATIONS}"
        )),
    }
}

/// A count that must be at least 1 (`--chains`, `--thin`, `--threads-per-chain`).
pub(crate) fn positive_count(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("expected a whole number, at least 1".to_string()),
    }
}

/// `--max-depth`: NUTS's tree depth, 1 to 62 (a trajectory of 2^62 steps is the most the
/// sampler's step counters hold).
fn tree_depth(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(depth) if (1..=62).contains(&depth) => Ok(depth),
        _ => Err("the maximum tree depth must be a whole number between 1 and 62".to_string()),
    }
}

/// `--threads`: a whole number, 0 meaning one per core.
pub(crate) fn thread_count(text: &str) -> Result<usize, String> {
    text.trim()
        .parse::<usize>()
        .map_err(|_| "expected a whole number of threads (0 = one per core)".to_string())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    Csv,
    Parquet,
    Zarr,
}

impl FormatArg {
    pub fn format(self) -> Format {
        match self {
            FormatArg::Csv => Format::Csv,
            FormatArg::Parquet => Format::Parquet,
            FormatArg::Zarr => Format::Zarr,
        }
    }
}

/// A seed from the clock, for runs that did not ask for one (it is written to every file).
pub(crate) fn clock_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    // Keep it below 2^31 so that CmdStan-style tools reading the files accept it.
    (nanos as u64 ^ (nanos >> 64) as u64) % (1 << 31)
}

/// What `--init` asked for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum InitArg {
    /// Uniform in (-R, R) on the unconstrained scale.
    Radius(f64),
    /// A CmdStan JSON file of constrained parameter values, shared by all chains. Parameters it
    /// leaves out start uniformly in (-2, 2) on the unconstrained scale, as in CmdStan.
    File(PathBuf),
    /// Draws of a multi-path Pathfinder run, one per chain.
    Pathfinder,
}

/// CmdStan's per-chain input files: `dir/name_<id>.ext` stands in for `dir/name.ext` for chain
/// `id` when it exists; otherwise every chain reads `dir/name.ext`.
pub(crate) fn chain_file(path: &Path, chain_id: u64) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match path.extension() {
        Some(ext) => format!("{stem}_{chain_id}.{}", ext.to_string_lossy()),
        None => format!("{stem}_{chain_id}"),
    };
    let own = path.with_file_name(name);
    if own.is_file() {
        own
    } else {
        path.to_path_buf()
    }
}

/// The files a per-chain input names for `chain_ids`, each once, in chain order.
fn chain_files(path: &Path, chain_ids: &[u64]) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = Vec::new();
    for &id in chain_ids {
        let file = chain_file(path, id);
        if !files.contains(&file) {
            files.push(file);
        }
    }
    files
}

/// What `--init` asks for; without it, Pathfinder's points for NUTS (see
/// [`hazel_run::defaults`]), and Stan's radius 2 for fixed_param or when `--init-candidates`
/// asks for random starts. `run` is the run's settings with its algorithm set.
pub(crate) fn requested_init(args: &SampleArgs, run: &RunConfig) -> Result<InitArg, String> {
    match &args.init {
        Some(text) => parse_init(text),
        None if args.init_candidates.is_none()
            && hazel_run::defaults::pathfinder_by_default(run) =>
        {
            Ok(InitArg::Pathfinder)
        }
        None => Ok(InitArg::Radius(2.0)),
    }
}

/// Parses the `--init` value: a radius, or the path of an existing JSON file (or of per-chain
/// files `FILE_<id>.json` beside it).
pub(crate) fn parse_init(text: &str) -> Result<InitArg, String> {
    if text.trim() == "pathfinder" {
        return Ok(InitArg::Pathfinder);
    }
    if let Ok(radius) = text.trim().parse::<f64>() {
        if radius.is_finite() && radius >= 0.0 {
            return Ok(InitArg::Radius(radius));
        }
        return Err(format!(
            "--init {text}: the radius must be a finite number ≥ 0"
        ));
    }
    if Path::new(text).is_file() || chain_file(Path::new(text), 1).is_file() {
        return Ok(InitArg::File(PathBuf::from(text)));
    }
    Err(format!(
        "--init {text}: expected a radius (a number ≥ 0), `pathfinder`, or an existing JSON file of initial values"
    ))
}

/// The inverse metric in a CmdStan metric file: JSON with `inv_metric`, a vector (diagonal) or
/// a matrix given as an array of rows (dense, symmetric).
pub(crate) fn read_metric_file(path: &Path) -> Result<InverseMetric, String> {
    let fail = |why: String| format!("--metric-file {}: {why}", path.display());
    let text = std::fs::read_to_string(path).map_err(|e| fail(format!("cannot read it: {e}")))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| fail(format!("not JSON: {e}")))?;
    let value = json
        .get("inv_metric")
        .ok_or_else(|| fail("no `inv_metric` entry".into()))?;
    let number = |v: &serde_json::Value| {
        v.as_f64()
            .ok_or_else(|| fail(format!("`inv_metric` holds `{v}`, not a number")))
    };
    let items = value
        .as_array()
        .ok_or_else(|| fail("`inv_metric` is not a vector or a matrix".into()))?;
    if items.iter().all(|v| v.is_array()) && !items.is_empty() {
        let dim = items.len();
        let mut values = Vec::with_capacity(dim * dim);
        for row in items {
            let row = row.as_array().map(Vec::as_slice).unwrap_or_default();
            if row.len() != dim {
                return Err(fail(format!(
                    "the matrix has {dim} rows but a row of {} entries",
                    row.len()
                )));
            }
            for v in row {
                values.push(number(v)?);
            }
        }
        Ok(InverseMetric::Dense { dim, values })
    } else {
        Ok(InverseMetric::Diag(
            items.iter().map(number).collect::<Result<_, _>>()?,
        ))
    }
}

/// The run's settings from the options.
fn run_config(args: &SampleArgs, seed: u64) -> Result<RunConfig, String> {
    let mut config = RunConfig {
        seed,
        chains: args.chains as usize,
        threads: args.threads,
        batch_chains: args.batch_chains as usize,
        lockstep: match args.lockstep {
            LockstepArg::Desync => Lockstep::Desynchronised,
            LockstepArg::Masked => Lockstep::Masked,
        },
        ..RunConfig::default()
    };
    if args.batch_chains > 1 && args.threads_per_chain > 1 {
        return Err(format!(
            "--batch-chains {} with --threads-per-chain {}: a lockstep group's evaluations run on \
             one thread; use --threads to run several groups at once",
            args.batch_chains, args.threads_per_chain
        ));
    }
    let sampler = &mut config.sampler;
    sampler.num_warmup = args.warmup;
    sampler.num_samples = args.draws;
    sampler.thin = args.thin as usize;
    sampler.save_warmup = args.save_warmup;
    sampler.max_depth = args.max_depth;
    if let Some(candidates) = args.init_candidates {
        sampler.init_candidates = candidates as usize;
    }
    sampler.adapt.engaged = args.adapt_engaged;
    let adapt = &mut sampler.adapt;
    adapt.init_buffer = args.init_buffer.unwrap_or(adapt.init_buffer);
    adapt.term_buffer = args.term_buffer.unwrap_or(adapt.term_buffer);
    adapt.window = args.window.unwrap_or(adapt.window);
    if !(args.stepsize.is_finite() && args.stepsize > 0.0) {
        return Err(format!(
            "--stepsize {}: must be a finite number > 0",
            args.stepsize
        ));
    }
    sampler.stepsize = args.stepsize;
    if !(0.0..=1.0).contains(&args.stepsize_jitter) {
        return Err(format!(
            "--stepsize-jitter {}: must be between 0 and 1",
            args.stepsize_jitter
        ));
    }
    sampler.stepsize_jitter = args.stepsize_jitter;
    if args.algorithm == AlgorithmArg::FixedParam || args.fixed_param {
        config.use_fixed_param();
    }
    // Options only Stan's adaptation serves: given, they choose it, as in CmdStan.
    let stan_options = args.metric.is_some()
        || args.metric_file.is_some()
        || args.init_buffer.is_some()
        || args.term_buffer.is_some()
        || args.window.is_some();
    config.sampler.adapt.method = match args.adaptation {
        Some(adaptation) => adaptation.method(),
        None => hazel_run::defaults::default_adaptation(&config, stan_options),
    };
    let init = requested_init(args, &config)?;
    let sampler = &mut config.sampler;
    let chain_ids: Vec<u64> = (0..config.chains as u64)
        .map(|k| config.first_chain_id + k)
        .collect();
    if let Some(path) = &args.metric_file {
        let files = chain_files(path, &chain_ids);
        let metrics = files
            .iter()
            .map(|file| read_metric_file(file))
            .collect::<Result<Vec<_>, _>>()?;
        sampler.inv_metric = if files.len() == 1 {
            metrics
        } else {
            chain_ids
                .iter()
                .map(|&id| {
                    let file = chain_file(path, id);
                    let index = files.iter().position(|f| *f == file).unwrap_or(0);
                    metrics[index].clone()
                })
                .collect()
        };
    }
    let requested = match (args.metric, sampler.inv_metric.first()) {
        (Some(metric), _) => metric.kind(),
        // The metric file's form, as cmdstanpy infers it.
        (None, Some(InverseMetric::Dense { .. })) => MetricKind::Dense,
        (None, _) => MetricKind::Diag,
    };
    let metric = hazel_run::defaults::adapted_metric(sampler, requested, args.metric.is_some())
        .map_err(|learns| {
            format!(
                "--metric {}: --adaptation {} learns {learns}; leave --metric out",
                args.metric.map(metric_value).unwrap_or_default(),
                sampler.adapt.method.name(),
            )
        })?;
    let adapting = sampler.adapt.engaged && sampler.num_warmup > 0;
    if let (true, AdaptMethod::LowRank, Some(InverseMetric::Dense { .. })) =
        (adapting, sampler.adapt.method, sampler.inv_metric.first())
    {
        return Err(
            "--metric-file: --adaptation low-rank starts from a diagonal metric, not a dense one"
                .into(),
        );
    }
    sampler.metric = metric;
    if let (MetricKind::Diag | MetricKind::Unit, Some(InverseMetric::Dense { .. })) =
        (sampler.metric, sampler.inv_metric.first())
    {
        return Err("--metric-file holds a dense matrix: use --metric dense_e".into());
    }
    sampler.adapt.delta = args.adapt_delta;
    if let InitArg::Radius(radius) = init {
        sampler.init = Init::Radius(radius);
    }
    if !(args.adapt_delta > 0.0 && args.adapt_delta < 1.0) {
        return Err(format!(
            "--adapt-delta {}: must be strictly between 0 and 1",
            args.adapt_delta
        ));
    }
    if !(args.checkpoint_every_secs.is_finite() && args.checkpoint_every_secs >= 0.0) {
        return Err(format!(
            "--checkpoint-every-secs {}: must be a finite number ≥ 0",
            args.checkpoint_every_secs
        ));
    }
    config.checkpoint = CheckpointPolicy {
        every_iterations: args.checkpoint_every_iters,
        every: (args.checkpoint_every_secs > 0.0)
            .then(|| Duration::from_secs_f64(args.checkpoint_every_secs)),
    };
    Ok(config)
}

/// The executor of the model's evaluations: the batched one, with a lane per chain of a
/// lockstep group, or the serial / threaded one for chains alone.
fn executor_kind(args: &SampleArgs) -> hazel_graph::ExecutorKind {
    let lanes = args.batch_chains.min(args.chains) as usize;
    if lanes > 1 {
        hazel_graph::ExecutorKind::Batched { lanes }
    } else {
        hazel_graph::ExecutorKind::with_threads(args.threads_per_chain as usize)
    }
}

/// The `--metric` value as written.
fn metric_value(metric: MetricArg) -> String {
    metric
        .to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default()
}

/// The arguments after `hazel sample` as this process was given them; `None` when this process
/// is not `hazel sample` (a library caller such as the fuzz targets), whose runs are then not
/// resumable.
fn sample_arguments() -> Result<Option<Vec<String>>, String> {
    let mut args = std::env::args_os().skip(1);
    if args.next().is_none_or(|a| a != "sample") {
        return Ok(None);
    }
    args.map(|a| {
        a.into_string().map_err(|a| {
            format!("argument {a:?} is not UTF-8: a run started with it cannot be resumed")
        })
    })
    .collect::<Result<_, _>>()
    .map(Some)
}

/// Parses stored `hazel sample` arguments.
#[derive(clap::Parser)]
#[command(name = "hazel sample")]
struct StoredArguments {
    #[command(flatten)]
    sample: SampleArgs,
}

/// `--resume DIR`: the stored run, in the directory it was started from, into DIR.
fn resume(dir: &Path, args_quiet: bool, out: &mut dyn std::io::Write) -> CliResult {
    let settings = RunSettings::read(dir)?;
    let output_dir = dir
        .canonicalize()
        .map_err(|e| format!("cannot resume from {}: {e}", dir.display()))?;
    std::env::set_current_dir(&settings.working_directory).map_err(|e| {
        format!(
            "cannot resume: the run was started in {}, which cannot be entered: {e}",
            settings.working_directory.display()
        )
    })?;
    let parsed = StoredArguments::try_parse_from(
        std::iter::once("hazel sample".to_string()).chain(settings.arguments.iter().cloned()),
    )
    .map_err(|e| {
        format!(
            "{}: the stored arguments do not parse: {e}",
            output_dir.join(RUN_SETTINGS).display()
        )
    })?;
    let mut args = parsed.sample;
    args.quiet |= args_quiet;
    // The stored --output-dir as given (the files' `file =` comments name it), unless the
    // directory was moved since.
    if args.output_dir.canonicalize().ok().as_ref() != Some(&output_dir) {
        args.output_dir = output_dir;
    }
    args.seed = Some(Seed::Given(settings.seed));
    sample(&args, Some(settings), out)
}

/// The content hash of the program: the text of every source file, includes too.
fn program_input(path: &Path, sources: &hazel_syntax::SourceMap) -> Input {
    let parts: Vec<&[u8]> = sources
        .iter()
        .map(|(_, file)| file.text.as_bytes())
        .collect();
    Input {
        path: path.to_path_buf(),
        xxh3: content_hash(&parts),
    }
}

fn file_input(path: &Path) -> Result<Input, String> {
    files_input(path, &[])
}

/// The input `path` stands for: itself, or the per-chain files of `chain_ids` it names (see
/// [`chain_file`]), hashed together.
fn files_input(path: &Path, chain_ids: &[u64]) -> Result<Input, String> {
    let files = if chain_ids.is_empty() {
        vec![path.to_path_buf()]
    } else {
        chain_files(path, chain_ids)
    };
    let contents = files
        .iter()
        .map(|file| std::fs::read(file).map_err(|e| format!("cannot read {}: {e}", file.display())))
        .collect::<Result<Vec<_>, _>>()?;
    let parts: Vec<&[u8]> = contents.iter().map(Vec::as_slice).collect();
    Ok(Input {
        path: path.to_path_buf(),
        xxh3: content_hash(&parts),
    })
}

/// Test hook: `HAZEL_TEST_ABORT_AFTER_ITERATION=K` aborts the process (as a crash would) once
/// any chain completes iteration K, so tests can interrupt a run at a known point.
pub(crate) struct AbortAfter<'a> {
    inner: &'a dyn Progress,
    iteration: usize,
}

impl Progress for AbortAfter<'_> {
    fn iteration(&self, chain: usize, iteration: usize, warmup: bool, divergences: usize) {
        self.inner.iteration(chain, iteration, warmup, divergences);
        if iteration == self.iteration {
            std::process::abort();
        }
    }
    fn message(&self, chain: usize, message: &str) {
        self.inner.message(chain, message);
    }
}

pub fn run(args: &SampleArgs) -> CliResult {
    // Started by mpirun: one rank of a distributed run.
    if let Some(ranks) = crate::distribute::launched_ranks() {
        return crate::distribute::run_launched(args, ranks);
    }
    // Not `stdout().lock()`: the model's `print` statements write to stdout from the chains'
    // threads while the run is in progress.
    run_to(args, &mut std::io::stdout())
}

/// `hazel sample` with the summary table written to `out` instead of stdout (progress,
/// warnings and errors still go to stderr).
pub fn run_to(args: &SampleArgs, out: &mut dyn std::io::Write) -> CliResult {
    match &args.resume {
        Some(dir) => resume(dir, args.quiet, out),
        None => sample(args, None, out),
    }
}

/// A run from `args`; `resuming` holds the stored settings of the interrupted run it continues.
fn sample(
    args: &SampleArgs,
    resuming: Option<RunSettings>,
    out: &mut dyn std::io::Write,
) -> CliResult {
    let seed = chosen_seed(args).unwrap_or_else(clock_seed);
    let prepared = prepare(args, seed, resuming.as_ref(), Voice::Speak)?;
    let (_lock, sampling) = open_output(args, &prepared, resuming.as_ref())?;
    let config = sampling.config().clone();
    let progress = progress_for_run(args.quiet, args.refresh, &config);
    let abort = abort_hook(progress.as_ref(), true);
    let progress_used: &dyn Progress = match &abort {
        Some(abort) => abort,
        None => progress.as_ref(),
    };
    let start = Instant::now();
    let outcome = sampling.run(progress_used)?;
    let elapsed = start.elapsed();
    drop(progress);
    let chains: Vec<ChainOutcome> = outcome
        .report
        .chains
        .iter()
        .map(ChainOutcome::from)
        .collect();
    finish_run(
        args,
        &Finished {
            name: &prepared.name,
            config: &config,
            paths: &outcome.paths,
            chains: &chains,
            draws: &outcome.draws,
            removed_unstarted: outcome.removed_unstarted,
            elapsed,
        },
        out,
    )
}

/// The seed `--seed` gave, if it gave one.
pub(crate) fn chosen_seed(args: &SampleArgs) -> Option<u64> {
    match args.seed {
        Some(Seed::Given(seed)) => Some(seed),
        Some(Seed::FromClock) | None => None,
    }
}

/// Whether this process reports what it finds (rank 0, or a run of one process) or leaves it
/// to another (the other ranks of a distributed run, which find the same).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Voice {
    Speak,
    Silent,
}

/// A run's model and settings, ready to sample.
pub(crate) struct Prepared {
    pub(crate) seed: u64,
    pub(crate) config: RunConfig,
    pub(crate) model: CompiledModel,
    pub(crate) name: String,
    /// `hazel-run.json` (`None` when this process is not `hazel sample`).
    pub(crate) settings: Option<RunSettings>,
    /// Content hashes of the program (with its includes), the data and the init file.
    pub(crate) inputs: [String; 3],
    /// What the chains start from, as the files' headers say: `--init` (or its default) as
    /// it was used.
    pub(crate) init: InitArg,
}

/// Reads, checks and compiles the program with its data and turns the options into the run's
/// settings: everything before the output directory is touched.
pub(crate) fn prepare(
    args: &SampleArgs,
    seed: u64,
    resuming: Option<&RunSettings>,
    voice: Voice,
) -> Result<Prepared, Box<dyn std::error::Error>> {
    let speak = voice == Voice::Speak;
    let model_path = args
        .model
        .as_deref()
        .ok_or("give a Stan program, or --resume DIR")?;
    let format = args.format.format();
    if !format.is_available() {
        return Err(format!("--format: {}", format.unavailable_message()).into());
    }
    // Settings first: a typo in an option should not wait for the model to compile.
    let mut config = run_config(args, seed)?;
    let init = requested_init(args, &config)?;
    let source = check_program_as(model_path, &args.include_paths, speak)?;
    let chain_ids: Vec<u64> = (0..config.chains as u64)
        .map(|k| config.first_chain_id + k)
        .collect();
    let init_file = match &init {
        InitArg::File(path) => Some(files_input(path, &chain_ids)?),
        InitArg::Radius(_) | InitArg::Pathfinder => None,
    };
    let metric_file = args
        .metric_file
        .as_deref()
        .map(|path| files_input(path, &chain_ids))
        .transpose()?;
    let arguments = match resuming {
        Some(stored) => Some(stored.arguments.clone()),
        None => sample_arguments()?,
    };
    let data_file = args.data.as_deref().map(file_input).transpose()?;
    let program = program_input(model_path, &source.sources);
    let hash = |input: &Option<Input>| input.as_ref().map_or_else(String::new, |i| i.xxh3.clone());
    let inputs = [program.xxh3.clone(), hash(&data_file), hash(&init_file)];
    let settings = match arguments {
        Some(arguments) => Some(RunSettings {
            metric: metric_file,
            ..RunSettings::new(arguments, seed, program, data_file, init_file)?
        }),
        None => None,
    };
    if let (Some(stored), Some(settings)) = (resuming, &settings) {
        stored.check_same_inputs(settings)?;
    }
    let data = read_data(args.data.as_deref())?;
    let options = CompileOptions {
        seed,
        executor: executor_kind(args),
        ..CompileOptions::default()
    };
    let model = compile_model_as(&source, &data, args.data.as_deref(), &options, speak)?;
    if config.sampler.num_samples == 0 && speak && !args.quiet {
        eprintln!("warning: --draws 0: the chains run warmup only and the files hold no draws");
    }
    let init = match init {
        InitArg::File(path) => {
            // CmdStan's rule: chain <id> reads FILE_<id>.json when it exists.
            let points = chain_ids
                .iter()
                .enumerate()
                .map(|(index, &id)| {
                    let file = chain_file(&path, id);
                    let inits = read_data(Some(&file))?;
                    initial_point(&model, &inits, &config, index)
                        .map_err(|e| format!("--init {}: {e}", file.display()).into())
                })
                .collect::<Result<Vec<_>, Box<dyn std::error::Error>>>()?;
            config.sampler.init = Init::Unconstrained(points);
            InitArg::File(path)
        }
        InitArg::Pathfinder => {
            if let Some(warning) = hazel_run::defaults::start_at_pathfinder(&model, &mut config) {
                if speak {
                    eprintln!("warning: {warning}");
                }
            }
            // What the chains start from: Pathfinder's points, or (a model without
            // parameters, a Pathfinder that found none) the radius.
            match config.sampler.init {
                Init::Unconstrained(_) => InitArg::Pathfinder,
                Init::Radius(radius) => InitArg::Radius(radius),
            }
        }
        radius @ InitArg::Radius(_) => radius,
    };
    Ok(Prepared {
        seed,
        config,
        model,
        name: model_name(model_path),
        settings,
        inputs,
        init,
    })
}

/// Takes the output directory and creates every chain's outputs (files, and the draws kept in
/// memory for the summary) through `hazel_run`, with the settings file for `--resume`; a
/// resumed run reopens the files at their checkpoints.
pub(crate) fn open_output<'m>(
    args: &SampleArgs,
    prepared: &'m Prepared,
    resuming: Option<&RunSettings>,
) -> Result<(OutputLock, Sampling<'m, CompiledModel>), Box<dyn std::error::Error>> {
    let Prepared {
        config,
        model,
        name,
        settings,
        seed,
        ..
    } = prepared;
    let format = args.format.format();
    // Nothing in the output directory is touched before its lock is held.
    std::fs::create_dir_all(&args.output_dir).map_err(|e| {
        format!(
            "cannot create output directory {}: {e}",
            args.output_dir.display()
        )
    })?;
    let lock = OutputLock::acquire(&args.output_dir)?;
    if resuming.is_none() {
        // A new run's settings are written once its files are created (which removes old
        // checkpoints): a directory never pairs one run's settings with another's checkpoints.
        remove_run_settings(&args.output_dir)?;
    } else if format != Format::Csv {
        return Err("--resume: only runs with --format csv can be resumed".into());
    }

    let chain_ids = config.info().chain_ids();
    let chain_file_names = |path: &Path| -> Vec<Option<String>> {
        chain_ids
            .iter()
            .map(|&id| Some(chain_file(path, id).display().to_string()))
            .collect()
    };
    let header = HeaderNotes {
        inits: match &prepared.init {
            InitArg::File(path) => chain_file_names(path),
            InitArg::Pathfinder => vec![Some("pathfinder".to_string()); chain_ids.len()],
            InitArg::Radius(_) => Vec::new(),
        },
        metric_files: args
            .metric_file
            .as_deref()
            .map(chain_file_names)
            .unwrap_or_default(),
        refresh: args.refresh.unwrap_or(HeaderNotes::default().refresh),
        sig_figs: args.sig_figs,
    };
    let job = SampleJob {
        run: config.clone(),
        output: OutputConfig {
            files: Some(FileOutput {
                format,
                dir: args.output_dir.clone(),
                model: name.clone(),
                data_file: args
                    .data
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
                header,
                naming: FileNaming::ChainIds,
            }),
            // The summary is computed from the draws as they stream, not read back.
            memory: Some(MemoryOutput::default()),
        },
        resume: resuming.is_some(),
    };
    let sampling = Sampling::prepare(model, job)?;
    if !args.quiet {
        for note in sampling.notes() {
            eprintln!("{note}");
        }
    }
    if let (None, Some(settings)) = (&resuming, settings) {
        settings.write(&args.output_dir)?;
    }
    if !args.quiet && resuming.is_some() {
        let starts = sampling.starts();
        let finished = starts
            .iter()
            .filter(|s| matches!(s, ChainStart::Resume(c) if c.finished()))
            .count();
        let resumed = starts
            .iter()
            .filter(|s| matches!(s, ChainStart::Resume(c) if !c.finished()))
            .count();
        eprintln!(
            "resuming {}: {resumed} chains from their checkpoints, {} from the start, {finished} already finished",
            args.output_dir.display(),
            starts.len() - resumed - finished
        );
    }
    if !args.quiet && chosen_seed(args).is_none() {
        eprintln!("seed = {seed} (pass --seed {seed} to repeat this run)");
    }
    Ok((lock, sampling))
}

/// The test hook `HAZEL_TEST_ABORT_AFTER_ITERATION` around `progress`, on processes where
/// `here` (under mpirun, `HAZEL_TEST_ABORT_RANK` picks the rank).
pub(crate) fn abort_hook(progress: &dyn Progress, here: bool) -> Option<AbortAfter<'_>> {
    let iteration = std::env::var("HAZEL_TEST_ABORT_AFTER_ITERATION")
        .ok()
        .and_then(|k| k.parse().ok())?;
    here.then_some(AbortAfter {
        inner: progress,
        iteration,
    })
}

/// What the end of a run needs to know about one chain (from this process's runner, or from
/// another rank's).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChainOutcome {
    pub(crate) chain_id: u64,
    pub(crate) timing: Timing,
    pub(crate) draws_written: usize,
    /// Why it stopped early.
    pub(crate) error: Option<String>,
    /// It found no starting point.
    pub(crate) no_start: bool,
}

impl From<&ChainReport> for ChainOutcome {
    fn from(c: &ChainReport) -> Self {
        ChainOutcome {
            chain_id: c.chain_id,
            timing: c.timing,
            draws_written: c.draws_written,
            error: c.error.as_ref().map(|e| e.to_string()),
            no_start: matches!(c.error, Some(ChainError::Init(_))),
        }
    }
}

/// What a run produced, for [`finish_run`].
pub(crate) struct Finished<'a> {
    pub(crate) name: &'a str,
    /// The settings the chains ran with.
    pub(crate) config: &'a RunConfig,
    pub(crate) paths: &'a [PathBuf],
    pub(crate) chains: &'a [ChainOutcome],
    /// Each chain's draws, kept in memory as they were written.
    pub(crate) draws: &'a [ChainDraws],
    /// Header-only files of chains that found no starting point, removed.
    pub(crate) removed_unstarted: usize,
    pub(crate) elapsed: Duration,
}

/// After sampling: the chains' failures and times, then the summary of every chain that has
/// draws.
pub(crate) fn finish_run(
    args: &SampleArgs,
    run: &Finished<'_>,
    out: &mut dyn std::io::Write,
) -> CliResult {
    let chains = run.chains;
    let failures: Vec<String> = chains
        .iter()
        .filter_map(|c| {
            c.error
                .as_ref()
                .map(|e| format!("chain {}: {e}", c.chain_id))
        })
        .collect();
    for failure in &failures {
        eprintln!("error: {failure}");
    }
    if !args.quiet {
        for chain in chains {
            eprintln!(
                "Chain {} finished in {:.2} s (warmup {:.2} s, sampling {:.2} s)",
                chain.chain_id,
                (chain.timing.warmup + chain.timing.sampling).as_secs_f64(),
                chain.timing.warmup.as_secs_f64(),
                chain.timing.sampling.as_secs_f64()
            );
        }
        eprintln!(
            "All chains: {:.2} s wall time. Draws are in {}",
            run.elapsed.as_secs_f64(),
            describe_paths(run.paths)
        );
    }

    // The summary covers every chain that has draws, also when others failed.
    let with_draws: Vec<&ChainDraws> = run
        .draws
        .iter()
        .filter(|c| !c.sampling.is_empty())
        .collect();
    if !with_draws.is_empty() {
        let summary = summarize_draws(
            run.name,
            run.config.sampler.max_depth,
            &with_draws,
            Vec::new(),
        )?;
        for note in &summary.notes {
            eprintln!("note: {note}");
        }
        if with_draws.len() < chains.len() {
            eprintln!(
                "note: the summary covers the {} of {} chains that have draws",
                with_draws.len(),
                chains.len()
            );
        }
        write_output(out, &table_with_warnings(&summary))?;
    }
    if failures.is_empty() {
        Ok(())
    } else {
        let kept = if run.removed_unstarted == failures.len() {
            String::new()
        } else {
            " (the draws made before a failure are kept in the files)".to_string()
        };
        Err(Reported(format!(
            "{} of {} chains failed{kept}",
            failures.len(),
            chains.len()
        ))
        .into())
    }
}

/// `dir/m-1.csv … dir/m-4.csv` for a list of chain files.
fn describe_paths(paths: &[PathBuf]) -> String {
    match paths {
        [] => String::new(),
        [one] => one.display().to_string(),
        [first, .., last] => format!("{} … {}", first.display(), last.display()),
    }
}
