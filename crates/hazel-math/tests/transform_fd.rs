//! Transforms checked against finite differences: adjoint rules (including bound adjoints),
//! log-Jacobians against a numerical log|det J| for the square (one-to-one) transforms, and
//! round trips through the inverse.

use hazel_math::transforms::*;

/// Deterministic points (SplitMix64 → roughly standard normal by summing uniforms).
struct Points(u64);
impl Points {
    fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f64 {
        (0..12).map(|_| self.uniform()).sum::<f64>() - 6.0
    }
    fn vec(&mut self, n: usize, scale: f64) -> Vec<f64> {
        (0..n).map(|_| scale * self.normal()).collect()
    }
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(1.0)
}

const ALL: [Structured; 14] = [
    Structured::Ordered { k: 4 },
    Structured::PositiveOrdered { k: 3 },
    Structured::Simplex { k: 4 },
    Structured::Simplex { k: 1 },
    Structured::UnitVector { k: 3 },
    Structured::SumToZeroVector { k: 4 },
    Structured::SumToZeroMatrix { rows: 4, cols: 3 },
    Structured::CholeskyFactorCorr { k: 5 },
    Structured::CholeskyFactorCov { rows: 5, cols: 3 },
    Structured::CovMatrix { k: 4 },
    Structured::CorrMatrix { k: 5 },
    Structured::ColumnStochastic { rows: 3, cols: 2 },
    Structured::RowStochastic { rows: 2, cols: 4 },
    Structured::RowStochastic { rows: 3, cols: 2 },
];

fn objective(s: Structured, q: &[f64], c: &[f64]) -> f64 {
    let mut x = vec![0.0; s.constrained_len()];
    let mut ws = vec![0.0; s.workspace_len()];
    let lj = s.constrain(q, &mut x, &mut ws).unwrap();
    lj + x.iter().zip(c).map(|(a, b)| a * b).sum::<f64>()
}

#[test]
fn structured_adjoints_match_finite_differences() {
    let mut rng = Points(7);
    for s in ALL {
        for scale in [0.3, 1.0, 2.0] {
            let q = rng.vec(s.free_len(), scale);
            let c = rng.vec(s.constrained_len(), 1.0);
            let mut x = vec![0.0; s.constrained_len()];
            let mut ws = vec![0.0; s.workspace_len()];
            s.constrain(&q, &mut x, &mut ws).unwrap();
            let mut g = vec![0.0; q.len()];
            // Poison the workspace: the adjoint must not rely on what constrain left there.
            ws.iter_mut().for_each(|w| *w = f64::NAN);
            s.constrain_adjoint(&q, &x, &c, &mut g, &mut ws);
            for i in 0..q.len() {
                let h = 1e-6;
                let mut qp = q.clone();
                qp[i] += h;
                let mut qm = q.clone();
                qm[i] -= h;
                let fd = (objective(s, &qp, &c) - objective(s, &qm, &c)) / (2.0 * h);
                assert!(
                    rel(g[i], fd) < 1e-6,
                    "{s:?} scale {scale}: d/dq[{i}] = {} vs finite difference {fd}",
                    g[i]
                );
            }
        }
    }
}

/// log|det| of a square matrix (column-major) by LU with partial pivoting.
fn log_abs_det(mut a: Vec<f64>, n: usize) -> f64 {
    let mut ld = 0.0;
    for k in 0..n {
        let p = (k..n)
            .max_by(|&i, &j| a[i + k * n].abs().total_cmp(&a[j + k * n].abs()))
            .unwrap();
        if p != k {
            for j in 0..n {
                a.swap(k + j * n, p + j * n);
            }
        }
        let d = a[k + k * n];
        ld += d.abs().ln();
        for i in (k + 1)..n {
            let f = a[i + k * n] / d;
            for j in k..n {
                a[i + j * n] -= f * a[k + j * n];
            }
        }
    }
    ld
}

/// The constrained coordinates that determine the value (so the map from the free values is
/// square): which entries of `x` to keep.
fn free_coordinates(s: Structured) -> Option<Vec<usize>> {
    match s {
        Structured::Ordered { k } | Structured::PositiveOrdered { k } => Some((0..k).collect()),
        // A simplex is determined by its first K−1 entries (Stan's density convention).
        Structured::Simplex { k } => Some((0..k - 1).collect()),
        Structured::CholeskyFactorCorr { k } => Some(
            (0..k)
                .flat_map(|c| ((c + 1)..k).map(move |r| r + c * k))
                .collect(),
        ),
        Structured::CorrMatrix { k } => Some(
            (0..k)
                .flat_map(|c| ((c + 1)..k).map(move |r| r + c * k))
                .collect(),
        ),
        Structured::CholeskyFactorCov { rows, cols } => Some(
            (0..cols)
                .flat_map(|c| (c..rows).map(move |r| r + c * rows))
                .collect(),
        ),
        Structured::CovMatrix { k } => Some(
            (0..k)
                .flat_map(|c| (c..k).map(move |r| r + c * k))
                .collect(),
        ),
        _ => None,
    }
}

