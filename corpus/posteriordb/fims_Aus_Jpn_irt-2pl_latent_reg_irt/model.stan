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
}
data {
  int<lower=1> I;
  int<lower=1> J;
  int<lower=1> N;
  array[N] int<lower=1, upper=I> ii;
  array[N] int<lower=1, upper=J> jj;
  array[N] int<lower=0, upper=1> y;
  int<lower=1> K;
  matrix[J, K] W;
}
transformed data {
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
  vector[J] theta;
  vector[K] lambda_adj;
}
transformed parameters {
  vector[I] beta;
  beta[1:(I - 1)] = beta_free;
  beta[I] = -1 * sum(beta_free);
}
model {
  alpha ~ lognormal(1, 1);
  target += normal_lpdf(beta | 0, 3);
  lambda_adj ~ student_t(3, 0, 1);
  theta ~ normal(W_adj * lambda_adj, 1);
  y ~ bernoulli_logit(alpha[ii] .* theta[jj] - beta[ii]);
}
generated quantities {
  vector[K] lambda;
  lambda[2:K] = lambda_adj[2:K] ./ to_vector(adj[2, 2:K]);
  lambda[1] = W_adj[1, 1:K] * lambda_adj[1:K] - W[1, 2:K] * lambda[2:K];
}
