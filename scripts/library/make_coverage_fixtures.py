"""Writes crates/hazel-graph/tests/fixtures/coverage.json: differential fixtures for the registry
functions that no other oracle covered (the list `crates/hazel-graph/tests/untested_functions.txt`
that `tests/registry_coverage.rs` computes), tested by `crates/hazel-graph/tests/coverage.rs`.

`programs[]`: stanli 0.24.0 log densities and gradients (CmdStan's lp__ convention: Jacobians
included, `~` drops constants) of small programs with parameters in every differentiable
argument, at seeded unconstrained points; every program also stores central differences of the
oracle's log density (`fd_gradient`). Where stanli lacks a function the program carries an
`oracle` text written with the function's definition (the reason beside each); the
unconstrain functions stanli lacks are checked by round trips (`X_unconstrain(X_constrain(y))`
against `y`). Integer-valued and data-only functions feed a parameter expression so their value
is checked.

`rng[]`: `_rng`s with no moment test elsewhere: a program whose generated quantities draw from
the function, and the exact mean and standard deviation of per-draw statistics (category
indicators, coordinates, squared deviations, cross products) from closed forms; the Rust test
draws `draws` times and requires each mean within 5 standard errors.

Rerun with
    /work/venv-stanli/bin/python scripts/library/make_coverage_fixtures.py
(the points are seeded, so a rerun reproduces the file).
"""

import json
import re
import math
import pathlib

import numpy as np
import stanli

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "crates/hazel-graph/tests/fixtures/coverage.json"
N_POINTS = 3
SCALE = 1.0
FD_STEP = 1e-6

PROGRAMS = {}


def add(name, program, data=None, oracle=None):
    assert name not in PROGRAMS, name
    PROGRAMS[name] = {"program": program, "data": data or {}, "oracle": oracle}


# ------------------------------------------------------------------------------- cdfs
# Each `fam_cdf` (the lcdf/lccdf forms are covered by the mpmath fixtures) on a parameter
# variate (continuous families) and on a data vector (vectorised: the product of the cdfs), with
# parameters in every real argument. Names starting `approx_` are families whose Stan cdf
# gradients are numerical approximations (held to finite differences, see coverage.rs).
CONTINUOUS = {
    # family: (parameter declarations, arguments, variate declaration, data variate values)
    "beta": ("real<lower=0.5, upper=4> a; real<lower=0.5, upper=4> b;", "a, b",
             "real<lower=0, upper=1> y;", [0.2, 0.55, 0.8]),
    "cauchy": ("real mu; real<lower=0> sigma;", "mu, sigma", "real y;", [-1.0, 0.3, 2.0]),
    "chi_square": ("real<lower=0.5, upper=6> nu;", "nu", "real<lower=0> y;", [0.4, 1.3, 3.0]),
    "double_exponential": ("real mu; real<lower=0> sigma;", "mu, sigma", "real y;",
                           [-1.0, 0.3, 2.0]),
    "exp_mod_normal": ("real mu; real<lower=0> sigma; real<lower=0> lambda;",
                       "mu, sigma, lambda", "real y;", [-0.5, 0.4, 2.0]),
    "exponential": ("real<lower=0> beta;", "beta", "real<lower=0> y;", [0.2, 0.9, 2.5]),
    "frechet": ("real<lower=0.5, upper=4> alpha; real<lower=0> sigma;", "alpha, sigma",
                "real<lower=0> y;", [0.5, 1.2, 3.0]),
    "gamma": ("real<lower=0.5, upper=4> a; real<lower=0> b;", "a, b",
              "real<lower=0> y;", [0.3, 1.1, 2.6]),
    "gumbel": ("real mu; real<lower=0> beta;", "mu, beta", "real y;", [-1.0, 0.3, 2.0]),
    "inv_chi_square": ("real<lower=0.5, upper=6> nu;", "nu", "real<lower=0> y;",
                       [0.2, 0.7, 2.0]),
    "inv_gamma": ("real<lower=0.5, upper=4> a; real<lower=0> b;", "a, b",
                  "real<lower=0> y;", [0.3, 1.1, 2.6]),
    "logistic": ("real mu; real<lower=0> sigma;", "mu, sigma", "real y;", [-1.0, 0.3, 2.0]),
    "lognormal": ("real mu; real<lower=0> sigma;", "mu, sigma", "real<lower=0> y;",
                  [0.3, 1.1, 2.6]),
    "normal": ("real mu; real<lower=0> sigma;", "mu, sigma", "real y;", [-1.0, 0.3, 2.0]),
    "pareto": ("real<lower=0.1, upper=1> ymin; real<lower=0.5, upper=4> alpha;", "ymin, alpha",
               "real<lower=ymin> y;", [1.1, 1.6, 3.0]),
    "pareto_type_2": ("real mu; real<lower=0> lambda; real<lower=0.5, upper=4> alpha;",
                      "mu, lambda, alpha", "real<lower=mu> y;", [1.6, 2.2, 3.5]),
    "rayleigh": ("real<lower=0> sigma;", "sigma", "real<lower=0> y;", [0.3, 1.1, 2.6]),
    "scaled_inv_chi_square": ("real<lower=0.5, upper=6> nu; real<lower=0> s;", "nu, s",
                              "real<lower=0> y;", [0.3, 1.1, 2.6]),
    "skew_normal": ("real xi; real<lower=0> omega; real alpha;", "xi, omega, alpha",
                    "real y;", [-0.5, 0.4, 1.5]),
    "std_normal": ("", "", "real y;", [-1.0, 0.3, 2.0]),
    "student_t": ("real<lower=0.5, upper=8> nu; real mu; real<lower=0> sigma;",
                  "nu, mu, sigma", "real y;", [-1.0, 0.3, 2.0]),
    "uniform": ("real a; real<lower=a> b;", "a, b", "real<lower=a, upper=b> y;", None),
    "weibull": ("real<lower=0.5, upper=4> alpha; real<lower=0> sigma;", "alpha, sigma",
                "real<lower=0> y;", [0.3, 1.1, 2.6]),
}
# Stan's gradients of these cdfs go through numerically approximated derivatives of the
# regularised incomplete gamma function (grad_reg_inc_gamma, grad_reg_lower_inc_gamma) or of the
# 3F2-based beta_neg_binomial cdf: up to 4e-4 relative off the central differences of stanli's
# own log density here (inv_gamma), so hazel's gradient is held to the finite differences.
APPROX = {"chi_square", "gamma", "inv_chi_square", "inv_gamma", "scaled_inv_chi_square",
          "beta_neg_binomial"}

