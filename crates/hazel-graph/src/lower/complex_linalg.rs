//! Complex linear algebra: dot products and cross products of complex containers, and the
//! decompositions with complex results (`eigenvalues`/`eigenvectors`/`eigendecompose` of a
//! real or complex matrix, their `_sym` forms of a Hermitian `complex_matrix`,
//! `complex_schur_decompose(_t, _u)`, and the SVD of a `complex_matrix`).
//!
//! - Products follow Stan Math: `dot_product` of two complex vectors is Eigen's `v1.dot(v2)`,
//!   `Σ conj(v1ᵢ) v2ᵢ` (conjugating the first), but of two complex *arrays* `Σ v1ᵢ v2ᵢ`;
//!   `dot_self`, `columns_dot_self`, `rows_dot_self` are squared norms `Σ |zᵢ|²` (real, as a
//!   complex with zero imaginary part); `columns_dot_product`, `rows_dot_product`,
//!   `crossprod` (`x' * x`) and `tcrossprod` (`x * x'`) do not conjugate (Stan's `'` does not).
//!   They are compositions of the real ops, so they differentiate like everything else.
//! - `eigenvalues_sym` and `singular_values` of a complex matrix are every other eigenvalue
//!   (singular value) of the real embedding `[[Re A, −Im A], [Im A, Re A]]`, computed by the
//!   real `eigenvalues_sym` / `singular_values` lowering: one `Op::Linalg` for parameters,
//!   so they are differentiable (each value of `A` is a double one of the embedding, and the
//!   value adjoint `v vᵀ` is the same for either vector of the pair).
//! - `eigenvalues` and `eigenvectors` (and `eigendecompose`, one op each) of a
//!   parameter-dependent real or complex matrix are `Op::Linalg`s (`LinalgFn::EigenGeneral`,
//!   `hazel_math::linalg::complex::eigen_general_adjoint`, for simple eigenvalues). The
//!   eigenvectors' derivative is that of hazel's normalisation (unit norm, largest entry real
//!   and positive); Stan's (Eigen's algorithm differentiated) may differ by the phase
//!   convention, so only phase-free functions of the eigenvectors are Stan's.
//! - `eigenvectors_sym` (and `eigendecompose_sym`) of a parameter-dependent complex matrix is
//!   one `Op::Linalg` (`LinalgFn::EigenvectorsHermitian`: the data path's values and vectors,
//!   the same adjoint, which holds for any diagonalisable matrix with simple eigenvalues).
//! - `complex_schur_decompose*` of parameters: one `Op::Linalg` per factor
//!   (`LinalgFn::ComplexSchur`, `complex_schur_adjoint`; the phases are hazel's convention).
//! - The complex SVD's vectors of parameters are compositions: `U` from the Hermitian
//!   eigenvectors of `Z Zᴴ`, `V = Zᴴ U diag(1/σ)`, equal to the data path's
//!   (`hazel_math::linalg::complex::svd_complex`) up to rounding for distinct non-zero
//!   singular values (squaring the matrix costs accuracy when it is ill-conditioned).
//! - Every decomposition of data arguments runs `hazel_math::linalg::complex` once, at
//!   compile time. Where the phases of vectors are not fixed by the matrix, Stan's are
//!   artefacts of Eigen's algorithm (differentiated on autodiff scalars): only phase-free
//!   functions of them, and their gradients, agree with Stan.

use super::trace::{cerr, complex_parts, Tracer, R};
use super::value::{Elems, Val};
use crate::kernels::UnaryFn;
use hazel_math::linalg::complex as cl;
use hazel_syntax::ast::BinOp;
use hazel_syntax::Span;
use std::sync::Arc;

/// Functions whose result is complex even for real arguments.
pub const ALWAYS_COMPLEX: [&str; 6] = [
    "eigenvalues",
    "eigenvectors",
    "eigendecompose",
    "complex_schur_decompose",
    "complex_schur_decompose_t",
    "complex_schur_decompose_u",
];

fn math_err(e: hazel_math::dist::MathError, span: Span) -> super::trace::TraceErr {
    super::trace::TraceErr::Eval(hazel_density::EvalError::domain(e.message), span)
}

