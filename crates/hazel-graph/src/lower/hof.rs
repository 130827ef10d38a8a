//! Higher-order built-ins whose user function is traced inline, and the hidden Markov model
//! functions.
//!
//! - `reduce_sum(f, x, grainsize, ...)` / `reduce_sum_static`: the sum of
//!   `f(x[s:e], s, e, ...)` over hazel's own fixed slices of `x` ([`REDUCE_SUM_SLICE`]
//!   elements each, whatever `grainsize` says), added in slice order. Each call is traced into
//!   the model's graph like any user call, so the model stays static when `f`'s control flow
//!   reads only data, and within-chain threads split the traced ops as everywhere else: the
//!   result is bit-identical for every grainsize and thread count. `f` may be a partial-sum
//!   density: passed as `f_lpdf`/`f_lpmf` it keeps its constants, as `f_lupdf`/`f_lupmf` it
//!   drops them where the caller does — exactly as a direct call of `f`.
//! - `map_rect(f, phi, thetas, x_rs, x_is)`: the concatenation of `f(phi, thetas[j], x_rs[j],
//!   x_is[j])` over the jobs, each traced in job order.
//! - `integrate_1d` and its `_tol` forms: `lower/integrate`.
//! - `hmm_marginal(log_omega, Gamma, rho)`: one [`crate::tape::Op::MvDist`] whose value and
//!   gradient rules are `hazel_math::linalg::hmm::hmm_marginal` (the scaled forward algorithm
//!   and its backward pass); data arguments fold to a constant. `hmm_hidden_state_prob` and
//!   `hmm_latent_rng` (generated quantities) run on known values.

use super::trace::{cerr, TraceErr, Tracer, R};
use super::value::{Elems, Sc, Val};
use crate::kernels::BinaryFn;
use crate::mvdist::{MvFamily, MvSpec};
use hazel_math::linalg::hmm;
use hazel_syntax::ast::{Expr, ExprKind};
use hazel_syntax::Span;
use std::sync::Arc;

/// `reduce_sum` calls its partial-sum function on slices of this many elements (the last one
/// shorter), independently of `grainsize` and of the thread count. Large on purpose: hazel
/// parallelises inside ops (those of at least `par::PAR_MIN` elements, split into the fixed
/// chunks of every reduction), so one long slice gives long vectorised ops that the chain's
/// threads share, where many short slices would give many short serial ones.
pub const REDUCE_SUM_SLICE: usize = 32 * crate::kernels::CHUNK;

/// Whether `name` is a higher-order built-in lowered here (its first argument names a user
/// function).
pub fn is_higher_order(name: &str) -> bool {
    matches!(name, "reduce_sum" | "reduce_sum_static" | "map_rect")
        || super::integrate::is_integrate_1d(name)
}

fn domain(span: Span) -> impl Fn(hazel_math::dist::MathError) -> TraceErr {
    move |e| TraceErr::Eval(hazel_density::EvalError::domain(e.message), span)
}

impl<'p> Tracer<'p> {
    /// The user function a higher-order built-in's first argument names, and the name as
    /// written (`f_lpdf` or `f_lupdf`).
    pub(crate) fn function_argument(&self, name: &str, arg: &Expr) -> R<(usize, String)> {
        let written = match &arg.kind {
            ExprKind::Var(id) => id.name.to_string(),
            _ => String::new(),
        };
        match self.prog.call_target(arg.id) {
            Some(hazel_check::CallTarget::User { function }) => Ok((*function, written)),
            _ => cerr(
                format!("the first argument of {name} must name a user-defined function"),
                arg.span,
            ),
        }
    }

    /// `reduce_sum`, `reduce_sum_static` and `map_rect` (see the module documentation).
    pub fn higher_order_call(&mut self, name: &str, args: &[Expr], span: Span) -> R<Val> {
        match name {
            "reduce_sum" | "reduce_sum_static" => self.reduce_sum(name, args, span),
            "map_rect" => self.map_rect(args, span),
            _ => self.integrate_1d_call(name, args, span),
        }
    }

