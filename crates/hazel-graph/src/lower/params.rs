//! Parameters: reading the unconstrained vector in Stan's order and layout, constraining it
//! with Stan's transforms and adding the log-Jacobian to the target.

use super::trace::{cerr, Tracer, R};
use super::value::{Elems, Sc, Val};
use crate::kernels::{BinaryFn, UnaryFn};
use crate::tape::Arg;
use hazel_syntax::ast::*;
use std::sync::Arc;

/// Free (unconstrained) size of one element of a declared type (sizes evaluated).
fn free_size(tr: &mut Tracer, elem: &ElemType) -> R<(usize, Val)> {
    let (shape, blank) = free_shape(tr, elem)?;
    Ok((shape.iter().product(), blank))
}

/// The shape of one element's unconstrained coordinates as Stan names them (its
/// `unconstrained_param_names`): none for a scalar, one index for vectors and for the
/// Cholesky-factor, correlation and covariance matrices (their free values counted flat), two
/// for matrices whose free values keep a matrix layout (plain, sum-to-zero and stochastic
/// matrices); also the element's blank value.
fn free_shape(tr: &mut Tracer, elem: &ElemType) -> R<(Vec<usize>, Val)> {
    let blank = {
        let ty = DeclType {
            span: hazel_syntax::Span::DUMMY,
            array_dims: vec![],
            elem: elem.clone(),
        };
        tr.blank(&ty)?
    };
    let n = match &blank {
        Val::Matrix(r, c, _) => (*r, *c),
        Val::Vector(e) | Val::RowVector(e) => (e.len(), 1),
        _ => (1, 1),
    };
    let k = n.0;
    let shape = match (&elem.shape, &elem.constraint) {
        (Shape::Int, _) => return cerr("parameters cannot be integers", hazel_syntax::Span::DUMMY),
        (Shape::Real, _) => vec![],
        (Shape::Vector { .. } | Shape::RowVector { .. } | Shape::Matrix { .. }, constraint) => {
            match constraint {
                Constraint::None | Constraint::Bounds { .. } | Constraint::Affine { .. } => {
                    if matches!(elem.shape, Shape::Matrix { .. }) {
                        vec![n.0, n.1]
                    } else {
                        vec![k]
                    }
                }
                Constraint::Ordered | Constraint::PositiveOrdered | Constraint::UnitVector => {
                    vec![k]
                }
                Constraint::Simplex => vec![k.saturating_sub(1)],
                Constraint::SumToZero if matches!(elem.shape, Shape::Vector { .. }) => {
                    vec![k.saturating_sub(1)]
                }
                Constraint::SumToZero => vec![n.0.saturating_sub(1), n.1.saturating_sub(1)],
                Constraint::ColumnStochastic => vec![n.0.saturating_sub(1), n.1],
                Constraint::RowStochastic => vec![n.0, n.1.saturating_sub(1)],
                Constraint::CholeskyFactorCorr | Constraint::CorrMatrix => {
                    vec![k * k.saturating_sub(1) / 2]
                }
                Constraint::CovMatrix => vec![k + k * k.saturating_sub(1) / 2],
                Constraint::CholeskyFactorCov => {
                    vec![hazel_math::transforms::cholesky_cov_free_size(n.0, n.1)]
                }
            }
        }
        _ => return cerr("unsupported parameter type", hazel_syntax::Span::DUMMY),
    };
    Ok((shape, blank))
}

/// `prefix.i.j…` for every index of `dims`, the first index varying fastest (Stan's order for
/// CSV columns and unconstrained names alike).
fn indexed_names(prefix: &str, dims: &[usize], out: &mut Vec<String>) {
    let total: usize = dims.iter().product();
    let mut idx = vec![0usize; dims.len()];
    for _ in 0..total {
        let mut name = prefix.to_string();
        for i in &idx {
            name.push('.');
            name.push_str(&(i + 1).to_string());
        }
        out.push(name);
        for (k, d) in dims.iter().enumerate() {
            idx[k] += 1;
            if idx[k] < *d {
                break;
            }
            idx[k] = 0;
        }
    }
}

/// The tuples of an array of tuples in row-major order (or the tuple itself).
fn collect_tuples<'v>(x: &'v Val, out: &mut Vec<&'v Val>) {
    match x {
        Val::Array(xs) => xs.iter().for_each(|x| collect_tuples(x, out)),
        other => out.push(other),
    }
}

