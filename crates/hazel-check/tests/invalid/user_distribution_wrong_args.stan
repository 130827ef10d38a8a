functions {
  real foo_lpdf(real y, real mu) { return -square(y - mu); }
}
parameters { real mu; }
model { mu ~ foo(1, 2); }
