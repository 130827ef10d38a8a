//! Solves and determinants (hazel_math::linalg::solve): values against residuals and closed
//! forms, adjoints against central finite differences, errors against Stan's rules.

use hazel_math::linalg::*;

struct Rng(u64);
impl Rng {
    fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
    fn vec(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| 2.0 * self.uniform() - 1.0).collect()
    }
    /// A well-conditioned SPD matrix.
    fn spd(&mut self, n: usize) -> Vec<f64> {
        let a = self.vec(n * n);
        let mut s = vec![0.0; n * n];
        tcrossprod(&a, n, n, &mut s);
        for i in 0..n {
            s[i + i * n] += n as f64;
        }
        s
    }
}

const H: f64 = 1e-6;

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(1.0)
}

/// Checks `grad` against finite differences of `f` at `x`, in every coordinate in `coords`.
fn check(
    what: &str,
    x: &[f64],
    grad: &[f64],
    coords: impl Iterator<Item = usize>,
    f: &dyn Fn(&[f64]) -> f64,
) {
    for i in coords {
        let (mut xp, mut xm) = (x.to_vec(), x.to_vec());
        xp[i] += H;
        xm[i] -= H;
        let fd = (f(&xp) - f(&xm)) / (2.0 * H);
        assert!(
            rel(grad[i], fd) < 1e-6,
            "{what}: d/dx[{i}] = {} vs finite difference {fd}",
            grad[i]
        );
    }
}

/// Checks a symmetric-matrix gradient: perturbing (i, j) and (j, i) together must change f by
/// `g_ij + g_ji`.
fn check_symmetric_pairs(what: &str, a: &[f64], n: usize, grad: &[f64], f: &dyn Fn(&[f64]) -> f64) {
    for j in 0..n {
        for i in j..n {
            let (mut ap, mut am) = (a.to_vec(), a.to_vec());
            ap[i + j * n] += H;
            am[i + j * n] -= H;
            if i != j {
                ap[j + i * n] += H;
                am[j + i * n] -= H;
            }
            let fd = (f(&ap) - f(&am)) / (2.0 * H);
            let g = if i == j {
                grad[i + j * n]
            } else {
                grad[i + j * n] + grad[j + i * n]
            };
            assert!(
                rel(g, fd) < 1e-6,
                "{what}: pair ({i},{j}) = {g} vs finite difference {fd}"
            );
        }
    }
}

fn weighted(c: &[f64], v: &[f64]) -> f64 {
    c.iter().zip(v).map(|(a, b)| a * b).sum()
}

fn general(rng: &mut Rng, n: usize) -> Vec<f64> {
    // Off-diagonal dominance is avoided on purpose so that partial pivoting swaps rows.
    let mut a = rng.vec(n * n);
    a[0] *= 0.05;
    for i in 1..n {
        a[i + i * n] += if i % 2 == 0 { 2.0 } else { -2.0 };
    }
    a
}

fn assert_close(x: &[f64], y: &[f64], tol: f64, what: &str) {
    assert_eq!(x.len(), y.len());
    for (i, (a, b)) in x.iter().zip(y).enumerate() {
        assert!(rel(*a, *b) < tol, "{what}[{i}]: {a} vs {b}");
    }
}

#[test]
fn lu_pivots_and_solves_both_ways() {
    let mut rng = Rng(11);
    for n in [1, 2, 3, 5] {
        let a = general(&mut rng, n);
        let mut f = vec![0.0; factor_len(n)];
        lu_factor(&a, n, &mut f).unwrap();
        if n > 1 {
            assert_ne!(f[n * n] as usize, 0, "the test matrix must pivot");
        }
        let m = 3;
        let b = rng.vec(n * m);
        let mut x = b.clone();
        lu_solve(&f, n, &mut x, m);
        let mut ax = vec![0.0; n * m];
        multiply(&a, n, n, &x, m, &mut ax);
        assert_close(&ax, &b, 1e-13, "A x");
        let mut y = b.clone();
        lu_solve_transpose(&f, n, &mut y, m);
        let mut at = vec![0.0; n * n];
        for j in 0..n {
            for i in 0..n {
                at[i + j * n] = a[j + i * n];
            }
        }
        multiply(&at, n, n, &y, m, &mut ax);
        assert_close(&ax, &b, 1e-13, "Aᵀ y");
    }
}

