data {
  int<lower=0> n_dogs;
  int<lower=0> n_trials;
  array[n_dogs, n_trials] int<lower=0, upper=1> y;
}
transformed data {
  matrix[n_dogs, n_trials] prev_shock;
  matrix[n_dogs, n_trials] prev_avoid;
  for (j in 1:n_dogs) {
    prev_shock[j, 1] = 0;
    prev_avoid[j, 1] = 0;
    for (t in 2:n_trials) {
      prev_shock[j, t] = prev_shock[j, t - 1] + y[j, t - 1];
      prev_avoid[j, t] = prev_avoid[j, t - 1] + 1 - y[j, t - 1];
    }
  }
}
parameters {
  real<lower=0, upper=1> a;
  real<lower=0, upper=1> b;
}
model {
  for (j in 1:n_dogs) {
    for (t in 1:n_trials) {
      y[j, t] ~ bernoulli(a ^ prev_shock[j, t] * b ^ prev_avoid[j, t]);
    }
  }
}
generated quantities {
  array[n_dogs, n_trials] int<lower=0, upper=1> y_rep;
  for (j in 1:n_dogs) {
    int n_shock_rep = 0;
    int n_avoid_rep = 0;
    y_rep[j, 1] = 1;
    for (t in 2:n_trials) {
      n_shock_rep += y_rep[j, t - 1];
      n_avoid_rep += 1 - y_rep[j, t - 1];
      y_rep[j, t] = bernoulli_rng(a ^ n_shock_rep * b ^ n_avoid_rep);
    }
  }
}
