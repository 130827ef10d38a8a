//! The sharded executor ([`ShardedCpu`]): one chain's log density and gradient computed by all
//! the ranks of a distributed run together (`hazel sample --distribute data`), with the
//! reference executor's bits whatever the number of ranks.
//!
//! **What is split.** [`ShardPlan`] finds the graph's *row ops*: ops over `n ≥`
//! [`SHARD_MIN_ROWS`] rows whose rows are independent (elementwise functions, gathers with data
//! indexes, a data matrix times a vector, densities, sums, fused GLMs), such that every row
//! value they produce is read only by other row ops of the same `n`, row by row. The rows of
//! such an op are cut into the kernels' fixed chunks ([`CHUNK`]); rank `r` of `R` owns chunks
//! `[r·C/R, (r+1)·C/R)` of `C` and computes only those rows. Everything else — parameters,
//! transforms, priors, small ops — is computed by every rank in full (it is cheap, and every
//! rank then holds the same values without a message).
//!
//! **How results are combined.** Where row values are summed into something every rank needs
//! (a density's value and the partials of its scalar arguments, a sum, a GLM's `Xᵀ ∂η`, a
//! broadcast scalar's adjoint, a gathered vector's adjoint, `Mᵀ g`), the reference kernels
//! add chunk results, or rows, one after another in order. The sharded executor adds exactly
//! the same terms in exactly that order, by *folding*: rank 0 adds its chunks' terms to the
//! running value, sends it to rank 1, which adds its own and passes it on; the last rank sends
//! the final value to every other rank. Each rank computes its chunks' terms before it waits,
//! so the ranks work at once and only the (cheap) additions run in turn. The order of every
//! floating-point operation is that of [`super::SerialCpu`], so the bits do not depend on
//! `R` — never on which message arrives first. The first failing chunk in chunk order decides
//! an evaluation error, as in the serial sweep.
//!
//! **Faults.** A rank that cannot reach another (its process died, the connection was lost)
//! fails the evaluation with a *fatal* error naming the rank, which stops the run. A chain's
//! workspace tells the other ranks when it is dropped, so a chain that stops on one rank (a
//! fatal error elsewhere, an output failure) stops on all, instead of leaving them waiting.

use super::cpu::kernels::{self, Operand, CHUNK};
use super::cpu::{dists, glm, read, Buffers};
use super::Executor;
use crate::ir::{Arg, Graph, Op};
use crate::simd::{dispatch, Isa};
use hazel_comm::wire::{Reader, Writer};
use hazel_comm::{Comm, CommError};
use hazel_density::{EvalError, EvalErrorKind};
use std::ops::Range;
use std::sync::Arc;

/// Ops over fewer rows are computed by every rank: at least two chunks, or there is nothing to
/// split.
pub(crate) const SHARD_MIN_ROWS: usize = 2 * CHUNK;

/// How the sharded executor runs one op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Every rank computes it in full.
    Replicated,
    /// Each rank computes its own chunks of its `n` rows.
    Rows(usize),
}

/// Which ops of a graph are split over ranks, and how much work they are.
#[derive(Debug, Clone)]
pub struct ShardPlan {
    roles: Vec<Role>,
    work: u64,
}

