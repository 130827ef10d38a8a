//! The sharded executor (`--distribute data`): every rank of an in-process fake world (threads,
//! `hazel_comm::fake`) evaluates a chain's log density and gradient together, and each rank
//! gets the reference executor's bits — value, gradient and error — for 1 to 4 ranks.
//!
//! The models cover every kind of row op (fused GLM, elementwise ops with broadcast scalar
//! parameters, a gather of group effects, a data matrix times a parameter vector, sums, a
//! density with only scalar parameters) and one whose row values are also read whole (so
//! fewer ops split). Faults: a rank that dies mid-run, and a chain that stops on one rank,
//! end the others' evaluations with a fatal error naming the rank.
//!
//! Blind spot: the fake world delivers messages as MPI would but not with MPI's timing; the
//! MPI backend itself is exercised by `hazel-cli`'s `mpi_cli` tests under mpirun.

mod common;

use common::Xorshift;
use hazel_comm::fake::FakeWorld;
use hazel_comm::Comm;
use hazel_density::{EvalError, EvalErrorKind, LogDensity};
use hazel_graph::{CompileOptions, CompiledModel, SimdLevel};
use std::sync::Arc;
use std::thread;

fn list(v: impl Iterator<Item = String>) -> String {
    format!("[{}]", v.collect::<Vec<_>>().join(","))
}

/// A model and data with its row count, the number of ops that must split, and points.
struct Case {
    name: &'static str,
    program: &'static str,
    data: String,
    min_row_ops: usize,
}

