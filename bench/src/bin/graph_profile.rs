//! What a corpus posterior's static graph is made of, and a fixed number of gradient
//! evaluations to profile it under `valgrind --tool=callgrind` (instruction counts are
//! repeatable on a loaded machine, where wall-clock time is not):
//! `valgrind --tool=callgrind --toggle-collect=graph_profile::run_evals` counts only the
//! evaluations.
//!
//! Usage: `cargo run --release -p hazel-bench --bin graph_profile -- NAME [EVALS]`
//! (`NAME`: a directory of `corpus/posteriordb`, or a substring matching exactly one). Prints
//! the ops by kind (count, and values written), then runs `EVALS` (default 0) log density +
//! gradient evaluations at the oracle's first point and the median µs of one when `EVALS` > 0.
//! `NAME` = `:chain`: `gradient_vs_stanli --engine`'s chain of 100,000 scalar ops instead
//! (with `HAZEL_CHAIN_FUSED` set: fused into scalar blocks first, as compiled models are).
//! `NAME` = `:bits`: one line per corpus posterior with the bits of the log density and a hash
//! of the gradient's bits at every oracle point (diff two builds' output to see which
//! posteriors a change moved).

use hazel_density::LogDensity;
use hazel_graph::ir::scalar::ScalarInstr;
use hazel_graph::{compile, CompileOptions, Op};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// A short name for an op: its variant, with the function or family for elementwise ops and
/// densities, and `scalar` when it writes one value.
fn op_kind(op: &Op) -> String {
    let scalar = if op.out().len == 1 { " scalar" } else { "" };
    match op {
        Op::Unary { f, .. } => format!("Unary {f:?}{scalar}"),
        Op::Binary { f, .. } => format!("Binary {f:?}{scalar}"),
        Op::Dist { kind, len, .. } => format!(
            "Dist {}{}",
            kind.name(),
            if *len == 1 { " scalar" } else { "" }
        ),
        other => {
            let s = format!("{other:?}");
            let head = s.split([' ', '{', '(']).next().unwrap_or("").to_string();
            format!("{head}{scalar}")
        }
    }
}

/// `gradient_vs_stanli --engine`'s scalar op chain (100,000 dependent scalar ops, multiply
/// and add alternating), forward and backward `evals` times: the interpreter's cost per op.
fn scalar_chain(evals: usize) {
    use hazel_graph::kernels::BinaryFn;
    use hazel_graph::GraphBuilder;
    let q = [0.5, 1.0000001];
    let mut b = GraphBuilder::new(&q);
    let p = b.params();
    let (x, a) = (p.at(0), p.at(1));
    let mut acc = x;
    for i in 0..100_000 {
        acc = if i % 2 == 0 {
            b.binary(BinaryFn::Mul, acc, a)
        } else {
            b.binary(BinaryFn::Add, acc, x)
        };
    }
    let mut g = b.finish();
    if std::env::var_os("HAZEL_CHAIN_FUSED").is_some() {
        g.fuse_scalar_blocks();
    }
    let s = run_graph_evals(&g, acc, &q, evals);
    println!(
        "scalar op chain ({} ops after fusion): {:.2} ns per op (forward + backward), {evals} evaluations of 100000 ops",
        g.ops.len(),
        s * 1e9 / (evals.max(1) * 100_000) as f64
    );
}

/// `evals` forward and backward sweeps of `g` on the reference executor; total seconds. Out of
/// line for callgrind's `--toggle-collect=graph_profile::run_graph_evals`.
#[inline(never)]
fn run_graph_evals(g: &hazel_graph::Graph, out: hazel_graph::Arg, q: &[f64], evals: usize) -> f64 {
    let mut buf = hazel_graph::Buffers::for_graph(g);
    let t0 = std::time::Instant::now();
    for _ in 0..evals {
        g.forward(q, &mut buf).expect("finite");
        g.backward(out, &mut buf);
    }
    t0.elapsed().as_secs_f64()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(name) = args.next() else {
        eprintln!("usage: graph_profile NAME [EVALS]");
        std::process::exit(2);
    };
    // `graph_profile model.stan data.json [EVALS]`: any program, at a fixed point.
    let data_path = name.ends_with(".stan").then(|| args.next()).flatten();
    let evals: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    if name == ":chain" {
        scalar_chain(evals);
        return;
    }
    if name == ":bits" {
        corpus_bits();
        return;
    }
    let (src, data, q) = match data_path {
        Some(data_path) => program_at_fixed_point(&name, &data_path),
        None => corpus_posterior(&name),
    };
    let prog = hazel_check::check_source("model.stan", &src)
        .checked
        .expect("program checks");
    let d = hazel_data::DataFile::parse(&data).expect("data parses");
    let model = compile(&prog, &d, &CompileOptions::default()).expect("compiles");
    // Without an oracle point: a fixed point of the unconstrained space, spread over
    // (−1, 1) so that no two coordinates are equal.
    let q = q.unwrap_or_else(|| {
        (0..model.dim())
            .map(|i| ((i as f64 + 1.0) * 0.618_033_988_749_895).fract() * 2.0 - 1.0)
            .collect()
    });
    profile(&model, &q, evals);
}

