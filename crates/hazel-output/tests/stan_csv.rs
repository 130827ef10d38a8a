//! Writer ↔ reader round trips, CmdStan's own layout, killed runs and bad files.

use hazel_draws::{
    AdaptationInfo, Columns, Draw, DrawSink, InverseMetric, Timing, LOW_RANK_DENSE_MAX_DIM,
};
use hazel_nuts::{DrawStats, MetricKind, RunConfig};
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

/// Writes a chain the way the sampler drives a sink (the header for a model of the metric's
/// dimension, as `hazel sample` writes it).
fn write_chain(path: &Path, run: &RunConfig, inv_metric: &InverseMetric) -> Vec<Vec<f64>> {
    let header = CsvHeaderInfo::new(
        "synthetic",
        "data.json",
        &path.display().to_string(),
        &run.info_for_dim(inv_metric.dim()),
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

/// A low-rank metric `D (I + U (Λ − I) Uᵀ) D` of `dim` dimensions and rank 3, with an
/// orthonormal `U` whose entries need all 17 digits.
fn low_rank_metric(dim: usize) -> InverseMetric {
    let mut vectors: Vec<f64> = Vec::new();
    for j in 0..3 {
        let mut u: Vec<f64> = (0..dim)
            .map(|i| ((i * (j + 2)) as f64 * 0.37 + j as f64).sin() + 0.1)
            .collect();
        for prior in vectors.chunks_exact(dim) {
            let dot: f64 = prior.iter().zip(&u).map(|(a, b)| a * b).sum();
            u.iter_mut().zip(prior).for_each(|(x, p)| *x -= dot * p);
        }
        let norm = u.iter().map(|x| x * x).sum::<f64>().sqrt();
        vectors.extend(u.iter().map(|x| x / norm));
    }
    InverseMetric::LowRank {
        scale: (0..dim)
            .map(|i| 0.1 + (i as f64 / 7.0).cos().abs())
            .collect(),
        values: vec![0.01, 3.0 + 1.0 / 3.0, 250.0],
        vectors,
    }
}

/// The text of the comment row after the line `heading` (the `# ` and spaces dropped).
fn row_after(text: &str, heading: &str) -> Vec<f64> {
    let mut lines = text.lines().skip_while(|line| *line != heading);
    assert!(lines.next().is_some(), "no line `{heading}`");
    lines
        .next()
        .expect("a row")
        .trim_start_matches('#')
        .split(',')
        .map(|v| v.trim().parse().expect("a number"))
        .collect()
}

/// A low-rank metric of more than `LOW_RANK_DENSE_MAX_DIM` dimensions: `metric = diag_e`, the
/// adaptation block holds its diagonal (as the dense matrix computed the slow way has it), the
/// exact factors follow the timing block and read back bit for bit, and the whole file grows
/// with dim·k, not dim².
#[test]
fn large_low_rank_metric_is_written_as_its_diagonal_and_exact_factors() {
    let dir = scratch_dir("low-rank-large");
    let path = dir.join("low-rank.csv");
    let dim = 150;
    assert!(dim > LOW_RANK_DENSE_MAX_DIM);
    let mut run = run_config(false, 1);
    run.sampler.metric = MetricKind::LowRank;
    run.sampler.num_samples = 2;
    let metric = low_rank_metric(dim);
    write_chain(&path, &run, &metric);
    let text = std::fs::read_to_string(&path).expect("csv");
    let csv = read_stan_csv(&path).expect("read");
    assert_eq!(csv.config_value("metric"), Some("diag_e"));
    assert!(!text.contains("# Elements of inverse mass matrix:"));
    let diagonal = row_after(&text, "# Diagonal elements of inverse mass matrix:");
    let InverseMetric::Dense { values: dense, .. } = metric.to_dense().into_owned() else {
        unreachable!("to_dense is dense")
    };
    assert_eq!(diagonal.len(), dim);
    for (i, d) in diagonal.iter().enumerate() {
        let slow = dense[i * dim + i];
        assert!(
            (d - slow).abs() <= 1e-12 * slow.abs(),
            "d_{i} {d} vs {slow}"
        );
    }
    // The factors: after the timing block, each exact.
    let timing = text.find("seconds (Total)").expect("timing block");
    assert!(text.find("# Low-rank inverse metric").expect("factors") > timing);
    let InverseMetric::LowRank {
        scale,
        values,
        vectors,
    } = &metric
    else {
        unreachable!()
    };
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&row_after(&text, "# Scale s:")), bits(scale));
    assert_eq!(bits(&row_after(&text, "# Eigenvalues L:")), bits(values));
    let read = csv.adaptation.expect("adaptation").inv_metric;
    assert_eq!(
        read,
        Some(metric.clone()),
        "the reader rebuilds the exact metric"
    );
    assert_eq!(
        text.lines()
            .skip_while(|l| !l.starts_with("# Eigenvectors U"))
            .skip(1)
            .count(),
        values.len(),
        "one line per eigenvector, {} in all",
        vectors.len() / dim
    );
    // O(dim·k): at most ~26 characters a number (17 digits, sign, exponent, separator) for
    // the diagonal, the factors and the draws, against 150² = 22,500 for the dense block.
    let numbers = dim * (2 + values.len()) + values.len() + 2 * (7 + names().len());
    assert!(
        text.len() < 26 * numbers + 4096,
        "{} bytes for {numbers} numbers",
        text.len()
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Up to `LOW_RANK_DENSE_MAX_DIM` dimensions a low-rank metric is CmdStan's `dense_e` block
/// (its dense matrix), with nothing after the timing block.
#[test]
fn small_low_rank_metric_is_written_dense() {
    let dir = scratch_dir("low-rank-small");
    let path = dir.join("low-rank.csv");
    let mut run = run_config(false, 1);
    run.sampler.metric = MetricKind::LowRank;
    let metric = low_rank_metric(LOW_RANK_DENSE_MAX_DIM);
    write_chain(&path, &run, &metric);
    let csv = read_stan_csv(&path).expect("read");
    assert_eq!(csv.config_value("metric"), Some("dense_e"));
    assert_eq!(
        csv.adaptation.expect("adaptation").inv_metric,
        Some(metric.to_dense().into_owned())
    );
    let text = std::fs::read_to_string(&path).expect("csv");
    assert!(text.trim_end().ends_with("seconds (Total)\n#"));
    std::fs::remove_dir_all(&dir).ok();
}

/// A chain resumed after its warmup writes the factors of its large low-rank metric at the
/// end, as the uninterrupted chain does: the two files are the same bytes.
#[test]
fn resumed_chain_writes_the_low_rank_factors_too() {
    let metric = low_rank_metric(LOW_RANK_DENSE_MAX_DIM + 1);
    let mut run = run_config(false, 1);
    run.sampler.metric = MetricKind::LowRank;
    let header = CsvHeaderInfo::new("m", "", "m.csv", &run.info_for_dim(metric.dim()), 0);
    let adaptation = AdaptationInfo::Hmc {
        stepsize: 0.5,
        inv_metric: &metric,
    };
    let timing = Timing::default();
    let mut whole = StanCsvWriter::new(Vec::new(), header.clone());
    whole
        .begin(&Columns {
            stats: DrawStats::columns(),
            values: &names(),
        })
        .expect("begin");
    whole.adaptation_done(&adaptation).expect("adaptation");
    write_synthetic(&mut whole, 0, false);
    let cut = whole.get_ref().clone();
    write_synthetic(&mut whole, 1, false);
    whole.finish(&timing).expect("finish");
    let bytes = cut.len() as u64;
    let mut resumed = StanCsvWriter::continuing(cut, header, &names(), bytes);
    resumed.adaptation_resumed(&adaptation).expect("resumed");
    write_synthetic(&mut resumed, 1, false);
    resumed.finish(&timing).expect("finish");
    let (whole, resumed) = (whole.into_inner(), resumed.into_inner());
    assert!(String::from_utf8_lossy(&whole).contains("# Eigenvectors U"));
    assert!(whole == resumed, "the resumed file differs");
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
