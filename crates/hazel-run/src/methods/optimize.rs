//! CmdStan's `optimize`: the mode of the log density on the unconstrained scale by L-BFGS
//! (default), BFGS or Newton, without the Jacobian by default (the penalised maximum
//! likelihood; `jacobian` gives the posterior mode on the unconstrained scale). One output
//! (`<model>-optimize`): `lp__` and the model's columns, the mode as the only row, or with
//! `save_iterations` every iterate from the initial point, the mode last.

use super::{
    check_tolerances, count, flag, text, tolerance_settings, ChainWriter, MethodCommon,
    MethodError, MethodOutput, OutputRows,
};
use hazel_approx::newton::newton;
use hazel_approx::{
    ConvergenceOptions, NegLogDensity, QuasiNewton, QuasiNewtonKind, QuasiNewtonOptions,
    Termination,
};
use hazel_density::DensityTerms;
use hazel_draws::{KeptDraws, Progress, StatColumn, Timing, TimingBlock};
use hazel_graph::CompiledModel;
use hazel_output::FileNaming;

/// The optimiser (CmdStan's `algorithm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptimizeAlgorithm {
    Lbfgs,
    Bfgs,
    Newton,
}

impl OptimizeAlgorithm {
    /// CmdStan's name.
    pub fn name(self) -> &'static str {
        match self {
            OptimizeAlgorithm::Lbfgs => "lbfgs",
            OptimizeAlgorithm::Bfgs => "bfgs",
            OptimizeAlgorithm::Newton => "newton",
        }
    }
}

/// CmdStan's `optimize` settings, with its names and defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OptimizeConfig {
    pub algorithm: OptimizeAlgorithm,
    pub jacobian: bool,
    /// The first line search's first step.
    pub init_alpha: f64,
    /// The tolerances, and `iter` as `max_iterations`.
    pub convergence: ConvergenceOptions,
    /// L-BFGS: updates kept.
    pub history_size: usize,
    pub save_iterations: bool,
}

impl Default for OptimizeConfig {
    fn default() -> Self {
        OptimizeConfig {
            algorithm: OptimizeAlgorithm::Lbfgs,
            jacobian: false,
            init_alpha: 0.001,
            convergence: ConvergenceOptions::default(),
            history_size: 5,
            save_iterations: false,
        }
    }
}

impl OptimizeConfig {
    /// The density optimised.
    pub fn terms(&self) -> DensityTerms {
        DensityTerms {
            jacobian: self.jacobian,
            propto: true,
        }
    }

    /// The settings of CmdStan's `optimize` section.
    pub fn settings(&self) -> Vec<hazel_draws::Setting> {
        let name = self.algorithm.name();
        let mut s = vec![text(
            0,
            "algorithm",
            name,
            self.algorithm == OptimizeAlgorithm::Lbfgs,
        )];
        if self.algorithm != OptimizeAlgorithm::Newton {
            s.push(hazel_draws::Setting::section(
                1,
                if self.algorithm == OptimizeAlgorithm::Lbfgs {
                    "lbfgs"
                } else {
                    "bfgs"
                },
            ));
            s.extend(tolerance_settings(2, self.init_alpha, &self.convergence));
            if self.algorithm == OptimizeAlgorithm::Lbfgs {
                s.push(count(2, "history_size", self.history_size, 5));
            }
        }
        s.push(flag(0, "jacobian", self.jacobian, false));
        s.push(count(0, "iter", self.convergence.max_iterations, 2000));
        s.push(flag(0, "save_iterations", self.save_iterations, false));
        s
    }
}

/// What `optimize` found.
#[derive(Debug)]
pub struct OptimizeOutcome {
    /// The mode on the unconstrained scale, `lp__` there and its output row.
    pub mode: Vec<f64>,
    pub lp: f64,
    pub row: Vec<f64>,
    /// How L-BFGS/BFGS stopped (`None` for Newton).
    pub termination: Option<Termination>,
    pub iterations: usize,
    /// Gradient evaluations.
    pub evaluations: usize,
    /// `lp__` at the initial point (L-BFGS, BFGS).
    pub initial_lp: Option<f64>,
    pub output: MethodOutput,
}