/// Array elements in row-major order nested into an array of shape `dims`.
fn nest_items(items: Vec<Val>, dims: &[usize]) -> Val {
    fn build(items: &mut std::vec::IntoIter<Val>, dims: &[usize]) -> Val {
        if dims.is_empty() {
            return items.next().expect("one item per array element");
        }
        Val::array((0..dims[0]).map(|_| build(items, &dims[1..])).collect())
    }
    build(&mut items.into_iter(), dims)
}

/// One declared parameter (or any block variable) and its blank value, for output names.
pub struct Declared {
    pub name: String,
    pub ty: DeclType,
}

/// Top-level declarations of a block.
pub fn declarations(block: &Option<Block>) -> Vec<Declared> {
    let mut out = Vec::new();
    if let Some(b) = block {
        for s in &b.stmts {
            if let StmtKind::VarDecl(d) = &s.kind {
                for decl in &d.declarators {
                    out.push(Declared {
                        name: decl.name.name.clone(),
                        ty: d.ty.clone(),
                    });
                }
            }
        }
    }
    out
}

impl<'p> Tracer<'p> {
    /// Reads the parameters block. With `q` absent, only counts the unconstrained size.
    /// With `q`, binds every parameter to its constrained value and (when `self.jacobian`)
    /// adds the log-Jacobians to the target.
    pub fn read_params(&mut self, block: &Option<Block>, q: Option<&Elems>) -> R<usize> {
        let mut pos = 0usize;
        for d in declarations(block) {
            self.read_declared_param(&d, q, &mut pos)?;
        }
        Ok(pos)
    }

    /// Reads one declared parameter from `q` at `*pos` (advancing it by its unconstrained
    /// size) and binds it; with `q` absent, only counts.
    pub fn read_declared_param(
        &mut self,
        d: &Declared,
        q: Option<&Elems>,
        pos: &mut usize,
    ) -> R<()> {
        self.check_bound_order(&d.name, &d.ty, true)?;
        if let Some(v) = self.read_param(&d.ty, q, pos)? {
            self.bind(&d.name, v);
        }
        Ok(())
    }

    /// Names of one parameter's unconstrained coordinates as Stan's
    /// `unconstrained_param_names` spells them (what BridgeStan's `param_unc_names` returns):
    /// the array indices, then the element's free shape ([`free_shape`]), first index fastest
    /// (`b.1.1, b.2.1, …` for `array[2] vector[3] b` even though its values are laid out one
    /// vector after another: Stan's names, not its layout). Tuples, which Stan's interfaces do
    /// not name, follow the CSV spelling in the layout's order: one whole tuple after another,
    /// slot `s` of element `a.i` named `a.i:s` and indexed below that.
    pub fn unconstrained_names(
        &mut self,
        name: &str,
        ty: &DeclType,
        out: &mut Vec<String>,
    ) -> R<()> {
        let mut dims = Vec::new();
        for e in &ty.array_dims {
            dims.push(self.int_expr(e)?.max(0) as usize);
        }
        if let Shape::Tuple(slots) = &ty.elem.shape {
            // Array elements in row-major order (the layout), each a whole tuple.
            let total: usize = dims.iter().product();
            let mut idx = vec![0usize; dims.len()];
            for _ in 0..total {
                let mut element = name.to_string();
                for i in &idx {
                    element.push('.');
                    element.push_str(&(i + 1).to_string());
                }
                for (s, slot) in slots.iter().enumerate() {
                    self.unconstrained_names(&format!("{element}:{}", s + 1), slot, out)?;
                }
                for k in (0..dims.len()).rev() {
                    idx[k] += 1;
                    if idx[k] < dims[k] {
                        break;
                    }
                    idx[k] = 0;
                }
            }
            return Ok(());
        }
        let (shape, _) = free_shape(self, &ty.elem)?;
        dims.extend(shape);
        indexed_names(name, &dims, out);
        Ok(())
    }

