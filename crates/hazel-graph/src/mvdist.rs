//! The multivariate density op ([`crate::tape::Op::MvDist`]): one log density of a family
//! whose value and gradient rules live in `hazel_math::linalg::densities`. The forward sweep
//! calls the hazel-math function once, writing the value and the partials of every varying
//! argument into the op's scratch; the backward sweep scales those partials by the output's
//! adjoint. Integer variates (counts, ordinal outcomes) are data and live in the op itself.

use hazel_density::EvalError;
use hazel_math::dist::{MathError, Terms};
use hazel_math::linalg as la;

/// The families lowered through [`MvSpec`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MvFamily {
    /// args: eta, cuts; ints: outcomes; `n` = number of cutpoints.
    OrderedLogistic,
    OrderedProbit,
    /// args: theta; ints: counts.
    Multinomial,
    /// args: beta; ints: counts.
    MultinomialLogit,
    /// args: y, nu, mu, Sigma; `n` = dimension, `n_obs` = observations.
    MultiStudentT,
    /// args: y, nu, mu, L.
    MultiStudentTCholesky,
    /// args: y, mu, Omega.
    MultiNormalPrec,
    /// args: L, eta; `n` = K.
    LkjCorrCholesky,
    /// args: Omega, eta; `n` = K.
    LkjCorr,
    /// args: alpha; ints: counts.
    DirichletMultinomial,
    /// args: W, nu, S; `n` = K.
    Wishart,
    InvWishart,
    /// args: L_W, nu, L_S; `n` = K.
    WishartCholesky,
    InvWishartCholesky,
    /// args: y (`n_obs × n`), Sigma, w; `n` = points, `n_obs` = outputs.
    MultiGp,
    /// args: y, L, w.
    MultiGpCholesky,
    /// args: y, mu, sigma, eta; `n` = K.
    LkjCov,
    /// `hmm_marginal`; args: log_omega, Gamma, rho; `n` = states, `n_obs` = observations.
    HmmMarginal,
    /// args: theta (`n_obs` vectors of `n`); ints: outcomes.
    PoissonBinomial(hazel_math::dist::poisson_binomial::PbTail),
    /// Not a density: `pFq(a; b; z)` with its partials (`hypergeometric_2F1`, `_3F2`,
    /// `_pFq`). args: a (`n`), b (`n_obs`), z.
    Hypergeometric,
}

/// Everything about one density op that is fixed when the graph is built.
#[derive(Debug, Clone)]
pub struct MvSpec {
    pub family: MvFamily,
    /// Integer variates (empty for continuous families).
    pub ints: Box<[i64]>,
    pub n: usize,
    pub n_obs: usize,
}

/// At most this many real arguments.
pub const MAX_ARGS: usize = 4;

impl MvSpec {
    /// Bit of the first real argument in the hazel-math function's `Terms` mask: integer
    /// variates are bit 0 and never vary.
    fn first_bit(&self) -> u32 {
        match self.family {
            MvFamily::OrderedLogistic
            | MvFamily::OrderedProbit
            | MvFamily::Multinomial
            | MvFamily::MultinomialLogit
            | MvFamily::DirichletMultinomial
            | MvFamily::PoissonBinomial(_) => 1,
            _ => 0,
        }
    }

    /// The `Terms` of this op given which of its real arguments vary.
    pub fn terms(&self, propto: bool, varying: &[bool]) -> Terms {
        let mut mask = 0;
        for (i, v) in varying.iter().enumerate() {
            if *v {
                mask |= 1 << (i as u32 + self.first_bit());
            }
        }
        Terms {
            propto,
            varying: mask,
        }
    }

