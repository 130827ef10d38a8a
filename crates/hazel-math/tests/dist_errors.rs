//! Argument checks phrased like Stan Math's, out-of-support values, and edge cases (infinite
//! bounds, zero counts, large arguments) of densities and cdfs.

use hazel_math::dist::{distribution, distribution_table, format_stan_number, Terms};

fn lpdf(name: &str, args: &[f64]) -> Result<f64, String> {
    let d = distribution(name).unwrap();
    let mut grad = vec![0.0; d.arity];
    (d.lpdf)(args, Terms::FULL, &mut grad).map_err(|e| e.message)
}

fn lcdf(name: &str, args: &[f64], upper: bool) -> (f64, Vec<f64>) {
    let d = distribution(name).unwrap();
    let mut grad = vec![f64::NAN; d.arity];
    let f = if upper {
        d.lccdf.unwrap()
    } else {
        d.lcdf.unwrap()
    };
    let v = f(args, &mut grad).unwrap();
    (v, grad)
}

#[test]
fn messages_match_stan() {
    assert_eq!(
        lpdf("normal", &[0.0, 0.0, -1.0]).unwrap_err(),
        "normal_lpdf: Scale parameter is -1, but must be positive!"
    );
    assert_eq!(
        lpdf("normal", &[f64::NAN, 0.0, 1.0]).unwrap_err(),
        "normal_lpdf: Random variable is nan, but must not be nan!"
    );
    assert_eq!(
        lpdf("normal", &[0.0, f64::INFINITY, 1.0]).unwrap_err(),
        "normal_lpdf: Location parameter is inf, but must be finite!"
    );
    assert_eq!(
        lpdf("cauchy", &[0.0, 0.0, 0.0]).unwrap_err(),
        "cauchy_lpdf: Scale parameter is 0, but must be positive finite!"
    );
    assert_eq!(
        lpdf("beta", &[1.5, 2.0, 2.0]).unwrap_err(),
        "beta_lpdf: Random variable is 1.5, but must be in the interval [0, 1]"
    );
    assert_eq!(
        lpdf("poisson", &[-1.0, 2.0]).unwrap_err(),
        "poisson_lpmf: Random variable is -1, but must be nonnegative!"
    );
    assert_eq!(
        lpdf("binomial", &[11.0, 10.0, 0.5]).unwrap_err(),
        "binomial_lpmf: Successes variable is 11, but must be in the interval [0, 10]"
    );
    assert_eq!(
        lpdf("uniform", &[0.0, 1.0, 1.0]).unwrap_err(),
        "uniform_lpdf: Upper bound parameter is 1, but must be greater than 1"
    );
    assert_eq!(
        lpdf("student_t", &[0.0, 0.0, 0.0, 1.0]).unwrap_err(),
        "student_t_lpdf: Degrees of freedom parameter is 0, but must be positive finite!"
    );
    assert_eq!(
        lpdf("bernoulli", &[2.0, 0.5]).unwrap_err(),
        "bernoulli_lpmf: n is 2, but must be in the interval [0, 1]"
    );
}

#[test]
fn numbers_print_like_iostreams() {
    for (x, s) in [
        (-1.0, "-1"),
        (0.5, "0.5"),
        (1e20, "1e+20"),
        (1.5e-7, "1.5e-07"),
        (123456.0, "123456"),
        (1234567.0, "1.23457e+06"),
        (0.1 + 0.2, "0.3"),
        (f64::INFINITY, "inf"),
        (f64::NEG_INFINITY, "-inf"),
        (f64::NAN, "nan"),
    ] {
        assert_eq!(format_stan_number(x), s);
    }
}

