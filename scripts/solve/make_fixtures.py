"""Writes crates/hazel-graph/tests/fixtures/solve.json: stanli 0.24.0 log densities and
gradients (CmdStan's lp__ convention) of small programs using Stan's algebraic solvers
(`solve_newton`, `solve_powell`, their `_tol` forms, the deprecated `algebra_solver` and
`algebra_solver_newton` with and without control arguments), with parameters in the variadic
arguments of every type, in the guess, and in data-only (transformed data) calls, at seeded
unconstrained points. Points also store central differences of stanli's log density (step
1e-6), which the Rust test compares with hazel's gradient as well, except for the programs in
LOOSE: Newton at Stan's default tolerances (function tolerance 1e-6, scaled step 1e-3) stops
about 1e-7 from the root, and the root that a perturbed point converges to moves by as much,
so differences of step 1e-6 carry errors of ~1e-6 relative there.

Rerun with
    /work/venv-stanli/bin/python scripts/solve/make_fixtures.py
(stanli and numpy from pip); the points are seeded, so a rerun reproduces the file.
"""
import json
import sys
import pathlib

import numpy as np
import stanli

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from oracle_points import seeded_points  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "crates/hazel-graph/tests/fixtures/solve.json"
N_POINTS = 3
SCALE = 1.0
FD_STEP = 1e-6
LOOSE = {"solve_newton", "algebra_solver_newton", "steady_solve_newton", "branching_system",
         "far_guess_solve_newton"}

QUAD = """
functions {
  vector quad(vector x, real a, real b) {
    return [x[1]^2 - a, x[2] - b * x[1]]';
  }
  vector quad_old(vector x, vector th, data array[] real xr, array[] int xi) {
    return [x[1]^2 - th[1], x[2] - th[2] * x[1] - xr[1] * xi[1]]';
  }
}
"""
QUAD_PARAMS = """
parameters { real<lower=0.2, upper=5> a; real b; }
"""
QUAD_PRIOR = "  a ~ lognormal(0, 1);\n  b ~ normal(0, 1);\n"


def quad_program(call):
    return {"program": QUAD + QUAD_PARAMS + f"""
transformed parameters {{
  vector[2] s = {call};
}}
model {{
{QUAD_PRIOR}  s ~ normal([1.5, 0.3]', 0.7);
}}
""", "data": {}}


PROGRAMS = {
    "solve_newton": quad_program("solve_newton(quad, [1, 1]', a, b)"),
    "solve_powell": quad_program("solve_powell(quad, [1, 1]', a, b)"),
    "solve_newton_tol": quad_program("solve_newton_tol(quad, [1, 1]', 1e-10, 1e-12, 100, a, b)"),
    "solve_powell_tol": quad_program("solve_powell_tol(quad, [1, 1]', 1e-12, 1e-10, 500, a, b)"),
    "algebra_solver": quad_program("algebra_solver(quad_old, [1, 1]', [a, b]', {0.25}, {2})"),
    "algebra_solver_control": quad_program(
        "algebra_solver(quad_old, [1, 1]', [a, b]', {0.25}, {2}, 1e-12, 1e-10, 300)"),
    "algebra_solver_newton": quad_program(
        "algebra_solver_newton(quad_old, [1, 1]', [a, b]', {0.25}, {2})"),
    "algebra_solver_newton_control": quad_program(
        "algebra_solver_newton(quad_old, [1, 1]', [a, b]', {0.25}, {2}, 1e-10, 1e-12, 100)"),
    # The guess is a parameter (no gradient through it), the system's arguments data and one
    # parameter.
    "param_guess": quad_program("solve_powell(quad, [a, 1 + b^2]', a, 0.5)"),
    "param_guess_only": {"program": QUAD + QUAD_PARAMS + """
transformed parameters {
  vector[2] s = solve_newton_tol(quad, [a, b]', 1e-10, 1e-12, 100, 2.0, 0.5);
}
model {
""" + QUAD_PRIOR + """  target += s[1] * a + s[2] * b;
}
""", "data": {}},
}

# Far from the root: Newton's line search and step cuts, Powell's trust region at work.
ROSEN = """
functions {
  vector rosen(vector x, real a) { return [10 * (x[2] - square(x[1])), a - x[1]]'; }
}
parameters { real<lower=0.5, upper=2> a; }
"""
for solver in ["solve_newton", "solve_powell"]:
    PROGRAMS[f"far_guess_{solver}"] = {"program": ROSEN + f"""
transformed parameters {{ vector[2] x = {solver}(rosen, [-1.2, 1]', a); }}
model {{ a ~ lognormal(0, 0.3); x ~ normal(1, 0.5); }}
""", "data": {}}

