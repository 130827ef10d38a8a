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

/// A dosing switch `if (t > 0)`: the op keeps its guarded traces between evaluations. An
/// evaluation with traces made at other parameter values (and after a failing point) has the
/// bits of a fresh model's, for the stiff and the explicit solvers.
#[test]
fn kept_guarded_traces_give_the_bits_of_fresh_ones() {
    for solver in ["ode_bdf_tol", "ode_rk45_tol"] {
        let src = format!(
            r#"
functions {{
  vector dose(real t, vector y, real k_a, real k_e) {{
    vector[1] dydt;
    real d = 0;
    if (t > 0) {{
      d = exp(-k_a * t) * k_a;
    }}
    dydt[1] = d - k_e * y[1];
    return dydt;
  }}
}}
data {{ array[3] real ts; }}
parameters {{ real<lower=0> k_a; real<lower=0> k_e; }}
model {{
  array[3] vector[1] c = {solver}(dose, [0.0]', 0.0, ts, 1e-6, 1e-6, 100000, k_a, k_e);
  target += -square(c[1, 1] - 0.3) - square(c[2, 1] - 0.2) - square(c[3, 1] - 0.1);
}}
"#
        );
        let data = r#"{"ts": [0.5, 1.0, 4.0]}"#;
        let eval = |model: &CompiledModel, ws: &mut _, q: &[f64]| {
            let mut g = [0.0; 2];
            let lp = model.log_density_gradient(ws, q, &mut g);
            (lp.map(f64::to_bits), g.map(f64::to_bits))
        };
        let kept = common::build(&src, data).unwrap();
        assert!(
            kept.graph().is_some(),
            "{solver}: the switch keeps the model static"
        );
        let mut ws = kept.new_workspace();
        let points: [&[f64]; 4] = [&[0.1, -0.4], &[-0.7, 0.9], &[800.0, 0.0], &[0.5, 0.2]];
        for (i, q) in points.iter().enumerate() {
            let warm = eval(&kept, &mut ws, q);
            let fresh_model = common::build(&src, data).unwrap();
            let mut fresh_ws = fresh_model.new_workspace();
            let fresh = eval(&fresh_model, &mut fresh_ws, q);
            assert_eq!(warm, fresh, "{solver}: point {i} after {i} evaluations");
        }
    }
}
