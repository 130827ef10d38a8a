//! Value and gradient rules of every op, side by side.
//!
//! Reductions are always computed in fixed chunks of [`CHUNK`] elements: each chunk is summed
//! left to right, then the chunk sums are added left to right. The parallel path (see
//! `super::par`) evaluates chunks on other threads but combines them in the same order, so
//! results are bit-identical for any thread count.

use super::dists;
use super::read;
use crate::ir::scalar::SHORT_BINARY;
use crate::ir::{Arg, CheckKind, Op};
use crate::simd::{dispatch, Isa};
use hazel_density::EvalError;

pub use crate::ir::ops::{BinaryFn, DistKind, MathBinary, MathUnary, UnaryFn};

/// Elements per reduction chunk (and per parallel work item).
pub const CHUNK: usize = 2048;

use hazel_math::special::{self, rules};
use hazel_math::vmath;

// The value and derivative rules are `hazel_math::special::rules` (and the plain functions of
// `hazel_math::special`/`vmath`): one definition per function, shared with hazel-math's tables.
// Only rules that are a single operation (`-x`, `x.sin()`, `y`) are written here.
impl UnaryFn {
    #[inline(always)]
    pub fn value(self, x: f64) -> f64 {
        use UnaryFn::*;
        match self {
            Neg => -x,
            Exp => vmath::exp(x),
            Log => vmath::ln(x),
            Sqrt => x.sqrt(),
            Square => x * x,
            Inv => 1.0 / x,
            Log1p => vmath::ln_1p(x),
            Expm1 => vmath::expm1(x),
            Log1pExp => special::log1p_exp(x),
            InvLogit => special::inv_logit(x),
            Logit => rules::logit(x),
            LogInvLogit => special::log_inv_logit(x),
            Log1mInvLogit => special::log1m_inv_logit(x),
            Log1m => special::log1m(x),
            Abs => x.abs(),
            Sin => x.sin(),
            Cos => x.cos(),
            Tan => x.tan(),
            Tanh => vmath::tanh(x),
            Sinh => x.sinh(),
            Cosh => x.cosh(),
            Asin => x.asin(),
            Acos => x.acos(),
            Atan => x.atan(),
            Log10 => x.log10(),
            Log2 => x.log2(),
            Exp2 => x.exp2(),
            InvSqrt => rules::inv_sqrt(x),
            InvSquare => rules::inv_square(x),
            Cbrt => x.cbrt(),
            Lgamma => special::lgamma(x),
            Digamma => special::digamma(x),
            Erf => special::erf(x),
            Erfc => special::erfc(x),
            Phi => special::Phi(x),
            PowConst(c) => x.powf(c),
            Scale(c) => c * x,
            Floor => x.floor(),
            Ceil => x.ceil(),
            Round => x.round(),
            Trunc => x.trunc(),
            Table(t) => (t.0.value)(x),
        }
    }

    /// `f'(x)`, given `y = f(x)`.
    #[inline(always)]
    pub fn deriv(self, x: f64, y: f64) -> f64 {
        use UnaryFn::*;
        match self {
            Neg => -1.0,
            Exp => y,
            Log => 1.0 / x,
            Sqrt => rules::sqrt_deriv(y),
            Square => 2.0 * x,
            Inv => rules::inv_deriv(y),
            Log1p => rules::log1p_deriv(x),
            Expm1 => rules::expm1_deriv(y),
            Log1pExp => special::inv_logit(x),
            InvLogit => rules::inv_logit_deriv(y),
            Logit => rules::logit_deriv(x),
            LogInvLogit => special::inv_logit(-x),
            Log1mInvLogit => -special::inv_logit(x),
            Log1m => rules::log1m_deriv(x),
            Abs => rules::sign(x),
            Sin => x.cos(),
            Cos => -x.sin(),
            Tan => rules::tan_deriv(y),
            Tanh => rules::tanh_deriv(y),
            Sinh => x.cosh(),
            Cosh => x.sinh(),
            Asin => rules::asin_deriv(x),
            Acos => rules::acos_deriv(x),
            Atan => rules::atan_deriv(x),
            Log10 => rules::log10_deriv(x),
            Log2 => rules::log2_deriv(x),
            Exp2 => rules::exp2_deriv(y),
            InvSqrt => rules::inv_sqrt_deriv(x, y),
            InvSquare => rules::inv_square_deriv(x, y),
            Cbrt => rules::cbrt_deriv(x, y),
            Lgamma => special::digamma(x),
            Digamma => special::trigamma(x),
            Erf => rules::erf_deriv(x),
            Erfc => rules::erfc_deriv(x),
            Phi => rules::Phi_deriv(x),
            PowConst(c) => {
                if c == 0.0 {
                    0.0
                } else {
                    c * x.powf(c - 1.0)
                }
            }
            Scale(c) => c,
            Floor | Ceil | Round | Trunc => 0.0,
            Table(t) => (t.0.deriv)(x, y),
        }
    }
}

impl BinaryFn {
    /// `+ − × ÷`: the functions whose gradient loops inline fully, so their backward rule runs
    /// dispatched to the configured vector level (the others call `partials` out of line and
    /// run undispatched; see `crate::simd`).
    #[inline(always)]
    pub(crate) fn is_arithmetic(self) -> bool {
        matches!(
            self,
            BinaryFn::Add | BinaryFn::Sub | BinaryFn::Mul | BinaryFn::Div
        )
    }

    #[inline(always)]
    pub fn value(self, a: f64, b: f64) -> f64 {
        use BinaryFn::*;
        match self {
            Add => a + b,
            Sub => a - b,
            Mul => a * b,
            Div => a / b,
            Pow => a.powf(b),
            Fmin => rules::fmin(a, b),
            Fmax => rules::fmax(a, b),
            Hypot => a.hypot(b),
            Atan2 => a.atan2(b),
            LogSumExp => rules::log_sum_exp(a, b),
            // `log1p(-exp(b − a))` rounds to −∞ once `b − a` is within an ulp of 0 (a truncation
            // normaliser whose bounds are both far in one tail); `log1m_exp` switches to
            // `log(-expm1(b − a))` there, as Stan's `log_diff_exp` does.
            LogDiffExp => special::log_diff_exp(a, b),
            Fdim => rules::fdim(a, b),
            Lbeta => special::lbeta(a, b),
            Lchoose => special::lchoose(a, b),
            Table(t) => (t.0.value)(a, b),
        }
    }

    /// `(∂f/∂a, ∂f/∂b)` given `y = f(a, b)`.
    #[inline(always)]
    pub fn partials(self, a: f64, b: f64, y: f64) -> (f64, f64) {
        use BinaryFn::*;
        match self {
            Add => (1.0, 1.0),
            Sub => (1.0, -1.0),
            Mul => (b, a),
            Div => (1.0 / b, -y / b),
            Pow => rules::pow_partials(a, b, y),
            Fmin => rules::fmin_partials(a, b),
            Fmax => rules::fmax_partials(a, b),
            Hypot => rules::hypot_partials(a, b, y),
            Atan2 => rules::atan2_partials(a, b),
            LogSumExp => rules::log_sum_exp_partials(a, b, y),
            LogDiffExp => rules::log_diff_exp_partials(a, b, y),
            Fdim => rules::fdim_partials(a, b),
            Lbeta => special::lbeta_grad(a, b),
            Lchoose => special::lchoose_grad(a, b),
            Table(t) => (t.0.grad)(a, b, y),
        }
    }
}

/// `adjoint × partial`, where a zero partial contributes nothing even when the adjoint is
/// infinite (e.g. `sqrt` at 0 feeding on an `exp` that underflowed): the reference
/// implementation's gradients stay finite there, and so do ours.
#[inline(always)]
pub(crate) fn strong_mul(g: f64, partial: f64) -> f64 {
    if partial == 0.0 {
        0.0
    } else {
        g * partial
    }
}

/// Sums a slice in fixed chunks (see the module comment); within a chunk, eight interleaved
/// partial sums (element `i` goes to lane `i mod 8`) are added pairwise at the end, so the
/// loop is not bound by the latency of one accumulator and still has one fixed order
/// ([`ChunkSum`]'s shape). (This fixed shape is what makes every SIMD level give the same
/// bits: see `crate::simd`.)
#[inline(always)]
pub fn chunked_sum(isa: Isa, x: &[f64]) -> f64 {
    if x.len() < 8 {
        // One chunk with no full group of eight: the lanes stay 0, so their tree is +0 and
        // the sum is that plus the values in order, then added to the zero total: the same
        // additions without the lane machinery, which costs more than the sum at these lengths
        // (a broadcast operand's adjoint in a short op).
        let mut s = 0.0;
        for v in x {
            s += v;
        }
        return 0.0 + s;
    }
    let mut total = 0.0;
    for c in x.chunks(CHUNK) {
        let n8 = c.len() / 8 * 8;
        let mut sum = ChunkSum::default();
        sum.add8(isa, &c[..n8]);
        total += sum.finish(&c[n8..]);
    }
    total
}

/// The sum of one chunk in [`chunked_sum`]'s shape, fed in pieces: the first `n − n mod 8`
/// values through [`ChunkSum::add8`] (in order, in pieces whose lengths are multiples of 8),
/// the last `n mod 8` to [`ChunkSum::finish`]. Loops that produce the summands themselves (a
/// density's terms, block by block) sum them with it and so keep the one shape.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ChunkSum {
    lanes: [f64; 8],
}

impl ChunkSum {
    /// Adds `v` (a multiple of 8 long): value `i` into lane `i mod 8` (vectorised for `isa`,
    /// the same bits at every level).
    #[inline(always)]
    pub fn add8(&mut self, isa: Isa, v: &[f64]) {
        debug_assert!(v.len().is_multiple_of(8));
        self.lanes = crate::simd::add_lanes(isa, self.lanes, v);
    }

    /// The lanes combined in one fixed tree, then `rest` (fewer than 8 values) in order.
    #[inline(always)]
    pub fn finish(&self, rest: &[f64]) -> f64 {
        let mut s = lane_tree(&self.lanes);
        for v in rest {
            s += v;
        }
        s
    }
}

/// The eight lanes of a chunk's partial sums combined in the one fixed tree,
/// `((l₀ + l₁) + (l₂ + l₃)) + ((l₄ + l₅) + (l₆ + l₇))`.
///
/// Out of line on purpose: with the tree inlined after an accumulation loop, LLVM's SLP
/// vectoriser pairs the lanes the tree pairs (0 with 2, 1 with 3, …) into 2-wide vectors
/// with shuffles in the loop; with the lanes handed to a call, it keeps them as one 8-wide
/// (AVX-512) or two 4-wide (AVX2) accumulators. One call per chunk.
#[inline(never)]
pub(crate) fn lane_tree(l: &[f64; 8]) -> f64 {
    ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]))
}

/// Splits `vals` at `at`: the part below (inputs) and the output run.
#[inline(always)]
fn split_out(vals: &mut [f64], off: u32, len: u32) -> (&[f64], &mut [f64]) {
    let (lo, hi) = vals.split_at_mut(off as usize);
    (lo, &mut hi[..len as usize])
}

#[inline(always)]
fn scalar_at(a: Arg, vals: &[f64], consts: &[f64]) -> f64 {
    match a.space {
        crate::tape::Space::Var => vals[a.off as usize],
        crate::tape::Space::Const => consts[a.off as usize],
    }
}

/// The order that sorts `xs` (ascending, or descending), as indices stored in `perm`
/// (f64 scratch); ties keep their order.
pub(crate) fn sort_permutation(xs: &[f64], descending: bool, perm: &mut [f64]) {
    for (k, p) in perm.iter_mut().enumerate() {
        *p = k as f64;
    }
    // Unstable sort (no allocation) made deterministic by the index tiebreak.
    perm.sort_unstable_by(|&a, &b| {
        let (u, v) = (xs[a as usize], xs[b as usize]);
        let by_value = if descending {
            v.total_cmp(&u)
        } else {
            u.total_cmp(&v)
        };
        by_value.then(a.total_cmp(&b))
    });
}

