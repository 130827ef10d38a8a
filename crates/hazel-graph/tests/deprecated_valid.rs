//! Deprecated but valid Stan runs (only Stan's *Removed Functions/Features* may be rejected):
//! integer division with `/`, `_lp` functions in transformed parameters and `lkj_cov`, each
//! compared with the same density written without the deprecated construct. (The checker's
//! warnings are tested in hazel-check; `lkj_cov`'s value against stanli in `dist_library`.)

mod common;

use common::{build, rel};
use hazel_density::{LogDensity, Model};

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
