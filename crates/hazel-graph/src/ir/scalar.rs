//! Scalar blocks: runs of consecutive scalar ops re-encoded as one [`Op::Scalars`] of compact
//! instructions ([`Graph::fuse_scalar_blocks`]).
//!
//! Why: loops over data unroll into long runs of scalar ops (`mu[n] = a + b * x[n]`, a
//! mixture's `log_sum_exp` per row, one-term densities), and an op costs far more to dispatch
//! than to compute. In a block, each instruction has its operands resolved (a value slot or a
//! constant-pool index, told apart by one bit), the common arithmetic has an instruction per
//! operand layout (`a + b`, `a + c`, …), and the executor runs the block in one tight loop
//! (`crate::exec::cpu::scalar`) instead of one trip through the general op dispatch per op.
//!
//! Every instruction computes what the op it replaces computed, with the same value and
//! gradient rules (`UnaryFn::value`/`deriv`, `BinaryFn::value`/`partials`, the densities'
//! `elem`), and the block's backward sweep runs the instructions in reverse making the same
//! adjoint updates in the same order, so a fused graph gives the unfused graph's bits
//! (`tests/fusion.rs`).

use super::graph::{Arg, Graph, Op, Slot, Space};
use super::ops::{BinaryFn, DistKind, UnaryFn};
use crate::exec::cpu::dists::SHORT_DIST;

/// A scalar operand: a slot of the value buffer, or an entry of the constant pool (the top
/// bit set).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Operand(u32);

impl Operand {
    const CONST: u32 = 1 << 31;

    /// The scalar `a` (a run of length 1).
    pub fn of(a: Arg) -> Operand {
        debug_assert_eq!(a.len, 1);
        assert!(
            a.off < Self::CONST,
            "offset {} too large for an operand",
            a.off
        );
        match a.space {
            Space::Var => Operand(a.off),
            Space::Const => Operand(a.off | Self::CONST),
        }
    }

    /// Whether the operand is a value slot (depends on the parameters, has an adjoint).
    #[inline(always)]
    pub fn is_var(self) -> bool {
        self.0 & Self::CONST == 0
    }

    /// The slot or the constant's index.
    #[inline(always)]
    pub fn index(self) -> usize {
        (self.0 & !Self::CONST) as usize
    }

    /// The argument this operand reads.
    pub fn arg(self) -> Arg {
        self.run(1)
    }

    /// The run of `len` values starting at this operand.
    pub fn run(self, len: u32) -> Arg {
        if self.is_var() {
            Arg::var(self.index(), len as usize)
        } else {
            Arg::konst(self.index(), len as usize)
        }
    }

    /// The first value of the run `a` (of any length).
    fn start(a: Arg) -> Operand {
        Operand::of(Arg { len: 1, ..a })
    }
}

impl std::fmt::Debug for Operand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_var() {
            write!(f, "v{}", self.index())
        } else {
            write!(f, "c{}", self.index())
        }
    }
}

/// A one-term univariate density (`normal_lpdf(y[n] | mu, sigma)` in a loop): the operands,
/// where the partials of the varying ones go ([`crate::dists::NO_SCRATCH`] for constants),
/// and the model location an error names.
#[derive(Debug, Clone)]
pub struct ScalarDist {
    pub kind: DistKind,
    pub propto: bool,
    pub args: Box<[Operand]>,
    pub scratch: Box<[u32]>,
    pub location: Option<std::sync::Arc<str>>,
    /// The family's branch-free one-element rule, where its kernel has one (chosen here, so
    /// the executor calls it without a dispatch over the families).
    pub(crate) lanes: Option<crate::exec::cpu::dists::ScalarLanesFn>,
}

