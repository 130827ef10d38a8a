//! Stan's matrix algebra (lower/linalg.rs and the `Op::Linalg` kernels) against stanli:
//! log density and gradient of small programs using every function on parameters, on data
//! and mixed, at seeded points, within 1e-8 relative (fixture:
//! `scripts/linalg/make_library_fixtures.py`). Functions stanli lacks are compared with their
//! definitions written out in the program stanli ran (`oracle_code` in the fixture).
//! Also: Stan's errors for bad values (at every evaluation) and bad sizes (at compile time).

use hazel_density::LogDensity;
use hazel_graph::{CompileOptions, CompiledModel};
use serde_json::Value;

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(1.0)
}

/// Compiles with default options.
fn compile_program(src: &str, data_json: &str) -> Result<CompiledModel, String> {
    compile_with(src, data_json, 1)
}

/// The one place this file calls `compile`.
fn compile_with(src: &str, data_json: &str, threads: usize) -> Result<CompiledModel, String> {
    let parsed = hazel_check::check_source("model.stan", src);
    let program = parsed
        .checked
        .as_ref()
        .ok_or_else(|| format!("parse error: {}", parsed.render_diagnostics()))?;
    let data = hazel_data::DataFile::parse(data_json).map_err(|e| format!("data: {e}"))?;
    let options = CompileOptions {
        executor: hazel_graph::ExecutorKind::with_threads(threads),
        ..CompileOptions::default()
    };
    hazel_graph::compile(program, &data, &options).map_err(|e| e.render(&parsed.sources))
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

#[test]
fn matches_stanli() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/linalg_library.json"
    ))
    .unwrap();
    let fixture: Value = serde_json::from_str(&text).unwrap();
    let programs = fixture["programs"].as_array().unwrap();
    assert_eq!(programs.len(), 7);
    for p in programs {
        let name = p["name"].as_str().unwrap();
        let model = compile_program(p["code"].as_str().unwrap(), &p["data"].to_string())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let n = p["n_unconstrained"].as_u64().unwrap() as usize;
        assert_eq!(model.dim(), n, "{name}");
        assert!(
            !model.is_dynamic(),
            "{name}: the matrix functions keep the graph static"
        );
        let mut ws = model.new_workspace();
        let mut grad = vec![0.0; n];
        for (k, pt) in p["points"].as_array().unwrap().iter().enumerate() {
            let q = floats(&pt["q"]);
            let lp_ref = pt["log_density"].as_f64().unwrap();
            let g_ref = floats(&pt["gradient"]);
            let lp = model
                .log_density_gradient(&mut ws, &q, &mut grad)
                .unwrap_or_else(|e| panic!("{name} point {k}: {e}"));
            assert!(
                rel(lp, lp_ref) < 1e-8,
                "{name} point {k}: log density {lp} vs stanli {lp_ref}"
            );
            for i in 0..n {
                assert!(
                    rel(grad[i], g_ref[i]) < 1e-8,
                    "{name} point {k}: gradient[{i}] {} vs stanli {}",
                    grad[i],
                    g_ref[i]
                );
            }
        }
    }
}

/// `expr` as a real, so the program type-checks: summed unless it already is one.
fn total(expr: &str) -> String {
    if expr.contains("determinant")
        || (expr.starts_with("quad_form") && !expr.starts_with("quad_form_diag"))
    {
        expr.to_string()
    } else {
        format!("sum({expr})")
    }
}