/// Forward rule of `op`, its loops compiled for `isa` (every `isa` gives the same bits).
pub fn forward(
    op: &Op,
    consts: &[f64],
    vals: &mut [f64],
    scratch: &mut [f64],
    isa: Isa,
) -> Result<(), EvalError> {
    match op {
        // Scalar fast paths: loops in the program unroll into many of these.
        Op::Binary { f, a, b, out } if out.len == 1 => {
            let v = f.value(scalar_at(*a, vals, consts), scalar_at(*b, vals, consts));
            vals[out.off as usize] = v;
        }
        Op::Unary { f, x, out } if out.len == 1 => {
            let v = f.value(scalar_at(*x, vals, consts));
            vals[out.off as usize] = v;
        }
        Op::MulAdd { a, b, c, out } => {
            // Two roundings, as the unfused multiply and add.
            let product = scalar_at(*a, vals, consts) * scalar_at(*b, vals, consts);
            vals[out.off as usize] = product + scalar_at(*c, vals, consts);
        }
        Op::MulAddChain { c, terms, out } => {
            let mut acc = scalar_at(*c, vals, consts);
            for [a, b] in terms.iter() {
                acc += scalar_at(*a, vals, consts) * scalar_at(*b, vals, consts);
            }
            vals[out.off as usize] = acc;
        }
        Op::Dist {
            kind,
            args,
            propto,
            len: 1,
            scratch: sc,
            out,
        } if args.iter().all(|a| a.len == 1) => {
            // One term (e.g. `normal_lpdf(y[n] | ...)` inside a loop): no chunk machinery.
            let mut x = [0.0; 4];
            let mut varying = 0u8;
            for (k, a) in args.iter().enumerate() {
                x[k] = scalar_at(*a, vals, consts);
                if a.is_var() {
                    varying |= 1 << k;
                }
            }
            let (lp, d) = kind
                .elem(
                    &x,
                    &crate::dists::Inc {
                        all: !propto,
                        varying,
                    },
                )
                .map_err(|e| EvalError::domain(e.message))?;
            for (k, &o) in sc.iter().enumerate() {
                if o != crate::dists::NO_SCRATCH {
                    scratch[o as usize] = d[k];
                }
            }
            vals[out.off as usize] = lp;
        }
        Op::Unary { f, x, out } => {
            let (lo, o) = split_out(vals, out.off, out.len);
            let xs = read(*x, lo, consts);
            dispatch!(isa, unary_forward(*f, xs, o));
        }
        Op::Binary { f, a, b, out } => {
            let (lo, o) = split_out(vals, out.off, out.len);
            let av = read(*a, lo, consts);
            let bv = read(*b, lo, consts);
            if out.len <= SHORT_BINARY && f.is_arithmetic() {
                // Too short for vector code to pay for its dispatch (the same bits anyway).
                binary_forward(*f, av, bv, o);
            } else {
                dispatch!(isa, binary_forward(*f, av, bv, o));
            }
        }
        Op::Sum { x, out } => {
            let (lo, o) = split_out(vals, out.off, out.len);
            o[0] = chunked_sum(isa, read(*x, lo, consts));
        }
        Op::SumScalars { xs, out } => {
            let (lo, o) = split_out(vals, out.off, out.len);
            let mut s = 0.0;
            for a in xs.iter() {
                s += read(*a, lo, consts)[0];
            }
            o[0] = s;
        }
        Op::Dot { a, b, out } => {
            let (lo, o) = split_out(vals, out.off, out.len);
            o[0] = dot(isa, read(*a, lo, consts), read(*b, lo, consts));
        }
        Op::DotSelfGatherDiff {
            a,
            b,
            idx,
            scratch: sc,
            out,
        } => {
            let (ia, ib) = idx.split_at(idx.len() / 2);
            let (lo, o) = split_out(vals, out.off, out.len);
            let (av, bv) = (read(*a, lo, consts), read(*b, lo, consts));
            let diff = &mut scratch[*sc as usize..*sc as usize + ia.len()];
            for ((d, &i), &j) in diff.iter_mut().zip(ia.iter()).zip(ib.iter()) {
                *d = av[i as usize] - bv[j as usize];
            }
            o[0] = dot(isa, diff, diff);
        }
        Op::LogSumExp { x, out } => {
            let (lo, o) = split_out(vals, out.off, out.len);
            o[0] = log_sum_exp(read(*x, lo, consts));
        }
        Op::Sd { x, out } => {
            let (lo, o) = split_out(vals, out.off, out.len);
            o[0] = sd_parts(read(*x, lo, consts)).0;
        }
        Op::Pack { xs, out } => {
            let (lo, o) = split_out(vals, out.off, out.len);
            for (d, a) in o.iter_mut().zip(xs.iter()) {
                *d = read(*a, lo, consts)[0];
            }
        }
        Op::CumSum { x, out } => {
            let (lo, o) = split_out(vals, out.off, out.len);
            cumsum(read(*x, lo, consts), o);
        }
        Op::Sort {
            x,
            descending,
            scratch: sc,
            out,
        } => {
            let (lo, o) = split_out(vals, out.off, out.len);
            let xs = read(*x, lo, consts);
            if let Some(bad) = xs.iter().position(|v| v.is_nan()) {
                let name = if *descending { "sort_desc" } else { "sort_asc" };
                return Err(EvalError::domain(format!(
                    "{name}: element {} of the argument is nan, but must not be nan!",
                    bad + 1
                )));
            }
            let perm = &mut scratch[*sc as usize..*sc as usize + xs.len()];
            sort_permutation(xs, *descending, perm);
            for (d, &i) in o.iter_mut().zip(perm.iter()) {
                *d = xs[i as usize];
            }
        }
        Op::Gather { x, idx, out } => {
            let (lo, o) = split_out(vals, out.off, out.len);
            let xs = read(*x, lo, consts);
            for (d, &i) in o.iter_mut().zip(idx.iter()) {
                *d = xs[i as usize];
            }
        }
        Op::MatVec {
            m,
            v,
            rows,
            cols,
            out,
        } => {
            let (lo, o) = split_out(vals, out.off, out.len);
            let (mv, vv) = (read(*m, lo, consts), read(*v, lo, consts));
            dispatch!(isa, matvec(mv, vv, *rows as usize, *cols as usize, o));
        }
        Op::MatMul {
            a,
            b,
            bias,
            n,
            k,
            m,
            out,
        } => {
            let (lo, o) = split_out(vals, out.off, out.len);
            let (n, k, m) = (*n as usize, *k as usize, *m as usize);
            let av = read(*a, lo, consts);
            let bv = read(*b, lo, consts);
            let bias = bias.map(|c| read(c, lo, consts));
            dispatch!(isa, matmul(av, bv, bias, n, k, m, o));
        }
        Op::Glm { spec, out } => super::glm::forward(spec, consts, vals, *out, scratch, isa)?,
        Op::Dist {
            kind,
            args,
            propto,
            len,
            scratch: sc,
            out,
        } => {
            let (lo, o) = split_out(vals, out.off, out.len);
            o[0] = dists::forward(
                *kind,
                args,
                *propto,
                *len as usize,
                sc,
                lo,
                consts,
                scratch,
                isa,
            )?;
        }
        Op::Constrain {
            kind,
            x,
            scratch: sc,
            out,
        } => {
            let (lo, o) = split_out(vals, out.off, out.len);
            let n = kind.constrained_len();
            let ws = &mut scratch[*sc as usize..*sc as usize + kind.workspace_len()];
            let lj = kind
                .constrain(read(*x, lo, consts), &mut o[..n], ws)
                .map_err(|e| EvalError::domain(format!("constraining transform: {e}")))?;
            o[n] = lj;
        }
        Op::Cholesky { a, n, out, .. } => {
            let (lo, o) = split_out(vals, out.off, out.len);
            hazel_math::linalg::cholesky_decompose(read(*a, lo, consts), *n as usize, o)
                .map_err(|e| EvalError::domain(e.message))?;
        }
        Op::Linalg { .. } => crate::linalg_kernels::forward(op, consts, vals, scratch)?,
        Op::TriSolve {
            l, b, n, m, out, ..
        } => {
            let (lo, o) = split_out(vals, out.off, out.len);
            hazel_math::linalg::mdivide_left_tri_low(
                read(*l, lo, consts),
                *n as usize,
                read(*b, lo, consts),
                *m as usize,
                o,
            );
        }
        Op::Check {
            kind,
            x,
            bound,
            message,
            out,
        } => {
            let (lo, _) = split_out(vals, out.off, out.len);
            let xs = read(*x, lo, consts);
            let bs = read(*bound, lo, consts);
            for (i, &v) in xs.iter().enumerate() {
                let b = if bs.len() == 1 { bs[0] } else { bs[i] };
                let ok = match kind {
                    CheckKind::Lower => v >= b,
                    CheckKind::Upper => v <= b,
                    CheckKind::Finite => v.is_finite(),
                };
                if !ok {
                    return Err(EvalError::new(
                        hazel_density::EvalErrorKind::Constraint,
                        format!("{message}: element {} is {v}", i + 1),
                    ));
                }
            }
        }
        Op::Reject { message, .. } => return Err(EvalError::reject(message.to_string())),
        Op::MvDist {
            spec,
            args,
            propto,
            scratch: sc,
            out,
        } => {
            let (lo, o) = split_out(vals, out.off, out.len);
            o[0] = crate::mvdist::forward(spec, args, *propto, *sc, lo, consts, scratch)?;
        }
        Op::Solve {
            spec,
            guess,
            theta,
            scratch: sc,
            out,
        } => {
            let (lo, o) = split_out(vals, out.off, out.len);
            let s = &mut scratch[*sc as usize..*sc as usize + spec.scratch_len()];
            let (g, t) = (read(*guess, lo, consts), read(*theta, lo, consts));
            crate::solve_op::forward(spec, g, t, o, s)?;
        }
        Op::Dae {
            spec,
            yy0,
            yp0,
            theta,
            scratch: sc,
            out,
        } => {
            let (lo, o) = split_out(vals, out.off, out.len);
            let s = &mut scratch[*sc as usize..*sc as usize + spec.scratch_len()];
            let (y0, p0) = (read(*yy0, lo, consts), read(*yp0, lo, consts));
            crate::dae_op::forward(spec, y0, p0, read(*theta, lo, consts), o, s)?;
        }
        Op::Ode {
            spec,
            v,
            scratch: sc,
            out,
        } => {
            let (lo, o) = split_out(vals, out.off, out.len);
            let sens = &mut scratch[*sc as usize..*sc as usize + spec.scratch_len(v.len())];
            crate::ode_op::forward(spec, read(*v, lo, consts), o, sens)?;
        }
        Op::Integrate {
            spec,
            v,
            scratch: sc,
            out,
        } => {
            let (lo, o) = split_out(vals, out.off, out.len);
            let grad = &mut scratch[*sc as usize..*sc as usize + v.len()];
            crate::integrate_op::forward(spec, read(*v, lo, consts), o, grad)?;
        }
        Op::Nary { f, args, out } => {
            let (lo, o) = split_out(vals, out.off, out.len);
            crate::nary::forward(*f, args, lo, consts, o)?;
        }
        Op::Scalars { block, .. } => super::scalar::forward(block, consts, vals, scratch, isa)?,
    }
    Ok(())
}