/// One instruction of a scalar block; `out` is a value slot. `V`/`C` in a name: the operand
/// in that position is a value slot / a constant-pool index.
// A plain one-byte tag (no niche in a field's padding to decode) keeps the executor's dispatch
// to one load and one indirect jump.
#[derive(Debug, Clone)]
#[repr(u8)]
pub enum ScalarInstr {
    AddVV {
        a: u32,
        b: u32,
        out: u32,
    },
    AddVC {
        a: u32,
        c: u32,
        out: u32,
    },
    AddCV {
        c: u32,
        b: u32,
        out: u32,
    },
    SubVV {
        a: u32,
        b: u32,
        out: u32,
    },
    SubVC {
        a: u32,
        c: u32,
        out: u32,
    },
    SubCV {
        c: u32,
        b: u32,
        out: u32,
    },
    MulVV {
        a: u32,
        b: u32,
        out: u32,
    },
    MulVC {
        a: u32,
        c: u32,
        out: u32,
    },
    MulCV {
        c: u32,
        b: u32,
        out: u32,
    },
    DivVV {
        a: u32,
        b: u32,
        out: u32,
    },
    DivVC {
        a: u32,
        c: u32,
        out: u32,
    },
    DivCV {
        c: u32,
        b: u32,
        out: u32,
    },
    /// `f(x)`.
    Unary {
        f: UnaryFn,
        x: Operand,
        out: u32,
    },
    /// `f(a, b)` for the other binary functions.
    Binary {
        f: BinaryFn,
        a: Operand,
        b: Operand,
        out: u32,
    },
    /// [`Op::MulAdd`].
    MulAdd {
        a: Operand,
        b: Operand,
        c: Operand,
        out: u32,
    },
    /// [`Op::MulAddChain`].
    MulAddChain {
        c: Operand,
        terms: Box<[[Operand; 2]]>,
        out: u32,
    },
    /// [`Op::Dist`] of one term with scalar arguments.
    Dist {
        dist: Box<ScalarDist>,
        out: u32,
    },
    /// [`Op::Pack`]: `xs` copied to the run at `out`.
    Pack {
        xs: Box<[Operand]>,
        out: u32,
    },
    /// [`Op::Binary`] `+ − × ÷` over `len` ≤ [`SHORT_BINARY`] values, each operand a run of
    /// `len` values or a broadcast scalar (`a_len`/`b_len` 1), of either space. The short
    /// vector ops of a model's per-observation function (`theta - kappa`, a log softmax's
    /// `v - log_sum_exp(v)`) run one per observation: held as [`ScalarInstr::Small`] they paid
    /// the general op dispatch and slice set-up, several times their arithmetic.
    ShortBinary {
        f: BinaryFn,
        a: Operand,
        b: Operand,
        a_len: u8,
        b_len: u8,
        len: u8,
        out: u32,
    },
    /// [`Op::CumSum`] of the short run of value slots `x..x + len` (for the same reason).
    CumSum {
        x: u32,
        len: u32,
        out: u32,
    },
    /// [`Op::LogSumExp`] of the short run of value slots `x..x + len` (a mixture's or a
    /// softmax's per observation).
    LogSumExp {
        x: u32,
        len: u32,
        out: u32,
    },
    /// [`Op::Dist`] of 2 to [`SHORT_DIST`] elements of a family with branch-free forms:
    /// its rule for short densities (`lanes`, chosen when the block is made, as a one-term
    /// density's), which gives the general rule's bits without its chunk loop, lane sums and
    /// family dispatch (a capture–recapture row's `bernoulli_logit` over its few occasions);
    /// where an element fails a check, the general rule for the message. Otherwise as
    /// [`ScalarInstr::Small`].
    ShortDist {
        op: Box<Op>,
        location: Option<std::sync::Arc<str>>,
        lanes: crate::exec::cpu::dists::ShortLanes,
    },
    /// Any other op whose runs are all short ([`SMALL_LEN`]), run by its own rules: a
    /// short vector's arithmetic costs less than a trip through the op dispatch and the SIMD
    /// dispatch (which buys nothing at this length), so it runs inside the block, compiled for
    /// the baseline instruction set (every level gives the same bits). `location` is the model
    /// location its errors name.
    Small {
        op: Box<Op>,
        location: Option<std::sync::Arc<str>>,
    },
    /// Consecutive iterations of the same few instructions, run side by side
    /// ([`super::lanes`]); made by [`Graph::lane_scalar_blocks`] after the block.
    Lanes(Box<super::lanes::LaneRegion>),
}

