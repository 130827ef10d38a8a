//! Lockstep chains (issue 9, item 1): what `hazel sample --batch-chains K` buys on a dense GLM,
//! against the chains run alone and against NumPyro's vectorised chains, measured in one run.
//!
//! Usage: `cargo run --release -p hazel-bench --bin lockstep -- [--n 100000] [--k 20]
//! [--chains 4] [--warmup 1000] [--draws 1000] [--seed 1] [--python PATH] [--no-peer] [--gradient-only]`
//!
//! The model is `examples/logistic_regression/model.stan` (`y ~ bernoulli_logit(alpha + X *
//! beta)`, fused into one GLM op) on N × K data generated here from a fixed seed
//! (`hazel_bench::data::logistic_data`, written once to a temporary `data.json` that NumPyro
//! reads too). Three measurements:
//!
//! 1. **Gradient cost per chain.** The compiled model's log density + gradient at one point
//!    (`log_density_gradient`, the serial executor: what a chain alone pays), against one
//!    `log_density_gradient_batch` call over `chains` points on the batched executor (what a
//!    lockstep group pays per round), divided by `chains`. Target of the issue: ≤ 0.4× with 4
//!    chains. Each is the median of 5 batches of ~0.1 s (`time_call`); the batch's results are
//!    checked bit for bit against the single evaluations. Also the GB/s at which each reads `X`
//!    (N·K·8 bytes per pass) against a single-thread STREAM-style triad of the same run.
//! 2. **Whole runs, hazel.** `chains` chains of warmup + draws (Stan's defaults otherwise) by
//!    the runner into memory, on ONE thread: the chains alone (one after another), and in one
//!    lockstep group desynchronised and masked; and, for reference, the chains alone on as many
//!    threads as there are chains. All four must give the same draws bit for bit (checked), so
//!    their ESS is the same and ESS/s compares their times. Also: model evaluations, batched
//!    calls (rounds) and the mean lanes per round.
//! 3. **NumPyro** (`bench/lockstep_numpyro.py`, `chain_method="vectorized"`, XLA on one
//!    thread): the same data, chains, warmup and draws. `MCMC.run` is timed twice; the second
//!    (which may reuse the compiled sampler) is the one compared, the first (with compilation)
//!    is shown too. Its draws come back as JSON and their ESS is computed by the same code as
//!    hazel's (`hazel_diagnostics::ess_bulk`, ArviZ's bulk ESS; the minimum over alpha and
//!    beta). Target of the issue: hazel's lockstep ESS/s ≥ 2× NumPyro's. The Python is
//!    `--python`, else `HAZEL_BENCH_PYTHON`, else `python3` (it needs numpyro); `--no-peer`
//!    skips it.
//!
//! Timings compare within one run on an otherwise idle machine: the output starts with the
//! load average.

use hazel_bench::counting::Counting;
use hazel_bench::data::logistic_data;
use hazel_bench::{
    process_cpu_seconds, thread_cpu_seconds, time_call, time_call_on, triad_bandwidth,
};
use hazel_density::{EvalError, LogDensity, StreamRng};
use hazel_diagnostics::{ess_bulk, ChainDraws};
use hazel_draws::{Columns, Draw};
use hazel_graph::{compile, CompileOptions, CompiledModel, ExecutorKind};
use hazel_nuts::{DrawSink, Lockstep, NoProgress, RunConfig, SamplerConfig, Timing};
use hazel_rng::Purpose;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Instant;

struct Args {
    n: usize,
    k: usize,
    chains: usize,
    warmup: usize,
    draws: usize,
    seed: u64,
    python: String,
    peer: bool,
    /// Only the gradient cost (part 1).
    gradient_only: bool,
}

