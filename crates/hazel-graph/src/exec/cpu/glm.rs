//! GLM fusion, the executor half: the value and gradient rules of `Op::Glm` (see
//! `crate::ir::glm` for what it computes and why its bits equal the unfused graph's).

use super::dists::{DistArgs, LaneSums, NO_SCRATCH};
use super::kernels::{self, ChunkSum, CHUNK};
use super::read;
use crate::ir::glm::GlmSpec;
use crate::ir::Slot;
use crate::simd::{dispatch, Isa};
use hazel_density::EvalError;

/// Forward rule: `out[0]` = the density's sum; `∂lp/∂β`, `∂lp/∂α` and the density's other
/// partials left in scratch. Block by block ([`block`]), each block's record added to the
/// totals in block order ([`fold_record`]), the totals stored by [`finish`]. The batched
/// executor runs the same steps with the blocks outermost and its lanes inside, so a block of
/// `X` serves every lane while it is in cache; the sharded executor runs a rank's share of the
/// blocks and folds every rank's records in block order.
pub fn forward(
    s: &GlmSpec,
    consts: &[f64],
    vals: &mut [f64],
    out: Slot,
    scratch: &mut [f64],
    isa: Isa,
) -> Result<(), EvalError> {
    // The record is short (6 + cols values); on the stack for the usual widths.
    let mut stack = [0.0f64; 2 * STACK_RECORD];
    let mut heap = Vec::new();
    let len = record_len(s);
    let (acc, rec) = if 2 * len <= stack.len() {
        stack[..2 * len].split_at_mut(len)
    } else {
        heap.resize(2 * len, 0.0);
        heap.split_at_mut(len)
    };
    let (lo, hi) = vals.split_at_mut(out.off as usize);
    for blk in 0..blocks(s) {
        block(s, consts, lo, scratch, isa, blk, rec)?;
        fold_record(acc, rec);
    }
    hi[0] = finish(s, acc, scratch);
    Ok(())
}

/// Blocks of [`CHUNK`] rows.
pub(crate) fn blocks(s: &GlmSpec) -> usize {
    (s.rows as usize).div_ceil(CHUNK)
}

/// The rows `r0..r1` of block `blk`.
pub(crate) fn block_rows(s: &GlmSpec, blk: usize) -> (usize, usize) {
    (blk * CHUNK, ((blk + 1) * CHUNK).min(s.rows as usize))
}

/// Records up to this long live on the stack (GLMs of up to ~120 columns).
const STACK_RECORD: usize = 128;

/// The length of one block's record: the density's sum, the partial sums of its (up to four)
/// scalar arguments, the block's `cols` terms of `Xᵀ ∂η`, and its `Σ ∂η`.
pub(crate) fn record_len(s: &GlmSpec) -> usize {
    1 + 4 + s.cols as usize + 1
}

/// Block `blk` (rows `blk·CHUNK ..`): writes η's rows into its slot and the density's per-row
/// partials into scratch, and the block's record into `rec`. `lo` is the value buffer below
/// the op's output.
///
/// Run in pieces of [`PIECE`] rows where it can ([`block_in_pieces`]), else whole
/// ([`whole_block`]); the two give the same bits.
pub(crate) fn block(
    s: &GlmSpec,
    consts: &[f64],
    lo: &mut [f64],
    scratch: &mut [f64],
    isa: Isa,
    blk: usize,
    rec: &mut [f64],
) -> Result<(), EvalError> {
    let (r0, r1) = block_rows(s, blk);
    if block_in_pieces(s, consts, lo, scratch, isa, r0, r1, rec)? {
        return Ok(());
    }
    whole_block(s, consts, lo, scratch, isa, r0, r1, rec)
}

/// Rows per piece of [`block_in_pieces`] (a multiple of 8; the pieces never change the bits).
/// As long as a block: `X` is column-major, so a piece reads `cols` separate runs of
/// `PIECE · 8` bytes, and the hardware's stream prefetchers need runs that long to keep up.
/// Measured on a Zen 4 EPYC (logistic regression, 20 columns, one thread): pieces of 128 rows
/// (1 KB per column, a piece of `X` kept in L1 until its dot products) took 665 µs at
/// N = 100k, 512 rows 600–640 µs, 2048 rows 484 µs; N = 10k, in L2 either way, was unchanged
/// (43 µs). The piece still fits L2, where the dot products re-read it. Software prefetch of
/// the next piece's rows, tried with 128-row pieces, did not help.
const PIECE: usize = CHUNK;

