//! Gradients of the ordinal and multivariate densities of `hazel_math::linalg::densities`
//! (ordered_logistic, ordered_probit, multinomial, multinomial_logit, multi_student_t,
//! multi_student_t_cholesky, multi_normal_prec, lkj_corr, lkj_corr_cholesky) against central
//! finite differences of their values, for every `propto` mask; and the part `propto` drops
//! does not depend on any varying argument.

use hazel_math::dist::Terms;
use hazel_math::linalg::*;

const H: f64 = 1e-6;

/// Bit of real argument `i` in the function's mask (`offset` 1 when the variate is an int).
fn masks(n_args: usize, offset: u32) -> Vec<Terms> {
    let mut v = vec![Terms::FULL];
    for m in 0..(1u32 << n_args) {
        v.push(Terms::propto(m << offset));
    }
    v
}

/// `f`: a density as a function of its real arguments, returning the value and adding the
/// partials into its third argument.
fn check(
    name: &str,
    f: &impl Fn(&[Vec<f64>], Terms, &mut [Vec<f64>]) -> f64,
    args: &[Vec<f64>],
    offset: u32,
    symmetric: &[usize],
) {
    check_with(name, f, args, offset, symmetric, &[])
}

/// As [`check`]; the arguments in `lower` are Cholesky factors whose upper triangle must stay 0.
fn check_with(
    name: &str,
    f: &impl Fn(&[Vec<f64>], Terms, &mut [Vec<f64>]) -> f64,
    args: &[Vec<f64>],
    offset: u32,
    symmetric: &[usize],
    lower: &[usize],
) {
    for terms in masks(args.len(), offset) {
        let mut grads: Vec<Vec<f64>> = args.iter().map(|a| vec![0.0; a.len()]).collect();
        f(args, terms, &mut grads);
        for (a, arg) in args.iter().enumerate() {
            // A symmetric matrix argument moves both triangles together; its symmetric
            // gradient is checked on (i, j) and (j, i) at once.
            let k = symmetric
                .contains(&a)
                .then(|| (arg.len() as f64).sqrt() as usize);
            for i in 0..arg.len() {
                let (r, c) = k.map_or((i, 0), |k| (i % k, i / k));
                if k.is_some() && r < c {
                    continue;
                }
                if lower.contains(&a) {
                    let k = (arg.len() as f64).sqrt() as usize;
                    if i % k < i / k {
                        continue;
                    }
                }
                let bump = |d: f64| {
                    let mut x = args.to_vec();
                    x[a][i] += d;
                    if let Some(k) = k {
                        if r != c {
                            x[a][c + r * k] += d;
                        }
                    }
                    let mut g: Vec<Vec<f64>> = args.iter().map(|a| vec![0.0; a.len()]).collect();
                    f(&x, terms, &mut g)
                };
                let fd = (bump(H) - bump(-H)) / (2.0 * H);
                let an = match k {
                    Some(k) if r != c => grads[a][i] + grads[a][c + r * k],
                    _ => grads[a][i],
                };
                assert!(
                    (fd - an).abs() <= 1e-6 * fd.abs().max(1.0),
                    "{name} {terms:?} arg {a}[{i}]: analytic {an} vs finite difference {fd}"
                );
            }
        }
        // What propto dropped depends on constant arguments only.
        if terms.propto {
            let mut g: Vec<Vec<f64>> = args.iter().map(|a| vec![0.0; a.len()]).collect();
            let dropped =
                |x: &[Vec<f64>], g: &mut [Vec<f64>]| f(x, Terms::FULL, g) - f(x, terms, g);
            let d0 = dropped(args, &mut g);
            for (a, arg) in args.iter().enumerate() {
                if terms.varying & (1 << (a as u32 + offset)) == 0 {
                    continue;
                }
                let mut x = args.to_vec();
                for (i, v) in x[a].iter_mut().enumerate() {
                    let (r, c) = if symmetric.contains(&a) {
                        let k = (arg.len() as f64).sqrt() as usize;
                        (i % k, i / k)
                    } else {
                        (0, 0)
                    };
                    if r == c {
                        *v *= 1.01;
                    }
                }
                let d1 = dropped(&x, &mut g);
                assert!(
                    (d0 - d1).abs() <= 1e-10 * d0.abs().max(1.0),
                    "{name} {terms:?}: dropped part {d0} changes to {d1} with argument {a}"
                );
            }
        }
    }
}

fn some(g: &mut [f64]) -> Option<&mut [f64]> {
    Some(g)
}

