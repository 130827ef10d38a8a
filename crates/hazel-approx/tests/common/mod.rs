//! Log densities with known answers, written directly in Rust.
#![allow(dead_code, clippy::needless_range_loop)]

use hazel_density::{DensityTerms, EvalError, LogDensity};

/// A multivariate normal N(mean, Σ) given by its precision P = Σ⁻¹ (column-major).
pub struct Gaussian {
    pub mean: Vec<f64>,
    pub precision: Vec<f64>,
    pub covariance: Vec<f64>,
}

impl Gaussian {
    /// A correlated 3-dimensional Gaussian with unequal scales.
    pub fn correlated() -> Self {
        // Σ = D C D with sds (0.5, 2, 1) and correlations 0.6, −0.3, 0.2.
        let sd = [0.5, 2.0, 1.0];
        let corr = [1.0, 0.6, -0.3, 0.6, 1.0, 0.2, -0.3, 0.2, 1.0];
        let mut cov = vec![0.0; 9];
        for j in 0..3 {
            for i in 0..3 {
                cov[i + 3 * j] = sd[i] * sd[j] * corr[i + 3 * j];
            }
        }
        Self::new(vec![1.0, -2.0, 0.5], cov)
    }

    pub fn new(mean: Vec<f64>, covariance: Vec<f64>) -> Self {
        let d = mean.len();
        let precision = invert(&covariance, d);
        Gaussian {
            mean,
            precision,
            covariance,
        }
    }
}

/// Inverse of a small symmetric positive-definite matrix by Gauss–Jordan.
pub fn invert(a: &[f64], d: usize) -> Vec<f64> {
    let mut m = a.to_vec();
    let mut inv = vec![0.0; d * d];
    for i in 0..d {
        inv[i + i * d] = 1.0;
    }
    for c in 0..d {
        let p = m[c + c * d];
        for j in 0..d {
            m[c + j * d] /= p;
            inv[c + j * d] /= p;
        }
        for r in 0..d {
            if r != c {
                let f = m[r + c * d];
                for j in 0..d {
                    m[r + j * d] -= f * m[c + j * d];
                    inv[r + j * d] -= f * inv[c + j * d];
                }
            }
        }
    }
    inv
}

impl LogDensity for Gaussian {
    type Workspace = ();
    fn dim(&self) -> usize {
        self.mean.len()
    }
    fn new_workspace(&self) {}
    fn log_density_gradient(
        &self,
        _: &mut (),
        q: &[f64],
        grad: &mut [f64],
    ) -> Result<f64, EvalError> {
        let d = self.dim();
        let diff: Vec<f64> = q.iter().zip(&self.mean).map(|(a, b)| a - b).collect();
        let mut lp = 0.0;
        for i in 0..d {
            let mut pd = 0.0;
            for j in 0..d {
                pd += self.precision[i + j * d] * diff[j];
            }
            grad[i] = -pd;
            lp -= 0.5 * diff[i] * pd;
        }
        Ok(lp)
    }
}

/// θ | y ~ Beta(a + y, b + n − y) from a Beta(a, b) prior and y successes in n trials, on the
/// logit scale u = logit θ. Without the Jacobian the mode is the Beta mode
/// (a + y − 1)/(a + b + n − 2); with it, θ = (a + y)/(a + b + n).
pub struct BetaBinomial {
    pub a: f64,
    pub b: f64,
    pub y: f64,
    pub n: f64,
}

impl BetaBinomial {
    pub fn mode_without_jacobian(&self) -> f64 {
        (self.a + self.y - 1.0) / (self.a + self.b + self.n - 2.0)
    }
    pub fn mode_with_jacobian(&self) -> f64 {
        (self.a + self.y) / (self.a + self.b + self.n)
    }
}

impl LogDensity for BetaBinomial {
    type Workspace = ();
    fn dim(&self) -> usize {
        1
    }
    fn new_workspace(&self) {}
    fn log_density_gradient(
        &self,
        ws: &mut (),
        q: &[f64],
        grad: &mut [f64],
    ) -> Result<f64, EvalError> {
        self.log_density_gradient_with(ws, q, grad, DensityTerms::SAMPLER)
    }
    fn log_density_gradient_with(
        &self,
        _: &mut (),
        q: &[f64],
        grad: &mut [f64],
        terms: DensityTerms,
    ) -> Result<f64, EvalError> {
        let u = q[0];
        let log_theta = -(-u).exp().ln_1p();
        let log_1m = -u.exp().ln_1p();
        let theta = log_theta.exp();
        let (a, b) = (self.a + self.y - 1.0, self.b + self.n - self.y - 1.0);
        let mut lp = a * log_theta + b * log_1m;
        // d log θ / du = 1 − θ, d log(1 − θ) / du = −θ.
        let mut g = a * (1.0 - theta) - b * theta;
        if terms.jacobian {
            lp += log_theta + log_1m;
            g += 1.0 - 2.0 * theta;
        }
        grad[0] = g;
        Ok(lp)
    }
}

/// λ | y ~ Gamma(α + Σy, β + n) from a Gamma(α, β) prior and n Poisson counts, on the log
/// scale. Mode without the Jacobian (α + Σy − 1)/(β + n), with it (α + Σy)/(β + n).
pub struct PoissonGamma {
    pub alpha: f64,
    pub beta: f64,
    pub sum_y: f64,
    pub n: f64,
}

impl LogDensity for PoissonGamma {
    type Workspace = ();
    fn dim(&self) -> usize {
        1
    }
    fn new_workspace(&self) {}
    fn log_density_gradient(
        &self,
        ws: &mut (),
        q: &[f64],
        grad: &mut [f64],
    ) -> Result<f64, EvalError> {
        self.log_density_gradient_with(ws, q, grad, DensityTerms::SAMPLER)
    }
    fn log_density_gradient_with(
        &self,
        _: &mut (),
        q: &[f64],
        grad: &mut [f64],
        terms: DensityTerms,
    ) -> Result<f64, EvalError> {
        let u = q[0];
        let lambda = u.exp();
        let shape = self.alpha + self.sum_y - 1.0;
        let rate = self.beta + self.n;
        let mut lp = shape * u - rate * lambda;
        let mut g = shape - rate * lambda;
        if terms.jacobian {
            lp += u;
            g += 1.0;
        }
        grad[0] = g;
        Ok(lp)
    }
}
