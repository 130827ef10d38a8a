//! GLM fusion: `y ~ family(X * beta + alpha, …)` in one pass over `X` per gradient.
//!
//! [`Graph::fuse_glm`] rewrites `MatVec(X, beta) → [Add(·, alpha)] → Dist(…, η, …)` — what
//! `y ~ bernoulli_logit(X * beta + alpha)`, `poisson_log(…)`, `normal(…, sigma)`,
//! `neg_binomial_2_log(…)`, the `_glm` functions (lowered to exactly this) and loops that the
//! tracer re-rolls into vector ops produce — into one [`Op::Glm`] when the product and `η`
//! are read by nothing else and `alpha` (if any) is a scalar. `X` is usually data; a
//! parameter-dependent `X` (a network's last layer) also fuses, its adjoint added by the
//! backward rule as the product's rule would add it. Its forward
//! rule walks `X` in row blocks of [`CHUNK`] rows: per block it computes `η = X β + α`
//! ([`kernels::matvec_rows`]), the block's density terms and `∂/∂η` (the density's own chunk
//! loop, [`DistArgs::chunk`]), and while the block of `X` is still in cache adds
//! `X_blockᵀ ∂/∂η` into `∂lp/∂β` (each column's block dot in [`kernels::dot`]'s shape) and
//! `Σ ∂/∂η` into `∂lp/∂α`; the backward rule scales these by the op's adjoint.
//!
//! Bits: block = chunk, so the density sum, `Xᵀ ∂η` and `Σ ∂η` are summed in exactly the
//! unfused kernels' shapes and orders; with the op's adjoint 1 (a `~` statement or a term
//! added to `target`) the value and gradient of `β`, `α` and the density's other arguments
//! equal the unfused graph's bits, except that `β`'s and `α`'s adjoints receive this
//! contribution at the density's place in the backward sweep rather than the product's (an
//! ordering that matters only when ops in between also add into them).

use crate::dists::{DistArgs, DistKind, NO_SCRATCH};
use crate::kernels::{self, BinaryFn, CHUNK};
use crate::simd::{dispatch, Isa};
use crate::tape::{read, Arg, Graph, Op, Slot};
use hazel_density::EvalError;

/// The fused op's description (boxed in [`Op::Glm`]).
#[derive(Debug, Clone)]
pub struct GlmSpec {
    /// The density: its arguments as the unfused op had them, `args[eta]` being the linear
    /// predictor's slot (written by this op), and its per-argument scratch offsets.
    pub kind: DistKind,
    pub args: Box<[Arg]>,
    pub eta: usize,
    pub propto: bool,
    pub scratch: Box<[u32]>,
    /// `X` (column-major `rows × cols`), `beta`, `alpha` (scalar, optional).
    pub x: Arg,
    pub beta: Arg,
    pub alpha: Option<Arg>,
    pub rows: u32,
    pub cols: u32,
    /// Scratch: `cols` values of `∂lp/∂β`, then `∂lp/∂α`.
    pub work: u32,
}

impl GlmSpec {
    /// Every argument the op reads (the linear predictor's slot is its own output).
    pub fn inputs(&self) -> Vec<Arg> {
        let mut v = vec![self.x, self.beta];
        v.extend(self.alpha);
        v.extend(
            self.args
                .iter()
                .enumerate()
                .filter(|(k, _)| *k != self.eta)
                .map(|(_, a)| *a),
        );
        v
    }

