//! Stan's warmup adaptation: windowed estimation of the inverse metric, with the step size
//! by dual averaging ([`super::stepsize`]).
//!
//! # Metric: windowed adaptation (Stan's `windowed_adaptation`)
//!
//! Warmup is split into an initial fast buffer (`init_buffer`, only the step size adapts), a
//! series of slow windows (the metric is estimated from the draws of each window and the
//! estimator restarted), and a terminal fast buffer (`term_buffer`). The first slow window has
//! `window` iterations and each next one twice the previous; when the window after the next one
//! would not fit before the terminal buffer, the next one is stretched to end where the terminal
//! buffer starts. With Stan's defaults and 1000 warmup iterations the metric is updated after
//! iterations 100, 150, 250, 450 and 950 (1-based).
//!
//! * If `num_warmup < 20`, no metric is estimated (only the step size adapts).
//! * Else if `init_buffer + window + term_buffer > num_warmup`, the stages become 15% / 75% / 10%
//!   of warmup (integer parts, as Stan's unsigned conversion does).
//!
//! At the end of a window the estimate is regularised towards a small multiple of the identity,
//! `(n/(n+5)) Σ̂ + 1e-3 (5/(n+5)) I` (diagonal: the same per variance), the step size is
//! re-initialised by Stan's heuristic, `μ` is reset to `log(10 ε)` and dual averaging restarts.
//!
//! A unit metric (`unit_e`) has no windows: only the step size adapts, over the whole warmup
//! (Stan's `adapt_unit_e_nuts`).

use super::stepsize::StepSizeAdaptation;
use super::AdaptOutcome;
use crate::checkpoint::{f64_bits, vec_f64_bits};
use crate::metric::{Metric, MetricError};
use crate::types::{AdaptConfig, MetricKind};
use serde::{Deserialize, Serialize};

/// Stan's schedule of slow adaptation windows over warmup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WindowSchedule {
    num_warmup: usize,
    init_buffer: usize,
    term_buffer: usize,
    base_window: usize,
    counter: usize,
    window_size: usize,
    next_window_end: usize,
}

impl WindowSchedule {
    /// Stan's `set_window_params`, including the short-warmup rules.
    pub fn new(
        num_warmup: usize,
        init_buffer: usize,
        term_buffer: usize,
        base_window: usize,
    ) -> Self {
        let (num_warmup, init_buffer, term_buffer, base_window) = if num_warmup < 20 {
            // Stan leaves every parameter at zero: no iteration is in a window.
            (0, 0, 0, 0)
        } else if init_buffer + base_window + term_buffer > num_warmup {
            let init = (0.15 * num_warmup as f64) as usize;
            let term = (0.1 * num_warmup as f64) as usize;
            (num_warmup, init, term, num_warmup - (init + term))
        } else {
            (num_warmup, init_buffer, term_buffer, base_window)
        };
        WindowSchedule {
            num_warmup,
            init_buffer,
            term_buffer,
            base_window,
            counter: 0,
            window_size: base_window,
            next_window_end: (init_buffer + base_window).wrapping_sub(1),
        }
    }

    /// The effective (init_buffer, term_buffer, base_window) after the short-warmup rules.
    pub fn stages(&self) -> (usize, usize, usize) {
        (self.init_buffer, self.term_buffer, self.base_window)
    }

    /// Whether the current iteration's draw goes into the metric estimate.
    fn in_window(&self) -> bool {
        self.counter >= self.init_buffer
            && self.counter < self.num_warmup.saturating_sub(self.term_buffer)
            && self.counter != self.num_warmup
    }

    /// Whether the current iteration closes a window.
    fn at_window_end(&self) -> bool {
        self.counter == self.next_window_end && self.counter != self.num_warmup
    }

    fn compute_next_window(&mut self) {
        let last_end = self.num_warmup - self.term_buffer - 1;
        if self.next_window_end == last_end {
            return;
        }
        self.window_size *= 2;
        self.next_window_end = self.counter + self.window_size;
        if self.next_window_end != last_end {
            let next_boundary = self.next_window_end + 2 * self.window_size;
            if next_boundary >= self.num_warmup - self.term_buffer {
                self.next_window_end = last_end;
            }
        }
    }

    /// Advances over one warmup iteration: returns (draw is in a window, window ends here).
    pub fn advance(&mut self) -> (bool, bool) {
        let in_window = self.in_window();
        let ends = self.at_window_end();
        if ends {
            self.compute_next_window();
        }
        self.counter += 1;
        (in_window, ends)
    }
}