for fam, (params, args, ydecl, ydata) in CONTINUOUS.items():
    bar = f" | {args}" if args else ""
    call = lambda y: f"{fam}_cdf({y}{bar})" if args else f"{fam}_cdf({y})"
    model = f"  target += log({call('y')});\n"
    data_decl = ""
    data = {}
    if ydata is not None:
        data_decl = "data { vector[3] yd; }\n"
        data = {"yd": ydata}
        model += f"  target += log({call('yd')});\n"
        model += f"  target += log({call('to_array_1d(yd)')});\n"
    prefix = "approx_" if fam in APPROX else ""
    add(f"{prefix}cdf_{fam}",
        f"{data_decl}parameters {{ {params} {ydecl} }}\nmodel {{\n{model}}}\n", data)

DISCRETE = {
    # family: (parameter declarations, arguments (data ints first), data, integer variates)
    "bernoulli": ("real<lower=0, upper=1> theta;", "theta", {}, [0, 0, 1]),
    "binomial": ("real<lower=0, upper=1> theta;", "N, theta", {"N": [5, 8, 10]}, [2, 3, 7]),
    "beta_binomial": ("real<lower=0.5, upper=5> a; real<lower=0.5, upper=5> b;", "N, a, b",
                      {"N": [5, 8, 10]}, [2, 3, 7]),
    "beta_neg_binomial": ("real<lower=1, upper=6> r; real<lower=2.5, upper=6> a; "
                          "real<lower=1, upper=6> b;", "r, a, b", {}, [0, 2, 5]),
    "neg_binomial": ("real<lower=0.5, upper=6> alpha; real<lower=0> beta;", "alpha, beta", {},
                     [0, 2, 5]),
    "neg_binomial_2": ("real<lower=0> mu; real<lower=0.5, upper=6> phi;", "mu, phi", {},
                       [0, 2, 5]),
    "poisson": ("real<lower=0> lambda;", "lambda", {}, [0, 2, 5]),
}
for fam, (params, args, extra, ns) in DISCRETE.items():
    data = {"n": ns, **extra}
    decl = "data { array[3] int n;" + (" array[3] int N;" if "N" in extra else "") + " }\n"
    scalar_args = args.replace("N,", "N[1],")
    model = (f"  target += log({fam}_cdf(n[1] | {scalar_args}));\n"
             f"  target += log({fam}_cdf(n | {args}));\n")
    prefix = "approx_" if fam in APPROX else ""
    add(f"{prefix}cdf_{fam}", f"{decl}parameters {{ {params} }}\nmodel {{\n{model}}}\n", data)

