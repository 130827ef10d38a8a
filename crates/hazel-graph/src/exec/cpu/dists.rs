//! Vectorised univariate log densities: the loops over elements (broadcasting of scalar
//! arguments, chunking, fixed-order reductions) around the per-element rules of
//! `hazel_math::dist`, which hold each family's value and gradient formulas once.
//!
//! Families with a [`hazel_math::dist::kernel::UnivariateKernel`] run through
//! [`DistArgs::chunk`]'s loop monomorphised over the kernel: per chunk, the derived quantities
//! of broadcast scalar arguments (`1/σ`, `log σ`, `lgamma(α)`, …) and their argument checks are
//! computed once, and only vector arguments are prepared per element. Other families and the
//! cdfs go through the table's function pointers.
//!
//! Dropping terms (`~` and `_lupdf`): a summand is kept when the density is not
//! proportional (`propto == false`) or when it depends on an argument that varies (a
//! parameter-dependent argument); this is Stan's `include_summand`. Partials are only used
//! for varying arguments, and every summand a varying argument appears in is kept, so the
//! partials are always those of the full density.

use super::kernels::{ChunkSum, CHUNK};
use super::read;
pub use crate::ir::ops::{DistKind, Mode, TableDist};
use crate::ir::Arg;
use crate::simd::{dispatch, Isa};
use hazel_density::EvalError;
use hazel_math::dist::kernel::{self as kernel, UnivariateKernel};
use hazel_math::dist::{MathError, Terms};
use hazel_math::vmath;
use std::any::TypeId;
use std::mem::MaybeUninit;

/// Which summands to keep: `all` (not proportional) or any argument in the summand's mask
/// varies.
#[derive(Debug, Clone, Copy)]
pub struct Inc {
    pub all: bool,
    pub varying: u8,
}

impl Inc {
    /// The same choice as `hazel_math`'s [`Terms`].
    #[inline(always)]
    pub fn terms(&self) -> Terms {
        Terms {
            propto: !self.all,
            varying: self.varying as u32,
        }
    }
}

/// Runs `$body` with `$K` the kernel type of `$kind`, or `$table` for a table distribution.
/// The arms come from `hazel_math::univariate_kernels!`, the one list of kernel families
/// (each `DistKind` variant is named after its kernel type).
macro_rules! with_kernel {
    ($kind:expr, $K:ident => $body:expr, $t:ident => $table:expr) => {
        hazel_math::univariate_kernels!(with_kernel_arms!($kind, $K => $body, $t => $table))
    };
}

/// [`with_kernel!`]'s `match`, one arm per kernel family.
macro_rules! with_kernel_arms {
    (($kind:expr, $K:ident => $body:expr, $t:ident => $table:expr) $($F:ident)*) => {{
        use DistKind as D;
        match $kind {
            D::Table($t) => $table,
            $(D::$F => {
                type $K = kernel::$F;
                $body
            })*
        }
    }};
}

/// Every kernel family's `DistKind`, from the same list.
macro_rules! kernel_kinds {
    (() $($F:ident)*) => {
        &[$(DistKind::$F),*]
    };
}

/// Runs `$body` with `$M` a constant equal to `$vectors`, the layout of a kernel's
/// arguments (bit `k` set = argument `k` is a vector): one copy of `$body` per layout that
/// `$arity` arguments can have (`$arity` is a kernel's constant, so the copies for other
/// arities are dead code).
macro_rules! with_layout {
    ($arity:expr, $vectors:expr, $M:ident => $body:expr) => {
        if $arity <= 1 {
            layout_arms!($vectors, $M => $body; 0 1)
        } else if $arity == 2 {
            layout_arms!($vectors, $M => $body; 0 1 2 3)
        } else if $arity == 3 {
            layout_arms!($vectors, $M => $body; 0 1 2 3 4 5 6 7)
        } else {
            layout_arms!($vectors, $M => $body; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
        }
    };
}

/// [`with_layout!`]'s `match` over the layouts listed.
macro_rules! layout_arms {
    ($vectors:expr, $M:ident => $body:expr; $($m:literal)*) => {
        match $vectors {
            $($m => {
                const $M: u8 = $m;
                $body
            })*
            _ => unreachable!("a layout of at most K::ARITY arguments"),
        }
    };
}

/// Elements per block of [`DistArgs::lanes_rows`]'s loop (a multiple of 8; its rows, five
/// blocks of this many values, stay in L1).
const LANE_BLOCK: usize = 256;

/// A chunk's sums in progress, in [`kernels::chunked_sum`]'s shape: row 0 the terms, row
/// `1 + k` argument `k`'s partials (kept for broadcast scalar arguments only), each as lane
/// sums ([`ChunkSum`]) of the chunk's first `n − n mod 8` values and the last `n mod 8` in
/// `rest`; `ok` whether every element so far passed the branch-free forms' checks.
///
/// For a family whose terms have a `−ln(d)` part ([`UnivariateKernel::LOG_FACTOR`]), the
/// terms' row holds the rest of each term and `factors` the products of the `d`s, lane by
/// lane: element `j` of the chunk into lane `j mod 8`, in element order (the last `n mod 8`
/// too), so the shape is fixed by the chunk alone. The chunk's term sum is the row's sum
/// minus the lanes' logarithms: one logarithm per lane instead of one per element. Each `d`
/// is in [1, 2], so a lane's product stays below 2^(n/8): finite for chunks of up to 8,000
/// elements (a chunk has at most [`kernels::CHUNK`]).
#[derive(Debug, Clone)]
pub(crate) struct LaneSums {
    sums: [ChunkSum; 5],
    rest: [[f64; 8]; 5],
    factors: [f64; 8],
    factored: bool,
    ok: bool,
}

impl Default for LaneSums {
    fn default() -> Self {
        LaneSums {
            sums: [ChunkSum::default(); 5],
            rest: [[0.0; 8]; 5],
            factors: [1.0; 8],
            factored: false,
            ok: true,
        }
    }
}

impl LaneSums {
    /// The chunk's term sum and the scalar arguments' partial sums, the chunk's last `tail`
    /// (< 8) values of each row added after the lanes. `vectors`: bit `k` set = argument `k`
    /// is a vector (its partials are per element, not summed).
    #[inline(always)]
    fn finish(&self, arity: usize, vectors: u8, tail: usize) -> (f64, [f64; 4]) {
        let mut scalar_part = [0.0f64; 4];
        for (k, part) in scalar_part.iter_mut().enumerate().take(arity) {
            if vectors & (1 << k) == 0 {
                *part = self.sums[1 + k].finish(&self.rest[1 + k][..tail]);
            }
        }
        let terms = self.sums[0].finish(&self.rest[0][..tail]);
        if !self.factored {
            return (terms, scalar_part);
        }
        (terms - factor_logs(&self.factors), scalar_part)
    }

    /// Multiplies `d` (the factors of consecutive elements, the first in lane 0) into the
    /// lanes' products.
    #[inline(always)]
    fn multiply_factors(&mut self, d: &[f64]) {
        let mut rows = d.chunks_exact(8);
        for row in &mut rows {
            for (p, v) in self.factors.iter_mut().zip(row) {
                *p *= v;
            }
        }
        for (p, v) in self.factors.iter_mut().zip(rows.remainder()) {
            *p *= v;
        }
    }
}

/// The logarithms of the lanes' products of factors ([`LaneSums`]), added in the lane sums'
/// fixed tree.
#[inline(always)]
fn factor_logs(factors: &[f64; 8]) -> f64 {
    // A plain loop: `array::map`'s closure was not inlined, and then each `ln` ran out of
    // line, one at a time (30% of a capture–recapture model's gradient).
    let mut l = [0.0; 8];
    for (l, f) in l.iter_mut().zip(factors) {
        *l = vmath::ln(*f);
    }
    ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]))
}