impl OptimizeOutcome {
    /// CmdStan's error: the line search failed (the last point is still written).
    pub fn failed(&self) -> bool {
        self.termination == Some(Termination::LineSearchFailed)
    }
}

/// Runs `optimize` on `model` from the initial point of id 1.
pub fn optimize(
    model: &CompiledModel,
    common: &MethodCommon,
    config: &OptimizeConfig,
    progress: &dyn Progress,
) -> Result<OptimizeOutcome, MethodError> {
    check_tolerances(config.init_alpha, &config.convergence)?;
    if config.history_size == 0 {
        return Err(MethodError("history_size must be at least 1".into()));
    }
    let id = 1;
    let x0 = common.initial_point(model, id)?;
    let terms = config.terms();
    // (unconstrained point, lp__) of every iterate kept.
    let mut iterates: Vec<(Vec<f64>, f64)> = Vec::new();
    let mut objective = NegLogDensity::new(model, terms);
    let (mode, lp, termination, iterations, initial_lp) = match config.algorithm {
        OptimizeAlgorithm::Newton => {
            let mut log_density =
                |q: &[f64], g: &mut [f64]| objective.eval.log_density(q, g, terms);
            let mut x = x0.clone();
            let mut grad = vec![0.0; x.len()];
            let lp0 = log_density(&x, &mut grad)
                .map_err(|e| MethodError(format!("cannot evaluate the initial point: {e}")))?;
            if config.save_iterations {
                iterates.push((x.clone(), lp0));
            }
            let mut iterations = 0;
            let (lp, _) = newton(
                &mut log_density,
                &mut x,
                config.convergence.max_iterations,
                |_, q, lp| {
                    iterations += 1;
                    if config.save_iterations {
                        iterates.push((q.to_vec(), lp));
                    }
                },
            )
            .map_err(|e| MethodError(e.to_string()))?;
            (x, lp, None, iterations, Some(lp0))
        }
        kind => {
            let options = QuasiNewtonOptions {
                kind: if kind == OptimizeAlgorithm::Bfgs {
                    QuasiNewtonKind::Bfgs
                } else {
                    QuasiNewtonKind::Lbfgs {
                        history_size: config.history_size,
                    }
                },
                init_alpha: config.init_alpha,
                convergence: config.convergence,
                ..QuasiNewtonOptions::default()
            };
            let mut qn = QuasiNewton::new(&mut objective, &x0, options)
                .map_err(|e| MethodError(format!("cannot evaluate the initial point: {e}")))?;
            let lp0 = -qn.value();
            if config.save_iterations {
                iterates.push((qn.x().to_vec(), lp0));
            }
            let termination = qn.minimize(&mut objective, |state, _| {
                if config.save_iterations {
                    iterates.push((state.x().to_vec(), -state.value()));
                }
            });
            (
                qn.x().to_vec(),
                -qn.value(),
                Some(termination),
                qn.iteration(),
                Some(lp0),
            )
        }
    };
    if iterates.is_empty() {
        iterates.push((mode.clone(), lp));
    }
    let run = common.run_info(
        "optimize",
        config.settings(),
        vec![StatColumn::real("lp__")],
        KeptDraws {
            warmup: 0,
            sampling: iterates.len(),
        },
        id,
        TimingBlock::None,
    );
    let outputs = common.open(model, &run, FileNaming::Method)?;
    let names = hazel_density::Model::output_names(model);
    let mut rows = OutputRows::new(model, common.seed, id);
    let mut last_row = Vec::new();
    for sink in outputs.sinks {
        let mut writer = ChainWriter::begin(sink, &run, &names)?;
        for (q, lp) in &iterates {
            let row = rows.row(q, progress, 0);
            writer.draw(false, &[*lp], row)?;
            last_row = row.to_vec();
        }
        writer.finish(Timing::default())?;
    }
    if last_row.is_empty() {
        last_row = rows.row(&mode, progress, 0).to_vec();
    }
    Ok(OptimizeOutcome {
        mode,
        lp,
        row: last_row,
        termination,
        iterations,
        evaluations: objective.eval.evaluations,
        initial_lp,
        output: MethodOutput::collect(outputs.paths, &outputs.memory),
    })
}
