//! The sampler's configuration and per-iteration statistics, and how they describe a run to
//! the outputs ([`RunConfig::info`], [`DrawStats::values`]); the contract itself (sinks,
//! progress, timing, inverse metrics) is `hazel-draws`. Every setting of a run is a field here;
//! hazel has no process-global configuration.

use crate::checkpoint::CheckpointPolicy;
use hazel_draws::{
    low_rank_stan_name, KeptDraws, RunInfo, Setting, SettingValue, StatColumn, TimingBlock,
};

/// The draw contract, re-exported for convenience: code outside the sampler names
/// `hazel_draws` directly.
pub use hazel_draws::{DrawSink, InverseMetric, NoProgress, Progress, Timing};

/// The form of the metric (CmdStan's `unit_e`, `diag_e`, `dense_e`, and hazel's low-rank plus
/// diagonal form, which only [`AdaptMethod::LowRank`] learns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    /// The identity, never adapted (only the step size is).
    Unit,
    Diag,
    Dense,
    /// `M⁻¹ = D (I + U (Λ − I) Uᵀ) D`: a diagonal scale `D` and a few eigen-directions `U`
    /// with their variances `Λ` in the scaled space (see [`crate::metric`]).
    LowRank,
}

impl MetricKind {
    /// CmdStan's name of the metric, for a model of `dim` unconstrained dimensions. A low-rank
    /// metric is a dense one (`D (I + U (Λ − I) Uᵀ) D`), written as the form its adaptation
    /// block takes: `dense_e` up to [`hazel_draws::LOW_RANK_DENSE_MAX_DIM`] dimensions, `diag_e`
    /// (its diagonal, the factors after the timing block) above ([`low_rank_stan_name`]).
    pub fn cmdstan_name(self, dim: usize) -> &'static str {
        match self {
            MetricKind::Unit => "unit_e",
            MetricKind::Diag => "diag_e",
            MetricKind::Dense => "dense_e",
            MetricKind::LowRank => low_rank_stan_name(dim),
        }
    }
}

/// How warmup learns the metric (`hazel sample --adaptation`); see [`crate::adapt`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AdaptMethod {
    /// Stan's windowed scheme: the draws' (co)variance over doubling windows.
    #[default]
    Stan,
    /// nutpie's diagonal: per coordinate `sqrt(Var[draw] / Var[gradient])`, the diagonal
    /// minimiser of the Fisher divergence, updated every iteration from overlapping windows.
    DiagGrad,
    /// nutpie's low-rank plus diagonal metric, from the draws' and gradients' covariances.
    LowRank,
}

impl AdaptMethod {
    /// The `--adaptation` value naming this method (also in the CSV header).
    pub fn name(self) -> &'static str {
        match self {
            AdaptMethod::Stan => "stan",
            AdaptMethod::DiagGrad => "diag-grad",
            AdaptMethod::LowRank => "low-rank",
        }
    }

    /// The metric form this method learns, given the requested one (`Stan` learns any).
    pub fn metric_kind(self, requested: MetricKind) -> MetricKind {
        match self {
            AdaptMethod::Stan => requested,
            AdaptMethod::DiagGrad => MetricKind::Diag,
            AdaptMethod::LowRank => MetricKind::LowRank,
        }
    }
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

/// Warmup's adaptation settings: the method, then Stan's step-size and window settings with
/// Stan's names and defaults (the windows apply to [`AdaptMethod::Stan`] only).
#[derive(Debug, Clone, PartialEq)]
pub struct AdaptConfig {
    pub engaged: bool,
    pub method: AdaptMethod,
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
            method: AdaptMethod::Stan,
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

/// Random starting points each chain screens by default (see [`crate::init`]): enough that a
/// start in a region the sampler cannot leave is all but never chosen (arma11: 3 of 20 runs
/// had a frozen chain with 1, none with 4), few enough that the chains' starts stay spread.
pub const DEFAULT_INIT_CANDIDATES: usize = 4;

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
    /// Each transition's step size is drawn uniformly from `stepsize · (1 ± stepsize_jitter)`
    /// (CmdStan's `stepsize_jitter`, in [0, 1]; 0, the default, draws nothing).
    pub stepsize_jitter: f64,
    /// Warm-start inverse metrics: none (the identity, or for the gradient-based adaptations
    /// the scale of the initial gradient), one shared by all chains, or one per chain (row
    /// `chain_index`), as CmdStan's `metric_file` with its per-chain `_<id>` files.
    pub inv_metric: Vec<InverseMetric>,
    pub adapt: AdaptConfig,
    pub init: Init,
    /// Attempts at finding a finite initial log density and gradient (Stan: 100).
    pub init_attempts: usize,
    /// Random starting points screened per chain, the one of highest log density kept (1 is
    /// Stan's rule: the first finite one; hazel's default is [`DEFAULT_INIT_CANDIDATES`]); see
    /// [`crate::init`].
    pub init_candidates: usize,
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
            stepsize_jitter: 0.0,
            inv_metric: Vec::new(),
            adapt: AdaptConfig::default(),
            init: Init::Radius(2.0),
            init_attempts: 100,
            init_candidates: DEFAULT_INIT_CANDIDATES,
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
    /// Chains stepped in lockstep on one thread, their model evaluations made by one
    /// `log_density_gradient_batch` call per round (1 = every chain on its own). Chains
    /// `k·K .. (k+1)·K` form group `k`. Never changes the draws.
    pub batch_chains: usize,
    /// What a chain of a lockstep group does when its iteration ends before the others'.
    pub lockstep: Lockstep,
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
            batch_chains: 1,
            lockstep: Lockstep::default(),
        }
    }
}

