//! The batched executor: K points in one call, op-major — for each op, all K lanes.
//!
//! Each lane has its own flat value, adjoint and scratch buffers, laid out lane after lane in
//! one allocation (`vals[lane · n_vals + slot]`), so any op can run on one lane with the
//! reference kernels unchanged. Ops where the lanes share a large operand get a lane-aware
//! rule: a matrix × vector with a constant (data) matrix — a design matrix `X β` — is, over K
//! points, one matrix × matrix, so it walks the matrix once in cache-sized blocks and applies
//! each block to every lane while it is in cache; a fused GLM with a data matrix runs its
//! per-block rule with the blocks outermost and the lanes inside, for the same reason. Each lane's arithmetic is still the
//! reference's, value by value in the same order (rows accumulate over columns in column order;
//! the vector's adjoint sums rows in the same [`CHUNK`]-row chunks, combined in chunk order), so
//! every lane gives the reference executor's bits.
//!
//! A lane whose evaluation fails stops there (its result is the error); the others go on.

use super::glm;
use super::kernels::{self, dot, dot4, CHUNK};
use super::read;
use crate::exec::Executor;
use crate::ir::{Arg, Graph, Op, Space};
use hazel_density::EvalError;

/// Rows of a constant matrix applied to every lane before moving on (`ROW_BLOCK × 8` bytes
/// per column: a block of a few columns stays in L1 while the lanes use it).
const ROW_BLOCK: usize = 512;

/// Runs up to `lanes` points per call, op-major.
#[derive(Debug, Clone, Copy)]
pub struct BatchedCpu {
    /// Points per pass; larger batches run in groups of this many.
    pub lanes: usize,
}

/// K lanes of buffers for one graph, flat and lane-major, plus the lane-aware rules' scratch.
#[derive(Debug, Default)]
pub struct BatchWorkspace {
    lanes: usize,
    n_vals: usize,
    n_scratch: usize,
    vals: Vec<f64>,
    adj: Vec<f64>,
    scratch: Vec<f64>,
    /// Per-lane partial sums of a lane-aware rule (`lanes × widest matrix`).
    tmp: Vec<f64>,
    alive: Vec<bool>,
    /// Per-lane running totals of a fused GLM's block records (`lanes × record length`), and
    /// one block's record.
    glm_totals: Vec<f64>,
    glm_record: Vec<f64>,
    /// Per lane, a fused GLM block's sums in progress while it runs in pieces, and whether
    /// the lane is still running the block in pieces.
    glm_pieces: Vec<glm::Pieces>,
    glm_piecewise: Vec<bool>,
    /// The instruction set of the per-lane kernels (same bits for every choice).
    pub(crate) isa: crate::simd::Isa,
}

impl BatchWorkspace {
    /// Grows (never shrinks) the buffers to `lanes` lanes of `g`.
    fn fit(&mut self, g: &Graph, lanes: usize) {
        let lanes = lanes.max(self.lanes);
        if lanes == self.lanes && g.n_vals <= self.n_vals && g.n_scratch <= self.n_scratch {
            return;
        }
        self.lanes = lanes;
        self.n_vals = self.n_vals.max(g.n_vals);
        self.n_scratch = self.n_scratch.max(g.n_scratch);
        self.vals.resize(lanes * self.n_vals, 0.0);
        self.adj.resize(lanes * self.n_vals, 0.0);
        self.scratch.resize(lanes * self.n_scratch, 0.0);
        self.alive.resize(lanes, false);
        // The lane-aware rules' partial sums: `lanes ×` the widest data matrix.
        let cols = g
            .ops
            .iter()
            .map(|op| match op {
                Op::MatVec { cols, .. } => *cols as usize,
                _ => 0,
            })
            .max()
            .unwrap_or(0);
        if self.tmp.len() < lanes * cols {
            self.tmp.resize(lanes * cols, 0.0);
        }
    }
}

