//! The functions block: every signature is collected first (so calls may come before
//! definitions), overloads and clashes with built-ins are checked, the suffix rules (`_rng`,
//! `_lp`, `_lpdf`/`_lpmf`, `_jacobian`) are enforced, then the bodies are checked, each
//! non-void one required to return on every path.

use super::*;

impl Checker {
    pub(super) fn collect_functions(&mut self, fb: &FunctionsBlock) {
        // Pass 1: signatures (so that calls may precede definitions, and recursion works).
        for (index, def) in fb.functions.iter().enumerate() {
            let args: Vec<(bool, Type)> = def
                .args
                .iter()
                .map(|a| (a.data_only, unsized_to_type(&a.ty)))
                .collect();
            let ret = match &def.return_type {
                ReturnType::Void(_) => Type::Void,
                ReturnType::Type(t) => unsized_to_type(t),
            };
            self.check_function_suffix(def, &args, &ret);
            self.check_builtin_clash(def, &args);
            let same_name = self
                .functions_by_name
                .get(&def.name.name)
                .cloned()
                .unwrap_or_default();
            let existing = same_name.iter().copied().find(|&f| {
                let f = &self.functions[f];
                f.args.len() == args.len()
                    && f.args.iter().zip(&args).all(|((_, a), (_, b))| a == b)
            });
            match existing {
                Some(f) => {
                    let prev_has_body = fb
                        .functions
                        .get(self.functions[f].def_index)
                        .is_some_and(|d| d.body.is_some());
                    if self.functions[f].ret != ret {
                        let prev = self.functions[f].span;
                        self.error(
                            Diagnostic::error(
                                def.name.span,
                                format!(
                                    "`{}` is declared with return type `{}` here but `{}` before",
                                    def.name.name, ret, self.functions[f].ret
                                ),
                            )
                            .with_label(prev, "earlier declaration"),
                        );
                        // Keep the body as the definition so the mismatch is the only error.
                        if def.body.is_some() && !prev_has_body {
                            self.functions[f].def_index = index;
                        }
                    } else if prev_has_body && def.body.is_some() {
                        let prev = self.functions[f].span;
                        self.error(
                            Diagnostic::error(
                                def.name.span,
                                format!(
                                    "function `{}` is defined twice with the same argument types",
                                    def.name.name
                                ),
                            )
                            .with_label(prev, "first defined here"),
                        );
                    } else if def.body.is_some() {
                        self.functions[f].def_index = index;
                        self.functions[f].span = def.name.span;
                        self.functions[f].args = args;
                    }
                }
                None => {
                    let fid = self.functions.len();
                    self.functions.push(UserFunction {
                        name: def.name.name.clone(),
                        args,
                        ret,
                        def_index: index,
                        arg_vars: Vec::new(),
                        span: def.name.span,
                    });
                    self.functions_by_name
                        .entry(def.name.name.clone())
                        .or_default()
                        .push(fid);
                }
            }
        }
        for f in 0..self.functions.len() {
            let has_body = fb
                .functions
                .get(self.functions[f].def_index)
                .is_some_and(|d| d.body.is_some());
            if !has_body {
                let span = self.functions[f].span;
                let name = self.functions[f].name.clone();
                self.error(
                    Diagnostic::error(
                        span,
                        format!("function `{name}` is declared but never defined"),
                    )
                    .with_hint("add a definition with a body, or remove the declaration"),
                );
            }
        }
    }

    /// Built-in names may be overloaded, except the variadic higher-order built-ins, and not
    /// with argument types a built-in already takes exactly.
    fn check_builtin_clash(&mut self, def: &FunDef, args: &[(bool, Type)]) {
        let name = &def.name.name;
        if !self.table.contains(name) {
            return;
        }
        let variadic = self
            .table
            .candidates(name)
            .iter()
            .any(|&i| self.table.signatures[i].variadic);
        if variadic {
            self.error(
                Diagnostic::error(
                    def.name.span,
                    format!("the built-in `{name}` cannot be overloaded"),
                )
                .with_hint("variadic higher-order built-ins (ODE solvers, `reduce_sum`, ...) cannot be redefined; rename the function"),
            );
            return;
        }
        let types: Vec<Type> = args.iter().map(|(_, t)| t.clone()).collect();
        if let Ok(r) = self.table.resolve(name, &types) {
            if r.cost == 0 {
                let sig = self.table.signatures[r.signature].render();
                self.error(
                    Diagnostic::error(
                        def.name.span,
                        format!("`{name}` is already a built-in function for these argument types"),
                    )
                    .with_hint(format!("the built-in is `{sig}`; rename the function")),
                );
            }
        }
    }