    /// Stan's check that a declaration's bounds are ordered: `lower < upper` for a parameter
    /// (its transform maps onto the open interval), `lower ≤ upper` for other variables.
    /// Bounds that depend on parameters are left to the transform and the value checks.
    pub fn check_bound_order(&mut self, name: &str, ty: &DeclType, strict: bool) -> R<()> {
        let Some(Constraint::Bounds {
            lower: Some(lower),
            upper: Some(upper),
        }) = ty.elem.angle_constraint()
        else {
            return Ok(());
        };
        if !(self.prog.is_parameter_free(lower.id) && self.prog.is_parameter_free(upper.id)) {
            return Ok(());
        }
        let (lv, uv) = (self.expr(lower)?, self.expr(upper)?);
        let (le, ue) = (self.to_elems(&lv), self.to_elems(&uv));
        let (Some(lc), Some(uc)) = (le.consts(), ue.consts()) else {
            return Ok(());
        };
        let at = |c: &[f64], i: usize| if c.len() == 1 { c.first() } else { c.get(i) }.copied();
        for i in 0..lc.len().max(uc.len()) {
            let (Some(l), Some(u)) = (at(&lc, i), at(&uc, i)) else {
                continue;
            };
            let ordered = if strict { l < u } else { l <= u };
            if !ordered {
                let relation = if strict {
                    "less than"
                } else {
                    "less than or equal to"
                };
                let which = if lc.len().max(uc.len()) == 1 {
                    String::new()
                } else {
                    format!(" (element {})", i + 1)
                };
                return cerr(
                    format!(
                        "`{name}`: the lower bound {l} must be {relation} the upper bound {u}{which}"
                    ),
                    ty.span,
                );
            }
        }
        Ok(())
    }

    /// Reads one parameter of type `ty` from `q` at `*pos` (advancing it by its unconstrained
    /// size); `None` when only counting. A tuple is read slot by slot, and an array of tuples
    /// one whole tuple after another (array elements in row-major order), as Stan lays them
    /// out.
    fn read_param(&mut self, ty: &DeclType, q: Option<&Elems>, pos: &mut usize) -> R<Option<Val>> {
        let mut dims = Vec::new();
        for e in &ty.array_dims {
            let n = self.int_expr(e)?;
            dims.push(n.max(0) as usize);
        }
        let n_items: usize = dims.iter().product();
        if let Shape::Tuple(slots) = &ty.elem.shape {
            let mut items = Vec::with_capacity(n_items);
            for _ in 0..n_items {
                let mut values = Vec::with_capacity(slots.len());
                for slot in slots {
                    values.push(self.read_param(slot, q, pos)?);
                }
                items.push(
                    values
                        .into_iter()
                        .collect::<Option<Vec<_>>>()
                        .map(|v| Val::Tuple(Arc::new(v))),
                );
            }
            let Some(items) = items.into_iter().collect::<Option<Vec<_>>>() else {
                return Ok(None);
            };
            return Ok(Some(nest_items(items, &dims)));
        }
        let (free, elem_blank) = free_size(self, &ty.elem)?;
        let total = n_items * free;
        let value = match q {
            Some(q) => {
                let u = q.slice(*pos, *pos + total);
                Some(self.constrain(ty, &dims, &u, free, &elem_blank)?)
            }
            None => None,
        };
        *pos += total;
        Ok(value)
    }

    fn constrain(
        &mut self,
        ty: &DeclType,
        dims: &[usize],
        u: &Elems,
        free: usize,
        elem_blank: &Val,
    ) -> R<Val> {
        let full_blank = super::exec::nest(dims, elem_blank);
        if let Some(t) = ty.elem.angle_constraint() {
            // Scalar-bounded types: one transform over the whole block.
            let x = self.bound_transform(t, u)?;
            return Ok(Self::with_shape(&full_blank, x));
        }
        let n_items: usize = dims.iter().product();
        let mut items = Vec::with_capacity(n_items);
        for k in 0..n_items {
            let uk = u.slice(k * free, (k + 1) * free);
            let x = self.structured_transform(&ty.elem, &uk, elem_blank, ty.span)?;
            items.push(Self::with_shape(elem_blank, x));
        }
        Ok(nest_items(items, dims))
    }

    fn bound_elems(&mut self, e: &Expr, n: usize) -> R<Elems> {
        let v = self.expr(e)?;
        let el = self.to_elems(&v);
        if el.len() != 1 && el.len() != n {
            return cerr(
                format!("bound has {} elements but the variable has {n}", el.len()),
                e.span,
            );
        }
        Ok(el)
    }

