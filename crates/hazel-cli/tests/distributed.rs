//! `hazel sample` split over ranks, in the default build: the ranks are threads of this test
//! process talking through `hazel_comm::fake` (the logic `mpirun -np R hazel sample` runs,
//! without MPI; `mpi_cli.rs` runs the real thing when MPI is built in).
//!
//! - Every `--distribute` mode and 1, 2, 3 ranks write chain files byte-identical (timing
//!   lines aside) to a plain in-process `hazel sample` with the same seed and settings.
//! - The field report (`examples/poisson_gamma`): split over 1, 2 and 3 ranks in each mode,
//!   the draws are those of the plain run and match the exact conjugate posterior; a version
//!   with 4,500 counts per rate makes `data` mode split every likelihood term across ranks.
//! - Start-up agreement: a rank with other settings, other data or a failing data file stops
//!   every rank, rank 0 naming the rank and what differs.
//! - Faults: a rank that dies stops the run with an error naming it, and every file holds
//!   whole rows only.

mod common;

use clap::Parser;
use common::draws::{
    assert_same_files, assert_whole_rows, assert_within_mcse, column_draws, mean, sd,
};
use common::{logistic_files, repo};
use hazel_cli::distribute::{run_ranks, RankContext};
use hazel_cli::sample::{run_to, SampleArgs};
use hazel_comm::fake::FakeWorld;
use hazel_comm::Comm;
use hazel_diagnostics::{mcse_mean, mcse_sd};
use hazel_output::read_stan_csv;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    sample: SampleArgs,
}

fn parse(argv: &[String]) -> SampleArgs {
    Cli::try_parse_from(std::iter::once("hazel-sample".to_string()).chain(argv.iter().cloned()))
        .unwrap_or_else(|e| panic!("{e}"))
        .sample
}

