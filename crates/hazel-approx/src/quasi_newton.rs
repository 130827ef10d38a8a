//! Quasi-Newton minimisation (CmdStan's `optimize algorithm=lbfgs|bfgs`) as a state and a
//! step, following Stan's `BFGSMinimizer`:
//!
//! * the first step (and any step after a reset) tries `init_alpha` along `−∇f`; later steps
//!   start from 1.01 × the minimiser of the cubic through the last step's values and slopes,
//!   capped at 1;
//! * a failed line search resets the approximation (search along `−∇f`) once, then fails;
//! * one extension: where that search along `−∇f` fails too and `‖∇f‖ > 1`, it is tried once
//!   more along the unit direction `−∇f/‖∇f‖` (still from `init_alpha`) before failing. The
//!   first step `init_alpha·∇f` has the gradient's scale, and a random start can have
//!   `‖∇f‖ ≈ 10¹¹¹` (posteriordb's arma11 with |θ| > 1: the error recursion grows as θᵀ), where
//!   no shrink of that step reaches a decrease and Pathfinder failed to start from every path
//!   (3 of 20 seeds); a step of `init_alpha` in parameter units does. Where Stan's search
//!   succeeds, the steps are Stan's.
//! * after a reset the approximation is scaled by `yᵀy / sᵀy`;
//! * convergence is tested in CmdStan's order with CmdStan's option names: `tol_obj`
//!   (|Δf|), `tol_grad` (‖∇f‖), `tol_param` (‖Δx‖), `iter`, `tol_rel_obj`
//!   (|Δf| / max(|f_prev|, |f|, 1) in units of machine epsilon) and `tol_rel_grad`
//!   (−p·∇f / max(|f|, 1) in units of machine epsilon).

use crate::bfgs::DenseInverseHessian;
use crate::dense::{dot, norm};
use crate::lbfgs::LbfgsHistory;
use crate::line_search::{cubic_minimizer, wolfe, LineSearchOptions, Point};
use crate::objective::Minimand;
use hazel_density::EvalError;

/// CmdStan's convergence settings for `optimize` (and `pathfinder`), with its defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConvergenceOptions {
    /// `tol_obj`: absolute change in the objective.
    pub tol_obj: f64,
    /// `tol_rel_obj`: relative change in the objective, in units of machine epsilon.
    pub tol_rel_obj: f64,
    /// `tol_grad`: gradient norm.
    pub tol_grad: f64,
    /// `tol_rel_grad`: relative gradient magnitude, in units of machine epsilon.
    pub tol_rel_grad: f64,
    /// `tol_param`: norm of the change in the parameters.
    pub tol_param: f64,
    /// `iter`: maximum number of iterations.
    pub max_iterations: usize,
}

impl Default for ConvergenceOptions {
    fn default() -> Self {
        ConvergenceOptions {
            tol_obj: 1e-12,
            tol_rel_obj: 1e4,
            tol_grad: 1e-8,
            tol_rel_grad: 1e7,
            tol_param: 1e-8,
            max_iterations: 2000,
        }
    }
}

/// Which approximation of the inverse Hessian.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuasiNewtonKind {
    /// L-BFGS keeping `history_size` updates (CmdStan's default 5).
    Lbfgs { history_size: usize },
    /// Dense BFGS.
    Bfgs,
}

/// Everything a quasi-Newton run is configured with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuasiNewtonOptions {
    pub kind: QuasiNewtonKind,
    /// `init_alpha`: the first line search's first step (CmdStan: 0.001).
    pub init_alpha: f64,
    pub convergence: ConvergenceOptions,
    pub line_search: LineSearchOptions,
}

impl Default for QuasiNewtonOptions {
    fn default() -> Self {
        QuasiNewtonOptions {
            kind: QuasiNewtonKind::Lbfgs { history_size: 5 },
            init_alpha: 1e-3,
            convergence: ConvergenceOptions::default(),
            line_search: LineSearchOptions::default(),
        }
    }
}

/// What a step ended with (Stan's `TerminationCondition`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Termination {
    /// A successful step; more progress can be made.
    Continue,
    AbsoluteObjective,
    RelativeObjective,
    AbsoluteGradient,
    RelativeGradient,
    AbsoluteParameter,
    MaxIterations,
    /// No step gave a sufficient decrease, even along the gradient.
    LineSearchFailed,
}

impl Termination {
    /// Whether the run stopped normally (converged or out of iterations).
    pub fn is_success(self) -> bool {
        !matches!(self, Termination::LineSearchFailed)
    }