/// Backward rule of `op`: adds the op's contribution to its inputs' adjoints, or stores it
/// (`0.0 + contribution`: the bits of adding it to a cleared slot) into the inputs whose bit
/// `stores` sets ([`crate::ir::graph::AdjointPlan::stores`]; only the rules that name it store);
/// loops compiled for `isa` (every `isa` gives the same bits).
pub fn backward(
    op: &Op,
    stores: u32,
    consts: &[f64],
    vals: &[f64],
    adj: &mut [f64],
    scratch: &mut [f64],
    isa: Isa,
) {
    let out = op.out();
    if out.len == 0 {
        return;
    }
    match op {
        Op::Binary { f, a, b, out } if out.len == 1 => {
            let g = adj[out.off as usize];
            let (x, y) = (scalar_at(*a, vals, consts), scalar_at(*b, vals, consts));
            let (pa, pb) = f.partials(x, y, vals[out.off as usize]);
            if a.is_var() {
                adj[a.off as usize] += strong_mul(g, pa);
            }
            if b.is_var() {
                adj[b.off as usize] += strong_mul(g, pb);
            }
            return;
        }
        Op::Unary { f, x, out } if out.len == 1 => {
            if x.is_var() {
                let g = adj[out.off as usize];
                let p = f.deriv(vals[x.off as usize], vals[out.off as usize]);
                let d = &mut adj[x.off as usize];
                *d = if stores & 1 != 0 { 0.0 } else { *d } + strong_mul(g, p);
            }
            return;
        }
        Op::MulAdd { a, b, c, out } => {
            // The unfused add's and multiply's updates, in the order the two ops made them;
            // `0.0 + g` is the product's adjoint as the add would have accumulated it.
            let g = adj[out.off as usize];
            if c.is_var() {
                adj[c.off as usize] += g;
            }
            let g_product = 0.0 + g;
            let (x, y) = (scalar_at(*a, vals, consts), scalar_at(*b, vals, consts));
            if a.is_var() {
                adj[a.off as usize] += strong_mul(g_product, y);
            }
            if b.is_var() {
                adj[b.off as usize] += strong_mul(g_product, x);
            }
            return;
        }
        Op::Binary { f, a, b, out } if out.len <= SHORT_BINARY && f.is_arithmetic() => {
            binary_backward_short(*f, *a, *b, *out, consts, vals, adj);
            return;
        }
        Op::Scalars { block, .. } => {
            super::scalar::backward(block, consts, vals, adj, scratch, isa);
            return;
        }
        Op::MulAddChain { c, terms, out } => {
            // The merged ops' updates from the last link back: each link's adjoint is
            // `0.0 + g` of the next (accumulated into its zeroed slot), the first link also
            // updates the chain's addend before its product's factors.
            let mut g = adj[out.off as usize];
            for (k, [a, b]) in terms.iter().enumerate().rev() {
                if k == 0 && c.is_var() {
                    adj[c.off as usize] += g;
                }
                let g_product = 0.0 + g;
                let (x, y) = (scalar_at(*a, vals, consts), scalar_at(*b, vals, consts));
                if a.is_var() {
                    adj[a.off as usize] += strong_mul(g_product, y);
                }
                if b.is_var() {
                    adj[b.off as usize] += strong_mul(g_product, x);
                }
                // The previous link's adjoint, accumulated into its zeroed slot.
                g += 0.0;
            }
            return;
        }
        _ => {}
    }
    let (adj_lo, adj_hi) = adj.split_at_mut(out.off as usize);
    let g = &adj_hi[..out.len as usize];
    let lo = &vals[..out.off as usize];
    match op {
        Op::Unary { f, x, out } => {
            if !x.is_var() {
                return;
            }
            let xs = read(*x, lo, consts);
            let ys = &vals[out.range()];
            let d = &mut adj_lo[x.range()];
            if stores & 1 != 0 {
                dispatch!(isa, unary_backward::<true>(*f, xs, ys, g, d));
            } else {
                dispatch!(isa, unary_backward::<false>(*f, xs, ys, g, d));
            }
        }
        Op::Binary { f, a, b, out } => {
            let y = &vals[out.range()];
            if f.is_arithmetic() {
                dispatch!(
                    isa,
                    binary_backward(isa, *f, *a, *b, stores, lo, consts, y, g, adj_lo)
                )
            } else {
                // Not dispatched: `partials` is called out of line and returns a pair, which
                // keeps LLVM from inlining the loop into a vector-level copy (`crate::simd`).
                binary_backward(isa, *f, *a, *b, stores, lo, consts, y, g, adj_lo)
            }
        }
        Op::Sum { x, .. } => {
            if x.is_var() {
                let g0 = g[0];
                adj_lo[x.range()].iter_mut().for_each(|d| *d += g0);
            }
        }
        Op::SumScalars { xs, .. } => {
            for a in xs.iter() {
                if a.is_var() {
                    adj_lo[a.off as usize] += g[0];
                }
            }
        }
        Op::Dot { a, b, .. } => {
            let g0 = g[0];
            if a.is_var() {
                let bv = read(*b, lo, consts);
                if b.is_var() && b.off == a.off {
                    // dot(x, x): both partials land on the same run.
                    let d = &mut adj_lo[a.range()];
                    for i in 0..d.len() {
                        d[i] += 2.0 * g0 * bv[i];
                    }
                    return;
                }
                let d = &mut adj_lo[a.range()];
                for i in 0..d.len() {
                    d[i] += g0 * bv[i];
                }
            }
            if b.is_var() {
                let av = read(*a, lo, consts);
                let d = &mut adj_lo[b.range()];
                for i in 0..d.len() {
                    d[i] += g0 * av[i];
                }
            }
        }
        Op::DotSelfGatherDiff {
            a,
            b,
            idx,
            scratch: sc,
            ..
        } => {
            let (ia, ib) = idx.split_at(idx.len() / 2);
            let n = ia.len();
            let (diff, room) = scratch[*sc as usize..*sc as usize + 2 * n].split_at_mut(n);
            // What the dot's rule added to the difference's cleared adjoint, `0.0 + 2g·d`, was
            // passed on by the subtraction's rule to each gather's cleared adjoint, negated for
            // `b`; the gathers' rules then scattered it, `b`'s first (it was traced after
            // `a`'s). A chunk's contributions at a time, so they are read back from L1.
            let twice_g = 2.0 * g[0];
            for (x, to, sign) in [(*b, ib, -1.0), (*a, ia, 1.0)] {
                if !x.is_var() {
                    continue;
                }
                let d = &mut adj_lo[x.range()];
                for (dc, ic) in diff.chunks(CHUNK).zip(to.chunks(CHUNK)) {
                    let part = &mut room[..dc.len()];
                    for (p, &di) in part.iter_mut().zip(dc) {
                        *p = 0.0 + sign * (0.0 + twice_g * di);
                    }
                    scatter_add(d, ic, part);
                }
            }
        }
        Op::Sd { x, out } => {
            if x.is_var() {
                let xs = read(*x, lo, consts);
                let n = xs.len();
                let (sd, mean, sum_of_squares) = sd_parts(xs);
                let g0 = g[0];
                let _ = out;
                let d = &mut adj_lo[x.range()];
                if n > 1 {
                    if sum_of_squares < 1e-20 {
                        let each = g0 / (n as f64).sqrt();
                        d.iter_mut().for_each(|di| *di += each);
                    } else {
                        let scale = g0 / (sd * (n - 1) as f64);
                        for i in 0..n {
                            d[i] += scale * (xs[i] - mean);
                        }
                    }
                }
            }
        }
        Op::LogSumExp { x, out } => {
            if x.is_var() {
                let y = vals[out.off as usize];
                log_sum_exp_backward(read(*x, lo, consts), y, g[0], &mut adj_lo[x.range()]);
            }
        }
        Op::Pack { xs, .. } => {
            for (a, gi) in xs.iter().zip(g) {
                if a.is_var() {
                    adj_lo[a.off as usize] += gi;
                }
            }
        }
        Op::CumSum { x, .. } => {
            if x.is_var() {
                cumsum_backward(g, &mut adj_lo[x.range()]);
            }
        }
        Op::Sort { x, scratch: sc, .. } => {
            if x.is_var() {
                let perm = &scratch[*sc as usize..*sc as usize + x.len()];
                let d = &mut adj_lo[x.range()];
                for (&i, gi) in perm.iter().zip(g) {
                    d[i as usize] += gi;
                }
            }
        }
        Op::Gather { x, idx, .. } => {
            if x.is_var() {
                scatter_add(&mut adj_lo[x.range()], idx, g);
            }
        }
        Op::MatVec {
            m, v, rows, cols, ..
        } => {
            let (rows, cols) = (*rows as usize, *cols as usize);
            if v.is_var() {
                let mv = read(*m, lo, consts);
                let d = &mut adj_lo[v.range()];
                dispatch!(isa, matvec_t_add(isa, mv, g, rows, cols, d));
            }
            if m.is_var() {
                let vv = read(*v, lo, consts);
                let d = &mut adj_lo[m.range()];
                dispatch!(isa, outer_add(g, vv, rows, cols, d));
            }
        }
        Op::MatMul {
            a,
            b,
            bias,
            n,
            k,
            m,
            ..
        } => {
            let (n, k, m) = (*n as usize, *k as usize, *m as usize);
            // C = A B + 1 biasᵀ: dbias[j] += Σ_r G[r, j], in row order (the order the unfused
            // gather's `scatter_add` adds them), then dA += G Bᵀ, dB += Aᵀ G.
            if let Some(c) = bias.filter(|c| c.is_var()) {
                column_sums_add(g, n, &mut adj_lo[c.range()]);
            }
            if a.is_var() {
                let bv = read(*b, lo, consts);
                let d = &mut adj_lo[a.range()];
                dispatch!(isa, matmul_adj_a(g, bv, n, k, m, d));
            }
            if b.is_var() {
                let av = read(*a, lo, consts);
                let d = &mut adj_lo[b.range()];
                dispatch!(isa, matmul_adj_b(isa, av, g, n, k, m, d));
            }
        }
        Op::Dist {
            args,
            len,
            scratch: sc,
            ..
        } => {
            dispatch!(
                isa,
                dists::backward(args, *len as usize, sc, stores, g[0], scratch, adj_lo)
            );
        }
        Op::Glm { spec, .. } => {
            let store_x = stores & 1 != 0;
            dispatch!(
                isa,
                super::glm::backward(spec, store_x, g[0], lo, consts, scratch, adj_lo)
            );
        }
        Op::Constrain {
            kind,
            x,
            scratch: sc,
            out,
        } => {
            if !x.is_var() {
                return;
            }
            let n = kind.constrained_len();
            let out_vals = &vals[out.off as usize..out.off as usize + n];
            let g_lj = g[n];
            let unc = read(*x, lo, consts);
            let wl = kind.workspace_len();
            let fl = kind.free_len();
            let (ws, rest) = scratch[*sc as usize..].split_at_mut(wl);
            let (jac_only, zeros) = rest.split_at_mut(fl);
            // hazel_math's adjoint adds the Jacobian's gradient with adjoint 1; when the
            // log-Jacobian's own adjoint differs (Jacobian off, or scaled), correct by
            // (g_lj − 1) × the Jacobian-only gradient.
            kind.constrain_adjoint(unc, out_vals, &g[..n], &mut adj_lo[x.range()], ws);
            if g_lj != 1.0 {
                jac_only.iter_mut().for_each(|v| *v = 0.0);
                zeros[..n].iter_mut().for_each(|v| *v = 0.0);
                kind.constrain_adjoint(unc, out_vals, &zeros[..n], jac_only, ws);
                for (d, j) in adj_lo[x.range()].iter_mut().zip(jac_only.iter()) {
                    *d += (g_lj - 1.0) * j;
                }
            }
        }
        Op::Cholesky {
            a,
            n,
            scratch: sc,
            out,
        } => {
            if a.is_var() {
                let n = *n as usize;
                let lv = &vals[out.range()];
                let ws = &mut scratch[*sc as usize..*sc as usize + n * n];
                hazel_math::linalg::cholesky_decompose_adjoint(
                    lv,
                    n,
                    g,
                    &mut adj_lo[a.range()],
                    ws,
                );
            }
        }
        Op::TriSolve {
            l,
            b,
            n,
            m,
            scratch: sc,
            out,
        } => {
            let (n, m) = (*n as usize, *m as usize);
            let lv = read(*l, lo, consts);
            let x = &vals[out.range()];
            let ws = &mut scratch[*sc as usize..*sc as usize + n * m];
            match (l.is_var(), b.is_var()) {
                (false, false) => {}
                (true, false) => hazel_math::linalg::mdivide_left_tri_low_adjoint(
                    lv,
                    n,
                    x,
                    m,
                    g,
                    Some(&mut adj_lo[l.range()]),
                    None,
                    ws,
                ),
                (false, true) => hazel_math::linalg::mdivide_left_tri_low_adjoint(
                    lv,
                    n,
                    x,
                    m,
                    g,
                    None,
                    Some(&mut adj_lo[b.range()]),
                    ws,
                ),
                (true, true) => {
                    // Both runs are distinct slots below the output: split the adjoint buffer.
                    let (lr, br) = (l.range(), b.range());
                    if lr.end <= br.start {
                        let (x1, x2) = adj_lo.split_at_mut(br.start);
                        hazel_math::linalg::mdivide_left_tri_low_adjoint(
                            lv,
                            n,
                            x,
                            m,
                            g,
                            Some(&mut x1[lr]),
                            Some(&mut x2[..m * n]),
                            ws,
                        );
                    } else if br.end <= lr.start {
                        let (x1, x2) = adj_lo.split_at_mut(lr.start);
                        hazel_math::linalg::mdivide_left_tri_low_adjoint(
                            lv,
                            n,
                            x,
                            m,
                            g,
                            Some(&mut x2[..n * n]),
                            Some(&mut x1[br]),
                            ws,
                        );
                    } else {
                        // Overlapping runs (the same matrix on both sides): two passes.
                        let mut tmp = vec![0.0; n * m];
                        hazel_math::linalg::mdivide_left_tri_low_adjoint(
                            lv,
                            n,
                            x,
                            m,
                            g,
                            None,
                            Some(&mut tmp),
                            ws,
                        );
                        for (d, t) in adj_lo[br].iter_mut().zip(&tmp) {
                            *d += t;
                        }
                        hazel_math::linalg::mdivide_left_tri_low_adjoint(
                            lv,
                            n,
                            x,
                            m,
                            g,
                            Some(&mut adj_lo[lr]),
                            None,
                            ws,
                        );
                    }
                }
            }
        }
        Op::Linalg { out, .. } => {
            crate::linalg_kernels::backward(op, consts, lo, &vals[out.range()], g, adj_lo, scratch)
        }
        // Handled by the scalar fast path above.
        Op::MulAdd { .. } | Op::MulAddChain { .. } | Op::Scalars { .. } => {}
        Op::MvDist {
            args, scratch: sc, ..
        } => crate::mvdist::backward(args, *sc, g[0], scratch, adj_lo),
        Op::Ode {
            spec,
            v,
            scratch: sc,
            ..
        } => {
            if v.is_var() {
                let sens = &scratch[*sc as usize..*sc as usize + spec.scratch_len(v.len())];
                crate::ode_op::backward(spec, sens, g, &mut adj_lo[v.range()]);
            }
        }
        Op::Integrate { v, scratch: sc, .. } => {
            if v.is_var() {
                let grad = &scratch[*sc as usize..*sc as usize + v.len()];
                crate::integrate_op::backward(grad, g[0], &mut adj_lo[v.range()]);
            }
        }
        Op::Nary { f, args, out } => {
            crate::nary::backward(*f, args, lo, consts, &vals[out.range()], g, adj_lo)
        }
        Op::Check { .. } | Op::Reject { .. } => {}
        Op::Solve {
            spec,
            theta,
            scratch: sc,
            ..
        } => {
            if theta.is_var() {
                let s = &mut scratch[*sc as usize..*sc as usize + spec.scratch_len()];
                crate::solve_op::backward(spec, g, &mut adj_lo[theta.range()], s);
            }
        }
        Op::Dae {
            spec,
            yy0,
            theta,
            scratch: sc,
            ..
        } => {
            let s = &scratch[*sc as usize..*sc as usize + spec.scratch_len()];
            crate::dae_op::backward(spec, g, adj_lo, *yy0, *theta, s);
        }
    }
}