#[test]
fn out_of_support_values_give_negative_infinity_like_stan() {
    // Continuous families whose Stan implementation returns LOG_ZERO outside the support.
    assert_eq!(lpdf("uniform", &[3.0, 0.0, 1.0]), Ok(f64::NEG_INFINITY));
    assert_eq!(lpdf("inv_gamma", &[-1.0, 2.0, 1.0]), Ok(f64::NEG_INFINITY));
    assert_eq!(lpdf("weibull", &[-1.0, 2.0, 1.0]), Ok(f64::NEG_INFINITY));
    assert_eq!(lpdf("pareto", &[0.5, 1.0, 2.0]), Ok(f64::NEG_INFINITY));
    assert_eq!(lpdf("lognormal", &[0.0, 0.0, 1.0]), Ok(f64::NEG_INFINITY));
    assert_eq!(
        lpdf("beta_binomial", &[6.0, 5.0, 1.0, 1.0]),
        Ok(f64::NEG_INFINITY)
    );
    // Zero rates and zero counts.
    assert_eq!(lpdf("poisson", &[0.0, 0.0]), Ok(0.0));
    assert_eq!(lpdf("poisson", &[2.0, 0.0]), Ok(f64::NEG_INFINITY));
    assert_eq!(
        lpdf("poisson", &[2.0, f64::INFINITY]),
        Ok(f64::NEG_INFINITY)
    );
    assert_eq!(lpdf("poisson_log", &[0.0, f64::NEG_INFINITY]), Ok(0.0));
    assert_eq!(lpdf("binomial", &[0.0, 0.0, 0.3]), Ok(0.0));
    assert_eq!(lpdf("binomial", &[0.0, 5.0, 0.0]), Ok(0.0));
    assert_eq!(lpdf("binomial", &[5.0, 5.0, 1.0]), Ok(0.0));
    assert_eq!(lpdf("binomial", &[1.0, 5.0, 0.0]), Ok(f64::NEG_INFINITY));
    assert_eq!(lpdf("bernoulli", &[1.0, 0.0]), Ok(f64::NEG_INFINITY));
    // Errors where Stan errors: gamma's variate must be positive finite.
    assert!(lpdf("gamma", &[0.0, 2.0, 1.0]).is_err());
    assert!(lpdf("exponential", &[-1.0, 1.0]).is_err());
}

#[test]
fn no_function_panics_on_short_or_bad_arguments() {
    let junk = [f64::NAN, f64::INFINITY, -1.0, 0.0, 0.5, 1e308, -1e308, 2.0];
    for d in distribution_table() {
        let mut grad = vec![0.0; d.arity];
        // short slices are errors
        assert!((d.lpdf)(&[], Terms::FULL, &mut grad).is_err(), "{}", d.name);
        assert!(
            (d.lpdf)(&vec![1.0; d.arity], Terms::FULL, &mut []).is_err(),
            "{}",
            d.name
        );
        // every combination of junk values returns without panicking
        let mut args = vec![0.0; d.arity];
        let combos = junk.len().pow(d.arity as u32);
        for c in 0..combos {
            let mut k = c;
            for a in args.iter_mut() {
                *a = junk[k % junk.len()];
                k /= junk.len();
            }
            let _ = (d.lpdf)(&args, Terms::FULL, &mut grad);
            let _ = (d.lpdf)(&args, Terms::propto(0b10), &mut grad);
            if let Some(f) = d.lcdf {
                let _ = f(&args, &mut grad);
            }
            if let Some(f) = d.lccdf {
                let _ = f(&args, &mut grad);
            }
        }
    }
}

