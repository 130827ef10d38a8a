//! Rank-normalised split R-hat, bulk/tail/mean ESS and Monte Carlo standard errors, following
//! ArviZ 0.22's definitions (`arviz/stats/diagnostics.py`: `_split_chains`, `_z_scale`,
//! `_rhat`, `_rhat_rank`, `_ess`, `_ess_bulk`, `_ess_tail`, `_ess_quantile`, `_ess_mean`,
//! `_mcse_mean`, `_mcse_sd`) and Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021),
//! "Rank-normalization, folding, and localization: an improved R-hat".
//!
//! Every function takes a [`ChainDraws`] (chains × draws of one scalar) and returns NaN where
//! ArviZ does: fewer than 4 draws per chain, any NaN draw, or (R-hat only) fewer than 2 chains.

use crate::stats::{average_ranks, mean, median, normal_quantile, quantile, variance};

/// Draws of one scalar quantity: `n_chains` chains of `n_draws` draws each.
#[derive(Debug, Clone, PartialEq)]
pub struct ChainDraws {
    n_chains: usize,
    n_draws: usize,
    /// Chain-major: chain c's draws are `values[c * n_draws .. (c + 1) * n_draws]`.
    values: Vec<f64>,
}

/// Chains of unequal length were passed to [`ChainDraws::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaggedChains {
    pub lengths: Vec<usize>,
}

impl std::fmt::Display for RaggedChains {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "chains have different numbers of draws: {:?}",
            self.lengths
        )
    }
}

impl std::error::Error for RaggedChains {}

impl ChainDraws {
    /// From one vector per chain; all chains must have the same length.
    pub fn new(chains: &[Vec<f64>]) -> Result<Self, RaggedChains> {
        let n_draws = chains.first().map_or(0, Vec::len);
        if chains.iter().any(|c| c.len() != n_draws) {
            return Err(RaggedChains {
                lengths: chains.iter().map(Vec::len).collect(),
            });
        }
        Ok(ChainDraws {
            n_chains: chains.len(),
            n_draws,
            values: chains.concat(),
        })
    }

    /// From chain-major values (`values.len() == n_chains * n_draws`).
    pub fn from_flat(n_chains: usize, n_draws: usize, values: Vec<f64>) -> Option<Self> {
        (values.len() == n_chains * n_draws).then_some(ChainDraws {
            n_chains,
            n_draws,
            values,
        })
    }

    pub fn n_chains(&self) -> usize {
        self.n_chains
    }
    pub fn n_draws(&self) -> usize {
        self.n_draws
    }
    /// All draws, chain-major.
    pub fn values(&self) -> &[f64] {
        &self.values
    }
    pub fn chain(&self, c: usize) -> &[f64] {
        &self.values[c * self.n_draws..(c + 1) * self.n_draws]
    }

    fn map(&self, f: impl Fn(f64) -> f64) -> ChainDraws {
        ChainDraws {
            n_chains: self.n_chains,
            n_draws: self.n_draws,
            values: self.values.iter().map(|&v| f(v)).collect(),
        }
    }

    /// Splits every chain into its first and last halves (dropping the middle draw of an odd
    /// length), giving `2 × n_chains` chains: all first halves, then all second halves.
    pub fn split(&self) -> ChainDraws {
        let half = self.n_draws / 2;
        let mut values = Vec::with_capacity(2 * self.n_chains * half);
        for c in 0..self.n_chains {
            values.extend_from_slice(&self.chain(c)[..half]);
        }
        for c in 0..self.n_chains {
            values.extend_from_slice(&self.chain(c)[self.n_draws - half..]);
        }
        ChainDraws {
            n_chains: 2 * self.n_chains,
            n_draws: half,
            values,
        }
    }

    /// Rank normalisation: each value replaced by Φ⁻¹((r − 3/8) / (S + 1/4)) where r is its
    /// average rank among all S values (Blom's offsets).
    pub fn z_scale(&self) -> ChainDraws {
        let size = self.values.len() as f64;
        let ranks = average_ranks(&self.values);
        let values = ranks
            .iter()
            .map(|&r| normal_quantile((r - 0.375) / (size - 0.75 + 1.0)))
            .collect();
        ChainDraws {
            n_chains: self.n_chains,
            n_draws: self.n_draws,
            values,
        }
    }

