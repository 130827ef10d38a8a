//! `mpirun -np R hazel sample …` with the MPI build (`cargo test -p hazel-cli --features mpi
//! --test mpi_cli`; `.ci/run` installs Open MPI and runs it). Each test skips, saying why, when
//! hazel is built without the `mpi` feature or `mpirun` is missing (and fails instead when
//! `HAZEL_MPI_REQUIRED` is set).
//!
//! - Every `--distribute` mode with `-np 2` and `-np 3` (the rank counts in
//!   `HAZEL_MPI_NP`, default `2,3`) writes the files of a plain run byte for byte (timing
//!   lines aside): a logistic regression that `data` mode splits, and the poisson_gamma
//!   example with `-np 1` too.
//! - A rank that dies (aborts itself mid-run) stops the run: a non-zero exit, rank 0's
//!   error naming that rank and no other, files of whole rows, and `--resume` afterwards
//!   giving the plain run's files (at each rank count).
//! - Lockstep chains (`--batch-chains 2`) with `--distribute chains` and `auto`: the same.
//! - Ranks started with different settings stop before writing, naming the rank.
//! - A build without MPI started by mpirun refuses to run as several copies.

mod common;

use common::draws::{assert_same_files, assert_whole_rows};
use common::{logistic_files, repo};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `mpirun` and the flags CI runs it with (root in a container, more ranks than cores).
const MPIRUN_FLAGS: [&str; 2] = ["--allow-run-as-root", "--oversubscribe"];

fn mpirun_available() -> bool {
    Command::new("mpirun")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Why the MPI tests cannot run here, if they cannot.
fn skip_reason() -> Option<&'static str> {
    if !cfg!(feature = "mpi") {
        return Some("hazel-cli is built without the `mpi` feature (cargo test --features mpi)");
    }
    if !mpirun_available() {
        return Some("`mpirun` is not on PATH (apt install openmpi-bin libopenmpi-dev)");
    }
    None
}

/// Skips the test, saying why, when MPI is not there (fails instead under
/// `HAZEL_MPI_REQUIRED`, as in CI).
macro_rules! skip_without_mpi {
    ($test:expr) => {
        if let Some(why) = skip_reason() {
            assert!(
                std::env::var_os("HAZEL_MPI_REQUIRED").is_none(),
                "{}: MPI is required here, but {why}",
                $test
            );
            eprintln!("skipped {}: {why}", $test);
            return;
        }
    };
}

/// The rank counts to run (`HAZEL_MPI_NP=2,3` by default).
fn rank_counts() -> Vec<usize> {
    std::env::var("HAZEL_MPI_NP")
        .unwrap_or_else(|_| "2,3".into())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect()
}

