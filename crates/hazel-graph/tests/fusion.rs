//! Graph rewrites keep every bit: a graph and its rewritten copy give identical log densities
//! and gradients, and a rewrite that would change what another op reads is not made.

mod common;

use common::block_code;
use hazel_graph::dists::DistKind;
use hazel_graph::ir::scalar::ScalarInstr;
use hazel_graph::kernels::{BinaryFn, UnaryFn};
use hazel_graph::{Arg, Buffers, Graph, GraphBuilder, Op};

fn value_and_gradient(g: &Graph, out: Arg, q: &[f64]) -> (f64, Vec<f64>) {
    let mut b = Buffers::for_graph(g);
    g.forward(q, &mut b).expect("forward");
    g.backward(out, &mut b);
    (g.scalar(out, &b), b.adj[..q.len()].to_vec())
}

/// `a` and `b` give the same log density and gradient at `q`, to the bit.
fn assert_same_bits(a: &Graph, b: &Graph, out: Arg, q: &[f64], what: &str) {
    let (lp0, g0) = value_and_gradient(a, out, q);
    let (lp1, g1) = value_and_gradient(b, out, q);
    assert_eq!(lp0.to_bits(), lp1.to_bits(), "{what} at {q:?}");
    for (x, y) in g0.iter().zip(&g1) {
        assert_eq!(
            x.to_bits(),
            y.to_bits(),
            "{what}: gradient {g0:?} vs {g1:?} at {q:?}"
        );
    }
}

fn count_mul_add(g: &Graph) -> usize {
    g.ops
        .iter()
        .filter(|op| matches!(op, Op::MulAdd { .. }))
        .count()
}

/// An AR(2)-style loop body unrolled by hand: `mu = alpha; mu += beta[k] * y[t - k]`, with
/// products on either side of the add, a product of a parameter with itself, and the
/// recurrence feeding a density.
fn ar_graph(q: &[f64]) -> (Graph, Arg) {
    let y: Vec<f64> = (0..12).map(|i| ((i * 7) % 5) as f64 * 0.3 - 0.4).collect();
    let mut b = GraphBuilder::new(q);
    let p = b.params();
    let (alpha, sigma) = (p.at(0), p.at(3));
    let ys = b.konst(&y);
    let mut mus = Vec::new();
    for t in 2..y.len() {
        let mut mu = alpha;
        for k in 1..=2 {
            let prod = b.binary(BinaryFn::Mul, p.at(k), ys.at(t - k));
            mu = if k == 1 {
                b.binary(BinaryFn::Add, mu, prod)
            } else {
                b.binary(BinaryFn::Add, prod, mu)
            };
        }
        // A parameter times itself, added to the recurrence.
        let sq = b.binary(BinaryFn::Mul, p.at(1), p.at(1));
        mu = b.binary(BinaryFn::Add, mu, sq);
        mus.push(mu);
    }
    let mu = b.pack(mus);
    let scale = b.unary(UnaryFn::Exp, sigma);
    let obs = b.konst(&y[2..]);
    let lp = b.dist(DistKind::Normal, vec![obs, mu, scale], true);
    (b.finish(), lp)
}

#[test]
fn fusing_multiply_add_keeps_every_bit() {
    let q = [0.3, 0.6, -0.2, -0.7];
    let (unfused, out) = ar_graph(&q);
    let mut fused = unfused.clone();
    let n = fused.fuse_mul_add(out);
    assert_eq!(n, 30, "three fusable pairs per step, ten steps");
    assert_eq!(count_mul_add(&fused), 30);
    assert_eq!(fused.ops.len(), unfused.ops.len() - 30);
    // Each step's three multiply-adds feed one another: one chain op per step.
    let mut chained = fused.clone();
    assert_eq!(chained.fuse_mul_add_chains(out), 20);
    let chains = chained
        .ops
        .iter()
        .filter(|op| matches!(op, Op::MulAddChain { terms, .. } if terms.len() == 3))
        .count();
    assert_eq!(chains, 10);
    assert_eq!(count_mul_add(&chained), 0);
    for q in [q, [1.5, -0.9, 0.0, 2.0], [-3.0, 0.0, 1e-3, -5.0]] {
        let (lp0, g0) = value_and_gradient(&unfused, out, &q);
        for rewritten in [&fused, &chained] {
            let (lp1, g1) = value_and_gradient(rewritten, out, &q);
            assert_eq!(lp0.to_bits(), lp1.to_bits());
            for (a, b) in g0.iter().zip(&g1) {
                assert_eq!(a.to_bits(), b.to_bits(), "gradient {g0:?} vs {g1:?}");
            }
        }
    }
}

#[test]
fn a_product_read_elsewhere_is_not_fused() {
    let q = [0.3, 0.6];
    let mut b = GraphBuilder::new(&q);
    let p = b.params();
    // Read by the add and by a later op.
    let shared = b.binary(BinaryFn::Mul, p.at(0), p.at(1));
    let s1 = b.binary(BinaryFn::Add, shared, p.at(0));
    let twice = b.binary(BinaryFn::Mul, shared, s1);
    // Read by the add and through a vector run that covers it.
    let covered = b.binary(BinaryFn::Mul, p.at(1), p.at(1));
    let s2 = b.binary(BinaryFn::Add, covered, p.at(1));
    let run = Arg::var(covered.off as usize, 2);
    let total = b.sum(run);
    let both = b.binary(BinaryFn::Add, twice, total);
    // Not followed by an add (the product is the graph's result).
    let last = b.binary(BinaryFn::Mul, both, s2);
    let mut g = b.finish();
    let before = value_and_gradient(&g, last, &q);
    assert_eq!(g.fuse_mul_add(last), 0);
    assert_eq!(g.fuse_mul_add_chains(last), 0);
    assert_eq!(value_and_gradient(&g, last, &q), before);
}

