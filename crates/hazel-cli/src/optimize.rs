//! `hazel optimize`: CmdStan's `optimize` (L-BFGS, BFGS or Newton; `--jacobian`), run by
//! `hazel_run::methods::optimize`. Writes `<model>-optimize.csv` and prints the mode.

use crate::method::{describe, parse_bool, prepare, print_point, Messages, MethodArgs};
use crate::CliResult;
use clap::{Args, ValueEnum};
use hazel_approx::ConvergenceOptions;
use hazel_run::methods::optimize::{optimize, OptimizeAlgorithm, OptimizeConfig};

#[derive(Args, Debug, Clone)]
pub struct OptimizeArgs {
    #[command(flatten)]
    pub common: MethodArgs,
    /// The optimiser.
    #[arg(long, value_enum, default_value_t = AlgorithmArg::Lbfgs)]
    pub algorithm: AlgorithmArg,
    /// Include the log-Jacobian of the constraining transforms (the mode of the posterior on the
    /// unconstrained scale) instead of the penalised maximum likelihood.
    #[arg(long, value_parser = parse_bool, num_args = 0..=1, default_value = "false", default_missing_value = "true")]
    pub jacobian: bool,
    /// Maximum number of iterations.
    #[arg(long, default_value_t = 2000)]
    pub iter: usize,
    /// Write every iterate (the initial point first, the mode last).
    #[arg(long, alias = "save_iterations", value_parser = parse_bool, num_args = 0..=1, default_value = "false", default_missing_value = "true")]
    pub save_iterations: bool,
    #[command(flatten)]
    pub tolerances: Tolerances,
    /// L-BFGS: updates kept.
    #[arg(long, alias = "history_size", default_value_t = 5)]
    pub history_size: usize,
}

/// CmdStan's line-search and convergence options of L-BFGS and BFGS (also Pathfinder's).
#[derive(Args, Debug, Clone, Copy)]
pub struct Tolerances {
    /// First step size of the first line search.
    #[arg(long, alias = "init_alpha", default_value_t = 0.001)]
    pub init_alpha: f64,
    /// Convergence: absolute change in the objective.
    #[arg(long, alias = "tol_obj", default_value_t = 1e-12)]
    pub tol_obj: f64,
    /// Convergence: relative change in the objective (in units of machine epsilon).
    #[arg(long, alias = "tol_rel_obj", default_value_t = 1e4)]
    pub tol_rel_obj: f64,
    /// Convergence: gradient norm.
    #[arg(long, alias = "tol_grad", default_value_t = 1e-8)]
    pub tol_grad: f64,
    /// Convergence: relative gradient magnitude (in units of machine epsilon).
    #[arg(long, alias = "tol_rel_grad", default_value_t = 1e7)]
    pub tol_rel_grad: f64,
    /// Convergence: norm of the change in the parameters.
    #[arg(long, alias = "tol_param", default_value_t = 1e-8)]
    pub tol_param: f64,
}

impl Tolerances {
    pub fn convergence(&self, max_iterations: usize) -> ConvergenceOptions {
        ConvergenceOptions {
            tol_obj: self.tol_obj,
            tol_rel_obj: self.tol_rel_obj,
            tol_grad: self.tol_grad,
            tol_rel_grad: self.tol_rel_grad,
            tol_param: self.tol_param,
            max_iterations,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AlgorithmArg {
    Lbfgs,
    Bfgs,
    Newton,
}

impl OptimizeArgs {
    pub fn config(&self) -> OptimizeConfig {
        OptimizeConfig {
            algorithm: match self.algorithm {
                AlgorithmArg::Lbfgs => OptimizeAlgorithm::Lbfgs,
                AlgorithmArg::Bfgs => OptimizeAlgorithm::Bfgs,
                AlgorithmArg::Newton => OptimizeAlgorithm::Newton,
            },
            jacobian: self.jacobian,
            init_alpha: self.tolerances.init_alpha,
            convergence: self.tolerances.convergence(self.iter),
            history_size: self.history_size,
            save_iterations: self.save_iterations,
        }
    }
}

/// `hazel optimize`, printing the mode's columns to standard output.
pub fn run(args: &OptimizeArgs) -> CliResult {
    let config = args.config();
    let prepared = prepare(&args.common, &[config.terms()])?;
    let messages = Messages {
        quiet: prepared.quiet,
    };
    let outcome = optimize(&prepared.model, &prepared.common, &config, &messages)?;
    let files = describe(&outcome.output.paths);
    if !prepared.quiet {
        if let (Some(lp0), Some(termination)) = (outcome.initial_lp, outcome.termination) {
            let how = if termination.is_success() {
                "Optimization terminated normally"
            } else {
                "Optimization terminated with error"
            };
            eprintln!(
                "Initial log joint probability = {lp0}\n{how} after {} iterations ({} gradient evaluations):\n  {}",
                outcome.iterations,
                outcome.evaluations,
                termination.message()
            );
        }
    }
    let names = hazel_density::Model::output_names(&prepared.model);
    let mut all_names = vec!["lp__"];
    all_names.extend(names.iter().map(String::as_str));
    let mut values = vec![outcome.lp];
    values.extend(&outcome.row);
    print_point(&mut std::io::stdout(), &all_names, &values)?;
    if outcome.failed() {
        let message = outcome.termination.map(|t| t.message()).unwrap_or_default();
        return Err(format!(
            "optimization terminated with error: {message} (the last point is in {files})"
        )
        .into());
    }
    Ok(())
}
