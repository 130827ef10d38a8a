"""Reference values for hazel-math's linalg::{solve, eigen, svd, qr} from numpy 2 / scipy 1.17
(LAPACK), written to crates/hazel-math/tests/fixtures/linalg_decompositions.json:

- determinant, log|det| and the solves A⁻¹ B, B A⁻¹ of general matrices;
- eigenvalues and eigenvectors of symmetric matrices (numpy.linalg.eigh), each eigenvector
  with its largest-magnitude entry made positive (hazel's convention);
- thin SVD (numpy.linalg.svd), U's columns normalised the same way (V's follow);
- thin QR (numpy.linalg.qr) with R's diagonal made non-negative (Stan's convention);
- matrix_exp (scipy.linalg.expm), including norms that need scaling and squaring.

All matrices are column-major lists. Usage: /work/venv/bin/python scripts/linalg/make_math_fixtures.py
"""

import json
import os

import numpy as np
import scipy.linalg

rng = np.random.default_rng(20261124)


def cm(m):
    return [float(v) for v in np.asarray(m).flatten(order="F")]


def fix_columns(u, *others):
    """Makes the largest-magnitude entry of each column of u positive, flipping the matching
    columns of the other matrices."""
    u = u.copy()
    others = [o.copy() for o in others]
    for j in range(u.shape[1]):
        i = int(np.argmax(np.abs(u[:, j])))
        if u[i, j] < 0:
            u[:, j] *= -1
            for o in others:
                o[:, j] *= -1
    return (u, *others)


out = {"generator": "scripts/linalg/make_math_fixtures.py", "general": [], "symmetric": [],
       "svd": [], "qr": [], "expm": []}

for n in [1, 2, 4, 7]:
    a = rng.normal(size=(n, n)) + 0.5 * np.eye(n)
    b = rng.normal(size=(n, 3))
    bt = rng.normal(size=(3, n))
    sign, logabs = np.linalg.slogdet(a)
    out["general"].append({
        "n": n, "a": cm(a), "b": cm(b), "bt": cm(bt),
        "det": float(np.linalg.det(a)), "log_abs_det": float(logabs),
        "left": cm(np.linalg.solve(a, b)), "right": cm(np.linalg.solve(a.T, bt.T).T),
    })

for n in [1, 3, 6]:
    x = rng.normal(size=(n, n))
    s = x + x.T
    w, v = np.linalg.eigh(s)
    (v,) = fix_columns(v)
    out["symmetric"].append({"n": n, "a": cm(s), "values": [float(t) for t in w], "vectors": cm(v)})

for m, n in [(4, 2), (2, 4), (5, 5)]:
    a = rng.normal(size=(m, n))
    u, sv, vt = np.linalg.svd(a, full_matrices=False)
    u, v = fix_columns(u, vt.T)
    out["svd"].append({"m": m, "n": n, "a": cm(a), "sigma": [float(t) for t in sv],
                       "u": cm(u), "v": cm(v)})
    q, r = np.linalg.qr(a, mode="reduced")
    d = np.sign(np.diag(r))
    d[d == 0] = 1
    out["qr"].append({"m": m, "n": n, "a": cm(a), "q": cm(q * d), "r": cm(r * d[:, None])})

for n, scale in [(1, 1.0), (3, 0.5), (4, 3.0), (6, 10.0)]:
    a = scale * rng.normal(size=(n, n))
    out["expm"].append({"n": n, "a": cm(a), "expm": cm(scipy.linalg.expm(a))})

path = os.path.join(os.path.dirname(__file__),
                    "../../crates/hazel-math/tests/fixtures/linalg_decompositions.json")
with open(path, "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
