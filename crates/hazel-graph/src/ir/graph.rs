//! The static op graph: an immutable list of ops over slots of a flat value buffer, which is
//! also the reverse-mode tape. A forward sweep runs the ops in order and writes values; a
//! backward sweep runs them in reverse and accumulates adjoints.
//!
//! The graph knows nothing of how it runs: executors ([`crate::exec`]) own the buffers and
//! the kernels.
//!
//! Layout invariants (checked by [`crate::builder::GraphBuilder`] when an op is pushed):
//! - every op writes one output slot, allocated after all its inputs, so an op's inputs all lie
//!   strictly below its output offset; the kernels split the buffers at the output offset and
//!   borrow inputs immutably and the output mutably without copies;
//! - constants live in the graph (`Graph::consts`), values and adjoints in the workspace;
//! - the unconstrained parameter vector occupies slot `0..dim` of the value buffer.

pub use super::ops::LinalgFn;
use super::ops::{BinaryFn, DistKind, UnaryFn};
use super::scalar::SHORT_BINARY;
use hazel_density::EvalError;
pub use hazel_math::transforms::Structured as StructKind;

/// Which buffer an argument lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Space {
    /// The workspace value buffer (depends on the parameters; has an adjoint).
    Var,
    /// The graph's constant pool (data and data-only expressions).
    Const,
}

/// A contiguous run of `len` values in one of the two buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arg {
    pub space: Space,
    pub off: u32,
    pub len: u32,
}

impl Arg {
    pub fn var(off: usize, len: usize) -> Arg {
        Arg {
            space: Space::Var,
            off: off as u32,
            len: len as u32,
        }
    }
    pub fn konst(off: usize, len: usize) -> Arg {
        Arg {
            space: Space::Const,
            off: off as u32,
            len: len as u32,
        }
    }
    #[inline]
    pub fn is_var(&self) -> bool {
        self.space == Space::Var
    }
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    #[inline]
    pub fn range(&self) -> std::ops::Range<usize> {
        self.off as usize..(self.off + self.len) as usize
    }
    /// The scalar at position `i` of this run.
    pub fn at(&self, i: usize) -> Arg {
        Arg {
            space: self.space,
            off: self.off + i as u32,
            len: 1,
        }
    }
}

/// The output of an op: a run in the value buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub off: u32,
    pub len: u32,
}

impl Slot {
    #[inline]
    pub fn range(&self) -> std::ops::Range<usize> {
        self.off as usize..(self.off + self.len) as usize
    }
    pub fn arg(&self) -> Arg {
        Arg::var(self.off as usize, self.len as usize)
    }
}

/// What a failed check reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckKind {
    /// Values must be ≥ bound (`Lower`), ≤ bound (`Upper`): a transformed parameter's constraint.
    Lower,
    Upper,
    /// Every value must be finite.
    Finite,
}

