//! The iterative trajectory against a recursive reference written the way Stan's `base_nuts`
//! (2.21+) is: `build_tree` recursing on two halves, the three U-turn checks at every merge
//! (merged span, left + first point of right, last point of left + right), and the same checks
//! between the old trajectory and each new subtree at the top level, in Stan's
//! `p_fwd_fwd / p_fwd_bck / p_bck_fwd / p_bck_bck` bookkeeping.
//!
//! Both consume the same random stream in the same order (momentum, then per doubling a
//! direction, a progressive-sampling draw per leaf after the first of each subtree, and the
//! top-level draw), so tree depth, step counts, divergence flags and the selected point must
//! agree. Distributional tests cannot see the U-turn checks (a sampler with fewer checks is still
//! correct, only differently efficient); this test can.

mod common;

use common::Funnel;
use hazel_density::{EvalError, LogDensity};
use hazel_nuts::{nuts_step, Metric, MetricKind, NutsSettings, NutsState};
use hazel_rng::{Purpose, StreamRng};

#[derive(Clone)]
struct Point {
    q: Vec<f64>,
    p: Vec<f64>,
    g: Vec<f64>,
    logp: f64,
}

/// Stan's `compute_criterion`.
fn criterion(p_sharp_minus: &[f64], p_sharp_plus: &[f64], rho: &[f64]) -> bool {
    let dot = |a: &[f64]| a.iter().zip(rho).map(|(x, y)| x * y).sum::<f64>();
    dot(p_sharp_plus) > 0.0 && dot(p_sharp_minus) > 0.0
}

fn add(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x + y).collect()
}

fn log_sum_exp(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return b;
    }
    if b == f64::NEG_INFINITY {
        return a;
    }
    let m = a.max(b);
    m + ((a - m).exp() + (b - m).exp()).ln()
}

struct Reference<'a, D: LogDensity<Workspace = ()>> {
    model: &'a D,
    metric: &'a Metric,
    epsilon: f64,
    h0: f64,
    n_leapfrog: u32,
    sum_metro_prob: f64,
    divergent: bool,
    /// Leaf-by-leaf multinomial draw within the current top-level subtree.
    subtree_log_sum_weight: f64,
    subtree_leaves: u64,
    proposal: Option<(Vec<f64>, f64, f64)>,
}

/// A completed (sub)tree's boundary: (p_sharp_beg, p_sharp_end, rho, p_beg, p_end).
type Boundary = (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>);

impl<D: LogDensity<Workspace = ()>> Reference<'_, D> {
    fn leapfrog(&self, z: &mut Point, eps: f64) -> Result<(), EvalError> {
        for i in 0..z.q.len() {
            z.p[i] += 0.5 * eps * z.g[i];
        }
        let mut v = vec![0.0; z.q.len()];
        self.metric.velocity(&z.p, &mut v);
        for (q, v) in z.q.iter_mut().zip(&v) {
            *q += eps * v;
        }
        z.logp = self.model.log_density_gradient(&mut (), &z.q, &mut z.g)?;
        for i in 0..z.q.len() {
            z.p[i] += 0.5 * eps * z.g[i];
        }
        Ok(())
    }

    fn hamiltonian(&self, z: &Point) -> (f64, Vec<f64>) {
        let mut v = vec![0.0; z.q.len()];
        let kinetic = self.metric.velocity(&z.p, &mut v);
        (-z.logp + kinetic, v)
    }

    /// Stan's `build_tree`; `None` when the subtree diverged or turned.
    fn build_tree(
        &mut self,
        depth: u32,
        z: &mut Point,
        sign: f64,
        rng: &mut StreamRng,
    ) -> Option<Boundary> {
        if depth == 0 {
            let failed = self.leapfrog(z, sign * self.epsilon).is_err();
            self.n_leapfrog += 1;
            let (mut h, v) = self.hamiltonian(z);
            if h.is_nan() || failed {
                h = f64::INFINITY;
            }
            if h - self.h0 > 1000.0 || failed {
                self.divergent = true;
            }
            let log_weight = self.h0 - h;
            self.subtree_log_sum_weight = log_sum_exp(self.subtree_log_sum_weight, log_weight);
            self.sum_metro_prob += if log_weight > 0.0 {
                1.0
            } else {
                log_weight.exp()
            };
            if self.divergent {
                return None;
            }
            if self.subtree_leaves == 0
                || rng.uniform() < (log_weight - self.subtree_log_sum_weight).exp()
            {
                self.proposal = Some((z.q.clone(), z.logp, h));
            }
            self.subtree_leaves += 1;
            return Some((v.clone(), v, z.p.clone(), z.p.clone(), z.p.clone()));
        }
        let (ps_beg, ps_init_end, rho_init, p_beg, p_init_end) =
            self.build_tree(depth - 1, z, sign, rng)?;
        let (ps_final_beg, ps_end, rho_final, p_final_beg, p_end) =
            self.build_tree(depth - 1, z, sign, rng)?;
        let rho = add(&rho_init, &rho_final);
        let mut persist = criterion(&ps_beg, &ps_end, &rho);
        persist &= criterion(&ps_beg, &ps_final_beg, &add(&rho_init, &p_final_beg));
        persist &= criterion(&ps_init_end, &ps_end, &add(&rho_final, &p_init_end));
        persist.then_some((ps_beg, ps_end, rho, p_beg, p_end))
    }
}

