//! Complex numbers. stanli has none, so values come from numpy's complex arithmetic (C99
//! Annex G branch cuts, as C++'s `std::complex` that Stan uses): `tests/fixtures/complex.json`
//! by `scripts/complex/make_fixtures.py`, compared through generated quantities in CmdStan's
//! column naming. Gradients through complex expressions of parameters: central finite
//! differences, and the same density written with real arithmetic by hand.

mod common;

use common::{compiled, eval};
use hazel_density::{LogDensity, Model, StreamRng};
use hazel_rng::Purpose;

#[test]
fn complex_functions_match_numpy() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/complex.json");
    let fixture: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("json");
    let program = fixture["program"].as_str().expect("program");
    let m = compiled(program, &fixture["data"].to_string());
    let names = m.output_names();
    let mut row = vec![0.0; names.len()];
    let mut ws = m.new_workspace();
    let mut rng = StreamRng::new(1, 0, Purpose::GeneratedQuantities);
    m.write_output(&mut ws, &[], &mut rng, &mut row)
        .expect("row");
    let expected = fixture["expected"].as_object().expect("expected");
    assert_eq!(names.len(), expected.len(), "{names:?}");
    let mut bad = Vec::new();
    for (name, value) in names.iter().zip(&row) {
        let want = expected[name].as_f64().expect("number");
        if (value - want).abs() > 1e-12 * want.abs().max(1.0) {
            bad.push(format!("{name}: hazel {value}, numpy {want}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn gradients_through_complex_expressions() {
    // The same density written with complex numbers and with real arithmetic.
    let with_complex = compiled(
        "parameters { real a; real b; }
         model {
           complex z = to_complex(a, b);
           complex_vector[3] v = [z, 2 * z, z * z]';
           target += get_real(exp(z) * conj(z)) - abs(z - 1i) + get_imag(sum(fft(v)))
                     - norm(v[3]) / 10;
         }",
        "{}",
    );
    let by_hand = compiled(
        "parameters { real a; real b; }
         model {
           // exp(z) conj(z) = e^a (cos b + i sin b)(a − ib): real part e^a (a cos b + b sin b)
           // sum(fft(v)) = n v[1] = 3 z; |z²|² = (a² + b²)²
           target += exp(a) * (a * cos(b) + b * sin(b)) - hypot(a, b - 1) + 3 * b
                     - square(a^2 + b^2) / 10;
         }",
        "{}",
    );
    for q in [[0.3, -0.7], [-1.2, 0.4], [0.9, 1.1]] {
        let (lp, g) = eval(&with_complex, &q);
        let (lp_hand, g_hand) = eval(&by_hand, &q);
        assert!(
            (lp - lp_hand).abs() < 1e-12 * lp.abs().max(1.0),
            "{lp} {lp_hand}"
        );
        for k in 0..2 {
            assert!((g[k] - g_hand[k]).abs() < 1e-11, "{g:?} {g_hand:?}");
            let h = 1e-6;
            let mut up = q;
            up[k] += h;
            let mut down = q;
            down[k] -= h;
            let fd = (eval(&with_complex, &up).0 - eval(&with_complex, &down).0) / (2.0 * h);
            assert!(
                (g[k] - fd).abs() < 1e-6 * fd.abs().max(1.0),
                "{g:?} vs fd {fd}"
            );
        }
    }
    assert!(!with_complex.is_dynamic());
}

#[test]
fn complex_generated_quantities_and_data_columns() {
    let m = compiled(
        "data { array[2] complex zs; }
         parameters { real a; }
         model { a ~ normal(0, 1); }
         generated quantities { complex z = zs[2] * a; complex_vector[2] v = [zs[1], 1]'; }",
        r#"{"zs": [[1, 2], [3, -4]]}"#,
    );
    assert_eq!(
        m.output_names(),
        ["a", "z.real", "z.imag", "v.1.real", "v.1.imag", "v.2.real", "v.2.imag"]
    );
    let mut row = vec![0.0; 7];
    let mut ws = m.new_workspace();
    let mut rng = StreamRng::new(1, 0, Purpose::GeneratedQuantities);
    m.write_output(&mut ws, &[0.5], &mut rng, &mut row)
        .expect("row");
    assert_eq!(row, [0.5, 1.5, -2.0, 1.0, 2.0, 1.0, 0.0]);
}
