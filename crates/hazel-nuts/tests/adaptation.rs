//! The three warmup adaptations (Stan's windows, nutpie's gradient-based diagonal, low-rank plus
//! diagonal): each samples Gaussians — independent with scales over three orders of magnitude,
//! and correlated through a common factor — with means and variances within MCSE-derived bounds
//! of the truth, learns the metric it is meant to learn, and gives the same bits for the same
//! seed whatever the thread count.

mod common;

use common::*;
use hazel_density::{EvalError, LogDensity};
use hazel_nuts::{AdaptMethod, InverseMetric, MetricKind, NoProgress, RunConfig, SamplerConfig};

const METHODS: [AdaptMethod; 3] = [
    AdaptMethod::Stan,
    AdaptMethod::DiagGrad,
    AdaptMethod::LowRank,
];

fn config(method: AdaptMethod, seed: u64, threads: usize) -> RunConfig {
    let mut sampler = SamplerConfig {
        metric: method.metric_kind(MetricKind::Diag),
        ..SamplerConfig::default()
    };
    sampler.adapt.method = method;
    RunConfig {
        seed,
        chains: 4,
        threads,
        sampler,
        ..RunConfig::default()
    }
}

/// `x = μ + S (z + a·w·e)` with `z ~ N(0, I)`, `w ~ N(0, 1)`, `e = 1/√d`: covariance
/// `S (I + a² e eᵀ) S`, a correlation of `a²/(d + a²)` between any two coordinates.
struct CommonFactor {
    mean: Vec<f64>,
    sd: Vec<f64>,
    a: f64,
}

impl CommonFactor {
    fn covariance(&self, i: usize, j: usize) -> f64 {
        let d = self.mean.len() as f64;
        let identity = if i == j { 1.0 } else { 0.0 };
        self.sd[i] * self.sd[j] * (identity + self.a * self.a / d)
    }
}

impl LogDensity for CommonFactor {
    type Workspace = ();
    fn dim(&self) -> usize {
        self.mean.len()
    }
    fn new_workspace(&self) {}
    fn log_density_gradient(&self, _: &mut (), q: &[f64], g: &mut [f64]) -> Result<f64, EvalError> {
        // Precision S⁻¹ (I − c e eᵀ) S⁻¹ with c = a²/(1 + a²) (Sherman–Morrison).
        let d = q.len() as f64;
        let c = self.a * self.a / (1.0 + self.a * self.a);
        let y: Vec<f64> = (0..q.len())
            .map(|i| (q[i] - self.mean[i]) / self.sd[i])
            .collect();
        let ey = y.iter().sum::<f64>() / d.sqrt();
        let mut quad = 0.0;
        for i in 0..q.len() {
            let py = y[i] - c * ey / d.sqrt();
            quad += y[i] * py;
            g[i] = -py / self.sd[i];
        }
        Ok(-0.5 * quad)
    }
}

