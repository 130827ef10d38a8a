//! CmdStan's `pathfinder`: single-path (`num_paths = 1`, `num_draws` draws) or multi-path
//! (default 4 paths, `num_psis_draws` draws resampled with Pareto-smoothed importance weights).
//! One output (`<model>-pathfinder`): `lp_approx__`, `lp__` and the model's columns; with
//! `save_single_paths` each successful path's draws too (`<model>-pathfinder-<path id>`).
//! Paths run on `threads` threads; the draws never depend on the thread count.

use super::{
    check_tolerances, count, flag, tolerance_settings, ChainWriter, MethodCommon, MethodError,
    MethodOutput, OutputRows,
};
use hazel_approx::pathfinder::{
    multi_path, path_stream, single_path, Draws, MultiPathOptions, PathResult, PathfinderError,
};
use hazel_approx::ConvergenceOptions;
use hazel_density::{DensityTerms, LogDensity};
use hazel_draws::{KeptDraws, Progress, RunInfo, Setting, StatColumn, Timing, TimingBlock};
use hazel_graph::CompiledModel;
use hazel_output::FileNaming;
use std::time::{Duration, Instant};

/// CmdStan's `pathfinder` settings.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PathfinderConfig {
    pub options: MultiPathOptions,
    /// Also write each path's draws.
    pub save_single_paths: bool,
    /// Threads running paths (0: one per core). Never changes the draws.
    pub threads: usize,
}

impl PathfinderConfig {
    /// The densities Pathfinder evaluates: the sampler's along the path, with constants for
    /// the ELBO and `lp__`.
    pub fn terms(&self) -> Vec<DensityTerms> {
        vec![DensityTerms::SAMPLER, hazel_approx::advi::ELBO_TERMS]
    }

    fn convergence(&self) -> ConvergenceOptions {
        let p = &self.options.path;
        ConvergenceOptions {
            tol_obj: p.tol_obj,
            tol_rel_obj: p.tol_rel_obj,
            tol_grad: p.tol_grad,
            tol_rel_grad: p.tol_rel_grad,
            tol_param: p.tol_param,
            max_iterations: p.max_lbfgs_iters,
        }
    }

    pub fn settings(&self) -> Vec<Setting> {
        let o = &self.options;
        let p = &o.path;
        let mut s = tolerance_settings(0, p.init_alpha, &self.convergence());
        s.extend([
            count(0, "history_size", p.history_size, 5),
            count(0, "num_psis_draws", o.num_psis_draws, 1000),
            count(0, "num_paths", o.num_paths, 4),
            flag(0, "save_single_paths", self.save_single_paths, false),
            flag(0, "psis_resample", o.psis_resample, true),
            flag(0, "calculate_lp", p.calculate_lp, true),
            count(0, "max_lbfgs_iters", p.max_lbfgs_iters, 1000),
            count(0, "num_draws", p.num_draws, 1000),
            count(0, "num_elbo_draws", p.num_elbo_draws, 25),
        ]);
        s
    }

    fn check(&self) -> Result<(), MethodError> {
        check_tolerances(self.options.path.init_alpha, &self.convergence())?;
        let o = &self.options;
        for (name, v) in [
            ("num_paths", o.num_paths),
            ("num_draws", o.path.num_draws),
            ("num_elbo_draws", o.path.num_elbo_draws),
            ("num_psis_draws", o.num_psis_draws),
            ("history_size", o.path.history_size),
        ] {
            if v == 0 {
                return Err(MethodError(format!("{name} must be at least 1")));
            }
        }
        Ok(())
    }
}

/// What `pathfinder` produced.
#[derive(Debug)]
pub struct PathfinderOutcome {
    /// Every path's result or failure, in path order (path ids from 1).
    pub paths: Vec<Result<PathResult, PathfinderError>>,
    /// The PSIS shape of the importance weights (NaN without resampling or with one path).
    pub pareto_k: f64,
    /// Rows in the main output.
    pub draws: usize,
    pub output: MethodOutput,
    /// The paths' own outputs (`save_single_paths`), one per successful path.
    pub single_paths: Vec<MethodOutput>,
}

const STATS: [StatColumn; 2] = [StatColumn::real("lp_approx__"), StatColumn::real("lp__")];

/// Writes `draws` (output rows with generated quantities from the stream of `id`) as the one
/// chain of `run`.
#[allow(clippy::too_many_arguments)]
fn write(
    model: &CompiledModel,
    common: &MethodCommon,
    run: &RunInfo,
    naming: FileNaming,
    draws: &Draws,
    id: u64,
    timing: Timing,
    progress: &dyn Progress,
) -> Result<MethodOutput, MethodError> {
    let outputs = common.open(model, run, naming)?;
    let names = hazel_density::Model::output_names(model);
    let mut rows = OutputRows::new(model, common.seed, id);
    for sink in outputs.sinks {
        let mut writer = ChainWriter::begin(sink, run, &names)?;
        for i in 0..draws.len() {
            let row = rows.row(draws.row(i), progress, 0);
            writer.draw(false, &[draws.lp_approx[i], draws.lp[i]], row)?;
        }
        writer.finish(timing)?;
    }
    Ok(MethodOutput::collect(outputs.paths, &outputs.memory))
}