/// Welford's running mean and (co)variance of the draws in one window, preallocated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum CovarianceEstimator {
    Diag {
        #[serde(with = "f64_bits")]
        n: f64,
        #[serde(with = "vec_f64_bits")]
        mean: Vec<f64>,
        #[serde(with = "vec_f64_bits")]
        m2: Vec<f64>,
        #[serde(with = "vec_f64_bits")]
        out: Vec<f64>,
    },
    Dense {
        #[serde(with = "f64_bits")]
        n: f64,
        #[serde(with = "vec_f64_bits")]
        mean: Vec<f64>,
        #[serde(with = "vec_f64_bits")]
        m2: Vec<f64>,
        #[serde(with = "vec_f64_bits")]
        delta: Vec<f64>,
        #[serde(with = "vec_f64_bits")]
        out: Vec<f64>,
    },
}

impl CovarianceEstimator {
    pub fn new(kind: MetricKind, dim: usize) -> Self {
        match kind {
            MetricKind::Unit | MetricKind::Diag | MetricKind::LowRank => {
                CovarianceEstimator::Diag {
                    n: 0.0,
                    mean: vec![0.0; dim],
                    m2: vec![0.0; dim],
                    out: vec![0.0; dim],
                }
            }
            MetricKind::Dense => CovarianceEstimator::Dense {
                n: 0.0,
                mean: vec![0.0; dim],
                m2: vec![0.0; dim * dim],
                delta: vec![0.0; dim],
                out: vec![0.0; dim * dim],
            },
        }
    }

    pub fn restart(&mut self) {
        match self {
            CovarianceEstimator::Diag { n, mean, m2, .. }
            | CovarianceEstimator::Dense { n, mean, m2, .. } => {
                *n = 0.0;
                mean.fill(0.0);
                m2.fill(0.0);
            }
        }
    }

    pub fn add(&mut self, q: &[f64]) {
        match self {
            CovarianceEstimator::Diag { n, mean, m2, .. } => {
                *n += 1.0;
                for ((m, s), &x) in mean.iter_mut().zip(m2.iter_mut()).zip(q) {
                    let delta = x - *m;
                    *m += delta / *n;
                    *s += delta * (x - *m);
                }
            }
            CovarianceEstimator::Dense {
                n, mean, m2, delta, ..
            } => {
                *n += 1.0;
                let d = q.len();
                for i in 0..d {
                    delta[i] = q[i] - mean[i];
                    mean[i] += delta[i] / *n;
                }
                // m2 += (x − mean_old)(x − mean_new)ᵀ, Stan's welford_covar_estimator.
                for i in 0..d {
                    for j in 0..d {
                        m2[i * d + j] += (q[i] - mean[i]) * delta[j];
                    }
                }
            }
        }
    }

    /// Number of draws in the current window.
    pub fn count(&self) -> f64 {
        match self {
            CovarianceEstimator::Diag { n, .. } | CovarianceEstimator::Dense { n, .. } => *n,
        }
    }

    /// Regularised sample (co)variance of the window, written into `metric`.
    pub fn update_metric(&mut self, metric: &mut Metric) -> Result<(), MetricError> {
        match self {
            CovarianceEstimator::Diag { n, m2, out, .. } => {
                let n = *n;
                let (shrink, ridge) = (n / (n + 5.0), 1e-3 * (5.0 / (n + 5.0)));
                for (o, &s) in out.iter_mut().zip(m2.iter()) {
                    let var = if n > 1.0 { s / (n - 1.0) } else { 0.0 };
                    *o = shrink * var + ridge;
                }
                metric.set_diag(out)
            }
            CovarianceEstimator::Dense {
                n, m2, out, mean, ..
            } => {
                let n = *n;
                let d = mean.len();
                let (shrink, ridge) = (n / (n + 5.0), 1e-3 * (5.0 / (n + 5.0)));
                for i in 0..d {
                    for j in 0..d {
                        // Symmetrise: Welford's update is symmetric only up to rounding.
                        let s = 0.5 * (m2[i * d + j] + m2[j * d + i]);
                        let cov = if n > 1.0 { s / (n - 1.0) } else { 0.0 };
                        out[i * d + j] = shrink * cov + if i == j { ridge } else { 0.0 };
                    }
                }
                metric.set_dense(out)
            }
        }
    }
}

/// Stan's step size and metric adaptation over one chain's warmup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WindowedAdaptation {
    pub stepsize: StepSizeAdaptation,
    pub schedule: WindowSchedule,
    pub estimator: CovarianceEstimator,
}

