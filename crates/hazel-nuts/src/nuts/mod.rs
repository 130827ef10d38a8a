//! One NUTS transition, built iteratively over preallocated buffers.
//!
//! # The algorithm (Stan's `base_nuts`, 2.21 and later)
//!
//! A transition draws a momentum `p ~ N(0, M)` and grows a trajectory of leapfrog steps by
//! doubling: at depth `j` a new subtree of `2^j` steps is built forward or backward in time
//! (a fair coin). Each point `z` of the trajectory has weight `exp(H0 − H(z))`.
//!
//! * **Multinomial sampling.** Inside a subtree the proposal is a draw from the subtree's points
//!   proportional to weight. At the top level the sampler moves to the new subtree's proposal
//!   with probability `min(1, W_new / W_old)` (*biased progressive sampling*, which favours
//!   moving away from the starting point). Stan obtains the within-subtree draw by merging the
//!   two halves of each subtree with probability `W_right / (W_left + W_right)`; hazel draws it
//!   progressively leaf by leaf (replace the running proposal with leaf `i` with probability
//!   `w_i / W_{1..i}`), which gives exactly the same distribution (every leaf with probability
//!   `w_i / W`) with one proposal buffer instead of one per level.
//! * **Generalised no-U-turn criterion.** With `ρ` the sum of the momenta of a span of points
//!   and `p♯ = M⁻¹ p` at its two ends, the span has turned when `p♯_begin · ρ ≤ 0` or
//!   `p♯_end · ρ ≤ 0`. It is checked whenever two halves merge — every merge inside a subtree
//!   and the merge of the new subtree with the old trajectory — and, as Stan does since 2.21,
//!   also across the merge: on (left half + first point of the right half) and on (last point
//!   of the left half + right half). Any failed check ends the transition; a subtree that
//!   turned or diverged is discarded whole (its points are never selected).
//! * **Divergence.** A leapfrog step whose energy error `H(z) − H0` exceeds
//!   `max_energy_error` (Stan: 1000), whose energy is NaN, or whose log density evaluation
//!   failed (`Err(EvalError)`, Stan: the exception makes the potential infinite) is divergent:
//!   the subtree is discarded and the transition ends. A *fatal* `EvalError` instead stops the
//!   chain: [`nuts_step`] returns it.
//! * **Statistics, as Stan defines them.** `accept_stat` is the mean over *all* leapfrog steps
//!   of the transition (including those of a discarded subtree) of `min(1, exp(H0 − H(z)))`;
//!   `treedepth` is the number of completed doublings; `n_leapfrog` counts every leapfrog step;
//!   `energy` is the Hamiltonian of the selected point with the momentum it had on the
//!   trajectory; `lp` its log density.
//!
//! # Iterative construction
//!
//! Stan builds a subtree recursively. Here a subtree of depth `j` is built by a loop over its
//! `2^j` leaves. After leaf `i`, the completed subtrees are exactly those whose size divides
//! `i + 1`: the loop keeps a stack of pending left halves, one slot per level (a bit mask says
//! which levels are occupied), and merges the just-completed span with the pending slot of the
//! same level for as long as that slot is occupied — the order of merges and checks is the
//! post-order of Stan's recursion, so the same trajectories are accepted, rejected and cut short
//! after the same number of steps. The slots are preallocated (`max_depth` of them, each
//! holding the begin/end momenta, begin/end velocities and momentum sum of a span), and spans
//! move between slots by swapping vectors, never by allocating: after construction of the
//! [`NutsState`] a transition performs no heap allocation (the model's own error messages aside).
//!
//! The loop is also inverted at each model evaluation: [`NutsState::begin_transition`] and
//! [`NutsState::resume_transition`] keep the loop's counters in the state and return to the
//! caller whenever the density is needed. [`nuts_step`] is the plain driver; a batched backend
//! drives many chains in lockstep the same way, with bit-identical results per chain.
//!
//! The three checks of a merge and the merged momentum sum are computed in one fused pass over
//! the dimensions (six dot products with fixed-lane partial sums), which with the fused leapfrog
//! updates keeps the sampler's own cost near 2.5–3 ns per dimension per step.
//!
//! # Modules
//!
//! Split along the algorithm's jobs, as BlackJAX splits its samplers; each exposes only what
//! its siblings need (`pub(super)`), and this module re-exports the public interface:
//!
//! * `integrator` — a phase-space point and the leapfrog step, in its two halves;
//! * `termination` — the U-turn bookkeeping of a span and the (fused) no-U-turn checks;
//! * `proposal` — progressive multinomial sampling within a subtree and biased progressive
//!   sampling at the top;
//! * `trajectory` — the transition itself (doubling, leaves, merges, statistics) and
//!   [`nuts_step`];
//! * `stepsize` — Stan's step-size heuristic, [`find_reasonable_stepsize`].
//!
//! [`NutsState`], which holds every buffer, is defined here; each module adds its own methods.

