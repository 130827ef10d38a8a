//! `hazel sample` as one rank of a distributed run (`mpirun -np R hazel sample …`).
//!
//! Every rank parses the same command line, checks and compiles the same program with the same
//! data, and then:
//!
//! 1. **Agrees** with the others before anything is written: rank 0's seed is every rank's
//!    seed (a seed from the clock is drawn once), and each rank sends rank 0 a fingerprint —
//!    content hashes of its binary, program (with includes), data, initial values and
//!    settings — or the error it met. Rank 0 compares them and stops every rank, with one
//!    message naming the ranks and what differs, if any rank failed or differs.
//! 2. **Samples** in one of two modes ([`Mode`], `--distribute`):
//!    - `chains`: chains are split into contiguous blocks, one per rank (chain `k` of `C` on
//!      rank `⌊k·R/C⌋`); other ranks send every draw, adaptation result, checkpoint and
//!      progress line to rank 0, whose file for that chain writes it.
//!    - `data`: every rank runs every chain, and each chain's evaluations are split over the
//!      ranks by the sharded executor (`hazel_graph::exec::sharded`): each rank computes its
//!      chunks of the model's large ops, and the results are folded rank by rank in chunk
//!      order. Every rank holds the same chain states; rank 0 writes them.
//!    - `auto` (the default): `data` when the model's data-parallel work
//!      ([`hazel_graph::CompiledModel::data_parallel_work`]) is at least
//!      [`DATA_PARALLEL_MIN_WORK`] elements per gradient, `chains` otherwise.
//!
//!    Either way a chain's draws depend only on (seed, chain id, model, data, settings), so
//!    the files equal a plain `hazel sample`'s byte for byte (timing lines aside), for any
//!    number of ranks.
//! 3. **Ends** together: rank 0 writes the summary and tells every rank the outcome, so all
//!    exit with the same status; only rank 0 prints.
//!
//! Faults: a rank that dies or loses its connection stops the run with an error naming it
//! (the sharded executor's fatal error, or the forwarding channel's); under mpirun, which
//! stops every rank when one dies, `mpi_run` reports instead: rank 0 watches the processes of
//! the ranks on its machine while they sample ([`RankContext::phase`]) and names the one that
//! ends, and a rank stopped by a signal names the rank it was waiting for. Either way it ends
//! the process after the row being written (a sink holds [`RankContext::write_lock`] for each
//! call), so rows are whole. `--resume` is refused under mpirun: resume without it (a chain's
//! draws do not depend on the number of ranks, so the continued files are the same).

use crate::front::Silent;
use crate::progress::progress_for_run;
use crate::run_dir::content_hash;
use crate::sample::{
    abort_hook, chosen_seed, clock_seed, finish_run, open_output, prepare, ChainOutcome,
    DistributeArg, Finished, Prepared, SampleArgs, Voice,
};
use crate::CliResult;
use hazel_comm::wire::{Reader, Writer};
use hazel_comm::{broadcast, gather, Comm, CommError, TAG_CONTROL, TAG_FORWARD};
use hazel_draws::{
    erased_serde, AdaptationInfo, Columns, Draw, DrawSink, InverseMetric, NoProgress, Progress,
    StatColumn, StatKind, Timing,
};
use hazel_nuts::{ChainCheckpoint, ChainStart, Init};
use std::borrow::Cow;
use std::io;
use std::ops::Range;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// `--distribute auto` splits the data when the split ops touch at least this many elements
/// per gradient: about a millisecond of work, tens of times the cost of one fold across
/// machines (see `bench/README.md`, MPI).
pub(crate) const DATA_PARALLEL_MIN_WORK: u64 = 1 << 20;

/// How the ranks share a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Chains,
    Data,
}

impl Mode {
    /// The mode `--distribute` asks for, given the model's data-parallel work and whether
    /// chains run in lockstep (`--batch-chains` > 1, which `auto` serves by splitting chains:
    /// a lockstep group's batched evaluations do not go through the sharded executor).
    pub(crate) fn resolve(arg: DistributeArg, data_parallel_work: u64, lockstep: bool) -> Mode {
        match arg {
            DistributeArg::Chains => Mode::Chains,
            DistributeArg::Data => Mode::Data,
            DistributeArg::Auto if lockstep => Mode::Chains,
            DistributeArg::Auto if data_parallel_work >= DATA_PARALLEL_MIN_WORK => Mode::Data,
            DistributeArg::Auto => Mode::Chains,
        }
    }
}

/// One rank's process as seen by rank 0 (for watching it and naming it when it dies).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Peer {
    pub(crate) host: String,
    pub(crate) pid: u32,
    /// Which processes `pid` can name: the kernel's boot id and the process id namespace
    /// ([`process_space`]). Rank 0 watches a rank's process only where this equals its own (a
    /// host name alone does not say so: containers share one), and empty means unknown.
    pub(crate) process_space: String,
}

/// The boot id of the running kernel and this process's pid namespace (Linux), or an empty
/// string where they cannot be read: two processes with the same non-empty value see the same
/// process ids.
fn process_space() -> String {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id");
    let namespace = std::fs::read_link("/proc/self/ns/pid");
    match (boot, namespace) {
        (Ok(boot), Ok(namespace)) => format!("{} {}", boot.trim(), namespace.display()),
        _ => String::new(),
    }
}