    /// Scratch the hazel-math function needs beyond the partials.
    pub fn workspace_len(&self) -> usize {
        match self.family {
            MvFamily::MultiStudentT => la::multi_student_t_workspace_len(self.n),
            MvFamily::MultiStudentTCholesky => la::multi_student_t_cholesky_workspace_len(self.n),
            MvFamily::MultiNormalPrec => la::multi_normal_prec_workspace_len(self.n),
            MvFamily::LkjCorr => 2 * self.n * self.n,
            MvFamily::Wishart | MvFamily::InvWishart => la::wishart_workspace_len(self.n),
            MvFamily::WishartCholesky | MvFamily::InvWishartCholesky => {
                la::wishart_cholesky_workspace_len(self.n)
            }
            MvFamily::MultiGp => la::multi_gp_workspace_len(self.n),
            MvFamily::MultiGpCholesky => la::multi_gp_cholesky_workspace_len(self.n),
            MvFamily::LkjCov => la::lkj_cov_workspace_len(self.n),
            MvFamily::HmmMarginal => la::hmm::hmm_workspace_len(self.n, self.n_obs),
            MvFamily::PoissonBinomial(_) => {
                hazel_math::dist::poisson_binomial::poisson_binomial_workspace_len(self.n)
            }
            _ => 0,
        }
    }

    /// Value of the density at `args`, adding the partials of every argument whose slot in
    /// `grads` is `Some`.
    pub fn eval(
        &self,
        args: &[&[f64]],
        terms: Terms,
        grads: &mut [Option<&mut [f64]>; MAX_ARGS],
        ws: &mut [f64],
    ) -> Result<f64, MathError> {
        let [g0, g1, g2, g3] = grads;
        let (n, n_obs) = (self.n, self.n_obs);
        match self.family {
            MvFamily::OrderedLogistic | MvFamily::OrderedProbit => {
                let f = if self.family == MvFamily::OrderedLogistic {
                    la::ordered_logistic_lpmf
                } else {
                    la::ordered_probit_lpmf
                };
                f(
                    &self.ints,
                    args[0],
                    args[1],
                    n,
                    terms,
                    g0.as_deref_mut(),
                    g1.as_deref_mut(),
                )
            }
            MvFamily::Multinomial | MvFamily::MultinomialLogit => {
                let f = if self.family == MvFamily::Multinomial {
                    la::multinomial_lpmf
                } else {
                    la::multinomial_logit_lpmf
                };
                f(&self.ints, args[0], terms, g0.as_deref_mut())
            }
            MvFamily::MultiStudentT | MvFamily::MultiStudentTCholesky => {
                let f = if self.family == MvFamily::MultiStudentT {
                    la::multi_student_t_lpdf
                } else {
                    la::multi_student_t_cholesky_lpdf
                };
                f(
                    args[0],
                    args[1][0],
                    args[2],
                    args[3],
                    n,
                    n_obs,
                    terms,
                    g0.as_deref_mut(),
                    first(g1),
                    g2.as_deref_mut(),
                    g3.as_deref_mut(),
                    ws,
                )
            }
            MvFamily::MultiNormalPrec => la::multi_normal_prec_lpdf(
                args[0],
                args[1],
                args[2],
                n,
                n_obs,
                terms,
                g0.as_deref_mut(),
                g1.as_deref_mut(),
                g2.as_deref_mut(),
                ws,
            ),
            MvFamily::LkjCorrCholesky => la::lkj_corr_cholesky_lpdf(
                args[0],
                n,
                args[1][0],
                terms,
                g0.as_deref_mut(),
                first(g1),
            ),
            MvFamily::DirichletMultinomial => {
                la::dirichlet_multinomial_lpmf(&self.ints, args[0], terms, g0.as_deref_mut())
            }
            MvFamily::Wishart
            | MvFamily::InvWishart
            | MvFamily::WishartCholesky
            | MvFamily::InvWishartCholesky => {
                let f = match self.family {
                    MvFamily::Wishart => la::wishart_lpdf,
                    MvFamily::InvWishart => la::inv_wishart_lpdf,
                    MvFamily::WishartCholesky => la::wishart_cholesky_lpdf,
                    _ => la::inv_wishart_cholesky_lpdf,
                };
                f(
                    args[0],
                    args[1][0],
                    args[2],
                    n,
                    terms,
                    g0.as_deref_mut(),
                    first(g1),
                    g2.as_deref_mut(),
                    ws,
                )
            }
            MvFamily::MultiGp | MvFamily::MultiGpCholesky => {
                let f = if self.family == MvFamily::MultiGp {
                    la::multi_gp_lpdf
                } else {
                    la::multi_gp_cholesky_lpdf
                };
                f(
                    args[0],
                    args[1],
                    args[2],
                    n_obs,
                    n,
                    terms,
                    g0.as_deref_mut(),
                    g1.as_deref_mut(),
                    g2.as_deref_mut(),
                    ws,
                )
            }
            MvFamily::LkjCov => la::lkj_cov_lpdf(
                args[0],
                args[1],
                args[2],
                args[3][0],
                n,
                terms,
                g0.as_deref_mut(),
                g1.as_deref_mut(),
                g2.as_deref_mut(),
                first(g3),
                ws,
            ),
            MvFamily::HmmMarginal => la::hmm::hmm_marginal(
                args[0],
                args[1],
                args[2],
                n,
                n_obs,
                g0.as_deref_mut(),
                g1.as_deref_mut(),
                g2.as_deref_mut(),
                ws,
            ),
            MvFamily::PoissonBinomial(tail) => {
                hazel_math::dist::poisson_binomial::poisson_binomial(
                    tail,
                    &self.ints,
                    args[0],
                    n,
                    n_obs,
                    terms,
                    g0.as_deref_mut(),
                    ws,
                )
            }
            MvFamily::Hypergeometric => {
                let z = args[2][0];
                if n == 2 && n_obs == 1 {
                    let (v, g) = hazel_math::special::hypergeometric_2f1_grad(
                        args[0][0], args[0][1], args[1][0], z,
                    )?;
                    if let Some(d) = g0.as_deref_mut() {
                        d[0] += g[0];
                        d[1] += g[1];
                    }
                    if let Some(d) = g1.as_deref_mut() {
                        d[0] += g[2];
                    }
                    if let Some(d) = first(g2) {
                        *d += g[3];
                    }
                    Ok(v)
                } else {
                    let (v, dz) = hazel_math::special::hypergeometric_pfq_grad(
                        "hypergeometric_pFq",
                        args[0],
                        args[1],
                        z,
                        g0.as_deref_mut(),
                        g1.as_deref_mut(),
                    )?;
                    if let Some(d) = first(g2) {
                        *d += dz;
                    }
                    Ok(v)
                }
            }
            MvFamily::LkjCorr => la::lkj_corr_lpdf(
                args[0],
                n,
                args[1][0],
                terms,
                g0.as_deref_mut(),
                first(g1),
                ws,
            ),
        }
    }
}

