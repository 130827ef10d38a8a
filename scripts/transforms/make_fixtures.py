#!/usr/bin/env python3
"""Reference values for hazel-math's constraining transforms, computed with stanli (which
matches current CmdStan, 2.37) into crates/hazel-math/tests/fixtures/transforms.json.

For each parameter type we build the Stan program

    data { vector[n] c; } parameters { <type> x; } model { target += dot_product(c, to_vector(x)); }

whose log density at the unconstrained point q is  c · x(q) + log J(q)  (x flattened in Stan's
column-major order). That is exactly the quantity whose gradient a transform's adjoint rule
computes, so one call gives the reference for `*_constrain_adjoint`. With c = 0 the log density
is the log-Jacobian alone, and with c = e_i it is x_i + log J, which recovers the constrained
values. `Model.unconstrain` gives the inverse transform for the round-trip check.

Usage: python3 scripts/transforms/make_fixtures.py   (needs `pip install stanli numpy`)
"""
import json
import os

import numpy as np
import stanli

# (name, Stan type, number of free values, number of constrained values)
CASES = [
    ("lower", "vector<lower=1.5>[3]", 3, 3),
    ("upper", "vector<upper=-0.5>[3]", 3, 3),
    ("lower_upper", "vector<lower=-1, upper=2.5>[3]", 3, 3),
    ("offset_multiplier", "vector<offset=1, multiplier=3>[3]", 3, 3),
    ("ordered", "ordered[4]", 4, 4),
    ("positive_ordered", "positive_ordered[4]", 4, 4),
    ("simplex", "simplex[5]", 4, 5),
    ("unit_vector", "unit_vector[4]", 4, 4),
    ("sum_to_zero_vector", "sum_to_zero_vector[5]", 4, 5),
    ("sum_to_zero_matrix", "sum_to_zero_matrix[3, 4]", 6, 12),
    ("cholesky_factor_corr", "cholesky_factor_corr[4]", 6, 16),
    ("cholesky_factor_cov", "cholesky_factor_cov[4, 3]", 9, 12),
    ("cholesky_factor_cov_square", "cholesky_factor_cov[3]", 6, 9),
    ("cov_matrix", "cov_matrix[3]", 6, 9),
    ("corr_matrix", "corr_matrix[4]", 6, 16),
]
POINTS_PER_CASE = 3
SEED = 20240601


def program(stan_type, n_con):
    flat = "x" if stan_type.startswith(("vector", "ordered", "positive", "simplex", "unit", "sum_to_zero_vector")) else "to_vector(x)"
    return (
        f"data {{ vector[{n_con}] c; }}\n"
        f"parameters {{ {stan_type} x; }}\n"
        f"model {{ target += dot_product(c, {flat}); }}\n"
    )


def log_prob_grad(code, c, q):
    model = stanli.Model(stan_code=code, data=json.dumps({"c": list(map(float, c))}))
    lp, grad = model.log_prob_grad(list(map(float, q)))
    return model, float(lp), [float(g) for g in grad]


def main():
    rng = np.random.default_rng(SEED)
    out = {"generator": "scripts/transforms/make_fixtures.py", "stanli_version": getattr(stanli, "__version__", "unknown"), "cases": []}
    for name, stan_type, n_free, n_con in CASES:
        code = program(stan_type, n_con)
        points = []
        for p in range(POINTS_PER_CASE):
            # Points at increasing scale: near the origin, typical, and far out.
            q = rng.normal(size=n_free) * (0.5, 1.0, 2.5)[p]
            c = rng.normal(size=n_con)
            zero_model, log_jacobian, jac_grad = log_prob_grad(code, np.zeros(n_con), q)
            assert zero_model.n_unconstrained == n_free, (name, zero_model.n_unconstrained)
            x = []
            for i in range(n_con):
                e = np.zeros(n_con)
                e[i] = 1.0
                _, lp_i, _ = log_prob_grad(code, e, q)
                x.append(lp_i - log_jacobian)
            _, lp, grad = log_prob_grad(code, c, q)
            # The inverse transform of the (rounded) constrained value gives q back, except for
            # unit_vector, which is not one-to-one (Stan returns x itself).
            roundtrip = [float(v) for v in zero_model.unconstrain({"x": x})]
            if name != "unit_vector":
                assert np.allclose(roundtrip, q, atol=1e-6), (name, roundtrip, q)
            points.append({"q": list(map(float, q)), "c": list(map(float, c)), "log_density": lp, "gradient": grad,
                           "log_jacobian": log_jacobian, "constrained": x, "unconstrained_from_constrained": roundtrip})
        out["cases"].append({"name": name, "stan_type": stan_type, "n_free": n_free, "n_constrained": n_con, "points": points})
    path = os.path.join(os.path.dirname(__file__), "..", "..", "crates", "hazel-math", "tests", "fixtures", "transforms.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"wrote {os.path.normpath(path)}: {len(out['cases'])} cases")


if __name__ == "__main__":
    main()
