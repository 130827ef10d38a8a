// bounded.stan with the constants kept and no Jacobian (propto=False, jacobian=False).
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
  target += gamma_lpdf(sigma | 2, 1);
  target += normal_lpdf(mu | 0, 1);
  target += dirichlet_lpdf(w | [2, 3, 4]');
  target += normal_lpdf(y | mu + w[1], sigma);
}
