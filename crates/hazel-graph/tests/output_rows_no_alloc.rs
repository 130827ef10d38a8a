//! Writing output rows from a compiled output plan allocates nothing once the workspace has
//! written one row: the forward sweep runs in the workspace's buffers and the columns are
//! copied out of them. The shared counting allocator (`counting_alloc`) counts the test
//! thread's allocations only.

use hazel_density::{LogDensity, Model, StreamRng};
use hazel_graph::{compile, CompileOptions};
use hazel_rng::Purpose;
mod counting_alloc;

#[global_allocator]
static GLOBAL: counting_alloc::CountingAlloc = counting_alloc::CountingAlloc;

/// Allocations this thread makes while `f` runs.
fn count_allocations(f: impl FnOnce()) -> usize {
    counting_alloc::start();
    f();
    counting_alloc::stop()
}

/// Hierarchical regression with vector transformed parameters and generated quantities
/// without rngs (the whole row is static).
const PROGRAM: &str = r#"
data { int J; int N; array[N] int<lower=1, upper=J> g; vector[N] x; vector[N] y; }
parameters {
  real<lower=0> sigma; real<lower=0> tau; vector[J] a_raw; real mu; simplex[3] w;
}
transformed parameters {
  vector[J] a = mu + tau * a_raw;
  vector[N] eta = a[g] + x;
}
model { y ~ normal(eta, sigma); a_raw ~ std_normal(); }
generated quantities {
  vector[N] resid = y - eta;
  real ll = normal_lpdf(y | eta, sigma);
  real w1 = w[1] * sum(a);
}
"#;

#[test]
fn planned_rows_allocate_nothing() {
    let (j, n) = (10usize, 200usize);
    let g: Vec<String> = (0..n).map(|i| (i % j + 1).to_string()).collect();
    let x: Vec<String> = (0..n).map(|i| format!("{}", i as f64 / 100.0)).collect();
    let y: Vec<String> = (0..n)
        .map(|i| format!("{}", (i % 7) as f64 - 3.0))
        .collect();
    let data = format!(
        r#"{{"J": {j}, "N": {n}, "g": [{}], "x": [{}], "y": [{}]}}"#,
        g.join(","),
        x.join(","),
        y.join(",")
    );
    let parsed = hazel_check::check_source("m.stan", PROGRAM);
    let program = parsed.checked.as_ref().expect("program checks");
    let data = hazel_data::DataFile::parse(&data).expect("data");
    let model = compile(program, &data, &CompileOptions::default()).expect("compile");
    assert_eq!(
        model.output_plan_split(),
        Some(false),
        "the row should be static"
    );
    let mut ws = model.new_workspace();
    let mut rng = StreamRng::new(1, 0, Purpose::GeneratedQuantities);
    let mut out = vec![0.0; model.output_names().len()];
    let points: Vec<Vec<f64>> = (0..50)
        .map(|k| {
            (0..model.dim())
                .map(|i| ((i * 31 + k * 17) % 41) as f64 / 20.0 - 1.0)
                .collect()
        })
        .collect();
    model
        .write_output(&mut ws, &points[0], &mut rng, &mut out)
        .expect("warm-up row");
    let mut results = Vec::with_capacity(points.len());
    let n_alloc = count_allocations(|| {
        for q in &points {
            results.push(model.write_output(&mut ws, q, &mut rng, &mut out).is_ok());
        }
    });
    assert!(results.iter().all(|&ok| ok), "every row is written");
    assert_eq!(
        n_alloc,
        0,
        "allocations while writing {} rows",
        points.len()
    );
}
