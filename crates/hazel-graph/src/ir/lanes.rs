//! Lane regions: the repeated iterations of a scalar block, run [`LANES`] at a time
//! ([`Graph::lane_scalar_blocks`]).
//!
//! Why: a loop over observations whose body calls a user function (an IRT model's
//! rating-scale or partial-credit likelihood: `theta * alpha - beta - kappa`, a running sum,
//! a `log_sum_exp`, the observed category's log softmax) unrolls into thousands of copies of
//! the same few short instructions. One at a time, each copy pays the block's dispatch and
//! its `exp`s run one value or one pair at a time. Run side by side, one dispatch serves
//! [`LANES`] copies and their `exp`s fill a vector.
//!
//! An *iteration* is a set of consecutive instructions linked by what they read from each
//! other (a value read by many instructions, such as `kappa` or an item's parameter, is
//! shared, and does not link its readers). Iterations whose instructions are the same up to
//! the slots and constants they name share a [`Template`]: its ops name their operands as
//! columns of a per-iteration row (the output slot of each op, then each operand from outside
//! the iteration). A [`LaneRegion`] is a run of consecutive iterations of supported
//! instructions; it keeps the original instructions (what the block reads and writes, and
//! how it would run them one by one).
//!
//! The executor (`crate::exec::cpu::lanes`) gives the original instructions' bits: each lane
//! computes its iteration's values and adjoints with the same rules in the same order, and
//! what an iteration adds to an adjoint outside itself is kept as a *contribution* and added
//! after the region's lanes have run, in the order the instructions would have added them
//! (iterations last to first, each iteration's instructions last to first), so every slot
//! receives the same additions in the same order.

use super::graph::{Graph, Op, Slot};
use super::ops::{BinaryFn, DistKind};
use super::scalar::{Operand, ScalarBlock, ScalarInstr};
use crate::exec::cpu::dists::NO_SCRATCH;
use std::collections::HashMap;

/// Iterations run side by side (one AVX-512 register of `f64`s; four SSE2 pairs).
pub const LANES: usize = 8;

/// Fewest iterations worth a region (below, the rows and the contributions cost more than
/// the dispatch they save).
const MIN_ITERATIONS: usize = 16;

/// A value made in the block and read by more instructions than this is shared: its readers
/// are not linked into one iteration through it.
const SHARED_READERS: usize = 8;

/// An instruction reading from more iterations than this (a sum of many terms) is not linked
/// to them: it stands alone.
const MAX_JOINED: usize = 8;

/// `+ − × ÷`: the arithmetic a template op applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arith {
    Add,
    Sub,
    Mul,
    Div,
}

impl Arith {
    fn of(f: BinaryFn) -> Option<Arith> {
        Some(match f {
            BinaryFn::Add => Arith::Add,
            BinaryFn::Sub => Arith::Sub,
            BinaryFn::Mul => Arith::Mul,
            BinaryFn::Div => Arith::Div,
            _ => return None,
        })
    }

    /// The op's function.
    pub fn f(self) -> BinaryFn {
        match self {
            Arith::Add => BinaryFn::Add,
            Arith::Sub => BinaryFn::Sub,
            Arith::Mul => BinaryFn::Mul,
            Arith::Div => BinaryFn::Div,
        }
    }
}

/// A template operand: element `e` of the run at column `col` of the iteration's row, a value
/// slot (`var`) or a constant index. Columns below the template's op count are the outputs of
/// the iteration's own ops ([`Src::is_internal`]); the others are read from outside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Src {
    pub col: u16,
    pub e: u16,
    pub var: bool,
    /// For an operand among the iteration's own values, its place there
    /// (`Template::offsets[col] + e`); [`Src::OUTSIDE`] for the others.
    pub own: u16,
}

impl Src {
    pub const OUTSIDE: u16 = u16::MAX;

    /// Element `e` of op `t`'s output, which starts at `offset` among the iteration's own
    /// values.
    pub fn output(t: usize, offset: u16, e: u16) -> Src {
        Src {
            col: t as u16,
            e,
            var: true,
            own: offset + e,
        }
    }
}

