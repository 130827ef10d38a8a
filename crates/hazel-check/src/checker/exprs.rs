//! Expressions: the type of every expression (with its data-only flag), operators resolved
//! through the signature table, indexing.

use super::*;

impl Checker {
    /// stanc's notice for `/` between two ints (valid Stan that rounds towards zero, often by
    /// mistake), with its suggested rewrites.
    fn warn_int_division(&mut self, e: &Expr, lhs: &Expr, rhs: &Expr) {
        let text = hazel_syntax::pretty::print_expr(e);
        let lhs_text = hazel_syntax::pretty::print_expr(lhs);
        let rhs_text = hazel_syntax::pretty::print_expr(rhs);
        let real = match &rhs.kind {
            ExprKind::IntLit(i) => format!("{lhs_text} / {i}.0"),
            _ => format!("{lhs_text} * 1.0 / {rhs_text}"),
        };
        self.error(
            Diagnostic::warning(e.span, format!("found int division: {text}")).with_hint(format!(
                "values will be rounded towards zero; if rounding is not desired write \
                     the division as `{real}`; if rounding is intended use the integer \
                     division operator `%/%`"
            )),
        );
    }

    pub(super) fn unknown_variable(&mut self, name: &Ident) {
        let mut d = Diagnostic::error(name.span, format!("unknown variable `{}`", name.name))
            .with_primary_label("not declared in this scope");
        let in_scope: Vec<&str> = self
            .scopes
            .iter()
            .flat_map(|s| s.keys().map(|k| k.as_str()))
            .collect();
        if let Some(best) = closest(&name.name, in_scope.into_iter()) {
            d = d.with_hint(format!("did you mean `{best}`?"));
        } else if self.table.contains(&name.name) || self.functions_by_name.contains_key(&name.name)
        {
            d = d.with_hint(format!(
                "`{}` is a function; call it with `(...)`",
                name.name
            ));
        }
        self.error(d);
    }

    // ------------------------------------------------------------------ expressions

    /// Types an expression, records its type and data-only status, and returns both.
    pub(super) fn check_expr(&mut self, e: &Expr) -> (Type, bool) {
        let (t, data) = self.infer(e);
        *Self::slot(&mut self.expr_types, e.id, Type::Error) = t.clone();
        *Self::slot(&mut self.data_only, e.id, false) = data;
        (t, data)
    }

