//! Every executor gives the reference (serial) executor's bits.
//!
//! Over every corpus and example program with a stanli oracle (at the oracle's points, and
//! at points between them) and over large synthetic models (a logistic regression over a
//! design matrix, whose matrix × vector takes the batched executor's lane-aware rules and the
//! threaded executor's parallel rules): the threaded executor, the batched executor at one
//! point, and `log_density_gradient_batch` over K = 1, 3 and 8 points (in groups of the
//! configured lanes, and with the default) give the log density, the gradient and the error
//! of K separate reference evaluations, bit for bit.

use hazel_density::{EvalError, LogDensity};
use hazel_graph::{compile, CompileOptions, CompiledModel, ExecutorKind};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The executors compared against `ExecutorKind::Serial` one point at a time.
const SINGLE: [ExecutorKind; 2] = [
    ExecutorKind::Threaded { threads: 2 },
    ExecutorKind::Batched { lanes: 4 },
];

/// Executors whose batch calls are compared: `Serial` batches through the batched executor
/// with its default lanes; `Batched { lanes: 3 }` splits 8 points into groups of 3, 3, 2.
/// (`Threaded` batches go point by point through the single-point path checked above.)
const BATCH: [ExecutorKind; 2] = [ExecutorKind::Serial, ExecutorKind::Batched { lanes: 3 }];

type Eval = Result<(u64, Vec<u64>), EvalError>;

fn bits(r: Result<f64, EvalError>, g: &[f64]) -> Eval {
    r.map(|lp| (lp.to_bits(), g.iter().map(|x| x.to_bits()).collect()))
}

