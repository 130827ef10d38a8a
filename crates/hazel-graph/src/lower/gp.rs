//! Gaussian-process covariance functions (`gp_exp_quad_cov` (`cov_exp_quad`, removed in
//! Stan 2.33, is rejected by the checker), `gp_exponential_cov`, `gp_matern32_cov`, `gp_matern52_cov`,
//! `gp_periodic_cov`, `gp_dot_prod_cov`), every argument form: one or two arrays of real or
//! vector points, a scalar length scale or one per dimension (ARD).
//!
//! Each is a composition of existing elementwise ops, so values and gradients come from their
//! rules and the model stays static. The pairwise part is computed once per pair (below the
//! diagonal for one array, every pair for two): for data points the squared distances are
//! constants, and with per-dimension length scales they are one constant-matrix × vector
//! product `Δ² · (1/ρ²)` — the distances of data points never become graph nodes.

use super::trace::{cerr, eerr, Tracer, R};
use super::value::{Elems, Sc, Val};
use crate::kernels::{BinaryFn, UnaryFn};
use crate::tape::CheckKind;
use hazel_syntax::Span;
use std::sync::Arc;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Kernel {
    ExpQuad,
    Exponential,
    Matern32,
    Matern52,
    Periodic,
    DotProd,
}

impl Kernel {
    fn by_name(name: &str) -> Option<Kernel> {
        Some(match name {
            "gp_exp_quad_cov" => Kernel::ExpQuad,
            "gp_exponential_cov" => Kernel::Exponential,
            "gp_matern32_cov" => Kernel::Matern32,
            "gp_matern52_cov" => Kernel::Matern52,
            "gp_periodic_cov" => Kernel::Periodic,
            "gp_dot_prod_cov" => Kernel::DotProd,
            _ => return None,
        })
    }

    /// Number of hyperparameters after the points.
    fn n_hyper(self) -> usize {
        match self {
            Kernel::DotProd => 1,
            Kernel::Periodic => 3,
            _ => 2,
        }
    }
}

/// Whether `name` is one of the GP covariance functions lowered here.
pub(crate) fn is_gp_cov(name: &str) -> bool {
    Kernel::by_name(name).is_some()
}

