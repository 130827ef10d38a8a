//! nutpie's warmup: the metric from draws and gradients ([`super::fisher`]), re-estimated
//! throughout warmup from overlapping windows, with dual averaging of the step size.
//!
//! # Schedule (nutpie's defaults, as fractions of `num_warmup`)
//!
//! * The chain starts with `M⁻¹_ii = 1/|∂_i log p(q₀)|` (unless the user gave a metric), and
//!   the initial point counts as a first draw.
//! * Iterations `[0, 0.85 W)`: each draw at which the chain moved (its position changed) goes
//!   into two estimators, a foreground and a background. When the background holds `s` draws
//!   (`s` = 10 in the early phase, the first 0.3 W iterations, then 80), it replaces the
//!   foreground and a new background starts, unless fewer than `s` iterations would remain
//!   before 0.85 W. So the foreground always holds the last `s` to `2s` draws: old draws from
//!   far in the tails are forgotten quickly early on, and later windows are long enough for a
//!   precise estimate. The metric is recomputed from the foreground after every iteration
//!   (diagonal; the low-rank fit, which costs eigendecompositions, after every switch and at the
//!   end of the phase) once it holds 3 draws. The draws a switch drops are held out: the next
//!   low-rank fits keep only the directions that lower the Fisher divergence on them, so that
//!   a window with fewer draws than dimensions cannot impose directions fitted to its noise
//!   (nutpie has no such check; see [`super::fisher`]).
//! * The first time the metric changes the step size is re-initialised by Stan's heuristic and
//!   dual averaging restarts there; later metric changes, the last one at 0.85 W included, leave
//!   it running (nutpie's rule). Their changes are small, and the average `x̄` weighs recent
//!   step sizes most. Re-running the heuristic at 0.85 W as well, as Stan does after its last
//!   window, was measured worse: over posteriordb tiers 1–3 and the examples (42 posteriors,
//!   `adaptation_ess`) the median ESS per gradient against Stan's adaptation was 1.24 with it
//!   and 1.32 without for the diagonal metric (2 seeds), and 7.50 against 9.09 for low-rank
//!   with Pathfinder inits (1 seed).
//! * Iterations `[0.85 W, W)`: the metric is fixed and only the step size adapts; warmup ends
//!   with the dual-averaging average `exp(x̄)`, as Stan's.

use super::fisher::{diag_variance, fit_low_rank, variance_from_gradient, LowRankSettings, Window};
use super::stepsize::StepSizeAdaptation;
use super::AdaptOutcome;
use crate::checkpoint::{f64_bits, vec_f64_bits};
use crate::metric::{Metric, MetricError};
use crate::types::AdaptConfig;
use serde::{Deserialize, Serialize};

/// Share of warmup with short windows.
pub const EARLY_SHARE: f64 = 0.3;
/// Share of warmup at the end in which only the step size adapts.
pub const FINAL_SHARE: f64 = 0.15;
/// Window length (draws in the background estimator before a switch), early and later.
pub const EARLY_WINDOW: usize = 10;
pub const LATE_WINDOW: usize = 80;
/// Draws the foreground needs before it sets the metric.
const MIN_DRAWS: usize = 3;

/// Running means and sums of squared deviations (Welford) of draws and gradients.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DrawGradMoments {
    #[serde(with = "f64_bits")]
    n: f64,
    #[serde(with = "vec_f64_bits")]
    draw_mean: Vec<f64>,
    #[serde(with = "vec_f64_bits")]
    draw_m2: Vec<f64>,
    #[serde(with = "vec_f64_bits")]
    grad_mean: Vec<f64>,
    #[serde(with = "vec_f64_bits")]
    grad_m2: Vec<f64>,
}

impl DrawGradMoments {
    fn new(dim: usize) -> Self {
        DrawGradMoments {
            n: 0.0,
            draw_mean: vec![0.0; dim],
            draw_m2: vec![0.0; dim],
            grad_mean: vec![0.0; dim],
            grad_m2: vec![0.0; dim],
        }
    }

    fn clear(&mut self) {
        self.n = 0.0;
        for v in [
            &mut self.draw_mean,
            &mut self.draw_m2,
            &mut self.grad_mean,
            &mut self.grad_m2,
        ] {
            v.fill(0.0);
        }
    }

    fn add(&mut self, position: &[f64], gradient: &[f64]) {
        self.n += 1.0;
        let n = self.n;
        welford(&mut self.draw_mean, &mut self.draw_m2, position, n);
        welford(&mut self.grad_mean, &mut self.grad_m2, gradient, n);
    }
}

fn welford(mean: &mut [f64], m2: &mut [f64], x: &[f64], n: f64) {
    for ((m, s), &v) in mean.iter_mut().zip(m2.iter_mut()).zip(x) {
        let delta = v - *m;
        *m += delta / n;
        *s += delta * (v - *m);
    }
}

