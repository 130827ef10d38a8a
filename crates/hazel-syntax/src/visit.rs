//! Whole-tree traversals over the syntax tree.

use crate::ast::*;
use crate::span::Span;

/// Resets all spans to [`Span::DUMMY`] and all node ids to 0 (see
/// [`Program::strip_locations`]).
pub(crate) fn strip_locations(program: &mut Program) {
    program.node_count = 0;
    if let Some(functions) = &mut program.functions {
        functions.span = Span::DUMMY;
        for f in &mut functions.functions {
            f.span = Span::DUMMY;
            strip_return_type(&mut f.return_type);
            strip_ident(&mut f.name);
            for arg in &mut f.args {
                arg.span = Span::DUMMY;
                strip_unsized(&mut arg.ty);
                strip_ident(&mut arg.name);
            }
            if let Some(body) = &mut f.body {
                strip_stmt(body);
            }
        }
    }
    for block in [
        &mut program.data,
        &mut program.transformed_data,
        &mut program.parameters,
        &mut program.transformed_parameters,
        &mut program.model,
        &mut program.generated_quantities,
    ]
    .into_iter()
    .flatten()
    {
        block.span = Span::DUMMY;
        block.stmts.iter_mut().for_each(strip_stmt);
    }
}

fn strip_ident(ident: &mut Ident) {
    ident.span = Span::DUMMY;
}

fn strip_return_type(rt: &mut ReturnType) {
    match rt {
        ReturnType::Void(span) => *span = Span::DUMMY,
        ReturnType::Type(ty) => strip_unsized(ty),
    }
}

fn strip_unsized(ty: &mut UnsizedType) {
    ty.span = Span::DUMMY;
    if let UnsizedElem::Tuple(items) = &mut ty.elem {
        items.iter_mut().for_each(strip_unsized);
    }
}

fn strip_opt(e: &mut Option<Expr>) {
    if let Some(e) = e {
        strip_expr(e);
    }
}

fn strip_decl_type(ty: &mut DeclType) {
    ty.span = Span::DUMMY;
    ty.array_dims.iter_mut().for_each(strip_expr);
    ty.elem
        .constraint
        .exprs_mut()
        .into_iter()
        .for_each(strip_expr);
    ty.elem.shape.sizes_mut().into_iter().for_each(strip_expr);
    if let Shape::Tuple(items) = &mut ty.elem.shape {
        items.iter_mut().for_each(strip_decl_type);
    }
}

fn strip_printables(items: &mut [Printable]) {
    for p in items {
        match p {
            Printable::Str { span, .. } => *span = Span::DUMMY,
            Printable::Expr(e) => strip_expr(e),
        }
    }
}

fn strip_stmt(stmt: &mut Stmt) {
    stmt.id = NodeId(0);
    stmt.span = Span::DUMMY;
    match &mut stmt.kind {
        StmtKind::VarDecl(decl) => {
            strip_decl_type(&mut decl.ty);
            for d in &mut decl.declarators {
                strip_ident(&mut d.name);
                strip_opt(&mut d.init);
            }
        }
        StmtKind::Assign { lhs, rhs, .. } => {
            strip_lvalue(lhs);
            strip_expr(rhs);
        }
        StmtKind::Tilde {
            lhs,
            dist,
            args,
            truncation,
        } => {
            strip_expr(lhs);
            strip_ident(dist);
            args.iter_mut().for_each(strip_expr);
            if let Some(t) = truncation {
                t.span = Span::DUMMY;
                strip_opt(&mut t.lower);
                strip_opt(&mut t.upper);
            }
        }
        StmtKind::TargetPlusAssign(e) | StmtKind::JacobianPlusAssign(e) => strip_expr(e),
        StmtKind::For {
            var,
            lower,
            upper,
            body,
        } => {
            strip_ident(var);
            strip_expr(lower);
            strip_expr(upper);
            strip_stmt(body);
        }
        StmtKind::Foreach {
            var,
            iterable,
            body,
        } => {
            strip_ident(var);
            strip_expr(iterable);
            strip_stmt(body);
        }
        StmtKind::While { cond, body } => {
            strip_expr(cond);
            strip_stmt(body);
        }
        StmtKind::If {
            cond,
            then_branch,
            else_branch,
        } => {
            strip_expr(cond);
            strip_stmt(then_branch);
            if let Some(e) = else_branch {
                strip_stmt(e);
            }
        }
        StmtKind::Break | StmtKind::Continue | StmtKind::Empty => {}
        StmtKind::Return(e) => strip_opt(e),
        StmtKind::Print(items) | StmtKind::Reject(items) | StmtKind::FatalError(items) => {
            strip_printables(items)
        }
        StmtKind::Block(stmts) | StmtKind::Profile { body: stmts, .. } => {
            stmts.iter_mut().for_each(strip_stmt)
        }
        StmtKind::Call { name, args } => {
            strip_ident(name);
            args.iter_mut().for_each(strip_expr);
        }
    }
}

