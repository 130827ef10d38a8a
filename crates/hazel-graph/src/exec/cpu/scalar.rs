//! Value and gradient rules of a scalar block ([`crate::ir::scalar`]): one loop over its
//! instructions forward, one in reverse backward.
//!
//! Each instruction repeats the rule of the op it replaces, from the same functions
//! (`UnaryFn::value`/`deriv`, `BinaryFn::value`/`partials`, `DistKind::elem`), with the same
//! adjoint updates in the same order as `kernels::forward`/`backward`'s scalar paths, so a
//! block gives the bits of its ops run one by one.

use super::dists::{self, Inc, PreparedCache, NO_SCRATCH};
use super::kernels::{self, strong_mul};
use crate::ir::ops::BinaryFn;
use crate::ir::scalar::{Operand, ScalarBlock, ScalarDist, ScalarInstr};
use crate::ir::Op;
use crate::simd::Isa;
use hazel_density::EvalError;

/// Operand `o`.
///
/// # Safety
/// `o`'s index is inside `vals` (a slot) or `consts` (a constant): true for every operand of
/// a block whose [`ScalarBlock::vals_len`] and [`ScalarBlock::consts_len`] the buffers reach.
#[inline(always)]
unsafe fn get(o: Operand, vals: &[f64], consts: &[f64]) -> f64 {
    // SAFETY: see the contract.
    unsafe {
        if o.is_var() {
            *vals.get_unchecked(o.index())
        } else {
            *consts.get_unchecked(o.index())
        }
    }
}

/// The run of `len` values starting at operand `o`.
///
/// # Safety
/// As [`get`], for the whole run.
#[inline(always)]
unsafe fn run<'a>(o: Operand, len: usize, vals: &'a [f64], consts: &'a [f64]) -> &'a [f64] {
    let i = o.index();
    // SAFETY: see the contract.
    unsafe {
        if o.is_var() {
            vals.get_unchecked(i..i + len)
        } else {
            consts.get_unchecked(i..i + len)
        }
    }
}

/// The value slots `x..x + len`: a run instruction's input, unchecked (see [`run`]);
/// `slots_mut!`, the same run of an adjoint buffer.
macro_rules! slots {
    ($vals:expr, $x:expr, $len:expr) => {
        unsafe { $vals.get_unchecked(*$x as usize..(*$x + *$len as u32) as usize) }
    };
}
macro_rules! slots_mut {
    ($adj:expr, $x:expr, $len:expr) => {
        unsafe { $adj.get_unchecked_mut(*$x as usize..(*$x + *$len as u32) as usize) }
    };
}

/// Panics unless every slot and constant `block` touches lies inside the buffers: after this,
/// the block's accesses need no further checks.
#[inline(always)]
fn check_buffers(block: &ScalarBlock, vals: &[f64], consts: &[f64]) {
    assert!(
        block.vals_len() <= vals.len() && block.consts_len() <= consts.len(),
        "scalar block outside its graph's buffers"
    );
}

/// Defines, in the loop of [`forward`] or [`backward`], the readers of the block's operands
/// from the buffers `$vals` and `$consts`, unchecked (see the SAFETY notes there): `v!(i)`,
/// value slot `i`; `k!(i)`, constant `i`; `get!(o)`, operand `o`. (`$d` is `$`, for the inner
/// macros' own parameters.)
macro_rules! operand_readers {
    ($d:tt, $vals:ident, $consts:ident) => {
        macro_rules! v {
                                            ($d i:expr) => {
                                                unsafe { *$vals.get_unchecked(*$d i as usize) }
                                            };
                                        }
        macro_rules! k {
                                            ($d i:expr) => {
                                                unsafe { *$consts.get_unchecked(*$d i as usize) }
                                            };
                                        }
        macro_rules! get {
                                            ($d o:expr) => {
                                                unsafe { get($d o, $vals, $consts) }
                                            };
                                        }
    };
}

/// Forward rule of a block.
pub fn forward(
    block: &ScalarBlock,
    consts: &[f64],
    vals: &mut [f64],
    scratch: &mut [f64],
    isa: Isa,
) -> Result<(), EvalError> {
    check_buffers(block, vals, consts);
    // Made at the block's first density (blocks without one, an ODE right-hand side run
    // thousands of times per evaluation, do not pay for it).
    let mut cache: Option<PreparedCache> = None;
    forward_code(block.code(), consts, vals, scratch, isa, &mut cache)
}

