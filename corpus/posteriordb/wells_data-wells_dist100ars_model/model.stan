data {
  int<lower=0> N;
  array[N] int<lower=0, upper=1> switched;
  vector[N] dist;
  vector[N] arsenic;
}
transformed data {
  vector[N] dist100 = dist / 100.0;
  matrix[N, 2] x = append_col(dist100, arsenic);
}
parameters {
  real alpha;
  vector[2] beta;
}
model {
  switched ~ bernoulli_logit_glm(x, alpha, beta);
}
