//! Stan's variadic ODE solvers (`ode_rk45`, `ode_ckrk`, `ode_adams`, `ode_bdf`, their `_tol`
//! forms and `ode_adjoint_tol_ctl`) and the deprecated (not
//! removed) array interface `integrate_ode_rk45/_bdf/_adams(f, y0, t0, ts, theta, x_r, x_i
//! [, rtol, atol, max_num_steps])`, whose right-hand side `array[] real f(real t, array[] real
//! y, array[] real theta, data array[] real x_r, data array[] int x_i)` takes and returns
//! arrays and whose result is `array[T, N] real`. Each old name runs exactly what its new name
//! runs (`integrate_ode_bdf(f, ...)` is `ode_bdf` with `theta, x_r, x_i` as the variadic
//! arguments); only the packing of states differs.
//!
//! The right-hand side is a user function `f(t, y, ...)`. Each evaluation of it (and of its
//! Jacobians `∂f/∂y`, `∂f/∂p` with respect to the state and the parameter-dependent scalars of
//! the variadic arguments) traces the function body into a small graph whose parameter slot
//! is `[y, p]`, with `t` a constant (so the body may branch on `t` and on `y`), and takes one
//! reverse sweep per state for the Jacobian rows: exact derivatives, no finite differences.
//! `hazel_math::ode` integrates the coupled system of states and forward sensitivities.
//!
//! Data-only calls are solved once at build time and become constants. A call with
//! parameter-dependent arguments makes the model dynamic (re-traced at every evaluation, so
//! the solver runs at the current parameter values) and lowers to the first-order expansion
//! at the current point, `y(t_j) + S_j (p - p_now)`, with `S` the sensitivity matrix as a
//! constant: its value is the solution and its gradient is the sensitivity chain rule.
//!
//! Solvers (`hazel_math::ode`):
//! - `ode_rk45`: Dormand–Prince 5(4) with Boost.Odeint's dense-output step control, Stan's
//!   step sequence;
//! - `ode_ckrk`: Cash–Karp 5(4) under Boost's controlled stepper, Stan's step sequence;
//! - `ode_bdf`: Stan runs CVODES's BDF; hazel runs its own stiff method (an L-stable SDIRK
//!   with Newton iterations on the exact Jacobian, `hazel_math::ode::stiff`) at 1e-2 × the
//!   requested tolerances, to land inside CVODES's error;
//! - `ode_adams`: Stan runs CVODES's Adams–Moulton; hazel stays on the non-stiff path,
//!   Dormand–Prince at 1e-4 × the requested tolerances (`max_num_steps` unchanged). A stiff
//!   problem that CVODES's Adams would get through may hit `max_num_steps` here: use `ode_bdf`.
//! - `ode_adjoint_tol_ctl`: Stan solves forward with CVODES (Adams or BDF, `solver_forward`)
//!   and takes the gradient by an adjoint pass; hazel runs what `ode_adams` / `ode_bdf` run
//!   at the forward tolerances (the smallest of the absolute ones for every state) and takes
//!   the gradient by forward sensitivities. The backward and quadrature tolerances, the
//!   checkpoint spacing and the interpolation polynomial are checked as Stan checks them and
//!   otherwise unused.

use super::fn_graph::{split_params, LeadArg, LeadFn, Shape, TracedFn};
use super::solve::vector_arg;
use super::trace::{cerr, eerr, TraceErr, Tracer, R};
use super::value::{Elems, Sc, Val};
use crate::kernels::BinaryFn;
use crate::ode_op::{OdeSpec, PerCallRhs, RhsSource};
use hazel_math::ode::{solve, OdeMethod, OdeRhs, OdeTolerances};
use hazel_syntax::ast::Expr;
use hazel_syntax::Span;
use std::sync::Arc;

/// Whether `name` is one of Stan's variadic ODE solvers.
pub fn is_ode_solver(name: &str) -> bool {
    matches!(
        name,
        "ode_rk45"
            | "ode_rk45_tol"
            | "ode_bdf"
            | "ode_bdf_tol"
            | "ode_adams"
            | "ode_adams_tol"
            | "ode_ckrk"
            | "ode_ckrk_tol"
            | "ode_adjoint_tol_ctl"
            | "integrate_ode_rk45"
            | "integrate_ode_bdf"
            | "integrate_ode_adams"
    )
}

