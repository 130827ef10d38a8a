data {
  int<lower=1> n;
  vector[n] y;
  vector[n] x;
  vector[n] w;
}
transformed data {
  real mu_lower = mean(y) - 3 * sd(y);
  real mu_upper = mean(y) + 3 * sd(y);
}
parameters {
  vector<lower=mu_lower, upper=mu_upper>[n] mu;
  vector[n] seasonal;
  real beta;
  real lambda;
  positive_ordered[3] sigma;
}
transformed parameters {
  vector[n] yhat = mu + beta * x + lambda * w;
}
model {
  for (t in 12:n) {
    seasonal[t] ~ normal(-sum(seasonal[(t - 11):(t - 1)]), sigma[1]);
  }
  for (t in 2:n) {
    mu[t] ~ normal(mu[t - 1], sigma[2]);
  }
  for (t in 1:n) {
    y[t] ~ normal(yhat[t] + seasonal[t], sigma[3]);
  }
  sigma ~ student_t(4, 0, 1);
}
