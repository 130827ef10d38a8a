// Generated quantities that draw random numbers: param_constrain's `rng`.
parameters {
  real mu;
  real<lower=0> sigma;
}
model {
  mu ~ normal(1, 2);
  sigma ~ gamma(3, 2);
}
generated quantities {
  real y_rep = normal_rng(mu, sigma);
  int coin = bernoulli_rng(0.25);
}
