//! Parquet and Zarr sinks: one sampler run written to all three formats at once (tiny row
//! groups and chunks, so several fill and the last is partial) reads back through
//! `read_draws` with the CSV's columns, bit-identical draws, adaptation and settings; Zarr
//! keeps declared shapes; a chain stopped early keeps the draws it made; a fixed_param run has
//! the CSV's two sampler columns in every format.
#![cfg(all(feature = "parquet", feature = "zarr"))]

use hazel_density::LogDensity;
use hazel_density::{IndependentNormal, Unconstrained};
use hazel_draws::{
    AdaptationInfo, Columns, Draw, DrawSink, FanOut, InverseMetric, Timing, LOW_RANK_DENSE_MAX_DIM,
};
use hazel_nuts::{run, AdaptMethod, Algorithm, DrawStats, MetricKind, NoProgress, RunConfig};
use hazel_output::layout::variables;
use hazel_output::parquet_sink::ParquetWriter;
use hazel_output::zarr_sink::ZarrRun;
use hazel_output::{read_draws, CsvHeaderInfo, StanCsv, StanCsvWriter};
use std::path::{Path, PathBuf};

/// Independent normals with means 0, 1, …, 4 (output `x.1` … `x.5`).
fn normals() -> IndependentNormal {
    IndependentNormal::unit((0..5).map(f64::from).collect())
}

