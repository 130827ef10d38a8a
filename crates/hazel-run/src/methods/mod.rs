//! CmdStan's other methods as jobs: `optimize`, `laplace`, `variational` (ADVI), `pathfinder`
//! and `generate_quantities`, each from a configuration to outputs chosen by an
//! [`OutputConfig`] (Stan CSV in CmdStan's layout, Parquet, Zarr, memory), the same way
//! [`crate::sample`] runs NUTS. `hazel optimize | laplace | variational | pathfinder |
//! generate-quantities` parse their arguments into these and print what comes back; the Python
//! package calls them directly.
//!
//! Every method describes its run once as a [`RunInfo`] (CmdStan's method name, its settings
//! in CmdStan's order with `(Default)` marks, its statistic columns, how many draws it keeps,
//! how its time is reported) and hands its rows to one [`hazel_draws::DrawSink`] per output
//! file, so no output knows which method ran.
//!
//! Determinism: every random number comes from a stream of (seed, id, purpose): the initial
//! point from `Init`, the algorithm's draws from `Sampler`, generated quantities from
//! `GeneratedQuantities` of the row's id, Pathfinder's resampling from `Resample`.

pub mod generate;
pub mod laplace;
pub mod optimize;
pub mod pathfinder;
pub mod variational;

use hazel_data::DataFile;
use hazel_density::{LogDensity, Model};
use hazel_draws::{
    AdaptationInfo, ChainDraws, Columns, Draw, DrawSink, KeptDraws, MemoryDraws, Progress, RunInfo,
    Setting, SettingValue, StatColumn, Timing, TimingBlock,
};
use hazel_graph::CompiledModel;
use hazel_nuts::init::initialize;
use hazel_nuts::Init;
use hazel_output::{FileNaming, OutputConfig, Outputs};
use hazel_rng::{Purpose, StreamRng};
use std::borrow::Cow;
use std::fmt;
use std::path::PathBuf;

/// Why a method failed. Draws written before the failure stay in the outputs.
#[derive(Debug, Clone, PartialEq)]
pub struct MethodError(pub String);

impl fmt::Display for MethodError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for MethodError {}

impl From<std::io::Error> for MethodError {
    fn from(e: std::io::Error) -> Self {
        MethodError(e.to_string())
    }
}

impl From<String> for MethodError {
    fn from(e: String) -> Self {
        MethodError(e)
    }
}

/// Where a method starts: Stan's random initialisation within a radius, or given constrained
/// values (parameters they leave out drawn as with the radius 2).
#[derive(Debug, Clone)]
pub enum InitialValues {
    /// Uniform in (−radius, radius) on the unconstrained scale (CmdStan's default 2).
    Radius(f64),
    /// Constrained values (a CmdStan JSON file's contents); `source` is what the CSV header
    /// says (`init = <source>`).
    Values { values: DataFile, source: String },
}

impl InitialValues {
    /// CmdStan's `init` setting.
    pub fn setting(&self) -> SettingValue {
        match self {
            InitialValues::Radius(r) => SettingValue::Real(*r),
            InitialValues::Values { source, .. } => SettingValue::Text(source.clone().into()),
        }
    }
}

/// What every method takes besides its own settings.
#[derive(Debug, Clone)]
pub struct MethodCommon {
    /// The run's seed (CmdStan's `random seed`).
    pub seed: u64,
    pub init: InitialValues,
    /// Where the rows go. Files are named by the method (`<model>-<method>.csv`); a
    /// `naming` given here is replaced.
    pub output: OutputConfig,
}

impl MethodCommon {
    /// The unconstrained starting point of chain or path `id`: Stan's initialisation (up to
    /// 100 attempts, from the `Init` stream of `id`), or the given values.
    pub fn initial_point(&self, model: &CompiledModel, id: u64) -> Result<Vec<f64>, MethodError> {
        let init = match &self.init {
            InitialValues::Radius(r) => Init::Radius(*r),
            InitialValues::Values { values, source } => {
                let mut rng = StreamRng::new(self.seed, id, Purpose::Init);
                let q = model
                    .unconstrain_inits(values, || rng.uniform_range(-2.0, 2.0))
                    .map_err(|e| MethodError(format!("init {source}: {}", e.message)))?;
                Init::Unconstrained(vec![q])
            }
        };
        let mut ws = model.new_workspace();
        let point = initialize(model, &mut ws, &init, 100, self.seed, id, 0)
            .map_err(|e| MethodError(e.to_string()))?;
        Ok(point.position)
    }

    /// The run's description for `method` with one output, of id `id` (every method writes
    /// one output per run; Pathfinder's single paths and generated quantities per fitted chain
    /// are runs of their own).
    pub(crate) fn run_info(
        &self,
        method: &'static str,
        settings: Vec<Setting>,
        stat_columns: Vec<StatColumn>,
        kept: KeptDraws,
        id: u64,
        timing: TimingBlock,
    ) -> RunInfo {
        RunInfo {
            method: method.into(),
            settings,
            stat_columns,
            kept,
            seed: self.seed,
            init: self.init.setting(),
            first_chain_id: id,
            chains: 1,
            timing,
        }
    }

    /// Every output of `run` (files named `naming`), created now.
    pub(crate) fn open(
        &self,
        model: &CompiledModel,
        run: &RunInfo,
        naming: FileNaming,
    ) -> Result<Outputs, MethodError> {
        let mut output = self.output.clone();
        if let Some(files) = &mut output.files {
            files.naming = naming;
        }
        Ok(output.open(run, &model.output_names(), &[])?)
    }
}

