//! Stan's DAE solvers: `dae(F, yy0, yp0, t0, ts, ...)` and `dae_tol(F, yy0, yp0, t0, ts, rtol,
//! atol, max_num_steps, ...)` (Stan 2.37), returning `array[] vector`, the state at each of
//! `ts`. The residual is `vector F(real t, vector y, vector yp, ...)`, traced by [`TracedFn`]
//! over `[t, y, y', θ]`; `hazel_math::dae` integrates it (BDF, forward sensitivities).
//!
//! - Data-only calls are solved while tracing and become constants.
//! - Otherwise, when the residual's control flow does not read `t`, `y`, `y'` or `θ`, the call
//!   is one [`crate::tape::Op::Dae`] holding the traced residual, solved at every evaluation
//!   with the sensitivities kept for the backward rule: the model stays static.
//! - A residual whose control flow reads only `t` is still one op, with guarded traces made
//!   inside it (as the ODE op does).
//! - A residual that branches on `y`, `y'` or `θ` makes the model dynamic, and the call lowers
//!   to the first-order expansion `y(t_j) + S_j (v − v_now)` (`v`: the varying initial state and
//!   `θ`), as the ODE solvers do.
//!
//! `t0` and `ts` must be data (parameter-dependent times are refused, as for the ODE solvers).
//! `yp0` only starts the integration (the solution does not depend on it), so it gets no
//! gradient.

use super::fn_graph::{split_params, Shape, TracedFn};
use super::solve::vector_arg;
use super::trace::{cerr, eerr, TraceErr, Tracer, R};
use super::value::{Elems, Sc, Val};
use crate::dae_op::{residual_lead, DaeSpec, LeadResidual, PerCallResidual, ResidualSource};
use hazel_math::dae::{solve_dae, DaeTolerances};
use hazel_syntax::ast::Expr;
use hazel_syntax::Span;
use std::sync::Arc;

/// Whether `name` is one of Stan's DAE solvers.
pub fn is_dae_solver(name: &str) -> bool {
    matches!(name, "dae" | "dae_tol")
}

impl<'p> Tracer<'p> {
    /// `dae` / `dae_tol`: an array of state vectors, one per requested time.
    pub fn dae_call(&mut self, name: &str, args: &[Expr], span: Span) -> R<Val> {
        let with_tol = name == "dae_tol";
        let fixed = if with_tol { 8 } else { 5 };
        let (function, vals) = self.solver_call_args(name, args, fixed, span)?;
        let yy0 = vector_arg(name, &vals[0], "initial state", args[1].span)?;
        let yp0 = vector_arg(name, &vals[1], "initial state derivative", args[2].span)?;
        if !vals[2].is_const() || !vals[3].is_const() {
            return cerr(
                format!("{name}: parameter-dependent initial or output times are not supported"),
                span,
            );
        }
        let t0 = self.real_value(&vals[2], args[3].span)?;
        let mut ts_sc = Vec::new();
        vals[3].flatten(&mut ts_sc);
        let ts: Vec<f64> = ts_sc
            .iter()
            .map(|s| match s {
                Sc::C(c) => *c,
                Sc::V(_) => f64::NAN,
            })
            .collect();
        let mut tol = DaeTolerances::default();
        if with_tol {
            for (k, v) in vals[4..7].iter().enumerate() {
                if !v.is_const() {
                    return cerr(
                        format!("{name}: the tolerances must be data"),
                        args[5 + k].span,
                    );
                }
            }
            tol.rtol = self.real_value(&vals[4], args[5].span)?;
            tol.atol = self.real_value(&vals[5], args[6].span)?;
            tol.max_num_steps = self.as_int(&vals[6], args[7].span)?;
        }
        let extra = &vals[fixed - 1..];
        let n = yy0.len();
        if yp0.len() != n {
            return eerr(
                format!(
                    "{name}: initial state has {n} elements, initial state derivative {}",
                    yp0.len()
                ),
                span,
            );
        }
        let sol = self.solve_dae_call(name, function, yy0, yp0, t0, &ts, tol, extra, span)?;
        let n_t = ts.len();
        Ok(Val::array(
            (0..n_t)
                .map(|j| Val::Vector(sol.slice(j * n, (j + 1) * n)))
                .collect(),
        ))
    }

