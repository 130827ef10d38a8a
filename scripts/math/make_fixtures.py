#!/usr/bin/env python3
"""Reference values for hazel-math's tests, computed with mpmath at 50 significant digits.

Writes JSON under crates/hazel-math/tests/fixtures/:
  special_unary.json   [{name, x, value, deriv}]
  special_binary.json  [{name, args, value, grad, differentiable}]
  special_ternary.json [{name, args, value, grad}]
  dist_lpdf.json       [{name, args, value, grad, differentiable}]   (all terms, propto = false)
  dist_cdf.json        [{name, args, lcdf, lccdf, lcdf_grad, lccdf_grad, differentiable}]

Values are written independently of hazel's algorithms: densities from their textbook formulas
in mpmath, cdfs from mpmath's regularized incomplete gamma/beta functions or exact sums, and
derivatives by mpmath's high-precision numerical differentiation (mp.diff) of those formulas.
The densities are cross-checked against scipy.stats where scipy has the family.

Usage: pip install mpmath scipy; python3 scripts/math/make_fixtures.py
"""

import json
import math
import os
import sys

import mpmath as mp
import scipy.stats as st
import scipy.special as sp

mp.mp.dps = 50

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "crates", "hazel-math", "tests", "fixtures")


def f(x):
    """mpf -> nearest double."""
    v = float(x)
    if not math.isfinite(v):
        raise ValueError(f"non-finite reference value {x}")
    return v


def rdiff(fn, x):
    """Central difference with a step relative to |x| (mp.diff's default absolute step would
    leave the domain near 0), at 50 digits: truncation error ~1e-24 relative, rounding error
    ~1e-35 relative."""
    x = mp.mpf(x)
    h = abs(x) * mp.mpf("1e-12") if x != 0 else mp.mpf("1e-15")
    return mp.diff(fn, x, h=h)


def diff(fn, args, i):
    args = [mp.mpf(a) for a in args]

    def g(t):
        a = list(args)
        a[i] = t
        return fn(*a)

    return rdiff(g, args[i])


# ----------------------------------------------------------------------------------------------
# Special functions
# ----------------------------------------------------------------------------------------------

def lgamma(x):
    return mp.log(abs(mp.gamma(x)))


def inv_logit(x):
    return 1 / (1 + mp.exp(-x))


def inv_phi(p):
    p = mp.mpf(p)
    guess = float(sp.ndtri(float(p)))
    return mp.findroot(lambda x: mp.ncdf(x) - p, guess)


UNARY = {
    "exp": (mp.exp, [-700.5, -3.2, -1e-10, 0.0, 0.7, 2.5, 300.0]),
    "log": (mp.log, [1e-300, 1e-5, 0.3, 1.0, 2.0, 1e10]),
    "log1p": (mp.log1p, [-0.999, -1e-10, 1e-12, 0.5, 3.0, 1e20]),
    "expm1": (mp.expm1, [-40.0, -1e-9, 1e-14, 0.3, 5.0]),
    "log1m": (lambda x: mp.log(1 - x), [-5.0, -1e-12, 1e-9, 0.5, 0.999999]),
    "lgamma": (lgamma, [1e-8, 0.1, 0.5, 1.0, 1.5, 2.0, 3.7, 10.0, 123.4, 1e5, 1e15, -0.5, -2.7]),
    "digamma": (mp.digamma, [1e-6, 0.1, 0.5, 1.0, 1.4616321449683622, 1.5, 2.0, 7.3, 11.9, 12.1, 50.0, 1e6, -0.5, -2.3, -10.9]),
    "trigamma": (lambda x: mp.psi(1, x), [1e-4, 0.3, 1.0, 2.5, 11.5, 12.5, 100.0, 1e6, -0.5, -3.7]),
    "tgamma": (mp.gamma, [0.01, 0.5, 1.5, 4.2, 20.5, 150.3, -0.5, -3.3]),
    "inv_logit": (inv_logit, [-745.0, -40.0, -3.0, 0.0, 0.2, 4.0, 36.0]),
    "logit": (lambda u: mp.log(u / (1 - u)), [1e-300, 1e-5, 0.3, 0.5, 0.9, 0.999999]),
    "log1p_exp": (lambda x: mp.log1p(mp.exp(x)), [-800.0, -40.0, -3.0, 0.0, 2.0, 40.0, 800.0]),
    "log1m_exp": (lambda x: mp.log(-mp.expm1(x)), [-800.0, -40.0, -3.0, -0.7, -1e-3, -1e-12]),
    "log_inv_logit": (lambda x: -mp.log1p(mp.exp(-x)), [-800.0, -40.0, -2.0, 0.0, 3.0, 40.0]),
    "log1m_inv_logit": (lambda x: -mp.log1p(mp.exp(x)), [-40.0, -2.0, 0.0, 3.0, 40.0, 800.0]),
    "inv_cloglog": (lambda x: -mp.expm1(-mp.exp(x)), [-40.0, -3.0, 0.0, 1.0, 3.0]),
    "Phi": (mp.ncdf, [-37.0, -20.0, -8.0, -1.5, 0.0, 0.4, 3.0, 8.0]),
    "Phi_approx": (lambda x: inv_logit(mp.mpf("0.07056") * x ** 3 + mp.mpf("1.5976") * x), [-5.0, -1.0, 0.0, 0.5, 3.0]),
    "erf": (mp.erf, [-3.0, -0.6, 1e-10, 0.3, 0.7, 1.5, 2.9, 5.0]),
    "erfc": (mp.erfc, [-3.0, -0.5, 0.0, 0.6, 1.2, 2.5, 5.0, 10.0, 26.0]),
    "sqrt": (mp.sqrt, [1e-300, 0.3, 2.0, 1e300]),
    "cbrt": (lambda x: mp.sign(x) * mp.cbrt(abs(x)), [-8.5, 1e-9, 0.3, 27.0]),
    "square": (lambda x: x * x, [-3.1, 0.5, 1e100]),
    "inv": (lambda x: 1 / x, [-3.1, 0.5, 1e100]),
    "inv_sqrt": (lambda x: 1 / mp.sqrt(x), [0.001, 2.0, 1e100]),
    "inv_square": (lambda x: 1 / x ** 2, [-3.0, 0.01, 1e10]),
    "tanh": (mp.tanh, [-20.0, -0.5, 1e-9, 0.8, 5.0]),
    "sinh": (mp.sinh, [-5.0, 1e-8, 0.5, 30.0]),
    "cosh": (mp.cosh, [-5.0, 1e-8, 0.5, 30.0]),
    "sin": (mp.sin, [-3.0, 1e-8, 0.5, 100.0]),
    "cos": (mp.cos, [-3.0, 1e-8, 0.5, 100.0]),
    "tan": (mp.tan, [-1.3, 1e-8, 0.5, 1.5]),
    "asin": (mp.asin, [-0.99, 1e-9, 0.5, 0.999]),
    "acos": (mp.acos, [-0.99, 1e-9, 0.5, 0.999]),
    "atan": (mp.atan, [-100.0, 1e-9, 0.5, 3.0]),
    "asinh": (mp.asinh, [-100.0, 1e-9, 0.5, 3.0]),
    "acosh": (mp.acosh, [1.001, 2.0, 100.0]),
    "atanh": (mp.atanh, [-0.99, 1e-9, 0.5, 0.999]),
    "fabs": (abs, [-2.5, 3.0]),
    "abs": (abs, [-2.5, 3.0]),
    "log2": (mp.log2 if hasattr(mp, "log2") else (lambda x: mp.log(x, 2)), [1e-5, 0.5, 3.0, 1e10]),
    "log10": (mp.log10, [1e-5, 0.5, 3.0, 1e10]),
    "exp2": (lambda x: mp.power(2, x), [-10.5, 0.0, 0.3, 50.0]),
    "lambert_w0": (lambda x: mp.lambertw(x, 0).real, [-0.3678, -0.2, -1e-6, 0.5, 1.0, 10.0, 1e6, 1e100]),
    "lambert_wm1": (lambda x: mp.lambertw(x, -1).real, [-0.3678, -0.2, -0.01, -1e-10]),
    "inv_Phi": (inv_phi, [1e-300, 1e-20, 1e-5, 0.02, 0.3, 0.5, 0.7, 0.98, 0.99999]),
    "std_normal_qf": (inv_phi, [1e-5, 0.3, 0.9]),
    "inv_erfc": (lambda x: -inv_phi(x / 2) / mp.sqrt(2), [1e-100, 0.01, 0.5, 1.0, 1.7, 1.999]),
}

