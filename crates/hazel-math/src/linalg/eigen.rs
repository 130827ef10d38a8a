//! Symmetric eigendecomposition (`eigenvalues_sym`, `eigenvectors_sym`) by the cyclic Jacobi
//! method, which is accurate to rounding in every eigenvalue and eigenvector for the small
//! dense matrices Stan programs use, and the matrix exponential (`matrix_exp`) by Padé
//! approximation with scaling and squaring.
//!
//! **Order and signs.** Eigenvalues are ascending (Stan's order) and eigenvector `j` is column
//! `j`. An eigenvector's sign is not determined by the matrix (Eigen's, hence Stan's, is an
//! artefact of its tridiagonal QR iteration); hazel makes the entry of largest magnitude of
//! each eigenvector positive, so functions of the eigenvectors that do not depend on their
//! signs agree with Stan, and the others are deterministic.
//!
//! **Adjoints.** `eigenvalues_sym`: `Ā += V diag(λ̄) Vᵀ`. `eigenvectors_sym`:
//! `Ā += V (F ∘ (Vᵀ V̄)) Vᵀ` with `F_ij = 1 / (λ_j − λ_i)` off the diagonal and 0 on it
//! (infinite for repeated eigenvalues, where the eigenvectors are not differentiable).
//! `matrix_exp`: `Ā` is the upper-right block of `exp([[Aᵀ, Ḡ], [0, Aᵀ]])` (Najfeld & Havel).

use super::{check_symmetric, multiply, set_identity, solve::lu_factor, solve::lu_solve};
use crate::dist::MathError;

/// Sweeps of the cyclic Jacobi method before giving up (convergence is quadratic; a few
/// sweeps suffice at double precision).
const MAX_SWEEPS: usize = 60;

/// Eigenvalues (ascending, into `values`, length n) and orthonormal eigenvectors (columns of
/// `vectors`, `n × n`) of the symmetric `n × n` matrix `a`, after Stan's symmetry check with
/// `function`'s name. `ws` needs `n²` entries.
pub fn eigen_sym(
    function: &str,
    a: &[f64],
    n: usize,
    values: &mut [f64],
    vectors: &mut [f64],
    ws: &mut [f64],
) -> Result<(), MathError> {
    check_symmetric(function, "m", a, n)?;
    if a[..n * n].iter().any(|v| !v.is_finite()) {
        return Err(MathError::new(format!("{function}: m is not finite")));
    }
    let w = &mut ws[..n * n];
    w.copy_from_slice(&a[..n * n]);
    let v = &mut vectors[..n * n];
    set_identity(v, n);
    for _ in 0..MAX_SWEEPS {
        let mut off = 0.0;
        let mut diag = 0.0;
        for j in 0..n {
            diag += w[j + j * n] * w[j + j * n];
            for i in 0..j {
                off += w[i + j * n] * w[i + j * n];
            }
        }
        if !(off > f64::MIN_POSITIVE) || off <= 1e-34 * diag {
            break;
        }
        for p in 0..n {
            for q in (p + 1)..n {
                let apq = w[p + q * n];
                if apq == 0.0 {
                    continue;
                }
                // Rotation J (J_pp = J_qq = c, J_pq = s, J_qp = −s) with (Jᵀ W J)_pq = 0.
                let theta = (w[q + q * n] - w[p + p * n]) / (2.0 * apq);
                let (c, s) = jacobi_rotation(theta);
                rotate_columns(w, n, p, q, c, s);
                for k in 0..n {
                    let (x, y) = (w[p + k * n], w[q + k * n]);
                    w[p + k * n] = c * x - s * y;
                    w[q + k * n] = s * x + c * y;
                }
                w[p + q * n] = 0.0;
                w[q + p * n] = 0.0;
                rotate_columns(v, n, p, q, c, s);
            }
        }
    }
    // Sort ascending (selection sort keeps this allocation-free), then fix signs.
    for j in 0..n {
        values[j] = w[j + j * n];
    }
    for j in 0..n {
        let mut best = j;
        for k in (j + 1)..n {
            if values[k] < values[best] {
                best = k;
            }
        }
        if best != j {
            values.swap(j, best);
            for i in 0..n {
                v.swap(i + j * n, i + best * n);
            }
        }
        let col = &mut v[j * n..(j + 1) * n];
        let mut big = 0;
        for i in 1..n {
            if col[i].abs() > col[big].abs() {
                big = i;
            }
        }
        if col[big] < 0.0 {
            col.iter_mut().for_each(|x| *x = -*x);
        }
    }
    Ok(())
}