/// The integrator a solver name runs and the factor its tolerances are multiplied by (see
/// the module docs): Stan's own method at the requested tolerances, or a different method
/// aiming inside them.
fn solver_of(name: &str) -> (OdeMethod, f64) {
    let solver = name.strip_prefix("integrate_").unwrap_or(name);
    if solver.starts_with("ode_rk45") {
        (OdeMethod::Rk45, 1.0)
    } else if solver.starts_with("ode_ckrk") {
        (OdeMethod::CashKarp, 1.0)
    } else if solver.starts_with("ode_bdf") {
        (OdeMethod::Stiff, STIFF_TIGHTEN)
    } else {
        // ode_adams: non-stiff, Dormand–Prince.
        (OdeMethod::Rk45, 1e-4)
    }
}

/// The stiff method's tolerances relative to the requested ones (CVODES's BDF is not what
/// runs, so aim inside its error).
const STIFF_TIGHTEN: f64 = 1e-2;

/// A function of `[t, y]` (`t` passive, `y` active) as an [`OdeRhs`].
pub(crate) struct LeadRhs<F> {
    pub(crate) f: F,
    n: usize,
    m: usize,
    pub(crate) lead: Vec<f64>,
}

impl<F> LeadRhs<F> {
    /// `f` with `n` states and `m` parameters.
    pub(crate) fn new(f: F, n: usize, m: usize) -> Self {
        LeadRhs {
            f,
            n,
            m,
            lead: vec![0.0; 1 + n],
        }
    }

    /// `lead = [t, y]` (`y` has the `n` states).
    pub(crate) fn fill(&mut self, t: f64, y: &[f64]) {
        self.lead[0] = t;
        self.lead[1..].copy_from_slice(y);
    }
}

impl<F: LeadFn> OdeRhs for LeadRhs<F> {
    fn n_states(&self) -> usize {
        self.n
    }
    fn n_params(&self) -> usize {
        self.m
    }
    fn eval(&mut self, t: f64, y: &[f64], dydt: &mut [f64]) -> Result<(), String> {
        self.fill(t, y);
        self.f.eval(&self.lead, dydt, None)
    }
    fn eval_jac(
        &mut self,
        t: f64,
        y: &[f64],
        dydt: &mut [f64],
        jy: &mut [f64],
        jp: &mut [f64],
    ) -> Result<(), String> {
        self.fill(t, y);
        self.f.eval(&self.lead, dydt, Some((jy, jp)))
    }
}

/// The user function `function(t, y, args...)` traced over `[t, y, p]` (for a [`LeadRhs`]),
/// with `n` states (`array[] real` ones when `array_state`); `p`: the current values of
/// `args`'s parameter-dependent scalars.
pub(crate) fn traced_rhs<'a, 'p>(
    prog: &'p hazel_check::CheckedProgram,
    function: usize,
    span: Span,
    n: usize,
    array_state: bool,
    args: &'a [Val],
    p: Vec<f64>,
) -> TracedFn<'a, 'p> {
    let state = if array_state {
        Shape::RealArray(n)
    } else {
        Shape::Vector(n)
    };
    let lead = vec![
        LeadArg {
            shape: Shape::Real,
            active: false,
        },
        LeadArg {
            shape: state,
            active: true,
        },
    ];
    TracedFn::new(
        prog,
        function,
        span,
        "the ODE right-hand side",
        lead,
        state,
        args,
        p,
    )
}

impl<'p> Tracer<'p> {
    /// `ode_*(f, y0, t0, ts, [rtol, atol, max_num_steps,] ...)`: an array of state vectors,
    /// one per requested time.
    pub fn ode_call(&mut self, name: &str, args: &[Expr], span: Span) -> R<Val> {
        if name.starts_with("integrate_ode_") {
            return self.integrate_ode_call(name, args, span);
        }
        let adjoint = name == "ode_adjoint_tol_ctl";
        let with_tol = name.ends_with("_tol");
        let fixed = if adjoint {
            15
        } else if with_tol {
            7
        } else {
            4
        };
        let (function, vals) = self.solver_call_args(name, args, fixed, span)?;
        let y0 = vector_arg(name, &vals[0], "initial state", args[1].span)?;
        let (t0, ts) = self.ode_times(name, &vals[1..3], &args[2..4], span)?;
        let mut tol = OdeTolerances::default();
        let mut method = solver_of(name);
        if adjoint {
            method =
                self.adjoint_controls(name, &vals[3..14], &args[4..15], y0.len(), span, &mut tol)?;
        } else if with_tol {
            self.ode_tolerances(name, &vals[3..6], &args[4..7], span, &mut tol)?;
        }
        let extra = &vals[fixed - 1..];
        let solution =
            self.solve_ode(name, method, function, y0, t0, &ts, tol, extra, false, span)?;
        Ok(Val::array(solution.into_iter().map(Val::Vector).collect()))
    }

