//! The draw contract: what an inference algorithm hands to an output, and nothing else.
//!
//! Every algorithm (NUTS, fixed_param, optimize, Laplace, ADVI, Pathfinder, standalone generated
//! quantities, and later a lockstep or GPU sampler) and every output (Stan CSV, Parquet, Zarr, memory, the streamed summary)
//! depends on this crate and on no other part of the other side. An algorithm describes itself
//! once per run ([`RunInfo`]: CmdStan's method name, its settings for the CSV header, its
//! statistic columns and how many draws each chain keeps) and then, per chain, drives one
//! [`DrawSink`]:
//!
//! ```text
//! begin(columns) ─► [adaptation_done(info)] ─► draw(draw)* ─► finish(timing)
//!   (a chain resumed after its warmup: adaptation_resumed(info) ─► draw(draw)* ─► finish(timing))
//!                          checkpoint(state) between any two calls after begin, and after finish
//! ```
//!
//! * A [`Draw`] is one kept iteration: the algorithm's statistics (`lp__`, `accept_stat__`, …)
//!   and the model's output row (parameters, transformed parameters, generated quantities), both
//!   as `f64` in column order. Each statistic's [`StatKind`] says how to write it (a tree depth
//!   is an integer, a divergence a flag), so no output needs to know which algorithm ran.
//! * [`AdaptationInfo`] is what an algorithm tuned before its draws (NUTS: step size and
//!   inverse metric; ADVI: its step-size scale `eta`), written where CmdStan writes it.
//! * [`DrawSink::checkpoint`] carries the algorithm's own resumable state as a
//!   `&dyn erased_serde::Serialize`: a sink stores it in its own format without naming the
//!   algorithm's type, and the algorithm reads it back with its own type.
//! * [`Progress`] observes all chains of a run; [`Timing`] is a chain's wall-clock time.
//! * [`memory`]: a sink that keeps a chain's draws in memory (column-major `f64`), for the
//!   summary printed after a run, the Python package and tests; [`FanOut`] hands every call to
//!   several sinks (files and memory at once).
//!
//! Invariants: a sink never changes what the algorithm draws (it only receives); the calls for
//! one chain come from one thread, in the order above; `finish` follows every successful `begin`
//! (also when the chain stops early), so what was written can be flushed.

#![forbid(unsafe_code)]

pub mod bits;
mod fan_out;
pub mod memory;

pub use erased_serde;
pub use fan_out::FanOut;
pub use memory::{ChainDraws, DrawTable, MemoryDraws, MemorySink};

use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::io;
use std::time::Duration;

/// How a statistic column's values are written (each is carried as an `f64`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatKind {
    /// A real number (`lp__`, `stepsize__`): shortest round-trip decimal.
    Real,
    /// A count (`treedepth__`, `n_leapfrog__`): written without a decimal point.
    Integer,
    /// A yes/no flag (`divergent__`): written as `0` or `1`; stored as `0.0` or `1.0`.
    Flag,
}

/// One of an algorithm's statistic columns: its CmdStan name (ending in `__`) and kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatColumn {
    pub name: Cow<'static, str>,
    pub kind: StatKind,
}

impl StatColumn {
    /// A column of real numbers.
    pub const fn real(name: &'static str) -> Self {
        StatColumn {
            name: Cow::Borrowed(name),
            kind: StatKind::Real,
        }
    }
    /// A column of counts.
    pub const fn integer(name: &'static str) -> Self {
        StatColumn {
            name: Cow::Borrowed(name),
            kind: StatKind::Integer,
        }
    }
    /// A column of flags.
    pub const fn flag(name: &'static str) -> Self {
        StatColumn {
            name: Cow::Borrowed(name),
            kind: StatKind::Flag,
        }
    }
}

/// The columns of a chain's draws: the algorithm's statistics, then the model's output columns
/// (CmdStan names such as `theta.2.1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Columns<'a> {
    pub stats: &'a [StatColumn],
    pub values: &'a [String],
}

/// One kept iteration of a chain.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Draw<'a> {
    /// A warmup iteration (kept only when the run saves warmup).
    pub warmup: bool,
    /// One value per statistic column, in column order (counts and flags as `f64`).
    pub stats: &'a [f64],
    /// The model's output row, one value per output column.
    pub values: &'a [f64],
}