/// [`forward`]'s loop over `code`: the block's instructions, or a lane region's originals.
///
/// # Safety (of the unchecked accesses)
/// `code` is the block's or a part of it, whose slots and constants [`forward`] checked.
fn forward_code(
    code: &[ScalarInstr],
    consts: &[f64],
    vals: &mut [f64],
    scratch: &mut [f64],
    isa: Isa,
    cache: &mut Option<PreparedCache>,
) -> Result<(), EvalError> {
    use ScalarInstr as I;
    // SAFETY (every unchecked access below): every slot and constant index of the block's
    // instructions is below `vals_len()` / `consts_len()`, checked against the buffers by
    // `forward`.
    for instr in code {
        // `set!(i, y)`: slot `i` = `y`.
        operand_readers!($, vals, consts);
        macro_rules! set {
            ($i:expr, $y:expr) => {{
                let y = $y;
                unsafe { *vals.get_unchecked_mut($i as usize) = y }
            }};
        }
        macro_rules! bin {
            ($f:ident, $x:expr, $y:expr, $out:expr) => {
                set!(*$out, BinaryFn::$f.value($x, $y))
            };
        }
        match instr {
            I::AddVV { a, b, out } => bin!(Add, v!(a), v!(b), out),
            I::AddVC { a, c, out } => bin!(Add, v!(a), k!(c), out),
            I::AddCV { c, b, out } => bin!(Add, k!(c), v!(b), out),
            I::SubVV { a, b, out } => bin!(Sub, v!(a), v!(b), out),
            I::SubVC { a, c, out } => bin!(Sub, v!(a), k!(c), out),
            I::SubCV { c, b, out } => bin!(Sub, k!(c), v!(b), out),
            I::MulVV { a, b, out } => bin!(Mul, v!(a), v!(b), out),
            I::MulVC { a, c, out } => bin!(Mul, v!(a), k!(c), out),
            I::MulCV { c, b, out } => bin!(Mul, k!(c), v!(b), out),
            I::DivVV { a, b, out } => bin!(Div, v!(a), v!(b), out),
            I::DivVC { a, c, out } => bin!(Div, v!(a), k!(c), out),
            I::DivCV { c, b, out } => bin!(Div, k!(c), v!(b), out),
            I::Unary { f, x, out } => set!(*out, f.value(get!(*x))),
            I::Binary { f, a, b, out } => set!(*out, f.value(get!(*a), get!(*b))),
            I::MulAdd { a, b, c, out } => {
                // Two roundings, as the unfused multiply and add.
                let product = get!(*a) * get!(*b);
                set!(*out, product + get!(*c))
            }
            I::MulAddChain { c, terms, out } => {
                let mut acc = get!(*c);
                for [a, b] in terms.iter() {
                    acc += get!(*a) * get!(*b);
                }
                set!(*out, acc)
            }
            I::Dist { dist, out } => {
                let cache = cache.get_or_insert_with(PreparedCache::new);
                set!(*out, dist_forward(dist, consts, vals, scratch, cache)?)
            }
            I::Pack { xs, out } => {
                for (k, x) in xs.iter().enumerate() {
                    set!(*out as usize + k, get!(*x))
                }
            }
            I::ShortBinary {
                f,
                a,
                b,
                a_len,
                b_len,
                len,
                out,
            } => {
                // The value operands lie below the output (`ScalarInstr::from_op` makes a run
                // instruction only then).
                let (lo, hi) = unsafe { vals.split_at_mut_unchecked(*out as usize) };
                let (av, bv) = unsafe {
                    (
                        run(*a, *a_len as usize, lo, consts),
                        run(*b, *b_len as usize, lo, consts),
                    )
                };
                let o = unsafe { hi.get_unchecked_mut(..*len as usize) };
                kernels::binary_forward(*f, av, bv, o)
            }
            I::CumSum { x, len, out } => {
                // As above, the input lies below the output.
                let (lo, hi) = unsafe { vals.split_at_mut_unchecked(*out as usize) };
                let o = unsafe { hi.get_unchecked_mut(..*len as usize) };
                kernels::cumsum(slots!(lo, x, len), o)
            }
            I::LogSumExp { x, len, out } => set!(*out, kernels::log_sum_exp(slots!(vals, x, len))),
            I::ShortDist {
                op,
                location,
                lanes,
            } => short_dist_forward(op, *lanes, location, consts, vals, scratch, isa)?,
            I::Small { op, location } => small_forward(op, location, consts, vals, scratch)?,
            I::Lanes(region) => {
                if !super::lanes::forward(region, consts, vals, scratch, isa) {
                    forward_code(&region.originals, consts, vals, scratch, isa, cache)?
                }
            }
        }
    }
    Ok(())
}

