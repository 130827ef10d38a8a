//! The generalised linear model densities: each is its base family at the linear predictor
//! `alpha + x * beta`, so the value and gradient rules are the base family's (one vectorised
//! density op, or one `Op::MvDist` for the ordinal family) and the products are ordinary ops.
//!
//! Where Stan Math's GLM keeps different constant summands under `~` than its base family
//! (`neg_binomial_2_log_glm`), the difference is a data-only constant added while tracing.

use super::trace::{cerr, eerr, TraceErr, Tracer, R};
use super::value::{Elems, Sc, Val};
use crate::dists::DistKind;
use hazel_syntax::ast::BinOp;
use hazel_syntax::Span;
use std::sync::Arc;

/// Whether `name` is a GLM density lowered here.
pub fn is_glm(name: &str) -> bool {
    matches!(
        name,
        "bernoulli_logit_glm"
            | "poisson_log_glm"
            | "normal_id_glm"
            | "binomial_logit_glm"
            | "neg_binomial_2_log_glm"
            | "ordered_logistic_glm"
            | "categorical_logit_glm"
    )
}

/// Whether `<base>_rng` is drawn by [`Tracer::glm_rng`].
pub fn has_glm_rng(base: &str) -> bool {
    base == "bernoulli_logit_glm"
}

impl<'p> Tracer<'p> {
    /// `x * beta` for a matrix (a vector of `rows(x)` predictors) or a row vector `x` (one
    /// real predictor).
    fn glm_xb(&mut self, name: &str, x: &Val, beta: &Val, span: Span) -> R<Val> {
        let be = self.to_elems(beta);
        match x {
            Val::RowVector(xe) => {
                if xe.len() != be.len() {
                    return eerr(
                        format!(
                            "{name}: Columns of x ({}) and size of beta ({}) must match in size",
                            xe.len(),
                            be.len()
                        ),
                        span,
                    );
                }
                Ok(Val::Real(self.dot_elems(xe, &be, span)?))
            }
            Val::Matrix(_, c, _) => {
                if *c != be.len() {
                    return eerr(
                        format!(
                            "{name}: Columns of x ({c}) and size of beta ({}) must match in size",
                            be.len()
                        ),
                        span,
                    );
                }
                self.matmul(x, &Val::Vector(be), span)
            }
            _ => cerr(format!("{name}: x must be a matrix or a row vector"), span),
        }
    }

    /// `alpha + x * beta`.
    fn glm_eta(&mut self, name: &str, x: &Val, alpha: &Val, beta: &Val, span: Span) -> R<Val> {
        let xb = self.glm_xb(name, x, beta, span)?;
        let alpha = match alpha {
            Val::Array(_) | Val::RowVector(_) => Val::Vector(self.to_elems(alpha)),
            a => a.clone(),
        };
        if let (Val::Vector(a), Val::Vector(e)) = (&alpha, &xb) {
            if a.len() != e.len() {
                return eerr(
                    format!(
                        "{name}: Rows of x ({}) and size of alpha ({}) must match in size",
                        e.len(),
                        a.len()
                    ),
                    span,
                );
            }
        }
        self.binop(BinOp::Add, &xb, &alpha, span)
    }

