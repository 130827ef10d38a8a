//! Gradient cost of hazel against stanli, measured in the same run, for every tier 1–2
//! posterior of the corpus (or those matching the first argument).
//!
//! Usage: `cargo run --release -p hazel-bench --bin gradient_vs_stanli [--all] [filter]`
//! (`--all`: every tier, not only 1–2), or
//! `... gradient_vs_stanli --engine` for the engine's own figures (per-op overhead of scalar
//! ops, throughput of vector kernels), measured on hand-built graphs.
//!
//! hazel is timed in-process (median of 5 batches of ~0.1 s each); stanli through
//! `bench/gradient_vs_stanli.py` (same protocol, Python call overhead included). Both evaluate
//! the log density and gradient at the first point of the posterior's oracle fixture. The Python
//! is `HAZEL_BENCH_PYTHON` if set, else `python3`. Without Python or stanli, the stanli column
//! says so and only hazel is timed.

use hazel_bench::time_call;
use hazel_density::LogDensity;
use hazel_graph::{compile, CompileOptions};
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

struct Row {
    name: String,
    tier: u64,
    dim: usize,
    hazel_ns: Option<f64>,
    note: String,
}

/// Per-op cost of a chain of scalar ops and throughput of large vector ops (forward + backward).
fn engine_figures() {
    use hazel_graph::dists::DistKind;
    use hazel_graph::kernels::BinaryFn;
    use hazel_graph::{Buffers, GraphBuilder};
    // 1. 100 000 dependent scalar ops (alternating multiply and add): the cost of a loop body.
    let q = [0.5, 1.0000001];
    let mut b = GraphBuilder::new(&q);
    let p = b.params();
    let (x, a) = (p.at(0), p.at(1));
    let mut acc = x;
    let n_ops = 100_000;
    for i in 0..n_ops {
        acc = if i % 2 == 0 {
            b.binary(BinaryFn::Mul, acc, a)
        } else {
            b.binary(BinaryFn::Add, acc, x)
        };
    }
    let g = b.finish();
    // As built (one op per dispatch), and as a compiled model runs it (the scalar ops fused
    // into blocks of compact instructions, `Graph::fuse_scalar_blocks`).
    let mut fused = g.clone();
    fused.fuse_scalar_blocks();
    for (what, g) in [("one op per dispatch", &g), ("fused into blocks", &fused)] {
        let mut buf = Buffers::for_graph(g);
        let s = time_call(|| {
            g.forward(&q, &mut buf).expect("finite");
            g.backward(acc, &mut buf);
        });
        println!(
            "scalar op chain, {what}: {:.1} ns per op (forward + backward), {n_ops} ops",
            s * 1e9 / n_ops as f64
        );
    }
    // 2. Vector kernels on 1M elements.
    let n = 1 << 20;
    let qv: Vec<f64> = (0..n).map(|i| (i % 1000) as f64 / 1000.0).collect();
    let mut b = GraphBuilder::new(&qv);
    let p = b.params();
    let c = b.konst(&vec![0.25; n]);
    let y = b.binary(BinaryFn::Add, p, c);
    let total = b.sum(y);
    let g = b.finish();
    let mut buf = Buffers::for_graph(&g);
    let s = time_call(|| {
        g.forward(&qv, &mut buf).expect("finite");
        g.backward(total, &mut buf);
    });
    // forward: read 2 runs, write 1, read it for the sum; backward: read/write adjoints.
    let bytes = (8 * n * 8) as f64;
    println!(
        "vector add + sum, 2^20 elements: {:.2} ns/element, ~{:.1} GB/s effective",
        s * 1e9 / n as f64,
        bytes / s / 1e9
    );
    let mut b = GraphBuilder::new(&qv);
    let p = b.params();
    let data = b.konst(&vec![0.3; n]);
    let sigma = b.scalar_const(1.5);
    let lp = b.dist(DistKind::Normal, vec![data, p, sigma], true);
    let g = b.finish();
    let mut buf = Buffers::for_graph(&g);
    let s = time_call(|| {
        g.forward(&qv, &mut buf).expect("finite");
        g.backward(lp, &mut buf);
    });
    println!(
        "normal_lpdf(data | mu[n], sigma), 2^20 elements: {:.2} ns/element (forward + backward)",
        s * 1e9 / n as f64
    );
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("--engine") {
        engine_figures();
        return;
    }
    // `--all` includes tiers 3 and 4; any other argument filters posteriors by name.
    let all_tiers = std::env::args().nth(1).as_deref() == Some("--all");
    let filter = std::env::args().nth(if all_tiers { 2 } else { 1 });
    let root = repo_root();
    let corpus = root.join("corpus/posteriordb");
    let mut dirs: Vec<PathBuf> = match std::fs::read_dir(&corpus) {
        Ok(e) => e
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.join("oracle.json").is_file())
            .collect(),
        Err(e) => {
            eprintln!("no corpus at {}: {e}", corpus.display());
            return;
        }
    };
    dirs.sort();
    let mut rows = Vec::new();
    let mut jobs = Vec::new();
    for dir in dirs {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        if let Some(f) = &filter {
            if !name.contains(f.as_str()) {
                continue;
            }
        }
        let Some(oracle) = std::fs::read_to_string(dir.join("oracle.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        else {
            continue;
        };
        let tier = oracle["tier"].as_u64().unwrap_or(0);
        if !all_tiers && !(1..=2).contains(&tier) {
            continue;
        }
        let program = root.join(oracle["program"].as_str().unwrap_or(""));
        let data = root.join(oracle["data"].as_str().unwrap_or(""));
        let q: Vec<f64> = oracle["points"][0]["q"]
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_f64()).collect())
            .unwrap_or_default();
        let mut row = Row {
            name: name.clone(),
            tier,
            dim: q.len(),
            hazel_ns: None,
            note: String::new(),
        };
        let built = (|| -> Result<_, String> {
            let src = std::fs::read_to_string(&program).map_err(|e| e.to_string())?;
            let parsed = hazel_check::check_source("model.stan", &src);
            let prog = parsed.checked.ok_or("parse error")?;
            let text = std::fs::read_to_string(&data).map_err(|e| e.to_string())?;
            let d = hazel_data::DataFile::parse(&text).map_err(|e| e.to_string())?;
            compile(&prog, &d, &CompileOptions::default()).map_err(|e| e.to_string())
        })();
        match built {
            Ok(model) => {
                let mut ws = model.new_workspace();
                let mut grad = vec![0.0; q.len()];
                match model.log_density_gradient(&mut ws, &q, &mut grad) {
                    Ok(_) => {
                        let s = time_call(|| {
                            let _ = std::hint::black_box(model.log_density_gradient(
                                &mut ws,
                                std::hint::black_box(&q),
                                &mut grad,
                            ));
                        });
                        row.hazel_ns = Some(s * 1e9);
                        if model.is_dynamic() {
                            row.note = "dynamic".into();
                        }
                    }
                    Err(e) => row.note = format!("hazel: {e}"),
                }
            }
            Err(e) => row.note = format!("hazel: {e}"),
        }
        jobs.push(json!({"name": name, "program": program, "data": data, "q": q}));
        rows.push(row);
    }

    // stanli, in the same run.
    let script = root.join("bench/gradient_vs_stanli.py");
    let python = std::env::var("HAZEL_BENCH_PYTHON").unwrap_or_else(|_| "python3".into());
    let stanli: Result<Value, String> = (|| {
        let mut child = Command::new(&python)
            .arg(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("{python} not runnable: {e}"))?;
        child
            .stdin
            .take()
            .ok_or("no stdin")?
            .write_all(Value::Array(jobs).to_string().as_bytes())
            .map_err(|e| e.to_string())?;
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        serde_json::from_slice(&out.stdout)
            .map_err(|e| format!("bad output from {}: {e}", script.display()))
    })();
    let stanli_ns = |name: &str| -> Result<f64, String> {
        match &stanli {
            Err(e) => Err(e.clone()),
            Ok(Value::Object(o)) if o.contains_key("unavailable") => {
                Err(format!("stanli unavailable: {}", o["unavailable"]))
            }
            Ok(Value::Array(list)) => {
                let item = list.iter().find(|v| v["name"] == name).ok_or("no result")?;
                item["ns_per_grad"]
                    .as_f64()
                    .ok_or_else(|| item["error"].to_string())
            }
            Ok(_) => Err("unexpected output".into()),
        }
    };

    println!("| posterior | tier | dim | hazel µs/grad | stanli µs/grad | stanli / hazel | note |");
    println!("|---|---|---|---|---|---|---|");
    let mut ratios = Vec::new();
    for r in &rows {
        let s = stanli_ns(&r.name);
        let (st, ratio) = match (&s, r.hazel_ns) {
            (Ok(sn), Some(hn)) => {
                ratios.push(sn / hn);
                (format!("{:.2}", sn / 1e3), format!("{:.2}", sn / hn))
            }
            (Ok(sn), None) => (format!("{:.2}", sn / 1e3), "-".into()),
            (Err(e), _) => ("-".into(), format!("({e})")),
        };
        let hz = r
            .hazel_ns
            .map(|h| format!("{:.2}", h / 1e3))
            .unwrap_or("-".into());
        println!(
            "| {} | {} | {} | {hz} | {st} | {ratio} | {} |",
            r.name, r.tier, r.dim, r.note
        );
    }
    if !ratios.is_empty() {
        let geo = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
        println!(
            "\ngeometric mean of stanli/hazel over {} posteriors: {geo:.2} (>1: hazel faster)",
            ratios.len()
        );
    }
}
