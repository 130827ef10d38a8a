"""Writes crates/hazel-graph/tests/fixtures/dist2.json: stanli 0.24 log densities and gradients
(CmdStan's lp__ convention: `~` drops constants, `target += *_lpdf` keeps them, Jacobians
included) of small programs using the GLM families and the remaining special functions /
distributions of issue 8, at seeded unconstrained points. Rerun with
/work/venv-stanli/bin/python scripts/dist/make_dist2_fixtures.py; the points are seeded, so a
rerun reproduces the file.

Programs named in APPROXIMATE_GRADIENT also carry central differences of stanli's log density
(`fd_gradient`), for families where Stan's own gradient is a series or an approximation.
"""
import json
import sys
import pathlib

import mpmath as mp
import numpy as np
import scipy.special
import stanli

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from oracle_points import seeded_points  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "crates/hazel-graph/tests/fixtures/dist2.json"
N_POINTS = 4
SCALE = 1.0
FD_STEP = 1e-6
# Stan differentiates wiener_lpdf through truncated series (relative error ~1e-8), so that
# program also carries central differences of stanli's log density.
APPROXIMATE_GRADIENT = ("wiener", "wiener_sv")

rng0 = np.random.default_rng(20261125)
N, K, C = 6, 2, 3
X = rng0.normal(size=(N, K)).round(3).tolist()
GLM_DATA = {
    "N": N, "K": K, "C": C, "X": X, "xr": X[0],
    "yb": [1, 0, 0, 1, 1, 0],
    "trials": [5, 3, 8, 2, 6, 4],
    "ns": [2, 1, 7, 0, 3, 4],
    "cnt": [0, 3, 1, 7, 2, 12],
    "yo": [1, 2, 4, 3, 2, 1],
    "yc": [1, 3, 2, 2, 3, 1],
}
GLM_HEAD = """
data { int N; int K; int C; matrix[N, K] X; row_vector[K] xr; array[N] int yb;
       array[N] int trials; array[N] int ns; array[N] int cnt; array[N] int yo;
       array[N] int yc; }
"""

