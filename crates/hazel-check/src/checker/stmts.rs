//! Statements: the block rules (what may appear where: `target +=`, `~`, `_rng`, `_lp`
//! contexts), control flow, assignments and assignable left-hand sides, `~` with its
//! truncation.

use super::calls::density_suffix;
use super::*;

impl Checker {
    // ------------------------------------------------------------------ statements

    pub(super) fn check_stmt(&mut self, stmt: &Stmt) {
        let was_top = self.top_level;
        if !matches!(stmt.kind, StmtKind::VarDecl(_)) {
            self.top_level = false;
        }
        match &stmt.kind {
            StmtKind::VarDecl(decl) => self.check_var_decl(stmt, decl),
            StmtKind::Assign { lhs, op, rhs } => self.check_assign(stmt, lhs, *op, rhs),
            StmtKind::Tilde {
                lhs,
                dist,
                args,
                truncation,
            } => self.check_tilde(stmt, lhs, dist, args, truncation.as_ref()),
            StmtKind::TargetPlusAssign(e) => {
                self.require_target_context(stmt.span, "`target +=`");
                let (t, _) = self.check_expr(e);
                if !(t.is_int_based() || t.is_real_based() || t == Type::Error) {
                    self.error(
                        Diagnostic::error(
                            e.span,
                            format!("`target +=` needs a real value or container, found `{t}`"),
                        )
                        .with_primary_label("this expression"),
                    );
                }
            }
            StmtKind::JacobianPlusAssign(e) => {
                let ok = self.block == Some(BlockKind::TransformedParameters)
                    || self.function.as_ref().is_some_and(|f| f.is_jacobian());
                if !ok {
                    self.error(Diagnostic::error(
                        stmt.span,
                        format!(
                            "`jacobian +=` is only allowed in the transformed parameters block \
                             and in functions ending in `_jacobian`, not in {}",
                            block_phrase(self.block)
                        ),
                    ));
                }
                let (t, _) = self.check_expr(e);
                if !(t.is_int_based() || t.is_real_based() || t == Type::Error) {
                    self.error(Diagnostic::error(
                        e.span,
                        format!("`jacobian +=` needs a real value or container, found `{t}`"),
                    ));
                }
            }
            StmtKind::For {
                var,
                lower,
                upper,
                body,
            } => {
                for bound in [lower, upper] {
                    let (t, _) = self.check_expr(bound);
                    if !matches!(t, Type::Int | Type::Error) {
                        self.error(
                            Diagnostic::error(
                                bound.span,
                                format!("for-loop bounds must be `int`, found `{t}`"),
                            )
                            .with_primary_label("expected `int`"),
                        );
                    }
                }
                self.push_scope();
                self.declare(var, Type::Int, Origin::LoopVar(self.block), Some(stmt.id));
                self.loop_depth += 1;
                self.check_stmt(body);
                self.loop_depth -= 1;
                self.pop_scope();
            }
            StmtKind::Foreach {
                var,
                iterable,
                body,
            } => {
                let (t, _) = self.check_expr(iterable);
                let elem = match &t {
                    Type::Array(..) => t.index_once().unwrap_or(Type::Error),
                    Type::Vector | Type::RowVector | Type::Matrix => Type::Real,
                    Type::ComplexVector | Type::ComplexRowVector | Type::ComplexMatrix => {
                        Type::Complex
                    }
                    Type::Error => Type::Error,
                    other => {
                        self.error(
                            Diagnostic::error(
                                iterable.span,
                                format!(
                                    "a foreach loop needs an array, vector or matrix, found `{other}`"
                                ),
                            )
                            .with_primary_label("not iterable"),
                        );
                        Type::Error
                    }
                };
                self.push_scope();
                self.declare(var, elem, Origin::LoopVar(self.block), Some(stmt.id));
                self.loop_depth += 1;
                self.check_stmt(body);
                self.loop_depth -= 1;
                self.pop_scope();
            }
            StmtKind::While { cond, body } => {
                self.check_condition(cond, "while");
                self.loop_depth += 1;
                self.check_scoped(body);
                self.loop_depth -= 1;
            }
            StmtKind::If {
                cond,
                then_branch,
                else_branch,
            } => {
                self.check_condition(cond, "if");
                self.check_scoped(then_branch);
                if let Some(e) = else_branch {
                    self.check_scoped(e);
                }
            }
            StmtKind::Break | StmtKind::Continue => {
                if self.loop_depth == 0 {
                    let word = if matches!(stmt.kind, StmtKind::Break) {
                        "break"
                    } else {
                        "continue"
                    };
                    self.error(Diagnostic::error(
                        stmt.span,
                        format!("`{word}` is only allowed inside a loop"),
                    ));
                }
            }
            StmtKind::Return(value) => self.check_return(stmt, value.as_ref()),
            StmtKind::Print(items) | StmtKind::Reject(items) | StmtKind::FatalError(items) => {
                for item in items {
                    if let Printable::Expr(e) = item {
                        let (t, _) = self.check_expr(e);
                        if matches!(t, Type::Function(_) | Type::Void) {
                            self.error(Diagnostic::error(
                                e.span,
                                format!("cannot print a value of type `{t}`"),
                            ));
                        }
                    }
                }
            }
            StmtKind::Block(stmts) | StmtKind::Profile { body: stmts, .. } => {
                self.push_scope();
                for s in stmts {
                    self.check_stmt(s);
                }
                self.pop_scope();
            }
            StmtKind::Call { name, args } => {
                let ret = self.check_call(stmt.id, stmt.span, name, args, false);
                if !matches!(ret.0, Type::Void | Type::Error) {
                    self.error(
                        Diagnostic::error(
                            stmt.span,
                            format!(
                                "`{}` returns `{}`, so its result cannot be discarded",
                                name.name, ret.0
                            ),
                        )
                        .with_hint("only functions returning `void` can be called as statements"),
                    );
                }
            }
            StmtKind::Empty => {}
        }
        self.top_level = was_top;
    }

