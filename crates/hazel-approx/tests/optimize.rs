#![allow(clippy::needless_range_loop)]
//! The optimisers and Laplace on log densities with known modes and curvature.

mod common;

use common::{BetaBinomial, Gaussian, PoissonGamma};
use hazel_approx::laplace::LaplaceApproximation;
use hazel_approx::newton::newton;
use hazel_approx::{
    ConvergenceOptions, ModelEval, NegLogDensity, QuasiNewton, QuasiNewtonKind, QuasiNewtonOptions,
    Termination,
};
use hazel_density::{DensityTerms, LogDensity};
use hazel_rng::{Purpose, StreamRng};

const NO_JACOBIAN: DensityTerms = DensityTerms {
    jacobian: false,
    propto: true,
};

fn kinds() -> [QuasiNewtonKind; 2] {
    [
        QuasiNewtonKind::Lbfgs { history_size: 5 },
        QuasiNewtonKind::Bfgs,
    ]
}

/// Runs a quasi-Newton method from `x0` to the limits of double precision: CmdStan's default
/// `tol_rel_grad` (1e7 ε) stops where `∇fᵀ H ∇f ≈ 2e-9 |f|`, about 1e-5 from the mode in
/// standard deviations, so the 1e-8 checks switch the relative tests off (CmdStan accepts
/// `tol_rel_grad=0 tol_rel_obj=0` as well) and stop on the gradient norm.
fn quasi_newton<M: LogDensity>(
    model: &M,
    terms: DensityTerms,
    kind: QuasiNewtonKind,
    x0: &[f64],
) -> (Vec<f64>, Termination) {
    quasi_newton_with(model, terms, kind, x0, tight())
}

fn tight() -> ConvergenceOptions {
    ConvergenceOptions {
        tol_obj: 0.0,
        tol_rel_obj: 0.0,
        tol_grad: 1e-11,
        tol_rel_grad: 0.0,
        tol_param: 0.0,
        max_iterations: 2000,
    }
}

fn quasi_newton_with<M: LogDensity>(
    model: &M,
    terms: DensityTerms,
    kind: QuasiNewtonKind,
    x0: &[f64],
    convergence: ConvergenceOptions,
) -> (Vec<f64>, Termination) {
    let mut f = NegLogDensity::new(model, terms);
    let options = QuasiNewtonOptions {
        kind,
        convergence,
        ..QuasiNewtonOptions::default()
    };
    let mut qn = QuasiNewton::new(&mut f, x0, options).unwrap();
    let t = qn.minimize(&mut f, |_, _| {});
    (qn.x().to_vec(), t)
}

fn run_newton<M: LogDensity>(model: &M, terms: DensityTerms, x0: &[f64]) -> Vec<f64> {
    let mut eval = ModelEval::new(model);
    let mut x = x0.to_vec();
    let mut lp = |q: &[f64], g: &mut [f64]| eval.log_density(q, g, terms);
    newton(&mut lp, &mut x, 2000, |_, _, _| {}).unwrap();
    x
}

fn starts(d: usize) -> Vec<Vec<f64>> {
    let mut rng = StreamRng::new(11, 1, Purpose::Init);
    (0..5)
        .map(|_| (0..d).map(|_| rng.uniform_range(-2.0, 2.0)).collect())
        .collect()
}

#[test]
fn quasi_newton_finds_the_mode_of_a_gaussian() {
    let g = Gaussian::correlated();
    for kind in kinds() {
        for x0 in starts(3) {
            let (x, t) = quasi_newton(&g, DensityTerms::SAMPLER, kind, &x0);
            for i in 0..3 {
                assert!(
                    (x[i] - g.mean[i]).abs() < 1e-8,
                    "{kind:?} from {x0:?}: {x:?} ({t:?})"
                );
            }
            // CmdStan's defaults: converged, within 1e-4 standard deviations.
            let (x, t) = quasi_newton_with(
                &g,
                DensityTerms::SAMPLER,
                kind,
                &x0,
                ConvergenceOptions::default(),
            );
            assert!(
                t.is_success() && t != Termination::MaxIterations,
                "{kind:?}: {t:?}"
            );
            for i in 0..3 {
                let sd = g.covariance[i + 3 * i].sqrt();
                assert!(
                    (x[i] - g.mean[i]).abs() < 1e-4 * sd,
                    "{kind:?} defaults: {x:?} ({t:?})"
                );
            }
        }
    }
}

#[test]
fn newton_finds_the_mode_of_a_gaussian() {
    let g = Gaussian::correlated();
    for x0 in starts(3) {
        let x = run_newton(&g, DensityTerms::SAMPLER, &x0);
        for i in 0..3 {
            assert!((x[i] - g.mean[i]).abs() < 1e-8, "from {x0:?}: {x:?}");
        }
    }
}