/// A mixture-over-rows loop as `M0` writes it: the same one-term densities of a parameter at
/// a few distinct data values, recomputed for every row.
fn repeated_terms_graph(q: &[f64]) -> (Graph, Arg) {
    let counts = [0.0, 3.0, 3.0, 1.0, 0.0, 3.0, 1.0, 0.0];
    let mut b = GraphBuilder::new(q);
    let p = b.params();
    let omega = b.unary(UnaryFn::InvLogit, p.at(0));
    let prob = b.unary(UnaryFn::InvLogit, p.at(1));
    let one = b.scalar_const(1.0);
    let trials = b.scalar_const(3.0);
    let mut terms = Vec::new();
    for &c in &counts {
        let present = b.dist(DistKind::Bernoulli, vec![one, omega], false);
        let count = b.scalar_const(c);
        let detect = b.dist(DistKind::Binomial, vec![count, trials, prob], false);
        let both = b.binary(BinaryFn::Add, present, detect);
        let scaled = b.binary(BinaryFn::Mul, both, p.at(2));
        terms.push(scaled);
    }
    let lp = b.sum_scalars(terms);
    (b.finish(), lp)
}

#[test]
fn shared_subexpressions_are_computed_once_with_the_same_result() {
    let q = [0.4, -0.3, 1.1];
    let (original, out) = repeated_terms_graph(&q);
    let mut shared = original.clone();
    let removed = shared.eliminate_common_subexpressions(out);
    // The Bernoulli term repeats 7 times; the binomial term, the sum and the product each
    // repeat 5 times (3 distinct counts in 8 rows, each count a separate pool constant).
    assert_eq!(removed, 7 + 3 * 5);
    assert_eq!(shared.ops.len(), original.ops.len() - 22);
    for q in [q, [-2.0, 0.5, -0.7], [3.0, 1.5, 0.0]] {
        let (lp0, g0) = value_and_gradient(&original, out, &q);
        let (lp1, g1) = value_and_gradient(&shared, out, &q);
        assert_eq!(lp0.to_bits(), lp1.to_bits());
        for (a, b) in g0.iter().zip(&g1) {
            assert!(
                (a - b).abs() <= 1e-14 * a.abs().max(1.0),
                "{g0:?} vs {g1:?}"
            );
        }
    }
}

#[test]
fn repeats_on_the_same_constant_slots_collapse_transitively() {
    let q = [0.4, -0.3];
    let mut b = GraphBuilder::new(&q);
    let p = b.params();
    let k = b.konst(&[2.0, 5.0]);
    let mut terms = Vec::new();
    for _ in 0..4 {
        let m = b.binary(BinaryFn::Mul, p.at(0), k.at(0));
        let e = b.unary(UnaryFn::Exp, m);
        let a = b.binary(BinaryFn::Add, e, p.at(1));
        terms.push(a);
    }
    // A vector view over two adjacent repeated outputs keeps both.
    let m1 = b.binary(BinaryFn::Mul, p.at(1), k.at(1));
    let m2 = b.binary(BinaryFn::Mul, p.at(1), k.at(1));
    assert_eq!(m2.off, m1.off + 1);
    let pair = b.sum(Arg::var(m1.off as usize, 2));
    terms.push(pair);
    let lp = b.sum_scalars(terms);
    let mut g = b.finish();
    let before = value_and_gradient(&g, lp, &q);
    assert_eq!(g.eliminate_common_subexpressions(lp), 9);
    let after = value_and_gradient(&g, lp, &q);
    assert_eq!(before.0.to_bits(), after.0.to_bits());
    for (a, b) in before.1.iter().zip(&after.1) {
        assert!((a - b).abs() <= 1e-14 * a.abs().max(1.0));
    }
}

/// The blocked matrix–vector kernels (four columns per pass) against a plain row-by-row
/// evaluation in the same summation order: equal bits, for column counts around the block.
#[test]
fn blocked_matrix_vector_product_keeps_the_column_order() {
    for cols in [1, 3, 4, 5, 9] {
        let rows = 2100; // more than one reduction chunk
        let m: Vec<f64> = (0..rows * cols)
            .map(|i| ((i * 7919) % 1013) as f64 / 1013.0 - 0.45)
            .collect();
        let q: Vec<f64> = (0..cols).map(|c| 0.3 * c as f64 - 0.7).collect();
        let mut b = GraphBuilder::new(&q);
        let mc = b.konst(&m);
        let mv = b.matvec(mc, b.params(), rows, cols);
        let w: Vec<f64> = (0..rows).map(|r| ((r * 31) % 17) as f64 / 17.0).collect();
        let wc = b.konst(&w);
        let lp = b.dot(mv, wc);
        let g = b.finish();
        let mut buf = Buffers::for_graph(&g);
        g.forward(&q, &mut buf).expect("forward");
        g.backward(lp, &mut buf);
        for r in 0..rows {
            let mut expect = 0.0;
            for c in 0..cols {
                expect += m[c * rows + r] * q[c];
            }
            assert_eq!(buf.vals[mv.off as usize + r].to_bits(), expect.to_bits());
        }
        // The vector's adjoint: column c dotted with the output's adjoint (here `w`).
        for c in 0..cols {
            let col = &m[c * rows..(c + 1) * rows];
            let expect = hazel_graph::kernels::dot(hazel_graph::simd::Isa::Baseline, col, &w);
            assert_eq!(buf.adj[c].to_bits(), expect.to_bits(), "cols {cols}, c {c}");
        }
    }
}

