//! GLM fusion, the executor half: the value and gradient rules of `Op::Glm` (see
//! `crate::ir::glm` for what it computes and why its bits equal the unfused graph's).

use super::dists::{DistArgs, NO_SCRATCH};
use super::kernels::{self, CHUNK};
use super::read;
use crate::ir::glm::GlmSpec;
use crate::ir::Slot;
use crate::simd::{dispatch, Isa};
use hazel_density::EvalError;

/// Forward rule: `out[0]` = the density's sum; `∂lp/∂β`, `∂lp/∂α` and the density's other
/// partials left in scratch.
pub fn forward(
    s: &GlmSpec,
    consts: &[f64],
    vals: &mut [f64],
    out: Slot,
    scratch: &mut [f64],
    isa: Isa,
) -> Result<(), EvalError> {
    let (rows, cols) = (s.rows as usize, s.cols as usize);
    let eta_slot = s.args[s.eta];
    let work = s.work as usize;
    scratch[work..work + cols + 1]
        .iter_mut()
        .for_each(|v| *v = 0.0);
    let (lo, hi) = vals.split_at_mut(out.off as usize);
    let alpha = s.alpha.map(|a| read(a, lo, consts)[0]);
    let mut total = 0.0;
    let mut scalar_tot = [0.0f64; 4];
    let n_blocks = rows.div_ceil(CHUNK);
    for blk in 0..n_blocks {
        let (r0, r1) = (blk * CHUNK, ((blk + 1) * CHUNK).min(rows));
        // η for the block, written into its (otherwise unread) slot. `X` and `beta` were the
        // product's inputs, so they lie below the product's output, which is at or below η.
        {
            let (below, from_eta) = lo.split_at_mut(eta_slot.off as usize);
            let (xm, beta) = (read(s.x, below, consts), read(s.beta, below, consts));
            let eta = &mut from_eta[r0..r1];
            dispatch!(isa, kernels::matvec_rows(xm, beta, rows, cols, r0, eta));
            if let Some(a) = alpha {
                // Add's rounding, with the operands in the unfused op's order (a + b = b + a
                // exactly in IEEE arithmetic).
                eta.iter_mut().for_each(|e| *e += a);
            }
        }
        let lo_ro: &[f64] = lo;
        let a = DistArgs::new(s.kind, &s.args, s.propto, rows, lo_ro, consts, isa);
        // SAFETY: the builder sized `scratch` for every argument run; one thread.
        let (part, sp) = unsafe { a.chunk(r0, r1, &s.scratch, scratch.as_mut_ptr())? };
        total += part;
        for k in 0..a.nargs {
            scalar_tot[k] += sp[k];
        }
        // Xᵀ ∂η for the block, while X's rows are in cache.
        let xm = read(s.x, lo_ro, consts);
        let p_off = s.scratch[s.eta] as usize;
        let (below, from_work) = scratch.split_at_mut(work);
        let p = &below[p_off + r0..p_off + r1];
        let gb = &mut from_work[..cols + 1];
        dispatch!(isa, block_gradient(isa, xm, p, rows, cols, r0, gb));
    }
    for k in 0..s.args.len() {
        if s.scratch[k] != NO_SCRATCH && s.args[k].len() == 1 {
            scratch[s.scratch[k] as usize] = scalar_tot[k];
        }
    }
    hi[0] = total;
    Ok(())
}

/// `gb[c] += dot(X[r0..r1, c], p)` for each column (one chunk of [`kernels::dot`], four
/// columns per pass) and `gb[cols] += Σ p` ([`kernels::chunked_sum`]'s chunk).
// Index loops on purpose: see `crate::simd` (iterator adapters left out of line run at the
// baseline level).
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn block_gradient(
    isa: Isa,
    xm: &[f64],
    p: &[f64],
    rows: usize,
    cols: usize,
    r0: usize,
    gb: &mut [f64],
) {
    let nr = p.len();
    let col = |c: usize| &xm[c * rows + r0..c * rows + r0 + nr];
    let mut c = 0;
    while c + 4 <= cols {
        let d = kernels::dot4(isa, [col(c), col(c + 1), col(c + 2), col(c + 3)], p);
        for (g, v) in gb[c..c + 4].iter_mut().zip(d) {
            *g += v;
        }
        c += 4;
    }
    // (Index loops, not `skip`: an iterator's out-of-line `nth` returning an aggregate stops
    // LLVM inlining the kernel into the dispatched copy; see `crate::simd`.)
    for c in c..cols {
        gb[c] += kernels::dot(isa, col(c), p);
    }
    gb[cols] += kernels::chunked_sum(isa, p);
}

/// Backward rule: `adj[β] += g ∂lp/∂β`, `adj[α] += g ∂lp/∂α`, `adj[X] += (g ∂lp/∂η) βᵀ`
/// when `X` varies, and the density's other arguments as the density op's own rule does.
#[inline(always)]
pub fn backward(
    s: &GlmSpec,
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
                *dr += (g * pr) * bc;
            }
        }
    }
}