# Every cdf with data arguments only (constant-folded), scaling a parameter.
CONST_ARGS = {
    "beta": "0.3 | 2, 3", "cauchy": "0.5 | -1, 2", "chi_square": "1.5 | 3",
    "double_exponential": "0.5 | -1, 2", "exp_mod_normal": "0.5 | -1, 2, 0.7",
    "exponential": "0.5 | 1.5", "frechet": "1.5 | 2, 1.2", "gamma": "1.5 | 2, 1.2",
    "gumbel": "0.5 | -1, 2", "inv_chi_square": "0.5 | 3", "inv_gamma": "1.5 | 2, 1.2",
    "logistic": "0.5 | -1, 2", "lognormal": "1.5 | 0.2, 0.7", "normal": "0.5 | -1, 2",
    "pareto": "1.5 | 0.5, 2", "pareto_type_2": "1.5 | 0.5, 2, 3", "rayleigh": "1.5 | 1.2",
    "scaled_inv_chi_square": "1.5 | 3, 0.8", "skew_normal": "0.5 | -1, 2, 1.5",
    "std_normal": "0.5", "student_t": "0.5 | 3, -1, 2", "uniform": "0.5 | -1, 2",
    "weibull": "1.5 | 2, 1.2", "bernoulli": "0 | 0.3", "binomial": "3 | 10, 0.4",
    "beta_binomial": "3 | 10, 2, 3", "beta_neg_binomial": "2 | 3, 4, 2",
    "neg_binomial": "2 | 3, 0.5", "neg_binomial_2": "2 | 3, 1.5", "poisson": "2 | 3.5",
    "discrete_range": "2 | 1, 5",
}
_const_terms = "".join(
    f"  target += x * {0.1 * (i + 1):.1f} * {fam}_cdf({args});\n"
    for i, (fam, args) in enumerate(CONST_ARGS.items()))
_const_program = "parameters { real x; }\nmodel {\n  x ~ normal(0, 1);\n" + _const_terms + "}\n"
# stanli 0.24 lacks discrete_range_cdf: (2 - 1 + 1) / (5 - 1 + 1) written out in the oracle.
add("cdf_constant_arguments", _const_program,
    oracle=_const_program.replace("discrete_range_cdf(2 | 1, 5)", "(2.0 / 5)"))

# discrete_range: every argument is an integer; the value scales a parameter.
DISCRETE_RANGE = """
data { array[3] int n; }
parameters { real x; }
model {
  x ~ normal(0, 1);
  target += x * discrete_range_cdf(n[1] | -2, 5) + x^2 * discrete_range_cdf(n | 1, 7);
  target += x^3 * discrete_range_cdf(n[3] | 6, 6) + x * discrete_range_cdf(n[2] | 1, 2);
}
"""
# stanli 0.24 lacks discrete_range_cdf: the oracle writes out its definition (the uniform
# probability of lower..n, 1 at or above upper; vectorised: the product).
DISCRETE_RANGE_ORACLE = """
functions {
  real ref_dr(int n, int lo, int hi) { return n >= hi ? 1.0 : (n - lo + 1.0) / (hi - lo + 1.0); }
  real ref_dr(array[] int n, int lo, int hi) {
    real p = 1;
    for (i in 1:size(n)) p *= ref_dr(n[i], lo, hi);
    return p;
  }
}
""" + DISCRETE_RANGE.replace("discrete_range_cdf(n[1] |", "ref_dr(n[1],").replace(
    "discrete_range_cdf(n |", "ref_dr(n,").replace("discrete_range_cdf(n[3] |", "ref_dr(n[3],").replace(
    "discrete_range_cdf(n[2] |", "ref_dr(n[2],")
add("cdf_discrete_range", DISCRETE_RANGE, {"n": [1, 3, 6]}, oracle=DISCRETE_RANGE_ORACLE)

# ------------------------------------------------------------------------------- scalars
add("scalar_real_functions", """
parameters { real<lower=0.2, upper=3> x; real y; real<lower=-3, upper=-0.1> lp; }
model {
  x ~ normal(1, 1); y ~ normal(0, 1);
  target += fdim(x, 0.7) + fdim(1.5, y) + fdim(x, y) + fdim(y, x);
  target += fmod(x + 3, 1.3) + fmod(4.1, x) + fmod(y + 5, x);
  target += lmultiply(x, x + 2) + lmultiply(2.5, x) + lmultiply(x, 3);
  target += sum(lmultiply([x, 1.5]', [2, x]'));
  target += falling_factorial(x + 3, 2) + rising_factorial(x, 3);
  target += sum(falling_factorial({x + 4, x + 3}, {1, 3})) + sum(rising_factorial({x, 2 * x}, 2));
  target += sum(falling_factorial([x + 4, x + 3]', 2)) + sum(rising_factorial([x, 2 * x], 1));
  target += std_normal_log_qf(lp) + sum(std_normal_log_qf([lp, 2 * lp]'));
  target += (x + y) * step(y) + x * step(x - 1) + step(-y);
  target += x .^ y + [x, y] .^ 2 * [1, 1]' + sum(2 .^ [x, y]) + sum([x, y]' .^ [y, x]');
  target += +x - (+y);
  target += e() * x + sqrt2() * y + machine_precision() * 1e10 * x;
}
""")

# Piecewise-constant functions of a parameter: value checked, gradient zero; the integer ones
# of data feed a product with a parameter.
def scalar_integer_oracle(program):
    defs = """
functions {
  int ref_int_step(real x) { return x > 0; }
  int ref_to_int(real x) { int k = 0; real a = abs(x); while (k + 1 <= a) k += 1; return x < 0 ? -k : k; }
  array[] int ref_to_int(array[] real x) { array[size(x)] int out; for (i in 1:size(x)) out[i] = ref_to_int(x[i]); return out; }
}
"""
    return defs + program.replace("int_step(", "ref_int_step(").replace("to_int(", "ref_to_int(")


