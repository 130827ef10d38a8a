//! Loop vectorisation: `for (i in lo:hi) { v[i] = expr; ... }` whose iterations are
//! independent becomes a few vector ops instead of `hi − lo + 1` copies of the body.
//!
//! Only a narrow, provably equivalent form is accepted: the body is a sequence of plain
//! assignments `v[i] = e` (single index, exactly the loop variable) where no `e` reads a
//! variable assigned in the loop, and every `e` is built from
//! - subexpressions that do not mention `i` (evaluated once, must be scalars where combined),
//! - `i` itself, and `x[e_i]` with `x` not mentioning `i` and `e_i` an int per iteration
//!   (a gather),
//! - `+ - * / .* ./`, unary minus and elementwise math functions of per-iteration scalars.
//!
//! Each iteration then computes `v[i] = f(i)` from values that no iteration writes, so
//! evaluating all iterations at once as vector ops gives the same values (each element runs
//! the same scalar arithmetic). Anything else is unrolled by the ordinary trace. Loops in
//! blocks that draw random numbers are never vectorised (invariant subexpressions would be
//! evaluated a different number of times).

use super::builtins::unary_by_name;
use super::trace::{eerr, Ix, Tracer, R};
use super::value::{Elems, Sc, Val};
use crate::kernels::{BinaryFn, UnaryFn};
use hazel_syntax::ast::*;
use hazel_syntax::visit::any_subexpr;
use std::sync::Arc;

/// A per-iteration value.
enum B {
    /// The same value in every iteration.
    Inv(Val),
    /// One real per iteration.
    Real(Elems),
    /// One int per iteration.
    Int(Vec<i64>),
}

/// Whether `e` mentions the variable `name`.
fn mentions(e: &Expr, name: &str) -> bool {
    any_subexpr(
        e,
        |x: &Expr| matches!(&x.kind, ExprKind::Var(id) if id.name == name),
    )
}

/// `v[i] = e` with `i` the loop variable: returns `(v, e)`.
fn single_assignment<'a>(s: &'a Stmt, var: &str) -> Option<(&'a str, &'a Expr)> {
    let StmtKind::Assign {
        lhs,
        op: AssignOp::Assign,
        rhs,
    } = &s.kind
    else {
        return None;
    };
    let LValueKind::Index { base, indices } = &lhs.kind else {
        return None;
    };
    let LValueKind::Var(v) = &base.kind else {
        return None;
    };
    if indices.len() != 1 || v.name == var {
        return None;
    }
    match &indices[0] {
        Index::Single(Expr {
            kind: ExprKind::Var(i),
            ..
        }) if i.name == var => Some((&v.name, rhs)),
        _ => None,
    }
}

