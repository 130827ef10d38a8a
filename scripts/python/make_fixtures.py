"""Fixtures for the Python package's tests (python/tests/fixtures/bridgestan.json): every
BridgeStan method of `hazel.Model`, answered by stanli 0.24.0's BridgeStan model
(`stanli.bridgestan_model`, which implements BridgeStan's C ABI over CmdStan-exact
densities) for the same program and data.

stanli's BridgeStan model gives only the sampler's density (propto=True, jacobian=True) and no
Hessians, so:
- the constants-included and no-Jacobian densities come from variant programs on the same
  unconstrained coordinates (`bounded_constants.stan`: every `~` as `target += …_lpdf`;
  `bounded_nojacobian.stan`: the transforms applied by `*_constrain` functions, no Jacobian);
- Hessians and Hessian-vector products are Stan Math's finite-difference rules
  (`finite_diff_hessian_auto`, `finite_diff_hessian_times_vector_auto`, BridgeStan's defaults)
  applied to stanli's gradients, written out below.

Run with the Python that has stanli and bridgestan (the bench venv plus `pip install
bridgestan==2.9.0`):

    python scripts/python/make_fixtures.py
"""

import json
import sys
from pathlib import Path

import numpy as np
import stanli

REPO = Path(__file__).resolve().parents[2]
MODELS = REPO / "python" / "tests" / "models"
OUT = REPO / "python" / "tests" / "fixtures" / "bridgestan.json"

# (name, program, data, seed of the points, whether the generated quantities are
# deterministic, variant programs for the other densities)
SPECS = [
    ("eight_schools", REPO / "examples/eight_schools/model.stan",
     REPO / "examples/eight_schools/data.json", 11, True, None),
    ("constraints", MODELS / "constraints.stan", MODELS / "constraints.json", 12, True, None),
    ("bounded", MODELS / "bounded.stan", MODELS / "bounded.json", 13, True, {
        "propto_false": MODELS / "bounded_constants.stan",
        "jacobian_false": MODELS / "bounded_nojacobian.stan",
        "both_false": MODELS / "bounded_constants_nojacobian.stan",
    }),
    ("gq_rng", MODELS / "gq_rng.stan", None, 14, False, None),
    ("dynamic", MODELS / "dynamic.stan", None, 15, True, None),
    ("logistic_regression", REPO / "examples/logistic_regression/model.stan",
     REPO / "examples/logistic_regression/data.json", 16, True, None),
]

N_POINTS = 3
SCALE = 1.5


def relative(path):
    return str(Path(path).relative_to(REPO))


def bridgestan(program, data):
    return stanli.bridgestan_model(stan_file=str(program),
                                   data=None if data is None else str(data))


def finite_diff_hessian(model, q):
    """Stan Math's finite_diff_hessian_auto: central differences of gradients with step
    cbrt(eps) * max(1, |q_i|), symmetrised."""
    d = len(q)
    eps = np.cbrt(np.finfo(float).eps) * np.maximum(1.0, np.abs(q))
    g_plus, g_minus = [], []
    for i in range(d):
        e = np.zeros(d)
        e[i] = eps[i]
        g_plus.append(model.log_density_gradient(q + e)[1].copy())
        g_minus.append(model.log_density_gradient(q - e)[1].copy())
    h = np.zeros((d, d))
    for i in range(d):
        for j in range(i, d):
            h[j, i] = ((g_plus[j][i] - g_minus[j][i]) / (4 * eps[j])
                       + (g_plus[i][j] - g_minus[i][j]) / (4 * eps[i]))
            h[i, j] = h[j, i]
    return h


def finite_diff_hvp(model, q, v):
    """Stan Math's finite_diff_hessian_times_vector_auto."""
    eps = np.sqrt(np.finfo(float).eps) * (1 + np.linalg.norm(q)) / np.linalg.norm(v)
    g_plus = model.log_density_gradient(q + eps * v)[1].copy()
    g_minus = model.log_density_gradient(q - eps * v)[1].copy()
    return (g_plus - g_minus) / (2 * eps)


def as_json_values(names, values):
    """Constrained parameter values by name, each nested in CmdStan JSON's row-major order,
    from the flat column-major values of `names` (`a`, `a.1`, `a.2.3`)."""
    by_var = {}
    for name, value in zip(names, values):
        base, *index = name.split(".")
        by_var.setdefault(base, []).append((tuple(int(i) for i in index), value))
    out = {}
    for base, entries in by_var.items():
        if entries[0][0] == ():
            out[base] = float(entries[0][1])
            continue
        shape = tuple(max(idx[k] for idx, _ in entries) for k in range(len(entries[0][0])))
        array = np.zeros(shape)
        for idx, value in entries:
            array[tuple(i - 1 for i in idx)] = value
        out[base] = array.tolist()
    return out


def model_fixture(name, program, data, seed, gq_deterministic, variants):
    model = bridgestan(program, data)
    fixture = {
        "program": relative(program),
        "data": None if data is None else relative(data),
        "param_unc_num": model.param_unc_num(),
        "param_unc_names": model.param_unc_names(),
        "param_num": {},
        "param_names": {},
        "points": [],
    }
    for tp in (False, True):
        for gq in (False, True):
            key = f"tp={tp},gq={gq}"
            fixture["param_num"][key] = model.param_num(include_tp=tp, include_gq=gq)
            fixture["param_names"][key] = model.param_names(include_tp=tp, include_gq=gq)
    variant_models = {k: bridgestan(p, data) for k, p in (variants or {}).items()}
    rng = np.random.default_rng(seed)
    d = model.param_unc_num()
    names = model.param_names()
    while len(fixture["points"]) < N_POINTS:
        q = rng.uniform(-SCALE, SCALE, size=d)
        try:
            lp, grad = model.log_density_gradient(q)
        except RuntimeError:
            continue
        if not np.isfinite(lp):
            continue
        grad = grad.copy()
        theta = model.param_constrain(q)
        stan_rng = model.new_rng(seed)
        point = {
            "q": q.tolist(),
            "log_density": float(lp),
            "gradient": grad.tolist(),
            "constrained": theta.tolist(),
            "constrained_tp": model.param_constrain(q, include_tp=True).tolist(),
            "unconstrained": model.param_unconstrain(theta).tolist(),
            "json": as_json_values(names, theta),
            "hessian": finite_diff_hessian(model, q).tolist(),
        }
        point["unconstrained_json"] = model.param_unconstrain_json(
            json.dumps(point["json"])).tolist()
        v = rng.normal(size=d)
        point["v"] = v.tolist()
        point["hvp"] = finite_diff_hvp(model, q, v).tolist()
        if gq_deterministic:
            point["constrained_tp_gq"] = model.param_constrain(
                q, include_tp=True, include_gq=True, rng=stan_rng).tolist()
            point["constrained_gq"] = model.param_constrain(
                q, include_gq=True, rng=stan_rng).tolist()
        for key, variant in variant_models.items():
            vlp, vgrad = variant.log_density_gradient(q)
            point[key] = {"log_density": float(vlp), "gradient": vgrad.tolist()}
        fixture["points"].append(point)
    return fixture


def main():
    assert stanli.exact_lp(), "this stanli build does not reproduce CmdStan's lp__"
    fixtures = {"stanli": stanli.__version__ if hasattr(stanli, "__version__") else "0.24.0",
                "models": {}}
    for spec in SPECS:
        print(spec[0], file=sys.stderr)
        fixtures["models"][spec[0]] = model_fixture(*spec)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(fixtures, indent=1) + "\n")
    print(f"wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