    fn reduce_sum(&mut self, name: &str, args: &[Expr], span: Span) -> R<Val> {
        if args.len() < 3 {
            return cerr(
                format!("{name} expects at least 3 arguments, found {}", args.len()),
                span,
            );
        }
        let (function, written) = self.function_argument(name, &args[0])?;
        let mut vals = args[1..]
            .iter()
            .map(|a| self.expr(a))
            .collect::<R<Vec<_>>>()?;
        let lupdf = written.ends_with("_lupdf") || written.ends_with("_lupmf");
        if lupdf {
            // As for a direct `_lupdf` call: an argument that is data by value but not by
            // the checker varies (Stan's type decides which summands are kept).
            let exprs: Vec<&Expr> = args[1..].iter().collect();
            vals = self.stan_varying(vals, &exprs);
        }
        let grainsize = self.as_int(&vals[1], args[2].span)?;
        if grainsize < 1 {
            return super::trace::eerr(
                format!("{name}: grainsize is {grainsize}, but must be positive!"),
                args[2].span,
            );
        }
        let Val::Array(xs) = &vals[0] else {
            return cerr(
                format!(
                    "{name}: the sliced argument must be an array, found {}",
                    vals[0].type_name()
                ),
                args[1].span,
            );
        };
        let xs = xs.clone();
        let extra = &vals[2..];
        let saved = self.in_lupdf;
        if !lupdf {
            self.in_lupdf = false;
        }
        let mut total: Option<Sc> = None;
        let mut result = Ok(());
        for start in (0..xs.len()).step_by(REDUCE_SUM_SLICE) {
            let end = (start + REDUCE_SUM_SLICE).min(xs.len());
            let mut call = Vec::with_capacity(3 + extra.len());
            call.push(Val::array(xs[start..end].to_vec()));
            call.push(Val::Int(start as i64 + 1));
            call.push(Val::Int(end as i64));
            call.extend(extra.iter().cloned());
            let part = match self.call_user(function, call, span) {
                Ok(Some(Val::Real(s))) => s,
                Ok(Some(Val::Int(i))) => Sc::C(i as f64),
                Ok(other) => {
                    result = cerr(
                        format!(
                            "{name}: the partial-sum function returned {}; expected a real",
                            other.map_or("nothing", |v| v.type_name())
                        ),
                        span,
                    );
                    break;
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            };
            total = Some(match total {
                None => part,
                Some(t) => self.sc_binary(BinaryFn::Add, t, part),
            });
        }
        self.in_lupdf = saved;
        result?;
        Ok(Val::Real(total.unwrap_or(Sc::C(0.0))))
    }

    fn map_rect(&mut self, args: &[Expr], span: Span) -> R<Val> {
        const F: &str = "map_rect";
        if args.len() != 5 {
            return cerr(
                format!("{F} expects 5 arguments, found {}", args.len()),
                span,
            );
        }
        let (function, _) = self.function_argument(F, &args[0])?;
        let vals = args[1..]
            .iter()
            .map(|a| self.expr(a))
            .collect::<R<Vec<_>>>()?;
        let jobs = |v: &Val| match v {
            Val::Array(xs) => Some(xs.clone()),
            _ => None,
        };
        let (Some(thetas), Some(x_rs), Some(x_is)) =
            (jobs(&vals[1]), jobs(&vals[2]), jobs(&vals[3]))
        else {
            return cerr(format!("{F}: job parameters and data must be arrays"), span);
        };
        let j = thetas.len();
        for (what, n) in [("real data", x_rs.len()), ("int data", x_is.len())] {
            if n != j {
                return super::trace::eerr(
                    format!(
                        "{F}: size of job parameters ({j}) and size of {what} ({n}) must match in size"
                    ),
                    span,
                );
            }
        }
        let mut out = Vec::new();
        for k in 0..j {
            let call = vec![
                vals[0].clone(),
                thetas[k].clone(),
                x_rs[k].clone(),
                x_is[k].clone(),
            ];
            match self.call_user(function, call, span)? {
                Some(Val::Vector(e)) => {
                    out.extend(e.to_scalars().into_iter().map(Val::Real));
                }
                other => {
                    return cerr(
                        format!(
                            "{F}: the mapped function returned {}; expected a vector",
                            other.map_or("nothing", |v| v.type_name())
                        ),
                        span,
                    )
                }
            }
        }
        Ok(Val::array(out))
    }

    /// `hmm_marginal`, `hmm_hidden_state_prob`, `hmm_latent_rng`; `None` for other names.
    pub fn hmm_call(&mut self, name: &str, args: &[Val], span: Span) -> R<Option<Val>> {
        if !matches!(
            name,
            "hmm_marginal" | "hmm_hidden_state_prob" | "hmm_latent_rng"
        ) {
            return Ok(None);
        }
        if args.len() != 3 {
            return cerr(format!("{name} takes 3 arguments"), span);
        }
        let (k, n) = match &args[0] {
            Val::Matrix(k, n, _) => (*k, *n),
            other => {
                return cerr(
                    format!(
                        "{name}: log_omegas must be a matrix, found {}",
                        other.type_name()
                    ),
                    span,
                )
            }
        };
        if !matches!(&args[1], Val::Matrix(..)) || !matches!(&args[2], Val::Vector(_)) {
            return cerr(
                format!("{name}: Gamma must be a matrix and rho a vector"),
                span,
            );
        }
        let elems: Vec<Elems> = args.iter().map(|a| self.to_elems(a)).collect();
        if name == "hmm_marginal" {
            let spec = MvSpec {
                family: MvFamily::HmmMarginal,
                ints: Box::new([]),
                n: k,
                n_obs: n,
            };
            if let Some(consts) = elems.iter().map(|e| e.consts()).collect::<Option<Vec<_>>>() {
                let mut ws = vec![0.0; hmm::hmm_workspace_len(k, n)];
                let v = hmm::hmm_marginal(
                    &consts[0], &consts[1], &consts[2], k, n, None, None, None, &mut ws,
                )
                .map_err(domain(span))?;
                return Ok(Some(Val::real(v)));
            }
            let argv: Vec<_> = elems.iter().map(|e| self.elems_arg(e)).collect();
            let out = self.b.mv_dist(spec, argv, false);
            return Ok(Some(Val::Real(Sc::V(out.off))));
        }
        let mut vals = Vec::with_capacity(3);
        for e in &elems {
            vals.push(
                (0..e.len())
                    .map(|i| self.value_of(e.get(i), span))
                    .collect::<R<Vec<f64>>>()?,
            );
        }
        let mut ws = vec![0.0; hmm::hmm_workspace_len(k, n)];
        if name == "hmm_hidden_state_prob" {
            let mut out = vec![0.0; k * n];
            hmm::hmm_hidden_state_prob(&vals[0], &vals[1], &vals[2], k, n, &mut out, &mut ws)
                .map_err(domain(span))?;
            return Ok(Some(Val::Matrix(k, n, Elems::C(Arc::new(out)))));
        }
        let Some(rng) = self.rng.as_mut() else {
            return cerr(
                format!("{name} is only allowed in transformed data and generated quantities"),
                span,
            );
        };
        let mut out = vec![0i64; n];
        hmm::hmm_latent_rng(&vals[0], &vals[1], &vals[2], k, n, &mut out, &mut ws, rng)
            .map_err(domain(span))?;
        Ok(Some(Val::array(out.into_iter().map(Val::Int).collect())))
    }
}
