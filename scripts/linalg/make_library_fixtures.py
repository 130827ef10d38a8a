"""Stan's matrix algebra library functions against stanli: log density and gradient.

Writes crates/hazel-graph/tests/fixtures/linalg_library.json: for each small Stan program
below (every function of hazel-graph's lower/linalg.rs on parameters, on data, and mixed), its
data, and stanli's log density and gradient (propto=true, jacobian=true: CmdStan's lp__) at
seeded uniform(-1, 1) unconstrained points. Run with the repository's venv:

    /work/venv/bin/python scripts/linalg/make_library_fixtures.py

The points are seeded, so a rerun reproduces the file exactly.

stanli 0.24 lacks chol2inv, determinant, log_determinant_spd, trace, trace_quad_form,
trace_gen_quad_form, norm1, norm2 and matrix_power. Programs are therefore templates:
`[[hazel || stanli]]` is written `hazel` in the program hazel compiles (`code`) and `stanli` in
the one stanli evaluates (`oracle_code`), the second being the function's definition in terms of
functions stanli has (e.g. `[[trace(A) || sum(diagonal(A))]]`). The data make each definition
exact (`determinant(A) = exp(log_determinant(A))` needs det A > 0: A = X + 4I with |X_ij| < 1 is
diagonally dominant; G = R + 2I is checked below).
"""

import json
import math
import os
import re

import numpy as np
import stanli

TEMPLATE = re.compile(r"\[\[(.*?)\|\|(.*?)\]\]", re.S)


def variant(template, which):
    return TEMPLATE.sub(lambda m: m.group(which).strip(), template)


N_POINTS = 4
SEED = 20261124

PROGRAMS = {}

# General matrices: inverse, determinants, mdivide_left/right and the / and \ operators, with
# parameter/data arguments on either side, and one solve whose two arguments overlap.
PROGRAMS["general"] = (
    """
data {
  int N;
  matrix[N, N] D;
  vector[N] y;
  matrix[2, N] R;
}
parameters {
  matrix[N, N] X;
  vector[N] b;
  matrix[N, 2] C;
}
transformed parameters {
  matrix[N, N] A = X + diag_matrix(rep_vector(4, N));
}
model {
  to_vector(X) ~ normal(0, 1);
  b ~ normal(0, 1);
  to_vector(C) ~ normal(0, 1);
  target += sum(inverse(A));
  target += log_determinant(A);
  target += 0.1 * [[determinant(A) || exp(log_determinant(A))]];
  target += 0.1 * [[determinant(-A) || -exp(log_determinant(A))]];
  y ~ normal(A \\ b, 1);
  y ~ normal(mdivide_left(A, y), 2);
  target += sum(mdivide_left(A, C));
  target += sum(A \\ C);
  target += sum(b' / A);
  target += sum(mdivide_right(b', A));
  target += sum(mdivide_right(R, A));
  target += sum(R / A);
  target += sum(C' / A);
  target += sum(mdivide_left(D, b));
  target += sum(D \\ C);
  target += sum(mdivide_left(A, col(A, 1)) .* b);
  target += sum(mdivide_right(row(A, 2), A) .* b');
  target += sum([[generalized_inverse(C) || inverse(crossprod(C)) * C']])
            + sum([[generalized_inverse(C') || C * inverse(crossprod(C))]])
            + sum([[generalized_inverse(A) || inverse(A)]] .* D);
}
""",
    lambda rng, n: {
        "N": n,
        "D": (rng.normal(size=(n, n)) + 3 * np.eye(n)).tolist(),
        "y": rng.normal(size=n).tolist(),
        "R": rng.normal(size=(2, n)).tolist(),
    },
)