/// One operation. Each variant's value rule is in [`crate::exec::cpu::kernels::forward`] and
/// its gradient rule in [`crate::exec::cpu::kernels::backward`], side by side.
#[derive(Debug, Clone)]
pub enum Op {
    /// Elementwise `f(x)`.
    Unary { f: UnaryFn, x: Arg, out: Slot },
    /// Elementwise `f(a, b)`, a length-1 argument broadcast against the other.
    Binary {
        f: BinaryFn,
        a: Arg,
        b: Arg,
        out: Slot,
    },
    /// Scalar `a * b + c`: a scalar multiply whose product only feeds the scalar add right
    /// after it, fused by [`Graph::fuse_mul_add`] (loop bodies like `mu += beta[k] * y[t - k]`).
    /// Rounded as the two ops were (no hardware FMA), so values and gradients are unchanged.
    MulAdd { a: Arg, b: Arg, c: Arg, out: Slot },
    /// Scalar `((c + a₀ b₀) + a₁ b₁) + …`: a chain of [`Op::MulAdd`], each feeding only the
    /// next, merged by [`Graph::fuse_mul_add_chains`] (same roundings, same gradient bits).
    MulAddChain {
        c: Arg,
        terms: Box<[[Arg; 2]]>,
        out: Slot,
    },
    /// Sum of all elements (chunked, so the order is fixed).
    Sum { x: Arg, out: Slot },
    /// Sum of scalar terms (the `target` accumulator).
    SumScalars { xs: Box<[Arg]>, out: Slot },
    /// Dot product.
    Dot { a: Arg, b: Arg, out: Slot },
    /// `dot_self(a[ia] − b[ib])` with data indexes of one length `n`: the squared
    /// differences along a graph's edges (an ICAR prior's `dot_self(phi[node1] −
    /// phi[node2])`), fused from two [`Op::Gather`]s, their subtraction and its [`Op::Dot`]
    /// with itself by [`Graph::fuse_gather_diff_dot_self`]. `idx` is `ia` then `ib` (one box
    /// keeps the op small); `scratch` holds the `n` differences for the backward rule, then
    /// as many values of room for their adjoint contributions.
    DotSelfGatherDiff {
        a: Arg,
        b: Arg,
        idx: Box<[u32]>,
        scratch: u32,
        out: Slot,
    },
    /// `log(sum(exp(x)))`.
    LogSumExp { x: Arg, out: Slot },
    /// Sample standard deviation (`n − 1` divisor), with Stan Math's gradient where all
    /// elements are equal (each gets `1/√n`) and `0` for one element.
    Sd { x: Arg, out: Slot },
    /// Running sum `out[i] = x[0] + … + x[i]`.
    CumSum { x: Arg, out: Slot },
    /// Copies scalars from anywhere into one contiguous run (containers assembled element by
    /// element, e.g. `mu[n] = ...` in a loop).
    Pack { xs: Box<[Arg]>, out: Slot },
    /// `out[i] = x[idx[i]]` with data indexes (`mu[g]`).
    Gather { x: Arg, idx: Box<[u32]>, out: Slot },
    /// `out = M v`, `M` column-major `rows × cols`.
    MatVec {
        m: Arg,
        v: Arg,
        rows: u32,
        cols: u32,
        out: Slot,
    },
    /// `out = A B`, both column-major, `A` is `n × k`, `B` is `k × m`; with `bias` (length
    /// `m`), `bias[j]` is added to every element of column `j` after its sum — `A B +
    /// rep_matrix(bias', n)`, a dense layer's pre-activation, from
    /// [`Graph::fuse_matmul_bias`].
    MatMul {
        a: Arg,
        b: Arg,
        bias: Option<Arg>,
        n: u32,
        k: u32,
        m: u32,
        out: Slot,
    },
    /// Sum over elements of a univariate log density; argument 0 is the variate, all
    /// arguments broadcast. `scratch` holds per-argument partials written by the forward
    /// sweep and read by the backward sweep (one per element for vector arguments, one
    /// summed value for scalar ones).
    Dist {
        kind: DistKind,
        args: Box<[Arg]>,
        propto: bool,
        len: u32,
        scratch: Box<[u32]>,
        out: Slot,
    },
    /// A structured constraining transform (simplex, Cholesky factors, …) from
    /// `hazel_math::transforms`: `out` holds the constrained value followed by the
    /// log-Jacobian. `scratch` holds the transform's workspace, then room for the
    /// Jacobian-only adjoint (see the backward rule).
    Constrain {
        kind: StructKind,
        x: Arg,
        scratch: u32,
        out: Slot,
    },
    /// Cholesky factor of an `n × n` symmetric positive-definite matrix (hazel_math::linalg);
    /// `scratch` holds `n²` values for the adjoint.
    Cholesky {
        a: Arg,
        n: u32,
        scratch: u32,
        out: Slot,
    },
    /// `L⁻¹ B` for lower-triangular `L` (`n × n`) and `B` (`n × m`); `scratch` holds `n·m`.
    TriSolve {
        l: Arg,
        b: Arg,
        n: u32,
        m: u32,
        scratch: u32,
        out: Slot,
    },
    /// A solve or determinant of an `n × n` matrix (`crate::exec::cpu::linalg_kernels`): `a` and `b` are
    /// the Stan arguments in order (`b` empty for one-argument functions). `scratch` holds
    /// the factorisation the forward rule leaves for the backward rule
    /// ([`LinalgFn::scratch_len`]).
    Linalg {
        f: LinalgFn,
        a: Arg,
        b: Arg,
        n: u32,
        m: u32,
        scratch: u32,
        out: Slot,
    },
    /// `x` sorted ascending (or descending): the permutation depends on the values, so the
    /// forward rule computes it at every evaluation and leaves it in `scratch` (`x.len`
    /// indices) for the backward rule, which sends each output's adjoint to its source
    /// element. NaN fails the evaluation, as in Stan.
    Sort {
        x: Arg,
        descending: bool,
        scratch: u32,
        out: Slot,
    },
    /// Fails the evaluation when a value violates a constraint; `out` is a length-0 slot.
    Check {
        kind: CheckKind,
        x: Arg,
        bound: Arg,
        message: Box<str>,
        out: Slot,
    },
    /// Always fails (a data-dependent `reject` that was reached).
    Reject { message: Box<str>, out: Slot },
    /// A multivariate (or ordinal) log density from `hazel_math::linalg::densities`
    /// ([`crate::mvdist`]); `scratch` holds each argument's partials, then the workspace.
    MvDist {
        spec: Box<crate::mvdist::MvSpec>,
        args: Box<[Arg]>,
        propto: bool,
        scratch: u32,
        out: Slot,
    },
    /// The root `x` of an algebraic system `f(x, θ) = 0` from the initial guess `guess`
    /// ([`crate::solve_op`]); `theta` holds the system's parameter-dependent scalars.
    /// `scratch` holds the Jacobians at the root for the implicit-function gradient.
    Solve {
        spec: std::sync::Arc<crate::solve_op::SolveSpec>,
        guess: Arg,
        theta: Arg,
        scratch: u32,
        out: Slot,
    },
    /// The solution of a DAE `F(t, y, y'; θ) = 0` at the requested times ([`crate::dae_op`])
    /// from `yy0`, `yp0`; `theta` holds the residual's parameter-dependent scalars. `scratch`
    /// holds the forward sensitivities for the backward rule.
    Dae {
        spec: std::sync::Arc<crate::dae_op::DaeSpec>,
        yy0: Arg,
        yp0: Arg,
        theta: Arg,
        scratch: u32,
        out: Slot,
    },
    /// An ODE solve ([`crate::ode_op`]): the states at the requested times from the
    /// parameter-dependent scalars `v`; `scratch` holds the sensitivities for the backward rule.
    Ode {
        spec: std::sync::Arc<crate::ode_op::OdeSpec>,
        v: Arg,
        scratch: u32,
        out: Slot,
    },
    /// A GLM likelihood `family(…, X β + α, …)` over a data matrix in one pass over `X`
    /// (fused by [`Graph::fuse_glm`], [`crate::ir::glm`]); `out` is the density's value.
    Glm {
        spec: Box<crate::ir::glm::GlmSpec>,
        out: Slot,
    },
    /// An `integrate_1d` call ([`crate::integrate_op`]): the integral from the
    /// parameter-dependent scalars `v`; `scratch` holds `∂out/∂v` for the backward rule.
    Integrate {
        spec: std::sync::Arc<crate::integrate_op::IntegrateSpec>,
        v: Arg,
        scratch: u32,
        out: Slot,
    },
    /// Elementwise `f(args…)` for a function of three or more arguments ([`crate::nary`]),
    /// each argument of length 1 (broadcast) or the output's length.
    Nary {
        f: crate::nary::MathNary,
        args: Box<[Arg]>,
        out: Slot,
    },
    /// A run of scalar ops as compact instructions, fused by [`Graph::fuse_scalar_blocks`]
    /// ([`crate::ir::scalar`]); `out` spans the slots its instructions write (each writes one,
    /// after its inputs, as the ops did). Same bits as the ops it replaces.
    Scalars {
        block: Box<crate::ir::scalar::ScalarBlock>,
        out: Slot,
    },
}

