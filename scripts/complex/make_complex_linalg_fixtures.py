"""Fixtures for hazel's complex linear algebra (dot and cross products of complex containers,
eigen/Schur/SVD decompositions with complex results, `real / matrix`). stanli has no complex
numbers, so numpy (LAPACK) is the oracle.

Values that Stan fixes are compared directly: products (with Stan Math's conjugation rules:
`dot_product` of complex *vectors* is Eigen's `v1.dot(v2)` = sum(conj(v1) * v2), of complex
*arrays* sum(v1 * v2); `dot_self`/`columns_dot_self`/`rows_dot_self` are squared norms;
`columns_dot_product`, `rows_dot_product`, `crossprod`, `tcrossprod` do not conjugate),
ascending Hermitian eigenvalues, descending singular values, eigenvalues of a complex matrix
sorted by increasing modulus (Eigen's ComplexEigenSolver). What Stan does not fix (vector
phases, Schur vectors, the order of a real non-symmetric matrix's eigenvalues, which is that of
Eigen's real Schur form) is checked by the test through invariants, computed in the Stan program
itself: residuals `A V − V Λ`, `U T Uᴴ − A`, `U Σ Vᴴ − M`, unitarity, the lower triangle of T;
the eigenvalue multiset of the real matrix is compared sorted.

Writes crates/hazel-graph/tests/fixtures/complex_linalg.json.
Run: python3 scripts/complex/make_complex_linalg_fixtures.py
"""
import json
import pathlib

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "crates/hazel-graph/tests/fixtures/complex_linalg.json"

rng = np.random.default_rng(20261125)


def cplx(shape):
    return np.round(rng.normal(size=shape) + 1j * rng.normal(size=shape), 3)


u = cplx(3)
w = cplx(3)
M = cplx((3, 2))  # tall complex matrix
N = cplx((3, 2))
C = cplx((3, 3))  # general complex matrix
# A real non-symmetric matrix with a complex pair and a real eigenvalue.
A = np.array([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0], [0.5, 1.5, 2.0]])
H0 = cplx((3, 3))
H = (H0 + H0.conj().T) / 2  # Hermitian
B = np.array([[1.0, 2.0], [4.0, -0.5]])
# A Hermitian matrix with a repeated eigenvalue (2, 2, 5): the embedding's 4-fold cluster.
Q, _ = np.linalg.qr(cplx((3, 3)))
H2 = Q @ np.diag([2.0, 2.0, 5.0]) @ Q.conj().T
H2 = (H2 + H2.conj().T) / 2


def cjson(z):
    z = np.asarray(z)
    if z.ndim == 0:
        return [float(z.real), float(z.imag)]
    return [cjson(x) for x in z]


data = {
    "u": cjson(u),
    "w": cjson(w),
    "M": cjson(M),
    "N": cjson(N),
    "C": cjson(C),
    "A": A.tolist(),
    "H": cjson(H),
    "B": B.tolist(),
    "H2": cjson(H2),
}

ev_c = np.linalg.eigvals(C)
ev_c = ev_c[np.argsort(np.abs(ev_c), kind="stable")]
assert np.min(np.diff(np.abs(ev_c))) > 1e-3, "moduli must be distinct for a fixed order"
ev_a = np.linalg.eigvals(A)
ev_a_sorted = sorted(ev_a, key=lambda z: (round(z.real, 12), z.imag))

# (Stan expression, type, numpy value)
cases = [
    ("dot_product(u, w)", "complex", np.vdot(u, w)),
    ("dot_product(u', w')", "complex", np.vdot(u, w)),
    ("dot_product(u, w')", "complex", np.vdot(u, w)),
    ("dot_product(to_array_1d(u), to_array_1d(w))", "complex", np.sum(u * w)),
    ("dot_self(u)", "complex", np.vdot(u, u)),
    ("dot_self(u')", "complex", np.vdot(u, u)),
    ("columns_dot_product(M, N)", "complex_row_vector[2]", np.sum(M * N, axis=0)),
    ("rows_dot_product(M, N)", "complex_vector[3]", np.sum(M * N, axis=1)),
    ("columns_dot_product(u, w)", "complex_row_vector[1]", [np.sum(u * w)]),
    ("rows_dot_product(u', w')", "complex_vector[1]", [np.sum(u * w)]),
    ("columns_dot_self(M)", "complex_row_vector[2]", np.sum(np.abs(M) ** 2, axis=0)),
    ("rows_dot_self(M)", "complex_vector[3]", np.sum(np.abs(M) ** 2, axis=1)),
    ("tcrossprod(M)", "complex_matrix[3, 3]", M @ M.T),
    ("crossprod(M)", "complex_matrix[2, 2]", M.T @ M),
    ("eigenvalues_sym(H)", "complex_vector[3]", np.linalg.eigvalsh(H)),
    ("singular_values(M)", "vector[2]", np.linalg.svd(M, compute_uv=False)),
    ("singular_values(M')", "vector[2]", np.linalg.svd(M.T, compute_uv=False)),
    ("eigenvalues(C)", "complex_vector[3]", ev_c),
    ("2.5 / B", "matrix[2, 2]", 2.5 / B),
]