/// A complex matrix (or vector) from its constant parts, column-major.
fn consts_of(re: &Val, im: &Val) -> Option<(usize, usize, Vec<[f64; 2]>)> {
    let (r, c, er, ei) = match (re, im) {
        (Val::Matrix(r, c, er), Val::Matrix(_, _, ei)) => (*r, *c, er, ei),
        _ => return None,
    };
    let (er, ei) = (er.consts()?, ei.consts()?);
    Some((r, c, er.iter().zip(&ei).map(|(&a, &b)| [a, b]).collect()))
}

fn cmatrix(r: usize, c: usize, z: &[[f64; 2]]) -> Val {
    Val::complex(
        Val::Matrix(r, c, Elems::C(Arc::new(z.iter().map(|z| z[0]).collect()))),
        Val::Matrix(r, c, Elems::C(Arc::new(z.iter().map(|z| z[1]).collect()))),
    )
}

fn cvector(z: &[[f64; 2]]) -> Val {
    Val::complex(
        Val::Vector(Elems::C(Arc::new(z.iter().map(|z| z[0]).collect()))),
        Val::Vector(Elems::C(Arc::new(z.iter().map(|z| z[1]).collect()))),
    )
}

fn zeros_vector(n: usize) -> Val {
    Val::Vector(Elems::C(Arc::new(vec![0.0; n])))
}

impl<'p> Tracer<'p> {
    /// The complex linear algebra of this module, or `None` when `name` is not one of it.
    pub fn complex_linalg(&mut self, name: &str, args: &[Val], span: Span) -> Option<R<Val>> {
        Some(match (name, args) {
            ("dot_product", [a, b]) => self.complex_dot(a, b, span),
            ("dot_self", [z]) => self.squared_norms("dot_self", z, span),
            ("columns_dot_self" | "rows_dot_self", [z]) => self.squared_norms(name, z, span),
            ("columns_dot_product" | "rows_dot_product", [a, b]) => {
                let name = name.to_string();
                self.bilinear_parts(a, b, span, &name)
            }
            ("tcrossprod" | "crossprod", [z]) => (|| {
                let zt = self.complex_transpose(z, span)?;
                if name == "tcrossprod" {
                    self.complex_binop(BinOp::Mul, z, &zt, span)
                } else {
                    self.complex_binop(BinOp::Mul, &zt, z, span)
                }
            })(),
            ("eigenvalues_sym", [z]) => self.embedded_values("eigenvalues_sym", z, span),
            ("singular_values", [z]) => self.embedded_values("singular_values", z, span),
            (
                "eigenvectors_sym"
                | "eigendecompose_sym"
                | "svd_U"
                | "svd_V"
                | "svd"
                | "eigenvalues"
                | "eigenvectors"
                | "eigendecompose"
                | "complex_schur_decompose"
                | "complex_schur_decompose_t"
                | "complex_schur_decompose_u",
                [z],
            ) => self.complex_decomposition(name, z, span),
            _ => return None,
        })
    }

    /// `dot_product` of complex vectors (conjugating the first, as Eigen's `dot`) or arrays
    /// (no conjugation, as Stan Math's loop over `std::vector`).
    fn complex_dot(&mut self, a: &Val, b: &Val, span: Span) -> R<Val> {
        let arrays = matches!(a, Val::Array(_)) && matches!(b, Val::Array(_));
        let a = if arrays {
            a.clone()
        } else {
            let (re, im) = self.split(a);
            Val::complex(re, self.map_unary(UnaryFn::Neg, &im, span)?)
        };
        self.bilinear_parts(&a, b, span, "dot_product")
    }

    /// `f(a + bi, c + di) = f(a, c) − f(b, d) + i(f(a, d) + f(b, c))` for the real bilinear
    /// built-in `name`.
    fn bilinear_parts(&mut self, x: &Val, y: &Val, span: Span, name: &str) -> R<Val> {
        let (a, b) = self.split(x);
        let (c, d) = self.split(y);
        let f = |tr: &mut Self, p: &Val, q: &Val| tr.call(name, vec![p.clone(), q.clone()], span);
        let ac = f(self, &a, &c)?;
        let bd = f(self, &b, &d)?;
        let ad = f(self, &a, &d)?;
        let bc = f(self, &b, &c)?;
        let re = self.binop(BinOp::Sub, &ac, &bd, span)?;
        let im = self.binop(BinOp::Add, &ad, &bc, span)?;
        Ok(Val::complex(re, im))
    }