/// The longest run an op may read or write to be held in a block as [`ScalarInstr::Small`].
pub const SMALL_LEN: u32 = 16;

/// The longest elementwise arithmetic op held as [`ScalarInstr::ShortBinary`]: the length up
/// to which the reference executor runs it undispatched, with its gradient in direct loops
/// (`kernels::binary_backward_short`, whose rule the instruction calls).
pub(crate) const SHORT_BINARY: u32 = 8;

impl ScalarInstr {
    /// A scalar `a f b` of `+ − × ÷` (the `AddVV` … `DivCV` instructions): the function and
    /// both operands.
    pub fn arithmetic(&self) -> Option<(BinaryFn, Operand, Operand)> {
        use ScalarInstr::*;
        let v = |i: u32| Operand::of(Arg::var(i as usize, 1));
        let c = |i: u32| Operand::of(Arg::konst(i as usize, 1));
        Some(match *self {
            AddVV { a, b, .. } => (BinaryFn::Add, v(a), v(b)),
            AddVC { a, c: k, .. } => (BinaryFn::Add, v(a), c(k)),
            AddCV { c: k, b, .. } => (BinaryFn::Add, c(k), v(b)),
            SubVV { a, b, .. } => (BinaryFn::Sub, v(a), v(b)),
            SubVC { a, c: k, .. } => (BinaryFn::Sub, v(a), c(k)),
            SubCV { c: k, b, .. } => (BinaryFn::Sub, c(k), v(b)),
            MulVV { a, b, .. } => (BinaryFn::Mul, v(a), v(b)),
            MulVC { a, c: k, .. } => (BinaryFn::Mul, v(a), c(k)),
            MulCV { c: k, b, .. } => (BinaryFn::Mul, c(k), v(b)),
            DivVV { a, b, .. } => (BinaryFn::Div, v(a), v(b)),
            DivVC { a, c: k, .. } => (BinaryFn::Div, v(a), c(k)),
            DivCV { c: k, b, .. } => (BinaryFn::Div, c(k), v(b)),
            _ => return None,
        })
    }

    /// The slots the instruction writes.
    pub fn out(&self) -> Slot {
        use ScalarInstr::*;
        match self {
            AddVV { out, .. }
            | AddVC { out, .. }
            | AddCV { out, .. }
            | SubVV { out, .. }
            | SubVC { out, .. }
            | SubCV { out, .. }
            | MulVV { out, .. }
            | MulVC { out, .. }
            | MulCV { out, .. }
            | DivVV { out, .. }
            | DivVC { out, .. }
            | DivCV { out, .. }
            | Unary { out, .. }
            | Binary { out, .. }
            | MulAdd { out, .. }
            | MulAddChain { out, .. }
            | Dist { out, .. } => Slot { off: *out, len: 1 },
            Pack { xs, out } => Slot {
                off: *out,
                len: xs.len() as u32,
            },
            ShortBinary { .. } | CumSum { .. } | LogSumExp { .. } => {
                self.run_op().expect("a run instruction").out()
            }
            Small { op, .. } | ShortDist { op, .. } => op.out(),
            Lanes(region) => {
                let outs = region.originals.iter().map(|i| i.out().range());
                let lo = outs.clone().map(|r| r.start).min().unwrap_or(0);
                let hi = outs.map(|r| r.end).max().unwrap_or(lo);
                Slot {
                    off: lo as u32,
                    len: (hi - lo) as u32,
                }
            }
        }
    }

    /// Every argument the instruction reads, in order.
    pub fn for_each_input(&self, mut f: impl FnMut(Arg)) {
        self.each_input(&mut f)
    }

