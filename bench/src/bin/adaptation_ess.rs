//! ESS per gradient of each warmup adaptation against Stan's, measured in one run, on the
//! posteriordb posteriors of tiers 1–3 (those with a program in `corpus/posteriordb/`) and the
//! bundled examples; and Pathfinder's gradients to a usable approximation against the
//! gradients of NUTS's warmup.
//!
//! ```text
//! cargo build --release -p hazel-bench --bin adaptation_ess
//! target/release/adaptation_ess [--tiers 1,2,3] [--no-examples] [--seeds N] [--chains 4]
//!     [--warmup 1000] [--draws 1000] [--threads T] [--methods stan,diag-grad,low-rank]
//!     [--exclude NAME,...] [--no-pathfinder] [NAME ...]
//! ```
//!
//! A method followed by `+pf` (`low-rank+pf`) starts its chains from `hazel sample --init
//! pathfinder`'s points instead of uniform(-2, 2); Pathfinder's gradients count as warmup's.
//! `--no-pathfinder` leaves out the Pathfinder column (which costs a multi-path run each).
//!
//! For every posterior and method, `--seeds` runs (seeds 1, 2, …) of `--chains` chains are
//! made in process through `hazel_nuts::run` on a model wrapper that counts every gradient
//! evaluation (initialisation, step-size searches, warmup and sampling transitions). A run's
//! efficiency is `min ESS_bulk / gradients`, the minimum over the reference's quantities (all
//! output columns for an example), and a method's figure on a posterior is the mean over its
//! seeds. Ratios are against Stan's adaptation on the same posterior and seeds. ESS per gradient
//! does not depend on the machine's load, so the figures are comparable across machines.
//!
//! A posterior is "correlated" when the largest absolute correlation between two of its
//! quantities in the Stan runs' draws is at least 0.5. Each run is also compared with the
//! reference by the suite's rule (`hazel_diagnostics::reference`), so that an adaptation that
//! samples wrongly cannot look efficient: its verdict is printed beside its ratio.
//!
//! Pathfinder: a multi-path run (4 paths from each chain's uniform(-2, 2) start, CmdStan's
//! defaults) per posterior; its gradient count against Stan's warmup gradients (all chains), and
//! how usable its draws are: the largest |mean − mean_ref| / sd_ref over the reference quantities
//! (usable when below 1: its draws start chains inside the posterior's bulk).

use hazel_approx::pathfinder::{multi_path, MultiPathOptions};
use hazel_bench::counting::Counting;
use hazel_bench::posteriors::{compile_target, judged_columns, repo_root, targets, Target};
use hazel_density::{LogDensity, Model};
use hazel_diagnostics::reference::{compare, CompareOptions, Verdict};
use hazel_diagnostics::{ess_bulk, rhat_rank, ChainDraws};
use hazel_draws::{Columns, Draw};
use hazel_nuts::{
    AdaptMethod, DrawSink, DrawStats, Init, MetricKind, NoProgress, RunConfig, Timing,
};
use hazel_rng::StreamRng;

/// An adaptation and how its chains start.
#[derive(Clone, Copy, PartialEq)]
struct Variant {
    method: AdaptMethod,
    /// From Pathfinder's inits (`--init pathfinder`) rather than uniform(-2, 2).
    pathfinder_init: bool,
}

impl Variant {
    fn name(&self) -> String {
        let suffix = if self.pathfinder_init { "+pf" } else { "" };
        format!("{}{suffix}", self.method.name())
    }
}
use std::sync::{Arc, Mutex};

/// One chain's sampling draws (output columns), kept in memory, and the leapfrog steps
/// (gradients) of its sampling transitions.
#[derive(Default)]
struct Kept {
    rows: Vec<Vec<f64>>,
    sampling_gradients: u64,
}

struct MemorySink(Arc<Mutex<Kept>>);