fn build(src: &str, data: &hazel_data::DataFile, executor: ExecutorKind) -> CompiledModel {
    let parsed = hazel_check::check_source("model.stan", src);
    let program = parsed.checked.expect("program checks");
    compile(
        &program,
        data,
        &CompileOptions {
            seed: 1,
            executor,
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("compile: {}", e.render(&parsed.sources)))
}

/// The reference: one serial evaluation per point, each in a fresh workspace and again in a
/// reused one (they must agree too).
fn reference(model: &CompiledModel, points: &[Vec<f64>]) -> Vec<Eval> {
    let d = model.dim();
    let mut ws = model.new_workspace();
    points
        .iter()
        .map(|q| {
            let mut g = vec![0.0; d];
            let r = bits(model.log_density_gradient(&mut ws, q, &mut g), &g);
            let mut fresh = model.new_workspace();
            let mut g2 = vec![0.0; d];
            let r2 = bits(model.log_density_gradient(&mut fresh, q, &mut g2), &g2);
            assert_eq!(
                r, r2,
                "reference differs between a fresh and a reused workspace"
            );
            r
        })
        .collect()
}

/// Compares every executor on `points`; `Err` names the first difference.
fn compare(
    name: &str,
    src: &str,
    data: &hazel_data::DataFile,
    points: &[Vec<f64>],
) -> Result<usize, String> {
    let serial = build(src, data, ExecutorKind::Serial);
    let d = serial.dim();
    let want = reference(&serial, points);
    let mut checks = 0;
    for kind in SINGLE {
        let model = build(src, data, kind);
        let mut ws = model.new_workspace();
        for (i, q) in points.iter().enumerate() {
            let mut g = vec![0.0; d];
            let got = bits(model.log_density_gradient(&mut ws, q, &mut g), &g);
            if got != want[i] {
                return Err(format!(
                    "{name}: {kind:?} at point {i}: {got:?} vs reference {:?}",
                    want[i]
                ));
            }
            checks += 1;
        }
    }
    for kind in BATCH {
        let model = build(src, data, kind);
        for k in [1usize, 3, 8] {
            // Points i, i+1, … (cycled), so each batch mixes different points.
            for start in [0, points.len() / 2] {
                let idx: Vec<usize> = (0..k).map(|j| (start + j) % points.len()).collect();
                let qs: Vec<f64> = idx.iter().flat_map(|&i| points[i].clone()).collect();
                let mut wss: Vec<_> = (0..k).map(|_| model.new_workspace()).collect();
                let mut grads = vec![f64::NAN; k * d];
                let mut out: Vec<Result<f64, EvalError>> = vec![Ok(0.0); k];
                // Twice in the same workspaces: reuse must not change a bit.
                for round in 0..2 {
                    model.log_density_gradient_batch(&mut wss, &qs, &mut grads, &mut out);
                    for (j, &i) in idx.iter().enumerate() {
                        let got = bits(out[j].clone(), &grads[j * d..(j + 1) * d]);
                        if got != want[i] {
                            return Err(format!(
                                "{name}: batch of {k} on {kind:?} (round {round}), lane {j} \
                                 (point {i}): {got:?} vs reference {:?}",
                                want[i]
                            ));
                        }
                        checks += 1;
                    }
                }
            }
        }
    }
    Ok(checks)
}

fn rows(v: &Value) -> Vec<f64> {
    v.as_array()
        .map(|a| a.iter().map(|x| x.as_f64().unwrap_or(f64::NAN)).collect())
        .unwrap_or_default()
}

/// `corpus/posteriordb/*/oracle.json` and `examples/*/oracle.json`.
fn oracle_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in [root.join("corpus/posteriordb"), root.join("examples")] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.filter_map(|e| e.ok()) {
            let f = e.path().join("oracle.json");
            if f.exists() {
                out.push(f);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_executor_gives_the_reference_bits_on_the_oracle_programs() {
    let root = hazel_testdata::repo_root();
    if hazel_testdata::posteriordb().is_none() {
        return hazel_testdata::skip(
            "every_executor_gives_the_reference_bits_on_the_oracle_programs",
        );
    }
    let filter = std::env::var("HAZEL_ORACLE_FILTER").ok();
    let (mut programs, mut checks, mut dynamic) = (0, 0, 0);
    let mut failures = Vec::new();
    for path in oracle_files(&root) {
        let name = path.parent().unwrap().display().to_string();
        if filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) {
            continue;
        }
        let oracle: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).expect("oracle json");
        let (Some(program), Some(data)) = (oracle["program"].as_str(), oracle["data"].as_str())
        else {
            continue;
        };
        let Ok(src) = std::fs::read_to_string(root.join(program)) else {
            continue;
        };
        let data_path = hazel_testdata::resolve_fixture_path(data);
        let Ok(data_text) = std::fs::read_to_string(&data_path) else {
            continue;
        };
        let data = hazel_data::DataFile::parse(&data_text).expect("data parses");
        // Programs the engine does not build yet are posteriordb_oracle's business.
        let parsed = hazel_check::check_source("model.stan", &src);
        let Some(checked) = parsed.checked.as_ref() else {
            continue;
        };
        let Ok(model) = compile(checked, &data, &CompileOptions::default()) else {
            continue;
        };
        if model.is_dynamic() {
            dynamic += 1;
        }
        let mut points: Vec<Vec<f64>> = oracle["points"]
            .as_array()
            .map(|ps| ps.iter().map(|p| rows(&p["q"])).collect())
            .unwrap_or_default();
        points.retain(|q| q.len() == model.dim());
        if points.is_empty() {
            continue;
        }
        // Midpoints between consecutive points, and one far out (which may fail: errors
        // must agree too).
        let n = points.len();
        for i in 0..n {
            let (a, b) = (&points[i], &points[(i + 1) % n]);
            points.push(a.iter().zip(b).map(|(x, y)| 0.5 * (x + y)).collect());
        }
        points.push(points[0].iter().map(|x| 40.0 * x + 3.0).collect());
        programs += 1;
        if let Err(e) = adjoint_free_slots_stay_untouched(&name, &model, &points[0]) {
            failures.push(e);
        }
        match std::panic::catch_unwind(|| compare(&name, &src, &data, &points)) {
            Ok(Ok(c)) => checks += c,
            Ok(Err(e)) => failures.push(e),
            Err(_) => failures.push(format!("{name}: PANIC")),
        }
    }
    println!("{programs} programs ({dynamic} dynamic), {checks} bitwise comparisons");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        filter.is_some() || programs >= 100,
        "only {programs} programs ran"
    );
}

