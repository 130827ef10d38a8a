"""Writes crates/hazel-graph/tests/fixtures/library.json: stanli log densities and gradients
(CmdStan's lp__ convention: Jacobians included, `~` drops constants) of small programs that use
the library functions lowered for issue 8 (GP covariance functions, log_mix, reshaping and
containers, sorting, constraint functions), with parameters flowing into every
differentiable argument, at seeded unconstrained points.

Rerun with
    /work/venv-stanli/bin/python scripts/library/make_fixtures.py
(stanli and numpy from pip); the points are seeded, so a rerun reproduces the file.

A program may carry an `oracle` text: what stanli evaluates when it lacks the function or the
form used (the two must agree by definition; the reason is written beside each such entry).
Programs listed in FD_CHECK also store central differences of stanli's log density, which the
Rust test compares with hazel's gradient as well.
"""
import json
import sys
import pathlib

import numpy as np
import stanli

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from oracle_points import seeded_points  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "crates/hazel-graph/tests/fixtures/library.json"
N_POINTS = 3
SCALE = 1.0
FD_STEP = 1e-6
FD_CHECK = set()

rng0 = np.random.default_rng(20261124)

# Weighted sum of every entry with weights that depend on the position, so a transposed or
# misplaced entry changes the result.
WSUM = """
functions {
  real wsum(matrix K) {
    real s = 0;
    for (i in 1:rows(K)) for (j in 1:cols(K)) s += K[i, j] * (0.3 * i - 0.2 * j + 0.1 * i * j);
    return s;
  }
}
"""

GP_DATA = {
    "N": 4, "M": 3, "D": 2,
    "x": rng0.normal(size=4).round(3).tolist(),
    "x2": rng0.normal(size=3).round(3).tolist(),
    "xv": rng0.normal(size=(4, 2)).round(3).tolist(),
    "xv2": rng0.normal(size=(3, 2)).round(3).tolist(),
}
GP_HEAD = WSUM + """
data { int N; int M; int D; array[N] real x; array[M] real x2;
       array[N] vector[D] xv; array[M] vector[D] xv2; }
"""
GP_PARAMS = """
parameters { real<lower=0> alpha; real<lower=0> rho; real<lower=0> period;
             array[D] real<lower=0> ls; }
"""
GP_PRIOR = """
  alpha ~ normal(1, 1); rho ~ normal(1, 1); period ~ normal(2, 1); ls ~ normal(1, 1);
"""


# stanli 0.24 has the one-array forms of gp_exp_quad_cov, gp_exponential_cov,
# gp_matern32_cov and gp_matern52_cov, but not the two-array forms, gp_periodic_cov or
# gp_dot_prod_cov, and its per-dimension (ARD) length scales are wrong (it returns the
# scalar-length-scale matrix: gp_exp_quad_cov(xv, a, {r, 2 * r}) == gp_exp_quad_cov(xv, a, r)).
# Those forms are evaluated in the oracle program through their definitions written out in
# Stan (REF_FUNCTIONS); the one-array scalar forms stanli has are compared with stanli's own.
STANLI_GP = {"gp_exp_quad_cov", "gp_exponential_cov", "gp_matern32_cov", "gp_matern52_cov"}

REF_FORMULA = {
    # K_ij from d2 (the squared distance divided by the squared length scales).
    "gp_exp_quad_cov": "square(alpha) * exp(-0.5 * d2)",
    "gp_exponential_cov": "square(alpha) * exp(-sqrt(d2))",
    "gp_matern32_cov": "square(alpha) * (1 + sqrt(3) * sqrt(d2)) * exp(-sqrt(3) * sqrt(d2))",
    "gp_matern52_cov": "square(alpha) * (1 + sqrt(5) * sqrt(d2) + 5.0 / 3 * d2) * exp(-sqrt(5) * sqrt(d2))",
    # d2 unscaled here: the length scale is outside the sine.
    "gp_periodic_cov": "square(alpha) * exp(-2 * square(sin(pi() * sqrt(d2) / period)) / square(rho))",
    "gp_dot_prod_cov": "square(alpha) + ref_dot(a, b)",
}


