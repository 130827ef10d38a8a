//! Decompositions with complex results: the complex Schur form (`complex_schur_decompose`),
//! eigenvalues and eigenvectors of general (non-symmetric real, or complex) matrices
//! (`eigenvalues`, `eigenvectors`, `eigendecompose`), of Hermitian matrices
//! (`eigenvalues_sym`, `eigenvectors_sym` of a `complex_matrix`) and the SVD of a complex
//! matrix (`singular_values`, `svd_U`, `svd_V`).
//!
//! **Schur form.** `A = U T Uᴴ` with `U` unitary and `T` upper triangular: Householder
//! reduction to Hessenberg form, then implicitly shifted single-shift QR sweeps (Wilkinson
//! shifts, exceptional shifts after 10 and 20 sweeps without deflation) applied to the whole
//! matrix, as Eigen's `ComplexSchur` (which Stan calls) does. `U` and `T` are not unique (the
//! order of the eigenvalues on the diagonal and each column's phase are artefacts of the
//! iteration), so only `A = U T Uᴴ`, `UᴴU = I`, the triangle and the eigenvalues are Stan's.
//! hazel fixes the phases (each Schur vector's largest entry real and positive), which makes
//! `U` and `T` differentiable functions of `A` ([`complex_schur_adjoint`]) where the diagonal
//! of `T` has distinct entries.
//!
//! **General eigenproblems.** The eigenvalues are the diagonal of `T`; the eigenvector of
//! `T_kk` solves the triangular system `(T − T_kk I) x = 0` with `x_k = 1` (a zero pivot, from
//! a repeated eigenvalue, is replaced by `ε‖T‖` as in Eigen), `v = U x`, scaled to unit norm.
//! Order, as in Stan: a complex matrix's eigenvalues are sorted by increasing modulus (Eigen's
//! `ComplexEigenSolver`); a real matrix's have each complex conjugate pair adjacent, positive
//! imaginary part first and exactly conjugate (eigenvectors too), and real eigenvalues
//! (imaginary part below `√ε‖A‖`) exactly real with real eigenvectors, as Eigen's real
//! `EigenSolver` returns them, in the order of the *real* Schur form (Stan's order): a
//! values-only Francis double-shift iteration (`real_schur_eigenvalues`) finds it, and the
//! complex Schur results are permuted to it. It equals Eigen 3.4's order for 299 of the 300
//! random matrices of the `linalg_complex` test (the other deflates one sweep apart, a
//! subdiagonal entry within rounding of the threshold).
//! Each eigenvector's phase is fixed by making its entry of largest modulus real and positive.
//!
//! **Hermitian eigenproblems and the complex SVD** use the real embedding
//! `E = [[Re A, −Im A], [Im A, Re A]]`: every eigenvalue (singular value) of `A` is a double
//! one of `E`, and `[x; y]` is an eigenvector (singular vector) of `E` exactly when `x + iy` is
//! one of `A`. So the real Jacobi solvers ([`super::eigen_sym`], [`super::svd`]) do the work:
//! values are every other value of `E`'s (ascending eigenvalues, descending singular values,
//! Stan's orders) and vectors are complex Gram–Schmidt over each cluster of equal values (for
//! the SVD the same combination of `U` and `V` columns, so `A v = σ u` holds). Phases: each
//! eigenvector's (each left singular vector's, the right one following) entry of largest
//! modulus is real and positive.

// Index loops over several column-major buffers at once read clearer than iterator chains.
#![allow(clippy::needless_range_loop)]

use super::{eigen_sym, svd};
use crate::dist::MathError;
use std::ops::{Add, Div, Mul, Neg, Sub};

/// A complex number (real and imaginary part).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct C64 {
    pub re: f64,
    pub im: f64,
}

impl C64 {
    pub const ZERO: C64 = C64 { re: 0.0, im: 0.0 };
    pub(crate) const ONE: C64 = C64 { re: 1.0, im: 0.0 };
    pub fn new(re: f64, im: f64) -> C64 {
        C64 { re, im }
    }
    pub fn conj(self) -> C64 {
        C64::new(self.re, -self.im)
    }
    pub fn norm_sqr(self) -> f64 {
        self.re * self.re + self.im * self.im
    }
    pub fn abs(self) -> f64 {
        self.re.hypot(self.im)
    }
    pub fn scale(self, s: f64) -> C64 {
        C64::new(self.re * s, self.im * s)
    }
    /// The principal square root.
    pub fn sqrt(self) -> C64 {
        let r = self.abs();
        if r == 0.0 {
            return C64::ZERO;
        }
        let re = ((r + self.re) / 2.0).sqrt();
        let im = ((r - self.re) / 2.0).sqrt();
        C64::new(re, if self.im < 0.0 { -im } else { im })
    }
    /// `|re| + |im|`, the cheap magnitude Eigen's deflation tests use.
    fn norm1(self) -> f64 {
        self.re.abs() + self.im.abs()
    }
}

impl From<[f64; 2]> for C64 {
    fn from(p: [f64; 2]) -> C64 {
        C64::new(p[0], p[1])
    }
}

impl From<C64> for [f64; 2] {
    fn from(z: C64) -> [f64; 2] {
        [z.re, z.im]
    }
}

/// Reads entry `i` of a pair buffer as a complex number.
fn at(b: &[[f64; 2]], i: usize) -> C64 {
    C64::from(b[i])
}

impl Add for C64 {
    type Output = C64;
    fn add(self, o: C64) -> C64 {
        C64::new(self.re + o.re, self.im + o.im)
    }
}
impl Sub for C64 {
    type Output = C64;
    fn sub(self, o: C64) -> C64 {
        C64::new(self.re - o.re, self.im - o.im)
    }
}
impl Mul for C64 {
    type Output = C64;
    fn mul(self, o: C64) -> C64 {
        C64::new(
            self.re * o.re - self.im * o.im,
            self.re * o.im + self.im * o.re,
        )
    }
}
impl Div for C64 {
    type Output = C64;
    fn div(self, o: C64) -> C64 {
        let d = o.norm_sqr();
        let n = self * o.conj();
        C64::new(n.re / d, n.im / d)
    }
}
impl Neg for C64 {
    type Output = C64;
    fn neg(self) -> C64 {
        C64::new(-self.re, -self.im)
    }
}

/// Sweeps without deflation before the iteration gives up, per eigenvalue.
const MAX_SWEEPS_PER_EIGENVALUE: usize = 30;

fn check_finite(function: &str, a: &[[f64; 2]]) -> Result<(), MathError> {
    if a.iter().any(|z| !z[0].is_finite() || !z[1].is_finite()) {
        return Err(MathError::new(format!("{function}: m is not finite")));
    }
    Ok(())
}