#[test]
fn ordered_logistic_and_probit() {
    let ys = [1i64, 2, 4, 3, 3];
    let eta = vec![0.3, -1.2, 2.0, 0.1, 0.7];
    let shared = vec![-1.0, 0.2, 1.5];
    let per: Vec<f64> = (0..5)
        .flat_map(|i| [-1.0 + 0.1 * i as f64, 0.3, 1.1 + 0.2 * i as f64])
        .collect();
    for (fname, probit) in [("ordered_logistic", false), ("ordered_probit", true)] {
        let f = move |x: &[Vec<f64>], t: Terms, g: &mut [Vec<f64>]| {
            let (g0, g1) = g.split_at_mut(1);
            let run = if probit {
                ordered_probit_lpmf
            } else {
                ordered_logistic_lpmf
            };
            run(&ys, &x[0], &x[1], 3, t, some(&mut g0[0]), some(&mut g1[0])).unwrap()
        };
        check(fname, &f, &[eta.clone(), shared.clone()], 1, &[]);
        check(fname, &f, &[eta.clone(), per.clone()], 1, &[]);
        check(fname, &f, &[vec![0.4], shared.clone()], 1, &[]);
    }
    // Extreme outcomes far in the tails stay finite with finite gradients.
    let mut g = [0.0];
    let mut gc = [0.0; 3];
    let v = ordered_logistic_lpmf(
        &[1],
        &[40.0],
        &shared,
        3,
        Terms::FULL,
        Some(&mut g),
        Some(&mut gc),
    )
    .unwrap();
    assert!(v.is_finite() && (v + 41.0).abs() < 1e-9 && g[0].is_finite());
    let v = ordered_probit_lpmf(
        &[4],
        &[-30.0],
        &shared,
        3,
        Terms::FULL,
        Some(&mut g),
        Some(&mut gc),
    )
    .unwrap();
    assert!(v.is_finite() && g[0].is_finite());
}

#[test]
fn multinomial_families() {
    let ns = [3i64, 0, 5, 2];
    let f = |x: &[Vec<f64>], t: Terms, g: &mut [Vec<f64>]| {
        multinomial_lpmf(&ns, &x[0], t, some(&mut g[0])).unwrap()
    };
    // The simplex constraint has tolerance 1e-8; differences stay inside it only for the
    // value, so the theta gradient is checked against the unconstrained extension.
    let theta = vec![0.1, 0.2, 0.3, 0.4];
    let mut g = vec![vec![0.0; 4]];
    f(std::slice::from_ref(&theta), Terms::FULL, &mut g);
    for i in 0..4 {
        assert!((g[0][i] - ns[i] as f64 / theta[i]).abs() < 1e-12);
    }
    let f = |x: &[Vec<f64>], t: Terms, g: &mut [Vec<f64>]| {
        multinomial_logit_lpmf(&ns, &x[0], t, some(&mut g[0])).unwrap()
    };
    check(
        "multinomial_logit",
        &f,
        &[vec![0.3, -1.0, 0.8, 0.0]],
        1,
        &[],
    );
}

fn spd3() -> Vec<f64> {
    vec![2.0, 0.3, -0.4, 0.3, 1.5, 0.2, -0.4, 0.2, 1.2]
}

fn chol3() -> Vec<f64> {
    vec![1.3, 0.2, -0.3, 0.0, 0.9, 0.4, 0.0, 0.0, 1.1]
}

