functions {
  real exp(real x) { return x; }
  real reduce_sum(real x) { return x; }
  real exp(real x, real y) { return x + y; }
}
