//! `hazel sample`: NUTS draws from a Stan program's posterior, one Stan CSV file per chain, then
//! the summary table and the sampler diagnostics (the same as `hazel summary` on the files).
//!
//! Options follow CmdStan's meaning and defaults. Each chain writes and flushes its file draw
//! by draw, so a chain that fails (or a run that is interrupted) leaves every draw made so far
//! on disk; the summary then covers the chains that have draws, and the exit status is 1.

use crate::front::{check_program, compile_model, model_name, read_data, Reported};
use crate::progress::progress_for_run;
use crate::summary::{summarize, table_with_warnings, write_stdout};
use crate::CliResult;
use clap::{Args, ValueEnum};
use hazel_graph::{CompileOptions, CompiledModel};
use hazel_nuts::{DrawSink, Init, MetricKind, RunConfig};
use hazel_output::{read_draws, CsvHeaderInfo, Format, StanCsvWriter};
use hazel_rng::{Purpose, StreamRng};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Args, Debug)]
pub struct SampleArgs {
    /// The Stan program.
    pub model: PathBuf,
    /// The data, as a CmdStan JSON file (omit for a program without data).
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Number of chains.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..))]
    pub chains: u64,
    /// Worker threads running chains (0 = one per core). Never changes the draws.
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Threads each chain may use inside one log-density evaluation (large vector operations).
    /// Never changes the draws.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub threads_per_chain: u64,
    /// Warmup (adaptation) iterations per chain.
    #[arg(long, default_value_t = 1000)]
    pub warmup: usize,
    /// Post-warmup draws per chain.
    #[arg(long, default_value_t = 1000)]
    pub draws: usize,
    /// Keep every `thin`-th iteration.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub thin: u64,
    /// Also write the warmup iterations to the files.
    #[arg(long)]
    pub save_warmup: bool,
    /// Seed of the run (default: drawn from the clock and written to the files).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Target acceptance statistic of step-size adaptation, in (0, 1).
    #[arg(long, default_value_t = 0.8)]
    pub adapt_delta: f64,
    /// Maximum tree depth of NUTS.
    #[arg(long, default_value_t = 10)]
    pub max_depth: u32,
    /// Mass matrix adapted during warmup.
    #[arg(long, value_enum, default_value_t = MetricArg::Diag)]
    pub metric: MetricArg,
    /// Initial values: a radius R (uniform in (-R, R) on the unconstrained scale; 0 starts at
    /// the origin), or a CmdStan JSON file of constrained parameter values used by every chain
    /// (parameters it leaves out start uniformly in (-2, 2) on the unconstrained scale).
    #[arg(long, default_value = "2")]
    pub init: String,
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
    /// Directories searched for `#include` files after the including file's own directory.
    #[arg(short = 'I', long = "include-path")]
    pub include_paths: Vec<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MetricArg {
    /// Diagonal mass matrix (CmdStan's `diag_e`).
    Diag,
    /// Dense mass matrix (CmdStan's `dense_e`).
    Dense,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    Csv,
    Parquet,
    Zarr,
}

impl FormatArg {
    fn format(self) -> Format {
        match self {
            FormatArg::Csv => Format::Csv,
            FormatArg::Parquet => Format::Parquet,
            FormatArg::Zarr => Format::Zarr,
        }
    }
}

/// A seed from the clock, for runs that did not ask for one (it is written to every file).
fn clock_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    // Keep it below 2^31 so that CmdStan-style tools reading the files accept it.
    (nanos as u64 ^ (nanos >> 64) as u64) % (1 << 31)
}

/// What `--init` asked for.
#[derive(Debug, Clone, PartialEq)]
enum InitArg {
    /// Uniform in (-R, R) on the unconstrained scale.
    Radius(f64),
    /// A CmdStan JSON file of constrained parameter values, shared by all chains. Parameters it
    /// leaves out start uniformly in (-2, 2) on the unconstrained scale, as in CmdStan.
    File(PathBuf),
}

/// Parses the `--init` value: a radius, or the path of an existing JSON file.
fn parse_init(text: &str) -> Result<InitArg, String> {
    if let Ok(radius) = text.trim().parse::<f64>() {
        if radius.is_finite() && radius >= 0.0 {
            return Ok(InitArg::Radius(radius));
        }
        return Err(format!(
            "--init {text}: the radius must be a finite number ≥ 0"
        ));
    }
    if Path::new(text).is_file() {
        return Ok(InitArg::File(PathBuf::from(text)));
    }
    Err(format!(
        "--init {text}: expected a radius (a number ≥ 0) or an existing JSON file of initial values"
    ))
}

