//! Value and gradient rules of [`Op::Linalg`]: solves and determinants of square matrices,
//! each a thin call into `hazel_math::linalg` (the formulas live there, once).
//!
//! The forward rule leaves the factorisation of the square argument in the op's scratch and
//! the backward rule reads it back, so a gradient costs no second factorisation. Input
//! adjoints are accumulated into scratch first and then added to the adjoint buffer, which
//! keeps both inputs' updates correct when they are the same (or overlapping) runs.

use super::read;
pub use crate::ir::ops::LinalgFn;
use crate::ir::Op;
use hazel_density::EvalError;
use hazel_math::linalg::{self as la, complex as cl, Factor};

impl LinalgFn {
    /// Length of the output run.
    pub fn out_len(self, n: usize, m: usize) -> usize {
        match self {
            LinalgFn::Determinant | LinalgFn::LogDeterminant | LinalgFn::LogDeterminantSpd => 1,
            LinalgFn::EigenvaluesSym => n,
            LinalgFn::SingularValues => n.min(m),
            LinalgFn::SvdU => n * n.min(m),
            LinalgFn::SvdV => m * n.min(m),
            LinalgFn::QrThinQ => n * n.min(m),
            LinalgFn::QrThinR => m * n.min(m),
            LinalgFn::EigenGeneral { vectors: false, .. } => 2 * n,
            LinalgFn::EigenGeneral { vectors: true, .. }
            | LinalgFn::EigenvectorsHermitian
            | LinalgFn::ComplexSchur { .. } => 2 * n * n,
            _ => n * m,
        }
    }

    /// Scratch the op needs: factorisation, adjoint workspace, then the two input adjoints.
    pub fn scratch_len(self, n: usize, m: usize, a_len: usize, b_len: usize) -> usize {
        self.factor_len(n, m) + self.work_len(n, m) + a_len + b_len
    }

    /// What the forward rule keeps for the backward rule: a factorisation, or σ, U, V.
    fn factor_len(self, n: usize, m: usize) -> usize {
        match self {
            LinalgFn::SingularValues | LinalgFn::SvdU | LinalgFn::SvdV => {
                let k = n.min(m);
                k + n * k + m * k
            }
            LinalgFn::QrThinQ | LinalgFn::QrThinR => {
                let k = n.min(m);
                n * k + k * m
            }
            // λ then V, as (re, im) pairs.
            LinalgFn::EigenGeneral { .. } | LinalgFn::EigenvectorsHermitian => 2 * (n + n * n),
            LinalgFn::ComplexSchur { .. } => 4 * n * n,
            _ => la::factor_len(n),
        }
    }

    /// Workspace of the value and gradient rules beyond the factorisation.
    fn work_len(self, n: usize, m: usize) -> usize {
        match self {
            LinalgFn::MatrixExp => {
                la::matrix_exp_workspace_len(n).max(la::matrix_exp_adjoint_workspace_len(n))
            }
            LinalgFn::SingularValues | LinalgFn::SvdU | LinalgFn::SvdV => {
                la::svd_workspace_len(n, m).max(la::svd_adjoint_workspace_len(n, m))
            }
            LinalgFn::QrThinQ | LinalgFn::QrThinR => {
                la::qr_workspace_len(n, m).max(la::qr_thin_adjoint_workspace_len(n, m))
            }
            // Pairs: the matrix then the solver's workspace (forward), or the value adjoints
            // then the adjoint's workspace (backward).
            LinalgFn::EigenGeneral { .. } => {
                2 * (n * n + cl::eigen_general_workspace_len(n))
                    .max(n * n + cl::eigen_general_adjoint_workspace_len(n))
            }
            // f64s: the matrix as pairs, the values, the solver's workspace (forward); the
            // vector adjoints as pairs and the adjoint's workspace (backward).
            LinalgFn::EigenvectorsHermitian => {
                (2 * n * n + n + cl::eigen_hermitian_workspace_len(n))
                    .max(2 * (n * n + cl::eigen_general_adjoint_workspace_len(n)))
            }
            LinalgFn::ComplexSchur { .. } => {
                2 * (n * n + cl::complex_schur_workspace_len(n))
                    .max(n * n + cl::complex_schur_adjoint_workspace_len(n))
            }
            _ => n * m + n * n + n,
        }
    }
}