    // `dyn`: a lane region's instructions call it again, and a generic `f` would instantiate
    // without end.
    fn each_input(&self, f: &mut dyn FnMut(Arg)) {
        use ScalarInstr::*;
        let v = |i: &u32| Arg::var(*i as usize, 1);
        let c = |i: &u32| Arg::konst(*i as usize, 1);
        match self {
            AddVV { a, b, .. } | SubVV { a, b, .. } | MulVV { a, b, .. } | DivVV { a, b, .. } => {
                f(v(a));
                f(v(b))
            }
            AddVC { a, c: k, .. }
            | SubVC { a, c: k, .. }
            | MulVC { a, c: k, .. }
            | DivVC { a, c: k, .. } => {
                f(v(a));
                f(c(k))
            }
            AddCV { c: k, b, .. }
            | SubCV { c: k, b, .. }
            | MulCV { c: k, b, .. }
            | DivCV { c: k, b, .. } => {
                f(c(k));
                f(v(b))
            }
            Unary { x, .. } => f(x.arg()),
            Binary { a, b, .. } => {
                f(a.arg());
                f(b.arg())
            }
            MulAdd { a, b, c, .. } => {
                f(a.arg());
                f(b.arg());
                f(c.arg())
            }
            MulAddChain { c, terms, .. } => {
                f(c.arg());
                terms.iter().flatten().for_each(|o| f(o.arg()))
            }
            Dist { dist, .. } => dist.args.iter().for_each(|o| f(o.arg())),
            Pack { xs, .. } => xs.iter().for_each(|o| f(o.arg())),
            ShortBinary { .. } | CumSum { .. } | LogSumExp { .. } => self
                .run_op()
                .expect("a run instruction")
                .inputs()
                .into_iter()
                .for_each(f),
            Small { op, .. } | ShortDist { op, .. } => op.inputs().into_iter().for_each(f),
            Lanes(region) => region.originals.iter().for_each(|i| i.each_input(f)),
        }
    }

    /// The op a run instruction ([`ScalarInstr::ShortBinary`], `CumSum`, `LogSumExp`)
    /// stands for; `None` for the others.
    fn run_op(&self) -> Option<Op> {
        use ScalarInstr::*;
        let slot = |off: u32, len: u32| Slot { off, len };
        Some(match *self {
            ShortBinary {
                f,
                a,
                b,
                a_len,
                b_len,
                len,
                out,
            } => Op::Binary {
                f,
                a: a.run(a_len as u32),
                b: b.run(b_len as u32),
                out: slot(out, len as u32),
            },
            CumSum { x, len, out } => Op::CumSum {
                x: Arg::var(x as usize, len as usize),
                out: slot(out, len),
            },
            LogSumExp { x, len, out } => Op::LogSumExp {
                x: Arg::var(x as usize, len as usize),
                out: slot(out, 1),
            },
            _ => return None,
        })
    }

