//! Complex linear algebra against numpy (stanli has no complex numbers):
//! `tests/fixtures/complex_linalg.json` by `scripts/complex/make_complex_linalg_fixtures.py`.
//! Values Stan fixes (products, ordered eigenvalues and singular values, `real / matrix`) are
//! compared directly; decompositions defined only up to phase and order through invariants the
//! Stan program computes (residuals, unitarity, triangularity, tuple forms). Gradients of the
//! differentiable forms (products, Hermitian eigenvalues, complex singular values) against a
//! closed form and central finite differences.

mod common;

use common::{build, eval, rel};
use hazel_density::{LogDensity, Model, StreamRng};
use hazel_graph::CompiledModel;
use hazel_rng::Purpose;

fn fixture() -> serde_json::Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/complex_linalg.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("json")
}

fn outputs(m: &CompiledModel, q: &[f64]) -> Vec<(String, f64)> {
    let names = m.output_names();
    let mut row = vec![0.0; names.len()];
    let mut ws = m.new_workspace();
    let mut rng = StreamRng::new(1, 0, Purpose::GeneratedQuantities);
    m.write_output(&mut ws, q, &mut rng, &mut row).expect("row");
    names.into_iter().zip(row).collect()
}

#[test]
fn products_and_ordered_values_match_numpy_and_decompositions_reconstruct() {
    let f = fixture();
    let m = build(f["program"].as_str().unwrap(), &f["data"].to_string()).expect("build");
    let out = outputs(&m, &[]);
    let get = |name: &str| {
        out.iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no column {name}"))
            .1
    };
    let mut bad = Vec::new();
    let expected = f["expected"].as_object().unwrap();
    for (name, want) in expected {
        let want = want.as_f64().unwrap();
        let got = get(name);
        if (got - want).abs() > 1e-12 * want.abs().max(1.0) {
            bad.push(format!("{name}: hazel {got}, numpy {want}"));
        }
    }
    for (name, expr) in f["invariants"]
        .as_array()
        .unwrap()
        .iter()
        .zip(f["invariant_expressions"].as_array().unwrap())
    {
        let name = name.as_str().unwrap();
        let r = get(name);
        eprintln!("{name} = {r:e}");
        if r.is_nan() || r.abs() >= 1e-11 {
            bad.push(format!("{name} = {r}: {}", expr.as_str().unwrap()));
        }
    }
    // The real matrix's eigenvalues: the same multiset as LAPACK's, a conjugate pair adjacent
    // with positive imaginary part first, the real one exactly real; on this matrix LAPACK's
    // order (dgeev's real Schur form, as Eigen's) is hazel's too.
    let lam: Vec<(f64, f64)> = (1..=3)
        .map(|k| {
            (
                get(&format!("lam_a.{k}.real")),
                get(&format!("lam_a.{k}.imag")),
            )
        })
        .collect();
    let mut sorted = lam.clone();
    sorted.sort_by(|a, b| {
        ((a.0 * 1e12).round(), a.1)
            .partial_cmp(&((b.0 * 1e12).round(), b.1))
            .unwrap()
    });
    let pair = |v: &serde_json::Value| (v[0].as_f64().unwrap(), v[1].as_f64().unwrap());
    for (got, want) in sorted
        .iter()
        .zip(f["eigenvalues_A_sorted"].as_array().unwrap())
    {
        let want = pair(want);
        if rel(got.0, want.0) > 1e-12 || rel(got.1, want.1) > 1e-12 {
            bad.push(format!("eigenvalues(A): {got:?} vs {want:?}"));
        }
    }
    for (got, want) in lam
        .iter()
        .zip(f["eigenvalues_A_lapack_order"].as_array().unwrap())
    {
        let want = pair(want);
        if rel(got.0, want.0) > 1e-12 || rel(got.1, want.1) > 1e-12 {
            bad.push(format!("eigenvalues(A) order: {lam:?}"));
            break;
        }
    }
    assert!(
        lam[2].1 == 0.0 && lam[0].1 > 0.0 && lam[1] == (lam[0].0, -lam[0].1),
        "{lam:?}"
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn hermitian_eigenvectors_and_singular_vectors_have_a_real_positive_largest_entry() {
    let m = build(
        "data { complex_matrix[3, 3] H; complex_matrix[2, 3] W; }
         generated quantities {
           complex_matrix[3, 3] V = eigenvectors_sym(H);
           complex_matrix[2, 2] U = svd_U(W);
         }",
        r#"{"H": [[[2, 0], [1, 1], [0, -0.5]], [[1, -1], [3, 0], [0.25, 0]], [[0, 0.5], [0.25, 0], [-1, 0]]],
            "W": [[[1, 2], [0, 1], [3, -1]], [[-1, 0.5], [2, 2], [0, 0]]]}"#,
    )
    .expect("build");
    let out = outputs(&m, &[]);
    let col = |name: &str, rows: usize, j: usize| -> Vec<(f64, f64)> {
        (1..=rows)
            .map(|i| {
                let re = out
                    .iter()
                    .find(|(n, _)| *n == format!("{name}.{i}.{j}.real"))
                    .unwrap()
                    .1;
                let im = out
                    .iter()
                    .find(|(n, _)| *n == format!("{name}.{i}.{j}.imag"))
                    .unwrap()
                    .1;
                (re, im)
            })
            .collect()
    };
    for (name, rows) in [("V", 3), ("U", 2)] {
        for j in 1..=rows {
            let c = col(name, rows, j);
            let big = c
                .iter()
                .max_by(|a, b| a.0.hypot(a.1).partial_cmp(&b.0.hypot(b.1)).unwrap())
                .unwrap();
            assert!(big.0 > 0.0 && big.1 == 0.0, "{name} column {j}: {c:?}");
        }
    }
}

fn check_fd(m: &CompiledModel, q: &[f64]) {
    let (_, g) = eval(m, q);
    for k in 0..q.len() {
        let h = 1e-6;
        let (mut up, mut down) = (q.to_vec(), q.to_vec());
        up[k] += h;
        down[k] -= h;
        let fd = (eval(m, &up).0 - eval(m, &down).0) / (2.0 * h);
        assert!(
            (g[k] - fd).abs() < 1e-6 * fd.abs().max(1.0),
            "coordinate {k}: {g:?} vs fd {fd}"
        );
    }
}

/// Column-major entries of [[1, -2, 0.5], [3, 0.25, -1], [0.5, 1.5, 2]]: the real point of
/// [`check_fd_real_and_complex`], and the real part of its complex point.
const FD_A: [f64; 9] = [1.0, 3.0, 0.5, -2.0, 0.25, 1.5, 0.5, -1.0, 2.0];
/// The imaginary part of the complex point.
const FD_Y: [f64; 9] = [0.2, -0.5, 0.1, 0.7, 0.0, -0.3, 0.4, 0.25, -0.8];

/// Builds the model block `real_model` over a real parameter matrix `A` and `complex_model`
/// over `to_complex(X, Y)`, both static, and checks their gradients by finite differences:
/// the real one at [`FD_A`] and at `second`, the complex one at `X` = [`FD_A`],
/// `Y` = [`FD_Y`]. Returns the real model.
fn check_fd_real_and_complex(
    real_model: &str,
    complex_model: &str,
    second: &[f64],
) -> CompiledModel {
    let real = build(
        &format!("parameters {{ matrix[3, 3] A; }} model {{ {real_model} }}"),
        "{}",
    )
    .expect("build");
    let complex = build(
        &format!("parameters {{ matrix[3, 3] X; matrix[3, 3] Y; }} model {{ {complex_model} }}"),
        "{}",
    )
    .expect("build");
    assert!(!real.is_dynamic() && !complex.is_dynamic());
    check_fd(&real, &FD_A);
    check_fd(&real, second);
    let xy: Vec<f64> = FD_A.iter().chain(&FD_Y).copied().collect();
    check_fd(&complex, &xy);
    real
}

#[test]
fn hermitian_eigenvalues_of_parameters_match_the_closed_form_and_differentiate() {
    // [[a, b + ic], [b − ic, d]]: λ = (a + d)/2 ∓ √(((a − d)/2)² + b² + c²).
    let m = build(
        "parameters { real a; real b; real c; real d; }
         model {
           complex_matrix[2, 2] H = to_matrix({{to_complex(a, 0), to_complex(b, c)},
                                               {to_complex(b, -c), to_complex(d, 0)}});
           complex_vector[2] l = eigenvalues_sym(H);
           target += get_real(l[1]) + 3 * get_real(l[2]) + get_imag(l[1]);
         }",
        "{}",
    )
    .expect("build");
    let by_hand = build(
        "parameters { real a; real b; real c; real d; }
         model {
           real r = sqrt(square((a - d) / 2) + square(b) + square(c));
           target += ((a + d) / 2 - r) + 3 * ((a + d) / 2 + r);
         }",
        "{}",
    )
    .expect("build");
    assert!(!m.is_dynamic());
    for q in [
        [0.3, -0.7, 0.4, 1.5],
        [-1.2, 0.4, 0.1, -0.3],
        [2.0, 1.1, -0.8, 0.5],
    ] {
        let (lp, g) = eval(&m, &q);
        let (lp_h, g_h) = eval(&by_hand, &q);
        assert!(rel(lp, lp_h) < 1e-12, "{lp} {lp_h}");
        for k in 0..4 {
            assert!((g[k] - g_h[k]).abs() < 1e-10, "{g:?} {g_h:?}");
        }
        check_fd(&m, &q);
    }
}

#[test]
fn complex_singular_values_and_products_of_parameters_differentiate() {
    let m = build(
        "data { complex_vector[3] w; }
         parameters { matrix[3, 2] X; matrix[3, 2] Y; }
         model {
           complex_matrix[3, 2] Z = to_complex(X, Y);
           vector[2] s = singular_values(Z);
           complex z = dot_product(col(Z, 1), w) + dot_product(to_array_1d(col(Z, 2)), to_array_1d(w));
           target += s[1] - 0.5 * s[2] + get_real(z) - get_imag(z)
                     + get_real(sum(tcrossprod(Z))) + get_imag(sum(crossprod(Z)))
                     + get_real(dot_self(row(Z, 2))) - get_real(sum(columns_dot_self(Z)))
                     + get_imag(sum(rows_dot_product(Z, Z)));
         }",
        r#"{"w": [[1, -0.5], [0.25, 2], [-1, 1]]}"#,
    )
    .expect("build");
    assert!(!m.is_dynamic());
    let q = [
        0.3, -0.7, 0.4, 1.5, -0.2, 0.9, 0.1, 0.8, -1.1, 0.6, 0.35, -0.45,
    ];
    check_fd(&m, &q);
    let q2: Vec<f64> = q.iter().map(|x| 1.3 * x - 0.2).collect();
    check_fd(&m, &q2);
}

#[test]
fn every_decomposition_of_parameters_passes_check() {
    // (The registry probe tries complex arguments as data only; these are the parameter forms.)
    for call in [
        "eigenvalues(A)",
        "eigenvalues(to_complex(A, A'))",
        "eigenvectors(A)",
        "eigendecompose(A).1",
        "complex_schur_decompose_t(A)",
        "complex_schur_decompose(to_complex(A, A')).1",
        "eigenvectors_sym(to_complex(A + A', A - A'))",
        "svd_U(to_complex(A, A'))",
        "svd(to_complex(A, A')).3",
        "eigenvalues_sym(to_complex(A + A', A - A'))",
        "to_complex(singular_values(to_complex(A, A)), 0)",
    ] {
        let src = format!(
            "parameters {{ matrix[2, 2] A; }}
             model {{ target += -0.5 * sum(square(to_vector(A)));
                      target += get_real(sum({call})); }}"
        );
        let parsed = hazel_check::check_source("m.stan", &src);
        let flagged = hazel_graph::unsupported_calls(parsed.checked.as_ref().expect("checks"));
        assert!(flagged.is_empty(), "{call}: {flagged:?}");
    }
}

#[test]
fn eigenvalues_of_parameter_matrices_differentiate_and_equal_the_data_path() {
    // A real matrix with a complex pair and a real eigenvalue near the fixture's, and a
    // complex one; the loss weighs real and imaginary parts of every eigenvalue.
    let loss = "target += dot_product(get_real(l), [0.3, -1.2, 0.7]') \
                + dot_product(get_imag(l), [1.1, 0.4, -0.6]');";
    let a = FD_A;
    let a2: Vec<f64> = a
        .iter()
        .enumerate()
        .map(|(i, x)| x + 0.1 * i as f64)
        .collect();
    let real = check_fd_real_and_complex(
        &format!("complex_vector[3] l = eigenvalues(A); {loss}"),
        &format!("complex_vector[3] l = eigenvalues(to_complex(X, Y)); {loss}"),
        &a2,
    );
    // The parameter path's values are the data path's.
    let data = build(
        &format!(
            "data {{ matrix[3, 3] A; }} parameters {{ real z; }}
             model {{ complex_vector[3] l = eigenvalues(A); {loss} z ~ normal(0, 1); }}"
        ),
        r#"{"A": [[1, -2, 0.5], [3, 0.25, -1], [0.5, 1.5, 2]]}"#,
    )
    .expect("build");
    let (lp_param, _) = eval(&real, &a);
    let (lp_data, _) = eval(&data, &[0.0]);
    assert!(rel(lp_param, lp_data) < 1e-14, "{lp_param} vs {lp_data}");
}

#[test]
fn eigenvectors_of_parameter_matrices_differentiate() {
    // Phase-dependent functions of the eigenvectors: the derivative of hazel's normalisation
    // (unit norm, largest entry real and positive), by finite differences.
    let w = "[[0.3, -1.2, 0.7], [1.1, 0.4, -0.6], [-0.2, 0.9, 0.5]]";
    let loss = format!(
        "target += sum(get_real(V) .* {w}) + sum(get_imag(V) .* {w}') \
         + dot_product(get_real(l), [0.2, 0.1, -0.3]');"
    );
    check_fd_real_and_complex(
        &format!(
            "complex_matrix[3, 3] V = eigenvectors(A);
             complex_vector[3] l = eigendecompose(A).2; {loss}"
        ),
        &format!(
            "complex_matrix[3, 3] V = eigendecompose(to_complex(X, Y)).1;
             complex_vector[3] l = eigenvalues(to_complex(X, Y)); {loss}"
        ),
        // all eigenvalues real
        &[2.0, 0.3, 0.1, 0.5, -1.0, 0.2, 0.4, 0.6, 3.0],
    );
}

#[test]
fn bad_sizes_and_values_are_errors_not_panics() {
    // (declaration, expression, must fail): `None` where only "no panic" is checked.
    for (decl, expr, fails) in [
        ("complex_matrix[0, 3] Z", "singular_values(Z)", Some(false)),
        ("complex_matrix[0, 0] Z", "svd_U(Z)", None),
        ("complex_matrix[0, 0] Z", "eigenvalues(Z)", Some(true)),
        ("complex_matrix[0, 0] Z", "eigenvectors_sym(Z)", None),
        ("complex_matrix[2, 3] Z", "eigenvalues_sym(Z)", Some(true)),
        ("complex_matrix[2, 3] Z", "eigenvectors(Z)", Some(true)),
        (
            "complex_matrix[2, 3] Z",
            "complex_schur_decompose_t(Z)",
            Some(true),
        ),
        ("complex_matrix[2, 2] Z", "eigenvectors_sym(Z)", Some(true)),
        (
            "complex_matrix[2, 3] Z",
            "rows_dot_product(Z, Z')",
            Some(true),
        ),
        (
            "complex_vector[2] Z",
            "dot_product(Z, [1, 2, 3]')",
            Some(true),
        ),
    ] {
        let src = format!(
            "data {{ {decl}; }} parameters {{ real x; }}
             model {{ x ~ normal(0, 1); }}
             generated quantities {{ real y = num_elements({expr}); }}"
        );
        let dims: Vec<usize> = decl
            .split(['[', ']', ','])
            .filter_map(|t| t.trim().parse().ok())
            .collect();
        // A non-Hermitian 2 × 2 where a square matrix is declared, zeros elsewhere.
        let data = match dims.as_slice() {
            [2, 2] => r#"{"Z": [[[1, 0], [2, 1]], [[0, 0], [1, 0]]]}"#.to_string(),
            [r, c] => format!(
                r#"{{"Z": {}}}"#,
                serde_json::to_string(&vec![vec![[0.5, 0.0]; *c]; *r]).unwrap()
            ),
            [n] => format!(
                r#"{{"Z": {}}}"#,
                serde_json::to_string(&vec![[0.5, 0.0]; *n]).unwrap()
            ),
            _ => unreachable!(),
        };
        let result = std::panic::catch_unwind(|| match build(&src, &data) {
            Err(e) => Err(e),
            Ok(m) => {
                let names = m.output_names();
                let mut row = vec![0.0; names.len()];
                let mut ws = m.new_workspace();
                let mut rng = StreamRng::new(1, 0, Purpose::GeneratedQuantities);
                m.write_output(&mut ws, &[0.0], &mut rng, &mut row)
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
        });
        let outcome = result.unwrap_or_else(|_| panic!("{expr} panicked"));
        if let Some(fails) = fails {
            assert_eq!(outcome.is_err(), fails, "{expr} of {decl}: {outcome:?}");
        }
    }
}

#[test]
fn hermitian_eigenvectors_of_parameters_differentiate() {
    let w = "[[0.3, -1.2, 0.7], [1.1, 0.4, -0.6], [-0.2, 0.9, 0.5]]";
    let m = build(
        &format!(
            "parameters {{ matrix[3, 3] X; matrix[3, 3] Y; }}
             model {{ complex_matrix[3, 3] H = to_complex(X + X', Y - Y');
                      complex_matrix[3, 3] V = eigenvectors_sym(H);
                      tuple(complex_matrix[3, 3], complex_vector[3]) d = eigendecompose_sym(H);
                      target += sum(get_real(V) .* {w}) + sum(get_imag(V) .* {w}')
                                + sum(get_real(d.2)) * 0.3 + get_imag(d.1[2, 3]); }}"
        ),
        "{}",
    )
    .expect("build");
    assert!(!m.is_dynamic());
    let xy = [
        1.0, 3.0, 0.5, -2.0, 0.25, 1.5, 0.5, -1.0, 2.0, 0.2, -0.5, 0.1, 0.7, 0.0, -0.3, 0.4, 0.25,
        -0.8,
    ];
    check_fd(&m, &xy);
    // The parameter path's vectors are the data path's.
    let data = build(
        "data { complex_matrix[2, 2] H; } parameters { real z; }
         model { z ~ normal(0, 1); target += sum(get_imag(eigenvectors_sym(H))); }",
        r#"{"H": [[[2, 0], [1, 1]], [[1, -1], [-1, 0]]]}"#,
    )
    .expect("build");
    let param = build(
        "parameters { real z; }
         model { z ~ normal(0, 1);
                 complex_matrix[2, 2] H = to_matrix({{to_complex(2 + 0 * z, 0), to_complex(1, 1)},
                                                     {to_complex(1, -1), to_complex(-1, 0)}});
                 target += sum(get_imag(eigenvectors_sym(H))); }",
        "{}",
    )
    .expect("build");
    let (a, _) = eval(&data, &[0.3]);
    let (b, _) = eval(&param, &[0.3]);
    assert!(rel(a, b) < 1e-14, "{a} vs {b}");
}

#[test]
fn complex_schur_of_parameters_differentiates() {
    // Phase-dependent functions of U and T (hazel's convention: each Schur vector's largest
    // entry real and positive), by finite differences; real and complex input.
    let w = "[[0.3, -1.2, 0.7], [1.1, 0.4, -0.6], [-0.2, 0.9, 0.5]]";
    let loss = format!(
        "target += sum(get_real(T) .* {w}) + sum(get_imag(T) .* {w}') \
                   + sum(get_real(U) .* {w}') - sum(get_imag(U) .* {w});"
    );
    check_fd_real_and_complex(
        &format!(
            "complex_matrix[3, 3] T = complex_schur_decompose_t(A);
             complex_matrix[3, 3] U = complex_schur_decompose(A).1; {loss}"
        ),
        &format!(
            "complex_matrix[3, 3] T = complex_schur_decompose(to_complex(X, Y)).2;
             complex_matrix[3, 3] U = complex_schur_decompose_u(to_complex(X, Y)); {loss}"
        ),
        &[2.0, 0.3, 0.1, 0.5, -1.0, 0.2, 0.4, 0.6, 3.0],
    );
}

#[test]
fn complex_singular_vectors_of_parameters_differentiate_and_equal_the_data_path() {
    let w = "[[0.3, -1.2], [1.1, 0.4], [-0.2, 0.9]]";
    for (rows, cols, loss) in [
        (
            3,
            2,
            format!("sum(get_real(U) .* {w}) + sum(get_imag(V) .* {w}[1:2]) + sum(s)"),
        ),
        (
            2,
            3,
            format!("sum(get_real(V) .* {w}) + sum(get_imag(U) .* {w}[1:2]) - sum(s)"),
        ),
    ] {
        let m = build(
            &format!(
                "parameters {{ matrix[{rows}, {cols}] X; matrix[{rows}, {cols}] Y; }}
                 model {{ complex_matrix[{rows}, {cols}] Z = to_complex(X, Y);
                          complex_matrix[{rows}, 2] U = svd_U(Z);
                          complex_matrix[{cols}, 2] V = svd(Z).3;
                          vector[2] s = singular_values(Z);
                          target += {loss}; }}"
            ),
            "{}",
        )
        .expect("build");
        assert!(!m.is_dynamic());
        let q = [
            0.3, -0.7, 0.4, 1.5, -0.2, 0.9, 0.1, 0.8, -1.1, 0.6, 0.35, -0.45,
        ];
        check_fd(&m, &q);
    }
    // The parameter path's vectors are the data path's (up to rounding).
    let z = r#"[[[1, 0.5], [0, -1]], [[2, 0], [1, 1]], [[-0.5, 0.25], [0.3, 0]]]"#;
    let data = build(
        "data { complex_matrix[3, 2] Z; } parameters { real x; }
         model { x ~ normal(0, 1);
                 target += sum(get_real(svd_U(Z)) .* [[1, 2], [3, 4], [5, 6]])
                           + sum(get_imag(svd_V(Z)) .* [[1, -2], [0.5, 3]]); }",
        &format!(r#"{{"Z": {z}}}"#),
    )
    .expect("build");
    let param = build(
        "data { complex_matrix[3, 2] Z; } parameters { real x; }
         model { x ~ normal(0, 1);
                 complex_matrix[3, 2] W = Z + 0 * x;
                 target += sum(get_real(svd_U(W)) .* [[1, 2], [3, 4], [5, 6]])
                           + sum(get_imag(svd_V(W)) .* [[1, -2], [0.5, 3]]); }",
        &format!(r#"{{"Z": {z}}}"#),
    )
    .expect("build");
    let (a, _) = eval(&data, &[0.2]);
    let (b, _) = eval(&param, &[0.2]);
    assert!(rel(a, b) < 1e-12, "{a} vs {b}");
}