/// `d[idx[k]] += g[k]` for every `k` in order: the adjoint of a gather. Each slot receives its
/// additions in element order, one rounding each — the order every executor keeps (the sharded
/// one carries `d` from rank to rank), so how the work is scheduled here never changes a bit.
///
/// Why not the plain loop: gathered indexes usually come in runs (`alpha[county[n]]` over rows
/// sorted by county; `rep_matrix(b', N)`, one run per column), and there each addition waits
/// for the store of the previous one to the same slot. A run is summed in a register instead,
/// and up to four consecutive runs of distinct slots are summed side by side, so the additions
/// of one run overlap those of the others rather than waiting on the adder's latency.
#[inline(always)]
pub(crate) fn scatter_add(d: &mut [f64], idx: &[u32], g: &[f64]) {
    let n = idx.len().min(g.len());
    // Scattered indexes and short runs (fewer than 3 in 4 indexes like their neighbour,
    // judged on the first 65: runs shorter than about 4) take the plain loop: there the
    // branches that find the runs' ends mispredict at almost every run, which costs more
    // than the waits on the stores (an ICAR prior's `phi[node1]`, runs of 2.8 on average,
    // scattered three times as fast plainly). Either way gives the same bits.
    let probe = &idx[..n.min(65)];
    if probe.windows(2).filter(|w| w[0] == w[1]).count() * 4 < 3 * probe.len().saturating_sub(1) {
        for (&i, gi) in idx.iter().zip(g) {
            d[i as usize] += gi;
        }
        return;
    }
    let run_end = |start: usize| {
        let slot = idx[start];
        let mut end = start + 1;
        // Eight indexes at a time while they all match (one vector compare, not eight
        // compares and branches: a county's run is tens of rows), then one by one.
        while end + 8 <= n
            && idx[end..end + 8]
                .iter()
                .fold(true, |all, &i| all & (i == slot))
        {
            end += 8;
        }
        while end < n && idx[end] == slot {
            end += 1;
        }
        end
    };
    let mut k = 0;
    while k < n {
        // An index unlike the next one is added at once.
        if k + 1 == n || idx[k + 1] != idx[k] {
            d[idx[k] as usize] += g[k];
            k += 1;
            continue;
        }
        // Up to four consecutive runs: [starts[r], ends[r]) of slot slots[r].
        let mut starts = [0usize; 4];
        let mut ends = [0usize; 4];
        let mut runs = 0;
        let mut next = k;
        while runs < 4 && next < n {
            let slot = idx[next];
            if starts[..runs].iter().any(|&s| idx[s] == slot) {
                break; // a slot seen in this group: its earlier run must finish first
            }
            starts[runs] = next;
            ends[runs] = run_end(next);
            next = ends[runs];
            runs += 1;
        }
        if runs < 4 {
            for r in 0..runs {
                let slot = idx[starts[r]] as usize;
                let mut acc = d[slot];
                for gj in &g[starts[r]..ends[r]] {
                    acc += gj;
                }
                d[slot] = acc;
            }
        } else {
            let slots = starts.map(|s| idx[s] as usize);
            let mut acc = slots.map(|s| d[s]);
            let common = (0..4).map(|r| ends[r] - starts[r]).min().unwrap_or(0);
            for j in 0..common {
                for r in 0..4 {
                    acc[r] += g[starts[r] + j];
                }
            }
            for r in 0..4 {
                for gj in &g[starts[r] + common..ends[r]] {
                    acc[r] += gj;
                }
                d[slots[r]] = acc[r];
            }
        }
        k = next;
    }
}

/// Dot product with the same fixed chunking and eight-lane order as [`chunked_sum`].
#[inline(always)]
pub fn dot(isa: Isa, a: &[f64], b: &[f64]) -> f64 {
    let mut total = 0.0;
    for (ca, cb) in a.chunks(CHUNK).zip(b.chunks(CHUNK)) {
        total += chunk_dot(isa, ca, cb);
    }
    total
}

/// One chunk of [`dot`]: eight interleaved partial sums, the fixed tree, then the last
/// `n mod 8` products in order.
#[inline(always)]
fn chunk_dot(isa: Isa, ca: &[f64], cb: &[f64]) -> f64 {
    let n8 = ca.len() / 8 * 8;
    let lanes = crate::simd::dot_lanes(isa, [0.0; 8], &ca[..n8], cb);
    finish_dot(&lanes, &ca[n8..], &cb[n8..])
}

/// A chunk's dot product from its lane sums ([`crate::simd::dot_lanes`]) and its last
/// `n mod 8` values of each operand: the fixed tree, then those products in order.
#[inline(always)]
fn finish_dot(lanes: &[f64; 8], a_rest: &[f64], b_rest: &[f64]) -> f64 {
    let mut s = lane_tree(lanes);
    for (a, b) in a_rest.iter().zip(b_rest) {
        s += a * b;
    }
    s
}

/// `[dot(a[0], b), …, dot(a[3], b)]` (the `a[t]` as long as `b`), each summed in exactly
/// [`dot`]'s order, chunk by chunk so that each chunk of `b` is read from memory once for the
/// four columns (the adjoint of a matrix–vector product's vector, four columns at a time),
/// the four chunk dots' lane sums accumulated side by side (`simd::dot4_lanes`).
#[inline(always)]
pub(crate) fn dot4(isa: Isa, a: [&[f64]; 4], b: &[f64]) -> [f64; 4] {
    let mut total = [0.0f64; 4];
    let mut start = 0;
    while start < b.len() {
        let end = (start + CHUNK).min(b.len());
        let cb = &b[start..end];
        let ca = a.map(|col| &col[start..end]);
        // Each column's chunk as [`chunk_dot`] sums it: its lanes, the tree, the rest.
        let lanes = crate::simd::dot4_lanes(isa, [[0.0; 8]; 4], ca, cb);
        let n8 = cb.len() / 8 * 8;
        for ((t, l), col) in total.iter_mut().zip(&lanes).zip(ca) {
            *t += finish_dot(l, &col[n8..], &cb[n8..]);
        }
        start = end;
    }
    total
}

pub fn log_sum_exp(x: &[f64]) -> f64 {
    let m = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY || !m.is_finite() {
        return m;
    }
    // A softmax's or a mixture's few terms: their exps as one padded row (`padded_exps`),
    // added in order as `add_exps` adds them.
    if x.len() <= 4 {
        let mut s = 0.0;
        let mut add = |e: &[f64]| e.iter().for_each(|e| s += e);
        if x.len() <= 2 {
            add(&padded_exps::<2>(x, m)[..x.len()]);
        } else {
            add(&padded_exps::<4>(x, m)[..x.len()]);
        }
        return m + vmath::ln(0.0 + s);
    }
    if x.len() <= LSE_GROUP {
        // One chunk of one group, without the chunk and group iterators (which cost more
        // than the sum at a softmax's or a mixture's few terms): the same exps, added in
        // order, then to the zero total.
        return m + vmath::ln(0.0 + add_exps(0.0, x, m));
    }
    let mut total = 0.0;
    for c in x.chunks(CHUNK) {
        let mut s = 0.0;
        for group in c.chunks(LSE_GROUP) {
            s = add_exps(s, group, m);
        }
        total += s;
    }
    m + vmath::ln(total)
}

/// `s + exp(x₀ − m) + exp(x₁ − m) + …` for at most [`LSE_GROUP`] values: the exps first (a
/// loop `vmath::exp` vectorises in), then added one by one in order — the bits of adding
/// each as it is computed, at a fraction of the cost (a mixture's `log_sum_exp` per
/// observation is a few terms long).
#[inline(always)]
fn add_exps(mut s: f64, group: &[f64], m: f64) -> f64 {
    let mut e = [0.0; LSE_GROUP];
    for (e, v) in e.iter_mut().zip(group) {
        *e = vmath::exp(v - m);
    }
    for e in &e[..group.len()] {
        s += e;
    }
    s
}

/// `exp(xᵢ − c)` for the at most `W` values of `xs` (the rest of the row: `exp(0)`),
/// computed as one row of `W` (2 or 4) so that the exps vectorise in pairs whatever the
/// length: one at a time, a few values' exps cost nearly twice as much, and `add_exps`'s
/// loop over a 16-value buffer costs more than the exps at two or three values. Each exp is
/// `vmath::exp`'s, the same bits in a row or alone.
#[inline(always)]
fn padded_exps<const W: usize>(xs: &[f64], c: f64) -> [f64; W] {
    debug_assert!(xs.len() <= W);
    // Element by element with a constant trip count (a copy of `xs` became a `memcpy` call).
    let mut e = [0.0; W];
    for (i, e) in e.iter_mut().enumerate() {
        *e = xs.get(i).copied().unwrap_or(c) - c;
    }
    for e in e.iter_mut() {
        *e = vmath::exp(*e);
    }
    e
}

/// [`log_sum_exp`]'s gradient rule: `d += g · exp(x − y)` at its value `y`.
#[inline(always)]
pub(crate) fn log_sum_exp_backward(xs: &[f64], y: f64, g: f64, d: &mut [f64]) {
    if xs.len() <= 4 {
        let mut add = |e: &[f64]| d.iter_mut().zip(e).for_each(|(d, e)| *d += g * e);
        if xs.len() <= 2 {
            add(&padded_exps::<2>(xs, y)[..xs.len()]);
        } else {
            add(&padded_exps::<4>(xs, y)[..xs.len()]);
        }
        return;
    }
    for (d, x) in d.iter_mut().zip(xs) {
        *d += g * vmath::exp(x - y);
    }
}

/// The running sums of `xs`, left to right.
#[inline(always)]
pub(crate) fn cumsum(xs: &[f64], out: &mut [f64]) {
    let mut acc = 0.0;
    for (o, v) in out.iter_mut().zip(xs) {
        acc += v;
        *o = acc;
    }
}