/// Adjoint of the eigenvalues: `Ā += V diag(λ̄) Vᵀ`.
pub fn eigenvalues_sym_adjoint(vectors: &[f64], n: usize, values_adj: &[f64], a_adj: &mut [f64]) {
    for j in 0..n {
        for i in 0..n {
            let mut s = 0.0;
            for k in 0..n {
                s += vectors[i + k * n] * values_adj[k] * vectors[j + k * n];
            }
            a_adj[i + j * n] += s;
        }
    }
}

/// Adjoint of the eigenvectors: `Ā += V (F ∘ (Vᵀ V̄)) Vᵀ`. `ws` needs `2n²` entries.
pub fn eigenvectors_sym_adjoint(
    values: &[f64],
    vectors: &[f64],
    n: usize,
    vectors_adj: &[f64],
    a_adj: &mut [f64],
    ws: &mut [f64],
) {
    let (m, t) = ws[..2 * n * n].split_at_mut(n * n);
    // M = F ∘ (Vᵀ V̄).
    for j in 0..n {
        for i in 0..n {
            m[i + j * n] = if i == j {
                0.0
            } else {
                let vtv = super::dot_product(
                    &vectors[i * n..(i + 1) * n],
                    &vectors_adj[j * n..(j + 1) * n],
                );
                vtv / (values[j] - values[i])
            };
        }
    }
    // T = V M; Ā += T Vᵀ.
    multiply(vectors, n, n, m, n, t);
    for j in 0..n {
        for i in 0..n {
            let mut s = 0.0;
            for k in 0..n {
                s += t[i + k * n] * vectors[j + k * n];
            }
            a_adj[i + j * n] += s;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Matrix exponential.
// ---------------------------------------------------------------------------------------------

/// Padé(13) coefficients (Higham 2005).
const PADE13: [f64; 14] = [
    64764752532480000.0,
    32382376266240000.0,
    7771770303897600.0,
    1187353796428800.0,
    129060195264000.0,
    10559470521600.0,
    670442572800.0,
    33522128640.0,
    1323241920.0,
    40840800.0,
    960960.0,
    16380.0,
    182.0,
    1.0,
];

/// `θ₁₃` of Higham's scaling rule: ‖A‖₁ / 2ˢ ≤ θ₁₃.
const THETA13: f64 = 5.371920351148152;

/// Workspace `matrix_exp` needs for an `n × n` matrix.
pub fn matrix_exp_workspace_len(n: usize) -> usize {
    7 * n * n + n
}

/// `matrix_exp(A)` (`n × n`) by scaling and squaring with a degree-13 Padé approximant
/// (Higham 2005, the method Eigen's MatrixFunctions and hence Stan use for larger norms).
/// `ws` needs [`matrix_exp_workspace_len`]`(n)` entries. Errors for non-finite input.
pub fn matrix_exp(a: &[f64], n: usize, out: &mut [f64], ws: &mut [f64]) -> Result<(), MathError> {
    let nn = n * n;
    if a[..nn].iter().any(|v| !v.is_finite()) {
        return Err(MathError::new("matrix_exp: m is not finite"));
    }
    let (x, rest) = ws[..matrix_exp_workspace_len(n)].split_at_mut(nn);
    let (x2, rest) = rest.split_at_mut(nn);
    let (x4, rest) = rest.split_at_mut(nn);
    let (x6, rest) = rest.split_at_mut(nn);
    let (u, rest) = rest.split_at_mut(nn);
    let (vv, rest) = rest.split_at_mut(nn);
    let (f, _) = rest.split_at_mut(nn + n);
    let norm1 = (0..n)
        .map(|j| a[j * n..(j + 1) * n].iter().map(|v| v.abs()).sum::<f64>())
        .fold(0.0, f64::max);
    let s = if norm1 > THETA13 {
        (norm1 / THETA13).log2().ceil().max(0.0) as i32
    } else {
        0
    };
    let scale = 0.5f64.powi(s);
    for (d, v) in x.iter_mut().zip(&a[..nn]) {
        *d = v * scale;
    }
    multiply(x, n, n, x, n, x2);
    multiply(x2, n, n, x2, n, x4);
    multiply(x4, n, n, x2, n, x6);
    let b = &PADE13;
    // U = X [X6 (b13 X6 + b11 X4 + b9 X2) + b7 X6 + b5 X4 + b3 X2 + b1 I]
    // V =    X6 (b12 X6 + b10 X4 + b8 X2) + b6 X6 + b4 X4 + b2 X2 + b0 I
    let powers = [x2 as &[f64], x4, x6];
    let odd = [b[13], b[11], b[9], b[7], b[5], b[3], b[1]];
    pade13_polynomial(&odd, powers, n, &mut out[..nn], u);
    multiply(x, n, n, u, n, out);
    u.copy_from_slice(&out[..nn]);
    let even = [b[12], b[10], b[8], b[6], b[4], b[2], b[0]];
    pade13_polynomial(&even, powers, n, &mut out[..nn], vv);
    // (V − U) R = V + U.
    for k in 0..nn {
        let (p, q) = (vv[k], u[k]);
        x[k] = p - q;
        out[k] = p + q;
    }
    lu_factor(x, n, f).ok_or_else(|| MathError::new("matrix_exp: Padé denominator is singular"))?;
    lu_solve(f, n, out, n);
    for _ in 0..s {
        x.copy_from_slice(&out[..nn]);
        multiply(x, n, n, x, n, out);
    }
    Ok(())
}

/// `X6 (c₀ X6 + c₁ X4 + c₂ X2) + c₃ X6 + c₄ X4 + c₅ X2 + c₆ I` into `dest` (`tmp`, `n²`, is
/// scratch), with `powers = [X2, X4, X6]`: the polynomial in both halves of the degree-13 Padé
/// approximant (U's without its final factor X, with the odd coefficients; V's with the even).
fn pade13_polynomial(
    c: &[f64; 7],
    powers: [&[f64]; 3],
    n: usize,
    tmp: &mut [f64],
    dest: &mut [f64],
) {
    let [x2, x4, x6] = powers;
    for k in 0..n * n {
        tmp[k] = c[0] * x6[k] + c[1] * x4[k] + c[2] * x2[k];
    }
    multiply(x6, n, n, tmp, n, dest);
    for k in 0..n * n {
        dest[k] += c[3] * x6[k] + c[4] * x4[k] + c[5] * x2[k];
    }
    for i in 0..n {
        dest[i + i * n] += c[6];
    }
}

/// Workspace [`matrix_exp_adjoint`] needs for an `n × n` matrix.
pub fn matrix_exp_adjoint_workspace_len(n: usize) -> usize {
    let m = 2 * n;
    2 * m * m + matrix_exp_workspace_len(m)
}

/// Adjoint of [`matrix_exp`]: `Ā +=` the upper-right `n × n` block of
/// `exp([[Aᵀ, Ḡ], [0, Aᵀ]])`. `ws` needs [`matrix_exp_adjoint_workspace_len`]`(n)`.
pub fn matrix_exp_adjoint(
    a: &[f64],
    n: usize,
    out_adj: &[f64],
    a_adj: &mut [f64],
    ws: &mut [f64],
) -> Result<(), MathError> {
    let m = 2 * n;
    let (big, rest) = ws[..matrix_exp_adjoint_workspace_len(n)].split_at_mut(m * m);
    let (e, rest) = rest.split_at_mut(m * m);
    for v in big.iter_mut() {
        *v = 0.0;
    }
    for j in 0..n {
        for i in 0..n {
            let at = a[j + i * n];
            big[i + j * m] = at;
            big[(n + i) + (n + j) * m] = at;
            big[i + (n + j) * m] = out_adj[i + j * n];
        }
    }
    matrix_exp(big, m, e, rest)?;
    for j in 0..n {
        for i in 0..n {
            a_adj[i + j * n] += e[i + (n + j) * m];
        }
    }
    Ok(())
}

/// The Jacobi rotation `(cos, sin)` that zeroes the off-diagonal entry of a symmetric 2 × 2
/// block with `θ = (a_qq − a_pp) / (2 a_pq)`: `t = sign(θ) / (|θ| + √(θ² + 1))` (the smaller
/// root, 0 when θ overflows), `c = 1/√(t² + 1)`, `s = t c`.
pub(super) fn jacobi_rotation(theta: f64) -> (f64, f64) {
    let t = if theta >= 0.0 {
        1.0 / (theta + (theta * theta + 1.0).sqrt())
    } else {
        -1.0 / (-theta + (theta * theta + 1.0).sqrt())
    };
    let t = if theta.is_finite() { t } else { 0.0 };
    let c = 1.0 / (t * t + 1.0).sqrt();
    (c, t * c)
}

/// Columns `p` and `q` of the column-major `a` (`rows` rows) become `c a_p − s a_q` and
/// `s a_p + c a_q`.
pub(super) fn rotate_columns(a: &mut [f64], rows: usize, p: usize, q: usize, c: f64, s: f64) {
    for k in 0..rows {
        let (x, y) = (a[k + p * rows], a[k + q * rows]);
        a[k + p * rows] = c * x - s * y;
        a[k + q * rows] = s * x + c * y;
    }
}
