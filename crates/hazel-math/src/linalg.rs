//! Dense matrix functions with reverse-mode (adjoint) rules.
//!
//! **Layout.** Every matrix is a plain `f64` slice in *column-major* order (Stan's and Eigen's):
//! element `(i, j)` of an `m × n` matrix is at `i + j·m`. Vectors are contiguous. Sizes are
//! passed explicitly and are not checked beyond what indexing needs: the caller (the graph
//! engine) has already checked sizes when the program was compiled; a size mismatch here is a
//! bug and panics on a slice bound. Domain problems in *values* (a matrix that is not positive
//! definite, a probability that is not a simplex) are returned as [`MathError`]s.
//!
//! **Adjoints.** Beside each forward function `f` is `f_adjoint`, which *adds* `∂L/∂input` to
//! the input adjoints given `∂L/∂output` (`*_adj` arguments), the usual reverse-mode rule.
//! Input adjoints are `Option<&mut [f64]>` where an input may be constant (pass `None` to skip
//! the work). Functions take the forward result where the rule can reuse it.
//!
//! **Symmetric inputs.** Functions of a symmetric matrix (`cholesky_decompose`,
//! `multi_normal_lpdf`'s Σ, `inverse_spd`, `log_determinant_spd`, `lkj_corr_lpdf`) read it as
//! symmetric. `cholesky_decompose_adjoint` puts all adjoint on the lower triangle (the entries
//! the factorisation reads); the others return the symmetric gradient. Either way, for a
//! symmetric perturbation `A + h(E_ij + E_ji)` the derivative is `Ā_ij + Ā_ji`, which is all a
//! caller building `A` symmetrically needs.
//!
//! **Workspace.** Functions that need scratch memory take `ws: &mut [f64]` and document its
//! length; none allocates.

// Negated comparisons are deliberate: a NaN must fail every check. Forward/adjoint pairs
// take each matrix with its sizes, which makes long argument lists unavoidable.
#![allow(clippy::neg_cmp_op_on_partial_ord, clippy::too_many_arguments)]

pub mod complex;
pub mod densities;
pub mod eigen;
pub mod hmm;
pub mod qr;
pub mod solve;
pub mod svd;

pub use densities::*;
pub use eigen::*;
pub use qr::*;
pub use solve::*;
pub use svd::*;

use crate::dist::MathError;

/// Stan's tolerance for symmetry and similar checks.
pub(crate) const TOLERANCE: f64 = 1e-8;

// ---------------------------------------------------------------------------------------------
// Cholesky and triangular solves.
// ---------------------------------------------------------------------------------------------

/// Checks that the `n × n` matrix `a` is symmetric to Stan's tolerance (relative to the
/// larger magnitude, as `check_symmetric`).
pub fn check_symmetric(function: &str, name: &str, a: &[f64], n: usize) -> Result<(), MathError> {
    for j in 0..n {
        for i in (j + 1)..n {
            let (x, y) = (a[i + j * n], a[j + i * n]);
            if !((x - y).abs() <= TOLERANCE * x.abs().max(y.abs()).max(1.0)) {
                return Err(MathError::new(format!(
                    "{function}: {name} is not symmetric. {name}[{},{}] = {x}, but {name}[{},{}] = {y}",
                    i + 1,
                    j + 1,
                    j + 1,
                    i + 1
                )));
            }
        }
    }
    Ok(())
}

/// Cholesky factor `L` (lower triangular, upper part zero) of the symmetric positive-definite
/// `n × n` matrix `a`, reading only its lower triangle. Errors (Stan's message) when `a` is not
/// symmetric or not positive definite.
pub fn cholesky_decompose(a: &[f64], n: usize, l: &mut [f64]) -> Result<(), MathError> {
    check_symmetric("cholesky_decompose", "Matrix m", a, n)?;
    cholesky_lower_unchecked(a, n, l)
        .map_err(|_| MathError::new("cholesky_decompose: Matrix m is not positive definite"))
}

/// Cholesky without the symmetry check; `Err(())` when a pivot is not positive.
pub(crate) fn cholesky_lower_unchecked(a: &[f64], n: usize, l: &mut [f64]) -> Result<(), ()> {
    cholesky_lower_kernel::<false, true, true>(a, n, l).map_err(|_| ())
}

/// Cholesky as Stan's `cov_matrix_free` and `corr_matrix_free` have it (Eigen's LLT): like
/// [`cholesky_lower_unchecked`] without the symmetry check, but every term subtracted and an
/// infinite pivot accepted (Eigen fails only a pivot that is not `> 0`), so a `cov_matrix` with
/// an infinite diagonal entry still unconstrains. `Err(())` when a pivot is not positive.
pub(crate) fn cholesky_lower_llt(a: &[f64], n: usize, l: &mut [f64]) -> Result<(), ()> {
    cholesky_lower_kernel::<false, false, false>(a, n, l).map_err(|_| ())
}

/// Lower Cholesky factor of the symmetric positive-definite `n × n` **row-major** matrix `a`
/// (only its lower triangle is read), written into `l` with the strict upper triangle set to
/// zero; `Err` holds the first pivot that is not positive and finite. This is the sampler's
/// (`hazel-nuts`' dense metric): unlike [`cholesky_lower_unchecked`] it subtracts every term,
/// zeros included, which is the arithmetic its draws have always had.
pub fn cholesky_lower_row_major(a: &[f64], n: usize, l: &mut [f64]) -> Result<(), usize> {
    debug_assert_eq!(a.len(), n * n);
    debug_assert_eq!(l.len(), n * n);
    cholesky_lower_kernel::<true, false, true>(a, n, l)
}

