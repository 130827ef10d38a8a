"""Reference solutions of two stiff problems for hazel's stiff ODE solver (`ode_bdf`).

scipy's Radau IIA (order 5) at rtol 1e-12, atol 1e-14:
Robertson kinetics, k = (0.04, 3e7, 1e4), y0 = (1, 0, 0), t up to 4e4. (Van der Pol with
mu = 1000 is not here: scipy's Radau does not finish it at rtol 1e-12 in reasonable time; the
Rust test checks it by the step limit and against itself at a tighter tolerance.)
Writes crates/hazel-math/tests/fixtures/ode_stiff.json.
Run: /work/venv-stanli/bin/python scripts/ode/make_stiff_fixtures.py
"""
import json
import pathlib

import numpy as np
from scipy.integrate import solve_ivp


def robertson(t, y, k1, k2, k3):
    return [
        -k1 * y[0] + k3 * y[1] * y[2],
        k1 * y[0] - k3 * y[1] * y[2] - k2 * y[1] ** 2,
        k2 * y[1] ** 2,
    ]


def robertson_jac(t, y, k1, k2, k3):
    return [
        [-k1, k3 * y[2], k3 * y[1]],
        [k1, -k3 * y[2] - 2 * k2 * y[1], -k3 * y[1]],
        [0.0, 2 * k2 * y[1], 0.0],
    ]


def solve(f, jac, y0, ts, args):
    sol = solve_ivp(f, (0.0, ts[-1]), y0, method="Radau", t_eval=ts, args=args,
                    jac=jac, rtol=1e-12, atol=1e-14)
    assert sol.success, sol.message
    return sol.y.T.tolist()


cases = []
ts = [0.4, 4.0, 40.0, 400.0, 4000.0, 40000.0]
k = (0.04, 3e7, 1e4)
cases.append({"name": "robertson", "params": list(k), "y0": [1.0, 0.0, 0.0], "t0": 0.0,
              "ts": ts, "y": solve(robertson, robertson_jac, [1.0, 0.0, 0.0], ts, k)})

out = pathlib.Path(__file__).resolve().parents[2] / "crates/hazel-math/tests/fixtures/ode_stiff.json"
out.write_text(json.dumps({"generator": "scipy solve_ivp Radau rtol=1e-12 atol=1e-14",
                           "cases": cases}, indent=1) + "\n")
print("wrote", out)
