//! Declarations: the functions block and function definitions, unsized types (arguments and
//! returns), declared types (array sizes, shapes, constraints in `<...>` and the constrained
//! type keywords of [`CONSTRAINED_TYPES`]) and variable declarations.

use super::*;

impl Parser<'_> {
    pub(super) fn parse_functions_body(&mut self) -> Vec<FunDef> {
        let mut functions = Vec::new();
        while !self.body_ends("the `functions` block is not closed") {
            let before = self.pos;
            match self.parse_fundef() {
                Ok(f) => functions.push(f),
                Err(Fatal) => self.recover_in_body(before),
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

    pub(super) fn parse_var_decl(
        &mut self,
        start: Span,
        constraints_allowed: bool,
    ) -> PResult<StmtKind> {
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
}
