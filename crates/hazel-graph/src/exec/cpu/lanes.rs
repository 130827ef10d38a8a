//! Value and gradient rules of a lane region ([`crate::ir::lanes`]): [`LANES`] iterations of
//! a template at a time, each lane with the rule of the instruction it stands for.
//!
//! Each op repeats, lane by lane, the arithmetic of `exec::cpu::scalar`'s instruction (the
//! same functions: `BinaryFn::partials`, `strong_mul`, `vmath::exp`/`ln`, the short
//! operands' sums), so each lane's values and its iteration's own adjoints get the bits the
//! instructions give one at a time. An iteration's own values and adjoints are kept lane by
//! lane in scratch (one vector per value), and only its exported values are stored in (and
//! their adjoints read from) their slots. What a lane adds to an adjoint outside its iteration is
//! stored as a contribution and added after every lane has run, slot by slot, each slot's in
//! the order the instructions would have added them
//! ([`crate::ir::lanes::LaneRegion::adds`]). The loops over lanes are compiled
//! for the workspace's instruction set (`with_isa`): `+ − × ÷` and the branch-free `vmath`
//! functions round identically at every width, so every level gives the same bits.

use super::dists::{Inc, LaneShortArgs, SHORT_DIST};
use super::kernels::{self, strong_mul};
use crate::ir::lanes::{Arith, LaneOp, LaneRegion, Src, Template, LANES};
use crate::ir::ops::BinaryFn;
use crate::simd::{with_isa, Isa};
use hazel_math::special::rules;
use hazel_math::vmath;

/// One value per lane.
type Lane = [f64; LANES];

/// A group's columns (see [`Template::rows`]).
type Rows = [[u32; LANES]];

/// Where a group's values are, and the buffers its operands come from.
struct Group<'a> {
    rows: &'a Rows,
    lanes: usize,
    tpl: &'a Template,
    /// The group's own values, lane by lane.
    own: usize,
}

impl<'a> Group<'a> {
    /// Group `g` of template `tpl`.
    #[inline(always)]
    fn new(tpl: &'a Template, g: usize) -> Group<'a> {
        let (rows, lanes) = tpl.group(g);
        Group {
            rows,
            lanes,
            tpl,
            own: tpl.values + g * tpl.width * LANES,
        }
    }

    /// Element `e` of operand `s`, in every lane: the iteration's own value (one vector) or
    /// a slot or constant of each lane's row.
    ///
    /// # Safety
    /// Every slot or constant a row names lies inside `vals`/`consts` (the rows are the slots
    /// and constants of the region's instructions, which the enclosing block checked against
    /// the buffers), and the group's own values lie inside `values`.
    #[inline(always)]
    unsafe fn read(&self, s: Src, e: usize, values: &[f64], vals: &[f64], consts: &[f64]) -> Lane {
        if s.own != Src::OUTSIDE {
            let i = self.own + (s.own as usize + e) * LANES;
            debug_assert!(i + LANES <= values.len());
            // SAFETY: see the contract.
            return unsafe { *(values.as_ptr().add(i) as *const Lane) };
        }
        let col = &self.rows[s.col as usize];
        let off = s.e as usize + e;
        let buf = if s.var { vals } else { consts };
        map(
            #[inline(always)]
            |l| {
                debug_assert!((col[l] as usize + off) < buf.len());
                // SAFETY: see the contract.
                unsafe { *buf.get_unchecked(col[l] as usize + off) }
            },
        )
    }
}

/// `f` in every lane. (A plain loop: `std::array::from_fn`'s closure is not always inlined
/// into the dispatched copy, and then runs at the baseline level, one lane at a time.)
#[inline(always)]
fn map(f: impl Fn(usize) -> f64) -> Lane {
    let mut y = [0.0; LANES];
    for (l, y) in y.iter_mut().enumerate() {
        *y = f(l);
    }
    y
}

/// `a f b` in every lane.
#[inline(always)]
fn arith(f: Arith, a: &Lane, b: &Lane) -> Lane {
    match f {
        Arith::Add => map(
            #[inline(always)]
            |l| a[l] + b[l],
        ),
        Arith::Sub => map(
            #[inline(always)]
            |l| a[l] - b[l],
        ),
        Arith::Mul => map(
            #[inline(always)]
            |l| a[l] * b[l],
        ),
        Arith::Div => map(
            #[inline(always)]
            |l| a[l] / b[l],
        ),
    }
}

/// Forward rule of a region; `false` where a density's branch-free rule refused an element:
/// the caller then runs the original instructions (for Stan's message, or the checked forms'
/// value), and the gradient rule runs theirs ([`LaneRegion::fallback_at`] records which).
/// (Out of line: the block interpreter's loop stays small.)
#[inline(never)]
pub(crate) fn forward(
    region: &LaneRegion,
    consts: &[f64],
    vals: &mut [f64],
    scratch: &mut [f64],
    isa: Isa,
) -> bool {
    let at = region.scratch as usize;
    let values = &mut scratch[at..at + region.values];
    let passes = with_isa(
        isa,
        ForwardGroups {
            region,
            consts,
            vals,
            values,
            isa,
        },
    );
    scratch[region.fallback_at()] = if passes { 0.0 } else { 1.0 };
    passes
}

/// [`forward`]'s groups, run at an instruction set through pulp's `WithSimd`. (Not
/// `dispatch!`: the body is too large for LLVM to inline the closure's `call_once` into the
/// `#[target_feature]` function, which then ran it at the baseline level; `with_simd` is
/// called directly.)
struct ForwardGroups<'a> {
    region: &'a LaneRegion,
    consts: &'a [f64],
    vals: &'a mut [f64],
    values: &'a mut [f64],
    isa: Isa,
}

