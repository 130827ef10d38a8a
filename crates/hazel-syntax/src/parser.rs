//! Recursive-descent parser (Pratt parsing for expressions) with error recovery.
//!
//! Recovery: a statement that fails to parse is reported and skipped up to the next `;` or to
//! the `}` that closes its block, so independent errors in one file are all reported.
//! Nesting is bounded ([`MAX_NESTING`]): the parser's own recursion, and the depth of
//! expressions except along the left spine of left-associative operator chains, which the
//! parser builds in a loop (a flat sum of 100,000 terms is valid). Later passes that recurse
//! over the tree run on threads with a deep stack (`hazel_density::EVALUATION_STACK_BYTES`).

use crate::ast::*;
use crate::diagnostic::Diagnostic;
use crate::lexer::{Token, TokenKind};
use crate::span::{SourceMap, Span};

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

/// Words that cannot name variables or functions (stanc 2.37's list; `transformed`,
/// `generated` and `quantities` are only keywords in block headers).
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
    "int",
    "real",
    "complex",
    "vector",
    "row_vector",
    "matrix",
    "complex_vector",
    "complex_row_vector",
    "complex_matrix",
    "ordered",
    "positive_ordered",
    "simplex",
    "unit_vector",
    "sum_to_zero_vector",
    "sum_to_zero_matrix",
    "cholesky_factor_corr",
    "cholesky_factor_cov",
    "corr_matrix",
    "cov_matrix",
    "column_stochastic_matrix",
    "row_stochastic_matrix",
    "print",
    "reject",
    "fatal_error",
    "target",
    "profile",
    "tuple",
    "offset",
    "multiplier",
    "lower",
    "upper",
    "array",
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
                if RESERVED.contains(&name.as_str()) {
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
            return Err(self.error(Diagnostic::error(
                span,
                format!("program is nested too deeply (more than {MAX_NESTING} levels)"),
            )));
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
            return Err(self.error(Diagnostic::error(
                span,
                format!("type is nested too deeply (more than {MAX_TYPE_NESTING} levels)"),
            )));
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
                Diagnostic::error(
                    span,
                    format!("expression is nested too deeply (more than {MAX_NESTING} levels)"),
                )
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

    /// Skips to a statement boundary: past the next `;` at this nesting level, past a
    /// balanced `{...}`, or up to (not past) a `}` that closes the enclosing block.
    fn synchronize(&mut self) {
        let mut depth = 0usize;
        loop {
            match self.peek() {
                TokenKind::Eof => return,
                TokenKind::Semi if depth == 0 => {
                    self.bump();
                    return;
                }
                TokenKind::LBrace => depth += 1,
                // Closes the enclosing block: leave it for the block's loop.
                TokenKind::RBrace if depth == 0 => return,
                TokenKind::RBrace => {
                    depth -= 1;
                    if depth == 0 {
                        self.bump();
                        return;
                    }
                }
                _ => {}
            }
            self.bump();
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

    fn skip_to_block_start(&mut self) {
        let mut depth = 0usize;
        loop {
            match self.peek() {
                TokenKind::Eof => return,
                TokenKind::LBrace => depth += 1,
                TokenKind::RBrace => depth = depth.saturating_sub(1),
                TokenKind::Ident(w)
                    if depth == 0
                        && matches!(
                            w.as_str(),
                            "functions"
                                | "data"
                                | "transformed"
                                | "parameters"
                                | "model"
                                | "generated"
                        ) =>
                {
                    return
                }
                _ => {}
            }
            self.bump();
        }
    }

    /// Statements up to and including the closing `}` (the `{` is already consumed).
    fn parse_block_body(&mut self, block: Option<BlockKind>) -> Vec<Stmt> {
        let mut stmts = Vec::new();
        loop {
            match self.peek() {
                TokenKind::RBrace => {
                    self.bump();
                    break;
                }
                TokenKind::Eof => {
                    let span = self.span();
                    self.diagnostics.push(
                        Diagnostic::error(span, "unexpected end of file: a block is not closed")
                            .with_hint("add the missing `}`"),
                    );
                    break;
                }
                _ => {}
            }
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
                Err(Fatal) => {
                    self.synchronize();
                    if self.pos == before && !self.at(&TokenKind::RBrace) {
                        self.bump();
                    }
                }
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

    // ---------------------------------------------------------------- functions

    fn parse_functions_body(&mut self) -> Vec<FunDef> {
        let mut functions = Vec::new();
        loop {
            match self.peek() {
                TokenKind::RBrace => {
                    self.bump();
                    break;
                }
                TokenKind::Eof => {
                    let span = self.span();
                    self.diagnostics.push(
                        Diagnostic::error(
                            span,
                            "unexpected end of file: the `functions` block is not closed",
                        )
                        .with_hint("add the missing `}`"),
                    );
                    break;
                }
                _ => {}
            }
            let before = self.pos;
            match self.parse_fundef() {
                Ok(f) => functions.push(f),
                Err(Fatal) => {
                    self.synchronize();
                    if self.pos == before && !self.at(&TokenKind::RBrace) {
                        self.bump();
                    }
                }
            }
        }
        functions
    }

    fn parse_fundef(&mut self) -> PResult<FunDef> {
        let start = self.span();
        let return_type = if self.at_word("void") {
            ReturnType::Void(self.bump())
        } else {
            ReturnType::Type(self.parse_unsized_type()?)
        };
        let name = self.expect_name("a function name")?;
        self.expect(TokenKind::LParen)?;
        let mut args = Vec::new();
        if !self.at(&TokenKind::RParen) {
            loop {
                let arg_start = self.span();
                let data_only = self.eat_word("data");
                let ty = self.parse_unsized_type()?;
                let arg_name = self.expect_name("an argument name")?;
                args.push(FunArg {
                    span: arg_start.to(arg_name.span),
                    data_only,
                    ty,
                    name: arg_name,
                });
                if !self.eat(&TokenKind::Comma) {
                    break;
                }
            }
        }
        self.expect(TokenKind::RParen)?;
        let body = if self.eat(&TokenKind::Semi) {
            None
        } else if self.at(&TokenKind::LBrace) {
            Some(self.parse_stmt()?)
        } else {
            return Err(self.expected("a function body `{ ... }` or `;`"));
        };
        Ok(FunDef {
            span: start.to(self.prev_span()),
            return_type,
            name,
            args,
            body,
        })
    }

    fn parse_unsized_type(&mut self) -> PResult<UnsizedType> {
        self.enter_type()?;
        let result = self.parse_unsized_type_inner();
        self.exit_type();
        result
    }

    fn parse_unsized_type_inner(&mut self) -> PResult<UnsizedType> {
        let start = self.span();
        let mut array_dims = 0;
        if self.eat_word("array") {
            self.expect(TokenKind::LBracket)?;
            array_dims = 1;
            while self.eat(&TokenKind::Comma) {
                array_dims += 1;
            }
            self.expect(TokenKind::RBracket)?;
        }
        let elem = match self.word_at(0) {
            Some("int") => UnsizedElem::Int,
            Some("real") => UnsizedElem::Real,
            Some("complex") => UnsizedElem::Complex,
            Some("vector") => UnsizedElem::Vector,
            Some("row_vector") => UnsizedElem::RowVector,
            Some("matrix") => UnsizedElem::Matrix,
            Some("complex_vector") => UnsizedElem::ComplexVector,
            Some("complex_row_vector") => UnsizedElem::ComplexRowVector,
            Some("complex_matrix") => UnsizedElem::ComplexMatrix,
            Some("tuple") => {
                self.bump();
                self.expect(TokenKind::LParen)?;
                let mut items = vec![self.parse_unsized_type()?];
                while self.eat(&TokenKind::Comma) {
                    items.push(self.parse_unsized_type()?);
                }
                self.expect(TokenKind::RParen)?;
                let span = start.to(self.prev_span());
                if items.len() < 2 {
                    return Err(self.error(Diagnostic::error(
                        span,
                        "a tuple type needs at least two components",
                    )));
                }
                return Ok(UnsizedType {
                    span,
                    array_dims,
                    elem: UnsizedElem::Tuple(items),
                });
            }
            Some(w) if is_type_word(w) => {
                let w = w.to_string();
                let span = self.span();
                return Err(self.error(
                    Diagnostic::error(
                        span,
                        format!("`{w}` cannot be used as a function argument or return type"),
                    )
                    .with_hint("constrained types are only for variable declarations; use the unconstrained type (e.g. `vector`, `matrix`)"),
                ));
            }
            _ => return Err(self.expected("a type")),
        };
        let elem_span = self.bump();
        if self.at(&TokenKind::LBracket) && array_dims == 0 {
            // Removed pre-2.33 syntax `real[]`, `real[,]`.
            let lb = self.bump();
            let mut dims = 1;
            while self.eat(&TokenKind::Comma) {
                dims += 1;
            }
            let rb = if self.at(&TokenKind::RBracket) {
                self.bump()
            } else {
                lb
            };
            let elem_text = self.sources.snippet(elem_span).to_string();
            let commas = ",".repeat(dims - 1);
            return Err(self.error(
                Diagnostic::error(
                    elem_span.to(rb),
                    "array types in the form `real[]` were removed in Stan 2.33",
                )
                .with_hint(format!("write `array[{commas}] {elem_text}`")),
            ));
        }
        Ok(UnsizedType {
            span: start.to(elem_span),
            array_dims,
            elem,
        })
    }

    // ---------------------------------------------------------------- declarations

    fn parse_decl_type(&mut self) -> PResult<DeclType> {
        self.enter_type()?;
        let result = self.parse_decl_type_inner();
        self.exit_type();
        result
    }

    fn parse_decl_type_inner(&mut self) -> PResult<DeclType> {
        let start = self.span();
        let mut array_dims = Vec::new();
        if self.eat_word("array") {
            self.expect(TokenKind::LBracket)?;
            loop {
                array_dims.push(self.parse_expr()?);
                if !self.eat(&TokenKind::Comma) {
                    break;
                }
            }
            self.expect(TokenKind::RBracket)?;
            if self.at_word("array") {
                let span = self.span();
                return Err(self.error(
                    Diagnostic::error(span, "nested `array` types are not allowed")
                        .with_hint("write all sizes in one `array[N, M]`"),
                ));
            }
        }
        let elem = self.parse_elem_type()?;
        Ok(DeclType {
            span: start.to(self.prev_span()),
            array_dims,
            elem,
        })
    }

    fn parse_sizes(&mut self, count: usize, type_name: &str) -> PResult<Vec<Expr>> {
        if !self.at(&TokenKind::LBracket) {
            return Err(self.expected(&format!("`[` with the size of `{type_name}`")));
        }
        self.bump();
        let mut sizes = vec![self.parse_expr()?];
        while self.eat(&TokenKind::Comma) {
            sizes.push(self.parse_expr()?);
        }
        let close = self.expect(TokenKind::RBracket)?;
        if sizes.len() != count {
            let plural = if count == 1 { "size" } else { "sizes" };
            return Err(self.error(Diagnostic::error(
                close,
                format!(
                    "`{type_name}` takes {count} {plural}, found {}",
                    sizes.len()
                ),
            )));
        }
        Ok(sizes)
    }

    fn one_size(&mut self, type_name: &str) -> PResult<Expr> {
        let mut v = self.parse_sizes(1, type_name)?;
        Ok(v.remove(0))
    }

    fn two_sizes(&mut self, type_name: &str) -> PResult<(Expr, Expr)> {
        let mut v = self.parse_sizes(2, type_name)?;
        let cols = v.remove(1);
        Ok((v.remove(0), cols))
    }

    fn parse_elem_type(&mut self) -> PResult<ElemType> {
        let Some(word) = self.word_at(0).map(str::to_string) else {
            return Err(self.expected("a type"));
        };
        if !is_type_word(&word) || word == "array" {
            return Err(self.expected("a type"));
        }
        self.bump();
        let w = word.as_str();
        if let Some(t) = CONSTRAINED_TYPES.iter().find(|t| t.keyword == w) {
            let shape = match t.sizes {
                SizeForm::Vector => Shape::Vector {
                    size: self.one_size(w)?,
                },
                SizeForm::Matrix => {
                    let (rows, cols) = self.two_sizes(w)?;
                    Shape::Matrix {
                        rows,
                        cols: Some(cols),
                    }
                }
                SizeForm::Square => Shape::Matrix {
                    rows: self.one_size(w)?,
                    cols: None,
                },
                SizeForm::SquareOrMatrix => {
                    if !self.at(&TokenKind::LBracket) {
                        return Err(self.expected(&format!("`[` with the size of `{w}`")));
                    }
                    self.bump();
                    let rows = self.parse_expr()?;
                    let cols = if self.eat(&TokenKind::Comma) {
                        Some(self.parse_expr()?)
                    } else {
                        None
                    };
                    self.expect(TokenKind::RBracket)?;
                    Shape::Matrix { rows, cols }
                }
            };
            return Ok(ElemType {
                shape,
                constraint: t.constraint.clone(),
            });
        }
        Ok(match w {
            "int" => {
                let constraint = self.parse_transform()?;
                ElemType {
                    shape: Shape::Int,
                    constraint,
                }
            }
            "real" => {
                let constraint = self.parse_transform()?;
                ElemType {
                    shape: Shape::Real,
                    constraint,
                }
            }
            "complex" => ElemType::plain(Shape::Complex),
            "vector" => {
                let constraint = self.parse_transform()?;
                let size = self.one_size(w)?;
                ElemType {
                    shape: Shape::Vector { size },
                    constraint,
                }
            }
            "row_vector" => {
                let constraint = self.parse_transform()?;
                let size = self.one_size(w)?;
                ElemType {
                    shape: Shape::RowVector { size },
                    constraint,
                }
            }
            "matrix" => {
                let constraint = self.parse_transform()?;
                let (rows, cols) = self.two_sizes(w)?;
                ElemType {
                    shape: Shape::Matrix {
                        rows,
                        cols: Some(cols),
                    },
                    constraint,
                }
            }
            "complex_vector" => ElemType::plain(Shape::ComplexVector {
                size: self.one_size(w)?,
            }),
            "complex_row_vector" => ElemType::plain(Shape::ComplexRowVector {
                size: self.one_size(w)?,
            }),
            "complex_matrix" => {
                let (rows, cols) = self.two_sizes(w)?;
                ElemType::plain(Shape::ComplexMatrix { rows, cols })
            }
            "tuple" => {
                let open = self.expect(TokenKind::LParen)?;
                let mut items = vec![self.parse_decl_type()?];
                while self.eat(&TokenKind::Comma) {
                    items.push(self.parse_decl_type()?);
                }
                let close = self.expect(TokenKind::RParen)?;
                if items.len() < 2 {
                    return Err(self.error(Diagnostic::error(
                        open.to(close),
                        "a tuple type needs at least two components",
                    )));
                }
                ElemType::plain(Shape::Tuple(items))
            }
            _ => return Err(self.expected("a type")),
        })
    }

    /// Optional `<lower=.., upper=..>` or `<offset=.., multiplier=..>`.
    fn parse_transform(&mut self) -> PResult<Constraint> {
        if !self.at(&TokenKind::Lt) {
            return Ok(Constraint::None);
        }
        let open = self.bump();
        let mut lower = None;
        let mut upper = None;
        let mut offset = None;
        let mut multiplier = None;
        loop {
            let key_span = self.span();
            let key = match self.word_at(0) {
                Some(k @ ("lower" | "upper" | "offset" | "multiplier")) => k.to_string(),
                _ => return Err(self.expected("`lower`, `upper`, `offset` or `multiplier`")),
            };
            self.bump();
            self.expect(TokenKind::Assign)?;
            // Bounds are parsed without comparisons so that `>` closes the list.
            let value = self.parse_bp(BinOp::Add.precedence())?;
            let slot = match key.as_str() {
                "lower" => &mut lower,
                "upper" => &mut upper,
                "offset" => &mut offset,
                _ => &mut multiplier,
            };
            if slot.is_some() {
                return Err(self.error(Diagnostic::error(
                    key_span,
                    format!("`{key}` is given twice"),
                )));
            }
            *slot = Some(value);
            if !self.eat(&TokenKind::Comma) {
                break;
            }
        }
        let close = self.expect(TokenKind::Gt)?;
        let is_bounds = lower.is_some() || upper.is_some();
        let is_affine = offset.is_some() || multiplier.is_some();
        if is_bounds && is_affine {
            return Err(self.error(Diagnostic::error(
                open.to(close),
                "bounds (`lower`, `upper`) cannot be combined with `offset`/`multiplier`",
            )));
        }
        Ok(if is_bounds {
            Constraint::Bounds { lower, upper }
        } else {
            Constraint::Affine { offset, multiplier }
        })
    }

    fn parse_var_decl(&mut self, start: Span, constraints_allowed: bool) -> PResult<StmtKind> {
        let ty = self.parse_decl_type()?;
        if !constraints_allowed {
            self.check_unconstrained(&ty);
        }
        let mut declarators = Vec::new();
        loop {
            let name = self.expect_name("a variable name")?;
            if self.at(&TokenKind::LBracket) {
                // Removed pre-2.33 syntax `real y[N];`.
                let lb = self.bump();
                let mut depth = 1usize;
                while depth > 0 && !self.at(&TokenKind::Eof) {
                    match self.peek() {
                        TokenKind::LBracket => depth += 1,
                        TokenKind::RBracket => depth -= 1,
                        TokenKind::Semi => break,
                        _ => {}
                    }
                    self.bump();
                }
                let rb = self.prev_span();
                let dims = self
                    .sources
                    .snippet(Span::new(lb.file, lb.end, rb.start))
                    .trim()
                    .to_string();
                let ty_text = self.sources.snippet(ty.span).to_string();
                let hint = if ty.array_dims.is_empty() {
                    format!("write `array[{dims}] {ty_text} {};`", name.name)
                } else {
                    "write all sizes in the `array[...]` before the element type".to_string()
                };
                return Err(self.error(
                    Diagnostic::error(
                        name.span.to(rb),
                        "array declarations of the form `real y[N]` were removed in Stan 2.33",
                    )
                    .with_hint(hint),
                ));
            }
            let init = if self.eat(&TokenKind::Assign) {
                Some(self.parse_expr()?)
            } else {
                if self.at(&TokenKind::Lt) && self.peek_at(1) == &TokenKind::Minus {
                    return Err(self.removed_arrow());
                }
                None
            };
            declarators.push(Declarator { name, init });
            if !self.eat(&TokenKind::Comma) {
                break;
            }
        }
        self.expect_semi(start)?;
        Ok(StmtKind::VarDecl(VarDecl { ty, declarators }))
    }

    /// Local variables (in `model`, in nested statements, in function bodies) cannot have
    /// constraints or constrained types; stanc's grammar rejects them, so do we.
    fn check_unconstrained(&mut self, ty: &DeclType) {
        if let Shape::Tuple(items) = &ty.elem.shape {
            for item in items {
                self.check_unconstrained(item);
            }
            return;
        }
        let constrained_name = ty.elem.constrained_type().map(|t| t.keyword);
        let message = if let Some(name) = constrained_name {
            format!("local variables cannot have the constrained type `{name}`")
        } else if !ty.elem.constraint.is_none() {
            "local variables cannot have bounds, offsets or multipliers".to_string()
        } else {
            return;
        };
        self.diagnostics
            .push(Diagnostic::error(ty.span, message).with_hint(
                "constraints are only allowed on variables declared directly in the data, \
             transformed data, parameters, transformed parameters and generated quantities \
             blocks; use the unconstrained type (`vector`, `matrix`, `real`, ...) here",
            ));
    }

    fn expect_semi(&mut self, _stmt_start: Span) -> PResult<Span> {
        if self.at(&TokenKind::Semi) {
            return Ok(self.bump());
        }
        // Point just after the previous token: that is where the `;` is missing.
        let prev = self.prev_span();
        let found = self.peek().describe();
        let at = Span::new(prev.file, prev.end, prev.end);
        Err(self.error(
            Diagnostic::error(at, format!("expected `;`, found {found}"))
                .with_primary_label("expected `;` here"),
        ))
    }

    fn removed_arrow(&mut self) -> Fatal {
        let span = self
            .span()
            .to(self.tokens[(self.pos + 1).min(self.tokens.len() - 1)].span);
        self.error(
            Diagnostic::error(
                span,
                "the `<-` assignment operator was removed in Stan 2.33",
            )
            .with_hint("use `=`"),
        )
    }

    // ---------------------------------------------------------------- statements

    fn parse_stmt(&mut self) -> PResult<Stmt> {
        self.enter()?;
        self.stmt_depth += 1;
        let result = if self.stmt_depth > MAX_NESTING {
            let span = self.span();
            Err(self.error(Diagnostic::error(
                span,
                format!("statements are nested too deeply (more than {MAX_NESTING} levels)"),
            )))
        } else {
            self.parse_stmt_inner()
        };
        self.stmt_depth -= 1;
        self.exit();
        result
    }

    fn parse_stmt_inner(&mut self) -> PResult<Stmt> {
        let constraints_allowed = std::mem::take(&mut self.constraints_allowed);
        let start = self.span();
        let kind = match self.peek().clone() {
            TokenKind::LBrace => {
                self.bump();
                StmtKind::Block(self.parse_block_body(None))
            }
            TokenKind::Semi => {
                self.bump();
                StmtKind::Empty
            }
            TokenKind::Ident(word) => match word.as_str() {
                "for" => self.parse_for()?,
                "while" => {
                    self.bump();
                    self.expect(TokenKind::LParen)?;
                    let cond = self.parse_expr()?;
                    self.expect(TokenKind::RParen)?;
                    let body = Box::new(self.parse_stmt()?);
                    StmtKind::While { cond, body }
                }
                "if" => {
                    self.bump();
                    self.expect(TokenKind::LParen)?;
                    let cond = self.parse_expr()?;
                    self.expect(TokenKind::RParen)?;
                    let then_branch = Box::new(self.parse_stmt()?);
                    let else_branch = if self.eat_word("else") {
                        Some(Box::new(self.parse_stmt()?))
                    } else {
                        None
                    };
                    StmtKind::If {
                        cond,
                        then_branch,
                        else_branch,
                    }
                }
                "break" => {
                    self.bump();
                    self.expect_semi(start)?;
                    StmtKind::Break
                }
                "continue" => {
                    self.bump();
                    self.expect_semi(start)?;
                    StmtKind::Continue
                }
                "return" => {
                    self.bump();
                    let value = if self.at(&TokenKind::Semi) {
                        None
                    } else {
                        Some(self.parse_expr()?)
                    };
                    self.expect_semi(start)?;
                    StmtKind::Return(value)
                }
                "print" | "reject" | "fatal_error" => {
                    self.bump();
                    let items = self.parse_printables()?;
                    self.expect_semi(start)?;
                    match word.as_str() {
                        "print" => StmtKind::Print(items),
                        "reject" => StmtKind::Reject(items),
                        _ => StmtKind::FatalError(items),
                    }
                }
                "profile" if self.peek_at(1) == &TokenKind::LParen => {
                    self.bump();
                    self.bump();
                    let name = match self.peek().clone() {
                        TokenKind::Str(s) => {
                            self.bump();
                            s
                        }
                        _ => return Err(self.expected("a profile name string")),
                    };
                    self.expect(TokenKind::RParen)?;
                    if !self.at(&TokenKind::LBrace) {
                        return Err(self.expected("`{`"));
                    }
                    self.bump();
                    StmtKind::Profile {
                        name,
                        body: self.parse_block_body(None),
                    }
                }
                "target" if self.peek_at(1) == &TokenKind::PlusAssign => {
                    self.bump();
                    self.bump();
                    let e = self.parse_expr()?;
                    self.expect_semi(start)?;
                    StmtKind::TargetPlusAssign(e)
                }
                "jacobian" if self.peek_at(1) == &TokenKind::PlusAssign => {
                    self.bump();
                    self.bump();
                    let e = self.parse_expr()?;
                    self.expect_semi(start)?;
                    StmtKind::JacobianPlusAssign(e)
                }
                "else" => {
                    let span = self.bump();
                    return Err(
                        self.error(Diagnostic::error(span, "`else` without a preceding `if`"))
                    );
                }
                w if is_type_word(w) => self.parse_var_decl(start, constraints_allowed)?,
                _ => self.parse_expr_stmt(start)?,
            },
            _ => self.parse_expr_stmt(start)?,
        };
        let span = start.to(self.prev_span());
        Ok(self.mk_stmt(span, kind))
    }

    fn parse_for(&mut self) -> PResult<StmtKind> {
        self.bump();
        self.expect(TokenKind::LParen)?;
        let var = self.expect_name("a loop variable name")?;
        self.expect_word("in")?;
        let first = self.parse_expr()?;
        let kind = if self.eat(&TokenKind::Colon) {
            let upper = self.parse_expr()?;
            self.expect(TokenKind::RParen)?;
            let body = Box::new(self.parse_stmt()?);
            StmtKind::For {
                var,
                lower: first,
                upper,
                body,
            }
        } else {
            self.expect(TokenKind::RParen)?;
            let body = Box::new(self.parse_stmt()?);
            StmtKind::Foreach {
                var,
                iterable: first,
                body,
            }
        };
        Ok(kind)
    }

    fn parse_printables(&mut self) -> PResult<Vec<Printable>> {
        self.expect(TokenKind::LParen)?;
        let mut items = Vec::new();
        loop {
            match self.peek().clone() {
                TokenKind::Str(value) => {
                    let span = self.bump();
                    items.push(Printable::Str { value, span });
                }
                TokenKind::RParen if items.is_empty() => {
                    return Err(self.expected("an expression or a string"));
                }
                _ => items.push(Printable::Expr(self.parse_expr()?)),
            }
            if !self.eat(&TokenKind::Comma) {
                break;
            }
        }
        self.expect(TokenKind::RParen)?;
        Ok(items)
    }

    fn assign_op(&self) -> Option<AssignOp> {
        Some(match self.peek() {
            TokenKind::Assign => AssignOp::Assign,
            TokenKind::PlusAssign => AssignOp::Add,
            TokenKind::MinusAssign => AssignOp::Sub,
            TokenKind::TimesAssign => AssignOp::Mul,
            TokenKind::DivideAssign => AssignOp::Div,
            TokenKind::EltTimesAssign => AssignOp::EltMul,
            TokenKind::EltDivideAssign => AssignOp::EltDiv,
            _ => return None,
        })
    }

    /// Whether `e` is `a < -b` written as `a <- b` (the removed assignment arrow).
    fn is_removed_arrow(&self, e: &Expr) -> bool {
        if let ExprKind::Binary {
            op: BinOp::Lt,
            lhs,
            rhs,
        } = &e.kind
        {
            if let ExprKind::Unary {
                op: UnaryOp::Neg, ..
            } = &rhs.kind
            {
                if lhs.span.file == rhs.span.file {
                    let between = self.sources.snippet(Span::new(
                        lhs.span.file,
                        lhs.span.end,
                        rhs.span.start + 1,
                    ));
                    return between.trim_start().starts_with("<-");
                }
            }
        }
        false
    }

    fn parse_expr_stmt(&mut self, start: Span) -> PResult<StmtKind> {
        let e = self.parse_expr()?;
        if self.eat(&TokenKind::Tilde) {
            let dist = self.expect_name("a distribution name")?;
            self.expect(TokenKind::LParen)?;
            let mut args = Vec::new();
            if !self.at(&TokenKind::RParen) {
                loop {
                    args.push(self.parse_expr()?);
                    if !self.eat(&TokenKind::Comma) {
                        break;
                    }
                }
            }
            self.expect(TokenKind::RParen)?;
            let truncation = if self.at_word("T") && self.peek_at(1) == &TokenKind::LBracket {
                let t_start = self.bump();
                self.bump();
                let lower = if self.at(&TokenKind::Comma) {
                    None
                } else {
                    Some(self.parse_expr()?)
                };
                self.expect(TokenKind::Comma)?;
                let upper = if self.at(&TokenKind::RBracket) {
                    None
                } else {
                    Some(self.parse_expr()?)
                };
                let close = self.expect(TokenKind::RBracket)?;
                Some(Truncation {
                    span: t_start.to(close),
                    lower,
                    upper,
                })
            } else {
                None
            };
            self.expect_semi(start)?;
            return Ok(StmtKind::Tilde {
                lhs: e,
                dist,
                args,
                truncation,
            });
        }
        if let Some(op) = self.assign_op() {
            self.bump();
            let lhs = self.lvalue_from_expr(e)?;
            let rhs = self.parse_expr()?;
            self.expect_semi(start)?;
            return Ok(StmtKind::Assign { lhs, op, rhs });
        }
        if self.is_removed_arrow(&e) {
            let span = e.span;
            return Err(self.error(
                Diagnostic::error(
                    span,
                    "the `<-` assignment operator was removed in Stan 2.33",
                )
                .with_hint("use `=`"),
            ));
        }
        if !self.at(&TokenKind::Semi) {
            return Err(self.expected("`;`, `=` or `~`"));
        }
        match e.kind {
            ExprKind::Call { name, args } => {
                self.expect_semi(start)?;
                if name.name == "increment_log_prob" {
                    return Err(self.error(
                        Diagnostic::error(
                            name.span,
                            "`increment_log_prob(...)` was removed in Stan 2.33",
                        )
                        .with_hint("write `target += ...;`"),
                    ));
                }
                Ok(StmtKind::Call { name, args })
            }
            _ => Err(self.error(
                Diagnostic::error(e.span, "this expression cannot be used as a statement")
                    .with_hint("assign it to a variable, or add it with `target += ...;`"),
            )),
        }
    }

    fn lvalue_from_expr(&mut self, e: Expr) -> PResult<LValue> {
        let span = e.span;
        let id = e.id;
        let kind = match e.kind {
            ExprKind::Var(ident) => LValueKind::Var(ident),
            ExprKind::Index { base, indices } => LValueKind::Index {
                base: Box::new(self.lvalue_from_expr(*base)?),
                indices,
            },
            ExprKind::TupleProj { base, index } => LValueKind::TupleProj {
                base: Box::new(self.lvalue_from_expr(*base)?),
                index,
            },
            ExprKind::Tuple(items) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    out.push(self.lvalue_from_expr(item)?);
                }
                LValueKind::Tuple(out)
            }
            _ => {
                return Err(self.error(
                    Diagnostic::error(span, "cannot assign to this expression").with_hint(
                        "the left of an assignment must be a variable, possibly indexed",
                    ),
                ))
            }
        };
        Ok(LValue { id, span, kind })
    }

    // ---------------------------------------------------------------- expressions

    pub(crate) fn parse_expr(&mut self) -> PResult<Expr> {
        self.enter()?;
        let result = self.parse_ternary();
        self.exit();
        result
    }

    fn parse_ternary(&mut self) -> PResult<Expr> {
        let cond = self.parse_bp(1)?;
        if !self.eat(&TokenKind::Question) {
            return Ok(cond);
        }
        let then_expr = self.parse_expr()?;
        self.expect(TokenKind::Colon)?;
        let else_expr = self.parse_expr()?;
        let span = cond.span.to(else_expr.span);
        self.mk_expr(
            span,
            ExprKind::Ternary {
                cond: Box::new(cond),
                then_expr: Box::new(then_expr),
                else_expr: Box::new(else_expr),
            },
        )
    }

    fn binop(&self) -> Option<BinOp> {
        Some(match self.peek() {
            TokenKind::OrOr => BinOp::Or,
            TokenKind::AndAnd => BinOp::And,
            TokenKind::EqEq => BinOp::Eq,
            TokenKind::Neq => BinOp::Neq,
            TokenKind::Lt => BinOp::Lt,
            TokenKind::Leq => BinOp::Leq,
            TokenKind::Gt => BinOp::Gt,
            TokenKind::Geq => BinOp::Geq,
            TokenKind::Plus => BinOp::Add,
            TokenKind::Minus => BinOp::Sub,
            TokenKind::Star => BinOp::Mul,
            TokenKind::Slash => BinOp::Div,
            TokenKind::Percent => BinOp::Mod,
            TokenKind::IntDiv => BinOp::IntDiv,
            TokenKind::EltTimes => BinOp::EltMul,
            TokenKind::EltDivide => BinOp::EltDiv,
            TokenKind::Backslash => BinOp::LeftDiv,
            TokenKind::Hat => BinOp::Pow,
            TokenKind::EltHat => BinOp::EltPow,
            _ => return None,
        })
    }

    /// Parses operators binding at least as tightly as `min_prec` (Pratt loop).
    fn parse_bp(&mut self, min_prec: u8) -> PResult<Expr> {
        self.enter()?;
        let result = self.parse_bp_inner(min_prec);
        self.exit();
        result
    }

    fn parse_bp_inner(&mut self, min_prec: u8) -> PResult<Expr> {
        let mut lhs = self.parse_prefix()?;
        let mut operators = 0usize;
        while let Some(op) = self.binop() {
            let prec = op.precedence();
            if prec < min_prec {
                break;
            }
            operators += 1;
            if operators > MAX_CHAIN_OPERATORS {
                let span = self.span();
                return Err(self.error(
                    Diagnostic::error(
                        span,
                        format!(
                            "expression is too long (more than {MAX_CHAIN_OPERATORS} operators in a row)"
                        ),
                    )
                    .with_hint("split it into several statements with intermediate variables"),
                ));
            }
            self.bump();
            let next_min = if op.is_right_assoc() { prec } else { prec + 1 };
            let rhs = self.parse_bp(next_min)?;
            let span = lhs.span.to(rhs.span);
            lhs = self.mk_expr(
                span,
                ExprKind::Binary {
                    op,
                    lhs: Box::new(lhs),
                    rhs: Box::new(rhs),
                },
            )?;
        }
        Ok(lhs)
    }

    fn parse_prefix(&mut self) -> PResult<Expr> {
        let op = match self.peek() {
            TokenKind::Bang => UnaryOp::Not,
            TokenKind::Minus => UnaryOp::Neg,
            TokenKind::Plus => UnaryOp::Plus,
            _ => return self.parse_postfix(),
        };
        let start = self.bump();
        let operand = self.parse_bp(PREFIX_PRECEDENCE)?;
        let span = start.to(operand.span);
        self.mk_expr(
            span,
            ExprKind::Unary {
                op,
                operand: Box::new(operand),
            },
        )
    }

    fn parse_postfix(&mut self) -> PResult<Expr> {
        let mut e = self.parse_primary()?;
        loop {
            match self.peek() {
                TokenKind::LBracket => {
                    let indices = self.parse_indices()?;
                    let span = e.span.to(self.prev_span());
                    e = self.mk_expr(
                        span,
                        ExprKind::Index {
                            base: Box::new(e),
                            indices,
                        },
                    )?;
                }
                TokenKind::Transpose => {
                    let end = self.bump();
                    let span = e.span.to(end);
                    e = self.mk_expr(span, ExprKind::Transpose(Box::new(e)))?;
                }
                TokenKind::Dot => {
                    let dot = self.bump();
                    let (digits, end) = match self.peek().clone() {
                        TokenKind::Int(d) => (d, self.bump()),
                        _ => return Err(self.expected("a tuple component number after `.`")),
                    };
                    let index = match digits.parse::<usize>() {
                        Ok(k) if k >= 1 => k,
                        _ => {
                            return Err(self.error(Diagnostic::error(
                                dot.to(end),
                                format!(
                                    "`{digits}` is not a valid tuple component (they count from 1)"
                                ),
                            )))
                        }
                    };
                    let span = e.span.to(end);
                    e = self.mk_expr(
                        span,
                        ExprKind::TupleProj {
                            base: Box::new(e),
                            index,
                        },
                    )?;
                }
                _ => break,
            }
        }
        Ok(e)
    }

    fn parse_indices(&mut self) -> PResult<Vec<Index>> {
        self.expect(TokenKind::LBracket)?;
        let mut indices = Vec::new();
        loop {
            indices.push(self.parse_index()?);
            if !self.eat(&TokenKind::Comma) {
                break;
            }
        }
        self.expect(TokenKind::RBracket)?;
        Ok(indices)
    }

    fn at_index_end(&self) -> bool {
        matches!(self.peek(), TokenKind::Comma | TokenKind::RBracket)
    }

    fn parse_index(&mut self) -> PResult<Index> {
        // As in stanc, an omitted index selects everything: `a[]` is `a[:]`, `a[, 1]` is
        // `a[:, 1]`.
        if self.at_index_end() {
            return Ok(Index::All);
        }
        if self.eat(&TokenKind::Colon) {
            if self.at_index_end() {
                return Ok(Index::All);
            }
            return Ok(Index::Upper(self.parse_expr()?));
        }
        let lo = self.parse_expr()?;
        if self.eat(&TokenKind::Colon) {
            if self.at_index_end() {
                return Ok(Index::Lower(lo));
            }
            return Ok(Index::Range(lo, self.parse_expr()?));
        }
        Ok(Index::Single(lo))
    }

    fn parse_primary(&mut self) -> PResult<Expr> {
        let start = self.span();
        match self.peek().clone() {
            TokenKind::Int(text) => {
                self.bump();
                let value = match text.parse::<i64>() {
                    Ok(v) if v <= i32::MAX as i64 => v,
                    _ => {
                        self.diagnostics.push(
                            Diagnostic::error(
                                start,
                                format!("integer literal `{text}` is too large"),
                            )
                            .with_hint(format!(
                                "Stan integers are 32-bit (at most {}); write `{text}.0` for a real",
                                i32::MAX
                            )),
                        );
                        i32::MAX as i64
                    }
                };
                self.mk_expr(start, ExprKind::IntLit(value))
            }
            TokenKind::Real(text) => {
                self.bump();
                let value = text.parse::<f64>().unwrap_or(f64::NAN);
                self.mk_expr(start, ExprKind::RealLit { value, text })
            }
            TokenKind::Imag(text) => {
                self.bump();
                let value = text.parse::<f64>().unwrap_or(f64::NAN);
                self.mk_expr(start, ExprKind::ImagLit { value, text })
            }
            TokenKind::Str(_) => {
                self.bump();
                Err(self.error(Diagnostic::error(
                    start,
                    "strings are only allowed as arguments of `print`, `reject` and `fatal_error`",
                )))
            }
            TokenKind::Ident(name) => {
                if self.peek_at(1) == &TokenKind::LParen {
                    return self.parse_call(name);
                }
                if RESERVED.contains(&name.as_str()) {
                    return Err(self.expected("an expression"));
                }
                self.bump();
                self.mk_expr(start, ExprKind::Var(Ident { name, span: start }))
            }
            TokenKind::LParen => {
                self.bump();
                let first = self.parse_expr()?;
                if self.eat(&TokenKind::Comma) {
                    let mut items = vec![first];
                    loop {
                        items.push(self.parse_expr()?);
                        if !self.eat(&TokenKind::Comma) {
                            break;
                        }
                    }
                    let close = self.expect(TokenKind::RParen)?;
                    return self.mk_expr(start.to(close), ExprKind::Tuple(items));
                }
                let close = self.expect(TokenKind::RParen)?;
                self.mk_expr(start.to(close), ExprKind::Paren(Box::new(first)))
            }
            TokenKind::LBrace => {
                self.bump();
                if self.at(&TokenKind::RBrace) {
                    let close = self.bump();
                    return Err(self.error(Diagnostic::error(
                        start.to(close),
                        "an array expression `{ ... }` needs at least one element",
                    )));
                }
                let items = self.parse_expr_list(TokenKind::RBrace)?;
                let span = start.to(self.prev_span());
                self.mk_expr(span, ExprKind::Array(items))
            }
            TokenKind::LBracket => {
                self.bump();
                let items = if self.at(&TokenKind::RBracket) {
                    self.bump();
                    Vec::new()
                } else {
                    self.parse_expr_list(TokenKind::RBracket)?
                };
                let span = start.to(self.prev_span());
                self.mk_expr(span, ExprKind::RowVector(items))
            }
            _ => Err(self.expected("an expression")),
        }
    }

    /// Comma-separated expressions followed by `close` (consumed).
    fn parse_expr_list(&mut self, close: TokenKind) -> PResult<Vec<Expr>> {
        let mut items = Vec::new();
        loop {
            items.push(self.parse_expr()?);
            if !self.eat(&TokenKind::Comma) {
                break;
            }
        }
        self.expect(close)?;
        Ok(items)
    }

    fn parse_call(&mut self, name: String) -> PResult<Expr> {
        let name_span = self.bump();
        self.bump(); // `(`
        let ident = Ident {
            name: name.clone(),
            span: name_span,
        };
        let mut args = Vec::new();
        let mut conditional = false;
        if !self.at(&TokenKind::RParen) {
            args.push(self.parse_expr()?);
            if self.eat(&TokenKind::Bar) {
                conditional = true;
                if !self.at(&TokenKind::RParen) {
                    loop {
                        args.push(self.parse_expr()?);
                        if !self.eat(&TokenKind::Comma) {
                            break;
                        }
                    }
                }
            } else {
                while self.eat(&TokenKind::Comma) {
                    args.push(self.parse_expr()?);
                }
            }
        }
        let close = self.expect(TokenKind::RParen)?;
        let span = name_span.to(close);
        let removed = |this: &mut Self, what: &str, hint: &str| -> Fatal {
            this.error(Diagnostic::error(name_span, what.to_string()).with_hint(hint.to_string()))
        };
        match name.as_str() {
            "target" if args.is_empty() => return self.mk_expr(span, ExprKind::Target),
            "get_lp" => {
                return Err(removed(
                    self,
                    "`get_lp()` was removed in Stan 2.33",
                    "use `target()`",
                ))
            }
            "if_else" => {
                return Err(removed(
                    self,
                    "`if_else(c, a, b)` was removed in Stan 2.33",
                    "use the conditional operator `c ? a : b`",
                ))
            }
            "increment_log_prob" => {
                return Err(removed(
                    self,
                    "`increment_log_prob(...)` was removed in Stan 2.33",
                    "write `target += ...;`",
                ))
            }
            "integrate_ode" => {
                return Err(removed(
                    self,
                    "`integrate_ode` was removed from Stan",
                    "use the variadic ODE solver `ode_rk45` (the ODE function then takes its \
                     arguments directly instead of packed arrays)",
                ));
            }
            "integrate_ode_rk45" | "integrate_ode_bdf" | "integrate_ode_adams" => {
                // Deprecated, not removed: semantic changes such as the ODE interface are removed
                // only at Stan 3.0. stanc's warning, word for word.
                let new_name = &name["integrate_".len()..];
                self.diagnostics.push(Diagnostic::warning(
                    name_span,
                    format!(
                        "{name} is deprecated and will be removed in Stan 3.0. Use {new_name} \
                         instead. The new interface is slightly different, see: \
                         https://mc-stan.org/users/documentation/case-studies/convert_odes.html"
                    ),
                ));
            }
            _ => {}
        }
        if RESERVED.contains(&name.as_str()) {
            return Err(self.error(Diagnostic::error(
                name_span,
                format!("`{name}` is a reserved word, not a function"),
            )));
        }
        let kind = if conditional {
            ExprKind::CondDistCall { name: ident, args }
        } else {
            ExprKind::Call { name: ident, args }
        };
        self.mk_expr(span, kind)
    }
}
