//! Sampler-level checks (divergences, tree-depth saturation, E-BFMI) and the combined
//! CmdStan-`diagnose`-style report.

use crate::stats::{mean, variance};
use crate::summary::ColumnSummary;

/// Energy Bayesian fraction of missing information of one chain: the mean squared change of
/// the energy between successive draws over the energy's variance (ArviZ 0.22's `bfmi`, which
/// uses the `ddof = 1` variance). NaN for fewer than 2 draws.
pub fn e_bfmi(energy: &[f64]) -> f64 {
    if energy.len() < 2 {
        return f64::NAN;
    }
    let squared_steps: Vec<f64> = energy
        .windows(2)
        .map(|w| (w[1] - w[0]) * (w[1] - w[0]))
        .collect();
    mean(&squared_steps) / variance(energy, 1)
}

/// Thresholds of the checks, with the values recommended by Vehtari et al. (2021) and used by
/// CmdStan's `diagnose`.
#[derive(Debug, Clone, PartialEq)]
pub struct Thresholds {
    /// R-hat above this is reported.
    pub max_rhat: f64,
    /// Bulk or tail ESS per transition below this is reported.
    pub min_ess_per_draw: f64,
    /// E-BFMI below this is reported.
    pub min_e_bfmi: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            max_rhat: 1.01,
            min_ess_per_draw: 0.001,
            min_e_bfmi: 0.3,
        }
    }
}

/// The sampler statistics of the post-warmup draws of every chain.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SamplerStats {
    /// `divergent__` per chain (nonzero = divergent).
    pub divergent: Vec<Vec<f64>>,
    /// `treedepth__` per chain.
    pub treedepth: Vec<Vec<f64>>,
    /// `energy__` per chain.
    pub energy: Vec<Vec<f64>>,
    /// The run's `max_depth` (CmdStan's default is 10).
    pub max_depth: u32,
}

/// One problem found, as text a user reads.
#[derive(Debug, Clone, PartialEq)]
pub struct Warning {
    pub message: String,
}

/// Results of the sampler checks and the per-parameter checks.
#[derive(Debug, Clone, PartialEq)]
pub struct DiagnosticReport {
    pub total_draws: usize,
    pub divergences: usize,
    pub max_treedepth_hits: usize,
    /// E-BFMI of each chain.
    pub e_bfmi: Vec<f64>,
    /// Columns whose R-hat exceeds the threshold.
    pub high_rhat: Vec<String>,
    /// Columns whose bulk or tail ESS per draw is below the threshold.
    pub low_ess: Vec<String>,
    pub thresholds: Thresholds,
}

impl DiagnosticReport {
    /// Runs every check. `columns` are the summaries of the quantities to check (sampler
    /// `__` columns are skipped).
    pub fn new(stats: &SamplerStats, columns: &[ColumnSummary], thresholds: Thresholds) -> Self {
        let total_draws = stats.divergent.iter().map(Vec::len).sum();
        let divergences = stats
            .divergent
            .iter()
            .flatten()
            .filter(|&&d| d != 0.0)
            .count();
        let max_depth = f64::from(stats.max_depth);
        let max_treedepth_hits = stats
            .treedepth
            .iter()
            .flatten()
            .filter(|&&d| d >= max_depth)
            .count();
        let e_bfmi = stats.energy.iter().map(|e| e_bfmi(e)).collect();
        let model_columns = || columns.iter().filter(|c| !c.name.ends_with("__"));
        let high_rhat = model_columns()
            .filter(|c| c.r_hat.is_nan() || c.r_hat > thresholds.max_rhat)
            .filter(|c| !c.is_constant())
            .map(|c| c.name.clone())
            .collect();
        let low_ess = model_columns()
            .filter(|c| c.draws > 0 && !c.is_constant())
            .filter(|c| {
                let per_draw = c.ess_bulk.min(c.ess_tail) / c.draws as f64;
                per_draw.is_nan() || per_draw < thresholds.min_ess_per_draw
            })
            .map(|c| c.name.clone())
            .collect();
        DiagnosticReport {
            total_draws,
            divergences,
            max_treedepth_hits,
            e_bfmi,
            high_rhat,
            low_ess,
            thresholds,
        }
    }