/// One element of a table distribution (lpdf, lcdf or lccdf) through its function pointers.
fn table_elem(t: TableDist, x: &[f64; 4], inc: &Inc) -> Result<(f64, [f64; 4]), MathError> {
    let n = t.dist.arity;
    let mut g = [0.0; 4];
    let v = match t.mode {
        Mode::Lpdf => (t.dist.lpdf)(&x[..n], inc.terms(), &mut g[..n]),
        Mode::Lcdf => (t.dist.lcdf.expect("checked at lookup"))(&x[..n], &mut g[..n]),
        Mode::Lccdf => (t.dist.lccdf.expect("checked at lookup"))(&x[..n], &mut g[..n]),
    }?;
    Ok((v, g))
}

/// An element's error with its (1-based) element number, for vectorised calls.
#[cold]
fn at_element(e: MathError, i: usize) -> EvalError {
    EvalError::domain(format!("{} (element {})", e.message, i + 1))
}

impl DistKind {
    /// The families with a kernel (no `Table` kind).
    pub const KERNELS: &'static [DistKind] = hazel_math::univariate_kernels!(kernel_kinds!());

    /// The kernel family called `name` in Stan.
    pub fn from_name(name: &str) -> Option<DistKind> {
        DistKind::KERNELS.iter().copied().find(|k| k.name() == name)
    }

    /// A distribution by Stan family name: the kernel families first, then hazel_math's table.
    pub fn lookup(name: &str) -> Option<DistKind> {
        DistKind::from_name(name).or_else(|| {
            hazel_math::dist::distribution(name).map(|d| {
                DistKind::Table(TableDist {
                    dist: d,
                    mode: Mode::Lpdf,
                })
            })
        })
    }

    /// The log cdf (`ccdf = false`) or log ccdf of a family.
    pub fn cdf(name: &str, ccdf: bool) -> Option<DistKind> {
        let d = hazel_math::dist::distribution(name)?;
        let ok = if ccdf {
            d.lccdf.is_some()
        } else {
            d.lcdf.is_some()
        };
        ok.then_some(DistKind::Table(TableDist {
            dist: d,
            mode: if ccdf { Mode::Lccdf } else { Mode::Lcdf },
        }))
    }

    pub fn name(self) -> &'static str {
        with_kernel!(self, K => kernel::family::<K>(), t => t.dist.name)
    }

    /// Number of arguments including the variate.
    pub fn nargs(self) -> usize {
        with_kernel!(self, K => K::ARITY, t => t.dist.arity)
    }

    /// Whether the variate is an integer (a `_lpmf`).
    pub fn discrete(self) -> bool {
        with_kernel!(
            self,
            K => kernel::is_discrete::<K>(),
            t => t.dist.kind == hazel_math::dist::Kind::Discrete
        )
    }

    /// Log density of one element: value (with dropped summands per `inc`) and partials, or
    /// Stan's full message (`normal_lpdf: Scale parameter is -1, but must be positive!`).
    #[inline]
    pub fn elem(self, x: &[f64; 4], inc: &Inc) -> Result<(f64, [f64; 4]), MathError> {
        with_kernel!(
            self,
            K => lanes_first::<K>(inc, x, |kernel, k, v| kernel.prepare_lanes(k, v)),
            t => table_elem(t, x, inc)
        )
    }

    /// The family's summand of integer arguments alone ([`UnivariateKernel::INTEGER_SUMMAND`]:
    /// which arguments it reads, and its value per element), where it has one.
    pub(crate) fn integer_summand(self) -> Option<(u32, IntegerSummandFn)> {
        with_kernel!(
            self,
            K => (K::INTEGER_SUMMAND != 0)
                .then_some((K::INTEGER_SUMMAND, K::integer_summand as IntegerSummandFn)),
            _t => None
        )
    }

    /// The one-element rule a scalar block's density of this family runs
    /// ([`ScalarLanesFn`]), where its kernel has branch-free forms. Chosen once, when the
    /// block is made: a call through it costs the element's arithmetic, not a dispatch over
    /// every family and a `Result` per argument.
    pub(crate) fn scalar_lanes(self) -> Option<ScalarLanesFn> {
        with_kernel!(
            self,
            K => K::LANES.then_some(scalar_lanes::<K> as ScalarLanesFn),
            _t => None
        )
    }

    /// One element of a density in each of [`LANES`](crate::ir::lanes::LANES) lanes by its
    /// kernel's branch-free forms ([`LaneDistFn`]), where it has them; a lane region's
    /// density ([`crate::ir::lanes::LaneOp::Dist`]).
    pub(crate) fn lane_dist(self) -> Option<LaneDistFn> {
        with_kernel!(
            self,
            K => K::LANES.then_some(lane_dist::<K> as LaneDistFn),
            _t => None
        )
    }

    /// A short density ([`SHORT_DIST`] elements at most) in each of 8 lanes by its kernel's
    /// branch-free forms ([`LaneShortFn`]), where it has them; a lane region's
    /// ([`crate::ir::lanes::LaneOp::ShortDist`]).
    pub(crate) fn lane_short(self) -> Option<LaneShortFn> {
        with_kernel!(
            self,
            K => K::LANES.then_some(lane_short::<K> as LaneShortFn),
            _t => None
        )
    }

    /// The rule a scalar block runs for a density of fewer than 8 elements of this family
    /// ([`ShortLanes`]), where its kernel has branch-free forms; chosen when the block is
    /// made, as [`DistKind::scalar_lanes`].
    pub(crate) fn short_lanes(self) -> Option<ShortLanes> {
        with_kernel!(
            self,
            K => K::LANES.then_some(ShortLanes(short_lanes::<K>)),
            _t => None
        )
    }
}

/// A family's summand of integer arguments alone for one element
/// ([`UnivariateKernel::integer_summand`]).
pub(crate) type IntegerSummandFn = fn(&[f64; 4]) -> Option<f64>;

/// One element of a density by its kernel's branch-free forms: `(passes, (value,
/// partials))`, where what an argument derives (`1/σ`, `log σ`) is looked up in the cache
/// first (by `slots[k]`: its slot, or constant index with the top bit set; [`NO_SCRATCH`]: not
/// cached) and stored there when computed. Where a check fails the value is unspecified: the caller runs
/// [`DistKind::elem`] for Stan's message.
pub(crate) type ScalarLanesFn =
    fn(&[f64; 4], &Inc, &[u32; 4], &mut PreparedCache) -> (bool, kernel::ElementValue);

