//! Random number generators: the empirical cdf of 20 000 draws at three quantiles against the
//! family's own lcdf (checked against mpmath in `dist_reference`), or against known moments
//! where hazel has no cdf; bounds are 5 Monte Carlo standard errors (binomial SE for
//! probabilities, the sample's own SE for moments). Seeds are fixed, so results are
//! deterministic.

use hazel_math::dist::distribution;
use hazel_rng::{Purpose, StreamRng};
use std::cell::RefCell;
use std::collections::BTreeSet;

thread_local! {
    /// The families `draws` has drawn from on this test's thread, for
    /// `the_rng_list_is_what_these_tests_draw`.
    static DRAWN: RefCell<BTreeSet<String>> = const { RefCell::new(BTreeSet::new()) };
}

const DRAWS: usize = 20_000;
const Z: f64 = 5.0;

fn draws(name: &str, params: &[f64], seed: u64) -> Vec<f64> {
    DRAWN.with(|d| d.borrow_mut().insert(format!("{name}_rng")));
    let d = distribution(name).unwrap();
    let rng_fn = d.rng.unwrap_or_else(|| panic!("{name} has no rng"));
    let mut rng = StreamRng::new(seed, 0, Purpose::GeneratedQuantities);
    (0..DRAWS)
        .map(|_| rng_fn(params, &mut rng).unwrap())
        .collect()
}

/// P(X ≤ q) from the lcdf of `cdf_name` at `[q] ++ cdf_params`.
fn cdf(cdf_name: &str, q: f64, cdf_params: &[f64]) -> f64 {
    let d = distribution(cdf_name).unwrap();
    let mut args = vec![q];
    args.extend_from_slice(cdf_params);
    let mut grad = vec![0.0; d.arity];
    (d.lcdf.unwrap())(&args, &mut grad).unwrap().exp()
}

fn check_cdf(
    name: &str,
    params: &[f64],
    cdf_name: &str,
    cdf_params: &[f64],
    qs: &[f64],
) -> Vec<String> {
    let xs = draws(name, params, 17);
    let mut failures = Vec::new();
    for &q in qs {
        let p = cdf(cdf_name, q, cdf_params);
        let frac = xs.iter().filter(|&&x| x <= q).count() as f64 / DRAWS as f64;
        let se = (p * (1.0 - p) / DRAWS as f64)
            .sqrt()
            .max(1.0 / DRAWS as f64);
        if (frac - p).abs() > Z * se {
            failures.push(format!(
                "{name}{params:?}: P(X ≤ {q}) empirical {frac}, cdf {p}"
            ));
        }
    }
    failures
}

fn mean_and_se(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt())
}

/// Mean and variance against known values (variance through E[(X - mean)²] with its own SE).
fn check_moments(name: &str, params: &[f64], mean: f64, variance: f64) -> Vec<String> {
    let xs = draws(name, params, 29);
    let mut failures = Vec::new();
    let (m, se) = mean_and_se(&xs);
    if (m - mean).abs() > Z * se {
        failures.push(format!("{name}{params:?}: mean {m} ± {se}, want {mean}"));
    }
    let sq: Vec<f64> = xs.iter().map(|x| (x - mean).powi(2)).collect();
    let (v, vse) = mean_and_se(&sq);
    if (v - variance).abs() > Z * vse {
        failures.push(format!(
            "{name}{params:?}: variance {v} ± {vse}, want {variance}"
        ));
    }
    failures
}

