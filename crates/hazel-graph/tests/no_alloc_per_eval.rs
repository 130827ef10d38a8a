//! Steady-state gradient evaluation of a static graph allocates nothing, serially and with
//! within-chain threads.
//!
//! A counting global allocator sees every allocation in this test binary, on every thread
//! (the caller's and the rayon workers'); this file holds a single test so that no other test
//! runs concurrently and disturbs the count.
//!
//! What remains with `threads_per_chain > 1`, and why it is bounded rather than zero: each
//! evaluation enters the workspace's pool with `ThreadPool::install` from outside the pool,
//! which pushes one job onto rayon's global injector queue. That queue (crossbeam's
//! `Injector`) is a linked list of fixed-size blocks of 63 slots, so one block is allocated
//! (and the spent one freed) every 63 injected jobs, independent of the model. Everything the
//! engine does per evaluation — including the per-chunk partial sums of parallel density ops
//! — reuses workspace buffers. The test therefore demands zero allocations serially and at
//! most one allocation per 16 evaluations with threads (a single per-evaluation `Vec` would
//! already give one per evaluation).

use hazel_density::LogDensity;
use hazel_graph::{compile, CompileOptions};
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

/// A vectorised likelihood over 20 000 observations (≥ 2 · `PAR_MIN` = 8192, so the density
/// ops and elementwise ops take the parallel path with 2 threads), plus a small scalar part.
const PROGRAM: &str = r#"
data {
  int<lower=0> N;
  vector[N] x;
  vector[N] y;
}
parameters {
  real alpha;
  real beta;
  real<lower=0> sigma;
}
model {
  alpha ~ normal(0, 2);
  beta ~ normal(0, 2);
  sigma ~ exponential(1);
  y ~ normal(alpha + beta * x, sigma);
  y ~ student_t(5, alpha + beta * x, sigma);
}
"#;

fn data_json(n: usize) -> String {
    let x: Vec<String> = (0..n)
        .map(|i| format!("{:.4}", (i % 97) as f64 / 97.0))
        .collect();
    let y: Vec<String> = (0..n)
        .map(|i| {
            format!(
                "{:.4}",
                1.0 + 2.0 * (i % 97) as f64 / 97.0 + ((i * 31) % 17) as f64 / 17.0 - 0.5
            )
        })
        .collect();
    format!(
        r#"{{"N": {n}, "x": [{}], "y": [{}]}}"#,
        x.join(","),
        y.join(",")
    )
}

/// Allocations during `evals` gradient evaluations after one warm-up evaluation.
fn allocations_per_run(threads_per_chain: usize, evals: usize) -> usize {
    let parsed = hazel_check::check_source("model.stan", PROGRAM);
    let program = parsed.checked.expect("program parses");
    let data = hazel_data::DataFile::parse(&data_json(20_000)).expect("data parses");
    let model = compile(
        &program,
        &data,
        &CompileOptions {
            seed: 1,
            threads_per_chain,
            ..Default::default()
        },
    )
    .expect("compiles");
    assert!(!model.is_dynamic(), "the test needs the static path");
    let q = vec![0.3, 1.7, -0.2];
    let mut grad = vec![0.0; model.dim()];
    let mut ws = model.new_workspace();
    let warm = model
        .log_density_gradient(&mut ws, &q, &mut grad)
        .expect("evaluates");
    assert!(warm.is_finite());
    ALLOCATIONS.store(0, Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
    let mut all_equal = true;
    for _ in 0..evals {
        let lp = model
            .log_density_gradient(&mut ws, &q, &mut grad)
            .expect("evaluates");
        all_equal &= lp.to_bits() == warm.to_bits();
    }
    COUNTING.store(false, Ordering::SeqCst);
    assert!(all_equal, "evaluations are deterministic");
    ALLOCATIONS.load(Ordering::SeqCst)
}

#[test]
fn steady_state_gradient_evaluation_does_not_allocate() {
    let serial = allocations_per_run(1, 50);
    assert_eq!(
        serial, 0,
        "serial evaluation allocated {serial} times in 50 evaluations"
    );
    let evals = 200;
    let threaded = allocations_per_run(2, evals);
    eprintln!("allocations with 2 threads in {evals} evaluations: {threaded}");
    assert!(
        threaded * 16 <= evals,
        "threaded evaluation allocated {threaded} times in {evals} evaluations"
    );
}