/// The one Cholesky factorisation of the workspace (unblocked, left-looking, column by column);
/// entry `(i, j)` of `a` and `l` lies at `i * n + j` when `ROW_MAJOR`, else at `i + j * n`.
///
/// Every entry is computed as `L(i,j) = (A(i,j) − Σ_{k<j} L(i,k) L(j,k)) / L(j,j)`, the terms
/// subtracted one by one in increasing `k`, and `L(j,j) = sqrt(A(j,j) − Σ_{k<j} L(j,k)²)`: the
/// order in which entries are visited does not change a bit of any of them, so this serves both
/// the column-major callers here and the row-major dense metric, whose former row-by-row loop
/// gave the same bits. `SKIP_ZEROS` leaves out the terms with `L(j,k) = 0` (faster for sparse
/// factors); it can change only the sign of an exactly zero entry (`−0 − (−0) = +0`), so the
/// sampler, whose draws predate the skip, does not use it. `FINITE_PIVOTS` fails an infinite
/// pivot as well as one that is not positive (or NaN). The error is the first failing pivot.
// The negated comparison makes a NaN pivot fail.
#[allow(clippy::neg_cmp_op_on_partial_ord)]
fn cholesky_lower_kernel<
    const ROW_MAJOR: bool,
    const SKIP_ZEROS: bool,
    const FINITE_PIVOTS: bool,
>(
    a: &[f64],
    n: usize,
    l: &mut [f64],
) -> Result<(), usize> {
    let at = |i: usize, j: usize| if ROW_MAJOR { i * n + j } else { i + j * n };
    for j in 0..n {
        for i in 0..j {
            l[at(i, j)] = 0.0;
        }
        let mut d = a[at(j, j)];
        for k in 0..j {
            d -= l[at(j, k)] * l[at(j, k)];
        }
        if !(d > 0.0) || (FINITE_PIVOTS && !d.is_finite()) {
            return Err(j);
        }
        let djj = d.sqrt();
        l[at(j, j)] = djj;
        for i in (j + 1)..n {
            l[at(i, j)] = a[at(i, j)];
        }
        for k in 0..j {
            let ljk = l[at(j, k)];
            if !SKIP_ZEROS || ljk != 0.0 {
                for i in (j + 1)..n {
                    l[at(i, j)] -= l[at(i, k)] * ljk;
                }
            }
        }
        for i in (j + 1)..n {
            l[at(i, j)] /= djj;
        }
    }
    Ok(())
}

/// Adjoint of [`cholesky_decompose`] (Murray 2016, unblocked): adds `Ā` to the lower triangle
/// of `a_adj` given `L` and `L̄` (only the lower triangle of `l_adj` is read).
/// `ws` needs `n²` entries.
pub fn cholesky_decompose_adjoint(
    l: &[f64],
    n: usize,
    l_adj: &[f64],
    a_adj: &mut [f64],
    ws: &mut [f64],
) {
    let bar = &mut ws[..n * n];
    for j in 0..n {
        for i in 0..n {
            bar[i + j * n] = if i >= j { l_adj[i + j * n] } else { 0.0 };
        }
    }
    // Reverse of the column-by-column forward algorithm:
    //   L[j,j] = √(A[j,j] − Σ_{k<j} L[j,k]²)
    //   L[i,j] = (A[i,j] − Σ_{k<j} L[i,k] L[j,k]) / L[j,j]      (i > j)
    for j in (0..n).rev() {
        let ljj = l[j + j * n];
        // Off-diagonal entries of column j: t_i = L̄[i,j] / L[j,j] becomes Ā[i,j].
        for i in (j + 1)..n {
            let t = bar[i + j * n] / ljj;
            bar[i + j * n] = t;
            bar[j + j * n] -= t * l[i + j * n];
        }
        // Their contributions to the earlier columns k < j (contiguous in i). Each column's
        // sum `s` is one chain of dependent additions in i; the columns are independent (each
        // reads column j and writes only its own), so four advance side by side, each still
        // adding its terms in order: the same bits, without waiting on one adder at a time.
        let (before, from_j) = bar.split_at_mut(j * n);
        let t = &from_j[j + 1..n];
        let mut k = 0;
        while k + 4 <= j {
            let (c0, rest) = before[k * n..].split_at_mut(n);
            let (c1, rest) = rest.split_at_mut(n);
            let (c2, c3) = rest.split_at_mut(n);
            let c3 = &mut c3[..n];
            let (l0, l1, l2, l3) = (
                &l[k * n..(k + 1) * n],
                &l[(k + 1) * n..(k + 2) * n],
                &l[(k + 2) * n..(k + 3) * n],
                &l[(k + 3) * n..(k + 4) * n],
            );
            let (ljk0, ljk1, ljk2, ljk3) = (l0[j], l1[j], l2[j], l3[j]);
            let (mut s0, mut s1, mut s2, mut s3) = (0.0, 0.0, 0.0, 0.0);
            {
                let (b0, b1, b2, b3) = (
                    &mut c0[j + 1..n],
                    &mut c1[j + 1..n],
                    &mut c2[j + 1..n],
                    &mut c3[j + 1..n],
                );
                let (m0, m1, m2, m3) = (&l0[j + 1..n], &l1[j + 1..n], &l2[j + 1..n], &l3[j + 1..n]);
                for (i, &ti) in t.iter().enumerate() {
                    b0[i] -= ti * ljk0;
                    s0 += ti * m0[i];
                    b1[i] -= ti * ljk1;
                    s1 += ti * m1[i];
                    b2[i] -= ti * ljk2;
                    s2 += ti * m2[i];
                    b3[i] -= ti * ljk3;
                    s3 += ti * m3[i];
                }
            }
            c0[j] -= s0;
            c1[j] -= s1;
            c2[j] -= s2;
            c3[j] -= s3;
            k += 4;
        }
        for k in k..j {
            let ljk = l[j + k * n];
            let col = &mut before[k * n..(k + 1) * n];
            let lk = &l[k * n..(k + 1) * n];
            let mut s = 0.0;
            for (i, &ti) in t.iter().enumerate() {
                col[j + 1 + i] -= ti * ljk;
                s += ti * lk[j + 1 + i];
            }
            col[j] -= s;
        }
        // Diagonal entry.
        let t = bar[j + j * n] / (2.0 * ljj);
        bar[j + j * n] = t;
        for k in 0..j {
            bar[j + k * n] -= 2.0 * t * l[j + k * n];
        }
    }
    for j in 0..n {
        for i in j..n {
            a_adj[i + j * n] += bar[i + j * n];
        }
    }
}