/// The one walk over an op's arguments, in reading order, behind [`Op::inputs`] and
/// [`Op::for_each_input_mut`]: `$iter` is `iter` or `iter_mut`, and the caller adds the arms of
/// the ops that own a nested walk (`Glm`, `Scalars`).
macro_rules! visit_inputs {
    ($op:expr, $f:ident, $iter:ident, $($nested:tt)*) => {
        match $op {
            Op::Unary { x, .. }
            | Op::Constrain { x, .. }
            | Op::CumSum { x, .. }
            | Op::Sum { x, .. }
            | Op::LogSumExp { x, .. }
            | Op::Sd { x, .. }
            | Op::Sort { x, .. }
            | Op::Ode { v: x, .. }
            | Op::Integrate { v: x, .. }
            | Op::Gather { x, .. } => $f(x),
            Op::Binary { a, b, .. }
            | Op::Dot { a, b, .. }
            | Op::DotSelfGatherDiff { a, b, .. }
            | Op::MatMul { a, b, bias: None, .. }
            | Op::Linalg { a, b, .. }
            | Op::Solve {
                guess: a, theta: b, ..
            } => {
                $f(a);
                $f(b)
            }
            Op::MulAdd { a, b, c, .. }
            | Op::MatMul {
                a,
                b,
                bias: Some(c),
                ..
            } => {
                $f(a);
                $f(b);
                $f(c)
            }
            Op::MulAddChain { c, terms, .. } => {
                $f(c);
                terms.$iter().flatten().for_each($f)
            }
            Op::SumScalars { xs, .. } | Op::Pack { xs, .. } => xs.$iter().for_each($f),
            Op::MatVec { m, v, .. } => {
                $f(m);
                $f(v)
            }
            Op::Dist { args, .. } | Op::MvDist { args, .. } | Op::Nary { args, .. } => {
                args.$iter().for_each($f)
            }
            Op::Cholesky { a, .. } => $f(a),
            Op::TriSolve { l, b, .. } => {
                $f(l);
                $f(b)
            }
            Op::Check { x, bound, .. } => {
                $f(x);
                $f(bound)
            }
            Op::Reject { .. } => {}
            Op::Dae {
                yy0, yp0, theta, ..
            } => {
                $f(yy0);
                $f(yp0);
                $f(theta)
            }
            $($nested)*
        }
    };
}

impl Op {
    pub fn out(&self) -> Slot {
        match self {
            Op::Unary { out, .. }
            | Op::Binary { out, .. }
            | Op::MulAdd { out, .. }
            | Op::MulAddChain { out, .. }
            | Op::Sum { out, .. }
            | Op::SumScalars { out, .. }
            | Op::Dot { out, .. }
            | Op::DotSelfGatherDiff { out, .. }
            | Op::LogSumExp { out, .. }
            | Op::Sd { out, .. }
            | Op::Pack { out, .. }
            | Op::CumSum { out, .. }
            | Op::Gather { out, .. }
            | Op::Sort { out, .. }
            | Op::MatVec { out, .. }
            | Op::MatMul { out, .. }
            | Op::Dist { out, .. }
            | Op::Constrain { out, .. }
            | Op::Cholesky { out, .. }
            | Op::TriSolve { out, .. }
            | Op::Linalg { out, .. }
            | Op::Check { out, .. }
            | Op::Reject { out, .. }
            | Op::MvDist { out, .. }
            | Op::Solve { out, .. }
            | Op::Dae { out, .. }
            | Op::Ode { out, .. }
            | Op::Integrate { out, .. }
            | Op::Glm { out, .. }
            | Op::Nary { out, .. }
            | Op::Scalars { out, .. } => *out,
        }
    }

    /// Calls `f` on every argument the op reads, allowing it to be redirected.
    pub fn for_each_input_mut(&mut self, mut f: impl FnMut(&mut Arg)) {
        visit_inputs!(self, f, iter_mut,
            Op::Glm { spec, .. } => spec.for_each_input_mut(f),
            Op::Scalars { block, .. } => block.for_each_input_mut(f),
        )
    }

    /// The arguments an op reads (used by the builder to check the layout invariant).
    pub fn inputs(&self) -> Vec<Arg> {
        let mut v = Vec::new();
        let mut f = |a: &Arg| v.push(*a);
        visit_inputs!(self, f, iter,
            Op::Glm { spec, .. } => spec.inputs().iter().for_each(f),
            Op::Scalars { block, .. } => block.inputs().iter().for_each(f),
        );
        v
    }
}

/// An immutable op graph: ops, constants and buffer sizes.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    pub ops: Vec<Op>,
    pub consts: Vec<f64>,
    /// Size of the value (and adjoint) buffer.
    pub n_vals: usize,
    /// Size of the scratch buffer (per-element partials).
    pub n_scratch: usize,
    /// Length of the parameter slot at offset 0.
    pub dim: usize,
    /// The adjoints a backward sweep need not clear ([`Graph::mark_adjoint_free`]; empty
    /// unless that pass ran). Boxed: a traced user function's graph (`FnGraph`, held in
    /// enums) never has any.
    pub adjoint: Box<AdjointPlan>,
    /// Debug information: (first output slot, model location) whenever the location
    /// changes, in slot order. The op writing slot `s` comes from the last entry at or below
    /// `s`; an evaluation error names that location.
    pub locations: Vec<(u32, std::sync::Arc<str>)>,
}

/// Which adjoints a backward sweep need not clear ([`Graph::mark_adjoint_free`]).
#[derive(Debug, Clone, Default)]
pub struct AdjointPlan {
    /// Runs of value slots whose adjoint no backward rule reads or adds to, sorted: a
    /// backward sweep need not clear them (`Graph::start_adjoint`), except their `free_holes`.
    pub free: Vec<Slot>,
    /// Single slots inside the `free` runs that are not free, sorted: cleared one by one
    /// (a lane region's exported values between its private ones).
    pub free_holes: Vec<u32>,
    /// Per op (empty: none), a bit per argument of [`Op::inputs`] whose adjoint the op's
    /// backward rule *stores* (`0.0 + contribution`, the bits of adding it to a cleared slot)
    /// instead of adding to: the op is the only one whose rule writes those slots, and it
    /// writes each once ([`Graph::adjoint_stores_of`]).
    pub stores: Vec<u32>,
    /// Runs of at least [`ADJOINT_FREE_MIN`] value slots, sorted, that are adjoint-free or
    /// stored by a rule: `Graph::start_adjoint` need not clear them when the rules store,
    /// except their `unset_holes` (as `free_holes`).
    pub unset: Vec<Slot>,
    pub unset_holes: Vec<u32>,
}