    /// `integrate_ode_*(f, y0, t0, ts, theta, x_r, x_i [, rtol, atol, max_num_steps])`, the
    /// deprecated array interface: `array[T, N] real`, one row per requested time.
    fn integrate_ode_call(&mut self, name: &str, args: &[Expr], span: Span) -> R<Val> {
        if args.len() != 7 && args.len() != 10 {
            return cerr(
                format!("{name} expects 7 or 10 arguments, found {}", args.len()),
                span,
            );
        }
        let (function, vals) = self.solver_call_args(name, args, args.len(), span)?;
        let y0 = match &vals[0] {
            Val::Array(xs) if xs.iter().all(|x| matches!(x, Val::Real(_) | Val::Int(_))) => {
                let mut flat = Vec::with_capacity(xs.len());
                vals[0].flatten(&mut flat);
                Elems::from_scalars_or_empty(flat)
            }
            other => {
                return cerr(
                    format!(
                        "{name}: the initial state must be an array of reals, found {}",
                        other.type_name()
                    ),
                    args[1].span,
                )
            }
        };
        let (t0, ts) = self.ode_times(name, &vals[1..3], &args[2..4], span)?;
        // Stan Math's defaults for the old interface when no control arguments are given: for
        // `integrate_ode_rk45` those of `ode_rk45`; for `_bdf`/`_adams` relative and absolute
        // tolerance 1e-10 and 1e8 steps. We run what the new name runs (the step limit is
        // Stan's): `ode_adams` without control arguments integrates at 1e-4 × 1e-6 = 1e-10 (see
        // `solve_ode`), Stan's request; `ode_bdf` at 1e-2 × 1e-6 = 1e-8 with the stiff method
        // (looser than Stan's request: lp and gradient agree with Stan's CVODES at 1e-10 to
        // 7e-9 on the oscillator and 5e-8 on one_comp, `tests/integrate_ode.rs`).
        let mut tol = OdeTolerances::default();
        if name != "integrate_ode_rk45" {
            tol.max_num_steps = 100_000_000;
        }
        if args.len() == 10 {
            self.ode_tolerances(name, &vals[6..9], &args[7..10], span, &mut tol)?;
        }
        let method = solver_of(name);
        let solution = self.solve_ode(
            name,
            method,
            function,
            y0,
            t0,
            &ts,
            tol,
            &vals[3..6],
            true,
            span,
        )?;
        Ok(Val::array(
            solution
                .into_iter()
                .map(|e| Val::array(e.to_scalars().into_iter().map(Val::Real).collect()))
                .collect(),
        ))
    }

    /// The data initial time and output times (`vals`: `[t0, ts]`, `args` their expressions).
    fn ode_times(&self, name: &str, vals: &[Val], args: &[Expr], span: Span) -> R<(f64, Vec<f64>)> {
        if !vals[0].is_const() || !vals[1].is_const() {
            return cerr(
                format!("{name}: parameter-dependent initial or output times are not supported"),
                span,
            );
        }
        let t0 = self.real_value(&vals[0], args[0].span)?;
        let mut ts_sc = Vec::new();
        vals[1].flatten(&mut ts_sc);
        if !matches!(&vals[1], Val::Array(_)) {
            return cerr(
                format!("{name}: the output times must be an array of reals"),
                args[1].span,
            );
        }
        let ts = ts_sc
            .iter()
            .map(|s| match s {
                Sc::C(c) => *c,
                Sc::V(_) => f64::NAN,
            })
            .collect();
        Ok((t0, ts))
    }

    /// The control arguments `[rtol, atol, max_num_steps]` (data) into `tol`.
    fn ode_tolerances(
        &self,
        name: &str,
        vals: &[Val],
        args: &[Expr],
        span: Span,
        tol: &mut OdeTolerances,
    ) -> R<()> {
        for v in vals {
            if !v.is_const() {
                return cerr(format!("{name}: the tolerances must be data"), span);
            }
        }
        tol.rtol = self.real_value(&vals[0], args[0].span)?;
        tol.atol = self.real_value(&vals[1], args[1].span)?;
        let steps = self.as_int(&vals[2], args[2].span)?;
        if steps <= 0 {
            return eerr(
                format!("{name}: max_num_steps is {steps}; it must be positive"),
                span,
            );
        }
        tol.max_num_steps = steps as u64;
        Ok(())
    }

