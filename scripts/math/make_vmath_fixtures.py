#!/usr/bin/env python3
"""Reference values for hazel-math's `vmath` functions (exp, expm1, ln, ln_1p, tanh, log1p_exp,
inv_logit), computed with mpmath at 60 significant digits.

Writes crates/hazel-math/tests/fixtures/vmath.json:
  {function: [[x, hi, frac], ...]}
`x` the argument and `hi` the exact value rounded to nearest (subnormals rounded once, at their
own precision; ±inf beyond the range; NaN where the function is undefined), each a double's 64
bits as 16 hex digits (so no decimal parsing can move them); `frac` = (exact − hi) / ulp, the
exact value's distance from `hi` in ulps of the exact value (|frac| ≤ ½), so a test measures
its error as |(got − hi) / ulp − frac|.

Points per function: the special values (±0, ±inf, NaN, the subnormal and normal extremes), the
thresholds of the algorithms (overflow and underflow bounds, where the argument reduction or
the formula changes, 1 ± ulps for the logarithms), and seeded random arguments: log-uniform in
magnitude over the function's whole domain and uniform over its core range.

Usage: pip install mpmath; python3 scripts/math/make_vmath_fixtures.py
"""

import json
import math
import os
import random
import struct

import mpmath as mp

mp.mp.dps = 60

OUT = os.path.join(
    os.path.dirname(__file__), "..", "..", "crates", "hazel-math", "tests", "fixtures", "vmath.json"
)

INF = math.inf
NAN = math.nan
MIN_SUB = 5e-324
MAX_SUB = 2.225073858507201e-308
MIN_NORMAL = 2.2250738585072014e-308
MAX = 1.7976931348623157e308
LN2 = math.log(2.0)


def bits(x):
    return "%016x" % struct.unpack("<Q", struct.pack("<d", x))[0]


def nearest(v):
    """The double nearest the mpf `v` (ties to even), subnormals rounded once."""
    if v == 0:
        return 0.0
    a = abs(v)
    if a < mp.mpf(2) ** -1022:
        n = int(mp.nint(a * mp.mpf(2) ** 1074))  # mpmath's nint: ties to even
        d = math.ldexp(n, -1074)
    else:
        with mp.workprec(53):
            r = +a  # rounds to 53 bits, to nearest
        if r >= mp.mpf(2) ** 1024:
            d = INF
        else:
            d = float(r)  # exact: r has 53 bits and a normal exponent
    return d if v > 0 else -d


def ulp(v):
    """The spacing of doubles at the (nonzero, finite) mpf v."""
    e = int(mp.floor(mp.log(abs(v), 2)))
    # log2 near a power of two may land one off: correct it.
    if mp.mpf(2) ** e > abs(v):
        e -= 1
    elif mp.mpf(2) ** (e + 1) <= abs(v):
        e += 1
    return mp.mpf(2) ** max(e - 52, -1074)


def reference(fn, x):
    """(hi, frac) of fn at the double x; fn returns an mpf, or a float for ±0, inf, NaN."""
    v = fn(mp.mpf(x)) if x != 0 else ZERO[fn.__name__](x)
    if isinstance(v, float):
        return v, 0.0
    hi = nearest(v)
    if math.isinf(hi) or v == 0:
        return hi, 0.0
    frac = float((v - mp.mpf(hi)) / ulp(v))
    return hi, frac


# The values at ±0, with IEEE's signed zeros (mpmath has no −0).
ZERO = {
    "ref_exp": lambda x: 1.0,
    "ref_expm1": lambda x: x,
    "ref_ln": lambda x: -INF,
    "ref_ln_1p": lambda x: x,
    "ref_tanh": lambda x: x,
    "ref_log1p_exp": lambda x: mp.log(2),
    "ref_inv_logit": lambda x: 0.5,
}


def ref_exp(x):
    return mp.exp(x)


def ref_expm1(x):
    return mp.expm1(x)


def ref_ln(x):
    if x < 0:
        return NAN
    if x == 0:
        return -INF
    return mp.log(x)


def ref_ln_1p(x):
    if x < -1:
        return NAN
    if x == -1:
        return -INF
    return mp.log1p(x)


def ref_tanh(x):
    return mp.tanh(x)


def ref_log1p_exp(x):
    return mp.log1p(mp.exp(x))


def ref_inv_logit(x):
    return 1 / (1 + mp.exp(-x))


def neighbours(x, n=2):
    """x and its n nearest doubles on each side."""
    out = [x]
    lo = hi = x
    for _ in range(n):
        lo = math.nextafter(lo, -INF)
        hi = math.nextafter(hi, INF)
        out += [lo, hi]
    return out


COMMON = [0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0]
TINY = [MIN_SUB, -MIN_SUB, MAX_SUB, -MAX_SUB, MIN_NORMAL, -MIN_NORMAL, 1e-300, -1e-300]
TINY += [2.0**-55, -(2.0**-55), 2.0**-54, -(2.0**-54), 2.0**-30, -(2.0**-30)]
HUGE = [MAX, -MAX, 1e300, -1e300, 2.0**53, 2.0**53 + 2.0]