/// Appends what identifies an argument to a common-subexpression key: its slot run if it
/// varies; for a constant, its values (the pool is immutable, so equal constants at different
/// offsets are interchangeable; the tracer does not intern them), or, for a run longer than
/// [`CSE_CONST_VALUES`], its place in the pool.
fn arg_key(key: &mut String, a: Arg, consts: &[f64]) -> bool {
    use std::fmt::Write;
    match a.space {
        Space::Var => write!(key, "v{}:{}", a.off, a.len).is_ok(),
        Space::Const if a.len() <= CSE_CONST_VALUES => {
            key.push('c');
            consts[a.range()]
                .iter()
                .all(|v| write!(key, "{:x},", v.to_bits()).is_ok())
        }
        Space::Const => write!(key, "k{}:{}", a.off, a.len).is_ok(),
    }
}

/// Shorter runs of adjoint-free slots are cleared anyway ([`Graph::mark_adjoint_free`]): one
/// long clear is cheaper than many short ones.
pub(crate) const ADJOINT_FREE_MIN: usize = 64;

/// Runs of adjoint-free slots at least this long on both sides of a single slot that is not
/// are one run with a hole: the hole is cleared by one store, cheaper than a clear of the
/// runs around it.
const ADJOINT_HOLE_SIDES: usize = 8;

/// The inputs of `op` (position in [`Op::inputs`], argument) whose adjoint its backward rules
/// — every executor's — write element by element, each element once, and can store
/// (`kernels::backward`'s `stores`): an elementwise unary function's argument; a full-length
/// operand of an elementwise binary op longer than [`SHORT_BINARY`] (shorter ones run the
/// short rules, which only add); a density's arguments that have partials (a scalar one gets
/// its summed partial once); a fused GLM's matrix. Not a broadcast operand (its adjoint sums
/// many terms), and no other op: their rules add several times into a slot (`scatter_add`,
/// sums, products), or only add.
fn store_candidates(op: &Op) -> Vec<(u32, Arg)> {
    match op {
        Op::Unary { x, out, .. } if x.len == out.len => vec![(0, *x)],
        Op::Binary { a, b, out, .. } if out.len > SHORT_BINARY => [(0, *a), (1, *b)]
            .into_iter()
            .filter(|(_, x)| x.len == out.len)
            .collect(),
        Op::Dist { args, scratch, .. } => (0..)
            .zip(args.iter().zip(scratch.iter()))
            .filter(|(_, (_, sc))| **sc != crate::dists::NO_SCRATCH)
            .map(|(k, (a, _))| (k, *a))
            .collect(),
        Op::Glm { spec, .. } => vec![(0, spec.x)],
        _ => Vec::new(),
    }
}

/// The runs of at least [`ADJOINT_FREE_MIN`] set flags, as slots, and the single unset
/// flags they bridge: runs of at least [`ADJOINT_HOLE_SIDES`] set flags one unset flag apart
/// count as one run with a hole.
fn long_runs(flags: &[bool]) -> (Vec<Slot>, Vec<u32>) {
    let mut plain: Vec<std::ops::Range<usize>> = Vec::new();
    let mut i = 0;
    while i < flags.len() {
        let start = i;
        while i < flags.len() && flags[i] {
            i += 1;
        }
        if i > start {
            plain.push(start..i);
        }
        i += 1;
    }
    let (mut runs, mut holes) = (Vec::new(), Vec::new());
    let mut k = 0;
    while k < plain.len() {
        // The chain of runs from `k`, each one slot after the last.
        let mut end = k;
        while end + 1 < plain.len()
            && plain[end + 1].start == plain[end].end + 1
            && plain[end].len() >= ADJOINT_HOLE_SIDES
            && plain[end + 1].len() >= ADJOINT_HOLE_SIDES
        {
            end += 1;
        }
        let (start, stop) = (plain[k].start, plain[end].end);
        if stop - start >= ADJOINT_FREE_MIN {
            runs.push(Slot {
                off: start as u32,
                len: (stop - start) as u32,
            });
            holes.extend(plain[k..end].iter().map(|r| r.end as u32));
        }
        k = end + 1;
    }
    (runs, holes)
}

/// Constant runs up to this long are compared by value in [`Graph::eliminate_common_subexpressions`].
const CSE_CONST_VALUES: usize = 64;

impl Graph {
    /// `e`, raised by `op`, with the model location `op` was traced from.
    pub fn locate(&self, op: &Op, e: EvalError) -> EvalError {
        let slot = op.out().off;
        let at = self.locations.partition_point(|(s, _)| *s <= slot);
        let location = at.checked_sub(1).map(|i| &*self.locations[i].1);
        e.at(location)
    }

