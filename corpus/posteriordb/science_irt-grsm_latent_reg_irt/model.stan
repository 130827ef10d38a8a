functions {
  // Centre and scale of each covariate column: column 1 (intercept) stays as it is, every other
  // column is centred at its mean and divided by twice its sample sd.
  matrix obtain_adjustments(matrix W) {
    matrix[2, cols(W)] adj;
    adj[1, 1] = 0;
    adj[2, 1] = 1;
    if (cols(W) > 1) {
      for (k in 2:cols(W)) {
        adj[1, k] = mean(W[ : , k]);
        adj[2, k] = 2 * sd(W[ : , k]);
      }
    }
    return adj;
  }
  // Log probability of rating y (0..m) under the rating-scale model.
  real rsm(int y, real theta, real beta, vector kappa) {
    vector[rows(kappa) + 1] unsummed = append_row(rep_vector(0, 1), theta - beta - kappa);
    vector[rows(kappa) + 1] probs = softmax(cumulative_sum(unsummed));
    return categorical_lpmf(y + 1 | probs);
  }
}
data {
  int<lower=1> I;
  int<lower=1> J;
  int<lower=1> N;
  array[N] int<lower=1, upper=I> ii;
  array[N] int<lower=1, upper=J> jj;
  array[N] int<lower=0> y;
  int<lower=1> K;
  matrix[J, K] W;
}
transformed data {
  int m = max(y);
  matrix[2, K] adj = obtain_adjustments(W);
  matrix[J, K] W_adj;
  for (k in 1:K) {
    for (j in 1:J) {
      W_adj[j, k] = (W[j, k] - adj[1, k]) / adj[2, k];
    }
  }
}
parameters {
  vector<lower=0>[I] alpha;
  vector[I - 1] beta_free;
  vector[m - 1] kappa_free;
  vector[J] theta;
  vector[K] lambda_adj;
}
transformed parameters {
  vector[I] beta;
  vector[m] kappa;
  beta[1:(I - 1)] = beta_free;
  beta[I] = -1 * sum(beta_free);
  kappa[1:(m - 1)] = kappa_free;
  kappa[m] = -1 * sum(kappa_free);
}
model {
  alpha ~ lognormal(1, 1);
  target += normal_lpdf(beta | 0, 3);
  target += normal_lpdf(kappa | 0, 3);
  theta ~ normal(W_adj * lambda_adj, 1);
  lambda_adj ~ student_t(3, 0, 1);
  for (n in 1:N) {
    target += rsm(y[n], theta[jj[n]] .* alpha[ii[n]], beta[ii[n]], kappa);
  }
}