PROGRAMS = {
    # binomial_logit_glm(n | N, x, alpha, beta)
    "binomial_logit_glm": (GLM_HEAD + """
parameters { real a; vector[K] b; vector[N] av; matrix[N, K] Xp; }
model {
  a ~ normal(0, 1); b ~ normal(0, 1); av ~ normal(0, 1); to_vector(Xp) ~ normal(0, 1);
  ns ~ binomial_logit_glm(trials, X, a, b);
  target += binomial_logit_glm_lpmf(ns | trials, X, av, b);
  target += binomial_logit_glm_lupmf(ns | trials, Xp, 0.3, b);
  ns ~ binomial_logit_glm(trials, Xp, av, [0.5, -0.2]');
  target += binomial_logit_glm_lpmf(ns[2:2] | trials[2:2], xr, a, b);
  ns[3:3] ~ binomial_logit_glm(trials[3:3], xr, a, b);
  ns[4:4] ~ binomial_logit_glm(trials[4:4], xr, av[1:1], b);
}""", GLM_DATA),
    "neg_binomial_2_log_glm": (GLM_HEAD + """
parameters { real a; vector[K] b; vector[N] av; real<lower=0> phi; matrix[N, K] Xp; }
model {
  a ~ normal(0, 1); b ~ normal(0, 1); av ~ normal(0, 1); phi ~ gamma(2, 1);
  to_vector(Xp) ~ normal(0, 1);
  cnt ~ neg_binomial_2_log_glm(X, a, b, phi);
  cnt ~ neg_binomial_2_log_glm(X, av, b, 2.5);
  cnt ~ neg_binomial_2_log_glm(X, 0.3, [0.1, 0.2]', phi);
  cnt ~ neg_binomial_2_log_glm(Xp, av, b, 1.5);
  target += neg_binomial_2_log_glm_lpmf(cnt | X, av, b, phi);
  target += neg_binomial_2_log_glm_lupmf(cnt | Xp, a, b, phi);
  target += neg_binomial_2_log_glm_lupmf(cnt | X, a, b, 1.7);
  cnt[4] ~ neg_binomial_2_log_glm(X[4:4], a, b, phi);
  target += neg_binomial_2_log_glm_lpmf(cnt[5] | Xp[5:5], a, b, phi);
  target += neg_binomial_2_log_glm_lpmf(cnt[5:5] | xr, a, b, phi);
  cnt[2:2] ~ neg_binomial_2_log_glm(xr, av[2:2], b, phi);
  target += neg_binomial_2_log_glm_lupmf(cnt[3:3] | xr, a, b, 0.8);
}""", GLM_DATA),
    "ordered_logistic_glm": (GLM_HEAD + """
parameters { vector[K] b; ordered[3] c; matrix[N, K] Xp; row_vector[K] xp; }
model {
  b ~ normal(0, 1); c ~ normal(0, 3); to_vector(Xp) ~ normal(0, 1); xp ~ normal(0, 1);
  yo ~ ordered_logistic_glm(X, b, c);
  target += ordered_logistic_glm_lpmf(yo | Xp, b, c);
  target += ordered_logistic_glm_lupmf(yo | X, [0.3, -0.4]', c);
  yo[2] ~ ordered_logistic_glm(xp, b, c);
  target += ordered_logistic_glm_lpmf(yo[5:5] | xr, b, c);
  target += ordered_logistic_glm_lpmf(yo[3] | xp, b, [-0.5, 0.2, 1.0]');
}""", GLM_DATA),
    "categorical_logit_glm": (GLM_HEAD + """
parameters { vector[C] a; matrix[K, C] B; matrix[N, K] Xp; row_vector[K] xp; }
model {
  a ~ normal(0, 1); to_vector(B) ~ normal(0, 1); to_vector(Xp) ~ normal(0, 1);
  xp ~ normal(0, 1);
  yc ~ categorical_logit_glm(X, a, B);
  target += categorical_logit_glm_lpmf(yc | Xp, a, B);
  target += categorical_logit_glm_lupmf(yc | X, [0.1, 0.2, -0.3]', B);
  yc[2] ~ categorical_logit_glm(xp, a, B);
  target += categorical_logit_glm_lpmf(yc[5:5] | xr, a, B);
  target += categorical_logit_glm_lpmf(yc[4] | Xp[4], a, B);
}""", GLM_DATA),
    "glm_existing_forms": (GLM_HEAD + """
parameters { real a; vector[K] b; vector[N] av; real<lower=0> s; }
model {
  a ~ normal(0, 1); b ~ normal(0, 1); av ~ normal(0, 1); s ~ gamma(2, 1);
  yb ~ bernoulli_logit_glm(X, a, b);
  target += bernoulli_logit_glm_lpmf(yb[1:1] | xr, av[1:1], b);
  cnt ~ poisson_log_glm(X, av, b);
  target += poisson_log_glm_lupmf(cnt[2:2] | xr, a, b);
  to_vector(ns) ~ normal_id_glm(X, a, b, s);
  target += normal_id_glm_lpdf(to_vector(ns) | X, av, b, 1.5);
}""", GLM_DATA),
    "loglogistic": ("""
data { int N; vector<lower=0>[N] y; }
parameters { real<lower=0> a; real<lower=0> b; vector<lower=0>[2] z; }
model {
  a ~ gamma(2, 1); b ~ gamma(4, 1);
  y ~ loglogistic(a, b);
  y ~ loglogistic(a, 3.0);
  y ~ loglogistic(1.5, b);
  z ~ loglogistic(2.0, 2.5);
  z ~ loglogistic(a, b);
  target += loglogistic_lpdf(y | a, b);
  target += loglogistic_lupdf(y | a, 3.0);
  for (i in 1:N) target += loglogistic_lpdf(y[i] | 1.2, b);
  target += log(loglogistic_cdf(y[2] | a, b));
  target += loglogistic_cdf(z[1] | a, b) + loglogistic_cdf(y | 0.8, b);
}""", {"N": 4, "y": [0.3, 1.2, 2.5, 0.9]}),
    "von_mises_cdfs": ("""
data { int N; vector<lower=-pi(), upper=pi()>[N] y; }
parameters { real<lower=-1, upper=1> mu; real<lower=0> k; real<lower=-pi(), upper=pi()> z; }
model {
  k ~ gamma(3, 1);
  target += von_mises_lcdf(y | mu, k);
  target += von_mises_lccdf(y | mu, k);
  target += log(von_mises_cdf(y[2] | mu, k));
  target += von_mises_lcdf(z | 0.3, k) + von_mises_lccdf(z | mu, 2.5);
  target += von_mises_cdf(y | mu, 1.5) + von_mises_lcdf(y[3] | 2.5, k);
}""", {"N": 4, "y": [0.3, -1.2, 2.5, -3.0]}),
    "von_mises_cdfs_large_kappa": ("""
data { int N; vector<lower=-pi(), upper=pi()>[N] y; }
parameters { real<lower=-0.2, upper=0.2> mu; }
model {
  target += von_mises_lcdf(y | mu, 60.0) + von_mises_lccdf(y | mu, 60.0);
  target += von_mises_lcdf(y | mu, 49.5) + von_mises_lccdf(y | mu, 49.5);
  target += von_mises_lcdf(y | mu, 20.0) + von_mises_lccdf(y | mu, 20.0);
}""", {"N": 3, "y": [0.1, -0.15, 0.02]}),
    # (stanc 2.37 has no array-of-vectors form of poisson_binomial: loops over the rows)
    "poisson_binomial": ("""
data { int N; array[N] int y; }
parameters { vector<lower=0, upper=1>[4] t; array[N] vector<lower=0, upper=1>[4] ts;
             row_vector<lower=0, upper=1>[3] ta; }
model {
  y ~ poisson_binomial(t);
  y[2] ~ poisson_binomial(ta);
  for (i in 1:N) target += poisson_binomial_lpmf(y[i] | ts[i]);
  target += poisson_binomial_lupmf(y[1] | ts[3]');
  target += poisson_binomial_lpmf(y | t);
  target += poisson_binomial_lcdf(y | t) + poisson_binomial_lccdf(y | ta);
  for (i in 1:N) target += poisson_binomial_lcdf(y[i] | ts[i]) + poisson_binomial_lccdf(y[i] | ts[i]);
  target += poisson_binomial_cdf(y[3] | t);
  for (i in 1:N) target += log(poisson_binomial_cdf(y[i] | ts[i]));
  target += poisson_binomial_lpmf(2 | [0.2, 0.5, 0.7]');
  y ~ poisson_binomial([0.2, 0.5, 0.7, 0.1]');
}""", {"N": 3, "y": [0, 2, 1]}),
    "modified_bessel_second_kind": ("""
parameters { real<lower=0> x; vector<lower=0>[2] xs; }
model {
  x ~ gamma(2, 1);
  target += log(modified_bessel_second_kind(0, x)) + modified_bessel_second_kind(1, x);
  target += log(modified_bessel_second_kind(3, x + 0.5));
  target += sum(modified_bessel_second_kind(2, xs));
  target += sum(modified_bessel_second_kind({1, 4}, {xs[1], xs[2]}));
  target += modified_bessel_second_kind(2, 1.5);
}""", {}, """
parameters { real<lower=0> x; vector<lower=0>[2] xs; }
model {
  x ~ gamma(2, 1);
  target += log(modified_bessel_second_kind(0, x)) + modified_bessel_second_kind(1, x);
  target += log(modified_bessel_second_kind(3, x + 0.5));
  for (i in 1:2) target += modified_bessel_second_kind(2, xs[i]);
  target += modified_bessel_second_kind(1, xs[1]) + modified_bessel_second_kind(4, xs[2]);
  target += modified_bessel_second_kind(2, 1.5);
}"""),
    "hypergeometric_1F0": ("""
parameters { real a; real<lower=-1, upper=1> z; }
model {
  a ~ normal(0, 1);
  target += hypergeometric_1F0(a, z) + log(hypergeometric_1F0(2.5, z));
  target += hypergeometric_1F0(a, 0.4) + hypergeometric_1F0(1.5, -0.3);
}""", {}),
    "wiener": ("""
data { int N; vector<lower=0>[N] y; }
parameters { real<lower=0.5, upper=2> a; real<lower=0, upper=0.2> tau; real<lower=0, upper=1> b;
             real d; vector<lower=0.3, upper=3>[2] z; }
model {
  d ~ normal(0, 1);
  y ~ wiener(a, tau, b, d);
  y ~ wiener(1.2, tau, 0.4, d);
  z ~ wiener(a, 0.1, b, 0.5);
  target += wiener_lpdf(y | a, tau, b, d);
  target += wiener_lupdf(y[2] | a, 0.25, 0.6, -0.7);
  for (i in 1:N) target += wiener_lpdf(y[i] | 1.5, tau, b, 0.2);
  target += wiener_lpdf(0.8 | 1.0, 0.2, 0.5, 0.3);
}""", {"N": 4, "y": [0.45, 1.2, 2.5, 0.3]}),
    "wiener_sv": ("""
data { int N; vector<lower=0>[N] y; }
parameters { real<lower=0.5, upper=2> a; real<lower=0, upper=0.2> tau; real<lower=0, upper=1> b;
             real d; real<lower=0> sv; }
model {
  d ~ normal(0, 1);
  sv ~ gamma(2, 2);
  y ~ wiener(a, tau, b, d, sv);
  y ~ wiener(1.2, tau, 0.4, d, 0.5);
  target += wiener_lpdf(y | a, tau, b, d, sv);
  target += wiener_lupdf(y[2] | a, 0.25, 0.6, -0.7, sv);
  for (i in 1:N) target += wiener_lpdf(y[i] | 1.5, tau, b, 0.2, 1.1);
}""", {"N": 4, "y": [0.45, 1.2, 2.5, 0.3]}, """
data { int N; vector<lower=0>[N] y; }
parameters { real<lower=0.5, upper=2> a; real<lower=0, upper=0.2> tau; real<lower=0, upper=1> b;
             real d; real<lower=0> sv; }
model {
  d ~ normal(0, 1);
  sv ~ gamma(2, 2);
  for (i in 1:N) y[i] ~ wiener(a, tau, b, d, sv);
  for (i in 1:N) y[i] ~ wiener(1.2, tau, 0.4, d, 0.5);
  for (i in 1:N) target += wiener_lpdf(y[i] | a, tau, b, d, sv);
  target += wiener_lupdf(y[2] | a, 0.25, 0.6, -0.7, sv);
  for (i in 1:N) target += wiener_lpdf(y[i] | 1.5, tau, b, 0.2, 1.1);
}"""),
}


