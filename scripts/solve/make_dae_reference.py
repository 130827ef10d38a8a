"""Writes crates/hazel-math/tests/fixtures/robertson_dae.json: Robertson's chemical kinetics
(rate constants 0.04, 1e4, 3e7; y(0) = (1, 0, 0)) at t = 0.4, 4, 40, 400, solved by scipy's
Radau (solve_ivp, rtol 1e-13, atol 1e-16 on the ODE form y3' = 3e7 y2^2), the reference for the
DAE form in hazel-math's `dae_solver` test.

Rerun with
    /work/venv-stanli/bin/python scripts/solve/make_dae_reference.py
"""
import json
import pathlib

import numpy as np
import scipy
from scipy.integrate import solve_ivp

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "crates/hazel-math/tests/fixtures/robertson_dae.json"
K = (0.04, 1e4, 3e7)
TS = [0.4, 4.0, 40.0, 400.0]


def rhs(t, y):
    k1, k2, k3 = K
    return [-k1 * y[0] + k2 * y[1] * y[2],
            k1 * y[0] - k2 * y[1] * y[2] - k3 * y[1] ** 2,
            k3 * y[1] ** 2]


def jac(t, y):
    k1, k2, k3 = K
    return [[-k1, k2 * y[2], k2 * y[1]],
            [k1, -k2 * y[2] - 2 * k3 * y[1], -k2 * y[1]],
            [0.0, 2 * k3 * y[1], 0.0]]


sol = solve_ivp(rhs, (0.0, TS[-1]), [1.0, 0.0, 0.0], method="Radau", t_eval=TS,
                rtol=1e-13, atol=1e-16, jac=jac)
assert sol.success
OUT.write_text(json.dumps({"generator": "scripts/solve/make_dae_reference.py",
                           "scipy": scipy.__version__, "k": K, "ts": TS,
                           "y": np.asarray(sol.y).T.tolist()}, indent=1) + "\n")
print(np.asarray(sol.y).T)
