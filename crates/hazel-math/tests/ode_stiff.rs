//! The stiff solver (`OdeMethod::Stiff`, hazel's `ode_bdf`) on genuinely stiff problems —
//! Robertson kinetics (against scipy's Radau IIA at rtol
//! 1e-12, fixture made by `scripts/ode/make_stiff_fixtures.py`) and van der Pol with μ = 1000
//! (against itself at a tighter tolerance) —, its sensitivities against
//! central finite differences of the solver, the explicit methods failing on the same
//! problems within the step limit, and Cash–Karp on a closed form.

use hazel_math::ode::{solve, OdeError, OdeMethod, OdeRhs, OdeTolerances};

struct Robertson {
    k: [f64; 3],
}

impl OdeRhs for Robertson {
    fn n_states(&self) -> usize {
        3
    }
    fn n_params(&self) -> usize {
        3
    }
    fn eval(&mut self, _t: f64, y: &[f64], d: &mut [f64]) -> Result<(), String> {
        let [k1, k2, k3] = self.k;
        d[0] = -k1 * y[0] + k3 * y[1] * y[2];
        d[1] = k1 * y[0] - k3 * y[1] * y[2] - k2 * y[1] * y[1];
        d[2] = k2 * y[1] * y[1];
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
        let [k1, k2, k3] = self.k;
        jy.copy_from_slice(&[
            -k1,
            k3 * y[2],
            k3 * y[1],
            k1,
            -k3 * y[2] - 2.0 * k2 * y[1],
            -k3 * y[1],
            0.0,
            2.0 * k2 * y[1],
            0.0,
        ]);
        jp.copy_from_slice(&[
            -y[0],
            0.0,
            y[1] * y[2],
            y[0],
            -y[1] * y[1],
            -y[1] * y[2],
            0.0,
            y[1] * y[1],
            0.0,
        ]);
        Ok(())
    }
}

struct VanDerPol {
    mu: f64,
}

impl OdeRhs for VanDerPol {
    fn n_states(&self) -> usize {
        2
    }
    fn n_params(&self) -> usize {
        1
    }
    fn eval(&mut self, _t: f64, y: &[f64], d: &mut [f64]) -> Result<(), String> {
        d[0] = y[1];
        d[1] = self.mu * (1.0 - y[0] * y[0]) * y[1] - y[0];
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
        let mu = self.mu;
        jy.copy_from_slice(&[
            0.0,
            1.0,
            -2.0 * mu * y[0] * y[1] - 1.0,
            mu * (1.0 - y[0] * y[0]),
        ]);
        jp[0] = 0.0;
        jp[1] = (1.0 - y[0] * y[0]) * y[1];
        Ok(())
    }
}

struct Case {
    params: Vec<f64>,
    y0: Vec<f64>,
    ts: Vec<f64>,
    y: Vec<Vec<f64>>,
}

fn fixture(name: &str) -> Case {
    let text = include_str!("fixtures/ode_stiff.json");
    let v: serde_json::Value = serde_json::from_str(text).unwrap();
    let c = v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap();
    let vec = |x: &serde_json::Value| -> Vec<f64> {
        x.as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_f64().unwrap())
            .collect()
    };
    Case {
        params: vec(&c["params"]),
        y0: vec(&c["y0"]),
        ts: vec(&c["ts"]),
        y: c["y"].as_array().unwrap().iter().map(vec).collect(),
    }
}

fn tight() -> OdeTolerances {
    OdeTolerances {
        rtol: 1e-10,
        atol: 1e-14,
        max_num_steps: 100_000,
    }
}

/// `|a − b| ≤ rel·|b| + abs` for every entry.
fn assert_close(what: &str, a: &[f64], b: &[f64], rel: f64, abs: f64) {
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x - y).abs() <= rel * y.abs() + abs,
            "{what}[{i}]: {x} vs {y} (diff {:e})",
            (x - y).abs()
        );
    }
}

#[test]
fn robertson_matches_radau() {
    let c = fixture("robertson");
    let mut rhs = Robertson {
        k: [c.params[0], c.params[1], c.params[2]],
    };
    let sol = solve(
        OdeMethod::Stiff,
        &mut rhs,
        &c.y0,
        false,
        0.0,
        &c.ts,
        &tight(),
    )
    .unwrap();
    let want: Vec<f64> = c.y.concat();
    assert_close("robertson", &sol.values, &want, 1e-7, 1e-13);
    // Stan's default tolerances also give a usable answer.
    let sol = solve(
        OdeMethod::Stiff,
        &mut rhs,
        &c.y0,
        false,
        0.0,
        &c.ts,
        &OdeTolerances::default(),
    )
    .unwrap();
    assert_close("robertson (1e-6)", &sol.values, &want, 1e-3, 1e-6);
}

#[test]
fn van_der_pol_mu_1000_converges() {
    // No Radau fixture (scipy's Radau does not finish μ = 1000 at rtol 1e-12); the solution at
    // 1e-8 against the solution at 1e-11, over two relaxation periods.
    let ts = [500.0, 1000.0, 1500.0, 2000.0, 2500.0, 3000.0];
    let at = |rtol: f64| {
        let tol = OdeTolerances {
            rtol,
            atol: rtol,
            max_num_steps: 1_000_000,
        };
        solve(
            OdeMethod::Stiff,
            &mut VanDerPol { mu: 1000.0 },
            &[2.0, 0.0],
            false,
            0.0,
            &ts,
            &tol,
        )
        .unwrap()
        .values
    };
    let (coarse, fine) = (at(1e-8), at(1e-11));
    assert_close("van der Pol", &coarse, &fine, 1e-5, 1e-6);
    // The slow branch: |y1| between 1 and 2 away from the jumps.
    assert!(fine
        .iter()
        .step_by(2)
        .all(|y| (0.9..2.01).contains(&y.abs())));
}