    /// Calls `f` on every argument, allowing it to be redirected (a scalar to a scalar of
    /// either space).
    // `dyn`: an op held by a block may itself be a block, and a generic `f` would instantiate
    // without end.
    pub fn for_each_input_mut(&mut self, f: &mut dyn FnMut(&mut Arg)) {
        use ScalarInstr::*;
        assert!(
            !matches!(self, Lanes(_)),
            "a lane region is redirected by its block (which runs its instructions again)"
        );
        if let Small { op, .. } | ShortDist { op, .. } = self {
            op.for_each_input_mut(f);
            return;
        }
        // A run instruction is redirected as its op, then made again (a redirected run may
        // change space, which `CumSum`/`LogSumExp` do not hold).
        if let Some(mut op) = self.run_op() {
            op.for_each_input_mut(f);
            *self = Self::from_op(&op, |_| None).expect("a run instruction's op stays short");
            return;
        }
        let mut redirect = |o: &mut Operand| {
            let mut a = o.arg();
            f(&mut a);
            *o = Operand::of(a);
        };
        // A redirect may change an operand's space: rebuild the specialised forms generically.
        let generic = |f: BinaryFn, a: u32, b: u32, av: bool, bv: bool, out: u32| Binary {
            f,
            a: Operand(if av { a } else { a | Operand::CONST }),
            b: Operand(if bv { b } else { b | Operand::CONST }),
            out,
        };
        let respecialised = match *self {
            AddVV { a, b, out } => Some(generic(BinaryFn::Add, a, b, true, true, out)),
            AddVC { a, c, out } => Some(generic(BinaryFn::Add, a, c, true, false, out)),
            AddCV { c, b, out } => Some(generic(BinaryFn::Add, c, b, false, true, out)),
            SubVV { a, b, out } => Some(generic(BinaryFn::Sub, a, b, true, true, out)),
            SubVC { a, c, out } => Some(generic(BinaryFn::Sub, a, c, true, false, out)),
            SubCV { c, b, out } => Some(generic(BinaryFn::Sub, c, b, false, true, out)),
            MulVV { a, b, out } => Some(generic(BinaryFn::Mul, a, b, true, true, out)),
            MulVC { a, c, out } => Some(generic(BinaryFn::Mul, a, c, true, false, out)),
            MulCV { c, b, out } => Some(generic(BinaryFn::Mul, c, b, false, true, out)),
            DivVV { a, b, out } => Some(generic(BinaryFn::Div, a, b, true, true, out)),
            DivVC { a, c, out } => Some(generic(BinaryFn::Div, a, c, true, false, out)),
            DivCV { c, b, out } => Some(generic(BinaryFn::Div, c, b, false, true, out)),
            _ => None,
        };
        if let Some(g) = respecialised {
            *self = g;
        }
        match self {
            Unary { x, .. } => redirect(x),
            Binary { f: fun, a, b, out } => {
                redirect(a);
                redirect(b);
                let op = Op::Binary {
                    f: *fun,
                    a: a.arg(),
                    b: b.arg(),
                    out: Slot { off: *out, len: 1 },
                };
                if let Some(special) = Self::from_op(&op, |_| None) {
                    *self = special;
                }
            }
            MulAdd { a, b, c, .. } => {
                redirect(a);
                redirect(b);
                redirect(c)
            }
            MulAddChain { c, terms, .. } => {
                redirect(c);
                terms.iter_mut().flatten().for_each(redirect)
            }
            Dist { dist, .. } => dist.args.iter_mut().for_each(redirect),
            Pack { xs, .. } => xs.iter_mut().for_each(redirect),
            _ => unreachable!("specialised forms and run instructions were handled above"),
        }
    }

