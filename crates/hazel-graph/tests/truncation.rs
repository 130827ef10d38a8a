//! Truncated densities (`~ dist(...) T[L, U]`): the lowering stays on the static path, and
//! the normaliser computed once for a loop of scalar-parameter statements equals the
//! per-statement form written out by hand with `normal_lpdf` and `normal_lcdf`.

mod common;

use common::{compiled, eval};
use hazel_density::LogDensity;

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(1.0)
}

fn example_data() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/truncated_normal/data.json"
    );
    std::fs::read_to_string(path).expect("examples/truncated_normal/data.json")
}

/// The bundled example: `y[n] ~ normal(mu, sigma) T[1, 2]` in a loop.
const TRUNCATED: &str = include_str!("../../../examples/truncated_normal/model.stan");

/// The same density with each truncation written out: `~` drops constants, so the hand
/// form uses `normal_lupdf` for the density and the full lcdfs for the normaliser.
const BY_HAND: &str = include_str!("fixtures/truncated_normal_by_hand.stan");

const POINTS: &[[f64; 2]] = &[
    [0.0, 0.0],
    [1.4, -1.2],
    [-0.7, 0.5],
    [2.5, 0.9],
    [1.2, -2.5],
];

#[test]
fn truncated_normal_example_is_static_and_matches_the_hand_written_normaliser() {
    let data = example_data();
    let m = compiled(TRUNCATED, &data);
    assert!(
        !m.is_dynamic(),
        "truncation must not force the dynamic path"
    );
    let hand = compiled(BY_HAND, &data);
    for q in POINTS {
        let (lp, g) = eval(&m, q);
        let (lp_hand, g_hand) = eval(&hand, q);
        assert!(rel(lp, lp_hand) < 1e-10, "q={q:?}: {lp} vs {lp_hand}");
        for k in 0..2 {
            assert!(
                rel(g[k], g_hand[k]) < 1e-10,
                "q={q:?} grad[{k}]: {} vs {}",
                g[k],
                g_hand[k]
            );
        }
    }
}