impl BatchedCpu {
    /// Evaluates `lps.len()` (≤ the workspace's lanes) points; with `grads`, also the gradients.
    fn run(
        &self,
        g: &Graph,
        out: Arg,
        qs: &[f64],
        ws: &mut BatchWorkspace,
        lps: &mut [Result<f64, EvalError>],
        grads: Option<&mut [f64]>,
    ) {
        let k = lps.len();
        let d = g.dim;
        ws.fit(g, k);
        let (nv, ns) = (ws.n_vals, ws.n_scratch);
        for l in 0..k {
            ws.vals[l * nv..l * nv + d].copy_from_slice(&qs[l * d..(l + 1) * d]);
            ws.alive[l] = true;
        }
        for op in &g.ops {
            if k > 1 && (matvec_forward(op, &g.consts, ws, k) || glm_forward(op, g, ws, lps)) {
                continue;
            }
            for (l, lp) in lps.iter_mut().enumerate() {
                if !ws.alive[l] {
                    continue;
                }
                let vals = &mut ws.vals[l * nv..(l + 1) * nv];
                let scratch = &mut ws.scratch[l * ns..(l + 1) * ns];
                if let Err(e) = kernels::forward(op, &g.consts, vals, scratch, ws.isa) {
                    *lp = Err(g.locate(op, e));
                    ws.alive[l] = false;
                }
            }
        }
        for (l, lp) in lps.iter_mut().enumerate() {
            if ws.alive[l] {
                *lp = Ok(read(out, &ws.vals[l * nv..(l + 1) * nv], &g.consts)[0]);
            }
        }
        let Some(grads) = grads else {
            return;
        };
        for l in 0..k {
            if !ws.alive[l] {
                continue;
            }
            g.start_adjoint(out, &mut ws.adj[l * nv..l * nv + g.n_vals]);
        }
        for (i, op) in g.ops.iter().enumerate().rev() {
            if k > 1 && matvec_backward(op, &g.consts, ws, k) {
                continue;
            }
            for l in 0..k {
                if !ws.alive[l] {
                    continue;
                }
                let vals = &ws.vals[l * nv..(l + 1) * nv];
                let adj = &mut ws.adj[l * nv..(l + 1) * nv];
                let scratch = &mut ws.scratch[l * ns..(l + 1) * ns];
                kernels::backward(
                    op,
                    g.adjoint_stores_of(i),
                    &g.consts,
                    vals,
                    adj,
                    scratch,
                    ws.isa,
                );
            }
        }
        for l in 0..k {
            if ws.alive[l] {
                grads[l * d..(l + 1) * d].copy_from_slice(&ws.adj[l * nv..l * nv + d]);
            }
        }
    }
}

/// `out = M v` with a constant `M` and a varying `v`, the op the batched matvec rules take:
/// (`M`'s values, column-major; the offsets of `v` and `out` in a lane's values; rows;
/// columns).
fn const_matvec<'c>(op: &Op, consts: &'c [f64]) -> Option<(&'c [f64], usize, usize, usize, usize)> {
    let &Op::MatVec {
        m,
        v,
        rows,
        cols,
        out,
    } = op
    else {
        return None;
    };
    let (v0, o0) = (v.off as usize, out.off as usize);
    (m.space == Space::Const && v.is_var())
        .then(|| (&consts[m.range()], v0, o0, rows as usize, cols as usize))
}

/// `out = M v` with a constant `M`, every live lane: row block by row block, each block of
/// four columns applied to every lane while it is in cache. Per value, the reference order
/// ([`kernels::matvec`]): `((0 + m₀v₀) + m₁v₁) + …`. Returns `false` (nothing done) for other ops.
fn matvec_forward(op: &Op, consts: &[f64], ws: &mut BatchWorkspace, k: usize) -> bool {
    let Some((mv, v0, o0, rows, cols)) = const_matvec(op, consts) else {
        return false;
    };
    let nv = ws.n_vals;
    for r0 in (0..rows).step_by(ROW_BLOCK) {
        let r1 = (r0 + ROW_BLOCK).min(rows);
        for l in (0..k).filter(|&l| ws.alive[l]) {
            ws.vals[l * nv + o0 + r0..l * nv + o0 + r1]
                .iter_mut()
                .for_each(|o| *o = 0.0);
        }
        let col = |c: usize| &mv[c * rows + r0..c * rows + r1];
        let mut c = 0;
        while c + 4 <= cols {
            let (m0, m1, m2, m3) = (col(c), col(c + 1), col(c + 2), col(c + 3));
            for l in (0..k).filter(|&l| ws.alive[l]) {
                let (lo, hi) = ws.vals[l * nv..(l + 1) * nv].split_at_mut(o0);
                let vs = &lo[v0 + c..v0 + c + 4];
                let (v0, v1, v2, v3) = (vs[0], vs[1], vs[2], vs[3]);
                let rows4 = hi[r0..r1].iter_mut().zip(m0).zip(m1).zip(m2).zip(m3);
                for ((((o, a0), a1), a2), a3) in rows4 {
                    *o = (((*o + a0 * v0) + a1 * v1) + a2 * v2) + a3 * v3;
                }
            }
            c += 4;
        }
        for c in c..cols {
            let mc = col(c);
            for l in (0..k).filter(|&l| ws.alive[l]) {
                let (lo, hi) = ws.vals[l * nv..(l + 1) * nv].split_at_mut(o0);
                let vc = lo[v0 + c];
                for (o, mr) in hi[r0..r1].iter_mut().zip(mc) {
                    *o += mr * vc;
                }
            }
        }
    }
    true
}