/// Forward rule of [`Op::Linalg`].
pub(crate) fn forward(
    op: &Op,
    consts: &[f64],
    vals: &mut [f64],
    scratch: &mut [f64],
) -> Result<(), EvalError> {
    let Op::Linalg {
        f: fun,
        a,
        b,
        n,
        m,
        scratch: sc,
        out,
    } = op
    else {
        return Ok(());
    };
    let (n, m) = (*n as usize, *m as usize);
    let (lo, hi) = vals.split_at_mut(out.off as usize);
    let o = &mut hi[..out.len as usize];
    let (av, bv) = (read(*a, lo, consts), read(*b, lo, consts));
    let s = &mut scratch[*sc as usize..];
    let (f, rest) = s.split_at_mut(fun.factor_len(n, m));
    let tmp = &mut rest[..fun.work_len(n, m)];
    let domain = |e: hazel_math::dist::MathError| EvalError::domain(e.message);
    match fun {
        LinalgFn::Inverse(k) => {
            let name = match k {
                Factor::Lu => "inverse",
                Factor::Spd => "inverse_spd",
            };
            k.factor(name, "m", av, n, f).map_err(domain)?;
            for j in 0..n {
                for i in 0..n {
                    o[i + j * n] = if i == j { 1.0 } else { 0.0 };
                }
            }
            k.solve(f, n, o, n);
        }
        LinalgFn::MdivideLeft(k) => la::mdivide_left(*k, av, n, bv, m, o, f).map_err(domain)?,
        LinalgFn::MdivideRight(k) => {
            la::mdivide_right(*k, av, m, bv, n, o, f, tmp).map_err(domain)?
        }
        LinalgFn::MdivideRightTriLow => la::mdivide_right_tri_low(av, m, bv, n, o),
        LinalgFn::Determinant => {
            let d = la::determinant(av, n, f);
            if d == 0.0 {
                // Finite but singular: the LU adjoint does not exist there.
                return Err(EvalError::domain(
                    "determinant: matrix is singular; its gradient is not available",
                ));
            }
            o[0] = d;
        }
        LinalgFn::LogDeterminant => o[0] = la::log_abs_determinant(av, n, f).map_err(domain)?,
        LinalgFn::LogDeterminantSpd => o[0] = la::log_determinant_spd(av, n, f).map_err(domain)?,
        LinalgFn::EigenvaluesSym | LinalgFn::EigenvectorsSym => {
            // f holds V (n²) then λ (n).
            let (v, l) = f.split_at_mut(n * n);
            let name = if *fun == LinalgFn::EigenvaluesSym {
                "eigenvalues_sym"
            } else {
                "eigenvectors_sym"
            };
            la::eigen_sym(name, av, n, l, v, tmp).map_err(domain)?;
            o.copy_from_slice(if *fun == LinalgFn::EigenvaluesSym {
                l
            } else {
                v
            });
        }
        LinalgFn::MatrixExp => la::matrix_exp(av, n, o, tmp).map_err(domain)?,
        LinalgFn::SingularValues | LinalgFn::SvdU | LinalgFn::SvdV => {
            let k = n.min(m);
            let (sigma, rest) = f.split_at_mut(k);
            let (u, v) = rest.split_at_mut(n * k);
            let name = match fun {
                LinalgFn::SingularValues => "singular_values",
                LinalgFn::SvdU => "svd_U",
                _ => "svd_V",
            };
            la::svd(name, av, n, m, sigma, u, v, tmp).map_err(domain)?;
            o.copy_from_slice(match fun {
                LinalgFn::SingularValues => sigma,
                LinalgFn::SvdU => u,
                _ => v,
            });
        }
        LinalgFn::QrThinQ | LinalgFn::QrThinR => {
            let k = n.min(m);
            let (q, r) = f.split_at_mut(n * k);
            let name = if *fun == LinalgFn::QrThinQ {
                "qr_thin_Q"
            } else {
                "qr_thin_R"
            };
            la::qr(name, av, n, m, q, k, r, k, tmp).map_err(domain)?;
            o.copy_from_slice(if *fun == LinalgFn::QrThinQ { q } else { r });
        }
        LinalgFn::EigenGeneral {
            complex,
            vectors: want_vectors,
        } => {
            let (lv, _) = f.as_chunks_mut::<2>();
            let (values, vectors) = lv.split_at_mut(n);
            let (tp, _) = tmp.as_chunks_mut::<2>();
            let (ap, ws) = tp.split_at_mut(n * n);
            for (i, p) in ap.iter_mut().enumerate() {
                *p = [av[i], if *complex { bv[i] } else { 0.0 }];
            }
            let name = if *want_vectors {
                "eigenvectors"
            } else {
                "eigenvalues"
            };
            cl::eigen_general(name, ap, n, !*complex, values, vectors, ws).map_err(domain)?;
            let out: &[[f64; 2]] = if *want_vectors { vectors } else { values };
            let len = out.len();
            for (k, z) in out.iter().enumerate() {
                o[k] = z[0];
                o[len + k] = z[1];
            }
        }
        LinalgFn::ComplexSchur { complex, u: want_u } => {
            let (tu, _) = f.as_chunks_mut::<2>();
            let (t, u) = tu.split_at_mut(n * n);
            let (tp, _) = tmp.as_chunks_mut::<2>();
            let (ap, ws) = tp.split_at_mut(n * n);
            for (i, p) in ap.iter_mut().enumerate() {
                *p = [av[i], if *complex { bv[i] } else { 0.0 }];
            }
            let name = if *want_u {
                "complex_schur_decompose_u"
            } else {
                "complex_schur_decompose_t"
            };
            cl::complex_schur(name, ap, n, t, u, ws).map_err(domain)?;
            let out: &[[f64; 2]] = if *want_u { u } else { t };
            for (k, z) in out.iter().enumerate() {
                o[k] = z[0];
                o[n * n + k] = z[1];
            }
        }
        LinalgFn::EigenvectorsHermitian => {
            let (lv, _) = f.as_chunks_mut::<2>();
            let (values, vectors) = lv.split_at_mut(n);
            let (apf, rest) = tmp.split_at_mut(2 * n * n);
            let (ap, _) = apf.as_chunks_mut::<2>();
            let (l, ws) = rest.split_at_mut(n);
            for (i, p) in ap.iter_mut().enumerate() {
                *p = [av[i], bv[i]];
            }
            cl::eigen_hermitian("eigenvectors_sym", ap, n, l, vectors, ws).map_err(domain)?;
            for (z, x) in values.iter_mut().zip(l.iter()) {
                *z = [*x, 0.0];
            }
            for (k, z) in vectors.iter().enumerate() {
                o[k] = z[0];
                o[n * n + k] = z[1];
            }
        }
    }
    Ok(())
}

