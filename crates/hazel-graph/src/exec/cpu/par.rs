//! The chunked threaded executor ([`ThreadedCpu`]): within-chain parallel evaluation, inside
//! the workspace's own thread pool.
//!
//! Large elementwise ops, density sums and matrix–vector products are split into the same
//! fixed chunks ([`CHUNK`] elements, or column/row blocks) that the serial kernels use; each
//! chunk runs the serial arithmetic on its own range, and partial sums are combined in chunk
//! order. The result is therefore bit-identical to the serial sweep for any number of threads.
//! Small ops, and ops without a parallel rule, run the serial kernels.

use super::dists::{self, DistArgs};
use super::kernels::{self, CHUNK};
use super::{read, Buffers};
use crate::exec::Executor;
use crate::ir::{Arg, Graph, Op};
use crate::simd::{dispatch, Isa};
use hazel_density::EvalError;
use rayon::prelude::*;

/// Ops with at least this many elements run in parallel.
pub const PAR_MIN: usize = 2 * CHUNK;

/// Per-chain buffers of the parallel sweeps, kept in the workspace so that steady-state
/// evaluation allocates nothing.
#[derive(Debug, Default)]
pub struct ParScratch {
    /// One density op's per-chunk results (sum and scalar-argument partials), in chunk order;
    /// its capacity is reused across ops and evaluations.
    dist_parts: Vec<Result<(f64, [f64; 4]), EvalError>>,
}

/// A pointer that may cross threads; every use writes disjoint entries.
#[derive(Clone, Copy)]
struct SendPtr(*mut f64);
// SAFETY: used only for disjoint writes by chunk, see each use.
unsafe impl Send for SendPtr {}
unsafe impl Sync for SendPtr {}

impl SendPtr {
    fn get(self) -> *mut f64 {
        self.0
    }
}

/// Runs `f(i, &mut out[i])` for every element, one parallel task per [`CHUNK`] elements.
#[inline(always)]
fn par_elementwise(out: &mut [f64], f: impl Fn(usize, &mut f64) + Sync) {
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(c, o)| {
        let i0 = c * CHUNK;
        for (j, d) in o.iter_mut().enumerate() {
            f(i0 + j, d);
        }
    });
}

/// `v[i]`, or `v`'s one value when it is a broadcast scalar.
#[inline(always)]
fn at(v: &[f64], i: usize) -> f64 {
    if v.len() == 1 {
        v[0]
    } else {
        v[i]
    }
}

fn forward_op(
    op: &Op,
    consts: &[f64],
    vals: &mut [f64],
    scratch: &mut [f64],
    ws: &mut ParScratch,
    isa: Isa,
) -> Result<(), EvalError> {
    match op {
        Op::Unary { f, x, out } if out.len as usize >= PAR_MIN => {
            let (lo, hi) = vals.split_at_mut(out.off as usize);
            let xs = read(*x, lo, consts);
            let f = *f;
            hi[..out.len as usize]
                .par_chunks_mut(CHUNK)
                .zip(xs.par_chunks(CHUNK))
                .for_each(|(o, xc)| {
                    for (d, v) in o.iter_mut().zip(xc) {
                        *d = f.value(*v);
                    }
                });
            Ok(())
        }
        Op::Binary { f, a, b, out } if out.len as usize >= PAR_MIN => {
            let (lo, hi) = vals.split_at_mut(out.off as usize);
            let av = read(*a, lo, consts);
            let bv = read(*b, lo, consts);
            let f = *f;
            par_elementwise(&mut hi[..out.len as usize], |i, d| {
                *d = f.value(at(av, i), at(bv, i))
            });
            Ok(())
        }
        Op::Dist {
            kind,
            args,
            propto,
            len,
            scratch: sc,
            out,
        } if *len as usize >= PAR_MIN => {
            let (lo, hi) = vals.split_at_mut(out.off as usize);
            let a = DistArgs::new(*kind, args, *propto, *len as usize, lo, consts, isa);
            let ptr = SendPtr(scratch.as_mut_ptr());
            let n = *len as usize;
            // `collect_into_vec` clears the vector and writes into its existing capacity, so
            // after the first evaluation this allocates nothing.
            (0..a.n_chunks())
                .into_par_iter()
                // SAFETY: chunk c writes scratch entries sc[k] + i for i in its own range only.
                .map(|c| unsafe { a.chunk(c * CHUNK, ((c + 1) * CHUNK).min(n), sc, ptr.get()) })
                .collect_into_vec(&mut ws.dist_parts);
            // The first failing chunk in chunk order decides the error, as in the serial sweep.
            if let Some(Err(e)) = ws.dist_parts.iter().find(|p| p.is_err()) {
                return Err(e.clone());
            }
            let parts = ws
                .dist_parts
                .iter()
                .filter_map(|p| p.as_ref().ok().copied());
            hi[0] = dists::combine(parts, a.nargs, &a.slices, sc, scratch);
            Ok(())
        }
        Op::MatVec {
            m,
            v,
            rows,
            cols,
            out,
        } if (*rows as usize) * (*cols as usize) >= PAR_MIN && *rows as usize >= PAR_MIN => {
            let (lo, hi) = vals.split_at_mut(out.off as usize);
            let mv = read(*m, lo, consts);
            let vv = read(*v, lo, consts);
            let (rows, cols) = (*rows as usize, *cols as usize);
            // Row blocks: each row accumulates over the columns in the serial order.
            hi[..rows]
                .par_chunks_mut(CHUNK)
                .enumerate()
                .for_each(|(blk, o)| {
                    dispatch!(
                        isa,
                        kernels::matvec_rows(mv, vv, rows, cols, blk * CHUNK, o)
                    )
                });
            Ok(())
        }
        _ => kernels::forward(op, consts, vals, scratch, isa),
    }
}

