//! Stan's `propto` term dropping (`include_summand`): what is kept for each varying-argument
//! mask, and that the kept gradient is the gradient of what is returned.

use hazel_math::dist::{distribution, distribution_table, Kind, Terms};
use serde_json::Value;

fn fixture_points() -> Vec<(String, Vec<f64>)> {
    let rows: Value = serde_json::from_str(include_str!("fixtures/dist_lpdf.json")).unwrap();
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let args = r["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect();
            (r["name"].as_str().unwrap().to_string(), args)
        })
        .collect()
}

fn lpdf(name: &str, args: &[f64], terms: Terms) -> (f64, Vec<f64>) {
    let d = distribution(name).unwrap();
    let mut grad = vec![0.0; d.arity];
    let v = (d.lpdf)(args, terms, &mut grad).unwrap();
    (v, grad)
}

/// The real-valued (differentiable) arguments of a distribution as a bit mask.
fn real_args(name: &str) -> u32 {
    let d = distribution(name).unwrap();
    let all = (1u32 << d.arity) - 1;
    all & !d.integer_args
}

/// For every distribution, fixture point and varying mask: with nothing varying the result is
/// 0; the dropped part (full minus propto) does not depend on any varying argument; and the
/// partials with respect to varying arguments are those of the full density.
#[test]
fn dropped_terms_are_constant_in_varying_arguments() {
    let mut failures = Vec::new();
    for (name, args) in fixture_points() {
        let d = distribution(&name).unwrap();
        let (full, full_grad) = lpdf(&name, &args, Terms::FULL);
        for mask in 0u32..(1 << d.arity) {
            let (kept, grad) = lpdf(&name, &args, Terms::propto(mask));
            if mask & real_args(&name) == 0 && mask == 0 {
                if kept != 0.0 || grad.iter().any(|g| *g != 0.0) {
                    failures.push(format!("{name}{args:?}: nothing varies but got {kept}"));
                }
                continue;
            }
            let dropped = full - kept;
            for i in 0..d.arity {
                if mask & (1 << i) == 0 || real_args(&name) & (1 << i) == 0 {
                    continue;
                }
                if (grad[i] - full_grad[i]).abs() > 1e-12 * full_grad[i].abs().max(1.0) {
                    failures.push(format!(
                        "{name}{args:?} mask {mask:b}: partial {i} {} vs full {}",
                        grad[i], full_grad[i]
                    ));
                }
                // Move the varying argument a little inside its support: the dropped part must
                // not move.
                let mut moved = args.clone();
                moved[i] *= 1.0 + 1e-3;
                if name == "uniform" || name == "pareto" {
                    // keep the variate inside the support
                    moved[i] = args[i] * (1.0 - 1e-4);
                }
                let (full_m, _) = lpdf(&name, &moved, Terms::FULL);
                let (kept_m, _) = lpdf(&name, &moved, Terms::propto(mask));
                let dropped_m = full_m - kept_m;
                if (dropped_m - dropped).abs() > 1e-9 * dropped.abs().max(1.0) {
                    failures.push(format!(
                        "{name}{args:?} mask {mask:b}: dropped part moves with argument {i}: {dropped} -> {dropped_m}"
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

/// Stan's exact choices for a few families (Stan Math's `_lpdf` sources): terms that depend only
/// on data are dropped even when they are not constants of nature.
#[test]
fn stan_term_choices() {
    use std::f64::consts::PI;
    let (y, mu, sigma) = (0.3, -1.0, 2.0);
    let z = (y - mu) / sigma;
    // normal, only mu varies: -z²/2 (no -log σ, no -log √(2π)).
    let (v, _) = lpdf("normal", &[y, mu, sigma], Terms::propto(0b010));
    assert!((v - (-0.5 * z * z)).abs() < 1e-15);
    // normal, sigma varies: -log σ - z²/2.
    let (v, _) = lpdf("normal", &[y, mu, sigma], Terms::propto(0b100));
    assert!((v - (-sigma.ln() - 0.5 * z * z)).abs() < 1e-15);
    // normal, full.
    let (v, _) = lpdf("normal", &[y, mu, sigma], Terms::FULL);
    assert!((v - (-0.5 * (2.0 * PI).ln() - sigma.ln() - 0.5 * z * z)).abs() < 1e-15);
    // poisson with lambda varying drops -lgamma(n+1).
    let (v, _) = lpdf("poisson", &[3.0, 2.5], Terms::propto(0b10));
    assert!((v - (3.0 * 2.5f64.ln() - 2.5)).abs() < 1e-14);
    // beta: a varies, b data: Stan keeps -lgamma(a) + lgamma(a + b) but drops -lgamma(b).
    let (v, _) = lpdf("beta", &[0.3, 2.0, 3.0], Terms::propto(0b010));
    let lgamma = hazel_math::special::lgamma;
    let want = -lgamma(2.0) + lgamma(5.0) + 1.0 * 0.3f64.ln();
    assert!((v - want).abs() < 1e-14, "{v} vs {want}");
    // lognormal keeps -log √(2π) under propto (a Stan Math quirk): mu varying only.
    let (v, _) = lpdf("lognormal", &[2.0, 0.5, 1.5], Terms::propto(0b010));
    let zl = (2.0f64.ln() - 0.5) / 1.5;
    let want = -0.5 * (2.0 * PI).ln() - 0.5 * zl * zl;
    assert!((v - want).abs() < 1e-15, "{v} vs {want}");
    // student_t, only mu varies: -(ν+1)/2 log1p(z²/ν).
    let (nu, z) = (3.0, (0.3f64 + 1.0) / 2.0);
    let (v, _) = lpdf("student_t", &[0.3, nu, -1.0, 2.0], Terms::propto(0b0100));
    assert!((v - (-(nu + 1.0) / 2.0 * (z * z / nu).ln_1p())).abs() < 1e-15);
    // neg_binomial_2 with mu varying keeps multiply_log(n, mu) and the always-kept summand.
    let (n, m, p) = (3.0f64, 2.5f64, 0.7f64);
    let (v, _) = lpdf("neg_binomial_2", &[n, m, p], Terms::propto(0b010));
    let want = n * m.ln() - p * (m / p).ln_1p() - n * (m + p).ln();
    assert!((v - want).abs() < 1e-14);
}

/// More of Stan Math's choices, one family at a time (each from the family's `_lpdf` source).
#[test]
fn stan_term_choices_more_families() {
    let lgamma = hazel_math::special::lgamma;
    let close = |a: f64, b: f64| (a - b).abs() < 1e-13 * b.abs().max(1.0);
    // gamma with only alpha varying: -lgamma(α) + α log β + (α-1) log y; -βy dropped.
    let (y, a, b) = (0.7f64, 2.5f64, 3.0f64);
    let (v, _) = lpdf("gamma", &[y, a, b], Terms::propto(0b010));
    assert!(
        close(v, -lgamma(a) + a * b.ln() + (a - 1.0) * y.ln()),
        "gamma {v}"
    );
    // gamma with only y varying: (α-1) log y - βy.
    let (v, _) = lpdf("gamma", &[y, a, b], Terms::propto(0b001));
    assert!(close(v, (a - 1.0) * y.ln() - b * y), "gamma y {v}");
    // inv_gamma with only beta varying: α log β - β/y.
    let (v, _) = lpdf("inv_gamma", &[y, a, b], Terms::propto(0b100));
    assert!(close(v, a * b.ln() - b / y), "inv_gamma {v}");
    // exponential with beta varying: log β - βy.
    let (v, _) = lpdf("exponential", &[y, b], Terms::propto(0b10));
    assert!(close(v, b.ln() - b * y), "exponential {v}");
    // cauchy with only mu varying: -log1p(z²) (no -log π, no -log σ).
    let z = (y - 0.2) / 1.5;
    let (v, _) = lpdf("cauchy", &[y, 0.2, 1.5], Terms::propto(0b010));
    assert!(close(v, -(z * z).ln_1p()), "cauchy {v}");
    // binomial with theta varying: no log binomial coefficient.
    let (v, _) = lpdf("binomial", &[3.0, 10.0, 0.4], Terms::propto(0b100));
    assert!(
        close(v, 3.0 * 0.4f64.ln() + 7.0 * 0.6f64.ln()),
        "binomial {v}"
    );
    // weibull with only sigma varying: -α log σ - (y/σ)^α.
    let (v, _) = lpdf("weibull", &[y, a, b], Terms::propto(0b100));
    assert!(close(v, -a * b.ln() - (y / b).powf(a)), "weibull {v}");
    // chi_square with only y varying: (ν/2 - 1) log y - y/2.
    let (v, _) = lpdf("chi_square", &[y, a], Terms::propto(0b01));
    assert!(
        close(v, (a / 2.0 - 1.0) * y.ln() - y / 2.0),
        "chi_square {v}"
    );
    // double_exponential with mu varying: -|y-μ|/σ only.
    let (v, _) = lpdf("double_exponential", &[y, 0.2, 1.5], Terms::propto(0b010));
    assert!(
        close(v, -(y - 0.2f64).abs() / 1.5),
        "double_exponential {v}"
    );
    // neg_binomial_2_log with eta varying: nη - φ log1p_exp(η - log φ) - n(log φ + log1p_exp(…)).
    let (n, eta, phi) = (4.0f64, 1.1f64, 2.5f64);
    let (v, _) = lpdf("neg_binomial_2_log", &[n, eta, phi], Terms::propto(0b010));
    let l = hazel_math::special::log1p_exp(eta - phi.ln());
    assert!(
        close(v, n * eta - phi * l - n * (phi.ln() + l)),
        "neg_binomial_2_log {v}"
    );
    // beta_binomial with alpha varying: lbeta(n+α, N-n+β) - lbeta(α, β); no lchoose.
    let lbeta = hazel_math::special::lbeta;
    let (v, _) = lpdf(
        "beta_binomial",
        &[3.0, 10.0, 2.0, 3.0],
        Terms::propto(0b0100),
    );
    assert!(
        close(v, lbeta(5.0, 10.0) - lbeta(2.0, 3.0)),
        "beta_binomial {v}"
    );
}

/// The gradient written is the gradient of the value returned, for every mask: central finite
/// differences of the returned value in each real argument.
#[test]
fn gradients_match_finite_differences_for_every_mask() {
    let mut failures = Vec::new();
    for (name, args) in fixture_points() {
        let d = distribution(&name).unwrap();
        for mask in [u32::MAX, 0b1, 0b10, 0b100, 0b1010, 0b110] {
            let terms = if mask == u32::MAX {
                Terms::FULL
            } else {
                Terms::propto(mask)
            };
            let (_, grad) = lpdf(&name, &args, terms);
            for i in 0..d.arity {
                if real_args(&name) & (1 << i) == 0 {
                    assert_eq!(grad[i], 0.0, "{name}: integer argument {i} has a partial");
                    continue;
                }
                if terms.propto && mask & (1 << i) == 0 {
                    continue; // partials of data arguments are not used
                }
                let h = 1e-6 * args[i].abs().max(1e-2);
                let mut up = args.clone();
                let mut down = args.clone();
                up[i] += h;
                down[i] -= h;
                let (vu, _) = lpdf(&name, &up, terms);
                let (vd, _) = lpdf(&name, &down, terms);
                let fd = (vu - vd) / (2.0 * h);
                if (fd - grad[i]).abs() > 1e-5 * grad[i].abs().max(1.0) {
                    failures.push(format!(
                        "{name}{args:?} mask {mask:b}: d/darg{i} = {:e}, fd {fd:e}",
                        grad[i]
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
fn every_table_entry_has_a_fixture() {
    let points = fixture_points();
    for d in distribution_table() {
        assert!(
            points.iter().any(|(n, _)| n == d.name),
            "{} has no reference fixture",
            d.name
        );
        if d.kind == Kind::Discrete {
            assert!(
                d.integer_args & 1 == 1,
                "{}: discrete variate must be integer",
                d.name
            );
        }
    }
}
