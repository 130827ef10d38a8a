//! Distributions against mpmath reference values: full log densities (every constant kept) and
//! their gradients, and log cdfs / log ccdfs with gradients. Fixtures:
//! `tests/fixtures/dist_*.json`, made by `scripts/math/make_fixtures.py` (mpmath at 50 digits,
//! densities cross-checked against scipy.stats).

use hazel_math::dist::{distribution, Terms};
use serde_json::Value;

fn load(text: &str) -> Vec<Value> {
    serde_json::from_str::<Value>(text)
        .expect("fixture parses")
        .as_array()
        .expect("array")
        .clone()
}

fn nums(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

fn close(got: f64, want: f64, rel: f64, floor: f64) -> bool {
    (got - want).abs() <= rel * want.abs().max(floor)
}

#[test]
fn lpdf_values_and_gradients_match_mpmath() {
    let mut failures = Vec::new();
    let rows = load(include_str!("fixtures/dist_lpdf.json"));
    for row in &rows {
        let name = row["name"].as_str().unwrap();
        let args = nums(&row["args"]);
        let want = row["value"].as_f64().unwrap();
        let want_grad = nums(&row["grad"]);
        let Some(d) = distribution(name) else {
            failures.push(format!("{name}: missing from the table"));
            continue;
        };
        assert_eq!(d.arity, args.len(), "{name}: arity");
        let mut grad = vec![f64::NAN; d.arity];
        let got = match (d.lpdf)(&args, Terms::FULL, &mut grad) {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!("{name}{args:?}: unexpected error {e}"));
                continue;
            }
        };
        // Values are sums of a few terms of size up to ~|value|·100; 1e-12 relative to the
        // largest of |value| and 1 leaves room for that cancellation.
        if !close(got, want, 1e-12, 1.0) {
            failures.push(format!("{name}{args:?} = {got}, want {want}"));
        }
        let scale = want_grad.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for i in 0..d.arity {
            if !close(grad[i], want_grad[i], 1e-9, scale * 1e-3) {
                failures.push(format!(
                    "{name}{args:?}: d/darg{i} = {:e}, want {:e}",
                    grad[i], want_grad[i]
                ));
            }
        }
    }
    assert!(rows.len() > 80);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn lcdf_and_lccdf_match_mpmath() {
    let mut failures = Vec::new();
    for row in load(include_str!("fixtures/dist_cdf.json")) {
        let name = row["name"].as_str().unwrap();
        let args = nums(&row["args"]);
        let d = distribution(name).unwrap_or_else(|| panic!("{name} missing"));
        for (which, f) in [("lcdf", d.lcdf), ("lccdf", d.lccdf)] {
            let Some(f) = f else {
                failures.push(format!("{name}: no {which}"));
                continue;
            };
            let want = row[which].as_f64().unwrap();
            let want_grad = nums(&row[format!("{which}_grad").as_str()]);
            let mut grad = vec![f64::NAN; d.arity];
            let got = match f(&args, &mut grad) {
                Ok(v) => v,
                Err(e) => {
                    failures.push(format!("{name}_{which}{args:?}: unexpected error {e}"));
                    continue;
                }
            };
            // Skew normal tails are Φ(z) ∓ 2T(z, α) differences with absolute error ~1e-17, so
            // a tail probability of 1e-11 keeps only ~5 digits (documented in dist::cdf).
            let (value_rel, grad_rel) = if name == "skew_normal" {
                (1e-5, 1e-5)
            } else {
                (1e-11, 1e-8)
            };
            if !close(got, want, value_rel, 1e-300) {
                failures.push(format!("{name}_{which}{args:?} = {got:e}, want {want:e}"));
            }
            let scale = want_grad.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            for i in 0..d.arity {
                if !close(grad[i], want_grad[i], grad_rel, scale * 1e-3) {
                    failures.push(format!(
                        "{name}_{which}{args:?}: d/darg{i} = {:e}, want {:e}",
                        grad[i], want_grad[i]
                    ));
                }
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
fn neg_binomial_precision_gradient_stays_accurate_for_huge_phi() {
    // ψ(n + φ) − ψ(φ) by subtraction loses every digit once φ ≫ n (φ + n rounds to φ); the
    // gradient in φ then came out as −n/φ instead of ≈ 0. Reference: mpmath at 50 digits,
    // d/dφ [log C(n+φ−1, n) + n log(μ/(μ+φ)) + φ log(φ/(μ+φ))] with n = 2, μ = 0.475, times φ
    // (the gradient in log φ): −3.3558157151845725e-10 at φ = e²⁰, −6.9e-19 at φ = e⁴⁰.
    let nb2 = distribution("neg_binomial_2").expect("neg_binomial_2");
    for (log_phi, want, tol) in [
        (20.0f64, -3.3558157151845725e-10, 1e-16),
        (40.0, -6.9e-19, 1e-15),
    ] {
        let phi = log_phi.exp();
        let mut grad = [0.0; 3];
        (nb2.lpdf)(&[2.0, 0.475, phi], Terms::FULL, &mut grad).expect("finite");
        let got = grad[2] * phi;
        assert!(
            (got - want).abs() < tol,
            "log φ = {log_phi}: {got} vs {want}"
        );
    }
    // The shifted digamma itself: exact finite sum, asymptotic branch, plain difference.
    use hazel_math::special::{digamma, digamma_shift};
    let direct = |x: f64, n: u32| (0..n).map(|k| 1.0 / (x + f64::from(k))).sum::<f64>();
    assert_eq!(digamma_shift(0.5, 3.0), direct(0.5, 3));
    let (x, n) = (1e12, 300.0);
    assert!((digamma_shift(x, n) - direct(x, 300)).abs() < 1e-24);
    let (x, n) = (7.5, 200.0);
    assert!((digamma_shift(x, n) - (digamma(x + n) - digamma(x))).abs() < 1e-14);
}
