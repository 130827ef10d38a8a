//! poisson_binomial against enumeration of every outcome of the Bernoulli trials: values of
//! the log mass / cdf / ccdf and their partials in θ, including θ_j ∈ {0, 1} where the
//! log-scale recursion meets log 0.

use hazel_math::dist::poisson_binomial::{
    poisson_binomial, poisson_binomial_workspace_len, PbTail,
};
use hazel_math::dist::Terms;

/// P(Y = k) for k = 0..=n by enumerating the 2ⁿ outcomes.
fn pmf(theta: &[f64]) -> Vec<f64> {
    let n = theta.len();
    let mut p = vec![0.0; n + 1];
    for mask in 0u32..(1 << n) {
        let mut pr = 1.0;
        for (j, t) in theta.iter().enumerate() {
            pr *= if mask & (1 << j) != 0 { *t } else { 1.0 - t };
        }
        p[mask.count_ones() as usize] += pr;
    }
    p
}

fn tail_prob(theta: &[f64], y: usize, tail: PbTail) -> f64 {
    let p = pmf(theta);
    match tail {
        PbTail::Mass => p[y],
        PbTail::Lower => p[..=y].iter().sum(),
        PbTail::Upper => p[y + 1..].iter().sum(),
    }
}

/// ∂P/∂θ_j is linear in θ_j: P(θ_j = 1) − P(θ_j = 0).
fn tail_prob_grad(theta: &[f64], y: usize, tail: PbTail, j: usize) -> f64 {
    let mut hi = theta.to_vec();
    hi[j] = 1.0;
    let mut lo = theta.to_vec();
    lo[j] = 0.0;
    tail_prob(&hi, y, tail) - tail_prob(&lo, y, tail)
}

#[test]
fn values_and_partials_match_enumeration() {
    let cases: [&[f64]; 4] = [
        &[0.2, 0.5, 0.7],
        &[0.0, 0.3, 1.0, 0.6],
        &[1.0, 1.0, 0.4],
        &[0.05, 0.9, 0.33, 0.71, 0.5],
    ];
    let mut checked = 0;
    for theta in cases {
        let n = theta.len();
        let mut ws = vec![0.0; poisson_binomial_workspace_len(n)];
        for y in 0..=n {
            for tail in [PbTail::Mass, PbTail::Lower, PbTail::Upper] {
                let p = tail_prob(theta, y, tail);
                if p == 0.0 {
                    continue;
                }
                let mut g = vec![0.0; n];
                let v = poisson_binomial(
                    tail,
                    &[y as i64],
                    theta,
                    n,
                    1,
                    Terms::FULL,
                    Some(&mut g),
                    &mut ws,
                )
                .expect("valid");
                assert!(
                    (v - p.ln()).abs() < 1e-13 * p.ln().abs().max(1.0),
                    "{theta:?} y={y} {tail:?}: {v} vs {}",
                    p.ln()
                );
                for (j, gj) in g.iter().enumerate() {
                    let want = tail_prob_grad(theta, y, tail, j) / p;
                    assert!(
                        (gj - want).abs() < 1e-11 * want.abs().max(1.0),
                        "{theta:?} y={y} {tail:?} d/dθ{j}: {gj} vs {want}"
                    );
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 40, "{checked}");
}

#[test]
fn invalid_arguments_are_errors() {
    let mut ws = vec![0.0; poisson_binomial_workspace_len(2)];
    let e = poisson_binomial(
        PbTail::Mass,
        &[3],
        &[0.5, 0.5],
        2,
        1,
        Terms::FULL,
        None,
        &mut ws,
    )
    .unwrap_err();
    assert!(
        e.message.contains("Successes variable is 3"),
        "{}",
        e.message
    );
    let e = poisson_binomial(
        PbTail::Lower,
        &[1],
        &[0.5, 1.5],
        2,
        1,
        Terms::FULL,
        None,
        &mut ws,
    )
    .unwrap_err();
    assert!(
        e.message
            .contains("poisson_binomial_lcdf: Probability parameters[2] is 1.5"),
        "{}",
        e.message
    );
}
