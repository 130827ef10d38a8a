//! The ODE graph op ([`crate::tape::Op::Ode`]): one call of an ODE solver with
//! parameter-dependent arguments. The op holds the traced right-hand side ([`FnGraph`],
//! immutable) and the call's data; its input is the run of parameter-dependent scalars `v`
//! (the initial state when it depends on parameters, then those of the variadic arguments).
//!
//! - **Forward rule:** solves the states and their forward sensitivities at the current `v`
//!   (`hazel_math::ode::solve`), writes the states at the requested times to the output
//!   (`ts.len() × n`, time-major) and leaves the sensitivities `S` (`∂out/∂v`) in the op's
//!   scratch.
//! - **Backward rule:** `adj_v += Sᵀ adj_out`.
//!
//! Per evaluation the solver allocates its work arrays and the right-hand side's buffers
//! (the engine's scratch is `f64` only); the op is not allocation-free.

use crate::lower::fn_graph::{FnGraph, LeadFn, Replay};
use crate::lower::ode::{traced_rhs, LeadRhs};
use crate::lower::value::Val;
use hazel_density::EvalError;
use hazel_math::ode::{solve, OdeMethod, OdeTolerances};
use hazel_syntax::Span;
use std::sync::Arc;

/// Where the right-hand side's values and Jacobians come from.
#[derive(Debug)]
pub enum RhsSource {
    /// One static trace over `[t, y, p]` (`t` passive, `y` active), replayed at every call.
    Static(FnGraph),
    /// The body's control flow reads `t` (only): guarded traces (`TracedFn::set_guarded`),
    /// made afresh at each evaluation, one per distinct set of values read (one per branch
    /// taken: a dosing switch `if (t > 0)` needs two per evaluation).
    PerCall(Box<PerCallRhs>),
}

/// What re-tracing the right-hand side needs: the program, the function and the call's
/// other arguments (their parameter-dependent scalars become slot values; only their
/// structure and constants are read).
#[derive(Debug)]
pub struct PerCallRhs {
    pub prog: Arc<hazel_check::CheckedProgram>,
    pub function: usize,
    pub span: Span,
    /// The deprecated `integrate_ode_*` interface (states as `array[] real`).
    pub array_state: bool,
    pub args: Box<[Val]>,
}

/// Everything about one ODE call that does not change between evaluations.
#[derive(Debug)]
pub struct OdeSpec {
    /// The solver's Stan name (for messages).
    pub name: Box<str>,
    pub method: OdeMethod,
    /// The tolerances the method runs at.
    pub tol: OdeTolerances,
    /// The right-hand side.
    pub rhs: RhsSource,
    /// Number of states.
    pub n: usize,
    pub t0: f64,
    pub ts: Box<[f64]>,
    /// The initial state when it is constant; empty when it leads `v`.
    pub y0: Box<[f64]>,
}

impl OdeSpec {
    /// Whether the initial state leads the op's input.
    pub fn y0_var(&self) -> bool {
        self.y0.len() != self.n
    }
    /// Output length.
    pub fn out_len(&self) -> usize {
        self.ts.len() * self.n
    }
    /// Scratch length for `n_v` inputs: the sensitivities.
    pub fn scratch_len(&self, n_v: usize) -> usize {
        self.out_len() * n_v
    }
}

/// The traced right-hand side with its buffers, as an [`OdeRhs`].
/// Forward rule: `out` gets the states, `sens` (`out.len() × v.len()`, in
/// `hazel_math::ode::OdeSolution::sens` layout) the sensitivities.
pub fn forward(
    spec: &OdeSpec,
    v: &[f64],
    out: &mut [f64],
    sens: &mut [f64],
) -> Result<(), EvalError> {
    let n = spec.n;
    let (y0, p) = if spec.y0_var() {
        v.split_at(n)
    } else {
        (&spec.y0[..], v)
    };
    // The right-hand side `f` solved with the spec's method, times and tolerances.
    let solve_with = |f: &mut dyn LeadFn| {
        solve(
            spec.method,
            &mut LeadRhs::new(f, n, p.len()),
            y0,
            spec.y0_var(),
            spec.t0,
            &spec.ts,
            &spec.tol,
        )
    };
    let sol = match &spec.rhs {
        RhsSource::Static(g) => solve_with(&mut Replay::new(g, p)),
        RhsSource::PerCall(pc) => {
            let mut f = traced_rhs(
                &pc.prog,
                pc.function,
                pc.span,
                n,
                pc.array_state,
                &pc.args,
                p.to_vec(),
            );
            f.set_guarded();
            solve_with(&mut f)
        }
    }
    .map_err(|e| EvalError::reject(format!("{}: {e}", spec.name)))?;
    out.copy_from_slice(&sol.values);
    sens.copy_from_slice(&sol.sens);
    Ok(())
}

/// Backward rule: `adj_v += Sᵀ g`.
pub fn backward(spec: &OdeSpec, sens: &[f64], g: &[f64], adj_v: &mut [f64]) {
    let n = spec.n;
    let ns = adj_v.len();
    for (j, gj) in g.chunks(n).enumerate() {
        for (k, a) in adj_v.iter_mut().enumerate() {
            let col = &sens[(j * ns + k) * n..(j * ns + k + 1) * n];
            *a += col.iter().zip(gj).map(|(s, g)| s * g).sum::<f64>();
        }
    }
}
