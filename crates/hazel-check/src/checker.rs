//! The checker: one walk over the syntax tree that resolves names, enforces the block rules
//! and types every expression, filling the side tables of [`CheckedProgram`].
//!
//! Error handling: every problem becomes a [`Diagnostic`] and checking goes on. An expression
//! that already produced an error gets [`Type::Error`], which is compatible with everything,
//! so one mistake is reported once. Nothing here panics on any tree.

use std::collections::HashMap;

use hazel_syntax::ast::*;
use hazel_syntax::visit::for_each_subexpr;
use hazel_syntax::{Diagnostic, Span};

use crate::checked::*;
use crate::signatures::{closest, Pattern, ResolveError, SignatureTable};
use crate::types::Type;

/// Checks a parsed program. Returns the checked program when there are no errors (warnings
/// may still be present in the diagnostics).
pub fn check(program: &Program) -> (Option<CheckedProgram>, Vec<Diagnostic>) {
    let mut checker = Checker::new(program);
    checker.check_program(program);
    // Report in source order (the functions pass finds some problems early).
    checker.diags.sort_by_key(|d| (d.span.file, d.span.start));
    let has_errors = checker.diags.iter().any(|d| d.is_error());
    let Checker {
        diags,
        vars,
        functions,
        expr_types,
        data_only,
        var_refs,
        call_targets,
        declared,
        truncations,
        ..
    } = checker;
    if has_errors {
        return (None, diags);
    }
    let mut checked = CheckedProgram {
        program: program.clone(),
        variables: vars,
        functions,
        expr_types,
        data_only,
        parameter_free: Vec::new(),
        var_refs,
        call_targets,
        declared,
        truncations,
    };
    checked.parameter_free = crate::dataflow::parameter_free(&checked);
    (Some(checked), diags)
}

/// What kind of function body is being checked (for suffix rules).
#[derive(Clone, Debug)]
struct FunctionContext {
    name: String,
    ret: Type,
}

impl FunctionContext {
    fn is_rng(&self) -> bool {
        self.name.ends_with("_rng")
    }
    fn is_lp(&self) -> bool {
        self.name.ends_with("_lp")
    }
    fn is_density(&self) -> bool {
        self.name.ends_with("_lpdf") || self.name.ends_with("_lpmf")
    }
    fn is_jacobian(&self) -> bool {
        self.name.ends_with("_jacobian")
    }
}

struct Checker {
    table: &'static SignatureTable,
    diags: Vec<Diagnostic>,
    scopes: Vec<HashMap<String, VarId>>,
    vars: Vec<VariableInfo>,
    functions: Vec<UserFunction>,
    functions_by_name: HashMap<String, Vec<usize>>,
    expr_types: Vec<Type>,
    data_only: Vec<bool>,
    var_refs: Vec<Option<VarId>>,
    call_targets: Vec<Option<CallTarget>>,
    declared: Vec<Vec<VarId>>,
    truncations: Vec<Vec<CallTarget>>,
    /// The block being checked (`None` inside the functions block).
    block: Option<BlockKind>,
    function: Option<FunctionContext>,
    loop_depth: usize,
    /// True while checking the top-level declarations of a block (not nested statements).
    top_level: bool,
}

/// Names of the parameters in the `data`-only qualifier messages.
fn origin_word(origin: Origin) -> String {
    match origin {
        Origin::Block(BlockKind::Data) => "data".into(),
        Origin::Block(BlockKind::TransformedData) => "transformed data".into(),
        Origin::Block(BlockKind::Parameters) => "a parameter".into(),
        Origin::Block(BlockKind::TransformedParameters) => "a transformed parameter".into(),
        Origin::Block(BlockKind::Model) => "a model variable".into(),
        Origin::Block(BlockKind::GeneratedQuantities) => "a generated quantity".into(),
        Origin::Local(_) => "a local variable".into(),
        Origin::FunctionArg { .. } => "a function argument".into(),
        Origin::LoopVar(_) => "a loop variable".into(),
    }
}

fn block_phrase(block: Option<BlockKind>) -> String {
    match block {
        Some(b) => format!("the {} block", b.keyword()),
        None => "a function body".into(),
    }
}

/// Converts a syntax-tree unsized type to a checker type.
pub fn unsized_to_type(t: &UnsizedType) -> Type {
    let elem = match &t.elem {
        UnsizedElem::Int => Type::Int,
        UnsizedElem::Real => Type::Real,
        UnsizedElem::Complex => Type::Complex,
        UnsizedElem::Vector => Type::Vector,
        UnsizedElem::RowVector => Type::RowVector,
        UnsizedElem::Matrix => Type::Matrix,
        UnsizedElem::ComplexVector => Type::ComplexVector,
        UnsizedElem::ComplexRowVector => Type::ComplexRowVector,
        UnsizedElem::ComplexMatrix => Type::ComplexMatrix,
        UnsizedElem::Tuple(ts) => Type::Tuple(ts.iter().map(unsized_to_type).collect()),
    };
    Type::array(t.array_dims, elem)
}