/// One op of a template, the instruction of each iteration it stands for: the output is the
/// run at the op's own column.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LaneOp {
    /// A scalar `a f b` (the `AddVV`… instructions).
    Bin { f: Arith, a: Src, b: Src },
    /// [`ScalarInstr::ShortBinary`]: runs of `len` or broadcast scalars (`a_len`/`b_len` 1).
    Short {
        f: Arith,
        a: Src,
        b: Src,
        a_len: u8,
        b_len: u8,
        len: u8,
    },
    /// [`ScalarInstr::Pack`].
    Pack { xs: Box<[Src]> },
    /// [`ScalarInstr::CumSum`].
    CumSum { x: Src, len: u8 },
    /// [`ScalarInstr::LogSumExp`].
    LogSumExp { x: Src, len: u8 },
    /// [`ScalarInstr::Binary`] `log_sum_exp(a, b)` (a two-component `log_mix`).
    LogSumExp2 { a: Src, b: Src },
    /// [`ScalarInstr::Dist`] of a family with a branch-free rule: one element's density, its
    /// arguments one value each. `grads`: the arguments whose adjoints its gradient rule adds
    /// to (bit `k`, those with partials in scratch). Its partials are kept among the
    /// iteration's own values, after every op's outputs ([`Template::partials`]).
    Dist {
        kind: DistKind,
        propto: bool,
        args: Box<[Src]>,
        grads: u8,
    },
    /// [`ScalarInstr::ShortDist`]: a density of `len` (2 to `SHORT_DIST`) elements, argument
    /// `k` a run of `len` values where bit `k` of `vectors` is set, else one value; `grads` as
    /// for [`LaneOp::Dist`]. Its partials (`len` per vector argument, one per scalar) are kept
    /// as a [`LaneOp::Dist`]'s.
    ShortDist {
        kind: DistKind,
        propto: bool,
        args: Box<[Src]>,
        vectors: u8,
        len: u8,
        grads: u8,
    },
}

impl LaneOp {
    /// How many values the op writes.
    pub fn out_len(&self) -> usize {
        match self {
            LaneOp::Bin { .. }
            | LaneOp::LogSumExp { .. }
            | LaneOp::LogSumExp2 { .. }
            | LaneOp::Dist { .. }
            | LaneOp::ShortDist { .. } => 1,
            LaneOp::Short { len, .. } | LaneOp::CumSum { len, .. } => *len as usize,
            LaneOp::Pack { xs } => xs.len(),
        }
    }

    /// How many partials the op keeps for its gradient rule (a density's, one per argument).
    pub fn partials_len(&self) -> usize {
        match self {
            LaneOp::Dist { args, .. } | LaneOp::ShortDist { args, .. } => {
                (0..args.len()).map(|k| self.arg_run(k)).sum()
            }
            _ => 0,
        }
    }

    /// A density's argument `k`: how many values it reads there, and how many partials it
    /// keeps for it (one for a scalar argument, its sum).
    #[inline(always)]
    pub fn arg_run(&self, k: usize) -> usize {
        match self {
            LaneOp::ShortDist { vectors, len, .. } if vectors & (1 << k) != 0 => *len as usize,
            _ => 1,
        }
    }

    /// The contributions of the op's gradient rule to adjoints outside the iteration, in the
    /// order the rule adds them: `(operand, element)`.
    pub fn for_each_contribution(&self, mut f: impl FnMut(Src, u16)) {
        let mut k = 0;
        self.for_each_operand(|s, len| {
            // A density adds to the adjoints of the arguments with partials only.
            let adds = match self {
                LaneOp::Dist { grads, .. } | LaneOp::ShortDist { grads, .. } => {
                    grads & (1 << k) != 0
                }
                _ => true,
            };
            k += 1;
            if s.var && adds {
                // The running sum's rule adds from the last element back.
                let rev = matches!(self, LaneOp::CumSum { .. });
                let mut each = |e: u16| f(s, e);
                if rev {
                    (0..len as u16).rev().for_each(&mut each)
                } else {
                    (0..len as u16).for_each(&mut each)
                }
            }
        })
    }