struct Outcome {
    q: Vec<f64>,
    treedepth: u32,
    n_leapfrog: u32,
    divergent: bool,
    accept_stat: f64,
    energy: f64,
}

/// Stan's `base_nuts::transition` with the reference `build_tree`.
fn reference_transition<D: LogDensity<Workspace = ()>>(
    model: &D,
    metric: &Metric,
    start: &NutsState,
    epsilon: f64,
    max_depth: u32,
    rng: &mut StreamRng,
) -> Outcome {
    let d = start.dim();
    let mut z = Point {
        q: start.position().to_vec(),
        p: vec![0.0; d],
        g: start.gradient().to_vec(),
        logp: start.logp(),
    };
    metric.sample_momentum(rng, &mut z.p);
    let mut r = Reference {
        model,
        metric,
        epsilon,
        h0: 0.0,
        n_leapfrog: 0,
        sum_metro_prob: 0.0,
        divergent: false,
        subtree_log_sum_weight: f64::NEG_INFINITY,
        subtree_leaves: 0,
        proposal: None,
    };
    let (h0, v0) = r.hamiltonian(&z);
    r.h0 = h0;
    let (mut z_fwd, mut z_bck) = (z.clone(), z.clone());
    // The outer ends start at the initial point; the inner ends are set by every doubling.
    let (mut p_fwd_fwd, mut p_bck_bck) = (z.p.clone(), z.p.clone());
    let (mut ps_fwd_fwd, mut ps_bck_bck) = (v0.clone(), v0);
    let (mut p_fwd_bck, mut p_bck_fwd, mut ps_fwd_bck, mut ps_bck_fwd): (
        Vec<f64>,
        Vec<f64>,
        Vec<f64>,
        Vec<f64>,
    );
    let mut rho = z.p.clone();
    let mut sample = (z.q.clone(), h0);
    let mut log_sum_weight = 0.0;
    let mut depth = 0;
    while depth < max_depth {
        r.subtree_log_sum_weight = f64::NEG_INFINITY;
        r.subtree_leaves = 0;
        r.proposal = None;
        let (rho_fwd, rho_bck);
        if rng.uniform() > 0.5 {
            rho_bck = rho.clone();
            p_bck_fwd = p_fwd_fwd.clone();
            ps_bck_fwd = ps_fwd_fwd.clone();
            let Some((psb, pse, rh, pb, pe)) = r.build_tree(depth, &mut z_fwd, 1.0, rng) else {
                break;
            };
            (ps_fwd_bck, ps_fwd_fwd, rho_fwd, p_fwd_bck, p_fwd_fwd) = (psb, pse, rh, pb, pe);
        } else {
            rho_fwd = rho.clone();
            p_fwd_bck = p_bck_bck.clone();
            ps_fwd_bck = ps_bck_bck.clone();
            let Some((psb, pse, rh, pb, pe)) = r.build_tree(depth, &mut z_bck, -1.0, rng) else {
                break;
            };
            (ps_bck_fwd, ps_bck_bck, rho_bck, p_bck_fwd, p_bck_bck) = (psb, pse, rh, pb, pe);
        }
        depth += 1;
        let lsw_subtree = r.subtree_log_sum_weight;
        if lsw_subtree > log_sum_weight || rng.uniform() < (lsw_subtree - log_sum_weight).exp() {
            let (q, _, h) = r.proposal.clone().expect("a valid subtree has a proposal");
            sample = (q, h);
        }
        log_sum_weight = log_sum_exp(log_sum_weight, lsw_subtree);
        rho = add(&rho_bck, &rho_fwd);
        let mut persist = criterion(&ps_bck_bck, &ps_fwd_fwd, &rho);
        persist &= criterion(&ps_bck_bck, &ps_fwd_bck, &add(&rho_bck, &p_fwd_bck));
        persist &= criterion(&ps_bck_fwd, &ps_fwd_fwd, &add(&rho_fwd, &p_bck_fwd));
        if !persist {
            break;
        }
    }
    Outcome {
        q: sample.0,
        treedepth: depth,
        n_leapfrog: r.n_leapfrog,
        divergent: r.divergent,
        accept_stat: r.sum_metro_prob / r.n_leapfrog as f64,
        energy: sample.1,
    }
}

