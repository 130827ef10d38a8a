"""Writes crates/hazel-graph/tests/fixtures/dist_library.json: stanli 0.24 log densities and
gradients (CmdStan's lp__ convention: `~` drops constants, `target += *_lpdf` keeps them,
Jacobians included) of small programs using the multivariate and ordinal families, at seeded
unconstrained points. Rerun with /work/venv/bin/python scripts/dist/make_library_fixtures.py;
the points are seeded, so a rerun reproduces the file.

stanli 0.24 drops no summand of wishart, inv_wishart, wishart_cholesky, inv_wishart_cholesky or
lkj_cov under `~` when some argument is data (its kernels for them see every argument as an
autodiff variable), while Stan Math's include_summand drops the data-only summands. Those
families therefore appear here in `~` only with every argument a parameter (where nothing is
dropped either way) and otherwise in the `target += *_lpdf` form; their dropping rule is tested
in hazel-math (`dist_multivariate_fd`, dropped-part invariance) against Stan Math's grouping.
"""
import json
import sys
import pathlib

import numpy as np
import stanli

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from oracle_points import seeded_points  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "crates/hazel-graph/tests/fixtures/dist_library.json"
N_POINTS = 4
SCALE = 1.0
# Stan's std_normal_lcdf (inside ordered_probit) differentiates with a rational approximation
# whose relative error reaches ~1e-5, and its beta_neg_binomial_lcdf/lccdf differentiate a
# 3F2 series to ~1e-7, while hazel's derivatives are exact (φ/Φ; a finite sum). For these
# programs the fixture also stores central differences of stanli's log density, which the
# test holds hazel's gradient to. (With a prior success parameter below ~1 Stan's
# beta_neg_binomial_lcdf value itself is off by ~1e-5 against a 50-digit sum, so that program
# keeps alpha > 3.)
APPROXIMATE_GRADIENT = ("ordered_probit_tilde", "ordered_probit_lpmf", "beta_neg_binomial_cdfs")
FD_STEP = 1e-6

rng0 = np.random.default_rng(20261124)
N, K = 8, 4
X = rng0.normal(size=(N, 2)).round(3).tolist()
Y_ORD = [1, 2, 4, 3, 2, 1, 4, 3]
G = [1, 2, 1, 2, 2, 1, 1, 2]
YMV = rng0.normal(size=(5, 3)).round(3).tolist()

ORD_DATA = {"N": N, "K": K, "X": X, "y": Y_ORD, "g": G}
MV_DATA = {"N": 5, "y": YMV}
GP_DATA = {"y": [[0.5, -0.2, 1.1, 0.3], [0.1, 0.4, -0.7, 0.9]]}

ORD_HEAD = """
data { int N; int K; matrix[N, 2] X; array[N] int y; array[N] int g; }
parameters { vector[2] beta; ordered[K - 1] c; }
model {
  beta ~ normal(0, 1);
  c ~ normal(0, 3);
"""

