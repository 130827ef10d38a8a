//! Configuration, statistics and the draw sink: what the sampler shares with the output side.
//! Every setting of a run is a field here; hazel has no process-global configuration.

use crate::checkpoint::{vec_f64_bits, ChainCheckpoint, CheckpointPolicy};
use serde::{Deserialize, Serialize};
use std::io;
use std::time::Duration;

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