    fn check_function_suffix(&mut self, def: &FunDef, args: &[(bool, Type)], ret: &Type) {
        let name = &def.name.name;
        let span = def.name.span;
        let first = args.first().map(|(_, t)| t.clone());
        let real_ret = |me: &mut Self, what: &str| {
            if *ret != Type::Real {
                me.error(
                    Diagnostic::error(
                        span,
                        format!("a function ending in `{what}` must return `real`, found `{ret}`"),
                    )
                    .with_primary_label("declared here"),
                );
            }
        };
        if name.ends_with("_lpdf") || name.ends_with("_lcdf") || name.ends_with("_lccdf") {
            real_ret(self, &name[name.rfind('_').unwrap_or(0)..]);
            if name.ends_with("_lpdf") {
                match &first {
                    None => self.error(Diagnostic::error(
                        span,
                        format!("density `{name}` needs at least one argument (the variate)"),
                    )),
                    Some(t) if t.is_int_based() => self.error(
                        Diagnostic::error(
                            span,
                            format!(
                                "the first argument of `{name}` must be real-valued, found `{t}`"
                            ),
                        )
                        .with_hint("densities of integer variates end in `_lpmf`"),
                    ),
                    _ => {}
                }
            }
        } else if name.ends_with("_lpmf") {
            real_ret(self, "_lpmf");
            match &first {
                Some(t) if t.is_int_based() => {}
                Some(t) => self.error(
                    Diagnostic::error(
                        span,
                        format!("the first argument of `{name}` must be int-valued, found `{t}`"),
                    )
                    .with_hint("densities of real variates end in `_lpdf`"),
                ),
                None => self.error(Diagnostic::error(
                    span,
                    format!("mass function `{name}` needs at least one argument (the variate)"),
                )),
            }
        } else if name.ends_with("_lupdf") || name.ends_with("_lupmf") {
            self.error(
                Diagnostic::error(
                    span,
                    format!("user-defined functions cannot end in `_lupdf` or `_lupmf`: `{name}`"),
                )
                .with_hint("define `_lpdf`/`_lpmf`; the `_lupdf`/`_lupmf` form comes with it"),
            );
        }
    }

    pub(super) fn check_function_bodies(&mut self, fb: &FunctionsBlock) {
        self.block = None;
        for (index, def) in fb.functions.iter().enumerate() {
            let Some(body) = &def.body else { continue };
            let Some(fid) = self
                .functions
                .iter()
                .position(|f| f.def_index == index && f.name == def.name.name)
            else {
                continue;
            };
            let ret = self.functions[fid].ret.clone();
            self.function = Some(FunctionContext {
                name: def.name.name.clone(),
                ret: ret.clone(),
            });
            self.push_scope();
            let mut arg_vars = Vec::new();
            for arg in &def.args {
                let ty = unsized_to_type(&arg.ty);
                let v = self.declare(
                    &arg.name,
                    ty,
                    Origin::FunctionArg {
                        data_only: arg.data_only,
                    },
                    None,
                );
                arg_vars.push(v);
            }
            self.functions[fid].arg_vars = arg_vars;
            self.check_stmt(body);
            if ret != Type::Void && !always_returns(body) {
                self.error(
                    Diagnostic::error(
                        def.name.span,
                        format!(
                            "function `{}` must return a value of type `{ret}` on every path",
                            def.name.name
                        ),
                    )
                    .with_hint("add a `return` at the end of the body"),
                );
            }
            self.pop_scope();
            self.function = None;
        }
    }
}

/// Whether a statement returns (or rejects) on every path.
fn always_returns(stmt: &Stmt) -> bool {
    match &stmt.kind {
        StmtKind::Return(_) | StmtKind::Reject(_) | StmtKind::FatalError(_) => true,
        StmtKind::Block(stmts) | StmtKind::Profile { body: stmts, .. } => {
            stmts.iter().any(always_returns)
        }
        StmtKind::If {
            then_branch,
            else_branch: Some(else_branch),
            ..
        } => always_returns(then_branch) && always_returns(else_branch),
        // `while (1) { ... return ...; }` is a common idiom; a loop whose condition is a
        // non-zero literal and that has no `break` only exits by returning.
        StmtKind::While { cond, body } => {
            matches!(cond.kind, ExprKind::IntLit(v) if v != 0) && !contains_break(body)
        }
        _ => false,
    }
}

fn contains_break(stmt: &Stmt) -> bool {
    match &stmt.kind {
        StmtKind::Break => true,
        StmtKind::Block(s) | StmtKind::Profile { body: s, .. } => s.iter().any(contains_break),
        StmtKind::If {
            then_branch,
            else_branch,
            ..
        } => contains_break(then_branch) || else_branch.as_deref().is_some_and(contains_break),
        // A `break` inside a nested loop leaves only that loop.
        _ => false,
    }
}