SCALAR_INT = """
data { real a; real b; array[3] real xs; }
transformed data {
  int f = falling_factorial(7, 3);
  int r = rising_factorial(3, 2);
  int c = choose(7, 3);
  array[3] int cs = choose({5, 6, 7}, 2);
  int m = 17 % 5;
  int q = 17 %/% 5;
  int qn = -17 %/% 5;
  int mn = -17 % 5;
  int o = (0 || 3) + (0 || 0) + (2 || 0);
  int s = int_step(3) + int_step(-2) + int_step(0) + int_step(2.5) + int_step(-0.5);
  int i = is_inf(positive_infinity()) + is_inf(a) + is_inf(-positive_infinity());
  int n = is_nan(not_a_number()) + is_nan(b) + is_nan(positive_infinity());
  int t = to_int(a) + to_int(-2.7) + sum(to_int(xs));
  array[2] int d = dims(rep_array(0.0, 2, 3, 4))[2:3];
}
parameters { real x; }
model {
  x ~ normal(0, 1);
  target += x * (f + 2 * r + 3 * c + sum(cs) + m + 10 * q + 100 * qn + 1000 * mn + o + s + i + n + t + d[1] + d[2]);
  target += x^2 * (floor(a) + ceil(a) + round(a) + trunc(a) + floor(-a) + ceil(-a) + round(-a) + trunc(-a));
  target += floor(3 * x) + ceil(3 * x) + round(3 * x) + trunc(3 * x);
  target += sum(floor([x, -x]')) + sum(ceil({x, 2 * x})) + sum(round([x, -x])) + sum(trunc([x, 0.5 * x]'));
  // Edges: step(0) = 1, round half away from zero, fmod/fdim signs.
  target += x * (step(0) + 2 * step(-0.0) + 4 * step(-1e-300) + round(-0.5) + round(0.5) + round(1.5));
  target += x^2 * (fmod(-4.1, 1.3) + fmod(4.1, -1.3) + fdim(-1, 2) + fdim(2, -1) + trunc(-0.5));
}
"""
add("scalar_integer_functions", SCALAR_INT, {"a": 2.5, "b": 1.0, "xs": [1.9, -1.9, 0.2]},
    # stanli 0.24 lacks int_step and to_int: the oracle writes out their definitions.
    oracle=scalar_integer_oracle(SCALAR_INT))

add("bessel_second_kind", """
parameters { real<lower=0.2, upper=4> x; }
model {
  target += bessel_second_kind(0, x) + 2 * bessel_second_kind(1, x) + 3 * bessel_second_kind(2, 1.5 * x);
  target += sum(bessel_second_kind({0, 1}, {x, x + 1})) + sum(bessel_second_kind(1, [x, x + 1]'));
}
""")

# ------------------------------------------------------------------------------- matrices
WSUM = """
functions {
  real wsum(matrix K) {
    real s = 0;
    for (i in 1:rows(K)) for (j in 1:cols(K)) s += K[i, j] * (0.3 * i - 0.2 * j + 0.1 * i * j);
    return s;
  }
  real wsum(vector v) { return wsum(to_matrix(v)); }
  real wsum(row_vector v) { return wsum(to_matrix(v)); }
  real wsum(array[] real v) { return wsum(to_matrix(v, size(v), 1)); }
"""
MATRIX = WSUM + """}
data { matrix[3, 3] D; vector[3] dv; }
parameters { matrix[3, 3] A; vector[3] v; row_vector[3] w; }
model {
  to_vector(A) ~ normal(0, 1); v ~ normal(0, 1); w ~ normal(0, 1);
  target += wsum(crossprod(A)) + wsum(crossprod(D)) * A[1, 1];
  target += wsum(block(A, 2, 1, 2, 3)) + wsum(block(A, 1, 2, 3, 1));
  target += wsum(sub_row(A, 2, 1, 3)) + wsum(sub_row(A, 3, 2, 2)) + wsum(sub_row(D, 1, 1, 2)) * v[1];
  target += distance(v, dv) + distance(w, v) + distance(v, w) + distance(w, w + 1);
  target += wsum(diag_post_multiply(A, v)) + wsum(diag_post_multiply(A, w)) + wsum(diag_post_multiply(D, v));
  matrix[3, 3] L = A + diag_matrix(rep_vector(4, 3));
  target += wsum(mdivide_left_tri_low(L, v)) + wsum(mdivide_left_tri_low(L, A)) + wsum(mdivide_left_tri_low(D + 4 * identity_matrix(3), v));
  target += wsum(identity_matrix(3) * A);
  target += wsum(linspaced_array(4, -1, 2.5)) * v[2] + wsum(linspaced_row_vector(3, 0.5, 1)) * v[3];
  target += wsum(linspaced_array(1, 3, 3)) * w[1] + wsum(linspaced_row_vector(2, 1, 1)) * w[2];
}
"""