    /// The states at every time of `ts`, time-major.
    #[allow(clippy::too_many_arguments)]
    fn solve_dae_call(
        &mut self,
        name: &str,
        function: usize,
        yy0: Elems,
        yp0: Elems,
        t0: f64,
        ts: &[f64],
        tol: DaeTolerances,
        extra: &[Val],
        span: Span,
    ) -> R<Elems> {
        let n = yy0.len();
        let split = split_params(extra);
        // Stan checks every variadic argument (parameters at each evaluation, in the op).
        if let Some(c) = split
            .consts
            .iter()
            .zip(&split.param_of)
            .find_map(|(c, p)| (p.is_none() && !c.is_finite()).then_some(*c))
        {
            return eerr(
                format!("{name}: DAE parameters and data is {c}, but must be finite!"),
                span,
            );
        }
        let theta = split.scalars;
        let m = theta.len();
        let theta_vals: Vec<f64> = theta.iter().map(|s| self.eager_value(*s)).collect();
        let y0_vals: Vec<f64> = yy0
            .to_scalars()
            .iter()
            .map(|s| self.eager_value(*s))
            .collect();
        let yp0_vals: Vec<f64> = yp0
            .to_scalars()
            .iter()
            .map(|s| self.eager_value(*s))
            .collect();
        let y0_var = !yy0.is_const();
        let lead = residual_lead(n);
        let mut f = TracedFn::new(
            self.prog,
            function,
            span,
            "the DAE residual",
            lead,
            Shape::Vector(n),
            extra,
            theta_vals.clone(),
        );
        let fail = |e: String| eerr(format!("{name}: {e}"), span);
        let varying = y0_var || m > 0 || !yp0.is_const();
        if varying {
            let mut start = vec![t0];
            start.extend_from_slice(&y0_vals);
            start.extend_from_slice(&yp0_vals);
            let prefix = |e: TraceErr| match e {
                TraceErr::Eval(mut e, s) => {
                    e.message = format!("{name}: {}", e.message);
                    TraceErr::Eval(e, s)
                }
                e => e,
            };
            let traced = f.trace_static(&start).map_err(prefix)?.cloned();
            let source = match traced {
                Some(g) => Some(ResidualSource::Static(g)),
                // Control flow reads `t` only: guarded traces, made inside the op.
                None if f.trace_guarded(&start).map_err(prefix)?.is_some() => {
                    Some(ResidualSource::PerCall(Box::new(PerCallResidual {
                        prog: Arc::new(self.prog.clone()),
                        function,
                        span,
                        args: extra.into(),
                    })))
                }
                None => None,
            };
            if let Some(source) = source {
                let spec = DaeSpec {
                    name: name.into(),
                    tol,
                    f: source,
                    n,
                    m,
                    y0_var,
                    t0,
                    ts: ts.into(),
                };
                let y0_arg = self.elems_arg(&yy0);
                let yp0_arg = self.elems_arg(&yp0);
                let theta_arg = if theta.is_empty() {
                    self.b.konst(&[])
                } else {
                    self.elems_arg(&Elems::from_scalars(theta))
                };
                return Ok(Elems::V(self.b.dae(spec, y0_arg, yp0_arg, theta_arg)));
            }
            if !self.dynamic {
                return Err(TraceErr::Dynamic(span));
            }
        }
        // Data only, or a residual that branches (dynamic model): solve here.
        let mut res = LeadResidual::new(&mut f, n, m);
        let sol = match solve_dae(&mut res, &y0_vals, &yp0_vals, y0_var, t0, ts, &tol) {
            Ok(s) => s,
            Err(e) => return fail(e.to_string()),
        };
        let ns = sol.n_sens;
        if ns == 0 {
            return Ok(Elems::C(Arc::new(sol.values)));
        }
        // S column-major (n_t·n) × ns.
        let rows = ts.len() * n;
        let mut v_now = Vec::with_capacity(ns);
        let mut v_sc = Vec::with_capacity(ns);
        if y0_var {
            v_now.extend_from_slice(&y0_vals);
            v_sc.extend(yy0.to_scalars());
        }
        v_now.extend_from_slice(&theta_vals);
        v_sc.extend(theta.iter().copied());
        let mut s_mat = vec![0.0; rows * ns];
        for j in 0..ts.len() {
            for k in 0..ns {
                for i in 0..n {
                    s_mat[(j * n + i) + k * rows] = sol.sens[(j * ns + k) * n + i];
                }
            }
        }
        Ok(self.linearised(&sol.values, &s_mat, v_sc, &v_now))
    }
}
