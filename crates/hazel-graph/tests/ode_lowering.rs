//! Lowering of Stan's variadic ODE solvers against closed forms: exponential decay
//! `y' = -k y` solved at build time (data only) and with a parameter-dependent rate and
//! initial state (log density and gradient), plus the errors a bad call must give.

mod common;

use hazel_density::LogDensity;
use hazel_graph::CompiledModel;

const DECAY_FN: &str = r#"
functions {
  vector decay(real t, vector y, real k, array[] real unused) {
    return -k * y;
  }
}
"#;

fn build(body: &str, data: &str) -> Result<CompiledModel, String> {
    common::build(&format!("{DECAY_FN}{body}"), data)
}

#[test]
fn data_only_solution_is_a_build_time_constant_matching_the_closed_form() {
    // target += -0.5 * sum((y_sol - y_obs)^2) with a data-only solution: the log density
    // only depends on mu through the normal term.
    let model = build(
        r#"
data { array[3] real ts; }
transformed data {
  array[3] vector[2] sol = ode_rk45_tol(decay, [1.5, -2.0]', 0.0, ts, 1e-10, 1e-10, 100000,
                                        0.8, {1.0});
  real s = sol[1][1] + sol[2][2] + sol[3][1];
}
parameters { real mu; }
model { target += -0.5 * square(mu - s); }
"#,
        r#"{"ts": [0.5, 1.25, 3.0]}"#,
    )
    .unwrap();
    let expected =
        1.5 * (-0.8f64 * 0.5).exp() - 2.0 * (-0.8f64 * 1.25).exp() + 1.5 * (-0.8f64 * 3.0).exp();
    let mut ws = model.new_workspace();
    let mut g = [0.0];
    let lp = model.log_density_gradient(&mut ws, &[0.3], &mut g).unwrap();
    // The gradient -(mu - s) reveals s.
    let s = 0.3 + g[0];
    assert!((s - expected).abs() < 1e-8, "s = {s}, expected {expected}");
    assert!((lp + 0.5 * (0.3 - expected).powi(2)).abs() < 1e-8);
    assert!(
        model.graph().is_some(),
        "a data-only ODE must not make the model dynamic"
    );
}

#[test]
fn parameter_dependent_solution_has_the_closed_form_value_and_gradient() {
    // lp = y(t; k, y0) at t = 2 with y = y0 exp(-k t); q = (k, y0) unconstrained.
    let model = build(
        r#"
parameters { real k; real y0; }
model {
  array[1] vector[1] sol = ode_rk45_tol(decay, [y0]', 0.0, {2.0}, 1e-10, 1e-10, 100000,
                                        k, {0.0});
  target += sol[1][1];
}
"#,
        "{}",
    )
    .unwrap();
    let mut ws = model.new_workspace();
    for (k, y0) in [(0.3, 1.7), (1.1, -0.4), (-0.2, 2.0)] {
        let mut g = [0.0; 2];
        let lp = model
            .log_density_gradient(&mut ws, &[k, y0], &mut g)
            .unwrap();
        let e = (-k * 2.0f64).exp();
        assert!(
            (lp - y0 * e).abs() < 1e-8 * (1.0 + lp.abs()),
            "lp {lp} vs {}",
            y0 * e
        );
        assert!(
            (g[0] + 2.0 * y0 * e).abs() < 1e-7,
            "d/dk {} vs {}",
            g[0],
            -2.0 * y0 * e
        );
        assert!((g[1] - e).abs() < 1e-8, "d/dy0 {} vs {e}", g[1]);
    }
}

#[test]
fn bad_calls_are_errors_not_panics() {
    let not_a_function = build(
        r#"
parameters { real k; }
model {
  array[1] vector[1] sol = ode_rk45(k, [1.0]', 0.0, {1.0}, k, {0.0});
  target += sol[1][1];
}
"#,
        "{}",
    );
    assert!(not_a_function.is_err());
    // Output times before the initial time are invalid data: rejected at build time.
    let bad_times = build(
        r#"
transformed data {
  array[1] vector[1] sol = ode_rk45(decay, [1.0]', 0.0, {-1.0}, 1.0, {0.0});
}
parameters { real k; }
model { target += -square(k); }
"#,
        "{}",
    );
    assert!(bad_times.is_err());
}
