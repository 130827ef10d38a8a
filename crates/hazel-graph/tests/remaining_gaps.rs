//! The small gaps of issue 8 closed beside the complex linear algebra:
//! - deprecated but valid Stan runs (only Stan's *Removed Functions/Features* may be
//!   rejected): integer division with `/`, `_lp` functions in transformed parameters and
//!   `lkj_cov`, each compared with the same density written without the deprecated construct
//!   (the checker's warnings are tested in hazel-check; `lkj_cov`'s value against stanli in
//!   `dist_library`);
//! - `corr_matrix_unconstrain` of a parameter-dependent matrix, by round trips and finite
//!   differences.

mod common;

use common::{build, rel};
use hazel_density::LogDensity;

fn lp_grad(src: &str, data: &str, q: &[f64]) -> (f64, Vec<f64>) {
    let m = build(src, data).expect("build");
    let mut ws = m.new_workspace();
    let mut g = vec![0.0; q.len()];
    let lp = m.log_density_gradient(&mut ws, q, &mut g).expect("finite");
    (lp, g)
}

fn same(a: (&str, &str), b: (&str, &str), points: &[&[f64]]) {
    for q in points {
        let (lp1, g1) = lp_grad(a.0, a.1, q);
        let (lp2, g2) = lp_grad(b.0, b.1, q);
        assert!(rel(lp1, lp2) < 1e-13, "{lp1} vs {lp2}");
        for (x, y) in g1.iter().zip(&g2) {
            assert!(rel(*x, *y) < 1e-12, "{g1:?} vs {g2:?}");
        }
    }
}

#[test]
fn integer_division_rounds_towards_zero() {
    same(
        (
            "data { int n; int m; } parameters { real x; }
             model { x ~ normal(n / 2 + m / 3 + (-n) / 2, 1); }",
            r#"{"n": 7, "m": -5}"#,
        ),
        // 7/2 = 3, −5/3 = −1, −7/2 = −3 (C++ truncation)
        ("parameters { real x; } model { x ~ normal(-1, 1); }", "{}"),
        &[&[0.3], &[-2.0]],
    );
}

#[test]
fn lp_functions_in_transformed_parameters_add_to_target() {
    same(
        (
            "functions { real f_lp(real x) { target += -2 * x; return x * x; } }
             parameters { real<lower=0> s; }
             transformed parameters { real t = f_lp(s); }
             model { s ~ exponential(1); t ~ normal(0, 3); }",
            "{}",
        ),
        (
            "parameters { real<lower=0> s; }
             transformed parameters { real t = s * s; }
             model { target += -2 * s; s ~ exponential(1); t ~ normal(0, 3); }",
            "{}",
        ),
        &[&[0.3], &[-1.2], &[0.9]],
    );
}

#[test]
fn lkj_cov_runs() {
    let src = "parameters { cov_matrix[2] S; }
               model { S ~ lkj_cov(rep_vector(0, 2), rep_vector(1, 2), 2.0); }";
    let (lp, g) = lp_grad(src, "{}", &[0.1, -0.2, 0.3]);
    assert!(lp.is_finite() && g.iter().all(|x| x.is_finite()));
}

#[test]
fn corr_matrix_unconstrain_of_parameters_inverts_the_transform() {
    let w = "[0.7, -1.3, 0.4]'";
    let round_trip = build(
        &format!(
            "parameters {{ vector[3] y; }}
             model {{ y ~ normal(0, 1);
                      target += dot_product({w}, corr_matrix_unconstrain(corr_matrix_constrain(y, 3))); }}"
        ),
        "{}",
    )
    .expect("build");
    assert!(!round_trip.is_dynamic());
    let plain = format!(
        "parameters {{ vector[3] y; }} model {{ y ~ normal(0, 1); target += dot_product({w}, y); }}"
    );
    for q in [[0.3, -0.4, 0.8], [-1.1, 0.5, 0.2], [1.5, 0.9, -2.0]] {
        let mut ws = round_trip.new_workspace();
        let mut g1 = vec![0.0; 3];
        let l1 = round_trip
            .log_density_gradient(&mut ws, &q, &mut g1)
            .expect("finite");
        let (l2, g2) = lp_grad(&plain, "{}", &q);
        assert!(rel(l1, l2) < 1e-12, "{l1} vs {l2}");
        for (x, y) in g1.iter().zip(&g2) {
            assert!(rel(*x, *y) < 1e-9, "{g1:?} vs {g2:?}");
        }
    }
    // A general (not unit-diagonal) function of parameters: gradient by finite differences,
    // and a matrix that is not a correlation matrix is rejected naming the function.
    let src = "parameters { real<lower=-0.9, upper=0.9> r; real<lower=-0.5, upper=0.5> s; }
               model { matrix[3, 3] O = [[1, r, s * r], [r, 1, s], [s * r, s, 1]];
                       target += sum(corr_matrix_unconstrain(O) .* [0.3, -0.8, 1.1]'); }";
    let m = build(src, "{}").expect("build");
    for q in [[0.2, -0.3], [-0.7, 0.5]] {
        let mut ws = m.new_workspace();
        let mut g = vec![0.0; 2];
        m.log_density_gradient(&mut ws, &q, &mut g).expect("finite");
        for k in 0..2 {
            let h = 1e-6;
            let (mut up, mut down) = (q, q);
            up[k] += h;
            down[k] -= h;
            let fd = (lp_grad(src, "{}", &up).0 - lp_grad(src, "{}", &down).0) / (2.0 * h);
            assert!(
                (g[k] - fd).abs() < 1e-6 * fd.abs().max(1.0),
                "{g:?} vs {fd}"
            );
        }
    }
    let bad = build(
        "parameters { real<lower=0.5, upper=2> d; }
         model { target += sum(corr_matrix_unconstrain([[d, 0.1], [0.1, 1]])); }",
        "{}",
    )
    .expect("build");
    let err = bad
        .log_density_gradient(&mut bad.new_workspace(), &[1.0], &mut [0.0])
        .expect_err("not a correlation matrix");
    assert!(
        err.message.contains("corr_matrix_unconstrain"),
        "{}",
        err.message
    );
}