# Functions whose derivative is written from the value rather than by numerical differentiation
# (mp.diff through findroot would be slow).
UNARY_DERIV = {
    "inv_Phi": lambda x, v: 1 / mp.npdf(v),
    "std_normal_qf": lambda x, v: 1 / mp.npdf(v),
    "inv_erfc": lambda x, v: -mp.sqrt(mp.pi) / 2 * mp.exp(v * v),
    # Numerical differentiation would step past the branch point -1/e.
    "lambert_w0": lambda x, v: v / (x * (1 + v)),
    "lambert_wm1": lambda x, v: v / (x * (1 + v)),
}


def make_unary():
    rows = []
    for name, (fn, xs) in UNARY.items():
        for x in xs:
            x = mp.mpf(x)
            v = fn(x)
            if name in UNARY_DERIV:
                d = UNARY_DERIV[name](x, v)
            elif name in ("fabs", "abs"):
                d = mp.sign(x)
            else:
                d = rdiff(fn, x)
            rows.append({"name": name, "x": f(x), "value": f(v), "deriv": f(d)})
    return rows


def owens_t(h, a):
    # The integrand is a bump of width ~1/|h| at 0: integrate over 64 pieces so that tanh-sinh
    # quadrature sees smooth pieces (one interval gives 0.6% error at h = 20).
    pieces = mp.linspace(0, a, 65)
    return mp.quad(lambda x: mp.exp(-h * h * (1 + x * x) / 2) / (1 + x * x), pieces) / (2 * mp.pi)


def lchoose(n, k):
    return lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1)


def lmgamma(k, x):
    k = int(k)
    return k * (k - 1) / mp.mpf(4) * mp.log(mp.pi) + mp.fsum(lgamma(x + mp.mpf(1 - j) / 2) for j in range(1, k + 1))


