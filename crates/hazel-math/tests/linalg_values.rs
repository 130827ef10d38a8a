//! linalg values against numpy / scipy / stanli fixtures
//! (`scripts/transforms/make_linalg_fixtures.py`) and hand-derived checks.

use hazel_math::dist::Terms;
use hazel_math::linalg::*;

fn fixtures() -> serde_json::Value {
    serde_json::from_str(include_str!("fixtures/linalg.json")).expect("fixture JSON")
}

fn floats(v: &serde_json::Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

fn ints(v: &serde_json::Value) -> Vec<i64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_i64().expect("int"))
        .collect()
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(1.0)
}

fn assert_all_close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for i in 0..got.len() {
        assert!(
            rel(got[i], want[i]) < tol,
            "{what}[{i}]: {} vs {}",
            got[i],
            want[i]
        );
    }
}

#[test]
fn dense_functions_match_numpy() {
    let f = fixtures();
    for case in f["dense"].as_array().unwrap() {
        let n = case["n"].as_u64().unwrap() as usize;
        let a = floats(&case["spd"]);
        let mut l = vec![0.0; n * n];
        cholesky_decompose(&a, n, &mut l).unwrap();
        assert_all_close(&l, &floats(&case["cholesky"]), 1e-12, "cholesky");
        let mut ws = vec![0.0; 2 * n * n];
        let mut inv = vec![0.0; n * n];
        inverse_spd(&a, n, &mut inv, &mut ws).unwrap();
        assert_all_close(&inv, &floats(&case["spd_inverse"]), 1e-12, "inverse_spd");
        let ld = log_determinant_spd(&a, n, &mut ws).unwrap();
        assert!(rel(ld, case["spd_log_det"].as_f64().unwrap()) < 1e-12);
        let g = floats(&case["general"]);
        let mut perm = vec![0usize; n];
        inverse(&g, n, &mut inv, &mut ws, &mut perm).unwrap();
        assert_all_close(&inv, &floats(&case["general_inverse"]), 1e-11, "inverse");
        let ld = log_determinant(&g, n, &mut ws, &mut perm).unwrap();
        assert!(rel(ld, case["general_log_abs_det"].as_f64().unwrap()) < 1e-12);
        // L Lᵀ = A.
        let mut llt = vec![0.0; n * n];
        tcrossprod(&l, n, n, &mut llt);
        assert_all_close(&llt, &a, 1e-13, "L Lᵀ");
    }
}

#[test]
fn multi_normal_matches_scipy() {
    let f = fixtures();
    for case in f["multi_normal"].as_array().unwrap() {
        let n = case["n"].as_u64().unwrap() as usize;
        let n_obs = case["n_obs"].as_u64().unwrap() as usize;
        let (y, mu, sigma, l) = (
            floats(&case["y"]),
            floats(&case["mu"]),
            floats(&case["sigma"]),
            floats(&case["cholesky"]),
        );
        let want = case["log_density"].as_f64().unwrap();
        let mut ws = vec![0.0; multi_normal_workspace_len(n)];
        let lp = multi_normal_lpdf(
            &y,
            &mu,
            &sigma,
            n,
            n_obs,
            Terms::FULL,
            None,
            None,
            None,
            &mut ws,
        )
        .unwrap();
        assert!(rel(lp, want) < 1e-12, "multi_normal {lp} vs {want}");
        let lp = multi_normal_cholesky_lpdf(
            &y,
            &mu,
            &l,
            n,
            n_obs,
            Terms::FULL,
            None,
            None,
            None,
            &mut ws,
        )
        .unwrap();
        assert!(
            rel(lp, want) < 1e-12,
            "multi_normal_cholesky {lp} vs {want}"
        );
        // Per-observation means equal to the shared one give the same value.
        let mus: Vec<f64> = (0..n_obs).flat_map(|_| mu.iter().copied()).collect();
        let lp2 = multi_normal_cholesky_lpdf(
            &y,
            &mus,
            &l,
            n,
            n_obs,
            Terms::FULL,
            None,
            None,
            None,
            &mut ws,
        )
        .unwrap();
        assert!(rel(lp, lp2) < 1e-14);
    }
}

