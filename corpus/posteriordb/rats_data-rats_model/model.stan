data {
  int<lower=0> N;
  int<lower=0> Npts;
  array[Npts] int<lower=0> rat;
  array[Npts] real x;
  array[Npts] real y;
  real xbar;
}
parameters {
  array[N] real alpha;
  array[N] real beta;
  real mu_alpha;
  real mu_beta;
  real<lower=0> sigma_y;
  real<lower=0> sigma_alpha;
  real<lower=0> sigma_beta;
}
model {
  mu_alpha ~ normal(0, 100);
  mu_beta ~ normal(0, 100);
  alpha ~ normal(mu_alpha, sigma_alpha);
  beta ~ normal(mu_beta, sigma_beta);
  for (n in 1:Npts) {
    int irat = rat[n];
    y[n] ~ normal(alpha[irat] + beta[irat] * (x[n] - xbar), sigma_y);
  }
}
generated quantities {
  real alpha0 = mu_alpha - xbar * mu_beta;
}
