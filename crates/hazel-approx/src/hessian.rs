//! Hessians by finite differences of gradients: column `i` is the fourth-order central
//! difference `(g(x − 2h eᵢ) − 8 g(x − h eᵢ) + 8 g(x + h eᵢ) − g(x + 2h eᵢ)) / 12h` with
//! `h = ε^{1/5} · max(1, |xᵢ|)` (the step that balances the stencil's O(h⁴) error against
//! rounding in the gradient), then `(H + Hᵀ) / 2`. Exact up to rounding for quadratics; 4d
//! gradient evaluations.
//!
//! Used by Laplace (the covariance at the mode) and by Newton's method. A Hessian by automatic
//! differentiation would need second-order AD, which the log density interface does not offer.

use hazel_density::EvalError;
use hazel_math::linalg::symmetrise;

/// The relative finite-difference step, `ε^{1/5}`.
pub(crate) fn step_scale() -> f64 {
    f64::EPSILON.powf(0.2)
}

/// The Hessian (column-major `d × d`) of the function whose value and gradient `gradient`
/// computes, at `x`; also returns the value and writes the gradient at `x` into `grad`.
pub(crate) fn finite_difference_hessian(
    gradient: &mut impl FnMut(&[f64], &mut [f64]) -> Result<f64, EvalError>,
    x: &[f64],
    grad: &mut [f64],
    hessian: &mut [f64],
) -> Result<f64, EvalError> {
    let d = x.len();
    let value = gradient(x, grad)?;
    let mut point = x.to_vec();
    let mut g = vec![0.0; d];
    const OFFSETS: [f64; 4] = [-2.0, -1.0, 1.0, 2.0];
    const WEIGHTS: [f64; 4] = [1.0 / 12.0, -8.0 / 12.0, 8.0 / 12.0, -1.0 / 12.0];
    for i in 0..d {
        let h = step_scale() * x[i].abs().max(1.0);
        let column = &mut hessian[i * d..(i + 1) * d];
        column.iter_mut().for_each(|c| *c = 0.0);
        for (offset, weight) in OFFSETS.iter().zip(WEIGHTS) {
            point[i] = x[i] + offset * h;
            gradient(&point, &mut g)?;
            for (c, gj) in column.iter_mut().zip(&g) {
                *c += weight * gj;
            }
        }
        point[i] = x[i];
        column.iter_mut().for_each(|c| *c /= h);
    }
    symmetrise(hessian, d);
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// f(x, y) = sin(x) eʸ + x³ y: the Hessian against its closed form.
    #[test]
    fn matches_a_closed_form() {
        let mut gradient = |p: &[f64], g: &mut [f64]| -> Result<f64, EvalError> {
            let (x, y) = (p[0], p[1]);
            g[0] = x.cos() * y.exp() + 3.0 * x * x * y;
            g[1] = x.sin() * y.exp() + x * x * x;
            Ok(x.sin() * y.exp() + x * x * x * y)
        };
        let (x, y) = (0.7, -0.4);
        let mut grad = [0.0; 2];
        let mut h = [0.0; 4];
        finite_difference_hessian(&mut gradient, &[x, y], &mut grad, &mut h).unwrap();
        let want = [
            -x.sin() * y.exp() + 6.0 * x * y,
            x.cos() * y.exp() + 3.0 * x * x,
            x.cos() * y.exp() + 3.0 * x * x,
            x.sin() * y.exp(),
        ];
        for k in 0..4 {
            assert!((h[k] - want[k]).abs() < 1e-9, "{h:?} vs {want:?}");
        }
    }
}
