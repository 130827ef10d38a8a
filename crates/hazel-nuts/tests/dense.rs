//! A 2-d Gaussian with correlation 0.99 sampled with the dense metric: means, variances and the
//! covariance within MCSE-derived bounds, and the adapted metric is the posterior covariance.

mod common;

use common::*;
use hazel_nuts::{InverseMetric, MetricKind, NoProgress, RunConfig, SamplerConfig};

#[test]
fn correlated_gaussian_with_dense_metric() {
    let target = Bivariate {
        mean: [1.0, -2.0],
        sd: [1.0, 3.0],
        rho: 0.99,
    };
    let cov = [1.0, 0.99 * 3.0, 0.99 * 3.0, 9.0];
    let sampler = SamplerConfig {
        metric: MetricKind::Dense,
        ..SamplerConfig::default()
    };
    let config = RunConfig {
        seed: 99,
        chains: 4,
        threads: 0,
        first_chain_id: 1,
        sampler,
        ..RunConfig::default()
    };
    let (report, chains) = run_in_memory(target, &config, &NoProgress);
    assert!(report.all_ok());
    check_moments(&column(&chains, 0), 1.0, cov[0], 4.0, 4.5, "x.1").unwrap();
    check_moments(&column(&chains, 1), -2.0, cov[3], 4.0, 4.5, "x.2").unwrap();
    // Covariance: the mean of (x1 − μ1)(x2 − μ2) with its own MCSE.
    let products: Vec<Vec<f64>> = chains
        .iter()
        .map(|c| {
            c.draws
                .iter()
                .filter(|d| !d.warmup)
                .map(|d| (d.values[0] - 1.0) * (d.values[1] + 2.0))
                .collect()
        })
        .collect();
    let (c12, mcse, _) = mean_and_mcse(&products);
    assert!(
        (c12 - cov[1]).abs() < 4.5 * mcse,
        "covariance {c12} vs {}, mcse {mcse}",
        cov[1]
    );

    // The dense metric learned the correlation, so trajectories are short: a diagonal metric
    // needs trajectories of order 1/sqrt(1 − ρ²) ≈ 7 times longer.
    let mean_leapfrog = chains
        .iter()
        .flat_map(|c| c.draws.iter())
        .map(|d| d.stats.n_leapfrog as f64)
        .sum::<f64>()
        / chains.iter().map(|c| c.draws.len()).sum::<usize>() as f64;
    assert!(mean_leapfrog < 8.0, "mean n_leapfrog {mean_leapfrog}");
    for c in &chains {
        match &c.adaptation.as_ref().unwrap().1 {
            InverseMetric::Dense { dim: 2, values } => {
                for (v, t) in values.iter().zip(&cov) {
                    assert!(
                        (v - t).abs() < 0.25 * cov[3].sqrt() * (t.abs().sqrt() + 0.5),
                        "adapted {values:?}"
                    );
                }
                assert_eq!(values[1], values[2]);
            }
            other => panic!("expected a dense metric, got {other:?}"),
        }
    }
}

/// A warm start: the user's dense inverse metric and step size are used as given when
/// adaptation is off, and reported back by `adaptation_done`.
#[test]
fn warm_start_uses_supplied_metric_and_stepsize() {
    let target = Bivariate {
        mean: [0.0, 0.0],
        sd: [1.0, 1.0],
        rho: 0.9,
    };
    let given = InverseMetric::Dense {
        dim: 2,
        values: vec![1.0, 0.9, 0.9, 1.0],
    };
    let mut sampler = SamplerConfig {
        metric: MetricKind::Dense,
        inv_metric: vec![given.clone()],
        stepsize: 0.7,
        num_warmup: 0,
        num_samples: 2000,
        ..SamplerConfig::default()
    };
    sampler.adapt.engaged = false;
    let config = RunConfig {
        seed: 5,
        chains: 2,
        threads: 1,
        first_chain_id: 1,
        sampler,
        ..RunConfig::default()
    };
    let (report, chains) = run_in_memory(target, &config, &NoProgress);
    assert!(report.all_ok());
    for c in &chains {
        assert_eq!(c.adaptation, Some((0.7, given.clone())));
        assert!(c.draws.iter().all(|d| d.stats.stepsize == 0.7 && !d.warmup));
        assert_eq!(c.draws.len(), 2000);
    }
    check_moments(&column(&chains, 0), 0.0, 1.0, 4.0, 4.5, "x.1").unwrap();
    check_moments(&column(&chains, 1), 0.0, 1.0, 4.0, 4.5, "x.2").unwrap();
}
