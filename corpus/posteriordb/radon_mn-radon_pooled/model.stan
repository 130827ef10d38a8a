data {
  int<lower=0> N;
  vector[N] floor_measure;
  vector[N] log_radon;
}
parameters {
  real alpha;
  real beta;
  real<lower=0> sigma_y;
}
model {
  sigma_y ~ normal(0, 1);
  alpha ~ normal(0, 10);
  beta ~ normal(0, 10);
  target += normal_lpdf(log_radon | alpha + beta * floor_measure, sigma_y);
}