    /// The instruction for `op`, if it is a scalar op a block can hold; `locate` gives the
    /// model location of an output slot (for a density's error message).
    fn from_op(op: &Op, locate: impl Fn(u32) -> Option<std::sync::Arc<str>>) -> Option<Self> {
        use ScalarInstr as I;
        let scalar = |a: &Arg| a.len == 1;
        // The run instructions split the buffers at their output unchecked: a value run they
        // read must end at or below it (the builder's layout guarantees it; a run that does
        // not stays a checked `Small`).
        let below = |a: &Arg, out: &Slot| !a.is_var() || a.off + a.len <= out.off;
        Some(match op {
            Op::Unary { f, x, out } if out.len == 1 && scalar(x) => I::Unary {
                f: *f,
                x: Operand::of(*x),
                out: out.off,
            },
            Op::Binary { f, a, b, out } if out.len == 1 && scalar(a) && scalar(b) => {
                let (oa, ob, out) = (Operand::of(*a), Operand::of(*b), out.off);
                let (ia, ib) = (oa.index() as u32, ob.index() as u32);
                match (f, oa.is_var(), ob.is_var()) {
                    (BinaryFn::Add, true, true) => I::AddVV { a: ia, b: ib, out },
                    (BinaryFn::Add, true, false) => I::AddVC { a: ia, c: ib, out },
                    (BinaryFn::Add, false, true) => I::AddCV { c: ia, b: ib, out },
                    (BinaryFn::Sub, true, true) => I::SubVV { a: ia, b: ib, out },
                    (BinaryFn::Sub, true, false) => I::SubVC { a: ia, c: ib, out },
                    (BinaryFn::Sub, false, true) => I::SubCV { c: ia, b: ib, out },
                    (BinaryFn::Mul, true, true) => I::MulVV { a: ia, b: ib, out },
                    (BinaryFn::Mul, true, false) => I::MulVC { a: ia, c: ib, out },
                    (BinaryFn::Mul, false, true) => I::MulCV { c: ia, b: ib, out },
                    (BinaryFn::Div, true, true) => I::DivVV { a: ia, b: ib, out },
                    (BinaryFn::Div, true, false) => I::DivVC { a: ia, c: ib, out },
                    (BinaryFn::Div, false, true) => I::DivCV { c: ia, b: ib, out },
                    _ => I::Binary {
                        f: *f,
                        a: oa,
                        b: ob,
                        out,
                    },
                }
            }
            Op::MulAdd { a, b, c, out } => I::MulAdd {
                a: Operand::of(*a),
                b: Operand::of(*b),
                c: Operand::of(*c),
                out: out.off,
            },
            Op::MulAddChain { c, terms, out } => I::MulAddChain {
                c: Operand::of(*c),
                terms: terms
                    .iter()
                    .map(|[a, b]| [Operand::of(*a), Operand::of(*b)])
                    .collect(),
                out: out.off,
            },
            Op::Dist {
                kind,
                args,
                propto,
                len: 1,
                scratch,
                out,
            } if args.iter().all(scalar) => I::Dist {
                dist: Box::new(ScalarDist {
                    kind: *kind,
                    propto: *propto,
                    args: args.iter().map(|a| Operand::of(*a)).collect(),
                    scratch: scratch.clone(),
                    location: locate(out.off),
                    lanes: kind.scalar_lanes(),
                }),
                out: out.off,
            },
            Op::Pack { xs, out } if xs.iter().all(scalar) => I::Pack {
                xs: xs.iter().map(|a| Operand::of(*a)).collect(),
                out: out.off,
            },
            Op::Binary { f, a, b, out }
                if f.is_arithmetic()
                    && (2..=SHORT_BINARY).contains(&out.len)
                    && [a, b]
                        .iter()
                        .all(|x| (x.len == 1 || x.len == out.len) && below(x, out)) =>
            {
                I::ShortBinary {
                    f: *f,
                    a: Operand::start(*a),
                    b: Operand::start(*b),
                    a_len: a.len as u8,
                    b_len: b.len as u8,
                    len: out.len as u8,
                    out: out.off,
                }
            }
            Op::CumSum { x, out } if x.is_var() && x.len <= SMALL_LEN && below(x, out) => {
                I::CumSum {
                    x: x.off,
                    len: x.len,
                    out: out.off,
                }
            }
            Op::LogSumExp { x, out } if x.is_var() && x.len <= SMALL_LEN && below(x, out) => {
                I::LogSumExp {
                    x: x.off,
                    len: x.len,
                    out: out.off,
                }
            }
            Op::Dist { kind, len, .. }
                if (2..=SHORT_DIST as u32).contains(len) && Self::is_small(op) =>
            {
                match kind.short_lanes() {
                    Some(lanes) => I::ShortDist {
                        op: Box::new(op.clone()),
                        location: locate(op.out().off),
                        lanes,
                    },
                    None => I::Small {
                        op: Box::new(op.clone()),
                        location: locate(op.out().off),
                    },
                }
            }
            _ if Self::is_small(op) => I::Small {
                op: Box::new(op.clone()),
                location: locate(op.out().off),
            },
            _ => return None,
        })
    }