/// Pathfinder from the initial points of ids `1..=num_paths`.
pub fn pathfinder(
    model: &CompiledModel,
    common: &MethodCommon,
    config: &PathfinderConfig,
    progress: &dyn Progress,
) -> Result<PathfinderOutcome, MethodError> {
    config.check()?;
    let options = &config.options;
    let first_id = 1;
    let inits: Vec<Vec<f64>> = (0..options.num_paths as u64)
        .map(|k| common.initial_point(model, first_id + k))
        .collect::<Result<_, _>>()?;
    let start = Instant::now();
    let info = |kept: usize, id: u64, timing: TimingBlock| {
        common.run_info(
            "pathfinder",
            config.settings(),
            STATS.to_vec(),
            KeptDraws {
                warmup: 0,
                sampling: kept,
            },
            id,
            timing,
        )
    };
    let single_timing = TimingBlock::Total {
        label: "Pathfinder",
    };
    if options.num_paths == 1 {
        let mut rng = path_stream(common.seed, first_id);
        let result = single_path(model, &inits[0], &options.path, &mut rng)
            .map_err(|e| MethodError(e.to_string()))?;
        let timing = Timing {
            warmup: start.elapsed(),
            sampling: Duration::ZERO,
        };
        let run = info(result.draws.len(), first_id, single_timing);
        let output = write(
            model,
            common,
            &run,
            FileNaming::Method,
            &result.draws,
            first_id,
            timing,
            progress,
        )?;
        return Ok(PathfinderOutcome {
            draws: result.draws.len(),
            paths: vec![Ok(result)],
            pareto_k: f64::NAN,
            output,
            single_paths: Vec::new(),
        });
    }
    let result = multi_path(
        model,
        &inits,
        options,
        common.seed,
        first_id,
        config.threads,
    )
    .map_err(|e| MethodError(e.to_string()))?;
    let paths_done = start.elapsed();
    let mut single_paths = Vec::new();
    if config.save_single_paths {
        for (k, p) in result.paths.iter().enumerate() {
            if let Ok(p) = p {
                let id = first_id + k as u64;
                let run = info(p.draws.len(), id, single_timing);
                single_paths.push(write(
                    model,
                    common,
                    &run,
                    FileNaming::MethodChainIds,
                    &p.draws,
                    id,
                    Timing::default(),
                    progress,
                )?);
            }
        }
    }
    let resampled = options.psis_resample && options.path.calculate_lp;
    let timing_block = if resampled {
        TimingBlock::Phases {
            first: "Pathfinders",
            second: "PSIS",
        }
    } else {
        TimingBlock::Total { label: "Total" }
    };
    let run = info(result.draws.len(), first_id, timing_block);
    let timing = Timing {
        warmup: paths_done,
        sampling: start.elapsed() - paths_done,
    };
    let output = write(
        model,
        common,
        &run,
        FileNaming::Method,
        &result.draws,
        first_id,
        timing,
        progress,
    )?;
    Ok(PathfinderOutcome {
        draws: result.draws.len(),
        paths: result.paths,
        pareto_k: result.pareto_k,
        output,
        single_paths,
    })
}

/// Initial points for chains `chain_ids` from one multi-path Pathfinder run with a path per
/// chain (each path starting from Stan's random initialisation with the chain's own `Init`
/// stream), CmdStan's defaults otherwise: chain k starts at the k-th distinct draw of the
/// PSIS-resampled set (the resampling is already random, so the order is as good as a fresh
/// choice, and reproducible). Never depends on `threads`.
pub fn pathfinder_inits<M: LogDensity>(
    model: &M,
    seed: u64,
    chain_ids: &[u64],
    threads: usize,
) -> Result<Vec<Vec<f64>>, MethodError> {
    let Some(&first_id) = chain_ids.first() else {
        return Ok(Vec::new());
    };
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
            .map_err(|e| MethodError(format!("chain {id}: {e}")))
        })
        .collect::<Result<_, _>>()?;
    let options = MultiPathOptions {
        num_paths: chain_ids.len(),
        ..MultiPathOptions::default()
    };
    let result = multi_path(model, &inits, &options, seed, first_id, threads)
        .map_err(|e| MethodError(e.to_string()))?;
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
    if chosen.is_empty() {
        return Err(MethodError("no draw with a finite log density".into()));
    }
    // Fewer distinct draws than chains (a collapsed approximation): reuse them in turn.
    let distinct = chosen.len();
    for k in distinct..chain_ids.len() {
        chosen.push(chosen[k % distinct].clone());
    }
    Ok(chosen)
}