# Variadic arguments of every type, mixing data and parameters: a 3-equation steady state
# A x + s * x^3 = mu + k * c  (componentwise cube), A diagonally dominant.
STEADY = """
functions {
  vector steady(vector x, matrix A, vector mu, real s, array[] real c, data array[] int k) {
    vector[3] r = A * x + s * x .* x .* x - mu;
    for (i in 1:3) r[i] -= k[i] * c[i];
    return r;
  }
}
data { matrix[3, 3] A0; array[3] int k; }
"""
STEADY_PARAMS = """
parameters { vector[3] mu; real<lower=0> s; array[3] real c; real<lower=0> d; }
"""
STEADY_DATA = {"A0": [[3.0, 0.5, -0.2], [0.1, 2.5, 0.4], [-0.3, 0.2, 4.0]], "k": [1, 0, 2]}
for solver in ["solve_newton", "solve_powell"]:
    PROGRAMS[f"steady_{solver}"] = {"program": STEADY + STEADY_PARAMS + f"""
transformed parameters {{
  matrix[3, 3] A = add_diag(A0, d);
  vector[3] x = {solver}(steady, rep_vector(0, 3), A, mu, s, c, k);
}}
model {{
  mu ~ normal(0, 1); s ~ lognormal(-1, 0.5); c ~ normal(0, 0.5); d ~ lognormal(0, 0.5);
  x ~ normal(0.2, 0.5);
}}
""", "data": STEADY_DATA}

# Data-only calls (transformed data, generated-quantities-free): solved once.
PROGRAMS["data_only"] = {"program": STEADY + """
transformed data {
  vector[3] x0 = solve_powell(steady, rep_vector(0, 3), A0, [1, 2, 3]', 0.5, {0.1, 0.2, 0.3}, k);
  vector[3] x1 = solve_newton(steady, rep_vector(1, 3), A0, [1, 2, 3]', 0.5, {0.1, 0.2, 0.3}, k);
}
""" + STEADY_PARAMS + """
model {
  mu ~ normal(x0, 1); s ~ lognormal(-1, 0.5); c ~ normal(x1, 0.5); d ~ lognormal(0, 0.5);
}
""", "data": STEADY_DATA}

# A system whose body branches on the unknowns and on a parameter (the model re-traces).
PROGRAMS["branching_system"] = {"program": """
functions {
  vector branchy(vector x, real a) {
    if (x[1] > 0 && a > 0.5) return [x[1]^2 - a]';
    return [x[1]^3 - a]';
  }
}
parameters { real<lower=0.1, upper=3> a; }
transformed parameters { vector[1] r = solve_newton(branchy, [1]', a); }
model { a ~ lognormal(0, 1); r ~ normal(1, 0.3); }
""", "data": {}}

# DAEs (Stan 2.37's `dae`, `dae_tol`). Index-1 systems: a decay with an algebraic state, and
# Robertson's chemical kinetics with scaled rate constants (stiff). IDAS at 1e-10 and our BDF
# agree to ~1e-9, far inside stanli's finite differences' noise, so DAE programs are in LOOSE.
DECAY = """
functions {
  vector decay(real t, vector y, vector yp, real a, real b) {
    return [yp[1] + a * y[1], y[2] - b * y[1]]';
  }
}
data { array[4] real ts; array[4] vector[2] obs; }
"""
DECAY_DATA = {"ts": [0.5, 1.0, 2.0, 3.5],
              "obs": [[1.2, 0.9], [0.8, 0.7], [0.5, 0.3], [0.2, 0.15]]}
