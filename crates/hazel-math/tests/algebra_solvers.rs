//! The algebraic solvers (`hazel_math::algebra`): roots of systems with closed-form solutions,
//! standard hard test problems (Rosenbrock's, Powell's badly scaled, Broyden's tridiagonal),
//! Stan's argument checks and failure messages, and the implicit-function derivatives against
//! central finite differences of re-solved roots.

use hazel_math::algebra::{
    implicit_adjoint, implicit_sensitivities, newton, powell, AlgebraError, AlgebraSystem,
    NewtonOptions, PowellOptions,
};
use hazel_math::linalg::solve::factor_len;

type Closure = Box<dyn FnMut(&[f64], &mut [f64])>;

/// A system given by closures for `f` and its row-major Jacobian.
struct Sys {
    n: usize,
    f: Closure,
    j: Closure,
    evals: usize,
}

impl AlgebraSystem for Sys {
    fn n(&self) -> usize {
        self.n
    }
    fn eval(&mut self, x: &[f64], fx: &mut [f64]) -> Result<(), String> {
        self.evals += 1;
        (self.f)(x, fx);
        Ok(())
    }
    fn eval_jac(&mut self, x: &[f64], fx: &mut [f64], jx: &mut [f64]) -> Result<(), String> {
        (self.f)(x, fx);
        (self.j)(x, jx);
        Ok(())
    }
}

fn sys(
    n: usize,
    f: impl FnMut(&[f64], &mut [f64]) + 'static,
    j: impl FnMut(&[f64], &mut [f64]) + 'static,
) -> Sys {
    Sys {
        n,
        f: Box::new(f),
        j: Box::new(j),
        evals: 0,
    }
}

/// `x₁² − a = 0`, `x₂ − b x₁ = 0`: root `(√a, b √a)`.
fn quadratic(a: f64, b: f64) -> Sys {
    sys(
        2,
        move |x: &[f64], f: &mut [f64]| {
            f[0] = x[0] * x[0] - a;
            f[1] = x[1] - b * x[0];
        },
        move |x: &[f64], j: &mut [f64]| {
            j.copy_from_slice(&[2.0 * x[0], 0.0, -b, 1.0]);
        },
    )
}

fn assert_close(got: &[f64], want: &[f64], tol: f64) {
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= tol * w.abs().max(1.0),
            "got {got:?}, want {want:?}"
        );
    }
}

#[test]
fn closed_form_roots() {
    for (a, b) in [(2.0f64, 0.5f64), (0.01, -3.0), (400.0, 1.0)] {
        let want = [a.sqrt(), b * a.sqrt()];
        let x = newton(&mut quadratic(a, b), &[1.0, 1.0], &NewtonOptions::default()).unwrap();
        // Newton stops at ‖f‖∞ ≤ 1e-6 or a step below 1e-3 (relative): after the quadratic
        // convergence that follows, well inside 1e-6.
        assert_close(&x, &want, 1e-6);
        let x = powell(&mut quadratic(a, b), &[1.0, 1.0], &PowellOptions::default()).unwrap();
        assert_close(&x, &want, 1e-9);
        // Tight Newton tolerances reach rounding.
        let tight = NewtonOptions {
            scaling_step_size: 1e-14,
            function_tolerance: 1e-13,
            max_num_steps: 200,
        };
        let x = newton(&mut quadratic(a, b), &[1.0, 1.0], &tight).unwrap();
        assert_close(&x, &want, 1e-12);
    }
}

#[test]
fn initial_guess_already_a_root() {
    let mut s = quadratic(4.0, 1.0);
    let x = newton(&mut s, &[2.0, 2.0], &NewtonOptions::default()).unwrap();
    assert_eq!(x, vec![2.0, 2.0]);
    assert_eq!(s.evals, 1);
    let x = powell(
        &mut quadratic(4.0, 1.0),
        &[2.0, 2.0],
        &PowellOptions::default(),
    )
    .unwrap();
    assert_eq!(x, vec![2.0, 2.0]);
}

fn rosenbrock() -> Sys {
    sys(
        2,
        |x: &[f64], f: &mut [f64]| {
            f[0] = 10.0 * (x[1] - x[0] * x[0]);
            f[1] = 1.0 - x[0];
        },
        |x: &[f64], j: &mut [f64]| j.copy_from_slice(&[-20.0 * x[0], 10.0, -1.0, 0.0]),
    )
}

/// Powell's badly scaled function (Moré, Garbow, Hillstrom 1981, problem 3).
fn badly_scaled() -> Sys {
    sys(
        2,
        |x: &[f64], f: &mut [f64]| {
            f[0] = 1e4 * x[0] * x[1] - 1.0;
            f[1] = (-x[0]).exp() + (-x[1]).exp() - 1.0001;
        },
        |x: &[f64], j: &mut [f64]| {
            j.copy_from_slice(&[1e4 * x[1], 1e4 * x[0], -(-x[0]).exp(), -(-x[1]).exp()])
        },
    )
}