# Invariants, computed by the Stan program (each must be ~0).
invariants = [
    # general complex matrix
    "fro(C * eigenvectors(C) - eigenvectors(C) * diag_matrix(eigenvalues(C)))",
    "fro(get_real(columns_dot_self(eigenvectors(C))) - 1)",
    # real non-symmetric matrix
    "fro(A * eigenvectors(A) - eigenvectors(A) * diag_matrix(eigenvalues(A)))",
    "fro(get_real(columns_dot_self(eigenvectors(A))) - 1)",
    # Hermitian
    "fro(H * eigenvectors_sym(H) - eigenvectors_sym(H) * diag_matrix(eigenvalues_sym(H)))",
    "fro(conj(eigenvectors_sym(H))' * eigenvectors_sym(H) - identity_matrix(3))",
    # Hermitian with a repeated eigenvalue
    "fro(H2 * eigenvectors_sym(H2) - eigenvectors_sym(H2) * diag_matrix(eigenvalues_sym(H2)))",
    "fro(conj(eigenvectors_sym(H2))' * eigenvectors_sym(H2) - identity_matrix(3))",
    "fro(get_real(eigenvalues_sym(H2)) - [2, 2, 5]')",
    # complex Schur, complex and real input
    "fro(complex_schur_decompose_u(C) * complex_schur_decompose_t(C) * conj(complex_schur_decompose_u(C))' - C)",
    "fro(conj(complex_schur_decompose_u(C))' * complex_schur_decompose_u(C) - identity_matrix(3))",
    "abs(complex_schur_decompose_t(C)[2, 1]) + abs(complex_schur_decompose_t(C)[3, 1]) + abs(complex_schur_decompose_t(C)[3, 2])",
    "fro(complex_schur_decompose_u(A) * complex_schur_decompose_t(A) * conj(complex_schur_decompose_u(A))' - A)",
    "fro(conj(complex_schur_decompose_u(A))' * complex_schur_decompose_u(A) - identity_matrix(3))",
    "abs(complex_schur_decompose_t(A)[2, 1]) + abs(complex_schur_decompose_t(A)[3, 1]) + abs(complex_schur_decompose_t(A)[3, 2])",
    # complex SVD, tall and wide
    "fro(svd_U(M) * diag_matrix(singular_values(M)) * conj(svd_V(M))' - M)",
    "fro(conj(svd_U(M))' * svd_U(M) - identity_matrix(2))",
    "fro(conj(svd_V(M))' * svd_V(M) - identity_matrix(2))",
    "fro(svd_U(M') * diag_matrix(singular_values(M')) * conj(svd_V(M'))' - M')",
    # tuple forms equal the separate functions
    "fro(eigendecompose(C).1 - eigenvectors(C)) + fro(eigendecompose(C).2 - eigenvalues(C))",
    "fro(eigendecompose(A).1 - eigenvectors(A)) + fro(eigendecompose(A).2 - eigenvalues(A))",
    "fro(eigendecompose_sym(H).1 - eigenvectors_sym(H)) + fro(eigendecompose_sym(H).2 - eigenvalues_sym(H))",
    "fro(complex_schur_decompose(C).1 - complex_schur_decompose_u(C)) + fro(complex_schur_decompose(C).2 - complex_schur_decompose_t(C))",
    "fro(svd(M).1 - svd_U(M)) + fro(svd(M).2 - singular_values(M)) + fro(svd(M).3 - svd_V(M))",
]


def columns(name, stan_type, value):
    value = np.asarray(value)
    out = {}
    idx_list = [()] if value.ndim == 0 else [i[::-1] for i in np.ndindex(*value.shape[::-1])]
    for idx in idx_list:
        base = name + "".join(f".{i + 1}" for i in idx)
        c = complex(value[idx])
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
invariant_names = []
for k, expr in enumerate(invariants):
    name = f"r{k + 1}"
    lines.append(f"  real {name} = {expr};")
    invariant_names.append(name)
lines.append("  complex_vector[3] lam_a = eigenvalues(A);")

program = (
    "functions {\n"
    "  // Frobenius norms (columns_dot_self and dot_self are checked against numpy above)\n"
    "  real fro(complex_matrix X) { return sqrt(get_real(sum(columns_dot_self(X)))); }\n"
    "  real fro(complex_vector x) { return sqrt(get_real(dot_self(x))); }\n"
    "  real fro(vector x) { return sqrt(dot_self(x)); }\n"
    "  real fro(row_vector x) { return sqrt(dot_self(x)); }\n"
    "}\n"
    "data { complex_vector[3] u; complex_vector[3] w; complex_matrix[3, 2] M;\n"
    "       complex_matrix[3, 2] N; complex_matrix[3, 3] C; matrix[3, 3] A;\n"
    "       complex_matrix[3, 3] H; matrix[2, 2] B;\n"
    "       complex_matrix[3, 3] H2; }\n"
    "generated quantities {\n" + "\n".join(lines) + "\n}\n"
)
OUT.parent.mkdir(parents=True, exist_ok=True)
OUT.write_text(
    json.dumps(
        {
            "oracle": "numpy %s (LAPACK)" % np.__version__,
            "program": program,
            "data": data,
            "expected": expected,
            "invariants": invariant_names,
            "invariant_expressions": invariants,
            # the real matrix's eigenvalues sorted by (real part, imaginary part), and in
            # LAPACK's (dgeev's real Schur) order, which Stan's Eigen order usually shares
            "eigenvalues_A_sorted": [[z.real, z.imag] for z in ev_a_sorted],
            "eigenvalues_A_lapack_order": [[z.real, z.imag] for z in ev_a],
        },
        indent=1,
    )
    + "\n"
)
print(f"wrote {OUT} ({len(cases)} expressions, {len(expected)} columns, {len(invariants)} invariants)")