/// Solves `L X = B` in place (`b` holds B on entry, X on exit) for lower-triangular `n × n`
/// `L` and `n × m` `B`. Only the lower triangle of `l` is read.
pub fn solve_lower_in_place(l: &[f64], n: usize, b: &mut [f64], m: usize) {
    for c in 0..m {
        let col = &mut b[c * n..(c + 1) * n];
        for i in 0..n {
            let mut s = col[i];
            for k in 0..i {
                s -= l[i + k * n] * col[k];
            }
            col[i] = s / l[i + i * n];
        }
    }
}

/// Solves `Lᵀ X = B` in place for lower-triangular `L` (`n × n`) and `B` (`n × m`).
pub fn solve_lower_transpose_in_place(l: &[f64], n: usize, b: &mut [f64], m: usize) {
    for c in 0..m {
        let col = &mut b[c * n..(c + 1) * n];
        for i in (0..n).rev() {
            let mut s = col[i];
            for k in (i + 1)..n {
                s -= l[k + i * n] * col[k];
            }
            col[i] = s / l[i + i * n];
        }
    }
}

/// `mdivide_left_tri_low(L, B) = L⁻¹ B`: `L` is `n × n` (lower triangle read), `B` and the
/// result `out` are `n × m` (m = 1 for a vector).
pub fn mdivide_left_tri_low(l: &[f64], n: usize, b: &[f64], m: usize, out: &mut [f64]) {
    out[..n * m].copy_from_slice(&b[..n * m]);
    solve_lower_in_place(l, n, out, m);
}

/// Adjoint of [`mdivide_left_tri_low`] given its result `x` = L⁻¹B:
/// `B̄ += L⁻ᵀ X̄`, `L̄ += −(L⁻ᵀ X̄) Xᵀ` (lower triangle). `ws` needs `n·m` entries.
pub fn mdivide_left_tri_low_adjoint(
    l: &[f64],
    n: usize,
    x: &[f64],
    m: usize,
    x_adj: &[f64],
    l_adj: Option<&mut [f64]>,
    b_adj: Option<&mut [f64]>,
    ws: &mut [f64],
) {
    let bbar = &mut ws[..n * m];
    bbar.copy_from_slice(&x_adj[..n * m]);
    solve_lower_transpose_in_place(l, n, bbar, m);
    if let Some(ba) = b_adj {
        add_scaled(ba, bbar, 1.0);
    }
    if let Some(la) = l_adj {
        for j in 0..n {
            for i in j..n {
                let mut s = 0.0;
                for c in 0..m {
                    s += bbar[i + c * n] * x[j + c * n];
                }
                la[i + j * n] -= s;
            }
        }
    }
}

/// `mdivide_right_tri_low(B, L) = B L⁻¹`: `B` and `out` are `m × n`, `L` is `n × n` (lower
/// triangle read). (`m = 1` for a row vector.)
pub fn mdivide_right_tri_low(b: &[f64], m: usize, l: &[f64], n: usize, out: &mut [f64]) {
    // X L = B ⇔ Lᵀ Xᵀ = Bᵀ: solve row by row, columns of X from last to first.
    out[..m * n].copy_from_slice(&b[..m * n]);
    solve_rows_upper_in_place(out, m, n, |j, k| l[k + j * n]);
}

/// Solves `X Uᵀ = B` in place in `b` (`m × n`): each row `x` solves `U xᵀ = bᵀ` by back
/// substitution, for the upper-triangular `n × n` `U` whose entry `(j, k)` is `u(j, k)`.
pub(crate) fn solve_rows_upper_in_place(
    b: &mut [f64],
    m: usize,
    n: usize,
    u: impl Fn(usize, usize) -> f64,
) {
    for r in 0..m {
        for j in (0..n).rev() {
            let mut s = b[r + j * m];
            for k in (j + 1)..n {
                s -= b[r + k * m] * u(j, k);
            }
            b[r + j * m] = s / u(j, j);
        }
    }
}

