//! Stan's 7-parameter `wiener_lpdf(y | a, t0, w, v, sv, sw, st0)` (the 5-parameter density
//! averaged over uniform bias and non-decision-time variability, integrated numerically),
//! from `tests/fixtures/wiener7.json` (made by `scripts/dist/make_wiener7_fixtures.py`).

mod common;

use common::{build, floats, rel, FdRule};
use hazel_density::LogDensity;

/// Every argument a parameter, against mpmath at 30 digits (value and all 8 partials, the
/// integral by a tensor Gauss–Legendre rule checked against a finer one): both variabilities,
/// the non-decision-time range cut at y, only sw, only st0. Within 1e-8 (the test's `TOL`).
#[test]
fn wiener7_matches_mpmath() {
    common::run_group("wiener7.json", &["wiener7_mp_"], 4, FdRule::Both);
}

/// Vectorised `~`, `_lpdf` and `_lupdf` forms with constrained parameters, against stanli
/// 0.24: the log density within 1e-6 and the gradient within 1e-4 relative, since Stan's
/// density and derivatives of this form are computed to precisions 1e-6 and 1e-4 (the tight oracle is
/// `wiener7_matches_mpmath`).
#[test]
fn wiener7_matches_stanli() {
    let progs: Vec<_> = common::fixture_programs("wiener7.json")
        .into_iter()
        .filter(|p| {
            p["name"]
                .as_str()
                .unwrap_or("")
                .starts_with("wiener7_stanli_")
        })
        .collect();
    assert!(!progs.is_empty());
    for p in &progs {
        let name = p["name"].as_str().unwrap();
        let model = build(p["program"].as_str().unwrap(), p["data"].as_str().unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let n = p["n_unconstrained"].as_u64().unwrap() as usize;
        assert_eq!(model.dim(), n, "{name}");
        let mut ws = model.new_workspace();
        let mut g = vec![0.0; n];
        for (k, pt) in p["points"].as_array().unwrap().iter().enumerate() {
            let q = floats(&pt["q"]);
            let lp = model
                .log_density_gradient(&mut ws, &q, &mut g)
                .unwrap_or_else(|e| panic!("{name} point {k}: {e}"));
            let lp_ref = pt["log_density"].as_f64().unwrap();
            assert!(
                rel(lp, lp_ref) < 1e-6,
                "{name} point {k}: {lp} vs stanli {lp_ref}"
            );
            let g_ref = floats(&pt["gradient"]);
            for i in 0..n {
                assert!(
                    rel(g[i], g_ref[i]) < 1e-4,
                    "{name} point {k}: gradient[{i}] {} vs stanli {}",
                    g[i],
                    g_ref[i]
                );
            }
        }
    }
}

/// Stan's argument checks, with its messages; a bad argument is an error, never a panic.
#[test]
fn wiener7_rejects_bad_arguments() {
    for (args, want) in [
        (
            "0.8 | 1.0, 0.2, 0.5, 0.3, 0.1, 1.5, 0.1",
            "Inter-trial variability in A-priori bias is 1.5, but must be in the interval [0, 1]",
        ),
        (
            "0.8 | 1.0, 0.2, 0.5, 0.3, 0.1, 0.1, -0.1",
            "Inter-trial variability in Nondecision time is -0.1, but must be nonnegative finite",
        ),
        (
            "0.8 | 1.0, 0.2, 0.2, 0.3, 0.1, 0.5, 0.1",
            "Inter-trial variability in A-priori bias = 0.5, but must be smaller than 2*(A-priori bias) = 0.4",
        ),
        (
            "0.8 | 1.0, 0.2, 0.8, 0.3, 0.1, 0.5, 0.1",
            "but must be smaller than 2*(1-A-priori bias)",
        ),
        (
            "0.1 | 1.0, 0.2, 0.5, 0.3, 0.1, 0.1, 0.1",
            "Random variable = 0.1, but must be greater than nondecision time = 0.2",
        ),
        (
            "0.8 | -1.0, 0.2, 0.5, 0.3, 0.1, 0.1, 0.1",
            "Boundary separation is -1, but must be positive finite",
        ),
    ] {
        // One parameter in the call so the error comes at evaluation.
        let src = format!(
            "parameters {{ real x; }} model {{ target += wiener_lpdf({}); }}",
            args.replacen("0.3,", "0.3 + x,", 1)
        );
        let model = build(&src, "{}").expect("compiles");
        let mut ws = model.new_workspace();
        let mut g = vec![0.0; 1];
        let err = model
            .log_density_gradient(&mut ws, &[0.0], &mut g)
            .expect_err("outside the domain")
            .to_string();
        assert!(err.contains(want), "{src}: `{err}` lacks `{want}`");
        assert!(err.contains("wiener_lpdf"), "{err}");
    }
}

/// The partials at sw = 0 and st0 = 0 follow Stan (0), and sw = st0 = 0 is the 5-parameter
/// density exactly.
#[test]
fn wiener7_zero_variabilities_are_the_five_parameter_form() {
    let x7 = [0.9, 1.2, 0.2, 0.45, 0.7, 0.4, 0.0, 0.0];
    let mut g7 = [0.0; 8];
    let mut g5 = [0.0; 6];
    let lp7 = hazel_math::dist::wiener::wiener7(&x7, &mut g7).unwrap();
    let lp5 = hazel_math::dist::wiener::wiener5(&x7[..6], &mut g5).unwrap();
    assert_eq!(lp7, lp5);
    assert_eq!(&g7[..6], &g5[..]);
    assert_eq!(&g7[6..], &[0.0, 0.0]);
}

/// As stanc, the 7-parameter form takes all arguments real or all vectors, never a mix.
#[test]
fn wiener7_signatures_are_stancs() {
    let ok = "data { vector[2] y; } parameters { real<lower=1> a; } model {\n\
              y ~ wiener(rep_vector(a, 2), rep_vector(0.2, 2), rep_vector(0.5, 2), \
              rep_vector(0.3, 2), rep_vector(0.1, 2), rep_vector(0.1, 2), rep_vector(0.05, 2));\n\
              y[1] ~ wiener(a, 0.2, 0.5, 0.3, 0.1, 0.1, 0.05); }";
    assert!(hazel_check::check_source("m.stan", ok).checked.is_some());
    let mixed = "data { vector[2] y; } parameters { real<lower=1> a; } model {\n\
                 y ~ wiener(a, 0.2, 0.5, 0.3, 0.1, 0.1, 0.05); }";
    assert!(hazel_check::check_source("m.stan", mixed).checked.is_none());
}
