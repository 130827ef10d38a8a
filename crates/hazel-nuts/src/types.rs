//! Configuration, statistics and the draw sink: what the sampler shares with the output side.
//! Every setting of a run is a field here; hazel has no process-global configuration.

use crate::checkpoint::{vec_f64_bits, ChainCheckpoint, CheckpointPolicy};
use serde::{Deserialize, Serialize};
use std::io;
use std::time::Duration;

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

/// An inverse metric (the mass matrix's inverse, an estimate of the posterior covariance).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum InverseMetric {
    /// Diagonal: one variance per dimension.
    Diag(#[serde(with = "vec_f64_bits")] Vec<f64>),
    /// Dense: `dim × dim`, row-major, symmetric positive definite.
    Dense {
        dim: usize,
        #[serde(with = "vec_f64_bits")]
        values: Vec<f64>,
    },
    /// Low-rank plus diagonal, `D (I + U (Λ − I) Uᵀ) D` with `D = diag(scale)`; `vectors` holds
    /// the `values.len()` orthonormal columns of `U` one after the other (`dim` entries each).
    LowRank {
        #[serde(with = "vec_f64_bits")]
        scale: Vec<f64>,
        #[serde(with = "vec_f64_bits")]
        values: Vec<f64>,
        #[serde(with = "vec_f64_bits")]
        vectors: Vec<f64>,
    },
}

impl InverseMetric {
    /// The dimension of the space.
    pub fn dim(&self) -> usize {
        match self {
            InverseMetric::Diag(values) => values.len(),
            InverseMetric::Dense { dim, .. } => *dim,
            InverseMetric::LowRank { scale, .. } => scale.len(),
        }
    }

    /// The metric as CmdStan's files hold it: a diagonal stays diagonal, a low-rank one becomes
    /// its dense `dim × dim` matrix (row-major), which is what `dense_e` readers expect.
    pub fn to_stan_form(&self) -> std::borrow::Cow<'_, InverseMetric> {
        match self {
            InverseMetric::Diag(_) | InverseMetric::Dense { .. } => {
                std::borrow::Cow::Borrowed(self)
            }
            InverseMetric::LowRank {
                scale,
                values,
                vectors,
            } => {
                let dim = scale.len();
                let mut dense = vec![0.0; dim * dim];
                for i in 0..dim {
                    dense[i * dim + i] = 1.0;
                }
                for (k, &lambda) in values.iter().enumerate() {
                    let u = &vectors[k * dim..(k + 1) * dim];
                    for i in 0..dim {
                        for j in 0..dim {
                            dense[i * dim + j] += (lambda - 1.0) * u[i] * u[j];
                        }
                    }
                }
                for i in 0..dim {
                    for j in 0..dim {
                        dense[i * dim + j] *= scale[i] * scale[j];
                    }
                }
                // Exactly symmetric, as a dense_e reader checks.
                for i in 0..dim {
                    for j in 0..i {
                        dense[j * dim + i] = dense[i * dim + j];
                    }
                }
                std::borrow::Cow::Owned(InverseMetric::Dense { dim, values: dense })
            }
        }
    }
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

impl DrawStats {
    /// The columns the fixed_param sampler writes (CmdStan's: `lp__` and `accept_stat__`,
    /// both 0).
    pub const FIXED_PARAM_NAMES: [&'static str; 2] = ["lp__", "accept_stat__"];

    /// Column names of the statistics, as CmdStan writes them.
    pub const NAMES: [&'static str; 7] = [
        "lp__",
        "accept_stat__",
        "stepsize__",
        "treedepth__",
        "n_leapfrog__",
        "divergent__",
        "energy__",
    ];

    /// The statistics as numbers, in the order of [`DrawStats::NAMES`] (integers and the
    /// divergence flag as f64), for outputs that store every column as f64.
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
}

/// Wall-clock time spent in each phase of a chain.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Timing {
    pub warmup: Duration,
    pub sampling: Duration,
}

/// Receives one chain's output as it is produced. One sink per chain; the runner calls it from
/// the thread running that chain, in iteration order.
pub trait DrawSink: Send {
    /// Before the first draw: the model's output column names (after the `__` columns).
    fn begin(&mut self, names: &[String]) -> io::Result<()>;
    /// After warmup, with the adapted step size and inverse metric (also called, with the
    /// initial values, when adaptation is off).
    fn adaptation_done(&mut self, stepsize: f64, inv_metric: &InverseMetric) -> io::Result<()>;
    /// One kept iteration (warmup iterations only when `save_warmup`).
    fn draw(&mut self, warmup: bool, stats: &DrawStats, values: &[f64]) -> io::Result<()>;
    /// After the last draw; also when the chain stops early (an error in the model, in this
    /// sink, or another chain's fatal error) after `begin` succeeded, so that what was written can
    /// be flushed.
    fn finish(&mut self, timing: &Timing) -> io::Result<()>;
    /// Makes everything written so far durable and stores `checkpoint` as the point to resume
    /// from: between iterations at the cadence of [`RunConfig::checkpoint`], and once more,
    /// with no chain state, after a successful `finish`. A sink that cannot resume ignores it.
    fn checkpoint(&mut self, checkpoint: &ChainCheckpoint) -> io::Result<()> {
        let _ = checkpoint;
        Ok(())
    }
}

/// Observes progress of all chains (a progress bar, periodic log lines). Shared across threads,
/// so it takes `&self`; it never influences the draws.
pub trait Progress: Sync {
    /// Called after every iteration of chain `chain` (0-based index within the run).
    /// `iteration` counts from 1 over warmup + sampling; `divergences` counts the divergent
    /// iterations of the current phase only (warmup, or sampling after warmup).
    fn iteration(&self, chain: usize, iteration: usize, warmup: bool, divergences: usize);
    /// A rejected proposal's message (the observer rate-limits what it shows).
    fn message(&self, chain: usize, message: &str) {
        let _ = (chain, message);
    }
}

/// A progress observer that shows nothing (`--quiet`).
pub struct NoProgress;

impl Progress for NoProgress {
    fn iteration(&self, _: usize, _: usize, _: bool, _: usize) {}
}
