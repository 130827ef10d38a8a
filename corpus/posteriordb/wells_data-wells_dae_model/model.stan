data {
  int<lower=0> N;
  array[N] int<lower=0, upper=1> switched;
  vector[N] dist;
  vector[N] arsenic;
  vector[N] educ;
}
transformed data {
  vector[N] dist100 = dist / 100.0;
  vector[N] educ4 = educ / 4;
  matrix[N, 3] x = append_col(append_col(dist100, arsenic), educ4);
}
parameters {
  real alpha;
  vector[3] beta;
}
model {
  switched ~ bernoulli_logit_glm(x, alpha, beta);
}
