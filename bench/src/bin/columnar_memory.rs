//! Peak memory of the output sinks: one chain of D parameters × N draws (default 10⁵ × 2,000)
//! of synthetic values written as Stan CSV, Parquet and Zarr, each format in its own process so
//! that each peak RSS (`VmHWM` in /proc/self/status) is its own.
//!
//! The target is the memory before the sink exists (the model's workspace stands in as one draw
//! of D values, allocated before the baseline is read) plus two row groups (Parquet: the actual
//! row-group size, which grows for wide tables, see `parquet_sink`) or two chunks (Zarr). No
//! model is sampled: the sink sees the same calls as in a run.
//!
//! `cargo run --release -p hazel-bench --features parquet,zarr --bin columnar_memory -- [D N]`

use hazel_draws::{AdaptationInfo, Columns, Draw, DrawSink, InverseMetric, Timing};
use hazel_nuts::{DrawStats, RunConfig};
use hazel_output::parquet_sink::ParquetWriter;
use hazel_output::zarr_sink::ZarrRun;
use hazel_output::{CsvHeaderInfo, StanCsvWriter};
use std::path::Path;
use std::time::Instant;

fn vm_hwm_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn vm_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn dir_bytes(path: &Path) -> u64 {
    if path.is_file() {
        return path.metadata().map(|m| m.len()).unwrap_or(0);
    }
    std::fs::read_dir(path)
        .map(|entries| entries.flatten().map(|e| dir_bytes(&e.path())).sum())
        .unwrap_or(0)
}

/// Writes the draws with one format; prints `format peak_kib baseline_kib target_kib seconds bytes`.
fn measure(format: &str, dim: usize, draws: usize, dir: &Path) {
    let names: Vec<String> = (1..=dim).map(|i| format!("theta.{i}")).collect();
    let mut values: Vec<f64> = (0..dim).map(|i| i as f64 * 0.5).collect();
    let mut config = RunConfig {
        chains: 1,
        ..RunConfig::default()
    };
    config.sampler.num_samples = draws;
    config.sampler.num_warmup = 0;
    // The sampler's adapted metric, full-precision values as adaptation gives them (the
    // columnar metadata carries them as text); it exists before the sink, like the workspace.
    let inv_metric =
        InverseMetric::Diag((0..dim).map(|i| 0.37 * (1.0 + i as f64).sqrt()).collect());
    let baseline = vm_rss_kib();
    let start = Instant::now();
    // The buffer each sink holds: one row group (its actual size, which grows for wide tables),
    // one Zarr chunk, nothing for CSV.
    let width = 7 + dim;
    let (path, mut sink, buffer_bytes): (_, Box<dyn DrawSink>, usize) = match format {
        "csv" => {
            let path = dir.join("m-1.csv");
            let header = CsvHeaderInfo::new("m", "", "m-1.csv", &config.info(), 0);
            let mut sink = StanCsvWriter::create(&path, header).expect("csv");
            sink.begin(&Columns {
                stats: DrawStats::columns(),
                values: &names,
            })
            .expect("begin");
            (path, Box::new(sink), 0)
        }
        "parquet" => {
            let path = dir.join("m-1.parquet");
            let header = CsvHeaderInfo::new("m", "", "m-1.parquet", &config.info(), 0);
            let mut sink = ParquetWriter::create(&path, header).expect("parquet");
            sink.begin(&Columns {
                stats: DrawStats::columns(),
                values: &names,
            })
            .expect("begin");
            let bytes = sink.rows_per_group() * width * 8;
            (path, Box::new(sink), bytes)
        }
        _ => {
            let path = dir.join("m.zarr");
            let header = CsvHeaderInfo::new("m", "", "m.zarr", &config.info(), 0);
            let run = ZarrRun::create(&path, &header, vec![1]).expect("zarr");
            let mut sink = run.chain_writer(0);
            sink.begin(&Columns {
                stats: DrawStats::columns(),
                values: &names,
            })
            .expect("begin");
            let chunk_draws = sink.chunk_draws().expect("begun") as usize;
            (path, Box::new(sink), chunk_draws * width * 8)
        }
    };
    sink.adaptation_done(&AdaptationInfo::Hmc {
        stepsize: 0.1,
        inv_metric: &inv_metric,
    })
    .expect("adaptation");
    for d in 0..draws {
        for (i, v) in values.iter_mut().enumerate() {
            *v = (i as f64).mul_add(1e-3, d as f64 * 0.25);
        }
        let stats = DrawStats {
            lp: -(d as f64),
            accept_stat: 0.9,
            stepsize: 0.1,
            treedepth: 4,
            n_leapfrog: 15,
            divergent: false,
            energy: d as f64,
        };
        sink.draw(&Draw {
            warmup: false,
            stats: &stats.values(),
            values: &values,
        })
        .expect("draw");
    }
    sink.finish(&Timing::default()).expect("finish");
    drop(sink);
    let seconds = start.elapsed().as_secs_f64();
    let target = baseline + 2 * buffer_bytes as u64 / 1024;
    println!(
        "{format} {} {baseline} {target} {seconds:.1} {}",
        vm_hwm_kib(),
        dir_bytes(&path)
    );
    let _ = std::fs::remove_dir_all(&path);
    let _ = std::fs::remove_file(&path);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--one") {
        let dim = args[3].parse().expect("D");
        let draws = args[4].parse().expect("N");
        measure(&args[2], dim, draws, Path::new(&args[5]));
        return;
    }
    let dim: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let draws: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(2_000);
    let dir = std::env::temp_dir().join(format!("hazel-columnar-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    println!("{dim} parameters x {draws} draws, one chain");
    println!(
        "{:<8} {:>12} {:>12} {:>12} {:>8} {:>10} {:>8}",
        "format", "peak MiB", "baseline MiB", "target MiB", "within", "seconds", "file MiB"
    );
    for format in ["csv", "parquet", "zarr"] {
        let out = std::process::Command::new(&args[0])
            .args(["--one", format, &dim.to_string(), &draws.to_string()])
            .arg(&dir)
            .output()
            .expect("run the measurement");
        let text = String::from_utf8_lossy(&out.stdout);
        let fields: Vec<f64> = text
            .split_whitespace()
            .skip(1)
            .filter_map(|f| f.parse().ok())
            .collect();
        let [peak, baseline, target, seconds, bytes] = fields[..] else {
            eprintln!("{format}: {}", String::from_utf8_lossy(&out.stderr));
            continue;
        };
        let mib = |kib: f64| kib / 1024.0;
        println!(
            "{format:<8} {:>12.1} {:>12.1} {:>12.1} {:>8} {seconds:>10.1} {:>8.0}",
            mib(peak),
            mib(baseline),
            mib(target),
            if format == "csv" {
                "-"
            } else if peak <= target {
                "yes"
            } else {
                "NO"
            },
            bytes / (1 << 20) as f64
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
