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

fn regions(g: &Graph) -> Vec<&hazel_graph::ir::lanes::LaneRegion> {
    g.ops
        .iter()
        .filter_map(|op| match op {
            Op::Scalars { block, .. } => Some(block.code()),
            _ => None,
        })
        .flatten()
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

    // The same graph with every region's instructions back in their blocks, one by one.
    let mut plain = g.clone();
    for op in plain.ops.iter_mut() {
        if let Op::Scalars { block, .. } = op {
            block.for_each_input_mut(|_| {});
        }
    }
    assert!(regions(&plain).is_empty());
    plain.mark_adjoint_free(out);
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
