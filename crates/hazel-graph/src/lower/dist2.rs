//! Matrix densities composed from the linear algebra ops (each op's value and gradient rule
//! lives in `hazel_math::linalg`): `matrix_normal_prec` and `gaussian_dlm_obs` (the Kalman
//! filter of Stan Math, step by step). Stan's summand grouping is kept: the `2π` constant
//! only without `propto`, log-determinants only when their matrix varies. Also the
//! 4-, 5- and 7-parameter `wiener` density (one elementwise [`crate::tape::Op::Nary`] and a sum) and the
//! hypergeometric functions (one `MvDist` op of family `Hypergeometric`).

use super::trace::{cerr, eerr, Tracer, R};
use super::value::{Sc, Val};
use crate::kernels::BinaryFn;
use hazel_syntax::ast::BinOp;
use hazel_syntax::Span;

/// Whether `name` is a density lowered here.
pub fn is_composed_matrix_density(name: &str) -> bool {
    matches!(name, "matrix_normal_prec" | "gaussian_dlm_obs" | "wiener")
}

const HALF_LOG_TWO_PI: f64 = 0.918_938_533_204_672_8;

fn dims(v: &Val) -> Option<(usize, usize)> {
    match v {
        Val::Matrix(r, c, _) => Some((*r, *c)),
        _ => None,
    }
}

impl<'p> Tracer<'p> {
    /// `matrix_normal_prec` or `gaussian_dlm_obs`, or `None` for another name.
    pub fn composed_matrix_density(
        &mut self,
        name: &str,
        args: &[Val],
        propto: bool,
        span: Span,
    ) -> R<Option<Sc>> {
        match name {
            "matrix_normal_prec" => self.matrix_normal_prec(args, propto, span).map(Some),
            "gaussian_dlm_obs" => self.gaussian_dlm_obs(args, propto, span).map(Some),
            "wiener" => self.wiener(args, propto, span).map(Some),
            _ => Ok(None),
        }
    }

    fn square_dims(&self, name: &str, what: &str, v: &Val, n: usize, span: Span) -> R<()> {
        match dims(v) {
            Some((r, c)) if r == n && c == n => Ok(()),
            Some((r, c)) => eerr(
                format!("{name}: {what} is {r} × {c}, but must be {n} × {n}"),
                span,
            ),
            None => cerr(format!("{name}: {what} must be a matrix"), span),
        }
    }

    /// matrix_normal_prec(y | Mu, Sigma, D) (`y`, `Mu` N × P, precisions Sigma N × N and
    /// D P × P): `−NP/2 log 2π + N/2 log|Σ| + P/2 log|D| − ½ tr(D (y − μ)ᵀ Σ (y − μ))`, where
    /// Stan Math multiplies log|Σ| by `N/2` (its rows), as here.
    fn matrix_normal_prec(&mut self, args: &[Val], propto: bool, span: Span) -> R<Sc> {
        let name = "matrix_normal_prec_lpdf";
        if args.len() != 4 {
            return cerr("matrix_normal_prec takes 4 arguments", span);
        }
        let (Some((n, p)), Some(mu_dims)) = (dims(&args[0]), dims(&args[1])) else {
            return cerr(format!("{name}: y and Mu must be matrices"), span);
        };
        if mu_dims != (n, p) {
            return eerr(
                format!(
                    "{name}: Random variable is {n} × {p}, but location parameter is {} × {}",
                    mu_dims.0, mu_dims.1
                ),
                span,
            );
        }
        self.square_dims(name, "Sigma", &args[2], n, span)?;
        self.square_dims(name, "D", &args[3], p, span)?;
        if propto && args.iter().all(|a| a.is_const()) {
            return Ok(Sc::C(0.0));
        }
        let mut lp = Sc::C(if propto {
            0.0
        } else {
            -HALF_LOG_TWO_PI * (n * p) as f64
        });
        // Log-determinants (checking positive definiteness) when kept.
        for (k, scale) in [(2, 0.5 * n as f64), (3, 0.5 * p as f64)] {
            if !propto || !args[k].is_const() {
                let ld = self.call("log_determinant_spd", vec![args[k].clone()], span)?;
                let ld = self.real_sc(&ld, span)?;
                let t = self.sc_binary(BinaryFn::Mul, ld, Sc::C(scale));
                lp = self.sc_binary(BinaryFn::Add, lp, t);
            }
        }
        let diff = self.binop(BinOp::Sub, &args[0], &args[1], span)?;
        let q = self.call(
            "trace_gen_quad_form",
            vec![args[3].clone(), args[2].clone(), diff],
            span,
        )?;
        let q = self.real_sc(&q, span)?;
        let t = self.sc_binary(BinaryFn::Mul, q, Sc::C(-0.5));
        Ok(self.sc_binary(BinaryFn::Add, lp, t))
    }