fn strip_lvalue(lv: &mut LValue) {
    lv.id = NodeId(0);
    lv.span = Span::DUMMY;
    match &mut lv.kind {
        LValueKind::Var(ident) => strip_ident(ident),
        LValueKind::Index { base, indices } => {
            strip_lvalue(base);
            indices.iter_mut().for_each(strip_index);
        }
        LValueKind::TupleProj { base, .. } => strip_lvalue(base),
        LValueKind::Tuple(items) => items.iter_mut().for_each(strip_lvalue),
    }
}

fn strip_index(index: &mut Index) {
    match index {
        Index::All => {}
        Index::Single(e) | Index::Lower(e) | Index::Upper(e) => strip_expr(e),
        Index::Range(a, b) => {
            strip_expr(a);
            strip_expr(b);
        }
    }
}

fn strip_expr(expr: &mut Expr) {
    expr.id = NodeId(0);
    expr.span = Span::DUMMY;
    match &mut expr.kind {
        ExprKind::IntLit(_)
        | ExprKind::RealLit { .. }
        | ExprKind::ImagLit { .. }
        | ExprKind::Target => {}
        ExprKind::Var(ident) => strip_ident(ident),
        ExprKind::Paren(e) | ExprKind::Transpose(e) => strip_expr(e),
        ExprKind::Unary { operand, .. } => strip_expr(operand),
        ExprKind::Binary { lhs, rhs, .. } => {
            strip_expr(lhs);
            strip_expr(rhs);
        }
        ExprKind::Ternary {
            cond,
            then_expr,
            else_expr,
        } => {
            strip_expr(cond);
            strip_expr(then_expr);
            strip_expr(else_expr);
        }
        ExprKind::Call { name, args } | ExprKind::CondDistCall { name, args } => {
            strip_ident(name);
            args.iter_mut().for_each(strip_expr);
        }
        ExprKind::Index { base, indices } => {
            strip_expr(base);
            indices.iter_mut().for_each(strip_index);
        }
        ExprKind::TupleProj { base, .. } => strip_expr(base),
        ExprKind::Array(items) | ExprKind::RowVector(items) | ExprKind::Tuple(items) => {
            items.iter_mut().for_each(strip_expr)
        }
    }
}

/// Read-only traversal hooks. Every method has an empty default; [`walk_program`] calls
/// `stmt` before a statement's children, `expr` before an expression's children, and
/// `decl_type` / `unsized_type` for every type (tuple components included).
pub trait Visitor {
    fn stmt(&mut self, _stmt: &Stmt) {}
    fn expr(&mut self, _expr: &Expr) {}
    fn lvalue(&mut self, _lvalue: &LValue) {}
    fn decl_type(&mut self, _ty: &DeclType) {}
    fn unsized_type(&mut self, _ty: &UnsizedType) {}
    fn fundef(&mut self, _fundef: &FunDef) {}
}

/// Calls `f` on `expr` and every subexpression (indexes included), parents before children.
pub fn for_each_subexpr(expr: &Expr, f: impl FnMut(&Expr)) {
    struct Exprs<F>(F);
    impl<F: FnMut(&Expr)> Visitor for Exprs<F> {
        fn expr(&mut self, expr: &Expr) {
            (self.0)(expr)
        }
    }
    walk_expr(expr, &mut Exprs(f));
}

/// Whether `expr` or any of its subexpressions satisfies `pred`.
pub fn any_subexpr(expr: &Expr, mut pred: impl FnMut(&Expr) -> bool) -> bool {
    let mut found = false;
    for_each_subexpr(expr, |e| found = found || pred(e));
    found
}

/// Visits the whole program in source order (functions first, then the blocks).
pub fn walk_program(program: &Program, v: &mut dyn Visitor) {
    if let Some(functions) = &program.functions {
        for f in &functions.functions {
            v.fundef(f);
            if let ReturnType::Type(t) = &f.return_type {
                walk_unsized(t, v);
            }
            for arg in &f.args {
                walk_unsized(&arg.ty, v);
            }
            if let Some(body) = &f.body {
                walk_stmt(body, v);
            }
        }
    }
    for block in program.blocks() {
        for s in &block.stmts {
            walk_stmt(s, v);
        }
    }
}

fn walk_unsized(ty: &UnsizedType, v: &mut dyn Visitor) {
    v.unsized_type(ty);
    if let UnsizedElem::Tuple(items) = &ty.elem {
        for item in items {
            walk_unsized(item, v);
        }
    }
}

fn walk_opt(e: &Option<Expr>, v: &mut dyn Visitor) {
    if let Some(e) = e {
        walk_expr(e, v);
    }
}

/// Visits a declared type: array sizes, constraint expressions, element sizes, components.
pub(crate) fn walk_decl_type(ty: &DeclType, v: &mut dyn Visitor) {
    v.decl_type(ty);
    for e in &ty.array_dims {
        walk_expr(e, v);
    }
    for e in ty.elem.constraint.exprs() {
        walk_expr(e, v);
    }
    for e in ty.elem.shape.sizes() {
        walk_expr(e, v);
    }
    if let Shape::Tuple(items) = &ty.elem.shape {
        for item in items {
            walk_decl_type(item, v);
        }
    }
}

