//! Lowering of Stan's matrix algebra: inverses, determinants, solves (and the `/` and `\`
//! operators on matrices), traces, quadratic forms, norms and matrix powers.
//!
//! Everything is constant-folded through the same `hazel_math::linalg` function when its
//! arguments are data. Solves and determinants of parameters become one [`Op::Linalg`]
//! (`crate::linalg_kernels`); the rest are compositions of existing ops (products, gathers,
//! sums, triangular solves) whose rules are already tested. Size errors name the function,
//! with Stan's wording.
//!
//! [`Op::Linalg`]: crate::tape::Op::Linalg

use super::trace::{cerr, eerr, TraceErr, Tracer, R};
use super::value::{Elems, Sc, Val};
use crate::kernels::{BinaryFn, UnaryFn};
use crate::tape::{CheckKind, LinalgFn};
use hazel_math::linalg::{self as la, Factor};
use hazel_syntax::Span;
use std::sync::Arc;

/// Stan's `CONSTRAINT_TOLERANCE` for the symmetry checks made at every evaluation.
const SYMMETRY_TOLERANCE: f64 = 1e-8;

fn math_err(e: hazel_math::dist::MathError, span: Span) -> TraceErr {
    TraceErr::Eval(hazel_density::EvalError::domain(e.message), span)
}

fn identity(n: usize) -> Vec<f64> {
    let mut v = vec![0.0; n * n];
    for i in 0..n {
        v[i + i * n] = 1.0;
    }
    v
}

/// A matrix operand: rows, columns, elements, and whether it was a vector / row vector.
struct Mat {
    r: usize,
    c: usize,
    e: Elems,
    shape: Shape,
}

#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Matrix,
    Vector,
    RowVector,
}

impl Mat {
    fn val(r: usize, c: usize, e: Elems, shape: Shape) -> Val {
        match shape {
            Shape::Matrix => Val::Matrix(r, c, e),
            Shape::Vector => Val::Vector(e),
            Shape::RowVector => Val::RowVector(e),
        }
    }
}