#[test]
fn multi_student_t_families() {
    let y = vec![0.5, -0.2, 1.1, 0.1, 0.4, -0.7];
    for mu in [vec![0.1, 0.0, 0.3], vec![0.1, 0.0, 0.3, -0.2, 0.5, 0.0]] {
        let f = |x: &[Vec<f64>], t: Terms, g: &mut [Vec<f64>]| {
            let mut ws = vec![0.0; multi_student_t_workspace_len(3)];
            let [g0, g1, g2, g3] = g else { unreachable!() };
            multi_student_t_lpdf(
                &x[0],
                x[1][0],
                &x[2],
                &x[3],
                3,
                2,
                t,
                some(g0),
                Some(&mut g1[0]),
                some(g2),
                some(g3),
                &mut ws,
            )
            .unwrap()
        };
        check(
            "multi_student_t",
            &f,
            &[y.clone(), vec![4.5], mu.clone(), spd3()],
            0,
            &[3],
        );
        let f = |x: &[Vec<f64>], t: Terms, g: &mut [Vec<f64>]| {
            let mut ws = vec![0.0; multi_student_t_cholesky_workspace_len(3)];
            let [g0, g1, g2, g3] = g else { unreachable!() };
            multi_student_t_cholesky_lpdf(
                &x[0],
                x[1][0],
                &x[2],
                &x[3],
                3,
                2,
                t,
                some(g0),
                Some(&mut g1[0]),
                some(g2),
                some(g3),
                &mut ws,
            )
            .unwrap()
        };
        // Only the lower triangle of L is read: the upper triangle has zero partials.
        check(
            "multi_student_t_cholesky",
            &f,
            &[y.clone(), vec![4.5], mu.clone(), chol3()],
            0,
            &[],
        );
    }
    // Σ = L Lᵀ gives the same density as the Cholesky form.
    let l = chol3();
    let mut s = vec![0.0; 9];
    multiply_lower_tri_self_transpose(&l, 3, 3, &mut s);
    let mu = [0.1, 0.0, 0.3];
    let mut ws = vec![0.0; multi_student_t_workspace_len(3)];
    let a = multi_student_t_lpdf(
        &y,
        3.0,
        &mu,
        &s,
        3,
        2,
        Terms::FULL,
        None,
        None,
        None,
        None,
        &mut ws,
    )
    .unwrap();
    let b = multi_student_t_cholesky_lpdf(
        &y,
        3.0,
        &mu,
        &l,
        3,
        2,
        Terms::FULL,
        None,
        None,
        None,
        None,
        &mut ws,
    )
    .unwrap();
    assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    // ν = ∞ is the multivariate normal with all its terms, as in Stan.
    let mut ws2 = vec![0.0; multi_normal_workspace_len(3)];
    let mn = multi_normal_lpdf(&y, &mu, &s, 3, 2, Terms::FULL, None, None, None, &mut ws2).unwrap();
    for t in [Terms::FULL, Terms::propto(0b1)] {
        let inf = multi_student_t_lpdf(
            &y,
            f64::INFINITY,
            &mu,
            &s,
            3,
            2,
            t,
            None,
            None,
            None,
            None,
            &mut ws,
        )
        .unwrap();
        let inf_c = multi_student_t_cholesky_lpdf(
            &y,
            f64::INFINITY,
            &mu,
            &l,
            3,
            2,
            t,
            None,
            None,
            None,
            None,
            &mut ws,
        )
        .unwrap();
        assert!(
            (inf - mn).abs() < 1e-12 && (inf_c - mn).abs() < 1e-12,
            "{inf} {inf_c} vs {mn}"
        );
    }
}

#[test]
fn multi_normal_prec_equals_multi_normal_of_the_inverse() {
    let y = vec![0.5, -0.2, 1.1, 0.1, 0.4, -0.7];
    let f = |x: &[Vec<f64>], t: Terms, g: &mut [Vec<f64>]| {
        let mut ws = vec![0.0; multi_normal_prec_workspace_len(3)];
        let [g0, g1, g2] = g else { unreachable!() };
        multi_normal_prec_lpdf(
            &x[0],
            &x[1],
            &x[2],
            3,
            2,
            t,
            some(g0),
            some(g1),
            some(g2),
            &mut ws,
        )
        .unwrap()
    };
    check(
        "multi_normal_prec",
        &f,
        &[y.clone(), vec![0.1, 0.0, 0.3], spd3()],
        0,
        &[2],
    );
    let omega = spd3();
    let mut sigma = vec![0.0; 9];
    let mut ws = vec![0.0; 64];
    inverse_spd(&omega, 3, &mut sigma, &mut ws).unwrap();
    for i in 0..3 {
        for j in 0..i {
            let m = 0.5 * (sigma[i + 3 * j] + sigma[j + 3 * i]);
            sigma[i + 3 * j] = m;
            sigma[j + 3 * i] = m;
        }
    }
    let mut ws1 = vec![0.0; multi_normal_workspace_len(3)];
    let mut ws2 = vec![0.0; multi_normal_prec_workspace_len(3)];
    let mu = [0.1, 0.0, 0.3];
    let a = multi_normal_lpdf(
        &y,
        &mu,
        &sigma,
        3,
        2,
        Terms::FULL,
        None,
        None,
        None,
        &mut ws1,
    )
    .unwrap();
    let b = multi_normal_prec_lpdf(
        &y,
        &mu,
        &omega,
        3,
        2,
        Terms::FULL,
        None,
        None,
        None,
        &mut ws2,
    )
    .unwrap();
    assert!((a - b).abs() < 1e-10, "{a} vs {b}");
}