fn check_nonempty(function: &str, n: usize) -> Result<(), MathError> {
    if n == 0 {
        return Err(MathError::new(format!(
            "{function}: m has size 0, but must have a non-zero size"
        )));
    }
    Ok(())
}

/// Workspace (entries of [`C64`]) [`complex_schur`] needs for an `n × n` matrix.
pub fn complex_schur_workspace_len(n: usize) -> usize {
    n
}

/// Complex Schur decomposition `a = u t uᴴ` of the `n × n` matrix `a` (column-major): `t`
/// upper triangular, `u` unitary (both `n × n`). Errors name `function`.
pub fn complex_schur(
    function: &str,
    a: &[[f64; 2]],
    n: usize,
    t: &mut [[f64; 2]],
    u: &mut [[f64; 2]],
    ws: &mut [[f64; 2]],
) -> Result<(), MathError> {
    check_nonempty(function, n)?;
    check_finite(function, &a[..n * n])?;
    let h = &mut t[..n * n];
    h.copy_from_slice(&a[..n * n]);
    let u = &mut u[..n * n];
    for j in 0..n {
        for i in 0..n {
            u[i + j * n] = (if i == j { C64::ONE } else { C64::ZERO }).into();
        }
    }
    hessenberg(h, u, n, &mut ws[..n]);
    let scale = h.iter().map(|&z| C64::from(z).norm1()).fold(0.0, f64::max);
    if scale == 0.0 {
        return Ok(());
    }
    let eps = f64::EPSILON;
    let mut hi = n - 1;
    let mut iter = 0;
    let mut total = 0;
    while hi > 0 {
        // The active block is rows/columns l..=hi, with h[l, l−1] negligible.
        let mut l = hi;
        while l > 0 {
            let sub = at(h, l + (l - 1) * n).norm1();
            let diag = at(h, (l - 1) + (l - 1) * n).norm1() + at(h, l + l * n).norm1();
            if sub <= eps * diag || sub <= f64::MIN_POSITIVE * scale {
                h[l + (l - 1) * n] = (C64::ZERO).into();
                break;
            }
            l -= 1;
        }
        if l == hi {
            hi -= 1;
            iter = 0;
            continue;
        }
        iter += 1;
        total += 1;
        if total > MAX_SWEEPS_PER_EIGENVALUE * n {
            return Err(MathError::new(format!(
                "{function}: the Schur decomposition did not converge"
            )));
        }
        let mu = shift(h, n, hi, iter);
        // Implicit single-shift QR sweep over the block, chasing the bulge down.
        for k in l..hi {
            let (x, y) = if k == l {
                (at(h, l + l * n) - mu, at(h, (l + 1) + l * n))
            } else {
                (at(h, k + (k - 1) * n), at(h, (k + 1) + (k - 1) * n))
            };
            let Some((c, s)) = givens(x, y) else {
                continue;
            };
            // Rows k, k+1 ← G · rows, G = [[c, s], [−s̄, c]].
            let first = if k == l { l } else { k - 1 };
            for j in first..n {
                let (p, q) = (at(h, k + j * n), at(h, (k + 1) + j * n));
                h[k + j * n] = (p.scale(c) + s * q).into();
                h[(k + 1) + j * n] = (q.scale(c) - s.conj() * p).into();
            }
            if k > l {
                h[(k + 1) + (k - 1) * n] = (C64::ZERO).into();
            }
            // Columns k, k+1 ← columns · Gᴴ.
            let last = (k + 2).min(hi);
            for i in 0..=last {
                let (p, q) = (at(h, i + k * n), at(h, i + (k + 1) * n));
                h[i + k * n] = (p.scale(c) + q * s.conj()).into();
                h[i + (k + 1) * n] = (q.scale(c) - p * s).into();
            }
            for i in 0..n {
                let (p, q) = (at(u, i + k * n), at(u, i + (k + 1) * n));
                u[i + k * n] = (p.scale(c) + q * s.conj()).into();
                u[i + (k + 1) * n] = (q.scale(c) - p * s).into();
            }
        }
    }
    for j in 0..n {
        for i in (j + 1)..n {
            h[i + j * n] = (C64::ZERO).into();
        }
    }
    // Fix the phases: each Schur vector's entry of largest modulus real and positive
    // (U ← U D, T ← Dᴴ T D), which makes the decomposition a function of A to differentiate.
    for c in 0..n {
        let b = largest(&u[c * n..(c + 1) * n]);
        let ub = at(u, b + c * n);
        if ub.abs() == 0.0 {
            continue;
        }
        let d = ub.conj().scale(1.0 / ub.abs());
        for i in 0..n {
            u[i + c * n] = (at(u, i + c * n) * d).into();
            h[i + c * n] = (at(h, i + c * n) * d).into();
        }
        for j in 0..n {
            h[c + j * n] = (d.conj() * at(h, c + j * n)).into();
        }
        u[b + c * n] = [at(u, b + c * n).abs(), 0.0];
    }
    Ok(())
}

/// Index of the first entry of largest modulus.
fn largest(col: &[[f64; 2]]) -> usize {
    let mut big = 0;
    for i in 1..col.len() {
        if at(col, i).abs() > at(col, big).abs() {
            big = i;
        }
    }
    big
}

/// Workspace (pairs) [`complex_schur_adjoint`] needs.
pub fn complex_schur_adjoint_workspace_len(n: usize) -> usize {
    3 * n * n
}

