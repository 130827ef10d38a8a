//! The sampler's configuration and per-iteration statistics, and how they describe a run to
//! the outputs ([`RunConfig::info`], [`DrawStats::values`]); the contract itself (sinks,
//! progress, timing, inverse metrics) is `hazel-draws`. Every setting of a run is a field here;
//! hazel has no process-global configuration.

use crate::checkpoint::CheckpointPolicy;
use hazel_draws::{KeptDraws, RunInfo, Setting, SettingValue, StatColumn, TimingBlock};

/// The draw contract, re-exported for convenience: code outside the sampler names
/// `hazel_draws` directly.
pub use hazel_draws::{DrawSink, InverseMetric, NoProgress, Progress, Timing};

/// Which mass matrix adaptation learns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    Diag,
    Dense,
}

/// Which transition each iteration makes (CmdStan's `algorithm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Algorithm {
    /// NUTS with Stan's adaptation (CmdStan's `hmc` / `nuts`).
    #[default]
    Nuts,
    /// The point never moves: every iteration only recomputes the output row (transformed
    /// parameters and generated quantities). What Stan runs for a model with no parameters;
    /// see [`crate::fixed_param`].
    FixedParam,
}

/// Stan's step-size and windowed adaptation settings, with Stan's names and defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct AdaptConfig {
    pub engaged: bool,
    pub delta: f64,
    pub gamma: f64,
    pub kappa: f64,
    pub t0: f64,
    pub init_buffer: usize,
    pub term_buffer: usize,
    pub window: usize,
}

impl Default for AdaptConfig {
    fn default() -> Self {
        AdaptConfig {
            engaged: true,
            delta: 0.8,
            gamma: 0.05,
            kappa: 0.75,
            t0: 10.0,
            init_buffer: 75,
            term_buffer: 50,
            window: 25,
        }
    }
}

/// How each chain's starting point is chosen.
#[derive(Debug, Clone, PartialEq)]
pub enum Init {
    /// Uniform(-radius, radius) per unconstrained coordinate (Stan's default radius is 2;
    /// radius 0 starts at the origin).
    Radius(f64),
    /// Explicit unconstrained starting points: one per chain, or one shared by all chains.
    Unconstrained(Vec<Vec<f64>>),
}

/// Settings of one chain's sampler.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplerConfig {
    pub algorithm: Algorithm,
    pub num_warmup: usize,
    pub num_samples: usize,
    pub thin: usize,
    pub save_warmup: bool,
    pub max_depth: u32,
    /// A proposal whose energy error exceeds this is divergent (Stan: 1000).
    pub max_energy_error: f64,
    pub metric: MetricKind,
    /// Initial step size (Stan: 1), re-tuned by the heuristic at the start of warmup.
    pub stepsize: f64,
    /// Optional warm-start inverse metric (otherwise the identity).
    pub inv_metric: Option<InverseMetric>,
    pub adapt: AdaptConfig,
    pub init: Init,
    /// Attempts at finding a finite initial log density and gradient (Stan: 100).
    pub init_attempts: usize,
}

impl Default for SamplerConfig {
    fn default() -> Self {
        SamplerConfig {
            algorithm: Algorithm::Nuts,
            num_warmup: 1000,
            num_samples: 1000,
            thin: 1,
            save_warmup: false,
            max_depth: 10,
            max_energy_error: 1000.0,
            metric: MetricKind::Diag,
            stepsize: 1.0,
            inv_metric: None,
            adapt: AdaptConfig::default(),
            init: Init::Radius(2.0),
            init_attempts: 100,
        }
    }
}

/// A whole run: several chains of one sampler configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct RunConfig {
    pub seed: u64,
    pub chains: usize,
    /// Worker threads for chains (0 = all cores). Never changes the draws.
    pub threads: usize,
    /// Chain ids are `first_chain_id .. first_chain_id + chains` (CmdStan's `id`, default 1).
    pub first_chain_id: u64,
    pub sampler: SamplerConfig,
    /// When chains hand checkpoints to their sinks (off by default). Never changes the draws.
    pub checkpoint: CheckpointPolicy,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            seed: 0,
            chains: 4,
            threads: 0,
            first_chain_id: 1,
            sampler: SamplerConfig::default(),
            checkpoint: CheckpointPolicy::default(),
        }
    }
}

/// The sampler's statistics for one iteration: CmdStan's `__` columns, in CmdStan's order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DrawStats {
    pub lp: f64,
    pub accept_stat: f64,
    pub stepsize: f64,
    pub treedepth: u32,
    pub n_leapfrog: u32,
    pub divergent: bool,
    pub energy: f64,
}

/// NUTS's statistic columns, as CmdStan writes them, in [`DrawStats::values`] order.
static NUTS_COLUMNS: [StatColumn; 7] = [
    StatColumn::real("lp__"),
    StatColumn::real("accept_stat__"),
    StatColumn::real("stepsize__"),
    StatColumn::integer("treedepth__"),
    StatColumn::integer("n_leapfrog__"),
    StatColumn::flag("divergent__"),
    StatColumn::real("energy__"),
];