/// [`cumsum`]'s gradient rule: each input's adjoint gets the sum of the output adjoints from
/// its position on, accumulated from the last.
#[inline(always)]
pub(crate) fn cumsum_backward(g: &[f64], d: &mut [f64]) {
    let mut acc = 0.0;
    for i in (0..d.len()).rev() {
        acc += g[i];
        d[i] += acc;
    }
}

/// The exps [`log_sum_exp`] computes before adding them (a multiple of 8, so every ISA level's
/// vector width divides it).
const LSE_GROUP: usize = 16;

/// `out = M v` for column-major `M`: each row accumulates `m[r, c] * v[c]` over the columns
/// in order (the order the parallel row blocks of `crate::par` use too). Four columns are
/// applied per pass over `out`, adding their products one after another, which is the same
/// sequence of roundings as four passes with a quarter of the memory traffic.
/// (The batched executor's lane-aware rules, `batched.rs`, repeat this order and [`dot`]'s
/// chunks: change them together; `tests/executors.rs` compares the bits.)
#[inline(always)]
pub fn matvec(m: &[f64], v: &[f64], rows: usize, cols: usize, out: &mut [f64]) {
    matvec_rows(m, v, rows, cols, 0, out)
}

/// Rows `r0 .. r0 + out.len()` of `M v` ([`matvec`]'s order, which does not depend on the
/// block): a parallel row block, or a row block of a fused kernel.
// Index loops on purpose: see `crate::simd` (iterator adapters left out of line run at the
// baseline level).
#[allow(clippy::needless_range_loop)]
#[inline(always)]
pub(crate) fn matvec_rows(
    m: &[f64],
    v: &[f64],
    rows: usize,
    cols: usize,
    r0: usize,
    out: &mut [f64],
) {
    out.iter_mut().for_each(|o| *o = 0.0);
    let nr = out.len();
    let col = |c: usize| &m[c * rows + r0..c * rows + r0 + nr];
    let mut c = 0;
    while c + 4 <= cols {
        let (v0, v1, v2, v3) = (v[c], v[c + 1], v[c + 2], v[c + 3]);
        let rows4 = out
            .iter_mut()
            .zip(col(c))
            .zip(col(c + 1))
            .zip(col(c + 2))
            .zip(col(c + 3));
        for ((((o, m0), m1), m2), m3) in rows4 {
            *o = (((*o + m0 * v0) + m1 * v1) + m2 * v2) + m3 * v3;
        }
        c += 4;
    }
    for c in c..cols {
        let vc = v[c];
        for (o, mr) in out.iter_mut().zip(col(c)) {
            *o += mr * vc;
        }
    }
}

/// `d += Mᵀ g` for column-major `M` (`rows × cols`): `d[c] += dot(M[:, c], g)`, each dot in
/// exactly [`dot`]'s order, four columns per pass over `g`.
// Index loops on purpose: see `crate::simd` (iterator adapters left out of line run at the
// baseline level).
#[allow(clippy::needless_range_loop)]
#[inline(always)]
pub(crate) fn matvec_t_add(
    isa: Isa,
    m: &[f64],
    g: &[f64],
    rows: usize,
    cols: usize,
    d: &mut [f64],
) {
    let col = |c: usize| &m[c * rows..(c + 1) * rows];
    let mut c = 0;
    while c + 4 <= cols {
        let s = dot4(isa, [col(c), col(c + 1), col(c + 2), col(c + 3)], g);
        for (dc, sc) in d[c..c + 4].iter_mut().zip(s) {
            *dc += sc;
        }
        c += 4;
    }
    for c in c..cols {
        d[c] += dot(isa, col(c), g);
    }
}

/// `out[c] = dot(M[r0..r1, c], g[r0..r1])` for every column of column-major `M` (`rows ×
/// cols`), rows `r0..r1` being one chunk: that chunk's term of each column's [`dot`] (four
/// columns per pass over `g`). Added in chunk order, these give [`matvec_t_add`]'s sums; the
/// fused GLM adds them block by block, the sharded executor folds them across ranks.
// Index loops on purpose: see `crate::simd` (iterator adapters left out of line run at the
// baseline level).
#[allow(clippy::needless_range_loop, clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn block_dots(
    isa: Isa,
    m: &[f64],
    g: &[f64],
    rows: usize,
    cols: usize,
    r0: usize,
    r1: usize,
    out: &mut [f64],
) {
    let p = &g[r0..r1];
    let col = |c: usize| &m[c * rows + r0..c * rows + r1];
    let mut c = 0;
    while c + 4 <= cols {
        out[c..c + 4].copy_from_slice(&dot4(isa, [col(c), col(c + 1), col(c + 2), col(c + 3)], p));
        c += 4;
    }
    for c in c..cols {
        out[c] = dot(isa, col(c), p);
    }
}

/// [`block_dots`] in pieces: `lanes[c]` plus the lane sums of rows `i0 .. i0 + p.len()` of
/// column `c` times `p` (`p.len()` a multiple of 8, `i0 − r0` too); [`block_dots_finish`]
/// completes them. The fused GLM feeds a block this way, a few rows at a time, while those
/// rows of `M` are in L1.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
pub(crate) fn block_dot_lanes(
    isa: Isa,
    m: &[f64],
    p: &[f64],
    rows: usize,
    i0: usize,
    lanes: &mut [[f64; 8]],
) {
    let n = p.len();
    let col = |c: usize| &m[c * rows + i0..c * rows + i0 + n];
    let cols = lanes.len();
    let mut c = 0;
    while c + 4 <= cols {
        let start = [lanes[c], lanes[c + 1], lanes[c + 2], lanes[c + 3]];
        let l =
            crate::simd::dot4_lanes(isa, start, [col(c), col(c + 1), col(c + 2), col(c + 3)], p);
        lanes[c..c + 4].copy_from_slice(&l);
        c += 4;
    }
    for c in c..cols {
        lanes[c] = crate::simd::dot_lanes(isa, lanes[c], col(c), p);
    }
}

/// [`block_dots`]' result for the block `r0..r1` from [`block_dot_lanes`]' lanes of its first
/// `n − n mod 8` rows: `out[c]` is [`dot`]'s sum of the block, to the bit.
#[inline(always)]
pub(crate) fn block_dots_finish(
    m: &[f64],
    p: &[f64],
    rows: usize,
    r0: usize,
    r1: usize,
    lanes: &[[f64; 8]],
    out: &mut [f64],
) {
    let t0 = r0 + (r1 - r0) / 8 * 8;
    for (c, (o, l)) in out.iter_mut().zip(lanes).enumerate() {
        // `dot` adds the chunk's sum to a zero total.
        *o = 0.0 + finish_dot(l, &m[c * rows + t0..c * rows + r1], &p[t0..r1]);
    }
}

/// `d[j] += Σ_r G[r, j]` for column-major `G` (`n × d.len()`), each column's sum one running
/// addition in row order, as a scatter-add of the rows would make it. Eight columns run side
/// by side, so that eight independent additions overlap instead of every addition waiting for
/// the one before; each column's order, and so its bits, is unchanged.
// Index loops on purpose: row `r` of eight columns per step.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
pub(crate) fn column_sums_add(g: &[f64], n: usize, d: &mut [f64]) {
    const W: usize = 8;
    let mut j = 0;
    while j + W <= d.len() {
        let mut acc = [0.0; W];
        acc.copy_from_slice(&d[j..j + W]);
        let cols: [&[f64]; W] = std::array::from_fn(|w| &g[(j + w) * n..(j + w + 1) * n]);
        for r in 0..n {
            for w in 0..W {
                acc[w] += cols[w][r];
            }
        }
        d[j..j + W].copy_from_slice(&acc);
        j += W;
    }
    for (dj, gj) in d[j..].iter_mut().zip(g[j * n..].chunks_exact(n.max(1))) {
        *dj = gj.iter().fold(*dj, |acc, v| acc + v);
    }
}

/// `D += g vᵀ` for column-major `D` (`rows × cols`): the adjoint of `M` in `M v`.
#[inline(always)]
pub(crate) fn outer_add(g: &[f64], v: &[f64], rows: usize, cols: usize, d: &mut [f64]) {
    for c in 0..cols {
        let vc = v[c];
        for (dr, gr) in d[c * rows..(c + 1) * rows].iter_mut().zip(g) {
            *dr += gr * vc;
        }
    }
}

/// Rows per block of the blocked matrix–matrix kernels (a block of `A` or `G` stays in L1/L2
/// while several output columns use it). Blocking never changes an element's summation order.
const MM_ROWS: usize = 512;

/// `C = A B` (column-major, `A` is `n × k`, `B` is `k × m`), blocked: per block of
/// [`MM_ROWS`] rows, four output columns at a time, each element accumulating
/// `a[r, l] b[l, j]` over `l` in order from `+0`, one rounding per addition, exactly as
/// [`matvec`] does for one column (so `C`'s column `j` has the bits of `A · B[:, j]`); then
/// `bias[j]` added (the bits of adding it after). The sums of [`MM_TILE`] rows × four columns
/// stay in registers over `l`, and each element is stored once: no clearing pass, no reloads.
#[inline(always)]
pub fn matmul(
    a: &[f64],
    b: &[f64],
    bias: Option<&[f64]>,
    n: usize,
    k: usize,
    m: usize,
    out: &mut [f64],
) {
    let mut r0 = 0;
    while r0 < n {
        let r1 = n.min(r0 + MM_ROWS);
        let mut j = 0;
        while j < m {
            let w = if j + 4 <= m { 4 } else { 1 };
            let mut r = r0;
            while r + MM_TILE <= r1 {
                if w == 4 {
                    matmul_tile::<4>(a, b, bias, n, k, r, j, out);
                } else {
                    matmul_tile::<1>(a, b, bias, n, k, r, j, out);
                }
                r += MM_TILE;
            }
            for r in r..r1 {
                for t in j..j + w {
                    let mut s = 0.0;
                    for l in 0..k {
                        s += a[l * n + r] * b[t * k + l];
                    }
                    if let Some(c) = bias {
                        s += c[t];
                    }
                    out[t * n + r] = s;
                }
            }
            j += w;
        }
        r0 = r1;
    }
}

/// Rows per register tile of [`matmul`] (one AVX-512 vector, two AVX2 ones).
const MM_TILE: usize = 8;

/// [`matmul`]'s rows `r..r + MM_TILE` of columns `j..j + W`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn matmul_tile<const W: usize>(
    a: &[f64],
    b: &[f64],
    bias: Option<&[f64]>,
    n: usize,
    k: usize,
    r: usize,
    j: usize,
    out: &mut [f64],
) {
    let mut s = [[0.0f64; MM_TILE]; W];
    for l in 0..k {
        let al: &[f64; MM_TILE] = a[l * n + r..l * n + r + MM_TILE].try_into().unwrap();
        for (t, st) in s.iter_mut().enumerate() {
            let bl = b[(j + t) * k + l];
            for i in 0..MM_TILE {
                st[i] += al[i] * bl;
            }
        }
    }
    if let Some(c) = bias {
        for (t, st) in s.iter_mut().enumerate() {
            let ct = c[j + t];
            st.iter_mut().for_each(|v| *v += ct);
        }
    }
    for (t, st) in s.iter().enumerate() {
        out[(j + t) * n + r..(j + t) * n + r + MM_TILE].copy_from_slice(st);
    }
}

/// `dB += Aᵀ G` for `C = A B` (`G` is `n × m`): `dB[l, j] += dot(A[:, l], G[:, j])`, each
/// in [`dot`]'s order ([`matvec_t_add`] per column of `G`). The `k · m` dots run four at a
/// time ([`dot4`]), four columns of `A` against one of `G` or, when that leaves fewer dots
/// alone (`k` not a multiple of four, `m` one), four of `G` against one of `A` (`x · y` is
/// `y · x` to the bit).
#[inline(always)]
pub(crate) fn matmul_adj_b(
    isa: Isa,
    a: &[f64],
    g: &[f64],
    n: usize,
    k: usize,
    m: usize,
    d: &mut [f64],
) {
    if m * (k % 4) <= k * (m % 4) {
        for j in 0..m {
            matvec_t_add(
                isa,
                a,
                &g[j * n..(j + 1) * n],
                n,
                k,
                &mut d[j * k..(j + 1) * k],
            );
        }
        return;
    }
    let gcol = |j: usize| &g[j * n..(j + 1) * n];
    for l in 0..k {
        let al = &a[l * n..(l + 1) * n];
        let mut j = 0;
        while j + 4 <= m {
            let s = dot4(isa, [gcol(j), gcol(j + 1), gcol(j + 2), gcol(j + 3)], al);
            for (t, st) in s.into_iter().enumerate() {
                d[(j + t) * k + l] += st;
            }
            j += 4;
        }
        for j in j..m {
            d[j * k + l] += dot(isa, gcol(j), al);
        }
    }
}

