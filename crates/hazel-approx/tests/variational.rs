#![allow(clippy::needless_range_loop)]
//! ADVI and Pathfinder on posteriors with known moments.

mod common;

use common::{Gaussian, PoissonGamma};
use hazel_approx::advi::{advi, AdviOptions, Family};
use hazel_approx::pathfinder::{multi_path, single_path, MultiPathOptions, PathfinderOptions};
use hazel_approx::ModelEval;
use hazel_rng::{Purpose, StreamRng};

fn mean_of(draws: &hazel_approx::pathfinder::Draws) -> Vec<f64> {
    let mut m = vec![0.0; draws.dim];
    for i in 0..draws.len() {
        for (mj, v) in m.iter_mut().zip(draws.row(i)) {
            *mj += v;
        }
    }
    m.iter().map(|v| v / draws.len() as f64).collect()
}

/// A Gaussian is in both ADVI families' reach: full-rank recovers mean and covariance,
/// mean-field the mean and the conditional variances (1 / precision diagonal), each within a
/// tolerance set by the stochastic optimiser's noise (0.15 sd for the mean).
#[test]
fn advi_recovers_a_gaussian() {
    let g = Gaussian::correlated();
    for family in [Family::FullRank, Family::MeanField] {
        let mut eval = ModelEval::new(&g);
        let mut rng = StreamRng::new(2024, 1, Purpose::Sampler);
        let options = AdviOptions {
            family,
            ..AdviOptions::default()
        };
        let fit = advi(&mut eval, &[0.0, 0.0, 0.0], &options, &mut rng).unwrap();
        let q = &fit.approximation;
        let cov = q.covariance();
        for i in 0..3 {
            let sd = g.covariance[i + 3 * i].sqrt();
            assert!(
                (q.mean()[i] - g.mean[i]).abs() < 0.15 * sd,
                "{family:?}: mean {:?} vs {:?} (eta {}, {} iterations)",
                q.mean(),
                g.mean,
                fit.eta,
                fit.iterations
            );
            let want = match family {
                Family::FullRank => g.covariance[i + 3 * i],
                Family::MeanField => 1.0 / g.precision[i + 3 * i],
            };
            assert!(
                (cov[i + 3 * i] / want - 1.0).abs() < 0.5,
                "{family:?}: variance {i}: {} vs {want}",
                cov[i + 3 * i]
            );
        }
    }
}

/// The same seed gives the same fit.
#[test]
fn advi_is_reproducible() {
    let g = Gaussian::correlated();
    let run = || {
        let mut eval = ModelEval::new(&g);
        let mut rng = StreamRng::new(5, 1, Purpose::Sampler);
        advi(
            &mut eval,
            &[0.3, 0.0, -0.2],
            &AdviOptions::default(),
            &mut rng,
        )
        .unwrap()
    };
    assert_eq!(run(), run());
}

/// A Gamma posterior on the log scale (skewed, not Gaussian): ADVI's mean of log λ within 0.15
/// posterior sd of the exact E[log λ] = ψ(shape) − log(rate).
#[test]
fn advi_on_a_conjugate_gamma_posterior() {
    let pg = PoissonGamma {
        alpha: 3.0,
        beta: 0.5,
        sum_y: 41.0,
        n: 12.0,
    };
    let shape: f64 = pg.alpha + pg.sum_y;
    let rate = pg.beta + pg.n;
    // ψ(44) and trigamma(44) by their asymptotic series (accurate to 1e-12 here).
    let digamma =
        |x: f64| x.ln() - 1.0 / (2.0 * x) - 1.0 / (12.0 * x * x) + 1.0 / (120.0 * x.powi(4));
    let trigamma =
        |x: f64| 1.0 / x + 1.0 / (2.0 * x * x) + 1.0 / (6.0 * x.powi(3)) - 1.0 / (30.0 * x.powi(5));
    let mean = digamma(shape) - rate.ln();
    let sd = trigamma(shape).sqrt();
    let mut eval = ModelEval::new(&pg);
    let mut rng = StreamRng::new(9, 1, Purpose::Sampler);
    let fit = advi(&mut eval, &[0.0], &AdviOptions::default(), &mut rng).unwrap();
    assert!(
        (fit.approximation.mean()[0] - mean).abs() < 0.15 * sd,
        "{} vs {mean}",
        fit.approximation.mean()[0]
    );
}