/// Output rows (parameters, transformed parameters, generated quantities) of unconstrained
/// points, generated quantities from the `GeneratedQuantities` stream of one id.
pub(crate) struct OutputRows<'m> {
    model: &'m CompiledModel,
    ws: <CompiledModel as LogDensity>::Workspace,
    rng: StreamRng,
    row: Vec<f64>,
}

impl<'m> OutputRows<'m> {
    pub fn new(model: &'m CompiledModel, seed: u64, id: u64) -> Self {
        OutputRows {
            model,
            ws: model.new_workspace(),
            rng: StreamRng::new(seed, id, Purpose::GeneratedQuantities),
            row: vec![0.0; model.output_names().len()],
        }
    }

    /// The row of `q`; a row the model cannot compute (a failed check in generated quantities)
    /// is NaN, with the message to `progress`, as the sampler does.
    pub fn row(&mut self, q: &[f64], progress: &dyn Progress, index: usize) -> &[f64] {
        if let Err(e) = self
            .model
            .write_output(&mut self.ws, q, &mut self.rng, &mut self.row)
        {
            progress.message(index, &format!("output row: {e}"));
            self.row.iter_mut().for_each(|v| *v = f64::NAN);
        }
        &self.row
    }
}

/// One output's rows: its sink, begun with the run's columns.
pub(crate) struct ChainWriter {
    sink: Box<dyn DrawSink>,
}

impl ChainWriter {
    pub(crate) fn begin(
        mut sink: Box<dyn DrawSink>,
        run: &RunInfo,
        names: &[String],
    ) -> Result<Self, MethodError> {
        sink.begin(&Columns {
            stats: &run.stat_columns,
            values: names,
        })?;
        Ok(ChainWriter { sink })
    }

    pub(crate) fn adaptation(&mut self, info: &AdaptationInfo<'_>) -> Result<(), MethodError> {
        Ok(self.sink.adaptation_done(info)?)
    }

    /// A row after warmup (or, `warmup`, a saved warmup row).
    pub(crate) fn draw(
        &mut self,
        warmup: bool,
        stats: &[f64],
        values: &[f64],
    ) -> Result<(), MethodError> {
        Ok(self.sink.draw(&Draw {
            warmup,
            stats,
            values,
        })?)
    }

    pub(crate) fn finish(mut self, timing: Timing) -> Result<(), MethodError> {
        Ok(self.sink.finish(&timing)?)
    }
}

/// What a method's outputs hold when it returns.
#[derive(Debug, Default)]
pub struct MethodOutput {
    /// The files written (one per output, or the one Zarr store).
    pub paths: Vec<PathBuf>,
    /// Each output's rows when memory was asked for, in output order.
    pub draws: Vec<ChainDraws>,
}

impl MethodOutput {
    pub(crate) fn collect(paths: Vec<PathBuf>, memory: &[MemoryDraws]) -> Self {
        MethodOutput {
            paths,
            draws: memory.iter().map(MemoryDraws::take).collect(),
        }
    }
}

/// CmdStan's line-search and convergence settings of L-BFGS and BFGS (Pathfinder's too) at
/// `depth`, with its defaults marked.
pub(crate) fn tolerance_settings(
    depth: usize,
    init_alpha: f64,
    c: &hazel_approx::ConvergenceOptions,
) -> Vec<Setting> {
    let d = hazel_approx::ConvergenceOptions::default();
    vec![
        real(depth, "init_alpha", init_alpha, 0.001),
        real(depth, "tol_obj", c.tol_obj, d.tol_obj),
        real(depth, "tol_rel_obj", c.tol_rel_obj, d.tol_rel_obj),
        real(depth, "tol_grad", c.tol_grad, d.tol_grad),
        real(depth, "tol_rel_grad", c.tol_rel_grad, d.tol_rel_grad),
        real(depth, "tol_param", c.tol_param, d.tol_param),
    ]
}

/// Checks CmdStan's tolerance options: finite and ≥ 0, `init_alpha` > 0.
pub(crate) fn check_tolerances(
    init_alpha: f64,
    c: &hazel_approx::ConvergenceOptions,
) -> Result<(), MethodError> {
    for (name, v) in [
        ("init_alpha", init_alpha),
        ("tol_obj", c.tol_obj),
        ("tol_rel_obj", c.tol_rel_obj),
        ("tol_grad", c.tol_grad),
        ("tol_rel_grad", c.tol_rel_grad),
        ("tol_param", c.tol_param),
    ] {
        if !(v >= 0.0 && v.is_finite()) {
            return Err(MethodError(format!(
                "{name} = {v}: must be a finite number ≥ 0"
            )));
        }
    }
    if init_alpha == 0.0 {
        return Err(MethodError("init_alpha must be positive".to_string()));
    }
    Ok(())
}

/// An integer setting.
pub(crate) fn count(depth: usize, key: &'static str, value: usize, default: usize) -> Setting {
    Setting::value(depth, key, SettingValue::count(value), value == default)
}

/// A real setting.
pub(crate) fn real(depth: usize, key: &'static str, value: f64, default: f64) -> Setting {
    Setting::value(depth, key, SettingValue::Real(value), value == default)
}

/// A flag setting (`0`/`1`).
pub(crate) fn flag(depth: usize, key: &'static str, value: bool, default: bool) -> Setting {
    Setting::value(depth, key, SettingValue::flag(value), value == default)
}

/// A text setting.
pub(crate) fn text(depth: usize, key: &'static str, value: &str, default: bool) -> Setting {
    Setting::value(
        depth,
        key,
        SettingValue::Text(Cow::Owned(value.to_string())),
        default,
    )
}