# name: (fn, [(args...)], differentiable flags)
BINARY = {
    "pow": (lambda x, y: mp.power(x, y), [(2.5, 3.3), (0.3, -1.7), (10.0, 0.5)], (True, True)),
    "atan2": (mp.atan2, [(1.0, 2.0), (-3.0, 0.5), (0.5, -4.0)], (True, True)),
    "hypot": (mp.hypot, [(3.0, 4.0), (1e-200, 1e-200), (1e200, 3e200)], (True, True)),
    "beta": (mp.beta, [(0.5, 0.5), (2.0, 3.0), (30.0, 40.0)], (True, True)),
    "ldexp": (lambda x, n: x * mp.power(2, int(n)), [(1.5, 3.0), (-0.3, -4.0)], (True, False)),
    "lbeta": (lambda a, b: mp.log(mp.beta(a, b)), [(0.5, 0.5), (2.0, 3.0), (1e-8, 5.0), (3.0, 1e4), (1e5, 2e5), (12.0, 15.0), (0.3, 1e15)], (True, True)),
    "lchoose": (lchoose, [(10.0, 3.0), (5.5, 2.2), (1e6, 37.0), (100.0, 50.0)], (True, True)),
    "log_diff_exp": (lambda x, y: mp.log(mp.exp(x) - mp.exp(y)), [(0.0, -1.0), (3.0, 2.9999), (-700.0, -800.0), (50.0, -50.0)], (True, True)),
    "log_sum_exp": (lambda x, y: mp.log(mp.exp(x) + mp.exp(y)), [(0.0, -1.0), (800.0, 799.0), (-800.0, -1000.0)], (True, True)),
    "log_inv_logit_diff": (lambda x, y: mp.log(inv_logit(x) - inv_logit(y)), [(1.0, -1.0), (0.5, 0.4), (-20.0, -30.0), (30.0, 20.0)], (True, True)),
    "multiply_log": (lambda x, y: x * mp.log(y), [(2.0, 3.0), (0.5, 1e-10)], (True, True)),
    "gamma_p": (lambda a, x: mp.gammainc(a, 0, x, regularized=True), [(0.5, 0.2), (2.0, 3.0), (10.0, 5.0), (10.0, 15.0), (100.0, 90.0), (100.0, 110.0), (1e-3, 1e-2), (3.5, 30.0), (1000.0, 950.0), (1e4, 1.005e4), (5e4, 4.9e4), (1e6, 1.0012e6)], (True, True)),
    "gamma_q": (lambda a, x: mp.gammainc(a, x, mp.inf, regularized=True), [(0.5, 0.2), (2.0, 3.0), (10.0, 5.0), (10.0, 15.0), (100.0, 90.0), (3.5, 30.0), (1000.0, 1050.0)], (True, True)),
    "owens_t": (owens_t, [(0.5, 0.3), (1.0, 1.0), (2.0, 0.5), (0.3, 3.0), (-1.0, 2.0), (1.5, -0.7), (5.0, 10.0), (8.0, 0.9), (20.0, 1.0), (12.0, 0.05), (3.0, 50.0)], (True, True)),
    "log_modified_bessel_first_kind": (lambda v, z: mp.log(mp.besseli(v, z)), [(0.0, 0.5), (0.0, 10.0), (1.5, 3.0), (2.0, 100.0), (0.0, 1000.0), (3.0, 1e-3)], (False, True)),
    "bessel_first_kind": (lambda n, x: mp.besselj(int(n), x), [(0.0, 1.5), (1.0, 2.5), (3.0, 10.0)], (False, True)),
    "modified_bessel_first_kind": (lambda n, x: mp.besseli(int(n), x), [(0.0, 1.5), (1.0, 2.5), (3.0, 10.0)], (False, True)),
    "hypergeometric_1F0": (lambda a, z: mp.hyper([a], [], z), [(2.0, 0.3), (-1.5, -0.7), (0.7, 0.95)], (True, True)),
    "modified_bessel_second_kind": (lambda n, x: mp.besselk(int(n), x), [(0.0, 1.5), (1.0, 2.5), (3.0, 10.0), (0.0, 1e-3), (5.0, 0.2), (2.0, 700.0)], (False, True)),
    "lmgamma": (lmgamma, [(1.0, 2.5), (3.0, 4.2), (5.0, 10.0)], (False, True)),
    "binary_log_loss": (lambda y, yh: -mp.log(yh) if y else -mp.log(1 - yh), [(1.0, 0.3), (0.0, 0.3)], (False, True)),
    "log_falling_factorial": (lambda x, n: lgamma(x + 1) - lgamma(x - n + 1), [(5.5, 2.0), (10.0, 3.5)], (True, True)),
    "log_rising_factorial": (lambda x, n: lgamma(x + n) - lgamma(x), [(5.5, 2.0), (10.0, 3.5)], (True, True)),
}


def make_binary():
    rows = []
    for name, (fn, points, dflags) in BINARY.items():
        for args in points:
            v = fn(*[mp.mpf(a) for a in args])
            grad = [f(diff(fn, args, i)) if dflags[i] else 0.0 for i in range(2)]
            rows.append({"name": name, "args": list(args), "value": f(v), "grad": grad, "differentiable": list(dflags)})
    return rows


def inv_inc_beta(a, b, p):
    guess = float(sp.betaincinv(float(a), float(b), float(p)))
    return mp.findroot(lambda x: mp.betainc(a, b, 0, x, regularized=True) - p, guess)


def inv_inc_beta_grad(a, b, p):
    """Implicit-function partials at x = inv_inc_beta(a, b, p), from mpmath's betainc."""
    x = inv_inc_beta(a, b, p)
    i = lambda a_, b_, x_: mp.betainc(a_, b_, 0, x_, regularized=True)
    dx = rdiff(lambda t: i(a, b, t), x)
    return [-rdiff(lambda t: i(t, b, x), a) / dx, -rdiff(lambda t: i(a, t, x), b) / dx, 1 / dx]


TERNARY = {
    "log_mix": (lambda t, l1, l2: mp.log(t * mp.exp(l1) + (1 - t) * mp.exp(l2)), [(0.3, -1.0, -2.0), (0.9, -700.0, -710.0)]),
    "inc_beta": (lambda a, b, x: mp.betainc(a, b, 0, x, regularized=True), [(2.0, 3.0, 0.4), (0.5, 0.5, 0.1), (10.0, 20.0, 0.6), (100.0, 200.0, 0.3), (1.5, 50.0, 0.01), (0.1, 0.2, 0.99), (1000.0, 2000.0, 0.335), (500.0, 3.0, 0.995)]),
}


def make_ternary():
    rows = []
    for args in [(2.0, 3.0, 0.4), (0.5, 0.5, 0.1), (10.0, 20.0, 0.999), (1.5, 50.0, 1e-10), (0.3, 4.0, 0.5)]:
        margs = [mp.mpf(a) for a in args]
        rows.append({"name": "inv_inc_beta", "args": list(args), "value": f(inv_inc_beta(*margs)),
                     "grad": [f(g) for g in inv_inc_beta_grad(*margs)]})
    for name, (fn, points) in TERNARY.items():
        for args in points:
            v = fn(*[mp.mpf(a) for a in args])
            grad = [f(diff(fn, args, i)) for i in range(3)]
            rows.append({"name": name, "args": list(args), "value": f(v), "grad": grad})
    return rows


