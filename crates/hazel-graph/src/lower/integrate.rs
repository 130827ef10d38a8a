//! `integrate_1d(f, a, b, theta, x_r, x_i [, rel_tol])`,
//! `integrate_1d_double_exponential_tol(f, a, b, rel_tol, abs_tol, max_refinements, ...)` and
//! `integrate_1d_gauss_kronrod_tol(f, a, b, rel_tol, abs_tol, max_depth, ...)`.
//!
//! The integrand `f(x, xc, ...)` is a [`TracedFn`] over `[x, xc, p]` (`p`: the
//! parameter-dependent scalars of its other arguments), evaluated with `∂f/∂p` by reverse
//! sweeps at every quadrature point; `hazel_math::quadrature` integrates the value and those
//! partials on the same points (`∂/∂p ∫ f = ∫ ∂f/∂p`, as Stan does). `integrate_1d` and the
//! `_double_exponential_tol` form run tanh-sinh / exp-sinh / sinh-sinh (Stan's Boost rules,
//! with Stan's split at zero and its `xc`), `_gauss_kronrod_tol` adaptive Gauss–Kronrod 7/15
//! (`xc` = NaN). A parameter limit gets `∂/∂b = f(b)`, `∂/∂a = −f(a)` (with `xc` = 0).
//!
//! Data-only calls are integrated once at build time. A call with parameter-dependent
//! arguments becomes one [`crate::tape::Op::Integrate`] ([`crate::integrate_op`]) when the
//! integrand traces statically or its control flow reads only `x` and `xc` (guarded traces),
//! so the model stays static; when its control flow reads parameter values the model is
//! dynamic (re-traced at every evaluation) and the call lowers to the first-order expansion
//! `Q + g·(v − v_now)` at the current point, as the ODE solvers' fallback does.

use super::fn_graph::{split_params, Shape, TracedFn};
use super::trace::{cerr, eerr, TraceErr, Tracer, R};
use super::value::{Elems, Sc, Val};
use crate::integrate_op::{integrand_lead, IntegrandSource, IntegrateSpec, PerCallIntegrand};
use crate::kernels::BinaryFn;
use hazel_math::quadrature::{integrate, work_len, Rule};
use hazel_syntax::ast::Expr;
use hazel_syntax::Span;
use std::sync::Arc;

/// Whether `name` is lowered here.
pub fn is_integrate_1d(name: &str) -> bool {
    matches!(
        name,
        "integrate_1d" | "integrate_1d_double_exponential_tol" | "integrate_1d_gauss_kronrod_tol"
    )
}