/// Backward rule of [`Op::Linalg`]: `adj_lo` is the adjoint buffer below the output, `g` the
/// output's adjoint, `lo` the values below it and `x` the output's value.
pub(crate) fn backward(
    op: &Op,
    consts: &[f64],
    lo: &[f64],
    x: &[f64],
    g: &[f64],
    adj_lo: &mut [f64],
    scratch: &mut [f64],
) {
    let Op::Linalg {
        f: fun,
        a,
        b,
        n,
        m,
        scratch: sc,
        ..
    } = op
    else {
        return;
    };
    if !a.is_var() && !b.is_var() {
        return;
    }
    let (n, m) = (*n as usize, *m as usize);
    let s = &mut scratch[*sc as usize..];
    let (f, rest) = s.split_at_mut(fun.factor_len(n, m));
    let (tmp, rest) = rest.split_at_mut(fun.work_len(n, m));
    let (ga, rest) = rest.split_at_mut(a.len());
    let gb = &mut rest[..b.len()];
    ga.iter_mut().for_each(|v| *v = 0.0);
    gb.iter_mut().for_each(|v| *v = 0.0);
    let ga_opt = if a.is_var() { Some(&mut *ga) } else { None };
    let gb_opt = if b.is_var() { Some(&mut *gb) } else { None };
    let f = &*f;
    match fun {
        LinalgFn::Inverse(k) => la::mdivide_left_adjoint(*k, f, n, x, n, g, ga_opt, None, tmp),
        LinalgFn::MdivideLeft(k) => {
            la::mdivide_left_adjoint(*k, f, n, x, m, g, ga_opt, gb_opt, tmp)
        }
        LinalgFn::MdivideRight(k) => {
            la::mdivide_right_adjoint(*k, f, m, n, x, g, gb_opt, ga_opt, tmp)
        }
        LinalgFn::MdivideRightTriLow => {
            la::mdivide_right_tri_low_adjoint(x, m, read(*b, lo, consts), n, g, ga_opt, gb_opt, tmp)
        }
        LinalgFn::Determinant => {
            if let Some(d) = ga_opt {
                la::add_scaled_inverse_transpose(Factor::Lu, f, n, g[0] * x[0], d, tmp)
            }
        }
        LinalgFn::LogDeterminant => {
            if let Some(d) = ga_opt {
                la::add_scaled_inverse_transpose(Factor::Lu, f, n, g[0], d, tmp)
            }
        }
        LinalgFn::LogDeterminantSpd => {
            if let Some(d) = ga_opt {
                la::add_scaled_inverse_transpose(Factor::Spd, f, n, g[0], d, tmp)
            }
        }
        LinalgFn::EigenvaluesSym => {
            if let Some(d) = ga_opt {
                la::eigenvalues_sym_adjoint(&f[..n * n], n, g, d)
            }
        }
        LinalgFn::EigenvectorsSym => {
            if let Some(d) = ga_opt {
                let (v, l) = f.split_at(n * n);
                la::eigenvectors_sym_adjoint(l, v, n, g, d, tmp)
            }
        }
        LinalgFn::MatrixExp => {
            if let Some(d) = ga_opt {
                // The forward value exists, so the block matrix's exponential does too; a
                // failure here (a singular Padé denominator) poisons the gradient visibly.
                if la::matrix_exp_adjoint(read(*a, lo, consts), n, g, d, tmp).is_err() {
                    d.iter_mut().for_each(|v| *v = f64::NAN);
                }
            }
        }
        LinalgFn::SingularValues | LinalgFn::SvdU | LinalgFn::SvdV => {
            if let Some(d) = ga_opt {
                let k = n.min(m);
                let (sigma, rest) = f.split_at(k);
                let (u, v) = rest.split_at(n * k);
                let pick = |which| (*fun == which).then_some(g);
                la::svd_adjoint(
                    sigma,
                    u,
                    v,
                    n,
                    m,
                    pick(LinalgFn::SingularValues),
                    pick(LinalgFn::SvdU),
                    pick(LinalgFn::SvdV),
                    d,
                    tmp,
                )
            }
        }
        LinalgFn::QrThinQ | LinalgFn::QrThinR => {
            if let Some(d) = ga_opt {
                let k = n.min(m);
                let (q, r) = f.split_at(n * k);
                let pick = |which| (*fun == which).then_some(g);
                let av = read(*a, lo, consts);
                la::qr_thin_adjoint(
                    av,
                    q,
                    r,
                    n,
                    m,
                    pick(LinalgFn::QrThinQ),
                    pick(LinalgFn::QrThinR),
                    d,
                    tmp,
                )
            }
        }
        LinalgFn::EigenGeneral {
            vectors: want_vectors,
            ..
        } => {
            let (lv, _) = f.as_chunks::<2>();
            let (values, vectors) = lv[..n + n * n].split_at(n);
            let (tp, _) = tmp.as_chunks_mut::<2>();
            let len = if *want_vectors { n * n } else { n };
            let (gp, ws) = tp.split_at_mut(len);
            for (k, p) in gp.iter_mut().enumerate() {
                *p = [g[k], g[len + k]];
            }
            let (gv, gvec) = if *want_vectors {
                (None, Some(&*gp))
            } else {
                (Some(&*gp), None)
            };
            cl::eigen_general_adjoint(values, vectors, n, gv, gvec, ga_opt, gb_opt, ws);
        }
        LinalgFn::ComplexSchur { u: want_u, .. } => {
            let (tu, _) = f.as_chunks::<2>();
            let (t, u) = tu[..2 * n * n].split_at(n * n);
            let (tp, _) = tmp.as_chunks_mut::<2>();
            let (gp, ws) = tp.split_at_mut(n * n);
            for (k, p) in gp.iter_mut().enumerate() {
                *p = [g[k], g[n * n + k]];
            }
            let (gt, gu) = if *want_u {
                (None, Some(&*gp))
            } else {
                (Some(&*gp), None)
            };
            cl::complex_schur_adjoint(t, u, n, gt, gu, ga_opt, gb_opt, ws);
        }
        LinalgFn::EigenvectorsHermitian => {
            let (lv, _) = f.as_chunks::<2>();
            let (values, vectors) = lv[..n + n * n].split_at(n);
            let (tp, _) = tmp.as_chunks_mut::<2>();
            let (gp, ws) = tp.split_at_mut(n * n);
            for (k, p) in gp.iter_mut().enumerate() {
                *p = [g[k], g[n * n + k]];
            }
            cl::eigen_general_adjoint(values, vectors, n, None, Some(&*gp), ga_opt, gb_opt, ws);
        }
    }
    if a.is_var() {
        for (d, v) in adj_lo[a.range()].iter_mut().zip(ga.iter()) {
            *d += v;
        }
    }
    if b.is_var() {
        for (d, v) in adj_lo[b.range()].iter_mut().zip(gb.iter()) {
            *d += v;
        }
    }
}
