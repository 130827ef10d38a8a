//! Linear solves and determinants of square matrices, with the factorisation kept for the
//! adjoint: `mdivide_left`, `mdivide_right` (LU with partial pivoting), their `_spd` forms
//! (Cholesky), `determinant` and `log_determinant`.
//!
//! **Factorisation buffer.** The forward functions write the factorisation of the square
//! argument into `f` ([`factor_len`]`(n)` entries: the `n × n` factor, then the `n` pivot rows
//! stored as `f64`); the adjoints read it from there instead of factorising again. The graph
//! engine keeps `f` in the op's scratch between its forward and backward sweeps.
//!
//! **Adjoints.** For `X = A⁻¹ B`: `B̄ += A⁻ᵀ X̄`, `Ā −= (A⁻ᵀ X̄) Xᵀ`. For `X = B A⁻¹`:
//! `B̄ += X̄ A⁻ᵀ`, `Ā −= Xᵀ B̄`. For `d = det A`: `Ā += ḡ d A⁻ᵀ`; for `log|det A|`: `Ā += ḡ A⁻ᵀ`.
//! The `_spd` forms read only the lower triangle of `A` in the value and return the full
//! (symmetric-pair) gradient, as the rest of this module does.

use super::{
    add_scaled, check_symmetric, cholesky_lower_unchecked, lu_in_place_with, lu_substitute,
    set_identity, solve_lower_in_place, solve_lower_transpose_in_place,
};
use crate::dist::MathError;

/// Length of the factorisation buffer for an `n × n` matrix.
pub fn factor_len(n: usize) -> usize {
    n * n + n
}

/// How the square argument is factorised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Factor {
    /// LU with partial pivoting (general matrices).
    Lu,
    /// Cholesky `L Lᵀ` after Stan's symmetry check (the `_spd` functions).
    Spd,
}

/// LU factorisation with partial pivoting of `a` into `f` (see the module docs). Returns the
/// sign of the row permutation; `None` when a pivot is zero or not finite.
#[inline(always)]
pub fn lu_factor(a: &[f64], n: usize, f: &mut [f64]) -> Option<f64> {
    let (lu, piv) = f[..factor_len(n)].split_at_mut(n * n);
    lu.copy_from_slice(&a[..n * n]);
    lu_in_place_with(lu, n, |k, p| piv[k] = p as f64).ok()
}

/// Solves `A X = B` in place (`B` is `n × m`) from [`lu_factor`]'s buffer.
#[inline(always)]
pub fn lu_solve(f: &[f64], n: usize, b: &mut [f64], m: usize) {
    let (lu, piv) = f[..factor_len(n)].split_at(n * n);
    for c in 0..m {
        let col = &mut b[c * n..(c + 1) * n];
        for (k, &p) in piv.iter().enumerate() {
            col.swap(k, p as usize);
        }
        lu_substitute(lu, n, col);
    }
}

/// Solves `Aᵀ X = B` in place from [`lu_factor`]'s buffer (`P A = L U`, so
/// `Aᵀ = Uᵀ Lᵀ P`).
pub fn lu_solve_transpose(f: &[f64], n: usize, b: &mut [f64], m: usize) {
    let (lu, piv) = f[..factor_len(n)].split_at(n * n);
    for c in 0..m {
        let col = &mut b[c * n..(c + 1) * n];
        // Uᵀ y = b (forward substitution).
        for i in 0..n {
            let mut s = col[i];
            for k in 0..i {
                s -= lu[k + i * n] * col[k];
            }
            col[i] = s / lu[i + i * n];
        }
        // Lᵀ z = y (unit diagonal, back substitution).
        for i in (0..n).rev() {
            let mut s = col[i];
            for k in (i + 1)..n {
                s -= lu[k + i * n] * col[k];
            }
            col[i] = s;
        }
        // x = Pᵀ z: undo the swaps in reverse order.
        for (k, &p) in piv.iter().enumerate().rev() {
            col.swap(k, p as usize);
        }
    }
}

