//! Random programs from the differential tester (`scripts/difftest/`), each checked against
//! stanli's log density and gradient.
//!
//! `tests/fixtures/difftest/NNNN/` holds a generated program (`model.stan`), its data, the
//! unconstrained points and `expected.json` (stanli 0.24 `log_prob_grad`: Jacobian included,
//! constants of `~` dropped, CmdStan's `lp__`). Every fixture matched when it was written; this
//! test keeps it that way. Regenerate with
//!
//!     /work/venv/bin/python scripts/difftest/run.py --count 300 --seed 100000 \
//!         --write-fixtures crates/hazel-cli/tests/fixtures/difftest --max-fixtures 150
//!
//! (`run.py` only writes programs on which hazel matched stanli at the time).

mod common;

use common::{hazel, repo, text};
use serde_json::Value;
use std::path::Path;

const RTOL: f64 = 1e-8;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= RTOL * 1f64.max(a.abs()).max(b.abs())
}

fn numbers(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("a list of numbers")
        .iter()
        .map(|x| x.as_f64().expect("a number"))
        .collect()
}

/// Runs hazel on one fixture; returns a description of every disagreement.
fn check_case(dir: &Path) -> Vec<String> {
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap()).unwrap();
    let points = expected["points"].as_array().expect("points");
    let path = |f: &str| dir.join(f).to_string_lossy().into_owned();
    let out = hazel(&[
        "log-density",
        &path("model.stan"),
        "--data",
        &path("data.json"),
        "--points",
        &path("points.json"),
    ]);
    if !out.status.success() {
        return vec![format!("{name}: hazel failed: {}", text(&out.stderr))];
    }
    let rows: Value = serde_json::from_slice(&out.stdout).expect("hazel's JSON output");
    let rows = rows.as_array().expect("a list of rows");
    assert_eq!(rows.len(), points.len(), "{name}: number of points");
    let mut problems = Vec::new();
    for (k, (row, want)) in rows.iter().zip(points).enumerate() {
        let (lp, want_lp) = (row["lp"].as_f64().unwrap(), want["lp"].as_f64().unwrap());
        if !close(lp, want_lp) {
            problems.push(format!(
                "{name} point {}: lp hazel {lp:e} stanli {want_lp:e}",
                k + 1
            ));
        }
        let (grad, want_grad) = (numbers(&row["grad"]), numbers(&want["grad"]));
        assert_eq!(grad.len(), want_grad.len(), "{name}: gradient length");
        for (i, (g, w)) in grad.iter().zip(&want_grad).enumerate() {
            if !close(*g, *w) {
                problems.push(format!(
                    "{name} point {}: grad[{}] hazel {g:e} stanli {w:e}",
                    k + 1,
                    i + 1
                ));
            }
        }
    }
    problems
}

#[test]
fn random_programs_match_stanli() {
    let root = repo().join("crates/hazel-cli/tests/fixtures/difftest");
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .expect("fixture directory")
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("expected.json").exists())
        .collect();
    dirs.sort();
    assert!(
        dirs.len() >= 100,
        "expected ≥ 100 difftest fixtures, found {}",
        dirs.len()
    );
    let problems: Vec<String> = dirs.iter().flat_map(|d| check_case(d)).collect();
    assert!(
        problems.is_empty(),
        "{} disagreement(s) with stanli:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