/// Broyden's tridiagonal function (Moré, Garbow, Hillstrom, problem 30), n = 10.
fn broyden_tridiagonal(n: usize) -> Sys {
    sys(
        n,
        move |x: &[f64], f: &mut [f64]| {
            for i in 0..n {
                let xm = if i > 0 { x[i - 1] } else { 0.0 };
                let xp = if i + 1 < n { x[i + 1] } else { 0.0 };
                f[i] = (3.0 - 2.0 * x[i]) * x[i] - xm - 2.0 * xp + 1.0;
            }
        },
        move |x: &[f64], j: &mut [f64]| {
            j.iter_mut().for_each(|v| *v = 0.0);
            for i in 0..n {
                j[i * n + i] = 3.0 - 4.0 * x[i];
                if i > 0 {
                    j[i * n + i - 1] = -1.0;
                }
                if i + 1 < n {
                    j[i * n + i + 1] = -2.0;
                }
            }
        },
    )
}

fn residual<S: AlgebraSystem>(s: &mut S, x: &[f64]) -> f64 {
    let mut f = vec![0.0; x.len()];
    s.eval(x, &mut f).unwrap();
    f.iter().map(|v| v * v).sum::<f64>().sqrt()
}

#[test]
fn standard_hard_problems() {
    let x = powell(&mut rosenbrock(), &[-1.2, 1.0], &PowellOptions::default()).unwrap();
    assert_close(&x, &[1.0, 1.0], 1e-9);
    let x = newton(&mut rosenbrock(), &[-1.2, 1.0], &NewtonOptions::default()).unwrap();
    assert_close(&x, &[1.0, 1.0], 1e-6);

    // Root (1.098159e-5, 9.106146) (Moré, Garbow, Hillstrom).
    let opts = PowellOptions {
        max_num_steps: 1000,
        ..PowellOptions::default()
    };
    let x = powell(&mut badly_scaled(), &[0.0, 1.0], &opts).unwrap();
    assert!(residual(&mut badly_scaled(), &x) <= 1e-6);
    assert_close(&x, &[1.098159e-5, 9.106146], 1e-6);

    let n = 10;
    let x = powell(
        &mut broyden_tridiagonal(n),
        &vec![-1.0; n],
        &PowellOptions::default(),
    )
    .unwrap();
    assert!(residual(&mut broyden_tridiagonal(n), &x) <= 1e-10);
    let x = newton(
        &mut broyden_tridiagonal(n),
        &vec![-1.0; n],
        &NewtonOptions::default(),
    )
    .unwrap();
    // KINSOL (and so Stan) also stops without error once a step from a fresh Jacobian is below
    // scaling_step_size = 1e-3 relative, which here leaves ‖f‖₂ ≈ 2e-6.
    let r = residual(&mut broyden_tridiagonal(n), &x);
    assert!(r <= 1e-5, "{r}");
    let tight = NewtonOptions {
        scaling_step_size: 1e-12,
        function_tolerance: 1e-12,
        max_num_steps: 200,
    };
    let x = newton(&mut broyden_tridiagonal(n), &vec![-1.0; n], &tight).unwrap();
    let r = residual(&mut broyden_tridiagonal(n), &x);
    assert!(r <= 1e-11, "{r}");
}

/// `x² + 1 = 0` has no real root.
fn no_root() -> Sys {
    sys(
        1,
        |x: &[f64], f: &mut [f64]| f[0] = x[0] * x[0] + 1.0,
        |x: &[f64], j: &mut [f64]| j[0] = 2.0 * x[0],
    )
}