/// The unsized type of a declared element type: its shape's (a constraint does not change
/// the type).
fn elem_to_type(e: &ElemType) -> Type {
    match &e.shape {
        Shape::Int => Type::Int,
        Shape::Real => Type::Real,
        Shape::Complex => Type::Complex,
        Shape::Vector { .. } => Type::Vector,
        Shape::RowVector { .. } => Type::RowVector,
        Shape::Matrix { .. } => Type::Matrix,
        Shape::ComplexVector { .. } => Type::ComplexVector,
        Shape::ComplexRowVector { .. } => Type::ComplexRowVector,
        Shape::ComplexMatrix { .. } => Type::ComplexMatrix,
        Shape::Tuple(ts) => Type::Tuple(ts.iter().map(decl_to_type).collect()),
    }
}

/// The unsized type of a declared type.
pub fn decl_to_type(t: &DeclType) -> Type {
    Type::array(t.array_dims.len(), elem_to_type(&t.elem))
}

/// Whether the element type carries a constraint (bounds, or a constrained type like simplex).
fn is_constrained(e: &ElemType) -> bool {
    match &e.shape {
        Shape::Tuple(ts) => ts.iter().any(|t| is_constrained(&t.elem)),
        _ => !e.constraint.is_none(),
    }
}

/// Everything after the last `_` that names a density/cdf form, e.g. `_lpdf`.
fn density_suffix(name: &str) -> Option<&'static str> {
    [
        "_lpdf", "_lupdf", "_lpmf", "_lupmf", "_cdf", "_lcdf", "_lccdf",
    ]
    .into_iter()
    .find(|s| name.ends_with(s))
}

/// Higher-order built-ins: the fixed leading arguments of the function argument, the number
/// of fixed arguments of the built-in itself (after which the variadic arguments start, if
/// any), and the function's return type.
struct HigherOrder {
    fn_args: Vec<Type>,
    variadic_from: Option<usize>,
    ret: Type,
}

fn higher_order(name: &str, args: &[Type]) -> Option<HigherOrder> {
    let arr_real = Type::array(1, Type::Real);
    let arr_int = Type::array(1, Type::Int);
    Some(match name {
        "ode_rk45" | "ode_bdf" | "ode_adams" | "ode_ckrk" => HigherOrder {
            fn_args: vec![Type::Real, Type::Vector],
            variadic_from: Some(4),
            ret: Type::Vector,
        },
        "ode_rk45_tol" | "ode_bdf_tol" | "ode_adams_tol" | "ode_ckrk_tol" => HigherOrder {
            fn_args: vec![Type::Real, Type::Vector],
            variadic_from: Some(7),
            ret: Type::Vector,
        },
        "ode_adjoint_tol_ctl" => HigherOrder {
            fn_args: vec![Type::Real, Type::Vector],
            variadic_from: Some(15),
            ret: Type::Vector,
        },
        "dae" => HigherOrder {
            fn_args: vec![Type::Real, Type::Vector, Type::Vector],
            variadic_from: Some(5),
            ret: Type::Vector,
        },
        "dae_tol" => HigherOrder {
            fn_args: vec![Type::Real, Type::Vector, Type::Vector],
            variadic_from: Some(8),
            ret: Type::Vector,
        },
        "reduce_sum" | "reduce_sum_static" => HigherOrder {
            fn_args: vec![
                args.get(1).cloned().unwrap_or(Type::Error),
                Type::Int,
                Type::Int,
            ],
            variadic_from: Some(3),
            ret: Type::Real,
        },
        "map_rect" => HigherOrder {
            fn_args: vec![
                Type::Vector,
                Type::Vector,
                arr_real.clone(),
                arr_int.clone(),
            ],
            variadic_from: None,
            ret: Type::Vector,
        },
        "integrate_ode_rk45" | "integrate_ode_bdf" | "integrate_ode_adams" => HigherOrder {
            fn_args: vec![
                Type::Real,
                arr_real.clone(),
                arr_real.clone(),
                arr_real.clone(),
                arr_int.clone(),
            ],
            variadic_from: None,
            ret: arr_real,
        },
        "algebra_solver" | "algebra_solver_newton" => HigherOrder {
            fn_args: vec![Type::Vector, Type::Vector, arr_real, arr_int],
            variadic_from: None,
            ret: Type::Vector,
        },
        "solve_newton" | "solve_powell" => HigherOrder {
            fn_args: vec![Type::Vector],
            variadic_from: Some(2),
            ret: Type::Vector,
        },
        "solve_newton_tol" | "solve_powell_tol" => HigherOrder {
            fn_args: vec![Type::Vector],
            variadic_from: Some(5),
            ret: Type::Vector,
        },
        "integrate_1d_gauss_kronrod_tol" | "integrate_1d_double_exponential_tol" => HigherOrder {
            fn_args: vec![Type::Real, Type::Real],
            variadic_from: Some(6),
            ret: Type::Real,
        },
        "integrate_1d" => HigherOrder {
            fn_args: vec![Type::Real, Type::Real, arr_real.clone(), arr_real, arr_int],
            variadic_from: None,
            ret: Type::Real,
        },
        _ => return None,
    })
}

