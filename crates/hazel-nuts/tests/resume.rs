//! Checkpoint and resume: taking checkpoints never changes the draws, and a chain resumed from
//! any checkpoint (in the initial buffer, inside a slow window, at the end of warmup, during
//! sampling; diagonal and dense metrics; Stan's and the gradient-based adaptations; with
//! thinning and saved warmup) continues bit for bit
//! as the uninterrupted chain. Each checkpoint goes through JSON on the way, as on disk.

mod common;

use common::*;
use hazel_density::Unconstrained;
use hazel_draws::{erased_serde, AdaptationInfo, Columns};
use hazel_nuts::{
    AdaptMethod, ChainCheckpoint, ChainStart, CheckpointPolicy, DrawSink, MetricKind, NoProgress,
    RunConfig, SamplerConfig, Timing,
};
use std::io;
use std::sync::{Arc, Mutex};

/// A memory sink that also keeps every checkpoint with the output received before it.
#[derive(Clone, Default)]
struct Recorded {
    received: Received,
    checkpoints: Vec<(ChainCheckpoint, Received)>,
}

struct CheckpointSink(Arc<Mutex<Recorded>>);

impl DrawSink for CheckpointSink {
    fn begin(&mut self, columns: &Columns<'_>) -> io::Result<()> {
        self.0.lock().unwrap().received.begin(columns);
        Ok(())
    }
    fn adaptation_done(&mut self, adaptation: &AdaptationInfo<'_>) -> io::Result<()> {
        self.0.lock().unwrap().received.adaptation_done(adaptation);
        Ok(())
    }
    fn draw(&mut self, draw: &hazel_draws::Draw<'_>) -> io::Result<()> {
        self.0.lock().unwrap().received.draw(draw);
        Ok(())
    }
    fn finish(&mut self, _: &Timing) -> io::Result<()> {
        self.0.lock().unwrap().received.finished = true;
        Ok(())
    }
    fn checkpoint(&mut self, checkpoint: &dyn erased_serde::Serialize) -> io::Result<()> {
        // The runner's checkpoint, as a sink sees it: serialisable, its type unnamed.
        let json = serde_json::to_string(checkpoint).map_err(io::Error::other)?;
        let back: ChainCheckpoint = serde_json::from_str(&json).map_err(io::Error::other)?;
        let again = serde_json::to_string(&back).map_err(io::Error::other)?;
        assert_eq!(again, json, "JSON round trip is exact");
        let mut r = self.0.lock().unwrap();
        let so_far = r.received.clone();
        r.checkpoints.push((back, so_far));
        Ok(())
    }
}

fn target() -> Unconstrained<Bivariate> {
    Unconstrained::new(
        Bivariate {
            mean: [1.0, -2.0],
            sd: [0.5, 3.0],
            rho: 0.6,
        },
        "x",
    )
}

fn config(metric: MetricKind, save_warmup: bool, thin: usize, every: usize) -> RunConfig {
    RunConfig {
        seed: 42,
        chains: 2,
        threads: 1,
        sampler: SamplerConfig {
            num_warmup: 150,
            num_samples: 60,
            save_warmup,
            thin,
            metric,
            ..SamplerConfig::default()
        },
        checkpoint: CheckpointPolicy {
            every_iterations: every,
            every: None,
        },
        ..RunConfig::default()
    }
}

fn run(config: &RunConfig, starts: Vec<ChainStart>, prior: Vec<Recorded>) -> Vec<Recorded> {
    let model = target();
    let handles: Vec<_> = prior.into_iter().map(|r| Arc::new(Mutex::new(r))).collect();
    let sinks = handles
        .iter()
        .map(|h| Box::new(CheckpointSink(h.clone())) as Box<dyn DrawSink>)
        .collect();
    let report =
        hazel_nuts::run_from(&model, config, starts, sinks, &NoProgress).expect("run starts");
    assert!(report.all_ok(), "{:?}", report.chains);
    handles.iter().map(|h| h.lock().unwrap().clone()).collect()
}