    /// Every operand, with the length of the run the op reads there, in the order the
    /// op's rules take them.
    pub fn for_each_operand(&self, mut f: impl FnMut(Src, u8)) {
        match self {
            LaneOp::Bin { a, b, .. } | LaneOp::LogSumExp2 { a, b } => {
                f(*a, 1);
                f(*b, 1)
            }
            LaneOp::Short {
                a, b, a_len, b_len, ..
            } => {
                f(*a, *a_len);
                f(*b, *b_len)
            }
            LaneOp::Pack { xs } | LaneOp::Dist { args: xs, .. } => xs.iter().for_each(|x| f(*x, 1)),
            LaneOp::CumSum { x, len } | LaneOp::LogSumExp { x, len } => f(*x, *len),
            LaneOp::ShortDist {
                args, vectors, len, ..
            } => {
                for (k, a) in args.iter().enumerate() {
                    f(*a, if vectors & (1 << k) != 0 { *len } else { 1 })
                }
            }
        }
    }
}

/// Iterations of one shape: their ops, and one row per iteration, [`LANES`] rows side by side
/// per group.
#[derive(Debug, Clone)]
pub(crate) struct Template {
    pub ops: Box<[LaneOp]>,
    /// Where each op's output lies in the iteration's own values, which the lanes keep side
    /// by side in scratch (value `i` of lane `l` of group `g` at
    /// `values + (g · width + i) · LANES + l`), so that reading them is one vector load.
    pub offsets: Box<[u16]>,
    /// Where each density op's partials lie in the iteration's own values (after every op's
    /// outputs; 0 for the other ops).
    pub partials: Box<[u16]>,
    /// Values per iteration (the outputs, then the densities' partials).
    pub width: usize,
    /// Which of those values something outside the iteration reads: these are stored in
    /// their slots too (and their adjoints read from there).
    pub exported: Box<[bool]>,
    /// Where the lanes' values start, from the region's scratch.
    pub values: usize,
    /// Columns of a row: each op's output slot, then each outside operand's slot or constant
    /// index, then where the iteration's contributions start (see [`LaneRegion`]).
    pub cols: usize,
    /// Contributions per iteration.
    pub contributions: usize,
    /// Group `g`'s column `c` is `rows[g * cols + c]`, lane by lane; a group's unused lanes
    /// repeat its first lane.
    pub rows: Box<[[u32; LANES]]>,
    /// Iterations (the last group holds the remainder).
    pub iterations: usize,
}

impl Template {
    /// Number of groups.
    pub fn groups(&self) -> usize {
        self.iterations.div_ceil(LANES)
    }

    /// Group `g`'s columns, and how many of its lanes are iterations.
    pub fn group(&self, g: usize) -> (&[[u32; LANES]], usize) {
        let rows = &self.rows[g * self.cols..(g + 1) * self.cols];
        (rows, (self.iterations - g * LANES).min(LANES))
    }

    /// The column holding where each lane's contributions start.
    pub fn contribution_col(&self) -> usize {
        self.cols - 1
    }
}

/// One slot's contributions: `places[start..start + len]`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SlotAdds {
    pub slot: u32,
    pub start: u32,
    pub len: u32,
}

/// Consecutive iterations of a block, run side by side ([`ScalarInstr::Lanes`]).
#[derive(Debug, Clone)]
pub struct LaneRegion {
    /// The instructions the region stands for, in order.
    pub(crate) originals: Box<[ScalarInstr]>,
    pub(crate) templates: Box<[Template]>,
    /// The contributions, iteration by iteration in block order, each iteration's in the
    /// reverse of the order its rules add them: read from the end back, the order the
    /// original instructions add them. Added slot by slot (`adds`: each slot with its
    /// contributions' places in that order), since only each slot's own order matters, and
    /// one slot's sum then stays in a register: a slot every iteration adds to (a shared
    /// `kappa`) is one dependent chain of additions whatever the order.
    pub(crate) contributions: usize,
    pub(crate) adds: Box<[SlotAdds]>,
    /// The places of `adds`' contributions, one run per slot.
    pub(crate) places: Box<[u32]>,
    /// Where the region's scratch starts: the templates' values (`values` values), then
    /// one group's adjoints (`adjoints` values), then the contributions (`contributions`).
    pub(crate) scratch: u32,
    pub(crate) values: usize,
    pub(crate) adjoints: usize,
}

