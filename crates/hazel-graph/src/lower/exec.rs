//! Expressions and statements of the tracing interpreter.

use super::builtins::promote;
use super::trace::{cerr, coerce_like, eerr, Flow, Ix, TraceErr, Tracer, R};
use super::value::{Elems, Sc, Val};
use crate::dists::DistKind;
use crate::kernels::{BinaryFn, UnaryFn};
use hazel_check::CallTarget;
use hazel_density::EvalError;
use hazel_syntax::ast::*;
use hazel_syntax::Span;
use std::sync::Arc;

impl<'p> Tracer<'p> {
    pub fn expr(&mut self, e: &Expr) -> R<Val> {
        let span = e.span;
        match &e.kind {
            ExprKind::IntLit(i) => Ok(Val::Int(*i)),
            ExprKind::RealLit { value, .. } => Ok(Val::real(*value)),
            ExprKind::ImagLit { value, .. } => Ok(Val::complex(Val::real(0.0), Val::real(*value))),
            ExprKind::Var(id) => match self.lookup(&id.name) {
                Some(v) => Ok(v.clone()),
                None => cerr(format!("unknown variable '{}'", id.name), span),
            },
            ExprKind::Paren(x) => self.expr(x),
            ExprKind::Binary { op, lhs, rhs } => match op {
                BinOp::And | BinOp::Or => {
                    let a = self.expr(lhs)?;
                    let av = self.real_value(&a, lhs.span)? != 0.0;
                    if (*op == BinOp::And && !av) || (*op == BinOp::Or && av) {
                        return Ok(Val::Int(av as i64));
                    }
                    let b = self.expr(rhs)?;
                    Ok(Val::Int((self.real_value(&b, rhs.span)? != 0.0) as i64))
                }
                _ => {
                    let a = self.expr(lhs)?;
                    let b = self.expr(rhs)?;
                    self.binop(*op, &a, &b, span)
                }
            },
            ExprKind::Unary { op, operand } => {
                let v = self.expr(operand)?;
                match op {
                    UnaryOp::Plus => Ok(v),
                    UnaryOp::Neg => match v {
                        Val::Int(i) => Ok(Val::Int(-i)),
                        Val::Complex(_) => self.complex_neg(&v, span),
                        _ => self.map_unary(UnaryFn::Neg, &v, span),
                    },
                    UnaryOp::Not => Ok(Val::Int((self.real_value(&v, span)? == 0.0) as i64)),
                }
            }
            ExprKind::Transpose(x) => {
                let v = self.expr(x)?;
                self.transpose(&v, span)
            }
            ExprKind::Ternary {
                cond,
                then_expr,
                else_expr,
            } => {
                let c = self.expr(cond)?;
                let v = if self.real_value(&c, cond.span)? != 0.0 {
                    self.expr(then_expr)?
                } else {
                    self.expr(else_expr)?
                };
                // Stan promotes an int branch when the other is real.
                Ok(promote(self.prog.expr_type(e.id), v))
            }
            ExprKind::Call { name, args } if super::ode::is_ode_solver(&name.name) => {
                self.ode_call(&name.name, args, span)
            }
            ExprKind::Call { name, args } if super::solve::is_algebra_solver(&name.name) => {
                self.solve_call(&name.name, args, span)
            }
            ExprKind::Call { name, args } if super::dae::is_dae_solver(&name.name) => {
                self.dae_call(&name.name, args, span)
            }
            ExprKind::Call { name, args } if super::hof::is_higher_order(&name.name) => {
                self.higher_order_call(&name.name, args, span)
            }
            ExprKind::Call { name, args } | ExprKind::CondDistCall { name, args } => {
                let mut vals = args.iter().map(|a| self.expr(a)).collect::<R<Vec<_>>>()?;
                if name.name.ends_with("_lupdf") || name.name.ends_with("_lupmf") {
                    let exprs: Vec<&Expr> = args.iter().collect();
                    vals = self.stan_varying(vals, &exprs);
                }
                match self.call_target(e.id, &name.name, vals, span)? {
                    Some(v) => Ok(v),
                    None => cerr(format!("{} does not return a value", name.name), span),
                }
            }
            ExprKind::Target => {
                self.flush_tilde();
                let mut terms = self.target.clone();
                let c = self.target_const;
                if terms.is_empty() {
                    return Ok(Val::real(c));
                }
                terms.push(self.b.scalar_const(c));
                Ok(Val::Real(Sc::V(self.b.sum_scalars(terms).off)))
            }
            ExprKind::Index { base, indices } => {
                // Index a variable in place, without copying it.
                let ixs = self.indices(indices)?;
                if let ExprKind::Var(id) = &base.kind {
                    let v = match self.lookup(&id.name) {
                        Some(v) => v.clone(),
                        None => return cerr(format!("unknown variable '{}'", id.name), base.span),
                    };
                    return self.index(&v, &ixs, span);
                }
                let v = self.expr(base)?;
                self.index(&v, &ixs, span)
            }
            ExprKind::TupleProj { base, index } => match self.expr(base)? {
                Val::Tuple(xs) if *index >= 1 && *index <= xs.len() => Ok(xs[index - 1].clone()),
                _ => cerr("bad tuple projection", span),
            },
            ExprKind::Array(items) => {
                let vals = items.iter().map(|a| self.expr(a)).collect::<R<Vec<_>>>()?;
                // {int, real} promotes to reals, {real, complex} to complex.
                if vals.iter().any(Val::holds_complex) {
                    return Ok(Val::array(
                        vals.into_iter().map(super::trace::to_complex).collect(),
                    ));
                }
                let any_real = vals.iter().any(|v| matches!(v, Val::Real(_)));
                let vals = if any_real {
                    vals.into_iter()
                        .map(|v| {
                            if let Val::Int(i) = v {
                                Val::real(i as f64)
                            } else {
                                v
                            }
                        })
                        .collect()
                } else {
                    vals
                };
                Ok(Val::array(vals))
            }
            ExprKind::RowVector(items) => {
                let vals = items.iter().map(|a| self.expr(a)).collect::<R<Vec<_>>>()?;
                if vals.iter().any(Val::holds_complex) {
                    // Complex elements: the real parts and the imaginary parts each make a
                    // real row vector (or matrix).
                    let (re, im): (Vec<Val>, Vec<Val>) = vals.iter().map(|v| self.split(v)).unzip();
                    let re = self.row_vector_expr(re, span)?;
                    return Ok(Val::complex(re, self.row_vector_expr(im, span)?));
                }
                self.row_vector_expr(vals, span)
            }
            ExprKind::Tuple(items) => {
                let vals = items.iter().map(|a| self.expr(a)).collect::<R<Vec<_>>>()?;
                Ok(Val::Tuple(Arc::new(vals)))
            }
        }
    }

