//! Gradient cost of hazel against JAX (a jitted loop) and stanli on the same Stan program, the
//! same generated data and the same unconstrained point, measured in one run (issue 14, item 5),
//! and for the GLM cases the bytes of the design matrix read per gradient against the memory
//! bandwidth of the machine measured in the same run (a STREAM-style triad).
//!
//! Usage: `cargo run --release -p hazel-bench --bin gradient_vs_jax -- [--python PATH]
//! [--rounds R] [--simd auto|sse2|avx2|avx512] [filter]` (`filter`: only the cases whose name contains it). The peers run in
//! `bench/gradient_vs_jax.py` under the Python named by `--python`, else `HAZEL_BENCH_PYTHON`,
//! else `python3`; it needs `jax` (CPU) and/or `stanli`, and a peer that is missing is reported
//! as unavailable while the others are still timed.
//!
//! Cases: logistic regression (`examples/logistic_regression`) with N = 10 000, 100 000 and
//! 500 000 rows and K = 20; the Bayesian neural net of `examples/bnn` (5 → 16 tanh → 1,
//! N = 500); the non-centred varying-intercept-and-slope regression of posteriordb's radon
//! (85 groups, 900 observations, 175 parameters); eight schools, non-centred
//! (`examples/eight_schools`, the classic data). The data of the first five are generated here
//! from fixed seeds and written once to a temporary directory as `data.json`, which all three
//! engines read; the point is uniform on (−0.5, 0.5)ᵈ from a fixed seed.
//!
//! Timing: hazel in-process (the compiled model's `log_density_gradient` in a loop, median of 5
//! batches of ~0.1 s, one thread); stanli's `Model.log_prob_grad` from Python (its call
//! overhead included, one thread); JAX's `jit(value_and_grad(f))` of the same log density
//! written in `jax.numpy` on the unconstrained space (same Jacobian terms, same dropped
//! constants), run `n` times inside one jitted `lax.fori_loop`, time divided by `n`, with XLA
//! limited to one thread (see the Python script). The three must agree at the point: the
//! harness prints the relative difference of the log density and the norm-wise relative
//! difference of the gradient (max |Δgᵢ| / max |gᵢ|) of each peer against hazel, and names any
//! case where one exceeds 1e-8 (the translations keep the same constant terms, so none
//! should).
//!
//! Every model is built once; then `R` rounds (default 3) each time the three engines on one
//! case back to back (the peers' script stays up and answers one request per line), so that
//! the engines compared share the machine's load of that moment. The table gives the median
//! time over the rounds and the median of the rounds' ratios.
//!
//! `--evals N` runs hazel alone (no peers, no triad): each case's log density + gradient `N`
//! times, printing the thread CPU time per evaluation and the graph's op counts. It is for
//! profiling (`valgrind --tool=callgrind --toggle-collect='*evaluate_repeatedly*' … --evals 20
//! logistic`) and for comparing builds on
//! a loaded machine; it claims nothing against the peers.

use hazel_bench::{thread_cpu_ns, time_call, triad_bandwidth};
use hazel_density::LogDensity;
use hazel_graph::{compile, CompileOptions, CompiledModel};
use hazel_rng::{Purpose, StreamRng};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The classic eight schools data.
const SCHOOLS_Y: [f64; 8] = [28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0];
const SCHOOLS_SIGMA: [f64; 8] = [15.0, 10.0, 16.0, 10.0, 9.0, 11.0, 10.0, 18.0];

/// One benchmark case: a Stan program of the repository, its data as CmdStan JSON, the name
/// of the JAX translation in `gradient_vs_jax.py`, and for GLMs the design matrix's shape.
struct Case {
    name: String,
    /// Fixed per case (not its position in a filtered list): seeds its data and its point.
    id: u64,
    program: &'static str,
    jax: &'static str,
    data: String,
    glm: Option<(usize, usize)>,
}

fn push_row(out: &mut String, row: &[f64], decimals: usize) {
    out.push('[');
    for (j, v) in row.iter().enumerate() {
        if j > 0 {
            out.push(',');
        }
        let _ = write!(out, "{v:.decimals$}");
    }
    out.push(']');
}

fn push_matrix(out: &mut String, rows: &[Vec<f64>], decimals: usize) {
    out.push('[');
    for (i, r) in rows.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_row(out, r, decimals);
    }
    out.push(']');
}

