//! Library functions lowered for issue 8 (GP covariance functions, `log_mix`, reshaping and
//! containers, sorting, constraint functions) against stanli: log density (CmdStan's `lp__`
//! convention) and gradient of small programs at seeded unconstrained points, from
//! `tests/fixtures/library.json` (made by `scripts/library/make_fixtures.py`). Each program
//! has parameters flowing into every differentiable argument. Where stanli lacks a function or
//! a form, the fixture was computed from `oracle_program`, the definition written out in Stan
//! (the script checks those definitions against stanli's own functions where it has them).

mod common;

use common::{build, fixture_programs, rel, FdRule};
use hazel_density::LogDensity;

const FIXTURES: &str = "library.json";

fn fixtures() -> Vec<serde_json::Value> {
    fixture_programs(FIXTURES)
}

fn run_group(prefixes: &[&str], min: usize) {
    common::run_group(FIXTURES, prefixes, min, FdRule::Both);
}

#[test]
fn gp_covariance_functions_match_stanli() {
    run_group(&["gp_"], 13);
}

/// A GP covariance of data points stays on the static path: the distances are constants.
#[test]
fn gp_covariances_of_data_points_are_static() {
    let p = fixtures()
        .into_iter()
        .find(|p| p["name"] == "gp_regression")
        .expect("gp_regression");
    let model = build(
        p["program"].as_str().expect("program"),
        p["data"].as_str().expect("data"),
    )
    .expect("compiles");
    assert!(!model.is_dynamic(), "the GP regression re-traces");
}

