data {
  int<lower=0> N;
  int<lower=0> N_edges;
  array[N_edges] int<lower=1, upper=N> node1;
  array[N_edges] int<lower=1, upper=N> node2;
  array[N] int<lower=0> y;
  vector<lower=0>[N] E;
  real<lower=0> scaling_factor;
}
transformed data {
  vector[N] log_E = log(E);
}
parameters {
  real beta0;
  real<lower=0> sigma;
  real<lower=0, upper=1> rho;
  vector[N] theta;
  vector[N] phi;
}
transformed parameters {
  vector[N] convolved_re = sqrt(1 - rho) * theta + sqrt(rho / scaling_factor) * phi;
}
model {
  y ~ poisson_log(log_E + beta0 + convolved_re * sigma);
  target += -0.5 * dot_self(phi[node1] - phi[node2]);
  beta0 ~ normal(0, 1);
  theta ~ normal(0, 1);
  sigma ~ normal(0, 1);
  rho ~ beta(0.5, 0.5);
  sum(phi) ~ normal(0, 0.001 * N);
}
generated quantities {
  real log_precision = -2.0 * log(sigma);
  real logit_rho = log(rho / (1.0 - rho));
  vector[N] eta = log_E + beta0 + convolved_re * sigma;
  vector[N] mu = exp(eta);
}