impl pulp::WithSimd for ForwardGroups<'_> {
    type Output = bool;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) -> bool {
        let ForwardGroups {
            region,
            consts,
            vals,
            values,
            isa,
        } = self;
        for tpl in region.templates.iter() {
            for g in 0..tpl.groups() {
                let group = Group::new(tpl, g);
                // SAFETY: as `Group::read`'s contract (the region was made from the block's
                // instructions; its scratch was sized for its values).
                if !unsafe { forward_group(&group, consts, vals, values, isa) } {
                    return false;
                }
            }
        }
        true
    }
}

/// `false` where a density's rule refused an element (the group's values are then
/// incomplete).
///
/// # Safety
/// As [`Group::read`].
#[inline(always)]
unsafe fn forward_group(
    group: &Group,
    consts: &[f64],
    vals: &mut [f64],
    values: &mut [f64],
    isa: Isa,
) -> bool {
    let tpl = group.tpl;
    for (t, op) in tpl.ops.iter().enumerate() {
        let first = tpl.offsets[t] as usize;
        let out = &group.rows[t];
        // Element `e` of the op's output: kept in the lanes' values, and stored in its slots
        // where something outside the iteration reads it.
        // `keep!(v, y, values)`: the iteration's own value `v` (a place among them) = `y`.
        macro_rules! keep {
            ($v:expr, $y:expr, $values:expr) => {{
                let i = group.own + $v * LANES;
                assert!(i + LANES <= $values.len());
                // SAFETY: checked just above.
                unsafe { *($values.as_mut_ptr().add(i) as *mut Lane) = *$y };
            }};
        }
        macro_rules! put {
            ($e:expr, $y:expr, $values:expr, $vals:expr) => {{
                let (e, y): (usize, &Lane) = ($e, $y);
                keep!(first + e, y, $values);
                if tpl.exported[first + e] {
                    for l in 0..group.lanes {
                        $vals[out[l] as usize + e] = y[l];
                    }
                }
            }};
        }
        // `rd!(s, e, values, vals)`: element `e` of operand `s` in every lane.
        // SAFETY (the reads below): see the contract.
        macro_rules! rd {
            ($s:expr, $e:expr, $values:expr, $vals:expr) => {
                unsafe { group.read($s, $e, $values, $vals, consts) }
            };
        }
        match op {
            LaneOp::Bin { f, a, b } => {
                let y = arith(*f, &rd!(*a, 0, values, vals), &rd!(*b, 0, values, vals));
                put!(0, &y, values, vals)
            }
            LaneOp::Short {
                f,
                a,
                b,
                a_len,
                b_len,
                len,
            } => {
                for e in 0..*len as usize {
                    let x = rd!(*a, if *a_len == 1 { 0 } else { e }, values, vals);
                    let z = rd!(*b, if *b_len == 1 { 0 } else { e }, values, vals);
                    put!(e, &arith(*f, &x, &z), values, vals)
                }
            }
            LaneOp::Pack { xs } => {
                for (k, x) in xs.iter().enumerate() {
                    let y = rd!(*x, 0, values, vals);
                    put!(k, &y, values, vals)
                }
            }
            LaneOp::CumSum { x, len } => {
                // `kernels::cumsum`.
                let mut acc = [0.0; LANES];
                for e in 0..*len as usize {
                    let v = rd!(*x, e, values, vals);
                    acc = map(
                        #[inline(always)]
                        |l| acc[l] + v[l],
                    );
                    put!(e, &acc, values, vals)
                }
            }
            LaneOp::LogSumExp { x, len } => {
                // `kernels::log_sum_exp` of at most `SMALL_LEN` values: the largest, then
                // `0 + e₀ + e₁ + …` of `eᵢ = exp(xᵢ − m)` in order, then `m + ln(0 + s)`
                // (`m` itself where it is not finite).
                let n = *len as usize;
                let mut m = [f64::NEG_INFINITY; LANES];
                for e in 0..n {
                    let v = rd!(*x, e, values, vals);
                    m = map(
                        #[inline(always)]
                        |l| m[l].max(v[l]),
                    );
                }
                let mut s = [0.0; LANES];
                for e in 0..n {
                    let v = rd!(*x, e, values, vals);
                    s = map(
                        #[inline(always)]
                        |l| s[l] + vmath::exp(v[l] - m[l]),
                    );
                }
                let y = map(
                    #[inline(always)]
                    |l| {
                        let lse = m[l] + vmath::ln(0.0 + s[l]);
                        if m[l] == f64::NEG_INFINITY || !m[l].is_finite() {
                            m[l]
                        } else {
                            lse
                        }
                    },
                );
                put!(0, &y, values, vals)
            }
            LaneOp::LogSumExp2 { a, b } => {
                // `BinaryFn::LogSumExp`'s value, lane by lane.
                let (x, z) = (rd!(*a, 0, values, vals), rd!(*b, 0, values, vals));
                let f = BinaryFn::LogSumExp;
                let y = map(
                    #[inline(always)]
                    |l| f.value(x[l], z[l]),
                );
                put!(0, &y, values, vals)
            }
            LaneOp::Dist {
                kind, propto, args, ..
            } => {
                // `scalar::dist_forward`: the element's value, its partials kept.
                let mut x = [[0.0; LANES]; 4];
                for (k, a) in args.iter().enumerate() {
                    x[k] = rd!(*a, 0, values, vals);
                }
                let rule = kind
                    .lane_dist()
                    .expect("a region's density has a lane rule");
                let (passes, lp, d) = rule(isa, &density_inc(*propto, args), &x);
                if !passes {
                    return false;
                }
                put!(0, &lp, values, vals);
                let first = tpl.partials[t] as usize;
                for (k, dk) in d.iter().enumerate().take(args.len()) {
                    keep!(first + k, dk, values);
                }
            }
            LaneOp::ShortDist {
                kind,
                propto,
                args,
                vectors,
                len,
                ..
            } => {
                // `scalar::short_dist_forward`: the density's value, its partials kept.
                let mut x: LaneShortArgs = [[[0.0; LANES]; SHORT_DIST]; 4];
                for (k, a) in args.iter().enumerate() {
                    for (j, xj) in x[k].iter_mut().enumerate().take(op.arg_run(k)) {
                        *xj = rd!(*a, j, values, vals);
                    }
                }
                let rule = kind
                    .lane_short()
                    .expect("a region's density has a lane rule");
                let inc = density_inc(*propto, args);
                let (passes, lp, d) = rule(isa, &inc, *len as usize, *vectors, &x);
                if !passes {
                    return false;
                }
                put!(0, &lp, values, vals);
                let mut at = tpl.partials[t] as usize;
                for (k, dk) in d.iter().enumerate().take(args.len()) {
                    for dj in &dk[..op.arg_run(k)] {
                        keep!(at, dj, values);
                        at += 1;
                    }
                }
            }
        }
    }
    true
}

