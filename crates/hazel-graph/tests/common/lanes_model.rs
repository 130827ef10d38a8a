//! A model whose loops a lane region runs (`tests/lanes.rs`, `tests/simd_levels.rs`).

/// A rating-scale likelihood (science_irt's), a body with products, quotients and
/// broadcasts on either side, a running sum of a slice of a parameter vector (from outside
/// the iteration), `log_sum_exp`s, and constants that differ per iteration, and mixtures:
/// one-element normal densities of data and of parameters in a two-component `log_mix`
/// (`log_sum_exp` of two), and short densities.
pub const PROGRAM: &str = r#"
functions {
  real rsm(int y, real theta, real beta, vector kappa) {
    vector[rows(kappa) + 1] unsummed = append_row(rep_vector(0, 1), theta - beta - kappa);
    vector[rows(kappa) + 1] probs = softmax(cumulative_sum(unsummed));
    return categorical_lpmf(y + 1 | probs);
  }
  real mixed(real a, real b, vector v, vector t, real c) {
    vector[3] w = (a * v) ./ (v + b);
    vector[3] u = w / b - a;
    vector[3] r = c ./ v - v * b;
    return log_sum_exp(cumulative_sum(u)) + a / b - a / c + log_sum_exp(r)
           + log_sum_exp(cumulative_sum(t));
  }
}
data {
  int N;
  int J;
  int I;
  array[N] int<lower=1, upper=J> jj;
  array[N] int<lower=1, upper=I> ii;
  array[N] int<lower=0, upper=3> y;
  array[N, 3] int<lower=0, upper=1> b;
}
parameters {
  vector[J] theta;
  vector<lower=0>[I] alpha;
  vector[I] beta;
  vector<lower=0.5>[3] kappa;
  real<lower=0> s;
  vector[N + 2] t;
  ordered[2] mu;
  vector<lower=0>[2] sd;
  real<lower=0, upper=1> w;
}
model {
  theta ~ normal(0, 1);
  alpha ~ lognormal(0, 0.5);
  beta ~ normal(0, 2);
  kappa ~ normal(1, 1);
  s ~ exponential(1);
  t ~ normal(0, 1);
  for (n in 1:N) {
    target += rsm(y[n], theta[jj[n]] * alpha[ii[n]], beta[ii[n]], kappa);
  }
  for (n in 1:N) {
    // Every operand differs between iterations (repeated ones would be shared by them).
    target += mixed(theta[jj[n]] * (1 + 0.01 * n), s + 0.25 * n, kappa * (1 + 0.001 * n),
                    t[n:(n + 2)], 1.5 + y[n]);
  }
  mu ~ normal(0, 2);
  sd ~ lognormal(0, 0.5);
  for (n in 1:N) {
    // (Data that differ per iteration: a density of repeated data would be one value,
    // shared by the iterations.)
    target += log_mix(w, normal_lpdf(t[n] | mu[1], sd[1]),
                      normal_lpdf(y[n] + 0.01 * n | mu[2], sd[2]));
  }
  for (n in 1:N) {
    // Short densities (capture–recapture rows): of a vector made in the iteration, and of a
    // parameter slice with a scalar made in the iteration and a shared one.
    vector[3] logit_p = t[n:(n + 2)] * (1 + 0.01 * n);
    target += log_sum_exp(log(w) + bernoulli_logit_lpmf(b[n] | logit_p),
                          log1m(w) + normal_lpdf(t[n:(n + 2)] | mu[1] + 0.01 * n, sd[1]));
  }
}
"#;

/// Data for [`PROGRAM`]: 61 responses (not a multiple of 8 lanes) of 9 persons to 4 items.
pub fn data() -> String {
    let n = 61;
    let list = |f: &dyn Fn(usize) -> usize| {
        (0..n)
            .map(|i| f(i).to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    format!(
        r#"{{"N": {n}, "J": 9, "I": 4, "jj": [{}], "ii": [{}], "y": [{}], "b": [{}]}}"#,
        list(&|i| i % 9 + 1),
        list(&|i| (i * 7) % 4 + 1),
        list(&|i| (i * 5 + i / 3) % 4),
        (0..n)
            .map(|i| format!("[{}, {}, {}]", i % 2, (i / 2) % 2, (i / 3) % 2))
            .collect::<Vec<_>>()
            .join(",")
    )
}