impl ShardPlan {
    /// The row ops of `g` (see the module documentation).
    pub fn new(g: &Graph) -> ShardPlan {
        let mut rows: Vec<Option<usize>> = g.ops.iter().map(candidate).collect();
        // Drop ops until every row value is read only row by row by a row op of its length,
        // and every row op's full-length parameter-dependent inputs are such row values.
        loop {
            let mut producers: Vec<(usize, usize, usize)> = g
                .ops
                .iter()
                .enumerate()
                .filter(|(i, op)| rows[*i].is_some() && produces_rows(op))
                .map(|(i, op)| (op.out().off as usize, op.out().len as usize, i))
                .collect();
            producers.sort_unstable();
            let overlapping = |a: Arg| -> Option<usize> {
                let (lo, hi) = (a.off as usize, a.off as usize + a.len());
                let at = producers.partition_point(|&(off, len, _)| off + len <= lo);
                producers
                    .get(at)
                    .filter(|&&(off, _, _)| off < hi)
                    .map(|&(_, _, i)| i)
            };
            let mut dropped = Vec::new();
            for (i, op) in g.ops.iter().enumerate() {
                for a in op
                    .inputs()
                    .into_iter()
                    .filter(|a| a.is_var() && !a.is_empty())
                {
                    let row_read = rows[i].is_some_and(|n| a.len() == n && reads_rows(op));
                    match overlapping(a) {
                        Some(p) => {
                            let whole = g.ops[p].out().arg() == a;
                            if !(row_read && whole && rows[p] == rows[i]) {
                                dropped.push(p);
                            }
                        }
                        // A full-length row input that is not a row value (a parameter vector,
                        // a replicated op's output): its adjoint would be partial.
                        None if row_read => dropped.push(i),
                        None => {}
                    }
                }
            }
            if dropped.is_empty() {
                break;
            }
            for i in dropped {
                rows[i] = None;
            }
        }
        let mut work = 0u64;
        let roles = g
            .ops
            .iter()
            .zip(&rows)
            .map(|(op, r)| match r {
                Some(n) => {
                    work += match op {
                        Op::Glm { spec, .. } => u64::from(spec.rows) * u64::from(spec.cols),
                        Op::MatVec { rows, cols, .. } => u64::from(*rows) * u64::from(*cols),
                        _ => *n as u64,
                    };
                    Role::Rows(*n)
                }
                None => Role::Replicated,
            })
            .collect();
        ShardPlan { roles, work }
    }

    /// Elements the split ops touch per evaluation (rows, or rows × columns of a matrix): the
    /// model's data-parallel work.
    pub fn work(&self) -> u64 {
        self.work
    }

    /// Number of ops split over ranks.
    pub fn row_ops(&self) -> usize {
        self.roles
            .iter()
            .filter(|r| matches!(r, Role::Rows(_)))
            .count()
    }
}

/// The row count of an op whose shape allows splitting it by rows, before looking at who reads
/// what.
fn candidate(op: &Op) -> Option<usize> {
    let big = |n: usize| n >= SHARD_MIN_ROWS;
    let n = match op {
        Op::Unary { x, out, .. } => Some(out.len as usize).filter(|&n| x.len() == n),
        Op::Binary { a, b, out, .. } => {
            let n = out.len as usize;
            Some(n).filter(|_| [a, b].iter().all(|v| v.len() == 1 || v.len() == n))
        }
        Op::Sum { x, .. } => Some(x.len()),
        // The fold carries the gathered vector's whole adjoint from rank to rank: only for a
        // vector much shorter than the rows (group effects gathered per observation).
        Op::Gather { x, idx, out } => {
            let n = out.len as usize;
            Some(n).filter(|&n| idx.len() == n && x.len() * 4 <= n)
        }
        Op::MatVec {
            m, v, rows, cols, ..
        } => Some(*rows as usize)
            .filter(|&n| !m.is_var() && v.len() == *cols as usize && 4 * v.len() <= n),
        Op::Dist { args, len, .. } => {
            let n = *len as usize;
            Some(n).filter(|&n| args.iter().all(|a| a.len() == 1 || a.len() == n))
        }
        // A parameter-dependent X, or a parameter-dependent per-row argument, needs per-row
        // adjoints outside the op.
        Op::Glm { spec, .. } => Some(spec.rows as usize).filter(|_| {
            !spec.x.is_var()
                && spec
                    .args
                    .iter()
                    .enumerate()
                    .all(|(k, a)| k == spec.eta || a.len() == 1 || !a.is_var())
        }),
        _ => None,
    };
    n.filter(|&n| big(n))
}

/// Whether the op writes `n` row values (rather than a reduction every rank needs).
fn produces_rows(op: &Op) -> bool {
    matches!(
        op,
        Op::Unary { .. } | Op::Binary { .. } | Op::Gather { .. } | Op::MatVec { .. }
    )
}

/// Whether the op reads its full-length inputs row by row (a gather's vector, a product's
/// vector and a GLM's inputs are read whole).
fn reads_rows(op: &Op) -> bool {
    matches!(
        op,
        Op::Unary { .. } | Op::Binary { .. } | Op::Sum { .. } | Op::Dist { .. }
    )
}

/// The chunks of `n` rows that rank `rank` of `ranks` owns: a contiguous run, in rank order.
pub(crate) fn owned_chunks(n: usize, rank: usize, ranks: usize) -> Range<usize> {
    let chunks = n.div_ceil(CHUNK);
    rank * chunks / ranks..(rank + 1) * chunks / ranks
}

