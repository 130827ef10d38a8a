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

// ---------------------------------------------------------------------------------------------
// The runner's lockstep groups (`RunConfig::batch_chains`): whole runs, every sink call compared.

use common::{FailingSink, MemorySink, Received};
use hazel_density::{EvalErrorKind, Unconstrained};
use hazel_nuts::{
    Algorithm, ChainError, DrawSink, Init, InitError, Lockstep, NoProgress, RunConfig, RunReport,
    SamplerConfig,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A correlated normal in 3 dimensions that rejects `x.1 < -1.2` (a `reject` on the
/// trajectory: a divergence, with a message) and raises a fatal error beyond `fatal_beyond`
/// in `x.2`. Its batched entry point records the batch sizes it was given.
struct Awkward {
    fatal_beyond: f64,
    largest_batch: AtomicUsize,
    batches: AtomicUsize,
}

impl Awkward {
    fn new(fatal_beyond: f64) -> Self {
        Awkward {
            fatal_beyond,
            largest_batch: AtomicUsize::new(0),
            batches: AtomicUsize::new(0),
        }
    }
}

impl LogDensity for Awkward {
    type Workspace = ();
    fn dim(&self) -> usize {
        3
    }
    fn new_workspace(&self) {}
    fn log_density_gradient(&self, _: &mut (), q: &[f64], g: &mut [f64]) -> Result<f64, EvalError> {
        if q[0] < -1.2 {
            return Err(EvalError::reject("x.1 is below -1.2"));
        }
        if q[1].abs() > self.fatal_beyond {
            return Err(EvalError::new(EvalErrorKind::Fatal, "x.2 out of range"));
        }
        // Precision matrix [[2, 0.8, 0], [0.8, 1, 0.3], [0, 0.3, 0.5]].
        let (a, b, c) = (q[0], q[1], q[2]);
        g[0] = -(2.0 * a + 0.8 * b);
        g[1] = -(0.8 * a + b + 0.3 * c);
        g[2] = -(0.3 * b + 0.5 * c);
        Ok(0.5 * (a * g[0] + b * g[1] + c * g[2]))
    }
    fn log_density_gradient_batch(
        &self,
        ws: &mut [()],
        qs: &[f64],
        grads: &mut [f64],
        out: &mut [Result<f64, EvalError>],
    ) {
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.largest_batch.fetch_max(out.len(), Ordering::Relaxed);
        for (i, o) in out.iter_mut().enumerate() {
            *o = self.log_density_gradient(
                &mut ws[i],
                &qs[i * 3..(i + 1) * 3],
                &mut grads[i * 3..(i + 1) * 3],
            );
        }
    }
}

fn run_config(chains: usize, batch: usize, lockstep: Lockstep) -> RunConfig {
    RunConfig {
        seed: 19,
        chains,
        threads: 2,
        sampler: SamplerConfig {
            num_warmup: 160,
            num_samples: 120,
            save_warmup: true,
            thin: 2,
            init: Init::Radius(1.0),
            ..SamplerConfig::default()
        },
        batch_chains: batch,
        lockstep,
        ..RunConfig::default()
    }
}

/// Runs `model` into memory sinks.
fn run_model<M: hazel_density::Model>(model: &M, config: &RunConfig) -> (RunReport, Vec<Received>) {
    let handles: Vec<Arc<Mutex<Received>>> = (0..config.chains).map(|_| Arc::default()).collect();
    let sinks: Vec<Box<dyn DrawSink>> = handles
        .iter()
        .map(|h| Box::new(MemorySink(h.clone())) as Box<dyn DrawSink>)
        .collect();
    let report = hazel_nuts::run(model, config, sinks, &NoProgress).expect("run starts");
    let received = handles.iter().map(|h| h.lock().unwrap().clone()).collect();
    (report, received)
}

/// Everything a sink received, as bits (NaN-safe equality).
fn bits(r: &Received) -> Vec<u64> {
    let mut v: Vec<u64> = vec![r.finished as u64, r.names.len() as u64];
    for d in &r.draws {
        v.extend(d.bits());
    }
    if let Some((stepsize, metric)) = &r.adaptation {
        v.push(stepsize.to_bits());
        v.extend(format!("{metric:?}").bytes().map(u64::from));
    }
    v
}

/// What a report says of each chain, timing aside.
fn summary(report: &RunReport) -> Vec<String> {
    report
        .chains
        .iter()
        .map(|c| {
            format!(
                "{} {} {} {} {} {} {:?} {:?}",
                c.chain_id,
                c.iterations,
                c.draws_written,
                c.warmup_divergences,
                c.divergences,
                c.max_treedepth_hits,
                c.stepsize.map(f64::to_bits),
                c.error.as_ref().map(|e| e.to_string())
            )
        })
        .collect()
}

/// Five chains alone, in groups of 2 (the last alone), 4 and 5, waiting or desynchronised:
/// every sink receives the same bits, and every report says the same; the groups' evaluations
/// were batched.
#[test]
fn lockstep_groups_write_what_chains_alone_write() {
    for metric in [hazel_nuts::MetricKind::Diag, hazel_nuts::MetricKind::Dense] {
        let with_metric = |mut c: RunConfig| {
            c.sampler.metric = metric;
            c
        };
        let model = Unconstrained::new(Awkward::new(f64::INFINITY), "x");
        let (report, alone) =
            run_model(&model, &with_metric(run_config(5, 1, Lockstep::default())));
        assert!(report.all_ok(), "{:?}", report.chains);
        assert_eq!(model.density.batches.load(Ordering::Relaxed), 0);
        let divergent: usize = report
            .chains
            .iter()
            .map(|c| c.warmup_divergences + c.divergences)
            .sum();
        assert!(divergent > 0, "the rejections are divergences");
        for batch in [2, 4, 5] {
            for lockstep in [Lockstep::Desynchronised, Lockstep::Masked] {
                let model = Unconstrained::new(Awkward::new(f64::INFINITY), "x");
                let config = with_metric(run_config(5, batch, lockstep));
                let (batched_report, batched) = run_model(&model, &config);
                let what = format!("{metric:?}, batches of {batch}, {lockstep:?}");
                assert_eq!(summary(&report), summary(&batched_report), "{what}");
                for (c, (a, b)) in alone.iter().zip(&batched).enumerate() {
                    assert!(bits(a) == bits(b), "{what}: chain {} differs", c + 1);
                }
                assert_eq!(
                    model.density.largest_batch.load(Ordering::Relaxed),
                    batch,
                    "{what}: a round evaluates the whole group"
                );
            }
        }
    }
}

/// Desynchronised groups need fewer rounds than masked ones: a chain whose trajectory is short
/// does not wait for the longest.
#[test]
fn desynchronised_groups_need_fewer_rounds() {
    let rounds = |lockstep| {
        let model = Unconstrained::new(Awkward::new(f64::INFINITY), "x");
        run_model(&model, &run_config(4, 4, lockstep));
        model.density.batches.load(Ordering::Relaxed)
    };
    let (desync, masked) = (rounds(Lockstep::Desynchronised), rounds(Lockstep::Masked));
    assert!(
        desync < masked,
        "{desync} rounds desynchronised, {masked} masked"
    );
}

/// A chain that finds no starting point leaves its group at once, a chain whose sink fails
/// stops alone; the others write what they write alone.
#[test]
fn a_failing_chain_leaves_its_group() {
    // Chain 2 starts where the model rejects: its one attempt fails.
    let rows = vec![
        vec![0.5, 0.1, 0.0],
        vec![-2.0, 0.0, 0.0],
        vec![0.0, 0.3, -0.2],
    ];
    let config = |batch| RunConfig {
        sampler: SamplerConfig {
            init: Init::Unconstrained(rows.clone()),
            ..run_config(3, batch, Lockstep::Desynchronised).sampler
        },
        ..run_config(3, batch, Lockstep::Desynchronised)
    };
    let model = Unconstrained::new(Awkward::new(f64::INFINITY), "x");
    let (report, alone) = run_model(&model, &config(1));
    let (batched_report, batched) = run_model(&model, &config(3));
    assert!(matches!(
        batched_report.chains[1].error,
        Some(ChainError::Init(InitError::Failed { attempts: 1, .. }))
    ));
    assert_eq!(summary(&report), summary(&batched_report));
    for (a, b) in alone.iter().zip(&batched) {
        assert!(bits(a) == bits(b));
    }
    assert!(
        !batched[1].finished && batched[1].names.is_empty(),
        "never begun"
    );

    // A sink failing at its 10th draw, in a group of three.
    let config = run_config(3, 3, Lockstep::Desynchronised);
    let (_, alone) = run_model(&model, &config);
    let handles: Vec<Arc<Mutex<Received>>> = (0..3).map(|_| Arc::default()).collect();
    let sinks: Vec<Box<dyn DrawSink>> = vec![
        Box::new(MemorySink(handles[0].clone())),
        Box::new(FailingSink(0)),
        Box::new(MemorySink(handles[2].clone())),
    ];
    let report = hazel_nuts::run(&model, &config, sinks, &NoProgress).unwrap();
    assert!(
        matches!(&report.chains[1].error, Some(ChainError::Sink(e)) if e.to_string() == "disk full")
    );
    assert_eq!(report.chains[1].draws_written, 9);
    for c in [0, 2] {
        assert!(report.chains[c].error.is_none());
        assert!(bits(&alone[c]) == bits(&handles[c].lock().unwrap()));
    }
}

/// A fatal error in one lane stops its chain with the error and the rest of the group before
/// their next iteration; every begun sink is finished and the failing chain's draws up to the
/// error are the ones it makes alone.
#[test]
fn a_fatal_error_in_one_lane_stops_the_group() {
    let mut config = run_config(3, 1, Lockstep::Desynchronised);
    config.threads = 1;
    config.sampler.adapt.engaged = false;
    config.sampler.stepsize = 0.6;
    let model = Unconstrained::new(Awkward::new(2.2), "x");
    let (alone_report, alone) = run_model(&model, &config);
    config.batch_chains = 3;
    let (report, batched) = run_model(&model, &config);
    let fatal: Vec<u64> = report
        .chains
        .iter()
        .filter(|c| matches!(c.error, Some(ChainError::Fatal { .. })))
        .map(|c| c.chain_id)
        .collect();
    assert!(!fatal.is_empty(), "{:?}", report.chains);
    assert!(alone_report
        .chains
        .iter()
        .any(|c| matches!(c.error, Some(ChainError::Fatal { .. }))));
    for k in 0..3 {
        assert!(batched[k].finished, "chain {} finished its sink", k + 1);
        match &report.chains[k].error {
            Some(ChainError::Fatal { iteration, error }) => {
                assert!(error.message.contains("out of range"));
                assert_eq!(report.chains[k].iterations, iteration - 1);
                assert_eq!(report.chains[k].draws_written, batched[k].draws.len());
            }
            // Stopped by one of the chains that met the error (a chain may meet it too while
            // it ends the iteration it was in).
            Some(ChainError::Stopped { by_chain, .. }) => assert!(fatal.contains(by_chain)),
            other => panic!("chain {}: {other:?}", k + 1),
        }
        // Whatever stopped it, a chain's draws are the ones it makes alone (alone, one thread,
        // later chains are stopped before they start).
        let n = alone[k].draws.len().min(batched[k].draws.len());
        assert_eq!(alone[k].draws[..n], batched[k].draws[..n]);
    }
    assert!(batched.iter().any(|b| !b.draws.is_empty()));
}

/// The fixed_param sampler in a lockstep group: no evaluations to batch, the same output.
#[test]
fn fixed_param_in_lockstep() {
    let mut config = run_config(3, 1, Lockstep::Desynchronised);
    config.sampler.algorithm = Algorithm::FixedParam;
    config.sampler.num_warmup = 0;
    config.sampler.save_warmup = false;
    let model = Unconstrained::new(Awkward::new(f64::INFINITY), "x");
    let (_, alone) = run_model(&model, &config);
    for lockstep in [Lockstep::Desynchronised, Lockstep::Masked] {
        config.batch_chains = 3;
        config.lockstep = lockstep;
        let (report, batched) = run_model(&model, &config);
        assert!(report.all_ok());
        for (a, b) in alone.iter().zip(&batched) {
            assert_eq!(a.draws.len(), 60);
            assert!(bits(a) == bits(b));
        }
    }
}