    fn infer(&mut self, e: &Expr) -> (Type, bool) {
        match &e.kind {
            ExprKind::IntLit(_) => (Type::Int, true),
            ExprKind::RealLit { .. } => (Type::Real, true),
            ExprKind::ImagLit { .. } => (Type::Complex, true),
            ExprKind::Var(name) => {
                if let Some(v) = self.lookup(&name.name) {
                    *Self::slot(&mut self.var_refs, e.id, None) = Some(v);
                    let info = &self.vars[v.0 as usize];
                    return (info.ty.clone(), info.data_only);
                }
                // `f_lupdf` names the function declared as `f_lpdf` (likewise `_lupmf`).
                let declared = name
                    .name
                    .strip_suffix("_lupdf")
                    .map(|b| format!("{b}_lpdf"));
                let declared = declared.or_else(|| {
                    name.name
                        .strip_suffix("_lupmf")
                        .map(|b| format!("{b}_lpmf"))
                });
                let declared = declared.as_deref().unwrap_or(&name.name);
                if let Some(fids) = self.functions_by_name.get(declared) {
                    // A function used as a value (argument of a higher-order built-in).
                    if let Some(&fid) = fids.first() {
                        let ft = FunctionType {
                            args: self.functions[fid].args.clone(),
                            ret: self.functions[fid].ret.clone(),
                        };
                        self.set_call(e.id, CallTarget::User { function: fid });
                        return (Type::Function(Box::new(ft)), true);
                    }
                }
                self.unknown_variable(name);
                (Type::Error, true)
            }
            ExprKind::Paren(inner) => self.check_expr(inner),
            ExprKind::Binary { op, lhs, rhs } => {
                let (lt, ld) = self.check_expr(lhs);
                let (rt, rd) = self.check_expr(rhs);
                if *op == BinOp::Div && lt == Type::Int && rt == Type::Int {
                    self.warn_int_division(e, lhs, rhs);
                }
                let t = self.operator(
                    e,
                    &format!("operator{}", op.symbol()),
                    op.symbol(),
                    &[lt, rt],
                );
                let data = (ld && rd) || t.is_int_based();
                (t, data)
            }
            ExprKind::Unary { op, operand } => {
                let (t, d) = self.check_expr(operand);
                let r = self.operator(e, &format!("prefix{}", op.symbol()), op.symbol(), &[t]);
                (r, d)
            }
            ExprKind::Transpose(inner) => {
                let (t, d) = self.check_expr(inner);
                (self.operator(e, "postfix'", "'", &[t]), d)
            }
            ExprKind::Ternary {
                cond,
                then_expr,
                else_expr,
            } => {
                let (ct, cd) = self.check_expr(cond);
                if !matches!(ct, Type::Int | Type::Error) {
                    self.error(
                        Diagnostic::error(
                            cond.span,
                            format!("the condition of `?:` must be `int`, found `{ct}`"),
                        )
                        .with_primary_label("expected `int`"),
                    );
                }
                let (tt, td) = self.check_expr(then_expr);
                let (et, ed) = self.check_expr(else_expr);
                match Type::common(&tt, &et) {
                    Some(t) => (t, cd && td && ed),
                    None => {
                        self.error(
                            Diagnostic::error(
                                e.span,
                                format!("the branches of `?:` have incompatible types `{tt}` and `{et}`"),
                            )
                            .with_label(then_expr.span, format!("`{tt}`"))
                            .with_label(else_expr.span, format!("`{et}`")),
                        );
                        (Type::Error, false)
                    }
                }
            }
            ExprKind::Call { name, args } => self.check_call(e.id, e.span, name, args, false),
            ExprKind::CondDistCall { name, args } => {
                self.check_call(e.id, e.span, name, args, true)
            }
            ExprKind::Target => {
                // `target()` acts like a function ending in `_lp`.
                if !self.lp_context() {
                    self.error(
                        Diagnostic::error(
                            e.span,
                            format!(
                                "`target()` is only allowed in the model and transformed parameters blocks and in functions ending in `_lp`, not in {}",
                                block_phrase(self.block)
                            ),
                        )
                        .with_primary_label("not allowed here"),
                    );
                }
                (Type::Real, false)
            }
            ExprKind::Index { base, indices } => {
                let (bt, bd) = self.check_expr(base);
                let mut data = bd;
                for idx in indices {
                    data &= self.check_index_exprs(idx);
                }
                (self.index_type(&bt, indices, e.span), data)
            }
            ExprKind::TupleProj { base, index } => {
                let (bt, bd) = self.check_expr(base);
                (self.project(&bt, *index, e.span), bd)
            }
            ExprKind::Array(items) => {
                let mut t: Option<Type> = None;
                let mut data = true;
                for item in items {
                    let (it, id) = self.check_expr(item);
                    data &= id;
                    t = match t {
                        None => Some(it),
                        Some(prev) => match Type::common(&prev, &it) {
                            Some(c) => Some(c),
                            None => {
                                self.error(
                                    Diagnostic::error(
                                        item.span,
                                        format!(
                                            "array elements must have one type: found `{prev}` and `{it}`"
                                        ),
                                    )
                                    .with_primary_label(format!("`{it}`")),
                                );
                                Some(Type::Error)
                            }
                        },
                    };
                }
                match t {
                    Some(Type::Error) | None => (Type::Error, data),
                    Some(t) => (Type::array(1, t), data),
                }
            }
            ExprKind::RowVector(items) => {
                let mut data = true;
                let mut kinds = Vec::new();
                for item in items {
                    let (it, id) = self.check_expr(item);
                    data &= id;
                    kinds.push((it, item.span));
                }
                let t = if kinds.iter().all(|(t, _)| t.is_int_or_real()) {
                    Type::RowVector
                } else if kinds
                    .iter()
                    .all(|(t, _)| matches!(t, Type::Int | Type::Real | Type::Complex | Type::Error))
                {
                    Type::ComplexRowVector
                } else if kinds
                    .iter()
                    .all(|(t, _)| matches!(t, Type::RowVector | Type::Error))
                {
                    Type::Matrix
                } else if kinds.iter().all(|(t, _)| {
                    matches!(t, Type::RowVector | Type::ComplexRowVector | Type::Error)
                }) {
                    Type::ComplexMatrix
                } else {
                    let bad = kinds
                        .iter()
                        .find(|(t, _)| {
                            !matches!(
                                t,
                                Type::Int
                                    | Type::Real
                                    | Type::Complex
                                    | Type::RowVector
                                    | Type::ComplexRowVector
                            )
                        })
                        .or(kinds.first())
                        .cloned();
                    if let Some((t, span)) = bad {
                        self.error(
                            Diagnostic::error(
                                span,
                                format!(
                                    "`[...]` needs all scalars (a row vector) or all row vectors (a matrix), found `{t}`"
                                ),
                            )
                            .with_primary_label(format!("`{t}`")),
                        );
                    }
                    Type::Error
                };
                (t, data)
            }
            ExprKind::Tuple(items) => {
                let mut data = true;
                let mut ts = Vec::new();
                for item in items {
                    let (t, d) = self.check_expr(item);
                    data &= d;
                    ts.push(t);
                }
                (Type::Tuple(ts), data)
            }
        }
    }

    pub(super) fn project(&mut self, base: &Type, index: usize, span: Span) -> Type {
        match base {
            Type::Tuple(ts) => match index.checked_sub(1).and_then(|i| ts.get(i)) {
                Some(t) => t.clone(),
                None => {
                    self.error(Diagnostic::error(
                        span,
                        format!("tuple `{base}` has no component {index}"),
                    ));
                    Type::Error
                }
            },
            Type::Error => Type::Error,
            other => {
                self.error(Diagnostic::error(
                    span,
                    format!("`.{index}` needs a tuple, found `{other}`"),
                ));
                Type::Error
            }
        }
    }

