//! Building a [`Graph`] op by op. Each push allocates the op's output slot after everything
//! allocated so far, which keeps the layout invariant (inputs below outputs) by construction;
//! pushes also run the op forward at once on the builder's own buffers ("eager" values), so
//! the tracer can read a value when control flow depends on it.

use crate::dists::{DistKind, NO_SCRATCH};
use crate::kernels::{self, BinaryFn, UnaryFn};
use crate::tape::{read, Arg, Buffers, CheckKind, Graph, Op, Slot};
use hazel_density::EvalError;

/// A position in a builder's history.
#[derive(Debug, Clone, Copy)]
pub struct BuilderMark {
    ops: usize,
    consts: usize,
    vals: usize,
    scratch: usize,
    had_error: bool,
}

#[derive(Debug, Default)]
pub struct GraphBuilder {
    pub graph: Graph,
    pub buf: Buffers,
    /// The first error the eager forward run hit (the op is still recorded).
    pub eager_error: Option<EvalError>,
    /// Where in the model the ops pushed now come from (set by the tracer per statement);
    /// recorded in [`Graph::locations`] so that a failing op names its line.
    pub location: Option<std::sync::Arc<str>>,
}

impl GraphBuilder {
    /// A builder whose parameter slot is `q` (its values drive the eager evaluation).
    pub fn new(q: &[f64]) -> GraphBuilder {
        let mut b = GraphBuilder::default();
        b.reset(q);
        b
    }

    /// Clears everything, keeping capacity (the dynamic fallback re-traces into the same
    /// builder at every evaluation).
    pub fn reset(&mut self, q: &[f64]) {
        self.graph.ops.clear();
        self.graph.consts.clear();
        self.graph.dim = q.len();
        self.graph.n_vals = q.len();
        self.graph.n_scratch = 0;
        self.buf.vals.clear();
        self.buf.vals.extend_from_slice(q);
        self.buf.scratch.clear();
        self.eager_error = None;
    }

    pub fn dim(&self) -> usize {
        self.graph.dim
    }

    /// The parameter slot.
    pub fn params(&self) -> Arg {
        Arg::var(0, self.graph.dim)
    }

    /// Adds constants to the pool.
    pub fn konst(&mut self, values: &[f64]) -> Arg {
        let off = self.graph.consts.len();
        self.graph.consts.extend_from_slice(values);
        Arg::konst(off, values.len())
    }

    pub fn scalar_const(&mut self, v: f64) -> Arg {
        self.konst(&[v])
    }

    /// Current value of an argument (eager evaluation).
    pub fn value(&self, a: Arg) -> &[f64] {
        read(a, &self.buf.vals, &self.graph.consts)
    }

    fn alloc(&mut self, len: usize) -> Slot {
        let off = self.graph.n_vals;
        self.graph.n_vals += len;
        self.buf.vals.resize(self.graph.n_vals, 0.0);
        Slot {
            off: off as u32,
            len: len as u32,
        }
    }

    fn alloc_scratch(&mut self, len: usize) -> u32 {
        let off = self.graph.n_scratch;
        self.graph.n_scratch += len;
        self.buf.scratch.resize(self.graph.n_scratch, 0.0);
        off as u32
    }

    fn push(&mut self, op: Op) -> Arg {
        let out = op.out();
        debug_assert!(op
            .inputs()
            .iter()
            .all(|a| !a.is_var() || a.off + a.len <= out.off));
        if self.eager_error.is_none() {
            if let Err(e) = kernels::forward(
                &op,
                &self.graph.consts,
                &mut self.buf.vals,
                &mut self.buf.scratch,
                self.buf.isa,
            ) {
                self.eager_error = Some(e.at(self.location.as_deref()));
            }
        }
        if let Some(location) = &self.location {
            let same = self
                .graph
                .locations
                .last()
                .is_some_and(|(_, l)| std::sync::Arc::ptr_eq(l, location));
            if !same {
                self.graph.locations.push((out.off, location.clone()));
            }
        }
        self.graph.ops.push(op);
        out.arg()
    }

    pub fn unary(&mut self, f: UnaryFn, x: Arg) -> Arg {
        let out = self.alloc(x.len());
        self.push(Op::Unary { f, x, out })
    }

    /// Elementwise with broadcasting: lengths must be equal or one of them 1.
    pub fn binary(&mut self, f: BinaryFn, a: Arg, b: Arg) -> Arg {
        let n = if a.len() == 1 { b.len() } else { a.len() };
        debug_assert!(a.len() == 1 || b.len() == 1 || a.len() == b.len());
        let out = self.alloc(n);
        self.push(Op::Binary { f, a, b, out })
    }

    /// Elementwise `f(args…)` with broadcasting (see [`crate::nary`]).
    pub fn nary(&mut self, f: crate::nary::MathNary, args: Vec<Arg>) -> Arg {
        let n = args.iter().map(|a| a.len()).max().unwrap_or(1);
        debug_assert!(args.iter().all(|a| a.len() == 1 || a.len() == n));
        let out = self.alloc(n);
        self.push(Op::Nary {
            f,
            args: args.into_boxed_slice(),
            out,
        })
    }

