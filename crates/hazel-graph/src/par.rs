//! Within-chain parallel evaluation (inside the workspace's thread pool).
//!
//! Parallel kernels are not in yet: this runs the serial sweeps, which already use the fixed
//! chunking that the parallel kernels will reproduce bit for bit.

use crate::tape::{Arg, Buffers, Graph};
use hazel_density::EvalError;

pub fn forward_backward(g: &Graph, out: Arg, q: &[f64], buf: &mut Buffers) -> Result<(), EvalError> {
    g.forward(q, buf)?;
    g.backward(out, buf);
    Ok(())
}
