//! Whether sampling leaves chains stuck (issue 12, item 4): runs a posterior for many seeds with
//! 4 chains × (1000 warmup + 1000 draws), once per number of init candidates asked for, and
//! prints per seed the largest rank-normalised split R̂ over the judged quantities, the chains
//! stuck at the maximum tree depth and the reference verdict.
//!
//! ```text
//! cargo build --release -p hazel-bench --bin init_robustness
//! target/release/init_robustness [--seeds 20] [--first-seed 1] [--init-candidates 1,4]
//!     [--threads 2] [--tiers 1,2,3] [--exclude NAME,...]
//!     [--defaults | --adaptation stan|diag-grad|low-rank [--pathfinder-init]] [NAME ...]
//!     (default NAME: arma11)
//! ```
//!
//! `--defaults` runs what `hazel sample` does without options: the adaptation and the starts
//! `hazel_run::defaults` chooses (low-rank, chains started from Pathfinder's points, random
//! screened starts where Pathfinder finds none), through the same functions. Without it the
//! chains start from Stan's random inits with `--adaptation` (default stan), or from
//! `hazel sample --init pathfinder`'s points with `--pathfinder-init`.
//!
//! `--init-candidates 1` is Stan's rule (the first finite random start), the figure before
//! screening; the default list is `1,<hazel's default>`, so each line compares the two on the
//! same seeds (with `--defaults`, only hazel's default: the candidates matter only where
//! Pathfinder finds no starts). A chain is stuck when more than half of its draws hit the maximum tree depth
//! while the run's median chain does not. A seed passes when its R̂ is below 1.01. The figures
//! do not depend on the machine or its load (draws are bit-reproducible).

use hazel_bench::posteriors::{compile_target, judged_columns, repo_root, targets};
use hazel_density::Model;
use hazel_diagnostics::reference::{compare, CompareOptions, Verdict};
use hazel_diagnostics::{rhat_rank, ChainDraws};
use hazel_draws::{DrawSink, KeptDraws, MemorySink, NoProgress};
use hazel_nuts::{AdaptMethod, RunConfig};
use hazel_run::defaults;

/// How the chains adapt and start, and the worker threads.
struct Start {
    /// `None`: `hazel sample`'s default for the run.
    method: Option<AdaptMethod>,
    pathfinder_init: bool,
    threads: usize,
}

/// One seed's run.
struct SeedResult {
    max_rhat: f64,
    stuck: usize,
    verdict: char,
    error: Option<String>,
}

