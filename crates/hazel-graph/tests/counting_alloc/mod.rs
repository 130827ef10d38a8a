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
