//! The GLM families and the remaining distributions / special functions of issue 8 against
//! stanli 0.24: log density (CmdStan's `lp__` convention) and gradient of small programs at
//! seeded unconstrained points, from `tests/fixtures/dist2.json` (made by
//! `scripts/dist/make_dist2_fixtures.py`). Each program uses its family with parameters in every
//! differentiable argument, in the `~` form (constants dropped) and the `target += _lpdf` form.

mod common;

use common::{build, FdRule};
use hazel_density::{LogDensity, Model};

#[test]
fn glm_families_match_stanli() {
    common::run_group(
        "dist2.json",
        &[
            "binomial_logit_glm",
            "neg_binomial_2_log_glm",
            "ordered_logistic_glm",
            "categorical_logit_glm",
            "glm_existing_forms",
        ],
        5,
        FdRule::Both,
    );
}

#[test]
fn univariate_families_match_stanli() {
    common::run_group(
        "dist2.json",
        &[
            "loglogistic",
            "von_mises_cdfs",
            "poisson_binomial",
            "modified_bessel_second_kind",
            "hypergeometric_1F0",
        ],
        6,
        FdRule::Both,
    );
}

/// Stan's wiener gradient comes from truncated series (~1e-8 relative): hazel's exact
/// partials are held to central differences of stanli's log density and to stanli's gradient
/// within 1e-6; values within 1e-8.
#[test]
fn wiener_matches_stanli() {
    common::run_group("dist2.json", &["wiener"], 2, FdRule::ApproximateStan(1e-6));
}

/// Matrix densities stanli lacks, against mpmath at 50 digits: matrix_normal_prec by its
/// closed form (with Stan Math's `N/2 log|Σ|`), gaussian_dlm_obs as the joint normal density
/// of the stacked observations (so the Kalman filter's recursion is checked against an
/// independent formula), both forms of V, `~` and `target +=`.
#[test]
fn matrix_densities_match_mpmath() {
    common::run_group(
        "dist2.json",
        &["matrix_normal_prec", "gaussian_dlm_obs"],
        2,
        FdRule::Both,
    );
}

/// Functions stanli lacks, against mpmath at 50 digits (value of `target += f(...)` with
/// unconstrained parameters, gradient by mpmath's differentiation): every argument varying,
/// vectorised forms, and a data-only call folded to a constant.
#[test]
fn special_functions_match_mpmath() {
    common::run_group(
        "dist2.json",
        &["inc_beta", "inv_inc_beta", "hypergeometric"],
        3,
        FdRule::Both,
    );
}

/// Outside its domain a special function fails the evaluation, naming itself.
#[test]
fn special_function_domain_errors_name_the_function() {
    for (src, want) in [
        (
            "parameters { real a; } model { target += inc_beta(a, 2, 0.5); }",
            "inc_beta: arguments (-1, 2, 0.5)",
        ),
        (
            "parameters { real a; } model { target += sum(inv_inc_beta(2, 3, [0.5, a]')); }",
            "inv_inc_beta: arguments (2, 3, -1)",
        ),
        (
            "parameters { real a; } model { target += hypergeometric_3F2([1, 2, a + 1.5]', [3, 4]', 1.5); }",
            "hypergeometric_pFq: the series of a 3F2 function does not converge at z = 1.5",
        ),
        (
            "parameters { real t; } model { target += wiener_lpdf(0.5 | 1.0, t + 1.75, 0.5, 0.0); }",
            "wiener_lpdf: Random variable = 0.5, but must be greater than nondecision time = 0.75",
        ),
        (
            "parameters { real a; } model { target += hypergeometric_2F1(1, a, -1, 0.5); }",
            "b[1] is -1, but must not be a non-positive integer",
        ),
    ] {
        let model = build(src, "{}").expect("compiles");
        let mut ws = model.new_workspace();
        let mut g = vec![0.0; 1];
        let err = model
            .log_density_gradient(&mut ws, &[-1.0], &mut g)
            .expect_err("outside the domain")
            .to_string();
        assert!(err.contains(want), "{src}: `{err}` lacks `{want}`");
    }
    // A data-only call outside the domain: an error at compilation or at evaluation.
    let err = match build("model { target += inc_beta(2, 3, 1.5); }", "{}") {
        Err(e) => e,
        Ok(model) => {
            let mut ws = model.new_workspace();
            model
                .log_density_gradient(&mut ws, &[], &mut [])
                .expect_err("outside the domain")
                .to_string()
        }
    };
    assert!(err.contains("inc_beta: arguments (2, 3, 1.5)"), "{err}");
}

