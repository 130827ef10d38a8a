//! Simulation-based calibration (Talts et al. 2018) of a conjugate normal model.
//!
//! For each replicate: draw μ ~ N(0, I₃) from the prior, data y_j ~ N(μ, I₃) (j = 1..4), run the
//! sampler on the posterior, and record the rank of each true μ_k among L = 99 thinned posterior
//! draws. If the sampler draws from the posterior the ranks are uniform on {0, …, 99}; the test is
//! a chi-square test of the 10-bin rank histogram at level 0.001.

mod common;

use common::*;
use hazel_density::{EvalError, LogDensity};
use hazel_nuts::{NoProgress, RunConfig, SamplerConfig};
use hazel_rng::{Purpose, StreamRng};

/// Posterior of μ ∈ ℝ³ with prior N(0, I) and unit-variance normal observations.
struct ConjugateNormal {
    /// Sum over observations, per coordinate, and the number of observations.
    sum_y: [f64; 3],
    n: f64,
}

impl LogDensity for ConjugateNormal {
    type Workspace = ();
    fn dim(&self) -> usize {
        3
    }
    fn new_workspace(&self) {}
    fn log_density_gradient(&self, _: &mut (), q: &[f64], g: &mut [f64]) -> Result<f64, EvalError> {
        // log p(μ | y) = −½ μ² − ½ Σ_j (y_j − μ)² + const = −½ (1 + n) μ² + μ Σ y + const.
        let mut lp = 0.0;
        for k in 0..3 {
            lp += -0.5 * (1.0 + self.n) * q[k] * q[k] + q[k] * self.sum_y[k];
            g[k] = -(1.0 + self.n) * q[k] + self.sum_y[k];
        }
        Ok(lp)
    }
}

#[test]
fn conjugate_normal_ranks_are_uniform() {
    let replicates = 500;
    let n_obs = 4;
    let draws_kept = 99;
    let bins = 10;
    // The simulation's own stream, separate from every stream the sampler uses.
    let mut sim = StreamRng::new(2024, 0, Purpose::TransformedData);
    let mut histogram = vec![0usize; bins];
    for replicate in 0..replicates {
        let mu: Vec<f64> = (0..3).map(|_| sim.normal()).collect();
        let mut sum_y = [0.0; 3];
        for _ in 0..n_obs {
            for k in 0..3 {
                sum_y[k] += mu[k] + sim.normal();
            }
        }
        let sampler = SamplerConfig {
            num_warmup: 150,
            num_samples: 2 * draws_kept,
            thin: 2,
            ..SamplerConfig::default()
        };
        let config = RunConfig {
            seed: 1000 + replicate,
            chains: 1,
            threads: 1,
            first_chain_id: 1,
            sampler,
            ..RunConfig::default()
        };
        let (report, chains) = run_in_memory(
            ConjugateNormal {
                sum_y,
                n: n_obs as f64,
            },
            &config,
            &NoProgress,
        );
        assert!(report.all_ok());
        assert_eq!(chains[0].draws.len(), draws_kept);
        for (k, &truth) in mu.iter().enumerate() {
            let rank = chains[0]
                .draws
                .iter()
                .filter(|d| d.values[k] < truth)
                .count();
            histogram[rank * bins / (draws_kept + 1)] += 1;
        }
    }
    let expected = (3 * replicates) as f64 / bins as f64;
    let chi_square: f64 = histogram
        .iter()
        .map(|&o| (o as f64 - expected).powi(2) / expected)
        .sum();
    // 0.999 quantile of chi-square with 9 degrees of freedom.
    assert!(
        chi_square < 27.877,
        "rank histogram {histogram:?}, chi-square {chi_square}"
    );
}
