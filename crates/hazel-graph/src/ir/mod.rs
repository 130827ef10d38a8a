//! The intermediate representation: what a model computes, with no knowledge of how it runs.
//!
//! - [`graph`]: the op graph ([`Op`]s over [`Slot`]s of one flat value buffer, a constant
//!   pool, buffer sizes, debug locations) and the rewrites run on it after tracing (common
//!   subexpressions, multiply-add fusion).
//! - [`glm`]: the fused GLM op's description and its rewrite ([`Graph::fuse_glm`]).
//! - [`scalar`]: scalar blocks ([`Graph::fuse_scalar_blocks`]): runs of scalar ops as compact
//!   instructions run in one loop.
//! - [`lanes`]: lane regions ([`Graph::lane_scalar_blocks`]): a block's repeated iterations
//!   run side by side.
//! - [`ops`]: the function, density-family and matrix-function descriptors that ops name.
//!
//! Invariants of the boundary (ARCHITECTURE.md, "IR and executors"): nothing here calls a
//! kernel, owns a value buffer, holds a pointer into one, or knows about threads; offsets are
//! `u32` indexes into buffers the executor owns. Executors live in [`crate::exec`].

pub mod glm;
pub mod graph;
pub mod lanes;
pub mod ops;
pub mod scalar;

pub use graph::{Arg, CheckKind, Graph, LinalgFn, Op, Slot, Space, StructKind};
pub use ops::{BinaryFn, DistKind, MathBinary, MathUnary, Mode, TableDist, UnaryFn};
