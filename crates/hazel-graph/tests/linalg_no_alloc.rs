//! Steady-state gradient evaluation of the matrix-algebra fixture programs (every
//! `Op::Linalg` function: solves, inverses, determinants, eigen, SVD, QR, matrix_exp)
//! allocates nothing: their factorisations and workspaces live in the op's scratch.
//!
//! A counting global allocator sees every allocation in this test binary, so it holds a
//! single test.

use hazel_density::LogDensity;
use hazel_graph::{CompileOptions, CompiledModel};
use serde_json::Value;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

struct CountingAlloc;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// The one place this file calls `compile`.
fn compile_program(src: &str, data_json: &str) -> CompiledModel {
    let parsed = hazel_check::check_source("model.stan", src);
    let program = parsed.checked.as_ref().expect("program parses");
    let data = hazel_data::DataFile::parse(data_json).expect("data parses");
    hazel_graph::compile(program, &data, &CompileOptions::default()).expect("compiles")
}

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
        let model = compile_program(p["code"].as_str().unwrap(), &p["data"].to_string());
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
        ALLOCATIONS.store(0, Ordering::SeqCst);
        COUNTING.store(true, Ordering::SeqCst);
        let mut all_equal = true;
        for _ in 0..20 {
            let lp = model.log_density_gradient(&mut ws, &q, &mut grad).unwrap();
            all_equal &= lp.to_bits() == warm.to_bits();
        }
        COUNTING.store(false, Ordering::SeqCst);
        assert!(all_equal, "{name}: evaluations are deterministic");
        let n = ALLOCATIONS.load(Ordering::SeqCst);
        assert_eq!(n, 0, "{name}: {n} allocations in 20 evaluations");
    }
}
