//! A line search for the strong Wolfe conditions (Nocedal and Wright, algorithms 3.5 and 3.6),
//! with the choices Stan's `WolfeLineSearch` makes: the bracket grows tenfold per step, the
//! zoom phase interpolates with a cubic through the bracket's ends (bisecting every fifth
//! iteration or when the cubic's minimiser falls within 1% of an end), a failed evaluation
//! halves the step towards the lower end, and the search gives up when the bracket is narrower
//! than 1e-16.
//!
//! One extension: where Stan's ten halvings after failed evaluations give up, twenty tenfold
//! shrinks follow ([`EXTRA_RESTARTS`]), so a badly scaled model's first step still finds a
//! finite density; where Stan's search succeeds, the steps are Stan's.
//!
//! One deliberate difference: the sufficient-decrease test uses the step being tried
//! (`f(x + a p) ≤ f(x) + c₁ a ∇f·p`, as the conditions are stated), where Stan's code keeps
//! the first trial step in that test.

use crate::dense::dot;
use crate::objective::Minimand;

/// Stan's line-search settings (`LSOptions`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LineSearchOptions {
    /// Sufficient decrease (Armijo) constant.
    pub c1: f64,
    /// Curvature constant.
    pub c2: f64,
    /// The smallest step: the lower end of the first bracket.
    pub min_alpha: f64,
    /// Bracket-growing iterations before giving up.
    pub max_iterations: usize,
    /// Consecutive failed evaluations tolerated while growing the bracket.
    pub max_restarts: usize,
}

impl Default for LineSearchOptions {
    fn default() -> Self {
        LineSearchOptions {
            c1: 1e-4,
            c2: 0.9,
            min_alpha: 1e-12,
            max_iterations: 20,
            max_restarts: 10,
        }
    }
}

/// Tenfold shrinks of a step whose evaluation failed, after Stan's `max_restarts` halvings
/// have failed (where Stan's search would give up). A badly scaled model's first step
/// (`init_alpha · ∇f`) can overshoot by many orders of magnitude — posteriordb's
/// earnings-earn_height: ∇f ≈ 10¹¹ at a random initial point, so the first step moves log σ by
/// 10⁸ and Stan's ten halvings (÷1024) never reach a finite density; CmdStan's `optimize` and
/// `pathfinder` fail there from every seed. Twenty more shrinks (÷10²⁰) reach any step a
/// finite density allows, and where Stan's search succeeds nothing changes.
pub(crate) const EXTRA_RESTARTS: usize = 20;

/// A point with the function's value and gradient there.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub x: Vec<f64>,
    pub f: f64,
    pub g: Vec<f64>,
}

impl Point {
    pub fn zeros(dim: usize) -> Self {
        Point {
            x: vec![0.0; dim],
            f: 0.0,
            g: vec![0.0; dim],
        }
    }

    /// Evaluates `func` at `x`.
    pub fn at(func: &mut impl Minimand, x: &[f64]) -> Result<Self, hazel_density::EvalError> {
        let mut g = vec![0.0; x.len()];
        let f = func.value_gradient(x, &mut g)?;
        Ok(Point {
            x: x.to_vec(),
            f,
            g,
        })
    }
}

/// The line search found no acceptable step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineSearchFailed;

/// The minimiser on `[lo, hi]` of the cubic `c(t)` with `c(0) = 0`, `c'(0) = df0`,
/// `c(x1) = f1`, `c'(x1) = df1`, comparing the interval's ends and the cubic's stationary
/// points inside it (Stan's `CubicInterp`).
pub(crate) fn cubic_minimizer(df0: f64, x1: f64, f1: f64, df1: f64, lo: f64, hi: f64) -> f64 {
    let c3 = (-12.0 * f1 + 6.0 * x1 * (df0 + df1)) / (x1 * x1 * x1);
    let c2 = -(4.0 * df0 + 2.0 * df1) / x1 + 6.0 * f1 / (x1 * x1);
    let c1 = df0;
    let cubic = |t: f64| t * (t * (t * c3 / 3.0 + c2) / 2.0 + c1);
    let root = (c2 * c2 - 2.0 * c1 * c3).sqrt();
    let (mut best_t, mut best_f) = (lo, cubic(lo));
    let mut consider = |t: f64, interior: bool| {
        if interior && !(lo < t && t < hi) {
            return;
        }
        let f = cubic(t);
        if f < best_f {
            best_t = t;
            best_f = f;
        }
    };
    consider(hi, false);
    consider(-(c2 + root) / c3, true);
    consider(-(c2 - root) / c3, true);
    best_t
}

