//! Steady-state gradient evaluation of the matrix-algebra fixture programs (every
//! `Op::Linalg` function: solves, inverses, determinants, eigen, SVD, QR, matrix_exp)
//! allocates nothing: their factorisations and workspaces live in the op's scratch.
//!
//! Allocations are counted on the evaluating thread only (`counting_alloc`).

use serde_json::Value;

mod common;
mod counting_alloc;

use common::build;

#[global_allocator]
static GLOBAL: counting_alloc::CountingAlloc = counting_alloc::CountingAlloc;

#[test]
fn matrix_algebra_evaluation_does_not_allocate() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/linalg_library.json"
    ))
    .unwrap();
    let fixture: Value = serde_json::from_str(&text).unwrap();
    for p in fixture["programs"].as_array().unwrap() {
        let name = p["name"].as_str().unwrap();
        let model = build(p["code"].as_str().unwrap(), &p["data"].to_string()).expect("compiles");
        assert!(!model.is_dynamic(), "{name}");
        let q: Vec<f64> = p["points"][0]["q"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        counting_alloc::assert_evaluations_do_not_allocate(name, &model, &q);
    }
}