impl<'p> Tracer<'p> {
    pub fn integrate_1d_call(&mut self, name: &str, args: &[Expr], span: Span) -> R<Val> {
        let tol_form = name != "integrate_1d";
        if args.len() < 6 || (!tol_form && args.len() > 7) {
            return cerr(
                format!("{name}: unexpected number of arguments ({})", args.len()),
                span,
            );
        }
        let (function, _) = self.function_argument(name, &args[0])?;
        let vals = args[1..]
            .iter()
            .map(|a| self.expr(a))
            .collect::<R<Vec<_>>>()?;
        let scalar = |v: &Val, i: usize| -> R<Sc> {
            match v {
                Val::Real(s) => Ok(*s),
                Val::Int(k) => Ok(Sc::C(*k as f64)),
                other => cerr(
                    format!("{name}: expected a real, found {}", other.type_name()),
                    args[i].span,
                ),
            }
        };
        let a = scalar(&vals[0], 1)?;
        let b = scalar(&vals[1], 2)?;
        let data_real = |t: &Self, v: &Val, i: usize| -> R<f64> { t.real_value(v, args[i].span) };
        let (rule, rel_tol, abs_tol, extra): (Rule, f64, f64, &[Val]) = if tol_form {
            let rel = data_real(self, &vals[2], 3)?;
            let abs = data_real(self, &vals[3], 4)?;
            let n = self.as_int(&vals[4], args[5].span)?;
            if n < 1 {
                return eerr(
                    format!("{name}: the refinement limit is {n}, but must be positive"),
                    span,
                );
            }
            let n = n.min(30) as usize;
            let rule = if name.ends_with("gauss_kronrod_tol") {
                Rule::GaussKronrod { max_depth: n }
            } else {
                Rule::DoubleExponential { max_levels: n }
            };
            (rule, rel, abs, &vals[5..])
        } else {
            let rel = if vals.len() == 6 {
                data_real(self, &vals[5], 6)?
            } else {
                f64::EPSILON.sqrt()
            };
            (
                Rule::DoubleExponential { max_levels: 15 },
                rel,
                0.0,
                &vals[2..5],
            )
        };
        if rel_tol.is_nan() || rel_tol <= 0.0 || abs_tol.is_nan() || abs_tol < 0.0 {
            return eerr(
                format!("{name}: relative tolerance is {rel_tol} (must be positive), absolute tolerance {abs_tol} (must be non-negative)"),
                span,
            );
        }
        let mut var_scalars = Vec::new();
        for s in [a, b] {
            if let Sc::V(_) = s {
                var_scalars.push(s);
            }
        }
        let p_scalars = split_params(extra).scalars;
        var_scalars.extend(p_scalars.iter().copied());
        // Current values (the builder's eager ones for parameter-dependent scalars: on the
        // static path they only seed the integrand's trace).
        let now = |s: Sc| match s {
            Sc::C(c) => c,
            Sc::V(o) => self.b.buf.vals[o as usize],
        };
        let a_val = now(a);
        let b_val = now(b);
        let p_vals: Vec<f64> = p_scalars.iter().map(|s| now(*s)).collect();
        let n_p = p_vals.len();
        let mut f = TracedFn::new(
            self.prog,
            function,
            span,
            "the integrand",
            integrand_lead(),
            Shape::Real,
            extra,
            p_vals.clone(),
        );
        if !var_scalars.is_empty() {
            // One graph op when the integrand traces statically (or branches on x, xc only).
            let x0 = match (a_val.is_finite(), b_val.is_finite()) {
                (true, true) => 0.5 * (a_val + b_val),
                (true, false) => a_val + 1.0,
                (false, true) => b_val - 1.0,
                (false, false) => 0.0,
            };
            let lead = [x0, b_val - x0];
            let source = if let Some(g) = f.trace_static(&lead)? {
                Some(IntegrandSource::Static(g.clone()))
            } else if f.trace_guarded(&lead)?.is_some() {
                Some(IntegrandSource::PerCall(Box::new(PerCallIntegrand {
                    prog: Arc::new(self.prog.clone()),
                    function,
                    span,
                    args: extra.into(),
                })))
            } else {
                None
            };
            if let Some(integrand) = source {
                let spec = IntegrateSpec {
                    name: name.into(),
                    rule,
                    rel_tol,
                    abs_tol,
                    a: a.is_const().then_some(a_val),
                    b: b.is_const().then_some(b_val),
                    integrand,
                };
                let v_arg = self.elems_arg(&Elems::from_scalars(var_scalars));
                let out = self.b.integrate(Arc::new(spec), v_arg);
                return Ok(Val::Real(Sc::V(out.off)));
            }
            if !self.dynamic {
                // Control flow in the integrand reads parameter values: the model re-traces
                // and the integral is recomputed at every evaluation.
                return Err(TraceErr::Dynamic(span));
            }
        }
        let dim = 1 + n_p;
        let mut integrand = |x: f64, xc: f64, o: &mut [f64]| -> Result<(), String> {
            let (v, g) = o.split_at_mut(1);
            let jac = if n_p > 0 {
                Some((&mut [][..], &mut g[..n_p]))
            } else {
                None
            };
            f.eval(&[x, xc], v, jac)
        };
        let mut out = vec![0.0; dim];
        let mut work = vec![0.0; work_len(dim)];
        if let Err(e) = integrate(
            name,
            &mut integrand,
            a_val,
            b_val,
            rule,
            rel_tol,
            abs_tol,
            dim,
            &mut out,
            &mut work,
        ) {
            return eerr(e.message, span);
        }
        if var_scalars.is_empty() {
            return Ok(Val::real(out[0]));
        }
        // Gradient: the limits first (in `var_scalars` order), then the parameters.
        let mut grad = Vec::with_capacity(var_scalars.len());
        let mut v_now = Vec::with_capacity(var_scalars.len());
        for (s, x, sign) in [(a, a_val, -1.0), (b, b_val, 1.0)] {
            if let Sc::V(_) = s {
                let mut fx = [0.0];
                if x.is_finite() {
                    f.eval(&[x, 0.0], &mut fx, None)
                        .or_else(|e| eerr(format!("{name}: {e}"), span))?;
                }
                grad.push(sign * fx[0]);
                v_now.push(x);
            }
        }
        grad.extend_from_slice(&out[1..]);
        v_now.extend_from_slice(&p_vals);
        let offset = out[0] - grad.iter().zip(&v_now).map(|(g, v)| g * v).sum::<f64>();
        let v_arg = self.elems_arg(&Elems::from_scalars(var_scalars));
        let g_arg = self.b.konst(&grad);
        let lin = self.b.dot(g_arg, v_arg);
        let off = self.b.scalar_const(offset);
        let r = self.b.binary(BinaryFn::Add, lin, off);
        Ok(Val::Real(Sc::V(r.off)))
    }
}
