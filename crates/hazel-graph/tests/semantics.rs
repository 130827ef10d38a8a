//! Language semantics the oracle fixtures do not exercise: parameter-dependent control flow
//! (the dynamic path), rejection and constraint errors, the density variants of
//! `log_density_with`, generated quantities, and compile errors with locations.

use hazel_density::{EvalErrorKind, LogDensity, Model, StreamRng};
use hazel_graph::{compile, CompileOptions, CompiledModel};

fn build(src: &str, data: &str) -> CompiledModel {
    let parsed = hazel_check::check_source("m.stan", src);
    let program = parsed
        .checked
        .clone()
        .unwrap_or_else(|| panic!("parse: {}", parsed.render_diagnostics()));
    let data = hazel_data::DataFile::parse(data).expect("data");
    compile(&program, &data, &CompileOptions::default())
        .unwrap_or_else(|e| panic!("compile: {}", e.render(&parsed.sources)))
}

fn eval(m: &CompiledModel, q: &[f64]) -> Result<(f64, Vec<f64>), hazel_density::EvalError> {
    let mut ws = m.new_workspace();
    let mut g = vec![0.0; q.len()];
    m.log_density_gradient(&mut ws, q, &mut g).map(|lp| (lp, g))
}

#[test]
fn parameter_dependent_branches_use_the_dynamic_path() {
    // A piecewise density: the branch depends on the parameter.
    let m = build(
        "parameters { real x; } model { if (x > 0) target += -x; else target += 2 * x; while (0) {} }",
        "{}",
    );
    assert!(m.is_dynamic());
    let (lp, g) = eval(&m, &[1.5]).expect("evaluates");
    assert_eq!((lp, g[0]), (-1.5, -1.0));
    let (lp, g) = eval(&m, &[-0.5]).expect("evaluates");
    assert_eq!((lp, g[0]), (-1.0, 2.0));
    // A loop bound computed from a parameter, and repeated evaluation in one workspace.
    let m = build(
        "parameters { real<lower=0, upper=5> n; } model { int k = 0; while (k < n) { k += 1; } target += k * n; }",
        "{}",
    );
    assert!(m.is_dynamic());
    let mut ws = m.new_workspace();
    let mut g = [0.0];
    for &u in &[-1.0f64, 0.3, 2.0, 0.3] {
        let n = 5.0 / (1.0 + (-u).exp());
        let lp = m
            .log_density_gradient(&mut ws, &[u], &mut g)
            .expect("evaluates");
        let k = n.ceil();
        let jac = (5.0f64).ln() - u.abs() - 2.0 * (-u.abs()).exp().ln_1p();
        assert!(
            (lp - (k * n + jac)).abs() < 1e-12,
            "u={u}: {lp} vs {}",
            k * n + jac
        );
    }
}

#[test]
fn reject_and_failed_constraints_are_errors_not_panics() {
    let m = build(
        "parameters { real x; } model { if (x > 1) reject(\"x too big: \", x); x ~ normal(0, 1); }",
        "{}",
    );
    let err = eval(&m, &[2.0]).unwrap_err();
    assert_eq!(err.kind, EvalErrorKind::Reject);
    assert!(err.message.contains("x too big: 2"), "{}", err.message);
    assert!(eval(&m, &[0.5]).is_ok());

    let m = build(
        "parameters { real x; } transformed parameters { real<lower=0> y = x - 1; } model { x ~ normal(0, 1); }",
        "{}",
    );
    assert!(!m.is_dynamic());
    let err = eval(&m, &[0.5]).unwrap_err();
    assert_eq!(err.kind, EvalErrorKind::Constraint);
    assert!(eval(&m, &[1.5]).is_ok());

    // A scale parameter of 0 is a domain error; a non-finite density is reported as such.
    let m = build(
        "parameters { real x; } model { x ~ normal(0, x * x); }",
        "{}",
    );
    assert_eq!(eval(&m, &[0.0]).unwrap_err().kind, EvalErrorKind::Domain);
    let m = build("parameters { real x; } model { target += log(x); }", "{}");
    assert_eq!(
        eval(&m, &[-1.0]).unwrap_err().kind,
        EvalErrorKind::NonFinite
    );
}