fn parse_args() -> Args {
    let mut a = Args {
        n: 100_000,
        k: 20,
        chains: 4,
        warmup: 1000,
        draws: 1000,
        seed: 1,
        python: std::env::var("HAZEL_BENCH_PYTHON").unwrap_or_else(|_| "python3".into()),
        peer: true,
        gradient_only: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = |name: &str| it.next().unwrap_or_else(|| panic!("{name} needs a value"));
        let number = |v: String| -> usize { v.parse().expect("a whole number") };
        match flag.as_str() {
            "--n" => a.n = number(value("--n")),
            "--k" => a.k = number(value("--k")),
            "--chains" => a.chains = number(value("--chains")),
            "--warmup" => a.warmup = number(value("--warmup")),
            "--draws" => a.draws = number(value("--draws")),
            "--seed" => a.seed = number(value("--seed")) as u64,
            "--python" => a.python = value("--python"),
            "--no-peer" => a.peer = false,
            "--gradient-only" => a.gradient_only = true,
            other => panic!("unknown option {other}"),
        }
    }
    a
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn compile_model(program: &Path, data_path: &Path, executor: ExecutorKind) -> CompiledModel {
    let src = std::fs::read_to_string(program).expect("the program");
    let checked = hazel_check::check_source("model.stan", &src)
        .checked
        .expect("the program checks");
    let text = std::fs::read_to_string(data_path).expect("the data");
    let data = hazel_data::DataFile::parse(&text).expect("the data parse");
    let options = CompileOptions {
        executor,
        ..CompileOptions::default()
    };
    compile(&checked, &data, &options).expect("the model compiles")
}

/// Keeps the post-warmup draws and their leapfrog steps, and the bits of every iteration.
#[derive(Default)]
struct Kept {
    draws: Vec<Vec<f64>>,
    leapfrog_steps: u64,
    stats_bits: Vec<u64>,
}

/// A chain's kept draws, with the position of its `n_leapfrog__` column (from `begin`).
struct MemorySink(Arc<Mutex<Kept>>, usize);

impl DrawSink for MemorySink {
    fn begin(&mut self, columns: &Columns<'_>) -> std::io::Result<()> {
        self.1 = columns
            .stats
            .iter()
            .position(|c| c.name == "n_leapfrog__")
            .ok_or_else(|| std::io::Error::other("no n_leapfrog__ column"))?;
        Ok(())
    }
    fn draw(&mut self, draw: &Draw<'_>) -> std::io::Result<()> {
        let mut k = self.0.lock().unwrap();
        if !draw.warmup {
            k.leapfrog_steps += draw.stats[self.1] as u64;
        }
        k.stats_bits.extend(draw.stats.iter().map(|v| v.to_bits()));
        k.stats_bits.extend(draw.values.iter().map(|v| v.to_bits()));
        if !draw.warmup {
            k.draws.push(draw.values.to_vec());
        }
        Ok(())
    }
    fn finish(&mut self, _: &Timing) -> std::io::Result<()> {
        Ok(())
    }
}

/// Minimum bulk ESS over the columns of `chains` (chains × draws × columns).
fn min_bulk_ess(chains: &[Vec<Vec<f64>>]) -> f64 {
    let columns = chains[0][0].len();
    (0..columns)
        .map(|j| {
            let per_chain: Vec<Vec<f64>> = chains
                .iter()
                .map(|c| c.iter().map(|d| d[j]).collect())
                .collect();
            ess_bulk(&ChainDraws::new(&per_chain).expect("equal chains"))
        })
        .fold(f64::INFINITY, f64::min)
}

/// One whole hazel run.
struct HazelRun {
    label: String,
    seconds: f64,
    cpu_seconds: f64,
    ess: f64,
    evaluations: usize,
    rounds: usize,
    leapfrog_steps: u64,
    fingerprint: Vec<Vec<u64>>,
}

fn run_hazel(
    label: &str,
    model: &CompiledModel,
    args: &Args,
    batch: usize,
    threads: usize,
    lockstep: Lockstep,
) -> HazelRun {
    let counting = Counting::new(model);
    let config = RunConfig {
        seed: args.seed,
        chains: args.chains,
        threads,
        sampler: SamplerConfig {
            num_warmup: args.warmup,
            num_samples: args.draws,
            save_warmup: true,
            ..SamplerConfig::default()
        },
        batch_chains: batch,
        lockstep,
        ..RunConfig::default()
    };
    let kept: Vec<Arc<Mutex<Kept>>> = (0..args.chains).map(|_| Arc::default()).collect();
    let sinks = kept
        .iter()
        .map(|k| Box::new(MemorySink(k.clone(), 0)) as Box<dyn DrawSink>)
        .collect();
    let (start, cpu_start) = (Instant::now(), process_cpu_seconds());
    let report = hazel_nuts::run(&counting, &config, sinks, &NoProgress).expect("the run starts");
    let seconds = start.elapsed().as_secs_f64();
    let cpu_seconds = process_cpu_seconds() - cpu_start;
    assert!(report.all_ok(), "{label}: {:?}", report.chains);
    let kept: Vec<Kept> = kept
        .into_iter()
        .map(|k| std::mem::take(&mut *k.lock().unwrap()))
        .collect();
    let draws: Vec<Vec<Vec<f64>>> = kept.iter().map(|k| k.draws.clone()).collect();
    HazelRun {
        label: label.to_string(),
        seconds,
        cpu_seconds,
        ess: min_bulk_ess(&draws),
        evaluations: counting.points() as usize,
        rounds: counting.batch_calls() as usize,
        leapfrog_steps: kept.iter().map(|k| k.leapfrog_steps).sum(),
        fingerprint: kept.into_iter().map(|k| k.stats_bits).collect(),
    }
}

/// NumPyro's run (the second `MCMC.run`, the first's wall time for reference).
struct PeerRun {
    seconds: f64,
    cpu_seconds: f64,
    first_seconds: f64,
    ess: f64,
    leapfrog_steps: Option<u64>,
}

fn run_numpyro(args: &Args, data: &Path, dir: &Path) -> Result<PeerRun, String> {
    let script = repo_root().join("bench/lockstep_numpyro.py");
    let out = dir.join("numpyro_draws.json");
    let output = Command::new(&args.python)
        .arg(&script)
        .args(["--data", data.to_str().unwrap()])
        .args(["--chains", &args.chains.to_string()])
        .args(["--warmup", &args.warmup.to_string()])
        .args(["--draws", &args.draws.to_string()])
        .args(["--seed", &args.seed.to_string()])
        .args(["--out", out.to_str().unwrap()])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", args.python))?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    let line = String::from_utf8_lossy(&output.stdout);
    let info: serde_json::Value =
        serde_json::from_str(line.lines().last().unwrap_or("")).map_err(|e| e.to_string())?;
    println!("   numpyro: {}", line.trim());
    let draws: Vec<Vec<Vec<f64>>> =
        serde_json::from_str(&std::fs::read_to_string(&out).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    let time = |key: &str| info[key].as_f64().ok_or(format!("no {key}"));
    Ok(PeerRun {
        seconds: time("second_run_s")?,
        cpu_seconds: time("second_run_cpu_s")?,
        first_seconds: time("first_run_s")?,
        ess: min_bulk_ess(&draws),
        leapfrog_steps: info["leapfrog_steps"].as_u64(),
    })
}

/// One row of the table of whole runs.
#[allow(clippy::too_many_arguments)]
fn print_row(
    label: &str,
    seconds: f64,
    cpu_seconds: f64,
    leapfrogs: String,
    rounds: String,
    lanes: String,
    ess: f64,
    peer: Option<&PeerRun>,
) {
    let (rate, cpu_rate) = (ess / seconds, ess / cpu_seconds);
    let ratio =
        |mine: f64, theirs: Option<f64>| theirs.map_or("-".into(), |t| format!("{:.2}", mine / t));
    println!(
        "   {:<34} {:8.2} {:8.2} {:>9} {:>7} {:>6} {:8.0} {:8.1} {:8.1} {:>8} {:>8}",
        label,
        seconds,
        cpu_seconds,
        leapfrogs,
        rounds,
        lanes,
        ess,
        rate,
        cpu_rate,
        ratio(rate, peer.map(|p| p.ess / p.seconds)),
        ratio(cpu_rate, peer.map(|p| p.ess / p.cpu_seconds)),
    );
}

fn main() {
    let args = parse_args();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "lockstep: logistic regression N = {}, K = {}, {} chains × ({} warmup + {} draws); load average {}",
        args.n,
        args.k,
        args.chains,
        args.warmup,
        args.draws,
        load.trim()
    );
    let dir = std::env::temp_dir().join(format!("hazel-lockstep-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let data = dir.join("data.json");
    let mut rng = StreamRng::new(20_251_125, 9, Purpose::TransformedData);
    std::fs::write(&data, logistic_data(args.n, args.k, &mut rng)).unwrap();
    let program = repo_root().join("examples/logistic_regression/model.stan");
    let serial = compile_model(&program, &data, ExecutorKind::Serial);
    let batched = compile_model(
        &program,
        &data,
        ExecutorKind::Batched { lanes: args.chains },
    );
    let d = serial.dim();

    // 1. Gradient cost per chain.
    let mut point_rng = StreamRng::new(args.seed, 0, Purpose::Init);
    let qs: Vec<f64> = (0..args.chains * d)
        .map(|_| point_rng.uniform_range(-0.5, 0.5))
        .collect();
    let mut ws = serial.new_workspace();
    let mut grad = vec![0.0; d];
    let mut single_bits = Vec::new();
    for c in 0..args.chains {
        let lp = serial
            .log_density_gradient(&mut ws, &qs[c * d..(c + 1) * d], &mut grad)
            .expect("finite");
        single_bits.push(lp.to_bits());
        single_bits.extend(grad.iter().map(|g| g.to_bits()));
    }
    let mut bws: Vec<_> = (0..args.chains).map(|_| batched.new_workspace()).collect();
    let mut grads = vec![0.0; args.chains * d];
    let mut out: Vec<Result<f64, EvalError>> = vec![Ok(0.0); args.chains];
    batched.log_density_gradient_batch(&mut bws, &qs, &mut grads, &mut out);
    let mut batch_bits = Vec::new();
    for c in 0..args.chains {
        batch_bits.push(out[c].clone().expect("finite").to_bits());
        batch_bits.extend(grads[c * d..(c + 1) * d].iter().map(|g| g.to_bits()));
    }
    assert_eq!(
        single_bits, batch_bits,
        "the batch gives the single evaluations' bits"
    );
    let q0 = &qs[..d];
    let t_single = time_call(|| {
        let _ = std::hint::black_box(serial.log_density_gradient(&mut ws, q0, &mut grad));
    });
    let t_batch = time_call(|| {
        batched.log_density_gradient_batch(&mut bws, &qs, &mut grads, &mut out);
        std::hint::black_box(&out);
    });
    let c_single = time_call_on(thread_cpu_seconds, || {
        let _ = std::hint::black_box(serial.log_density_gradient(&mut ws, q0, &mut grad));
    });
    let c_batch = time_call_on(thread_cpu_seconds, || {
        batched.log_density_gradient_batch(&mut bws, &qs, &mut grads, &mut out);
        std::hint::black_box(&out);
    });
    let triad = triad_bandwidth(1 << 25, 5);
    let x_bytes = (args.n * args.k * 8) as f64;
    let per_chain = t_batch / args.chains as f64;
    println!(
        "\n1. log density + gradient, per chain (X is {:.1} MB); wall µs (CPU µs of the thread)",
        x_bytes / 1e6
    );
    println!(
        "   alone (serial executor)              {:9.1} ({:9.1})   X read at {:5.1} GB/s",
        t_single * 1e6,
        c_single * 1e6,
        x_bytes / t_single / 1e9
    );
    println!(
        "   batch of {} (batched executor) / {}    {:9.1} ({:9.1})   X read at {:5.1} GB/s (one pass per batch)",
        args.chains,
        args.chains,
        per_chain * 1e6,
        c_batch / args.chains as f64 * 1e6,
        x_bytes / t_batch / 1e9
    );
    println!(
        "   ratio batched / alone                {:9.3} ({:9.3})   target ≤ 0.4; triad {:.1} GB/s",
        per_chain / t_single,
        c_batch / args.chains as f64 / c_single,
        triad
    );

    if args.gradient_only {
        std::fs::remove_dir_all(&dir).ok();
        return;
    }

    // 2. Whole runs.
    println!("\n2. whole runs (hazel: the runner into memory)");
    let runs = [
        run_hazel(
            "hazel, chains alone, 1 thread",
            &serial,
            &args,
            1,
            1,
            Lockstep::default(),
        ),
        run_hazel(
            "hazel, lockstep desync, 1 thread",
            &batched,
            &args,
            args.chains,
            1,
            Lockstep::Desynchronised,
        ),
        run_hazel(
            "hazel, lockstep masked, 1 thread",
            &batched,
            &args,
            args.chains,
            1,
            Lockstep::Masked,
        ),
        run_hazel(
            &format!("hazel, chains alone, {} threads", args.chains),
            &serial,
            &args,
            1,
            args.chains,
            Lockstep::default(),
        ),
    ];
    for r in &runs[1..] {
        assert!(
            r.fingerprint == runs[0].fingerprint,
            "{}: draws differ from the chains alone",
            r.label
        );
    }
    println!("   (all four runs gave the same draws, bit for bit)");
    let peer = if args.peer {
        match run_numpyro(&args, &data, &dir) {
            Ok(p) => Some(p),
            Err(e) => {
                println!("numpyro: unavailable ({})", e.lines().last().unwrap_or(""));
                None
            }
        }
    } else {
        None
    };
    println!(
        "\n   {:<34} {:>8} {:>8} {:>9} {:>7} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "engine",
        "wall s",
        "CPU s",
        "lf draws",
        "rounds",
        "lanes",
        "min ESS",
        "ESS/s",
        "ESS/CPUs",
        "÷np wall",
        "÷np CPU"
    );
    for r in &runs {
        let batched = r.rounds > 0;
        print_row(
            &r.label,
            r.seconds,
            r.cpu_seconds,
            r.leapfrog_steps.to_string(),
            if batched {
                r.rounds.to_string()
            } else {
                "-".into()
            },
            if batched {
                format!("{:.2}", r.evaluations as f64 / r.rounds as f64)
            } else {
                "-".into()
            },
            r.ess,
            peer.as_ref(),
        );
    }
    if let Some(p) = &peer {
        print_row(
            "numpyro, vectorized, 1 thread",
            p.seconds,
            p.cpu_seconds,
            p.leapfrog_steps.map_or("-".into(), |s| s.to_string()),
            "-".into(),
            "-".into(),
            p.ess,
            Some(p),
        );
        println!(
            "   (numpyro's first run, with compilation: {:.2} s wall)",
            p.first_seconds
        );
    }
    println!(
        "   wall s: the run's wall time; CPU s: the process's CPU time (all threads); lanes: \
         evaluations per batched call (warmup included); lf draws: leapfrog steps of the \
         post-warmup iterations; ÷np: ESS/s over NumPyro's (wall, CPU)"
    );
    std::fs::remove_dir_all(&dir).ok();
}
