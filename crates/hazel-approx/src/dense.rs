//! The few vector and matrix helpers the algorithms share. Matrices are column-major `f64`
//! slices (`a[i + j·rows]`), as in `hazel_math::linalg`, which supplies the factorisations.
//! Every sum runs left to right, so results never depend on anything but the inputs.

/// `Σ a_i b_i`, left to right.
pub(crate) fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).fold(0.0, |s, (x, y)| s + x * y)
}

/// Euclidean norm.
pub(crate) fn norm(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}

/// `y += a x`.
pub(crate) fn axpy(a: f64, x: &[f64], y: &mut [f64]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi += a * xi;
    }
}

/// `out = A x` for the `rows × cols` matrix `A`.
pub(crate) fn mat_vec(a: &[f64], rows: usize, cols: usize, x: &[f64], out: &mut [f64]) {
    out[..rows].iter_mut().for_each(|o| *o = 0.0);
    for j in 0..cols {
        let xj = x[j];
        let col = &a[j * rows..(j + 1) * rows];
        for i in 0..rows {
            out[i] += col[i] * xj;
        }
    }
}

/// `out = Aᵀ x` for the `rows × cols` matrix `A`.
pub(crate) fn mat_t_vec(a: &[f64], rows: usize, cols: usize, x: &[f64], out: &mut [f64]) {
    for j in 0..cols {
        out[j] = dot(&a[j * rows..(j + 1) * rows], &x[..rows]);
    }
}

/// `out = A B` for `A` (`m × k`) and `B` (`k × n`).
pub(crate) fn mat_mul(a: &[f64], m: usize, k: usize, b: &[f64], n: usize, out: &mut [f64]) {
    for j in 0..n {
        mat_vec(
            a,
            m,
            k,
            &b[j * k..(j + 1) * k],
            &mut out[j * m..(j + 1) * m],
        );
    }
}

/// The transpose of the `rows × cols` matrix `a`.
pub(crate) fn transpose(a: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let mut t = vec![0.0; rows * cols];
    for j in 0..cols {
        for i in 0..rows {
            t[j + i * cols] = a[i + j * rows];
        }
    }
    t
}

/// The lower Cholesky factor of the symmetric positive-definite `n × n` matrix `a`, or `None`
/// when it is not positive definite (or not finite).
pub(crate) fn cholesky(a: &[f64], n: usize) -> Option<Vec<f64>> {
    let mut l = vec![0.0; n * n];
    hazel_math::linalg::cholesky_decompose(a, n, &mut l).ok()?;
    Some(l)
}

/// `out = L x` for the lower-triangular `n × n` matrix `L`.
pub(crate) fn lower_mul(l: &[f64], n: usize, x: &[f64], out: &mut [f64]) {
    for i in 0..n {
        let mut s = 0.0;
        for k in 0..=i {
            s += l[i + k * n] * x[k];
        }
        out[i] = s;
    }
}