    pub fn sum(&mut self, x: Arg) -> Arg {
        let out = self.alloc(1);
        self.push(Op::Sum { x, out })
    }

    pub fn sum_scalars(&mut self, xs: Vec<Arg>) -> Arg {
        let out = self.alloc(1);
        self.push(Op::SumScalars {
            xs: xs.into_boxed_slice(),
            out,
        })
    }

    pub fn dot(&mut self, a: Arg, b: Arg) -> Arg {
        let out = self.alloc(1);
        self.push(Op::Dot { a, b, out })
    }

    pub fn sd(&mut self, x: Arg) -> Arg {
        let out = self.alloc(1);
        self.push(Op::Sd { x, out })
    }

    pub fn log_sum_exp(&mut self, x: Arg) -> Arg {
        let out = self.alloc(1);
        self.push(Op::LogSumExp { x, out })
    }

    pub fn cumsum(&mut self, x: Arg) -> Arg {
        let out = self.alloc(x.len());
        self.push(Op::CumSum { x, out })
    }

    /// One contiguous run from scalars anywhere.
    pub fn pack(&mut self, xs: Vec<Arg>) -> Arg {
        let out = self.alloc(xs.len());
        self.push(Op::Pack {
            xs: xs.into_boxed_slice(),
            out,
        })
    }

    /// `x[idx]` with 0-based data indexes (checked by the caller).
    pub fn gather(&mut self, x: Arg, idx: Vec<u32>) -> Arg {
        let out = self.alloc(idx.len());
        self.push(Op::Gather {
            x,
            idx: idx.into_boxed_slice(),
            out,
        })
    }

    /// An ODE solve over the parameter-dependent scalars `v` ([`crate::ode_op`]).
    pub fn ode(&mut self, spec: std::sync::Arc<crate::ode_op::OdeSpec>, v: Arg) -> Arg {
        let out = self.alloc(spec.out_len());
        let scratch = self.alloc_scratch(spec.scratch_len(v.len()));
        self.push(Op::Ode {
            spec,
            v,
            scratch,
            out,
        })
    }

    /// An `integrate_1d` call over the parameter-dependent scalars `v`
    /// ([`crate::integrate_op`]).
    pub fn integrate(
        &mut self,
        spec: std::sync::Arc<crate::integrate_op::IntegrateSpec>,
        v: Arg,
    ) -> Arg {
        let out = self.alloc(1);
        let scratch = self.alloc_scratch(v.len());
        self.push(Op::Integrate {
            spec,
            v,
            scratch,
            out,
        })
    }

    /// `x` sorted (the permutation is found at every evaluation).
    pub fn sort(&mut self, x: Arg, descending: bool) -> Arg {
        let out = self.alloc(x.len());
        let scratch = self.alloc_scratch(x.len());
        self.push(Op::Sort {
            x,
            descending,
            scratch,
            out,
        })
    }

    pub fn matvec(&mut self, m: Arg, v: Arg, rows: usize, cols: usize) -> Arg {
        let out = self.alloc(rows);
        self.push(Op::MatVec {
            m,
            v,
            rows: rows as u32,
            cols: cols as u32,
            out,
        })
    }

    pub fn matmul(&mut self, a: Arg, b: Arg, n: usize, k: usize, m: usize) -> Arg {
        let out = self.alloc(n * m);
        self.push(Op::MatMul {
            a,
            b,
            bias: None,
            n: n as u32,
            k: k as u32,
            m: m as u32,
            out,
        })
    }

    /// Sum of a univariate log density over broadcast arguments (`args[0]` the variate).
    pub fn dist(&mut self, kind: DistKind, args: Vec<Arg>, propto: bool) -> Arg {
        let len = args.iter().map(|a| a.len()).max().unwrap_or(1);
        let len = if args.iter().any(|a| a.is_empty()) {
            0
        } else {
            len
        };
        let mut sc = Vec::with_capacity(args.len());
        for a in &args {
            if a.is_var() {
                let off = self.alloc_scratch(a.len());
                sc.push(off);
            } else {
                sc.push(NO_SCRATCH);
            }
        }
        let out = self.alloc(1);
        self.push(Op::Dist {
            kind,
            args: args.into_boxed_slice(),
            propto,
            len: len as u32,
            scratch: sc.into_boxed_slice(),
            out,
        })
    }

    /// A structured transform of `x`; the output run is the constrained value (`n_out`)
    /// followed by the log-Jacobian.
    pub fn constrain(&mut self, kind: crate::tape::StructKind, x: Arg, n_out: usize) -> Arg {
        let sc = self.alloc_scratch(kind.workspace_len() + kind.free_len() + n_out);
        let out = self.alloc(n_out + 1);
        self.push(Op::Constrain {
            kind,
            x,
            scratch: sc,
            out,
        })
    }