#[test]
fn multi_normal_cholesky_terms() {
    let n = 2;
    let y = [0.3, -1.2];
    let mu = [0.1, 0.4];
    let l = [1.5, 0.3, 0.0, 0.8];
    let mut ws = vec![0.0; 4];
    let full =
        multi_normal_cholesky_lpdf(&y, &mu, &l, n, 1, Terms::FULL, None, None, None, &mut ws)
            .unwrap();
    let log_2pi = (2.0 * std::f64::consts::PI).ln();
    let log_det = 1.5f64.ln() + 0.8f64.ln();
    // propto with only y varying: the 2π constant and log det L are dropped.
    let y_only = multi_normal_cholesky_lpdf(
        &y,
        &mu,
        &l,
        n,
        1,
        Terms::propto(0b001),
        None,
        None,
        None,
        &mut ws,
    )
    .unwrap();
    assert!((full - (y_only - log_2pi - log_det)).abs() < 1e-14);
    // L varying keeps log det L.
    let l_varies = multi_normal_cholesky_lpdf(
        &y,
        &mu,
        &l,
        n,
        1,
        Terms::propto(0b100),
        None,
        None,
        None,
        &mut ws,
    )
    .unwrap();
    assert!((full - (l_varies - log_2pi)).abs() < 1e-14);
    // Nothing varying: nothing kept.
    assert_eq!(
        multi_normal_cholesky_lpdf(
            &y,
            &mu,
            &l,
            n,
            1,
            Terms::propto(0),
            None,
            None,
            None,
            &mut ws
        )
        .unwrap(),
        0.0
    );
}

#[test]
fn dirichlet_and_multinomial_match_scipy() {
    let f = fixtures();
    for case in f["dirichlet"].as_array().unwrap() {
        let (alpha, theta) = (floats(&case["alpha"]), floats(&case["theta"]));
        let lp = dirichlet_lpdf(&theta, &alpha, Terms::FULL, None, None).unwrap();
        assert!(rel(lp, case["log_density"].as_f64().unwrap()) < 1e-12);
    }
    for case in f["multinomial"].as_array().unwrap() {
        let (ns, theta) = (ints(&case["ns"]), floats(&case["theta"]));
        let lp = multinomial_lpmf(&ns, &theta, Terms::FULL, None).unwrap();
        assert!(rel(lp, case["log_mass"].as_f64().unwrap()) < 1e-12);
        // The logit form with beta = log theta (+ any shift) agrees.
        let beta: Vec<f64> = theta.iter().map(|t| t.ln() + 0.7).collect();
        let lp2 = multinomial_logit_lpmf(&ns, &beta, Terms::FULL, None).unwrap();
        assert!(rel(lp, lp2) < 1e-12);
    }
}

#[test]
fn lkj_matches_stanli() {
    let f = fixtures();
    for case in f["lkj"].as_array().unwrap() {
        let k = case["k"].as_u64().unwrap() as usize;
        let eta = case["eta"].as_f64().unwrap();
        let (l, omega) = (floats(&case["cholesky"]), floats(&case["omega"]));
        let mut d_eta = 0.0;
        let lp = lkj_corr_cholesky_lpdf(&l, k, eta, Terms::FULL, None, Some(&mut d_eta)).unwrap();
        assert!(
            rel(lp, case["lkj_corr_cholesky"].as_f64().unwrap()) < 1e-12,
            "K={k} eta={eta}: {lp}"
        );
        // At exactly eta = 1 Stan evaluates the constant in a closed form that drops its
        // dependence on eta, so its derivative there lacks the constant's part; ours is the
        // true derivative, compared away from 1 only.
        if eta != 1.0 {
            assert!(
                rel(d_eta, case["lkj_corr_cholesky_d_eta"].as_f64().unwrap()) < 1e-10,
                "K={k} eta={eta}: d/deta {d_eta}"
            );
        }
        let mut ws = vec![0.0; 2 * k * k];
        let mut d_eta = 0.0;
        let lp =
            lkj_corr_lpdf(&omega, k, eta, Terms::FULL, None, Some(&mut d_eta), &mut ws).unwrap();
        assert!(
            rel(lp, case["lkj_corr"].as_f64().unwrap()) < 1e-12,
            "K={k} eta={eta}: {lp}"
        );
        if eta != 1.0 {
            assert!(rel(d_eta, case["lkj_corr_d_eta"].as_f64().unwrap()) < 1e-10);
        }
    }
}

