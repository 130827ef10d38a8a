functions {
  vector one_comp_mm_elim_abs_rhs(real t, vector y, real k_a, real K_m, real V_m, real D,
                                  real V) {
    vector[1] dydt;
    real dose = 0;
    real elim = (V_m / V) * y[1] / (K_m + y[1]);
    if (t > 0) {
      dose = exp(-k_a * t) * D * k_a / V;
    }
    dydt[1] = dose - elim;
    return dydt;
  }
}
data {
  real t0;
  real D;
  real V;
  int<lower=1> N_t;
  array[N_t] real times;
  array[N_t] real C_hat;
}
transformed data {
  vector[1] C0 = [0.0]';
}
parameters {
  real<lower=0> k_a;
  real<lower=0> K_m;
  real<lower=0> V_m;
  real<lower=0> sigma;
}
model {
  array[N_t] vector[1] C = ode_bdf_tol(one_comp_mm_elim_abs_rhs, C0, t0, times, 1e-6, 1e-6,
                                       1000000, k_a, K_m, V_m, D, V);
  k_a ~ cauchy(0, 1);
  K_m ~ cauchy(0, 1);
  V_m ~ cauchy(0, 1);
  sigma ~ cauchy(0, 1);
  for (n in 1:N_t) {
    C_hat[n] ~ lognormal(log(C[n, 1]), sigma);
  }
}