    /// The eleven control arguments of `ode_adjoint_tol_ctl` (`vals`, after `ts`): checked as
    /// Stan checks them; the forward tolerances (the smallest absolute one for all states)
    /// and `max_num_steps` go into `tol`, and `solver_forward` picks the integrator (1: Adams
    /// → the non-stiff method, 2: BDF → the stiff one). The backward and quadrature
    /// tolerances, the checkpoint spacing and the interpolation polynomial only steer
    /// Stan's adjoint pass; hazel computes the gradient by forward sensitivities instead.
    fn adjoint_controls(
        &self,
        name: &str,
        vals: &[Val],
        args: &[Expr],
        n: usize,
        span: Span,
        tol: &mut OdeTolerances,
    ) -> R<(OdeMethod, f64)> {
        for v in vals {
            if !v.is_const() {
                return cerr(format!("{name}: the control arguments must be data"), span);
            }
        }
        let positive = |what: &str, x: f64, at: Span| -> R<f64> {
            if x > 0.0 && x.is_finite() {
                Ok(x)
            } else {
                eerr(
                    format!("{name}: {what} is {x}; it must be positive and finite"),
                    at,
                )
            }
        };
        let vector = |what: &str, v: &Val, at: Span| -> R<f64> {
            let mut flat = Vec::new();
            v.flatten(&mut flat);
            if flat.len() != n {
                return eerr(
                    format!(
                        "{name}: {what} has {} elements; the state has {n}",
                        flat.len()
                    ),
                    at,
                );
            }
            let mut least = f64::INFINITY;
            for s in flat {
                let x = match s {
                    Sc::C(c) => c,
                    Sc::V(_) => f64::NAN,
                };
                least = least.min(positive(what, x, at)?);
            }
            Ok(least)
        };
        tol.rtol = positive(
            "relative_tolerance_forward",
            self.real_value(&vals[0], args[0].span)?,
            args[0].span,
        )?;
        tol.atol = vector("absolute_tolerance_forward", &vals[1], args[1].span)?;
        positive(
            "relative_tolerance_backward",
            self.real_value(&vals[2], args[2].span)?,
            args[2].span,
        )?;
        vector("absolute_tolerance_backward", &vals[3], args[3].span)?;
        positive(
            "relative_tolerance_quadrature",
            self.real_value(&vals[4], args[4].span)?,
            args[4].span,
        )?;
        positive(
            "absolute_tolerance_quadrature",
            self.real_value(&vals[5], args[5].span)?,
            args[5].span,
        )?;
        let mut ints = [0i64; 5];
        for (k, i) in ints.iter_mut().enumerate() {
            *i = self.as_int(&vals[6 + k], args[6 + k].span)?;
        }
        let [steps, checkpoints, interpolation, forward, backward] = ints;
        if steps <= 0 {
            return eerr(
                format!("{name}: max_num_steps is {steps}; it must be positive"),
                args[6].span,
            );
        }
        if checkpoints <= 0 {
            return eerr(
                format!(
                    "{name}: num_steps_between_checkpoints is {checkpoints}; it must be positive"
                ),
                args[7].span,
            );
        }
        if !(1..=2).contains(&interpolation) {
            return eerr(
                format!("{name}: interpolation_polynomial is {interpolation}; it must be 1 (Hermite) or 2 (polynomial)"),
                args[8].span,
            );
        }
        for (what, v, at) in [
            ("solver_forward", forward, args[9].span),
            ("solver_backward", backward, args[10].span),
        ] {
            if !(1..=2).contains(&v) {
                return eerr(
                    format!("{name}: {what} is {v}; it must be 1 (Adams) or 2 (BDF)"),
                    at,
                );
            }
        }
        tol.max_num_steps = steps as u64;
        Ok(if forward == 2 {
            solver_of("ode_bdf")
        } else {
            solver_of("ode_adams")
        })
    }