# Functions stanli 0.24 does not have (inc_beta, inv_inc_beta, …): programs whose parameters are
# unconstrained and whose model is `target += <expression>`, so the log density is the
# expression itself; its value comes from mpmath at 50 digits and its gradient from mpmath's
# numerical differentiation of that value (exact to far below the test's tolerance).
mp.mp.dps = 50


def I(a, b, x):
    return mp.betainc(a, b, 0, x, regularized=True)


def inv_I(a, b, p):
    a, b, p = mp.mpf(a), mp.mpf(b), mp.mpf(p)
    x0 = mp.mpf(float(scipy.special.betaincinv(float(a), float(b), float(p))))
    return mp.findroot(lambda x: I(a, b, x) - p, (x0, x0 * (1 + mp.mpf(10) ** -9)),
                       tol=mp.mpf(10) ** -45)


def box(lo_hi):
    return lambda rng: [rng.uniform(lo, hi) for lo, hi in lo_hi]


MP_PROGRAMS = {
    "inc_beta": ("""
parameters { real a; real b; real x; vector[2] xs; }
model {
  target += inc_beta(a, b, x);
  target += sum(inc_beta(a, b, xs));
  target += sum(inc_beta({a, b}, {2.5, 2.5}, {0.3, x}));
  target += inc_beta(2.0, 3.0, 0.4);
}""", {}, lambda q: (I(q[0], q[1], q[2]) + I(q[0], q[1], q[3]) + I(q[0], q[1], q[4])
                     + I(q[0], 2.5, 0.3) + I(q[1], 2.5, q[2]) + I(2, 3, mp.mpf("0.4"))),
        box([(0.5, 4), (0.5, 4), (0.05, 0.95), (0.05, 0.95), (0.05, 0.95)])),
    "inv_inc_beta": ("""
parameters { real a; real b; real p; vector[2] ps; }
model {
  target += inv_inc_beta(a, b, p);
  target += sum(inv_inc_beta(a, b, ps));
  target += inv_inc_beta(2.0, b, 0.3) + inv_inc_beta(0.5, 0.5, 0.2);
}""", {}, lambda q: (inv_I(q[0], q[1], q[2]) + inv_I(q[0], q[1], q[3]) + inv_I(q[0], q[1], q[4])
                     + inv_I(2, q[1], mp.mpf("0.3")) + inv_I(mp.mpf("0.5"), mp.mpf("0.5"),
                                                           mp.mpf("0.2"))),
        box([(0.5, 4), (0.5, 4), (0.05, 0.95), (0.05, 0.95), (0.05, 0.95)])),
}


