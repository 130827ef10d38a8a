//! CmdStan's warm-start and control options of `hazel sample` and the adaptation methods: each
//! option round-trips into the CSV configuration block as CmdStan writes it (cmdstanpy's and
//! CmdStan's spellings alike), per-chain init and metric files are found by CmdStan's
//! `_<id>` rule, a warm start from a metric file with adaptation off reproduces the adapted
//! step size and metric exactly and samples correctly, and bad combinations are refused.

mod common;
use common::*;

use hazel_diagnostics::{mcse_mean, ChainDraws};
use hazel_output::{read_stan_csv, read_stan_csvs, StanCsv};
use std::path::{Path, PathBuf};

/// Runs the bernoulli example into `dir` with `extra` options; panics on failure.
fn sample(dir: &Path, extra: &[&str]) -> Vec<StanCsv> {
    let model = example("bernoulli", "model.stan");
    let data = example("bernoulli", "data.json");
    let mut args = vec![
        "sample",
        &model,
        "--data",
        &data,
        "--output-dir",
        dir.to_str().unwrap(),
        "--quiet",
    ];
    args.extend_from_slice(extra);
    let output = hazel(&args);
    assert!(
        output.status.success(),
        "{extra:?}: {}",
        text(&output.stderr)
    );
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .collect();
    paths.sort();
    read_stan_csvs(&paths).expect("chain files")
}

/// The value of `key` in a file's configuration block (without `(Default)`).
fn setting<'a>(csv: &'a StanCsv, key: &str) -> &'a str {
    csv.config_value(key)
        .unwrap_or_else(|| panic!("no `{key}` in the configuration block"))
}

/// Whether the configuration block marks `key` as CmdStan's default.
fn is_default(path: &Path, key: &str) -> bool {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .find(|l| {
            l.starts_with('#')
                && l.trim_start_matches(['#', ' '])
                    .starts_with(&format!("{key} = "))
        })
        .unwrap_or_else(|| panic!("no `{key}` line"))
        .ends_with("(Default)")
}

#[test]
fn control_options_round_trip_into_the_header() {
    let dir = scratch_dir("flags-control");
    let chains = sample(
        &dir,
        &[
            "--num-chains",
            "2",
            "--num-warmup",
            "150",
            "--iter-sampling",
            "40",
            "--max-treedepth",
            "7",
            "--stepsize",
            "0.5",
            "--stepsize-jitter",
            "0.25",
            "--init-buffer",
            "20",
            "--term-buffer",
            "15",
            "--window",
            "12",
            "--adapt-delta",
            "0.9",
            "--refresh",
            "0",
            "--sig-figs",
            "4",
            "--init-candidates",
            "2",
            "--seed",
            "6",
        ],
    );
    assert_eq!(chains.len(), 2);
    for csv in &chains {
        for (key, value) in [
            ("num_samples", "40"),
            ("num_warmup", "150"),
            ("max_depth", "7"),
            ("stepsize", "0.5"),
            ("stepsize_jitter", "0.25"),
            ("init_buffer", "20"),
            ("term_buffer", "15"),
            ("window", "12"),
            ("delta", "0.9"),
            ("refresh", "0"),
            ("sig_figs", "4"),
            ("engaged", "1"),
            ("metric", "diag_e"),
            ("adaptation", "stan"),
            ("algorithm", "hmc"),
            ("init_candidates", "2"),
        ] {
            assert_eq!(setting(csv, key), value, "{key}");
        }
        assert_eq!(csv.draws.len(), 40);
    }
    let first = dir.join("model-1.csv");
    assert!(!is_default(&first, "stepsize_jitter"));
    assert!(!is_default(&first, "sig_figs"));
    assert!(is_default(&first, "adaptation"));
    // --sig-figs 4: every number of the rows and the adaptation block has at most 4
    // significant digits (integers aside).
    let body = std::fs::read_to_string(&first).unwrap();
    let significant = |field: &str| {
        let mantissa = field.split(['e', 'E']).next().unwrap();
        mantissa
            .chars()
            .filter(char::is_ascii_digit)
            .collect::<String>()
            .trim_start_matches('0')
            .trim_end_matches('0')
            .len()
    };
    let numeric_lines = body
        .lines()
        .skip_while(|l| !l.starts_with("lp__"))
        .skip(1)
        .filter(|l| !l.contains("seconds") && !l.contains("Adaptation") && !l.contains("elements"));
    let mut checked = 0;
    for line in numeric_lines {
        for field in line.trim_start_matches(['#', ' ']).split([',', ' ']) {
            if field.parse::<f64>().is_ok() {
                assert!(significant(field) <= 4, "{field} in `{line}`");
                checked += 1;
            }
        }
    }
    assert!(checked > 40 * 8);
    // Jitter: the step sizes of the draws differ within ±25% of the adapted one.
    let adapted = chains[0].adaptation.as_ref().unwrap().stepsize;
    let step = chains[0].column_index("stepsize__").unwrap();
    let steps = chains[0].column(step);
    assert!(steps
        .iter()
        .all(|s| (s / adapted - 1.0).abs() <= 0.25 + 1e-3));
    assert!(steps.iter().any(|s| (s / adapted - 1.0).abs() > 0.01));
}