/// Column `name`'s values over `draws` evaluations of generated quantities (fresh streams).
fn gq_draws(src: &str, data: &str, q: &[f64], draws: u64) -> (Vec<String>, Vec<Vec<f64>>) {
    let model = build(src, data).expect("compiles");
    let names = model.output_names();
    let mut ws = model.new_workspace();
    let mut rows = Vec::with_capacity(draws as usize);
    for seed in 0..draws {
        let mut r = hazel_density::StreamRng::new(seed, 0, hazel_rng::Purpose::GeneratedQuantities);
        let mut out = vec![0.0; names.len()];
        model
            .write_output(&mut ws, q, &mut r, &mut out)
            .expect("draws");
        rows.push(out);
    }
    (names, rows)
}

/// Mean of column `c`, and whether it lies within 4.5 standard errors of `mean` given the
/// exact variance `var` over `n` independent draws.
fn mean_within(rows: &[Vec<f64>], c: usize, mean: f64, var: f64) -> (f64, bool) {
    let n = rows.len() as f64;
    let m = rows.iter().map(|r| r[c]).sum::<f64>() / n;
    (m, (m - mean).abs() <= 4.5 * (var / n).sqrt())
}

const GLM_RNG: &str = r#"
data { matrix[3, 2] X; }
parameters { real a; }
model { a ~ normal(0, 1); }
generated quantities {
  array[3] int y = bernoulli_logit_glm_rng(X, a, [0.5, -1.0]');
  array[3] int yv = bernoulli_logit_glm_rng(X, [0.1, 0.2, 0.3]', [0.5, -1.0]');
  array[1] int yr = bernoulli_logit_glm_rng([1.0, 2.0], a, [0.5, -1.0]');
}
"#;

#[test]
fn bernoulli_logit_glm_rng_draws_at_the_linear_predictor() {
    let src = GLM_RNG;
    let x = [[0.3, -0.2], [1.5, 0.7], [-1.0, 0.4]];
    let data = r#"{"X": [[0.3, -0.2], [1.5, 0.7], [-1.0, 0.4]]}"#;
    let a = 0.25;
    let (names, rows) = gq_draws(src, data, &[a], 20_000);
    let col = |n: &str| names.iter().position(|x| x == n).expect(n);
    let p = |eta: f64| 1.0 / (1.0 + (-eta).exp());
    for i in 0..3 {
        let xb = 0.5 * x[i][0] - 1.0 * x[i][1];
        for (v, alpha) in [("y", a), ("yv", [0.1, 0.2, 0.3][i])] {
            let pi = p(alpha + xb);
            let (m, ok) = mean_within(&rows, col(&format!("{v}.{}", i + 1)), pi, pi * (1.0 - pi));
            assert!(ok, "{v}[{}]: mean {m} vs {pi}", i + 1);
        }
    }
    let pi = p(a + 0.5 - 2.0);
    let (m, ok) = mean_within(&rows, col("yr.1"), pi, pi * (1.0 - pi));
    assert!(ok, "yr: mean {m} vs {pi}");
    assert!(rows
        .iter()
        .all(|r| r[col("y.2")] == 0.0 || r[col("y.2")] == 1.0));
}

/// Size mismatches and outcomes outside the support are evaluation errors naming the
/// function, never panics.
#[test]
fn glm_errors_name_the_function() {
    let cases = [
        (
            "data { matrix[2, 2] X; array[2] int y; } parameters { vector[3] b; } model { y ~ bernoulli_logit_glm(X, 0, b); }",
            "[1, 0]",
            "bernoulli_logit_glm: Columns of x (2) and size of beta (3)",
        ),
        (
            "data { matrix[2, 2] X; array[2] int y; } parameters { matrix[2, 3] B; } model { y ~ categorical_logit_glm(X, rep_vector(0, 3), B); }",
            "[1, 4]",
            "categorical_logit_glm: categorical outcome y[2] is 4",
        ),
        (
            "data { matrix[2, 2] X; array[2] int y; } parameters { vector[2] b; } model { y ~ neg_binomial_2_log_glm(X, 0, b, -1); }",
            "[1, 2]",
            "neg_binomial_2_log_lpmf: Precision parameter",
        ),
    ];
    for (src, y, want) in cases {
        let data = format!(r#"{{"X": [[1, 2], [3, 4]], "y": {y}}}"#);
        let err = match build(src, &data) {
            Err(e) => e,
            Ok(model) => {
                let mut ws = model.new_workspace();
                let q = vec![0.1; model.dim()];
                let mut g = vec![0.0; q.len()];
                match model.log_density_gradient(&mut ws, &q, &mut g) {
                    Err(e) => e.to_string(),
                    Ok(v) => panic!("{src}: evaluated to {v}"),
                }
            }
        };
        assert!(err.contains(want), "{src}: `{err}` lacks `{want}`");
    }
}

const UNIVARIATE_RNGS: &str = r#"
parameters { real mu; }
model { mu ~ normal(0, 1); }
generated quantities {
  real ll = loglogistic_rng(2.0, 5.0);
  int pb = poisson_binomial_rng([0.1, 0.5, 0.9, 0.3]');
}
"#;

/// Draws of the new univariate rngs against their exact means and variances.
#[test]
fn univariate_rngs_match_their_moments() {
    let (names, rows) = gq_draws(UNIVARIATE_RNGS, "{}", &[0.0], 20_000);
    let col = |n: &str| names.iter().position(|x| x == n).expect(n);
    // loglogistic(α, β): mean α b / sin b, variance α² (2b / sin 2b − b² / sin² b), b = π/β.
    let (a, b) = (2.0, std::f64::consts::PI / 5.0);
    let mean = a * b / b.sin();
    let var = a * a * (2.0 * b / (2.0 * b).sin() - (b / b.sin()).powi(2));
    let (m, ok) = mean_within(&rows, col("ll"), mean, var);
    assert!(ok, "loglogistic_rng mean {m} vs {mean}");
    assert!(rows.iter().all(|r| r[col("ll")] > 0.0));
    // poisson_binomial(θ): mean Σθ, variance Σθ(1 − θ).
    let th = [0.1, 0.5, 0.9, 0.3];
    let mean: f64 = th.iter().sum();
    let var: f64 = th.iter().map(|t| t * (1.0 - t)).sum();
    let (m, ok) = mean_within(&rows, col("pb"), mean, var);
    assert!(ok, "poisson_binomial_rng mean {m} vs {mean}");
    assert!(rows.iter().all(|r| (0.0..=4.0).contains(&r[col("pb")])));
}

/// `tests/fixtures/dist2.checked.txt` (read by `registry_coverage`): the functions the
/// moment tests above check.
#[test]
fn the_checked_list_is_what_these_tests_check() {
    common::checked_list(
        "dist2",
        &[
            (GLM_RNG.to_string(), &["bernoulli_logit_glm_rng"]),
            (
                UNIVARIATE_RNGS.to_string(),
                &["loglogistic_rng", "poisson_binomial_rng"],
            ),
        ],
    );
}