fn run_seed(
    model: &hazel_graph::CompiledModel,
    target: &hazel_bench::posteriors::Target,
    seed: u64,
    candidates: usize,
    start: &Start,
) -> SeedResult {
    let mut config = RunConfig {
        seed,
        threads: start.threads,
        ..RunConfig::default()
    };
    config.sampler.init_candidates = candidates;
    let method = start
        .method
        .unwrap_or_else(|| defaults::default_adaptation(&config, false));
    config.sampler.adapt.method = method;
    config.sampler.metric = method.metric_kind(config.sampler.metric);
    if start.pathfinder_init {
        if let Some(warning) = defaults::start_at_pathfinder(model, &mut config) {
            eprintln!("seed {seed}: warning: {warning}");
        }
    }
    let info = config.info();
    let kept = KeptDraws {
        warmup: 0,
        sampling: config.sampler.num_samples,
    };
    let (sinks, handles): (Vec<Box<dyn DrawSink>>, Vec<_>) = (0..config.chains)
        .map(|k| {
            let (sink, handle) = MemorySink::new(info.chain_id(k), kept, false);
            (Box::new(sink) as Box<dyn DrawSink>, handle)
        })
        .unzip();
    let failed = |e: String| SeedResult {
        max_rhat: f64::NAN,
        stuck: 0,
        verdict: '-',
        error: Some(e),
    };
    let report = match hazel_nuts::run(model, &config, sinks, &NoProgress) {
        Ok(report) => report,
        Err(e) => return failed(e.to_string()),
    };
    if let Some((id, e)) = report.failures().next() {
        return failed(format!("chain {id}: {e}"));
    }
    let chains: Vec<_> = handles.iter().map(|h| h.take()).collect();
    let names = model.output_names();
    let judged = judged_columns(target, &names);
    let column = |name: &str| -> Option<ChainDraws> {
        let j = names.iter().position(|n| n == name)?;
        let per_chain: Vec<Vec<f64>> = chains
            .iter()
            .map(|c| c.sampling.values[j].clone())
            .collect();
        ChainDraws::new(&per_chain).ok()
    };
    let max_rhat = judged
        .iter()
        .filter_map(|name| column(name))
        .map(|d| rhat_rank(&d))
        .filter(|r| r.is_finite())
        .fold(1.0, f64::max);
    // Fraction of each chain's draws at the maximum tree depth.
    let depth = f64::from(config.sampler.max_depth);
    let at_max: Vec<f64> = chains
        .iter()
        .map(|c| {
            let depths = c.stat("treedepth__").unwrap_or(&[]);
            depths.iter().filter(|&&d| d >= depth).count() as f64 / depths.len().max(1) as f64
        })
        .collect();
    let mut sorted = at_max.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let stuck = at_max.iter().filter(|&&f| f > 0.5 && median <= 0.5).count();
    let verdict = match &target.reference {
        Some(reference) => match compare(reference, column, CompareOptions::default()).verdict {
            Verdict::Pass => 'P',
            Verdict::Fail => 'F',
            Verdict::Inconclusive => 'I',
        },
        None => '-',
    };
    SeedResult {
        max_rhat,
        stuck,
        verdict,
        error: None,
    }
}