    pub fn for_each_input_mut(&mut self, mut f: impl FnMut(&mut Arg)) {
        f(&mut self.x);
        f(&mut self.beta);
        if let Some(a) = &mut self.alpha {
            f(a)
        }
        let eta = self.eta;
        for (k, a) in self.args.iter_mut().enumerate() {
            if k != eta {
                f(a)
            }
        }
    }
}

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
        let a = DistArgs::new(s.kind, &s.args, s.propto, rows, lo_ro, consts);
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
        dispatch!(isa, block_gradient(xm, p, rows, cols, r0, gb));
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
#[inline(always)]
fn block_gradient(xm: &[f64], p: &[f64], rows: usize, cols: usize, r0: usize, gb: &mut [f64]) {
    let nr = p.len();
    let col = |c: usize| &xm[c * rows + r0..c * rows + r0 + nr];
    let mut c = 0;
    while c + 4 <= cols {
        let d = kernels::dot4([col(c), col(c + 1), col(c + 2), col(c + 3)], p);
        for (g, v) in gb[c..c + 4].iter_mut().zip(d) {
            *g += v;
        }
        c += 4;
    }
    for (c, g) in gb.iter_mut().enumerate().take(cols).skip(c) {
        *g += kernels::dot(col(c), p);
    }
    gb[cols] += kernels::chunked_sum(p);
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

impl Graph {
    /// Fuses every `MatVec → [Add α] → Dist` chain into one [`Op::Glm`]
    /// (see the module comment); returns how many were fused. Run after the other rewrites.
    pub fn fuse_glm(&mut self, keep: Arg) -> usize {
        const NONE: usize = usize::MAX;
        // Producer op of each output offset, and reads of every value slot.
        let mut producer = vec![NONE; self.n_vals];
        for (i, op) in self.ops.iter().enumerate() {
            let o = op.out();
            if o.len > 0 {
                producer[o.off as usize] = i;
            }
        }
        let all = vec![true; self.n_vals];
        let reads = self.reads_of(keep, &all);
        let read_once = |a: Arg| a.range().all(|s| reads[s] == 1);
        // (dist index, add index or NONE, matvec index, η argument position)
        let mut plans: Vec<(usize, usize, usize, usize)> = Vec::new();
        for (i, op) in self.ops.iter().enumerate() {
            let Op::Dist { args, len, .. } = op else {
                continue;
            };
            if *len < 2 {
                continue;
            }
            for (k, a) in args.iter().enumerate() {
                if !a.is_var() || a.len != *len || !read_once(*a) {
                    continue;
                }
                let p = producer[a.off as usize];
                if p == NONE || self.ops[p].out().len != *len {
                    continue;
                }
                let (add, mv) = match &self.ops[p] {
                    Op::MatVec { .. } => (NONE, p),
                    Op::Binary {
                        f: BinaryFn::Add,
                        a: x,
                        b: y,
                        ..
                    } => {
                        let vec_arg = if x.len == *len && y.len == 1 {
                            *x
                        } else if y.len == *len && x.len == 1 {
                            *y
                        } else {
                            continue;
                        };
                        if !vec_arg.is_var() || !read_once(vec_arg) {
                            continue;
                        }
                        let q = producer[vec_arg.off as usize];
                        if q == NONE || !matches!(self.ops[q], Op::MatVec { .. }) {
                            continue;
                        }
                        (p, q)
                    }
                    _ => continue,
                };
                let Op::MatVec { m, v, out, .. } = &self.ops[mv] else {
                    continue;
                };
                if !(m.is_var() || v.is_var()) || out.len != *len {
                    continue;
                }
                plans.push((i, add, mv, k));
                break;
            }
        }
        if plans.is_empty() {
            return 0;
        }
        let mut remove = vec![false; self.ops.len()];
        let mut replace: Vec<Option<Op>> = vec![None; self.ops.len()];
        for &(di, ai, mi, k) in &plans {
            let Op::MatVec {
                m, v, rows, cols, ..
            } = self.ops[mi].clone()
            else {
                continue;
            };
            let alpha = if ai == NONE {
                None
            } else if let Op::Binary { a, b, .. } = &self.ops[ai] {
                Some(if a.len == 1 { *a } else { *b })
            } else {
                None
            };
            let Op::Dist {
                kind,
                args,
                propto,
                scratch,
                out,
                ..
            } = self.ops[di].clone()
            else {
                continue;
            };
            let work = self.n_scratch as u32;
            self.n_scratch += cols as usize + 1;
            remove[mi] = true;
            if ai != NONE {
                remove[ai] = true;
            }
            replace[di] = Some(Op::Glm {
                spec: Box::new(GlmSpec {
                    kind,
                    args,
                    eta: k,
                    propto,
                    scratch,
                    x: m,
                    beta: v,
                    alpha,
                    rows,
                    cols,
                    work,
                }),
                out,
            });
        }
        let old = std::mem::take(&mut self.ops);
        self.ops = old
            .into_iter()
            .enumerate()
            .filter(|(i, _)| !remove[*i])
            .map(|(i, op)| replace[i].take().unwrap_or(op))
            .collect();
        plans.len()
    }
}
