//! The DAE op ([`crate::tape::Op::Dae`]): the solution of `F(t, y, y'; θ) = 0` at the
//! requested times, for Stan's `dae` and `dae_tol`.
//!
//! The op holds the residual as a static [`FnGraph`] over the slot `[t, y, y', θ]` (`θ`: the
//! parameter-dependent scalars of the variadic arguments) or, when its control flow reads `t`
//! only (a switch at a dosing time), what guarded traces made inside the op need (as
//! [`crate::ode_op`] does). Its forward rule runs
//! `hazel_math::dae::solve_dae` (BDF with forward sensitivities), replaying the sub-graph for
//! `F` and its Jacobians, and leaves the sensitivities `∂y(t_j)/∂(y₀, θ)` in the op's scratch;
//! the backward rule multiplies the output adjoints by them. `y'₀` gets no gradient (the
//! solution does not depend on it; see `hazel_math::dae`). So a model with a DAE stays static.
//! Like [`crate::solve_op`], the forward rule allocates.

use crate::lower::fn_graph::{FnGraph, LeadArg, LeadFn, Replay, Shape, TracedFn};
use crate::lower::value::Val;
use hazel_density::EvalError;
use hazel_math::dae::{solve_dae, DaeResidual, DaeTolerances};
use hazel_syntax::Span;
use std::sync::Arc;

/// Where the residual's values and Jacobians come from.
#[derive(Debug, Clone)]
pub enum ResidualSource {
    /// One static trace over `[t, y, y', θ]`, replayed at every call.
    Static(FnGraph),
    /// The body's control flow reads `t` (only): guarded traces (`TracedFn::set_guarded`),
    /// made and replayed inside the op per set of `t`-dependent branches taken.
    PerCall(Box<PerCallResidual>),
}

/// What re-tracing the residual needs: the program, the function and the call's other
/// arguments (their parameter-dependent scalars become slot values).
#[derive(Debug, Clone)]
pub struct PerCallResidual {
    pub prog: Arc<hazel_check::CheckedProgram>,
    pub function: usize,
    pub span: Span,
    pub args: Box<[Val]>,
}

/// The leading arguments of a residual: `t` (passive), `y`, `y'` (active).
pub(crate) fn residual_lead(n: usize) -> Vec<LeadArg> {
    vec![
        LeadArg {
            shape: Shape::Real,
            active: false,
        },
        LeadArg {
            shape: Shape::Vector(n),
            active: true,
        },
        LeadArg {
            shape: Shape::Vector(n),
            active: true,
        },
    ]
}

/// What an [`crate::tape::Op::Dae`] solves.
#[derive(Debug, Clone)]
pub struct DaeSpec {
    /// The Stan function called (for messages).
    pub name: Box<str>,
    pub tol: DaeTolerances,
    /// The residual over `[t, y, y', θ]`.
    pub f: ResidualSource,
    /// Number of states.
    pub n: usize,
    /// Number of parameter-dependent scalars `θ`.
    pub m: usize,
    /// Whether the initial state varies (sensitivity columns for it).
    pub y0_var: bool,
    pub t0: f64,
    pub ts: Box<[f64]>,
}

impl DaeSpec {
    /// Number of sensitivity columns.
    pub fn n_sens(&self) -> usize {
        if self.y0_var {
            self.n + self.m
        } else {
            self.m
        }
    }
    /// Scratch: the sensitivities at every output time.
    pub fn scratch_len(&self) -> usize {
        self.ts.len() * self.n * self.n_sens()
    }
    /// Output length: the state at every output time.
    pub fn out_len(&self) -> usize {
        self.ts.len() * self.n
    }
}

/// A function of `[t, y, y']` (`t` passive, `y`, `y'` active) as a [`DaeResidual`].
pub(crate) struct LeadResidual<F> {
    f: F,
    n: usize,
    m: usize,
    lead: Vec<f64>,
    /// `∂F/∂[y, y']` (`n × 2n`), split by [`split_jac`].
    ja: Vec<f64>,
}

impl<F> LeadResidual<F> {
    /// `f` with `n` states and `m` parameters.
    pub(crate) fn new(f: F, n: usize, m: usize) -> Self {
        LeadResidual {
            f,
            n,
            m,
            lead: Vec::with_capacity(1 + 2 * n),
            ja: vec![0.0; 2 * n * n],
        }
    }