    /// ArviZ's validity check: at least `min_chains` chains, 4 draws and no NaN.
    fn is_valid(&self, min_chains: usize) -> bool {
        self.n_chains >= min_chains && self.n_draws >= 4 && !self.values.iter().any(|v| v.is_nan())
    }
}

/// Classic (non-split, non-ranked) potential scale reduction of already prepared chains.
fn rhat_basic(draws: &ChainDraws) -> f64 {
    if draws.values.iter().any(|v| v.is_nan()) {
        return f64::NAN;
    }
    let n = draws.n_draws as f64;
    let chain_means: Vec<f64> = (0..draws.n_chains).map(|c| mean(draws.chain(c))).collect();
    let chain_vars: Vec<f64> = (0..draws.n_chains)
        .map(|c| variance(draws.chain(c), 1))
        .collect();
    let between = n * variance(&chain_means, 1);
    let within = mean(&chain_vars);
    ((between / within + n - 1.0) / n).sqrt()
}

/// Rank-normalised split R-hat: the maximum of the bulk R-hat (ranks of the split chains) and
/// the tail R-hat (ranks of the split chains' absolute deviations from the median).
pub fn rhat_rank(draws: &ChainDraws) -> f64 {
    if !draws.is_valid(2) {
        return f64::NAN;
    }
    let split = draws.split();
    let bulk = rhat_basic(&split.z_scale());
    let center = median(split.values());
    let tail = rhat_basic(&split.map(|v| (v - center).abs()).z_scale());
    // Python's `max(bulk, tail)`, NaN handling included (f64::max would drop a NaN).
    if tail > bulk {
        tail
    } else {
        bulk
    }
}

/// Effective sample size of already prepared (split, transformed) chains: Geyer's initial
/// positive then initial monotone sequence on the multi-chain autocorrelation estimate.
///
/// Autocovariances are summed directly, lag by lag and only as far as the positive sequence
/// runs, instead of by FFT: exact to rounding and O(n · lags).
fn ess_basic(draws: &ChainDraws) -> f64 {
    let values = draws.values();
    if values.iter().any(|v| v.is_nan()) {
        return f64::NAN;
    }
    let (min, max) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    // numpy's finfo(float).resolution: a constant quantity has as many effective draws as draws.
    if max - min < 1e-15 {
        return values.len() as f64;
    }
    let n_chains = draws.n_chains;
    let n_draws = draws.n_draws;
    let n = n_draws as f64;
    let chain_means: Vec<f64> = (0..n_chains).map(|c| mean(draws.chain(c))).collect();
    let centered: Vec<Vec<f64>> = (0..n_chains)
        .map(|c| draws.chain(c).iter().map(|v| v - chain_means[c]).collect())
        .collect();
    // Mean over chains of the lag-`lag` autocovariance (divisor n, as ArviZ's FFT estimate).
    let mean_autocov = |lag: usize| -> f64 {
        let total: f64 = centered
            .iter()
            .map(|x| {
                x[..n_draws - lag]
                    .iter()
                    .zip(&x[lag..])
                    .map(|(a, b)| a * b)
                    .sum::<f64>()
                    / n
            })
            .sum();
        total / n_chains as f64
    };
    let mean_var = mean_autocov(0) * n / (n - 1.0);
    let mut var_plus = mean_var * (n - 1.0) / n;
    if n_chains > 1 {
        var_plus += variance(&chain_means, 1);
    }
    let rho = |lag: usize| 1.0 - (mean_var - mean_autocov(lag)) / var_plus;

    let mut rho_hat = vec![0.0; n_draws];
    let mut rho_even = 1.0;
    rho_hat[0] = rho_even;
    let mut rho_odd = rho(1);
    rho_hat[1] = rho_odd;
    let mut t = 1;
    while t + 3 < n_draws && rho_even + rho_odd > 0.0 {
        rho_even = rho(t + 1);
        rho_odd = rho(t + 2);
        if rho_even + rho_odd >= 0.0 {
            rho_hat[t + 1] = rho_even;
            rho_hat[t + 2] = rho_odd;
        }
        t += 2;
    }
    // ArviZ's max_t = t - 2 may be -1 when the loop never runs (n_draws ≤ 4); its slices then
    // select nothing for the first sum and the first element for the second. Signed arithmetic
    // reproduces that.
    let max_t = t as isize - 2;
    if rho_even > 0.0 && max_t + 1 >= 0 {
        rho_hat[(max_t + 1) as usize] = rho_even;
    }
    let mut t: isize = 1;
    while t <= max_t - 2 {
        let i = t as usize;
        if rho_hat[i + 1] + rho_hat[i + 2] > rho_hat[i - 1] + rho_hat[i] {
            rho_hat[i + 1] = (rho_hat[i - 1] + rho_hat[i]) / 2.0;
            rho_hat[i + 2] = rho_hat[i + 1];
        }
        t += 2;
    }
    let total_draws = (n_chains * n_draws) as f64;
    let head: f64 = if max_t >= 0 {
        rho_hat[..=(max_t as usize)].iter().sum()
    } else {
        0.0
    };
    let next = rho_hat.get((max_t + 1) as usize).copied().unwrap_or(0.0);
    let tau_hat = (-1.0 + 2.0 * head + next).max(1.0 / total_draws.log10());
    if rho_hat.iter().any(|r| r.is_nan()) {
        return f64::NAN;
    }
    total_draws / tau_hat
}

