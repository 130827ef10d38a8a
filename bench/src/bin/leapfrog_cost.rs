//! The sampler's own cost per leapfrog step, and heap allocations per step after warmup begins.
//!
//! The target is an iid standard normal (log density and gradient are one pass over `q`), so
//! almost all the time is the sampler's: the leapfrog update, the metric, the U-turn checks and
//! the multinomial bookkeeping. The density's own cost is measured separately (the same number
//! of evaluations at fixed points) and subtracted.
//!
//! Heap allocations are counted by a counting global allocator from the first warmup iteration
//! (after the chain was initialised) to the end of sampling; hazel's sampler allocates all its
//! buffers when the chain is created, so the expected count is zero.
//!
//! Run: `cargo run --release -p hazel-bench --bin leapfrog_cost`

use hazel_bench::thread_cpu_ns;
use hazel_density::{IndependentNormal, LogDensity, Unconstrained};
use hazel_nuts::{Chain, SamplerConfig};
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Counts every allocation and reallocation made through the global allocator.
struct CountingAllocator;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// Standard normal in `dim` dimensions: `log p = −½|q|²`, `∇ = −q`.
fn iid_normal(dim: usize) -> IndependentNormal {
    IndependentNormal::unit(vec![0.0; dim])
}

struct Measurement {
    dim: usize,
    iterations: usize,
    leapfrogs: u64,
    total_ns_per_step: f64,
    density_ns_per_eval: f64,
    allocations: u64,
    stepsize: f64,
}

fn measure(dim: usize, num_warmup: usize, num_samples: usize) -> Measurement {
    let model = Unconstrained::new(iid_normal(dim), "x");
    let config = SamplerConfig {
        num_warmup,
        num_samples,
        ..SamplerConfig::default()
    };
    let mut chain = Chain::new(&model, &config, 20251121, 1, 0).expect("chain starts");
    let mut leapfrogs = 0u64;
    let cpu_before = thread_cpu_ns();
    let allocations_before = ALLOCATIONS.load(Ordering::Relaxed);
    let start = Instant::now();
    while !chain.is_done() {
        let it = chain.next_iteration().expect("iid normal never fails");
        leapfrogs += u64::from(it.stats.n_leapfrog);
        let (row, _) = chain.write_output().expect("identity output");
        black_box(row);
    }
    let wall = start.elapsed().as_nanos() as f64;
    let allocations = ALLOCATIONS.load(Ordering::Relaxed) - allocations_before;
    let elapsed = match (cpu_before, thread_cpu_ns()) {
        (Some(a), Some(b)) => (b - a) as f64,
        _ => wall,
    };

    // The density alone, evaluated as often as the sampler stepped, at a fixed set of points.
    let density = iid_normal(dim);
    let points: Vec<Vec<f64>> = (0..8)
        .map(|k| {
            (0..dim)
                .map(|i| ((i * 7 + k) % 13) as f64 / 6.5 - 1.0)
                .collect()
        })
        .collect();
    let mut grad = vec![0.0; dim];
    let cpu_before = thread_cpu_ns();
    let start = Instant::now();
    for n in 0..leapfrogs {
        let lp =
            density.log_density_gradient(&mut (), black_box(&points[n as usize % 8]), &mut grad);
        let _ = black_box((lp, &grad));
    }
    let density_wall = start.elapsed().as_nanos() as f64;
    let density_ns = match (cpu_before, thread_cpu_ns()) {
        (Some(a), Some(b)) => (b - a) as f64,
        _ => density_wall,
    };
    Measurement {
        dim,
        iterations: num_warmup + num_samples,
        leapfrogs,
        total_ns_per_step: elapsed / leapfrogs as f64,
        density_ns_per_eval: density_ns / leapfrogs as f64,
        allocations,
        stepsize: chain.stepsize(),
    }
}

fn main() {
    println!("hazel-nuts: sampler cost per leapfrog step on an iid normal (diag metric, Stan's adaptation)");
    println!("times are thread CPU time (wall time where unavailable); one chain, one thread");
    println!(
        "{:>8} {:>7} {:>10} {:>9} {:>14} {:>14} {:>14} {:>12} {:>14}",
        "dim",
        "iters",
        "leapfrogs",
        "stepsize",
        "total ns/step",
        "density ns",
        "sampler ns",
        "sampler ns/d",
        "allocs/step"
    );
    for (dim, warmup, samples) in [(10, 1000, 20_000), (1_000, 1000, 1000), (100_000, 150, 150)] {
        let m = measure(dim, warmup, samples);
        let own = m.total_ns_per_step - m.density_ns_per_eval;
        println!(
            "{:>8} {:>7} {:>10} {:>9.4} {:>14.1} {:>14.1} {:>14.1} {:>12.3} {:>14.6}",
            m.dim,
            m.iterations,
            m.leapfrogs,
            m.stepsize,
            m.total_ns_per_step,
            m.density_ns_per_eval,
            own,
            own / m.dim as f64,
            m.allocations as f64 / m.leapfrogs as f64,
        );
        println!(
            "         heap allocations from the first warmup iteration to the last draw: {}",
            m.allocations
        );
    }
}