/// A short op by its own rules, compiled for the baseline instruction set (the same bits as
/// every other level), its error located at its model line. A density calls its rule
/// directly (what `kernels::forward` does for it, without the general dispatch).
#[inline(never)]
fn small_forward(
    op: &Op,
    location: &Option<std::sync::Arc<str>>,
    consts: &[f64],
    vals: &mut [f64],
    scratch: &mut [f64],
) -> Result<(), EvalError> {
    let r = match op {
        Op::Dist {
            kind,
            args,
            propto,
            len,
            scratch: sc,
            out,
        } => {
            // `vals` below the output holds every argument (the layout invariant).
            let (lo, hi) = vals.split_at_mut(out.off as usize);
            dists::forward(
                *kind,
                args,
                *propto,
                *len as usize,
                sc,
                lo,
                consts,
                scratch,
                Isa::Baseline,
            )
            .map(|lp| hi[0] = lp)
        }
        _ => kernels::forward(op, consts, vals, scratch, Isa::Baseline),
    };
    r.map_err(|e| e.at(location.as_deref()))
}

/// A short density by its family's rule for short densities ([`ScalarInstr::ShortDist`]);
/// where an element fails a check, by [`small_forward`] (the message, or the checked forms'
/// value where only the branch-free forms refuse).
#[inline(never)]
fn short_dist_forward(
    op: &Op,
    lanes: dists::ShortLanes,
    location: &Option<std::sync::Arc<str>>,
    consts: &[f64],
    vals: &mut [f64],
    scratch: &mut [f64],
    isa: Isa,
) -> Result<(), EvalError> {
    let Op::Dist {
        kind,
        args,
        propto,
        len,
        scratch: sc,
        out,
    } = op
    else {
        unreachable!("a short density instruction holds a density op")
    };
    // `vals` below the output holds every argument (the layout invariant).
    let (lo, hi) = vals.split_at_mut(out.off as usize);
    let a = dists::DistArgs::new(*kind, args, *propto, *len as usize, lo, consts, isa);
    match (lanes.0)(&a, sc, scratch) {
        Some(lp) => {
            hi[0] = lp;
            Ok(())
        }
        None => small_forward(op, location, consts, vals, scratch),
    }
}

/// The gradient rule of a short op ([`small_forward`]'s counterpart).
#[inline(never)]
fn small_backward(op: &Op, consts: &[f64], vals: &[f64], adj: &mut [f64], scratch: &mut [f64]) {
    match op {
        Op::Dist {
            args,
            len,
            scratch: sc,
            out,
            ..
        } => {
            let g = adj[out.off as usize];
            dists::backward(args, *len as usize, sc, 0, g, scratch, adj)
        }
        _ => kernels::backward(op, 0, consts, vals, adj, scratch, Isa::Baseline),
    }
}

/// One term of a density: its value, with the varying arguments' partials left in scratch;
/// what its arguments other than the variate derive comes from (and goes to) the block's
/// `cache`.
#[inline(never)]
fn dist_forward(
    dist: &ScalarDist,
    consts: &[f64],
    vals: &[f64],
    scratch: &mut [f64],
    cache: &mut PreparedCache,
) -> Result<f64, EvalError> {
    let mut x = [0.0; 4];
    let mut slots = [NO_SCRATCH; 4];
    let mut varying = 0u8;
    for (k, a) in dist.args.iter().enumerate() {
        // The parameters of the family (a scale, constant or not, is shared by the densities
        // of many observations) go through the cache; the variate, different in each term,
        // would only push them out. Constants are told from slots by the top bit.
        if k > 0 {
            slots[k] = a.index() as u32 | if a.is_var() { 0 } else { 1 << 31 };
        }
        x[k] = if a.is_var() {
            varying |= 1 << k;
            vals[a.index()]
        } else {
            consts[a.index()]
        };
    }
    let inc = Inc {
        all: !dist.propto,
        varying,
    };
    let (lp, d) = match dist.lanes.map(|f| f(&x, &inc, &slots, cache)) {
        Some((true, value)) => value,
        // A failed check (for Stan's message), or a family without branch-free forms.
        _ => dist
            .kind
            .elem(&x, &inc)
            .map_err(|e| EvalError::domain(e.message).at(dist.location.as_deref()))?,
    };
    for (k, &o) in dist.scratch.iter().enumerate() {
        if o != NO_SCRATCH {
            scratch[o as usize] = d[k];
        }
    }
    Ok(lp)
}