/// Forward rule: `scratch[sc..]` holds one partials run per argument (its length), then the
/// workspace. Returns the log density.
pub fn forward(
    spec: &MvSpec,
    args: &[crate::tape::Arg],
    propto: bool,
    sc: u32,
    lo: &[f64],
    consts: &[f64],
    scratch: &mut [f64],
) -> Result<f64, EvalError> {
    let mut vals: [&[f64]; MAX_ARGS] = [&[]; MAX_ARGS];
    let mut varying = [false; MAX_ARGS];
    for (i, a) in args.iter().enumerate() {
        vals[i] = crate::tape::read(*a, lo, consts);
        varying[i] = a.is_var();
    }
    let terms = spec.terms(propto, &varying[..args.len()]);
    let mut rest = &mut scratch[sc as usize..];
    let mut grads: [Option<&mut [f64]>; MAX_ARGS] = [None, None, None, None];
    for (i, a) in args.iter().enumerate() {
        let (g, r) = rest.split_at_mut(a.len());
        rest = r;
        if a.is_var() {
            g.iter_mut().for_each(|v| *v = 0.0);
            grads[i] = Some(g);
        }
    }
    let ws = &mut rest[..spec.workspace_len()];
    spec.eval(&vals[..args.len()], terms, &mut grads, ws)
        .map_err(|e| EvalError::domain(e.message))
}

/// Backward rule: adds `g ×` the partials stored by the forward sweep.
pub fn backward(args: &[crate::tape::Arg], sc: u32, g: f64, scratch: &[f64], adj: &mut [f64]) {
    let mut off = sc as usize;
    for a in args {
        if a.is_var() {
            let p = &scratch[off..off + a.len()];
            for (d, v) in adj[a.range()].iter_mut().zip(p) {
                *d += g * v;
            }
        }
        off += a.len();
    }
}

fn first<'a>(g: &'a mut Option<&mut [f64]>) -> Option<&'a mut f64> {
    g.as_deref_mut().map(|s| &mut s[0])
}
