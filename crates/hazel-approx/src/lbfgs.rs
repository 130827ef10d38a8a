//! The limited-memory inverse-Hessian approximation: the last `history` pairs
//! `(s_k, y_k) = (x_{k+1} − x_k, ∇f_{k+1} − ∇f_k)` and the two-loop recursion (Nocedal and
//! Wright, algorithm 7.4), scaled by `γ = sᵀy / yᵀy` of the newest pair, as Stan's
//! `LBFGSUpdate`.

use crate::dense::{axpy, dot};
use std::collections::VecDeque;

/// One stored update: `ρ = 1 / sᵀy`, `y`, `s`.
#[derive(Debug, Clone, PartialEq)]
struct Update {
    rho: f64,
    y: Vec<f64>,
    s: Vec<f64>,
}

/// The history of the last `capacity` updates, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LbfgsHistory {
    capacity: usize,
    updates: VecDeque<Update>,
    gamma: f64,
    /// The two-loop recursion's coefficients (one per update), kept to avoid allocating.
    alphas: Vec<f64>,
}

impl LbfgsHistory {
    /// An empty history keeping `capacity` updates (CmdStan's `history_size`, default 5).
    pub fn new(capacity: usize) -> Self {
        LbfgsHistory {
            capacity: capacity.max(1),
            updates: VecDeque::with_capacity(capacity.max(1)),
            gamma: 1.0,
            alphas: Vec::with_capacity(capacity.max(1)),
        }
    }

    /// Adds the pair `(y, s)`; with `reset` the history is cleared first. Returns the scale of
    /// the initial Hessian approximation, `yᵀy / sᵀy`, after a reset (which predicts step
    /// sizes), else 1.
    pub fn update(&mut self, y: &[f64], s: &[f64], reset: bool) -> f64 {
        let sy = dot(y, s);
        let yy = dot(y, y);
        let b0 = if reset {
            self.updates.clear();
            yy / sy
        } else {
            1.0
        };
        self.gamma = sy / yy;
        let mut update = if self.updates.len() == self.capacity {
            self.updates
                .pop_front()
                .expect("a full history has an oldest update")
        } else {
            Update {
                rho: 0.0,
                y: Vec::new(),
                s: Vec::new(),
            }
        };
        update.rho = 1.0 / sy;
        update.y.clear();
        update.y.extend_from_slice(y);
        update.s.clear();
        update.s.extend_from_slice(s);
        self.updates.push_back(update);
        b0
    }

    /// `p = −H g` for the current approximation `H` of the inverse Hessian.
    pub fn direction(&mut self, g: &[f64], p: &mut [f64]) {
        p.iter_mut().zip(g).for_each(|(pi, gi)| *pi = -gi);
        self.alphas.clear();
        self.alphas.resize(self.updates.len(), 0.0);
        for (i, u) in self.updates.iter().enumerate().rev() {
            let a = u.rho * dot(&u.s, p);
            axpy(-a, &u.y, p);
            self.alphas[i] = a;
        }
        p.iter_mut().for_each(|pi| *pi *= self.gamma);
        for (u, &a) in self.updates.iter().zip(&self.alphas) {
            let b = u.rho * dot(&u.y, p);
            axpy(a - b, &u.s, p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With a full history on a quadratic in n dimensions after n exact line-search steps the
    /// two-loop recursion applies the inverse Hessian exactly (the secant equations hold for
    /// the last pair: H y = s).
    #[test]
    fn secant_equation_for_the_newest_pair() {
        let mut h = LbfgsHistory::new(3);
        let pairs = [
            ([1.0, 0.5, 0.0], [0.5, 0.2, 0.1]),
            ([0.0, 2.0, 1.0], [0.1, 1.0, 0.3]),
            ([0.3, 0.1, 3.0], [0.0, 0.2, 1.1]),
        ];
        for (k, (y, s)) in pairs.iter().enumerate() {
            h.update(y, s, k == 0);
        }
        let (y, s) = pairs[2];
        let mut p = [0.0; 3];
        h.direction(&y, &mut p);
        for i in 0..3 {
            assert!((-p[i] - s[i]).abs() < 1e-12, "{p:?}");
        }
    }

    #[test]
    fn oldest_pair_is_forgotten() {
        let mut h = LbfgsHistory::new(1);
        h.update(&[1.0, 0.0], &[2.0, 0.0], true);
        h.update(&[0.0, 1.0], &[0.0, 3.0], false);
        let mut p = [0.0; 2];
        h.direction(&[1.0, 1.0], &mut p);
        // Only the second pair: γ = 3, H = diag(3, 3) restricted by the pair → [−3, −3].
        assert!(
            (p[0] + 3.0).abs() < 1e-12 && (p[1] + 3.0).abs() < 1e-12,
            "{p:?}"
        );
    }
}
