//! Many chains stepped in lockstep through `begin_transition` / `resume_transition`, with all
//! pending points evaluated by one `log_density_gradient_batch` call per round (what a batched
//! or GPU backend does), give bit for bit the transitions of `nuts_step` on each chain alone.

mod common;

use common::IndependentNormal;
use hazel_density::{EvalError, LogDensity};
use hazel_nuts::{nuts_step, Metric, MetricKind, NutsSettings, NutsState, StepStatus, Transition};
use hazel_rng::{Purpose, StreamRng};

const CHAINS: usize = 4;
const DIM: usize = 7;

fn starts() -> Vec<Vec<f64>> {
    (0..CHAINS)
        .map(|c| {
            (0..DIM)
                .map(|i| 0.1 * (c as f64 + 1.0) * (i as f64 - 3.0))
                .collect()
        })
        .collect()
}

fn target() -> IndependentNormal {
    IndependentNormal {
        mean: vec![0.5; DIM],
        sd: (0..DIM).map(|i| 0.5 + 0.3 * i as f64).collect(),
    }
}

/// Bits of a transition and the position after it.
fn fingerprint(t: &Transition, state: &NutsState) -> Vec<u64> {
    let mut v = vec![
        t.lp.to_bits(),
        t.accept_stat.to_bits(),
        t.treedepth as u64,
        t.n_leapfrog as u64,
        t.divergent as u64,
        t.energy.to_bits(),
    ];
    v.extend(state.position().iter().map(|x| x.to_bits()));
    v
}

#[test]
fn lockstep_batched_chains_match_single_chains() {
    let model = target();
    let metric = Metric::identity(MetricKind::Diag, DIM);
    let settings = NutsSettings::default();
    let epsilon = 0.45;
    let iterations = 100;

    // Each chain alone.
    let mut alone = Vec::new();
    for (c, start) in starts().iter().enumerate() {
        let mut state = NutsState::new(&model, &mut (), start, settings.max_depth).unwrap();
        let mut rng = StreamRng::new(77, c as u64, Purpose::Sampler);
        let mut prints = Vec::new();
        for _ in 0..iterations {
            let t = nuts_step(
                &model,
                &mut (),
                &mut state,
                &metric,
                epsilon,
                &settings,
                &mut rng,
            )
            .unwrap();
            prints.push(fingerprint(&t, &state));
        }
        alone.push(prints);
    }

    // All chains in lockstep.
    let mut states: Vec<NutsState> = starts()
        .iter()
        .map(|s| NutsState::new(&model, &mut (), s, settings.max_depth).unwrap())
        .collect();
    let mut rngs: Vec<StreamRng> = (0..CHAINS)
        .map(|c| StreamRng::new(77, c as u64, Purpose::Sampler))
        .collect();
    let mut workspaces = [(); CHAINS];
    let mut together: Vec<Vec<Vec<u64>>> = vec![Vec::new(); CHAINS];
    let (mut qs, mut grads) = (vec![0.0; CHAINS * DIM], vec![0.0; CHAINS * DIM]);
    let mut results: Vec<Result<f64, EvalError>> = vec![Ok(0.0); CHAINS];
    let mut rounds = 0;
    for _ in 0..iterations {
        let mut status: Vec<StepStatus> = (0..CHAINS)
            .map(|c| states[c].begin_transition(&metric, epsilon, &settings, &mut rngs[c]))
            .collect();
        loop {
            let waiting: Vec<usize> = (0..CHAINS)
                .filter(|&c| status[c] == StepStatus::NeedsEvaluation)
                .collect();
            if waiting.is_empty() {
                break;
            }
            rounds += 1;
            let n = waiting.len();
            for (slot, &c) in waiting.iter().enumerate() {
                let (q, _) = states[c].evaluation_point();
                qs[slot * DIM..(slot + 1) * DIM].copy_from_slice(q);
            }
            model.log_density_gradient_batch(
                &mut workspaces[..n],
                &qs[..n * DIM],
                &mut grads[..n * DIM],
                &mut results[..n],
            );
            for (slot, &c) in waiting.iter().enumerate() {
                let (_, grad) = states[c].evaluation_point();
                grad.copy_from_slice(&grads[slot * DIM..(slot + 1) * DIM]);
                let result = std::mem::replace(&mut results[slot], Ok(0.0));
                status[c] = states[c]
                    .resume_transition(&metric, &mut rngs[c], result)
                    .unwrap();
            }
        }
        for c in 0..CHAINS {
            match status[c] {
                StepStatus::Done(t) => together[c].push(fingerprint(&t, &states[c])),
                StepStatus::NeedsEvaluation => unreachable!(),
            }
        }
    }
    assert_eq!(alone, together);
    // Lockstep rounds per iteration are the longest trajectory of the four.
    assert!(rounds >= iterations);
}