#[test]
fn log_jacobians_match_numerical_determinants() {
    let mut rng = Points(11);
    let mut checked = 0;
    for s in ALL {
        let Some(coords) = free_coordinates(s) else {
            continue;
        };
        if s.free_len() == 0 {
            continue;
        }
        let n = s.free_len();
        assert_eq!(coords.len(), n, "{s:?}");
        let q = rng.vec(n, 0.8);
        let mut ws = vec![0.0; s.workspace_len()];
        let mut x = vec![0.0; s.constrained_len()];
        let lj = s.constrain(&q, &mut x, &mut ws).unwrap();
        let mut jac = vec![0.0; n * n];
        for j in 0..n {
            let h = 1e-6;
            let (mut qp, mut qm) = (q.clone(), q.clone());
            qp[j] += h;
            qm[j] -= h;
            let (mut xp, mut xm) = (x.clone(), x.clone());
            s.constrain(&qp, &mut xp, &mut ws).unwrap();
            s.constrain(&qm, &mut xm, &mut ws).unwrap();
            for (i, &ci) in coords.iter().enumerate() {
                jac[i + j * n] = (xp[ci] - xm[ci]) / (2.0 * h);
            }
        }
        let numeric = log_abs_det(jac, n);
        // cov_matrix: Stan's log J includes the constant K log 2 and is otherwise the exact
        // log|det| of the map to the lower triangle.
        assert!(
            rel(lj, numeric) < 1e-6,
            "{s:?}: log J = {lj}, numerical {numeric}"
        );
        checked += 1;
    }
    assert_eq!(checked, 7);
}

#[test]
fn round_trips() {
    let mut rng = Points(13);
    for s in ALL {
        for scale in [0.5, 1.5] {
            let q = rng.vec(s.free_len(), scale);
            let mut ws = vec![0.0; s.workspace_len()];
            let mut x = vec![0.0; s.constrained_len()];
            s.constrain(&q, &mut x, &mut ws).unwrap();
            let mut q_back = vec![0.0; s.free_len()];
            s.unconstrain(&x, &mut q_back)
                .unwrap_or_else(|e| panic!("{s:?}: {e}"));
            let mut x_again = vec![0.0; s.constrained_len()];
            s.constrain(&q_back, &mut x_again, &mut ws).unwrap();
            for i in 0..x.len() {
                assert!(
                    (x[i] - x_again[i]).abs() < 1e-12,
                    "{s:?}: x[{i}] {} vs {}",
                    x[i],
                    x_again[i]
                );
            }
            if !matches!(s, Structured::UnitVector { .. }) {
                for i in 0..q.len() {
                    assert!(
                        (q[i] - q_back[i]).abs() < 1e-9,
                        "{s:?}: q[{i}] {} vs {}",
                        q[i],
                        q_back[i]
                    );
                }
            }
        }
    }
}

#[test]
fn constrained_values_satisfy_their_constraints() {
    let mut rng = Points(17);
    let q = rng.vec(6, 1.0);
    let mut x = vec![0.0; 12];
    let mut ws = vec![0.0; 32];
    sum_to_zero_matrix_constrain(&q, 3, 4, &mut x, &mut ws);
    for i in 0..3 {
        assert!((0..4).map(|j| x[i + 3 * j]).sum::<f64>().abs() < 1e-14);
    }
    for j in 0..4 {
        assert!(x[3 * j..3 * j + 3].iter().sum::<f64>().abs() < 1e-14);
    }
    let s = Structured::RowStochastic { rows: 3, cols: 4 };
    let q = rng.vec(s.free_len(), 1.0);
    let mut x = vec![0.0; 12];
    s.constrain(&q, &mut x, &mut ws).unwrap();
    for i in 0..3 {
        assert!(((0..4).map(|j| x[i + 3 * j]).sum::<f64>() - 1.0).abs() < 1e-14);
    }
}

