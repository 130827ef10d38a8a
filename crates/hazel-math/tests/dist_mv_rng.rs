//! Moments of 20,000 draws of the ordinal and multivariate rngs (`hazel_math::dist::mv_rng`)
//! and of the new table rngs (beta_neg_binomial, skew_double_exponential), against their
//! closed forms, with tolerances of about 5 standard errors.

use hazel_math::dist::mv_rng::*;
use hazel_math::dist::{distribution, Terms};
use hazel_math::linalg::{multi_student_t_lpdf, multiply_lower_tri_self_transpose};
use hazel_math::special::{inv_logit, Phi};
use hazel_rng::{Purpose, StreamRng};

const N: usize = 20_000;

thread_local! {
    /// The `_rng`s the tests on this thread check, for `the_rng_list_is_what_these_tests_draw`.
    static DRAWN: std::cell::RefCell<std::collections::BTreeSet<&'static str>> =
        const { std::cell::RefCell::new(std::collections::BTreeSet::new()) };
}

/// Records the Stan names of the rngs a test checks (next to the calls that check them).
fn checks(names: &[&'static str]) {
    DRAWN.with(|d| d.borrow_mut().extend(names));
}

fn rng(seed: u64) -> StreamRng {
    StreamRng::new(seed, 0, Purpose::GeneratedQuantities)
}

/// |mean − expected| within 5 standard errors of one draw's standard deviation `sd`.
fn close(what: &str, mean: f64, expected: f64, sd: f64) {
    let se = sd / (N as f64).sqrt();
    assert!(
        (mean - expected).abs() <= 5.0 * se + 1e-12,
        "{what}: mean {mean} vs {expected} (se {se})"
    );
}

#[test]
fn ordinal_rngs_hit_each_category_with_its_probability() {
    checks(&["ordered_probit_rng", "ordered_logistic_rng"]);
    let c = [-1.0, 0.3, 1.8];
    let eta = 0.4;
    for probit in [false, true] {
        let mut r = rng(11);
        let mut counts = [0usize; 4];
        for _ in 0..N {
            let y = if probit {
                ordered_probit_rng(eta, &c, &mut r)
            } else {
                ordered_logistic_rng(eta, &c, &mut r)
            }
            .unwrap();
            counts[(y - 1) as usize] += 1;
        }
        let cdf = |j: usize| match j {
            0 => 1.0,
            4 => 0.0,
            _ if probit => Phi(eta - c[j - 1]),
            _ => inv_logit(eta - c[j - 1]),
        };
        for (k, &count) in counts.iter().enumerate() {
            let p = cdf(k) - cdf(k + 1);
            close(
                "category frequency",
                count as f64 / N as f64,
                p,
                (p * (1.0 - p)).sqrt(),
            );
        }
    }
    assert!(ordered_logistic_rng(0.0, &[1.0, 0.5], &mut rng(1)).is_err());
}

#[test]
fn count_vector_rngs() {
    checks(&[
        "multinomial_rng",
        "multinomial_logit_rng",
        "dirichlet_multinomial_rng",
    ]);
    let theta = [0.1, 0.2, 0.3, 0.4];
    let alpha = [0.5, 1.5, 2.0, 4.0];
    let a0: f64 = alpha.iter().sum();
    let beta = [0.3, -1.0, 0.8, 0.0];
    let mut soft = [0.0; 4];
    hazel_math::linalg::softmax(&beta, &mut soft);
    let n = 12;
    for which in 0..3 {
        let mut r = rng(21 + which);
        let mut sums = [0.0; 4];
        let mut ws = [0.0; 4];
        let mut out = [0i64; 4];
        for _ in 0..N {
            match which {
                0 => multinomial_rng(&theta, n, &mut out, &mut r),
                1 => multinomial_logit_rng(&beta, n, &mut out, &mut ws, &mut r),
                _ => dirichlet_multinomial_rng(&alpha, n, &mut out, &mut ws, &mut r),
            }
            .unwrap();
            assert_eq!(out.iter().sum::<i64>(), n);
            assert!(out.iter().all(|&v| v >= 0));
            for k in 0..4 {
                sums[k] += out[k] as f64;
            }
        }
        for k in 0..4 {
            let nf = n as f64;
            let (mean, var) = match which {
                0 => (nf * theta[k], nf * theta[k] * (1.0 - theta[k])),
                1 => (nf * soft[k], nf * soft[k] * (1.0 - soft[k])),
                _ => {
                    let p = alpha[k] / a0;
                    (nf * p, nf * p * (1.0 - p) * (nf + a0) / (1.0 + a0))
                }
            };
            close("count mean", sums[k] / N as f64, mean, var.sqrt());
        }
    }
    let mut out = [7i64; 4];
    dirichlet_multinomial_rng(&alpha, 0, &mut out, &mut [0.0; 4], &mut rng(3)).unwrap();
    assert_eq!(out, [0; 4]);
    assert!(multinomial_rng(&[0.5, 0.6], 3, &mut out, &mut rng(3)).is_err());
}

#[test]
fn multi_student_t_rngs_have_the_right_mean_and_covariance() {
    checks(&["multi_student_t_rng", "multi_student_t_cholesky_rng"]);
    let sigma = [2.0, 0.3, -0.4, 0.3, 1.5, 0.2, -0.4, 0.2, 1.2];
    let mu = [0.5, -1.0, 2.0];
    let nu = 7.0;
    let mut l = [0.0; 9];
    hazel_math::linalg::cholesky_decompose(&sigma, 3, &mut l).unwrap();
    for chol in [false, true] {
        let mut r = rng(31);
        let mut sum = [0.0; 3];
        let mut cross = [0.0; 9];
        let mut out = [0.0; 3];
        let mut ws = [0.0; 9];
        for _ in 0..N {
            if chol {
                multi_student_t_cholesky_rng(nu, &mu, &l, &mut out, &mut r).unwrap();
            } else {
                multi_student_t_rng(nu, &mu, &sigma, &mut out, &mut ws, &mut r).unwrap();
            }
            for i in 0..3 {
                sum[i] += out[i];
                for j in 0..3 {
                    cross[i + 3 * j] += (out[i] - mu[i]) * (out[j] - mu[j]);
                }
            }
        }
        let scale = nu / (nu - 2.0);
        for i in 0..3 {
            close(
                "mean",
                sum[i] / N as f64,
                mu[i],
                (scale * sigma[4 * i]).sqrt(),
            );
            // Covariance entries: a loose 4% band (heavy tails make the sd of a product large).
            let cov = cross[i + 3 * i] / N as f64;
            assert!(
                (cov / (scale * sigma[4 * i]) - 1.0).abs() < 0.06,
                "variance {cov}"
            );
        }
    }
    // The draws follow the density: the mean log density of draws is minus the entropy
    // ½ log|Σ| + d/2 log(νπ) + lgamma(ν/2) − lgamma((ν+d)/2) + (ν+d)/2 (ψ((ν+d)/2) − ψ(ν/2)).
    let mut r = rng(32);
    let mut out = [0.0; 3];
    let mut ws = vec![0.0; 64];
    let mut lp = 0.0;
    for _ in 0..2000 {
        multi_student_t_rng(nu, &mu, &sigma, &mut out, &mut ws[..9], &mut r).unwrap();
        lp += multi_student_t_lpdf(
            &out,
            nu,
            &mu,
            &sigma,
            3,
            1,
            Terms::FULL,
            None,
            None,
            None,
            None,
            &mut ws,
        )
        .unwrap();
    }
    use hazel_math::special::{digamma, lgamma};
    let (d, det) = (3.0, 3.124f64);
    let entropy = 0.5 * det.ln() + 0.5 * d * (nu * std::f64::consts::PI).ln() + lgamma(0.5 * nu)
        - lgamma(0.5 * (nu + d))
        + 0.5 * (nu + d) * (digamma(0.5 * (nu + d)) - digamma(0.5 * nu));
    // The log density of a draw has sd ≈ 1.3 here: 5 standard errors of 2000 draws ≈ 0.15.
    assert!(
        (lp / 2000.0 + entropy).abs() < 0.15,
        "mean log density {} vs {}",
        lp / 2000.0,
        -entropy
    );
}

#[test]
fn lkj_rngs_give_correlation_matrices_with_the_right_spread() {
    checks(&["lkj_corr_rng", "lkj_corr_cholesky_rng"]);
    let (k, eta) = (4usize, 2.5);
    let mut r = rng(41);
    let mut out = vec![0.0; k * k];
    let mut ws = vec![0.0; k * k + k];
    let mut sum = 0.0;
    let mut sq = 0.0;
    for _ in 0..N {
        lkj_corr_rng(k, eta, &mut out, &mut ws, &mut r).unwrap();
        for i in 0..k {
            assert!((out[i + i * k] - 1.0).abs() < 1e-12);
        }
        // Every off-diagonal entry has the same marginal: Beta(η − 1 + K/2, same) on (−1, 1).
        let v = out[2];
        sum += v;
        sq += v * v;
    }
    let var = 1.0 / (2.0 * eta + k as f64 - 1.0);
    close("mean correlation", sum / N as f64, 0.0, var.sqrt());
    let m2 = sq / N as f64;
    assert!((m2 / var - 1.0).abs() < 0.05, "variance {m2} vs {var}");
    let mut l = vec![0.0; k * k];
    lkj_corr_cholesky_rng(k, eta, &mut l, &mut ws, &mut r).unwrap();
    multiply_lower_tri_self_transpose(&l.clone(), k, k, &mut out);
    for i in 0..k {
        assert!((out[i + i * k] - 1.0).abs() < 1e-12 && l[i + i * k] > 0.0);
        for j in (i + 1)..k {
            assert_eq!(l[i + j * k], 0.0);
        }
    }
}

#[test]
fn wishart_rngs_have_the_right_mean() {
    checks(&[
        "wishart_rng",
        "wishart_cholesky_rng",
        "inv_wishart_rng",
        "inv_wishart_cholesky_rng",
    ]);
    let s = [2.0, 0.3, -0.4, 0.3, 1.5, 0.2, -0.4, 0.2, 1.2];
    let mut ls = [0.0; 9];
    hazel_math::linalg::cholesky_decompose(&s, 3, &mut ls).unwrap();
    let nu = 8.0;
    for which in 0..4 {
        let mut r = rng(51 + which);
        let mut sum = [0.0; 9];
        let mut out = [0.0; 9];
        let mut w = [0.0; 9];
        let mut ws = vec![0.0; 63];
        for _ in 0..N {
            match which {
                0 => wishart_rng(nu, &s, 3, &mut w, &mut ws, &mut r),
                1 => wishart_cholesky_rng(nu, &ls, 3, &mut out, &mut ws, &mut r),
                2 => inv_wishart_rng(nu, &s, 3, &mut w, &mut ws, &mut r),
                _ => inv_wishart_cholesky_rng(nu, &ls, 3, &mut out, &mut ws, &mut r),
            }
            .unwrap();
            if which % 2 == 1 {
                multiply_lower_tri_self_transpose(&out, 3, 3, &mut w);
            }
            for i in 0..9 {
                sum[i] += w[i];
            }
        }
        for i in 0..3 {
            for j in 0..3 {
                let sij = s[i + 3 * j];
                let (mean, var) = if which < 2 {
                    (nu * sij, nu * (sij * sij + s[i + 3 * i] * s[j + 3 * j]))
                } else {
                    // Inverse Wishart: E = S/(ν−k−1); variance from the closed form.
                    let d = nu - 4.0;
                    let var = ((nu - 2.0) * sij * sij + d * s[i + 3 * i] * s[j + 3 * j])
                        / ((nu - 3.0) * d * d * (nu - 5.0));
                    (sij / d, var)
                };
                close("Wishart mean", sum[i + 3 * j] / N as f64, mean, var.sqrt());
            }
        }
    }
}

#[test]
fn table_rngs_of_the_new_univariate_families() {
    checks(&["beta_neg_binomial_rng", "skew_double_exponential_rng"]);
    let bnb = distribution("beta_neg_binomial").unwrap().rng.unwrap();
    let (r_, a, b) = (3.0, 6.0, 2.0);
    let mut r = rng(61);
    let draws: Vec<f64> = (0..N).map(|_| bnb(&[r_, a, b], &mut r).unwrap()).collect();
    let mean = r_ * b / (a - 1.0);
    let var = r_ * b * (r_ + a - 1.0) * (b + a - 1.0) / ((a - 2.0) * (a - 1.0) * (a - 1.0));
    close(
        "beta_neg_binomial mean",
        draws.iter().sum::<f64>() / N as f64,
        mean,
        var.sqrt(),
    );
    assert!(draws.iter().all(|d| *d >= 0.0 && d.fract() == 0.0));
    let sde = distribution("skew_double_exponential")
        .unwrap()
        .rng
        .unwrap();
    let (mu, sigma, tau) = (1.0, 2.0, 0.3);
    let draws: Vec<f64> = (0..N)
        .map(|_| sde(&[mu, sigma, tau], &mut r).unwrap())
        .collect();
    // P(y < μ) = τ; E[y] = μ + σ(1 − 2τ)/(2τ(1 − τ)).
    let below = draws.iter().filter(|&&y| y < mu).count() as f64 / N as f64;
    close("P(y < mu)", below, tau, (tau * (1.0 - tau)).sqrt());
    let mean = mu + sigma * (1.0 - 2.0 * tau) / (2.0 * tau * (1.0 - tau));
    let sd = sigma
        * ((1.0 - 2.0 * tau + 2.0 * tau * tau) / (4.0 * tau * tau * (1.0 - tau) * (1.0 - tau)))
            .sqrt();
    close(
        "skew_double_exponential mean",
        draws.iter().sum::<f64>() / N as f64,
        mean,
        sd,
    );
}

#[test]
fn the_rng_list_is_what_these_tests_draw() {
    // `tests/fixtures/mv_rng_tested.txt` lists every `_rng` the tests above check
    // (hazel-graph's `registry_coverage` reads it). Runs them again and compares;
    // `HAZEL_BLESS=1` rewrites the list.
    ordinal_rngs_hit_each_category_with_its_probability();
    count_vector_rngs();
    multi_student_t_rngs_have_the_right_mean_and_covariance();
    lkj_rngs_give_correlation_matrices_with_the_right_spread();
    wishart_rngs_have_the_right_mean();
    table_rngs_of_the_new_univariate_families();
    let mut text = String::from(
        "# The `_rng`s that dist_mv_rng's moment tests check.\n\
         # Generated by `HAZEL_BLESS=1 cargo test -p hazel-math --test dist_mv_rng`.\n",
    );
    for n in DRAWN.with(|d| d.borrow().clone()) {
        text.push_str(n);
        text.push('\n');
    }
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/mv_rng_tested.txt"
    );
    if std::env::var_os("HAZEL_BLESS").is_some() {
        std::fs::write(path, &text).expect("write the list");
        return;
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert_eq!(
        committed, text,
        "tests/fixtures/mv_rng_tested.txt is not what the tests check (HAZEL_BLESS=1 rewrites it)"
    );
}
