// Bayesian neural network for binary classification: D inputs, one hidden layer of H tanh units,
// a Bernoulli-logit output, standard-normal priors on every weight and bias
// (D*H + H + H + 1 = 113 parameters for D = 5, H = 16).
data {
  int<lower=1> N;
  int<lower=1> D;
  int<lower=1> H;
  matrix[N, D] X;
  array[N] int<lower=0, upper=1> y;
  int<lower=0> N_test;
  matrix[N_test, D] X_test;
  array[N_test] int<lower=0, upper=1> y_test;
}
parameters {
  matrix[D, H] W1;       // input-to-hidden weights
  vector[H] b1;          // hidden biases
  vector[H] w2;          // hidden-to-output weights
  real b2;               // output bias
}
model {
  matrix[N, H] hidden = tanh(X * W1 + rep_matrix(b1', N));
  to_vector(W1) ~ std_normal();
  b1 ~ std_normal();
  w2 ~ std_normal();
  b2 ~ std_normal();
  y ~ bernoulli_logit(hidden * w2 + b2);
}
generated quantities {
  // Log predictive density of the held-out data at this draw.
  real log_lik_test;
  {
    matrix[N_test, H] hidden_test = tanh(X_test * W1 + rep_matrix(b1', N_test));
    log_lik_test = bernoulli_logit_lpmf(y_test | hidden_test * w2 + b2);
  }
}
