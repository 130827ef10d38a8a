//! What `optimize`, `laplace`, `variational`, `pathfinder` and `generate-quantities` share on
//! the command line: the common options (program, data, seed, init, output directory and
//! format), building the model with the densities the method evaluates compiled as static
//! graphs, and the [`hazel_run::methods::MethodCommon`] every method runs with. The methods
//! themselves are `hazel_run::methods`.

use crate::front::{check_program, compile_model, model_name, read_data};
use crate::sample::{clock_seed, parse_init, parse_seed, FormatArg, InitArg, Seed};
use clap::Args;
use hazel_density::DensityTerms;
use hazel_draws::Progress;
use hazel_graph::{CompileOptions, CompiledModel};
use hazel_output::{FileNaming, FileOutput, HeaderNotes, OutputConfig};
use hazel_run::methods::{InitialValues, MethodCommon};
use std::path::PathBuf;

/// The options every method takes.
#[derive(Args, Debug, Clone)]
pub struct MethodArgs {
    /// The Stan program.
    pub model: PathBuf,
    /// The data, as a CmdStan JSON file (omit for a program without data).
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Seed of the run: 0 to 4294967295, or -1 (the default) for one from the clock.
    #[arg(long, value_parser = parse_seed, allow_negative_numbers = true)]
    pub seed: Option<Seed>,
    /// Initial values: a radius R (uniform in (-R, R) on the unconstrained scale), or a CmdStan
    /// JSON file of constrained parameter values.
    #[arg(long, default_value = "2", allow_negative_numbers = true)]
    pub init: String,
    /// Directory for the output (`<model>-<method>.csv`), created if needed.
    #[arg(long, default_value = ".")]
    pub output_dir: PathBuf,
    /// Output format: Stan CSV (CmdStan's layout), Parquet (the CSV's columns) or Zarr
    /// (ArviZ's layout); the last two need a build with `--features parquet` / `zarr`.
    #[arg(long, value_enum, default_value_t = FormatArg::Csv)]
    pub format: FormatArg,
    /// No progress messages.
    #[arg(long)]
    pub quiet: bool,
    /// Directories searched for `#include` files.
    #[arg(short = 'I', long = "include-path")]
    pub include_paths: Vec<PathBuf>,
}

/// A model ready for a method, with the run's common settings.
pub(crate) struct Prepared {
    pub model: CompiledModel,
    pub common: MethodCommon,
    pub quiet: bool,
}

/// Checks and compiles the program with its data (compiling `densities` as static graphs
/// besides the sampler's), fixes the seed, reads the initial values, creates the output
/// directory.
pub(crate) fn prepare(
    args: &MethodArgs,
    densities: &[DensityTerms],
) -> Result<Prepared, Box<dyn std::error::Error>> {
    let seed = match args.seed {
        Some(Seed::Given(seed)) => seed,
        Some(Seed::FromClock) | None => {
            let seed = clock_seed();
            if !args.quiet {
                eprintln!("seed = {seed} (pass --seed {seed} to repeat this run)");
            }
            seed
        }
    };
    let format = args.format.format();
    if !format.is_available() {
        return Err(format!("--format: {}", format.unavailable_message()).into());
    }
    let init =
        match parse_init(&args.init)? {
            InitArg::Pathfinder => return Err(
                "--init pathfinder is an option of `hazel sample`; give a radius or a JSON file"
                    .into(),
            ),
            InitArg::Radius(r) => InitialValues::Radius(r),
            InitArg::File(path) => InitialValues::Values {
                values: read_data(Some(&path))?,
                source: path.display().to_string(),
            },
        };
    let source = check_program(&args.model, &args.include_paths)?;
    let data = read_data(args.data.as_deref())?;
    let options = CompileOptions {
        seed,
        densities: densities.to_vec(),
        ..CompileOptions::default()
    };
    let model = compile_model(&source, &data, args.data.as_deref(), &options)?;
    std::fs::create_dir_all(&args.output_dir).map_err(|e| {
        format!(
            "cannot create output directory {}: {e}",
            args.output_dir.display()
        )
    })?;
    let output = OutputConfig {
        files: Some(FileOutput {
            format,
            dir: args.output_dir.clone(),
            model: model_name(&args.model),
            data_file: args
                .data
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            header: HeaderNotes::default(),
            // Each method names its files.
            naming: FileNaming::Method,
        }),
        memory: None,
    };
    Ok(Prepared {
        model,
        common: MethodCommon { seed, init, output },
        quiet: args.quiet,
    })
}

/// A method's messages (rows that could not be computed) on stderr, unless `--quiet`.
pub(crate) struct Messages {
    pub quiet: bool,
}

impl Progress for Messages {
    fn iteration(&self, _: usize, _: usize, _: bool, _: usize) {}
    fn message(&self, _: usize, message: &str) {
        if !self.quiet {
            eprintln!("warning: {message}");
        }
    }
}

/// The output files, for messages.
pub(crate) fn describe(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Writes `name = value` lines of a point (the optimize summary).
pub(crate) fn print_point(
    out: &mut dyn std::io::Write,
    names: &[&str],
    values: &[f64],
) -> std::io::Result<()> {
    let width = names.iter().map(|n| n.len()).max().unwrap_or(0);
    for (n, v) in names.iter().zip(values) {
        writeln!(out, "{n:>width$} = {v}")?;
    }
    Ok(())
}

/// A `--flag [true|false]` boolean (CmdStan's `jacobian=1`, `adapt engaged=0`).
pub(crate) fn parse_bool(text: &str) -> Result<bool, String> {
    match text.trim() {
        "1" | "true" => Ok(true),
        "0" | "false" => Ok(false),
        other => Err(format!("expected true or false (or 1 or 0), got {other:?}")),
    }
}