fn scratch(label: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("mpi_cli")
        .join(format!("{label}-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

fn hazel() -> &'static str {
    env!("CARGO_BIN_EXE_hazel")
}

fn sample_args(argv: &[&str], dir: &Path) -> Vec<String> {
    let mut a: Vec<String> = ["sample"]
        .iter()
        .chain(argv)
        .map(|s| s.to_string())
        .collect();
    a.extend([
        "--output-dir".into(),
        dir.display().to_string(),
        "--quiet".into(),
    ]);
    a
}

fn plain(argv: &[&str], dir: &Path) {
    let out = Command::new(hazel())
        .args(sample_args(argv, dir))
        .env("NO_COLOR", "1")
        .output()
        .expect("run hazel");
    assert!(
        out.status.success(),
        "plain run: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `mpirun -np <np> hazel sample <argv>` with `env` passed to every rank.
fn mpirun(np: usize, argv: &[&str], dir: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new("mpirun");
    cmd.args(MPIRUN_FLAGS).args(["-np", &np.to_string()]);
    for (k, v) in env {
        cmd.args(["-x", &format!("{k}={v}")]);
    }
    cmd.arg(hazel())
        .args(sample_args(argv, dir))
        .env("NO_COLOR", "1")
        .output()
        .expect("run mpirun")
}

fn check_modes(label: &str, argv: &[&str], chains: usize, counts: &[usize], modes: &[&str]) {
    let base = scratch(label);
    let reference = base.join("plain");
    plain(argv, &reference);
    for &np in counts {
        for mode in modes {
            let dir = base.join(format!("{mode}-{np}"));
            let mut a = argv.to_vec();
            a.extend(["--distribute", mode]);
            let out = mpirun(np, &a, &dir, &[]);
            assert!(
                out.status.success(),
                "{label}: mpirun -np {np} --distribute {mode} failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                String::from_utf8_lossy(&out.stdout).contains("Mean"),
                "rank 0 prints the summary"
            );
            assert_same_files(
                &reference,
                &dir,
                chains,
                &format!("{label}, -np {np}, {mode}"),
            );
        }
    }
}

#[test]
fn mpirun_writes_the_plain_run_s_files_in_every_mode() {
    skip_without_mpi!("mpirun_writes_the_plain_run_s_files_in_every_mode");
    let base = scratch("logistic-data");
    let (program, data) = logistic_files(&base);
    let argv = [
        program.as_str(),
        "--data",
        &data,
        "--chains",
        "4",
        "--seed",
        "7",
        "--warmup",
        "100",
        "--draws",
        "60",
    ];
    check_modes(
        "logistic",
        &argv,
        4,
        &rank_counts(),
        &["chains", "data", "auto"],
    );
}

/// Lockstep chains under mpirun: with `--distribute chains` (and `auto`, which then splits
/// chains) each rank runs its chains in lockstep groups of 2, and the files are the plain
/// run's (whose groups are 2 as well; `lockstep_cli.rs` shows those equal chains alone).
#[test]
fn mpirun_with_lockstep_chains_writes_the_plain_run_s_files() {
    skip_without_mpi!("mpirun_with_lockstep_chains_writes_the_plain_run_s_files");
    let base = scratch("logistic-lockstep");
    let (program, data) = logistic_files(&base);
    let argv = [
        program.as_str(),
        "--data",
        &data,
        "--chains",
        "4",
        "--seed",
        "3",
        "--warmup",
        "80",
        "--draws",
        "40",
        "--batch-chains",
        "2",
    ];
    check_modes("lockstep", &argv, 4, &rank_counts(), &["chains", "auto"]);
}

/// The field report's model over 1, 2 and 3 ranks (its conjugate posterior is checked on the
/// same files by `distributed.rs` and `failure_cases.rs`: these files equal the plain run's).
#[test]
fn mpirun_poisson_gamma_equals_the_plain_run_for_one_two_and_three_ranks() {
    skip_without_mpi!("mpirun_poisson_gamma_equals_the_plain_run_for_one_two_and_three_ranks");
    let program = repo().join("examples/poisson_gamma/model.stan");
    let data = repo().join("examples/poisson_gamma/data.json");
    let (program, data) = (program.display().to_string(), data.display().to_string());
    let argv = [program.as_str(), "--data", &data, "--seed", "1"];
    let mut counts = vec![1];
    counts.extend(rank_counts());
    check_modes("poisson-gamma", &argv, 4, &counts, &["chains", "data"]);
}

/// The line of rank 0's error that says why the run stopped (mpirun's own report, which names
/// the rank too, does not count).
fn stop_line(stderr: &str) -> Option<&str> {
    stderr
        .lines()
        .find(|l| l.starts_with("error: the run was stopped"))
}

/// A rank that aborts itself mid-run (the last one, at each rank count): the run fails, rank
/// 0's error names that rank and no other (mpirun stops the rest, which must not read as their
/// dying too), every row is whole, and `hazel sample --resume` (without mpirun) finishes the
/// files of a plain run. The abort comes as the ranks write a checkpoint (iteration 180, every
/// 20), when rank 0's sinks hold the write lock longest.
#[test]
fn a_rank_that_dies_stops_the_run_naming_it_and_rows_stay_whole() {
    skip_without_mpi!("a_rank_that_dies_stops_the_run_naming_it_and_rows_stay_whole");
    let base = scratch("dies");
    let (program, data) = logistic_files(&base);
    for np in rank_counts().into_iter().filter(|&np| np >= 2) {
        let dead = np - 1;
        for mode in ["data", "chains"] {
            // Not `base/data`: that would be a prefix of the data file's path, which the
            // comparison (output directory masked) would then mask too.
            let dir = base.join(format!("killed-{mode}-{np}"));
            let argv = [
                program.as_str(),
                "--data",
                &data,
                "--chains",
                "3",
                "--seed",
                "2",
                "--warmup",
                "150",
                "--draws",
                "150",
                "--distribute",
                mode,
                "--checkpoint-every-iters",
                "20",
            ];
            let dead_rank = dead.to_string();
            let env = [
                ("HAZEL_TEST_ABORT_AFTER_ITERATION", "180"),
                ("HAZEL_TEST_ABORT_RANK", dead_rank.as_str()),
            ];
            let out = mpirun(np, &argv, &dir, &env);
            let stderr = String::from_utf8_lossy(&out.stderr);
            let what = format!("-np {np}, {mode}");
            assert!(
                !out.status.success(),
                "{what}: the run must fail:\n{stderr}"
            );
            let line = stop_line(&stderr)
                .unwrap_or_else(|| panic!("{what}: rank 0 says why the run stopped:\n{stderr}"));
            for rank in 1..np {
                let named = line.contains(&format!("rank {rank} ("));
                assert_eq!(
                    named,
                    rank == dead,
                    "{what}: rank 0 names rank {dead}, the one that died, and only it:\n{stderr}"
                );
            }
            let mut rows = 0;
            for id in 1..=3 {
                let path = dir.join(format!("model-{id}.csv"));
                assert_whole_rows(&path);
                rows += std::fs::read_to_string(&path)
                    .unwrap()
                    .lines()
                    .filter(|l| !l.starts_with('#'))
                    .count();
            }
            assert!(
                rows < 3 * 151,
                "{what}: the run stopped before the end ({rows} lines)"
            );

            // Continued without mpirun: the plain run's files.
            let resumed = Command::new(hazel())
                .args(["sample", "--resume", &dir.display().to_string(), "--quiet"])
                .output()
                .expect("run hazel");
            assert!(
                resumed.status.success(),
                "{what}: resume: {}",
                String::from_utf8_lossy(&resumed.stderr)
            );
            let reference = base.join(format!("{mode}-plain"));
            if !reference.exists() {
                plain(&argv, &reference);
            }
            assert_same_files(
                &reference,
                &dir,
                3,
                &format!("{what}: killed, then resumed"),
            );
        }
    }
}

#[test]
fn ranks_started_with_different_settings_stop_before_writing() {
    skip_without_mpi!("ranks_started_with_different_settings_stop_before_writing");
    let base = scratch("mismatch");
    let (program, data) = logistic_files(&base);
    let dir = base.join("out");
    let common_args = sample_args(&[program.as_str(), "--data", &data, "--seed", "1"], &dir);
    // MPMD: rank 0 and rank 1 get different command lines.
    let out = Command::new("mpirun")
        .args(MPIRUN_FLAGS)
        .args(["-np", "1", hazel()])
        .args(&common_args)
        .args([":", "-np", "1", hazel()])
        .args(&common_args)
        .args(["--max-depth", "4"])
        .output()
        .expect("run mpirun");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("the ranks were not started alike: rank 1") && stderr.contains("settings"),
        "{stderr}"
    );
    assert!(!dir.join("model-1.csv").exists(), "nothing is written");
}

/// A hazel without MPI started by mpirun (as mpirun's environment says) refuses to run the job
/// several times over.
#[test]
fn a_build_without_mpi_refuses_to_run_as_several_ranks() {
    if cfg!(feature = "mpi") {
        eprintln!("skipped a_build_without_mpi_refuses_to_run_as_several_ranks: built with MPI");
        return;
    }
    let base = scratch("no-mpi");
    let program = repo().join("examples/eight_schools/model.stan");
    let data = repo().join("examples/eight_schools/data.json");
    let out = Command::new(hazel())
        .args(sample_args(
            &[
                &program.display().to_string(),
                "--data",
                &data.display().to_string(),
            ],
            &base,
        ))
        .env("OMPI_COMM_WORLD_SIZE", "2")
        .output()
        .expect("run hazel");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("built without MPI") && stderr.contains("--features mpi"),
        "{stderr}"
    );
    assert!(!base.join("model-1.csv").exists());
}
