//! Call forms the checker accepts to match stanc 2.37 (issue 8's loose ends), against
//! `tests/fixtures/loose.json` (`scripts/loose/make_loose_fixtures.py`): stanli 0.24.0 log
//! densities and gradients at seeded points of
//! - `$I`/`$R` functions with an int array beside a real container of as many dimensions
//!   (`falling_factorial(vector, array[] int)`, `bessel_second_kind(array[] int, vector)`,
//!   `bessel_first_kind(array[,] int, matrix)`, …);
//! - poisson_binomial with `row_vector` and `array[] real` probabilities;
//!
//! and `poisson_binomial_rng` of those forms against its exact mean.

mod common;

use common::{build, run_group, FdRule};
use hazel_density::{LogDensity, Model};

#[test]
fn int_arrays_beside_real_containers_match_stanli() {
    run_group("loose.json", &["mixed_shapes"], 1, FdRule::Both);
}

#[test]
fn poisson_binomial_with_row_vector_and_array_probabilities_matches_stanli() {
    run_group("loose.json", &["poisson_binomial"], 1, FdRule::Both);
}

const PB_RNG: &str = r#"
data { array[4] real th; row_vector[3] r; }
parameters { real mu; }
model { mu ~ normal(0, 1); }
generated quantities {
  int a = poisson_binomial_rng(th);
  int b = poisson_binomial_rng(r);
}
"#;

/// Mean of `draws` draws within 4.5 standard errors of Σθ (variance Σθ(1 − θ)).
#[test]
fn poisson_binomial_rng_of_arrays_and_row_vectors_matches_its_moments() {
    let (th, r) = ([0.1, 0.5, 0.9, 0.3], [0.7, 0.2, 0.6]);
    let data = format!(r#"{{"th": {th:?}, "r": {r:?}}}"#);
    let model = build(PB_RNG, &data).expect("compiles");
    let names = model.output_names();
    let mut ws = model.new_workspace();
    let mut row = vec![0.0; names.len()];
    let mut rng = hazel_density::StreamRng::new(7, 0, hazel_rng::Purpose::GeneratedQuantities);
    let draws = 20_000;
    let mut sums = vec![0.0; names.len()];
    for _ in 0..draws {
        model
            .write_output(&mut ws, &[0.0], &mut rng, &mut row)
            .expect("draws");
        for (s, x) in sums.iter_mut().zip(&row) {
            *s += x;
        }
    }
    for (col, p) in [("a", &th[..]), ("b", &r[..])] {
        let i = names.iter().position(|n| n == col).expect(col);
        let mean: f64 = p.iter().sum();
        let var: f64 = p.iter().map(|t| t * (1.0 - t)).sum();
        let got = sums[i] / draws as f64;
        let se = (var / draws as f64).sqrt();
        assert!(
            (got - mean).abs() <= 4.5 * se,
            "{col}: mean {got} vs {mean}"
        );
    }
}

/// `tests/fixtures/loose.checked.txt` (read by `registry_coverage`).
#[test]
fn the_checked_list_is_what_these_tests_check() {
    common::checked_list("loose", &[(PB_RNG.to_string(), &["poisson_binomial_rng"])]);
}

/// stanc rejects these; so does hazel's checker, naming the function.
#[test]
fn forms_stanc_rejects_are_check_errors() {
    for (decl, call) in [
        ("vector[2] x;", "step(x)"),
        (
            "array[2] vector[2] t; array[2] int y;",
            "poisson_binomial_lpmf(y | t)",
        ),
        ("vector[2] x; array[2, 2] int n;", "falling_factorial(x, n)"),
        (
            "array[2] int n; array[2] vector[2] x;",
            "bessel_second_kind(n, x)",
        ),
    ] {
        let src = format!("data {{ {decl} }} generated quantities {{ real z = sum({call}); }}");
        let result = hazel_check::check_source("m.stan", &src);
        assert!(result.checked.is_none(), "{call} checks");
        let name = call.split('(').next().unwrap();
        let text = result.render_diagnostics();
        assert!(text.contains(name), "{call}: {text}");
    }
}

/// hazel's checker accepts exactly the argument types stanc 2.37 accepts for the two-argument
/// vectorised functions and `step` (`stanc_grid` in the fixture: every pair of the listed
/// declarations, the accepted ones recorded).
#[test]
fn vectorised_signatures_accept_what_stanc_accepts() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/loose.json");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json");
    let grid = &v["stanc_grid"];
    let decls = grid["declarations"].as_object().expect("declarations");
    let decl = |t: &str, name: &str| decls[t].as_str().expect("declaration").replace("{}", name);
    let types: Vec<&String> = decls.keys().collect();
    let mut cases = 0;
    let mut bad = Vec::new();
    for (f, accepted) in grid["accepted"].as_object().expect("accepted") {
        let accepted: Vec<Vec<&str>> = accepted
            .as_array()
            .expect("pairs")
            .iter()
            .map(|p| {
                p.as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t.as_str().unwrap())
                    .collect()
            })
            .collect();
        let arity = if f == "step" { 1 } else { 2 };
        let combos: Vec<Vec<&str>> = if arity == 1 {
            types.iter().map(|a| vec![a.as_str()]).collect()
        } else {
            types
                .iter()
                .flat_map(|a| types.iter().map(move |b| vec![a.as_str(), b.as_str()]))
                .collect()
        };
        for args in combos {
            let names = ["x", "y"];
            let decls: Vec<String> = args.iter().zip(names).map(|(t, n)| decl(t, n)).collect();
            let call = format!("{f}({})", names[..arity].join(", "));
            let src = format!(
                "data {{ {} }}\ngenerated quantities {{ print({call}); }}\n",
                decls.join(" ")
            );
            let hazel = hazel_check::check_source("m.stan", &src).checked.is_some();
            let stanc = accepted.contains(&args);
            cases += 1;
            if hazel != stanc {
                bad.push(format!("{f}{args:?}: stanc {stanc}, hazel {hazel}"));
            }
        }
    }
    assert!(cases > 2000, "{cases} cases");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