/// `dA += G Bᵀ` for `C = A B` (`G` is `n × m`): each `dA[r, l]` adds `g[r, j] b[l, j]` over
/// `j` in order, blocked by rows so a block of `G` stays in cache for every `l`.
#[inline(always)]
pub(crate) fn matmul_adj_a(g: &[f64], b: &[f64], n: usize, k: usize, m: usize, d: &mut [f64]) {
    let mut r0 = 0;
    while r0 < n {
        let nr = MM_ROWS.min(n - r0);
        for l in 0..k {
            let dl = &mut d[l * n + r0..l * n + r0 + nr];
            for j in 0..m {
                let bl = b[j * k + l];
                let gj = &g[j * n + r0..j * n + r0 + nr];
                for i in 0..nr {
                    dl[i] += gj[i] * bl;
                }
            }
        }
        r0 += nr;
    }
}

/// Runs the loop macro `$each` with a constant variant for the common unary functions (so the
/// rule's `match` folds away, the loop inlines it and vectorises), and with `f` itself,
/// dispatched per element, for the rest.
macro_rules! common_unary {
    ($f:expr, $each:ident) => {
        match $f {
            UnaryFn::Neg => $each!(UnaryFn::Neg),
            UnaryFn::Exp => $each!(UnaryFn::Exp),
            UnaryFn::Log => $each!(UnaryFn::Log),
            UnaryFn::Square => $each!(UnaryFn::Square),
            UnaryFn::Tanh => $each!(UnaryFn::Tanh),
            UnaryFn::Log1p => $each!(UnaryFn::Log1p),
            UnaryFn::Expm1 => $each!(UnaryFn::Expm1),
            UnaryFn::InvLogit => $each!(UnaryFn::InvLogit),
            UnaryFn::Log1pExp => $each!(UnaryFn::Log1pExp),
            UnaryFn::LogInvLogit => $each!(UnaryFn::LogInvLogit),
            UnaryFn::Log1mInvLogit => $each!(UnaryFn::Log1mInvLogit),
            UnaryFn::Logit => $each!(UnaryFn::Logit),
            UnaryFn::Log1m => $each!(UnaryFn::Log1m),
            UnaryFn::Sqrt => $each!(UnaryFn::Sqrt),
            UnaryFn::Inv => $each!(UnaryFn::Inv),
            UnaryFn::Scale(c) => $each!(UnaryFn::Scale(c)),
            f => $each!(f),
        }
    };
}

/// `d += g · f'(x)` elementwise, or with `STORE`, `d = 0.0 + g · f'(x)` (the bits of adding
/// to a cleared `d`, without reading it).
#[inline(always)]
pub(crate) fn unary_backward<const STORE: bool>(
    f: UnaryFn,
    xs: &[f64],
    ys: &[f64],
    g: &[f64],
    d: &mut [f64],
) {
    // The common functions' loops with their derivative rule inlined (`common_unary!`).
    let n = ys.len();
    let (xs, g, d) = (&xs[..n], &g[..n], &mut d[..n]);
    macro_rules! each {
        ($f:expr) => {{
            for i in 0..n {
                let base = if STORE { 0.0 } else { d[i] };
                d[i] = base + strong_mul(g[i], $f.deriv(xs[i], ys[i]));
            }
        }};
    }
    common_unary!(f, each)
}

#[inline(always)]
pub(crate) fn unary_forward(f: UnaryFn, x: &[f64], out: &mut [f64]) {
    // The common functions get their own loop (`common_unary!`) so they inline and vectorise.
    // Index loops, not `zip(..).for_each`: a closure too large to inline leaves `Zip::fold` out
    // of line, which then runs at the baseline level (see `crate::simd`).
    macro_rules! each {
        ($f:expr) => {{
            let x = &x[..out.len()];
            for i in 0..out.len() {
                out[i] = $f.value(x[i]);
            }
        }};
    }
    common_unary!(f, each)
}

#[inline(always)]
fn zip_broadcast(a: &[f64], b: &[f64], out: &mut [f64], f: impl Fn(f64, f64) -> f64) {
    let n = out.len();
    if a.len() == n && b.len() == n {
        for i in 0..n {
            out[i] = f(a[i], b[i]);
        }
    } else if a.len() == 1 && b.len() == n {
        let a0 = a[0];
        for i in 0..n {
            out[i] = f(a0, b[i]);
        }
    } else if b.len() == 1 && a.len() == n {
        let b0 = b[0];
        for i in 0..n {
            out[i] = f(a[i], b0);
        }
    } else {
        for i in 0..n {
            out[i] = f(a[i % a.len()], b[i % b.len()]);
        }
    }
}

#[inline(always)]
pub(crate) fn binary_forward(f: BinaryFn, a: &[f64], b: &[f64], out: &mut [f64]) {
    match f {
        BinaryFn::Add => zip_broadcast(a, b, out, |x, y| x + y),
        BinaryFn::Sub => zip_broadcast(a, b, out, |x, y| x - y),
        BinaryFn::Mul => zip_broadcast(a, b, out, |x, y| x * y),
        BinaryFn::Div => zip_broadcast(a, b, out, |x, y| x / y),
        _ => zip_broadcast(a, b, out, |x, y| f.value(x, y)),
    }
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn binary_backward(
    isa: Isa,
    f: BinaryFn,
    a: Arg,
    b: Arg,
    stores: u32,
    lo: &[f64],
    consts: &[f64],
    y: &[f64],
    g: &[f64],
    adj_lo: &mut [f64],
) {
    let n = y.len();
    let av = read(a, lo, consts);
    let bv = read(b, lo, consts);
    // Operand by operand (`a`'s update complete before `b`'s), chunk by chunk.
    for operand in [Operand::A, Operand::B] {
        if !operand.of(a, b).is_var() {
            continue;
        }
        if operand.of(a, b).len() != n && n > CHUNK && !matches!(f, BinaryFn::Add | BinaryFn::Sub) {
            // A broadcast scalar's total over several chunks: each chunk's sum is one chain
            // of dependent additions, so chunks are summed side by side
            // ([`chunk_sums_side_by_side`]): the same additions in the same order per chunk.
            let total = match f {
                // A constant function each, so the closures compile to its partials alone.
                BinaryFn::Mul => broadcast_total(operand, av, bv, y, g, |x, z, v| {
                    BinaryFn::Mul.partials(x, z, v)
                }),
                BinaryFn::Div => broadcast_total(operand, av, bv, y, g, |x, z, v| {
                    BinaryFn::Div.partials(x, z, v)
                }),
                _ => broadcast_total(operand, av, bv, y, g, |x, z, v| f.partials(x, z, v)),
            };
            binary_backward_finish(f, operand, a, b, n, total, adj_lo);
            continue;
        }
        let mut total = 0.0;
        let store = stores >> (operand as u32) & 1 != 0;
        // (A `while` rather than `step_by`: the iterator's setup cost more than the rows of
        // the short ops scalar blocks hold.)
        let mut c0 = 0;
        while c0 < n {
            total += binary_backward_rows(
                isa,
                f,
                operand,
                a,
                b,
                store,
                av,
                bv,
                y,
                g,
                adj_lo,
                c0,
                n.min(c0 + CHUNK),
            );
            c0 += CHUNK;
        }
        binary_backward_finish(f, operand, a, b, n, total, adj_lo);
    }
}

/// [`binary_backward_with`]'s total for the broadcast scalar `operand` over all `y.len()` rows
/// (the other operand full-length), chunk by chunk as there: the same bits. Out of line: a
/// chain of additions gains nothing from the per-ISA copies, and inlined into every one it
/// made the full-length path of `binary_backward` around it slower.
#[inline(never)]
fn broadcast_total(
    operand: Operand,
    av: &[f64],
    bv: &[f64],
    y: &[f64],
    g: &[f64],
    p: impl Fn(f64, f64, f64) -> (f64, f64),
) -> f64 {
    let n = y.len();
    let (g, y) = (&g[..n], &y[..n]);
    match operand {
        Operand::A => {
            let (x, bv) = (av[0], &bv[..n]);
            chunk_sums_side_by_side(n, |i| strong_mul(g[i], p(x, bv[i], y[i]).0))
        }
        Operand::B => {
            let (av, z) = (&av[..n], bv[0]);
            chunk_sums_side_by_side(n, |i| strong_mul(g[i], p(av[i], z, y[i]).1))
        }
    }
}

/// `Σ_chunks (0 + term(c0) + term(c0 + 1) + …)`: each [`CHUNK`]-element chunk of `0..n`
/// summed left to right from `+0`, the chunk sums added in chunk order from `+0` — the
/// arithmetic of summing one chunk after another. That way each addition waits for the one
/// before (the adder's latency per element); here four, then two, full chunks advance
/// together, one accumulator each, so their additions overlap. Each accumulator still takes
/// its own chunk's terms in order: the same bits.
#[inline(always)]
pub(crate) fn chunk_sums_side_by_side(n: usize, term: impl Fn(usize) -> f64) -> f64 {
    let full = n / CHUNK;
    let mut total = 0.0;
    let mut c = 0;
    while c + 4 <= full {
        let base = c * CHUNK;
        let (mut s0, mut s1, mut s2, mut s3) = (0.0, 0.0, 0.0, 0.0);
        for j in base..base + CHUNK {
            s0 += term(j);
            s1 += term(j + CHUNK);
            s2 += term(j + 2 * CHUNK);
            s3 += term(j + 3 * CHUNK);
        }
        total += s0;
        total += s1;
        total += s2;
        total += s3;
        c += 4;
    }
    if c + 2 <= full {
        let base = c * CHUNK;
        let (mut s0, mut s1) = (0.0, 0.0);
        for j in base..base + CHUNK {
            s0 += term(j);
            s1 += term(j + CHUNK);
        }
        total += s0;
        total += s1;
        c += 2;
    }
    while c * CHUNK < n {
        let mut s = 0.0;
        for i in c * CHUNK..n.min((c + 1) * CHUNK) {
            s += term(i);
        }
        total += s;
        c += 1;
    }
    total
}

/// [`binary_backward`] at the baseline level for an arithmetic op (`+ − × ÷`) of at most
/// [`SHORT_BINARY`] elements, in direct loops: the same partials, updates and sums in the same
/// order (one chunk: a broadcast operand's total is `0 + ` its rows' sum, [`chunked_sum`]'s
/// for `+`/`−`), so the same bits. The general rule's chunk loop, operand dispatch and slice
/// set-up cost several times these few elements' arithmetic, and models with a short vector
/// op per observation (rating-scale and categorical likelihoods, in scalar blocks) run one per
/// element of their data.
fn binary_backward_short(
    f: BinaryFn,
    a: Arg,
    b: Arg,
    out: crate::ir::Slot,
    consts: &[f64],
    vals: &[f64],
    adj: &mut [f64],
) {
    let (n, o) = (out.len as usize, out.off as usize);
    // The inputs' adjoints lie below the output's (the layout invariant).
    let (adj_lo, adj_hi) = adj.split_at_mut(o);
    let g = &adj_hi[..n];
    let y = &vals[o..o + n];
    let (av, bv) = (read(a, vals, consts), read(b, vals, consts));
    short_operands(f, a, b, av, bv, y, g, adj_lo);
}

/// [`binary_backward_short`] on its operands' values `av`, `bv`, the output `y`, its adjoint
/// `g` and the adjoints below the output `adj_lo` (a scalar block's `ShortBinary` passes
/// them from its own checked buffers).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn short_operands(
    f: BinaryFn,
    a: Arg,
    b: Arg,
    av: &[f64],
    bv: &[f64],
    y: &[f64],
    g: &[f64],
    adj_lo: &mut [f64],
) {
    if a.is_var() {
        short_operand(f, Operand::A, a, av, bv, y, g, adj_lo);
    }
    if b.is_var() {
        short_operand(f, Operand::B, b, av, bv, y, g, adj_lo);
    }
}

