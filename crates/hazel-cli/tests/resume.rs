//! Checkpoint, resume and the output directory's integrity, through the `hazel` binary: a run
//! interrupted (by a deterministic self-abort or a real SIGKILL) in warmup or in sampling and
//! resumed with `--resume DIR` writes files byte-identical to an uninterrupted run's (timing
//! lines aside); a torn last row is cut; finished chains are left alone; changed inputs are
//! refused; a second run into a directory in use fails naming the first, whose files stay
//! intact.

mod common;
use common::draws::{file_without_timing, first_difference};
use common::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `hazel sample` of eight schools with `extra` options into `out` below `cwd`.
fn sample_args(extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "sample",
        &example("eight_schools", "model.stan"),
        "--data",
        &example("eight_schools", "data.json"),
        "--output-dir",
        "out",
        "--seed",
        "11",
        "--chains",
        "2",
        "--threads",
        "1",
        "--quiet",
        "--checkpoint-every-iters",
        "7",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn run_in(cwd: &Path, args: &[String], abort_after: Option<usize>) -> std::process::Output {
    std::fs::create_dir_all(cwd).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_hazel"));
    command.current_dir(cwd).args(args).env("NO_COLOR", "1");
    if let Some(k) = abort_after {
        command.env("HAZEL_TEST_ABORT_AFTER_ITERATION", k.to_string());
    }
    command.output().expect("run hazel")
}

fn resume(dir: &Path) -> std::process::Output {
    // From another directory: the stored working directory is used for relative paths.
    hazel(&["sample", "--resume", dir.to_str().unwrap(), "--quiet"])
}

fn chain_files(out: &Path) -> Vec<PathBuf> {
    (1..=2)
        .map(|id| out.join(format!("model-{id}.csv")))
        .collect()
}

/// An uninterrupted run with `extra` options, in `root/reference`.
fn reference(root: &Path, extra: &[&str]) -> PathBuf {
    let cwd = root.join("reference");
    let output = run_in(&cwd, &sample_args(extra), None);
    assert!(output.status.success(), "{}", text(&output.stderr));
    cwd.join("out")
}

fn assert_same_files(reference: &Path, resumed: &Path, what: &str) {
    for (a, b) in chain_files(reference).iter().zip(chain_files(resumed)) {
        let (a, b) = (file_without_timing(a), file_without_timing(&b));
        assert!(a == b, "{what}: {} differs from the uninterrupted run", b);
    }
}

fn rows(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|t| t.lines().filter(|l| !l.starts_with('#')).count())
        .unwrap_or(0)
        .saturating_sub(1)
}

/// Aborted after iteration K (the process aborts itself, as in a crash), then resumed.
fn abort_and_resume(name: &str, extra: &[&str], abort_after: usize, tear: bool) {
    abort_and_resume_with(name, extra, &[], abort_after, tear)
}

/// [`abort_and_resume`] with `interrupted_only` options (which never change the files) given
/// to the interrupted run, and so to its resumption, but not to the reference run.
fn abort_and_resume_with(
    name: &str,
    extra: &[&str],
    interrupted_only: &[&str],
    abort_after: usize,
    tear: bool,
) {
    let root = scratch_dir(name);
    let reference = reference(&root, extra);
    let cwd = root.join("interrupted");
    let interrupted: Vec<&str> = extra.iter().chain(interrupted_only).copied().collect();
    let output = run_in(&cwd, &sample_args(&interrupted), Some(abort_after));
    assert!(!output.status.success(), "the run was aborted");
    let out = cwd.join("out");
    let files = chain_files(&out);
    assert!(
        files
            .iter()
            .all(|f| std::fs::metadata(f).is_ok_and(|m| m.len() > 0)),
        "every chain file exists with its header"
    );
    assert!(
        out.join("model-1.checkpoint.json").exists(),
        "chain 1 resumes from a checkpoint"
    );
    if tear {
        // Half a row, as a kill inside the write leaves it.
        let mut text = std::fs::read(&files[0]).unwrap();
        text.extend_from_slice(b"-7.1,0.93,0.2");
        std::fs::write(&files[0], text).unwrap();
    }
    let output = resume(&out);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_same_files(&reference, &out, name);
}

