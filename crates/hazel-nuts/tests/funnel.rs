//! Neal's funnel: the sampler meets regions its step size cannot integrate; divergences must be
//! detected, flagged on the draws and counted in the report.

mod common;

use common::*;
use hazel_density::{EvalError, LogDensity};
use hazel_nuts::{RunConfig, SamplerConfig};

/// v ~ N(0, 3), x_i | v ~ N(0, exp(v/2)), i = 1..9.
struct Funnel;

impl LogDensity for Funnel {
    type Workspace = ();
    fn dim(&self) -> usize {
        10
    }
    fn new_workspace(&self) {}
    fn log_density_gradient(&self, _: &mut (), q: &[f64], g: &mut [f64]) -> Result<f64, EvalError> {
        let v = q[0];
        let mut lp = -v * v / 18.0 - 9.0 * v / 2.0;
        g[0] = -v / 9.0 - 4.5;
        let precision = (-v).exp();
        for i in 1..10 {
            lp -= 0.5 * q[i] * q[i] * precision;
            g[i] = -q[i] * precision;
            g[0] += 0.5 * q[i] * q[i] * precision;
        }
        Ok(lp)
    }
}

#[test]
fn funnel_divergences_are_detected_and_reported() {
    let config = RunConfig {
        seed: 3,
        chains: 2,
        threads: 0,
        first_chain_id: 1,
        sampler: SamplerConfig::default(),
        ..RunConfig::default()
    };
    let progress = RecordingProgress::default();
    let (report, chains) = run_in_memory(Funnel, &config, &progress);
    assert!(report.all_ok());
    let mut total = 0;
    for (c, r) in chains.iter().zip(&report.chains) {
        let flagged = c.draws.iter().filter(|d| d.stats.divergent).count();
        assert_eq!(flagged, r.divergences, "report counts the flagged draws");
        total += flagged;
        for d in c.draws.iter().filter(|d| d.stats.divergent) {
            // A divergence ends the trajectory: the last doubling was cut short.
            assert!(
                d.stats.n_leapfrog < (1 << (d.stats.treedepth + 1)),
                "{:?}",
                d.stats
            );
        }
    }
    assert!(total > 0, "the funnel's neck produces divergences");
    assert_eq!(
        progress
            .iterations
            .load(std::sync::atomic::Ordering::Relaxed),
        2 * 2000
    );
}
