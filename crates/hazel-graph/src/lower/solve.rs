//! Stan's algebraic solvers: `solve_newton(f, x_guess, ...)`, `solve_powell(f, x_guess, ...)`,
//! their `_tol` forms `(f, x_guess, tol, function_tolerance, max_num_steps, ...)` (for Newton
//! the first control argument is `scaling_step`, for Powell `rel_tol`), and the deprecated
//! (not removed) data-array interface `algebra_solver(f, y_guess, theta, x_r, x_i [, rel_tol,
//! function_tol, max_steps])` / `algebra_solver_newton(f, y_guess, theta, x_r, x_i [,
//! scaling_step, function_tol, max_steps])`, whose system is `vector f(vector y, vector theta,
//! data array[] real x_r, array[] int x_i)`. The old names run what the new ones run, with
//! `theta, x_r, x_i` as the variadic arguments; only `algebra_solver`'s default step limit
//! differs (1000 function evaluations, as in Stan Math).
//!
//! The system is a user function traced by [`TracedFn`] over `[x, θ]` (`θ`: the
//! parameter-dependent scalars of the variadic arguments); `hazel_math::algebra` solves it.
//!
//! - Data-only calls (constant guess and arguments) are solved while tracing and become
//!   constants.
//! - Otherwise, when the system's control flow does not read `x` or `θ`, the call is one
//!   [`crate::tape::Op::Solve`] holding the traced system: it solves at every evaluation and
//!   its gradient is the implicit-function rule `∂x/∂θ = −[∂f/∂x]⁻¹ ∂f/∂θ`, so the model
//!   stays static. A parameter-dependent guess only changes where the solver starts (no
//!   gradient, as in Stan).
//! - A system that branches on `x` or `θ` makes the model dynamic (re-traced every
//!   evaluation), and the call lowers to the first-order expansion `x* + S (θ − θ_now)` with
//!   `S = ∂x/∂θ` as a constant.

use super::fn_graph::{split_params, LeadArg, Shape, TracedFn};
use super::trace::{cerr, eerr, TraceErr, Tracer, R};
use super::value::{Elems, Sc, Val};
use crate::kernels::BinaryFn;
use crate::solve_op::{SolveMethod, SolveSpec};
use crate::tape::Arg;
use hazel_math::algebra::{implicit_sensitivities, AlgebraSystem, NewtonOptions, PowellOptions};
use hazel_syntax::ast::Expr;
use hazel_syntax::Span;
use std::sync::Arc;

/// Whether `name` is one of Stan's algebraic solvers.
pub fn is_algebra_solver(name: &str) -> bool {
    matches!(
        name,
        "solve_newton"
            | "solve_newton_tol"
            | "solve_powell"
            | "solve_powell_tol"
            | "algebra_solver"
            | "algebra_solver_newton"
    )
}

/// A [`TracedFn`] with one active leading vector as an [`AlgebraSystem`].
struct System<'f, 'a, 'p> {
    f: &'f mut TracedFn<'a, 'p>,
    n: usize,
    jp: Vec<f64>,
}

impl AlgebraSystem for System<'_, '_, '_> {
    fn n(&self) -> usize {
        self.n
    }
    fn eval(&mut self, x: &[f64], fx: &mut [f64]) -> Result<(), String> {
        self.f.eval(x, fx, None)
    }
    fn eval_jac(&mut self, x: &[f64], fx: &mut [f64], jx: &mut [f64]) -> Result<(), String> {
        self.f.eval(x, fx, Some((jx, &mut self.jp)))
    }
}

