//! The multivariate and ordinal families (`hazel_graph::mvdist`) against stanli 0.24: log
//! density (CmdStan's `lp__` convention) and gradient of small programs at seeded unconstrained
//! points, from `tests/fixtures/dist_library.json` (made by
//! `scripts/dist/make_library_fixtures.py`). Each program uses its families with parameters in
//! every argument Stan allows, in the `~` form (constants dropped) and the `target += _lpdf`
//! form (constants kept).

mod common;

use common::{build, FdRule};
use hazel_density::{LogDensity, Model};

/// Where Stan's own gradient is approximate (`std_normal_lcdf`'s rational derivative inside
/// `ordered_probit`; the 3F2 series of `beta_neg_binomial_lcdf`), hazel's exact gradient is
/// held to central differences of stanli's log density and to stanli's gradient at this
/// looser tolerance.
const APPROX_TOL: f64 = 1e-4;

#[test]
fn multivariate_and_ordinal_families_match_stanli() {
    common::run_group(
        "dist_library.json",
        &[],
        27,
        FdRule::ApproximateStan(APPROX_TOL),
    );
}

/// Invalid parameter values reject the point with a message naming the function and the
/// argument.
#[test]
fn invalid_arguments_name_the_function_and_argument() {
    let cases = [
        (
            "data { array[3] int y; } parameters { vector[2] c; } model { y ~ ordered_logistic(0.5, c); }",
            r#"{"y": [1, 2, 3]}"#,
            vec![1.0, 0.0],
            "ordered_logistic: Cut-points is not a valid ordered vector",
        ),
        (
            "data { array[3] int y; } parameters { vector[2] c; } model { y ~ ordered_probit(0.5, c); }",
            r#"{"y": [1, 2, 3]}"#,
            vec![1.0, 0.0],
            "ordered_probit: Cut-points is not a valid ordered vector",
        ),
        (
            "data { array[3] int y; } parameters { vector[3] t; } model { y ~ multinomial(t); }",
            r#"{"y": [1, 2, 3]}"#,
            vec![0.2, 0.2, 0.2],
            "multinomial_lpmf: Probabilities parameter is not a valid simplex",
        ),
        (
            "parameters { real nu; } model { [1.0, 2.0]' ~ multi_student_t(nu, [0, 0]', diag_matrix(rep_vector(1, 2))); }",
            "{}",
            vec![-1.0],
            "multi_student_t: Degrees of freedom parameter is -1",
        ),
        (
            "parameters { real a; } model { [1.0, 2.0]' ~ multi_normal_prec([0, 0]', [[1, a], [a, 1]]); }",
            "{}",
            vec![2.0],
            "multi_normal_prec: LDLT_Factor of precision parameter is not positive definite",
        ),
        (
            "parameters { real eta; } model { diag_matrix(rep_vector(1, 3)) ~ lkj_corr(eta); }",
            "{}",
            vec![-0.5],
            "lkj_corr_lpdf: Shape parameter is -0.5",
        ),
    ];
    // Empty observation lists contribute nothing (and do not index past the data).
    let model = build(
        "data { int N; array[N] vector[2] y; } parameters { vector[2] mu; } model { y ~ multi_student_t(4, mu, [[1, 0], [0, 1]]); y ~ multi_normal_prec(mu, [[1, 0], [0, 1]]); }",
        r#"{"N": 0, "y": []}"#,
    )
    .expect("compiles");
    let mut ws = model.new_workspace();
    let mut g = vec![0.0; 2];
    assert_eq!(
        model.log_density_gradient(&mut ws, &[0.1, 0.2], &mut g),
        Ok(0.0)
    );
    for (src, data, q, want) in cases {
        let model = build(src, data).expect("compiles");
        let mut ws = model.new_workspace();
        let mut grad = vec![0.0; q.len()];
        let err = model
            .log_density_gradient(&mut ws, &q, &mut grad)
            .expect_err("invalid point must be rejected");
        assert!(
            err.to_string().contains(want),
            "{src}: error `{err}` does not contain `{want}`"
        );
    }
}

