functions {
  real f(real x);
  int f(real x) { return 1; }
}