    /// `[a, b, c]`: a row vector of scalars, or a matrix of row vectors.
    fn row_vector_expr(&mut self, vals: Vec<Val>, span: Span) -> R<Val> {
        if vals.iter().all(|v| matches!(v, Val::RowVector(_))) && !vals.is_empty() {
            // [row, row, ...] is a matrix.
            let rows = vals.len();
            let cols = self.to_elems(&vals[0]).len();
            let mut sc = vec![Sc::C(0.0); rows * cols];
            for (i, v) in vals.iter().enumerate() {
                let e = self.to_elems(v);
                if e.len() != cols {
                    return eerr("rows of a matrix expression differ in size", span);
                }
                for j in 0..cols {
                    sc[i + j * rows] = e.get(j);
                }
            }
            return Ok(Val::Matrix(rows, cols, Elems::from_scalars(sc)));
        }
        let mut sc = Vec::new();
        for v in &vals {
            match v {
                Val::Int(i) => sc.push(Sc::C(*i as f64)),
                Val::Real(s) => sc.push(*s),
                _ => return cerr("row vector expression elements must be scalars", span),
            }
        }
        if sc.is_empty() {
            return Ok(Val::RowVector(Elems::C(Arc::new(vec![]))));
        }
        Ok(Val::RowVector(Elems::from_scalars(sc)))
    }

    pub fn indices(&mut self, indices: &[Index]) -> R<Vec<Ix>> {
        let mut out = Vec::with_capacity(indices.len());
        for ix in indices {
            out.push(match ix {
                Index::All => Ix::All,
                Index::Single(e) => match self.expr(e)? {
                    Val::Int(i) => Ix::One(i),
                    Val::Array(xs) => Ix::Multi(
                        xs.iter()
                            .map(|x| self.as_int(x, e.span))
                            .collect::<R<_>>()?,
                    ),
                    Val::Real(_) => return cerr("index must be an integer", e.span),
                    _ => return cerr("bad index", e.span),
                },
                Index::Lower(e) => Ix::Lower(self.int_expr(e)?),
                Index::Upper(e) => Ix::Upper(self.int_expr(e)?),
                Index::Range(a, b) => Ix::Range(self.int_expr(a)?, self.int_expr(b)?),
            });
        }
        Ok(out)
    }

    pub fn int_expr(&mut self, e: &Expr) -> R<i64> {
        let v = self.expr(e)?;
        self.as_int(&v, e.span)
    }

    pub fn transpose(&mut self, v: &Val, span: Span) -> R<Val> {
        Ok(match v {
            Val::Complex(_) => return self.complex_transpose(v, span),
            Val::Vector(e) => Val::RowVector(e.clone()),
            Val::RowVector(e) => Val::Vector(e.clone()),
            Val::Matrix(r, c, e) => {
                let mut pos = Vec::with_capacity(r * c);
                // out is c × r: out[j, i] = in[i, j]
                for i in 0..*r {
                    for j in 0..*c {
                        pos.push(i + j * r);
                    }
                }
                Val::Matrix(*c, *r, self.select(e, &pos))
            }
            _ => return cerr("transpose of a non-matrix", span),
        })
    }

