data {
  int<lower=0> N;
  array[N] int<lower=0, upper=1> switched;
  vector[N] dist;
  vector[N] arsenic;
}
transformed data {
  vector[N] dist100 = dist / 100.0;
  vector[N] inter = dist100 .* arsenic;
  matrix[N, 3] x = append_col(append_col(dist100, arsenic), inter);
}
parameters {
  real alpha;
  vector[3] beta;
}
model {
  switched ~ bernoulli_logit_glm(x, alpha, beta);
}