/// Columns up to this many keep their gradient's lane sums on the stack (see [`STACK_RECORD`]).
const PIECE_COLS: usize = STACK_RECORD;

/// A block's sums in progress while it runs in pieces ([`Pieces::piece`]): the density's
/// lane sums, the lane sums of `Xᵀ ∂η`'s dot products (one row of 8 per column), and those of
/// `Σ ∂η`. The batched executor keeps one per lane, so that each piece of `X` serves every
/// lane while it is in cache.
#[derive(Debug, Clone)]
pub(crate) struct Pieces {
    sums: LaneSums,
    dot_lanes: [[f64; 8]; PIECE_COLS],
    p_sum: ChunkSum,
}

impl Default for Pieces {
    fn default() -> Self {
        Pieces {
            sums: LaneSums::default(),
            dot_lanes: [[0.0; 8]; PIECE_COLS],
            p_sum: ChunkSum::default(),
        }
    }
}

/// Whether the block `r0..r1` can run in pieces: at least 8 rows and at most [`PIECE_COLS`]
/// columns (the family's branch-free forms are asked for by [`Pieces::piece`]).
pub(crate) fn pieces_apply(s: &GlmSpec, r0: usize, r1: usize) -> bool {
    r1 - r0 >= 8 && s.cols as usize <= PIECE_COLS
}

/// The pieces of the block `r0..r1`: `(i, i1)` for each, in row order.
pub(crate) fn pieces(r0: usize, r1: usize) -> impl Iterator<Item = (usize, usize)> {
    (r0..r1)
        .step_by(PIECE)
        .map(move |i| (i, (i + PIECE).min(r1)))
}

impl Pieces {
    /// Starts the block afresh.
    pub(crate) fn reset(&mut self, cols: usize) {
        self.sums = LaneSums::default();
        self.dot_lanes[..cols]
            .iter_mut()
            .for_each(|l| *l = [0.0; 8]);
        self.p_sum = ChunkSum::default();
    }

    /// Rows `i..i1` of the block `r0..r1` ([`pieces`]): η for the piece, the density's
    /// elements of the piece ([`DistArgs::chunk_part`]), and the piece's terms of `Xᵀ ∂η`
    /// and `Σ ∂η` as lane sums ([`kernels::block_dot_lanes`], [`ChunkSum`]). `Ok(false)`:
    /// the family has no branch-free forms (nothing done); the caller runs [`whole_block`].
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn piece(
        &mut self,
        s: &GlmSpec,
        consts: &[f64],
        lo: &mut [f64],
        scratch: &mut [f64],
        isa: Isa,
        (r0, r1): (usize, usize),
        (i, i1): (usize, usize),
    ) -> Result<bool, EvalError> {
        let (rows, cols) = (s.rows as usize, s.cols as usize);
        eta_rows(s, consts, lo, isa, i, i1);
        let lo_ro: &[f64] = lo;
        let a = DistArgs::new(s.kind, &s.args, s.propto, rows, lo_ro, consts, isa);
        // SAFETY: the builder sized `scratch` for every argument run; one thread.
        let sc = scratch.as_mut_ptr();
        if !unsafe { a.chunk_part(r0, r1, i, i1, &s.scratch, sc, &mut self.sums)? } {
            return Ok(false);
        }
        let xm = read(s.x, lo_ro, consts);
        // The piece's whole groups of 8 rows (all of it but the block's last n mod 8).
        let t0 = r0 + (r1 - r0) / 8 * 8;
        let p_off = s.scratch[s.eta] as usize;
        let p = &scratch[p_off + i..p_off + i1.min(t0)];
        let dot_lanes = &mut self.dot_lanes[..cols];
        let p_sum = &mut self.p_sum;
        dispatch!(isa, {
            kernels::block_dot_lanes(isa, xm, p, rows, i, dot_lanes);
            p_sum.add8(isa, p);
        });
        Ok(true)
    }

