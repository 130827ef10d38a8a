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

use crate::metric::{sum_lanes, Metric, LANES};
use hazel_density::{EvalError, LogDensity};
use hazel_rng::StreamRng;

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

/// A point in phase space: position, momentum, log density and its gradient.
#[derive(Debug, Clone)]
struct PhasePoint {
    q: Vec<f64>,
    p: Vec<f64>,
    grad: Vec<f64>,
    logp: f64,
}

impl PhasePoint {
    fn zeros(dim: usize) -> Self {
        PhasePoint {
            q: vec![0.0; dim],
            p: vec![0.0; dim],
            grad: vec![0.0; dim],
            logp: f64::NAN,
        }
    }
}

/// U-turn bookkeeping of a contiguous span of trajectory points: the momenta and velocities
/// (`M⁻¹ p`) at its two ends and the sum of its momenta. A single point stores only its end
/// (`single`), which then also serves as the begin and as the momentum sum, saving three copies
/// per leapfrog step.
#[derive(Debug, Clone)]
struct Span {
    p_begin: Vec<f64>,
    v_begin: Vec<f64>,
    p_end: Vec<f64>,
    v_end: Vec<f64>,
    rho: Vec<f64>,
    single: bool,
}

impl Span {
    fn zeros(dim: usize) -> Self {
        Span {
            p_begin: vec![0.0; dim],
            v_begin: vec![0.0; dim],
            p_end: vec![0.0; dim],
            v_end: vec![0.0; dim],
            rho: vec![0.0; dim],
            single: true,
        }
    }
    fn p_begin(&self) -> &[f64] {
        if self.single {
            &self.p_end
        } else {
            &self.p_begin
        }
    }
    fn v_begin(&self) -> &[f64] {
        if self.single {
            &self.v_end
        } else {
            &self.v_begin
        }
    }
    fn rho(&self) -> &[f64] {
        if self.single {
            &self.p_end
        } else {
            &self.rho
        }
    }
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
    proposal_q: Vec<f64>,
    proposal_grad: Vec<f64>,
    proposal_logp: f64,
    proposal_energy: f64,
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

/// Why [`find_reasonable_stepsize`] failed (Stan's `init_stepsize` errors, or a fatal error).
#[derive(Debug, Clone, PartialEq)]
pub enum StepsizeError {
    /// The step size grew beyond 1e7 with the energy error still acceptable.
    Improper,
    /// The step size shrank to zero with the energy error still too large.
    NoSmallStepsize,
    /// The model raised a fatal error.
    Fatal(EvalError),
}

impl std::fmt::Display for StepsizeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StepsizeError::Improper => f.write_str("posterior is improper (step size search passed 1e7); please check your model"),
            StepsizeError::NoSmallStepsize => f.write_str(
                "no acceptably small step size could be found; perhaps the posterior is not continuous",
            ),
            StepsizeError::Fatal(e) => write!(f, "fatal error: {e}"),
        }
    }
}

impl std::error::Error for StepsizeError {}

/// `log(exp(a) + exp(b))` without overflow.
#[inline]
fn log_sum_exp(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return b;
    }
    if b == f64::NEG_INFINITY {
        return a;
    }
    if a > b {
        a + (b - a).exp().ln_1p()
    } else {
        b + (a - b).exp().ln_1p()
    }
}

/// The no-U-turn criterion on a span whose momentum sum is `rho_a + rho_b` and whose end
/// velocities are `v_minus` and `v_plus`: true while the span has not turned.
///
/// The two dot products are accumulated in [`LANES`] independent partial sums (a fixed order,
/// so results are reproducible) to avoid a serial floating-point dependency chain.
#[inline]
fn no_u_turn(v_minus: &[f64], v_plus: &[f64], rho_a: &[f64], rho_b: &[f64]) -> bool {
    let n = rho_a.len();
    let (v_minus, v_plus, rho_b) = (&v_minus[..n], &v_plus[..n], &rho_b[..n]);
    let mut dot_minus = [0.0; LANES];
    let mut dot_plus = [0.0; LANES];
    let body = n - n % LANES;
    for (((vm, vp), ra), rb) in v_minus[..body]
        .chunks_exact(LANES)
        .zip(v_plus[..body].chunks_exact(LANES))
        .zip(rho_a[..body].chunks_exact(LANES))
        .zip(rho_b[..body].chunks_exact(LANES))
    {
        for l in 0..LANES {
            let rho = ra[l] + rb[l];
            dot_minus[l] += vm[l] * rho;
            dot_plus[l] += vp[l] * rho;
        }
    }
    for i in body..n {
        let rho = rho_a[i] + rho_b[i];
        dot_minus[0] += v_minus[i] * rho;
        dot_plus[0] += v_plus[i] * rho;
    }
    sum_lanes(&dot_minus) > 0.0 && sum_lanes(&dot_plus) > 0.0
}