/// Bulk effective sample size: ESS of the rank-normalised split chains.
pub fn ess_bulk(draws: &ChainDraws) -> f64 {
    if !draws.is_valid(1) {
        return f64::NAN;
    }
    ess_basic(&draws.split().z_scale())
}

/// Effective sample size of the indicator `draw ≤ quantile(prob)` over split chains.
pub(crate) fn ess_quantile(draws: &ChainDraws, prob: f64) -> f64 {
    if !draws.is_valid(1) {
        return f64::NAN;
    }
    let q = quantile(draws.values(), prob);
    ess_basic(&draws.map(|v| if v <= q { 1.0 } else { 0.0 }).split())
}

/// Tail effective sample size: the smaller of the 5% and 95% quantile ESS.
pub fn ess_tail(draws: &ChainDraws) -> f64 {
    if !draws.is_valid(1) {
        return f64::NAN;
    }
    let (low, high) = (ess_quantile(draws, 0.05), ess_quantile(draws, 0.95));
    // Python's `min(low, high)`, NaN handling included.
    if high < low {
        high
    } else {
        low
    }
}

/// Effective sample size for the mean: ESS of the split chains, untransformed.
pub fn ess_mean(draws: &ChainDraws) -> f64 {
    if !draws.is_valid(1) {
        return f64::NAN;
    }
    ess_basic(&draws.split())
}

/// Monte Carlo standard error of the mean: sd / √ESS_mean.
pub fn mcse_mean(draws: &ChainDraws) -> f64 {
    if !draws.is_valid(1) {
        return f64::NAN;
    }
    variance(draws.values(), 1).sqrt() / ess_mean(draws).sqrt()
}

/// Monte Carlo standard error of the standard deviation, ArviZ ≥ 0.18's definition: the
/// delta method on the variance of the squared deviations, with their mean-ESS.
pub fn mcse_sd(draws: &ChainDraws) -> f64 {
    if !draws.is_valid(1) {
        return f64::NAN;
    }
    let center = mean(draws.values());
    let squared = draws.map(|v| (v - center) * (v - center));
    let ess = ess_mean(&squared);
    let expected_var = mean(squared.values());
    let fourth: Vec<f64> = squared.values().iter().map(|s| s * s).collect();
    let var_of_var = (mean(&fourth) - expected_var * expected_var) / ess;
    (var_of_var / expected_var / 4.0).sqrt()
}
