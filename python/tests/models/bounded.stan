// A small model whose densities without constants and without Jacobians have variant
// programs (bounded_*.stan) for the fixtures.
data {
  int<lower=0> N;
  vector[N] y;
}
parameters {
  real<lower=0> sigma;
  real<lower=-1, upper=2> mu;
  simplex[3] w;
}
model {
  sigma ~ gamma(2, 1);
  mu ~ normal(0, 1);
  w ~ dirichlet([2, 3, 4]');
  y ~ normal(mu + w[1], sigma);
}