#[test]
fn density_variants_drop_exactly_the_requested_terms() {
    // sigma > 0 with a lower-bound transform: log J = u.
    let m = build(
        "data { real y; } parameters { real<lower=0> sigma; } model { y ~ normal(1, sigma); }",
        r#"{"y": 2.5}"#,
    );
    let u: f64 = 0.4;
    let s = u.exp();
    let quad = -0.5 * ((2.5 - 1.0) / s).powi(2);
    let log_sigma = s.ln();
    let c = -0.5 * (2.0 * std::f64::consts::PI).ln();
    let mut ws = m.new_workspace();
    let mut g = [0.0];
    let cases = [
        (true, true, quad - log_sigma + u),
        (false, true, quad - log_sigma),
        (true, false, quad - log_sigma + c + u),
        (false, false, quad - log_sigma + c),
    ];
    for (jacobian, propto, expected) in cases {
        let lp = m
            .log_density_with(&mut ws, &[u], &mut g, jacobian, propto)
            .expect("evaluates");
        assert!(
            (lp - expected).abs() < 1e-13,
            "jacobian={jacobian} propto={propto}: {lp} vs {expected}"
        );
        // d/du of (quad − log σ): σ = e^u
        let dquad = ((2.5 - 1.0) / s).powi(2) - 1.0;
        let expected_g = dquad + if jacobian { 1.0 } else { 0.0 };
        assert!(
            (g[0] - expected_g).abs() < 1e-12,
            "gradient {} vs {expected_g}",
            g[0]
        );
    }
    // `target += normal_lpdf(...)` keeps the constants; `_lupdf` drops them.
    let full = build(
        "parameters { real x; } model { target += normal_lpdf(x | 0, 2); }",
        "{}",
    );
    let lu = build(
        "parameters { real x; } model { target += normal_lupdf(x | 0, 2); }",
        "{}",
    );
    let (a, _) = eval(&full, &[0.3]).expect("evaluates");
    let (b, _) = eval(&lu, &[0.3]).expect("evaluates");
    assert!((a - (-0.5 * (0.15f64).powi(2) - 2.0f64.ln() + c)).abs() < 1e-14);
    assert!((b - (-0.5 * (0.15f64).powi(2))).abs() < 1e-14);
}

#[test]
fn generated_quantities_draw_from_the_given_stream_and_name_columns_like_cmdstan() {
    let m = build(
        "data { int N; } parameters { real mu; } transformed parameters { matrix[2, 2] M = [[mu, 1], [2, 3]]; } \
         model { mu ~ normal(0, 1); } generated quantities { real y = normal_rng(mu, 1); array[N] int k; for (n in 1:N) k[n] = n; }",
        r#"{"N": 2}"#,
    );
    assert_eq!(
        m.output_names(),
        ["mu", "M.1.1", "M.2.1", "M.1.2", "M.2.2", "y", "k.1", "k.2"]
    );
    let mut ws = m.new_workspace();
    let mut out1 = vec![0.0; 8];
    let mut out2 = vec![0.0; 8];
    let mut r1 = StreamRng::new(7, 0, hazel_rng::Purpose::GeneratedQuantities);
    let mut r2 = StreamRng::new(7, 0, hazel_rng::Purpose::GeneratedQuantities);
    m.write_output(&mut ws, &[0.5], &mut r1, &mut out1)
        .expect("writes");
    m.write_output(&mut ws, &[0.5], &mut r2, &mut out2)
        .expect("writes");
    assert_eq!(out1, out2);
    assert_eq!(&out1[..5], &[0.5, 0.5, 2.0, 1.0, 3.0]);
    assert_eq!(&out1[6..], &[1.0, 2.0]);
    // The stream advanced: the next draw differs.
    m.write_output(&mut ws, &[0.5], &mut r1, &mut out2)
        .expect("writes");
    assert_ne!(out1[5], out2[5]);
}