PROGRAMS = {
    # ordinal families
    "ordered_logistic_tilde": (ORD_HEAD + "  y ~ ordered_logistic(X * beta, c);\n}", ORD_DATA),
    "ordered_logistic_lpmf": (ORD_HEAD + "  target += ordered_logistic_lpmf(y | X * beta, c);\n}", ORD_DATA),
    "ordered_logistic_lupmf": (ORD_HEAD + "  target += ordered_logistic_lupmf(y | X * beta, c);\n}", ORD_DATA),
    "ordered_logistic_scalar_loop": (
        ORD_HEAD + "  for (n in 1:N) y[n] ~ ordered_logistic(X[n] * beta, c);\n}", ORD_DATA),
    "ordered_logistic_cut_array": ("""
data { int N; int K; matrix[N, 2] X; array[N] int y; array[N] int g; }
parameters { vector[2] beta; array[2] ordered[K - 1] cg; real eta0; }
model {
  array[N] vector[K - 1] cc;
  for (n in 1:N) cc[n] = cg[g[n]];
  beta ~ normal(0, 1);
  for (j in 1:2) cg[j] ~ normal(0, 3);
  eta0 ~ normal(0, 1);
  y ~ ordered_logistic(X * beta, cc);
  target += ordered_logistic_lpmf(y[1] | eta0, cg[1]);
}""", ORD_DATA),
    "ordered_probit_tilde": (ORD_HEAD + "  y ~ ordered_probit(X * beta, c);\n}", ORD_DATA),
    "ordered_probit_lpmf": (ORD_HEAD + """  target += ordered_probit_lpmf(y | X * beta, c);
  for (n in 1:N) target += ordered_probit_lpmf(y[n] | X[n] * beta, c);\n}""", ORD_DATA),
    # multinomial
    "multinomial": ("""
data { array[4] int ns; }
parameters { simplex[4] theta; vector[4] b; }
model {
  ns ~ multinomial(theta);
  target += multinomial_lpmf(ns | theta);
  b ~ normal(0, 1);
  ns ~ multinomial_logit(b);
  target += multinomial_logit_lpmf(ns | b);
  target += multinomial_logit_lupmf(ns | b);
}""", {"ns": [3, 0, 5, 2]}),
    # multivariate Student-t
    "multi_student_t": ("""
data { int N; array[N] vector[3] y; }
parameters { real<lower=1> nu; vector[3] mu; cov_matrix[3] S; vector[3] z; }
model {
  nu ~ gamma(2, 0.1);
  mu ~ normal(0, 2);
  y ~ multi_student_t(nu, mu, S);
  z ~ multi_student_t(nu, mu, S);
}""", MV_DATA),
    "multi_student_t_lpdf": ("""
data { int N; array[N] vector[3] y; }
parameters { real<lower=1> nu; vector[3] mu; cov_matrix[3] S; array[N] vector[3] mus; }
model {
  target += multi_student_t_lpdf(y | nu, mu, S);
  target += multi_student_t_lpdf(y | 4.5, mus, S);
  target += multi_student_t_lpdf(y[1] | nu, mus, S);
  for (n in 1:N) mus[n] ~ normal(mu, 1);
}""", MV_DATA),
    "multi_student_t_cholesky": ("""
data { int N; array[N] vector[3] y; }
parameters { real<lower=1> nu; vector[3] mu; cholesky_factor_cov[3] L; }
model {
  y ~ multi_student_t_cholesky(nu, mu, L);
  target += multi_student_t_cholesky_lpdf(y[2] | nu, mu, L);
  target += multi_student_t_cholesky_lupdf(y[3] | nu, mu, L);
}""", MV_DATA),
    # precision-parameterised normal
    "multi_normal_prec": ("""
data { int N; array[N] vector[3] y; }
parameters { vector[3] mu; cov_matrix[3] P; }
model {
  y ~ multi_normal_prec(mu, P);
  target += multi_normal_prec_lpdf(y[1] | mu, P);
  mu ~ multi_normal_prec(rep_vector(0, 3), diag_matrix(rep_vector(0.5, 3)));
}""", MV_DATA),
    # LKJ with a parameter shape
    "lkj_corr_cholesky_eta": ("""
parameters { cholesky_factor_corr[3] L; real<lower=0> eta; }
model {
  eta ~ gamma(2, 1);
  L ~ lkj_corr_cholesky(eta);
}""", {}),
    "lkj_corr_cholesky_lpdf": ("""
parameters { cholesky_factor_corr[4] L; real<lower=0> eta; }
model {
  eta ~ gamma(2, 1);
  target += lkj_corr_cholesky_lpdf(L | eta);
  target += lkj_corr_cholesky_lpdf(L | 2.5);
  L ~ lkj_corr_cholesky(1.5);
}""", {}),
    "lkj_corr": ("""
parameters { corr_matrix[3] O; real<lower=0> eta; }
model {
  eta ~ gamma(2, 1);
  O ~ lkj_corr(eta);
  target += lkj_corr_lpdf(O | eta);
  O ~ lkj_corr(3.0);
}""", {}),
    # univariate families of the hazel_math::dist table
    "beta_neg_binomial": ("""
data { int N; array[N] int n; }
parameters { real<lower=0> r; real<lower=0> a; real<lower=0> b; }
model {
  r ~ gamma(2, 1);
  a ~ gamma(4, 1);
  b ~ gamma(2, 1);
  n ~ beta_neg_binomial(r, a, b);
  n ~ beta_neg_binomial(r, 2.5, 3.0);
  target += beta_neg_binomial_lpmf(n | r, a, 1.5);
  for (i in 1:N) target += beta_neg_binomial_lupmf(n[i] | 1.2, a, b);
}""", {"N": 6, "n": [0, 3, 1, 7, 2, 12]}),
    "skew_double_exponential": ("""
data { int N; vector[N] y; }
parameters { real mu; real<lower=0> s; real<lower=0, upper=1> tau; vector[2] z; }
model {
  mu ~ normal(0, 1);
  s ~ gamma(2, 1);
  y ~ skew_double_exponential(mu, s, tau);
  y ~ skew_double_exponential(mu, 1.5, 0.3);
  y ~ skew_double_exponential(0.2, s, 0.7);
  z ~ skew_double_exponential(mu, 2.0, tau);
  target += skew_double_exponential_lpdf(y | mu, s, tau);
  for (i in 1:N) target += skew_double_exponential_lupdf(y[i] | mu, 1.5, tau);
}""", {"N": 5, "y": [0.3, -1.2, 2.2, 0.0, 0.9]}),
    "skew_double_exponential_cdfs": ("""
data { int N; vector[N] y; }
parameters { real mu; real<lower=0> s; real<lower=0, upper=1> tau; }
model {
  mu ~ normal(0, 1);
  s ~ gamma(2, 1);
  for (i in 1:N) y[i] ~ skew_double_exponential(mu, s, tau) T[-3, 4];
  target += skew_double_exponential_lcdf(y | mu, s, tau);
  target += skew_double_exponential_lccdf(y | mu, s, tau);
  target += log(skew_double_exponential_cdf(y[2] | mu, s, tau));
}""", {"N": 5, "y": [0.3, -1.2, 2.2, 0.0, 0.9]}),
    "beta_neg_binomial_cdfs": ("""
data { int N; array[N] int n; }
parameters { real<lower=0> r; real<lower=3> a; real<lower=0> b; }
model {
  r ~ gamma(2, 1);
  a ~ gamma(4, 1);
  b ~ gamma(2, 1);
  for (i in 1:N) n[i] ~ beta_neg_binomial(r, a, b) T[, 15];
  target += beta_neg_binomial_lcdf(n | r, a, b);
  target += beta_neg_binomial_lccdf(n | r, a, b);
}""", {"N": 6, "n": [0, 3, 1, 7, 2, 12]}),
    "dirichlet_multinomial": ("""
data { array[4] int ns; }
parameters { vector<lower=0>[4] alpha; }
model {
  alpha ~ gamma(2, 1);
  ns ~ dirichlet_multinomial(alpha);
  target += dirichlet_multinomial_lpmf(ns | alpha);
  target += dirichlet_multinomial_lupmf({0, 0, 0, 0} | alpha);
}""", {"ns": [3, 0, 5, 2]}),
    # Wishart family
    "wishart": ("""
data { cov_matrix[3] Wd; }
parameters { real<lower=2> nu; cov_matrix[3] S; cov_matrix[3] W; }
model {
  nu ~ gamma(4, 0.5);
  W ~ wishart(nu, S);
  target += wishart_lpdf(Wd | nu, S);
  target += wishart_lpdf(W | nu, S);
  target += wishart_lpdf(Wd | 5.0, S);
  target += wishart_lpdf(W | 4.0, Wd);
}""", {"Wd": [[2.0, 0.3, -0.4], [0.3, 1.5, 0.2], [-0.4, 0.2, 1.2]]}),
    "inv_wishart": ("""
data { cov_matrix[3] Wd; }
parameters { real<lower=2> nu; cov_matrix[3] S; cov_matrix[3] W; }
model {
  nu ~ gamma(4, 0.5);
  W ~ inv_wishart(nu, S);
  target += inv_wishart_lpdf(Wd | nu, S);
  target += inv_wishart_lpdf(W | nu, S);
  target += inv_wishart_lpdf(Wd | 5.0, S);
  target += inv_wishart_lpdf(W | 4.0, Wd);
}""", {"Wd": [[2.0, 0.3, -0.4], [0.3, 1.5, 0.2], [-0.4, 0.2, 1.2]]}),
    "wishart_cholesky": ("""
data { cholesky_factor_cov[3] Ld; }
parameters { real<lower=2> nu; cholesky_factor_cov[3] LS; cholesky_factor_cov[3] LW; }
model {
  nu ~ gamma(4, 0.5);
  LW ~ wishart_cholesky(nu, LS);
  target += wishart_cholesky_lpdf(Ld | nu, LS);
  target += wishart_cholesky_lpdf(LW | nu, LS);
  target += wishart_cholesky_lpdf(LW | 4.0, Ld);
}""", {"Ld": [[1.3, 0.0, 0.0], [0.2, 0.9, 0.0], [-0.3, 0.4, 1.1]]}),
    "inv_wishart_cholesky": ("""
data { cholesky_factor_cov[3] Ld; }
parameters { real<lower=2> nu; cholesky_factor_cov[3] LS; cholesky_factor_cov[3] LW; }
model {
  nu ~ gamma(4, 0.5);
  LW ~ inv_wishart_cholesky(nu, LS);
  target += inv_wishart_cholesky_lpdf(Ld | nu, LS);
  target += inv_wishart_cholesky_lpdf(LW | nu, LS);
  target += inv_wishart_cholesky_lpdf(LW | 4.0, Ld);
}""", {"Ld": [[1.3, 0.0, 0.0], [0.2, 0.9, 0.0], [-0.3, 0.4, 1.1]]}),
    # multi-output GPs
    "multi_gp": ("""
data { matrix[2, 4] y; }
parameters { cov_matrix[4] K; vector<lower=0>[2] w; matrix[2, 4] z; }
model {
  w ~ gamma(2, 1);
  y ~ multi_gp(K, w);
  z ~ multi_gp(K, w);
  target += multi_gp_lpdf(y | K, w);
}""", GP_DATA, """
data { matrix[2, 4] y; }
parameters { cov_matrix[4] K; vector<lower=0>[2] w; matrix[2, 4] z; }
model {
  w ~ gamma(2, 1);
  for (i in 1:2) y[i]' ~ multi_normal(rep_vector(0, 4), K / w[i]);
  for (i in 1:2) z[i]' ~ multi_normal(rep_vector(0, 4), K / w[i]);
  for (i in 1:2) target += multi_normal_lpdf(y[i]' | rep_vector(0, 4), K / w[i]);
}"""),
    "multi_gp_cholesky": ("""
data { matrix[2, 4] y; }
parameters { cholesky_factor_cov[4] L; vector<lower=0>[2] w; matrix[2, 4] z; }
model {
  w ~ gamma(2, 1);
  y ~ multi_gp_cholesky(L, w);
  z ~ multi_gp_cholesky(L, w);
  target += multi_gp_cholesky_lpdf(y | L, w);
}""", GP_DATA, """
data { matrix[2, 4] y; }
parameters { cholesky_factor_cov[4] L; vector<lower=0>[2] w; matrix[2, 4] z; }
model {
  w ~ gamma(2, 1);
  for (i in 1:2) y[i]' ~ multi_normal_cholesky(rep_vector(0, 4), L / sqrt(w[i]));
  for (i in 1:2) z[i]' ~ multi_normal_cholesky(rep_vector(0, 4), L / sqrt(w[i]));
  for (i in 1:2) target += multi_normal_cholesky_lpdf(y[i]' | rep_vector(0, 4), L / sqrt(w[i]));
}"""),
    # LKJ on a covariance matrix
    "lkj_cov": ("""
parameters { cov_matrix[3] S; vector[3] mu; vector<lower=0>[3] sig; real<lower=0> eta; }
model {
  mu ~ normal(0, 1);
  sig ~ gamma(2, 2);
  eta ~ gamma(2, 1);
  S ~ lkj_cov(mu, sig, eta);
  target += lkj_cov_lpdf(S | mu, sig, eta);
  target += lkj_cov_lpdf(S | rep_vector(0.5, 3), rep_vector(1.2, 3), 2.0);
  target += lkj_cov_lpdf(S | rep_vector(0.5, 3), rep_vector(1.2, 3), 1.0);
}""", {}),
}