/// What a region's density keeps (`Inc`): its own `propto`, and which arguments vary (the
/// slots' `var`, as `DistArgs::new` tells them from the op's arguments).
#[inline(always)]
fn density_inc(propto: bool, args: &[Src]) -> Inc {
    let mut varying = 0u8;
    for (k, a) in args.iter().enumerate() {
        varying |= (a.var as u8) << k;
    }
    Inc {
        all: !propto,
        varying,
    }
}

/// Gradient rule of a region: every lane's rules, then the contributions added in the
/// original order. `false` (nothing done) where the forward run fell back to the original
/// instructions: the caller runs their rules. (Out of line, as [`forward`].)
#[inline(never)]
pub(crate) fn backward(
    region: &LaneRegion,
    consts: &[f64],
    vals: &[f64],
    adj: &mut [f64],
    scratch: &mut [f64],
    isa: Isa,
) -> bool {
    if scratch[region.fallback_at()] != 0.0 {
        return false;
    }
    let at = region.scratch as usize;
    let n = region.contributions;
    let (values, rest) =
        scratch[at..at + region.values + region.adjoints + n].split_at_mut(region.values);
    let (own_adj, contributions) = rest.split_at_mut(region.adjoints);
    let values: &[f64] = values;
    with_isa(
        isa,
        BackwardGroups {
            region,
            consts,
            vals,
            values,
            adj,
            own_adj,
            contributions,
        },
    );
    for a in region.adds.iter() {
        let mut sum = adj[a.slot as usize];
        for &p in &region.places[a.start as usize..(a.start + a.len) as usize] {
            sum += contributions[p as usize];
        }
        adj[a.slot as usize] = sum;
    }
    true
}

