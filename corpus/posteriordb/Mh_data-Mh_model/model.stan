data {
  int<lower=0> M;
  int<lower=0> T;
  array[M] int<lower=0, upper=T> y;
}
transformed data {
  int<lower=0> C = 0;
  for (i in 1:M) {
    if (y[i] > 0) {
      C += 1;
    }
  }
}
parameters {
  real<lower=0, upper=1> omega;
  real<lower=0, upper=1> mean_p;
  real<lower=0, upper=5> sigma;
  vector[M] eps_raw;
}
transformed parameters {
  vector[M] eps = logit(mean_p) + sigma * eps_raw;
}
model {
  eps_raw ~ normal(0, 1);
  for (i in 1:M) {
    if (y[i] > 0) {
      target += bernoulli_lpmf(1 | omega) + binomial_logit_lpmf(y[i] | T, eps[i]);
    } else {
      target += log_sum_exp(bernoulli_lpmf(1 | omega) + binomial_logit_lpmf(0 | T, eps[i]),
                            bernoulli_lpmf(0 | omega));
    }
  }
}
generated quantities {
  array[M] int<lower=0, upper=1> z;
  int<lower=C> N;
  for (i in 1:M) {
    if (y[i] > 0) {
      z[i] = 1;
    } else {
      real qT = inv_logit(-eps[i]) ^ T;
      z[i] = bernoulli_rng(omega * qT / (omega * qT + (1 - omega)));
    }
  }
  N = sum(z);
}
