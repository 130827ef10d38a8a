"""Writes crates/hazel-graph/tests/fixtures/hof.json: stanli log densities and gradients
(CmdStan's lp__ convention: Jacobians included, `~` drops constants) of small programs using the
higher-order functions of issue 8 (reduce_sum, reduce_sum_static, map_rect, integrate_1d) and
hmm_marginal, at seeded unconstrained points, plus central differences of the oracle's log
density (`fd_gradient`).

Rerun with
    /work/venv-stanli/bin/python scripts/hof/make_fixtures.py
(stanli and numpy from pip); the points are seeded, so a rerun reproduces the file.

A program may carry an `oracle` text: what stanli evaluates instead, where stanli 0.24 lacks
the function or the form (reason written beside each). stanli 0.24 has no hmm_marginal: the
oracle is the forward algorithm written out in Stan (and, for posteriordb's hmm_example, the
original posteriordb program, which is written that way). stanli 0.24 refuses reduce_sum with
a `_lupdf` partial-sum function ("unknown partial-sum function"): the oracle is the direct
call `f_lupdf(x | 1, N, ...)`, which is what reduce_sum means.
"""
import json
import pathlib

import numpy as np
import stanli

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "crates/hazel-graph/tests/fixtures/hof.json"
N_POINTS = 3
FD_STEP = 1e-6
rng0 = np.random.default_rng(20261125)

PROGRAMS = []


def add(name, program, data, oracle=None, scale=1.0, fd=True):
    PROGRAMS.append(dict(name=name, program=program, data=data, oracle=oracle, scale=scale, fd=fd))


# ---------------------------------------------------------------- reduce_sum
PART = """
functions {
  real part_lpdf(array[] real ys, int s, int e, vector mu, real sigma, vector x, real beta) {
    return normal_lpdf(ys | mu[s:e] + beta * x[s:e], sigma);
  }
  real part_u_lpdf(array[] real ys, int s, int e, real mu, real sigma) {
    return normal_lupdf(ys | mu, sigma) + student_t_lupdf(mu | 3, 0, 2);
  }
}
"""
N_SMALL = 9
small = {"N": N_SMALL, "y": rng0.normal(size=N_SMALL).round(3).tolist(),
         "x": rng0.normal(size=N_SMALL).round(3).tolist()}
add("reduce_sum_lpdf_slices", PART + """
data { int N; array[N] real y; vector[N] x; }
parameters { vector[N] mu; real<lower=0> sigma; real beta; }
model { mu ~ normal(0, 1); target += reduce_sum(part_lpdf, y, 2, mu, sigma, x, beta); }
""", small)
add("reduce_sum_static_lpdf", PART + """
data { int N; array[N] real y; vector[N] x; }
parameters { vector[N] mu; real<lower=0> sigma; real beta; }
model { mu ~ normal(0, 1); target += reduce_sum_static(part_lpdf, y, 4, mu, sigma, x, beta); }
""", small)
add("reduce_sum_keeps_constants_as_lpdf", PART + """
data { int N; array[N] real y; }
parameters { real mu; real<lower=0> sigma; }
model { target += reduce_sum(part_u_lpdf, y, 1, mu, sigma); }
""", small)
# stanli 0.24 refuses `_lupdf` partial sums; reduce_sum(f_lupdf, y, g, ...) is f_lupdf(y | 1, N, ...).
add("reduce_sum_drops_constants_as_lupdf", PART + """
data { int N; array[N] real y; }
parameters { real mu; real<lower=0> sigma; }
model { target += reduce_sum(part_u_lupdf, y, 3, mu, sigma); }
""", small, oracle=PART + """
data { int N; array[N] real y; }
parameters { real mu; real<lower=0> sigma; }
model { target += part_u_lupdf(y | 1, N, mu, sigma); }
""")
# A longer array (hazel's slices are 65,536 elements: tests/hof.rs checks several slices
# against the un-sliced call).
N_BIG = 2100
big = {"N": N_BIG, "y": rng0.normal(size=N_BIG).round(3).tolist(),
       "x": rng0.normal(size=N_BIG).round(3).tolist()}
add("reduce_sum_long_array", """
functions {
  real part(array[] real ys, int s, int e, real a, real b, real sigma, vector x) {
    return normal_lpdf(ys | a + b * x[s:e], sigma);
  }
}
data { int N; array[N] real y; vector[N] x; }
parameters { real a; real b; real<lower=0> sigma; }
model { a ~ normal(0, 1); b ~ normal(0, 1); sigma ~ exponential(1);
        target += reduce_sum(part, y, 7, a, b, sigma, x); }
""", big)
pois = {"N": 11, "G": 3, "g": (rng0.integers(1, 4, size=11)).tolist(),
        "c": rng0.poisson(3.0, size=11).tolist(), "idx": list(range(1, 12))}
