//! Lowering of the multivariate and ordinal families whose value and gradient rules are one
//! hazel-math function each (`hazel_math::linalg::densities`): the arguments become runs of
//! the value buffer (or constants) and the density one [`crate::tape::Op::MvDist`]. When every
//! argument is data the density is evaluated on the spot.

use super::trace::{cerr, eerr, TraceErr, Tracer, R};
use super::value::{Elems, Sc, Val};
use crate::mvdist::{MvFamily, MvSpec, MAX_ARGS};
use hazel_math::dist::poisson_binomial::PbTail;
use hazel_syntax::Span;

/// The family behind a distribution name, if it is lowered here.
pub fn mv_family(name: &str) -> Option<MvFamily> {
    Some(match name {
        "ordered_logistic" => MvFamily::OrderedLogistic,
        "ordered_probit" => MvFamily::OrderedProbit,
        "multinomial" => MvFamily::Multinomial,
        "multinomial_logit" => MvFamily::MultinomialLogit,
        "multi_student_t" => MvFamily::MultiStudentT,
        "multi_student_t_cholesky" => MvFamily::MultiStudentTCholesky,
        "multi_normal_prec" => MvFamily::MultiNormalPrec,
        "lkj_corr_cholesky" => MvFamily::LkjCorrCholesky,
        "lkj_corr" => MvFamily::LkjCorr,
        "dirichlet_multinomial" => MvFamily::DirichletMultinomial,
        "wishart" => MvFamily::Wishart,
        "inv_wishart" => MvFamily::InvWishart,
        "wishart_cholesky" => MvFamily::WishartCholesky,
        "inv_wishart_cholesky" => MvFamily::InvWishartCholesky,
        "multi_gp" => MvFamily::MultiGp,
        "multi_gp_cholesky" => MvFamily::MultiGpCholesky,
        "lkj_cov" => MvFamily::LkjCov,
        // The cdfs are reached by these names from the `_lcdf`/`_lccdf` calls.
        "poisson_binomial" => MvFamily::PoissonBinomial(PbTail::Mass),
        "poisson_binomial_lcdf" => MvFamily::PoissonBinomial(PbTail::Lower),
        "poisson_binomial_lccdf" => MvFamily::PoissonBinomial(PbTail::Upper),
        _ => return None,
    })
}

/// One value or an array of them, as a list.
fn items(v: &Val) -> Vec<Val> {
    match v {
        Val::Array(xs) => xs.to_vec(),
        v => vec![v.clone()],
    }
}

impl<'p> Tracer<'p> {
    /// All scalars of `parts`, concatenated, as one argument run.
    fn mv_elems(&self, parts: &[Val]) -> Elems {
        if let [one] = parts {
            return self.to_elems(one);
        }
        let mut sc = Vec::new();
        for p in parts {
            sc.extend(self.to_elems(p).to_scalars());
        }
        Elems::from_scalars_or_empty(sc)
    }

    fn mv_ints(&self, v: &Val, name: &str, span: Span) -> R<Vec<i64>> {
        match v {
            Val::Int(i) => Ok(vec![*i]),
            Val::Array(xs) => xs.iter().map(|x| self.as_int(x, span)).collect(),
            _ => cerr(
                format!("{name}: the outcome must be an int or an int array"),
                span,
            ),
        }
    }

    /// Square matrix size.
    fn mv_square(&self, v: &Val, name: &str, what: &str, span: Span) -> R<usize> {
        match v {
            Val::Matrix(r, c, _) if r == c => Ok(*r),
            Val::Matrix(r, c, _) => eerr(
                format!("{name}: Expecting a square matrix; rows of {what} ({r}) and columns of {what} ({c}) must match in size"),
                span,
            ),
            _ => cerr(format!("{name}: {what} must be a matrix"), span),
        }
    }

