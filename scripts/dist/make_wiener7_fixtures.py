"""Writes crates/hazel-graph/tests/fixtures/wiener7.json for Stan's 7-parameter
`wiener_lpdf(y | a, t0, w, v, sv, sw, st0)`.

Two kinds of programs (the format of tests/common's `run_group`):
- `wiener7_mp_*`: every argument an unconstrained parameter and `target += wiener_lpdf(...)`,
  so the log density and gradient at q are the density's own. Oracle: mpmath at 30 digits.
  The 5-parameter density in closed form (Navarro & Fuss small-time series, 61 terms, with
  the drift variability integrated out as in Blurton et al. 2017), integrated over
  w' = w + sw (s - 1/2), t0' = t0 + st0 r on r in [0, min(1, (y - t0)/st0)], s in [0, 1]
  by tensor Gauss-Legendre (checked against a rule with more nodes; graded pieces toward
  the cut at r_max < 1); partials as the integrals
  of mp.diff of the integrand (the r cut carries no boundary term: the density is 0 there
  with all its derivatives). Stan's convention: the partial in sw (st0) is 0 where sw (st0)
  is 0. The value is also checked against stanli 0.24 here, within 1e-6 relative: Stan
  integrates this form to a density precision of 1e-6 (stanli is off by up to ~1e-7 at
  these points, mpmath and hazel agree to ~1e-15).
- `wiener7_stanli_*`: vectorised / mixed programs with constrained parameters; log density
  and gradient from stanli 0.24, both approximate there (density precision 1e-6, derivative
  precision 1e-4), so the test holds hazel to them loosely; the tight oracle is mpmath above.

Rerun with /work/venv-stanli/bin/python scripts/dist/make_wiener7_fixtures.py.
"""
import json
import pathlib

import mpmath as mp
import numpy as np
import stanli

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "crates/hazel-graph/tests/fixtures/wiener7.json"
mp.mp.dps = 30


def lp5(y, a, t0, w, v, sv):
    """log of Stan's 5-parameter wiener density (upper boundary)."""
    t = y - t0
    if t <= 0:
        return None
    vv, ww = -v, 1 - w
    u = t / a**2
    g = mp.fsum((ww + 2 * k) * mp.exp(-(ww + 2 * k) ** 2 / (2 * u)) for k in range(-30, 31))
    g /= mp.sqrt(2 * mp.pi * u**3)
    d = 1 + sv**2 * t
    num = a**2 * ww**2 * sv**2 - 2 * a * vv * ww - vv**2 * t
    return -2 * mp.log(a) + mp.log(g) + num / (2 * d) - mp.log(d) / 2


def f5(*x):
    l = lp5(*x)
    return mp.mpf(0) if l is None else mp.exp(l)


def gauss(n, lo, hi):
    xs, ws = np.polynomial.legendre.leggauss(n)  # float64 nodes: refine to mp by Newton
    out = []
    for x0 in xs:
        x = mp.mpf(float(x0))
        for _ in range(6):
            p, dp = mp.legendre(n, x), mp.diff(lambda z: mp.legendre(n, z), x)
            x -= p / dp
        dp = mp.diff(lambda z: mp.legendre(n, z), x)
        w = 2 / ((1 - x**2) * dp**2)
        out.append(((hi - lo) / 2 * x + (hi + lo) / 2, (hi - lo) / 2 * w))
    return out


def integrals(p, n):
    """[I, dI/dp_0..7] with Stan's zero-width conventions."""
    y, a, t0, w, v, sv, sw, st0 = [mp.mpf(z) for z in p]
    rmax = min(mp.mpf(1), (y - t0) / st0) if st0 > 0 else mp.mpf(0)
    if st0 == 0:
        rs = [(mp.mpf(0), mp.mpf(1))]
    elif rmax < 1:
        # The density vanishes at r_max like exp(-c/(y - t0')): graded pieces toward it.
        cuts = [rmax * (1 - mp.mpf(2) ** -k) for k in range(25)] + [rmax]
        rs = [node for lo, hi in zip(cuts, cuts[1:]) for node in gauss(n, lo, hi)]
    else:
        rs = gauss(n, 0, rmax)
    ss = gauss(n, 0, 1) if sw > 0 else [(mp.mpf(0.5), mp.mpf(1))]
    tot = [mp.mpf(0)] * 9
    base = [y, a, t0, w, v, sv, sw, st0]

    def F(q, r, s):
        return f5(q[0], q[1], q[2] + q[7] * r, q[3] + q[6] * (s - mp.mpf(0.5)), q[4], q[5])

    for r, wr in rs:
        for s, ws in ss:
            c = wr * ws
            tot[0] += c * F(base, r, s)
            for k in range(8):
                def h(e, k=k):
                    q = list(base)
                    q[k] += e
                    return F(q, r, s)
                tot[k + 1] += c * mp.diff(h, 0)
    return tot


