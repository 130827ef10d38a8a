//! linalg adjoint rules against central finite differences of the forward functions. Each
//! check differentiates the scalar `Σ c ⊙ f(inputs)` for a fixed random `c`.

use hazel_math::dist::Terms;
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
    fn lower(&mut self, n: usize) -> Vec<f64> {
        let mut l = self.vec(n * n);
        for j in 0..n {
            for i in 0..j {
                l[i + j * n] = 0.0;
            }
            l[j + j * n] = 1.0 + l[j + j * n].abs();
        }
        l
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

#[test]
fn cholesky_adjoint() {
    let mut rng = Rng(1);
    for n in [1, 2, 5, 8] {
        let a = rng.spd(n);
        let c = rng.vec(n * n);
        let mut l = vec![0.0; n * n];
        cholesky_decompose(&a, n, &mut l).unwrap();
        let mut g = vec![0.0; n * n];
        let mut ws = vec![0.0; n * n];
        cholesky_decompose_adjoint(&l, n, &c, &mut g, &mut ws);
        let f = |a: &[f64]| {
            let mut l = vec![0.0; n * n];
            cholesky_decompose(a, n, &mut l).unwrap();
            weighted(&c, &l)
        };
        check_symmetric_pairs("cholesky", &a, n, &g, &f);
        // Only the lower triangle receives adjoint.
        for j in 0..n {
            for i in 0..j {
                assert_eq!(g[i + j * n], 0.0);
            }
        }
    }
}

#[test]
fn triangular_solve_adjoints() {
    let mut rng = Rng(2);
    let (n, m) = (4, 3);
    let l = rng.lower(n);
    let b = rng.vec(n * m);
    let c = rng.vec(n * m);
    let mut x = vec![0.0; n * m];
    mdivide_left_tri_low(&l, n, &b, m, &mut x);
    let (mut gl, mut gb) = (vec![0.0; n * n], vec![0.0; n * m]);
    let mut ws = vec![0.0; n * m];
    mdivide_left_tri_low_adjoint(&l, n, &x, m, &c, Some(&mut gl), Some(&mut gb), &mut ws);
    check(
        "left L",
        &l,
        &gl,
        (0..n).flat_map(|j| (j..n).map(move |i| i + j * n)),
        &|l: &[f64]| {
            let mut x = vec![0.0; n * m];
            mdivide_left_tri_low(l, n, &b, m, &mut x);
            weighted(&c, &x)
        },
    );
    check("left B", &b, &gb, 0..n * m, &|b: &[f64]| {
        let mut x = vec![0.0; n * m];
        mdivide_left_tri_low(&l, n, b, m, &mut x);
        weighted(&c, &x)
    });

    let bm = rng.vec(m * n); // m × n
    let mut xr = vec![0.0; m * n];
    mdivide_right_tri_low(&bm, m, &l, n, &mut xr);
    let (mut gl, mut gb) = (vec![0.0; n * n], vec![0.0; m * n]);
    mdivide_right_tri_low_adjoint(&xr, m, &l, n, &c, Some(&mut gb), Some(&mut gl), &mut ws);
    check(
        "right L",
        &l,
        &gl,
        (0..n).flat_map(|j| (j..n).map(move |i| i + j * n)),
        &|l: &[f64]| {
            let mut x = vec![0.0; m * n];
            mdivide_right_tri_low(&bm, m, l, n, &mut x);
            weighted(&c, &x)
        },
    );
    check("right B", &bm, &gb, 0..m * n, &|b: &[f64]| {
        let mut x = vec![0.0; m * n];
        mdivide_right_tri_low(b, m, &l, n, &mut x);
        weighted(&c, &x)
    });
}

#[test]
fn product_adjoints() {
    let mut rng = Rng(3);
    let (m, k, n) = (3, 4, 2);
    let a = rng.vec(m * k);
    let b = rng.vec(k * n);
    let c = rng.vec(m * n);
    let (mut ga, mut gb) = (vec![0.0; m * k], vec![0.0; k * n]);
    multiply_adjoint(&a, m, k, &b, n, &c, Some(&mut ga), Some(&mut gb));
    let fa = |a: &[f64]| {
        let mut o = vec![0.0; m * n];
        multiply(a, m, k, &b, n, &mut o);
        weighted(&c, &o)
    };
    check("multiply A", &a, &ga, 0..m * k, &fa);
    check("multiply B", &b, &gb, 0..k * n, &|b: &[f64]| {
        let mut o = vec![0.0; m * n];
        multiply(&a, m, k, b, n, &mut o);
        weighted(&c, &o)
    });

    let cn = rng.vec(k * k);
    let mut g = vec![0.0; m * k];
    crossprod_adjoint(&a, m, k, &cn, &mut g);
    check("crossprod", &a, &g, 0..m * k, &|a: &[f64]| {
        let mut o = vec![0.0; k * k];
        crossprod(a, m, k, &mut o);
        weighted(&cn, &o)
    });
    let cm = rng.vec(m * m);
    let mut g = vec![0.0; m * k];
    tcrossprod_adjoint(&a, m, k, &cm, &mut g);
    check("tcrossprod", &a, &g, 0..m * k, &|a: &[f64]| {
        let mut o = vec![0.0; m * m];
        tcrossprod(a, m, k, &mut o);
        weighted(&cm, &o)
    });

    let x = rng.vec(5);
    let y = rng.vec(5);
    let (mut gx, mut gy) = (vec![0.0; 5], vec![0.0; 5]);
    dot_product_adjoint(&x, &y, 1.7, Some(&mut gx), Some(&mut gy));
    check("dot x", &x, &gx, 0..5, &|x: &[f64]| {
        1.7 * dot_product(x, &y)
    });
    check("dot y", &y, &gy, 0..5, &|y: &[f64]| {
        1.7 * dot_product(&x, y)
    });
}

#[test]
fn quad_form_adjoints() {
    let mut rng = Rng(4);
    let (n, m) = (3, 2);
    let a = rng.vec(n * n);
    let b = rng.vec(n * m);
    let c = rng.vec(m * m);
    let (mut ga, mut gb) = (vec![0.0; n * n], vec![0.0; n * m]);
    let mut ws = vec![0.0; 2 * n * m];
    quad_form_adjoint(&a, n, &b, m, &c, Some(&mut ga), Some(&mut gb), &mut ws);
    let eval = |a: &[f64], b: &[f64]| {
        let mut o = vec![0.0; m * m];
        let mut ws = vec![0.0; n * m];
        quad_form(a, n, b, m, &mut o, &mut ws);
        weighted(&c, &o)
    };
    check("quad_form A", &a, &ga, 0..n * n, &|a: &[f64]| eval(a, &b));
    check("quad_form B", &b, &gb, 0..n * m, &|b: &[f64]| eval(&a, b));

    let v = rng.vec(n);
    let c2 = rng.vec(n * n);
    let (mut gm, mut gv) = (vec![0.0; n * n], vec![0.0; n]);
    quad_form_diag_adjoint(&a, n, &v, &c2, Some(&mut gm), Some(&mut gv));
    let eval = |a: &[f64], v: &[f64]| {
        let mut o = vec![0.0; n * n];
        quad_form_diag(a, n, v, &mut o);
        weighted(&c2, &o)
    };
    check("quad_form_diag M", &a, &gm, 0..n * n, &|a: &[f64]| {
        eval(a, &v)
    });
    check("quad_form_diag v", &v, &gv, 0..n, &|v: &[f64]| eval(&a, v));
}

#[test]
fn determinant_and_inverse_adjoints() {
    let mut rng = Rng(5);
    let n = 4;
    let mut g0 = rng.vec(n * n);
    for i in 0..n {
        g0[i + i * n] += 3.0;
    }
    let mut ws = vec![0.0; 2 * n * n];
    let mut perm = vec![0usize; n];
    let mut grad = vec![0.0; n * n];
    log_determinant_adjoint(&g0, n, 1.3, &mut grad, &mut ws, &mut perm).unwrap();
    check("log_determinant", &g0, &grad, 0..n * n, &|a: &[f64]| {
        let mut ws = vec![0.0; n * n];
        let mut perm = vec![0usize; n];
        1.3 * log_determinant(a, n, &mut ws, &mut perm).unwrap()
    });

    let c = rng.vec(n * n);
    let mut inv = vec![0.0; n * n];
    inverse(&g0, n, &mut inv, &mut ws, &mut perm).unwrap();
    let mut grad = vec![0.0; n * n];
    inverse_adjoint(&inv, n, &c, &mut grad, &mut ws);
    check("inverse", &g0, &grad, 0..n * n, &|a: &[f64]| {
        let mut ws = vec![0.0; n * n];
        let mut perm = vec![0usize; n];
        let mut o = vec![0.0; n * n];
        inverse(a, n, &mut o, &mut ws, &mut perm).unwrap();
        weighted(&c, &o)
    });

    let s = rng.spd(n);
    let mut grad = vec![0.0; n * n];
    log_determinant_spd_adjoint(&s, n, 0.7, &mut grad, &mut ws).unwrap();
    check_symmetric_pairs("log_determinant_spd", &s, n, &grad, &|a: &[f64]| {
        let mut ws = vec![0.0; n * n];
        0.7 * log_determinant_spd(a, n, &mut ws).unwrap()
    });
    inverse_spd(&s, n, &mut inv, &mut ws).unwrap();
    let mut grad = vec![0.0; n * n];
    inverse_spd_adjoint(&inv, n, &c, &mut grad, &mut ws);
    check_symmetric_pairs("inverse_spd", &s, n, &grad, &|a: &[f64]| {
        let mut ws = vec![0.0; n * n];
        let mut o = vec![0.0; n * n];
        inverse_spd(a, n, &mut o, &mut ws).unwrap();
        weighted(&c, &o)
    });
}

#[test]
fn softmax_family_adjoints() {
    let mut rng = Rng(6);
    let x = rng.vec(5);
    let c = rng.vec(5);
    let mut s = vec![0.0; 5];
    softmax(&x, &mut s);
    let mut g = vec![0.0; 5];
    softmax_adjoint(&s, &c, &mut g);
    check("softmax", &x, &g, 0..5, &|x: &[f64]| {
        let mut o = vec![0.0; 5];
        softmax(x, &mut o);
        weighted(&c, &o)
    });
    let mut ls = vec![0.0; 5];
    log_softmax(&x, &mut ls);
    let mut g = vec![0.0; 5];
    log_softmax_adjoint(&ls, &c, &mut g);
    check("log_softmax", &x, &g, 0..5, &|x: &[f64]| {
        let mut o = vec![0.0; 5];
        log_softmax(x, &mut o);
        weighted(&c, &o)
    });
    let v = log_sum_exp(&x);
    let mut g = vec![0.0; 5];
    log_sum_exp_adjoint(&x, v, 2.0, &mut g);
    check("log_sum_exp", &x, &g, 0..5, &|x: &[f64]| {
        2.0 * log_sum_exp(x)
    });
}

#[test]
fn gp_adjoints() {
    let mut rng = Rng(7);
    let (n, d) = (5, 2);
    let x = rng.vec(n * d);
    let c = rng.vec(n * n);
    let (alpha, rho) = (1.3, 0.8);
    let mut k = vec![0.0; n * n];
    gp_exp_quad_cov(&x, n, d, alpha, rho, &mut k).unwrap();
    let (mut ga, mut gr, mut gx) = (0.0, 0.0, vec![0.0; n * d]);
    gp_exp_quad_cov_adjoint(
        &x,
        n,
        d,
        alpha,
        rho,
        &k,
        &c,
        Some(&mut ga),
        Some(&mut gr),
        Some(&mut gx),
    );
    let eval = |x: &[f64], alpha: f64, rho: f64| {
        let mut k = vec![0.0; n * n];
        gp_exp_quad_cov(x, n, d, alpha, rho, &mut k).unwrap();
        weighted(&c, &k)
    };
    check("gp x", &x, &gx, 0..n * d, &|x: &[f64]| eval(x, alpha, rho));
    check("gp alpha", &[alpha], &[ga], 0..1, &|p: &[f64]| {
        eval(&x, p[0], rho)
    });
    check("gp rho", &[rho], &[gr], 0..1, &|p: &[f64]| {
        eval(&x, alpha, p[0])
    });

    let x2 = rng.vec(3 * d);
    let c2 = rng.vec(n * 3);
    let mut kc = vec![0.0; n * 3];
    gp_exp_quad_cov_cross(&x, n, &x2, 3, d, alpha, rho, &mut kc).unwrap();
    let (mut ga, mut gr, mut gx1, mut gx2) = (0.0, 0.0, vec![0.0; n * d], vec![0.0; 3 * d]);
    gp_exp_quad_cov_cross_adjoint(
        &x,
        n,
        &x2,
        3,
        d,
        alpha,
        rho,
        &kc,
        &c2,
        Some(&mut ga),
        Some(&mut gr),
        Some(&mut gx1),
        Some(&mut gx2),
    );
    let eval = |x1: &[f64], x2: &[f64], alpha: f64, rho: f64| {
        let mut k = vec![0.0; n * 3];
        gp_exp_quad_cov_cross(x1, n, x2, 3, d, alpha, rho, &mut k).unwrap();
        weighted(&c2, &k)
    };
    check("gp cross x1", &x, &gx1, 0..n * d, &|v: &[f64]| {
        eval(v, &x2, alpha, rho)
    });
    check("gp cross x2", &x2, &gx2, 0..3 * d, &|v: &[f64]| {
        eval(&x, v, alpha, rho)
    });
    check("gp cross alpha", &[alpha], &[ga], 0..1, &|p: &[f64]| {
        eval(&x, &x2, p[0], rho)
    });
    check("gp cross rho", &[rho], &[gr], 0..1, &|p: &[f64]| {
        eval(&x, &x2, alpha, p[0])
    });
}

#[test]
fn multi_normal_gradients() {
    let mut rng = Rng(8);
    let (n, n_obs) = (3, 2);
    let y = rng.vec(n * n_obs);
    let mu = rng.vec(n);
    let l = rng.lower(n);
    let sigma = rng.spd(n);
    for terms in [Terms::FULL, Terms::propto(0b111), Terms::propto(0b011)] {
        let mut ws = vec![0.0; multi_normal_workspace_len(n)];
        let (mut gy, mut gm, mut gl) = (vec![0.0; n * n_obs], vec![0.0; n], vec![0.0; n * n]);
        multi_normal_cholesky_lpdf(
            &y,
            &mu,
            &l,
            n,
            n_obs,
            terms,
            Some(&mut gy),
            Some(&mut gm),
            Some(&mut gl),
            &mut ws,
        )
        .unwrap();
        let eval = |y: &[f64], mu: &[f64], l: &[f64]| {
            let mut ws = vec![0.0; 2 * n];
            multi_normal_cholesky_lpdf(y, mu, l, n, n_obs, terms, None, None, None, &mut ws)
                .unwrap()
        };
        check("mnc y", &y, &gy, 0..n * n_obs, &|v: &[f64]| {
            eval(v, &mu, &l)
        });
        check("mnc mu", &mu, &gm, 0..n, &|v: &[f64]| eval(&y, v, &l));
        if terms.include(1 << 2) {
            check(
                "mnc L",
                &l,
                &gl,
                (0..n).flat_map(|j| (j..n).map(move |i| i + j * n)),
                &|v: &[f64]| eval(&y, &mu, v),
            );
        }

        let (mut gy, mut gm, mut gs) = (vec![0.0; n * n_obs], vec![0.0; n], vec![0.0; n * n]);
        multi_normal_lpdf(
            &y,
            &mu,
            &sigma,
            n,
            n_obs,
            terms,
            Some(&mut gy),
            Some(&mut gm),
            Some(&mut gs),
            &mut ws,
        )
        .unwrap();
        let eval = |y: &[f64], mu: &[f64], s: &[f64]| {
            let mut ws = vec![0.0; multi_normal_workspace_len(n)];
            multi_normal_lpdf(y, mu, s, n, n_obs, terms, None, None, None, &mut ws).unwrap()
        };
        check("mn y", &y, &gy, 0..n * n_obs, &|v: &[f64]| {
            eval(v, &mu, &sigma)
        });
        check("mn mu", &mu, &gm, 0..n, &|v: &[f64]| eval(&y, v, &sigma));
        if terms.include(1 << 2) {
            check_symmetric_pairs("mn Sigma", &sigma, n, &gs, &|v: &[f64]| eval(&y, &mu, v));
        }
    }
    // Per-observation means.
    let mus = rng.vec(n * n_obs);
    let mut ws = vec![0.0; 2 * n];
    let mut gm = vec![0.0; n * n_obs];
    multi_normal_cholesky_lpdf(
        &y,
        &mus,
        &l,
        n,
        n_obs,
        Terms::FULL,
        None,
        Some(&mut gm),
        None,
        &mut ws,
    )
    .unwrap();
    check("mnc per-obs mu", &mus, &gm, 0..n * n_obs, &|v: &[f64]| {
        let mut ws = vec![0.0; 2 * n];
        multi_normal_cholesky_lpdf(&y, v, &l, n, n_obs, Terms::FULL, None, None, None, &mut ws)
            .unwrap()
    });
}

#[test]
fn simplex_density_gradients() {
    let theta = [0.2, 0.5, 0.3];
    let alpha = [1.5, 0.7, 3.0];
    let (mut gt, mut ga) = ([0.0; 3], [0.0; 3]);
    dirichlet_lpdf(&theta, &alpha, Terms::FULL, Some(&mut gt), Some(&mut ga)).unwrap();
    check("dirichlet alpha", &alpha, &ga, 0..3, &|a: &[f64]| {
        dirichlet_lpdf(&theta, a, Terms::FULL, None, None).unwrap()
    });
    // theta lives on the simplex; check the directional derivative along e_i − e_j.
    for (i, j) in [(0, 1), (1, 2), (0, 2)] {
        let f = |t: f64| {
            let mut th = theta;
            th[i] += t;
            th[j] -= t;
            dirichlet_lpdf(&th, &alpha, Terms::FULL, None, None).unwrap()
        };
        let fd = (f(H) - f(-H)) / (2.0 * H);
        assert!(rel(gt[i] - gt[j], fd) < 1e-6, "dirichlet theta ({i},{j})");
    }

    let ns = [3, 0, 5];
    let mut gt = [0.0; 3];
    multinomial_lpmf(&ns, &theta, Terms::FULL, Some(&mut gt)).unwrap();
    for (i, j) in [(0, 1), (1, 2), (0, 2)] {
        let f = |t: f64| {
            let mut th = theta;
            th[i] += t;
            th[j] -= t;
            multinomial_lpmf(&ns, &th, Terms::FULL, None).unwrap()
        };
        let fd = (f(H) - f(-H)) / (2.0 * H);
        assert!(rel(gt[i] - gt[j], fd) < 1e-6, "multinomial theta ({i},{j})");
    }
    let beta = [0.3, -0.2, 1.1];
    let mut gb = [0.0; 3];
    multinomial_logit_lpmf(&ns, &beta, Terms::FULL, Some(&mut gb)).unwrap();
    check("multinomial_logit", &beta, &gb, 0..3, &|b: &[f64]| {
        multinomial_logit_lpmf(&ns, b, Terms::FULL, None).unwrap()
    });
    let mut gb = [0.0; 3];
    categorical_logit_lpmf(&[1, 3, 3], &beta, Terms::FULL, Some(&mut gb)).unwrap();
    check("categorical_logit", &beta, &gb, 0..3, &|b: &[f64]| {
        categorical_logit_lpmf(&[1, 3, 3], b, Terms::FULL, None).unwrap()
    });
    let mut gt = [0.0; 3];
    categorical_lpmf(&[1, 3, 3], &theta, Terms::FULL, Some(&mut gt)).unwrap();
    assert_eq!(gt, [1.0 / 0.2, 0.0, 2.0 / 0.3]);
}

#[test]
fn lkj_gradients() {
    let mut rng = Rng(9);
    let k = 4;
    // A valid Cholesky factor of a correlation matrix: normalise rows of a lower matrix.
    let mut l = rng.lower(k);
    for r in 0..k {
        let norm: f64 = (0..=r)
            .map(|c| l[r + c * k] * l[r + c * k])
            .sum::<f64>()
            .sqrt();
        for c in 0..=r {
            l[r + c * k] /= norm;
        }
    }
    let eta = 1.7;
    let (mut gl, mut ge) = (vec![0.0; k * k], 0.0);
    lkj_corr_cholesky_lpdf(&l, k, eta, Terms::FULL, Some(&mut gl), Some(&mut ge)).unwrap();
    check(
        "lkj_chol L",
        &l,
        &gl,
        (0..k).map(|i| i + i * k),
        &|v: &[f64]| lkj_corr_cholesky_lpdf(v, k, eta, Terms::FULL, None, None).unwrap(),
    );
    check("lkj_chol eta", &[eta], &[ge], 0..1, &|p: &[f64]| {
        lkj_corr_cholesky_lpdf(&l, k, p[0], Terms::FULL, None, None).unwrap()
    });

    let mut omega = vec![0.0; k * k];
    tcrossprod(&l, k, k, &mut omega);
    let (mut go, mut ge) = (vec![0.0; k * k], 0.0);
    let mut ws = vec![0.0; 2 * k * k];
    lkj_corr_lpdf(
        &omega,
        k,
        eta,
        Terms::FULL,
        Some(&mut go),
        Some(&mut ge),
        &mut ws,
    )
    .unwrap();
    check("lkj eta", &[eta], &[ge], 0..1, &|p: &[f64]| {
        let mut ws = vec![0.0; 2 * k * k];
        lkj_corr_lpdf(&omega, k, p[0], Terms::FULL, None, None, &mut ws).unwrap()
    });
    // Off-diagonal symmetric pairs (the diagonal must stay 1).
    for j in 0..k {
        for i in (j + 1)..k {
            let f = |t: f64| {
                let mut o = omega.clone();
                o[i + j * k] += t;
                o[j + i * k] += t;
                let mut ws = vec![0.0; 2 * k * k];
                lkj_corr_lpdf(&o, k, eta, Terms::FULL, None, None, &mut ws).unwrap()
            };
            let fd = (f(H) - f(-H)) / (2.0 * H);
            assert!(
                rel(go[i + j * k] + go[j + i * k], fd) < 1e-6,
                "lkj Omega ({i},{j})"
            );
        }
    }
}

#[test]
fn lower_tri_and_diagonal_products() {
    let mut rng = Rng(10);
    for (m, n) in [(4, 4), (5, 3)] {
        let l = rng.vec(m * n);
        let c = rng.vec(m * m);
        let mut g = vec![0.0; m * n];
        multiply_lower_tri_self_transpose_adjoint(&l, m, n, &c, &mut g);
        let lower = (0..n).flat_map(|p| (p..m).map(move |i| i + p * m));
        check(
            "multiply_lower_tri_self_transpose",
            &l,
            &g,
            lower,
            &|v: &[f64]| {
                let mut o = vec![0.0; m * m];
                multiply_lower_tri_self_transpose(v, m, n, &mut o);
                weighted(&c, &o)
            },
        );
        // Entries above the diagonal are ignored: no value change, no adjoint.
        let mut o1 = vec![0.0; m * m];
        multiply_lower_tri_self_transpose(&l, m, n, &mut o1);
        let mut lt = l.clone();
        for p in 0..n {
            for i in 0..p.min(m) {
                lt[i + p * m] = 0.0;
                assert_eq!(g[i + p * m], 0.0);
            }
        }
        let mut o2 = vec![0.0; m * m];
        tcrossprod(&lt, m, n, &mut o2);
        assert!(o1.iter().zip(&o2).all(|(a, b)| (a - b).abs() < 1e-14));
    }
    let (m, n) = (3, 4);
    let mat = rng.vec(m * n);
    let vm = rng.vec(m);
    let vn = rng.vec(n);
    let c = rng.vec(m * n);
    let (mut gv, mut gm) = (vec![0.0; m], vec![0.0; m * n]);
    diag_pre_multiply_adjoint(&vm, &mat, m, n, &c, Some(&mut gv), Some(&mut gm));
    let eval = |v: &[f64], a: &[f64]| {
        let mut o = vec![0.0; m * n];
        diag_pre_multiply(v, a, m, n, &mut o);
        weighted(&c, &o)
    };
    check("diag_pre_multiply v", &vm, &gv, 0..m, &|v: &[f64]| {
        eval(v, &mat)
    });
    check(
        "diag_pre_multiply M",
        &mat,
        &gm,
        0..m * n,
        &|a: &[f64]| eval(&vm, a),
    );
    let (mut gv, mut gm) = (vec![0.0; n], vec![0.0; m * n]);
    diag_post_multiply_adjoint(&mat, m, n, &vn, &c, Some(&mut gm), Some(&mut gv));
    let eval = |a: &[f64], v: &[f64]| {
        let mut o = vec![0.0; m * n];
        diag_post_multiply(a, m, n, v, &mut o);
        weighted(&c, &o)
    };
    check("diag_post_multiply v", &vn, &gv, 0..n, &|v: &[f64]| {
        eval(&mat, v)
    });
    check(
        "diag_post_multiply M",
        &mat,
        &gm,
        0..m * n,
        &|a: &[f64]| eval(a, &vn),
    );
}
