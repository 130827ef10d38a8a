functions {
  matrix get_changepoint_matrix(vector t, vector t_change, int T, int S) {
    matrix[T, S] A = rep_matrix(0, T, S);
    row_vector[S] a_row = rep_row_vector(0, S);
    int cp_idx = 1;
    for (i in 1:T) {
      while ((cp_idx <= S) && (t[i] >= t_change[cp_idx])) {
        a_row[cp_idx] = 1;
        cp_idx = cp_idx + 1;
      }
      A[i] = a_row;
    }
    return A;
  }
  // Offsets that keep the logistic trend continuous at the changepoints.
  vector logistic_gamma(real k, real m, vector delta, vector t_change, int S) {
    vector[S] gamma;
    vector[S + 1] k_s = append_row(k, k + cumulative_sum(delta));
    real m_pr = m;
    for (i in 1:S) {
      gamma[i] = (t_change[i] - m_pr) * (1 - k_s[i] / k_s[i + 1]);
      m_pr = m_pr + gamma[i];
    }
    return gamma;
  }
  vector logistic_trend(real k, real m, vector delta, vector t, vector cap, matrix A,
                        vector t_change, int S) {
    vector[S] gamma = logistic_gamma(k, m, delta, t_change, S);
    return cap .* inv_logit((k + A * delta) .* (t - (m + A * gamma)));
  }
  vector linear_trend(real k, real m, vector delta, vector t, matrix A, vector t_change) {
    return (k + A * delta) .* t + (m + A * (-t_change .* delta));
  }
}
data {
  int T;
  int<lower=1> K;
  vector[T] t;
  vector[T] cap;
  vector[T] y;
  int S;
  vector[S] t_change;
  matrix[T, K] X;
  vector[K] sigmas;
  real<lower=0> tau;
  int trend_indicator;
  vector[K] s_a;
  vector[K] s_m;
}
transformed data {
  matrix[T, S] A = get_changepoint_matrix(t, t_change, T, S);
}
parameters {
  real k;
  real m;
  vector[S] delta;
  real<lower=0> sigma_obs;
  vector[K] beta;
}
model {
  k ~ normal(0, 5);
  m ~ normal(0, 5);
  delta ~ double_exponential(0, tau);
  sigma_obs ~ normal(0, 0.5);
  beta ~ normal(0, sigmas);
  if (trend_indicator == 0) {
    y ~ normal(linear_trend(k, m, delta, t, A, t_change) .* (1 + X * (beta .* s_m))
               + X * (beta .* s_a), sigma_obs);
  } else if (trend_indicator == 1) {
    y ~ normal(logistic_trend(k, m, delta, t, cap, A, t_change, S) .* (1 + X * (beta .* s_m))
               + X * (beta .* s_a), sigma_obs);
  }
}
