//! The narrow interface between a model and everything that consumes it.
//!
//! A model is a log density over an unconstrained vector `q ∈ ℝ^dim`. It is immutable and
//! `Sync`: many chains evaluate one model at once. Everything a model mutates while it
//! evaluates (tape buffers, scratch vectors) lives in a per-chain [`LogDensity::Workspace`],
//! created once per chain by [`LogDensity::new_workspace`], so evaluation never allocates and
//! never touches shared state.
//!
//! Failures inside the density (a `reject`, a non-finite value, an argument outside a
//! distribution's support) are returned as [`EvalError`]; the sampler treats them as a rejected
//! (divergent) proposal. A model must never panic on any `q`.
//!
//! Room left for what is coming:
//! - batched evaluation (many chains in lockstep on a GPU) goes through
//!   [`LogDensity::log_density_gradient_batch`], whose default loops over the single-point call;
//!   a batched backend overrides it and the sampler's logic does not change;
//! - a distributed density (MPI ranks) is a `LogDensity` whose chain workspaces
//!   ([`LogDensity::new_chain_workspace`]) hold the link to the other ranks; the reduction
//!   order is fixed by the model, never by the rank count.

#![forbid(unsafe_code)]

use std::fmt;

pub use hazel_rng::StreamRng;

/// Stack size of the threads that build and evaluate models (the CLI's main work, every
/// chain). Building a model from a Stan program recurses once per level of the syntax tree
/// (a left-associative sum of 100,000 terms is 100,000 levels deep) and once per user-function
/// call, and a model whose control flow depends on parameters is rebuilt at every evaluation.
/// The memory is reserved, not committed: only the pages a deep program touches are used.
pub const EVALUATION_STACK_BYTES: usize = 1 << 30;

/// Why a log density could not be evaluated at a point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvalErrorKind {
    /// The log density or a gradient component came out NaN or infinite.
    NonFinite,
    /// The model executed `reject(...)` or a check failed (Stan's domain errors).
    Reject,
    /// An argument was outside a function's domain or a distribution's support.
    Domain,
    /// A transformed parameter violated its declared constraint.
    Constraint,
    /// `fatal_error(...)`: the run must stop, not just this proposal.
    Fatal,
}

/// A failed evaluation. `message` is what the user sees (rate-limited by the caller).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalError {
    pub kind: EvalErrorKind,
    pub message: String,
    /// Where in the model it happened, as the user reads it (`'m.stan', line 4, column 3 to
    /// column 40`), when the model knows.
    pub location: Option<String>,
}