fn scratch(label: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("distributed")
        .join(format!("{label}-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// A plain in-process `hazel sample` into `dir`.
fn plain(argv: &[String], dir: &Path) {
    let mut argv = argv.to_vec();
    argv.extend(strings(&[
        "--output-dir",
        &dir.display().to_string(),
        "--quiet",
    ]));
    let mut out = Vec::new();
    run_to(&parse(&argv), &mut out).unwrap_or_else(|e| panic!("plain run {argv:?}: {e}"));
}

/// Each rank's result (rank 0's summary table on success).
type RankResults = Vec<Result<String, String>>;

/// `hazel sample` on `world`'s ranks, each with its own arguments (`argv_of(rank)`), into
/// `dir`.
fn ranks(
    world: &FakeWorld,
    size: usize,
    dir: &Path,
    argv_of: impl Fn(usize) -> Vec<String>,
) -> RankResults {
    let handles: Vec<_> = (0..size)
        .map(|rank| {
            let mut argv = argv_of(rank);
            argv.extend(strings(&[
                "--output-dir",
                &dir.display().to_string(),
                "--quiet",
            ]));
            let comm: Arc<dyn Comm> = Arc::new(world.comm(rank));
            std::thread::Builder::new()
                .stack_size(256 << 20)
                .spawn(move || {
                    let ctx = RankContext::new(comm, "test-host".into());
                    let mut out = Vec::new();
                    run_ranks(&parse(&argv), &mut out, &ctx)
                        .map(|()| String::from_utf8_lossy(&out).into_owned())
                        .map_err(|e| e.to_string())
                })
                .expect("rank thread")
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().expect("a rank panicked"))
        .collect()
}

#[test]
fn every_mode_and_rank_count_writes_the_plain_run_s_files() {
    let base = scratch("modes");
    let (program, data) = logistic_files(&base);
    let argv = strings(&[
        &program,
        "--data",
        &data,
        "--chains",
        "4",
        "--seed",
        "11",
        "--warmup",
        "100",
        "--draws",
        "60",
        "--save-warmup",
    ]);
    // The model has work to split (a fused GLM over three chunks).
    let source = std::fs::read_to_string(&program).unwrap();
    let checked = hazel_check::check_source("model.stan", &source)
        .checked
        .unwrap();
    let data_file = hazel_data::DataFile::parse(&std::fs::read_to_string(&data).unwrap()).unwrap();
    let model = hazel_graph::compile(&checked, &data_file, &Default::default()).unwrap();
    assert_eq!(model.data_parallel_work(), 4_500 * 3);

    let reference = base.join("plain");
    plain(&argv, &reference);
    for mode in ["chains", "data", "auto"] {
        for size in 1..=3 {
            let dir = base.join(format!("{mode}-{size}"));
            let mut a = argv.clone();
            a.extend(strings(&["--distribute", mode]));
            let results = ranks(&FakeWorld::new(size), size, &dir, |_| a.clone());
            for (rank, r) in results.iter().enumerate() {
                assert!(r.is_ok(), "{mode}, {size} ranks: rank {rank}: {r:?}");
            }
            assert!(
                results[0].as_ref().unwrap().contains("alpha"),
                "rank 0 writes the summary"
            );
            assert!(results[1..].iter().all(|r| r.as_ref().unwrap().is_empty()));
            assert_same_files(
                &reference,
                &dir,
                4,
                &format!("--distribute {mode}, {size} ranks"),
            );
        }
    }
}

/// Lockstep chains (`--batch-chains`) combine with `--distribute chains`: each rank runs its
/// block of chains in lockstep groups, and the files are the plain run's (itself without
/// lockstep); `auto` then splits chains. `--distribute data` with `--batch-chains` is refused
/// on every rank with a message naming both options.
#[test]
fn lockstep_chains_split_over_ranks_write_the_plain_run_s_files() {
    let base = scratch("lockstep");
    let (program, data) = logistic_files(&base);
    let argv = strings(&[
        &program, "--data", &data, "--chains", "4", "--seed", "5", "--warmup", "80", "--draws",
        "40",
    ]);
    let reference = base.join("plain");
    plain(&argv, &reference);
    for (mode, size, batch) in [("chains", 2, "2"), ("chains", 3, "4"), ("auto", 2, "4")] {
        let dir = base.join(format!("{mode}-{size}-{batch}"));
        let mut a = argv.clone();
        a.extend(strings(&["--distribute", mode, "--batch-chains", batch]));
        let results = ranks(&FakeWorld::new(size), size, &dir, |_| a.clone());
        for (rank, r) in results.iter().enumerate() {
            assert!(
                r.is_ok(),
                "{mode}, {size} ranks, K = {batch}: rank {rank}: {r:?}"
            );
        }
        assert_same_files(
            &reference,
            &dir,
            4,
            &format!("--distribute {mode} --batch-chains {batch}, {size} ranks"),
        );
    }
    let dir = base.join("data-refused");
    let mut a = argv.clone();
    a.extend(strings(&["--distribute", "data", "--batch-chains", "2"]));
    let results = ranks(&FakeWorld::new(2), 2, &dir, |_| a.clone());
    let message = results[0].as_ref().expect_err("refused");
    assert!(
        message.contains("--distribute data") && message.contains("--batch-chains"),
        "{message}"
    );
    assert!(results[1].is_err(), "every rank stops");
    assert!(!dir.join("model-1.csv").exists(), "nothing written");
}

/// The exact posterior of `rho[i]`: gamma(6.5 + Σ_j y[i, j], 1/2.25 + J) (shape, rate).
fn check_conjugate(dir: &Path, counts: &[Vec<u64>], chains: usize) {
    let files: Vec<_> = (1..=chains)
        .map(|id| read_stan_csv(&dir.join(format!("model-{id}.csv"))).unwrap())
        .collect();
    for (i, row) in counts.iter().enumerate() {
        let shape = 6.5 + row.iter().sum::<u64>() as f64;
        let rate = 1.0 / 2.25 + row.len() as f64;
        let name = format!("rho.{}", i + 1);
        let draws = column_draws(&files, &name);
        let values = draws.values();
        assert_within_mcse(
            &format!("{name} mean"),
            mean(values),
            shape / rate,
            mcse_mean(&draws),
            4.0,
        );
        assert_within_mcse(
            &format!("{name} sd"),
            sd(values),
            shape.sqrt() / rate,
            mcse_sd(&draws),
            4.0,
        );
    }
}

fn poisson_gamma_runs(
    label: &str,
    data: &Path,
    counts: &[Vec<u64>],
    modes: &[&str],
    extra: &[&str],
) {
    let base = scratch(label);
    let program = repo().join("examples/poisson_gamma/model.stan");
    let mut argv = strings(&[
        &program.display().to_string(),
        "--data",
        &data.display().to_string(),
        "--seed",
        "1",
    ]);
    argv.extend(strings(extra));
    let reference = base.join("plain");
    plain(&argv, &reference);
    check_conjugate(&reference, counts, 4);
    for mode in modes {
        for size in 1..=3 {
            let dir = base.join(format!("{mode}-{size}"));
            let mut a = argv.clone();
            a.extend(strings(&["--distribute", mode]));
            let results = ranks(&FakeWorld::new(size), size, &dir, |_| a.clone());
            assert!(
                results.iter().all(|r| r.is_ok()),
                "{mode} {size}: {results:?}"
            );
            assert_same_files(
                &reference,
                &dir,
                4,
                &format!("poisson_gamma, {mode}, {size} ranks"),
            );
        }
    }
}

/// The field report's model, split over 1, 2 and 3 ranks: the draws of a plain run, which
/// match the exact posterior.
#[test]
fn poisson_gamma_split_over_ranks_matches_the_conjugate_posterior() {
    let data = repo().join("examples/poisson_gamma/data.json");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&data).unwrap()).unwrap();
    let counts: Vec<Vec<u64>> = json["y"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r.as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_u64().unwrap())
                .collect()
        })
        .collect();
    poisson_gamma_runs("poisson-gamma", &data, &counts, &["chains", "data"], &[]);
}

