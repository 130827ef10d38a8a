//! `hazel laplace`: draws from the normal approximation at a mode (CmdStan's `laplace`). The
//! mode comes from `--mode`: an optimize CSV (its last row) or a JSON file of constrained
//! values. The Hessian is computed by finite differences of gradients; `--jacobian` (default
//! true) must match how the mode was found. Writes `<model>-laplace.csv` with `log_p__` (the
//! log density, constants dropped) and `log_g__` (the approximation's, up to a constant).

use crate::front::read_data;
use crate::method::{parse_bool, prepare, unconstrain_columns, MethodArgs};
use crate::CliResult;
use clap::Args;
use hazel_approx::laplace::LaplaceApproximation;
use hazel_approx::ModelEval;
use hazel_density::DensityTerms;
use hazel_output::{read_stan_csv, MethodCsv, MethodSetting};
use hazel_rng::{Purpose, StreamRng};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Args, Debug, Clone)]
pub struct LaplaceArgs {
    #[command(flatten)]
    pub common: MethodArgs,
    /// The mode: a CSV written by `hazel optimize` (or CmdStan's), or a JSON file of constrained
    /// parameter values.
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
    let is_json = path.extension().is_some_and(|e| e == "json");
    if is_json {
        let values = read_data(Some(path))?;
        let mut missing = false;
        let q = model
            .unconstrain_inits(&values, || {
                missing = true;
                0.0
            })
            .map_err(|e| format!("--mode {}: {}", path.display(), e.message))?;
        if missing {
            return Err(format!(
                "--mode {}: the file does not give every parameter",
                path.display()
            )
            .into());
        }
        return Ok(q);
    }
    let csv = read_stan_csv(path)?;
    let last = csv
        .draws
        .last()
        .ok_or_else(|| format!("--mode {}: the file has no rows", path.display()))?;
    unconstrain_columns(model, &csv.column_names, last)
        .map_err(|e| format!("--mode {}: {e}", path.display()).into())
}

pub fn run(args: &LaplaceArgs) -> CliResult {
    if args.draws == 0 {
        return Err("--draws must be at least 1".into());
    }
    let prepared = prepare(&args.common)?;
    let id = 1;
    let mode = read_mode(&prepared.model, &args.mode)?;
    let start = Instant::now();
    let terms = DensityTerms {
        jacobian: args.jacobian,
        propto: true,
    };
    let mut eval = ModelEval::new(&prepared.model);
    let mut log_density = |q: &[f64], g: &mut [f64]| eval.log_density(q, g, terms);
    let laplace = LaplaceApproximation::at_mode(&mut log_density, &mode)?;
    let path = prepared.output_path("laplace", None);
    let settings = vec![
        MethodSetting::value(0, "mode", args.mode.display(), false),
        MethodSetting::value(0, "jacobian", u8::from(args.jacobian), args.jacobian),
        MethodSetting::value(0, "draws", args.draws, args.draws == 1000),
        MethodSetting::value(
            0,
            "calculate_lp",
            u8::from(args.calculate_lp),
            args.calculate_lp,
        ),
    ];
    let names = prepared.names();
    let mut csv = MethodCsv::create(
        &path,
        &prepared.header("laplace", settings, id, &path),
        &["log_p__", "log_g__"],
        &names,
    )?;
    let mut rows = prepared.rows(id);
    let mut rng = StreamRng::new(prepared.seed, id, Purpose::Sampler);
    let d = laplace.dim();
    let (mut z, mut q, mut grad) = (vec![0.0; d], vec![0.0; d], vec![0.0; d]);
    for _ in 0..args.draws {
        let log_g = laplace.draw(&mut rng, &mut z, &mut q);
        let log_p = if args.calculate_lp {
            log_density(&q, &mut grad).unwrap_or(f64::NEG_INFINITY)
        } else {
            f64::NAN
        };
        csv.row(&[log_p, log_g], rows.row(&q))?;
    }
    csv.timing(&[(start.elapsed().as_secs_f64(), "Total")])?;
    if !prepared.quiet {
        eprintln!(
            "{} draws from the Laplace approximation are in {}",
            args.draws,
            path.display()
        );
    }
    Ok(())
}