/// Adjoint of [`complex_schur`] (with its phase convention) for `T` with distinct diagonal
/// entries. With `X = Uᴴ dU` (skew-Hermitian) and `M = Uᴴ dA U`, `dT = M − X T + T X` is upper
/// triangular, which fixes the strictly lower part of `X` by the triangular Sylvester
/// recursion `X_ij (T_ii − T_jj) = −M_ij + Σ_{k<j} X_ik T_kj − Σ_{k>i} T_ik X_kj` (columns
/// ascending, rows descending); the upper part is `−X̄ᵀ` and the diagonal `iθ_c` keeps
/// `dU`'s gauge entry real. This runs that map backwards: `Ā = U M̄ Uᴴ`, added to `re_adj`
/// (real part) and `im_adj` (imaginary part) when given. `g_t` (upper triangle read) and `g_u`
/// are `∂L/∂Re + i ∂L/∂Im` of T and U.
#[allow(clippy::too_many_arguments)]
pub fn complex_schur_adjoint(
    t: &[[f64; 2]],
    u: &[[f64; 2]],
    n: usize,
    g_t: Option<&[[f64; 2]]>,
    g_u: Option<&[[f64; 2]]>,
    re_adj: Option<&mut [f64]>,
    im_adj: Option<&mut [f64]>,
    ws: &mut [[f64; 2]],
) {
    let (xb, rest) = ws[..3 * n * n].split_at_mut(n * n);
    let (mb, tmp) = rest.split_at_mut(n * n);
    let idx = |i: usize, j: usize| i + j * n;
    // X̄ = Uᴴ G_U − Gu Tᴴ + Tᴴ Gu (Gu the upper triangle of G_T); M̄ = Gu.
    for j in 0..n {
        for i in 0..n {
            let mut x = C64::ZERO;
            if let Some(gu) = g_u {
                for k in 0..n {
                    x = x + at(u, idx(k, i)).conj() * at(gu, idx(k, j));
                }
            }
            let mut m = C64::ZERO;
            if let Some(gt) = g_t {
                let g = |a: usize, b: usize| {
                    if a <= b {
                        at(gt, idx(a, b))
                    } else {
                        C64::ZERO
                    }
                };
                // (Gu Tᴴ)_ij = Σ_k Gu_ik conj(T_jk); (Tᴴ Gu)_ij = Σ_k conj(T_ki) Gu_kj
                for k in 0..n {
                    x = x - g(i, k) * at(t, idx(j, k)).conj() + at(t, idx(k, i)).conj() * g(k, j);
                }
                m = g(i, j);
            }
            xb[idx(i, j)] = x.into();
            mb[idx(i, j)] = m.into();
        }
    }
    // Diagonal: θ̄_c = Im X̄_cc, and θ_c = −Im(Σ_{k≠c} U_bk X_kc)/U_bc.
    for c in 0..n {
        let b = largest(&u[c * n..(c + 1) * n]);
        let ubc = at(u, idx(b, c)).re;
        let theta_bar = at(xb, idx(c, c)).im;
        if ubc == 0.0 || theta_bar == 0.0 {
            continue;
        }
        for k in 0..n {
            if k != c {
                let add = C64::new(0.0, 1.0) * at(u, idx(b, k)).conj();
                xb[idx(k, c)] = (at(xb, idx(k, c)) - add.scale(theta_bar / ubc)).into();
            }
        }
    }
    // Upper entries X_ij = −conj(X_ji): fold into the lower ones.
    for j in 0..n {
        for i in 0..j {
            xb[idx(j, i)] = (at(xb, idx(j, i)) - at(xb, idx(i, j)).conj()).into();
        }
    }
    // The triangular recursion backwards (columns descending, rows ascending).
    for j in (0..n).rev() {
        for i in (j + 1)..n {
            let d = at(t, idx(i, i)) - at(t, idx(j, j));
            let a = at(xb, idx(i, j)) / d.conj();
            mb[idx(i, j)] = (at(mb, idx(i, j)) - a).into();
            for k in 0..j {
                xb[idx(i, k)] = (at(xb, idx(i, k)) + a * at(t, idx(k, j)).conj()).into();
            }
            for k in (i + 1)..n {
                xb[idx(k, j)] = (at(xb, idx(k, j)) - a * at(t, idx(i, k)).conj()).into();
            }
        }
    }
    // Ā = U M̄ Uᴴ.
    for j in 0..n {
        for i in 0..n {
            let mut s = C64::ZERO;
            for k in 0..n {
                s = s + at(mb, idx(i, k)) * at(u, idx(j, k)).conj();
            }
            tmp[idx(i, j)] = s.into();
        }
    }
    let (mut re_adj, mut im_adj) = (re_adj, im_adj);
    for j in 0..n {
        for i in 0..n {
            let mut s = C64::ZERO;
            for k in 0..n {
                s = s + at(u, idx(i, k)) * at(tmp, idx(k, j));
            }
            if let Some(r) = re_adj.as_deref_mut() {
                r[idx(i, j)] += s.re;
            }
            if let Some(m) = im_adj.as_deref_mut() {
                m[idx(i, j)] += s.im;
            }
        }
    }
}

/// Reduces `h` to upper Hessenberg form by Householder reflections, accumulating them into
/// `u` (`h ← Pᴴ h P`, `u ← u P`). `v` is workspace of length n.
fn hessenberg(h: &mut [[f64; 2]], u: &mut [[f64; 2]], n: usize, v: &mut [[f64; 2]]) {
    for k in 0..n.saturating_sub(2) {
        let m = n - k - 1; // length of x = h[k+1.., k]
        let tail: f64 = (k + 2..n).map(|i| at(h, i + k * n).norm_sqr()).sum();
        if tail == 0.0 {
            continue;
        }
        let x0 = at(h, (k + 1) + k * n);
        let norm = (x0.norm_sqr() + tail).sqrt();
        let phase = if x0.abs() == 0.0 {
            C64::ONE
        } else {
            x0.scale(1.0 / x0.abs())
        };
        let alpha = -phase.scale(norm);
        // v = x − α e₁, normalised.
        for i in 0..m {
            v[i] = (at(h, (k + 1 + i) + k * n)).into();
        }
        v[0] = (at(v, 0) - alpha).into();
        let vn = v[..m]
            .iter()
            .map(|&z| C64::from(z).norm_sqr())
            .sum::<f64>()
            .sqrt();
        for z in v[..m].iter_mut() {
            *z = C64::from(*z).scale(1.0 / vn).into();
        }
        // h ← (I − 2vvᴴ) h on rows k+1.., all columns.
        for j in 0..n {
            let mut d = C64::ZERO;
            for i in 0..m {
                d = d + at(v, i).conj() * at(h, (k + 1 + i) + j * n);
            }
            let d = d.scale(2.0);
            for i in 0..m {
                h[(k + 1 + i) + j * n] = (at(h, (k + 1 + i) + j * n) - at(v, i) * d).into();
            }
        }
        // h ← h (I − 2vvᴴ) and u ← u (I − 2vvᴴ) on columns k+1...
        for mat in [&mut *h, &mut *u] {
            for i in 0..n {
                let mut d = C64::ZERO;
                for j in 0..m {
                    d = d + at(mat, i + (k + 1 + j) * n) * at(v, j);
                }
                let d = d.scale(2.0);
                for j in 0..m {
                    mat[i + (k + 1 + j) * n] =
                        (at(mat, i + (k + 1 + j) * n) - d * at(v, j).conj()).into();
                }
            }
        }
        for i in (k + 2)..n {
            h[i + k * n] = (C64::ZERO).into();
        }
    }
}