/// A chain link whose output is also read elsewhere ends the chain there.
#[test]
fn a_chain_stops_at_a_link_read_elsewhere() {
    let q = [0.3, 0.6, -1.2];
    let mut b = GraphBuilder::new(&q);
    let p = b.params();
    let mut acc = p.at(0);
    let mut links = Vec::new();
    for k in 0..4 {
        let prod = b.binary(BinaryFn::Mul, p.at(1), p.at(2 - k % 2));
        acc = b.binary(BinaryFn::Add, acc, prod);
        links.push(acc);
    }
    // The second link is also read by the exp.
    let side = b.unary(UnaryFn::Exp, links[1]);
    let lp = b.binary(BinaryFn::Add, acc, side);
    let mut g = b.finish();
    let before = value_and_gradient(&g, lp, &q);
    assert_eq!(g.fuse_mul_add(lp), 4);
    // Links 0–1 form one chain, links 2–3 another.
    assert_eq!(g.fuse_mul_add_chains(lp), 2);
    let after = value_and_gradient(&g, lp, &q);
    assert_eq!(before.0.to_bits(), after.0.to_bits());
    assert!(before
        .1
        .iter()
        .zip(&after.1)
        .all(|(a, b)| a.to_bits() == b.to_bits()));
}

/// Every kind of scalar instruction, with each operand a parameter-dependent value or a
/// constant: the arithmetic in all three layouts, other binary functions, unary functions of
/// both spaces, multiply-adds and their chains, one-term densities, and a value read twice by
/// one op.
fn scalar_mix_graph(q: &[f64]) -> (Graph, Arg) {
    let mut b = GraphBuilder::new(q);
    let p = b.params();
    let (x, y, z) = (p.at(0), p.at(1), p.at(2));
    let c = b.konst(&[1.5, -0.25, 3.0]);
    let mut terms = Vec::new();
    for f in [BinaryFn::Add, BinaryFn::Sub, BinaryFn::Mul, BinaryFn::Div] {
        terms.push(b.binary(f, x, y));
        terms.push(b.binary(f, x, c.at(0)));
        terms.push(b.binary(f, c.at(1), y));
    }
    for f in [BinaryFn::Pow, BinaryFn::LogSumExp, BinaryFn::Hypot] {
        let ex = b.unary(UnaryFn::Exp, x);
        terms.push(b.binary(f, ex, y));
        terms.push(b.binary(f, ex, c.at(2)));
        terms.push(b.binary(f, c.at(2), ex));
    }
    let sq = b.binary(BinaryFn::Mul, z, z);
    terms.push(sq);
    terms.push(b.unary(UnaryFn::Log1pExp, y));
    terms.push(b.unary(UnaryFn::Tanh, c.at(1)));
    // alpha + beta1 * y1 + beta2 * y2: multiply-adds, then a chain.
    let mut mu = z;
    for k in 0..3 {
        let prod = b.binary(BinaryFn::Mul, p.at(k), c.at(k));
        mu = b.binary(BinaryFn::Add, mu, prod);
    }
    terms.push(mu);
    let sigma = b.unary(UnaryFn::Exp, z);
    // Short vector ops inside the run: a pack, elementwise ops with broadcasting, a running
    // sum, reductions and a density over it.
    let v = b.pack(vec![x, mu, c.at(2), sq]);
    let w = b.binary(BinaryFn::Mul, v, y);
    let e = b.unary(UnaryFn::Exp, w);
    let cs = b.cumsum(e);
    terms.push(b.log_sum_exp(cs));
    terms.push(b.sum(w));
    terms.push(b.dot(v, cs));
    let obs = b.konst(&[0.5, -1.0, 2.0, 0.25]);
    terms.push(b.dist(DistKind::Normal, vec![obs, w, sigma], false));
    terms.push(b.dist(DistKind::Normal, vec![c.at(0), mu, sigma], true));
    terms.push(b.dist(DistKind::Normal, vec![x, c.at(1), c.at(2)], false));
    terms.push(b.dist(DistKind::StudentT, vec![y, c.at(2), mu, sigma], false));
    let lp = b.sum_scalars(terms);
    (b.finish(), lp)
}

#[test]
fn scalar_blocks_keep_every_bit() {
    let q = [0.3, 0.6, -0.7];
    let (unfused, out) = scalar_mix_graph(&q);
    let mut fused = unfused.clone();
    fused.fuse_mul_add(out);
    fused.fuse_mul_add_chains(out);
    let mut blocks = fused.clone();
    let absorbed = blocks.fuse_scalar_blocks();
    assert!(absorbed >= 40, "{absorbed} ops absorbed");
    let small = block_code(&blocks)
        .into_iter()
        .filter(|i| matches!(i, ScalarInstr::Small { .. }))
        .count();
    assert_eq!(
        small, 3,
        "short vector ops held in blocks (the pack, the product, the running sum, the \
         log_sum_exp and the four-element density have their own instructions)"
    );
    let short_dists = block_code(&blocks)
        .into_iter()
        .filter(|i| matches!(i, ScalarInstr::ShortDist { .. }))
        .count();
    assert_eq!(short_dists, 1);
    // Nothing scalar is left outside a block but the final sum.
    assert!(blocks.ops.len() <= 3, "{:?}", blocks.ops.len());
    for q in [q, [1.5, -0.9, 0.0], [-3.0, 0.0, 1e-3], [0.0, 0.0, 0.0]] {
        assert_same_bits(&unfused, &blocks, out, &q, "blocks");
    }
}

