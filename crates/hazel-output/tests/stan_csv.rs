//! Writer ↔ reader round trips, CmdStan's own layout, killed runs and bad files.

use hazel_draws::{AdaptationInfo, Columns, Draw, DrawSink, InverseMetric, Timing};
use hazel_nuts::{DrawStats, RunConfig};
use hazel_output::{read_stan_csv, read_stan_csvs, CsvHeaderInfo, StanCsvWriter};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn scratch_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hazel-output-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Synthetic draw `i` of a 3-column model, with values that need all 17 digits.
fn synthetic_draw(i: usize) -> (DrawStats, Vec<f64>) {
    let x = i as f64;
    let stats = DrawStats {
        lp: -1.0 / (x + 3.0),
        accept_stat: 0.9 - 1e-3 / (x + 7.0),
        stepsize: 0.123456789012345,
        treedepth: 3,
        n_leapfrog: 7,
        divergent: i % 17 == 5,
        energy: 2.0 + 1.0 / 7.0 * x,
    };
    (stats, vec![(x * 0.1).sin(), 1e-9 * x, -1e20 / (x + 1.0)])
}

/// Writes synthetic draw `i` into `sink`; returns its row (the statistics, then the values).
fn write_synthetic(sink: &mut dyn DrawSink, i: usize, warmup: bool) -> Vec<f64> {
    let (stats, values) = synthetic_draw(i);
    sink.draw(&Draw {
        warmup,
        stats: &stats.values(),
        values: &values,
    })
    .expect("draw");
    let mut row = stats.values().to_vec();
    row.extend(values);
    row
}

fn names() -> Vec<String> {
    vec!["mu".into(), "beta.1".into(), "Sigma.2.1".into()]
}

/// Writes a chain the way the sampler drives a sink.
fn write_chain(path: &Path, run: &RunConfig, inv_metric: &InverseMetric) -> Vec<Vec<f64>> {
    let header = CsvHeaderInfo::new(
        "synthetic",
        "data.json",
        &path.display().to_string(),
        &run.info(),
        0,
    );
    let mut sink = StanCsvWriter::create(path, header).expect("create");
    sink.begin(&Columns {
        stats: DrawStats::columns(),
        values: &names(),
    })
    .expect("begin");
    let s = &run.sampler;
    let warmup_kept = if s.save_warmup {
        s.num_warmup.div_ceil(s.thin)
    } else {
        0
    };
    for i in 0..warmup_kept {
        write_synthetic(&mut sink, 1000 + i, true);
    }
    sink.adaptation_done(&AdaptationInfo::Hmc {
        stepsize: 0.5,
        inv_metric,
    })
    .expect("adaptation");
    let mut rows = Vec::new();
    for i in 0..s.num_samples.div_ceil(s.thin) {
        rows.push(write_synthetic(&mut sink, i, false));
    }
    sink.finish(&Timing {
        warmup: Duration::from_millis(1500),
        sampling: Duration::from_micros(2345),
    })
    .expect("finish");
    rows
}

fn run_config(save_warmup: bool, thin: usize) -> RunConfig {
    let mut run = RunConfig {
        seed: 99,
        ..RunConfig::default()
    };
    run.sampler.num_warmup = 30;
    run.sampler.num_samples = 41;
    run.sampler.save_warmup = save_warmup;
    run.sampler.thin = thin;
    run
}