impl LaneRegion {
    /// Where the region's scratch records whether its last forward run fell back to its
    /// original instructions (a density's branch-free rule refused an element): nonzero if
    /// so, and the gradient rule then runs the originals' too.
    pub(crate) fn fallback_at(&self) -> usize {
        self.scratch as usize + self.values + self.adjoints + self.contributions
    }

    /// Every op of every template (what the region's iterations are made of).
    pub fn template_ops(&self) -> impl Iterator<Item = &LaneOp> {
        self.templates.iter().flat_map(|t| t.ops.iter())
    }

    /// Calls `f` on each slot of an iteration's own values that nothing outside it reads:
    /// the lanes keep those in scratch, so neither the slot nor its adjoint is ever touched.
    pub(crate) fn for_each_private_slot(&self, mut f: impl FnMut(usize)) {
        for tpl in self.templates.iter() {
            for g in 0..tpl.groups() {
                let (rows, lanes) = tpl.group(g);
                for (t, op) in tpl.ops.iter().enumerate() {
                    let first = tpl.offsets[t] as usize;
                    for e in (0..op.out_len()).filter(|e| !tpl.exported[first + e]) {
                        rows[t][..lanes].iter().for_each(|&s| f(s as usize + e));
                    }
                }
            }
        }
    }
}

/// A block's instructions with their runs of repeated iterations made [`LaneRegion`]s; the
/// regions' contributions are given scratch from `n_scratch` on (which grows by what they use).
/// `reads[s]` counts the readers of slot `s` in the whole graph (each instruction, each op
/// and the graph's result).
fn with_regions(
    code: Box<[ScalarInstr]>,
    reads: &[u32],
    n_scratch: &mut usize,
) -> Box<[ScalarInstr]> {
    let iterations = iterations(&code);
    let mut out: Vec<ScalarInstr> = Vec::with_capacity(code.len());
    let mut code = code.into_vec().into_iter().map(Some).collect::<Vec<_>>();
    let mut i = 0;
    for run in laneable_runs(&code, &iterations) {
        // The instructions before the run stay as they are.
        out.extend(code[i..run.start].iter_mut().map(|c| c.take().unwrap()));
        let originals: Box<[ScalarInstr]> = code[run.clone()]
            .iter_mut()
            .map(|c| c.take().unwrap())
            .collect();
        match region(originals, run.start, &iterations, reads, n_scratch) {
            Ok(lanes) => out.push(ScalarInstr::Lanes(Box::new(lanes))),
            Err(originals) => out.extend(originals.into_vec()),
        }
        i = run.end;
    }
    out.extend(code[i..].iter_mut().map(|c| c.take().unwrap()));
    out.into_boxed_slice()
}