/// Per-observation short vector ops of every layout: `+ − × ÷` between runs and broadcast
/// scalars of either space, running sums and `log_sum_exp`s of their results (one input
/// holding −∞), and a product too long for a short instruction.
fn short_runs_graph(q: &[f64]) -> (Graph, Arg) {
    let mut b = GraphBuilder::new(q);
    let p = b.params();
    let (x, y, z) = (p.at(0), p.at(1), p.at(2));
    let xy = b.binary(BinaryFn::Mul, x, y);
    let v = b.pack(vec![x, y, z, xy]);
    let w = b.pack(vec![z, xy, y, x]);
    let c = b.konst(&[0.5, -2.0, 3.25, 1e-3]);
    let zero = b.konst(&[0.0]);
    let neg_inf = b.unary(UnaryFn::Log, zero);
    let mut terms = Vec::new();
    for f in [BinaryFn::Add, BinaryFn::Sub, BinaryFn::Mul, BinaryFn::Div] {
        for (l, r) in [
            (v, w),
            (v, c),
            (c, v),
            (x, v),
            (v, y),
            (c.at(1), v),
            (v, c.at(2)),
            (z, c),
            (c, y),
        ] {
            let e = b.binary(f, l, r);
            let cs = b.cumsum(e);
            terms.push(b.log_sum_exp(cs));
            let with_neg_inf = b.pack(vec![e.at(0), neg_inf, e.at(3)]);
            terms.push(b.log_sum_exp(with_neg_inf));
        }
    }
    let long = b.pack(vec![x, y, z, xy, x, y, z, xy, x]);
    let prod = b.binary(BinaryFn::Mul, long, y);
    terms.push(b.log_sum_exp(prod));
    let lp = b.sum_scalars(terms);
    (b.finish(), lp)
}

#[test]
fn short_run_instructions_keep_every_bit() {
    let q = [0.3, 0.6, -0.7];
    let (unfused, out) = short_runs_graph(&q);
    let mut blocks = unfused.clone();
    blocks.fuse_scalar_blocks();
    let code = block_code(&blocks);
    let count = |p: fn(&ScalarInstr) -> bool| code.iter().filter(|i| p(i)).count();
    assert_eq!(count(|i| matches!(i, ScalarInstr::ShortBinary { .. })), 36);
    assert_eq!(count(|i| matches!(i, ScalarInstr::CumSum { .. })), 36);
    assert_eq!(count(|i| matches!(i, ScalarInstr::LogSumExp { .. })), 73);
    // The nine-value product stays a general short op.
    assert_eq!(count(|i| matches!(i, ScalarInstr::Small { .. })), 1);
    for q in [
        q,
        [1.5, -0.9, 0.0],
        [-0.0, 0.5, 1.0],
        [-3.0, 0.0, 1e-3],
        [40.0, -2.0, 7.5],
    ] {
        assert_same_bits(&unfused, &blocks, out, &q, "run instructions");
    }
}

/// Densities of 2 to 7 elements: of every family with branch-free forms (the rule for short
/// densities, `ScalarInstr::ShortDist`) with vector and broadcast arguments of both spaces,
/// terms kept and dropped, and of a family without them (a general short op); `sigma` may be
/// negative, so some points fail a check.
fn short_densities_graph(q: &[f64]) -> (Graph, Arg) {
    let mut b = GraphBuilder::new(q);
    let p = b.params();
    let (x, y, z) = (p.at(0), p.at(1), p.at(2));
    let xy = b.binary(BinaryFn::Mul, x, y);
    let v = b.pack(vec![x, y, z, xy, x, z, y]);
    let w = b.pack(vec![z, xy, y]);
    let bits = b.konst(&[1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0]);
    let counts = b.konst(&[3.0, 0.0, 7.0]);
    let c = b.konst(&[0.5, -2.0, 3.25]);
    let positive = b.konst(&[0.5, 1.5, 3.25]);
    let scale = b.unary(UnaryFn::Exp, z);
    let prob = b.unary(UnaryFn::InvLogit, z);
    let sigma = y;
    let mut terms = Vec::new();
    for propto in [true, false] {
        terms.push(b.dist(DistKind::BernoulliLogit, vec![bits, v], propto));
        terms.push(b.dist(DistKind::Bernoulli, vec![bits.at(0), prob], propto));
        terms.push(b.dist(DistKind::Normal, vec![w, x, scale], propto));
        terms.push(b.dist(DistKind::Normal, vec![c, w, scale], propto));
        terms.push(b.dist(DistKind::Normal, vec![w, c, sigma], propto));
        terms.push(b.dist(DistKind::StdNormal, vec![w], propto));
        terms.push(b.dist(DistKind::StudentT, vec![w, scale, x, scale], propto));
        terms.push(b.dist(DistKind::StudentT, vec![c, scale, w, c.at(0)], propto));
        terms.push(b.dist(DistKind::PoissonLog, vec![counts, w], propto));
        terms.push(b.dist(DistKind::NegBinomial2Log, vec![counts, w, scale], propto));
        terms.push(b.dist(DistKind::Gamma, vec![positive, scale, positive], propto));
    }
    let lp = b.sum_scalars(terms);
    (b.finish(), lp)
}

#[test]
fn short_densities_keep_every_bit_and_every_message() {
    let q = [0.3, 0.6, -0.7];
    let (unfused, out) = short_densities_graph(&q);
    let mut blocks = unfused.clone();
    blocks.fuse_scalar_blocks();
    let code = block_code(&blocks);
    let count = |p: fn(&ScalarInstr) -> bool| code.iter().filter(|i| p(i)).count();
    // Nine densities of 2 to 7 elements per `propto` have branch-free forms; the gamma
    // density and the scalar Bernoulli term do not run as short densities.
    assert_eq!(count(|i| matches!(i, ScalarInstr::ShortDist { .. })), 18);
    assert_eq!(count(|i| matches!(i, ScalarInstr::Dist { .. })), 2);
    for q in [q, [1.5, 2.0, 0.0], [-3.0, 1e-3, 1e-3], [40.0, 7.5, -2.0]] {
        assert_same_bits(&unfused, &blocks, out, &q, "short densities");
    }
    // A negative scale fails in both, with the general rule's message.
    let fail = [0.3, -0.6, -0.7];
    let message = |g: &Graph| {
        let mut buf = Buffers::for_graph(g);
        g.forward(&fail, &mut buf)
            .expect_err("negative scale")
            .message
    };
    let m = message(&blocks);
    assert_eq!(message(&unfused), m);
    assert!(m.contains("normal_lpdf") && m.contains("Scale"), "{m}");
}