impl<'p> Tracer<'p> {
    /// Tries to run `for (var in lo:hi) body` as vector ops; `Ok(false)` when the loop does
    /// not have the accepted form (nothing was changed then, except possibly dead ops).
    pub fn try_vectorize_for(&mut self, var: &str, lo: i64, hi: i64, body: &Stmt) -> R<bool> {
        if self.rng.is_some() || hi - lo < 3 {
            return Ok(false);
        }
        let stmts: Vec<&Stmt> = match &body.kind {
            StmtKind::Block(ss) => ss.iter().collect(),
            StmtKind::Assign { .. } => vec![body],
            _ => return Ok(false),
        };
        let mut assigns = Vec::with_capacity(stmts.len());
        for s in &stmts {
            match single_assignment(s, var) {
                Some(a) => assigns.push(a),
                None => return Ok(false),
            }
        }
        // No right-hand side may read a variable the loop writes, or call a user function
        // (which could add to the target, so it must run once per iteration).
        for (_, e) in &assigns {
            if assigns.iter().any(|(v, _)| mentions(e, v)) {
                return Ok(false);
            }
            let user_call = |x: &Expr| {
                matches!(
                    self.prog.call_target(x.id),
                    Some(hazel_check::CallTarget::User { .. })
                )
            };
            if any_subexpr(e, user_call) {
                return Ok(false);
            }
        }
        let idx: Vec<i64> = (lo..=hi).collect();
        // Evaluate every right-hand side before assigning anything; an abandoned attempt
        // leaves no ops behind.
        let mark = self.b.mark();
        let mut values = Vec::with_capacity(assigns.len());
        for (v, e) in &assigns {
            match self.bexpr(e, var, &idx) {
                Ok(Some(b)) => values.push((*v, b, e.span)),
                Ok(None) => {
                    self.rollback(&mark);
                    return Ok(false);
                }
                Err(err) => {
                    self.rollback(&mark);
                    return Err(err);
                }
            }
        }
        // Check every target before assigning anything.
        for (v, _, span) in &values {
            match self.lookup(v) {
                Some(Val::Vector(e)) | Some(Val::RowVector(e))
                    if e.len() as i64 >= hi && lo >= 1 => {}
                Some(Val::Array(xs))
                    if xs.len() as i64 >= hi
                        && lo >= 1
                        && xs.iter().all(|x| matches!(x, Val::Real(_))) => {}
                Some(_) => {
                    self.rollback(&mark);
                    return Ok(false);
                }
                None => return super::trace::cerr(format!("unknown variable '{v}'"), *span),
            }
        }
        for (v, b, span) in values {
            let n = idx.len();
            let scalars: Vec<Sc> = match b {
                B::Real(e) => (0..n).map(|k| e.get(k)).collect(),
                B::Int(is) => is.iter().map(|&i| Sc::C(i as f64)).collect(),
                B::Inv(Val::Int(i)) => vec![Sc::C(i as f64); n],
                B::Inv(Val::Real(s)) => vec![s; n],
                B::Inv(_) => return eerr("assigning a container to an element", span),
            };
            let slot = self.lookup_index(v).expect("checked above");
            let mut target = std::mem::replace(self.env_val_mut(slot), Val::Int(0));
            let rhs = match &target {
                Val::Array(_) => Val::array(scalars.into_iter().map(Val::Real).collect()),
                _ => Val::Vector(Elems::from_scalars(scalars)),
            };
            let res = self.assign_index(&mut target, &[Ix::Multi(idx.clone())], rhs, span);
            // A vector whose elements are now one run of the buffer is stored as that run.
            if let Val::Vector(e) | Val::RowVector(e) = &mut target {
                if let Elems::M(items) = e {
                    if !items.is_empty() {
                        *e = Elems::from_scalars(items.to_vec());
                    }
                }
            }
            *self.env_val_mut(slot) = target;
            res?;
        }
        Ok(true)
    }

    fn real_elems_of(&mut self, b: &B, n: usize) -> Option<Elems> {
        Some(match b {
            B::Real(e) => e.clone(),
            B::Int(v) => Elems::C(Arc::new(v.iter().map(|&i| i as f64).collect())),
            B::Inv(Val::Int(i)) => Elems::C(Arc::new(vec![*i as f64])),
            B::Inv(Val::Real(s)) => Elems::from_scalars(vec![*s]),
            B::Inv(_) => return None,
        })
        .filter(|e| e.len() == 1 || e.len() == n)
    }