    fn add_jacobian(&mut self, e: &Elems) {
        if !self.jacobian || e.is_empty() {
            return;
        }
        let v = Val::Vector(e.clone());
        self.add_target(&v);
    }

    fn bound_transform(&mut self, t: &Constraint, u: &Elems) -> R<Elems> {
        let n = u.len();
        if n == 0 {
            return Ok(u.clone());
        }
        match t {
            Constraint::Bounds { lower, upper } => {
                let lb = match lower {
                    Some(e) => Some(self.bound_elems(e, n)?),
                    None => None,
                };
                let ub = match upper {
                    Some(e) => Some(self.bound_elems(e, n)?),
                    None => None,
                };
                Ok(self.bounds_constrain(lb, ub, u))
            }
            Constraint::Affine { offset, multiplier } => {
                let me = match multiplier {
                    Some(m) => Some(self.bound_elems(m, n)?),
                    None => None,
                };
                let oe = match offset {
                    Some(o) => Some(self.bound_elems(o, n)?),
                    None => None,
                };
                Ok(self.affine_constrain(oe, me, u))
            }
            _ => Ok(u.clone()),
        }
    }

    /// The lower/upper/both-bounds transform of `u` (bounds broadcast; a constant infinite
    /// bound is no bound), adding the log-Jacobian to the target when Jacobians are on. The
    /// one implementation behind bounded parameters and `*_bound_constrain/_jacobian`.
    pub(crate) fn bounds_constrain(
        &mut self,
        lb: Option<Elems>,
        ub: Option<Elems>,
        u: &Elems,
    ) -> Elems {
        let n = u.len();
        let is_inf = |b: &Option<Elems>, s: f64| match b {
            None => true,
            Some(e) => e
                .consts()
                .map(|c| c.iter().all(|&v| v == s))
                .unwrap_or(false),
        };
        let no_lb = is_inf(&lb, f64::NEG_INFINITY);
        let no_ub = is_inf(&ub, f64::INFINITY);
        match (no_lb, no_ub) {
            (true, true) => u.clone(),
            (false, true) => {
                // x = lb + exp(u); log J = u
                let ex = self.elems_unary(UnaryFn::Exp, u);
                let x = self.elems_binary(BinaryFn::Add, &ex, lb.as_ref().expect("lower bound"));
                self.add_jacobian(u);
                x
            }
            (true, false) => {
                let ex = self.elems_unary(UnaryFn::Exp, u);
                let x = self.elems_binary(BinaryFn::Sub, ub.as_ref().expect("upper bound"), &ex);
                self.add_jacobian(u);
                x
            }
            (false, false) => {
                // x = lb + (ub − lb) inv_logit(u);
                // log J = log(ub − lb) + log_inv_logit(u) + log1m_inv_logit(u)
                let lb = lb.expect("lower bound");
                let ub = ub.expect("upper bound");
                let diff = self.elems_binary(BinaryFn::Sub, &ub, &lb);
                let il = self.elems_unary(UnaryFn::InvLogit, u);
                let sc = self.elems_binary(BinaryFn::Mul, &diff, &il);
                let x = self.elems_binary(BinaryFn::Add, &sc, &lb);
                if self.jacobian {
                    let ld = self.elems_unary(UnaryFn::Log, &diff);
                    let a = self.elems_unary(UnaryFn::LogInvLogit, u);
                    let b = self.elems_unary(UnaryFn::Log1mInvLogit, u);
                    let ab = self.elems_binary(BinaryFn::Add, &a, &b);
                    self.add_jacobian(&ab);
                    self.add_jacobian_times(&ld, n);
                }
                x
            }
        }
    }

    /// `offset + multiplier · u`, log J = Σ log multiplier (when Jacobians are on).
    pub(crate) fn affine_constrain(
        &mut self,
        offset: Option<Elems>,
        multiplier: Option<Elems>,
        u: &Elems,
    ) -> Elems {
        let n = u.len();
        let mut x = u.clone();
        if let Some(me) = multiplier {
            x = self.elems_binary(BinaryFn::Mul, &x, &me);
            if self.jacobian {
                let lm = self.elems_unary(UnaryFn::Log, &me);
                self.add_jacobian_times(&lm, n);
            }
        }
        if let Some(oe) = offset {
            x = self.elems_binary(BinaryFn::Add, &x, &oe);
        }
        x
    }