fn backward_op(
    op: &Op,
    stores: u32,
    consts: &[f64],
    vals: &[f64],
    adj: &mut [f64],
    scratch: &mut [f64],
    isa: Isa,
) {
    let out = op.out();
    match op {
        Op::Unary { f, x, .. } if out.len as usize >= PAR_MIN && x.is_var() => {
            let (adj_lo, adj_hi) = adj.split_at_mut(out.off as usize);
            let g = &adj_hi[..out.len as usize];
            let lo = &vals[..out.off as usize];
            let xs = read(*x, lo, consts);
            let ys = &vals[out.range()];
            let f = *f;
            let store = stores & 1 != 0;
            par_elementwise(&mut adj_lo[x.range()], |i, d| {
                let p = f.deriv(xs[i], ys[i]);
                let base = if store { 0.0 } else { *d };
                *d = base + if p == 0.0 { 0.0 } else { g[i] * p };
            });
        }
        Op::Binary { f, a, b, .. }
            if out.len as usize >= PAR_MIN
                && (!a.is_var() || a.len == out.len)
                && (!b.is_var() || b.len == out.len)
                && !(a.is_var() && b.is_var()) =>
        {
            // Exactly one full-length varying argument: disjoint elementwise updates.
            let (adj_lo, adj_hi) = adj.split_at_mut(out.off as usize);
            let g = &adj_hi[..out.len as usize];
            let lo = &vals[..out.off as usize];
            let av = read(*a, lo, consts);
            let bv = read(*b, lo, consts);
            let y = &vals[out.range()];
            let f = *f;
            let (target, first): (Arg, bool) = if a.is_var() { (*a, true) } else { (*b, false) };
            let store = stores >> (if first { 0 } else { 1 }) & 1 != 0;
            par_elementwise(&mut adj_lo[target.range()], |i, d| {
                let (pa, pb) = f.partials(at(av, i), at(bv, i), y[i]);
                let p = if first { pa } else { pb };
                let base = if store { 0.0 } else { *d };
                *d = base + if p == 0.0 { 0.0 } else { g[i] * p };
            });
        }
        Op::Dist {
            args,
            len,
            scratch: sc,
            ..
        } if *len as usize >= PAR_MIN => {
            let (adj_lo, adj_hi) = adj.split_at_mut(out.off as usize);
            let g0 = adj_hi[0];
            for (k, a) in args.iter().enumerate() {
                if sc[k] == dists::NO_SCRATCH {
                    continue;
                }
                let s = &scratch[sc[k] as usize..sc[k] as usize + a.len()];
                let store = stores >> k & 1 != 0;
                adj_lo[a.range()]
                    .par_chunks_mut(CHUNK)
                    .zip(s.par_chunks(CHUNK))
                    .for_each(|(d, p)| {
                        for (dj, pj) in d.iter_mut().zip(p) {
                            let base = if store { 0.0 } else { *dj };
                            *dj = base + g0 * pj;
                        }
                    });
            }
        }
        Op::MatVec {
            m, v, rows, cols, ..
        } if (*rows as usize) * (*cols as usize) >= PAR_MIN && *rows as usize >= PAR_MIN => {
            let rows = *rows as usize;
            let (adj_lo, adj_hi) = adj.split_at_mut(out.off as usize);
            let g = &adj_hi[..rows];
            let lo = &vals[..out.off as usize];
            let mv = read(*m, lo, consts);
            let vv = read(*v, lo, consts);
            if v.is_var() && m.is_var() {
                // Both on the tape: rare; keep the serial rule.
                kernels::backward(op, stores, consts, vals, adj, scratch, isa);
                return;
            }
            if v.is_var() {
                adj_lo[v.range()]
                    .par_iter_mut()
                    .enumerate()
                    .for_each(|(c, d)| {
                        *d += kernels::dot(isa, &mv[c * rows..(c + 1) * rows], g);
                    });
            }
            if m.is_var() {
                adj_lo[m.range()]
                    .par_chunks_mut(rows)
                    .enumerate()
                    .for_each(|(c, d)| {
                        let vc = vv[c];
                        for (dr, gr) in d.iter_mut().zip(g) {
                            *dr += gr * vc;
                        }
                    });
            }
        }
        _ => kernels::backward(op, stores, consts, vals, adj, scratch, isa),
    }
}