impl<'p> Tracer<'p> {
    /// The covariance matrix of a GP covariance function call (arguments as checked).
    pub(crate) fn gp_cov(&mut self, name: &str, args: &[Val], span: Span) -> R<Val> {
        let Some(kernel) = Kernel::by_name(name) else {
            return cerr(format!("function '{name}' is not supported"), span);
        };
        let two = matches!(args.get(1), Some(Val::Array(_)));
        let n_points = if two { 2 } else { 1 };
        if args.len() != n_points + kernel.n_hyper() {
            return cerr(format!("{name}: unexpected number of arguments"), span);
        }
        let points = |v: &Val, tr: &Self| -> R<Vec<Elems>> {
            match v {
                Val::Array(items) => Ok(items.iter().map(|x| tr.to_elems(x)).collect()),
                _ => cerr(format!("{name}: points must be an array"), span),
            }
        };
        let x1 = points(&args[0], self)?;
        let x2 = if two {
            points(&args[1], self)?
        } else {
            Vec::new()
        };
        let dims = x1
            .iter()
            .chain(x2.iter())
            .map(Elems::len)
            .collect::<Vec<_>>();
        if let Some(&d0) = dims.first() {
            if let Some(&d) = dims.iter().find(|&&d| d != d0) {
                return eerr(
                    format!("{name}: the points have different dimensions ({d0} and {d})"),
                    span,
                );
            }
        }
        let hyper = &args[n_points..];
        let magnitude = self.gp_scalar(name, &hyper[0], span)?;
        // Stan: the dot-product kernel's sigma may be 0; every other hyperparameter is positive.
        self.gp_check_positive(
            name,
            "magnitude",
            magnitude,
            kernel == Kernel::DotProd,
            span,
        )?;
        let m2 = self.sc_unary(UnaryFn::Square, magnitude);
        let (n1, n2) = (x1.len(), if two { x2.len() } else { x1.len() });
        // Pairs (i, j): every pair for two arrays, i > j for one (the matrix is symmetric).
        let pairs: Vec<(usize, usize)> = if two {
            (0..n2).flat_map(|j| (0..n1).map(move |i| (i, j))).collect()
        } else {
            (0..n1).flat_map(|i| (0..i).map(move |j| (i, j))).collect()
        };
        let xb: &[Elems] = if two { &x2 } else { &x1 };

        let (pair_values, diagonal) = if kernel == Kernel::DotProd {
            let mut dots = Vec::with_capacity(pairs.len());
            for &(i, j) in &pairs {
                let d = self.gp_dot(&x1[i], &xb[j]);
                dots.push(d);
            }
            let mut diag = Vec::new();
            if !two {
                for x in &x1 {
                    let d = self.gp_dot(x, x);
                    diag.push(self.sc_binary(BinaryFn::Add, m2, d));
                }
            }
            let de = Elems::from_scalars_or_empty(dots);
            let me = Elems::from_scalars(vec![m2]);
            (self.elems_binary(BinaryFn::Add, &de, &me), diag)
        } else {
            let length = &hyper[1];
            let ard = matches!(length, Val::Array(_));
            // Squared distances, already divided by the squared length scales when `ard`.
            let d2 = if ard {
                let ls: Vec<Sc> = match length {
                    Val::Array(xs) => xs
                        .iter()
                        .map(|x| self.gp_scalar(name, x, span))
                        .collect::<R<_>>()?,
                    _ => unreachable!(),
                };
                let d = dims.first().copied().unwrap_or(ls.len());
                if ls.len() != d {
                    return eerr(
                        format!(
                            "{name}: the number of length scales ({}) must match the dimension of the points ({d})",
                            ls.len()
                        ),
                        span,
                    );
                }
                for &l in &ls {
                    self.gp_check_positive(name, "length scale", l, false, span)?;
                }
                self.gp_scaled_squared_distances(&x1, xb, &pairs, &ls)
            } else {
                let mut d2 = Vec::with_capacity(pairs.len());
                for &(i, j) in &pairs {
                    let diff = self.elems_binary(BinaryFn::Sub, &x1[i], &xb[j]);
                    d2.push(self.gp_dot(&diff, &diff));
                }
                Elems::from_scalars_or_empty(d2)
            };
            // 1/ρ for a scalar length scale; ARD distances are already scaled.
            let inv_length = if ard {
                Sc::C(1.0)
            } else {
                let l = self.gp_scalar(name, length, span)?;
                self.gp_check_positive(name, "length scale", l, false, span)?;
                self.sc_unary(UnaryFn::Inv, l)
            };
            let period = if kernel == Kernel::Periodic {
                let p = self.gp_scalar(name, &hyper[2], span)?;
                self.gp_check_positive(name, "period", p, false, span)?;
                Some(p)
            } else {
                None
            };
            let k = self.gp_stationary(kernel, &d2, inv_length, period);
            let ke = Elems::from_scalars(vec![m2]);
            let diag = if two { Vec::new() } else { vec![m2; n1] };
            (self.elems_binary(BinaryFn::Mul, &k, &ke), diag)
        };

        let mut sc = vec![Sc::C(0.0); n1 * n2];
        for (p, &(i, j)) in pairs.iter().enumerate() {
            let v = pair_values.get(p);
            sc[i + j * n1] = v;
            if !two {
                sc[j + i * n1] = v;
            }
        }
        for (i, &d) in diagonal.iter().enumerate() {
            sc[i + i * n1] = d;
        }
        Ok(Val::Matrix(n1, n2, Elems::from_scalars_or_empty(sc)))
    }

    fn gp_scalar(&self, name: &str, v: &Val, span: Span) -> R<Sc> {
        match v {
            Val::Int(i) => Ok(Sc::C(*i as f64)),
            Val::Real(s) => Ok(*s),
            _ => cerr(
                format!("{name}: expected a scalar, found {}", v.type_name()),
                span,
            ),
        }
    }