#[test]
fn user_function_calls_run_the_overload_the_checker_resolved() {
    // `f(n, 1.0)` with an int `n` must run `f(int, real)`, not the first `f` with two
    // arguments; Stan gives -19900.125 at x = 0.5 (stanli 0.24).
    let m = build(
        "functions { real f(real a, real b) { return a + b; }
                     real f(int a, real b) { return 100 * a * b; } }
         data { int n; } parameters { real x; }
         model { x ~ normal(f(n, 1.0), 1); }",
        r#"{"n": 2}"#,
    );
    let (lp, g) = eval(&m, &[0.5]).expect("finite");
    assert_eq!(lp, -19900.125);
    assert_eq!(g, vec![199.5]);
    // The real overload for a real argument, and ints promoted to reals inside it: integer
    // division must not happen in `g(3, 2)` when `g` takes reals.
    let m = build(
        "functions { real g(real a, real b) { return a / b; }
                     real g(int a, int b, int c) { return a + b + c; } }
         parameters { real x; }
         model { x ~ normal(g(3, 2), 1); }",
        "{}",
    );
    let (lp, _) = eval(&m, &[0.5]).expect("finite");
    assert_eq!(lp, -0.5);
}

#[test]
fn ternary_with_an_int_branch_is_real_when_the_other_is() {
    // `(c ? 3 : 2.5)` has type real, so dividing it by 2 is real division: 1.5, not 1.
    let m = build(
        "data { int c; } parameters { real x; } model { x ~ normal((c ? 3 : 2.5) / 2, 1); }",
        r#"{"c": 1}"#,
    );
    let (lp, _) = eval(&m, &[1.5]).expect("finite");
    assert_eq!(lp, 0.0);
}