#[test]
fn lkj_families_with_a_parameter_shape() {
    // A valid correlation matrix and its Cholesky factor.
    let l = vec![1.0, 0.3, -0.2, 0.0, 0.953_939_2, 0.4, 0.0, 0.0, 0.0];
    let mut l = l;
    l[8] = (1.0f64 - 0.04 - 0.16).sqrt();
    l[4] = (1.0f64 - 0.09).sqrt();
    let f = |x: &[Vec<f64>], t: Terms, g: &mut [Vec<f64>]| {
        let [g0, g1] = g else { unreachable!() };
        lkj_corr_cholesky_lpdf(&x[0], 3, x[1][0], t, some(g0), Some(&mut g1[0])).unwrap()
    };
    check("lkj_corr_cholesky", &f, &[l.clone(), vec![1.7]], 0, &[]);
    let mut omega = vec![0.0; 9];
    multiply_lower_tri_self_transpose(&l, 3, 3, &mut omega);
    // Finite differences leave the unit diagonal alone (symmetric off-diagonal moves only).
    let f = |x: &[Vec<f64>], t: Terms, g: &mut [Vec<f64>]| {
        let [g0, g1] = g else { unreachable!() };
        let mut ws = vec![0.0; 18];
        let mut o = x[0].clone();
        for i in 0..3 {
            o[i + 3 * i] = 1.0;
        }
        let v = lkj_corr_lpdf(&o, 3, x[1][0], t, some(g0), Some(&mut g1[0]), &mut ws).unwrap();
        for i in 0..3 {
            g0[i + 3 * i] = 0.0;
        }
        v
    };
    check("lkj_corr", &f, &[omega, vec![1.7]], 0, &[0]);
}

#[test]
fn dirichlet_multinomial() {
    for ns in [[3i64, 0, 5, 2], [0, 0, 0, 0]] {
        let f = |x: &[Vec<f64>], t: Terms, g: &mut [Vec<f64>]| {
            dirichlet_multinomial_lpmf(&ns, &x[0], t, some(&mut g[0])).unwrap()
        };
        check(
            "dirichlet_multinomial",
            &f,
            &[vec![0.7, 1.3, 2.0, 0.4]],
            1,
            &[],
        );
    }
    // N = 1 in category k: probability α_k / α₀.
    let alpha = [0.7, 1.3, 2.0, 0.4];
    let v = dirichlet_multinomial_lpmf(&[0, 0, 1, 0], &alpha, Terms::FULL, None).unwrap();
    assert!((v - (2.0f64 / 4.4).ln()).abs() < 1e-13, "{v}");
}

#[test]
fn wishart_families() {
    let w = spd3();
    let s = vec![1.0, 0.2, 0.1, 0.2, 0.8, 0.0, 0.1, 0.0, 1.3];
    for (name, inv) in [("wishart", false), ("inv_wishart", true)] {
        let f = |x: &[Vec<f64>], t: Terms, g: &mut [Vec<f64>]| {
            let mut ws = vec![0.0; wishart_workspace_len(3)];
            let [g0, g1, g2] = g else { unreachable!() };
            let run = if inv { inv_wishart_lpdf } else { wishart_lpdf };
            run(
                &x[0],
                x[1][0],
                &x[2],
                3,
                t,
                some(g0),
                Some(&mut g1[0]),
                some(g2),
                &mut ws,
            )
            .unwrap()
        };
        check(name, &f, &[w.clone(), vec![4.3], s.clone()], 0, &[0, 2]);
    }
    let lw = chol3();
    let ls = vec![1.0, 0.2, 0.1, 0.0, 0.87, -0.1, 0.0, 0.0, 1.1];
    for (name, inv) in [("wishart_cholesky", false), ("inv_wishart_cholesky", true)] {
        let f = |x: &[Vec<f64>], t: Terms, g: &mut [Vec<f64>]| {
            let mut ws = vec![0.0; wishart_cholesky_workspace_len(3)];
            let [g0, g1, g2] = g else { unreachable!() };
            let run = if inv {
                inv_wishart_cholesky_lpdf
            } else {
                wishart_cholesky_lpdf
            };
            run(
                &x[0],
                x[1][0],
                &x[2],
                3,
                t,
                some(g0),
                Some(&mut g1[0]),
                some(g2),
                &mut ws,
            )
            .unwrap()
        };
        check_with(
            name,
            &f,
            &[lw.clone(), vec![4.3], ls.clone()],
            0,
            &[],
            &[0, 2],
        );
    }
    // The Cholesky forms are the densities of W = L_W L_Wᵀ times the Jacobian
    // 2^k Π L_ii^{k − i} (0-based i) of W ↦ L_W.
    let mut wm = vec![0.0; 9];
    let mut sm = vec![0.0; 9];
    multiply_lower_tri_self_transpose(&lw, 3, 3, &mut wm);
    multiply_lower_tri_self_transpose(&ls, 3, 3, &mut sm);
    let jac: f64 = 3.0 * std::f64::consts::LN_2
        + (0..3)
            .map(|i| (3 - i) as f64 * lw[i + 3 * i].ln())
            .sum::<f64>();
    let mut ws = vec![0.0; wishart_workspace_len(3)];
    for inv in [false, true] {
        let (a, b) = if inv {
            (
                inv_wishart_lpdf(&wm, 4.3, &sm, 3, Terms::FULL, None, None, None, &mut ws).unwrap(),
                inv_wishart_cholesky_lpdf(&lw, 4.3, &ls, 3, Terms::FULL, None, None, None, &mut ws)
                    .unwrap(),
            )
        } else {
            (
                wishart_lpdf(&wm, 4.3, &sm, 3, Terms::FULL, None, None, None, &mut ws).unwrap(),
                wishart_cholesky_lpdf(&lw, 4.3, &ls, 3, Terms::FULL, None, None, None, &mut ws)
                    .unwrap(),
            )
        };
        assert!(
            (a + jac - b).abs() < 1e-10,
            "inverse {inv}: {a} + {jac} vs {b}"
        );
    }
}

