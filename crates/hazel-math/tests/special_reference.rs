//! Scalar special functions against mpmath reference values (50 digits, rounded to f64) and
//! their derivative rules against mpmath's numerical derivatives and central finite differences.
//! Fixtures: `tests/fixtures/special_*.json`, made by `scripts/math/make_fixtures.py`.

use hazel_math::special::{binary, ternary, unary};
use serde_json::Value;

fn load(text: &str) -> Vec<Value> {
    serde_json::from_str::<Value>(text)
        .expect("fixture parses")
        .as_array()
        .expect("array")
        .clone()
}

fn num(v: &Value) -> f64 {
    v.as_f64().expect("number")
}

fn nums(v: &Value) -> Vec<f64> {
    v.as_array().expect("array").iter().map(num).collect()
}

/// |got - want| ≤ rel · max(|want|, floor)
fn close(got: f64, want: f64, rel: f64, floor: f64) -> bool {
    (got - want).abs() <= rel * want.abs().max(floor)
}

/// Relative tolerance for values: 1e-13 unless the function is ill-conditioned at the test
/// points (the value moves by more than that when x moves by one ulp), or its algorithm is a
/// documented lower-accuracy one.
fn value_tolerance(name: &str) -> f64 {
    match name {
        // sin/cos/tan at 100 and tan near π/2: condition number |x f'/f| ~ 1e2..1e3.
        "sin" | "cos" | "tan" => 1e-12,
        // x - n reduction then asymptotic series: a few ulps times the number of recurrence steps.
        "digamma" | "trigamma" => 1e-13,
        // Gauss–Legendre quadrature (8 × 10 points).
        "owens_t" => 1e-12,
        // Lentz continued fractions and series: error accumulates over ~sqrt(a) terms.
        "gamma_p" | "gamma_q" | "inc_beta" => 1e-12,
        "lmgamma" | "bessel_first_kind" | "modified_bessel_first_kind" => 1e-12,
        "log_modified_bessel_first_kind" => 1e-12,
        _ => 1e-13,
    }
}

