functions {
  real f(real x) { return x; }
  real f(real y) { return 2 * y; }
}