fn walk_printables(items: &[Printable], v: &mut dyn Visitor) {
    for p in items {
        if let Printable::Expr(e) = p {
            walk_expr(e, v);
        }
    }
}

/// Visits a statement and everything inside it.
pub fn walk_stmt(stmt: &Stmt, v: &mut dyn Visitor) {
    v.stmt(stmt);
    match &stmt.kind {
        StmtKind::VarDecl(decl) => {
            walk_decl_type(&decl.ty, v);
            for d in &decl.declarators {
                walk_opt(&d.init, v);
            }
        }
        StmtKind::Assign { lhs, rhs, .. } => {
            walk_lvalue(lhs, v);
            walk_expr(rhs, v);
        }
        StmtKind::Tilde {
            lhs,
            args,
            truncation,
            ..
        } => {
            walk_expr(lhs, v);
            for a in args {
                walk_expr(a, v);
            }
            if let Some(t) = truncation {
                walk_opt(&t.lower, v);
                walk_opt(&t.upper, v);
            }
        }
        StmtKind::TargetPlusAssign(e) | StmtKind::JacobianPlusAssign(e) => walk_expr(e, v),
        StmtKind::For {
            lower, upper, body, ..
        } => {
            walk_expr(lower, v);
            walk_expr(upper, v);
            walk_stmt(body, v);
        }
        StmtKind::Foreach { iterable, body, .. } => {
            walk_expr(iterable, v);
            walk_stmt(body, v);
        }
        StmtKind::While { cond, body } => {
            walk_expr(cond, v);
            walk_stmt(body, v);
        }
        StmtKind::If {
            cond,
            then_branch,
            else_branch,
        } => {
            walk_expr(cond, v);
            walk_stmt(then_branch, v);
            if let Some(e) = else_branch {
                walk_stmt(e, v);
            }
        }
        StmtKind::Break | StmtKind::Continue | StmtKind::Empty => {}
        StmtKind::Return(e) => walk_opt(e, v),
        StmtKind::Print(items) | StmtKind::Reject(items) | StmtKind::FatalError(items) => {
            walk_printables(items, v)
        }
        StmtKind::Block(stmts) | StmtKind::Profile { body: stmts, .. } => {
            for s in stmts {
                walk_stmt(s, v);
            }
        }
        StmtKind::Call { args, .. } => {
            for a in args {
                walk_expr(a, v);
            }
        }
    }
}

/// Visits an lvalue and the index expressions inside it.
pub(crate) fn walk_lvalue(lv: &LValue, v: &mut dyn Visitor) {
    v.lvalue(lv);
    match &lv.kind {
        LValueKind::Var(_) => {}
        LValueKind::Index { base, indices } => {
            walk_lvalue(base, v);
            for i in indices {
                walk_index(i, v);
            }
        }
        LValueKind::TupleProj { base, .. } => walk_lvalue(base, v),
        LValueKind::Tuple(items) => {
            for item in items {
                walk_lvalue(item, v);
            }
        }
    }
}

fn walk_index(index: &Index, v: &mut dyn Visitor) {
    match index {
        Index::All => {}
        Index::Single(e) | Index::Lower(e) | Index::Upper(e) => walk_expr(e, v),
        Index::Range(a, b) => {
            walk_expr(a, v);
            walk_expr(b, v);
        }
    }
}

/// Visits an expression and its subexpressions (pre-order).
pub fn walk_expr(expr: &Expr, v: &mut dyn Visitor) {
    v.expr(expr);
    match &expr.kind {
        ExprKind::IntLit(_)
        | ExprKind::RealLit { .. }
        | ExprKind::ImagLit { .. }
        | ExprKind::Var(_)
        | ExprKind::Target => {}
        ExprKind::Paren(e) | ExprKind::Transpose(e) => walk_expr(e, v),
        ExprKind::Unary { operand, .. } => walk_expr(operand, v),
        ExprKind::Binary { lhs, rhs, .. } => {
            walk_expr(lhs, v);
            walk_expr(rhs, v);
        }
        ExprKind::Ternary {
            cond,
            then_expr,
            else_expr,
        } => {
            walk_expr(cond, v);
            walk_expr(then_expr, v);
            walk_expr(else_expr, v);
        }
        ExprKind::Call { args, .. }
        | ExprKind::CondDistCall { args, .. }
        | ExprKind::Array(args)
        | ExprKind::RowVector(args)
        | ExprKind::Tuple(args) => {
            for a in args {
                walk_expr(a, v);
            }
        }
        ExprKind::Index { base, indices } => {
            walk_expr(base, v);
            for i in indices {
                walk_index(i, v);
            }
        }
        ExprKind::TupleProj { base, .. } => walk_expr(base, v),
    }
}
