//! Stan 2.36+'s variable-transform functions: `*_constrain` (free → constrained),
//! `*_jacobian` (the same value, and the log-Jacobian added to the target when Jacobians are
//! on, as `jacobian +=` does) and `*_unconstrain` (constrained → free).
//!
//! The constraining directions are the very transforms parameters use
//! (`Tracer::bounds_constrain`, `affine_constrain`, `ordered_constrain`, `struct_constrain`
//! in `lower::params`, which call `hazel_math::transforms` for the structured types), so each
//! transform exists once. Unconstraining data runs `hazel_math::transforms`' inverses;
//! unconstraining parameters is composed of graph ops for the scalar bounds, ordered,
//! positive-ordered and unit vectors (the structured inverses have no adjoint yet).

use super::trace::{cerr, eerr, TraceErr, Tracer, R};
use super::value::{Elems, Sc, Val};
use crate::kernels::{BinaryFn, UnaryFn};
use crate::tape::{CheckKind, StructKind};
use hazel_math::transforms as tf;
use hazel_syntax::Span;
use std::sync::Arc;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Direction {
    Constrain,
    Jacobian,
    Unconstrain,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Scalar {
    Lower,
    Upper,
    LowerUpper,
    OffsetMultiplier,
}

const BASES: [&str; 15] = [
    "lower_bound",
    "upper_bound",
    "lower_upper_bound",
    "offset_multiplier",
    "ordered",
    "positive_ordered",
    "simplex",
    "sum_to_zero",
    "unit_vector",
    "stochastic_column",
    "stochastic_row",
    "cholesky_factor_corr",
    "cholesky_factor_cov",
    "corr_matrix",
    "cov_matrix",
];

fn split(name: &str) -> Option<(&str, Direction)> {
    let (base, dir) = if let Some(b) = name.strip_suffix("_unconstrain") {
        (b, Direction::Unconstrain)
    } else if let Some(b) = name.strip_suffix("_constrain") {
        (b, Direction::Constrain)
    } else if let Some(b) = name.strip_suffix("_jacobian") {
        (b, Direction::Jacobian)
    } else {
        return None;
    };
    BASES.contains(&base).then_some((base, dir))
}

/// Whether `name` is one of the transform functions lowered here.
pub(crate) fn is_transform_fn(name: &str) -> bool {
    split(name).is_some()
}

fn domain(span: Span, msg: String) -> TraceErr {
    TraceErr::Eval(hazel_density::EvalError::domain(msg), span)
}

impl<'p> Tracer<'p> {
    pub(crate) fn transform_call(&mut self, name: &str, args: &[Val], span: Span) -> R<Val> {
        let Some((base, dir)) = split(name) else {
            return cerr(format!("function '{name}' is not supported"), span);
        };
        // `_constrain` never touches the target; `_jacobian` adds log J exactly when the
        // parameters' own transforms do.
        let saved = self.jacobian;
        if dir == Direction::Constrain {
            self.jacobian = false;
        }
        let out = self.transform_dispatch(name, base, dir, args, span);
        self.jacobian = saved;
        out
    }

    fn transform_dispatch(
        &mut self,
        name: &str,
        base: &str,
        dir: Direction,
        args: &[Val],
        span: Span,
    ) -> R<Val> {
        let scalar = match base {
            "lower_bound" => Some(Scalar::Lower),
            "upper_bound" => Some(Scalar::Upper),
            "lower_upper_bound" => Some(Scalar::LowerUpper),
            "offset_multiplier" => Some(Scalar::OffsetMultiplier),
            _ => None,
        };
        if let Some(kind) = scalar {
            return self.scalar_transform(name, kind, dir, args, span);
        }
        // Structured: the first argument is the value (or an array of them); sizes follow.
        let sizes: Vec<usize> = args[1..]
            .iter()
            .map(|a| self.as_int(a, span).map(|v| v.max(0) as usize))
            .collect::<R<_>>()?;
        match &args[0] {
            Val::Array(items) => Ok(Val::array(
                items
                    .iter()
                    .map(|x| self.structured_one(name, base, dir, x, &sizes, span))
                    .collect::<R<_>>()?,
            )),
            x => self.structured_one(name, base, dir, x, &sizes, span),
        }
    }

    fn scalar_transform(
        &mut self,
        name: &str,
        kind: Scalar,
        dir: Direction,
        args: &[Val],
        span: Span,
    ) -> R<Val> {
        let elems: Vec<Elems> = args.iter().map(|a| self.to_elems(a)).collect();
        let n = elems.iter().map(Elems::len).max().unwrap_or(1);
        if let Some(e) = elems.iter().find(|e| e.len() != 1 && e.len() != n) {
            return eerr(
                format!("{name}: argument sizes differ ({} and {n})", e.len()),
                span,
            );
        }
        // The result has the shape of the first container argument (all containers match).
        let like = args
            .iter()
            .find(|a| !matches!(a, Val::Int(_) | Val::Real(_)))
            .unwrap_or(&args[0])
            .clone();
        let y = if elems[0].len() == 1 && n > 1 {
            Elems::from_scalars(vec![elems[0].get(0); n])
        } else {
            elems[0].clone()
        };
        let out = match dir {
            Direction::Constrain | Direction::Jacobian => match kind {
                Scalar::Lower => self.bounds_constrain(Some(elems[1].clone()), None, &y),
                Scalar::Upper => self.bounds_constrain(None, Some(elems[1].clone()), &y),
                Scalar::LowerUpper => {
                    self.check_lower_below_upper(name, &elems[1], &elems[2], span)?;
                    self.bounds_constrain(Some(elems[1].clone()), Some(elems[2].clone()), &y)
                }
                Scalar::OffsetMultiplier => {
                    self.check_positive_multiplier(name, &elems[2], span)?;
                    self.affine_constrain(Some(elems[1].clone()), Some(elems[2].clone()), &y)
                }
            },
            Direction::Unconstrain => self.scalar_unconstrain(name, kind, &y, &elems[1..], span)?,
        };
        Ok(match like {
            Val::Int(_) | Val::Real(_) => Val::Real(out.get(0)),
            other => Self::with_shape(&other, out),
        })
    }

    fn check_lower_below_upper(&mut self, name: &str, lb: &Elems, ub: &Elems, span: Span) -> R<()> {
        let d = self.elems_binary(BinaryFn::Sub, ub, lb);
        match d.consts() {
            Some(c) => {
                if let Some(v) = c.iter().find(|v| v.is_nan() || **v <= 0.0) {
                    return eerr(
                        format!("{name}: the upper bound minus the lower bound is {v}, but must be positive"),
                        span,
                    );
                }
            }
            None => {
                let x = self.elems_arg(&d);
                let zero = self.b.scalar_const(f64::MIN_POSITIVE);
                self.b.check(
                    CheckKind::Lower,
                    x,
                    zero,
                    format!("{name}: the lower bound must be below the upper bound"),
                );
            }
        }
        Ok(())
    }

    fn check_positive_multiplier(&mut self, name: &str, m: &Elems, span: Span) -> R<()> {
        match m.consts() {
            Some(c) => {
                if let Some(v) = c.iter().find(|v| !(**v > 0.0 && v.is_finite())) {
                    return eerr(
                        format!("{name}: multiplier is {v}, but must be positive finite!"),
                        span,
                    );
                }
            }
            None => {
                let x = self.elems_arg(m);
                let zero = self.b.scalar_const(f64::MIN_POSITIVE);
                self.b.check(
                    CheckKind::Lower,
                    x,
                    zero,
                    format!("{name}: multiplier must be positive"),
                );
            }
        }
        Ok(())
    }

    /// Inverse of a scalar transform. Data go through `hazel_math::transforms`' inverses
    /// (with their range checks); parameters through the same formulas as graph ops, with
    /// the range checked at every evaluation.
    fn scalar_unconstrain(
        &mut self,
        name: &str,
        kind: Scalar,
        x: &Elems,
        bounds: &[Elems],
        span: Span,
    ) -> R<Elems> {
        let n = x.len();
        let consts: Option<Vec<Vec<f64>>> = std::iter::once(x)
            .chain(bounds.iter())
            .map(|e| {
                e.consts().map(|c| {
                    if c.len() == 1 && n > 1 {
                        vec![c[0]; n]
                    } else {
                        c
                    }
                })
            })
            .collect();
        if let Some(c) = consts {
            let mut unc = vec![0.0; n];
            let r = match kind {
                Scalar::Lower => tf::lower_unconstrain(&c[0], &c[1], &mut unc),
                Scalar::Upper => tf::upper_unconstrain(&c[0], &c[1], &mut unc),
                Scalar::LowerUpper => tf::lower_upper_unconstrain(&c[0], &c[1], &c[2], &mut unc),
                Scalar::OffsetMultiplier => {
                    tf::offset_multiplier_unconstrain(&c[0], &c[1], &c[2], &mut unc)
                }
            };
            r.map_err(|e| domain(span, format!("{name}: {e}")))?;
            return Ok(Elems::C(Arc::new(unc)));
        }
        let infinite = |e: &Elems, s: f64| e.consts().is_some_and(|c| c.iter().all(|&v| v == s));
        let message = format!("{name}: the value is outside the bounds");
        Ok(match kind {
            Scalar::Lower | Scalar::Upper => {
                let (inf, b) = if kind == Scalar::Lower {
                    (f64::NEG_INFINITY, &bounds[0])
                } else {
                    (f64::INFINITY, &bounds[0])
                };
                if infinite(b, inf) {
                    return Ok(x.clone());
                }
                let d = if kind == Scalar::Lower {
                    self.elems_binary(BinaryFn::Sub, x, b)
                } else {
                    self.elems_binary(BinaryFn::Sub, b, x)
                };
                self.check_elems(&d, CheckKind::Lower, 0.0, &message);
                self.elems_unary(UnaryFn::Log, &d)
            }
            Scalar::LowerUpper => {
                let (lb, ub) = (&bounds[0], &bounds[1]);
                match (infinite(lb, f64::NEG_INFINITY), infinite(ub, f64::INFINITY)) {
                    (true, true) => x.clone(),
                    (false, true) => {
                        return self.scalar_unconstrain(name, Scalar::Lower, x, &bounds[..1], span)
                    }
                    (true, false) => {
                        return self.scalar_unconstrain(name, Scalar::Upper, x, &bounds[1..], span)
                    }
                    (false, false) => {
                        // logit((x − lb) / (ub − lb))
                        let num = self.elems_binary(BinaryFn::Sub, x, lb);
                        let den = self.elems_binary(BinaryFn::Sub, ub, lb);
                        let t = self.elems_binary(BinaryFn::Div, &num, &den);
                        self.check_elems(&t, CheckKind::Lower, 0.0, &message);
                        self.check_elems(&t, CheckKind::Upper, 1.0, &message);
                        self.elems_unary(UnaryFn::Logit, &t)
                    }
                }
            }
            Scalar::OffsetMultiplier => {
                self.check_positive_multiplier(name, &bounds[1], span)?;
                let d = self.elems_binary(BinaryFn::Sub, x, &bounds[0]);
                self.elems_binary(BinaryFn::Div, &d, &bounds[1])
            }
        })
    }

    /// A check op on every element of `e` against a constant bound (skipped for constants,
    /// which the caller has checked).
    fn check_elems(&mut self, e: &Elems, kind: CheckKind, bound: f64, message: &str) {
        if e.is_const() || e.is_empty() {
            return;
        }
        let x = self.elems_arg(e);
        let b = self.b.scalar_const(bound);
        self.b.check(kind, x, b, message.to_string());
    }

    fn structured_one(
        &mut self,
        name: &str,
        base: &str,
        dir: Direction,
        x: &Val,
        sizes: &[usize],
        span: Span,
    ) -> R<Val> {
        let (rows, cols, e) = match x {
            Val::Vector(e) | Val::RowVector(e) => (e.len(), 1, e.clone()),
            Val::Matrix(r, c, e) => (*r, *c, e.clone()),
            _ => return cerr(format!("{name}: expected a vector or matrix"), span),
        };
        if dir == Direction::Unconstrain {
            let is_matrix = matches!(x, Val::Matrix(..));
            return self.structured_unconstrain(name, base, (rows, cols, is_matrix), &e, span);
        }
        if matches!(base, "ordered" | "positive_ordered") {
            return Ok(Val::Vector(
                self.ordered_constrain(base == "positive_ordered", &e),
            ));
        }
        // The constrained type's sizes from the free value's (Stan 2.36+: a simplex or
        // sum-to-zero vector of N + 1 from N free values, stochastic matrices one row or
        // column more).
        let k = |i: usize| sizes.get(i).copied().unwrap_or(0);
        let kind = match base {
            "simplex" => StructKind::Simplex { k: rows + 1 },
            "sum_to_zero" if matches!(x, Val::Matrix(..)) => StructKind::SumToZeroMatrix {
                rows: rows + 1,
                cols: cols + 1,
            },
            "sum_to_zero" => StructKind::SumToZeroVector { k: rows + 1 },
            "unit_vector" => StructKind::UnitVector { k: rows },
            "stochastic_column" => StructKind::ColumnStochastic {
                rows: rows + 1,
                cols,
            },
            "stochastic_row" => StructKind::RowStochastic {
                rows,
                cols: cols + 1,
            },
            "cholesky_factor_corr" => StructKind::CholeskyFactorCorr { k: k(0) },
            "corr_matrix" => StructKind::CorrMatrix { k: k(0) },
            "cov_matrix" => StructKind::CovMatrix { k: k(0) },
            "cholesky_factor_cov" => StructKind::CholeskyFactorCov {
                rows: k(0),
                cols: k(1),
            },
            _ => return cerr(format!("function '{name}' is not supported"), span),
        };
        if kind.free_len() != e.len() {
            return eerr(
                format!(
                    "{name}: the free value has {} elements, but this size needs {}",
                    e.len(),
                    kind.free_len()
                ),
                span,
            );
        }
        let out = self.struct_constrain(kind, &e, span)?;
        Ok(shaped(kind, out))
    }

    fn structured_unconstrain(
        &mut self,
        name: &str,
        base: &str,
        (rows, cols, is_matrix): (usize, usize, bool),
        x: &Elems,
        span: Span,
    ) -> R<Val> {
        let kind = match base {
            "ordered" => StructKind::Ordered { k: rows },
            "positive_ordered" => StructKind::PositiveOrdered { k: rows },
            "simplex" => StructKind::Simplex { k: rows },
            "sum_to_zero" if is_matrix => StructKind::SumToZeroMatrix { rows, cols },
            "sum_to_zero" => StructKind::SumToZeroVector { k: rows },
            "unit_vector" => StructKind::UnitVector { k: rows },
            "stochastic_column" => StructKind::ColumnStochastic { rows, cols },
            "stochastic_row" => StructKind::RowStochastic { rows, cols },
            "cholesky_factor_corr" => StructKind::CholeskyFactorCorr { k: rows },
            "corr_matrix" => StructKind::CorrMatrix { k: rows },
            "cov_matrix" => StructKind::CovMatrix { k: rows },
            "cholesky_factor_cov" => StructKind::CholeskyFactorCov { rows, cols },
            _ => return cerr(format!("function '{name}' is not supported"), span),
        };
        if kind.constrained_len() != x.len() {
            return eerr(format!("{name}: the value has the wrong size"), span);
        }
        let vector = |free: Elems, rows: usize, cols: usize| match kind {
            StructKind::SumToZeroMatrix { .. }
            | StructKind::ColumnStochastic { .. }
            | StructKind::RowStochastic { .. } => Val::Matrix(rows, cols, free),
            _ => Val::Vector(free),
        };
        let free_shape = match kind {
            StructKind::SumToZeroMatrix { rows, cols } => (rows - 1, cols - 1),
            StructKind::ColumnStochastic { rows, cols } => (rows - 1, cols),
            StructKind::RowStochastic { rows, cols } => (rows, cols - 1),
            _ => (kind.free_len(), 1),
        };
        if let Some(c) = x.consts() {
            let mut unc = vec![0.0; kind.free_len()];
            kind.unconstrain(&c, &mut unc)
                .map_err(|e| domain(span, format!("{name}: {e}")))?;
            return Ok(vector(Elems::C(Arc::new(unc)), free_shape.0, free_shape.1));
        }
        let message = format!(
            "{name}: the argument is not a valid {}",
            base.replace('_', " ")
        );
        let free = match kind {
            StructKind::Ordered { .. } | StructKind::PositiveOrdered { .. } => {
                // y₁ = x₁ (log x₁ when positive), y_k = log(x_k − x_{k−1})
                let n = x.len();
                if n == 0 {
                    return Ok(Val::Vector(x.clone()));
                }
                let mut parts = Vec::with_capacity(n);
                let first = x.get(0);
                if base == "positive_ordered" {
                    let f = Elems::from_scalars(vec![first]);
                    self.check_elems(&f, CheckKind::Lower, f64::MIN_POSITIVE, &message);
                    parts.push(self.sc_unary(UnaryFn::Log, first));
                } else {
                    parts.push(first);
                }
                if n > 1 {
                    let d = self.elems_binary(BinaryFn::Sub, &x.slice(1, n), &x.slice(0, n - 1));
                    self.check_elems(&d, CheckKind::Lower, f64::MIN_POSITIVE, &message);
                    let l = self.elems_unary(UnaryFn::Log, &d);
                    parts.extend(l.to_scalars());
                }
                Elems::from_scalars(parts)
            }
            StructKind::UnitVector { .. } => {
                // Stan returns the unit vector itself, after checking its norm.
                let xa = self.elems_arg(x);
                let ss = Sc::V(self.b.dot(xa, xa).off);
                let dev = Elems::from_scalars(vec![self.sc_binary(BinaryFn::Sub, ss, Sc::C(1.0))]);
                self.check_elems(&dev, CheckKind::Lower, -1e-8, &message);
                self.check_elems(&dev, CheckKind::Upper, 1e-8, &message);
                x.clone()
            }
            StructKind::CholeskyFactorCov { .. } | StructKind::CovMatrix { .. } => {
                // Cholesky factor (of the covariance matrix): its lower triangle row by row,
                // the diagonal on the log scale.
                let (m, n) = (rows, cols);
                let l = if let StructKind::CovMatrix { .. } = kind {
                    match self.call(
                        "cholesky_decompose",
                        vec![Val::Matrix(m, n, x.clone())],
                        span,
                    )? {
                        Val::Matrix(_, _, e) => e,
                        _ => return cerr("cholesky_decompose returned a non-matrix", span),
                    }
                } else {
                    let above: Vec<Sc> = (0..n)
                        .flat_map(|c| (0..c.min(m)).map(move |r| (r, c)))
                        .map(|(r, c)| x.get(r + c * m))
                        .collect();
                    if !above.is_empty() {
                        let a = Elems::from_scalars(above);
                        self.check_elems(&a, CheckKind::Lower, 0.0, &message);
                        self.check_elems(&a, CheckKind::Upper, 0.0, &message);
                    }
                    x.clone()
                };
                let diag = Elems::from_scalars((0..n.min(m)).map(|d| l.get(d + d * m)).collect());
                self.check_elems(&diag, CheckKind::Lower, f64::MIN_POSITIVE, &message);
                let mut parts = Vec::with_capacity(kind.free_len());
                for r in 0..m {
                    for c in 0..n.min(r + 1) {
                        let v = l.get(r + c * m);
                        parts.push(if r == c {
                            self.sc_unary(UnaryFn::Log, v)
                        } else {
                            v
                        });
                    }
                }
                Elems::from_scalars_or_empty(parts)
            }
            StructKind::CholeskyFactorCorr { k } => {
                // Canonical partial correlations, row by row: z = L_rc / √(1 − Σ_{j<c} L_rj²),
                // y = atanh(z); the factor is checked (lower-triangular, positive diagonal,
                // unit rows).
                let above: Vec<Sc> = (0..k)
                    .flat_map(|c| (0..c).map(move |r| (r, c)))
                    .map(|(r, c)| x.get(r + c * k))
                    .collect();
                if !above.is_empty() {
                    let a = Elems::from_scalars(above);
                    self.check_elems(&a, CheckKind::Lower, 0.0, &message);
                    self.check_elems(&a, CheckKind::Upper, 0.0, &message);
                }
                let diag = Elems::from_scalars((0..k).map(|d| x.get(d + d * k)).collect());
                self.check_elems(&diag, CheckKind::Lower, f64::MIN_POSITIVE, &message);
                let mut norms = Vec::with_capacity(k);
                let mut parts = Vec::with_capacity(kind.free_len());
                for r in 0..k {
                    let mut sum_sqs = Sc::C(0.0);
                    for c in 0..=r {
                        let v = x.get(r + c * k);
                        if c < r {
                            let z = if c == 0 {
                                v
                            } else {
                                let rest = self.sc_binary(BinaryFn::Sub, Sc::C(1.0), sum_sqs);
                                let root = self.sc_unary(UnaryFn::Sqrt, rest);
                                self.sc_binary(BinaryFn::Div, v, root)
                            };
                            match self.call("atanh", vec![Val::Real(z)], span)? {
                                Val::Real(y) => parts.push(y),
                                _ => return cerr("atanh returned a non-scalar", span),
                            }
                        }
                        let v2 = self.sc_unary(UnaryFn::Square, v);
                        sum_sqs = self.sc_binary(BinaryFn::Add, sum_sqs, v2);
                    }
                    norms.push(self.sc_binary(BinaryFn::Sub, sum_sqs, Sc::C(1.0)));
                }
                let dev = Elems::from_scalars(norms);
                self.check_elems(&dev, CheckKind::Lower, -1e-8, &message);
                self.check_elems(&dev, CheckKind::Upper, 1e-8, &message);
                Elems::from_scalars_or_empty(parts)
            }
            StructKind::CorrMatrix { k } => {
                // hazel_math's inverse as ops: unit diagonal checked, L = cholesky_decompose(Ω)
                // with its rows renormalised, the Cholesky-factor inverse (row-major CPCs),
                // reordered to the corr_matrix transform's column-major CPCs.
                let diag = Elems::from_scalars((0..k).map(|d| x.get(d + d * k)).collect());
                let ones = Elems::C(Arc::new(vec![1.0; k]));
                let dev = self.elems_binary(BinaryFn::Sub, &diag, &ones);
                self.check_elems(&dev, CheckKind::Lower, -1e-8, &message);
                self.check_elems(&dev, CheckKind::Upper, 1e-8, &message);
                let l = match self.call(
                    "cholesky_decompose",
                    vec![Val::Matrix(k, k, x.clone())],
                    span,
                )? {
                    Val::Matrix(_, _, e) => e,
                    _ => return cerr("cholesky_decompose returned a non-matrix", span),
                };
                let mut scaled = vec![Sc::C(0.0); k * k];
                for r in 0..k {
                    let mut sum_sqs = Sc::C(0.0);
                    for c in 0..=r {
                        let v2 = self.sc_unary(UnaryFn::Square, l.get(r + c * k));
                        sum_sqs = self.sc_binary(BinaryFn::Add, sum_sqs, v2);
                    }
                    let norm = self.sc_unary(UnaryFn::Sqrt, sum_sqs);
                    for c in 0..=r {
                        scaled[r + c * k] = self.sc_binary(BinaryFn::Div, l.get(r + c * k), norm);
                    }
                }
                let factor = Elems::from_scalars(scaled);
                let Val::Vector(row_major) = self.structured_unconstrain(
                    name,
                    "cholesky_factor_corr",
                    (k, k, true),
                    &factor,
                    span,
                )?
                else {
                    return cerr(
                        "cholesky_factor_corr_unconstrain returned a non-vector",
                        span,
                    );
                };
                let mut parts = vec![Sc::C(0.0); kind.free_len()];
                for c in 0..k {
                    for r in (c + 1)..k {
                        parts[c * (2 * k - c - 1) / 2 + (r - c - 1)] =
                            row_major.get(r * (r - 1) / 2 + c);
                    }
                }
                Elems::from_scalars_or_empty(parts)
            }
            StructKind::SumToZeroVector { .. }
            | StructKind::SumToZeroMatrix { .. }
            | StructKind::Simplex { .. }
            | StructKind::ColumnStochastic { .. }
            | StructKind::RowStochastic { .. } => {
                self.linear_unconstrain(kind, x, &message, span)?
            }
        };
        Ok(vector(free, free_shape.0, free_shape.1))
    }

    /// Unconstraining a parameter-dependent sum-to-zero value (`y = A x`) or simplex /
    /// stochastic matrix (`y = A log x`): these inverses are linear in `x` or `log x`, so `A`
    /// is read off `hazel_math`'s own inverse at basis points (one constant matrix, one
    /// matrix × vector op). The value's constraint (sums within 1e-8, as Stan checks; no
    /// negative entries) is checked at every evaluation.
    fn linear_unconstrain(
        &mut self,
        kind: StructKind,
        x: &Elems,
        message: &str,
        span: Span,
    ) -> R<Elems> {
        let n = kind.constrained_len();
        let free = kind.free_len();
        if free == 0 {
            return Ok(Elems::C(Arc::new(vec![])));
        }
        let logs = matches!(
            kind,
            StructKind::Simplex { .. }
                | StructKind::ColumnStochastic { .. }
                | StructKind::RowStochastic { .. }
        );
        // Groups whose sums are constrained: (group of each element, number of groups).
        let (rows, cols) = match kind {
            StructKind::SumToZeroMatrix { rows, cols }
            | StructKind::ColumnStochastic { rows, cols }
            | StructKind::RowStochastic { rows, cols } => (rows, cols),
            _ => (n, 1),
        };
        let mut groups: Vec<Vec<usize>> = Vec::new();
        match kind {
            StructKind::ColumnStochastic { .. } => {
                groups = (0..cols)
                    .map(|j| (0..rows).map(|i| i + j * rows).collect())
                    .collect()
            }
            StructKind::RowStochastic { .. } => {
                groups = (0..rows)
                    .map(|i| (0..cols).map(|j| i + j * rows).collect())
                    .collect()
            }
            StructKind::SumToZeroMatrix { .. } => {
                groups.extend((0..cols).map(|j| (0..rows).map(|i| i + j * rows).collect()));
                groups.extend((0..rows).map(|i| (0..cols).map(|j| i + j * rows).collect()));
            }
            _ => groups.push((0..n).collect()),
        }
        // A point whose inverse is column m of A.
        let point = |m: usize| -> Vec<f64> {
            if logs {
                // log x = δ_m, renormalised within each simplex.
                let mut v: Vec<f64> = (0..n)
                    .map(|k| if k == m { 1f64.exp() } else { 1.0 })
                    .collect();
                for g in &groups {
                    let s: f64 = g.iter().map(|&k| v[k]).sum();
                    g.iter().for_each(|&k| v[k] /= s);
                }
                v
            } else {
                // δ_m projected onto the sum-to-zero space (centred, or double-centred).
                let (mi, mj) = (m % rows, m / rows);
                (0..n)
                    .map(|k| {
                        let (a, b) = (k % rows, k / rows);
                        let d = ((a, b) == (mi, mj)) as u8 as f64;
                        if cols == 1 {
                            d - 1.0 / n as f64
                        } else {
                            d - (a == mi) as u8 as f64 / cols as f64
                                - (b == mj) as u8 as f64 / rows as f64
                                + 1.0 / n as f64
                        }
                    })
                    .collect()
            }
        };
        let mut a = vec![0.0; free * n];
        let mut col = vec![0.0; free];
        let mut base = vec![0.0; free];
        if logs {
            kind.unconstrain(&point(usize::MAX), &mut base)
                .map_err(|e| domain(span, format!("{message}: {e}")))?;
        }
        for m in 0..n {
            kind.unconstrain(&point(m), &mut col)
                .map_err(|e| domain(span, format!("{message}: {e}")))?;
            for r in 0..free {
                a[r + m * free] = col[r] - base[r];
            }
        }
        // The constraint: group sums (1 for simplexes, 0 otherwise) within 1e-8.
        let mut g = vec![0.0; groups.len() * n];
        for (gi, members) in groups.iter().enumerate() {
            for &k in members {
                g[gi + k * groups.len()] = 1.0;
            }
        }
        let xa = self.elems_arg(x);
        let ga = self.b.konst(&g);
        let sums = Elems::V(self.b.matvec(ga, xa, groups.len(), n));
        let target = if logs { 1.0 } else { 0.0 };
        self.check_elems(&sums, CheckKind::Lower, target - 1e-8, message);
        self.check_elems(&sums, CheckKind::Upper, target + 1e-8, message);
        let input = if logs {
            self.check_elems(x, CheckKind::Lower, 0.0, message);
            self.elems_unary(UnaryFn::Log, x)
        } else {
            x.clone()
        };
        let ia = self.elems_arg(&input);
        let aa = self.b.konst(&a);
        Ok(Elems::V(self.b.matvec(aa, ia, free, n)))
    }
}

/// The constrained value of `kind` as a Stan value (matrices column-major).
fn shaped(kind: StructKind, e: Elems) -> Val {
    match kind {
        StructKind::Ordered { .. }
        | StructKind::PositiveOrdered { .. }
        | StructKind::Simplex { .. }
        | StructKind::UnitVector { .. }
        | StructKind::SumToZeroVector { .. } => Val::Vector(e),
        StructKind::SumToZeroMatrix { rows, cols }
        | StructKind::CholeskyFactorCov { rows, cols }
        | StructKind::ColumnStochastic { rows, cols }
        | StructKind::RowStochastic { rows, cols } => Val::Matrix(rows, cols, e),
        StructKind::CholeskyFactorCorr { k }
        | StructKind::CorrMatrix { k }
        | StructKind::CovMatrix { k } => Val::Matrix(k, k, e),
    }
}
