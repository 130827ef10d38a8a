//! The sampler writing through `StanCsvWriter`: the files of a run are identical (apart from
//! the timing lines) whether the chains run on 1 thread or on 4, and the draws read back
//! estimate the target's known means within their Monte Carlo error.

use hazel_density::{IndependentNormal, Unconstrained};
use hazel_diagnostics::{mcse_mean, ChainDraws};
use hazel_nuts::{run, DrawSink, NoProgress, RunConfig};
use hazel_output::{read_stan_csvs, CsvHeaderInfo, StanCsvWriter};
use std::path::{Path, PathBuf};

/// The target's means and standard deviations.
const MEANS: [f64; 3] = [1.0, -2.0, 0.5];
const SDS: [f64; 3] = [1.0, 3.0, 0.2];

fn sample_into(dir: &Path, threads: usize) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).expect("output directory");
    let model = Unconstrained::new(
        IndependentNormal {
            mean: MEANS.to_vec(),
            sd: SDS.to_vec(),
        },
        "x",
    );
    let mut config = RunConfig {
        seed: 12345,
        chains: 4,
        threads,
        ..RunConfig::default()
    };
    config.sampler.num_warmup = 300;
    config.sampler.num_samples = 300;
    config.sampler.save_warmup = true;
    let paths: Vec<PathBuf> = (1..=4)
        .map(|id| dir.join(format!("scaled_normal_{id}.csv")))
        .collect();
    let sinks: Vec<Box<dyn DrawSink>> = paths
        .iter()
        .enumerate()
        .map(|(chain, path)| {
            // The same configured file name in both runs, so only the directory differs.
            let name = path
                .file_name()
                .expect("file name")
                .to_string_lossy()
                .into_owned();
            let header = CsvHeaderInfo::new("scaled_normal", "", &name, &config.info(), chain);
            Box::new(StanCsvWriter::create(path, header).expect("create")) as Box<dyn DrawSink>
        })
        .collect();
    let report = run(&model, &config, sinks, &NoProgress).expect("run");
    assert!(
        report.all_ok(),
        "{:?}",
        report.failures().collect::<Vec<_>>()
    );
    paths
}

/// The file without CmdStan's timing lines (the only wall-clock-dependent content).
fn without_timing(path: &Path) -> String {
    std::fs::read_to_string(path)
        .expect("output file")
        .lines()
        .filter(|line| !(line.starts_with('#') && line.contains(" seconds (")))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn csv_files_do_not_depend_on_the_thread_count() {
    let base =
        std::env::temp_dir().join(format!("hazel-output-determinism-{}", std::process::id()));
    let one_thread = sample_into(&base.join("threads-1"), 1);
    let four_threads = sample_into(&base.join("threads-4"), 4);
    for (a, b) in one_thread.iter().zip(&four_threads) {
        let (a_text, b_text) = (without_timing(a), without_timing(b));
        assert!(
            a_text.lines().count() > 600,
            "warmup and sampling rows are written"
        );
        assert!(
            a_text == b_text,
            "{} and {} differ",
            a.display(),
            b.display()
        );
    }

    let chains = read_stan_csvs(&one_thread).expect("read back");
    for csv in &chains {
        assert_eq!((csv.warmup_rows, csv.draws.len()), (300, 300));
        assert!(csv.adaptation.is_some());
    }
    for (i, (&mean, &sd)) in MEANS.iter().zip(&SDS).enumerate() {
        let column = chains[0]
            .column_index(&format!("x.{}", i + 1))
            .expect("column");
        let draws = ChainDraws::new(&chains.iter().map(|c| c.column(column)).collect::<Vec<_>>())
            .expect("draws");
        let estimate = draws.values().iter().sum::<f64>() / draws.values().len() as f64;
        let mcse = mcse_mean(&draws);
        assert!(
            mcse < 0.2 * sd,
            "x.{}: MCSE {mcse} is implausibly large for 1200 NUTS draws",
            i + 1
        );
        assert!(
            (estimate - mean).abs() < 5.0 * mcse,
            "x.{}: mean {estimate} vs {mean} (MCSE {mcse})",
            i + 1
        );
    }
    std::fs::remove_dir_all(&base).ok();
}
