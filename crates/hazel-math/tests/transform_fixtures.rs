//! Transforms against stanli (current CmdStan) reference values: constrained values,
//! log-Jacobians, the gradient of `c · x(q) + log J(q)` (what the adjoint rules compute), and
//! the inverse transform. Fixtures: `scripts/transforms/make_fixtures.py`.

use hazel_math::transforms::*;

fn fixtures() -> serde_json::Value {
    let text = include_str!("fixtures/transforms.json");
    serde_json::from_str(text).expect("fixture JSON")
}

fn floats(v: &serde_json::Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(1.0)
}

/// The transform named in the fixture: forward, adjoint and inverse through one interface.
enum Case {
    Structured(Structured),
    Lower(f64),
    Upper(f64),
    LowerUpper(f64, f64),
    OffsetMultiplier(f64, f64),
}

fn case(name: &str) -> Case {
    match name {
        "lower" => Case::Lower(1.5),
        "upper" => Case::Upper(-0.5),
        "lower_upper" => Case::LowerUpper(-1.0, 2.5),
        "offset_multiplier" => Case::OffsetMultiplier(1.0, 3.0),
        "ordered" => Case::Structured(Structured::Ordered { k: 4 }),
        "positive_ordered" => Case::Structured(Structured::PositiveOrdered { k: 4 }),
        "simplex" => Case::Structured(Structured::Simplex { k: 5 }),
        "unit_vector" => Case::Structured(Structured::UnitVector { k: 4 }),
        "sum_to_zero_vector" => Case::Structured(Structured::SumToZeroVector { k: 5 }),
        "sum_to_zero_matrix" => Case::Structured(Structured::SumToZeroMatrix { rows: 3, cols: 4 }),
        "cholesky_factor_corr" => Case::Structured(Structured::CholeskyFactorCorr { k: 4 }),
        "cholesky_factor_cov" => {
            Case::Structured(Structured::CholeskyFactorCov { rows: 4, cols: 3 })
        }
        "cholesky_factor_cov_square" => {
            Case::Structured(Structured::CholeskyFactorCov { rows: 3, cols: 3 })
        }
        "cov_matrix" => Case::Structured(Structured::CovMatrix { k: 3 }),
        "corr_matrix" => Case::Structured(Structured::CorrMatrix { k: 4 }),
        other => panic!("fixture case {other} has no mapping"),
    }
}

impl Case {
    fn constrain(&self, q: &[f64], n_con: usize) -> (Vec<f64>, f64) {
        let mut x = vec![0.0; n_con];
        let lj = match *self {
            Case::Structured(s) => {
                let mut ws = vec![0.0; s.workspace_len()];
                s.constrain(q, &mut x, &mut ws).unwrap()
            }
            Case::Lower(l) => lower_constrain(q, &[l], &mut x).unwrap(),
            Case::Upper(u) => upper_constrain(q, &[u], &mut x).unwrap(),
            Case::LowerUpper(l, u) => lower_upper_constrain(q, &[l], &[u], &mut x).unwrap(),
            Case::OffsetMultiplier(m, s) => {
                offset_multiplier_constrain(q, &[m], &[s], &mut x).unwrap()
            }
        };
        (x, lj)
    }

    fn adjoint(&self, q: &[f64], x: &[f64], c: &[f64]) -> Vec<f64> {
        let mut g = vec![0.0; q.len()];
        match *self {
            Case::Structured(s) => {
                let mut ws = vec![0.0; s.workspace_len()];
                s.constrain_adjoint(q, x, c, &mut g, &mut ws)
            }
            Case::Lower(l) => lower_constrain_adjoint(q, &[l], c, &mut g, None),
            Case::Upper(u) => upper_constrain_adjoint(q, &[u], c, &mut g, None),
            Case::LowerUpper(l, u) => {
                lower_upper_constrain_adjoint(q, &[l], &[u], c, &mut g, None, None)
            }
            Case::OffsetMultiplier(_, s) => {
                offset_multiplier_constrain_adjoint(q, &[s], c, &mut g, None, None)
            }
        }
        g
    }

