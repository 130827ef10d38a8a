//! Checked program + data to a static op graph that is its own reverse-mode tape; constraint
//! transforms; implements `hazel_density::Model`.
//!
//! - [`tape`]: the graph (ops over slots of a flat buffer), forward and backward sweeps.
//! - [`kernels`]: value and gradient rules of every op, side by side.
//! - [`dists`]: vectorised univariate densities with Stan's constant-dropping rule.
//! - [`builder`]: building a graph op by op (also used by hand in tests).

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