def ref_functions():
    out = ["  real ref_sqd(real a, real b, real l) { return square((a - b) / l); }",
           "  real ref_sqd(vector a, vector b, real l) { return dot_self((a - b) / l); }",
           "  real ref_sqd(vector a, vector b, array[] real l) { return dot_self((a - b) ./ to_vector(l)); }",
           "  real ref_dot(real a, real b) { return a * b; }",
           "  real ref_dot(vector a, vector b) { return dot_product(a, b); }"]
    for kernel, formula in REF_FORMULA.items():
        for t in ("real", "vector"):
            for ltype in ("real", "array[] real"):
                if ltype != "real" and (t == "real" or kernel in ("gp_periodic_cov", "gp_dot_prod_cov")):
                    continue
                if kernel == "gp_periodic_cov":
                    hyper = "real alpha, real rho, real period"
                    d2 = "ref_sqd(a, b, 1.0)"
                elif kernel == "gp_dot_prod_cov":
                    if ltype != "real":
                        continue
                    hyper = "real alpha"
                    d2 = "0"
                else:
                    hyper = f"real alpha, {ltype} rho"
                    d2 = "ref_sqd(a, b, rho)"
                def decl(v, t=t):
                    return f"real {v}" if t == "real" else f"vector[rows(x1[1])] {v}"
                diag = formula if kernel == "gp_dot_prod_cov" else "square(alpha)"
                out.append(f"""  matrix ref_{kernel}(array[] {t} x1, array[] {t} x2, {hyper}, int sym) {{
    matrix[size(x1), size(x2)] K;
    for (i in 1:size(x1)) for (j in 1:size(x2)) {{
      {decl("a")} = x1[i];
      {decl("b")} = x2[j];
      if (sym && i == j) {{ K[i, j] = {diag}; }}
      else {{ real d2 = {d2}; K[i, j] = {formula}; }}
    }}
    return K;
  }}""")
    return "\n".join(out)


def gp_call(kernel, x1, x2, hyper, ard=False):
    """(hazel expression, oracle expression) of one covariance call."""
    args = f"{x1}, {hyper}" if x2 is None else f"{x1}, {x2}, {hyper}"
    hazel = f"{kernel}({args})"
    if x2 is None and not ard and kernel in STANLI_GP:
        return hazel, hazel
    ref = f"ref_{kernel}({x1}, {x1 if x2 is None else x2}, {hyper}, {int(x2 is None)})"
    return hazel, ref


def gp_entry(params, calls, extra_model=""):
    """A program adding the weighted sums of `calls` to target, and its oracle."""
    model = "model {" + GP_PRIOR + extra_model
    hazel = "\n".join(f"  target += wsum({h});" for h, _ in calls)
    oracle = "\n".join(f"  target += wsum({o});" for _, o in calls)
    head = GP_HEAD + params
    prog = head + model + hazel + "\n}\n"
    orac = head.replace("functions {", "functions {\n" + ref_functions()) + model + oracle + "\n}\n"
    return {"program": prog, "data": GP_DATA, "oracle": orac}


def gp_program(kernel, hyper, ard):
    """Every form of one kernel with data points."""
    calls = [gp_call(kernel, "x", None, hyper), gp_call(kernel, "x", "x2", hyper),
             gp_call(kernel, "xv", None, hyper), gp_call(kernel, "xv", "xv2", hyper)]
    if ard:
        ard_hyper = hyper.replace("rho", "ls")
        calls += [gp_call(kernel, "xv", None, ard_hyper, True),
                  gp_call(kernel, "xv", "xv2", ard_hyper, True)]
    return gp_entry(GP_PARAMS, calls)


GP_PARAM_POINTS = """
parameters { real<lower=0> alpha; real<lower=0> rho; real<lower=0> period;
             array[D] real<lower=0> ls; array[N] real xp; array[N] vector[D] xvp; }
"""


def gp_param_points(kernel, hyper, ard):
    """Points that are parameters, in either argument."""
    calls = [gp_call(kernel, "xp", None, hyper), gp_call(kernel, "xp", "x2", hyper),
             gp_call(kernel, "x", "xp", hyper), gp_call(kernel, "xvp", None, hyper),
             gp_call(kernel, "xvp", "xv2", hyper)]
    if ard:
        ard_hyper = hyper.replace("rho", "ls")
        calls += [gp_call(kernel, "xvp", None, ard_hyper, True),
                  gp_call(kernel, "xv2", "xvp", ard_hyper, True)]
    return gp_entry(GP_PARAM_POINTS, calls,
                    "  xp ~ normal(0, 1);\n  for (n in 1:N) xvp[n] ~ normal(0, 1);\n")


