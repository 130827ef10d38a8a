"""Eigen's (hence Stan's) eigenvalues of 300 seeded random real matrices (sizes 2-6), for
hazel-math's `linalg_complex` test: hazel's values must be the same multiset, and the test
reports how often hazel's order (its complex Schur form's) equals Eigen's (its real Schur
form's, which is Stan's order and is not reproduced in general).

Needs g++ and Eigen's headers (Debian: libeigen3-dev). Writes
crates/hazel-math/tests/fixtures/eigen_real_order.json.
Run: python3 scripts/complex/make_eigen_order_fixture.py
"""
import json
import pathlib
import subprocess
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "crates/hazel-math/tests/fixtures/eigen_real_order.json"
SRC = ROOT / "scripts/complex/eigen_solver.cpp"

rng = np.random.default_rng(5)
mats = []
for _ in range(300):
    n = int(rng.integers(2, 7))
    mats.append((n, rng.normal(size=(n, n))))

with tempfile.TemporaryDirectory() as tmp:
    exe = pathlib.Path(tmp) / "eigen_solver"
    subprocess.run(["g++", "-O2", "-I/usr/include/eigen3", str(SRC), "-o", str(exe)], check=True)
    text = f"{len(mats)}\n" + "\n".join(
        f"{n} " + " ".join(repr(float(x)) for x in a.T.ravel()) for n, a in mats
    )
    lines = subprocess.run([str(exe)], input=text, capture_output=True, text=True, check=True).stdout.split("\n")

cases = []
for (n, a), line in zip(mats, lines):
    v = [float(x) for x in line.split()]
    ev = [[v[2 * k], v[2 * k + 1]] for k in range(n)]
    # sanity: the same multiset as LAPACK's
    lap = sorted(np.linalg.eigvals(a), key=lambda z: (round(z.real, 9), z.imag))
    mine = sorted((complex(*p) for p in ev), key=lambda z: (round(z.real, 9), z.imag))
    assert max(abs(x - y) for x, y in zip(lap, mine)) < 1e-9
    cases.append({"n": n, "a": a.T.ravel().tolist(), "eigen": ev})

OUT.parent.mkdir(parents=True, exist_ok=True)
OUT.write_text(json.dumps({"generator": "scripts/complex/make_eigen_order_fixture.py",
                           "oracle": "Eigen 3.4.0 EigenSolver", "cases": cases}) + "\n")
print(f"wrote {OUT} ({len(cases)} matrices)")
