// A small model whose output has every shape the columnar formats must keep: a scalar, a
// vector, a matrix (written column-major in the CSV), a bounded vector and integer
// generated quantities.
data {
  int<lower=0> N;
  vector[N] y;
}
parameters {
  real mu;
  matrix[2, 3] B;
  vector<lower=0>[2] s;
}
model {
  mu ~ normal(0, 1);
  to_vector(B) ~ normal(0, 1);
  s ~ exponential(1);
  y ~ normal(mu, 1);
}
generated quantities {
  int k = poisson_rng(3);
  array[2] real z = {mu, 2 * mu};
}