impl<'p> Tracer<'p> {
    /// One arm of `Tracer::call` for every function of this module.
    pub(super) fn lower_linalg(&mut self, name: &str, args: &[Val], span: Span) -> R<Val> {
        let arity = match name {
            "trace_gen_quad_form" | "scale_matrix_exp_multiply" => 3,
            "mdivide_left"
            | "mdivide_right"
            | "mdivide_left_spd"
            | "mdivide_right_spd"
            | "mdivide_right_tri_low"
            | "quad_form"
            | "quad_form_sym"
            | "trace_quad_form"
            | "matrix_power"
            | "matrix_exp_multiply"
            | "quad_form_diag"
            | "rows_dot_product"
            | "columns_dot_product" => 2,
            _ => 1,
        };
        if args.len() != arity {
            return cerr(
                format!("{name} expects {arity} arguments, found {}", args.len()),
                span,
            );
        }
        match name {
            "inverse" => self.lower_inverse(Factor::Lu, &args[0], span),
            "inverse_spd" => self.lower_inverse(Factor::Spd, &args[0], span),
            "chol2inv" => self.lower_chol2inv(&args[0], span),
            "determinant" | "log_determinant" | "log_determinant_spd" => {
                self.lower_determinant(name, &args[0], span)
            }
            "mdivide_left" => self.lower_mdivide_left(name, Factor::Lu, args, span),
            "mdivide_left_spd" => self.lower_mdivide_left(name, Factor::Spd, args, span),
            "mdivide_right" => self.lower_mdivide_right(name, Some(Factor::Lu), args, span),
            "mdivide_right_spd" => self.lower_mdivide_right(name, Some(Factor::Spd), args, span),
            "mdivide_right_tri_low" => self.lower_mdivide_right(name, None, args, span),
            // Stan's trace is Eigen's: the sum of the main diagonal, also of a non-square matrix.
            "trace" => {
                let a = self.mat(name, &args[0], span)?;
                self.lower_trace(&a, span)
            }
            "diagonal" => {
                let a = self.mat(name, &args[0], span)?;
                let idx: Vec<usize> = (0..a.r.min(a.c)).map(|i| i + i * a.r).collect();
                Ok(Val::Vector(a.e.select(&idx)))
            }
            "quad_form" | "quad_form_sym" | "trace_quad_form" => {
                self.lower_quad_form(name, &args[0], &args[1], span)
            }
            "trace_gen_quad_form" => self.lower_trace_gen_quad_form(args, span),
            "rows_dot_product" | "columns_dot_product" | "rows_dot_self" | "columns_dot_self" => {
                self.lower_dot_rows_columns(name, args, span)
            }
            "generalized_inverse" => self.lower_generalized_inverse(&args[0], span),
            // diag(v) M diag(v), with Stan's checks.
            "quad_form_diag" => {
                let m = self.square(name, "mat", &args[0], span)?;
                let v = self.to_elems(&args[1]);
                if v.len() != m.r {
                    return eerr(
                        format!(
                            "{name}: rows of mat ({}) and size of vec ({}) must match in size",
                            m.r,
                            v.len()
                        ),
                        span,
                    );
                }
                let pre = self.call(
                    "diag_pre_multiply",
                    vec![args[1].clone(), args[0].clone()],
                    span,
                )?;
                self.call("diag_post_multiply", vec![pre, args[1].clone()], span)
            }
            "norm1" => {
                let e = self.to_elems(&args[0]);
                let abs = self.elems_unary(UnaryFn::Abs, &e);
                self.call("sum", vec![Val::Vector(abs)], span)
            }
            "norm2" => {
                let e = self.to_elems(&args[0]);
                let v = Val::Vector(e);
                let ss = self.call("dot_self", vec![v], span)?;
                self.map_unary(UnaryFn::Sqrt, &ss, span)
            }
            "matrix_power" => self.lower_matrix_power(&args[0], &args[1], span),
            "eigenvalues_sym" | "eigenvectors_sym" | "matrix_exp" => {
                self.lower_square_fn(name, &args[0], span)
            }
            "singular_values" | "svd_U" | "svd_V" => self.lower_svd(name, &args[0], span),
            "svd" => {
                let u = self.lower_svd("svd_U", &args[0], span)?;
                let s = self.lower_svd("singular_values", &args[0], span)?;
                let v = self.lower_svd("svd_V", &args[0], span)?;
                Ok(Val::Tuple(Arc::new(vec![u, s, v])))
            }
            "qr_thin_Q" | "qr_thin_R" | "qr_Q" | "qr_R" => self.lower_qr(name, &args[0], span),
            // matrix_exp(A) * B and matrix_exp(t * A) * B.
            "matrix_exp_multiply" | "scale_matrix_exp_multiply" => {
                let (a, b) = (&args[args.len() - 2], &args[args.len() - 1]);
                let am = self.square(name, "A", a, span)?;
                let bm = self.mat(name, b, span)?;
                Self::multiplicable(name, ("A", am.c), ("B", bm.r), span)?;
                let a = if name == "scale_matrix_exp_multiply" {
                    self.map_binary(BinaryFn::Mul, &args[0], a, span)?
                } else {
                    a.clone()
                };
                let e = self.lower_square_fn("matrix_exp", &a, span)?;
                self.matmul(&e, b, span)
            }
            "qr_thin" | "qr" => {
                let (qn, rn) = if name == "qr" {
                    ("qr_Q", "qr_R")
                } else {
                    ("qr_thin_Q", "qr_thin_R")
                };
                let q = self.lower_qr(qn, &args[0], span)?;
                let r = self.lower_qr(rn, &args[0], span)?;
                Ok(Val::Tuple(Arc::new(vec![q, r])))
            }
            "eigendecompose_sym" => {
                let v = self.lower_square_fn("eigenvectors_sym", &args[0], span)?;
                let l = self.lower_square_fn("eigenvalues_sym", &args[0], span)?;
                Ok(Val::Tuple(Arc::new(vec![v, l])))
            }
            _ => cerr(format!("function '{name}' is not supported"), span),
        }
    }

    fn mat(&self, function: &str, v: &Val, span: Span) -> R<Mat> {
        Ok(match v {
            Val::Matrix(r, c, e) => Mat {
                r: *r,
                c: *c,
                e: e.clone(),
                shape: Shape::Matrix,
            },
            Val::Vector(e) => Mat {
                r: e.len(),
                c: 1,
                e: e.clone(),
                shape: Shape::Vector,
            },
            Val::RowVector(e) => Mat {
                r: 1,
                c: e.len(),
                e: e.clone(),
                shape: Shape::RowVector,
            },
            _ => {
                return cerr(
                    format!("{function}: expected a matrix, found {}", v.type_name()),
                    span,
                )
            }
        })
    }