#[test]
fn continuous_rngs_match_their_cdfs() {
    let cases: &[(&str, &[f64], &[f64])] = &[
        ("normal", &[1.0, 2.0], &[-1.0, 1.0, 4.0]),
        ("cauchy", &[1.0, 2.0], &[-3.0, 1.0, 10.0]),
        ("student_t", &[3.5, 1.0, 2.0], &[-2.0, 1.0, 5.0]),
        ("student_t", &[0.7, 0.0, 1.0], &[-2.0, 0.5, 5.0]),
        ("lognormal", &[0.5, 0.8], &[0.7, 1.6, 5.0]),
        ("exponential", &[2.0], &[0.1, 0.35, 1.5]),
        ("gamma", &[0.3, 2.0], &[0.001, 0.05, 0.3]),
        ("gamma", &[7.5, 0.5], &[10.0, 15.0, 25.0]),
        ("inv_gamma", &[3.0, 2.0], &[0.5, 1.0, 2.0]),
        ("beta", &[0.5, 0.7], &[0.05, 0.4, 0.9]),
        ("beta", &[20.0, 5.0], &[0.7, 0.8, 0.9]),
        ("uniform", &[-1.0, 3.0], &[-0.5, 1.0, 2.9]),
        ("double_exponential", &[1.0, 2.0], &[-2.0, 1.0, 3.0]),
        ("logistic", &[1.0, 2.0], &[-2.0, 1.0, 3.0]),
        ("weibull", &[1.5, 2.0], &[0.5, 1.5, 4.0]),
        ("frechet", &[2.5, 1.0], &[0.7, 1.0, 3.0]),
        ("gumbel", &[1.0, 2.0], &[-1.0, 1.0, 5.0]),
        ("rayleigh", &[1.5], &[0.5, 1.5, 3.0]),
        ("pareto", &[0.5, 3.0], &[0.55, 0.8, 2.0]),
        ("pareto_type_2", &[1.0, 2.0, 3.0], &[1.2, 2.0, 5.0]),
        ("chi_square", &[3.0], &[0.5, 2.5, 7.0]),
        ("inv_chi_square", &[4.0], &[0.1, 0.3, 1.0]),
        ("scaled_inv_chi_square", &[5.0, 1.5], &[1.0, 2.0, 5.0]),
    ];
    let mut failures = Vec::new();
    for (name, params, qs) in cases {
        failures.extend(check_cdf(name, params, name, params, qs));
    }
    // Families without a cdf here, through an equivalent family's cdf.
    failures.extend(check_cdf(
        "beta_proportion",
        &[0.3, 10.0],
        "beta",
        &[3.0, 7.0],
        &[0.1, 0.3, 0.5],
    ));
    failures.extend(check_cdf(
        "std_normal",
        &[],
        "normal",
        &[0.0, 1.0],
        &[-1.5, 0.0, 2.0],
    ));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn discrete_rngs_match_their_cdfs() {
    let cases: &[(&str, &[f64], &[f64])] = &[
        ("poisson", &[3.5], &[1.0, 3.0, 6.0]),
        ("poisson", &[250.0], &[230.0, 250.0, 270.0]),
        ("binomial", &[20.0, 0.3], &[3.0, 6.0, 9.0]),
        ("binomial", &[2000.0, 0.7], &[1380.0, 1400.0, 1420.0]),
        ("binomial", &[2000.0, 0.002], &[1.0, 4.0, 7.0]),
        ("bernoulli", &[0.3], &[0.0]),
        ("neg_binomial", &[3.0, 0.5], &[2.0, 5.0, 10.0]),
        ("neg_binomial_2", &[10.0, 2.5], &[4.0, 9.0, 20.0]),
    ];
    let mut failures = Vec::new();
    for (name, params, qs) in cases {
        failures.extend(check_cdf(name, params, name, params, qs));
    }
    failures.extend(check_cdf(
        "poisson_log",
        &[2.0],
        "poisson",
        &[2f64.exp()],
        &[4.0, 7.0, 10.0],
    ));
    let p = hazel_math::special::inv_logit(-0.4);
    failures.extend(check_cdf(
        "binomial_logit",
        &[30.0, -0.4],
        "binomial",
        &[30.0, p],
        &[8.0, 12.0, 16.0],
    ));
    failures.extend(check_cdf(
        "bernoulli_logit",
        &[0.8],
        "bernoulli",
        &[hazel_math::special::inv_logit(0.8)],
        &[0.0],
    ));
    failures.extend(check_cdf(
        "neg_binomial_2_log",
        &[1.5, 4.0],
        "neg_binomial_2",
        &[1.5f64.exp(), 4.0],
        &[2.0, 4.0, 8.0],
    ));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn rngs_without_cdfs_match_known_moments() {
    let mut failures = Vec::new();
    // skew_normal: δ = α/√(1+α²), mean ξ + ωδ√(2/π), variance ω²(1 - 2δ²/π)
    let (xi, omega, alpha) = (1.0, 2.0, 3.0);
    let delta = alpha / (1.0f64 + alpha * alpha).sqrt();
    let pi = std::f64::consts::PI;
    failures.extend(check_moments(
        "skew_normal",
        &[xi, omega, alpha],
        xi + omega * delta * (2.0 / pi).sqrt(),
        omega * omega * (1.0 - 2.0 * delta * delta / pi),
    ));
    // exp_mod_normal: mean μ + 1/λ, variance σ² + 1/λ²
    failures.extend(check_moments(
        "exp_mod_normal",
        &[1.0, 0.5, 2.0],
        1.5,
        0.25 + 0.25,
    ));
    // beta_binomial: mean Nα/(α+β), variance Nαβ(α+β+N)/((α+β)²(α+β+1))
    let (n, a, b) = (12.0, 2.0, 3.0);
    failures.extend(check_moments(
        "beta_binomial",
        &[n, a, b],
        n * a / (a + b),
        n * a * b * (a + b + n) / ((a + b) * (a + b) * (a + b + 1.0)),
    ));
    // von_mises: E[cos(y - μ)] = I₁(κ)/I₀(κ), E[sin(y - μ)] = 0
    let (mu, kappa) = (0.5, 2.0);
    let xs = draws("von_mises", &[mu, kappa], 3);
    let cosines: Vec<f64> = xs.iter().map(|y| (y - mu).cos()).collect();
    let sines: Vec<f64> = xs.iter().map(|y| (y - mu).sin()).collect();
    let lb = hazel_math::special::log_modified_bessel_first_kind;
    let ratio = (lb(1.0, kappa) - lb(0.0, kappa)).exp();
    let (c, cse) = mean_and_se(&cosines);
    let (s, sse) = mean_and_se(&sines);
    assert!(
        (c - ratio).abs() < Z * cse,
        "von_mises E cos {c} ± {cse}, want {ratio}"
    );
    assert!(s.abs() < Z * sse, "von_mises E sin {s} ± {sse}");
    assert!(
        xs.iter().all(|y| (y - mu).abs() <= pi + 1e-12),
        "von_mises draws outside [μ-π, μ+π]"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_rng_draw_lies_in_the_support() {
    let params: &[(&str, &[f64])] = &[
        ("gamma", &[0.01, 1.0]),
        ("beta", &[0.01, 0.02]),
        ("binomial", &[5.0, 1.0]),
        ("binomial", &[5.0, 0.0]),
        ("poisson", &[0.0]),
        ("pareto", &[2.0, 0.5]),
        ("uniform", &[2.0, 2.5]),
    ];
    for (name, p) in params {
        let d = distribution(name).unwrap();
        let xs = draws(name, p, 5);
        for x in xs.iter().take(2000) {
            let mut args = vec![*x];
            args.extend_from_slice(p);
            let mut grad = vec![0.0; d.arity];
            let lp = (d.lpdf)(&args, hazel_math::dist::Terms::FULL, &mut grad);
            // Tiny beta shapes put draws at exactly 0 or 1, where the density is +∞: still in
            // the support.
            assert!(
                matches!(lp, Ok(v) if v > f64::NEG_INFINITY),
                "{name}{p:?}: draw {x} has log density {lp:?}"
            );
        }
    }
}

#[test]
fn rng_parameter_errors() {
    let mut rng = StreamRng::new(1, 0, Purpose::GeneratedQuantities);
    let normal = distribution("normal").unwrap().rng.unwrap();
    let e = normal(&[0.0, -1.0], &mut rng).unwrap_err();
    assert_eq!(
        e.message,
        "normal_rng: Scale parameter is -1, but must be positive finite!"
    );
    let poisson = distribution("poisson").unwrap().rng.unwrap();
    assert!(poisson(&[2e9], &mut rng).is_err());
    assert!(
        poisson(&[], &mut rng).is_err(),
        "short parameter slice must be an error"
    );
}

#[test]
fn integer_only_families_draw_from_their_mass_functions() {
    let mut failures = check_cdf(
        "discrete_range",
        &[-2.0, 7.0],
        "discrete_range",
        &[-2.0, 7.0],
        &[-2.0, 1.0, 6.0],
    );
    // hypergeometric(N = 10 draws, a = 8, b = 12): mean N a/(a+b), variance N a b (a+b-N)/((a+b)²(a+b-1))
    let (n, a, b) = (10.0, 8.0, 12.0);
    let t = a + b;
    failures.extend(check_moments(
        "hypergeometric",
        &[n, a, b],
        n * a / t,
        n * a * b * (t - n) / (t * t * (t - 1.0)),
    ));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_rng_list_is_what_these_tests_draw() {
    // `tests/fixtures/rng_tested.txt` lists every `_rng` whose draws the tests above compare
    // with a cdf or moments (hazel-graph's `registry_coverage` reads it). Runs those tests
    // again and compares what they drew with the list; `HAZEL_BLESS=1` rewrites it.
    continuous_rngs_match_their_cdfs();
    discrete_rngs_match_their_cdfs();
    rngs_without_cdfs_match_known_moments();
    integer_only_families_draw_from_their_mass_functions();
    let drawn = DRAWN.with(|d| d.borrow().clone());
    let mut text = String::from(
        "# The `_rng`s that dist_rng's cdf and moment tests draw from.\n\
         # Generated by `HAZEL_BLESS=1 cargo test -p hazel-math --test dist_rng`.\n",
    );
    for n in &drawn {
        text.push_str(n);
        text.push('\n');
    }
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/rng_tested.txt");
    if std::env::var_os("HAZEL_BLESS").is_some() {
        std::fs::write(path, &text).expect("write the list");
        return;
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert_eq!(
        committed, text,
        "tests/fixtures/rng_tested.txt is not what the tests draw (HAZEL_BLESS=1 rewrites it)"
    );
}