    /// Removes ops that repeat an earlier op on the same arguments (after earlier removals),
    /// redirecting their readers to the earlier op's output; returns how many were removed. Loops over data make these common: `bernoulli_lpmf(1 | omega)` for
    /// every row, `beta[1] * n_avoid[j, t]` for the few distinct values of a count,
    /// `bernoulli_lpmf(y[i] | p)` for the few distinct capture histories `y[i]`.
    ///
    /// Only pure ops are candidates (unary, binary, multiply-add; densities, sums, dot
    /// products and `log_sum_exp` of runs; packs, running sums and gathers: a `vector` built
    /// from the same scalars in every iteration),
    /// and an op is kept when a run that reads its output extends past it (a vector view over
    /// adjacent scalars) or its output is `keep`; a reader inside the output is shifted to
    /// the same place in the earlier op's. Values are unchanged; the earlier
    /// op's adjoint collects all its readers' contributions, so the gradient may differ from
    /// the unshared graph's in the last bits (a different summation order).
    pub fn eliminate_common_subexpressions(&mut self, keep: Arg) -> usize {
        use std::collections::HashMap;
        use std::fmt::Write;
        const NONE: u32 = u32::MAX;
        // A reader's run is redirected by shifting it, which needs it to lie inside one op's
        // output; slots read through a run that spans several outputs (or a parameter and an
        // output), and `keep`, are pinned.
        let mut owner = vec![NONE; self.n_vals];
        for (i, op) in self.ops.iter().enumerate() {
            owner[op.out().range()]
                .iter_mut()
                .for_each(|o| *o = i as u32);
        }
        let mut pinned = vec![false; self.n_vals];
        let mut pin = |a: Arg, always: bool| {
            if !a.is_var() || a.is_empty() {
                return;
            }
            let r = a.range();
            let one_output = owner[r.start] != NONE
                && owner[r.start..r.end].iter().all(|o| *o == owner[r.start]);
            if always || !one_output {
                pinned[r].iter_mut().for_each(|p| *p = true);
            }
        };
        for op in &self.ops {
            op.inputs().into_iter().for_each(|a| pin(a, false));
        }
        pin(keep, true);
        // Slot of a removed op's output → the same position in the first op's output.
        let mut redirect = vec![NONE; self.n_vals];
        let mut seen: HashMap<String, u32> = HashMap::new();
        let mut key = String::new();
        let mut removed = 0;
        let old = std::mem::take(&mut self.ops);
        let mut ops = Vec::with_capacity(old.len());
        for mut op in old {
            op.for_each_input_mut(|a| {
                if a.is_var() && !a.is_empty() && redirect[a.off as usize] != NONE {
                    a.off = redirect[a.off as usize];
                }
            });
            let out = op.out();
            key.clear();
            // `{:?}` of the functions' f64 parameters round-trips, and constants are keyed
            // by their bits, so equal keys mean equal computations.
            let candidate = out.len >= 1
                && !pinned[out.range()].iter().any(|p| *p)
                && write!(key, "{}:", out.len).is_ok()
                && match &op {
                    Op::Unary { f, x, .. } => {
                        write!(key, "U{f:?}").is_ok() && arg_key(&mut key, *x, &self.consts)
                    }
                    Op::Binary { f, a, b, .. } => {
                        write!(key, "B{f:?}").is_ok()
                            && arg_key(&mut key, *a, &self.consts)
                            && arg_key(&mut key, *b, &self.consts)
                    }
                    Op::MulAdd { a, b, c, .. } => {
                        key.push('M');
                        arg_key(&mut key, *a, &self.consts)
                            && arg_key(&mut key, *b, &self.consts)
                            && arg_key(&mut key, *c, &self.consts)
                    }
                    Op::Dist {
                        kind, args, propto, ..
                    } => {
                        write!(key, "D{kind:?}{propto}").is_ok()
                            && args.iter().all(|a| arg_key(&mut key, *a, &self.consts))
                    }
                    Op::Sum { x, .. } => {
                        key.push('S');
                        arg_key(&mut key, *x, &self.consts)
                    }
                    Op::LogSumExp { x, .. } => {
                        key.push('L');
                        arg_key(&mut key, *x, &self.consts)
                    }
                    Op::Dot { a, b, .. } => {
                        key.push('P');
                        arg_key(&mut key, *a, &self.consts) && arg_key(&mut key, *b, &self.consts)
                    }
                    Op::Pack { xs, .. } => {
                        key.push('K');
                        xs.iter().all(|a| arg_key(&mut key, *a, &self.consts))
                    }
                    Op::CumSum { x, .. } => {
                        key.push('C');
                        arg_key(&mut key, *x, &self.consts)
                    }
                    Op::Gather { x, idx, .. } => {
                        key.push('G');
                        arg_key(&mut key, *x, &self.consts)
                            && idx.iter().all(|i| write!(key, "{i},").is_ok())
                    }
                    _ => false,
                };
            if candidate {
                if let Some(&first) = seen.get(&key) {
                    for (k, r) in redirect[out.range()].iter_mut().enumerate() {
                        *r = first + k as u32;
                    }
                    removed += 1;
                    continue;
                }
                seen.insert(key.clone(), out.off);
            }
            ops.push(op);
        }
        self.ops = ops;
        removed
    }

    /// Re-encodes each long [`Op::Pack`] (more than [`crate::ir::scalar::SMALL_LEN`] values)
    /// whose scalars all lie in one buffer, within a run no longer than the pack, as an
    /// [`Op::Gather`] from that run: `rep_matrix(b', N)` and other broadcasts of a short vector
    /// traced element by element. Returns how many were re-encoded.
    ///
    /// Same bits: a gather copies the same values, and its gradient rule adds each output's
    /// adjoint to its source's in the same order as the pack's, one index read per element
    /// instead of one operand decoded per element. Short packs stay for
    /// [`Graph::fuse_scalar_blocks`], which runs them inline.
    pub fn packs_as_gathers(&mut self) -> usize {
        let mut made = 0;
        for op in self.ops.iter_mut() {
            let Op::Pack { xs, out } = op else { continue };
            if out.len <= crate::ir::scalar::SMALL_LEN {
                continue;
            }
            let space = xs[0].space;
            if xs.iter().any(|a| a.len != 1 || a.space != space) {
                continue;
            }
            let lo = xs.iter().map(|a| a.off).min().expect("a long pack");
            let hi = xs.iter().map(|a| a.off).max().expect("a long pack");
            if hi - lo + 1 > out.len {
                continue;
            }
            let x = Arg {
                space,
                off: lo,
                len: hi - lo + 1,
            };
            let idx = xs.iter().map(|a| a.off - lo).collect();
            *op = Op::Gather { x, idx, out: *out };
            made += 1;
        }
        made
    }

    /// Fuses each scalar `Mul` that is immediately followed by a scalar `Add` reading its
    /// product, when nothing else reads the product (no other op, no argument run covering
    /// it, not `keep`), into one [`Op::MulAdd`]; returns how many pairs were fused.
    ///
    /// Why only adjacent pairs: the fused op does the multiply's adjoint updates at the add's
    /// position in the backward sweep, and with nothing in between, every adjoint receives
    /// the same additions in the same order as before, so the gradient keeps its bits. The
    /// product's slot stays allocated but is no longer written.
    pub fn fuse_mul_add(&mut self, keep: Arg) -> usize {
        let scalar_mul = |op: &Op| match op {
            Op::Binary {
                f: BinaryFn::Mul,
                a,
                b,
                out,
            } if out.len == 1 => Some((*a, *b, *out)),
            _ => None,
        };
        // Reads of every value slot, counted only where a fusable product could sit.
        let mut is_product = vec![false; self.n_vals];
        for pair in self.ops.windows(2) {
            if let Some((_, _, m)) = scalar_mul(&pair[0]) {
                is_product[m.off as usize] = true;
            }
        }
        let reads = self.reads_of(keep, &is_product);
        let mut fused = 0;
        let old = std::mem::take(&mut self.ops);
        let mut ops = Vec::with_capacity(old.len());
        let mut it = old.into_iter().peekable();
        while let Some(op) = it.next() {
            if let (Some((a, b, m)), Some(Op::Binary { f, a: x, b: y, out })) =
                (scalar_mul(&op), it.peek())
            {
                let product = m.arg();
                let addend = if *x == product { *y } else { *x };
                if matches!(f, BinaryFn::Add)
                    && out.len == 1
                    && (*x == product) != (*y == product)
                    && reads[m.off as usize] == 1
                {
                    let out = *out;
                    it.next();
                    ops.push(Op::MulAdd {
                        a,
                        b,
                        c: addend,
                        out,
                    });
                    fused += 1;
                    continue;
                }
            }
            ops.push(op);
        }
        self.ops = ops;
        fused
    }