/// Gradient rule of a block: the instructions in reverse, each adding its contribution to
/// its operands' adjoints.
pub fn backward(
    block: &ScalarBlock,
    consts: &[f64],
    vals: &[f64],
    adj: &mut [f64],
    scratch: &mut [f64],
    isa: Isa,
) {
    check_buffers(block, vals, consts);
    assert!(adj.len() >= vals.len(), "adjoints shorter than values");
    backward_code(block.code(), consts, vals, adj, scratch, isa)
}

/// [`backward`]'s loop over `code` (the block's instructions, or a lane region's originals).
fn backward_code(
    code: &[ScalarInstr],
    consts: &[f64],
    vals: &[f64],
    adj: &mut [f64],
    scratch: &mut [f64],
    isa: Isa,
) {
    use ScalarInstr as I;
    // SAFETY (every unchecked access below): every slot and constant index of the block's
    // instructions is below `vals_len()` / `consts_len()`, checked against the buffers by
    // `backward` (and `adj` is at least as long as `vals`).
    for instr in code.iter().rev() {
        operand_readers!($, vals, consts);
        // `adj!(i)`: the adjoint of slot `i`, as a place.
        macro_rules! adj {
            ($i:expr) => {
                *unsafe { adj.get_unchecked_mut($i as usize) }
            };
        }
        // The scalar binary rule: `∂f/∂a`, `∂f/∂b` at the operands and the output, then the
        // adjoint of each varying operand (`Some(slot)`) updated, `a`'s first.
        macro_rules! bin {
            ($f:ident, $x:expr, $y:expr, $out:expr, $a:expr, $b:expr) => {{
                let g = adj!(*$out);
                let (pa, pb) = BinaryFn::$f.partials($x, $y, v!($out));
                if let Some(a) = $a {
                    adj!(a) += strong_mul(g, pa);
                }
                if let Some(b) = $b {
                    adj!(b) += strong_mul(g, pb);
                }
            }};
        }
        let s = |i: &u32| Some(*i as usize);
        const NONE: Option<usize> = None;
        match instr {
            I::AddVV { a, b, out } => bin!(Add, v!(a), v!(b), out, s(a), s(b)),
            I::AddVC { a, c, out } => bin!(Add, v!(a), k!(c), out, s(a), NONE),
            I::AddCV { c, b, out } => bin!(Add, k!(c), v!(b), out, NONE, s(b)),
            I::SubVV { a, b, out } => bin!(Sub, v!(a), v!(b), out, s(a), s(b)),
            I::SubVC { a, c, out } => bin!(Sub, v!(a), k!(c), out, s(a), NONE),
            I::SubCV { c, b, out } => bin!(Sub, k!(c), v!(b), out, NONE, s(b)),
            I::MulVV { a, b, out } => bin!(Mul, v!(a), v!(b), out, s(a), s(b)),
            I::MulVC { a, c, out } => bin!(Mul, v!(a), k!(c), out, s(a), NONE),
            I::MulCV { c, b, out } => bin!(Mul, k!(c), v!(b), out, NONE, s(b)),
            I::DivVV { a, b, out } => bin!(Div, v!(a), v!(b), out, s(a), s(b)),
            I::DivVC { a, c, out } => bin!(Div, v!(a), k!(c), out, s(a), NONE),
            I::DivCV { c, b, out } => bin!(Div, k!(c), v!(b), out, NONE, s(b)),
            I::Unary { f, x, out } => {
                if x.is_var() {
                    let g = adj!(*out);
                    let p = f.deriv(v!(&(x.index() as u32)), v!(out));
                    adj!(x.index()) += strong_mul(g, p);
                }
            }
            I::Binary { f, a, b, out } => {
                let g = adj!(*out);
                let (pa, pb) = f.partials(get!(*a), get!(*b), v!(out));
                if a.is_var() {
                    adj!(a.index()) += strong_mul(g, pa);
                }
                if b.is_var() {
                    adj!(b.index()) += strong_mul(g, pb);
                }
            }
            I::MulAdd { a, b, c, out } => {
                // The unfused add's and multiply's updates, in the order the two ops made
                // them; `0.0 + g` is the product's adjoint as the add would have accumulated it.
                let g = adj!(*out);
                if c.is_var() {
                    adj!(c.index()) += g;
                }
                let g_product = 0.0 + g;
                let (x, y) = (get!(*a), get!(*b));
                if a.is_var() {
                    adj!(a.index()) += strong_mul(g_product, y);
                }
                if b.is_var() {
                    adj!(b.index()) += strong_mul(g_product, x);
                }
            }
            I::MulAddChain { c, terms, out } => {
                // As `kernels::backward`'s chain rule: the links from the last back.
                let mut g = adj!(*out);
                for (n, [a, b]) in terms.iter().enumerate().rev() {
                    if n == 0 && c.is_var() {
                        adj!(c.index()) += g;
                    }
                    let g_product = 0.0 + g;
                    let (x, y) = (get!(*a), get!(*b));
                    if a.is_var() {
                        adj!(a.index()) += strong_mul(g_product, y);
                    }
                    if b.is_var() {
                        adj!(b.index()) += strong_mul(g_product, x);
                    }
                    g += 0.0;
                }
            }
            I::Pack { xs, out } => {
                for (k, x) in xs.iter().enumerate() {
                    if x.is_var() {
                        let g = adj!(*out as usize + k);
                        adj!(x.index()) += g;
                    }
                }
            }
            I::ShortBinary {
                f,
                a,
                b,
                a_len,
                b_len,
                len,
                out,
            } => {
                // `kernels::binary_backward_short` on this block's checked buffers; the
                // operands' adjoints lie below the output's (as in `forward`).
                let (n, o) = (*len as usize, *out as usize);
                let (av, bv) = unsafe {
                    (
                        run(*a, *a_len as usize, vals, consts),
                        run(*b, *b_len as usize, vals, consts),
                    )
                };
                let y = unsafe { vals.get_unchecked(o..o + n) };
                let (adj_lo, adj_hi) = unsafe { adj.split_at_mut_unchecked(o) };
                let g = unsafe { adj_hi.get_unchecked(..n) };
                let (a, b) = (a.run(*a_len as u32), b.run(*b_len as u32));
                kernels::short_operands(*f, a, b, av, bv, y, g, adj_lo)
            }
            I::CumSum { x, len, out } => {
                // The input's adjoints lie below the output's (as in `forward`).
                let (lo, hi) = unsafe { adj.split_at_mut_unchecked(*out as usize) };
                let g = unsafe { hi.get_unchecked(..*len as usize) };
                kernels::cumsum_backward(g, slots_mut!(lo, x, len))
            }
            I::LogSumExp { x, len, out } => {
                let (y, g) = (v!(out), adj!(*out));
                kernels::log_sum_exp_backward(slots!(vals, x, len), y, g, slots_mut!(adj, x, len))
            }
            I::Small { op, .. } | I::ShortDist { op, .. } => {
                small_backward(op, consts, vals, adj, scratch)
            }
            I::Lanes(region) => {
                if !super::lanes::backward(region, consts, vals, adj, scratch, isa) {
                    // The forward run took the originals: their rules, from adjoints the
                    // region's private values' slots (left uncleared) start at zero.
                    region.for_each_private_slot(|s| adj[s] = 0.0);
                    backward_code(&region.originals, consts, vals, adj, scratch, isa)
                }
            }
            I::Dist { dist, out } => {
                let g = adj!(*out);
                for (a, &o) in dist.args.iter().zip(dist.scratch.iter()) {
                    if o != NO_SCRATCH {
                        adj[a.index()] += g * scratch[o as usize];
                    }
                }
            }
        }
    }
}