/// The rows of those chunks.
fn owned_rows(n: usize, rank: usize, ranks: usize) -> Range<usize> {
    let c = owned_chunks(n, rank, ranks);
    (c.start * CHUNK).min(n)..(c.end * CHUNK).min(n)
}

/// The rows of chunk `c`.
fn chunk_rows(n: usize, c: usize) -> Range<usize> {
    c * CHUNK..((c + 1) * CHUNK).min(n)
}

/// Splits one chain's evaluations over the ranks of a run by [`ShardPlan`].
#[derive(Debug, Clone)]
pub(crate) struct ShardedCpu {
    pub plan: Arc<ShardPlan>,
}

/// Where one chain's folds go: the run's ranks, on the chain's own tag.
pub struct ShardLink {
    pub comm: Arc<dyn Comm>,
    pub tag: u32,
}

/// The sharded executor's workspace: the reference buffers, and for a chain of a distributed
/// run its link to the other ranks (without one, evaluation is the reference executor's).
pub(crate) struct ShardedWorkspace {
    pub(crate) buf: Buffers,
    link: Option<ShardLink>,
    /// The running value of a fold, its message, this rank's chunk records.
    acc: Vec<f64>,
    msg: Vec<u8>,
    recs: Vec<f64>,
    /// The first failing chunk among this rank's (its index in `recs`, and the error).
    failed: Option<(usize, EvalError)>,
    /// The rank whose stopping ended this chain here (told on to the others when dropped).
    stopped_by: Option<usize>,
}

impl std::fmt::Debug for ShardedWorkspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let link = self
            .link
            .as_ref()
            .map(|l| (l.comm.rank(), l.comm.size(), l.tag));
        f.debug_struct("ShardedWorkspace")
            .field("values", &self.buf.vals.len())
            .field("rank_ranks_tag", &link)
            .finish()
    }
}

impl ShardedWorkspace {
    /// Sets the instruction set the kernels run with.
    pub fn set_isa(&mut self, isa: Isa) {
        self.buf.isa = isa;
    }
}

/// Message kinds of a fold.
const PARTIAL: u8 = 0;
const FAILED: u8 = 1;
const CLOSED: u8 = 2;

impl Drop for ShardedWorkspace {
    /// A chain's workspace lives as long as the chain: once it is gone, no rank will get
    /// another message for this chain from this one. Say so, so that a rank still waiting
    /// (this chain stopped here for a reason of this rank's) stops too.
    fn drop(&mut self) {
        if let Some(link) = &self.link {
            let me = link.comm.rank();
            let mut msg = Vec::new();
            Writer::new(&mut msg)
                .u8(CLOSED)
                .u64(self.stopped_by.unwrap_or(me) as u64);
            for r in (0..link.comm.size()).filter(|&r| r != me) {
                let _ = link.comm.send(r, link.tag, &msg);
            }
        }
    }
}

fn kind_code(kind: &EvalErrorKind) -> u8 {
    match kind {
        EvalErrorKind::NonFinite => 0,
        EvalErrorKind::Reject => 1,
        EvalErrorKind::Domain => 2,
        EvalErrorKind::Constraint => 3,
        EvalErrorKind::Fatal => 4,
    }
}

fn code_kind(code: u8) -> EvalErrorKind {
    match code {
        0 => EvalErrorKind::NonFinite,
        1 => EvalErrorKind::Reject,
        2 => EvalErrorKind::Domain,
        3 => EvalErrorKind::Constraint,
        _ => EvalErrorKind::Fatal,
    }
}

fn fatal(e: CommError) -> EvalError {
    EvalError::new(
        EvalErrorKind::Fatal,
        format!("the distributed evaluation stopped: {e}"),
    )
}

fn encode(msg: &mut Vec<u8>, state: &Result<(), EvalError>, acc: &[f64]) {
    let mut w = Writer::new(msg);
    match state {
        Ok(()) => {
            w.u8(PARTIAL).f64s(acc);
        }
        Err(e) => {
            w.u8(FAILED).u8(kind_code(&e.kind)).str(&e.message);
            match &e.location {
                Some(l) => w.u8(1).str(l),
                None => w.u8(0),
            };
        }
    }
}

