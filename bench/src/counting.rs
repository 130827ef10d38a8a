//! A model wrapper that counts the log density + gradient evaluations a sampler asks for (one
//! per point, batched or not) and the batched calls, forwarding everything else unchanged.

use hazel_density::{DensityTerms, EvalError, LogDensity, Model};
use hazel_rng::StreamRng;
use std::sync::atomic::{AtomicU64, Ordering};

pub struct Counting<'a, M> {
    model: &'a M,
    /// Points evaluated (gradients), single or batched.
    points: AtomicU64,
    /// Calls of `log_density_gradient_batch`.
    batch_calls: AtomicU64,
}

impl<'a, M> Counting<'a, M> {
    pub fn new(model: &'a M) -> Self {
        Counting {
            model,
            points: AtomicU64::new(0),
            batch_calls: AtomicU64::new(0),
        }
    }
    /// Points evaluated so far (each one gradient).
    pub fn points(&self) -> u64 {
        self.points.load(Ordering::Relaxed)
    }
    /// Batched calls so far.
    pub fn batch_calls(&self) -> u64 {
        self.batch_calls.load(Ordering::Relaxed)
    }
}

impl<M: LogDensity> LogDensity for Counting<'_, M> {
    type Workspace = M::Workspace;
    fn dim(&self) -> usize {
        self.model.dim()
    }
    fn new_workspace(&self) -> M::Workspace {
        self.model.new_workspace()
    }
    fn log_density_gradient(
        &self,
        ws: &mut M::Workspace,
        q: &[f64],
        grad: &mut [f64],
    ) -> Result<f64, EvalError> {
        self.points.fetch_add(1, Ordering::Relaxed);
        self.model.log_density_gradient(ws, q, grad)
    }
    fn log_density_gradient_with(
        &self,
        ws: &mut M::Workspace,
        q: &[f64],
        grad: &mut [f64],
        terms: DensityTerms,
    ) -> Result<f64, EvalError> {
        self.points.fetch_add(1, Ordering::Relaxed);
        self.model.log_density_gradient_with(ws, q, grad, terms)
    }
    fn log_density_gradient_batch(
        &self,
        ws: &mut [M::Workspace],
        qs: &[f64],
        grads: &mut [f64],
        out: &mut [Result<f64, EvalError>],
    ) {
        self.batch_calls.fetch_add(1, Ordering::Relaxed);
        self.points.fetch_add(out.len() as u64, Ordering::Relaxed);
        self.model.log_density_gradient_batch(ws, qs, grads, out)
    }
}

impl<M: Model> Model for Counting<'_, M> {
    fn output_names(&self) -> Vec<String> {
        self.model.output_names()
    }
    fn write_output(
        &self,
        ws: &mut M::Workspace,
        q: &[f64],
        rng: &mut StreamRng,
        out: &mut [f64],
    ) -> Result<(), EvalError> {
        self.model.write_output(ws, q, rng, out)
    }
}
