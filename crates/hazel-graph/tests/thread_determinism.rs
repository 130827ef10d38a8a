//! Within-chain parallelism must not change a bit: the log density and gradient of a large
//! model are identical for 1, 2 and 4 threads per chain.

use hazel_density::LogDensity;
use hazel_graph::{compile, CompileOptions};

const PROGRAM: &str = r#"
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
  vector[N] eta;
}
model {
  vector[N] mu = alpha + X * beta;
  alpha ~ normal(0, 2);
  beta ~ student_t(4, 0, 1);
  sigma ~ exponential(1);
  eta ~ normal(0, 1);
  y ~ normal(mu + 0.1 * eta, sigma);
  z ~ bernoulli_logit(exp(0.1 * mu) - 1);
}
"#;

fn data_json(n: usize, k: usize) -> String {
    let mut rng = hazel_testdata::Xorshift(0x2545_f491_4f6c_dd1d);
    let mut next = || rng.centred();
    let x: Vec<String> = (0..n)
        .map(|_| {
            format!(
                "[{}]",
                (0..k)
                    .map(|_| format!("{:.6}", next()))
                    .collect::<Vec<_>>()
                    .join(",")
            )
        })
        .collect();
    let y: Vec<String> = (0..n).map(|_| format!("{:.6}", 3.0 * next())).collect();
    let z: Vec<String> = (0..n)
        .map(|_| if next() > 0.0 { "1".into() } else { "0".into() })
        .collect();
    format!(
        r#"{{"N": {n}, "K": {k}, "X": [{}], "y": [{}], "z": [{}]}}"#,
        x.join(","),
        y.join(","),
        z.join(",")
    )
}

#[test]
fn log_density_and_gradient_are_bit_identical_for_any_thread_count() {
    let n = 20_000;
    let k = 4;
    let parsed = hazel_check::check_source("model.stan", PROGRAM);
    let program = parsed.checked.expect("program parses");
    let data = hazel_data::DataFile::parse(&data_json(n, k)).expect("data parse");
    let mut results = Vec::new();
    for threads in [1, 2, 4] {
        let model = compile(
            &program,
            &data,
            &CompileOptions {
                seed: 1,
                executor: hazel_graph::ExecutorKind::with_threads(threads),
                ..Default::default()
            },
        )
        .expect("compiles");
        assert!(!model.is_dynamic());
        let dim = model.dim();
        let q: Vec<f64> = (0..dim)
            .map(|i| ((i * 37) % 101) as f64 / 101.0 - 0.5)
            .collect();
        let mut ws = model.new_workspace();
        let mut grad = vec![0.0; dim];
        let lp = model
            .log_density_gradient(&mut ws, &q, &mut grad)
            .expect("evaluates");
        // A second evaluation in the same workspace gives the same bits too.
        let mut grad2 = vec![0.0; dim];
        let lp2 = model
            .log_density_gradient(&mut ws, &q, &mut grad2)
            .expect("evaluates");
        assert_eq!(lp.to_bits(), lp2.to_bits());
        assert!(grad
            .iter()
            .zip(&grad2)
            .all(|(a, b)| a.to_bits() == b.to_bits()));
        results.push((threads, lp, grad));
    }
    let (_, lp1, g1) = &results[0];
    for (threads, lp, g) in &results[1..] {
        assert_eq!(
            lp.to_bits(),
            lp1.to_bits(),
            "log density differs with {threads} threads: {lp} vs {lp1}"
        );
        let diff = g
            .iter()
            .zip(g1)
            .filter(|(a, b)| a.to_bits() != b.to_bits())
            .count();
        assert_eq!(
            diff, 0,
            "{diff} gradient components differ with {threads} threads"
        );
    }
}