#[test]
fn multi_gp_families() {
    // 2 outputs over 3 points, column-major 2 × 3.
    let y = vec![0.5, 0.1, -0.2, 0.4, 1.1, -0.7];
    let wv = vec![0.8, 2.0];
    let f = |x: &[Vec<f64>], t: Terms, g: &mut [Vec<f64>]| {
        let mut ws = vec![0.0; multi_gp_workspace_len(3)];
        let [g0, g1, g2] = g else { unreachable!() };
        multi_gp_lpdf(
            &x[0],
            &x[1],
            &x[2],
            2,
            3,
            t,
            some(g0),
            some(g1),
            some(g2),
            &mut ws,
        )
        .unwrap()
    };
    check("multi_gp", &f, &[y.clone(), spd3(), wv.clone()], 0, &[1]);
    let f = |x: &[Vec<f64>], t: Terms, g: &mut [Vec<f64>]| {
        let mut ws = vec![0.0; multi_gp_cholesky_workspace_len(3)];
        let [g0, g1, g2] = g else { unreachable!() };
        multi_gp_cholesky_lpdf(
            &x[0],
            &x[1],
            &x[2],
            2,
            3,
            t,
            some(g0),
            some(g1),
            some(g2),
            &mut ws,
        )
        .unwrap()
    };
    check_with(
        "multi_gp_cholesky",
        &f,
        &[y.clone(), chol3(), wv.clone()],
        0,
        &[],
        &[1],
    );
    // Row i is multi_normal(0, Σ / w_i).
    let sigma = spd3();
    let mut total = 0.0;
    let mut ws = vec![0.0; multi_normal_workspace_len(3)];
    for i in 0..2 {
        let row: Vec<f64> = (0..3).map(|j| y[i + 2 * j]).collect();
        let s: Vec<f64> = sigma.iter().map(|v| v / wv[i]).collect();
        total += multi_normal_lpdf(
            &row,
            &[0.0; 3],
            &s,
            3,
            1,
            Terms::FULL,
            None,
            None,
            None,
            &mut ws,
        )
        .unwrap();
    }
    let mut ws = vec![0.0; multi_gp_workspace_len(3)];
    let v = multi_gp_lpdf(
        &y,
        &sigma,
        &wv,
        2,
        3,
        Terms::FULL,
        None,
        None,
        None,
        &mut ws,
    )
    .unwrap();
    assert!((v - total).abs() < 1e-11, "{v} vs {total}");
}

#[test]
fn lkj_cov() {
    let f = |x: &[Vec<f64>], t: Terms, g: &mut [Vec<f64>]| {
        let mut ws = vec![0.0; lkj_cov_workspace_len(3)];
        let [g0, g1, g2, g3] = g else { unreachable!() };
        lkj_cov_lpdf(
            &x[0],
            &x[1],
            &x[2],
            x[3][0],
            3,
            t,
            some(g0),
            some(g1),
            some(g2),
            Some(&mut g3[0]),
            &mut ws,
        )
        .unwrap()
    };
    check(
        "lkj_cov",
        &f,
        &[spd3(), vec![0.1, 0.2, 0.3], vec![1.0, 1.5, 0.7], vec![2.0]],
        0,
        &[0],
    );
    check(
        "lkj_cov (scalar mu, sigma)",
        &f,
        &[spd3(), vec![0.1], vec![1.3], vec![0.6]],
        0,
        &[0],
    );
}