impl DrawStats {
    /// NUTS's statistic columns, as CmdStan writes them, in [`DrawStats::values`] order.
    pub fn columns() -> &'static [StatColumn] {
        &NUTS_COLUMNS
    }

    /// The statistics as numbers, in the order of [`DrawStats::columns()`] (integers and the
    /// divergence flag as f64): what a sink receives.
    pub fn values(&self) -> [f64; 7] {
        [
            self.lp,
            self.accept_stat,
            self.stepsize,
            f64::from(self.treedepth),
            f64::from(self.n_leapfrog),
            f64::from(u8::from(self.divergent)),
            self.energy,
        ]
    }

    /// The statistics back from [`DrawStats::values`]'s numbers (fixed_param's two columns
    /// leave the rest 0).
    pub fn from_values(values: &[f64]) -> DrawStats {
        let at = |k: usize| values.get(k).copied().unwrap_or(0.0);
        DrawStats {
            lp: at(0),
            accept_stat: at(1),
            stepsize: at(2),
            treedepth: at(3) as u32,
            n_leapfrog: at(4) as u32,
            divergent: at(5) != 0.0,
            energy: at(6),
        }
    }
}

impl Algorithm {
    /// The statistic columns this algorithm writes: NUTS's seven ([`DrawStats::columns()`]), or
    /// fixed_param's first two (CmdStan's `lp__` and `accept_stat__`, both 0).
    pub fn stat_columns(self) -> &'static [StatColumn] {
        match self {
            Algorithm::Nuts => DrawStats::columns(),
            Algorithm::FixedParam => &DrawStats::columns()[..2],
        }
    }
}

impl RunConfig {
    /// Switches the run to Stan's fixed_param sampler, which runs no warmup (CmdStan ignores
    /// `num_warmup` for it too).
    pub fn use_fixed_param(&mut self) {
        self.sampler.algorithm = Algorithm::FixedParam;
        self.sampler.num_warmup = 0;
        self.sampler.save_warmup = false;
    }

    /// The run as its outputs describe it: CmdStan's `sample` method with its settings in
    /// CmdStan's order and `(Default)` marks, the algorithm's statistic columns, and the draws
    /// each chain keeps.
    pub fn info(&self) -> RunInfo {
        let s = &self.sampler;
        let thin = s.thin.max(1);
        RunInfo {
            method: "sample".into(),
            settings: s.cmdstan_settings(),
            stat_columns: s.algorithm.stat_columns().to_vec(),
            kept: KeptDraws {
                warmup: if s.save_warmup {
                    s.num_warmup.div_ceil(thin)
                } else {
                    0
                },
                sampling: s.num_samples.div_ceil(thin),
            },
            seed: self.seed,
            init: match &s.init {
                Init::Radius(radius) => SettingValue::Real(*radius),
                Init::Unconstrained(_) => SettingValue::Text("user".into()),
            },
            first_chain_id: self.first_chain_id,
            chains: self.chains,
            timing: TimingBlock::Phases {
                first: "Warm-up",
                second: "Sampling",
            },
        }
    }
}

impl SamplerConfig {
    /// The settings of CmdStan's `sample` section for this configuration.
    pub fn cmdstan_settings(&self) -> Vec<Setting> {
        use SettingValue::{Real, Text};
        let defaults = SamplerConfig::default();
        let (a, d) = (&self.adapt, &defaults.adapt);
        let count = SettingValue::count;
        let flag = SettingValue::flag;
        let mut list = vec![
            Setting::value(
                0,
                "num_samples",
                count(self.num_samples),
                self.num_samples == defaults.num_samples,
            ),
            Setting::value(
                0,
                "num_warmup",
                count(self.num_warmup),
                self.num_warmup == defaults.num_warmup,
            ),
            Setting::value(
                0,
                "save_warmup",
                flag(self.save_warmup),
                self.save_warmup == defaults.save_warmup,
            ),
            Setting::value(0, "thin", count(self.thin), self.thin == defaults.thin),
            Setting::section(0, "adapt"),
            Setting::value(1, "engaged", flag(a.engaged), a.engaged == d.engaged),
            Setting::value(1, "gamma", Real(a.gamma), a.gamma == d.gamma),
            Setting::value(1, "delta", Real(a.delta), a.delta == d.delta),
            Setting::value(1, "kappa", Real(a.kappa), a.kappa == d.kappa),
            Setting::value(1, "t0", Real(a.t0), a.t0 == d.t0),
            Setting::value(
                1,
                "init_buffer",
                count(a.init_buffer),
                a.init_buffer == d.init_buffer,
            ),
            Setting::value(
                1,
                "term_buffer",
                count(a.term_buffer),
                a.term_buffer == d.term_buffer,
            ),
            Setting::value(1, "window", count(a.window), a.window == d.window),
            Setting::value(1, "save_metric", flag(false), true),
        ];
        match self.algorithm {
            Algorithm::FixedParam => list.push(Setting::value(
                0,
                "algorithm",
                Text("fixed_param".into()),
                false,
            )),
            Algorithm::Nuts => {
                let metric = match self.metric {
                    MetricKind::Diag => "diag_e",
                    MetricKind::Dense => "dense_e",
                };
                list.extend([
                    Setting::value(0, "algorithm", Text("hmc".into()), true),
                    Setting::section(1, "hmc"),
                    Setting::value(2, "engine", Text("nuts".into()), true),
                    Setting::section(3, "nuts"),
                    Setting::value(
                        4,
                        "max_depth",
                        SettingValue::Integer(i64::from(self.max_depth)),
                        self.max_depth == defaults.max_depth,
                    ),
                    Setting::value(
                        2,
                        "metric",
                        Text(metric.into()),
                        self.metric == defaults.metric,
                    ),
                    Setting::value(2, "metric_file", Text("".into()), self.inv_metric.is_none()),
                    Setting::value(
                        2,
                        "stepsize",
                        Real(self.stepsize),
                        self.stepsize == defaults.stepsize,
                    ),
                    Setting::value(2, "stepsize_jitter", SettingValue::Integer(0), true),
                ]);
            }
        }
        list.push(Setting::value(
            0,
            "num_chains",
            SettingValue::Integer(1),
            true,
        ));
        list
    }
}
