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
//! arguments makes the model dynamic (re-traced at every evaluation) and lowers to the
//! first-order expansion `Q + g·(v − v_now)` at the current point, exactly as the ODE solvers
//! do (see `lower/ode.rs`).

use super::fn_graph::{split_params, LeadArg, Shape, TracedFn};
use super::trace::{cerr, eerr, TraceErr, Tracer, R};
use super::value::{Elems, Sc, Val};
use crate::kernels::BinaryFn;
use hazel_math::quadrature::{integrate, work_len, Rule};
use hazel_syntax::ast::Expr;
use hazel_syntax::Span;

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
        if !var_scalars.is_empty() && !self.dynamic {
            // The integral is recomputed at every evaluation.
            return Err(TraceErr::Dynamic(span));
        }
        let a_val = self.value_of(a, span)?;
        let b_val = self.value_of(b, span)?;
        let p_vals = p_scalars
            .iter()
            .map(|s| self.value_of(*s, span))
            .collect::<R<Vec<_>>>()?;
        let n_p = p_vals.len();
        let lead = vec![
            LeadArg {
                shape: Shape::Real,
                active: false,
            },
            LeadArg {
                shape: Shape::Real,
                active: false,
            },
        ];
        let mut f = TracedFn::new(
            self.prog,
            function,
            span,
            "the integrand",
            lead,
            Shape::Real,
            extra,
            p_vals.clone(),
        );
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