HALF_LOG_2PI = mp.log(2 * mp.pi) / 2


def matrix_normal_prec(y, mu, sigma, d):
    """Stan Math's matrix_normal_prec_lpdf (log|Sigma| times N/2, its rows, as Stan)."""
    n, p = y.rows, y.cols
    e = y - mu
    quad = sum((d * e.T * sigma * e)[i, i] for i in range(p))
    return (-HALF_LOG_2PI * n * p + mp.log(mp.det(sigma)) * n / 2 + mp.log(mp.det(d)) * p / 2
            - quad / 2)


def mvn_logpdf(x, mean, cov):
    l = mp.cholesky(cov)
    k = cov.rows
    # forward substitution
    z = mp.matrix(k, 1)
    for i in range(k):
        z[i] = (x[i] - mean[i] - sum(l[i, j] * z[j] for j in range(i))) / l[i, i]
    return (-HALF_LOG_2PI * k - sum(mp.log(l[i, i]) for i in range(k))
            - sum(z[i] ** 2 for i in range(k)) / 2)


def dlm_logpdf(y, F, G, V, W, m0, C0):
    """gaussian_dlm_obs as the joint normal density of the stacked observations."""
    r, T = y.rows, y.cols
    n = G.rows
    means, covs = [], []
    m, c = m0, C0
    for t in range(T):
        m = G * m
        c = G * c * G.T + W
        means.append(m)
        covs.append(c)
    k = r * T
    mean = mp.matrix(k, 1)
    cov = mp.matrix(k, k)
    x = mp.matrix(k, 1)
    for t in range(T):
        mt = F.T * means[t]
        for i in range(r):
            mean[t * r + i] = mt[i]
            x[t * r + i] = y[i, t]
        for s in range(t + 1):
            # Cov(theta_s, theta_t) = Var(theta_s) (G^(t-s))'
            gp = mp.eye(n)
            for _ in range(t - s):
                gp = G * gp
            block = F.T * covs[s] * gp.T * F
            if s == t:
                block = block + V
            for i in range(r):
                for j in range(r):
                    cov[s * r + i, t * r + j] = block[i, j]
                    cov[t * r + j, s * r + i] = block[i, j]
    return mvn_logpdf(x, mean, cov)