mod integrator;
mod proposal;
mod stepsize;
mod termination;
mod trajectory;

pub use stepsize::{find_reasonable_stepsize, SearchStatus, StepsizeError};
pub use trajectory::{nuts_step, StepStatus};

use crate::metric::Metric;
use hazel_density::{EvalError, LogDensity};
use hazel_rng::StreamRng;
use integrator::PhasePoint;
use proposal::Proposal;
use stepsize::SearchProgress;
use termination::Span;
use trajectory::TransitionProgress;

/// Settings of the NUTS transition itself (step size and metric are passed separately because
/// adaptation changes them between transitions).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NutsSettings {
    /// Maximum number of trajectory doublings (Stan: 10); at most `2^max_depth − 1` steps.
    pub max_depth: u32,
    /// Energy error above which a step is divergent (Stan: 1000).
    pub max_energy_error: f64,
}

impl Default for NutsSettings {
    fn default() -> Self {
        NutsSettings {
            max_depth: 10,
            max_energy_error: 1000.0,
        }
    }
}

/// What one transition did: Stan's sampler statistics for the iteration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Transition {
    /// Log density of the new state.
    pub lp: f64,
    pub accept_stat: f64,
    pub treedepth: u32,
    pub n_leapfrog: u32,
    pub divergent: bool,
    pub energy: f64,
}

/// The state of one NUTS chain: its current position with log density and gradient, plus every
/// buffer a transition needs, allocated once here.
#[derive(Debug, Clone)]
pub struct NutsState {
    position: Vec<f64>,
    gradient: Vec<f64>,
    logp: f64,
    /// Forward and backward ends of the trajectory; the integrator advances them in place.
    forward: PhasePoint,
    backward: PhasePoint,
    /// Velocities `M⁻¹ p` at the forward and backward ends.
    v_forward: Vec<f64>,
    v_backward: Vec<f64>,
    /// Momentum sum of the whole trajectory so far.
    rho: Vec<f64>,
    /// Momentum and velocity of the old trajectory's end that a new subtree attaches to.
    inner_p: Vec<f64>,
    inner_v: Vec<f64>,
    /// The subtree's running multinomial proposal (position, gradient, log density, energy).
    proposal: Proposal,
    /// Pending left halves, one per level, and the span being completed.
    levels: Vec<Span>,
    current: Span,
    /// Scratch for the dense metric's drift.
    scratch: Vec<f64>,
    max_depth: u32,
    /// The most recent non-fatal evaluation error met on a trajectory, for the caller to report.
    rejection: Option<EvalError>,
    /// Where the current transition stands between model evaluations.
    progress: TransitionProgress,
    /// Where the current step-size search stands between model evaluations.
    search: SearchProgress,
}

