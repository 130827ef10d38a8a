//! `hazel pathfinder`: Pathfinder (CmdStan's `pathfinder`), single- or multi-path, run by
//! `hazel_run::methods::pathfinder`. Writes `<model>-pathfinder.csv`, and with
//! `--save-single-paths` each path's draws to `<model>-pathfinder-<path>.csv`. Paths run on
//! `--threads` threads; the draws never depend on the thread count.

use crate::method::{describe, parse_bool, prepare, Messages, MethodArgs};
use crate::optimize::Tolerances;
use crate::sample::thread_count;
use crate::CliResult;
use clap::Args;
use hazel_approx::pathfinder::{MultiPathOptions, PathfinderOptions};
use hazel_run::methods::pathfinder::{pathfinder, PathfinderConfig};

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
    pub fn config(&self) -> PathfinderConfig {
        PathfinderConfig {
            options: MultiPathOptions {
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
            },
            save_single_paths: self.save_single_paths,
            threads: self.threads,
        }
    }
}

pub fn run(args: &PathfinderArgs) -> CliResult {
    let config = args.config();
    let prepared = prepare(&args.common, &config.terms())?;
    let messages = Messages {
        quiet: prepared.quiet,
    };
    let outcome = pathfinder(&prepared.model, &prepared.common, &config, &messages)?;
    for (k, p) in outcome.paths.iter().enumerate() {
        let id = k + 1;
        match p {
            Ok(p) if !prepared.quiet => eprintln!(
                "Path [{id}]: best iteration {} of {}, ELBO {:.3}, {} gradient evaluations",
                p.best_iteration, p.lbfgs_iterations, p.elbo, p.evaluations
            ),
            Ok(_) => {}
            Err(e) => eprintln!("warning: path [{id}] failed: {e}"),
        }
    }
    if !prepared.quiet && outcome.pareto_k > 0.7 {
        eprintln!(
            "warning: Pareto k value ({:.2}) is greater than 0.7. Importance resampling was not able to improve the approximation, which may indicate that the approximation itself is poor.",
            outcome.pareto_k
        );
    }
    if !prepared.quiet {
        eprintln!(
            "{} draws are in {}",
            outcome.draws,
            describe(&outcome.output.paths)
        );
    }
    Ok(())
}
