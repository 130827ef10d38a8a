//! BridgeStan's model interface on a compiled model (`model/constrained.rs`): output columns
//! by block, unconstrained names, constraining with a choice of blocks, unconstraining flat
//! values and JSON, against stanli's BridgeStan model (the Python package's fixtures,
//! `python/tests/fixtures/bridgestan.json`, made by `scripts/python/make_fixtures.py`).

mod common;

use common::{floats, rel};
use hazel_density::{LogDensity, Model, StreamRng};
use hazel_graph::{compile, CompileOptions, CompiledModel};
use serde_json::Value;
use std::path::Path;

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn fixtures() -> Value {
    let path = repo().join("python/tests/fixtures/bridgestan.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("json")
}

fn model_of(spec: &Value) -> CompiledModel {
    let program = repo().join(spec["program"].as_str().expect("program"));
    let checked = hazel_check::check_file(&program, &[]).expect("reads");
    let data = match spec["data"].as_str() {
        Some(path) => {
            hazel_data::DataFile::parse(&std::fs::read_to_string(repo().join(path)).unwrap())
                .expect("data")
        }
        None => hazel_data::DataFile::empty(),
    };
    compile(
        checked.checked.as_ref().expect("checks"),
        &data,
        &CompileOptions::default(),
    )
    .expect("compiles")
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|s| s.as_str().expect("string").to_string())
        .collect()
}

fn assert_close(what: &str, actual: &[f64], expected: &[f64], tol: f64) {
    assert_eq!(actual.len(), expected.len(), "{what}: length");
    for (k, (a, e)) in actual.iter().zip(expected).enumerate() {
        assert!(rel(*a, *e) <= tol, "{what}[{k}]: {a} vs {e}");
    }
}

#[test]
fn names_counts_and_values_match_bridgestan() {
    let fixtures = fixtures();
    let models = fixtures["models"].as_object().expect("models");
    assert!(models.len() >= 5);
    for (name, spec) in models {
        let model = model_of(spec);
        assert_eq!(model.dim() as u64, spec["param_unc_num"].as_u64().unwrap());
        assert_eq!(
            model.unconstrained_names().expect("names"),
            strings(&spec["param_unc_names"]),
            "{name}: unconstrained names"
        );
        let columns = model.output_columns();
        for (tp, gq) in [(false, false), (false, true), (true, false), (true, true)] {
            // The fixture's keys spell Python's booleans.
            let py = |b: bool| if b { "True" } else { "False" };
            let key = format!("tp={},gq={}", py(tp), py(gq));
            assert_eq!(
                columns.count(tp, gq) as u64,
                spec["param_num"][&key].as_u64().unwrap(),
                "{name}: {key}"
            );
        }
        let all = strings(&spec["param_names"]["tp=True,gq=True"]);
        assert_eq!(model.output_names(), all, "{name}: output names");

        let mut ws = model.new_workspace();
        for point in spec["points"].as_array().unwrap() {
            let q = floats(&point["q"]);
            let mut out = vec![0.0; columns.count(false, false)];
            model
                .write_constrained(&mut ws, &q, false, false, None, &mut out)
                .expect("constrains");
            assert_close(name, &out, &floats(&point["constrained"]), 1e-12);
            let mut out = vec![0.0; columns.count(true, false)];
            model
                .write_constrained(&mut ws, &q, true, false, None, &mut out)
                .expect("constrains");
            assert_close(name, &out, &floats(&point["constrained_tp"]), 1e-12);
            if point.get("constrained_gq").is_some() {
                let mut rng = StreamRng::new(1, 0, hazel_rng::Purpose::GeneratedQuantities);
                let mut out = vec![0.0; columns.count(false, true)];
                model
                    .write_constrained(&mut ws, &q, false, true, Some(&mut rng), &mut out)
                    .expect("constrains");
                assert_close(name, &out, &floats(&point["constrained_gq"]), 1e-12);
            }
            let theta = floats(&point["constrained"]);
            let back = model.unconstrain_columns(&theta).expect("unconstrains");
            assert_close(name, &back, &floats(&point["unconstrained"]), 1e-9);
            let json = serde_json::to_string(&point["json"]).unwrap();
            let values = hazel_data::DataFile::parse(&json).expect("json");
            let back = model.unconstrain_json(&values).expect("unconstrains json");
            assert_close(name, &back, &floats(&point["unconstrained_json"]), 1e-9);
        }
    }
}

/// Tuples (which stanli's models cannot have): constraining and unconstraining invert each
/// other, and the unconstrained names follow the layout.
#[test]
fn tuple_parameters_round_trip() {
    let program = r#"
parameters {
  tuple(real<lower=0>, simplex[3]) t;
  array[2] tuple(real, vector<lower=-1, upper=1>[2]) u;
}
model { }
"#;
    let checked = hazel_check::check_source("m.stan", program);
    let model = compile(
        checked.checked.as_ref().expect("checks"),
        &hazel_data::DataFile::empty(),
        &CompileOptions::default(),
    )
    .expect("compiles");
    assert_eq!(
        model.unconstrained_names().unwrap(),
        ["t:1", "t:2.1", "t:2.2", "u.1:1", "u.1:2.1", "u.1:2.2", "u.2:1", "u.2:2.1", "u.2:2.2"]
    );
    let q: Vec<f64> = (0..model.dim()).map(|i| 0.3 * i as f64 - 1.0).collect();
    let mut ws = model.new_workspace();
    let mut theta = vec![0.0; model.output_columns().parameters];
    model
        .write_constrained(&mut ws, &q, false, false, None, &mut theta)
        .unwrap();
    let back = model.unconstrain_columns(&theta).unwrap();
    assert_close("tuple round trip", &back, &q, 1e-12);
}

#[test]
fn errors_name_the_parameter() {
    let program = "parameters { real<lower=0> s; simplex[3] w; } model { }";
    let checked = hazel_check::check_source("m.stan", program);
    let model = compile(
        checked.checked.as_ref().expect("checks"),
        &hazel_data::DataFile::empty(),
        &CompileOptions::default(),
    )
    .unwrap();
    let error = model
        .unconstrain_columns(&[-1.0, 0.2, 0.3, 0.5])
        .unwrap_err();
    assert!(error.message.contains('s'), "{}", error.message);
    let error = model
        .unconstrain_columns(&[1.0, 0.2, 0.3, 0.6])
        .unwrap_err();
    assert!(error.message.contains('w'), "{}", error.message);
    let error = model.unconstrain_columns(&[1.0, 0.2]).unwrap_err();
    assert!(error.message.contains("expected 4"), "{}", error.message);
    let values = hazel_data::DataFile::parse(r#"{"s": 1.0}"#).unwrap();
    let error = model.unconstrain_json(&values).unwrap_err();
    assert_eq!(error.variable.as_deref(), Some("w"));
    let mut ws = model.new_workspace();
    let mut out = vec![0.0; 4];
    assert!(model
        .write_constrained(&mut ws, &[0.0, 0.0, 0.0], false, true, None, &mut out)
        .is_err());
}
