functions {
  vector lotka_volterra_rhs(real t, vector z, array[] real theta) {
    real u = z[1];
    real v = z[2];
    vector[2] dz_dt;
    dz_dt[1] = (theta[1] - theta[2] * v) * u;
    dz_dt[2] = (-theta[3] + theta[4] * u) * v;
    return dz_dt;
  }
}
data {
  int<lower=0> N;
  array[N] real ts;
  array[2] real y_init;
  array[N, 2] real<lower=0> y;
}
parameters {
  array[4] real<lower=0> theta;
  array[2] real<lower=0> z_init;
  array[2] real<lower=0> sigma;
}
model {
  array[N, 2] real z;
  {
    array[N] vector[2] z_sol = ode_rk45_tol(lotka_volterra_rhs, to_vector(z_init), 0, ts,
                                            1e-5, 1e-3, 500, theta);
    for (n in 1:N) {
      z[n, 1] = z_sol[n, 1];
      z[n, 2] = z_sol[n, 2];
    }
  }
  theta[{1, 3}] ~ normal(1, 0.5);
  theta[{2, 4}] ~ normal(0.05, 0.05);
  sigma ~ lognormal(-1, 1);
  z_init ~ lognormal(log(10), 1);
  for (k in 1:2) {
    y_init[k] ~ lognormal(log(z_init[k]), sigma[k]);
    y[ : , k] ~ lognormal(log(z[ : , k]), sigma[k]);
  }
}