    /// The block's record from its pieces, in the whole block's shape: the same bits as
    /// [`whole_block`]. `false` (nothing written): an element failed a check, and the caller
    /// runs `whole_block` for the error naming it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn finish(
        &self,
        s: &GlmSpec,
        consts: &[f64],
        lo: &[f64],
        scratch: &[f64],
        isa: Isa,
        (r0, r1): (usize, usize),
        rec: &mut [f64],
    ) -> bool {
        let (rows, cols) = (s.rows as usize, s.cols as usize);
        let a = DistArgs::new(s.kind, &s.args, s.propto, rows, lo, consts, isa);
        let Some((part, sp)) = a.chunk_part_finish(r0, r1, &self.sums) else {
            return false;
        };
        rec[0] = part;
        rec[1..5].copy_from_slice(&sp);
        let xm = read(s.x, lo, consts);
        let p_off = s.scratch[s.eta] as usize;
        let p = &scratch[p_off..p_off + rows];
        let dot_lanes = &self.dot_lanes[..cols];
        kernels::block_dots_finish(xm, p, rows, r0, r1, dot_lanes, &mut rec[5..5 + cols]);
        // `chunked_sum` adds the block's sum to a zero total.
        let t0 = r0 + (r1 - r0) / 8 * 8;
        rec[5 + cols] = 0.0 + self.p_sum.finish(&p[t0..r1]);
        true
    }
}

/// [`whole_block`]'s work a piece of rows at a time ([`Pieces`]), finished after the last
/// piece in the block's shape: the same bits as the whole block. Returns `false` (nothing to
/// keep) where it does not apply: a family without branch-free forms, a block of fewer than
/// 8 rows or more than [`PIECE_COLS`] columns, or an element that failed a check (the whole
/// block then runs again and names it).
#[allow(clippy::too_many_arguments)]
fn block_in_pieces(
    s: &GlmSpec,
    consts: &[f64],
    lo: &mut [f64],
    scratch: &mut [f64],
    isa: Isa,
    r0: usize,
    r1: usize,
    rec: &mut [f64],
) -> Result<bool, EvalError> {
    if !pieces_apply(s, r0, r1) {
        return Ok(false);
    }
    let mut st = Pieces::default();
    for piece in pieces(r0, r1) {
        if !st.piece(s, consts, lo, scratch, isa, (r0, r1), piece)? {
            return Ok(false);
        }
    }
    Ok(st.finish(s, consts, lo, scratch, isa, (r0, r1), rec))
}

/// η's rows `i0..i1` (`X β`, plus α), written into η's (otherwise unread) slot. `X` and `β`
/// were the product's inputs, so they lie below the product's output, which is at or below
/// η.
fn eta_rows(s: &GlmSpec, consts: &[f64], lo: &mut [f64], isa: Isa, i0: usize, i1: usize) {
    let (rows, cols) = (s.rows as usize, s.cols as usize);
    let alpha = s.alpha.map(|a| read(a, lo, consts)[0]);
    let (below, from_eta) = lo.split_at_mut(s.args[s.eta].off as usize);
    let (xm, beta) = (read(s.x, below, consts), read(s.beta, below, consts));
    let eta = &mut from_eta[i0..i1];
    dispatch!(isa, kernels::matvec_rows(xm, beta, rows, cols, i0, eta));
    if let Some(a) = alpha {
        // Add's rounding, with the operands in the unfused op's order (a + b = b + a
        // exactly in IEEE arithmetic).
        eta.iter_mut().for_each(|e| *e += a);
    }
}

/// The block `r0..r1` whole: η's rows, the density's chunk ([`DistArgs::chunk`]), then the
/// gradient's dot products over the block ([`block_gradient`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn whole_block(
    s: &GlmSpec,
    consts: &[f64],
    lo: &mut [f64],
    scratch: &mut [f64],
    isa: Isa,
    r0: usize,
    r1: usize,
    rec: &mut [f64],
) -> Result<(), EvalError> {
    let (rows, cols) = (s.rows as usize, s.cols as usize);
    eta_rows(s, consts, lo, isa, r0, r1);
    let lo_ro: &[f64] = lo;
    let a = DistArgs::new(s.kind, &s.args, s.propto, rows, lo_ro, consts, isa);
    // SAFETY: the builder sized `scratch` for every argument run; one thread.
    let (part, sp) = unsafe { a.chunk(r0, r1, &s.scratch, scratch.as_mut_ptr())? };
    rec[0] = part;
    rec[1..5].copy_from_slice(&sp);
    // Xᵀ ∂η for the block, while X's rows are in cache.
    let xm = read(s.x, lo_ro, consts);
    let p_off = s.scratch[s.eta] as usize;
    let p = &scratch[p_off..p_off + rows];
    dispatch!(
        isa,
        block_gradient(isa, xm, p, rows, cols, r0, r1, &mut rec[5..])
    );
    Ok(())
}