    /// Lists in [`AdjointPlan::free`] the runs of at least [`ADJOINT_FREE_MIN`] value
    /// slots that are neither a parameter, nor an op's output, nor an op's varying input. A
    /// backward rule reads its output's adjoint and adds to its inputs', so no rule touches
    /// these: the slots of ops that rewrites removed (a broadcast fused into a product, a
    /// product and sum fused into a GLM) and a fused GLM's linear predictor (written by its
    /// forward rule, read by nothing else).
    ///
    /// Then marks in [`AdjointPlan::stores`] the inputs whose adjoint one rule can store
    /// rather than add to ("first writer stores"): those whose rules write each element once
    /// ([`store_candidates`]: elementwise unary and binary ops, densities, a fused GLM's
    /// matrix) when no other (op, input) pair covers any of their slots and none is `seed`
    /// (whose adjoint `start_adjoint` sets to 1). Such a slot's adjoint is written once, before the
    /// rule of the op that produced it reads it (consumers come later in the sweep's
    /// reverse order), so it need not be cleared: [`AdjointPlan::unset`] lists the long runs
    /// of free or stored slots. On the bundled BNN the hidden layer's pre-activation and
    /// activation (2 × 8,000 slots) are stored, and a sweep clears about 120 of 33,119 adjoints.
    /// Run after the last rewrite (the stores are indexed by op), and sweep from `seed` only:
    /// another seed may be a stored slot, whose 1 its consumer's rule would overwrite.
    pub fn mark_adjoint_free(&mut self, seed: Arg) {
        let mut touched = vec![false; self.n_vals];
        // How many (op, varying input) pairs cover each slot, saturating: a fused block's
        // inputs include the slots its own instructions read, so every rule that may add to
        // a slot is counted.
        let mut writers = vec![0u8; self.n_vals];
        touched[..self.dim].iter_mut().for_each(|t| *t = true);
        for op in &self.ops {
            // A block's span holds the outputs of the ops it replaced, and between them slots
            // nothing writes (narrowed or dead ops'): only its instructions' outputs count.
            match op {
                Op::Scalars { block, .. } => {
                    block.for_each_output(|o| touched[o.range()].iter_mut().for_each(|t| *t = true))
                }
                _ => touched[op.out().range()].iter_mut().for_each(|t| *t = true),
            }
            for a in op.inputs().into_iter().filter(|a| a.is_var()) {
                touched[a.range()].iter_mut().for_each(|t| *t = true);
                writers[a.range()]
                    .iter_mut()
                    .for_each(|w| *w = w.saturating_add(1));
            }
        }
        // A lane region's private values live in scratch: no rule reads or adds to their
        // slots' adjoints.
        for op in &self.ops {
            if let Op::Scalars { block, .. } = op {
                for i in block.code() {
                    if let super::scalar::ScalarInstr::Lanes(region) = i {
                        region.for_each_private_slot(|s| touched[s] = false);
                    }
                }
            }
        }
        if seed.is_var() && (seed.off as usize) < self.n_vals {
            writers[seed.off as usize] = u8::MAX;
        }
        let mut unset: Vec<bool> = touched.iter().map(|t| !t).collect();
        let stores = self
            .ops
            .iter()
            .map(|op| {
                let mut bits = 0;
                for (bit, a) in store_candidates(op) {
                    if a.is_var() && writers[a.range()].iter().all(|w| *w == 1) {
                        unset[a.range()].iter_mut().for_each(|u| *u = true);
                        bits |= 1 << bit;
                    }
                }
                bits
            })
            .collect();
        let (free, free_holes) = long_runs(&touched.iter().map(|t| !t).collect::<Vec<_>>());
        let (unset, unset_holes) = long_runs(&unset);
        *self.adjoint = AdjointPlan {
            free,
            free_holes,
            stores,
            unset,
            unset_holes,
        };
    }

    /// The inputs (bits in [`Op::inputs`] order) whose adjoint op `i`'s backward rule stores
    /// ([`AdjointPlan::stores`]); 0 before [`Graph::mark_adjoint_free`] ran.
    #[inline]
    pub fn adjoint_stores_of(&self, i: usize) -> u32 {
        self.adjoint.stores.get(i).copied().unwrap_or(0)
    }