/// Reads a fold message from rank `from` into `acc`; `Ok(Err(e))` is an evaluation error that
/// travels with the fold, `Err` ends the chain (for a chain stopped elsewhere, `stopped_by`
/// then names the rank where it stopped first).
fn decode(
    msg: &[u8],
    acc: &mut [f64],
    from: usize,
    stopped_by: &mut Option<usize>,
) -> Result<Result<(), EvalError>, EvalError> {
    let mut r = Reader::new(msg);
    let malformed = |e: CommError| fatal(CommError::Failed(format!("from rank {from}: {e}")));
    match r.u8().map_err(malformed)? {
        PARTIAL => {
            r.f64s_exact(acc).map_err(malformed)?;
            Ok(Ok(()))
        }
        FAILED => {
            let kind = code_kind(r.u8().map_err(malformed)?);
            let message = r.str().map_err(malformed)?.to_string();
            let location = match r.u8().map_err(malformed)? {
                1 => Some(r.str().map_err(malformed)?.to_string()),
                _ => None,
            };
            Ok(Err(EvalError {
                kind,
                message,
                location,
            }))
        }
        _ => {
            let origin = r.u64().map_err(malformed)? as usize;
            *stopped_by = Some(origin);
            Err(EvalError::new(
                EvalErrorKind::Fatal,
                format!("rank {origin} stopped this chain (its error says why)"),
            ))
        }
    }
}

/// Adds every rank's terms to `acc` in rank order (= chunk order): this rank's by `mine`, after
/// the ranks below it and before the ranks above; every rank ends with the same `acc` and the
/// same outcome.
fn fold(
    link: Option<&ShardLink>,
    msg: &mut Vec<u8>,
    stopped_by: &mut Option<usize>,
    acc: &mut [f64],
    mine: impl FnOnce(&mut [f64]) -> Result<(), EvalError>,
) -> Result<(), EvalError> {
    let Some(link) = link.filter(|l| l.comm.size() > 1) else {
        return mine(acc);
    };
    let (comm, tag) = (&*link.comm, link.tag);
    let (rank, size) = (comm.rank(), comm.size());
    let mut state = Ok(());
    if rank > 0 {
        comm.recv(rank - 1, tag, msg).map_err(fatal)?;
        state = decode(msg, acc, rank - 1, stopped_by)?;
    }
    if state.is_ok() {
        state = mine(acc);
    }
    encode(msg, &state, acc);
    if rank + 1 < size {
        comm.send(rank + 1, tag, msg).map_err(fatal)?;
        comm.recv(size - 1, tag, msg).map_err(fatal)?;
        decode(msg, acc, size - 1, stopped_by)?
    } else {
        for r in 0..size - 1 {
            comm.send(r, tag, msg).map_err(fatal)?;
        }
        state
    }
}

/// One fold of `acc.len()` numbers over `link`'s ranks, this rank adding `terms` (rank by
/// rank, as the executor folds a split reduction): the cost a gradient pays per fold, for
/// measuring it (`bench/src/bin/mpi_scaling.rs`). `msg` is reused.
pub fn fold_terms(
    link: &ShardLink,
    msg: &mut Vec<u8>,
    acc: &mut [f64],
    terms: &[f64],
) -> Result<(), EvalError> {
    let mut stopped_by = None;
    fold(Some(link), msg, &mut stopped_by, acc, |acc| {
        acc.iter_mut().zip(terms).for_each(|(a, t)| *a += t);
        Ok(())
    })
}

impl ShardedCpu {
    /// A workspace for one chain of a distributed run: its folds go to `comm`'s ranks on `tag`
    /// (the chain's own; every rank must give the chain the same tag, and a tag serves one
    /// workspace per run: the message a dropped workspace leaves would end the next one's).
    pub fn linked_workspace(&self, g: &Graph, comm: Arc<dyn Comm>, tag: u32) -> ShardedWorkspace {
        let mut ws = self.new_workspace(g);
        ws.link = Some(ShardLink { comm, tag });
        ws
    }

    /// The rows and chunks of an `n`-row op that this workspace's rank owns.
    fn owned(ws: &ShardedWorkspace, n: usize) -> (Range<usize>, Range<usize>) {
        let (rank, ranks) = ws
            .link
            .as_ref()
            .map_or((0, 1), |l| (l.comm.rank(), l.comm.size()));
        (owned_rows(n, rank, ranks), owned_chunks(n, rank, ranks))
    }