/// Forward and backward sweeps with large ops split over the current thread pool.
pub fn forward_backward(
    g: &Graph,
    out: Arg,
    q: &[f64],
    buf: &mut Buffers,
    par: &mut ParScratch,
) -> Result<(), EvalError> {
    buf.vals[..g.dim].copy_from_slice(q);
    for op in &g.ops {
        forward_op(op, &g.consts, &mut buf.vals, &mut buf.scratch, par, buf.isa)
            .map_err(|e| g.locate(op, e))?;
    }
    g.start_adjoint(out, &mut buf.adj);
    for (i, op) in g.ops.iter().enumerate().rev() {
        backward_op(
            op,
            g.adjoint_stores_of(i),
            &g.consts,
            &buf.vals,
            &mut buf.adj,
            &mut buf.scratch,
            buf.isa,
        );
    }
    Ok(())
}

/// Large ops split into fixed chunks on the workspace's own thread pool of `threads`.
#[derive(Debug, Clone, Copy)]
pub struct ThreadedCpu {
    pub threads: usize,
}

/// The threaded executor's workspace: the buffers, the pool, the per-chunk partials.
pub struct ThreadedWorkspace {
    pub(crate) buf: Buffers,
    /// `None` if the pool could not be built: the sweeps then run on the caller's thread
    /// (same bits).
    pool: Option<rayon::ThreadPool>,
    par: ParScratch,
}

impl std::fmt::Debug for ThreadedWorkspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadedWorkspace")
            .field("values", &self.buf.vals.len())
            .field(
                "threads",
                &self.pool.as_ref().map(|p| p.current_num_threads()),
            )
            .finish()
    }
}

impl Executor for ThreadedCpu {
    type Workspace = ThreadedWorkspace;

    fn new_workspace(&self, g: &Graph) -> ThreadedWorkspace {
        ThreadedWorkspace {
            buf: Buffers::for_graph(g),
            pool: rayon::ThreadPoolBuilder::new()
                .num_threads(self.threads.max(1))
                .build()
                .ok(),
            par: ParScratch::default(),
        }
    }

    fn forward(
        &self,
        g: &Graph,
        out: Arg,
        q: &[f64],
        ws: &mut ThreadedWorkspace,
    ) -> Result<f64, EvalError> {
        // The forward sweep alone is rarely asked for; it runs the reference rules.
        ws.buf.fit(g);
        g.forward(q, &mut ws.buf)?;
        Ok(g.scalar(out, &ws.buf))
    }

    fn gradient(
        &self,
        g: &Graph,
        out: Arg,
        q: &[f64],
        ws: &mut ThreadedWorkspace,
        grad: &mut [f64],
    ) -> Result<f64, EvalError> {
        ws.buf.fit(g);
        let (buf, par) = (&mut ws.buf, &mut ws.par);
        match &ws.pool {
            Some(pool) => pool.install(|| forward_backward(g, out, q, buf, par))?,
            None => forward_backward(g, out, q, buf, par)?,
        }
        grad.copy_from_slice(&ws.buf.adj[..g.dim]);
        Ok(g.scalar(out, &ws.buf))
    }
}