#[test]
fn solve_values() {
    let mut rng = Rng(12);
    let n = 4;
    let m = 3;
    let b = rng.vec(n * m);
    for (kind, a) in [
        (Factor::Lu, general(&mut rng, n)),
        (Factor::Spd, rng.spd(n)),
    ] {
        let mut f = vec![0.0; factor_len(n)];
        let mut x = vec![0.0; n * m];
        mdivide_left(kind, &a, n, &b, m, &mut x, &mut f).unwrap();
        let mut ax = vec![0.0; n * m];
        multiply(&a, n, n, &x, m, &mut ax);
        assert_close(&ax, &b, 1e-13, "mdivide_left");
        // B is m × n on the right.
        let br = rng.vec(m * n);
        let mut xr = vec![0.0; m * n];
        let mut tmp = vec![0.0; n];
        mdivide_right(kind, &br, m, &a, n, &mut xr, &mut f, &mut tmp).unwrap();
        let mut xa = vec![0.0; m * n];
        multiply(&xr, m, n, &a, n, &mut xa);
        assert_close(&xa, &br, 1e-13, "mdivide_right");
    }
}

#[test]
fn determinant_values() {
    let mut f = vec![0.0; factor_len(3)];
    // det of [[0, 2, 0], [1, 0, 0], [0, 0, 3]] (one row swap) is −6.
    let a = [0.0, 1.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 3.0];
    assert!(rel(determinant(&a, 3, &mut f), -6.0) < 1e-15);
    assert!(rel(log_abs_determinant(&a, 3, &mut f).unwrap(), 6f64.ln()) < 1e-15);
    // Triangular: the product of the diagonal.
    let t = [2.0, 5.0, -1.0, 0.0, -3.0, 4.0, 0.0, 0.0, 0.5];
    assert!(rel(determinant(&t, 3, &mut f), -3.0) < 1e-15);
    // Singular: 0 (as Eigen), while log_determinant rejects.
    let s = [1.0, 2.0, 2.0, 4.0];
    assert_eq!(determinant(&s, 2, &mut f), 0.0);
    assert!(log_abs_determinant(&s, 2, &mut f).is_err());
    assert!(determinant(&[f64::NAN, 0.0, 0.0, 1.0], 2, &mut f).is_nan());
    // det(A) agrees with exp(log|det A|) on a pivoting matrix.
    let mut rng = Rng(13);
    let g = general(&mut rng, 5);
    let mut f = vec![0.0; factor_len(5)];
    let d = determinant(&g, 5, &mut f);
    let ld = log_abs_determinant(&g, 5, &mut f).unwrap();
    assert!(rel(d.abs().ln(), ld) < 1e-13);
    // and with the existing log_determinant.
    let mut ws = vec![0.0; 25];
    let mut perm = [0usize; 5];
    assert!(rel(log_determinant(&g, 5, &mut ws, &mut perm).unwrap(), ld) < 1e-15);
}