    /// `Σ |zᵢ|²` per vector, column or row (`name` the real function), with zero imaginary part.
    fn squared_norms(&mut self, name: &str, z: &Val, span: Span) -> R<Val> {
        let (re, im) = self.split(z);
        let a = self.call(name, vec![re], span)?;
        let b = self.call(name, vec![im], span)?;
        let sum = self.binop(BinOp::Add, &a, &b, span)?;
        let zero = super::trace::zeros_like(&sum);
        Ok(Val::complex(sum, zero))
    }

    /// `eigenvalues_sym` (ascending, as a complex vector) or `singular_values` (descending,
    /// real) of a complex matrix: every other value of its real embedding's.
    fn embedded_values(&mut self, name: &str, z: &Val, span: Span) -> R<Val> {
        let (re, im) = complex_parts(z.clone());
        let Val::Matrix(r, c, _) = re else {
            return cerr(format!("{name}: m must be a matrix"), span);
        };
        if name == "eigenvalues_sym" && r != c {
            return super::trace::eerr(
                format!("{name}: Expecting a square matrix; rows of m ({r}) and columns of m ({c}) must match in size"),
                span,
            );
        }
        let neg_im = self.map_unary(UnaryFn::Neg, &im, span)?;
        let top = self.call("append_col", vec![re.clone(), neg_im], span)?;
        let bottom = self.call("append_col", vec![im, re], span)?;
        let e = self.call("append_row", vec![top, bottom], span)?;
        let values = self.call(name, vec![e], span)?;
        let Val::Vector(v) = values else {
            return cerr(format!("{name}: internal shape error"), span);
        };
        let idx: Vec<usize> = (0..v.len() / 2).map(|k| 2 * k).collect();
        let picked = Val::Vector(v.select(&idx));
        Ok(if name == "eigenvalues_sym" {
            Val::complex(picked, zeros_vector(idx.len()))
        } else {
            picked
        })
    }

    /// `eigenvalues` or `eigenvectors` of a parameter-dependent (real or complex) matrix:
    /// one `Op::Linalg` whose output is the real parts then the imaginary parts.
    fn eigen_op(&mut self, name: &str, re: &Val, im: &Val, real_input: bool, span: Span) -> R<Val> {
        let vectors = name == "eigenvectors";
        let f = crate::tape::LinalgFn::EigenGeneral {
            complex: !real_input,
            vectors,
        };
        let (n, out) = self.square_linalg_op(name, f, re, im, real_input, span)?;
        Ok(if vectors {
            complex_square(n, &out)
        } else {
            Val::complex(
                Val::Vector(out.slice(0, n)),
                Val::Vector(out.slice(n, 2 * n)),
            )
        })
    }

    /// One `Op::Linalg` `f` of `name`'s argument `m` (real part `re`, imaginary part `im`,
    /// left out when `real_input`), which must be a non-empty square matrix: its size and the
    /// op's output.
    fn square_linalg_op(
        &mut self,
        name: &str,
        f: crate::tape::LinalgFn,
        re: &Val,
        im: &Val,
        real_input: bool,
        span: Span,
    ) -> R<(usize, Elems)> {
        let (Val::Matrix(r, c, er), Val::Matrix(_, _, ei)) = (re, im) else {
            return cerr(format!("{name}: m must be a matrix"), span);
        };
        let (n, c) = (*r, *c);
        if n != c || n == 0 {
            return super::trace::eerr(
                format!(
                    "{name}: Expecting a square matrix with a non-zero size; rows of m \
                     ({n}) and columns of m ({c}) must match in size"
                ),
                span,
            );
        }
        let a = self.elems_arg(er);
        let b = if real_input {
            self.elems_arg(&Elems::C(Arc::new(vec![])))
        } else {
            self.elems_arg(ei)
        };
        Ok((n, Elems::V(self.b.linalg(f, a, b, n, n))))
    }

