data {
  int<lower=0> N;
  array[N] real x;
  array[N] real Y;
}
parameters {
  real alpha;
  real beta;
  real<lower=0.5, upper=1> lambda;
  real<lower=0> tau;
}
transformed parameters {
  real sigma = 1 / sqrt(tau);
  real U3 = logit(lambda);
}
model {
  for (i in 1:N) {
    Y[i] ~ normal(alpha - beta * pow(lambda, x[i]), sigma);
  }
  alpha ~ normal(0.0, 1000);
  beta ~ normal(0.0, 1000);
  lambda ~ uniform(0.5, 1);
  tau ~ gamma(0.0001, 0.0001);
}
