//! Pathfinder (Zhang, Carpenter, Gelman and Vehtari 2022) as CmdStan's `pathfinder` runs it.
//!
//! **Single path.** L-BFGS ([`crate::quasi_newton`], on the sampler's density) climbs from the
//! initial point. After every iteration the last `history_size` pairs
//! `(s, y) = (Δx, Δ∇f)` (`f = −log p`) and a diagonal `α` (updated by Gilbert and
//! Lemaréchal's formula whenever the newest pair has positive, tame curvature) give the
//! inverse Hessian of L-BFGS in compact form,
//! `H = diag(α) + diag(α) Y N + Nᵀ Yᵀ diag(α) + Nᵀ (Yᵀ diag(α) Y + D) N`,
//! `N = −R⁻¹ Sᵀ`, `R` the upper triangle of `SᵀY`, `D` its diagonal; the normal
//! approximation `N(x − H ∇f, H)` is drawn from densely (Cholesky of `H`) when
//! `2 · history ≥ d`, else through a thin QR of the `d × 2J` factor (Stan's sparse form).
//! Its ELBO is estimated from `num_elbo_draws` draws (`mean(log p − log q)`, log p with
//! constants); the iteration with the largest ELBO is the path's approximation, from which
//! `num_draws` draws are returned (the ELBO draws first), each with `lp_approx__ = log q` and
//! `lp__ = log p`.
//!
//! **Multi-path.** `num_paths` independent paths (each its own initial point and stream, run
//! on a thread pool, combined in path order), then `num_psis_draws` draws resampled with
//! Pareto-smoothed importance weights `log p − log q` ([`crate::psis`]).
//!
//! One difference from Stan's code: the sparse form draws with the *lower* Cholesky factor of
//! `I + R̄ M̄ R̄ᵀ`, so its draws have covariance exactly `H`; Stan's uses the upper factor,
//! whose draws have another covariance of the same determinant (its `lp_approx__` is still
//! that of the draws it makes).

use crate::advi::ELBO_TERMS;
use crate::dense::{cholesky, dot, lower_mul, mat_t_vec, mat_vec};
use crate::line_search::LineSearchOptions;
use crate::objective::NegLogDensity;
use crate::psis::{psis_log_weights, resample, tail_length};
use crate::quasi_newton::{
    ConvergenceOptions, QuasiNewton, QuasiNewtonKind, QuasiNewtonOptions, Termination,
};
use hazel_density::{DensityTerms, LogDensity};
use hazel_rng::{Purpose, StreamRng};
use std::collections::VecDeque;

/// `log(2π)`.
const LOG_TWO_PI: f64 = 1.837_877_066_409_345_3;

/// CmdStan's single-path settings, with its names and defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathfinderOptions {
    pub init_alpha: f64,
    pub tol_obj: f64,
    pub tol_rel_obj: f64,
    pub tol_grad: f64,
    pub tol_rel_grad: f64,
    pub tol_param: f64,
    pub history_size: usize,
    pub max_lbfgs_iters: usize,
    pub num_elbo_draws: usize,
    /// Draws returned by each path.
    pub num_draws: usize,
    /// Compute `lp__` for every returned draw (else NaN beyond the ELBO draws, and no PSIS).
    pub calculate_lp: bool,
}

impl Default for PathfinderOptions {
    fn default() -> Self {
        let c = ConvergenceOptions::default();
        PathfinderOptions {
            init_alpha: 1e-3,
            tol_obj: c.tol_obj,
            tol_rel_obj: c.tol_rel_obj,
            tol_grad: c.tol_grad,
            tol_rel_grad: c.tol_rel_grad,
            tol_param: c.tol_param,
            history_size: 5,
            max_lbfgs_iters: 1000,
            num_elbo_draws: 25,
            num_draws: 1000,
            calculate_lp: true,
        }
    }
}

/// CmdStan's multi-path settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MultiPathOptions {
    pub path: PathfinderOptions,
    pub num_paths: usize,
    pub num_psis_draws: usize,
    pub psis_resample: bool,
}