/// An inverse metric (the mass matrix's inverse, an estimate of the posterior covariance).
/// Every `f64` serialises as its bit pattern, so checkpoints round-trip exactly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum InverseMetric {
    /// Diagonal: one variance per dimension.
    Diag(#[serde(with = "bits::vec_f64")] Vec<f64>),
    /// Dense: `dim × dim`, row-major, symmetric positive definite.
    Dense {
        dim: usize,
        #[serde(with = "bits::vec_f64")]
        values: Vec<f64>,
    },
    /// Low-rank plus diagonal, `D (I + U (Λ − I) Uᵀ) D` with `D = diag(scale)` (what nutpie's
    /// low-rank adaptation learns); `vectors` holds the `values.len()` orthonormal columns of
    /// `U` one after the other (`dim` entries each). Outputs that follow CmdStan write it in
    /// CmdStan's form ([`InverseMetric::to_stan_form`]) and, for a large model, its factors
    /// beside that ([`InverseMetric::factors_beyond_stan_form`]).
    LowRank {
        #[serde(with = "bits::vec_f64")]
        scale: Vec<f64>,
        #[serde(with = "bits::vec_f64")]
        values: Vec<f64>,
        #[serde(with = "bits::vec_f64")]
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

    /// The metric as CmdStan's files hold it: a diagonal or dense one as it is; a low-rank one of
    /// at most [`LOW_RANK_DENSE_MAX_DIM`] dimensions as its dense matrix (`dense_e`), a larger
    /// one as its diagonal (`diag_e`, what [`low_rank_stan_name`] names), which every CmdStan
    /// reader takes and which costs O(dim·k) rather than the dense matrix's O(dim²·k). The
    /// factors of a larger one are [`InverseMetric::factors_beyond_stan_form`].
    pub fn to_stan_form(&self) -> Cow<'_, InverseMetric> {
        match self {
            InverseMetric::LowRank {
                scale,
                values,
                vectors,
            } if !low_rank_written_dense(scale.len()) => Cow::Owned(InverseMetric::Diag(
                low_rank_diagonal(scale, values, vectors),
            )),
            _ => self.to_dense(),
        }
    }

    /// The exact factors `(scale, eigenvalues, eigenvectors)` of a low-rank metric whose
    /// [`InverseMetric::to_stan_form`] is only its diagonal (more than
    /// [`LOW_RANK_DENSE_MAX_DIM`] dimensions), for the outputs to record beside it; `None` when
    /// the stan form is the metric itself.
    pub fn factors_beyond_stan_form(&self) -> Option<LowRankFactors<'_>> {
        match self {
            InverseMetric::LowRank {
                scale,
                values,
                vectors,
            } if !low_rank_written_dense(scale.len()) => Some(LowRankFactors {
                scale,
                values,
                vectors,
            }),
            _ => None,
        }
    }

    /// The metric with a low-rank one as its dense `dim × dim` matrix (row-major, exactly
    /// symmetric, as a dense_e reader checks); a diagonal or dense one as it is. O(dim²·k): for
    /// the sampler's own conversions (a low-rank metric given to a dense one), never for output.
    pub fn to_dense(&self) -> Cow<'_, InverseMetric> {
        let InverseMetric::LowRank {
            scale,
            values,
            vectors,
        } = self
        else {
            return Cow::Borrowed(self);
        };
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
        Cow::Owned(InverseMetric::Dense { dim, values: dense })
    }
}

/// The largest dimension for which outputs write a low-rank metric as CmdStan's `dense_e`
/// block (its dense matrix). Above it they write `diag_e` (its diagonal) and its exact factors
/// beside it: the dense matrix has dim² entries (10⁸ for dim = 10,000: gigabytes of CSV header
/// per chain, and O(dim²·k) time to form), while the diagonal and factors are O(dim·k). At 100
/// the dense block is at most 10⁴ numbers, about what a hundred draws of such a model take, and
/// every small model keeps the `dense_e` files it had. The one rule every writer and the
/// header's `metric` name follow ([`low_rank_written_dense`]).
pub const LOW_RANK_DENSE_MAX_DIM: usize = 100;

/// Whether outputs write a low-rank metric of `dim` dimensions as `dense_e` (else `diag_e`
/// plus its factors); see [`LOW_RANK_DENSE_MAX_DIM`].
pub(crate) fn low_rank_written_dense(dim: usize) -> bool {
    dim <= LOW_RANK_DENSE_MAX_DIM
}

/// CmdStan's name of the metric that outputs write for a low-rank metric of `dim` dimensions
/// (the header's `metric`, which must agree with the adaptation block).
pub fn low_rank_stan_name(dim: usize) -> &'static str {
    if low_rank_written_dense(dim) {
        "dense_e"
    } else {
        "diag_e"
    }
}

