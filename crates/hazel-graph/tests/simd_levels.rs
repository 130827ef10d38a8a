//! Every SIMD level gives the reference bits (issue 14): the log density and gradient of
//! several models — a GLM, a hierarchical regression, a Bayesian neural net with matrix ×
//! matrix products, a model with both factors of a product on the tape, a model whose loops
//! run in lane regions (an IRT likelihood) — are bit-identical
//! for each instruction set this CPU has (`CompileOptions::simd`), with the serial, threaded
//! (2 threads) and batched executors. The reference is `SimdLevel::Sse2` with the serial
//! executor: the same fixed-shape source compiled for the baseline target.
//!
//! Blind spot: levels the CPU lacks are not run (the list is printed); an SSE2-only machine
//! checks only the executors.

mod common;

use common::Xorshift;
use hazel_density::LogDensity;
use hazel_graph::{compile, CompileOptions, ExecutorKind, SimdLevel};

/// Data text from the tests' pseudo-random sequence.
trait DataText {
    fn vec(&mut self, n: usize, scale: f64) -> String;
    fn matrix(&mut self, rows: usize, cols: usize) -> String;
    fn bits(&mut self, n: usize) -> String;
}

impl DataText for Xorshift {
    fn vec(&mut self, n: usize, scale: f64) -> String {
        let v: Vec<String> = (0..n)
            .map(|_| format!("{:.17e}", scale * self.centred()))
            .collect();
        format!("[{}]", v.join(","))
    }
    fn matrix(&mut self, rows: usize, cols: usize) -> String {
        let r: Vec<String> = (0..rows).map(|_| self.vec(cols, 2.0)).collect();
        format!("[{}]", r.join(","))
    }
    fn bits(&mut self, n: usize) -> String {
        let v: Vec<&str> = (0..n)
            .map(|_| if self.centred() > 0.0 { "1" } else { "0" })
            .collect();
        format!("[{}]", v.join(","))
    }
}

const GLM: &str = r#"
data { int N; int K; matrix[N, K] X; array[N] int<lower=0, upper=1> y; vector[N] w; }
parameters { real alpha; vector[K] beta; real<lower=0> sigma; }
model {
  alpha ~ normal(0, 2);
  beta ~ normal(0, 1);
  sigma ~ exponential(1);
  y ~ bernoulli_logit(alpha + X * beta);
  w ~ normal(X * beta, sigma);
  target += -0.5 * dot_self(beta) + sum(square(X * beta)) * 1e-4;
}
"#;

const HIER: &str = r#"
data { int N; int J; array[N] int<lower=1, upper=J> g; vector[N] x; vector[N] y; }
parameters { real mu; real<lower=0> tau; vector[J] z; vector[J] zb; real<lower=0> sigma; }
model {
  vector[J] a = mu + tau * z;
  vector[J] b = 0.5 * zb;
  mu ~ normal(0, 5);
  tau ~ normal(0, 1);
  z ~ std_normal();
  zb ~ std_normal();
  sigma ~ exponential(1);
  y ~ normal(a[g] + b[g] .* x, sigma);
}
"#;