fn main() {
    let mut seeds = 20u64;
    let mut first_seed = 1u64;
    let mut candidates: Option<Vec<usize>> = None;
    let mut threads = 2;
    let mut method = Some(AdaptMethod::Stan);
    let mut pathfinder_init = false;
    let mut sample_defaults = false;
    let mut tiers: Vec<u64> = vec![1, 2, 3];
    let mut exclude: Vec<String> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let mut args = std::env::args().skip(1);
    let number = |v: Option<String>, what: &str| -> u64 {
        v.and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("{what} needs a number"))
    };
    let list = |v: Option<String>| -> Vec<String> {
        v.unwrap_or_default()
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--seeds" => seeds = number(args.next(), "--seeds"),
            "--first-seed" => first_seed = number(args.next(), "--first-seed"),
            "--threads" => threads = number(args.next(), "--threads") as usize,
            "--init-candidates" => {
                candidates = Some(
                    list(args.next())
                        .iter()
                        .map(|c| c.parse().expect("--init-candidates: numbers"))
                        .collect(),
                )
            }
            "--tiers" => {
                tiers = list(args.next())
                    .iter()
                    .map(|t| t.parse().expect("--tiers: numbers"))
                    .collect()
            }
            "--exclude" => exclude.extend(list(args.next())),
            "--adaptation" => {
                method = Some(match args.next().as_deref() {
                    Some("stan") => AdaptMethod::Stan,
                    Some("diag-grad") => AdaptMethod::DiagGrad,
                    Some("low-rank") => AdaptMethod::LowRank,
                    other => panic!("--adaptation: unknown method {other:?}"),
                })
            }
            "--pathfinder-init" => pathfinder_init = true,
            "--defaults" => sample_defaults = true,
            "--help" | "-h" => {
                eprintln!("usage: init_robustness [--seeds 20] [--first-seed 1] [--init-candidates 1,4] [--threads 2] [--tiers 1,2,3] [--exclude NAME,...] [--defaults | --adaptation stan|diag-grad|low-rank [--pathfinder-init]] [NAME ...]");
                return;
            }
            name => names.push(name.to_string()),
        }
    }
    if names.is_empty() {
        names.push("arma11".into());
    }
    if sample_defaults {
        // What `hazel sample` does without options (a NUTS run: Pathfinder starts).
        method = None;
        pathfinder_init = defaults::pathfinder_by_default(&RunConfig::default());
    }
    let candidates = candidates.unwrap_or_else(|| {
        if sample_defaults {
            vec![hazel_nuts::DEFAULT_INIT_CANDIDATES]
        } else {
            vec![1, hazel_nuts::DEFAULT_INIT_CANDIDATES]
        }
    });
    let all = targets(&repo_root(), &tiers, true).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    let chosen: Vec<_> = all
        .iter()
        .filter(|t| {
            names
                .iter()
                .any(|n| n == "all" || t.name.contains(n.as_str()))
        })
        .filter(|t| !exclude.iter().any(|e| t.name.contains(e.as_str())))
        .collect();
    let start = Start {
        method,
        pathfinder_init,
        threads,
    };
    let described = match method {
        None => format!(
            "`hazel sample`'s defaults ({} adaptation, Pathfinder inits)",
            defaults::DEFAULT_ADAPTATION.name()
        ),
        Some(method) => format!(
            "{} adaptation{}",
            method.name(),
            if pathfinder_init {
                " and Pathfinder inits"
            } else {
                ""
            }
        ),
    };
    println!(
        "init_robustness: 4 chains × (1000 + 1000) with {described}, seeds {first_seed}..{}; per init-candidate count: max R̂ / stuck chains / verdict",
        first_seed + seeds - 1
    );
    for target in chosen {
        let model = match compile_target(target) {
            Ok(m) => m,
            Err(e) => {
                println!("`{}`: error: {e}", target.name);
                continue;
            }
        };
        println!("\n### `{}`\n", target.name);
        let mut header = String::from("| seed |");
        for c in &candidates {
            header.push_str(&format!(" {c} candidate(s): R̂ / stuck / verdict |"));
        }
        println!("{header}\n|{}", "---|".repeat(1 + candidates.len()));
        // Per candidate count: seeds passing (R̂ < 1.01), the longest run of consecutive
        // passing seeds, the current run, the worst R̂, verdict counts.
        let mut passing = vec![0u64; candidates.len()];
        let mut longest = vec![0u64; candidates.len()];
        let mut current = vec![0u64; candidates.len()];
        let mut worst = vec![1.0f64; candidates.len()];
        let mut verdicts = vec![String::new(); candidates.len()];
        let started = std::time::Instant::now();
        for seed in first_seed..first_seed + seeds {
            let mut line = format!("| {seed} |");
            for (k, &c) in candidates.iter().enumerate() {
                let r = run_seed(&model, target, seed, c, &start);
                match &r.error {
                    Some(e) => line.push_str(&format!(" error: {} |", e.replace('|', "/"))),
                    None => line.push_str(&format!(
                        " {:.3} / {} / {} |",
                        r.max_rhat, r.stuck, r.verdict
                    )),
                }
                let pass = r.error.is_none() && r.max_rhat < 1.01;
                if pass {
                    passing[k] += 1;
                    current[k] += 1;
                    longest[k] = longest[k].max(current[k]);
                } else {
                    current[k] = 0;
                }
                if r.max_rhat.is_finite() {
                    worst[k] = worst[k].max(r.max_rhat);
                } else {
                    worst[k] = f64::INFINITY;
                }
                verdicts[k].push(r.verdict);
            }
            println!("{line}");
        }
        println!();
        for (k, &c) in candidates.iter().enumerate() {
            println!(
                "{}: {c} candidate(s): R̂ < 1.01 in {} of {seeds} seeds (longest consecutive run {}), worst R̂ {:.3}, verdicts {}",
                target.name, passing[k], longest[k], worst[k], verdicts[k]
            );
        }
        eprintln!("{}: {:.0} s", target.name, started.elapsed().as_secs_f64());
    }
}
