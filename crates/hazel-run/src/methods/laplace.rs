//! CmdStan's `laplace`: draws from the normal approximation at a mode, the Hessian by finite
//! differences of gradients. One output (`<model>-laplace`): `log_p__` (the log density,
//! constants dropped; NaN without `calculate_lp`), `log_g__` (the approximation's, up to a
//! constant) and the model's columns.

use super::{count, flag, text, ChainWriter, MethodCommon, MethodError, MethodOutput, OutputRows};
use hazel_approx::laplace::LaplaceApproximation;
use hazel_approx::ModelEval;
use hazel_density::DensityTerms;
use hazel_draws::{KeptDraws, Progress, StatColumn, Timing, TimingBlock};
use hazel_graph::CompiledModel;
use hazel_output::FileNaming;
use hazel_rng::{Purpose, StreamRng};
use std::time::Instant;

/// CmdStan's `laplace` settings.
#[derive(Debug, Clone, PartialEq)]
pub struct LaplaceConfig {
    /// The mode on the unconstrained scale, and where it came from (the header's `mode`).
    pub mode: Vec<f64>,
    pub mode_source: String,
    /// Include the log-Jacobian (must match how the mode was found; CmdStan's default true).
    pub jacobian: bool,
    pub draws: usize,
    /// Compute `log_p__` of every draw.
    pub calculate_lp: bool,
}

impl LaplaceConfig {
    /// The density approximated.
    pub fn terms(&self) -> DensityTerms {
        DensityTerms {
            jacobian: self.jacobian,
            propto: true,
        }
    }

    pub fn settings(&self) -> Vec<hazel_draws::Setting> {
        vec![
            text(0, "mode", &self.mode_source, false),
            flag(0, "jacobian", self.jacobian, true),
            count(0, "draws", self.draws, 1000),
            flag(0, "calculate_lp", self.calculate_lp, true),
        ]
    }
}

/// What `laplace` produced.
#[derive(Debug)]
pub struct LaplaceOutcome {
    pub draws: usize,
    pub output: MethodOutput,
}

/// Draws from the Laplace approximation at `config.mode` (randomness: the `Sampler` stream of
/// id 1; generated quantities: its `GeneratedQuantities` stream).
pub fn laplace(
    model: &CompiledModel,
    common: &MethodCommon,
    config: &LaplaceConfig,
    progress: &dyn Progress,
) -> Result<LaplaceOutcome, MethodError> {
    if config.draws == 0 {
        return Err(MethodError("draws must be at least 1".into()));
    }
    let id = 1;
    let start = Instant::now();
    let terms = config.terms();
    let mut eval = ModelEval::new(model);
    let mut log_density = |q: &[f64], g: &mut [f64]| eval.log_density(q, g, terms);
    let approximation = LaplaceApproximation::at_mode(&mut log_density, &config.mode)
        .map_err(|e| MethodError(e.to_string()))?;
    let run = common.run_info(
        "laplace",
        config.settings(),
        vec![StatColumn::real("log_p__"), StatColumn::real("log_g__")],
        KeptDraws {
            warmup: 0,
            sampling: config.draws,
        },
        id,
        TimingBlock::None,
    );
    let outputs = common.open(model, &run, FileNaming::Method)?;
    let names = hazel_density::Model::output_names(model);
    let mut rows = OutputRows::new(model, common.seed, id);
    let mut rng = StreamRng::new(common.seed, id, Purpose::Sampler);
    let d = approximation.dim();
    let (mut z, mut q, mut grad) = (vec![0.0; d], vec![0.0; d], vec![0.0; d]);
    for sink in outputs.sinks {
        let mut writer = ChainWriter::begin(sink, &run, &names)?;
        for _ in 0..config.draws {
            let log_g = approximation.draw(&mut rng, &mut z, &mut q);
            let log_p = if config.calculate_lp {
                log_density(&q, &mut grad).unwrap_or(f64::NEG_INFINITY)
            } else {
                f64::NAN
            };
            writer.draw(false, &[log_p, log_g], rows.row(&q, progress, 0))?;
        }
        writer.finish(Timing {
            warmup: Default::default(),
            sampling: start.elapsed(),
        })?;
    }
    Ok(LaplaceOutcome {
        draws: config.draws,
        output: MethodOutput::collect(outputs.paths, &outputs.memory),
    })
}