impl EvalError {
    pub fn new(kind: EvalErrorKind, message: impl Into<String>) -> Self {
        EvalError {
            kind,
            message: message.into(),
            location: None,
        }
    }
    /// The same error located at `location` (a location already set is kept: the innermost
    /// one is the most precise).
    pub fn at(mut self, location: Option<&str>) -> Self {
        if self.location.is_none() {
            self.location = location.map(str::to_string);
        }
        self
    }
    pub fn non_finite(message: impl Into<String>) -> Self {
        Self::new(EvalErrorKind::NonFinite, message)
    }
    pub fn reject(message: impl Into<String>) -> Self {
        Self::new(EvalErrorKind::Reject, message)
    }
    pub fn domain(message: impl Into<String>) -> Self {
        Self::new(EvalErrorKind::Domain, message)
    }
    /// Whether the run must stop (as opposed to rejecting one proposal).
    pub fn is_fatal(&self) -> bool {
        self.kind == EvalErrorKind::Fatal
    }
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        match &self.location {
            Some(location) => write!(f, " (in {location})"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for EvalError {}

/// Which terms a log density includes. The sampler's density is [`DensityTerms::SAMPLER`]:
/// the log-Jacobians of the constraining transforms added, the constant summands of `~` and
/// `_lupdf` dropped. Optimisation without the Jacobian (CmdStan's default `optimize`) and the
/// reported `log_p__` of approximate methods (constants kept) need the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DensityTerms {
    /// Add the log absolute Jacobian determinants of the parameter transforms.
    pub jacobian: bool,
    /// Drop summands that do not depend on parameters (Stan's `propto`).
    pub propto: bool,
}

impl DensityTerms {
    /// What the sampler evaluates (CmdStan's `log_prob<propto = true, jacobian = true>`).
    pub const SAMPLER: DensityTerms = DensityTerms {
        jacobian: true,
        propto: true,
    };
}

/// A differentiable log density on ℝ^dim.
pub trait LogDensity: Sync {
    /// Per-chain mutable state: everything evaluation writes.
    type Workspace: Send;

    /// Dimension of the unconstrained space.
    fn dim(&self) -> usize;

    /// A fresh workspace. Called once per chain, never on the hot path.
    fn new_workspace(&self) -> Self::Workspace;

    /// The workspace of chain `chain_id` (what the sampler calls, once per chain). A
    /// distributed density links it to the same chain's workspaces on the other ranks (its
    /// evaluations are exchanges on the chain's own channel); by default it is
    /// [`LogDensity::new_workspace`].
    fn new_chain_workspace(&self, chain_id: u64) -> Self::Workspace {
        let _ = chain_id;
        self.new_workspace()
    }

    /// Log density at `q` (length `dim`), with its gradient written into `grad` (length `dim`).
    /// On error the contents of `grad` are unspecified.
    fn log_density_gradient(
        &self,
        ws: &mut Self::Workspace,
        q: &[f64],
        grad: &mut [f64],
    ) -> Result<f64, EvalError>;

    /// The log density with the chosen `terms`, and its gradient. The default evaluates
    /// [`LogDensity::log_density_gradient`] whatever `terms` says: right for a density written
    /// directly on ℝ^dim (no transforms, nothing dropped). A model with transforms or dropped
    /// constants (a compiled Stan program) overrides it.
    fn log_density_gradient_with(
        &self,
        ws: &mut Self::Workspace,
        q: &[f64],
        grad: &mut [f64],
        terms: DensityTerms,
    ) -> Result<f64, EvalError> {
        let _ = terms;
        self.log_density_gradient(ws, q, grad)
    }

    /// Evaluates `n = out.len()` points at once: `qs` and `grads` hold `n` rows of `dim`, one
    /// workspace per point. Backends that batch (GPU, SIMD across chains) override this; the
    /// result must equal `n` single-point calls bit for bit.
    fn log_density_gradient_batch(
        &self,
        ws: &mut [Self::Workspace],
        qs: &[f64],
        grads: &mut [f64],
        out: &mut [Result<f64, EvalError>],
    ) {
        let d = self.dim();
        for (i, ((w, o), g)) in ws
            .iter_mut()
            .zip(out.iter_mut())
            .zip(grads.chunks_mut(d.max(1)))
            .enumerate()
        {
            *o = self.log_density_gradient(w, &qs[i * d..(i + 1) * d], g);
        }
    }
}

/// A log density that also knows how to report a draw: the constrained parameters,
/// transformed parameters and generated quantities, in Stan order with Stan's column names.
pub trait Model: LogDensity {
    /// Output column names in Stan's CSV spelling (`theta.1`, `Sigma.2.1`), parameters first,
    /// then transformed parameters, then generated quantities.
    fn output_names(&self) -> Vec<String>;

    /// Writes the output row for the unconstrained point `q` into `out`
    /// (length `output_names().len()`). Generated quantities draw from `rng`, the chain's own
    /// stream for that purpose, so output is reproducible and independent of thread counts.
    fn write_output(
        &self,
        ws: &mut Self::Workspace,
        q: &[f64],
        rng: &mut StreamRng,
        out: &mut [f64],
    ) -> Result<(), EvalError>;
}

/// Wraps any [`LogDensity`] written in Rust as a [`Model`] whose output is `q` itself, with
/// columns named `<prefix>.1 … <prefix>.dim` (or given names).
pub struct Unconstrained<D> {
    pub density: D,
    names: Vec<String>,
}

impl<D: LogDensity> Unconstrained<D> {
    /// Columns `prefix.1`, …, `prefix.dim`.
    pub fn new(density: D, prefix: &str) -> Self {
        let names = (1..=density.dim())
            .map(|i| format!("{prefix}.{i}"))
            .collect();
        Unconstrained { density, names }
    }
    /// Explicit column names (one per dimension).
    pub fn with_names(density: D, names: Vec<String>) -> Self {
        assert_eq!(names.len(), density.dim(), "one name per dimension");
        Unconstrained { density, names }
    }
}

impl<D: LogDensity> LogDensity for Unconstrained<D> {
    type Workspace = D::Workspace;
    fn dim(&self) -> usize {
        self.density.dim()
    }
    fn new_workspace(&self) -> Self::Workspace {
        self.density.new_workspace()
    }
    fn new_chain_workspace(&self, chain_id: u64) -> Self::Workspace {
        self.density.new_chain_workspace(chain_id)
    }
    fn log_density_gradient(
        &self,
        ws: &mut Self::Workspace,
        q: &[f64],
        grad: &mut [f64],
    ) -> Result<f64, EvalError> {
        self.density.log_density_gradient(ws, q, grad)
    }
    fn log_density_gradient_batch(
        &self,
        ws: &mut [Self::Workspace],
        qs: &[f64],
        grads: &mut [f64],
        out: &mut [Result<f64, EvalError>],
    ) {
        self.density.log_density_gradient_batch(ws, qs, grads, out)
    }
    fn log_density_gradient_with(
        &self,
        ws: &mut Self::Workspace,
        q: &[f64],
        grad: &mut [f64],
        terms: DensityTerms,
    ) -> Result<f64, EvalError> {
        self.density.log_density_gradient_with(ws, q, grad, terms)
    }
}

impl<D: LogDensity> Model for Unconstrained<D> {
    fn output_names(&self) -> Vec<String> {
        self.names.clone()
    }
    fn write_output(
        &self,
        _ws: &mut Self::Workspace,
        q: &[f64],
        _rng: &mut StreamRng,
        out: &mut [f64],
    ) -> Result<(), EvalError> {
        out.copy_from_slice(q);
        Ok(())
    }
}

/// Independent normals with means `mean` and standard deviations `sd`: the simplest density
/// with known moments, the model of the sampler's, the outputs' and the jobs' tests.
#[derive(Debug, Clone, PartialEq)]
pub struct IndependentNormal {
    pub mean: Vec<f64>,
    pub sd: Vec<f64>,
}

impl IndependentNormal {
    /// Means `mean`, standard deviations 1.
    pub fn unit(mean: Vec<f64>) -> Self {
        let sd = vec![1.0; mean.len()];
        IndependentNormal { mean, sd }
    }
}

impl LogDensity for IndependentNormal {
    type Workspace = ();
    fn dim(&self) -> usize {
        self.mean.len()
    }
    fn new_workspace(&self) {}
    fn log_density_gradient(&self, _: &mut (), q: &[f64], g: &mut [f64]) -> Result<f64, EvalError> {
        let mut lp = 0.0;
        for i in 0..q.len() {
            let z = (q[i] - self.mean[i]) / self.sd[i];
            lp -= 0.5 * z * z;
            g[i] = -z / self.sd[i];
        }
        Ok(lp)
    }
}