/// Anisotropic normal: scales 0.3 … 3.
struct Scaled(usize);
impl LogDensity for Scaled {
    type Workspace = ();
    fn dim(&self) -> usize {
        self.0
    }
    fn new_workspace(&self) {}
    fn log_density_gradient(&self, _: &mut (), q: &[f64], g: &mut [f64]) -> Result<f64, EvalError> {
        let mut lp = 0.0;
        for i in 0..q.len() {
            let s = 0.3 + 2.7 * i as f64 / (q.len() - 1).max(1) as f64;
            lp -= 0.5 * (q[i] / s).powi(2);
            g[i] = -q[i] / (s * s);
        }
        Ok(lp)
    }
}

fn compare<D: LogDensity<Workspace = ()>>(
    model: &D,
    metric: &Metric,
    epsilon: f64,
    max_depth: u32,
    seed: u64,
) -> (usize, usize) {
    let d = model.dim();
    let start: Vec<f64> = (0..d).map(|i| 0.3 * (i as f64 - 1.0)).collect();
    let mut state = NutsState::new(model, &mut (), &start, max_depth).unwrap();
    let mut rng = StreamRng::new(seed, 0, Purpose::Sampler);
    let settings = NutsSettings {
        max_depth,
        max_energy_error: 1000.0,
    };
    let (mut divergences, mut max_depth_hits) = (0, 0);
    for iteration in 0..300 {
        let mut reference_rng = rng.clone();
        let expected = reference_transition(
            model,
            metric,
            &state,
            epsilon,
            max_depth,
            &mut reference_rng,
        );
        let got = nuts_step(
            model,
            &mut (),
            &mut state,
            metric,
            epsilon,
            &settings,
            &mut rng,
        )
        .unwrap();
        let context = format!("iteration {iteration}");
        assert_eq!(got.treedepth, expected.treedepth, "{context}");
        assert_eq!(got.n_leapfrog, expected.n_leapfrog, "{context}");
        assert_eq!(got.divergent, expected.divergent, "{context}");
        assert!(
            (got.accept_stat - expected.accept_stat).abs() < 1e-12,
            "{context}"
        );
        assert!(
            (got.energy - expected.energy).abs() < 1e-9 * (1.0 + expected.energy.abs()),
            "{context}"
        );
        for (a, b) in state.position().iter().zip(&expected.q) {
            assert!(
                (a - b).abs() < 1e-9 * (1.0 + b.abs()),
                "{context}: {:?} vs {:?}",
                state.position(),
                expected.q
            );
        }
        // Both consumed the same random numbers.
        assert_eq!(rng.next_u64(), reference_rng.next_u64(), "{context}");
        divergences += got.divergent as usize;
        max_depth_hits += (got.treedepth == max_depth) as usize;
    }
    (divergences, max_depth_hits)
}

#[test]
fn iterative_tree_matches_recursive_reference() {
    // Diagonal metric, step sizes from small (long trajectories, max depth) to large.
    let model = Scaled(6);
    let inv: Vec<f64> = (0..6).map(|i| 1.0 + 0.5 * i as f64).collect();
    let metric =
        Metric::from_inverse(MetricKind::Diag, 6, &hazel_nuts::InverseMetric::Diag(inv)).unwrap();
    let (_, hits) = compare(&model, &metric, 0.05, 6, 1);
    assert!(hits > 0, "small steps reach the maximum depth");
    compare(&model, &metric, 0.4, 10, 2);
    compare(&model, &metric, 1.1, 10, 3);
    // Dense metric.
    let dense = hazel_nuts::InverseMetric::Dense {
        dim: 3,
        values: vec![2.0, 0.5, 0.1, 0.5, 1.0, 0.2, 0.1, 0.2, 0.7],
    };
    let metric = Metric::from_inverse(MetricKind::Dense, 3, &dense).unwrap();
    compare(&Scaled(3), &metric, 0.3, 10, 4);
    // Divergences and model errors.
    let metric = Metric::identity(MetricKind::Diag, 5);
    let (divergences, _) = compare(
        &Funnel {
            dim: 5,
            reject_above: Some(6.0),
        },
        &metric,
        0.5,
        10,
        5,
    );
    assert!(divergences > 0);
}