def matrix_oracle(program):
    # stanli 0.24 lacks distance and sub_row: their definitions, written out.
    defs = """
  real ref_distance(vector a, vector b) { return sqrt(dot_self(a - b)); }
  real ref_distance(row_vector a, row_vector b) { return sqrt(dot_self(a - b)); }
  real ref_distance(vector a, row_vector b) { return sqrt(dot_self(a - b')); }
  real ref_distance(row_vector a, vector b) { return sqrt(dot_self(a' - b)); }
  row_vector ref_sub_row(matrix x, int i, int j, int n) { return x[i, j:(j + n - 1)]; }
"""
    out = program.replace("functions {", "functions {" + defs, 1)
    return re.sub(r"\b(distance|sub_row)\(", r"ref_\1(", out)


add("matrix_functions", MATRIX,
    {"D": [[1.0, 0.2, -0.3], [0.5, 2.0, 0.1], [-0.4, 0.3, 1.5]], "dv": [0.3, -0.2, 1.1]},
    oracle=matrix_oracle(MATRIX))

CSR = """
data { matrix[3, 4] D; }
transformed data {
  tuple(vector[4], array[4] int, array[4] int) t = csr_extract(D);
  vector[size(t.1)] w = t.1;
  array[size(t.2)] int v = t.2;
  array[size(t.3)] int u = t.3;
}
parameters { real x; }
model {
  x ~ normal(0, 1);
  for (i in 1:size(w)) target += x^2 * w[i] * (0.3 * i + 0.1 * v[i]);
  for (i in 1:size(u)) target += x * u[i] * (0.2 * i + 1);
  target += x^3 * size(w);
}
"""
# stanli 0.24 has no tuples: the oracle reads the three parts with csr_extract_w/v/u.
CSR_ORACLE = CSR.replace("""  tuple(vector[4], array[4] int, array[4] int) t = csr_extract(D);
  vector[size(t.1)] w = t.1;
  array[size(t.2)] int v = t.2;
  array[size(t.3)] int u = t.3;""", """  vector[size(csr_extract_w(D))] w = csr_extract_w(D);
  array[size(csr_extract_v(D))] int v = csr_extract_v(D);
  array[size(csr_extract_u(D))] int u = csr_extract_u(D);""")
assert CSR_ORACLE != CSR
add("matrix_csr_extract", CSR, {"D": [[1.0, 0, 2.5, 0], [0, 0, 0, 0], [0, -3.0, 0, 4.0]]},
    oracle=CSR_ORACLE)

# proj(z) is z for every finite z (the Riemann-sphere projection only moves infinities);
# stanli 0.24 lacks complex functions in the model block, so the oracle writes that out.
PROJ = """
parameters { real x; real y; }
model {
  x ~ normal(0, 1); y ~ normal(0, 1);
  complex z = proj(to_complex(x, 2 * y));
  target += get_real(z) + 3 * get_imag(z) + x * get_imag(proj(to_complex(y, x)));
}
"""
add("scalar_proj", PROJ, oracle="""
parameters { real x; real y; }
model {
  x ~ normal(0, 1); y ~ normal(0, 1);
  target += x + 3 * 2 * y + x * x;
}
""")

# ------------------------------------------------------------------------------- constraints
# `_constrain` forms that stanli has, on parameters (no Jacobian: they are plain functions).
add("constrain_functions", WSUM + """}
parameters { vector[3] y; vector[6] y6; matrix[2, 3] Y; }
model {
  y ~ normal(0, 1); y6 ~ normal(0, 1); to_vector(Y) ~ normal(0, 1);
  target += wsum(ordered_constrain(y)) + wsum(ordered_constrain({y, -y})[2]);
  target += wsum(sum_to_zero_constrain(y)) + wsum(sum_to_zero_constrain(Y));
  target += wsum(unit_vector_constrain(y)) + wsum(unit_vector_constrain({y, y + 1})[2]);
  target += wsum(stochastic_column_constrain(Y)) + wsum(stochastic_row_constrain(Y));
  target += wsum(cholesky_factor_corr_constrain(y, 3)) + wsum(corr_matrix_constrain(y, 3));
  target += wsum(cholesky_factor_cov_constrain(append_row(y, y[1:2]), 3, 2));
  target += wsum(cholesky_factor_cov_constrain(y6, 3, 3));
}
""")