/// Partial sums of the six dot products of a merge's three U-turn checks.
type MergeSums = [[f64; MERGE_LANES]; 6];

/// Lanes of the merge's partial sums: six sums of two lanes fit the 16 SSE2 registers with the
/// operands, so nothing spills to the stack.
const MERGE_LANES: usize = 2;

/// One element's contribution to the three checks of merging `left` (l…) with `right` (r…);
/// returns the merged momentum sum at this element.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn merge_element(
    sums: &mut MergeSums,
    lane: usize,
    l_v_begin: f64,
    l_v_end: f64,
    l_p_end: f64,
    l_rho: f64,
    r_v_begin: f64,
    r_v_end: f64,
    r_p_begin: f64,
    r_rho: f64,
) -> f64 {
    let total = l_rho + r_rho;
    sums[0][lane] += l_v_begin * total;
    sums[1][lane] += r_v_end * total;
    let left_extended = l_rho + r_p_begin;
    sums[2][lane] += l_v_begin * left_extended;
    sums[3][lane] += r_v_begin * left_extended;
    let right_extended = r_rho + l_p_end;
    sums[4][lane] += l_v_end * right_extended;
    sums[5][lane] += r_v_end * right_extended;
    total
}

/// Stan's three U-turn checks when `left` and `right` (adjacent spans, `left` first in the
/// direction of integration) merge: on the merged span, on `left` plus the first point of
/// `right`, and on the last point of `left` plus `right`. All six dot products and the merged
/// momentum sum (written into `right.rho`) are computed in one pass over the dimensions.
/// Returns true while none of the three has turned.
fn merge_checks(left: &Span, right: &mut Span) -> bool {
    let n = right.rho.len();
    let (l_vb, l_ve, l_pe, l_rho) = (
        &left.v_begin()[..n],
        &left.v_end[..n],
        &left.p_end[..n],
        &left.rho()[..n],
    );
    let mut sums: MergeSums = [[0.0; MERGE_LANES]; 6];
    // Blocks of MERGE_LANES elements, element `block + l` into lane `l`; the tail into lane 0.
    let body = n - n % MERGE_LANES;
    if right.single {
        // A single point is its own begin, end and momentum sum.
        let (r_v, r_p, out) = (&right.v_end[..n], &right.p_end[..n], &mut right.rho[..n]);
        for block in (0..body).step_by(MERGE_LANES) {
            for lane in 0..MERGE_LANES {
                let i = block + lane;
                out[i] = merge_element(
                    &mut sums, lane, l_vb[i], l_ve[i], l_pe[i], l_rho[i], r_v[i], r_v[i], r_p[i],
                    r_p[i],
                );
            }
        }
        for i in body..n {
            out[i] = merge_element(
                &mut sums, 0, l_vb[i], l_ve[i], l_pe[i], l_rho[i], r_v[i], r_v[i], r_p[i], r_p[i],
            );
        }
    } else {
        let (r_vb, r_ve, r_pb, rho) = (
            &right.v_begin[..n],
            &right.v_end[..n],
            &right.p_begin[..n],
            &mut right.rho[..n],
        );
        for block in (0..body).step_by(MERGE_LANES) {
            for lane in 0..MERGE_LANES {
                let i = block + lane;
                rho[i] = merge_element(
                    &mut sums, lane, l_vb[i], l_ve[i], l_pe[i], l_rho[i], r_vb[i], r_ve[i],
                    r_pb[i], rho[i],
                );
            }
        }
        for i in body..n {
            rho[i] = merge_element(
                &mut sums, 0, l_vb[i], l_ve[i], l_pe[i], l_rho[i], r_vb[i], r_ve[i], r_pb[i],
                rho[i],
            );
        }
    }
    let total = |k: usize| sums[k][0] + sums[k][1];
    (0..6).all(|k| total(k) > 0.0)
}

