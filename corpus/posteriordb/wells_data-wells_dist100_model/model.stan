data {
  int<lower=0> N;
  array[N] int<lower=0, upper=1> switched;
  vector[N] dist;
}
transformed data {
  vector[N] dist100 = dist / 100.0;
  matrix[N, 1] x = to_matrix(dist100);
}
parameters {
  real alpha;
  vector[1] beta;
}
model {
  switched ~ bernoulli_logit_glm(x, alpha, beta);
}