    fn unconstrain(&self, x: &[f64], n_free: usize) -> Vec<f64> {
        let mut q = vec![0.0; n_free];
        match *self {
            Case::Structured(s) => s.unconstrain(x, &mut q).unwrap(),
            Case::Lower(l) => lower_unconstrain(x, &[l], &mut q).unwrap(),
            Case::Upper(u) => upper_unconstrain(x, &[u], &mut q).unwrap(),
            Case::LowerUpper(l, u) => lower_upper_unconstrain(x, &[l], &[u], &mut q).unwrap(),
            Case::OffsetMultiplier(m, s) => {
                offset_multiplier_unconstrain(x, &[m], &[s], &mut q).unwrap()
            }
        }
        q
    }
}

#[test]
fn transforms_match_stanli() {
    let f = fixtures();
    let cases = f["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 15);
    for c in cases {
        let name = c["name"].as_str().unwrap();
        let n_free = c["n_free"].as_u64().unwrap() as usize;
        let n_con = c["n_constrained"].as_u64().unwrap() as usize;
        let t = case(name);
        for p in c["points"].as_array().unwrap() {
            let q = floats(&p["q"]);
            let weights = floats(&p["c"]);
            let (x, lj) = t.constrain(&q, n_con);
            let x_ref = floats(&p["constrained"]);
            for i in 0..n_con {
                // The reference x_i is a difference of two log densities (see the script):
                // accurate to a few ulps of the log density's magnitude.
                assert!(
                    rel(x[i], x_ref[i]) < 1e-10,
                    "{name}: x[{i}] = {} vs {}",
                    x[i],
                    x_ref[i]
                );
            }
            let lj_ref = p["log_jacobian"].as_f64().unwrap();
            assert!(rel(lj, lj_ref) < 1e-10, "{name}: log J = {lj} vs {lj_ref}");
            let lp: f64 = lj + x.iter().zip(&weights).map(|(a, b)| a * b).sum::<f64>();
            let lp_ref = p["log_density"].as_f64().unwrap();
            assert!(
                rel(lp, lp_ref) < 1e-10,
                "{name}: c·x + log J = {lp} vs {lp_ref}"
            );
            let g = t.adjoint(&q, &x, &weights);
            let g_ref = floats(&p["gradient"]);
            for i in 0..n_free {
                assert!(
                    rel(g[i], g_ref[i]) < 1e-10,
                    "{name}: gradient[{i}] = {} vs {}",
                    g[i],
                    g_ref[i]
                );
            }
            let q_back = t.unconstrain(&x, n_free);
            let q_ref = floats(&p["unconstrained_from_constrained"]);
            for i in 0..n_free {
                assert!(
                    rel(q_back[i], q_ref[i]) < 1e-8,
                    "{name}: unconstrain[{i}] = {} vs {}",
                    q_back[i],
                    q_ref[i]
                );
            }
        }
    }
}

/// `cov_matrix_unconstrain` factors Σ as Eigen's LLT (Stan's `cov_matrix_free`) does: an
/// infinite diagonal entry is an infinite pivot, accepted (its log is +∞), where the
/// Cholesky of the densities and `cholesky_decompose` refuse it.
#[test]
fn cov_matrix_unconstrain_accepts_an_infinite_pivot() {
    let sigma = [f64::INFINITY, 0.5, 0.5, 2.0];
    let mut unc = [0.0; 3];
    cov_matrix_unconstrain(&sigma, 2, &mut unc).expect("an infinite pivot is accepted");
    assert_eq!(unc[0], f64::INFINITY);
    assert!(unc[1..].iter().all(|u| u.is_finite()), "{unc:?}");
    let mut l = [0.0; 4];
    assert!(hazel_math::linalg::cholesky_decompose(&sigma, 2, &mut l).is_err());
}
