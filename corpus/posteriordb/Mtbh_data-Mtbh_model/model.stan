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
  vector<lower=0, upper=1>[T] mean_p;
  real gamma;
  real<lower=0, upper=3> sigma;
  vector[M] eps_raw;
}
transformed parameters {
  vector[M] eps = sigma * eps_raw;
  vector[T] alpha = logit(mean_p);
  matrix[M, T] logit_p;
  logit_p[ : , 1] = alpha[1] + eps;
  for (j in 2:T) {
    for (i in 1:M) {
      logit_p[i, j] = alpha[j] + eps[i] + gamma * y[i, j - 1];
    }
  }
}
model {
  gamma ~ normal(0, 10);
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