    /// A square matrix operand (Stan's `check_square`).
    fn square(&self, function: &str, name: &str, v: &Val, span: Span) -> R<Mat> {
        let m = self.mat(function, v, span)?;
        if m.shape != Shape::Matrix {
            return cerr(format!("{function}: {name} must be a matrix"), span);
        }
        if m.r != m.c {
            return eerr(
                format!(
                    "{function}: Expecting a square matrix; rows of {name} ({}) and columns of {name} ({}) must match in size",
                    m.r, m.c
                ),
                span,
            );
        }
        Ok(m)
    }

    /// Stan's `check_multiplicable`: columns of the first operand equal rows of the second.
    fn multiplicable(
        function: &str,
        (n1, c1): (&str, usize),
        (n2, r2): (&str, usize),
        span: Span,
    ) -> R<()> {
        if c1 != r2 {
            return eerr(
                format!(
                    "{function}: Columns of {n1} ({c1}) and Rows of {n2} ({r2}) must match in size"
                ),
                span,
            );
        }
        Ok(())
    }

    /// Fails the evaluation when the square matrix `a` is not symmetric (Stan's
    /// `check_symmetric`, absolute tolerance 1e-8): at build time for data, as checks on
    /// every evaluation for parameters.
    fn check_symmetric_val(&mut self, function: &str, name: &str, a: &Mat, span: Span) -> R<()> {
        let n = a.r;
        if let Some(v) = a.e.consts() {
            return la::check_symmetric(function, name, &v, n).map_err(|e| math_err(e, span));
        }
        let (mut up, mut low) = (Vec::new(), Vec::new());
        for j in 0..n {
            for i in (j + 1)..n {
                let (x, y) = (a.e.get(i + j * n), a.e.get(j + i * n));
                if x != y {
                    low.push(x);
                    up.push(y);
                }
            }
        }
        if up.is_empty() {
            return Ok(());
        }
        let d = self.elems_binary(
            BinaryFn::Sub,
            &Elems::from_scalars(low),
            &Elems::from_scalars(up),
        );
        let x = self.elems_arg(&d);
        let message = format!("{function}: {name} is not symmetric");
        let lo = self.b.scalar_const(-SYMMETRY_TOLERANCE);
        self.b.check(CheckKind::Lower, x, lo, message.clone());
        let hi = self.b.scalar_const(SYMMETRY_TOLERANCE);
        self.b.check(CheckKind::Upper, x, hi, message);
        Ok(())
    }

    fn lower_inverse(&mut self, kind: Factor, m: &Val, span: Span) -> R<Val> {
        let function = match kind {
            Factor::Lu => "inverse",
            Factor::Spd => "inverse_spd",
        };
        let a = self.square(function, "m", m, span)?;
        let n = a.r;
        if let Some(v) = a.e.consts() {
            // The op's value rule: factorise, solve against I (symmetrised for inverse_spd).
            let mut f = vec![0.0; la::factor_len(n)];
            kind.factor(function, "m", &v, n, &mut f)
                .map_err(|e| math_err(e, span))?;
            let mut out = identity(n);
            kind.solve(&f, n, &mut out, n);
            if kind == Factor::Spd {
                for j in 0..n {
                    for i in (j + 1)..n {
                        let s = 0.5 * (out[i + j * n] + out[j + i * n]);
                        out[i + j * n] = s;
                        out[j + i * n] = s;
                    }
                }
            }
            return Ok(Val::Matrix(n, n, Elems::C(Arc::new(out))));
        }
        // inverse_spd's result is symmetrised as Stan does.
        let x = self.linalg_op(
            LinalgFn::Inverse(kind),
            &a.e,
            &Elems::C(Arc::new(vec![])),
            n,
            n,
        );
        let x = Val::Matrix(n, n, x);
        if kind == Factor::Spd {
            let t = self.transpose(&x, span)?;
            let s = self.map_binary(BinaryFn::Add, &x, &t, span)?;
            return self.map_binary(BinaryFn::Mul, &s, &Val::real(0.5), span);
        }
        Ok(x)
    }

