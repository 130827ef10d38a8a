//! Thin singular value decomposition `A = U diag(σ) Vᵀ` (`singular_values`, `svd_U`, `svd_V`)
//! by one-sided Jacobi (Hestenes), accurate to rounding in every singular value.
//!
//! For `A` `m × n` and `k = min(m, n)`: `σ` has `k` entries, descending (Stan's order), `U` is
//! `m × k` and `V` is `n × k`. As for eigenvectors, singular vector signs are not determined
//! by `A`; hazel makes the largest entry of each column of `U` positive (flipping the matching
//! column of `V`).
//!
//! **Adjoint** (Townsend 2016), with `F_ij = 1 / (σ_j² − σ_i²)` off the diagonal, 0 on it:
//! `Ā += U [diag(σ̄) + (F ∘ (UᵀŪ − ŪᵀU)) Σ + Σ (F ∘ (VᵀV̄ − V̄ᵀV))] Vᵀ
//!      + (I − UUᵀ) Ū Σ⁻¹ Vᵀ + U Σ⁻¹ V̄ᵀ (I − VVᵀ)`.

use super::eigen::{jacobi_rotation, rotate_columns};
use super::set_identity;
use crate::dist::MathError;

const MAX_SWEEPS: usize = 60;

/// Workspace [`svd`] needs for an `m × n` matrix.
pub fn svd_workspace_len(m: usize, n: usize) -> usize {
    let (p, q) = (m.max(n), m.min(n));
    p * q + q * q
}

/// Workspace [`svd_adjoint`] needs for an `m × n` matrix.
pub fn svd_adjoint_workspace_len(m: usize, n: usize) -> usize {
    let k = m.min(n);
    3 * k * k + m * k + n * k
}

/// Thin SVD of the `m × n` matrix `a` into `sigma` (k), `u` (`m × k`) and `v` (`n × k`).
/// Errors (naming `function`) for non-finite input.
pub fn svd(
    function: &str,
    a: &[f64],
    m: usize,
    n: usize,
    sigma: &mut [f64],
    u: &mut [f64],
    v: &mut [f64],
    ws: &mut [f64],
) -> Result<(), MathError> {
    if a[..m * n].iter().any(|x| !x.is_finite()) {
        return Err(MathError::new(format!("{function}: m is not finite")));
    }
    // Work on the tall orientation B (p × q, p ≥ q): B = A, or B = Aᵀ.
    let tall = m >= n;
    let (p, q) = if tall { (m, n) } else { (n, m) };
    let (w, j) = ws[..svd_workspace_len(m, n)].split_at_mut(p * q);
    for c in 0..q {
        for r in 0..p {
            w[r + c * p] = if tall { a[r + c * m] } else { a[c + r * m] };
        }
    }
    set_identity(j, q);
    for _ in 0..MAX_SWEEPS {
        let mut rotated = false;
        for ci in 0..q {
            for cj in (ci + 1)..q {
                let (mut alpha, mut beta, mut gamma) = (0.0, 0.0, 0.0);
                for r in 0..p {
                    let (x, y) = (w[r + ci * p], w[r + cj * p]);
                    alpha += x * x;
                    beta += y * y;
                    gamma += x * y;
                }
                if gamma == 0.0 || gamma.abs() <= 1e-17 * (alpha * beta).sqrt() {
                    continue;
                }
                rotated = true;
                let zeta = (beta - alpha) / (2.0 * gamma);
                let (c, s) = jacobi_rotation(zeta);
                rotate_columns(w, p, ci, cj, c, s);
                rotate_columns(j, q, ci, cj, c, s);
            }
        }
        if !rotated {
            break;
        }
    }
    // σ_c = ‖w_c‖, left vectors w_c / σ_c (of B), right vectors the columns of J.
    for c in 0..q {
        let nrm = w[c * p..(c + 1) * p]
            .iter()
            .map(|x| x * x)
            .sum::<f64>()
            .sqrt();
        sigma[c] = nrm;
        if nrm > 0.0 {
            w[c * p..(c + 1) * p].iter_mut().for_each(|x| *x /= nrm);
        }
    }
    // Descending order (selection sort, allocation-free).
    for c in 0..q {
        let mut best = c;
        for d in (c + 1)..q {
            if sigma[d] > sigma[best] {
                best = d;
            }
        }
        if best != c {
            sigma.swap(c, best);
            for r in 0..p {
                w.swap(r + c * p, r + best * p);
            }
            for r in 0..q {
                j.swap(r + c * q, r + best * q);
            }
        }
    }
    // B = W Σ Jᵀ: for A tall U = W, V = J; otherwise A = J Σ Wᵀ, so U = J, V = W.
    let (uu, vv) = if tall { (&*w, &*j) } else { (&*j, &*w) };
    u[..m * q].copy_from_slice(&uu[..m * q]);
    v[..n * q].copy_from_slice(&vv[..n * q]);
    for c in 0..q {
        let col = &u[c * m..(c + 1) * m];
        let mut big = 0;
        for r in 1..m {
            if col[r].abs() > col[big].abs() {
                big = r;
            }
        }
        if m > 0 && col[big] < 0.0 {
            u[c * m..(c + 1) * m].iter_mut().for_each(|x| *x = -*x);
            v[c * n..(c + 1) * n].iter_mut().for_each(|x| *x = -*x);
        }
    }
    Ok(())
}