    /// wiener(y | alpha, tau, beta, delta[, sv[, sw, st0]]), vectorised: every summand depends on the
    /// arguments, so under `propto` it is dropped only when all are data.
    fn wiener(&mut self, args: &[Val], propto: bool, span: Span) -> R<Sc> {
        let Some(rule) = crate::nary::MathNary::wiener(args.len()) else {
            return cerr(
                format!(
                    "wiener_lpdf takes 4, 5 or 7 parameters, not {}",
                    args.len().saturating_sub(1)
                ),
                span,
            );
        };
        if propto && args.iter().all(|a| a.is_const()) {
            return Ok(Sc::C(0.0));
        }
        let v = self.map_nary(rule, args, span)?;
        let e = self.to_elems(&v);
        Ok(self.sum_elems(&e))
    }

    fn real_sc(&self, v: &Val, span: Span) -> R<Sc> {
        match v {
            Val::Real(s) => Ok(*s),
            Val::Int(i) => Ok(Sc::C(*i as f64)),
            _ => cerr(format!("expected a scalar, found {}", v.type_name()), span),
        }
    }

    /// gaussian_dlm_obs(y | F, G, V, W, m0, C0): the Kalman filter's log likelihood of the
    /// columns of `y` (r × T) for the state space model with observation matrix `Fᵀ` (F is
    /// n × r), transition G (n × n), observation covariance V (r × r, or a vector of
    /// variances, filtered one observation at a time as Stan Math does), state covariance W,
    /// initial mean m0 and covariance C0.
    fn gaussian_dlm_obs(&mut self, args: &[Val], propto: bool, span: Span) -> R<Sc> {
        let name = "gaussian_dlm_obs_lpdf";
        if args.len() != 7 {
            return cerr("gaussian_dlm_obs takes 7 arguments", span);
        }
        let [y, f, g, v, w, m0, c0] = [0, 1, 2, 3, 4, 5, 6].map(|i| args[i].clone());
        let Some((r, t)) = dims(&y) else {
            return cerr(format!("{name}: y must be a matrix"), span);
        };
        let Some((n, fr)) = dims(&f) else {
            return cerr(format!("{name}: F must be a matrix"), span);
        };
        if fr != r {
            return eerr(
                format!("{name}: columns of F ({fr}) and rows of y ({r}) must match in size"),
                span,
            );
        }
        self.square_dims(name, "G", &g, n, span)?;
        self.square_dims(name, "W", &w, n, span)?;
        self.square_dims(name, "C0", &c0, n, span)?;
        let diag_v = !matches!(v, Val::Matrix(..));
        if diag_v {
            if self.to_elems(&v).len() != r {
                return eerr(format!("{name}: size of V must be {r}"), span);
            }
        } else {
            self.square_dims(name, "V", &v, r, span)?;
        }
        if self.to_elems(&m0).len() != n {
            return eerr(format!("{name}: size of m0 must be {n}"), span);
        }
        if r * t == 0 {
            return Ok(Sc::C(0.0));
        }
        if propto && args.iter().all(|a| a.is_const()) {
            return Ok(Sc::C(0.0));
        }
        let mut lp = Sc::C(if propto {
            0.0
        } else {
            -HALF_LOG_TWO_PI * (r * t) as f64
        });
        let gt = self.transpose(&g, span)?;
        let ft = self.transpose(&f, span)?;
        let mut m = Val::Vector(self.to_elems(&m0));
        let mut c = c0;
        for i in 0..t {
            // Predict the state.
            let mut a = self.matmul(&g, &m, span)?;
            let gcg = self.call("quad_form_sym", vec![c.clone(), gt.clone()], span)?;
            let mut rr = self.binop(BinOp::Add, &gcg, &w, span)?;
            let yi = self.call("col", vec![y.clone(), Val::Int(i as i64 + 1)], span)?;
            if diag_v {
                // One observation at a time.
                let ye = self.to_elems(&yi);
                let ve = self.to_elems(&v);
                for j in 0..r {
                    let fj = self.call("col", vec![f.clone(), Val::Int(j as i64 + 1)], span)?;
                    let fa = self.call("dot_product", vec![fj.clone(), a.clone()], span)?;
                    let fa = self.real_sc(&fa, span)?;
                    let rf = self.matmul(&rr, &fj, span)?;
                    let frf = self.call("dot_product", vec![fj.clone(), rf.clone()], span)?;
                    let frf = self.real_sc(&frf, span)?;
                    let q = self.sc_binary(BinaryFn::Add, frf, ve.get(j));
                    let q_inv = self.sc_binary(BinaryFn::Div, Sc::C(1.0), q);
                    let e = self.sc_binary(BinaryFn::Sub, ye.get(j), fa);
                    let aa = self.binop(BinOp::Mul, &rf, &Val::Real(q_inv), span)?;
                    let step = self.binop(BinOp::Mul, &aa, &Val::Real(e), span)?;
                    a = self.binop(BinOp::Add, &a, &step, span)?;
                    let aat = self.transpose(&aa, span)?;
                    let outer = self.matmul(&aa, &aat, span)?;
                    let outer = self.binop(BinOp::Mul, &outer, &Val::Real(q), span)?;
                    rr = self.binop(BinOp::Sub, &rr, &outer, span)?;
                    let lq = self.sc_unary(crate::kernels::UnaryFn::Log, q);
                    let e2 = self.sc_binary(BinaryFn::Mul, e, e);
                    let e2q = self.sc_binary(BinaryFn::Mul, e2, q_inv);
                    let s = self.sc_binary(BinaryFn::Add, lq, e2q);
                    let s = self.sc_binary(BinaryFn::Mul, s, Sc::C(-0.5));
                    lp = self.sc_binary(BinaryFn::Add, lp, s);
                }
                m = a;
                c = rr;
            } else {
                // Predict the observation and filter.
                let fcast = self.matmul(&ft, &a, span)?;
                let frf = self.call("quad_form_sym", vec![rr.clone(), f.clone()], span)?;
                let q = self.binop(BinOp::Add, &frf, &v, span)?;
                let q_inv = self.call("inverse_spd", vec![q.clone()], span)?;
                let e = self.binop(BinOp::Sub, &yi, &fcast, span)?;
                let rf = self.matmul(&rr, &f, span)?;
                let aa = self.matmul(&rf, &q_inv, span)?;
                let step = self.matmul(&aa, &e, span)?;
                m = self.binop(BinOp::Add, &a, &step, span)?;
                let aat = self.transpose(&aa, span)?;
                let aqa = self.call("quad_form_sym", vec![q.clone(), aat], span)?;
                c = self.binop(BinOp::Sub, &rr, &aqa, span)?;
                let ld = self.call("log_determinant_spd", vec![q], span)?;
                let ld = self.real_sc(&ld, span)?;
                let quad = self.call("trace_quad_form", vec![q_inv, e], span)?;
                let quad = self.real_sc(&quad, span)?;
                let s = self.sc_binary(BinaryFn::Add, ld, quad);
                let s = self.sc_binary(BinaryFn::Mul, s, Sc::C(-0.5));
                lp = self.sc_binary(BinaryFn::Add, lp, s);
            }
        }
        Ok(lp)
    }
}