    /// The problems found, phrased like CmdStan's `diagnose`.
    pub fn warnings(&self, max_depth: u32) -> Vec<Warning> {
        let mut warnings = Vec::new();
        let percent = |n: usize| 100.0 * n as f64 / self.total_draws.max(1) as f64;
        if self.max_treedepth_hits > 0 {
            warnings.push(Warning {
                message: format!(
                    "{} of {} ({:.2}%) transitions hit the maximum treedepth limit of {}, or 2^{} leapfrog steps.\n\
                     Trajectories that are prematurely terminated due to this limit will result in slow exploration.\n\
                     For optimal performance, increase this limit.",
                    self.max_treedepth_hits,
                    self.total_draws,
                    percent(self.max_treedepth_hits),
                    max_depth,
                    max_depth
                ),
            });
        }
        if self.divergences > 0 {
            warnings.push(Warning {
                message: format!(
                    "{} of {} ({:.2}%) transitions ended with a divergence.\n\
                     These divergent transitions indicate that HMC is not fully able to explore the posterior distribution.\n\
                     Try increasing adapt delta closer to 1.\n\
                     If this doesn't remove all divergences, try to reparameterize the model.",
                    self.divergences,
                    self.total_draws,
                    percent(self.divergences)
                ),
            });
        }
        for (chain, &value) in self.e_bfmi.iter().enumerate() {
            if value < self.thresholds.min_e_bfmi {
                warnings.push(Warning {
                    message: format!(
                        "Chain {}: E-BFMI = {:.3}, below the nominal threshold of {:.2}, which suggests that HMC may have \
                         trouble exploring the target distribution.\nIf possible, try to reparameterize the model.",
                        chain + 1,
                        value,
                        self.thresholds.min_e_bfmi
                    ),
                });
            }
        }
        if !self.low_ess.is_empty() {
            warnings.push(Warning {
                message: format!(
                    "The following parameters had fewer than {} effective draws per transition:\n  {}\n\
                     Such low values indicate that the effective sample size estimators may be biased high and actual \
                     performance may be substantially lower than quoted.",
                    self.thresholds.min_ess_per_draw,
                    self.low_ess.join(", ")
                ),
            });
        }
        if !self.high_rhat.is_empty() {
            warnings.push(Warning {
                message: format!(
                    "The following parameters had rank-normalized split R-hat greater than {}:\n  {}\n\
                     Such high values indicate incomplete mixing and biased estimation.\n\
                     You should consider regularizing your model with additional prior information or a more effective \
                     parameterization.",
                    self.thresholds.max_rhat,
                    self.high_rhat.join(", ")
                ),
            });
        }
        warnings
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e_bfmi_of_a_random_walk_is_small_and_of_alternation_large() {
        let walk: Vec<f64> = (0..100).map(|i| i as f64).collect();
        assert!(e_bfmi(&walk) < 0.01);
        let alternating: Vec<f64> = (0..100)
            .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        assert!(e_bfmi(&alternating) > 3.0);
    }

    #[test]
    fn counts_divergences_and_saturation() {
        let stats = SamplerStats {
            divergent: vec![vec![0.0, 1.0, 0.0, 0.0], vec![1.0, 1.0, 0.0, 0.0]],
            treedepth: vec![vec![3.0, 10.0, 2.0, 3.0], vec![3.0, 3.0, 3.0, 3.0]],
            energy: vec![vec![1.0, 2.0, 1.5, 3.0], vec![2.0, 1.0, 2.5, 0.5]],
            max_depth: 10,
        };
        let report = DiagnosticReport::new(&stats, &[], Thresholds::default());
        assert_eq!(
            (
                report.total_draws,
                report.divergences,
                report.max_treedepth_hits
            ),
            (8, 3, 1)
        );
        let text: Vec<String> = report.warnings(10).into_iter().map(|w| w.message).collect();
        assert!(text[0]
            .starts_with("1 of 8 (12.50%) transitions hit the maximum treedepth limit of 10"));
        assert!(text[1].starts_with("3 of 8 (37.50%) transitions ended with a divergence."));
    }
}