fn push_ints(out: &mut String, v: &[i64]) {
    let text: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    let _ = write!(out, "[{}]", text.join(","));
}

fn inv_logit(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// Logistic regression data as `examples/logistic_regression/generate_data.py` makes it (not
/// the same draws: this generator is hazel's ChaCha8 stream): X standard normal rounded to 4
/// decimals, alpha = −0.5, beta ~ normal(0, 0.5).
fn logistic_data(n: usize, k: usize, rng: &mut StreamRng) -> String {
    let beta: Vec<f64> = (0..k).map(|_| 0.5 * rng.normal()).collect();
    let mut x_rows = Vec::with_capacity(n);
    let mut y = Vec::with_capacity(n);
    for _ in 0..n {
        let row: Vec<f64> = (0..k).map(|_| (rng.normal() * 1e4).round() / 1e4).collect();
        let eta = -0.5 + row.iter().zip(&beta).map(|(a, b)| a * b).sum::<f64>();
        y.push(rng.bernoulli(inv_logit(eta)) as i64);
        x_rows.push(row);
    }
    let mut s = format!("{{\"N\":{n},\"K\":{k},\"X\":");
    push_matrix(&mut s, &x_rows, 4);
    s.push_str(",\"y\":");
    push_ints(&mut s, &y);
    s.push('}');
    s
}

/// Data for `examples/bnn`: inputs standard normal (6 decimals), labels from a teacher network
/// of the model's architecture with normal(0, 1) weights. One held-out row (the generated
/// quantities are not evaluated by a gradient).
fn bnn_data(n: usize, d: usize, h: usize, rng: &mut StreamRng) -> String {
    let w1: Vec<f64> = (0..d * h).map(|_| rng.normal()).collect(); // row-major d × h
    let b1: Vec<f64> = (0..h).map(|_| rng.normal()).collect();
    let w2: Vec<f64> = (0..h).map(|_| rng.normal()).collect();
    let b2 = rng.normal();
    let mut draw = |m: usize| {
        let mut xs = Vec::with_capacity(m);
        let mut ys = Vec::with_capacity(m);
        for _ in 0..m {
            let x: Vec<f64> = (0..d).map(|_| (rng.normal() * 1e6).round() / 1e6).collect();
            let mut eta = b2;
            for j in 0..h {
                let a: f64 = b1[j] + (0..d).map(|i| x[i] * w1[i * h + j]).sum::<f64>();
                eta += a.tanh() * w2[j];
            }
            ys.push(rng.bernoulli(inv_logit(eta)) as i64);
            xs.push(x);
        }
        (xs, ys)
    };
    let (x, y) = draw(n);
    let (xt, yt) = draw(1);
    let mut s = format!("{{\"N\":{n},\"D\":{d},\"H\":{h},\"X\":");
    push_matrix(&mut s, &x, 6);
    s.push_str(",\"y\":");
    push_ints(&mut s, &y);
    s.push_str(",\"N_test\":1,\"X_test\":");
    push_matrix(&mut s, &xt, 6);
    s.push_str(",\"y_test\":");
    push_ints(&mut s, &yt);
    s.push('}');
    s
}

/// Radon-like data for the varying intercept and slope regression: `j` groups (each observed at
/// least once), `n` observations, a 0/1 floor indicator (P = 0.2), log_radon = a_g + b_g·floor
/// + normal(0, 0.7) noise with a_g ~ normal(1.5, 0.3), b_g ~ normal(−0.6, 0.2), 4 decimals.
fn radon_data(j: usize, n: usize, rng: &mut StreamRng) -> String {
    let a: Vec<f64> = (0..j).map(|_| 1.5 + 0.3 * rng.normal()).collect();
    let b: Vec<f64> = (0..j).map(|_| -0.6 + 0.2 * rng.normal()).collect();
    let mut idx = Vec::with_capacity(n);
    let mut floor = Vec::with_capacity(n);
    let mut lr = Vec::with_capacity(n);
    for i in 0..n {
        let g = if i < j {
            i
        } else {
            ((rng.uniform() * j as f64) as usize).min(j - 1)
        };
        let f = if rng.bernoulli(0.2) { 1.0 } else { 0.0 };
        let v = a[g] + b[g] * f + 0.7 * rng.normal();
        idx.push(g as i64 + 1);
        floor.push(f);
        lr.push((v * 1e4).round() / 1e4);
    }
    let mut s = format!("{{\"J\":{j},\"N\":{n},\"county_idx\":");
    push_ints(&mut s, &idx);
    s.push_str(",\"floor_measure\":");
    push_row(&mut s, &floor, 1);
    s.push_str(",\"log_radon\":");
    push_row(&mut s, &lr, 4);
    s.push('}');
    s
}

fn eight_schools_data() -> String {
    let mut s = String::from("{\"J\":8,\"y\":");
    push_row(&mut s, &SCHOOLS_Y, 1);
    s.push_str(",\"sigma\":");
    push_row(&mut s, &SCHOOLS_SIGMA, 1);
    s.push('}');
    s
}

fn cases(filter: Option<&str>) -> Vec<Case> {
    let seed = 20_251_125;
    let rng = |i: u64| StreamRng::new(seed, i, Purpose::TransformedData);
    let wanted = |name: &str| filter.is_none_or(|f| name.contains(f));
    let mut out = Vec::new();
    for (i, n) in [10_000usize, 100_000, 500_000].into_iter().enumerate() {
        let name = format!("logistic N={}k K=20", n / 1000);
        if wanted(&name) {
            out.push(Case {
                data: logistic_data(n, 20, &mut rng(i as u64)),
                id: i as u64,
                name,
                program: "examples/logistic_regression/model.stan",
                jax: "logistic",
                glm: Some((n, 20)),
            });
        }
    }
    let more: [(&str, &'static str, &'static str); 3] = [
        ("bnn 5-16-1 N=500", "examples/bnn/model.stan", "bnn"),
        (
            "hierarchical J=85 N=900",
            "corpus/posteriordb/radon_mn-radon_variable_intercept_slope_noncentered/model.stan",
            "radon",
        ),
        (
            "eight schools noncentred",
            "examples/eight_schools/model.stan",
            "eight_schools",
        ),
    ];
    for (i, (name, program, jax)) in more.into_iter().enumerate() {
        if !wanted(name) {
            continue;
        }
        let data = match jax {
            "bnn" => bnn_data(500, 5, 16, &mut rng(10 + i as u64)),
            "radon" => radon_data(85, 900, &mut rng(10 + i as u64)),
            _ => eight_schools_data(),
        };
        out.push(Case {
            name: name.into(),
            id: 10 + i as u64,
            program,
            jax,
            data,
            glm: None,
        });
    }
    out
}

/// A case compiled by hazel, with its log density and gradient at the point.
struct Hazel {
    model: CompiledModel,
    q: Vec<f64>,
    lp: f64,
    grad: Vec<f64>,
}

fn prepare_hazel(
    program: &Path,
    data_path: &Path,
    case_id: u64,
    simd: hazel_graph::SimdLevel,
) -> Result<Hazel, String> {
    let src = std::fs::read_to_string(program).map_err(|e| e.to_string())?;
    let parsed = hazel_check::check_source("model.stan", &src);
    let prog = parsed.checked.ok_or("parse/check error")?;
    let text = std::fs::read_to_string(data_path).map_err(|e| e.to_string())?;
    let data = hazel_data::DataFile::parse(&text).map_err(|e| e.to_string())?;
    drop(text);
    let options = CompileOptions {
        simd,
        ..CompileOptions::default()
    };
    let model = compile(&prog, &data, &options).map_err(|e| e.to_string())?;
    drop(data);
    let q = point(model.dim(), case_id);
    let mut ws = model.new_workspace();
    let mut grad = vec![0.0; q.len()];
    let lp = model
        .log_density_gradient(&mut ws, &q, &mut grad)
        .map_err(|e| e.to_string())?;
    Ok(Hazel { model, q, lp, grad })
}

/// Seconds per log density + gradient (median of 5 batches of ~0.1 s).
fn time_hazel(h: &Hazel) -> f64 {
    let mut ws = h.model.new_workspace();
    let mut scratch = vec![0.0; h.q.len()];
    time_call(|| {
        let _ = std::hint::black_box(h.model.log_density_gradient(
            &mut ws,
            std::hint::black_box(&h.q),
            &mut scratch,
        ));
    })
}

/// The peers' process (`gradient_vs_jax.py`): one JSON request per line on its stdin, one JSON
/// answer per line on its stdout.
struct Peers {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Peers {
    /// Starts the script; returns it with its first line (the configuration), or why not.
    fn start(python: &str, script: &Path) -> Result<(Peers, Value), String> {
        let mut child = Command::new(python)
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("{python} not runnable: {e}"))?;
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut peers = Peers {
            child,
            stdin,
            stdout,
        };
        let hello = peers.read()?;
        if let Some(why) = hello.get("unavailable") {
            return Err(format!("peers unavailable: {why}"));
        }
        Ok((peers, hello))
    }

    fn read(&mut self) -> Result<Value, String> {
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        if line.is_empty() {
            return Err("the peers' script ended early (see its stderr)".into());
        }
        serde_json::from_str(&line).map_err(|e| format!("bad answer from the peers: {e}"))
    }

    fn ask(&mut self, request: &Value) -> Result<Value, String> {
        let stdin = self.stdin.as_mut().ok_or("closed")?;
        writeln!(stdin, "{request}").map_err(|e| e.to_string())?;
        stdin.flush().map_err(|e| e.to_string())?;
        self.read()
    }
}

impl Drop for Peers {
    fn drop(&mut self) {
        drop(self.stdin.take()); // end of input: the script exits
        let _ = self.child.wait();
    }
}

fn median(v: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let m = v.len() / 2;
    Some(if v.len().is_multiple_of(2) {
        0.5 * (v[m - 1] + v[m])
    } else {
        v[m]
    })
}

/// The unconstrained point of case `case_id`: uniform on (−0.5, 0.5)ᵈ from a fixed seed.
fn point(dim: usize, case_id: u64) -> Vec<f64> {
    let mut rng = StreamRng::new(7, case_id, Purpose::Init);
    (0..dim).map(|_| rng.uniform_range(-0.5, 0.5)).collect()
}

/// (relative difference of the log density, norm-wise relative difference of the gradient).
fn agreement(lp: f64, grad: &[f64], peer: &Value) -> Option<(f64, f64)> {
    let plp = peer["lp"].as_f64()?;
    let pg: Vec<f64> = peer["grad"]
        .as_array()?
        .iter()
        .filter_map(|v| v.as_f64())
        .collect();
    if pg.len() != grad.len() {
        return None;
    }
    let d_lp = (lp - plp).abs() / lp.abs().max(plp.abs()).max(f64::MIN_POSITIVE);
    let scale = pg.iter().fold(0.0f64, |m, g| m.max(g.abs()));
    let d_g = grad
        .iter()
        .zip(&pg)
        .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()))
        / scale.max(f64::MIN_POSITIVE);
    Some((d_lp, d_g))
}