impl Checker {
    fn new(program: &Program) -> Checker {
        let n = program.node_count as usize;
        Checker {
            table: SignatureTable::builtin(),
            diags: Vec::new(),
            scopes: vec![HashMap::new()],
            vars: Vec::new(),
            functions: Vec::new(),
            functions_by_name: HashMap::new(),
            expr_types: vec![Type::Error; n],
            data_only: vec![false; n],
            var_refs: vec![None; n],
            call_targets: vec![None; n],
            declared: vec![Vec::new(); n],
            truncations: vec![Vec::new(); n],
            block: None,
            function: None,
            loop_depth: 0,
            top_level: false,
        }
    }

    fn error(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    /// Deprecated built-ins that still run (only Stan's *Removed Functions* may be rejected):
    /// a warning naming the replacement.
    fn warn_deprecated(&mut self, name: &str, span: Span) {
        let family = ["_lpdf", "_lupdf", "_rng"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .unwrap_or(name);
        if let Some(new) = match name {
            "algebra_solver" => Some("solve_powell"),
            "algebra_solver_newton" => Some("solve_newton"),
            _ => None,
        } {
            // Deprecated in Stan 2.31 (Functions Reference, *Deprecated Functions*); stanc 2.37
            // itself prints nothing for these.
            self.error(
                Diagnostic::warning(
                    span,
                    format!(
                        "{name} is deprecated and will be removed in Stan 3.0. Use {new} instead"
                    ),
                )
                .with_hint(format!(
                    "{new}(f, y_guess, ...) passes its arguments to the system function directly \
                     instead of packed `theta, x_r, x_i`"
                )),
            );
        }
        if family == "lkj_cov" {
            self.error(
                Diagnostic::warning(span, "`lkj_cov` is deprecated")
                    .with_hint("use `lkj_corr_cholesky` on a Cholesky factor of a correlation matrix with separate priors on the scales"),
            );
        }
    }

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

    fn slot<T: Clone>(table: &mut Vec<T>, id: NodeId, fill: T) -> &mut T {
        let i = id.0 as usize;
        if i >= table.len() {
            table.resize(i + 1, fill);
        }
        &mut table[i]
    }

    fn set_call(&mut self, id: NodeId, target: CallTarget) {
        *Self::slot(&mut self.call_targets, id, None) = Some(target);
    }

    // ------------------------------------------------------------------ scopes

    fn lookup(&self, name: &str) -> Option<VarId> {
        self.scopes
            .iter()
            .rev()
            .find_map(|scope| scope.get(name).copied())
    }

    fn declare(
        &mut self,
        name: &Ident,
        ty: Type,
        origin: Origin,
        decl_stmt: Option<NodeId>,
    ) -> VarId {
        if let Some(existing) = self.lookup(&name.name) {
            let prev = self.vars[existing.0 as usize].span;
            self.error(
                Diagnostic::error(name.span, format!("`{}` is already declared", name.name))
                    .with_primary_label("declared again here")
                    .with_label(prev, "first declared here")
                    .with_hint("Stan does not allow shadowing: choose a different name"),
            );
        } else if self.functions_by_name.contains_key(&name.name) {
            self.error(
                Diagnostic::error(
                    name.span,
                    format!(
                        "`{}` is the name of a user-defined function and cannot name a variable",
                        name.name
                    ),
                )
                .with_primary_label("variable declared here"),
            );
        }
        let data_only = ty.is_int_based()
            || match origin {
                Origin::Block(b) | Origin::Local(Some(b)) | Origin::LoopVar(Some(b)) => matches!(
                    b,
                    BlockKind::Data | BlockKind::TransformedData | BlockKind::GeneratedQuantities
                ),
                Origin::FunctionArg { data_only } => data_only,
                Origin::Local(None) | Origin::LoopVar(None) => false,
            };
        let id = VarId(self.vars.len() as u32);
        self.vars.push(VariableInfo {
            name: name.name.clone(),
            ty,
            origin,
            span: name.span,
            decl_stmt,
            data_only,
        });
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name.name.clone(), id);
        }
        if let Some(stmt) = decl_stmt {
            Self::slot(&mut self.declared, stmt, Vec::new()).push(id);
        }
        id
    }

