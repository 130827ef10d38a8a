data { int N; vector[N] y; }
parameters { real mu; }
model {
  y ~ normal(mu, sigma);
  mu ~ normall(0, 1);
  N = 3;
}
