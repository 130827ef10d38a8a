// The original's generated quantities (backward pass, smoothed probabilities, simulated states
// and outputs, Viterbi path) are not reproduced here; they do not enter the log density.
data {
  int<lower=1> T;
  int<lower=1> K;
  int<lower=1> M;
  array[T] real y;
  array[T] vector[M] u;
}
parameters {
  simplex[K] pi1;
  array[K] vector[M] w;
  array[K] vector[M] b;
  array[K] real<lower=0> sigma;
}
transformed parameters {
  array[T] vector[K] logalpha;
  array[T] vector[K] unA;
  array[T] vector[K] A;
  array[T] vector[K] logA;
  array[T] vector[K] logoblik;
  {
    array[K] real accumulator;
    unA[1] = pi1;
    A[1] = pi1;
    logA[1] = log(pi1);
    for (t in 2:T) {
      for (j in 1:K) {
        unA[t][j] = u[t]' * w[j];
      }
      A[t] = softmax(unA[t]);
      logA[t] = log(A[t]);
    }
    for (t in 1:T) {
      for (j in 1:K) {
        logoblik[t][j] = normal_lpdf(y[t] | u[t]' * b[j], sigma[j]);
      }
    }
    for (j in 1:K) {
      logalpha[1][j] = log(pi1[j]) + logoblik[1][j];
    }
    for (t in 2:T) {
      for (j in 1:K) {
        for (i in 1:K) {
          accumulator[i] = logalpha[t - 1, i] + logA[t][i] + logoblik[t][j];
        }
        logalpha[t, j] = log_sum_exp(accumulator);
      }
    }
  }
}
model {
  for (k in 1:K) {
    w[k] ~ normal(0, 5);
    b[k] ~ normal(0, 5);
    sigma[k] ~ normal(0, 3);
  }
  target += log_sum_exp(logalpha[T]);
}
