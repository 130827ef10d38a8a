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
  // Log probability of score y (0..m) under the partial credit model with steps beta.
  real pcm(int y, real theta, vector beta) {
    vector[rows(beta) + 1] unsummed = append_row(rep_vector(0.0, 1), theta - beta);
    vector[rows(beta) + 1] probs = softmax(cumulative_sum(unsummed));
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
  array[I] int m = rep_array(0, I);
  array[I] int pos;
  for (n in 1:N) {
    if (y[n] > m[ii[n]]) {
      m[ii[n]] = y[n];
    }
  }
  pos[1] = 1;
  for (i in 2:I) {
    pos[i] = m[i - 1] + pos[i - 1];
  }
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
  vector[sum(m) - 1] beta_free;
  vector[J] theta;
  vector[K] lambda_adj;
}
transformed parameters {
  vector[sum(m)] beta;
  beta[1:(sum(m) - 1)] = beta_free;
  beta[sum(m)] = -1 * sum(beta_free);
}
model {
  alpha ~ lognormal(1, 1);
  target += normal_lpdf(beta | 0, 3);
  theta ~ normal(W_adj * lambda_adj, 1);
  lambda_adj ~ student_t(3, 0, 1);
  for (n in 1:N) {
    target += pcm(y[n], theta[jj[n]] .* alpha[ii[n]], segment(beta, pos[ii[n]], m[ii[n]]));
  }
}
generated quantities {
  vector[K] lambda;
  lambda[2:K] = lambda_adj[2:K] ./ to_vector(adj[2, 2:K]);
  lambda[1] = W_adj[1, 1:K] * lambda_adj[1:K] - W[1, 2:K] * lambda[2:K];
}
