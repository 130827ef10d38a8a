//! `hazel sample` run as a program: the files it writes, their independence from the thread
//! count, the accuracy of the draws on a posterior known exactly (Beta(3, 9) for the
//! `bernoulli` example), and the errors it reports.

mod common;
use common::draws::file_without_timing;
use common::*;

use hazel_diagnostics::{mcse_mean, mcse_sd, ChainDraws};
use hazel_output::{read_stan_csv, read_stan_csvs};
use std::path::PathBuf;

#[test]
fn bernoulli_draws_match_the_exact_beta_posterior() {
    let dir = scratch_dir("bernoulli");
    let output = hazel(&[
        "sample",
        &example("bernoulli", "model.stan"),
        "--data",
        &example("bernoulli", "data.json"),
        "--output-dir",
        dir.to_str().unwrap(),
        "--seed",
        "2024",
        "--quiet",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("4 chains: each with 1000 post-warmup draws"),
        "{stdout}"
    );
    assert!(
        stdout.contains("\ntheta "),
        "summary row of theta: {stdout}"
    );

    let paths: Vec<PathBuf> = (1..=4)
        .map(|id| dir.join(format!("model-{id}.csv")))
        .collect();
    let chains = read_stan_csvs(&paths).expect("four chain files");
    for chain in &chains {
        assert_eq!(chain.draws.len(), 1000);
        assert_eq!(chain.config_int("seed"), Some(2024));
    }
    let column = chains[0].column_index("theta").expect("theta column");
    let draws =
        ChainDraws::new(&chains.iter().map(|c| c.column(column)).collect::<Vec<_>>()).unwrap();
    let values = draws.values();
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let sd = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    // Beta(3, 9): mean 1/4, sd √(27 / (144 · 13)).
    let (true_mean, true_sd) = (0.25, (27.0f64 / (144.0 * 13.0)).sqrt());
    let (mcse_m, mcse_s) = (mcse_mean(&draws), mcse_sd(&draws));
    assert!(
        mcse_m < 0.05 * true_sd,
        "MCSE {mcse_m} implausibly large for 4000 draws"
    );
    assert!(
        (mean - true_mean).abs() < 4.0 * mcse_m,
        "mean {mean} vs {true_mean} (MCSE {mcse_m})"
    );
    assert!(
        (sd - true_sd).abs() < 4.0 * mcse_s,
        "sd {sd} vs {true_sd} (MCSE {mcse_s})"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn files_do_not_depend_on_thread_counts_and_options_reach_the_files() {
    let dir = scratch_dir("threads");
    // Each run in its own directory with the same relative output path, so that the files
    // name the same output file.
    let run = |threads: &str, threads_per_chain: &str, sub: &str| -> Vec<PathBuf> {
        let cwd = dir.join(sub);
        std::fs::create_dir_all(&cwd).unwrap();
        let output = hazel_in(
            &cwd,
            &[
                "sample",
                &example("eight_schools", "model.stan"),
                "--data",
                &example("eight_schools", "data.json"),
                "--output-dir",
                "out",
                "--seed",
                "7",
                "--chains",
                "3",
                "--warmup",
                "150",
                "--draws",
                "100",
                "--thin",
                "2",
                "--save-warmup",
                "--adapt-delta",
                "0.9",
                "--max-depth",
                "8",
                "--metric",
                "dense",
                "--threads",
                threads,
                "--threads-per-chain",
                threads_per_chain,
                "--quiet",
            ],
        );
        assert!(output.status.success(), "{}", text(&output.stderr));
        (1..=3)
            .map(|id| cwd.join(format!("out/model-{id}.csv")))
            .collect()
    };
    let one = run("1", "1", "one");
    let three = run("3", "2", "three");
    for (a, b) in one.iter().zip(&three) {
        assert!(
            file_without_timing(a) == file_without_timing(b),
            "{} and {} differ",
            a.display(),
            b.display()
        );
    }
    let csv = read_stan_csv(&one[0]).unwrap();
    assert_eq!(
        (csv.warmup_rows, csv.draws.len()),
        (75, 50),
        "thin 2 of 150 warmup + 100 draws"
    );
    assert_eq!(csv.config_int("max_depth"), Some(8));
    assert_eq!(csv.config_value("delta"), Some("0.9"));
    assert_eq!(csv.config_value("metric"), Some("dense_e"));
    assert_eq!(csv.config_value("model"), Some("model"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn errors_are_reported_without_a_panic() {
    let dir = scratch_dir("errors");
    let out = dir.to_str().unwrap();
    // Data that do not match the data block: the variable is named.
    let data = dir.join("short.json");
    std::fs::write(
        &data,
        r#"{"J": 8, "y": [1, 2], "sigma": [1, 1, 1, 1, 1, 1, 1, 1]}"#,
    )
    .unwrap();
    let output = hazel(&[
        "sample",
        &example("eight_schools", "model.stan"),
        "--data",
        data.to_str().unwrap(),
        "--output-dir",
        out,
    ]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("`y` should be an array of 8"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    // A program with a type error: rendered diagnostics.
    let bad = dir.join("bad.stan");
    std::fs::write(
        &bad,
        "parameters { real x; }\nmodel { x ~ normal(0, \"s\"); }\n",
    )
    .unwrap();
    let output = hazel(&["sample", bad.to_str().unwrap(), "--output-dir", out]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("bad.stan:2:"),
        "{}",
        text(&output.stderr)
    );

    // No starting point: every chain fails, no empty file is left behind.
    let reject = dir.join("reject.stan");
    std::fs::write(
        &reject,
        "parameters { real x; }\nmodel { reject(\"never valid\"); }\n",
    )
    .unwrap();
    let output = hazel(&[
        "sample",
        reject.to_str().unwrap(),
        "--output-dir",
        out,
        "--quiet",
        "--chains",
        "2",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("chain 1: initialization failed"),
        "{stderr}"
    );
    assert!(stderr.contains("never valid"), "{stderr}");
    assert!(!dir.join("reject-1.csv").exists());

    // Bad option values are errors before anything runs.
    for (option, value) in [
        ("--adapt-delta", "1.5"),
        ("--init", "-1"),
        ("--chains", "0"),
    ] {
        let output = hazel(&[
            "sample",
            reject.to_str().unwrap(),
            "--output-dir",
            out,
            option,
            value,
        ]);
        assert_eq!(
            output.status.code().map(|c| c != 0),
            Some(true),
            "{option} {value}"
        );
        assert!(!text(&output.stderr).contains("panicked"));
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn draws_made_before_a_fatal_error_are_kept() {
    // `fatal_error` once x wanders past 3.5: with saved warmup, the file holds every iteration
    // completed before the failing one. Seeds are tried until one fails after some draws.
    let dir = scratch_dir("fatal");
    let model = dir.join("fatal.stan");
    std::fs::write(
        &model,
        "parameters { real x; }\nmodel {\n  x ~ normal(0, 1);\n  if (x > 3.5) fatal_error(\"x went too far: \", x);\n}\n",
    )
    .unwrap();
    let mut checked = false;
    for seed in 1..=30 {
        let output = hazel(&[
            "sample",
            model.to_str().unwrap(),
            "--output-dir",
            dir.to_str().unwrap(),
            "--seed",
            &seed.to_string(),
            "--chains",
            "1",
            "--warmup",
            "200",
            "--draws",
            "2000",
            "--save-warmup",
            // The seeds were searched with Stan's adaptation from the origin.
            "--adaptation",
            "stan",
            "--init",
            "0",
            "--quiet",
        ]);
        let stderr = text(&output.stderr);
        if output.status.success() {
            continue;
        }
        assert!(!stderr.contains("panicked"), "{stderr}");
        let Some(at) = stderr.split("fatal error at iteration ").nth(1) else {
            panic!("seed {seed}: unexpected failure: {stderr}");
        };
        let iteration: usize = at
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap()
            .parse()
            .unwrap();
        if iteration < 10 {
            continue;
        }
        let csv = read_stan_csv(&dir.join("fatal-1.csv")).expect("the file of the failed chain");
        assert!(!csv.truncated);
        assert_eq!(
            csv.warmup_rows + csv.draws.len(),
            iteration - 1,
            "every iteration before the failing one is in the file"
        );
        assert!(
            stderr.contains("draws made before a failure are kept"),
            "{stderr}"
        );
        checked = true;
        break;
    }
    assert!(checked, "no seed in 1..=30 failed after 10 iterations");
    std::fs::remove_dir_all(&dir).ok();
}

/// `--init values.json` starts every chain at the given constrained values: runs from two
/// different files differ in their first draw, the same file repeats exactly, and a value
/// outside the parameter's support is an error that names it.
#[test]
fn initial_values_from_a_file() {
    let dir = scratch_dir("init-file");
    let first_draw = |init: &str, out: &str| -> Vec<f64> {
        let init_path = dir.join(format!("{out}.json"));
        std::fs::write(&init_path, init).unwrap();
        let out_dir = dir.join(out);
        let output = hazel(&[
            "sample",
            &example("bernoulli", "model.stan"),
            "--data",
            &example("bernoulli", "data.json"),
            "--init",
            init_path.to_str().unwrap(),
            "--warmup",
            "0",
            "--draws",
            "1",
            "--chains",
            "1",
            "--max-depth",
            "1",
            "--seed",
            "5",
            "--quiet",
            "--output-dir",
            out_dir.to_str().unwrap(),
        ]);
        assert!(output.status.success(), "{}", text(&output.stderr));
        let csv = read_stan_csv(&out_dir.join("model-1.csv")).expect("csv");
        let theta = csv.column_names.iter().position(|n| n == "theta").unwrap();
        vec![csv.draws[0][theta]]
    };
    let low = first_draw(r#"{"theta": 0.05}"#, "low");
    let high = first_draw(r#"{"theta": 0.95}"#, "high");
    let low_again = first_draw(r#"{"theta": 0.05}"#, "low_again");
    assert_eq!(low, low_again);
    // One leapfrog step of depth-1 NUTS cannot carry theta from 0.05 to where 0.95 lands.
    assert!(low[0] < high[0], "low {low:?} high {high:?}");

    let bad = dir.join("bad.json");
    std::fs::write(&bad, r#"{"theta": 1.5}"#).unwrap();
    let output = hazel(&[
        "sample",
        &example("bernoulli", "model.stan"),
        "--data",
        &example("bernoulli", "data.json"),
        "--init",
        bad.to_str().unwrap(),
        "--quiet",
        "--output-dir",
        dir.join("bad").to_str().unwrap(),
    ]);
    assert!(!output.status.success());
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("`theta` = 1.5 is above its upper bound 1"),
        "{stderr}"
    );
}