fn scalar_lanes<K: UnivariateKernel + 'static>(
    x: &[f64; 4],
    inc: &Inc,
    slots: &[u32; 4],
    cache: &mut PreparedCache,
) -> (bool, kernel::ElementValue) {
    let key = TypeId::of::<K>();
    lanes::<K>(inc, x, |kernel, k, x| {
        if slots[k] == NO_SCRATCH {
            kernel.prepare_lanes(k, x)
        } else {
            cache.prepare(key, inc, k, slots[k], x, |x| kernel.prepare_lanes(k, x))
        }
    })
}

/// One element per lane: argument `k` of lane `l` is `x[k][l]`; `(every lane passes, the
/// lanes' values, argument k's partials per lane)`. Each lane is [`ScalarLanesFn`]'s element
/// (the same kernel calls: `prepare_lanes`, `element_lanes`), compiled for `isa`: the same
/// bits at every level.
pub(crate) type LaneDistFn = fn(Isa, &Inc, &[[f64; 8]; 4]) -> (bool, [f64; 8], [[f64; 8]; 4]);

fn lane_dist<K: UnivariateKernel>(
    isa: Isa,
    inc: &Inc,
    x: &[[f64; 8]; 4],
) -> (bool, [f64; 8], [[f64; 8]; 4]) {
    let kernel = K::new(inc.terms());
    // The loop twice, as `lanes_block`'s: in the second, `calls_per_element()` is known false.
    #[allow(clippy::if_same_then_else)]
    if kernel.calls_per_element() {
        dispatch!(isa, lane_dist_loop::<K>(kernel, x))
    } else {
        dispatch!(isa, lane_dist_loop::<K>(kernel, x))
    }
}

#[inline(always)]
fn lane_dist_loop<K: UnivariateKernel>(
    kernel: K,
    x: &[[f64; 8]; 4],
) -> (bool, [f64; 8], [[f64; 8]; 4]) {
    let mut ok = true;
    let mut lp = [0.0; 8];
    let mut g = [[0.0; 8]; 4];
    for l in 0..8 {
        let xl = [x[0][l], x[1][l], x[2][l], x[3][l]];
        // [`lanes`]'s calls, written out: its `prepare` closure was left out of line, at
        // the baseline level, one lane at a time.
        let mut d = [[0.0; 3]; 4];
        macro_rules! prepare {
            ($k:literal) => {
                if $k < K::ARITY {
                    let (passes, derived) = kernel.prepare_lanes($k, xl[$k]);
                    ok &= passes;
                    d[$k] = derived;
                }
            };
        }
        prepare!(0);
        prepare!(1);
        prepare!(2);
        prepare!(3);
        let (passes, (v, gl)) = kernel.element_lanes(&xl, &d);
        ok &= passes;
        lp[l] = v;
        g[0][l] = gl[0];
        g[1][l] = gl[1];
        g[2][l] = gl[2];
        g[3][l] = gl[3];
    }
    (ok, lp, g)
}

/// Argument `k`'s values per lane: element `j` of lane `l` is `x[k][j][l]` (element 0 only,
/// for a scalar argument).
pub(crate) type LaneShortArgs = [[[f64; 8]; SHORT_DIST]; 4];

/// A short density in each of 8 lanes: `(every lane passes, the lanes' values, the partials)`
/// for `n` elements, argument `k` a vector where bit `k` of `vectors` is set; the partials
/// are laid out as the arguments (a scalar argument's, its sum, in element 0). Each lane is
/// [`short_lanes`]' density, to the bit, compiled for `isa`.
pub(crate) type LaneShortFn =
    fn(Isa, &Inc, usize, u8, &LaneShortArgs) -> (bool, [f64; 8], LaneShortArgs);

fn lane_short<K: UnivariateKernel>(
    isa: Isa,
    inc: &Inc,
    n: usize,
    vectors: u8,
    x: &LaneShortArgs,
) -> (bool, [f64; 8], LaneShortArgs) {
    let kernel = K::new(inc.terms());
    // Every argument differs between lanes: [`lanes_block`]'s layout of all vectors.
    with_layout!(K::ARITY, (1u8 << K::ARITY) - 1, M => {
        // The loop twice, as `lanes_block`'s: in the second, `calls_per_element()` is
        // known false.
        #[allow(clippy::if_same_then_else)]
        if kernel.calls_per_element() {
            dispatch!(isa, lane_short_loop::<K, M>(kernel, n, vectors, x))
        } else {
            dispatch!(isa, lane_short_loop::<K, M>(kernel, n, vectors, x))
        }
    })
}

/// [`lane_short`]'s loop: element `j` of every lane as one block of [`lanes_block`] (the
/// lanes as its elements; a scalar argument's value is prepared again for each element,
/// the same bits), its terms and partials then added as [`short_lanes`] adds them.
#[inline(always)]
fn lane_short_loop<K: UnivariateKernel, const ALL: u8>(
    kernel: K,
    n: usize,
    vectors: u8,
    x: &LaneShortArgs,
) -> (bool, [f64; 8], LaneShortArgs) {
    let is_vector = |k: usize| vectors & (1 << k) != 0;
    let mut ok = true;
    let mut sum = [0.0; 8];
    let mut scalar_sum = [[0.0; 8]; 4];
    let mut factors = [[1.0; 8]; 8];
    let mut d_out = [[[0.0; 8]; SHORT_DIST]; 4];
    for j in 0..n.min(SHORT_DIST) {
        let column = |k: usize| -> &[f64] {
            if k >= K::ARITY {
                &[]
            } else if is_vector(k) {
                &x[k][j]
            } else {
                &x[k][0]
            }
        };
        let mut rows: Rows8 = [[MaybeUninit::uninit(); 8]; 6];
        ok &= lanes_block8::<K, ALL>(
            kernel,
            [0.0; 4],
            [[0.0; 3]; 4],
            [column(0), column(1), column(2), column(3)],
            &mut rows,
        );
        let [terms, g0, g1, g2, g3, fs] = &rows;
        // SAFETY: `lanes_block` wrote all 8 lanes of every row it was given.
        let read = |row: &[MaybeUninit<f64>; 8], l: usize| unsafe { row[l].assume_init() };
        for (l, s) in sum.iter_mut().enumerate() {
            *s += read(terms, l);
        }
        if K::LOG_FACTOR {
            for (l, f) in factors[j].iter_mut().enumerate() {
                *f = read(fs, l);
            }
        }
        for (k, row) in [g0, g1, g2, g3].into_iter().enumerate().take(K::ARITY) {
            if is_vector(k) {
                for (l, d) in d_out[k][j].iter_mut().enumerate() {
                    *d = read(row, l);
                }
            } else {
                for (l, s) in scalar_sum[k].iter_mut().enumerate() {
                    *s += read(row, l);
                }
            }
        }
    }
    for k in 0..K::ARITY {
        if !is_vector(k) {
            for l in 0..8 {
                d_out[k][0][l] = 0.0 + scalar_sum[k][l];
            }
        }
    }
    if K::LOG_FACTOR {
        // `factor_logs` of each lane's factors (1 past the last element), lane by lane.
        let mut logs = [[0.0; 8]; 8];
        for (j, (lj, fj)) in logs.iter_mut().zip(&factors).enumerate() {
            if j < n {
                for l in 0..8 {
                    lj[l] = vmath::ln(fj[l]);
                }
            } else {
                *lj = [vmath::ln(1.0); 8];
            }
        }
        for l in 0..8 {
            let t = |j: usize| logs[j][l];
            sum[l] -= ((t(0) + t(1)) + (t(2) + t(3))) + ((t(4) + t(5)) + (t(6) + t(7)));
        }
    }
    let mut lp = [0.0; 8];
    for l in 0..8 {
        lp[l] = 0.0 + sum[l];
    }
    (ok, lp, d_out)
}

