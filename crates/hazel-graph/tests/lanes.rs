//! Lane regions keep every bit: a model whose loops repeat a user function's few short
//! instructions (an IRT likelihood, and a body using every op a region holds) gives the same
//! log density and gradient with its regions as with the same instructions run one by one.
//! `simd_levels.rs` runs the IRT model at every instruction set and executor.

mod common;

use hazel_graph::ir::lanes::LaneOp;
use hazel_graph::ir::scalar::ScalarInstr;
use hazel_graph::{Arg, Buffers, Graph, Op};

fn value_and_gradient(g: &Graph, out: Arg, q: &[f64], poison: bool) -> (f64, Vec<f64>) {
    let mut b = Buffers::for_graph(g);
    if poison {
        b.adj.iter_mut().for_each(|a| *a = f64::NAN);
    }
    g.forward(q, &mut b).expect("forward");
    g.backward(out, &mut b);
    (g.scalar(out, &b), b.adj[..q.len()].to_vec())
}

/// `g` with every lane region's instructions back in their blocks, one by one.
fn without_regions(g: &Graph, out: Arg) -> Graph {
    let mut plain = g.clone();
    for op in plain.ops.iter_mut() {
        if let Op::Scalars { block, .. } = op {
            block.for_each_input_mut(|_| {});
        }
    }
    assert!(regions(&plain).is_empty());
    plain.mark_adjoint_free(out);
    plain
}

fn regions(g: &Graph) -> Vec<&hazel_graph::ir::lanes::LaneRegion> {
    common::block_code(g)
        .into_iter()
        .filter_map(|i| match i {
            ScalarInstr::Lanes(r) => Some(&**r),
            _ => None,
        })
        .collect()
}

#[test]
fn lane_regions_give_the_bits_of_their_instructions_one_by_one() {
    let model = common::compiled(common::lanes_model::PROGRAM, &common::lanes_model::data());
    let g = model.graph().expect("a static graph");
    let out = model.graph_output().expect("an output");
    let found = regions(g);
    // (The two loops' iterations are consecutive, so one region may hold both.)
    assert!(!found.is_empty(), "no lane region");
    // Every kind of op, and both sides of a broadcast, are exercised.
    let ops: Vec<&LaneOp> = found.iter().flat_map(|r| r.template_ops()).collect();
    let has = |f: &dyn Fn(&LaneOp) -> bool| ops.iter().any(|op| f(op));
    use hazel_graph::ir::lanes::Arith::*;
    assert!(has(&|op| matches!(op, LaneOp::Bin { f: Div, .. })));
    assert!(has(&|op| matches!(
        op,
        LaneOp::Short {
            f: Mul,
            a_len: 1,
            ..
        }
    )));
    assert!(has(&|op| matches!(
        op,
        LaneOp::Short {
            f: Mul,
            b_len: 1,
            ..
        }
    )));
    assert!(has(&|op| matches!(
        op,
        LaneOp::Short {
            f: Div,
            a_len: 1,
            ..
        }
    )));
    assert!(has(&|op| matches!(
        op,
        LaneOp::Short {
            f: Div,
            b_len: 1,
            ..
        }
    )));
    assert!(has(&|op| matches!(
        op,
        LaneOp::Short {
            f: Sub,
            a_len: 1,
            ..
        }
    )));
    assert!(has(&|op| matches!(op, LaneOp::Pack { .. })));
    // A running sum of a vector from outside the iteration (its adjoints are contributions).
    assert!(has(
        &|op| matches!(op, LaneOp::CumSum { x, .. } if x.own == hazel_graph::ir::lanes::Src::OUTSIDE)
    ));
    assert!(has(&|op| matches!(op, LaneOp::LogSumExp { .. })));
    assert!(has(&|op| matches!(op, LaneOp::LogSumExp2 { .. })));
    // Densities of a parameter (its adjoint a contribution) and of data.
    assert!(has(
        &|op| matches!(op, LaneOp::Dist { args, .. } if args[0].var && args[0].own == hazel_graph::ir::lanes::Src::OUTSIDE)
    ));
    assert!(has(
        &|op| matches!(op, LaneOp::Dist { args, .. } if !args[0].var)
    ));
    // Short densities: of data given a vector of the iteration's own values, and of a
    // parameter slice with scalar arguments.
    assert!(has(
        &|op| matches!(op, LaneOp::ShortDist { args, .. } if !args[0].var && args[1].own != hazel_graph::ir::lanes::Src::OUTSIDE)
    ));
    assert!(has(
        &|op| matches!(op, LaneOp::ShortDist { args, vectors: 0b001, .. } if args[0].var)
    ));

    let plain = without_regions(g, out);
    let dim = g.dim;
    for p in 0..4 {
        let q: Vec<f64> = (0..dim)
            .map(|i| (((i * 37 + p * 11) % 101) as f64 / 101.0 - 0.5) * 1.6)
            .collect();
        let (lp0, g0) = value_and_gradient(&plain, out, &q, false);
        // Over an adjoint buffer of NaN: the private values' slots are free.
        let (lp1, g1) = value_and_gradient(g, out, &q, true);
        assert!(lp0.is_finite());
        assert_eq!(lp0.to_bits(), lp1.to_bits(), "log density at point {p}");
        for (i, (a, b)) in g0.iter().zip(&g1).enumerate() {
            assert_eq!(
                a.to_bits(),
                b.to_bits(),
                "gradient {i} at point {p}: {a} vs {b}"
            );
        }
    }
}

