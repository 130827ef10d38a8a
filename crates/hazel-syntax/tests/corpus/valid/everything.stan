/* A program that exercises every syntactic construct the parser knows.
   It is not meant to be a sensible model. */
functions {
  real forward_declared(real x);
  real forward_declared(real x) {
    return x ^ 2;
  }
  void side_effect_lp(data array[,] real xs, vector v) {
    target += -0.5 * dot_self(v);
  }
  array[] matrix mats(int n) {
    array[n] matrix[2, 2] out;
    for (i in 1:n) out[i] = diag_matrix(rep_vector(i, 2));
    return out;
  }
  real my_dist_lpdf(real y, real mu) {
    return -square(y - mu);
  }
  real upper_jacobian(real x, real ub) {
    jacobian += x;
    return ub - exp(x);
  }
  int count_up(int n) {
    int i = 0;
    while (1) {
      i += 1;
      if (i >= n) break;
      else continue;
    }
    return i;
  }
}
data {
  int<lower=0> N;
  int<lower=1, upper=N> K;
  array[N] int<lower=0, upper=1> flags;
  vector[N] x;
  row_vector[K] r;
  matrix[N, K] X;
  array[N, 2] real grid;
  real<lower=-1, upper=1> rho_data;
  vector<lower=0>[N] pos;
  complex c;
  complex_vector[K] cv;
  complex_row_vector[K] crv;
  complex_matrix[K, K] cmat;
  tuple(int, array[2] real) tup;
}
transformed data {
  real small = 1e-3;
  real half = .5;
  real two = 2.;
  real big = 1.5E+10;
  complex ci = 2i;
  complex cf = 1.5i;
  array[3] int idxs = {1, 2, 3};
  row_vector[3] rv = [1, 2, 3];
  matrix[2, 2] m22 = [[1, 0], [0, 1]];
  tuple(real, int) pair = (1.5, 2);
  real proj = pair.1 + tup.2[1];
  int q = 7 %/% 2 + 7 % 2;
  vector[N] ex = x .* x ./ (x + 1) .^ 2;
  matrix[2, 2] ld = m22 \ m22;
  row_vector[2] rd = rv[1:2] / m22;
  int truth = (1 < 2) && (2 <= 3) || (3 > 4) && !(4 >= 5) || (1 == 1) != (2 != 2);
  real tern = N > 0 ? 1.0 : 2.0;
  real neg_pow = -2 ^ 2;
  vector[N] tr = (x')';
  array[N] real a1, a2 = grid[:, 1];
  vector[N - 1] tail = x[2:];
  vector[2] head = x[:2];
  vector[N] all = x[:];
  vector[3] picked = x[idxs];
  real elem = X[1, 2];
  row_vector[K] row1 = X[1];
  real nested_call = forward_declared(sum(x[1:2]));
  if (N < 0) reject("N must be non-negative, found ", N);
  if (N > 1000000) fatal_error("N too large");
  print("data ok: ", N, " ", x);
  for (v in x) print(v);
  for (i in 1:N) {
    if (flags[i] == 1) continue;
  }
  profile("td") {
    real tmp = 0;
    tmp += 1;
    tmp -= 1;
    tmp *= 2;
    tmp /= 2;
  }
  {
    vector[N] w = x;
    w .*= x;
    w ./= pos;
  }
  ;
}
parameters {
  real mu;
  real<lower=0> sigma;
  real<offset=mu, multiplier=sigma> z;
  real<multiplier=2> m_only;
  vector<lower=-1, upper=rho_data + 2>[K] beta;
  simplex[K] theta;
  unit_vector[3] u;
  sum_to_zero_vector[K] stz;
  sum_to_zero_matrix[2, 3] stzm;
  ordered[2] o;
  positive_ordered[2] po;
  cholesky_factor_corr[3] L_corr;
  cholesky_factor_cov[3] L_cov;
  cholesky_factor_cov[4, 3] L_cov_rect;
  corr_matrix[3] Omega;
  cov_matrix[3] Sigma;
  column_stochastic_matrix[3, 2] csm;
  row_stochastic_matrix[2, 3] rsm;
  array[2] vector<lower=0>[3] arr_vec;
  matrix<lower=0, upper=1>[2, 2] unit_mat;
  tuple(real<lower=0>, vector[2]) ptup;
}
transformed parameters {
  real<lower=0> sigma2 = square(sigma);
  vector[K] bx;
  real<upper=1> capped = upper_jacobian(mu, 1);
  bx = X[1:K, :]' * X[1:K, 1:K] * beta;
}
model {
  mu ~ normal(0, 10);
  sigma ~ exponential(1) T[, 100];
  z ~ normal(mu, sigma);
  x ~ normal(mu, sigma) T[-100, 100];
  pos ~ lognormal(0, 1) T[0.001, ];
  target += normal_lpdf(beta | 0, 1);
  target += std_normal_lupdf(m_only |);
  target += my_dist_lpdf(mu | 0);
  target += lkj_corr_cholesky_lpdf(L_corr | 2.0);
  Omega ~ lkj_corr(2);
  Sigma ~ wishart(4, Omega);
  side_effect_lp(grid, beta);
  ptup.1 ~ exponential(1);
  ptup.2 ~ std_normal();
  if (target() > 0) print("positive target: ", target());
}
generated quantities {
  int steps = count_up(3);
  real draw = normal_rng(mu, sigma);
  array[2] matrix[2, 2] ms = mats(2);
  tuple(real, vector[2]) copy = ptup;
}