/// `dim` independent normals with scales from 0.1 to 10 (output `x.1` … `x.dim`).
fn scaled_normals(dim: usize) -> IndependentNormal {
    let sd = (0..dim).map(|i| 10f64.powf(-1.0 + 2.0 * i as f64 / (dim - 1) as f64));
    IndependentNormal {
        mean: vec![0.0; dim],
        sd: sd.collect(),
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hazel-columnar-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

struct Outputs {
    csv: Vec<PathBuf>,
    parquet: Vec<PathBuf>,
    zarr: PathBuf,
}

fn sample_all_formats(dir: &Path, config: &RunConfig) -> Outputs {
    sample_all_formats_of(dir, config, normals())
}

fn sample_all_formats_of(dir: &Path, config: &RunConfig, normals: IndependentNormal) -> Outputs {
    let model = Unconstrained::new(normals, "x");
    let dim = model.dim();
    let ids: Vec<u64> = (0..config.chains as u64).map(|k| 1 + k).collect();
    let csv: Vec<PathBuf> = ids
        .iter()
        .map(|id| dir.join(format!("m-{id}.csv")))
        .collect();
    let parquet: Vec<PathBuf> = ids
        .iter()
        .map(|id| dir.join(format!("m-{id}.parquet")))
        .collect();
    let zarr = dir.join("m.zarr");
    let header = |index: usize, path: &Path| {
        let info = config.info_for_dim(dim);
        CsvHeaderInfo::new("m", "", &path.display().to_string(), &info, index)
    };
    // 7 + 5 columns of 8 bytes: 3 draws per row group and per chunk.
    let small = 3 * 8 * 12;
    let store = ZarrRun::with_chunk_bytes(&zarr, &header(0, &zarr), ids.clone(), small)
        .expect("zarr store");
    let sinks: Vec<Box<dyn DrawSink>> = (0..ids.len())
        .map(|k| {
            let sinks: Vec<Box<dyn DrawSink>> = vec![
                Box::new(StanCsvWriter::create(&csv[k], header(k, &csv[k])).expect("csv")),
                Box::new(
                    ParquetWriter::with_row_group_bytes(&parquet[k], header(k, &parquet[k]), small)
                        .expect("parquet"),
                ),
                Box::new(store.chain_writer(k)),
            ];
            Box::new(FanOut(sinks)) as Box<dyn DrawSink>
        })
        .collect();
    let report = run(&model, config, sinks, &NoProgress).expect("run");
    assert!(
        report.all_ok(),
        "{:?}",
        report.failures().collect::<Vec<_>>()
    );
    Outputs { csv, parquet, zarr }
}

fn assert_same_draws(expected: &[StanCsv], got: &[StanCsv], what: &str) {
    assert_eq!(expected.len(), got.len(), "{what}: chains");
    for (e, g) in expected.iter().zip(got) {
        assert_eq!(e.column_names, g.column_names, "{what}: columns");
        assert_eq!(e.draws.len(), g.draws.len(), "{what}: draws");
        for (row_e, row_g) in e.draws.iter().zip(&g.draws) {
            let bits = |row: &[f64]| row.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(row_e), bits(row_g), "{what}: a draw differs");
        }
        assert_eq!(e.adaptation, g.adaptation, "{what}: adaptation");
        for key in [
            "num_samples",
            "num_warmup",
            "thin",
            "seed",
            "delta",
            "max_depth",
            "id",
        ] {
            assert_eq!(
                e.config_value(key),
                g.config_value(key),
                "{what}: setting {key}"
            );
        }
    }
}

#[test]
fn parquet_and_zarr_read_back_equal_to_the_csv_of_the_same_run() {
    let dir = temp_dir("equal");
    let mut config = RunConfig {
        seed: 2024,
        chains: 3,
        threads: 3,
        ..RunConfig::default()
    };
    config.sampler.num_warmup = 50;
    config.sampler.num_samples = 41;
    config.sampler.thin = 2;
    config.sampler.save_warmup = true;
    let out = sample_all_formats(&dir, &config);
    let csv = read_draws(&out.csv).expect("csv");
    assert_eq!(csv[0].draws.len(), 21);
    assert_eq!(csv[0].warmup_rows, 25);
    let parquet = read_draws(&out.parquet).expect("parquet");
    assert_same_draws(&csv, &parquet, "parquet");
    for p in &parquet {
        assert_eq!(p.warmup_rows, 25, "parquet keeps the warmup rows");
    }
    let zarr = read_draws(std::slice::from_ref(&out.zarr)).expect("zarr");
    assert_same_draws(&csv, &zarr, "zarr");
    // The warmup groups exist when warmup is saved.
    assert!(out.zarr.join("warmup_posterior/x/zarr.json").is_file());
    assert!(out.zarr.join("warmup_sample_stats/lp/zarr.json").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The low-rank metric of a model of more than `LOW_RANK_DENSE_MAX_DIM` dimensions: the CSV
/// names `diag_e` and holds its diagonal, and every format reads back the exact factors.
#[test]
fn a_large_low_rank_metric_reads_back_exactly_from_every_format() {
    let dir = temp_dir("low-rank");
    let dim = LOW_RANK_DENSE_MAX_DIM + 50;
    let mut config = RunConfig {
        seed: 7,
        chains: 2,
        threads: 2,
        ..RunConfig::default()
    };
    config.sampler.num_warmup = 150;
    config.sampler.num_samples = 5;
    config.sampler.metric = MetricKind::LowRank;
    config.sampler.adapt.method = AdaptMethod::LowRank;
    let out = sample_all_formats_of(&dir, &config, scaled_normals(dim));
    let csv = read_draws(&out.csv).expect("csv");
    for chain in &csv {
        assert_eq!(chain.config_value("metric"), Some("diag_e"));
        let metric = chain
            .adaptation
            .as_ref()
            .and_then(|a| a.inv_metric.as_ref());
        assert!(
            matches!(metric, Some(InverseMetric::LowRank { scale, .. }) if scale.len() == dim),
            "the CSV reads back the low-rank metric: {metric:?}"
        );
    }
    let parquet = read_draws(&out.parquet).expect("parquet");
    assert_same_draws(&csv, &parquet, "parquet");
    let zarr = read_draws(std::slice::from_ref(&out.zarr)).expect("zarr");
    assert_same_draws(&csv, &zarr, "zarr");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A fixed_param run: the CSV writes `lp__`, `accept_stat__` and no adaptation block; Parquet
/// and Zarr must carry exactly those columns (not NUTS's seven) and no adaptation either.
#[test]
fn fixed_param_runs_have_the_csv_columns_in_every_format() {
    let dir = temp_dir("fixed-param");
    let mut config = RunConfig {
        seed: 77,
        chains: 2,
        threads: 2,
        ..RunConfig::default()
    };
    config.sampler.algorithm = Algorithm::FixedParam;
    config.sampler.num_warmup = 0;
    config.sampler.num_samples = 13;
    let out = sample_all_formats(&dir, &config);
    let csv = read_draws(&out.csv).expect("csv");
    let mut expected: Vec<String> = vec!["lp__".to_string(), "accept_stat__".to_string()];
    expected.extend((1..=5).map(|i| format!("x.{i}")));
    assert_eq!(csv[0].column_names, expected);
    assert_eq!(csv[0].draws.len(), 13);
    assert_eq!(csv[0].adaptation, None);
    let parquet = read_draws(&out.parquet).expect("parquet");
    assert_same_draws(&csv, &parquet, "parquet");
    let zarr = read_draws(std::slice::from_ref(&out.zarr)).expect("zarr");
    assert_same_draws(&csv, &zarr, "zarr");
    // The store itself holds only the two statistics.
    let stats = out.zarr.join("sample_stats");
    assert!(stats.join("lp/zarr.json").is_file());
    assert!(stats.join("acceptance_rate/zarr.json").is_file());
    for nuts_only in ["step_size", "tree_depth", "n_steps", "diverging", "energy"] {
        assert!(
            !stats.join(nuts_only).exists(),
            "fixed_param store has sample_stats/{nuts_only}"
        );
    }
    let root = std::fs::read_to_string(out.zarr.join("zarr.json")).expect("root");
    let root: serde_json::Value = serde_json::from_str(&root).expect("json");
    assert!(
        root["attributes"].get("settings").is_some(),
        "root attributes: {root}"
    );
    assert!(
        root["attributes"].get("adaptation").is_none(),
        "fixed_param store records adaptation"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Synthetic draws of a 2×3 matrix, a scalar and a complex number, straight into the sinks.
#[test]
fn zarr_keeps_declared_shapes_and_a_stopped_chain_keeps_its_draws() {
    let dir = temp_dir("shapes");
    let names: Vec<String> = [
        "S.1.1", "S.2.1", "S.1.2", "S.2.2", "S.1.3", "S.2.3", "mu", "z.real", "z.imag",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let vars = variables(&names);
    assert_eq!(vars[0].shape, vec![2, 3]);
    let mut config = RunConfig {
        chains: 2,
        ..RunConfig::default()
    };
    config.sampler.num_samples = 10;
    let path = dir.join("m.zarr");
    let header = CsvHeaderInfo::new("m", "", "m.zarr", &config.info(), 0);
    let store = ZarrRun::with_chunk_bytes(&path, &header, vec![1, 2], 4 * 8 * 16).expect("store");
    let stats = |lp: f64| DrawStats {
        lp,
        accept_stat: 0.5,
        stepsize: 0.25,
        treedepth: 3,
        n_leapfrog: 7,
        divergent: lp < -5.0,
        energy: -lp,
    };
    for (chain, made) in [(0usize, 10usize), (1, 6)] {
        let mut sink = store.chain_writer(chain);
        sink.begin(&Columns {
            stats: DrawStats::columns(),
            values: &names,
        })
        .expect("begin");
        sink.adaptation_done(&AdaptationInfo::Hmc {
            stepsize: 0.25,
            inv_metric: &InverseMetric::Diag(vec![1.0; 9]),
        })
        .expect("adaptation");
        for d in 0..made {
            let values: Vec<f64> = (0..names.len())
                .map(|c| (chain * 1000 + d * 10 + c) as f64)
                .collect();
            sink.draw(&Draw {
                warmup: false,
                stats: &stats(-(d as f64)).values(),
                values: &values,
            })
            .expect("draw");
        }
        sink.finish(&Timing::default()).expect("finish");
    }
    let chains = read_draws(std::slice::from_ref(&path)).expect("read");
    assert_eq!(chains.len(), 2);
    assert_eq!(chains[0].draws.len(), 10);
    assert_eq!(
        chains[1].draws.len(),
        6,
        "unmade draws are not read as draws"
    );
    let row = &chains[1].draws[5];
    assert_eq!(row[..7], [-5.0, 0.5, 0.25, 3.0, 7.0, 0.0, 5.0]);
    let expected: Vec<f64> = (0..names.len()).map(|c| (1050 + c) as f64).collect();
    assert_eq!(row[7..], expected[..]);
    assert_eq!(chains[1].config_value("id"), Some("2"));
    // The matrix is stored row-major in its declared shape: S[2,1] is column 1 (`S.2.1`).
    let meta = std::fs::read_to_string(path.join("posterior/S/zarr.json")).expect("S");
    let meta: serde_json::Value = serde_json::from_str(&meta).expect("json");
    assert_eq!(meta["shape"], serde_json::json!([2, 10, 2, 3]));
    assert_eq!(
        meta["dimension_names"],
        serde_json::json!(["chain", "draw", "S_dim_0", "S_dim_1"])
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_truncated_parquet_file_is_a_clear_error() {
    let dir = temp_dir("bad");
    let path = dir.join("m-1.parquet");
    std::fs::write(&path, b"PAR1 not really").expect("write");
    let error = read_draws(&[path]).expect_err("not parquet");
    assert!(
        error.to_string().contains("not a readable Parquet file"),
        "{error}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Row-group sizing: the byte budget unless the metadata parquet keeps per column chunk would
/// outgrow three quarters of a group; then fewer, equal groups.
#[test]
fn wide_runs_get_few_enough_row_groups_for_their_metadata() {
    use hazel_output::parquet_sink::{rows_per_group, METADATA_BYTES_PER_COLUMN_CHUNK};
    // The benchmark's 10⁵ columns × 2,000 draws: 41 rows fit 32 MiB, but 49 groups would keep
    // 35 KB of metadata per column; 3 groups of 667 rows keep 2.9 KB against 5.3 KB of values.
    assert_eq!(rows_per_group(41, 2000), 667);
    // A narrow model keeps the byte budget.
    assert_eq!(rows_per_group(400_000, 1000), 400_000);
    assert_eq!(rows_per_group(1000, 5000), 1000);
    for (by_bytes, rows) in [
        (1, 10),
        (41, 2000),
        (3, 100_000),
        (1000, 500),
        (7, 7),
        (2, 3),
    ] {
        let r = rows_per_group(by_bytes, rows);
        assert!(r >= by_bytes, "{by_bytes} {rows}: {r}");
        let groups = rows.div_ceil(r);
        let retained = (groups + 1) * METADATA_BYTES_PER_COLUMN_CHUNK;
        assert!(
            groups == 1 || 4 * retained <= 3 * 8 * r,
            "{by_bytes} {rows}: {groups} groups of {r} rows"
        );
    }
}