# Symmetric positive-definite and triangular forms: inverse_spd, log_determinant_spd,
# mdivide_left_spd / mdivide_right_spd, chol2inv, mdivide_right_tri_low, quad_form_sym.
PROGRAMS["spd"] = (
    """
data {
  int N;
  vector[N] y;
  matrix[N, 3] Bd;
  matrix[N, N] Sd;
}
parameters {
  matrix[N, N] X;
  vector[N] b;
  row_vector[N] r;
  cholesky_factor_cov[N] L;
  matrix[N, 2] B;
}
transformed parameters {
  matrix[N, N] S = tcrossprod(X) + diag_matrix(rep_vector(1, N));
}
model {
  to_vector(X) ~ normal(0, 1);
  b ~ normal(0, 1);
  r ~ normal(0, 1);
  to_vector(B) ~ normal(0, 1);
  target += sum(inverse_spd(S));
  target += [[log_determinant_spd(S) || log_determinant(S)]];
  y ~ normal(mdivide_left_spd(S, b), 1);
  target += sum(mdivide_left_spd(S, Bd));
  target += sum(mdivide_left_spd(Sd, B));
  target += sum(mdivide_right_spd(r, S));
  target += sum(mdivide_right_spd(B', S));
  target += sum(mdivide_right_spd(r, Sd));
  target += sum([[chol2inv(L) || inverse_spd(multiply_lower_tri_self_transpose(L))]]);
  target += sum(mdivide_right_tri_low(r, L));
  target += sum(mdivide_right_tri_low(Bd', L));
  target += sum(mdivide_right_tri_low(B', L));
  target += sum(quad_form_sym(S, B)) + quad_form_sym(S, b) + sum(quad_form_sym(Sd, B));
  target += [[log_determinant_spd(quad_form_sym(S, B)) || log_determinant(quad_form_sym(S, B))]];
}
""",
    lambda rng, n: {
        "N": n,
        "y": rng.normal(size=n).tolist(),
        "Bd": rng.normal(size=(n, 3)).tolist(),
        "Sd": (lambda m: (m @ m.T + np.eye(n)).tolist())(rng.normal(size=(n, n))),
    },
)

# Traces, diagonals, quadratic forms, norms, matrix powers.
PROGRAMS["forms"] = (
    """
data {
  int N;
  matrix[N, N] D;
  array[N] real z;
}
parameters {
  matrix[N, N] A;
  matrix[N, 2] B;
  vector[N] v;
  matrix[2, 2] E;
  row_vector[N] w;
  array[N] real u;
}
model {
  to_vector(A) ~ normal(0, 1);
  to_vector(B) ~ normal(0, 1);
  v ~ normal(0, 1);
  to_vector(E) ~ normal(0, 1);
  w ~ normal(0, 1);
  u ~ normal(0, 1);
  target += [[trace(A) || sum(diagonal(A))]] + [[trace(B) || sum(diagonal(B))]] + 2 * sum(diagonal(A)) + sum(diagonal(B)) + sum(diagonal(B'));
  target += [[trace(quad_form(A, B)) || sum(diagonal(quad_form(A, B)))]] + quad_form(A, v) + sum(quad_form(D, B));
  target += sum(quad_form_diag(A, v)) + sum(quad_form_diag(D, w));
  target += [[trace_quad_form(A, B) || sum(diagonal(quad_form(A, B)))]] + [[trace_quad_form(A, v) || quad_form(A, v)]]
            + [[trace_quad_form(D, B) || sum(diagonal(quad_form(D, B)))]];
  target += [[trace_gen_quad_form(E, A, B) || sum(diagonal(E * quad_form(A, B)))]]
            + [[trace_gen_quad_form(E, D, B) || sum(diagonal(E * quad_form(D, B)))]];
  target += sum(rows_dot_product(A, D)) + sum(columns_dot_product(A, D)) + sum(rows_dot_self(B))
            + sum(columns_dot_self(B)) + sum(columns_dot_product(v, v)) + sum(rows_dot_product(v, v))
            + sum(rows_dot_product(w, w)) + sum(columns_dot_self(w)) + sum(rows_dot_self(D * A));
  target += [[norm1(v) || sum(abs(v))]] + [[norm2(v) || sqrt(dot_self(v))]] + [[norm1(w) || sum(abs(w))]]
            + [[norm2(w) || sqrt(dot_self(w))]] + [[norm1(u) || sum(abs(to_vector(u)))]]
            + [[norm2(u) || sqrt(dot_self(to_vector(u)))]] * [[norm2(z) || sqrt(dot_self(to_vector(z)))]];
  target += sum([[matrix_power(A, 0) || identity_matrix(N)]]) + sum([[matrix_power(A, 1) || A]])
            + 0.1 * sum([[matrix_power(A, 3) || A * A * A]])
            + 0.01 * sum([[matrix_power(A, 6) || A * A * A * A * A * A]]);
}
""",
    lambda rng, n: {
        "N": n,
        "D": rng.normal(size=(n, n)).tolist(),
        "z": rng.normal(size=n).tolist(),
    },
)