STATIONARY = [
    ("gp_exp_quad_cov", "alpha, rho", True),
    ("gp_exponential_cov", "alpha, rho", True),
    ("gp_matern32_cov", "alpha, rho", True),
    ("gp_matern52_cov", "alpha, rho", True),
    ("gp_periodic_cov", "alpha, rho, period", False),
    ("gp_dot_prod_cov", "alpha", False),
]

PROGRAMS = {}
for kernel, hyper, ard in STATIONARY:
    PROGRAMS[kernel] = gp_program(kernel, hyper, ard)
    PROGRAMS[kernel + "_param_points"] = gp_param_points(kernel, hyper, ard)

# cov_exp_quad was removed in Stan 2.33; the checker rejects it naming gp_exp_quad_cov.

# A GP regression as users write it: the covariance feeds a Cholesky factor.
PROGRAMS["gp_regression"] = {"program": """
data { int N; int M; int D; array[N] real x; array[M] real x2;
       array[N] vector[D] xv; array[M] vector[D] xv2; }
transformed data { vector[N] y = [0.3, -0.5, 1.2, 0.1]'; }
parameters { real<lower=0> alpha; array[D] real<lower=0> ls; real<lower=0> sigma; }
model {
  matrix[N, N] K = add_diag(gp_matern52_cov(xv, alpha, ls[2]), square(sigma))
                   + gp_exp_quad_cov(x, alpha, ls[1]);
  alpha ~ normal(0, 1); ls ~ inv_gamma(5, 5); sigma ~ normal(0, 1);
  y ~ multi_normal_cholesky(rep_vector(0, N), cholesky_decompose(K));
}
""", "data": GP_DATA}

# log_mix, vectorised: every (theta, lambda) container pairing, parameters in both. stanli
# 0.24 has only the scalar log_mix(theta, lambda1, lambda2): the oracle is the Functions
# Reference's definition log_mix(θ, λ) = log Σ_k θ_k exp(λ_k), summed over an array of λ.
def log_mix_reference():
    out = []
    for t in ("vector", "row_vector", "array[] real"):
        for l in ("vector", "row_vector", "array[] real"):
            out.append(f"  real ref_log_mix({t} t, {l} l) "
                       "{ return log_sum_exp(log(to_vector(t)) + to_vector(l)); }")
        for l in ("array[] vector", "array[] row_vector"):
            out.append(f"  real ref_log_mix({t} t, {l} l) {{ real s = 0; "
                       "for (n in 1:size(l)) s += log_sum_exp(log(to_vector(t)) + to_vector(l[n])); "
                       "return s; }")
    return "functions {\n" + "\n".join(out) + "\n}\n"


def with_reference(program, name, reference_functions):
    return reference_functions + program.replace(f"{name}(", f"ref_{name}(")


LOG_MIX = """
data { array[2] vector[3] ld; }
parameters { simplex[3] theta; vector[3] lam; array[2] vector[3] lams; array[2] row_vector[3] lamr; }
model {
  row_vector[3] theta_r = theta';
  array[3] real theta_a = to_array_1d(theta);
  lam ~ normal(0, 1);
  for (n in 1:2) { lams[n] ~ normal(0, 1); lamr[n] ~ normal(0, 1); }
  target += log_mix(theta, lam);
  target += log_mix(theta, lams);
  target += log_mix(theta, lamr);
  target += log_mix(theta_r, lam);
  target += log_mix(theta_r, lams);
  target += log_mix(theta_r, lamr);
  target += log_mix(theta_a, lam);
  target += log_mix(theta_a, lams);
  target += log_mix(theta_a, lamr);
  target += log_mix(theta_a, to_array_1d(lam));
  target += log_mix(theta, ld);
  target += log_mix([0.2, 0.3, 0.5]', lams);
}
"""
PROGRAMS["log_mix"] = {"program": LOG_MIX, "data": {"ld": [[-1.0, 0.5, 2.0], [0.1, -0.3, 0.7]]},
                       "oracle": with_reference(LOG_MIX, "log_mix", log_mix_reference())}

