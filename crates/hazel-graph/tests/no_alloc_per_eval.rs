//! Steady-state gradient evaluation of a static graph allocates nothing, on every executor:
//! the serial reference, the threaded one (within its rayon allowance, below) and the batched
//! one (single-point calls and `log_density_gradient_batch` over K points).
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

mod common;

use hazel_density::EvalError;
use hazel_density::LogDensity;
use hazel_graph::{compile, CompileOptions, ExecutorKind};
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

/// A logistic regression over a data design matrix: the batched executor's lane-aware
/// matrix × vector rules.
const GLM: &str = r#"
data {
  int<lower=0> N;
  vector[N] x;
  vector[N] y;
}
transformed data {
  matrix[N, 3] X;
  array[N] int z;
  for (n in 1:N) {
    X[n] = [x[n], y[n], x[n] * y[n]];
    z[n] = y[n] > 2;
  }
}
parameters {
  real alpha;
  vector[3] beta;
}
model {
  beta ~ normal(0, 1);
  z ~ bernoulli_logit(alpha + X * beta);
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

/// Allocations during `evals` gradient evaluations after one warm-up evaluation, with
/// `executor`; `batch > 0` evaluates `batch` points per call through
/// `log_density_gradient_batch` instead.
fn allocations_per_run(
    program: &str,
    data: &str,
    executor: ExecutorKind,
    batch: usize,
    evals: usize,
) -> usize {
    let parsed = hazel_check::check_source("model.stan", program);
    let program = parsed.checked.expect("program parses");
    let data = hazel_data::DataFile::parse(data).expect("data parses");
    let model = compile(
        &program,
        &data,
        &CompileOptions {
            seed: 1,
            executor,
            ..Default::default()
        },
    )
    .expect("compiles");
    assert!(!model.is_dynamic(), "the test needs the static path");
    let d = model.dim();
    let k = batch.max(1);
    let qs: Vec<f64> = (0..k * d).map(|i| 0.3 - 0.1 * (i % 7) as f64).collect();
    let mut grads = vec![0.0; k * d];
    let mut wss: Vec<_> = (0..k).map(|_| model.new_workspace()).collect();
    let mut lps: Vec<Result<f64, EvalError>> = vec![Ok(0.0); k];
    let mut run = |lps: &mut [Result<f64, EvalError>]| {
        if batch > 0 {
            model.log_density_gradient_batch(&mut wss, &qs, &mut grads, lps);
        } else {
            lps[0] = model.log_density_gradient(&mut wss[0], &qs[..d], &mut grads[..d]);
        }
    };
    run(&mut lps);
    let warm: Vec<u64> = lps
        .iter()
        .map(|r| r.as_ref().expect("evaluates").to_bits())
        .collect();
    assert!(lps.iter().all(|r| r.as_ref().is_ok_and(|v| v.is_finite())));
    ALLOCATIONS.store(0, Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
    let mut all_equal = true;
    for _ in 0..evals {
        run(&mut lps);
        all_equal &= lps
            .iter()
            .zip(&warm)
            .all(|(r, w)| r.as_ref().is_ok_and(|v| v.to_bits() == *w));
    }
    COUNTING.store(false, Ordering::SeqCst);
    assert!(all_equal, "evaluations are deterministic");
    ALLOCATIONS.load(Ordering::SeqCst)
}

#[test]
fn steady_state_gradient_evaluation_does_not_allocate() {
    let data = data_json(20_000);
    let cases = [
        ("normal", PROGRAM, data.clone()),
        ("glm", GLM, data),
        // Loops run in lane regions.
        (
            "lanes",
            common::lanes_model::PROGRAM,
            common::lanes_model::data(),
        ),
    ];
    // Every single-threaded count before the first threaded run: the rayon workers it starts
    // live on and may allocate (their own bookkeeping) during a later count's window.
    for (name, program, data) in &cases {
        let static_paths = [
            ("serial", ExecutorKind::Serial, 0),
            ("serial, batch of 3", ExecutorKind::Serial, 3),
            ("batched, one point", ExecutorKind::Batched { lanes: 4 }, 0),
            ("batched, batch of 8", ExecutorKind::Batched { lanes: 4 }, 8),
        ];
        for (what, executor, batch) in static_paths {
            let n = allocations_per_run(program, data, executor, batch, 20);
            assert_eq!(
                n, 0,
                "{name}, {what}: allocated {n} times in 20 evaluations"
            );
        }
    }
    for (name, program, data) in &cases {
        let evals = 200;
        let threaded = allocations_per_run(program, data, ExecutorKind::with_threads(2), 0, evals);
        eprintln!("{name}: allocations with 2 threads in {evals} evaluations: {threaded}");
        assert!(
            threaded * 16 <= evals,
            "{name}: threaded evaluation allocated {threaded} times in {evals} evaluations"
        );
    }
}
