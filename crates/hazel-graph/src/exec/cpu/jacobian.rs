//! Jacobian rows of a small graph in one reverse sweep: one adjoint *lane* per output, so
//! each instruction is decoded and its partials computed once for all rows instead of once
//! per row. Solvers ask for the full Jacobian of a traced function at every call (an ODE
//! right-hand side: `n` rows at each of thousands of calls per evaluation), where the
//! per-row sweeps' decoding and partials were most of the cost.
//!
//! Each lane gets exactly the updates the reference sweep (`Graph::backward` from that
//! output, the rules of `exec/cpu/scalar.rs`) makes, in the same order, so row `i` has the
//! bits of the sweep seeded at output `i`; the test below checks that on every instruction
//! kind it takes. Graphs holding anything else (ops outside scalar blocks, instructions not
//! listed in [`LaneJacobian::supports`]) keep the per-row sweeps.

use super::kernels::strong_mul;
use crate::ir::ops::BinaryFn;
use crate::ir::scalar::{Operand, ScalarBlock, ScalarInstr};
use crate::ir::{Graph, Op};

/// Marker that a graph's Jacobian can be taken in lanes ([`LaneJacobian::of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneJacobian;

impl LaneJacobian {
    /// `Some` when every op of `g` is a scalar block of supported instructions.
    pub fn of(g: &Graph) -> Option<LaneJacobian> {
        let all = g.ops.iter().all(|op| match op {
            Op::Scalars { block, .. } => block.code().iter().all(Self::supports),
            _ => false,
        });
        all.then_some(LaneJacobian)
    }

    /// The instructions whose rules [`LaneJacobian::backward`] has.
    fn supports(i: &ScalarInstr) -> bool {
        use ScalarInstr as I;
        i.arithmetic().is_some()
            || matches!(
                i,
                I::Unary { .. }
                    | I::Binary { .. }
                    | I::MulAdd { .. }
                    | I::MulAddChain { .. }
                    | I::Pack { .. }
            )
    }

    /// The reverse sweep of `g` (after a forward sweep that left `vals`) with one adjoint lane
    /// per entry of `seeds` (at most [`MAX_LANES`]), in `adj` slot-major with `L` lanes per
    /// slot (`adj[slot * L + lane]`, `L` the lane count rounded up to 2, 4 or 8, see
    /// [`lane_width`]; `adj.len() ≥ g.n_vals × L`): every adjoint is cleared, lane `i` gets 1
    /// at slot `seeds[i]` (none: the lane stays a zero row's), then the ops run in reverse.
    /// Afterwards lane `i` holds what `Graph::backward` from `seeds[i]` leaves in
    /// `Buffers::adj`. (Scalar blocks' rules only add, so no adjoint is left unset: clearing
    /// all is the reference's `Graph::start_adjoint`.)
    pub fn backward(self, g: &Graph, vals: &[f64], adj: &mut [f64], seeds: &[Option<u32>]) {
        match lane_width(seeds.len()) {
            2 => sweep::<2>(g, vals, adj, seeds),
            4 => sweep::<4>(g, vals, adj, seeds),
            _ => sweep::<8>(g, vals, adj, seeds),
        }
    }
}

/// The most rows one lane sweep takes.
pub const MAX_LANES: usize = 8;

/// Lanes per slot for `rows` rows (2 ≤ `rows` ≤ [`MAX_LANES`]): a fixed width, so each
/// update is a short loop the compiler unrolls (unused lanes stay zero).
pub fn lane_width(rows: usize) -> usize {
    match rows {
        0..=2 => 2,
        3..=4 => 4,
        _ => MAX_LANES,
    }
}

fn sweep<const L: usize>(g: &Graph, vals: &[f64], adj: &mut [f64], seeds: &[Option<u32>]) {
    assert!(seeds.len() <= L && vals.len() >= g.n_vals);
    let (adj, _) = adj.as_chunks_mut::<L>();
    let adj = &mut adj[..g.n_vals];
    adj.iter_mut().for_each(|a| *a = [0.0; L]);
    for (l, s) in seeds.iter().enumerate() {
        if let Some(s) = s {
            adj[*s as usize][l] = 1.0;
        }
    }
    for op in g.ops.iter().rev() {
        if let Op::Scalars { block, .. } = op {
            block_backward(block, &g.consts, vals, adj);
        }
    }
}

