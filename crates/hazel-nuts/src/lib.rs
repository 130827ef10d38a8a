//! NUTS with Stan's windowed adaptation or nutpie's gradient-based ones, as a pure `init` /
//! `step` pair over explicit state, and a runner that puts chains on a thread pool.
//!
//! # Layers
//!
//! * [`nuts`] — one transition: [`nuts::nuts_step`] maps a [`nuts::NutsState`] (position,
//!   log density, gradient and every preallocated trajectory buffer), a [`metric::Metric`], a
//!   step size and a random stream to the next state and the iteration's statistics. The
//!   trajectory is built iteratively (no recursion, no allocation), and the transition can be
//!   split at every model evaluation ([`nuts::NutsState::begin_transition`] /
//!   [`nuts::NutsState::resume_transition`]) so a batched backend can evaluate many chains'
//!   points in one call while each chain keeps its own state and random stream. Also Stan's
//!   step-size heuristic, [`nuts::find_reasonable_stepsize`].
//! * [`metric`] — unit, diagonal, dense and low-rank plus diagonal Euclidean metrics (the dense
//!   one's Cholesky factor from `hazel_math::linalg::cholesky_lower_row_major`).
//! * [`adapt`] — warmup adaptation wrapping the transition: dual averaging of the step size;
//!   Stan's slow-window schedule with Welford (co)variance estimators and Stan's
//!   regularisation; nutpie's Fisher-divergence metrics from draws and gradients (diagonal, and
//!   low-rank plus diagonal) on overlapping windows.
//! * [`init`] — Stan's initialisation: random points in `(-r, r)` or user values, retried up to
//!   `init_attempts` times, one clear error on failure.
//! * [`fixed_param`] — Stan's `fixed_param` sampler (the point never moves; for models with
//!   no parameters).
//! * [`chain`] — a [`chain::Chain`] strings these together for one chain, iteration by iteration,
//!   following Stan's `run_adaptive_sampler`.
//! * [`checkpoint`] — a chain's whole state between iterations ([`chain::Chain::snapshot`] /
//!   [`chain::Chain::restore`]), to checkpoint a run and resume it bit for bit.
//! * [`run()`] — all chains of a run on a private rayon pool, each into its own
//!   [`hazel_draws::DrawSink`]: each chain alone, or K chains in lockstep
//!   ([`types::RunConfig::batch_chains`]) whose model evaluations are made K at a time by the
//!   model's batched entry point, with the same draws bit for bit.
//!
//! The pieces below the runner are public so that another driver (a GPU sampler, say) can reuse
//! the same state, adaptation and statistics without the runner.
//!
//! # Where hazel follows Stan and where it differs
//!
//! Every statistic and adaptation rule is Stan's (see each module). Differences that do not
//! change the distribution of the output: random numbers come from hazel's own streams
//! (`hazel_rng`, ChaCha8), so draws are not bit-identical to Stan's; the multinomial draw inside
//! a subtree is made progressively leaf by leaf instead of at each merge (same distribution, see
//! [`nuts`]).
//!
//! The sampler's side of the draw contract (`hazel-draws`) is in [`types`]: the run
//! configuration, which describes the run to the outputs ([`RunConfig::info`]: CmdStan's
//! `sample` settings, the statistic columns, the draws kept), and the per-iteration
//! [`DrawStats`] that reach each chain's [`hazel_draws::DrawSink`] as numbers in
//! [`DrawStats::columns`] order. The contract's types (`DrawSink`, `Progress`, `Timing`,
//! `InverseMetric`) are re-exported here for convenience.

#![forbid(unsafe_code)]

pub mod adapt;
pub mod chain;
pub mod checkpoint;
pub mod fixed_param;
pub mod init;
pub mod metric;
pub mod nuts;
pub mod run;
pub mod types;

pub use chain::{Chain, ChainError, Iteration, IterationStatus};
pub use checkpoint::{ChainCheckpoint, ChainCounters, ChainStart, ChainState, CheckpointPolicy};
pub use init::InitError;
pub use metric::Metric;
pub use nuts::{nuts_step, NutsSettings, NutsState, SearchStatus, StepStatus, Transition};
pub use run::{run, run_from, ChainReport, RunError, RunReport};
pub use types::*;
