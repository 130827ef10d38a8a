data {
  int<lower=2> V;
  int<lower=1> M;
  int<lower=1> N;
  array[N] int<lower=1, upper=V> w;
  array[N] int<lower=1, upper=M> doc;
}
transformed data {
  int<lower=2> K = 2;
  vector<lower=0>[K] alpha = rep_vector(1, K);
  vector<lower=0>[V] beta = rep_vector(1, V);
}
parameters {
  array[M] simplex[K] theta;
  array[K] simplex[V] phi;
}
model {
  for (m in 1:M) {
    theta[m] ~ dirichlet(alpha);
  }
  for (k in 1:K) {
    phi[k] ~ dirichlet(beta);
  }
  for (n in 1:N) {
    array[K] real gamma;
    for (k in 1:K) {
      gamma[k] = log(theta[doc[n], k]) + log(phi[k, w[n]]);
    }
    target += log_sum_exp(gamma);
  }
}
