functions {
  real f(real x) { return x; }
}
data { real f; }
