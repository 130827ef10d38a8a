//! The dense BFGS approximation of the inverse Hessian,
//! `H ← (I − ρ s yᵀ) H (I − ρ y sᵀ) + ρ s sᵀ` with `ρ = 1 / sᵀy` (Stan's `BFGSUpdate_HInv`);
//! after a reset `H` starts from `(sᵀy / yᵀy) I`.

use crate::dense::{dot, mat_vec};

/// `H`, `n × n`, symmetric, column-major.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DenseInverseHessian {
    n: usize,
    h: Vec<f64>,
    /// `H y`, kept to avoid allocating.
    hy: Vec<f64>,
}

impl DenseInverseHessian {
    pub fn new(n: usize) -> Self {
        let mut h = vec![0.0; n * n];
        for i in 0..n {
            h[i + i * n] = 1.0;
        }
        DenseInverseHessian {
            n,
            h,
            hy: vec![0.0; n],
        }
    }

    /// The update with the pair `(y, s)`; `reset` first sets `H = (sᵀy / yᵀy) I`. Returns
    /// `yᵀy / sᵀy` after a reset, else 1 (see [`crate::lbfgs::LbfgsHistory::update`]).
    pub fn update(&mut self, y: &[f64], s: &[f64], reset: bool) -> f64 {
        let n = self.n;
        let sy = dot(y, s);
        let rho = 1.0 / sy;
        let b0 = if reset {
            let b0 = dot(y, y) / sy;
            self.h.iter_mut().for_each(|v| *v = 0.0);
            for i in 0..n {
                self.h[i + i * n] = 1.0 / b0;
            }
            b0
        } else {
            1.0
        };
        // (I − ρ s yᵀ) H (I − ρ y sᵀ) + ρ s sᵀ = H − ρ (s (Hy)ᵀ + (Hy) sᵀ) + (ρ² yᵀHy + ρ) s sᵀ.
        mat_vec(&self.h, n, n, y, &mut self.hy);
        let yhy = dot(y, &self.hy);
        let c = rho * rho * yhy + rho;
        for j in 0..n {
            for i in 0..n {
                self.h[i + j * n] +=
                    -rho * (s[i] * self.hy[j] + self.hy[i] * s[j]) + c * s[i] * s[j];
            }
        }
        b0
    }

    /// `p = −H g`.
    pub fn direction(&self, g: &[f64], p: &mut [f64]) {
        mat_vec(&self.h, self.n, self.n, g, p);
        p.iter_mut().for_each(|v| *v = -*v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a quadratic with Hessian A, n updates with linearly independent steps give H = A⁻¹
    /// (BFGS's finite termination property; y = A s exactly).
    #[test]
    fn recovers_the_inverse_of_a_quadratic_hessian() {
        let a = [4.0, 1.0, 0.0, 1.0, 3.0, 0.5, 0.0, 0.5, 2.0];
        let steps = [[1.0, 0.0, 0.0], [0.2, 1.0, 0.0], [0.1, -0.3, 1.0]];
        let mut h = DenseInverseHessian::new(3);
        // Conjugate directions so that the quasi-Newton matrix is exact after 3 updates.
        let mut dirs: Vec<[f64; 3]> = Vec::new();
        for s in steps {
            let mut d = s;
            for prev in &dirs {
                let mut ap = [0.0; 3];
                mat_vec(&a, 3, 3, prev, &mut ap);
                let coef = dot(&d, &ap) / dot(prev, &ap);
                for i in 0..3 {
                    d[i] -= coef * prev[i];
                }
            }
            dirs.push(d);
        }
        for (k, s) in dirs.iter().enumerate() {
            let mut y = [0.0; 3];
            mat_vec(&a, 3, 3, s, &mut y);
            h.update(&y, s, k == 0);
        }
        let mut product = [0.0; 9];
        crate::dense::mat_mul(&h.h, 3, 3, &a, 3, &mut product);
        for j in 0..3 {
            for i in 0..3 {
                let want = if i == j { 1.0 } else { 0.0 };
                assert!((product[i + 3 * j] - want).abs() < 1e-12, "{product:?}");
            }
        }
    }
}
