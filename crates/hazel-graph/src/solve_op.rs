//! The algebraic-solver op ([`crate::tape::Op::Solve`]): `x` with `f(x, θ) = 0`, for Stan's
//! `solve_newton`/`solve_powell` (and `_tol`, and the deprecated `algebra_solver(_newton)`).
//!
//! The op holds the user's system as a static [`FnGraph`] over the slot `[x, θ]` (`θ`: the
//! parameter-dependent scalars of the variadic arguments, in order). Its forward rule runs
//! `hazel_math::algebra::{newton, powell}` from the guess, evaluating `f` and `∂f/∂x` by
//! replaying the sub-graph (one reverse sweep per equation for the Jacobian), then leaves
//! `∂f/∂x` (LU-factorised) and `∂f/∂θ` at the root in the op's scratch. The backward rule is
//! the implicit-function theorem: `θ̄ −= (∂f/∂θ)ᵀ [∂f/∂x]⁻ᵀ x̄`; the guess gets no gradient (as
//! in Stan). So a model with a solver stays static.
//!
//! Unlike the other ops, the forward rule allocates (the sub-graph's buffers and the solver's
//! work vectors, per evaluation).

use crate::lower::fn_graph::FnGraph;
use crate::tape::Buffers;
use hazel_density::EvalError;
use hazel_math::algebra::{
    newton, powell, AlgebraError, AlgebraSystem, NewtonOptions, PowellOptions,
};
use hazel_math::linalg::solve::{factor_len, lu_factor, lu_solve};

/// Which solver, with its control arguments.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SolveMethod {
    Newton(NewtonOptions),
    Powell(PowellOptions),
}

impl SolveMethod {
    /// Runs the solver on `sys` from `guess`.
    pub fn solve<S: AlgebraSystem>(
        &self,
        sys: &mut S,
        guess: &[f64],
    ) -> Result<Vec<f64>, AlgebraError> {
        match self {
            SolveMethod::Newton(o) => newton(sys, guess, o),
            SolveMethod::Powell(o) => powell(sys, guess, o),
        }
    }
}

/// What an [`crate::tape::Op::Solve`] solves.
#[derive(Debug, Clone)]
pub struct SolveSpec {
    /// The Stan function called (for messages).
    pub name: Box<str>,
    pub method: SolveMethod,
    /// The system over `[x, θ]`; its result is `f`.
    pub f: FnGraph,
    /// Number of unknowns.
    pub n: usize,
    /// Number of parameter-dependent scalars `θ`.
    pub m: usize,
}

impl SolveSpec {
    /// Scratch: `∂f/∂x`'s LU factorisation, `∂f/∂θ` (row-major `n × m`), `n` for the adjoint.
    pub fn scratch_len(&self) -> usize {
        factor_len(self.n) + self.n * self.m + self.n
    }
}

/// The replayed sub-graph as an [`AlgebraSystem`] at fixed `θ`.
struct Replay<'a> {
    f: &'a FnGraph,
    n: usize,
    q: Vec<f64>,
    buf: Buffers,
    /// `∂f/∂θ` rows of the last Jacobian evaluation.
    jp: Vec<f64>,
}

impl Replay<'_> {
    fn run(&mut self, x: &[f64], fx: &mut [f64], jx: Option<&mut [f64]>) -> Result<(), String> {
        self.q[..self.n].copy_from_slice(x);
        self.f
            .forward(&self.q, &mut self.buf)
            .map_err(|e| e.message)?;
        self.f
            .read(&mut self.buf, fx, jx.map(|j| (j, &mut self.jp[..])));
        Ok(())
    }
}

impl AlgebraSystem for Replay<'_> {
    fn n(&self) -> usize {
        self.n
    }
    fn eval(&mut self, x: &[f64], fx: &mut [f64]) -> Result<(), String> {
        self.run(x, fx, None)
    }
    fn eval_jac(&mut self, x: &[f64], fx: &mut [f64], jx: &mut [f64]) -> Result<(), String> {
        self.run(x, fx, Some(jx))
    }
}

/// Forward rule: the root into `out`, the Jacobians at the root into `scratch`.
pub fn forward(
    spec: &SolveSpec,
    guess: &[f64],
    theta: &[f64],
    out: &mut [f64],
    scratch: &mut [f64],
) -> Result<(), EvalError> {
    let (n, m) = (spec.n, spec.m);
    let mut q = vec![0.0; n + m];
    q[n..].copy_from_slice(theta);
    let mut sys = Replay {
        f: &spec.f,
        n,
        q,
        buf: Buffers::for_graph(&spec.f.graph),
        jp: vec![0.0; n * m],
    };
    let fail = |e: String| EvalError::domain(format!("{}: {e}", spec.name));
    let x = spec
        .method
        .solve(&mut sys, guess)
        .map_err(|e| fail(e.to_string()))?;
    out.copy_from_slice(&x);
    // Jacobians at the root, for the backward rule.
    let mut fx = vec![0.0; n];
    let mut jx = vec![0.0; n * n];
    sys.eval_jac(&x, &mut fx, &mut jx).map_err(fail)?;
    let (lu, rest) = scratch.split_at_mut(factor_len(n));
    // `jx` is row-major, i.e. the column-major buffer of `(∂f/∂x)ᵀ`: its LU solves the
    // transposed systems the adjoint needs.
    if lu_factor(&jx, n, lu).is_none() {
        return Err(fail(
            "the Jacobian of the algebraic system with respect to the unknowns is singular at \
             the solution, so the solution's derivatives do not exist"
                .to_string(),
        ));
    }
    rest[..n * m].copy_from_slice(&sys.jp);
    Ok(())
}

/// Backward rule: `θ̄ −= (∂f/∂θ)ᵀ [∂f/∂x]⁻ᵀ x̄` (`theta_adj`: the adjoints of `θ`, when it
/// varies).
pub fn backward(spec: &SolveSpec, out_adj: &[f64], theta_adj: &mut [f64], scratch: &mut [f64]) {
    let (n, m) = (spec.n, spec.m);
    let (lu, rest) = scratch.split_at_mut(factor_len(n));
    let (jp, eta) = rest.split_at_mut(n * m);
    let eta = &mut eta[..n];
    eta.copy_from_slice(out_adj);
    // The buffer holds the LU of (∂f/∂x)ᵀ, so a plain solve gives [∂f/∂x]⁻ᵀ x̄.
    lu_solve(lu, n, eta, 1);
    for (k, t) in theta_adj.iter_mut().enumerate() {
        let mut acc = 0.0;
        for i in 0..n {
            acc += jp[i * m + k] * eta[i];
        }
        *t -= acc;
    }
}
