//! CmdStan's `variational`: ADVI, mean-field (default) or full-rank, with eta adaptation. One
//! output (`<model>-variational`): `lp__, log_p__, log_g__` and the model's columns; after the
//! header the eta used (CmdStan writes it after adaptation; hazel always, since cmdstanpy
//! needs it), then the approximation's mean (the three statistics 0), then `output_samples`
//! draws (`lp__` 0, `log_p__` the log density with constants, `log_g__` the approximation's
//! log density up to a constant).

use super::{
    count, flag, real, text, ChainWriter, MethodCommon, MethodError, MethodOutput, OutputRows,
};
use hazel_approx::advi::{advi, AdviOptions, Family, ELBO_TERMS};
use hazel_approx::ModelEval;
use hazel_density::DensityTerms;
use hazel_draws::{AdaptationInfo, KeptDraws, Progress, Setting, StatColumn, Timing, TimingBlock};
use hazel_graph::CompiledModel;
use hazel_output::FileNaming;
use hazel_rng::{Purpose, StreamRng};
use std::time::Instant;

/// CmdStan's `variational` settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VariationalConfig {
    pub advi: AdviOptions,
    /// Draws written from the approximation.
    pub output_samples: usize,
}

impl Default for VariationalConfig {
    fn default() -> Self {
        VariationalConfig {
            advi: AdviOptions::default(),
            output_samples: 1000,
        }
    }
}

impl VariationalConfig {
    /// The densities ADVI evaluates: the sampler's for its gradients, with constants for the
    /// ELBO and `log_p__`.
    pub fn terms(&self) -> Vec<DensityTerms> {
        vec![DensityTerms::SAMPLER, ELBO_TERMS]
    }

    pub fn settings(&self) -> Vec<Setting> {
        let a = &self.advi;
        let family = match a.family {
            Family::MeanField => "meanfield",
            Family::FullRank => "fullrank",
        };
        vec![
            text(0, "algorithm", family, a.family == Family::MeanField),
            Setting::section(1, family),
            count(0, "iter", a.iter, 10_000),
            count(0, "grad_samples", a.grad_samples, 1),
            count(0, "elbo_samples", a.elbo_samples, 100),
            real(0, "eta", a.eta, 1.0),
            Setting::section(0, "adapt"),
            flag(1, "engaged", a.adapt_engaged, true),
            count(1, "iter", a.adapt_iter, 50),
            real(0, "tol_rel_obj", a.tol_rel_obj, 0.01),
            count(0, "eval_elbo", a.eval_elbo, 100),
            count(0, "output_samples", self.output_samples, 1000),
        ]
    }
}

/// What `variational` found.
#[derive(Debug)]
pub struct VariationalOutcome {
    /// The approximation's mean on the unconstrained scale.
    pub mean: Vec<f64>,
    pub eta: f64,
    pub iterations: usize,
    /// Whether the relative ELBO change fell below `tol_rel_obj`.
    pub converged: bool,
    /// `(iteration, ELBO)` at every evaluation.
    pub elbo_trace: Vec<(usize, f64)>,
    pub output: MethodOutput,
}

/// ADVI from the initial point of id 1 (randomness: the `Sampler` stream of id 1).
pub fn variational(
    model: &CompiledModel,
    common: &MethodCommon,
    config: &VariationalConfig,
    progress: &dyn Progress,
) -> Result<VariationalOutcome, MethodError> {
    let a = &config.advi;
    if !(a.tol_rel_obj > 0.0 && a.eta > 0.0) {
        return Err(MethodError("tol_rel_obj and eta must be positive".into()));
    }
    if config.output_samples == 0 {
        return Err(MethodError("output_samples must be at least 1".into()));
    }
    let id = 1;
    let init = common.initial_point(model, id)?;
    let start = Instant::now();
    let mut eval = ModelEval::new(model);
    let mut rng = StreamRng::new(common.seed, id, Purpose::Sampler);
    let fit = advi(&mut eval, &init, a, &mut rng).map_err(|e| MethodError(e.to_string()))?;
    let fitted = start.elapsed();
    let run = common.run_info(
        "variational",
        config.settings(),
        vec![
            StatColumn::real("lp__"),
            StatColumn::real("log_p__"),
            StatColumn::real("log_g__"),
        ],
        KeptDraws {
            warmup: 0,
            sampling: config.output_samples + 1,
        },
        id,
        TimingBlock::None,
    );
    let outputs = common.open(model, &run, FileNaming::Method)?;
    let names = hazel_density::Model::output_names(model);
    let mut rows = OutputRows::new(model, common.seed, id);
    let q = &fit.approximation;
    let d = q.dim();
    let (mut eta, mut zeta, mut grad) = (vec![0.0; d], vec![0.0; d], vec![0.0; d]);
    for sink in outputs.sinks {
        let mut writer = ChainWriter::begin(sink, &run, &names)?;
        writer.adaptation(&AdaptationInfo::Advi { eta: fit.eta })?;
        writer.draw(false, &[0.0, 0.0, 0.0], rows.row(q.mean(), progress, 0))?;
        for _ in 0..config.output_samples {
            let log_g = q.draw(&mut rng, &mut eta, &mut zeta);
            let log_p = eval
                .log_density(&zeta, &mut grad, ELBO_TERMS)
                .unwrap_or(f64::NEG_INFINITY);
            writer.draw(false, &[0.0, log_p, log_g], rows.row(&zeta, progress, 0))?;
        }
        writer.finish(Timing {
            warmup: fitted,
            sampling: start.elapsed() - fitted,
        })?;
    }
    Ok(VariationalOutcome {
        mean: q.mean().to_vec(),
        eta: fit.eta,
        iterations: fit.iterations,
        converged: fit.converged,
        elbo_trace: fit.elbo_trace,
        output: MethodOutput::collect(outputs.paths, &outputs.memory),
    })
}