/// Evaluates `model` at `q`, returning the error message.
fn eval_error(model: &CompiledModel, q: &[f64]) -> String {
    let mut ws = model.new_workspace();
    let mut grad = vec![0.0; q.len()];
    match model.log_density_gradient(&mut ws, q, &mut grad) {
        Ok(lp) => panic!("expected an error, got log density {lp}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_values_reject_the_point() {
    let spd = |f: &str| {
        let t = total(f);
        format!("parameters {{ matrix[2, 2] A; }} model {{ target += {t}; }}")
    };
    for f in [
        "inverse_spd(A)",
        "mdivide_left_spd(A, [1, 2]')",
        "mdivide_right_spd([1, 2], A)",
    ] {
        let model = compile_program(&spd(f), "{}").unwrap();
        let name = f.split('(').next().unwrap();
        // Column-major [[1, 0.2], [0.3, 1]]: not symmetric.
        let e = eval_error(&model, &[1.0, 0.3, 0.2, 1.0]);
        assert!(e.contains(name) && e.contains("not symmetric"), "{f}: {e}");
        // Symmetric, eigenvalues 3 and −1.
        let e = eval_error(&model, &[1.0, 2.0, 2.0, 1.0]);
        assert!(
            e.contains(name) && e.contains("not positive definite"),
            "{f}: {e}"
        );
        let mut ws = model.new_workspace();
        let mut g = [0.0; 4];
        assert!(model
            .log_density_gradient(&mut ws, &[2.0, 0.5, 0.5, 1.0], &mut g)
            .is_ok());
    }
    let model = compile_program(&spd("log_determinant_spd(A)"), "{}").unwrap();
    let e = eval_error(&model, &[1.0, 2.0, 2.0, 1.0]);
    assert!(e.contains("log_determinant_spd"), "{e}");
    let model = compile_program(&spd("quad_form_sym(A, [1, 2]')"), "{}").unwrap();
    let e = eval_error(&model, &[1.0, 0.3, 0.2, 1.0]);
    assert!(e.contains("quad_form_sym: A is not symmetric"), "{e}");
    // Singular general matrices.
    for f in [
        "inverse(A)",
        "mdivide_left(A, [1, 2]')",
        "log_determinant(A)",
    ] {
        let model = compile_program(&spd(f), "{}").unwrap();
        let e = eval_error(&model, &[1.0, 2.0, 2.0, 4.0]);
        assert!(e.contains("singular"), "{f}: {e}");
    }
    for f in ["eigenvalues_sym(A)", "eigenvectors_sym(A)"] {
        let model = compile_program(&spd(f), "{}").unwrap();
        let e = eval_error(&model, &[1.0, 0.3, 0.2, 1.0]);
        let name = f.split('(').next().unwrap();
        assert!(
            e.contains(&format!("{name}: m is not symmetric")),
            "{f}: {e}"
        );
    }
    // chol2inv of a parameter matrix whose upper triangle is not zero.
    let model = compile_program(&spd("chol2inv(A)"), "{}").unwrap();
    let e = eval_error(&model, &[1.0, 0.3, 0.2, 1.0]);
    assert!(e.contains("chol2inv: L is not lower triangular"), "{e}");
}

#[test]
fn bad_sizes_name_the_function() {
    let data = r#"{"A": [[1, 0, 0], [0, 2, 0], [0, 0, 3]], "R": [[1, 2, 3], [4, 5, 6]],
                   "b": [1, 2], "r": [1, 2]}"#;
    let decls = "data { matrix[3, 3] A; matrix[2, 3] R; vector[2] b; row_vector[2] r; }\n";
    let cases = [
        (
            "A \\ b",
            "mdivide_left: Columns of A (3) and Rows of b (2) must match in size",
        ),
        (
            "mdivide_left_spd(A, b)",
            "mdivide_left_spd: Columns of A (3) and Rows of b (2)",
        ),
        (
            "r / A",
            "mdivide_right: Columns of b (2) and Rows of A (3) must match in size",
        ),
        (
            "mdivide_right_tri_low(r, A)",
            "mdivide_right_tri_low: Columns of b (2) and Rows of A (3)",
        ),
        (
            "inverse(R)",
            "inverse: Expecting a square matrix; rows of m (2) and columns of m (3)",
        ),
        (
            "log_determinant(R)",
            "log_determinant: Expecting a square matrix",
        ),
        (
            "quad_form(A, b)",
            "quad_form: Columns of A (3) and Rows of B (2)",
        ),
        (
            "rows_dot_product(A, R)",
            "rows_dot_product: Rows of v1 (3) and rows of v2 (2) must match in size",
        ),
        ("generalized_inverse(A - A)", "inverse: m is singular"),
        (
            "quad_form_diag(A, b)",
            "quad_form_diag: rows of mat (3) and size of vec (2) must match in size",
        ),
        (
            "quad_form_diag(R, r)",
            "quad_form_diag: Expecting a square matrix; rows of mat (2) and columns of mat (3)",
        ),
        (
            "diag_pre_multiply(b, A)",
            "diag_pre_multiply: m1.size() (2) and m2.rows() (3) must match in size",
        ),
        (
            "diag_post_multiply(A, r)",
            "diag_post_multiply: m2.size() (2) and m1.cols() (3) must match in size",
        ),
        (
            "matrix_power(A, -1)",
            "matrix_power: n is -1, but must be nonnegative!",
        ),
        (
            "chol2inv(A + [[0, 1, 0], [0, 0, 0], [0, 0, 0]])",
            "chol2inv: L is not lower triangular; L[1,2]=1",
        ),
    ];
    for (expr, want) in cases {
        let t = total(expr);
        let src = format!("{decls}parameters {{ real x; }}\nmodel {{ x ~ normal({t}, 1); }}");
        // A failure while tracing the model block rejects every evaluation (as Stan would);
        // one in transformed data fails compilation.
        let e = match compile_program(&src, data) {
            Ok(model) => eval_error(&model, &[0.0]),
            Err(e) => e,
        };
        assert!(e.contains(want), "{expr}: {e}");
        let src = format!(
            "{decls}transformed data {{ real y = {t}; }}\n\
             parameters {{ real x; }}\nmodel {{ x ~ normal(0, 1); }}"
        );
        let e = compile_program(&src, data)
            .err()
            .unwrap_or_else(|| panic!("{expr}: compiled"));
        assert!(e.contains(want), "{expr} in transformed data: {e}");
    }
}

#[test]
fn full_q_of_a_tall_parameter_matrix_is_refused() {
    let src = "parameters { matrix[3, 2] T; } model { target += sum(qr_Q(T)); }";
    let e = compile_program(src, "{}").err().expect("compiled");
    assert!(
        e.contains("qr_Q of a parameter matrix with more rows than columns"),
        "{e}"
    );
    // The thin factor, qr_R and square or wide qr_Q are fine.
    for f in ["qr_thin_Q(T)", "qr_R(T)", "qr_Q(T')"] {
        let src = format!("parameters {{ matrix[3, 2] T; }} model {{ target += sum({f}); }}");
        assert!(compile_program(&src, "{}").is_ok(), "{f}");
    }
}

#[test]
fn solves_of_parameters_stay_static_and_agree_with_products() {
    // x = A \ b must satisfy A x = b; a second evaluation reuses the workspace.
    let src = "parameters { matrix[3, 3] X; vector[3] b; }\n\
               model { matrix[3, 3] A = X + diag_matrix(rep_vector(3, 3));\n\
               target += -0.5 * dot_self(A * (A \\ b) - b) * 1e12 + sum(b / 10); }";
    let model = compile_program(src, "{}").unwrap();
    let mut ws = model.new_workspace();
    let mut g = vec![0.0; 12];
    for s in [0.1, -0.3] {
        let q: Vec<f64> = (0..12).map(|i| s * (i as f64 - 5.0) / 7.0).collect();
        let lp = model.log_density_gradient(&mut ws, &q, &mut g).unwrap();
        let sum_b: f64 = q[9..].iter().sum::<f64>() / 10.0;
        assert!((lp - sum_b).abs() < 1e-12, "{lp} vs {sum_b}");
        for (i, gi) in g.iter().enumerate() {
            let want = if i >= 9 { 0.1 } else { 0.0 };
            assert!((gi - want).abs() < 1e-6, "gradient[{i}] = {gi}");
        }
    }
}

#[test]
fn dynamic_and_threaded_evaluation_agree_with_the_static_serial_graph() {
    // The same density, once static and once behind a branch on a parameter (which makes the
    // model re-trace at every evaluation); and the static one with two threads per chain.
    let body = "matrix[3, 3] A = X + diag_matrix(rep_vector(4, 3));\n\
                matrix[3, 3] S = tcrossprod(X) + diag_matrix(rep_vector(1, 3));\n\
                real t = log_determinant(A) + sum(inverse(A)) + sum(A \\ b) + sum(b' / A)\n\
                  + log_determinant_spd(S) + sum(inverse_spd(S)) + sum(mdivide_left_spd(S, b))\n\
                  + 0.1 * determinant(A) + sum(eigenvalues_sym(S)) + sum(square(eigenvectors_sym(S)))\n\
                  + sum(singular_values(X)) + sum(qr_thin_R(X)) + sum(matrix_exp(0.5 * X));";
    let decls = "parameters { matrix[3, 3] X; vector[3] b; }\n";
    let stat = format!("{decls}model {{ {body} target += t; }}");
    let dyn_src =
        format!("{decls}model {{ {body} if (b[1] > -100) target += t; else target += 0; }}");
    let s1 = compile_with(&stat, "{}", 1).unwrap();
    let s2 = compile_with(&stat, "{}", 2).unwrap();
    let d = compile_program(&dyn_src, "{}").unwrap();
    assert!(!s1.is_dynamic() && d.is_dynamic());
    let q: Vec<f64> = (0..12).map(|i| ((i * 7 % 11) as f64 - 5.0) / 6.0).collect();
    let mut out = Vec::new();
    for m in [&s1, &s2, &d] {
        let mut ws = m.new_workspace();
        let mut g = vec![0.0; 12];
        let lp = m.log_density_gradient(&mut ws, &q, &mut g).unwrap();
        // A second evaluation on the same workspace gives the same bits.
        let mut g2 = vec![0.0; 12];
        let lp2 = m.log_density_gradient(&mut ws, &q, &mut g2).unwrap();
        assert_eq!((lp.to_bits(), &g), (lp2.to_bits(), &g2));
        out.push((lp, g));
    }
    assert_eq!(out[0].0.to_bits(), out[1].0.to_bits());
    assert_eq!(out[0].1, out[1].1);
    assert_eq!(out[0].0.to_bits(), out[2].0.to_bits());
    assert_eq!(out[0].1, out[2].1);
}

#[test]
fn transformed_parameters_and_generated_quantities_report_the_values() {
    use hazel_density::Model;
    use hazel_math::linalg as la;
    let src = "parameters { matrix[2, 2] A; }\n\
               transformed parameters { matrix[2, 2] Ainv = inverse(A); }\n\
               model { to_vector(A) ~ normal(0, 1); }\n\
               generated quantities {\n\
                 real ld = log_determinant(A);\n\
                 vector[2] ev = eigenvalues_sym(A + A');\n\
                 matrix[2, 2] R = qr_thin_R(A);\n\
               }";
    let model = compile_program(src, "{}").unwrap();
    let names = model.output_names();
    assert_eq!(names.len(), 4 + 4 + 1 + 2 + 4, "{names:?}");
    let q = [1.5, -0.4, 0.7, 2.0];
    let mut ws = model.new_workspace();
    let mut rng = hazel_rng::StreamRng::new(1, 0, hazel_rng::Purpose::GeneratedQuantities);
    let mut out = vec![0.0; names.len()];
    model.write_output(&mut ws, &q, &mut rng, &mut out).unwrap();
    assert_eq!(&out[..4], &q);
    let mut f = vec![0.0; la::factor_len(2)];
    let mut inv = vec![0.0; 4];
    la::mdivide_left(
        la::Factor::Lu,
        &q,
        2,
        &[1.0, 0.0, 0.0, 1.0],
        2,
        &mut inv,
        &mut f,
    )
    .unwrap();
    for (g, w) in out[4..8].iter().zip(&inv) {
        assert!(rel(*g, *w) < 1e-15, "Ainv: {g} vs {w}");
    }
    let ld = la::log_abs_determinant(&q, 2, &mut f).unwrap();
    assert!(rel(out[8], ld) < 1e-15);
    // A + Aᵀ = [[3, 0.3], [0.3, 4]].
    let (t, d) = (3.5, ((0.5f64).powi(2) + 0.09).sqrt());
    assert!(rel(out[9], t - d) < 1e-14 && rel(out[10], t + d) < 1e-14);
    // R of A: first column norm, then the rest.
    let r11 = (1.5f64 * 1.5 + 0.4 * 0.4).sqrt();
    assert!(rel(out[11], r11) < 1e-14 && out[12] == 0.0);
    let det: f64 = 1.5 * 2.0 - 0.7 * (-0.4);
    assert!(rel(out[11] * out[14], det.abs()) < 1e-14);
    assert!(rel(out[13], (1.5 * 0.7 + (-0.4) * 2.0) / r11) < 1e-14);
}
