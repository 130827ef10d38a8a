data {
  int<lower=0> M;
  int<lower=0> T;
  array[M, T] int<lower=0, upper=1> y;
}
transformed data {
  array[M] int s;
  int C = 0;
  for (i in 1:M) {
    s[i] = sum(y[i]);
    if (s[i] > 0) {
      C += 1;
    }
  }
}
parameters {
  real<lower=0, upper=1> omega;
  real<lower=0, upper=1> p;
  real<lower=0, upper=1> c;
}
transformed parameters {
  array[M] vector<lower=0, upper=1>[T] p_eff;
  for (i in 1:M) {
    p_eff[i, 1] = p;
    for (j in 2:T) {
      p_eff[i, j] = (1 - y[i, j - 1]) * p + y[i, j - 1] * c;
    }
  }
}
model {
  for (i in 1:M) {
    if (s[i] > 0) {
      target += bernoulli_lpmf(1 | omega) + bernoulli_lpmf(y[i] | p_eff[i]);
    } else {
      target += log_sum_exp(bernoulli_lpmf(1 | omega) + bernoulli_lpmf(y[i] | p_eff[i]),
                            bernoulli_lpmf(0 | omega));
    }
  }
}
generated quantities {
  real omega_nd = (omega * (1 - p) ^ T) / (omega * (1 - p) ^ T + (1 - omega));
  int<lower=C, upper=M> N = C + binomial_rng(M - C, omega_nd);
  real trap_response = c - p;
}
