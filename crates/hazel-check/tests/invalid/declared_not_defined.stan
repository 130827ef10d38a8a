functions {
  real f(real x);
}
transformed data { real y = f(1.0); }
