// bounded.stan with every `~` written as `target += …_lpdf`: its density keeps the constants
// (BridgeStan's propto=False).
data {
  int<lower=0> N;
  vector[N] y;
}
parameters {
  real<lower=0> sigma;
  real<lower=-1, upper=2> mu;
  simplex[3] w;
}
model {
  target += gamma_lpdf(sigma | 2, 1);
  target += normal_lpdf(mu | 0, 1);
  target += dirichlet_lpdf(w | [2, 3, 4]');
  target += normal_lpdf(y | mu + w[1], sigma);
}