MN_YD = [[0.3, -1.1, 0.4], [1.2, 0.1, -0.6]]
DLM_Y = [[0.5, 1.1, -0.3, 0.8], [1.0, 0.2, 0.6, -0.4]]


def mn_lp(q):
    y = mp.matrix(2, 3)
    mu = mp.matrix(2, 3)
    for j in range(3):  # column-major, as Stan's unconstrained layout
        for i in range(2):
            y[i, j] = q[i + 2 * j]
            mu[i, j] = q[6 + i + 2 * j]
    s, dd = q[12], q[13]
    sigma = mp.matrix([[mp.exp(s), 0.3], [0.3, 1.5]])
    d = mp.matrix([[2.0, 0.2, dd / 4], [0.2, 1.0, 0.1], [dd / 4, 0.1, 1.2]])
    yd = mp.matrix(MN_YD)
    const = -HALF_LOG_2PI * 6
    sig_data = mp.matrix([[2.0, 0], [0, 2.0]])
    return (matrix_normal_prec(y, mu, sigma, d)
            + matrix_normal_prec(yd, mu, sigma, mp.diag([1.5, 1.5, 1.5]))
            + matrix_normal_prec(yd, mu, sigma, d) - const
            + matrix_normal_prec(yd, mu, sig_data, d) - const - mp.log(mp.det(sig_data)) * 2 / 2)