/// One end of the zoom phase's bracket: step, value, directional derivative.
#[derive(Debug, Clone, Copy)]
struct End {
    a: f64,
    f: f64,
    d: f64,
}

/// Searches along `p` (a descent direction at `start`) for a step satisfying the strong Wolfe
/// conditions, starting with `*alpha`. On success `*alpha` is the step and `out` the point
/// `start.x + alpha p` with its value and gradient.
pub(crate) fn wolfe(
    func: &mut impl Minimand,
    start: &Point,
    p: &[f64],
    alpha: &mut f64,
    out: &mut Point,
    options: &LineSearchOptions,
) -> Result<(), LineSearchFailed> {
    let dfp = dot(&start.g, p);
    let c1dfp = options.c1 * dfp;
    let c2dfp = options.c2 * dfp;
    let mut prev = End {
        a: options.min_alpha,
        f: start.f,
        d: dfp,
    };
    let mut a = *alpha;
    let mut iterations = 0;
    let mut restarts = 0;
    loop {
        if iterations >= options.max_iterations {
            return Err(LineSearchFailed);
        }
        if evaluate(func, start, p, a, out).is_err() {
            if restarts >= options.max_restarts + EXTRA_RESTARTS {
                return Err(LineSearchFailed);
            }
            // Stan's halving first; where Stan gives up, shrink tenfold instead (see
            // `EXTRA_RESTARTS`).
            let shrink = if restarts < options.max_restarts {
                0.5
            } else {
                0.1
            };
            a = prev.a + shrink * (a - prev.a);
            restarts += 1;
            continue;
        }
        restarts = 0;
        let here = End {
            a,
            f: out.f,
            d: dot(&out.g, p),
        };
        if here.f > start.f + a * c1dfp || (here.f >= prev.f && iterations > 0) {
            return zoom(func, start, p, c1dfp, c2dfp, prev, here, alpha, out);
        }
        if here.d.abs() <= -c2dfp {
            *alpha = a;
            return Ok(());
        }
        if here.d >= 0.0 {
            return zoom(func, start, p, c1dfp, c2dfp, here, prev, alpha, out);
        }
        prev = here;
        a *= 10.0;
        iterations += 1;
    }
}

/// `out = start.x + a p`, evaluated.
fn evaluate(
    func: &mut impl Minimand,
    start: &Point,
    p: &[f64],
    a: f64,
    out: &mut Point,
) -> Result<(), hazel_density::EvalError> {
    for ((o, x), pi) in out.x.iter_mut().zip(&start.x).zip(p) {
        *o = x + a * pi;
    }
    out.f = func.value_gradient(&out.x, &mut out.g)?;
    Ok(())
}

