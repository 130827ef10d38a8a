//! Parser unit tests: precedence, every construct, removed syntax, recovery, limits, includes.

mod common;

use std::collections::HashMap;
use std::path::PathBuf;

use common::*;
use hazel_syntax::ast::*;
use hazel_syntax::{parse_str, parse_with_loader, Span};

fn grouping(expr: &str) -> String {
    sexpr(&parse_expr(expr))
}

#[test]
fn precedence_table() {
    let cases = [
        // Additive vs multiplicative, left associativity.
        ("a + b * c", "(a + (b * c))"),
        ("a - b - c", "((a - b) - c)"),
        ("a / b / c", "((a / b) / c)"),
        // `.*`, `./`, `%` share the level of `*` and `/` (as stanc implements).
        ("a * b .* c", "((a * b) .* c)"),
        ("a .* b * c", "((a .* b) * c)"),
        ("a ./ b / c", "((a ./ b) / c)"),
        ("a % b * c", "((a % b) * c)"),
        // `%/%` shares the level of `\\`, tighter than `*`.
        ("a %/% b * c", "((a %/% b) * c)"),
        ("a * b %/% c", "(a * (b %/% c))"),
        ("a %/% b \\ c", "((a %/% b) \\ c)"),
        ("-a %/% b", "((-a) %/% b)"),
        // Left division binds tighter than `*`.
        ("a * b \\ c", "(a * (b \\ c))"),
        ("a \\ b * c", "((a \\ b) * c)"),
        ("a \\ b \\ c", "((a \\ b) \\ c)"),
        // Exponentiation: right associative, tighter than unary minus.
        ("a ^ b ^ c", "(a ^ (b ^ c))"),
        ("a .^ b .^ c", "(a .^ (b .^ c))"),
        ("-a ^ b", "(-(a ^ b))"),
        ("-a .^ b", "(-(a .^ b))"),
        ("a ^ -b", "(a ^ (-b))"),
        ("-a * b", "((-a) * b)"),
        ("!a && b", "((!a) && b)"),
        ("- - a", "(-(-a))"),
        ("+a - b", "((+a) - b)"),
        // Unary minus vs left division.
        ("-a \\ b", "((-a) \\ b)"),
        // Postfix transpose and indexing bind tightest.
        ("-a'", "(-(a'))"),
        ("a ^ b'", "(a ^ (b'))"),
        ("a'[1]", "(a')[1]"),
        ("a[1]'", "(a[1]')"),
        ("a' * b", "((a') * b)"),
        // Comparison and logic.
        ("a < b == c > d", "((a < b) == (c > d))"),
        ("a == b != c", "((a == b) != c)"),
        ("a || b && c", "(a || (b && c))"),
        ("a && b || c && d", "((a && b) || (c && d))"),
        ("a + b < c * d", "((a + b) < (c * d))"),
        ("a <= b >= c", "((a <= b) >= c)"),
        // Ternary: lowest, right associative.
        ("a ? b : c ? d : e", "(a ? b : (c ? d : e))"),
        ("a || b ? c + d : e", "((a || b) ? (c + d) : e)"),
        ("a ? b ? c : d : e", "(a ? (b ? c : d) : e)"),
        // Parentheses group.
        ("(a + b) * c", "((a + b) * c)"),
        ("-(a ^ b)", "(-(a ^ b))"),
        ("(-a) ^ b", "((-a) ^ b)"),
    ];
    for (src, want) in cases {
        assert_eq!(grouping(src), want, "grouping of `{src}`");
    }
}