add("reduce_sum_int_slices_lupmf", """
functions {
  real part_lpmf(array[] int ix, int s, int e, vector theta, array[] int g, array[] int c) {
    return poisson_log_lupmf(c[ix] | theta[g[ix]]);
  }
}
data { int N; int G; array[N] int g; array[N] int c; array[N] int idx; }
parameters { vector[G] theta; }
model { theta ~ normal(1, 1); target += reduce_sum(part_lupmf, idx, 2, theta, g, c); }
""", pois, oracle="""
functions {
  real part_lpmf(array[] int ix, int s, int e, vector theta, array[] int g, array[] int c) {
    return poisson_log_lupmf(c[ix] | theta[g[ix]]);
  }
}
data { int N; int G; array[N] int g; array[N] int c; array[N] int idx; }
parameters { vector[G] theta; }
model { theta ~ normal(1, 1); target += part_lupmf(idx | 1, N, theta, g, c); }
""")
add("reduce_sum_vector_slices", """
functions {
  real part(array[] vector zs, int s, int e, real tau, vector m) {
    real t = 0;
    for (i in 1:size(zs)) t += normal_lpdf(zs[i] | m, tau) + (s + i - 1) * sum(zs[i]);
    return t;
  }
}
data { int N; }
parameters { array[N] vector[2] z; real<lower=0> tau; vector[2] m; }
model { tau ~ exponential(1); m ~ normal(0, 1); target += reduce_sum(part, z, 2, tau, m); }
""", {"N": 5}, scale=0.5)

# ---------------------------------------------------------------- map_rect
MR = """
functions {
  vector job(vector phi, vector theta, data array[] real xr, data array[] int xi) {
    vector[2] out;
    out[1] = normal_lpdf(xr[1] | theta[1] + phi[1] * xi[1], exp(phi[2]));
    out[2] = poisson_log_lpmf(xi[2] | theta[2] + phi[1] * xr[2]);
    return out;
  }
}
data { int J; array[J, 2] real xr; array[J, 2] int xi; }
parameters { vector[2] phi; array[J] vector[2] theta; }
"""
mr_data = {"J": 4, "xr": rng0.normal(size=(4, 2)).round(3).tolist(),
           "xi": np.stack([rng0.integers(0, 3, size=4), rng0.poisson(2.0, size=4)], 1).tolist()}
add("map_rect", MR + """
model { phi ~ normal(0, 1); for (j in 1:J) theta[j] ~ normal(0, 1);
        target += sum(map_rect(job, phi, theta, xr, xi)); }
""", mr_data, scale=0.5)
add("map_rect_elementwise", MR + """
model { vector[2 * J] r = to_vector(map_rect(job, phi, theta, xr, xi));
        for (j in 1:J) theta[j] ~ normal(0, 1);
        target += dot_product(r, linspaced_vector(2 * J, 0.5, 1.5)); }
""", mr_data, scale=0.5)

# ---------------------------------------------------------------- hmm_marginal
FWD = """
  real fwd(matrix lo, matrix G, vector rho) {
    int K = rows(lo);
    int N = cols(lo);
    vector[K] a = log(rho) + lo[:, 1];
    for (t in 2:N) {
      vector[K] b;
      for (k in 1:K) b[k] = log_sum_exp(a + log(G[:, k])) + lo[k, t];
      a = b;
    }
    return log_sum_exp(a);
  }
"""
HMM_BODY = """
data { int K; int N; array[N] real y; }
parameters { ordered[K] mu; array[K] simplex[K] g; simplex[K] rho; real<lower=0> s; }
model {
  matrix[K, N] lo;
  matrix[K, K] G;
  for (k in 1:K) { G[k] = g[k]'; for (n in 1:N) lo[k, n] = normal_lpdf(y[n] | mu[k], s); }
  mu ~ normal(0, 3); s ~ lognormal(0, 1);
  target += %s;
}
"""
hmm_data = {"K": 3, "N": 12, "y": np.concatenate([rng0.normal(-2, 1, 4), rng0.normal(2, 1, 8)]).round(3).tolist()}
add("hmm_marginal_params", HMM_BODY % "hmm_marginal(lo, G, rho)", hmm_data,
    oracle="functions {" + FWD + "}\n" + HMM_BODY % "fwd(lo, G, rho)")