    /// `svd_U`, `svd_V`, `svd` of a parameter-dependent complex matrix `Z` (`m × n`, `k =
    /// min(m, n)`), as compositions: `U` is the eigenvectors of the Hermitian `Z Zᴴ` for its
    /// `k` largest eigenvalues (descending), `σ` the singular values, `V = Zᴴ U diag(1/σ)`.
    /// For distinct non-zero singular values these are the data path's vectors (the same
    /// phase convention: `U`'s largest entries real and positive, `V` following through
    /// `A v = σ u`), up to rounding; their gradients come from the parts' rules.
    fn svd_vectors_of_parameters(&mut self, name: &str, z: &Val, span: Span) -> R<Val> {
        let (re, _) = complex_parts(z.clone());
        let Val::Matrix(m, n, _) = re else {
            return cerr(format!("{name}: m must be a matrix"), span);
        };
        let k = m.min(n);
        if k == 0 {
            return super::trace::eerr(format!("{name}: m has size 0"), span);
        }
        let zt = self.complex_transpose(z, span)?;
        let (tr, ti) = complex_parts(zt);
        let zh = Val::complex(tr, self.map_unary(UnaryFn::Neg, &ti, span)?);
        let h = self.complex_binop(BinOp::Mul, z, &zh, span)?;
        let (hr, hi) = complex_parts(h);
        let vecs = self.hermitian_vectors_op(&hr, &hi, span)?;
        // Columns m − 1, …, m − k (descending eigenvalues).
        let (er, ei) = complex_parts(vecs);
        let (Val::Matrix(_, _, er), Val::Matrix(_, _, ei)) = (er, ei) else {
            return cerr(format!("{name}: internal shape error"), span);
        };
        let idx: Vec<usize> = (0..k)
            .flat_map(|c| {
                let col = m - 1 - c;
                (0..m).map(move |r| r + col * m)
            })
            .collect();
        let u = Val::complex(
            Val::Matrix(m, k, er.select(&idx)),
            Val::Matrix(m, k, ei.select(&idx)),
        );
        let sigma = self.embedded_values("singular_values", z, span)?;
        let inv = self.map_unary(UnaryFn::Inv, &sigma, span)?;
        let zhu = self.complex_binop(BinOp::Mul, &zh, &u, span)?;
        let v = self.complex_call("diag_post_multiply", vec![zhu, inv], span)?;
        Ok(match name {
            "svd_U" => u,
            "svd_V" => v,
            _ => Val::Tuple(Arc::new(vec![u, sigma, v])),
        })
    }

    /// `complex_schur_decompose_t` (`_u` when `u`) of a parameter-dependent real or complex
    /// matrix: one `Op::Linalg`.
    fn schur_op(&mut self, u: bool, re: &Val, im: &Val, real_input: bool, span: Span) -> R<Val> {
        let f = crate::tape::LinalgFn::ComplexSchur {
            complex: !real_input,
            u,
        };
        let name = "complex_schur_decompose";
        let (n, out) = self.square_linalg_op(name, f, re, im, real_input, span)?;
        Ok(complex_square(n, &out))
    }

    /// `eigenvectors_sym` of a parameter-dependent complex (Hermitian) matrix: one
    /// `Op::Linalg` (values and vectors as the data path computes them, the adjoint of
    /// `eigen_general_adjoint`).
    fn hermitian_vectors_op(&mut self, re: &Val, im: &Val, span: Span) -> R<Val> {
        let f = crate::tape::LinalgFn::EigenvectorsHermitian;
        let (n, out) = self.square_linalg_op("eigenvectors_sym", f, re, im, false, span)?;
        Ok(complex_square(n, &out))
    }

