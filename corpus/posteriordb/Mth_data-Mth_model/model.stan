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
  array[T] real<lower=0, upper=1> mean_p;
  real<lower=0, upper=5> sigma;
  vector[M] eps_raw;
}
transformed parameters {
  vector[M] eps = sigma * eps_raw;
  array[T] real mean_lp = logit(mean_p);
  matrix[M, T] logit_p;
  for (j in 1:T) {
    logit_p[ : , j] = mean_lp[j] + eps;
  }
}
model {
  eps_raw ~ normal(0, 1);
  for (i in 1:M) {
    if (s[i] > 0) {
      target += bernoulli_lpmf(1 | omega) + bernoulli_logit_lpmf(y[i] | logit_p[i]');
    } else {
      target += log_sum_exp(bernoulli_lpmf(1 | omega) + bernoulli_logit_lpmf(y[i] | logit_p[i]'),
                            bernoulli_lpmf(0 | omega));
    }
  }
}
generated quantities {
  matrix<lower=0, upper=1>[M, T] p = inv_logit(logit_p);
  array[M] int<lower=0, upper=1> z;
  int<lower=C> N;
  for (i in 1:M) {
    if (s[i] > 0) {
      z[i] = 1;
    } else {
      real pr = prod(rep_row_vector(1.0, T) - p[i]);
      z[i] = bernoulli_rng(omega * pr / (omega * pr + (1 - omega)));
    }
  }
  N = sum(z);
}
