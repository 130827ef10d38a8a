//! Stan's constraining transforms (Stan 2.37 definitions), with log-Jacobians, reverse-mode
//! rules and inverses.
//!
//! Every transform maps a free (unconstrained) slice `unc` to a constrained slice `out` and
//! returns the log absolute Jacobian determinant `log_jacobian` that Stan adds to the target.
//!
//! **Adjoint convention.** For a transform `out = f(unc)` with log-Jacobian `j(unc)`, the
//! `*_adjoint` function *adds* to `unc_adj` the gradient
//! `∂/∂unc [ Σ_i out_adj[i] · out[i] + j(unc) ]`, i.e. it back-propagates the adjoint of the
//! constrained value and includes the Jacobian term (whose adjoint is the target's, 1). Callers
//! that do not want the Jacobian (e.g. `jacobian=false` optimisation) must not call these for
//! the Jacobian part. Adjoints also take `out`, the constrained value the forward pass wrote,
//! which most rules reuse instead of recomputing. Bound adjoints (`lb_adj`, `ub_adj`, …) are
//! likewise *added to*, and are summed when a scalar bound is broadcast.
//!
//! **Layouts.** Vectors are contiguous. Matrices (inputs and outputs) are column-major, as in
//! Stan. The free vector of a structured type is in Stan's order (documented per transform);
//! an array of constrained objects is consecutive blocks, one per element.
//!
//! **Bounds.** Scalar-bounded transforms take bounds as slices of length 1 (broadcast) or of the
//! same length as the values. An infinite bound means "no bound on that side", as in Stan.
//!
//! `*_unconstrain` functions invert the transforms for user-supplied initial values and check
//! the constraint (to Stan's tolerance 1e-8), returning a [`TransformError`] naming the problem.
//!
//! Simplex (Stan ≥ 2.36): the isometric log-ratio transform, `x = softmax(V y)` with `V` the
//! `sum_to_zero_vector` basis; `log J = Σ log x_k + ½ log K`. Verified against stanli.

// Negated comparisons are deliberate: a NaN must fail every check. Forward/adjoint pairs
// take each matrix with its sizes, which makes long argument lists unavoidable.
#![allow(clippy::neg_cmp_op_on_partial_ord, clippy::too_many_arguments)]

use crate::linalg::{
    cholesky_lower_llt, multiply_lower_tri_self_transpose,
    multiply_lower_tri_self_transpose_adjoint,
};
use crate::special::{inv_logit, logit};
use std::fmt;

/// Stan's tolerance when checking a constrained value (`CONSTRAINT_TOLERANCE`).
pub const CONSTRAINT_TOLERANCE: f64 = 1e-8;

/// Why a value could not be unconstrained, or a bound was invalid.
#[derive(Debug, Clone, PartialEq)]
pub struct TransformError {
    pub message: String,
}

impl TransformError {
    fn new(message: impl Into<String>) -> Self {
        TransformError {
            message: message.into(),
        }
    }
}

impl fmt::Display for TransformError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TransformError {}

#[inline]
fn at(b: &[f64], i: usize) -> f64 {
    if b.len() == 1 {
        b[0]
    } else {
        b[i]
    }
}

#[inline]
fn add_at(b: &mut [f64], i: usize, v: f64) {
    if b.len() == 1 {
        b[0] += v
    } else {
        b[i] += v
    }
}

fn check_bound_len(name: &str, b: &[f64], n: usize) -> Result<(), TransformError> {
    if b.len() == 1 || b.len() == n {
        Ok(())
    } else {
        Err(TransformError::new(format!(
            "{name} has {} elements, but the value has {n}",
            b.len()
        )))
    }
}

/// `log(inv_logit(u)) + log(1 - inv_logit(u))`, stable for any `u`.
#[inline]
fn log_logistic_density(u: f64) -> f64 {
    -u.abs() - 2.0 * libm::log1p((-u.abs()).exp())
}

/// `log(1 - tanh(u)^2)`, stable for large `|u|`.
#[inline]
fn log1m_tanh_sq(u: f64) -> f64 {
    let a = u.abs();
    2.0 * (std::f64::consts::LN_2 - a - libm::log1p((-2.0 * a).exp()))
}

// ---------------------------------------------------------------------------------------------
// Scalar bounds, applied elementwise.
// ---------------------------------------------------------------------------------------------

/// A one-sided bound: the lower and upper transforms are one rule, `x = bound + sign·exp(u)`.
/// The sign enters as a multiplication by ±1, which is exact, so `bound + (−1)·e` rounds as
/// `bound − e` (and `−1·(x − ub)` as `ub − x`) did when the two sides were written apart.
struct Side {
    sign: f64,
    /// The bound that leaves the value unconstrained.
    open: f64,
    /// The bound, for messages.
    name: &'static str,
    /// Where a value outside the bound is, for the message.
    outside: &'static str,
}

const LOWER: Side = Side {
    sign: 1.0,
    open: f64::NEG_INFINITY,
    name: "the lower bound",
    outside: "below its lower bound",
};

const UPPER: Side = Side {
    sign: -1.0,
    open: f64::INFINITY,
    name: "the upper bound",
    outside: "above its upper bound",
};

fn one_sided_constrain(
    side: &Side,
    unc: &[f64],
    bound: &[f64],
    out: &mut [f64],
) -> Result<f64, TransformError> {
    check_bound_len(side.name, bound, unc.len())?;
    let mut lj = 0.0;
    for (i, (&u, o)) in unc.iter().zip(out.iter_mut()).enumerate() {
        let b = at(bound, i);
        if b == side.open {
            *o = u;
        } else {
            *o = b + side.sign * u.exp();
            lj += u;
        }
    }
    Ok(lj)
}

fn one_sided_constrain_adjoint(
    side: &Side,
    unc: &[f64],
    bound: &[f64],
    out_adj: &[f64],
    unc_adj: &mut [f64],
    mut bound_adj: Option<&mut [f64]>,
) {
    for i in 0..unc.len() {
        let b = at(bound, i);
        if b == side.open {
            unc_adj[i] += out_adj[i];
        } else {
            unc_adj[i] += side.sign * out_adj[i] * unc[i].exp() + 1.0;
            if let Some(a) = bound_adj.as_deref_mut() {
                add_at(a, i, out_adj[i]);
            }
        }
    }
}

fn one_sided_unconstrain(
    side: &Side,
    x: &[f64],
    bound: &[f64],
    unc: &mut [f64],
) -> Result<(), TransformError> {
    check_bound_len(side.name, bound, x.len())?;
    for i in 0..x.len() {
        let b = at(bound, i);
        if b == side.open {
            unc[i] = x[i];
        } else if (side.sign > 0.0 && x[i] >= b) || (side.sign < 0.0 && x[i] <= b) {
            unc[i] = (side.sign * (x[i] - b)).ln();
        } else {
            return Err(TransformError::new(format!(
                "element {} is {}, {} {b}",
                i + 1,
                x[i],
                side.outside
            )));
        }
    }
    Ok(())
}

/// `x = lb + exp(u)`; log J = `u`. An infinite `lb` is the identity (log J = 0). Errors when
/// the bound's length is neither 1 nor the value's.
pub fn lower_constrain(unc: &[f64], lb: &[f64], out: &mut [f64]) -> Result<f64, TransformError> {
    one_sided_constrain(&LOWER, unc, lb, out)
}

/// Adjoint of [`lower_constrain`]; `lb_adj` (same length as `lb`) receives `∂/∂lb`.
pub fn lower_constrain_adjoint(
    unc: &[f64],
    lb: &[f64],
    out_adj: &[f64],
    unc_adj: &mut [f64],
    lb_adj: Option<&mut [f64]>,
) {
    one_sided_constrain_adjoint(&LOWER, unc, lb, out_adj, unc_adj, lb_adj)
}