/// The diagonal of `D (I + U (Λ − I) Uᵀ) D`: `d_i = s_i² (1 + Σ_j (λ_j − 1) u_ji²)`, in
/// O(dim·k) without forming the matrix.
pub(crate) fn low_rank_diagonal(scale: &[f64], values: &[f64], vectors: &[f64]) -> Vec<f64> {
    let dim = scale.len();
    let mut diagonal = vec![1.0; dim];
    for (&lambda, u) in values.iter().zip(vectors.chunks_exact(dim.max(1))) {
        for (d, &ui) in diagonal.iter_mut().zip(u) {
            *d += (lambda - 1.0) * ui * ui;
        }
    }
    for (d, &s) in diagonal.iter_mut().zip(scale) {
        *d *= s * s;
    }
    diagonal
}

/// The factors of a low-rank inverse metric `diag(scale) (I + U (Λ − I) Uᵀ) diag(scale)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LowRankFactors<'a> {
    pub scale: &'a [f64],
    /// `Λ`, one per column of `U`.
    pub values: &'a [f64],
    /// The columns of `U` one after the other (`scale.len()` entries each).
    pub vectors: &'a [f64],
}

/// What an algorithm tuned before its draws, for the outputs to record. An algorithm that
/// tunes something else adds a variant here and a block to the writers that record it.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum AdaptationInfo<'a> {
    /// Hamiltonian Monte Carlo: the step size and inverse metric used for the draws (CmdStan's
    /// "Adaptation terminated" block).
    Hmc {
        stepsize: f64,
        inv_metric: &'a InverseMetric,
    },
    /// ADVI: the step-size scale `eta` its stochastic gradient ascent used (CmdStan's
    /// "Stepsize adaptation complete." block).
    Advi { eta: f64 },
}

/// How a run's outputs label its wall-clock time: CmdStan's timing block differs by method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimingBlock {
    /// No timing block (CmdStan's `optimize`, `laplace`, `variational`,
    /// `generate_quantities`).
    None,
    /// The two phases of [`Timing`] under these labels, then their total (`Warm-up` and
    /// `Sampling` for a sampler, `Pathfinders` and `PSIS` for multi-path Pathfinder).
    Phases {
        first: &'static str,
        second: &'static str,
    },
    /// One line: the whole time under this label (`Pathfinder` for a single path).
    Total { label: &'static str },
}

/// Wall-clock time spent in each phase of a chain (an algorithm without warmup leaves it 0).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Timing {
    pub warmup: Duration,
    pub sampling: Duration,
}