impl<'p> Tracer<'p> {
    /// One of [`is_algebra_solver`]'s functions: the root, a vector.
    pub fn solve_call(&mut self, name: &str, args: &[Expr], span: Span) -> R<Val> {
        let old = name.starts_with("algebra_solver");
        let newton = name.contains("newton");
        // Arguments before the variadic ones (function included), and where the control
        // arguments start.
        let (fixed, control) = if old {
            if args.len() != 5 && args.len() != 8 {
                return cerr(
                    format!("{name} expects 5 or 8 arguments, found {}", args.len()),
                    span,
                );
            }
            (5, (args.len() == 8).then_some(5))
        } else if name.ends_with("_tol") {
            (5, Some(2))
        } else {
            (2, None)
        };
        let (function, vals) = self.solver_call_args(name, args, fixed, span)?;
        let guess = vector_arg(name, &vals[0], "initial guess", args[1].span)?;
        // The control arguments (data).
        let mut ctl = [f64::NAN; 3];
        if let Some(at) = control {
            for (k, c) in ctl.iter_mut().enumerate() {
                let v = &vals[at - 1 + k];
                let e = &args[at + k];
                if !v.is_const() {
                    return cerr(
                        format!("{name}: the control arguments must be data"),
                        e.span,
                    );
                }
                *c = self.real_value(v, e.span)?;
            }
        }
        let steps = |s: f64| -> i64 {
            if s.is_nan() {
                0
            } else {
                s as i64
            }
        };
        let method = match (newton, control.is_some()) {
            (true, false) => SolveMethod::Newton(NewtonOptions::default()),
            (true, true) => SolveMethod::Newton(NewtonOptions {
                scaling_step_size: ctl[0],
                function_tolerance: ctl[1],
                max_num_steps: steps(ctl[2]),
            }),
            (false, false) => SolveMethod::Powell(PowellOptions {
                // Stan Math's default for the old interface.
                max_num_steps: if old { 1000 } else { 200 },
                ..PowellOptions::default()
            }),
            (false, true) => SolveMethod::Powell(PowellOptions {
                relative_tolerance: ctl[0],
                function_tolerance: ctl[1],
                max_num_steps: steps(ctl[2]),
            }),
        };
        let extra: &[Val] = if old { &vals[1..4] } else { &vals[fixed - 1..] };
        let x = self.solve_system(name, function, guess, method, extra, span)?;
        Ok(Val::Vector(x))
    }

    /// The eager value of a scalar (the builder evaluates every op as it is pushed, also on
    /// the static path; used only to start traces and solves).
    pub(super) fn eager_value(&self, s: Sc) -> f64 {
        match s {
            Sc::C(c) => c,
            Sc::V(o) => self.b.buf.vals[o as usize],
        }
    }

    /// Solves `f(x, extra...) = 0` from `guess`.
    fn solve_system(
        &mut self,
        name: &str,
        function: usize,
        guess: Elems,
        method: SolveMethod,
        extra: &[Val],
        span: Span,
    ) -> R<Elems> {
        let n = guess.len();
        let theta = split_params(extra).scalars;
        let theta_vals: Vec<f64> = theta.iter().map(|s| self.eager_value(*s)).collect();
        let guess_sc = guess.to_scalars();
        let guess_vals: Vec<f64> = guess_sc.iter().map(|s| self.eager_value(*s)).collect();
        let lead = vec![LeadArg {
            shape: Shape::Vector(n),
            active: true,
        }];
        let mut f = TracedFn::new(
            self.prog,
            function,
            span,
            "the algebraic system",
            lead,
            Shape::Vector(n),
            extra,
            theta_vals.clone(),
        );
        let m = theta.len();
        let fail = |e: String| eerr(format!("{name}: {e}"), span);
        if guess.is_const() && theta.is_empty() {
            // Data only: solved once, here.
            let mut sys = System {
                f: &mut f,
                n,
                jp: Vec::new(),
            };
            return match method.solve(&mut sys, &guess_vals) {
                Ok(x) => Ok(Elems::C(Arc::new(x))),
                Err(e) => fail(e.to_string()),
            };
        }
        if n == 0 {
            return fail("initial guess has size 0, but must have a non-zero size".into());
        }
        let traced = f.trace_static(&guess_vals).map_err(|e| match e {
            TraceErr::Eval(mut e, s) => {
                e.message = format!("{name}: {}", e.message);
                TraceErr::Eval(e, s)
            }
            e => e,
        })?;
        if let Some(g) = traced {
            let spec = SolveSpec {
                name: name.into(),
                method,
                f: g.clone(),
                n,
                m,
            };
            let guess_arg = self.elems_arg(&guess);
            let theta_arg = if theta.is_empty() {
                self.b.konst(&[])
            } else {
                self.elems_arg(&Elems::from_scalars(theta))
            };
            let out = self.b.solve(spec, guess_arg, theta_arg);
            return Ok(Elems::V(out));
        }
        // The system branches on its unknowns or parameters: re-trace every evaluation and
        // use the first-order expansion at the current point.
        if !self.dynamic {
            return Err(TraceErr::Dynamic(span));
        }
        let mut sys = System {
            f: &mut f,
            n,
            jp: vec![0.0; n * m],
        };
        let x = match method.solve(&mut sys, &guess_vals) {
            Ok(x) => x,
            Err(e) => return fail(e.to_string()),
        };
        if m == 0 {
            return Ok(Elems::C(Arc::new(x)));
        }
        let mut fx = vec![0.0; n];
        let mut jx = vec![0.0; n * n];
        if let Err(e) = sys.eval_jac(&x, &mut fx, &mut jx) {
            return fail(e);
        }
        let s = match implicit_sensitivities(&jx, &sys.jp, n, m) {
            Ok(s) => s,
            Err(e) => return fail(e.to_string()),
        };
        let mut s_col = vec![0.0; n * m];
        for i in 0..n {
            for k in 0..m {
                s_col[i + k * n] = s[i * m + k];
            }
        }
        Ok(self.linearised(&x, &s_col, theta, &theta_vals))
    }