impl DrawSink for MemorySink {
    fn begin(&mut self, _: &Columns<'_>) -> std::io::Result<()> {
        Ok(())
    }
    fn draw(&mut self, draw: &Draw<'_>) -> std::io::Result<()> {
        if !draw.warmup {
            let mut kept = self.0.lock().unwrap();
            kept.rows.push(draw.values.to_vec());
            kept.sampling_gradients += u64::from(DrawStats::from_values(draw.stats).n_leapfrog);
        }
        Ok(())
    }
    fn finish(&mut self, _: &Timing) -> std::io::Result<()> {
        Ok(())
    }
}

/// What one method did on one posterior, over its seeds.
#[derive(Clone)]
struct MethodResult {
    /// Mean over seeds of min ESS_bulk / gradients.
    ess_per_gradient: f64,
    /// Mean gradients per run, and of those in warmup (initialisation included).
    gradients: f64,
    warmup_gradients: f64,
    min_ess: f64,
    max_rhat: f64,
    /// The reference comparison's verdicts, one letter per seed (P, F, I, or - without one).
    verdicts: String,
    /// Largest |correlation| between two quantities (pooled draws of the first seed).
    max_correlation: f64,
    error: Option<String>,
}

struct Settings {
    chains: usize,
    warmup: usize,
    draws: usize,
    seeds: u64,
    threads: usize,
}

/// Draws of the named columns (or all), chain by chain.
fn columns(names: &[String], kept: &[Kept], wanted: &[String]) -> Vec<(String, ChainDraws)> {
    let draws = kept.iter().map(|k| k.rows.len()).min().unwrap_or(0);
    wanted
        .iter()
        .filter_map(|w| {
            let i = names.iter().position(|n| n == w)?;
            let per_chain: Vec<Vec<f64>> = kept
                .iter()
                .map(|k| k.rows[..draws].iter().map(|r| r[i]).collect())
                .collect();
            Some((w.clone(), ChainDraws::new(&per_chain).ok()?))
        })
        .collect()
}

fn max_abs_correlation(cols: &[(String, ChainDraws)]) -> f64 {
    let series: Vec<(f64, f64, &[f64])> = cols
        .iter()
        .map(|(_, d)| {
            let v = d.values();
            let n = v.len() as f64;
            let m = v.iter().sum::<f64>() / n;
            let sd = (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n).sqrt();
            (m, sd, v)
        })
        .filter(|(_, sd, _)| *sd > 0.0)
        .collect();
    let mut best: f64 = 0.0;
    for a in 0..series.len() {
        for b in a + 1..series.len() {
            let (ma, sa, va) = series[a];
            let (mb, sb, vb) = series[b];
            let n = va.len() as f64;
            let c = va
                .iter()
                .zip(vb)
                .map(|(x, y)| (x - ma) * (y - mb))
                .sum::<f64>()
                / n
                / (sa * sb);
            best = best.max(c.abs());
        }
    }
    best
}