    /// Stan's `check_positive` (or `check_nonnegative` when `zero_ok`) on a hyperparameter:
    /// now for a constant, at every evaluation for a parameter.
    fn gp_check_positive(
        &mut self,
        name: &str,
        what: &str,
        s: Sc,
        zero_ok: bool,
        span: Span,
    ) -> R<()> {
        let must = if zero_ok { "non-negative" } else { "positive" };
        let message = format!("{name}: {what} must be {must}");
        match s {
            Sc::C(c) => {
                let ok = if zero_ok { c >= 0.0 } else { c > 0.0 };
                if !ok {
                    return eerr(format!("{name}: {what} is {c}, but must be {must}!"), span);
                }
            }
            Sc::V(o) => {
                let x = crate::tape::Arg::var(o as usize, 1);
                let bound = self
                    .b
                    .scalar_const(if zero_ok { 0.0 } else { f64::MIN_POSITIVE });
                self.b.check(CheckKind::Lower, x, bound, message);
            }
        }
        Ok(())
    }

    fn gp_dot(&mut self, a: &Elems, b: &Elems) -> Sc {
        if let (Some(x), Some(y)) = (a.consts(), b.consts()) {
            return Sc::C(crate::kernels::dot(crate::simd::Isa::Baseline, &x, &y));
        }
        let (xa, ya) = (self.elems_arg(a), self.elems_arg(b));
        Sc::V(self.b.dot(xa, ya).off)
    }

    /// Σ_d (x_{i,d} − x_{j,d})² / ρ_d² for every pair. Data points give a constant matrix of
    /// squared differences times the vector 1/ρ² (one op); parameter points are divided by
    /// ρ first.
    fn gp_scaled_squared_distances(
        &mut self,
        xa: &[Elems],
        xb: &[Elems],
        pairs: &[(usize, usize)],
        ls: &[Sc],
    ) -> Elems {
        let d = ls.len();
        let data: Option<Vec<Vec<f64>>> = pairs
            .iter()
            .map(|&(i, j)| {
                let (a, b) = (xa[i].consts()?, xb[j].consts()?);
                Some(a.iter().zip(&b).map(|(u, v)| (u - v) * (u - v)).collect())
            })
            .collect();
        let inv_sq: Vec<Sc> = ls
            .iter()
            .map(|&l| {
                let s = self.sc_unary(UnaryFn::Square, l);
                self.sc_unary(UnaryFn::Inv, s)
            })
            .collect();
        if let Some(rows) = data {
            let p = rows.len();
            if p == 0 {
                return Elems::C(Arc::new(vec![]));
            }
            // Column-major P × D.
            let mut m = vec![0.0; p * d];
            for (r, row) in rows.iter().enumerate() {
                for (c, v) in row.iter().enumerate() {
                    m[r + c * p] = *v;
                }
            }
            let w = Elems::from_scalars(inv_sq);
            let out = match w.consts() {
                Some(wc) => Elems::C(Arc::new(
                    (0..p)
                        .map(|r| (0..d).map(|c| m[r + c * p] * wc[c]).sum())
                        .collect(),
                )),
                None => {
                    let ma = self.b.konst(&m);
                    let wa = self.elems_arg(&w);
                    Elems::V(self.b.matvec(ma, wa, p, d))
                }
            };
            // Coinciding points keep a constant 0 (no √0 in the gradient of later ops).
            return Elems::from_scalars_or_empty(
                (0..p)
                    .map(|r| {
                        if rows[r].iter().all(|v| *v == 0.0) {
                            Sc::C(0.0)
                        } else {
                            out.get(r)
                        }
                    })
                    .collect(),
            );
        }
        let scale = Elems::from_scalars(ls.to_vec());
        let scaled = |xs: &[Elems], tr: &mut Self| -> Vec<Elems> {
            xs.iter()
                .map(|x| tr.elems_binary(BinaryFn::Div, x, &scale))
                .collect()
        };
        let sa = scaled(xa, self);
        let sb = if std::ptr::eq(xa, xb) {
            sa.clone()
        } else {
            scaled(xb, self)
        };
        let mut out = Vec::with_capacity(pairs.len());
        for &(i, j) in pairs {
            let diff = self.elems_binary(BinaryFn::Sub, &sa[i], &sb[j]);
            out.push(self.gp_dot(&diff, &diff));
        }
        Elems::from_scalars_or_empty(out)
    }