    /// The first-order expansion `values + S (v − v_now)` of a solver's output in the
    /// parameter-dependent scalars `v` (`s_col`: `∂out/∂v`, column-major `values.len() ×
    /// v.len()`), emitted as `S v + (values − S v_now)`. Valid only on the dynamic path, where
    /// the model is re-traced (and the solver re-run) at every evaluation.
    pub(super) fn linearised(
        &mut self,
        values: &[f64],
        s_col: &[f64],
        v: Vec<Sc>,
        v_now: &[f64],
    ) -> Elems {
        let rows = values.len();
        let cols = v.len();
        let mut offset = values.to_vec();
        for (r, o) in offset.iter_mut().enumerate() {
            *o -= (0..cols)
                .map(|k| s_col[r + k * rows] * v_now[k])
                .sum::<f64>();
        }
        let v_arg: Arg = self.elems_arg(&Elems::from_scalars(v));
        let m_arg = self.b.konst(s_col);
        let lin = self.b.matvec(m_arg, v_arg, rows, cols);
        let off_arg = self.b.konst(&offset);
        Elems::V(self.b.binary(BinaryFn::Add, lin, off_arg))
    }

    /// What every solver call (`ode_*`, `integrate_ode_*`, `solve_*`, `algebra_solver*`,
    /// `dae*`) starts with: at least `fixed` arguments, the user function the first one
    /// resolved to (an index into the checked program's functions), and the others evaluated.
    pub(super) fn solver_call_args(
        &mut self,
        name: &str,
        args: &[Expr],
        fixed: usize,
        span: Span,
    ) -> R<(usize, Vec<Val>)> {
        if args.len() < fixed {
            return cerr(
                format!(
                    "{name} expects at least {fixed} arguments, found {}",
                    args.len()
                ),
                span,
            );
        }
        let function = match self.prog.call_target(args[0].id) {
            Some(hazel_check::CallTarget::User { function }) => *function,
            _ => {
                return cerr(
                    format!("the first argument of {name} must name a user-defined function"),
                    args[0].span,
                )
            }
        };
        let vals = args[1..]
            .iter()
            .map(|a| self.expr(a))
            .collect::<R<Vec<_>>>()?;
        Ok((function, vals))
    }
}

/// A solver's vector argument (`what`: "initial state", …), or Stan's message naming it.
pub(super) fn vector_arg(name: &str, v: &Val, what: &str, at: Span) -> R<Elems> {
    match v {
        Val::Vector(e) => Ok(e.clone()),
        other => cerr(
            format!(
                "{name}: the {what} must be a vector, found {}",
                other.type_name()
            ),
            at,
        ),
    }
}