    pub fn binop(&mut self, op: BinOp, a: &Val, b: &Val, span: Span) -> R<Val> {
        use BinOp::*;
        if a.holds_complex() || b.holds_complex() {
            return self.complex_binop(op, a, b, span);
        }
        // integer arithmetic
        if let (Val::Int(x), Val::Int(y)) = (a, b) {
            let (x, y) = (*x, *y);
            return Ok(Val::Int(match op {
                Add => x.wrapping_add(y),
                Sub => x.wrapping_sub(y),
                Mul => x.wrapping_mul(y),
                Div | IntDiv => {
                    if y == 0 {
                        return eerr("integer division by zero", span);
                    }
                    x / y
                }
                Mod => {
                    if y == 0 {
                        return eerr("modulus by zero", span);
                    }
                    x % y
                }
                Pow | EltPow => return Ok(Val::real((x as f64).powf(y as f64))),
                Eq => (x == y) as i64,
                Neq => (x != y) as i64,
                Lt => (x < y) as i64,
                Leq => (x <= y) as i64,
                Gt => (x > y) as i64,
                Geq => (x >= y) as i64,
                EltMul => x * y,
                EltDiv => {
                    if y == 0 {
                        return eerr("integer division by zero", span);
                    }
                    x / y
                }
                And | Or | LeftDiv => return cerr("bad integer operator", span),
            }));
        }
        let scalar = |v: &Val| matches!(v, Val::Int(_) | Val::Real(_));
        match op {
            Eq | Neq | Lt | Leq | Gt | Geq => {
                let cmp: fn(f64, f64) -> bool = match op {
                    Eq => |x, y| x == y,
                    Neq => |x, y| x != y,
                    Lt => |x, y| x < y,
                    Leq => |x, y| x <= y,
                    Gt => |x, y| x > y,
                    _ => |x, y| x >= y,
                };
                if let Some(c) = self.guarded_compare(cmp, a, b) {
                    return Ok(Val::Int(c as i64));
                }
                let x = self.real_value(a, span)?;
                let y = self.real_value(b, span)?;
                Ok(Val::Int(match op {
                    Eq => x == y,
                    Neq => x != y,
                    Lt => x < y,
                    Leq => x <= y,
                    Gt => x > y,
                    _ => x >= y,
                } as i64))
            }
            Add => self.map_binary(BinaryFn::Add, a, b, span),
            Sub => self.map_binary(BinaryFn::Sub, a, b, span),
            EltMul => self.map_binary(BinaryFn::Mul, a, b, span),
            EltDiv => self.map_binary(BinaryFn::Div, a, b, span),
            Pow | EltPow => self.map_binary(BinaryFn::Pow, a, b, span),
            Div => {
                // `b / A` is mdivide_right(b, A); `c / A` for a scalar c is elementwise (Stan
                // Math's `divide(c, A)`).
                if scalar(a) || scalar(b) || !matches!(b, Val::Matrix(..)) {
                    self.map_binary(BinaryFn::Div, a, b, span)
                } else {
                    self.call("mdivide_right", vec![a.clone(), b.clone()], span)
                }
            }
            Mul => {
                if scalar(a) || scalar(b) {
                    return self.map_binary(BinaryFn::Mul, a, b, span);
                }
                self.matmul(a, b, span)
            }
            Mod | IntDiv => cerr("'%' and '%/%' need integer operands", span),
            // `A \ b` is mdivide_left(A, b).
            LeftDiv => self.call("mdivide_left", vec![a.clone(), b.clone()], span),
            And | Or => unreachable!(),
        }
    }

    /// Matrix products: matrix × vector, row_vector × vector, vector × row_vector,
    /// matrix × matrix, row_vector × matrix.
    pub fn matmul(&mut self, a: &Val, b: &Val, span: Span) -> R<Val> {
        // (rows, columns, elements) of a matrix, row vector or vector.
        let dims = |v: &Val| match v {
            Val::Matrix(r, c, e) => Some((*r, *c, e.clone())),
            Val::RowVector(e) => Some((1, e.len(), e.clone())),
            Val::Vector(e) => Some((e.len(), 1, e.clone())),
            _ => None,
        };
        let (Some((ar, ac, ae)), Some((br, bc, be))) = (dims(a), dims(b)) else {
            return cerr(
                format!("cannot multiply {} by {}", a.type_name(), b.type_name()),
                span,
            );
        };
        if ac != br {
            return eerr(
                format!("matrix multiplication size mismatch: {ar}×{ac} times {br}×{bc}"),
                span,
            );
        }
        let out = if let (Some(x), Some(y)) = (ae.consts(), be.consts()) {
            let mut o = vec![0.0; ar * bc];
            for j in 0..bc {
                crate::kernels::matvec(
                    &x,
                    &y[j * br..(j + 1) * br],
                    ar,
                    ac,
                    &mut o[j * ar..(j + 1) * ar],
                );
            }
            Elems::C(Arc::new(o))
        } else if ar == 1 && bc == 1 {
            let xa = self.elems_arg(&ae);
            let ya = self.elems_arg(&be);
            Elems::V(self.b.dot(xa, ya))
        } else if bc == 1 {
            let xa = self.elems_arg(&ae);
            let ya = self.elems_arg(&be);
            Elems::V(self.b.matvec(xa, ya, ar, ac))
        } else {
            let xa = self.elems_arg(&ae);
            let ya = self.elems_arg(&be);
            Elems::V(self.b.matmul(xa, ya, ar, ac, bc))
        };
        Ok(match (a, b) {
            (Val::RowVector(_), Val::Vector(_)) => Val::Real(out.get(0)),
            (_, Val::Vector(_)) => Val::Vector(out),
            (Val::RowVector(_), _) => Val::RowVector(out),
            _ => Val::Matrix(ar, bc, out),
        })
    }

    // ----- statements -----

    pub fn stmts(&mut self, stmts: &[Stmt]) -> R<Flow> {
        let mark = self.env_len();
        for s in stmts {
            match self.stmt(s)? {
                Flow::Normal => {}
                other => {
                    self.truncate_env(mark);
                    return Ok(other);
                }
            }
        }
        self.truncate_env(mark);
        Ok(Flow::Normal)
    }

    /// Runs block-level statements, keeping their declarations in scope.
    pub fn block_stmts(&mut self, stmts: &[Stmt]) -> R<()> {
        for s in stmts {
            match self.stmt(s)? {
                Flow::Normal => {}
                _ => return cerr("break/continue/return outside a loop or function", s.span),
            }
        }
        Ok(())
    }