#[test]
fn solve_adjoints() {
    let mut rng = Rng(14);
    let n = 4;
    let m = 2;
    for (kind, a) in [
        (Factor::Lu, general(&mut rng, n)),
        (Factor::Spd, rng.spd(n)),
    ] {
        let b = rng.vec(n * m);
        let c = rng.vec(n * m);
        let left = |a: &[f64], b: &[f64]| {
            let mut f = vec![0.0; factor_len(n)];
            let mut x = vec![0.0; n * m];
            mdivide_left(kind, a, n, b, m, &mut x, &mut f).unwrap();
            (x, f)
        };
        let (x, f) = left(&a, &b);
        let mut ga = vec![0.0; n * n];
        let mut gb = vec![0.0; n * m];
        let mut tmp = vec![0.0; n * m];
        mdivide_left_adjoint(
            kind,
            &f,
            n,
            &x,
            m,
            &c,
            Some(&mut ga),
            Some(&mut gb),
            &mut tmp,
        );
        let fa = |a: &[f64]| weighted(&c, &left(a, &b).0);
        match kind {
            Factor::Lu => check("mdivide_left A", &a, &ga, 0..n * n, &fa),
            Factor::Spd => check_symmetric_pairs("mdivide_left_spd A", &a, n, &ga, &fa),
        }
        check("mdivide_left b", &b, &gb, 0..n * m, &|b: &[f64]| {
            weighted(&c, &left(&a, b).0)
        });

        let br = rng.vec(m * n);
        let cr = rng.vec(m * n);
        let right = |a: &[f64], b: &[f64]| {
            let mut f = vec![0.0; factor_len(n)];
            let mut x = vec![0.0; m * n];
            let mut t = vec![0.0; n];
            mdivide_right(kind, b, m, a, n, &mut x, &mut f, &mut t).unwrap();
            (x, f)
        };
        let (x, f) = right(&a, &br);
        let mut ga = vec![0.0; n * n];
        let mut gb = vec![0.0; m * n];
        let mut tmp = vec![0.0; m * n + n];
        mdivide_right_adjoint(
            kind,
            &f,
            m,
            n,
            &x,
            &cr,
            Some(&mut ga),
            Some(&mut gb),
            &mut tmp,
        );
        let fa = |a: &[f64]| weighted(&cr, &right(a, &br).0);
        match kind {
            Factor::Lu => check("mdivide_right A", &a, &ga, 0..n * n, &fa),
            Factor::Spd => check_symmetric_pairs("mdivide_right_spd A", &a, n, &ga, &fa),
        }
        check("mdivide_right b", &br, &gb, 0..m * n, &|b: &[f64]| {
            weighted(&cr, &right(&a, b).0)
        });
    }
}

#[test]
fn determinant_adjoints() {
    let mut rng = Rng(15);
    let n = 4;
    let a = general(&mut rng, n);
    let mut f = vec![0.0; factor_len(n)];
    let d = determinant(&a, n, &mut f);
    let mut ga = vec![0.0; n * n];
    let mut tmp = vec![0.0; n * n];
    add_scaled_inverse_transpose(Factor::Lu, &f, n, 0.8 * d, &mut ga, &mut tmp);
    check("determinant", &a, &ga, 0..n * n, &|a: &[f64]| {
        let mut f = vec![0.0; factor_len(n)];
        0.8 * determinant(a, n, &mut f)
    });
    let mut ga = vec![0.0; n * n];
    log_abs_determinant(&a, n, &mut f).unwrap();
    add_scaled_inverse_transpose(Factor::Lu, &f, n, -1.7, &mut ga, &mut tmp);
    check("log_determinant", &a, &ga, 0..n * n, &|a: &[f64]| {
        let mut f = vec![0.0; factor_len(n)];
        -1.7 * log_abs_determinant(a, n, &mut f).unwrap()
    });
    // log_determinant_spd leaves L in the first n² entries, which is Factor::Spd's layout.
    let s = rng.spd(n);
    let mut ga = vec![0.0; n * n];
    log_determinant_spd(&s, n, &mut f).unwrap();
    add_scaled_inverse_transpose(Factor::Spd, &f, n, 0.6, &mut ga, &mut tmp);
    check_symmetric_pairs("log_determinant_spd", &s, n, &ga, &|a: &[f64]| {
        let mut ws = vec![0.0; n * n];
        0.6 * log_determinant_spd(a, n, &mut ws).unwrap()
    });
}

