//! Which built-in calls the lowering can run, decided by running it.
//!
//! The checker accepts every call that Stan 2.37 accepts; the lowering implements most of the
//! library but not all of it yet. So that a program is never accepted by `hazel check` and
//! rejected first by `hazel sample`, [`unsupported_calls`] probes every built-in call site of
//! a checked program: it runs the very code the tracer runs ([`Tracer::call`],
//! [`Tracer::density`], [`Tracer::binop`]) on sample values of the argument types the checker
//! inferred, as data or as parameters the way the call site has them. A
//! [`TraceErr::Compile`] means "not lowered"; a value, an evaluation error (a sample value
//! outside the function's domain) or a dynamic-path request means the lowering exists.
//! [`unsupported_signatures`] does the same for every signature of the checker's registry
//! (the test `tests/registry.rs` keeps the list of what is missing honest).

use super::dae::is_dae_solver;
use super::ode::is_ode_solver;
use super::solve::is_algebra_solver;
use super::trace::{TraceErr, Tracer};
use super::value::{Elems, Sc, Val};
use crate::builder::GraphBuilder;
use crate::tape::Arg;
use hazel_check::signatures::{Pattern, ReturnSpec, Signature};
use hazel_check::{CallTarget, CheckedProgram, SignatureTable, Type};
use hazel_density::StreamRng;
use hazel_rng::Purpose;
use hazel_syntax::ast::{BinOp, Expr, ExprKind, Stmt, StmtKind};
use hazel_syntax::visit::{walk_program, Visitor};
use hazel_syntax::Span;
use std::sync::Arc;

/// One argument of a probe: its type and whether it depends on parameters.
#[derive(Clone, Debug)]
pub struct ProbeArg {
    pub ty: Type,
    pub param: bool,
}

/// How a built-in is reached.
#[derive(Clone, Copy, Debug)]
enum Route<'a> {
    /// A function call (`_lpdf`, `_rng` and cdf forms included), by the signature's name.
    Call(&'a str),
    /// The density of a `~` statement, by family.
    Tilde(&'a str),
    /// A binary operator.
    Binary(BinOp),
}

/// [`unsupported_calls`] as error diagnostics at each call, as `hazel check` (and every front
/// end that checks a program before building it) reports them.
pub fn unsupported_call_diagnostics(checked: &CheckedProgram) -> Vec<hazel_syntax::Diagnostic> {
    unsupported_calls(checked)
        .into_iter()
        .map(|(span, message)| {
            hazel_syntax::Diagnostic::error(span, format!("hazel cannot run this yet: {message}"))
                .with_hint("Stan accepts this program; hazel's library does not cover it yet")
        })
        .collect()
}

/// The built-in call sites of `checked` that the lowering cannot run: (span, message). Empty
/// when the whole program lowers (data-dependent failures aside).
pub fn unsupported_calls(checked: &CheckedProgram) -> Vec<(Span, String)> {
    struct Sites<'c> {
        checked: &'c CheckedProgram,
        found: Vec<(Span, String)>,
    }
    impl Sites<'_> {
        fn args(&self, args: &[&Expr]) -> Vec<ProbeArg> {
            args.iter()
                .map(|a| ProbeArg {
                    ty: self.checked.expr_type(a.id).clone(),
                    param: !self.checked.is_parameter_free(a.id),
                })
                .collect()
        }
        fn probe_site(&mut self, id: hazel_syntax::ast::NodeId, span: Span, args: &[&Expr]) {
            let Some(CallTarget::Builtin { name, .. }) = self.checked.call_target(id) else {
                return;
            };
            let probe_args = self.args(args);
            let result = if probe_args.iter().any(|a| matches!(a.ty, Type::Function(_))) {
                higher_order(name)
            } else {
                probe(self.checked, Route::Call(name), &probe_args)
            };
            if let Err(msg) = result {
                self.found.push((span, msg));
            }
        }
    }
    impl Visitor for Sites<'_> {
        fn expr(&mut self, e: &Expr) {
            match &e.kind {
                ExprKind::Call { args, .. } | ExprKind::CondDistCall { args, .. } => {
                    let args: Vec<&Expr> = args.iter().collect();
                    self.probe_site(e.id, e.span, &args);
                }
                // `&&` and `||` short-circuit in the tracer's expression walk.
                ExprKind::Binary {
                    op: BinOp::And | BinOp::Or,
                    ..
                } => {}
                ExprKind::Binary { op, lhs, rhs } => {
                    let probe_args = self.args(&[lhs, rhs]);
                    if let Err(msg) = probe(self.checked, Route::Binary(*op), &probe_args) {
                        self.found.push((e.span, msg));
                    }
                }
                _ => {}
            }
        }
        fn stmt(&mut self, s: &Stmt) {
            match &s.kind {
                StmtKind::Call { args, .. } => {
                    let args: Vec<&Expr> = args.iter().collect();
                    self.probe_site(s.id, s.span, &args);
                }
                StmtKind::Tilde {
                    lhs, dist, args, ..
                } => {
                    if !matches!(
                        self.checked.call_target(s.id),
                        Some(CallTarget::Builtin { .. })
                    ) {
                        return;
                    }
                    let mut all = vec![lhs];
                    all.extend(args.iter());
                    let probe_args = self.args(&all);
                    if let Err(msg) = probe(self.checked, Route::Tilde(&dist.name), &probe_args) {
                        self.found.push((s.span, msg));
                    }
                }
                _ => {}
            }
        }
    }
    let mut sites = Sites {
        checked,
        found: Vec::new(),
    };
    walk_program(&checked.program, &mut sites);
    sites.found
}

