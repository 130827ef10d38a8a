//! A chain's whole state between two iterations, to checkpoint a run and resume it.
//!
//! [`ChainState`] is everything [`crate::Chain`] carries from one iteration to the next: the
//! position with its log density and gradient, the step size, the inverse metric, the
//! adaptation state (dual averaging and the method's windows and estimators) and the word
//! positions of the chain's two random streams. [`crate::Chain::restore`] rebuilds a chain
//! from it that continues bit for bit as the original would have (the model workspace and the
//! trajectory buffers hold nothing between transitions). [`ChainCheckpoint`] adds what the
//! runner counts, so a resumed chain reports the same totals.
//!
//! Every `f64` is stored as its IEEE bit pattern (`to_bits`), so values round-trip exactly,
//! NaN and infinities included, whatever the serialisation format.

use crate::adapt::Adaptation;
use crate::types::InverseMetric;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The state of one chain after `completed` iterations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChainState {
    /// Iterations completed (warmup + sampling).
    pub completed: usize,
    /// Dimension of the unconstrained space (checked against the model on restore).
    pub dim: usize,
    #[serde(with = "vec_f64_bits")]
    pub position: Vec<f64>,
    #[serde(with = "vec_f64_bits")]
    pub gradient: Vec<f64>,
    #[serde(with = "f64_bits")]
    pub logp: f64,
    /// The step size the next transition uses.
    #[serde(with = "f64_bits")]
    pub stepsize: f64,
    pub inv_metric: InverseMetric,
    /// Absent when the run does not adapt.
    pub adaptation: Option<Adaptation>,
    /// Word positions of the sampler and generated-quantities streams.
    pub sampler_rng: u128,
    pub gq_rng: u128,
}

/// What the runner counted up to a checkpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ChainCounters {
    pub draws_written: usize,
    pub warmup_divergences: usize,
    pub divergences: usize,
    pub max_treedepth_hits: usize,
    /// Seconds spent so far in warmup and sampling (only for the timing comments).
    pub warmup_secs: f64,
    pub sampling_secs: f64,
}

impl ChainCounters {
    pub fn warmup_time(&self) -> Duration {
        Duration::try_from_secs_f64(self.warmup_secs).unwrap_or_default()
    }
    pub fn sampling_time(&self) -> Duration {
        Duration::try_from_secs_f64(self.sampling_secs).unwrap_or_default()
    }
}

/// One chain's checkpoint as the runner hands it to its sink.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChainCheckpoint {
    /// `None` once the chain has finished (its sink was finished too): nothing is left to run.
    pub state: Option<ChainState>,
    pub counters: ChainCounters,
}

impl ChainCheckpoint {
    /// Whether the chain had finished when the checkpoint was taken.
    pub fn finished(&self) -> bool {
        self.state.is_none()
    }
}

/// How a chain of a run starts.
#[derive(Debug, Clone, PartialEq)]
pub enum ChainStart {
    /// From its initial point (the normal case).
    Fresh,
    /// From a checkpoint of an interrupted run with the same settings; the sink already holds
    /// exactly the output written up to it.
    Resume(Box<ChainCheckpoint>),
}

/// When the runner takes checkpoints (both off by default; the first reached triggers one).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CheckpointPolicy {
    /// Every this many iterations (0 = never by count).
    pub every_iterations: usize,
    /// At least this long after the previous one (`None` = never by time). The runner stretches
    /// the interval to 100 times the time the last checkpoint took, so checkpoints of a large
    /// state never cost more than 1% of the run.
    pub every: Option<Duration>,
}

impl CheckpointPolicy {
    pub fn is_off(&self) -> bool {
        self.every_iterations == 0 && self.every.is_none()
    }
}

/// Serde adapters storing `f64`s as their bit patterns (defined with the draw contract).
pub use hazel_draws::bits::{f64 as f64_bits, vec_f64 as vec_f64_bits};
