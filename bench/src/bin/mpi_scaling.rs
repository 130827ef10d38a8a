//! The cost of `--distribute data` (issue 9): MPI overhead per gradient on this machine, and
//! from measured compute and latency figures a model of strong scaling to 16 machines.
//!
//! Usage (one run per rank count; rank 0 prints):
//!
//! ```text
//! cargo build --release -p hazel-bench --features mpi --bin mpi_scaling
//! for np in 1 2 3; do
//!   mpirun --allow-run-as-root --oversubscribe -np $np target/release/mpi_scaling [--rows N]
//! done
//! ```
//!
//! Each run measures, with every rank taking part:
//! - **fold**: µs for one fold of `d + 1` numbers across the ranks (d = 20 and d = 100) — what
//!   one split reduction costs a gradient (`hazel_graph::exec::sharded::fold_terms`: rank 0
//!   sends to rank 1, …, the last rank sends the result to all). Median of 5 batches of 2,000.
//! - **gradient**: ms per log density + gradient of two models with the sharded executor over
//!   the ranks (median of 5 batches of 20): logistic regression (N rows, K = 20, one fused
//!   GLM: one fold of 26 numbers per gradient) and a hierarchical regression (N observations,
//!   J = 100 group effects gathered per observation, K = 5 covariates, normal likelihood:
//!   several folds, one of them carrying the J group adjoints). Rank 0 also times the
//!   reference executor alone (the other ranks wait), and counts the folds per gradient (its
//!   messages to rank 1).
//! - **scatter**: ns per observation of the gathered vector's adjoint (`a[g[n]] += ∂n`),
//!   which the fold runs rank after rank and so does not shrink with more ranks.
//!
//! The model (printed for N = 10⁵, 10⁶, 5·10⁶ and R = 2 … 16): `T(R) = (T₁ − S)/R + S +
//! F·R·h`, with `T₁` the reference executor's time, `S` the serial part (the scatter above;
//! everything else that is not split is O(parameters)), `F` the folds per gradient and `h`
//! the cost of one hop of a fold (measured here as the fold time over R; for machines on a
//! network it is set to 2 µs, InfiniBand-class, and 30 µs, TCP over 10 GbE — assumptions, not
//! measurements). `T₁` and `S` are scaled linearly from the measured N (the rows stream from
//! memory at every size). Separate machines each bring their own memory bandwidth, so `(T₁ − S)/R`
//! holds there; ranks sharing one machine share its bandwidth, so the localhost gradient
//! figures fall short of it once the rows are memory-bound.

use hazel_bench::time_call;
use hazel_comm::mpi_world::MpiSession;
use hazel_comm::Comm;
use hazel_density::LogDensity;
use hazel_graph::exec::sharded::{fold_terms, ShardLink};
use hazel_graph::{compile, CompileOptions, CompiledModel};
use hazel_testdata::Xorshift;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Counts the messages this rank sends (rank 0 sends one to rank 1 per fold).
struct Counting {
    inner: Arc<dyn Comm>,
    sent: AtomicU64,
}

impl Comm for Counting {
    fn rank(&self) -> usize {
        self.inner.rank()
    }
    fn size(&self) -> usize {
        self.inner.size()
    }
    fn send(&self, to: usize, tag: u32, msg: &[u8]) -> Result<(), hazel_comm::CommError> {
        self.sent.fetch_add(1, Ordering::Relaxed);
        self.inner.send(to, tag, msg)
    }
    fn recv(&self, from: usize, tag: u32, buf: &mut Vec<u8>) -> Result<(), hazel_comm::CommError> {
        self.inner.recv(from, tag, buf)
    }
    fn recv_any(&self, tag: u32, buf: &mut Vec<u8>) -> Result<usize, hazel_comm::CommError> {
        self.inner.recv_any(tag, buf)
    }
}

fn matrix_json(r: &mut Xorshift, n: usize, k: usize) -> String {
    let mut s = String::with_capacity(n * k * 8);
    s.push('[');
    for i in 0..n {
        if i > 0 {
            s.push(',');
        }
        s.push('[');
        for j in 0..k {
            if j > 0 {
                s.push(',');
            }
            s.push_str(&format!("{:.3}", 2.0 * r.centred()));
        }
        s.push(']');
    }
    s.push(']');
    s
}

fn build(program: &str, data: &str) -> CompiledModel {
    let checked = hazel_check::check_source("model.stan", program)
        .checked
        .expect("the program checks");
    let data = hazel_data::DataFile::parse(data).expect("the data parse");
    compile(&checked, &data, &CompileOptions::default()).expect("the model compiles")
}

const LOGISTIC: &str = "data { int N; int K; matrix[N, K] X; array[N] int<lower=0, upper=1> y; }
parameters { real alpha; vector[K] beta; }
model { alpha ~ normal(0, 2); beta ~ normal(0, 1); y ~ bernoulli_logit(X * beta + alpha); }";