/// Without `--adaptation` and `--init`, the chains start from Pathfinder's points and learn
/// the low-rank metric, and the header says so; an option only Stan's adaptation serves (or
/// nothing to adapt) selects Stan's, as in CmdStan; fixed_param and `--init-candidates` keep
/// random starts. `(Default)` marks CmdStan's defaults, so they flag the new ones.
#[test]
fn defaults_and_the_options_that_change_them_round_trip() {
    for (extra, adaptation, metric, init) in [
        (vec![], "low-rank", "dense_e", "pathfinder"),
        (vec!["--metric", "diag_e"], "stan", "diag_e", "pathfinder"),
        (vec!["--metric", "dense_e"], "stan", "dense_e", "pathfinder"),
        (vec!["--window", "20"], "stan", "diag_e", "pathfinder"),
        (vec!["--adapt-engaged", "0"], "stan", "diag_e", "pathfinder"),
        (vec!["--warmup", "0"], "stan", "diag_e", "pathfinder"),
        (vec!["--init", "2"], "low-rank", "dense_e", "2"),
        (vec!["--init-candidates", "2"], "low-rank", "dense_e", "2"),
        (vec!["--fixed-param"], "stan", "diag_e", "2"),
        (
            vec!["--adaptation", "stan", "--init", "pathfinder"],
            "stan",
            "diag_e",
            "pathfinder",
        ),
    ] {
        let dir = scratch_dir(&format!("flags-defaults-{}", extra.join("")));
        let mut args = vec!["--chains", "2", "--draws", "30", "--seed", "3"];
        args.extend(extra.iter().copied());
        let chains = sample(&dir, &args);
        for csv in &chains {
            assert_eq!(setting(csv, "adaptation"), adaptation, "{extra:?}");
            assert_eq!(setting(csv, "init"), init, "{extra:?}");
            if !extra.contains(&"--fixed-param") {
                assert_eq!(setting(csv, "metric"), metric, "{extra:?}");
            }
            assert_eq!(csv.draws.len(), 30);
        }
        let first = dir.join("model-1.csv");
        assert_eq!(is_default(&first, "adaptation"), adaptation == "stan");
        assert_eq!(is_default(&first, "init"), init == "2");
    }
}

/// Where Pathfinder finds no initial values (a density flat around every start: L-BFGS never
/// takes a step), the chains start from random points with a warning, and the header says so.
#[test]
fn a_failed_pathfinder_falls_back_to_random_starts() {
    let dir = scratch_dir("flags-pathfinder-fails");
    let model = dir.join("box.stan");
    std::fs::write(
        &model,
        "parameters { real x; }\nmodel { x ~ uniform(-10, 10); }\n",
    )
    .unwrap();
    let out = dir.join("out");
    let output = hazel(&[
        "sample",
        model.to_str().unwrap(),
        "--chains",
        "2",
        "--warmup",
        "100",
        "--draws",
        "20",
        "--seed",
        "1",
        "--quiet",
        "--output-dir",
        out.to_str().unwrap(),
    ]);
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("warning: Pathfinder found no initial values")
            && stderr.contains("uniformly in (-2, 2)"),
        "{stderr}"
    );
    for id in 1..=2 {
        let csv = read_stan_csv(&out.join(format!("box-{id}.csv"))).unwrap();
        assert_eq!(setting(&csv, "init"), "2");
        assert_eq!(csv.draws.len(), 20);
    }
}