/// A backward sweep clears only the slots outside the graph's `adjoint.free` runs (and
/// their holes), so no
/// rule may read or add to those: with every adjoint NaN beforehand, the sweep gives the bits
/// of one in a fresh buffer, and the free slots still hold NaN afterwards.
fn adjoint_free_slots_stay_untouched(
    name: &str,
    model: &CompiledModel,
    q: &[f64],
) -> Result<(), String> {
    let Some(g) = model.graph() else {
        return Ok(());
    };
    let out = model.graph_output().expect("a static graph has an output");
    let run = |poison: bool| {
        let mut buf = hazel_graph::Buffers::for_graph(g);
        if poison {
            buf.adj.iter_mut().for_each(|a| *a = f64::NAN);
        }
        g.forward(q, &mut buf).ok()?;
        g.backward(out, &mut buf);
        Some(buf)
    };
    let (Some(fresh), Some(poisoned)) = (run(false), run(true)) else {
        return Ok(());
    };
    for i in 0..g.dim {
        if fresh.adj[i].to_bits() != poisoned.adj[i].to_bits() {
            return Err(format!(
                "{name}: gradient {i} differs after a sweep over a NaN adjoint buffer: {} vs {}",
                poisoned.adj[i], fresh.adj[i]
            ));
        }
    }
    for s in &g.adjoint.free {
        let hole = |i: usize| g.adjoint.free_holes.binary_search(&(i as u32)).is_ok();
        if !s.range().all(|i| hole(i) || poisoned.adj[i].is_nan()) {
            return Err(format!("{name}: a rule wrote the adjoint-free run {s:?}"));
        }
    }
    Ok(())
}

/// A logistic regression plus a normal regression over one `N × K` design matrix (`K = 7`:
/// one block of four columns and a tail of three; `N` not a multiple of the row blocks or
/// the reduction chunks).
const GLM: &str = r#"
data {
  int<lower=0> N;
  int<lower=0> K;
  matrix[N, K] X;
  vector[N] y;
  array[N] int<lower=0, upper=1> z;
}
parameters {
  real alpha;
  vector[K] beta;
  real<lower=0> sigma;
}
model {
  vector[N] mu = alpha + X * beta;
  alpha ~ normal(0, 2);
  beta ~ student_t(4, 0, 1);
  sigma ~ exponential(1);
  y ~ normal(mu, sigma);
  z ~ bernoulli_logit(mu);
}
"#;

fn glm_data(n: usize, k: usize) -> hazel_data::DataFile {
    let mut rng = hazel_testdata::Xorshift(0x2545_f491_4f6c_dd1d);
    let mut next = || rng.centred();
    let x: Vec<String> = (0..n)
        .map(|_| {
            let r: Vec<String> = (0..k).map(|_| format!("{:.6}", next())).collect();
            format!("[{}]", r.join(","))
        })
        .collect();
    let y: Vec<String> = (0..n).map(|_| format!("{:.6}", 3.0 * next())).collect();
    let z: Vec<&str> = (0..n)
        .map(|_| if next() > 0.0 { "1" } else { "0" })
        .collect();
    let json = format!(
        r#"{{"N": {n}, "K": {k}, "X": [{}], "y": [{}], "z": [{}]}}"#,
        x.join(","),
        y.join(","),
        z.join(",")
    );
    hazel_data::DataFile::parse(&json).expect("data parses")
}

fn points(dim: usize, n: usize) -> Vec<Vec<f64>> {
    (0..n)
        .map(|p| {
            (0..dim)
                .map(|i| ((i * 37 + p * 11) % 101) as f64 / 101.0 - 0.5)
                .collect()
        })
        .collect()
}

