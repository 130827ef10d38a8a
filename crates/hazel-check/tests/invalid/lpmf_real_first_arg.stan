functions {
  real foo_lpmf(real y, real mu) { return -y * mu; }
}