fn cases() -> Vec<Case> {
    let mut r = Xorshift(0x51_7cc1_b727_220a);
    let n = 10_007; // five chunks, the last one short
    let k = 5;
    let x: Vec<Vec<f64>> = (0..n)
        .map(|_| (0..k).map(|_| 2.0 * r.centred()).collect())
        .collect();
    let xs = list(
        x.iter()
            .map(|row| list(row.iter().map(|v| format!("{v:.6}")))),
    );
    let z = list((0..n).map(|_| ((r.centred() > 0.0) as u8).to_string()));
    let y = list((0..n).map(|_| format!("{:.6}", 3.0 * r.centred())));
    let x1 = list((0..n).map(|_| format!("{:.6}", 4.0 * r.centred())));
    let counts = list((0..n).map(|_| (((r.centred() + 0.5) * 9.0) as u32).to_string()));
    let groups = list((0..n).map(|i| (1 + (i * 7) % 23).to_string()));
    vec![
        Case {
            name: "logistic regression (fused GLM)",
            program: r#"
data { int N; int K; matrix[N, K] X; array[N] int<lower=0, upper=1> z; }
parameters { real alpha; vector[K] beta; }
model {
  alpha ~ normal(0, 2);
  beta ~ normal(0, 1);
  z ~ bernoulli_logit(X * beta + alpha);
}"#,
            data: format!(r#"{{"N": {n}, "K": {k}, "X": {xs}, "z": {z}}}"#),
            min_row_ops: 1,
        },
        Case {
            name: "linear regression (elementwise with scalar parameters)",
            program: r#"
data { int N; vector[N] x; vector[N] y; }
parameters { real a; real b; real<lower=0> sigma; }
model {
  a ~ normal(0, 5); b ~ normal(0, 5); sigma ~ exponential(1);
  y ~ normal(a + b * x, sigma);
  target += -0.001 * sum(square(y - a));
}"#,
            data: format!(r#"{{"N": {n}, "x": {x1}, "y": {y}}}"#),
            min_row_ops: 6,
        },
        Case {
            name: "hierarchical regression (gather, data matrix times vector)",
            program: r#"
data { int N; int K; int J; matrix[N, K] X; array[N] int<lower=1, upper=J> g; vector[N] y; }
parameters { vector[J] a; vector[K] b; real<lower=0> tau; real<lower=0> sigma; }
model {
  tau ~ exponential(1); sigma ~ exponential(1);
  a ~ normal(0, tau); b ~ normal(0, 1);
  y ~ normal(a[g] + X * b, sigma);
}"#,
            data: format!(r#"{{"N": {n}, "K": {k}, "J": 23, "X": {xs}, "g": {groups}, "y": {y}}}"#),
            min_row_ops: 3,
        },
        Case {
            name: "poisson counts with a log link on a covariate",
            program: r#"
data { int N; vector[N] x; array[N] int<lower=0> c; }
parameters { real mu; real<lower=0> s; }
model {
  mu ~ normal(1, 1); s ~ normal(0, 0.5);
  c ~ poisson(exp(mu + s * x));
}"#,
            data: format!(r#"{{"N": {n}, "x": {x1}, "c": {counts}}}"#),
            min_row_ops: 4,
        },
        Case {
            name: "row values also read whole (fewer ops split)",
            program: r#"
data { int N; vector[N] x; vector[N] y; }
parameters { real a; real b; real<lower=0> sigma; }
model {
  vector[N] mu = a + b * x;
  y ~ normal(mu, sigma);
  target += normal_lpdf(mu[N] | 0, 10);
  target += 1e-3 * log_sum_exp(mu);
  x ~ normal(0, 10 * sigma);
}"#,
            data: format!(r#"{{"N": {n}, "x": {x1}, "y": {y}}}"#),
            min_row_ops: 1,
        },
    ]
}

fn points(dim: usize, count: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut r = Xorshift(seed);
    (0..count)
        .map(|_| (0..dim).map(|_| 1.5 * r.centred()).collect())
        .collect()
}

type Outcome = Result<(u64, Vec<u64>), EvalError>;

fn bits(r: Result<f64, EvalError>, grad: &[f64]) -> Outcome {
    r.map(|lp| (lp.to_bits(), grad.iter().map(|g| g.to_bits()).collect()))
}

/// The reference executor's outcome at each point.
fn reference(model: &CompiledModel, qs: &[Vec<f64>]) -> Vec<Outcome> {
    let mut ws = model.new_workspace();
    let mut grad = vec![0.0; model.dim()];
    qs.iter()
        .map(|q| bits(model.log_density_gradient(&mut ws, q, &mut grad), &grad))
        .collect()
}

/// The outcomes at `qs` in turn, up to the first fatal error (after which a sampler ends the
/// chain, dropping its workspace).
fn evaluate(
    model: &CompiledModel,
    ws: &mut hazel_graph::Workspace,
    qs: &[Vec<f64>],
) -> Vec<Outcome> {
    let mut grad = vec![0.0; model.dim()];
    let mut out = Vec::new();
    for q in qs {
        let r = model.log_density_gradient(ws, q, &mut grad);
        let fatal = matches!(&r, Err(e) if e.is_fatal());
        out.push(bits(r, &grad));
        if fatal {
            break;
        }
    }
    out
}

/// Every rank's outcomes at every point, chain `chain` of a world of `ranks`.
fn sharded(case: &Case, ranks: usize, qs: &[Vec<f64>], world: &FakeWorld) -> Vec<Vec<Outcome>> {
    sharded_at(case, ranks, qs, world, SimdLevel::Auto)
}

/// [`sharded`] with the kernels at instruction set `simd`.
fn sharded_at(
    case: &Case,
    ranks: usize,
    qs: &[Vec<f64>],
    world: &FakeWorld,
    simd: SimdLevel,
) -> Vec<Vec<Outcome>> {
    let handles: Vec<_> = (0..ranks)
        .map(|rank| {
            let comm: Arc<dyn Comm> = Arc::new(world.comm(rank));
            let (program, data, qs) = (case.program, case.data.clone(), qs.to_vec());
            thread::spawn(move || {
                let options = CompileOptions {
                    simd,
                    ..CompileOptions::default()
                };
                let mut model = common::build_with(program, &data, &options).unwrap();
                model.distribute_over(comm);
                let mut ws = model.new_chain_workspace(7);
                evaluate(&model, &mut ws, &qs)
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

#[test]
fn every_rank_count_gives_the_reference_bits() {
    for case in cases() {
        let model = common::build(case.program, &case.data).unwrap();
        let plan = model.shard_plan().expect("a static model");
        assert!(
            plan.row_ops() >= case.min_row_ops,
            "{}: {} ops split, expected at least {}",
            case.name,
            plan.row_ops(),
            case.min_row_ops
        );
        let mut qs = points(model.dim(), 4, 0x2545_f491_4f6c_dd1d);
        // A point where every density fails (a scale of exp(-800) = 0): the error must match.
        let mut bad = qs[0].clone();
        for (i, v) in bad.iter_mut().enumerate() {
            if i + 1 == model.dim() {
                *v = -800.0;
            }
        }
        qs.push(bad);
        let expected = reference(&model, &qs);
        assert!(expected[..4].iter().all(|o| o.is_ok()), "{}", case.name);
        for ranks in 1..=4 {
            let world = FakeWorld::new(ranks);
            for (rank, got) in sharded(&case, ranks, &qs, &world).iter().enumerate() {
                assert_eq!(
                    got, &expected,
                    "{}: rank {rank} of {ranks} differs from the reference executor",
                    case.name
                );
            }
        }
    }
}

/// The ranks' per-chunk partial sums, folded in chunk order, give the whole-vector
/// reductions' bits at every instruction set: each level's sharded run (3 ranks) equals the
/// reference executor at SSE2.
#[test]
fn every_simd_level_gives_the_reference_bits() {
    let levels = SimdLevel::available();
    eprintln!("simd levels available here: {levels:?}");
    for case in cases() {
        let options = CompileOptions {
            simd: SimdLevel::Sse2,
            ..CompileOptions::default()
        };
        let model = common::build_with(case.program, &case.data, &options).unwrap();
        let qs = points(model.dim(), 3, 0x9e37_79b9_7f4a_7c15);
        let expected = reference(&model, &qs);
        for &level in &levels {
            let world = FakeWorld::new(3);
            for (rank, got) in sharded_at(&case, 3, &qs, &world, level).iter().enumerate() {
                assert_eq!(
                    got, &expected,
                    "{}: rank {rank} of 3 at {level:?} differs from the reference at SSE2",
                    case.name
                );
            }
        }
    }
}

/// A data value in the fourth chunk makes the density fail there only: the rank that owns it
/// finds the error, and every rank reports the reference executor's error.
#[test]
fn an_error_in_one_rank_s_chunk_reaches_every_rank() {
    let n = 10_000;
    let w = list((0..n).map(|i| if i == 7_001 { "-1".into() } else { "1".into() }));
    let c = list((0..n).map(|i| (i % 5).to_string()));
    let case = Case {
        name: "poisson with one negative rate",
        program: r#"
data { int N; vector[N] w; array[N] int<lower=0> c; }
parameters { real<lower=0> lambda; }
model { c ~ poisson(lambda * w); }"#,
        data: format!(r#"{{"N": {n}, "w": {w}, "c": {c}}}"#),
        min_row_ops: 2,
    };
    let model = common::build(case.program, &case.data).unwrap();
    let qs = vec![vec![0.3]];
    let expected = reference(&model, &qs);
    let err = expected[0].as_ref().expect_err("a negative rate fails");
    assert!(err.message.contains("7002"), "{}", err.message);
    for ranks in 1..=3 {
        let world = FakeWorld::new(ranks);
        for got in sharded(&case, ranks, &qs, &world) {
            assert_eq!(got, expected, "{ranks} ranks");
        }
    }
}

/// Two chains per rank at once, each on its own tag: neither sees the other's messages.
#[test]
fn chains_on_threads_keep_to_their_own_channels() {
    let case = cases().remove(2);
    let model = common::build(case.program, &case.data).unwrap();
    let qs = points(model.dim(), 3, 99);
    let expected = reference(&model, &qs);
    let world = FakeWorld::new(3);
    let handles: Vec<_> = (0..3)
        .map(|rank| {
            let comm: Arc<dyn Comm> = Arc::new(world.comm(rank));
            let (program, data, qs) = (case.program, case.data.clone(), qs.clone());
            thread::spawn(move || {
                let mut model = common::build(program, &data).unwrap();
                model.distribute_over(comm);
                let model = Arc::new(model);
                let chains: Vec<_> = [1u64, 2]
                    .into_iter()
                    .map(|chain| {
                        let (model, qs) = (model.clone(), qs.clone());
                        thread::spawn(move || {
                            let mut ws = model.new_chain_workspace(chain);
                            let mut grad = vec![0.0; model.dim()];
                            // The chains visit the points in opposite orders.
                            let mut order: Vec<usize> = (0..qs.len()).collect();
                            if chain == 2 {
                                order.reverse();
                            }
                            let mut out = vec![None; qs.len()];
                            for i in order {
                                let r = model.log_density_gradient(&mut ws, &qs[i], &mut grad);
                                out[i] = Some(bits(r, &grad));
                            }
                            out.into_iter().map(Option::unwrap).collect::<Vec<_>>()
                        })
                    })
                    .collect();
                chains
                    .into_iter()
                    .map(|h| h.join().unwrap())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for h in handles {
        for got in h.join().unwrap() {
            assert_eq!(got, expected);
        }
    }
}

fn fatal_naming(r: &Outcome, what: &str) -> bool {
    matches!(r, Err(e) if e.kind == EvalErrorKind::Fatal && e.message.contains(what))
}

/// Rank 2 dies after a few messages: the others' next evaluation fails with a fatal error
/// naming it (so the run stops), never a hang or a wrong value.
#[test]
fn a_rank_that_dies_stops_the_others_with_its_name() {
    let case = cases().remove(0);
    let model = common::build(case.program, &case.data).unwrap();
    let qs = points(model.dim(), 6, 5);
    let expected = reference(&model, &qs);
    let world = FakeWorld::new(3);
    // One fold per evaluation, each rank sending one message per fold (the last rank two):
    // rank 2 makes it through three evaluations.
    world.kill_after(2, 6);
    let got = sharded(&case, 3, &qs, &world);
    for (rank, outcomes) in got.iter().enumerate() {
        assert_eq!(outcomes[..3], expected[..3], "rank {rank}");
        let failed = &outcomes[3];
        if rank < 2 {
            assert!(
                fatal_naming(failed, "lost rank 2"),
                "rank {rank}: {failed:?}"
            );
        } else {
            assert!(failed.is_err(), "the dead rank's own evaluation fails");
        }
    }
}

/// A chain that stops on one rank (here: its workspace is dropped after two evaluations)
/// stops on the others at their next exchange.
#[test]
fn a_chain_stopped_on_one_rank_stops_on_all() {
    let case = cases().remove(1);
    let model = common::build(case.program, &case.data).unwrap();
    let qs = points(model.dim(), 4, 11);
    let world = FakeWorld::new(3);
    let handles: Vec<_> = (0..3)
        .map(|rank| {
            let comm: Arc<dyn Comm> = Arc::new(world.comm(rank));
            let (program, data, qs) = (case.program, case.data.clone(), qs.clone());
            thread::spawn(move || {
                let mut model = common::build(program, &data).unwrap();
                model.distribute_over(comm);
                let mut ws = model.new_chain_workspace(3);
                let stop_after = if rank == 1 { 2 } else { qs.len() };
                evaluate(&model, &mut ws, &qs[..stop_after])
            })
        })
        .collect();
    let got: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(got[1].iter().all(|o| o.is_ok()));
    for rank in [0, 2] {
        assert!(got[rank][..2].iter().all(|o| o.is_ok()), "rank {rank}");
        assert!(
            fatal_naming(&got[rank][2], "rank 1 stopped this chain"),
            "rank {rank}: {:?}",
            got[rank][2]
        );
    }
}
