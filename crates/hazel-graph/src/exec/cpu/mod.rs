//! The CPU executors and their kernels.
//!
//! - [`kernels`], [`dists`], `linalg_kernels`: the value and gradient rules of every op (the
//!   reference arithmetic, one copy; scalar rules are `hazel_math::special`'s).
//! - [`Buffers`] and the reference sweeps (`Graph::forward`, `Graph::backward`): the serial
//!   executor [`SerialCpu`].
//! - `par`: the chunked threaded executor ([`crate::exec::ThreadedCpu`]).
//! - `batched`: K points op-major ([`crate::exec::BatchedCpu`]).

pub mod batched;
pub mod dists;
pub mod glm;
pub(crate) mod jacobian;
pub mod kernels;
pub(crate) mod lanes;
pub(crate) mod linalg_kernels;
pub(crate) mod par;
pub(crate) mod scalar;
pub mod simd;

use crate::exec::Executor;
use crate::ir::{Arg, Graph, Slot, Space};
use hazel_density::EvalError;

/// Per-chain buffers of one graph: the reference executor's workspace, and one lane of the
/// others'.
#[derive(Debug, Clone, Default)]
pub struct Buffers {
    pub vals: Vec<f64>,
    pub adj: Vec<f64>,
    pub scratch: Vec<f64>,
    /// The instruction set the kernels run with (`CompileOptions::simd`, resolved); every
    /// choice gives the same bits.
    pub isa: simd::Isa,
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

/// The reference sweeps. They are `Graph` methods for the tracer's eager evaluation and the
/// traced sub-graphs (`lower::fn_graph`), but live here: the IR itself never runs.
impl Graph {
    /// Runs ops `from..` forward. `vals[0..dim]` must hold the parameters.
    pub fn forward_from(&self, from: usize, buf: &mut Buffers) -> Result<(), EvalError> {
        for op in &self.ops[from..] {
            kernels::forward(op, &self.consts, &mut buf.vals, &mut buf.scratch, buf.isa)
                .map_err(|e| self.locate(op, e))?;
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
        self.start_adjoint(seed, &mut buf.adj);
        for (i, op) in self.ops.iter().enumerate().rev() {
            kernels::backward(
                op,
                self.adjoint_stores_of(i),
                &self.consts,
                &buf.vals,
                &mut buf.adj,
                &mut buf.scratch,
                buf.isa,
            );
        }
    }

    /// Readies one point's adjoint buffer (`adj[0..n_vals]`) for a backward sweep from `seed`
    /// whose rules store where [`AdjointPlan::stores`](crate::ir::graph::AdjointPlan::stores) says: every slot a rule may read or
    /// add to is zeroed (those of [`AdjointPlan::unset`](crate::ir::graph::AdjointPlan::unset), free or stored by their one rule,
    /// are left as they are), then the seed's adjoint is 1.
    pub(crate) fn start_adjoint(&self, seed: Arg, adj: &mut [f64]) {
        self.clear_adjoint_outside(&self.adjoint.unset, &self.adjoint.unset_holes, seed, adj);
    }

    /// [`Graph::start_adjoint`] for a sweep whose rules only add (stores 0 for every op):
    /// the stored slots are zeroed too, only [`AdjointPlan::free`](crate::ir::graph::AdjointPlan::free)'s are left.
    pub(crate) fn start_adding_adjoint(&self, seed: Arg, adj: &mut [f64]) {
        self.clear_adjoint_outside(&self.adjoint.free, &self.adjoint.free_holes, seed, adj);
    }

    fn clear_adjoint_outside(&self, left: &[Slot], holes: &[u32], seed: Arg, adj: &mut [f64]) {
        let mut from = 0;
        for s in left {
            adj[from..s.off as usize].iter_mut().for_each(|a| *a = 0.0);
            from = (s.off + s.len) as usize;
        }
        adj[from..self.n_vals].iter_mut().for_each(|a| *a = 0.0);
        for &h in holes {
            adj[h as usize] = 0.0;
        }
        if seed.is_var() {
            adj[seed.off as usize] = 1.0;
        }
    }

    /// Value of a scalar argument after a forward sweep.
    pub fn scalar(&self, a: Arg, buf: &Buffers) -> f64 {
        read(a, &buf.vals, &self.consts)[0]
    }
}

/// The reference executor: one op after another on one thread, every op's kernel from
/// [`kernels`]. Every other executor must give its bits.
#[derive(Debug, Clone, Copy, Default)]
pub struct SerialCpu;

impl Executor for SerialCpu {
    type Workspace = Buffers;

    fn new_workspace(&self, g: &Graph) -> Buffers {
        Buffers::for_graph(g)
    }

    fn forward(&self, g: &Graph, out: Arg, q: &[f64], ws: &mut Buffers) -> Result<f64, EvalError> {
        ws.fit(g);
        g.forward(q, ws)?;
        Ok(g.scalar(out, ws))
    }

    fn gradient(
        &self,
        g: &Graph,
        out: Arg,
        q: &[f64],
        ws: &mut Buffers,
        grad: &mut [f64],
    ) -> Result<f64, EvalError> {
        ws.fit(g);
        g.forward(q, ws)?;
        g.backward(out, ws);
        grad.copy_from_slice(&ws.adj[..g.dim]);
        Ok(g.scalar(out, ws))
    }
}