/// A program and data named by path (no oracle point).
fn program_at_fixed_point(program: &str, data: &str) -> (String, String, Option<Vec<f64>>) {
    let src = std::fs::read_to_string(program).expect("program");
    let data = std::fs::read_to_string(data).expect("data");
    (src, data, None)
}

/// The corpus posterior whose name is or contains `name`: its program, data and first
/// oracle point.
fn corpus_posterior(name: &str) -> (String, String, Option<Vec<f64>>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let corpus = root.join("corpus/posteriordb");
    let mut dirs: Vec<_> = std::fs::read_dir(&corpus)
        .expect("corpus/posteriordb")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.join("oracle.json").is_file())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains(name))
        })
        .collect();
    dirs.sort();
    if let Some(exact) = dirs
        .iter()
        .find(|p| p.file_name().is_some_and(|n| *n == *name))
    {
        dirs = vec![exact.clone()];
    }
    let [dir] = dirs.as_slice() else {
        eprintln!("{} posteriors match {name}: {dirs:?}", dirs.len());
        std::process::exit(2);
    };
    let oracle: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("oracle.json")).expect("oracle"))
            .expect("oracle.json");
    let src = std::fs::read_to_string(root.join(oracle["program"].as_str().unwrap_or("")))
        .expect("program");
    let data = std::fs::read_to_string(root.join(oracle["data"].as_str().unwrap_or("")))
        .expect("data (../shared/posteriordb)");
    let q: Vec<f64> = oracle["points"][0]["q"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_f64()).collect())
        .unwrap_or_default();
    (src, data, Some(q))
}

/// The op census of `model`'s static graph, then `evals` timed evaluations at `q`.
fn profile(model: &hazel_graph::CompiledModel, q: &[f64], evals: usize) {
    match model.graph() {
        None => println!("dynamic model (no static graph)"),
        Some(g) => {
            let mut kinds: BTreeMap<String, (usize, usize)> = BTreeMap::new();
            for op in &g.ops {
                let e = kinds.entry(op_kind(op)).or_default();
                e.0 += 1;
                e.1 += op.out().len as usize;
                // What the blocks hold, instruction by instruction.
                if let Op::Scalars { block, .. } = op {
                    for i in block.code() {
                        let kind = match i {
                            ScalarInstr::Small { op, .. } => format!("  in block: {}", op_kind(op)),
                            ScalarInstr::ShortDist { op, .. } => {
                                format!("  in block: ShortDist {}", op_kind(op))
                            }
                            other => {
                                let s = format!("{other:?}");
                                let head = s.split([' ', '{', '(']).next().unwrap_or("");
                                let f = match other {
                                    ScalarInstr::Unary { f, .. } => format!(" {f:?}"),
                                    ScalarInstr::Binary { f, .. } => format!(" {f:?}"),
                                    ScalarInstr::Dist { dist, .. } => {
                                        format!(" {}", dist.kind.name())
                                    }
                                    _ => String::new(),
                                };
                                format!("  in block: {head}{f}")
                            }
                        };
                        let e = kinds.entry(kind).or_default();
                        e.0 += 1;
                        e.1 += i.out().len as usize;
                    }
                }
            }
            // `HAZEL_DUMP_OPS=a..b`: ops a..b of the graph (instructions, inside blocks), as
            // `Debug` prints them.
            if let Some((a, b)) = std::env::var("HAZEL_DUMP_OPS")
                .ok()
                .and_then(|r| {
                    r.split_once("..")
                        .map(|(a, b)| (a.parse().ok(), b.parse().ok()))
                })
                .and_then(|(a, b): (Option<usize>, Option<usize>)| Some((a?, b?)))
            {
                let mut flat: Vec<String> = Vec::new();
                for op in &g.ops {
                    match op {
                        Op::Scalars { block, .. } => {
                            flat.extend(block.code().iter().map(|i| format!("  {i:?}")))
                        }
                        other => flat.push(format!("{other:?}")),
                    }
                }
                for line in flat.iter().skip(a).take(b.saturating_sub(a)) {
                    println!("{line}");
                }
            }
            let mut rows: Vec<_> = kinds.into_iter().collect();
            rows.sort_by_key(|r| std::cmp::Reverse(r.1 .0));
            println!(
                "{} ops, {} values, {} constants, {} scratch, dim {}",
                g.ops.len(),
                g.n_vals,
                g.consts.len(),
                g.n_scratch,
                g.dim
            );
            // What a backward sweep leaves uncleared (`AdjointPlan::unset`, less its holes):
            // slots no rule touches and slots their one rule stores.
            let unset = |runs: &[hazel_graph::tape::Slot], holes: &[u32]| -> u32 {
                runs.iter().map(|s| s.len).sum::<u32>() - holes.len() as u32
            };
            let (unset_all, free) = (
                unset(&g.adjoint.unset, &g.adjoint.unset_holes),
                unset(&g.adjoint.free, &g.adjoint.free_holes),
            );
            println!(
                "adjoints: {} cleared per gradient, {} free, {} stored by their one rule",
                g.n_vals as u32 - unset_all,
                free,
                unset_all - free
            );
            for (k, (n, vals)) in rows {
                println!("{n:>8} ops {vals:>9} values  {k}");
            }
        }
    }
    if evals > 0 {
        let per = run_evals(model, q, evals);
        println!("{evals} evaluations, median {:.2} µs", per * 1e6);
    }
}

