functions {
  real f(real x) { return {x, x}; }
}