# Constructors, reshaping, to_int and quantile. The data-only functions feed the density
# through products with parameters, so a wrong constant shows in the log density.
CONTAINERS = WSUM + """
data { array[6] real xr; array[6] int xi; }
transformed data {
  array[3] real q1 = quantile(xr, {0.1, 0.5, 0.9});
  real q2 = quantile(to_vector(xr), 0.3);
  real q3 = quantile(to_row_vector(xr), 0.75);
  array[2] real q4 = quantile(to_row_vector(xr), {0.0, 1.0});
  array[2] real q5 = quantile(to_vector(xr), {0.25, 0.6});
  real q6 = quantile(xr, 0.45);
  array[5] int li = linspaced_int_array(5, 1, 10);
  array[5] int li2 = linspaced_int_array(5, 1, 3);
  array[4] int li3 = linspaced_int_array(4, -3, 7);
}
parameters { vector[6] v; row_vector[6] rv; matrix[2, 3] m; array[6] real a; array[2] vector[3] av; }
model {
  array[2, 3] real a2 = to_array_2d(m);
  matrix[3, 3] S = symmetrize_from_lower_tri(to_matrix(append_row(v, head(rv', 3)), 3, 3));
  array[12] real ap = append_array(a, to_array_1d(v));
  array[4] vector[3] apv = append_array(av, {head(v, 3), tail(v, 3)});
  array[3, 3] real apr = append_array(a2, {{1.0, 2.0, 3.0}});
  v ~ normal(0, 1); rv ~ normal(0, 1); to_vector(m) ~ normal(0, 1); a ~ normal(0, 1);
  for (k in 1:2) av[k] ~ normal(0, 1);
  target += wsum(to_matrix(v, 2, 3, 0)) + wsum(to_matrix(v, 3, 2, 1)) + wsum(to_matrix(rv, 2, 3, 0));
  target += wsum(to_matrix(rv, 3, 2, 1)) + wsum(to_matrix(m, 3, 2, 0)) + wsum(to_matrix(m, 1, 6, 1));
  target += wsum(to_matrix(a, 2, 3, 0)) + wsum(to_matrix(a, 3, 2, 1)) + wsum(to_matrix(xi, 2, 3, 0));
  target += wsum(to_matrix(xi, 3, 2, 1));
  for (i in 1:2) for (j in 1:3) target += a2[i, j] * (0.5 * i - 0.3 * j);
  for (i in 1:3) for (j in 1:3) target += apr[i, j] * (0.2 * i + 0.1 * j);
  target += wsum(S);
  target += dot_product(to_vector(ap), linspaced_vector(12, -1, 1));
  for (k in 1:4) target += dot_product(apv[k], [0.3, -0.2, 0.5 * k]');
  target += dot_product(ones_vector(6), v) + ones_row_vector(6) * v + dot_product(zeros_vector(6), v);
  target += zeros_row_vector(6) * v + sum(ones_array(3)) * a[3] + sum(zeros_array(2)) * a[1];
  target += dot_product(one_hot_vector(6, 2), v) + one_hot_row_vector(6, 4) * v;
  target += dot_product(to_vector(one_hot_array(6, 3)), to_vector(a));
  target += dot_product(to_vector(one_hot_int_array(6, 5)), to_vector(a));
  target += dot_product(to_vector(ones_int_array(6)), to_vector(a)) * 0.5;
  target += sum(zeros_int_array(3)) + 2 * dot_product(uniform_simplex(6), v);
  target += dot_product(to_vector(q1), head(v, 3)) + q2 * v[4] + q3 * v[5] + sum(q4) * v[6];
  target += dot_product(to_vector(q5), tail(rv', 2)) + q6 * rv[1];
  target += dot_product(to_vector(li), head(v, 5)) + dot_product(to_vector(li2), tail(v, 5)) * 0.1;
  target += dot_product(to_vector(li3), head(rv', 4)) * 0.1;
}
"""
# stanli 0.24 lacks quantile, to_array_2d and symmetrize_from_lower_tri (and to_int, tested
# by value in the Rust test): the oracle writes them out as the Functions Reference defines
# them (quantile: Stan Math's type-7 interpolation between order statistics).
def _quantile_refs():
    # stanli 0.24 cannot compile a user function that calls another user function ("eval"),
    # so every overload is written out whole.
    body = """vector[size(x)] s = sort_asc(to_vector(x));
    real index = (size(x) - 1) * p;
    int lo = 0;
    while (lo + 1 <= index) lo += 1;
    real h = index - lo;
    """
    out = []
    for t in ("vector", "row_vector", "array[] real"):
        out.append(f"""  real ref_quantile({t} x, real p) {{
    {body}return (1 - h) * s[lo + 1] + h * s[lo + (h > 0 ? 2 : 1)];
  }}""")
        out.append(f"""  array[] real ref_quantile({t} x, array[] real ps) {{
    array[size(ps)] real out;
    for (k in 1:size(ps)) {{
      real p = ps[k];
      {body}out[k] = (1 - h) * s[lo + 1] + h * s[lo + (h > 0 ? 2 : 1)];
    }}
    return out;
  }}""")
    return "\n".join(out) + "\n"