/// One block's instructions in reverse, each lane updated as `scalar::backward` updates its
/// single adjoint.
fn block_backward<const L: usize>(
    block: &ScalarBlock,
    consts: &[f64],
    vals: &[f64],
    adj: &mut [[f64; L]],
) {
    use ScalarInstr as I;
    // Every slot and constant the block names is inside the buffers (as `scalar::backward`
    // checks); the accesses below then need no checks of their own to be in bounds, and with
    // them out of the way each rule is a few loads and a lane loop the compiler unrolls.
    assert!(
        block.vals_len() <= vals.len()
            && block.vals_len() <= adj.len()
            && block.consts_len() <= consts.len(),
        "scalar block outside its graph's buffers"
    );
    let (vals, adj) = (&vals[..block.vals_len()], &mut adj[..block.vals_len()]);
    let get = |o: Operand| {
        if o.is_var() {
            vals[o.index()]
        } else {
            consts[o.index()]
        }
    };
    // The binary rule for `f` (a constant per arm, so its partials inline): partials at the
    // operands and the output, then `a`'s update, `b`'s, with the output's adjoint as it
    // was before either.
    macro_rules! bin {
        ($f:ident, $x:expr, $y:expr, $out:expr, $a:expr, $b:expr) => {{
            let out = $out as usize;
            let g = adj[out];
            let (pa, pb) = BinaryFn::$f.partials($x, $y, vals[out]);
            if let Some(a) = $a {
                add_lanes(&mut adj[a as usize], &g, pa);
            }
            if let Some(b) = $b {
                add_lanes(&mut adj[b as usize], &g, pb);
            }
        }};
    }
    let v = |i: u32| vals[i as usize];
    let k = |i: u32| consts[i as usize];
    const NONE: Option<u32> = None;
    for instr in block.code().iter().rev() {
        match instr {
            &I::AddVV { a, b, out } => bin!(Add, v(a), v(b), out, Some(a), Some(b)),
            &I::AddVC { a, c, out } => bin!(Add, v(a), k(c), out, Some(a), NONE),
            &I::AddCV { c, b, out } => bin!(Add, k(c), v(b), out, NONE, Some(b)),
            &I::SubVV { a, b, out } => bin!(Sub, v(a), v(b), out, Some(a), Some(b)),
            &I::SubVC { a, c, out } => bin!(Sub, v(a), k(c), out, Some(a), NONE),
            &I::SubCV { c, b, out } => bin!(Sub, k(c), v(b), out, NONE, Some(b)),
            &I::MulVV { a, b, out } => bin!(Mul, v(a), v(b), out, Some(a), Some(b)),
            &I::MulVC { a, c, out } => bin!(Mul, v(a), k(c), out, Some(a), NONE),
            &I::MulCV { c, b, out } => bin!(Mul, k(c), v(b), out, NONE, Some(b)),
            &I::DivVV { a, b, out } => bin!(Div, v(a), v(b), out, Some(a), Some(b)),
            &I::DivVC { a, c, out } => bin!(Div, v(a), k(c), out, Some(a), NONE),
            &I::DivCV { c, b, out } => bin!(Div, k(c), v(b), out, NONE, Some(b)),
            &I::Unary { f, x, out } => {
                if x.is_var() {
                    let g = adj[out as usize];
                    let p = f.deriv(vals[x.index()], v(out));
                    add_lanes(&mut adj[x.index()], &g, p);
                }
            }
            &I::Binary { f, a, b, out } => {
                let g = adj[out as usize];
                let (pa, pb) = f.partials(get(a), get(b), v(out));
                if a.is_var() {
                    add_lanes(&mut adj[a.index()], &g, pa);
                }
                if b.is_var() {
                    add_lanes(&mut adj[b.index()], &g, pb);
                }
            }
            &I::MulAdd { a, b, c, out } => {
                // As `scalar::backward`: the add's update, then the product's with `0.0 + g`.
                let g = adj[out as usize];
                if c.is_var() {
                    add_g(&mut adj[c.index()], &g);
                }
                let g_product = g.map(|g| 0.0 + g);
                let (x, y) = (get(a), get(b));
                if a.is_var() {
                    add_lanes(&mut adj[a.index()], &g_product, y);
                }
                if b.is_var() {
                    add_lanes(&mut adj[b.index()], &g_product, x);
                }
            }
            I::MulAddChain { c, terms, out } => {
                // As `scalar::backward`: the links from the last back.
                let mut g = adj[*out as usize];
                for (n, [a, b]) in terms.iter().enumerate().rev() {
                    if n == 0 && c.is_var() {
                        add_g(&mut adj[c.index()], &g);
                    }
                    let g_product = g.map(|g| 0.0 + g);
                    let (x, y) = (get(*a), get(*b));
                    if a.is_var() {
                        add_lanes(&mut adj[a.index()], &g_product, y);
                    }
                    if b.is_var() {
                        add_lanes(&mut adj[b.index()], &g_product, x);
                    }
                    g = g.map(|g| g + 0.0);
                }
            }
            I::Pack { xs, out } => {
                for (j, x) in xs.iter().enumerate() {
                    if x.is_var() {
                        let g = adj[*out as usize + j];
                        add_g(&mut adj[x.index()], &g);
                    }
                }
            }
            // `LaneJacobian::of` admits no other instruction.
            _ => unreachable!("instruction without a lane rule"),
        }
    }
}

