//! The static op graph: an immutable list of ops over slots of a flat value buffer, which is
//! also the reverse-mode tape. A forward sweep runs the ops in order and writes values; a
//! backward sweep runs them in reverse and accumulates adjoints.
//!
//! Layout invariants (checked by [`crate::builder::GraphBuilder`] when an op is pushed):
//! - every op writes one output slot, allocated after all its inputs, so an op's inputs all lie
//!   strictly below its output offset; the kernels split the buffers at the output offset and
//!   borrow inputs immutably and the output mutably without copies;
//! - constants live in the graph (`Graph::consts`), values and adjoints in the workspace;
//! - the unconstrained parameter vector occupies slot `0..dim` of the value buffer.

use crate::kernels::{self, BinaryFn, DistKind, UnaryFn};
use hazel_density::EvalError;
pub use hazel_math::transforms::Structured as StructKind;

/// Which buffer an argument lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Space {
    /// The workspace value buffer (depends on the parameters; has an adjoint).
    Var,
    /// The graph's constant pool (data and data-only expressions).
    Const,
}

/// A contiguous run of `len` values in one of the two buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arg {
    pub space: Space,
    pub off: u32,
    pub len: u32,
}

impl Arg {
    pub fn var(off: usize, len: usize) -> Arg {
        Arg {
            space: Space::Var,
            off: off as u32,
            len: len as u32,
        }
    }
    pub fn konst(off: usize, len: usize) -> Arg {
        Arg {
            space: Space::Const,
            off: off as u32,
            len: len as u32,
        }
    }
    #[inline]
    pub fn is_var(&self) -> bool {
        self.space == Space::Var
    }
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    #[inline]
    pub fn range(&self) -> std::ops::Range<usize> {
        self.off as usize..(self.off + self.len) as usize
    }
    /// The scalar at position `i` of this run.
    pub fn at(&self, i: usize) -> Arg {
        Arg {
            space: self.space,
            off: self.off + i as u32,
            len: 1,
        }
    }
}

/// The output of an op: a run in the value buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub off: u32,
    pub len: u32,
}

impl Slot {
    #[inline]
    pub fn range(&self) -> std::ops::Range<usize> {
        self.off as usize..(self.off + self.len) as usize
    }
    pub fn arg(&self) -> Arg {
        Arg::var(self.off as usize, self.len as usize)
    }
}

/// What a failed check reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckKind {
    /// Values must be ≥ bound (`Lower`), ≤ bound (`Upper`): a transformed parameter's constraint.
    Lower,
    Upper,
    /// Every value must be finite.
    Finite,
}

/// One operation. Each variant's value rule is in [`crate::kernels::forward`] and its gradient
/// rule in [`crate::kernels::backward`], side by side.
#[derive(Debug, Clone)]
pub enum Op {
    /// Elementwise `f(x)`.
    Unary { f: UnaryFn, x: Arg, out: Slot },
    /// Elementwise `f(a, b)`, a length-1 argument broadcast against the other.
    Binary {
        f: BinaryFn,
        a: Arg,
        b: Arg,
        out: Slot,
    },
    /// Sum of all elements (chunked, so the order is fixed).
    Sum { x: Arg, out: Slot },
    /// Sum of scalar terms (the `target` accumulator).
    SumScalars { xs: Box<[Arg]>, out: Slot },
    /// Dot product.
    Dot { a: Arg, b: Arg, out: Slot },
    /// `log(sum(exp(x)))`.
    LogSumExp { x: Arg, out: Slot },
    /// Running sum `out[i] = x[0] + … + x[i]`.
    CumSum { x: Arg, out: Slot },
    /// Copies scalars from anywhere into one contiguous run (containers assembled element by
    /// element, e.g. `mu[n] = ...` in a loop).
    Pack { xs: Box<[Arg]>, out: Slot },
    /// `out[i] = x[idx[i]]` with data indexes (`mu[g]`).
    Gather { x: Arg, idx: Box<[u32]>, out: Slot },
    /// `out = M v`, `M` column-major `rows × cols`.
    MatVec {
        m: Arg,
        v: Arg,
        rows: u32,
        cols: u32,
        out: Slot,
    },
    /// `out = A B`, both column-major, `A` is `n × k`, `B` is `k × m`.
    MatMul {
        a: Arg,
        b: Arg,
        n: u32,
        k: u32,
        m: u32,
        out: Slot,
    },
    /// Sum over elements of a univariate log density; argument 0 is the variate, all
    /// arguments broadcast. `scratch` holds per-argument partials written by the forward
    /// sweep and read by the backward sweep (one per element for vector arguments, one
    /// summed value for scalar ones).
    Dist {
        kind: DistKind,
        args: Box<[Arg]>,
        propto: bool,
        len: u32,
        scratch: Box<[u32]>,
        out: Slot,
    },
    /// A structured constraining transform (simplex, Cholesky factors, …) from
    /// `hazel_math::transforms`: `out` holds the constrained value followed by the
    /// log-Jacobian. `scratch` holds the transform's workspace, then room for the
    /// Jacobian-only adjoint (see the backward rule).
    Constrain {
        kind: StructKind,
        x: Arg,
        scratch: u32,
        out: Slot,
    },
    /// Cholesky factor of an `n × n` symmetric positive-definite matrix (hazel_math::linalg);
    /// `scratch` holds `n²` values for the adjoint.
    Cholesky {
        a: Arg,
        n: u32,
        scratch: u32,
        out: Slot,
    },
    /// `L⁻¹ B` for lower-triangular `L` (`n × n`) and `B` (`n × m`); `scratch` holds `n·m`.
    TriSolve {
        l: Arg,
        b: Arg,
        n: u32,
        m: u32,
        scratch: u32,
        out: Slot,
    },
    /// Fails the evaluation when a value violates a constraint; `out` is a length-0 slot.
    Check {
        kind: CheckKind,
        x: Arg,
        bound: Arg,
        message: Box<str>,
        out: Slot,
    },
    /// Always fails (a data-dependent `reject` that was reached).
    Reject { message: Box<str>, out: Slot },
}