/// The iteration of each instruction: `(first, len)`, the run of consecutive instructions
/// it belongs to, or `None` where its iteration is not one run.
fn iterations(code: &[ScalarInstr]) -> Vec<Option<std::ops::Range<usize>>> {
    // Which instruction writes each slot.
    let mut producer: HashMap<u32, usize> = HashMap::new();
    for (i, instr) in code.iter().enumerate() {
        for s in instr.out().range() {
            producer.insert(s as u32, i);
        }
    }
    let producers_of = |instr: &ScalarInstr, i: usize| {
        let mut ps: Vec<usize> = Vec::new();
        instr.for_each_input(|a| {
            if a.is_var() {
                for s in a.range() {
                    if let Some(&p) = producer.get(&(s as u32)) {
                        if p < i && !ps.contains(&p) {
                            ps.push(p);
                        }
                    }
                }
            }
        });
        ps
    };
    let mut readers = vec![0usize; code.len()];
    for (i, instr) in code.iter().enumerate() {
        for p in producers_of(instr, i) {
            readers[p] += 1;
        }
    }
    // Union–find over "reads a value of", shared values excepted.
    let mut parent: Vec<usize> = (0..code.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for (i, instr) in code.iter().enumerate() {
        let mut roots: Vec<usize> = Vec::new();
        for p in producers_of(instr, i) {
            if readers[p] <= SHARED_READERS {
                let r = root(&mut parent, p);
                if !roots.contains(&r) {
                    roots.push(r);
                }
            }
        }
        if roots.len() <= MAX_JOINED {
            for r in roots {
                parent[r] = i;
            }
        }
    }
    let ids: Vec<usize> = (0..code.len()).map(|i| root(&mut parent, i)).collect();
    // An iteration is kept where its instructions are consecutive.
    let mut span: HashMap<usize, (usize, usize, usize)> = HashMap::new();
    for (i, &id) in ids.iter().enumerate() {
        let e = span.entry(id).or_insert((i, i, 0));
        e.1 = i;
        e.2 += 1;
    }
    ids.iter()
        .map(|id| {
            let (first, last, n) = span[id];
            (last - first + 1 == n).then_some(first..last + 1)
        })
        .collect()
}

/// Whether a region can hold the instruction.
fn laneable(i: &ScalarInstr) -> bool {
    use ScalarInstr as I;
    if i.arithmetic().is_some() {
        return true;
    }
    match i {
        I::Pack { .. } | I::CumSum { .. } | I::LogSumExp { .. } => true,
        I::ShortBinary { f, .. } => Arith::of(*f).is_some(),
        I::Binary { f, .. } => matches!(f, BinaryFn::LogSumExp),
        I::Dist { dist, .. } => dist.lanes.is_some() && dist.kind.lane_dist().is_some(),
        I::ShortDist { op, .. } => {
            matches!(&**op, Op::Dist { kind, args, .. } if kind.lane_short().is_some() && args.len() <= 4)
        }
        _ => false,
    }
}

/// The maximal runs of whole, consecutive iterations of laneable instructions, at least
/// [`MIN_ITERATIONS`] iterations long, each with a `log_sum_exp`: what pays for the lanes'
/// rows and contributions is the `exp`s they run as vectors (measured: iterations of only
/// `+ − × ÷`, such as four additions, take 20% more instructions in lanes).
fn laneable_runs(
    code: &[Option<ScalarInstr>],
    iterations: &[Option<std::ops::Range<usize>>],
) -> Vec<std::ops::Range<usize>> {
    let mut runs = Vec::new();
    let (mut start, mut count) = (0, 0);
    let mut i = 0;
    let close = |start: usize, end: usize, count: usize, runs: &mut Vec<_>| {
        if count >= MIN_ITERATIONS {
            runs.push(start..end);
        }
    };
    while i < code.len() {
        let ok = match &iterations[i] {
            Some(it) => {
                let instrs = || code[it.clone()].iter().flatten();
                instrs().all(laneable)
                    && instrs().any(|i| {
                        matches!(
                            i,
                            ScalarInstr::LogSumExp { .. }
                                | ScalarInstr::Binary {
                                    f: BinaryFn::LogSumExp,
                                    ..
                                }
                        )
                    })
            }
            None => false,
        };
        if ok {
            let it = iterations[i].clone().unwrap();
            if count == 0 {
                start = it.start;
            }
            count += 1;
            i = it.end;
        } else {
            close(start, i, count, &mut runs);
            count = 0;
            i += 1;
        }
    }
    close(start, i, count, &mut runs);
    runs
}

/// Names an iteration's operands as template columns: its own values by place, the others
/// as new outside columns (their slots or constant indexes in `outside`, in order).
struct Operands<'a> {
    outs: &'a [Slot],
    offsets: &'a [u16],
    outside: Vec<u32>,
}

