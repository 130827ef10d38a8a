//! The counting global allocator of the single-threaded no-allocation tests
//! (`linalg_no_alloc`, `complex_linalg_no_alloc`, `hof_no_alloc`).
//!
//! Only allocations made by the thread between [`start`] and [`stop`] count: the test
//! harness's own threads allocate at times that depend on the machine's load, and must not
//! make these tests flaky. Each test binary installs it with
//! `#[global_allocator] static GLOBAL: counting_alloc::CountingAlloc = counting_alloc::CountingAlloc;`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

pub struct CountingAlloc;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    // Const-initialised and without a destructor: reading it never allocates.
    static MEASURING: Cell<bool> = const { Cell::new(false) };
}

fn count() {
    if MEASURING.try_with(Cell::get).unwrap_or(false) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Starts counting this thread's allocations from zero.
pub fn start() {
    ALLOCATIONS.store(0, Ordering::SeqCst);
    MEASURING.with(|m| m.set(true));
}

/// Stops counting; the number of allocations this thread made since [`start`].
pub fn stop() -> usize {
    MEASURING.with(|m| m.set(false));
    ALLOCATIONS.load(Ordering::SeqCst)
}

/// Asserts that, after a first evaluation, 20 more gradient evaluations of `model` at `q`
/// allocate nothing on this thread and give the first one's bits (`name`: for messages).
#[allow(dead_code)] // not every test binary uses it
pub fn assert_evaluations_do_not_allocate(
    name: &str,
    model: &hazel_graph::CompiledModel,
    q: &[f64],
) {
    use hazel_density::LogDensity;
    let mut grad = vec![0.0; model.dim()];
    let mut ws = model.new_workspace();
    let warm = model.log_density_gradient(&mut ws, q, &mut grad).unwrap();
    start();
    let mut all_equal = true;
    for _ in 0..20 {
        let lp = model.log_density_gradient(&mut ws, q, &mut grad).unwrap();
        all_equal &= lp.to_bits() == warm.to_bits();
    }
    let n = stop();
    assert!(all_equal, "{name}: evaluations are deterministic");
    assert_eq!(n, 0, "{name}: {n} allocations in 20 evaluations");
}
