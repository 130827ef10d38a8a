//! End-to-end acceptance on posteriordb: for every tier-1 and tier-2 posterior (or those named)
//! that has a program in `corpus/posteriordb/`, runs `hazel sample` (4 chains × 1000 warmup +
//! 1000 draws, with the reference's adapt_delta and max_treedepth) and `hazel compare` against
//! the suite's `reference.json`, then prints a pass/fail table.
//!
//! ```text
//! cargo build --release -p hazel-cli -p hazel-bench
//! target/release/e2e_posteriordb [--tiers 1,2,3] [--jobs N] [--timeout SECONDS] [--quantiles] [NAME ...]
//! ```
//!
//! The `hazel` binary is taken from beside this one (or `$HAZEL_BIN`); the suite from
//! `../shared/posteriordb` next to the checkout (or `$HAZEL_POSTERIORDB`). Exit status 0 when no
//! posterior failed or errored (inconclusive ones are listed, not counted as failures).
//!
//! This file is also the harness of `crates/hazel-cli/tests/posteriordb_sampling.rs`, which
//! includes it as a module: everything it needs is std and serde_json.

#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// One posterior to run.
#[derive(Debug, Clone)]
pub struct Posterior {
    pub name: String,
    pub tier: u64,
    pub program: PathBuf,
    pub data: PathBuf,
    pub reference: PathBuf,
    /// From the reference's `method_arguments.control` (absent = Stan's default).
    pub adapt_delta: Option<f64>,
    pub max_depth: Option<u64>,
}

/// Sampler settings of the acceptance runs.
#[derive(Debug, Clone)]
pub struct RunSettings {
    pub chains: usize,
    pub warmup: usize,
    pub draws: usize,
    pub seed: u64,
    /// Threads per run (0 = all cores).
    pub threads: usize,
    pub quantiles: bool,
    /// Per-posterior limit on `hazel sample` (none: wait).
    pub timeout: Option<Duration>,
}

impl Default for RunSettings {
    fn default() -> Self {
        RunSettings {
            chains: 4,
            warmup: 1000,
            draws: 1000,
            seed: 20_240_601,
            threads: 0,
            quantiles: false,
            timeout: None,
        }
    }
}

/// What happened to one posterior.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub name: String,
    pub tier: u64,
    /// `pass`, `fail`, `inconclusive`, `error` (hazel could not sample) or `timeout`.
    pub verdict: String,
    /// Wall time of `hazel sample`, seconds.
    pub seconds: f64,
    /// Failed checks, the error, or the convergence problem.
    pub detail: String,
}

/// The posteriordb suite beside the checkout, unless `$HAZEL_POSTERIORDB` names another.
pub fn suite_dir() -> PathBuf {
    hazel_testdata::posteriordb_location()
}

/// The posteriors of `tiers` that have a program in the corpus, in the suite's order.
pub fn posteriors(repo: &Path, suite: &Path, tiers: &[u64]) -> Result<Vec<Posterior>, String> {
    let read_json = |path: &Path| -> Result<Value, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    };
    let index = read_json(&suite.join("suite.json"))?;
    let entries = index["posteriors"]
        .as_array()
        .ok_or("suite.json: no `posteriors` list")?;
    let mut out = Vec::new();
    for entry in entries {
        let (Some(name), Some(tier)) = (entry["posterior"].as_str(), entry["tier"].as_u64()) else {
            continue;
        };
        let program = repo
            .join("corpus/posteriordb")
            .join(name)
            .join("model.stan");
        let reference = suite.join(name).join("reference.json");
        if !tiers.contains(&tier) || !program.exists() || !reference.exists() {
            continue;
        }
        let info = read_json(&suite.join(name).join("info.json"))?;
        let control = &info["reference"]["method_arguments"]["control"];
        out.push(Posterior {
            name: name.to_string(),
            tier,
            program,
            data: suite.join(name).join("data.json"),
            reference,
            adapt_delta: control["adapt_delta"].as_f64(),
            max_depth: control["max_treedepth"].as_u64(),
        });
    }
    Ok(out)
}