    /// A GLM density (`name` without its suffix), or `None` when `name` is not one.
    pub fn glm_density(
        &mut self,
        name: &str,
        args: &[Val],
        propto: bool,
        span: Span,
    ) -> R<Option<Sc>> {
        let need = match name {
            "normal_id_glm" | "binomial_logit_glm" | "neg_binomial_2_log_glm" => 5,
            "bernoulli_logit_glm" | "poisson_log_glm" | "categorical_logit_glm" => 4,
            "ordered_logistic_glm" => 4,
            _ => return Ok(None),
        };
        if args.len() != need {
            return cerr(format!("{name} takes {need} arguments"), span);
        }
        let total = match name {
            "bernoulli_logit_glm" | "poisson_log_glm" => {
                let eta = self.glm_eta(name, &args[1], &args[2], &args[3], span)?;
                let base = if name == "poisson_log_glm" {
                    DistKind::PoissonLog
                } else {
                    DistKind::BernoulliLogit
                };
                self.dist_sum(base, &[args[0].clone(), eta], propto, span)?
            }
            "normal_id_glm" => {
                let eta = self.glm_eta(name, &args[1], &args[2], &args[3], span)?;
                let a = [args[0].clone(), eta, args[4].clone()];
                self.dist_sum(DistKind::Normal, &a, propto, span)?
            }
            "binomial_logit_glm" => {
                // binomial_logit_glm(n | N, x, alpha, beta)
                let eta = self.glm_eta(name, &args[2], &args[3], &args[4], span)?;
                let a = [args[0].clone(), args[1].clone(), eta];
                self.dist_sum(DistKind::BinomialLogit, &a, propto, span)?
            }
            "neg_binomial_2_log_glm" => self.neg_binomial_2_log_glm(args, propto, span)?,
            "ordered_logistic_glm" => {
                // ordered_logistic_glm(y | x, beta, cuts): ordered_logistic at x * beta.
                let xb = self.glm_xb(name, &args[1], &args[2], span)?;
                let a = [args[0].clone(), xb, args[3].clone()];
                match self.mv_density("ordered_logistic", &a, propto, span)? {
                    Some(s) => s,
                    None => return cerr("ordered_logistic is not lowered", span),
                }
            }
            _ => self.categorical_logit_glm(args, propto, span)?,
        };
        Ok(Some(total))
    }

    /// neg_binomial_2_log_glm(y | x, alpha, beta, phi). Stan Math keeps `Σ lgamma(y + 1)`
    /// only without `propto` and `φ log φ` only when φ varies, where neg_binomial_2_log keeps
    /// the binomial coefficient whenever φ varies and `φ log φ` always; the difference is a
    /// constant of the data.
    fn neg_binomial_2_log_glm(&mut self, args: &[Val], propto: bool, span: Span) -> R<Sc> {
        let name = "neg_binomial_2_log_glm";
        let eta = self.glm_eta(name, &args[1], &args[2], &args[3], span)?;
        let a = [args[0].clone(), eta.clone(), args[4].clone()];
        let lp = self.dist_sum(DistKind::NegBinomial2Log, &a, propto, span)?;
        let phi_var = !args[4].is_const();
        let eta_var = !eta.is_const();
        if !propto || (!phi_var && !eta_var) {
            return Ok(lp);
        }
        let ys = self.to_elems(&args[0]);
        let ph = self.to_elems(&args[4]);
        let n = ys.len().max(ph.len()).max(self.to_elems(&eta).len());
        let at = |e: &Elems, i: usize| if e.len() == 1 { e.get(0) } else { e.get(i) };
        let mut c = 0.0;
        for i in 0..n {
            if phi_var {
                let y = self.value_of(at(&ys, i), span)?;
                c += hazel_math::special::lgamma(y + 1.0);
            } else {
                let p = self.value_of(at(&ph, i), span)?;
                if p > 0.0 && p.is_finite() {
                    c -= p * p.ln();
                }
            }
        }
        Ok(self.sc_binary(crate::kernels::BinaryFn::Add, lp, Sc::C(c)))
    }

