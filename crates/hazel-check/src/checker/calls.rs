//! Calls: overload resolution of user functions and built-ins (least promotion), where a
//! function may be called from, the higher-order built-ins (ODE, DAE, algebraic solvers,
//! `reduce_sum`, `map_rect`, `integrate_1d`) and their function arguments, the messages for
//! unknown functions and failed matches.

use super::*;

impl Checker {
    /// Deprecated built-ins that still run (only Stan's *Removed Functions* may be rejected):
    /// a warning naming the replacement.
    pub(super) fn warn_deprecated(&mut self, name: &str, span: Span) {
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

    /// Resolves a call among user-defined overloads: `Ok((function, cost))`, or `Err(true)` for
    /// an ambiguity, `Err(false)` for no match.
    pub(super) fn resolve_user(&self, fids: &[usize], args: &[Type]) -> Result<(usize, u32), bool> {
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
    pub(super) fn check_call(
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
    pub(super) fn lp_context(&self) -> bool {
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

/// Everything after the last `_` that names a density/cdf form, e.g. `_lpdf`.
pub(super) fn density_suffix(name: &str) -> Option<&'static str> {
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
