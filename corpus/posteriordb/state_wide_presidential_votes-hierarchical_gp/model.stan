data {
  int<lower=1> N;
  int<lower=1> N_states;
  int<lower=1> N_regions;
  int<lower=1> N_years_obs;
  int<lower=1> N_years;
  array[N_states] int<lower=1> state_region_ind;
  array[N] int<lower=1, upper=50> state_ind;
  array[N] int<lower=1, upper=10> region_ind;
  array[N] int<lower=1> year_ind;
  vector<lower=0, upper=1>[N] y;
}
transformed data {
  array[N_years] real years;
  vector[17] counts = rep_vector(2, 17);
  for (t in 1:N_years) {
    years[t] = t;
  }
}
parameters {
  matrix[N_years, N_regions] GP_region_std;
  matrix[N_years, N_states] GP_state_std;
  vector[N_years_obs] year_std;
  vector[N_states] state_std;
  vector[N_regions] region_std;
  real<lower=0> tot_var;
  simplex[17] prop_var;
  real mu;
  real<lower=0> length_GP_region_long;
  real<lower=0> length_GP_state_long;
  real<lower=0> length_GP_region_short;
  real<lower=0> length_GP_state_short;
}
transformed parameters {
  matrix[N_years, N_regions] GP_region;
  matrix[N_years, N_states] GP_state;
  vector[N_years_obs] year_re;
  vector[N_states] state_re;
  vector[N_regions] region_re;
  vector[17] vars = 17 * prop_var * tot_var;
  real sigma_year = sqrt(vars[1]);
  real sigma_region = sqrt(vars[2]);
  vector[10] sigma_state = sqrt(vars[3:12]);
  real sigma_error_state_2 = sqrt(vars[17]);
  real sigma_GP_region_long = sqrt(vars[13]);
  real sigma_GP_state_long = sqrt(vars[14]);
  real sigma_GP_region_short = sqrt(vars[15]);
  real sigma_GP_state_short = sqrt(vars[16]);
  region_re = sigma_region * region_std;
  year_re = sigma_year * year_std;
  state_re = sigma_state[state_region_ind] .* state_std;
  {
    matrix[N_years, N_years] cov_region
      = gp_exp_quad_cov(years, sigma_GP_region_long, length_GP_region_long)
        + gp_exp_quad_cov(years, sigma_GP_region_short, length_GP_region_short);
    matrix[N_years, N_years] cov_state
      = gp_exp_quad_cov(years, sigma_GP_state_long, length_GP_state_long)
        + gp_exp_quad_cov(years, sigma_GP_state_short, length_GP_state_short);
    for (t in 1:N_years) {
      cov_region[t, t] = cov_region[t, t] + 1e-6;
      cov_state[t, t] = cov_state[t, t] + 1e-6;
    }
    GP_region = cholesky_decompose(cov_region) * GP_region_std;
    GP_state = cholesky_decompose(cov_state) * GP_state_std;
  }
}
model {
  vector[N] obs_mu;
  for (n in 1:N) {
    obs_mu[n] = mu + year_re[year_ind[n]] + state_re[state_ind[n]] + region_re[region_ind[n]]
                + GP_region[year_ind[n], region_ind[n]] + GP_state[year_ind[n], state_ind[n]];
  }
  y ~ normal(obs_mu, sigma_error_state_2);
  to_vector(GP_region_std) ~ normal(0, 1);
  to_vector(GP_state_std) ~ normal(0, 1);
  year_std ~ normal(0, 1);
  state_std ~ normal(0, 1);
  region_std ~ normal(0, 1);
  mu ~ normal(0.5, 0.5);
  tot_var ~ gamma(3, 3);
  prop_var ~ dirichlet(counts);
  length_GP_region_long ~ weibull(30, 8);
  length_GP_state_long ~ weibull(30, 8);
  length_GP_region_short ~ weibull(30, 3);
  length_GP_state_short ~ weibull(30, 3);
}
generated quantities {
  matrix[N_years, N_states] y_new;
  matrix[N_years, N_states] y_new_pred;
  {
    real level = normal_rng(0.5, sigma_year);
    for (state in 1:N_states) {
      int region = state_region_ind[state];
      for (t in 1:N_years) {
        y_new[t, state] = state_re[state] + region_re[region] + GP_state[t, state]
                          + GP_region[t, region];
        if (t < 12) {
          y_new[t, state] += mu + year_re[t];
        } else {
          y_new[t, state] += level;
        }
        y_new_pred[t, state] = normal_rng(y_new[t, state], sigma_error_state_2);
      }
    }
  }
}