    /// Checks a statement in its own scope (branches and loop bodies).
    fn check_scoped(&mut self, stmt: &Stmt) {
        self.push_scope();
        self.check_stmt(stmt);
        self.pop_scope();
    }

    fn check_condition(&mut self, cond: &Expr, what: &str) {
        let (t, _) = self.check_expr(cond);
        if !t.is_int_or_real() {
            self.error(
                Diagnostic::error(
                    cond.span,
                    format!("the condition of `{what}` must be `int` or `real`, found `{t}`"),
                )
                .with_primary_label("this condition"),
            );
        }
    }

    fn require_target_context(&mut self, span: Span, what: &str) {
        let ok = match &self.function {
            Some(f) => f.is_lp(),
            None => self.block == Some(BlockKind::Model),
        };
        if !ok {
            self.error(
                Diagnostic::error(
                    span,
                    format!(
                        "{what} is only allowed in the model block and in functions ending in `_lp`, not in {}",
                        block_phrase(self.block)
                    ),
                )
                .with_primary_label("not allowed here"),
            );
        }
    }

    fn check_return(&mut self, stmt: &Stmt, value: Option<&Expr>) {
        let Some(ctx) = self.function.clone() else {
            if value.is_some() {
                self.error(Diagnostic::error(
                    stmt.span,
                    "`return` with a value is only allowed inside a function",
                ));
            }
            return;
        };
        match (value, &ctx.ret) {
            (None, Type::Void) => {}
            (None, ret) => self.error(Diagnostic::error(
                stmt.span,
                format!(
                    "function `{}` must return a value of type `{ret}`",
                    ctx.name
                ),
            )),
            (Some(e), Type::Void) => {
                self.check_expr(e);
                self.error(Diagnostic::error(
                    e.span,
                    format!(
                        "function `{}` returns `void` and cannot return a value",
                        ctx.name
                    ),
                ));
            }
            (Some(e), ret) => {
                let (t, _) = self.check_expr(e);
                if !t.assignable_to(ret) {
                    self.error(
                        Diagnostic::error(
                            e.span,
                            format!("`{}` must return `{ret}`, found `{t}`", ctx.name),
                        )
                        .with_primary_label(format!("expected `{ret}`, found `{t}`")),
                    );
                }
            }
        }
    }