#[test]
fn unary_values_and_derivatives_match_mpmath() {
    let mut failures = Vec::new();
    for row in load(include_str!("fixtures/special_unary.json")) {
        let name = row["name"].as_str().unwrap();
        let (x, want, want_d) = (num(&row["x"]), num(&row["value"]), num(&row["deriv"]));
        let Some(f) = unary(name) else {
            failures.push(format!("{name}: missing from the table"));
            continue;
        };
        let got = (f.value)(x);
        // digamma has a root at 1.46…: there the error is absolute, ~ε·|x ψ'(x)|.
        let floor = if name == "digamma" { 1.0 } else { 1e-300 };
        if !close(got, want, value_tolerance(name), floor) {
            failures.push(format!("{name}({x}) = {got:e}, want {want:e}"));
        }
        let got_d = (f.deriv)(x, got);
        // The op graph's rules for these form the derivative from the value (`y + 1`,
        // `y (1 − y)`, `1 − y²`, `special::rules`), which is as accurate as `y` itself near 1:
        // an absolute error up to ε where the derivative is below ε (far tails).
        let d_floor = if matches!(name, "expm1" | "inv_logit" | "tanh") {
            f64::EPSILON / 1e-11
        } else {
            1e-300
        };
        if !close(got_d, want_d, 1e-11, d_floor) {
            failures.push(format!("{name}'({x}) = {got_d:e}, want {want_d:e}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn binary_values_and_gradients_match_mpmath() {
    let mut failures = Vec::new();
    for row in load(include_str!("fixtures/special_binary.json")) {
        let name = row["name"].as_str().unwrap();
        let args = nums(&row["args"]);
        let want = num(&row["value"]);
        let want_grad = nums(&row["grad"]);
        let Some(f) = binary(name) else {
            failures.push(format!("{name}: missing from the table"));
            continue;
        };
        let got = (f.value)(args[0], args[1]);
        if !close(got, want, value_tolerance(name), 1e-300) {
            failures.push(format!("{name}{args:?} = {got:e}, want {want:e}"));
        }
        let (dx, dy) = (f.grad)(args[0], args[1], got);
        for (i, (g, w)) in [dx, dy].iter().zip(&want_grad).enumerate() {
            // Gradients are compared with a floor relative to the largest partial, so a partial
            // that is ~0 relative to the other is not held to a relative bound.
            let scale = want_grad.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            if !close(*g, *w, 1e-10, scale * 1e-3) {
                failures.push(format!("{name}{args:?}: d/darg{i} = {g:e}, want {w:e}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn ternary_values_and_gradients_match_mpmath() {
    let mut failures = Vec::new();
    for row in load(include_str!("fixtures/special_ternary.json")) {
        let name = row["name"].as_str().unwrap();
        let a = nums(&row["args"]);
        let want = num(&row["value"]);
        let want_grad = nums(&row["grad"]);
        let f = ternary(name).unwrap_or_else(|| panic!("{name} missing"));
        let got = (f.value)(a[0], a[1], a[2]);
        if !close(got, want, value_tolerance(name), 1e-300) {
            failures.push(format!("{name}{a:?} = {got:e}, want {want:e}"));
        }
        let grad = (f.grad)(a[0], a[1], a[2], got);
        let scale = want_grad.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for i in 0..3 {
            if !close(grad[i], want_grad[i], 1e-9, scale * 1e-3) {
                failures.push(format!(
                    "{name}{a:?}: d/darg{i} = {:e}, want {:e}",
                    grad[i], want_grad[i]
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Central difference with step relative to |x|.
fn central_difference(f: impl Fn(f64) -> f64, x: f64) -> f64 {
    let h = 1e-6 * x.abs().max(1e-3);
    (f(x + h) - f(x - h)) / (2.0 * h)
}

/// Every derivative rule in the unary table agrees with finite differences of its own value
/// rule, at interior points of each function's domain (so a rule added to the table without a
/// fixture is still checked).
#[test]
fn every_unary_rule_matches_finite_differences() {
    let points = [-2.3, -0.7, -0.2, 0.15, 0.45, 0.8, 1.7, 3.3, 12.5];
    let piecewise_constant = ["step", "int_step", "floor", "ceil", "round", "trunc"];
    let mut failures = Vec::new();
    let mut checked = 0;
    for f in hazel_math::special::unary_table() {
        for &x in &points {
            let v = (f.value)(x);
            let h = 1e-6 * x.abs().max(1e-3);
            let (lo, hi) = ((f.value)(x - h), (f.value)(x + h));
            if !v.is_finite() || !lo.is_finite() || !hi.is_finite() {
                continue; // outside the domain
            }
            if piecewise_constant.contains(&f.name) {
                assert_eq!((f.deriv)(x, v), 0.0, "{}", f.name);
                continue;
            }
            let fd = central_difference(f.value, x);
            let d = (f.deriv)(x, v);
            checked += 1;
            // truncation error ~1e-12 relative plus rounding error ~ε|v|/h of the difference
            let rounding = 1e-15 * v.abs().max(1e-300) / h;
            if (d - fd).abs() > 1e-6 * d.abs() + rounding {
                failures.push(format!(
                    "{}'({x}) = {d:e}, finite difference {fd:e}",
                    f.name
                ));
            }
        }
    }
    assert!(checked > 200, "only {checked} points checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_binary_rule_matches_finite_differences() {
    let points: [(f64, f64); 5] = [(0.7, 0.3), (2.5, 1.5), (3.0, 4.5), (1.3, 0.4), (5.0, 2.3)];
    // Second argument an integer in Stan (partial reported as 0).
    let integer_second = ["choose", "falling_factorial", "rising_factorial", "ldexp"];
    let integer_first = [
        "choose",
        "bessel_first_kind",
        "bessel_second_kind",
        "modified_bessel_first_kind",
        "modified_bessel_second_kind",
        "lmgamma",
        "binary_log_loss",
        "log_modified_bessel_first_kind",
    ];
    let mut failures = Vec::new();
    for f in hazel_math::special::binary_table() {
        for &(x0, y0) in &points {
            let (x, y) = if integer_first.contains(&f.name) {
                (x0.round(), y0)
            } else {
                (x0, y0)
            };
            let (x, y) = if f.name == "binary_log_loss" {
                (1.0, y.fract().max(0.2))
            } else {
                (x, y)
            };
            let v = (f.value)(x, y);
            if !v.is_finite() {
                continue;
            }
            let (dx, dy) = (f.grad)(x, y, v);
            let fdy = central_difference(|t| (f.value)(x, t), y);
            if !integer_second.contains(&f.name) && !close(dy, fdy, 1e-6, 1e-6) {
                failures.push(format!("{}({x}, {y}): d/dy = {dy:e}, fd {fdy:e}", f.name));
            }
            if !integer_first.contains(&f.name) && f.name != "choose" {
                let fdx = central_difference(|t| (f.value)(t, y), x);
                if !close(dx, fdx, 1e-6, 1e-6) {
                    failures.push(format!("{}({x}, {y}): d/dx = {dx:e}, fd {fdx:e}", f.name));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn log_mix_over_slices_matches_the_two_component_rule() {
    use hazel_math::special::{log_mix, log_mix_slices, log_mix_slices_grad};
    let (theta, l1, l2) = (0.3, -1.2, -3.4);
    let v = log_mix_slices(&[theta, 1.0 - theta], &[l1, l2]);
    assert!((v - log_mix(theta, l1, l2)).abs() < 1e-15);
    // three components: against the direct formula, and the gradient against finite differences
    let thetas = [0.2, 0.5, 0.3];
    let lambdas = [-0.5, -2.0, -7.0];
    let v = log_mix_slices(&thetas, &lambdas);
    let direct: f64 = thetas
        .iter()
        .zip(&lambdas)
        .map(|(t, l)| t * l.exp())
        .sum::<f64>()
        .ln();
    assert!((v - direct).abs() < 1e-15);
    let (mut dt, mut dl) = ([0.0; 3], [0.0; 3]);
    log_mix_slices_grad(&thetas, &lambdas, v, &mut dt, &mut dl);
    for k in 0..3 {
        let h = 1e-6;
        let mut tp = thetas;
        let mut tm = thetas;
        tp[k] += h;
        tm[k] -= h;
        let fd = (log_mix_slices(&tp, &lambdas) - log_mix_slices(&tm, &lambdas)) / (2.0 * h);
        assert!((fd - dt[k]).abs() < 1e-7, "d/dtheta{k}: {} vs {fd}", dt[k]);
        let mut lp = lambdas;
        let mut lm = lambdas;
        lp[k] += h;
        lm[k] -= h;
        let fd = (log_mix_slices(&thetas, &lp) - log_mix_slices(&thetas, &lm)) / (2.0 * h);
        assert!((fd - dl[k]).abs() < 1e-7, "d/dlambda{k}: {} vs {fd}", dl[k]);
    }
    assert!(log_mix_slices(&[0.5], &[1.0, 2.0]).is_nan());
}

/// Every table function returns (no panic, no endless loop) at every combination of awkward
/// arguments, including NaN, ±∞, 0, negative integers and huge values.
#[test]
fn no_table_function_panics_or_hangs_on_awkward_arguments() {
    use hazel_math::special::{binary_table, ternary_table, unary_table};
    let junk = [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -0.0,
        -1.0,
        -2.5,
        0.5,
        1.0,
        3.0,
        1e-300,
        1e300,
        -1e300,
    ];
    for f in unary_table() {
        for &x in &junk {
            let v = (f.value)(x);
            let _ = (f.deriv)(x, v);
        }
    }
    for f in binary_table() {
        for &x in &junk {
            for &y in &junk {
                let v = (f.value)(x, y);
                let _ = (f.grad)(x, y, v);
            }
        }
    }
    for f in ternary_table() {
        for &x in &junk {
            for &y in &junk {
                for &z in &junk {
                    let v = (f.value)(x, y, z);
                    let _ = (f.grad)(x, y, z, v);
                }
            }
        }
    }
}
