functions {
  real scale(data real x, real y) { return x * y; }
}
parameters { real mu; }
model { real s = scale(mu, 2); mu ~ normal(0, 1); }
