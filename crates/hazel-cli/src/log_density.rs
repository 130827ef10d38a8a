//! `hazel log-density`: the log density and its gradient at given unconstrained points.
//!
//! By default this is the sampler's density: the log-Jacobians of the constraining transforms
//! included and the constant terms of `~` statements dropped — what CmdStan's `lp__` and
//! stanli's/BridgeStan's `log_prob_grad` (with their defaults) give. `--include-constants` keeps
//! the constants of `~` (as if every `~` were `target += …_lpdf`), `--no-jacobian` leaves out
//! the Jacobians.

use crate::front::{check_program, compile_model, read_data};
use crate::summary::write_stdout;
use crate::CliResult;
use clap::Args;
use hazel_density::LogDensity;
use hazel_graph::CompileOptions;
use serde_json::Value;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct LogDensityArgs {
    /// The Stan program.
    pub model: PathBuf,
    /// The data, as a CmdStan JSON file (omit for a program without data).
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// A JSON file holding a list of unconstrained points, each a list of numbers (one point
    /// may also be given as a bare list of numbers).
    #[arg(long)]
    pub points: PathBuf,
    /// Keep the constant terms of `~` statements.
    #[arg(long)]
    pub include_constants: bool,
    /// Leave out the log-Jacobians of the constraining transforms.
    #[arg(long)]
    pub no_jacobian: bool,
    /// Seed of the `_rng` calls in transformed data.
    #[arg(long, default_value_t = CompileOptions::default().seed)]
    pub seed: u64,
    /// Directories searched for `#include` files after the including file's own directory.
    #[arg(short = 'I', long = "include-path")]
    pub include_paths: Vec<PathBuf>,
}

/// Reads the points: a list of lists of numbers, or one list of numbers.
fn read_points(path: &Path) -> Result<Vec<Vec<f64>>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read points file {}: {e}", path.display()))?;
    let value: Value =
        serde_json::from_str(&text).map_err(|e| format!("points file {}: {e}", path.display()))?;
    let shape_error = || {
        format!(
            "points file {}: expected a list of points, each a list of numbers",
            path.display()
        )
    };
    let list = value.as_array().ok_or_else(shape_error)?;
    let numbers = |items: &[Value], point: usize| -> Result<Vec<f64>, String> {
        items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_f64().ok_or_else(|| {
                    format!(
                        "points file {}: point {point}, element {}: expected a number, found {v}",
                        path.display(),
                        i + 1
                    )
                })
            })
            .collect()
    };
    if !list.is_empty() && list.iter().all(Value::is_number) {
        return Ok(vec![numbers(list, 1)?]);
    }
    list.iter()
        .enumerate()
        .map(|(k, point)| {
            let items = point.as_array().ok_or_else(shape_error)?;
            numbers(items, k + 1)
        })
        .collect()
}

pub fn run(args: &LogDensityArgs) -> CliResult {
    let points = read_points(&args.points)?;
    let source = check_program(&args.model, &args.include_paths)?;
    let data = read_data(args.data.as_deref())?;
    let options = CompileOptions {
        seed: args.seed,
        ..CompileOptions::default()
    };
    let model = compile_model(&source, &data, args.data.as_deref(), &options)?;
    let dim = model.dim();
    if let Some((k, point)) = points.iter().enumerate().find(|(_, p)| p.len() != dim) {
        return Err(format!(
            "point {} has {} values, but the model has {dim} unconstrained parameters",
            k + 1,
            point.len()
        )
        .into());
    }
    let (jacobian, propto) = (!args.no_jacobian, !args.include_constants);
    let mut workspace = model.new_workspace();
    let mut grad = vec![0.0; dim];
    let mut failed = 0;
    let mut rows = Vec::with_capacity(points.len());
    for (k, q) in points.iter().enumerate() {
        let row = match model.log_density_with(&mut workspace, q, &mut grad, jacobian, propto) {
            // Written by hand so that `lp` comes first (serde_json sorts object keys).
            Ok(lp) => format!(
                "{{\"lp\": {}, \"grad\": {}}}",
                serde_json::to_string(&lp)?,
                serde_json::to_string(&grad)?
            ),
            Err(error) => {
                failed += 1;
                eprintln!("error: point {}: {error}", k + 1);
                format!(
                    "{{\"lp\": null, \"grad\": null, \"error\": {}}}",
                    serde_json::to_string(&error.message)?
                )
            }
        };
        rows.push(row);
    }
    let mut out = String::from("[");
    for (k, row) in rows.iter().enumerate() {
        out.push_str(if k == 0 { "\n  " } else { ",\n  " });
        out.push_str(row);
    }
    out.push_str(if rows.is_empty() { "]\n" } else { "\n]\n" });
    write_stdout(&out)?;
    if failed > 0 {
        Err(format!(
            "the log density could not be evaluated at {failed} of {} points",
            points.len()
        )
        .into())
    } else {
        Ok(())
    }
}
