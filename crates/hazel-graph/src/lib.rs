//! Stan program + data → a static op graph that is its own reverse-mode tape; constraining
//! transforms; implements `hazel_density::Model`.
//!
//! Entry point: [`compile`] (program, data, [`CompileOptions`]) → [`CompiledModel`].
//!
//! **Design: a tracing lowering.** [`lower`] walks the syntax tree with the concrete data.
//! Data-only expressions are evaluated to constants on the spot (transformed data, sizes,
//! bounds, loop bounds, indexes); parameter-dependent expressions emit ops through a
//! [`GraphBuilder`]. Loops with data bounds are unrolled by the trace, so the graph is
//! straight-line code over a flat value buffer. Scalar `~` statements in loops are batched
//! into one vector density op per (family, which arguments vary). If control flow reads the
//! value of a parameter-dependent expression, the model is marked dynamic and every evaluation
//! re-traces the program into the workspace's builder (whose buffers keep their capacity).
//!
//! - [`tape`]: the graph (ops over slots of a flat buffer), forward and backward sweeps.
//! - [`kernels`]: value and gradient rules of every op, side by side.
//! - [`dists`]: vectorised univariate densities with Stan's constant-dropping rule (inlined
//!   kernels for the common families, `hazel_math::dist` for the rest and for cdfs).
//! - [`builder`]: building a graph op by op (also used by hand in tests).
//! - [`lower`]: the tracing interpreter (values, expressions, statements, built-in functions,
//!   parameter transforms).
//! - `par`: within-chain parallel sweeps, bit-identical to the serial ones.
//! - `model`: [`compile`], [`CompiledModel`] (log density, output rows, user inits).

pub mod builder;
pub mod dists;
pub mod kernels;
pub mod lower;
mod model;
mod par;
mod special;
pub mod tape;

pub use builder::GraphBuilder;
pub use model::{compile, CompileError, CompileOptions, CompiledModel, Workspace};
pub use tape::{Arg, Buffers, Graph, Op};
