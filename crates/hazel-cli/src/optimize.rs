//! `hazel optimize`: the mode of the log density on the unconstrained scale (CmdStan's
//! `optimize`): L-BFGS (default), BFGS or Newton, without the Jacobian by default (the
//! penalised maximum likelihood; `--jacobian` gives the posterior mode of the unconstrained
//! density). Writes `<model>-optimize.csv` with `lp__` and the model's columns: one row, the
//! mode, or with `--save-iterations` every iterate from the initial point, the mode last.

use crate::method::{parse_bool, prepare, print_point, MethodArgs};
use crate::CliResult;
use clap::{Args, ValueEnum};
use hazel_approx::newton::newton;
use hazel_approx::{
    ConvergenceOptions, NegLogDensity, QuasiNewton, QuasiNewtonKind, QuasiNewtonOptions,
    Termination,
};
use hazel_density::DensityTerms;
use hazel_output::{MethodCsv, MethodSetting};
use std::path::PathBuf;

#[derive(Args, Debug, Clone)]
pub struct OptimizeArgs {
    #[command(flatten)]
    pub common: MethodArgs,
    /// The optimiser.
    #[arg(long, value_enum, default_value_t = OptimizeAlgorithm::Lbfgs)]
    pub algorithm: OptimizeAlgorithm,
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

    /// The settings lines at `depth`, with CmdStan's defaults marked.
    pub fn settings(&self, depth: usize) -> Vec<MethodSetting> {
        let d = ConvergenceOptions::default();
        vec![
            MethodSetting::real(depth, "init_alpha", self.init_alpha, 0.001),
            MethodSetting::real(depth, "tol_obj", self.tol_obj, d.tol_obj),
            MethodSetting::real(depth, "tol_rel_obj", self.tol_rel_obj, d.tol_rel_obj),
            MethodSetting::real(depth, "tol_grad", self.tol_grad, d.tol_grad),
            MethodSetting::real(depth, "tol_rel_grad", self.tol_rel_grad, d.tol_rel_grad),
            MethodSetting::real(depth, "tol_param", self.tol_param, d.tol_param),
        ]
    }