    fn fill(&mut self, t: f64, y: &[f64], yp: &[f64]) {
        self.lead.clear();
        self.lead.push(t);
        self.lead.extend_from_slice(y);
        self.lead.extend_from_slice(yp);
    }
}

/// Splits the rows of `∂F/∂[y, y']` (`n × 2n`) into `∂F/∂y` and `∂F/∂y'`.
fn split_jac(ja: &[f64], n: usize, jy: &mut [f64], jyp: &mut [f64]) {
    for i in 0..n {
        jy[i * n..(i + 1) * n].copy_from_slice(&ja[i * 2 * n..i * 2 * n + n]);
        jyp[i * n..(i + 1) * n].copy_from_slice(&ja[i * 2 * n + n..(i + 1) * 2 * n]);
    }
}

impl<F: LeadFn> DaeResidual for LeadResidual<F> {
    fn n_states(&self) -> usize {
        self.n
    }
    fn n_params(&self) -> usize {
        self.m
    }
    fn eval(&mut self, t: f64, y: &[f64], yp: &[f64], res: &mut [f64]) -> Result<(), String> {
        self.fill(t, y, yp);
        self.f.eval(&self.lead, res, None)
    }
    fn eval_jac(
        &mut self,
        t: f64,
        y: &[f64],
        yp: &[f64],
        res: &mut [f64],
        jy: &mut [f64],
        jyp: &mut [f64],
        jp: &mut [f64],
    ) -> Result<(), String> {
        self.fill(t, y, yp);
        self.f.eval(&self.lead, res, Some((&mut self.ja, jp)))?;
        split_jac(&self.ja, self.n, jy, jyp);
        Ok(())
    }
}

/// Forward rule: the states into `out` (time-major), the sensitivities into `scratch`.
pub fn forward(
    spec: &DaeSpec,
    yy0: &[f64],
    yp0: &[f64],
    theta: &[f64],
    out: &mut [f64],
    scratch: &mut [f64],
) -> Result<(), EvalError> {
    let (n, m) = (spec.n, spec.m);
    if let Some(i) = theta.iter().position(|v| !v.is_finite()) {
        return Err(EvalError::domain(format!(
            "{}: DAE parameters and data[{}] is {}, but must be finite!",
            spec.name,
            i + 1,
            theta[i]
        )));
    }
    // The residual `f` solved with the spec's times and tolerances.
    let solve = |f: &mut dyn LeadFn| {
        solve_dae(
            &mut LeadResidual::new(f, n, m),
            yy0,
            yp0,
            spec.y0_var,
            spec.t0,
            &spec.ts,
            &spec.tol,
        )
    };
    let sol = match &spec.f {
        ResidualSource::Static(g) => solve(&mut Replay::new(g, theta)),
        ResidualSource::PerCall(pc) => {
            let mut f = TracedFn::new(
                &pc.prog,
                pc.function,
                pc.span,
                "the DAE residual",
                residual_lead(n),
                Shape::Vector(n),
                &pc.args,
                theta.to_vec(),
            );
            f.set_guarded();
            solve(&mut f)
        }
    }
    .map_err(|e| EvalError::domain(format!("{}: {e}", spec.name)))?;
    out.copy_from_slice(&sol.values);
    scratch[..sol.sens.len()].copy_from_slice(&sol.sens);
    Ok(())
}

/// Backward rule: `v̄ += Σⱼ S_jᵀ ȳ_j` for the initial state (when it varies) and `θ`, added
/// into `adj` (the adjoints below the op's output) at `yy0`'s and `theta`'s slots.
pub fn backward(
    spec: &DaeSpec,
    out_adj: &[f64],
    adj: &mut [f64],
    yy0: crate::tape::Arg,
    theta: crate::tape::Arg,
    scratch: &[f64],
) {
    let n = spec.n;
    let ns = spec.n_sens();
    let n_y0 = if spec.y0_var { n } else { 0 };
    for j in 0..spec.ts.len() {
        let g = &out_adj[j * n..(j + 1) * n];
        for k in 0..ns {
            let target = if k < n_y0 {
                if !yy0.is_var() {
                    continue;
                }
                yy0.off as usize + k
            } else {
                if !theta.is_var() {
                    continue;
                }
                theta.off as usize + (k - n_y0)
            };
            let col = &scratch[(j * ns + k) * n..(j * ns + k + 1) * n];
            adj[target] += g.iter().zip(col).map(|(a, b)| a * b).sum::<f64>();
        }
    }
}
