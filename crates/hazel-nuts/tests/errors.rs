//! Failures: initialisation errors are one clear message, model errors on a trajectory are
//! rejections (divergences) reported through `Progress::message`, fatal errors and sink errors
//! stop one chain without disturbing the others.

mod common;

use common::*;
use hazel_density::{EvalError, LogDensity, Unconstrained};
use hazel_nuts::{
    ChainError, DrawSink, Init, InitError, NoProgress, RunConfig, RunError, SamplerConfig,
};
use std::sync::{Arc, Mutex};

/// A standard normal in `dim` dimensions with a configurable failure.
struct Faulty {
    dim: usize,
    fault: Fault,
}

enum Fault {
    /// Log density −∞ everywhere.
    NegInfEverywhere,
    /// The third gradient component is NaN everywhere.
    NanGradient3,
    /// `reject` everywhere.
    RejectEverywhere,
    /// `reject` where x.1 < −1 (a truncated normal).
    RejectBelow,
    /// A fatal error where |x.1| > 2.5.
    FatalOutside,
    /// Log density −∞ at the origin only.
    NegInfAtOrigin,
}

impl LogDensity for Faulty {
    type Workspace = ();
    fn dim(&self) -> usize {
        self.dim
    }
    fn new_workspace(&self) {}
    fn log_density_gradient(&self, _: &mut (), q: &[f64], g: &mut [f64]) -> Result<f64, EvalError> {
        let mut lp = 0.0;
        for (gi, &qi) in g.iter_mut().zip(q) {
            *gi = -qi;
            lp -= 0.5 * qi * qi;
        }
        match self.fault {
            Fault::NegInfEverywhere => Ok(f64::NEG_INFINITY),
            Fault::NanGradient3 => {
                g[2] = f64::NAN;
                Ok(lp)
            }
            Fault::RejectEverywhere => Err(EvalError::reject("sigma must be positive")),
            Fault::RejectBelow if q[0] < -1.0 => Err(EvalError::reject("x.1 below -1")),
            Fault::FatalOutside if q[0].abs() > 2.5 => Err(EvalError::new(
                hazel_density::EvalErrorKind::Fatal,
                "fatal_error: out of range",
            )),
            Fault::NegInfAtOrigin if q.iter().all(|&x| x == 0.0) => Ok(f64::NEG_INFINITY),
            _ => Ok(lp),
        }
    }
}

fn config(chains: usize) -> RunConfig {
    let sampler = SamplerConfig {
        num_warmup: 200,
        num_samples: 200,
        ..SamplerConfig::default()
    };
    RunConfig {
        seed: 1,
        chains,
        threads: 0,
        first_chain_id: 1,
        sampler,
        ..RunConfig::default()
    }
}

fn init_error(fault: Fault) -> String {
    let progress = RecordingProgress::default();
    let (report, chains) = run_in_memory(Faulty { dim: 4, fault }, &config(2), &progress);
    assert!(
        progress.messages.lock().unwrap().is_empty(),
        "no per-attempt lines"
    );
    let mut messages = Vec::new();
    for (r, c) in report.chains.iter().zip(&chains) {
        match &r.error {
            Some(ChainError::Init(e @ InitError::Failed { attempts: 100, .. })) => {
                messages.push(e.to_string())
            }
            other => panic!("expected an init failure, got {other:?}"),
        }
        assert!(
            c.draws.is_empty() && c.names.is_empty() && !c.finished,
            "the sink never started"
        );
    }
    assert_eq!(messages[0], messages[1]);
    messages.pop().unwrap()
}

#[test]
fn init_failure_is_one_clear_error() {
    let m = init_error(Fault::NegInfEverywhere);
    assert!(
        m.contains("log density is -inf") && m.contains("100 attempts"),
        "{m}"
    );
    assert_eq!(m.lines().count(), 1);
    let m = init_error(Fault::NanGradient3);
    assert!(
        m.contains("gradient component 3 is NaN") && m.contains("100 attempts"),
        "{m}"
    );
    let m = init_error(Fault::RejectEverywhere);
    assert!(
        m.contains("sigma must be positive") && m.contains("100 rejected"),
        "{m}"
    );
}