def log_uniform(rng, lo_exp, hi_exp, signed=True):
    x = 2.0 ** rng.uniform(lo_exp, hi_exp)
    return -x if signed and rng.random() < 0.5 else x


def points(name, rng):
    pts = COMMON + TINY + HUGE
    n_log, n_core = 300, 250
    if name == "exp":
        for t in [709.782712893384, -745.1332191019411, -745.1332191019412, -708.3964185322641]:
            pts += neighbours(t)
        for k in [0.5, 1.5, 2.5, 10.5, 1022.5, -1021.5, -1074.5]:
            pts += neighbours(k * LN2, 1) + neighbours(-k * LN2, 1)
        pts += [log_uniform(rng, -60, math.log2(750)) for _ in range(n_log)]
        pts += [rng.uniform(-1.0, 1.0) for _ in range(n_core)]
    elif name == "expm1":
        for k in [0.5, 1.5, 2.5, 19.5, 20.5, 56.5, 57.5, 1023.5]:
            pts += neighbours(k * LN2, 1) + neighbours(-k * LN2, 1)
        pts += neighbours(709.782712893384) + [-37.0, -38.0, -40.0, -41.0, -0.25, 0.25]
        pts += [log_uniform(rng, -60, math.log2(750)) for _ in range(n_log)]
        pts += [rng.uniform(-2.0, 2.0) for _ in range(n_core)]
    elif name == "ln":
        pts += neighbours(1.0, 4) + neighbours(math.sqrt(2.0), 2) + neighbours(math.sqrt(0.5), 2)
        pts += [2.0**k for k in range(-1074, 1024, 97)]
        pts += [log_uniform(rng, -1074, 1024, signed=False) for _ in range(n_log)]
        pts += [rng.uniform(0.5, 2.0) for _ in range(n_core)]
    elif name == "ln_1p":
        pts += neighbours(-1.0, 3) + [-1.0 + 2.0**-k for k in range(1, 53, 4)]
        pts += neighbours(-0.2928932188134524, 2) + neighbours(0.41421356237309503, 2)
        pts += neighbours(1.0, 2) + [-0.75, -0.5, -0.25, 3.0, 7.0]
        pts += [log_uniform(rng, -1074, 1024, signed=False) for _ in range(n_log // 2)]
        pts += [-(2.0 ** rng.uniform(-1074, 0)) for _ in range(n_log // 2)]
        pts += [rng.uniform(-0.5, 1.0) for _ in range(n_core)]
    elif name == "tanh":
        pts += neighbours(1.0, 2) + neighbours(-1.0, 2) + neighbours(22.0, 1) + [0.55, 19.0, 20.0]
        # Where the reduction of −2|x| changes k (|x| = (j + ½)·ln2/2), and k = −54, where
        # 2ᵏ − 1 stops being exact.
        pts += [p for j in range(4) for p in neighbours((j + 0.5) * math.log(2.0) / 2.0, 2)]
        pts += neighbours(53.5 * math.log(2.0) / 2.0, 2)
        pts += neighbours(2.0**-55, 1) + neighbours(0.125, 1)
        pts += [log_uniform(rng, -60, 5) for _ in range(n_log)]
        pts += [rng.uniform(-3.0, 3.0) for _ in range(n_core)]
        # The reduction's first steps, where the error is largest.
        pts += [rng.uniform(0.05, 0.3) for _ in range(n_core // 2)]
    elif name in ("log1p_exp", "inv_logit"):
        pts += [-745.0, -746.0, -40.0, 36.0, 37.0, 40.0, 710.0, 800.0, -800.0]
        pts += [log_uniform(rng, -60, 11) for _ in range(n_log)]
        pts += [rng.uniform(-20.0, 20.0) for _ in range(n_core)]
        # Where the log's argument changes form (e^−|x| = √2 − 1), where the reduction of
        # −|x| changes k (|x| = (j + ½)·ln2), and a dense draw over the negative side, where
        # inv_logit's quotient e/(1 + e) has its largest error.
        near = -math.log(math.sqrt(2.0) - 1.0)
        pts += neighbours(near, 2) + neighbours(-near, 2)
        pts += [p for j in range(4) for p in neighbours((j + 0.5) * LN2, 1) + neighbours(-(j + 0.5) * LN2, 1)]
        pts += [rng.uniform(-30.0, 0.0) for _ in range(n_core)]
    return pts


FUNCTIONS = {
    "exp": ref_exp,
    "expm1": ref_expm1,
    "ln": ref_ln,
    "ln_1p": ref_ln_1p,
    "tanh": ref_tanh,
    "log1p_exp": ref_log1p_exp,
    "inv_logit": ref_inv_logit,
}


def main():
    out = {}
    for i, (name, fn) in enumerate(FUNCTIONS.items()):
        rng = random.Random(20251127 + i)
        rows = []
        for x in points(name, rng):
            if math.isnan(x):
                hi, frac = NAN, 0.0
            else:
                hi, frac = reference(fn, x)
            rows.append([bits(x), bits(hi), float("%.4g" % frac)])
        out[name] = rows
        print(f"{name}: {len(rows)} points")
    with open(OUT, "w") as fh:
        json.dump(out, fh, separators=(",", ":"))
        fh.write("\n")


if __name__ == "__main__":
    main()
