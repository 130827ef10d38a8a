//! Pretty-printer: syntax tree to canonical Stan source.
//!
//! The output re-parses to the same tree up to locations: `parse(print(p))` equals `p` after
//! [`Program::strip_locations`] on both. Parentheses written in the source are kept (they are
//! [`ExprKind::Paren`] nodes); parentheses are added only where a tree built by hand would
//! otherwise print ambiguously. Comments are not part of the tree and are not printed.

use std::fmt::Write as _;

use crate::ast::*;
use crate::lexer::Comment;
use crate::span::{FileId, SourceMap, Span};

const INDENT: &str = "  ";

/// Prints a whole program (without comments; see [`print_program_with_comments`]).
pub fn print_program(program: &Program) -> String {
    let mut p = Printer::default();
    p.program(program);
    p.out
}

/// Prints a whole program and puts back the comments of file `main` (comments from included
/// files are dropped with the `#include`, whose contents are printed inline). A comment keeps
/// its place between statements; one on the same line after a statement stays at the end of
/// that statement's last line; one inside a statement moves to the line after it.
pub(crate) fn print_program_with_comments(
    program: &Program,
    comments: &[Comment],
    sources: &SourceMap,
    main: FileId,
) -> String {
    let mut main_comments: Vec<&Comment> =
        comments.iter().filter(|c| c.span.file == main).collect();
    main_comments.sort_by_key(|c| c.span.start);
    let used = vec![false; main_comments.len()];
    let mut p = Printer {
        comments: Some(CommentState {
            text: sources.get(main).map(|f| f.text.as_str()).unwrap_or(""),
            file: main,
            comments: main_comments,
            used,
            next: 0,
        }),
        ..Printer::default()
    };
    p.program(program);
    p.flush_before(Span::new(main, u32::MAX, u32::MAX));
    p.out
}

/// Prints one expression.
pub fn print_expr(expr: &Expr) -> String {
    let mut out = String::new();
    write_expr(&mut out, expr);
    out
}

/// Comments waiting to be placed, in source order.
struct CommentState<'a> {
    text: &'a str,
    file: FileId,
    comments: Vec<&'a Comment>,
    /// Comments already printed out of order (trailing ones).
    used: Vec<bool>,
    /// All comments before this index are printed.
    next: usize,
}

#[derive(Default)]
struct Printer<'a> {
    out: String,
    depth: usize,
    comments: Option<CommentState<'a>>,
}

