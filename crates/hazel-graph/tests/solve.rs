//! Stan's algebraic solvers (`solve_newton`, `solve_powell`, `_tol`, the deprecated
//! `algebra_solver(_newton)`) and DAE solvers (`dae`, `dae_tol`) against stanli: log density and gradient at seeded points
//! (`tests/fixtures/solve.json`, made by `scripts/solve/make_fixtures.py`), with stanli's
//! finite differences too; which programs stay static; the failure messages.

mod common;

use common::{build, fixture_programs, rel, FdRule};
use hazel_density::LogDensity;

const FIXTURES: &str = "solve.json";

fn run_group(prefixes: &[&str], min: usize) {
    common::run_group(FIXTURES, prefixes, min, FdRule::Both);
}

#[test]
fn powell_matches_stanli() {
    run_group(
        &[
            "solve_powell",
            "algebra_solver",
            "param_guess",
            "steady_solve_powell",
            "far_guess_solve_powell",
        ],
        5,
    );
}

#[test]
fn newton_matches_stanli() {
    run_group(
        &[
            "solve_newton",
            "algebra_solver_newton",
            "steady_solve_newton",
            "branching_system",
            "far_guess_solve_newton",
        ],
        5,
    );
}

/// IDAS (stanli) and hazel's BDF are different adaptive integrators: their solutions agree to
/// their global errors (~1e-9 at tolerance 1e-10, relative 1e-8 in these log densities), not
/// to rounding; across the kink of `dae_branching`'s residual and the switch of
/// `dae_time_switch`'s (discontinuous derivatives) to ~3e-6.
#[test]
fn dae_matches_stanli() {
    let mut n = 0;
    let mut failures = Vec::new();
    for p in fixture_programs(FIXTURES) {
        let name = p["name"].as_str().unwrap().to_string();
        if !name.starts_with("dae_") {
            continue;
        }
        n += 1;
        let tol = if name == "dae_branching" || name == "dae_time_switch" {
            1e-5
        } else {
            1e-7
        };
        let model = build(p["program"].as_str().unwrap(), p["data"].as_str().unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut ws = model.new_workspace();
        for pt in p["points"].as_array().unwrap() {
            let q = common::floats(&pt["q"]);
            let mut g = vec![0.0; q.len()];
            let lp = model.log_density_gradient(&mut ws, &q, &mut g).unwrap();
            let lp_ref = pt["log_density"].as_f64().unwrap();
            let g_ref = common::floats(&pt["gradient"]);
            if rel(lp, lp_ref) > tol {
                failures.push(format!("{name}: log density {lp} vs stanli {lp_ref}"));
            }
            for i in 0..q.len() {
                if rel(g[i], g_ref[i]) > tol {
                    failures.push(format!(
                        "{name}: gradient[{i}] {} vs stanli {}",
                        g[i], g_ref[i]
                    ));
                }
            }
        }
    }
    assert!(n >= 5, "{n} DAE programs");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn data_only_calls_match_stanli() {
    run_group(&["data_only"], 1);
}

/// Solver calls whose system does not branch on its unknowns or parameters keep the model
/// static (one `Op::Solve` each); a branching system re-traces.
#[test]
fn solver_models_stay_static() {
    for p in fixture_programs(FIXTURES) {
        let name = p["name"].as_str().unwrap();
        let model = build(p["program"].as_str().unwrap(), p["data"].as_str().unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            model.is_dynamic(),
            name == "branching_system" || name == "dae_branching",
            "{name}: dynamic = {}",
            model.is_dynamic()
        );
    }
}

/// The evaluation error at `q`, with the model line (the program's sources are passed).
fn eval_err(src: &str, q: &[f64]) -> String {
    let parsed = hazel_check::check_source("m.stan", src);
    let program = parsed.checked.clone().expect("checks");
    let options = hazel_graph::CompileOptions {
        sources: Some(std::sync::Arc::new(parsed.sources.clone())),
        ..hazel_graph::CompileOptions::default()
    };
    let data = hazel_data::DataFile::parse("{}").expect("data");
    let model = hazel_graph::compile(&program, &data, &options).expect("compiles");
    let mut ws = model.new_workspace();
    let mut g = vec![0.0; q.len()];
    match model.log_density_gradient(&mut ws, q, &mut g) {
        Ok(lp) => panic!("expected an error, got {lp}"),
        Err(e) => e.to_string(),
    }
}

/// A system with no root, a step limit too small, bad control arguments: the error names the
/// solver, the problem and the model line.
#[test]
fn failures_name_the_solver() {
    let no_root = "functions { vector f(vector x, real a) { return [x[1]^2 + a^2 + 1]'; } }
parameters { real a; }
model { target += SOLVER(f, [1]', a)[1]; }
";
    for solver in ["solve_powell", "solve_newton"] {
        let msg = eval_err(&no_root.replace("SOLVER", solver), &[0.3]);
        assert!(msg.contains(solver), "{msg}");
        assert!(msg.contains("'m.stan', line 3"), "{msg}");
    }
    let msg = eval_err(&no_root.replace("SOLVER", "solve_powell"), &[0.3]);
    assert!(
        msg.contains("should be lower than the function tolerance")
            || msg.contains("maximum number of iterations"),
        "{msg}"
    );

    let few_steps =
        "functions { vector f(vector x, real a) { return [10 * (x[2] - x[1]^2), a - x[1]]'; } }
parameters { real a; }
model { target += solve_newton_tol(f, [-1.2, 1]', 1e-10, 1e-10, 1, a)[1]; }
";
    let msg = eval_err(few_steps, &[1.0]);
    assert!(
        msg.contains("solve_newton_tol: maximum number of iterations (1) was exceeded"),
        "{msg}"
    );

    let bad_tol = few_steps.replace("1e-10, 1e-10, 1,", "1e-10, -1, 10,");
    let msg = eval_err(&bad_tol, &[1.0]);
    assert!(
        msg.contains("function_tolerance is -1, but must be nonnegative"),
        "{msg}"
    );

    // DAE argument checks, with Stan's wording.
    let dae = "functions { vector r(real t, vector y, vector yp, real a) { return yp + a * y; } }
parameters { real a; }
model { target += dae(r, [1]', [-a]', 2.0, {1.0, 3.0}, a)[1][1]; }
";
    let msg = eval_err(dae, &[0.5]);
    assert!(
        msg.contains("dae: initial time is 2, but must be less than 1"),
        "{msg}"
    );
    let msg = eval_err(&dae.replace("2.0, {1.0, 3.0}", "0.0, {3.0, 1.0}"), &[0.5]);
    assert!(
        msg.contains("dae: times is not a valid sorted vector"),
        "{msg}"
    );
    let msg = eval_err(
        &dae.replace(
            "[-a]', 2.0, {1.0, 3.0}, a)",
            "[-a]', 0.0, {1.0, 3.0}, a / 0)",
        ),
        &[0.5],
    );
    assert!(
        msg.contains("dae: DAE parameters and data[1] is inf, but must be finite"),
        "{msg}"
    );

    // A guess of the wrong size for the system's output.
    let wrong_size = "functions { vector f(vector x, real a) { return [x[1] - a, 2 * x[1]]'; } }
parameters { real a; }
model { target += solve_powell(f, [1]', a)[1]; }
";
    let model = build(wrong_size, "{}");
    let msg = match model {
        Err(e) => e,
        Ok(m) => {
            let mut ws = m.new_workspace();
            let mut g = vec![0.0];
            m.log_density_gradient(&mut ws, &[0.5], &mut g)
                .unwrap_err()
                .to_string()
        }
    };
    assert!(
        msg.contains("solve_powell") && msg.contains("returned"),
        "{msg}"
    );
}

/// The value and gradient of a root with a closed form, `x = (√a, b√a)`, at many points,
/// through each solver: checks the op's implicit-function gradient on its own.
#[test]
fn closed_form_root_and_gradient() {
    for solver in [
        "solve_powell",
        "solve_newton_tol(quad, [1, 1]', 1e-12, 1e-12, 100, a, b)",
    ] {
        let call = if solver.contains('(') {
            solver.to_string()
        } else {
            format!("{solver}(quad, [1, 1]', a, b)")
        };
        let src = format!(
            "functions {{ vector quad(vector x, real a, real b) {{ return [x[1]^2 - a, x[2] - b * x[1]]'; }} }}
parameters {{ real<lower=0> a; real b; }}
model {{ vector[2] s = {call}; target += 2 * s[1] + 3 * s[2]; }}
"
        );
        let model = build(&src, "{}").unwrap();
        let mut ws = model.new_workspace();
        let mut g = vec![0.0; 2];
        for q in [[0.0, 0.0], [1.3, -0.4], [-1.1, 2.0]] {
            let (a, b) = (f64::exp(q[0]), q[1]);
            // target = 2√a + 3b√a + log|J| (a = exp(u): log J = u).
            let want = 2.0 * a.sqrt() + 3.0 * b * a.sqrt() + q[0];
            let lp = model.log_density_gradient(&mut ws, &q, &mut g).unwrap();
            assert!(rel(lp, want) < 1e-9, "{call}: {lp} vs {want}");
            // d/du: (1 + 1.5 b) √a + 1; d/db: 3 √a.
            let gu = (1.0 + 1.5 * b) * a.sqrt() + 1.0;
            let gb = 3.0 * a.sqrt();
            assert!(
                rel(g[0], gu) < 1e-8 && rel(g[1], gb) < 1e-8,
                "{call}: {g:?} vs {gu}, {gb}"
            );
        }
    }
}

/// The deprecated data-array interface still checks and runs, with a warning naming its
/// replacement (stanc 2.37 prints none; the Functions Reference lists both names as
/// deprecated since 2.31).
#[test]
fn deprecated_interface_warns() {
    for (old, new) in [
        ("algebra_solver", "solve_powell"),
        ("algebra_solver_newton", "solve_newton"),
    ] {
        let src = format!(
            "functions {{ vector f(vector y, vector th, data array[] real xr, array[] int xi) {{ return y - th; }} }}
parameters {{ vector[2] th; }}
model {{ target += sum({old}(f, [1, 1]', th, {{0.0}}, {{0}})); }}
"
        );
        let parsed = hazel_check::check_source("m.stan", &src);
        assert!(parsed.checked.is_some());
        let text = parsed.render_diagnostics();
        assert!(
            text.contains(&format!("{old} is deprecated")) && text.contains(&format!("Use {new}")),
            "{text}"
        );
        build(&src, "{}").expect("compiles");
    }
}