# `_unconstrain`: round trips through the matching `_constrain`; stanli 0.24 lacks most
# unconstrain functions, so the oracle is the identity (`unconstrain(constrain(y)) = y` by
# definition) and the gradient of the round trip must be the identity's.
ROUND_TRIPS = [
    ("vector[3] y", "lower_bound_unconstrain(lower_bound_constrain(y, 0.5), 0.5)", "y"),
    ("vector[3] y", "upper_bound_unconstrain(upper_bound_constrain(y, y[1]), y[1])", "y"),
    ("vector[3] y", "lower_upper_bound_unconstrain(lower_upper_bound_constrain(y, -1, 2), -1, 2)", "y"),
    ("vector[3] y", "offset_multiplier_unconstrain(offset_multiplier_constrain(y, y[2], exp(y[3])), y[2], exp(y[3]))", "y"),
    ("vector[3] y", "ordered_unconstrain(ordered_constrain(y))", "y"),
    ("vector[3] y", "positive_ordered_unconstrain(positive_ordered_constrain(y))", "y"),
    ("vector[3] y", "simplex_unconstrain(simplex_constrain(y))", "y"),
    ("vector[3] y", "sum_to_zero_unconstrain(sum_to_zero_constrain(y))", "y"),
    ("matrix[2, 3] y", "sum_to_zero_unconstrain(sum_to_zero_constrain(y))", "y"),
    ("matrix[2, 3] y", "stochastic_column_unconstrain(stochastic_column_constrain(y))", "y"),
    ("matrix[2, 3] y", "stochastic_row_unconstrain(stochastic_row_constrain(y))", "y"),
    ("vector[3] y", "cholesky_factor_corr_unconstrain(cholesky_factor_corr_constrain(y, 3))", "y"),
    ("vector[3] y", "corr_matrix_unconstrain(corr_matrix_constrain(y, 3))", "y"),
    ("vector[6] y", "cov_matrix_unconstrain(cov_matrix_constrain(y, 3))", "y"),
    ("vector[5] y", "cholesky_factor_cov_unconstrain(cholesky_factor_cov_constrain(y, 3, 2))", "y"),
]
# unit_vector_unconstrain(unit_vector_constrain(y)) is y / |y| (the constrain loses the norm).
ROUND_TRIPS.append(("vector[3] y", "unit_vector_unconstrain(unit_vector_constrain(y))",
                    "y / sqrt(dot_self(y))"))
trip_params = "parameters {\n" + "".join(
    f"  {decl.rsplit(' ', 1)[0]} y{i};\n"
    for i, (decl, _, _) in enumerate(ROUND_TRIPS)) + "}\n"
trip_model = "".join(
    f"  y{i} ~ normal(0, 1);\n" if decl.startswith("vector") else f"  to_vector(y{i}) ~ normal(0, 1);\n"
    for i, (decl, _, _) in enumerate(ROUND_TRIPS))
rename = lambda s, i: s.replace("(y", f"(y{i}").replace(" y", f" y{i}").replace("y[", f"y{i}[")
hazel_trip = WSUM + "}\n" + trip_params + "model {\n" + trip_model + "".join(
    f"  target += wsum({rename(expr, i)});\n" for i, (_, expr, _) in enumerate(ROUND_TRIPS)) + "}\n"
oracle_trip = WSUM + "}\n" + trip_params + "model {\n" + trip_model + "".join(
    f"  target += wsum({rename(' ' + ref, i).strip()});\n"
    for i, (_, _, ref) in enumerate(ROUND_TRIPS)) + "}\n"
add("unconstrain_round_trips", hazel_trip, oracle=oracle_trip)

# ------------------------------------------------------------------------------- mpmath
# Where stanli itself is wrong, the oracle is mpmath at 50 digits: the log density written in
# Python (no constrained parameters, so no Jacobian), its gradient by mpmath's numerical
# differentiation at that precision, at the given points. `main` prints stanli's error there.
import mpmath as mp  # noqa: E402

mp.mp.dps = 50
MPMATH = {}


def add_mpmath(name, program, data, logp, points, why):
    assert name not in PROGRAMS and name not in MPMATH, name
    MPMATH[name] = {"program": program, "data": data, "logp": logp, "points": points,
                    "why": why}


def emn_cdf(y, mu, sigma, lam):
    z = (y - mu) / sigma
    return mp.ncdf(z) - mp.exp(-lam * (y - mu) + lam ** 2 * sigma ** 2 / 2 + mp.log(mp.ncdf(z - lam * sigma)))


EMN_YD = [-0.5, 0.4, 2.0]
add_mpmath("mpmath_cdf_exp_mod_normal", """
data { vector[3] yd; }
parameters { real mu; real log_sigma; real log_lambda; real y; }
model {
  target += log(exp_mod_normal_cdf(y | mu, exp(log_sigma), exp(log_lambda)));
  target += log(exp_mod_normal_cdf(yd | mu, exp(log_sigma), exp(log_lambda)));
}
""", {"yd": EMN_YD},
    lambda mu, ls, ll, y: sum(mp.log(emn_cdf(v, mu, mp.exp(ls), mp.exp(ll))) for v in [y] + EMN_YD),
    [[2.1089501036244, 2.947553638776524, -0.20139829628631745, 0.5795034941666715],
     [0.3, 1.0, 2.5, 0.1], [-1.0, 2.0, 1.5, 3.0], [0.5, 0.2, 0.3, -0.4]],
    "stanli 0.24's exp_mod_normal_cdf loses accuracy once lambda * sigma is large (~10 and "
    "more): log cdf off by 0.06 at lambda * sigma = 15.6 (first point)")


