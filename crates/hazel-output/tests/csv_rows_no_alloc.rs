//! The CSV writer's draw path allocates nothing once it has written one row: the row buffer is
//! reused and numbers are formatted without `fmt` machinery. A counting global allocator counts
//! the test thread's allocations.

use hazel_draws::{Columns, Draw, DrawSink};
use hazel_nuts::{DrawStats, RunConfig};
use hazel_output::{CsvHeaderInfo, StanCsvWriter};

// hazel-graph's counting allocator: only the measuring thread's allocations count.
#[path = "../../hazel-graph/tests/counting_alloc/mod.rs"]
mod counting_alloc;

#[global_allocator]
static GLOBAL: counting_alloc::CountingAlloc = counting_alloc::CountingAlloc;

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
    counting_alloc::start();
    for r in &rows {
        w.draw(&draw(r)).expect("row");
    }
    let n_alloc = counting_alloc::stop();
    assert_eq!(n_alloc, 0, "allocations while writing {} rows", rows.len());
}