def dlm_lp(q):
    g, lw, lv, m1, m2, f = q
    F = mp.matrix([[1.0, f], [0.5, 1.0]])
    G = mp.matrix([[g, 0.1], [0.0, 0.8]])
    W = mp.matrix([[mp.exp(lw), 0.1], [0.1, 0.5]])
    V = mp.matrix([[mp.exp(lv), 0.2], [0.2, 1.0]])
    C0 = mp.matrix([[1.0, 0.3], [0.3, 2.0]])
    m0 = mp.matrix([m1, m2])
    y = mp.matrix(DLM_Y)
    full = dlm_logpdf(y, F, G, V, W, m0, C0)
    diag = dlm_logpdf(y, F, G, mp.diag([mp.exp(lv), 0.7]), W, m0, C0)
    return full + diag + (full + HALF_LOG_2PI * 8)


MP_PROGRAMS.update({
    "matrix_normal_prec": ("""
data { matrix[2, 3] yd; }
parameters { matrix[2, 3] y; matrix[2, 3] mu; real s; real d; }
model {
  matrix[2, 2] Sigma = [[exp(s), 0.3], [0.3, 1.5]];
  matrix[3, 3] D = [[2.0, 0.2, d / 4], [0.2, 1.0, 0.1], [d / 4, 0.1, 1.2]];
  target += matrix_normal_prec_lpdf(y | mu, Sigma, D);
  target += matrix_normal_prec_lpdf(yd | mu, Sigma, diag_matrix(rep_vector(1.5, 3)));
  yd ~ matrix_normal_prec(mu, Sigma, D);
  yd ~ matrix_normal_prec(mu, diag_matrix(rep_vector(2.0, 2)), D);
}""", {"yd": MN_YD}, mn_lp, box([(-1, 1)] * 14)),
    "gaussian_dlm_obs": ("""
data { matrix[2, 4] y; }
parameters { real g; real lw; real lv; vector[2] m0; real f; }
model {
  matrix[2, 2] F = [[1.0, f], [0.5, 1.0]];
  matrix[2, 2] G = [[g, 0.1], [0.0, 0.8]];
  matrix[2, 2] W = [[exp(lw), 0.1], [0.1, 0.5]];
  matrix[2, 2] V = [[exp(lv), 0.2], [0.2, 1.0]];
  matrix[2, 2] C0 = [[1.0, 0.3], [0.3, 2.0]];
  target += gaussian_dlm_obs_lpdf(y | F, G, V, W, m0, C0);
  target += gaussian_dlm_obs_lpdf(y | F, G, [exp(lv), 0.7]', W, m0, C0);
  y ~ gaussian_dlm_obs(F, G, V, W, m0, C0);
}""", {"y": DLM_Y}, dlm_lp, box([(-1, 1)] * 6)),
})