    fn linalg_op(&mut self, f: LinalgFn, a: &Elems, b: &Elems, n: usize, m: usize) -> Elems {
        let aa = self.elems_arg(a);
        let ba = self.elems_arg(b);
        Elems::V(self.b.linalg(f, aa, ba, n, m))
    }

    /// `chol2inv(L) = (L Lᵀ)⁻¹`, as Stan computes it: `crossprod(L \ I)`.
    fn lower_chol2inv(&mut self, m: &Val, span: Span) -> R<Val> {
        let l = self.square("chol2inv", "L", m, span)?;
        let n = l.r;
        let mut upper_vars = Vec::new();
        for j in 0..n {
            for i in 0..j {
                match l.e.get(i + j * n) {
                    Sc::C(0.0) => {}
                    Sc::C(v) => {
                        return eerr(
                            format!(
                                "chol2inv: L is not lower triangular; L[{},{}]={v}",
                                i + 1,
                                j + 1
                            ),
                            span,
                        )
                    }
                    s => upper_vars.push(s),
                }
            }
        }
        if !upper_vars.is_empty() {
            let x = self.elems_arg(&Elems::from_scalars(upper_vars));
            let zero = self.b.scalar_const(0.0);
            let message = "chol2inv: L is not lower triangular".to_string();
            self.b.check(CheckKind::Lower, x, zero, message.clone());
            self.b.check(CheckKind::Upper, x, zero, message);
        }
        let id = Val::Matrix(n, n, Elems::C(Arc::new(identity(n))));
        let linv = self.call("mdivide_left_tri_low", vec![m.clone(), id], span)?;
        self.call("crossprod", vec![linv], span)
    }

    fn lower_determinant(&mut self, name: &str, m: &Val, span: Span) -> R<Val> {
        let a = self.square(name, "m", m, span)?;
        let n = a.r;
        if let Some(v) = a.e.consts() {
            let mut f = vec![0.0; la::factor_len(n)];
            let d = match name {
                "determinant" => la::determinant(&v, n, &mut f),
                // Stan returns −∞ for a singular matrix.
                "log_determinant" => {
                    la::log_abs_determinant(&v, n, &mut f).unwrap_or(f64::NEG_INFINITY)
                }
                _ => la::log_determinant_spd(&v, n, &mut f).map_err(|e| math_err(e, span))?,
            };
            return Ok(Val::real(d));
        }
        let f = match name {
            "determinant" => LinalgFn::Determinant,
            "log_determinant" => LinalgFn::LogDeterminant,
            _ => LinalgFn::LogDeterminantSpd,
        };
        let out = self.linalg_op(f, &a.e, &Elems::C(Arc::new(vec![])), n, 1);
        Ok(Val::Real(out.get(0)))
    }

    /// `mdivide_left(A, b)` / `A \ b` and `mdivide_left_spd(A, b)`.
    fn lower_mdivide_left(&mut self, name: &str, kind: Factor, args: &[Val], span: Span) -> R<Val> {
        let a = self.square(name, "A", &args[0], span)?;
        let b = self.mat(name, &args[1], span)?;
        if b.shape == Shape::RowVector {
            return cerr(format!("{name}: b must be a vector or matrix"), span);
        }
        Self::multiplicable(name, ("A", a.c), ("b", b.r), span)?;
        let (n, m) = (a.r, b.c);
        let out = if let (Some(av), Some(bv)) = (a.e.consts(), b.e.consts()) {
            let mut out = vec![0.0; n * m];
            let mut f = vec![0.0; la::factor_len(n)];
            la::mdivide_left(kind, &av, n, &bv, m, &mut out, &mut f)
                .map_err(|e| math_err(e, span))?;
            Elems::C(Arc::new(out))
        } else {
            self.linalg_op(LinalgFn::MdivideLeft(kind), &a.e, &b.e, n, m)
        };
        Ok(Mat::val(n, m, out, b.shape))
    }