/// Adjoint of [`mdivide_right_tri_low`] given its result `x` = B L⁻¹:
/// `B̄ += X̄ L⁻ᵀ`, `L̄ += −Xᵀ B̄` (lower triangle). `ws` needs `m·n` entries.
pub fn mdivide_right_tri_low_adjoint(
    x: &[f64],
    m: usize,
    l: &[f64],
    n: usize,
    x_adj: &[f64],
    b_adj: Option<&mut [f64]>,
    l_adj: Option<&mut [f64]>,
    ws: &mut [f64],
) {
    // B̄ = X̄ L⁻ᵀ ⇔ B̄ Lᵀ = X̄: row r of B̄ solves L b = x̄_r (forward substitution).
    let bbar = &mut ws[..m * n];
    bbar.copy_from_slice(&x_adj[..m * n]);
    for r in 0..m {
        for j in 0..n {
            let mut s = bbar[r + j * m];
            for k in 0..j {
                s -= l[j + k * n] * bbar[r + k * m];
            }
            bbar[r + j * m] = s / l[j + j * n];
        }
    }
    if let Some(ba) = b_adj {
        add_scaled(ba, bbar, 1.0);
    }
    if let Some(la) = l_adj {
        for j in 0..n {
            for i in j..n {
                let mut s = 0.0;
                for r in 0..m {
                    s += x[r + i * m] * bbar[r + j * m];
                }
                la[i + j * n] -= s;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Products.
// ---------------------------------------------------------------------------------------------

/// `out = A B` for `A` (`m × k`) and `B` (`k × n`); a vector is `n = 1`.
pub fn multiply(a: &[f64], m: usize, k: usize, b: &[f64], n: usize, out: &mut [f64]) {
    for v in out[..m * n].iter_mut() {
        *v = 0.0;
    }
    for j in 0..n {
        for p in 0..k {
            let bpj = b[p + j * k];
            if bpj == 0.0 {
                continue;
            }
            let col = &a[p * m..(p + 1) * m];
            let dst = &mut out[j * m..(j + 1) * m];
            for i in 0..m {
                dst[i] += col[i] * bpj;
            }
        }
    }
}

/// Adjoint of [`multiply`]: `Ā += C̄ Bᵀ`, `B̄ += Aᵀ C̄`.
pub fn multiply_adjoint(
    a: &[f64],
    m: usize,
    k: usize,
    b: &[f64],
    n: usize,
    out_adj: &[f64],
    a_adj: Option<&mut [f64]>,
    b_adj: Option<&mut [f64]>,
) {
    if let Some(aa) = a_adj {
        for j in 0..n {
            let cbar = &out_adj[j * m..(j + 1) * m];
            for p in 0..k {
                let bpj = b[p + j * k];
                let dst = &mut aa[p * m..(p + 1) * m];
                for i in 0..m {
                    dst[i] += cbar[i] * bpj;
                }
            }
        }
    }
    if let Some(ba) = b_adj {
        for j in 0..n {
            let cbar = &out_adj[j * m..(j + 1) * m];
            for p in 0..k {
                let col = &a[p * m..(p + 1) * m];
                ba[p + j * k] += dot_product(col, cbar);
            }
        }
    }
}

/// `Σ xᵢ yᵢ`.
pub fn dot_product(x: &[f64], y: &[f64]) -> f64 {
    x.iter().zip(y).map(|(a, b)| a * b).sum()
}

/// Adjoint of [`dot_product`]: `x̄ += g y`, `ȳ += g x`.
pub fn dot_product_adjoint(
    x: &[f64],
    y: &[f64],
    g: f64,
    x_adj: Option<&mut [f64]>,
    y_adj: Option<&mut [f64]>,
) {
    if let Some(xa) = x_adj {
        for (a, v) in xa.iter_mut().zip(y) {
            *a += g * v;
        }
    }
    if let Some(ya) = y_adj {
        for (a, v) in ya.iter_mut().zip(x) {
            *a += g * v;
        }
    }
}

/// `crossprod(A) = Aᵀ A` (`n × n`) for `A` `m × n`.
pub fn crossprod(a: &[f64], m: usize, n: usize, out: &mut [f64]) {
    for j in 0..n {
        for i in j..n {
            let v = dot_product(&a[i * m..(i + 1) * m], &a[j * m..(j + 1) * m]);
            out[i + j * n] = v;
            out[j + i * n] = v;
        }
    }
}

/// Adjoint of [`crossprod`]: `Ā += A (C̄ + C̄ᵀ)`.
pub fn crossprod_adjoint(a: &[f64], m: usize, n: usize, out_adj: &[f64], a_adj: &mut [f64]) {
    for j in 0..n {
        for p in 0..n {
            let s = out_adj[p + j * n] + out_adj[j + p * n];
            if s == 0.0 {
                continue;
            }
            for i in 0..m {
                a_adj[i + j * m] += a[i + p * m] * s;
            }
        }
    }
}

/// `tcrossprod(A) = A Aᵀ` (`m × m`) for `A` `m × n`.
pub fn tcrossprod(a: &[f64], m: usize, n: usize, out: &mut [f64]) {
    for j in 0..m {
        for i in j..m {
            let mut s = 0.0;
            for p in 0..n {
                s += a[i + p * m] * a[j + p * m];
            }
            out[i + j * m] = s;
            out[j + i * m] = s;
        }
    }
}

/// Adjoint of [`tcrossprod`]: `Ā += (C̄ + C̄ᵀ) A`.
pub fn tcrossprod_adjoint(a: &[f64], m: usize, n: usize, out_adj: &[f64], a_adj: &mut [f64]) {
    for p in 0..n {
        for k in 0..m {
            let akp = a[k + p * m];
            if akp == 0.0 {
                continue;
            }
            for i in 0..m {
                a_adj[i + p * m] += (out_adj[i + k * m] + out_adj[k + i * m]) * akp;
            }
        }
    }
}

/// `multiply_lower_tri_self_transpose(L) = L Lᵀ` (`m × m`) for `L` `m × n`, reading only the
/// lower-trapezoidal part of `L` (entries above the diagonal are treated as 0, as Stan does).
pub fn multiply_lower_tri_self_transpose(l: &[f64], m: usize, n: usize, out: &mut [f64]) {
    for j in 0..m {
        for i in j..m {
            // Columns p ≤ min(i, j) contribute to (i, j).
            let mut s = 0.0;
            for p in 0..n.min(j + 1) {
                s += l[i + p * m] * l[j + p * m];
            }
            out[i + j * m] = s;
            out[j + i * m] = s;
        }
    }
}

/// Adjoint of [`multiply_lower_tri_self_transpose`]: `L̄ += tril((C̄ + C̄ᵀ) L)`.
pub fn multiply_lower_tri_self_transpose_adjoint(
    l: &[f64],
    m: usize,
    n: usize,
    out_adj: &[f64],
    l_adj: &mut [f64],
) {
    for p in 0..n {
        for i in p..m {
            let mut s = 0.0;
            for k in p..m {
                s += (out_adj[i + k * m] + out_adj[k + i * m]) * l[k + p * m];
            }
            l_adj[i + p * m] += s;
        }
    }
}

/// `diag_pre_multiply(v, M) = diag(v) M` for `M` `m × n` (v has m entries).
pub fn diag_pre_multiply(v: &[f64], mat: &[f64], m: usize, n: usize, out: &mut [f64]) {
    diag_multiply::<false>(v, mat, m, n, out)
}

/// Adjoint of [`diag_pre_multiply`].
pub fn diag_pre_multiply_adjoint(
    v: &[f64],
    mat: &[f64],
    m: usize,
    n: usize,
    out_adj: &[f64],
    v_adj: Option<&mut [f64]>,
    mat_adj: Option<&mut [f64]>,
) {
    diag_multiply_adjoint::<false>(v, mat, m, n, out_adj, v_adj, mat_adj)
}

/// `diag_post_multiply(M, v) = M diag(v)` for `M` `m × n` (v has n entries).
pub fn diag_post_multiply(mat: &[f64], m: usize, n: usize, v: &[f64], out: &mut [f64]) {
    diag_multiply::<true>(v, mat, m, n, out)
}

/// Adjoint of [`diag_post_multiply`].
pub fn diag_post_multiply_adjoint(
    mat: &[f64],
    m: usize,
    n: usize,
    v: &[f64],
    out_adj: &[f64],
    mat_adj: Option<&mut [f64]>,
    v_adj: Option<&mut [f64]>,
) {
    diag_multiply_adjoint::<true>(v, mat, m, n, out_adj, v_adj, mat_adj)
}

/// `diag(v) M` (`v` indexed by row) or, when `POST`, `M diag(v)` (by column), `M` `m × n`.
fn diag_multiply<const POST: bool>(v: &[f64], mat: &[f64], m: usize, n: usize, out: &mut [f64]) {
    for j in 0..n {
        for i in 0..m {
            out[i + j * m] = v[if POST { j } else { i }] * mat[i + j * m];
        }
    }
}

/// Adjoint of [`diag_multiply`].
fn diag_multiply_adjoint<const POST: bool>(
    v: &[f64],
    mat: &[f64],
    m: usize,
    n: usize,
    out_adj: &[f64],
    mut v_adj: Option<&mut [f64]>,
    mut mat_adj: Option<&mut [f64]>,
) {
    for j in 0..n {
        for i in 0..m {
            let c = out_adj[i + j * m];
            let k = if POST { j } else { i };
            if let Some(va) = v_adj.as_deref_mut() {
                va[k] += c * mat[i + j * m];
            }
            if let Some(ma) = mat_adj.as_deref_mut() {
                ma[i + j * m] += c * v[k];
            }
        }
    }
}

/// `quad_form(A, B) = Bᵀ A B` (`m × m`) for `A` `n × n` and `B` `n × m` (m = 1: the scalar
/// `bᵀ A b`). `ws` needs `n·m` entries (receives `A B`).
pub fn quad_form(a: &[f64], n: usize, b: &[f64], m: usize, out: &mut [f64], ws: &mut [f64]) {
    let ab = &mut ws[..n * m];
    multiply(a, n, n, b, m, ab);
    for j in 0..m {
        for i in 0..m {
            out[i + j * m] = dot_product(&b[i * n..(i + 1) * n], &ab[j * n..(j + 1) * n]);
        }
    }
}

/// Adjoint of [`quad_form`]: `Ā += B C̄ Bᵀ`, `B̄ += A B C̄ᵀ + Aᵀ B C̄`. `ws` needs `2·n·m`.
pub fn quad_form_adjoint(
    a: &[f64],
    n: usize,
    b: &[f64],
    m: usize,
    out_adj: &[f64],
    a_adj: Option<&mut [f64]>,
    b_adj: Option<&mut [f64]>,
    ws: &mut [f64],
) {
    let (t, u) = ws[..2 * n * m].split_at_mut(n * m);
    if let Some(aa) = a_adj {
        // T = B C̄ (n × m); Ā += T Bᵀ.
        multiply(b, n, m, out_adj, m, t);
        for j in 0..n {
            for p in 0..m {
                let bjp = b[j + p * n];
                for i in 0..n {
                    aa[i + j * n] += t[i + p * n] * bjp;
                }
            }
        }
    }
    if let Some(ba) = b_adj {
        // u = B (C̄ᵀ + ... ) handled as two products: A (B C̄ᵀ) + Aᵀ (B C̄).
        for j in 0..m {
            for i in 0..n {
                let mut s1 = 0.0; // (B C̄ᵀ)[i, j]
                let mut s2 = 0.0; // (B C̄)[i, j]
                for p in 0..m {
                    s1 += b[i + p * n] * out_adj[j + p * m];
                    s2 += b[i + p * n] * out_adj[p + j * m];
                }
                t[i + j * n] = s1;
                u[i + j * n] = s2;
            }
        }
        for j in 0..m {
            for i in 0..n {
                let mut s = 0.0;
                for k in 0..n {
                    s += a[i + k * n] * t[k + j * n] + a[k + i * n] * u[k + j * n];
                }
                ba[i + j * n] += s;
            }
        }
    }
}

/// `quad_form_diag(M, v) = diag(v) M diag(v)` for `M` `n × n`.
pub fn quad_form_diag(mat: &[f64], n: usize, v: &[f64], out: &mut [f64]) {
    for j in 0..n {
        for i in 0..n {
            out[i + j * n] = v[i] * mat[i + j * n] * v[j];
        }
    }
}

/// Adjoint of [`quad_form_diag`].
pub fn quad_form_diag_adjoint(
    mat: &[f64],
    n: usize,
    v: &[f64],
    out_adj: &[f64],
    mut mat_adj: Option<&mut [f64]>,
    mut v_adj: Option<&mut [f64]>,
) {
    for j in 0..n {
        for i in 0..n {
            let c = out_adj[i + j * n];
            if let Some(ma) = mat_adj.as_deref_mut() {
                ma[i + j * n] += c * v[i] * v[j];
            }
            if let Some(va) = v_adj.as_deref_mut() {
                let w = c * mat[i + j * n];
                va[i] += w * v[j];
                va[j] += w * v[i];
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Determinants and inverses.
// ---------------------------------------------------------------------------------------------

/// LU factorisation with partial pivoting in place; `perm[i]` is the row swapped into i.
/// Returns the sign of the permutation, or Err for a singular matrix.
fn lu_in_place(a: &mut [f64], n: usize, perm: &mut [usize]) -> Result<f64, ()> {
    lu_in_place_with(a, n, |k, p| perm[k] = p)
}

/// The LU factorisation behind [`lu_in_place`] and [`solve::lu_factor`]: `record(k, p)` is
/// told that row `p` was swapped into row `k` at step `k`.
#[inline]
pub(crate) fn lu_in_place_with(
    a: &mut [f64],
    n: usize,
    mut record: impl FnMut(usize, usize),
) -> Result<f64, ()> {
    let mut sign = 1.0;
    for k in 0..n {
        let mut p = k;
        let mut best = a[k + k * n].abs();
        for i in (k + 1)..n {
            if a[i + k * n].abs() > best {
                best = a[i + k * n].abs();
                p = i;
            }
        }
        record(k, p);
        if !(best > 0.0) || !best.is_finite() {
            return Err(());
        }
        if p != k {
            sign = -sign;
            for j in 0..n {
                a.swap(k + j * n, p + j * n);
            }
        }
        let d = a[k + k * n];
        for i in (k + 1)..n {
            a[i + k * n] /= d;
        }
        for j in (k + 1)..n {
            let akj = a[k + j * n];
            if akj != 0.0 {
                for i in (k + 1)..n {
                    a[i + j * n] -= a[i + k * n] * akj;
                }
            }
        }
    }
    Ok(sign)
}

/// `(A + Aᵀ) / 2` in place for the `n × n` matrix `a`: each off-diagonal pair becomes its mean.
pub fn symmetrise(a: &mut [f64], n: usize) {
    for j in 0..n {
        for i in (j + 1)..n {
            let m = 0.5 * (a[i + j * n] + a[j + i * n]);
            a[i + j * n] = m;
            a[j + i * n] = m;
        }
    }
}

/// Writes the `n × n` identity into `out`.
pub(crate) fn set_identity(out: &mut [f64], n: usize) {
    for j in 0..n {
        for i in 0..n {
            out[i + j * n] = if i == j { 1.0 } else { 0.0 };
        }
    }
}

/// Solves `L U x = b` in place in `col` (`b` already permuted) from the packed factors `lu`
/// (unit lower `L` below the diagonal, `U` on and above it): forward, then back substitution.
#[inline(always)]
pub(crate) fn lu_substitute(lu: &[f64], n: usize, col: &mut [f64]) {
    for i in 0..n {
        let mut s = col[i];
        for k in 0..i {
            s -= lu[i + k * n] * col[k];
        }
        col[i] = s;
    }
    for i in (0..n).rev() {
        let mut s = col[i];
        for k in (i + 1)..n {
            s -= lu[i + k * n] * col[k];
        }
        col[i] = s / lu[i + i * n];
    }
}

/// Inverse from an LU factorisation (overwrites `inv`).
fn lu_inverse(lu: &[f64], n: usize, perm: &[usize], inv: &mut [f64]) {
    set_identity(inv, n);
    for c in 0..n {
        let col = &mut inv[c * n..(c + 1) * n];
        for (k, &p) in perm[..n].iter().enumerate() {
            col.swap(k, p);
        }
        lu_substitute(lu, n, col);
    }
}

/// `log_determinant(A) = log|det A|` for a square `n × n` matrix, by LU with partial pivoting.
/// `ws` needs `n²` entries. Errors for a singular matrix (Stan returns −∞; a model with a
/// singular matrix cannot be differentiated there either).
pub fn log_determinant(
    a: &[f64],
    n: usize,
    ws: &mut [f64],
    perm: &mut [usize],
) -> Result<f64, MathError> {
    let lu = &mut ws[..n * n];
    lu.copy_from_slice(&a[..n * n]);
    lu_in_place(lu, n, perm).map_err(|_| MathError::new("log_determinant: matrix is singular"))?;
    Ok((0..n).map(|i| lu[i + i * n].abs().ln()).sum())
}

/// Adjoint of [`log_determinant`]: `Ā += g A⁻ᵀ`. `ws` needs `2n²`, `perm` n.
pub fn log_determinant_adjoint(
    a: &[f64],
    n: usize,
    g: f64,
    a_adj: &mut [f64],
    ws: &mut [f64],
    perm: &mut [usize],
) -> Result<(), MathError> {
    let (lu, inv) = ws[..2 * n * n].split_at_mut(n * n);
    lu.copy_from_slice(&a[..n * n]);
    lu_in_place(lu, n, perm).map_err(|_| MathError::new("log_determinant: matrix is singular"))?;
    lu_inverse(lu, n, perm, inv);
    for j in 0..n {
        for i in 0..n {
            a_adj[i + j * n] += g * inv[j + i * n];
        }
    }
    Ok(())
}

/// `inverse(A)` for a square matrix by LU. `ws` needs `n²`, `perm` n.
pub fn inverse(
    a: &[f64],
    n: usize,
    out: &mut [f64],
    ws: &mut [f64],
    perm: &mut [usize],
) -> Result<(), MathError> {
    let lu = &mut ws[..n * n];
    lu.copy_from_slice(&a[..n * n]);
    lu_in_place(lu, n, perm).map_err(|_| MathError::new("inverse: matrix is singular"))?;
    lu_inverse(lu, n, perm, out);
    Ok(())
}

/// Adjoint of [`inverse`] given `C = A⁻¹`: `Ā += −Cᵀ C̄ Cᵀ`. `ws` needs `n²`.
pub fn inverse_adjoint(c: &[f64], n: usize, out_adj: &[f64], a_adj: &mut [f64], ws: &mut [f64]) {
    // T = C̄ Cᵀ, then Ā −= Cᵀ T.
    let t = &mut ws[..n * n];
    for j in 0..n {
        for i in 0..n {
            let mut s = 0.0;
            for k in 0..n {
                s += out_adj[i + k * n] * c[j + k * n];
            }
            t[i + j * n] = s;
        }
    }
    for j in 0..n {
        for i in 0..n {
            let mut s = 0.0;
            for k in 0..n {
                s += c[k + i * n] * t[k + j * n];
            }
            a_adj[i + j * n] -= s;
        }
    }
}

/// `inverse_spd(A)` for a symmetric positive-definite matrix, by Cholesky (the result is
/// exactly symmetric). `ws` needs `n²`.
pub fn inverse_spd(a: &[f64], n: usize, out: &mut [f64], ws: &mut [f64]) -> Result<(), MathError> {
    check_symmetric("inverse_spd", "m", a, n)?;
    let l = &mut ws[..n * n];
    cholesky_lower_unchecked(a, n, l)
        .map_err(|_| MathError::new("inverse_spd: m is not positive definite"))?;
    spd_inverse_from_cholesky(l, n, out);
    Ok(())
}

/// `A⁻¹ = L⁻ᵀ L⁻¹` from the Cholesky factor, symmetrised.
pub(crate) fn spd_inverse_from_cholesky(l: &[f64], n: usize, out: &mut [f64]) {
    set_identity(out, n);
    solve_lower_in_place(l, n, out, n);
    solve_lower_transpose_in_place(l, n, out, n);
    symmetrise(out, n);
}

/// `adj += c · m` entry by entry over `m` (an `adj −= c · m` is this with `−c`, bit for bit).
pub(crate) fn add_scaled(adj: &mut [f64], m: &[f64], c: f64) {
    for (a, v) in adj.iter_mut().zip(m) {
        *a += c * v;
    }
}

/// `adj += c · A⁻¹` for the `n × n` `A = L Lᵀ` (`c` times the gradient of `log det A`), with
/// `A⁻¹` left in `inv`.
pub(crate) fn add_scaled_spd_inverse(
    adj: &mut [f64],
    l: &[f64],
    n: usize,
    c: f64,
    inv: &mut [f64],
) {
    spd_inverse_from_cholesky(l, n, inv);
    add_scaled(&mut adj[..n * n], inv, c);
}

/// Adjoint of [`inverse_spd`] given `C = A⁻¹` (symmetric): `Ā += −C C̄ C`. `ws` needs `n²`.
pub fn inverse_spd_adjoint(
    c: &[f64],
    n: usize,
    out_adj: &[f64],
    a_adj: &mut [f64],
    ws: &mut [f64],
) {
    inverse_adjoint(c, n, out_adj, a_adj, ws);
}

/// `log_determinant_spd(A) = 2 Σ log L_ii` for a symmetric positive-definite matrix.
/// `ws` needs `n²` (receives L).
pub fn log_determinant_spd(a: &[f64], n: usize, ws: &mut [f64]) -> Result<f64, MathError> {
    check_symmetric("log_determinant_spd", "m", a, n)?;
    let l = &mut ws[..n * n];
    cholesky_lower_unchecked(a, n, l)
        .map_err(|_| MathError::new("log_determinant_spd: m is not positive definite"))?;
    Ok(2.0 * (0..n).map(|i| l[i + i * n].ln()).sum::<f64>())
}

/// Adjoint of [`log_determinant_spd`]: `Ā += g A⁻¹`. `ws` needs `2n²`.
pub fn log_determinant_spd_adjoint(
    a: &[f64],
    n: usize,
    g: f64,
    a_adj: &mut [f64],
    ws: &mut [f64],
) -> Result<(), MathError> {
    let (l, inv) = ws[..2 * n * n].split_at_mut(n * n);
    cholesky_lower_unchecked(a, n, l)
        .map_err(|_| MathError::new("log_determinant_spd: m is not positive definite"))?;
    add_scaled_spd_inverse(a_adj, l, n, g, inv);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Softmax and friends.
// ---------------------------------------------------------------------------------------------

/// `log Σ exp(xᵢ)` (−∞ for an empty vector).
pub fn log_sum_exp(x: &[f64]) -> f64 {
    crate::special::log_sum_exp(x)
}

/// Adjoint of [`log_sum_exp`] given its value: `x̄ += g softmax(x)`.
pub fn log_sum_exp_adjoint(x: &[f64], value: f64, g: f64, x_adj: &mut [f64]) {
    if !value.is_finite() {
        return;
    }
    for (a, v) in x_adj.iter_mut().zip(x) {
        *a += g * (v - value).exp();
    }
}

/// `softmax(x)`.
pub fn softmax(x: &[f64], out: &mut [f64]) {
    let lse = log_sum_exp(x);
    for (o, v) in out.iter_mut().zip(x) {
        *o = (v - lse).exp();
    }
}

/// Adjoint of [`softmax`] given `s = softmax(x)`: `x̄ += s ⊙ (s̄ − s·s̄)`.
pub fn softmax_adjoint(s: &[f64], out_adj: &[f64], x_adj: &mut [f64]) {
    let dot = dot_product(s, out_adj);
    for i in 0..s.len() {
        x_adj[i] += s[i] * (out_adj[i] - dot);
    }
}

/// `log_softmax(x) = x − log_sum_exp(x)`.
pub fn log_softmax(x: &[f64], out: &mut [f64]) {
    let lse = log_sum_exp(x);
    for (o, v) in out.iter_mut().zip(x) {
        *o = v - lse;
    }
}

/// Adjoint of [`log_softmax`] given its result `y`: `x̄ += ȳ − softmax(x) Σ ȳ`.
pub fn log_softmax_adjoint(y: &[f64], out_adj: &[f64], x_adj: &mut [f64]) {
    let total: f64 = out_adj.iter().sum();
    for i in 0..y.len() {
        x_adj[i] += out_adj[i] - y[i].exp() * total;
    }
}

// ---------------------------------------------------------------------------------------------
// Gaussian-process covariance.
// ---------------------------------------------------------------------------------------------

fn squared_distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

fn check_gp_args(function: &str, alpha: f64, rho: f64) -> Result<(), MathError> {
    if !(alpha > 0.0) || !alpha.is_finite() {
        return Err(MathError::new(format!(
            "{function}: magnitude is {alpha}, but must be positive finite!"
        )));
    }
    if !(rho > 0.0) || !rho.is_finite() {
        return Err(MathError::new(format!(
            "{function}: length scale is {rho}, but must be positive finite!"
        )));
    }
    Ok(())
}

/// `gp_exp_quad_cov(x, alpha, rho)`: `K_ij = α² exp(−‖xᵢ − xⱼ‖² / (2ρ²))`, `n × n`.
/// `x` holds n points of dimension d, each point contiguous (`x[i·d .. (i+1)·d]`; d = 1 for
/// `array[] real`).
pub fn gp_exp_quad_cov(
    x: &[f64],
    n: usize,
    d: usize,
    alpha: f64,
    rho: f64,
    out: &mut [f64],
) -> Result<(), MathError> {
    check_gp_args("gp_exp_quad_cov", alpha, rho)?;
    if let Some(i) = x[..n * d].iter().position(|v| v.is_nan()) {
        return Err(MathError::new(format!(
            "gp_exp_quad_cov: x[{}] is nan",
            i / d.max(1) + 1
        )));
    }
    let a2 = alpha * alpha;
    let inv = -0.5 / (rho * rho);
    for j in 0..n {
        out[j + j * n] = a2;
        for i in (j + 1)..n {
            let v =
                a2 * (inv * squared_distance(&x[i * d..(i + 1) * d], &x[j * d..(j + 1) * d])).exp();
            out[i + j * n] = v;
            out[j + i * n] = v;
        }
    }
    Ok(())
}

/// Adjoint of [`gp_exp_quad_cov`] given its result `k`: adds to `alpha_adj`, `rho_adj` and
/// (optionally) `x_adj`.
#[allow(clippy::too_many_arguments)]
pub fn gp_exp_quad_cov_adjoint(
    x: &[f64],
    n: usize,
    d: usize,
    alpha: f64,
    rho: f64,
    k: &[f64],
    out_adj: &[f64],
    alpha_adj: Option<&mut f64>,
    rho_adj: Option<&mut f64>,
    mut x_adj: Option<&mut [f64]>,
) {
    let mut ga = 0.0;
    let mut gr = 0.0;
    let inv_rho2 = 1.0 / (rho * rho);
    for j in 0..n {
        ga += out_adj[j + j * n] * k[j + j * n];
        for i in (j + 1)..n {
            // Both (i, j) and (j, i) hold the same value.
            let w = (out_adj[i + j * n] + out_adj[j + i * n]) * k[i + j * n];
            if w == 0.0 {
                continue;
            }
            ga += w;
            let (xi, xj) = (&x[i * d..(i + 1) * d], &x[j * d..(j + 1) * d]);
            gr += w * squared_distance(xi, xj);
            if let Some(xa) = x_adj.as_deref_mut() {
                for c in 0..d {
                    let g = -w * (xi[c] - xj[c]) * inv_rho2;
                    xa[i * d + c] += g;
                    xa[j * d + c] -= g;
                }
            }
        }
    }
    if let Some(a) = alpha_adj {
        *a += ga * 2.0 / alpha;
    }
    if let Some(r) = rho_adj {
        *r += gr * inv_rho2 / rho;
    }
}

/// `gp_exp_quad_cov(x1, x2, alpha, rho)`: the `n1 × n2` cross-covariance.
#[allow(clippy::too_many_arguments)]
pub fn gp_exp_quad_cov_cross(
    x1: &[f64],
    n1: usize,
    x2: &[f64],
    n2: usize,
    d: usize,
    alpha: f64,
    rho: f64,
    out: &mut [f64],
) -> Result<(), MathError> {
    check_gp_args("gp_exp_quad_cov", alpha, rho)?;
    let a2 = alpha * alpha;
    let inv = -0.5 / (rho * rho);
    for j in 0..n2 {
        for i in 0..n1 {
            out[i + j * n1] = a2
                * (inv * squared_distance(&x1[i * d..(i + 1) * d], &x2[j * d..(j + 1) * d])).exp();
        }
    }
    Ok(())
}

/// Adjoint of [`gp_exp_quad_cov_cross`] given its result `k`.
#[allow(clippy::too_many_arguments)]
pub fn gp_exp_quad_cov_cross_adjoint(
    x1: &[f64],
    n1: usize,
    x2: &[f64],
    n2: usize,
    d: usize,
    alpha: f64,
    rho: f64,
    k: &[f64],
    out_adj: &[f64],
    alpha_adj: Option<&mut f64>,
    rho_adj: Option<&mut f64>,
    mut x1_adj: Option<&mut [f64]>,
    mut x2_adj: Option<&mut [f64]>,
) {
    let mut ga = 0.0;
    let mut gr = 0.0;
    let inv_rho2 = 1.0 / (rho * rho);
    for j in 0..n2 {
        for i in 0..n1 {
            let w = out_adj[i + j * n1] * k[i + j * n1];
            if w == 0.0 {
                continue;
            }
            ga += w;
            let (xi, xj) = (&x1[i * d..(i + 1) * d], &x2[j * d..(j + 1) * d]);
            gr += w * squared_distance(xi, xj);
            for c in 0..d {
                let g = -w * (xi[c] - xj[c]) * inv_rho2;
                if let Some(a) = x1_adj.as_deref_mut() {
                    a[i * d + c] += g;
                }
                if let Some(a) = x2_adj.as_deref_mut() {
                    a[j * d + c] -= g;
                }
            }
        }
    }
    if let Some(a) = alpha_adj {
        *a += ga * 2.0 / alpha;
    }
    if let Some(r) = rho_adj {
        *r += gr * inv_rho2 / rho;
    }
}