impl Op {
    pub fn out(&self) -> Slot {
        match self {
            Op::Unary { out, .. }
            | Op::Binary { out, .. }
            | Op::Sum { out, .. }
            | Op::SumScalars { out, .. }
            | Op::Dot { out, .. }
            | Op::LogSumExp { out, .. }
            | Op::Pack { out, .. }
            | Op::CumSum { out, .. }
            | Op::Gather { out, .. }
            | Op::MatVec { out, .. }
            | Op::MatMul { out, .. }
            | Op::Dist { out, .. }
            | Op::Constrain { out, .. }
            | Op::Cholesky { out, .. }
            | Op::TriSolve { out, .. }
            | Op::Check { out, .. }
            | Op::Reject { out, .. } => *out,
        }
    }

    /// The arguments an op reads (used by the builder to check the layout invariant).
    pub fn inputs(&self) -> Vec<Arg> {
        match self {
            Op::Unary { x, .. }
            | Op::Constrain { x, .. }
            | Op::CumSum { x, .. }
            | Op::Sum { x, .. }
            | Op::LogSumExp { x, .. }
            | Op::Gather { x, .. } => vec![*x],
            Op::Binary { a, b, .. } | Op::Dot { a, b, .. } => vec![*a, *b],
            Op::SumScalars { xs, .. } | Op::Pack { xs, .. } => xs.to_vec(),
            Op::MatVec { m, v, .. } => vec![*m, *v],
            Op::MatMul { a, b, .. } => vec![*a, *b],
            Op::Dist { args, .. } => args.to_vec(),
            Op::Cholesky { a, .. } => vec![*a],
            Op::TriSolve { l, b, .. } => vec![*l, *b],
            Op::Check { x, bound, .. } => vec![*x, *bound],
            Op::Reject { .. } => vec![],
        }
    }
}

/// An immutable op graph: ops, constants and buffer sizes.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    pub ops: Vec<Op>,
    pub consts: Vec<f64>,
    /// Size of the value (and adjoint) buffer.
    pub n_vals: usize,
    /// Size of the scratch buffer (per-element partials).
    pub n_scratch: usize,
    /// Length of the parameter slot at offset 0.
    pub dim: usize,
}

/// Per-chain buffers of one graph.
#[derive(Debug, Clone, Default)]
pub struct Buffers {
    pub vals: Vec<f64>,
    pub adj: Vec<f64>,
    pub scratch: Vec<f64>,
}

impl Buffers {
    pub fn for_graph(g: &Graph) -> Buffers {
        let mut b = Buffers::default();
        b.fit(g);
        b
    }
    /// Grows (never shrinks) the buffers to fit `g`; reuses capacity.
    pub fn fit(&mut self, g: &Graph) {
        if self.vals.len() < g.n_vals {
            self.vals.resize(g.n_vals, 0.0);
            self.adj.resize(g.n_vals, 0.0);
        }
        if self.scratch.len() < g.n_scratch {
            self.scratch.resize(g.n_scratch, 0.0);
        }
    }
}

/// Reads an argument from the buffer it lives in; `vals` is the part of the value buffer below
/// the current op's output.
#[inline(always)]
pub(crate) fn read<'a>(a: Arg, vals: &'a [f64], consts: &'a [f64]) -> &'a [f64] {
    match a.space {
        Space::Var => &vals[a.range()],
        Space::Const => &consts[a.range()],
    }
}

impl Graph {
    /// Runs ops `from..` forward. `vals[0..dim]` must hold the parameters.
    pub fn forward_from(&self, from: usize, buf: &mut Buffers) -> Result<(), EvalError> {
        for op in &self.ops[from..] {
            kernels::forward(op, &self.consts, &mut buf.vals, &mut buf.scratch)?;
        }
        Ok(())
    }

    /// Full forward sweep at `q`.
    pub fn forward(&self, q: &[f64], buf: &mut Buffers) -> Result<(), EvalError> {
        buf.vals[..self.dim].copy_from_slice(q);
        self.forward_from(0, buf)
    }

    /// Backward sweep from the scalar at `seed` (adjoint 1); afterwards `buf.adj[0..dim]`
    /// holds the gradient with respect to the parameters.
    pub fn backward(&self, seed: Arg, buf: &mut Buffers) {
        let n = self.n_vals;
        buf.adj[..n].iter_mut().for_each(|a| *a = 0.0);
        if seed.is_var() {
            buf.adj[seed.off as usize] = 1.0;
        }
        for op in self.ops.iter().rev() {
            kernels::backward(op, &self.consts, &buf.vals, &mut buf.adj, &mut buf.scratch);
        }
    }

    /// Value of a scalar argument after a forward sweep.
    pub fn scalar(&self, a: Arg, buf: &Buffers) -> f64 {
        read(a, &buf.vals, &self.consts)[0]
    }
}