/// The zoom phase: `lo` satisfies sufficient decrease and has the lower value; the minimiser
/// lies between `lo` and `hi`.
#[allow(clippy::too_many_arguments)]
fn zoom(
    func: &mut impl Minimand,
    start: &Point,
    p: &[f64],
    c1dfp: f64,
    c2dfp: f64,
    mut lo: End,
    mut hi: End,
    alpha: &mut f64,
    out: &mut Point,
) -> Result<(), LineSearchFailed> {
    const MIN_RANGE: f64 = 1e-16;
    let mut iteration = 0;
    loop {
        iteration += 1;
        if (lo.a - hi.a).abs() < MIN_RANGE {
            return Err(LineSearchFailed);
        }
        let mid = 0.5 * (lo.a + hi.a);
        let (low_end, high_end) = (lo.a.min(hi.a), lo.a.max(hi.a));
        let mut a = if iteration % 5 == 0 {
            mid
        } else {
            // Minimiser of the cubic through both ends' values and slopes.
            let d1 = lo.d + hi.d - 3.0 * (lo.f - hi.f) / (lo.a - hi.a);
            let mut d2 = (d1 * d1 - lo.d * hi.d).sqrt();
            if hi.a < lo.a {
                d2 = -d2;
            }
            let t = hi.a - (hi.a - lo.a) * (hi.d + d2 - d1) / (hi.d - lo.d + 2.0 * d2);
            let margin = 0.01 * (lo.a - hi.a).abs();
            if !t.is_finite() || t < low_end + margin || t > high_end - margin {
                mid
            } else {
                t
            }
        };
        while evaluate(func, start, p, a, out).is_err() {
            a = 0.5 * (a + low_end);
            if (low_end - a).abs() < MIN_RANGE {
                return Err(LineSearchFailed);
            }
        }
        let here = End {
            a,
            f: out.f,
            d: dot(&out.g, p),
        };
        if here.f > start.f + a * c1dfp || here.f >= lo.f {
            hi = here;
        } else {
            if here.d.abs() <= -c2dfp {
                *alpha = a;
                return Ok(());
            }
            if here.d * (hi.a - lo.a) >= 0.0 {
                hi = lo;
            }
            lo = here;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hazel_density::EvalError;

    struct Quadratic;
    impl Minimand for Quadratic {
        fn dim(&self) -> usize {
            2
        }
        fn value_gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<f64, EvalError> {
            g[0] = 2.0 * (x[0] - 3.0);
            g[1] = 20.0 * (x[1] + 1.0);
            Ok((x[0] - 3.0).powi(2) + 10.0 * (x[1] + 1.0).powi(2))
        }
    }

    #[test]
    fn cubic_minimizer_of_a_cubic() {
        // c(t) = t³/3 − t (c'(t) = t² − 1, minimum at t = 1 on [0, 3]).
        let c = |t: f64| t * t * t / 3.0 - t;
        let dc = |t: f64| t * t - 1.0;
        let t = cubic_minimizer(dc(0.0), 2.0, c(2.0), dc(2.0), 0.0, 3.0);
        assert!((t - 1.0).abs() < 1e-14, "{t}");
    }

    #[test]
    fn the_step_satisfies_the_strong_wolfe_conditions() {
        let mut f = Quadratic;
        let start = Point::at(&mut f, &[0.0, 0.0]).unwrap();
        let p: Vec<f64> = start.g.iter().map(|g| -g).collect();
        let options = LineSearchOptions::default();
        for first in [1e-3, 1.0, 10.0] {
            let mut alpha = first;
            let mut out = Point::zeros(2);
            wolfe(&mut f, &start, &p, &mut alpha, &mut out, &options).unwrap();
            let dfp = dot(&start.g, &p);
            assert!(out.f <= start.f + options.c1 * alpha * dfp);
            assert!(dot(&out.g, &p).abs() <= -options.c2 * dfp);
        }
    }

    /// `(x − minimum)²` in one dimension, failing to evaluate beyond `wall`.
    struct Walled {
        wall: f64,
        minimum: f64,
    }

    impl Minimand for Walled {
        fn dim(&self) -> usize {
            1
        }
        fn value_gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<f64, EvalError> {
            if x[0] > self.wall {
                return Err(EvalError::reject("wall"));
            }
            g[0] = 2.0 * (x[0] - self.minimum);
            Ok((x[0] - self.minimum).powi(2))
        }
    }

    /// The start at 0 and the point found from it along `+1` with a first step of 10.
    fn search_from_zero(f: &mut Walled) -> (Point, Point) {
        let start = Point::at(f, &[0.0]).unwrap();
        let mut alpha = 10.0;
        let mut out = Point::zeros(1);
        wolfe(
            f,
            &start,
            &[1.0],
            &mut alpha,
            &mut out,
            &LineSearchOptions::default(),
        )
        .unwrap();
        (start, out)
    }

    /// A wall 10⁹ times closer than the first step: Stan's ten halvings cannot reach it, the
    /// tenfold shrinks after them do.
    #[test]
    fn a_far_overshoot_steps_back_past_stans_halvings() {
        let mut f = Walled {
            wall: 1e-8,
            minimum: 0.5e-8,
        };
        let (start, out) = search_from_zero(&mut f);
        assert!(out.x[0] <= 1e-8 && out.f < start.f, "{out:?}");
    }

    /// A function that fails beyond x = 0.5 along the search: the search steps back.
    #[test]
    fn failed_evaluations_step_back() {
        let mut f = Walled {
            wall: 0.5,
            minimum: 0.4,
        };
        let (start, out) = search_from_zero(&mut f);
        assert!(out.x[0] <= 0.5 && out.f < start.f, "{out:?}");
    }
}