/// The foreground and background estimators of one method.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum FisherWindows {
    /// Diagonal: Welford moments (the ratio of variances needs no draw kept).
    Diag {
        foreground: DrawGradMoments,
        background: DrawGradMoments,
        #[serde(with = "vec_f64_bits")]
        variances: Vec<f64>,
    },
    /// Low-rank: the foreground's draws and gradients themselves (the background is its tail,
    /// from draw `background_start`), and the draws the last switch dropped from it, held out
    /// from the fit to judge its directions ([`super::fisher`]).
    LowRank {
        dim: usize,
        #[serde(with = "vec_f64_bits")]
        draws: Vec<f64>,
        #[serde(with = "vec_f64_bits")]
        grads: Vec<f64>,
        background_start: usize,
        #[serde(default, with = "vec_f64_bits")]
        held_out_draws: Vec<f64>,
        #[serde(default, with = "vec_f64_bits")]
        held_out_grads: Vec<f64>,
    },
}

impl FisherWindows {
    fn new(low_rank: bool, dim: usize) -> Self {
        if low_rank {
            FisherWindows::LowRank {
                dim,
                draws: Vec::new(),
                grads: Vec::new(),
                background_start: 0,
                held_out_draws: Vec::new(),
                held_out_grads: Vec::new(),
            }
        } else {
            FisherWindows::Diag {
                foreground: DrawGradMoments::new(dim),
                background: DrawGradMoments::new(dim),
                variances: vec![0.0; dim],
            }
        }
    }

    fn add(&mut self, position: &[f64], gradient: &[f64]) {
        match self {
            FisherWindows::Diag {
                foreground,
                background,
                ..
            } => {
                foreground.add(position, gradient);
                background.add(position, gradient);
            }
            FisherWindows::LowRank { draws, grads, .. } => {
                draws.extend_from_slice(position);
                grads.extend_from_slice(gradient);
            }
        }
    }

    fn foreground_count(&self) -> usize {
        match self {
            FisherWindows::Diag { foreground, .. } => foreground.n as usize,
            FisherWindows::LowRank { dim, draws, .. } => draws.len().checked_div(*dim).unwrap_or(0),
        }
    }

    fn background_count(&self) -> usize {
        match self {
            FisherWindows::Diag { background, .. } => background.n as usize,
            FisherWindows::LowRank {
                background_start, ..
            } => self.foreground_count() - background_start,
        }
    }

    /// The background becomes the foreground; a new background starts empty.
    fn switch(&mut self) {
        let count = self.foreground_count();
        match self {
            FisherWindows::Diag {
                foreground,
                background,
                ..
            } => {
                std::mem::swap(foreground, background);
                background.clear();
            }
            FisherWindows::LowRank {
                dim,
                draws,
                grads,
                background_start,
                held_out_draws,
                held_out_grads,
            } => {
                // The first switch drops nothing and keeps the (empty) held-out draws.
                if *background_start > 0 {
                    let end = *background_start * *dim;
                    held_out_draws.clear();
                    held_out_grads.clear();
                    held_out_draws.extend(draws.drain(..end));
                    held_out_grads.extend(grads.drain(..end));
                }
                *background_start = count - *background_start;
            }
        }
    }

    /// Sets `metric` from the foreground; whether it changed.
    fn update_metric(&mut self, metric: &mut Metric) -> Result<bool, MetricError> {
        if self.foreground_count() < MIN_DRAWS {
            return Ok(false);
        }
        match self {
            FisherWindows::Diag {
                foreground,
                variances,
                ..
            } => {
                // A coordinate whose estimate is undefined keeps its variance.
                for (i, v) in variances.iter_mut().enumerate() {
                    if let Some(new) = diag_variance(foreground.draw_m2[i], foreground.grad_m2[i]) {
                        *v = new;
                    }
                }
                metric.set_diag(variances)?;
                Ok(true)
            }
            FisherWindows::LowRank {
                dim,
                draws,
                grads,
                held_out_draws,
                held_out_grads,
                ..
            } => {
                let settings = LowRankSettings {
                    max_rank: LowRankSettings::default().max_rank.min(*dim),
                    ..LowRankSettings::default()
                };
                let window = Window { draws, grads };
                let held_out = Window {
                    draws: held_out_draws,
                    grads: held_out_grads,
                };
                match fit_low_rank(*dim, window, held_out, &settings) {
                    Some(fit) => {
                        metric.set_low_rank(&fit.scale, &fit.values, &fit.vectors)?;
                        Ok(true)
                    }
                    // A degenerate window (a coordinate that never moved): keep the metric.
                    None => Ok(false),
                }
            }
        }
    }
}

/// nutpie's adaptation over one chain's warmup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GradientAdaptation {
    pub stepsize: StepSizeAdaptation,
    /// Iterations before this one use short windows.
    early_end: usize,
    /// From this iteration on the metric is fixed.
    final_start: usize,
    /// Warmup iterations learnt from so far.
    iteration: usize,
    /// Whether the metric changed since the start (the heuristic re-runs the first time).
    updated_once: bool,
    /// The position before the last transition, to tell whether the chain moved.
    #[serde(with = "vec_f64_bits")]
    last_position: Vec<f64>,
    windows: FisherWindows,
}