#[test]
fn errors_follow_stan() {
    let mut f = vec![0.0; factor_len(2)];
    let mut x = vec![0.0; 2];
    let nonsym = [2.0, 1.0, 0.5, 2.0];
    let e = mdivide_left(Factor::Spd, &nonsym, 2, &[1.0, 1.0], 1, &mut x, &mut f).unwrap_err();
    assert!(
        e.message
            .starts_with("mdivide_left_spd: A is not symmetric"),
        "{}",
        e.message
    );
    let indefinite = [1.0, 2.0, 2.0, 1.0];
    let e = mdivide_left(Factor::Spd, &indefinite, 2, &[1.0, 1.0], 1, &mut x, &mut f).unwrap_err();
    assert_eq!(e.message, "mdivide_left_spd: A is not positive definite");
    let mut t = vec![0.0; 2];
    let e = mdivide_right(
        Factor::Spd,
        &[1.0, 1.0],
        1,
        &indefinite,
        2,
        &mut x,
        &mut f,
        &mut t,
    )
    .unwrap_err();
    assert_eq!(e.message, "mdivide_right_spd: A is not positive definite");
    let singular = [1.0, 2.0, 2.0, 4.0];
    let e = mdivide_left(Factor::Lu, &singular, 2, &[1.0, 1.0], 1, &mut x, &mut f).unwrap_err();
    assert_eq!(e.message, "mdivide_left: A is singular");
    assert!(check_lower_triangular("chol2inv", "L", &[1.0, 0.0, 0.0, 1.0], 2).is_ok());
    let e = check_lower_triangular("chol2inv", "L", &[1.0, 0.0, 0.3, 1.0], 2).unwrap_err();
    assert_eq!(e.message, "chol2inv: L is not lower triangular; L[1,2]=0.3");
}

// ---------------------------------------------------------------------------------------------
// Symmetric eigendecomposition and the matrix exponential (linalg::eigen).
// ---------------------------------------------------------------------------------------------

fn eig(a: &[f64], n: usize) -> (Vec<f64>, Vec<f64>) {
    let (mut l, mut v, mut ws) = (vec![0.0; n], vec![0.0; n * n], vec![0.0; n * n]);
    eigen_sym("eigenvalues_sym", a, n, &mut l, &mut v, &mut ws).unwrap();
    (l, v)
}

fn sym(rng: &mut Rng, n: usize) -> Vec<f64> {
    let mut a = rng.vec(n * n);
    for j in 0..n {
        for i in 0..j {
            a[i + j * n] = a[j + i * n];
        }
    }
    a
}

#[test]
fn eigen_sym_values() {
    let mut rng = Rng(21);
    for n in [1, 2, 3, 6, 40] {
        let a = sym(&mut rng, n);
        let (l, v) = eig(&a, n);
        // A V = V Λ, Vᵀ V = I, ascending, largest entry of each vector positive.
        let mut av = vec![0.0; n * n];
        multiply(&a, n, n, &v, n, &mut av);
        for j in 0..n {
            for i in 0..n {
                let res = (av[i + j * n] - v[i + j * n] * l[j]).abs();
                assert!(res < 2e-15 * n as f64, "A v = λ v: {res} (n = {n})");
            }
            if j > 0 {
                assert!(l[j - 1] <= l[j]);
            }
            let col = &v[j * n..(j + 1) * n];
            let big = col
                .iter()
                .fold(0.0f64, |m, x| if x.abs() > m.abs() { *x } else { m });
            assert!(big > 0.0);
        }
        let mut vtv = vec![0.0; n * n];
        crossprod(&v, n, n, &mut vtv);
        for j in 0..n {
            for i in 0..n {
                let want = if i == j { 1.0 } else { 0.0 };
                assert!((vtv[i + j * n] - want).abs() < 1e-14, "VᵀV");
            }
        }
    }
    // Closed form: [[2, 1], [1, 2]] has eigenvalues 1, 3 and vectors (1, ∓1)/√2.
    let (l, v) = eig(&[2.0, 1.0, 1.0, 2.0], 2);
    assert!(rel(l[0], 1.0) < 1e-15 && rel(l[1], 3.0) < 1e-15);
    let h = std::f64::consts::FRAC_1_SQRT_2;
    assert!(rel(v[2], h) < 1e-15 && rel(v[3], h) < 1e-15);
    assert!(rel(v[0].abs(), h) < 1e-15 && rel(v[1], -v[0]) < 1e-15);
    let (mut l, mut v, mut ws) = (vec![0.0; 2], vec![0.0; 4], vec![0.0; 4]);
    let e = eigen_sym(
        "eigenvalues_sym",
        &[1.0, 0.5, 0.0, 1.0],
        2,
        &mut l,
        &mut v,
        &mut ws,
    )
    .unwrap_err();
    assert!(
        e.message.starts_with("eigenvalues_sym: m is not symmetric"),
        "{}",
        e.message
    );
}