# ----------------------------------------------------------------------------------------------
# Distributions: full log densities (all constants), textbook formulas.
# ----------------------------------------------------------------------------------------------

LOG2PI = mp.log(2 * mp.pi)


def normal(y, mu, s):
    return -LOG2PI / 2 - mp.log(s) - ((y - mu) / s) ** 2 / 2


def lbeta(a, b):
    return lgamma(a) + lgamma(b) - lgamma(a + b)


DISTS = {
    # name: (logpdf, points, differentiable flags, scipy logpdf or None)
    "normal": (normal, [(0.3, -1.0, 2.0), (10.0, 0.0, 0.5), (-1e3, 2.0, 30.0)], (1, 1, 1),
               lambda y, m, s: st.norm.logpdf(y, m, s)),
    "std_normal": (lambda y: -LOG2PI / 2 - y * y / 2, [(0.3,), (-7.0,)], (1,), lambda y: st.norm.logpdf(y)),
    "cauchy": (lambda y, m, s: -mp.log(mp.pi) - mp.log(s) - mp.log1p(((y - m) / s) ** 2),
               [(0.3, -1.0, 2.0), (1e4, 0.0, 0.5)], (1, 1, 1), lambda y, m, s: st.cauchy.logpdf(y, m, s)),
    "student_t": (lambda y, nu, m, s: lgamma((nu + 1) / 2) - lgamma(nu / 2) - mp.log(nu * mp.pi) / 2 - mp.log(s)
                  - (nu + 1) / 2 * mp.log1p(((y - m) / s) ** 2 / nu),
                  [(0.3, 3.0, -1.0, 2.0), (50.0, 0.5, 1.0, 3.0), (-2.0, 1e6, 0.0, 1.0)], (1, 1, 1, 1),
                  lambda y, nu, m, s: st.t.logpdf(y, nu, m, s)),
    "lognormal": (lambda y, m, s: -LOG2PI / 2 - mp.log(s) - mp.log(y) - ((mp.log(y) - m) / s) ** 2 / 2,
                  [(0.3, -1.0, 2.0), (100.0, 2.0, 0.5)], (1, 1, 1),
                  lambda y, m, s: st.lognorm.logpdf(y, s, scale=math.exp(m))),
    "exponential": (lambda y, b: mp.log(b) - b * y, [(0.3, 2.0), (100.0, 0.01)], (1, 1),
                    lambda y, b: st.expon.logpdf(y, scale=1 / b)),
    "gamma": (lambda y, a, b: a * mp.log(b) - lgamma(a) + (a - 1) * mp.log(y) - b * y,
              [(0.3, 2.0, 3.0), (100.0, 50.0, 0.4), (1e-5, 0.3, 1.0)], (1, 1, 1),
              lambda y, a, b: st.gamma.logpdf(y, a, scale=1 / b)),
    "inv_gamma": (lambda y, a, b: a * mp.log(b) - lgamma(a) - (a + 1) * mp.log(y) - b / y,
                  [(0.3, 2.0, 3.0), (100.0, 5.0, 40.0)], (1, 1, 1),
                  lambda y, a, b: st.invgamma.logpdf(y, a, scale=b)),
    "beta": (lambda y, a, b: (a - 1) * mp.log(y) + (b - 1) * mp.log1p(-y) - lbeta(a, b),
             [(0.3, 2.0, 3.0), (0.999, 0.5, 0.5), (0.01, 200.0, 5000.0)], (1, 1, 1),
             lambda y, a, b: st.beta.logpdf(y, a, b)),
    "beta_proportion": (lambda y, m, k: (m * k - 1) * mp.log(y) + ((1 - m) * k - 1) * mp.log1p(-y) - lbeta(m * k, (1 - m) * k),
                        [(0.3, 0.4, 5.0), (0.9, 0.7, 50.0)], (1, 1, 1), None),
    "uniform": (lambda y, a, b: -mp.log(b - a), [(0.3, -1.0, 2.0)], (1, 1, 1),
                lambda y, a, b: st.uniform.logpdf(y, a, b - a)),
    "double_exponential": (lambda y, m, s: -mp.log(2 * s) - abs(y - m) / s, [(0.3, -1.0, 2.0), (-3.0, 1.0, 0.5)], (1, 1, 1),
                           lambda y, m, s: st.laplace.logpdf(y, m, s)),
    "logistic": (lambda y, m, s: -(y - m) / s - mp.log(s) - 2 * mp.log1p(mp.exp(-(y - m) / s)),
                 [(0.3, -1.0, 2.0), (-30.0, 1.0, 0.5), (40.0, 0.0, 1.0)], (1, 1, 1),
                 lambda y, m, s: st.logistic.logpdf(y, m, s)),
    "weibull": (lambda y, a, s: mp.log(a) - mp.log(s) + (a - 1) * mp.log(y / s) - (y / s) ** a,
                [(0.3, 2.0, 3.0), (5.0, 0.5, 2.0)], (1, 1, 1),
                lambda y, a, s: st.weibull_min.logpdf(y, a, scale=s)),
    "frechet": (lambda y, a, s: mp.log(a) - mp.log(s) - (1 + a) * mp.log(y / s) - (y / s) ** (-a),
                [(0.3, 2.0, 3.0), (5.0, 0.5, 2.0)], (1, 1, 1),
                lambda y, a, s: st.invweibull.logpdf(y, a, scale=s)),
    "gumbel": (lambda y, m, b: -mp.log(b) - (y - m) / b - mp.exp(-(y - m) / b),
               [(0.3, -1.0, 2.0), (-3.0, 1.0, 0.5)], (1, 1, 1),
               lambda y, m, b: st.gumbel_r.logpdf(y, m, b)),
    "rayleigh": (lambda y, s: mp.log(y) - 2 * mp.log(s) - y * y / (2 * s * s), [(0.3, 2.0), (5.0, 1.5)], (1, 1),
                 lambda y, s: st.rayleigh.logpdf(y, scale=s)),
    "pareto": (lambda y, ym, a: mp.log(a) + a * mp.log(ym) - (a + 1) * mp.log(y), [(3.0, 2.0, 1.5), (100.0, 0.1, 0.3)], (1, 1, 1),
               lambda y, ym, a: st.pareto.logpdf(y, a, scale=ym)),
    "pareto_type_2": (lambda y, m, l, a: mp.log(a) - mp.log(l) - (a + 1) * mp.log1p((y - m) / l),
                      [(3.0, 2.0, 1.5, 3.0), (100.0, -1.0, 0.1, 0.3)], (1, 1, 1, 1),
                      lambda y, m, l, a: st.lomax.logpdf(y - m, a, scale=l)),
    "chi_square": (lambda y, nu: -(nu / 2) * mp.log(2) - lgamma(nu / 2) + (nu / 2 - 1) * mp.log(y) - y / 2,
                   [(0.3, 2.0), (100.0, 80.5)], (1, 1), lambda y, nu: st.chi2.logpdf(y, nu)),
    "inv_chi_square": (lambda y, nu: -(nu / 2) * mp.log(2) - lgamma(nu / 2) - (nu / 2 + 1) * mp.log(y) - 1 / (2 * y),
                       [(0.3, 2.0), (0.01, 80.5)], (1, 1), lambda y, nu: st.invgamma.logpdf(y, nu / 2, scale=0.5)),
    "scaled_inv_chi_square": (lambda y, nu, s: (nu / 2) * mp.log(nu / 2) - lgamma(nu / 2) + nu * mp.log(s)
                              - (nu / 2 + 1) * mp.log(y) - nu * s * s / (2 * y),
                              [(0.3, 2.0, 0.7), (4.0, 30.0, 2.5)], (1, 1, 1),
                              lambda y, nu, s: st.invgamma.logpdf(y, nu / 2, scale=nu * s * s / 2)),
    "skew_normal": (lambda y, xi, om, al: mp.log(2) + normal(y, xi, om) + mp.log(mp.ncdf(al * (y - xi) / om)),
                    [(0.3, -1.0, 2.0, 1.5), (-3.0, 1.0, 0.5, 4.0), (2.0, 0.0, 1.0, -3.0)], (1, 1, 1, 1),
                    lambda y, xi, om, al: st.skewnorm.logpdf(y, al, xi, om)),
    "exp_mod_normal": (lambda y, m, s, l: mp.log(l / 2) + l / 2 * (2 * m + l * s * s - 2 * y)
                       + mp.log(mp.erfc((m + l * s * s - y) / (mp.sqrt(2) * s))),
                       [(0.3, -1.0, 2.0, 1.5), (5.0, 1.0, 0.5, 0.3), (-4.0, 0.0, 1.0, 3.0)], (1, 1, 1, 1),
                       lambda y, m, s, l: st.exponnorm.logpdf(y, 1 / (s * l), m, s)),
    "von_mises": (lambda y, m, k: k * mp.cos(y - m) - mp.log(2 * mp.pi) - mp.log(mp.besseli(0, k)),
                  [(0.3, -1.0, 2.0), (3.0, 1.0, 50.0), (-1.0, 0.5, 0.01)], (1, 1, 1),
                  lambda y, m, k: st.vonmises.logpdf(y, k, loc=m)),
    # discrete: the variate (and N) are not differentiable
    "poisson": (lambda n, l: n * mp.log(l) - l - lgamma(n + 1), [(3, 2.5), (0, 0.1), (150, 140.2)], (0, 1),
                lambda n, l: st.poisson.logpmf(n, l)),
    "poisson_log": (lambda n, a: n * a - mp.exp(a) - lgamma(n + 1), [(3, 0.9), (0, -3.0), (150, 5.0)], (0, 1),
                    lambda n, a: st.poisson.logpmf(n, math.exp(a))),
    "binomial": (lambda n, N, t: lchoose(N, n) + n * mp.log(t) + (N - n) * mp.log1p(-t), [(3, 10, 0.4), (0, 5, 0.01), (700, 1000, 0.72)], (0, 0, 1),
                 lambda n, N, t: st.binom.logpmf(n, N, t)),
    "binomial_logit": (lambda n, N, a: lchoose(N, n) + n * mp.log(inv_logit(a)) + (N - n) * mp.log(1 - inv_logit(a)),
                       [(3, 10, -0.4), (0, 5, -20.0), (700, 1000, 1.2)], (0, 0, 1),
                       lambda n, N, a: st.binom.logpmf(n, N, sp.expit(a))),
    "bernoulli": (lambda n, t: mp.log(t) if n else mp.log1p(-t), [(1, 0.3), (0, 0.3)], (0, 1),
                  lambda n, t: st.bernoulli.logpmf(n, t)),
    "bernoulli_logit": (lambda n, a: mp.log(inv_logit(a)) if n else mp.log(1 - inv_logit(a)), [(1, -0.3), (0, 2.0), (1, 40.0), (0, 40.0)], (0, 1),
                        lambda n, a: st.bernoulli.logpmf(n, sp.expit(a))),
    "neg_binomial": (lambda n, a, b: lchoose(n + a - 1, n) + a * mp.log(b / (1 + b)) - n * mp.log1p(b),
                     [(3, 2.5, 0.7), (0, 0.3, 2.0), (40, 10.0, 0.3)], (0, 1, 1),
                     lambda n, a, b: st.nbinom.logpmf(n, a, b / (1 + b))),
    "neg_binomial_2": (lambda n, m, p: lchoose(n + p - 1, n) + n * mp.log(m / (m + p)) + p * mp.log(p / (m + p)),
                       [(3, 2.5, 0.7), (0, 0.3, 2.0), (40, 35.0, 1e6), (100, 20.0, 3.0)], (0, 1, 1),
                       lambda n, m, p: st.nbinom.logpmf(n, p, p / (m + p))),
    "neg_binomial_2_log": (lambda n, e, p: lchoose(n + p - 1, n) + n * (e - mp.log(mp.exp(e) + p)) + p * mp.log(p / (mp.exp(e) + p)),
                           [(3, 0.9, 0.7), (0, -1.0, 2.0), (40, 3.5, 1e5)], (0, 1, 1),
                           lambda n, e, p: st.nbinom.logpmf(n, p, p / (math.exp(e) + p))),
    "beta_binomial": (lambda n, N, a, b: lchoose(N, n) + lbeta(n + a, N - n + b) - lbeta(a, b),
                      [(3, 10, 2.0, 3.0), (0, 5, 0.3, 0.4), (70, 100, 20.0, 5.0)], (0, 0, 1, 1),
                      lambda n, N, a, b: st.betabinom.logpmf(n, N, a, b)),
    "beta_neg_binomial": (lambda n, r, a, b: lbeta(n + r, a + b) + mp.loggamma(n + b) - lbeta(r, a) - mp.loggamma(b) - mp.loggamma(n + 1),
                          [(3, 2.5, 3.0, 1.5), (0, 0.7, 2.0, 4.0), (40, 10.0, 5.0, 20.0)], (0, 1, 1, 1),
                          lambda n, r, a, b: st.betanbinom.logpmf(n, r, a, b)),
    "skew_double_exponential": (lambda y, m, s, t: mp.log(2) + mp.log(t) + mp.log1p(-t) - mp.log(s)
                                - 2 * ((1 - t) * (m - y) if y < m else t * (y - m)) / s,
                                [(0.3, 1.0, 2.0, 0.3), (2.5, 1.0, 0.7, 0.8), (-4.0, 0.5, 1.5, 0.05)], (1, 1, 1, 1),
                                None),
    "loglogistic": (lambda y, a, b: mp.log(b) - mp.log(a) + (b - 1) * (mp.log(y) - mp.log(a))
                    - 2 * mp.log1p((y / a) ** b),
                    [(1.5, 2.0, 3.0), (0.02, 0.5, 1.2), (40.0, 3.0, 0.7)], (1, 1, 1),
                    lambda y, a, b: st.fisk.logpdf(y, b, scale=a)),
    "discrete_range": (lambda y, lo, hi: -mp.log(hi - lo + 1), [(3, 1, 6), (-2, -2, 10)], (0, 0, 0),
                       lambda y, lo, hi: st.randint.logpmf(y, lo, hi + 1)),
    "hypergeometric": (lambda n, N, a, b: lchoose(a, n) + lchoose(b, N - n) - lchoose(a + b, N),
                       [(2, 5, 4, 6), (0, 3, 2, 9), (40, 100, 60, 70)], (0, 0, 0, 0),
                       lambda n, N, a, b: st.hypergeom.logpmf(n, a + b, a, N)),
}