/// [`backward`]'s groups (at an instruction set as [`ForwardGroups`]).
struct BackwardGroups<'a> {
    region: &'a LaneRegion,
    consts: &'a [f64],
    vals: &'a [f64],
    values: &'a [f64],
    adj: &'a mut [f64],
    own_adj: &'a mut [f64],
    contributions: &'a mut [f64],
}

impl pulp::WithSimd for BackwardGroups<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let BackwardGroups {
            region,
            consts,
            vals,
            values,
            adj,
            own_adj,
            contributions,
        } = self;
        for tpl in region.templates.iter() {
            for g in 0..tpl.groups() {
                let group = Group::new(tpl, g);
                // SAFETY: as `Group::read`'s contract; the contribution starts lie inside
                // `contributions` and the group's adjoints inside `own_adj`.
                unsafe { backward_group(&group, consts, vals, values, adj, own_adj, contributions) }
            }
        }
    }
}

/// Where a lane's gradient rules put what they add: the adjoints of the iteration's own
/// values, or its next contribution.
struct Sink<'a> {
    group: &'a Group<'a>,
    /// The group's own adjoints, lane by lane (as its values).
    own: &'a mut [f64],
    /// Contributions per iteration, and how many this group's lanes have made so far.
    per_iteration: usize,
    made: usize,
    contributions: &'a mut [f64],
}