# Data transition matrix and initial distribution, parameters in log_omega only.
HMM_DATA_G = """
data { int K; int N; array[N] real y; matrix[K, K] G; vector[K] rho; }
parameters { ordered[K] mu; }
model {
  matrix[K, N] lo;
  for (k in 1:K) for (n in 1:N) lo[k, n] = normal_lpdf(y[n] | mu[k], 1);
  mu ~ normal(0, 3);
  target += %s;
}
"""
hd = dict(hmm_data, G=[[0.8, 0.15, 0.05], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]], rho=[0.2, 0.5, 0.3])
add("hmm_marginal_data_transitions", HMM_DATA_G % "hmm_marginal(lo, G, rho)", hd,
    oracle="functions {" + FWD + "}\n" + HMM_DATA_G % "fwd(lo, G, rho)")

# posteriordb's hmm_example, written with hmm_marginal; the oracle is the original program
# (its hand-written forward algorithm starts from log densities without an initial
# distribution: hmm_marginal with a uniform rho, plus log K).
PDB = ROOT / "corpus/posteriordb/hmm_example-hmm_example/model.stan"
PDB_DATA = ROOT.parent / "shared/posteriordb/hmm_example-hmm_example/data.json"
if PDB_DATA.exists():
    pdb_data = json.loads(PDB_DATA.read_text())
    add("hmm_marginal_posteriordb_hmm_example", """
data { int<lower=0> N; int<lower=0> K; array[N] real y; }
parameters { simplex[K] theta1; simplex[K] theta2; positive_ordered[K] mu; }
transformed parameters { array[K] simplex[K] theta; theta[1] = theta1; theta[2] = theta2; }
model {
  matrix[K, N] log_omega;
  matrix[K, K] Gamma;
  mu[1] ~ normal(3, 1);
  mu[2] ~ normal(10, 1);
  for (k in 1:K) {
    Gamma[k] = theta[k]';
    for (n in 1:N) log_omega[k, n] = normal_lpdf(y[n] | mu[k], 1);
  }
  target += hmm_marginal(log_omega, Gamma, rep_vector(1.0 / K, K)) + log(K);
}
""", pdb_data, oracle=PDB.read_text(), scale=0.5)

# posteriordb's bball_drive_event_0-hmm_drive_0 (exponential emissions, no initial
# distribution: uniform rho plus log K) and hmm_gaussian_simulated-hmm_gaussian (initial
# distribution pi1; the original's first log density is one number, normal_lpdf of y[1] over
# all K states, added to every state: kept), each rewritten with hmm_marginal against the
# original program.
PDB2 = [
    ("bball_drive_event_0-hmm_drive_0", """
data { int<lower=1> K; int<lower=1> N; array[N] real u; array[N] real v; matrix<lower=0>[K, K] alpha; }
parameters { simplex[K] theta1; simplex[K] theta2; positive_ordered[K] phi; positive_ordered[K] lambda; }
transformed parameters { array[K] simplex[K] theta; theta[1] = theta1; theta[2] = theta2; }
model {
  matrix[K, N] log_omega;
  matrix[K, K] Gamma;
  for (k in 1:K) theta[k] ~ dirichlet(alpha[k]');
  phi[1] ~ normal(0, 1);
  phi[2] ~ normal(3, 1);
  lambda[1] ~ normal(0, 1);
  lambda[2] ~ normal(3, 1);
  for (k in 1:K) {
    Gamma[k] = theta[k]';
    for (t in 1:N) log_omega[k, t] = exponential_lpdf(u[t] | phi[k]) + exponential_lpdf(v[t] | lambda[k]);
  }
  target += hmm_marginal(log_omega, Gamma, rep_vector(1.0 / K, K)) + log(K);
}
"""),
    ("hmm_gaussian_simulated-hmm_gaussian", """
data { int<lower=1> T; int<lower=1> K; array[T] real y; }
parameters { simplex[K] pi1; array[K] simplex[K] A; ordered[K] mu; array[K] real<lower=0> sigma; }
model {
  matrix[K, T] log_omega;
  matrix[K, K] Gamma;
  log_omega[:, 1] = rep_vector(normal_lpdf(y[1] | mu, sigma), K);
  for (j in 1:K) {
    Gamma[j] = A[j]';
    for (t in 2:T) log_omega[j, t] = normal_lpdf(y[t] | mu[j], sigma[j]);
  }
  target += hmm_marginal(log_omega, Gamma, pi1);
}
"""),
]
for pdb_name, rewrite in PDB2:
    data_path = ROOT.parent / f"shared/posteriordb/{pdb_name}/data.json"
    if data_path.exists():
        add("hmm_marginal_posteriordb_" + pdb_name.split("-")[1], rewrite,
            json.loads(data_path.read_text()),
            oracle=(ROOT / f"corpus/posteriordb/{pdb_name}/model.stan").read_text(), scale=0.3,
            # |lp| ~ 1e4..1e5: central differences carry ~1e-5 of rounding; stanli's
            # gradient (1e-8) is the check here.
            fd=False)

