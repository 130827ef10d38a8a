// Normal observations truncated to [1, 2]: each y[n] has density
// normal(y | mu, sigma) / (Phi((2 - mu) / sigma) - Phi((1 - mu) / sigma)) on [1, 2].
// Priors (our choice; weakly informative on the scale of the data): mu ~ normal(1.5, 1),
// sigma ~ half-normal(0, 1).
data {
  int<lower=0> N;
  array[N] real<lower=1, upper=2> y;
}
parameters {
  real mu;
  real<lower=0> sigma;
}
model {
  mu ~ normal(1.5, 1);
  sigma ~ normal(0, 1);
  for (n in 1:N) {
    y[n] ~ normal(mu, sigma) T[1, 2];
  }
}