fn assert_same_output(a: &Received, b: &Received, what: &str) {
    assert_eq!(a.draws.len(), b.draws.len(), "{what}: number of draws");
    for (i, (x, y)) in a.draws.iter().zip(&b.draws).enumerate() {
        assert_eq!(x.bits(), y.bits(), "{what}: draw {i}");
    }
    assert_eq!(a.adaptation, b.adaptation, "{what}: adaptation");
    assert!(a.finished && b.finished, "{what}: finished");
}

fn check(metric: MetricKind, save_warmup: bool, thin: usize) {
    check_method(metric, AdaptMethod::Stan, save_warmup, thin);
}

/// `config` with the adaptation `method` (and the metric it learns).
fn with_method(mut config: RunConfig, method: AdaptMethod) -> RunConfig {
    config.sampler.adapt.method = method;
    config.sampler.metric = method.metric_kind(config.sampler.metric);
    config
}

fn check_method(metric: MetricKind, method: AdaptMethod, save_warmup: bool, thin: usize) {
    let config = |metric, save_warmup, thin, every| {
        with_method(config(metric, save_warmup, thin, every), method)
    };
    let plain = run(
        &config(metric, save_warmup, thin, 0),
        vec![ChainStart::Fresh; 2],
        vec![Recorded::default(); 2],
    );
    let every = 13;
    let with = run(
        &config(metric, save_warmup, thin, every),
        vec![ChainStart::Fresh; 2],
        vec![Recorded::default(); 2],
    );
    for chain in 0..2 {
        assert_same_output(
            &plain[chain].received,
            &with[chain].received,
            "checkpoints on vs off",
        );
        let checkpoints = &with[chain].checkpoints;
        // 210 iterations, one checkpoint every 13 before the end, then the final one.
        assert_eq!(checkpoints.len(), 209 / every + 1);
        let (last, _) = checkpoints.last().unwrap();
        assert!(last.finished());
        assert_eq!(
            last.counters.draws_written,
            with[chain].received.draws.len()
        );
    }
    // Resume chain 1 from every checkpoint (chain 0 from its final one: left alone).
    let resume_config = config(metric, save_warmup, thin, every);
    for (checkpoint, before) in &with[1].checkpoints {
        let (done, _) = with[0].checkpoints.last().unwrap().clone();
        let done_prior = Recorded {
            received: with[0].received.clone(),
            ..Recorded::default()
        };
        let starts = vec![
            ChainStart::Resume(Box::new(done)),
            ChainStart::Resume(Box::new(checkpoint.clone())),
        ];
        // What the sink held at the checkpoint (a finished chain's sink was finished).
        let mut prior = before.clone();
        prior.finished = checkpoint.finished();
        let resumed = run(
            &resume_config,
            starts,
            vec![
                done_prior,
                Recorded {
                    received: prior,
                    ..Recorded::default()
                },
            ],
        );
        let at = checkpoint
            .state
            .as_ref()
            .map_or("the end".to_string(), |s| format!("{}", s.completed));
        assert_same_output(
            &plain[1].received,
            &resumed[1].received,
            &format!("resumed after iteration {at}"),
        );
        assert_same_output(&plain[0].received, &resumed[0].received, "finished chain");
        assert!(
            resumed[0].checkpoints.is_empty(),
            "a finished chain is not run"
        );
    }
}

#[test]
fn resume_diag_metric() {
    check(MetricKind::Diag, false, 1);
}

#[test]
fn resume_dense_metric_with_saved_warmup_and_thinning() {
    check(MetricKind::Dense, true, 3);
}

/// The gradient-based adaptations' state (windows of moments, or of draws and gradients, and
/// the last position) resumes bit for bit too, from inside either window and the final phase.
#[test]
fn resume_gradient_adaptations() {
    check_method(MetricKind::Diag, AdaptMethod::DiagGrad, true, 1);
    check_method(MetricKind::Diag, AdaptMethod::LowRank, false, 2);
}

