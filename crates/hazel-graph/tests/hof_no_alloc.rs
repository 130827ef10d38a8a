//! Steady-state gradient evaluation of static models using hmm_marginal and reduce_sum
//! allocates nothing (the hmm_marginal op's forward and backward passes work in the op's
//! workspace scratch). Allocations are counted on the evaluating thread only
//! (`counting_alloc`).

use hazel_density::LogDensity;
use hazel_graph::{compile, CompileOptions};

mod counting_alloc;

#[global_allocator]
static GLOBAL: counting_alloc::CountingAlloc = counting_alloc::CountingAlloc;

const PROGRAM: &str = r#"
functions {
  real part_lpdf(array[] real ys, int s, int e, vector mu, real sigma) {
    return normal_lupdf(ys | mu[s:e], sigma);
  }
}
data { int K; int N; array[N] real y; }
parameters { ordered[K] m; array[K] simplex[K] g; simplex[K] rho; real<lower=0> s; vector[N] mu; }
model {
  matrix[K, N] lo;
  matrix[K, K] G;
  for (k in 1:K) { G[k] = g[k]'; for (n in 1:N) lo[k, n] = normal_lpdf(y[n] | m[k], s); }
  m ~ normal(0, 3);
  s ~ lognormal(0, 1);
  mu ~ normal(0, 1);
  target += hmm_marginal(lo, G, rho);
  target += reduce_sum(part_lupdf, y, 1, mu, s);
}
"#;

#[test]
fn hmm_marginal_and_reduce_sum_evaluate_without_allocating() {
    let n = 40;
    let y: Vec<String> = (0..n)
        .map(|i| format!("{}", ((i * 37) % 11) as f64 / 3.0 - 1.5))
        .collect();
    let data = format!(r#"{{"K": 3, "N": {n}, "y": [{}]}}"#, y.join(","));
    let parsed = hazel_check::check_source("model.stan", PROGRAM);
    let program = parsed.checked.expect("checks");
    let data = hazel_data::DataFile::parse(&data).expect("data");
    let model = compile(&program, &data, &CompileOptions::default()).expect("compiles");
    assert!(!model.is_dynamic());
    let dim = model.dim();
    let q: Vec<f64> = (0..dim)
        .map(|i| ((i * 13) % 7) as f64 / 7.0 - 0.4)
        .collect();
    let mut ws = model.new_workspace();
    let mut g = vec![0.0; dim];
    for _ in 0..3 {
        model
            .log_density_gradient(&mut ws, &q, &mut g)
            .expect("evaluates");
    }
    counting_alloc::start();
    for _ in 0..50 {
        model
            .log_density_gradient(&mut ws, &q, &mut g)
            .expect("evaluates");
    }
    let n = counting_alloc::stop();
    assert_eq!(n, 0, "{n} allocations in 50 evaluations");
}
