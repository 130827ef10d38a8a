//! The Dormand–Prince integrator and its sensitivities on problems with closed-form solutions
//! (exponential decay, harmonic oscillator), and the sensitivities against central finite
//! differences of the solver itself.

use hazel_math::ode::{integrate, solve_sensitivities, OdeError, OdeRhs, OdeTolerances};

/// `y' = -k y`.
struct Decay;

impl OdeRhs for Decay {
    fn n_states(&self) -> usize {
        1
    }
    fn n_params(&self) -> usize {
        1
    }
    fn eval(&mut self, _t: f64, _y: &[f64], _d: &mut [f64]) -> Result<(), String> {
        Err("the parameter lives in the Jacobian test struct".into())
    }
    fn eval_jac(
        &mut self,
        _t: f64,
        _y: &[f64],
        _d: &mut [f64],
        _jy: &mut [f64],
        _jp: &mut [f64],
    ) -> Result<(), String> {
        Err("unused".into())
    }
}

/// `y' = -k y` with `k` held in the struct.
struct DecayK(f64);

impl OdeRhs for DecayK {
    fn n_states(&self) -> usize {
        1
    }
    fn n_params(&self) -> usize {
        1
    }
    fn eval(&mut self, _t: f64, y: &[f64], d: &mut [f64]) -> Result<(), String> {
        d[0] = -self.0 * y[0];
        Ok(())
    }
    fn eval_jac(
        &mut self,
        _t: f64,
        y: &[f64],
        d: &mut [f64],
        jy: &mut [f64],
        jp: &mut [f64],
    ) -> Result<(), String> {
        d[0] = -self.0 * y[0];
        jy[0] = -self.0;
        jp[0] = -y[0];
        Ok(())
    }
}

/// `y1' = y2`, `y2' = -w² y1`, parameter `w`.
struct Oscillator(f64);

impl OdeRhs for Oscillator {
    fn n_states(&self) -> usize {
        2
    }
    fn n_params(&self) -> usize {
        1
    }
    fn eval(&mut self, _t: f64, y: &[f64], d: &mut [f64]) -> Result<(), String> {
        d[0] = y[1];
        d[1] = -self.0 * self.0 * y[0];
        Ok(())
    }
    fn eval_jac(
        &mut self,
        t: f64,
        y: &[f64],
        d: &mut [f64],
        jy: &mut [f64],
        jp: &mut [f64],
    ) -> Result<(), String> {
        self.eval(t, y, d)?;
        jy.copy_from_slice(&[0.0, 1.0, -self.0 * self.0, 0.0]);
        jp[0] = 0.0;
        jp[1] = -2.0 * self.0 * y[0];
        Ok(())
    }
}

fn tight() -> OdeTolerances {
    OdeTolerances {
        rtol: 1e-10,
        atol: 1e-10,
        max_num_steps: 1_000_000,
    }
}

#[test]
fn decay_values_and_sensitivities_match_closed_form() {
    let (k, y0) = (0.7, 2.5);
    // Times inside steps exercise the dense-output interpolant.
    let ts = [0.05, 0.3, 1.0, 1.7, 4.2, 10.0];
    let sol = solve_sensitivities(&mut DecayK(k), &[y0], true, 0.0, &ts, &tight()).unwrap();
    assert_eq!(sol.n_sens, 2);
    for (j, &t) in ts.iter().enumerate() {
        let e = (-k * t).exp();
        let y = sol.values[j];
        assert!((y - y0 * e).abs() < 1e-9 * y0, "y({t}) = {y} vs {}", y0 * e);
        let dy_dy0 = sol.sens[j * 2];
        let dy_dk = sol.sens[j * 2 + 1];
        assert!((dy_dy0 - e).abs() < 1e-9, "dy/dy0 at {t}: {dy_dy0} vs {e}");
        assert!(
            (dy_dk + t * y0 * e).abs() < 1e-8,
            "dy/dk at {t}: {dy_dk} vs {}",
            -t * y0 * e
        );
    }
}