/// Conjugate posteriors on transformed scales: the mode with and without the Jacobian.
#[test]
fn every_method_finds_conjugate_modes_with_and_without_the_jacobian() {
    let bb = BetaBinomial {
        a: 2.0,
        b: 3.0,
        y: 7.0,
        n: 20.0,
    };
    let pg = PoissonGamma {
        alpha: 3.0,
        beta: 0.5,
        sum_y: 41.0,
        n: 12.0,
    };
    let logistic = |u: f64| 1.0 / (1.0 + (-u).exp());
    for (terms, bb_mode, pg_mode) in [
        (
            NO_JACOBIAN,
            bb.mode_without_jacobian(),
            (pg.alpha + pg.sum_y - 1.0) / (pg.beta + pg.n),
        ),
        (
            DensityTerms::SAMPLER,
            bb.mode_with_jacobian(),
            (pg.alpha + pg.sum_y) / (pg.beta + pg.n),
        ),
    ] {
        for x0 in starts(1) {
            for kind in kinds() {
                let (x, t) = quasi_newton(&bb, terms, kind, &x0);
                assert!(
                    (logistic(x[0]) - bb_mode).abs() < 1e-8,
                    "{kind:?} {terms:?}: {} vs {bb_mode} ({t:?})",
                    logistic(x[0])
                );
                let (x, t) = quasi_newton(&pg, terms, kind, &x0);
                assert!(
                    (x[0].exp() - pg_mode).abs() < 1e-8 * pg_mode,
                    "{kind:?} {terms:?}: {} vs {pg_mode} ({t:?})",
                    x[0].exp()
                );
            }
            let x = run_newton(&bb, terms, &x0);
            assert!(
                (logistic(x[0]) - bb_mode).abs() < 1e-8,
                "newton {terms:?}: {}",
                logistic(x[0])
            );
            let x = run_newton(&pg, terms, &x0);
            assert!(
                (x[0].exp() - pg_mode).abs() < 1e-8 * pg_mode,
                "newton {terms:?}: {}",
                x[0].exp()
            );
        }
    }
}

/// The Rosenbrock function: a curved valley that a poor line search or update gets stuck in.
#[test]
fn quasi_newton_solves_rosenbrock() {
    struct Rosenbrock;
    impl LogDensity for Rosenbrock {
        type Workspace = ();
        fn dim(&self) -> usize {
            2
        }
        fn new_workspace(&self) {}
        fn log_density_gradient(
            &self,
            _: &mut (),
            q: &[f64],
            g: &mut [f64],
        ) -> Result<f64, hazel_density::EvalError> {
            let (x, y) = (q[0], q[1]);
            g[0] = -(-2.0 * (1.0 - x) - 400.0 * x * (y - x * x));
            g[1] = -(200.0 * (y - x * x));
            Ok(-((1.0 - x).powi(2) + 100.0 * (y - x * x).powi(2)))
        }
    }
    for kind in kinds() {
        let (x, t) = quasi_newton(&Rosenbrock, DensityTerms::SAMPLER, kind, &[-1.2, 1.0]);
        assert!(
            (x[0] - 1.0).abs() < 1e-6 && (x[1] - 1.0).abs() < 1e-6,
            "{kind:?}: {x:?} ({t:?})"
        );
    }
}

#[test]
fn laplace_reproduces_a_gaussian() {
    let g = Gaussian::correlated();
    let mut eval = ModelEval::new(&g);
    let mut lp = |q: &[f64], grad: &mut [f64]| eval.log_density(q, grad, DensityTerms::SAMPLER);
    let laplace = LaplaceApproximation::at_mode(&mut lp, &g.mean).unwrap();
    let cov = laplace.covariance();
    for k in 0..9 {
        assert!(
            (cov[k] - g.covariance[k]).abs() < 1e-8,
            "{cov:?} vs {:?}",
            g.covariance
        );
    }
    // Draws: means and covariances within 5 Monte Carlo standard errors.
    let n = 20_000;
    let mut rng = StreamRng::new(7, 1, Purpose::Sampler);
    let (mut z, mut q) = (vec![0.0; 3], vec![0.0; 3]);
    let mut sum = [0.0; 3];
    let mut sum_sq = [0.0; 9];
    let mut draws = Vec::with_capacity(n);
    for _ in 0..n {
        let log_g = laplace.draw(&mut rng, &mut z, &mut q);
        // log_g = ½ (θ − θ̂)ᵀ H (θ − θ̂) with H = −Σ⁻¹.
        let diff: Vec<f64> = q.iter().zip(&g.mean).map(|(a, b)| a - b).collect();
        let quad: f64 = (0..3)
            .map(|i| {
                (0..3)
                    .map(|j| diff[i] * g.precision[i + 3 * j] * diff[j])
                    .sum::<f64>()
            })
            .sum();
        assert!((log_g + 0.5 * quad).abs() < 1e-9 * (1.0 + quad));
        draws.push(q.clone());
    }
    for d in &draws {
        for i in 0..3 {
            sum[i] += d[i];
        }
    }
    let mean: Vec<f64> = sum.iter().map(|s| s / n as f64).collect();
    for d in &draws {
        for i in 0..3 {
            for j in 0..3 {
                sum_sq[i + 3 * j] += (d[i] - mean[i]) * (d[j] - mean[j]);
            }
        }
    }
    for i in 0..3 {
        let sd = g.covariance[i + 3 * i].sqrt();
        assert!(
            (mean[i] - g.mean[i]).abs() < 5.0 * sd / (n as f64).sqrt(),
            "{mean:?}"
        );
        for j in 0..3 {
            let c = sum_sq[i + 3 * j] / (n - 1) as f64;
            let sdj = g.covariance[j + 3 * j].sqrt();
            // sd of a sample covariance ≈ sd_i sd_j √((1 + ρ²)/n).
            assert!(
                (c - g.covariance[i + 3 * j]).abs() < 5.0 * sd * sdj * (2.0 / n as f64).sqrt(),
                "{i} {j}: {c}"
            );
        }
    }
}

#[test]
fn laplace_refuses_a_point_that_is_not_a_maximum() {
    let g = Gaussian::correlated();
    let mut eval = ModelEval::new(&g);
    // −log density: a minimum, not a maximum.
    let mut neg = |q: &[f64], grad: &mut [f64]| {
        let lp = eval.log_density(q, grad, DensityTerms::SAMPLER)?;
        grad.iter_mut().for_each(|v| *v = -*v);
        Ok(-lp)
    };
    assert!(LaplaceApproximation::at_mode(&mut neg, &g.mean).is_err());
}