/// A density of fewer than 8 elements ([`SHORT_DIST`]) by its kernel's branch-free forms,
/// with partials written to `scratch` at `sc` as [`forward`] writes them; `None` where an
/// element fails a check (nothing is decided: the caller runs [`forward`], for Stan's
/// message or the checked forms' value).
///
/// A capture–recapture row's `bernoulli_logit_lpmf(y[i] | logit_p[i]')` has a handful of
/// elements per observation: [`forward`]'s chunk loop, its lane sums and their dispatch
/// cost more than the elements. Fewer than 8 elements leave the lane sums at zero, so
/// [`forward`]'s sums are `0 + t₀ + t₁ + …` (the lanes' tree, then the rest in order; for a
/// family with [`UnivariateKernel::LOG_FACTOR`], less the lanes' logarithms, one factor per
/// lane) and `0.0 +` that for the one chunk: added here the same way, the same bits.
pub(crate) type ShortLanesFn = fn(&DistArgs<'_>, &[u32], &mut [f64]) -> Option<f64>;

/// A family's [`ShortLanesFn`], as a scalar block's instruction holds it.
#[derive(Clone, Copy)]
pub struct ShortLanes(pub(crate) ShortLanesFn);

impl std::fmt::Debug for ShortLanes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ShortLanes")
    }
}

/// The longest density [`ShortLanesFn`] computes.
pub(crate) const SHORT_DIST: usize = 7;

fn short_lanes<K: UnivariateKernel>(
    a: &DistArgs<'_>,
    sc: &[u32],
    scratch: &mut [f64],
) -> Option<f64> {
    debug_assert!(a.len <= SHORT_DIST);
    with_layout!(K::ARITY, a.layout(K::ARITY), M => {
        dispatch!(a.isa, short_layout::<K, M>(a, sc, scratch))
    })
}

/// [`short_lanes`] for one layout: the elements, padded to 8 by repeating the first, run as
/// one block of [`lanes_block`]'s vectorised loop (at the workspace's instruction set; the
/// same bits as one element at a time), then are summed in element order. The padding lanes
/// repeat element 0's arithmetic (so its checks too) and are not read.
#[inline(always)]
fn short_layout<K: UnivariateKernel, const VECTORS: u8>(
    a: &DistArgs<'_>,
    sc: &[u32],
    scratch: &mut [f64],
) -> Option<f64> {
    let is_vector = |k: usize| VECTORS & (1 << k) != 0;
    let n = a.len;
    let kernel = K::new(a.inc.terms());
    let mut x = [0.0; 4];
    let mut d = [[0.0; 3]; 4];
    let mut ok = true;
    let mut columns = [[0.0; 8]; 4];
    for k in 0..K::ARITY {
        let sl = a.slices[k];
        if is_vector(k) {
            for (j, c) in columns[k].iter_mut().enumerate() {
                *c = sl[if j < n { j } else { 0 }];
            }
        } else {
            x[k] = sl[0];
            let (passes, derived) = kernel.prepare_lanes(k, x[k]);
            ok &= passes;
            d[k] = derived;
        }
    }
    let column = |k: usize| -> &[f64] {
        if is_vector(k) {
            &columns[k]
        } else {
            &[]
        }
    };
    let mut rows: Rows8 = [[MaybeUninit::uninit(); 8]; 6];
    ok &= lanes_block8::<K, VECTORS>(
        kernel,
        x,
        d,
        [column(0), column(1), column(2), column(3)],
        &mut rows,
    );
    let [terms, g0, g1, g2, g3, factors] = &rows;
    if !ok {
        return None;
    }
    // SAFETY: `lanes_block` wrote all 8 lanes of every row it was given.
    let read = |row: &[MaybeUninit<f64>; 8], j: usize| unsafe { row[j].assume_init() };
    // The lanes' tree of eight zeros, `+0.0`, starts each sum; element `j`'s factor is lane
    // `j`'s product (`LaneSums`), 1 for the lanes past the last element.
    let mut sum = 0.0;
    for j in 0..n {
        sum += read(terms, j);
    }
    for (k, row) in [g0, g1, g2, g3].into_iter().enumerate().take(K::ARITY) {
        if sc[k] == NO_SCRATCH {
            continue;
        }
        let at = sc[k] as usize;
        if is_vector(k) {
            for (j, s) in scratch[at..at + n].iter_mut().enumerate() {
                *s = read(row, j);
            }
        } else {
            let mut scalar_sum = 0.0;
            for j in 0..n {
                scalar_sum += read(row, j);
            }
            scratch[at] = 0.0 + scalar_sum;
        }
    }
    if K::LOG_FACTOR {
        let mut lane_factors = [1.0; 8];
        for (j, f) in lane_factors.iter_mut().enumerate().take(n) {
            *f = read(factors, j);
        }
        sum -= factor_logs(&lane_factors);
    }
    Some(0.0 + sum)
}

/// One element through kernel `K`: by its branch-free forms where it has them (`K::LANES`),
/// which give the checked forms' bits where every check passes (`hazel-math`'s
/// `dist_lanes`) without their `Result` per argument; where a check fails, or `K` has no such
/// forms, by the checked forms, for Stan's message.
#[inline(always)]
fn lanes_first<K: UnivariateKernel>(
    inc: &Inc,
    x: &[f64; 4],
    prepare: impl FnMut(&K, usize, f64) -> (bool, kernel::Derived),
) -> Result<(f64, [f64; 4]), MathError> {
    if K::LANES {
        let (passes, value) = lanes::<K>(inc, x, prepare);
        if passes {
            return Ok(value);
        }
    }
    kernel::evaluate::<K>(inc.terms(), x)
}

/// `(passes, value)` of one element by `K`'s branch-free forms, argument `k` prepared by
/// `prepare(kernel, k, x[k])`.
#[inline(always)]
fn lanes<K: UnivariateKernel>(
    inc: &Inc,
    x: &[f64; 4],
    mut prepare: impl FnMut(&K, usize, f64) -> (bool, kernel::Derived),
) -> (bool, kernel::ElementValue) {
    let kernel = K::new(inc.terms());
    let mut d = [[0.0; 3]; 4];
    let mut ok = true;
    for k in 0..K::ARITY {
        let (passes, derived) = prepare(&kernel, k, x[k]);
        ok &= passes;
        d[k] = derived;
    }
    let (passes, value) = kernel.element_lanes(x, &d);
    (ok && passes, value)
}

/// Entries of a [`PreparedCache`] (a power of two).
const PREPARED_WAYS: usize = 16;