/// The default low-rank metric is written in a bounded form for a large model: above
/// `LOW_RANK_DENSE_MAX_DIM` (100) dimensions the header says `diag_e`, the adaptation block
/// holds the metric's diagonal and the exact factors follow the timing block (each file stays
/// small: the dense block of 500 dimensions alone would be 250,000 numbers, about 5 MB); at 100
/// dimensions the block is CmdStan's dense_e matrix.
#[test]
fn the_default_metric_of_a_large_model_is_written_as_its_diagonal_and_factors() {
    for (dim, metric) in [(500, "diag_e"), (100, "dense_e")] {
        let dir = scratch_dir(&format!("flags-large-{dim}"));
        let model = dir.join("wide.stan");
        std::fs::write(
            &model,
            "data { int N; vector[N] sigma; }\n\
             parameters { vector[N] x; }\n\
             model { x ~ normal(0, sigma); }\n",
        )
        .unwrap();
        let sigma: Vec<String> = (0..dim)
            .map(|i| format!("{}", 0.5 + (i % 7) as f64 * 0.25))
            .collect();
        let data = dir.join("wide.json");
        std::fs::write(
            &data,
            format!("{{\"N\": {dim}, \"sigma\": [{}]}}", sigma.join(", ")),
        )
        .unwrap();
        let out = dir.join("out");
        let output = hazel(&[
            "sample",
            model.to_str().unwrap(),
            "--data",
            data.to_str().unwrap(),
            "--chains",
            "2",
            "--warmup",
            "150",
            "--draws",
            "20",
            "--seed",
            "5",
            "--quiet",
            "--output-dir",
            out.to_str().unwrap(),
        ]);
        assert!(output.status.success(), "{}", text(&output.stderr));
        for id in 1..=2 {
            let path = out.join(format!("wide-{id}.csv"));
            let bytes = std::fs::metadata(&path).unwrap().len();
            assert!(bytes < 1_000_000, "{}: {bytes} bytes", path.display());
            let csv = read_stan_csv(&path).unwrap();
            assert_eq!(setting(&csv, "adaptation"), "low-rank");
            assert_eq!(setting(&csv, "metric"), metric, "{dim} dimensions");
            let file = std::fs::read_to_string(&path).unwrap();
            let heading = if dim > 100 {
                "# Diagonal elements of inverse mass matrix:"
            } else {
                "# Elements of inverse mass matrix:"
            };
            let mut block = file.lines().skip_while(|l| *l != heading).skip(1);
            let first_row = block.next().expect("the metric's first row");
            assert_eq!(first_row.split(',').count(), dim, "{dim} dimensions");
            let adapted = csv.adaptation.as_ref().and_then(|a| a.inv_metric.as_ref());
            match adapted {
                Some(hazel_nuts::InverseMetric::LowRank { scale, .. }) => {
                    assert!(dim > 100);
                    assert_eq!(scale.len(), dim);
                }
                Some(hazel_nuts::InverseMetric::Dense { dim: d, .. }) => {
                    assert!(dim <= 100);
                    assert_eq!(*d, dim);
                }
                other => panic!("{dim} dimensions: {other:?}"),
            }
        }
    }
}

#[test]
fn metrics_and_adaptations_round_trip_into_the_header() {
    for (extra, metric, adaptation) in [
        (vec!["--metric", "unit_e"], "unit_e", "stan"),
        (vec!["--metric", "dense_e"], "dense_e", "stan"),
        (vec!["--metric", "dense"], "dense_e", "stan"),
        (vec!["--adaptation", "diag-grad"], "diag_e", "diag-grad"),
        (vec!["--adaptation", "low-rank"], "dense_e", "low-rank"),
    ] {
        let dir = scratch_dir(&format!("flags-{metric}-{adaptation}"));
        let mut args = vec![
            "--chains", "1", "--warmup", "200", "--draws", "50", "--seed", "4",
        ];
        args.extend(extra.iter().copied());
        let chains = sample(&dir, &args);
        let csv = &chains[0];
        assert_eq!(setting(csv, "metric"), metric, "{extra:?}");
        assert_eq!(setting(csv, "adaptation"), adaptation, "{extra:?}");
        let adapted = csv.adaptation.as_ref().expect("adaptation block");
        match metric {
            // CmdStan's unit_e block has no matrix.
            "unit_e" => assert_eq!(adapted.inv_metric, None),
            "diag_e" => assert!(matches!(
                adapted.inv_metric,
                Some(hazel_nuts::InverseMetric::Diag(_))
            )),
            _ => assert!(matches!(
                adapted.inv_metric,
                Some(hazel_nuts::InverseMetric::Dense { dim: 1, .. })
            )),
        }
    }
}

