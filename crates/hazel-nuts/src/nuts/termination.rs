//! Termination: the generalised no-U-turn criterion. A [`Span`] is the U-turn bookkeeping of
//! a contiguous stretch of trajectory; [`merge_checks`] is Stan's three checks when two halves
//! of a subtree merge, [`no_u_turn`] one check, used when a subtree joins the trajectory.

use crate::metric::{sum_lanes, LANES};

/// U-turn bookkeeping of a contiguous span of trajectory points: the momenta and velocities
/// (`M⁻¹ p`) at its two ends and the sum of its momenta. A single point stores only its end
/// (`single`), which then also serves as the begin and as the momentum sum, saving three copies
/// per leapfrog step.
#[derive(Debug, Clone)]
pub(super) struct Span {
    pub(super) p_begin: Vec<f64>,
    pub(super) v_begin: Vec<f64>,
    pub(super) p_end: Vec<f64>,
    pub(super) v_end: Vec<f64>,
    pub(super) rho: Vec<f64>,
    pub(super) single: bool,
}

impl Span {
    pub(super) fn zeros(dim: usize) -> Self {
        Span {
            p_begin: vec![0.0; dim],
            v_begin: vec![0.0; dim],
            p_end: vec![0.0; dim],
            v_end: vec![0.0; dim],
            rho: vec![0.0; dim],
            single: true,
        }
    }
    pub(super) fn p_begin(&self) -> &[f64] {
        if self.single {
            &self.p_end
        } else {
            &self.p_begin
        }
    }
    pub(super) fn v_begin(&self) -> &[f64] {
        if self.single {
            &self.v_end
        } else {
            &self.v_begin
        }
    }
    pub(super) fn rho(&self) -> &[f64] {
        if self.single {
            &self.p_end
        } else {
            &self.rho
        }
    }
}

/// The no-U-turn criterion on a span whose momentum sum is `rho_a + rho_b` and whose end
/// velocities are `v_minus` and `v_plus`: true while the span has not turned.
///
/// The two dot products are accumulated in [`LANES`] independent partial sums (a fixed order,
/// so results are reproducible) to avoid a serial floating-point dependency chain.
#[inline]
pub(super) fn no_u_turn(v_minus: &[f64], v_plus: &[f64], rho_a: &[f64], rho_b: &[f64]) -> bool {
    let n = rho_a.len();
    let (v_minus, v_plus, rho_b) = (&v_minus[..n], &v_plus[..n], &rho_b[..n]);
    let mut dot_minus = [0.0; LANES];
    let mut dot_plus = [0.0; LANES];
    let body = n - n % LANES;
    for (((vm, vp), ra), rb) in v_minus[..body]
        .chunks_exact(LANES)
        .zip(v_plus[..body].chunks_exact(LANES))
        .zip(rho_a[..body].chunks_exact(LANES))
        .zip(rho_b[..body].chunks_exact(LANES))
    {
        for l in 0..LANES {
            let rho = ra[l] + rb[l];
            dot_minus[l] += vm[l] * rho;
            dot_plus[l] += vp[l] * rho;
        }
    }
    for i in body..n {
        let rho = rho_a[i] + rho_b[i];
        dot_minus[0] += v_minus[i] * rho;
        dot_plus[0] += v_plus[i] * rho;
    }
    sum_lanes(&dot_minus) > 0.0 && sum_lanes(&dot_plus) > 0.0
}

/// Partial sums of the six dot products of a merge's three U-turn checks.
type MergeSums = [[f64; MERGE_LANES]; 6];

/// Lanes of the merge's partial sums: six sums of two lanes fit the 16 SSE2 registers with the
/// operands, so nothing spills to the stack.
const MERGE_LANES: usize = 2;

/// One element's contribution to the three checks of merging `left` (l…) with `right` (r…);
/// returns the merged momentum sum at this element.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn merge_element(
    sums: &mut MergeSums,
    lane: usize,
    l_v_begin: f64,
    l_v_end: f64,
    l_p_end: f64,
    l_rho: f64,
    r_v_begin: f64,
    r_v_end: f64,
    r_p_begin: f64,
    r_rho: f64,
) -> f64 {
    let total = l_rho + r_rho;
    sums[0][lane] += l_v_begin * total;
    sums[1][lane] += r_v_end * total;
    let left_extended = l_rho + r_p_begin;
    sums[2][lane] += l_v_begin * left_extended;
    sums[3][lane] += r_v_begin * left_extended;
    let right_extended = r_rho + l_p_end;
    sums[4][lane] += l_v_end * right_extended;
    sums[5][lane] += r_v_end * right_extended;
    total
}

/// Stan's three U-turn checks when `left` and `right` (adjacent spans, `left` first in the
/// direction of integration) merge: on the merged span, on `left` plus the first point of
/// `right`, and on the last point of `left` plus `right`. All six dot products and the merged
/// momentum sum (written into `right.rho`) are computed in one pass over the dimensions.
/// Returns true while none of the three has turned.
pub(super) fn merge_checks(left: &Span, right: &mut Span) -> bool {
    let n = right.rho.len();
    let (l_vb, l_ve, l_pe, l_rho) = (
        &left.v_begin()[..n],
        &left.v_end[..n],
        &left.p_end[..n],
        &left.rho()[..n],
    );
    let mut sums: MergeSums = [[0.0; MERGE_LANES]; 6];
    // Blocks of MERGE_LANES elements, element `block + l` into lane `l`; the tail into lane 0.
    let body = n - n % MERGE_LANES;
    if right.single {
        // A single point is its own begin, end and momentum sum.
        let (r_v, r_p, out) = (&right.v_end[..n], &right.p_end[..n], &mut right.rho[..n]);
        for block in (0..body).step_by(MERGE_LANES) {
            for lane in 0..MERGE_LANES {
                let i = block + lane;
                out[i] = merge_element(
                    &mut sums, lane, l_vb[i], l_ve[i], l_pe[i], l_rho[i], r_v[i], r_v[i], r_p[i],
                    r_p[i],
                );
            }
        }
        for i in body..n {
            out[i] = merge_element(
                &mut sums, 0, l_vb[i], l_ve[i], l_pe[i], l_rho[i], r_v[i], r_v[i], r_p[i], r_p[i],
            );
        }
    } else {
        let (r_vb, r_ve, r_pb, rho) = (
            &right.v_begin[..n],
            &right.v_end[..n],
            &right.p_begin[..n],
            &mut right.rho[..n],
        );
        for block in (0..body).step_by(MERGE_LANES) {
            for lane in 0..MERGE_LANES {
                let i = block + lane;
                rho[i] = merge_element(
                    &mut sums, lane, l_vb[i], l_ve[i], l_pe[i], l_rho[i], r_vb[i], r_ve[i],
                    r_pb[i], rho[i],
                );
            }
        }
        for i in body..n {
            rho[i] = merge_element(
                &mut sums, 0, l_vb[i], l_ve[i], l_pe[i], l_rho[i], r_vb[i], r_ve[i], r_pb[i],
                rho[i],
            );
        }
    }
    let total = |k: usize| sums[k][0] + sums[k][1];
    (0..6).all(|k| total(k) > 0.0)
}