    /// categorical_logit_glm(y | x, alpha, beta): categorical_logit of each row of
    /// `x * beta + alpha'` (a row vector `x` is shared by every outcome).
    fn categorical_logit_glm(&mut self, args: &[Val], propto: bool, span: Span) -> R<Sc> {
        let name = "categorical_logit_glm";
        let ys = match &args[0] {
            Val::Int(i) => vec![*i],
            Val::Array(xs) => xs.iter().map(|x| self.as_int(x, span)).collect::<R<_>>()?,
            _ => return cerr(format!("{name}: y must be an int or an int array"), span),
        };
        let (n_rows, k) = match &args[1] {
            Val::RowVector(e) => (1, e.len()),
            Val::Matrix(r, c, _) => (*r, *c),
            _ => return cerr(format!("{name}: x must be a matrix or a row vector"), span),
        };
        let alpha = self.to_elems(&args[2]);
        let (br, bc) = match &args[3] {
            Val::Matrix(r, c, _) => (*r, *c),
            _ => return cerr(format!("{name}: beta must be a matrix"), span),
        };
        if br != k {
            return eerr(
                format!("{name}: Columns of x ({k}) and rows of beta ({br}) must match in size"),
                span,
            );
        }
        if alpha.len() != bc {
            return eerr(
                format!(
                    "{name}: Size of alpha ({}) and columns of beta ({bc}) must match in size",
                    alpha.len()
                ),
                span,
            );
        }
        if matches!(args[1], Val::Matrix(..)) && ys.len() != n_rows {
            return eerr(
                format!(
                    "{name}: Size of y ({}) and rows of x ({n_rows}) must match in size",
                    ys.len()
                ),
                span,
            );
        }
        for (i, &y) in ys.iter().enumerate() {
            if y < 1 || y as usize > bc {
                return eerr(
                    format!("{name}: categorical outcome y[{}] is {y}, but must be in the interval [1, {bc}]", i + 1),
                    span,
                );
            }
        }
        if propto && args[1..].iter().all(|a| a.is_const()) {
            return Ok(Sc::C(0.0));
        }
        if ys.is_empty() {
            return Ok(Sc::C(0.0));
        }
        // The linear predictors, `n_rows × C` (column-major), then one row per outcome.
        let lin = self.matmul(&args[1], &args[3], span)?;
        let le = self.to_elems(&lin);
        let mut total = Sc::C(0.0);
        for r in 0..n_rows {
            let row =
                Elems::from_scalars_or_empty((0..bc).map(|c| le.get(r + c * n_rows)).collect());
            let row = self.binop(
                BinOp::Add,
                &Val::Vector(row),
                &Val::Vector(alpha.clone()),
                span,
            )?;
            let y = if n_rows == 1 {
                match &args[0] {
                    Val::Int(i) => Val::Int(*i),
                    _ => Val::array(ys.iter().map(|&y| Val::Int(y)).collect()),
                }
            } else {
                Val::Int(ys[r])
            };
            let Some(s) =
                self.multivariate_density("categorical_logit", &[y, row], propto, span)?
            else {
                return cerr("categorical_logit is not lowered", span);
            };
            total = self.sc_binary(crate::kernels::BinaryFn::Add, total, s);
        }
        Ok(total)
    }

    /// `bernoulli_logit_glm_rng(x, alpha, beta)`: one draw per row of `x`.
    pub fn glm_rng(&mut self, base: &str, args: &[Val], span: Span) -> R<Option<Val>> {
        if !has_glm_rng(base) {
            return Ok(None);
        }
        let name = format!("{base}_rng");
        if args.len() != 3 {
            return cerr(format!("{name} takes 3 arguments"), span);
        }
        let eta = self.glm_eta(&name, &args[0], &args[1], &args[2], span)?;
        let ee = self.to_elems(&eta);
        let rows = match &args[0] {
            Val::Matrix(r, _, _) => *r,
            _ => 1,
        };
        let mut etas = Vec::with_capacity(rows);
        for i in 0..rows {
            let e = if ee.len() == 1 { ee.get(0) } else { ee.get(i) };
            etas.push(self.value_of(e, span)?);
        }
        let Some(draw) = hazel_math::dist::distribution("bernoulli_logit").and_then(|d| d.rng)
        else {
            return cerr(format!("{name} needs bernoulli_logit_rng"), span);
        };
        let rng = self.rng.as_mut().expect("checked by caller");
        let mut out = Vec::with_capacity(rows);
        for e in etas {
            let v = draw(&[e], rng).map_err(|m| {
                TraceErr::Eval(
                    hazel_density::EvalError::domain(format!("{name}: {}", m.message)),
                    span,
                )
            })?;
            out.push(Val::Int(v as i64));
        }
        Ok(Some(Val::Array(Arc::new(out))))
    }
}