    pub fn check(&self) -> Result<(), String> {
        for (name, v) in [
            ("init-alpha", self.init_alpha),
            ("tol-obj", self.tol_obj),
            ("tol-rel-obj", self.tol_rel_obj),
            ("tol-grad", self.tol_grad),
            ("tol-rel-grad", self.tol_rel_grad),
            ("tol-param", self.tol_param),
        ] {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(format!("--{name} {v}: must be a finite number ≥ 0"));
            }
        }
        if self.init_alpha == 0.0 {
            return Err("--init-alpha must be positive".to_string());
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OptimizeAlgorithm {
    Lbfgs,
    Bfgs,
    Newton,
}

impl OptimizeAlgorithm {
    fn name(self) -> &'static str {
        match self {
            OptimizeAlgorithm::Lbfgs => "lbfgs",
            OptimizeAlgorithm::Bfgs => "bfgs",
            OptimizeAlgorithm::Newton => "newton",
        }
    }
}

/// What a run found.
pub struct OptimizeOutcome {
    pub path: PathBuf,
    /// The mode on the unconstrained scale and `lp__` there.
    pub mode: Vec<f64>,
    pub lp: f64,
}

pub fn run(args: &OptimizeArgs) -> CliResult {
    run_to(args, &mut std::io::stdout()).map(|_| ())
}

/// `hazel optimize`, printing the mode's columns to `out`.
pub fn run_to(
    args: &OptimizeArgs,
    out: &mut dyn std::io::Write,
) -> Result<OptimizeOutcome, Box<dyn std::error::Error>> {
    args.tolerances.check()?;
    if args.history_size == 0 {
        return Err("--history-size must be at least 1".into());
    }
    let prepared = prepare(&args.common)?;
    let id = 1;
    let x0 = prepared.initial_point(id)?;
    let terms = DensityTerms {
        jacobian: args.jacobian,
        propto: true,
    };
    // (unconstrained point, lp__) of every iterate kept.
    let mut iterates: Vec<(Vec<f64>, f64)> = Vec::new();
    let (mode, lp, failure) = match args.algorithm {
        OptimizeAlgorithm::Newton => {
            let mut objective = NegLogDensity::new(&prepared.model, terms);
            let mut log_density =
                |q: &[f64], g: &mut [f64]| objective.eval.log_density(q, g, terms);
            let mut x = x0.clone();
            let mut grad = vec![0.0; x.len()];
            let lp0 = log_density(&x, &mut grad)?;
            if args.save_iterations {
                iterates.push((x.clone(), lp0));
            }
            let (lp, _) = newton(&mut log_density, &mut x, args.iter, |_, q, lp| {
                if args.save_iterations {
                    iterates.push((q.to_vec(), lp));
                }
            })?;
            (x, lp, None)
        }
        kind => {
            let mut objective = NegLogDensity::new(&prepared.model, terms);
            let options = QuasiNewtonOptions {
                kind: if kind == OptimizeAlgorithm::Bfgs {
                    QuasiNewtonKind::Bfgs
                } else {
                    QuasiNewtonKind::Lbfgs {
                        history_size: args.history_size,
                    }
                },
                init_alpha: args.tolerances.init_alpha,
                convergence: args.tolerances.convergence(args.iter),
                ..QuasiNewtonOptions::default()
            };
            let mut qn = QuasiNewton::new(&mut objective, &x0, options)
                .map_err(|e| format!("cannot evaluate the initial point: {e}"))?;
            if !prepared.quiet {
                eprintln!("Initial log joint probability = {}", -qn.value());
            }
            if args.save_iterations {
                iterates.push((qn.x().to_vec(), -qn.value()));
            }
            let termination = qn.minimize(&mut objective, |state, _| {
                if args.save_iterations {
                    iterates.push((state.x().to_vec(), -state.value()));
                }
            });
            if !prepared.quiet {
                let how = if termination.is_success() {
                    "Optimization terminated normally"
                } else {
                    "Optimization terminated with error"
                };
                eprintln!(
                    "{how} after {} iterations ({} gradient evaluations):\n  {}",
                    qn.iteration(),
                    objective.eval.evaluations,
                    termination.message()
                );
            }
            let failure =
                (termination == Termination::LineSearchFailed).then(|| termination.message());
            (qn.x().to_vec(), -qn.value(), failure)
        }
    };
    if iterates.is_empty() {
        iterates.push((mode.clone(), lp));
    }
    let path = prepared.output_path("optimize", None);
    let mut settings = vec![MethodSetting::value(
        0,
        "algorithm",
        args.algorithm.name(),
        args.algorithm == OptimizeAlgorithm::Lbfgs,
    )];
    if args.algorithm != OptimizeAlgorithm::Newton {
        settings.push(MethodSetting::section(1, args.algorithm.name()));
        settings.extend(args.tolerances.settings(2));
        if args.algorithm == OptimizeAlgorithm::Lbfgs {
            settings.push(MethodSetting::value(
                2,
                "history_size",
                args.history_size,
                args.history_size == 5,
            ));
        }
    }
    settings.push(MethodSetting::value(
        0,
        "jacobian",
        u8::from(args.jacobian),
        !args.jacobian,
    ));
    settings.push(MethodSetting::value(
        0,
        "iter",
        args.iter,
        args.iter == 2000,
    ));
    settings.push(MethodSetting::value(
        0,
        "save_iterations",
        u8::from(args.save_iterations),
        !args.save_iterations,
    ));
    let names = prepared.names();
    let mut csv = MethodCsv::create(
        &path,
        &prepared.header("optimize", settings, id, &path),
        &["lp__"],
        &names,
    )?;
    let mut rows = prepared.rows(id);
    let mut last_row = Vec::new();
    for (q, lp) in &iterates {
        let row = rows.row(q);
        csv.row(&[*lp], row)?;
        last_row = row.to_vec();
    }
    let mut all_names = vec!["lp__"];
    all_names.extend(names.iter().map(String::as_str));
    let mut values = vec![lp];
    values.extend(&last_row);
    print_point(out, &all_names, &values)?;
    if let Some(message) = failure {
        return Err(format!(
            "optimization terminated with error: {message} (the last point is in {})",
            path.display()
        )
        .into());
    }
    Ok(OptimizeOutcome { path, mode, lp })
}