/// `log(softmax(v)[k])` as the trace leaves it: `v − log_sum_exp(v)` (here of a running sum,
/// as a partial-credit likelihood has it), one element read; beside it, `×` and `÷` with a
/// broadcast parameter read at one element, and a difference read at two (kept whole).
fn partly_read_graph(q: &[f64]) -> (Graph, Arg) {
    let mut b = GraphBuilder::new(q);
    let p = b.params();
    let (x, y, z) = (p.at(0), p.at(1), p.at(2));
    let c = b.konst(&[0.0, 1.5, -2.0]);
    let mut terms = Vec::new();
    for k in 0..3 {
        let u = b.pack(vec![c.at(0), x, y, z]);
        let cs = b.cumsum(u);
        let lse = b.log_sum_exp(cs);
        let log_softmax = b.binary(BinaryFn::Sub, cs, lse);
        terms.push(log_softmax.at(k + 1));
    }
    let v = b.pack(vec![x, z, y]);
    let prod = b.binary(BinaryFn::Mul, y, v);
    terms.push(prod.at(2));
    let quot = b.binary(BinaryFn::Div, c, y);
    terms.push(quot.at(1));
    let diff = b.binary(BinaryFn::Sub, v, c);
    terms.push(diff.at(0));
    terms.push(diff.at(2));
    let lp = b.sum_scalars(terms);
    (b.finish(), lp)
}

#[test]
fn ops_read_at_one_element_are_narrowed_with_the_same_bits() {
    let q = [0.3, 0.6, -0.7];
    let (whole, out) = partly_read_graph(&q);
    let mut narrow = whole.clone();
    assert_eq!(narrow.narrow_partly_read(out), 5);
    let scalar_binaries = narrow
        .ops
        .iter()
        .filter(|op| matches!(op, Op::Binary { out, .. } if out.len == 1))
        .count();
    assert_eq!(scalar_binaries, 5);
    let mut blocks = narrow.clone();
    blocks.fuse_scalar_blocks();
    for q in [
        q,
        [1.5, -0.9, 0.0],
        [-0.0, 0.5, 1.0],
        [40.0, -2.0, 7.5],
        [0.0, 1e-3, 0.0],
    ] {
        assert_same_bits(&whole, &narrow, out, &q, "narrowed");
        assert_same_bits(&whole, &blocks, out, &q, "narrowed, in blocks");
    }
    // The one difference, as for a removed dead op: an unread element no longer adds
    // `0 × ∞`. At y = 1e-300, `∂(c₂/y)/∂y` = −c₂/y² overflows; its element is not read, so
    // its adjoint is 0, and the whole quotient's rule added `0 × ∞ = NaN` to y's adjoint.
    let q = [0.0, 1e-300, 0.0];
    let (_, g_whole) = value_and_gradient(&whole, out, &q);
    let (_, g_narrow) = value_and_gradient(&narrow, out, &q);
    assert!(g_whole[1].is_nan(), "{g_whole:?}");
    assert_eq!(g_narrow[1], f64::NEG_INFINITY, "{g_narrow:?}");
    assert_eq!(
        (g_whole[0].to_bits(), g_whole[2].to_bits()),
        (g_narrow[0].to_bits(), g_narrow[2].to_bits())
    );
}

#[test]
fn a_failing_density_in_a_block_names_its_own_line() {
    let q = [0.3, 0.6];
    let mut b = GraphBuilder::new(&q);
    let p = b.params();
    b.location = Some("line 1".into());
    let s = b.binary(BinaryFn::Add, p.at(0), p.at(1));
    let t = b.binary(BinaryFn::Mul, s, p.at(0));
    b.location = Some("line 2".into());
    // A scale that is negative when q[1] < 0.
    let lp = b.dist(DistKind::Normal, vec![t, s, p.at(1)], true);
    let mut g = b.finish();
    assert_eq!(g.fuse_scalar_blocks(), 3);
    assert_eq!(g.ops.len(), 1);
    let mut buf = Buffers::for_graph(&g);
    let e = g
        .forward(&[0.3, -0.6], &mut buf)
        .expect_err("negative scale");
    assert_eq!(e.location.as_deref(), Some("line 2"), "{e:?}");
    assert!(e.message.contains("normal_lpdf"), "{}", e.message);
    g.forward(&q, &mut buf).expect("positive scale");
    assert!(g.scalar(lp, &buf).is_finite());
}

/// A mixture over rows as `normal_mixture_k` traces it: per row, `log w_k + normal_lpdf(y_n |
/// mu_k, sigma_k)` for each component, packed, then `log_sum_exp`. Each component's scale is
/// read by one density per row, so a block's densities find what it derives (`1/σ`, `log σ`)
/// in the block's cache. Around it, the keys the cache must tell apart: twenty components
/// (slots that share a cache entry), a scale also read as a location (another argument
/// position), by a negative binomial as its dispersion (another family, same position) and by
/// densities that keep other terms, and a Bernoulli term of the same parameter. `scale` is a parameter itself, so it can be
/// negative: every density of the rows that reads it fails.
fn mixture_rows_graph(q: &[f64], components: usize, rows: usize) -> (Graph, Arg) {
    let mut b = GraphBuilder::new(q);
    let p = b.params();
    let mut log_w = Vec::new();
    let mut mu = Vec::new();
    let mut sigma = Vec::new();
    for k in 0..components {
        let w = b.unary(UnaryFn::LogInvLogit, p.at(k % q.len()));
        log_w.push(w);
        let shift = b.scalar_const(0.25 * k as f64);
        mu.push(b.binary(BinaryFn::Add, p.at((k + 1) % q.len()), shift));
        let s = b.unary(UnaryFn::Exp, p.at((k + 2) % q.len()));
        sigma.push(if k == 1 { p.at(q.len() - 1) } else { s });
    }
    let mut terms = Vec::new();
    for n in 0..rows {
        let y = b.scalar_const(((n * 37) % 23) as f64 * 0.4 - 4.0);
        // Right before the row's own densities read `sigma[k]` as a scale, another family
        // reads it in the same position, then a normal reads it as its location and its
        // scale: an entry that answered for another kernel or position would give the wrong
        // `1/σ`.
        let k = n % components;
        let count = b.scalar_const((n % 4) as f64);
        terms.push(b.dist(
            DistKind::NegBinomial2Log,
            vec![count, mu[k], sigma[k]],
            true,
        ));
        terms.push(b.dist(DistKind::Normal, vec![y, sigma[k], sigma[k]], true));
        let mut ps = Vec::new();
        for k in 0..components {
            let d = b.dist(DistKind::Normal, vec![y, mu[k], sigma[k]], n % 3 != 0);
            ps.push(b.binary(BinaryFn::Add, log_w[k], d));
        }
        let ps = b.pack(ps);
        terms.push(b.log_sum_exp(ps));
        let k = n % components;
        terms.push(b.dist(
            DistKind::Normal,
            vec![y, sigma[k], sigma[(k + 1) % components]],
            true,
        ));
        let bit = b.scalar_const((n % 2) as f64);
        terms.push(b.dist(DistKind::BernoulliLogit, vec![bit, sigma[k]], true));
    }
    let lp = b.sum_scalars(terms);
    (b.finish(), lp)
}