def make_lpdf():
    rows = []
    for name, (fn, points, dflags, scipy_fn) in DISTS.items():
        for args in points:
            margs = [mp.mpf(a) for a in args]
            v = fn(*margs)
            if scipy_fn is not None:
                sv = float(scipy_fn(*args))
                if math.isfinite(sv) and not math.isclose(sv, float(v), rel_tol=1e-7, abs_tol=1e-7):
                    sys.exit(f"{name}{args}: mpmath {float(v)} vs scipy {sv}")
            grad = [f(diff(fn, args, i)) if dflags[i] else 0.0 for i in range(len(args))]
            rows.append({"name": name, "args": [float(a) for a in args], "value": f(v), "grad": grad,
                         "differentiable": [bool(d) for d in dflags]})
    return rows


# ----------------------------------------------------------------------------------------------
# CDFs: mpmath cdf formulas; log ccdf from the complementary formula where one exists.
# ----------------------------------------------------------------------------------------------

def reg_gamma_p(a, x):
    return mp.gammainc(a, 0, x, regularized=True)


def reg_gamma_q(a, x):
    return mp.gammainc(a, x, mp.inf, regularized=True)


def reg_beta(a, b, x):
    return mp.betainc(a, b, 0, x, regularized=True)


def student_t_cdf(y, nu, m, s):
    t = (y - m) / s
    tail = reg_beta(nu / 2, mp.mpf(1) / 2, nu / (nu + t * t)) / 2
    return tail if t <= 0 else 1 - tail