    /// Removes ops whose output nothing reads — no later op's argument covers any of its
    /// slots and `keep` does not — when the op can neither fail nor have another effect
    /// (elementwise arithmetic, packing, sums and products; never a check, a density, a
    /// solver or a factorisation, whose errors Stan would raise); returns how many were
    /// removed. A transformed parameter the model block never reads is the common case.
    ///
    /// Values are unchanged. Gradients are unchanged except where a removed op would have
    /// added `0 × ∞ = NaN` (a `log` at 0 whose result nobody reads) or turned a `-0.0`
    /// adjoint into `+0.0`: a dead op's own adjoint is zero, so it only ever added zeros.
    pub fn eliminate_dead_ops(&mut self, keep: Arg) -> usize {
        let mut live = vec![false; self.n_vals];
        let mark = |a: Arg, live: &mut [bool]| {
            if a.is_var() {
                live[a.range()].iter_mut().for_each(|l| *l = true);
            }
        };
        mark(keep, &mut live);
        let mut keep_op = vec![true; self.ops.len()];
        for (i, op) in self.ops.iter().enumerate().rev() {
            let out = op.out();
            let removable = matches!(
                op,
                Op::Unary { .. }
                    | Op::Binary { .. }
                    | Op::MulAdd { .. }
                    | Op::MulAddChain { .. }
                    | Op::Sum { .. }
                    | Op::SumScalars { .. }
                    | Op::Dot { .. }
                    | Op::DotSelfGatherDiff { .. }
                    | Op::LogSumExp { .. }
                    | Op::CumSum { .. }
                    | Op::Pack { .. }
                    | Op::Gather { .. }
                    | Op::MatVec { .. }
                    | Op::MatMul { .. }
            );
            if removable && !live[out.range()].iter().any(|l| *l) {
                keep_op[i] = false;
                continue;
            }
            for a in op.inputs() {
                mark(a, &mut live);
            }
        }
        let before = self.ops.len();
        let mut k = keep_op.into_iter();
        self.ops.retain(|_| k.next().unwrap_or(true));
        before - self.ops.len()
    }

    /// Makes each short elementwise `+ − × ÷` (at most `SHORT_BINARY`
    /// values) of which one output element alone is read — by a later op's argument or by
    /// `keep` — a scalar op on that element; returns how many were narrowed. A categorical
    /// likelihood per observation reads one element of its log softmax `v − log_sum_exp(v)`
    /// (`log(softmax(v)[k])`, the trace's `log(exp(x))`), and computing the whole vector, and
    /// its gradient, cost as much as the rest of the observation's ops. Run after
    /// [`Graph::eliminate_dead_ops`]; the unread elements are then written by no op, read by
    /// none, and their adjoints are free slots ([`Graph::mark_adjoint_free`]).
    ///
    /// Same bits: the element's value is the same rule on the same operands; in the gradient,
    /// the unread elements' adjoints were cleared zeros, so the whole op added `+0.0` to a
    /// full-length operand's other adjoints (no change to a cleared `+0.0`, to which the
    /// other rules then add as before) and summed `0.0 + (0 + … + g + … + 0)` = `g` for a
    /// broadcast operand, which the scalar rule adds as `g` times the same partial.
    pub fn narrow_partly_read(&mut self, keep: Arg) -> usize {
        let mut live = vec![false; self.n_vals];
        let mark = |a: Arg, live: &mut [bool]| {
            if a.is_var() {
                live[a.range()].iter_mut().for_each(|l| *l = true);
            }
        };
        mark(keep, &mut live);
        let mut narrowed = 0;
        for op in self.ops.iter_mut().rev() {
            if let Op::Binary { f, a, b, out } = op {
                let short = (2..=crate::ir::scalar::SHORT_BINARY).contains(&out.len);
                let mut read = out.range().filter(|&s| live[s]);
                if let (true, true, Some(s), None) =
                    (f.is_arithmetic(), short, read.next(), read.next())
                {
                    let k = s - out.off as usize;
                    let element = |x: Arg| if x.len() == 1 { x } else { x.at(k) };
                    *op = Op::Binary {
                        f: *f,
                        a: element(*a),
                        b: element(*b),
                        out: Slot {
                            off: s as u32,
                            len: 1,
                        },
                    };
                    narrowed += 1;
                }
            }
            for a in op.inputs() {
                mark(a, &mut live);
            }
        }
        narrowed
    }

    /// How many times each candidate slot is read: by every op's arguments (a run covering
    /// it counts) and by `keep`. Zero for slots that are not candidates.
    pub(crate) fn reads_of(&self, keep: Arg, candidate: &[bool]) -> Vec<u32> {
        let mut reads = vec![0u32; self.n_vals];
        let mut count = |a: Arg| {
            if a.is_var() {
                for s in a.range() {
                    if candidate[s] {
                        reads[s] = reads[s].saturating_add(1);
                    }
                }
            }
        };
        for op in &self.ops {
            op.inputs().into_iter().for_each(&mut count);
        }
        count(keep);
        reads
    }

    /// Merges runs of [`Op::MulAdd`] where each one's addend is the previous one's output,
    /// read nowhere else (`alpha + beta[1] * y[t - 1] + … + beta[K] * y[t - K]`), into one
    /// [`Op::MulAddChain`]; returns how many ops were removed. Run after
    /// [`Graph::fuse_mul_add`]. As there, the merged ops are adjacent and the chain op
    /// repeats their roundings and adjoint updates in order, so every bit is kept.
    pub fn fuse_mul_add_chains(&mut self, keep: Arg) -> usize {
        let mut is_link = vec![false; self.n_vals];
        for op in &self.ops {
            if let Op::MulAdd { out, .. } = op {
                is_link[out.off as usize] = true;
            }
        }
        let reads = self.reads_of(keep, &is_link);
        let mut removed = 0;
        let old = std::mem::take(&mut self.ops);
        let mut ops = Vec::with_capacity(old.len());
        let mut it = old.into_iter().peekable();
        while let Some(op) = it.next() {
            let Op::MulAdd { a, b, c, mut out } = op else {
                ops.push(op);
                continue;
            };
            let mut terms = vec![[a, b]];
            while let Some(&Op::MulAdd {
                a: next_a,
                b: next_b,
                c: next_c,
                out: next_out,
            }) = it.peek()
            {
                let linked = next_c == out.arg()
                    && next_a != out.arg()
                    && next_b != out.arg()
                    && reads[out.off as usize] == 1;
                if !linked {
                    break;
                }
                terms.push([next_a, next_b]);
                out = next_out;
                it.next();
            }
            if terms.len() == 1 {
                ops.push(Op::MulAdd { a, b, c, out });
            } else {
                removed += terms.len() - 1;
                ops.push(Op::MulAddChain {
                    c,
                    terms: terms.into_boxed_slice(),
                    out,
                });
            }
        }
        self.ops = ops;
        removed
    }