#[test]
fn draws_round_trip_bit_for_bit_and_warmup_is_left_out() {
    let dir = scratch_dir("round-trip");
    for (save_warmup, thin) in [(false, 1), (true, 1), (true, 4)] {
        let path = dir.join(format!("chain-{save_warmup}-{thin}.csv"));
        let metric = InverseMetric::Diag(vec![1.5, 0.1 + 0.2, 1e-12]);
        let written = write_chain(&path, &run_config(save_warmup, thin), &metric);
        let csv = read_stan_csv(&path).expect("read");
        let stat_names: Vec<&str> = DrawStats::columns().iter().map(|c| &*c.name).collect();
        assert_eq!(csv.column_names[..7], stat_names);
        assert_eq!(csv.column_names[7..], names());
        assert_eq!(
            csv.warmup_rows,
            if save_warmup {
                30usize.div_ceil(thin)
            } else {
                0
            }
        );
        assert_eq!(csv.draws.len(), 41usize.div_ceil(thin));
        for (read, expected) in csv.draws.iter().zip(&written) {
            let read_bits: Vec<u64> = read.iter().map(|v| v.to_bits()).collect();
            let expected_bits: Vec<u64> = expected.iter().map(|v| v.to_bits()).collect();
            assert_eq!(read_bits, expected_bits);
        }
        let adaptation = csv.adaptation.as_ref().expect("adaptation block");
        assert_eq!(adaptation.stepsize, 0.5);
        assert_eq!(adaptation.inv_metric.as_ref(), Some(&metric));
        assert_eq!(csv.elapsed_seconds, Some((1.5, 0.002)));
        assert!(!csv.truncated);
        assert_eq!(csv.config_int("thin"), Some(thin as i64));
        assert_eq!(csv.config_value("model"), Some("synthetic"));
        assert_eq!(csv.config_value_in("data", "file"), Some("data.json"));
        assert_eq!(csv.config_value_in("random", "seed"), Some("99"));
        assert_eq!(csv.config_value("max_depth"), Some("10"));
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn dense_metric_round_trips() {
    let dir = scratch_dir("dense");
    let path = dir.join("dense.csv");
    let mut run = run_config(false, 1);
    run.sampler.metric = hazel_nuts::MetricKind::Dense;
    let metric = InverseMetric::Dense {
        dim: 3,
        values: vec![2.0, 0.5, 0.0, 0.5, 1.0, -0.25, 0.0, -0.25, 3.0],
    };
    write_chain(&path, &run, &metric);
    let csv = read_stan_csv(&path).expect("read");
    assert_eq!(
        csv.adaptation.as_ref().expect("adaptation").inv_metric,
        Some(metric)
    );
    assert_eq!(csv.config_value("metric"), Some("dense_e"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn config_block_has_cmdstan_lines() {
    let mut run = run_config(true, 1);
    run.sampler.adapt.delta = 0.95;
    let block = CsvHeaderInfo::new("m", "", "out_3.csv", &run.info(), 2).config_block();
    for line in [
        "# model = m\n",
        "# method = sample (Default)\n",
        "#   sample\n",
        "#     num_samples = 41\n",
        "#     num_warmup = 30\n",
        "#     save_warmup = 1\n",
        "#     thin = 1 (Default)\n",
        "#     adapt\n",
        "#       engaged = 1 (Default)\n",
        "#       delta = 0.95\n",
        "#       t0 = 10 (Default)\n",
        "#     algorithm = hmc (Default)\n",
        "#       hmc\n",
        "#         engine = nuts (Default)\n",
        "#           nuts\n",
        "#             max_depth = 10 (Default)\n",
        "#         metric = diag_e (Default)\n",
        "#         stepsize = 1 (Default)\n",
        "#         stepsize_jitter = 0 (Default)\n",
        "# id = 3\n",
        "# data\n#   file =  (Default)\n",
        "# init = 2 (Default)\n",
        "# random\n#   seed = 99\n",
        "# output\n#   file = out_3.csv\n",
        "# stan_version_major = 2\n",
    ] {
        assert!(block.contains(line), "missing {line:?} in\n{block}");
    }
}

#[test]
fn killed_run_keeps_every_finished_draw() {
    let dir = scratch_dir("killed");
    let path = dir.join("chain.csv");
    write_chain(
        &path,
        &run_config(true, 1),
        &InverseMetric::Diag(vec![1.0; 3]),
    );
    let text = std::fs::read_to_string(&path).expect("file");
    // Cut the file in the middle of the 10th sampling row, as a kill during a write would.
    let adaptation = text
        .find("# Adaptation terminated")
        .expect("adaptation block");
    let rows_start = adaptation + text[adaptation..].find("\n-").expect("first row") + 1;
    let mut cut = rows_start;
    for _ in 0..9 {
        cut += text[cut..].find('\n').expect("row end") + 1;
    }
    cut += 12;
    std::fs::write(&path, &text[..cut]).expect("truncate");
    let csv = read_stan_csv(&path).expect("a truncated file is still readable");
    assert!(csv.truncated);
    assert_eq!(csv.draws.len(), 9);
    assert_eq!(csv.warmup_rows, 30);
    assert!(csv.elapsed_seconds.is_none());

    // Killed during warmup with saved warmup: every row is warmup, no draws.
    let warmup_cut = text[..adaptation].rfind("\n-").expect("warmup row") + 1;
    std::fs::write(&path, &text[..warmup_cut]).expect("truncate");
    let csv = read_stan_csv(&path).expect("readable");
    assert_eq!(
        (csv.draws.len(), csv.warmup_rows, csv.truncated),
        (0, 29, false)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_files_are_errors_naming_file_and_line() {
    let dir = scratch_dir("bad");
    let missing = dir.join("missing.csv");
    let err = read_stan_csv(&missing).expect_err("missing file");
    assert!(err.to_string().contains("missing.csv"), "{err}");

    let path = dir.join("bad.csv");
    std::fs::write(&path, "# model = x\nlp__,theta\n1,2\n3,oops\n5,6\n").expect("write");
    let err = read_stan_csv(&path).expect_err("bad number");
    assert_eq!(err.line, Some(4));
    assert!(
        err.to_string()
            .starts_with(&format!("{}:4:", path.display())),
        "{err}"
    );

    std::fs::write(&path, "lp__,theta\n1,2,3\n4,5\n").expect("write");
    assert_eq!(read_stan_csv(&path).expect_err("wrong width").line, Some(2));

    std::fs::write(&path, "# only comments\n").expect("write");
    assert!(read_stan_csv(&path)
        .expect_err("no header")
        .to_string()
        .contains("no header"));

    std::fs::write(&path, [0xff, 0xfe, 0x00]).expect("write");
    assert!(read_stan_csv(&path).is_err());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn reads_cmdstan_output_with_saved_warmup() {
    let paths = vec![
        fixture("cmdstan_save_warmup_1.csv"),
        fixture("cmdstan_save_warmup_2.csv"),
    ];
    let chains = read_stan_csvs(&paths).expect("CmdStan files");
    for csv in &chains {
        assert_eq!(csv.warmup_rows, 100);
        assert_eq!(csv.draws.len(), 200);
        assert_eq!(csv.column_names.len(), 11);
        assert_eq!(csv.config_int("save_warmup"), Some(1));
        assert_eq!(
            csv.config_value_in("data", "file"),
            Some("fixture.data.json")
        );
        assert_eq!(csv.config_value("stancflags"), Some(""));
        let adaptation = csv.adaptation.as_ref().expect("adaptation");
        assert_eq!(adaptation.stepsize, 0.712345);
        assert_eq!(
            adaptation.inv_metric,
            Some(InverseMetric::Diag(vec![
                0.0102345, 0.998877, 4.01234, 1.23456
            ]))
        );
        assert_eq!(csv.elapsed_seconds, Some((0.004, 0.009)));
        // Post-warmup step sizes are the adapted one; warmup rows (which vary) are gone.
        let stepsize = csv.column(csv.column_index("stepsize__").expect("column"));
        assert!(stepsize.iter().all(|&s| s == 0.712345));
    }
    let divergent = chains[1].column(5);
    assert_eq!(
        divergent.iter().sum::<f64>(),
        2.0,
        "the warmup divergence is not counted"
    );
}

#[test]
fn every_draw_is_on_disk_as_soon_as_it_is_written() {
    let dir = scratch_dir("flushed");
    let path = dir.join("live.csv");
    let run = run_config(false, 1);
    let header = CsvHeaderInfo::new("synthetic", "", "live.csv", &run.info(), 0);
    let mut sink = StanCsvWriter::create(&path, header).expect("create");
    sink.begin(&Columns {
        stats: DrawStats::columns(),
        values: &names(),
    })
    .expect("begin");
    sink.adaptation_done(&AdaptationInfo::Hmc {
        stepsize: 0.5,
        inv_metric: &InverseMetric::Diag(vec![1.0; 3]),
    })
    .expect("adaptation");
    for i in 0..5 {
        write_synthetic(&mut sink, i, false);
        // Read while the writer is still open, as a reader of a running (or killed) run would.
        let csv = read_stan_csv(&path).expect("readable mid-run");
        assert_eq!((csv.draws.len(), csv.truncated), (i + 1, false));
    }
    assert!(
        sink.draw(&Draw {
            warmup: false,
            stats: &synthetic_draw(5).0.values(),
            values: &[1.0]
        })
        .is_err(),
        "a row of the wrong width is refused"
    );
    drop(sink);
    std::fs::remove_dir_all(&dir).ok();
}
