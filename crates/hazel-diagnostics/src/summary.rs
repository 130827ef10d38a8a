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
    /// Every draw is the same value. Decided from the draws themselves, not from `sd == 0`:
    /// the mean of identical values can be off by an ulp, leaving a tiny nonzero sd.
    pub constant: bool,
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
            constant: ordered.first() == ordered.last(),
        }
    }

    /// Whether every draw is the same value (a fixed quantity: R-hat and ESS say nothing).
    pub fn is_constant(&self) -> bool {
        self.constant
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_draws_are_constant_even_when_the_sd_rounds_above_zero() {
        // 0.1 cannot be summed exactly, so the computed sd of 4000 copies is ~1e-17, not 0.
        let chains = vec![vec![0.1; 1000]; 4];
        let summary = ColumnSummary::new("y.1", &ChainDraws::new(&chains).unwrap());
        assert!(summary.is_constant());
        let mut varied = chains.clone();
        varied[2][10] = 0.2;
        let summary = ColumnSummary::new("y.1", &ChainDraws::new(&varied).unwrap());
        assert!(!summary.is_constant());
    }
}