    /// The decompositions computed on data only (see the module notes).
    fn complex_decomposition(&mut self, name: &str, z: &Val, span: Span) -> R<Val> {
        let real_input = !z.holds_complex();
        let (re, im) = complex_parts(z.clone());
        if !matches!(re, Val::Matrix(..)) {
            return cerr(format!("{name}: m must be a matrix"), span);
        }
        if name.starts_with("complex_schur_decompose") && consts_of(&re, &im).is_none() {
            return match name {
                "complex_schur_decompose_t" => self.schur_op(false, &re, &im, real_input, span),
                "complex_schur_decompose_u" => self.schur_op(true, &re, &im, real_input, span),
                _ => {
                    let u = self.schur_op(true, &re, &im, real_input, span)?;
                    let t = self.schur_op(false, &re, &im, real_input, span)?;
                    Ok(Val::Tuple(Arc::new(vec![u, t])))
                }
            };
        }
        if matches!(name, "svd_U" | "svd_V" | "svd") && consts_of(&re, &im).is_none() {
            return self.svd_vectors_of_parameters(name, z, span);
        }
        if matches!(name, "eigenvectors_sym" | "eigendecompose_sym")
            && consts_of(&re, &im).is_none()
        {
            let v = self.hermitian_vectors_op(&re, &im, span)?;
            if name == "eigenvectors_sym" {
                return Ok(v);
            }
            let l = self.embedded_values("eigenvalues_sym", z, span)?;
            return Ok(Val::Tuple(Arc::new(vec![v, l])));
        }
        if matches!(name, "eigenvalues" | "eigenvectors" | "eigendecompose")
            && consts_of(&re, &im).is_none()
        {
            if name == "eigendecompose" {
                let v = self.eigen_op("eigenvectors", &re, &im, real_input, span)?;
                let l = self.eigen_op("eigenvalues", &re, &im, real_input, span)?;
                return Ok(Val::Tuple(Arc::new(vec![v, l])));
            }
            return self.eigen_op(name, &re, &im, real_input, span);
        }
        let Some((r, c, a)) = consts_of(&re, &im) else {
            return cerr(
                format!(
                    "'{name}' of a matrix that depends on parameters is not supported (hazel \
                     computes it for data only)"
                ),
                span,
            );
        };
        let square = |this: &str| -> R<usize> {
            if r != c {
                return super::trace::eerr(
                    format!("{this}: Expecting a square matrix; rows of m ({r}) and columns of m ({c}) must match in size"),
                    span,
                );
            }
            Ok(r)
        };
        match name {
            "eigenvectors_sym" | "eigendecompose_sym" => {
                let n = square(name)?;
                let (mut vals, mut vecs) = (vec![0.0; n], vec![[0.0; 2]; n * n]);
                let mut ws = vec![0.0; cl::eigen_hermitian_workspace_len(n)];
                cl::eigen_hermitian(name, &a, n, &mut vals, &mut vecs, &mut ws)
                    .map_err(|e| math_err(e, span))?;
                let v = cmatrix(n, n, &vecs);
                if name == "eigenvectors_sym" {
                    return Ok(v);
                }
                // The values as the parameter path computes them (the embedding's).
                let l = self.embedded_values("eigenvalues_sym", z, span)?;
                Ok(Val::Tuple(Arc::new(vec![v, l])))
            }
            "svd_U" | "svd_V" | "svd" => {
                let k = r.min(c);
                let (mut s, mut u, mut v) =
                    (vec![0.0; k], vec![[0.0; 2]; r * k], vec![[0.0; 2]; c * k]);
                let mut ws = vec![0.0; cl::svd_complex_workspace_len(r, c)];
                cl::svd_complex(name, &a, r, c, &mut s, &mut u, &mut v, &mut ws)
                    .map_err(|e| math_err(e, span))?;
                let (u, v) = (cmatrix(r, k, &u), cmatrix(c, k, &v));
                Ok(match name {
                    "svd_U" => u,
                    "svd_V" => v,
                    _ => {
                        let s = self.embedded_values("singular_values", z, span)?;
                        Val::Tuple(Arc::new(vec![u, s, v]))
                    }
                })
            }
            "eigenvalues" | "eigenvectors" | "eigendecompose" => {
                let n = square(name)?;
                let (mut vals, mut vecs) = (vec![[0.0; 2]; n], vec![[0.0; 2]; n * n]);
                let mut ws = vec![[0.0; 2]; cl::eigen_general_workspace_len(n)];
                cl::eigen_general(name, &a, n, real_input, &mut vals, &mut vecs, &mut ws)
                    .map_err(|e| math_err(e, span))?;
                Ok(match name {
                    "eigenvalues" => cvector(&vals),
                    "eigenvectors" => cmatrix(n, n, &vecs),
                    _ => Val::Tuple(Arc::new(vec![cmatrix(n, n, &vecs), cvector(&vals)])),
                })
            }
            _ => {
                let n = square(name)?;
                let (mut t, mut u) = (vec![[0.0; 2]; n * n], vec![[0.0; 2]; n * n]);
                let mut ws = vec![[0.0; 2]; cl::complex_schur_workspace_len(n)];
                cl::complex_schur(name, &a, n, &mut t, &mut u, &mut ws)
                    .map_err(|e| math_err(e, span))?;
                Ok(match name {
                    "complex_schur_decompose_t" => cmatrix(n, n, &t),
                    "complex_schur_decompose_u" => cmatrix(n, n, &u),
                    _ => Val::Tuple(Arc::new(vec![cmatrix(n, n, &u), cmatrix(n, n, &t)])),
                })
            }
        }
    }
}

/// The complex `n × n` matrix whose real parts lead `out` and whose imaginary parts follow.
fn complex_square(n: usize, out: &Elems) -> Val {
    Val::complex(
        Val::Matrix(n, n, out.slice(0, n * n)),
        Val::Matrix(n, n, out.slice(n * n, 2 * n * n)),
    )
}
