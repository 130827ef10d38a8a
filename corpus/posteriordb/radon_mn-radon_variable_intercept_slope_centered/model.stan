data {
  int<lower=0> J;
  int<lower=0> N;
  array[N] int<lower=1, upper=J> county_idx;
  vector[N] floor_measure;
  vector[N] log_radon;
}
parameters {
  real<lower=0> sigma_y;
  real<lower=0> sigma_alpha;
  real<lower=0> sigma_beta;
  vector[J] alpha;
  vector[J] beta;
  real mu_alpha;
  real mu_beta;
}
model {
  sigma_y ~ normal(0, 1);
  sigma_beta ~ normal(0, 1);
  sigma_alpha ~ normal(0, 1);
  mu_alpha ~ normal(0, 10);
  mu_beta ~ normal(0, 10);
  alpha ~ normal(mu_alpha, sigma_alpha);
  beta ~ normal(mu_beta, sigma_beta);
  target += normal_lpdf(log_radon | alpha[county_idx] + floor_measure .* beta[county_idx], sigma_y);
}