const BNN: &str = r#"
data { int N; int D; int H; matrix[N, D] X; array[N] int<lower=0, upper=1> y; }
parameters { matrix[D, H] W1; vector[H] b1; vector[H] w2; real b2; }
model {
  matrix[N, H] hidden = tanh(X * W1 + rep_matrix(b1', N));
  to_vector(W1) ~ normal(0, 1);
  b1 ~ normal(0, 1);
  w2 ~ normal(0, 1);
  b2 ~ normal(0, 1);
  y ~ bernoulli_logit(hidden * w2 + b2);
}
"#;

/// Both factors of a matrix product, and of a matrix × vector product, on the tape.
const PRODUCTS: &str = r#"
data { int N; int K; int M; vector[N] y; }
parameters { matrix[N, K] A; matrix[K, M] B; vector[K] v; }
model {
  to_vector(A) ~ normal(0, 1);
  to_vector(B) ~ normal(0, 1);
  v ~ normal(0, 1);
  target += -0.01 * sum(square(A * B)) + 0.1 * sum(A * v) - 0.5 * dot_self(y - A * v);
}
"#;

fn cases() -> Vec<(&'static str, &'static str, String)> {
    let mut r = Xorshift(0x2545_f491_4f6c_dd1d);
    // Sizes that are not multiples of 8 (lanes), 4 (column groups) or 2048 (chunks), and a
    // GLM longer than two chunks so the threaded path splits it.
    let (n, k) = (5003, 7);
    let glm = format!(
        r#"{{"N": {n}, "K": {k}, "X": {}, "y": {}, "w": {}}}"#,
        r.matrix(n, k),
        r.bits(n),
        r.vec(n, 3.0)
    );
    let (n2, j) = (4901, 37);
    let groups: Vec<String> = (0..n2).map(|i| ((i * 7919) % j + 1).to_string()).collect();
    let hier = format!(
        r#"{{"N": {n2}, "J": {j}, "g": [{}], "x": {}, "y": {}}}"#,
        groups.join(","),
        r.vec(n2, 2.0),
        r.vec(n2, 4.0)
    );
    let (n3, d, h) = (1031, 5, 13);
    let bnn = format!(
        r#"{{"N": {n3}, "D": {d}, "H": {h}, "X": {}, "y": {}}}"#,
        r.matrix(n3, d),
        r.bits(n3)
    );
    let (n4, k4, m4) = (523, 6, 9);
    let products = format!(
        r#"{{"N": {n4}, "K": {k4}, "M": {m4}, "y": {}}}"#,
        r.vec(n4, 1.0)
    );
    vec![
        (
            "lanes",
            common::lanes_model::PROGRAM,
            common::lanes_model::data(),
        ),
        ("glm", GLM, glm),
        ("hierarchical", HIER, hier),
        ("bnn", BNN, bnn),
        ("products", PRODUCTS, products),
    ]
}

/// (log density, gradient) at three points, for one level and thread count.
fn evaluate(
    program: &str,
    data: &str,
    simd: SimdLevel,
    executor: ExecutorKind,
) -> Vec<(f64, Vec<f64>)> {
    let parsed = hazel_check::check_source("model.stan", program);
    let program = parsed.checked.expect("program checks");
    let data = hazel_data::DataFile::parse(data).expect("data parses");
    let options = CompileOptions {
        simd,
        executor,
        ..CompileOptions::default()
    };
    let model = compile(&program, &data, &options).expect("compiles");
    assert!(!model.is_dynamic());
    let dim = model.dim();
    let point = |p: usize| -> Vec<f64> {
        (0..dim)
            .map(|i| (((i * 37 + p * 11) % 101) as f64 / 101.0 - 0.5) * 0.8)
            .collect()
    };
    if let ExecutorKind::Batched { .. } = executor {
        // The three points in one batch call (the lane-aware rules run with 3 lanes).
        let qs: Vec<f64> = (0..3).flat_map(point).collect();
        let mut ws: Vec<_> = (0..3).map(|_| model.new_workspace()).collect();
        let mut grads = vec![0.0; 3 * dim];
        let mut out = vec![Ok(0.0), Ok(0.0), Ok(0.0)];
        model.log_density_gradient_batch(&mut ws, &qs, &mut grads, &mut out);
        return out
            .into_iter()
            .zip(grads.chunks(dim))
            .map(|(lp, g)| (lp.expect("evaluates"), g.to_vec()))
            .collect();
    }
    let mut ws = model.new_workspace();
    (0..3)
        .map(|p| {
            let q = point(p);
            let mut grad = vec![0.0; dim];
            let lp = model
                .log_density_gradient(&mut ws, &q, &mut grad)
                .expect("evaluates");
            (lp, grad)
        })
        .collect()
}

#[test]
fn every_simd_level_and_thread_count_gives_the_reference_bits() {
    let levels = SimdLevel::available();
    eprintln!("simd levels available here: {levels:?}");
    assert!(levels.contains(&SimdLevel::Sse2));
    for (name, program, data) in cases() {
        let reference = evaluate(program, &data, SimdLevel::Sse2, ExecutorKind::Serial);
        for &level in levels.iter().chain([&SimdLevel::Auto]) {
            let executors = [
                ExecutorKind::Serial,
                ExecutorKind::Threaded { threads: 2 },
                ExecutorKind::Batched { lanes: 3 },
            ];
            for executor in executors {
                let got = evaluate(program, &data, level, executor);
                for (p, ((lp, g), (lp_ref, g_ref))) in got.iter().zip(&reference).enumerate() {
                    assert!(lp.is_finite(), "{name}: lp {lp}");
                    assert_eq!(
                        lp.to_bits(),
                        lp_ref.to_bits(),
                        "{name} point {p}: log density {lp} with {level:?}, {executor:?}; \
                         reference {lp_ref}"
                    );
                    let differ: Vec<usize> = (0..g.len())
                        .filter(|&i| g[i].to_bits() != g_ref[i].to_bits())
                        .collect();
                    assert!(
                        differ.is_empty(),
                        "{name} point {p}: {} gradient components differ with {level:?}, \
                         {executor:?} (first: {:?})",
                        differ.len(),
                        differ.first()
                    );
                }
            }
        }
    }
}

/// The kernels one by one, against plain scalar loops written here with the documented
/// shape, on lengths around the lane, group and chunk boundaries, at every level.
#[test]
fn kernels_match_the_documented_fixed_shape_at_every_level() {
    use hazel_graph::kernels;
    use hazel_graph::simd::SimdLevel as L;
    let mut r = Xorshift(7);
    // Reference chunked 8-lane sum/dot, written independently of the kernels.
    let reference_dot = |a: &[f64], b: &[f64]| {
        let mut total = 0.0;
        let mut start = 0;
        while start < a.len() {
            let end = (start + kernels::CHUNK).min(a.len());
            let mut lanes = [0.0f64; 8];
            let n8 = start + (end - start) / 8 * 8;
            for i in start..n8 {
                lanes[(i - start) % 8] += a[i] * b[i];
            }
            let mut s = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3]))
                + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
            for i in n8..end {
                s += a[i] * b[i];
            }
            total += s;
            start = end;
        }
        total
    };
    for n in [0, 1, 7, 8, 9, 31, 2047, 2048, 2049, 6001] {
        let a: Vec<f64> = (0..n).map(|_| r.centred()).collect();
        let b: Vec<f64> = (0..n).map(|_| r.centred()).collect();
        let ones = vec![1.0; n];
        for level in L::available() {
            let isa = level.resolve().expect("available");
            assert_eq!(
                kernels::dot(isa, &a, &b).to_bits(),
                reference_dot(&a, &b).to_bits(),
                "dot n={n} {level:?}"
            );
            assert_eq!(
                kernels::chunked_sum(isa, &a).to_bits(),
                reference_dot(&a, &ones).to_bits(),
                "sum n={n} {level:?}"
            );
        }
    }
    // Blocked matrix × matrix: column j has the bits of the matrix × vector of column j,
    // which adds the products over the inner index in order (then the bias, when there is one).
    // The shapes cover groups of 4 columns, leftover columns and more than one row block.
    for (n, k, m) in [
        (1, 1, 1),
        (5, 3, 4),
        (21, 4, 13),
        (513, 7, 9),
        (1100, 5, 16),
    ] {
        let a: Vec<f64> = (0..n * k).map(|_| r.centred()).collect();
        let b: Vec<f64> = (0..k * m).map(|_| r.centred()).collect();
        let mut by_column = vec![0.0; n * m];
        for j in 0..m {
            for i in 0..n {
                let mut s = 0.0;
                for l in 0..k {
                    s += a[l * n + i] * b[j * k + l];
                }
                by_column[j * n + i] = s;
            }
        }
        let mut blocked = vec![f64::NAN; n * m];
        kernels::matmul(&a, &b, None, n, k, m, &mut blocked);
        assert!(
            blocked
                .iter()
                .zip(&by_column)
                .all(|(x, y)| x.to_bits() == y.to_bits()),
            "matmul {n}x{k}x{m}"
        );
        let bias: Vec<f64> = (0..m).map(|_| r.centred()).collect();
        kernels::matmul(&a, &b, Some(&bias), n, k, m, &mut blocked);
        assert!(
            blocked
                .iter()
                .zip(&by_column)
                .enumerate()
                .all(|(i, (x, y))| x.to_bits() == (y + bias[i / n]).to_bits()),
            "matmul + bias {n}x{k}x{m}"
        );
        let mut mv = vec![f64::NAN; n];
        kernels::matvec(&a, &b[..k], n, k, &mut mv);
        assert!(mv
            .iter()
            .zip(&by_column[..n])
            .all(|(x, y)| x.to_bits() == y.to_bits()));
    }
}