/// Non-positive hyperparameters reject with the function and argument named.
#[test]
fn gp_hyperparameters_are_checked() {
    for (src, q, message) in [
        (
            "data { array[3] real x; } parameters { real a; } model { target += sum(gp_matern32_cov(x, a, 1.0)); }",
            vec![-1.0],
            "gp_matern32_cov: magnitude must be positive",
        ),
        (
            "data { array[3] real x; } parameters { real l; } model { target += sum(gp_exp_quad_cov(x, 1.0, l)); }",
            vec![0.0],
            "gp_exp_quad_cov: length scale must be positive",
        ),
        (
            "data { array[3] real x; } parameters { real p; } model { target += sum(gp_periodic_cov(x, 1.0, 1.0, p)); }",
            vec![-0.5],
            "gp_periodic_cov: period must be positive",
        ),
    ] {
        let model = build(src, r#"{"x": [0.1, 0.5, 0.9]}"#).expect("compiles");
        let mut ws = model.new_workspace();
        let mut g = vec![0.0; q.len()];
        let err = model
            .log_density_gradient(&mut ws, &q, &mut g)
            .expect_err("a non-positive hyperparameter is rejected");
        assert!(err.message.contains(message), "{}", err.message);
    }
    // A size error: at compile time or at the first evaluation, named either way.
    let message = first_error(
        "data { array[3] vector[2] x; } parameters { real a; } model { target += sum(gp_exp_quad_cov(x, a, {1.0, 2.0, 3.0})); }",
        r#"{"x": [[0.1, 0.2], [0.5, 0.1], [0.9, 1.0]]}"#,
        &[1.0],
    );
    assert!(message.contains("number of length scales"), "{message}");
}

#[test]
fn log_mix_vectorised_forms_match_the_definition() {
    run_group(&["log_mix"], 1);
}

#[test]
fn constructors_and_reshaping_match_stanli() {
    run_group(&["containers"], 1);
}

/// Log density of a one-parameter program at q = 0.5 (gradient discarded).
fn log_density_at_half(src: &str, data: &str) -> Result<f64, String> {
    let model = build(src, data)?;
    let mut ws = model.new_workspace();
    let mut g = vec![0.0; model.dim()];
    model
        .log_density_gradient(&mut ws, &vec![0.5; model.dim()], &mut g)
        .map_err(|e| e.message)
}

/// `to_int` (stanli lacks it) by value: truncation toward zero, elementwise over arrays, and
/// Stan's range error.
#[test]
fn to_int_truncates_toward_zero() {
    let with = |expr: &str| {
        format!(
            "transformed data {{ array[2, 3] int t = {expr}; }} parameters {{ real x; }} \
             model {{ for (i in 1:2) for (j in 1:3) target += t[i, j] * x * (i + 3 * j); }}"
        )
    };
    let got = log_density_at_half(
        &with("{to_int({2.5, -1.25, 7.999}), to_int({-0.5, to_int(-3.7), 4.0})}"),
        "{}",
    )
    .expect("to_int runs");
    let want = log_density_at_half(&with("{{2, -1, 7}, {0, -3, 4}}"), "{}").expect("literal");
    assert_eq!(got, want);
    let src = "data { array[2, 3] real xs; } transformed data { array[2, 3] int t = to_int(xs); } \
               parameters { real x; } model { for (i in 1:2) for (j in 1:3) target += t[i, j] * x * (i + 3 * j); }";
    let got = log_density_at_half(src, r#"{"xs": [[1.9, -1.9, 0.1], [1e9, -2e9, 3.5]]}"#)
        .expect("to_int of data");
    let want = log_density_at_half(&with("{{1, -1, 0}, {1000000000, -2000000000, 3}}"), "{}")
        .expect("literal");
    assert_eq!(got, want);
    let err = log_density_at_half(src, r#"{"xs": [[1.9, -1.9, 0.1], [1e10, 0, 0]]}"#)
        .expect_err("out of the int range");
    assert!(err.contains("to_int: x is 10000000000"), "{err}");
}

#[test]
fn sorting_parameters_matches_stanli() {
    run_group(&["sort_"], 2);
    // Sorted values stay on the static path; integer results (indices, ranks) re-trace.
    let dynamic = |name: &str| {
        let p = fixtures()
            .into_iter()
            .find(|p| p["name"] == name)
            .expect("program");
        build(p["program"].as_str().unwrap(), p["data"].as_str().unwrap())
            .expect("compiles")
            .is_dynamic()
    };
    assert!(!dynamic("sort_values"));
    assert!(dynamic("sort_indices"));
}

/// A NaN in a sorted parameter rejects the point (Stan: "must not be nan").
#[test]
fn sorting_nan_is_an_error() {
    let model = build(
        "parameters { vector[3] v; } model { target += sort_asc(log(v))[1]; }",
        "{}",
    )
    .expect("compiles");
    let mut ws = model.new_workspace();
    let err = model
        .log_density_gradient(&mut ws, &[1.0, -1.0, 2.0], &mut [0.0; 3])
        .expect_err("log(-1) is nan");
    assert!(err.message.contains("sort_asc"), "{}", err.message);
}

#[test]
fn transform_functions_match_stanli() {
    run_group(&["transform_"], 2);
}

/// Log density and gradient of a program at `q`.
fn lp_grad(src: &str, q: &[f64]) -> (f64, Vec<f64>) {
    let model = build(src, "{}").unwrap_or_else(|e| panic!("{e}\n{src}"));
    let mut ws = model.new_workspace();
    let mut g = vec![0.0; q.len()];
    let lp = model
        .log_density_gradient(&mut ws, q, &mut g)
        .unwrap_or_else(|e| panic!("{}\n{src}", e.message));
    (lp, g)
}

/// `*_unconstrain` (stanli lacks most) by round trips: `unconstrain(constrain(y)) = y`, so a
/// density of the round trip has the log density and gradient of the density of `y` itself,
/// with the value a parameter (the graph-op inverse) and data (`hazel_math`'s inverse).
#[test]
fn unconstrain_inverts_constrain() {
    let w = "[0.3, -0.7, 1.1, 0.4, -0.2, 0.9]'";
    for (decl, round_trip) in [
        (
            "vector[3] y",
            "lower_bound_unconstrain(lower_bound_constrain(y, 0.5 * a), 0.5 * a)",
        ),
        (
            "vector[3] y",
            "upper_bound_unconstrain(upper_bound_constrain(y, a), a)",
        ),
        (
            "vector[3] y",
            "lower_upper_bound_unconstrain(lower_upper_bound_constrain(y, a, a + 3), a, a + 3)",
        ),
        (
            "vector[3] y",
            "offset_multiplier_unconstrain(offset_multiplier_constrain(y, a, exp(a)), a, exp(a))",
        ),
        ("vector[3] y", "ordered_unconstrain(ordered_constrain(y))"),
        (
            "vector[3] y",
            "positive_ordered_unconstrain(positive_ordered_constrain(y))",
        ),
        ("vector[3] y", "simplex_unconstrain(simplex_constrain(y))"),
        ("vector[3] y", "cholesky_factor_corr_unconstrain(cholesky_factor_corr_constrain(y, 3))"),
        ("vector[3] y", "cov_matrix_unconstrain(cov_matrix_constrain(append_row(y, y), 3))[1:3]"),
        (
            "vector[3] y",
            "cholesky_factor_cov_unconstrain(cholesky_factor_cov_constrain(append_row(y, y[1:2]), 3, 2))[1:3]",
        ),
        ("vector[3] y", "sum_to_zero_unconstrain(sum_to_zero_constrain(y))"),
        (
            "vector[3] y",
            "to_vector(sum_to_zero_unconstrain(sum_to_zero_constrain(to_matrix(y, 3, 1))))",
        ),
        (
            "vector[3] y",
            "to_vector(stochastic_column_unconstrain(stochastic_column_constrain(to_matrix(y, 3, 1))))",
        ),
        (
            "vector[3] y",
            "to_vector(stochastic_row_unconstrain(stochastic_row_constrain(to_matrix(y, 1, 3))))",
        ),
        (
            "vector[3] y",
            "to_vector(stochastic_row_unconstrain(stochastic_row_constrain(append_row(to_matrix(y, 1, 3), to_matrix(y, 1, 3)))))[{1, 3, 5}]",
        ),
        (
            "vector[3] y",
            "to_vector(sum_to_zero_unconstrain(sum_to_zero_constrain(append_col(to_matrix(y, 3, 1), to_matrix(y, 3, 1)))))[1:3]",
        ),
    ] {
        let n = 3;
        let with = format!(
            "parameters {{ {decl}; real a; }} model {{ y ~ normal(0, 1); a ~ normal(0, 1); \
             target += dot_product(head({w}, {n}), {round_trip}); }}"
        );
        let plain = format!(
            "parameters {{ {decl}; real a; }} model {{ y ~ normal(0, 1); a ~ normal(0, 1); \
             target += dot_product(head({w}, {n}), y); }}"
        );
        let q = [0.3, -0.4, 0.8, 0.2];
        let (l1, g1) = lp_grad(&with, &q);
        let (l2, g2) = lp_grad(&plain, &q);
        assert!(rel(l1, l2) < 1e-12, "{round_trip}: {l1} vs {l2}");
        for i in 0..q.len() {
            assert!(
                rel(g1[i], g2[i]) < 1e-10,
                "{round_trip}: gradient {g1:?} vs {g2:?}"
            );
        }
    }
    // Data round trips of every structured type (hazel_math's inverses).
    // (unit_vector_unconstrain returns the unit vector itself, as Stan's unit_vector_free.)
    for (free, expr) in [
        (3, "unit_vector_unconstrain(yd[1:3] / norm2(yd[1:3])) * norm2(yd[1:3])"),
        (3, "simplex_unconstrain(simplex_constrain(yd[1:3]))"),
        (3, "sum_to_zero_unconstrain(sum_to_zero_constrain(yd[1:3]))"),
        (3, "ordered_unconstrain(ordered_constrain(yd[1:3]))"),
        (3, "cholesky_factor_corr_unconstrain(cholesky_factor_corr_constrain(yd[1:3], 3))"),
        (3, "corr_matrix_unconstrain(corr_matrix_constrain(yd[1:3], 3))"),
        (6, "cov_matrix_unconstrain(cov_matrix_constrain(yd, 3))"),
        (5, "cholesky_factor_cov_unconstrain(cholesky_factor_cov_constrain(yd[1:5], 3, 2))"),
        (6, "to_vector(sum_to_zero_unconstrain(sum_to_zero_constrain(to_matrix(yd, 2, 3))))"),
        (6, "to_vector(stochastic_column_unconstrain(stochastic_column_constrain(to_matrix(yd, 2, 3))))"),
        (6, "to_vector(stochastic_row_unconstrain(stochastic_row_constrain(to_matrix(yd, 2, 3))))"),
    ] {
        let src = format!(
            "transformed data {{ vector[6] yd = [0.3, -0.4, 0.8, 0.2, -1.1, 0.5]'; \
             vector[{free}] back = {expr}; }} parameters {{ real x; }} \
             model {{ target += x * dot_product(back, head(yd, {free})) + x * 1000 * dot_self(back - head(yd, {free})); }}"
        );
        let src_plain = format!(
            "transformed data {{ vector[6] yd = [0.3, -0.4, 0.8, 0.2, -1.1, 0.5]'; }} \
             parameters {{ real x; }} model {{ target += x * dot_self(head(yd, {free})); }}"
        );
        let (l1, _) = lp_grad(&src, &[1.0]);
        let (l2, _) = lp_grad(&src_plain, &[1.0]);
        assert!(rel(l1, l2) < 1e-10, "{expr}: {l1} vs {l2}");
    }
    // Invalid constrained values are rejected with the function named.
    let src = "parameters { vector[3] y; } model { target += sum(ordered_unconstrain(y)); }";
    let model = build(src, "{}").expect("compiles");
    let mut ws = model.new_workspace();
    let err = model
        .log_density_gradient(&mut ws, &[0.0, 1.0, 0.5], &mut [0.0; 3])
        .expect_err("not ordered");
    assert!(
        err.message.contains("ordered_unconstrain"),
        "{}",
        err.message
    );
}

#[test]
fn compressed_sparse_rows_match_stanli() {
    run_group(&["csr"], 1);
    let p = fixtures()
        .into_iter()
        .find(|p| p["name"] == "csr")
        .expect("csr");
    let model = build(p["program"].as_str().unwrap(), p["data"].as_str().unwrap()).unwrap();
    assert!(!model.is_dynamic(), "a data pattern keeps the model static");
    let message = first_error(
        "parameters { vector[2] b; } model { target += sum(csr_matrix_times_vector(2, 2, [1.0]', {3}, {1, 2, 2}, b)); }",
        "{}",
        &[0.1, 0.2],
    );
    assert!(message.contains("column index 3"), "{message}");
}

/// The error of a program that fails at compile time or at its first evaluation at `q`.
fn first_error(src: &str, data: &str, q: &[f64]) -> String {
    match build(src, data) {
        Err(e) => e,
        Ok(model) => {
            let mut g = vec![0.0; q.len()];
            model
                .log_density_gradient(&mut model.new_workspace(), q, &mut g)
                .expect_err("the program fails")
                .message
        }
    }
}
