//! Rank-normalised split R-hat, bulk/tail ESS, MCSE, quantiles, E-BFMI and CmdStan-style warnings.
//!
//! The convergence statistics follow ArviZ 0.22's definitions exactly (checked to 1e-6 relative
//! against ArviZ on the fixtures in `tests/fixtures/`); quantiles are numpy's default linear
//! interpolation. Nothing here reads files: callers pass draws as [`ChainDraws`].

#![forbid(unsafe_code)]

pub mod convergence;
pub mod reference;
pub mod sampler;
pub mod stats;
pub mod summary;

pub use convergence::{
    ess_bulk, ess_mean, ess_tail, mcse_mean, mcse_sd, rhat_rank, ChainDraws, RaggedChains,
};
pub use sampler::{e_bfmi, DiagnosticReport, SamplerStats, Thresholds, Warning};
pub use summary::ColumnSummary;