/// How the chains of a lockstep group ([`RunConfig::batch_chains`]) stay together. NUTS
/// trajectories differ in length, so the chains of a group finish their iterations at
/// different rounds; neither choice changes a draw, only how full the batched calls are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lockstep {
    /// A chain whose iteration is over writes its draw and begins its next iteration at once,
    /// so every round evaluates every chain that is not finished (the default: the batches stay
    /// full; see `bench/src/bin/lockstep.rs` for the measurement).
    #[default]
    Desynchronised,
    /// A chain whose iteration is over waits (is left out of the batch) until every chain of its
    /// group has ended the same iteration; the group then begins the next one together.
    Masked,
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

    /// [`RunConfig::info_for_dim`] where the model's dimension does not matter (chain ids, file
    /// names) or is small: a low-rank metric is named as for a model of at most
    /// [`hazel_draws::LOW_RANK_DENSE_MAX_DIM`] dimensions (`dense_e`).
    pub fn info(&self) -> RunInfo {
        self.info_for_dim(0)
    }

    /// The run as the outputs of a model with `dim` unconstrained dimensions describe it:
    /// CmdStan's `sample` method with its settings in CmdStan's order and `(Default)` marks
    /// (the metric's name depends on `dim`: [`MetricKind::cmdstan_name`]), the algorithm's
    /// statistic columns, and the draws each chain keeps.
    pub fn info_for_dim(&self, dim: usize) -> RunInfo {
        let s = &self.sampler;
        let thin = s.thin.max(1);
        RunInfo {
            method: "sample".into(),
            settings: s.cmdstan_settings(dim),
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
    /// The settings of CmdStan's `sample` section for this configuration, for a model of `dim`
    /// unconstrained dimensions.
    pub fn cmdstan_settings(&self, dim: usize) -> Vec<Setting> {
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
            // hazel's: which method learns the metric (`--adaptation`).
            Setting::value(
                1,
                "adaptation",
                Text(a.method.name().into()),
                a.method == d.method,
            ),
        ];
        match self.algorithm {
            Algorithm::FixedParam => list.push(Setting::value(
                0,
                "algorithm",
                Text("fixed_param".into()),
                false,
            )),
            Algorithm::Nuts => {
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
                        Text(self.metric.cmdstan_name(dim).into()),
                        self.metric == defaults.metric,
                    ),
                    // The file's name is the caller's to fill in (RunInfo::set_setting).
                    Setting::value(
                        2,
                        "metric_file",
                        Text("".into()),
                        self.inv_metric.is_empty(),
                    ),
                    Setting::value(
                        2,
                        "stepsize",
                        Real(self.stepsize),
                        self.stepsize == defaults.stepsize,
                    ),
                    Setting::value(
                        2,
                        "stepsize_jitter",
                        Real(self.stepsize_jitter),
                        self.stepsize_jitter == defaults.stepsize_jitter,
                    ),
                ]);
            }
        }
        list.push(Setting::value(
            0,
            "num_chains",
            SettingValue::Integer(1),
            true,
        ));
        // hazel's: random starts screened per chain (`--init-candidates`).
        list.push(Setting::value(
            0,
            "init_candidates",
            count(self.init_candidates),
            self.init_candidates == defaults.init_candidates,
        ));
        list
    }
}
