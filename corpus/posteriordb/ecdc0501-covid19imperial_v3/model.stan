data {
  int<lower=1> M;
  int<lower=1> P;
  int<lower=1> N0;
  array[M] int<lower=1> N;
  int<lower=1> N2;
  array[N2, M] int cases;
  array[N2, M] int deaths;
  matrix[N2, M] f;
  array[M] matrix[N2, P] X;
  array[M] int EpidemicStart;
  array[M] real pop;
  array[N2] real SI;
}
transformed data {
  // Reversed serial interval and fatality-delay distributions: the convolutions below are dot
  // products of the past infections with the tails of these vectors.
  vector[N2] SI_rev;
  array[M] vector[N2] f_rev;
  for (i in 1:N2) {
    SI_rev[i] = SI[N2 - i + 1];
  }
  for (m in 1:M) {
    for (i in 1:N2) {
      f_rev[m, i] = f[N2 - i + 1, m];
    }
  }
}
parameters {
  array[M] real<lower=0> mu;
  array[P] real<lower=0> alpha_hier;
  real<lower=0> kappa;
  array[M] real<lower=0> y;
  real<lower=0> phi;
  real<lower=0> tau;
  array[M] real<lower=0> ifr_noise;
}
transformed parameters {
  vector[P] alpha;
  matrix[N2, M] prediction = rep_matrix(0, N2, M);
  matrix[N2, M] E_deaths = rep_matrix(0, N2, M);
  matrix[N2, M] Rt = rep_matrix(0, N2, M);
  matrix[N2, M] Rt_adj = Rt;
  {
    matrix[N2, M] cumm_sum = rep_matrix(0, N2, M);
    for (i in 1:P) {
      alpha[i] = alpha_hier[i] - (log(1.05) / 6.0);
    }
    for (m in 1:M) {
      prediction[1:N0, m] = rep_vector(y[m], N0);
      cumm_sum[2:N0, m] = cumulative_sum(prediction[2:N0, m]);
      Rt[ : , m] = mu[m] * exp(-X[m] * alpha);
      Rt_adj[1:N0, m] = Rt[1:N0, m];
      for (i in (N0 + 1):N2) {
        real convolution = dot_product(sub_col(prediction, 1, m, i - 1), tail(SI_rev, i - 1));
        cumm_sum[i, m] = cumm_sum[i - 1, m] + prediction[i - 1, m];
        Rt_adj[i, m] = ((pop[m] - cumm_sum[i, m]) / pop[m]) * Rt[i, m];
        prediction[i, m] = Rt_adj[i, m] * convolution;
      }
      E_deaths[1, m] = 1e-15 * prediction[1, m];
      for (i in 2:N2) {
        E_deaths[i, m] = ifr_noise[m]
                         * dot_product(sub_col(prediction, 1, m, i - 1), tail(f_rev[m], i - 1));
      }
    }
  }
}
model {
  tau ~ exponential(0.03);
  for (m in 1:M) {
    y[m] ~ exponential(1 / tau);
  }
  phi ~ normal(0, 5);
  kappa ~ normal(0, 0.5);
  mu ~ normal(3.28, kappa);
  alpha_hier ~ gamma(.1667, 1);
  ifr_noise ~ normal(1, 0.1);
  for (m in 1:M) {
    deaths[EpidemicStart[m]:N[m], m] ~ neg_binomial_2(E_deaths[EpidemicStart[m]:N[m], m], phi);
  }
}
generated quantities {
  // Counterfactual without interventions (R_t = R0).
  matrix[N2, M] prediction0 = rep_matrix(0, N2, M);
  matrix[N2, M] E_deaths0 = rep_matrix(0, N2, M);
  {
    matrix[N2, M] cumm_sum0 = rep_matrix(0, N2, M);
    for (m in 1:M) {
      for (i in 2:N0) {
        cumm_sum0[i, m] = cumm_sum0[i - 1, m] + y[m];
      }
      prediction0[1:N0, m] = rep_vector(y[m], N0);
      for (i in (N0 + 1):N2) {
        real convolution0 = dot_product(sub_col(prediction0, 1, m, i - 1), tail(SI_rev, i - 1));
        cumm_sum0[i, m] = cumm_sum0[i - 1, m] + prediction0[i - 1, m];
        prediction0[i, m] = ((pop[m] - cumm_sum0[i, m]) / pop[m]) * mu[m] * convolution0;
      }
      E_deaths0[1, m] = uniform_rng(1e-16, 1e-15);
      for (i in 2:N2) {
        E_deaths0[i, m] = ifr_noise[m]
                          * dot_product(sub_col(prediction0, 1, m, i - 1), tail(f_rev[m], i - 1));
      }
    }
  }
}