/// The Wilkinson shift of the trailing 2 × 2 block ending at `hi` (the eigenvalue of that block
/// nearer `h[hi, hi]`), or an exceptional shift after 10 and 20 sweeps without deflation.
fn shift(h: &[[f64; 2]], n: usize, hi: usize, iter: usize) -> C64 {
    if iter == 10 || iter == 20 {
        let a = at(h, hi + (hi - 1) * n).re.abs();
        let b = if hi >= 2 {
            at(h, (hi - 1) + (hi - 2) * n).re.abs()
        } else {
            0.0
        };
        return C64::new(a + b, 0.0);
    }
    let a = at(h, (hi - 1) + (hi - 1) * n);
    let b = at(h, (hi - 1) + hi * n);
    let c = at(h, hi + (hi - 1) * n);
    let d = at(h, hi + hi * n);
    let half = (a - d).scale(0.5);
    let disc = (half * half + b * c).sqrt();
    let mid = (a + d).scale(0.5);
    let (m1, m2) = (mid + disc, mid - disc);
    if (m1 - d).abs() <= (m2 - d).abs() {
        m1
    } else {
        m2
    }
}

/// A rotation `G = [[c, s], [−s̄, c]]` (c real) with `G [x; y] = [r; 0]`; `None` when y = 0.
fn givens(x: C64, y: C64) -> Option<(f64, C64)> {
    if y == C64::ZERO {
        return None;
    }
    let ax = x.abs();
    let nu = ax.hypot(y.abs());
    if ax == 0.0 {
        // G = [[0, ȳ/|y|], [−y/|y|, 0]]: G[0; y] = [|y|; 0].
        return Some((0.0, y.conj().scale(1.0 / y.abs())));
    }
    let phase = x.scale(1.0 / ax);
    Some((ax / nu, phase * y.conj().scale(1.0 / nu)))
}

/// Workspace (entries of [`C64`]) [`eigen_general`] needs.
pub fn eigen_general_workspace_len(n: usize) -> usize {
    2 * n * n + n
}

/// Eigenvalues (into `values`, n) and unit eigenvectors (columns of `vectors`, `n × n`) of the
/// `n × n` matrix `a`. `real_input` says that `a` is a real matrix (`eigenvalues(matrix)`),
/// which fixes the order and makes conjugate pairs exact (see the module notes).
pub fn eigen_general(
    function: &str,
    a: &[[f64; 2]],
    n: usize,
    real_input: bool,
    values: &mut [[f64; 2]],
    vectors: &mut [[f64; 2]],
    ws: &mut [[f64; 2]],
) -> Result<(), MathError> {
    let (t, rest) = ws.split_at_mut(n * n);
    let (u, rest) = rest.split_at_mut(n * n);
    complex_schur(function, a, n, t, u, rest)?;
    let norm = t.iter().map(|&z| C64::from(z).abs()).fold(0.0, f64::max);
    for k in 0..n {
        values[k] = (at(t, k + k * n)).into();
    }
    // x solves (T − λ_k I) x = 0 with x_k = 1, x_j = 0 below; v = U x into column k.
    let x = &mut rest[..n];
    for k in 0..n {
        let lambda = at(values, k);
        for z in x.iter_mut() {
            *z = C64::ZERO.into();
        }
        x[k] = (C64::ONE).into();
        for i in (0..k).rev() {
            let mut s = C64::ZERO;
            for j in (i + 1)..=k {
                s = s + at(t, i + j * n) * at(x, j);
            }
            let mut d = at(t, i + i * n) - lambda;
            if d.abs() < f64::EPSILON * norm {
                d = C64::new(f64::EPSILON * norm.max(f64::MIN_POSITIVE), 0.0);
            }
            x[i] = (-(s / d)).into();
        }
        let col = &mut vectors[k * n..(k + 1) * n];
        for (i, c) in col.iter_mut().enumerate() {
            let mut s = C64::ZERO;
            for j in 0..=k {
                s = s + at(u, i + j * n) * at(x, j);
            }
            *c = s.into();
        }
        normalise_phase(col);
    }
    if real_input {
        tidy_real(a, n, values, vectors);
        // Stan's order: that of the real Schur form (Eigen's EigenSolver). T and U are free
        // now; T's storage holds the real iteration, U's the target order.
        let h = &mut t.as_flattened_mut()[..n * n];
        let target = &mut u[..n];
        if real_schur_eigenvalues(a, n, h, target) {
            reorder_like(target, n, values, vectors);
        }
    } else {
        // Eigen's ComplexEigenSolver: selection sort by increasing modulus.
        for i in 0..n {
            let mut k = i;
            for j in (i + 1)..n {
                if at(values, j).abs() < at(values, k).abs() {
                    k = j;
                }
            }
            if k != i {
                values.swap(i, k);
                for r in 0..n {
                    vectors.swap(r + i * n, r + k * n);
                }
            }
        }
    }
    Ok(())
}

/// Workspace (pairs) [`eigen_general_adjoint`] needs.
pub fn eigen_general_adjoint_workspace_len(n: usize) -> usize {
    3 * n * n
}