const HIERARCHICAL: &str = "data { int N; int J; int K; matrix[N, K] X;
  array[N] int<lower=1, upper=J> g; vector[N] y; }
parameters { real mu; real<lower=0> tau; vector[J] z; vector[K] b; real<lower=0> sigma; }
model {
  mu ~ normal(0, 1); tau ~ normal(0, 1); z ~ std_normal(); b ~ normal(0, 1);
  sigma ~ normal(0, 1);
  y ~ normal(mu + tau * z[g] + X * b, sigma);
}";

fn logistic_data(n: usize) -> String {
    let mut r = Xorshift(0x9e37_79b9_7f4a_7c15);
    let x = matrix_json(&mut r, n, 20);
    let y: Vec<&str> = (0..n)
        .map(|_| if r.centred() > 0.0 { "1" } else { "0" })
        .collect();
    format!(r#"{{"N": {n}, "K": 20, "X": {x}, "y": [{}]}}"#, y.join(","))
}

fn hierarchical_data(n: usize) -> String {
    let mut r = Xorshift(0x2545_f491_4f6c_dd1d);
    let x = matrix_json(&mut r, n, 5);
    let g: Vec<String> = (0..n).map(|i| (1 + (i * 37) % 100).to_string()).collect();
    let y: Vec<String> = (0..n)
        .map(|_| format!("{:.3}", 3.0 * r.centred()))
        .collect();
    format!(
        r#"{{"N": {n}, "J": 100, "K": 5, "X": {x}, "g": [{}], "y": [{}]}}"#,
        g.join(","),
        y.join(",")
    )
}

/// Median seconds per call over 5 batches of `per_batch` calls, the same count on every rank
/// (every call is collective).
fn time_fixed(per_batch: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut batches: Vec<f64> = (0..5)
        .map(|_| {
            let t0 = Instant::now();
            for _ in 0..per_batch {
                f();
            }
            t0.elapsed().as_secs_f64() / per_batch as f64
        })
        .collect();
    batches.sort_by(f64::total_cmp);
    batches[2]
}

/// Waits until every rank gets here (a fold of one number).
fn barrier(link: &ShardLink) {
    let mut msg = Vec::new();
    fold_terms(link, &mut msg, &mut [0.0], &[0.0]).expect("barrier");
}

struct Measured {
    name: &'static str,
    rows: usize,
    reference_s: f64,
    sharded_s: f64,
    folds: f64,
}

/// `chain`: a chain id of its own per case (a chain's tag carries one workspace's folds).
fn measure(
    name: &'static str,
    program: &str,
    data: &str,
    rows: usize,
    comm: &Arc<dyn Comm>,
    chain: u64,
) -> Measured {
    let model = build(program, data);
    let link = ShardLink {
        comm: comm.clone(),
        tag: 9,
    };
    let q: Vec<f64> = (0..model.dim())
        .map(|i| 0.1 * ((i % 7) as f64 - 3.0))
        .collect();
    let mut grad = vec![0.0; model.dim()];
    // The reference executor on rank 0 alone.
    barrier(&link);
    let reference_s = if comm.rank() == 0 {
        let mut ws = model.new_workspace();
        time_call(|| {
            model.log_density_gradient(&mut ws, &q, &mut grad).unwrap();
        })
    } else {
        0.0
    };
    barrier(&link);
    let counting = Arc::new(Counting {
        inner: comm.clone(),
        sent: AtomicU64::new(0),
    });
    let mut sharded = build(program, data);
    sharded.distribute_over(counting.clone());
    let mut ws = sharded.new_chain_workspace(chain);
    let per_batch = 20;
    let sharded_s = time_fixed(per_batch, || {
        sharded
            .log_density_gradient(&mut ws, &q, &mut grad)
            .unwrap();
    });
    let evaluations = (1 + 5 * per_batch) as f64;
    let folds = if comm.size() > 1 {
        counting.sent.load(Ordering::Relaxed) as f64 / evaluations
    } else {
        f64::NAN
    };
    Measured {
        name,
        rows,
        reference_s,
        sharded_s,
        folds,
    }
}

/// ns per observation of `a[g[n]] += d[n]` (the gathered vector's adjoint, kept in order).
fn scatter_ns(n: usize) -> f64 {
    let g: Vec<u32> = (0..n).map(|i| ((i * 37) % 100) as u32).collect();
    let d: Vec<f64> = (0..n).map(|i| (i % 13) as f64 * 0.1).collect();
    let mut a = vec![0.0f64; 100];
    let s = time_call(|| {
        for (&i, v) in g.iter().zip(&d) {
            a[i as usize] += v;
        }
        std::hint::black_box(&mut a);
    });
    s / n as f64 * 1e9
}

fn main() {
    let mut rows = 200_000usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--rows" {
            rows = args.next().and_then(|v| v.parse().ok()).expect("--rows N");
        }
    }
    let session = MpiSession::init().expect("MPI");
    let comm: Arc<dyn Comm> = session.comm();
    let (rank, ranks) = (comm.rank(), comm.size());
    let lead = rank == 0;
    let link = ShardLink {
        comm: comm.clone(),
        tag: 8,
    };

    // 1. Folds.
    let mut fold_us = Vec::new();
    for d in [20usize, 100] {
        let mut acc = vec![0.0; d + 1];
        let terms = vec![1.0; d + 1];
        let mut msg = Vec::new();
        barrier(&link);
        let s = time_fixed(2_000, || {
            acc.iter_mut().for_each(|a| *a = 0.0);
            fold_terms(&link, &mut msg, &mut acc, &terms).unwrap();
        });
        assert_eq!(acc[0], ranks as f64);
        fold_us.push((d, s * 1e6));
    }

    // 2. Gradients.
    let cases = [
        measure(
            "logistic K=20",
            LOGISTIC,
            &logistic_data(rows),
            rows,
            &comm,
            1,
        ),
        measure(
            "hierarchical J=100 K=5",
            HIERARCHICAL,
            &hierarchical_data(rows),
            rows,
            &comm,
            2,
        ),
    ];
    let scatter = scatter_ns(rows);
    if !lead {
        drop(session);
        return;
    }

    println!(
        "mpi_scaling: {ranks} rank(s) on {} (localhost)",
        comm_name()
    );
    println!();
    println!("fold (one split reduction), µs:");
    for (d, us) in &fold_us {
        println!(
            "  d + 1 = {:>3} numbers: {us:8.2} µs  ({:.2} µs per rank)",
            d + 1,
            us / ranks as f64
        );
    }
    println!();
    println!(
        "{:<24} {:>9} {:>14} {:>14} {:>10} {:>11}",
        "gradient", "rows", "reference ms", "sharded ms", "speed-up", "folds/grad"
    );
    for c in &cases {
        println!(
            "{:<24} {:>9} {:>14.3} {:>14.3} {:>10.2} {:>11}",
            c.name,
            c.rows,
            c.reference_s * 1e3,
            c.sharded_s * 1e3,
            c.reference_s / c.sharded_s,
            if c.folds.is_nan() {
                "-".to_string()
            } else {
                format!("{:.1}", c.folds)
            }
        );
    }
    println!();
    println!("scatter (gathered adjoint, serial in the fold): {scatter:.2} ns per observation");

    // 3. The model.
    let hop_local_us = fold_us[0].1 / ranks as f64;
    println!();
    println!(
        "Strong scaling model: T(R) = (T1 - S)/R + S + F*R*h, T1 and S scaled linearly from \
         N = {rows}; speed-up T1/T(R) at R machines, the R where T(R) is least (up to 16), the \
         largest R with efficiency >= 50%"
    );
    let hops = [
        (format!("{hop_local_us:.1} us (here)"), hop_local_us),
        ("2 us (InfiniBand)".to_string(), 2.0),
        ("30 us (10 GbE TCP)".to_string(), 30.0),
    ];
    let rs = [2usize, 4, 8, 16];
    for c in &cases {
        // Folds per gradient: counted with 2+ ranks; from the plan's shape otherwise.
        let folds = if c.folds.is_nan() {
            if c.name.starts_with("logistic") {
                1.0
            } else {
                5.0
            }
        } else {
            c.folds
        };
        println!();
        println!("{}: F = {folds:.1} folds per gradient", c.name);
        print!("  {:>9} {:>10} {:>9} {:<20}", "N", "T1 ms", "S ms", "h");
        for r in rs {
            print!("{:>7}", format!("R={r}"));
        }
        println!("{:>8}{:>9}", "best R", "R(50%)");
        for n in [100_000.0, 1_000_000.0, 5_000_000.0f64] {
            let t1 = c.reference_s * n / c.rows as f64;
            let serial = if c.name.starts_with("hierarchical") {
                scatter * 1e-9 * n
            } else {
                0.0
            };
            for (label, h_us) in &hops {
                let t = |r: f64| (t1 - serial) / r + serial + folds * r * h_us * 1e-6;
                print!(
                    "  {:>9} {:>10.2} {:>9.2} {:<20}",
                    n as u64,
                    t1 * 1e3,
                    serial * 1e3,
                    label
                );
                for r in rs {
                    print!("{:>6.1}x", t1 / t(r as f64));
                }
                let best = (1..=16)
                    .min_by(|&a, &b| t(a as f64).total_cmp(&t(b as f64)))
                    .unwrap();
                let half = (1..=16)
                    .filter(|&r| t1 / t(r as f64) / r as f64 >= 0.5)
                    .max()
                    .unwrap_or(1);
                println!("{best:>8}{half:>9}");
            }
        }
    }
    drop(session);
}

fn comm_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "this machine".into())
}