def discrete_cdf(pmf, upper_limit):
    """cdf(n, *params) = Σ_{k=0}^{n} pmf(k, *params) with exact log-pmf terms."""
    def cdf(n, *params):
        return mp.fsum(mp.exp(pmf(mp.mpf(k), *params)) for k in range(int(n) + 1))
    return cdf


CDFS = {
    # name: (cdf, ccdf or None, points, differentiable)
    "normal": (lambda y, m, s: mp.ncdf((y - m) / s), lambda y, m, s: mp.ncdf(-(y - m) / s),
               [(0.3, -1.0, 2.0), (-20.0, 0.0, 1.0), (12.0, 1.0, 1.5), (-80.0, 0.0, 1.0)], (1, 1, 1)),
    "std_normal": (lambda y: mp.ncdf(y), lambda y: mp.ncdf(-y), [(0.3,), (-30.0,), (9.0,)], (1,)),
    "cauchy": (lambda y, m, s: mp.mpf(1) / 2 + mp.atan((y - m) / s) / mp.pi, lambda y, m, s: mp.mpf(1) / 2 - mp.atan((y - m) / s) / mp.pi,
               [(0.3, -1.0, 2.0), (-1e6, 0.0, 1.0)], (1, 1, 1)),
    "student_t": (student_t_cdf, lambda y, nu, m, s: student_t_cdf(2 * m - y, nu, m, s),
                  [(0.3, 3.0, -1.0, 2.0), (-10.0, 4.5, 0.0, 1.0), (2.0, 30.0, 0.5, 1.5), (-0.2, 1.0, 0.0, 1.0)], (1, 1, 1, 1)),
    "lognormal": (lambda y, m, s: mp.ncdf((mp.log(y) - m) / s), lambda y, m, s: mp.ncdf(-(mp.log(y) - m) / s),
                  [(0.3, -1.0, 2.0), (100.0, 1.0, 0.5)], (1, 1, 1)),
    "exponential": (lambda y, b: -mp.expm1(-b * y), lambda y, b: mp.exp(-b * y), [(0.3, 2.0), (1e-6, 1.0), (40.0, 1.0)], (1, 1)),
    "gamma": (lambda y, a, b: reg_gamma_p(a, b * y), lambda y, a, b: reg_gamma_q(a, b * y),
              [(0.3, 2.0, 3.0), (100.0, 50.0, 0.4), (1e-3, 0.5, 1.0), (30.0, 3.0, 1.0)], (1, 1, 1)),
    "inv_gamma": (lambda y, a, b: reg_gamma_q(a, b / y), lambda y, a, b: reg_gamma_p(a, b / y),
                  [(0.3, 2.0, 3.0), (10.0, 5.0, 40.0)], (1, 1, 1)),
    "beta": (lambda y, a, b: reg_beta(a, b, y), lambda y, a, b: 1 - reg_beta(a, b, y),
             [(0.3, 2.0, 3.0), (0.9, 0.5, 0.5), (0.02, 20.0, 50.0), (0.6, 100.0, 150.0)], (1, 1, 1)),
    "uniform": (lambda y, a, b: (y - a) / (b - a), lambda y, a, b: (b - y) / (b - a), [(0.3, -1.0, 2.0)], (1, 1, 1)),
    "double_exponential": (lambda y, m, s: mp.exp((y - m) / s) / 2 if y < m else 1 - mp.exp(-(y - m) / s) / 2,
                           lambda y, m, s: 1 - mp.exp((y - m) / s) / 2 if y < m else mp.exp(-(y - m) / s) / 2,
                           [(0.3, -1.0, 2.0), (-3.0, 1.0, 0.5)], (1, 1, 1)),
    "skew_double_exponential": (lambda y, m, s, t: t * mp.exp(-2 * (1 - t) * (m - y) / s) if y < m else 1 - (1 - t) * mp.exp(-2 * t * (y - m) / s),
                                lambda y, m, s, t: 1 - t * mp.exp(-2 * (1 - t) * (m - y) / s) if y < m else (1 - t) * mp.exp(-2 * t * (y - m) / s),
                                [(0.3, 1.0, 2.0, 0.3), (2.5, 1.0, 0.7, 0.8), (-4.0, 0.5, 1.5, 0.05), (30.0, 0.0, 1.0, 0.6)], (1, 1, 1, 1)),
    "logistic": (lambda y, m, s: inv_logit((y - m) / s), lambda y, m, s: inv_logit(-(y - m) / s),
                 [(0.3, -1.0, 2.0), (-30.0, 1.0, 0.5)], (1, 1, 1)),
    "weibull": (lambda y, a, s: -mp.expm1(-(y / s) ** a), lambda y, a, s: mp.exp(-(y / s) ** a), [(0.3, 2.0, 3.0), (5.0, 0.5, 2.0)], (1, 1, 1)),
    "frechet": (lambda y, a, s: mp.exp(-(y / s) ** (-a)), lambda y, a, s: -mp.expm1(-(y / s) ** (-a)), [(0.3, 2.0, 3.0), (5.0, 0.5, 2.0)], (1, 1, 1)),
    "gumbel": (lambda y, m, b: mp.exp(-mp.exp(-(y - m) / b)), lambda y, m, b: -mp.expm1(-mp.exp(-(y - m) / b)),
               [(0.3, -1.0, 2.0), (-3.0, 1.0, 0.5)], (1, 1, 1)),
    "rayleigh": (lambda y, s: -mp.expm1(-y * y / (2 * s * s)), lambda y, s: mp.exp(-y * y / (2 * s * s)), [(0.3, 2.0), (5.0, 1.5)], (1, 1)),
    "pareto": (lambda y, ym, a: 1 - (ym / y) ** a, lambda y, ym, a: (ym / y) ** a, [(3.0, 2.0, 1.5), (100.0, 0.1, 0.3)], (1, 1, 1)),
    "pareto_type_2": (lambda y, m, l, a: 1 - (1 + (y - m) / l) ** (-a), lambda y, m, l, a: (1 + (y - m) / l) ** (-a),
                      [(3.0, 2.0, 1.5, 3.0), (100.0, -1.0, 0.1, 0.3)], (1, 1, 1, 1)),
    "chi_square": (lambda y, nu: reg_gamma_p(nu / 2, y / 2), lambda y, nu: reg_gamma_q(nu / 2, y / 2), [(0.3, 2.0), (100.0, 80.5)], (1, 1)),
    "inv_chi_square": (lambda y, nu: reg_gamma_q(nu / 2, 1 / (2 * y)), lambda y, nu: reg_gamma_p(nu / 2, 1 / (2 * y)), [(0.3, 2.0), (0.02, 30.5)], (1, 1)),
    "scaled_inv_chi_square": (lambda y, nu, s: reg_gamma_q(nu / 2, nu * s * s / (2 * y)), lambda y, nu, s: reg_gamma_p(nu / 2, nu * s * s / (2 * y)),
                              [(0.3, 2.0, 0.7), (4.0, 30.0, 2.5)], (1, 1, 1)),
    "beta_proportion": (lambda y, m, k: reg_beta(m * k, (1 - m) * k, y), lambda y, m, k: 1 - reg_beta(m * k, (1 - m) * k, y),
                        [(0.3, 0.4, 5.0), (0.9, 0.7, 50.0)], (1, 1, 1)),
    "skew_normal": (lambda y, xi, om, al: mp.ncdf((y - xi) / om) - 2 * owens_t((y - xi) / om, al),
                    lambda y, xi, om, al: mp.ncdf(-(y - xi) / om) + 2 * owens_t((y - xi) / om, al),
                    [(0.3, -1.0, 2.0, 1.5), (-1.0, 1.0, 0.5, 0.5), (2.0, 0.0, 1.0, -3.0)], (1, 1, 1, 1)),
    "exp_mod_normal": (lambda y, m, s, l: mp.ncdf((y - m) / s) - mp.exp(-l * (y - m) + l * l * s * s / 2) * mp.ncdf((y - m) / s - l * s),
                       None, [(0.3, -1.0, 2.0, 1.5), (5.0, 1.0, 0.5, 0.3), (-1.0, 0.0, 1.0, 3.0)], (1, 1, 1, 1)),
    "beta_binomial": (discrete_cdf(lambda k, N, a, b: lchoose(N, k) + lbeta(k + a, N - k + b) - lbeta(a, b), None), None,
                      [(3, 10, 2.0, 3.0), (0, 5, 0.3, 0.4), (70, 100, 20.0, 5.0)], (0, 0, 1, 1)),
    "beta_neg_binomial": (discrete_cdf(lambda k, r, a, b: lbeta(k + r, a + b) + mp.loggamma(k + b) - lbeta(r, a) - mp.loggamma(b) - mp.loggamma(k + 1), None), None,
                          [(3, 2.5, 3.0, 1.5), (0, 0.7, 2.0, 4.0), (40, 10.0, 5.0, 20.0), (2, 1.0, 4.0, 0.5)], (0, 1, 1, 1)),
    "discrete_range": (lambda y, lo, hi: (y - lo + 1) / (hi - lo + 1), None, [(3, 1, 6), (-2, -2, 10)], (0, 0, 0)),
    "poisson": (discrete_cdf(lambda k, l: k * mp.log(l) - l - lgamma(k + 1), None), None, [(3, 2.5), (0, 0.1), (150, 140.2), (10, 30.0)], (0, 1)),
    "binomial": (discrete_cdf(lambda k, N, t: lchoose(N, k) + k * mp.log(t) + (N - k) * mp.log1p(-t), None), None,
                 [(3, 10, 0.4), (0, 5, 0.01), (700, 1000, 0.72)], (0, 0, 1)),
    "bernoulli": (discrete_cdf(lambda k, t: mp.log(t) if k else mp.log1p(-t), None), None, [(0, 0.3)], (0, 1)),
    "neg_binomial": (discrete_cdf(lambda k, a, b: lchoose(k + a - 1, k) + a * mp.log(b / (1 + b)) - k * mp.log1p(b), None), None,
                     [(3, 2.5, 0.7), (0, 0.3, 2.0), (40, 10.0, 0.3)], (0, 1, 1)),
    "neg_binomial_2": (discrete_cdf(lambda k, m, p: lchoose(k + p - 1, k) + k * mp.log(m / (m + p)) + p * mp.log(p / (m + p)), None), None,
                       [(3, 2.5, 0.7), (0, 0.3, 2.0), (40, 35.0, 50.0)], (0, 1, 1)),
}


