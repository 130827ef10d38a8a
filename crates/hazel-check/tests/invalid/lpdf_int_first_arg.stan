functions {
  real foo_lpdf(int y, real mu) { return -y * mu; }
}