/// One unconstrained starting point per chain from a file of constrained values. Coordinates
/// the file does not give are drawn from each chain's own `Init` stream, so the points depend
/// only on (seed, chain id), like everything else a chain does.
fn initial_points(
    model: &CompiledModel,
    path: &Path,
    config: &RunConfig,
) -> Result<Vec<Vec<f64>>, Box<dyn std::error::Error>> {
    let inits = read_data(Some(path))?;
    (0..config.chains as u64)
        .map(|k| {
            let mut rng = StreamRng::new(config.seed, config.first_chain_id + k, Purpose::Init);
            model
                .unconstrain_inits(&inits, || rng.uniform_range(-2.0, 2.0))
                .map_err(|e| format!("--init {}: {}", path.display(), e.message).into())
        })
        .collect()
}

/// The run's settings from the options.
fn run_config(args: &SampleArgs, seed: u64) -> Result<RunConfig, String> {
    let mut config = RunConfig {
        seed,
        chains: args.chains as usize,
        threads: args.threads,
        ..RunConfig::default()
    };
    let sampler = &mut config.sampler;
    sampler.num_warmup = args.warmup;
    sampler.num_samples = args.draws;
    sampler.thin = args.thin as usize;
    sampler.save_warmup = args.save_warmup;
    sampler.max_depth = args.max_depth;
    sampler.metric = match args.metric {
        MetricArg::Diag => MetricKind::Diag,
        MetricArg::Dense => MetricKind::Dense,
    };
    sampler.adapt.delta = args.adapt_delta;
    if let InitArg::Radius(radius) = parse_init(&args.init)? {
        sampler.init = Init::Radius(radius);
    }
    if !(args.adapt_delta > 0.0 && args.adapt_delta < 1.0) {
        return Err(format!(
            "--adapt-delta {}: must be strictly between 0 and 1",
            args.adapt_delta
        ));
    }
    if args.max_depth == 0 {
        return Err("--max-depth must be at least 1".to_string());
    }
    Ok(config)
}

pub fn run(args: &SampleArgs) -> CliResult {
    let seed = args.seed.unwrap_or_else(clock_seed);
    let format = args.format.format();
    if !format.is_available() {
        return Err(format!("--format: {}", format.unavailable_message()).into());
    }
    // Settings first: a typo in an option should not wait for the model to compile.
    let mut config = run_config(args, seed)?;
    let source = check_program(&args.model, &args.include_paths)?;
    let data = read_data(args.data.as_deref())?;
    let options = CompileOptions {
        seed,
        threads_per_chain: args.threads_per_chain as usize,
        ..CompileOptions::default()
    };
    let model = compile_model(&source, &data, args.data.as_deref(), &options)?;
    if let InitArg::File(path) = parse_init(&args.init)? {
        config.sampler.init = Init::Unconstrained(initial_points(&model, &path, &config)?);
    }

    let name = model_name(&args.model);
    std::fs::create_dir_all(&args.output_dir).map_err(|e| {
        format!(
            "cannot create output directory {}: {e}",
            args.output_dir.display()
        )
    })?;
    let chain_ids: Vec<u64> = (0..config.chains as u64)
        .map(|k| config.first_chain_id + k)
        .collect();
    let data_file = args
        .data
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let (paths, sinks) = create_sinks(format, &args.output_dir, &name, &data_file, &config)?;

    if !args.quiet && args.seed.is_none() {
        eprintln!("seed = {seed} (pass --seed {seed} to repeat this run)");
    }
    let progress = progress_for_run(
        args.quiet,
        &chain_ids,
        config.sampler.num_warmup,
        config.sampler.num_samples,
    );
    let start = Instant::now();
    let report = hazel_nuts::run(&model, &config, sinks, progress.as_ref())?;
    let elapsed = start.elapsed();
    drop(progress);

    let failures: Vec<String> = report
        .failures()
        .map(|(id, error)| format!("chain {id}: {error}"))
        .collect();
    for failure in &failures {
        eprintln!("error: {failure}");
    }
    if !args.quiet {
        for chain in &report.chains {
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
            elapsed.as_secs_f64(),
            describe_paths(&paths)
        );
    }

    // A chain that failed before its first draw (no starting point) left an empty file:
    // remove it so that no one mistakes it for output. Files with a header are kept.
    let mut unstarted = 0;
    for path in paths.iter().filter(|_| format == Format::Csv) {
        if std::fs::metadata(path).is_ok_and(|m| m.len() == 0) && std::fs::remove_file(path).is_ok()
        {
            unstarted += 1;
        }
    }
    // The summary covers every chain that has draws, also when others failed.
    let mut with_draws = Vec::new();
    for path in paths.iter().filter(|p| p.exists()) {
        match read_draws(std::slice::from_ref(path)) {
            Ok(chains) => with_draws.extend(chains.into_iter().filter(|c| !c.draws.is_empty())),
            Err(e) if failures.is_empty() => return Err(e.into()),
            Err(_) => {}
        }
    }
    if !with_draws.is_empty() {
        let summary = summarize(&with_draws)?;
        for note in &summary.notes {
            eprintln!("note: {note}");
        }
        if with_draws.len() < chain_ids.len() {
            eprintln!(
                "note: the summary covers the {} of {} chains that have draws",
                with_draws.len(),
                chain_ids.len()
            );
        }
        write_stdout(&table_with_warnings(&summary))?;
    }
    if failures.is_empty() {
        Ok(())
    } else {
        let kept = if unstarted == failures.len() {
            String::new()
        } else {
            " (the draws made before a failure are kept in the files)".to_string()
        };
        Err(Reported(format!(
            "{} of {} chains failed{kept}",
            failures.len(),
            chain_ids.len()
        ))
        .into())
    }
}