#[test]
fn literals() {
    let e = parse_expr("1e-3");
    assert!(matches!(e.kind, ExprKind::RealLit { value, .. } if value == 1e-3));
    for (src, value) in [(".5", 0.5), ("2.", 2.0), ("1.5E+2", 150.0), ("3e2", 300.0)] {
        match parse_expr(src).kind {
            ExprKind::RealLit { value: v, text } => {
                assert_eq!(v, value, "{src}");
                assert_eq!(text, src);
            }
            other => panic!("{src}: {other:?}"),
        }
    }
    assert!(matches!(parse_expr("42").kind, ExprKind::IntLit(42)));
    match parse_expr("2i").kind {
        ExprKind::ImagLit { value, .. } => assert_eq!(value, 2.0),
        other => panic!("{other:?}"),
    }
    match parse_expr("1.5i").kind {
        ExprKind::ImagLit { value, .. } => assert_eq!(value, 1.5),
        other => panic!("{other:?}"),
    }
    // `2 i` is not an imaginary literal, and `2if` is an invalid number.
    parse_err("transformed data { complex z = 2if; }");
    let r = parse_err("transformed data { int n = 3000000000; }");
    assert!(r.render_diagnostics().contains("too large"));
}

#[test]
fn indexing_forms() {
    assert_eq!(grouping("a[2:]"), "a[2:]");
    assert_eq!(grouping("a[:3]"), "a[:3]");
    assert_eq!(grouping("a[2:3]"), "a[2:3]");
    assert_eq!(grouping("a[:]"), "a[:]");
    assert_eq!(grouping("a[idxs]"), "a[idxs]");
    assert_eq!(grouping("a[i, j]"), "a[i, j]");
    assert_eq!(grouping("a[i][j]"), "a[i][j]");
    assert_eq!(
        grouping("a[i + 1:n - 1, :, k:]"),
        "a[(i + 1):(n - 1), :, k:]"
    );
    assert_eq!(grouping("f(x)[1]"), "f(x)[1]");
    // As in stanc, an omitted index means "all".
    assert_eq!(grouping("a[]"), "a[:]");
    assert_eq!(grouping("a[, 1]"), "a[:, 1]");
    assert_eq!(grouping("a[1, ]"), "a[1, :]");
}

#[test]
fn containers_tuples_and_calls() {
    assert_eq!(grouping("{1, 2, 3}"), "{1, 2, 3}");
    assert_eq!(grouping("[1, 2]"), "[1, 2]");
    assert_eq!(grouping("[]"), "[]");
    assert_eq!(grouping("[[1, 2], [3, 4]]"), "[[1, 2], [3, 4]]");
    assert_eq!(grouping("(1, 2.5)"), "tuple(1, 2.5)");
    assert_eq!(grouping("(1, (2, 3))"), "tuple(1, tuple(2, 3))");
    assert_eq!(grouping("t.1"), "t.1");
    assert_eq!(grouping("t.2.1"), "t.2.1");
    assert_eq!(grouping("f(x).1"), "f(x).1");
    assert_eq!(grouping("a[1].2"), "a[1].2");
    assert_eq!(grouping("(t).1 + 1"), "(t.1 + 1)");
    assert_eq!(grouping("t.1 * 2.5"), "(t.1 * 2.5)");
    assert_eq!(
        grouping("normal_lpdf(y | mu, sigma)"),
        "normal_lpdf(y | mu, sigma)"
    );
    assert_eq!(grouping("std_normal_lpdf(y|)"), "std_normal_lpdf(y | )");
    assert_eq!(grouping("f()"), "f()");
    assert_eq!(grouping("target()"), "target()");
    assert!(matches!(parse_expr("target()").kind, ExprKind::Target));
    parse_err("transformed data { real y = {}; }");
    parse_err("transformed data { real y = \"s\"; }");
}

fn model_stmts(body: &str) -> Vec<Stmt> {
    parse_ok(&format!("model {{ {body} }}"))
        .model
        .unwrap()
        .stmts
}

