//! Tuples as data, parameters, transformed parameters and generated quantities, and tuple
//! unpacking. stanli has no tuples, so the oracle is the same model written without them:
//! the log density and gradient must be bit-identical (the unconstrained layout is the same:
//! a tuple slot by slot, an array of tuples one whole tuple after another), and the CSV
//! columns follow CmdStan's layout (`bar:1, bar:2.1, bar:2.2` — the CmdStan guide's "Stan CSV
//! File Format").

mod common;

use common::{compiled, eval};
use hazel_density::{LogDensity, Model, StreamRng};
use hazel_graph::CompiledModel;
use hazel_rng::Purpose;

fn output(m: &CompiledModel, q: &[f64]) -> Vec<(String, f64)> {
    let mut ws = m.new_workspace();
    let names = m.output_names();
    let mut row = vec![0.0; names.len()];
    let mut rng = StreamRng::new(1, 0, Purpose::GeneratedQuantities);
    m.write_output(&mut ws, q, &mut rng, &mut row)
        .expect("output row");
    names.into_iter().zip(row).collect()
}

fn points(dim: usize) -> Vec<Vec<f64>> {
    (0..3)
        .map(|k| {
            (0..dim)
                .map(|i| 0.4 * ((i * 7 + k * 3) % 5) as f64 - 0.9)
                .collect()
        })
        .collect()
}

#[test]
fn tuple_data_reads_like_separate_variables() {
    let with_tuples = compiled(
        "data { tuple(int, array[2] real, matrix[2, 3]) d;
                array[2] tuple(vector[2], tuple(real, int)) e; }
         parameters { real mu; }
         model {
           mu ~ normal(d.2[2] + d.3[2, 1] - d.3[1, 3], d.1);
           for (i in 1:2) mu ~ normal(e[i].1[2] + e[i].2.1, e[i].2.2);
         }",
        r#"{"d": {"1": 2, "2": [0.5, 1.5], "3": [[1, 2, 3], [4, 5, 6]]},
            "e": [{"1": [1, 2], "2": {"1": 0.25, "2": 3}},
                  {"1": [3, 4], "2": {"1": 0.75, "2": 5}}]}"#,
    );
    let separate = compiled(
        "data { int d1; array[2] real d2; matrix[2, 3] d3;
                array[2] vector[2] e1; array[2] real e21; array[2] int e22; }
         parameters { real mu; }
         model {
           mu ~ normal(d2[2] + d3[2, 1] - d3[1, 3], d1);
           for (i in 1:2) mu ~ normal(e1[i][2] + e21[i], e22[i]);
         }",
        r#"{"d1": 2, "d2": [0.5, 1.5], "d3": [[1, 2, 3], [4, 5, 6]],
            "e1": [[1, 2], [3, 4]], "e21": [0.25, 0.75], "e22": [3, 5]}"#,
    );
    for q in points(1) {
        assert_eq!(eval(&with_tuples, &q), eval(&separate, &q));
    }
}

#[test]
fn tuple_parameters_have_stan_layout_and_columns() {
    let with_tuples = compiled(
        "parameters { tuple(real, real<lower=0>) p; array[2] tuple(simplex[3], real) a; }
         model {
           p.1 ~ normal(0, 1); p.2 ~ exponential(1);
           for (i in 1:2) { a[i].1 ~ dirichlet([1, 2, 3]'); a[i].2 ~ normal(p.1, p.2); }
         }",
        "{}",
    );
    let separate = compiled(
        "parameters { real p1; real<lower=0> p2; simplex[3] a11; real a12; simplex[3] a21;
                      real a22; }
         model {
           p1 ~ normal(0, 1); p2 ~ exponential(1);
           a11 ~ dirichlet([1, 2, 3]'); a12 ~ normal(p1, p2);
           a21 ~ dirichlet([1, 2, 3]'); a22 ~ normal(p1, p2);
         }",
        "{}",
    );
    assert_eq!(with_tuples.dim(), 8);
    assert_eq!(separate.dim(), 8);
    for q in points(8) {
        assert_eq!(eval(&with_tuples, &q), eval(&separate, &q));
        let tuple_row = output(&with_tuples, &q);
        let plain_row = output(&separate, &q);
        let values: Vec<f64> = tuple_row.iter().map(|(_, v)| *v).collect();
        let expected: Vec<f64> = plain_row.iter().map(|(_, v)| *v).collect();
        assert_eq!(values, expected);
    }
    let names: Vec<String> = with_tuples.output_names();
    assert_eq!(
        names,
        [
            "p:1", "p:2", "a.1:1.1", "a.1:1.2", "a.1:1.3", "a.1:2", "a.2:1.1", "a.2:1.2",
            "a.2:1.3", "a.2:2"
        ]
    );
}

#[test]
fn tuples_in_generated_quantities_and_unpacking() {
    let m = compiled(
        "parameters { real x; }
         transformed parameters { tuple(real, vector[2]) tp = (x, [x, 2 * x]'); }
         model { x ~ normal(tp.2[2], 1); }
         generated quantities {
           tuple(real, int) g = (tp.1, 3);
           real a = 1; real b = 2;
           (a, b) = (b, a);
           int k; real r;
           (r, k) = g;
         }",
        "{}",
    );
    let row = output(&m, &[0.25]);
    let expected = [
        ("x", 0.25),
        ("tp:1", 0.25),
        ("tp:2.1", 0.25),
        ("tp:2.2", 0.5),
        ("g:1", 0.25),
        ("g:2", 3.0),
        ("a", 2.0),
        ("b", 1.0),
        ("k", 3.0),
        ("r", 0.25),
    ];
    let expected: Vec<(String, f64)> = expected.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    assert_eq!(row, expected);
}

#[test]
fn tuple_initial_values_round_trip() {
    let m = compiled(
        "parameters { array[2] tuple(real<lower=0>, simplex[3]) a; }
         model { for (i in 1:2) { a[i].1 ~ exponential(1); a[i].2 ~ dirichlet([1, 1, 1]'); } }",
        "{}",
    );
    let inits = hazel_data::DataFile::parse(
        r#"{"a": [{"1": 0.5, "2": [0.2, 0.3, 0.5]}, {"1": 2.0, "2": [0.6, 0.1, 0.3]}]}"#,
    )
    .expect("inits");
    let q = m.unconstrain_inits(&inits, || 0.0).expect("unconstrains");
    assert_eq!(q.len(), 6);
    let row = output(&m, &q);
    let values: Vec<f64> = row.iter().map(|(_, v)| *v).collect();
    let expected = [0.5, 0.2, 0.3, 0.5, 2.0, 0.6, 0.1, 0.3];
    for (v, e) in values.iter().zip(expected) {
        assert!((v - e).abs() < 1e-12, "{values:?}");
    }
}