CONTAINER_REFS = "\n" + _quantile_refs() + """  array[,] real ref_to_array_2d(matrix m) {
    array[rows(m), cols(m)] real a;
    for (i in 1:rows(m)) for (j in 1:cols(m)) a[i, j] = m[i, j];
    return a;
  }
  matrix ref_symmetrize_from_lower_tri(matrix m) {
    matrix[rows(m), cols(m)] s;
    for (i in 1:rows(m)) for (j in 1:cols(m)) s[i, j] = i >= j ? m[i, j] : m[j, i];
    return s;
  }
"""
_containers_oracle = CONTAINERS.replace("functions {", "functions {" + CONTAINER_REFS, 1)
for _f in ("quantile", "to_array_2d", "symmetrize_from_lower_tri"):
    _containers_oracle = _containers_oracle.replace(f" {_f}(", f" ref_{_f}(")
PROGRAMS["containers"] = {"program": CONTAINERS, "oracle": _containers_oracle, "data": {
    "xr": [2.5, -1.25, 7.75, 0.5, 3.0, -4.5], "xi": [3, -1, 4, 1, -5, 9]}}

# Sorting parameters: sort_asc/sort_desc stay static (one op, the permutation found at every
# evaluation), sort_indices_*/rank return integers and take the dynamic path.
PROGRAMS["sort_values"] = {"program": """
parameters { vector[5] v; row_vector[4] rv; array[4] real a; }
model {
  v ~ normal(0, 1); rv ~ normal(0, 1); a ~ normal(0, 1);
  target += dot_product(sort_asc(v), [1, 2, 3, 4, 5]') + dot_product(sort_desc(v), [0.5, -1, 2, 0.3, 0.7]');
  target += sort_asc(rv) * [1, -2, 3, 0.5]' + sort_desc(rv) * [0.2, 0.4, -0.6, 1]';
  target += dot_product(to_vector(sort_asc(a)), [1, 3, -2, 0.5]');
  target += dot_product(to_vector(sort_desc(a)), [2, -1, 0.3, 4]');
  target += normal_lpdf(sort_asc(v) | 0, 2) + sort_desc(exp(v))[1];
}
""", "data": {}}
PROGRAMS["sort_indices"] = {"program": """
parameters { vector[5] v; row_vector[4] rv; array[4] real a; }
model {
  array[5] int ia = sort_indices_asc(v);
  array[5] int id = sort_indices_desc(v);
  array[4] int ra = sort_indices_asc(rv);
  array[4] int rd = sort_indices_desc(a);
  v ~ normal(0, 1); rv ~ normal(0, 1); a ~ normal(0, 1);
  for (k in 1:5) target += v[ia[k]] * k + v[id[k]] * 0.3 * k;
  for (k in 1:4) target += rv[ra[k]] * (k - 2) + a[rd[k]] * (0.5 * k - 1) + a[sort_indices_asc(a)[k]] * k;
  target += rank(v, 2) * v[1] + rank(a, 3) * a[2] + rank(rv, 1) * rv[4] + rank(sort_desc(v), 4) * v[5];
  target += v[sort_indices_desc(rv)[1]];
}
""", "data": {}}

