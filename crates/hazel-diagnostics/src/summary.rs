//! The per-column summary row: what `stansummary` / cmdstanpy's `summary()` print.

use crate::convergence::{ess_bulk, ess_tail, mcse_mean, mcse_sd, rhat_rank, ChainDraws};
use crate::stats::{mean, quantile_sorted, sorted, variance};

/// Summary statistics of one output column over all chains.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnSummary {
    /// The CmdStan column name (`theta.2.1`).
    pub name: String,
    /// Total number of draws (all chains).
    pub draws: usize,
    pub mean: f64,
    /// Standard deviation (`ddof = 1`).
    pub sd: f64,
    pub mcse_mean: f64,
    pub mcse_sd: f64,
    pub q5: f64,
    pub q50: f64,
    pub q95: f64,
    pub ess_bulk: f64,
    pub ess_tail: f64,
    pub r_hat: f64,
}

impl ColumnSummary {
    /// Computes every statistic of one column.
    pub fn new(name: impl Into<String>, draws: &ChainDraws) -> Self {
        let values = draws.values();
        let ordered = sorted(values);
        ColumnSummary {
            name: name.into(),
            draws: values.len(),
            mean: mean(values),
            sd: variance(values, 1).sqrt(),
            mcse_mean: mcse_mean(draws),
            mcse_sd: mcse_sd(draws),
            q5: quantile_sorted(&ordered, 0.05),
            q50: quantile_sorted(&ordered, 0.5),
            q95: quantile_sorted(&ordered, 0.95),
            ess_bulk: ess_bulk(draws),
            ess_tail: ess_tail(draws),
            r_hat: rhat_rank(draws),
        }
    }

    /// Whether every draw is the same value (a fixed quantity: R-hat and ESS say nothing).
    pub fn is_constant(&self) -> bool {
        self.sd == 0.0
    }
}