/// Adjoint of [`eigen_general`] for simple eigenvalues: `g_values` (`∂L/∂Re λ_k + i ∂L/∂Im
/// λ_k`) and/or `g_vectors` (the same for each eigenvector entry) given. With `V` the
/// eigenvectors and `W = V⁻¹`, `dλ_k = (W dA V)_kk` and, for the unit-norm eigenvector whose
/// largest entry `b` is real (`r = v_b`), `dv_k = P(Σ_{j≠k} v_j (W dA V)_jk / (λ_k − λ_j))`
/// with `P(x) = x − v_k Re(v_kᴴ x) − i v_k Im(x_b) / r` (keeping the norm and the phase). So
/// `Ā = Re(Wᵀ K Vᵀ)` for the real part of `A` and `−Im(Wᵀ K Vᵀ)` for its imaginary part, with
/// `K_kk = ḡ_k` and `K_jk = (H_kᴴ v_j) / (λ_k − λ_j)`, `H_k = G_k − Re(s) v_k + i (Im(s) / r)
/// e_b`, `s = G_kᴴ v_k`. A defective (numerically singular) `V` has no derivative: the
/// adjoints become NaN (repeated eigenvalues make the vector adjoint infinite or NaN).
#[allow(clippy::too_many_arguments)]
pub fn eigen_general_adjoint(
    values: &[[f64; 2]],
    vectors: &[[f64; 2]],
    n: usize,
    g_values: Option<&[[f64; 2]]>,
    g_vectors: Option<&[[f64; 2]]>,
    re_adj: Option<&mut [f64]>,
    im_adj: Option<&mut [f64]>,
    ws: &mut [[f64; 2]],
) {
    let (m, rest) = ws[..3 * n * n].split_at_mut(n * n);
    let (y, k) = rest.split_at_mut(n * n);
    // K (n × n).
    for kk in 0..n {
        for j in 0..n {
            let mut z = C64::ZERO;
            if j == kk {
                if let Some(g) = g_values {
                    z = C64::from(g[kk]).conj();
                }
            } else if let Some(gv) = g_vectors.filter(|gv| {
                // An eigenvector the loss does not read contributes nothing (even where its
                // eigenvalue is repeated and the ratio below would be 0/0).
                gv[kk * n..(kk + 1) * n]
                    .iter()
                    .any(|z| z[0] != 0.0 || z[1] != 0.0)
            }) {
                let vk = &vectors[kk * n..(kk + 1) * n];
                let gk = &gv[kk * n..(kk + 1) * n];
                let vj = &vectors[j * n..(j + 1) * n];
                let mut b = 0;
                for i in 1..n {
                    if at(vk, i).abs() > at(vk, b).abs() {
                        b = i;
                    }
                }
                let r = at(vk, b).re;
                let (mut s, mut gv_j, mut vk_vj) = (C64::ZERO, C64::ZERO, C64::ZERO);
                for i in 0..n {
                    s = s + at(gk, i).conj() * at(vk, i);
                    gv_j = gv_j + at(gk, i).conj() * at(vj, i);
                    vk_vj = vk_vj + at(vk, i).conj() * at(vj, i);
                }
                let h_v = gv_j - vk_vj.scale(s.re) - C64::new(0.0, s.im / r) * at(vj, b);
                z = h_v / (at(values, kk) - at(values, j));
            }
            k[j + kk * n] = z.into();
        }
    }
    // M = Vᵀ, Y = K Vᵀ; then solve M Y' = Y in place by Gaussian elimination with partial
    // pivoting: Y' = Wᵀ K Vᵀ.
    for kk in 0..n {
        for j in 0..n {
            m[kk + j * n] = vectors[j + kk * n];
            let mut c = C64::ZERO;
            for l in 0..n {
                c = c + at(k, kk + l * n) * at(vectors, j + l * n);
            }
            y[kk + j * n] = c.into();
        }
    }
    let scale = m.iter().map(|&z| C64::from(z).abs()).fold(0.0, f64::max);
    let mut singular = false;
    for p in 0..n {
        let mut r = p;
        for i in (p + 1)..n {
            if at(m, i + p * n).abs() > at(m, r + p * n).abs() {
                r = i;
            }
        }
        if !(at(m, r + p * n).abs() > f64::EPSILON * scale) {
            singular = true;
            break;
        }
        if r != p {
            for j in 0..n {
                m.swap(p + j * n, r + j * n);
                y.swap(p + j * n, r + j * n);
            }
        }
        let pivot = at(m, p + p * n);
        for i in (p + 1)..n {
            let f = at(m, i + p * n) / pivot;
            if f == C64::ZERO {
                continue;
            }
            for j in p..n {
                m[i + j * n] = (at(m, i + j * n) - f * at(m, p + j * n)).into();
            }
            for j in 0..n {
                y[i + j * n] = (at(y, i + j * n) - f * at(y, p + j * n)).into();
            }
        }
    }
    if !singular {
        for j in 0..n {
            for i in (0..n).rev() {
                let mut s = at(y, i + j * n);
                for l in (i + 1)..n {
                    s = s - at(m, i + l * n) * at(y, l + j * n);
                }
                y[i + j * n] = (s / at(m, i + i * n)).into();
            }
        }
    }
    for (adj, part) in [(re_adj, 0usize), (im_adj, 1)] {
        if let Some(adj) = adj {
            for (d, z) in adj[..n * n].iter_mut().zip(y.iter()) {
                *d += if singular {
                    f64::NAN
                } else if part == 0 {
                    z[0]
                } else {
                    -z[1]
                };
            }
        }
    }
}