    /// Runs a loop's body once with `var` bound to `value`: `Some(flow)` when the loop ends
    /// here with the statement's flow (`Normal` after a `break`), `None` to go on.
    fn loop_iteration(&mut self, var: &str, value: Val, body: &Stmt) -> R<Option<Flow>> {
        let mark = self.env_len();
        self.bind(var, value);
        let flow = self.stmt(body)?;
        self.truncate_env(mark);
        Ok(match flow {
            Flow::Break => Some(Flow::Normal),
            Flow::Return(v) => Some(Flow::Return(v)),
            _ => None,
        })
    }

    /// Runs one statement; the ops it emits (and its errors) carry its location.
    pub fn stmt(&mut self, s: &Stmt) -> R<Flow> {
        let location = self.location(s.span);
        let saved = std::mem::replace(&mut self.b.location, location);
        let flow = self.stmt_here(s).map_err(|e| match e {
            TraceErr::Eval(err, span) => {
                let at = self.b.location.clone();
                TraceErr::Eval(err.at(at.as_deref()), span)
            }
            other => other,
        });
        self.b.location = saved;
        flow
    }

    fn stmt_here(&mut self, s: &Stmt) -> R<Flow> {
        let span = s.span;
        match &s.kind {
            StmtKind::VarDecl(d) => {
                for decl in &d.declarators {
                    let v = match &decl.init {
                        Some(init) => {
                            let v = self.expr(init)?;
                            let blank = self.blank(&d.ty)?;
                            coerce_like(&blank, v)
                        }
                        None => self.blank(&d.ty)?,
                    };
                    self.bind(&decl.name.name, v);
                }
                Ok(Flow::Normal)
            }
            StmtKind::Assign { lhs, op, rhs } => {
                let r = self.expr(rhs)?;
                self.assign(lhs, *op, r)?;
                Ok(Flow::Normal)
            }
            StmtKind::Tilde {
                lhs,
                dist,
                args,
                truncation,
            } => {
                let mut vals = vec![self.expr(lhs)?];
                for a in args {
                    vals.push(self.expr(a)?);
                }
                let exprs: Vec<&Expr> = std::iter::once(lhs).chain(args.iter()).collect();
                let vals = self.stan_varying(vals, &exprs);
                let propto = self.propto;
                if let Some(CallTarget::User { function }) = self.prog.call_target(s.id) {
                    // `y ~ foo(...)` runs the user's `foo_lupdf`/`foo_lupmf`.
                    let lp = match self.call_user(*function, vals.clone(), span)? {
                        Some(Val::Real(s)) => s,
                        Some(Val::Int(i)) => Sc::C(i as f64),
                        _ => return cerr(format!("{} must return a real", dist.name), span),
                    };
                    self.add_target_sc(lp);
                } else {
                    // The density term of a truncated `~` is the untruncated one, batched
                    // alike.
                    let queued = DistKind::lookup(&dist.name)
                        .is_some_and(|kind| self.queue_tilde(kind, &vals, propto));
                    if !queued {
                        let lp = self.density(&dist.name, vals.clone(), propto, span)?;
                        self.add_target_sc(lp);
                    }
                }
                if let Some(t) = truncation {
                    self.truncate(&dist.name, &vals, t, span)?;
                }
                Ok(Flow::Normal)
            }
            StmtKind::TargetPlusAssign(e) | StmtKind::JacobianPlusAssign(e) => {
                let v = self.expr(e)?;
                if matches!(s.kind, StmtKind::JacobianPlusAssign(_)) && !self.jacobian {
                    return Ok(Flow::Normal);
                }
                self.add_target(&v);
                Ok(Flow::Normal)
            }
            StmtKind::For {
                var,
                lower,
                upper,
                body,
            } => {
                let lo = self.int_expr(lower)?;
                let hi_v = self.expr(upper)?;
                if let Val::Int(hi) = hi_v {
                    if self.try_vectorize_for(&var.name, lo, hi, body)? {
                        return Ok(Flow::Normal);
                    }
                }
                let mut i = lo;
                loop {
                    // The upper bound is re-evaluated only when it is an expression of
                    // loop-invariant data; Stan evaluates it once, as here.
                    let hi = self.as_int(&hi_v, upper.span)?;
                    if i > hi {
                        break;
                    }
                    if let Some(flow) = self.loop_iteration(&var.name, Val::Int(i), body)? {
                        return Ok(flow);
                    }
                    i += 1;
                }
                Ok(Flow::Normal)
            }
            StmtKind::Foreach {
                var,
                iterable,
                body,
            } => {
                let it = self.expr(iterable)?;
                let items: Vec<Val> = match &it {
                    Val::Array(xs) => xs.to_vec(),
                    Val::Vector(e) | Val::RowVector(e) | Val::Matrix(_, _, e) => {
                        (0..e.len()).map(|i| Val::Real(e.get(i))).collect()
                    }
                    _ => return cerr("foreach over a non-container", span),
                };
                for item in items {
                    if let Some(flow) = self.loop_iteration(&var.name, item, body)? {
                        return Ok(flow);
                    }
                }
                Ok(Flow::Normal)
            }
            StmtKind::While { cond, body } => {
                let mut guard = 0u64;
                loop {
                    let c = self.expr(cond)?;
                    if self.real_value(&c, cond.span)? == 0.0 {
                        break;
                    }
                    guard += 1;
                    if guard > 100_000_000 {
                        return eerr("while loop did not terminate", span);
                    }
                    match self.stmt(body)? {
                        Flow::Break => break,
                        Flow::Return(v) => return Ok(Flow::Return(v)),
                        _ => {}
                    }
                }
                Ok(Flow::Normal)
            }
            StmtKind::If {
                cond,
                then_branch,
                else_branch,
            } => {
                let c = self.expr(cond)?;
                if self.real_value(&c, cond.span)? != 0.0 {
                    self.scoped(then_branch)
                } else if let Some(e) = else_branch {
                    self.scoped(e)
                } else {
                    Ok(Flow::Normal)
                }
            }
            StmtKind::Break => Ok(Flow::Break),
            StmtKind::Continue => Ok(Flow::Continue),
            StmtKind::Return(e) => {
                let v = match e {
                    Some(e) => Some(self.expr(e)?),
                    None => None,
                };
                Ok(Flow::Return(v))
            }
            StmtKind::Print(items) => {
                // CmdStan prints at every evaluation, with the values of that evaluation: a
                // static graph cannot, so a `print` reached while tracing the density makes
                // the model re-traced (transformed data, generated quantities and the
                // dynamic path trace with values and print here).
                if !self.dynamic && self.rng.is_none() {
                    return Err(TraceErr::Dynamic(span));
                }
                let mut line = self.message(items)?;
                line.push('\n');
                use std::io::Write;
                // A closed stdout must not stop sampling; the draws matter more than the log.
                let _ = std::io::stdout().lock().write_all(line.as_bytes());
                Ok(Flow::Normal)
            }
            StmtKind::Reject(items) | StmtKind::FatalError(items) => {
                let msg = self.message(items)?;
                let err = if matches!(s.kind, StmtKind::FatalError(_)) {
                    EvalError::new(hazel_density::EvalErrorKind::Fatal, msg)
                } else {
                    EvalError::reject(msg)
                };
                Err(TraceErr::Eval(err, span))
            }
            StmtKind::Block(stmts) | StmtKind::Profile { body: stmts, .. } => self.stmts(stmts),
            StmtKind::Call { name, args } => {
                let vals = args.iter().map(|a| self.expr(a)).collect::<R<Vec<_>>>()?;
                self.call_target(s.id, &name.name, vals, span)?;
                Ok(Flow::Normal)
            }
            StmtKind::Empty => Ok(Flow::Normal),
        }
    }

