//! The Poisson-binomial distribution: the number of successes among independent Bernoulli
//! trials with probabilities θ₁ … θ_N. Log mass, log cdf and log ccdf with their partials in
//! θ, and the rng.
//!
//! The log probabilities come from Stan Math's recursion on the log scale,
//! `a_j(k) = log_sum_exp(a_{j−1}(k) + log(1 − θ_j), a_{j−1}(k − 1) + log θ_j)`, kept as a
//! table so that the partials are its reverse sweep, run in probability space on the log
//! scale (see [`poisson_binomial`]) so that they stay finite at θ_j ∈ {0, 1}.

use super::{MathError, Terms};
use hazel_rng::StreamRng;

/// What is evaluated at each outcome `y`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PbTail {
    /// log P(Y = y)
    Mass,
    /// log P(Y ≤ y)
    Lower,
    /// log P(Y > y)
    Upper,
}

impl PbTail {
    fn function(self) -> &'static str {
        match self {
            PbTail::Mass => "poisson_binomial_lpmf",
            PbTail::Lower => "poisson_binomial_lcdf",
            PbTail::Upper => "poisson_binomial_lccdf",
        }
    }
}

/// Workspace [`poisson_binomial`] needs for `n` probabilities.
pub fn poisson_binomial_workspace_len(n: usize) -> usize {
    (n + 1) * (n + 1) + 2 * (n + 1)
}

fn lse2(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return b;
    }
    if b == f64::NEG_INFINITY {
        return a;
    }
    let m = a.max(b);
    m + ((a - m).exp() + (b - m).exp()).ln()
}

fn check_theta(function: &str, theta: &[f64]) -> Result<(), MathError> {
    if let Some(i) = theta.iter().position(|t| !(0.0..=1.0).contains(t)) {
        return Err(MathError::new(format!(
            "{function}: Probability parameters[{}] is {}, but must be in the interval [0, 1]",
            i + 1,
            theta[i]
        )));
    }
    Ok(())
}

/// The table `a_j(k)`, row `j` (0..=N) at `table[j (N+1) + k]`; entries with `k > j` are −∞.
fn log_prob_table(theta: &[f64], table: &mut [f64]) {
    let n = theta.len();
    let w = n + 1;
    table[..w * w].fill(f64::NEG_INFINITY);
    table[0] = 0.0;
    for j in 1..=n {
        let (l1, l0) = (theta[j - 1].ln(), (-theta[j - 1]).ln_1p());
        for k in 0..=j {
            let stay = table[(j - 1) * w + k] + l0;
            let up = if k > 0 {
                table[(j - 1) * w + k - 1] + l1
            } else {
                f64::NEG_INFINITY
            };
            table[j * w + k] = lse2(stay, up);
        }
    }
}

/// Σ over outcomes `ys` of the log mass / log cdf / log ccdf at `theta`. `ys` pairs with the
/// probability vectors: `theta` holds `n_theta` vectors of length `n` one after another, and
/// outcome `i` uses vector `i` (or the only one). Partials added to `theta_adj`. Stan Math's
/// `poisson_binomial_lpmf` drops nothing under `propto` (it has no `include_summand`), so
/// `y ~ poisson_binomial(theta)` with data theta adds its constant value, and `_terms` is
/// ignored.
#[allow(clippy::too_many_arguments)]
pub fn poisson_binomial(
    tail: PbTail,
    ys: &[i64],
    theta: &[f64],
    n: usize,
    n_theta: usize,
    _terms: Terms,
    mut theta_adj: Option<&mut [f64]>,
    ws: &mut [f64],
) -> Result<f64, MathError> {
    let function = tail.function();
    if n_theta != 1 && n_theta != ys.len() {
        return Err(MathError::new(format!(
            "{function}: Size of successes variable ({}) and number of probability vectors ({n_theta}) must match in size",
            ys.len()
        )));
    }
    for v in 0..n_theta {
        check_theta(function, &theta[v * n..(v + 1) * n])?;
    }
    for &y in ys {
        if y < 0 || y as usize > n {
            return Err(MathError::new(format!(
                "{function}: Successes variable is {y}, but must be in the interval [0, {n}]"
            )));
        }
    }
    let w = n + 1;
    let (table, rest) = ws.split_at_mut(w * w);
    let (adj, weights) = rest.split_at_mut(w);
    let weights = &mut weights[..w];
    let mut total = 0.0;
    let mut current = usize::MAX;
    for (i, &y) in ys.iter().enumerate() {
        let v = if n_theta == 1 { 0 } else { i };
        let th = &theta[v * n..(v + 1) * n];
        if v != current {
            log_prob_table(th, table);
            current = v;
        }
        let last = &table[n * w..n * w + w];
        let y = y as usize;
        // The outcomes summed and the value.
        let range = match tail {
            PbTail::Mass => y..y + 1,
            PbTail::Lower => 0..y + 1,
            PbTail::Upper => y + 1..w,
        };
        let value = range
            .clone()
            .fold(f64::NEG_INFINITY, |acc, k| lse2(acc, last[k]));
        total += value;
        let Some(ta) = theta_adj.as_deref_mut() else {
            continue;
        };
        if value == f64::NEG_INFINITY {
            continue;
        }
        // Reverse sweep in probability space, kept on the log scale: with p_j(k) = e^{a_j(k)}
        // and h_j(k) = ∂value/∂p_j(k) ≥ 0, h_N(k) = e^{−value} on the summed outcomes,
        // h_{j−1}(k) = h_j(k)(1 − θ_j) + h_j(k + 1) θ_j and
        // ∂value/∂θ_j = Σ_k h_j(k) (p_{j−1}(k − 1) − p_{j−1}(k)), finite also where
        // p_j(k) = 0 (θ ∈ {0, 1}). `weights` holds log h_j, `adj` log h_{j−1}.
        weights.fill(f64::NEG_INFINITY);
        for k in range {
            weights[k] = -value;
        }
        let ta = &mut ta[v * n..(v + 1) * n];
        for j in (1..=n).rev() {
            let l0 = (-th[j - 1]).ln_1p();
            let l1 = th[j - 1].ln();
            let prev = &table[(j - 1) * w..j * w];
            let mut d = 0.0;
            for k in 0..=j {
                let lh = weights[k];
                if lh == f64::NEG_INFINITY {
                    continue;
                }
                let up = if k > 0 { (lh + prev[k - 1]).exp() } else { 0.0 };
                let stay = if k < j { (lh + prev[k]).exp() } else { 0.0 };
                d += up - stay;
            }
            ta[j - 1] += d;
            for k in 0..j {
                adj[k] = lse2(weights[k] + l0, weights[k + 1] + l1);
            }
            for x in adj[j..].iter_mut() {
                *x = f64::NEG_INFINITY;
            }
            weights.copy_from_slice(adj);
        }
    }
    Ok(total)
}

/// poisson_binomial_rng(theta): the number of successes of Bernoulli(θ_j) draws.
pub fn poisson_binomial_rng(theta: &[f64], rng: &mut StreamRng) -> Result<f64, MathError> {
    check_theta("poisson_binomial_rng", theta)?;
    let mut k = 0.0;
    for &t in theta {
        if rng.uniform() < t {
            k += 1.0;
        }
    }
    Ok(k)
}
