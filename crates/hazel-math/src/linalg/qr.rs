//! QR decomposition (`qr_thin_Q`, `qr_thin_R`, `qr_Q`, `qr_R`) by Householder reflections.
//!
//! For `A` `m × n` and `k = min(m, n)`, the thin factors are `Q` (`m × k`, orthonormal
//! columns) and `R` (`k × n`, upper triangular); the full ones `Q` (`m × m`) and `R`
//! (`m × n`, zero below row k). As Stan does, row `i < k` of `R` (and column `i` of `Q`) is
//! negated where `R_ii < 0`, so `R` has a non-negative diagonal and the thin factors of a
//! full-rank matrix are unique.
//!
//! **Adjoint** of the thin factors (Seeger et al. 2017; Liao et al. 2019 for `m < n`), with
//! `copyltu(M) = tril(M) + tril(M, −1)ᵀ`: for `m ≥ n`,
//! `Ā += (Q̄ + Q copyltu(R R̄ᵀ − Q̄ᵀ Q)) R⁻ᵀ`; for `m < n`, `A = [A₁ A₂]`, `R = [R₁ R₂]`:
//! `Ā₂ += Q R̄₂` and `Ā₁` is the square rule with `Q̄ + A₂ R̄₂ᵀ` in place of `Q̄`.

use super::solve_rows_upper_in_place;
use crate::dist::MathError;

/// Workspace [`qr`] needs for an `m × n` matrix.
pub fn qr_workspace_len(m: usize, n: usize) -> usize {
    let k = m.min(n);
    m * n + m * k + k
}

/// Workspace [`qr_thin_adjoint`] needs for an `m × n` matrix.
pub fn qr_thin_adjoint_workspace_len(m: usize, n: usize) -> usize {
    let k = m.min(n);
    k * k + 2 * m * k
}

/// Applies the reflection `I − τ v vᵀ` (`v` zero above row `j`) to the columns `cols` of the
/// column-major `a` (`m` rows): each column `x` becomes `x − τ (vᵀx) v`.
fn reflect_columns(
    v: &[f64],
    tau: f64,
    j: usize,
    a: &mut [f64],
    m: usize,
    cols: std::ops::Range<usize>,
) {
    for c in cols {
        let mut s = 0.0;
        for i in j..m {
            s += v[i] * a[i + c * m];
        }
        s *= tau;
        for i in j..m {
            a[i + c * m] -= s * v[i];
        }
    }
}

/// Householder QR of the `m × n` matrix `a`: `q` receives `m × qcols` (`qcols` = k for the thin
/// factor, m for the full one), `r` receives `rrows × n` (`rrows` = k or m). Errors (naming
/// `function`) for non-finite input. `ws` needs [`qr_workspace_len`]`(m, n)`.
pub fn qr(
    function: &str,
    a: &[f64],
    m: usize,
    n: usize,
    q: &mut [f64],
    qcols: usize,
    r: &mut [f64],
    rrows: usize,
    ws: &mut [f64],
) -> Result<(), MathError> {
    if a[..m * n].iter().any(|x| !x.is_finite()) {
        return Err(MathError::new(format!("{function}: m is not finite")));
    }
    let k = m.min(n);
    let (w, rest) = ws[..qr_workspace_len(m, n)].split_at_mut(m * n);
    let (vs, tau) = rest.split_at_mut(m * k);
    w.copy_from_slice(&a[..m * n]);
    for j in 0..k {
        // Reflector for w[j.., j]: H = I − τ v vᵀ with v[j] = 1 form avoided; v stored fully.
        let v = &mut vs[j * m..(j + 1) * m];
        let mut norm2 = 0.0;
        for i in j..m {
            norm2 += w[i + j * m] * w[i + j * m];
        }
        let norm = norm2.sqrt();
        if norm == 0.0 {
            tau[j] = 0.0;
            v.iter_mut().for_each(|x| *x = 0.0);
            continue;
        }
        let x0 = w[j + j * m];
        let alpha = if x0 >= 0.0 { -norm } else { norm };
        for i in 0..m {
            v[i] = if i < j { 0.0 } else { w[i + j * m] };
        }
        v[j] -= alpha;
        let vtv: f64 = v[j..].iter().map(|x| x * x).sum();
        tau[j] = if vtv > 0.0 { 2.0 / vtv } else { 0.0 };
        reflect_columns(v, tau[j], j, w, m, j..n);
    }
    // R: the upper triangle of w (rows beyond k are zero).
    for c in 0..n {
        for i in 0..rrows {
            r[i + c * rrows] = if i <= c && i < k { w[i + c * m] } else { 0.0 };
        }
    }
    // Q = H₀ H₁ ⋯ H_{k−1} applied to the first qcols columns of I.
    for c in 0..qcols {
        for i in 0..m {
            q[i + c * m] = if i == c { 1.0 } else { 0.0 };
        }
    }
    for j in (0..k).rev() {
        let v = &vs[j * m..(j + 1) * m];
        reflect_columns(v, tau[j], j, q, m, 0..qcols);
    }
    for i in 0..k {
        if r[i + i * rrows] < 0.0 {
            for c in 0..n {
                r[i + c * rrows] = -r[i + c * rrows];
            }
            for x in q[i * m..(i + 1) * m].iter_mut() {
                *x = -*x;
            }
        }
    }
    Ok(())
}