    /// Forward rule of a row op: this rank's rows, and folds for what every rank needs.
    fn forward_rows(
        &self,
        g: &Graph,
        op: &Op,
        n: usize,
        ws: &mut ShardedWorkspace,
    ) -> Result<(), EvalError> {
        let (rows, chunks) = Self::owned(ws, n);
        let consts = &g.consts;
        let ShardedWorkspace {
            buf,
            link,
            acc,
            msg,
            recs,
            failed,
            stopped_by,
        } = ws;
        let isa = buf.isa;
        let out = op.out();
        let (lo, hi) = buf.vals.split_at_mut(out.off as usize);
        match op {
            Op::Unary { f, x, .. } => {
                let xs = read(*x, lo, consts);
                let o = &mut hi[rows.clone()];
                dispatch!(isa, kernels::unary_forward(*f, &xs[rows.clone()], o));
            }
            Op::Binary { f, a, b, .. } => {
                fn pick<'a>(v: &'a [f64], n: usize, rows: &Range<usize>) -> &'a [f64] {
                    if v.len() == n {
                        &v[rows.clone()]
                    } else {
                        v
                    }
                }
                let av = pick(read(*a, lo, consts), n, &rows);
                let bv = pick(read(*b, lo, consts), n, &rows);
                let o = &mut hi[rows.clone()];
                dispatch!(isa, kernels::binary_forward(*f, av, bv, o));
            }
            Op::Gather { x, idx, .. } => {
                let xs = read(*x, lo, consts);
                for i in rows {
                    hi[i] = xs[idx[i] as usize];
                }
            }
            Op::MatVec { m, v, cols, .. } => {
                let (mv, vv) = (read(*m, lo, consts), read(*v, lo, consts));
                let o = &mut hi[rows.clone()];
                dispatch!(
                    isa,
                    kernels::matvec_rows(mv, vv, n, *cols as usize, rows.start, o)
                );
            }
            Op::Sum { x, .. } => {
                let xs = read(*x, lo, consts);
                recs.clear();
                recs.extend(chunks.map(|c| kernels::chunked_sum(isa, &xs[chunk_rows(n, c)])));
                reset(acc, 1);
                fold(link.as_ref(), msg, stopped_by, acc, |acc| {
                    recs.iter().for_each(|s| acc[0] += s);
                    Ok(())
                })?;
                hi[0] = acc[0];
            }
            Op::Dist {
                kind,
                args,
                propto,
                scratch: sc,
                ..
            } => {
                let a = dists::DistArgs::new(*kind, args, *propto, n, lo, consts, isa);
                // This rank's chunks first (the ranks compute at once), then the fold.
                const REC: usize = 5;
                recs.clear();
                *failed = None;
                for (k, c) in chunks.enumerate() {
                    let r = chunk_rows(n, c);
                    // SAFETY: the builder sized `scratch` for every argument run; one thread.
                    match unsafe { a.chunk(r.start, r.end, sc, buf.scratch.as_mut_ptr()) } {
                        Ok((s, sp)) => {
                            recs.push(s);
                            recs.extend_from_slice(&sp);
                        }
                        Err(e) => {
                            *failed = Some((k, e));
                            break;
                        }
                    }
                }
                reset(acc, REC);
                fold(link.as_ref(), msg, stopped_by, acc, |acc| {
                    for rec in recs.chunks_exact(REC) {
                        acc[0] += rec[0];
                        for k in 0..a.nargs {
                            acc[1 + k] += rec[1 + k];
                        }
                    }
                    match failed.take() {
                        Some((_, e)) => Err(e),
                        None => Ok(()),
                    }
                })?;
                for (k, &s) in sc.iter().enumerate() {
                    if s != dists::NO_SCRATCH && args[k].len() == 1 {
                        buf.scratch[s as usize] = acc[1 + k];
                    }
                }
                hi[0] = acc[0];
            }
            Op::Glm { spec, .. } => {
                let len = glm::record_len(spec);
                recs.clear();
                recs.resize(len * chunks.len(), 0.0);
                *failed = None;
                for (k, c) in chunks.enumerate() {
                    let rec = &mut recs[k * len..(k + 1) * len];
                    if let Err(e) = glm::block(spec, consts, lo, &mut buf.scratch, isa, c, rec) {
                        *failed = Some((k, e));
                        break;
                    }
                }
                let done = failed.as_ref().map_or(recs.len() / len, |(k, _)| *k);
                reset(acc, len);
                fold(link.as_ref(), msg, stopped_by, acc, |acc| {
                    for rec in recs[..done * len].chunks_exact(len) {
                        glm::fold_record(acc, rec);
                    }
                    match failed.take() {
                        Some((_, e)) => Err(e),
                        None => Ok(()),
                    }
                })?;
                hi[0] = glm::finish(spec, acc, &mut buf.scratch);
            }
            _ => unreachable!("not a row op: {op:?}"),
        }
        Ok(())
    }

    /// Backward rule of a row op: this rank's rows, folds for adjoints every rank needs.
    fn backward_rows(
        &self,
        g: &Graph,
        op: &Op,
        n: usize,
        ws: &mut ShardedWorkspace,
    ) -> Result<(), EvalError> {
        let (rows, chunks) = Self::owned(ws, n);
        let consts = &g.consts;
        let ShardedWorkspace {
            buf,
            link,
            acc,
            msg,
            recs,
            stopped_by,
            ..
        } = ws;
        let isa = buf.isa;
        let out = op.out();
        let lo = &buf.vals[..out.off as usize];
        let (adj_lo, adj_hi) = buf.adj.split_at_mut(out.off as usize);
        let gr = &adj_hi[..out.len as usize];
        match op {
            Op::Unary { f, x, .. } => {
                if x.is_var() {
                    let xs = &read(*x, lo, consts)[rows.clone()];
                    let ys = &buf.vals[out.range()][rows.clone()];
                    let d = &mut adj_lo[x.range()][rows.clone()];
                    dispatch!(
                        isa,
                        kernels::unary_backward::<false>(*f, xs, ys, &gr[rows.clone()], d)
                    );
                }
            }
            Op::Binary { f, a, b, .. } => {
                let (av, bv) = (read(*a, lo, consts), read(*b, lo, consts));
                let y = &buf.vals[out.range()];
                for operand in [Operand::A, Operand::B] {
                    let target = operand.of(*a, *b);
                    if !target.is_var() {
                        continue;
                    }
                    // The reference's rule chunk by chunk (dispatched as it dispatches it).
                    let each = |adj_lo: &mut [f64], c: usize| {
                        let r = chunk_rows(n, c);
                        macro_rules! rows {
                            () => {
                                kernels::binary_backward_rows(
                                    isa, *f, operand, *a, *b, false, av, bv, y, gr, adj_lo,
                                    r.start, r.end,
                                )
                            };
                        }
                        if f.is_arithmetic() {
                            dispatch!(isa, rows!())
                        } else {
                            rows!()
                        }
                    };
                    if target.len() == n {
                        chunks.clone().for_each(|c| {
                            each(adj_lo, c);
                        });
                        continue;
                    }
                    recs.clear();
                    recs.extend(chunks.clone().map(|c| each(adj_lo, c)));
                    reset(acc, 1);
                    fold(link.as_ref(), msg, stopped_by, acc, |acc| {
                        recs.iter().for_each(|s| acc[0] += s);
                        Ok(())
                    })?;
                    kernels::binary_backward_finish(*f, operand, *a, *b, n, acc[0], adj_lo);
                }
            }
            Op::Sum { x, .. } => {
                if x.is_var() {
                    let g0 = gr[0];
                    adj_lo[x.range()][rows].iter_mut().for_each(|d| *d += g0);
                }
            }
            Op::Gather { x, idx, .. } => {
                if x.is_var() {
                    acc.clear();
                    acc.extend_from_slice(&adj_lo[x.range()]);
                    fold(link.as_ref(), msg, stopped_by, acc, |acc| {
                        kernels::scatter_add(acc, &idx[rows.clone()], &gr[rows.clone()]);
                        Ok(())
                    })?;
                    adj_lo[x.range()].copy_from_slice(acc);
                }
            }
            Op::MatVec { m, v, cols, .. } => {
                if v.is_var() {
                    let cols = *cols as usize;
                    let mv = read(*m, lo, consts);
                    recs.clear();
                    recs.resize(cols * chunks.len(), 0.0);
                    for (k, c) in chunks.enumerate() {
                        let r = chunk_rows(n, c);
                        let rec = &mut recs[k * cols..(k + 1) * cols];
                        dispatch!(
                            isa,
                            kernels::block_dots(isa, mv, gr, n, cols, r.start, r.end, rec)
                        );
                    }
                    reset(acc, cols);
                    fold(link.as_ref(), msg, stopped_by, acc, |acc| {
                        for rec in recs.chunks_exact(cols) {
                            glm::fold_record(acc, rec);
                        }
                        Ok(())
                    })?;
                    glm::fold_record(&mut adj_lo[v.range()], acc);
                }
            }
            Op::Dist {
                args, scratch: sc, ..
            } => {
                // The density's own rule on this rank's rows of the full-length arguments.
                let mut sub = [Arg::konst(0, 0); 4];
                let mut sub_sc = [dists::NO_SCRATCH; 4];
                for (k, a) in args.iter().enumerate() {
                    if a.len() == n {
                        sub[k] = Arg {
                            off: a.off + rows.start as u32,
                            len: rows.len() as u32,
                            ..*a
                        };
                        if sc[k] != dists::NO_SCRATCH {
                            sub_sc[k] = sc[k] + rows.start as u32;
                        }
                    } else {
                        sub[k] = *a;
                        sub_sc[k] = sc[k];
                    }
                }
                let k = args.len();
                let g0 = gr[0];
                let scratch = &buf.scratch;
                dispatch!(
                    isa,
                    dists::backward(&sub[..k], rows.len(), &sub_sc[..k], 0, g0, scratch, adj_lo)
                );
            }
            Op::Glm { spec, .. } => {
                let (g0, scratch) = (gr[0], &buf.scratch);
                dispatch!(
                    isa,
                    glm::backward(spec, false, g0, lo, consts, scratch, adj_lo)
                );
            }
            _ => unreachable!("not a row op: {op:?}"),
        }
        Ok(())
    }
}

