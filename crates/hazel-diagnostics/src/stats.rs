//! Elementary statistics with numpy's conventions: means, variances with a `ddof`, type-7
//! (linear interpolation) quantiles, average ranks and the standard normal quantile function.

/// Arithmetic mean (NaN for an empty slice).
pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.iter().sum::<f64>() / values.len() as f64
}

/// Variance with `ddof` delta degrees of freedom (numpy's `np.var(x, ddof=…)`), computed
/// around the mean in two passes.
pub fn variance(values: &[f64], ddof: usize) -> f64 {
    if values.len() <= ddof {
        return f64::NAN;
    }
    let m = mean(values);
    let sum_sq: f64 = values.iter().map(|v| (v - m) * (v - m)).sum();
    sum_sq / (values.len() - ddof) as f64
}

/// Quantile `p ∈ [0, 1]` of already sorted values by linear interpolation between order
/// statistics (R's type 7, numpy's default `method="linear"`, ArviZ's `mquantiles(alphap=1,
/// betap=1)`).
pub(crate) fn quantile_sorted(sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    if n == 0 || !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    let h = (n - 1) as f64 * p;
    let lo = h.floor();
    let lo_index = lo as usize;
    if lo_index + 1 >= n {
        return sorted[n - 1];
    }
    let frac = h - lo;
    let (below, above) = (sorted[lo_index], sorted[lo_index + 1]);
    // numpy's `_lerp`: interpolate from the nearer end, so that the rounding (which decides
    // ties in `draw <= quantile` comparisons) is numpy's.
    let step = above - below;
    if frac >= 0.5 {
        above - step * (1.0 - frac)
    } else {
        below + step * frac
    }
}

/// Sorted copy of `values`, NaN last (total order).
pub fn sorted(values: &[f64]) -> Vec<f64> {
    let mut copy = values.to_vec();
    copy.sort_by(f64::total_cmp);
    copy
}

/// Quantile `p` of unsorted values (see [`quantile_sorted`]).
pub fn quantile(values: &[f64], p: f64) -> f64 {
    quantile_sorted(&sorted(values), p)
}

/// Median (numpy's `np.median`: the mean `(a + b) / 2` of the middle pair for an even count,
/// which rounds differently from interpolation; the folded R-hat's ties depend on it).
pub fn median(values: &[f64]) -> f64 {
    let ordered = sorted(values);
    let n = ordered.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        ordered[n / 2]
    } else {
        (ordered[n / 2 - 1] + ordered[n / 2]) / 2.0
    }
}

/// 1-based ranks with ties given their average rank (scipy's `rankdata(method="average")`).
pub(crate) fn average_ranks(values: &[f64]) -> Vec<f64> {
    let n = values.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; n];
    let mut start = 0;
    while start < n {
        let mut end = start + 1;
        while end < n && values[order[end]] == values[order[start]] {
            end += 1;
        }
        // Positions start..end (0-based) share the mean of 1-based ranks start+1 ..= end.
        let shared_rank = (start + 1 + end) as f64 / 2.0;
        for &index in &order[start..end] {
            ranks[index] = shared_rank;
        }
        start = end;
    }
    ranks
}

/// The standard normal quantile function, used for rank normalisation. It is
/// `hazel_math::special::inv_Phi` (tested there against mpmath to a few ulps), re-exported so
/// the diagnostics keep one name for it.
pub use hazel_math::special::inv_Phi as normal_quantile;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantile_interpolates_like_numpy() {
        let values = [3.0, 1.0, 4.0, 1.0, 5.0];
        // np.quantile([3,1,4,1,5], [0, .05, .5, .95, 1]) = [1, 1, 3, 4.8, 5]
        assert_eq!(quantile(&values, 0.0), 1.0);
        assert_eq!(quantile(&values, 0.05), 1.0);
        assert_eq!(quantile(&values, 0.5), 3.0);
        assert!((quantile(&values, 0.95) - 4.8).abs() < 1e-12);
        assert_eq!(quantile(&values, 1.0), 5.0);
    }

    #[test]
    fn ties_share_their_average_rank() {
        assert_eq!(
            average_ranks(&[10.0, 20.0, 10.0, 5.0]),
            vec![2.5, 4.0, 2.5, 1.0]
        );
    }

    #[test]
    fn normal_quantile_inverts_the_normal_cdf() {
        for &p in &[
            1e-300,
            1e-12,
            0.001,
            0.02425,
            0.1,
            0.3,
            0.5,
            0.7,
            0.975,
            0.999,
            1.0 - 1e-12,
        ] {
            let x = normal_quantile(p);
            let back = if x > 0.0 {
                1.0 - 0.5 * libm::erfc(x / std::f64::consts::SQRT_2)
            } else {
                0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
            };
            let relative = ((back - p) / p.min(1.0 - p)).abs();
            assert!(
                relative < 1e-13 || (p > 0.5 && (back - p).abs() < 1e-15),
                "p = {p}: Φ(Φ⁻¹(p)) = {back}"
            );
        }
        assert_eq!(normal_quantile(0.5), 0.0);
        // scipy.stats.norm.ppf(0.975) = 1.959963984540054
        assert!((normal_quantile(0.975) - 1.959963984540054).abs() < 1e-14);
    }
}