/// One leapfrog step of size `epsilon` (negative: backward in time) applied in place to `z`.
/// On success returns the log density at the new point and its kinetic energy, with the new
/// velocity `M⁻¹ p` in `velocity`; on `Err` the point is unusable. (The sampler runs the two
/// halves around its own evaluation requests; this whole step is the tests' reference.)
#[cfg(test)]
fn leapfrog<M: LogDensity + ?Sized>(
    model: &M,
    ws: &mut M::Workspace,
    metric: &Metric,
    z: &mut PhasePoint,
    epsilon: f64,
    velocity: &mut [f64],
    scratch: &mut [f64],
) -> Result<(f64, f64), EvalError> {
    metric.kick_drift(0.5 * epsilon, epsilon, &z.grad, &mut z.p, &mut z.q, scratch);
    let logp = model.log_density_gradient(ws, &z.q, &mut z.grad)?;
    let kinetic = metric.kick_velocity(0.5 * epsilon, &z.grad, &mut z.p, velocity);
    Ok((logp, kinetic))
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
            proposal_q: vec![0.0; dim],
            proposal_grad: vec![0.0; dim],
            proposal_logp: f64::NAN,
            proposal_energy: f64::NAN,
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

/// Where a transition stands between two model evaluations.
#[derive(Debug, Clone, Copy)]
struct TransitionProgress {
    /// A transition was begun and has not finished.
    active: bool,
    epsilon: f64,
    max_depth: u32,
    max_energy_error: f64,
    /// Hamiltonian at the start of the transition.
    h0: f64,
    /// Hamiltonian of the currently selected point.
    sample_energy: f64,
    /// Log of the total weight of the trajectory so far.
    log_sum_weight: f64,
    n_leapfrog: u32,
    sum_metro_prob: f64,
    divergent: bool,
    /// Completed doublings.
    depth: u32,
    /// Direction of the subtree being built.
    forward: bool,
    /// Leaves of the current subtree done so far.
    leaf: u64,
    /// Bit `k` set: `levels[k]` holds a completed left half of size `2^k`.
    pending: u64,
    /// Log of the total weight of the current subtree.
    subtree_log_sum_weight: f64,
}

impl TransitionProgress {
    fn idle() -> Self {
        TransitionProgress {
            active: false,
            epsilon: f64::NAN,
            max_depth: 0,
            max_energy_error: f64::NAN,
            h0: f64::NAN,
            sample_energy: f64::NAN,
            log_sum_weight: f64::NEG_INFINITY,
            n_leapfrog: 0,
            sum_metro_prob: 0.0,
            divergent: false,
            depth: 0,
            forward: true,
            leaf: 0,
            pending: 0,
            subtree_log_sum_weight: f64::NEG_INFINITY,
        }
    }
}

/// What a transition needs next (see [`NutsState::begin_transition`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StepStatus {
    /// Evaluate the log density and its gradient at [`NutsState::evaluation_point`] and pass
    /// the result to [`NutsState::resume_transition`].
    NeedsEvaluation,
    /// The transition is complete; the state holds the new point.
    Done(Transition),
}

/// What the leaf just finished means for its subtree.
enum LeafOutcome {
    /// More leaves to go.
    Continue,
    /// The subtree diverged or turned: the transition ends.
    Invalid,
    /// The subtree is complete and valid.
    Complete,
}

impl NutsState {
    /// Starts a transition with step size `epsilon`: draws the momentum and the first
    /// direction and takes the first half of the first leapfrog step.
    ///
    /// This and [`NutsState::resume_transition`] split [`nuts_step`] at each model evaluation,
    /// so that a driver can evaluate many chains' points at once (a batched or GPU density):
    /// call `begin_transition`, then while the status is [`StepStatus::NeedsEvaluation`],
    /// evaluate the model at [`NutsState::evaluation_point`] (writing the gradient into the
    /// slice it returns) and pass the result to `resume_transition`. The same `metric`, and the
    /// chain's own `rng`, must be passed to every call of one transition.
    pub fn begin_transition(
        &mut self,
        metric: &Metric,
        epsilon: f64,
        settings: &NutsSettings,
        rng: &mut StreamRng,
    ) -> StepStatus {
        debug_assert!(
            settings.max_depth <= self.max_depth,
            "state allocated for a smaller max_depth"
        );
        let h0 = self.start_at_current(metric, rng);
        {
            let (f, b) = (&self.forward, &mut self.backward);
            b.q.copy_from_slice(&f.q);
            b.p.copy_from_slice(&f.p);
            b.grad.copy_from_slice(&f.grad);
            b.logp = f.logp;
        }
        self.v_backward.copy_from_slice(&self.v_forward);
        self.rho.copy_from_slice(&self.forward.p);
        self.progress = TransitionProgress {
            active: true,
            epsilon,
            max_depth: settings.max_depth.min(self.max_depth),
            max_energy_error: settings.max_energy_error,
            h0,
            sample_energy: h0,
            // The initial point has weight exp(H0 − H0) = 1.
            log_sum_weight: 0.0,
            ..TransitionProgress::idle()
        };
        self.start_doubling(metric, rng)
    }