    /// Adds `e` to the target, a single (broadcast) element counted `n` times.
    fn add_jacobian_times(&mut self, e: &Elems, n: usize) {
        if e.len() == 1 {
            let t = self.sc_binary(BinaryFn::Mul, e.get(0), Sc::C(n as f64));
            self.add_target_sc(t);
        } else {
            self.add_jacobian(e);
        }
    }

    fn structured_transform(
        &mut self,
        elem: &ElemType,
        u: &Elems,
        blank: &Val,
        span: hazel_syntax::Span,
    ) -> R<Elems> {
        let (rows, cols) = match blank {
            Val::Matrix(r, c, _) => (*r, *c),
            Val::Vector(e) | Val::RowVector(e) => (e.len(), 1),
            _ => (1, 1),
        };
        match &elem.constraint {
            Constraint::Ordered | Constraint::PositiveOrdered => {
                Ok(self
                    .ordered_constrain(matches!(elem.constraint, Constraint::PositiveOrdered), u))
            }
            _ => {
                let Some(kind) = struct_kind(elem, rows, cols) else {
                    return cerr("unsupported parameter type", span);
                };
                self.struct_constrain(kind, u, span)
            }
        }
    }

    /// The ordered (or positive-ordered) transform as a cumulative sum of exponentials;
    /// log J added when Jacobians are on.
    pub(crate) fn ordered_constrain(&mut self, positive: bool, u: &Elems) -> Elems {
        let n = u.len();
        if n == 0 {
            return u.clone();
        }
        // ordered: x₁ = u₁, x_k = x_{k−1} + exp(u_k); positive_ordered: x = cumsum(exp(u))
        let (head, rest) = if positive {
            (None, u.clone())
        } else {
            (Some(u.get(0)), u.slice(1, n))
        };
        let ex = self.elems_unary(UnaryFn::Exp, &rest);
        let mut parts = Vec::with_capacity(n);
        if let Some(h) = head {
            parts.push(h);
        }
        parts.extend(ex.to_scalars());
        let steps = Elems::from_scalars(parts);
        let x = self.elems_cumsum(&steps);
        self.add_jacobian(&rest);
        x
    }

    /// A structured transform of `hazel_math::transforms` (one `Op::Constrain`, folded for
    /// constants); log J added when Jacobians are on.
    pub(crate) fn struct_constrain(
        &mut self,
        kind: crate::tape::StructKind,
        u: &Elems,
        span: hazel_syntax::Span,
    ) -> R<Elems> {
        let n_out = kind.constrained_len();
        match u.consts() {
            Some(c) => {
                let mut out = vec![0.0; n_out];
                let mut ws = vec![0.0; kind.workspace_len()];
                let lj = kind.constrain(&c, &mut out, &mut ws).map_err(|e| {
                    super::trace::TraceErr::Eval(
                        hazel_density::EvalError::domain(e.to_string()),
                        span,
                    )
                })?;
                if self.jacobian {
                    self.add_target_sc(Sc::C(lj));
                }
                Ok(Elems::C(Arc::new(out)))
            }
            None => {
                let a = self.elems_arg(u);
                let out = self.b.constrain(kind, a, n_out);
                if self.jacobian {
                    self.target.push(Arg::var(out.off as usize + n_out, 1));
                }
                Ok(Elems::V(Arg::var(out.off as usize, n_out)))
            }
        }
    }
}

/// The structured transform of a declared element type with its sizes.
pub fn struct_kind(elem: &ElemType, rows: usize, cols: usize) -> Option<crate::tape::StructKind> {
    use crate::tape::StructKind;
    Some(match &elem.constraint {
        Constraint::Simplex => StructKind::Simplex { k: rows },
        Constraint::UnitVector => StructKind::UnitVector { k: rows },
        Constraint::SumToZero if matches!(elem.shape, Shape::Vector { .. }) => {
            StructKind::SumToZeroVector { k: rows }
        }
        Constraint::Ordered => StructKind::Ordered { k: rows },
        Constraint::PositiveOrdered => StructKind::PositiveOrdered { k: rows },
        Constraint::SumToZero => StructKind::SumToZeroMatrix { rows, cols },
        Constraint::CholeskyFactorCorr => StructKind::CholeskyFactorCorr { k: rows },
        Constraint::CholeskyFactorCov => StructKind::CholeskyFactorCov { rows, cols },
        Constraint::CovMatrix => StructKind::CovMatrix { k: rows },
        Constraint::CorrMatrix => StructKind::CorrMatrix { k: rows },
        Constraint::ColumnStochastic => StructKind::ColumnStochastic { rows, cols },
        Constraint::RowStochastic => StructKind::RowStochastic { rows, cols },
        _ => return None,
    })
}

