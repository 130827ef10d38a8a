//! Helpers shared by the integration tests.
#![allow(dead_code)]

use hazel_syntax::ast::*;
use hazel_syntax::{parse_str, ParseResult};

/// Parses `text`, panicking with rendered diagnostics on any error.
pub fn parse_ok(text: &str) -> Program {
    let result = parse_str("test.stan", text);
    match result.program {
        Some(p) if !result.has_errors() => p,
        _ => panic!(
            "unexpected errors:\n{}\nsource:\n{text}",
            result.render_diagnostics()
        ),
    }
}

/// Parses `text`, expecting errors; returns the result.
pub fn parse_err(text: &str) -> ParseResult {
    let result = parse_str("test.stan", text);
    assert!(
        result.has_errors(),
        "expected errors, got none for:\n{text}"
    );
    assert!(result.program.is_none());
    result
}

/// Parses `expr` as the initialiser of a transformed-data declaration and returns it.
pub fn parse_expr(expr: &str) -> Expr {
    let program = parse_ok(&format!("transformed data {{ real x__ = {expr}; }}"));
    let block = program.transformed_data.expect("block");
    match block.stmts.into_iter().next().expect("stmt").kind {
        StmtKind::VarDecl(mut d) => d.declarators.remove(0).init.expect("init"),
        other => panic!("not a declaration: {other:?}"),
    }
}

/// Fully parenthesised form of an expression, to test grouping.
pub fn sexpr(e: &Expr) -> String {
    match &e.kind {
        ExprKind::IntLit(v) => v.to_string(),
        ExprKind::RealLit { text, .. } => text.clone(),
        ExprKind::ImagLit { text, .. } => format!("{text}i"),
        ExprKind::Var(i) => i.name.clone(),
        ExprKind::Paren(inner) => sexpr(inner),
        ExprKind::Binary { op, lhs, rhs } => {
            format!("({} {} {})", sexpr(lhs), op.symbol(), sexpr(rhs))
        }
        ExprKind::Unary { op, operand } => format!("({}{})", op.symbol(), sexpr(operand)),
        ExprKind::Transpose(b) => format!("({}')", sexpr(b)),
        ExprKind::Ternary {
            cond,
            then_expr,
            else_expr,
        } => format!(
            "({} ? {} : {})",
            sexpr(cond),
            sexpr(then_expr),
            sexpr(else_expr)
        ),
        ExprKind::Call { name, args } => format!(
            "{}({})",
            name.name,
            args.iter().map(sexpr).collect::<Vec<_>>().join(", ")
        ),
        ExprKind::CondDistCall { name, args } => format!(
            "{}({} | {})",
            name.name,
            sexpr(&args[0]),
            args[1..].iter().map(sexpr).collect::<Vec<_>>().join(", ")
        ),
        ExprKind::Target => "target()".into(),
        ExprKind::Index { base, indices } => format!(
            "{}[{}]",
            sexpr(base),
            indices
                .iter()
                .map(|i| match i {
                    Index::All => ":".to_string(),
                    Index::Single(e) => sexpr(e),
                    Index::Lower(e) => format!("{}:", sexpr(e)),
                    Index::Upper(e) => format!(":{}", sexpr(e)),
                    Index::Range(a, b) => format!("{}:{}", sexpr(a), sexpr(b)),
                })
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ExprKind::TupleProj { base, index } => format!("{}.{index}", sexpr(base)),
        ExprKind::Array(items) => format!(
            "{{{}}}",
            items.iter().map(sexpr).collect::<Vec<_>>().join(", ")
        ),
        ExprKind::RowVector(items) => format!(
            "[{}]",
            items.iter().map(sexpr).collect::<Vec<_>>().join(", ")
        ),
        ExprKind::Tuple(items) => format!(
            "tuple({})",
            items.iter().map(sexpr).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// Asserts that `parse(print(p)) == p` up to locations, and that printing is a fixed point.
pub fn assert_round_trip(name: &str, program: &Program) {
    let printed = hazel_syntax::pretty::print_program(program);
    let reparsed = parse_str(name, &printed);
    let Some(mut again) = reparsed.program.clone() else {
        panic!(
            "{name}: printed program does not parse:\n{}\n--- printed ---\n{printed}",
            reparsed.render_diagnostics()
        );
    };
    let mut original = program.clone();
    original.strip_locations();
    again.strip_locations();
    assert!(
        original == again,
        "{name}: round trip changed the tree\n--- printed ---\n{printed}"
    );
    let printed_twice = hazel_syntax::pretty::print_program(&again);
    assert_eq!(
        printed, printed_twice,
        "{name}: printing is not a fixed point"
    );
}