/// Adjoint of the thin factors of [`qr`] (`q` is `m × k`, `r` is `k × n`): adds to `a_adj`
/// the contributions of whichever of `Q̄`, `R̄` are given. `a` is the input (needed for
/// `m < n`). `ws` needs [`qr_thin_adjoint_workspace_len`]`(m, n)`.
pub fn qr_thin_adjoint(
    a: &[f64],
    q: &[f64],
    r: &[f64],
    m: usize,
    n: usize,
    q_adj: Option<&[f64]>,
    r_adj: Option<&[f64]>,
    a_adj: &mut [f64],
    ws: &mut [f64],
) {
    let k = m.min(n);
    let (mm, rest) = ws[..qr_thin_adjoint_workspace_len(m, n)].split_at_mut(k * k);
    let (qb, b) = rest.split_at_mut(m * k);
    // Q̄' = Q̄ (+ A₂ R̄₂ᵀ when m < n); Ā₂ += Q R̄₂.
    for c in 0..k {
        for i in 0..m {
            qb[i + c * m] = q_adj.map_or(0.0, |g| g[i + c * m]);
        }
    }
    if let Some(rb) = r_adj {
        for c in k..n {
            for i in 0..m {
                let mut s = 0.0;
                for l in 0..k {
                    s += q[i + l * m] * rb[l + c * k];
                }
                a_adj[i + c * m] += s;
            }
        }
        for c in 0..k {
            for i in 0..m {
                let mut s = 0.0;
                for l in k..n {
                    s += a[i + l * m] * rb[c + l * k];
                }
                qb[i + c * m] += s;
            }
        }
    }
    // M = R₁ R̄₁ᵀ − Q̄'ᵀ Q (k × k), only its lower triangle is used.
    for j in 0..k {
        for i in j..k {
            let mut s = 0.0;
            if let Some(rb) = r_adj {
                for l in 0..k {
                    s += r[i + l * k] * rb[j + l * k];
                }
            }
            for p in 0..m {
                s -= qb[p + i * m] * q[p + j * m];
            }
            mm[i + j * k] = s;
        }
    }
    // B = Q̄' + Q copyltu(M).
    for c in 0..k {
        for i in 0..m {
            let mut s = qb[i + c * m];
            for l in 0..k {
                let mlc = if l >= c { mm[l + c * k] } else { mm[c + l * k] };
                s += q[i + l * m] * mlc;
            }
            b[i + c * m] = s;
        }
    }
    // Ā₁ += B R₁⁻ᵀ: each row x of the result solves R₁ xᵀ = (row of B)ᵀ (back substitution).
    solve_rows_upper_in_place(b, m, k, |c, l| r[c + l * k]);
    for i in 0..m {
        for c in 0..k {
            a_adj[i + c * m] += b[i + c * m];
        }
    }
}