/// Adds a block's record to the running totals (the blocks' order is the sums' order).
#[inline(always)]
pub(crate) fn fold_record(acc: &mut [f64], rec: &[f64]) {
    for (t, v) in acc.iter_mut().zip(rec) {
        *t += v;
    }
}

/// Stores the totals of every block's record (`∂lp/∂β`, `∂lp/∂α`, the scalar arguments'
/// partials) where the backward rule reads them; returns the density's sum.
pub(crate) fn finish(s: &GlmSpec, acc: &[f64], scratch: &mut [f64]) -> f64 {
    let (cols, work) = (s.cols as usize, s.work as usize);
    scratch[work..work + cols + 1].copy_from_slice(&acc[5..5 + cols + 1]);
    for k in 0..s.args.len() {
        if s.scratch[k] != NO_SCRATCH && s.args[k].len() == 1 {
            scratch[s.scratch[k] as usize] = acc[1 + k];
        }
    }
    acc[0]
}

/// `gb[c] = dot(X[r0..r1, c], p)` for each column ([`kernels::block_dots`]) and `gb[cols] =
/// Σ p` ([`kernels::chunked_sum`]'s chunk), with `isa`'s loops.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn block_gradient(
    isa: Isa,
    xm: &[f64],
    p: &[f64],
    rows: usize,
    cols: usize,
    r0: usize,
    r1: usize,
    gb: &mut [f64],
) {
    kernels::block_dots(isa, xm, p, rows, cols, r0, r1, gb);
    gb[cols] = kernels::chunked_sum(isa, &p[r0..r1]);
}

/// Backward rule: `adj[β] += g ∂lp/∂β`, `adj[α] += g ∂lp/∂α`, `adj[X] += (g ∂lp/∂η) βᵀ`
/// when `X` varies (with `store_x`, `adj[X] = 0.0 + (g ∂lp/∂η) βᵀ`: the bits of adding to a
/// cleared `adj[X]`, without reading it), and the density's other arguments as the density
/// op's own rule does.
#[inline(always)]
pub fn backward(
    s: &GlmSpec,
    store_x: bool,
    g: f64,
    lo: &[f64],
    consts: &[f64],
    scratch: &[f64],
    adj_lo: &mut [f64],
) {
    let cols = s.cols as usize;
    let work = s.work as usize;
    // The unfused order: the density's arguments, then α (the add), then β (the product).
    for (k, a) in s.args.iter().enumerate() {
        if k == s.eta || s.scratch[k] == NO_SCRATCH {
            continue;
        }
        let p = &scratch[s.scratch[k] as usize..s.scratch[k] as usize + a.len()];
        for (d, pk) in adj_lo[a.range()].iter_mut().zip(p) {
            *d += g * pk;
        }
    }
    let gb = &scratch[work..work + cols + 1];
    if let Some(a) = s.alpha {
        if a.is_var() {
            adj_lo[a.off as usize] += g * gb[cols];
        }
    }
    if s.beta.is_var() {
        for (d, v) in adj_lo[s.beta.range()].iter_mut().zip(&gb[..cols]) {
            *d += g * v;
        }
    }
    if s.x.is_var() {
        // The product's rule for its matrix, with its output's adjoint `g ∂lp/∂η`.
        let rows = s.rows as usize;
        let p_off = s.scratch[s.eta] as usize;
        let p = &scratch[p_off..p_off + rows];
        let beta = read(s.beta, lo, consts);
        let d = &mut adj_lo[s.x.range()];
        for c in 0..cols {
            let bc = beta[c];
            for (dr, pr) in d[c * rows..(c + 1) * rows].iter_mut().zip(p) {
                *dr = if store_x { 0.0 } else { *dr } + (g * pr) * bc;
            }
        }
    }
}