#[test]
fn oscillator_matches_closed_form_at_default_tolerances_within_their_size() {
    let w = 1.3;
    let ts: Vec<f64> = (1..=20).map(|i| i as f64 * 0.45).collect();
    let tol = OdeTolerances::default();
    let out = integrate(
        |_t, y, d| {
            d[0] = y[1];
            d[1] = -w * w * y[0];
            Ok(())
        },
        &[1.0, 0.0],
        0.0,
        &ts,
        &tol,
    )
    .unwrap();
    let mut worst = 0.0f64;
    for (j, &t) in ts.iter().enumerate() {
        worst = worst.max((out[2 * j] - (w * t).cos()).abs());
        worst = worst.max((out[2 * j + 1] + w * (w * t).sin()).abs());
    }
    // Local tolerance 1e-6 accumulated over ~1.5 periods: a few 1e-6, far above rounding.
    assert!(worst < 2e-5, "worst error {worst}");
    assert!(worst > 1e-12, "suspiciously exact: {worst}");
    // Tightening the tolerance must shrink the error (the step control is live).
    let tight_out = integrate(
        |_t, y, d| {
            d[0] = y[1];
            d[1] = -w * w * y[0];
            Ok(())
        },
        &[1.0, 0.0],
        0.0,
        &ts,
        &tight(),
    )
    .unwrap();
    let mut tight_worst = 0.0f64;
    for (j, &t) in ts.iter().enumerate() {
        tight_worst = tight_worst.max((tight_out[2 * j] - (w * t).cos()).abs());
    }
    assert!(tight_worst < 1e-8, "tight error {tight_worst}");
    assert!(tight_worst < worst / 100.0);
}

#[test]
fn oscillator_sensitivities_match_finite_differences_and_closed_form() {
    let w = 0.9;
    let y0 = [0.4, -0.2];
    let ts = [0.5, 2.0, 3.3, 7.9];
    let sol = solve_sensitivities(&mut Oscillator(w), &y0, true, 0.0, &ts, &tight()).unwrap();
    assert_eq!(sol.n_sens, 3);
    // Closed form: y1 = a cos(wt) + (b/w) sin(wt).
    let (a, b) = (y0[0], y0[1]);
    for (j, &t) in ts.iter().enumerate() {
        let (s, c) = (w * t).sin_cos();
        let y1 = a * c + b / w * s;
        assert!((sol.values[2 * j] - y1).abs() < 1e-8);
        let base = j * 3 * 2;
        // d y1 / d a, d y1 / d b, d y1 / d w
        let dy1_da = c;
        let dy1_db = s / w;
        let dy1_dw = -a * t * s - b / (w * w) * s + b / w * t * c;
        assert!((sol.sens[base] - dy1_da).abs() < 1e-8);
        assert!((sol.sens[base + 2] - dy1_db).abs() < 1e-8);
        assert!(
            (sol.sens[base + 4] - dy1_dw).abs() < 1e-7,
            "{} vs {dy1_dw}",
            sol.sens[base + 4]
        );
    }
    // Finite differences of the solver in w, both states.
    let h = 1e-5;
    let plus = solve_sensitivities(&mut Oscillator(w + h), &y0, false, 0.0, &ts, &tight()).unwrap();
    let minus =
        solve_sensitivities(&mut Oscillator(w - h), &y0, false, 0.0, &ts, &tight()).unwrap();
    for j in 0..ts.len() {
        for i in 0..2 {
            let fd = (plus.values[2 * j + i] - minus.values[2 * j + i]) / (2.0 * h);
            let an = sol.sens[j * 6 + 4 + i];
            assert!((fd - an).abs() < 1e-5 * an.abs().max(1.0), "{fd} vs {an}");
        }
    }
}

#[test]
fn invalid_inputs_and_failures_are_errors() {
    let tol = OdeTolerances::default();
    let f = |_t: f64, y: &[f64], d: &mut [f64]| {
        d[0] = -y[0];
        Ok(())
    };
    assert!(matches!(
        integrate(f, &[1.0], 1.0, &[0.5], &tol),
        Err(OdeError::Input(_))
    ));
    assert!(matches!(
        integrate(f, &[1.0], 0.0, &[2.0, 1.0], &tol),
        Err(OdeError::Input(_))
    ));
    let few = OdeTolerances {
        max_num_steps: 3,
        ..tol
    };
    assert!(matches!(
        integrate(f, &[1.0], 0.0, &[100.0], &few),
        Err(OdeError::MaxSteps { .. })
    ));
    let failing = |_t: f64, _y: &[f64], _d: &mut [f64]| Err("boom".to_string());
    assert!(matches!(
        integrate(failing, &[1.0], 0.0, &[1.0], &tol),
        Err(OdeError::Rhs(_))
    ));
    assert!(solve_sensitivities(&mut Decay, &[1.0], false, 0.0, &[1.0], &tol).is_err());
    assert!(solve_sensitivities(&mut DecayK(1.0), &[1.0, 2.0], false, 0.0, &[1.0], &tol).is_err());
}
