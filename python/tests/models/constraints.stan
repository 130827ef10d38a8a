// Every kind of parameter transform stanli shares with hazel, with transformed parameters and
// deterministic generated quantities: the BridgeStan-method fixtures (scripts/python).
data {
  int<lower=1> K;
  int<lower=0> N;
  vector[N] y;
}
parameters {
  real a;
  real<lower=0> b;
  real<upper=3> c;
  real<lower=-1, upper=2> d;
  real<offset=1, multiplier=2> e;
  array[2] vector<lower=0>[K] f;
  matrix[2, K] g;
  simplex[K] h;
  array[2] simplex[K] i;
  ordered[K] j;
  positive_ordered[K] k;
  unit_vector[K] l;
  sum_to_zero_vector[K] m;
  cholesky_factor_corr[K] n;
  cholesky_factor_cov[K + 1, K] o;
  cov_matrix[K] p;
  corr_matrix[K] r;
  sum_to_zero_matrix[K, 2] s;
}
transformed parameters {
  real ab = a * b;
  vector[K] hf = h .* f[1];
  matrix[K, K] nn = multiply_lower_tri_self_transpose(n);
}
model {
  a ~ normal(0, 1);
  b ~ lognormal(0, 1);
  c ~ normal(1, 2);
  d ~ normal(0, 3);
  e ~ normal(1, 2);
  for (t in 1:2) {
    f[t] ~ gamma(2, 1);
    i[t] ~ dirichlet(rep_vector(2, K));
  }
  to_vector(g) ~ normal(0, 1);
  h ~ dirichlet(rep_vector(1.5, K));
  j ~ normal(0, 2);
  k ~ exponential(1);
  m ~ normal(0, 1);
  n ~ lkj_corr_cholesky(2);
  to_vector(o) ~ normal(0, 2);
  // Not `~`: stanli 0.24 keeps wishart's constant terms under `~` with data ν and S, where
  // Stan Math's include_summand (and hazel) drop them.
  target += wishart_lpdf(p | K + 2, identity_matrix(K));
  r ~ lkj_corr(3);
  to_vector(s) ~ normal(0, 1);
  y ~ normal(a + sum(l), b);
}
generated quantities {
  real total = a + b + c + d + e;
  array[2] int signs = {a > 0, c > 0};
  matrix[K, 2] s_copy = s;
}