/// One operand's part of [`binary_backward_short`].
#[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
#[inline(always)]
fn short_operand(
    f: BinaryFn,
    operand: Operand,
    target: Arg,
    av: &[f64],
    bv: &[f64],
    y: &[f64],
    g: &[f64],
    adj_lo: &mut [f64],
) {
    let n = g.len();
    let off = target.off as usize;
    let full = target.len() == n;
    if let BinaryFn::Add | BinaryFn::Sub = f {
        let negate = operand == Operand::B && matches!(f, BinaryFn::Sub);
        if full {
            let d = &mut adj_lo[off..off + n];
            for (d, gi) in d.iter_mut().zip(g) {
                *d += if negate { -1.0 * gi } else { *gi };
            }
        } else {
            let total = 0.0 + chunked_sum(Isa::Baseline, g);
            adj_lo[off] += if negate { -1.0 } else { 1.0 } * total;
        }
        return;
    }
    // `binary_backward_rows`'s `×` and `÷` partials.
    let (ia, ib) = (av.len() == n, bv.len() == n);
    let partial = |i: usize| {
        let (x, z) = (av[if ia { i } else { 0 }], bv[if ib { i } else { 0 }]);
        let (pa, pb) = match f {
            BinaryFn::Mul => (z, x),
            _ => (1.0 / z, -y[i] / z),
        };
        match operand {
            Operand::A => pa,
            Operand::B => pb,
        }
    };
    if full {
        let d = &mut adj_lo[off..off + n];
        for i in 0..n {
            d[i] += strong_mul(g[i], partial(i));
        }
    } else {
        let mut s = 0.0;
        for i in 0..n {
            s += strong_mul(g[i], partial(i));
        }
        adj_lo[off] += 0.0 + s;
    }
}

/// One operand of an elementwise binary op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operand {
    A,
    B,
}

impl Operand {
    #[inline(always)]
    pub(crate) fn of(self, a: Arg, b: Arg) -> Arg {
        match self {
            Operand::A => a,
            Operand::B => b,
        }
    }
}

/// The gradient rule of an elementwise binary op for one operand over rows `r0..r1` of one
/// chunk: a full-length operand's adjoint gets those rows' terms; for a broadcast scalar
/// operand the rows' partial sum is returned (0 otherwise), to be added in chunk order and
/// applied by [`binary_backward_finish`]. `binary_backward` runs every chunk; the sharded
/// executor runs the chunks its rank owns and folds the partial sums across ranks.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn binary_backward_rows(
    isa: Isa,
    f: BinaryFn,
    operand: Operand,
    a: Arg,
    b: Arg,
    store: bool,
    av: &[f64],
    bv: &[f64],
    y: &[f64],
    g: &[f64],
    adj_lo: &mut [f64],
    r0: usize,
    r1: usize,
) -> f64 {
    // Fast paths for the arithmetic that dominates models.
    if let BinaryFn::Add | BinaryFn::Sub = f {
        let target = operand.of(a, b);
        let g = &g[r0..r1];
        if target.len() != y.len() {
            return chunked_sum(isa, g);
        }
        let d = &mut adj_lo[target.off as usize + r0..target.off as usize + r1];
        let base = |d: f64| if store { 0.0 } else { d };
        if operand == Operand::B && matches!(f, BinaryFn::Sub) {
            d.iter_mut()
                .zip(g)
                .for_each(|(d, gi)| *d = base(*d) + -1.0 * gi);
        } else {
            d.iter_mut().zip(g).for_each(|(d, gi)| *d = base(*d) + gi);
        }
        return 0.0;
    }
    // Specialised partial rules (the same formulas as `BinaryFn::partials`, so results are
    // identical to the parallel path, which calls `partials`).
    macro_rules! with {
        ($p:expr) => {
            binary_backward_storing(store, operand, a, b, av, bv, y, g, adj_lo, r0, r1, $p)
        };
    }
    match f {
        BinaryFn::Mul => with!(|x, z, _| (z, x)),
        BinaryFn::Div => with!(|_, z, v| (1.0 / z, -v / z)),
        _ => other_backward_rows(&f, operand, &a, &b, store, av, bv, y, g, adj_lo, r0, r1),
    }
}

/// [`binary_backward_rows`] of the functions without a specialised rule, out of line and
/// with no aggregate passed by value: their `partials` is too large to inline, and a call
/// left inside a dispatched body that passes or returns an aggregate stops LLVM from inlining
/// the body into the instruction set's copy (`crate::simd`), which then ran the `+ − × ÷`
/// rules above at the baseline level too.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn other_backward_rows(
    f: &BinaryFn,
    operand: Operand,
    a: &Arg,
    b: &Arg,
    store: bool,
    av: &[f64],
    bv: &[f64],
    y: &[f64],
    g: &[f64],
    adj_lo: &mut [f64],
    r0: usize,
    r1: usize,
) -> f64 {
    let (f, a, b) = (*f, *a, *b);
    let p = |x, z, v| f.partials(x, z, v);
    binary_backward_storing(store, operand, a, b, av, bv, y, g, adj_lo, r0, r1, p)
}

/// [`binary_backward_with`], storing into the target's adjoint where `store` says so.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn binary_backward_storing(
    store: bool,
    operand: Operand,
    a: Arg,
    b: Arg,
    av: &[f64],
    bv: &[f64],
    y: &[f64],
    g: &[f64],
    adj_lo: &mut [f64],
    r0: usize,
    r1: usize,
    p: impl Fn(f64, f64, f64) -> (f64, f64),
) -> f64 {
    if store {
        binary_backward_with::<true>(operand, a, b, av, bv, y, g, adj_lo, r0, r1, p)
    } else {
        binary_backward_with::<false>(operand, a, b, av, bv, y, g, adj_lo, r0, r1, p)
    }
}

/// Adds a broadcast scalar operand's total (its rows' partial sums added in chunk order) to
/// its adjoint; nothing for a full-length operand.
pub(crate) fn binary_backward_finish(
    f: BinaryFn,
    operand: Operand,
    a: Arg,
    b: Arg,
    n: usize,
    total: f64,
    adj_lo: &mut [f64],
) {
    let target = operand.of(a, b);
    if !target.is_var() || target.len() == n {
        return;
    }
    let sign = if operand == Operand::B && matches!(f, BinaryFn::Sub) {
        -1.0
    } else {
        1.0
    };
    if let BinaryFn::Add | BinaryFn::Sub = f {
        adj_lo[target.off as usize] += sign * total;
    } else {
        adj_lo[target.off as usize] += total;
    }
}

/// The general elementwise gradient rule given the partials `p(a, b, y)`, for one operand
/// over rows `r0..r1` (see [`binary_backward_rows`]); with `STORE`, a full-length operand's
/// adjoint is stored (`0.0 + ·`, the bits of adding to a cleared slot), not added to.
#[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
#[inline(always)]
fn binary_backward_with<const STORE: bool>(
    operand: Operand,
    a: Arg,
    b: Arg,
    av: &[f64],
    bv: &[f64],
    y: &[f64],
    g: &[f64],
    adj_lo: &mut [f64],
    r0: usize,
    r1: usize,
    p: impl Fn(f64, f64, f64) -> (f64, f64),
) -> f64 {
    let n = y.len();
    let target = operand.of(a, b);
    let full = target.len() == n;
    let m = r1 - r0;
    let (y, g) = (&y[r0..r1], &g[r0..r1]);
    // One loop per operand and per layout of the two inputs (each a run of the chunk's rows or
    // one broadcast value), so that the loops index only slices of the chunk's length: no
    // choice per element between a row and the broadcast value, no bounds checks, and LLVM
    // vectorises the full-length update (a choice inside the loop kept it scalar). Every
    // element's arithmetic, and the order of a broadcast operand's sum, are unchanged.
    macro_rules! rows {
        ($at_a:expr, $at_b:expr, $sel:expr) => {{
            let (at_a, at_b, sel) = ($at_a, $at_b, $sel);
            let pick = |j: usize| sel(p(at_a(j), at_b(j), y[j]));
            if full {
                let off = target.off as usize;
                let d = &mut adj_lo[off + r0..off + r1];
                for j in 0..m {
                    let base = if STORE { 0.0 } else { d[j] };
                    d[j] = base + strong_mul(g[j], pick(j));
                }
                0.0
            } else {
                // (Index loops, not `skip`: see `crate::simd`.)
                let mut s = 0.0;
                for j in 0..m {
                    s += strong_mul(g[j], pick(j));
                }
                s
            }
        }};
    }
    macro_rules! operands {
        ($at_a:expr, $at_b:expr) => {
            match operand {
                Operand::A => rows!($at_a, $at_b, |(pa, _): (f64, f64)| pa),
                Operand::B => rows!($at_a, $at_b, |(_, pb): (f64, f64)| pb),
            }
        };
    }
    match (av.len() == n, bv.len() == n) {
        (true, true) => {
            let (av, bv) = (&av[r0..r1], &bv[r0..r1]);
            operands!(|j: usize| av[j], |j: usize| bv[j])
        }
        (true, false) => {
            let (av, b0) = (&av[r0..r1], bv[0]);
            operands!(|j: usize| av[j], |_: usize| b0)
        }
        (false, true) => {
            let (a0, bv) = (av[0], &bv[r0..r1]);
            operands!(|_: usize| a0, |j: usize| bv[j])
        }
        (false, false) => {
            let (a0, b0) = (av[0], bv[0]);
            operands!(|_: usize| a0, |_: usize| b0)
        }
    }
}

/// (sample sd, mean, sum of squared deviations) of `x`, summed in chunked order like every
/// reduction; one element has sd 0.
pub(crate) fn sd_parts(x: &[f64]) -> (f64, f64, f64) {
    let n = x.len();
    if n < 2 {
        return (0.0, x.first().copied().unwrap_or(0.0), 0.0);
    }
    let mean = chunked_sum(Isa::Baseline, x) / n as f64;
    let mut sum_of_squares = 0.0;
    for chunk in x.chunks(2048) {
        let mut s = 0.0;
        for v in chunk {
            let d = v - mean;
            s += d * d;
        }
        sum_of_squares += s;
    }
    (
        (sum_of_squares / (n - 1) as f64).sqrt(),
        mean,
        sum_of_squares,
    )
}

#[cfg(test)]
mod tests {
    use super::scatter_add;
    use super::{binary_backward, binary_backward_short, BinaryFn, Isa, SHORT_BINARY};
    use super::{dispatch, strong_mul, unary_backward, unary_forward, UnaryFn};
    use crate::ir::{Arg, Slot};
    use crate::simd::SimdLevel;

    /// `log_sum_exp` of at most 4 values (exps as one padded row) gives the bits of the
    /// 16-value buffered form it replaced there (`add_exps`), and its gradient those of one
    /// exp per value, over values spread across the exp's range, −∞ among them.
    #[test]
    fn short_log_sum_exp_keeps_the_buffered_forms_bits() {
        use super::{add_exps, log_sum_exp, log_sum_exp_backward, vmath};
        let mut rng = hazel_testdata::Xorshift(0x15e_5eed);
        let mut draw = || match rng.below(12) {
            0 => f64::NEG_INFINITY,
            1 => -745.0 + (rng.below(1000) as f64) / 7.0,
            _ => (rng.below(20001) as f64 - 10000.0) / 313.0,
        };
        for n in 1..=4 {
            for _ in 0..2000 {
                let x: Vec<f64> = (0..n).map(|_| draw()).collect();
                let m = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let y = log_sum_exp(&x);
                if m.is_finite() {
                    let want = m + vmath::ln(0.0 + add_exps(0.0, &x, m));
                    assert_eq!(y.to_bits(), want.to_bits(), "{x:?}");
                } else {
                    assert_eq!(y.to_bits(), m.to_bits(), "{x:?}");
                }
                let g = draw().max(-3.0);
                let d0: Vec<f64> = (0..n).map(|_| draw().max(-3.0)).collect();
                let mut got = d0.clone();
                log_sum_exp_backward(&x, y, g, &mut got);
                for ((got, d0), xi) in got.iter().zip(&d0).zip(&x) {
                    let want = d0 + g * vmath::exp(xi - y);
                    assert_eq!(got.to_bits(), want.to_bits(), "{x:?} at {xi}");
                }
            }
        }
    }