    /// `mdivide_right(b, A)` / `b / A`, `mdivide_right_spd(b, A)` and (`kind = None`)
    /// `mdivide_right_tri_low(b, L)`.
    fn lower_mdivide_right(
        &mut self,
        name: &str,
        kind: Option<Factor>,
        args: &[Val],
        span: Span,
    ) -> R<Val> {
        let b = self.mat(name, &args[0], span)?;
        let a = self.square(name, "A", &args[1], span)?;
        if b.shape == Shape::Vector {
            return cerr(format!("{name}: b must be a row vector or matrix"), span);
        }
        Self::multiplicable(name, ("b", b.c), ("A", a.r), span)?;
        let (m, n) = (b.r, a.r);
        let out = if let (Some(av), Some(bv)) = (a.e.consts(), b.e.consts()) {
            let mut out = vec![0.0; m * n];
            match kind {
                Some(k) => {
                    let mut f = vec![0.0; la::factor_len(n)];
                    let mut tmp = vec![0.0; n];
                    la::mdivide_right(k, &bv, m, &av, n, &mut out, &mut f, &mut tmp)
                        .map_err(|e| math_err(e, span))?;
                }
                None => la::mdivide_right_tri_low(&bv, m, &av, n, &mut out),
            }
            Elems::C(Arc::new(out))
        } else {
            let f = kind.map_or(LinalgFn::MdivideRightTriLow, LinalgFn::MdivideRight);
            self.linalg_op(f, &b.e, &a.e, n, m)
        };
        Ok(Mat::val(m, n, out, b.shape))
    }

    fn lower_trace(&mut self, a: &Mat, span: Span) -> R<Val> {
        let idx: Vec<usize> = (0..a.r.min(a.c)).map(|i| i + i * a.r).collect();
        let d = a.e.select(&idx);
        if d.is_empty() {
            return Ok(Val::real(0.0));
        }
        self.call("sum", vec![Val::Vector(d)], span)
    }

    /// `quad_form(A, B) = Bᵀ A B`, `quad_form_sym` (A checked symmetric, the result
    /// symmetrised) and `trace_quad_form(A, B) = tr(Bᵀ A B)`; a vector `b` gives a real.
    fn lower_quad_form(&mut self, name: &str, a: &Val, b: &Val, span: Span) -> R<Val> {
        let am = self.square(name, "A", a, span)?;
        let bm = self.mat(name, b, span)?;
        if bm.shape == Shape::RowVector {
            return cerr(format!("{name}: B must be a vector or matrix"), span);
        }
        Self::multiplicable(name, ("A", am.c), ("B", bm.r), span)?;
        if name == "quad_form_sym" {
            self.check_symmetric_val(name, "A", &am, span)?;
        }
        let ab = self.matmul(a, b, span)?;
        if bm.shape == Shape::Vector || name == "trace_quad_form" {
            // bᵀ A b, or tr(Bᵀ A B) = Σ B ⊙ (A B).
            let x = Val::Vector(bm.e.clone());
            let y = Val::Vector(self.to_elems(&ab));
            return self.call("dot_product", vec![x, y], span);
        }
        let bt = self.transpose(b, span)?;
        let q = self.matmul(&bt, &ab, span)?;
        if name == "quad_form_sym" {
            let qt = self.transpose(&q, span)?;
            let s = self.map_binary(BinaryFn::Add, &q, &qt, span)?;
            return self.map_binary(BinaryFn::Mul, &s, &Val::real(0.5), span);
        }
        Ok(q)
    }

    /// `trace_gen_quad_form(D, A, B) = tr(D Bᵀ A B) = Σ Dᵀ ⊙ (Bᵀ A B)`.
    fn lower_trace_gen_quad_form(&mut self, args: &[Val], span: Span) -> R<Val> {
        let name = "trace_gen_quad_form";
        let d = self.square(name, "D", &args[0], span)?;
        let a = self.square(name, "A", &args[1], span)?;
        let b = self.mat(name, &args[2], span)?;
        Self::multiplicable(name, ("A", a.c), ("B", b.r), span)?;
        Self::multiplicable(name, ("B", b.c), ("D", d.r), span)?;
        let ab = self.matmul(&args[1], &args[2], span)?;
        let bt = self.transpose(&args[2], span)?;
        let q = self.matmul(&bt, &ab, span)?;
        let dt = self.transpose(&args[0], span)?;
        let x = Val::Vector(self.to_elems(&dt));
        let y = Val::Vector(self.to_elems(&q));
        self.call("dot_product", vec![x, y], span)
    }