#[test]
fn densities_in_a_block_share_what_their_arguments_derive_with_the_same_bits() {
    let q = [0.3, 0.6, -0.7, 1.1, 0.2];
    for components in [2, 5, 20] {
        let (unfused, out) = mixture_rows_graph(&q, components, 40);
        let mut blocks = unfused.clone();
        blocks.fuse_scalar_blocks();
        // Every density is in a block (a `log_sum_exp` of more than `SMALL_LEN` terms is not).
        assert!(
            !blocks.ops.iter().any(|op| matches!(op, Op::Dist { .. })),
            "a density outside the blocks"
        );
        let points = [
            q,
            [1.5, -0.9, 0.0, 2.0, 0.5],
            [-3.0, 0.0, 1e-3, -5.0, 1e-300],
        ];
        for q in points {
            assert_same_bits(
                &unfused,
                &blocks,
                out,
                &q,
                &format!("{components} components"),
            );
        }
        // A negative scale: the first density that reads it fails, with Stan's message,
        // cached or not.
        let bad = [0.3, 0.6, -0.7, 1.1, -1.2];
        let mut b0 = Buffers::for_graph(&unfused);
        let mut b1 = Buffers::for_graph(&blocks);
        let e0 = unfused.forward(&bad, &mut b0).expect_err("negative scale");
        let e1 = blocks.forward(&bad, &mut b1).expect_err("negative scale");
        assert!(e1.message.contains("is -1.2"), "{}", e1.message);
        assert_eq!(e0.message, e1.message);
        // The same buffers evaluate a good point afterwards with the same bits.
        unfused.forward(&q, &mut b0).expect("good point");
        blocks.forward(&q, &mut b1).expect("good point");
        assert_eq!(
            unfused.scalar(out, &b0).to_bits(),
            blocks.scalar(out, &b1).to_bits()
        );
    }
}

/// The same vector packed from the same scalars in every iteration of a loop (a transformed
/// parameter assembled element by element, passed to a function per row): packed once, its
/// readers (the whole run, and single elements) shifted to the first pack.
#[test]
fn repeated_packs_are_shared() {
    let q = [0.4, -0.3, 1.1];
    let mut b = GraphBuilder::new(&q);
    let p = b.params();
    let neg = b.unary(UnaryFn::Neg, p.at(2));
    let mut terms = Vec::new();
    for row in 0..5 {
        let kappa = b.pack(vec![p.at(0), p.at(1), neg]);
        let t = b.scalar_const(row as f64 * 0.5);
        let d = b.binary(BinaryFn::Sub, t, kappa);
        terms.push(b.log_sum_exp(d));
        // One element of the pack read alone.
        terms.push(b.binary(BinaryFn::Mul, kappa.at(1), t));
    }
    // A run across two adjacent packs' outputs pins both.
    let k1 = b.pack(vec![p.at(1), p.at(0)]);
    let k2 = b.pack(vec![p.at(1), p.at(0)]);
    assert_eq!(k2.off, k1.off + 2);
    terms.push(b.sum(Arg::var(k1.off as usize, 4)));
    let lp = b.sum_scalars(terms);
    let mut g = b.finish();
    let before = value_and_gradient(&g, lp, &q);
    let packs = |g: &Graph| {
        g.ops
            .iter()
            .filter(|op| matches!(op, Op::Pack { .. }))
            .count()
    };
    assert_eq!(packs(&g), 7);
    g.eliminate_common_subexpressions(lp);
    assert_eq!(
        packs(&g),
        3,
        "one pack per distinct run, the pinned pair kept"
    );
    let after = value_and_gradient(&g, lp, &q);
    assert_eq!(before.0.to_bits(), after.0.to_bits());
    for (a, b) in before.1.iter().zip(&after.1) {
        assert!(
            (a - b).abs() <= 1e-14 * a.abs().max(1.0),
            "{before:?} vs {after:?}"
        );
    }
}