#[test]
fn aborted_in_warmup_resumes_to_identical_files() {
    abort_and_resume(
        "resume-warmup",
        &["--warmup", "150", "--draws", "100"],
        60,
        false,
    );
}

#[test]
fn aborted_in_sampling_with_saved_warmup_and_a_torn_row_resumes_to_identical_files() {
    abort_and_resume(
        "resume-sampling",
        &[
            "--warmup",
            "150",
            "--draws",
            "100",
            "--save-warmup",
            "--thin",
            "2",
        ],
        200,
        true,
    );
}

#[test]
fn aborted_at_the_end_of_warmup_resumes_to_identical_files() {
    // Killed right after the last warmup iteration, before the adaptation block is written.
    abort_and_resume(
        "resume-boundary",
        &["--warmup", "150", "--draws", "100"],
        150,
        false,
    );
}

#[test]
fn aborted_in_lockstep_resumes_to_the_files_of_chains_alone() {
    // Chains in lockstep end their iterations at different times: the abort leaves each at its
    // own checkpoint, and the resumed group continues from both.
    abort_and_resume_with(
        "resume-lockstep-warmup",
        &["--warmup", "150", "--draws", "100"],
        &["--batch-chains", "2"],
        60,
        false,
    );
    abort_and_resume_with(
        "resume-lockstep-sampling",
        &["--warmup", "150", "--draws", "100", "--save-warmup"],
        &["--batch-chains", "2", "--lockstep", "masked"],
        200,
        true,
    );
}

/// A real SIGKILL once chain 1's file has `rows` rows, then `--resume`.
fn kill_and_resume(name: &str, extra: &[&str], rows_before_kill: usize) -> PathBuf {
    let root = scratch_dir(name);
    let reference = reference(&root, extra);
    let cwd = root.join("killed");
    std::fs::create_dir_all(&cwd).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_hazel"))
        .current_dir(&cwd)
        .args(sample_args(extra))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start hazel");
    let out = cwd.join("out");
    let first = out.join("model-1.csv");
    let start = Instant::now();
    while rows(&first) < rows_before_kill {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it could be killed"
        );
        assert!(start.elapsed() < Duration::from_secs(120), "no progress");
        std::thread::sleep(Duration::from_millis(1));
    }
    child.kill().expect("SIGKILL");
    let status = child.wait().unwrap();
    assert!(!status.success(), "killed");
    // Summary of the killed run's files: chains with no draws yet are left out with a note.
    if rows(&first) > 200 {
        let files = chain_files(&out);
        let output = hazel(&[
            "summary",
            files[0].to_str().unwrap(),
            files[1].to_str().unwrap(),
        ]);
        assert!(output.status.success(), "{}", text(&output.stderr));
    }
    let output = resume(&out);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_same_files(&reference, &out, name);
    out
}

#[test]
fn sigkill_in_warmup_and_in_sampling_then_resume_gives_identical_files() {
    let extra = ["--warmup", "200", "--draws", "200", "--save-warmup"];
    kill_and_resume("kill-warmup", &extra, 80);
    let out = kill_and_resume("kill-sampling", &extra, 260);
    // Resuming a finished run changes nothing, timing lines included.
    let before: Vec<Vec<u8>> = chain_files(&out)
        .iter()
        .map(|f| std::fs::read(f).unwrap())
        .collect();
    let output = resume(&out);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let after: Vec<Vec<u8>> = chain_files(&out)
        .iter()
        .map(|f| std::fs::read(f).unwrap())
        .collect();
    assert!(before == after, "a finished chain is left alone");
}