    /// The value of `e` for every iteration, or `None` when `e` is outside the accepted form.
    fn bexpr(&mut self, e: &Expr, var: &str, idx: &[i64]) -> R<Option<B>> {
        let n = idx.len();
        if !mentions(e, var) {
            return Ok(Some(B::Inv(self.expr(e)?)));
        }
        Ok(match &e.kind {
            ExprKind::Var(_) => Some(B::Int(idx.to_vec())),
            ExprKind::Paren(x) => self.bexpr(x, var, idx)?,
            ExprKind::Unary {
                op: UnaryOp::Neg,
                operand,
            } => match self.bexpr(operand, var, idx)? {
                Some(B::Int(v)) => Some(B::Int(v.iter().map(|i| i.wrapping_neg()).collect())),
                Some(B::Real(x)) => Some(B::Real(self.elems_unary(UnaryFn::Neg, &x))),
                _ => None,
            },
            ExprKind::Binary { op, lhs, rhs } => {
                let (Some(a), Some(b)) = (self.bexpr(lhs, var, idx)?, self.bexpr(rhs, var, idx)?)
                else {
                    return Ok(None);
                };
                let int_of = |x: &B| -> Option<Vec<i64>> {
                    match x {
                        B::Int(v) => Some(v.clone()),
                        B::Inv(Val::Int(i)) => Some(vec![*i]),
                        _ => None,
                    }
                };
                if let (Some(x), Some(y)) = (int_of(&a), int_of(&b)) {
                    let at = |v: &Vec<i64>, k: usize| if v.len() == 1 { v[0] } else { v[k] };
                    let f: fn(i64, i64) -> i64 = match op {
                        BinOp::Add => i64::wrapping_add,
                        BinOp::Sub => i64::wrapping_sub,
                        BinOp::Mul | BinOp::EltMul => i64::wrapping_mul,
                        _ => return Ok(None),
                    };
                    return Ok(Some(B::Int(
                        (0..n).map(|k| f(at(&x, k), at(&y, k))).collect(),
                    )));
                }
                let f = match op {
                    BinOp::Add => BinaryFn::Add,
                    BinOp::Sub => BinaryFn::Sub,
                    BinOp::Mul | BinOp::EltMul => BinaryFn::Mul,
                    BinOp::Div | BinOp::EltDiv => BinaryFn::Div,
                    _ => return Ok(None),
                };
                // Integer division of ints was handled above (rejected); here at least one
                // side is real, as in the scalar trace.
                let (Some(x), Some(y)) = (self.real_elems_of(&a, n), self.real_elems_of(&b, n))
                else {
                    return Ok(None);
                };
                Some(B::Real(self.elems_binary(f, &x, &y)))
            }
            ExprKind::Call { name, args } if args.len() == 1 => {
                // `abs` keeps ints ints; every other elementwise function returns reals.
                let Some(f) = unary_by_name(&name.name).filter(|_| name.name != "abs") else {
                    return Ok(None);
                };
                if !matches!(
                    self.prog.call_target(e.id),
                    Some(hazel_check::CallTarget::Builtin { .. })
                ) {
                    return Ok(None);
                }
                match self.bexpr(&args[0], var, idx)? {
                    Some(b @ (B::Real(_) | B::Int(_))) => {
                        let Some(x) = self.real_elems_of(&b, n) else {
                            return Ok(None);
                        };
                        Some(B::Real(self.elems_unary(f, &x)))
                    }
                    _ => None,
                }
            }
            ExprKind::Index { base, indices } if indices.len() == 1 && !mentions(base, var) => {
                let Index::Single(ix) = &indices[0] else {
                    return Ok(None);
                };
                let Some(B::Int(pos1)) = self.bexpr(ix, var, idx)? else {
                    return Ok(None);
                };
                let base_v = self.expr(base)?;
                let len = match &base_v {
                    Val::Vector(e) | Val::RowVector(e) => e.len(),
                    Val::Array(xs) => xs.len(),
                    _ => return Ok(None),
                };
                let mut pos = Vec::with_capacity(n);
                for &p in &pos1 {
                    if p < 1 || p as usize > len {
                        return eerr(
                            format!(
                                "index {p} out of range; expecting index to be between 1 and {len}"
                            ),
                            ix.span,
                        );
                    }
                    pos.push(p as usize - 1);
                }
                match &base_v {
                    Val::Vector(e) | Val::RowVector(e) => Some(B::Real(self.select(e, &pos))),
                    Val::Array(xs) if xs.iter().all(|x| matches!(x, Val::Int(_))) => Some(B::Int(
                        pos.iter()
                            .map(|&p| if let Val::Int(i) = xs[p] { i } else { 0 })
                            .collect(),
                    )),
                    Val::Array(xs) if xs.iter().all(|x| matches!(x, Val::Real(_))) => {
                        let sc: Vec<Sc> = pos
                            .iter()
                            .map(|&p| {
                                if let Val::Real(s) = xs[p] {
                                    s
                                } else {
                                    Sc::C(f64::NAN)
                                }
                            })
                            .collect();
                        Some(B::Real(Elems::from_scalars(sc)))
                    }
                    _ => None,
                }
            }
            _ => None,
        })
    }
}
