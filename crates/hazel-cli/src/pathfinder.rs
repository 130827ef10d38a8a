//! `hazel pathfinder`: Pathfinder (CmdStan's `pathfinder`), single-path (`--num-paths 1`,
//! `num_draws` draws) or multi-path (default 4 paths, `num_psis_draws` draws resampled with
//! Pareto-smoothed importance weights). Writes `<model>-pathfinder.csv` with `lp_approx__`,
//! `lp__` and the model's columns, and with `--save-single-paths` each path's draws to
//! `<model>-pathfinder-<path>.csv`. Paths run on `--threads` threads; the draws never depend on
//! the thread count.

use crate::method::{parse_bool, prepare, MethodArgs, Prepared};
use crate::optimize::Tolerances;
use crate::sample::thread_count;
use crate::CliResult;
use clap::Args;
use hazel_approx::pathfinder::{
    multi_path, path_stream, single_path, Draws, MultiPathOptions, PathfinderOptions,
};
use hazel_output::{MethodCsv, MethodSetting};
use std::time::Instant;

#[derive(Args, Debug, Clone)]
pub struct PathfinderArgs {
    #[command(flatten)]
    pub common: MethodArgs,
    #[command(flatten)]
    pub tolerances: Tolerances,
    /// L-BFGS updates kept (the rank of the approximations).
    #[arg(long, alias = "history_size", default_value_t = 5)]
    pub history_size: usize,
    /// Draws resampled from all paths' draws.
    #[arg(long, alias = "num_psis_draws", default_value_t = 1000)]
    pub num_psis_draws: usize,
    /// Number of paths.
    #[arg(long, alias = "num_paths", default_value_t = 4)]
    pub num_paths: usize,
    /// Also write each path's draws.
    #[arg(long, alias = "save_single_paths", value_parser = parse_bool, num_args = 0..=1, default_value = "false", default_missing_value = "true")]
    pub save_single_paths: bool,
    /// Resample with PSIS (else every path's draws are written).
    #[arg(long, alias = "psis_resample", value_parser = parse_bool, num_args = 0..=1, default_value = "true", default_missing_value = "true")]
    pub psis_resample: bool,
    /// Compute `lp__` of every draw (needed for resampling).
    #[arg(long, alias = "calculate_lp", value_parser = parse_bool, num_args = 0..=1, default_value = "true", default_missing_value = "true")]
    pub calculate_lp: bool,
    /// Maximum L-BFGS iterations per path.
    #[arg(long, alias = "max_lbfgs_iters", default_value_t = 1000)]
    pub max_lbfgs_iters: usize,
    /// Draws per path.
    #[arg(long, alias = "num_draws", default_value_t = 1000)]
    pub num_draws: usize,
    /// Draws per ELBO estimate.
    #[arg(long, alias = "num_elbo_draws", default_value_t = 25)]
    pub num_elbo_draws: usize,
    /// Threads running paths (0 = one per core). Never changes the draws.
    #[arg(long, default_value_t = 0, value_parser = thread_count)]
    pub threads: usize,
}

impl PathfinderArgs {
    fn options(&self) -> MultiPathOptions {
        MultiPathOptions {
            path: PathfinderOptions {
                init_alpha: self.tolerances.init_alpha,
                tol_obj: self.tolerances.tol_obj,
                tol_rel_obj: self.tolerances.tol_rel_obj,
                tol_grad: self.tolerances.tol_grad,
                tol_rel_grad: self.tolerances.tol_rel_grad,
                tol_param: self.tolerances.tol_param,
                history_size: self.history_size,
                max_lbfgs_iters: self.max_lbfgs_iters,
                num_elbo_draws: self.num_elbo_draws,
                num_draws: self.num_draws,
                calculate_lp: self.calculate_lp,
            },
            num_paths: self.num_paths,
            num_psis_draws: self.num_psis_draws,
            psis_resample: self.psis_resample,
        }
    }

    fn settings(&self) -> Vec<MethodSetting> {
        let mut s = self.tolerances.settings(0);
        let flag = |key: &str, v: bool, default: bool| {
            MethodSetting::value(0, key, u8::from(v), v == default)
        };
        s.push(MethodSetting::value(
            0,
            "history_size",
            self.history_size,
            self.history_size == 5,
        ));
        s.push(MethodSetting::value(
            0,
            "num_psis_draws",
            self.num_psis_draws,
            self.num_psis_draws == 1000,
        ));
        s.push(MethodSetting::value(
            0,
            "num_paths",
            self.num_paths,
            self.num_paths == 4,
        ));
        s.push(flag("save_single_paths", self.save_single_paths, false));
        s.push(flag("psis_resample", self.psis_resample, true));
        s.push(flag("calculate_lp", self.calculate_lp, true));
        s.push(MethodSetting::value(
            0,
            "max_lbfgs_iters",
            self.max_lbfgs_iters,
            self.max_lbfgs_iters == 1000,
        ));
        s.push(MethodSetting::value(
            0,
            "num_draws",
            self.num_draws,
            self.num_draws == 1000,
        ));
        s.push(MethodSetting::value(
            0,
            "num_elbo_draws",
            self.num_elbo_draws,
            self.num_elbo_draws == 25,
        ));
        s
    }
}

/// Writes draws (with their output rows, generated quantities from the stream of `id`).
fn write_draws(
    prepared: &Prepared,
    csv: &mut MethodCsv,
    draws: &Draws,
    id: u64,
) -> std::io::Result<()> {
    let mut rows = prepared.rows(id);
    for i in 0..draws.len() {
        csv.row(&[draws.lp_approx[i], draws.lp[i]], rows.row(draws.row(i)))?;
    }
    Ok(())
}