#[test]
fn failures_have_stans_errors() {
    let e = powell(&mut no_root(), &[1.0], &PowellOptions::default()).unwrap_err();
    assert!(
        matches!(
            e,
            AlgebraError::NotARoot { .. } | AlgebraError::MaxSteps { .. }
        ),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("should be lower than the function tolerance")
            || msg.contains("maximum number of iterations"),
        "{msg}"
    );
    let e = newton(&mut no_root(), &[1.0], &NewtonOptions::default()).unwrap_err();
    assert!(
        matches!(
            e,
            AlgebraError::LineSearch | AlgebraError::MaxSteps { .. } | AlgebraError::Singular
        ),
        "{e:?}"
    );

    // The step limit: Rosenbrock from far away needs more than 2 iterations / evaluations.
    let e = newton(
        &mut rosenbrock(),
        &[-1.2, 1.0],
        &NewtonOptions {
            max_num_steps: 1,
            ..NewtonOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(e, AlgebraError::MaxSteps { max_num_steps: 1 });
    assert_eq!(
        e.to_string(),
        "maximum number of iterations (1) was exceeded in the solve."
    );
    let e = powell(
        &mut rosenbrock(),
        &[-1.2, 1.0],
        &PowellOptions {
            max_num_steps: 2,
            ..PowellOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(e, AlgebraError::MaxSteps { max_num_steps: 2 });

    // Argument checks.
    let d = NewtonOptions::default();
    let msg = |e: AlgebraError| e.to_string();
    assert!(msg(newton(&mut no_root(), &[], &d).unwrap_err()).contains("non-zero size"));
    assert!(msg(newton(&mut no_root(), &[f64::NAN], &d).unwrap_err())
        .contains("initial guess[1] is NaN, but must be finite"));
    assert!(
        msg(newton(&mut no_root(), &[1.0, 2.0], &d).unwrap_err()).contains("must match in size")
    );
    let bad = NewtonOptions {
        function_tolerance: -1.0,
        ..d
    };
    assert!(msg(newton(&mut no_root(), &[1.0], &bad).unwrap_err())
        .contains("function_tolerance is -1, but must be nonnegative"));
    let bad = PowellOptions {
        max_num_steps: 0,
        ..PowellOptions::default()
    };
    assert!(msg(powell(&mut no_root(), &[1.0], &bad).unwrap_err())
        .contains("max_num_steps is 0, but must be positive"));

    // A function that is not finite at the guess.
    let mut nan = sys(
        1,
        |x: &[f64], f: &mut [f64]| f[0] = x[0].ln(),
        |x: &[f64], j: &mut [f64]| j[0] = 1.0 / x[0],
    );
    let e = powell(&mut nan, &[-1.0], &PowellOptions::default()).unwrap_err();
    assert!(matches!(e, AlgebraError::NonFinite { .. }), "{e:?}");
}

/// `f(x; θ) = (x₁³ + θ₁ x₁ − θ₂, x₂ − θ₃ sin x₁ − θ₁ θ₂)`: roots and `∂x/∂θ` against central
/// differences of re-solved roots.
#[test]
fn implicit_derivatives_match_finite_differences() {
    fn make(th: [f64; 3]) -> Sys {
        sys(
            2,
            move |x: &[f64], f: &mut [f64]| {
                f[0] = x[0].powi(3) + th[0] * x[0] - th[1];
                f[1] = x[1] - th[2] * x[0].sin() - th[0] * th[1];
            },
            move |x: &[f64], j: &mut [f64]| {
                j.copy_from_slice(&[3.0 * x[0] * x[0] + th[0], 0.0, -th[2] * x[0].cos(), 1.0])
            },
        )
    }
    let th = [1.5, 0.7, -2.0];
    let opts = PowellOptions {
        relative_tolerance: 1e-14,
        function_tolerance: 1e-12,
        max_num_steps: 200,
    };
    let x = powell(&mut make(th), &[0.0, 0.0], &opts).unwrap();
    let jx = [3.0 * x[0] * x[0] + th[0], 0.0, -th[2] * x[0].cos(), 1.0];
    // ∂f/∂θ, row-major 2 × 3.
    let jp = [x[0], -1.0, 0.0, -th[1], -th[0], -x[0].sin()];
    let s = implicit_sensitivities(&jx, &jp, 2, 3).unwrap();
    let h = 1e-6;
    for k in 0..3 {
        let (mut tp, mut tm) = (th, th);
        tp[k] += h;
        tm[k] -= h;
        let xp = powell(&mut make(tp), &x, &opts).unwrap();
        let xm = powell(&mut make(tm), &x, &opts).unwrap();
        for i in 0..2 {
            let fd = (xp[i] - xm[i]) / (2.0 * h);
            assert!(
                (s[i * 3 + k] - fd).abs() <= 1e-7 * fd.abs().max(1.0),
                "∂x{i}/∂θ{k}: {} vs {fd}",
                s[i * 3 + k]
            );
        }
    }
    // The adjoint gives x̄ᵀ S.
    let xbar = [0.3, -1.1];
    let mut eta = xbar;
    let mut pbar = [0.5, 0.0, 0.0];
    let mut lu = vec![0.0; factor_len(2)];
    implicit_adjoint(&jx, &jp, 2, 3, &mut eta, &mut pbar, &mut lu).unwrap();
    for k in 0..3 {
        let want = [0.5, 0.0, 0.0][k] + xbar[0] * s[k] + xbar[1] * s[3 + k];
        assert!((pbar[k] - want).abs() <= 1e-13 * want.abs().max(1.0));
    }
    // Singular ∂f/∂x.
    assert_eq!(
        implicit_sensitivities(&[1.0, 2.0, 2.0, 4.0], &[1.0, 1.0], 2, 1).unwrap_err(),
        AlgebraError::Singular
    );
}
