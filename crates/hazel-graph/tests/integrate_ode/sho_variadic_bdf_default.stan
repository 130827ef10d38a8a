// The same model as sho_integrate_bdf_default.stan written with ode_bdf.
functions {
  vector sho(real t, vector y, real damping, real omega2, int on) {
    vector[2] dydt;
    dydt[1] = y[2];
    dydt[2] = -omega2 * y[1] - on * damping * y[2];
    return dydt;
  }
}
data {
  int<lower=1> T;
  array[T] real ts;
  array[T, 2] real y_obs;
  real omega2;
}
parameters {
  real<lower=0> damping;
  array[2] real y0;
  real<lower=0> sigma;
}
model {
  array[T] vector[2] y_hat = ode_bdf(sho, to_vector(y0), 0.0, ts, damping, omega2, 1);
  damping ~ normal(0, 1);
  y0 ~ normal(0, 2);
  sigma ~ normal(0, 1);
  for (t in 1:T) {
    y_obs[t] ~ normal(to_array_1d(y_hat[t]), sigma);
  }
}
