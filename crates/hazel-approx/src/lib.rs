//! Optimisation and approximate inference over a log density: CmdStan's `optimize` (L-BFGS,
//! BFGS, Newton), `laplace`, `variational` (ADVI, mean-field and full-rank) and `pathfinder`
//! (single- and multi-path with Pareto-smoothed importance resampling).
//!
//! Everything here sees only [`hazel_density::LogDensity`]: a log density on ℝ^d with its
//! gradient (and, through [`hazel_density::DensityTerms`], the variants without the Jacobian or
//! with the constants kept). Nothing depends on NUTS or on Stan; output (CSV rows, constrained
//! values, generated quantities) is the caller's business: these modules return unconstrained
//! points and the numbers CmdStan writes beside them.
//!
//! # Layers (small modules over explicit state, BlackJAX style)
//!
//! * [`objective`] — the function the optimisers minimise, `f = −log p`, as a [`Minimand`].
//! * `line_search` — a strong-Wolfe line search with cubic interpolation (Stan's rules).
//! * `lbfgs` and `bfgs` — the two inverse-Hessian approximations: a history of the last
//!   few updates (two-loop recursion) and a dense matrix.
//! * [`quasi_newton`] — one optimiser step over a [`quasi_newton::QuasiNewton`] state, with
//!   CmdStan's convergence tests and tolerance names.
//! * `hessian` and [`newton`] — Hessians by finite differences of gradients; Stan's Newton
//!   step (the Hessian made negative definite through its eigenvalues, step halving).
//! * [`laplace`] — the normal approximation at a mode and draws from it.
//! * [`advi`] — ADVI's Gaussian families, ELBO and its stochastic gradient, eta adaptation and
//!   the stochastic gradient ascent, as in Stan.
//! * [`psis`] — Pareto-smoothed importance weights (the generalised Pareto fit of Zhang and
//!   Stephens with Stan's and loo's prior) and multinomial resampling.
//! * [`pathfinder`] — the L-BFGS path, the normal approximations along it (dense or sparse),
//!   the ELBO that picks one, single- and multi-path runs.
//!
//! # Determinism
//!
//! Every random number comes from a [`hazel_rng::StreamRng`] the caller passes in (one stream
//! per path or chain); every sum runs in a fixed order; multi-path Pathfinder runs paths on a
//! private thread pool and combines them in path order. The output depends only on the seed,
//! the model and the settings, never on the thread count.

#![forbid(unsafe_code)]
// Index loops over several vectors at once read as the formulas they implement.
#![allow(clippy::needless_range_loop)]

pub mod advi;
mod bfgs;
mod dense;
mod hessian;
pub mod laplace;
mod lbfgs;
mod line_search;
pub mod newton;
pub mod objective;
pub mod pathfinder;
pub mod psis;
pub mod quasi_newton;

pub use line_search::LineSearchOptions;
pub use objective::{Minimand, ModelEval, NegLogDensity};
pub use quasi_newton::{
    ConvergenceOptions, QuasiNewton, QuasiNewtonKind, QuasiNewtonOptions, Termination,
};