def oracle(p, n):
    tot = integrals(p, n)
    lp = mp.log(tot[0])
    g = [tot[k + 1] / tot[0] for k in range(8)]
    if p[6] == 0:
        g[6] = mp.mpf(0)
    if p[7] == 0:
        g[7] = mp.mpf(0)
    return lp, g


MP_CODE = """parameters { real y; real a; real t0; real w; real v; real sv; real sw; real st0; }
model { target += wiener_lpdf(y | a, t0, w, v, sv, sw, st0); }"""

# (y, a, t0, w, v, sv, sw, st0)
MP_POINTS = {
    "wiener7_mp_both": [[0.9, 1.2, 0.2, 0.45, 0.7, 0.4, 0.3, 0.15],
                        [1.6, 1.8, 0.1, 0.6, -1.1, 1.3, 0.5, 0.3]],
    "wiener7_mp_cut": [[0.5, 0.9, 0.2, 0.5, 0.3, 0.6, 0.0, 0.5]],
    "wiener7_mp_sw_only": [[0.7, 1.1, 0.15, 0.4, 1.5, 0.8, 0.6, 0.0]],
    "wiener7_mp_st0_only": [[2.3, 2.0, 0.3, 0.55, 0.2, 0.5, 0.0, 0.4]],
}

STANLI_PROGRAMS = {
    # stanc has the 7-parameter form with all arguments real or all vectors (no mixing).
    "wiener7_stanli_vectorised": ("""
data { int N; vector<lower=0>[N] y; }
parameters { real<lower=0.5, upper=2> a; real<lower=0, upper=0.2> tau; real<lower=0.3, upper=0.7> b;
             real d; real<lower=0> sv; real<lower=0, upper=0.5> sw; real<lower=0, upper=0.2> st0;
             vector<lower=0.5, upper=2>[N] av; }
model {
  d ~ normal(0, 1); sv ~ gamma(2, 2);
  y ~ wiener(av, rep_vector(tau, N), rep_vector(b, N), rep_vector(d, N), rep_vector(sv, N),
             rep_vector(sw, N), rep_vector(st0, N));
  target += wiener_lpdf(y | av, rep_vector(0.1, N), rep_vector(b, N), rep_vector(-0.4, N),
                        rep_vector(0, N), rep_vector(sw, N), rep_vector(0, N));
  y[1] ~ wiener(a, tau, b, d, sv, sw, st0);
  for (i in 1:N) target += wiener_lpdf(y[i] | a, tau, b, d, sv, sw, st0);
  target += wiener_lupdf(y[2] | a, 0.1, 0.5, -0.7, sv, 0.2, st0);
  target += wiener_lpdf(y[3] | 1.5, 0.05, b, 0.2, 0.3, 0.0, st0);
  target += wiener_lpdf(0.8 | 1.0, 0.2, 0.5, 0.3, 0.0, 0.1, 0.1);
}""", {"N": 4, "y": [0.55, 1.2, 2.5, 0.7]}),
}


def point_json(p, lp, g):
    return {"q": [float(z) for z in p], "log_density": float(lp),
            "gradient": [float(z) for z in g]}


def main():
    out = []
    mp_model = stanli.Model(stan_code=MP_CODE, data="{}")
    for name, pts in MP_POINTS.items():
        points = []
        for p in pts:
            lp, g = oracle(p, 24)
            lp2, g2 = oracle(p, 32)
            assert abs(lp - lp2) < 1e-13, (name, lp, lp2)
            assert all(abs(x - z) < 1e-11 * (1 + abs(z)) for x, z in zip(g, g2)), (name, g, g2)
            slp, _ = mp_model.log_prob_grad(np.array(p, dtype=float))
            assert abs(slp - float(lp2)) < 1e-6 * max(1, abs(slp)), (name, slp, lp2)
            points.append(point_json(p, lp2, g2))
            print(f"{name}: lp {float(lp2):.12f} stanli {slp:.12f}")
        out.append({"name": name, "program": MP_CODE, "oracle": "mpmath", "data": "{}",
                    "n_unconstrained": 8, "points": points})
    for i, (name, (code, data)) in enumerate(STANLI_PROGRAMS.items()):
        data_json = json.dumps(data)
        model = stanli.Model(stan_code=code, data=data_json)
        dim = model.n_unconstrained
        rng = np.random.default_rng(3100 + i)
        points = []
        while len(points) < 3:
            q = rng.uniform(-1, 1, size=dim)
            lp, grad = model.log_prob_grad(q)
            points.append({"q": q.tolist(), "log_density": float(lp),
                           "gradient": [float(z) for z in grad]})
        out.append({"name": name, "program": code, "oracle": "stanli", "data": data_json,
                    "n_unconstrained": dim, "points": points})
        print(f"{name}: dim {dim}, lp {points[0]['log_density']:.6f}")
    OUT.write_text(json.dumps({"generator": "scripts/dist/make_wiener7_fixtures.py",
                               "stanli": stanli.__version__, "programs": out}, indent=1) + "\n")


if __name__ == "__main__":
    main()