/// A value nobody reads is not computed: the `log` of a transformed parameter the model never
/// uses, whose derivative is infinite at 0, no longer turns the gradient into NaN; a check
/// and a density whose values nobody reads stay (they can fail).
#[test]
fn dead_ops_are_removed_but_checks_and_densities_stay() {
    let q = [0.0, 0.5];
    let mut b = GraphBuilder::new(&q);
    let p = b.params();
    let unused = b.unary(UnaryFn::Log, p.at(0));
    let _unused_too = b.binary(BinaryFn::Mul, unused, p.at(1));
    let zero = b.scalar_const(0.0);
    b.check(
        hazel_graph::tape::CheckKind::Lower,
        p.at(1),
        zero,
        "q[2] must be positive".into(),
    );
    let one = b.scalar_const(1.0);
    let _unread_density = b.dist(DistKind::Normal, vec![p.at(0), zero, one], true);
    let lp = b.binary(BinaryFn::Mul, p.at(0), p.at(1));
    let mut g = b.finish();
    let (_, grad) = value_and_gradient(&g, lp, &q);
    assert!(grad[0].is_nan(), "0 × ∞ from the unread log: {grad:?}");
    assert_eq!(g.eliminate_dead_ops(lp), 2);
    assert_eq!(g.ops.len(), 3);
    let (v, grad) = value_and_gradient(&g, lp, &q);
    assert_eq!(v, 0.0);
    assert_eq!(grad, vec![0.5, 0.0]);
    let mut buf = Buffers::for_graph(&g);
    assert!(
        g.forward(&[0.0, -1.0], &mut buf).is_err(),
        "the check stays"
    );
}

/// `tanh(Z + rep_matrix(b', 20))` with `b` three parameters (a 20 × 3 broadcast traced element
/// by element), a short pack beside it, and a pack reaching too far to gather from.
fn broadcast_graph(q: &[f64]) -> (Graph, Arg) {
    let rows = 20;
    let z: Vec<f64> = (0..3 * rows)
        .map(|i| ((i * 5) % 7) as f64 * 0.2 - 0.6)
        .collect();
    let y: Vec<f64> = (0..3 * rows)
        .map(|i| ((i * 3) % 4) as f64 * 0.4 - 0.5)
        .collect();
    let mut b = GraphBuilder::new(q);
    let p = b.params();
    let broadcast: Vec<Arg> = (0..3)
        .flat_map(|j| std::iter::repeat_n(p.at(j), rows))
        .collect();
    let bias = b.pack(broadcast);
    let zs = b.konst(&z);
    let sum = b.binary(BinaryFn::Add, zs, bias);
    let hidden = b.unary(UnaryFn::Tanh, sum);
    let ys = b.konst(&y);
    let scale = b.unary(UnaryFn::Exp, p.at(3));
    let fit = b.dist(DistKind::Normal, vec![ys, hidden, scale], false);
    let short = b.pack(vec![p.at(2), p.at(0), p.at(1)]);
    let zero = b.scalar_const(0.0);
    let prior = b.dist(DistKind::Normal, vec![short, zero, scale], false);
    // 17 copies of two scalars 30 values apart: the run spanning them is longer than a
    // value's worth of reads would justify, so it stays a pack.
    let far: Vec<Arg> = (0..17)
        .map(|i| if i % 2 == 0 { p.at(0) } else { hidden.at(29) })
        .collect();
    let far = b.pack(far);
    let far_sum = b.sum(far);
    let lp = b.sum_scalars(vec![fit, prior, far_sum]);
    (b.finish(), lp)
}

#[test]
fn long_packs_become_gathers_with_the_same_bits() {
    let q = [0.3, -0.6, 1.2, -0.4];
    let (packed, out) = broadcast_graph(&q);
    let mut gathered = packed.clone();
    assert_eq!(gathered.packs_as_gathers(), 1);
    let count = |g: &Graph, f: fn(&Op) -> bool| g.ops.iter().filter(|op| f(op)).count();
    assert_eq!(
        count(
            &gathered,
            |op| matches!(op, Op::Gather { x, .. } if x.len == 3)
        ),
        1
    );
    assert_eq!(count(&gathered, |op| matches!(op, Op::Pack { .. })), 2);
    for q in [q, [-2.0, 0.0, 0.7, 0.9], [5.0, -3.0, 1e-3, -1.5]] {
        let (lp0, g0) = value_and_gradient(&packed, out, &q);
        let (lp1, g1) = value_and_gradient(&gathered, out, &q);
        assert_eq!(lp0.to_bits(), lp1.to_bits());
        for (a, b) in g0.iter().zip(&g1) {
            assert_eq!(a.to_bits(), b.to_bits(), "gradient {g0:?} vs {g1:?}");
        }
    }
}

/// A dense layer, `tanh(X W + rep_matrix(b', rows))`, with `X` data (`rows × 3`), `W` (3 × 4)
/// and `b` (4) parameters, the broadcast traced element by element; the bias run traced
/// before the product and added on the left when `bias_first`. `W` has a prior too, so its
/// adjoint gathers terms from two ops. With `leak`, the product is also read elsewhere.
fn dense_layer_graph(q: &[f64], bias_first: bool, leak: bool) -> (Graph, Arg) {
    let (rows, k, m) = (20, 3, 4);
    let x: Vec<f64> = (0..rows * k)
        .map(|i| ((i * 5) % 7) as f64 * 0.3 - 0.8)
        .collect();
    let y: Vec<f64> = (0..rows * m)
        .map(|i| ((i * 3) % 4) as f64 * 0.4 - 0.5)
        .collect();
    let mut b = GraphBuilder::new(q);
    let p = b.params();
    let xs = b.konst(&x);
    let w = Arg { len: 12, ..p };
    let bias_of = |b: &mut GraphBuilder| {
        let spread: Vec<Arg> = (0..m)
            .flat_map(|j| std::iter::repeat_n(p.at(12 + j), rows))
            .collect();
        b.pack(spread)
    };
    let (spread, product) = if bias_first {
        let spread = bias_of(&mut b);
        (spread, b.matmul(xs, w, rows, k, m))
    } else {
        let product = b.matmul(xs, w, rows, k, m);
        (bias_of(&mut b), product)
    };
    let pre = if bias_first {
        b.binary(BinaryFn::Add, spread, product)
    } else {
        b.binary(BinaryFn::Add, product, spread)
    };
    let hidden = b.unary(UnaryFn::Tanh, pre);
    let ys = b.konst(&y);
    let one = b.scalar_const(1.0);
    let fit = b.dist(DistKind::Normal, vec![ys, hidden, one], false);
    let zero = b.scalar_const(0.0);
    let prior = b.dist(DistKind::Normal, vec![w, zero, one], false);
    let mut terms = vec![fit, prior];
    if leak {
        terms.push(b.sum(product));
    }
    let lp = b.sum_scalars(terms);
    (b.finish(), lp)
}

