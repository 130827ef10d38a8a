//! Neal's funnel: the sampler meets regions its step size cannot integrate; divergences must be
//! detected, flagged on the draws, counted in the report, and end the trajectory at the
//! divergent step (the tree depth and leapfrog count of every draw are checked against what
//! the way its transition ended allows).

mod common;

use common::*;
use hazel_nuts::{RunConfig, SamplerConfig};

#[test]
fn funnel_divergences_are_detected_and_reported() {
    let config = RunConfig {
        seed: 3,
        chains: 2,
        threads: 0,
        first_chain_id: 1,
        // Warmup draws too: early adaptation diverges often, so the checks below see many
        // divergent transitions, not only the few of the sampling phase.
        sampler: SamplerConfig {
            save_warmup: true,
            ..SamplerConfig::default()
        },
        ..RunConfig::default()
    };
    let progress = RecordingProgress::default();
    let (report, chains) = run_in_memory(FUNNEL, &config, &progress);
    assert!(report.all_ok());
    let mut total = 0;
    let mut cut_mid_merge = 0;
    for (c, r) in chains.iter().zip(&report.chains) {
        let flagged = |warmup: bool| {
            c.draws
                .iter()
                .filter(|d| d.warmup == warmup && d.stats.divergent)
                .count()
        };
        assert_eq!(
            flagged(false),
            r.divergences,
            "report counts the flagged draws"
        );
        assert_eq!(flagged(true), r.warmup_divergences, "and those of warmup");
        total += flagged(false) + flagged(true);
        for d in &c.draws {
            let (depth, n) = (d.stats.treedepth, d.stats.n_leapfrog);
            // `treedepth` counts the completed doublings, of 1, 2, …, 2^(depth−1) steps:
            // 2^depth − 1 steps. What follows them is `steps_after`, taken in the next doubling
            // (a subtree of 2^depth steps) before the transition ended.
            let completed = (1u32 << depth) - 1;
            assert!(n >= completed, "{:?}", d.stats);
            let steps_after = n - completed;
            if d.stats.divergent {
                // A divergence ends the trajectory at the divergent step: the doubling it
                // happened in was cut short after 1 ..= 2^depth of its steps, and that doubling
                // existed, so the depth is below the maximum.
                assert!(
                    (1..=1 << depth).contains(&steps_after) && depth < config.sampler.max_depth,
                    "divergent draw: {:?}",
                    d.stats
                );
                // Only a divergence can end a doubling after an odd number of its steps: a
                // U-turn inside the subtree is found when two spans merge, after an even number
                // of steps (the first merge is after 2).
                cut_mid_merge += usize::from(!steps_after.is_multiple_of(2));
            } else {
                // Without a divergence the transition ends at the maximum depth or on a U-turn:
                // between the trajectory and the completed subtree (nothing after the completed
                // doublings), or inside the subtree when two spans merge (an even number of its
                // steps).
                assert!(
                    steps_after == 0
                        || (steps_after.is_multiple_of(2) && steps_after <= 1 << depth),
                    "draw without a divergence: {:?}",
                    d.stats
                );
            }
        }
    }
    assert!(
        chains
            .iter()
            .any(|c| c.draws.iter().any(|d| !d.warmup && d.stats.divergent)),
        "the funnel's neck produces divergences after warmup too"
    );
    assert!(
        cut_mid_merge > 0,
        "some divergences end a doubling after an odd number of its steps ({total} divergences)"
    );
    assert_eq!(
        progress
            .iterations
            .load(std::sync::atomic::Ordering::Relaxed),
        2 * 2000
    );
}