/// Bounds that differ per statement, a bound that is a parameter, and a location that differs
/// per statement cannot share one normaliser; each still matches its hand-written form.
#[test]
fn truncations_that_cannot_share_a_normaliser_match_the_hand_written_form() {
    let data = r#"{"N": 4, "y": [1.1, 1.5, 1.9, 1.3], "lo": [1.0, 0.5, 1.2, 0.0], "x": [0.1, -0.3, 0.4, 0.0]}"#;
    let header = "data { int N; array[N] real y; array[N] real lo; array[N] real x; }
parameters { real mu; real<lower=0> sigma; real<upper=1> b; }
model { mu ~ normal(1.5, 1); sigma ~ normal(0, 1); b ~ normal(0, 1);\n";
    let cases = [
        (
            "for (n in 1:N) y[n] ~ normal(mu, sigma) T[lo[n], 2];",
            "for (n in 1:N) target += normal_lupdf(y[n] | mu, sigma) - log_diff_exp(normal_lcdf(2 | mu, sigma), normal_lcdf(lo[n] | mu, sigma));",
        ),
        (
            "for (n in 1:N) y[n] ~ normal(mu, sigma) T[b, 2];",
            "for (n in 1:N) target += normal_lupdf(y[n] | mu, sigma) - log_diff_exp(normal_lcdf(2 | mu, sigma), normal_lcdf(b | mu, sigma));",
        ),
        (
            "for (n in 1:N) y[n] ~ normal(mu + x[n], sigma) T[1, 2];",
            "for (n in 1:N) target += normal_lupdf(y[n] | mu + x[n], sigma) - log_diff_exp(normal_lcdf(2 | mu + x[n], sigma), normal_lcdf(1 | mu + x[n], sigma));",
        ),
        (
            "for (n in 1:N) y[n] ~ normal(mu, sigma) T[1, ];",
            "for (n in 1:N) target += normal_lupdf(y[n] | mu, sigma) - normal_lccdf(1 | mu, sigma);",
        ),
        (
            "for (n in 1:N) y[n] ~ normal(mu, sigma) T[, 2];",
            "for (n in 1:N) target += normal_lupdf(y[n] | mu, sigma) - normal_lcdf(2 | mu, sigma);",
        ),
    ];
    for (tilde, hand) in cases {
        let m = compiled(&format!("{header}{tilde} }}"), data);
        let h = compiled(&format!("{header}{hand} }}"), data);
        // A parameter bound is compared with the data variate at every evaluation.
        assert_eq!(m.is_dynamic(), tilde.contains("T[b"), "{tilde}");
        for q in [[0.3, -0.4, 0.2], [1.6, 0.7, -1.0], [-0.5, 0.1, 0.5]] {
            let (lp, g) = eval(&m, &q);
            let (lp_h, g_h) = eval(&h, &q);
            assert!(rel(lp, lp_h) < 1e-10, "{tilde} q={q:?}: {lp} vs {lp_h}");
            for k in 0..3 {
                assert!(
                    rel(g[k], g_h[k]) < 1e-10,
                    "{tilde} q={q:?} grad[{k}]: {} vs {}",
                    g[k],
                    g_h[k]
                );
            }
        }
    }
}

/// Both bounds far in the upper tail of the distribution: `normal_lcdf` at each bound is within
/// 1e-23 of 0, and the normaliser `log_diff_exp(lcdf(U), lcdf(L))` must still be the log of
/// the (tiny) interval probability, not −∞. With `Φ(−20) ≪ Φ(−10)` it equals `lccdf(L)` to
/// rounding.
#[test]
fn a_normaliser_in_the_far_tail_is_finite_and_accurate() {
    let data = r#"{"N": 3, "y": [1.05, 1.2, 1.01]}"#;
    let header = "data { int N; array[N] real y; } parameters { real mu; real<lower=0> sigma; }\n";
    let m = compiled(
        &format!("{header}model {{ for (n in 1:N) y[n] ~ normal(mu, sigma) T[1, 2]; }}"),
        data,
    );
    let tail = compiled(
        &format!(
            "{header}model {{ for (n in 1:N) target += normal_lupdf(y[n] | mu, sigma) - normal_lccdf(1 | mu, sigma); }}"
        ),
        data,
    );
    for q in [[0.0, (0.1f64).ln()], [-0.5, (0.12f64).ln()]] {
        let (lp, g) = eval(&m, &q);
        let (lp_t, g_t) = eval(&tail, &q);
        assert!(rel(lp, lp_t) < 1e-12, "q={q:?}: {lp} vs {lp_t}");
        for k in 0..2 {
            assert!(
                rel(g[k], g_t[k]) < 1e-9,
                "q={q:?} grad[{k}]: {} vs {}",
                g[k],
                g_t[k]
            );
        }
    }
}

/// A variate outside its bounds makes the density zero (log density −∞: an evaluation error).
#[test]
fn a_variate_outside_the_truncation_bounds_has_zero_density() {
    let src = "data { int N; array[N] real y; } parameters { real mu; }
model { for (n in 1:N) y[n] ~ normal(mu, 1) T[1, 2]; }";
    let m = compiled(src, r#"{"N": 3, "y": [1.5, 2.5, 1.2]}"#);
    let mut ws = m.new_workspace();
    let mut g = [0.0];
    assert!(m.log_density_gradient(&mut ws, &[0.3], &mut g).is_err());
}

/// Vectorised truncation (`y ~ D(θ) T[L, U]` with vector `y`) is Stan's per-variate
/// truncation: the same density as the loop of scalar statements (stanli 0.24 gives
/// −1.3507439206368512 for both forms at the first point below), for scalar and vector
/// parameters and bounds, with one or both bounds.
#[test]
fn vectorised_truncation_equals_the_loop_of_scalar_statements() {
    let data = r#"{"N": 3, "y": [1, 2, 3], "L": [0, 0.5, 1]}"#;
    let cases = [
        ("vector[N] mu;", "mu", "mu[n]", "0", "0", "10", "10"),
        ("real mu;", "mu", "mu", "L", "L[n]", "10", "10"),
        ("vector[N] mu;", "mu", "mu[n]", "L", "L[n]", "", ""),
        ("vector[N] mu;", "mu", "mu[n]", "", "", "L + 4", "L[n] + 4"),
        ("real mu;", "mu", "mu", "0", "0", "10", "10"),
    ];
    for (decl, mu_v, mu_s, lo_v, lo_s, hi_v, hi_s) in cases {
        let params = format!("parameters {{ {decl} real<lower=0> s; }}");
        let head = format!("data {{ int N; vector[N] y; vector[N] L; }} {params}");
        let vectorised = format!("{head} model {{ y ~ normal({mu_v}, s) T[{lo_v}, {hi_v}]; }}");
        let looped = format!(
            "{head} model {{ for (n in 1:N) y[n] ~ normal({mu_s}, s) T[{lo_s}, {hi_s}]; }}"
        );
        let v = compiled(&vectorised, data);
        let l = compiled(&looped, data);
        assert!(!v.is_dynamic(), "{vectorised}");
        let dim = v.dim();
        for k in 0..3 {
            let q: Vec<f64> = (0..dim).map(|i| 0.3 - 0.4 * ((i + k) % 3) as f64).collect();
            let (lv, gv) = eval(&v, &q);
            let (ll, gl) = eval(&l, &q);
            assert!(rel(lv, ll) < 1e-12, "{vectorised}: {lv} vs {ll}");
            for (a, b) in gv.iter().zip(&gl) {
                assert!(rel(*a, *b) < 1e-11, "{vectorised}: {gv:?} vs {gl:?}");
            }
        }
    }
    let first = compiled(
        "data { int N; vector[N] y; vector[N] L; } parameters { vector[N] mu; real<lower=0> s; }
         model { y ~ normal(mu, s) T[0, 10]; }",
        data,
    );
    let (lp, _) = eval(&first, &[0.3, -0.5, 2.0, 0.2]);
    assert!(rel(lp, -1.3507439206368512) < 1e-12, "{lp}");
}
