//! Recursive-descent parser (Pratt parsing for expressions) with error recovery.
//!
//! Recovery: a statement that fails to parse is reported and skipped up to the next `;` or to
//! the `}` that closes its block, so independent errors in one file are all reported.
//! Nesting is bounded ([`MAX_NESTING`]): the parser's own recursion, and the depth of
//! expressions except along the left spine of left-associative operator chains, which the
//! parser builds in a loop (a flat sum of 100,000 terms is valid). Later passes that recurse
//! over the tree run on threads with a deep stack (`hazel_density::EVALUATION_STACK_BYTES`).
//!
//! Layout: this module holds the parser's state, token helpers, nesting limits, node ids and
//! the program's block structure; [`decls`] (types and declarations), [`stmts`] and [`exprs`]
//! (the Pratt loop) the grammar's layers; [`recovery`] the skipping after an error.

use crate::ast::*;
use crate::diagnostic::Diagnostic;
use crate::lexer::{Token, TokenKind};
use crate::span::{SourceMap, Span};

mod decls;
mod exprs;
mod recovery;
mod stmts;

/// Maximum depth of an expression tree and, separately, of nested statements. Deeper input is
/// rejected with an error; passes over the tree may rely on this bound.
pub const MAX_NESTING: usize = 256;

/// Maximum number of binary operators in one left-associative chain (`a + b + …`). Such a
/// chain is not nesting, but later passes recurse along it, about 0.5–1 KiB of stack per
/// operator when a model is traced: a million ran on hazel's 1 GiB threads
/// (`hazel_density::EVALUATION_STACK_BYTES`), two million overflowed. A quarter of a million
/// keeps a fourfold margin.
pub const MAX_CHAIN_OPERATORS: usize = 250_000;

/// Maximum nesting of types (`tuple(tuple(...))`).
pub const MAX_TYPE_NESTING: usize = 64;

/// Parser recursion allowed before giving up (several parser frames per nesting level).
const MAX_RECURSION: usize = 3 * MAX_NESTING;

/// Words that cannot name variables or functions besides the type words ([`is_type_word`]):
/// stanc 2.37's list is these and those (`transformed`, `generated` and `quantities` are only
/// keywords in block headers).
const RESERVED: &[&str] = &[
    "functions",
    "data",
    "parameters",
    "model",
    "return",
    "if",
    "else",
    "while",
    "for",
    "in",
    "break",
    "continue",
    "void",
    "print",
    "reject",
    "fatal_error",
    "target",
    "profile",
    "offset",
    "multiplier",
    "lower",
    "upper",
];

/// Words that start a declaration, besides the constrained type keywords
/// ([`CONSTRAINED_TYPES`]).
const TYPE_WORDS: &[&str] = &[
    "int",
    "real",
    "complex",
    "vector",
    "row_vector",
    "matrix",
    "complex_vector",
    "complex_row_vector",
    "complex_matrix",
    "array",
    "tuple",
];

/// Whether `word` starts a declaration.
fn is_type_word(word: &str) -> bool {
    TYPE_WORDS.contains(&word) || CONSTRAINED_TYPES.iter().any(|t| t.keyword == word)
}

/// Whether `word` cannot name a variable or a function.
fn is_reserved(word: &str) -> bool {
    RESERVED.contains(&word) || is_type_word(word)
}

/// Marker for "an error was reported; unwind to a recovery point".
#[derive(Debug)]
pub(crate) struct Fatal;

type PResult<T> = Result<T, Fatal>;

pub(crate) struct Parser<'a> {
    tokens: &'a [Token],
    sources: &'a SourceMap,
    pos: usize,
    pub(crate) diagnostics: Vec<Diagnostic>,
    next_id: u32,
    /// Tree depth of each finished expression, indexed by node id.
    expr_depth: Vec<u16>,
    /// Current recursion depth of the parser.
    recursion: usize,
    /// Current statement nesting.
    stmt_depth: usize,
    /// Current type nesting.
    type_depth: usize,
    /// Set just before parsing a statement that sits directly in a block whose variables may
    /// carry constraints (all blocks but `model`); taken (reset) when the statement starts.
    constraints_allowed: bool,
}