/// Every new `_rng` runs in generated quantities through the lowering, draws valid values,
/// and is reproducible from the stream.
#[test]
fn generated_quantities_draw_from_the_new_rngs() {
    let src = r#"
parameters { real mu; }
model { mu ~ normal(0, 1); }
generated quantities {
  int yl = ordered_logistic_rng(mu, [-1, 0.5, 2]');
  int yp = ordered_probit_rng(mu, [-1, 0.5, 2]');
  array[3] int m = multinomial_rng([0.2, 0.3, 0.5]', 10);
  array[3] int ml = multinomial_logit_rng([0.2, mu, -0.5]', 7);
  array[3] int dm = dirichlet_multinomial_rng([1.0, 2.0, 0.5]', 9);
  vector[2] t = multi_student_t_rng(5, [mu, 0]', [[2, 0.3], [0.3, 1]]);
  array[2] vector[2] tc = multi_student_t_cholesky_rng(5, {[mu, 0]', [1, 1]'}, [[1.2, 0], [0.3, 0.8]]);
  matrix[3, 3] lc = lkj_corr_rng(3, 2.0);
  matrix[3, 3] lcc = lkj_corr_cholesky_rng(3, 2.0);
  matrix[2, 2] w = wishart_rng(4, [[2, 0.3], [0.3, 1]]);
  matrix[2, 2] wc = wishart_cholesky_rng(4, [[1.2, 0], [0.3, 0.8]]);
  matrix[2, 2] iw = inv_wishart_rng(4, [[2, 0.3], [0.3, 1]]);
  matrix[2, 2] iwc = inv_wishart_cholesky_rng(4, [[1.2, 0], [0.3, 0.8]]);
  int bnb = beta_neg_binomial_rng(3, 4, 2);
  real sde = skew_double_exponential_rng(mu, 1, 0.3);
}
"#;
    let model = build(src, "{}").expect("compiles");
    let names = model.output_names();
    let col = |name: &str| names.iter().position(|n| n == name).expect(name);
    let mut ws = model.new_workspace();
    let mut out = vec![0.0; names.len()];
    let mut again = vec![0.0; names.len()];
    for seed in 0..50 {
        let mut r1 =
            hazel_density::StreamRng::new(seed, 0, hazel_rng::Purpose::GeneratedQuantities);
        let mut r2 =
            hazel_density::StreamRng::new(seed, 0, hazel_rng::Purpose::GeneratedQuantities);
        model
            .write_output(&mut ws, &[0.3], &mut r1, &mut out)
            .expect("draws");
        model
            .write_output(&mut ws, &[0.3], &mut r2, &mut again)
            .expect("draws");
        assert_eq!(out, again);
        for y in ["yl", "yp"] {
            assert!((1.0..=4.0).contains(&out[col(y)]));
        }
        for (v, n) in [("m", 10.0), ("ml", 7.0), ("dm", 9.0)] {
            let s: f64 = (1..=3).map(|i| out[col(&format!("{v}.{i}"))]).sum();
            assert_eq!(s, n, "{v}");
        }
        for i in 1..=3 {
            assert!((out[col(&format!("lc.{i}.{i}"))] - 1.0).abs() < 1e-12);
        }
        assert_eq!(out[col("lcc.1.2")], 0.0);
        let row: f64 = (1..=3)
            .map(|j| out[col(&format!("lcc.3.{j}"))].powi(2))
            .sum();
        assert!((row - 1.0).abs() < 1e-12);
        for m in ["w", "iw"] {
            let (a, b, c) = (
                out[col(&format!("{m}.1.1"))],
                out[col(&format!("{m}.2.2"))],
                out[col(&format!("{m}.2.1"))],
            );
            assert!(
                a > 0.0 && a * b > c * c && c == out[col(&format!("{m}.1.2"))],
                "{m}"
            );
        }
        for m in ["wc", "iwc"] {
            assert_eq!(out[col(&format!("{m}.1.2"))], 0.0);
            assert!(out[col(&format!("{m}.1.1"))] > 0.0 && out[col(&format!("{m}.2.2"))] > 0.0);
        }
        assert!(out[col("bnb")] >= 0.0 && out[col("bnb")].fract() == 0.0);
        assert!(out[col("sde")].is_finite() && out[col("tc.2.1")].is_finite());
    }
}
