functions {
  vector two_pool_feedback(real t, vector C, real k1, real k2, real alpha21, real alpha12) {
    vector[2] dC_dt;
    dC_dt[1] = -k1 * C[1] + alpha12 * k2 * C[2];
    dC_dt[2] = -k2 * C[2] + alpha21 * k1 * C[1];
    return dC_dt;
  }
}
data {
  real<lower=0> totalC_t0;
  real t0;
  int<lower=0> N_t;
  array[N_t] real<lower=t0> ts;
  array[N_t] real<lower=0> eCO2mean;
}
parameters {
  real<lower=0> k1;
  real<lower=0> k2;
  real<lower=0> alpha21;
  real<lower=0> alpha12;
  real<lower=0, upper=1> gamma;
  real<lower=0> sigma;
}
transformed parameters {
  array[N_t] real eCO2_hat;
  {
    vector[2] C_t0 = [gamma * totalC_t0, (1 - gamma) * totalC_t0]';
    array[N_t] vector[2] C_hat = ode_rk45(two_pool_feedback, C_t0, t0, ts, k1, k2, alpha21,
                                          alpha12);
    for (t in 1:N_t) {
      eCO2_hat[t] = totalC_t0 - sum(C_hat[t]);
    }
  }
}
model {
  gamma ~ beta(10, 1);
  k1 ~ normal(0, 1);
  k2 ~ normal(0, 1);
  alpha21 ~ normal(0, 1);
  alpha12 ~ normal(0, 1);
  sigma ~ cauchy(0, 1);
  eCO2mean ~ normal(eCO2_hat, sigma);
}
