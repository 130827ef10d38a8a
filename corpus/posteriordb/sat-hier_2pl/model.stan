data {
  int<lower=1> I;
  int<lower=1> J;
  int<lower=1> N;
  array[N] int<lower=1, upper=I> ii;
  array[N] int<lower=1, upper=J> jj;
  array[N] int<lower=0, upper=1> y;
}
parameters {
  vector[J] theta;
  vector[I] xi1;
  vector[I] xi2;
  vector[2] mu;
  vector<lower=0>[2] tau;
  cholesky_factor_corr[2] L_Omega;
}
transformed parameters {
  vector[I] alpha = exp(xi1);
  vector[I] beta = xi2;
  array[I] vector[2] xi;
  for (i in 1:I) {
    xi[i] = [xi1[i], xi2[i]]';
  }
}
model {
  matrix[2, 2] L_Sigma = diag_pre_multiply(tau, L_Omega);
  for (i in 1:I) {
    target += multi_normal_cholesky_lpdf(xi[i] | mu, L_Sigma);
  }
  theta ~ normal(0, 1);
  L_Omega ~ lkj_corr_cholesky(4);
  mu[1] ~ normal(0, 1);
  tau[1] ~ exponential(0.1);
  mu[2] ~ normal(0, 5);
  tau[2] ~ exponential(0.1);
  y ~ bernoulli_logit(alpha[ii] .* (theta[jj] - beta[ii]));
}
generated quantities {
  corr_matrix[2] Omega = multiply_lower_tri_self_transpose(L_Omega);
}
