// Control flow that reads a parameter: every evaluation re-traces the program (the batched
// evaluation goes point by point).
parameters {
  real x;
  real<lower=0> s;
}
model {
  if (x > 0) {
    x ~ normal(0, s);
  } else {
    x ~ normal(0, 2 * s);
  }
  s ~ lognormal(0, 0.5);
}
