//! End-to-end acceptance: `hazel sample` on posteriordb posteriors (4 chains × 1000 warmup +
//! 1000 draws, the reference's adapt_delta and max_treedepth), judged by `hazel compare`
//! against the suite's reference summaries (the rule of `hazel_diagnostics::reference`).
//!
//! Oracle: posteriordb's reference posteriors (10 000 near-independent draws from Stan).
//!
//! Every tier-1 and tier-2 posterior with a program in `corpus/posteriordb/` runs: 31
//! posteriors, 3.5–6.5 minutes in the dev profile on 2 shared cores (measured 2026-11-21; the
//! slowest are the earnings regressions at 5–110 s each). `HAZEL_ACCEPTANCE_SUBSET=1` runs only the
//! representative `SUBSET` (about a minute) for quick local checks. The release-mode runner with a table is
//! `bench/src/bin/e2e_posteriordb.rs`, whose harness this test shares. Without the suite
//! (`../shared/posteriordb` beside the checkout, or `$HAZEL_POSTERIORDB`) the test says so and
//! passes.
//!
//! A posterior fails the test when it fails the rule or hazel cannot sample it. An
//! inconclusive result (R-hat > 1.01 or bulk ESS < 400 after 1000 warmup iterations) is printed
//! but does not fail the test by itself: with ESS near 800, R-hat exceeds 1.01 by chance now and
//! then (kidscore_interaction does so with Stan's settings too). A sampler that rarely converges
//! still fails: at least half of the posteriors must reach a conclusive pass.

#[path = "../../../bench/src/bin/e2e_posteriordb.rs"]
mod e2e;

use std::path::Path;

/// The quick subset: every kind of tier-1/2 model at least once (regression with a badly
/// scaled posterior, a hierarchical model with transformed parameters in the output, data
/// transformations, a time series recursion, a bound that depends on a parameter, an HMM with
/// simplex and positive_ordered parameters, a GP with a Cholesky factor).
const SUBSET: &[&str] = &[
    "kidiq-kidscore_interaction",
    "earnings-earn_height",
    "eight_schools-eight_schools_noncentered",
    "kidiq_with_mom_work-kidscore_mom_work",
    "mesquite-logmesquite_logvas",
    "arma-arma11",
    "garch-garch11",
    "hmm_example-hmm_example",
    "gp_pois_regr-gp_regr",
];

#[test]
fn posteriordb_posteriors_match_their_references() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let suite = e2e::suite_dir();
    if !suite.join("suite.json").exists() {
        eprintln!(
            "SKIPPED: the posteriordb suite is not at {} (set HAZEL_POSTERIORDB to run this test)",
            suite.display()
        );
        return;
    }
    let subset = std::env::var("HAZEL_ACCEPTANCE_SUBSET").is_ok_and(|v| v == "1");
    let mut posteriors = e2e::posteriors(&repo, &suite, &[1, 2]).expect("suite index");
    if subset {
        posteriors.retain(|p| SUBSET.contains(&p.name.as_str()));
    }
    assert!(
        !posteriors.is_empty(),
        "no posterior with a program in corpus/posteriordb"
    );
    let hazel = Path::new(env!("CARGO_BIN_EXE_hazel"));
    let out_dir = std::env::temp_dir().join(format!("hazel-acceptance-{}", std::process::id()));
    let outcomes = e2e::run_all(
        hazel,
        &posteriors,
        &out_dir,
        &e2e::RunSettings::default(),
        1,
    );
    let table = e2e::table(&outcomes);
    eprintln!("{table}");
    let _ = std::fs::remove_dir_all(&out_dir);
    let bad: Vec<&str> = outcomes
        .iter()
        .filter(|o| matches!(o.verdict.as_str(), "fail" | "error" | "timeout"))
        .map(|o| o.name.as_str())
        .collect();
    assert!(bad.is_empty(), "failed: {bad:?}\n{table}");
    let passed = outcomes.iter().filter(|o| o.verdict == "pass").count();
    assert!(
        2 * passed >= outcomes.len(),
        "only {passed} of {} posteriors converged well enough to pass\n{table}",
        outcomes.len()
    );
}