#[test]
fn eigen_sym_adjoints() {
    let mut rng = Rng(22);
    let n = 4;
    let a = sym(&mut rng, n);
    let (l, v) = eig(&a, n);
    let cl = rng.vec(n);
    let cv = rng.vec(n * n);
    let mut ga = vec![0.0; n * n];
    eigenvalues_sym_adjoint(&v, n, &cl, &mut ga);
    check_symmetric_pairs("eigenvalues_sym", &a, n, &ga, &|a: &[f64]| {
        weighted(&cl, &eig(a, n).0)
    });
    let mut ga = vec![0.0; n * n];
    let mut ws = vec![0.0; 2 * n * n];
    eigenvectors_sym_adjoint(&l, &v, n, &cv, &mut ga, &mut ws);
    check_symmetric_pairs("eigenvectors_sym", &a, n, &ga, &|a: &[f64]| {
        weighted(&cv, &eig(a, n).1)
    });
}

fn expm(a: &[f64], n: usize) -> Vec<f64> {
    let mut out = vec![0.0; n * n];
    let mut ws = vec![0.0; matrix_exp_workspace_len(n)];
    matrix_exp(a, n, &mut out, &mut ws).unwrap();
    out
}

#[test]
fn matrix_exp_values() {
    // Rotation generator: exp([[0, −t], [t, 0]]) = [[cos t, −sin t], [sin t, cos t]].
    let t = 0.7f64;
    let r = expm(&[0.0, t, -t, 0.0], 2);
    assert_close(
        &r,
        &[t.cos(), t.sin(), -t.sin(), t.cos()],
        1e-15,
        "rotation",
    );
    // Nilpotent: exp(N) = I + N.
    let r = expm(&[0.0, 0.0, 0.0, 2.5, 0.0, 0.0, 0.0, 0.0, 0.0], 3);
    assert_close(
        &r,
        &[1.0, 0.0, 0.0, 2.5, 1.0, 0.0, 0.0, 0.0, 1.0],
        1e-15,
        "nilpotent",
    );
    // P D P⁻¹ with a large norm (the scaling-and-squaring path): exp = P exp(D) P⁻¹.
    let mut rng = Rng(23);
    let n = 4;
    let p = general(&mut rng, n);
    let d = [-3.0, 0.5, 4.0, 9.0];
    let (mut pd, mut ped) = (p.clone(), p.clone());
    for j in 0..n {
        for i in 0..n {
            pd[i + j * n] *= d[j];
            ped[i + j * n] *= d[j].exp();
        }
    }
    let mut f = vec![0.0; factor_len(n)];
    let mut tmp = vec![0.0; n];
    let (mut a, mut want) = (vec![0.0; n * n], vec![0.0; n * n]);
    mdivide_right(Factor::Lu, &pd, n, &p, n, &mut a, &mut f, &mut tmp).unwrap();
    mdivide_right(Factor::Lu, &ped, n, &p, n, &mut want, &mut f, &mut tmp).unwrap();
    let got = expm(&a, n);
    let scale = want.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() < 1e-12 * scale, "exp(P D P⁻¹): {g} vs {w}");
    }
    // exp(A) exp(−A) = I.
    let b = rng.vec(9);
    let nb: Vec<f64> = b.iter().map(|x| -x).collect();
    let mut prod = vec![0.0; 9];
    multiply(&expm(&b, 3), 3, 3, &expm(&nb, 3), 3, &mut prod);
    assert_close(
        &prod,
        &[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
        1e-14,
        "exp(A)exp(−A)",
    );
    let mut ws = vec![0.0; matrix_exp_workspace_len(1)];
    assert!(matrix_exp(&[f64::NAN], 1, &mut [0.0], &mut ws).is_err());
}