impl NutsState {
    /// A state at `position`, whose log density `logp` and gradient `gradient` the caller has
    /// evaluated (see [`crate::init`]). Allocates every buffer the transitions will use.
    pub fn from_point(position: &[f64], gradient: &[f64], logp: f64, max_depth: u32) -> Self {
        let dim = position.len();
        assert_eq!(
            gradient.len(),
            dim,
            "gradient length must equal the dimension"
        );
        NutsState {
            position: position.to_vec(),
            gradient: gradient.to_vec(),
            logp,
            forward: PhasePoint::zeros(dim),
            backward: PhasePoint::zeros(dim),
            v_forward: vec![0.0; dim],
            v_backward: vec![0.0; dim],
            rho: vec![0.0; dim],
            inner_p: vec![0.0; dim],
            inner_v: vec![0.0; dim],
            proposal: Proposal::zeros(dim),
            levels: (0..max_depth).map(|_| Span::zeros(dim)).collect(),
            current: Span::zeros(dim),
            scratch: vec![0.0; dim],
            max_depth,
            rejection: None,
            progress: TransitionProgress::idle(),
            search: SearchProgress::idle(),
        }
    }

    /// Evaluates the model at `position` and builds the state; fails with the model's error or
    /// when the log density or gradient is not finite (use [`crate::init`] for Stan's retrying
    /// initialisation with clear messages).
    pub fn new<M: LogDensity + ?Sized>(
        model: &M,
        ws: &mut M::Workspace,
        position: &[f64],
        max_depth: u32,
    ) -> Result<Self, EvalError> {
        let mut gradient = vec![0.0; position.len()];
        let logp = model.log_density_gradient(ws, position, &mut gradient)?;
        if let Some(problem) = crate::init::non_finite_problem(logp, &gradient) {
            return Err(EvalError::non_finite(problem));
        }
        Ok(NutsState::from_point(position, &gradient, logp, max_depth))
    }

    /// Dimension of the space.
    pub fn dim(&self) -> usize {
        self.position.len()
    }
    /// Current position (unconstrained).
    pub fn position(&self) -> &[f64] {
        &self.position
    }
    /// Gradient of the log density at the current position.
    pub fn gradient(&self) -> &[f64] {
        &self.gradient
    }
    /// Log density at the current position.
    pub fn logp(&self) -> f64 {
        self.logp
    }
    /// The maximum tree depth the buffers were allocated for.
    pub fn max_depth(&self) -> u32 {
        self.max_depth
    }
    /// The last non-fatal evaluation error met during a transition (a rejected proposal),
    /// cleared by taking it.
    pub fn take_rejection(&mut self) -> Option<EvalError> {
        self.rejection.take()
    }

    /// Draws a fresh momentum at the current position into the forward end and returns the
    /// Hamiltonian there.
    fn start_at_current(&mut self, metric: &Metric, rng: &mut StreamRng) -> f64 {
        let z = &mut self.forward;
        z.q.copy_from_slice(&self.position);
        z.grad.copy_from_slice(&self.gradient);
        z.logp = self.logp;
        metric.sample_momentum(rng, &mut z.p);
        let kinetic = metric.velocity(&z.p, &mut self.v_forward);
        -self.logp + kinetic
    }
}

