//! `hazel variational`: ADVI (CmdStan's `variational`), mean-field (default) or full-rank,
//! run by `hazel_run::methods::variational`. Writes `<model>-variational.csv`: the eta used,
//! the approximation's mean, then `output_samples` draws.

use crate::method::{describe, parse_bool, prepare, Messages, MethodArgs};
use crate::CliResult;
use clap::{Args, ValueEnum};
use hazel_approx::advi::{AdviOptions, Family};
use hazel_run::methods::variational::{variational, VariationalConfig};

#[derive(Args, Debug, Clone)]
pub struct VariationalArgs {
    #[command(flatten)]
    pub common: MethodArgs,
    /// The variational family.
    #[arg(long, value_enum, default_value_t = FamilyArg::Meanfield)]
    pub algorithm: FamilyArg,
    /// Maximum iterations of stochastic gradient ascent.
    #[arg(long, default_value_t = 10_000)]
    pub iter: usize,
    /// Draws per gradient estimate.
    #[arg(long, alias = "grad_samples", default_value_t = 1)]
    pub grad_samples: usize,
    /// Draws per ELBO estimate.
    #[arg(long, alias = "elbo_samples", default_value_t = 100)]
    pub elbo_samples: usize,
    /// Step-size scale (replaced by the adapted one unless adaptation is off).
    #[arg(long, default_value_t = 1.0)]
    pub eta: f64,
    /// Adapt eta (CmdStan's `adapt engaged`).
    #[arg(long, alias = "adapt_engaged", value_parser = parse_bool, num_args = 0..=1, default_value = "true", default_missing_value = "true")]
    pub adapt_engaged: bool,
    /// Iterations per trial eta during adaptation (CmdStan's `adapt iter`).
    #[arg(long, alias = "adapt_iter", default_value_t = 50)]
    pub adapt_iter: usize,
    /// Convergence: relative ELBO change.
    #[arg(long, alias = "tol_rel_obj", default_value_t = 0.01)]
    pub tol_rel_obj: f64,
    /// Evaluate the ELBO every this many iterations.
    #[arg(long, alias = "eval_elbo", default_value_t = 100)]
    pub eval_elbo: usize,
    /// Draws written from the approximation.
    #[arg(long, alias = "output_samples", default_value_t = 1000)]
    pub output_samples: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FamilyArg {
    Meanfield,
    Fullrank,
}

impl VariationalArgs {
    pub fn config(&self) -> VariationalConfig {
        VariationalConfig {
            advi: AdviOptions {
                family: match self.algorithm {
                    FamilyArg::Meanfield => Family::MeanField,
                    FamilyArg::Fullrank => Family::FullRank,
                },
                iter: self.iter,
                grad_samples: self.grad_samples,
                elbo_samples: self.elbo_samples,
                eta: self.eta,
                adapt_engaged: self.adapt_engaged,
                adapt_iter: self.adapt_iter,
                tol_rel_obj: self.tol_rel_obj,
                eval_elbo: self.eval_elbo,
            },
            output_samples: self.output_samples,
        }
    }
}

pub fn run(args: &VariationalArgs) -> CliResult {
    let config = args.config();
    let prepared = prepare(&args.common, &config.terms())?;
    let messages = Messages {
        quiet: prepared.quiet,
    };
    let outcome = variational(&prepared.model, &prepared.common, &config, &messages)?;
    if !prepared.quiet {
        let how = if outcome.converged {
            "converged"
        } else {
            "reached the maximum number of iterations (the approximation may not be meaningful)"
        };
        eprintln!(
            "ADVI {how} after {} iterations, eta = {}\nThe mean and {} draws are in {}",
            outcome.iterations,
            outcome.eta,
            args.output_samples,
            describe(&outcome.output.paths)
        );
    }
    Ok(())
}
