data {
  int<lower=1> n;
  int<lower=0> k;
}
parameters {
  real<lower=0, upper=1> theta;
  real<lower=0, upper=1> thetaprior;
}
model {
  theta ~ beta(1, 1);
  thetaprior ~ beta(1, 1);
  k ~ binomial(n, theta);
}
generated quantities {
  int<lower=0> postpredk = binomial_rng(n, theta);
  int<lower=0> priorpredk = binomial_rng(n, thetaprior);
}
