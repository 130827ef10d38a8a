functions {
  real my_helper(real x) { return x; }
}
transformed data { real y = my_helpr(1.0); }
