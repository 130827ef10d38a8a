//! The CSV writer's draw path allocates nothing once it has written one row: the row buffer is
//! reused and numbers are formatted without `fmt` machinery. A counting global allocator counts
//! the test thread's allocations.

use hazel_draws::{Columns, Draw, DrawSink};
use hazel_nuts::{DrawStats, RunConfig};
use hazel_output::{CsvHeaderInfo, StanCsvWriter};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts the allocations of the thread that is measuring (the harness's own threads allocate
/// at times that depend on the machine's load), as hazel-graph's `tests/counting_alloc`.
struct CountingAlloc;

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

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// Allocations this thread makes while `f` runs.
fn count_allocations(f: impl FnOnce()) -> usize {
    ALLOCATIONS.store(0, Ordering::SeqCst);
    MEASURING.with(|m| m.set(true));
    f();
    MEASURING.with(|m| m.set(false));
    ALLOCATIONS.load(Ordering::SeqCst)
}

#[test]
fn csv_rows_allocate_nothing() {
    let run = RunConfig::default();
    let header = CsvHeaderInfo::new("m", "", "out.csv", &run.info(), 0);
    let mut w = StanCsvWriter::new(std::io::sink(), header);
    let names: Vec<String> = (1..=300).map(|i| format!("theta.{i}")).collect();
    w.begin(&Columns {
        stats: DrawStats::columns(),
        values: &names,
    })
    .expect("header");
    let rows: Vec<Vec<f64>> = (0..40)
        .map(|k| {
            (0..names.len())
                .map(|i| match (i + k) % 7 {
                    0 => f64::NAN,
                    1 => (i as f64 + 0.5) * 1e-9,
                    2 => -(i as f64) * 1e20,
                    3 => i as f64,
                    _ => ((i * 7919 + k * 104729) as f64).sin() * 123.456,
                })
                .collect()
        })
        .collect();
    let stats = DrawStats {
        lp: -123.456789,
        accept_stat: 0.91,
        stepsize: 0.0123,
        treedepth: 4,
        n_leapfrog: 15,
        divergent: false,
        energy: 130.5,
    };
    let stats = stats.values();
    let draw = |values| Draw {
        warmup: false,
        stats: &stats,
        values,
    };
    w.draw(&draw(&rows[0])).expect("warm-up row");
    let n_alloc = count_allocations(|| {
        for r in &rows {
            w.draw(&draw(r)).expect("row");
        }
    });
    assert_eq!(n_alloc, 0, "allocations while writing {} rows", rows.len());
}