    /// A multivariate log density (see [`crate::mvdist`]).
    pub fn mv_dist(&mut self, spec: crate::mvdist::MvSpec, args: Vec<Arg>, propto: bool) -> Arg {
        let len: usize = args.iter().map(|a| a.len()).sum::<usize>() + spec.workspace_len();
        let sc = self.alloc_scratch(len);
        let out = self.alloc(1);
        self.push(Op::MvDist {
            spec: Box::new(spec),
            args: args.into_boxed_slice(),
            propto,
            scratch: sc,
            out,
        })
    }

    pub fn cholesky(&mut self, a: Arg, n: usize) -> Arg {
        let sc = self.alloc_scratch(n * n);
        let out = self.alloc(n * n);
        self.push(Op::Cholesky {
            a,
            n: n as u32,
            scratch: sc,
            out,
        })
    }

    pub fn tri_solve(&mut self, l: Arg, b: Arg, n: usize, m: usize) -> Arg {
        let sc = self.alloc_scratch(n * m);
        let out = self.alloc(n * m);
        self.push(Op::TriSolve {
            l,
            b,
            n: n as u32,
            m: m as u32,
            scratch: sc,
            out,
        })
    }

    /// A solve or determinant ([`crate::tape::LinalgFn`]); `b` may be an empty run.
    pub fn linalg(&mut self, f: crate::tape::LinalgFn, a: Arg, b: Arg, n: usize, m: usize) -> Arg {
        let sc = self.alloc_scratch(f.scratch_len(n, m, a.len(), b.len()));
        let out = self.alloc(f.out_len(n, m));
        self.push(Op::Linalg {
            f,
            a,
            b,
            n: n as u32,
            m: m as u32,
            scratch: sc,
            out,
        })
    }

    /// An algebraic solve ([`Op::Solve`]): the root, `spec.n` values.
    pub fn solve(&mut self, spec: crate::solve_op::SolveSpec, guess: Arg, theta: Arg) -> Arg {
        let sc = self.alloc_scratch(spec.scratch_len());
        let out = self.alloc(spec.n);
        self.push(Op::Solve {
            spec: std::sync::Arc::new(spec),
            guess,
            theta,
            scratch: sc,
            out,
        })
    }

    /// A DAE solve ([`Op::Dae`]): the states at every output time, time-major.
    pub fn dae(&mut self, spec: crate::dae_op::DaeSpec, yy0: Arg, yp0: Arg, theta: Arg) -> Arg {
        let sc = self.alloc_scratch(spec.scratch_len());
        let out = self.alloc(spec.out_len());
        self.push(Op::Dae {
            spec: std::sync::Arc::new(spec),
            yy0,
            yp0,
            theta,
            scratch: sc,
            out,
        })
    }

    pub fn check(&mut self, kind: CheckKind, x: Arg, bound: Arg, message: String) {
        let out = self.alloc(0);
        self.push(Op::Check {
            kind,
            x,
            bound,
            message: message.into_boxed_str(),
            out,
        });
    }

    pub fn reject(&mut self, message: String) {
        let out = self.alloc(0);
        self.push(Op::Reject {
            message: message.into_boxed_str(),
            out,
        });
    }

    /// The current end of the graph, for [`GraphBuilder::rollback`].
    pub fn mark(&self) -> BuilderMark {
        BuilderMark {
            ops: self.graph.ops.len(),
            consts: self.graph.consts.len(),
            vals: self.graph.n_vals,
            scratch: self.graph.n_scratch,
            had_error: self.eager_error.is_some(),
        }
    }

    /// Removes everything pushed since `m` (the graph is append-only, so this is exact).
    pub fn rollback(&mut self, m: &BuilderMark) {
        let vals = m.vals as u32;
        self.graph.locations.retain(|(slot, _)| *slot < vals);
        self.graph.ops.truncate(m.ops);
        self.graph.consts.truncate(m.consts);
        self.graph.n_vals = m.vals;
        self.graph.n_scratch = m.scratch;
        self.buf.vals.truncate(m.vals);
        self.buf.scratch.truncate(m.scratch);
        if !m.had_error {
            self.eager_error = None;
        }
    }

    /// The op that wrote value slot `slot`, if any (a parameter slot has none). Ops are
    /// pushed in slot order, so this is a binary search.
    pub fn producer(&self, slot: u32) -> Option<&Op> {
        let ops = &self.graph.ops;
        let at = ops.partition_point(|op| op.out().off <= slot);
        // Zero-length outputs (checks) may sit at the same offset as the producer; skip back
        // over them.
        ops[..at]
            .iter()
            .rev()
            .take_while(|op| op.out().off + op.out().len > slot || op.out().len == 0)
            .find(|op| op.out().range().contains(&(slot as usize)))
    }

    /// Finishes: the graph (buffers sized by the graph itself).
    pub fn finish(self) -> Graph {
        self.graph
    }
}
