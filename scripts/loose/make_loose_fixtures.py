"""Writes crates/hazel-graph/tests/fixtures/loose.json: stanli 0.24 log densities and
gradients (CmdStan's lp__ convention, Jacobians included) of the call forms the checker
accepts since the issue-8 loose ends, at seeded unconstrained points:

- `$I`/`$R` functions with an int array matching a real container of as many dimensions
  (`falling_factorial(vector, array[] int)`, `bessel_second_kind(array[] int, vector)`,
  `bessel_first_kind(array[,] int, matrix)`, …), which stanc 2.37 accepts;
- poisson_binomial with `row_vector` and `array[] real` probabilities;

and `stanc_grid`: which argument types stanc 2.37 (`stanli.stan_to_mir`) accepts for each
two-argument vectorised function (`$I`/`$R` and `$R`/`$R` kinds) and for `step`, over the
`declarations` listed (the test checks hazel's checker against every pair).

Rerun with /work/venv-stanli/bin/python scripts/loose/make_loose_fixtures.py; the points are
seeded, so a rerun reproduces the file.
"""
import json
import pathlib

import numpy as np
import stanli

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "crates/hazel-graph/tests/fixtures/loose.json"
N_POINTS = 4
SCALE = 1.0

PROGRAMS = {
    "mixed_shapes_int_array_with_real_container": ("""
data { array[3] int n; array[2, 2] int m; }
parameters { vector<lower=0.5>[3] v; matrix<lower=0.5>[2, 2] M; array[2] vector<lower=0.5>[2] av; }
model {
  v ~ normal(1, 1); to_vector(M) ~ normal(1, 1); av[1] ~ normal(1, 1); av[2] ~ normal(1, 1);
  target += 0.1 * sum(falling_factorial(v + 2, n));
  target += 0.1 * sum(falling_factorial(v[1] + 3, n));
  target += 0.1 * sum(falling_factorial(v' + 2, n));
  target += 0.1 * sum(rising_factorial(M, m));
  target += 0.1 * sum(falling_factorial(av[1] + 2, n[1:2]));
  target += 0.1 * sum(ldexp(v', n));
  target += 0.1 * sum(rising_factorial(av, m)[2]);
  target += sum(bessel_second_kind(n, v));
  target += sum(bessel_first_kind(m, M));
  target += sum(modified_bessel_second_kind(n, v'));
  target += sum(modified_bessel_first_kind(n, v));
  target += sum(lmgamma(n, v + 2));
  target += sum(binary_log_loss(n[1:2], inv_logit(av[2])));
  target += sum(bessel_first_kind(m, av)[1]);
}""", {"n": [0, 1, 2], "m": [[1, 0], [2, 1]]}),
    "poisson_binomial_row_vector_and_array_probabilities": ("""
data { array[2] int y; }
parameters { array[4] real<lower=0, upper=1> th; row_vector<lower=0, upper=1>[3] r; }
model {
  y ~ poisson_binomial(th);
  target += poisson_binomial_lpmf(2 | th);
  target += poisson_binomial_lupmf(y | r);
  2 ~ poisson_binomial(r);
  target += poisson_binomial_lcdf(2 | th) + poisson_binomial_lccdf(1 | th);
  target += poisson_binomial_lcdf(y | r) + poisson_binomial_lccdf(y | r);
  target += log(poisson_binomial_cdf(1 | th));
}""", {"y": [1, 2]}),
}

GRID_FUNCTIONS = ["falling_factorial", "rising_factorial", "bessel_first_kind",
                  "bessel_second_kind", "modified_bessel_first_kind",
                  "modified_bessel_second_kind", "lmgamma", "binary_log_loss", "ldexp",
                  "choose", "pow", "lbeta", "log_modified_bessel_first_kind", "lmultiply"]
# Type -> a data declaration of it with `{}` for the name.
GRID_TYPES = {
    "int": "int {};", "real": "real {};", "vector": "vector[2] {};",
    "row_vector": "row_vector[2] {};", "matrix": "matrix[2, 2] {};",
    "array[] int": "array[2] int {};", "array[] real": "array[2] real {};",
    "array[] vector": "array[2] vector[2] {};", "array[] row_vector": "array[2] row_vector[2] {};",
    "array[,] int": "array[2, 2] int {};", "array[,] real": "array[2, 2] real {};",
    "array[,] vector": "array[2, 2] vector[2] {};", "array[] matrix": "array[2] matrix[2, 2] {};",
    "array[,,] int": "array[2, 2, 2] int {};",
}


def stanc_accepts(code):
    try:
        stanli.stan_to_mir(code)
        return True
    except Exception:  # stanc's type error
        return False


def grid_code(call, decls):
    return "data { " + " ".join(decls) + " }\ngenerated quantities { print(" + call + "); }\n"


def stanc_grid():
    accepted = {}
    for f in GRID_FUNCTIONS:
        accepted[f] = [[a, b] for a in GRID_TYPES for b in GRID_TYPES
                       if stanc_accepts(grid_code(f"{f}(x, y)", [GRID_TYPES[a].format("x"),
                                                                 GRID_TYPES[b].format("y")]))]
    accepted["step"] = [[a] for a in GRID_TYPES
                        if stanc_accepts(grid_code("step(x)", [GRID_TYPES[a].format("x")]))]
    return {"declarations": GRID_TYPES, "accepted": accepted}


def main():
    out = []
    for i, (name, (code, data)) in enumerate(PROGRAMS.items()):
        data_json = json.dumps(data)
        model = stanli.Model(stan_code=code, data=data_json)
        dim = model.n_unconstrained
        rng = np.random.default_rng(4000 + i)
        points = []
        tries = 0
        while len(points) < N_POINTS:
            tries += 1
            assert tries < 1000, name
            q = rng.uniform(-SCALE, SCALE, size=dim)
            try:
                lp, grad = model.log_prob_grad(q)
            except RuntimeError:  # a point the density rejects
                continue
            if not np.isfinite(lp):
                continue
            points.append({"q": q.tolist(), "log_density": float(lp),
                           "gradient": [float(g) for g in grad]})
        out.append({"name": name, "program": code, "data": data_json,
                    "n_unconstrained": dim, "points": points})
        print(f"{name}: dim {dim}, lp {points[0]['log_density']:.6f}")
    OUT.write_text(json.dumps({"generator": "scripts/loose/make_loose_fixtures.py",
                               "stanli": stanli.__version__, "programs": out,
                               "stanc_grid": stanc_grid()}, indent=1) + "\n")


if __name__ == "__main__":
    main()
