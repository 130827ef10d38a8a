// The original's generated quantities (posterior predictive loss triangles and summaries) are
// not reproduced here; they do not enter the log density.
functions {
  real growth_factor_weibull(real t, real omega, real theta) {
    return 1 - exp(-(t / theta) ^ omega);
  }
  real growth_factor_loglogistic(real t, real omega, real theta) {
    real pow_t_omega = t ^ omega;
    return pow_t_omega / (pow_t_omega + theta ^ omega);
  }
}
data {
  int<lower=0, upper=1> growthmodel_id;
  int n_data;
  int n_time;
  int n_cohort;
  array[n_data] int cohort_id;
  array[n_data] int t_idx;
  array[n_cohort] int cohort_maxtime;
  vector<lower=0>[n_time] t_value;
  vector[n_cohort] premium;
  vector[n_data] loss;
}
parameters {
  real<lower=0> omega;
  real<lower=0> theta;
  vector<lower=0>[n_cohort] LR;
  real mu_LR;
  real<lower=0> sd_LR;
  real<lower=0> loss_sd;
}
transformed parameters {
  vector[n_time] gf;
  vector[n_data] lm;
  for (i in 1:n_time) {
    if (growthmodel_id == 1) {
      gf[i] = growth_factor_weibull(t_value[i], omega, theta);
    } else {
      gf[i] = growth_factor_loglogistic(t_value[i], omega, theta);
    }
  }
  for (i in 1:n_data) {
    lm[i] = LR[cohort_id[i]] * premium[cohort_id[i]] * gf[t_idx[i]];
  }
}
model {
  mu_LR ~ normal(0, 0.5);
  sd_LR ~ lognormal(0, 0.5);
  LR ~ lognormal(mu_LR, sd_LR);
  loss_sd ~ lognormal(0, 0.7);
  omega ~ lognormal(0, 0.5);
  theta ~ lognormal(0, 0.5);
  loss ~ normal(lm, loss_sd * premium[cohort_id]);
}