/// A fused GLM (`Op::Glm`) with a constant design matrix, every live lane: the op's own
/// per-block rule with the blocks of `X` outermost and the lanes inside, so each block is
/// read from memory once and used by every lane while it is in cache. Where the block runs
/// in pieces ([`glm::Pieces`]), the pieces are outermost too, so each piece of `X` serves
/// every lane from cache; each lane keeps its own sums in progress. Each lane
/// runs exactly the blocks and pieces, in the order, of [`glm::forward`], and each block's
/// record is added to the lane's totals by [`glm::fold_record`]. A lane whose block fails
/// stops there. Returns `false` (nothing done) for other ops.
fn glm_forward(
    op: &Op,
    g: &Graph,
    ws: &mut BatchWorkspace,
    lps: &mut [Result<f64, EvalError>],
) -> bool {
    let Op::Glm { spec, out } = op else {
        return false;
    };
    if spec.x.space != Space::Const {
        return false;
    }
    let (nv, ns, k) = (ws.n_vals, ws.n_scratch, lps.len());
    let len = glm::record_len(spec);
    ws.glm_totals.clear();
    ws.glm_totals.resize(k * len, 0.0);
    ws.glm_record.resize(len, 0.0);
    if ws.glm_pieces.len() < k {
        ws.glm_pieces.resize_with(k, Default::default);
    }
    ws.glm_piecewise.resize(k, false);
    let below = out.off as usize;
    let consts = &g.consts[..];
    for blk in 0..glm::blocks(spec) {
        let block = glm::block_rows(spec, blk);
        let piecewise = glm::pieces_apply(spec, block.0, block.1);
        for l in 0..k {
            ws.glm_piecewise[l] = piecewise && ws.alive[l];
            if ws.glm_piecewise[l] {
                ws.glm_pieces[l].reset(spec.cols as usize);
            }
        }
        if piecewise {
            for piece in glm::pieces(block.0, block.1) {
                for (l, lp) in lps.iter_mut().enumerate() {
                    if !ws.glm_piecewise[l] {
                        continue;
                    }
                    let lo = &mut ws.vals[l * nv..l * nv + below];
                    let scratch = &mut ws.scratch[l * ns..(l + 1) * ns];
                    let st = &mut ws.glm_pieces[l];
                    match st.piece(spec, consts, lo, scratch, ws.isa, block, piece) {
                        Ok(true) => {}
                        Ok(false) => ws.glm_piecewise[l] = false,
                        Err(e) => {
                            *lp = Err(g.locate(op, e));
                            ws.alive[l] = false;
                            ws.glm_piecewise[l] = false;
                        }
                    }
                }
            }
        }
        for (l, lp) in lps.iter_mut().enumerate() {
            if !ws.alive[l] {
                continue;
            }
            let lo = &mut ws.vals[l * nv..l * nv + below];
            let scratch = &mut ws.scratch[l * ns..(l + 1) * ns];
            let rec = &mut ws.glm_record;
            // The pieces' record, or (no branch-free forms, a failed check) the whole block's.
            let done = ws.glm_piecewise[l]
                && ws.glm_pieces[l].finish(spec, consts, lo, scratch, ws.isa, block, rec);
            let result = if done {
                Ok(())
            } else {
                glm::whole_block(spec, consts, lo, scratch, ws.isa, block.0, block.1, rec)
            };
            match result {
                Ok(()) => glm::fold_record(&mut ws.glm_totals[l * len..(l + 1) * len], rec),
                Err(e) => {
                    *lp = Err(g.locate(op, e));
                    ws.alive[l] = false;
                }
            }
        }
    }
    for l in (0..k).filter(|&l| ws.alive[l]) {
        let scratch = &mut ws.scratch[l * ns..(l + 1) * ns];
        ws.vals[l * nv + below] =
            glm::finish(spec, &ws.glm_totals[l * len..(l + 1) * len], scratch);
    }
    true
}