    fn check_assign(&mut self, stmt: &Stmt, lhs: &LValue, op: AssignOp, rhs: &Expr) {
        let (rhs_t, _) = self.check_expr(rhs);
        let lhs_t = self.check_lvalue(lhs);
        match op.binary_op() {
            None => {
                if !rhs_t.assignable_to(&lhs_t) {
                    self.error(
                        Diagnostic::error(
                            rhs.span,
                            format!("cannot assign a value of type `{rhs_t}` to `{lhs_t}`"),
                        )
                        .with_primary_label(format!("expected `{lhs_t}`, found `{rhs_t}`"))
                        .with_label(lhs.span, format!("this has type `{lhs_t}`")),
                    );
                }
            }
            Some(bin) => {
                if lhs_t == Type::Error || rhs_t == Type::Error {
                    return;
                }
                let opname = format!("operator{}", bin.symbol());
                match self.table.resolve(&opname, &[lhs_t.clone(), rhs_t.clone()]) {
                    Ok(r) => {
                        self.set_call(
                            stmt.id,
                            CallTarget::Builtin {
                                signature: r.signature,
                                name: opname,
                            },
                        );
                        if !r.ret.assignable_to(&lhs_t) {
                            self.error(Diagnostic::error(
                                stmt.span,
                                format!(
                                    "`{}` on `{lhs_t}` and `{rhs_t}` gives `{}`, which cannot be stored back in `{lhs_t}`",
                                    op.symbol(), r.ret
                                ),
                            ));
                        }
                    }
                    Err(_) => self.error(
                        Diagnostic::error(
                            stmt.span,
                            format!(
                                "`{}` is not defined for `{lhs_t}` and `{rhs_t}`",
                                op.symbol()
                            ),
                        )
                        .with_label(rhs.span, format!("this has type `{rhs_t}`")),
                    ),
                }
            }
        }
    }

    /// Types an lvalue and checks that its variable may be assigned here.
    fn check_lvalue(&mut self, lv: &LValue) -> Type {
        match &lv.kind {
            LValueKind::Var(name) => {
                let Some(v) = self.lookup(&name.name) else {
                    self.unknown_variable(name);
                    return Type::Error;
                };
                *Self::slot(&mut self.var_refs, lv.id, None) = Some(v);
                let info = self.vars[v.0 as usize].clone();
                let reason = match info.origin {
                    Origin::LoopVar(_) => Some("it is a loop variable".to_string()),
                    Origin::FunctionArg { .. } => {
                        Some("function arguments are read-only".to_string())
                    }
                    Origin::Block(b) if Some(b) != self.block || self.function.is_some() => {
                        Some(format!(
                            "`{}` is {} and cannot be assigned in {}",
                            info.name,
                            origin_word(info.origin),
                            block_phrase(self.block)
                        ))
                    }
                    Origin::Block(BlockKind::Parameters | BlockKind::Data) => Some(format!(
                        "`{}` is {} and cannot be assigned",
                        info.name,
                        origin_word(info.origin)
                    )),
                    _ => None,
                };
                if let Some(reason) = reason {
                    self.error(
                        Diagnostic::error(
                            name.span,
                            format!("cannot assign to `{}`: {reason}", info.name),
                        )
                        .with_primary_label("assigned here")
                        .with_label(info.span, "declared here"),
                    );
                }
                info.ty
            }
            LValueKind::Index { base, indices } => {
                let base_t = self.check_lvalue(base);
                for idx in indices {
                    self.check_index_exprs(idx);
                }
                self.index_type(&base_t, indices, lv.span)
            }
            LValueKind::TupleProj { base, index } => {
                let base_t = self.check_lvalue(base);
                self.project(&base_t, *index, lv.span)
            }
            LValueKind::Tuple(parts) => {
                Type::Tuple(parts.iter().map(|p| self.check_lvalue(p)).collect())
            }
        }
    }

    fn check_tilde(
        &mut self,
        stmt: &Stmt,
        lhs: &Expr,
        dist: &Ident,
        args: &[Expr],
        truncation: Option<&Truncation>,
    ) {
        self.require_target_context(stmt.span, "a `~` statement");
        let (lhs_t, _) = self.check_expr(lhs);
        let mut types = vec![lhs_t.clone()];
        for a in args {
            types.push(self.check_expr(a).0);
        }
        if density_suffix(&dist.name).is_some() {
            let family = dist.name[..dist.name.rfind('_').unwrap_or(0)].to_string();
            self.error(
                Diagnostic::error(
                    dist.span,
                    format!(
                        "`~` takes the distribution name without a suffix: `{}`",
                        dist.name
                    ),
                )
                .with_hint(format!("write `~ {family}(...)`")),
            );
            return;
        }
        let any_error = types.contains(&Type::Error);
        let mut target = None;
        let mut found_name = false;
        for suffix in ["_lpdf", "_lpmf"] {
            let full = format!("{}{suffix}", dist.name);
            if let Some(fids) = self.functions_by_name.get(&full).cloned() {
                found_name = true;
                if let Ok((fid, _)) = self.resolve_user(&fids, &types) {
                    target = Some(CallTarget::User { function: fid });
                    break;
                }
            }
            if self.table.contains(&full) {
                found_name = true;
                if let Ok(r) = self.table.resolve(&full, &types) {
                    self.warn_deprecated(&dist.name, dist.span);
                    target = Some(CallTarget::Builtin {
                        signature: r.signature,
                        name: full,
                    });
                    break;
                }
            }
        }
        match target {
            Some(t) => self.set_call(stmt.id, t),
            None if !found_name => {
                let mut d =
                    Diagnostic::error(dist.span, format!("unknown distribution `{}`", dist.name))
                        .with_primary_label("no `_lpdf` or `_lpmf` function of this name");
                if let Some(best) = self.closest_distribution(&dist.name) {
                    d = d.with_hint(format!("did you mean `{best}`?"));
                }
                self.error(d);
                return;
            }
            None if any_error => return,
            None => {
                let shown: Vec<String> = types.iter().map(|t| t.to_string()).collect();
                let mut d = Diagnostic::error(
                    stmt.span,
                    format!(
                        "no signature of `{}` accepts `{}`",
                        dist.name,
                        format_args!("{} ~ {}({})", shown[0], dist.name, shown[1..].join(", "))
                    ),
                );
                d = d.with_hint(self.signature_list(&[
                    format!("{}_lpdf", dist.name),
                    format!("{}_lpmf", dist.name),
                ]));
                self.error(d);
                return;
            }
        }
        if let Some(tr) = truncation {
            self.check_truncation(stmt, dist, tr, &types);
        }
    }