/// Inverse of [`lower_constrain`]: `u = log(x − lb)`.
pub fn lower_unconstrain(x: &[f64], lb: &[f64], unc: &mut [f64]) -> Result<(), TransformError> {
    one_sided_unconstrain(&LOWER, x, lb, unc)
}

/// `x = ub − exp(u)`; log J = `u`. An infinite `ub` is the identity. Errors when the bound's
/// length is neither 1 nor the value's.
pub fn upper_constrain(unc: &[f64], ub: &[f64], out: &mut [f64]) -> Result<f64, TransformError> {
    one_sided_constrain(&UPPER, unc, ub, out)
}

/// Adjoint of [`upper_constrain`]; `ub_adj` receives `∂/∂ub`.
pub fn upper_constrain_adjoint(
    unc: &[f64],
    ub: &[f64],
    out_adj: &[f64],
    unc_adj: &mut [f64],
    ub_adj: Option<&mut [f64]>,
) {
    one_sided_constrain_adjoint(&UPPER, unc, ub, out_adj, unc_adj, ub_adj)
}

/// Inverse of [`upper_constrain`]: `u = log(ub − x)`.
pub fn upper_unconstrain(x: &[f64], ub: &[f64], unc: &mut [f64]) -> Result<(), TransformError> {
    one_sided_unconstrain(&UPPER, x, ub, unc)
}

/// `x = lb + (ub − lb)·logistic(u)`; log J = `log(ub − lb) + log logistic(u) + log(1 − logistic(u))`.
/// An infinite bound reduces to the one-sided transform (or the identity). Errors when
/// `lb ≥ ub` (Stan's check) or a bound is NaN.
pub fn lower_upper_constrain(
    unc: &[f64],
    lb: &[f64],
    ub: &[f64],
    out: &mut [f64],
) -> Result<f64, TransformError> {
    check_bound_len("the lower bound", lb, unc.len())?;
    check_bound_len("the upper bound", ub, unc.len())?;
    let mut lj = 0.0;
    for i in 0..unc.len() {
        let (l, b, u) = (at(lb, i), at(ub, i), unc[i]);
        if !(l < b) {
            return Err(TransformError::new(format!(
                "lower bound {l} is not less than upper bound {b}"
            )));
        }
        match (l == f64::NEG_INFINITY, b == f64::INFINITY) {
            (true, true) => out[i] = u,
            (false, true) => {
                out[i] = l + u.exp();
                lj += u;
            }
            (true, false) => {
                out[i] = b - u.exp();
                lj += u;
            }
            (false, false) => {
                let diff = b - l;
                out[i] = l + diff * inv_logit(u);
                lj += diff.ln() + log_logistic_density(u);
            }
        }
    }
    Ok(lj)
}

/// Adjoint of [`lower_upper_constrain`], with optional bound adjoints.
pub fn lower_upper_constrain_adjoint(
    unc: &[f64],
    lb: &[f64],
    ub: &[f64],
    out_adj: &[f64],
    unc_adj: &mut [f64],
    mut lb_adj: Option<&mut [f64]>,
    mut ub_adj: Option<&mut [f64]>,
) {
    for i in 0..unc.len() {
        let (l, b, u, a) = (at(lb, i), at(ub, i), unc[i], out_adj[i]);
        match (l == f64::NEG_INFINITY, b == f64::INFINITY) {
            (true, true) => unc_adj[i] += a,
            (false, true) => {
                unc_adj[i] += a * u.exp() + 1.0;
                if let Some(g) = lb_adj.as_deref_mut() {
                    add_at(g, i, a);
                }
            }
            (true, false) => {
                unc_adj[i] += -a * u.exp() + 1.0;
                if let Some(g) = ub_adj.as_deref_mut() {
                    add_at(g, i, a);
                }
            }
            (false, false) => {
                let diff = b - l;
                let s = inv_logit(u);
                let s1 = inv_logit(-u);
                unc_adj[i] += a * diff * s * s1 + (s1 - s);
                if let Some(g) = lb_adj.as_deref_mut() {
                    add_at(g, i, a * s1 - 1.0 / diff);
                }
                if let Some(g) = ub_adj.as_deref_mut() {
                    add_at(g, i, a * s + 1.0 / diff);
                }
            }
        }
    }
}

/// Inverse of [`lower_upper_constrain`]: `u = logit((x − lb)/(ub − lb))`.
pub fn lower_upper_unconstrain(
    x: &[f64],
    lb: &[f64],
    ub: &[f64],
    unc: &mut [f64],
) -> Result<(), TransformError> {
    check_bound_len("the lower bound", lb, x.len())?;
    check_bound_len("the upper bound", ub, x.len())?;
    for i in 0..x.len() {
        let (l, b, v) = (at(lb, i), at(ub, i), x[i]);
        if !(l < b) {
            return Err(TransformError::new(format!(
                "lower bound {l} is not less than upper bound {b}"
            )));
        }
        if !(v >= l && v <= b) {
            return Err(TransformError::new(format!(
                "element {} is {v}, outside its bounds [{l}, {b}]",
                i + 1
            )));
        }
        unc[i] = match (l == f64::NEG_INFINITY, b == f64::INFINITY) {
            (true, true) => v,
            (false, true) => (v - l).ln(),
            (true, false) => (b - v).ln(),
            (false, false) => logit((v - l) / (b - l)),
        };
    }
    Ok(())
}

/// `x = offset + multiplier·u`; log J = `Σ log multiplier`. Errors unless the multiplier is
/// positive and finite and the offset finite.
pub fn offset_multiplier_constrain(
    unc: &[f64],
    offset: &[f64],
    multiplier: &[f64],
    out: &mut [f64],
) -> Result<f64, TransformError> {
    check_bound_len("the offset", offset, unc.len())?;
    check_bound_len("the multiplier", multiplier, unc.len())?;
    let mut lj = 0.0;
    for i in 0..unc.len() {
        let (m, s) = (at(offset, i), at(multiplier, i));
        if !m.is_finite() {
            return Err(TransformError::new(format!(
                "offset is {m}, but must be finite"
            )));
        }
        if !(s > 0.0 && s.is_finite()) {
            return Err(TransformError::new(format!(
                "multiplier is {s}, but must be positive and finite"
            )));
        }
        out[i] = m + s * unc[i];
        lj += s.ln();
    }
    Ok(lj)
}

/// Adjoint of [`offset_multiplier_constrain`].
pub fn offset_multiplier_constrain_adjoint(
    unc: &[f64],
    multiplier: &[f64],
    out_adj: &[f64],
    unc_adj: &mut [f64],
    mut offset_adj: Option<&mut [f64]>,
    mut multiplier_adj: Option<&mut [f64]>,
) {
    for i in 0..unc.len() {
        let s = at(multiplier, i);
        unc_adj[i] += out_adj[i] * s;
        if let Some(g) = offset_adj.as_deref_mut() {
            add_at(g, i, out_adj[i]);
        }
        if let Some(g) = multiplier_adj.as_deref_mut() {
            add_at(g, i, out_adj[i] * unc[i] + 1.0 / s);
        }
    }
}

