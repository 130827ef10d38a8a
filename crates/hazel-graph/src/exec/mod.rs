//! Executors: the ways of running an [`crate::ir::Graph`], behind one interface.
//!
//! An [`Executor`] owns how a graph runs and the buffers it runs in: it makes its own
//! workspace ([`Executor::new_workspace`]), and evaluates the log density and gradient at one
//! point ([`Executor::gradient`]) or at K points at once ([`Executor::gradient_batch`], flat
//! `K × dim` buffers). The graph it is handed is read-only and holds no pointers into any
//! buffer, so the same graph serves every executor (and could be shipped to a device or
//! another rank). Which executor a model uses is [`ExecutorKind`], a field of
//! `CompileOptions`, never a global.
//!
//! Every executor gives the reference executor's ([`SerialCpu`]) bits: the kernels fix the
//! shape of every reduction (chunks of [`cpu::kernels::CHUNK`], combined in chunk order), and
//! executors only reorder work *between* independent chunks, rows or lanes
//! (`tests/executors.rs`).

pub(crate) mod cpu;
pub mod sharded;

pub use cpu::batched::{BatchWorkspace, BatchedCpu};
pub use cpu::par::{ThreadedCpu, ThreadedWorkspace};
pub use cpu::{Buffers, SerialCpu};
pub use sharded::ShardPlan;

use crate::ir::{Arg, Graph};
use hazel_density::EvalError;

/// Lanes per batched call when the configuration does not say.
pub const DEFAULT_LANES: usize = 8;

/// Which executor runs a compiled model's static graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExecutorKind {
    /// The reference executor ([`SerialCpu`]); batch calls go op-major through
    /// [`BatchedCpu`] in groups of [`DEFAULT_LANES`].
    #[default]
    Serial,
    /// Large ops split into fixed chunks on a per-workspace thread pool of `threads`
    /// ([`ThreadedCpu`]; the CLI's `--threads-per-chain`); batch calls run point by point, each
    /// threaded.
    Threaded { threads: usize },
    /// K points op-major ([`BatchedCpu`]): batch calls in groups of `lanes`, single-point calls
    /// as one lane.
    Batched { lanes: usize },
}

impl ExecutorKind {
    /// `Serial` for 0 or 1 thread, else `Threaded`.
    pub fn with_threads(threads: usize) -> ExecutorKind {
        if threads <= 1 {
            ExecutorKind::Serial
        } else {
            ExecutorKind::Threaded { threads }
        }
    }

    /// Threads one evaluation may use.
    pub fn threads(&self) -> usize {
        match self {
            ExecutorKind::Threaded { threads } => (*threads).max(1),
            _ => 1,
        }
    }

    /// The executor this kind names.
    pub fn executor(&self) -> CpuExecutor {
        match *self {
            ExecutorKind::Serial => CpuExecutor::Serial(SerialCpu),
            ExecutorKind::Threaded { threads } if threads > 1 => {
                CpuExecutor::Threaded(ThreadedCpu { threads })
            }
            ExecutorKind::Threaded { .. } => CpuExecutor::Serial(SerialCpu),
            ExecutorKind::Batched { lanes } => CpuExecutor::Batched(BatchedCpu {
                lanes: lanes.max(1),
            }),
        }
    }

    /// The executor that batch calls use: op-major [`BatchedCpu`], except for `Threaded`
    /// (`None`: point by point on the threaded executor).
    pub fn batch_executor(&self) -> Option<BatchedCpu> {
        match *self {
            ExecutorKind::Serial => Some(BatchedCpu {
                lanes: DEFAULT_LANES,
            }),
            ExecutorKind::Batched { lanes } => Some(BatchedCpu {
                lanes: lanes.max(1),
            }),
            ExecutorKind::Threaded { .. } => None,
        }
    }
}

/// One way of running a graph. Implementations own their workspaces (no buffer lives in
/// the graph) and must reproduce [`SerialCpu`]'s bits.
pub trait Executor {
    /// Everything one evaluation writes: values, adjoints, per-op scratch, and whatever the
    /// executor needs besides (a thread pool, per-lane buffers, device memory). Made once per
    /// chain; evaluation reuses it and allocates nothing on the static path.
    type Workspace: Send;