def main():
    out = []
    for i, (name, spec) in enumerate(PROGRAMS.items()):
        code, data = spec[0], spec[1]
        # stanli 0.24 rejects every point of multi_gp and multi_gp_cholesky (a domain error
        # even at identity kernels), so those programs are evaluated through the identity
        # multi_gp(y | K, w) = Σ_i multi_normal(y_i | 0, K / w_i), which drops the same
        # 2π constant under `~`.
        oracle_code = spec[2] if len(spec) > 2 else code
        data_json = json.dumps(data)
        model = stanli.Model(stan_code=oracle_code, data=data_json)
        dim = model.n_unconstrained
        rng = np.random.default_rng(1000 + i)
        points = seeded_points(model, rng, N_POINTS, SCALE,
                               fd_step=FD_STEP if name in APPROXIMATE_GRADIENT else None)
        out.append({"name": name, "program": code, "oracle_program": oracle_code,
                    "data": data_json,
                    "n_unconstrained": dim, "points": points})
        print(f"{name}: dim {dim}, lp {points[0]['log_density']:.6f}")
    OUT.write_text(json.dumps({"generator": "scripts/dist/make_library_fixtures.py",
                               "stanli": stanli.__version__, "programs": out}, indent=1) + "\n")


if __name__ == "__main__":
    main()
