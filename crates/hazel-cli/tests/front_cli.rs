//! `hazel check`, `hazel format` and `hazel log-density` run as a program.
//! Oracle for `log-density`: stanli's log density and gradient in each example's `oracle.json`
//! (CmdStan's `lp__` convention: Jacobian included, constants of `~` dropped).

mod common;
use common::*;

use serde_json::Value;

#[test]
fn check_accepts_every_example_silently() {
    for name in ["bernoulli", "eight_schools", "logistic_regression", "bnn"] {
        let output = hazel(&["check", &example(name, "model.stan")]);
        assert!(output.status.success(), "{name}: {}", text(&output.stderr));
        assert!(
            output.stdout.is_empty(),
            "{name}: stdout {}",
            text(&output.stdout)
        );
    }
}

#[test]
fn check_reports_errors_rustc_style_and_fails() {
    let dir = scratch_dir("check-errors");
    let model = dir.join("bad.stan");
    std::fs::write(
        &model,
        "data { int N; }\nparameters { real mu; }\nmodel {\n  mu ~ normal(0, sigma);\n}\n",
    )
    .unwrap();
    let output = hazel(&["check", model.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("error: unknown variable `sigma`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("bad.stan:4:18"),
        "location of `sigma`: {stderr}"
    );
    assert!(stderr.contains("^^^^^"), "caret under `sigma`: {stderr}");
    assert!(stderr.contains("(1 error)"), "{stderr}");

    // A syntax error is reported the same way, and a missing file is an error, not a panic.
    std::fs::write(&model, "parameters { real mu }\nmodel { }\n").unwrap();
    let output = hazel(&["check", model.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("bad.stan:1:"),
        "{}",
        text(&output.stderr)
    );
    let output = hazel(&["check", dir.join("absent.stan").to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("cannot read"));
    std::fs::remove_dir_all(&dir).ok();
}

/// `integrate_ode_*` is deprecated, not removed: `hazel check` prints stanc's warning at the
/// call, exits 0 and writes nothing on stdout, and the program runs (`hazel log-density`).
#[test]
fn check_warns_about_deprecated_integrate_ode_and_succeeds() {
    let dir = scratch_dir("check-integrate-ode");
    let model = dir.join("decay.stan");
    std::fs::write(
        &model,
        "functions {\n\
         \x20 array[] real f(real t, array[] real y, array[] real theta, array[] real x_r,\n\
         \x20                array[] int x_i) {\n\
         \x20   return {-theta[1] * y[1]};\n\
         \x20 }\n\
         }\n\
         parameters { real<lower=0> k; }\n\
         model {\n\
         \x20 array[1, 1] real y = integrate_ode_rk45(f, {2.0}, 0.0, {1.5}, {k}, rep_array(0.0, 0),\n\
         \x20                                         rep_array(0, 0));\n\
         \x20 target += y[1, 1];\n\
         }\n",
    )
    .unwrap();
    let output = hazel(&["check", model.to_str().unwrap()]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(output.stdout.is_empty(), "stdout {}", text(&output.stdout));
    assert!(
        stderr.contains(
            "warning: integrate_ode_rk45 is deprecated and will be removed in Stan 3.0. Use \
             ode_rk45 instead. The new interface is slightly different, see: \
             https://mc-stan.org/users/documentation/case-studies/convert_odes.html"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("decay.stan:9:24"), "location: {stderr}");
    assert!(!stderr.contains("error"), "{stderr}");

    // It runs: at log k = 0 (k = 1) the log density is y(1.5) + log k = 2 exp(-1.5) and its
    // derivative in log k is -1.5 · 2 exp(-1.5) + 1.
    let points = dir.join("points.json");
    std::fs::write(&points, "[[0.0]]").unwrap();
    let output = hazel(&[
        "log-density",
        model.to_str().unwrap(),
        "--points",
        points.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let result: Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    let expected = 2.0 * (-1.5f64).exp();
    let lp = result[0]["lp"].as_f64().unwrap();
    let grad = numbers(&result[0]["grad"]);
    assert!(rel(lp, expected) < 1e-5, "lp {lp} vs {expected}");
    assert!(
        rel(grad[0], 1.0 - 1.5 * expected) < 1e-5,
        "grad {grad:?} vs {}",
        1.0 - 1.5 * expected
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn format_output_checks_and_is_a_fixed_point() {
    let dir = scratch_dir("format");
    let model = dir.join("messy.stan");
    std::fs::write(
        &model,
        "data{int<lower=0>N;array[N]int<lower=0,upper=1>y;}\n// a comment\nparameters{real<lower=0,upper=1>theta;}\nmodel{theta~beta(1,1);y~bernoulli(theta);}\n",
    )
    .unwrap();
    let first = hazel(&["format", model.to_str().unwrap()]);
    assert!(first.status.success(), "{}", text(&first.stderr));
    let formatted = text(&first.stdout);
    assert!(
        formatted.contains("parameters {\n  real<lower=0, upper=1> theta;\n}"),
        "{formatted}"
    );
    let again_path = dir.join("formatted.stan");
    std::fs::write(&again_path, &formatted).unwrap();
    let check = hazel(&["check", again_path.to_str().unwrap()]);
    assert!(check.status.success(), "{}", text(&check.stderr));
    let second = hazel(&["format", again_path.to_str().unwrap()]);
    assert_eq!(
        text(&second.stdout),
        formatted,
        "formatting formatted text changes nothing"
    );
    std::fs::remove_dir_all(&dir).ok();
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(1.0)
}

fn numbers(value: &Value) -> Vec<f64> {
    value
        .as_array()
        .expect("list")
        .iter()
        .map(|v| v.as_f64().expect("number"))
        .collect()
}

#[test]
fn log_density_matches_the_stanli_oracle_on_the_examples() {
    let dir = scratch_dir("log-density");
    // stanli's gradient for `T[1, 2]` uses Stan's approximate derivative of the normal CDF
    // difference and is 4e-4 relative off; central finite differences of the (matching) log
    // density agree with hazel's gradient to 1e-8. So that example's gradient gets a looser bound.
    let gradient_tolerance = |name: &str| {
        if name == "truncated_normal" {
            1e-3
        } else {
            1e-8
        }
    };
    for name in [
        "bernoulli",
        "eight_schools",
        "truncated_normal",
        "missing_data",
        "poisson_gamma",
        "logistic_regression",
        "bnn",
    ] {
        let oracle: Value =
            serde_json::from_str(&std::fs::read_to_string(example(name, "oracle.json")).unwrap())
                .unwrap();
        let points = oracle["points"].as_array().expect("points");
        let qs: Vec<Value> = points.iter().map(|p| p["q"].clone()).collect();
        let points_path = dir.join(format!("{name}-points.json"));
        std::fs::write(&points_path, serde_json::to_string(&qs).unwrap()).unwrap();
        let output = hazel(&[
            "log-density",
            &example(name, "model.stan"),
            "--data",
            &example(name, "data.json"),
            "--points",
            points_path.to_str().unwrap(),
        ]);
        assert!(output.status.success(), "{name}: {}", text(&output.stderr));
        let ours: Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
        let ours = ours.as_array().expect("a list");
        assert_eq!(ours.len(), points.len());
        for (k, (mine, theirs)) in ours.iter().zip(points).enumerate() {
            let (lp, lp_ref) = (
                mine["lp"].as_f64().unwrap(),
                theirs["log_density"].as_f64().unwrap(),
            );
            assert!(
                rel(lp, lp_ref) < 1e-8,
                "{name} point {k}: lp {lp} vs {lp_ref}"
            );
            for (i, (g, g_ref)) in numbers(&mine["grad"])
                .iter()
                .zip(numbers(&theirs["gradient"]))
                .enumerate()
            {
                assert!(
                    rel(*g, g_ref) < gradient_tolerance(name),
                    "{name} point {k} grad[{i}]: {g} vs {g_ref}"
                );
            }
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn log_density_flags_change_exactly_the_documented_terms() {
    // theta ~ beta(2, 3) on (0, 1), at the unconstrained point u: theta = logistic(u).
    let dir = scratch_dir("log-density-flags");
    let model = dir.join("beta.stan");
    std::fs::write(
        &model,
        "parameters { real<lower=0, upper=1> theta; }\nmodel { theta ~ beta(2, 3); }\n",
    )
    .unwrap();
    let points = dir.join("points.json");
    let u: f64 = 0.3;
    std::fs::write(&points, format!("[[{u}]]")).unwrap();
    let run = |flags: &[&str]| -> f64 {
        let mut args = vec![
            "log-density",
            model.to_str().unwrap(),
            "--points",
            points.to_str().unwrap(),
        ];
        args.extend_from_slice(flags);
        let output = hazel(&args);
        assert!(
            output.status.success(),
            "{flags:?}: {}",
            text(&output.stderr)
        );
        let value: Value = serde_json::from_slice(&output.stdout).unwrap();
        value[0]["lp"].as_f64().unwrap()
    };
    let theta = 1.0 / (1.0 + (-u).exp());
    let kernel = theta.ln() + 2.0 * (1.0 - theta).ln();
    let log_jacobian = theta.ln() + (1.0 - theta).ln();
    // log B(2, 3) = log(1/12).
    let log_normaliser = (12.0f64).ln();
    assert!(rel(run(&[]), kernel + log_jacobian) < 1e-12);
    assert!(rel(run(&["--no-jacobian"]), kernel) < 1e-12);
    assert!(
        rel(
            run(&["--include-constants"]),
            kernel + log_normaliser + log_jacobian
        ) < 1e-12
    );
    assert!(
        rel(
            run(&["--include-constants", "--no-jacobian"]),
            kernel + log_normaliser
        ) < 1e-12
    );

    // A point of the wrong length is an error naming the point.
    std::fs::write(&points, "[[0.1], [0.1, 0.2]]").unwrap();
    let output = hazel(&[
        "log-density",
        model.to_str().unwrap(),
        "--points",
        points.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("point 2 has 2 values"),
        "{}",
        text(&output.stderr)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn check_accepts_the_last_signature_to_lower() {
    // wiener_lpdf's 7-parameter form was the last signature Stan accepts that hazel could not
    // run; `hazel check` now passes it with no "cannot run this yet" at the call.
    let dir = scratch_dir("check-unsupported");
    let model = dir.join("m.stan");
    std::fs::write(
        &model,
        "data { vector[2] a; }\nparameters { real mu; }\nmodel {\n  mu ~ normal(wiener_lpdf(1.0 | 1.0, 0.2, 0.5, mu, 0.1, 0.1, 0.05), 1);\n}\n",
    )
    .unwrap();
    let output = hazel(&["check", model.to_str().unwrap()]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("hazel cannot run this yet"), "{stderr}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn print_writes_to_stdout_like_cmdstan() {
    let dir = scratch_dir("print");
    let model = dir.join("m.stan");
    std::fs::write(
        &model,
        "transformed data { print(\"td: \", 0.5, \" \", [1, 2]', \" \", {3, 4}); }\n\
         parameters { real mu; }\nmodel { mu ~ normal(0, 1); }\n\
         generated quantities { print(\"gq\"); }\n",
    )
    .unwrap();
    let output = hazel(&[
        "sample",
        model.to_str().unwrap(),
        "--chains",
        "1",
        "--warmup",
        "20",
        "--draws",
        "7",
        "--quiet",
        "--output-dir",
        dir.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(stdout.contains("td: 0.5 [1,2] [3,4]\n"), "{stdout}");
    // Generated quantities run once per kept draw.
    assert_eq!(stdout.matches("gq\n").count(), 7, "{stdout}");
    std::fs::remove_dir_all(&dir).ok();
}