    /// The four side-by-side dots of `dot4` and both orders of `matmul_adj_b` give `dot`'s
    /// bits at every level: lengths below one lane group, with tails, over several chunks.
    #[test]
    fn dot4_and_the_matmul_adjoint_add_like_dot() {
        use super::{dot, dot4, matmul_adj_b, CHUNK};
        let mut rng = hazel_testdata::Xorshift(0x51f1_5eed);
        let mut draw = || (rng.below(20001) as f64 - 10000.0) / 977.0;
        for level in SimdLevel::available() {
            let isa = level.resolve().expect("available");
            for n in [1, 7, 8, 13, 500, CHUNK + 9, 2 * CHUNK + 3] {
                let cols: Vec<Vec<f64>> =
                    (0..4).map(|_| (0..n).map(|_| draw()).collect()).collect();
                let b: Vec<f64> = (0..n).map(|_| draw()).collect();
                let got = dispatch!(
                    isa,
                    dot4(
                        isa,
                        [&cols[0][..], &cols[1][..], &cols[2][..], &cols[3][..]],
                        &b
                    )
                );
                for t in 0..4 {
                    let want = dispatch!(isa, dot(isa, &cols[t], &b));
                    assert_eq!(got[t].to_bits(), want.to_bits(), "dot4 n {n} at {level:?}");
                }
            }
            // (k, m): dots grouped by columns of A (k = 8), by columns of G (k = 5, m = 16),
            // and with leftovers either way.
            for (n, k, m) in [(37, 8, 3), (500, 5, 16), (300, 3, 6), (9, 1, 1)] {
                let a: Vec<f64> = (0..n * k).map(|_| draw()).collect();
                let g: Vec<f64> = (0..n * m).map(|_| draw()).collect();
                let d0: Vec<f64> = (0..k * m).map(|_| draw()).collect();
                let mut got = d0.clone();
                dispatch!(isa, matmul_adj_b(isa, &a, &g, n, k, m, &mut got));
                for j in 0..m {
                    for l in 0..k {
                        let want = d0[j * k + l]
                            + dot(isa, &a[l * n..(l + 1) * n], &g[j * n..(j + 1) * n]);
                        let i = j * k + l;
                        assert_eq!(got[i].to_bits(), want.to_bits(), "dB {n}x{k}x{m} {i}");
                    }
                }
            }
        }
    }

    /// Every function `common_unary!` gives its own loop, and one it leaves to the per-element
    /// dispatch, at every SIMD level the CPU has: the loops give the per-element rule's bits,
    /// value and gradient (the vector forms of `vmath` round like the scalar ones).
    #[test]
    fn unary_loops_match_the_per_element_rule() {
        let fs = [
            UnaryFn::Neg,
            UnaryFn::Exp,
            UnaryFn::Log,
            UnaryFn::Square,
            UnaryFn::Tanh,
            UnaryFn::Log1p,
            UnaryFn::Expm1,
            UnaryFn::InvLogit,
            UnaryFn::Log1pExp,
            UnaryFn::LogInvLogit,
            UnaryFn::Log1mInvLogit,
            UnaryFn::Logit,
            UnaryFn::Log1m,
            UnaryFn::Sqrt,
            UnaryFn::Inv,
            UnaryFn::Scale(-2.5),
            UnaryFn::Lgamma,
        ];
        let mut rng = hazel_testdata::Xorshift(0x9e37_79b9_7f4a_7c15);
        let n = 37;
        // In (0, 1), where every function above is defined; and signed values of mixed scale.
        let unit: Vec<f64> = (0..n)
            .map(|_| (rng.below(999) + 1) as f64 / 1000.0)
            .collect();
        let signed: Vec<f64> = (0..n)
            .map(|_| (rng.below(2001) as f64 - 1000.0) / 50.0)
            .collect();
        let g: Vec<f64> = (0..n)
            .map(|_| rng.below(1000) as f64 / 7.0 - 60.0)
            .collect();
        for level in SimdLevel::available() {
            let isa = level.resolve().expect("available");
            for f in fs {
                for xs in [&unit, &signed] {
                    let want: Vec<f64> = xs.iter().map(|&x| f.value(x)).collect();
                    let mut got = vec![0.0; n];
                    dispatch!(isa, unary_forward(f, xs, &mut got));
                    let same = |a: &[f64], b: &[f64]| {
                        a.iter().zip(b).all(|(a, b)| a.to_bits() == b.to_bits())
                    };
                    assert!(same(&got, &want), "{f:?} value at {level:?}");
                    let d0: Vec<f64> = (0..n).map(|i| i as f64 * 0.25).collect();
                    let want_d: Vec<f64> = (0..n)
                        .map(|i| d0[i] + strong_mul(g[i], f.deriv(xs[i], want[i])))
                        .collect();
                    let mut d = d0.clone();
                    dispatch!(isa, unary_backward::<false>(f, xs, &want, &g, &mut d));
                    assert!(same(&d, &want_d), "{f:?} gradient at {level:?}");
                    // Stored: the bits of adding to a cleared slot, whatever `d` held.
                    let want_s: Vec<f64> = (0..n)
                        .map(|i| 0.0 + strong_mul(g[i], f.deriv(xs[i], want[i])))
                        .collect();
                    let mut d = vec![f64::NAN; n];
                    dispatch!(isa, unary_backward::<true>(f, xs, &want, &g, &mut d));
                    assert!(same(&d, &want_s), "{f:?} stored gradient at {level:?}");
                }
            }
        }
    }

    /// The short ops' gradient rule gives the general rule's bits: every arithmetic function,
    /// each operand full-length, broadcast or constant, the same slot on both sides, every
    /// length up to the limit, adjoints with a start value and adjoints of mixed scales.
    #[test]
    fn short_binary_backward_matches_the_general_rule() {
        let mut rng = hazel_testdata::Xorshift(0x2545_f491_4f6c_dd1d);
        let mut draw = move || {
            let u = rng.below(1 << 20) as f64 / (1 << 20) as f64;
            (u - 0.5) * 10f64.powi(rng.below(7) as i32 - 3)
        };
        let fs = [BinaryFn::Add, BinaryFn::Sub, BinaryFn::Mul, BinaryFn::Div];
        let mut cases = 0;
        for n in 2..=SHORT_BINARY {
            // (a's length, b's length, a constant, b constant, b is a's slot)
            for (la, lb, ca, cb, same) in [
                (n, n, false, false, false),
                (1, n, false, false, false),
                (n, 1, false, false, false),
                (1, n, true, false, false),
                (n, 1, false, true, false),
                (n, n, true, false, false),
                (n, n, false, false, true),
            ] {
                for f in fs {
                    // Values: a at 0, b after it, the output last; constants alike.
                    let vals_len = (la + lb + n) as usize;
                    let vals: Vec<f64> = (0..vals_len).map(|_| draw() + 2.0).collect();
                    let consts: Vec<f64> = (0..vals_len).map(|_| draw() + 2.0).collect();
                    let arg = |c: bool, off: u32, len: u32| Arg {
                        space: if c {
                            crate::ir::Space::Const
                        } else {
                            crate::ir::Space::Var
                        },
                        off,
                        len,
                    };
                    let a = arg(ca, 0, la);
                    let b = if same { a } else { arg(cb, la, lb) };
                    let out = Slot {
                        off: la + lb,
                        len: n,
                    };
                    let adj0: Vec<f64> = (0..vals_len).map(|_| draw()).collect();
                    let mut want = adj0.clone();
                    let (lo, hi) = want.split_at_mut(out.off as usize);
                    let g = hi.to_vec();
                    let y = &vals[out.range()];
                    binary_backward(
                        Isa::Baseline,
                        f,
                        a,
                        b,
                        0,
                        &vals[..out.off as usize],
                        &consts,
                        y,
                        &g,
                        lo,
                    );
                    let mut got = adj0;
                    binary_backward_short(f, a, b, out, &consts, &vals, &mut got);
                    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&got), bits(&want), "{f:?} n {n} a {a:?} b {b:?}");
                    cases += 1;
                }
            }
        }
        assert_eq!(cases, 7 * 7 * 4);
    }

    /// The plain loop whose order `scatter_add` must keep.
    fn scatter_add_plain(d: &mut [f64], idx: &[u32], g: &[f64]) {
        for (&i, gi) in idx.iter().zip(g) {
            d[i as usize] += gi;
        }
    }

    /// Summands whose sum depends on the order of additions, so an order change shows in bits.
    /// Chunks summed side by side give the bits of summing chunk after chunk, each chunk left
    /// to right from `+0` (terms of mixed scales, so any other order would show): lengths
    /// around one chunk and around groups of two and four chunks.
    #[test]
    fn chunk_sums_side_by_side_keep_each_chunks_order() {
        use super::{chunk_sums_side_by_side, CHUNK};
        for n in [
            0,
            1,
            CHUNK - 1,
            CHUNK,
            CHUNK + 1,
            2 * CHUNK,
            3 * CHUNK + 7,
            4 * CHUNK,
            6 * CHUNK + 285,
            7 * CHUNK,
            9 * CHUNK + 1,
        ] {
            let t = summands(n);
            let mut serial = 0.0;
            for c in t.chunks(CHUNK) {
                let mut s = 0.0;
                for v in c {
                    s += v;
                }
                serial += s;
            }
            let side = chunk_sums_side_by_side(n, |i| t[i]);
            assert_eq!(side.to_bits(), serial.to_bits(), "n = {n}");
        }
    }

    /// Column sums run side by side give each column's running sum in row order, to the bit:
    /// widths below, at and around the groups of eight, and an empty matrix.
    #[test]
    fn column_sums_side_by_side_keep_each_columns_order() {
        for n in [0, 1, 5, 37] {
            for m in [0, 1, 7, 8, 9, 16, 21] {
                let g = summands(n * m);
                let d0: Vec<f64> = (0..m).map(|j| j as f64 * 0.37 - 1.0).collect();
                let mut want = d0.clone();
                for (j, w) in want.iter_mut().enumerate() {
                    for r in 0..n {
                        *w += g[j * n + r];
                    }
                }
                let mut got = d0;
                super::column_sums_add(&g, n, &mut got);
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "n {n} m {m}");
            }
        }
    }

    fn summands(n: usize) -> Vec<f64> {
        (0..n)
            .map(|k| {
                let x = ((k as f64 + 0.5) * 0.618_033_988_749_895).fract();
                (x - 0.5) * 10f64.powi((k % 7) as i32 * 3 - 9)
            })
            .collect()
    }

    #[test]
    fn scatter_add_keeps_each_slots_order() {
        let mut rng = hazel_testdata::Xorshift(0x9e37_79b9_7f4a_7c15);
        let mut next = move |m: u64| rng.below(m as usize) as u32;
        let slots = 13;
        let mut patterns: Vec<Vec<u32>> = vec![
            vec![],
            vec![3],
            // Sorted runs of unequal lengths (grouped rows), a broadcast's equal runs.
            (0..slots)
                .flat_map(|s| vec![s; 1 + 3 * s as usize])
                .collect(),
            (0..4).flat_map(|s| vec![s; 500]).collect(),
            // Slots that come back after other runs (a, b, a, b …), within and across groups.
            (0..200).map(|k| (k / 3 % 2) as u32).collect(),
            (0..200).map(|k| (k / 5 % 5) as u32).collect(),
        ];
        // Random runs and random single indexes.
        let mut runs = Vec::new();
        while runs.len() < 3000 {
            let (s, len) = (next(slots as u64), 1 + next(40) as usize);
            runs.extend(std::iter::repeat_n(s, len));
        }
        patterns.push(runs);
        patterns.push((0..3000).map(|_| next(slots as u64)).collect());
        // Sorted: many unequal runs (grouped rows), one run longer than a quarter, single
        // elements, and a short sorted index below the lanes' minimum.
        let mut sorted: Vec<u32> = Vec::new();
        for s in 0..slots {
            sorted.extend(std::iter::repeat_n(s, 1 + next(90) as usize));
        }
        patterns.push(sorted);
        patterns.push(
            std::iter::repeat_n(2, 900)
                .chain(std::iter::repeat_n(5, 40))
                .chain(std::iter::repeat_n(9, 7))
                .collect(),
        );
        patterns.push((0..slots).collect());
        patterns.push((0..70).map(|k| (k / 9) as u32).collect());
        for idx in &patterns {
            let g = summands(idx.len());
            let start = summands(slots as usize + 5);
            let (mut want, mut got) = (start.clone(), start);
            scatter_add_plain(&mut want, idx, &g);
            scatter_add(&mut got, idx, &g);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(&got),
                bits(&want),
                "indexes {:?}…",
                &idx[..idx.len().min(12)]
            );
        }
    }
}