    /// Variate and location of the multivariate normal/Student-t families: `n_obs` vectors of
    /// length `n` each (a single vector is shared; a single variate is repeated when there are
    /// several locations).
    fn mv_obs(
        &self,
        y: &Val,
        mu: &Val,
        n: usize,
        name: &str,
        span: Span,
    ) -> R<(Elems, Elems, usize)> {
        let ys = items(y);
        let mus = items(mu);
        // Stan: as many observations as the longer list; none when either is empty.
        let n_obs = if ys.is_empty() || mus.is_empty() {
            0
        } else {
            ys.len().max(mus.len())
        };
        if ys.len() != mus.len() && ys.len() != 1 && mus.len() != 1 {
            return eerr(
                format!(
                    "{name}: Size of random variable ({}) and size of location parameter ({}) must match in size",
                    ys.len(),
                    mus.len()
                ),
                span,
            );
        }
        for v in ys.iter().chain(mus.iter()) {
            let len = self.to_elems(v).len();
            if len != n {
                return eerr(
                    format!("{name}: Size of random variable ({len}) and rows of the matrix argument ({n}) must match in size"),
                    span,
                );
            }
        }
        if n_obs == 0 {
            let empty = Elems::from_scalars_or_empty(vec![]);
            let mu = if mus.len() == 1 {
                self.to_elems(&mus[0])
            } else {
                empty.clone()
            };
            return Ok((empty, mu, 0));
        }
        let ye = if ys.len() == 1 && n_obs > 1 {
            let one = self.to_elems(&ys[0]).to_scalars();
            Elems::from_scalars_or_empty((0..n_obs).flat_map(|_| one.iter().copied()).collect())
        } else {
            self.mv_elems(&ys)
        };
        Ok((ye, self.mv_elems(&mus), n_obs))
    }