/// The vector's adjoint of `out = M v` with a constant `M`, every live lane:
/// `adj_v[c] += dot(M[:, c], adj_out)`, summed in [`dot`]'s chunks, each chunk of four
/// columns applied to every lane while it is in cache, the chunk sums added in chunk order
/// (so each value is the reference's `dot`/`dot4` to the bit: a sum that starts at `+0.0`
/// never becomes `-0.0`, so `t + (0 + s)` is `t + s`).
fn matvec_backward(op: &Op, consts: &[f64], ws: &mut BatchWorkspace, k: usize) -> bool {
    let Some((mv, v0, o0, rows, cols)) = const_matvec(op, consts) else {
        return false;
    };
    let nv = ws.n_vals;
    let col = |c: usize, s: usize, e: usize| &mv[c * rows + s..c * rows + e];
    if ws.tmp.len() < k * cols {
        // Only when the workspace was sized for another graph.
        ws.tmp.resize(k * cols, 0.0);
    }
    let tmp = &mut ws.tmp[..k * cols];
    tmp.iter_mut().for_each(|t| *t = 0.0);
    let mut start = 0;
    while start < rows {
        let end = (start + CHUNK).min(rows);
        let mut c = 0;
        while c + 4 <= cols {
            let block = [
                col(c, start, end),
                col(c + 1, start, end),
                col(c + 2, start, end),
                col(c + 3, start, end),
            ];
            for l in (0..k).filter(|&l| ws.alive[l]) {
                let g = &ws.adj[l * nv + o0 + start..l * nv + o0 + end];
                let s = dot4(ws.isa, block, g);
                for (t, sc) in tmp[l * cols + c..l * cols + c + 4].iter_mut().zip(s) {
                    *t += sc;
                }
            }
            c += 4;
        }
        for c in c..cols {
            let cc = col(c, start, end);
            for l in (0..k).filter(|&l| ws.alive[l]) {
                let g = &ws.adj[l * nv + o0 + start..l * nv + o0 + end];
                tmp[l * cols + c] += dot(ws.isa, cc, g);
            }
        }
        start = end;
    }
    for l in (0..k).filter(|&l| ws.alive[l]) {
        let d = &mut ws.adj[l * nv + v0..l * nv + v0 + cols];
        for (dc, t) in d.iter_mut().zip(&tmp[l * cols..(l + 1) * cols]) {
            *dc += t;
        }
    }
    true
}

impl Executor for BatchedCpu {
    type Workspace = BatchWorkspace;

    /// A workspace of one lane; a batch call grows it to the lanes it uses (up to `lanes`), so
    /// a workspace that only ever sees single points (a lockstep chain's own) stays one lane
    /// wide.
    fn new_workspace(&self, g: &Graph) -> BatchWorkspace {
        let mut ws = BatchWorkspace::default();
        ws.fit(g, 1);
        ws
    }

    fn forward(
        &self,
        g: &Graph,
        out: Arg,
        q: &[f64],
        ws: &mut BatchWorkspace,
    ) -> Result<f64, EvalError> {
        let mut lp = [Ok(0.0)];
        self.run(g, out, q, ws, &mut lp, None);
        let [lp] = lp;
        lp
    }

    fn gradient(
        &self,
        g: &Graph,
        out: Arg,
        q: &[f64],
        ws: &mut BatchWorkspace,
        grad: &mut [f64],
    ) -> Result<f64, EvalError> {
        let mut lp = [Ok(0.0)];
        self.run(g, out, q, ws, &mut lp, Some(grad));
        let [lp] = lp;
        lp
    }

    fn gradient_batch(
        &self,
        g: &Graph,
        out: Arg,
        qs: &[f64],
        ws: &mut BatchWorkspace,
        lps: &mut [Result<f64, EvalError>],
        grads: &mut [f64],
    ) {
        let d = g.dim;
        let lanes = self.lanes.max(1);
        for (i, group) in lps.chunks_mut(lanes).enumerate() {
            let (a, b) = (i * lanes * d, (i * lanes + group.len()) * d);
            self.run(g, out, &qs[a..b], ws, group, Some(&mut grads[a..b]));
        }
    }
}
