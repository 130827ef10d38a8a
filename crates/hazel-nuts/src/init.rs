//! Finding a chain's starting point (Stan's `services::util::initialize`).
//!
//! With [`Init::Radius`]`(r)` each attempt draws every unconstrained coordinate uniformly from
//! `(-r, r)` (from the chain's [`Purpose::Init`] stream) and evaluates the log density and
//! gradient; an attempt succeeds when both are finite. Up to `init_attempts` attempts are made
//! (Stan: 100). An explicit starting point is tried once: retrying the same point cannot help.
//!
//! **Screening** (`candidates` > 1; hazel's default is 4): the attempts go on until `candidates`
//! points have succeeded (or the attempts run out after at least one did), and the chain starts
//! from the one with the highest log density. A uniform draw can land in a region the sampler
//! never leaves: on posteriordb's arma11, an MA coefficient `|θ| > 1` makes the residual
//! recursion explode, the log density there is around −10⁷, every trajectory diverges and the
//! step size adapts to 1e-24, so the chain never moves. Its competitors in the same draw have a
//! log density near the posterior's, so screening skips it, at the cost of a few evaluations
//! and without tying the chains together (each screens its own stream).
//!
//! Failure produces a single [`InitError`] naming what went wrong at the last attempt ("log
//! density is -inf", "gradient component 3 is NaN", or the model's own rejection message), how
//! many attempts were made, and how the failures were distributed — never one line per attempt.

use crate::types::Init;
use hazel_density::{EvalError, EvalErrorKind, LogDensity};
use hazel_rng::{Purpose, StreamRng};

/// Why no starting point was found.
#[derive(Debug, Clone, PartialEq)]
pub enum InitError {
    /// No attempt gave a finite log density and gradient.
    Failed {
        attempts: usize,
        /// What went wrong at the last attempt.
        last_problem: String,
        /// Attempts whose evaluation returned an error (rejection, domain error).
        rejected: usize,
        /// Attempts with a non-finite log density.
        non_finite_density: usize,
        /// Attempts with a finite log density but a non-finite gradient.
        non_finite_gradient: usize,
    },
    /// The model raised a fatal error.
    Fatal(EvalError),
    /// The supplied starting point has the wrong length.
    Dimension { expected: usize, found: usize },
    /// The radius is negative or not finite.
    BadRadius(f64),
    /// Explicit starting points were given per chain but there is none for this chain.
    MissingRow { chain_index: usize, rows: usize },
}

impl std::fmt::Display for InitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InitError::Failed { attempts, last_problem, rejected, non_finite_density, non_finite_gradient } => {
                let plural = if *attempts == 1 { "" } else { "s" };
                write!(f, "initialization failed after {attempts} attempt{plural}: {last_problem}")?;
                if *attempts > 1 {
                    write!(
                        f,
                        " ({rejected} rejected by the model, {non_finite_density} with a non-finite log density, \
                         {non_finite_gradient} with a non-finite gradient)"
                    )?;
                }
                Ok(())
            }
            InitError::Fatal(e) => write!(f, "initialization stopped by a fatal error: {e}"),
            InitError::Dimension { expected, found } => {
                write!(f, "initial values have {found} unconstrained components, the model has {expected}")
            }
            InitError::MissingRow { chain_index, rows } => write!(
                f,
                "{rows} sets of initial values were given, none for chain {} (give one per chain or one shared)",
                chain_index + 1
            ),
            InitError::BadRadius(r) => write!(f, "initialization radius must be finite and non-negative, got {r}"),
        }
    }
}

impl std::error::Error for InitError {}

/// A description of why `(logp, gradient)` is unusable as a starting point, or `None` if both
/// are finite. Components are numbered from 1 (Stan's convention for users).
pub(crate) fn non_finite_problem(logp: f64, gradient: &[f64]) -> Option<String> {
    if !logp.is_finite() {
        return Some(format!("log density is {}", describe(logp)));
    }
    gradient
        .iter()
        .position(|g| !g.is_finite())
        .map(|i| format!("gradient component {} is {}", i + 1, describe(gradient[i])))
}

fn describe(x: f64) -> &'static str {
    if x.is_nan() {
        "NaN"
    } else if x > 0.0 {
        "+inf"
    } else {
        "-inf"
    }
}

/// A starting point with its log density and gradient.
#[derive(Debug, Clone, PartialEq)]
pub struct InitialPoint {
    pub position: Vec<f64>,
    pub gradient: Vec<f64>,
    pub logp: f64,
    /// Attempts used (1 when the first draw worked).
    pub attempts: usize,
}

/// Finds the starting point of the chain with id `chain_id` (its random stream) at position
/// `chain_index` within the run (which row of explicit starting points it takes: row
/// `chain_index`, or the only row when one row is shared by all chains).
pub fn initialize<M: LogDensity + ?Sized>(
    model: &M,
    ws: &mut M::Workspace,
    init: &Init,
    init_attempts: usize,
    seed: u64,
    chain_id: u64,
    chain_index: usize,
) -> Result<InitialPoint, InitError> {
    initialize_screened(
        model,
        ws,
        init,
        init_attempts,
        1,
        seed,
        chain_id,
        chain_index,
    )
}