    /// The point at which the model must be evaluated next, and the buffer its gradient must
    /// be written into. Only meaningful after a [`StepStatus::NeedsEvaluation`] or a
    /// [`SearchStatus::NeedsEvaluation`].
    pub fn evaluation_point(&mut self) -> (&[f64], &mut [f64]) {
        let z = if self.progress.forward {
            &mut self.forward
        } else {
            &mut self.backward
        };
        (&z.q, &mut z.grad)
    }

    /// Continues a transition with the model's result at [`NutsState::evaluation_point`]
    /// (the gradient already written there). A non-fatal error is a divergence; a fatal one is
    /// returned, and the transition is then abandoned (the state keeps a valid position, with
    /// its log density and gradient, from which a new transition may begin).
    pub fn resume_transition(
        &mut self,
        metric: &Metric,
        rng: &mut StreamRng,
        result: Result<f64, EvalError>,
    ) -> Result<StepStatus, EvalError> {
        debug_assert!(
            self.progress.active,
            "resume_transition without begin_transition"
        );
        match self.finish_leaf(metric, rng, result)? {
            LeafOutcome::Continue => {
                self.start_leaf(metric);
                Ok(StepStatus::NeedsEvaluation)
            }
            LeafOutcome::Invalid => Ok(self.finish_transition()),
            LeafOutcome::Complete => {
                if self.join_subtree(rng) {
                    Ok(self.start_doubling(metric, rng))
                } else {
                    Ok(self.finish_transition())
                }
            }
        }
    }

    /// Begins the next doubling, or ends the transition at the maximum depth.
    fn start_doubling(&mut self, metric: &Metric, rng: &mut StreamRng) -> StepStatus {
        if self.progress.depth >= self.progress.max_depth {
            return self.finish_transition();
        }
        let forward = rng.uniform() > 0.5;
        let t = &mut self.progress;
        t.forward = forward;
        t.leaf = 0;
        t.pending = 0;
        t.subtree_log_sum_weight = f64::NEG_INFINITY;
        // Remember the old trajectory's end that the new subtree attaches to.
        if forward {
            self.inner_p.copy_from_slice(&self.forward.p);
            self.inner_v.copy_from_slice(&self.v_forward);
        } else {
            self.inner_p.copy_from_slice(&self.backward.p);
            self.inner_v.copy_from_slice(&self.v_backward);
        }
        self.start_leaf(metric);
        StepStatus::NeedsEvaluation
    }

    /// The first half of a leapfrog step at the growing end: half kick, then drift.
    fn start_leaf(&mut self, metric: &Metric) {
        let t = &self.progress;
        let step = if t.forward { t.epsilon } else { -t.epsilon };
        let z = if t.forward {
            &mut self.forward
        } else {
            &mut self.backward
        };
        metric.kick_drift(
            0.5 * step,
            step,
            &z.grad,
            &mut z.p,
            &mut z.q,
            &mut self.scratch,
        );
    }