    /// `eigenvalues_sym`, `eigenvectors_sym` and `matrix_exp` of a square matrix.
    fn lower_square_fn(&mut self, name: &str, m: &Val, span: Span) -> R<Val> {
        let a = self.square(name, "m", m, span)?;
        let n = a.r;
        let out = if let Some(v) = a.e.consts() {
            let mut out = vec![0.0; n * n];
            if name == "matrix_exp" {
                let mut ws = vec![0.0; la::matrix_exp_workspace_len(n)];
                la::matrix_exp(&v, n, &mut out, &mut ws)
            } else {
                let mut l = vec![0.0; n];
                let mut ws = vec![0.0; n * n];
                let r = la::eigen_sym(name, &v, n, &mut l, &mut out, &mut ws);
                if name == "eigenvalues_sym" {
                    out = l;
                }
                r
            }
            .map_err(|e| math_err(e, span))?;
            Elems::C(Arc::new(out))
        } else {
            let f = match name {
                "eigenvalues_sym" => LinalgFn::EigenvaluesSym,
                "eigenvectors_sym" => LinalgFn::EigenvectorsSym,
                _ => LinalgFn::MatrixExp,
            };
            self.linalg_op(f, &a.e, &Elems::C(Arc::new(vec![])), n, n)
        };
        Ok(if name == "eigenvalues_sym" {
            Val::Vector(out)
        } else {
            Val::Matrix(n, n, out)
        })
    }

    /// `singular_values`, `svd_U`, `svd_V` of any matrix (thin: `k = min(rows, cols)`).
    fn lower_svd(&mut self, name: &str, m: &Val, span: Span) -> R<Val> {
        let a = self.mat(name, m, span)?;
        if a.shape != Shape::Matrix {
            return cerr(format!("{name}: m must be a matrix"), span);
        }
        let (r, c) = (a.r, a.c);
        let k = r.min(c);
        let out = if let Some(v) = a.e.consts() {
            let (mut s, mut u, mut vv) = (vec![0.0; k], vec![0.0; r * k], vec![0.0; c * k]);
            let mut ws = vec![0.0; la::svd_workspace_len(r, c)];
            la::svd(name, &v, r, c, &mut s, &mut u, &mut vv, &mut ws)
                .map_err(|e| math_err(e, span))?;
            Elems::C(Arc::new(match name {
                "singular_values" => s,
                "svd_U" => u,
                _ => vv,
            }))
        } else {
            let f = match name {
                "singular_values" => LinalgFn::SingularValues,
                "svd_U" => LinalgFn::SvdU,
                _ => LinalgFn::SvdV,
            };
            self.linalg_op(f, &a.e, &Elems::C(Arc::new(vec![])), r, c)
        };
        Ok(match name {
            "singular_values" => Val::Vector(out),
            "svd_U" => Val::Matrix(r, k, out),
            _ => Val::Matrix(c, k, out),
        })
    }

    /// `qr_thin_Q`, `qr_thin_R`, `qr_Q`, `qr_R`. The full factors of a parameter matrix are the
    /// thin ones (plus zero rows of `R`) except `qr_Q` with more rows than columns, whose extra
    /// columns are not a differentiable function of the matrix.
    fn lower_qr(&mut self, name: &str, m: &Val, span: Span) -> R<Val> {
        let a = self.mat(name, m, span)?;
        if a.shape != Shape::Matrix {
            return cerr(format!("{name}: m must be a matrix"), span);
        }
        let (r, c) = (a.r, a.c);
        let k = r.min(c);
        let full = matches!(name, "qr_Q" | "qr_R");
        let (qc, rr) = if full { (r, r) } else { (k, k) };
        let is_q = matches!(name, "qr_Q" | "qr_thin_Q");
        let out = if let Some(v) = a.e.consts() {
            let (mut q, mut rm) = (vec![0.0; r * qc], vec![0.0; rr * c]);
            let mut ws = vec![0.0; la::qr_workspace_len(r, c)];
            la::qr(name, &v, r, c, &mut q, qc, &mut rm, rr, &mut ws)
                .map_err(|e| math_err(e, span))?;
            Elems::C(Arc::new(if is_q { q } else { rm }))
        } else {
            if full && is_q && r > c {
                return cerr(
                    "qr_Q of a parameter matrix with more rows than columns is not supported \
                     (its extra columns are not a differentiable function of the matrix); use qr_thin_Q",
                    span,
                );
            }
            let f = if is_q {
                LinalgFn::QrThinQ
            } else {
                LinalgFn::QrThinR
            };
            let thin = self.linalg_op(f, &a.e, &Elems::C(Arc::new(vec![])), r, c);
            if full && !is_q && r > c {
                // Thin R (k × c) with r − k zero rows below.
                let mut sc = vec![Sc::C(0.0); r * c];
                for j in 0..c {
                    for i in 0..k {
                        sc[i + j * r] = thin.get(i + j * k);
                    }
                }
                Elems::from_scalars(sc)
            } else {
                thin
            }
        };
        Ok(if is_q {
            Val::Matrix(r, qc, out)
        } else {
            Val::Matrix(rr, c, out)
        })
    }

