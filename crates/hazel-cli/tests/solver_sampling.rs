//! `hazel sample` end to end on models with a solver inside, each with a known posterior:
//! `s = x + x³` with `x` the root found by `solve_newton` (and, in generated quantities, by
//! `solve_powell`), and the density `normal(x | 0.5, 0.3)` with the change-of-variables term
//! `−log(1 + 3x²)`, so that `x` is exactly N(0.5, 0.3) a posteriori; and a DAE
//! (`y' = −a y` with an algebraic copy `z = 2y`) whose decay rate has a N(0.8, 0.1) posterior
//! given the solution at t = 1 through the same change of variables. Means and sds are
//! checked within MCSE-derived bounds.

mod common;
use common::*;

use hazel_diagnostics::{mcse_mean, mcse_sd, ChainDraws};
use hazel_output::read_stan_csvs;
use std::path::PathBuf;

/// Samples `program` (no data) and returns the draws of each of `columns` over the 4 chains.
fn sample(name: &str, program: &str, columns: &[&str]) -> Vec<ChainDraws> {
    let dir = scratch_dir(name);
    let path = dir.join("model.stan");
    std::fs::write(&path, program).unwrap();
    let output = hazel(&[
        "sample",
        path.to_str().unwrap(),
        "--output-dir",
        dir.to_str().unwrap(),
        "--seed",
        "7",
        "--quiet",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let paths: Vec<PathBuf> = (1..=4)
        .map(|id| dir.join(format!("model-{id}.csv")))
        .collect();
    let chains = read_stan_csvs(&paths).expect("four chain files");
    std::fs::remove_dir_all(&dir).ok();
    columns
        .iter()
        .map(|name| {
            let col = chains[0].column_index(name).expect("column");
            ChainDraws::new(&chains.iter().map(|c| c.column(col)).collect::<Vec<_>>()).unwrap()
        })
        .collect()
}

fn check_normal(draws: &ChainDraws, mean_true: f64, sd_true: f64) {
    let values = draws.values();
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let sd = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    let (mcse_m, mcse_s) = (mcse_mean(draws), mcse_sd(draws));
    assert!(mcse_m < 0.05 * sd_true, "MCSE {mcse_m} implausibly large");
    assert!(
        (mean - mean_true).abs() < 4.0 * mcse_m,
        "mean {mean} vs {mean_true} (MCSE {mcse_m})"
    );
    assert!(
        (sd - sd_true).abs() < 4.0 * mcse_s,
        "sd {sd} vs {sd_true} (MCSE {mcse_s})"
    );
}

#[test]
fn algebraic_solver_model_samples_the_known_posterior() {
    let program = "
functions {
  vector cubic(vector x, real s) { return [x[1] + x[1]^3 - s]'; }
}
parameters { real s; }
transformed parameters { real x = solve_newton(cubic, [1]', s)[1]; }
model {
  x ~ normal(0.5, 0.3);
  target += -log1p(3 * square(x));
}
generated quantities { real gap = x - solve_powell(cubic, [0]', s)[1]; }
";
    let draws = sample("solve", program, &["x", "gap"]);
    check_normal(&draws[0], 0.5, 0.3);
    let gap = &draws[1];
    // Newton at Stan's defaults stops at |f| ≤ 1e-6 or at a step below 1e-3 (relative) from
    // a fresh Jacobian, so its root is good to a few 1e-6; Powell's to 1e-10.
    let worst = gap.values().iter().fold(0.0f64, |m, g| m.max(g.abs()));
    assert!(worst < 1e-5, "Newton and Powell roots differ by {worst}");
}

#[test]
fn dae_model_samples_the_known_posterior() {
    // y(1) = exp(−a): a = −log y(1); with y1 = y(1) the density of a is N(0.8, 0.1) when
    // target = normal_lpdf(−log y1 | 0.8, 0.1) (a itself is the parameter, so no Jacobian).
    let program = "
functions {
  vector decay(real t, vector y, vector yp, real a) {
    return [yp[1] + a * y[1], y[2] - 2 * y[1]]';
  }
}
parameters { real a; }
transformed parameters {
  vector[2] y1 = dae(decay, [1, 2]', [-a, -2 * a]', 0.0, {1.0}, a)[1];
}
model { -log(y1[2] / 2) ~ normal(0.8, 0.1); }
";
    let draws = sample("dae", program, &["a"]);
    check_normal(&draws[0], 0.8, 0.1);
}