    /// `name(args)` for a family of [`mv_family`]: `Some(log density)`, or `None` if `name`
    /// is not one of them.
    pub fn mv_density(
        &mut self,
        name: &str,
        args: &[Val],
        propto: bool,
        span: Span,
    ) -> R<Option<Sc>> {
        let Some(family) = mv_family(name) else {
            return Ok(None);
        };
        let arity = match family {
            MvFamily::Multinomial
            | MvFamily::MultinomialLogit
            | MvFamily::DirichletMultinomial
            | MvFamily::PoissonBinomial(_) => 2,
            MvFamily::OrderedLogistic
            | MvFamily::OrderedProbit
            | MvFamily::MultiNormalPrec
            | MvFamily::Wishart
            | MvFamily::InvWishart
            | MvFamily::WishartCholesky
            | MvFamily::InvWishartCholesky
            | MvFamily::MultiGp
            | MvFamily::MultiGpCholesky
            | MvFamily::HmmMarginal => 3,
            MvFamily::MultiStudentT | MvFamily::MultiStudentTCholesky | MvFamily::LkjCov => 4,
            MvFamily::LkjCorrCholesky | MvFamily::LkjCorr => 2,
            // Not a density (never named by `mv_family`).
            MvFamily::Hypergeometric => return Ok(None),
        };
        if args.len() != arity {
            return cerr(format!("{name} takes {arity} arguments"), span);
        }
        let scalar_elems = |t: &Self, v: &Val, what: &str| -> R<Elems> {
            match v {
                Val::Int(_) | Val::Real(_) => Ok(t.to_elems(v)),
                _ => cerr(format!("{name}: {what} must be a scalar"), span),
            }
        };
        let (ints, n, n_obs, elems): (Box<[i64]>, usize, usize, Vec<Elems>) = match family {
            // Not a density: lowered by `hof::hmm_call`.
            MvFamily::HmmMarginal => return Ok(None),
            MvFamily::OrderedLogistic | MvFamily::OrderedProbit => {
                let ys = self.mv_ints(&args[0], name, span)?;
                let eta = self.to_elems(&args[1]);
                let cuts = items(&args[2]);
                let k1 = cuts.first().map_or(0, |c| self.to_elems(c).len());
                if let Some(c) = cuts.iter().find(|c| self.to_elems(c).len() != k1) {
                    return eerr(
                        format!(
                            "{name}: cutpoint vectors have sizes {k1} and {}; all must match",
                            self.to_elems(c).len()
                        ),
                        span,
                    );
                }
                if cuts.len() > 1 && cuts.len() != ys.len() {
                    return eerr(format!("{name}: Size of integers ({}) and number of cutpoint vectors ({}) must match in size", ys.len(), cuts.len()), span);
                }
                if eta.len() != ys.len() && eta.len() != 1 {
                    return eerr(
                        format!(
                            "{name}: Size of integers ({}) and locations ({}) must match in size",
                            ys.len(),
                            eta.len()
                        ),
                        span,
                    );
                }
                let ce = self.mv_elems(&cuts);
                let n_obs = ys.len();
                (ys.into(), k1, n_obs, vec![eta, ce])
            }
            MvFamily::Multinomial | MvFamily::MultinomialLogit | MvFamily::DirichletMultinomial => {
                let ns = self.mv_ints(&args[0], name, span)?;
                let th = self.to_elems(&args[1]);
                (ns.into(), th.len(), 1, vec![th])
            }
            MvFamily::MultiStudentT | MvFamily::MultiStudentTCholesky => {
                let n = self.mv_square(&args[3], name, "scale parameter", span)?;
                let nu = scalar_elems(self, &args[1], "Degrees of freedom parameter")?;
                let (y, mu, n_obs) = self.mv_obs(&args[0], &args[2], n, name, span)?;
                let m = self.to_elems(&args[3]);
                (Box::new([]), n, n_obs, vec![y, nu, mu, m])
            }
            MvFamily::MultiNormalPrec => {
                let n = self.mv_square(&args[2], name, "precision parameter", span)?;
                let (y, mu, n_obs) = self.mv_obs(&args[0], &args[1], n, name, span)?;
                let m = self.to_elems(&args[2]);
                (Box::new([]), n, n_obs, vec![y, mu, m])
            }
            MvFamily::Wishart
            | MvFamily::InvWishart
            | MvFamily::WishartCholesky
            | MvFamily::InvWishartCholesky => {
                let k = self.mv_square(&args[0], name, "random variable", span)?;
                let k2 = self.mv_square(&args[2], name, "scale parameter", span)?;
                if k != k2 {
                    return eerr(format!("{name}: Rows of random variable ({k}) and columns of scale parameter ({k2}) must match in size"), span);
                }
                let nu = scalar_elems(self, &args[1], "Degrees of freedom parameter")?;
                let (w, s) = (self.to_elems(&args[0]), self.to_elems(&args[2]));
                (Box::new([]), k, 1, vec![w, nu, s])
            }
            MvFamily::MultiGp | MvFamily::MultiGpCholesky => {
                let (m, n) = match &args[0] {
                    Val::Matrix(r, c, _) => (*r, *c),
                    _ => {
                        return cerr(
                            format!("{name}: the random variable must be a matrix"),
                            span,
                        )
                    }
                };
                let n2 = self.mv_square(&args[1], name, "kernel", span)?;
                if n != n2 {
                    return eerr(format!("{name}: Size of random variable ({n}) and rows of covariance parameter ({n2}) must match in size"), span);
                }
                let (y, k, w) = (
                    self.to_elems(&args[0]),
                    self.to_elems(&args[1]),
                    self.to_elems(&args[2]),
                );
                (Box::new([]), n, m, vec![y, k, w])
            }
            MvFamily::LkjCov => {
                let k = self.mv_square(&args[0], name, "random variable", span)?;
                let eta = scalar_elems(self, &args[3], "Shape parameter")?;
                let (y, mu, sigma) = (
                    self.to_elems(&args[0]),
                    self.to_elems(&args[1]),
                    self.to_elems(&args[2]),
                );
                (Box::new([]), k, 1, vec![y, mu, sigma, eta])
            }
            MvFamily::Hypergeometric => return Ok(None),
            MvFamily::PoissonBinomial(_) => {
                let ys = self.mv_ints(&args[0], name, span)?;
                // One probability vector (vector, row vector or array of reals) or an array
                // of vectors, one per outcome.
                let thetas = match &args[1] {
                    Val::Array(xs)
                        if xs.iter().all(|x| matches!(x, Val::Int(_) | Val::Real(_))) =>
                    {
                        vec![args[1].clone()]
                    }
                    v => items(v),
                };
                let n = thetas.first().map_or(0, |t| self.to_elems(t).len());
                if thetas.iter().any(|t| self.to_elems(t).len() != n) {
                    return eerr(format!("{name}: probability vectors differ in size"), span);
                }
                let n_obs = thetas.len();
                (ys.into(), n, n_obs, vec![self.mv_elems(&thetas)])
            }
            MvFamily::LkjCorrCholesky | MvFamily::LkjCorr => {
                let k = self.mv_square(&args[0], name, "random variable", span)?;
                let eta = scalar_elems(self, &args[1], "Shape parameter")?;
                let m = self.to_elems(&args[0]);
                (Box::new([]), k, 1, vec![m, eta])
            }
        };
        let spec = MvSpec {
            family,
            ints,
            n,
            n_obs,
        };
        debug_assert!(elems.len() <= MAX_ARGS);
        // All data: evaluate now (this also reports invalid data at the statement).
        if let Some(consts) = elems.iter().map(|e| e.consts()).collect::<Option<Vec<_>>>() {
            let vals: Vec<&[f64]> = consts.iter().map(|v| v.as_slice()).collect();
            let terms = spec.terms(propto, &vec![false; vals.len()]);
            let mut ws = vec![0.0; spec.workspace_len()];
            let mut grads = [None, None, None, None];
            let v = spec
                .eval(&vals, terms, &mut grads, &mut ws)
                .map_err(|e| TraceErr::Eval(hazel_density::EvalError::domain(e.message), span))?;
            return Ok(Some(Sc::C(v)));
        }
        let args: Vec<_> = elems.iter().map(|e| self.elems_arg(e)).collect();
        let out = self.b.mv_dist(spec, args, propto);
        Ok(Some(Sc::V(out.off)))
    }
}