    /// `rows_dot_product(A, B)` (a vector), `columns_dot_product(A, B)` (a row vector) and the
    /// `_self` forms: sums of `A ⊙ B` along rows or columns. A vector is one column, a row
    /// vector one row.
    fn lower_dot_rows_columns(&mut self, name: &str, args: &[Val], span: Span) -> R<Val> {
        let a = self.mat(name, &args[0], span)?;
        let b = if args.len() == 2 {
            self.mat(name, &args[1], span)?
        } else {
            self.mat(name, &args[0], span)?
        };
        if (a.r, a.c) != (b.r, b.c) {
            return eerr(
                format!(
                    "{name}: Rows of v1 ({}) and rows of v2 ({}) must match in size; \
                     columns of v1 ({}) and columns of v2 ({}) must match in size",
                    a.r, b.r, a.c, b.c
                ),
                span,
            );
        }
        let p = self.elems_binary(BinaryFn::Mul, &a.e, &b.e);
        let by_rows = name.starts_with("rows");
        let (outer, inner) = if by_rows { (a.r, a.c) } else { (a.c, a.r) };
        let mut sums = Vec::with_capacity(outer);
        for o in 0..outer {
            let idx: Vec<usize> = (0..inner)
                .map(|i| if by_rows { o + i * a.r } else { i + o * a.r })
                .collect();
            let part = Val::Vector(p.select(&idx));
            sums.push(if inner == 0 {
                Sc::C(0.0)
            } else {
                match self.call("sum", vec![part], span)? {
                    Val::Real(s) => s,
                    _ => return cerr(format!("{name}: internal error"), span),
                }
            });
        }
        let e = Elems::from_scalars_or_empty(sums);
        Ok(if by_rows {
            Val::Vector(e)
        } else {
            Val::RowVector(e)
        })
    }

    /// `generalized_inverse(G)` of a full-rank matrix, as Stan computes it for parameters:
    /// `inverse(G)` when square, `(GᵀG)⁻¹ Gᵀ` when tall, `Gᵀ (GGᵀ)⁻¹` when wide.
    fn lower_generalized_inverse(&mut self, g: &Val, span: Span) -> R<Val> {
        let name = "generalized_inverse";
        let m = self.mat(name, g, span)?;
        if m.shape != Shape::Matrix {
            return cerr(format!("{name}: G must be a matrix"), span);
        }
        if m.r == m.c {
            return self.lower_inverse(Factor::Lu, g, span);
        }
        let gt = self.transpose(g, span)?;
        if m.r > m.c {
            let gtg = self.matmul(&gt, g, span)?;
            self.call("mdivide_left_spd", vec![gtg, gt], span)
        } else {
            let ggt = self.matmul(g, &gt, span)?;
            self.call("mdivide_right_spd", vec![gt, ggt], span)
        }
    }

    /// `matrix_power(A, k)` by repeated squaring (`A⁰ = I`).
    fn lower_matrix_power(&mut self, m: &Val, k: &Val, span: Span) -> R<Val> {
        let a = self.square("matrix_power", "M", m, span)?;
        let k = self.as_int(k, span)?;
        if k < 0 {
            return eerr(
                format!("matrix_power: n is {k}, but must be nonnegative!"),
                span,
            );
        }
        let n = a.r;
        let mut result: Option<Val> = None;
        let mut base = m.clone();
        let mut k = k as u64;
        while k > 0 {
            if k & 1 == 1 {
                result = Some(match result {
                    None => base.clone(),
                    Some(r) => self.matmul(&r, &base, span)?,
                });
            }
            k >>= 1;
            if k > 0 {
                base = self.matmul(&base, &base, span)?;
            }
        }
        Ok(result.unwrap_or_else(|| Val::Matrix(n, n, Elems::C(Arc::new(identity(n))))))
    }
}