#[test]
fn bad_explicit_init_fails_only_its_chain() {
    let mut config = config(3);
    config.sampler.init = Init::Unconstrained(vec![vec![0.5; 2], vec![0.0; 2], vec![-0.5; 2]]);
    let (report, chains) = run_in_memory(
        Faulty {
            dim: 2,
            fault: Fault::NegInfAtOrigin,
        },
        &config,
        &NoProgress,
    );
    match &report.chains[1].error {
        Some(ChainError::Init(e)) => {
            assert_eq!(
                e.to_string(),
                "initialization failed after 1 attempt: log density is -inf"
            )
        }
        other => panic!("{other:?}"),
    }
    for k in [0, 2] {
        assert!(report.chains[k].error.is_none());
        assert_eq!(chains[k].draws.len(), 200);
    }
    // Wrong shapes are refused before anything runs.
    config.sampler.init = Init::Unconstrained(vec![vec![0.5; 2], vec![0.5; 2]]);
    let model = Unconstrained::new(
        Faulty {
            dim: 2,
            fault: Fault::NegInfAtOrigin,
        },
        "x",
    );
    let sinks = || {
        (0..3)
            .map(|_| Box::new(MemorySink(Arc::default())) as Box<dyn DrawSink>)
            .collect()
    };
    assert!(matches!(
        hazel_nuts::run(&model, &config, sinks(), &NoProgress),
        Err(RunError::Config(_))
    ));
    config.sampler.init = Init::Unconstrained(vec![vec![0.5; 3]]);
    let report = hazel_nuts::run(&model, &config, sinks(), &NoProgress).unwrap();
    assert!(matches!(
        report.chains[0].error,
        Some(ChainError::Init(InitError::Dimension {
            expected: 2,
            found: 3
        }))
    ));
    config.sampler.init = Init::Radius(2.0);
    config.sampler.thin = 0;
    assert!(matches!(
        hazel_nuts::run(&model, &config, sinks(), &NoProgress),
        Err(RunError::Config(_))
    ));
    assert!(matches!(
        hazel_nuts::run(
            &model,
            &RunConfig {
                chains: 2,
                ..config.clone()
            },
            sinks(),
            &NoProgress
        ),
        Err(RunError::SinkCount {
            chains: 2,
            sinks: 3
        })
    ));
}

/// Rejections on a trajectory are divergences, not failures; the sampler then draws from the
/// density restricted to where it evaluates: a normal truncated to x.1 ≥ −1.
#[test]
fn model_rejections_are_divergences_and_reported() {
    let mut config = config(4);
    config.sampler.num_samples = 1000;
    config.sampler.init = Init::Radius(0.5);
    let progress = RecordingProgress::default();
    let (report, chains) = run_in_memory(
        Faulty {
            dim: 2,
            fault: Fault::RejectBelow,
        },
        &config,
        &progress,
    );
    assert!(report.all_ok());
    let x1 = column(&chains, 0);
    assert!(x1.iter().flatten().all(|&x| x >= -1.0));
    // Standard normal truncated below at a = −1: mean φ(a)/(1 − Φ(a)) = φ(1)/Φ(1),
    // variance 1 + a φ(a)/(1 − Φ(a)) − mean² = 1 − mean − mean².
    let (phi, cdf) = (0.24197072451914337, 0.8413447460685429);
    let mean = phi / cdf;
    let var = 1.0 - mean - mean * mean;
    check_moments(&x1, mean, var, 4.0, 4.5, "truncated x.1").unwrap();
    let divergent = chains
        .iter()
        .flat_map(|c| &c.draws)
        .filter(|d| d.stats.divergent)
        .count();
    assert!(divergent > 0);
    let messages = progress.messages.lock().unwrap();
    assert!(
        !messages.is_empty() && messages.iter().all(|(_, m)| m.contains("x.1 below -1")),
        "{messages:?}"
    );
}

/// A fatal error stops the run: its chain reports the error, the other chain stops before its
/// next iteration; draws written before stay written and begun sinks are finished.
#[test]
fn fatal_error_stops_the_run() {
    let mut config = config(2);
    config.threads = 1; // chains run one after the other, so the second sees the stop at once
    config.sampler.init = Init::Radius(0.5);
    // Without adaptation, so that the error comes from a trajectory, not the step-size search.
    config.sampler.adapt.engaged = false;
    config.sampler.stepsize = 0.5;
    config.sampler.save_warmup = true;
    let (report, chains) = run_in_memory(
        Faulty {
            dim: 2,
            fault: Fault::FatalOutside,
        },
        &config,
        &NoProgress,
    );
    let fatal: Vec<usize> = (0..2)
        .filter(|&k| matches!(report.chains[k].error, Some(ChainError::Fatal { .. })))
        .collect();
    assert_eq!(fatal.len(), 1, "{:?}", report.chains);
    let (f, other) = (fatal[0], 1 - fatal[0]);
    let r = &report.chains[f];
    match &r.error {
        Some(ChainError::Fatal { iteration, error }) => {
            assert!(error.message.contains("out of range"));
            assert!(
                *iteration > 1 && *iteration <= 400 && r.iterations == iteration - 1,
                "{iteration}"
            );
            assert_eq!(
                r.draws_written,
                iteration - 1,
                "every iteration before the error was kept"
            );
        }
        _ => unreachable!(),
    }
    assert!(chains[f].finished);
    assert_eq!(chains[f].draws.len(), r.draws_written);
    match &report.chains[other].error {
        Some(e @ ChainError::Stopped { by_chain, .. }) => {
            assert_eq!(*by_chain, r.chain_id);
            assert!(e.to_string().contains("fatal error in chain"));
        }
        e => panic!("expected the other chain to be stopped, got {e:?}"),
    }
}

