functions {
  vector sho(real t, vector y, real theta) {
    vector[2] dydt;
    dydt[1] = y[2];
    dydt[2] = -y[1] - theta * y[2];
    return dydt;
  }
  matrix cov_exp(array[] real x, real alpha, real rho, real delta) {
    int N = size(x);
    matrix[N, N] K = gp_exp_quad_cov(x, alpha, rho);
    for (n in 1:N) K[n, n] = K[n, n] + delta;
    return K;
  }
}
data {
  int<lower=1> N;
  array[N] real x;
  vector[N] y;
  int<lower=1> T;
  array[T] real ts;
  vector[2] y0;
  array[T] vector[2] z;
}
transformed data {
  real delta = 1e-9;
  real t0 = 0.;
}
parameters {
  real<lower=0> rho;
  real<lower=0> alpha;
  real<lower=0> sigma;
  real<lower=0> theta;
}
model {
  matrix[N, N] L_K = cholesky_decompose(cov_exp(x, alpha, rho, delta) + diag_matrix(rep_vector(square(sigma), N)));
  array[T] vector[2] mu = ode_rk45(sho, y0, t0, ts, theta);
  rho ~ inv_gamma(5, 5);
  alpha ~ std_normal();
  sigma ~ std_normal();
  theta ~ normal(0, 1);
  y ~ multi_normal_cholesky(rep_vector(0, N), L_K);
  for (t in 1:T) z[t] ~ normal(mu[t], 0.1);
}