#[test]
fn unconstrain_rejects_invalid_values() {
    let mut q = [0.0; 4];
    let simplex = Structured::Simplex { k: 3 };
    assert!(simplex
        .unconstrain(&[0.2, 0.3, 0.6], &mut q[..2])
        .unwrap_err()
        .message
        .contains("sum to"));
    assert!(simplex
        .unconstrain(&[-0.2, 0.6, 0.6], &mut q[..2])
        .unwrap_err()
        .message
        .contains("negative"));
    assert!(simplex.unconstrain(&[0.5, 0.5], &mut q[..2]).is_err());
    assert!(Structured::Ordered { k: 3 }
        .unconstrain(&[1.0, 1.0, 2.0], &mut q[..3])
        .is_err());
    assert!(Structured::PositiveOrdered { k: 2 }
        .unconstrain(&[-1.0, 2.0], &mut q[..2])
        .is_err());
    assert!(Structured::CovMatrix { k: 2 }
        .unconstrain(&[1.0, 2.0, 2.0, 1.0], &mut q[..3])
        .unwrap_err()
        .message
        .contains("positive definite"));
    assert!(Structured::CorrMatrix { k: 2 }
        .unconstrain(&[1.0, 0.5, 0.5, 1.1], &mut q[..1])
        .is_err());
    assert!(Structured::CholeskyFactorCorr { k: 2 }
        .unconstrain(&[1.0, 0.6, 0.0, 0.7], &mut q[..1])
        .is_err());
    assert!(Structured::UnitVector { k: 2 }
        .unconstrain(&[1.0, 1.0], &mut q[..2])
        .is_err());
    assert!(Structured::SumToZeroVector { k: 3 }
        .unconstrain(&[1.0, 1.0, -1.0], &mut q[..2])
        .is_err());
    assert!(Structured::Simplex { k: 3 }
        .unconstrain(&[0.2, f64::NAN, 0.8], &mut q[..2])
        .is_err());
    assert!(lower_unconstrain(&[0.5], &[1.0], &mut q[..1]).is_err());
    assert!(upper_unconstrain(&[1.5], &[1.0], &mut q[..1]).is_err());
    assert!(lower_upper_unconstrain(&[3.0], &[0.0], &[2.0], &mut q[..1]).is_err());
    assert!(lower_upper_constrain(&[0.0], &[2.0], &[1.0], &mut q[..1]).is_err());
    assert!(offset_multiplier_constrain(&[0.0], &[0.0], &[-1.0], &mut q[..1]).is_err());
    assert!(unit_vector_constrain(&[0.0, 0.0], &mut q[..2]).is_err());
    assert!(lower_unconstrain(&[1.0, 2.0, 3.0], &[0.0, 1.0], &mut q[..3]).is_err());
    assert!(lower_constrain(&[1.0, 2.0, 3.0], &[0.0, 1.0], &mut q[..3]).is_err());
    assert!(upper_constrain(&[1.0, 2.0, 3.0], &[0.0, 1.0], &mut q[..3]).is_err());
    assert!(lower_upper_constrain(&[1.0, 2.0, 3.0], &[0.0], &[1.0, 2.0], &mut q[..3]).is_err());
}

