functions {
  matrix cov_matrix_2d(vector sigma, real rho) {
    matrix[2, 2] Sigma;
    Sigma[1, 1] = square(sigma[1]);
    Sigma[2, 2] = square(sigma[2]);
    Sigma[1, 2] = sigma[1] * sigma[2] * rho;
    Sigma[2, 1] = Sigma[1, 2];
    return Sigma;
  }
  // Species present at the site and detected x times in K visits.
  real lp_observed(int x, int K, real logit_psi, real logit_theta) {
    return log_inv_logit(logit_psi) + binomial_logit_lpmf(x | K, logit_theta);
  }
  // Species never detected at the site: present but missed, or absent.
  real lp_unobserved(int K, real logit_psi, real logit_theta) {
    return log_sum_exp(lp_observed(0, K, logit_psi, logit_theta), log1m_inv_logit(logit_psi));
  }
  // Augmented species never detected anywhere: unavailable, or available and missed at every site.
  real lp_never_observed(int J, int K, real logit_psi, real logit_theta, real Omega) {
    real lp_unavailable = bernoulli_lpmf(0 | Omega);
    real lp_available = bernoulli_lpmf(1 | Omega) + J * lp_unobserved(K, logit_psi, logit_theta);
    return log_sum_exp(lp_unavailable, lp_available);
  }
}
data {
  int<lower=1> J;
  int<lower=1> K;
  int<lower=1> n;
  array[n, J] int<lower=0, upper=K> X;
  int<lower=n> S;
}
parameters {
  real alpha;
  real beta;
  real<lower=0, upper=1> Omega;
  real<lower=-1, upper=1> rho_uv;
  vector<lower=0>[2] sigma_uv;
  vector[S] uv1;
  vector[S] uv2;
}
transformed parameters {
  array[S] vector[2] uv;
  vector[S] logit_psi;
  vector[S] logit_theta;
  for (i in 1:S) {
    uv[i] = [uv1[i], uv2[i]]';
  }
  logit_psi = uv1 + alpha;
  logit_theta = uv2 + beta;
}
model {
  alpha ~ cauchy(0, 2.5);
  beta ~ cauchy(0, 2.5);
  sigma_uv ~ cauchy(0, 2.5);
  (rho_uv + 1) / 2 ~ beta(2, 2);
  target += multi_normal_lpdf(uv | rep_vector(0, 2), cov_matrix_2d(sigma_uv, rho_uv));
  Omega ~ beta(2, 2);
  for (i in 1:n) {
    1 ~ bernoulli(Omega);
    for (j in 1:J) {
      if (X[i, j] > 0) {
        target += lp_observed(X[i, j], K, logit_psi[i], logit_theta[i]);
      } else {
        target += lp_unobserved(K, logit_psi[i], logit_theta[i]);
      }
    }
  }
  for (i in (n + 1):S) {
    target += lp_never_observed(J, K, logit_psi[i], logit_theta[i], Omega);
  }
}
generated quantities {
  real<lower=0, upper=S> E_N = S * Omega;
  int<lower=0, upper=S> E_N_2 = n;
  vector[2] sim_uv;
  real logit_psi_sim;
  real logit_theta_sim;
  for (i in (n + 1):S) {
    real lp_unavailable = bernoulli_lpmf(0 | Omega);
    real lp_available = bernoulli_lpmf(1 | Omega) + J * lp_unobserved(K, logit_psi[i], logit_theta[i]);
    real Pr_available = exp(lp_available - log_sum_exp(lp_unavailable, lp_available));
    E_N_2 = E_N_2 + bernoulli_rng(Pr_available);
  }
  sim_uv = multi_normal_rng(rep_vector(0, 2), cov_matrix_2d(sigma_uv, rho_uv));
  logit_psi_sim = alpha + sim_uv[1];
  logit_theta_sim = beta + sim_uv[2];
}