def gumbel_lcdf(y, mu, beta):
    return -mp.exp(-(y - mu) / beta)


add_mpmath("mpmath_cdf_gumbel", """
parameters { real mu; real log_beta; real y; }
model {
  target += log(gumbel_cdf(y | mu, exp(log_beta)));
}
""", {}, lambda mu, lb, y: gumbel_lcdf(y, mu, mp.exp(lb)),
    [[0.0, 0.0, -6.5], [0.5, 0.3, -4.0], [1.0, -0.5, -1.5]],
    "stanli 0.24's gumbel_cdf gradient is 0 once the cdf is below ~1e-289 (first point, "
    "cdf = exp(-665)), while its value is right")


# ------------------------------------------------------------------------------- rngs
RNG = []


def add_rng(name, program, data, expected, draws=20000):
    """`name`: the case; `functions`: every `_rng` its program calls (from the program)."""
    functions = sorted(set(re.findall(r"\b([a-z_0-9]+_rng)\(", program)))
    RNG.append({"name": name, "functions": functions, "program": program,
                "data": json.dumps(data), "draws": draws, "expected": expected})


theta = np.array([0.2, 0.5, 0.3])
beta = np.array([0.4, -0.3, 1.1])
soft = np.exp(beta) / np.exp(beta).sum()
ind = lambda p: [float(p), math.sqrt(p * (1 - p))]
add_rng("categorical_rng", """
data { vector[3] theta; }
generated quantities {
  int y = categorical_rng(theta);
  int c1 = y == 1; int c2 = y == 2; int c3 = y == 3;
}
""", {"theta": theta.tolist()}, {f"c{k + 1}": ind(theta[k]) for k in range(3)})
add_rng("categorical_logit_rng", """
data { vector[3] beta; }
generated quantities {
  int y = categorical_logit_rng(beta);
  int c1 = y == 1; int c2 = y == 2; int c3 = y == 3;
}
""", {"beta": beta.tolist()}, {f"c{k + 1}": ind(soft[k]) for k in range(3)})

alpha = np.array([2.0, 0.7, 3.5])
a0 = alpha.sum()
dmean = alpha / a0
dvar = alpha * (a0 - alpha) / (a0 ** 2 * (a0 + 1))
# sd of (X - m)^2 needs the fourth central moment: from the Beta(a, a0 - a) marginal.
def beta_central_moments(a, b):
    m = a / (a + b)
    raw = [1.0]
    for k in range(1, 5):
        raw.append(raw[-1] * (a + k - 1) / (a + b + k - 1))
    c2 = raw[2] - m ** 2
    c4 = raw[4] - 4 * m * raw[3] + 6 * m ** 2 * raw[2] - 3 * m ** 4
    return c2, c4
dexp = {}
for k in range(3):
    c2, c4 = beta_central_moments(alpha[k], a0 - alpha[k])
    assert abs(c2 - dvar[k]) < 1e-15
    dexp[f"y.{k + 1}"] = [float(dmean[k]), math.sqrt(dvar[k])]
    dexp[f"s{k + 1}"] = [float(c2), math.sqrt(c4 - c2 ** 2)]
add_rng("dirichlet_rng", """
data { vector[3] alpha; vector[3] m; }
generated quantities {
  vector[3] y = dirichlet_rng(alpha);
  real s1 = square(y[1] - m[1]); real s2 = square(y[2] - m[2]); real s3 = square(y[3] - m[3]);
}
""", {"alpha": alpha.tolist(), "m": dmean.tolist()}, dexp)

mu = np.array([1.0, -0.5])
Sigma = np.array([[2.0, 0.6], [0.6, 1.0]])
Lc = np.linalg.cholesky(Sigma)
def mvn_expected():
    e = {}
    for k in range(2):
        e[f"y.{k + 1}"] = [float(mu[k]), math.sqrt(Sigma[k, k])]
        # (Y - mu)^2 = Sigma_kk chi2_1: mean Sigma_kk, sd sqrt(2) Sigma_kk
        e[f"s{k + 1}"] = [float(Sigma[k, k]), math.sqrt(2) * Sigma[k, k]]
    # (Y1 - mu1)(Y2 - mu2): mean S12, variance S11 S22 + S12^2 (Isserlis)
    e["p"] = [float(Sigma[0, 1]), math.sqrt(Sigma[0, 0] * Sigma[1, 1] + Sigma[0, 1] ** 2)]
    # the array form: its second element, with mean mu + 1
    e["z.2.1"] = [float(mu[0] + 1), math.sqrt(Sigma[0, 0])]
    e["z.2.2"] = [float(mu[1] + 1), math.sqrt(Sigma[1, 1])]
    return e
