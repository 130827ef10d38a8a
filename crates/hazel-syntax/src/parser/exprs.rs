//! Expressions: the Pratt loop over binary operators (stanc's precedence; left-associative
//! chains built without recursion, capped at [`MAX_CHAIN_OPERATORS`]), prefix and postfix
//! operators, indexing, primaries and calls.

use super::*;

impl Parser<'_> {
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
    pub(super) fn parse_bp(&mut self, min_prec: u8) -> PResult<Expr> {
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
                if is_reserved(&name) {
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
        if is_reserved(&name) {
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