    /// The second half of the leapfrog step, then the leaf's weight, divergence check,
    /// progressive draw and every merge it completes.
    fn finish_leaf(
        &mut self,
        metric: &Metric,
        rng: &mut StreamRng,
        result: Result<f64, EvalError>,
    ) -> Result<LeafOutcome, EvalError> {
        let t = &mut self.progress;
        let step = if t.forward { t.epsilon } else { -t.epsilon };
        let z = if t.forward {
            &mut self.forward
        } else {
            &mut self.backward
        };
        let span = &mut self.current;
        let mut failed = false;
        let mut kinetic = 0.0;
        match result {
            Ok(logp) => {
                z.logp = logp;
                kinetic = metric.kick_velocity(0.5 * step, &z.grad, &mut z.p, &mut span.v_end);
            }
            Err(error) => {
                absorb_error(&mut self.rejection, error)?;
                z.logp = f64::NEG_INFINITY;
                failed = true;
            }
        }
        t.n_leapfrog += 1;
        let mut h = -z.logp + kinetic;
        if h.is_nan() || failed {
            h = f64::INFINITY;
        }
        if h - t.h0 > t.max_energy_error || failed {
            t.divergent = true;
        }
        let log_weight = t.h0 - h;
        t.subtree_log_sum_weight = log_sum_exp(t.subtree_log_sum_weight, log_weight);
        t.sum_metro_prob += if log_weight > 0.0 {
            1.0
        } else {
            log_weight.exp()
        };
        if t.divergent {
            return Ok(LeafOutcome::Invalid);
        }
        // Progressive multinomial draw within the subtree.
        if t.leaf == 0 || rng.uniform() < (log_weight - t.subtree_log_sum_weight).exp() {
            self.proposal_q.copy_from_slice(&z.q);
            self.proposal_grad.copy_from_slice(&z.grad);
            self.proposal_logp = z.logp;
            self.proposal_energy = h;
        }
        span.p_end.copy_from_slice(&z.p);
        span.single = true;

        // Merge the completed span with every pending left half of the same size.
        let mut level = 0usize;
        while t.pending & (1 << level) != 0 {
            let left = &mut self.levels[level];
            let right = &mut self.current;
            if !merge_checks(left, right) {
                return Ok(LeafOutcome::Invalid);
            }
            // The merged span: begin of the left half, end of the right (its momentum sum was
            // written by `merge_checks`).
            if left.single {
                std::mem::swap(&mut right.p_begin, &mut left.p_end);
                std::mem::swap(&mut right.v_begin, &mut left.v_end);
            } else {
                std::mem::swap(&mut right.p_begin, &mut left.p_begin);
                std::mem::swap(&mut right.v_begin, &mut left.v_begin);
            }
            right.single = false;
            t.pending &= !(1 << level);
            level += 1;
        }
        if (level as u32) < t.depth {
            std::mem::swap(&mut self.levels[level], &mut self.current);
            t.pending |= 1 << level;
        }
        t.leaf += 1;
        if t.leaf == 1 << t.depth {
            Ok(LeafOutcome::Complete)
        } else {
            Ok(LeafOutcome::Continue)
        }
    }

    /// Joins a completed valid subtree (in `current`) to the trajectory: biased progressive
    /// sampling and the U-turn checks between the old trajectory and the subtree. Returns
    /// whether the trajectory may keep growing.
    fn join_subtree(&mut self, rng: &mut StreamRng) -> bool {
        let t = &mut self.progress;
        t.depth += 1;
        // Biased progressive sampling: move to the new subtree's draw with probability
        // min(1, W_subtree / W_old).
        let take = t.subtree_log_sum_weight > t.log_sum_weight
            || rng.uniform() < (t.subtree_log_sum_weight - t.log_sum_weight).exp();
        if take {
            std::mem::swap(&mut self.position, &mut self.proposal_q);
            std::mem::swap(&mut self.gradient, &mut self.proposal_grad);
            self.logp = self.proposal_logp;
            t.sample_energy = self.proposal_energy;
        }
        t.log_sum_weight = log_sum_exp(t.log_sum_weight, t.subtree_log_sum_weight);

        // U-turn checks between the old trajectory and the new subtree, as between two halves.
        let span = &self.current;
        let outer_v = if t.forward {
            &self.v_backward
        } else {
            &self.v_forward
        };
        let persist = no_u_turn(outer_v, &span.v_end, &self.rho, span.rho())
            && no_u_turn(outer_v, span.v_begin(), &self.rho, span.p_begin())
            && no_u_turn(&self.inner_v, &span.v_end, span.rho(), &self.inner_p);
        for (r, &s) in self.rho.iter_mut().zip(span.rho()) {
            *r += s;
        }
        if t.forward {
            self.v_forward.copy_from_slice(&span.v_end);
        } else {
            self.v_backward.copy_from_slice(&span.v_end);
        }
        persist
    }