impl GradientAdaptation {
    pub fn new(
        config: &AdaptConfig,
        num_warmup: usize,
        low_rank: bool,
        dim: usize,
        initial_stepsize: f64,
    ) -> Self {
        let w = num_warmup as f64;
        GradientAdaptation {
            stepsize: StepSizeAdaptation::new(config, initial_stepsize),
            early_end: (EARLY_SHARE * w) as usize,
            final_start: num_warmup - (FINAL_SHARE * w) as usize,
            iteration: 0,
            updated_once: false,
            last_position: vec![0.0; dim],
            windows: FisherWindows::new(low_rank, dim),
        }
    }

    /// See [`super::Adaptation::start`].
    pub fn start(
        &mut self,
        position: &[f64],
        gradient: &[f64],
        metric: &mut Metric,
        keep_metric: bool,
    ) -> Result<(), MetricError> {
        self.last_position.copy_from_slice(position);
        self.windows.add(position, gradient);
        let from_gradient: Vec<f64> = gradient
            .iter()
            .map(|&g| variance_from_gradient(g))
            .collect();
        match &mut self.windows {
            FisherWindows::Diag { variances, .. } => {
                if keep_metric {
                    // The user's metric is the fallback of coordinates without an estimate.
                    if let crate::types::InverseMetric::Diag(given) = metric.to_inverse_metric() {
                        variances.copy_from_slice(&given);
                    }
                    Ok(())
                } else {
                    variances.copy_from_slice(&from_gradient);
                    metric.set_diag(&from_gradient)
                }
            }
            FisherWindows::LowRank { .. } if keep_metric => Ok(()),
            FisherWindows::LowRank { .. } => {
                let scale: Vec<f64> = from_gradient.iter().map(|v| v.sqrt()).collect();
                metric.set_low_rank(&scale, &[], &[])
            }
        }
    }

    /// See [`super::Adaptation::learn`].
    pub fn learn(
        &mut self,
        accept_stat: f64,
        position: &[f64],
        gradient: &[f64],
        metric: &mut Metric,
    ) -> Result<AdaptOutcome, MetricError> {
        let draw = self.iteration;
        self.iteration += 1;
        let stepsize = self.stepsize.learn(accept_stat);
        let mut search_stepsize = false;
        if draw < self.final_start {
            // Bitwise: a rejected transition leaves the position exactly as it was.
            let moved = position
                .iter()
                .zip(&self.last_position)
                .any(|(a, b)| a.to_bits() != b.to_bits());
            if moved {
                self.windows.add(position, gradient);
            }
            let window = if draw < self.early_end {
                EARLY_WINDOW
            } else {
                LATE_WINDOW
            };
            let late = draw + window > self.final_start;
            let switch = !late && self.windows.background_count() >= window;
            if switch {
                self.windows.switch();
            }
            let due = match self.windows {
                FisherWindows::Diag { .. } => true,
                FisherWindows::LowRank { .. } => switch || draw + 1 == self.final_start,
            };
            if due && self.windows.update_metric(metric)? && !self.updated_once {
                self.updated_once = true;
                search_stepsize = true;
            }
        }
        self.last_position.copy_from_slice(position);
        Ok(AdaptOutcome {
            stepsize,
            search_stepsize,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{AdaptMethod, MetricKind};

    /// The windows switch every 10 draws early, every 80 later, never in the last window
    /// before the final phase; the foreground holds between one and two windows.
    #[test]
    fn windows_switch_on_schedule() {
        let config = AdaptConfig {
            method: AdaptMethod::DiagGrad,
            ..AdaptConfig::default()
        };
        let mut a = GradientAdaptation::new(&config, 1000, false, 1, 1.0);
        let mut metric = Metric::identity(MetricKind::Diag, 1);
        a.start(&[0.0], &[1.0], &mut metric, false).unwrap();
        assert_eq!(
            metric.to_inverse_metric(),
            crate::InverseMetric::Diag(vec![1.0])
        );
        let mut switches = Vec::new();
        let mut searches = Vec::new();
        for t in 0..1000 {
            let before = a.windows.background_count();
            let x = [t as f64 + 1.0];
            let outcome = a.learn(0.8, &x, &[-x[0]], &mut metric).unwrap();
            if outcome.search_stepsize {
                searches.push(t);
            }
            if a.windows.background_count() < before {
                switches.push(t);
            }
            let fg = a.windows.foreground_count();
            if (20..850).contains(&t) {
                assert!(fg >= 10, "iteration {t}: foreground {fg}");
            }
        }
        // Only the first update (3 draws in the foreground) re-runs the heuristic; the last,
        // before the final window, leaves dual averaging running.
        assert_eq!(searches, vec![1]);
        assert_eq!(switches[..3], [8, 18, 28]);
        assert!(switches.iter().all(|&t| t + 80 <= 850));
        let late: Vec<usize> = switches.iter().copied().filter(|&t| t >= 300).collect();
        assert!(late.windows(2).all(|w| w[1] - w[0] == 80), "{late:?}");
    }
}
