#!/usr/bin/env python3
"""Reference values for hazel-math's linalg module into
crates/hazel-math/tests/fixtures/linalg.json:

- numpy: cholesky, inverse, log|det| of fixed matrices;
- scipy: multi_normal, dirichlet, multinomial log densities (all constants kept);
- stanli (current CmdStan semantics): lkj_corr_cholesky_lpdf and lkj_corr_lpdf with all
  constants (`target +=`), value and derivative in eta, at several eta including 1 (where Stan
  uses a separate closed form for the constant).

Usage: python3 scripts/transforms/make_linalg_fixtures.py   (needs numpy, scipy, stanli)
"""
import json
import os

import numpy as np
import scipy.stats as st
import stanli

rng = np.random.default_rng(424242)


def col_major(m):
    return [float(v) for v in np.asarray(m).flatten(order="F")]


def spd(n):
    a = rng.normal(size=(n, n))
    return a @ a.T + n * np.eye(n)


def random_corr(k):
    s = spd(k)
    d = np.sqrt(np.diag(s))
    return s / np.outer(d, d)


out = {"generator": "scripts/transforms/make_linalg_fixtures.py"}

# Dense matrix functions.
dense = []
for n in (1, 3, 6):
    a = spd(n)
    g = rng.normal(size=(n, n)) + 2 * np.eye(n)
    dense.append({
        "n": n,
        "spd": col_major(a),
        "cholesky": col_major(np.linalg.cholesky(a)),
        "spd_inverse": col_major(np.linalg.inv(a)),
        "spd_log_det": float(np.linalg.slogdet(a)[1]),
        "general": col_major(g),
        "general_inverse": col_major(np.linalg.inv(g)),
        "general_log_abs_det": float(np.linalg.slogdet(g)[1]),
    })
out["dense"] = dense

# multi_normal / multi_normal_cholesky (3 observations, shared mean).
mn = []
for n in (1, 2, 4):
    sigma = spd(n)
    mu = rng.normal(size=n)
    ys = rng.multivariate_normal(mu, sigma, size=3)
    lp = float(sum(st.multivariate_normal(mu, sigma).logpdf(y) for y in ys))
    mn.append({"n": n, "n_obs": 3, "y": [float(v) for v in ys.flatten()], "mu": [float(v) for v in mu], "sigma": col_major(sigma),
               "cholesky": col_major(np.linalg.cholesky(sigma)), "log_density": lp})
out["multi_normal"] = mn

# dirichlet.
dl = []
for k in (2, 3, 6):
    alpha = rng.gamma(2.0, 1.0, size=k) + 0.1
    theta = rng.dirichlet(alpha)
    theta = theta / theta.sum()
    dl.append({"alpha": [float(v) for v in alpha], "theta": [float(v) for v in theta], "log_density": float(st.dirichlet.logpdf(theta, alpha))})
out["dirichlet"] = dl

# multinomial.
mt = []
for k in (2, 4):
    theta = rng.dirichlet(np.ones(k))
    theta = theta / theta.sum()
    ns = rng.multinomial(12, theta)
    mt.append({"ns": [int(v) for v in ns], "theta": [float(v) for v in theta], "log_mass": float(st.multinomial.logpmf(ns, ns.sum(), theta))})
out["multinomial"] = mt

# LKJ through stanli, with eta = exp(u) so that d lp / du = eta · d lp / d eta.
LKJ_CHOL = """data { int K; matrix[K, K] L; } parameters { real u; }
model { target += lkj_corr_cholesky_lpdf(L | exp(u)); }"""
LKJ = """data { int K; matrix[K, K] Omega; } parameters { real u; }
model { target += lkj_corr_lpdf(Omega | exp(u)); }"""
lkj = []
for k in (2, 3, 5):
    omega = random_corr(k)
    chol = np.linalg.cholesky(omega)
    for eta in (1.0, 0.7, 2.5):
        u = float(np.log(eta))
        m1 = stanli.Model(stan_code=LKJ_CHOL, data=json.dumps({"K": k, "L": chol.tolist()}))
        lp1, g1 = m1.log_prob_grad([u])
        m2 = stanli.Model(stan_code=LKJ, data=json.dumps({"K": k, "Omega": omega.tolist()}))
        lp2, g2 = m2.log_prob_grad([u])
        lkj.append({"k": k, "eta": eta, "cholesky": col_major(chol), "omega": col_major(omega),
                    "lkj_corr_cholesky": float(lp1), "lkj_corr_cholesky_d_eta": float(g1[0]) / eta,
                    "lkj_corr": float(lp2), "lkj_corr_d_eta": float(g2[0]) / eta})
out["lkj"] = lkj

path = os.path.join(os.path.dirname(__file__), "..", "..", "crates", "hazel-math", "tests", "fixtures", "linalg.json")
with open(path, "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
print(f"wrote {os.path.normpath(path)}")