impl Printer<'_> {
    fn line(&mut self, text: &str) {
        for _ in 0..self.depth {
            self.out.push_str(INDENT);
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn program(&mut self, program: &Program) {
        if let Some(functions) = &program.functions {
            self.flush_before(functions.span);
            self.line("functions {");
            self.depth += 1;
            for f in &functions.functions {
                self.fundef(f);
            }
            self.depth -= 1;
            self.close(functions.span);
            self.after(functions.span);
        }
        for block in program.blocks() {
            self.flush_before(block.span);
            self.line(&format!("{} {{", block.kind.keyword()));
            self.depth += 1;
            for stmt in &block.stmts {
                self.stmt(stmt);
            }
            self.depth -= 1;
            self.close(block.span);
            self.after(block.span);
        }
    }

    /// Prints, each on its own line, the pending comments that start before `span`.
    fn flush_before(&mut self, span: Span) {
        let Some(state) = &mut self.comments else {
            return;
        };
        if span.file != state.file {
            return;
        }
        let mut pending = Vec::new();
        while state.next < state.comments.len() {
            let i = state.next;
            if !state.used[i] {
                if state.comments[i].span.start >= span.start {
                    break;
                }
                pending.push(state.comments[i].text.clone());
                state.used[i] = true;
            }
            state.next += 1;
        }
        for text in pending {
            self.comment_lines(&text);
        }
    }

    /// After a construct spanning `span` was printed: a comment on the same source line right
    /// after it goes at the end of the last printed line; comments inside it follow on their
    /// own lines.
    fn after(&mut self, span: Span) {
        let Some(state) = &mut self.comments else {
            return;
        };
        if span.file != state.file {
            return;
        }
        let trailing = (state.next..state.comments.len())
            .find(|&i| !state.used[i] && state.comments[i].span.start >= span.end);
        if let Some(i) = trailing {
            let c = state.comments[i];
            let between = state
                .text
                .get(span.end as usize..c.span.start as usize)
                .unwrap_or("\n");
            // Only blanks between: `x = 1; } // c` belongs to the `}`, not to `x = 1;`.
            let same_line = !between.contains('\n') && between.trim().is_empty();
            if same_line && self.out.ends_with('\n') {
                state.used[i] = true;
                self.out.pop();
                self.out.push(' ');
                self.out.push_str(&c.text);
                self.out.push('\n');
            }
        }
        self.flush_before(Span::new(span.file, span.end, span.end));
    }

    fn comment_lines(&mut self, text: &str) {
        let mut lines = text.split('\n');
        if let Some(first) = lines.next() {
            self.line(first.trim_end_matches('\r'));
        }
        // Later lines of a block comment are kept exactly as written.
        for rest in lines {
            self.out.push_str(rest);
            self.out.push('\n');
        }
    }

    /// Prints the `}` closing a construct spanning `span`, after any comments before it.
    fn close(&mut self, span: Span) {
        self.depth += 1;
        self.flush_before(Span::new(span.file, span.end.saturating_sub(1), span.end));
        self.depth -= 1;
        self.line("}");
    }

    fn fundef(&mut self, f: &FunDef) {
        self.flush_before(f.span);
        self.fundef_inner(f);
        self.after(f.span);
    }

    fn fundef_inner(&mut self, f: &FunDef) {
        let mut head = String::new();
        match &f.return_type {
            ReturnType::Void(_) => head.push_str("void"),
            ReturnType::Type(t) => write_unsized_type(&mut head, t),
        }
        let _ = write!(head, " {}(", f.name.name);
        for (i, arg) in f.args.iter().enumerate() {
            if i > 0 {
                head.push_str(", ");
            }
            if arg.data_only {
                head.push_str("data ");
            }
            write_unsized_type(&mut head, &arg.ty);
            let _ = write!(head, " {}", arg.name.name);
        }
        head.push(')');
        match &f.body {
            None => {
                head.push(';');
                self.line(&head);
            }
            Some(body) => match &body.kind {
                StmtKind::Block(stmts) => {
                    head.push_str(" {");
                    self.line(&head);
                    self.body(stmts);
                    self.close(body.span);
                }
                _ => {
                    // Bodies are always blocks when parsed; print anything else in braces.
                    head.push_str(" {");
                    self.line(&head);
                    self.depth += 1;
                    self.stmt(body);
                    self.depth -= 1;
                    self.line("}");
                }
            },
        }
    }

    fn body(&mut self, stmts: &[Stmt]) {
        self.depth += 1;
        for s in stmts {
            self.stmt(s);
        }
        self.depth -= 1;
    }

    /// Prints a statement that is the body of `for`/`while`/`if`: blocks open on the header
    /// line (`header {`), other statements go indented on the next line.
    fn controlled(&mut self, header: String, body: &Stmt) {
        match &body.kind {
            StmtKind::Block(stmts) => {
                self.line(&format!("{header} {{"));
                self.body(stmts);
                self.close(body.span);
            }
            _ => {
                self.line(&header);
                self.depth += 1;
                self.stmt(body);
                self.depth -= 1;
            }
        }
    }

    fn stmt(&mut self, stmt: &Stmt) {
        self.flush_before(stmt.span);
        self.stmt_inner(stmt);
        self.after(stmt.span);
    }

    fn stmt_inner(&mut self, stmt: &Stmt) {
        match &stmt.kind {
            StmtKind::VarDecl(decl) => {
                let mut s = String::new();
                write_decl_type(&mut s, &decl.ty);
                for (i, d) in decl.declarators.iter().enumerate() {
                    s.push_str(if i == 0 { " " } else { ", " });
                    s.push_str(&d.name.name);
                    if let Some(init) = &d.init {
                        s.push_str(" = ");
                        write_expr(&mut s, init);
                    }
                }
                s.push(';');
                self.line(&s);
            }
            StmtKind::Assign { lhs, op, rhs } => {
                let mut s = String::new();
                write_lvalue(&mut s, lhs);
                let _ = write!(s, " {} ", op.symbol());
                write_expr(&mut s, rhs);
                s.push(';');
                self.line(&s);
            }
            StmtKind::Tilde {
                lhs,
                dist,
                args,
                truncation,
            } => {
                let mut s = String::new();
                write_expr(&mut s, lhs);
                let _ = write!(s, " ~ {}(", dist.name);
                write_list(&mut s, args);
                s.push(')');
                if let Some(t) = truncation {
                    s.push_str(" T[");
                    if let Some(l) = &t.lower {
                        write_expr(&mut s, l);
                    }
                    s.push_str(", ");
                    if let Some(u) = &t.upper {
                        write_expr(&mut s, u);
                    }
                    s.push(']');
                }
                s.push(';');
                self.line(&s);
            }
            StmtKind::TargetPlusAssign(e) => {
                self.line(&format!("target += {};", print_expr(e)));
            }
            StmtKind::JacobianPlusAssign(e) => {
                self.line(&format!("jacobian += {};", print_expr(e)));
            }
            StmtKind::For {
                var,
                lower,
                upper,
                body,
            } => {
                let header = format!(
                    "for ({} in {}:{})",
                    var.name,
                    print_expr(lower),
                    print_expr(upper)
                );
                self.controlled(header, body);
            }
            StmtKind::Foreach {
                var,
                iterable,
                body,
            } => {
                let header = format!("for ({} in {})", var.name, print_expr(iterable));
                self.controlled(header, body);
            }
            StmtKind::While { cond, body } => {
                let header = format!("while ({})", print_expr(cond));
                self.controlled(header, body);
            }
            StmtKind::If { .. } => self.if_chain(stmt, ""),
            StmtKind::Break => self.line("break;"),
            StmtKind::Continue => self.line("continue;"),
            StmtKind::Return(None) => self.line("return;"),
            StmtKind::Return(Some(e)) => self.line(&format!("return {};", print_expr(e))),
            StmtKind::Print(items) => self.printables("print", items),
            StmtKind::Reject(items) => self.printables("reject", items),
            StmtKind::FatalError(items) => self.printables("fatal_error", items),
            StmtKind::Block(stmts) => {
                self.line("{");
                self.body(stmts);
                self.close(stmt.span);
            }
            StmtKind::Profile { name, body } => {
                self.line(&format!("profile(\"{name}\") {{"));
                self.body(body);
                self.close(stmt.span);
            }
            StmtKind::Call { name, args } => {
                let mut s = format!("{}(", name.name);
                write_list(&mut s, args);
                s.push_str(");");
                self.line(&s);
            }
            StmtKind::Empty => self.line(";"),
        }
    }

    /// `if (...) ... else if (...) ... else ...`, with `prefix` (`""` or `"else "`) before the
    /// first `if`.
    fn if_chain(&mut self, stmt: &Stmt, prefix: &str) {
        let StmtKind::If {
            cond,
            then_branch,
            else_branch,
        } = &stmt.kind
        else {
            return;
        };
        let header = format!("{prefix}if ({})", print_expr(cond));
        self.controlled(header, then_branch);
        if let Some(else_branch) = else_branch {
            match &else_branch.kind {
                StmtKind::If { .. } => self.if_chain(else_branch, "else "),
                _ => self.controlled("else".to_string(), else_branch),
            }
        }
    }

    fn printables(&mut self, keyword: &str, items: &[Printable]) {
        let mut s = format!("{keyword}(");
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                s.push_str(", ");
            }
            match item {
                Printable::Str { value, .. } => {
                    let _ = write!(s, "\"{value}\"");
                }
                Printable::Expr(e) => write_expr(&mut s, e),
            }
        }
        s.push_str(");");
        self.line(&s);
    }
}