    fn finish_transition(&mut self) -> StepStatus {
        let t = &mut self.progress;
        t.active = false;
        let accept_stat = if t.n_leapfrog > 0 {
            t.sum_metro_prob / f64::from(t.n_leapfrog)
        } else {
            0.0
        };
        StepStatus::Done(Transition {
            lp: self.logp,
            accept_stat,
            treedepth: t.depth,
            n_leapfrog: t.n_leapfrog,
            divergent: t.divergent,
            energy: t.sample_energy,
        })
    }
}

/// One NUTS transition from `state` with step size `epsilon` and metric `metric`.
///
/// Updates `state` to the selected point and returns the iteration's statistics. Non-fatal
/// evaluation errors on the trajectory are divergences (see [`NutsState::take_rejection`]); a
/// fatal one is returned as `Err`. This is [`NutsState::begin_transition`] and
/// [`NutsState::resume_transition`] with the model evaluated in between.
pub fn nuts_step<M: LogDensity + ?Sized>(
    model: &M,
    ws: &mut M::Workspace,
    state: &mut NutsState,
    metric: &Metric,
    epsilon: f64,
    settings: &NutsSettings,
    rng: &mut StreamRng,
) -> Result<Transition, EvalError> {
    let mut status = state.begin_transition(metric, epsilon, settings, rng);
    loop {
        match status {
            StepStatus::Done(transition) => return Ok(transition),
            StepStatus::NeedsEvaluation => {
                let (q, grad) = state.evaluation_point();
                let result = model.log_density_gradient(ws, q, grad);
                status = state.resume_transition(metric, rng, result)?;
            }
        }
    }
}

/// Stan's step-size heuristic (`base_hmc::init_stepsize`): starting from `epsilon`, double or
/// halve the step size until the acceptance of a single leapfrog step from the current position
/// (with a fresh momentum each try) crosses 0.8. The chain's position is unchanged.
///
/// Step sizes of 0, NaN or above 1e7 are returned as they are (Stan skips the search for them),
/// and so is any step size for a model with no parameters. This is
/// [`NutsState::begin_stepsize_search`] and [`NutsState::resume_stepsize_search`] with the
/// model evaluated in between.
pub fn find_reasonable_stepsize<M: LogDensity + ?Sized>(
    model: &M,
    ws: &mut M::Workspace,
    state: &mut NutsState,
    metric: &Metric,
    epsilon: f64,
    rng: &mut StreamRng,
) -> Result<f64, StepsizeError> {
    let mut status = state.begin_stepsize_search(metric, epsilon, rng);
    loop {
        match status {
            SearchStatus::Done(result) => return result,
            SearchStatus::NeedsEvaluation => {
                let (q, grad) = state.evaluation_point();
                let result = model.log_density_gradient(ws, q, grad);
                status = state.resume_stepsize_search(metric, rng, result);
            }
        }
    }
}

/// What a step-size search needs next (see [`NutsState::begin_stepsize_search`]).
#[derive(Debug, Clone, PartialEq)]
pub enum SearchStatus {
    /// Evaluate the model at [`NutsState::evaluation_point`] and pass the result to
    /// [`NutsState::resume_stepsize_search`].
    NeedsEvaluation,
    /// The search is over: the step size found, or why there is none.
    Done(Result<f64, StepsizeError>),
}

/// Where a step-size search stands between two model evaluations.
#[derive(Debug, Clone, Copy)]
struct SearchProgress {
    /// The step size of the trial being evaluated.
    epsilon: f64,
    /// Whether the search doubles (`Some(true)`) or halves; `None` until the first trial,
    /// whose energy change decides it, is back.
    grow: Option<bool>,
    /// Hamiltonian at the start of the trial.
    h0: f64,
}

impl SearchProgress {
    fn idle() -> Self {
        SearchProgress {
            epsilon: f64::NAN,
            grow: None,
            h0: f64::NAN,
        }
    }
}

