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

fn strip_transform(t: &mut Transform) {
    match t {
        Transform::None => {}
        Transform::Bounds { lower, upper } => {
            strip_opt(lower);
            strip_opt(upper);
        }
        Transform::Affine { offset, multiplier } => {
            strip_opt(offset);
            strip_opt(multiplier);
        }
    }
}

fn strip_decl_type(ty: &mut DeclType) {
    ty.span = Span::DUMMY;
    ty.array_dims.iter_mut().for_each(strip_expr);
    match &mut ty.elem {
        ElemType::Int { transform } | ElemType::Real { transform } => strip_transform(transform),
        ElemType::Complex => {}
        ElemType::Vector { transform, size } | ElemType::RowVector { transform, size } => {
            strip_transform(transform);
            strip_expr(size);
        }
        ElemType::Matrix {
            transform,
            rows,
            cols,
        } => {
            strip_transform(transform);
            strip_expr(rows);
            strip_expr(cols);
        }
        ElemType::ComplexVector { size }
        | ElemType::ComplexRowVector { size }
        | ElemType::Simplex { size }
        | ElemType::UnitVector { size }
        | ElemType::SumToZeroVector { size }
        | ElemType::Ordered { size }
        | ElemType::PositiveOrdered { size }
        | ElemType::CholeskyFactorCorr { size }
        | ElemType::CorrMatrix { size }
        | ElemType::CovMatrix { size } => strip_expr(size),
        ElemType::ComplexMatrix { rows, cols }
        | ElemType::SumToZeroMatrix { rows, cols }
        | ElemType::ColumnStochasticMatrix { rows, cols }
        | ElemType::RowStochasticMatrix { rows, cols } => {
            strip_expr(rows);
            strip_expr(cols);
        }
        ElemType::CholeskyFactorCov { rows, cols } => {
            strip_expr(rows);
            strip_opt(cols);
        }
        ElemType::Tuple(items) => items.iter_mut().for_each(strip_decl_type),
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