/// What the one-term densities of one scalar block derived from their arguments during one
/// sweep. A mixture's component scale `σ_k` is read by one density per observation,
/// and each would compute `1/σ_k` and `log σ_k` again; `prepare_lanes` is a function of
/// (family, kept terms, argument position, value), so an entry with that key and the same
/// value bits gives the bits a new call would. Direct-mapped by slot: a miss only costs the
/// computation.
pub(crate) struct PreparedCache {
    entries: [Prepared; PREPARED_WAYS],
}

#[derive(Clone, Copy)]
struct Prepared {
    /// The kernel (`None`: an empty entry).
    kernel: Option<TypeId>,
    all: bool,
    varying: u8,
    k: u8,
    bits: u64,
    passes: bool,
    derived: kernel::Derived,
}

impl PreparedCache {
    pub(crate) fn new() -> PreparedCache {
        PreparedCache {
            entries: [Prepared {
                kernel: None,
                all: false,
                varying: 0,
                k: 0,
                bits: 0,
                passes: false,
                derived: [0.0; 3],
            }; PREPARED_WAYS],
        }
    }

    /// `compute(x)` for argument `k` of `kernel` read from `slot`, or the stored result of
    /// the same call.
    #[inline(always)]
    fn prepare(
        &mut self,
        kernel: TypeId,
        inc: &Inc,
        k: usize,
        slot: u32,
        x: f64,
        compute: impl FnOnce(f64) -> (bool, kernel::Derived),
    ) -> (bool, kernel::Derived) {
        let e = &mut self.entries[slot as usize % PREPARED_WAYS];
        if e.kernel == Some(kernel)
            && e.bits == x.to_bits()
            && e.k as usize == k
            && e.all == inc.all
            && e.varying == inc.varying
        {
            return (e.passes, e.derived);
        }
        let (passes, derived) = compute(x);
        *e = Prepared {
            kernel: Some(kernel),
            all: inc.all,
            varying: inc.varying,
            k: k as u8,
            bits: x.to_bits(),
            passes,
            derived,
        };
        (passes, derived)
    }
}

/// Marker for a scratch entry of an argument that needs none (constant argument).
pub const NO_SCRATCH: u32 = u32::MAX;

/// Where [`DistArgs::lanes_rows`] puts argument `k`'s partials of the block's `row.len()`
/// elements from element `i0`: scratch for a vector argument that has some, otherwise `row`
/// (summed afterwards for a scalar argument; a sink for a vector argument without scratch).
///
/// # Safety
/// As for [`DistArgs::chunk`]: scratch valid for writes at `sc[k] + i` for the block's `i`,
/// and no one else accessing them while the slice lives. Only initialised values may be
/// written through the `MaybeUninit` view, which keeps them initialised.
#[inline(always)]
unsafe fn partials_dst<'r, const VECTORS: u8>(
    k: usize,
    row: &'r mut [MaybeUninit<f64>],
    sc: &[u32],
    scratch: *mut f64,
    i0: usize,
) -> &'r mut [MaybeUninit<f64>] {
    if VECTORS & (1 << k) != 0 && sc[k] != NO_SCRATCH {
        // SAFETY: the caller's contract.
        unsafe {
            std::slice::from_raw_parts_mut(
                scratch.add(sc[k] as usize + i0).cast::<MaybeUninit<f64>>(),
                row.len(),
            )
        }
    } else {
        row
    }
}

/// One block of [`DistArgs::lanes_rows`]'s element loop: element `j` of the vector arguments'
/// `columns` (the scalar arguments are in `x` and `d` already) gives `terms[j]` and `g_k[j]`,
/// argument `k`'s partial; whether every check passed.
///
/// Written so that LLVM vectorises it, which it did not do for the loop this replaces when
/// two arguments were vectors:
/// - `x` and `d` are indexed by constants only (one macro call per argument, not a loop over
///   `k`), so they live in registers; indexed by a loop variable they stayed in memory, and
///   with stores in the loop LLVM could not keep even the scalars' values out of it.
/// - every output is a parameter of its own, a `&mut` slice: their `noalias` survives
///   inlining (as scoped alias metadata), so the stores are known to touch neither the loads
///   nor each other, with no run-time overlap checks.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn lanes_block<K: UnivariateKernel, const VECTORS: u8>(
    kernel: K,
    x: [f64; 4],
    d: [kernel::Derived; 4],
    columns: [&[f64]; 4],
    terms: &mut [MaybeUninit<f64>],
    g0: &mut [MaybeUninit<f64>],
    g1: &mut [MaybeUninit<f64>],
    g2: &mut [MaybeUninit<f64>],
    g3: &mut [MaybeUninit<f64>],
    factors: &mut [MaybeUninit<f64>],
) -> bool {
    // The same loop twice: in the second copy `calls_per_element()` is known to be false
    // (its condition dominates the copy), so the branches around the kernel's calls that do
    // not vectorise fold away and the loop vectorises (poisson_log under `~`, whose kept
    // `lgamma(n + 1)` otherwise kept every call scalar).
    #[allow(clippy::if_same_then_else)] // the copies differ once the condition is known
    if kernel.calls_per_element() {
        lanes_loop::<K, VECTORS>(kernel, x, d, columns, terms, g0, g1, g2, g3, factors)
    } else {
        lanes_loop::<K, VECTORS>(kernel, x, d, columns, terms, g0, g1, g2, g3, factors)
    }
}

/// The rows [`lanes_block8`] fills: the terms, argument `k`'s partials (`1 + k`), the
/// factors.
type Rows8 = [[MaybeUninit<f64>; 8]; 6];

/// [`lanes_block`] over 8 elements into rows on the stack ([`Rows8`]; the factors' row
/// only with `LOG_FACTOR`, an argument's only below `K::ARITY`): whether every check passed.
#[inline(always)]
fn lanes_block8<K: UnivariateKernel, const VECTORS: u8>(
    kernel: K,
    x: [f64; 4],
    d: [kernel::Derived; 4],
    columns: [&[f64]; 4],
    rows: &mut Rows8,
) -> bool {
    let rows_len = |k: usize| if k < K::ARITY { 8 } else { 0 };
    let [terms, g0, g1, g2, g3, factors] = rows;
    lanes_block::<K, VECTORS>(
        kernel,
        x,
        d,
        columns,
        terms,
        &mut g0[..rows_len(0)],
        &mut g1[..rows_len(1)],
        &mut g2[..rows_len(2)],
        &mut g3[..rows_len(3)],
        &mut factors[..if K::LOG_FACTOR { 8 } else { 0 }],
    )
}