    /// The correlation part of a stationary kernel at squared distances `d2` (scaled by
    /// `inv_length`, which is 1 when they already are).
    fn gp_stationary(
        &mut self,
        kernel: Kernel,
        d2: &Elems,
        inv_length: Sc,
        period: Option<Sc>,
    ) -> Elems {
        if d2.is_empty() {
            return Elems::C(Arc::new(vec![]));
        }
        let il = Elems::from_scalars(vec![inv_length]);
        match kernel {
            Kernel::ExpQuad => {
                // exp(−d² / (2ρ²))
                let il2 = self.sc_unary(UnaryFn::Square, inv_length);
                let f = self.sc_binary(BinaryFn::Mul, il2, Sc::C(-0.5));
                let fe = Elems::from_scalars(vec![f]);
                let e = self.elems_binary(BinaryFn::Mul, d2, &fe);
                self.elems_unary(UnaryFn::Exp, &e)
            }
            Kernel::Periodic => {
                // exp(−2 sin²(π d / p) / ρ²)
                let d = self.elems_unary(UnaryFn::Sqrt, d2);
                let p = period.expect("periodic kernel has a period");
                let w = self.sc_binary(BinaryFn::Div, Sc::C(std::f64::consts::PI), p);
                let we = Elems::from_scalars(vec![w]);
                let a = self.elems_binary(BinaryFn::Mul, &d, &we);
                let s = self.elems_unary(UnaryFn::Sin, &a);
                let s2 = self.elems_unary(UnaryFn::Square, &s);
                let il2 = self.sc_unary(UnaryFn::Square, inv_length);
                let f = self.sc_binary(BinaryFn::Mul, il2, Sc::C(-2.0));
                let fe = Elems::from_scalars(vec![f]);
                let e = self.elems_binary(BinaryFn::Mul, &s2, &fe);
                self.elems_unary(UnaryFn::Exp, &e)
            }
            Kernel::Exponential | Kernel::Matern32 | Kernel::Matern52 => {
                let d = self.elems_unary(UnaryFn::Sqrt, d2);
                let r = self.elems_binary(BinaryFn::Mul, &d, &il);
                let c = match kernel {
                    Kernel::Exponential => 1.0,
                    Kernel::Matern32 => 3f64.sqrt(),
                    _ => 5f64.sqrt(),
                };
                let ce = Elems::C(Arc::new(vec![-c]));
                let cr = self.elems_binary(BinaryFn::Mul, &r, &ce);
                let e = self.elems_unary(UnaryFn::Exp, &cr);
                if kernel == Kernel::Exponential {
                    return e;
                }
                // 1 + c r (+ 5 r² / 3 for 5/2)
                let one = Elems::C(Arc::new(vec![1.0]));
                let pos = Elems::C(Arc::new(vec![c]));
                let crp = self.elems_binary(BinaryFn::Mul, &r, &pos);
                let mut poly = self.elems_binary(BinaryFn::Add, &crp, &one);
                if kernel == Kernel::Matern52 {
                    let r2 = self.elems_unary(UnaryFn::Square, &r);
                    let f = Elems::C(Arc::new(vec![5.0 / 3.0]));
                    let t = self.elems_binary(BinaryFn::Mul, &r2, &f);
                    poly = self.elems_binary(BinaryFn::Add, &poly, &t);
                }
                self.elems_binary(BinaryFn::Mul, &poly, &e)
            }
            Kernel::DotProd => unreachable!("not stationary"),
        }
    }
}