    /// Whether `op` is one a block holds as [`ScalarInstr::Small`]: cheap elementwise, packing
    /// and reduction ops and densities, every run of at most [`SMALL_LEN`] values.
    fn is_small(op: &Op) -> bool {
        let short = |a: &Arg| a.len <= SMALL_LEN;
        let kind = matches!(
            op,
            Op::Unary { .. }
                | Op::Binary { .. }
                | Op::Sum { .. }
                | Op::Dot { .. }
                | Op::LogSumExp { .. }
                | Op::CumSum { .. }
                | Op::Pack { .. }
                | Op::Gather { .. }
                | Op::Dist { .. }
        );
        kind && op.out().len <= SMALL_LEN && op.inputs().iter().all(short)
    }
}

/// The instructions of one [`Op::Scalars`], in the order the ops ran, and how long the value
/// and constant buffers must be for every operand and output to lie inside them (computed
/// here, so the executor can check the buffers once per block instead of once per access).
#[derive(Debug, Clone)]
pub struct ScalarBlock {
    code: Box<[ScalarInstr]>,
    vals_len: usize,
    consts_len: usize,
}

impl ScalarBlock {
    pub fn new(code: Box<[ScalarInstr]>) -> ScalarBlock {
        let (mut vals_len, mut consts_len) = (0, 0);
        for i in code.iter() {
            vals_len = vals_len.max(i.out().range().end);
            i.for_each_input(|a| {
                if a.is_var() {
                    vals_len = vals_len.max(a.range().end);
                } else {
                    consts_len = consts_len.max(a.range().end);
                }
            });
        }
        ScalarBlock {
            code,
            vals_len,
            consts_len,
        }
    }

    /// The instructions.
    pub fn code(&self) -> &[ScalarInstr] {
        &self.code
    }

    /// One more than the largest value slot any instruction reads or writes.
    pub fn vals_len(&self) -> usize {
        self.vals_len
    }

    /// One more than the largest constant index any instruction reads.
    pub fn consts_len(&self) -> usize {
        self.consts_len
    }

    /// Calls `f` on the output of every instruction (a lane region's: of each instruction
    /// it stands for).
    pub fn for_each_output(&self, mut f: impl FnMut(Slot)) {
        for i in self.code.iter() {
            match i {
                ScalarInstr::Lanes(region) => region.originals.iter().for_each(|i| f(i.out())),
                other => f(other.out()),
            }
        }
    }

    /// Every argument the block reads (including slots its own instructions write).
    pub fn inputs(&self) -> Vec<Arg> {
        let mut v = Vec::new();
        for i in self.code.iter() {
            i.for_each_input(|a| v.push(a));
        }
        v
    }

    /// Calls `f` on every argument the block reads, allowing it to be redirected. A lane
    /// region's instructions go back into the block one by one (its rows name the old slots).
    pub fn for_each_input_mut(&mut self, mut f: impl FnMut(&mut Arg)) {
        let mut code: Vec<ScalarInstr> = Vec::with_capacity(self.code.len());
        for i in std::mem::take(&mut self.code).into_vec() {
            match i {
                ScalarInstr::Lanes(region) => code.extend(region.originals.into_vec()),
                other => code.push(other),
            }
        }
        let mut code = code.into_boxed_slice();
        for i in code.iter_mut() {
            i.for_each_input_mut(&mut f as &mut dyn FnMut(&mut Arg));
        }
        *self = ScalarBlock::new(code);
    }
}

