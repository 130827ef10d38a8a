functions {
  real f(real x, vector v) { return x + sum(v); }
  real g_lpdf(real y, real mu) { return -square(y - mu); }
  vector rhs(real t, vector y, real k) { return -k * y; }
}
data {
  int N;
  array[N] int k;
  vector[N] y;
  matrix[N, 2] X;
  array[3] real ts;
  tuple(real, int) tp;
}
transformed data {
  real m = mean(y);
  array[2] int idx = {1, 2};
  vector[2] sub = y[idx];
  complex z = to_complex(1, 2);
}
parameters {
  real mu;
  real<lower=0> sigma;
  vector[2] beta;
  simplex[3] theta;
}
transformed parameters {
  vector[N] eta = X * beta + mu;
  array[3] vector[1] sol = ode_rk45(rhs, [1.0]', 0.0, ts, sigma);
}
model {
  for (n in 1:N) {
    if (k[n] > 0) {
      y[n] ~ normal(eta[n], sigma) T[-10, 10];
    } else {
      target += g_lpdf(y[n] | mu);
    }
  }
  k ~ poisson_log(eta);
  mu ~ g(f(m, sub));
  while (0) { break; }
}
generated quantities {
  array[N] real yrep = normal_rng(eta, sigma);
  real lp = normal_lpdf(y | eta, sigma);
  int c = categorical_rng(theta);
}