    fn scoped(&mut self, s: &Stmt) -> R<Flow> {
        let mark = self.env_len();
        let f = self.stmt(s);
        self.truncate_env(mark);
        f
    }

    fn message(&mut self, items: &[Printable]) -> R<String> {
        let mut msg = String::new();
        for it in items {
            match it {
                Printable::Str { value, .. } => msg.push_str(value),
                Printable::Expr(e) => {
                    let v = self.expr(e)?;
                    msg.push_str(&self.render(&v));
                }
            }
        }
        Ok(msg)
    }

    /// A value as CmdStan's `print` and `reject` write it: reals like C++ streams (six
    /// significant digits), containers in brackets, matrices row by row.
    fn render(&self, v: &Val) -> String {
        let sc = |s: Sc| match s {
            Sc::C(c) => format_stream_real(c),
            Sc::V(o) => {
                format_stream_real(self.b.buf.vals.get(o as usize).copied().unwrap_or(f64::NAN))
            }
        };
        let list = |items: Vec<String>| format!("[{}]", items.join(","));
        match v {
            Val::Int(i) => i.to_string(),
            Val::Real(s) => sc(*s),
            Val::Vector(e) | Val::RowVector(e) => {
                list((0..e.len()).map(|i| sc(e.get(i))).collect())
            }
            Val::Matrix(rows, cols, e) => list(
                (0..*rows)
                    .map(|r| list((0..*cols).map(|c| sc(e.get(r + c * rows))).collect()))
                    .collect(),
            ),
            Val::Array(xs) => list(xs.iter().map(|x| self.render(x)).collect()),
            Val::Tuple(xs) => format!(
                "({})",
                xs.iter()
                    .map(|x| self.render(x))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            // C++ streams write a complex number as `(re,im)`.
            Val::Complex(parts) => match (&parts.0, &parts.1) {
                (Val::Real(re), Val::Real(im)) => format!("({},{})", sc(*re), sc(*im)),
                (re, im) => {
                    let (mut r, mut i) = (Vec::new(), Vec::new());
                    re.flatten(&mut r);
                    im.flatten(&mut i);
                    list(
                        r.iter()
                            .zip(&i)
                            .map(|(a, b)| format!("({},{})", sc(*a), sc(*b)))
                            .collect(),
                    )
                }
            },
        }
    }

    /// Assignment to an lvalue, with compound operators.
    fn assign(&mut self, lhs: &LValue, op: AssignOp, rhs: Val) -> R<()> {
        let span = lhs.span;
        // `(a, b) = t;` unpacks a tuple (the right-hand side is evaluated whole first, so
        // `(a, b) = (b, a)` swaps).
        if let LValueKind::Tuple(items) = &lhs.kind {
            let Val::Tuple(values) = rhs else {
                return cerr("only a tuple can be unpacked", span);
            };
            if values.len() != items.len() {
                return cerr(
                    format!(
                        "a tuple of {} values unpacked into {} variables",
                        values.len(),
                        items.len()
                    ),
                    span,
                );
            }
            for (item, value) in items.iter().zip(values.iter()) {
                self.assign(item, op, value.clone())?;
            }
            return Ok(());
        }
        // Flatten `x[i][j, k]` into root name + index list.
        let mut groups: Vec<&[Index]> = Vec::new();
        let mut cur = lhs;
        let root = loop {
            match &cur.kind {
                LValueKind::Var(id) => break id,
                LValueKind::Index { base, indices } => {
                    groups.push(indices);
                    cur = base;
                }
                _ => return cerr("tuple assignment is not supported", span),
            }
        };
        groups.reverse();
        let mut ixs = Vec::new();
        for g in groups {
            ixs.extend(self.indices(g)?);
        }
        let slot = match self.lookup_index(&root.name) {
            Some(i) => i,
            None => return cerr(format!("unknown variable '{}'", root.name), span),
        };
        let rhs = match op.binary_op() {
            None => rhs,
            Some(bop) => {
                let old = self.env_val(slot).clone();
                let old = self.index(&old, &ixs, span)?;
                self.binop(bop, &old, &rhs, span)?
            }
        };
        // Take the value out so that indexing helpers may borrow the tracer mutably.
        let mut target = std::mem::replace(self.env_val_mut(slot), Val::Int(0));
        let res = self.assign_index(&mut target, &ixs, rhs, span);
        *self.env_val_mut(slot) = target;
        res
    }

    /// A fresh value of a declared type: NaN reals, sizes evaluated now. An empty array
    /// allocates no element (`array[0] vector[M]` with a huge `M` is valid).
    pub fn blank(&mut self, ty: &DeclType) -> R<Val> {
        let dims = self.array_dims(ty)?;
        let elem = if dims.contains(&0) {
            // Sizes are still evaluated (and checked) once, as for a non-empty array.
            self.elem_dims(&ty.elem)?;
            Val::Int(0)
        } else {
            self.blank_elem(&ty.elem)?
        };
        Ok(nest(&dims, &elem))
    }

    /// The dimensions of a declared type as `Val::dims` gives them for its blank value
    /// (nothing after an empty array dimension), without allocating the value: data sizes are
    /// checked against the data file before anything of the declared size exists.
    pub fn decl_dims(&mut self, ty: &DeclType) -> R<Vec<usize>> {
        let mut dims = self.array_dims(ty)?;
        let elem = self.elem_dims(&ty.elem)?;
        match dims.iter().position(|&n| n == 0) {
            Some(empty) => dims.truncate(empty + 1),
            None => dims.extend(elem),
        }
        Ok(dims)
    }

    fn array_dims(&mut self, ty: &DeclType) -> R<Vec<usize>> {
        let mut dims = Vec::with_capacity(ty.array_dims.len());
        for d in &ty.array_dims {
            let n = self.int_expr(d)?;
            if n < 0 {
                return eerr(
                    format!("array size must be non-negative, found {n}"),
                    d.span,
                );
            }
            dims.push(n as usize);
        }
        Ok(dims)
    }

    /// The dimensions of one element of a declared type (`[]` for scalars and tuples), its
    /// sizes evaluated in the order `blank_elem` evaluates them.
    fn elem_dims(&mut self, elem: &ElemType) -> R<Vec<usize>> {
        Ok(match &elem.shape {
            Shape::Int | Shape::Real | Shape::Complex => vec![],
            Shape::Vector { size }
            | Shape::RowVector { size }
            | Shape::ComplexVector { size }
            | Shape::ComplexRowVector { size } => vec![self.size(size)?],
            Shape::Matrix { rows, cols } => {
                let r = self.size(rows)?;
                let c = match cols {
                    Some(c) => self.size(c)?,
                    None => r,
                };
                vec![r, c]
            }
            Shape::ComplexMatrix { rows, cols } => vec![self.size(rows)?, self.size(cols)?],
            Shape::Tuple(items) => {
                for item in items {
                    self.decl_dims(item)?;
                }
                vec![]
            }
        })
    }

    fn size(&mut self, e: &Expr) -> R<usize> {
        let n = self.int_expr(e)?;
        if n < 0 {
            return eerr(format!("size must be non-negative, found {n}"), e.span);
        }
        Ok(n as usize)
    }

    fn blank_elem(&mut self, elem: &ElemType) -> R<Val> {
        let nan = |n: usize| nan_elems(n).map_err(|e| TraceErr::Eval(e, Span::DUMMY));
        let area = |r: usize, c: usize| {
            r.checked_mul(c).ok_or_else(|| {
                TraceErr::Eval(
                    EvalError::reject(format!("a {r} × {c} matrix is too large")),
                    Span::DUMMY,
                )
            })
        };
        Ok(match &elem.shape {
            Shape::Int => Val::Int(i32::MIN as i64),
            Shape::Real => Val::real(f64::NAN),
            Shape::Vector { size } => Val::Vector(nan(self.size(size)?)?),
            Shape::RowVector { size } => Val::RowVector(nan(self.size(size)?)?),
            Shape::Matrix { rows, cols } => {
                let r = self.size(rows)?;
                let c = match cols {
                    Some(c) => self.size(c)?,
                    None => r,
                };
                Val::Matrix(r, c, nan(area(r, c)?)?)
            }
            Shape::Tuple(items) => {
                let vals = items.iter().map(|t| self.blank(t)).collect::<R<Vec<_>>>()?;
                Val::Tuple(Arc::new(vals))
            }
            Shape::Complex => Val::complex(Val::real(f64::NAN), Val::real(f64::NAN)),
            Shape::ComplexVector { size } => {
                let n = self.size(size)?;
                Val::complex(Val::Vector(nan(n)?), Val::Vector(nan(n)?))
            }
            Shape::ComplexRowVector { size } => {
                let n = self.size(size)?;
                Val::complex(Val::RowVector(nan(n)?), Val::RowVector(nan(n)?))
            }
            Shape::ComplexMatrix { rows, cols } => {
                let r = self.size(rows)?;
                let c = self.size(cols)?;
                Val::complex(
                    Val::Matrix(r, c, nan(area(r, c)?)?),
                    Val::Matrix(r, c, nan(area(r, c)?)?),
                )
            }
        })
    }

    /// A built-in density by its family name, summed over vectorised arguments.
    pub fn density(&mut self, name: &str, args: Vec<Val>, propto: bool, span: Span) -> R<Sc> {
        if let Some(kind) = DistKind::lookup(name) {
            return self.dist_sum(kind, &args, propto, span);
        }
        if let Some(s) = self.multivariate_density(name, &args, propto, span)? {
            return Ok(s);
        }
        cerr(format!("distribution '{name}' is not supported"), span)
    }
}

impl<'p> Tracer<'p> {
    /// `T[L, U]`: the variate must lie in the bounds, and the density is renormalised by the
    /// probability of the interval (Stan: `lccdf(L)`, `lcdf(U)` or `log_diff_exp` of both;
    /// for integer variates the lower bound enters as `L − 1`).
    fn truncate(&mut self, name: &str, vals: &[Val], t: &Truncation, span: Span) -> R<()> {
        let Some(kind) = DistKind::lookup(name) else {
            return cerr(format!("truncation of '{name}' is not supported"), span);
        };
        let discrete = kind.discrete();
        let y = self.to_elems(&vals[0]);
        let n = y.len();
        let lower = match &t.lower {
            Some(e) => Some(self.expr(e)?),
            None => None,
        };
        let upper = match &t.upper {
            Some(e) => Some(self.expr(e)?),
            None => None,
        };
        // Bounds are scalars or one per variate.
        let lower_elems = lower.as_ref().map(|l| self.to_elems(l));
        let upper_elems = upper.as_ref().map(|u| self.to_elems(u));
        for b in lower_elems.iter().chain(upper_elems.iter()) {
            if b.len() != 1 && b.len() != n {
                return eerr(
                    format!("truncation bound has {} elements, the variate {n}", b.len()),
                    span,
                );
            }
        }
        let element = |e: &Elems, i: usize| if e.len() == 1 { e.get(0) } else { e.get(i) };
        // Out-of-bounds variates make the density zero.
        for i in 0..n {
            let yv = match y.get(i) {
                Sc::C(c) => c,
                Sc::V(_) => continue,
            };
            if let Some(l) = &lower_elems {
                if yv < self.value_of(element(l, i), span)? {
                    self.add_target_sc(Sc::C(f64::NEG_INFINITY));
                    return Ok(());
                }
            }
            if let Some(u) = &upper_elems {
                if yv > self.value_of(element(u, i), span)? {
                    self.add_target_sc(Sc::C(f64::NEG_INFINITY));
                    return Ok(());
                }
            }
        }
        // A scalar statement with scalar parameters and bounds: its normaliser is queued and
        // shared with every other statement of the same cdf, bounds and parameters.
        if n == 1 {
            let scalar = |v: &Val| match v {
                Val::Int(i) => Some(Sc::C(*i as f64)),
                Val::Real(s) => Some(*s),
                _ => None,
            };
            let params: Option<Vec<Sc>> = vals[1..].iter().map(scalar).collect();
            let lo = lower.as_ref().map(scalar);
            let hi = upper.as_ref().map(scalar);
            let cdf = if hi.is_none() {
                DistKind::cdf(name, true)
            } else {
                DistKind::cdf(name, false)
            };
            // `Some(None)`: a bound that is not a scalar.
            if let (Some(params), Some(cdf)) = (params, cdf) {
                if !matches!(lo, Some(None)) && !matches!(hi, Some(None)) {
                    let lo = lo.flatten().map(|l| {
                        if discrete {
                            self.sc_binary(BinaryFn::Add, l, Sc::C(-1.0))
                        } else {
                            l
                        }
                    });
                    if self.queue_truncation(cdf, lo, hi.flatten(), &params) {
                        return Ok(());
                    }
                }
            }
        }
        // The bound repeated once per variate, with the parameters broadcast as in the density.
        let at = |me: &mut Self, b: &Val, shift: f64| -> R<Vec<Val>> {
            let bs = me.to_elems(b);
            let bs = if shift != 0.0 {
                me.elems_binary(BinaryFn::Add, &bs, &Elems::C(Arc::new(vec![shift])))
            } else {
                bs
            };
            let rep = if n > 1 && bs.len() == 1 {
                Elems::from_scalars(vec![bs.get(0); n])
            } else {
                bs
            };
            let mut a = vec![if n > 1 {
                Val::Vector(rep)
            } else {
                Val::Real(rep.get(0))
            }];
            a.extend(vals[1..].iter().cloned());
            Ok(a)
        };
        let lcdf = DistKind::cdf(name, false);
        let lccdf = DistKind::cdf(name, true);
        let norm = match (&lower, &upper) {
            (None, None) => return Ok(()),
            (Some(l), None) => {
                let Some(k) = lccdf else {
                    return cerr(format!("{name} has no lccdf for truncation"), span);
                };
                let a = at(self, l, if discrete { -1.0 } else { 0.0 })?;
                self.dist_sum(k, &a, false, span)?
            }
            (None, Some(u)) => {
                let Some(k) = lcdf else {
                    return cerr(format!("{name} has no lcdf for truncation"), span);
                };
                let a = at(self, u, 0.0)?;
                self.dist_sum(k, &a, false, span)?
            }
            (Some(l), Some(u)) => {
                let Some(k) = lcdf else {
                    return cerr(format!("{name} has no lcdf for truncation"), span);
                };
                if n > 1 {
                    // Stan's vectorised truncation is per variate: the sum over i of
                    // log_diff_exp(lcdf(U_i | θ_i), lcdf(L_i | θ_i)).
                    return self.truncate_both_vectorised(k, vals, l, u, discrete, span);
                }
                let au = at(self, u, 0.0)?;
                let al = at(self, l, if discrete { -1.0 } else { 0.0 })?;
                let cu = self.dist_sum(k, &au, false, span)?;
                let cl = self.dist_sum(k, &al, false, span)?;
                self.sc_binary(BinaryFn::LogDiffExp, cu, cl)
            }
        };
        let neg = self.sc_unary(UnaryFn::Neg, norm);
        self.add_target_sc(neg);
        Ok(())
    }