const ENGINES: [&str; 3] = ["hazel", "jax", "stanli"];

/// `n` log density + gradient evaluations at the case's point: a function of its own, so that
/// a profiler can count it alone (`valgrind --tool=callgrind
/// --toggle-collect='*evaluate_repeatedly*'`).
#[inline(never)]
fn evaluate_repeatedly(h: &Hazel, n: usize) {
    let mut ws = h.model.new_workspace();
    let mut grad = vec![0.0; h.q.len()];
    for _ in 0..n {
        let _ = std::hint::black_box(h.model.log_density_gradient(
            &mut ws,
            std::hint::black_box(&h.q),
            &mut grad,
        ));
    }
}

/// `--evals n`: hazel alone, `n` log density + gradient evaluations per case, thread CPU time
/// per evaluation and the graph's op counts by kind.
fn profile(root: &Path, dir: &Path, filter: Option<&str>, simd: hazel_graph::SimdLevel, n: usize) {
    for case in cases(filter) {
        let data_path = dir.join(format!("case{}", case.id)).join("data.json");
        std::fs::create_dir_all(data_path.parent().expect("parent")).expect("case directory");
        std::fs::write(&data_path, &case.data).expect("write data.json");
        let h = match prepare_hazel(&root.join(case.program), &data_path, case.id, simd) {
            Ok(h) => h,
            Err(e) => {
                println!("{}: hazel failed: {e}", case.name);
                continue;
            }
        };
        let t0 = thread_cpu_ns();
        evaluate_repeatedly(&h, n);
        let per = match (t0, thread_cpu_ns()) {
            (Some(a), Some(b)) => format!("{:.2} µs", (b - a) as f64 / n as f64 / 1e3),
            _ => "-".into(),
        };
        let mut kinds: Vec<(String, usize)> = Vec::new();
        if let Some(g) = h.model.graph() {
            for op in &g.ops {
                let d = format!("{op:?}");
                let kind = d[..d.find([' ', '{', '(']).unwrap_or(d.len())].to_string();
                match kinds.iter_mut().find(|(k, _)| *k == kind) {
                    Some((_, c)) => *c += 1,
                    None => kinds.push((kind, 1)),
                }
            }
        }
        let ops: Vec<String> = kinds.iter().map(|(k, c)| format!("{k} {c}")).collect();
        println!(
            "{}: lp {:.6}, {per} thread CPU per evaluation ({n} evaluations); ops: {}",
            case.name,
            h.lp,
            ops.join(", ")
        );
    }
}