# ---------------------------------------------------------------- integrate_1d
INT_F = """
functions {
  real f(real x, real xc, array[] real theta, array[] real xr, array[] int xi) {
    return exp(-theta[1] * square(x - xr[1])) * (1 + theta[2] * x);
  }
  real g(real x, real xc, real a, real b) {
    return exp(-a * x) * pow(x + 1, -b);
  }
  real h(real x, real xc, array[] real theta, array[] real xr, array[] int xi) {
    return exp(-square(x - theta[1]) / (2 * square(theta[2])));
  }
}
"""
add("integrate_1d_finite", INT_F + """
parameters { real<lower=0> a; real<lower=0> c; real<lower=0, upper=3> u; }
model { a ~ lognormal(0, 1); c ~ lognormal(0, 1);
        target += log(integrate_1d(f, -1.0, u, {a, c}, {0.3}, {0}, 1e-8)); }
""", {}, scale=0.5)
add("integrate_1d_default_tolerance", INT_F + """
parameters { real<lower=0> a; real<lower=0> c; }
model { a ~ lognormal(0, 1); c ~ lognormal(0, 1);
        target += log(integrate_1d(f, 0.0, 2.0, {a, c}, {0.3}, {0})); }
""", {}, scale=0.5)
add("integrate_1d_half_infinite", INT_F + """
parameters { real<lower=0> a; real<lower=0> b; real<lower=-1, upper=2> lo; }
model { a ~ lognormal(0, 1); b ~ lognormal(0, 1);
        target += log(integrate_1d_double_exponential_tol(g, lo, positive_infinity(), 1e-9, 1e-9, 100, a, b)); }
""", {}, scale=0.5)
add("integrate_1d_infinite", INT_F + """
parameters { real m; real<lower=0> s; }
model { m ~ normal(0, 1); s ~ lognormal(0, 1);
        target += log(integrate_1d(h, negative_infinity(), positive_infinity(), {m, s}, {0.0}, {0}, 1e-8)); }
""", {}, scale=0.5)
# Stan's beta-function example: xc gives 1 - x without cancellation near the upper end;
# on the lower half xc = a - x = -x (a positive sign there would make pow(-xc, .) NaN; at the
# midpoint xc = b - x, as in Boost), and the
# branch on x makes the integrand re-traced at every point.
add("integrate_1d_uses_xc", """
functions {
  real beta_f(real x, real xc, array[] real theta, array[] real xr, array[] int xi) {
    real a = theta[1];
    real b = theta[2];
    if (x >= 0.5) return pow(x, a - 1) * pow(xc, b - 1);
    return pow(-xc, a - 1) * pow(1 - x, b - 1);
  }
}
parameters { real<lower=1.5, upper=4> a; real<lower=1.5, upper=4> b; }
model { target += log(integrate_1d(beta_f, 0.0, 1.0, {a, b}, {0.0}, {0}, 1e-8)); }
""", {}, scale=0.5)
add("integrate_1d_gauss_kronrod_tol", INT_F + """
parameters { real<lower=0> a; real<lower=0> b; }
model { a ~ lognormal(0, 1); b ~ lognormal(0, 1);
        target += log(integrate_1d_gauss_kronrod_tol(g, 0.0, 3.0, 1e-9, 1e-9, 15, a, b)); }
""", {}, scale=0.5)


def main():
    out = []
    for p in PROGRAMS:
        data_json = json.dumps(p["data"])
        code = p["oracle"] or p["program"]
        model = stanli.Model(stan_code=code, data=data_json)
        n = model.n_unconstrained
        rng = np.random.default_rng(abs(hash(p["name"])) % (2**32) if False else len(out) + 7)
        points = []
        for _ in range(N_POINTS):
            q = (rng.normal(size=n) * p["scale"]).round(6)
            lp, g = model.log_prob_grad(q)
            pt = {"q": q.tolist(), "log_density": float(lp), "gradient": [float(v) for v in g]}
            if p["fd"]:
                fd = []
                for i in range(n):
                    a = q.copy(); a[i] += FD_STEP
                    b = q.copy(); b[i] -= FD_STEP
                    fd.append((model.log_prob_grad(a)[0] - model.log_prob_grad(b)[0]) / (2 * FD_STEP))
                pt["fd_gradient"] = fd
            points.append(pt)
        entry = {"name": p["name"], "program": p["program"], "data": data_json,
                 "n_unconstrained": n, "points": points}
        if p["oracle"]:
            entry["oracle_program"] = p["oracle"]
        out.append(entry)
        print(p["name"], n, points[0]["log_density"])
    OUT.write_text(json.dumps({"generator": "scripts/hof/make_fixtures.py",
                               "stanli": stanli.__version__, "programs": out}, indent=1) + "\n")


if __name__ == "__main__":
    main()