/// [`lanes_block`]'s loop.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn lanes_loop<K: UnivariateKernel, const VECTORS: u8>(
    kernel: K,
    x: [f64; 4],
    d: [kernel::Derived; 4],
    columns: [&[f64]; 4],
    terms: &mut [MaybeUninit<f64>],
    g0: &mut [MaybeUninit<f64>],
    g1: &mut [MaybeUninit<f64>],
    g2: &mut [MaybeUninit<f64>],
    g3: &mut [MaybeUninit<f64>],
    factors: &mut [MaybeUninit<f64>],
) -> bool {
    let is_vector = |k: usize| k < K::ARITY && VECTORS & (1 << k) != 0;
    let m = terms.len();
    assert!(!K::LOG_FACTOR || factors.len() == m);
    // Checked once here, so that the loop reads and writes unchecked.
    for (k, column) in columns.iter().enumerate() {
        assert!(!is_vector(k) || column.len() == m);
    }
    for (k, len) in [g0.len(), g1.len(), g2.len(), g3.len()]
        .into_iter()
        .enumerate()
    {
        assert!(k >= K::ARITY || len == m);
    }
    let [a0, a1, a2, a3] = columns;
    let mut ok = true;
    for j in 0..m {
        let (mut x, mut d) = (x, d);
        macro_rules! read {
            ($k:literal, $a:ident) => {
                if is_vector($k) {
                    // SAFETY: a vector's column has `m` values (checked above).
                    x[$k] = unsafe { *$a.get_unchecked(j) };
                    let (passes, derived) = kernel.prepare_lanes($k, x[$k]);
                    ok &= passes;
                    d[$k] = derived;
                }
            };
        }
        read!(0, a0);
        read!(1, a1);
        read!(2, a2);
        read!(3, a3);
        // `factor` is 1 without `LOG_FACTOR` (and then unused).
        let (passes, (lp, g), factor) = kernel.element_lanes_factored(&x, &d);
        ok &= passes;
        if K::LOG_FACTOR {
            // SAFETY: `factors` has `m` values (checked above).
            unsafe { factors.get_unchecked_mut(j).write(factor) };
        }
        macro_rules! write {
            ($k:literal, $row:ident) => {
                if $k < K::ARITY {
                    // SAFETY: each argument's row has `m` values (checked above).
                    unsafe { $row.get_unchecked_mut(j).write(g[$k]) };
                }
            };
        }
        // SAFETY: `terms` has `m` values.
        unsafe { terms.get_unchecked_mut(j).write(lp) };
        write!(0, g0);
        write!(1, g1);
        write!(2, g2);
        write!(3, g3);
    }
    ok
}

/// The argument runs of one density op, resolved against the buffers.
pub(crate) struct DistArgs<'a> {
    pub kind: DistKind,
    pub slices: [&'a [f64]; 4],
    pub nargs: usize,
    pub inc: Inc,
    pub len: usize,
    /// The instruction set of the vectorising element loops (same bits for every choice).
    pub isa: Isa,
}

impl<'a> DistArgs<'a> {
    pub fn new(
        kind: DistKind,
        args: &[Arg],
        propto: bool,
        len: usize,
        lo: &'a [f64],
        consts: &'a [f64],
        isa: Isa,
    ) -> Self {
        let mut varying = 0u8;
        let mut slices: [&[f64]; 4] = [&[0.0]; 4];
        for (k, a) in args.iter().enumerate() {
            slices[k] = read(*a, lo, consts);
            if a.is_var() {
                varying |= 1 << k;
            }
        }
        DistArgs {
            kind,
            slices,
            nargs: args.len(),
            inc: Inc {
                all: !propto,
                varying,
            },
            len,
            isa,
        }
    }

    /// Elements `c0..c1` (one chunk): the sum of the log density and of the partials of
    /// broadcast scalar arguments; per-element partials of vector arguments are written at
    /// `scratch + sc[k] + i`.
    ///
    /// # Safety
    /// `scratch` must be valid for writes at `sc[k] + i` for every varying vector argument `k`
    /// and `i` in `c0..c1`, and no other thread may access those entries meanwhile.
    pub unsafe fn chunk(
        &self,
        c0: usize,
        c1: usize,
        sc: &[u32],
        scratch: *mut f64,
    ) -> Result<(f64, [f64; 4]), EvalError> {
        // Dispatch once per chunk so the element loop inlines the kernel.
        with_kernel!(
            self.kind,
            K => unsafe { self.chunk_kernel::<K>(c0, c1, sc, scratch) },
            t => unsafe { self.chunk_table(t, c0, c1, sc, scratch) }
        )
    }

    /// [`DistArgs::chunk`] for a kernel family: dispatches on which arguments are vectors, so
    /// that each layout's element loop is compiled without per-argument branches.
    ///
    /// # Safety
    /// As for [`DistArgs::chunk`].
    #[inline(always)]
    unsafe fn chunk_kernel<K: UnivariateKernel>(
        &self,
        c0: usize,
        c1: usize,
        sc: &[u32],
        scratch: *mut f64,
    ) -> Result<(f64, [f64; 4]), EvalError> {
        with_layout!(K::ARITY, self.layout(K::ARITY), M => unsafe {
            self.chunk_layout::<K, M>(c0, c1, sc, scratch)
        })
    }

    /// The element loop of one kernel family for one layout: bit `k` of `VECTORS` set =
    /// argument `k` is a vector (read and prepared per element), clear = a broadcast scalar
    /// (checked and prepared once; its partials summed).
    ///
    /// The chunk's terms, and the partials of scalar arguments, are summed in
    /// [`kernels::chunked_sum`]'s shape ([`ChunkSum`]) by both loops below, so they give the
    /// same bits. Families with branch-free forms (`K::LANES`) run [`Self::chunk_lanes`], whose
    /// loop vectorises; if an element fails a check there, the checked loop runs the chunk
    /// again to name the first failing element.
    ///
    /// # Safety
    /// As for [`DistArgs::chunk`].
    // One out-of-line copy per kernel and layout: the loop gets its own inlining budget instead
    // of competing with every other family inside `chunk`.
    #[inline(never)]
    unsafe fn chunk_layout<K: UnivariateKernel, const VECTORS: u8>(
        &self,
        c0: usize,
        c1: usize,
        sc: &[u32],
        scratch: *mut f64,
    ) -> Result<(f64, [f64; 4]), EvalError> {
        if K::LANES {
            // SAFETY: the caller's contract.
            let lanes = dispatch!(self.isa, unsafe {
                self.chunk_lanes::<K, VECTORS>(c0, c1, sc, scratch)
            })?;
            if let Some(r) = lanes {
                return Ok(r);
            }
        }
        let is_vector = |k: usize| VECTORS & (1 << k) != 0;
        let kernel = K::new(self.inc.terms());
        let mut x = [0.0; 4];
        let mut d = [[0.0; 3]; 4];
        // Vector arguments restricted to this chunk, and where their partials go (if varying).
        let mut columns: [&[f64]; 4] = [&[]; 4];
        let mut partials: [*mut f64; 4] = [std::ptr::null_mut(); 4];
        for k in 0..K::ARITY {
            let sl = self.slices[k];
            if is_vector(k) {
                columns[k] = &sl[c0..c1];
                if sc[k] != NO_SCRATCH {
                    // SAFETY: see the caller's contract.
                    partials[k] = unsafe { scratch.add(sc[k] as usize + c0) };
                }
            } else {
                x[k] = sl[0];
                d[k] = kernel
                    .prepare(k, x[k])
                    .map_err(|e| EvalError::domain(e.message))?;
            }
        }
        let n = c1 - c0;
        let n8 = n / 8 * 8;
        // Lane sums (0: the terms, 1 + k: argument k's partials) and the last n mod 8 values.
        let mut sums = [ChunkSum::default(); 5];
        let mut rest = [[0.0f64; 8]; 5];
        let mut block = [[0.0f64; 8]; 5];
        for j in 0..n {
            for k in 0..K::ARITY {
                if is_vector(k) {
                    // SAFETY: `columns[k]` has `c1 - c0` elements.
                    x[k] = unsafe { *columns[k].get_unchecked(j) };
                    d[k] = kernel.prepare(k, x[k]).map_err(|e| at_element(e, c0 + j))?;
                }
            }
            let (lp, g) = kernel.element(&x, &d).map_err(|e| at_element(e, c0 + j))?;
            let into = if j < n8 { &mut block } else { &mut rest };
            into[0][j % 8] = lp;
            for k in 0..K::ARITY {
                if !is_vector(k) {
                    into[1 + k][j % 8] = g[k];
                } else if !partials[k].is_null() {
                    // SAFETY: see the caller's contract.
                    unsafe { *partials[k].add(j) = g[k] };
                }
            }
            if j < n8 && j % 8 == 7 {
                for (sum, b) in sums.iter_mut().zip(&block) {
                    sum.add8(self.isa, b);
                }
            }
        }
        // Each element's whole term (`element`), so no factors.
        Ok(LaneSums {
            sums,
            rest,
            ok: true,
            ..LaneSums::default()
        }
        .finish(K::ARITY, VECTORS, n - n8))
    }

