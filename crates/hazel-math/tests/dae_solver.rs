//! The DAE solver (`hazel_math::dae`): closed-form solutions (an ODE written as a DAE, a
//! semi-explicit index-1 system), the stiff Robertson problem against scipy's Radau on its ODE
//! form (`tests/fixtures/robertson_dae.json`, `scripts/solve/make_dae_reference.py`) and its
//! conservation law, sensitivities against
//! closed forms and central differences, and Stan's argument checks.

#![allow(clippy::needless_range_loop)]

use hazel_math::dae::{solve_dae, DaeError, DaeResidual, DaeSolution, DaeTolerances};

/// `F = [y₁' + a y₁, y₂ − b y₁]` with θ = (a, b): y₁ = y₀ e^{−at}, y₂ = b y₁.
struct Decay {
    theta: [f64; 2],
}

impl DaeResidual for Decay {
    fn n_states(&self) -> usize {
        2
    }
    fn n_params(&self) -> usize {
        2
    }
    fn eval(&mut self, _t: f64, y: &[f64], yp: &[f64], r: &mut [f64]) -> Result<(), String> {
        let [a, b] = self.theta;
        r[0] = yp[0] + a * y[0];
        r[1] = y[1] - b * y[0];
        Ok(())
    }
    fn eval_jac(
        &mut self,
        t: f64,
        y: &[f64],
        yp: &[f64],
        r: &mut [f64],
        jy: &mut [f64],
        jyp: &mut [f64],
        jp: &mut [f64],
    ) -> Result<(), String> {
        self.eval(t, y, yp, r)?;
        let [a, b] = self.theta;
        jy.copy_from_slice(&[a, 0.0, -b, 1.0]);
        jyp.copy_from_slice(&[1.0, 0.0, 0.0, 0.0]);
        jp.copy_from_slice(&[y[0], 0.0, 0.0, -y[0]]);
        Ok(())
    }
}

/// Robertson's chemical kinetics as an index-1 DAE, rate constants θ = (0.04, 1e4, 3e7).
struct Robertson {
    k: [f64; 3],
}

impl DaeResidual for Robertson {
    fn n_states(&self) -> usize {
        3
    }
    fn n_params(&self) -> usize {
        3
    }
    fn eval(&mut self, _t: f64, y: &[f64], yp: &[f64], r: &mut [f64]) -> Result<(), String> {
        let [k1, k2, k3] = self.k;
        r[0] = yp[0] + k1 * y[0] - k2 * y[1] * y[2];
        r[1] = yp[1] - k1 * y[0] + k2 * y[1] * y[2] + k3 * y[1] * y[1];
        r[2] = y[0] + y[1] + y[2] - 1.0;
        Ok(())
    }
    fn eval_jac(
        &mut self,
        t: f64,
        y: &[f64],
        yp: &[f64],
        r: &mut [f64],
        jy: &mut [f64],
        jyp: &mut [f64],
        jp: &mut [f64],
    ) -> Result<(), String> {
        self.eval(t, y, yp, r)?;
        let [k1, k2, k3] = self.k;
        jy.copy_from_slice(&[
            k1,
            -k2 * y[2],
            -k2 * y[1],
            -k1,
            k2 * y[2] + 2.0 * k3 * y[1],
            k2 * y[1],
            1.0,
            1.0,
            1.0,
        ]);
        jyp.copy_from_slice(&[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0]);
        jp.copy_from_slice(&[
            y[0],
            -y[1] * y[2],
            0.0,
            -y[0],
            y[1] * y[2],
            y[1] * y[1],
            0.0,
            0.0,
            0.0,
        ]);
        Ok(())
    }
}

fn decay(theta: [f64; 2], y0: f64, ts: &[f64], tol: &DaeTolerances) -> DaeSolution {
    let mut f = Decay { theta };
    let [a, b] = theta;
    solve_dae(
        &mut f,
        &[y0, b * y0],
        &[-a * y0, -a * b * y0],
        true,
        0.0,
        ts,
        tol,
    )
    .unwrap()
}

#[test]
fn closed_form_values_and_sensitivities() {
    let (a, b, y0) = (0.7, 1.5, 2.0);
    let ts = [0.5, 1.0, 1.0, 3.0];
    let sol = decay([a, b], y0, &ts, &DaeTolerances::default());
    assert_eq!(sol.n_sens, 4);
    for (j, &t) in ts.iter().enumerate() {
        let e = (-a * t).exp();
        let want = [y0 * e, b * y0 * e];
        for i in 0..2 {
            let got = sol.values[j * 2 + i];
            assert!(
                (got - want[i]).abs() <= 1e-8 * want[i].abs(),
                "t {t}: {got} vs {}",
                want[i]
            );
        }
        // Columns: y0[1], y0[2], a, b (y0[2] has no effect: the algebraic equation fixes y2).
        let sens = |k: usize, i: usize| sol.sens[(j * 4 + k) * 2 + i];
        let want = [
            (0, 0, e),
            (0, 1, b * e),
            (1, 0, 0.0),
            (1, 1, 0.0),
            (2, 0, -t * y0 * e),
            (2, 1, -t * b * y0 * e),
            (3, 0, 0.0),
            (3, 1, y0 * e),
        ];
        for (k, i, w) in want {
            assert!(
                (sens(k, i) - w).abs() <= 1e-7 * w.abs().max(1.0),
                "t {t}: ∂y{i}/∂v{k} = {} vs {w}",
                sens(k, i)
            );
        }
    }
}

