functions {
  array[] real f(real t, array[] real y, array[] real theta, array[] real x_r, array[] int x_i) {
    return {-theta[1] * y[1] * x_r[1]};
  }
}
parameters { real<lower=0> k; }
model {
  array[1, 1] real y = integrate_ode_bdf(f, {2.0}, 0.0, {1.5}, {k}, {k}, rep_array(0, 0));
  target += y[1, 1];
}