impl Sink<'_> {
    /// Where the adjoint of element `e` of op `t`'s output lies in `own`.
    #[inline(always)]
    fn own_at(&self, t: usize, e: usize) -> usize {
        (self.group.tpl.offsets[t] as usize + e) * LANES
    }

    /// The adjoint of element `e` of op `t`'s output, in every lane.
    #[inline(always)]
    fn adjoint(&self, t: usize, e: usize) -> Lane {
        let i = self.own_at(t, e);
        assert!(i + LANES <= self.own.len());
        // SAFETY: checked just above.
        unsafe { *(self.own.as_ptr().add(i) as *const Lane) }
    }

    /// Adds `v` to the adjoint of element `e` of operand `s` (nothing for a constant).
    ///
    /// # Safety
    /// The contribution starts lie inside `contributions`.
    #[inline(always)]
    unsafe fn add(&mut self, s: Src, e: usize, v: &Lane) {
        if !s.var {
            return;
        }
        if s.own != Src::OUTSIDE {
            let i = (s.own as usize + e) * LANES;
            assert!(i + LANES <= self.own.len());
            // SAFETY: checked just above.
            let d = unsafe { &mut *(self.own.as_mut_ptr().add(i) as *mut Lane) };
            *d = map(
                #[inline(always)]
                |l| d[l] + v[l],
            );
        } else {
            // Stored from the end of the iteration's run back (see `LaneRegion`).
            let at = self.per_iteration - 1 - self.made;
            let starts = &self.group.rows[self.group.tpl.contribution_col()];
            for l in 0..self.group.lanes {
                let i = starts[l] as usize + at;
                debug_assert!(i < self.contributions.len());
                // SAFETY: see the contract.
                unsafe { *self.contributions.get_unchecked_mut(i) = v[l] }
            }
            self.made += 1;
        }
    }
}