impl Factor {
    /// Factorises the `n × n` matrix `a` into `f`, with Stan's checks and messages for
    /// `function` (`name` is the argument's name in them).
    pub fn factor(
        self,
        function: &str,
        name: &str,
        a: &[f64],
        n: usize,
        f: &mut [f64],
    ) -> Result<(), MathError> {
        match self {
            Factor::Lu => lu_factor(a, n, f)
                .map(|_| ())
                .ok_or_else(|| MathError::new(format!("{function}: {name} is singular"))),
            Factor::Spd => {
                check_symmetric(function, name, a, n)?;
                cholesky_lower_unchecked(a, n, &mut f[..n * n]).map_err(|_| {
                    MathError::new(format!("{function}: {name} is not positive definite"))
                })
            }
        }
    }

    /// Solves `A X = B` in place from the factorisation.
    pub fn solve(self, f: &[f64], n: usize, b: &mut [f64], m: usize) {
        match self {
            Factor::Lu => lu_solve(f, n, b, m),
            Factor::Spd => {
                solve_lower_in_place(f, n, b, m);
                solve_lower_transpose_in_place(f, n, b, m);
            }
        }
    }

    /// Solves `Aᵀ X = B` in place from the factorisation.
    pub fn solve_transpose(self, f: &[f64], n: usize, b: &mut [f64], m: usize) {
        match self {
            Factor::Lu => lu_solve_transpose(f, n, b, m),
            Factor::Spd => self.solve(f, n, b, m),
        }
    }
}

/// `mdivide_left(A, B) = A⁻¹ B` (`kind = Lu`) or `mdivide_left_spd(A, B)` (`kind = Spd`):
/// `A` is `n × n`, `B` and `out` are `n × m`. `f` receives the factorisation.
pub fn mdivide_left(
    kind: Factor,
    a: &[f64],
    n: usize,
    b: &[f64],
    m: usize,
    out: &mut [f64],
    f: &mut [f64],
) -> Result<(), MathError> {
    let function = match kind {
        Factor::Lu => "mdivide_left",
        Factor::Spd => "mdivide_left_spd",
    };
    kind.factor(function, "A", a, n, f)?;
    out[..n * m].copy_from_slice(&b[..n * m]);
    kind.solve(f, n, out, m);
    Ok(())
}

/// Adjoint of [`mdivide_left`] given its result `x` and factorisation `f`:
/// `B̄ += A⁻ᵀ X̄`, `Ā −= (A⁻ᵀ X̄) Xᵀ`. `tmp` needs `n·m` entries.
pub fn mdivide_left_adjoint(
    kind: Factor,
    f: &[f64],
    n: usize,
    x: &[f64],
    m: usize,
    x_adj: &[f64],
    a_adj: Option<&mut [f64]>,
    b_adj: Option<&mut [f64]>,
    tmp: &mut [f64],
) {
    let bbar = &mut tmp[..n * m];
    bbar.copy_from_slice(&x_adj[..n * m]);
    kind.solve_transpose(f, n, bbar, m);
    if let Some(ba) = b_adj {
        add_scaled(ba, bbar, 1.0);
    }
    if let Some(aa) = a_adj {
        for j in 0..n {
            for c in 0..m {
                let xjc = x[j + c * n];
                if xjc == 0.0 {
                    continue;
                }
                let col = &bbar[c * n..(c + 1) * n];
                for i in 0..n {
                    aa[i + j * n] -= col[i] * xjc;
                }
            }
        }
    }
}

/// `mdivide_right(B, A) = B A⁻¹` (`kind = Lu`) or `mdivide_right_spd(B, A)`: `B` and `out`
/// are `m × n`, `A` is `n × n`. `f` receives the factorisation; `tmp` needs `n` entries.
pub fn mdivide_right(
    kind: Factor,
    b: &[f64],
    m: usize,
    a: &[f64],
    n: usize,
    out: &mut [f64],
    f: &mut [f64],
    tmp: &mut [f64],
) -> Result<(), MathError> {
    let function = match kind {
        Factor::Lu => "mdivide_right",
        Factor::Spd => "mdivide_right_spd",
    };
    kind.factor(function, "A", a, n, f)?;
    // X A = B ⇔ Aᵀ Xᵀ = Bᵀ, one row of B at a time.
    let col = &mut tmp[..n];
    for r in 0..m {
        for j in 0..n {
            col[j] = b[r + j * m];
        }
        kind.solve_transpose(f, n, col, 1);
        for j in 0..n {
            out[r + j * m] = col[j];
        }
    }
    Ok(())
}