impl WindowedAdaptation {
    pub fn new(
        config: &AdaptConfig,
        num_warmup: usize,
        kind: MetricKind,
        dim: usize,
        initial_stepsize: f64,
    ) -> Self {
        // A unit metric never changes: a schedule with no window (Stan's short-warmup case).
        let schedule = match kind {
            MetricKind::Unit => WindowSchedule::new(0, 0, 0, 0),
            _ => WindowSchedule::new(
                num_warmup,
                config.init_buffer,
                config.term_buffer,
                config.window,
            ),
        };
        WindowedAdaptation {
            stepsize: StepSizeAdaptation::new(config, initial_stepsize),
            schedule,
            estimator: CovarianceEstimator::new(kind, dim),
        }
    }

    /// Learns from one warmup transition that moved the chain to `position` with acceptance
    /// statistic `accept_stat`; updates `metric` at the end of a slow window.
    pub fn learn(
        &mut self,
        accept_stat: f64,
        position: &[f64],
        metric: &mut Metric,
    ) -> Result<AdaptOutcome, MetricError> {
        let stepsize = self.stepsize.learn(accept_stat);
        let (in_window, window_ends) = self.schedule.advance();
        if in_window {
            self.estimator.add(position);
        }
        if window_ends {
            self.estimator.update_metric(metric)?;
            self.estimator.restart();
        }
        Ok(AdaptOutcome {
            stepsize,
            search_stepsize: window_ends,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window_ends(num_warmup: usize, config: &AdaptConfig) -> Vec<usize> {
        let mut s = WindowSchedule::new(
            num_warmup,
            config.init_buffer,
            config.term_buffer,
            config.window,
        );
        (1..=num_warmup).filter(|_| s.advance().1).collect()
    }

    /// Stan's defaults with 1000 warmup iterations update the metric after iterations
    /// 100, 150, 250, 450 and 950.
    #[test]
    fn default_windows_match_stan() {
        assert_eq!(
            window_ends(1000, &AdaptConfig::default()),
            vec![100, 150, 250, 450, 950]
        );
        // 2000 warmup: 100, 150, 250, 450, 850, 1950 (the 800-window is stretched to 1100).
        assert_eq!(
            window_ends(2000, &AdaptConfig::default()),
            vec![100, 150, 250, 450, 850, 1950]
        );
    }

    /// When the three stages do not fit, Stan uses 15% / 75% / 10%.
    #[test]
    fn short_warmup_uses_fractions() {
        let config = AdaptConfig::default();
        let s = WindowSchedule::new(100, 75, 50, 25);
        assert_eq!(s.stages(), (15, 10, 75));
        assert_eq!(window_ends(100, &config), vec![90]);
        let mut s = WindowSchedule::new(100, 75, 50, 25);
        let in_window: Vec<usize> = (1..=100).filter(|_| s.advance().0).collect();
        assert_eq!(in_window.first(), Some(&16));
        assert_eq!(in_window.len(), 75);
        // Fewer than 20 warmup iterations: no metric adaptation at all.
        assert!(window_ends(19, &config).is_empty());
        let mut s = WindowSchedule::new(19, 75, 50, 25);
        assert!((0..19).all(|_| !s.advance().0));
    }

    #[test]
    fn regularised_variance_matches_formula() {
        let mut est = CovarianceEstimator::new(MetricKind::Diag, 2);
        let xs = [[1.0, 10.0], [2.0, 20.0], [4.0, 40.0], [7.0, 70.0]];
        for x in &xs {
            est.add(x);
        }
        let mut metric = Metric::identity(MetricKind::Diag, 2);
        est.update_metric(&mut metric).unwrap();
        let n = 4.0;
        let mean = 3.5;
        let var: f64 = xs
            .iter()
            .map(|x| (x[0] - mean) * (x[0] - mean))
            .sum::<f64>()
            / (n - 1.0);
        let expected = n / (n + 5.0) * var + 1e-3 * 5.0 / (n + 5.0);
        match metric.to_inverse_metric() {
            crate::types::InverseMetric::Diag(v) => {
                assert!((v[0] - expected).abs() < 1e-12);
                assert!(
                    (v[1] - (n / (n + 5.0) * var * 100.0 + 1e-3 * 5.0 / (n + 5.0))).abs() < 1e-9
                );
            }
            _ => unreachable!(),
        }

        let mut dense = CovarianceEstimator::new(MetricKind::Dense, 2);
        for x in &xs {
            dense.add(x);
        }
        let mut metric = Metric::identity(MetricKind::Dense, 2);
        dense.update_metric(&mut metric).unwrap();
        match metric.to_inverse_metric() {
            crate::types::InverseMetric::Dense { values, .. } => {
                assert!((values[0] - expected).abs() < 1e-12);
                assert!((values[1] - n / (n + 5.0) * var * 10.0).abs() < 1e-9);
                assert_eq!(values[1], values[2]);
            }
            _ => unreachable!(),
        }
    }
}
