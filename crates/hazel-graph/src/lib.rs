//! Stan program + data → a static op graph that is its own reverse-mode tape; constraining
//! transforms; implements `hazel_density::Model`.
//!
//! Entry point: [`compile`] (checked program, data, [`CompileOptions`]) → [`CompiledModel`].
//!
//! **Design: a tracing lowering.** `lower` walks the syntax tree with the concrete data.
//! Data-only expressions are evaluated to constants on the spot (transformed data, sizes,
//! bounds, loop bounds, indexes); parameter-dependent expressions emit ops through a
//! [`GraphBuilder`]. Loops with data bounds are unrolled by the trace (or, for independent
//! elementwise assignments, turned into vector ops by `lower::vectorize`), so the graph is
//! straight-line code over a flat value buffer. Scalar `~` statements in loops are batched
//! into one vector density op per (family, which arguments vary); truncated ones (`T[L, U]`)
//! too, and their normalisers are emitted once per distinct (cdf, bounds, parameters), scaled
//! by the number of statements sharing them. If control flow reads the
//! value of a parameter-dependent expression, the model is marked dynamic and every evaluation
//! re-traces the program into the workspace's builder (whose buffers keep their capacity).
//!
//! **Static graphs are rewritten once after tracing** (in `model`, never on the dynamic path):
//! [`Graph::eliminate_dead_ops`] drops pure ops nothing reads,
//! [`Graph::eliminate_common_subexpressions`] computes each repeated pure op once
//! (loops over data repeat the same term: `bernoulli_lpmf(1 | omega)` per row, the same
//! capture history's density, the same packed vector), then
//! [`Graph::fuse_mul_add`] merges a scalar multiply into the add that alone reads it
//! ([`Op::MulAdd`]; `mu += beta[k] * y[t - k]`) and [`Graph::fuse_mul_add_chains`] merges runs
//! of those feeding one another into one [`Op::MulAddChain`] (a whole AR(K) mean per op).
//! Values are unchanged by all three; the fusions keep every gradient bit, sharing may change
//! the gradient's last bits (summation order). `tests/fusion.rs` checks each rewrite.
//! Then [`Graph::fuse_glm`] turns `X β + α → density` into one [`Op::Glm`] that reads `X`
//! once per gradient ([`ir::glm`]; same bits, `tests/glm_fusion.rs`), and
//! [`Graph::packs_as_gathers`] turns long packs from one short run (a traced `rep_matrix`)
//! into [`Op::Gather`]s (same bits), and [`Graph::fuse_matmul_bias`] folds a dense layer's
//! `+ rep_matrix(b', N)` into its [`Op::MatMul`] (same bits). Last,
//! [`Graph::fuse_scalar_blocks`] re-encodes runs of scalar and short ops as one
//! [`Op::Scalars`] of compact instructions run in one loop ([`ir::scalar`]; same bits): the
//! interpreter's cost per scalar op falls several times over.
//!
//! **The IR and its executors are separate.** [`ir`] is what the model computes (the graph,
//! the op descriptors, the rewrites above) and never runs anything; [`exec`] runs it: the
//! [`Executor`] trait (workspace, forward, gradient, a batched entry point over K points with
//! flat buffers) and the CPU executors — the serial reference, the chunked threaded one and
//! the batched one (K points op-major) — chosen by [`CompileOptions::executor`]
//! ([`ExecutorKind`]), never a global. Every executor gives the reference's bits
//! (`tests/executors.rs`). `CompiledModel::log_density_gradient_batch` runs on the batched
//! executor.
//!
//! **Evaluation allocates nothing** once a workspace has run once: values, adjoints and
//! per-element partials live in the executor's workspace ([`Buffers`] for the reference, one
//! flat buffer of K lanes for the batched one), and the within-chain parallel
//! sweeps keep their per-chunk partials in a workspace buffer too (test
//! `tests/no_alloc_per_eval.rs`; the only allocation left with threads is rayon's injector
//! block, one per 63 evaluations). The dynamic path re-traces and does allocate, and so do
//! the solver ops ([`Op::Solve`], [`Op::Dae`]: the user function's sub-graph buffers and the
//! solvers' work arrays).
//!
//! - [`ir`]: `ir::graph` (ops over slots of a flat buffer, the rewrites above) and `ir::ops`
//!   (the function, family and matrix-function descriptors ops name).
//! - [`exec`]: the [`Executor`] trait, [`ExecutorKind`], and `exec::cpu`: the reference sweeps
//!   (`Graph::forward`/`backward`), `kernels` (value and gradient rules of every op, side by
//!   side), `dists` (vectorised univariate densities with Stan's constant-dropping rule:
//!   inlined kernels for the common families, `hazel_math::dist` for the rest and for cdfs),
//!   `linalg_kernels`, `par` (the threaded executor), `batched`.
//! - [`tape`], [`kernels`], [`dists`]: the old paths of the same items (aliases).
//! - [`builder`]: building a graph op by op, with eager values (also used by hand in tests).
//! - `lower`: the tracing interpreter — `trace` (the tracer, scopes, dynamic detection),
//!   `exec` (expressions and statements), `value` (constants vs. graph nodes), `builtins`
//!   (calls: the checker's resolved target — a user overload, or a built-in by its resolved
//!   signature's name), `support` (which built-in calls lower, for `hazel check`), `params`
//!   (reading and constraining the parameters),
//!   `vectorize` (independent loops as vector ops) and `ode` (Stan's variadic ODE solvers:
//!   data-only calls solved at build time, parameter-dependent ones make the model dynamic and
//!   lower to the solution plus its sensitivities from `hazel_math::ode`).
//! - [`simd`]: runtime CPU-feature dispatch of the hot kernels through `pulp`
//!   ([`CompileOptions::simd`]); every level gives the same bits (fixed reduction shapes).
//! - `solve_op`, `dae_op`: the algebraic-solver and DAE ops, which hold the user's
//!   function as a traced sub-graph (`lower::fn_graph`) and differentiate by the implicit
//!   function theorem / forward sensitivities (lowered by `lower::solve`, `lower::dae`).
//! - `mvdist`, `nary`, `ode_op`, `integrate_op`, `solve_op`, `dae_op`: ops whose
//!   descriptor (a spec the IR holds) and rules live together; every executor runs them with
//!   these rules, lane by lane.
//! - `model`: [`compile`], [`CompiledModel`] (log density, output rows, user inits; runs the
//!   static graph on the configured executor).
//! - `output`: output rows compiled once per data set (a forward-only graph over the
//!   unconstrained point; generated quantities that need values re-traced alone).

pub mod builder;
pub(crate) mod dae_op;
pub mod exec;
pub(crate) mod integrate_op;
pub mod ir;
pub(crate) mod lower;
mod model;
pub(crate) mod mvdist;
pub(crate) mod nary;
pub(crate) mod ode_op;
mod output;
pub(crate) mod solve_op;

pub(crate) use exec::cpu::linalg_kernels;
pub use exec::cpu::simd;
/// Compatibility paths from before the IR/executor split (`crate::kernels::BinaryFn`,
/// `hazel_graph::dists::DistKind`, …): the same items under their old names.
pub use exec::cpu::{dists, kernels};

/// The graph and the reference executor's buffers under their old module name.
pub mod tape {
    pub(crate) use crate::exec::cpu::read;
    pub use crate::exec::cpu::Buffers;
    pub use crate::ir::graph::*;
}

pub use builder::GraphBuilder;
pub use exec::{Executor, ExecutorKind};
pub use lower::support::{unsupported_call_diagnostics, unsupported_calls, unsupported_signatures};
pub use model::{compile, CompileError, CompileOptions, CompiledModel, OutputColumns, Workspace};
pub use simd::SimdLevel;
pub use tape::{Arg, Buffers, Graph, Op};