    /// A workspace sized for `g`.
    fn new_workspace(&self, g: &Graph) -> Self::Workspace;

    /// The value of the scalar `out` at the unconstrained point `q` (forward sweep only).
    fn forward(
        &self,
        g: &Graph,
        out: Arg,
        q: &[f64],
        ws: &mut Self::Workspace,
    ) -> Result<f64, EvalError>;

    /// The value of `out` at `q`, and its gradient with respect to `q` in `grad`.
    fn gradient(
        &self,
        g: &Graph,
        out: Arg,
        q: &[f64],
        ws: &mut Self::Workspace,
        grad: &mut [f64],
    ) -> Result<f64, EvalError>;

    /// `K = lps.len()` points at once: `qs` and `grads` are flat `K × dim` buffers (point
    /// after point), `lps[i]` is point `i`'s value or error. Must equal `K` calls of
    /// [`Executor::gradient`] bit for bit; this default is that loop.
    fn gradient_batch(
        &self,
        g: &Graph,
        out: Arg,
        qs: &[f64],
        ws: &mut Self::Workspace,
        lps: &mut [Result<f64, EvalError>],
        grads: &mut [f64],
    ) {
        let d = g.dim;
        for (i, lp) in lps.iter_mut().enumerate() {
            *lp = self.gradient(
                g,
                out,
                &qs[i * d..(i + 1) * d],
                ws,
                &mut grads[i * d..(i + 1) * d],
            );
        }
    }
}

/// The CPU executors, chosen at run time by [`ExecutorKind`].
#[derive(Debug, Clone, Copy)]
pub enum CpuExecutor {
    Serial(SerialCpu),
    Threaded(ThreadedCpu),
    Batched(BatchedCpu),
}

/// The workspace of a [`CpuExecutor`].
#[derive(Debug)]
pub enum CpuWorkspace {
    Serial(Buffers),
    Threaded(ThreadedWorkspace),
    Batched(BatchWorkspace),
}

impl CpuWorkspace {
    /// Sets the instruction set the kernels run with (`CompileOptions::simd`, resolved).
    pub fn set_isa(&mut self, isa: crate::simd::Isa) {
        match self {
            CpuWorkspace::Serial(b) => b.isa = isa,
            CpuWorkspace::Threaded(w) => w.buf.isa = isa,
            CpuWorkspace::Batched(w) => w.isa = isa,
        }
    }
}

macro_rules! dispatch {
    ($self:ident, $ws:ident, $e:ident, $w:ident => $body:expr) => {
        match ($self, $ws) {
            (CpuExecutor::Serial($e), CpuWorkspace::Serial($w)) => $body,
            (CpuExecutor::Threaded($e), CpuWorkspace::Threaded($w)) => $body,
            (CpuExecutor::Batched($e), CpuWorkspace::Batched($w)) => $body,
            _ => panic!("workspace made by another executor"),
        }
    };
}

impl Executor for CpuExecutor {
    type Workspace = CpuWorkspace;

    fn new_workspace(&self, g: &Graph) -> CpuWorkspace {
        match self {
            CpuExecutor::Serial(e) => CpuWorkspace::Serial(e.new_workspace(g)),
            CpuExecutor::Threaded(e) => CpuWorkspace::Threaded(e.new_workspace(g)),
            CpuExecutor::Batched(e) => CpuWorkspace::Batched(e.new_workspace(g)),
        }
    }

    fn forward(
        &self,
        g: &Graph,
        out: Arg,
        q: &[f64],
        ws: &mut CpuWorkspace,
    ) -> Result<f64, EvalError> {
        dispatch!(self, ws, e, w => e.forward(g, out, q, w))
    }

    fn gradient(
        &self,
        g: &Graph,
        out: Arg,
        q: &[f64],
        ws: &mut CpuWorkspace,
        grad: &mut [f64],
    ) -> Result<f64, EvalError> {
        dispatch!(self, ws, e, w => e.gradient(g, out, q, w, grad))
    }

    fn gradient_batch(
        &self,
        g: &Graph,
        out: Arg,
        qs: &[f64],
        ws: &mut CpuWorkspace,
        lps: &mut [Result<f64, EvalError>],
        grads: &mut [f64],
    ) {
        dispatch!(self, ws, e, w => e.gradient_batch(g, out, qs, w, lps, grads))
    }
}