/// Records a non-fatal error as the chain's latest rejection, or returns a fatal one.
#[inline]
fn absorb_error(rejection: &mut Option<EvalError>, error: EvalError) -> Result<(), EvalError> {
    if error.is_fatal() {
        Err(error)
    } else {
        *rejection = Some(error);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::integrator::leapfrog;
    use super::proposal::log_sum_exp;
    use super::*;
    use crate::types::MetricKind;
    use hazel_density::IndependentNormal;
    use hazel_rng::Purpose;

    /// `dim` standard normals.
    fn std_normal(dim: usize) -> IndependentNormal {
        IndependentNormal::unit(vec![0.0; dim])
    }

    #[test]
    fn log_sum_exp_handles_infinities() {
        assert_eq!(log_sum_exp(f64::NEG_INFINITY, 1.5), 1.5);
        assert_eq!(log_sum_exp(2.0, f64::NEG_INFINITY), 2.0);
        assert!((log_sum_exp(0.0, 0.0) - 2f64.ln()).abs() < 1e-15);
        assert!((log_sum_exp(1000.0, 1000.0) - (1000.0 + 2f64.ln())).abs() < 1e-12);
    }

    /// The leapfrog integrator is time reversible: forward then backward returns to the start.
    #[test]
    fn leapfrog_is_reversible() {
        let model = std_normal(3);
        let metric = Metric::identity(MetricKind::Diag, 3);
        let mut z = PhasePoint {
            q: vec![0.3, -1.0, 2.0],
            p: vec![1.0, 0.5, -0.2],
            grad: vec![0.0; 3],
            logp: 0.0,
        };
        z.logp = model
            .log_density_gradient(&mut (), &z.q.clone(), &mut z.grad)
            .unwrap();
        let start = z.clone();
        let (mut velocity, mut scratch) = (vec![0.0; 3], vec![0.0; 3]);
        for epsilon in [0.3, -0.3] {
            for _ in 0..7 {
                leapfrog(
                    &model,
                    &mut (),
                    &metric,
                    &mut z,
                    epsilon,
                    &mut velocity,
                    &mut scratch,
                )
                .unwrap();
            }
        }
        for i in 0..3 {
            assert!((z.q[i] - start.q[i]).abs() < 1e-12);
            assert!((z.p[i] - start.p[i]).abs() < 1e-12);
        }
    }

    /// With max_depth = 1 a transition is one leapfrog step; with a tiny step size the energy
    /// error is tiny, so accept_stat ≈ 1, and the reported energy is the Hamiltonian.
    #[test]
    fn statistics_of_a_short_transition() {
        let model = std_normal(2);
        let metric = Metric::identity(MetricKind::Diag, 2);
        let mut state = NutsState::new(&model, &mut (), &[0.5, -0.5], 1).unwrap();
        let mut rng = StreamRng::new(1, 0, Purpose::Sampler);
        let settings = NutsSettings {
            max_depth: 1,
            max_energy_error: 1000.0,
        };
        let t = nuts_step(
            &model,
            &mut (),
            &mut state,
            &metric,
            1e-4,
            &settings,
            &mut rng,
        )
        .unwrap();
        assert_eq!(t.n_leapfrog, 1);
        assert_eq!(t.treedepth, 1);
        assert!(!t.divergent);
        assert!(t.accept_stat > 0.999 && t.accept_stat <= 1.0);
        let lp = -0.5 * state.position().iter().map(|x| x * x).sum::<f64>();
        assert!((t.lp - lp).abs() < 1e-12);
        assert!(t.energy >= -t.lp);
    }

    /// Tree depth never exceeds max_depth and n_leapfrog never exceeds 2^max_depth − 1.
    #[test]
    fn depth_and_steps_are_bounded() {
        let model = std_normal(5);
        let metric = Metric::identity(MetricKind::Diag, 5);
        let mut state = NutsState::new(&model, &mut (), &[0.1; 5], 4).unwrap();
        let mut rng = StreamRng::new(2, 0, Purpose::Sampler);
        let settings = NutsSettings {
            max_depth: 4,
            max_energy_error: 1000.0,
        };
        let mut hit_max = false;
        for _ in 0..200 {
            // A tiny step size makes trajectories long, so max_depth binds.
            let t = nuts_step(
                &model,
                &mut (),
                &mut state,
                &metric,
                0.01,
                &settings,
                &mut rng,
            )
            .unwrap();
            assert!(t.treedepth <= 4);
            assert!(t.n_leapfrog <= 15);
            assert!(t.n_leapfrog >= (1 << t.treedepth) - 1);
            hit_max |= t.treedepth == 4;
        }
        assert!(hit_max);
    }

    #[test]
    fn stepsize_heuristic_brackets_acceptance() {
        let model = std_normal(10);
        let metric = Metric::identity(MetricKind::Diag, 10);
        let mut state = NutsState::new(&model, &mut (), &[0.2; 10], 10).unwrap();
        let mut rng = StreamRng::new(5, 0, Purpose::Sampler);
        let eps =
            find_reasonable_stepsize(&model, &mut (), &mut state, &metric, 1e-3, &mut rng).unwrap();
        // For a standard normal a single step of size ε has energy error O(ε⁴ d): the search
        // climbs by doubling to an ε of order 1.
        assert!(eps > 0.25 && eps < 8.0, "{eps}");
        assert_eq!(state.position(), &[0.2; 10]);
    }
}
