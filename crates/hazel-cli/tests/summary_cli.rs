//! `hazel summary` run as a program on CmdStan-format files (with saved warmup).
//! Oracle: ArviZ 0.22's summary of the same files, written by
//! `crates/hazel-output/tests/fixtures/make_cmdstan_fixture.py`.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../hazel-output/tests/fixtures")
        .join(name)
}

fn cmdstan_files() -> Vec<PathBuf> {
    vec![
        fixture("cmdstan_save_warmup_1.csv"),
        fixture("cmdstan_save_warmup_2.csv"),
    ]
}

fn hazel(args: &[&str], files: &[PathBuf]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hazel"))
        .args(args)
        .args(files)
        .output()
        .expect("run hazel")
}

fn scratch_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hazel-cli-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

#[test]
fn json_summary_matches_arviz_on_cmdstan_files() {
    let output = hazel(&["summary", "--format", "json"], &cmdstan_files());
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let ours: Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("cmdstan_save_warmup_expected.json")).expect("fixture"),
    )
    .expect("fixture JSON");
    let expected = expected["summary"].as_object().expect("summary");
    assert_eq!(
        ours.as_object().expect("object").len(),
        expected.len(),
        "lp__ and the 4 model columns"
    );
    for (column, stats) in expected {
        for (stat, theirs) in stats.as_object().expect("stats") {
            let theirs = theirs.as_f64().expect("number");
            let mine = ours[column][stat]
                .as_f64()
                .unwrap_or_else(|| panic!("{column} {stat} missing"));
            assert!(
                (mine - theirs).abs() <= 1e-6 * theirs.abs().max(1e-12),
                "{column} {stat}: hazel {mine} vs ArviZ {theirs}"
            );
        }
    }
    // The warnings go to stderr in JSON mode.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("3 of 400 (0.75%) transitions ended with a divergence."),
        "{stderr}"
    );
}

#[test]
fn table_summary_shows_columns_and_cmdstan_style_warnings() {
    let output = hazel(&["summary"], &cmdstan_files());
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("Inference for Stan model: fixture_model"),
        "{stdout}"
    );
    assert!(
        stdout.contains("2 chains: each with 200 post-warmup draws"),
        "{stdout}"
    );
    for header in [
        "Mean", "MCSE", "StdDev", "5%", "50%", "95%", "ESS_bulk", "ESS_tail", "R_hat",
    ] {
        assert!(stdout.contains(header), "{header}");
    }
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("lp__") || l.starts_with("theta") || l.starts_with("W.1.2.3"))
        .collect();
    assert_eq!(rows.len(), 3, "{stdout}");
    assert!(!stdout.contains("accept_stat__"));
    assert!(stdout.contains("3 of 400 (0.75%) transitions ended with a divergence."));
    assert!(stdout.contains("2 of 400 (0.50%) transitions hit the maximum treedepth limit of 10"));
}

#[test]
fn hazel_written_and_truncated_files() {
    use hazel_draws::{AdaptationInfo, Columns, Draw, DrawSink, InverseMetric, Timing};
    use hazel_nuts::{DrawStats, RunConfig};
    use hazel_output::{CsvHeaderInfo, StanCsvWriter};
    let dir = scratch_dir("hazel-files");
    let mut run = RunConfig::default();
    run.sampler.num_samples = 100;
    let mut paths = Vec::new();
    for chain in 0..2 {
        let path = dir.join(format!("out_{}.csv", chain + 1));
        let mut sink = StanCsvWriter::create(
            &path,
            CsvHeaderInfo::new("m", "", "out.csv", &run.info(), chain),
        )
        .expect("create");
        sink.begin(&Columns {
            stats: DrawStats::columns(),
            values: &["x".to_string()],
        })
        .expect("begin");
        sink.adaptation_done(&AdaptationInfo::Hmc {
            stepsize: 1.0,
            inv_metric: &InverseMetric::Diag(vec![1.0]),
        })
        .expect("adaptation");
        for i in 0..100 {
            let x = ((i * 37 + chain * 11) % 100) as f64 / 10.0;
            let stats = DrawStats {
                lp: -x,
                accept_stat: 0.9,
                stepsize: 1.0,
                treedepth: 2,
                n_leapfrog: 3,
                divergent: false,
                energy: x + (i % 7) as f64,
            };
            sink.draw(&Draw {
                warmup: false,
                stats: &stats.values(),
                values: &[x],
            })
            .expect("draw");
        }
        sink.finish(&Timing::default()).expect("finish");
        paths.push(path);
    }
    let output = hazel(&["summary", "--format", "json"], &paths);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let mean = summary["x"]["mean"].as_f64().expect("mean");
    assert!(
        (mean - 4.95).abs() < 1e-12,
        "x takes the values 0, 0.1, …, 9.9 once per chain: {mean}"
    );

    // Cut the second file mid-row: its last row is dropped, the chains are cut to equal length.
    let text = std::fs::read_to_string(&paths[1]).expect("read");
    let cut = text.rfind("\n# \n#  Elapsed").expect("timing block") - 5;
    std::fs::write(&paths[1], &text[..cut]).expect("truncate");
    let output = hazel(&["summary"], &paths);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("last line is incomplete"), "{stderr}");
    assert!(
        stderr.contains("different numbers of draws (100, 99)"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("each with 99 post-warmup draws"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_input_is_a_clear_error_not_a_panic() {
    let dir = scratch_dir("bad-input");
    let missing = dir.join("missing.csv");
    let output = hazel(&["summary"], std::slice::from_ref(&missing));
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("error: ") && stderr.contains("missing.csv"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"));

    let bad = dir.join("bad.csv");
    std::fs::write(&bad, "lp__,theta\n1,2\n1,two\n").expect("write");
    let output = hazel(&["summary"], std::slice::from_ref(&bad));
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("bad.csv:3:") && stderr.contains("`two` is not a number"),
        "{stderr}"
    );

    // Files from different models.
    let other = dir.join("other.csv");
    std::fs::write(&other, "lp__,phi\n1,2\n").expect("write");
    let output = hazel(&["summary"], &[fixture("cmdstan_save_warmup_1.csv"), other]);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("columns differ"));

    let output = hazel(&["summary"], &[]);
    assert!(!output.status.success(), "files are required");
    std::fs::remove_dir_all(&dir).ok();
}
