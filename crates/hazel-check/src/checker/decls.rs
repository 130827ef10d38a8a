//! Declarations: declared and unsized types as checker [`Type`]s, variable declarations
//! (sizes, constraints and where they are allowed, initial values) and the bounds and
//! offset/multiplier expressions of `<...>`.

use super::*;

impl Checker {
    pub(super) fn check_var_decl(&mut self, stmt: &Stmt, decl: &VarDecl) {
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
}

/// Converts a syntax-tree unsized type to a checker type.
pub(crate) fn unsized_to_type(t: &UnsizedType) -> Type {
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
pub(crate) fn decl_to_type(t: &DeclType) -> Type {
    Type::array(t.array_dims.len(), elem_to_type(&t.elem))
}

/// Whether the element type carries a constraint (bounds, or a constrained type like simplex).
fn is_constrained(e: &ElemType) -> bool {
    match &e.shape {
        Shape::Tuple(ts) => ts.iter().any(|t| is_constrained(&t.elem)),
        _ => !e.constraint.is_none(),
    }
}

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

fn contains_complex(t: &Type) -> bool {
    match t {
        Type::Tuple(ts) => ts.iter().any(contains_complex),
        Type::Array(_, e) => contains_complex(e),
        other => other.is_complex_based(),
    }
}