pub fn run(args: &PathfinderArgs) -> CliResult {
    args.tolerances.check()?;
    for (name, v) in [
        ("num-paths", args.num_paths),
        ("num-draws", args.num_draws),
        ("num-elbo-draws", args.num_elbo_draws),
        ("num-psis-draws", args.num_psis_draws),
        ("history-size", args.history_size),
    ] {
        if v == 0 {
            return Err(format!("--{name} must be at least 1").into());
        }
    }
    let prepared = prepare(&args.common)?;
    let options = args.options();
    let first_id = 1;
    let inits: Vec<Vec<f64>> = (0..args.num_paths as u64)
        .map(|k| prepared.initial_point(first_id + k))
        .collect::<Result<_, _>>()?;
    let start = Instant::now();
    let path = prepared.output_path("pathfinder", None);
    let header = prepared.header("pathfinder", args.settings(), first_id, &path);
    let names = prepared.names();
    let stats = ["lp_approx__", "lp__"];
    if args.num_paths == 1 {
        let mut rng = path_stream(prepared.seed, first_id);
        let result = single_path(&prepared.model, &inits[0], &options.path, &mut rng)?;
        let elapsed = start.elapsed().as_secs_f64();
        let mut csv = MethodCsv::create(&path, &header, &stats, &names)?;
        write_draws(&prepared, &mut csv, &result.draws, first_id)?;
        csv.timing(&[(elapsed, "Pathfinder")])?;
        if !prepared.quiet {
            eprintln!(
                "Path [{first_id}]: best iteration {} of {}, ELBO {:.3}, {} gradient evaluations; draws in {}",
                result.best_iteration,
                result.lbfgs_iterations,
                result.elbo,
                result.evaluations,
                path.display()
            );
        }
        return Ok(());
    }
    let result = multi_path(
        &prepared.model,
        &inits,
        &options,
        prepared.seed,
        first_id,
        args.threads,
    )?;
    let paths_done = start.elapsed().as_secs_f64();
    for (k, p) in result.paths.iter().enumerate() {
        let id = first_id + k as u64;
        match p {
            Ok(p) => {
                if !prepared.quiet {
                    eprintln!(
                        "Path [{id}]: best iteration {} of {}, ELBO {:.3}, {} gradient evaluations",
                        p.best_iteration, p.lbfgs_iterations, p.elbo, p.evaluations
                    );
                }
                if args.save_single_paths {
                    let single = prepared.output_path("pathfinder", Some(id));
                    let mut csv = MethodCsv::create(
                        &single,
                        &prepared.header("pathfinder", args.settings(), id, &single),
                        &stats,
                        &names,
                    )?;
                    write_draws(&prepared, &mut csv, &p.draws, id)?;
                }
            }
            Err(e) => eprintln!("warning: path [{id}] failed: {e}"),
        }
    }
    if !prepared.quiet && result.pareto_k > 0.7 {
        eprintln!(
            "warning: Pareto k value ({:.2}) is greater than 0.7. Importance resampling was not able to improve the approximation, which may indicate that the approximation itself is poor.",
            result.pareto_k
        );
    }
    let mut csv = MethodCsv::create(&path, &header, &stats, &names)?;
    write_draws(&prepared, &mut csv, &result.draws, first_id)?;
    let total = start.elapsed().as_secs_f64();
    if args.psis_resample && args.calculate_lp {
        csv.timing(&[
            (paths_done, "Pathfinders"),
            (total - paths_done, "PSIS"),
            (total, "Total"),
        ])?;
    } else {
        csv.timing(&[(total, "Total")])?;
    }
    if !prepared.quiet {
        eprintln!("{} draws are in {}", result.draws.len(), path.display());
    }
    Ok(())
}

/// `hazel sample --init pathfinder`: one multi-path Pathfinder run with a path per chain (each
/// path starting from Stan's random initialisation with the chain's own `Init` stream), CmdStan's
/// defaults otherwise; chain k starts at the k-th distinct draw of the PSIS-resampled set (the
/// resampling is already random, so the order is as good as a fresh choice, and reproducible).
pub fn pathfinder_inits(
    model: &hazel_graph::CompiledModel,
    seed: u64,
    chain_ids: &[u64],
    threads: usize,
) -> Result<Vec<Vec<f64>>, Box<dyn std::error::Error>> {
    use hazel_density::LogDensity;
    let mut ws = model.new_workspace();
    let inits: Vec<Vec<f64>> = chain_ids
        .iter()
        .map(|&id| {
            hazel_nuts::init::initialize(
                model,
                &mut ws,
                &hazel_nuts::Init::Radius(2.0),
                100,
                seed,
                id,
                0,
            )
            .map(|p| p.position)
            .map_err(|e| format!("--init pathfinder: chain {id}: {e}"))
        })
        .collect::<Result<_, _>>()?;
    let options = MultiPathOptions {
        num_paths: chain_ids.len(),
        ..MultiPathOptions::default()
    };
    let result = multi_path(model, &inits, &options, seed, chain_ids[0], threads)
        .map_err(|e| format!("--init pathfinder: {e}"))?;
    let draws = &result.draws;
    let mut chosen: Vec<Vec<f64>> = Vec::with_capacity(chain_ids.len());
    for i in 0..draws.len() {
        let row = draws.row(i);
        if draws.lp[i].is_finite() && !chosen.iter().any(|c| c.as_slice() == row) {
            chosen.push(row.to_vec());
            if chosen.len() == chain_ids.len() {
                break;
            }
        }
    }
    // Fewer distinct draws than chains (a collapsed approximation): reuse them in turn.
    if chosen.is_empty() {
        return Err("--init pathfinder: no draw with a finite log density".into());
    }
    let distinct = chosen.len();
    for k in distinct..chain_ids.len() {
        chosen.push(chosen[k % distinct].clone());
    }
    Ok(chosen)
}
