// bounded.stan on the same unconstrained coordinates with the constraining transforms
// applied by hand and no Jacobian (BridgeStan's jacobian=False).
data {
  int<lower=0> N;
  vector[N] y;
}
parameters {
  real sigma_u;
  real mu_u;
  vector[2] w_u;
}
model {
  real sigma = lower_bound_constrain(sigma_u, 0);
  real mu = lower_upper_bound_constrain(mu_u, -1, 2);
  vector[3] w = simplex_constrain(w_u);
  sigma ~ gamma(2, 1);
  mu ~ normal(0, 1);
  w ~ dirichlet([2, 3, 4]');
  y ~ normal(mu + w[1], sigma);
}