/// `acc` as `len` zeros.
fn reset(acc: &mut Vec<f64>, len: usize) {
    acc.clear();
    acc.resize(len, 0.0);
}

impl Executor for ShardedCpu {
    type Workspace = ShardedWorkspace;

    fn new_workspace(&self, g: &Graph) -> ShardedWorkspace {
        ShardedWorkspace {
            buf: Buffers::for_graph(g),
            link: None,
            acc: Vec::new(),
            msg: Vec::new(),
            recs: Vec::new(),
            failed: None,
            stopped_by: None,
        }
    }

    /// The value alone is computed by this rank in full (no messages): the sampler asks for it
    /// rarely, and every rank gets the same bits on its own.
    fn forward(
        &self,
        g: &Graph,
        out: Arg,
        q: &[f64],
        ws: &mut ShardedWorkspace,
    ) -> Result<f64, EvalError> {
        super::SerialCpu.forward(g, out, q, &mut ws.buf)
    }

    fn gradient(
        &self,
        g: &Graph,
        out: Arg,
        q: &[f64],
        ws: &mut ShardedWorkspace,
        grad: &mut [f64],
    ) -> Result<f64, EvalError> {
        if ws.link.is_none() {
            return super::SerialCpu.gradient(g, out, q, &mut ws.buf, grad);
        }
        ws.buf.fit(g);
        ws.buf.vals[..g.dim].copy_from_slice(q);
        for (op, role) in g.ops.iter().zip(&self.plan.roles) {
            match *role {
                Role::Replicated => kernels::forward(
                    op,
                    &g.consts,
                    &mut ws.buf.vals,
                    &mut ws.buf.scratch,
                    ws.buf.isa,
                ),
                Role::Rows(n) => self.forward_rows(g, op, n, ws),
            }
            .map_err(|e| g.locate(op, e))?;
        }
        let buf = &mut ws.buf;
        // The row rules write only this rank's rows and ranks fold some adjoints, so every
        // rule adds (stores 0) into cleared slots.
        g.start_adding_adjoint(out, &mut buf.adj);
        for (op, role) in g.ops.iter().zip(&self.plan.roles).rev() {
            match *role {
                Role::Replicated => kernels::backward(
                    op,
                    0,
                    &g.consts,
                    &ws.buf.vals,
                    &mut ws.buf.adj,
                    &mut ws.buf.scratch,
                    ws.buf.isa,
                ),
                Role::Rows(n) => self.backward_rows(g, op, n, ws)?,
            }
        }
        grad.copy_from_slice(&ws.buf.adj[..g.dim]);
        Ok(g.scalar(out, &ws.buf))
    }
}