#[test]
fn matrix_exp_adjoint_matches_finite_differences() {
    let mut rng = Rng(24);
    for (n, scale) in [(3, 1.0), (3, 4.0)] {
        let a: Vec<f64> = rng.vec(n * n).iter().map(|x| x * scale).collect();
        let c = rng.vec(n * n);
        let mut ga = vec![0.0; n * n];
        let mut ws = vec![0.0; matrix_exp_adjoint_workspace_len(n)];
        matrix_exp_adjoint(&a, n, &c, &mut ga, &mut ws).unwrap();
        check("matrix_exp", &a, &ga, 0..n * n, &|a: &[f64]| {
            weighted(&c, &expm(a, n))
        });
    }
}

// ---------------------------------------------------------------------------------------------
// Singular value decomposition (linalg::svd).
// ---------------------------------------------------------------------------------------------

fn thin_svd(a: &[f64], m: usize, n: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let k = m.min(n);
    let (mut s, mut u, mut v) = (vec![0.0; k], vec![0.0; m * k], vec![0.0; n * k]);
    let mut ws = vec![0.0; svd_workspace_len(m, n)];
    svd("svd", a, m, n, &mut s, &mut u, &mut v, &mut ws).unwrap();
    (s, u, v)
}

#[test]
fn svd_values() {
    let mut rng = Rng(31);
    for (m, n) in [(1, 1), (4, 2), (2, 4), (3, 3), (5, 3), (30, 20), (20, 30)] {
        let a = rng.vec(m * n);
        let k = m.min(n);
        let (s, u, v) = thin_svd(&a, m, n);
        // A = U Σ Vᵀ, UᵀU = VᵀV = I, σ descending and non-negative, sign rule on U.
        for j in 0..n {
            for i in 0..m {
                let x: f64 = (0..k).map(|c| u[i + c * m] * s[c] * v[j + c * n]).sum();
                assert!((x - a[i + j * m]).abs() < 1e-14, "U Σ Vᵀ ({m}×{n})");
            }
        }
        for (q, r) in [(&u, m), (&v, n)] {
            let mut g = vec![0.0; k * k];
            crossprod(q, r, k, &mut g);
            for j in 0..k {
                for i in 0..k {
                    let want = if i == j { 1.0 } else { 0.0 };
                    assert!((g[i + j * k] - want).abs() < 1e-14, "orthonormal ({m}×{n})");
                }
            }
        }
        for c in 0..k {
            assert!(s[c] >= 0.0 && (c == 0 || s[c - 1] >= s[c]));
            let col = &u[c * m..(c + 1) * m];
            let big = col
                .iter()
                .fold(0.0f64, |b, x| if x.abs() > b.abs() { *x } else { b });
            assert!(big > 0.0);
        }
        // Singular values are the square roots of the eigenvalues of AᵀA (or AAᵀ).
        let (p, q) = if m >= n { (m, n) } else { (n, m) };
        let mut at = vec![0.0; m * n];
        for j in 0..n {
            for i in 0..m {
                at[j + i * n] = a[i + j * m];
            }
        }
        let tall = if m >= n { &a } else { &at };
        let mut g = vec![0.0; q * q];
        crossprod(tall, p, q, &mut g);
        let (l, _) = eig(&g, q);
        for c in 0..k {
            assert!((s[c] * s[c] - l[q - 1 - c]).abs() < 1e-13, "σ² = λ(AᵀA)");
        }
    }
    // Closed form: diag(3, −2) has σ = (3, 2).
    let (s, _, _) = thin_svd(&[3.0, 0.0, 0.0, -2.0], 2, 2);
    assert_eq!(s, vec![3.0, 2.0]);
}

