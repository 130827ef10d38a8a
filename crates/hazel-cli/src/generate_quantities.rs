//! `hazel generate-quantities`: re-runs the transformed parameters and generated quantities
//! over the draws of fitted runs (CmdStan's `generate_quantities`; any method's output,
//! hazel's or CmdStan's, in any format hazel reads), run by
//! `hazel_run::methods::generate`. Each fitted chain gives
//! `<model>-generate_quantities-<id>.csv` (`id` from its file), generated quantities from the
//! stream of that id under `--seed`: with the sampling run's seed, hazel's rows come back bit
//! for bit, saved warmup rows included.

use crate::method::{describe, prepare, Messages, MethodArgs};
use crate::CliResult;
use clap::Args;
use hazel_output::read_draws;
use hazel_run::methods::generate::{generate_quantities, FittedDraws};
use std::path::PathBuf;

#[derive(Args, Debug, Clone)]
pub struct GenerateQuantitiesArgs {
    #[command(flatten)]
    pub common: MethodArgs,
    /// The fitted draws: Stan CSV files (one output each), Parquet files or Zarr stores.
    #[arg(long = "fitted-params", alias = "fitted_params", required = true, num_args = 1..)]
    pub fitted_params: Vec<PathBuf>,
}

pub fn run(args: &GenerateQuantitiesArgs) -> CliResult {
    let prepared = prepare(&args.common, &[])?;
    let messages = Messages {
        quiet: prepared.quiet,
    };
    let chains = read_draws(&args.fitted_params)?;
    let mut ids = std::collections::BTreeSet::new();
    for csv in &chains {
        let fitted = FittedDraws::from_csv(csv);
        if !ids.insert(fitted.chain_id) {
            return Err(format!(
                "{}: chain id {} is also another fitted file's, and both would write the same output",
                fitted.source, fitted.chain_id
            )
            .into());
        }
        let outcome = generate_quantities(&prepared.model, &prepared.common, &fitted, &messages)?;
        if !prepared.quiet {
            eprintln!(
                "{}: {} draws → {}",
                fitted.source,
                outcome.rows,
                describe(&outcome.output.paths)
            );
        }
    }
    Ok(())
}