/// Every signature of the checker's registry that the lowering cannot run, rendered as in
/// the Functions Reference, with the reason. Each signature is tried with its arguments all
/// data and all parameters (where allowed), and with each vectorised pattern as a scalar and
/// as a container; it counts as lowered when every try lowers.
pub fn unsupported_signatures(checked: &CheckedProgram) -> Vec<(String, String)> {
    let table = SignatureTable::builtin();
    let mut out = Vec::new();
    for sig in &table.signatures {
        if let Err(msg) = probe_signature(checked, sig) {
            out.push((sig.render(), msg));
        }
    }
    out
}

fn probe_signature(checked: &CheckedProgram, sig: &Signature) -> Result<(), String> {
    if sig.args.iter().any(|a| a.pattern == Pattern::Function) {
        return higher_order(&sig.name);
    }
    if sig.variadic {
        return Err(format!("'{}' is not supported", sig.name));
    }
    let route = match sig.name.strip_prefix("operator") {
        Some(symbol) => match BinOp::ALL.iter().find(|b| b.symbol() == symbol) {
            // `&&` and `||` short-circuit in the tracer's expression walk.
            Some(BinOp::And | BinOp::Or) | None => return Ok(()),
            Some(op) => Route::Binary(*op),
        },
        // Prefix and postfix operators are lowered by the tracer's expression walk.
        None if sig.name.starts_with("prefix") || sig.name.starts_with("postfix") => return Ok(()),
        None => Route::Call(&sig.name),
    };
    // A vectorised function returning ints (`to_int`) maps over arrays only: there are no
    // int vectors.
    let arrays_only = matches!(sig.ret, ReturnSpec::VectorisedInt);
    for container in [false, true] {
        for params in [false, true] {
            let args: Vec<ProbeArg> = sig
                .args
                .iter()
                .map(|a| {
                    let ty = match instance(&a.pattern, container) {
                        Type::Vector if arrays_only => Type::array(1, Type::Real),
                        ty => ty,
                    };
                    let param = params && !a.data_only && real_based(&ty);
                    ProbeArg { ty, param }
                })
                .collect();
            probe(checked, route, &args)?;
        }
    }
    Ok(())
}

/// Higher-order built-ins take their function as an expression: the ODE, algebraic and DAE
/// solvers and the other higher-order functions (`lower/hof`) have lowerings of their own.
fn higher_order(name: &str) -> Result<(), String> {
    if is_ode_solver(name)
        || is_algebra_solver(name)
        || is_dae_solver(name)
        || super::hof::is_higher_order(name)
    {
        Ok(())
    } else {
        Err(format!("'{name}' is not supported"))
    }
}