impl Operands<'_> {
    /// The run of `len` values at `o`; `None` where it is partly the iteration's own values
    /// or spans two of its ops' outputs.
    fn src(&mut self, o: Operand, len: u32) -> Option<Src> {
        let idx = o.index() as u32;
        if o.is_var() {
            if let Some(t) = self
                .outs
                .iter()
                .position(|s| s.range().contains(&(idx as usize)))
            {
                let e = idx - self.outs[t].off;
                return (e + len <= self.outs[t].len).then_some(Src::output(
                    t,
                    self.offsets[t],
                    e as u16,
                ));
            }
            if self
                .outs
                .iter()
                .any(|s| s.off < idx + len && idx < s.off + s.len)
            {
                return None;
            }
        }
        self.outside.push(idx);
        Some(Src {
            col: (self.outs.len() + self.outside.len() - 1) as u16,
            e: 0,
            var: o.is_var(),
            own: Src::OUTSIDE,
        })
    }

    /// The template op of `instr`, if a region holds it.
    fn op(&mut self, instr: &ScalarInstr) -> Option<LaneOp> {
        use ScalarInstr as I;
        let v = |i: u32| Operand::of(super::graph::Arg::var(i as usize, 1));
        let c = |i: u32| Operand::of(super::graph::Arg::konst(i as usize, 1));
        if let Some((f, a, b)) = instr.arithmetic() {
            return Some(LaneOp::Bin {
                f: Arith::of(f)?,
                a: self.src(a, 1)?,
                b: self.src(b, 1)?,
            });
        }
        match *instr {
            I::ShortBinary {
                f,
                a,
                b,
                a_len,
                b_len,
                len,
                ..
            } => Some(LaneOp::Short {
                f: Arith::of(f)?,
                a: self.src(a, a_len as u32)?,
                b: self.src(b, b_len as u32)?,
                a_len,
                b_len,
                len,
            }),
            I::Pack { ref xs, .. } => {
                let xs: Option<Box<[Src]>> = xs.iter().map(|x| self.src(*x, 1)).collect();
                Some(LaneOp::Pack { xs: xs? })
            }
            I::CumSum { x, len, .. } => Some(LaneOp::CumSum {
                x: self.src(v(x), len)?,
                len: u8::try_from(len).ok()?,
            }),
            I::LogSumExp { x, len, .. } => Some(LaneOp::LogSumExp {
                x: self.src(v(x), len)?,
                len: u8::try_from(len).ok()?,
            }),
            I::Binary {
                f: BinaryFn::LogSumExp,
                a,
                b,
                ..
            } => Some(LaneOp::LogSumExp2 {
                a: self.src(a, 1)?,
                b: self.src(b, 1)?,
            }),
            I::ShortDist { ref op, .. } => {
                let Op::Dist {
                    kind,
                    ref args,
                    propto,
                    len,
                    scratch: ref sc,
                    ..
                } = **op
                else {
                    return None;
                };
                let mut vectors = 0u8;
                let mut srcs = Vec::with_capacity(args.len());
                for (k, a) in args.iter().enumerate() {
                    let first = if a.is_var() { v(a.off) } else { c(a.off) };
                    srcs.push(self.src(first, a.len)?);
                    vectors |= ((a.len != 1) as u8) << k;
                }
                let grads = with_partials(sc);
                Some(LaneOp::ShortDist {
                    kind,
                    propto,
                    args: srcs.into(),
                    vectors,
                    len: u8::try_from(len).ok()?,
                    grads,
                })
            }
            I::Dist { ref dist, .. } => {
                let args: Option<Box<[Src]>> = dist.args.iter().map(|a| self.src(*a, 1)).collect();
                let grads = with_partials(&dist.scratch);
                Some(LaneOp::Dist {
                    kind: dist.kind,
                    propto: dist.propto,
                    args: args?,
                    grads,
                })
            }
            _ => None,
        }
    }
}

/// The arguments of a density (bit `k`) whose partials it keeps in scratch, given where
/// (`NO_SCRATCH`: none): those its gradient rule adds to.
fn with_partials(scratch: &[u32]) -> u8 {
    (scratch.iter().enumerate())
        .filter(|(_, &o)| o != NO_SCRATCH)
        .fold(0u8, |m, (k, _)| m | 1 << k)
}

/// An iteration as a template: its ops, its row (see [`template_of`]) and which of its
/// values are exported.
type TemplateParts = (Vec<LaneOp>, Vec<u32>, Vec<bool>);

