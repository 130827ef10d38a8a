data {
  int<lower=0> N;
  vector[N] kid_score;
  array[N] int mom_work;
}
transformed data {
  vector[N] work2;
  vector[N] work3;
  vector[N] work4;
  for (n in 1:N) {
    work2[n] = mom_work[n] == 2;
    work3[n] = mom_work[n] == 3;
    work4[n] = mom_work[n] == 4;
  }
}
parameters {
  vector[4] beta;
  real<lower=0> sigma;
}
model {
  kid_score ~ normal(beta[1] + beta[2] * work2 + beta[3] * work3 + beta[4] * work4, sigma);
}