fn run_method(
    model: &hazel_graph::CompiledModel,
    target: &Target,
    variant: Variant,
    settings: &Settings,
) -> MethodResult {
    let method = variant.method;
    let names = model.output_names();
    let wanted = judged_columns(target, &names);
    let mut result = MethodResult {
        ess_per_gradient: 0.0,
        gradients: 0.0,
        warmup_gradients: 0.0,
        min_ess: f64::INFINITY,
        max_rhat: 0.0,
        verdicts: String::new(),
        max_correlation: 0.0,
        error: None,
    };
    for seed in 1..=settings.seeds {
        let counting = Counting::new(model);
        let mut config = RunConfig {
            seed,
            chains: settings.chains,
            threads: settings.threads,
            ..RunConfig::default()
        };
        let s = &mut config.sampler;
        s.num_warmup = settings.warmup;
        s.num_samples = settings.draws;
        s.adapt.method = method;
        s.metric = method.metric_kind(MetricKind::Diag);
        s.init = Init::Radius(2.0);
        if variant.pathfinder_init {
            // Through the counting wrapper: Pathfinder's gradients are warmup's.
            let ids = config.info().chain_ids();
            match hazel_run::methods::pathfinder::pathfinder_inits(
                &counting,
                seed,
                &ids,
                settings.threads,
            ) {
                Ok(points) => config.sampler.init = Init::Unconstrained(points),
                Err(e) => {
                    result.error = Some(format!("pathfinder inits: {e}"));
                    return result;
                }
            }
        }
        let s = &mut config.sampler;
        if let Some(delta) = target.adapt_delta {
            s.adapt.delta = delta;
        }
        if let Some(depth) = target.max_depth {
            s.max_depth = depth;
        }
        let kept: Vec<Arc<Mutex<Kept>>> = (0..settings.chains).map(|_| Arc::default()).collect();
        let sinks: Vec<Box<dyn DrawSink>> = kept
            .iter()
            .map(|k| Box::new(MemorySink(Arc::clone(k))) as Box<dyn DrawSink>)
            .collect();
        let report = match hazel_nuts::run(&counting, &config, sinks, &NoProgress) {
            Ok(report) => report,
            Err(e) => {
                result.error = Some(e.to_string());
                return result;
            }
        };
        if let Some((id, e)) = report.failures().next() {
            result.error = Some(format!("chain {id}: {e}"));
            return result;
        }
        let kept: Vec<Kept> = kept
            .into_iter()
            .map(|k| std::mem::take(&mut *k.lock().unwrap()))
            .collect();
        let cols = columns(&names, &kept, &wanted);
        let gradients = counting.points() as f64;
        // Every evaluation outside a sampling transition (initialisation, step-size searches,
        // warmup transitions) belongs to warmup.
        let warmup_only = gradients - kept.iter().map(|k| k.sampling_gradients).sum::<u64>() as f64;
        let mut min_ess = f64::INFINITY;
        let mut max_rhat: f64 = 0.0;
        for (_, d) in &cols {
            let ess = ess_bulk(d);
            if ess.is_finite() {
                min_ess = min_ess.min(ess);
            }
            let r = rhat_rank(d);
            if r.is_finite() {
                max_rhat = max_rhat.max(r);
            }
        }
        if seed == 1 {
            result.max_correlation = max_abs_correlation(&cols);
        }
        let n = settings.seeds as f64;
        result.ess_per_gradient += min_ess / gradients / n;
        result.gradients += gradients / n;
        result.warmup_gradients += warmup_only / n;
        result.min_ess = result.min_ess.min(min_ess);
        result.max_rhat = result.max_rhat.max(max_rhat);
        let verdict = match &target.reference {
            Some(reference) => {
                let lookup =
                    |name: &str| cols.iter().find(|(n, _)| n == name).map(|(_, d)| d.clone());
                match compare(reference, lookup, CompareOptions::default()).verdict {
                    Verdict::Pass => 'P',
                    Verdict::Fail => 'F',
                    Verdict::Inconclusive => 'I',
                }
            }
            None => '-',
        };
        result.verdicts.push(verdict);
    }
    result
}

/// Pathfinder's gradients and the largest standardised mean error of its draws.
fn pathfinder(model: &hazel_graph::CompiledModel, target: &Target, chains: usize) -> String {
    let Some(reference) = &target.reference else {
        return "-".into();
    };
    let mut ws = model.new_workspace();
    let inits: Result<Vec<Vec<f64>>, String> = (1..=chains as u64)
        .map(|id| {
            hazel_nuts::init::initialize(model, &mut ws, &Init::Radius(2.0), 100, 1, id, 0)
                .map(|p| p.position)
                .map_err(|e| e.to_string())
        })
        .collect();
    let inits = match inits {
        Ok(inits) => inits,
        Err(e) => return format!("init: {e}"),
    };
    let counting = Counting::new(model);
    let options = MultiPathOptions {
        num_paths: chains,
        ..MultiPathOptions::default()
    };
    let result = match multi_path(&counting, &inits, &options, 1, 1, 1) {
        Ok(r) => r,
        Err(e) => return format!("failed: {e}"),
    };
    let gradients = counting.points();
    let names = model.output_names();
    let mut rng = StreamRng::new(1, 1, hazel_rng::Purpose::GeneratedQuantities);
    let mut out = vec![0.0; names.len()];
    let mut rows = Vec::new();
    for i in 0..result.draws.len() {
        if model
            .write_output(&mut ws, result.draws.row(i), &mut rng, &mut out)
            .is_ok()
        {
            rows.push(out.clone());
        }
    }
    let mut worst: f64 = 0.0;
    for r in reference {
        let column = hazel_diagnostics::reference::csv_column_name(&r.name);
        let Some(i) = names.iter().position(|n| *n == column) else {
            continue;
        };
        let m = rows.iter().map(|row| row[i]).sum::<f64>() / rows.len().max(1) as f64;
        if r.sd > 0.0 {
            worst = worst.max((m - r.mean).abs() / r.sd);
        }
    }
    format!("{gradients} grads, z {worst:.2}")
}

fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

fn main() {
    let mut tiers = vec![1, 2, 3];
    let mut examples = true;
    let mut settings = Settings {
        chains: 4,
        warmup: 1000,
        draws: 1000,
        seeds: 1,
        threads: 2,
    };
    let plain = |method| Variant {
        method,
        pathfinder_init: false,
    };
    let mut methods = vec![
        plain(AdaptMethod::Stan),
        plain(AdaptMethod::DiagGrad),
        plain(AdaptMethod::LowRank),
    ];
    let mut with_pathfinder = true;
    let mut exclude: Vec<String> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let mut args = std::env::args().skip(1);
    let number = |v: Option<String>, what: &str| -> usize {
        v.and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("{what} needs a number"))
    };
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
            "--no-examples" => examples = false,
            "--seeds" => settings.seeds = number(args.next(), "--seeds") as u64,
            "--chains" => settings.chains = number(args.next(), "--chains"),
            "--warmup" => settings.warmup = number(args.next(), "--warmup"),
            "--draws" => settings.draws = number(args.next(), "--draws"),
            "--threads" => settings.threads = number(args.next(), "--threads"),
            "--exclude" => exclude.extend(
                args.next()
                    .unwrap_or_default()
                    .split(',')
                    .map(str::to_string),
            ),
            "--methods" => {
                methods = args
                    .next()
                    .unwrap_or_default()
                    .split(',')
                    .map(|m| {
                        let (name, pathfinder_init) = match m.strip_suffix("+pf") {
                            Some(name) => (name, true),
                            None => (m, false),
                        };
                        let method = match name {
                            "stan" => AdaptMethod::Stan,
                            "diag-grad" => AdaptMethod::DiagGrad,
                            "low-rank" => AdaptMethod::LowRank,
                            other => panic!("unknown method {other}"),
                        };
                        Variant {
                            method,
                            pathfinder_init,
                        }
                    })
                    .collect();
                // The baseline of every ratio: Stan's adaptation from uniform(-2, 2).
                if methods.first() != Some(&plain(AdaptMethod::Stan)) {
                    methods.insert(0, plain(AdaptMethod::Stan));
                }
            }
            "--no-pathfinder" => with_pathfinder = false,
            "--help" | "-h" => {
                eprintln!("usage: adaptation_ess [--tiers 1,2,3] [--no-examples] [--seeds N] [--chains 4] [--warmup 1000] [--draws 1000] [--threads T] [--methods stan,diag-grad,low-rank] [--exclude NAME,...] [--no-pathfinder] [NAME ...]  (a method may end in +pf: Pathfinder inits)");
                return;
            }
            name => names.push(name.to_string()),
        }
    }
    let repo = repo_root();
    let mut list = match targets(&repo, &tiers, examples) {
        Ok(list) => list,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    list.retain(|t| {
        (names.is_empty() || names.iter().any(|n| t.name.contains(n.as_str())))
            && !exclude
                .iter()
                .any(|e| !e.is_empty() && t.name.contains(e.as_str()))
    });
    println!(
        "adaptation_ess: {} chains × ({} warmup + {} draws), {} seed(s) per method; ESS/grad = min ESS_bulk / gradients (all of a run's)",
        settings.chains, settings.warmup, settings.draws, settings.seeds
    );
    let mut header = String::from("| posterior | d | max|ρ| | stan ESS/grad (warmup grads %) |");
    for m in &methods[1..] {
        header.push_str(&format!(" {} ×stan (warmup grads %) |", m.name()));
    }
    header.push_str(" verdicts (stan");
    for m in &methods[1..] {
        header.push_str(&format!("/{}", m.name()));
    }
    header.push_str(") | max R̂ (stan");
    for m in &methods[1..] {
        header.push_str(&format!("/{}", m.name()));
    }
    header.push_str(") | Pathfinder (vs stan warmup grads) |");
    println!("{header}");
    println!("|{}", "---|".repeat(6 + methods.len() - 1));
    // ratios[method index][posterior] and whether each posterior is correlated / referenced.
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); methods.len()];
    let mut correlated = Vec::new();
    let mut referenced = Vec::new();
    for target in &list {
        let started = std::time::Instant::now();
        let model = match compile_target(target) {
            Ok(m) => m,
            Err(e) => {
                println!("| `{}` | error: {} |", target.name, e.replace('|', "/"));
                continue;
            }
        };
        let results: Vec<MethodResult> = methods
            .iter()
            .map(|&m| run_method(&model, target, m, &settings))
            .collect();
        let stan = &results[0];
        let mut line = format!(
            "| `{}` | {} | {:.2} | ",
            target.name,
            model.dim(),
            stan.max_correlation
        );
        match &stan.error {
            Some(e) => line.push_str(&format!("error: {} |", e.replace('|', "/"))),
            None => line.push_str(&format!(
                "{:.4} ({:.0}%) |",
                stan.ess_per_gradient,
                100.0 * stan.warmup_gradients / stan.gradients
            )),
        }
        for (k, r) in results.iter().enumerate().skip(1) {
            let ratio = r.ess_per_gradient / stan.ess_per_gradient;
            match &r.error {
                Some(e) => line.push_str(&format!(" error: {} |", e.replace('|', "/"))),
                None => line.push_str(&format!(
                    " {ratio:.2} ({:.0}%) |",
                    100.0 * r.warmup_gradients / r.gradients
                )),
            }
            ratios[k].push(if r.error.is_some() { 0.0 } else { ratio });
        }
        ratios[0].push(1.0);
        correlated.push(stan.max_correlation >= 0.5);
        referenced.push(target.reference.is_some());
        let verdicts: Vec<&str> = results.iter().map(|r| r.verdicts.as_str()).collect();
        let rhats: Vec<String> = results
            .iter()
            .map(|r| format!("{:.3}", r.max_rhat))
            .collect();
        let pf = if with_pathfinder {
            pathfinder(&model, target, settings.chains)
        } else {
            "-".into()
        };
        line.push_str(&format!(
            " {} | {} | {} vs {:.0} |",
            verdicts.join("/"),
            rhats.join("/"),
            pf,
            stan.warmup_gradients
        ));
        println!("{line}");
        eprintln!("{}: {:.0} s", target.name, started.elapsed().as_secs_f64());
    }
    println!();
    for (k, m) in methods.iter().enumerate().skip(1) {
        let all = ratios[k].clone();
        let corr: Vec<f64> = all
            .iter()
            .zip(&correlated)
            .filter(|(_, c)| **c)
            .map(|(r, _)| *r)
            .collect();
        let refs: Vec<f64> = all
            .iter()
            .zip(&referenced)
            .filter(|(_, r)| **r)
            .map(|(x, _)| *x)
            .collect();
        println!(
            "{}: median ESS/gradient ratio vs stan {:.2} over {} posteriors; correlated ({}) median {:.2}; lowest on a reference posterior {:.2}",
            m.name(),
            median(all.clone()),
            all.len(),
            corr.len(),
            median(corr),
            refs.iter().copied().fold(f64::INFINITY, f64::min)
        );
    }
}
