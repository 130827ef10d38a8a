data {
  int<lower=0> nobs;
  int<lower=0> nmis;
  int<lower=0> nyear;
  int<lower=0> nsite;
  array[nobs] int<lower=0> obs;
  array[nobs] int<lower=0> obsyear;
  array[nobs] int<lower=0> obssite;
  array[nmis] int<lower=0> misyear;
  array[nmis] int<lower=0> missite;
}
parameters {
  vector[nsite] alpha;
  real mu_alpha;
  real<lower=0, upper=5> sd_alpha;
}
transformed parameters {
  matrix[nyear, nsite] log_lambda;
  for (j in 1:nsite) {
    for (i in 1:nyear) {
      log_lambda[i, j] = alpha[j];
    }
  }
}
model {
  alpha ~ normal(mu_alpha, sd_alpha);
  mu_alpha ~ normal(0, 10);
  for (i in 1:nobs) {
    obs[i] ~ poisson_log(log_lambda[obsyear[i], obssite[i]]);
  }
}
generated quantities {
  array[nmis] int<lower=0> mis;
  for (i in 1:nmis) {
    mis[i] = poisson_log_rng(log_lambda[misyear[i], missite[i]]);
  }
}
