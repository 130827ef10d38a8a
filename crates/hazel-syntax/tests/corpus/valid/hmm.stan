data {
  int<lower=1> N;
  int<lower=1> K;
  array[N] real y;
}
parameters {
  array[K] simplex[K] theta;
  positive_ordered[K] mu;
  vector<lower=0>[K] sigma;
}
model {
  array[K] real acc;
  array[N, K] real gamma;
  target += normal_lpdf(mu | 3, 1);
  sigma ~ normal(0, 2) T[0, ];
  for (k in 1:K) gamma[1, k] = normal_lpdf(y[1] | mu[k], sigma[k]);
  for (t in 2:N) {
    for (k in 1:K) {
      for (j in 1:K)
        acc[j] = gamma[t - 1, j] + log(theta[j, k]) + normal_lpdf(y[t] | mu[k], sigma[k]);
      gamma[t, k] = log_sum_exp(acc);
    }
  }
  target += log_sum_exp(gamma[N]);
}
generated quantities {
  array[N] int<lower=1, upper=K> y_star;
  real log_p_y_star;
  {
    array[N, K] int back_ptr;
    array[N, K] real best_logp;
    real best_total_logp;
    for (k in 1:K) best_logp[1, k] = normal_lpdf(y[1] | mu[k], sigma[k]);
    for (t in 2:N) {
      for (k in 1:K) {
        best_logp[t, k] = negative_infinity();
        for (j in 1:K) {
          real logp;
          logp = best_logp[t - 1, j] + log(theta[j, k]) + normal_lpdf(y[t] | mu[k], sigma[k]);
          if (logp > best_logp[t, k]) {
            back_ptr[t, k] = j;
            best_logp[t, k] = logp;
          }
        }
      }
    }
    log_p_y_star = max(best_logp[N]);
    for (k in 1:K)
      if (best_logp[N, k] == log_p_y_star)
        y_star[N] = k;
    for (t in 1:(N - 1))
      y_star[N - t] = back_ptr[N - t + 1, y_star[N - t + 1]];
  }
}
