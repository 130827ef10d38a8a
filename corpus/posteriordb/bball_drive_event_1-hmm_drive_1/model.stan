data {
  int<lower=1> K;
  int<lower=1> N;
  array[N] real u;
  array[N] real v;
  matrix<lower=0>[K, K] alpha;
  real<lower=0> tau;
  real<lower=0> rho;
}
parameters {
  simplex[K] theta1;
  simplex[K] theta2;
  ordered[K] phi;
  ordered[K] lambda;
}
transformed parameters {
  array[K] simplex[K] theta;
  theta[1] = theta1;
  theta[2] = theta2;
}
model {
  array[K] real acc;
  array[N, K] real gamma;
  for (k in 1:K) {
    theta[k] ~ dirichlet(alpha[k]');
  }
  phi[1] ~ normal(0, 1);
  phi[2] ~ normal(3, 1);
  lambda[1] ~ normal(0, 1);
  lambda[2] ~ normal(3, 1);
  for (k in 1:K) {
    gamma[1, k] = normal_lpdf(u[1] | phi[k], tau) + normal_lpdf(v[1] | lambda[k], rho);
  }
  for (t in 2:N) {
    for (k in 1:K) {
      for (j in 1:K) {
        acc[j] = gamma[t - 1, j] + log(theta[j, k])
                 + normal_lpdf(u[t] | phi[k], tau) + normal_lpdf(v[t] | lambda[k], rho);
      }
      gamma[t, k] = log_sum_exp(acc);
    }
  }
  target += log_sum_exp(gamma[N]);
}