/// Scalar-bound transforms with bounds that are parameters: adjoints w.r.t. the value and the
/// bounds against finite differences, per-element and broadcast bounds, and infinite bounds.
#[test]
fn bound_adjoints_match_finite_differences() {
    let q = [0.7, -1.3, 2.2];
    let c = [0.4, -1.1, 0.9];
    let h = 1e-6;
    let f_lub = |q: &[f64], lb: &[f64], ub: &[f64]| {
        let mut x = [0.0; 3];
        let lj = lower_upper_constrain(q, lb, ub, &mut x).unwrap();
        lj + x.iter().zip(&c).map(|(a, b)| a * b).sum::<f64>()
    };
    for (lb, ub) in [
        (vec![-1.0, 0.5, 2.0], vec![1.0, 3.0, 2.5]),
        (vec![0.25], vec![4.0]),
        (vec![f64::NEG_INFINITY], vec![1.5]),
        (vec![-2.0], vec![f64::INFINITY]),
        (vec![f64::NEG_INFINITY], vec![f64::INFINITY]),
    ] {
        let mut g = [0.0; 3];
        let mut g_lb = vec![0.0; lb.len()];
        let mut g_ub = vec![0.0; ub.len()];
        lower_upper_constrain_adjoint(&q, &lb, &ub, &c, &mut g, Some(&mut g_lb), Some(&mut g_ub));
        for i in 0..3 {
            let (mut qp, mut qm) = (q, q);
            qp[i] += h;
            qm[i] -= h;
            let fd = (f_lub(&qp, &lb, &ub) - f_lub(&qm, &lb, &ub)) / (2.0 * h);
            assert!(rel(g[i], fd) < 1e-7, "lub d/dq[{i}] {} vs {fd}", g[i]);
        }
        for i in 0..lb.len() {
            if lb[i].is_finite() {
                let (mut p, mut m) = (lb.clone(), lb.clone());
                p[i] += h;
                m[i] -= h;
                let fd = (f_lub(&q, &p, &ub) - f_lub(&q, &m, &ub)) / (2.0 * h);
                assert!(
                    rel(g_lb[i], fd) < 1e-7,
                    "lub d/dlb[{i}] {} vs {fd}",
                    g_lb[i]
                );
            } else {
                assert_eq!(g_lb[i], 0.0);
            }
        }
        for i in 0..ub.len() {
            if ub[i].is_finite() {
                let (mut p, mut m) = (ub.clone(), ub.clone());
                p[i] += h;
                m[i] -= h;
                let fd = (f_lub(&q, &lb, &p) - f_lub(&q, &lb, &m)) / (2.0 * h);
                assert!(
                    rel(g_ub[i], fd) < 1e-7,
                    "lub d/dub[{i}] {} vs {fd}",
                    g_ub[i]
                );
            } else {
                assert_eq!(g_ub[i], 0.0);
            }
        }
    }

    // One-sided and offset/multiplier, broadcast bound.
    let f_lower = |q: &[f64], lb: f64| {
        let mut x = [0.0; 3];
        lower_constrain(q, &[lb], &mut x).unwrap()
            + x.iter().zip(&c).map(|(a, b)| a * b).sum::<f64>()
    };
    let f_upper = |q: &[f64], ub: f64| {
        let mut x = [0.0; 3];
        upper_constrain(q, &[ub], &mut x).unwrap()
            + x.iter().zip(&c).map(|(a, b)| a * b).sum::<f64>()
    };
    let f_om = |q: &[f64], m: f64, s: f64| {
        let mut x = [0.0; 3];
        offset_multiplier_constrain(q, &[m], &[s], &mut x).unwrap()
            + x.iter().zip(&c).map(|(a, b)| a * b).sum::<f64>()
    };
    let (mut g, mut gb) = ([0.0; 3], [0.0; 1]);
    lower_constrain_adjoint(&q, &[0.5], &c, &mut g, Some(&mut gb));
    assert!(
        rel(
            gb[0],
            (f_lower(&q, 0.5 + h) - f_lower(&q, 0.5 - h)) / (2.0 * h)
        ) < 1e-7
    );
    for i in 0..3 {
        let (mut qp, mut qm) = (q, q);
        qp[i] += h;
        qm[i] -= h;
        assert!(rel(g[i], (f_lower(&qp, 0.5) - f_lower(&qm, 0.5)) / (2.0 * h)) < 1e-7);
    }
    let (mut g, mut gb) = ([0.0; 3], [0.0; 1]);
    upper_constrain_adjoint(&q, &[0.5], &c, &mut g, Some(&mut gb));
    assert!(
        rel(
            gb[0],
            (f_upper(&q, 0.5 + h) - f_upper(&q, 0.5 - h)) / (2.0 * h)
        ) < 1e-7
    );
    for i in 0..3 {
        let (mut qp, mut qm) = (q, q);
        qp[i] += h;
        qm[i] -= h;
        assert!(rel(g[i], (f_upper(&qp, 0.5) - f_upper(&qm, 0.5)) / (2.0 * h)) < 1e-7);
    }
    let (mut g, mut gm, mut gs) = ([0.0; 3], [0.0; 1], [0.0; 1]);
    offset_multiplier_constrain_adjoint(&q, &[2.5], &c, &mut g, Some(&mut gm), Some(&mut gs));
    assert!(
        rel(
            gm[0],
            (f_om(&q, 1.0 + h, 2.5) - f_om(&q, 1.0 - h, 2.5)) / (2.0 * h)
        ) < 1e-7
    );
    assert!(
        rel(
            gs[0],
            (f_om(&q, 1.0, 2.5 + h) - f_om(&q, 1.0, 2.5 - h)) / (2.0 * h)
        ) < 1e-7
    );
    for i in 0..3 {
        let (mut qp, mut qm) = (q, q);
        qp[i] += h;
        qm[i] -= h;
        assert!(
            rel(
                g[i],
                (f_om(&qp, 1.0, 2.5) - f_om(&qm, 1.0, 2.5)) / (2.0 * h)
            ) < 1e-7
        );
    }
}

#[test]
fn extreme_free_values_stay_finite() {
    // Far in the tails, the log-Jacobians must not overflow to -inf through 1 - tanh² or
    // logistic underflow.
    let mut x = [0.0; 1];
    let lj = lower_upper_constrain(&[40.0], &[0.0], &[1.0], &mut x).unwrap();
    assert!((lj - (-40.0)).abs() < 1e-9, "{lj}");
    let mut l = [0.0; 4];
    let mut ws = [0.0; 8];
    let lj = cholesky_corr_constrain(&[30.0], 2, &mut l, &mut ws);
    assert!(
        lj.is_finite() && (lj - (2.0 * (2f64.ln() - 30.0))).abs() < 1e-9,
        "{lj}"
    );
}