    /// [`Self::chunk_layout`]'s vectorising loop: `None` if an element fails a check.
    ///
    /// # Safety
    /// As for [`DistArgs::chunk`].
    #[inline(always)]
    unsafe fn chunk_lanes<K: UnivariateKernel, const VECTORS: u8>(
        &self,
        c0: usize,
        c1: usize,
        sc: &[u32],
        scratch: *mut f64,
    ) -> Result<Option<(f64, [f64; 4])>, EvalError> {
        let mut st = LaneSums::default();
        // SAFETY: the caller's contract.
        unsafe { self.lanes_rows::<K, VECTORS>(c0, c1, c0, c1, sc, scratch, &mut st)? };
        Ok(st.ok.then(|| st.finish(K::ARITY, VECTORS, (c1 - c0) % 8)))
    }

    /// Elements `i0..i1` of the chunk `c0..c1` by the kernel's branch-free forms, added into
    /// `st`; `i0 − c0` is a multiple of 8, and so is `i1 − c0` unless `i1 = c1`.
    ///
    /// The elements are walked in blocks of [`LANE_BLOCK`]: [`lanes_block`] computes each
    /// element's term and partials into rows on the stack (the vector arguments' partials
    /// straight into scratch where they have some), the checks' outcomes and-ed into `st.ok`;
    /// the rows of the terms and of the scalar arguments' partials are then added into the
    /// lane sums. The lane sums take the chunk's values 8 at a time in element order, so
    /// neither the blocks nor the caller's pieces change the bits.
    ///
    /// The rows are left uninitialised: every value read from one was written by
    /// `lanes_block` first, and zeroing them cost more than the loop for short densities.
    ///
    /// # Safety
    /// As for [`DistArgs::chunk`].
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn lanes_rows<K: UnivariateKernel, const VECTORS: u8>(
        &self,
        c0: usize,
        c1: usize,
        i0: usize,
        i1: usize,
        sc: &[u32],
        scratch: *mut f64,
        st: &mut LaneSums,
    ) -> Result<(), EvalError> {
        let is_vector = |k: usize| VECTORS & (1 << k) != 0;
        let kernel = K::new(self.inc.terms());
        let mut x = [0.0; 4];
        let mut d = [[0.0; 3]; 4];
        for k in 0..K::ARITY {
            if !is_vector(k) {
                x[k] = self.slices[k][0];
                d[k] = kernel
                    .prepare(k, x[k])
                    .map_err(|e| EvalError::domain(e.message))?;
            }
        }
        let n8 = (c1 - c0) / 8 * 8;
        let [mut terms, mut r0, mut r1, mut r2, mut r3, mut factors] =
            [[MaybeUninit::<f64>::uninit(); LANE_BLOCK]; 6];
        st.factored = K::LOG_FACTOR;
        // The lanes' products of factors in [1, 2] stay finite (see `LaneSums`).
        debug_assert!(!K::LOG_FACTOR || c1 - c0 <= 8_000);
        let factors_len = |m: usize| if K::LOG_FACTOR { m } else { 0 };
        let mut i = i0;
        while i < i1 {
            let m = LANE_BLOCK.min(i1 - i);
            let column = |k: usize| -> &[f64] {
                if is_vector(k) {
                    &self.slices[k][i..i + m]
                } else {
                    &[]
                }
            };
            st.ok &= lanes_block::<K, VECTORS>(
                kernel,
                x,
                d,
                [column(0), column(1), column(2), column(3)],
                &mut terms[..m],
                // SAFETY (each): the caller's contract.
                unsafe { partials_dst::<VECTORS>(0, &mut r0[..m], sc, scratch, i) },
                unsafe { partials_dst::<VECTORS>(1, &mut r1[..m], sc, scratch, i) },
                unsafe { partials_dst::<VECTORS>(2, &mut r2[..m], sc, scratch, i) },
                unsafe { partials_dst::<VECTORS>(3, &mut r3[..m], sc, scratch, i) },
                &mut factors[..factors_len(m)],
            );
            if K::LOG_FACTOR {
                // SAFETY: `lanes_block` wrote the block's `m` factors.
                st.multiply_factors(unsafe { factors[..m].assume_init_ref() });
            }
            // Into the lanes: all of a block but the chunk's last n mod 8 values.
            let m8 = m.min(n8.saturating_sub(i - c0));
            for (r, row) in [&terms, &r0, &r1, &r2, &r3].into_iter().enumerate() {
                if r == 0 || (r <= K::ARITY && !is_vector(r - 1)) {
                    // SAFETY: `lanes_block` wrote the block's `m` terms, and the partials of
                    // every scalar argument into its row.
                    let row = unsafe { row[..m].assume_init_ref() };
                    st.sums[r].add8(self.isa, &row[..m8]);
                    st.rest[r][..m - m8].copy_from_slice(&row[m8..m]);
                }
            }
            i += m;
        }
        Ok(())
    }

