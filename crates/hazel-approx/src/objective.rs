//! The log density as the algorithms evaluate it, and the function the optimisers minimise.
//!
//! [`ModelEval`] holds a model, its workspace and an evaluation count, and evaluates the log
//! density with any [`DensityTerms`] (ADVI's ELBO and Pathfinder's `lp__` keep the constants;
//! CmdStan's `optimize` leaves the Jacobian out by default). Stan's optimisers minimise
//! `f(x) = −log p(x)`; the line search, the quasi-Newton updates and the convergence tests are
//! written for a minimisation, so they take a [`Minimand`], which [`NegLogDensity`] is.

use hazel_density::{DensityTerms, EvalError, LogDensity};

/// A function on ℝ^dim with its gradient, to be minimised. An evaluation that fails (the model
/// rejected the point, a non-finite value) is an error, which the line search treats as "step
/// back".
pub trait Minimand {
    fn dim(&self) -> usize;
    /// `f(x)`, with `∇f(x)` written into `grad`.
    fn value_gradient(&mut self, x: &[f64], grad: &mut [f64]) -> Result<f64, EvalError>;
}

/// A model with one workspace, counting gradient evaluations.
pub struct ModelEval<'m, M: LogDensity> {
    pub model: &'m M,
    ws: M::Workspace,
    /// Gradient evaluations so far.
    pub evaluations: usize,
}

impl<'m, M: LogDensity> ModelEval<'m, M> {
    pub fn new(model: &'m M) -> Self {
        ModelEval {
            model,
            ws: model.new_workspace(),
            evaluations: 0,
        }
    }

    pub fn dim(&self) -> usize {
        self.model.dim()
    }

    /// The log density with `terms` at `q`, its gradient into `grad`; non-finite values are
    /// errors.
    pub fn log_density(
        &mut self,
        q: &[f64],
        grad: &mut [f64],
        terms: DensityTerms,
    ) -> Result<f64, EvalError> {
        self.evaluations += 1;
        let lp = self
            .model
            .log_density_gradient_with(&mut self.ws, q, grad, terms)?;
        check_finite(lp, grad)?;
        Ok(lp)
    }
}

/// An error unless `value` and every gradient component are finite (the compiled models report
/// this themselves; densities written in Rust may not).
pub fn check_finite(value: f64, grad: &[f64]) -> Result<(), EvalError> {
    if !value.is_finite() {
        return Err(EvalError::non_finite(format!("log density is {value}")));
    }
    if let Some(i) = grad.iter().position(|g| !g.is_finite()) {
        return Err(EvalError::non_finite(format!(
            "gradient component {} is {}",
            i + 1,
            grad[i]
        )));
    }
    Ok(())
}

/// `f = −log p` of a model's log density with the given terms; its gradient is `−∇ log p`.
pub struct NegLogDensity<'m, M: LogDensity> {
    pub eval: ModelEval<'m, M>,
    pub terms: DensityTerms,
}

impl<'m, M: LogDensity> NegLogDensity<'m, M> {
    pub fn new(model: &'m M, terms: DensityTerms) -> Self {
        NegLogDensity {
            eval: ModelEval::new(model),
            terms,
        }
    }
}

impl<M: LogDensity> Minimand for NegLogDensity<'_, M> {
    fn dim(&self) -> usize {
        self.eval.dim()
    }
    fn value_gradient(&mut self, x: &[f64], grad: &mut [f64]) -> Result<f64, EvalError> {
        let lp = self.eval.log_density(x, grad, self.terms)?;
        grad.iter_mut().for_each(|g| *g = -*g);
        Ok(-lp)
    }
}