#[test]
fn sink_failure_stops_only_its_chain() {
    let model = Unconstrained::new(
        IndependentNormal {
            mean: vec![0.0; 3],
            sd: vec![1.0; 3],
        },
        "x",
    );
    let good: Arc<Mutex<Received>> = Arc::default();
    let sinks: Vec<Box<dyn DrawSink>> =
        vec![Box::new(FailingSink(0)), Box::new(MemorySink(good.clone()))];
    let report = hazel_nuts::run(&model, &config(2), sinks, &NoProgress).unwrap();
    assert!(
        matches!(&report.chains[0].error, Some(ChainError::Sink(e)) if e.to_string() == "disk full")
    );
    assert_eq!(report.chains[0].draws_written, 9);
    assert!(report.chains[1].error.is_none());
    assert_eq!(good.lock().unwrap().draws.len(), 200);
    assert_eq!(report.failures().count(), 1);
}

/// A model without parameters (e.g. only generated quantities): every transition is one
/// trivial leapfrog step; nothing fails and every draw is written.
#[test]
fn zero_dimensional_model_runs() {
    let (report, chains) = run_in_memory(
        IndependentNormal {
            mean: vec![],
            sd: vec![],
        },
        &config(2),
        &NoProgress,
    );
    assert!(report.all_ok(), "{:?}", report.chains);
    for c in &chains {
        assert_eq!(c.draws.len(), 200);
        assert!(c
            .draws
            .iter()
            .all(|d| d.values.is_empty() && !d.stats.divergent && d.stats.lp == 0.0));
    }
}

/// Interrupts the run once chain 0 has completed `after` iterations.
struct InterruptAfter {
    after: usize,
    seen: std::sync::atomic::AtomicUsize,
}

impl hazel_nuts::Progress for InterruptAfter {
    fn iteration(&self, chain: usize, iteration: usize, _: bool, _: usize) {
        if chain == 0 {
            self.seen
                .fetch_max(iteration, std::sync::atomic::Ordering::SeqCst);
        }
    }
    fn interrupted(&self) -> bool {
        self.seen.load(std::sync::atomic::Ordering::SeqCst) >= self.after
    }
}

/// An interruption (Ctrl-C in Python) stops every chain before its next iteration; what was
/// drawn stays, sinks are finished, and a draw made before it is identical to the
/// uninterrupted run's.
#[test]
fn interruption_stops_every_chain_keeping_its_draws() {
    let mut config = config(2);
    config.threads = 1; // chain 0 runs first and is interrupted after 150 iterations
    config.sampler.num_warmup = 100;
    config.sampler.num_samples = 1000;
    let progress = InterruptAfter {
        after: 150,
        seen: Default::default(),
    };
    let density = || IndependentNormal {
        mean: vec![0.0, 1.0],
        sd: vec![1.0, 2.0],
    };
    let (report, chains) = run_in_memory(density(), &config, &progress);
    let (_, full) = run_in_memory(density(), &config, &NoProgress);
    for (k, chain) in report.chains.iter().enumerate() {
        match &chain.error {
            Some(e @ ChainError::Interrupted { iteration }) => {
                assert!(e.is_interruption() && e.to_string().contains("interrupted"));
                assert_eq!(chain.iterations, *iteration);
            }
            e => panic!("chain {k}: expected an interruption, got {e:?}"),
        }
        assert!(chains[k].finished);
    }
    assert_eq!(report.chains[0].iterations, 150);
    assert_eq!(chains[0].draws.len(), 50);
    assert_eq!(report.chains[1].iterations, 0);
    for (a, b) in chains[0].draws.iter().zip(&full[0].draws) {
        assert_eq!(a.values, b.values);
    }
}