#[test]
fn every_executor_gives_the_reference_bits_on_a_large_glm() {
    // 20,011 rows: the threaded rules (≥ 2 · 2048 elements) and several row blocks and
    // reduction chunks of the batched rules, with ragged ends.
    let data = glm_data(20_011, 7);
    let model = build(GLM, &data, ExecutorKind::Serial);
    assert!(!model.is_dynamic());
    let has_data_matvec = model
        .graph()
        .unwrap()
        .ops
        .iter()
        .any(|op| matches!(op, hazel_graph::Op::MatVec { m, .. } if !m.is_var()));
    assert!(
        has_data_matvec,
        "the GLM must have a data matrix × vector op"
    );
    let mut pts = points(model.dim(), 6);
    // A point whose scale is 0: the normal density fails there, in every lane that has it.
    let mut bad = pts[0].clone();
    bad[model.dim() - 1] = f64::NEG_INFINITY;
    pts.push(bad);
    let checks = compare("glm", GLM, &data, &pts).unwrap_or_else(|e| panic!("{e}"));
    assert!(checks > 0);
}

#[test]
fn batches_of_a_dynamic_model_equal_single_evaluations() {
    // A branch on a parameter: every evaluation re-traces.
    let src = r#"
parameters { real x; real y; }
model {
  if (x > 0) target += -0.5 * square(x - y); else target += -abs(x) - square(y);
}
"#;
    let data = hazel_data::DataFile::parse("{}").unwrap();
    let model = build(src, &data, ExecutorKind::Serial);
    assert!(model.is_dynamic());
    let pts = vec![vec![0.5, -1.0], vec![-0.5, 2.0], vec![1.5, 0.25]];
    compare("dynamic", src, &data, &pts).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn every_executor_gives_the_reference_bits_on_fused_glms() {
    // Two fused GLM ops over one data matrix (the batched executor runs them block-major over
    // its lanes); the normal's scale is unconstrained, so lanes whose point has a negative
    // scale fail inside the fused op while the others go on.
    let src = r#"
data { int<lower=0> N; int<lower=0> K; matrix[N, K] X; vector[N] y; array[N] int<lower=0, upper=1> z; }
parameters { real alpha; vector[K] beta; real sigma; }
model {
  beta ~ normal(0, 1);
  z ~ bernoulli_logit(alpha + X * beta);
  y ~ normal(X * beta + alpha, sigma);
}
"#;
    let data = glm_data(20_011, 7);
    let model = build(src, &data, ExecutorKind::Serial);
    let fused = model
        .graph()
        .unwrap()
        .ops
        .iter()
        .filter(|op| matches!(op, hazel_graph::Op::Glm { .. }))
        .count();
    assert_eq!(fused, 2, "both likelihoods are fused GLM ops");
    let d = model.dim();
    let mut pts = points(d, 7);
    for (i, p) in pts.iter_mut().enumerate() {
        p[d - 1] = if i % 3 == 1 {
            -0.7
        } else {
            0.5 + 0.1 * i as f64
        };
    }
    // An infinite intercept: the normal's location check fails at element 1, inside the
    // pieces of the fused op's first block, in this lane only (the batched executor then runs
    // that lane's block whole to name the element, while the other lanes go on in pieces).
    let mut inf = pts[2].clone();
    inf[0] = f64::INFINITY;
    let mut ws = model.new_workspace();
    let mut g = vec![0.0; d];
    let e = model
        .log_density_gradient(&mut ws, &inf, &mut g)
        .expect_err("an infinite location fails")
        .to_string();
    assert!(e.contains("element 1"), "{e}");
    pts.insert(3, inf);
    let checks = compare("fused glm", src, &data, &pts).unwrap_or_else(|e| panic!("{e}"));
    assert!(checks > 0);
}

/// The `Executor` trait used directly on a hand-built graph: `forward` gives `gradient`'s
/// value, and every executor's `gradient` and `gradient_batch` give `SerialCpu`'s bits
/// (a data matrix × vector of 5,003 × 6 — one four-column block and a tail —, its transpose
/// read through a product, an elementwise chain and a density).
#[test]
fn the_executor_trait_on_a_hand_built_graph() {
    use hazel_graph::exec::{BatchedCpu, CpuExecutor, Executor, SerialCpu, ThreadedCpu};
    use hazel_graph::kernels::{BinaryFn, DistKind, UnaryFn};
    use hazel_graph::GraphBuilder;
    let (rows, cols) = (5_003, 6);
    let q: Vec<f64> = (0..cols).map(|i| 0.1 * i as f64 - 0.2).collect();
    let mut b = GraphBuilder::new(&q);
    let m: Vec<f64> = (0..rows * cols)
        .map(|i| ((i * 7919) % 1000) as f64 / 1000.0 - 0.5)
        .collect();
    let x = b.konst(&m);
    let eta = b.matvec(x, b.params(), rows, cols);
    let t = b.unary(UnaryFn::Tanh, eta);
    let s = b.binary(BinaryFn::Mul, t, eta);
    let y = b.konst(&(0..rows).map(|i| (i % 3) as f64 * 0.1).collect::<Vec<_>>());
    let sd = b.scalar_const(0.7);
    let out = b.dist(DistKind::Normal, vec![y, s, sd], false);
    let g = b.finish();
    let d = g.dim;
    let points: Vec<Vec<f64>> = (0..5)
        .map(|p| q.iter().map(|v| v + 0.05 * p as f64).collect())
        .collect();
    let mut serial_ws = SerialCpu.new_workspace(&g);
    let want: Vec<Eval> = points
        .iter()
        .map(|p| {
            let mut gr = vec![0.0; d];
            bits(SerialCpu.gradient(&g, out, p, &mut serial_ws, &mut gr), &gr)
        })
        .collect();
    let executors = [
        CpuExecutor::Serial(SerialCpu),
        CpuExecutor::Threaded(ThreadedCpu { threads: 2 }),
        CpuExecutor::Batched(BatchedCpu { lanes: 1 }),
        CpuExecutor::Batched(BatchedCpu { lanes: 2 }),
        CpuExecutor::Batched(BatchedCpu { lanes: 8 }),
    ];
    for e in executors {
        let mut ws = e.new_workspace(&g);
        for (i, p) in points.iter().enumerate() {
            let mut gr = vec![0.0; d];
            let got = bits(e.gradient(&g, out, p, &mut ws, &mut gr), &gr);
            assert_eq!(got, want[i], "{e:?} gradient at point {i}");
            let f = e.forward(&g, out, p, &mut ws).expect("forward");
            assert_eq!(
                Ok(f.to_bits()),
                want[i].as_ref().map(|w| w.0),
                "{e:?} forward"
            );
        }
        let qs: Vec<f64> = points.concat();
        let mut lps: Vec<Result<f64, EvalError>> = vec![Ok(0.0); points.len()];
        let mut grads = vec![0.0; points.len() * d];
        e.gradient_batch(&g, out, &qs, &mut ws, &mut lps, &mut grads);
        for (i, lp) in lps.into_iter().enumerate() {
            let got = bits(lp, &grads[i * d..(i + 1) * d]);
            assert_eq!(got, want[i], "{e:?} batch lane {i}");
        }
    }
}

#[test]
fn a_batch_with_mismatched_buffers_is_an_error_not_a_panic() {
    let data = glm_data(50, 7);
    let model = build(GLM, &data, ExecutorKind::Serial);
    let d = model.dim();
    let mut wss: Vec<_> = (0..2).map(|_| model.new_workspace()).collect();
    let mut out: Vec<Result<f64, EvalError>> = vec![Ok(0.0); 3];
    let qs = vec![0.1; 3 * d - 1];
    let mut grads = vec![0.0; 3 * d];
    model.log_density_gradient_batch(&mut wss, &qs, &mut grads, &mut out);
    assert!(out.iter().all(|r| r.is_err()), "{out:?}");
    // An empty batch is fine.
    model.log_density_gradient_batch(&mut wss, &[], &mut [], &mut []);
}
