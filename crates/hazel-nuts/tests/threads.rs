//! Determinism: the draws of a chain depend only on (seed, chain id, model, settings), never on
//! the thread count or on the other chains of the run.

mod common;

use common::*;
use hazel_nuts::{NoProgress, RunConfig, SamplerConfig};

fn bits(chains: &[Received]) -> Vec<Vec<Vec<u64>>> {
    chains
        .iter()
        .map(|c| c.draws.iter().map(Draw::bits).collect())
        .collect()
}

fn target() -> IndependentNormal {
    IndependentNormal {
        mean: (0..20).map(|i| i as f64 * 0.1).collect(),
        sd: (0..20).map(|i| 0.5 + 0.1 * i as f64).collect(),
    }
}

#[test]
fn thread_count_does_not_change_draws() {
    let sampler = SamplerConfig {
        num_warmup: 300,
        num_samples: 300,
        save_warmup: true,
        ..SamplerConfig::default()
    };
    let one = RunConfig {
        seed: 11,
        chains: 4,
        threads: 1,
        first_chain_id: 1,
        sampler,
        ..RunConfig::default()
    };
    let four = RunConfig {
        threads: 4,
        ..one.clone()
    };
    let (r1, c1) = run_in_memory(target(), &one, &NoProgress);
    let (r4, c4) = run_in_memory(target(), &four, &NoProgress);
    assert!(r1.all_ok() && r4.all_ok());
    assert_eq!(bits(&c1), bits(&c4));
    assert_eq!(c1[0].draws.len(), 600);
    // Different chains differ.
    assert_ne!(bits(&c1[0..1]), bits(&c1[1..2]));
    for (a, b) in r1.chains.iter().zip(&r4.chains) {
        assert_eq!(a.stepsize.map(f64::to_bits), b.stepsize.map(f64::to_bits));
        assert_eq!(a.inv_metric, b.inv_metric);
    }

    // Chain k alone (a run of one chain with first_chain_id = 1 + k) reproduces chain k.
    let alone = RunConfig {
        chains: 1,
        threads: 1,
        first_chain_id: 3,
        ..one.clone()
    };
    let (_, c_alone) = run_in_memory(target(), &alone, &NoProgress);
    assert_eq!(bits(&c_alone), bits(&c1[2..3]));

    // A different seed changes the draws.
    let other = RunConfig { seed: 12, ..one };
    let (_, c_other) = run_in_memory(target(), &other, &NoProgress);
    assert_ne!(bits(&c_other[0..1]), bits(&c1[0..1]));
}

/// Thinning keeps every `thin`-th iteration of each phase, counted from the first.
#[test]
fn thinning_keeps_every_nth_iteration() {
    let sampler = SamplerConfig {
        num_warmup: 100,
        num_samples: 100,
        save_warmup: true,
        ..SamplerConfig::default()
    };
    let base = RunConfig {
        seed: 2,
        chains: 1,
        threads: 1,
        first_chain_id: 1,
        sampler,
        ..RunConfig::default()
    };
    let thinned = RunConfig {
        sampler: SamplerConfig {
            thin: 3,
            ..base.sampler.clone()
        },
        ..base.clone()
    };
    let (_, all) = run_in_memory(target(), &base, &NoProgress);
    let (report, some) = run_in_memory(target(), &thinned, &NoProgress);
    let keep = |c: &Received, warmup: bool| -> Vec<Draw> {
        c.draws
            .iter()
            .filter(|d| d.warmup == warmup)
            .cloned()
            .collect::<Vec<_>>()
    };
    let expect: Vec<Draw> = keep(&all[0], true)
        .into_iter()
        .step_by(3)
        .chain(keep(&all[0], false).into_iter().step_by(3))
        .collect();
    assert_eq!(some[0].draws, expect);
    assert_eq!(report.chains[0].draws_written, 34 + 34);
}