fn write_list(out: &mut String, items: &[Expr]) {
    for (i, e) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_expr(out, e);
    }
}

fn write_unsized_type(out: &mut String, ty: &UnsizedType) {
    if ty.array_dims > 0 {
        let _ = write!(out, "array[{}] ", ",".repeat(ty.array_dims - 1));
    }
    let name = match &ty.elem {
        UnsizedElem::Int => "int",
        UnsizedElem::Real => "real",
        UnsizedElem::Complex => "complex",
        UnsizedElem::Vector => "vector",
        UnsizedElem::RowVector => "row_vector",
        UnsizedElem::Matrix => "matrix",
        UnsizedElem::ComplexVector => "complex_vector",
        UnsizedElem::ComplexRowVector => "complex_row_vector",
        UnsizedElem::ComplexMatrix => "complex_matrix",
        UnsizedElem::Tuple(items) => {
            out.push_str("tuple(");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_unsized_type(out, item);
            }
            out.push(')');
            return;
        }
    };
    out.push_str(name);
}

/// Bounds are parsed at additive precedence (so `>` ends them); wrap anything looser.
fn write_bound(out: &mut String, e: &Expr) {
    write_expr_at(out, e, BinOp::Add.precedence());
}

fn write_transform(out: &mut String, t: &Constraint) {
    let parts: Vec<(&str, &Expr)> = match t {
        Constraint::Bounds { lower, upper } => [("lower", lower), ("upper", upper)]
            .into_iter()
            .filter_map(|(k, v)| v.as_ref().map(|v| (k, v)))
            .collect(),
        Constraint::Affine { offset, multiplier } => {
            [("offset", offset), ("multiplier", multiplier)]
                .into_iter()
                .filter_map(|(k, v)| v.as_ref().map(|v| (k, v)))
                .collect()
        }
        _ => return,
    };
    if parts.is_empty() {
        return;
    }
    out.push('<');
    for (i, (key, value)) in parts.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{key}=");
        write_bound(out, value);
    }
    out.push('>');
}