impl<'p> Tracer<'p> {
    /// Unconstrained values of one parameter from its constrained value `x` (flattened in
    /// memory order), for user-supplied initial values: Stan's inverse transforms.
    pub fn unconstrain_param(&mut self, d: &Declared, x: &Val) -> R<Vec<f64>> {
        let span = d.ty.span;
        if let Shape::Tuple(slots) = &d.ty.elem.shape {
            // Slot by slot, one whole tuple after another (the layout `read_param` reads).
            let mut tuples = Vec::new();
            collect_tuples(x, &mut tuples);
            let mut unc = Vec::new();
            for t in tuples {
                let Val::Tuple(values) = t else {
                    return cerr(format!("{}: expected a tuple", d.name), span);
                };
                for (slot, value) in slots.iter().zip(values.iter()) {
                    let slot_decl = Declared {
                        name: d.name.clone(),
                        ty: slot.clone(),
                    };
                    unc.extend(self.unconstrain_param(&slot_decl, value)?);
                }
            }
            return Ok(unc);
        }
        let mut flat = Vec::new();
        x.flatten(&mut flat);
        let xs: Vec<f64> = flat
            .iter()
            .map(|s| if let Sc::C(c) = s { *c } else { f64::NAN })
            .collect();
        let bad = |e: hazel_math::transforms::TransformError| {
            super::trace::TraceErr::Eval(
                hazel_density::EvalError::domain(format!("{}: {e}", d.name)),
                span,
            )
        };
        if let Some(t) = d.ty.elem.angle_constraint() {
            let n = xs.len();
            let mut unc = vec![0.0; n];
            let consts = |tr: &mut Self, e: &Option<Expr>, default: f64| -> R<Vec<f64>> {
                match e {
                    None => Ok(vec![default]),
                    Some(e) => {
                        let el = tr.bound_elems(e, n)?;
                        el.consts().ok_or_else(|| {
                            super::trace::TraceErr::Compile(
                                "bound depends on parameters".into(),
                                e.span,
                            )
                        })
                    }
                }
            };
            match t {
                Constraint::Bounds { lower, upper } => {
                    let lb = consts(self, lower, f64::NEG_INFINITY)?;
                    let ub = consts(self, upper, f64::INFINITY)?;
                    hazel_math::transforms::lower_upper_unconstrain(&xs, &lb, &ub, &mut unc)
                        .map_err(bad)?;
                }
                Constraint::Affine { offset, multiplier } => {
                    let o = consts(self, offset, 0.0)?;
                    let m = consts(self, multiplier, 1.0)?;
                    hazel_math::transforms::offset_multiplier_unconstrain(&xs, &o, &m, &mut unc)
                        .map_err(bad)?;
                }
                _ => unc.copy_from_slice(&xs),
            }
            return Ok(unc);
        }
        let mut dims = Vec::new();
        for e in &d.ty.array_dims {
            dims.push(self.int_expr(e)?.max(0) as usize);
        }
        let (free, elem_blank) = free_size(self, &d.ty.elem)?;
        let (rows, cols) = match &elem_blank {
            Val::Matrix(r, c, _) => (*r, *c),
            Val::Vector(e) | Val::RowVector(e) => (e.len(), 1),
            _ => (1, 1),
        };
        let Some(kind) = struct_kind(&d.ty.elem, rows, cols) else {
            return cerr("unsupported parameter type", span);
        };
        let items: usize = dims.iter().product();
        let per = rows * cols;
        let mut unc = vec![0.0; items * free];
        for k in 0..items {
            kind.unconstrain(
                &xs[k * per..(k + 1) * per],
                &mut unc[k * free..(k + 1) * free],
            )
            .map_err(bad)?;
        }
        Ok(unc)
    }
}
