data {
  int<lower=0> N;
  array[N] int<lower=0, upper=1> switched;
  vector[N] dist;
  vector[N] arsenic;
}
transformed data {
  vector[N] c_dist100 = (dist - mean(dist)) / 100.0;
  vector[N] c_arsenic = arsenic - mean(arsenic);
  vector[N] inter = c_dist100 .* c_arsenic;
  matrix[N, 3] x = append_col(append_col(c_dist100, c_arsenic), inter);
}
parameters {
  real alpha;
  vector[3] beta;
}
model {
  switched ~ bernoulli_logit_glm(x, alpha, beta);
}