impl<'p> Tracer<'p> {
    /// `hypergeometric_2F1(a, b, c, z)`, `hypergeometric_3F2(a, b, z)` and
    /// `hypergeometric_pFq(a, b, z)` (a and b any vector-like container): one
    /// [`crate::tape::Op::MvDist`] of family `Hypergeometric` whose value and partials come
    /// from `hazel_math::special::hypergeometric_pfq_grad`, or a constant when all are data.
    pub fn hypergeometric_call(&mut self, name: &str, args: &[Val], span: Span) -> R<Option<Val>> {
        use super::value::Elems;
        use crate::mvdist::{MvFamily, MvSpec};
        let (a, b, z) = match name {
            "hypergeometric_2F1" => {
                if args.len() != 4 {
                    return cerr("hypergeometric_2F1 takes 4 arguments", span);
                }
                let ab: Vec<Sc> = [&args[0], &args[1]]
                    .iter()
                    .map(|v| self.to_elems(v).get(0))
                    .collect();
                (
                    Elems::from_scalars_or_empty(ab),
                    self.to_elems(&args[2]),
                    self.to_elems(&args[3]),
                )
            }
            "hypergeometric_3F2" | "hypergeometric_pFq" => {
                if args.len() != 3 {
                    return cerr(format!("{name} takes 3 arguments"), span);
                }
                (
                    self.to_elems(&args[0]),
                    self.to_elems(&args[1]),
                    self.to_elems(&args[2]),
                )
            }
            _ => return Ok(None),
        };
        if name == "hypergeometric_3F2" && (a.len() != 3 || b.len() != 2) {
            return eerr(
                format!(
                    "hypergeometric_3F2: a must have 3 elements and b 2, found {} and {}",
                    a.len(),
                    b.len()
                ),
                span,
            );
        }
        let spec = MvSpec {
            family: MvFamily::Hypergeometric,
            ints: Box::new([]),
            n: a.len(),
            n_obs: b.len(),
        };
        let elems = [a, b, z];
        if let Some(consts) = elems.iter().map(|e| e.consts()).collect::<Option<Vec<_>>>() {
            let vals: Vec<&[f64]> = consts.iter().map(|v| v.as_slice()).collect();
            let terms = spec.terms(false, &[false; 3]);
            let mut grads = [None, None, None, None];
            let v = spec.eval(&vals, terms, &mut grads, &mut []).map_err(|e| {
                super::trace::TraceErr::Eval(hazel_density::EvalError::domain(e.message), span)
            })?;
            return Ok(Some(Val::real(v)));
        }
        let argv: Vec<_> = elems.iter().map(|e| self.elems_arg(e)).collect();
        let out = self.b.mv_dist(spec, argv, false);
        Ok(Some(Val::Real(Sc::V(out.off))))
    }
}