/// The eigenvalues of the real matrix `a` (real parts of the pairs) in the order of its real
/// Schur form, as Eigen's `EigenSolver` (Stan's `eigenvalues(matrix)`) reports them: a
/// Householder reduction to Hessenberg form, then Francis double-shift QR sweeps on the
/// active block with EISPACK's `hqr` choices (deflation at `|h_{i,i−1}| ≤ ε(|h_{i−1,i−1}| +
/// |h_ii|)`, a sweep started below two consecutive small subdiagonal entries, exceptional
/// shifts after 10 and 30 sweeps, a 2 × 2 block with real eigenvalues split with the one
/// nearer its upper-left entry first; a complex pair reported positive imaginary part first).
/// `h` is `n²` workspace. `false` when the iteration does not converge (the order is then
/// left as it is).
fn real_schur_eigenvalues(a: &[[f64; 2]], n: usize, h: &mut [f64], out: &mut [[f64; 2]]) -> bool {
    let eps = f64::EPSILON;
    // Eigen iterates on the matrix divided by its largest entry's magnitude.
    let scale = a[..n * n].iter().map(|z| z[0].abs()).fold(0.0, f64::max);
    if !(scale > 0.0) || !scale.is_finite() {
        return false;
    }
    for (x, z) in h.iter_mut().zip(a) {
        *x = z[0] / scale;
    }
    // Householder Hessenberg reduction (only the values matter: no U), each reflector
    // `I − τ u uᵀ`, `u = (1, ess)`, in LAPACK's (and Eigen's) normalisation; `out` serves as
    // scratch for `ess` until the end.
    for k in 0..n.saturating_sub(2) {
        let len = n - k - 1;
        let ess = &mut out.as_flattened_mut()[..len - 1];
        let v0 = h[(k + 1) + k * n];
        let Some((tau, beta)) = householder(v0, &h[(k + 2) + k * n..n + k * n], ess) else {
            continue;
        };
        h[(k + 1) + k * n] = beta;
        for i in (k + 2)..n {
            h[i + k * n] = 0.0;
        }
        apply_left(h, n, k + 1, tau, ess, (k + 1)..n);
        apply_right(h, n, k + 1, tau, ess, 0..n);
    }
    let norm: f64 = h.iter().map(|x| x.abs()).sum();
    let tiny = (norm * eps * eps).max(f64::MIN_POSITIVE);
    let mut iu = n as isize - 1;
    let (mut iter, mut total) = (0, 0);
    let mut exshift = 0.0;
    let at = |i: usize, j: usize| i + j * n;
    while iu >= 0 {
        let u = iu as usize;
        let mut il = u;
        while il > 0 {
            let s = (eps * (h[at(il - 1, il - 1)].abs() + h[at(il, il)].abs())).max(tiny);
            if h[at(il, il - 1)].abs() <= s {
                break;
            }
            il -= 1;
        }
        if il == u {
            h[at(u, u)] += exshift;
            if u > 0 {
                h[at(u, u - 1)] = 0.0;
            }
            iu -= 1;
            iter = 0;
        } else if il == u - 1 {
            let p = 0.5 * (h[at(u - 1, u - 1)] - h[at(u, u)]);
            let bc = h[at(u, u - 1)] * h[at(u - 1, u)];
            let q = p * p + bc;
            h[at(u, u)] += exshift;
            h[at(u - 1, u - 1)] += exshift;
            if q >= 0.0 {
                let z = q.sqrt();
                let z = if p >= 0.0 { p + z } else { p - z };
                let x = h[at(u, u)];
                let upper = x + z;
                let lower = if z != 0.0 { x - bc / z } else { upper };
                h[at(u - 1, u - 1)] = upper;
                h[at(u, u)] = lower;
                h[at(u, u - 1)] = 0.0;
            }
            if u > 1 {
                h[at(u - 1, u - 2)] = 0.0;
            }
            iu -= 2;
            iter = 0;
        } else {
            // Shift information (x, y, w), with EISPACK's exceptional shifts.
            let (mut x, mut y, mut w) = (
                h[at(u, u)],
                h[at(u - 1, u - 1)],
                h[at(u, u - 1)] * h[at(u - 1, u)],
            );
            if iter == 10 {
                exshift += x;
                for i in 0..=u {
                    h[at(i, i)] -= x;
                }
                let s = h[at(u, u - 1)].abs() + h[at(u - 1, u - 2)].abs();
                x = 0.75 * s;
                y = x;
                w = -0.4375 * s * s;
            }
            if iter == 30 {
                let mut s = (y - x) / 2.0;
                s = s * s + w;
                if s > 0.0 {
                    s = s.sqrt();
                    if y < x {
                        s = -s;
                    }
                    s += (y - x) / 2.0;
                    s = x - w / s;
                    exshift += s;
                    for i in 0..=u {
                        h[at(i, i)] -= s;
                    }
                    x = 0.964;
                    y = 0.964;
                    w = 0.964;
                }
            }
            iter += 1;
            total += 1;
            if total > 40 * n {
                return false;
            }
            // Start below two consecutive small subdiagonal entries.
            let mut im = u - 2;
            let mut v = [0.0; 3];
            loop {
                let tmm = h[at(im, im)];
                let r = x - tmm;
                let s = y - tmm;
                v[0] = (r * s - w) / h[at(im + 1, im)] + h[at(im, im + 1)];
                v[1] = h[at(im + 1, im + 1)] - tmm - r - s;
                v[2] = h[at(im + 2, im + 1)];
                if im == il {
                    break;
                }
                let lhs = h[at(im, im - 1)] * (v[1].abs() + v[2].abs());
                let rhs =
                    v[0] * (h[at(im - 1, im - 1)].abs() + tmm.abs() + h[at(im + 1, im + 1)].abs());
                if lhs.abs() < eps * rhs {
                    break;
                }
                im -= 1;
            }
            // Bulge chase with 3-element reflections, then a 2-element one.
            for k in im..=(u - 2) {
                let first = k == im;
                let vk = if first {
                    v
                } else {
                    [h[at(k, k - 1)], h[at(k + 1, k - 1)], h[at(k + 2, k - 1)]]
                };
                reflect(h, n, k, &vk, il, u, first);
            }
            let vk = [h[at(u - 1, u - 2)], h[at(u, u - 2)]];
            reflect(h, n, u - 1, &vk, il, u, false);
            for i in (im + 2)..=u {
                h[at(i, i - 2)] = 0.0;
                if i > im + 2 {
                    h[at(i, i - 3)] = 0.0;
                }
            }
        }
    }
    // Read the eigenvalues off the quasi-triangular form.
    let mut i = 0;
    while i < n {
        if i + 1 == n || h[at(i + 1, i)] == 0.0 {
            out[i] = [h[at(i, i)] * scale, 0.0];
            i += 1;
        } else {
            let p = 0.5 * (h[at(i, i)] - h[at(i + 1, i + 1)]);
            let z = (p * p + h[at(i + 1, i)] * h[at(i, i + 1)]).abs().sqrt();
            let re = h[at(i + 1, i + 1)] + p;
            out[i] = [re * scale, z * scale];
            out[i + 1] = [re * scale, -z * scale];
            i += 2;
        }
    }
    true
}

/// The Householder reflector `I − τ u uᵀ`, `u = (1, ess)`, with `(I − τ u uᵀ) v = β e₁` for
/// `v = (v₀, tail)`: `β = −sign(v₀)‖v‖`, `τ = (β − v₀)/β`, `ess = tail/(v₀ − β)` (written
/// into `ess`). `None` when the tail is zero (no reflection needed).
fn householder(v0: f64, tail: &[f64], ess: &mut [f64]) -> Option<(f64, f64)> {
    let tail_sq: f64 = tail.iter().map(|x| x * x).sum();
    if tail_sq <= f64::MIN_POSITIVE {
        return None;
    }
    let mut beta = (v0 * v0 + tail_sq).sqrt();
    if v0 >= 0.0 {
        beta = -beta;
    }
    for (e, x) in ess.iter_mut().zip(tail) {
        *e = x / (v0 - beta);
    }
    Some(((beta - v0) / beta, beta))
}

/// Rows `k..k+1+ess.len()` of columns `cols` ← `(I − τ u uᵀ)` times them.
fn apply_left(
    h: &mut [f64],
    n: usize,
    k: usize,
    tau: f64,
    ess: &[f64],
    cols: std::ops::Range<usize>,
) {
    for j in cols {
        let mut t = h[k + j * n];
        for (r, e) in ess.iter().enumerate() {
            t += e * h[(k + 1 + r) + j * n];
        }
        h[k + j * n] -= tau * t;
        for (r, e) in ess.iter().enumerate() {
            h[(k + 1 + r) + j * n] -= tau * e * t;
        }
    }
}

/// Columns `k..k+1+ess.len()` of rows `rows` ← them times `(I − τ u uᵀ)`.
fn apply_right(
    h: &mut [f64],
    n: usize,
    k: usize,
    tau: f64,
    ess: &[f64],
    rows: std::ops::Range<usize>,
) {
    for i in rows {
        let mut t = h[i + k * n];
        for (c, e) in ess.iter().enumerate() {
            t += h[i + (k + 1 + c) * n] * e;
        }
        h[i + k * n] -= tau * t;
        for (c, e) in ess.iter().enumerate() {
            h[i + (k + 1 + c) * n] -= tau * t * e;
        }
    }
}