/// Adjoint of [`mdivide_right`] given its result `x` and factorisation `f`:
/// `B̄ += X̄ A⁻ᵀ`, `Ā −= Xᵀ B̄`. `tmp` needs `m·n + n` entries.
pub fn mdivide_right_adjoint(
    kind: Factor,
    f: &[f64],
    m: usize,
    n: usize,
    x: &[f64],
    x_adj: &[f64],
    a_adj: Option<&mut [f64]>,
    b_adj: Option<&mut [f64]>,
    tmp: &mut [f64],
) {
    let (bbar, col) = tmp[..m * n + n].split_at_mut(m * n);
    // B̄ Aᵀ = X̄ ⇔ A B̄ᵀ = X̄ᵀ: each row of B̄ solves A y = (row of X̄)ᵀ.
    for r in 0..m {
        for j in 0..n {
            col[j] = x_adj[r + j * m];
        }
        kind.solve(f, n, col, 1);
        for j in 0..n {
            bbar[r + j * m] = col[j];
        }
    }
    if let Some(ba) = b_adj {
        add_scaled(ba, bbar, 1.0);
    }
    if let Some(aa) = a_adj {
        // Ā[i, j] −= Σ_r X[r, i] B̄[r, j].
        for j in 0..n {
            let bj = &bbar[j * m..(j + 1) * m];
            for i in 0..n {
                let xi = &x[i * m..(i + 1) * m];
                aa[i + j * n] -= super::dot_product(xi, bj);
            }
        }
    }
}

/// `determinant(A)` by LU with partial pivoting (0 for an exactly singular matrix, as Eigen).
/// `f` receives the factorisation.
pub fn determinant(a: &[f64], n: usize, f: &mut [f64]) -> f64 {
    match lu_factor(a, n, f) {
        Some(sign) => {
            let mut d = sign;
            for i in 0..n {
                d *= f[i + i * n];
            }
            d
        }
        None => {
            if a[..n * n].iter().all(|v| v.is_finite()) {
                0.0
            } else {
                f64::NAN
            }
        }
    }
}

/// `Ā += scale · A⁻ᵀ` from a factorisation `f` of a non-singular `A`; `tmp` needs `n²`.
/// The adjoint of [`determinant`] (`scale = ḡ det A`), of [`log_abs_determinant`]
/// (`scale = ḡ`) and, with `Factor::Spd`, of `log_determinant_spd`.
pub fn add_scaled_inverse_transpose(
    kind: Factor,
    f: &[f64],
    n: usize,
    scale: f64,
    a_adj: &mut [f64],
    tmp: &mut [f64],
) {
    let it = &mut tmp[..n * n];
    set_identity(it, n);
    kind.solve_transpose(f, n, it, n);
    add_scaled(&mut a_adj[..n * n], it, scale);
}

/// `log|det A|` from an LU factorisation into `f`; errors for a singular matrix.
pub fn log_abs_determinant(a: &[f64], n: usize, f: &mut [f64]) -> Result<f64, MathError> {
    lu_factor(a, n, f).ok_or_else(|| MathError::new("log_determinant: matrix is singular"))?;
    Ok((0..n).map(|i| f[i + i * n].abs().ln()).sum())
}

/// Checks that `l` (`n × n`) is lower triangular, with Stan's message for `function`.
pub fn check_lower_triangular(
    function: &str,
    name: &str,
    l: &[f64],
    n: usize,
) -> Result<(), MathError> {
    for j in 0..n {
        for i in 0..j {
            let v = l[i + j * n];
            if v != 0.0 {
                return Err(MathError::new(format!(
                    "{function}: {name} is not lower triangular; {name}[{},{}]={v}",
                    i + 1,
                    j + 1
                )));
            }
        }
    }
    Ok(())
}
