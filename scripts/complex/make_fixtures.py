"""Fixtures for hazel's complex numbers: numpy's complex arithmetic (C99 Annex G branch cuts,
as C++'s std::complex that Stan uses) on the values a Stan program computes in generated
quantities. stanli has no complex numbers, so numpy is the oracle.

Writes crates/hazel-graph/tests/fixtures/complex.json: the program, its data, and the
expected output columns in CmdStan's naming (`x.real`, `x.imag`, `v.2.real`, ...).

Run: python3 scripts/complex/make_fixtures.py
"""
import json
import pathlib

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "crates/hazel-graph/tests/fixtures/complex.json"

z = 0.7 - 1.3j
w = -0.4 + 0.9j
v = np.array([1.0 + 2.0j, -0.5 + 0.25j, 3.0 - 1.0j, 0.1 + 0.0j])
M = np.array([[1.0 + 1.0j, 2.0 - 0.5j, 0.0 + 3.0j], [-1.0 + 0.0j, 0.5 + 0.5j, 2.0 - 2.0j]])
x = 0.35  # a real

data = {
    "z": [z.real, z.imag],
    "w": [w.real, w.imag],
    "v": [[c.real, c.imag] for c in v],
    "M": [[[c.real, c.imag] for c in row] for row in M],
    "x": x,
}

# (Stan expression, its type in Stan, numpy value)
cases = [
    ("z + w", "complex", z + w),
    ("z - w", "complex", z - w),
    ("z * w", "complex", z * w),
    ("z / w", "complex", z / w),
    ("-z", "complex", -z),
    ("z * x", "complex", z * x),
    ("x / z", "complex", x / z),
    ("z ^ w", "complex", z**w),
    ("pow(z, x)", "complex", z**x),
    ("exp(z)", "complex", np.exp(z)),
    ("log(z)", "complex", np.log(z)),
    ("log10(z)", "complex", np.log10(z)),
    ("sqrt(z)", "complex", np.sqrt(z)),
    ("sin(z)", "complex", np.sin(z)),
    ("cos(z)", "complex", np.cos(z)),
    ("tan(z)", "complex", np.tan(z)),
    ("sinh(z)", "complex", np.sinh(z)),
    ("cosh(z)", "complex", np.cosh(z)),
    ("tanh(z)", "complex", np.tanh(z)),
    ("asin(z)", "complex", np.arcsin(z)),
    ("acos(z)", "complex", np.arccos(z)),
    ("atan(z)", "complex", np.arctan(z)),
    ("asinh(z)", "complex", np.arcsinh(z)),
    ("acosh(z)", "complex", np.arccosh(z)),
    ("atanh(z)", "complex", np.arctanh(z)),
    ("conj(z)", "complex", np.conj(z)),
    ("to_complex(1.5, -2)", "complex", 1.5 - 2j),
    ("polar(2.0, 0.5)", "complex", 2.0 * np.exp(0.5j)),
    ("3.5i", "complex", 3.5j),
    ("abs(z)", "real", abs(z)),
    ("arg(z)", "real", np.angle(z)),
    ("norm(z)", "real", abs(z) ** 2),
    ("get_real(w)", "real", w.real),
    ("get_imag(w)", "real", w.imag),
    ("fft(v)", "complex_vector[4]", np.fft.fft(v)),
    ("inv_fft(v)", "complex_vector[4]", np.fft.ifft(v)),
    ("fft2(M)", "complex_matrix[2, 3]", np.fft.fft2(M)),
    ("inv_fft2(M)", "complex_matrix[2, 3]", np.fft.ifft2(M)),
    ("M * v[1:3]", "complex_vector[2]", M @ v[:3]),
    ("M'", "complex_matrix[3, 2]", M.T),
    ("v .* v", "complex_vector[4]", v * v),
    ("v / v[4]", "complex_vector[4]", v / v[3]),
    ("v ./ reverse(v)", "complex_vector[4]", v / v[::-1]),
    ("z / v", "complex_vector[4]", z / v),
    ("exp(v)", "complex_vector[4]", np.exp(v)),
    ("head(v, 2)", "complex_vector[2]", v[:2]),
    ("reverse(v)", "complex_vector[4]", v[::-1]),
    ("sum(v)", "complex", v.sum()),
    ("prod(v)", "complex", v.prod()),
    ("M[2, 3]", "complex", M[1, 2]),
    ("M[1]", "complex_row_vector[3]", M[0]),
    ("append_row(v, z)", "complex_vector[5]", np.append(v, z)),
    ("get_real(v)", "vector[4]", v.real),
    ("abs(v)", "vector[4]", np.abs(v)),
    ("diag_pre_multiply(v[1:2], M)", "complex_matrix[2, 3]", np.diag(v[:2]) @ M),
]


def columns(name, stan_type, value):
    """CmdStan's column names and values: every index first-fastest, complex as .real/.imag."""
    value = np.asarray(value)
    out = {}
    if value.ndim == 0:
        idx_list = [()]
    else:
        idx_list = [tuple(i) for i in np.ndindex(*value.shape[::-1])]
        idx_list = [i[::-1] for i in idx_list]
    for idx in idx_list:
        base = name + "".join(f".{i + 1}" for i in idx)
        c = complex(value[idx]) if value.ndim else complex(value)
        if stan_type.startswith("complex"):
            out[base + ".real"] = c.real
            out[base + ".imag"] = c.imag
        else:
            out[base] = c.real
    return out


lines = []
expected = {}
for k, (expr, stan_type, value) in enumerate(cases):
    name = f"e{k + 1}"
    lines.append(f"  {stan_type} {name} = {expr};")
    expected.update(columns(name, stan_type, value))

program = (
    "data { complex z; complex w; complex_vector[4] v; complex_matrix[2, 3] M; real x; }\n"
    "generated quantities {\n" + "\n".join(lines) + "\n}\n"
)
OUT.parent.mkdir(parents=True, exist_ok=True)
OUT.write_text(
    json.dumps(
        {"program": program, "data": data, "expected": expected},
        indent=1,
    )
    + "\n"
)
print(f"wrote {OUT} ({len(cases)} expressions, {len(expected)} columns)")
