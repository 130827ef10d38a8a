//! Fault probes of issue 11 at the sampler's level: the progress display's divergence count and
//! the fixed_param sampler.

mod common;

use common::*;
use hazel_nuts::{AdaptConfig, Algorithm, Progress, RunConfig, SamplerConfig};
use std::sync::Mutex;

/// Every `(warmup, divergences)` the runner reported for chain 0, in order.
#[derive(Default)]
struct DivergenceLog(Mutex<Vec<(bool, usize)>>);

impl Progress for DivergenceLog {
    fn iteration(&self, chain: usize, _: usize, warmup: bool, divergences: usize) {
        if chain == 0 {
            self.0.lock().unwrap().push((warmup, divergences));
        }
    }
}

#[test]
fn progress_counts_the_divergences_of_each_phase_apart() {
    let config = RunConfig {
        seed: 3,
        chains: 1,
        sampler: SamplerConfig {
            num_warmup: 500,
            num_samples: 500,
            save_warmup: true,
            // A low acceptance target, so that the funnel's neck diverges in both phases.
            adapt: AdaptConfig {
                delta: 0.6,
                ..AdaptConfig::default()
            },
            ..SamplerConfig::default()
        },
        ..RunConfig::default()
    };
    let progress = DivergenceLog::default();
    let (report, chains) = run_in_memory(FUNNEL, &config, &progress);
    assert!(report.all_ok());
    let log = progress.0.into_inner().unwrap();
    let draws = &chains[0].draws;
    assert_eq!(log.len(), draws.len());
    let report = &report.chains[0];
    assert!(
        report.warmup_divergences > 0 && report.divergences > 0,
        "the funnel diverges in both phases: {} and {}",
        report.warmup_divergences,
        report.divergences
    );
    // After each iteration the count is that phase's divergent iterations so far.
    let (mut in_warmup, mut after_warmup) = (0, 0);
    for (&(warmup, shown), draw) in log.iter().zip(draws) {
        assert_eq!(warmup, draw.warmup);
        match (draw.stats.divergent, warmup) {
            (true, true) => in_warmup += 1,
            (true, false) => after_warmup += 1,
            _ => {}
        }
        assert_eq!(shown, if warmup { in_warmup } else { after_warmup });
    }
    assert_eq!(log.last(), Some(&(false, report.divergences)));
}

#[test]
fn fixed_param_keeps_the_starting_point_and_writes_zero_statistics() {
    let config = RunConfig {
        seed: 5,
        chains: 2,
        sampler: SamplerConfig {
            algorithm: Algorithm::FixedParam,
            num_warmup: 0,
            num_samples: 7,
            ..SamplerConfig::default()
        },
        ..RunConfig::default()
    };
    let progress = RecordingProgress::default();
    let (report, chains) = run_in_memory(
        IndependentNormal {
            mean: vec![0.0; 3],
            sd: vec![1.0; 3],
        },
        &config,
        &progress,
    );
    assert!(report.all_ok());
    for chain in &chains {
        assert_eq!(chain.draws.len(), 7);
        let first = &chain.draws[0].values;
        for draw in &chain.draws {
            assert!(!draw.warmup);
            assert_eq!(&draw.values, first, "the point never moves");
            assert_eq!((draw.stats.lp, draw.stats.accept_stat), (0.0, 0.0));
        }
    }
    assert_ne!(chains[0].draws[0].values, chains[1].draws[0].values);
}

#[test]
fn fixed_param_refuses_warmup() {
    let config = RunConfig {
        chains: 1,
        sampler: SamplerConfig {
            algorithm: Algorithm::FixedParam,
            num_warmup: 10,
            ..SamplerConfig::default()
        },
        ..RunConfig::default()
    };
    let model = hazel_density::Unconstrained::new(FUNNEL, "x");
    let sinks: Vec<Box<dyn hazel_nuts::DrawSink>> = vec![Box::new(MemorySink(Default::default()))];
    let report =
        hazel_nuts::run(&model, &config, sinks, &hazel_nuts::NoProgress).expect("the run starts");
    let error = report.chains[0].error.as_ref().expect("the chain refuses");
    assert!(error.to_string().contains("runs no warmup"), "{error}");
}
