//! The proposal: multinomial sampling of the next point among the trajectory's points, in
//! proportion to their weights `exp(H0 − H(z))`. Inside a subtree the draw is progressive, leaf
//! by leaf, into one [`Proposal`] buffer; at the top level the new subtree's draw replaces the
//! current point by biased progressive sampling. Both decide with the chain's random stream,
//! drawing a uniform only when the outcome is not already certain (so the stream is consumed
//! exactly as before the split).

use super::integrator::PhasePoint;
use hazel_rng::StreamRng;

/// `log(exp(a) + exp(b))` without overflow.
#[inline]
pub(super) fn log_sum_exp(a: f64, b: f64) -> f64 {
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

/// A subtree's running multinomial proposal: position, gradient, log density and energy.
#[derive(Debug, Clone)]
pub(super) struct Proposal {
    pub(super) q: Vec<f64>,
    pub(super) grad: Vec<f64>,
    pub(super) logp: f64,
    pub(super) energy: f64,
}

impl Proposal {
    pub(super) fn zeros(dim: usize) -> Self {
        Proposal {
            q: vec![0.0; dim],
            grad: vec![0.0; dim],
            logp: f64::NAN,
            energy: f64::NAN,
        }
    }

    /// Progressive multinomial draw within a subtree: leaf number `leaf` (from 0), of log weight
    /// `log_weight`, replaces the running proposal with probability `w_leaf / W_{0..leaf}`
    /// (`subtree_log_sum_weight` already includes it); the first leaf always does.
    #[inline]
    pub(super) fn offer(
        &mut self,
        rng: &mut StreamRng,
        leaf: u64,
        log_weight: f64,
        subtree_log_sum_weight: f64,
        z: &PhasePoint,
        energy: f64,
    ) {
        if leaf == 0 || rng.uniform() < (log_weight - subtree_log_sum_weight).exp() {
            self.q.copy_from_slice(&z.q);
            self.grad.copy_from_slice(&z.grad);
            self.logp = z.logp;
            self.energy = energy;
        }
    }
}

/// Biased progressive sampling: whether to move to the new subtree's draw, with probability
/// `min(1, W_subtree / W_old)` from the log total weights.
#[inline]
pub(super) fn take_subtree(
    rng: &mut StreamRng,
    subtree_log_sum_weight: f64,
    log_sum_weight: f64,
) -> bool {
    subtree_log_sum_weight > log_sum_weight
        || rng.uniform() < (subtree_log_sum_weight - log_sum_weight).exp()
}