    /// [`Self::chunk`] in pieces, for a caller that produces a vector argument's values piece
    /// by piece just before they are used (the fused GLM computes η a few rows at a time, so
    /// that the density's arithmetic overlaps the reading of the next rows of `X`):
    /// elements `i0..i1` of the chunk `c0..c1` into `st` (`i0 − c0` a multiple of 8, and
    /// `i1 − c0` too unless `i1 = c1`); [`Self::chunk_part_finish`] then gives `chunk`'s
    /// result, to the bit. `Ok(false)` (nothing done): the family has no branch-free forms,
    /// and the caller uses [`Self::chunk`].
    ///
    /// # Safety
    /// As for [`DistArgs::chunk`], for the elements `i0..i1`.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn chunk_part(
        &self,
        c0: usize,
        c1: usize,
        i0: usize,
        i1: usize,
        sc: &[u32],
        scratch: *mut f64,
        st: &mut LaneSums,
    ) -> Result<bool, EvalError> {
        with_kernel!(
            self.kind,
            K => {
                if !K::LANES {
                    return Ok(false);
                }
                with_layout!(K::ARITY, self.layout(K::ARITY), M => unsafe {
                    self.part_layout::<K, M>(c0, c1, i0, i1, sc, scratch, st)
                })
            },
            _t => Ok(false)
        )
    }

    /// [`Self::chunk_part`] for one kernel and layout, out of line with its vectorised loop.
    ///
    /// # Safety
    /// As for [`Self::chunk_part`].
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    unsafe fn part_layout<K: UnivariateKernel, const VECTORS: u8>(
        &self,
        c0: usize,
        c1: usize,
        i0: usize,
        i1: usize,
        sc: &[u32],
        scratch: *mut f64,
        st: &mut LaneSums,
    ) -> Result<bool, EvalError> {
        // SAFETY: the caller's contract.
        dispatch!(self.isa, unsafe {
            self.lanes_rows::<K, VECTORS>(c0, c1, i0, i1, sc, scratch, st)
        })?;
        Ok(true)
    }

    /// The result of [`Self::chunk`] for the chunk `c0..c1` fed whole to
    /// [`Self::chunk_part`], or `None` if an element failed a check (the caller runs `chunk`
    /// for the error naming it).
    pub fn chunk_part_finish(
        &self,
        c0: usize,
        c1: usize,
        st: &LaneSums,
    ) -> Option<(f64, [f64; 4])> {
        let arity = self.kind.nargs();
        st.ok
            .then(|| st.finish(arity, self.layout(arity), (c1 - c0) % 8))
    }

    /// The layout of the arguments: bit `k` set = argument `k` (of the first `arity`) is a
    /// vector.
    #[inline(always)]
    fn layout(&self, arity: usize) -> u8 {
        let mut vectors = 0u8;
        for k in 0..arity {
            if self.slices[k].len() != 1 {
                vectors |= 1 << k;
            }
        }
        vectors
    }

    /// [`DistArgs::chunk`] for a table distribution (function pointers, per element).
    ///
    /// # Safety
    /// As for [`DistArgs::chunk`].
    #[allow(clippy::needless_range_loop)]
    unsafe fn chunk_table(
        &self,
        t: TableDist,
        c0: usize,
        c1: usize,
        sc: &[u32],
        scratch: *mut f64,
    ) -> Result<(f64, [f64; 4]), EvalError> {
        let mut s = 0.0;
        let mut scalar_part = [0.0f64; 4];
        for i in c0..c1 {
            let mut x = [0.0; 4];
            for k in 0..self.nargs {
                let sl = self.slices[k];
                x[k] = if sl.len() == 1 { sl[0] } else { sl[i] };
            }
            let (lp, d) = table_elem(t, &x, &self.inc).map_err(|e| EvalError::domain(e.message))?;
            s += lp;
            for k in 0..self.nargs {
                if sc[k] != NO_SCRATCH {
                    if self.slices[k].len() == 1 {
                        scalar_part[k] += d[k];
                    } else {
                        // SAFETY: see the caller's contract.
                        unsafe { *scratch.add(sc[k] as usize + i) = d[k] };
                    }
                }
            }
        }
        Ok((s, scalar_part))
    }

    /// Number of chunks.
    pub fn n_chunks(&self) -> usize {
        self.len.div_ceil(CHUNK)
    }
}

/// Combines chunk results in chunk order (the fixed reduction order) and stores the scalar
/// arguments' partials.
pub(crate) fn combine(
    parts: impl Iterator<Item = (f64, [f64; 4])>,
    nargs: usize,
    slices: &[&[f64]; 4],
    sc: &[u32],
    scratch: &mut [f64],
) -> f64 {
    let mut total = 0.0;
    let mut scalar_tot = [0.0f64; 4];
    for (s, sp) in parts {
        total += s;
        for k in 0..nargs {
            scalar_tot[k] += sp[k];
        }
    }
    for k in 0..nargs {
        if sc[k] != NO_SCRATCH && slices[k].len() == 1 {
            scratch[sc[k] as usize] = scalar_tot[k];
        }
    }
    total
}

/// Value of one density op: sum over `len` elements (chunked); partials of varying arguments
/// go to `scratch` at the offsets in `sc`.
#[allow(clippy::too_many_arguments)]
pub fn forward(
    kind: DistKind,
    args: &[Arg],
    propto: bool,
    len: usize,
    sc: &[u32],
    lo: &[f64],
    consts: &[f64],
    scratch: &mut [f64],
    isa: Isa,
) -> Result<f64, EvalError> {
    let a = DistArgs::new(kind, args, propto, len, lo, consts, isa);
    let ptr = scratch.as_mut_ptr();
    let mut total = 0.0;
    let mut scalar_tot = [0.0f64; 4];
    for c in 0..a.n_chunks() {
        // SAFETY: the builder sized `scratch` for every argument run; one thread.
        let (s, sp) = unsafe { a.chunk(c * CHUNK, ((c + 1) * CHUNK).min(len), sc, ptr)? };
        total += s;
        for k in 0..a.nargs {
            scalar_tot[k] += sp[k];
        }
    }
    for k in 0..a.nargs {
        if sc[k] != NO_SCRATCH && a.slices[k].len() == 1 {
            scratch[sc[k] as usize] = scalar_tot[k];
        }
    }
    Ok(total)
}

/// Gradient rule of a density op: `adj[arg] += g · partials`, or `adj[arg] = 0.0 + g ·
/// partials` (the bits of adding to a cleared slot) for the arguments whose bit `stores` sets
/// ([`crate::ir::graph::AdjointPlan::stores`]).
#[inline(always)]
pub fn backward(
    args: &[Arg],
    _len: usize,
    sc: &[u32],
    stores: u32,
    g: f64,
    scratch: &[f64],
    adj_lo: &mut [f64],
) {
    for (k, a) in args.iter().enumerate() {
        if sc[k] == NO_SCRATCH {
            continue;
        }
        let s = &scratch[sc[k] as usize..sc[k] as usize + a.len()];
        let d = adj_lo[a.range()].iter_mut().zip(s);
        if stores >> k & 1 != 0 {
            d.for_each(|(d, p)| *d = 0.0 + g * p);
        } else {
            d.for_each(|(d, p)| *d += g * p);
        }
    }
}

/// Log density of constant arguments (for data-only calls folded at build time).
pub(crate) fn eval_const(kind: DistKind, args: &[&[f64]], propto: bool) -> Result<f64, String> {
    let len = args.iter().map(|a| a.len()).max().unwrap_or(1);
    let inc = Inc {
        all: !propto,
        varying: 0,
    };
    let mut terms = Vec::with_capacity(len);
    for i in 0..len {
        let mut x = [0.0; 4];
        for (k, a) in args.iter().enumerate() {
            x[k] = if a.len() == 1 { a[0] } else { a[i] };
        }
        terms.push(kind.elem(&x, &inc).map_err(|e| e.message)?.0);
    }
    // The executors' sum shape (`forward`), so a density folded at trace time has the bits the
    // same density gets in a graph (an output row re-traced equals the compiled one).
    Ok(super::kernels::chunked_sum(Isa::Baseline, &terms))
}