#[test]
fn gp_exp_quad_cov_by_hand() {
    // Two 2-d points at distance² 5 (and 1-d points via d = 1).
    let x = [0.0, 0.0, 1.0, 2.0];
    let mut k = [0.0; 4];
    gp_exp_quad_cov(&x, 2, 2, 1.5, 2.0, &mut k).unwrap();
    let off = 2.25 * (-5.0f64 / 8.0).exp();
    assert_eq!(k, [2.25, off, off, 2.25]);
    let mut k1 = [0.0; 9];
    gp_exp_quad_cov(&[0.0, 1.0, 3.0], 3, 1, 1.0, 1.0, &mut k1).unwrap();
    assert!((k1[2] - (-4.5f64).exp()).abs() < 1e-16);
    assert!(gp_exp_quad_cov(&x, 2, 2, -1.0, 2.0, &mut k).is_err());
    assert!(gp_exp_quad_cov(&x, 2, 2, 1.0, 0.0, &mut k).is_err());
    let mut cross = [0.0; 2];
    gp_exp_quad_cov_cross(&[0.0], 1, &[1.0, 3.0], 2, 1, 2.0, 1.0, &mut cross).unwrap();
    assert!((cross[1] - 4.0 * (-4.5f64).exp()).abs() < 1e-15);
}

#[test]
fn small_functions_by_hand() {
    // mdivide_left_tri_low against a hand solve.
    let l = [2.0, 1.0, 0.0, 3.0];
    let mut x = [0.0; 2];
    mdivide_left_tri_low(&l, 2, &[4.0, 11.0], 1, &mut x);
    assert_eq!(x, [2.0, 3.0]);
    // mdivide_right_tri_low: x L = b.
    let mut xr = [0.0; 2];
    mdivide_right_tri_low(&[7.0, 9.0], 1, &l, 2, &mut xr);
    assert_eq!(xr, [2.0, 3.0]);
    // multiply (2×3)(3×1).
    let a = [1.0, 4.0, 2.0, 5.0, 3.0, 6.0];
    let mut y = [0.0; 2];
    multiply(&a, 2, 3, &[1.0, 1.0, 1.0], 1, &mut y);
    assert_eq!(y, [6.0, 15.0]);
    // softmax / log_softmax / log_sum_exp.
    let v = [1.0, 2.0, 3.0];
    let mut s = [0.0; 3];
    softmax(&v, &mut s);
    assert!((s.iter().sum::<f64>() - 1.0).abs() < 1e-15);
    let mut ls = [0.0; 3];
    log_softmax(&v, &mut ls);
    assert!((ls[2] - s[2].ln()).abs() < 1e-15);
    assert!((log_sum_exp(&[1000.0, 1000.0]) - (1000.0 + 2f64.ln())).abs() < 1e-12);
    // categorical.
    let theta = [0.2, 0.3, 0.5];
    let lp = categorical_lpmf(&[3, 1, 3], &theta, Terms::FULL, None).unwrap();
    assert!((lp - (2.0 * 0.5f64.ln() + 0.2f64.ln())).abs() < 1e-15);
    assert_eq!(
        categorical_lpmf(&[3], &theta, Terms::propto(0b01), None).unwrap(),
        0.0
    );
    assert!(categorical_lpmf(&[4], &theta, Terms::FULL, None).is_err());
    let beta = [0.1, -0.4, 1.3];
    let lp = categorical_logit_lpmf(&[2], &beta, Terms::FULL, None).unwrap();
    assert!((lp - (-0.4 - log_sum_exp(&beta))).abs() < 1e-15);
    // quad_form_diag and quad_form.
    let m = [1.0, 2.0, 3.0, 4.0];
    let mut q = [0.0; 4];
    quad_form_diag(&m, 2, &[2.0, 3.0], &mut q);
    assert_eq!(q, [4.0, 12.0, 18.0, 36.0]);
    let mut ws = [0.0; 2];
    let mut qf = [0.0; 1];
    quad_form(&m, 2, &[1.0, 1.0], 1, &mut qf, &mut ws);
    assert_eq!(qf[0], 10.0);
}