impl<'a> Parser<'a> {
    pub(crate) fn new(tokens: &'a [Token], sources: &'a SourceMap) -> Parser<'a> {
        Parser {
            tokens,
            sources,
            pos: 0,
            diagnostics: Vec::new(),
            next_id: 0,
            expr_depth: Vec::new(),
            recursion: 0,
            stmt_depth: 0,
            type_depth: 0,
            constraints_allowed: false,
        }
    }

    // ---------------------------------------------------------------- token helpers

    fn peek(&self) -> &TokenKind {
        self.peek_at(0)
    }

    fn peek_at(&self, k: usize) -> &TokenKind {
        let i = (self.pos + k).min(self.tokens.len() - 1);
        &self.tokens[i].kind
    }

    fn span(&self) -> Span {
        self.tokens[self.pos.min(self.tokens.len() - 1)].span
    }

    fn prev_span(&self) -> Span {
        if self.pos == 0 {
            self.span()
        } else {
            self.tokens[self.pos - 1].span
        }
    }

    /// Advances past the current token (never past `Eof`) and returns its span.
    fn bump(&mut self) -> Span {
        let span = self.tokens[self.pos.min(self.tokens.len() - 1)].span;
        if self.pos < self.tokens.len() - 1 {
            self.pos += 1;
        }
        span
    }

    fn at(&self, kind: &TokenKind) -> bool {
        self.peek() == kind
    }

    fn eat(&mut self, kind: &TokenKind) -> bool {
        if self.at(kind) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn at_word(&self, word: &str) -> bool {
        matches!(self.peek(), TokenKind::Ident(s) if s == word)
    }

    fn word_at(&self, k: usize) -> Option<&str> {
        match self.peek_at(k) {
            TokenKind::Ident(s) => Some(s.as_str()),
            _ => None,
        }
    }

    fn eat_word(&mut self, word: &str) -> bool {
        if self.at_word(word) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn error(&mut self, diagnostic: Diagnostic) -> Fatal {
        self.diagnostics.push(diagnostic);
        Fatal
    }

    fn expected(&mut self, what: &str) -> Fatal {
        let found = self.peek().describe();
        let span = self.span();
        self.error(
            Diagnostic::error(span, format!("expected {what}, found {found}"))
                .with_primary_label(format!("expected {what}")),
        )
    }

    fn expect(&mut self, kind: TokenKind) -> PResult<Span> {
        if self.at(&kind) {
            Ok(self.bump())
        } else {
            let what = format!("`{}`", kind.symbol());
            Err(self.expected(&what))
        }
    }

    fn expect_word(&mut self, word: &str) -> PResult<Span> {
        if self.at_word(word) {
            Ok(self.bump())
        } else {
            Err(self.expected(&format!("`{word}`")))
        }
    }

    /// An identifier usable as a name (not a reserved word).
    fn expect_name(&mut self, what: &str) -> PResult<Ident> {
        match self.peek().clone() {
            TokenKind::Ident(name) => {
                let span = self.bump();
                if is_reserved(&name) {
                    return Err(self.error(Diagnostic::error(
                        span,
                        format!("`{name}` is a reserved word and cannot be used as {what}"),
                    )));
                }
                Ok(Ident { name, span })
            }
            _ => Err(self.expected(what)),
        }
    }

    fn enter(&mut self) -> PResult<()> {
        self.recursion += 1;
        if self.recursion > MAX_RECURSION {
            let span = self.span();
            return Err(self.error(too_deep(span, "program is", MAX_NESTING)));
        }
        Ok(())
    }

    fn exit(&mut self) {
        self.recursion -= 1;
    }

    /// Types nest only through `tuple(...)`; they get their own, smaller budget.
    fn enter_type(&mut self) -> PResult<()> {
        self.enter()?;
        self.type_depth += 1;
        if self.type_depth > MAX_TYPE_NESTING {
            let span = self.span();
            self.type_depth -= 1;
            self.exit();
            return Err(self.error(too_deep(span, "type is", MAX_TYPE_NESTING)));
        }
        Ok(())
    }

    fn exit_type(&mut self) {
        self.type_depth -= 1;
        self.exit();
    }

    fn fresh_id(&mut self) -> NodeId {
        let id = NodeId(self.next_id);
        self.next_id = self.next_id.saturating_add(1);
        id
    }

    fn depth_of(&self, e: &Expr) -> u16 {
        self.expr_depth.get(e.id.0 as usize).copied().unwrap_or(0)
    }

    fn index_depth(&self, index: &Index) -> u16 {
        match index {
            Index::All => 0,
            Index::Single(e) | Index::Lower(e) | Index::Upper(e) => self.depth_of(e),
            Index::Range(a, b) => self.depth_of(a).max(self.depth_of(b)),
        }
    }

    /// Builds an expression node, recording its depth and rejecting over-deep trees.
    fn mk_expr(&mut self, span: Span, kind: ExprKind) -> PResult<Expr> {
        let child_depth = match &kind {
            ExprKind::IntLit(_)
            | ExprKind::RealLit { .. }
            | ExprKind::ImagLit { .. }
            | ExprKind::Var(_)
            | ExprKind::Target => 0,
            ExprKind::Paren(e) | ExprKind::Transpose(e) => self.depth_of(e),
            ExprKind::Unary { operand, .. } => self.depth_of(operand),
            ExprKind::TupleProj { base, .. } => self.depth_of(base),
            // A left-associative chain (`a + b + c + …`, often machine-generated with
            // thousands of terms) is a flat n-ary operation to the reader, not nesting: its
            // left spine does not count, its right operands do.
            ExprKind::Binary { op, lhs, rhs } if !op.is_right_assoc() => {
                self.depth_of(lhs).saturating_sub(1).max(self.depth_of(rhs))
            }
            ExprKind::Binary { lhs, rhs, .. } => self.depth_of(lhs).max(self.depth_of(rhs)),
            ExprKind::Ternary {
                cond,
                then_expr,
                else_expr,
            } => self
                .depth_of(cond)
                .max(self.depth_of(then_expr))
                .max(self.depth_of(else_expr)),
            ExprKind::Call { args, .. }
            | ExprKind::CondDistCall { args, .. }
            | ExprKind::Array(args)
            | ExprKind::RowVector(args)
            | ExprKind::Tuple(args) => args.iter().map(|a| self.depth_of(a)).max().unwrap_or(0),
            ExprKind::Index { base, indices } => indices
                .iter()
                .map(|i| self.index_depth(i))
                .max()
                .unwrap_or(0)
                .max(self.depth_of(base)),
        };
        let depth = child_depth.saturating_add(1);
        if depth as usize > MAX_NESTING {
            return Err(self.error(
                too_deep(span, "expression is", MAX_NESTING)
                    .with_hint("split it into several statements with intermediate variables"),
            ));
        }
        let id = self.fresh_id();
        let slot = id.0 as usize;
        if self.expr_depth.len() <= slot {
            self.expr_depth.resize(slot + 1, 0);
        }
        self.expr_depth[slot] = depth;
        Ok(Expr { id, span, kind })
    }

    fn mk_stmt(&mut self, span: Span, kind: StmtKind) -> Stmt {
        Stmt {
            id: self.fresh_id(),
            span,
            kind,
        }
    }

    // ---------------------------------------------------------------- program

    pub(crate) fn parse_program(&mut self) -> Program {
        let mut program = Program::default();
        // Index of the last block seen, for order checking.
        let mut last_order: Option<(usize, Span, &'static str)> = None;
        while !self.at(&TokenKind::Eof) {
            let start = self.span();
            let header = match (self.word_at(0), self.word_at(1)) {
                (Some("functions"), _) => Some((0, "functions", 1)),
                (Some("data"), _) => Some((1, "data", 1)),
                (Some("transformed"), Some("data")) => Some((2, "transformed data", 2)),
                (Some("parameters"), _) => Some((3, "parameters", 1)),
                (Some("transformed"), Some("parameters")) => Some((4, "transformed parameters", 2)),
                (Some("model"), _) => Some((5, "model", 1)),
                (Some("generated"), Some("quantities")) => Some((6, "generated quantities", 2)),
                _ => None,
            };
            let Some((order, name, words)) = header else {
                let found = self.peek().describe();
                self.diagnostics.push(
                    Diagnostic::error(start, format!("expected a program block, found {found}"))
                        .with_hint(
                            "a Stan program is a sequence of blocks: functions, data, transformed \
                         data, parameters, transformed parameters, model, generated quantities",
                        ),
                );
                // Skip to the next plausible block start.
                self.bump();
                self.skip_to_block_start();
                continue;
            };
            for _ in 0..words {
                self.bump();
            }
            let header_span = start.to(self.prev_span());
            let mut misplaced = false;
            if let Some((prev_order, prev_span, prev_name)) = last_order {
                if order == prev_order {
                    self.diagnostics.push(
                        Diagnostic::error(header_span, format!("duplicate `{name}` block"))
                            .with_label(prev_span, "first defined here"),
                    );
                    misplaced = true;
                } else if order < prev_order {
                    self.diagnostics.push(
                        Diagnostic::error(
                            header_span,
                            format!("the `{name}` block must come before the `{prev_name}` block"),
                        )
                        .with_label(prev_span, format!("`{prev_name}` is here")),
                    );
                    misplaced = true;
                }
            }
            if !misplaced {
                last_order = Some((order, header_span, name));
            }
            if self.expect(TokenKind::LBrace).is_err() {
                self.skip_to_block_start();
                continue;
            }
            if order == 0 {
                let functions = self.parse_functions_body();
                let span = start.to(self.prev_span());
                if !misplaced {
                    program.functions = Some(FunctionsBlock { span, functions });
                }
                continue;
            }
            let kind = match order {
                1 => BlockKind::Data,
                2 => BlockKind::TransformedData,
                3 => BlockKind::Parameters,
                4 => BlockKind::TransformedParameters,
                5 => BlockKind::Model,
                _ => BlockKind::GeneratedQuantities,
            };
            let stmts = self.parse_block_body(Some(kind));
            let block = Block {
                kind,
                span: start.to(self.prev_span()),
                stmts,
            };
            if misplaced {
                continue;
            }
            let slot = match kind {
                BlockKind::Data => &mut program.data,
                BlockKind::TransformedData => &mut program.transformed_data,
                BlockKind::Parameters => &mut program.parameters,
                BlockKind::TransformedParameters => &mut program.transformed_parameters,
                BlockKind::Model => &mut program.model,
                BlockKind::GeneratedQuantities => &mut program.generated_quantities,
            };
            *slot = Some(block);
        }
        program.node_count = self.next_id;
        program
    }

    /// Statements up to and including the closing `}` (the `{` is already consumed).
    fn parse_block_body(&mut self, block: Option<BlockKind>) -> Vec<Stmt> {
        let mut stmts = Vec::new();
        while !self.body_ends("a block is not closed") {
            let before = self.pos;
            self.constraints_allowed = block.is_some_and(|k| k != BlockKind::Model);
            match self.parse_stmt() {
                Ok(stmt) => {
                    if let Some(kind) = block {
                        if kind.declarations_only() {
                            self.check_declaration_only(kind, &stmt);
                        }
                    }
                    stmts.push(stmt);
                }
                Err(Fatal) => self.recover_in_body(before),
            }
        }
        stmts
    }

    fn check_declaration_only(&mut self, kind: BlockKind, stmt: &Stmt) {
        match &stmt.kind {
            StmtKind::VarDecl(decl) => {
                for d in &decl.declarators {
                    if let Some(init) = &d.init {
                        self.diagnostics.push(
                            Diagnostic::error(
                                init.span,
                                format!(
                                    "variables in the `{}` block cannot be given a value",
                                    kind.keyword()
                                ),
                            )
                            .with_hint(format!(
                                "declare `{}` here and compute values in a `transformed {}` block",
                                d.name.name,
                                kind.keyword()
                            )),
                        );
                    }
                }
            }
            StmtKind::Empty => {}
            _ => self.diagnostics.push(Diagnostic::error(
                stmt.span,
                format!(
                    "only variable declarations are allowed in the `{}` block",
                    kind.keyword()
                ),
            )),
        }
    }
}

/// The error for a construct nested past its limit: `what` is the subject and its verb
/// ("type is").
fn too_deep(span: Span, what: &str, limit: usize) -> Diagnostic {
    Diagnostic::error(
        span,
        format!("{what} nested too deeply (more than {limit} levels)"),
    )
}