#[test]
fn explicit_methods_hit_the_step_limit_where_stiff_succeeds() {
    let c = fixture("robertson");
    let tol = OdeTolerances {
        rtol: 1e-6,
        atol: 1e-10,
        max_num_steps: 100_000,
    };
    let k = [c.params[0], c.params[1], c.params[2]];
    for method in [OdeMethod::Rk45, OdeMethod::CashKarp] {
        let e = solve(method, &mut Robertson { k }, &c.y0, false, 0.0, &c.ts, &tol).unwrap_err();
        assert!(matches!(e, OdeError::MaxSteps { .. }), "{method:?}: {e}");
    }
    solve(
        OdeMethod::Stiff,
        &mut Robertson { k },
        &c.y0,
        false,
        0.0,
        &c.ts,
        &tol,
    )
    .unwrap();
    let ts = [500.0, 1000.0];
    for method in [OdeMethod::Rk45, OdeMethod::CashKarp] {
        let e = solve(
            method,
            &mut VanDerPol { mu: 1000.0 },
            &[2.0, 0.0],
            false,
            0.0,
            &ts,
            &tol,
        )
        .unwrap_err();
        assert!(matches!(e, OdeError::MaxSteps { .. }), "{method:?}: {e}");
    }
    solve(
        OdeMethod::Stiff,
        &mut VanDerPol { mu: 1000.0 },
        &[2.0, 0.0],
        false,
        0.0,
        &ts,
        &tol,
    )
    .unwrap();
}

/// Sensitivities (to y0 and the parameters) against central differences of the solver at a
/// tight tolerance.
fn check_sensitivities<R: OdeRhs>(
    make: impl Fn(&[f64]) -> R,
    params: &[f64],
    y0: &[f64],
    ts: &[f64],
    rel: f64,
) {
    let tol = tight();
    let mut rhs = make(params);
    let sol = solve(OdeMethod::Stiff, &mut rhs, y0, true, 0.0, ts, &tol).unwrap();
    let n = y0.len();
    let ns = sol.n_sens;
    assert_eq!(ns, n + params.len());
    let run = |p: &[f64], y: &[f64]| {
        let mut r = make(p);
        solve(OdeMethod::Stiff, &mut r, y, false, 0.0, ts, &tol)
            .unwrap()
            .values
    };
    for k in 0..ns {
        let (mut pp, mut pm, mut yp, mut ym) =
            (params.to_vec(), params.to_vec(), y0.to_vec(), y0.to_vec());
        let h;
        if k < n {
            h = 1e-5 * y0[k].abs().max(1e-3);
            yp[k] += h;
            ym[k] -= h;
        } else {
            h = 1e-5 * params[k - n].abs();
            pp[k - n] += h;
            pm[k - n] -= h;
        }
        let (vp, vm) = (run(&pp, &yp), run(&pm, &ym));
        for j in 0..ts.len() {
            for i in 0..n {
                let fd = (vp[j * n + i] - vm[j * n + i]) / (2.0 * h);
                let s = sol.sens[(j * ns + k) * n + i];
                let scale = fd.abs().max(s.abs());
                assert!(
                    (fd - s).abs() <= rel * scale + 1e-9,
                    "d y{i}(t{j}) / d v{k}: {s} vs finite difference {fd}"
                );
            }
        }
    }
}

#[test]
fn robertson_sensitivities_match_finite_differences() {
    check_sensitivities(
        |p| Robertson {
            k: [p[0], p[1], p[2]],
        },
        &[0.04, 3e7, 1e4],
        &[1.0, 0.0, 0.0],
        &[0.4, 4.0, 40.0, 400.0],
        1e-4,
    );
}

#[test]
fn van_der_pol_sensitivities_match_finite_differences() {
    // A moderately stiff μ keeps the finite differences smooth (no jump crossing a time).
    check_sensitivities(
        |p| VanDerPol { mu: p[0] },
        &[50.0],
        &[2.0, 0.0],
        &[10.0, 20.0, 30.0],
        1e-4,
    );
}

/// `y' = -k y` under Cash–Karp: the closed form, and the sensitivity `-t e^{-k t}`.
struct Decay(f64);

impl OdeRhs for Decay {
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
        t: f64,
        y: &[f64],
        d: &mut [f64],
        jy: &mut [f64],
        jp: &mut [f64],
    ) -> Result<(), String> {
        self.eval(t, y, d)?;
        jy[0] = -self.0;
        jp[0] = -y[0];
        Ok(())
    }
}

#[test]
fn cash_karp_and_stiff_on_a_closed_form() {
    let ts = [0.5, 1.0, 2.5, 7.0];
    let tol = OdeTolerances {
        rtol: 1e-10,
        atol: 1e-12,
        max_num_steps: 100_000,
    };
    for method in [OdeMethod::CashKarp, OdeMethod::Stiff, OdeMethod::Rk45] {
        let k = 0.7;
        let sol = solve(method, &mut Decay(k), &[2.0], true, 0.0, &ts, &tol).unwrap();
        for (j, t) in ts.iter().enumerate() {
            let y = 2.0 * (-k * t).exp();
            assert!((sol.values[j] - y).abs() < 1e-8, "{method:?} y({t})");
            // d/dy0 and d/dk.
            let s0 = sol.sens[j * 2];
            let sk = sol.sens[j * 2 + 1];
            assert!(
                (s0 - (-k * t).exp()).abs() < 1e-8,
                "{method:?} dy/dy0 at {t}"
            );
            assert!((sk + t * y).abs() < 1e-7, "{method:?} dy/dk at {t}: {sk}");
        }
    }
}