/// Pathfinder on a Gaussian: the draws' means within 5 Monte Carlo standard errors plus 0.05 sd,
/// their standard deviations within 20%.
#[test]
fn pathfinder_single_path_recovers_a_gaussian() {
    let g = Gaussian::correlated();
    let mut rng = StreamRng::new(3, 1, Purpose::Sampler);
    let options = PathfinderOptions {
        num_draws: 4000,
        ..PathfinderOptions::default()
    };
    let result = single_path(&g, &[-1.0, 1.0, 1.5], &options, &mut rng).unwrap();
    assert_eq!(result.draws.len(), 4000);
    let m = mean_of(&result.draws);
    for i in 0..3 {
        let sd = g.covariance[i + 3 * i].sqrt();
        assert!(
            (m[i] - g.mean[i]).abs() < 5.0 * sd / 4000f64.sqrt() + 0.05 * sd,
            "{m:?}"
        );
    }
    // Standard deviations within 20% (the L-BFGS inverse Hessian after a few inexact line
    // searches is close to, not exactly, the covariance).
    for i in 0..3 {
        let var = (0..result.draws.len())
            .map(|k| (result.draws.row(k)[i] - m[i]).powi(2))
            .sum::<f64>()
            / 3999.0;
        let sd = g.covariance[i + 3 * i].sqrt();
        assert!(
            (var.sqrt() / sd - 1.0).abs() < 0.2,
            "sd {i}: {} vs {sd}",
            var.sqrt()
        );
    }
}

/// A 30-dimensional Gaussian with history 5 uses the sparse (QR) form; its draws are still
/// centred on the mean and lp_approx is a normalised density (log p − log q ≈ constant when q
/// is close to p).
#[test]
fn pathfinder_sparse_form_on_a_larger_gaussian() {
    let d = 30;
    let mean: Vec<f64> = (0..d).map(|i| (i as f64) * 0.1 - 1.0).collect();
    let mut cov = vec![0.0; d * d];
    for i in 0..d {
        for j in 0..d {
            let sd_i = 0.5 + 0.05 * i as f64;
            let sd_j = 0.5 + 0.05 * j as f64;
            cov[i + d * j] = sd_i * sd_j * 0.3f64.powi((i as i32 - j as i32).abs());
        }
    }
    let g = Gaussian::new(mean.clone(), cov.clone());
    let mut rng = StreamRng::new(4, 1, Purpose::Sampler);
    let result = single_path(&g, &vec![0.0; d], &PathfinderOptions::default(), &mut rng).unwrap();
    let m = mean_of(&result.draws);
    for i in 0..d {
        let sd = cov[i + d * i].sqrt();
        assert!(
            (m[i] - mean[i]).abs() < 0.25 * sd,
            "{i}: {} vs {}",
            m[i],
            mean[i]
        );
    }
}

/// Multi-path: the same draws with 1 and 3 threads; the resampled draws' means on target.
#[test]
fn multi_path_is_deterministic_and_on_target() {
    let g = Gaussian::correlated();
    let mut rng = StreamRng::new(1, 1, Purpose::Init);
    let inits: Vec<Vec<f64>> = (0..4)
        .map(|_| (0..3).map(|_| rng.uniform_range(-2.0, 2.0)).collect())
        .collect();
    let options = MultiPathOptions::default();
    let one = multi_path(&g, &inits, &options, 77, 1, 1).unwrap();
    let three = multi_path(&g, &inits, &options, 77, 1, 3).unwrap();
    assert_eq!(one.draws, three.draws);
    assert_eq!(one.draws.len(), 1000);
    let m = mean_of(&one.draws);
    for i in 0..3 {
        let sd = g.covariance[i + 3 * i].sqrt();
        assert!((m[i] - g.mean[i]).abs() < 0.2 * sd, "{m:?}");
    }
    assert!(one.pareto_k < 0.7, "k̂ = {}", one.pareto_k);
}