/// The output paths (one per chain, or one store) and one sink per chain.
type OutputSinks = (Vec<PathBuf>, Vec<Box<dyn DrawSink>>);

/// Creates the output files (or store) of the run before sampling starts.
fn create_sinks(
    format: Format,
    dir: &Path,
    name: &str,
    data_file: &str,
    config: &RunConfig,
) -> Result<OutputSinks, Box<dyn std::error::Error>> {
    let chain_ids: Vec<u64> = (0..config.chains as u64)
        .map(|k| config.first_chain_id + k)
        .collect();
    let header = |index: usize, path: &Path| {
        CsvHeaderInfo::new(name, data_file, &path.display().to_string(), config, index)
    };
    let chain_path = |id: u64, extension: &str| dir.join(format!("{name}-{id}.{extension}"));
    let mut sinks: Vec<Box<dyn DrawSink>> = Vec::with_capacity(chain_ids.len());
    let paths = match format {
        Format::Csv => {
            let paths: Vec<PathBuf> = chain_ids.iter().map(|&id| chain_path(id, "csv")).collect();
            for (index, path) in paths.iter().enumerate() {
                sinks.push(Box::new(StanCsvWriter::create(path, header(index, path))?));
            }
            paths
        }
        #[cfg(feature = "parquet")]
        Format::Parquet => {
            let paths: Vec<PathBuf> = chain_ids
                .iter()
                .map(|&id| chain_path(id, "parquet"))
                .collect();
            for (index, path) in paths.iter().enumerate() {
                sinks.push(Box::new(hazel_output::parquet_sink::ParquetWriter::create(
                    path,
                    header(index, path),
                )?));
            }
            paths
        }
        #[cfg(feature = "zarr")]
        Format::Zarr => {
            let path = dir.join(format!("{name}.zarr"));
            let store = hazel_output::zarr_sink::ZarrRun::create(
                &path,
                &header(0, &path),
                chain_ids.clone(),
            )?;
            for index in 0..chain_ids.len() {
                sinks.push(Box::new(store.chain_writer(index)));
            }
            vec![path]
        }
        #[allow(unreachable_patterns)]
        unavailable => return Err(unavailable.unavailable_message().into()),
    };
    Ok((paths, sinks))
}

/// `dir/m-1.csv … dir/m-4.csv` for a list of chain files.
fn describe_paths(paths: &[PathBuf]) -> String {
    match paths {
        [] => String::new(),
        [one] => one.display().to_string(),
        [first, .., last] => format!("{} … {}", first.display(), last.display()),
    }
}
