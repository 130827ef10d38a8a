data {
  int<lower=1> N;
  vector[N] Y;
  int Ks;
  matrix[N, Ks] Xs;
  int knots_1;
  matrix[N, knots_1] Zs_1_1;
  int Ks_sigma;
  matrix[N, Ks_sigma] Xs_sigma;
  int knots_sigma_1;
  matrix[N, knots_sigma_1] Zs_sigma_1_1;
  int prior_only;
}
parameters {
  real Intercept;
  vector[Ks] bs;
  vector[knots_1] zs_1_1;
  real<lower=0> sds_1_1;
  real Intercept_sigma;
  vector[Ks_sigma] bs_sigma;
  vector[knots_sigma_1] zs_sigma_1_1;
  real<lower=0> sds_sigma_1_1;
}
transformed parameters {
  vector[knots_1] s_1_1 = sds_1_1 * zs_1_1;
  vector[knots_sigma_1] s_sigma_1_1 = sds_sigma_1_1 * zs_sigma_1_1;
}
model {
  if (!prior_only) {
    vector[N] mu = Intercept + Xs * bs + Zs_1_1 * s_1_1;
    vector[N] sigma = exp(Intercept_sigma + Xs_sigma * bs_sigma + Zs_sigma_1_1 * s_sigma_1_1);
    target += normal_lpdf(Y | mu, sigma);
  }
  target += student_t_lpdf(Intercept | 3, -13, 36);
  target += normal_lpdf(zs_1_1 | 0, 1);
  target += student_t_lpdf(sds_1_1 | 3, 0, 36) - student_t_lccdf(0 | 3, 0, 36);
  target += student_t_lpdf(Intercept_sigma | 3, 0, 10);
  target += normal_lpdf(zs_sigma_1_1 | 0, 1);
  target += student_t_lpdf(sds_sigma_1_1 | 3, 0, 36) - student_t_lccdf(0 | 3, 0, 36);
}
generated quantities {
  real b_Intercept = Intercept;
  real b_sigma_Intercept = Intercept_sigma;
}
