//! `hazel variational`: ADVI (CmdStan's `variational`), mean-field (default) or full-rank,
//! with CmdStan's options and defaults and eta adaptation. Writes `<model>-variational.csv`:
//! columns `lp__, log_p__, log_g__` and the model's; after the header the adapted eta
//! (`# Stepsize adaptation complete.`, `# eta = …`), then the approximation's mean (the
//! three statistics 0), then `output_samples` draws (`lp__` 0, `log_p__` the log density with
//! constants, `log_g__` the approximation's log density up to a constant).

use crate::method::{parse_bool, prepare, MethodArgs};
use crate::CliResult;
use clap::{Args, ValueEnum};
use hazel_approx::advi::{advi, AdviOptions, Family, ELBO_TERMS};
use hazel_approx::ModelEval;
use hazel_output::{MethodCsv, MethodSetting};
use hazel_rng::{Purpose, StreamRng};
use std::time::Instant;

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

pub fn run(args: &VariationalArgs) -> CliResult {
    if !(args.tol_rel_obj > 0.0 && args.eta > 0.0) {
        return Err("--tol-rel-obj and --eta must be positive".into());
    }
    if args.output_samples == 0 {
        return Err("--output-samples must be at least 1".into());
    }
    let prepared = prepare(&args.common)?;
    let id = 1;
    let init = prepared.initial_point(id)?;
    let options = AdviOptions {
        family: match args.algorithm {
            FamilyArg::Meanfield => Family::MeanField,
            FamilyArg::Fullrank => Family::FullRank,
        },
        iter: args.iter,
        grad_samples: args.grad_samples,
        elbo_samples: args.elbo_samples,
        eta: args.eta,
        adapt_engaged: args.adapt_engaged,
        adapt_iter: args.adapt_iter,
        tol_rel_obj: args.tol_rel_obj,
        eval_elbo: args.eval_elbo,
    };
    let start = Instant::now();
    let mut eval = ModelEval::new(&prepared.model);
    let mut rng = StreamRng::new(prepared.seed, id, Purpose::Sampler);
    let fit = advi(&mut eval, &init, &options, &mut rng)?;
    if !prepared.quiet {
        let how = if fit.converged {
            "converged"
        } else {
            "reached the maximum number of iterations (the approximation may not be meaningful)"
        };
        eprintln!(
            "ADVI {how} after {} iterations, eta = {}",
            fit.iterations, fit.eta
        );
    }
    let path = prepared.output_path("variational", None);
    let family = match args.algorithm {
        FamilyArg::Meanfield => "meanfield",
        FamilyArg::Fullrank => "fullrank",
    };
    let settings = vec![
        MethodSetting::value(
            0,
            "algorithm",
            family,
            args.algorithm == FamilyArg::Meanfield,
        ),
        MethodSetting::section(1, family),
        MethodSetting::value(0, "iter", args.iter, args.iter == 10_000),
        MethodSetting::value(0, "grad_samples", args.grad_samples, args.grad_samples == 1),
        MethodSetting::value(
            0,
            "elbo_samples",
            args.elbo_samples,
            args.elbo_samples == 100,
        ),
        MethodSetting::real(0, "eta", args.eta, 1.0),
        MethodSetting::section(0, "adapt"),
        MethodSetting::value(
            1,
            "engaged",
            u8::from(args.adapt_engaged),
            args.adapt_engaged,
        ),
        MethodSetting::value(1, "iter", args.adapt_iter, args.adapt_iter == 50),
        MethodSetting::real(0, "tol_rel_obj", args.tol_rel_obj, 0.01),
        MethodSetting::value(0, "eval_elbo", args.eval_elbo, args.eval_elbo == 100),
        MethodSetting::value(
            0,
            "output_samples",
            args.output_samples,
            args.output_samples == 1000,
        ),
    ];
    let names = prepared.names();
    let mut csv = MethodCsv::create(
        &path,
        &prepared.header("variational", settings, id, &path),
        &["lp__", "log_p__", "log_g__"],
        &names,
    )?;
    // CmdStan writes this block only after adaptation; it is written always so that readers
    // (cmdstanpy requires it) find the eta that was used.
    csv.comment("Stepsize adaptation complete.")?;
    csv.comment(&format!(
        "eta = {}",
        hazel_output::method_csv::format_real(fit.eta)
    ))?;
    let mut rows = prepared.rows(id);
    let q = &fit.approximation;
    csv.row(&[0.0, 0.0, 0.0], rows.row(q.mean()))?;
    let d = q.dim();
    let (mut eta, mut zeta, mut grad) = (vec![0.0; d], vec![0.0; d], vec![0.0; d]);
    for _ in 0..args.output_samples {
        let log_g = q.draw(&mut rng, &mut eta, &mut zeta);
        let log_p = eval
            .log_density(&zeta, &mut grad, ELBO_TERMS)
            .unwrap_or(f64::NEG_INFINITY);
        csv.row(&[0.0, log_p, log_g], rows.row(&zeta))?;
    }
    csv.timing(&[(start.elapsed().as_secs_f64(), "Total")])?;
    if !prepared.quiet {
        eprintln!(
            "The mean and {} draws are in {}",
            args.output_samples,
            path.display()
        );
    }
    Ok(())
}