impl Graph {
    /// Replaces each run of at least two consecutive scalar ops (unary, binary, multiply-add,
    /// one-term densities), packs and short ops ([`SMALL_LEN`]) by one [`Op::Scalars`]; returns how many ops were absorbed. Run
    /// last: the block's `out` is the span of its instructions' outputs, and other rewrites
    /// do not look inside blocks.
    pub fn fuse_scalar_blocks(&mut self) -> usize {
        let old = std::mem::take(&mut self.ops);
        let mut ops = Vec::with_capacity(old.len());
        let mut run: Vec<ScalarInstr> = Vec::new();
        let mut absorbed = 0;
        let locations = &self.locations;
        let locate = |slot: u32| {
            let at = locations.partition_point(|(s, _)| *s <= slot);
            at.checked_sub(1).map(|i| locations[i].1.clone())
        };
        let mut flush =
            |run: &mut Vec<ScalarInstr>, pending: &mut Option<Op>, ops: &mut Vec<Op>| {
                if run.len() >= 2 {
                    absorbed += run.len();
                    let lo = run.iter().map(|i| i.out().off).min().unwrap_or(0);
                    let hi = run
                        .iter()
                        .map(|i| i.out().range().end as u32)
                        .max()
                        .unwrap_or(0);
                    ops.push(Op::Scalars {
                        block: Box::new(ScalarBlock::new(std::mem::take(run).into_boxed_slice())),
                        out: Slot {
                            off: lo,
                            len: hi - lo,
                        },
                    });
                } else if let Some(op) = pending.take() {
                    ops.push(op);
                }
                run.clear();
                *pending = None;
            };
        // The op of a run of one, kept as it is when no second op follows.
        let mut pending: Option<Op> = None;
        for op in old {
            match ScalarInstr::from_op(&op, locate) {
                Some(instr) => {
                    if run.is_empty() {
                        pending = Some(op);
                    }
                    run.push(instr);
                }
                None => {
                    flush(&mut run, &mut pending, &mut ops);
                    ops.push(op);
                }
            }
        }
        flush(&mut run, &mut pending, &mut ops);
        self.ops = ops;
        absorbed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instr(op: Op) -> ScalarInstr {
        ScalarInstr::from_op(&op, |_| None).expect("a block holds it")
    }

    fn slot(off: u32, len: u32) -> Slot {
        Slot { off, len }
    }

    /// Redirecting a run instruction's input moves the whole run, to either space; a running
    /// sum or `log_sum_exp` of constants (which their instructions do not hold) becomes a
    /// general short op.
    #[test]
    fn run_instructions_redirect_as_their_ops() {
        let to_const = |a: &mut Arg| {
            if a.is_var() && a.off == 10 {
                *a = Arg::konst(2, a.len());
            }
        };
        let mut sub = instr(Op::Binary {
            f: BinaryFn::Sub,
            a: Arg::var(5, 1),
            b: Arg::var(10, 3),
            out: slot(20, 3),
        });
        assert!(matches!(sub, ScalarInstr::ShortBinary { .. }));
        sub.for_each_input_mut(&mut { to_const });
        let mut inputs = Vec::new();
        sub.for_each_input(|a| inputs.push(a));
        assert_eq!(inputs, [Arg::var(5, 1), Arg::konst(2, 3)]);
        assert!(matches!(sub, ScalarInstr::ShortBinary { b_len: 3, .. }));

        // A value run that does not lie below the output stays a checked general op.
        let above = instr(Op::LogSumExp {
            x: Arg::var(30, 4),
            out: slot(20, 1),
        });
        assert!(matches!(above, ScalarInstr::Small { .. }));

        let mut cumsum = instr(Op::CumSum {
            x: Arg::var(10, 4),
            out: slot(20, 4),
        });
        assert!(matches!(cumsum, ScalarInstr::CumSum { .. }));
        cumsum.for_each_input_mut(&mut |a: &mut Arg| a.off -= 3);
        assert!(matches!(
            cumsum,
            ScalarInstr::CumSum {
                x: 7,
                len: 4,
                out: 20
            }
        ));

        let mut lse = instr(Op::LogSumExp {
            x: Arg::var(10, 4),
            out: slot(20, 1),
        });
        assert!(matches!(lse, ScalarInstr::LogSumExp { .. }));
        lse.for_each_input_mut(&mut { to_const });
        match lse {
            ScalarInstr::Small { op, .. } => {
                assert!(matches!(*op, Op::LogSumExp { x, .. } if x == Arg::konst(2, 4)))
            }
            other => panic!("{other:?}"),
        }
    }
}