fn write_sizes(out: &mut String, sizes: &[&Expr]) {
    out.push('[');
    for (i, e) in sizes.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_expr(out, e);
    }
    out.push(']');
}

fn write_decl_type(out: &mut String, ty: &DeclType) {
    if !ty.array_dims.is_empty() {
        out.push_str("array");
        let dims: Vec<&Expr> = ty.array_dims.iter().collect();
        write_sizes(out, &dims);
        out.push(' ');
    }
    if let Shape::Tuple(items) = &ty.elem.shape {
        out.push_str("tuple(");
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            write_decl_type(out, item);
        }
        out.push(')');
        return;
    }
    let name = ty.elem.keyword();
    out.push_str(name);
    write_transform(out, &ty.elem.constraint);
    let sizes = ty.elem.shape.sizes();
    if !sizes.is_empty() {
        write_sizes(out, &sizes);
    }
}

fn write_lvalue(out: &mut String, lv: &LValue) {
    match &lv.kind {
        LValueKind::Var(ident) => out.push_str(&ident.name),
        LValueKind::Index { base, indices } => {
            write_lvalue(out, base);
            write_indices(out, indices);
        }
        LValueKind::TupleProj { base, index } => {
            write_lvalue(out, base);
            let _ = write!(out, ".{index}");
        }
        LValueKind::Tuple(items) => {
            out.push('(');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_lvalue(out, item);
            }
            out.push(')');
        }
    }
}

fn write_indices(out: &mut String, indices: &[Index]) {
    out.push('[');
    for (i, index) in indices.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        match index {
            Index::All => out.push(':'),
            Index::Single(e) => write_expr(out, e),
            Index::Lower(e) => {
                write_expr(out, e);
                out.push(':');
            }
            Index::Upper(e) => {
                out.push(':');
                write_expr(out, e);
            }
            Index::Range(a, b) => {
                write_expr(out, a);
                out.push(':');
                write_expr(out, b);
            }
        }
    }
    out.push(']');
}

