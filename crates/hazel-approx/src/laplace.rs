//! The Laplace approximation (CmdStan's `laplace`): the normal distribution on the
//! unconstrained space centred at a mode `θ̂` with covariance `(−H)⁻¹`, `H` the Hessian of the
//! log density there (by finite differences of gradients, [`crate::hessian`]). A draw is
//! `θ̂ + L⁻ᵀ z` with `−H = L Lᵀ` and `z` standard normal; CmdStan writes beside it
//! `log_g__ = −½ zᵀz`, the approximation's log density up to a constant (its own formula,
//! `½ (θ − θ̂)ᵀ H (θ − θ̂)`, is the same number).

use crate::dense::cholesky;
use crate::hessian::finite_difference_hessian;
use hazel_density::EvalError;
use hazel_rng::StreamRng;

/// Why no approximation could be made.
#[derive(Debug, Clone, PartialEq)]
pub enum LaplaceError {
    /// The log density or its gradient could not be evaluated near the mode.
    Evaluation(EvalError),
    /// `−H` is not positive definite: the point is not a (strict) local maximum.
    NotNegativeDefinite,
}

impl std::fmt::Display for LaplaceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LaplaceError::Evaluation(e) => write!(f, "cannot compute the Hessian at the mode: {e}"),
            LaplaceError::NotNegativeDefinite => f.write_str(
                "the Hessian at the mode is not negative definite (the point is not a local \
                 maximum of the log density: was the mode found with the same jacobian setting?)",
            ),
        }
    }
}

impl std::error::Error for LaplaceError {}

/// The normal approximation at a mode.
#[derive(Debug, Clone, PartialEq)]
pub struct LaplaceApproximation {
    mode: Vec<f64>,
    /// Lower Cholesky factor `L` of `−H` (column-major).
    chol_neg_hessian: Vec<f64>,
    /// The log density at the mode.
    pub log_density_at_mode: f64,
}

impl LaplaceApproximation {
    /// The approximation at `mode` of the log density computed by `log_density`.
    pub fn at_mode(
        log_density: &mut impl FnMut(&[f64], &mut [f64]) -> Result<f64, EvalError>,
        mode: &[f64],
    ) -> Result<Self, LaplaceError> {
        let d = mode.len();
        let mut grad = vec![0.0; d];
        let mut hessian = vec![0.0; d * d];
        let lp = finite_difference_hessian(log_density, mode, &mut grad, &mut hessian)
            .map_err(LaplaceError::Evaluation)?;
        Self::from_hessian(mode, &hessian, lp)
    }

    /// The approximation with a given Hessian (column-major `d × d`).
    pub fn from_hessian(
        mode: &[f64],
        hessian: &[f64],
        log_density_at_mode: f64,
    ) -> Result<Self, LaplaceError> {
        let d = mode.len();
        let neg: Vec<f64> = hessian[..d * d].iter().map(|h| -h).collect();
        let chol_neg_hessian = cholesky(&neg, d).ok_or(LaplaceError::NotNegativeDefinite)?;
        Ok(LaplaceApproximation {
            mode: mode.to_vec(),
            chol_neg_hessian,
            log_density_at_mode,
        })
    }

    pub fn dim(&self) -> usize {
        self.mode.len()
    }

    pub fn mode(&self) -> &[f64] {
        &self.mode
    }

    /// One draw into `out` (length d), using `z` (length d) as scratch; returns
    /// `log_g = −½ zᵀz`.
    pub fn draw(&self, rng: &mut StreamRng, z: &mut [f64], out: &mut [f64]) -> f64 {
        let d = self.dim();
        for zi in z.iter_mut() {
            *zi = rng.normal();
        }
        let log_g = -0.5 * z.iter().fold(0.0, |s, v| s + v * v);
        out.copy_from_slice(z);
        // θ̂ + L⁻ᵀ z.
        hazel_math::linalg::solve_lower_transpose_in_place(&self.chol_neg_hessian, d, out, 1);
        for (o, m) in out.iter_mut().zip(&self.mode) {
            *o += m;
        }
        log_g
    }

    /// The covariance `(−H)⁻¹` (column-major), for checks.
    pub fn covariance(&self) -> Vec<f64> {
        let d = self.dim();
        let mut inv = vec![0.0; d * d];
        for i in 0..d {
            inv[i + i * d] = 1.0;
        }
        hazel_math::linalg::solve_lower_in_place(&self.chol_neg_hessian, d, &mut inv, d);
        hazel_math::linalg::solve_lower_transpose_in_place(&self.chol_neg_hessian, d, &mut inv, d);
        inv
    }
}
