//! The `integrate_1d` graph op ([`crate::tape::Op::Integrate`]): one call of `integrate_1d`
//! (or its `_tol` forms) with parameter-dependent arguments, built like the ODE op
//! ([`crate::ode_op`]). The op holds the traced integrand and the call's data; its input is
//! the run of parameter-dependent scalars `v` (the lower limit, then the upper limit, each
//! when it depends on parameters, then those of the integrand's other arguments).
//!
//! - **Forward rule:** `hazel_math::quadrature` integrates the value and `∂f/∂p` on the same
//!   points; the output is the integral and the op's scratch gets `∂out/∂v` (`−f(a)`, `f(b)`,
//!   `∫ ∂f/∂p`).
//! - **Backward rule:** `adj_v += adj_out · ∂out/∂v`.
//!
//! Per evaluation the integrand's buffers and the quadrature's work arrays are allocated (the
//! engine's scratch is `f64` only); the op is not allocation-free.

use crate::lower::fn_graph::{FnGraph, LeadArg, Shape, TracedFn};
use crate::lower::value::Val;
use crate::tape::Buffers;
use hazel_density::EvalError;
use hazel_math::quadrature::{integrate, work_len, Rule};
use hazel_syntax::Span;
use std::sync::Arc;

/// Where the integrand's values and partials come from.
#[derive(Debug)]
pub enum IntegrandSource {
    /// One static trace over `[x, xc, p]`, replayed at every point.
    Static(FnGraph),
    /// The body's control flow reads `x` or `xc` (only): guarded traces
    /// (`TracedFn::set_guarded`), made afresh at each evaluation, one per branch taken.
    PerCall(Box<PerCallIntegrand>),
}

/// What re-tracing the integrand needs.
#[derive(Debug)]
pub struct PerCallIntegrand {
    pub prog: Arc<hazel_check::CheckedProgram>,
    pub function: usize,
    pub span: Span,
    pub args: Box<[Val]>,
}

/// Everything about one `integrate_1d` call that does not change between evaluations.
#[derive(Debug)]
pub struct IntegrateSpec {
    /// The Stan name (for messages).
    pub name: Box<str>,
    pub rule: Rule,
    pub rel_tol: f64,
    pub abs_tol: f64,
    /// The limits; `None` where the limit leads `v`.
    pub a: Option<f64>,
    pub b: Option<f64>,
    pub integrand: IntegrandSource,
}

/// The leading arguments of an integrand `f(x, xc, ...)`: both passive.
pub fn integrand_lead() -> Vec<LeadArg> {
    let passive = LeadArg {
        shape: Shape::Real,
        active: false,
    };
    vec![passive, passive]
}

/// `∫_a^b f` and `∂/∂(v)` at `v` (see the module docs) into `out[0]` and `grad`.
pub fn forward(
    spec: &IntegrateSpec,
    v: &[f64],
    out: &mut [f64],
    grad: &mut [f64],
) -> Result<(), EvalError> {
    let mut k = 0;
    let mut limit = |fixed: Option<f64>| {
        fixed.unwrap_or_else(|| {
            k += 1;
            v[k - 1]
        })
    };
    let a = limit(spec.a);
    let b = limit(spec.b);
    let n_lim = k;
    let p = &v[n_lim..];
    let fail = |e: String| EvalError::reject(format!("{}: {e}", spec.name));
    match &spec.integrand {
        IntegrandSource::Static(g) => {
            let mut buf = Buffers::for_graph(&g.graph);
            let mut q = Vec::with_capacity(2 + p.len());
            let mut f = |x: f64, xc: f64, o: &mut [f64], with_jac: bool| -> Result<(), String> {
                q.clear();
                q.extend_from_slice(&[x, xc]);
                q.extend_from_slice(p);
                g.forward(&q, &mut buf).map_err(|e| e.message)?;
                let (val, gp) = o.split_at_mut(1);
                let jac = (with_jac && !gp.is_empty()).then_some((&mut [][..], gp));
                g.read(&mut buf, val, jac);
                Ok(())
            };
            run(spec, a, b, n_lim, p.len(), &mut f, out, grad)
        }
        IntegrandSource::PerCall(pc) => {
            let mut t = TracedFn::new(
                &pc.prog,
                pc.function,
                pc.span,
                "the integrand",
                integrand_lead(),
                Shape::Real,
                &pc.args,
                p.to_vec(),
            );
            t.set_guarded();
            let mut f = |x: f64, xc: f64, o: &mut [f64], with_jac: bool| -> Result<(), String> {
                let (val, gp) = o.split_at_mut(1);
                let jac = (with_jac && !gp.is_empty()).then_some((&mut [][..], gp));
                t.eval(&[x, xc], val, jac)
            };
            run(spec, a, b, n_lim, p.len(), &mut f, out, grad)
        }
    }
    .map_err(fail)
}

/// One integrand evaluation `(x, xc, out, with_partials)`.
type PointFn<'f> = dyn FnMut(f64, f64, &mut [f64], bool) -> Result<(), String> + 'f;

/// The quadrature and the limits' partials, for either integrand source.
#[allow(clippy::too_many_arguments)]
fn run(
    spec: &IntegrateSpec,
    a: f64,
    b: f64,
    n_lim: usize,
    n_p: usize,
    f: &mut PointFn<'_>,
    out: &mut [f64],
    grad: &mut [f64],
) -> Result<(), String> {
    let dim = 1 + n_p;
    let mut res = vec![0.0; dim];
    let mut work = vec![0.0; work_len(dim)];
    let mut integrand = |x: f64, xc: f64, o: &mut [f64]| f(x, xc, o, true);
    integrate(
        &spec.name,
        &mut integrand,
        a,
        b,
        spec.rule,
        spec.rel_tol,
        spec.abs_tol,
        dim,
        &mut res,
        &mut work,
    )
    .map_err(|e| e.message)?;
    out[0] = res[0];
    let mut k = 0;
    for (fixed, x, sign) in [(spec.a, a, -1.0), (spec.b, b, 1.0)] {
        if fixed.is_none() {
            let mut fx = vec![0.0; dim];
            if x.is_finite() {
                f(x, 0.0, &mut fx, false)?;
            }
            grad[k] = sign * fx[0];
            k += 1;
        }
    }
    debug_assert_eq!(k, n_lim);
    grad[n_lim..].copy_from_slice(&res[1..]);
    Ok(())
}

/// Backward rule: `adj_v += g · ∂out/∂v`.
pub fn backward(grad: &[f64], g: f64, adj_v: &mut [f64]) {
    for (a, d) in adj_v.iter_mut().zip(grad) {
        *a += g * d;
    }
}