#[test]
fn compile_errors_point_at_the_model_or_the_data() {
    // Every signature the checker accepts now lowers (wiener_lpdf's 7-parameter form was the
    // last), so a checked model has no compile error of its own left to show: the data's.
    let src = "data { int N; vector[N] y; }\nparameters { real mu; }\n\
               model { y ~ normal(mu, 1); }";
    let parsed = hazel_check::check_source("m.stan", src);
    let program = parsed.checked.expect("checks");
    let bad = hazel_data::DataFile::parse(r#"{"N": 3, "y": [1, 2]}"#).expect("data");
    let err = compile(&program, &bad, &CompileOptions::default())
        .err()
        .expect("size mismatch");
    assert_eq!(err.variable.as_deref(), Some("y"));
}

#[test]
fn independent_assignment_loops_become_vector_ops_with_the_same_values() {
    // The same loop twice: once in the vectorisable form, once with an extra statement that
    // keeps it unrolled.
    let body = "mu[i] = a[g[i]] * x[i] + b - 2 * i / 3.0 + exp(-x[i]);";
    let fast = format!(
        "data {{ int N; array[N] int g; vector[N] x; }} parameters {{ vector[3] a; real b; }} \
         model {{ vector[N] mu; for (i in 1:N) {{ {body} }} target += normal_lpdf(x | mu, 2); }}"
    );
    let slow = format!(
        "data {{ int N; array[N] int g; vector[N] x; }} parameters {{ vector[3] a; real b; }} \
         model {{ vector[N] mu; for (i in 1:N) {{ {body} if (0) {{ }} }} target += normal_lpdf(x | mu, 2); }}"
    );
    let data = r#"{"N": 7, "g": [1, 2, 3, 1, 2, 3, 3], "x": [0.5, -1, 2, 0.25, 1.5, -0.75, 3]}"#;
    let mf = build(&fast, data);
    let ms = build(&slow, data);
    // Ops as traced: a scalar block counts each instruction it holds.
    let traced_ops = |m: &hazel_graph::CompiledModel| -> usize {
        let g = m.graph().expect("static");
        g.ops
            .iter()
            .map(|op| match op {
                hazel_graph::Op::Scalars { block, .. } => block.code().len(),
                _ => 1,
            })
            .sum()
    };
    let (ops_fast, ops_slow) = (traced_ops(&mf), traced_ops(&ms));
    assert!(ops_fast * 3 < ops_slow, "{ops_fast} vs {ops_slow} ops");
    let q = [0.3, -0.7, 1.1, 0.4];
    let (lf, gf) = eval(&mf, &q).expect("evaluates");
    let (ls, gs) = eval(&ms, &q).expect("evaluates");
    assert!((lf - ls).abs() <= 1e-12 * ls.abs(), "{lf} vs {ls}");
    for (a, b) in gf.iter().zip(&gs) {
        assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{a} vs {b}");
    }
}

#[test]
fn print_in_the_model_block_re_traces_and_keeps_the_density() {
    let with_print = build(
        "parameters { real x; } model { print(\"x = \", x); x ~ normal(1, 2); }",
        "{}",
    );
    let without = build("parameters { real x; } model { x ~ normal(1, 2); }", "{}");
    assert!(with_print.is_dynamic());
    assert!(!without.is_dynamic());
    assert_eq!(
        eval(&with_print, &[0.3]).expect("finite"),
        eval(&without, &[0.3]).expect("finite")
    );
}

#[test]
fn evaluation_errors_name_the_model_line() {
    // Static graph (a failing op) and dynamic path (a reject statement) alike.
    for (src, q, expected) in [
        (
            "parameters { real<lower=0> s; }\nmodel {\n  s ~ normal(0, 1);\n  target += normal_lpdf(1 | 0, s - 0.5);\n}",
            [-2.0],
            "(in 'm.stan', line 4, column 3 to column 41)",
        ),
        (
            "parameters { real x; }\nmodel {\n  if (x > 2) reject(\"x too large: \", x);\n  x ~ normal(0, 1);\n}",
            [3.0],
            "x too large: 3 (in 'm.stan', line 3, column 14 to column 41)",
        ),
    ] {
        let parsed = hazel_check::check_source("m.stan", src);
        let program = parsed.checked.clone().expect("checks");
        let options = CompileOptions {
            sources: Some(std::sync::Arc::new(parsed.sources.clone())),
            ..CompileOptions::default()
        };
        let data = hazel_data::DataFile::parse("{}").expect("data");
        let m = compile(&program, &data, &options).expect("compiles");
        let err = eval(&m, &q).expect_err("rejects");
        assert!(err.to_string().ends_with(expected), "{err}");
        // Without sources, no location.
        let m = compile(&program, &data, &CompileOptions::default()).expect("compiles");
        assert_eq!(eval(&m, &q).expect_err("rejects").location, None);
    }
}

#[test]
fn tilde_keeps_the_terms_stan_keeps_for_autodiff_arguments() {
    // Stan keeps a summand of `~` whenever an argument is an autodiff value by its type (a
    // transformed parameter, a model-block local, a ternary or user call with a parameter
    // argument), even if its value does not depend on the parameters; inside a function
    // called with data only, the arguments are doubles and the summand is dropped. Values
    // at x = 0.5 (stanli 0.24 for the first three; by hand: each kept normal(2 | 1, 1) term
    // is −0.5, x ~ normal(0, 1) is −0.125).
    let cases = [
        (
            "parameters { real x; } transformed parameters { real t = 1; }
             model { x ~ normal(0, 1); 2 ~ normal(t, 1); }",
            -0.625,
        ),
        (
            "data { int n; } parameters { real x; }
             model { real t = 1; x ~ normal(0, 1); 2 ~ normal(t, 1);
                     2 ~ normal(n > 0 ? 1.0 : x, 1); }",
            -1.125,
        ),
        (
            "functions { real f(real a, real b) { return a; } real g(real a) { return a; } }
             parameters { real x; }
             model { x ~ normal(0, 1); 2 ~ normal(f(1.0, x), 1); 2 ~ normal(g(1.0), 1); }",
            -0.625,
        ),
        (
            "parameters { real x; } transformed parameters { real t = 1; }
             model { x ~ normal(0, 1); target += normal_lupdf(2 | t, 1); }",
            -0.625,
        ),
        // A data-valued transformed-parameter vector, sliced: both elements' terms kept.
        (
            "parameters { real x; } transformed parameters { vector[3] t = [1, 3, 5]'; }
             model { x ~ normal(0, 1); t[1:2] ~ normal(2, 1); }",
            -1.125,
        ),
    ];
    for (src, expected) in cases {
        let m = build(src, r#"{"n": 1}"#);
        let (lp, g) = eval(&m, &[0.5]).expect("finite");
        assert_eq!((lp, g), (expected, vec![-0.5]), "{src}");
    }
}

#[test]
fn sd_has_stan_maths_gradient_where_elements_are_equal() {
    // Stan Math gives each element 1/√n when the sum of squares is below 1e-20 (stanli 0.24:
    // lp 0, gradient √3), and sd of one element is 0.
    let m = build(
        "parameters { real x; } model { target += sd(rep_vector(x, 3)) + sd([x]') + variance([x]'); }",
        "{}",
    );
    let (lp, g) = eval(&m, &[0.5]).expect("finite");
    assert_eq!(lp, 0.0);
    assert!((g[0] - 3f64.sqrt()).abs() < 1e-15, "{g:?}");
}

/// Declared sizes come from the data: a huge `N` must give an error, not an allocation that
/// aborts the process (found by the `data_reader` fuzz target: `array[N] int y` with
/// `N = 2147483647` allocated a blank value of N elements before reading `y`).
#[test]
fn huge_declared_sizes_are_errors_not_aborts() {
    let compile_with = |src: &str, data: &str| {
        let checked = hazel_check::check_source("m.stan", src)
            .checked
            .expect("checks");
        let data = hazel_data::DataFile::parse(data).expect("data");
        compile(&checked, &data, &CompileOptions::default()).map(|_| ())
    };
    let model = "parameters { real mu; } model { mu ~ normal(0, 1); }";
    // Data are checked against the declared size before anything of that size exists.
    let error = compile_with(
        &format!("data {{ int N; array[N] int y; matrix[N, N] m; }} {model}"),
        r#"{"N": 2147483647, "y": [1, 2], "m": []}"#,
    )
    .unwrap_err();
    assert!(error.message.contains("`y`"), "{}", error.message);
    // An empty array of huge vectors allocates nothing.
    compile_with(
        &format!("data {{ int M; array[0] vector[M] v; array[2, 0] matrix[M, M] a; }} {model}"),
        r#"{"M": 2147483647, "v": [], "a": []}"#,
    )
    .unwrap();
    // A value that cannot be allocated is an error (Stan: std::bad_alloc).
    let error = compile_with(
        &format!("data {{ int M; }} transformed data {{ matrix[M, M] w; }} {model}"),
        r#"{"M": 2147483647}"#,
    )
    .unwrap_err();
    assert!(
        error.message.contains("cannot allocate"),
        "{}",
        error.message
    );
}

#[test]
fn binomial_coefficients_of_data_counts_are_summed_once() {
    // `target += binomial_lpmf` keeps log C(N, n); with data counts the tracer sums it once
    // and the op evaluates the rest under propto. The value must still be the full lpmf (the
    // kernel's own sum, to rounding), for a vector and a broadcast count, and for both families.
    let data = r#"{"y": [0, 3, 7, 2], "n": [5, 3, 9, 4]}"#;
    let decl = "data { array[4] int y; array[4] int n; } parameters { real a; }";
    let full = build(
        &format!(
            "{decl} model {{ target += binomial_logit_lpmf(y | n, a); \
             target += binomial_lpmf(y | 9, inv_logit(a)); }}"
        ),
        data,
    );
    let alpha = 0.3f64;
    let (lp, grad) = eval(&full, &[alpha]).expect("evaluates");
    let (y, n) = ([0.0, 3.0, 7.0, 2.0], [5.0, 3.0, 9.0, 4.0]);
    let p = 1.0 / (1.0 + (-alpha).exp());
    let (mut expect, mut d_expect) = (0.0, 0.0);
    for i in 0..4 {
        let choose = |nn: f64, k: f64| hazel_math::special::lchoose(nn, k);
        expect += choose(n[i], y[i]) + y[i] * p.ln() + (n[i] - y[i]) * (1.0 - p).ln();
        expect += choose(9.0, y[i]) + y[i] * p.ln() + (9.0 - y[i]) * (1.0 - p).ln();
        d_expect += (y[i] - n[i] * p) + (y[i] - 9.0 * p);
    }
    assert!(
        (lp - expect).abs() < 1e-12 * expect.abs(),
        "{lp} vs {expect}"
    );
    assert!(
        (grad[0] - d_expect).abs() < 1e-12,
        "{} vs {d_expect}",
        grad[0]
    );
    // Counts that fail the check leave the coefficient to the op, which names them.
    let bad = build(
        &format!("{decl} model {{ target += binomial_logit_lpmf(y | n, a); }}"),
        r#"{"y": [0, 3, 7, 2], "n": [5, 3, 6, 4]}"#,
    );
    let err = eval(&bad, &[alpha]).expect_err("7 successes of 6");
    assert!(
        err.message.contains("Successes variable"),
        "{}",
        err.message
    );
}
