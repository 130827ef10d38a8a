data {
  int<lower=0> J;
  int<lower=0> N;
  array[N] int<lower=1, upper=J> county_idx;
  vector[N] floor_measure;
  vector[N] log_radon;
}
parameters {
  real alpha;
  vector[J] beta_raw;
  real mu_beta;
  real<lower=0> sigma_beta;
  real<lower=0> sigma_y;
}
transformed parameters {
  vector[J] beta = mu_beta + sigma_beta * beta_raw;
}
model {
  alpha ~ normal(0, 10);
  sigma_y ~ normal(0, 1);
  sigma_beta ~ normal(0, 1);
  mu_beta ~ normal(0, 10);
  beta_raw ~ normal(0, 1);
  target += normal_lpdf(log_radon | alpha + floor_measure .* beta[county_idx], sigma_y);
}