#[test]
fn domain_errors() {
    let mut l = [0.0; 4];
    assert!(cholesky_decompose(&[1.0, 2.0, 2.0, 1.0], 2, &mut l)
        .unwrap_err()
        .message
        .contains("not positive definite"));
    assert!(cholesky_decompose(&[1.0, 0.5, 0.4, 1.0], 2, &mut l)
        .unwrap_err()
        .message
        .contains("not symmetric"));
    assert!(cholesky_decompose(&[f64::NAN, 0.0, 0.0, 1.0], 2, &mut l).is_err());
    assert!(dirichlet_lpdf(&[0.5, 0.6], &[1.0, 1.0], Terms::FULL, None, None).is_err());
    assert!(dirichlet_lpdf(&[0.5, 0.5], &[1.0, -1.0], Terms::FULL, None, None).is_err());
    assert!(multinomial_lpmf(&[1, -1], &[0.5, 0.5], Terms::FULL, None).is_err());
    assert!(
        lkj_corr_cholesky_lpdf(&[1.0, 0.0, 0.0, 1.0], 2, 0.0, Terms::FULL, None, None).is_err()
    );
    let mut ws = [0.0; 8];
    assert!(lkj_corr_lpdf(
        &[1.0, 0.5, 0.5, 2.0],
        2,
        1.0,
        Terms::FULL,
        None,
        None,
        &mut ws
    )
    .is_err());
    let mut perm = [0usize; 2];
    assert!(log_determinant(&[1.0, 2.0, 2.0, 4.0], 2, &mut ws, &mut perm).is_err());
    let mut ws = vec![0.0; multi_normal_workspace_len(2)];
    assert!(multi_normal_lpdf(
        &[0.0, 0.0],
        &[0.0, 0.0],
        &[1.0, 2.0, 2.0, 1.0],
        2,
        1,
        Terms::FULL,
        None,
        None,
        None,
        &mut ws
    )
    .is_err());
}

/// The row-major entry (the sampler's dense metric) factorises `L Lᵀ = A`, zeros the strict
/// upper triangle and reports the failing pivot.
#[test]
fn cholesky_row_major_reconstructs_matrix() {
    let a = [4.0, 2.0, 0.6, 2.0, 5.0, 1.0, 0.6, 1.0, 3.0];
    let mut l = [f64::NAN; 9];
    hazel_math::linalg::cholesky_lower_row_major(&a, 3, &mut l).unwrap();
    for i in 0..3 {
        for j in 0..3 {
            let llt: f64 = (0..3).map(|k| l[i * 3 + k] * l[j * 3 + k]).sum();
            assert!(
                (llt - a[i * 3 + j]).abs() < 1e-12,
                "({i},{j}) {llt} vs {}",
                a[i * 3 + j]
            );
        }
    }
    assert_eq!(l[1], 0.0);
    assert_eq!(
        hazel_math::linalg::cholesky_lower_row_major(&[1.0, 2.0, 2.0, 1.0], 2, &mut [0.0; 4]),
        Err(1)
    );
}

/// One factorisation serves both layouts: on a symmetric matrix without zeros the row-major
/// factor is, bit for bit, the transpose of the column-major one.
#[test]
fn cholesky_row_major_is_the_column_major_factor_bit_for_bit() {
    let n = 7;
    let mut b = vec![0.0; n * n];
    for (k, v) in b.iter_mut().enumerate() {
        *v = ((k * 37 % 11) as f64 - 5.3) / 3.7;
    }
    // A = B Bᵀ + n I, symmetric (same products in both triangles) and well conditioned.
    let mut a = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            let mut s = if i == j { n as f64 } else { 0.0 };
            for k in 0..n {
                s += b[i * n + k] * b[j * n + k];
            }
            a[i * n + j] = s;
        }
    }
    let (mut row, mut col) = (vec![0.0; n * n], vec![0.0; n * n]);
    hazel_math::linalg::cholesky_lower_row_major(&a, n, &mut row).unwrap();
    hazel_math::linalg::cholesky_decompose(&a, n, &mut col).unwrap();
    for i in 0..n {
        for j in 0..n {
            assert_eq!(
                row[i * n + j].to_bits(),
                col[i + j * n].to_bits(),
                "({i},{j})"
            );
        }
    }
}
