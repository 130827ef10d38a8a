//! hazel's diagnostics against ArviZ 0.22 on the committed fixtures
//! (`tests/fixtures/arviz_fixtures.json`, written by `tests/fixtures/make_fixtures.py`).

use hazel_diagnostics::{e_bfmi, ess_mean, stats::normal_quantile, ChainDraws, ColumnSummary};
use serde_json::Value;

const RELATIVE_TOLERANCE: f64 = 1e-6;

fn fixtures() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/arviz_fixtures.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture file"))
        .expect("fixture JSON")
}

fn matrix(value: &Value) -> Vec<Vec<f64>> {
    value
        .as_array()
        .expect("chains")
        .iter()
        .map(|chain| {
            chain
                .as_array()
                .expect("draws")
                .iter()
                .map(|v| v.as_f64().expect("number"))
                .collect()
        })
        .collect()
}

fn assert_close(what: &str, ours: f64, theirs: f64) -> f64 {
    let scale = theirs.abs().max(1e-300);
    assert!(
        (ours - theirs).abs() <= RELATIVE_TOLERANCE * scale,
        "{what}: hazel {ours} vs ArviZ {theirs} (relative difference {:e})",
        (ours - theirs).abs() / scale
    );
    (ours - theirs).abs() / scale
}

#[test]
fn summaries_match_arviz() {
    let fixtures = fixtures();
    let sets = fixtures["draw_sets"].as_array().expect("draw sets");
    assert!(sets.len() >= 8);
    let mut worst = 0.0f64;
    for set in sets {
        let name = set["name"].as_str().expect("name");
        let draws = ChainDraws::new(&matrix(&set["draws"])).expect("rectangular draws");
        let ours = ColumnSummary::new(name, &draws);
        let theirs = &set["arviz"];
        let expected = |key: &str| {
            theirs[key]
                .as_f64()
                .unwrap_or_else(|| panic!("{name}: {key}"))
        };
        for (key, value) in [
            ("mean", ours.mean),
            ("sd", ours.sd),
            ("mcse_mean", ours.mcse_mean),
            ("mcse_sd", ours.mcse_sd),
            ("q5", ours.q5),
            ("q50", ours.q50),
            ("q95", ours.q95),
            ("ess_bulk", ours.ess_bulk),
            ("ess_tail", ours.ess_tail),
            ("ess_mean", ess_mean(&draws)),
            ("r_hat", ours.r_hat),
        ] {
            worst = worst.max(assert_close(&format!("{name} {key}"), value, expected(key)));
        }
    }
    println!("largest relative difference from ArviZ: {worst:e}");
}

#[test]
fn e_bfmi_matches_arviz() {
    let fixtures = fixtures();
    let energy = matrix(&fixtures["energy"]["draws"]);
    let expected = fixtures["energy"]["bfmi"].as_array().expect("bfmi");
    assert_eq!(energy.len(), expected.len());
    for (chain, (e, theirs)) in energy.iter().zip(expected).enumerate() {
        assert_close(
            &format!("E-BFMI of chain {chain}"),
            e_bfmi(e),
            theirs.as_f64().expect("number"),
        );
    }
}

#[test]
fn normal_quantile_matches_scipy() {
    for pair in fixtures()["normal_quantile"].as_array().expect("pairs") {
        let p = pair[0].as_f64().expect("p");
        let x = pair[1].as_f64().expect("x");
        assert!(
            (normal_quantile(p) - x).abs() <= 1e-14 * x.abs().max(1.0),
            "ppf({p}) = {} vs {x}",
            normal_quantile(p)
        );
    }
}

#[test]
fn invalid_inputs_give_nan_like_arviz() {
    let one_chain = ChainDraws::new(&[vec![1.0, 2.0, 3.0, 4.0, 5.0]]).expect("draws");
    assert!(
        hazel_diagnostics::rhat_rank(&one_chain).is_nan(),
        "R-hat needs two chains"
    );
    assert!(hazel_diagnostics::ess_bulk(&one_chain).is_finite());
    let too_short = ChainDraws::new(&[vec![1.0, 2.0, 3.0], vec![2.0, 3.0, 1.0]]).expect("draws");
    assert!(hazel_diagnostics::ess_bulk(&too_short).is_nan());
    let with_nan =
        ChainDraws::new(&[vec![1.0, f64::NAN, 3.0, 4.0], vec![1.0, 2.0, 3.0, 4.0]]).expect("draws");
    assert!(hazel_diagnostics::rhat_rank(&with_nan).is_nan());
    assert!(ChainDraws::new(&[vec![1.0; 5], vec![1.0; 4]]).is_err());
}