/// Runs `command` to completion, or kills it after `limit` (`Ok(None)`). Its output is read
/// into files, so a chatty child cannot block on a full pipe while it is being waited for.
fn output_within(
    command: &mut Command,
    limit: Option<Duration>,
) -> std::io::Result<Option<Output>> {
    let Some(limit) = limit else {
        return command.output().map(Some);
    };
    let scratch = std::env::temp_dir().join(format!(
        "hazel-e2e-out-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let (out_path, err_path) = (
        scratch.with_extension("stdout"),
        scratch.with_extension("stderr"),
    );
    let mut child = command
        .stdout(std::fs::File::create(&out_path)?)
        .stderr(std::fs::File::create(&err_path)?)
        .spawn()?;
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if start.elapsed() > limit {
            child.kill()?;
            child.wait()?;
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let output = status.map(|status| Output {
        status,
        stdout: std::fs::read(&out_path).unwrap_or_default(),
        stderr: std::fs::read(&err_path).unwrap_or_default(),
    });
    let _ = std::fs::remove_file(&out_path);
    let _ = std::fs::remove_file(&err_path);
    Ok(output)
}

/// The first `error: …` line of hazel's stderr (the cause; the last one only says that it
/// stopped), or the last line when there is none.
fn error_line(text: &str) -> String {
    text.lines()
        .find(|l| l.starts_with("error:"))
        .or_else(|| text.lines().rev().find(|l| !l.trim().is_empty()))
        .unwrap_or("(no message: killed?)")
        .trim()
        .to_string()
}

/// Samples one posterior with `hazel` into `out_dir/<name>/` and compares with its reference.
pub fn run_one(
    hazel: &Path,
    posterior: &Posterior,
    out_dir: &Path,
    settings: &RunSettings,
) -> Outcome {
    let dir = out_dir.join(&posterior.name);
    let _ = std::fs::remove_dir_all(&dir);
    let mut sample = Command::new(hazel);
    sample
        .arg("sample")
        .arg(&posterior.program)
        .arg("--data")
        .arg(&posterior.data)
        .arg("--output-dir")
        .arg(&dir)
        .args(["--chains", &settings.chains.to_string()])
        .args(["--warmup", &settings.warmup.to_string()])
        .args(["--draws", &settings.draws.to_string()])
        .args(["--seed", &settings.seed.to_string()])
        .args(["--threads", &settings.threads.to_string()])
        .arg("--quiet");
    if let Some(delta) = posterior.adapt_delta {
        sample.args(["--adapt-delta", &delta.to_string()]);
    }
    if let Some(depth) = posterior.max_depth {
        sample.args(["--max-depth", &depth.to_string()]);
    }
    let start = Instant::now();
    let sampled = output_within(&mut sample, settings.timeout);
    let seconds = start.elapsed().as_secs_f64();
    let outcome = |verdict: &str, detail: String| Outcome {
        name: posterior.name.clone(),
        tier: posterior.tier,
        verdict: verdict.to_string(),
        seconds,
        detail,
    };
    let sampled = match sampled {
        Ok(Some(output)) => output,
        Ok(None) => return outcome("timeout", format!("stopped after {seconds:.0} s")),
        Err(e) => return outcome("error", format!("cannot run {}: {e}", hazel.display())),
    };
    if !sampled.status.success() {
        return outcome(
            "error",
            error_line(&String::from_utf8_lossy(&sampled.stderr)),
        );
    }
    // Divergences and tree-depth hits as the summary reports them, for the table.
    let summary = String::from_utf8_lossy(&sampled.stdout);
    let sampler_notes: Vec<String> = summary
        .lines()
        .filter(|l| {
            l.contains("transitions ended with a divergence")
                || l.contains("transitions hit the maximum treedepth")
                || l.contains("E-BFMI =")
        })
        .map(|l| l.trim().to_string())
        .collect();
    let files: Vec<PathBuf> = (1..=settings.chains)
        .map(|id| dir.join(format!("model-{id}.csv")))
        .collect();
    let mut compare = Command::new(hazel);
    compare
        .arg("compare")
        .arg(&posterior.reference)
        .args(&files);
    if settings.quantiles {
        compare.arg("--quantiles");
    }
    let compared = match compare.output() {
        Ok(output) => output,
        Err(e) => return outcome("error", format!("cannot run {}: {e}", hazel.display())),
    };
    let report = String::from_utf8_lossy(&compared.stdout);
    let mut detail: Vec<String> = report
        .lines()
        .filter(|l| !l.starts_with("verdict:"))
        .filter(|l| l.contains("FAIL") || l.contains("not converged") || l.contains("missing"))
        .map(|l| {
            // Keep the quantity name and the failed checks only.
            let name = l.split_whitespace().next().unwrap_or("");
            let checks: Vec<&str> = l
                .split(", ")
                .filter(|c| c.contains("FAIL"))
                .map(|c| c.rsplit("  ").next().unwrap_or(c))
                .collect();
            if l.contains("missing") {
                format!("{name} missing")
            } else if checks.is_empty() {
                format!("{name} not converged")
            } else {
                format!("{name}: {}", checks.join(", "))
            }
        })
        .collect();
    detail.extend(sampler_notes);
    let verdict = match compared.status.code() {
        Some(0) => "pass",
        Some(1) if report.contains("verdict: fail") => "fail",
        Some(2) => "inconclusive",
        _ => {
            return outcome(
                "error",
                error_line(&String::from_utf8_lossy(&compared.stderr)),
            );
        }
    };
    outcome(verdict, detail.join("; "))
}

/// The outcomes as a Markdown table, with totals.
pub fn table(outcomes: &[Outcome]) -> String {
    let mut out =
        String::from("| posterior | tier | verdict | sample s | notes |\n|---|---|---|---|---|\n");
    for o in outcomes {
        let mut notes = o.detail.clone();
        if notes.len() > 300 {
            let mut cut = 300;
            while !notes.is_char_boundary(cut) {
                cut -= 1;
            }
            notes.truncate(cut);
            notes.push('…');
        }
        out.push_str(&format!(
            "| `{}` | {} | {} | {:.1} | {} |\n",
            o.name,
            o.tier,
            o.verdict,
            o.seconds,
            notes.replace('|', "/")
        ));
    }
    let count = |v: &str| outcomes.iter().filter(|o| o.verdict == v).count();
    out.push_str(&format!(
        "\n{} posteriors: {} pass, {} fail, {} inconclusive, {} error, {} timeout; sampling {:.0} s in all\n",
        outcomes.len(),
        count("pass"),
        count("fail"),
        count("inconclusive"),
        count("error"),
        count("timeout"),
        outcomes.iter().map(|o| o.seconds).sum::<f64>()
    ));
    out
}

/// Runs `posteriors` with up to `jobs` at a time; outcomes in the input order.
pub fn run_all(
    hazel: &Path,
    posteriors: &[Posterior],
    out_dir: &Path,
    settings: &RunSettings,
    jobs: usize,
) -> Vec<Outcome> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(vec![None; posteriors.len()]);
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(posterior) = posteriors.get(i) else {
                    break;
                };
                let outcome = run_one(hazel, posterior, out_dir, settings);
                eprintln!(
                    "{}: {} ({:.1} s)",
                    outcome.name, outcome.verdict, outcome.seconds
                );
                results.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(outcome);
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .flatten()
        .collect()
}

fn main() {
    let mut tiers = vec![1, 2];
    let mut jobs = 1;
    let mut settings = RunSettings::default();
    let mut names = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--tiers" => {
                tiers = args
                    .next()
                    .unwrap_or_default()
                    .split(',')
                    .filter_map(|t| t.trim().parse().ok())
                    .collect()
            }
            "--jobs" => jobs = args.next().and_then(|j| j.parse().ok()).unwrap_or(1),
            "--quantiles" => settings.quantiles = true,
            "--timeout" => {
                settings.timeout = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .map(Duration::from_secs_f64)
            }
            "--seed" => {
                settings.seed = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(settings.seed)
            }
            "--help" | "-h" => {
                eprintln!("usage: e2e_posteriordb [--tiers 1,2] [--jobs N] [--seed S] [--timeout SECONDS] [--quantiles] [NAME ...]");
                return;
            }
            name => names.push(name.to_string()),
        }
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let suite = suite_dir();
    if !suite.join("suite.json").exists() {
        eprintln!(
            "posteriordb suite not found at {} (set HAZEL_POSTERIORDB)",
            suite.display()
        );
        std::process::exit(1);
    }
    let hazel = match std::env::var_os("HAZEL_BIN") {
        Some(path) => PathBuf::from(path),
        None => std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(|dir| dir.join("hazel")))
            .unwrap_or_else(|| PathBuf::from("hazel")),
    };
    if !hazel.exists() {
        eprintln!(
            "{} not found: build it with `cargo build --release -p hazel-cli` (or set HAZEL_BIN)",
            hazel.display()
        );
        std::process::exit(1);
    }
    if !names.is_empty() {
        tiers = vec![1, 2, 3];
    }
    let mut list = match posteriors(&repo, &suite, &tiers) {
        Ok(list) => list,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    if !names.is_empty() {
        list.retain(|p| names.contains(&p.name));
    }
    if jobs > 1 {
        // Share the cores between concurrent runs.
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        settings.threads = (cores / jobs).max(1);
    }
    let out_dir = std::env::temp_dir().join(format!("hazel-e2e-{}", std::process::id()));
    let outcomes = run_all(&hazel, &list, &out_dir, &settings, jobs);
    print!("{}", table(&outcomes));
    let _ = std::fs::remove_dir_all(&out_dir);
    if outcomes
        .iter()
        .any(|o| o.verdict == "fail" || o.verdict == "error")
    {
        std::process::exit(1);
    }
}