/// One reflection of a Francis sweep: the reflector of `v` (2 or 3 entries, rows `k..`) on
/// the left of the active block's columns from `k` and on the right of its rows up to
/// `k + 3`; the bulge column `k − 1` gets `β` (negated instead on a sweep's first reflection,
/// where it is negligible).
fn reflect(h: &mut [f64], n: usize, k: usize, v: &[f64], il: usize, iu: usize, first: bool) {
    let m = v.len();
    let mut ess = [0.0; 2];
    let Some((tau, beta)) = householder(v[0], &v[1..], &mut ess[..m - 1]) else {
        return;
    };
    let at = |i: usize, j: usize| i + j * n;
    if first && k > il {
        h[at(k, k - 1)] = -h[at(k, k - 1)];
    } else if !first {
        h[at(k, k - 1)] = beta;
    }
    apply_left(h, n, k, tau, &ess[..m - 1], k..iu + 1);
    let last = (k + m).min(iu);
    apply_right(h, n, k, tau, &ess[..m - 1], il..last + 1);
}

/// Reorders `values` (and the matching columns of `vectors`) to the order of `target` (the
/// same values up to rounding), each target taking the nearest value not yet taken.
fn reorder_like(target: &[[f64; 2]], n: usize, values: &mut [[f64; 2]], vectors: &mut [[f64; 2]]) {
    for i in 0..n {
        let t = C64::from(target[i]);
        let mut best = i;
        for j in i..n {
            if (at(values, j) - t).abs() < (at(values, best) - t).abs() {
                best = j;
            }
        }
        if best != i {
            values.swap(i, best);
            for r in 0..n {
                vectors.swap(r + i * n, r + best * n);
            }
        }
    }
}

/// Scales a vector to unit norm with its entry of largest modulus real and positive.
fn normalise_phase(col: &mut [[f64; 2]]) {
    let norm = col
        .iter()
        .map(|&z| C64::from(z).norm_sqr())
        .sum::<f64>()
        .sqrt();
    let mut big = 0;
    for i in 1..col.len() {
        if at(col, i).abs() > at(col, big).abs() {
            big = i;
        }
    }
    if norm == 0.0 || at(col, big).abs() == 0.0 {
        return;
    }
    let phase = at(col, big).conj().scale(1.0 / (at(col, big).abs() * norm));
    for z in col.iter_mut() {
        *z = (C64::from(*z) * phase).into();
    }
    col[big] = (C64::new(at(col, big).re, 0.0)).into();
}

/// For a real matrix: real eigenvalues made exactly real (with real eigenvectors), conjugate
/// pairs made exact and adjacent (positive imaginary part first), keeping Schur order.
fn tidy_real(a: &[[f64; 2]], n: usize, values: &mut [[f64; 2]], vectors: &mut [[f64; 2]]) {
    let norm = a[..n * n]
        .iter()
        .map(|&z| C64::from(z).abs())
        .fold(0.0, f64::max);
    let tol = f64::EPSILON.sqrt() * norm.max(f64::MIN_POSITIVE);
    let mut k = 0;
    while k < n {
        if at(values, k).im.abs() <= tol {
            values[k] = (C64::new(at(values, k).re, 0.0)).into();
            for z in vectors[k * n..(k + 1) * n].iter_mut() {
                z[1] = 0.0;
            }
            let col = &mut vectors[k * n..(k + 1) * n];
            let norm = col
                .iter()
                .map(|&z| C64::from(z).norm_sqr())
                .sum::<f64>()
                .sqrt();
            for z in col.iter_mut() {
                *z = C64::from(*z).scale(1.0 / norm).into();
            }
            k += 1;
            continue;
        }
        // Find the conjugate partner among the later eigenvalues and move it to k + 1.
        let target = at(values, k).conj();
        let mut best = None;
        for j in (k + 1)..n {
            let d = (at(values, j) - target).abs();
            if best.is_none_or(|(_, bd)| d < bd) {
                best = Some((j, d));
            }
        }
        let Some((j, _)) = best else {
            k += 1;
            continue;
        };
        // Rotate the partner to position k + 1, keeping the others' relative order.
        for p in (k + 1..j).rev() {
            values.swap(p, p + 1);
            for r in 0..n {
                vectors.swap(r + p * n, r + (p + 1) * n);
            }
        }
        let lambda = if at(values, k).im > 0.0 {
            at(values, k)
        } else {
            at(values, k + 1)
        };
        let lambda = C64::new(lambda.re, lambda.im.abs());
        let src = if at(values, k).im > 0.0 { k } else { k + 1 };
        if src != k {
            for r in 0..n {
                vectors.swap(r + k * n, r + (k + 1) * n);
            }
        }
        values[k] = (lambda).into();
        values[k + 1] = (lambda.conj()).into();
        for r in 0..n {
            vectors[r + (k + 1) * n] = (at(vectors, r + k * n).conj()).into();
        }
        k += 2;
    }
}

/// The real `2n × 2m` embedding `[[Re A, −Im A], [Im A, Re A]]` of the `n × m` matrix `a`.
fn embed(a: &[[f64; 2]], n: usize, m: usize, e: &mut [f64]) {
    let rows = 2 * n;
    for j in 0..m {
        for i in 0..n {
            let z = at(a, i + j * n);
            e[i + j * rows] = z.re;
            e[(n + i) + j * rows] = z.im;
            e[i + (m + j) * rows] = -z.im;
            e[(n + i) + (m + j) * rows] = z.re;
        }
    }
}

/// Checks that `a` is Hermitian to Stan's symmetry tolerance.
fn check_hermitian(function: &str, a: &[[f64; 2]], n: usize) -> Result<(), MathError> {
    for j in 0..n {
        for i in 0..j {
            let (x, y) = (at(a, i + j * n), at(a, j + i * n).conj());
            if (x - y).abs() > super::TOLERANCE * x.abs().max(y.abs()).max(1.0) {
                return Err(MathError::new(format!(
                    "{function}: m is not symmetric. m[{}, {}] = ({}, {}), but m[{}, {}] = ({}, {})",
                    i + 1,
                    j + 1,
                    x.re,
                    x.im,
                    j + 1,
                    i + 1,
                    at(a, j + i * n).re,
                    at(a, j + i * n).im,
                )));
            }
        }
    }
    Ok(())
}

/// Workspace (f64 entries) [`eigen_hermitian`] needs.
pub fn eigen_hermitian_workspace_len(n: usize) -> usize {
    3 * (2 * n) * (2 * n) + 2 * n
}

