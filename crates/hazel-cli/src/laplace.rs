//! `hazel laplace`: draws from the normal approximation at a mode (CmdStan's `laplace`), run
//! by `hazel_run::methods::laplace`. The mode comes from `--mode`: an optimize CSV (its last
//! row) or a JSON file of constrained values; `--jacobian` (default true) must match how the
//! mode was found. Writes `<model>-laplace.csv`.

use crate::front::read_data;
use crate::method::{describe, parse_bool, prepare, Messages, MethodArgs};
use crate::CliResult;
use clap::Args;
use hazel_output::read_draws;
use hazel_run::methods::laplace::{laplace, LaplaceConfig};
use std::path::{Path, PathBuf};

#[derive(Args, Debug, Clone)]
pub struct LaplaceArgs {
    #[command(flatten)]
    pub common: MethodArgs,
    /// The mode: the output of `hazel optimize` (or CmdStan's; CSV, or Parquet/Zarr), or a JSON
    /// file of constrained parameter values.
    #[arg(long)]
    pub mode: PathBuf,
    /// Include the log-Jacobian of the constraining transforms (use `false` for a mode found
    /// without it, `optimize`'s default).
    #[arg(long, value_parser = parse_bool, num_args = 0..=1, default_value = "true", default_missing_value = "true")]
    pub jacobian: bool,
    /// Number of draws.
    #[arg(long, default_value_t = 1000)]
    pub draws: usize,
    /// Compute `log_p__` for every draw (else it is NaN).
    #[arg(long, alias = "calculate_lp", value_parser = parse_bool, num_args = 0..=1, default_value = "true", default_missing_value = "true")]
    pub calculate_lp: bool,
}

/// The unconstrained point in a mode file.
fn read_mode(
    model: &hazel_graph::CompiledModel,
    path: &Path,
) -> Result<Vec<f64>, Box<dyn std::error::Error>> {
    let context = |e: String| format!("--mode {}: {e}", path.display());
    if path.extension().is_some_and(|e| e == "json") {
        let values = read_data(Some(path))?;
        let mut missing = false;
        let q = model
            .unconstrain_inits(&values, || {
                missing = true;
                0.0
            })
            .map_err(|e| context(e.message))?;
        if missing {
            return Err(context("the file does not give every parameter".into()).into());
        }
        return Ok(q);
    }
    let chains = read_draws(&[path.to_path_buf()])?;
    let Some(last) = chains.first().and_then(|c| c.draws.last()) else {
        return Err(context("the file has no rows".into()).into());
    };
    model
        .unconstrain_output_row(&chains[0].column_names, last)
        .map_err(|e| context(e.message).into())
}

pub fn run(args: &LaplaceArgs) -> CliResult {
    let mut config = LaplaceConfig {
        mode: Vec::new(),
        mode_source: args.mode.display().to_string(),
        jacobian: args.jacobian,
        draws: args.draws,
        calculate_lp: args.calculate_lp,
    };
    let prepared = prepare(&args.common, &[config.terms()])?;
    config.mode = read_mode(&prepared.model, &args.mode)?;
    let messages = Messages {
        quiet: prepared.quiet,
    };
    let outcome = laplace(&prepared.model, &prepared.common, &config, &messages)?;
    if !prepared.quiet {
        eprintln!(
            "{} draws from the Laplace approximation are in {}",
            outcome.draws,
            describe(&outcome.output.paths)
        );
    }
    Ok(())
}