fn main() {
    let mut python = std::env::var("HAZEL_BENCH_PYTHON").unwrap_or_else(|_| "python3".into());
    let mut filter = None;
    let mut rounds = 3usize;
    let mut simd = hazel_graph::SimdLevel::Auto;
    let mut evals = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--python" => python = args.next().expect("--python needs a path"),
            "--rounds" => {
                rounds = args
                    .next()
                    .and_then(|r| r.parse().ok())
                    .expect("--rounds needs a number")
            }
            "--simd" => {
                simd = args
                    .next()
                    .and_then(|l| hazel_graph::SimdLevel::parse(&l))
                    .expect("--simd needs auto, sse2, avx2 or avx512")
            }
            "--evals" => {
                evals = Some(
                    args.next()
                        .and_then(|r| r.parse::<usize>().ok())
                        .expect("--evals needs a number"),
                )
            }
            "--help" | "-h" => {
                println!(
                    "gradient_vs_jax [--python PATH] [--rounds R] [--simd LEVEL] [--evals N] \
                     [filter]"
                );
                return;
            }
            _ => filter = Some(a),
        }
    }
    let root = repo_root();
    let dir = std::env::temp_dir().join(format!("hazel-gradient-vs-jax-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    if let Some(n) = evals {
        profile(&root, &dir, filter.as_deref(), simd, n);
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }

    // Memory bandwidth first: 3 × 2^24 doubles = 384 MiB, far larger than the caches.
    let triad = triad_bandwidth(1 << 24, 10);
    println!("STREAM-style triad (one thread, 3 × 128 MiB, best of 10): {triad:.1} GB/s");

    // Data, hazel's models and the peers' models, each built once.
    let cases = cases(filter.as_deref());
    let script = root.join("bench/gradient_vs_jax.py");
    let mut peers = Peers::start(&python, &script);
    if let Ok((_, hello)) = &peers {
        println!("peers: {}", hello["config"]);
    }
    let mut hazel = Vec::new();
    let mut setups: Vec<Result<Value, String>> = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let data_path = dir.join(format!("case{i}")).join("data.json");
        std::fs::create_dir_all(data_path.parent().expect("parent")).expect("case directory");
        std::fs::write(&data_path, &case.data).expect("write data.json");
        let program = root.join(case.program);
        eprintln!("preparing {}", case.name);
        let h = prepare_hazel(&program, &data_path, case.id, simd);
        let dim = h.as_ref().map(|h| h.grad.len()).unwrap_or(0);
        let job = json!({
            "name": case.name,
            "program": program,
            "data": data_path,
            "jax": case.jax,
            "q": point(dim, case.id),
        });
        setups.push(match &mut peers {
            Ok((p, _)) => p.ask(&json!({ "setup": job })),
            Err(e) => Err(e.clone()),
        });
        hazel.push(h);
    }
    // The result of a peer at the point for case `i`, or why there is none.
    let peer_setup = |i: usize, engine: &str| -> Result<Value, String> {
        let r = &setups[i].as_ref().map_err(|e| e.clone())?[engine];
        match r.get("error").and_then(|e| e.as_str()) {
            Some(e) => Err(e.to_string()),
            None => Ok(r.clone()),
        }
    };

    // Timing: `rounds` rounds; in each, the three engines on one case back to back, so that
    // they share the machine's load of that moment. seconds[case][engine][round].
    let mut seconds = vec![[vec![], vec![], vec![]]; cases.len()];
    for round in 0..rounds {
        for (i, case) in cases.iter().enumerate() {
            eprintln!("round {}/{rounds}: {}", round + 1, case.name);
            let h = hazel[i].as_ref().map(time_hazel).unwrap_or(f64::NAN);
            seconds[i][0].push(h);
            let answer = match &mut peers {
                Ok((p, _)) => p.ask(&json!({ "time": case.name })).unwrap_or(Value::Null),
                Err(_) => Value::Null,
            };
            for (e, engine) in ENGINES.iter().enumerate().skip(1) {
                let ns = answer[engine]["ns_per_grad"].as_f64().unwrap_or(f64::NAN);
                seconds[i][e].push(ns * 1e-9);
            }
        }
    }
    drop(peers);
    let _ = std::fs::remove_dir_all(&dir);

    let us = |s: f64| {
        if s < 1e-5 {
            format!("{:.3}", s * 1e6)
        } else if s < 1e-3 {
            format!("{:.1}", s * 1e6)
        } else {
            format!("{:.0}", s * 1e6)
        }
    };

    println!("\nAgreement at the point (rel. difference of lp; max |Δgrad| / max |grad|):\n");
    println!("| case | dim | hazel lp | JAX Δlp | JAX Δgrad | stanli Δlp | stanli Δgrad |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let mut notes = Vec::new();
    for (i, (case, h)) in cases.iter().zip(&hazel).enumerate() {
        let h = match h {
            Ok(h) => h,
            Err(e) => {
                println!("| {} | - | hazel failed: {e} | | | | |", case.name);
                continue;
            }
        };
        let mut cells = Vec::new();
        for engine in ["jax", "stanli"] {
            match peer_setup(i, engine).map(|p| agreement(h.lp, &h.grad, &p)) {
                Ok(Some((a, b))) => {
                    if a.max(b) > 1e-8 || a.is_nan() || b.is_nan() {
                        notes.push(format!(
                            "DISAGREEMENT: {} between hazel and {engine}",
                            case.name
                        ));
                    }
                    cells.push(format!("{a:.1e}"));
                    cells.push(format!("{b:.1e}"));
                }
                Ok(None) => cells.extend(["no value".to_string(), String::new()]),
                Err(e) => {
                    cells.extend(["-".to_string(), "-".to_string()]);
                    let note = format!("{engine}: {e}");
                    if !notes.contains(&note) {
                        notes.push(note);
                    }
                }
            }
        }
        println!(
            "| {} | {} | {:.6} | {} |",
            case.name,
            h.grad.len(),
            h.lp,
            cells.join(" | ")
        );
    }
    for n in &notes {
        println!("  ({n})");
    }

    println!(
        "\nLog density + gradient, µs per evaluation (one thread each; median over {rounds} \
         rounds; a ratio is the median of the rounds' ratios):\n"
    );
    println!("| case | hazel µs | JAX µs | stanli µs | hazel / JAX | hazel / stanli |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (case, s) in cases.iter().zip(&seconds) {
        let mut cells: Vec<String> = s
            .iter()
            .map(|v| median(v).map(us).unwrap_or("-".into()))
            .collect();
        for peer in [1, 2] {
            let ratios: Vec<f64> = s[0].iter().zip(&s[peer]).map(|(h, p)| h / p).collect();
            cells.push(
                median(&ratios)
                    .map(|r| format!("{r:.2}"))
                    .unwrap_or("-".into()),
            );
        }
        println!("| {} | {} |", case.name, cells.join(" | "));
    }

    let glm: Vec<_> = cases
        .iter()
        .zip(&seconds)
        .filter_map(|(c, s)| Some((c, c.glm?, s)))
        .collect();
    if !glm.is_empty() {
        println!(
            "\nBytes of X per gradient (one ideal pass, N·K·8) and the bandwidth that implies at \
             the median time, against the triad's {triad:.1} GB/s:\n"
        );
        println!("| case | X MB | hazel GB/s | hazel / triad | JAX GB/s | JAX / triad |");
        println!("|---|---:|---:|---:|---:|---:|");
        for (case, (n, k), s) in glm {
            let bytes = (n * k * 8) as f64;
            let cell = |v: &[f64]| match median(v) {
                Some(t) => {
                    let gbs = bytes / t / 1e9;
                    format!("{gbs:.1} | {:.0}%", 100.0 * gbs / triad)
                }
                None => "- | -".into(),
            };
            println!(
                "| {} | {:.1} | {} | {} |",
                case.name,
                bytes / 1e6,
                cell(&s[0]),
                cell(&s[1])
            );
        }
    }
}
