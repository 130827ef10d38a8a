#!/usr/bin/env python3
"""stanli fixtures for the ODE solver names beyond rk45: `ode_ckrk`, `ode_ckrk_tol`,
`ode_bdf`/`ode_bdf_tol` (a stiff Robertson system and the oscillator) and
`ode_adjoint_tol_ctl` (both forward solvers), as lp + gradient at seeded points.

Writes crates/hazel-graph/tests/fixtures/ode_solvers.json in the shared fixture format
(tests/common/mod.rs). Points: numpy default_rng(SEED).uniform(-1, 1) per coordinate.

    /work/venv-stanli/bin/python scripts/ode/make_ode_solver_fixtures.py
"""

import json
import os

import numpy as np
import stanli

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, "crates", "hazel-graph", "tests", "fixtures", "ode_solvers.json")
SEED = 20261125
N_POINTS = 3

SHO_FN = """
functions {
  vector sho(real t, vector y, real theta) {
    vector[2] dydt;
    dydt[1] = y[2];
    dydt[2] = -y[1] - theta * y[2];
    return dydt;
  }
}
"""
SHO_DATA = json.dumps({"T": 4, "ts": [0.5, 1.0, 2.0, 3.5],
                       "y": [[0.6, -1.1], [0.1, -1.0], [-0.8, -0.2], [-0.6, 0.7]]})


def sho(call):
    return SHO_FN + """
data { int T; array[T] real ts; array[T] vector[2] y; }
parameters { vector[2] y0; real<lower=0> theta; real<lower=0> sigma; }
model {
  array[T] vector[2] mu = %s;
  y0 ~ normal(1, 0.5);
  theta ~ normal(0.3, 0.2);
  sigma ~ lognormal(-1, 0.5);
  for (t in 1:T) y[t] ~ normal(mu[t], sigma);
}
""" % call


ROB = """
functions {
  vector rob(real t, vector y, real k1, real k2, real k3) {
    vector[3] dydt;
    dydt[1] = -k1 * y[1] + k3 * y[2] * y[3];
    dydt[2] = k1 * y[1] - k3 * y[2] * y[3] - k2 * square(y[2]);
    dydt[3] = k2 * square(y[2]);
    return dydt;
  }
}
data { int T; array[T] real ts; array[T] vector[3] y; }
parameters { real<lower=0> k1; real<lower=0> k2; real<lower=0> k3; real<lower=0> sigma; }
model {
  array[T] vector[3] mu = %s;
  k1 ~ lognormal(log(0.04), 0.3);
  k2 ~ lognormal(log(3e7), 0.3);
  k3 ~ lognormal(log(1e4), 0.3);
  sigma ~ lognormal(-3, 0.5);
  for (t in 1:T) y[t] ~ normal(mu[t], sigma);
}
"""
ROB_DATA = json.dumps({"T": 4, "ts": [0.4, 4.0, 40.0, 400.0],
                       "y": [[0.985, 3.4e-5, 0.015], [0.905, 2.2e-5, 0.092],
                             [0.716, 9.2e-6, 0.284], [0.451, 3.2e-6, 0.549]]})

PROGRAMS = [
    ("ckrk", sho("ode_ckrk(sho, y0, 0.0, ts, theta)"), SHO_DATA),
    ("ckrk_tol", sho("ode_ckrk_tol(sho, y0, 0.0, ts, 1e-8, 1e-8, 100000, theta)"), SHO_DATA),
    ("bdf_sho", sho("ode_bdf_tol(sho, y0, 0.0, ts, 1e-10, 1e-10, 100000, theta)"), SHO_DATA),
    # Stan's default tolerances (1e-6, 1e-6, 1e6 steps): CVODES's own error is ~1e-6 here, so
    # the test compares these at that level, not at rounding.
    ("bdf_default", sho("ode_bdf(sho, y0, 0.0, ts, theta)"), SHO_DATA),
    ("adams_default", sho("ode_adams(sho, y0, 0.0, ts, theta)"), SHO_DATA),
    ("adams_tol", sho("ode_adams_tol(sho, y0, 0.0, ts, 1e-10, 1e-10, 100000, theta)"), SHO_DATA),
    ("bdf_robertson", ROB % "ode_bdf_tol(rob, [1, 0, 0]', 0.0, ts, 1e-10, 1e-14, 100000, k1, k2, k3)",
     ROB_DATA),
    ("adjoint_bdf", sho("ode_adjoint_tol_ctl(sho, y0, 0.0, ts, 1e-10, rep_vector(1e-10, 2), "
                        "1e-10, rep_vector(1e-10, 2), 1e-10, 1e-10, 100000, 150, 1, 2, 2, theta)"),
     SHO_DATA),
    ("adjoint_adams", sho("ode_adjoint_tol_ctl(sho, y0, 0.0, ts, 1e-10, rep_vector(1e-10, 2), "
                          "1e-9, rep_vector(1e-9, 2), 1e-9, 1e-9, 100000, 150, 2, 1, 1, theta)"),
     SHO_DATA),
]


def main():
    programs = []
    for name, code, data in PROGRAMS:
        model = stanli.Model(stan_code=code, data=data)
        rng = np.random.default_rng(SEED)
        pts = []
        for _ in range(N_POINTS):
            q = rng.uniform(-1.0, 1.0, size=model.n_unconstrained)
            lp, grad = model.log_prob_grad(q)
            pts.append({"q": [float(x) for x in q], "log_density": float(lp),
                        "gradient": [float(g) for g in grad]})
        programs.append({"name": name, "program": code, "data": data,
                         "n_unconstrained": model.n_unconstrained, "points": pts})
        print(name, "ok")
    with open(OUT, "w") as f:
        json.dump({"generator": "scripts/ode/make_ode_solver_fixtures.py (stanli 0.24.0)",
                   "programs": programs}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