# Variable-transform functions (Stan 2.36+): `_jacobian` in transformed parameters adds the
# log-Jacobian, `_constrain` (model block here) does not. Every free argument and bound is a
# parameter. (`_unconstrain` is checked in the Rust test by round trips: stanli lacks most.)
W = "[0.3, -0.7, 1.1, 0.4, -0.2, 0.9, 0.5, -1.3, 0.6]'"
PROGRAMS["transform_scalar"] = {"program": """
parameters { vector[3] y; real a; real<lower=0> b; real s; }
transformed parameters {
  vector[3] z1 = lower_bound_jacobian(y, a);
  real z2 = upper_bound_jacobian(s, b);
  vector[3] z3 = lower_upper_bound_jacobian(y, a, a + b);
  vector[3] z4 = offset_multiplier_jacobian(y, a, b);
  vector[3] z5 = lower_bound_jacobian(y, [0.1, -0.2, 0.3]');
  real z6 = lower_upper_bound_jacobian(s, -1, 2);
  array[3] real z7 = upper_bound_jacobian(to_array_1d(y), {a, b, 1.0});
  real z8 = offset_multiplier_jacobian(s, 1.5, b);
}
model {
  vector[3] c1 = lower_bound_constrain(y, a);
  real c2 = upper_bound_constrain(s, b);
  vector[3] c3 = lower_upper_bound_constrain(y, a, a + b);
  vector[3] c4 = offset_multiplier_constrain(y, a, b);
  y ~ normal(0, 1); a ~ normal(0, 1); b ~ gamma(2, 2); s ~ normal(0, 1);
  target += dot_product(z1, [0.3, -0.7, 1.1]') + z2 * 0.4 + dot_product(z3, [-0.2, 0.9, 0.5]');
  target += dot_product(z4, [0.6, -1.3, 0.2]') + sum(z5) * 0.1 + z6 + sum(z7) * 0.3 + z8 * 0.2;
  target += dot_product(c1, [0.5, 0.1, -0.4]') + c2 * 0.3 + dot_product(c3, [1, -1, 0.5]');
  target += dot_product(c4, [0.2, 0.2, -0.3]');
}
""", "data": {}}
PROGRAMS["transform_structured"] = {"program": """
parameters { vector[3] y; vector[6] y6; vector[5] y5; matrix[2, 3] ym; array[2] vector[3] ya; }
transformed parameters {
  vector[4] s1 = simplex_jacobian(y);
  vector[3] o1 = ordered_jacobian(y);
  vector[3] p1 = positive_ordered_jacobian(y);
  vector[3] u1 = unit_vector_jacobian(y);
  vector[4] t1 = sum_to_zero_jacobian(y);
  matrix[3, 4] t2 = sum_to_zero_jacobian(ym);
  matrix[3, 3] sc = stochastic_column_jacobian(ym);
  matrix[2, 4] sr = stochastic_row_jacobian(ym);
  matrix[3, 3] lc = cholesky_factor_corr_jacobian(y, 3);
  matrix[3, 3] cr = corr_matrix_jacobian(y, 3);
  matrix[3, 3] cv = cov_matrix_jacobian(y6, 3);
  matrix[3, 2] lv = cholesky_factor_cov_jacobian(y5, 3, 2);
  array[2] vector[4] sa = simplex_jacobian(ya);
  array[2] vector[3] oa = ordered_jacobian(ya);
}
model {
  vector[4] s2 = simplex_constrain(y);
  matrix[3, 3] cv2 = cov_matrix_constrain(y6, 3);
  array[2] vector[3] pa = positive_ordered_constrain(ya);
  y ~ normal(0, 1); y6 ~ normal(0, 1); y5 ~ normal(0, 1); to_vector(ym) ~ normal(0, 1);
  for (k in 1:2) ya[k] ~ normal(0, 1);
  target += dot_product(s1, [0.3, -0.7, 1.1, 0.4]') + dot_product(o1, [0.2, 0.5, -0.3]');
  target += dot_product(p1, [0.1, -0.2, 0.3]') + dot_product(u1, [1.5, -0.5, 0.7]');
  target += dot_product(t1, [0.3, 0.1, -0.4, 0.9]') + sum(t2 .* [[1, 2, 3, 4], [0.5, -1, 0.2, 0.3], [0, 1, -1, 2]]);
  target += sum(sc * [1, 2, 3]') + sum(sr * [0.5, -1, 2, 0.1]') + sum(lc * [0.2, 0.7, -0.4]');
  target += sum(cr * [1, -0.5, 0.3]') + sum(cv * [0.1, 0.2, 0.3]') + sum(lv * [0.4, -0.6]');
  for (k in 1:2) target += dot_product(sa[k], [0.3, 0.2, -0.1, k]') + dot_product(oa[k], [0.1, k, -0.2]');
  target += dot_product(s2, [1, 2, 3, 4]') + sum(cv2) * 0.1;
  for (k in 1:2) target += dot_product(pa[k], [0.3, -0.1, 0.05 * k]');
}
""", "data": {}}