    /// Solves `y' = f(t, y, extra...)` from `y0` at `t0` and returns the state at each of `ts`,
    /// with the sensitivities to `y0` and `extra` folded into the graph when they depend on
    /// parameters. `array_state`: `f` takes and returns `array[] real` (the old interface).
    #[allow(clippy::too_many_arguments)]
    fn solve_ode(
        &mut self,
        name: &str,
        (method, tighten): (OdeMethod, f64),
        function: usize,
        y0: Elems,
        t0: f64,
        ts: &[f64],
        mut tol: OdeTolerances,
        extra: &[Val],
        array_state: bool,
        span: Span,
    ) -> R<Vec<Elems>> {
        let n = y0.len();
        // Not Stan's integrator: aim inside the requested tolerance (see module docs).
        tol.rtol *= tighten;
        tol.atol *= tighten;

        // The parameter-dependent scalars: y0's first (when any), then the variadic ones.
        let y0_var = !y0.is_const();
        let mut var_scalars: Vec<Sc> = Vec::new();
        if y0_var {
            var_scalars.extend(y0.to_scalars());
        }
        let p_scalars = split_params(extra).scalars;
        var_scalars.extend(p_scalars.iter().copied());
        // Current values (the builder's eager ones for parameter-dependent scalars: on the
        // static path they only seed the right-hand side's trace).
        let now = |s: Sc| match s {
            Sc::C(c) => c,
            Sc::V(o) => self.b.buf.vals[o as usize],
        };
        let y0_vals: Vec<f64> = y0.to_scalars().into_iter().map(now).collect();
        let p_vals: Vec<f64> = p_scalars.iter().map(|s| now(*s)).collect();
        let f = traced_rhs(
            self.prog,
            function,
            span,
            n,
            array_state,
            extra,
            p_vals.clone(),
        );
        let mut rhs = LeadRhs::new(f, n, p_vals.len());
        let n_t = ts.len();
        if !var_scalars.is_empty() {
            // One graph op when the right-hand side traces statically.
            rhs.fill(t0, &y0_vals);
            let source = if let Some(g) = rhs.f.trace_static(&rhs.lead)? {
                Some(RhsSource::Static(g.clone()))
            } else if rhs.f.trace_guarded(&rhs.lead)?.is_some() {
                // Control flow reads `t` only: guarded traces, made inside the op.
                Some(RhsSource::PerCall(Box::new(PerCallRhs {
                    prog: Arc::new(self.prog.clone()),
                    function,
                    span,
                    array_state,
                    args: extra.into(),
                })))
            } else {
                None
            };
            if let Some(source) = source {
                let spec = OdeSpec {
                    name: name.into(),
                    method,
                    tol,
                    rhs: source,
                    n,
                    t0,
                    ts: ts.into(),
                    y0: if y0_var {
                        Box::new([])
                    } else {
                        y0_vals.clone().into()
                    },
                };
                let v_arg = self.elems_arg(&Elems::from_scalars(var_scalars));
                let all = Elems::V(self.b.ode(Arc::new(spec), v_arg));
                return Ok((0..n_t).map(|j| all.slice(j * n, (j + 1) * n)).collect());
            }
            if !self.dynamic {
                // Control flow in the right-hand side reads values: the model re-traces and
                // the solution is recomputed at every evaluation.
                return Err(TraceErr::Dynamic(span));
            }
        }
        let sol = match solve(method, &mut rhs, &y0_vals, y0_var, t0, ts, &tol) {
            Ok(s) => s,
            Err(e) => return eerr(format!("{name}: {e}"), span),
        };
        Ok(if var_scalars.is_empty() {
            (0..n_t)
                .map(|j| Elems::C(Arc::new(sol.values[j * n..(j + 1) * n].to_vec())))
                .collect()
        } else {
            // out = S v + (y - S v_now), S column-major (n_t·n) × n_var.
            let rows = n_t * n;
            let n_var = var_scalars.len();
            let mut v_now = Vec::with_capacity(n_var);
            if y0_var {
                v_now.extend_from_slice(&y0_vals);
            }
            v_now.extend_from_slice(&p_vals);
            let mut s_mat = vec![0.0; rows * n_var];
            for j in 0..n_t {
                for k in 0..n_var {
                    for i in 0..n {
                        s_mat[(j * n + i) + k * rows] = sol.sens[(j * n_var + k) * n + i];
                    }
                }
            }
            let mut offset = sol.values.clone();
            for (r, o) in offset.iter_mut().enumerate() {
                let mut acc = 0.0;
                for k in 0..n_var {
                    acc += s_mat[r + k * rows] * v_now[k];
                }
                *o -= acc;
            }
            let v_arg = self.elems_arg(&Elems::from_scalars(var_scalars));
            let m_arg = self.b.konst(&s_mat);
            let lin = self.b.matvec(m_arg, v_arg, rows, n_var);
            let off_arg = self.b.konst(&offset);
            let out = self.b.binary(BinaryFn::Add, lin, off_arg);
            let all = Elems::V(out);
            (0..n_t).map(|j| all.slice(j * n, (j + 1) * n)).collect()
        })
    }
}