    fn push_scope(&mut self) {
        self.scopes.push(HashMap::new());
    }

    fn pop_scope(&mut self) {
        if self.scopes.len() > 1 {
            self.scopes.pop();
        }
    }

    // ------------------------------------------------------------------ program

    fn check_program(&mut self, program: &Program) {
        if let Some(fb) = &program.functions {
            self.collect_functions(fb);
            self.check_function_bodies(fb);
        }
        for block in program.blocks() {
            self.block = Some(block.kind);
            self.function = None;
            self.top_level = true;
            // Model-block variables are local to the model block: generated quantities
            // cannot see them (and may reuse their names).
            let own_scope = block.kind == BlockKind::Model;
            if own_scope {
                self.push_scope();
            }
            for stmt in &block.stmts {
                self.check_stmt(stmt);
            }
            if own_scope {
                self.pop_scope();
            }
            self.top_level = false;
        }
    }

    fn collect_functions(&mut self, fb: &FunctionsBlock) {
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

    fn check_function_bodies(&mut self, fb: &FunctionsBlock) {
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

    // ------------------------------------------------------------------ statements

    fn check_stmt(&mut self, stmt: &Stmt) {
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

    fn check_var_decl(&mut self, stmt: &Stmt, decl: &VarDecl) {
        let top = self.top_level && self.function.is_none();
        let block = self.block;
        // Sizes: int, and data-only for top-level declarations outside data blocks.
        let needs_data_sizes = top
            && matches!(
                block,
                Some(
                    BlockKind::Parameters
                        | BlockKind::TransformedParameters
                        | BlockKind::GeneratedQuantities
                )
            );
        let mut size_exprs: Vec<&Expr> = decl.ty.array_dims.iter().collect();
        collect_sizes(&decl.ty.elem, &mut size_exprs);
        for size in size_exprs {
            let (t, data) = self.check_expr(size);
            if !matches!(t, Type::Int | Type::Error) {
                self.error(
                    Diagnostic::error(size.span, format!("sizes must be `int`, found `{t}`"))
                        .with_primary_label("expected `int`"),
                );
            } else if needs_data_sizes && !(data && self.reads_only_data_vars(size)) {
                self.error(
                    Diagnostic::error(
                        size.span,
                        format!(
                            "sizes of top-level variables in the {} block must be data-only",
                            block.map(|b| b.keyword()).unwrap_or("")
                        ),
                    )
                    .with_primary_label("depends on non-data variables")
                    .with_hint("use variables from the data or transformed data blocks"),
                );
            }
        }
        let ty = decl_to_type(&decl.ty);
        self.check_transforms(&decl.ty.elem, &ty);
        let constraints_allowed = top && block != Some(BlockKind::Model);
        if !constraints_allowed && is_constrained(&decl.ty.elem) {
            self.error(
                Diagnostic::error(
                    decl.ty.span,
                    "local variables cannot have constraints or constrained types",
                )
                .with_primary_label("constrained type")
                .with_hint("declare it unconstrained (e.g. `real`, `vector[N]`)"),
            );
        }
        if top && block == Some(BlockKind::Parameters) && ty.contains_int() {
            self.error(
                Diagnostic::error(decl.ty.span, "parameters cannot be integers")
                    .with_primary_label("integer type")
                    .with_hint(
                        "Stan samples continuous parameters only; marginalise discrete ones out",
                    ),
            );
        }
        if top && block == Some(BlockKind::Parameters) && contains_complex(&ty) {
            self.error(
                Diagnostic::error(decl.ty.span, "parameters cannot be complex")
                    .with_primary_label("complex type")
                    .with_hint("declare the real and imaginary parts as real parameters"),
            );
        }
        if top && block == Some(BlockKind::TransformedParameters) && ty.contains_int() {
            self.error(
                Diagnostic::error(decl.ty.span, "transformed parameters cannot be integers")
                    .with_primary_label("integer type"),
            );
        }
        let origin = match (top, block) {
            (true, Some(b)) => Origin::Block(b),
            (_, b) => Origin::Local(b),
        };
        for d in &decl.declarators {
            if let Some(init) = &d.init {
                let (t, _) = self.check_expr(init);
                if !t.assignable_to(&ty) {
                    self.error(
                        Diagnostic::error(
                            init.span,
                            format!(
                                "cannot initialise `{}` of type `{ty}` with a value of type `{t}`",
                                d.name.name
                            ),
                        )
                        .with_primary_label(format!("expected `{ty}`, found `{t}`")),
                    );
                }
            }
            self.declare(&d.name, ty.clone(), origin, Some(stmt.id));
        }
    }

    /// True if every variable the expression reads is declared in `data` or `transformed
    /// data` (the rule for sizes of top-level declarations).
    fn reads_only_data_vars(&self, e: &Expr) -> bool {
        let mut ok = true;
        for_each_subexpr(e, |sub| {
            if let ExprKind::Var(_) = &sub.kind {
                if let Some(v) = self.var_refs.get(sub.id.0 as usize).copied().flatten() {
                    let origin = self.vars[v.0 as usize].origin;
                    if !matches!(
                        origin,
                        Origin::Block(BlockKind::Data | BlockKind::TransformedData)
                            | Origin::Local(Some(BlockKind::Data | BlockKind::TransformedData))
                            | Origin::LoopVar(Some(BlockKind::Data | BlockKind::TransformedData))
                    ) {
                        ok = false;
                    }
                }
            }
        });
        ok
    }

    fn check_transforms(&mut self, elem: &ElemType, ty: &Type) {
        if let Shape::Tuple(ts) = &elem.shape {
            for t in ts {
                let inner = decl_to_type(t);
                self.check_transforms(&t.elem, &inner);
            }
            return;
        }
        let base = match &elem.shape {
            Shape::Int => Type::Int,
            Shape::Real => Type::Real,
            Shape::Vector { .. } => Type::Vector,
            Shape::RowVector { .. } => Type::RowVector,
            Shape::Matrix { .. } => Type::Matrix,
            _ => return,
        };
        let exprs: Vec<(&Expr, &str)> = match &elem.constraint {
            Constraint::Bounds { lower, upper } => lower
                .iter()
                .map(|e| (e, "lower bound"))
                .chain(upper.iter().map(|e| (e, "upper bound")))
                .collect(),
            Constraint::Affine { offset, multiplier } => {
                if base == Type::Int {
                    if let Some(e) = offset.as_ref().or(multiplier.as_ref()) {
                        self.error(Diagnostic::error(
                            e.span,
                            "`offset` and `multiplier` are not allowed on `int`",
                        ));
                    }
                }
                offset
                    .iter()
                    .map(|e| (e, "offset"))
                    .chain(multiplier.iter().map(|e| (e, "multiplier")))
                    .collect()
            }
            _ => return,
        };
        for (e, what) in exprs {
            let (t, _) = self.check_expr(e);
            // A bound is a scalar, or a container of the declared element type, or has the
            // whole declared type (`array[N] real<lower=lbs>` with `array[N] real lbs`).
            let ok = match base {
                Type::Int => matches!(t, Type::Int | Type::Error) || t == *ty,
                _ => t.is_int_or_real() || t == base || t.assignable_to(ty),
            };
            if !ok {
                let expected = match base {
                    Type::Int => "`int`".to_string(),
                    Type::Real => "`int` or `real`".to_string(),
                    ref b => format!("`real` or `{b}`"),
                };
                self.error(
                    Diagnostic::error(
                        e.span,
                        format!("the {what} in `{base}<...>` must be {expected}, found `{t}`"),
                    )
                    .with_primary_label(format!("found `{t}`")),
                );
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

    fn unknown_variable(&mut self, name: &Ident) {
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

    /// "available signatures: ..." for a hint (at most 6 shown).
    fn signature_list(&self, names: &[String]) -> String {
        let mut lines = Vec::new();
        for name in names {
            for &i in self.table.candidates(name) {
                lines.push(self.table.signatures[i].render());
            }
            if let Some(fids) = self.functions_by_name.get(name) {
                for &f in fids {
                    let f = &self.functions[f];
                    let args: Vec<String> = f.args.iter().map(|(_, t)| t.to_string()).collect();
                    lines.push(format!("{}({}) => {}", f.name, args.join(", "), f.ret));
                }
            }
        }
        let total = lines.len();
        lines.truncate(6);
        let mut text = format!("available signatures: {}", lines.join("; "));
        if total > 6 {
            text.push_str(&format!("; ... ({} more)", total - 6));
        }
        text
    }

    // ------------------------------------------------------------------ expressions

    /// Types an expression, records its type and data-only status, and returns both.
    fn check_expr(&mut self, e: &Expr) -> (Type, bool) {
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

    fn project(&mut self, base: &Type, index: usize, span: Span) -> Type {
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
    fn check_index_exprs(&mut self, idx: &Index) -> bool {
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
    fn index_type(&mut self, base: &Type, indices: &[Index], span: Span) -> Type {
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

    /// Resolves a call among user-defined overloads: `Ok((function, cost))`, or `Err(true)` for
    /// an ambiguity, `Err(false)` for no match.
    fn resolve_user(&self, fids: &[usize], args: &[Type]) -> Result<(usize, u32), bool> {
        let mut best: Vec<(usize, u32)> = Vec::new();
        for &fid in fids {
            let f = &self.functions[fid];
            if f.args.len() != args.len() {
                continue;
            }
            let mut cost = 0;
            let mut ok = true;
            for ((_, formal), actual) in f.args.iter().zip(args) {
                match actual.promotion_cost(formal) {
                    Some(c) => cost += c,
                    None => {
                        ok = false;
                        break;
                    }
                }
            }
            if ok {
                if best.first().is_some_and(|b| cost < b.1) {
                    best.clear();
                }
                if best.first().is_none_or(|b| cost == b.1) {
                    best.push((fid, cost));
                }
            }
        }
        match best.len() {
            0 => Err(false),
            1 => Ok(best[0]),
            _ => Err(true),
        }
    }

    /// Checks a function call (expression or statement) and returns its type and data-only.
    fn check_call(
        &mut self,
        id: NodeId,
        span: Span,
        name: &Ident,
        args: &[Expr],
        conditional_bar: bool,
    ) -> (Type, bool) {
        let mut types = Vec::with_capacity(args.len());
        let mut all_data = true;
        let mut datas = Vec::with_capacity(args.len());
        for a in args {
            let (t, d) = self.check_expr(a);
            all_data &= d;
            types.push(t);
            datas.push(d);
        }
        let fname = name.name.as_str();
        if self.lookup(fname).is_some()
            && !self.table.contains(fname)
            && !self
                .functions_by_name
                .contains_key(user_function_key(fname).as_str())
        {
            self.error(Diagnostic::error(
                name.span,
                format!("`{fname}` is a variable, not a function"),
            ));
            return (Type::Error, false);
        }
        self.check_call_context(name);
        let suffix = density_suffix(fname);
        if conditional_bar && suffix.is_none() {
            self.error(
                Diagnostic::error(
                    name.span,
                    format!("only density and distribution functions (`_lpdf`, `_lpmf`, `_lcdf`, ...) take `|`; `{fname}` does not"),
                )
                .with_hint("separate the arguments with `,`"),
            );
        } else if !conditional_bar && suffix.is_some() && args.len() >= 2 {
            self.error(
                Diagnostic::error(
                    name.span,
                    format!("`{fname}` must be called with `|` after its first argument"),
                )
                .with_hint(format!("write `{fname}(y | ...)`")),
            );
        }
        let is_lp = fname.ends_with("_lp");
        // Stan's rule: a call is data-only when its arguments are (an `_rng` draw from data
        // arguments is data, as in stanc); `_lp` functions read `target` and never are.
        // Whether a value changes per draw is the separate parameter-free analysis.
        let data_result = |ret: &Type| -> bool {
            if is_lp {
                ret.is_int_based()
            } else {
                all_data || ret.is_int_based()
            }
        };
        if types.contains(&Type::Error) {
            // Still record the name's existence for the unknown-function message.
            if !self.table.contains(fname)
                && !self
                    .functions_by_name
                    .contains_key(user_function_key(fname).as_str())
            {
                self.unknown_function(name);
            }
            return (Type::Error, false);
        }
        // User-defined functions first (they may overload built-in names). A user density
        // `foo_lpdf` is also callable as `foo_lupdf`.
        let user_key = user_function_key(fname);
        if let Some(fids) = self.functions_by_name.get(user_key.as_str()).cloned() {
            match self.resolve_user(&fids, &types) {
                Ok((fid, _)) => {
                    self.set_call(id, CallTarget::User { function: fid });
                    let f = self.functions[fid].clone();
                    for (i, ((data_q, _), d)) in f.args.iter().zip(&datas).enumerate() {
                        if *data_q && !d {
                            self.error(
                                Diagnostic::error(
                                    args[i].span,
                                    format!(
                                        "argument {} of `{fname}` is declared `data` but this expression depends on parameters",
                                        i + 1
                                    ),
                                )
                                .with_primary_label("not data-only"),
                            );
                        }
                    }
                    let data = data_result(&f.ret);
                    return (f.ret, data);
                }
                Err(true) => {
                    self.error(Diagnostic::error(
                        span,
                        format!(
                            "call of `{fname}` is ambiguous between several user-defined overloads"
                        ),
                    ));
                    return (Type::Error, false);
                }
                Err(false) if !self.table.contains(fname) => {
                    self.no_match(span, fname, &types);
                    return (Type::Error, false);
                }
                Err(false) => {}
            }
        }
        match self.table.resolve(fname, &types) {
            Ok(r) => {
                self.warn_deprecated(fname, name.span);
                self.set_call(
                    id,
                    CallTarget::Builtin {
                        signature: r.signature,
                        name: fname.to_string(),
                    },
                );
                let sig = &self.table.signatures[r.signature];
                for (i, spec) in sig.args.iter().enumerate() {
                    if spec.data_only && !datas.get(i).copied().unwrap_or(true) {
                        self.error(
                            Diagnostic::error(
                                args[i].span,
                                format!(
                                    "argument {} of `{fname}` must be data-only (must not depend on parameters)",
                                    i + 1
                                ),
                            )
                            .with_primary_label("depends on parameters"),
                        );
                    }
                }
                if sig.args.iter().any(|a| a.pattern == Pattern::Function) {
                    self.check_higher_order(fname, span, args, &types);
                }
                let data = data_result(&r.ret);
                (r.ret, data)
            }
            Err(ResolveError::UnknownFunction) => {
                self.unknown_function(name);
                (Type::Error, false)
            }
            Err(ResolveError::NoMatch) => {
                self.no_match(span, fname, &types);
                (Type::Error, false)
            }
            Err(ResolveError::Ambiguous(_)) => {
                self.error(Diagnostic::error(
                    span,
                    format!("call of `{fname}` is ambiguous"),
                ));
                (Type::Error, false)
            }
        }
    }

    /// Where functions ending in `_lp` (and `target()`) may be used: the model and
    /// transformed parameters blocks and other `_lp` functions.
    fn lp_context(&self) -> bool {
        match &self.function {
            Some(f) => f.is_lp(),
            None => matches!(
                self.block,
                Some(BlockKind::Model | BlockKind::TransformedParameters)
            ),
        }
    }

    /// `_rng`, `_lp` and `_lupdf` placement rules.
    fn check_call_context(&mut self, name: &Ident) {
        let fname = name.name.as_str();
        if fname.ends_with("_rng") {
            let ok = match &self.function {
                Some(f) => f.is_rng(),
                None => matches!(
                    self.block,
                    Some(BlockKind::TransformedData | BlockKind::GeneratedQuantities)
                ),
            };
            if !ok {
                self.error(
                    Diagnostic::error(
                        name.span,
                        format!(
                            "random number generator `{fname}` is not allowed in {}",
                            block_phrase(self.block)
                        ),
                    )
                    .with_hint(
                        "`_rng` functions are allowed in transformed data, generated quantities \
                         and functions ending in `_rng`",
                    ),
                );
            }
        } else if fname.ends_with("_lp") {
            if self.function.is_none() && self.block == Some(BlockKind::TransformedParameters) {
                // Valid but deprecated; stanc's warning, word for word.
                self.error(Diagnostic::warning(
                    name.span,
                    "Using _lp functions in transformed parameters is deprecated and will be \
                     disallowed in Stan 2.39. Use an _jacobian function instead, as this allows \
                     change of variable adjustments which are conditionally enabled by the \
                     algorithms.",
                ));
            }
            if !self.lp_context() {
                self.error(
                    Diagnostic::error(
                        name.span,
                        format!(
                            "`{fname}` changes `target` and is not allowed in {}",
                            block_phrase(self.block)
                        ),
                    )
                    .with_hint(
                        "functions ending in `_lp` are allowed in the model and transformed \
                         parameters blocks and in other `_lp` functions",
                    ),
                );
            }
        } else if fname.ends_with("_lupdf") || fname.ends_with("_lupmf") {
            let ok = match &self.function {
                Some(f) => f.is_density() || f.is_lp(),
                None => self.block == Some(BlockKind::Model),
            };
            if !ok {
                self.error(
                    Diagnostic::error(
                        name.span,
                        format!("unnormalised density `{fname}` is only allowed in the model block and in `_lpdf`/`_lpmf`/`_lp` functions"),
                    )
                    .with_hint("use the normalised `_lpdf`/`_lpmf` form here"),
                );
            }
        }
    }

    fn unknown_function(&mut self, name: &Ident) {
        // Stan's *Removed Functions* (Functions Reference): rejected with the replacement.
        const REMOVED: [(&str, &str); 4] = [
            ("cov_exp_quad", "gp_exp_quad_cov"),
            ("fabs", "abs"),
            ("multiply_log", "lmultiply"),
            ("binomial_coefficient_log", "lchoose"),
        ];
        if let Some((_, new)) = REMOVED.iter().find(|(old, _)| *old == name.name) {
            self.error(
                Diagnostic::error(
                    name.span,
                    format!("`{}` was removed in Stan 2.33", name.name),
                )
                .with_hint(format!("use `{new}` (same arguments) instead")),
            );
            return;
        }
        // Stan's *Removed Features*: the `_log`, `_cdf_log` and `_ccdf_log` suffixes of
        // distribution functions (removed in 2.33).
        let suffixes = [
            ("_ccdf_log", &["_lccdf"][..]),
            ("_cdf_log", &["_lcdf"][..]),
            ("_log", &["_lpdf", "_lpmf"][..]),
        ];
        for (old, new) in suffixes {
            let Some(stem) = name.name.strip_suffix(old) else {
                continue;
            };
            if let Some(new) = new
                .iter()
                .map(|n| format!("{stem}{n}"))
                .find(|n| self.table.contains(n))
            {
                self.error(
                    Diagnostic::error(
                        name.span,
                        format!(
                            "the `{old}` suffix of `{}` was removed in Stan 2.33",
                            name.name
                        ),
                    )
                    .with_hint(format!("use `{new}(y | ...)` instead")),
                );
                return;
            }
            break;
        }
        let mut d = Diagnostic::error(name.span, format!("unknown function `{}`", name.name))
            .with_primary_label("not a built-in or user-defined function");
        let names = self
            .table
            .names()
            .chain(self.functions_by_name.keys().map(|s| s.as_str()));
        if let Some(best) = closest(&name.name, names) {
            d = d.with_hint(format!("did you mean `{best}`?"));
        }
        self.error(d);
    }

    fn no_match(&mut self, span: Span, fname: &str, types: &[Type]) {
        let shown: Vec<String> = types.iter().map(|t| t.to_string()).collect();
        let d = Diagnostic::error(
            span,
            format!("no signature of `{fname}` accepts ({})", shown.join(", ")),
        )
        .with_primary_label(format!("called with ({})", shown.join(", ")))
        .with_hint(self.signature_list(&[fname.to_string()]));
        self.error(d);
    }

    fn check_higher_order(&mut self, fname: &str, span: Span, args: &[Expr], types: &[Type]) {
        let Some(spec) = higher_order(fname, types) else {
            return;
        };
        let Some(Type::Function(ft)) = types.first() else {
            return;
        };
        let fn_name = match &args[0].kind {
            ExprKind::Var(n) => n.name.clone(),
            _ => "the function argument".into(),
        };
        let mut expected = spec.fn_args.clone();
        if let Some(from) = spec.variadic_from {
            expected.extend(types.iter().skip(from).cloned());
        }
        let mut problems = Vec::new();
        if ft.ret != spec.ret && !ft.ret.assignable_to(&spec.ret) {
            problems.push(format!("must return `{}`, returns `{}`", spec.ret, ft.ret));
        }
        if ft.args.len() != expected.len() {
            problems.push(format!(
                "must take {} arguments here, takes {}",
                expected.len(),
                ft.args.len()
            ));
        } else {
            for (i, ((_, formal), actual)) in ft.args.iter().zip(&expected).enumerate() {
                if !actual.assignable_to(formal) {
                    problems.push(format!(
                        "argument {} must accept `{actual}`, is `{formal}`",
                        i + 1
                    ));
                }
            }
        }
        if !problems.is_empty() {
            self.error(
                Diagnostic::error(
                    span,
                    format!(
                        "`{fn_name}` does not fit `{fname}`: {}",
                        problems.join("; ")
                    ),
                )
                .with_label(args[0].span, "function passed here"),
            );
        }
    }
}

use crate::types::FunctionType;

/// The size expressions of an element type in written order, tuple components' array sizes
/// and sizes included.
pub(crate) fn collect_sizes<'a>(elem: &'a ElemType, out: &mut Vec<&'a Expr>) {
    out.extend(elem.shape.sizes());
    if let Shape::Tuple(ts) = &elem.shape {
        for t in ts {
            out.extend(t.array_dims.iter());
            collect_sizes(&t.elem, out);
        }
    }
}

/// The name under which a called function is looked up among user definitions: the
/// unnormalised forms `foo_lupdf`/`foo_lupmf` call the user's `foo_lpdf`/`foo_lpmf`.
fn user_function_key(name: &str) -> String {
    if let Some(stem) = name.strip_suffix("_lupdf") {
        format!("{stem}_lpdf")
    } else if let Some(stem) = name.strip_suffix("_lupmf") {
        format!("{stem}_lpmf")
    } else {
        name.to_string()
    }
}

fn contains_complex(t: &Type) -> bool {
    match t {
        Type::Tuple(ts) => ts.iter().any(contains_complex),
        Type::Array(_, e) => contains_complex(e),
        other => other.is_complex_based(),
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