#[test]
fn robertson_matches_radau() {
    let mut f = Robertson {
        k: [0.04, 1e4, 3e7],
    };
    let ts = [0.4, 4.0, 40.0, 400.0];
    let tol = DaeTolerances {
        rtol: 1e-8,
        atol: 1e-12,
        max_num_steps: 100_000,
    };
    let sol = solve_dae(
        &mut f,
        &[1.0, 0.0, 0.0],
        &[-0.04, 0.04, 0.0],
        false,
        0.0,
        &ts,
        &tol,
    )
    .unwrap();
    let path = format!(
        "{}/tests/fixtures/robertson_dae.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let fixture: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let want: Vec<Vec<f64>> = serde_json::from_value(fixture["y"].clone()).unwrap();
    for j in 0..ts.len() {
        let y = &sol.values[j * 3..j * 3 + 3];
        for i in 0..3 {
            assert!(
                (y[i] - want[j][i]).abs() <= 1e-6 * want[j][i],
                "t {}: y{i} {} vs {}",
                ts[j],
                y[i],
                want[j][i]
            );
        }
        assert!((y.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }
}

#[test]
fn robertson_sensitivities_match_finite_differences() {
    let ts = [0.4, 4.0];
    let tol = DaeTolerances {
        rtol: 1e-10,
        atol: 1e-14,
        max_num_steps: 100_000,
    };
    let k = [0.04, 1e4, 3e7];
    let run = |k: [f64; 3], y0: [f64; 3]| {
        let mut f = Robertson { k };
        let yp0 = [-k[0] * y0[0], k[0] * y0[0], 0.0];
        solve_dae(&mut f, &y0, &yp0, true, 0.0, &ts, &tol).unwrap()
    };
    let y0 = [1.0, 0.0, 0.0];
    let sol = run(k, y0);
    assert_eq!(sol.n_sens, 6);
    for p in 0..3 {
        // Differences of adaptive solves carry their own error (~1e-10 / h): a large step.
        let h = 1e-3 * k[p];
        let (mut kp, mut km) = (k, k);
        kp[p] += h;
        km[p] -= h;
        let (sp, sm) = (run(kp, y0), run(km, y0));
        for j in 0..ts.len() {
            for i in 0..3 {
                let fd = (sp.values[j * 3 + i] - sm.values[j * 3 + i]) / (2.0 * h);
                let got = sol.sens[(j * 6 + 3 + p) * 3 + i];
                // Relative sensitivities k ∂y/∂k (∂y/∂k2 ≈ 1e-11 is below atol otherwise).
                let (got_r, fd_r) = (got * k[p], fd * k[p]);
                assert!(
                    (got_r - fd_r).abs() <= 2e-5 * fd_r.abs() + 1e-8,
                    "t {}: ∂y{i}/∂k{p} = {got} vs {fd}",
                    ts[j]
                );
            }
        }
    }
}

#[test]
fn stans_argument_checks() {
    let tol = DaeTolerances::default();
    let mut f = Decay { theta: [1.0, 1.0] };
    let err = |r: Result<DaeSolution, DaeError>| r.unwrap_err().to_string();
    let msg = err(solve_dae(
        &mut f,
        &[1.0, 1.0],
        &[-1.0, -1.0],
        false,
        1.0,
        &[1.0],
        &tol,
    ));
    assert!(
        msg.contains("initial time is 1, but must be less than 1"),
        "{msg}"
    );
    let msg = err(solve_dae(
        &mut f,
        &[1.0, 1.0],
        &[-1.0, -1.0],
        false,
        0.0,
        &[2.0, 1.0],
        &tol,
    ));
    assert!(msg.contains("times is not a valid sorted vector"), "{msg}");
    let msg = err(solve_dae(
        &mut f,
        &[f64::NAN, 1.0],
        &[-1.0, -1.0],
        false,
        0.0,
        &[1.0],
        &tol,
    ));
    assert!(msg.contains("initial state[1] is NaN"), "{msg}");
    let bad = DaeTolerances { rtol: 0.0, ..tol };
    let msg = err(solve_dae(
        &mut f,
        &[1.0, 1.0],
        &[-1.0, -1.0],
        false,
        0.0,
        &[1.0],
        &bad,
    ));
    assert!(
        msg.contains("relative_tolerance is 0, but must be positive finite"),
        "{msg}"
    );
    let few = DaeTolerances {
        max_num_steps: 3,
        ..tol
    };
    let e = solve_dae(
        &mut f,
        &[1.0, 1.0],
        &[-1.0, -1.0],
        false,
        0.0,
        &[10.0],
        &few,
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            DaeError::MaxSteps {
                max_num_steps: 3,
                ..
            }
        ),
        "{e:?}"
    );
}