# Symmetric eigendecomposition and the matrix exponential. Eigenvector signs are arbitrary
# (Eigen's depend on its algorithm, hazel makes the largest entry positive), so the program
# reads eigenvectors only through sign-invariant expressions.
PROGRAMS["spectral"] = (
    """
data {
  int N;
  matrix[N, N] W;
  matrix[N, N] Sd;
}
parameters {
  matrix[N, N] X;
  matrix[N, N] M;
}
transformed parameters {
  matrix[N, N] S = X + X';
}
model {
  to_vector(X) ~ normal(0, 1);
  to_vector(M) ~ normal(0, 1);
  target += dot_product(eigenvalues_sym(S), [1, 2, 3]');
  target += sum(square(eigenvectors_sym(S)) .* W);
  target += sum(eigenvectors_sym(S) * diag_matrix(exp(eigenvalues_sym(S))) * eigenvectors_sym(S)' .* W);
  target += sum(eigenvalues_sym(Sd)) + sum(square(eigenvectors_sym(Sd)) .* W);
  target += sum(matrix_exp(M) .* W) + 0.01 * sum(matrix_exp(0.3 * M + S));
  target += sum(matrix_exp(Sd) .* W);
  target += sum([[matrix_exp_multiply(M, W) || matrix_exp(M) * W]])
            + sum([[scale_matrix_exp_multiply(0.7, S, W') || matrix_exp(0.7 * S) * W']]);
  target += dot_product([[eigendecompose_sym(S).2 || eigenvalues_sym(S)]], [3, 1, 2]')
            + sum(square([[eigendecompose_sym(S).1 || eigenvectors_sym(S)]]) .* W');
}
""",
    lambda rng, n: {
        "N": n,
        "W": rng.normal(size=(n, n)).tolist(),
        "Sd": (lambda m: (m + m.T).tolist())(rng.normal(size=(n, n))),
    },
)

# Singular value decomposition (stanli has none of it): singular values against square roots
# of eigenvalues of AᵀA or AAᵀ, and singular vectors through sign-free expressions: V f(Σ) Vᵀ,
# U f(Σ) Uᵀ (square U), the reconstruction U Σ Vᵀ and the polar factor U Vᵀ = Q (QᵀQ)^(-1/2).
PROGRAMS["svd"] = (
    """
data {
  int N;
  matrix[N, N] W;
}
parameters {
  matrix[3, 2] T;
  matrix[2, 3] R;
  matrix[3, 3] Q;
}
model {
  to_vector(T) ~ normal(0, 1);
  to_vector(R) ~ normal(0, 1);
  to_vector(Q) ~ normal(0, 1);
  target += dot_product([[singular_values(T) || sqrt(reverse(eigenvalues_sym(crossprod(T))))]], [1, 0.5]');
  target += dot_product([[singular_values(R) || sqrt(reverse(eigenvalues_sym(tcrossprod(R))))]], [2, -1]');
  target += sum([[singular_values(Q) || sqrt(eigenvalues_sym(crossprod(Q)))]]);
  target += sum([[svd_V(T) * diag_matrix(exp(singular_values(T))) * svd_V(T)'
                 || eigenvectors_sym(crossprod(T)) * diag_matrix(exp(sqrt(eigenvalues_sym(crossprod(T)))))
                    * eigenvectors_sym(crossprod(T))']] .* W[1:2, 1:2]);
  target += sum([[svd_U(R) * diag_matrix(exp(singular_values(R))) * svd_U(R)'
                 || eigenvectors_sym(tcrossprod(R)) * diag_matrix(exp(sqrt(eigenvalues_sym(tcrossprod(R)))))
                    * eigenvectors_sym(tcrossprod(R))']] .* W[1:2, 1:2]);
  target += sum([[svd_U(Q) * diag_matrix(singular_values(Q)) * svd_V(Q)' || Q]] .* W);
  target += sum([[svd_U(Q) * svd_V(Q)'
                 || Q * eigenvectors_sym(crossprod(Q)) * diag_matrix(inv_sqrt(eigenvalues_sym(crossprod(Q))))
                    * eigenvectors_sym(crossprod(Q))']] .* W');
  target += sum([[svd(Q).2 || sqrt(eigenvalues_sym(crossprod(Q)))]]);
}
""",
    lambda rng, n: {"N": n, "W": rng.normal(size=(n, n)).tolist()},
)