/// One iteration as a template: its ops, and its row's slots and constants (outputs, then
/// outside operands); `None` where an operand run of the iteration's own values is not one
/// op's output.
fn template_of(code: &[ScalarInstr], reads: &[u32]) -> Option<TemplateParts> {
    let outs: Vec<Slot> = code.iter().map(|i| i.out()).collect();
    let offsets: Vec<u16> = outs
        .iter()
        .scan(0u16, |at, o| {
            let first = *at;
            *at += o.len as u16;
            Some(first)
        })
        .collect();
    // A value is exported when it has readers besides the iteration's own instructions.
    let mut own_reads: HashMap<usize, u32> = HashMap::new();
    for instr in code {
        instr.for_each_input(|a| {
            if a.is_var() {
                for s in a.range() {
                    if outs.iter().any(|o| o.range().contains(&s)) {
                        *own_reads.entry(s).or_default() += 1;
                    }
                }
            }
        });
    }
    let exported: Vec<bool> = outs
        .iter()
        .flat_map(|o| o.range())
        .map(|s| reads[s] > own_reads.get(&s).copied().unwrap_or(0))
        .collect();
    let mut operands = Operands {
        outs: &outs,
        offsets: &offsets,
        outside: Vec::new(),
    };
    let mut ops = Vec::with_capacity(code.len());
    for instr in code {
        ops.push(operands.op(instr)?);
    }
    let outside = operands.outside;
    let mut row: Vec<u32> = outs.iter().map(|s| s.off).collect();
    row.extend(outside);
    Some((ops, row, exported))
}

/// A template found in a region: its ops, its exported values, its iterations' rows.
type Found = (Vec<LaneOp>, Vec<bool>, Vec<Vec<u32>>);

/// The region of the iterations making up `originals` (which start at instruction `at` of
/// the block), or the instructions back where one cannot be made.
fn region(
    originals: Box<[ScalarInstr]>,
    at: usize,
    iterations: &[Option<std::ops::Range<usize>>],
    reads: &[u32],
    n_scratch: &mut usize,
) -> Result<LaneRegion, Box<[ScalarInstr]>> {
    // The region's outputs: an operand from outside an iteration must not be one of them
    // (its adjoint would be read before every contribution to it had been added).
    let lo = originals.iter().map(|i| i.out().off).min().unwrap_or(0);
    let hi = originals
        .iter()
        .map(|i| i.out().off + i.out().len)
        .max()
        .unwrap_or(0);
    let mut shapes: HashMap<(Vec<LaneOp>, Vec<bool>), usize> = HashMap::new();
    // Per template: its ops, its exported values, and its iterations' rows.
    let mut found: Vec<Found> = Vec::new();
    // Per iteration in block order: its template and its index there.
    let mut order: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < originals.len() {
        let it = iterations[at + i]
            .clone()
            .expect("a laneable run holds whole iterations");
        let len = it.len();
        let Some((ops, row, exported)) = template_of(&originals[i..i + len], reads) else {
            return Err(originals);
        };
        let outside_overlaps = ops.iter().any(|op| {
            let mut bad = false;
            op.for_each_operand(|s, len| {
                if s.var && s.own == Src::OUTSIDE {
                    let off = row[s.col as usize];
                    bad |= off < hi && lo < off + len as u32;
                }
            });
            bad
        });
        if outside_overlaps {
            return Err(originals);
        }
        let t = *shapes
            .entry((ops.clone(), exported.clone()))
            .or_insert_with(|| {
                found.push((ops, exported, Vec::new()));
                found.len() - 1
            });
        order.push((t, found[t].2.len()));
        found[t].2.push(row);
        i += len;
    }
    // Contributions: iteration by iteration in block order, each one's in the reverse of the
    // order its rules add them, so that the list read backwards is the original order.
    let mut contribution_slots: Vec<u32> = Vec::new();
    let mut starts: Vec<Vec<u32>> = found
        .iter()
        .map(|(_, _, rows)| vec![0; rows.len()])
        .collect();
    for &(t, k) in &order {
        let (ops, _, rows) = &found[t];
        let row = &rows[k];
        starts[t][k] = contribution_slots.len() as u32;
        let mut slots: Vec<u32> = Vec::new();
        for op in ops.iter().rev() {
            op.for_each_contribution(|s, e| {
                if s.col as usize >= ops.len() {
                    slots.push(row[s.col as usize] + e as u32);
                }
            });
        }
        contribution_slots.extend(slots.iter().rev());
    }
    let mut values = 0;
    let templates: Vec<Template> = found
        .into_iter()
        .zip(starts)
        .map(|((ops, mut exported, rows), starts)| {
            let n = ops.len();
            let mut offsets = Vec::with_capacity(n);
            let mut width = 0;
            for op in &ops {
                offsets.push(width as u16);
                width += op.out_len();
            }
            debug_assert_eq!(width, exported.len());
            // The densities' partials, after the outputs: no slot, nothing outside reads them.
            let mut partials = Vec::with_capacity(n);
            for op in &ops {
                partials.push(if op.partials_len() > 0 {
                    width as u16
                } else {
                    0
                });
                width += op.partials_len();
            }
            exported.resize(width, false);
            let contributions = ops
                .iter()
                .map(|op| {
                    let mut k = 0;
                    op.for_each_contribution(|s, _| k += (s.col as usize >= n) as usize);
                    k
                })
                .sum();
            let cols = rows[0].len() + 1;
            let mut lanes = Vec::with_capacity(rows.len().div_ceil(LANES) * cols);
            for (group, first) in rows.chunks(LANES).zip(starts.chunks(LANES)) {
                // Unused lanes repeat the first.
                let lane = |l: usize| if l < group.len() { l } else { 0 };
                lanes.extend((0..cols - 1).map(|c| std::array::from_fn(|l| group[lane(l)][c])));
                lanes.push(std::array::from_fn(|l| first[lane(l)]));
            }
            let template = Template {
                ops: ops.into(),
                offsets: offsets.into(),
                partials: partials.into(),
                width,
                exported: exported.into(),
                values,
                cols,
                contributions,
                rows: lanes.into(),
                iterations: rows.len(),
            };
            values += template.groups() * width * LANES;
            template
        })
        .collect();
    let adjoints = templates.iter().map(|t| t.width).max().unwrap_or(0) * LANES;
    // Each slot's contributions in the original order (the list from its end back).
    let mut by_slot: HashMap<u32, Vec<u32>> = HashMap::new();
    let mut slot_order: Vec<u32> = Vec::new();
    for (place, &slot) in contribution_slots.iter().enumerate().rev() {
        by_slot
            .entry(slot)
            .or_insert_with(|| {
                slot_order.push(slot);
                Vec::new()
            })
            .push(place as u32);
    }
    let (mut adds, mut places) = (Vec::new(), Vec::new());
    for slot in slot_order {
        let run = &by_slot[&slot];
        adds.push(SlotAdds {
            slot,
            start: places.len() as u32,
            len: run.len() as u32,
        });
        places.extend_from_slice(run);
    }
    let scratch = *n_scratch as u32;
    // (The last value: whether the last forward run fell back to the originals.)
    *n_scratch += values + adjoints + contribution_slots.len() + 1;
    Ok(LaneRegion {
        originals,
        templates: templates.into(),
        contributions: contribution_slots.len(),
        adds: adds.into(),
        places: places.into(),
        scratch,
        values,
        adjoints,
    })
}