/// Adjoint of [`svd`]: adds to `a_adj` the contributions of whichever of `σ̄`, `Ū`, `V̄` are
/// given. `ws` needs [`svd_adjoint_workspace_len`]`(m, n)` entries.
pub fn svd_adjoint(
    sigma: &[f64],
    u: &[f64],
    v: &[f64],
    m: usize,
    n: usize,
    sigma_adj: Option<&[f64]>,
    u_adj: Option<&[f64]>,
    v_adj: Option<&[f64]>,
    a_adj: &mut [f64],
    ws: &mut [f64],
) {
    let k = m.min(n);
    let (utu, rest) = ws[..svd_adjoint_workspace_len(m, n)].split_at_mut(k * k);
    let (vtv, rest) = rest.split_at_mut(k * k);
    let (inner, rest) = rest.split_at_mut(k * k);
    let (tu, tv) = rest.split_at_mut(m * k);
    let f = |i: usize, j: usize| {
        if i == j {
            0.0
        } else {
            1.0 / (sigma[j] * sigma[j] - sigma[i] * sigma[i])
        }
    };
    // UᵀŪ and VᵀV̄ (k × k).
    for jx in 0..k {
        for ix in 0..k {
            utu[ix + jx * k] = match u_adj {
                Some(ub) => super::dot_product(&u[ix * m..(ix + 1) * m], &ub[jx * m..(jx + 1) * m]),
                None => 0.0,
            };
            vtv[ix + jx * k] = match v_adj {
                Some(vb) => super::dot_product(&v[ix * n..(ix + 1) * n], &vb[jx * n..(jx + 1) * n]),
                None => 0.0,
            };
        }
    }
    for jx in 0..k {
        for ix in 0..k {
            // A zero difference contributes nothing even where F is infinite (repeated
            // singular values, e.g. of a complex matrix's real embedding, with only σ̄ given).
            let du = utu[ix + jx * k] - utu[jx + ix * k];
            let dv = vtv[ix + jx * k] - vtv[jx + ix * k];
            let mut x = 0.0;
            if du != 0.0 {
                x += du * f(ix, jx) * sigma[jx];
            }
            if dv != 0.0 {
                x += sigma[ix] * f(ix, jx) * dv;
            }
            if ix == jx {
                if let Some(sb) = sigma_adj {
                    x += sb[ix];
                }
            }
            inner[ix + jx * k] = x;
        }
    }
    // T_U = (Ū − U UᵀŪ) Σ⁻¹ (m × k) and T_V = (V̄ − V VᵀV̄) Σ⁻¹ (n × k).
    complement_over_sigma(u_adj, u, utu, sigma, m, k, tu);
    complement_over_sigma(v_adj, v, vtv, sigma, n, k, tv);
    // Ā += (U inner + T_U) Vᵀ + U T_Vᵀ.
    for jx in 0..n {
        for ix in 0..m {
            let mut x = 0.0;
            for c in 0..k {
                let mut ui = tu[ix + c * m];
                for l in 0..k {
                    ui += u[ix + l * m] * inner[l + c * k];
                }
                x += ui * v[jx + c * n] + u[ix + c * m] * tv[jx + c * n];
            }
            a_adj[ix + jx * m] += x;
        }
    }
}

/// `T = (Ā − A (AᵀĀ)) Σ⁻¹` (`rows × k`) for the orthonormal columns `A` with `ata = AᵀĀ`; 0
/// without `Ā`. The `T_U` and `T_V` of [`svd_adjoint`].
fn complement_over_sigma(
    a_adj: Option<&[f64]>,
    a: &[f64],
    ata: &[f64],
    sigma: &[f64],
    rows: usize,
    k: usize,
    out: &mut [f64],
) {
    for c in 0..k {
        for r in 0..rows {
            out[r + c * rows] = match a_adj {
                Some(b) => {
                    let mut x = b[r + c * rows];
                    for l in 0..k {
                        x -= a[r + l * rows] * ata[l + c * k];
                    }
                    x / sigma[c]
                }
                None => 0.0,
            };
        }
    }
}