/// `a += strong_mul(g, p)` in every lane.
#[inline(always)]
fn add_lanes<const L: usize>(a: &mut [f64; L], g: &[f64; L], p: f64) {
    for l in 0..L {
        a[l] += strong_mul(g[l], p);
    }
}

/// `a += g` in every lane.
#[inline(always)]
fn add_g<const L: usize>(a: &mut [f64; L], g: &[f64; L]) {
    for l in 0..L {
        a[l] += g[l];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::GraphBuilder;
    use crate::ir::ops::UnaryFn;
    use crate::tape::{Arg, Buffers};

    /// A graph over four parameters whose fused block holds every instruction kind lanes
    /// take, and its scalar results (each reads a different mix of them).
    fn graph(q: &[f64]) -> (Graph, Vec<Arg>) {
        let mut b = GraphBuilder::new(q);
        let p = b.params();
        let x: Vec<Arg> = (0..4).map(|i| p.at(i)).collect();
        let c = b.scalar_const(1.5);
        let zero = b.scalar_const(0.0);
        let mut outs = Vec::new();
        for f in [BinaryFn::Add, BinaryFn::Sub, BinaryFn::Mul, BinaryFn::Div] {
            let vv = b.binary(f, x[0], x[1]);
            let vc = b.binary(f, x[2], c);
            let cv = b.binary(f, c, x[3]);
            let s = b.binary(BinaryFn::Add, vv, vc);
            outs.push(b.binary(BinaryFn::Mul, s, cv));
        }
        // Unary, a general binary function, a zero partial (× 0) and an infinite one
        // (`sqrt` at 0): `0 × ∞` in a lane seeded elsewhere must stay as the reference has it.
        let e = b.unary(UnaryFn::Exp, x[0]);
        let pw = b.binary(BinaryFn::Pow, e, x[1]);
        let z = b.binary(BinaryFn::Mul, x[2], zero);
        let sq = b.unary(UnaryFn::Sqrt, z);
        outs.push(b.binary(BinaryFn::Add, pw, sq));
        // A multiply-add chain `x3 + x0 x1 + x2 x3` (MulAdd, then MulAddChain when merged).
        let m1 = b.binary(BinaryFn::Mul, x[0], x[1]);
        let a1 = b.binary(BinaryFn::Add, x[3], m1);
        let m2 = b.binary(BinaryFn::Mul, x[2], x[3]);
        let a2 = b.binary(BinaryFn::Add, a1, m2);
        outs.push(a2);
        let m3 = b.binary(BinaryFn::Mul, x[1], x[2]);
        outs.push(b.binary(BinaryFn::Add, m3, c));
        // A pack of scalars, its elements read back.
        let pk = b.pack(vec![x[3], e, c]);
        outs.push(b.binary(BinaryFn::Mul, pk.at(0), pk.at(1)));
        outs.push(b.binary(BinaryFn::Sub, pk.at(2), x[0]));
        let mut g = b.finish();
        let keep = outs[0];
        g.fuse_mul_add(keep);
        g.fuse_mul_add_chains(keep);
        g.fuse_scalar_blocks();
        (g, outs)
    }

    #[test]
    fn lanes_give_the_bits_of_one_sweep_per_row() {
        let q = [0.3, -1.2, 0.7, 2.1];
        let (g, outs) = graph(&q);
        let lanes = LaneJacobian::of(&g).expect("one block of supported instructions");
        // Every kind the lanes have a rule for is exercised.
        let code: Vec<&ScalarInstr> = g
            .ops
            .iter()
            .flat_map(|op| match op {
                Op::Scalars { block, .. } => block.code().iter().collect(),
                _ => Vec::new(),
            })
            .collect();
        use ScalarInstr as I;
        let has = |f: fn(&ScalarInstr) -> bool| code.iter().any(|i| f(i));
        assert!(has(|i| matches!(i, I::AddVV { .. })) && has(|i| matches!(i, I::AddVC { .. })));
        assert!(has(|i| matches!(i, I::AddCV { .. })) && has(|i| matches!(i, I::SubVV { .. })));
        assert!(has(|i| matches!(i, I::SubVC { .. })) && has(|i| matches!(i, I::SubCV { .. })));
        assert!(has(|i| matches!(i, I::MulVV { .. })) && has(|i| matches!(i, I::MulVC { .. })));
        assert!(has(|i| matches!(i, I::MulCV { .. })) && has(|i| matches!(i, I::DivVV { .. })));
        assert!(has(|i| matches!(i, I::DivVC { .. })) && has(|i| matches!(i, I::DivCV { .. })));
        assert!(has(|i| matches!(i, I::Unary { .. })) && has(|i| matches!(i, I::Binary { .. })));
        assert!(has(|i| matches!(i, I::MulAdd { .. })));
        assert!(
            has(|i| matches!(i, I::MulAddChain { .. })) && has(|i| matches!(i, I::Pack { .. }))
        );

        let mut buf = Buffers::for_graph(&g);
        g.forward(&q, &mut buf).expect("finite");
        let seeds_all: Vec<Option<u32>> = outs.iter().map(|o| Some(o.off)).chain([None]).collect();
        // Every lane width, with and without a constant (unseeded) row.
        for rows in 2..=MAX_LANES {
            for skip in [false, true] {
                let mut seeds: Vec<Option<u32>> = seeds_all.iter().copied().take(rows).collect();
                if skip {
                    seeds[rows / 2] = None;
                }
                let width = lane_width(rows);
                let mut adj = vec![f64::NAN; g.n_vals * width];
                lanes.backward(&g, &buf.vals, &mut adj, &seeds);
                for (l, seed) in seeds.iter().enumerate() {
                    let Some(s) = seed else { continue };
                    let mut reference = buf.clone();
                    g.backward(Arg::var(*s as usize, 1), &mut reference);
                    for slot in 0..g.n_vals {
                        assert_eq!(
                            adj[slot * width + l].to_bits(),
                            reference.adj[slot].to_bits(),
                            "rows {rows}, lane {l}, slot {slot}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn graphs_with_other_ops_keep_the_per_row_sweeps() {
        let q = [0.3, -1.2];
        let mut b = GraphBuilder::new(&q);
        let p = b.params();
        let s = b.sum(p);
        let _ = b.binary(BinaryFn::Mul, s, p.at(0));
        let g = b.finish();
        assert_eq!(LaneJacobian::of(&g), None);
    }
}
