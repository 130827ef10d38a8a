//! NUTS with Stan's windowed adaptation, as a pure `init` / `step` pair over explicit state,
//! and a runner that puts chains on a thread pool.
//!
//! The public contract with the output side is in [`types`]: the run configuration, the
//! per-draw statistics and the [`types::DrawSink`] that receives every draw as it is made.

pub mod types;

pub use types::*;
