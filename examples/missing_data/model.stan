// Linear regression in which some outcomes are missing. The observed outcomes are data; the
// missing ones are parameters with the same regression model, so their posterior is the
// posterior predictive distribution at their covariates.
data {
  int<lower=0> N_obs;
  int<lower=0> N_mis;
  array[N_obs] int<lower=1, upper=N_obs + N_mis> ii_obs;   // positions of the observed outcomes
  array[N_mis] int<lower=1, upper=N_obs + N_mis> ii_mis;   // positions of the missing outcomes
  vector[N_obs + N_mis] x;                                 // covariate, known for every position
  vector[N_obs] y_obs;
}
transformed data {
  int<lower=0> N = N_obs + N_mis;
}
parameters {
  real alpha;
  real beta;
  real<lower=0> sigma;
  vector[N_mis] y_mis;
}
transformed parameters {
  vector[N] y;                 // the completed outcome vector
  y[ii_obs] = y_obs;
  y[ii_mis] = y_mis;
}
model {
  alpha ~ normal(0, 10);
  beta ~ normal(0, 10);
  sigma ~ normal(0, 5);
  y ~ normal(alpha + beta * x, sigma);
}
