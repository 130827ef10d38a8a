functions {
  // Spectral density of the squared-exponential kernel (one input dimension).
  vector spd_cov_exp_quad(array[] vector x, real sdgp, real lscale) {
    int NB = size(x);
    vector[NB] out;
    real constant = square(sdgp) * sqrt(2 * pi()) * lscale;
    real neg_half_lscale2 = -0.5 * square(lscale);
    for (m in 1:NB) {
      out[m] = constant * exp(neg_half_lscale2 * dot_self(x[m]));
    }
    return out;
  }
  // Basis-function approximation of a GP.
  vector gp_basis(matrix X, real sdgp, real lscale, vector zgp, array[] vector slambda) {
    vector[cols(X)] diag_spd = sqrt(spd_cov_exp_quad(slambda, sdgp, lscale));
    return X * (diag_spd .* zgp);
  }
}
data {
  int<lower=1> N;
  vector[N] Y;
  int<lower=1> Kgp_1;
  int<lower=1> Dgp_1;
  int<lower=1> NBgp_1;
  matrix[N, NBgp_1] Xgp_1;
  array[NBgp_1] vector[Dgp_1] slambda_1;
  int<lower=1> Kgp_sigma_1;
  int<lower=1> Dgp_sigma_1;
  int<lower=1> NBgp_sigma_1;
  matrix[N, NBgp_sigma_1] Xgp_sigma_1;
  array[NBgp_sigma_1] vector[Dgp_sigma_1] slambda_sigma_1;
  int prior_only;
}
parameters {
  real Intercept;
  real<lower=0> sdgp_1;
  real<lower=0> lscale_1;
  vector[NBgp_1] zgp_1;
  real Intercept_sigma;
  real<lower=0> sdgp_sigma_1;
  real<lower=0> lscale_sigma_1;
  vector[NBgp_sigma_1] zgp_sigma_1;
}
model {
  if (!prior_only) {
    vector[N] mu = Intercept + gp_basis(Xgp_1, sdgp_1, lscale_1, zgp_1, slambda_1);
    vector[N] log_sigma = Intercept_sigma
                          + gp_basis(Xgp_sigma_1, sdgp_sigma_1, lscale_sigma_1, zgp_sigma_1,
                                     slambda_sigma_1);
    target += normal_lpdf(Y | mu, exp(log_sigma));
  }
  target += student_t_lpdf(Intercept | 3, -13, 36);
  target += student_t_lpdf(sdgp_1 | 3, 0, 36) - student_t_lccdf(0 | 3, 0, 36);
  target += inv_gamma_lpdf(lscale_1 | 1.124909, 0.0177);
  target += std_normal_lpdf(zgp_1);
  target += student_t_lpdf(Intercept_sigma | 3, 0, 10);
  target += student_t_lpdf(sdgp_sigma_1 | 3, 0, 36) - student_t_lccdf(0 | 3, 0, 36);
  target += inv_gamma_lpdf(lscale_sigma_1 | 1.124909, 0.0177);
  target += std_normal_lpdf(zgp_sigma_1);
}