#[test]
fn a_dense_layer_bias_fuses_into_its_product_with_the_same_bits() {
    let dim = 16;
    let point = |s: f64| -> Vec<f64> {
        (0..dim)
            .map(|i| ((i as f64 + 1.0) * 0.618).fract() * s - s / 2.0)
            .collect()
    };
    for bias_first in [false, true] {
        let (unfused, out) = dense_layer_graph(&point(1.0), bias_first, false);
        let mut gathered = unfused.clone();
        assert_eq!(gathered.packs_as_gathers(), 1);
        let mut fused = gathered.clone();
        assert_eq!(fused.fuse_matmul_bias(out), 1, "bias_first {bias_first}");
        assert_eq!(fused.ops.len(), gathered.ops.len() - 2);
        assert!(fused
            .ops
            .iter()
            .any(|op| matches!(op, Op::MatMul { bias: Some(c), .. } if c.len == 4)));
        assert!(!fused.ops.iter().any(|op| matches!(op, Op::Gather { .. })));
        for s in [1.0, 4.0, 0.01] {
            let q = point(s);
            let (lp0, g0) = value_and_gradient(&unfused, out, &q);
            let (lp1, g1) = value_and_gradient(&fused, out, &q);
            assert_eq!(lp0.to_bits(), lp1.to_bits());
            for (a, b) in g0.iter().zip(&g1) {
                assert_eq!(a.to_bits(), b.to_bits(), "gradient {g0:?} vs {g1:?}");
            }
        }
    }
    // A product read elsewhere keeps its own op.
    let (leaky, out) = dense_layer_graph(&point(1.0), false, true);
    let mut gathered = leaky.clone();
    gathered.packs_as_gathers();
    assert_eq!(gathered.fuse_matmul_bias(out), 0);
}

/// An ICAR-style prior `-0.5 * dot_self(x[node1] - y[node2])` over `edges`, with `x` =
/// `y` = the first `n` parameters (or `y` the next `n`), a density and a sum on `x` traced
/// later (their adjoints reach `x` before the gathers'), and, with `leak`, the first gather's
/// output read elsewhere too.
fn edge_prior_graph(
    q: &[f64],
    n: usize,
    edges: &[(u32, u32)],
    two_vectors: bool,
    leak: bool,
) -> (Graph, Arg) {
    let mut b = GraphBuilder::new(q);
    let p = b.params();
    let x = Arg { len: n as u32, ..p };
    let y = if two_vectors {
        Arg {
            off: p.off + n as u32,
            len: n as u32,
            ..p
        }
    } else {
        x
    };
    let from = b.gather(x, edges.iter().map(|e| e.0).collect());
    let to = b.gather(y, edges.iter().map(|e| e.1).collect());
    let diff = b.binary(BinaryFn::Sub, from, to);
    let sq = b.dot(diff, diff);
    let half = b.scalar_const(-0.5);
    let prior = b.binary(BinaryFn::Mul, half, sq);
    let zero = b.scalar_const(0.0);
    let one = b.scalar_const(1.0);
    let fit = b.dist(DistKind::Normal, vec![x, zero, one], false);
    let total = b.sum(x);
    let soft = b.dist(DistKind::Normal, vec![total, zero, one], false);
    let mut terms = vec![prior, fit, soft];
    if leak {
        terms.push(b.sum(from));
    }
    let lp = b.sum_scalars(terms);
    (b.finish(), lp)
}

#[test]
fn an_icar_prior_fuses_its_gathers_into_one_op_with_the_same_bits() {
    // Edges (i, i + k) in order of i: `node1` in short runs, `node2` scattered; with k up to
    // 8 over 300 nodes more than one reduction chunk. A star: one long run.
    let lattice = |n: u32, ks: u32| -> Vec<(u32, u32)> {
        (0..n)
            .flat_map(|i| (1..=ks).filter(move |k| i + k < n).map(move |k| (i, i + k)))
            .collect()
    };
    let star: Vec<(u32, u32)> = (1..40).map(|j| (0, j)).chain([(5, 7), (3, 2)]).collect();
    let cases = [(30, lattice(30, 2)), (300, lattice(300, 8)), (40, star)];
    assert!(cases[1].1.len() > hazel_graph::kernels::CHUNK);
    for (n, edges) in &cases {
        for two_vectors in [false, true] {
            let dim = 2 * n;
            let point = |s: f64| -> Vec<f64> {
                (0..dim)
                    .map(|i| ((i as f64 + 1.0) * 0.618).fract() * s - s / 2.0)
                    .collect()
            };
            let (unfused, out) = edge_prior_graph(&point(1.0), *n, edges, two_vectors, false);
            let mut fused = unfused.clone();
            assert_eq!(fused.fuse_gather_diff_dot_self(out), 1);
            assert_eq!(fused.ops.len(), unfused.ops.len() - 3);
            assert!(!fused.ops.iter().any(|op| matches!(op, Op::Gather { .. })));
            for s in [1.0, 4.0, 0.01] {
                let what = format!("{n} nodes, two vectors {two_vectors}");
                assert_same_bits(&unfused, &fused, out, &point(s), &what);
            }
            let (leaky, out) = edge_prior_graph(&point(1.0), *n, edges, two_vectors, true);
            assert_eq!(leaky.clone().fuse_gather_diff_dot_self(out), 0);
        }
    }
}