impl Default for MultiPathOptions {
    fn default() -> Self {
        MultiPathOptions {
            path: PathfinderOptions::default(),
            num_paths: 4,
            num_psis_draws: 1000,
            psis_resample: true,
        }
    }
}

/// A path that produced no approximation.
#[derive(Debug, Clone, PartialEq)]
pub struct PathfinderError(pub String);

impl std::fmt::Display for PathfinderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PathfinderError {}

#[derive(Debug, Clone, PartialEq)]
enum Factor {
    /// Lower Cholesky factor of `H`.
    Dense { chol: Vec<f64> },
    /// `H = √α (I − Q Qᵀ + Q L Lᵀ Qᵀ) √α` with `Q` `d × k` and `L` `k × k` lower.
    Sparse {
        sqrt_alpha: Vec<f64>,
        q: Vec<f64>,
        chol: Vec<f64>,
        k: usize,
    },
}

/// The normal approximation at one iterate of the path.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NormalApproximation {
    pub center: Vec<f64>,
    /// `log |det chol(H)| = ½ log det H`.
    pub log_det_chol: f64,
    factor: Factor,
}

impl NormalApproximation {
    /// The compact-form approximation from the pairs `s`, `y` (oldest first), the diagonal
    /// `alpha`, the iterate `x` and `g = ∇f(x)`; `None` where it is not positive definite.
    pub fn new(s: &[&[f64]], y: &[&[f64]], alpha: &[f64], x: &[f64], g: &[f64]) -> Option<Self> {
        let d = x.len();
        let j = s.len();
        if j == 0 || alpha.iter().any(|a| !(*a > 0.0 && a.is_finite())) {
            return None;
        }
        // R = upper triangle of SᵀY, D its diagonal.
        let mut r = vec![0.0; j * j];
        for col in 0..j {
            for row in 0..=col {
                r[row + col * j] = dot(s[row], y[col]);
            }
        }
        // N = −R⁻¹ Sᵀ (J × d), by back substitution column by column.
        let mut n = vec![0.0; j * d];
        for c in 0..d {
            for row in (0..j).rev() {
                let mut v = s[row][c];
                for k in (row + 1)..j {
                    v -= r[row + k * j] * n[k + c * j];
                }
                n[row + c * j] = v / r[row + row * j];
            }
            for row in 0..j {
                n[row + c * j] = -n[row + c * j];
            }
        }
        if n.iter().any(|v| !v.is_finite()) {
            return None;
        }
        // M = Yᵀ diag(α) Y + D.
        let mut m = vec![0.0; j * j];
        for col in 0..j {
            for row in 0..j {
                m[row + col * j] =
                    (0..d).fold(0.0, |acc, i| acc + y[row][i] * alpha[i] * y[col][i]);
            }
            m[col + col * j] += r[col + col * j];
        }
        if 2 * j >= d {
            Self::dense(y, alpha, x, g, &n, &m, j)
        } else {
            Self::sparse(y, alpha, x, g, &n, &m, j)
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn dense(
        y: &[&[f64]],
        alpha: &[f64],
        x: &[f64],
        g: &[f64],
        n: &[f64],
        m: &[f64],
        j: usize,
    ) -> Option<Self> {
        let d = x.len();
        // H = diag(α) + A N + (A N)ᵀ + Nᵀ M N with A = diag(α) Y.
        let mut h = vec![0.0; d * d];
        let mut mn = vec![0.0; j * d];
        crate::dense::mat_mul(m, j, j, n, d, &mut mn);
        for c in 0..d {
            for r in 0..d {
                let mut v = 0.0;
                for k in 0..j {
                    v += alpha[r] * y[k][r] * n[k + c * j]
                        + alpha[c] * y[k][c] * n[k + r * j]
                        + n[k + r * j] * mn[k + c * j];
                }
                h[r + c * d] = v;
            }
            h[c + c * d] += alpha[c];
        }
        hazel_math::linalg::symmetrise(&mut h, d);
        let chol = cholesky(&h, d)?;
        let log_det_chol = (0..d).fold(0.0, |acc, i| acc + chol[i + i * d].abs().ln());
        let mut hg = vec![0.0; d];
        mat_vec(&h, d, d, g, &mut hg);
        let center = x.iter().zip(&hg).map(|(xi, v)| xi - v).collect();
        Some(NormalApproximation {
            center,
            log_det_chol,
            factor: Factor::Dense { chol },
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn sparse(
        y: &[&[f64]],
        alpha: &[f64],
        x: &[f64],
        g: &[f64],
        n: &[f64],
        m: &[f64],
        j: usize,
    ) -> Option<Self> {
        let d = x.len();
        let k = 2 * j;
        let sqrt_alpha: Vec<f64> = alpha.iter().map(|a| a.sqrt()).collect();
        // W = [√α ∘ Y, (N / √α)ᵀ] (d × 2J).
        let mut w = vec![0.0; d * k];
        for c in 0..j {
            for i in 0..d {
                w[i + c * d] = sqrt_alpha[i] * y[c][i];
                w[i + (j + c) * d] = n[c + i * j] / sqrt_alpha[i];
            }
        }
        let mut q = vec![0.0; d * k];
        let mut rbar = vec![0.0; k * k];
        let mut ws = vec![0.0; hazel_math::linalg::qr_workspace_len(d, k)];
        hazel_math::linalg::qr("pathfinder", &w, d, k, &mut q, k, &mut rbar, k, &mut ws).ok()?;
        // B = R̄ M̄ R̄ᵀ + I with M̄ = [[0, I], [I, M]].
        let mut mbar = vec![0.0; k * k];
        for i in 0..j {
            mbar[i + (j + i) * k] = 1.0;
            mbar[(j + i) + i * k] = 1.0;
            for c in 0..j {
                mbar[(j + i) + (j + c) * k] = m[i + c * j];
            }
        }
        let mut rm = vec![0.0; k * k];
        crate::dense::mat_mul(&rbar, k, k, &mbar, k, &mut rm);
        let rt = crate::dense::transpose(&rbar, k, k);
        let mut b = vec![0.0; k * k];
        crate::dense::mat_mul(&rm, k, k, &rt, k, &mut b);
        for i in 0..k {
            b[i + i * k] += 1.0;
        }
        hazel_math::linalg::symmetrise(&mut b, k);
        let chol = cholesky(&b, k)?;
        let log_det_chol = (0..k).fold(0.0, |acc, i| acc + chol[i + i * k].abs().ln())
            + 0.5 * alpha.iter().fold(0.0, |acc, a| acc + a.ln());
        // center = x − (α∘g + α∘(Y N g) + Nᵀ (Yᵀ(α∘g) + M N g)).
        let alpha_g: Vec<f64> = alpha.iter().zip(g).map(|(a, gi)| a * gi).collect();
        let mut ng = vec![0.0; j];
        mat_vec(n, j, d, g, &mut ng);
        let mut inner = vec![0.0; j];
        mat_vec(m, j, j, &ng, &mut inner);
        for c in 0..j {
            inner[c] += dot(y[c], &alpha_g);
        }
        let mut nt_inner = vec![0.0; d];
        mat_t_vec(n, j, d, &inner, &mut nt_inner);
        let center = (0..d)
            .map(|i| {
                let y_ng = (0..j).fold(0.0, |acc, c| acc + y[c][i] * ng[c]);
                x[i] - (alpha_g[i] + alpha[i] * y_ng + nt_inner[i])
            })
            .collect();
        Some(NormalApproximation {
            center,
            log_det_chol,
            factor: Factor::Sparse {
                sqrt_alpha,
                q,
                chol,
                k,
            },
        })
    }

    pub fn dim(&self) -> usize {
        self.center.len()
    }

    /// The draw for the standard normal vector `u`, into `out`; returns its log density under
    /// the approximation, `−log|det chol H| − ½ (uᵀu + d log 2π)`.
    pub fn draw(&self, u: &[f64], out: &mut [f64]) -> f64 {
        let d = self.dim();
        match &self.factor {
            Factor::Dense { chol } => {
                lower_mul(chol, d, u, out);
            }
            Factor::Sparse {
                sqrt_alpha,
                q,
                chol,
                k,
            } => {
                let k = *k;
                let mut v = vec![0.0; k];
                mat_t_vec(q, d, k, u, &mut v);
                let mut lv = vec![0.0; k];
                lower_mul(chol, k, &v, &mut lv);
                for i in 0..k {
                    lv[i] -= v[i];
                }
                mat_vec(q, d, k, &lv, out);
                for i in 0..d {
                    out[i] = sqrt_alpha[i] * (out[i] + u[i]);
                }
            }
        }
        for (o, c) in out.iter_mut().zip(&self.center) {
            *o += c;
        }
        -self.log_det_chol - 0.5 * (dot(u, u) + d as f64 * LOG_TWO_PI)
    }
}

/// Draws from an approximation with their log densities: rows of `d` values.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Draws {
    pub dim: usize,
    pub values: Vec<f64>,
    /// `lp_approx__`: log density under the approximation.
    pub lp_approx: Vec<f64>,
    /// `lp__`: the model's log density with constants (NaN where not computed; −∞ where the
    /// model rejected the draw).
    pub lp: Vec<f64>,
}

impl Draws {
    pub fn len(&self) -> usize {
        self.lp.len()
    }
    pub fn is_empty(&self) -> bool {
        self.lp.is_empty()
    }
    pub fn row(&self, i: usize) -> &[f64] {
        &self.values[i * self.dim..(i + 1) * self.dim]
    }
    fn push(&mut self, q: &[f64], lp_approx: f64, lp: f64) {
        self.values.extend_from_slice(q);
        self.lp_approx.push(lp_approx);
        self.lp.push(lp);
    }
    /// `log p − log q` of every draw.
    pub fn log_ratios(&self) -> Vec<f64> {
        self.lp
            .iter()
            .zip(&self.lp_approx)
            .map(|(p, q)| p - q)
            .collect()
    }
}

/// `count` draws from `approx` (with `lp__` when `calculate_lp`).
fn draw_from<M: LogDensity>(
    model_eval: &mut crate::objective::ModelEval<M>,
    approx: &NormalApproximation,
    count: usize,
    calculate_lp: bool,
    rng: &mut StreamRng,
) -> Draws {
    let d = approx.dim();
    let mut draws = Draws {
        dim: d,
        ..Draws::default()
    };
    let (mut u, mut q, mut grad) = (vec![0.0; d], vec![0.0; d], vec![0.0; d]);
    for _ in 0..count {
        u.iter_mut().for_each(|v| *v = rng.normal());
        let lp_approx = approx.draw(&u, &mut q);
        let lp = if calculate_lp {
            model_eval
                .log_density(&q, &mut grad, ELBO_TERMS)
                .unwrap_or(f64::NEG_INFINITY)
        } else {
            f64::NAN
        };
        draws.push(&q, lp_approx, lp);
    }
    draws
}

/// One path's result.
#[derive(Debug, Clone, PartialEq)]
pub struct PathResult {
    pub draws: Draws,
    /// The L-BFGS iteration whose approximation was kept.
    pub best_iteration: usize,
    pub elbo: f64,
    /// L-BFGS iterations made, and how they ended.
    pub lbfgs_iterations: usize,
    pub termination: Termination,
    /// Gradient evaluations (L-BFGS, ELBO and the final draws).
    pub evaluations: usize,
}

/// `yᵀs > 0` and `yᵀy / yᵀs ≤ 10¹²` (Stan's `check_curve`).
fn tame_curvature(y: &[f64], s: &[f64]) -> bool {
    let ys = dot(y, s);
    ys > 0.0 && (dot(y, y) / ys).abs() <= 1e12
}

/// One path from the unconstrained point `init`, its randomness from `rng`.
pub fn single_path<M: LogDensity>(
    model: &M,
    init: &[f64],
    options: &PathfinderOptions,
    rng: &mut StreamRng,
) -> Result<PathResult, PathfinderError> {
    let d = init.len();
    let mut objective = NegLogDensity::new(model, DensityTerms::SAMPLER);
    let qn_options = QuasiNewtonOptions {
        kind: QuasiNewtonKind::Lbfgs {
            history_size: options.history_size,
        },
        init_alpha: options.init_alpha,
        convergence: ConvergenceOptions {
            tol_obj: options.tol_obj,
            tol_rel_obj: options.tol_rel_obj,
            tol_grad: options.tol_grad,
            tol_rel_grad: options.tol_rel_grad,
            tol_param: options.tol_param,
            max_iterations: options.max_lbfgs_iters,
        },
        line_search: LineSearchOptions::default(),
    };
    let mut lbfgs = QuasiNewton::new(&mut objective, init, qn_options)
        .map_err(|e| PathfinderError(format!("cannot evaluate the initial point: {e}")))?;
    let history = options.history_size.max(1);
    let mut s_hist: VecDeque<Vec<f64>> = VecDeque::with_capacity(history);
    let mut y_hist: VecDeque<Vec<f64>> = VecDeque::with_capacity(history);
    let mut prev_x = lbfgs.x().to_vec();
    let mut prev_g = lbfgs.gradient().to_vec();
    let mut alpha = vec![1.0; d];
    let mut best: Option<(usize, f64, NormalApproximation, Draws)> = None;
    let termination = loop {
        let t = lbfgs.step(&mut objective);
        if t == Termination::LineSearchFailed {
            break t;
        }
        if s_hist.len() == history {
            s_hist.pop_front();
            y_hist.pop_front();
        }
        let s: Vec<f64> = lbfgs.x().iter().zip(&prev_x).map(|(a, b)| a - b).collect();
        let y: Vec<f64> = lbfgs
            .gradient()
            .iter()
            .zip(&prev_g)
            .map(|(a, b)| a - b)
            .collect();
        prev_x.copy_from_slice(lbfgs.x());
        prev_g.copy_from_slice(lbfgs.gradient());
        if tame_curvature(&y, &s) {
            // Gilbert and Lemaréchal's update of the diagonal (their eq. 4.9).
            let y_alpha_y = (0..d).fold(0.0, |acc, i| acc + y[i] * alpha[i] * y[i]);
            let y_s = dot(&y, &s);
            let s_alpha_s = (0..d).fold(0.0, |acc, i| acc + s[i] * s[i] / alpha[i]);
            for i in 0..d {
                alpha[i] = y_s
                    / (y_alpha_y / alpha[i] + y[i] * y[i]
                        - (y_alpha_y / s_alpha_s) * (s[i] / alpha[i]).powi(2));
            }
        }
        s_hist.push_back(s);
        y_hist.push_back(y);
        let s_ref: Vec<&[f64]> = s_hist.iter().map(Vec::as_slice).collect();
        let y_ref: Vec<&[f64]> = y_hist.iter().map(Vec::as_slice).collect();
        if let Some(approx) =
            NormalApproximation::new(&s_ref, &y_ref, &alpha, lbfgs.x(), lbfgs.gradient())
        {
            let draws = draw_from(
                &mut objective.eval,
                &approx,
                options.num_elbo_draws,
                true,
                rng,
            );
            let ratios = draws.log_ratios();
            let elbo = ratios.iter().sum::<f64>() / ratios.len().max(1) as f64;
            let better = match &best {
                None => elbo > f64::NEG_INFINITY,
                Some((_, b, _, _)) => elbo > *b,
            };
            if better {
                best = Some((lbfgs.iteration(), elbo, approx, draws));
            }
        }
        if t != Termination::Continue {
            break t;
        }
    };
    if termination == Termination::LineSearchFailed && lbfgs.iteration() < 2 {
        return Err(PathfinderError(format!(
            "Optimization terminated with error: {} Optimization failed to start, pathfinder \
             cannot be run.",
            termination.message()
        )));
    }
    let Some((best_iteration, elbo, approx, mut draws)) = best else {
        return Err(PathfinderError(
            "None of the LBFGS iterations completed successfully".to_string(),
        ));
    };
    if options.num_draws > draws.len() {
        let more = draw_from(
            &mut objective.eval,
            &approx,
            options.num_draws - draws.len(),
            options.calculate_lp,
            rng,
        );
        draws.values.extend_from_slice(&more.values);
        draws.lp_approx.extend_from_slice(&more.lp_approx);
        draws.lp.extend_from_slice(&more.lp);
    } else {
        draws.values.truncate(options.num_draws * d);
        draws.lp_approx.truncate(options.num_draws);
        draws.lp.truncate(options.num_draws);
    }
    Ok(PathResult {
        draws,
        best_iteration,
        elbo,
        lbfgs_iterations: lbfgs.iteration(),
        termination,
        evaluations: objective.eval.evaluations,
    })
}

/// What a multi-path run returns.
#[derive(Debug, Clone, PartialEq)]
pub struct MultiPathResult {
    /// Every path's result (or failure), in path order.
    pub paths: Vec<Result<PathResult, PathfinderError>>,
    /// The draws written: resampled with PSIS, or all paths' draws concatenated.
    pub draws: Draws,
    /// The PSIS shape of the importance weights (NaN without resampling).
    pub pareto_k: f64,
}

/// The stream of path `path_id` (its draws; its initial point comes from the `Init` stream).
pub fn path_stream(seed: u64, path_id: u64) -> StreamRng {
    StreamRng::new(seed, path_id, Purpose::Sampler)
}

/// `inits.len()` paths (ids `first_id …`) on a pool of `threads` threads (0 = one per core),
/// then PSIS resampling with the [`Purpose::Resample`] stream of `first_id`. Fails only when
/// every path failed.
pub fn multi_path<M: LogDensity>(
    model: &M,
    inits: &[Vec<f64>],
    options: &MultiPathOptions,
    seed: u64,
    first_id: u64,
    threads: usize,
) -> Result<MultiPathResult, PathfinderError> {
    use rayon::prelude::*;
    let run = |k: usize| {
        let mut rng = path_stream(seed, first_id + k as u64);
        single_path(model, &inits[k], &options.path, &mut rng)
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .stack_size(hazel_density::EVALUATION_STACK_BYTES)
        .build()
        .map_err(|e| PathfinderError(format!("cannot start the path threads: {e}")))?;
    let paths: Vec<Result<PathResult, PathfinderError>> =
        pool.install(|| (0..inits.len()).into_par_iter().map(run).collect());
    let successful: Vec<&PathResult> = paths.iter().filter_map(|p| p.as_ref().ok()).collect();
    if successful.is_empty() {
        let reasons: Vec<String> = paths
            .iter()
            .enumerate()
            .filter_map(|(k, p)| {
                p.as_ref()
                    .err()
                    .map(|e| format!("path {}: {e}", first_id + k as u64))
            })
            .collect();
        return Err(PathfinderError(format!(
            "No pathfinders ran successfully ({})",
            reasons.join("; ")
        )));
    }
    let mut all = Draws {
        dim: successful[0].draws.dim,
        ..Draws::default()
    };
    for p in &successful {
        all.values.extend_from_slice(&p.draws.values);
        all.lp_approx.extend_from_slice(&p.draws.lp_approx);
        all.lp.extend_from_slice(&p.draws.lp);
    }
    if !(options.psis_resample && options.path.calculate_lp) {
        return Ok(MultiPathResult {
            paths,
            draws: all,
            pareto_k: f64::NAN,
        });
    }
    let weights = psis_log_weights(&all.log_ratios(), tail_length(all.len()));
    let mut rng = StreamRng::new(seed, first_id, Purpose::Resample);
    let picks = resample(&weights.log_weights, options.num_psis_draws, &mut rng);
    let mut draws = Draws {
        dim: all.dim,
        ..Draws::default()
    };
    for i in picks {
        draws.push(all.row(i), all.lp_approx[i], all.lp[i]);
    }
    Ok(MultiPathResult {
        paths,
        draws,
        pareto_k: weights.pareto_k,
    })
}
