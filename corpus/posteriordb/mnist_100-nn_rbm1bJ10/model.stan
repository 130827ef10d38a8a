data {
  int<lower=0> N;
  int<lower=0> M;
  matrix[N, M] x;
  int<lower=2> K;
  array[N] int<lower=1, upper=K> y;
}
transformed data {
  int J = 10;
  real nu_alpha = 0.5;
  real s2_0_alpha = (0.05 / M ^ (1 / nu_alpha)) ^ 2;
  real nu_beta = 0.5;
  real s2_0_beta = (0.05 / J ^ (1 / nu_beta)) ^ 2;
  matrix[N, M + 1] x1 = append_col(rep_vector(1.0, N), x);
}
parameters {
  real<lower=0> sigma2_alpha;
  real<lower=0> sigma2_beta;
  matrix[M, J] alpha;
  matrix[J, K - 1] beta;
  row_vector[J] alpha1;
  row_vector[K - 1] beta1;
}
model {
  matrix[N, J] hidden = tanh(x1 * append_row(alpha1, alpha));
  matrix[N, K] v = append_col(rep_vector(1.0, N),
                              append_col(rep_vector(1.0, N), hidden) * append_row(beta1, beta));
  alpha1 ~ normal(0, 1);
  beta1 ~ normal(0, 1);
  sigma2_alpha ~ inv_gamma(nu_alpha / 2, nu_alpha * s2_0_alpha / 2);
  sigma2_beta ~ inv_gamma(nu_beta / 2, nu_beta * s2_0_beta / 2);
  to_vector(alpha) ~ normal(0, sqrt(sigma2_alpha));
  to_vector(beta) ~ normal(0, sqrt(sigma2_beta));
  for (n in 1:N) {
    y[n] ~ categorical_logit(v[n]');
  }
}
