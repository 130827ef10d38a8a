// Poisson counts with independent gamma-distributed rates (one rate per unit).
// The prior is the field report's Turing `filldist(Gamma(6.5, 2.25), 10)`. Distributions.jl's
// `Gamma(α, θ)` is shape α and scale θ; Stan's gamma takes (shape, rate), and rate = 1/scale,
// so the Stan prior is gamma(6.5, 1 / 2.25): prior mean 6.5 * 2.25 = 14.625.
data {
  int<lower=1> N;                       // number of units (rates)
  int<lower=1> J;                       // observations per unit
  array[N, J] int<lower=0> y;           // counts, y[i, j] ~ Poisson(rho[i])
}
parameters {
  vector<lower=0>[N] rho;
}
model {
  rho ~ gamma(6.5, 1 / 2.25);
  for (i in 1:N) {
    y[i] ~ poisson(rho[i]);
  }
}
