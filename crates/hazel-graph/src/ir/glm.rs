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

use crate::ir::{Arg, BinaryFn, DistKind, Graph, Op, Slot};

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

/// Where a fused density's linear predictor comes from.
enum Source {
    /// `MatVec(X, β)` at op `mv`, then optionally `Add(·, α)` at op `add`.
    Product { mv: usize, add: Option<usize> },
    /// A loop over rows, `α + X[n] * β` per row: `Pack` (op `pack`, or `NONE` for a run of
    /// adjacent results) of per-row
    /// `[Add(α, ·)] ∘ Dot(X[n], β)` (ops `row_ops`), the rows data.
    Rows {
        pack: usize,
        row_ops: Vec<usize>,
        rows: Vec<Arg>,
        beta: Arg,
        alpha: Option<Arg>,
    },
}

impl Graph {
    /// Fuses every `MatVec → [Add α] → Dist` chain, and every loop over data rows
    /// (`y[n] ~ family(alpha + X[n] * beta)`, traced as per-row dot products packed into the
    /// density's vector), into one [`Op::Glm`] (see the module comment); returns how many
    /// were fused. Run after the other rewrites. The row form sums each row's `X[n] · β` in
    /// `matvec`'s order instead of `dot`'s (the same bits for fewer than 8 columns, else a
    /// rounding-level difference), and `β`'s gradient in `dot`'s chunked shape.
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
        let read_once = |a: Arg| a.is_var() && a.range().all(|s| reads[s] == 1);
        let prod = |a: Arg| {
            if a.is_var() {
                producer[a.off as usize]
            } else {
                NONE
            }
        };
        // A scalar `Dot(data row, β)` read once: (row, β).
        let row_dot = |i: usize| match &self.ops[i] {
            Op::Dot { a, b, out } if reads[out.off as usize] == 1 => {
                if !a.is_var() && b.is_var() && a.len == b.len {
                    Some((*a, *b))
                } else if a.is_var() && !b.is_var() && a.len == b.len {
                    Some((*b, *a))
                } else {
                    None
                }
            }
            _ => None,
        };
        // (dist index, η argument position, source)
        let mut plans: Vec<(usize, usize, Source)> = Vec::new();
        for (i, op) in self.ops.iter().enumerate() {
            let Op::Dist { args, len, .. } = op else {
                continue;
            };
            let len = *len;
            if len < 2 {
                continue;
            }
            'args: for (k, a) in args.iter().enumerate() {
                if a.len != len || !read_once(*a) {
                    continue;
                }
                let p = prod(*a);
                if p == NONE {
                    continue;
                }
                // A run of scalars each computed by its own op (a loop's per-row results laid
                // side by side) reads like a `Pack` of them.
                let run: Vec<Arg>;
                let (p_op, pack) = if self.ops[p].out().len == 1 {
                    run = (0..len)
                        .map(|n| Arg::var(a.off as usize + n as usize, 1))
                        .collect();
                    (None, NONE)
                } else if self.ops[p].out() == (Slot { off: a.off, len }) {
                    run = Vec::new();
                    (Some(&self.ops[p]), p)
                } else {
                    continue;
                };
                let packed = match p_op {
                    None => Some(&run[..]),
                    Some(Op::Pack { xs, .. }) => Some(&xs[..]),
                    _ => None,
                };
                let source = match (p_op, packed) {
                    (_, Some(xs)) => {
                        let mut row_ops = Vec::new();
                        let mut rows = Vec::new();
                        let mut beta = None;
                        let mut alpha: Option<Option<Arg>> = None;
                        for x in xs.iter() {
                            let q = prod(*x);
                            if q == NONE || reads[x.off as usize] != 1 {
                                continue 'args;
                            }
                            // `[α +] X[n] · β`
                            let (dot_op, this_alpha) = match &self.ops[q] {
                                Op::Dot { .. } => (q, None),
                                Op::Binary {
                                    f: BinaryFn::Add,
                                    a: u,
                                    b: w,
                                    out,
                                } if out.len == 1 && u.len == 1 && w.len == 1 => {
                                    let (d, other) = match (prod(*u), prod(*w)) {
                                        (pu, _) if pu != NONE && row_dot(pu).is_some() => (pu, *w),
                                        (_, pw) if pw != NONE && row_dot(pw).is_some() => (pw, *u),
                                        _ => continue 'args,
                                    };
                                    row_ops.push(q);
                                    (d, Some(other))
                                }
                                _ => continue 'args,
                            };
                            let Some((row, b)) = row_dot(dot_op) else {
                                continue 'args;
                            };
                            if *beta.get_or_insert(b) != b
                                || *alpha.get_or_insert(this_alpha) != this_alpha
                            {
                                continue 'args;
                            }
                            row_ops.push(dot_op);
                            rows.push(row);
                        }
                        let (Some(beta), Some(alpha)) = (beta, alpha) else {
                            continue;
                        };
                        Source::Rows {
                            pack,
                            row_ops,
                            rows,
                            beta,
                            alpha,
                        }
                    }
                    (Some(Op::MatVec { .. }), None) => Source::Product { mv: p, add: None },
                    (
                        Some(Op::Binary {
                            f: BinaryFn::Add,
                            a: x,
                            b: y,
                            ..
                        }),
                        None,
                    ) => {
                        let vec_arg = if x.len == len && y.len == 1 {
                            *x
                        } else if y.len == len && x.len == 1 {
                            *y
                        } else {
                            continue;
                        };
                        let q = prod(vec_arg);
                        if !read_once(vec_arg) || q == NONE {
                            continue;
                        }
                        if !matches!(self.ops[q], Op::MatVec { .. }) {
                            continue;
                        }
                        Source::Product {
                            mv: q,
                            add: Some(p),
                        }
                    }
                    _ => continue,
                };
                if let Source::Product { mv, .. } = &source {
                    let Op::MatVec { m, v, out, .. } = &self.ops[*mv] else {
                        continue;
                    };
                    if !(m.is_var() || v.is_var()) || out.len != len {
                        continue;
                    }
                }
                plans.push((i, k, source));
                break;
            }
        }
        if plans.is_empty() {
            return 0;
        }
        let mut remove = vec![false; self.ops.len()];
        let mut replace: Vec<Option<Op>> = vec![None; self.ops.len()];
        for (di, k, source) in &plans {
            let (x, beta, alpha, rows, cols) = match source {
                Source::Product { mv, add } => {
                    let Op::MatVec {
                        m, v, rows, cols, ..
                    } = self.ops[*mv].clone()
                    else {
                        continue;
                    };
                    let alpha = add.and_then(|ai| match &self.ops[ai] {
                        Op::Binary { a, b, .. } => Some(if a.len == 1 { *a } else { *b }),
                        _ => None,
                    });
                    remove[*mv] = true;
                    if let Some(ai) = add {
                        remove[*ai] = true;
                    }
                    (m, v, alpha, rows, cols)
                }
                Source::Rows {
                    pack,
                    row_ops,
                    rows,
                    beta,
                    alpha,
                } => {
                    // The rows as one column-major data matrix.
                    let (n, kc) = (rows.len(), beta.len());
                    let off = self.consts.len();
                    self.consts.resize(off + n * kc, 0.0);
                    for (r, row) in rows.iter().enumerate() {
                        for c in 0..kc {
                            self.consts[off + c * n + r] = self.consts[row.off as usize + c];
                        }
                    }
                    if *pack != NONE {
                        remove[*pack] = true;
                    }
                    row_ops.iter().for_each(|&o| remove[o] = true);
                    (Arg::konst(off, n * kc), *beta, *alpha, n as u32, kc as u32)
                }
            };
            let Op::Dist {
                kind,
                args,
                propto,
                scratch,
                out,
                ..
            } = self.ops[*di].clone()
            else {
                continue;
            };
            let work = self.n_scratch as u32;
            self.n_scratch += cols as usize + 1;
            replace[*di] = Some(Op::Glm {
                spec: Box::new(GlmSpec {
                    kind,
                    args,
                    eta: *k,
                    propto,
                    scratch,
                    x,
                    beta,
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