/// Inverse of [`offset_multiplier_constrain`].
pub fn offset_multiplier_unconstrain(
    x: &[f64],
    offset: &[f64],
    multiplier: &[f64],
    unc: &mut [f64],
) -> Result<(), TransformError> {
    check_bound_len("the offset", offset, x.len())?;
    check_bound_len("the multiplier", multiplier, x.len())?;
    for i in 0..x.len() {
        let s = at(multiplier, i);
        if !(s > 0.0 && s.is_finite()) {
            return Err(TransformError::new(format!(
                "multiplier is {s}, but must be positive and finite"
            )));
        }
        unc[i] = (x[i] - at(offset, i)) / s;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Ordered vectors.
// ---------------------------------------------------------------------------------------------

/// `x₁ = u₁`, `x_k = x_{k−1} + exp(u_k)`; log J = `Σ_{k≥2} u_k`. Free size K.
pub fn ordered_constrain(unc: &[f64], out: &mut [f64]) -> f64 {
    let mut lj = 0.0;
    for k in 0..unc.len() {
        if k == 0 {
            out[0] = unc[0];
        } else {
            out[k] = out[k - 1] + unc[k].exp();
            lj += unc[k];
        }
    }
    lj
}

/// Adjoint of [`ordered_constrain`].
pub(crate) fn ordered_constrain_adjoint(unc: &[f64], out_adj: &[f64], unc_adj: &mut [f64]) {
    // x_k depends on every u_j with j ≤ k: the adjoint of u_j collects a suffix sum.
    let mut suffix = 0.0;
    for k in (0..unc.len()).rev() {
        suffix += out_adj[k];
        if k == 0 {
            unc_adj[0] += suffix;
        } else {
            unc_adj[k] += suffix * unc[k].exp() + 1.0;
        }
    }
}

/// Inverse of [`ordered_constrain`]; the values must be strictly increasing.
pub fn ordered_unconstrain(x: &[f64], unc: &mut [f64]) -> Result<(), TransformError> {
    for k in 0..x.len() {
        if k == 0 {
            unc[0] = x[0];
        } else {
            if !(x[k] > x[k - 1]) {
                return Err(TransformError::new(format!("is not a valid ordered vector: element {} = {} is not greater than element {} = {}", k + 1, x[k], k, x[k - 1])));
            }
            unc[k] = (x[k] - x[k - 1]).ln();
        }
    }
    Ok(())
}

/// `x₁ = exp(u₁)`, `x_k = x_{k−1} + exp(u_k)`; log J = `Σ u_k`. Free size K.
pub fn positive_ordered_constrain(unc: &[f64], out: &mut [f64]) -> f64 {
    let mut lj = 0.0;
    let mut prev = 0.0;
    for k in 0..unc.len() {
        prev += unc[k].exp();
        out[k] = prev;
        lj += unc[k];
    }
    lj
}

/// Adjoint of [`positive_ordered_constrain`].
pub(crate) fn positive_ordered_constrain_adjoint(
    unc: &[f64],
    out_adj: &[f64],
    unc_adj: &mut [f64],
) {
    let mut suffix = 0.0;
    for k in (0..unc.len()).rev() {
        suffix += out_adj[k];
        unc_adj[k] += suffix * unc[k].exp() + 1.0;
    }
}

/// Inverse of [`positive_ordered_constrain`].
pub fn positive_ordered_unconstrain(x: &[f64], unc: &mut [f64]) -> Result<(), TransformError> {
    let mut prev = 0.0;
    for k in 0..x.len() {
        if !(x[k] > prev) {
            return Err(TransformError::new(if k == 0 {
                format!(
                    "is not a valid positive_ordered vector: element 1 = {} is not positive",
                    x[0]
                )
            } else {
                format!("is not a valid positive_ordered vector: element {} = {} is not greater than element {} = {prev}", k + 1, x[k], k)
            }));
        }
        unc[k] = (x[k] - prev).ln();
        prev = x[k];
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Sum-to-zero vectors and matrices (isometric bases; Stan ≥ 2.36).
// ---------------------------------------------------------------------------------------------

/// `z = V y` for the `sum_to_zero_vector` basis `V` (K × (K−1), orthonormal columns
/// orthogonal to 𝟙): column j is `(1, …, 1 [j+1 times], −(j+1), 0, …) / √((j+1)(j+2))`.
fn stz_vector_apply(y: &[f64], z: &mut [f64]) {
    let n = y.len();
    for v in z.iter_mut() {
        *v = 0.0;
    }
    let mut sum_w = 0.0;
    for i in (1..=n).rev() {
        let nf = i as f64;
        let w = y[i - 1] / (nf * (nf + 1.0)).sqrt();
        sum_w += w;
        z[i - 1] += sum_w;
        z[i] -= w * nf;
    }
}

/// `y = Vᵀ a` (adds into `y`).
fn stz_vector_apply_transpose(a: &[f64], y: &mut [f64]) {
    let mut prefix = 0.0;
    for m in 1..a.len() {
        prefix += a[m - 1];
        let mf = m as f64;
        y[m - 1] += (prefix - mf * a[m]) / (mf * (mf + 1.0)).sqrt();
    }
}

/// The `sum_to_zero_vector` transform: free size K−1, log J = 0 (an isometry).
pub fn sum_to_zero_constrain(unc: &[f64], out: &mut [f64]) -> f64 {
    stz_vector_apply(unc, out);
    0.0
}

/// Adjoint of [`sum_to_zero_constrain`].
pub(crate) fn sum_to_zero_constrain_adjoint(out_adj: &[f64], unc_adj: &mut [f64]) {
    stz_vector_apply_transpose(out_adj, unc_adj);
}

/// Inverse of [`sum_to_zero_constrain`]; the values must sum to zero (within 1e-8).
pub fn sum_to_zero_unconstrain(x: &[f64], unc: &mut [f64]) -> Result<(), TransformError> {
    let s: f64 = x.iter().sum();
    if !(s.abs() <= CONSTRAINT_TOLERANCE) {
        return Err(TransformError::new(format!(
            "is not a valid sum_to_zero_vector: its elements sum to {s}"
        )));
    }
    for u in unc.iter_mut() {
        *u = 0.0;
    }
    stz_vector_apply_transpose(x, unc);
    Ok(())
}

/// `x = U y` for the basis Stan's `sum_to_zero_matrix` uses along each dimension: column j
/// of `U` (length n+1) is `(−1, …, −1 [j times], j+1, 0, …, 0, −1) / √((j+1)(j+2))`.
/// Vectors are strided views: `y` has n entries `stride_in` apart, `x` n+1 entries.
fn stz_matrix_basis_apply(y: &[f64], stride_in: usize, x: &mut [f64], stride_out: usize) {
    let n = if y.is_empty() {
        0
    } else {
        (y.len() - 1) / stride_in + 1
    };
    // x_i = (i+1)·c_i − Σ_{j>i} c_j for i < n, x_n = −Σ_j c_j, with c_j = y_j / √((j+1)(j+2)).
    let mut suffix = 0.0;
    for i in (0..n).rev() {
        let jf = i as f64;
        let c = y[i * stride_in] / ((jf + 1.0) * (jf + 2.0)).sqrt();
        x[i * stride_out] = (jf + 1.0) * c - suffix;
        suffix += c;
    }
    x[n * stride_out] = -suffix;
}

/// `y = Uᵀ a` for strided views (`a` has n+1 entries, `y` has n; overwrites `y`).
fn stz_matrix_basis_apply_transpose(
    a: &[f64],
    stride_in: usize,
    n: usize,
    y: &mut [f64],
    stride_out: usize,
) {
    let last = a[n * stride_in];
    let mut prefix = 0.0; // Σ_{i<j} a_i
    for j in 0..n {
        let jf = j as f64;
        let aj = a[j * stride_in];
        y[j * stride_out] = ((jf + 1.0) * aj - prefix - last) / ((jf + 1.0) * (jf + 2.0)).sqrt();
        prefix += aj;
    }
}

/// The `sum_to_zero_matrix[N, M]` transform: free `(N−1) × (M−1)` column-major `Y`,
/// `X = U_N Y U_Mᵀ` (N × M, column-major); every row and column of X sums to zero. Log J = 0.
/// `ws` needs `N × (M−1)` entries.
pub fn sum_to_zero_matrix_constrain(
    unc: &[f64],
    rows: usize,
    cols: usize,
    out: &mut [f64],
    ws: &mut [f64],
) -> f64 {
    if rows == 0 || cols == 0 {
        return 0.0;
    }
    let (n, m) = (rows - 1, cols - 1);
    // T = U_N Y: each of the m columns of Y (length n) → length N.
    for j in 0..m {
        if n == 0 {
            ws[j * rows] = 0.0;
        } else {
            stz_matrix_basis_apply(
                &unc[j * n..(j + 1) * n],
                1,
                &mut ws[j * rows..(j + 1) * rows],
                1,
            );
        }
    }
    // X = T U_Mᵀ: each row of T (length m, stride N) → a row of X (length M, stride N).
    for i in 0..rows {
        if m == 0 {
            out[i] = 0.0;
        } else {
            let row_in = &ws[i..i + (m - 1) * rows + 1];
            stz_matrix_basis_apply(row_in, rows, &mut out[i..i + m * rows + 1], rows);
        }
    }
    0.0
}

/// Adjoint of [`sum_to_zero_matrix_constrain`]: adds `U_Nᵀ A U_M` to `unc_adj`. `ws` needs
/// `N × (M−1) + N` entries.
pub(crate) fn sum_to_zero_matrix_constrain_adjoint(
    out_adj: &[f64],
    rows: usize,
    cols: usize,
    unc_adj: &mut [f64],
    ws: &mut [f64],
) {
    if rows <= 1 || cols <= 1 {
        return;
    }
    let (n, m) = (rows - 1, cols - 1);
    let (t, col) = ws.split_at_mut(rows * m);
    // T = A U_M (N × m): row i of A (stride N) → row i of T.
    for i in 0..rows {
        stz_matrix_basis_apply_transpose(&out_adj[i..], rows, m, &mut t[i..], rows);
    }
    // unc_adj += U_Nᵀ T: column j of T → column j of the free matrix.
    for j in 0..m {
        stz_matrix_basis_apply_transpose(&t[j * rows..(j + 1) * rows], 1, n, col, 1);
        for i in 0..n {
            unc_adj[j * n + i] += col[i];
        }
    }
}

/// Inverse of [`sum_to_zero_matrix_constrain`]: `Y = U_Nᵀ X U_M`, after checking that every
/// row and column sums to zero.
pub(crate) fn sum_to_zero_matrix_unconstrain(
    x: &[f64],
    rows: usize,
    cols: usize,
    unc: &mut [f64],
) -> Result<(), TransformError> {
    for i in 0..rows {
        let s: f64 = (0..cols).map(|j| x[i + j * rows]).sum();
        if !(s.abs() <= CONSTRAINT_TOLERANCE) {
            return Err(TransformError::new(format!(
                "is not a valid sum_to_zero_matrix: row {} sums to {s}",
                i + 1
            )));
        }
    }
    for j in 0..cols {
        let s: f64 = x[j * rows..(j + 1) * rows].iter().sum();
        if !(s.abs() <= CONSTRAINT_TOLERANCE) {
            return Err(TransformError::new(format!(
                "is not a valid sum_to_zero_matrix: column {} sums to {s}",
                j + 1
            )));
        }
    }
    for u in unc.iter_mut() {
        *u = 0.0;
    }
    let mut ws = vec![0.0; rows * cols.saturating_sub(1) + rows];
    sum_to_zero_matrix_constrain_adjoint(x, rows, cols, unc, &mut ws);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Simplex and stochastic matrices.
// ---------------------------------------------------------------------------------------------

/// The simplex transform: free size K−1, `z = V y` (sum-to-zero basis), `x = softmax(z)`,
/// log J = `Σ_k log x_k + ½ log K`. `out` has K entries.
pub fn simplex_constrain(unc: &[f64], out: &mut [f64]) -> f64 {
    let k = out.len();
    if k == 0 {
        return 0.0;
    }
    stz_vector_apply(unc, out);
    // Σ log x_k = Σ (z_k − lse(z)); Σ z_k is 0 up to rounding.
    let z_sum: f64 = out.iter().sum();
    let max = out.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let mut sum = 0.0;
    for v in out.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    let lse = max + sum.ln();
    for v in out.iter_mut() {
        *v /= sum;
    }
    z_sum - k as f64 * lse + 0.5 * (k as f64).ln()
}

/// Adjoint of [`simplex_constrain`]. `out` is the simplex the forward pass produced.
/// `ws` needs K entries.
pub(crate) fn simplex_constrain_adjoint(
    out: &[f64],
    out_adj: &[f64],
    unc_adj: &mut [f64],
    ws: &mut [f64],
) {
    let k = out.len();
    let kf = k as f64;
    let dot: f64 = out.iter().zip(out_adj).map(|(x, a)| x * a).sum();
    // ∂/∂z of a·softmax(z) + Σ log softmax(z)_k.
    for i in 0..k {
        ws[i] = out[i] * (out_adj[i] - dot) + 1.0 - kf * out[i];
    }
    stz_vector_apply_transpose(&ws[..k], unc_adj);
}

/// Inverse of [`simplex_constrain`]: `y = Vᵀ log x` (log x centred). The value must be
/// non-negative and sum to 1 (within 1e-8); a zero element has no finite preimage.
pub fn simplex_unconstrain(x: &[f64], unc: &mut [f64]) -> Result<(), TransformError> {
    check_simplex(x)?;
    if let Some(i) = x.iter().position(|&v| v == 0.0) {
        return Err(TransformError::new(format!(
            "element {} of the simplex is 0, which has no finite unconstrained value",
            i + 1
        )));
    }
    let logs: Vec<f64> = x.iter().map(|v| v.ln()).collect();
    for u in unc.iter_mut() {
        *u = 0.0;
    }
    // Vᵀ 𝟙 = 0, so centring is not needed.
    stz_vector_apply_transpose(&logs, unc);
    Ok(())
}

fn check_simplex(x: &[f64]) -> Result<(), TransformError> {
    if x.is_empty() {
        return Err(TransformError::new(
            "is not a valid simplex: it has no elements",
        ));
    }
    if let Some(i) = x.iter().position(|v| !(*v >= 0.0)) {
        return Err(TransformError::new(format!(
            "is not a valid simplex: element {} = {} is negative",
            i + 1,
            x[i]
        )));
    }
    let s: f64 = x.iter().sum();
    if !((s - 1.0).abs() <= CONSTRAINT_TOLERANCE) {
        return Err(TransformError::new(format!(
            "is not a valid simplex: its elements sum to {s}, not 1"
        )));
    }
    Ok(())
}

/// `column_stochastic_matrix[N, M]`: each column a simplex. Free `(N−1) × M` column-major
/// (column j's free values contiguous); out `N × M` column-major.
pub(crate) fn column_stochastic_constrain(
    unc: &[f64],
    rows: usize,
    cols: usize,
    out: &mut [f64],
) -> f64 {
    let n = rows.saturating_sub(1);
    let mut lj = 0.0;
    for j in 0..cols {
        lj += simplex_constrain(&unc[j * n..(j + 1) * n], &mut out[j * rows..(j + 1) * rows]);
    }
    lj
}

/// Adjoint of [`column_stochastic_constrain`]; `ws` needs N entries.
pub(crate) fn column_stochastic_constrain_adjoint(
    out: &[f64],
    rows: usize,
    cols: usize,
    out_adj: &[f64],
    unc_adj: &mut [f64],
    ws: &mut [f64],
) {
    let n = rows.saturating_sub(1);
    for j in 0..cols {
        let c = j * rows..(j + 1) * rows;
        simplex_constrain_adjoint(
            &out[c.clone()],
            &out_adj[c],
            &mut unc_adj[j * n..(j + 1) * n],
            ws,
        );
    }
}

/// Inverse of [`column_stochastic_constrain`].
pub(crate) fn column_stochastic_unconstrain(
    x: &[f64],
    rows: usize,
    cols: usize,
    unc: &mut [f64],
) -> Result<(), TransformError> {
    let n = rows.saturating_sub(1);
    for j in 0..cols {
        simplex_unconstrain(&x[j * rows..(j + 1) * rows], &mut unc[j * n..(j + 1) * n])
            .map_err(|e| TransformError::new(format!("column {}: {}", j + 1, e.message)))?;
    }
    Ok(())
}

/// `row_stochastic_matrix[N, M]`: each row a simplex. Free `N × (M−1)` column-major (so row
/// i's free values are strided by N); out `N × M` column-major. `ws` needs `2M` entries.
pub(crate) fn row_stochastic_constrain(
    unc: &[f64],
    rows: usize,
    cols: usize,
    out: &mut [f64],
    ws: &mut [f64],
) -> f64 {
    let m = cols.saturating_sub(1);
    let mut lj = 0.0;
    let (free, row) = ws.split_at_mut(cols);
    for i in 0..rows {
        for j in 0..m {
            free[j] = unc[i + j * rows];
        }
        lj += simplex_constrain(&free[..m], &mut row[..cols]);
        for j in 0..cols {
            out[i + j * rows] = row[j];
        }
    }
    lj
}

/// Adjoint of [`row_stochastic_constrain`]; `ws` needs `4M` entries.
pub(crate) fn row_stochastic_constrain_adjoint(
    out: &[f64],
    rows: usize,
    cols: usize,
    out_adj: &[f64],
    unc_adj: &mut [f64],
    ws: &mut [f64],
) {
    let m = cols.saturating_sub(1);
    let (x, rest) = ws.split_at_mut(cols);
    let (a, rest) = rest.split_at_mut(cols);
    let (g, inner) = rest.split_at_mut(cols);
    for i in 0..rows {
        for j in 0..cols {
            x[j] = out[i + j * rows];
            a[j] = out_adj[i + j * rows];
        }
        for v in g[..m].iter_mut() {
            *v = 0.0;
        }
        simplex_constrain_adjoint(x, a, &mut g[..m], inner);
        for j in 0..m {
            unc_adj[i + j * rows] += g[j];
        }
    }
}

/// Inverse of [`row_stochastic_constrain`].
pub(crate) fn row_stochastic_unconstrain(
    x: &[f64],
    rows: usize,
    cols: usize,
    unc: &mut [f64],
) -> Result<(), TransformError> {
    let m = cols.saturating_sub(1);
    let mut row = vec![0.0; cols];
    let mut free = vec![0.0; m];
    for i in 0..rows {
        for j in 0..cols {
            row[j] = x[i + j * rows];
        }
        simplex_unconstrain(&row, &mut free)
            .map_err(|e| TransformError::new(format!("row {}: {}", i + 1, e.message)))?;
        for j in 0..m {
            unc[i + j * rows] = free[j];
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Unit vectors.
// ---------------------------------------------------------------------------------------------

/// `x = y / ‖y‖`; log J = `−½ yᵀy` (Stan's convention: a standard normal on y). Free size K.
/// Errors when `y = 0`.
pub fn unit_vector_constrain(unc: &[f64], out: &mut [f64]) -> Result<f64, TransformError> {
    let ss: f64 = unc.iter().map(|v| v * v).sum();
    if !(ss > 0.0 && ss.is_finite()) {
        return Err(TransformError::new(format!(
            "unit_vector: the free vector has squared norm {ss}, which must be positive and finite"
        )));
    }
    let r = ss.sqrt();
    for (o, u) in out.iter_mut().zip(unc) {
        *o = u / r;
    }
    Ok(-0.5 * ss)
}

/// Adjoint of [`unit_vector_constrain`].
pub(crate) fn unit_vector_constrain_adjoint(
    unc: &[f64],
    out: &[f64],
    out_adj: &[f64],
    unc_adj: &mut [f64],
) {
    let r: f64 = unc.iter().map(|v| v * v).sum::<f64>().sqrt();
    let dot: f64 = out.iter().zip(out_adj).map(|(x, a)| x * a).sum();
    for i in 0..unc.len() {
        unc_adj[i] += (out_adj[i] - dot * out[i]) / r - unc[i];
    }
}

/// Inverse of [`unit_vector_constrain`]: `y = x` after checking `‖x‖ = 1` (within 1e-8).
pub fn unit_vector_unconstrain(x: &[f64], unc: &mut [f64]) -> Result<(), TransformError> {
    let ss: f64 = x.iter().map(|v| v * v).sum();
    if !((ss - 1.0).abs() <= CONSTRAINT_TOLERANCE) {
        return Err(TransformError::new(format!(
            "is not a valid unit_vector: its squared norm is {ss}, not 1"
        )));
    }
    unc.copy_from_slice(x);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Cholesky factors and correlation / covariance matrices.
// ---------------------------------------------------------------------------------------------

/// Builds the Cholesky factor of a correlation matrix from canonical partial correlations
/// `z` given in row-major order over the strict lower triangle (`z(1,0), z(2,0), z(2,1), …`):
/// `L(r,c) = z(r,c)·√(1 − Σ_{m<c} L(r,m)²)`, `L(r,r) = √(1 − Σ_{m<r} L(r,m)²)`. Returns
/// `Σ_r Σ_{1≤c<r} ½ log(1 − Σ_{m<c} L(r,m)²)`, the Jacobian of z ↦ L (excluding tanh).
fn corr_cholesky_from_cpcs(z: &[f64], k: usize, l: &mut [f64]) -> f64 {
    for v in l[..k * k].iter_mut() {
        *v = 0.0;
    }
    if k == 0 {
        return 0.0;
    }
    l[0] = 1.0;
    let mut lj = 0.0;
    let mut pos = 0;
    for r in 1..k {
        let mut sum_sqs = 0.0;
        for c in 0..r {
            let v = if c == 0 {
                z[pos]
            } else {
                lj += 0.5 * libm::log1p(-sum_sqs);
                z[pos] * (1.0 - sum_sqs).sqrt()
            };
            pos += 1;
            l[r + c * k] = v;
            sum_sqs += v * v;
        }
        l[r + r * k] = (1.0 - sum_sqs).max(0.0).sqrt();
    }
    lj
}

/// Reverse of [`corr_cholesky_from_cpcs`]: given `L` and `L̄` (column-major K × K) and
/// `jac_weight` (1 to include that function's Jacobian term, 0 to exclude), writes `z̄`
/// (row-major strict lower order). `prefix` needs K entries.
fn corr_cholesky_from_cpcs_adjoint(
    z: &[f64],
    k: usize,
    l: &[f64],
    l_adj: &[f64],
    jac_weight: f64,
    z_adj: &mut [f64],
    prefix: &mut [f64],
) {
    let mut pos_row_start = 0;
    for r in 1..k {
        // prefix[c] = Σ_{m<c} L(r,m)², the running sum before step c.
        let mut s = 0.0;
        for c in 0..r {
            prefix[c] = s;
            s += l[r + c * k] * l[r + c * k];
        }
        let diag = l[r + r * k];
        // Adjoint of sum_sqs after the last step, from L(r,r) = √(1 − s).
        let mut s_adj = if diag > 0.0 {
            -l_adj[r + r * k] / (2.0 * diag)
        } else {
            0.0
        };
        for c in (0..r).rev() {
            let v = l[r + c * k];
            let x_adj = l_adj[r + c * k] + 2.0 * v * s_adj;
            let p = pos_row_start + c;
            if c == 0 {
                z_adj[p] = x_adj;
            } else {
                let one_minus = 1.0 - prefix[c];
                let root = one_minus.sqrt();
                z_adj[p] = x_adj * root;
                s_adj += -x_adj * z[p] / (2.0 * root) - jac_weight * 0.5 / one_minus;
            }
        }
        pos_row_start += r;
    }
}

/// `cholesky_factor_corr[K]`: free K(K−1)/2 values, `z = tanh(u)` in row-major order over the
/// strict lower triangle; out K × K lower-triangular column-major with unit-length rows.
/// log J = `Σ log(1 − z²) + Σ_r Σ_{1≤c<r} ½ log(1 − Σ_{m<c} L(r,m)²)`.
/// `ws` needs K(K−1)/2 entries.
pub fn cholesky_corr_constrain(unc: &[f64], k: usize, out: &mut [f64], ws: &mut [f64]) -> f64 {
    let n = k * k.saturating_sub(1) / 2;
    let mut lj = 0.0;
    for i in 0..n {
        ws[i] = unc[i].tanh();
        lj += log1m_tanh_sq(unc[i]);
    }
    lj + corr_cholesky_from_cpcs(&ws[..n], k, out)
}

/// Adjoint of [`cholesky_corr_constrain`]; `ws` needs K(K−1)/2 + K(K−1)/2 + K entries.
pub(crate) fn cholesky_corr_constrain_adjoint(
    unc: &[f64],
    k: usize,
    out: &[f64],
    out_adj: &[f64],
    unc_adj: &mut [f64],
    ws: &mut [f64],
) {
    let n = k * k.saturating_sub(1) / 2;
    let (z, rest) = ws.split_at_mut(n);
    let (z_adj, prefix) = rest.split_at_mut(n);
    for i in 0..n {
        z[i] = unc[i].tanh();
    }
    corr_cholesky_from_cpcs_adjoint(z, k, out, out_adj, 1.0, z_adj, prefix);
    for i in 0..n {
        unc_adj[i] += z_adj[i] * (1.0 - z[i] * z[i]) - 2.0 * z[i];
    }
}

/// Inverse of [`cholesky_corr_constrain`]; checks lower-triangularity, positive diagonal and
/// unit-length rows. `l` is K × K column-major.
pub(crate) fn cholesky_corr_unconstrain(
    l: &[f64],
    k: usize,
    unc: &mut [f64],
) -> Result<(), TransformError> {
    check_cholesky_corr(l, k)?;
    let mut pos = 0;
    for r in 1..k {
        let mut sum_sqs: f64 = 0.0;
        for c in 0..r {
            let v = l[r + c * k];
            let z = if c == 0 {
                v
            } else {
                v / (1.0 - sum_sqs).sqrt()
            };
            sum_sqs += v * v;
            unc[pos] = z.atanh();
            pos += 1;
        }
    }
    Ok(())
}

fn check_cholesky_corr(l: &[f64], k: usize) -> Result<(), TransformError> {
    for r in 0..k {
        for c in (r + 1)..k {
            if l[r + c * k] != 0.0 {
                return Err(TransformError::new(format!("is not a valid cholesky_factor_corr: element [{}, {}] is above the diagonal and not 0", r + 1, c + 1)));
            }
        }
        if !(l[r + r * k] > 0.0) {
            return Err(TransformError::new(format!(
                "is not a valid cholesky_factor_corr: diagonal element {} is not positive",
                r + 1
            )));
        }
        let ss: f64 = (0..=r).map(|c| l[r + c * k] * l[r + c * k]).sum();
        if !((ss - 1.0).abs() <= CONSTRAINT_TOLERANCE) {
            return Err(TransformError::new(format!(
                "is not a valid cholesky_factor_corr: row {} has squared length {ss}, not 1",
                r + 1
            )));
        }
    }
    Ok(())
}

/// Free size of `cholesky_factor_cov[M, N]`: N(N+1)/2 + (M−N)N.
pub fn cholesky_cov_free_size(m: usize, n: usize) -> usize {
    n * (n + 1) / 2 + m.saturating_sub(n) * n
}

/// `cholesky_factor_cov[M, N]` (M ≥ N): free values fill the lower triangle row by row
/// (`L(0,0), L(1,0), L(1,1), L(2,0), …`), diagonal entries through `exp`, then rows N..M
/// fully; out M × N column-major. log J = Σ of the free diagonal values.
pub(crate) fn cholesky_cov_constrain(unc: &[f64], m: usize, n: usize, out: &mut [f64]) -> f64 {
    for v in out[..m * n].iter_mut() {
        *v = 0.0;
    }
    let mut pos = 0;
    let mut lj = 0.0;
    for r in 0..m {
        for c in 0..n.min(r + 1) {
            if r == c {
                out[r + c * m] = unc[pos].exp();
                lj += unc[pos];
            } else {
                out[r + c * m] = unc[pos];
            }
            pos += 1;
        }
    }
    lj
}

/// Adjoint of [`cholesky_cov_constrain`].
pub(crate) fn cholesky_cov_constrain_adjoint(
    out: &[f64],
    m: usize,
    n: usize,
    out_adj: &[f64],
    unc_adj: &mut [f64],
) {
    let mut pos = 0;
    for r in 0..m {
        for c in 0..n.min(r + 1) {
            let i = r + c * m;
            unc_adj[pos] += if r == c {
                out_adj[i] * out[i] + 1.0
            } else {
                out_adj[i]
            };
            pos += 1;
        }
    }
}

/// Inverse of [`cholesky_cov_constrain`].
pub(crate) fn cholesky_cov_unconstrain(
    l: &[f64],
    m: usize,
    n: usize,
    unc: &mut [f64],
) -> Result<(), TransformError> {
    if m < n {
        return Err(TransformError::new(format!(
            "cholesky_factor_cov[{m}, {n}] needs at least as many rows as columns"
        )));
    }
    let mut pos = 0;
    for r in 0..m {
        for c in 0..n {
            let v = l[r + c * m];
            if c > r {
                if v != 0.0 {
                    return Err(TransformError::new(format!("is not a valid cholesky_factor_cov: element [{}, {}] is above the diagonal and not 0", r + 1, c + 1)));
                }
                continue;
            }
            if r == c {
                if !(v > 0.0) {
                    return Err(TransformError::new(format!("is not a valid cholesky_factor_cov: diagonal element {} is {v}, not positive", r + 1)));
                }
                unc[pos] = v.ln();
            } else {
                unc[pos] = v;
            }
            pos += 1;
        }
    }
    Ok(())
}

/// `cov_matrix[K]`: free K(K+1)/2 values fill a lower-triangular L row by row (diagonal via
/// `exp`), `Σ = L Lᵀ` (K × K column-major). log J = `K log 2 + Σ_k (K − k + 1) log L_kk`
/// (0-based k), Stan's. `ws` needs K² entries (receives L).
pub fn cov_matrix_constrain(unc: &[f64], k: usize, out: &mut [f64], ws: &mut [f64]) -> f64 {
    let l = &mut ws[..k * k];
    cholesky_cov_constrain(unc, k, k, l);
    let mut lj = k as f64 * std::f64::consts::LN_2;
    for d in 0..k {
        lj += (k - d + 1) as f64 * l[d + d * k].ln();
    }
    multiply_lower_tri_self_transpose(l, k, k, out);
    lj
}

/// Adjoint of [`cov_matrix_constrain`]. `ws` needs 2K² entries.
pub(crate) fn cov_matrix_constrain_adjoint(
    unc: &[f64],
    k: usize,
    out_adj: &[f64],
    unc_adj: &mut [f64],
    ws: &mut [f64],
) {
    let (l, l_adj) = ws.split_at_mut(k * k);
    cholesky_cov_constrain(unc, k, k, l);
    // ∂(A · L Lᵀ)/∂L = (A + Aᵀ) L, kept lower-triangular (added to zeros: the same bits as
    // setting it).
    l_adj.fill(0.0);
    multiply_lower_tri_self_transpose_adjoint(l, k, k, out_adj, l_adj);
    let mut pos = 0;
    for r in 0..k {
        for c in 0..=r {
            let i = r + c * k;
            unc_adj[pos] += if r == c {
                l_adj[i] * l[i] + (k - r + 1) as f64
            } else {
                l_adj[i]
            };
            pos += 1;
        }
    }
}

/// Inverse of [`cov_matrix_constrain`]: Cholesky-factor Σ, then take logs of the diagonal.
pub fn cov_matrix_unconstrain(
    sigma: &[f64],
    k: usize,
    unc: &mut [f64],
) -> Result<(), TransformError> {
    check_symmetric(sigma, k, "cov_matrix")?;
    let mut l = vec![0.0; k * k];
    cholesky_lower_llt(sigma, k, &mut l).map_err(|_| {
        TransformError::new("is not a valid cov_matrix: it is not positive definite")
    })?;
    cholesky_cov_unconstrain(&l, k, k, unc)
}

fn check_symmetric(a: &[f64], k: usize, what: &str) -> Result<(), TransformError> {
    for j in 0..k {
        for i in (j + 1)..k {
            if !((a[i + j * k] - a[j + i * k]).abs() <= CONSTRAINT_TOLERANCE) {
                return Err(TransformError::new(format!(
                    "is not a valid {what}: element [{}, {}] differs from [{}, {}]",
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

/// Position of CPC (r, c) (r > c) in Stan's `corr_matrix` order (column-major over the strict
/// lower triangle) and in the row-major order used internally.
fn cpc_column_major_index(r: usize, c: usize, k: usize) -> usize {
    // Columns 0..c hold (k−1) + (k−2) + … + (k−c) entries.
    c * (2 * k - c - 1) / 2 + (r - c - 1)
}
fn cpc_row_major_index(r: usize, c: usize) -> usize {
    r * (r - 1) / 2 + c
}

/// `corr_matrix[K]`: free K(K−1)/2 values, CPCs `z = tanh(u)` in column-major order over the
/// strict lower triangle, `L` built from them, `Ω = L Lᵀ` (K × K column-major).
/// log J = `Σ log(1 − z²) + ½ Σ_{c < K−2} Σ_{r > c} (K − c − 2) log(1 − z_rc²)` (Stan's, from
/// Joe 2006 / LKJ 2009). `ws` needs K² + K(K−1)/2 entries.
pub fn corr_matrix_constrain(unc: &[f64], k: usize, out: &mut [f64], ws: &mut [f64]) -> f64 {
    let n = k * k.saturating_sub(1) / 2;
    let (l, z) = ws.split_at_mut(k * k);
    let mut lj = 0.0;
    for c in 0..k {
        for r in (c + 1)..k {
            let u = unc[cpc_column_major_index(r, c, k)];
            let t = u.tanh();
            z[cpc_row_major_index(r, c)] = t;
            let log1m_z2 = log1m_tanh_sq(u);
            lj += log1m_z2 + 0.5 * (k as f64 - c as f64 - 2.0) * log1m_z2;
        }
    }
    corr_cholesky_from_cpcs(&z[..n], k, l);
    multiply_lower_tri_self_transpose(l, k, k, out);
    lj
}

/// Adjoint of [`corr_matrix_constrain`]. `ws` needs 2K² + 2·K(K−1)/2 + K entries.
pub(crate) fn corr_matrix_constrain_adjoint(
    unc: &[f64],
    k: usize,
    out_adj: &[f64],
    unc_adj: &mut [f64],
    ws: &mut [f64],
) {
    let n = k * k.saturating_sub(1) / 2;
    let (l, rest) = ws.split_at_mut(k * k);
    let (l_adj, rest) = rest.split_at_mut(k * k);
    let (z, rest) = rest.split_at_mut(n);
    let (z_adj, prefix) = rest.split_at_mut(n);
    for c in 0..k {
        for r in (c + 1)..k {
            z[cpc_row_major_index(r, c)] = unc[cpc_column_major_index(r, c, k)].tanh();
        }
    }
    corr_cholesky_from_cpcs(z, k, l);
    l_adj.fill(0.0);
    multiply_lower_tri_self_transpose_adjoint(l, k, k, out_adj, l_adj);
    corr_cholesky_from_cpcs_adjoint(z, k, l, l_adj, 0.0, z_adj, prefix);
    for c in 0..k {
        for r in (c + 1)..k {
            let t = z[cpc_row_major_index(r, c)];
            let weight = 1.0 + 0.5 * (k as f64 - c as f64 - 2.0);
            unc_adj[cpc_column_major_index(r, c, k)] +=
                z_adj[cpc_row_major_index(r, c)] * (1.0 - t * t) - 2.0 * weight * t;
        }
    }
}

/// Inverse of [`corr_matrix_constrain`].
pub fn corr_matrix_unconstrain(
    omega: &[f64],
    k: usize,
    unc: &mut [f64],
) -> Result<(), TransformError> {
    for d in 0..k {
        if !((omega[d + d * k] - 1.0).abs() <= CONSTRAINT_TOLERANCE) {
            return Err(TransformError::new(format!(
                "is not a valid corr_matrix: diagonal element {} is {}, not 1",
                d + 1,
                omega[d + d * k]
            )));
        }
    }
    check_symmetric(omega, k, "corr_matrix")?;
    let mut l = vec![0.0; k * k];
    cholesky_lower_llt(omega, k, &mut l).map_err(|_| {
        TransformError::new("is not a valid corr_matrix: it is not positive definite")
    })?;
    // Renormalise rows (the diagonal is 1 only to tolerance) before reading the CPCs.
    for r in 0..k {
        let norm: f64 = (0..=r)
            .map(|c| l[r + c * k] * l[r + c * k])
            .sum::<f64>()
            .sqrt();
        for c in 0..=r {
            l[r + c * k] /= norm;
        }
    }
    let mut row_major = vec![0.0; k * k.saturating_sub(1) / 2];
    cholesky_corr_unconstrain(&l, k, &mut row_major)?;
    for c in 0..k {
        for r in (c + 1)..k {
            unc[cpc_column_major_index(r, c, k)] = row_major[cpc_row_major_index(r, c)];
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// One entry point for the structured (parameter-free) transforms.
// ---------------------------------------------------------------------------------------------

/// A structured constrained type with its sizes; dispatches to the functions above.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Structured {
    Ordered { k: usize },
    PositiveOrdered { k: usize },
    Simplex { k: usize },
    UnitVector { k: usize },
    SumToZeroVector { k: usize },
    SumToZeroMatrix { rows: usize, cols: usize },
    CholeskyFactorCorr { k: usize },
    CholeskyFactorCov { rows: usize, cols: usize },
    CovMatrix { k: usize },
    CorrMatrix { k: usize },
    ColumnStochastic { rows: usize, cols: usize },
    RowStochastic { rows: usize, cols: usize },
}

impl Structured {
    /// Number of unconstrained values.
    pub fn free_len(&self) -> usize {
        match *self {
            Structured::Ordered { k }
            | Structured::PositiveOrdered { k }
            | Structured::UnitVector { k } => k,
            Structured::Simplex { k } | Structured::SumToZeroVector { k } => k.saturating_sub(1),
            Structured::SumToZeroMatrix { rows, cols } => {
                rows.saturating_sub(1) * cols.saturating_sub(1)
            }
            Structured::CholeskyFactorCorr { k } | Structured::CorrMatrix { k } => {
                k * k.saturating_sub(1) / 2
            }
            Structured::CholeskyFactorCov { rows, cols } => cholesky_cov_free_size(rows, cols),
            Structured::CovMatrix { k } => k * (k + 1) / 2,
            Structured::ColumnStochastic { rows, cols } => rows.saturating_sub(1) * cols,
            Structured::RowStochastic { rows, cols } => rows * cols.saturating_sub(1),
        }
    }

    /// Number of constrained values (matrices column-major).
    pub fn constrained_len(&self) -> usize {
        match *self {
            Structured::Ordered { k }
            | Structured::PositiveOrdered { k }
            | Structured::UnitVector { k }
            | Structured::Simplex { k }
            | Structured::SumToZeroVector { k } => k,
            Structured::CholeskyFactorCorr { k }
            | Structured::CorrMatrix { k }
            | Structured::CovMatrix { k } => k * k,
            Structured::SumToZeroMatrix { rows, cols }
            | Structured::CholeskyFactorCov { rows, cols }
            | Structured::ColumnStochastic { rows, cols }
            | Structured::RowStochastic { rows, cols } => rows * cols,
        }
    }

    /// Scratch length that both [`Structured::constrain`] and
    /// [`Structured::constrain_adjoint`] need.
    pub fn workspace_len(&self) -> usize {
        match *self {
            Structured::Ordered { .. }
            | Structured::PositiveOrdered { .. }
            | Structured::UnitVector { .. }
            | Structured::SumToZeroVector { .. } => 0,
            Structured::CholeskyFactorCov { .. } => 0,
            Structured::Simplex { k } => k,
            Structured::SumToZeroMatrix { rows, cols } => rows * cols.saturating_sub(1) + rows,
            Structured::CholeskyFactorCorr { k } => k * k.saturating_sub(1) + k,
            Structured::CovMatrix { k } => 2 * k * k,
            Structured::CorrMatrix { k } => 2 * k * k + k * k.saturating_sub(1) + k,
            Structured::ColumnStochastic { rows, .. } => rows,
            Structured::RowStochastic { cols, .. } => 4 * cols,
        }
    }

    /// Writes the constrained value into `out` and returns the log-Jacobian.
    /// Slices: `unc` free_len, `out` constrained_len, `ws` workspace_len.
    pub fn constrain(
        &self,
        unc: &[f64],
        out: &mut [f64],
        ws: &mut [f64],
    ) -> Result<f64, TransformError> {
        Ok(match *self {
            Structured::Ordered { .. } => ordered_constrain(unc, out),
            Structured::PositiveOrdered { .. } => positive_ordered_constrain(unc, out),
            Structured::Simplex { .. } => simplex_constrain(unc, out),
            Structured::UnitVector { .. } => unit_vector_constrain(unc, out)?,
            Structured::SumToZeroVector { .. } => sum_to_zero_constrain(unc, out),
            Structured::SumToZeroMatrix { rows, cols } => {
                sum_to_zero_matrix_constrain(unc, rows, cols, out, ws)
            }
            Structured::CholeskyFactorCorr { k } => cholesky_corr_constrain(unc, k, out, ws),
            Structured::CholeskyFactorCov { rows, cols } => {
                cholesky_cov_constrain(unc, rows, cols, out)
            }
            Structured::CovMatrix { k } => cov_matrix_constrain(unc, k, out, ws),
            Structured::CorrMatrix { k } => corr_matrix_constrain(unc, k, out, ws),
            Structured::ColumnStochastic { rows, cols } => {
                column_stochastic_constrain(unc, rows, cols, out)
            }
            Structured::RowStochastic { rows, cols } => {
                row_stochastic_constrain(unc, rows, cols, out, ws)
            }
        })
    }

    /// Adds `∂/∂unc [out_adj · out + log J]` to `unc_adj` (see the module documentation);
    /// `out` is what [`Structured::constrain`] wrote for this `unc`.
    pub fn constrain_adjoint(
        &self,
        unc: &[f64],
        out: &[f64],
        out_adj: &[f64],
        unc_adj: &mut [f64],
        ws: &mut [f64],
    ) {
        match *self {
            Structured::Ordered { .. } => ordered_constrain_adjoint(unc, out_adj, unc_adj),
            Structured::PositiveOrdered { .. } => {
                positive_ordered_constrain_adjoint(unc, out_adj, unc_adj)
            }
            Structured::Simplex { .. } => simplex_constrain_adjoint(out, out_adj, unc_adj, ws),
            Structured::UnitVector { .. } => {
                unit_vector_constrain_adjoint(unc, out, out_adj, unc_adj)
            }
            Structured::SumToZeroVector { .. } => sum_to_zero_constrain_adjoint(out_adj, unc_adj),
            Structured::SumToZeroMatrix { rows, cols } => {
                sum_to_zero_matrix_constrain_adjoint(out_adj, rows, cols, unc_adj, ws)
            }
            Structured::CholeskyFactorCorr { k } => {
                cholesky_corr_constrain_adjoint(unc, k, out, out_adj, unc_adj, ws)
            }
            Structured::CholeskyFactorCov { rows, cols } => {
                cholesky_cov_constrain_adjoint(out, rows, cols, out_adj, unc_adj)
            }
            Structured::CovMatrix { k } => {
                cov_matrix_constrain_adjoint(unc, k, out_adj, unc_adj, ws)
            }
            Structured::CorrMatrix { k } => {
                corr_matrix_constrain_adjoint(unc, k, out_adj, unc_adj, ws)
            }
            Structured::ColumnStochastic { rows, cols } => {
                column_stochastic_constrain_adjoint(out, rows, cols, out_adj, unc_adj, ws)
            }
            Structured::RowStochastic { rows, cols } => {
                row_stochastic_constrain_adjoint(out, rows, cols, out_adj, unc_adj, ws)
            }
        }
    }

    /// The free values for a constrained value `x` (for user-supplied initial values).
    pub fn unconstrain(&self, x: &[f64], unc: &mut [f64]) -> Result<(), TransformError> {
        if x.len() != self.constrained_len() || unc.len() != self.free_len() {
            return Err(TransformError::new(format!(
                "has {} values, but {} are needed",
                x.len(),
                self.constrained_len()
            )));
        }
        if let Some(i) = x.iter().position(|v| v.is_nan()) {
            return Err(TransformError::new(format!("element {} is NaN", i + 1)));
        }
        match *self {
            Structured::Ordered { .. } => ordered_unconstrain(x, unc),
            Structured::PositiveOrdered { .. } => positive_ordered_unconstrain(x, unc),
            Structured::Simplex { .. } => simplex_unconstrain(x, unc),
            Structured::UnitVector { .. } => unit_vector_unconstrain(x, unc),
            Structured::SumToZeroVector { .. } => sum_to_zero_unconstrain(x, unc),
            Structured::SumToZeroMatrix { rows, cols } => {
                sum_to_zero_matrix_unconstrain(x, rows, cols, unc)
            }
            Structured::CholeskyFactorCorr { k } => cholesky_corr_unconstrain(x, k, unc),
            Structured::CholeskyFactorCov { rows, cols } => {
                cholesky_cov_unconstrain(x, rows, cols, unc)
            }
            Structured::CovMatrix { k } => cov_matrix_unconstrain(x, k, unc),
            Structured::CorrMatrix { k } => corr_matrix_unconstrain(x, k, unc),
            Structured::ColumnStochastic { rows, cols } => {
                column_stochastic_unconstrain(x, rows, cols, unc)
            }
            Structured::RowStochastic { rows, cols } => {
                row_stochastic_unconstrain(x, rows, cols, unc)
            }
        }
    }
}
