//! Pareto-smoothed importance sampling (Vehtari, Simpson, Gelman, Yao and Gabry 2024), as
//! Stan's Pathfinder and the loo package compute it: the largest `M` log ratios (the tail)
//! are replaced by the expected order statistics of a generalised Pareto distribution fitted to
//! their exceedances over the next largest (Zhang and Stephens 2009, with loo's grid of
//! `30 + ⌊√M⌋` points, prior scale 3, and the shape shrunk towards ½ with weight 10), then
//! truncated at the largest raw ratio. `k̂ > 0.7` warns that the weights are unreliable.

use hazel_rng::StreamRng;

/// Smoothed log weights (not normalised: the largest raw weight is 0) and the Pareto shape.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PsisWeights {
    pub log_weights: Vec<f64>,
    /// The fitted shape `k̂` (NaN when the tail was too short or too flat to fit).
    pub pareto_k: f64,
}

/// Stan's Pathfinder tail length for `n` draws: `min(0.2 n, 3 √n)`, truncated.
pub(crate) fn tail_length(n: usize) -> usize {
    let n = n as f64;
    (0.2 * n).min(3.0 * n.sqrt()) as usize
}

/// `log Σ exp(x)`.
pub fn log_sum_exp(x: &[f64]) -> f64 {
    let max = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() {
        return max;
    }
    max + x.iter().fold(0.0, |s, v| s + (v - max).exp()).ln()
}

/// Fits a generalised Pareto distribution (location 0) to the ascending sample `x`; returns
/// `(σ, k)` with `k` already shrunk towards ½ (loo's and Stan's `gpdfit`).
pub(crate) fn gpd_fit(x: &[f64]) -> (f64, f64) {
    const PRIOR: f64 = 3.0;
    const MIN_GRID: usize = 30;
    let n = x.len();
    let m = MIN_GRID + (n as f64).sqrt().floor() as usize;
    let first_quartile = x[((n as f64) / 4.0 + 0.5).floor() as usize - 1];
    let largest = x[n - 1];
    let theta: Vec<f64> = (1..=m)
        .map(|j| {
            1.0 / largest + (1.0 - (m as f64 / (j as f64 - 0.5)).sqrt()) / (PRIOR * first_quartile)
        })
        .collect();
    let profile: Vec<f64> = theta
        .iter()
        .map(|&t| {
            let k = x.iter().fold(0.0, |s, &xi| s + (-t * xi).ln_1p()) / n as f64;
            n as f64 * ((-t / k).ln() - k - 1.0)
        })
        .collect();
    let normaliser = log_sum_exp(&profile);
    let theta_hat = theta
        .iter()
        .zip(&profile)
        .fold(0.0, |s, (t, l)| s + t * (l - normaliser).exp());
    let k = x.iter().fold(0.0, |s, &xi| s + (-theta_hat * xi).ln_1p()) / n as f64;
    let sigma = -k / theta_hat;
    const A: f64 = 10.0;
    let shrunk = k * n as f64 / (n as f64 + A) + A * 0.5 / (n as f64 + A);
    (sigma, shrunk)
}

/// Quantile function of the generalised Pareto distribution (location 0).
fn gpd_quantile(p: f64, k: f64, sigma: f64) -> f64 {
    sigma * (-k * (-p).ln_1p()).exp_m1() / k
}

/// PSIS weights for `log_ratios` with a tail of `tail_len` draws (no smoothing below 5).
pub(crate) fn psis_log_weights(log_ratios: &[f64], tail_len: usize) -> PsisWeights {
    let n = log_ratios.len();
    let max = log_ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut lw: Vec<f64> = log_ratios.iter().map(|r| r - max).collect();
    let mut pareto_k = f64::NAN;
    if tail_len >= 5 && tail_len < n {
        // The tail and the cutoff below it, ascending; ties by position.
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| lw[a].total_cmp(&lw[b]).then(a.cmp(&b)));
        let top = &order[n - tail_len - 1..];
        let cutoff = lw[top[0]];
        let tail_idx = &top[1..];
        let tail: Vec<f64> = tail_idx.iter().map(|&i| lw[i]).collect();
        let spread = tail[tail.len() - 1] - tail[0];
        if spread > f64::MIN_POSITIVE * 10.0 && cutoff.is_finite() {
            let exp_cutoff = cutoff.exp();
            let exceedances: Vec<f64> = tail.iter().map(|t| t.exp() - exp_cutoff).collect();
            let (sigma, k) = gpd_fit(&exceedances);
            pareto_k = k;
            if k.is_finite() {
                let m = tail_len as f64;
                for (j, &i) in tail_idx.iter().enumerate() {
                    let p = (j as f64 + 1.0 - 0.5) / m;
                    lw[i] = (gpd_quantile(p, k, sigma) + exp_cutoff).ln();
                }
            }
        }
    }
    for w in lw.iter_mut() {
        if *w >= 0.0 {
            *w = 0.0;
        }
    }
    PsisWeights {
        log_weights: lw,
        pareto_k,
    }
}

/// `count` indices drawn with replacement with probabilities proportional to `exp(log_weights)`
/// (inversion of the cumulative sum, summed in index order).
pub fn resample(log_weights: &[f64], count: usize, rng: &mut StreamRng) -> Vec<usize> {
    let max = log_weights
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    let mut cumulative = Vec::with_capacity(log_weights.len());
    let mut total = 0.0;
    for w in log_weights {
        let v = (w - max).exp();
        total += if v.is_nan() { 0.0 } else { v };
        cumulative.push(total);
    }
    (0..count)
        .map(|_| {
            let u = rng.uniform() * total;
            cumulative
                .partition_point(|&c| c <= u)
                .min(log_weights.len() - 1)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hazel_rng::Purpose;

    #[test]
    fn tail_length_is_stans() {
        assert_eq!(tail_length(100), 20);
        assert_eq!(tail_length(400), 60);
        assert_eq!(tail_length(1000), 94);
    }

    /// Exceedances from a generalised Pareto with k = 0.3: the fit recovers the shape.
    #[test]
    fn gpd_fit_recovers_the_shape() {
        let mut rng = StreamRng::new(3, 0, Purpose::Sampler);
        let (k, sigma) = (0.3, 2.0);
        let mut x: Vec<f64> = (0..4000)
            .map(|_| gpd_quantile(rng.uniform_open(), k, sigma))
            .collect();
        x.sort_by(f64::total_cmp);
        let (s, khat) = gpd_fit(&x);
        assert!((khat - k).abs() < 0.06, "{khat}");
        assert!((s / sigma - 1.0).abs() < 0.1, "{s}");
    }

    #[test]
    fn resampling_frequencies_follow_the_weights() {
        let lw = [0.0f64.ln(), 1.0f64.ln(), 3.0f64.ln()];
        let mut rng = StreamRng::new(5, 1, Purpose::Resample);
        let picks = resample(&lw, 40_000, &mut rng);
        let share = picks.iter().filter(|&&i| i == 2).count() as f64 / 40_000.0;
        assert!(picks.iter().all(|&i| i != 0));
        assert!(
            (share - 0.75).abs() < 5.0 * (0.75f64 * 0.25 / 40_000.0).sqrt(),
            "{share}"
        );
    }
}
