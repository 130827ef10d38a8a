//! hazel's math library. Every function has a plain-value rule and a gradient rule beside it,
//! tested against reference values (mpmath/scipy fixtures) and finite differences.
//!
//! - [`algebra`]: nonlinear algebraic systems: Newton with a line search (Stan's KINSOL-based
//!   `solve_newton`), Powell's dogleg hybrid (`solve_powell`) and the implicit-function rule.
//! - [`dae`]: implicit DAEs `F(t, y, y') = 0` of index 1 (Stan's `dae`): variable-order BDF
//!   with forward sensitivities.
//! - [`special`]: scalar special functions (lgamma, digamma, log1p_exp, erfc, Phi, …) and the
//!   table of Stan's scalar functions by name.
//! - [`dist`]: univariate densities/mass functions, cdfs and rngs, and the table of Stan's
//!   distributions by name.
//! - [`linalg`]: dense matrix functions with reverse-mode (adjoint) rules: Cholesky, triangular
//!   solves, covariance kernels, multivariate densities.
//! - [`ode`]: initial value problems: adaptive Dormand–Prince 5(4) with Boost.Odeint's (and so
//!   Stan's `ode_rk45`'s) step control, and forward sensitivities.
//! - [`transforms`]: Stan's constraining transforms with log-Jacobians and their adjoints.
//! - [`vmath`]: `exp`, `expm1`, `ln`, `ln_1p`, `tanh` and the logistic functions, written
//!   once for scalar and vector code (the same bits from every CPU vector width).

#![forbid(unsafe_code)]

pub mod algebra;
pub mod dae;
pub mod dist;
pub mod linalg;
pub mod ode;
pub mod quadrature;
pub mod special;
pub mod transforms;
pub mod vmath;