/// Binding strength of an expression's top operator (higher is tighter).
fn expr_precedence(e: &Expr) -> u8 {
    match &e.kind {
        ExprKind::Ternary { .. } => 0,
        ExprKind::Binary { op, .. } => op.precedence(),
        ExprKind::Unary { .. } => PREFIX_PRECEDENCE,
        _ => POSTFIX_PRECEDENCE,
    }
}

/// Postfix operators and primaries bind tighter than any binary operator.
const POSTFIX_PRECEDENCE: u8 = 10;

fn write_expr(out: &mut String, e: &Expr) {
    write_expr_at(out, e, 0);
}

/// Writes `e` where the context requires binding strength at least `min`, adding
/// parentheses when `e` binds more loosely.
fn write_expr_at(out: &mut String, e: &Expr, min: u8) {
    if expr_precedence(e) < min {
        out.push('(');
        write_expr_inner(out, e);
        out.push(')');
    } else {
        write_expr_inner(out, e);
    }
}

fn write_expr_inner(out: &mut String, e: &Expr) {
    match &e.kind {
        ExprKind::IntLit(v) => {
            let _ = write!(out, "{v}");
        }
        ExprKind::RealLit { text, value } => {
            if text.is_empty() {
                let _ = write!(out, "{value:?}");
            } else {
                out.push_str(text);
            }
        }
        ExprKind::ImagLit { text, value } => {
            if text.is_empty() {
                let _ = write!(out, "{value:?}i");
            } else {
                let _ = write!(out, "{text}i");
            }
        }
        ExprKind::Var(ident) => out.push_str(&ident.name),
        ExprKind::Paren(inner) => {
            out.push('(');
            write_expr(out, inner);
            out.push(')');
        }
        ExprKind::Binary { op, lhs, rhs } => {
            let p = op.precedence();
            let (left_min, right_min) = if op.is_right_assoc() {
                (p + 1, p)
            } else {
                (p, p + 1)
            };
            write_expr_at(out, lhs, left_min);
            let _ = write!(out, " {} ", op.symbol());
            // A prefix operator may start any right operand: `a ^ -b`, `a * -b`.
            if matches!(rhs.kind, ExprKind::Unary { .. }) {
                write_expr(out, rhs);
            } else {
                write_expr_at(out, rhs, right_min);
            }
        }
        ExprKind::Unary { op, operand } => {
            out.push_str(op.symbol());
            write_expr_at(out, operand, PREFIX_PRECEDENCE);
        }
        ExprKind::Transpose(base) => {
            write_expr_at(out, base, POSTFIX_PRECEDENCE);
            out.push('\'');
        }
        ExprKind::Ternary {
            cond,
            then_expr,
            else_expr,
        } => {
            write_expr_at(out, cond, 1);
            out.push_str(" ? ");
            write_expr(out, then_expr);
            out.push_str(" : ");
            write_expr(out, else_expr);
        }
        ExprKind::Call { name, args } => {
            let _ = write!(out, "{}(", name.name);
            write_list(out, args);
            out.push(')');
        }
        ExprKind::CondDistCall { name, args } => {
            let _ = write!(out, "{}(", name.name);
            if let Some((first, rest)) = args.split_first() {
                write_expr(out, first);
                out.push_str(" | ");
                write_list(out, rest);
            }
            out.push(')');
        }
        ExprKind::Target => out.push_str("target()"),
        ExprKind::Index { base, indices } => {
            write_expr_at(out, base, POSTFIX_PRECEDENCE);
            write_indices(out, indices);
        }
        ExprKind::TupleProj { base, index } => {
            write_expr_at(out, base, POSTFIX_PRECEDENCE);
            let _ = write!(out, ".{index}");
        }
        ExprKind::Array(items) => {
            out.push('{');
            write_list(out, items);
            out.push('}');
        }
        ExprKind::RowVector(items) => {
            out.push('[');
            write_list(out, items);
            out.push(']');
        }
        ExprKind::Tuple(items) => {
            out.push('(');
            write_list(out, items);
            out.push(')');
        }
    }
}