/// A region's density refuses an element (a scale ≤ 0): the region runs its instructions one
/// by one instead, which give Stan's error; the next evaluation, in the same buffers, runs the
/// lanes again and gives the instructions' bits.
#[test]
fn a_density_refused_in_a_lane_gives_the_instructions_error_and_the_next_point_the_lanes() {
    let program = r#"
data {
  int N;
  vector[N] y;
}
parameters {
  vector[2] mu;
  vector[2] s;
  real<lower=0, upper=1> w;
}
model {
  for (n in 1:N) {
    target += log_mix(w, normal_lpdf(y[n] | mu[1], s[1]), normal_lpdf(y[n] | mu[2], s[2]));
  }
}
"#;
    let y: Vec<String> = (0..37)
        .map(|i| format!("{}", (i as f64 * 0.37).sin()))
        .collect();
    let data = format!(r#"{{"N": 37, "y": [{}]}}"#, y.join(","));
    let model = common::compiled(program, &data);
    let g = model.graph().expect("a static graph");
    let out = model.graph_output().expect("an output");
    let found = regions(g);
    assert!(!found.is_empty(), "no lane region");
    assert!(found
        .iter()
        .flat_map(|r| r.template_ops())
        .any(|op| matches!(op, LaneOp::Dist { .. })));
    let plain = without_regions(g, out);
    let good = [0.3, -0.2, 0.8, 1.3, 0.1];
    let bad = [0.3, -0.2, -0.8, 1.3, 0.1];
    let mut b = Buffers::for_graph(g);
    let mut b_plain = Buffers::for_graph(&plain);
    for q in [&good, &bad, &good] {
        let r = g.forward(q, &mut b);
        let r_plain = plain.forward(q, &mut b_plain);
        match (r, r_plain) {
            (Ok(()), Ok(())) => {
                b.adj.iter_mut().for_each(|a| *a = f64::NAN);
                g.backward(out, &mut b);
                plain.backward(out, &mut b_plain);
                assert_eq!(
                    g.scalar(out, &b).to_bits(),
                    plain.scalar(out, &b_plain).to_bits()
                );
                for i in 0..q.len() {
                    assert_eq!(b.adj[i].to_bits(), b_plain.adj[i].to_bits(), "gradient {i}");
                }
            }
            (Err(e), Err(e_plain)) => {
                assert_eq!(e.to_string(), e_plain.to_string());
                assert!(e.to_string().contains("normal"), "{e}");
            }
            (r, r_plain) => panic!("at {q:?}: {r:?} with regions, {r_plain:?} without"),
        }
    }
}