# QR decomposition (stanli has none): for a full-rank tall A, R = Lᵀ with L the Cholesky
# factor of AᵀA and Q = A R⁻¹ = (L⁻¹ Aᵀ)ᵀ; for a wide A = [A₁ A₂] the same with A₁, and
# R = Qᵀ A. These are exact because Stan's R has a non-negative diagonal.
PROGRAMS["qr"] = (
    """
data {
  int N;
  matrix[N, N] W;
}
parameters {
  matrix[3, 2] T;
  matrix[2, 3] R;
  matrix[3, 3] S;
}
model {
  to_vector(T) ~ normal(0, 1);
  to_vector(R) ~ normal(0, 1);
  to_vector(S) ~ normal(0, 1);
  target += sum([[qr_thin_R(T) || cholesky_decompose(crossprod(T))']] .* W[1:2, 1:2]);
  target += sum([[qr_thin_Q(T) || mdivide_left_tri_low(cholesky_decompose(crossprod(T)), T')']]
                .* W[1:3, 1:2]);
  target += sum([[qr_R(T) || append_row(cholesky_decompose(crossprod(T))', rep_row_vector(0, 2))]]
                .* W[1:3, 1:2]);
  target += sum([[qr_thin_Q(R) || mdivide_left_tri_low(cholesky_decompose(crossprod(R[:, 1:2])), R[:, 1:2]')']]
                .* W[1:2, 1:2]);
  target += sum([[qr_thin_R(R) || mdivide_left_tri_low(cholesky_decompose(crossprod(R[:, 1:2])), R[:, 1:2]') * R]]
                .* W[1:2, 1:3]);
  target += sum([[qr_Q(R) || mdivide_left_tri_low(cholesky_decompose(crossprod(R[:, 1:2])), R[:, 1:2]')']]
                .* W[2:3, 2:3]);
  target += sum([[qr_R(S) || cholesky_decompose(crossprod(S))']] .* W);
  target += sum([[qr_Q(S) || mdivide_left_tri_low(cholesky_decompose(crossprod(S)), S')']] .* W');
  target += sum([[qr_thin(S).1 || mdivide_left_tri_low(cholesky_decompose(crossprod(S)), S')']]);
  target += sum([[qr(S).2 || cholesky_decompose(crossprod(S))']] .* W);
}
""",
    lambda rng, n: {"N": n, "W": rng.normal(size=(n, n)).tolist()},
)

