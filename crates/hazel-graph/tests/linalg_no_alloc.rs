//! Steady-state gradient evaluation of the matrix-algebra fixture programs (every
//! `Op::Linalg` function: solves, inverses, determinants, eigen, SVD, QR, matrix_exp)
//! allocates nothing: their factorisations and workspaces live in the op's scratch.
//!
//! Allocations are counted on the evaluating thread only (`counting_alloc`).

use hazel_density::LogDensity;
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
        let mut grad = vec![0.0; model.dim()];
        let mut ws = model.new_workspace();
        let warm = model.log_density_gradient(&mut ws, &q, &mut grad).unwrap();
        counting_alloc::start();
        let mut all_equal = true;
        for _ in 0..20 {
            let lp = model.log_density_gradient(&mut ws, &q, &mut grad).unwrap();
            all_equal &= lp.to_bits() == warm.to_bits();
        }
        let n = counting_alloc::stop();
        assert!(all_equal, "{name}: evaluations are deterministic");
        assert_eq!(n, 0, "{name}: {n} allocations in 20 evaluations");
    }
}