def hyper_lp(q):
    a, b, c, z = q[0], q[1], q[2], q[3]
    a3, b3 = q[4:7], q[7:9]
    return (mp.hyp2f1(a, b, c, z) + mp.hyper(a3, b3, z)
            + mp.hyper([a, 1.5], [c, 2, 3], 2 * z + 1) + mp.hyper([a], [c], z)
            + mp.hyp2f1(1, 2, 3, mp.mpf("0.4")) + mp.hyp2f1(a, b, c, -3 + z))


MP_PROGRAMS.update({
    "hypergeometric": ("""
parameters { real a; real b; real c; real z; vector[3] a3; vector[2] b3; }
model {
  target += hypergeometric_2F1(a, b, c, z);
  target += hypergeometric_3F2(a3, b3, z);
  target += hypergeometric_pFq([a, 1.5]', [c, 2.0, 3.0]', 2 * z + 1);
  target += hypergeometric_pFq({a}, {c}, z);
  target += hypergeometric_2F1(1.0, 2.0, 3.0, 0.4);
  target += hypergeometric_2F1(a, b, c, -3 + z);
}""", {}, hyper_lp, box([(0.5, 2), (0.5, 2), (2.5, 4), (-0.8, 0.8), (0.5, 2), (0.5, 2),
                         (0.5, 2), (2, 4), (2, 4)])),
})


def mp_program(i, name, spec):
    code, data, lp_fn, sampler = spec
    rng = np.random.default_rng(3000 + i)
    points = []
    for _ in range(N_POINTS):
        q = [float(v) for v in sampler(rng)]
        qm = [mp.mpf(v) for v in q]
        lp = lp_fn(qm)
        grad = []
        for j in range(len(q)):
            def f(t, j=j):
                r = list(qm)
                r[j] = t
                return lp_fn(r)
            grad.append(float(mp.diff(f, qm[j])))
        points.append({"q": q, "log_density": float(lp), "gradient": grad})
    print(f"{name} (mpmath): dim {len(points[0]['q'])}, lp {points[0]['log_density']:.6f}")
    return {"name": name, "program": code, "oracle": "mpmath", "data": json.dumps(data),
            "n_unconstrained": len(points[0]["q"]), "points": points}


def main():
    out = []
    for i, (name, spec) in enumerate(PROGRAMS.items()):
        code, data = spec[0], spec[1]
        oracle_code = spec[2] if len(spec) > 2 else code
        data_json = json.dumps(data)
        model = stanli.Model(stan_code=oracle_code, data=data_json)
        dim = model.n_unconstrained
        rng = np.random.default_rng(2000 + i)
        points = seeded_points(model, rng, N_POINTS, SCALE,
                               fd_step=FD_STEP if name in APPROXIMATE_GRADIENT else None, max_tries=1000, name=name)
        out.append({"name": name, "program": code, "oracle_program": oracle_code,
                    "data": data_json, "n_unconstrained": dim, "points": points})
        print(f"{name}: dim {dim}, lp {points[0]['log_density']:.6f}")
    for i, (name, spec) in enumerate(MP_PROGRAMS.items()):
        out.append(mp_program(i, name, spec))
    OUT.write_text(json.dumps({"generator": "scripts/dist/make_dist2_fixtures.py",
                               "stanli": stanli.__version__, "programs": out}, indent=1) + "\n")


if __name__ == "__main__":
    main()