# Every function on data only (constant-folded by hazel at build time).
PROGRAMS["data_only"] = (
    """
data {
  int N;
  matrix[N, N] G;
  matrix[N, N] X;
  vector[N] y;
  row_vector[N] r;
  matrix[N, 2] B;
  matrix[2, 2] E;
  matrix[2, N] Bpinv;
}
transformed data {
  matrix[N, N] S = tcrossprod(X) + diag_matrix(rep_vector(1, N));
  matrix[N, N] L = cholesky_decompose(S);
  vector[31] c = [sum(inverse(G)), sum(inverse_spd(S)), sum([[chol2inv(L) || inverse_spd(multiply_lower_tri_self_transpose(L))]]),
                  [[determinant(G) || exp(log_determinant(G))]],
                  log_determinant(G), [[log_determinant_spd(S) || log_determinant(S)]], sum(mdivide_left(G, y)),
                  sum(G \\ B), sum(mdivide_right(r, G)), sum(B' / G),
                  sum(mdivide_left_spd(S, y)), sum(mdivide_right_spd(r, S)),
                  sum(mdivide_right_tri_low(r, L)), [[trace(G) || sum(diagonal(G))]], sum(diagonal(G)),
                  sum(quad_form(G, B)), quad_form(G, y), sum(quad_form_sym(S, B)),
                  [[trace_quad_form(G, B) || sum(diagonal(quad_form(G, B)))]],
                  [[trace_gen_quad_form(E, G, B) || sum(diagonal(E * quad_form(G, B)))]],
                  [[norm1(y) || sum(abs(y))]], [[norm2(r) || sqrt(dot_self(r))]],
                  sum([[matrix_power(G, 3) || G * G * G]]), sum(quad_form_diag(G, y)),
                  sum(eigenvalues_sym(S)), sum(square(eigenvectors_sym(S))), sum(matrix_exp(G)),
                  sum([[singular_values(B) || sqrt(eigenvalues_sym(crossprod(B)))]]),
                  sum([[qr_thin_R(B) || cholesky_decompose(crossprod(B))']]),
                  [[sum(generalized_inverse(B)) || sum(Bpinv)]], sum(rows_dot_product(G, X))]';
}
parameters {
  vector[31] theta;
}
model {
  theta ~ normal(c, 1);
}
""",
    lambda rng, n: {
        "N": n,
        "G": (rng.normal(size=(n, n)) + 2 * np.eye(n)).tolist(),
        "X": rng.normal(size=(n, n)).tolist(),
        "y": rng.normal(size=n).tolist(),
        "r": rng.normal(size=n).tolist(),
        "B": rng.normal(size=(n, 2)).tolist(),
        "E": rng.normal(size=(2, 2)).tolist(),
    },
)


def add_pinv(data):
    """numpy's pseudo-inverse of B, the reference for generalized_inverse(B)."""
    data["Bpinv"] = np.linalg.pinv(np.array(data["B"])).tolist()
    return data


PROGRAMS["data_only"] = (PROGRAMS["data_only"][0],
                         (lambda make: lambda rng, n: add_pinv(make(rng, n)))(PROGRAMS["data_only"][1]))


def main():
    out = {
        "generator": "scripts/linalg/make_library_fixtures.py",
        "oracle": "stanli %s log_prob_grad (propto=true, jacobian=true)" % stanli.__version__,
        "programs": [],
    }
    for k, (name, (code, make_data)) in enumerate(PROGRAMS.items()):
        rng = np.random.default_rng(SEED + k)
        data = make_data(rng, 3)
        if "G" in data:
            assert np.linalg.det(np.array(data["G"])) > 0
        hazel_code, oracle_code = variant(code, 1), variant(code, 2)
        for c in (hazel_code, oracle_code):
            assert "[[" not in c and "]]" not in c and "||" not in c, name
        model = stanli.Model(stan_code=oracle_code, data=json.dumps(data))
        dim = model.n_unconstrained
        points = []
        while len(points) < N_POINTS:
            q = rng.uniform(-1, 1, size=dim)
            lp, grad = model.log_prob_grad(q)
            if math.isfinite(lp) and np.all(np.isfinite(grad)):
                points.append(
                    {"q": q.tolist(), "log_density": float(lp), "gradient": [float(g) for g in grad]}
                )
        out["programs"].append(
            {"name": name, "code": hazel_code, "oracle_code": oracle_code, "data": data, "n_unconstrained": dim, "points": points}
        )
        print(name, dim, points[0]["log_density"])
    path = os.path.join(
        os.path.dirname(__file__), "../../crates/hazel-graph/tests/fixtures/linalg_library.json"
    )
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