    /// `y ~ D(θ) T[L, U]` with `n > 1` variates: subtracts Σᵢ log_diff_exp(lcdf(Uᵢ | θᵢ),
    /// lcdf(Lᵢ | θᵢ)), each argument broadcast when it is a scalar. When every parameter and
    /// bound is a scalar the n terms are equal: one is computed and scaled by n.
    fn truncate_both_vectorised(
        &mut self,
        lcdf: DistKind,
        vals: &[Val],
        lower: &Val,
        upper: &Val,
        discrete: bool,
        span: Span,
    ) -> R<()> {
        let n = self.to_elems(&vals[0]).len();
        let shift = if discrete { -1.0 } else { 0.0 };
        let lo = self.to_elems(lower);
        let lo = self.elems_binary(BinaryFn::Add, &lo, &Elems::C(Arc::new(vec![shift])));
        let hi = self.to_elems(upper);
        let params: Vec<Elems> = vals[1..].iter().map(|v| self.to_elems(v)).collect();
        let all_scalar = lo.len() == 1 && hi.len() == 1 && params.iter().all(|p| p.len() == 1);
        let terms = if all_scalar { 1 } else { n };
        let element = |e: &Elems, i: usize| if e.len() == 1 { e.get(0) } else { e.get(i) };
        let mut sum = Vec::with_capacity(terms);
        for i in 0..terms {
            let args = |bound: Sc| -> Vec<Val> {
                std::iter::once(Val::Real(bound))
                    .chain(params.iter().map(|p| Val::Real(element(p, i))))
                    .collect()
            };
            let cu = self.dist_sum(lcdf, &args(element(&hi, i)), false, span)?;
            let cl = self.dist_sum(lcdf, &args(element(&lo, i)), false, span)?;
            sum.push(self.sc_binary(BinaryFn::LogDiffExp, cu, cl));
        }
        let mut norm = Sc::C(0.0);
        for t in sum {
            norm = self.sc_binary(BinaryFn::Add, norm, t);
        }
        if terms == 1 {
            norm = self.sc_binary(BinaryFn::Mul, norm, Sc::C(n as f64));
        }
        let neg = self.sc_unary(UnaryFn::Neg, norm);
        self.add_target_sc(neg);
        Ok(())
    }
}

/// `n` NaNs, or an error where the memory cannot be had (Stan's `std::bad_alloc`): a declared
/// size from the data must not abort the process.
fn nan_elems(n: usize) -> Result<Elems, EvalError> {
    let mut values = Vec::new();
    values.try_reserve_exact(n).map_err(|_| {
        EvalError::reject(format!("cannot allocate {n} values for a declared size"))
    })?;
    values.resize(n, f64::NAN);
    Ok(Elems::C(Arc::new(values)))
}

/// An array of `dims` copies of `elem`.
pub fn nest(dims: &[usize], elem: &Val) -> Val {
    if dims.is_empty() {
        return elem.clone();
    }
    let inner = nest(&dims[1..], elem);
    Val::array(vec![inner; dims[0]])
}

impl From<EvalError> for TraceErr {
    fn from(e: EvalError) -> Self {
        TraceErr::Eval(e, Span::DUMMY)
    }
}

/// `x` as a default C++ output stream writes it (`%g` with six significant digits): `0.5`,
/// `1e-07`, `1.23457e+08`, `inf`, `nan`.
pub(crate) fn format_stream_real(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.into();
    }
    // Round to six significant digits first: the exponent is that of the rounded value.
    let sci = format!("{x:.5e}");
    let (mantissa, exp) = sci.split_once('e').expect("exponent");
    let exp: i32 = exp.parse().expect("exponent digits");
    let trim = |s: &str| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-5..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    } else {
        trim(&format!("{x:.*}", (5 - exp) as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::format_stream_real;

    #[test]
    fn print_formats_reals_like_cmdstan() {
        let f = format_stream_real;
        assert_eq!(f(0.5), "0.5");
        assert_eq!(f(1.0), "1");
        assert_eq!(f(-2.25), "-2.25");
        assert_eq!(f(1e-7), "1e-07");
        assert_eq!(f(123456789.0), "1.23457e+08");
        assert_eq!(f(999999.5), "1e+06");
        assert_eq!(f(0.0001234567), "0.000123457");
        assert_eq!(f(1.0 / 3.0), "0.333333");
        assert_eq!(f(f64::INFINITY), "inf");
        assert_eq!(f(f64::NAN), "nan");
    }
}
