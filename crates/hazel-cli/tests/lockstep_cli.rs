//! `hazel sample --batch-chains K` through the binary: chains stepped in lockstep, their
//! gradients computed K at a time by the batched executor, write files byte-identical (timing
//! lines aside) to the chains run alone — for a GLM read by the fused op, a dynamic model with
//! a `reject` and divergences, a static model with every output option, fixed_param — for any
//! K, either lockstep mode and any thread count.

mod common;
use common::draws::file_without_timing;
use common::*;

use hazel_output::read_stan_csv;
use std::path::{Path, PathBuf};

/// Centred eight schools, which diverges, with a `reject` on a parameter (so the model is
/// re-traced at every evaluation) and a generated quantity drawn from the chain's stream.
const REJECTING_SCHOOLS: &str = "
data {
  int<lower=0> J;
  array[J] real y;
  array[J] real<lower=0> sigma;
}
parameters {
  real mu;
  real<lower=0> tau;
  vector[J] theta;
}
model {
  if (tau > 12) reject(\"tau = \", tau, \" is implausibly large\");
  mu ~ normal(0, 5);
  tau ~ cauchy(0, 5);
  theta ~ normal(mu, tau);
  y ~ normal(theta, sigma);
}
generated quantities {
  real y_rep = normal_rng(theta[1], sigma[1]);
}
";

/// The logistic regression example on its first `rows` rows (a fused GLM op reads `X`).
fn small_glm_data(dir: &Path, rows: usize) -> PathBuf {
    let text = std::fs::read_to_string(example("logistic_regression", "data.json")).unwrap();
    let mut data: serde_json::Value = serde_json::from_str(&text).unwrap();
    let cut = |v: &mut serde_json::Value| {
        let a = v.as_array_mut().unwrap();
        a.truncate(rows);
    };
    cut(&mut data["X"]);
    cut(&mut data["y"]);
    data["N"] = rows.into();
    let path = dir.join("glm.json");
    std::fs::write(&path, data.to_string()).unwrap();
    path
}

/// Runs `hazel sample` in `dir/<sub>` with `args` plus the shared settings and
/// `--batch-chains`/`--lockstep`/`--threads` as given; returns the chain files.
fn run(dir: &Path, sub: &str, args: &[&str], chains: usize, lockstep: &[&str]) -> Vec<PathBuf> {
    let cwd = dir.join(sub);
    std::fs::create_dir_all(&cwd).unwrap();
    let chains_text = chains.to_string();
    let mut all: Vec<&str> = vec![
        "sample",
        "--output-dir",
        "out",
        "--seed",
        "5",
        "--chains",
        &chains_text,
        "--quiet",
    ];
    all.extend(args);
    all.extend(lockstep);
    let output = hazel_in(&cwd, &all);
    assert!(output.status.success(), "{sub}: {}", text(&output.stderr));
    let name = Path::new(args[0]).file_stem().unwrap().to_str().unwrap();
    (1..=chains)
        .map(|id| cwd.join(format!("out/{name}-{id}.csv")))
        .collect()
}

/// Every lockstep setting gives the files of the chains alone.
fn check(name: &str, args: &[&str], chains: usize) -> Vec<PathBuf> {
    let dir = scratch_dir(name);
    let alone = run(&dir, "alone", args, chains, &["--threads", "2"]);
    let settings: [&[&str]; 5] = [
        &["--batch-chains", "1", "--threads", "1"],
        &["--batch-chains", "2", "--threads", "2"],
        &["--batch-chains", "4", "--threads", "1"],
        &[
            "--batch-chains",
            "4",
            "--lockstep",
            "masked",
            "--threads",
            "2",
        ],
        &["--batch-chains", "9", "--threads", "1"],
    ];
    for (k, lockstep) in settings.iter().enumerate() {
        let batched = run(&dir, &format!("batched-{k}"), args, chains, lockstep);
        for (a, b) in alone.iter().zip(&batched) {
            assert!(
                file_without_timing(a) == file_without_timing(b),
                "{name}: {} differs from {} ({lockstep:?})",
                b.display(),
                a.display()
            );
        }
    }
    alone
}

#[test]
fn a_glm_in_lockstep_writes_the_files_of_chains_alone() {
    let dir = scratch_dir("lockstep-glm-data");
    let data = small_glm_data(&dir, 300);
    let files = check(
        "lockstep-glm",
        &[
            &example("logistic_regression", "model.stan"),
            "--data",
            data.to_str().unwrap(),
            "--warmup",
            "150",
            "--draws",
            "100",
        ],
        5,
    );
    let csv = read_stan_csv(&files[4]).unwrap();
    assert_eq!(csv.draws.len(), 100);
}

#[test]
fn divergences_and_rejections_in_lockstep_write_the_files_of_chains_alone() {
    let dir = scratch_dir("lockstep-reject-model");
    let model = dir.join("schools.stan");
    std::fs::write(&model, REJECTING_SCHOOLS).unwrap();
    let files = check(
        "lockstep-reject",
        &[
            model.to_str().unwrap(),
            "--data",
            &example("eight_schools", "data.json"),
            "--warmup",
            "200",
            "--draws",
            "200",
            "--save-warmup",
        ],
        4,
    );
    // The run met what the test is about: divergences, and the `reject` (draws never beyond it).
    let (mut divergent, mut max_tau) = (0.0, 0.0f64);
    for f in &files {
        let csv = read_stan_csv(f).unwrap();
        let d = csv.column_index("divergent__").unwrap();
        let t = csv.column_index("tau").unwrap();
        divergent += csv.column(d).iter().sum::<f64>();
        max_tau = csv.column(t).iter().fold(max_tau, |m, &x| m.max(x));
    }
    assert!(divergent > 0.0, "centred eight schools diverges");
    assert!(max_tau <= 12.0, "no draw beyond the reject: {max_tau}");
}

#[test]
fn every_output_option_and_fixed_param_in_lockstep() {
    check(
        "lockstep-options",
        &[
            &example("eight_schools", "model.stan"),
            "--data",
            &example("eight_schools", "data.json"),
            "--warmup",
            "150",
            "--draws",
            "100",
            "--thin",
            "3",
            "--save-warmup",
            "--metric",
            "dense",
            "--max-depth",
            "6",
            "--init",
            "0.5",
        ],
        3,
    );
    check(
        "lockstep-fixed-param",
        &[
            &example("bernoulli", "model.stan"),
            "--data",
            &example("bernoulli", "data.json"),
            "--algorithm",
            "fixed_param",
            "--draws",
            "50",
        ],
        3,
    );
}

#[test]
fn batch_chains_with_threads_per_chain_is_refused() {
    let output = hazel(&[
        "sample",
        &example("bernoulli", "model.stan"),
        "--data",
        &example("bernoulli", "data.json"),
        "--batch-chains",
        "2",
        "--threads-per-chain",
        "2",
        "--output-dir",
        scratch_dir("lockstep-refused").to_str().unwrap(),
    ]);
    assert!(!output.status.success());
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("--batch-chains 2 with --threads-per-chain 2"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}
