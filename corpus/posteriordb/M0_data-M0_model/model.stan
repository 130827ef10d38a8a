data {
  int<lower=0> M;
  int<lower=0> T;
  array[M, T] int<lower=0, upper=1> y;
}
transformed data {
  array[M] int s;
  int C = 0;
  for (i in 1:M) {
    s[i] = sum(y[i]);
    if (s[i] > 0) {
      C += 1;
    }
  }
}
parameters {
  real<lower=0, upper=1> omega;
  real<lower=0, upper=1> p;
}
model {
  for (i in 1:M) {
    if (s[i] > 0) {
      target += bernoulli_lpmf(1 | omega) + binomial_lpmf(s[i] | T, p);
    } else {
      target += log_sum_exp(bernoulli_lpmf(1 | omega) + binomial_lpmf(0 | T, p),
                            bernoulli_lpmf(0 | omega));
    }
  }
}
generated quantities {
  real omega_nd = (omega * (1 - p) ^ T) / (omega * (1 - p) ^ T + (1 - omega));
  int<lower=C, upper=M> N = C + binomial_rng(M - C, omega_nd);
}
