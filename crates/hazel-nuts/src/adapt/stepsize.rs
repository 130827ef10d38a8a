//! Dual averaging of the step size (Hoffman & Gelman 2014, Stan's `stepsize_adaptation`),
//! shared by every adaptation method.
//!
//! After each warmup transition with acceptance statistic `α` (clipped to 1), with counter `t`:
//!
//! ```text
//! η = 1 / (t + t0)
//! s̄ ← (1 − η) s̄ + η (δ − α)
//! x  = μ − s̄ √t / γ                    (the next step size is exp(x))
//! x̄ ← (1 − t^−κ) x̄ + t^−κ x
//! ```
//!
//! and when warmup ends the step size becomes `exp(x̄)`. `μ = log(10 ε)`: at the start of warmup
//! with the user's initial step size `ε` (Stan's services set it before the first heuristic
//! search), and after each re-initialisation by the heuristic (Stan's: after every metric
//! update; the gradient-based methods: after the first) with the step size it found.

use crate::checkpoint::f64_bits;
use crate::types::AdaptConfig;
use serde::{Deserialize, Serialize};

/// Dual averaging of the log step size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepSizeAdaptation {
    #[serde(with = "f64_bits")]
    pub mu: f64,
    #[serde(with = "f64_bits")]
    pub delta: f64,
    #[serde(with = "f64_bits")]
    pub gamma: f64,
    #[serde(with = "f64_bits")]
    pub kappa: f64,
    #[serde(with = "f64_bits")]
    pub t0: f64,
    #[serde(with = "f64_bits")]
    counter: f64,
    #[serde(with = "f64_bits")]
    s_bar: f64,
    #[serde(with = "f64_bits")]
    x_bar: f64,
}

impl StepSizeAdaptation {
    /// Settings from `config`, with `μ = log(10 ε)` for the initial step size `epsilon`.
    pub fn new(config: &AdaptConfig, epsilon: f64) -> Self {
        StepSizeAdaptation {
            mu: (10.0 * epsilon).ln(),
            delta: config.delta,
            gamma: config.gamma,
            kappa: config.kappa,
            t0: config.t0,
            counter: 0.0,
            s_bar: 0.0,
            x_bar: 0.0,
        }
    }

    /// Forgets the history (Stan's `restart`).
    pub fn restart(&mut self) {
        self.counter = 0.0;
        self.s_bar = 0.0;
        self.x_bar = 0.0;
    }

    /// Learns from one transition's acceptance statistic; returns the next step size.
    pub fn learn(&mut self, accept_stat: f64) -> f64 {
        self.counter += 1.0;
        let accept_stat = if accept_stat > 1.0 { 1.0 } else { accept_stat };
        let eta = 1.0 / (self.counter + self.t0);
        self.s_bar = (1.0 - eta) * self.s_bar + eta * (self.delta - accept_stat);
        let x = self.mu - self.s_bar * self.counter.sqrt() / self.gamma;
        let x_eta = self.counter.powf(-self.kappa);
        self.x_bar = (1.0 - x_eta) * self.x_bar + x_eta * x;
        x.exp()
    }

    /// The final step size, `exp(x̄)`.
    pub fn final_stepsize(&self) -> f64 {
        self.x_bar.exp()
    }

    /// After the heuristic found `epsilon`: `μ = log(10 ε)` and a fresh start.
    pub fn restart_at(&mut self, epsilon: f64) {
        self.mu = (10.0 * epsilon).ln();
        self.restart();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With α = δ at every iteration s̄ stays 0, so x = μ and the final step size is exp(μ).
    #[test]
    fn dual_averaging_fixed_point_and_direction() {
        let config = AdaptConfig::default();
        let mut da = StepSizeAdaptation::new(&config, 0.1);
        for _ in 0..50 {
            let eps = da.learn(config.delta);
            assert!((eps - 1.0).abs() < 1e-12);
        }
        assert!((da.final_stepsize() - 1.0).abs() < 1e-12);
        // Acceptance below target shrinks the step size, above target grows it.
        let mut low = StepSizeAdaptation::new(&config, 0.1);
        let mut high = StepSizeAdaptation::new(&config, 0.1);
        assert!(low.learn(0.2) < 1.0);
        assert!(high.learn(1.0) > 1.0);
        // Stan's first update by hand: η = 1/11, s̄ = (0.8 − 0.2)/11, x = log 1 − s̄/0.05.
        let x: f64 = 0.0 - (0.6 / 11.0) / 0.05;
        let mut da = StepSizeAdaptation::new(&config, 0.1);
        assert!((da.learn(0.2) - x.exp()).abs() < 1e-12);
        assert!((da.final_stepsize() - x.exp()).abs() < 1e-12);
    }
}