#[test]
fn fixed_param_and_adaptation_off_round_trip() {
    let dir = scratch_dir("flags-fixed");
    let chains = sample(&dir, &["--chains", "1", "--fixed-param", "--draws", "5"]);
    assert_eq!(setting(&chains[0], "algorithm"), "fixed_param");
    let dir = scratch_dir("flags-off");
    let chains = sample(
        &dir,
        &[
            "--chains",
            "1",
            "--adapt-engaged",
            "0",
            "--stepsize",
            "0.75",
            "--draws",
            "30",
        ],
    );
    let csv = &chains[0];
    assert_eq!(setting(csv, "engaged"), "0");
    let step = csv.column_index("stepsize__").unwrap();
    assert!(csv.column(step).iter().all(|&s| s == 0.75));
    assert_eq!(csv.adaptation.as_ref().unwrap().stepsize, 0.75);
}

/// `--init FILE` and `--metric-file FILE` use FILE_<id>.json for chain <id> when it exists
/// (CmdStan's multi-chain rule), FILE for the others; the header names the file each chain
/// read.
#[test]
fn per_chain_init_and_metric_files() {
    let dir = scratch_dir("flags-per-chain");
    let inputs = dir.join("inputs");
    std::fs::create_dir_all(&inputs).unwrap();
    std::fs::write(inputs.join("init.json"), r#"{"theta": 0.3}"#).unwrap();
    std::fs::write(inputs.join("init_2.json"), r#"{"theta": 0.6}"#).unwrap();
    std::fs::write(inputs.join("metric.json"), r#"{"inv_metric": [0.5]}"#).unwrap();
    std::fs::write(inputs.join("metric_2.json"), r#"{"inv_metric": [0.9]}"#).unwrap();
    let out = dir.join("out");
    let init = inputs.join("init.json");
    let metric = inputs.join("metric.json");
    let chains = sample(
        &out,
        &[
            "--chains",
            "3",
            "--init",
            init.to_str().unwrap(),
            "--metric-file",
            metric.to_str().unwrap(),
            "--adapt-engaged",
            "0",
            "--draws",
            "20",
            "--seed",
            "2",
        ],
    );
    for (k, csv) in chains.iter().enumerate() {
        let id = k + 1;
        let (init_name, metric_name, value) = if id == 2 {
            ("init_2.json", "metric_2.json", 0.9)
        } else {
            ("init.json", "metric.json", 0.5)
        };
        assert!(setting(csv, "init").ends_with(init_name), "chain {id}");
        assert!(
            setting(csv, "metric_file").ends_with(metric_name),
            "chain {id}"
        );
        assert_eq!(
            csv.adaptation.as_ref().unwrap().inv_metric,
            Some(hazel_nuts::InverseMetric::Diag(vec![value]))
        );
    }
    // Only per-chain files, no shared one: accepted as well.
    std::fs::remove_file(inputs.join("init.json")).unwrap();
    std::fs::write(inputs.join("init_1.json"), r#"{"theta": 0.2}"#).unwrap();
    let chains = sample(
        &dir.join("out2"),
        &[
            "--chains",
            "2",
            "--init",
            init.to_str().unwrap(),
            "--draws",
            "5",
        ],
    );
    assert!(setting(&chains[0], "init").ends_with("init_1.json"));
    assert!(setting(&chains[1], "init").ends_with("init_2.json"));
}

/// A run's adapted step size and metric, given back with adaptation off, are used exactly as
/// they are (the adaptation block matches bit for bit), the run repeats bit for bit, and its
/// draws are right (Beta(3, 9): mean 0.25).
#[test]
fn warm_start_from_a_metric_file_reproduces() {
    let dir = scratch_dir("flags-warm");
    for metric in ["diag_e", "dense_e"] {
        let first = sample(
            &dir.join(format!("first-{metric}")),
            &["--chains", "1", "--seed", "9", "--metric", metric],
        );
        let adapted = first[0].adaptation.clone().expect("adapted");
        let inv_metric = match adapted.inv_metric.as_ref().unwrap() {
            hazel_nuts::InverseMetric::Diag(v) => format!("{v:?}"),
            hazel_nuts::InverseMetric::Dense { values, .. } => format!("[{values:?}]"),
            other => panic!("{other:?}"),
        };
        let file = dir.join(format!("metric-{metric}.json"));
        std::fs::write(&file, format!(r#"{{"inv_metric": {inv_metric}}}"#)).unwrap();
        let stepsize = format!("{:?}", adapted.stepsize);
        let warm_args = [
            "--chains",
            "2",
            "--seed",
            "10",
            "--metric-file",
            file.to_str().unwrap(),
            "--stepsize",
            &stepsize,
            "--adapt-engaged",
            "0",
            "--warmup",
            "0",
        ];
        let warm = sample(&dir.join(format!("warm-{metric}")), &warm_args);
        let again = sample(&dir.join(format!("again-{metric}")), &warm_args);
        for (a, b) in warm.iter().zip(&again) {
            assert_eq!(a.adaptation, Some(adapted.clone()), "{metric}");
            assert_eq!(a.draws, b.draws, "{metric}: the warm-started run repeats");
        }
        assert_eq!(setting(&warm[0], "metric"), metric);
        let theta = warm[0].column_index("theta").unwrap();
        let draws =
            ChainDraws::new(&warm.iter().map(|c| c.column(theta)).collect::<Vec<_>>()).unwrap();
        let mean = draws.values().iter().sum::<f64>() / draws.values().len() as f64;
        assert!(
            (mean - 0.25).abs() < 4.0 * mcse_mean(&draws),
            "{metric}: mean {mean}"
        );
    }
    // The file's matrix form decides the metric when --metric is not given.
    let chains = sample(
        &dir.join("inferred"),
        &[
            "--chains",
            "1",
            "--metric-file",
            dir.join("metric-dense_e.json").to_str().unwrap(),
            "--draws",
            "10",
        ],
    );
    assert_eq!(setting(&chains[0], "metric"), "dense_e");
    let _ = read_stan_csv(&dir.join("inferred").join("model-1.csv")).unwrap();
}

#[test]
fn conflicting_options_are_refused() {
    let model = example("bernoulli", "model.stan");
    let data = example("bernoulli", "data.json");
    let dir = scratch_dir("flags-refused");
    let dense = dir.join("dense.json");
    std::fs::write(&dense, r#"{"inv_metric": [[1.0]]}"#).unwrap();
    for (extra, expected) in [
        (
            vec!["--adaptation", "low-rank", "--metric", "dense_e"],
            "learns its own low-rank",
        ),
        (
            vec!["--adaptation", "diag-grad", "--metric", "unit_e"],
            "learns a diagonal metric",
        ),
        (
            vec![
                "--metric",
                "diag_e",
                "--metric-file",
                dense.to_str().unwrap(),
            ],
            "dense matrix",
        ),
        (vec!["--stepsize", "0"], "--stepsize"),
        (vec!["--stepsize-jitter", "1.5"], "--stepsize-jitter"),
        (vec!["--sig-figs", "0"], "--sig-figs"),
        (vec!["--adapt-engaged", "maybe"], "expected 1 or 0"),
    ] {
        let mut args = vec![
            "sample",
            &model,
            "--data",
            &data,
            "--output-dir",
            dir.to_str().unwrap(),
            "--quiet",
        ];
        args.extend(extra.iter().copied());
        let output = hazel(&args);
        assert!(!output.status.success(), "{extra:?} was accepted");
        let stderr = text(&output.stderr);
        assert!(stderr.contains(expected), "{extra:?}: {stderr}");
    }
}
