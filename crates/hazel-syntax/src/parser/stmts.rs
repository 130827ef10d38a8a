//! Statements: control flow, `~`, assignments (the assignable left-hand side is parsed as an
//! expression and converted), `print`/`reject`, and the removed pre-2.33 forms with their
//! modern spelling.

use super::*;

impl Parser<'_> {
    pub(super) fn expect_semi(&mut self, _stmt_start: Span) -> PResult<Span> {
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

    pub(super) fn removed_arrow(&mut self) -> Fatal {
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

    pub(super) fn parse_stmt(&mut self) -> PResult<Stmt> {
        self.enter()?;
        self.stmt_depth += 1;
        let result = if self.stmt_depth > MAX_NESTING {
            let span = self.span();
            Err(self.error(too_deep(span, "statements are", MAX_NESTING)))
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
}