/// [`initialize`] screening up to `candidates` random points (see the module documentation);
/// `candidates` ≤ 1 is Stan's first-success rule, and explicit points are never screened.
#[allow(clippy::too_many_arguments)]
pub(crate) fn initialize_screened<M: LogDensity + ?Sized>(
    model: &M,
    ws: &mut M::Workspace,
    init: &Init,
    init_attempts: usize,
    candidates: usize,
    seed: u64,
    chain_id: u64,
    chain_index: usize,
) -> Result<InitialPoint, InitError> {
    let dim = model.dim();
    let mut position = vec![0.0; dim];
    let mut gradient = vec![0.0; dim];
    let (attempts_allowed, radius) = match init {
        Init::Radius(r) => {
            if !(r.is_finite() && *r >= 0.0) {
                return Err(InitError::BadRadius(*r));
            }
            // Radius 0 is a single deterministic point: one attempt, like explicit values.
            (if *r == 0.0 { 1 } else { init_attempts.max(1) }, Some(*r))
        }
        Init::Unconstrained(rows) => {
            let row = match rows.len() {
                1 => &rows[0],
                n => rows.get(chain_index).ok_or(InitError::MissingRow {
                    chain_index,
                    rows: n,
                })?,
            };
            if row.len() != dim {
                return Err(InitError::Dimension {
                    expected: dim,
                    found: row.len(),
                });
            }
            position.copy_from_slice(row);
            (1, None)
        }
    };
    let mut rng = StreamRng::new(seed, chain_id, Purpose::Init);
    let (mut rejected, mut non_finite_density, mut non_finite_gradient) = (0, 0, 0);
    let mut last_problem = String::new();
    let wanted = if radius.is_some_and(|r| r > 0.0) {
        candidates.max(1)
    } else {
        1
    };
    let mut best: Option<InitialPoint> = None;
    let mut found = 0;
    for attempt in 1..=attempts_allowed {
        if let Some(r) = radius {
            for x in position.iter_mut() {
                *x = if r == 0.0 {
                    0.0
                } else {
                    rng.uniform_range(-r, r)
                };
            }
        }
        match model.log_density_gradient(ws, &position, &mut gradient) {
            Err(error) if error.is_fatal() => return Err(InitError::Fatal(error)),
            // A model that reports a non-finite log density or gradient as an error (the
            // compiled Stan models do) is counted as such, not as a rejection, so the counts
            // agree with the last problem's wording.
            Err(error) if error.kind == EvalErrorKind::NonFinite => {
                if error.message.starts_with("gradient") {
                    non_finite_gradient += 1;
                } else {
                    non_finite_density += 1;
                }
                last_problem = error.to_string();
            }
            Err(error) => {
                rejected += 1;
                // With its location: the model line that rejected the point.
                last_problem = format!("the model rejected the point: {error}");
            }
            Ok(logp) => match non_finite_problem(logp, &gradient) {
                None => {
                    found += 1;
                    if best.as_ref().is_none_or(|b| logp > b.logp) {
                        match &mut best {
                            Some(b) => {
                                b.position.copy_from_slice(&position);
                                b.gradient.copy_from_slice(&gradient);
                                b.logp = logp;
                            }
                            None => {
                                best = Some(InitialPoint {
                                    position: position.clone(),
                                    gradient: gradient.clone(),
                                    logp,
                                    attempts: attempt,
                                })
                            }
                        }
                    }
                    if found == wanted {
                        break;
                    }
                }
                Some(problem) => {
                    if logp.is_finite() {
                        non_finite_gradient += 1;
                    } else {
                        non_finite_density += 1;
                    }
                    last_problem = problem;
                }
            },
        }
    }
    if let Some(mut best) = best {
        best.attempts = found + rejected + non_finite_density + non_finite_gradient;
        return Ok(best);
    }
    Err(InitError::Failed {
        attempts: attempts_allowed,
        last_problem,
        rejected,
        non_finite_density,
        non_finite_gradient,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// log p(x) = −x² − 1000·[x > 1]: a cliff to the right, like arma11's side region.
    struct Cliff;
    impl LogDensity for Cliff {
        type Workspace = ();
        fn dim(&self) -> usize {
            1
        }
        fn new_workspace(&self) {}
        fn log_density_gradient(
            &self,
            _: &mut (),
            q: &[f64],
            g: &mut [f64],
        ) -> Result<f64, EvalError> {
            g[0] = -2.0 * q[0];
            Ok(-q[0] * q[0] - if q[0] > 1.0 { 1000.0 } else { 0.0 })
        }
    }

    /// Screening keeps the best of the candidates, drawn from the chain's own stream in order:
    /// candidate 1 is Stan's start, and the best of k candidates is the best of the first k.
    #[test]
    fn screening_keeps_the_highest_density_candidate() {
        let init = Init::Radius(2.0);
        let start = |k| initialize_screened(&Cliff, &mut (), &init, 100, k, 5, 3, 0).unwrap();
        assert_eq!(
            start(1),
            initialize(&Cliff, &mut (), &init, 100, 5, 3, 0).unwrap()
        );
        let mut rng = StreamRng::new(5, 3, Purpose::Init);
        let draws: Vec<f64> = (0..8).map(|_| rng.uniform_range(-2.0, 2.0)).collect();
        let lp = |x: f64| -x * x - if x > 1.0 { 1000.0 } else { 0.0 };
        for k in 1..=8 {
            let best = draws[..k]
                .iter()
                .copied()
                .max_by(|a, b| lp(*a).total_cmp(&lp(*b)))
                .unwrap();
            let p = start(k);
            assert_eq!(p.position, vec![best], "{k} candidates");
            assert_eq!(p.attempts, k);
        }
        // Explicit starting points are never screened.
        let given = Init::Unconstrained(vec![vec![1.5]]);
        let p = initialize_screened(&Cliff, &mut (), &given, 100, 4, 5, 3, 0).unwrap();
        assert_eq!(p.position, vec![1.5]);
    }
}