    /// Fuses `A B + rep_matrix(bias', n)` — an [`Op::MatMul`] and an [`Op::Gather`] that
    /// broadcasts a length-`m` run down the rows (index `j` at every position of column `j`),
    /// in either order, immediately followed by the [`BinaryFn::Add`] of their outputs, each
    /// read nowhere else — into one [`Op::MatMul`] with that run as its `bias`, writing the
    /// add's output; returns how many were fused. Run after [`Graph::packs_as_gathers`],
    /// which makes the broadcast a gather.
    ///
    /// Same bits: the product's sums are unchanged and the bias is added after each (`x + y
    /// = y + x` exactly). In the backward sweep the fused op stands where the add stood, and
    /// does what the add, the gather and the product did there, in that order, with nothing
    /// else in between: each bias slot adds its column's adjoints in row order starting from
    /// its own value (what the gather's `scatter_add` does), then the product's rules run
    /// with the add's output adjoint, which the add had passed on unchanged (it added it to
    /// the product's zero adjoint: only a `-0.0` became `+0.0`, and every rule adds that to
    /// accumulators that start at `+0.0`). The product's and the gather's slots stay
    /// allocated but are no longer written.
    pub fn fuse_matmul_bias(&mut self, keep: Arg) -> usize {
        let mut is_part = vec![false; self.n_vals];
        for op in &self.ops {
            if let Op::MatMul {
                bias: None, out, ..
            }
            | Op::Gather { out, .. } = op
            {
                is_part[out.range()].iter_mut().for_each(|p| *p = true);
            }
        }
        let reads = self.reads_of(keep, &is_part);
        let read_once = |s: Slot| reads[s.range()].iter().all(|&r| r == 1);
        let mut fused = 0;
        let mut i = 0;
        while i + 2 < self.ops.len() {
            let (mm, gather) = match (&self.ops[i], &self.ops[i + 1]) {
                (mm @ Op::MatMul { .. }, g @ Op::Gather { .. })
                | (g @ Op::Gather { .. }, mm @ Op::MatMul { .. }) => (mm, g),
                _ => {
                    i += 1;
                    continue;
                }
            };
            let (
                &Op::MatMul {
                    a,
                    b,
                    bias: None,
                    n,
                    k,
                    m,
                    out: product,
                },
                Op::Gather {
                    x,
                    idx,
                    out: spread,
                },
                &Op::Binary {
                    f: BinaryFn::Add,
                    a: lhs,
                    b: rhs,
                    out,
                },
            ) = (mm, gather, &self.ops[i + 2])
            else {
                i += 1;
                continue;
            };
            let operands = (lhs == product.arg() && rhs == spread.arg())
                || (lhs == spread.arg() && rhs == product.arg());
            let broadcast = x.len == m
                && idx.len() == (n * m) as usize
                && idx
                    .iter()
                    .enumerate()
                    .all(|(e, &j)| j as usize == e / n.max(1) as usize);
            if !(operands && broadcast && read_once(product) && read_once(*spread)) {
                i += 1;
                continue;
            }
            let bias = *x;
            self.ops.splice(
                i..i + 3,
                [Op::MatMul {
                    a,
                    b,
                    bias: Some(bias),
                    n,
                    k,
                    m,
                    out,
                }],
            );
            fused += 1;
            i += 1;
        }
        fused
    }

    /// Fuses `dot_self(a[ia] − b[ib])` — two [`Op::Gather`]s of equal length (more than
    /// [`crate::ir::scalar::SMALL_LEN`], so short ones stay for the scalar blocks), the
    /// [`BinaryFn::Sub`] of the first's output minus the second's and the [`Op::Dot`] of that
    /// difference with itself, adjacent in that order, each intermediate read only there —
    /// into one [`Op::DotSelfGatherDiff`] writing the dot's output; returns how many were
    /// fused. An ICAR prior over `N` nodes and `E` edges then reads `phi` per edge once and
    /// writes no `3E`-value intermediates, nor clears or passes on their adjoints.
    ///
    /// Same bits: the differences are the subtraction's and their sum is [`Op::Dot`]'s kernel
    /// over them. In the backward sweep the fused op stands where the dot stood and does what
    /// the dot, the subtraction and the two gathers did there, in that order: each element's
    /// contribution is computed with the same roundings (`0.0 + 2g·d` added to the cleared
    /// difference's adjoint, then `0.0 + ±that` to each gather's), and the second gather's
    /// indexes are scattered before the first's, each in element order, so every slot of `a`
    /// and `b` (the same vector, for an ICAR prior) receives the same additions in the same
    /// order. The intermediates' slots stay allocated but are no longer written.
    pub fn fuse_gather_diff_dot_self(&mut self, keep: Arg) -> usize {
        let mut is_part = vec![false; self.n_vals];
        for op in &self.ops {
            if let Op::Gather { out, .. } | Op::Binary { out, .. } = op {
                is_part[out.range()].iter_mut().for_each(|p| *p = true);
            }
        }
        let reads = self.reads_of(keep, &is_part);
        let read_by = |s: Slot, n: u32| reads[s.range()].iter().all(|&r| r == n);
        let mut fused = 0;
        let mut i = 0;
        while i + 3 < self.ops.len() {
            let (
                Op::Gather {
                    x: a,
                    idx: ia,
                    out: ga,
                },
                Op::Gather {
                    x: b,
                    idx: ib,
                    out: gb,
                },
                &Op::Binary {
                    f: BinaryFn::Sub,
                    a: lhs,
                    b: rhs,
                    out: diff,
                },
                &Op::Dot { a: u, b: v, out },
            ) = (
                &self.ops[i],
                &self.ops[i + 1],
                &self.ops[i + 2],
                &self.ops[i + 3],
            )
            else {
                i += 1;
                continue;
            };
            let n = ia.len();
            let shape = n > crate::ir::scalar::SMALL_LEN as usize
                && ib.len() == n
                && ga.len as usize == n
                && gb.len as usize == n
                && lhs == ga.arg()
                && rhs == gb.arg()
                && u == diff.arg()
                && v == diff.arg();
            if !(shape && read_by(*ga, 1) && read_by(*gb, 1) && read_by(diff, 2)) {
                i += 1;
                continue;
            }
            let op = Op::DotSelfGatherDiff {
                a: *a,
                b: *b,
                idx: ia.iter().chain(ib.iter()).copied().collect(),
                scratch: self.n_scratch as u32,
                out,
            };
            self.n_scratch += 2 * n;
            self.ops.splice(i..i + 4, [op]);
            fused += 1;
            i += 1;
        }
        fused
    }
}
