functions {
  vector simple_SIR(real t, vector y, real beta, real kappa, real gamma, real xi, real delta) {
    vector[4] dydt;
    dydt[1] = -beta * y[4] / (y[4] + kappa) * y[1];
    dydt[2] = beta * y[4] / (y[4] + kappa) * y[1] - gamma * y[2];
    dydt[3] = gamma * y[2];
    dydt[4] = xi * y[2] - delta * y[4];
    return dydt;
  }
}
data {
  int<lower=0> N_t;
  array[N_t] real t;
  array[4] real y0;
  array[N_t] int stoi_hat;
  array[N_t] real B_hat;
}
transformed data {
  real t0 = 0;
  real kappa = 1000000;
}
parameters {
  real<lower=0> beta;
  real<lower=0> gamma;
  real<lower=0> xi;
  real<lower=0> delta;
}
transformed parameters {
  array[N_t, 4] real<lower=0> y;
  {
    array[N_t] vector[4] sol = ode_rk45(simple_SIR, to_vector(y0), t0, t, beta, kappa, gamma, xi,
                                        delta);
    for (n in 1:N_t) {
      y[n] = to_array_1d(sol[n]);
    }
  }
}
model {
  array[N_t] real lambda;
  lambda[1] = y0[1] - y[1, 1];
  for (n in 2:N_t) {
    lambda[n] = y[n - 1, 1] - y[n, 1];
  }
  beta ~ cauchy(0, 2.5);
  gamma ~ cauchy(0, 1);
  xi ~ cauchy(0, 25);
  delta ~ cauchy(0, 1);
  stoi_hat ~ poisson(lambda);
  B_hat ~ lognormal(log(col(to_matrix(y), 4)), 0.15);
}