    /// CmdStan's message.
    pub fn message(self) -> &'static str {
        match self {
            Termination::Continue => "Successful step completed",
            Termination::AbsoluteObjective => {
                "Convergence detected: absolute change in objective function was below tolerance"
            }
            Termination::RelativeObjective => {
                "Convergence detected: relative change in objective function was below tolerance"
            }
            Termination::AbsoluteGradient => {
                "Convergence detected: gradient norm is below tolerance"
            }
            Termination::RelativeGradient => {
                "Convergence detected: relative gradient magnitude is below tolerance"
            }
            Termination::AbsoluteParameter => {
                "Convergence detected: absolute parameter change was below tolerance"
            }
            Termination::MaxIterations => {
                "Maximum number of iterations hit, may not be at an optima"
            }
            Termination::LineSearchFailed => {
                "Line search failed to achieve a sufficient decrease, no more progress can be made"
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Approximation {
    Lbfgs(LbfgsHistory),
    Bfgs(DenseInverseHessian),
}

impl Approximation {
    fn update(&mut self, y: &[f64], s: &[f64], reset: bool) -> f64 {
        match self {
            Approximation::Lbfgs(h) => h.update(y, s, reset),
            Approximation::Bfgs(h) => h.update(y, s, reset),
        }
    }
    fn direction(&mut self, g: &[f64], p: &mut [f64]) {
        match self {
            Approximation::Lbfgs(h) => h.direction(g, p),
            Approximation::Bfgs(h) => h.direction(g, p),
        }
    }
}

/// The optimiser's whole state between steps.
#[derive(Debug, Clone, PartialEq)]
pub struct QuasiNewton {
    options: QuasiNewtonOptions,
    current: Point,
    previous: Point,
    /// The line search's output before it becomes `current`.
    trial: Point,
    /// The next search direction.
    p: Vec<f64>,
    /// The direction of the last step (rescaled after a reset).
    p_previous: Vec<f64>,
    alpha: f64,
    alpha0: f64,
    /// The last step's length along `p_previous`.
    alpha_previous: f64,
    iteration: usize,
    approximation: Approximation,
    s: Vec<f64>,
    y: Vec<f64>,
    note: &'static str,
}

impl QuasiNewton {
    /// The state at `x0` (evaluated here; an error if `f` cannot be evaluated there).
    pub fn new(
        func: &mut impl Minimand,
        x0: &[f64],
        options: QuasiNewtonOptions,
    ) -> Result<Self, EvalError> {
        let current = Point::at(func, x0)?;
        let n = x0.len();
        let p = current.g.iter().map(|g| -g).collect();
        let approximation = match options.kind {
            QuasiNewtonKind::Lbfgs { history_size } => {
                Approximation::Lbfgs(LbfgsHistory::new(history_size))
            }
            QuasiNewtonKind::Bfgs => Approximation::Bfgs(DenseInverseHessian::new(n)),
        };
        Ok(QuasiNewton {
            options,
            previous: current.clone(),
            trial: Point::zeros(n),
            current,
            p,
            p_previous: vec![0.0; n],
            alpha: options.init_alpha,
            alpha0: options.init_alpha,
            alpha_previous: 0.0,
            iteration: 0,
            approximation,
            s: vec![0.0; n],
            y: vec![0.0; n],
            note: "",
        })
    }

    /// One iteration: a line search along the current direction, the update, the next
    /// direction and the convergence tests.
    pub fn step(&mut self, func: &mut impl Minimand) -> Termination {
        self.iteration += 1;
        self.note = "";
        // 1: the first step; 2: a reset after a failed line search.
        let mut reset = if self.iteration == 1 { 1 } else { 0 };
        // Whether this search is the retry along the unit gradient (see the module notes).
        let mut unit = false;
        loop {
            if reset != 0 {
                let scale = if unit {
                    1.0 / norm(&self.current.g)
                } else {
                    1.0
                };
                for (p, g) in self.p.iter_mut().zip(&self.current.g) {
                    *p = -g * scale;
                }
            }
            self.alpha = if self.iteration > 1 && reset != 2 {
                let guess = cubic_minimizer(
                    dot(&self.previous.g, &self.p_previous),
                    self.alpha_previous,
                    self.current.f - self.previous.f,
                    dot(&self.current.g, &self.p_previous),
                    self.options.line_search.min_alpha,
                    1.0,
                );
                (1.01 * guess).min(1.0)
            } else {
                self.options.init_alpha
            };
            self.alpha0 = self.alpha;
            let searched = wolfe(
                func,
                &self.current,
                &self.p,
                &mut self.alpha,
                &mut self.trial,
                &self.options.line_search,
            );
            match searched {
                Ok(()) => break,
                Err(_) if reset != 0 => {
                    // ‖∇f‖ ≤ 1 (or NaN): the unit direction would only lengthen the failed
                    // step. An infinite norm gives a zero direction, which fails again.
                    let longer = norm(&self.current.g).partial_cmp(&1.0)
                        != Some(std::cmp::Ordering::Greater);
                    if unit || longer {
                        return Termination::LineSearchFailed;
                    }
                    unit = true;
                    self.note = "LS failed along the gradient, retried along its direction";
                }
                Err(_) => {
                    reset = 2;
                    self.note = "LS failed, Hessian reset";
                }
            }
        }
        std::mem::swap(&mut self.previous, &mut self.current);
        std::mem::swap(&mut self.current, &mut self.trial);
        std::mem::swap(&mut self.p, &mut self.p_previous);
        for i in 0..self.s.len() {
            self.s[i] = self.current.x[i] - self.previous.x[i];
            self.y[i] = self.current.g[i] - self.previous.g[i];
        }
        let grad_norm = norm(&self.current.g);
        let step_norm = norm(&self.s);
        if reset != 0 {
            let b0 = self.approximation.update(&self.y, &self.s, true);
            self.p_previous.iter_mut().for_each(|p| *p /= b0);
            self.alpha_previous = self.alpha * b0;
        } else {
            self.approximation.update(&self.y, &self.s, false);
            self.alpha_previous = self.alpha;
        }
        self.approximation.direction(&self.current.g, &mut self.p);
        self.convergence(grad_norm, step_norm)
    }

    fn convergence(&self, grad_norm: f64, step_norm: f64) -> Termination {
        let c = &self.options.convergence;
        let (f, f_prev) = (self.current.f, self.previous.f);
        let eps = f64::EPSILON;
        if (f_prev - f).abs() < c.tol_obj {
            Termination::AbsoluteObjective
        } else if grad_norm < c.tol_grad {
            Termination::AbsoluteGradient
        } else if step_norm < c.tol_param {
            Termination::AbsoluteParameter
        } else if self.iteration >= c.max_iterations {
            Termination::MaxIterations
        } else if (f_prev - f).abs() / f_prev.abs().max(f.abs()).max(1.0) < c.tol_rel_obj * eps {
            Termination::RelativeObjective
        } else if -dot(&self.p, &self.current.g) / f.abs().max(1.0) < c.tol_rel_grad * eps {
            Termination::RelativeGradient
        } else {
            Termination::Continue
        }
    }

    /// Runs steps until one does not return [`Termination::Continue`]; `on_step` sees the
    /// state after every step.
    pub fn minimize(
        &mut self,
        func: &mut impl Minimand,
        mut on_step: impl FnMut(&QuasiNewton, Termination),
    ) -> Termination {
        loop {
            let t = self.step(func);
            on_step(self, t);
            if t != Termination::Continue {
                return t;
            }
        }
    }

    /// The current iterate.
    pub fn x(&self) -> &[f64] {
        &self.current.x
    }
    /// `f` at the current iterate.
    pub fn value(&self) -> f64 {
        self.current.f
    }
    /// `∇f` at the current iterate.
    pub fn gradient(&self) -> &[f64] {
        &self.current.g
    }
    /// Completed iterations.
    pub fn iteration(&self) -> usize {
        self.iteration
    }
    /// The last line search's accepted step and first trial step.
    pub fn alpha(&self) -> (f64, f64) {
        (self.alpha, self.alpha0)
    }
    /// Length of the last step.
    pub fn step_size(&self) -> f64 {
        norm(&self.s)
    }
    /// What happened in the last step besides a plain update ("" or a reset).
    pub fn note(&self) -> &'static str {
        self.note
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `f(x) = 10¹⁰⁰ (x − 1)²` from x = 3: the first step `init_alpha · ∇f` moves x by about
    /// 10⁹⁸, where f overflows, and no shrink of Stan's search (nor hazel's extra ones, ÷10²⁰)
    /// reaches a finite value; the retry along the unit gradient starts from a step of
    /// `init_alpha` and the minimiser is found.
    struct Steep;
    impl Minimand for Steep {
        fn dim(&self) -> usize {
            1
        }
        fn value_gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<f64, EvalError> {
            let f = 1e100 * (x[0] - 1.0).powi(2);
            g[0] = 2e100 * (x[0] - 1.0);
            if f.is_finite() && g[0].is_finite() {
                Ok(f)
            } else {
                Err(EvalError::reject("overflow"))
            }
        }
    }

    #[test]
    fn a_start_with_an_enormous_gradient_still_takes_a_first_step() {
        let options = QuasiNewtonOptions::default();
        let mut f = Steep;
        let mut qn = QuasiNewton::new(&mut f, &[3.0], options).unwrap();
        let first = qn.step(&mut f);
        assert_ne!(first, Termination::LineSearchFailed);
        assert!(qn.value() < 1e100 * 4.0, "no decrease: {}", qn.value());
        let end = qn.minimize(&mut f, |_, _| {});
        assert!(end.is_success(), "{end:?}");
        assert!((qn.x()[0] - 1.0).abs() < 1e-8, "{:?}", qn.x());
    }
}
