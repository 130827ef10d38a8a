//! GLM fusion, the IR half: [`GlmSpec`] (what `Op::Glm` computes) and the rewrite
//! [`Graph::fuse_glm`]; the kernels are in `crate::exec::cpu::glm`.
//!
//! `y ~ family(X * beta + alpha, …)` in one pass over `X` per gradient.
//!
//! [`Graph::fuse_glm`] rewrites `MatVec(X, beta) → [Add(·, alpha)] → Dist(…, η, …)` — what
//! `y ~ bernoulli_logit(X * beta + alpha)`, `poisson_log(…)`, `normal(…, sigma)`,
//! `neg_binomial_2_log(…)` and the `_glm` functions (lowered to exactly this) produce — into
//! one [`Op::Glm`] when the product and `η`
//! are read by nothing else and `alpha` (if any) is a scalar. `X` is usually data; a
//! parameter-dependent `X` (a network's last layer) also fuses, its adjoint added by the
//! backward rule as the product's rule would add it. Its forward
//! rule walks `X` in row blocks of `CHUNK` rows: per block it computes `η = X β + α`
//! (`kernels::matvec_rows`), the block's density terms and `∂/∂η` (the density's own chunk
//! loop, `DistArgs::chunk`), and while the block of `X` is still in cache adds
//! `X_blockᵀ ∂/∂η` into `∂lp/∂β` (each column's block dot in `kernels::dot`'s shape) and
//! `Σ ∂/∂η` into `∂lp/∂α`; the backward rule scales these by the op's adjoint.
//!
//! Bits: block = chunk, so the density sum, `Xᵀ ∂η` and `Σ ∂η` are summed in exactly the
//! unfused kernels' shapes and orders; with the op's adjoint 1 (a `~` statement or a term
//! added to `target`) the value and gradient of `β`, `α` and the density's other arguments
//! equal the unfused graph's bits, except that `β`'s and `α`'s adjoints receive this
//! contribution at the density's place in the backward sweep rather than the product's (an
//! ordering that matters only when ops in between also add into them).

use crate::ir::{Arg, BinaryFn, DistKind, Graph, Op};

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