impl NutsState {
    /// Starts Stan's step-size heuristic from `epsilon` (see [`find_reasonable_stepsize`]), split
    /// at each model evaluation as [`NutsState::begin_transition`] splits a transition: while
    /// the status is [`SearchStatus::NeedsEvaluation`], evaluate the model at
    /// [`NutsState::evaluation_point`] and pass the result to
    /// [`NutsState::resume_stepsize_search`], with the same `metric` and the chain's own `rng`.
    pub fn begin_stepsize_search(
        &mut self,
        metric: &Metric,
        epsilon: f64,
        rng: &mut StreamRng,
    ) -> SearchStatus {
        // A model without parameters has no energy error at any step size: nothing to tune.
        if epsilon == 0.0 || epsilon > 1e7 || epsilon.is_nan() || self.dim() == 0 {
            return SearchStatus::Done(Ok(epsilon));
        }
        self.search = SearchProgress {
            epsilon,
            grow: None,
            h0: f64::NAN,
        };
        self.start_trial(metric, rng)
    }

    /// Continues a step-size search with the model's result at
    /// [`NutsState::evaluation_point`] (the gradient already written there).
    // Stan's negated comparisons: a NaN energy change ends the search.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    pub fn resume_stepsize_search(
        &mut self,
        metric: &Metric,
        rng: &mut StreamRng,
        result: Result<f64, EvalError>,
    ) -> SearchStatus {
        let log_target = 0.8f64.ln();
        let search = &mut self.search;
        let epsilon = search.epsilon;
        let h = match result {
            Ok(logp) => {
                let z = &mut self.forward;
                let kinetic =
                    metric.kick_velocity(0.5 * epsilon, &z.grad, &mut z.p, &mut self.v_forward);
                let h = -logp + kinetic;
                if h.is_nan() {
                    f64::INFINITY
                } else {
                    h
                }
            }
            Err(error) => {
                if let Err(fatal) = absorb_error(&mut self.rejection, error) {
                    return SearchStatus::Done(Err(StepsizeError::Fatal(fatal)));
                }
                f64::INFINITY
            }
        };
        let delta_h = search.h0 - h;
        match search.grow {
            // The first trial only decides the direction; the next repeats its step size.
            None => search.grow = Some(delta_h > log_target),
            Some(grow) => {
                if grow && !(delta_h > log_target) || !grow && !(delta_h < log_target) {
                    return SearchStatus::Done(Ok(epsilon));
                }
                search.epsilon = if grow { 2.0 * epsilon } else { 0.5 * epsilon };
                if search.epsilon > 1e7 {
                    return SearchStatus::Done(Err(StepsizeError::Improper));
                }
                if search.epsilon == 0.0 {
                    return SearchStatus::Done(Err(StepsizeError::NoSmallStepsize));
                }
            }
        }
        self.start_trial(metric, rng)
    }

    /// A trial of the search: a fresh momentum at the current position, then the first half of
    /// one leapfrog step forward; the model is evaluated at the forward end.
    fn start_trial(&mut self, metric: &Metric, rng: &mut StreamRng) -> SearchStatus {
        self.search.h0 = self.start_at_current(metric, rng);
        self.progress.forward = true;
        let epsilon = self.search.epsilon;
        let z = &mut self.forward;
        metric.kick_drift(
            0.5 * epsilon,
            epsilon,
            &z.grad,
            &mut z.p,
            &mut z.q,
            &mut self.scratch,
        );
        SearchStatus::NeedsEvaluation
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::MetricKind;
    use hazel_rng::Purpose;

    struct StdNormal(usize);
    impl LogDensity for StdNormal {
        type Workspace = ();
        fn dim(&self) -> usize {
            self.0
        }
        fn new_workspace(&self) {}
        fn log_density_gradient(
            &self,
            _: &mut (),
            q: &[f64],
            g: &mut [f64],
        ) -> Result<f64, EvalError> {
            let mut lp = 0.0;
            for (gi, &qi) in g.iter_mut().zip(q) {
                *gi = -qi;
                lp -= 0.5 * qi * qi;
            }
            Ok(lp)
        }
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
        let model = StdNormal(3);
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
        for _ in 0..7 {
            leapfrog(
                &model,
                &mut (),
                &metric,
                &mut z,
                0.3,
                &mut velocity,
                &mut scratch,
            )
            .unwrap();
        }
        for _ in 0..7 {
            leapfrog(
                &model,
                &mut (),
                &metric,
                &mut z,
                -0.3,
                &mut velocity,
                &mut scratch,
            )
            .unwrap();
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
        let model = StdNormal(2);
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
        let model = StdNormal(5);
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
        let model = StdNormal(10);
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