/// Eigenvalues (ascending, `values`, n) and orthonormal eigenvectors (`vectors`, `n × n`) of
/// the Hermitian `n × n` matrix `a`, from its real embedding.
pub fn eigen_hermitian(
    function: &str,
    a: &[[f64; 2]],
    n: usize,
    values: &mut [f64],
    vectors: &mut [[f64; 2]],
    ws: &mut [f64],
) -> Result<(), MathError> {
    check_nonempty(function, n)?;
    check_finite(function, &a[..n * n])?;
    check_hermitian(function, a, n)?;
    let p = 2 * n;
    let (e, rest) = ws.split_at_mut(p * p);
    let (vecs, rest) = rest.split_at_mut(p * p);
    let (jws, rest) = rest.split_at_mut(p * p);
    let vals = &mut rest[..p];
    embed(a, n, n, e);
    // The embedding is symmetric exactly when `a` is Hermitian; symmetrise away rounding.
    for j in 0..p {
        for i in 0..j {
            let s = 0.5 * (e[i + j * p] + e[j + i * p]);
            e[i + j * p] = s;
            e[j + i * p] = s;
        }
    }
    eigen_sym(function, e, p, vals, vecs, jws)?;
    let scale = vals.iter().map(|v| v.abs()).fold(0.0, f64::max);
    pick_pairs(n, vals, vecs, None, scale, values, vectors, None);
    Ok(())
}

/// Workspace (f64 entries) [`svd_complex`] needs for an `m × n` matrix.
pub fn svd_complex_workspace_len(m: usize, n: usize) -> usize {
    let k = 2 * m.min(n);
    4 * m * n + k + 2 * m * k + 2 * n * k + super::svd_workspace_len(2 * m, 2 * n)
}

/// Thin SVD `a = u diag(σ) vᴴ` of the complex `m × n` matrix `a`: `sigma` (k = min(m, n),
/// descending), `u` (`m × k`), `v` (`n × k`), from the real embedding.
pub fn svd_complex(
    function: &str,
    a: &[[f64; 2]],
    m: usize,
    n: usize,
    sigma: &mut [f64],
    u: &mut [[f64; 2]],
    v: &mut [[f64; 2]],
    ws: &mut [f64],
) -> Result<(), MathError> {
    check_finite(function, &a[..m * n])?;
    let k2 = 2 * m.min(n);
    let (e, rest) = ws.split_at_mut(4 * m * n);
    let (s, rest) = rest.split_at_mut(k2);
    let (eu, rest) = rest.split_at_mut(2 * m * k2);
    let (ev, rest) = rest.split_at_mut(2 * n * k2);
    embed(a, m, n, e);
    svd(function, e, 2 * m, 2 * n, s, eu, ev, rest)?;
    // Singular values descending: pick_pairs works on any order of equal-valued pairs.
    let scale = s.first().copied().unwrap_or(0.0);
    pick_pairs(m, s, eu, Some((n, &*ev)), scale, sigma, u, Some(v));
    Ok(())
}

/// From the real embedding's values (each value of the complex problem twice, adjacent) and
/// vectors (`2n`-row columns `[x; y]`), the complex values and vectors `x + iy`: one value per
/// pair, vectors by complex Gram–Schmidt over each cluster of equal values (with the same
/// coefficients applied to the `second` set, for the SVD's right vectors).
#[allow(clippy::too_many_arguments)]
fn pick_pairs(
    n: usize,
    vals: &[f64],
    vecs: &[f64],
    second: Option<(usize, &[f64])>,
    scale: f64,
    values: &mut [f64],
    out: &mut [[f64; 2]],
    mut out2: Option<&mut [[f64; 2]]>,
) {
    let count = values.len().min(vals.len() / 2);
    let tol = 1e3 * f64::EPSILON * scale.max(f64::MIN_POSITIVE);
    let rows = 2 * n;
    let mut chosen = 0;
    let mut start = 0;
    while start < vals.len() && chosen < count {
        // The cluster of (nearly) equal values starting at `start`.
        let mut end = start + 1;
        while end < vals.len() && (vals[end] - vals[start]).abs() <= tol {
            end += 1;
        }
        let want = ((end - start) / 2).max(1).min(count - chosen);
        let first_chosen = chosen;
        for cand in start..end {
            if chosen - first_chosen == want {
                break;
            }
            let col = &mut out[chosen * n..(chosen + 1) * n];
            for i in 0..n {
                col[i] = (C64::new(vecs[i + cand * rows], vecs[(n + i) + cand * rows])).into();
            }
            if let (Some((n2, v2)), Some(o2)) = (second, out2.as_deref_mut()) {
                let rows2 = 2 * n2;
                let c2 = &mut o2[chosen * n2..(chosen + 1) * n2];
                for i in 0..n2 {
                    c2[i] = (C64::new(v2[i + cand * rows2], v2[(n2 + i) + cand * rows2])).into();
                }
            }
            // Remove the components along the vectors already chosen in this cluster.
            for prev in first_chosen..chosen {
                let (done, cur) = out.split_at_mut(chosen * n);
                let p = &done[prev * n..(prev + 1) * n];
                let c = &mut cur[..n];
                let mut d = C64::ZERO;
                for i in 0..n {
                    d = d + at(p, i).conj() * at(c, i);
                }
                for i in 0..n {
                    c[i] = (at(c, i) - at(p, i) * d).into();
                }
                if let Some(o2) = out2.as_deref_mut() {
                    let n2 = second.map_or(0, |(n2, _)| n2);
                    let (done2, cur2) = o2.split_at_mut(chosen * n2);
                    let p2 = &done2[prev * n2..(prev + 1) * n2];
                    for i in 0..n2 {
                        cur2[i] = (at(cur2, i) - at(p2, i) * d).into();
                    }
                }
            }
            let c = &mut out[chosen * n..(chosen + 1) * n];
            let norm = c
                .iter()
                .map(|&z| C64::from(z).norm_sqr())
                .sum::<f64>()
                .sqrt();
            if norm < 0.5 {
                // Dependent on the chosen ones (the i·v partner of a chosen v): skip it.
                continue;
            }
            // Unit norm, largest entry real and positive; the same factor on the second set.
            let mut big = 0;
            for i in 1..n {
                if at(c, i).abs() > at(c, big).abs() {
                    big = i;
                }
            }
            let f = if at(c, big).abs() > 0.0 {
                at(c, big).conj().scale(1.0 / (at(c, big).abs() * norm))
            } else {
                C64::new(1.0 / norm, 0.0)
            };
            for z in c.iter_mut() {
                *z = (C64::from(*z) * f).into();
            }
            c[big] = (C64::new(at(c, big).re, 0.0)).into();
            if let Some(o2) = out2.as_deref_mut() {
                let n2 = second.map_or(0, |(n2, _)| n2);
                for z in o2[chosen * n2..(chosen + 1) * n2].iter_mut() {
                    *z = (C64::from(*z) * f).into();
                }
            }
            // Every other value of the embedding's (as the parameter path takes them).
            values[chosen] = vals[(start + 2 * (chosen - first_chosen)).min(end - 1)];
            chosen += 1;
        }
        start = end;
    }
}