fn check_all_moments(chains: &[Received], mean: &[f64], var: &[f64], what: &str) {
    let mut failures = Vec::new();
    for i in 0..mean.len() {
        // Means within 4 MCSE, variances within 4.5 (their MCSE is itself estimated).
        if let Err(e) = check_moments(
            &column(chains, i),
            mean[i],
            var[i],
            4.0,
            4.5,
            &format!("{what} x.{}", i + 1),
        ) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The adapted inverse metric as a dense row-major matrix.
fn dense_metric(metric: &InverseMetric) -> (usize, Vec<f64>) {
    match metric.to_dense().into_owned() {
        InverseMetric::Diag(v) => {
            let d = v.len();
            let mut m = vec![0.0; d * d];
            for i in 0..d {
                m[i * d + i] = v[i];
            }
            (d, m)
        }
        InverseMetric::Dense { dim, values } => (dim, values),
        InverseMetric::LowRank { .. } => unreachable!(),
    }
}

/// Independent normals with standard deviations from 0.01 to 10: every method samples them
/// correctly, and the diagonal each learns is the variances (within a factor of 2 per
/// coordinate: a window of a few hundred autocorrelated draws).
#[test]
fn each_adaptation_samples_a_badly_scaled_diagonal_gaussian() {
    let d = 12;
    let sd: Vec<f64> = (0..d)
        .map(|i| 10f64.powf(-2.0 + 3.0 * i as f64 / (d - 1) as f64))
        .collect();
    let mean: Vec<f64> = (0..d).map(|i| i as f64 - 5.0).collect();
    let var: Vec<f64> = sd.iter().map(|s| s * s).collect();
    for method in METHODS {
        let density = IndependentNormal {
            mean: mean.clone(),
            sd: sd.clone(),
        };
        let (report, chains) = run_in_memory(density, &config(method, 7, 0), &NoProgress);
        assert!(report.all_ok(), "{method:?}: {:?}", report.chains);
        check_all_moments(&chains, &mean, &var, &format!("{method:?}"));
        for c in &chains {
            let (_, m) = dense_metric(&c.adaptation.as_ref().expect("adapted").1);
            for i in 0..d {
                let ratio = m[i * d + i] / var[i];
                assert!(
                    (0.5..2.0).contains(&ratio),
                    "{method:?}: metric {i} is {ratio} × the variance"
                );
            }
        }
    }
}

/// A 10-dimensional Gaussian whose coordinates are correlated 0.8 pairwise and scaled over two
/// orders of magnitude: every method samples it correctly; the low-rank adaptation learns the
/// common direction (the variance of `eᵀ S⁻¹ x` under its metric is the true 41 within 30%),
/// which no diagonal metric can.
#[test]
fn each_adaptation_samples_a_correlated_gaussian() {
    let d = 10;
    let target = || CommonFactor {
        mean: (0..d).map(|i| 0.5 * i as f64).collect(),
        sd: (0..d)
            .map(|i| 10f64.powf(-1.0 + 2.0 * i as f64 / (d - 1) as f64))
            .collect(),
        a: (0.8f64 * d as f64 / 0.2).sqrt(),
    };
    let t = target();
    let var: Vec<f64> = (0..d).map(|i| t.covariance(i, i)).collect();
    for method in METHODS {
        let (report, chains) = run_in_memory(target(), &config(method, 11, 0), &NoProgress);
        assert!(report.all_ok(), "{method:?}: {:?}", report.chains);
        check_all_moments(&chains, &t.mean, &var, &format!("{method:?}"));
        if method == AdaptMethod::LowRank {
            let e = 1.0 / (d as f64).sqrt();
            let truth = 1.0 + t.a * t.a;
            for c in &chains {
                let (_, m) = dense_metric(&c.adaptation.as_ref().expect("adapted").1);
                let mut along = 0.0;
                for i in 0..d {
                    for j in 0..d {
                        along += e / t.sd[i] * m[i * d + j] * e / t.sd[j];
                    }
                }
                assert!(
                    (along / truth - 1.0).abs() < 0.3,
                    "low-rank metric along the common direction {along}, truth {truth}"
                );
            }
        }
    }
}

/// Same seed, same bits: one thread or several, and run again.
#[test]
fn gradient_adaptations_are_deterministic() {
    let d = 6;
    let target = || CommonFactor {
        mean: vec![1.0; d],
        sd: (1..=d).map(|i| i as f64).collect(),
        a: 2.0,
    };
    for method in [AdaptMethod::DiagGrad, AdaptMethod::LowRank] {
        let mut small = config(method, 3, 1);
        small.sampler.num_warmup = 300;
        small.sampler.num_samples = 100;
        let (_, one) = run_in_memory(target(), &small, &NoProgress);
        let (_, again) = run_in_memory(target(), &small, &NoProgress);
        let many = RunConfig {
            threads: 4,
            ..small.clone()
        };
        let (_, four) = run_in_memory(target(), &many, &NoProgress);
        for other in [&again, &four] {
            for (a, b) in one.iter().zip(other.iter()) {
                assert_eq!(a.draws, b.draws, "{method:?}");
                assert_eq!(a.adaptation, b.adaptation, "{method:?}");
            }
        }
    }
}

/// Stan's `stepsize_jitter`: each transition's step size is within ±jitter of the nominal one
/// (the `stepsize__` column shows it), and they differ from draw to draw.
#[test]
fn stepsize_jitter_draws_each_step_size() {
    let mut config = config(AdaptMethod::Stan, 5, 1);
    config.chains = 1;
    config.sampler.num_warmup = 200;
    config.sampler.num_samples = 200;
    config.sampler.stepsize_jitter = 0.3;
    let density = IndependentNormal {
        mean: vec![0.0; 3],
        sd: vec![1.0; 3],
    };
    let (report, chains) = run_in_memory(density, &config, &NoProgress);
    let nominal = report.chains[0].stepsize.expect("adapted");
    let steps: Vec<f64> = chains[0].draws.iter().map(|d| d.stats.stepsize).collect();
    assert!(steps
        .iter()
        .all(|&s| s >= nominal * 0.7 && s <= nominal * 1.3));
    let distinct = steps
        .iter()
        .map(|s| s.to_bits())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    assert!(distinct > 150, "{distinct} distinct step sizes");
    check_all_moments(&chains, &[0.0; 3], &[1.0; 3], "jitter");
}

/// A unit metric is never adapted (only the step size is), and its draws are right.
#[test]
fn unit_metric_adapts_only_the_step_size() {
    let mut config = config(AdaptMethod::Stan, 9, 0);
    config.sampler.metric = MetricKind::Unit;
    let density = IndependentNormal {
        mean: vec![1.0, 2.0],
        sd: vec![0.5, 2.0],
    };
    let (report, chains) = run_in_memory(density, &config, &NoProgress);
    assert!(report.all_ok());
    check_all_moments(&chains, &[1.0, 2.0], &[0.25, 4.0], "unit");
    for c in &chains {
        assert_eq!(
            c.adaptation.as_ref().unwrap().1,
            InverseMetric::Diag(vec![1.0, 1.0])
        );
    }
}