/// Poisson counts with mean `lambda` by inversion of the cdf (deterministic given `u`).
fn poisson(lambda: f64, u: f64) -> u64 {
    let (mut k, mut p) = (0u64, (-lambda).exp());
    let mut cdf = p;
    while u > cdf && k < 10_000 {
        k += 1;
        p *= lambda / k as f64;
        cdf += p;
    }
    k
}

/// The same model with three of its rates and 4,200 counts each: each rate's likelihood is
/// three chunks, so `data` mode computes them on different ranks and folds the sums.
#[test]
fn poisson_gamma_with_every_likelihood_split_matches_the_conjugate_posterior() {
    let base = scratch("poisson-gamma-large");
    let example = repo().join("examples/poisson_gamma/data.json");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&example).unwrap()).unwrap();
    let rates: Vec<f64> = json["true_rho"]
        .as_array()
        .unwrap()
        .iter()
        .take(3)
        .map(|v| v.as_f64().unwrap())
        .collect();
    let j = 4_200;
    let mut rng = hazel_testdata::Xorshift(0x2545_f491_4f6c_dd1d);
    let counts: Vec<Vec<u64>> = rates
        .iter()
        .map(|&rho| (0..j).map(|_| poisson(rho, rng.uniform())).collect())
        .collect();
    let data = base.join("data.json");
    let rows: Vec<String> = counts
        .iter()
        .map(|r| {
            format!(
                "[{}]",
                r.iter()
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            )
        })
        .collect();
    std::fs::write(
        &data,
        format!(
            r#"{{"N": {}, "J": {j}, "y": [{}]}}"#,
            rates.len(),
            rows.join(",")
        ),
    )
    .unwrap();
    poisson_gamma_runs(
        "poisson-gamma-large-runs",
        &data,
        &counts,
        &["data"],
        &["--warmup", "150", "--draws", "150"],
    );
}

#[test]
fn ranks_started_differently_are_stopped_with_a_message_naming_them() {
    let base = scratch("mismatch");
    let (program, data) = logistic_files(&base);
    let argv = strings(&[
        &program, "--data", &data, "--chains", "2", "--seed", "3", "--draws", "20", "--warmup",
        "20",
    ]);

    // Different settings on rank 1.
    let dir = base.join("settings");
    let results = ranks(&FakeWorld::new(3), 3, &dir, |rank| {
        let mut a = argv.clone();
        if rank == 1 {
            a.extend(strings(&["--max-depth", "5"]));
        }
        a
    });
    let e = results[0].as_ref().unwrap_err();
    assert!(
        e.contains("rank 1") && e.contains("settings") && !e.contains("rank 2"),
        "{e}"
    );
    assert!(results[1..]
        .iter()
        .all(|r| r.as_ref().unwrap_err() == "(reported by rank 0)"));
    assert!(!dir.join("model-1.csv").exists(), "nothing is written");

    // Different data on rank 2.
    let other = base.join("other.json");
    let text = std::fs::read_to_string(&data).unwrap();
    // The first outcome flipped.
    let at = text.find("\"y\": [").unwrap() + 6;
    let flipped = if &text[at..at + 1] == "0" { "1" } else { "0" };
    std::fs::write(
        &other,
        format!("{}{flipped}{}", &text[..at], &text[at + 1..]),
    )
    .unwrap();
    let dir = base.join("data");
    let results = ranks(&FakeWorld::new(3), 3, &dir, |rank| {
        let mut a = argv.clone();
        if rank == 2 {
            a[2] = other.display().to_string();
        }
        a
    });
    let e = results[0].as_ref().unwrap_err();
    assert!(e.contains("rank 2") && e.contains("in its data"), "{e}");

    // A data file rank 1 cannot read.
    let dir = base.join("unreadable");
    let results = ranks(&FakeWorld::new(2), 2, &dir, |rank| {
        let mut a = argv.clone();
        if rank == 1 {
            a[2] = base.join("missing.json").display().to_string();
        }
        a
    });
    let e = results[0].as_ref().unwrap_err();
    assert!(
        e.contains("rank 1: cannot read") && e.contains("missing.json"),
        "{e}"
    );
}

#[test]
fn a_rank_that_dies_stops_the_run_with_its_name_and_whole_rows() {
    let base = scratch("dies");
    let (program, data) = logistic_files(&base);
    let argv = strings(&[
        &program, "--data", &data, "--chains", "3", "--seed", "5", "--warmup", "100", "--draws",
        "100",
    ]);
    for mode in ["chains", "data"] {
        let dir = base.join(mode);
        let world = FakeWorld::new(3);
        // Rank 2 dies some way into the run (forwarding draws, or folding sums).
        world.kill_after(2, 30);
        let mut a = argv.clone();
        a.extend(strings(&["--distribute", mode]));
        let results = ranks(&world, 3, &dir, |_| a.clone());
        let e = results[0].as_ref().unwrap_err();
        assert!(e.contains("lost rank 2"), "{mode}: {e}");
        for id in 1..=3 {
            let path = dir.join(format!("model-{id}.csv"));
            if path.exists() {
                assert_whole_rows(&path);
                read_stan_csv(&path).unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
}
