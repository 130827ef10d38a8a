data {
  int<lower=0> N;
  vector[N] x;
  vector[N] y;
  real xpred;
  real pmualpha;
  real psalpha;
  real pmubeta;
  real psbeta;
}
parameters {
  real alpha;
  real beta;
  real<lower=0> sigma;
}
model {
  alpha ~ normal(pmualpha, psalpha);
  beta ~ normal(pmubeta, psbeta);
  y ~ normal(alpha + beta * x, sigma);
}