#[test]
fn statements() {
    let stmts = model_stmts(
        "y ~ normal(mu, sigma) T[L, U];
         y ~ normal(mu, sigma) T[L, ];
         y ~ normal(mu, sigma) T[, U];
         y ~ std_normal();
         target += 1;
         x = 1; x += 1; x -= 1; x *= 2; x /= 2; x .*= v; x ./= v;
         x[1, 2:3] = y; t.1 = 2; (a, b) = f(); (a, (b.1, c[2])) = g();
         for (i in 1:N) { }
         for (v in vs) print(v);
         while (1) break;
         while (1) continue;
         if (a) x = 1; else { x = 2; }
         print(\"x = \", x);
         reject(\"bad \", x);
         fatal_error(\"worse\");
         { real z; }
         profile(\"name\") { x = 1; }
         f(x);
         ;",
    );
    let kinds: Vec<&str> = stmts
        .iter()
        .map(|s| match &s.kind {
            StmtKind::VarDecl(_) => "decl",
            StmtKind::Assign { .. } => "assign",
            StmtKind::Tilde { .. } => "tilde",
            StmtKind::TargetPlusAssign(_) => "target",
            StmtKind::JacobianPlusAssign(_) => "jacobian",
            StmtKind::For { .. } => "for",
            StmtKind::Foreach { .. } => "foreach",
            StmtKind::While { .. } => "while",
            StmtKind::If { .. } => "if",
            StmtKind::Break => "break",
            StmtKind::Continue => "continue",
            StmtKind::Return(_) => "return",
            StmtKind::Print(_) => "print",
            StmtKind::Reject(_) => "reject",
            StmtKind::FatalError(_) => "fatal",
            StmtKind::Block(_) => "block",
            StmtKind::Profile { .. } => "profile",
            StmtKind::Call { .. } => "call",
            StmtKind::Empty => "empty",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "tilde", "tilde", "tilde", "tilde", "target", "assign", "assign", "assign", "assign",
            "assign", "assign", "assign", "assign", "assign", "assign", "assign", "for", "foreach",
            "while", "while", "if", "print", "reject", "fatal", "block", "profile", "call",
            "empty"
        ]
    );
    match &stmts[0].kind {
        StmtKind::Tilde {
            truncation: Some(t),
            ..
        } => assert!(t.lower.is_some() && t.upper.is_some()),
        other => panic!("{other:?}"),
    }
    match &stmts[1].kind {
        StmtKind::Tilde {
            truncation: Some(t),
            ..
        } => assert!(t.lower.is_some() && t.upper.is_none()),
        other => panic!("{other:?}"),
    }
    match &stmts[2].kind {
        StmtKind::Tilde {
            truncation: Some(t),
            ..
        } => assert!(t.lower.is_none() && t.upper.is_some()),
        other => panic!("{other:?}"),
    }
    let ops: Vec<AssignOp> = stmts[5..12]
        .iter()
        .map(|s| match &s.kind {
            StmtKind::Assign { op, .. } => *op,
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(
        ops,
        [
            AssignOp::Assign,
            AssignOp::Add,
            AssignOp::Sub,
            AssignOp::Mul,
            AssignOp::Div,
            AssignOp::EltMul,
            AssignOp::EltDiv
        ]
    );
    match &stmts[15].kind {
        StmtKind::Assign { lhs, .. } => match &lhs.kind {
            LValueKind::Tuple(items) => {
                assert_eq!(items.len(), 2);
                assert!(matches!(&items[1].kind, LValueKind::Tuple(inner) if inner.len() == 2));
            }
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    // `jacobian +=` in transformed parameters.
    let p = parse_ok("transformed parameters { real y = exp(x); jacobian += x; }");
    assert!(matches!(
        p.transformed_parameters.unwrap().stmts[1].kind,
        StmtKind::JacobianPlusAssign(_)
    ));
    // Dangling else binds to the nearest `if`.
    let stmts = model_stmts("if (a) if (b) x = 1; else x = 2;");
    match &stmts[0].kind {
        StmtKind::If {
            then_branch,
            else_branch: None,
            ..
        } => assert!(matches!(
            then_branch.kind,
            StmtKind::If {
                else_branch: Some(_),
                ..
            }
        )),
        other => panic!("{other:?}"),
    }
}

#[test]
fn declarations() {
    let p = parse_ok(
        "data {
           int<lower=0> N;
           real<lower=-1, upper=1> r;
           real<upper=0> u;
           vector<lower=0>[N] v;
           row_vector<offset=mu, multiplier=s>[N] rv;
           matrix<lower=0, upper=1>[N, 2] m;
           complex c;
           complex_vector[N] cv;
           complex_row_vector[N] crv;
           complex_matrix[N, N] cm;
           simplex[N] s1;
           unit_vector[N] u1;
           sum_to_zero_vector[N] z1;
           sum_to_zero_matrix[N, 3] z2;
           ordered[N] o1;
           positive_ordered[N] o2;
           cholesky_factor_corr[N] l1;
           cholesky_factor_cov[N] l2;
           cholesky_factor_cov[N, 2] l3;
           corr_matrix[N] k1;
           cov_matrix[N] k2;
           column_stochastic_matrix[N, 2] sm1;
           row_stochastic_matrix[N, 2] sm2;
           array[N, 2] vector<lower=0>[3] av;
           tuple(real<lower=0>, array[2] int) t;
           array[N] tuple(real, tuple(int, vector[2])) at;
           real<multiplier=2> onlymult;
           real a, b, c2;
         }",
    );
    let stmts = p.data.unwrap().stmts;
    assert_eq!(stmts.len(), 28);
    let decl = |i: usize| match &stmts[i].kind {
        StmtKind::VarDecl(d) => d.clone(),
        other => panic!("{other:?}"),
    };
    assert!(matches!(
        decl(1).ty.elem,
        ElemType {
            shape: Shape::Real,
            constraint: Constraint::Bounds {
                lower: Some(_),
                upper: Some(_)
            }
        }
    ));
    assert!(matches!(
        decl(4).ty.elem,
        ElemType {
            shape: Shape::RowVector { .. },
            constraint: Constraint::Affine {
                offset: Some(_),
                multiplier: Some(_)
            },
        }
    ));
    assert!(matches!(
        decl(17).ty.elem,
        ElemType {
            shape: Shape::Matrix { cols: None, .. },
            constraint: Constraint::CholeskyFactorCov,
        }
    ));
    assert!(matches!(
        decl(18).ty.elem,
        ElemType {
            shape: Shape::Matrix { cols: Some(_), .. },
            constraint: Constraint::CholeskyFactorCov,
        }
    ));
    assert_eq!(decl(23).ty.array_dims.len(), 2);
    assert!(
        matches!(&decl(24).ty.elem, ElemType { shape: Shape::Tuple(items), .. } if items.len() == 2)
    );
    assert_eq!(decl(27).declarators.len(), 3);
    // Bound expressions stop at `>`; comparisons need parentheses.
    let p = parse_ok("data { int N; real<lower=(N > 2), upper=N * 2 + 1> r; }");
    assert!(p.data.is_some());
    // Declare-and-define in other blocks.
    parse_ok("transformed data { array[2] real x = {1.0, 2.0}; }");
    // Declarations-only blocks.
    let r = parse_err("data { int N = 3; }");
    assert!(r.render_diagnostics().contains("cannot be given a value"));
    let r = parse_err("parameters { real x; x = 1; }");
    assert!(r
        .render_diagnostics()
        .contains("only variable declarations"));
    parse_err("data { real<lower=0, offset=1> x; }");
    parse_err("data { real<lower=0, lower=1> x; }");
    parse_err("data { vector[2, 3] x; }");
    parse_err("data { tuple(real) x; }");
    parse_err("data { array[2] array[3] real x; }");
    parse_err("data { real for; }");
    parse_err("data { real lower; }");
    // Block-header words are ordinary names elsewhere.
    parse_ok("data { real transformed; real generated; real quantities; real T; }");
    // Empty statements are allowed in declarations-only blocks.
    parse_ok("data { int N; ; } parameters { ; }");
}

#[test]
fn local_variables_cannot_be_constrained() {
    // Block-level variables outside `model` may be constrained...
    parse_ok(
        "transformed data { real<lower=0> a = 1; simplex[2] s = [0.5, 0.5]'; }
         transformed parameters { vector<lower=0>[2] v = [1, 2]'; }
         generated quantities { cov_matrix[2] c = diag_matrix(rep_vector(1, 2)); }",
    );
    // ...but not `model` variables, nested locals, or function locals.
    for src in [
        "model { real<lower=0> a; }",
        "model { simplex[2] s; }",
        "transformed data { { real<lower=0> a = 1; } }",
        "generated quantities { for (i in 1:2) { cov_matrix[2] c; } }",
        "functions { void f() { vector<offset=1>[2] v; } }",
        "model { tuple(real, real<lower=0>) t; }",
        "transformed parameters { if (1) { ordered[2] o; } }",
    ] {
        let r = parse_err(src);
        assert!(
            r.render_diagnostics().contains("local variables cannot"),
            "{src}"
        );
    }
    parse_ok("model { real a; vector[2] v; tuple(real, matrix[2, 2]) t; complex_vector[2] z; }");
}

#[test]
fn print_needs_arguments() {
    parse_err("model { print(); }");
    parse_ok("model { print(\"a\"); reject(1, \"b\", [1]); }");
}

#[test]
fn functions() {
    let p = parse_ok(
        "functions {
           real f(real x);
           real f(real x) { return x; }
           void g(data array[,] real xs, vector v, tuple(int, array[] real) t) { }
           array[] matrix h(complex_matrix m, row_vector r) { return {to_matrix(r)}; }
           tuple(real, int) k() { return (1.0, 2); }
           real foo_lpdf(real y, real mu) { return -square(y - mu); }
         }",
    );
    let fs = p.functions.unwrap().functions;
    assert_eq!(fs.len(), 6);
    assert!(fs[0].body.is_none());
    assert!(fs[1].body.is_some());
    assert!(matches!(fs[2].return_type, ReturnType::Void(_)));
    assert!(fs[2].args[0].data_only);
    assert_eq!(fs[2].args[0].ty.array_dims, 2);
    assert!(matches!(&fs[2].args[2].ty.elem, UnsizedElem::Tuple(items) if items.len() == 2));
    match &fs[3].return_type {
        ReturnType::Type(t) => {
            assert_eq!(t.array_dims, 1);
            assert_eq!(t.elem, UnsizedElem::Matrix);
        }
        other => panic!("{other:?}"),
    }
    parse_err("functions { real f(simplex x) { return 1; } }");
}

fn first_error(src: &str) -> String {
    let r = parse_err(src);
    r.diagnostics[0].render_plain(&r.sources)
}

#[test]
fn removed_syntax_gets_current_spelling() {
    let e = first_error("data { int N; real y[N]; }");
    assert!(e.contains("removed in Stan 2.33"), "{e}");
    assert!(e.contains("array[N] real y;"), "{e}");
    let e = first_error("data { int N; vector[3] y[N, 2]; }");
    assert!(e.contains("array[N, 2] vector[3] y;"), "{e}");
    let e = first_error("model { x <- 1; }");
    assert!(e.contains("`<-`") && e.contains("use `=`"), "{e}");
    let e = first_error("model { increment_log_prob(normal_log(y, 0, 1)); }");
    assert!(
        e.contains("increment_log_prob") && e.contains("target +="),
        "{e}"
    );
    let e = first_error("generated quantities { real lp = get_lp(); }");
    assert!(e.contains("target()"), "{e}");
    let e = first_error("model {\n # old comment\n}");
    assert!(e.contains("`//`"), "{e}");
    let e = first_error("transformed data { real x = if_else(1, 2, 3); }");
    assert!(e.contains("c ? a : b"), "{e}");
    let e =
        first_error("transformed data { array[2, 2] real y = integrate_ode(f, y0, t0, ts, th); }");
    assert!(e.contains("removed") && e.contains("ode_rk45"), "{e}");
    let e = first_error("functions { real f(real[] x) { return 1; } }");
    assert!(e.contains("array[] real"), "{e}");
    let e = first_error("functions { real f(real[,] x) { return 1; } }");
    assert!(e.contains("array[,] real"), "{e}");
    // A comparison with a negative number is still fine.
    parse_ok("model { if (x < -1) x = 1; if (x<-1) x = 2; }");
}

/// `integrate_ode_rk45/_bdf/_adams` are deprecated, not removed (the ODE interface changes only at
/// Stan 3.0): each call parses and gets stanc's deprecation warning, and nothing else.
#[test]
fn deprecated_ode_integrators_parse_with_a_warning() {
    for (old, new) in [
        ("integrate_ode_rk45", "ode_rk45"),
        ("integrate_ode_bdf", "ode_bdf"),
        ("integrate_ode_adams", "ode_adams"),
    ] {
        let text = format!(
            "transformed data {{ array[2, 2] real y = {old}(f, y0, t0, ts, th, xr, xi);\n\
             array[2, 2] real z = {old}(f, y0, t0, ts, th, xr, xi, 1e-8, 1e-8, 1000); }}"
        );
        let result = parse_str("test.stan", &text);
        assert!(!result.has_errors(), "{}", result.render_diagnostics());
        assert!(result.program.is_some());
        assert_eq!(
            result.diagnostics.len(),
            2,
            "{}",
            result.render_diagnostics()
        );
        let first = &result.diagnostics[0];
        assert!(!first.is_error());
        assert_eq!(
            first.message,
            format!(
                "{old} is deprecated and will be removed in Stan 3.0. Use {new} instead. The new \
                 interface is slightly different, see: \
                 https://mc-stan.org/users/documentation/case-studies/convert_odes.html"
            )
        );
        let rendered = result.render_diagnostics();
        assert!(rendered.starts_with("warning"), "{rendered}");
        assert_eq!(first.span.start as usize, text.find(old).unwrap());
        assert_eq!(first.span.end as usize, text.find(old).unwrap() + old.len());
    }
}

#[test]
fn recovery_reports_independent_errors() {
    let r = parse_err(
        "data {
           int N
           real y;
         }
         parameters {
           real mu
         }
         model {
           y ~ normal(mu, );
           mu = ;
           for (i in 1:N) { y[i] = (1 + ; }
           target += 1;
           print(\"ok\");
         }",
    );
    let errors = r.diagnostics.iter().filter(|d| d.is_error()).count();
    assert!(errors >= 5, "{}", r.render_diagnostics());
    let lines: Vec<usize> = r
        .diagnostics
        .iter()
        .map(|d| {
            r.sources
                .get(d.span.file)
                .unwrap()
                .line_col(d.span.start)
                .line
        })
        .collect();
    for line in [2, 6, 9, 10, 11] {
        assert!(lines.contains(&line), "no error on line {line}: {lines:?}");
    }
}

#[test]
fn unclosed_bodies_are_reported_at_the_end_of_the_file() {
    for (src, message) in [
        (
            "functions { real f() { return 1; }",
            "unexpected end of file: the `functions` block is not closed",
        ),
        (
            "parameters { real x; } model { x ~ normal(0, 1);",
            "unexpected end of file: a block is not closed",
        ),
        // After a failed item: recovery still reaches the end of the file.
        (
            "model { real y = ; x ~ normal(0, 1);",
            "unexpected end of file: a block is not closed",
        ),
    ] {
        let r = parse_err(src);
        assert!(
            r.diagnostics.iter().any(|d| d.message == message),
            "{src}: {}",
            r.render_diagnostics()
        );
    }
}

#[test]
fn block_order_and_duplicates() {
    let r = parse_err("model { } data { }");
    assert!(r.render_diagnostics().contains("must come before"));
    let r = parse_err("data { } data { }");
    assert!(r.render_diagnostics().contains("duplicate"));
    parse_err("modle { }");
    parse_err("model { ");
    parse_err("model { real x; } }");
    let p = parse_ok("");
    assert!(p.blocks().next().is_none());
    parse_ok("functions { } data { } transformed data { } parameters { } transformed parameters { } model { } generated quantities { }");
}

#[test]
fn diagnostic_rendering_is_plain_and_points_at_the_problem() {
    let r = parse_str("m.stan", "model {\n  real x = 1\n}\n");
    assert!(r.has_errors());
    let text = r.render_diagnostics();
    let expected = "error: expected `;`, found `}`\n --> m.stan:2:13\n  |\n2 |   real x = 1\n  |             ^ expected `;` here\n";
    assert_eq!(text, expected);
    assert!(!text.contains('\x1b'));
}

#[test]
fn nesting_is_bounded() {
    // The deepest legal program: statements and expressions both near the limit. Parsing,
    // printing, re-parsing and comparing must all fit in a default 2 MiB test-thread stack.
    let n = hazel_syntax::MAX_NESTING - 6;
    let src = format!(
        "model {{ {} x = {}1{} + a{}; {} }}",
        "{".repeat(n),
        "(".repeat(n),
        ")".repeat(n),
        " ^ a".repeat(n),
        "}".repeat(n)
    );
    let program = parse_ok(&src);
    assert_round_trip("deep", &program);
    let deep = [
        format!(
            "transformed data {{ real x = {}1{}; }}",
            "(".repeat(100_000),
            ")".repeat(100_000)
        ),
        format!("transformed data {{ real x = {}1; }}", "-".repeat(100_000)),
        format!(
            "transformed data {{ real x = 1{}; }}",
            " ^ 1".repeat(100_000)
        ),
        format!(
            "transformed data {{ real x = a{}; }}",
            "[1]".repeat(100_000)
        ),
        format!("transformed data {{ real x = a{}; }}", "'".repeat(100_000)),
        format!(
            "transformed data {{ real x = {}1{}; }}",
            "{".repeat(100_000),
            "}".repeat(100_000)
        ),
        format!(
            "transformed data {{ real x = {}1{}; }}",
            "f(".repeat(100_000),
            ")".repeat(100_000)
        ),
        format!(
            "transformed data {{ real x = {}1; }}",
            "c ? 1 : ".repeat(100_000)
        ),
        format!("model {{ {} }}", "{".repeat(100_000)),
        format!("model {{ {} x = 1; }}", "if (1) ".repeat(100_000)),
        format!("model {{ {} x = 1; }}", "for (i in 1:2) ".repeat(100_000)),
        format!("data {{ {} real x; }}", "tuple(".repeat(100_000)),
        format!("functions {{ {} real f(); }}", "tuple(".repeat(100_000)),
    ];
    for src in &deep {
        let r = parse_str("deep.stan", src);
        assert!(r.has_errors(), "no error for {}", &src[..60]);
        assert!(
            r.render_diagnostics().contains("nested too deeply"),
            "{}",
            &src[..60]
        );
    }
}

#[test]
fn a_flat_operator_chain_is_not_nesting() {
    // Machine-generated sums are long but flat: the parser builds them in a loop. Passes over
    // the tree (printing, comparing, dropping) recurse along the chain, so this runs on a deep
    // stack as hazel's own threads do.
    let worker = std::thread::Builder::new()
        .stack_size(512 << 20)
        .spawn(|| {
            let terms = vec!["a[1] * 2"; 100_000].join(" + ");
            let program = parse_ok(&format!("model {{ target += {terms} - 1; }}"));
            assert_round_trip("flat", &program);
            let too_long = vec!["a"; hazel_syntax::MAX_CHAIN_OPERATORS + 2].join(" - ");
            let r = parse_str("long.stan", &format!("model {{ target += {too_long}; }}"));
            assert!(r
                .render_diagnostics()
                .contains("expression is too long (more than 250000 operators in a row)"));
        })
        .expect("thread");
    worker
        .join()
        .expect("the flat chain parses and round-trips");
    // Nesting on the right of a left-associative operator still counts.
    let nested = format!(
        "model {{ target += 1{}; }}",
        " + (1".repeat(300) + &")".repeat(300)
    );
    let r = parse_str("nested.stan", &nested);
    assert!(r.render_diagnostics().contains("nested too deeply"));
}

#[test]
fn includes_resolve_relative_then_search_paths() {
    let mut files: HashMap<PathBuf, String> = HashMap::new();
    files.insert(
        PathBuf::from("models/fns.stan"),
        "real twice(real x) { return 2 * x; }\n#include \"more.stan\"\n".into(),
    );
    files.insert(
        PathBuf::from("lib/more.stan"),
        "real thrice(real x) { return 3 * x; }\n".into(),
    );
    files.insert(
        PathBuf::from("models/bad.stan"),
        "real oops(real x) { return x }\n".into(),
    );
    files.insert(
        PathBuf::from("models/self.stan"),
        "#include self.stan\n".into(),
    );
    let paths = [PathBuf::from("lib")];
    let r = parse_with_loader(
        "models/m.stan",
        "\u{feff}functions {\n#include \"fns.stan\" // helpers\n}\nmodel { }\n",
        &paths,
        &files,
    );
    let p = r.program.expect("parses");
    let names: Vec<&str> = p
        .functions
        .as_ref()
        .unwrap()
        .functions
        .iter()
        .map(|f| f.name.name.as_str())
        .collect();
    assert_eq!(names, ["twice", "thrice"]);
    // Spans of included code point at the included file.
    let f = &p.functions.as_ref().unwrap().functions[1];
    assert_eq!(r.sources.get(f.span.file).unwrap().name, "lib/more.stan");
    assert_eq!(r.sources.snippet(f.name.span), "thrice");

    // An error inside an included file is reported against that file.
    let r = parse_with_loader(
        "models/m.stan",
        "functions {\n#include bad.stan\n}",
        &paths,
        &files,
    );
    let text = r.render_diagnostics();
    assert!(text.contains("models/bad.stan:1:"), "{text}");
    assert!(
        text.contains("= note: included from models/m.stan:2:1"),
        "{text}"
    );
    // Missing files and cycles are errors, not hangs.
    let r = parse_with_loader("models/m.stan", "#include nope.stan\n", &paths, &files);
    assert!(r
        .render_diagnostics()
        .contains("cannot find included file `nope.stan`"));
    let r = parse_with_loader("models/m.stan", "#include self.stan\n", &paths, &files);
    assert!(r.render_diagnostics().contains("includes itself"));
    // Without a loader an include is an error.
    assert!(parse_str("m.stan", "#include \"x.stan\"\n").has_errors());
}

#[test]
fn node_ids_are_unique_and_dense() {
    let p = parse_ok("model { y ~ normal(a + b * c, 1); x[1] = f(y)[2]; }");
    let mut ids = Vec::new();
    fn walk_expr(e: &Expr, ids: &mut Vec<u32>) {
        ids.push(e.id.0);
        match &e.kind {
            ExprKind::Binary { lhs, rhs, .. } => {
                walk_expr(lhs, ids);
                walk_expr(rhs, ids);
            }
            ExprKind::Call { args, .. } => args.iter().for_each(|a| walk_expr(a, ids)),
            ExprKind::Index { base, indices } => {
                walk_expr(base, ids);
                for i in indices {
                    if let Index::Single(e) = i {
                        walk_expr(e, ids);
                    }
                }
            }
            _ => {}
        }
    }
    for s in &p.model.as_ref().unwrap().stmts {
        ids.push(s.id.0);
        match &s.kind {
            StmtKind::Tilde { lhs, args, .. } => {
                walk_expr(lhs, &mut ids);
                args.iter().for_each(|a| walk_expr(a, &mut ids));
            }
            StmtKind::Assign { lhs, rhs, .. } => {
                ids.push(lhs.id.0);
                if let LValueKind::Index { base, indices } = &lhs.kind {
                    ids.push(base.id.0);
                    if let Index::Single(e) = &indices[0] {
                        walk_expr(e, &mut ids);
                    }
                }
                walk_expr(rhs, &mut ids);
            }
            _ => {}
        }
    }
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), ids.len(), "duplicate ids: {ids:?}");
    assert!(sorted.iter().all(|&i| i < p.node_count));
}

#[test]
fn spans_cover_source_text() {
    let r = parse_str("s.stan", "model { target += normal_lpdf(y | mu + 1, 2); }");
    let p = r.program.unwrap();
    match &p.model.unwrap().stmts[0].kind {
        StmtKind::TargetPlusAssign(e) => {
            assert_eq!(r.sources.snippet(e.span), "normal_lpdf(y | mu + 1, 2)");
            match &e.kind {
                ExprKind::CondDistCall { args, .. } => {
                    assert_eq!(r.sources.snippet(args[1].span), "mu + 1")
                }
                other => panic!("{other:?}"),
            }
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(Span::DUMMY.len(), 0);
}

#[test]
fn comments_are_skipped() {
    parse_ok("// line\nmodel { /* block\n comment */ x = 1; // trailing\n}\n/* end */");
    let r = parse_err("model { /* never closed ");
    assert!(r
        .render_diagnostics()
        .contains("unterminated block comment"));
    parse_err("model { print(\"unterminated); }");
}
