//! The registry functions no other oracle covered (`registry_coverage` computes which), against
//! `tests/fixtures/coverage.json` (`scripts/library/make_coverage_fixtures.py`): stanli 0.24.0
//! log densities and gradients of small programs at seeded points, each also against central
//! differences of the oracle's log density; and `_rng` moments over many generated-quantities
//! draws.

mod common;

use common::{build, run_group, FdRule};
use hazel_density::{LogDensity, Model};
use serde_json::Value;

/// The cdfs whose Stan gradients are numerical approximations (incomplete gamma/beta
/// derivatives, series): within `FD_TOL` of the finite differences, and of stanli within this.
const APPROX_CDF_TOL: f64 = 1e-3;

#[test]
fn cdfs_match_stanli() {
    run_group("coverage.json", &["cdf_"], 20, FdRule::Both);
}

#[test]
fn cdfs_with_approximate_stan_gradients_match_finite_differences() {
    run_group(
        "coverage.json",
        &["approx_cdf_"],
        6,
        FdRule::ApproximateStan(APPROX_CDF_TOL),
    );
}

/// Where stanli itself is wrong (exp_mod_normal_cdf at large λσ, gumbel_cdf's gradient near
/// underflow; the fixture's `why_not_stanli` says how), against mpmath at 50 digits.
#[test]
fn cdfs_where_stanli_is_wrong_match_mpmath() {
    run_group("coverage.json", &["mpmath_"], 2, FdRule::Both);
}

#[test]
fn scalar_functions_match_stanli() {
    run_group(
        "coverage.json",
        &["scalar_", "bessel_second_kind"],
        3,
        FdRule::Both,
    );
}

#[test]
fn matrix_functions_match_stanli() {
    run_group("coverage.json", &["matrix_"], 1, FdRule::Both);
}

#[test]
fn constrain_and_unconstrain_functions_match_stanli() {
    run_group(
        "coverage.json",
        &["constrain_", "unconstrain_"],
        2,
        FdRule::Both,
    );
}

/// Each rng case: `draws` generated-quantities rows from one stream; the mean of every listed
/// column within 5 standard errors (the exact per-draw standard deviation over √draws) of
/// its exact mean.
#[test]
fn rngs_match_their_moments() {
    let path = format!(
        "{}/tests/fixtures/coverage.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("fixture json");
    let cases = v["rng"].as_array().expect("rng cases");
    assert!(cases.len() >= 5);
    let mut failures = Vec::new();
    for (k, case) in cases.iter().enumerate() {
        let function = case["name"].as_str().expect("name");
        let model = build(
            case["program"].as_str().expect("program"),
            case["data"].as_str().expect("data"),
        )
        .unwrap_or_else(|e| panic!("{function}: {e}"));
        let names = model.output_names();
        let mut ws = model.new_workspace();
        let mut row = vec![0.0; names.len()];
        let mut sums = vec![0.0; names.len()];
        let draws = case["draws"].as_u64().expect("draws") as usize;
        let mut rng = hazel_density::StreamRng::new(
            1000 + k as u64,
            0,
            hazel_rng::Purpose::GeneratedQuantities,
        );
        let q = vec![0.0; model.dim()];
        for _ in 0..draws {
            model
                .write_output(&mut ws, &q, &mut rng, &mut row)
                .unwrap_or_else(|e| panic!("{function}: {e}"));
            for (s, x) in sums.iter_mut().zip(&row) {
                *s += x;
            }
        }
        let expected = case["expected"].as_object().expect("expected");
        assert!(!expected.is_empty());
        for (column, want) in expected {
            let i = names
                .iter()
                .position(|n| n == column)
                .unwrap_or_else(|| panic!("{function}: no column {column} in {names:?}"));
            let (mean, sd) = (
                want[0].as_f64().expect("mean"),
                want[1].as_f64().expect("sd"),
            );
            let got = sums[i] / draws as f64;
            let se = sd / (draws as f64).sqrt();
            if (got - mean).abs() > 5.0 * se {
                failures.push(format!(
                    "{function}: mean of {column} {got} vs {mean} (se {se:.2e})"
                ));
            } else {
                println!("{function}: {column} {got:.4} vs {mean:.4} (se {se:.1e})");
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