/// Whether `<base>_rng` is drawn by [`Tracer::mv_rng`].
pub fn has_mv_rng(base: &str) -> bool {
    matches!(
        base,
        "ordered_logistic"
            | "ordered_probit"
            | "multinomial"
            | "multinomial_logit"
            | "dirichlet_multinomial"
            | "multi_student_t"
            | "multi_student_t_cholesky"
            | "lkj_corr"
            | "lkj_corr_cholesky"
            | "wishart"
            | "wishart_cholesky"
            | "inv_wishart"
            | "inv_wishart_cholesky"
    )
}

impl<'p> Tracer<'p> {
    /// `<base>_rng(args)` for the families of [`has_mv_rng`] (generated quantities only, every
    /// argument known). Stan's vectorised multivariate rngs (an array of locations) return an
    /// array of draws.
    pub fn mv_rng(&mut self, base: &str, args: &[Val], span: Span) -> R<Option<Val>> {
        use hazel_math::dist::mv_rng as mv;
        if !has_mv_rng(base) {
            return Ok(None);
        }
        let name = format!("{base}_rng");
        let domain = |e: hazel_math::dist::MathError| {
            TraceErr::Eval(hazel_density::EvalError::domain(e.message), span)
        };
        let want = match base {
            "lkj_corr" | "lkj_corr_cholesky" => 2,
            "multinomial" | "multinomial_logit" | "dirichlet_multinomial" => 2,
            "ordered_logistic" | "ordered_probit" => 2,
            "wishart" | "wishart_cholesky" | "inv_wishart" | "inv_wishart_cholesky" => 2,
            _ => 3,
        };
        if args.len() != want {
            return cerr(format!("{name} takes {want} arguments"), span);
        }
        let mut vals: Vec<Vec<f64>> = Vec::with_capacity(args.len());
        for a in args {
            vals.push(self.const_vec_of(a, span)?);
        }
        let Some(rng) = self.rng.as_mut() else {
            return cerr(
                format!("{name} is only allowed in transformed data and generated quantities"),
                span,
            );
        };
        let ints = |v: Vec<i64>| Val::array(v.into_iter().map(Val::Int).collect());
        let matrix = |k: usize, v: Vec<f64>| Val::Matrix(k, k, Elems::C(std::sync::Arc::new(v)));
        let out = match base {
            "ordered_logistic" | "ordered_probit" => {
                let f = if base == "ordered_logistic" {
                    mv::ordered_logistic_rng
                } else {
                    mv::ordered_probit_rng
                };
                let eta = *vals[0].first().unwrap_or(&f64::NAN);
                Val::Int(f(eta, &vals[1], rng).map_err(domain)?)
            }
            "multinomial" | "multinomial_logit" | "dirichlet_multinomial" => {
                let n = match &args[1] {
                    Val::Int(n) => *n,
                    _ => return cerr(format!("{name}: the number of trials must be an int"), span),
                };
                let k = vals[0].len();
                let mut out = vec![0i64; k];
                let mut ws = vec![0.0; k];
                match base {
                    "multinomial" => mv::multinomial_rng(&vals[0], n, &mut out, rng),
                    "multinomial_logit" => {
                        mv::multinomial_logit_rng(&vals[0], n, &mut out, &mut ws, rng)
                    }
                    _ => mv::dirichlet_multinomial_rng(&vals[0], n, &mut out, &mut ws, rng),
                }
                .map_err(domain)?;
                ints(out)
            }
            "multi_student_t" | "multi_student_t_cholesky" => {
                let nu = self_scalar(&vals[0], &name, span)?;
                let mus = items(&args[1]);
                let n = match &args[2] {
                    Val::Matrix(r, c, _) if r == c => *r,
                    _ => return cerr(format!("{name}: the scale must be a square matrix"), span),
                };
                let mut draws = Vec::with_capacity(mus.len());
                let mut ws = vec![0.0; n * n];
                for (i, _) in mus.iter().enumerate() {
                    let mu = &vals[1][i * n..(i + 1) * n];
                    let mut out = vec![0.0; n];
                    if base == "multi_student_t" {
                        mv::multi_student_t_rng(nu, mu, &vals[2], &mut out, &mut ws, rng)
                    } else {
                        mv::multi_student_t_cholesky_rng(nu, mu, &vals[2], &mut out, rng)
                    }
                    .map_err(domain)?;
                    draws.push(Val::Vector(Elems::C(std::sync::Arc::new(out))));
                }
                if matches!(args[1], Val::Array(_)) {
                    Val::array(draws)
                } else {
                    draws
                        .pop()
                        .unwrap_or(Val::Vector(Elems::C(std::sync::Arc::new(vec![]))))
                }
            }
            "lkj_corr" | "lkj_corr_cholesky" => {
                let k = match &args[0] {
                    Val::Int(k) if *k >= 0 => *k as usize,
                    _ => {
                        return eerr(
                            format!("{name}: the dimension must be a nonnegative int"),
                            span,
                        )
                    }
                };
                let eta = self_scalar(&vals[1], &name, span)?;
                let mut out = vec![0.0; k * k];
                let mut ws = vec![0.0; k * k + k];
                if base == "lkj_corr" {
                    mv::lkj_corr_rng(k, eta, &mut out, &mut ws, rng)
                } else {
                    mv::lkj_corr_cholesky_rng(k, eta, &mut out, &mut ws, rng)
                }
                .map_err(domain)?;
                matrix(k, out)
            }
            _ => {
                // The Wishart family: (nu, scale matrix).
                let nu = self_scalar(&vals[0], &name, span)?;
                let k = match &args[1] {
                    Val::Matrix(r, c, _) if r == c => *r,
                    _ => return cerr(format!("{name}: the scale must be a square matrix"), span),
                };
                let mut out = vec![0.0; k * k];
                let mut ws = vec![0.0; 7 * k * k];
                match base {
                    "wishart" => mv::wishart_rng(nu, &vals[1], k, &mut out, &mut ws, rng),
                    "wishart_cholesky" => {
                        mv::wishart_cholesky_rng(nu, &vals[1], k, &mut out, &mut ws, rng)
                    }
                    "inv_wishart" => mv::inv_wishart_rng(nu, &vals[1], k, &mut out, &mut ws, rng),
                    _ => mv::inv_wishart_cholesky_rng(nu, &vals[1], k, &mut out, &mut ws, rng),
                }
                .map_err(domain)?;
                matrix(k, out)
            }
        };
        Ok(Some(out))
    }

    /// Every scalar of a known value, in memory order.
    fn const_vec_of(&self, v: &Val, span: Span) -> R<Vec<f64>> {
        let mut sc = Vec::new();
        v.flatten(&mut sc);
        sc.into_iter().map(|s| self.value_of(s, span)).collect()
    }
}

fn self_scalar(v: &[f64], name: &str, span: Span) -> R<f64> {
    match v {
        [x] => Ok(*x),
        _ => cerr(format!("{name}: expected a scalar argument"), span),
    }
}
