data {
  int<lower=0> J;
  int<lower=0> N;
  array[N] int<lower=1, upper=J> county_idx;
  vector[N] floor_measure;
  vector[N] log_radon;
}
parameters {
  vector[J] alpha;
  real beta;
  real<lower=0> sigma_y;
}
model {
  sigma_y ~ normal(0, 1);
  alpha ~ normal(0, 10);
  beta ~ normal(0, 10);
  target += normal_lpdf(log_radon | alpha[county_idx] + beta * floor_measure, sigma_y);
}
