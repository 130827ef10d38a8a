// Written with a dense Cholesky factor of the 900 x 900 covariance Sigma1 (x) Lambda + sigma1 * I
// instead of the original's eigendecompositions: the log density is the same up to rounding
// (the original drops the -n/2 log(2 pi) constant, which is added back below), and its gradient
// is reliable, unlike the eigenvector-based one (see the suite's model.md).
data {
  int<lower=1> n1;
  int<lower=1> n2;
  vector[n2] x1;
  matrix[n2, n1] y;
}
transformed data {
  matrix[n1, n1] xd;
  vector[n1 * n2] y_vec = to_vector(y);   // column-major: element (s, t) at s + (t - 1) * n2
  for (i in 1:n1) {
    for (j in 1:n1) {
      xd[i, j] = -square(x1[i] - x1[j]);
    }
  }
}
parameters {
  real<lower=0> var1;
  real<lower=0> bw1;
  cholesky_factor_corr[n2] L;
  real<lower=0.00001> sigma1;
}
transformed parameters {
  matrix[n2, n2] Lambda = multiply_lower_tri_self_transpose(L);
  matrix[n1, n1] Sigma1 = var1 * exp(bw1 * xd);
  for (i in 1:n1) {
    Sigma1[i, i] = Sigma1[i, i] + 0.00001;
  }
}
model {
  matrix[n1 * n2, n1 * n2] K;
  for (t in 1:n1) {
    for (u in 1:n1) {
      K[((t - 1) * n2 + 1):(t * n2), ((u - 1) * n2 + 1):(u * n2)] = Sigma1[t, u] * Lambda;
    }
  }
  for (i in 1:(n1 * n2)) {
    K[i, i] = K[i, i] + sigma1;
  }
  var1 ~ lognormal(0, 1);
  bw1 ~ cauchy(0, 2.5);
  sigma1 ~ lognormal(0, 1);
  L ~ lkj_corr_cholesky(2);
  target += multi_normal_cholesky_lpdf(y_vec | rep_vector(0, n1 * n2), cholesky_decompose(K))
            + 0.5 * n1 * n2 * log(2 * pi());
}