for fn, arg, cov in [("multi_normal_rng", "Sigma", Sigma), ("multi_normal_cholesky_rng", "L", Lc)]:
    add_rng(fn, f"""
data {{ vector[2] mu; matrix[2, 2] {arg}; }}
generated quantities {{
  vector[2] y = {fn}(mu, {arg});
  real s1 = square(y[1] - mu[1]); real s2 = square(y[2] - mu[2]);
  real p = (y[1] - mu[1]) * (y[2] - mu[2]);
  array[2] vector[2] z = {fn}({{mu', mu' + 1}}, {arg});
}}
""", {"mu": mu.tolist(), arg: cov.tolist()}, mvn_expected())


# Vectorised forms (one draw per element, broadcasting scalars), whose scalar kernels
# hazel-math's dist_rng tests: the coordinates' means and squared deviations.
VM = [0.0, 1.0, 2.5]
VS = 2.0
vexp = {}
for k in range(3):
    vexp[f"y.{k + 1}"] = [VM[k], VS]
    vexp[f"s2.{k + 1}"] = [VS ** 2, math.sqrt(2) * VS ** 2]
    lam = math.exp(VM[k] - 1)
    vexp[f"n.{k + 1}"] = [lam, math.sqrt(lam)]
    p_ = 1 / (1 + math.exp(-(VM[k] - 1)))
    vexp[f"b.{k + 1}"] = [p_, math.sqrt(p_ * (1 - p_))]
    rate = k + 1.0
    vexp[f"e.{k + 1}"] = [1 / rate, 1 / rate]
    N = [5, 10, 20][k]
    vexp[f"c.{k + 1}"] = [N * 0.3, math.sqrt(N * 0.3 * 0.7)]
add_rng("vectorised_rngs", """
data { vector[3] m; real s; }
generated quantities {
  array[3] real y = normal_rng(m, s);
  array[3] real s2;
  for (k in 1:3) s2[k] = square(y[k] - m[k]);
  array[3] int n = poisson_log_rng(m - 1);
  array[3] int b = bernoulli_logit_rng(m - 1);
  array[3] real e = exponential_rng({1.0, 2.0, 3.0});
  array[3] int c = binomial_rng({5, 10, 20}, 0.3);
}
""", {"m": VM, "s": VS}, vexp)


# ------------------------------------------------------------------------------- main
def main():
    out = []
    for i, (name, spec) in enumerate(PROGRAMS.items()):
        code, data = spec["program"], spec["data"]
        oracle_code = spec["oracle"] or code
        data_json = json.dumps(data)
        model = stanli.Model(stan_code=oracle_code, data=data_json)
        dim = model.n_unconstrained
        rng = np.random.default_rng(3000 + i)
        points = []
        tries = 0
        while len(points) < N_POINTS:
            tries += 1
            assert tries < 1000, f"{name}: no finite point"
            q = rng.uniform(-SCALE, SCALE, size=dim)
            try:
                lp, grad = model.log_prob_grad(q)
            except RuntimeError:  # a point the density rejects
                continue
            if not np.isfinite(lp):
                continue
            fd = []
            for j in range(dim):
                e = np.zeros(dim)
                e[j] = FD_STEP
                fd.append((model.log_prob_grad(q + e)[0] - model.log_prob_grad(q - e)[0])
                          / (2 * FD_STEP))
            points.append({"q": q.tolist(), "log_density": float(lp),
                           "gradient": [float(g) for g in grad], "fd_gradient": fd})
        entry = {"name": name, "program": code, "data": data_json,
                 "n_unconstrained": dim, "points": points}
        if oracle_code != code:
            entry["oracle_program"] = oracle_code
        out.append(entry)
        print(f"{name}: dim {dim}, lp {points[0]['log_density']:.6f}")
    for name, spec in MPMATH.items():
        data_json = json.dumps(spec["data"])
        model = stanli.Model(stan_code=spec["program"], data=data_json)
        points = []
        worst = 0.0
        for q in spec["points"]:
            qq = [mp.mpf(x) for x in q]
            lp = spec["logp"](*qq)
            grad = [mp.diff(lambda t, i=i: spec["logp"](*(qq[:i] + [t] + qq[i + 1:])), qq[i])
                    for i in range(len(q))]
            points.append({"q": q, "log_density": float(lp),
                           "gradient": [float(g) for g in grad]})
            s_lp, s_grad = model.log_prob_grad(np.array(q, dtype=float))
            worst = max([worst, abs(s_lp - float(lp)) / max(1, abs(float(lp)))] +
                        [abs(a - float(b)) / max(1, abs(float(b))) for a, b in zip(s_grad, grad)])
        assert model.n_unconstrained == len(spec["points"][0])
        out.append({"name": name, "program": spec["program"], "data": data_json,
                    "n_unconstrained": len(spec["points"][0]), "points": points,
                    "oracle": "mpmath 50 digits", "why_not_stanli": spec["why"]})
        print(f"{name}: stanli's largest relative error {worst:.1e}")
    OUT.write_text(json.dumps({"generator": "scripts/library/make_coverage_fixtures.py",
                               "stanli": stanli.__version__, "programs": out, "rng": RNG},
                              indent=1) + "\n")


if __name__ == "__main__":
    main()