/// `evals` log density + gradient evaluations at `q`; the median seconds of one. Out of line
/// so that `valgrind --tool=callgrind --toggle-collect=graph_profile::run_evals` counts only
/// the evaluations.
#[inline(never)]
fn run_evals(model: &hazel_graph::CompiledModel, q: &[f64], evals: usize) -> f64 {
    let mut ws = model.new_workspace();
    let mut grad = vec![0.0; q.len()];
    let mut times = Vec::with_capacity(evals);
    for _ in 0..evals {
        let t0 = std::time::Instant::now();
        let r = model.log_density_gradient(&mut ws, std::hint::black_box(q), &mut grad);
        times.push(t0.elapsed().as_secs_f64());
        std::hint::black_box(r).expect("evaluates");
    }
    times.sort_by(|a, b| a.total_cmp(b));
    times[evals / 2]
}

/// For every corpus posterior: its name, then per oracle point the log density's bits and an
/// FNV-1a hash of the gradient's bits (or the error).
fn corpus_bits() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut dirs: Vec<_> = std::fs::read_dir(root.join("corpus/posteriordb"))
        .expect("corpus/posteriordb")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.join("oracle.json").is_file())
        .collect();
    dirs.sort();
    for dir in dirs {
        let name = dir.file_name().map(|n| n.to_string_lossy().to_string());
        let line = (|| -> Result<String, String> {
            let oracle: Value = serde_json::from_str(
                &std::fs::read_to_string(dir.join("oracle.json")).map_err(|e| e.to_string())?,
            )
            .map_err(|e| e.to_string())?;
            let src = std::fs::read_to_string(root.join(oracle["program"].as_str().unwrap_or("")))
                .map_err(|e| e.to_string())?;
            let data = std::fs::read_to_string(root.join(oracle["data"].as_str().unwrap_or("")))
                .map_err(|e| e.to_string())?;
            let prog = hazel_check::check_source("model.stan", &src)
                .checked
                .ok_or("check")?;
            let d = hazel_data::DataFile::parse(&data).map_err(|e| e.to_string())?;
            let model =
                compile(&prog, &d, &CompileOptions::default()).map_err(|e| e.to_string())?;
            let mut ws = model.new_workspace();
            let mut line = String::new();
            for point in oracle["points"].as_array().into_iter().flatten() {
                let q: Vec<f64> = point["q"]
                    .as_array()
                    .map(|a| a.iter().filter_map(|v| v.as_f64()).collect())
                    .unwrap_or_default();
                let mut grad = vec![0.0; q.len()];
                match model.log_density_gradient(&mut ws, &q, &mut grad) {
                    Ok(lp) => {
                        let mut h: u64 = 0xcbf29ce484222325;
                        for g in &grad {
                            h = (h ^ g.to_bits()).wrapping_mul(0x100000001b3);
                        }
                        line += &format!(" {:016x}/{h:016x}", lp.to_bits());
                    }
                    Err(e) => line += &format!(" error({})", e.message),
                }
            }
            Ok(line)
        })();
        match line {
            Ok(l) => println!("{}{l}", name.unwrap_or_default()),
            Err(e) => println!("{} failed: {e}", name.unwrap_or_default()),
        }
    }
}