# Compressed sparse rows: the pattern from data, the values and the vector parameters.
# stanli lacks csr_to_dense_matrix: the oracle builds the dense matrix by hand from the same
# triple.
CSR = """
data { matrix[3, 4] A; }
transformed data {
  vector[5] w = csr_extract_w(A);
  array[5] int v = csr_extract_v(A);
  array[4] int u = csr_extract_u(A);
}
parameters { vector[4] b; vector[5] wp; }
model {
  b ~ normal(0, 1); wp ~ normal(0, 1);
  target += dot_product(csr_matrix_times_vector(3, 4, wp, v, u, b), [0.3, -0.5, 1.2]');
  target += dot_product(csr_matrix_times_vector(3, 4, w, v, u, b), [1.1, 0.2, -0.4]');
  target += sum(csr_to_dense_matrix(3, 4, wp, v, u) * b) + sum(w) * b[1];
}
"""
CSR_ORACLE = CSR.replace("csr_to_dense_matrix(3, 4, wp, v, u)", "dense").replace(
    "  b ~ normal(0, 1);",
    "  matrix[3, 4] dense = rep_matrix(0, 3, 4);\n"
    "  for (i in 1:3) for (k in u[i]:(u[i + 1] - 1)) dense[i, v[k]] = wp[k];\n  b ~ normal(0, 1);")
PROGRAMS["csr"] = {"program": CSR, "oracle": CSR_ORACLE,
                   "data": {"A": [[1.5, 0, 2, 0], [0, 0, -3, 0], [4, 0.5, 0, 0]]}}


def check_reference_definitions():
    """The written-out definitions equal stanli's own functions where stanli has them (the
    one-array, scalar-length-scale forms), so they are trusted for the forms it lacks."""
    for kernel in sorted(STANLI_GP):
        for x in ("x", "xv", "xp", "xvp"):
            own = gp_entry(GP_PARAM_POINTS, [gp_call(kernel, x, None, "alpha, rho")])["oracle"]
            ref = own.replace(f"{kernel}({x}, alpha, rho)",
                              f"ref_{kernel}({x}, {x}, alpha, rho, 1)")
            assert ref != own
            m1 = stanli.Model(stan_code=own, data=json.dumps(GP_DATA))
            m2 = stanli.Model(stan_code=ref, data=json.dumps(GP_DATA))
            q = np.random.default_rng(7).uniform(-1, 1, size=m1.n_unconstrained)
            (l1, g1), (l2, g2) = m1.log_prob_grad(q), m2.log_prob_grad(q)
            assert abs(l1 - l2) <= 1e-10 * max(1, abs(l1)), (kernel, x, l1, l2)
            assert np.allclose(g1, g2, rtol=1e-10, atol=1e-10), (kernel, x)


def main():
    check_reference_definitions()
    out = []
    for i, (name, spec) in enumerate(PROGRAMS.items()):
        code, data = spec["program"], spec["data"]
        oracle_code = spec.get("oracle", code)
        data_json = json.dumps(data)
        model = stanli.Model(stan_code=oracle_code, data=data_json)
        dim = model.n_unconstrained
        rng = np.random.default_rng(2000 + i)
        points = seeded_points(model, rng, N_POINTS, SCALE,
                               fd_step=FD_STEP if name in FD_CHECK else None, max_tries=1000, name=name)
        entry = {"name": name, "program": code, "data": data_json,
                 "n_unconstrained": dim, "points": points}
        if oracle_code != code:
            entry["oracle_program"] = oracle_code
        out.append(entry)
        print(f"{name}: dim {dim}, lp {points[0]['log_density']:.6f}")
    OUT.write_text(json.dumps({"generator": "scripts/library/make_fixtures.py",
                               "stanli": stanli.__version__, "programs": out}, indent=1) + "\n")


if __name__ == "__main__":
    main()