#[test]
fn svd_adjoints() {
    let mut rng = Rng(32);
    for (m, n) in [(4, 3), (2, 4), (3, 3)] {
        let a = rng.vec(m * n);
        let k = m.min(n);
        let (s, u, v) = thin_svd(&a, m, n);
        let (cs, cu, cv) = (rng.vec(k), rng.vec(m * k), rng.vec(n * k));
        let mut ws = vec![0.0; svd_adjoint_workspace_len(m, n)];
        type Pick = fn(&(Vec<f64>, Vec<f64>, Vec<f64>)) -> &Vec<f64>;
        let parts: [(&str, Pick, &Vec<f64>); 3] = [
            ("singular_values", |t| &t.0, &cs),
            ("svd_U", |t| &t.1, &cu),
            ("svd_V", |t| &t.2, &cv),
        ];
        for (k_part, (what, pick, c)) in parts.iter().enumerate() {
            let mut ga = vec![0.0; m * n];
            svd_adjoint(
                &s,
                &u,
                &v,
                m,
                n,
                (k_part == 0).then_some(&cs[..]),
                (k_part == 1).then_some(&cu[..]),
                (k_part == 2).then_some(&cv[..]),
                &mut ga,
                &mut ws,
            );
            check(what, &a, &ga, 0..m * n, &|a: &[f64]| {
                weighted(c, pick(&thin_svd(a, m, n)))
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// QR decomposition (linalg::qr).
// ---------------------------------------------------------------------------------------------

fn qr_of(a: &[f64], m: usize, n: usize, full: bool) -> (Vec<f64>, Vec<f64>) {
    let k = m.min(n);
    let (qc, rr) = if full { (m, m) } else { (k, k) };
    let (mut q, mut r) = (vec![0.0; m * qc], vec![0.0; rr * n]);
    let mut ws = vec![0.0; qr_workspace_len(m, n)];
    qr("qr", a, m, n, &mut q, qc, &mut r, rr, &mut ws).unwrap();
    (q, r)
}

#[test]
fn qr_values() {
    let mut rng = Rng(41);
    for (m, n) in [(1, 1), (4, 2), (2, 4), (3, 3), (5, 3), (40, 25)] {
        let a = rng.vec(m * n);
        let k = m.min(n);
        for full in [false, true] {
            let (qc, rr) = if full { (m, m) } else { (k, k) };
            let (q, r) = qr_of(&a, m, n, full);
            let mut qr_prod = vec![0.0; m * n];
            multiply(&q, m, qc, &r, n, &mut qr_prod);
            assert_close(&qr_prod, &a, 1e-14, "Q R");
            let mut g = vec![0.0; qc * qc];
            crossprod(&q, m, qc, &mut g);
            for j in 0..qc {
                for i in 0..qc {
                    let want = if i == j { 1.0 } else { 0.0 };
                    assert!((g[i + j * qc] - want).abs() < 1e-14, "QᵀQ ({m}×{n})");
                }
            }
            for c in 0..n {
                for i in 0..rr {
                    if i > c || i >= k {
                        assert_eq!(r[i + c * rr], 0.0, "R is upper triangular");
                    }
                }
            }
            for i in 0..k {
                assert!(r[i + i * rr] >= 0.0, "R has a non-negative diagonal");
            }
        }
    }
    // Closed form: [[3, 1], [4, 2]] = Q R with R = [[5, 2.2], [0, 0.4]].
    let (q, r) = qr_of(&[3.0, 4.0, 1.0, 2.0], 2, 2, false);
    assert_close(&r, &[5.0, 0.0, 2.2, 0.4], 1e-15, "R");
    assert_close(&q, &[0.6, 0.8, -0.8, 0.6], 1e-15, "Q");
}

#[test]
fn qr_adjoints() {
    let mut rng = Rng(42);
    for (m, n) in [(4, 3), (3, 3), (2, 4)] {
        let a = rng.vec(m * n);
        let k = m.min(n);
        let (q, r) = qr_of(&a, m, n, false);
        let (cq, cr) = (rng.vec(m * k), rng.vec(k * n));
        let mut ws = vec![0.0; qr_thin_adjoint_workspace_len(m, n)];
        for part in 0..2 {
            let mut ga = vec![0.0; m * n];
            qr_thin_adjoint(
                &a,
                &q,
                &r,
                m,
                n,
                (part == 0).then_some(&cq[..]),
                (part == 1).then_some(&cr[..]),
                &mut ga,
                &mut ws,
            );
            let what = if part == 0 { "qr_thin_Q" } else { "qr_thin_R" };
            check(what, &a, &ga, 0..m * n, &|a: &[f64]| {
                let (q, r) = qr_of(a, m, n, false);
                if part == 0 {
                    weighted(&cq, &q)
                } else {
                    weighted(&cr, &r)
                }
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Values against numpy / scipy (LAPACK): scripts/linalg/make_math_fixtures.py.
// ---------------------------------------------------------------------------------------------

fn fixture() -> serde_json::Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/linalg_decompositions.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

fn floats(v: &serde_json::Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn size(v: &serde_json::Value) -> usize {
    v.as_u64().unwrap() as usize
}

/// Agreement relative to the largest entry of the reference.
fn assert_scaled(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    let scale = want.iter().fold(1.0f64, |m, x| m.max(x.abs()));
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * scale, "{what}[{i}]: {g} vs {w}");
    }
}

#[test]
fn values_match_lapack() {
    let fx = fixture();
    for c in fx["general"].as_array().unwrap() {
        let n = size(&c["n"]);
        let (a, b, bt) = (floats(&c["a"]), floats(&c["b"]), floats(&c["bt"]));
        let mut f = vec![0.0; factor_len(n)];
        let d = determinant(&a, n, &mut f);
        assert!(rel(d, c["det"].as_f64().unwrap()) < 1e-13, "det {n}");
        let ld = log_abs_determinant(&a, n, &mut f).unwrap();
        assert!(
            rel(ld, c["log_abs_det"].as_f64().unwrap()) < 1e-13,
            "log|det| {n}"
        );
        let mut x = vec![0.0; n * 3];
        mdivide_left(Factor::Lu, &a, n, &b, 3, &mut x, &mut f).unwrap();
        assert_scaled(&x, &floats(&c["left"]), 1e-12, "A⁻¹B");
        let mut tmp = vec![0.0; n];
        mdivide_right(Factor::Lu, &bt, 3, &a, n, &mut x, &mut f, &mut tmp).unwrap();
        assert_scaled(&x, &floats(&c["right"]), 1e-12, "BA⁻¹");
    }
    for c in fx["symmetric"].as_array().unwrap() {
        let n = size(&c["n"]);
        let (l, v) = eig(&floats(&c["a"]), n);
        assert_scaled(&l, &floats(&c["values"]), 1e-14, "eigenvalues");
        assert_scaled(&v, &floats(&c["vectors"]), 1e-13, "eigenvectors");
    }
    for c in fx["svd"].as_array().unwrap() {
        let (m, n) = (size(&c["m"]), size(&c["n"]));
        let (s, u, v) = thin_svd(&floats(&c["a"]), m, n);
        assert_scaled(&s, &floats(&c["sigma"]), 1e-14, "singular values");
        assert_scaled(&u, &floats(&c["u"]), 1e-13, "U");
        assert_scaled(&v, &floats(&c["v"]), 1e-13, "V");
    }
    for c in fx["qr"].as_array().unwrap() {
        let (m, n) = (size(&c["m"]), size(&c["n"]));
        let (q, r) = qr_of(&floats(&c["a"]), m, n, false);
        assert_scaled(&q, &floats(&c["q"]), 1e-14, "Q");
        assert_scaled(&r, &floats(&c["r"]), 1e-14, "R");
    }
    for c in fx["expm"].as_array().unwrap() {
        let n = size(&c["n"]);
        assert_scaled(
            &expm(&floats(&c["a"]), n),
            &floats(&c["expm"]),
            1e-13,
            "expm",
        );
    }
}
