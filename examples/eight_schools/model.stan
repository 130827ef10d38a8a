data {
  int<lower=0> J;
  array[J] real y;
  array[J] real<lower=0> sigma;
}
parameters {
  vector[J] theta_trans;
  real mu;
  real<lower=0> tau;
}
transformed parameters {
  vector[J] theta = theta_trans * tau + mu;
}
model {
  theta_trans ~ normal(0, 1);
  mu ~ normal(0, 5);
  tau ~ cauchy(0, 5);
  y ~ normal(theta, sigma);
}