/// # Safety
/// As [`Group::read`], and the contribution starts lie inside `contributions`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn backward_group(
    group: &Group,
    consts: &[f64],
    vals: &[f64],
    values: &[f64],
    adj: &mut [f64],
    own_adj: &mut [f64],
    contributions: &mut [f64],
) {
    let tpl = group.tpl;
    // The adjoints start as the slots' would: what readers outside the iteration added to
    // an exported value, zero for the others.
    let own = &mut own_adj[..tpl.width * LANES];
    for (t, op) in tpl.ops.iter().enumerate() {
        let first = tpl.offsets[t] as usize;
        for e in 0..op.out_len() {
            let d = &mut own[(first + e) * LANES..(first + e + 1) * LANES];
            if tpl.exported[first + e] {
                let out = &group.rows[t];
                for l in 0..LANES {
                    d[l] = if l < group.lanes {
                        adj[out[l] as usize + e]
                    } else {
                        0.0
                    };
                }
            } else {
                d.fill(0.0);
            }
        }
    }
    let mut sink = Sink {
        group,
        own,
        per_iteration: tpl.contributions,
        made: 0,
        contributions,
    };
    // `rd!(s, e)`: element `e` of operand `s` in every lane.
    // SAFETY (the reads below): see the contract.
    macro_rules! rd {
        ($s:expr, $e:expr) => {
            unsafe { group.read($s, $e, values, vals, consts) }
        };
    }
    for (t, op) in tpl.ops.iter().enumerate().rev() {
        let out = Src::output(t, tpl.offsets[t], 0);
        match op {
            LaneOp::Bin { .. } | LaneOp::LogSumExp2 { .. } => {
                // `scalar::backward`'s `bin!` (and its `Binary`, for `log_sum_exp`).
                let (a, b) = match op {
                    LaneOp::Bin { a, b, .. } | LaneOp::LogSumExp2 { a, b } => (a, b),
                    _ => unreachable!("a binary op"),
                };
                let g = sink.adjoint(t, 0);
                let (x, z, y) = (rd!(*a, 0), rd!(*b, 0), rd!(out, 0));
                let (pa, pb) = if let LaneOp::Bin { f, .. } = op {
                    let f = f.f();
                    (
                        map(
                            #[inline(always)]
                            |l| f.partials(x[l], z[l], y[l]).0,
                        ),
                        map(
                            #[inline(always)]
                            |l| f.partials(x[l], z[l], y[l]).1,
                        ),
                    )
                } else {
                    // `BinaryFn::LogSumExp`'s partials, without the match on the function
                    // (which kept the loop one lane at a time).
                    (
                        map(
                            #[inline(always)]
                            |l| rules::log_sum_exp_partials(x[l], z[l], y[l]).0,
                        ),
                        map(
                            #[inline(always)]
                            |l| rules::log_sum_exp_partials(x[l], z[l], y[l]).1,
                        ),
                    )
                };
                unsafe {
                    sink.add(
                        *a,
                        0,
                        &map(
                            #[inline(always)]
                            |l| strong_mul(g[l], pa[l]),
                        ),
                    );
                    sink.add(
                        *b,
                        0,
                        &map(
                            #[inline(always)]
                            |l| strong_mul(g[l], pb[l]),
                        ),
                    );
                }
            }
            LaneOp::Short {
                f,
                a,
                b,
                a_len,
                b_len,
                len,
            } => {
                // `kernels::short_operands`: `a`'s rule, then `b`'s.
                let n = *len as usize;
                let mut gs = [[0.0; LANES]; crate::ir::scalar::SHORT_BINARY as usize];
                for (e, ge) in gs.iter_mut().enumerate().take(n) {
                    *ge = sink.adjoint(t, e);
                }
                let gs = &gs[..n];
                macro_rules! at {
                    ($s:expr, $len:expr, $e:expr) => {
                        rd!($s, if $len == 1 { 0 } else { $e })
                    };
                }
                for (operand, s, s_len) in [(0, *a, *a_len), (1, *b, *b_len)] {
                    if !s.var {
                        continue;
                    }
                    let full = s_len as usize == n;
                    match f {
                        Arith::Add | Arith::Sub => {
                            let negate = operand == 1 && *f == Arith::Sub;
                            // `-1.0 * g`, as `short_operand` (not `-g`: the bits of a NaN
                            // could differ).
                            if full {
                                #[allow(clippy::neg_multiply)]
                                for (e, ge) in gs.iter().enumerate() {
                                    let v = map(
                                        #[inline(always)]
                                        |l| if negate { -1.0 * ge[l] } else { ge[l] },
                                    );
                                    unsafe { sink.add(s, e, &v) }
                                }
                            } else {
                                let total = short_sum(gs);
                                let sign = if negate { -1.0 } else { 1.0 };
                                unsafe {
                                    sink.add(
                                        s,
                                        0,
                                        &map(
                                            #[inline(always)]
                                            |l| sign * total[l],
                                        ),
                                    )
                                }
                            }
                        }
                        Arith::Mul | Arith::Div => {
                            // `binary_backward_rows`'s `×` and `÷` partials.
                            // (A macro: a closure this size was left out of line, at
                            // the baseline level.)
                            macro_rules! partial {
                                ($e:expr) => {{
                                    let e = $e;
                                    let (x, z) = (at!(*a, *a_len, e), at!(*b, *b_len, e));
                                    match (f, operand) {
                                        (Arith::Mul, 0) => z,
                                        (Arith::Mul, _) => x,
                                        (_, 0) => map(
                                            #[inline(always)]
                                            |l| 1.0 / z[l],
                                        ),
                                        _ => {
                                            let y = rd!(out, e);
                                            map(
                                                #[inline(always)]
                                                |l| -y[l] / z[l],
                                            )
                                        }
                                    }
                                }};
                            }
                            if full {
                                for (e, ge) in gs.iter().enumerate() {
                                    let p = partial!(e);
                                    unsafe {
                                        sink.add(
                                            s,
                                            e,
                                            &map(
                                                #[inline(always)]
                                                |l| strong_mul(ge[l], p[l]),
                                            ),
                                        )
                                    }
                                }
                            } else {
                                let mut acc = [0.0; LANES];
                                for (e, ge) in gs.iter().enumerate() {
                                    let p = partial!(e);
                                    acc = map(
                                        #[inline(always)]
                                        |l| acc[l] + strong_mul(ge[l], p[l]),
                                    );
                                }
                                unsafe {
                                    sink.add(
                                        s,
                                        0,
                                        &map(
                                            #[inline(always)]
                                            |l| 0.0 + acc[l],
                                        ),
                                    )
                                }
                            }
                        }
                    }
                }
            }
            LaneOp::Pack { xs } => {
                for (k, x) in xs.iter().enumerate() {
                    if x.var {
                        let g = sink.adjoint(t, k);
                        unsafe { sink.add(*x, 0, &g) }
                    }
                }
            }
            LaneOp::CumSum { x, len } => {
                // `kernels::cumsum_backward`.
                let mut acc = [0.0; LANES];
                for e in (0..*len as usize).rev() {
                    let g = sink.adjoint(t, e);
                    acc = map(
                        #[inline(always)]
                        |l| acc[l] + g[l],
                    );
                    unsafe { sink.add(*x, e, &acc) }
                }
            }
            LaneOp::Dist { args, grads, .. } | LaneOp::ShortDist { args, grads, .. } => {
                // `dists::backward` (and `scalar::backward`'s one-element density): `g · ∂`
                // to each element of each argument with partials.
                let g = sink.adjoint(t, 0);
                let mut at = tpl.partials[t] as usize;
                for (k, a) in args.iter().enumerate() {
                    let run = op.arg_run(k);
                    if grads & (1 << k) != 0 {
                        for j in 0..run {
                            let d = rd!(Src::output(t, (at + j) as u16, 0), 0);
                            let v = map(
                                #[inline(always)]
                                |l| g[l] * d[l],
                            );
                            unsafe { sink.add(*a, j, &v) }
                        }
                    }
                    at += run;
                }
            }
            LaneOp::LogSumExp { x, len } => {
                // `kernels::log_sum_exp_backward`: `d += g · exp(x − y)`.
                let (g, y) = (sink.adjoint(t, 0), rd!(out, 0));
                for e in 0..*len as usize {
                    let v = rd!(*x, e);
                    let d = map(
                        #[inline(always)]
                        |l| g[l] * vmath::exp(v[l] - y[l]),
                    );
                    unsafe { sink.add(*x, e, &d) }
                }
            }
        }
    }
    debug_assert_eq!(sink.made, sink.per_iteration);
}

/// `0.0 + kernels::chunked_sum(Isa::Baseline, g)` in every lane (a broadcast operand's
/// adjoint in `kernels::short_operands`).
#[inline(always)]
fn short_sum(gs: &[Lane]) -> Lane {
    if gs.len() < 8 {
        // `chunked_sum`'s path below eight values: `0 + g₀ + g₁ + …`, then `0.0 +` that.
        let mut s = [0.0; LANES];
        for g in gs {
            s = map(
                #[inline(always)]
                |l| s[l] + g[l],
            );
        }
        return map(
            #[inline(always)]
            |l| 0.0 + (0.0 + s[l]),
        );
    }
    map(
        #[inline(always)]
        |l| {
            let mut g = [0.0; crate::ir::scalar::SHORT_BINARY as usize];
            for (g, x) in g.iter_mut().zip(gs) {
                *g = x[l];
            }
            0.0 + kernels::chunked_sum(Isa::Baseline, &g[..gs.len()])
        },
    )
}