PROGRAMS["dae_decay"] = {"program": DECAY + """
parameters { real<lower=0> a; real b; real<lower=0> y0; }
transformed parameters {
  array[4] vector[2] y = dae(decay, [y0, b * y0]', [-a * y0, -a * b * y0]', 0.0, ts, a, b);
}
model {
  a ~ lognormal(-0.5, 0.5); b ~ normal(1, 0.5); y0 ~ lognormal(0, 0.5);
  for (j in 1:4) obs[j] ~ normal(y[j], 0.2);
}
""", "data": DECAY_DATA}
PROGRAMS["dae_tol_decay_data_y0"] = {"program": DECAY + """
parameters { real<lower=0> a; real b; }
transformed parameters {
  array[4] vector[2] y = dae_tol(decay, [1.5, 1.5]', [-1.5 * a, -1.5 * a]', 0.0, ts,
                                 1e-9, 1e-10, 100000, a, 1.0);
}
model {
  a ~ lognormal(-0.5, 0.5); b ~ normal(1, 0.5);
  for (j in 1:4) obs[j] ~ normal(y[j] * b, 0.2);
}
""", "data": DECAY_DATA}
PROGRAMS["dae_data_only"] = {"program": DECAY + """
transformed data {
  array[4] vector[2] yd = dae(decay, [1.5, 0.75]', [-0.45, -0.225]', 0.0, ts, 0.3, 0.5);
}
parameters { real mu; }
model { for (j in 1:4) obs[j] ~ normal(yd[j] + mu, 0.2); }
""", "data": DECAY_DATA}
PROGRAMS["dae_robertson"] = {"program": """
functions {
  vector chem(real t, vector y, vector yp, vector k) {
    return [yp[1] + k[1] * y[1] - k[2] * y[2] * y[3],
            yp[2] - k[1] * y[1] + k[2] * y[2] * y[3] + k[3] * square(y[2]),
            y[1] + y[2] + y[3] - 1]';
  }
}
data { array[3] real ts; array[3] real y3; }
parameters { vector<lower=0>[3] u; }
transformed parameters {
  vector[3] k = [0.04, 1e4, 3e7]' .* u;
  array[3] vector[3] y = dae_tol(chem, [1, 0, 0]', [-k[1], k[1], 0]', 0.0, ts,
                                 1e-10, 1e-12, 100000, k);
}
model {
  u ~ lognormal(0, 0.3);
  y3 ~ normal(y[:, 3], 0.01);
}
""", "data": {"ts": [0.4, 4.0, 40.0], "y3": [0.015, 0.09, 0.3]}}
# A residual that branches on the state (the model re-traces).
PROGRAMS["dae_branching"] = {"program": """
functions {
  vector kinked(real t, vector y, vector yp, real a) {
    if (y[1] > 0.5) return [yp[1] + a * y[1]]';
    return [yp[1] + a * y[1] * y[1] * 2]';
  }
}
data { array[4] real ts; array[4] vector[2] obs; }
parameters { real<lower=0> a; }
transformed parameters { array[4] vector[1] y = dae(kinked, [1]', [-a]', 0.0, ts, a); }
model { a ~ lognormal(-0.5, 0.5); for (j in 1:4) obs[j][1] ~ normal(y[j][1], 0.2); }
""", "data": DECAY_DATA}
# A residual that switches on time only (an infusion that stops at t = 1): the model stays
# static, the op re-traces the residual per call.
PROGRAMS["dae_time_switch"] = {"program": """
functions {
  vector infusion(real t, vector y, vector yp, real a) {
    real rate = t < 1 ? 1.0 : 0.0;
    return [yp[1] + a * y[1] - rate, y[2] - 2 * y[1]]';
  }
}
data { array[4] real ts; array[4] vector[2] obs; }
parameters { real<lower=0> a; }
transformed parameters { array[4] vector[2] y = dae(infusion, [0, 0]', [1, 2]', 0.0, ts, a); }
model { a ~ lognormal(-0.5, 0.5); for (j in 1:4) obs[j] ~ normal(y[j], 0.2); }
""", "data": DECAY_DATA}
LOOSE |= {name for name in PROGRAMS if name.startswith("dae")}


def main():
    out = []
    for i, (name, spec) in enumerate(PROGRAMS.items()):
        code, data = spec["program"], spec["data"]
        data_json = json.dumps(data)
        model = stanli.Model(stan_code=code, data=data_json)
        dim = model.n_unconstrained
        rng = np.random.default_rng(3000 + i)
        points = seeded_points(model, rng, N_POINTS, SCALE,
                               fd_step=FD_STEP if name not in LOOSE else None, max_tries=1000, name=name)
        out.append({"name": name, "program": code, "data": data_json,
                    "n_unconstrained": dim, "points": points})
        print(f"{name}: dim {dim}, lp {points[0]['log_density']:.6f}")
    OUT.write_text(json.dumps({"generator": "scripts/solve/make_fixtures.py",
                               "stanli": stanli.__version__, "programs": out}, indent=1) + "\n")


if __name__ == "__main__":
    main()