def make_cdf():
    rows = []
    for name, (cdf, ccdf, points, dflags) in CDFS.items():
        if ccdf is None:
            ccdf = (lambda c: (lambda *a: 1 - c(*a)))(cdf)
        for args in points:
            margs = [mp.mpf(a) for a in args]
            # Each log is taken of whichever tail is small, so that neither loses digits to
            # 1 - (nearly 1) at 50 digits: log cdf = log1p(-ccdf) when the cdf is the big one.
            small_lower = cdf(*margs) < mp.mpf(1) / 2
            if small_lower:
                lcdf = lambda *a: mp.log(cdf(*a))
                lccdf = lambda *a: mp.log1p(-cdf(*a))
            else:
                lcdf = lambda *a: mp.log1p(-ccdf(*a))
                lccdf = lambda *a: mp.log(ccdf(*a))
            row = {"name": name, "args": [float(a) for a in args], "differentiable": [bool(d) for d in dflags]}
            row["lcdf"] = f(lcdf(*margs))
            row["lccdf"] = f(lccdf(*margs))
            row["lcdf_grad"] = [f(diff(lcdf, args, i)) if dflags[i] else 0.0 for i in range(len(args))]
            row["lccdf_grad"] = [f(diff(lccdf, args, i)) if dflags[i] else 0.0 for i in range(len(args))]
            rows.append(row)
    return rows


def write(name, rows):
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, name)
    with open(path, "w") as fh:
        json.dump(rows, fh, indent=0)
        fh.write("\n")
    print(f"wrote {len(rows)} rows to {os.path.normpath(path)}")


if __name__ == "__main__":
    which = set(sys.argv[1:]) or {"unary", "binary", "ternary", "lpdf", "cdf"}
    if "unary" in which:
        write("special_unary.json", make_unary())
    if "binary" in which:
        write("special_binary.json", make_binary())
    if "ternary" in which:
        write("special_ternary.json", make_ternary())
    if "lpdf" in which:
        write("dist_lpdf.json", make_lpdf())
    if "cdf" in which:
        write("dist_cdf.json", make_cdf())