/// A checkpoint of another model (other dimension) is refused with a clear error.
#[test]
fn checkpoint_of_another_model_is_refused() {
    let config = config(MetricKind::Diag, false, 1, 50);
    let with = run(
        &config,
        vec![ChainStart::Fresh; 2],
        vec![Recorded::default(); 2],
    );
    let (checkpoint, _) = with[0].checkpoints[0].clone();
    let other = Unconstrained::new(
        IndependentNormal {
            mean: vec![0.0; 3],
            sd: vec![1.0; 3],
        },
        "x",
    );
    let config = RunConfig {
        chains: 1,
        ..config
    };
    let sinks = vec![Box::new(CheckpointSink(Arc::default())) as Box<dyn DrawSink>];
    let report = hazel_nuts::run_from(
        &other,
        &config,
        vec![ChainStart::Resume(Box::new(checkpoint))],
        sinks,
        &NoProgress,
    )
    .expect("run starts");
    let message = report.chains[0].error.as_ref().unwrap().to_string();
    assert!(message.contains("checkpoint does not fit"), "{message}");
}

/// Lockstep groups checkpoint and resume like chains alone: checkpoints taken in a group of two
/// are those taken alone, and both chains resumed together — from the same iteration or from
/// different ones, waiting for each other or not — continue bit for bit as the uninterrupted
/// chains alone.
#[test]
fn resume_in_lockstep() {
    use hazel_nuts::Lockstep;
    let every = 13;
    let plain = run(
        &config(MetricKind::Diag, true, 2, 0),
        vec![ChainStart::Fresh; 2],
        vec![Recorded::default(); 2],
    );
    let alone = run(
        &config(MetricKind::Diag, true, 2, every),
        vec![ChainStart::Fresh; 2],
        vec![Recorded::default(); 2],
    );
    for lockstep in [Lockstep::Desynchronised, Lockstep::Masked] {
        let lockstep_config = RunConfig {
            batch_chains: 2,
            lockstep,
            ..config(MetricKind::Diag, true, 2, every)
        };
        let with = run(
            &lockstep_config,
            vec![ChainStart::Fresh; 2],
            vec![Recorded::default(); 2],
        );
        for chain in 0..2 {
            assert_same_output(&plain[chain].received, &with[chain].received, "lockstep");
            let taken: Vec<_> = with[chain]
                .checkpoints
                .iter()
                .map(|(c, _)| c.state.clone())
                .collect();
            let taken_alone: Vec<_> = alone[chain]
                .checkpoints
                .iter()
                .map(|(c, _)| c.state.clone())
                .collect();
            assert_eq!(taken, taken_alone, "the same checkpoints in lockstep");
        }
        let n = with[0].checkpoints.len();
        // Both from checkpoint i; chain 1 from checkpoint j ≠ i (not the final one, so both run).
        for (i, j) in [(0, 0), (5, 5), (n - 2, n - 2), (1, 9), (12, 3)] {
            let (c0, before0) = &with[0].checkpoints[i];
            let (c1, before1) = &with[1].checkpoints[j];
            let resumed = run(
                &lockstep_config,
                vec![
                    ChainStart::Resume(Box::new(c0.clone())),
                    ChainStart::Resume(Box::new(c1.clone())),
                ],
                vec![
                    Recorded {
                        received: before0.clone(),
                        ..Recorded::default()
                    },
                    Recorded {
                        received: before1.clone(),
                        ..Recorded::default()
                    },
                ],
            );
            for chain in 0..2 {
                assert_same_output(
                    &plain[chain].received,
                    &resumed[chain].received,
                    &format!("{lockstep:?}: resumed from checkpoints {i} and {j}"),
                );
            }
        }
    }
}