#[test]
fn resume_refuses_changed_data_and_directories_of_no_run() {
    let root = scratch_dir("resume-changed");
    let data = root.join("data.json");
    std::fs::copy(example("eight_schools", "data.json"), &data).unwrap();
    let mut args = sample_args(&["--warmup", "100", "--draws", "50"]);
    let at = args.iter().position(|a| a == "--data").unwrap();
    args[at + 1] = "data.json".to_string();
    let output = run_in(&root, &args, Some(30));
    assert!(!output.status.success());
    let mut text_data = std::fs::read_to_string(&data).unwrap();
    text_data = text_data.replacen("28", "29", 1);
    std::fs::write(&data, text_data).unwrap();
    let output = resume(&root.join("out"));
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("cannot resume: the data (data.json) changed since the run started"),
        "{stderr}"
    );

    let empty = root.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let output = resume(&empty);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("hazel-run.json"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn a_second_run_into_a_directory_in_use_fails_naming_the_first() {
    let root = scratch_dir("lock");
    let args = sample_args(&["--warmup", "500", "--draws", "500"]);
    let mut first = Command::new(env!("CARGO_BIN_EXE_hazel"))
        .current_dir(&root)
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start hazel");
    let file = root.join("out").join("model-1.csv");
    let start = Instant::now();
    while rows(&file) == 0 {
        assert!(first.try_wait().unwrap().is_none(), "the first run ended");
        assert!(start.elapsed() < Duration::from_secs(120), "no progress");
        std::thread::sleep(Duration::from_millis(2));
    }
    let second = run_in(&root, &args, None);
    assert_eq!(second.status.code(), Some(1));
    let stderr = text(&second.stderr);
    assert!(
        stderr.contains(&format!(
            "is in use by another hazel run (process {}",
            first.id()
        )),
        "{stderr}"
    );
    assert!(first.wait().unwrap().success(), "the first run completes");
    let files = chain_files(&root.join("out"));
    let output = hazel(&[
        "summary",
        files[0].to_str().unwrap(),
        files[1].to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("2 chains: each with 500 post-warmup draws"),
        "{}",
        text(&output.stdout)
    );

    // A header-only file (a chain that had not started when its run was killed) is left out
    // of a summary with a note.
    let full = std::fs::read_to_string(&files[0]).unwrap();
    let columns = full.find("\nlp__").unwrap() + 1;
    let header_end = columns + full[columns..].find('\n').unwrap() + 1;
    let unstarted = root.join("out").join("model-3.csv");
    std::fs::write(&unstarted, &full[..header_end]).unwrap();
    let output = hazel(&[
        "summary",
        files[0].to_str().unwrap(),
        files[1].to_str().unwrap(),
        unstarted.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("model-3.csv has no post-warmup draws"),
        "{}",
        text(&output.stderr)
    );
}

/// A model of more than 100 parameters, whose default low-rank metric's exact factors are
/// written after the timing block at the end of the run: a chain aborted in sampling has none
/// yet, and its resumption writes them (the runner hands the resumed chain's metric to its
/// sink), so the files equal the uninterrupted run's.
#[test]
fn a_large_low_rank_metric_is_written_whole_after_a_resume() {
    let root = scratch_dir("resume-low-rank");
    std::fs::create_dir_all(&root).unwrap();
    let model = root.join("wide.stan");
    std::fs::write(
        &model,
        "parameters { real z; vector[150] x; }\nmodel { z ~ normal(0, 3); x ~ normal(z, 0.3); }\n",
    )
    .unwrap();
    let args: Vec<String> = [
        "sample",
        model.to_str().unwrap(),
        "--output-dir",
        "out",
        "--seed",
        "9",
        "--chains",
        "2",
        "--warmup",
        "150",
        "--draws",
        "20",
        "--quiet",
        "--checkpoint-every-iters",
        "10",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let output = run_in(&root.join("reference"), &args, None);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let cwd = root.join("interrupted");
    assert!(!run_in(&cwd, &args, Some(160)).status.success());
    let files = |dir: &Path| -> Vec<PathBuf> {
        (1..=2)
            .map(|id| dir.join(format!("out/wide-{id}.csv")))
            .collect()
    };
    // A chain stopped in sampling: its adaptation block, no factors yet.
    let cut_in_sampling = files(&cwd).iter().any(|f| {
        let cut = std::fs::read_to_string(f).unwrap();
        cut.contains("# Diagonal elements of inverse mass matrix:")
            && !cut.contains("# Eigenvectors U")
    });
    assert!(cut_in_sampling, "no chain was stopped in sampling");
    let output = resume(&cwd.join("out"));
    assert!(output.status.success(), "{}", text(&output.stderr));
    for (a, b) in files(&root.join("reference")).iter().zip(files(&cwd)) {
        let (a, b) = (file_without_timing(a), file_without_timing(&b));
        assert!(
            b.contains("# Eigenvectors U"),
            "the resumed file has the factors"
        );
        assert!(a == b, "{}", first_difference(&a, &b));
    }
}