#[test]
fn cdfs_at_infinite_and_boundary_variates() {
    let (v, g) = lcdf("normal", &[f64::INFINITY, 0.0, 1.0], false);
    assert_eq!(v, 0.0);
    assert_eq!(g, vec![0.0; 3]);
    let (v, _) = lcdf("normal", &[f64::NEG_INFINITY, 0.0, 1.0], false);
    assert_eq!(v, f64::NEG_INFINITY);
    let (v, g) = lcdf("normal", &[f64::NEG_INFINITY, 0.0, 1.0], true);
    assert_eq!(v, 0.0);
    assert_eq!(g, vec![0.0; 3]);
    let (v, _) = lcdf("student_t", &[f64::INFINITY, 3.0, 0.0, 1.0], true);
    assert_eq!(v, f64::NEG_INFINITY);
    let (v, _) = lcdf("exponential", &[0.0, 2.0], false);
    assert_eq!(v, f64::NEG_INFINITY);
    let (v, _) = lcdf("exponential", &[0.0, 2.0], true);
    assert_eq!(v, 0.0);
    let (v, _) = lcdf("gamma", &[f64::INFINITY, 2.0, 1.0], false);
    assert_eq!(v, 0.0);
    let (v, _) = lcdf("uniform", &[5.0, 0.0, 1.0], false);
    assert_eq!(v, 0.0);
    let (v, _) = lcdf("poisson", &[-1.0, 3.0], false);
    assert_eq!(v, f64::NEG_INFINITY);
    let (v, _) = lcdf("binomial", &[10.0, 10.0, 0.3], false);
    assert_eq!(v, 0.0);
    let (v, _) = lcdf("beta", &[1.0, 2.0, 3.0], false);
    assert_eq!(v, 0.0);
}

#[test]
fn far_tails_stay_finite_and_accurate() {
    // log Φ(-40) = -804.608442013754…: Stan's normal_lcdf would return -inf here.
    let (v, g) = lcdf("normal", &[-40.0, 0.0, 1.0], false);
    assert!((v - -804.608_442_013_754_3).abs() < 1e-10, "{v}");
    // d/dy log Φ(y) → -y for y → -∞
    assert!((g[0] - 40.02498).abs() < 1e-4, "{}", g[0]);
    // Poisson upper tail far beyond the mean.
    let (v, _) = lcdf("poisson", &[100.0, 3.0], true);
    assert!(v.is_finite() && v < -250.0, "{v}");
    // Gamma lower tail at tiny y.
    let (v, _) = lcdf("gamma", &[1e-200, 2.0, 1.0], false);
    assert!(
        (v - (2.0 * (1e-200f64).ln() - 2f64.ln())).abs() < 1e-10,
        "{v}"
    );
}

#[test]
fn large_arguments() {
    // normal with huge scale and far variate
    let v = lpdf("normal", &[1e300, 0.0, 1e300]).unwrap();
    assert!((v - (-0.5 * (2.0 * std::f64::consts::PI).ln() - 1e300f64.ln() - 0.5)).abs() < 1e-12);
    // neg_binomial_2 with very large phi approaches Poisson
    let nb = lpdf("neg_binomial_2", &[7.0, 5.0, 1e12]).unwrap();
    let po = lpdf("poisson", &[7.0, 5.0]).unwrap();
    assert!((nb - po).abs() < 1e-9, "{nb} vs {po}");
    // poisson with a large count
    let v = lpdf("poisson", &[1e6, 1e6]).unwrap();
    // Stirling: ≈ -½ log(2π·1e6)
    assert!(
        (v - (-0.5 * (2.0 * std::f64::consts::PI * 1e6).ln())).abs() < 1e-6,
        "{v}"
    );
}

#[test]
fn no_rng_panics_or_hangs_on_bad_parameters() {
    use hazel_rng::{Purpose, StreamRng};
    let junk = [f64::NAN, f64::INFINITY, -1.0, 0.0, 0.5, 2.0, 1e6];
    let mut rng = StreamRng::new(11, 0, Purpose::GeneratedQuantities);
    for d in distribution_table() {
        let Some(rng_fn) = d.rng else { continue };
        let k = d.arity - 1;
        let mut params = vec![0.0; k];
        for c in 0..junk.len().pow(k as u32) {
            let mut i = c;
            for p in params.iter_mut() {
                *p = junk[i % junk.len()];
                i /= junk.len();
            }
            if let Ok(x) = rng_fn(&params, &mut rng) {
                assert!(!x.is_nan(), "{}{params:?} drew NaN", d.name);
            }
        }
    }
}
