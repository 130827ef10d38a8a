//! CmdStan's `generate_quantities`: the transformed parameters and generated quantities
//! recomputed over the draws of a fitted run (any method's output, hazel's or CmdStan's). Each
//! row's parameter values are bound as they are (never unconstrained and constrained again),
//! the transformed parameters and generated quantities computed from them, the generated
//! quantities drawing from the `GeneratedQuantities` stream of the fitted chain's id: with the
//! seed of the run that made exact rows (hazel's files, memory), the rows are those it wrote,
//! bit for bit. Saved warmup rows are recomputed too, first (the sampler drew their generated
//! quantities from the same stream, before the others). One output per fitted chain
//! (`<model>-generate_quantities-<id>`): the fitted rows' `__` columns, then the model's.

use super::{count, flag, text, ChainWriter, MethodCommon, MethodError, MethodOutput};
use hazel_density::Model;
use hazel_draws::{KeptDraws, Progress, Setting, StatColumn, Timing, TimingBlock};
use hazel_graph::CompiledModel;
use hazel_output::{FileNaming, StanCsv};
use hazel_rng::{Purpose, StreamRng};
use std::borrow::Cow;
use std::time::Instant;

/// The draws of one fitted chain.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FittedDraws {
    /// Where they came from (the header's `fitted_params`).
    pub source: String,
    /// The chain's id: its generated quantities draw from this id's stream.
    pub chain_id: u64,
    /// Every column: the algorithm's `__` columns, then the model's (CmdStan names).
    pub names: Vec<String>,
    /// Saved warmup rows (each `names.len()` values), recomputed first.
    pub warmup: Vec<Vec<f64>>,
    pub draws: Vec<Vec<f64>>,
    /// The fitted run's `num_warmup` and `thin` (recorded with saved warmup rows, so that
    /// readers can tell them apart).
    pub num_warmup: usize,
    pub thin: usize,
}

impl FittedDraws {
    /// A chain read back from a file (`read_stan_csv`, `read_draws`).
    pub fn from_csv(csv: &StanCsv) -> Self {
        let int = |key: &str, default: usize| {
            csv.config_int(key)
                .and_then(|v| usize::try_from(v).ok())
                .unwrap_or(default)
        };
        FittedDraws {
            source: csv.path.display().to_string(),
            chain_id: csv
                .config_int("id")
                .and_then(|v| u64::try_from(v).ok())
                .unwrap_or(1),
            names: csv.column_names.clone(),
            warmup: csv.warmup.clone(),
            draws: csv.draws.clone(),
            num_warmup: int("num_warmup", csv.warmup.len()),
            thin: int("thin", 1).max(1),
        }
    }

    fn settings(&self) -> Vec<Setting> {
        let mut s = vec![text(0, "fitted_params", &self.source, false)];
        if !self.warmup.is_empty() {
            // hazel's addition: CmdStan's file does not say which rows are warmup.
            s.push(flag(0, "save_warmup", true, false));
            s.push(count(0, "num_warmup", self.num_warmup, 1000));
            s.push(count(0, "thin", self.thin, 1));
        }
        s
    }
}

/// What `generate_quantities` wrote for one fitted chain.
#[derive(Debug)]
pub struct GenerateOutcome {
    pub rows: usize,
    /// Rows whose output could not be computed (written as NaN).
    pub failed_rows: usize,
    pub output: MethodOutput,
}

/// Recomputes the output rows of `fitted` (see the module's description).
pub fn generate_quantities(
    model: &CompiledModel,
    common: &MethodCommon,
    fitted: &FittedDraws,
    progress: &dyn Progress,
) -> Result<GenerateOutcome, MethodError> {
    let start = Instant::now();
    let n_stats = fitted
        .names
        .iter()
        .take_while(|n| n.ends_with("__"))
        .count();
    // A file does not record the statistics' kinds: reals write every count and flag as
    // CmdStan does.
    let stat_columns: Vec<StatColumn> = fitted.names[..n_stats]
        .iter()
        .map(|name| StatColumn {
            name: Cow::Owned(name.clone()),
            kind: hazel_draws::StatKind::Real,
        })
        .collect();
    let run = common.run_info(
        "generate_quantities",
        fitted.settings(),
        stat_columns,
        KeptDraws {
            warmup: fitted.warmup.len(),
            sampling: fitted.draws.len(),
        },
        fitted.chain_id,
        TimingBlock::None,
    );
    let outputs = common.open(model, &run, FileNaming::MethodChainIds)?;
    let names = model.output_names();
    let mut rng = StreamRng::new(common.seed, fitted.chain_id, Purpose::GeneratedQuantities);
    let mut out = vec![0.0; names.len()];
    let mut failed_rows = 0;
    for sink in outputs.sinks {
        let mut writer = ChainWriter::begin(sink, &run, &names)?;
        let rows = fitted
            .warmup
            .iter()
            .map(|r| (true, r))
            .chain(fitted.draws.iter().map(|r| (false, r)));
        for (k, (warmup, row)) in rows.enumerate() {
            if row.len() != fitted.names.len() {
                return Err(MethodError(format!(
                    "{}: row {} has {} values for {} columns",
                    fitted.source,
                    k + 1,
                    row.len(),
                    fitted.names.len()
                )));
            }
            if let Err(e) = model.write_output_from_row(&fitted.names, row, &mut rng, &mut out) {
                progress.message(0, &format!("{}: row {}: {e}", fitted.source, k + 1));
                out.iter_mut().for_each(|v| *v = f64::NAN);
                failed_rows += 1;
            }
            writer.draw(warmup, &row[..n_stats], &out)?;
        }
        writer.finish(Timing {
            warmup: Default::default(),
            sampling: start.elapsed(),
        })?;
    }
    Ok(GenerateOutcome {
        rows: fitted.warmup.len() + fitted.draws.len(),
        failed_rows,
        output: MethodOutput::collect(outputs.paths, &outputs.memory),
    })
}