/// A concrete type matching `pattern`; vectorised patterns become containers if `container`.
fn instance(pattern: &Pattern, container: bool) -> Type {
    match pattern {
        Pattern::Exact(t) => t.clone(),
        Pattern::Reals | Pattern::AnyReal if container => Type::Vector,
        Pattern::Reals | Pattern::AnyReal | Pattern::Any => Type::Real,
        Pattern::Ints | Pattern::AnyInt if container => Type::array(1, Type::Int),
        Pattern::Ints | Pattern::AnyInt => Type::Int,
        Pattern::Vectors if container => Type::array(1, Type::Vector),
        Pattern::Vectors => Type::Vector,
        Pattern::AnyArray => Type::array(1, Type::Real),
        Pattern::TypeVar { dims } => Type::array(*dims, Type::Real),
        Pattern::Function => Type::Error,
    }
}

fn real_based(ty: &Type) -> bool {
    match ty.array_element() {
        Type::Real | Type::Vector | Type::RowVector | Type::Matrix => true,
        Type::Complex | Type::ComplexVector | Type::ComplexRowVector | Type::ComplexMatrix => true,
        Type::Tuple(items) => items.iter().any(real_based),
        _ => false,
    }
}

/// Runs the lowering of one built-in on sample values. `Err`: the lowering does not exist
/// (the message says what is missing).
fn probe(checked: &CheckedProgram, route: Route, args: &[ProbeArg]) -> Result<(), String> {
    let mut q = Vec::new();
    let mut vals = Vec::with_capacity(args.len());
    for a in args {
        match sample(&a.ty, a.param, &mut q) {
            Some(v) => vals.push(v),
            None => return Err(format!("{} values are not supported", a.ty)),
        }
    }
    let run = || {
        let mut tr = Tracer::new(GraphBuilder::new(&q), checked, Vec::new());
        tr.dynamic = true;
        tr.rng = Some(StreamRng::new(0, 0, Purpose::Init));
        let span = Span::DUMMY;
        match route {
            Route::Call(name) => tr.call(name, vals, span).map(|_| ()),
            Route::Tilde(family) => tr.density(family, vals, true, span).map(|_| ()),
            Route::Binary(op) => tr.binop(op, &vals[0], &vals[1], span).map(|_| ()),
        }
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        Ok(Err(TraceErr::Compile(msg, _))) => Err(msg),
        // Evaluation errors (a sample value outside the domain) and panics on sample values
        // are not what this decides; the real lowering reports those with the model line.
        _ => Ok(()),
    }
}

/// A value of type `ty` (arrays of 2, vectors of 2, 2 × 2 matrices), constant or read from
/// new parameter slots appended to `q`. `None` for types the tracer has no values for.
fn sample(ty: &Type, param: bool, q: &mut Vec<f64>) -> Option<Val> {
    const VECTOR: [f64; 2] = [0.25, 0.75];
    // Symmetric positive definite, and a valid Cholesky factor of a correlation matrix read
    // as lower-triangular.
    const MATRIX: [f64; 4] = [1.0, 0.5, 0.5, 1.0];
    let elems = |values: &[f64], q: &mut Vec<f64>| {
        if param {
            let off = q.len();
            q.extend_from_slice(values);
            Elems::V(Arg::var(off, values.len()))
        } else {
            Elems::C(Arc::new(values.to_vec()))
        }
    };
    Some(match ty {
        Type::Int => Val::Int(1),
        Type::Real if param => {
            q.push(0.5);
            Val::Real(Sc::V((q.len() - 1) as u32))
        }
        Type::Real => Val::real(0.5),
        Type::Vector => Val::Vector(elems(&VECTOR, q)),
        Type::RowVector => Val::RowVector(elems(&VECTOR, q)),
        Type::Matrix => Val::Matrix(2, 2, elems(&MATRIX, q)),
        Type::Array(dims, elem) => {
            let inner = Type::array(dims - 1, (**elem).clone());
            let a = sample(&inner, param, q)?;
            let b = sample(&inner, param, q)?;
            Val::array(vec![a, b])
        }
        Type::Complex | Type::ComplexVector | Type::ComplexRowVector | Type::ComplexMatrix => {
            let part = match ty {
                Type::Complex => Type::Real,
                Type::ComplexVector => Type::Vector,
                Type::ComplexRowVector => Type::RowVector,
                _ => Type::Matrix,
            };
            let re = sample(&part, param, q)?;
            Val::complex(re, sample(&part, param, q)?)
        }
        Type::Tuple(items) => Val::Tuple(Arc::new(
            items
                .iter()
                .map(|t| sample(t, param, q))
                .collect::<Option<Vec<_>>>()?,
        )),
        _ => return None,
    })
}