    /// `T[L, ]` needs `dist_lccdf(L | ...)`, `T[, U]` needs `dist_lcdf(U | ...)`, and
    /// `T[L, U]` needs `dist_lcdf` at both bounds; each is resolved like a call with the bound
    /// in place of the variate, and recorded in the truncation table.
    fn check_truncation(&mut self, stmt: &Stmt, dist: &Ident, tr: &Truncation, types: &[Type]) {
        let mut bounds: Vec<(&Expr, &str)> = Vec::new();
        match (&tr.lower, &tr.upper) {
            (Some(l), None) => bounds.push((l, "_lccdf")),
            (None, Some(u)) => bounds.push((u, "_lcdf")),
            (Some(l), Some(u)) => {
                bounds.push((l, "_lcdf"));
                bounds.push((u, "_lcdf"));
            }
            (None, None) => {}
        }
        let mut targets = Vec::new();
        for (b, cdf) in bounds {
            let (bt, _) = self.check_expr(b);
            let full = format!("{}{cdf}", dist.name);
            let user = self.functions_by_name.get(&full).cloned();
            if !self.table.contains(&full) && user.is_none() {
                self.error(
                    Diagnostic::error(
                        tr.span,
                        format!("truncation needs `{full}`, which does not exist"),
                    )
                    .with_primary_label("truncated here")
                    .with_hint("only distributions with a CDF can be truncated"),
                );
                return;
            }
            if bt == Type::Error || types.contains(&Type::Error) {
                continue;
            }
            // A bound is a scalar, or (vectorised truncation) has the variate's shape.
            if !(bt.is_int_or_real() || bt.with_real_base() == types[0].with_real_base()) {
                self.error(
                    Diagnostic::error(
                        b.span,
                        format!(
                            "truncation bound of type `{bt}` must be `int`, `real` or the variate's type `{}`",
                            types[0]
                        ),
                    )
                    .with_primary_label(format!("`{bt}`")),
                );
                continue;
            }
            let mut call_types = types.to_vec();
            call_types[0] = bt.clone();
            let mut target = None;
            if let Some(fids) = &user {
                if let Ok((fid, _)) = self.resolve_user(fids, &call_types) {
                    target = Some(CallTarget::User { function: fid });
                }
            }
            if target.is_none() {
                if let Ok(r) = self.table.resolve(&full, &call_types) {
                    target = Some(CallTarget::Builtin {
                        signature: r.signature,
                        name: full.clone(),
                    });
                }
            }
            match target {
                Some(t) => targets.push(t),
                None => self.error(
                    Diagnostic::error(
                        b.span,
                        format!(
                            "truncation bound of type `{bt}` does not fit `{full}` with these arguments"
                        ),
                    )
                    .with_primary_label(format!("`{bt}`"))
                    .with_hint(self.signature_list(std::slice::from_ref(&full))),
                ),
            }
        }
        *Self::slot(&mut self.truncations, stmt.id, Vec::new()) = targets;
    }

    fn closest_distribution(&self, name: &str) -> Option<String> {
        let mut families: Vec<String> = Vec::new();
        for n in self
            .table
            .names()
            .chain(self.functions_by_name.keys().map(|s| s.as_str()))
        {
            for suffix in ["_lpdf", "_lpmf"] {
                if let Some(f) = n.strip_suffix(suffix) {
                    families.push(f.to_string());
                }
            }
        }
        closest(name, families.iter().map(|s| s.as_str())).map(|s| s.to_string())
    }
}
