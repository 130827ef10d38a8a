// Damped harmonic oscillator through the deprecated integrate_ode_adams interface
// (default control arguments).
functions {
  array[] real sho(real t, array[] real y, array[] real theta, array[] real x_r,
                   array[] int x_i) {
    array[2] real dydt;
    dydt[1] = y[2];
    dydt[2] = -x_r[1] * y[1] - x_i[1] * theta[1] * y[2];
    return dydt;
  }
}
data {
  int<lower=1> T;
  array[T] real ts;
  array[T, 2] real y_obs;
  real omega2;
}
transformed data {
  array[1] real x_r = {omega2};
  array[1] int x_i = {1};
}
parameters {
  real<lower=0> damping;
  array[2] real y0;
  real<lower=0> sigma;
}
model {
  array[T, 2] real y_hat = integrate_ode_adams(sho, y0, 0.0, ts, {damping}, x_r, x_i);
  damping ~ normal(0, 1);
  y0 ~ normal(0, 2);
  sigma ~ normal(0, 1);
  for (t in 1:T) {
    y_obs[t] ~ normal(y_hat[t], sigma);
  }
}