/// Receives one chain's output as it is produced. One sink per chain; the algorithm's runner
/// calls it from the thread running that chain, in order.
pub trait DrawSink: Send {
    /// Before the first draw: the chain's columns.
    fn begin(&mut self, columns: &Columns<'_>) -> io::Result<()>;
    /// After warmup, with what was tuned (an algorithm that tunes nothing never calls it).
    fn adaptation_done(&mut self, adaptation: &AdaptationInfo<'_>) -> io::Result<()> {
        let _ = adaptation;
        Ok(())
    }
    /// Instead of `adaptation_done` for a chain resumed after its warmup, whose sink already
    /// holds what `adaptation_done` wrote before the interruption: what was tuned, for a sink
    /// that keeps it (in memory) or records part of it only at `finish` (the Stan CSV's
    /// low-rank factors, after the timing block). Writes nothing of its own.
    fn adaptation_resumed(&mut self, adaptation: &AdaptationInfo<'_>) -> io::Result<()> {
        let _ = adaptation;
        Ok(())
    }
    /// One kept iteration.
    fn draw(&mut self, draw: &Draw<'_>) -> io::Result<()>;
    /// After the last draw; also when the chain stops early (an error in the model, in this
    /// sink, or another chain's fatal error) after `begin` succeeded, so that what was written
    /// can be flushed.
    fn finish(&mut self, timing: &Timing) -> io::Result<()>;
    /// Makes everything written so far durable and stores `state` as the point to resume from
    /// (the algorithm's own checkpoint type; the runner says when). A sink that cannot resume
    /// ignores it.
    fn checkpoint(&mut self, state: &dyn erased_serde::Serialize) -> io::Result<()> {
        let _ = state;
        Ok(())
    }
}

/// Observes progress of all chains of a run (a progress bar, periodic log lines). Shared across
/// threads, so it takes `&self`; it never influences the draws.
pub trait Progress: Sync {
    /// Called after every iteration of chain `chain` (0-based index within the run).
    /// `iteration` counts from 1 over warmup + sampling; `divergences` counts the divergent
    /// iterations of the current phase only (0 for algorithms without divergences).
    fn iteration(&self, chain: usize, iteration: usize, warmup: bool, divergences: usize);
    /// A message about chain `chain` (a rejected proposal; the observer rate-limits them).
    fn message(&self, chain: usize, message: &str) {
        let _ = (chain, message);
    }
    /// Whether the caller wants the run to stop (Ctrl-C in the Python package): every chain
    /// stops before its next iteration, keeping what it drew and finishing its sink. Asked
    /// once per iteration per chain, so it must be cheap (an atomic load).
    fn interrupted(&self) -> bool {
        false
    }
}

/// A progress observer that shows nothing (`--quiet`).
pub struct NoProgress;

impl Progress for NoProgress {
    fn iteration(&self, _: usize, _: usize, _: bool, _: usize) {}
}

/// A setting's value in the run's description.
#[derive(Debug, Clone, PartialEq)]
pub enum SettingValue {
    /// Written as the shortest decimal that reads back as the same `f64` (`1`, `0.8`, `1e-6`).
    Real(f64),
    /// A whole number; flags are `0` or `1`, as CmdStan writes them.
    Integer(i64),
    Text(Cow<'static, str>),
}

impl SettingValue {
    /// A flag as CmdStan writes it (`0` / `1`).
    pub fn flag(value: bool) -> Self {
        SettingValue::Integer(i64::from(value))
    }
    /// A count.
    pub fn count(value: usize) -> Self {
        SettingValue::Integer(i64::try_from(value).unwrap_or(i64::MAX))
    }
}

/// One line of the settings tree inside a method's section of CmdStan's configuration block:
/// a `key = value` setting, or a section title (`value: None`). `depth` 0 is directly inside
/// the method's section.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    pub depth: usize,
    pub key: Cow<'static, str>,
    pub value: Option<SettingValue>,
    /// The value is CmdStan's default (the CSV says `(Default)` after it).
    pub is_default: bool,
}

impl Setting {
    /// A `key = value` line.
    pub fn value(
        depth: usize,
        key: &'static str,
        value: SettingValue,
        is_default: bool,
    ) -> Setting {
        Setting {
            depth,
            key: Cow::Borrowed(key),
            value: Some(value),
            is_default,
        }
    }
    /// A section title.
    pub fn section(depth: usize, key: &'static str) -> Setting {
        Setting {
            depth,
            key: Cow::Borrowed(key),
            value: None,
            is_default: false,
        }
    }
}

/// How many draws each chain of a run keeps, at most (outputs size their storage from it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KeptDraws {
    /// Saved warmup draws (0 unless the run saves warmup).
    pub warmup: usize,
    /// Draws after warmup.
    pub sampling: usize,
}

/// What a run is, as its outputs describe it: everything an output needs besides the draws.
/// The algorithm builds it from its own configuration (`hazel_nuts::RunConfig::info`, the
/// methods of `hazel_run::methods`).
#[derive(Debug, Clone, PartialEq)]
pub struct RunInfo {
    /// CmdStan's method (`sample`, `optimize`, `pathfinder`, `variational`, `laplace`).
    pub method: Cow<'static, str>,
    /// The settings inside the method's section, in CmdStan's order.
    pub settings: Vec<Setting>,
    /// The algorithm's statistic columns, in order.
    pub stat_columns: Vec<StatColumn>,
    /// Draws each chain keeps, at most.
    pub kept: KeptDraws,
    pub seed: u64,
    /// CmdStan's `init`: the radius, or `user` for given values.
    pub init: SettingValue,
    /// Chain ids are `first_chain_id .. first_chain_id + chains` (CmdStan's `id`).
    pub first_chain_id: u64,
    pub chains: usize,
    /// How the outputs write the chains' wall-clock times.
    pub timing: TimingBlock,
}

impl RunInfo {
    /// The id of chain `index` (0-based within the run).
    pub fn chain_id(&self, index: usize) -> u64 {
        self.first_chain_id + index as u64
    }
    /// Every chain's id, in order.
    pub fn chain_ids(&self) -> Vec<u64> {
        (0..self.chains).map(|k| self.chain_id(k)).collect()
    }
    /// Sets the first setting called `key` (a caller filling in what only it knows, such as
    /// the name of the file a metric came from); false when there is none.
    pub fn set_setting(&mut self, key: &str, value: SettingValue, is_default: bool) -> bool {
        match self.settings.iter_mut().find(|s| s.key == key) {
            Some(setting) => {
                setting.value = Some(value);
                setting.is_default = is_default;
                true
            }
            None => false,
        }
    }
    /// The value of the first setting called `key` (`max_depth`), wherever it is in the tree.
    pub fn setting(&self, key: &str) -> Option<&SettingValue> {
        self.settings
            .iter()
            .find(|s| s.key == key)
            .and_then(|s| s.value.as_ref())
    }
}
