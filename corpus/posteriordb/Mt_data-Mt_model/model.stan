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
  vector<lower=0, upper=1>[T] p;
}
model {
  for (i in 1:M) {
    if (s[i] > 0) {
      target += bernoulli_lpmf(1 | omega) + bernoulli_lpmf(y[i] | p);
    } else {
      target += log_sum_exp(bernoulli_lpmf(1 | omega) + bernoulli_lpmf(y[i] | p),
                            bernoulli_lpmf(0 | omega));
    }
  }
}
generated quantities {
  real pr = prod(1 - p);
  real omega_nd = (omega * pr) / (omega * pr + (1 - omega));
  int<lower=C> N = C + binomial_rng(M - C, omega_nd);
}