    fn operator(&mut self, e: &Expr, name: &str, symbol: &str, args: &[Type]) -> Type {
        if args.contains(&Type::Error) {
            return Type::Error;
        }
        match self.table.resolve(name, args) {
            Ok(r) => {
                self.set_call(
                    e.id,
                    CallTarget::Builtin {
                        signature: r.signature,
                        name: name.to_string(),
                    },
                );
                r.ret
            }
            Err(_) => {
                let found = args
                    .iter()
                    .map(|t| format!("`{t}`"))
                    .collect::<Vec<_>>()
                    .join(" and ");
                let mut d = Diagnostic::error(
                    e.span,
                    format!("operator `{symbol}` is not defined for {found}"),
                )
                .with_primary_label(format!("`{symbol}` applied to {found}"));
                if symbol == "*" && args.len() == 2 && args[0] == args[1] && !args[0].is_scalar() {
                    d = d.with_hint("for elementwise multiplication use `.*`");
                } else if symbol == "/" && args.len() == 2 && args[0] == args[1] {
                    d = d.with_hint("for elementwise division use `./`");
                }
                self.error(d);
                Type::Error
            }
        }
    }

    /// Checks the expressions inside one index and returns whether they are data-only.
    pub(super) fn check_index_exprs(&mut self, idx: &Index) -> bool {
        let mut data = true;
        let exprs: Vec<&Expr> = match idx {
            Index::All => vec![],
            Index::Single(e) | Index::Lower(e) | Index::Upper(e) => vec![e],
            Index::Range(a, b) => vec![a, b],
        };
        for ex in exprs {
            let (t, d) = self.check_expr(ex);
            data &= d;
            let ok = match idx {
                Index::Single(_) => {
                    matches!(t, Type::Int | Type::Error) || t == Type::array(1, Type::Int)
                }
                _ => matches!(t, Type::Int | Type::Error),
            };
            if !ok {
                let expected = if matches!(idx, Index::Single(_)) {
                    "`int` or `array[] int`"
                } else {
                    "`int`"
                };
                self.error(
                    Diagnostic::error(ex.span, format!("indexes must be {expected}, found `{t}`"))
                        .with_primary_label(format!("found `{t}`")),
                );
            }
        }
        data
    }

    /// The type of `base[indices]`; a single `int` index removes a dimension, a multi-index
    /// (`array[] int`, `:`, `a:b`, `a:`, `:b`) keeps it.
    pub(super) fn index_type(&mut self, base: &Type, indices: &[Index], span: Span) -> Type {
        if *base == Type::Error {
            return Type::Error;
        }
        if base.index_capacity() == 0 {
            self.error(
                Diagnostic::error(span, format!("a value of type `{base}` cannot be indexed"))
                    .with_primary_label("indexed here"),
            );
            return Type::Error;
        }
        if indices.len() > base.index_capacity() {
            self.error(
                Diagnostic::error(
                    span,
                    format!(
                        "too many indexes: `{base}` takes at most {}, found {}",
                        base.index_capacity(),
                        indices.len()
                    ),
                )
                .with_primary_label("indexed here"),
            );
            return Type::Error;
        }
        let keeps: Vec<bool> = indices
            .iter()
            .map(|i| match i {
                Index::Single(e) => {
                    let t = self
                        .expr_types
                        .get(e.id.0 as usize)
                        .cloned()
                        .unwrap_or(Type::Error);
                    t.array_dims() == 1
                }
                _ => true,
            })
            .collect();
        let array_dims = base.array_dims();
        let elem = base.array_element().clone();
        let kept_array = keeps.iter().take(array_dims).filter(|k| **k).count()
            + array_dims.saturating_sub(keeps.len());
        let own: Vec<bool> = keeps.iter().skip(array_dims).copied().collect();
        let (complex, own_dims) = match &elem {
            Type::Vector => (false, 1),
            Type::RowVector => (false, 1),
            Type::Matrix => (false, 2),
            Type::ComplexVector | Type::ComplexRowVector => (true, 1),
            Type::ComplexMatrix => (true, 2),
            _ => (false, 0),
        };
        let scalar = if complex { Type::Complex } else { Type::Real };
        let new_elem = match own_dims {
            0 => elem.clone(),
            1 => match own.first() {
                None | Some(true) => elem.clone(),
                Some(false) => scalar,
            },
            _ => {
                let rows = own.first().copied().unwrap_or(true);
                let cols = own.get(1).copied().unwrap_or(true);
                match (rows, cols, complex) {
                    (true, true, _) => elem.clone(),
                    (true, false, false) => Type::Vector,
                    (true, false, true) => Type::ComplexVector,
                    (false, true, false) => Type::RowVector,
                    (false, true, true) => Type::ComplexRowVector,
                    (false, false, _) => scalar,
                }
            }
        };
        Type::array(kept_array, new_elem)
    }
}
