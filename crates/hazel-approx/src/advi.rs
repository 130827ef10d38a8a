//! Automatic differentiation variational inference (Kucukelbir et al. 2017) as CmdStan's
//! `variational` runs it:
//!
//! * a Gaussian family on the unconstrained space, mean-field (`μ`, `ω = log σ`) or full-rank
//!   (`μ`, lower-triangular `L`), starting at `μ` = the initial point, `ω = 0` / `L = I`;
//! * the ELBO: the mean of the log density with constants (`log_prob<false, true>`) over
//!   `elbo_samples` draws (failed draws are skipped, as many as `elbo_samples` of them) plus the
//!   entropy; its gradient by the reparameterisation trick over `grad_samples` draws (failed
//!   draws retried up to 10 × `grad_samples` times);
//! * stochastic gradient ascent with Stan's adaptive step sequence
//!   `η / √t · g / (1 + √s)`, `s ← 0.9 s + 0.1 g²` (first iteration `s = g²`);
//! * eta adaptation: `adapt_iter` iterations at each of η = 100, 10, 1, 0.1, 0.01 from the
//!   initial approximation, keeping the last η before the ELBO gets worse (Stan's
//!   `adapt_eta`, including its failure when every η diverges);
//! * convergence every `eval_elbo` iterations: the relative ELBO change's mean or median over a
//!   window of `max(0.1 iter / eval_elbo, 2)` evaluations below `tol_rel_obj`.

use crate::dense::dot;
use crate::objective::ModelEval;
use hazel_density::{DensityTerms, LogDensity};
use hazel_rng::StreamRng;

/// `log(2π)`.
const LOG_TWO_PI: f64 = 1.837_877_066_409_345_3;

/// The ELBO's log density: constants kept, Jacobian included (`log_prob<false, true>`).
pub const ELBO_TERMS: DensityTerms = DensityTerms {
    jacobian: true,
    propto: false,
};

/// The variational family (CmdStan's `algorithm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    MeanField,
    FullRank,
}

/// CmdStan's `variational` settings with its names and defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdviOptions {
    pub family: Family,
    /// `iter`: maximum iterations of stochastic gradient ascent.
    pub iter: usize,
    pub grad_samples: usize,
    pub elbo_samples: usize,
    /// `eta`: the step-size scale (replaced by the adapted one when adaptation is engaged).
    pub eta: f64,
    pub adapt_engaged: bool,
    /// `adapt iter`: iterations per trial eta.
    pub adapt_iter: usize,
    pub tol_rel_obj: f64,
    pub eval_elbo: usize,
}

impl Default for AdviOptions {
    fn default() -> Self {
        AdviOptions {
            family: Family::MeanField,
            iter: 10_000,
            grad_samples: 1,
            elbo_samples: 100,
            eta: 1.0,
            adapt_engaged: true,
            adapt_iter: 50,
            tol_rel_obj: 0.01,
            eval_elbo: 100,
        }
    }
}

/// A failure of ADVI, with Stan's wording.
#[derive(Debug, Clone, PartialEq)]
pub struct AdviError(pub String);

impl std::fmt::Display for AdviError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for AdviError {}

/// A member of the family: its parameters as one flat vector, `μ` (d) then `ω` (d) for
/// mean-field or `L` (d × d, column-major, zero above the diagonal) for full-rank, so that the
/// step-size sequence acts elementwise on both.
#[derive(Debug, Clone, PartialEq)]
pub struct Approximation {
    pub family: Family,
    dim: usize,
    params: Vec<f64>,
}

impl Approximation {
    /// The starting approximation at `mean`: `ω = 0` or `L = I`.
    pub fn initial(family: Family, mean: &[f64]) -> Self {
        let d = mean.len();
        let mut a = Self::zeros(family, d);
        a.params[..d].copy_from_slice(mean);
        if family == Family::FullRank {
            for i in 0..d {
                a.params[d + i + i * d] = 1.0;
            }
        }
        a
    }

