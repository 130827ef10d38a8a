//! The trajectory: one transition, built by doubling from the current point over the
//! preallocated buffers of [`NutsState`], split at every model evaluation
//! ([`NutsState::begin_transition`] / [`NutsState::resume_transition`]); [`nuts_step`] is the
//! plain driver. It strings together the integrator, the proposal and the termination
//! criterion (see the parent module for the algorithm and the iterative construction).

use super::proposal::{log_sum_exp, take_subtree};
use super::termination::{merge_checks, no_u_turn};
use super::{absorb_error, NutsSettings, NutsState, Transition};
use crate::metric::Metric;
use hazel_density::{EvalError, LogDensity};
use hazel_rng::StreamRng;

/// Where a transition stands between two model evaluations.
#[derive(Debug, Clone, Copy)]
pub(super) struct TransitionProgress {
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
    pub(super) forward: bool,
    /// Leaves of the current subtree done so far.
    leaf: u64,
    /// Bit `k` set: `levels[k]` holds a completed left half of size `2^k`.
    pending: u64,
    /// Log of the total weight of the current subtree.
    subtree_log_sum_weight: f64,
}

impl TransitionProgress {
    pub(super) fn idle() -> Self {
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
    /// [`SearchStatus::NeedsEvaluation`](super::SearchStatus::NeedsEvaluation).
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
        z.kick_drift(metric, step, &mut self.scratch);
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
                kinetic = z.kick_velocity(metric, step, &mut span.v_end);
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
        self.proposal
            .offer(rng, t.leaf, log_weight, t.subtree_log_sum_weight, z, h);
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
        if take_subtree(rng, t.subtree_log_sum_weight, t.log_sum_weight) {
            std::mem::swap(&mut self.position, &mut self.proposal.q);
            std::mem::swap(&mut self.gradient, &mut self.proposal.grad);
            self.logp = self.proposal.logp;
            t.sample_energy = self.proposal.energy;
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