/// Whether the ranks are sampling: set on every rank from the start of sampling until the
/// rank has its part of the outcome, before rank 0 tells every rank to end. While it is set no
/// rank's process ends unless it died, so `mpi_run` watches the other ranks' processes then.
#[derive(Debug, Default)]
pub(crate) struct Phase {
    sampling: Mutex<bool>,
    changed: Condvar,
}

impl Phase {
    /// Whether the ranks are sampling now. (Only `mpi_run`'s peer watcher asks.)
    #[cfg(feature = "mpi")]
    pub(crate) fn is_sampling(&self) -> bool {
        *self.sampling.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Blocks until sampling has started.
    #[cfg(feature = "mpi")]
    pub(crate) fn wait_for_sampling(&self) {
        let mut on = self.sampling.lock().unwrap_or_else(|e| e.into_inner());
        while !*on {
            on = self.changed.wait(on).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn set(&self, on: bool) {
        *self.sampling.lock().unwrap_or_else(|e| e.into_inner()) = on;
        self.changed.notify_all();
    }
}

/// Marks the ranks as sampling from its creation to its drop (an early return with an error
/// included).
struct SamplingGuard<'a>(&'a Phase);

impl<'a> SamplingGuard<'a> {
    fn begin(phase: &'a Phase) -> Self {
        phase.set(true);
        SamplingGuard(phase)
    }
}

impl Drop for SamplingGuard<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

/// What a rank runs with: the ranks, the lock every output write holds, and (filled at start)
/// where every rank runs.
pub struct RankContext {
    pub(crate) comm: Arc<dyn Comm>,
    /// Held by each call of rank 0's sinks, so that a process stopped from outside (a signal)
    /// can wait for the row being written to be whole.
    pub(crate) write_lock: Arc<Mutex<()>>,
    /// Every rank's host and process id, in rank order (rank 0 learns them at start).
    pub(crate) peers: Arc<Mutex<Vec<Peer>>>,
    /// This machine's name.
    pub(crate) host: String,
    /// Whether the ranks are sampling (set by [`run_ranks`]).
    pub(crate) phase: Arc<Phase>,
}

impl RankContext {
    pub fn new(comm: Arc<dyn Comm>, host: String) -> Self {
        RankContext {
            comm,
            write_lock: Arc::new(Mutex::new(())),
            peers: Arc::new(Mutex::new(Vec::new())),
            host,
            phase: Arc::new(Phase::default()),
        }
    }
}

/// The number of processes an MPI launcher started this one among (`None`: no launcher), from
/// the variables Open MPI, MPICH/Intel MPI (PMI) and MVAPICH set.
pub(crate) fn launched_ranks() -> Option<usize> {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.trim().parse().ok())
}

/// `hazel sample` started by mpirun among `ranks` processes.
pub(crate) fn run_launched(args: &SampleArgs, ranks: usize) -> CliResult {
    #[cfg(feature = "mpi")]
    {
        let _ = ranks;
        crate::mpi_run::run(args)
    }
    #[cfg(not(feature = "mpi"))]
    {
        if ranks > 1 {
            return Err(format!(
                "mpirun started {ranks} copies of a hazel built without MPI: each would run the                  whole job into the same files. Build it with MPI (`cargo build --release -p                  hazel-cli --features mpi`, which needs Open MPI: `apt install openmpi-bin                  libopenmpi-dev libclang-dev clang`), or run hazel without mpirun"
            )
            .into());
        }
        crate::sample::run_to(args, &mut std::io::stdout())
    }
}

/// The chains of a run of `chains` that rank `rank` of `ranks` runs in `--distribute chains`.
pub(crate) fn chain_block(chains: usize, rank: usize, ranks: usize) -> Range<usize> {
    rank * chains / ranks..(rank + 1) * chains / ranks
}

// Kinds of control messages (rank 0 and every other rank, in this order).
const SEED: u8 = 1;
const HELLO: u8 = 2;
const VERDICT: u8 = 3;
const FINAL: u8 = 4;

fn comm_err(e: CommError) -> Box<dyn std::error::Error> {
    format!("distributed run: {e}").into()
}

/// Receives rank 0's control message of kind `kind`; a rank at another step is an error.
fn recv_control(comm: &dyn Comm, kind: u8, buf: &mut Vec<u8>) -> CliResult {
    comm.recv(0, TAG_CONTROL, buf).map_err(comm_err)?;
    match buf.first() {
        Some(&k) if k == kind => Ok(()),
        _ => Err(format!(
            "distributed run: rank {} got an unexpected message from rank 0 (are all ranks the \
             same hazel?)",
            comm.rank()
        )
        .into()),
    }
}

/// Rank 0's verdict on something every rank reported: `Ok` on every rank, or rank 0 gets the
/// message and every other rank [`Silent`].
fn verdict(comm: &dyn Comm, decided: Option<Result<(), String>>) -> CliResult {
    let mut buf = Vec::new();
    if comm.rank() == 0 {
        let decided = decided.expect("rank 0 decides");
        let mut w = Writer::new(&mut buf);
        w.u8(VERDICT);
        match &decided {
            Ok(()) => w.u8(0),
            Err(_) => w.u8(1),
        };
        broadcast(comm, 0, TAG_CONTROL, &mut buf).map_err(comm_err)?;
        return decided.map_err(Into::into);
    }
    recv_control(comm, VERDICT, &mut buf)?;
    match buf.get(1) {
        Some(0) => Ok(()),
        _ => Err(Silent.into()),
    }
}

/// Content hash of this process's executable (ranks must run the same binary).
fn binary_hash() -> String {
    std::env::current_exe()
        .and_then(std::fs::read)
        .map(|bytes| content_hash(&[&bytes]))
        .unwrap_or_else(|e| format!("unreadable: {e}"))
}

/// The fingerprint fields, in the order they are compared.
const FINGERPRINT: [&str; 5] = [
    "hazel binary",
    "program",
    "data",
    "initial values",
    "settings",
];

struct Hello {
    outcome: Result<[String; 5], String>,
    peer: Peer,
}

fn encode_hello(hello: &Hello, buf: &mut Vec<u8>) {
    let mut w = Writer::new(buf);
    w.u8(HELLO)
        .str(&hello.peer.host)
        .u32(hello.peer.pid)
        .str(&hello.peer.process_space);
    match &hello.outcome {
        Ok(fields) => {
            w.u8(0);
            for f in fields {
                w.str(f);
            }
        }
        Err(message) => {
            w.u8(1).str(message);
        }
    }
}

fn decode_hello(msg: &[u8]) -> Result<Hello, CommError> {
    let mut r = Reader::new(msg);
    if r.u8()? != HELLO {
        return Err(CommError::Failed("not a start-up message".into()));
    }
    let peer = Peer {
        host: r.str()?.to_string(),
        pid: r.u32()?,
        process_space: r.str()?.to_string(),
    };
    let outcome = match r.u8()? {
        0 => {
            let mut fields: [String; 5] = Default::default();
            for f in &mut fields {
                *f = r.str()?.to_string();
            }
            Ok(fields)
        }
        _ => Err(r.str()?.to_string()),
    };
    Ok(Hello { outcome, peer })
}

/// Rank 0's reading of every rank's start-up message.
fn judge(hellos: &[Result<Hello, CommError>]) -> Result<(), String> {
    let mut problems = Vec::new();
    for (rank, h) in hellos.iter().enumerate() {
        match h {
            Err(e) => problems.push(format!("rank {rank}: unreadable start-up message ({e})")),
            Ok(Hello {
                outcome: Err(message),
                ..
            }) => problems.push(format!("rank {rank}: {message}")),
            Ok(_) => {}
        }
    }
    if !problems.is_empty() {
        // The same failure on every rank (a bad program) is said once.
        let messages: Vec<&str> = problems
            .iter()
            .map(|p| p.split_once(": ").map_or(p.as_str(), |(_, m)| m))
            .collect();
        if problems.len() == hellos.len() && messages.windows(2).all(|w| w[0] == w[1]) {
            return Err(messages[0].to_string());
        }
        return Err(problems.join("\n"));
    }
    let fields = |rank: usize| match &hellos[rank] {
        Ok(Hello {
            outcome: Ok(f),
            peer,
        }) => (f, peer),
        _ => unreachable!("checked above"),
    };
    let (first, first_peer) = fields(0);
    for rank in 1..hellos.len() {
        let (f, peer) = fields(rank);
        let differ: Vec<String> = FINGERPRINT
            .iter()
            .zip(first.iter().zip(f))
            .filter(|(_, (a, b))| a != b)
            .map(|(name, (a, b))| format!("{name} (xxh3 {b}, rank 0 has {a})"))
            .collect();
        if !differ.is_empty() {
            problems.push(format!(
                "rank {rank} (pid {} on {}) differs from rank 0 (pid {} on {}) in its {}",
                peer.pid,
                peer.host,
                first_peer.pid,
                first_peer.host,
                differ.join(", ")
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the ranks were not started alike: {}; every rank must run the same hazel binary with \
             the same program, data, initial values and options",
            problems.join("; ")
        ))
    }
}

/// `hazel sample` as this process's rank of `ctx.comm`; the summary goes to `out` (rank 0).
pub fn run_ranks(args: &SampleArgs, out: &mut dyn io::Write, ctx: &RankContext) -> CliResult {
    let comm = &*ctx.comm;
    let (rank, ranks) = (comm.rank(), comm.size());
    let lead = rank == 0;
    let voice = if lead { Voice::Speak } else { Voice::Silent };
    let mut quiet_args;
    let args = if lead {
        args
    } else {
        quiet_args = args.clone();
        quiet_args.quiet = true;
        &quiet_args
    };

    // 1. One seed: rank 0's.
    let mut buf = Vec::new();
    if lead {
        let seed = chosen_seed(args).unwrap_or_else(clock_seed);
        Writer::new(&mut buf).u8(SEED).u64(seed);
        broadcast(comm, 0, TAG_CONTROL, &mut buf).map_err(comm_err)?;
    } else {
        recv_control(comm, SEED, &mut buf)?;
    }
    let seed = Reader::new(&buf[1..]).u64().map_err(comm_err)?;

    // 2. Every rank prepares; rank 0 compares what they found.
    let prepared = if args.resume.is_some() && ranks > 1 {
        Err(
            "--resume runs without mpirun: `hazel sample --resume DIR` continues every chain \
             exactly as the distributed run would have (draws do not depend on the number of \
             ranks)"
                .into(),
        )
    } else {
        prepare(args, seed, None, voice)
    };
    let mut own_args = args.clone();
    own_args.seed = Some(crate::sample::Seed::Given(seed));
    own_args.quiet = false;
    let hello = Hello {
        outcome: match &prepared {
            Ok(p) => Ok([
                binary_hash(),
                p.inputs[0].clone(),
                p.inputs[1].clone(),
                p.inputs[2].clone(),
                // The options as given (with the agreed seed), so any difference shows.
                content_hash(&[format!("{own_args:?}").as_bytes()]),
            ]),
            Err(e) => Err(e.to_string()),
        },
        peer: Peer {
            host: ctx.host.clone(),
            pid: std::process::id(),
            process_space: process_space(),
        },
    };
    encode_hello(&hello, &mut buf);
    let all = gather(comm, 0, TAG_CONTROL, &buf).map_err(comm_err)?;
    let decided = all.map(|all| {
        let hellos: Vec<_> = all.iter().map(|m| decode_hello(m)).collect();
        *ctx.peers.lock().unwrap_or_else(|e| e.into_inner()) = hellos
            .iter()
            .map(|h| {
                h.as_ref().map_or_else(
                    |_| Peer {
                        host: String::new(),
                        pid: 0,
                        process_space: String::new(),
                    },
                    |h| h.peer.clone(),
                )
            })
            .collect();
        judge(&hellos)
    });
    // Rank 0's own failure was printed by `prepare` (diagnostics) or is the verdict's message.
    if let (true, Err(e)) = (lead, &prepared) {
        verdict(comm, Some(Err(String::new())))?;
        return Err(e.to_string().into());
    }
    verdict(comm, decided)?;
    let mut prepared = prepared.map_err(|_| Silent)?;
    // Every rank settles the algorithm alike (fixed_param for a model without parameters).
    let notes = hazel_run::settle_algorithm(&prepared.model, &mut prepared.config);
    if lead && !args.quiet {
        for note in &notes {
            eprintln!("{note}");
        }
    }

    // 3. The mode, and rank 0's output (every rank learns whether it was created).
    let lockstep = prepared.config.batch_chains.min(prepared.config.chains) > 1;
    let mode = if ranks == 1 {
        Mode::Chains
    } else {
        Mode::resolve(
            args.distribute,
            prepared.model.data_parallel_work(),
            lockstep,
        )
    };
    if mode == Mode::Data && lockstep {
        let e = format!(
            "--distribute data with --batch-chains {}: a lockstep group's batched evaluations \
             run on one rank; use --distribute chains (each rank runs its chains in lockstep) \
             or --batch-chains 1",
            prepared.config.batch_chains
        );
        return Err(if lead { e.into() } else { Silent.into() });
    }
    if mode == Mode::Data {
        let last = prepared.config.first_chain_id + prepared.config.chains as u64 - 1;
        if last > hazel_comm::MAX_CHAIN_ID {
            let e = format!(
                "--distribute data gives every chain its own message tag: chain ids up to {} \
                 (this run's last is {last})",
                hazel_comm::MAX_CHAIN_ID
            );
            return Err(if lead { e.into() } else { Silent.into() });
        }
        prepared.model.distribute_over(ctx.comm.clone());
    }
    let output = if lead {
        let created = open_output(args, &prepared, None);
        let decided = created.as_ref().map(|_| ()).map_err(|e| e.to_string());
        verdict(comm, Some(decided))?;
        created
            .ok()
            .map(|(lock, sampling)| (lock, sampling.into_parts().1))
    } else {
        verdict(comm, None)?;
        None
    };
    if lead && !args.quiet && ranks > 1 {
        let how = match mode {
            Mode::Chains => "chains split over the ranks",
            Mode::Data => "every chain's data-parallel work split over the ranks",
        };
        eprintln!(
            "distributed run: {ranks} ranks, {how} (--distribute {})",
            match mode {
                Mode::Chains => "chains",
                Mode::Data => "data",
            }
        );
    }

    // 4. Sampling.
    let start = Instant::now();
    let (lock, kept, sinks) = match output {
        Some((lock, parts)) => {
            let hazel_run::SamplingParts {
                sinks,
                starts,
                paths,
                memory,
                format,
                ..
            } = parts;
            let sinks = sinks
                .into_iter()
                .map(|inner| {
                    Box::new(GuardedSink {
                        inner,
                        lock: ctx.write_lock.clone(),
                    }) as Box<dyn DrawSink>
                })
                .collect();
            (
                Some(lock),
                Some((paths, memory, format)),
                Some((sinks, starts)),
            )
        }
        None => (None, None, None),
    };
    let sampling = SamplingGuard::begin(&ctx.phase);
    let outcomes = match mode {
        Mode::Data => run_data(args, &prepared, ctx, sinks)?,
        Mode::Chains => run_chains(args, &prepared, ctx, sinks)?,
    };
    // Before rank 0's final message, after which the other ranks end.
    drop(sampling);
    let elapsed = start.elapsed();

    // 5. Rank 0 reports; everyone exits alike.
    let mut buf = Vec::new();
    if let (Some(outcomes), Some((paths, memory, format))) = (outcomes, kept) {
        let draws: Vec<_> = memory.iter().map(|handle| handle.take()).collect();
        let unstarted: Vec<bool> = outcomes
            .iter()
            .map(|o| o.no_start && o.draws_written == 0)
            .collect();
        let finished = Finished {
            name: &prepared.name,
            config: &prepared.config,
            paths: &paths,
            chains: &outcomes,
            draws: &draws,
            removed_unstarted: hazel_run::remove_unstarted(format, &paths, &unstarted),
            elapsed,
        };
        let result = finish_run(args, &finished, out).map_err(|e| match lost_rank(&outcomes) {
            Some(lost) => format!("{lost}; {e}").into(),
            None => e,
        });
        drop(lock);
        Writer::new(&mut buf)
            .u8(FINAL)
            .u8(u8::from(result.is_err()));
        broadcast(comm, 0, TAG_CONTROL, &mut buf).map_err(comm_err)?;
        return result;
    }
    recv_control(comm, FINAL, &mut buf)?;
    match buf.get(1) {
        Some(0) => Ok(()),
        _ => Err(Silent.into()),
    }
}

/// The first `lost rank N: …` among the chains' failures (a [`CommError::Lost`]), to head
/// rank 0's error: the rank is what the user needs to know first.
fn lost_rank(outcomes: &[ChainOutcome]) -> Option<String> {
    outcomes
        .iter()
        .filter_map(|o| o.error.as_deref())
        .find_map(|e| e.find("lost rank ").map(|at| e[at..].to_string()))
}

/// Rank 0's sinks and starts (`None` on the other ranks).
type Rank0Sinks = Option<(Vec<Box<dyn DrawSink>>, Vec<ChainStart>)>;

/// What a rank's sampling gives: every chain's outcome on rank 0, `None` elsewhere.
type Outcomes = Result<Option<Vec<ChainOutcome>>, Box<dyn std::error::Error>>;

/// Whether the test hook `HAZEL_TEST_ABORT_AFTER_ITERATION` applies to this rank
/// (`HAZEL_TEST_ABORT_RANK`, when set, names the one rank that aborts).
fn aborts_here(rank: usize) -> bool {
    std::env::var("HAZEL_TEST_ABORT_RANK")
        .ok()
        .and_then(|r| r.parse::<usize>().ok())
        .is_none_or(|r| r == rank)
}

/// `--distribute data`: every rank runs every chain with the sharded executor; rank 0's sinks
/// write, the others' discard (they hold the same draws).
fn run_data(
    args: &SampleArgs,
    prepared: &Prepared,
    ctx: &RankContext,
    rank0: Rank0Sinks,
) -> Outcomes {
    let config = &prepared.config;
    let lead = rank0.is_some();
    let (sinks, starts, progress) = match rank0 {
        Some((sinks, starts)) => {
            let progress = progress_for_run(args.quiet, args.refresh, config);
            (sinks, starts, progress)
        }
        None => (
            (0..config.chains)
                .map(|_| Box::new(NullSink) as Box<dyn DrawSink>)
                .collect(),
            vec![ChainStart::Fresh; config.chains],
            Box::new(NoProgress) as Box<dyn Progress>,
        ),
    };
    let abort = abort_hook(progress.as_ref(), aborts_here(ctx.comm.rank()));
    let progress_used: &dyn Progress = match &abort {
        Some(abort) => abort,
        None => progress.as_ref(),
    };
    let report = hazel_nuts::run_from(&prepared.model, config, starts, sinks, progress_used)?;
    Ok(lead.then(|| report.chains.iter().map(ChainOutcome::from).collect()))
}

/// `--distribute chains`: each rank runs its block of chains; the others' output reaches rank
/// 0's sinks through [`ForwardSink`] and [`ForwardProgress`].
fn run_chains(
    args: &SampleArgs,
    prepared: &Prepared,
    ctx: &RankContext,
    rank0: Rank0Sinks,
) -> Outcomes {
    let comm = &ctx.comm;
    let (rank, ranks) = (comm.rank(), comm.size());
    let config = &prepared.config;
    let block = chain_block(config.chains, rank, ranks);
    let mut local = config.clone();
    local.chains = block.len();
    local.first_chain_id += block.start as u64;
    if let Init::Unconstrained(rows) = &config.sampler.init {
        if rows.len() == config.chains && rows.len() > 1 {
            local.sampler.init = Init::Unconstrained(rows[block.clone()].to_vec());
        }
    }
    let run_local = |sinks: Vec<Box<dyn DrawSink>>, progress: &dyn Progress| {
        if block.is_empty() {
            return Ok(Vec::new());
        }
        let starts = vec![ChainStart::Fresh; sinks.len()];
        let abort = abort_hook(progress, aborts_here(rank));
        let progress_used: &dyn Progress = match &abort {
            Some(abort) => abort,
            None => progress,
        };
        hazel_nuts::run_from(&prepared.model, &local, starts, sinks, progress_used)
            .map(|r| r.chains.iter().map(ChainOutcome::from).collect::<Vec<_>>())
    };
    let Some((sinks, _)) = rank0 else {
        let sinks = block
            .clone()
            .map(|k| {
                Box::new(ForwardSink {
                    comm: comm.clone(),
                    chain: k as u32,
                    buf: Vec::new(),
                }) as Box<dyn DrawSink>
            })
            .collect();
        let progress = ForwardProgress {
            comm: comm.clone(),
            offset: block.start,
            iterations: config.sampler.num_warmup + config.sampler.num_samples,
            last: Mutex::new(vec![None; block.len()]),
        };
        // Rank 0 waits for this report whatever happened here.
        let ids = config.info().chain_ids();
        let outcomes = run_local(sinks, &progress).unwrap_or_else(|e| {
            block
                .clone()
                .map(|k| ChainOutcome {
                    chain_id: ids[k],
                    timing: Timing::default(),
                    draws_written: 0,
                    error: Some(e.to_string()),
                    no_start: false,
                })
                .collect()
        });
        let mut buf = Vec::new();
        let mut w = Writer::new(&mut buf);
        w.u8(DONE).u64(outcomes.len() as u64);
        for (k, o) in block.clone().zip(&outcomes) {
            w.u32(k as u32);
            encode_outcome(&mut w, o);
        }
        comm.send(0, TAG_FORWARD, &buf).map_err(comm_err)?;
        return Ok(None);
    };
    // Rank 0: its own block runs here while a second thread writes the others' output.
    let mut sinks: Vec<Option<Box<dyn DrawSink>>> = sinks.into_iter().map(Some).collect();
    let own: Vec<Box<dyn DrawSink>> = sinks[block.clone()]
        .iter_mut()
        .map(|s| s.take().expect("each sink once"))
        .collect();
    let progress = progress_for_run(args.quiet, args.refresh, config);
    let progress = progress.as_ref();
    let (own_outcomes, received) = std::thread::scope(|scope| {
        let receiver = scope.spawn(|| receive(&**comm, &mut sinks, progress));
        let own_outcomes = run_local(own, progress);
        let received = receiver
            .join()
            .unwrap_or_else(|_| Received::failed(config.chains, "the receiver panicked"));
        (own_outcomes, received)
    });
    let own_outcomes = own_outcomes?;
    let ids = config.info().chain_ids();
    let outcomes = (0..config.chains)
        .map(|k| {
            if block.contains(&k) {
                return own_outcomes[k - block.start].clone();
            }
            let mut o = received.outcomes[k]
                .clone()
                .unwrap_or_else(|| ChainOutcome {
                    chain_id: ids[k],
                    timing: Timing::default(),
                    draws_written: received.draws[k],
                    error: Some(
                        received
                            .lost
                            .clone()
                            .unwrap_or_else(|| "its rank sent no report".into()),
                    ),
                    no_start: false,
                });
            if let (None, Some(e)) = (&o.error, &received.sink_errors[k]) {
                o.error = Some(format!("its output on rank 0 failed: {e}"));
            }
            o
        })
        .collect();
    Ok(Some(outcomes))
}

/// Holds the run's write lock for each call, so that a signal handler that takes the lock
/// never stops the process in the middle of a row.
struct GuardedSink {
    inner: Box<dyn DrawSink>,
    lock: Arc<Mutex<()>>,
}

impl DrawSink for GuardedSink {
    fn begin(&mut self, columns: &Columns<'_>) -> io::Result<()> {
        let _held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.inner.begin(columns)
    }
    fn adaptation_done(&mut self, adaptation: &AdaptationInfo<'_>) -> io::Result<()> {
        let _held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.inner.adaptation_done(adaptation)
    }
    fn adaptation_resumed(&mut self, adaptation: &AdaptationInfo<'_>) -> io::Result<()> {
        let _held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.inner.adaptation_resumed(adaptation)
    }
    fn draw(&mut self, draw: &Draw<'_>) -> io::Result<()> {
        let _held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.inner.draw(draw)
    }
    fn finish(&mut self, timing: &Timing) -> io::Result<()> {
        let _held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.inner.finish(timing)
    }
    fn checkpoint(&mut self, state: &dyn erased_serde::Serialize) -> io::Result<()> {
        let _held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.inner.checkpoint(state)
    }
}

/// The other ranks' sinks in `--distribute data`: they hold the same draws as rank 0.
struct NullSink;

impl DrawSink for NullSink {
    fn begin(&mut self, _: &Columns<'_>) -> io::Result<()> {
        Ok(())
    }
    fn draw(&mut self, _: &Draw<'_>) -> io::Result<()> {
        Ok(())
    }
    fn finish(&mut self, _: &Timing) -> io::Result<()> {
        Ok(())
    }
}

// Kinds of forwarded messages (`TAG_FORWARD`, to rank 0).
const BEGIN: u8 = 1;
const ADAPTED: u8 = 2;
const DRAW: u8 = 3;
const FINISH: u8 = 4;
const CHECKPOINT: u8 = 5;
const ITERATION: u8 = 6;
const MESSAGE: u8 = 7;
const DONE: u8 = 8;

/// One chain's sink on a rank other than 0: every call becomes a message to rank 0.
struct ForwardSink {
    comm: Arc<dyn Comm>,
    /// The chain's index in the run.
    chain: u32,
    buf: Vec<u8>,
}

impl ForwardSink {
    fn send(&self) -> io::Result<()> {
        self.comm
            .send(0, TAG_FORWARD, &self.buf)
            .map_err(|e| io::Error::other(format!("sending to rank 0: {e}")))
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn stat_kind_code(kind: StatKind) -> u8 {
    match kind {
        StatKind::Real => 0,
        StatKind::Integer => 1,
        StatKind::Flag => 2,
    }
}

impl DrawSink for ForwardSink {
    fn begin(&mut self, columns: &Columns<'_>) -> io::Result<()> {
        let mut w = Writer::new(&mut self.buf);
        w.u8(BEGIN).u32(self.chain).u64(columns.stats.len() as u64);
        for c in columns.stats {
            w.str(&c.name).u8(stat_kind_code(c.kind));
        }
        w.u64(columns.values.len() as u64);
        for n in columns.values {
            w.str(n);
        }
        self.send()
    }
    fn adaptation_done(&mut self, adaptation: &AdaptationInfo<'_>) -> io::Result<()> {
        let AdaptationInfo::Hmc {
            stepsize,
            inv_metric,
        } = adaptation
        else {
            return Err(io::Error::other(
                "this adaptation cannot be forwarded to rank 0",
            ));
        };
        let mut w = Writer::new(&mut self.buf);
        w.u8(ADAPTED).u32(self.chain).f64(*stepsize);
        match inv_metric {
            InverseMetric::Diag(v) => w.u8(0).f64s(v),
            InverseMetric::Dense { dim, values } => w.u8(1).u64(*dim as u64).f64s(values),
            InverseMetric::LowRank {
                scale,
                values,
                vectors,
            } => w.u8(2).f64s(scale).f64s(values).f64s(vectors),
        };
        self.send()
    }
    fn draw(&mut self, draw: &Draw<'_>) -> io::Result<()> {
        Writer::new(&mut self.buf)
            .u8(DRAW)
            .u32(self.chain)
            .u8(u8::from(draw.warmup))
            .f64s(draw.stats)
            .f64s(draw.values);
        self.send()
    }
    fn finish(&mut self, timing: &Timing) -> io::Result<()> {
        Writer::new(&mut self.buf)
            .u8(FINISH)
            .u32(self.chain)
            .u64(nanos(timing.warmup))
            .u64(nanos(timing.sampling));
        self.send()
    }
    fn checkpoint(&mut self, state: &dyn erased_serde::Serialize) -> io::Result<()> {
        let json = serde_json::to_vec(state).map_err(io::Error::other)?;
        Writer::new(&mut self.buf)
            .u8(CHECKPOINT)
            .u32(self.chain)
            .bytes(&json);
        self.send()
    }
}

/// Progress of a rank's chains, sent to rank 0 at most every 100 ms per chain (and the last
/// iteration), with every rejection message (rank 0 rate-limits what it shows).
struct ForwardProgress {
    comm: Arc<dyn Comm>,
    /// The run index of this rank's first chain.
    offset: usize,
    iterations: usize,
    last: Mutex<Vec<Option<Instant>>>,
}

impl Progress for ForwardProgress {
    fn iteration(&self, chain: usize, iteration: usize, warmup: bool, divergences: usize) {
        {
            let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
            let Some(at) = last.get_mut(chain) else {
                return;
            };
            let due = at.is_none_or(|t| t.elapsed() >= Duration::from_millis(100))
                || iteration == self.iterations;
            if !due {
                return;
            }
            *at = Some(Instant::now());
        }
        let mut buf = Vec::new();
        Writer::new(&mut buf)
            .u8(ITERATION)
            .u32((self.offset + chain) as u32)
            .u64(iteration as u64)
            .u8(u8::from(warmup))
            .u64(divergences as u64);
        let _ = self.comm.send(0, TAG_FORWARD, &buf);
    }
    fn message(&self, chain: usize, message: &str) {
        let mut buf = Vec::new();
        Writer::new(&mut buf)
            .u8(MESSAGE)
            .u32((self.offset + chain) as u32)
            .str(message);
        let _ = self.comm.send(0, TAG_FORWARD, &buf);
    }
}

fn encode_outcome(w: &mut Writer<'_>, o: &ChainOutcome) {
    w.u64(o.chain_id)
        .u64(nanos(o.timing.warmup))
        .u64(nanos(o.timing.sampling))
        .u64(o.draws_written as u64)
        .u8(u8::from(o.no_start));
    match &o.error {
        Some(e) => w.u8(1).str(e),
        None => w.u8(0),
    };
}

fn decode_outcome(r: &mut Reader<'_>) -> Result<ChainOutcome, CommError> {
    Ok(ChainOutcome {
        chain_id: r.u64()?,
        timing: Timing {
            warmup: Duration::from_nanos(r.u64()?),
            sampling: Duration::from_nanos(r.u64()?),
        },
        draws_written: r.u64()? as usize,
        no_start: r.u8()? != 0,
        error: match r.u8()? {
            0 => None,
            _ => Some(r.str()?.to_string()),
        },
    })
}

/// What rank 0 learned from the other ranks.
struct Received {
    /// Per chain of the run: the outcome its rank reported.
    outcomes: Vec<Option<ChainOutcome>>,
    /// Per chain: draws written on rank 0 (for a rank that never reported).
    draws: Vec<usize>,
    /// Per chain: rank 0's own failure writing its output.
    sink_errors: Vec<Option<String>>,
    /// Why the receiving stopped early (a rank lost).
    lost: Option<String>,
}

impl Received {
    fn failed(chains: usize, why: &str) -> Received {
        Received {
            outcomes: vec![None; chains],
            draws: vec![0; chains],
            sink_errors: vec![None; chains],
            lost: Some(why.to_string()),
        }
    }
}

/// Rank 0's receiving end of `--distribute chains`: applies every forwarded call to the
/// chain's sink until each other rank has sent its report. A rank found lost is given up
/// (its chains fail with the reason); the others are still heard to the end.
fn receive(
    comm: &dyn Comm,
    sinks: &mut [Option<Box<dyn DrawSink>>],
    progress: &dyn Progress,
) -> Received {
    let chains = sinks.len();
    let mut got = Received::failed(chains, "");
    got.lost = None;
    let mut pending = vec![true; comm.size()];
    pending[0] = false;
    let mut buf = Vec::new();
    let mut scratch = Scratch::default();
    while let Some(first) = pending.iter().position(|&p| p) {
        // From anyone while every rank is there; after a loss, rank by rank (a lost rank
        // must not hide the others' messages).
        let received = if got.lost.is_none() {
            comm.recv_any(TAG_FORWARD, &mut buf)
        } else {
            comm.recv(first, TAG_FORWARD, &mut buf).map(|()| first)
        };
        let from = match received {
            Ok(from) => from,
            Err(e) => {
                let gone = match &e {
                    CommError::Lost { rank, .. } => *rank,
                    CommError::Failed(_) => first,
                };
                pending[gone] = false;
                got.lost.get_or_insert(format!("distributed run: {e}"));
                continue;
            }
        };
        match apply(&buf, sinks, progress, &mut got, &mut scratch) {
            Ok(true) => pending[from] = false,
            Ok(false) => {}
            Err(e) => {
                pending[from] = false;
                got.lost.get_or_insert(format!(
                    "distributed run: a malformed message from rank {from} ({e})"
                ));
            }
        }
    }
    got
}

/// Buffers reused across forwarded messages.
#[derive(Default)]
struct Scratch {
    stats: Vec<f64>,
    values: Vec<f64>,
    stat_columns: Vec<StatColumn>,
    names: Vec<String>,
}

/// Applies one forwarded message; `Ok(true)` for a rank's final report.
fn apply(
    msg: &[u8],
    sinks: &mut [Option<Box<dyn DrawSink>>],
    progress: &dyn Progress,
    got: &mut Received,
    scratch: &mut Scratch,
) -> Result<bool, CommError> {
    let chains = sinks.len();
    let mut r = Reader::new(msg);
    let kind = r.u8()?;
    if kind == DONE {
        for _ in 0..r.u64()? {
            let k = r.u32()? as usize;
            let o = decode_outcome(&mut r)?;
            if k >= chains {
                return Err(CommError::Failed(format!("no chain {k}")));
            }
            got.outcomes[k] = Some(o);
        }
        return Ok(true);
    }
    let chain = r.u32()? as usize;
    if chain >= chains {
        return Err(CommError::Failed(format!("no chain {chain}")));
    }
    match kind {
        ITERATION => {
            let iteration = r.u64()? as usize;
            let warmup = r.u8()? != 0;
            progress.iteration(chain, iteration, warmup, r.u64()? as usize);
            return Ok(false);
        }
        MESSAGE => {
            progress.message(chain, r.str()?);
            return Ok(false);
        }
        _ => {}
    }
    // A sink that failed takes no more calls; the chain's failure is reported.
    let (Some(sink), None) = (&mut sinks[chain], &got.sink_errors[chain]) else {
        return Ok(false);
    };
    let Scratch {
        stats,
        values,
        stat_columns,
        names,
    } = scratch;
    let written = match kind {
        BEGIN => {
            stat_columns.clear();
            for _ in 0..r.u64()? {
                let name = r.str()?.to_string();
                let kind = match r.u8()? {
                    0 => StatKind::Real,
                    1 => StatKind::Integer,
                    2 => StatKind::Flag,
                    k => return Err(CommError::Failed(format!("unknown statistic kind {k}"))),
                };
                stat_columns.push(StatColumn {
                    name: Cow::Owned(name),
                    kind,
                });
            }
            names.clear();
            for _ in 0..r.u64()? {
                names.push(r.str()?.to_string());
            }
            sink.begin(&Columns {
                stats: stat_columns,
                values: names,
            })
        }
        ADAPTED => {
            let stepsize = r.f64()?;
            let metric = match r.u8()? {
                0 => {
                    r.f64s_into(values)?;
                    InverseMetric::Diag(values.clone())
                }
                2 => {
                    let (mut scale, mut eigenvalues, mut vectors) =
                        (Vec::new(), Vec::new(), Vec::new());
                    r.f64s_into(&mut scale)?;
                    r.f64s_into(&mut eigenvalues)?;
                    r.f64s_into(&mut vectors)?;
                    InverseMetric::LowRank {
                        scale,
                        values: eigenvalues,
                        vectors,
                    }
                }
                _ => {
                    let dim = r.u64()? as usize;
                    r.f64s_into(values)?;
                    InverseMetric::Dense {
                        dim,
                        values: values.clone(),
                    }
                }
            };
            sink.adaptation_done(&AdaptationInfo::Hmc {
                stepsize,
                inv_metric: &metric,
            })
        }
        DRAW => {
            let warmup = r.u8()? != 0;
            r.f64s_into(stats)?;
            r.f64s_into(values)?;
            let result = sink.draw(&Draw {
                warmup,
                stats,
                values,
            });
            if result.is_ok() {
                got.draws[chain] += 1;
            }
            result
        }
        FINISH => {
            let warmup = Duration::from_nanos(r.u64()?);
            let sampling = Duration::from_nanos(r.u64()?);
            sink.finish(&Timing { warmup, sampling })
        }
        CHECKPOINT => {
            let checkpoint: ChainCheckpoint = serde_json::from_slice(r.bytes()?)
                .map_err(|e| CommError::Failed(format!("checkpoint: {e}")))?;
            sink.checkpoint(&checkpoint)
        }
        other => return Err(CommError::Failed(format!("unknown message kind {other}"))),
    };
    if let Err(e) = written {
        got.sink_errors[chain] = Some(e.to_string());
    }
    Ok(false)
}