    fn zeros(family: Family, dim: usize) -> Self {
        let scale = match family {
            Family::MeanField => dim,
            Family::FullRank => dim * dim,
        };
        Approximation {
            family,
            dim,
            params: vec![0.0; dim + scale],
        }
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// `μ`.
    pub fn mean(&self) -> &[f64] {
        &self.params[..self.dim]
    }

    /// `ω` (mean-field) or `L` (full-rank, column-major).
    pub fn scale(&self) -> &[f64] {
        &self.params[self.dim..]
    }

    /// The covariance (column-major `d × d`).
    pub fn covariance(&self) -> Vec<f64> {
        let d = self.dim;
        let mut cov = vec![0.0; d * d];
        match self.family {
            Family::MeanField => {
                for i in 0..d {
                    cov[i + i * d] = (2.0 * self.scale()[i]).exp();
                }
            }
            Family::FullRank => {
                let l = self.scale();
                for j in 0..d {
                    for i in 0..d {
                        cov[i + j * d] = (0..d).fold(0.0, |s, k| s + l[i + k * d] * l[j + k * d]);
                    }
                }
            }
        }
        cov
    }

    /// `ζ = μ + σ ∘ η` or `μ + L η`.
    pub fn transform(&self, eta: &[f64], zeta: &mut [f64]) {
        let d = self.dim;
        let (mu, scale) = self.params.split_at(d);
        match self.family {
            Family::MeanField => {
                for i in 0..d {
                    zeta[i] = eta[i] * scale[i].exp() + mu[i];
                }
            }
            Family::FullRank => {
                crate::dense::lower_mul(scale, d, eta, zeta);
                for i in 0..d {
                    zeta[i] += mu[i];
                }
            }
        }
    }

    /// The entropy: `½ d (1 + log 2π) + Σ ω` or `+ Σ log |L_ii|`.
    pub fn entropy(&self) -> f64 {
        let d = self.dim;
        let base = 0.5 * d as f64 * (1.0 + LOG_TWO_PI);
        match self.family {
            Family::MeanField => base + self.scale().iter().sum::<f64>(),
            Family::FullRank => {
                base + (0..d).fold(0.0, |s, i| s + self.scale()[i + i * d].abs().ln())
            }
        }
    }

    /// A draw into `zeta` (with `eta` as scratch); returns CmdStan's `log_g__`, `−½ ηᵀη`.
    pub fn draw(&self, rng: &mut StreamRng, eta: &mut [f64], zeta: &mut [f64]) -> f64 {
        eta.iter_mut().for_each(|e| *e = rng.normal());
        self.transform(eta, zeta);
        -0.5 * dot(eta, eta)
    }
}

/// The Monte Carlo ELBO of `q` over `samples` draws.
pub fn elbo<M: LogDensity>(
    eval: &mut ModelEval<M>,
    q: &Approximation,
    samples: usize,
    rng: &mut StreamRng,
) -> Result<f64, AdviError> {
    let d = q.dim;
    let (mut eta, mut zeta, mut grad) = (vec![0.0; d], vec![0.0; d], vec![0.0; d]);
    let mut total = 0.0;
    let mut dropped = 0;
    let mut taken = 0;
    while taken < samples {
        q.draw(rng, &mut eta, &mut zeta);
        match eval.log_density(&zeta, &mut grad, ELBO_TERMS) {
            Ok(lp) => {
                total += lp;
                taken += 1;
            }
            Err(e) if e.is_fatal() => return Err(AdviError(e.to_string())),
            Err(_) => {
                dropped += 1;
                if dropped >= samples {
                    return Err(AdviError(format!(
                        "stan::variational::advi::calc_ELBO: The number of dropped evaluations \
                         has reached its maximum amount ({samples}). Your model may be either \
                         severely ill-conditioned or misspecified."
                    )));
                }
            }
        }
    }
    Ok(total / samples as f64 + q.entropy())
}

/// The reparameterisation-gradient of the ELBO with respect to `q`'s parameters, into `out`
/// (same layout as `q`).
pub(crate) fn elbo_gradient<M: LogDensity>(
    eval: &mut ModelEval<M>,
    q: &Approximation,
    samples: usize,
    rng: &mut StreamRng,
    out: &mut Approximation,
) -> Result<(), AdviError> {
    let d = q.dim;
    let (mut eta, mut zeta, mut grad) = (vec![0.0; d], vec![0.0; d], vec![0.0; d]);
    out.params.iter_mut().for_each(|p| *p = 0.0);
    let mut dropped = 0;
    let mut taken = 0;
    while taken < samples {
        q.draw(rng, &mut eta, &mut zeta);
        match eval.log_density(&zeta, &mut grad, DensityTerms::SAMPLER) {
            Ok(_) => {
                let (mu_grad, scale_grad) = out.params.split_at_mut(d);
                for i in 0..d {
                    mu_grad[i] += grad[i];
                }
                match q.family {
                    Family::MeanField => {
                        for i in 0..d {
                            scale_grad[i] += grad[i] * eta[i];
                        }
                    }
                    Family::FullRank => {
                        for j in 0..d {
                            for i in j..d {
                                scale_grad[i + j * d] += grad[i] * eta[j];
                            }
                        }
                    }
                }
                taken += 1;
            }
            Err(e) if e.is_fatal() => return Err(AdviError(e.to_string())),
            Err(_) => {
                dropped += 1;
                if dropped >= 10 * samples {
                    return Err(AdviError(format!(
                        "stan::variational::calc_grad: The number of dropped evaluations has \
                         reached its maximum amount ({}). Your model may be either severely \
                         ill-conditioned or misspecified.",
                        10 * samples
                    )));
                }
            }
        }
    }
    let n = samples as f64;
    out.params.iter_mut().for_each(|p| *p /= n);
    let (_, scale_grad) = out.params.split_at_mut(d);
    match q.family {
        Family::MeanField => {
            for i in 0..d {
                // Chain rule through σ = exp(ω), plus the entropy's gradient 1.
                scale_grad[i] = scale_grad[i] * q.scale()[i].exp() + 1.0;
            }
        }
        Family::FullRank => {
            for i in 0..d {
                scale_grad[i + i * d] += 1.0 / q.scale()[i + i * d];
            }
        }
    }
    Ok(())
}

/// Stan's adaptive step-size sequence: one update of `q` with the gradient `g` at iteration
/// `t` (from 1), `history` holding the running mean of squared gradients.
fn sga_update(
    q: &mut Approximation,
    g: &Approximation,
    history: &mut Approximation,
    eta: f64,
    t: usize,
) {
    const TAU: f64 = 1.0;
    for (h, gi) in history.params.iter_mut().zip(&g.params) {
        *h = if t == 1 {
            *h + gi * gi
        } else {
            0.9 * *h + 0.1 * gi * gi
        };
    }
    let scaled = eta / (t as f64).sqrt();
    for ((p, gi), h) in q.params.iter_mut().zip(&g.params).zip(&history.params) {
        *p += scaled * gi / (TAU + h.sqrt());
    }
}

/// Stan's grid search for eta.
pub(crate) fn adapt_eta<M: LogDensity>(
    eval: &mut ModelEval<M>,
    init: &Approximation,
    options: &AdviOptions,
    rng: &mut StreamRng,
) -> Result<f64, AdviError> {
    const ETAS: [f64; 5] = [100.0, 10.0, 1.0, 0.1, 0.01];
    let elbo_init = elbo(eval, init, options.elbo_samples, rng).map_err(|_| {
        AdviError(
            "stan::variational::advi::adapt_eta: Cannot compute ELBO using the initial \
             variational distribution. Your model may be either severely ill-conditioned or \
             misspecified."
                .to_string(),
        )
    })?;
    let mut grad = Approximation::zeros(init.family, init.dim);
    let mut history = Approximation::zeros(init.family, init.dim);
    let mut elbo_best = -f64::MAX;
    let mut eta_best = 0.0;
    for (index, &eta) in ETAS.iter().enumerate() {
        let mut q = init.clone();
        for t in 1..=options.adapt_iter {
            // A gradient that cannot be computed at a diverging eta counts as zero.
            if elbo_gradient(eval, &q, options.grad_samples, rng, &mut grad).is_err() {
                grad.params.iter_mut().for_each(|g| *g = 0.0);
            }
            sga_update(&mut q, &grad, &mut history, eta, t);
        }
        let value = elbo(eval, &q, options.elbo_samples, rng).unwrap_or(-f64::MAX);
        if value < elbo_best && elbo_best > elbo_init {
            return Ok(eta_best);
        }
        if index < ETAS.len() - 1 {
            elbo_best = value;
            eta_best = eta;
        } else if value > elbo_init {
            return Ok(eta);
        } else {
            return Err(AdviError(
                "stan::variational::advi::adapt_eta: All proposed step-sizes failed. Your model \
                 may be either severely ill-conditioned or misspecified."
                    .to_string(),
            ));
        }
        history.params.iter_mut().for_each(|h| *h = 0.0);
    }
    unreachable!("the last eta returns")
}

/// What a run of ADVI found.
#[derive(Debug, Clone, PartialEq)]
pub struct AdviFit {
    pub approximation: Approximation,
    /// The eta used (adapted or given).
    pub eta: f64,
    /// Iterations of stochastic gradient ascent.
    pub iterations: usize,
    /// Whether the relative ELBO change fell below `tol_rel_obj` (else the iterations ran out).
    pub converged: bool,
    /// `(iteration, ELBO)` at every evaluation.
    pub elbo_trace: Vec<(usize, f64)>,
}

/// The median as Stan takes it: the element at index `n / 2` of the sorted values.
fn upper_median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// ADVI from the unconstrained point `init`, all randomness from `rng`.
pub fn advi<M: LogDensity>(
    eval: &mut ModelEval<M>,
    init: &[f64],
    options: &AdviOptions,
    rng: &mut StreamRng,
) -> Result<AdviFit, AdviError> {
    for (name, value) in [
        ("grad_samples", options.grad_samples),
        ("elbo_samples", options.elbo_samples),
        ("eval_elbo", options.eval_elbo),
        ("iter", options.iter),
    ] {
        if value == 0 {
            return Err(AdviError(format!("{name} must be positive")));
        }
    }
    if options.adapt_engaged && options.adapt_iter == 0 {
        return Err(AdviError("adapt iter must be positive".to_string()));
    }
    let start = Approximation::initial(options.family, init);
    let eta = if options.adapt_engaged {
        adapt_eta(eval, &start, options, rng)?
    } else {
        options.eta
    };
    if !(eta > 0.0 && eta.is_finite()) {
        return Err(AdviError(format!("eta must be positive, got {eta}")));
    }
    let mut q = start;
    let mut grad = Approximation::zeros(options.family, q.dim);
    let mut history = Approximation::zeros(options.family, q.dim);
    let window = ((0.1 * options.iter as f64 / options.eval_elbo as f64).max(2.0)) as usize;
    let mut rel_changes: std::collections::VecDeque<f64> = std::collections::VecDeque::new();
    let mut elbo_value = 0.0;
    let mut trace = Vec::new();
    let mut converged = false;
    let mut iterations = 0;
    for t in 1..=options.iter {
        iterations = t;
        elbo_gradient(eval, &q, options.grad_samples, rng, &mut grad)?;
        sga_update(&mut q, &grad, &mut history, eta, t);
        if t % options.eval_elbo == 0 {
            let previous = elbo_value;
            elbo_value = elbo(eval, &q, options.elbo_samples, rng)?;
            trace.push((t, elbo_value));
            if rel_changes.len() == window {
                rel_changes.pop_front();
            }
            rel_changes.push_back(((previous - elbo_value) / elbo_value).abs());
            let values: Vec<f64> = rel_changes.iter().copied().collect();
            let mean = values.iter().sum::<f64>() / values.len() as f64;
            if mean < options.tol_rel_obj || upper_median(&values) < options.tol_rel_obj {
                converged = true;
                break;
            }
        }
    }
    Ok(AdviFit {
        approximation: q,
        eta,
        iterations,
        converged,
        elbo_trace: trace,
    })
}
