//! `hazel generate-quantities`: re-runs the transformed parameters and generated quantities
//! over the draws of fitted Stan CSV files (CmdStan's `generate_quantities`; any method's
//! output, hazel's or CmdStan's). Each file's draws are unconstrained again from their
//! parameter columns and given fresh output rows whose generated quantities draw from the
//! stream of the file's chain id (`id =` in its header) under this run's `--seed`: with the
//! seed of the run that made the file, the generated quantities are those it wrote (to the
//! rounding of the constrain/unconstrain round trip). Writes
//! `<model>-generate_quantities-<id>.csv` per file: the fitted file's `__` columns, then the
//! model's columns. Warmup rows saved in a file are skipped.

use crate::method::{prepare, unconstrain_columns, MethodArgs};
use crate::CliResult;
use clap::Args;
use hazel_output::{read_stan_csv, MethodCsv, MethodSetting};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args, Debug, Clone)]
pub struct GenerateQuantitiesArgs {
    #[command(flatten)]
    pub common: MethodArgs,
    /// Stan CSV files with the fitted parameters (one output file each).
    #[arg(long = "fitted-params", alias = "fitted_params", required = true, num_args = 1..)]
    pub fitted_params: Vec<PathBuf>,
}

pub fn run(args: &GenerateQuantitiesArgs) -> CliResult {
    let prepared = prepare(&args.common)?;
    let names = prepared.names();
    for fitted in &args.fitted_params {
        let start = Instant::now();
        let csv_in = read_stan_csv(fitted)?;
        let id = csv_in
            .config_value("id")
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(1);
        let stat_names: Vec<&str> = csv_in
            .column_names
            .iter()
            .filter(|n| n.ends_with("__"))
            .map(String::as_str)
            .collect();
        let stat_index: Vec<usize> = csv_in
            .column_names
            .iter()
            .enumerate()
            .filter(|(_, n)| n.ends_with("__"))
            .map(|(i, _)| i)
            .collect();
        let path = prepared.output_path("generate_quantities", Some(id));
        let settings = vec![MethodSetting::value(
            0,
            "fitted_params",
            fitted.display(),
            false,
        )];
        let mut csv = MethodCsv::create(
            &path,
            &prepared.header("generate_quantities", settings, id, &path),
            &stat_names,
            &names,
        )?;
        let mut rows = prepared.rows(id);
        let mut stats = vec![0.0; stat_index.len()];
        for (k, draw) in csv_in.draws.iter().enumerate() {
            let q = unconstrain_columns(&prepared.model, &csv_in.column_names, draw)
                .map_err(|e| format!("{}: draw {}: {e}", fitted.display(), k + 1))?;
            for (s, &i) in stats.iter_mut().zip(&stat_index) {
                *s = draw[i];
            }
            csv.row(&stats, rows.row(&q))?;
        }
        csv.timing(&[(start.elapsed().as_secs_f64(), "Total")])?;
        if !prepared.quiet {
            eprintln!(
                "{}: {} draws → {}",
                fitted.display(),
                csv_in.draws.len(),
                path.display()
            );
        }
    }
    Ok(())
}