impl Graph {
    /// Makes the runs of repeated iterations in each scalar block [`LaneRegion`]s
    /// (see the module comment); returns how many regions were made. Run after
    /// [`Graph::fuse_scalar_blocks`].
    pub fn lane_scalar_blocks(&mut self, result: super::graph::Arg) -> usize {
        // Readers of each slot: every instruction of a block, every other op, the result.
        let mut reads = vec![0u32; self.n_vals];
        let mut count = |a: super::graph::Arg| {
            if a.is_var() {
                a.range().for_each(|s| reads[s] += 1)
            }
        };
        count(result);
        for op in &self.ops {
            match op {
                Op::Scalars { block, .. } => block
                    .code()
                    .iter()
                    .for_each(|i| i.for_each_input(&mut count)),
                other => other.inputs().into_iter().for_each(&mut count),
            }
        }
        let mut made = 0;
        let mut n_scratch = self.n_scratch;
        for op in self.ops.iter_mut() {
            if let Op::Scalars { block, .. } = op {
                let code: Box<[ScalarInstr]> = block.code().to_vec().into();
                let code = with_regions(code, &reads, &mut n_scratch);
                let regions = code
                    .iter()
                    .filter(|i| matches!(i, ScalarInstr::Lanes(_)))
                    .count();
                if regions > 0 {
                    made += regions;
                    **block = ScalarBlock::new(code);
                }
            }
        }
        self.n_scratch = n_scratch;
        made
    }
}
