//! The tracing interpreter: walks the syntax tree with concrete data. Data-only expressions
//! are evaluated to constants on the spot; parameter-dependent ones emit ops into the graph
//! builder. Loops with data bounds are unrolled by the trace. When control flow needs the
//! value of a parameter-dependent expression, a static trace stops with
//! [`TraceErr::Dynamic`]; a dynamic trace (re-run at every evaluation) reads the value the
//! builder computed eagerly.

use super::value::{Elems, Sc, Val};
use crate::builder::GraphBuilder;
use crate::dists::DistKind;
use crate::kernels::{BinaryFn, UnaryFn};
use crate::tape::{Arg, Op};
use hazel_check::CheckedProgram;
use hazel_density::{EvalError, StreamRng};
use hazel_syntax::Span;
use std::collections::HashMap;
use std::sync::Arc;

/// Why a trace stopped.
#[derive(Debug, Clone)]
pub enum TraceErr {
    /// The program cannot be lowered (unsupported feature, type error found at trace time).
    Compile(String, Span),
    /// Evaluation failed (reject, index out of range, bad argument): the point is rejected
    /// (or, at build time, the data are invalid).
    Eval(EvalError, Span),
    /// Control flow depends on a parameter: the model needs the dynamic path.
    Dynamic(Span),
}

pub type R<T> = Result<T, TraceErr>;

pub fn cerr<T>(msg: impl Into<String>, span: Span) -> R<T> {
    Err(TraceErr::Compile(msg.into(), span))
}

pub fn eerr<T>(msg: impl Into<String>, span: Span) -> R<T> {
    Err(TraceErr::Eval(EvalError::reject(msg.into()), span))
}

/// How a statement finished.
pub enum Flow {
    Normal,
    Break,
    Continue,
    Return(Option<Val>),
}

/// One evaluated index.
#[derive(Debug, Clone)]
pub enum Ix {
    One(i64),
    Multi(Vec<i64>),
    All,
    Lower(i64),
    Upper(i64),
    Range(i64, i64),
}

impl Ix {
    /// The selected 0-based positions of a dimension of length `n`, or `None` for a single
    /// index.
    fn positions(&self, n: usize, span: Span) -> R<Vec<usize>> {
        let check = |i: i64| -> R<usize> {
            if i < 1 || i as usize > n {
                eerr(
                    format!("index {i} out of range; expecting index to be between 1 and {n}"),
                    span,
                )
            } else {
                Ok(i as usize - 1)
            }
        };
        Ok(match self {
            Ix::One(i) => vec![check(*i)?],
            Ix::Multi(v) => v.iter().map(|&i| check(i)).collect::<R<_>>()?,
            Ix::All => (0..n).collect(),
            Ix::Lower(lo) => (*lo..=n as i64).map(check).collect::<R<_>>()?,
            Ix::Upper(hi) => (1..=*hi).map(check).collect::<R<_>>()?,
            Ix::Range(lo, hi) => (*lo..=*hi).map(check).collect::<R<_>>()?,
        })
    }
    fn is_single(&self) -> bool {
        matches!(self, Ix::One(_))
    }
}

/// The tracer's state.
pub struct Tracer<'p> {
    pub b: GraphBuilder,
    /// Whether control flow may read node values (dynamic path).
    pub dynamic: bool,
    env: Vec<(Arc<str>, Val)>,
    /// Variables below this index are invisible (inside a user function).
    frame_base: usize,
    /// The checked program: calls dispatch on the checker's resolved target (the built-in
    /// signature or the exact user-function overload), never on a name looked up again.
    pub prog: &'p CheckedProgram,
    /// Scalar terms of `target`.
    pub target: Vec<Arg>,
    /// Sum of constant target terms.
    pub target_const: f64,
    /// Whether `~` and `_lupdf` drop constant summands (Stan's default for sampling).
    pub propto: bool,
    /// Whether constraining transforms add their log-Jacobian to the target.
    pub jacobian: bool,
    pub rng: Option<StreamRng>,
    /// Constant containers already in the pool, keyed by their storage (the `Rc` is held so
    /// the address cannot be reused).
    const_cache: HashMap<usize, (Arc<Vec<f64>>, Arg)>,
    /// Inside a user function called as `_lupdf`/`_lupmf` (or the model block).
    pub in_lupdf: bool,
    /// How many user-function bodies are being traced (inside one, Stan's C++ instantiates
    /// the function for its actual argument types, so a value's constness is its type).
    pub function_depth: u32,
    /// Scalar `~` statements waiting to be emitted as one vector density op per
    /// (distribution, propto, which arguments vary): the loop idiom `y[n] ~ normal(mu[n], s)`
    /// becomes a pack and one density op instead of N ops. The log density is the same sum
    /// (up to the order of additions); partials are the same.
    pending: Vec<PendingDist>,
    /// Normalisers `log P(L ≤ y ≤ U)` of scalar truncated `~` statements, one per distinct
    /// (cdf, bounds, parameters). In the loop idiom `y[n] ~ normal(mu, sigma) T[1, 2]` every
    /// statement has the same normaliser, so it is emitted once and scaled by the number of
    /// statements: the same value up to the rounding of the sum, and the same partials.
    pending_norm: Vec<PendingNorm>,
    /// `pending_norm` entries by the bits of their bounds and parameters.
    norm_index: HashMap<Vec<u64>, Vec<usize>>,
    /// The program's sources: statements name their location on the ops they emit, so that an
    /// evaluation error names the model line.
    pub sources: Option<Arc<hazel_syntax::SourceMap>>,
    /// Rendered locations by span (a statement in a loop is rendered once).
    locations: HashMap<Span, Arc<str>>,
    /// Parameter-slot positions whose values control flow may read on the static path (with
    /// every value computed from them alone), each read recorded in `guards` (slot, value):
    /// `lower::fn_graph`'s guarded traces. Empty: none.
    pub readable: Vec<bool>,
    pub guards: std::cell::RefCell<Vec<super::fn_graph::Guard>>,
}

/// The truncation normaliser shared by `count` scalar `~ … T[L, U]` statements.
struct PendingNorm {
    /// The `lcdf`, or the `lccdf` when there is only a lower bound.
    cdf: DistKind,
    /// The lower bound (already `L − 1` for integer variates) and the upper bound.
    lower: Option<Sc>,
    upper: Option<Sc>,
    /// The distribution's parameters after the variate.
    params: Vec<Sc>,
    count: u64,
}

/// Scalar density terms batched into one op.
struct PendingDist {
    kind: DistKind,
    propto: bool,
    varying: u8,
    /// One column of scalars per argument.
    cols: Vec<Vec<Sc>>,
}

impl<'p> Tracer<'p> {
    pub fn new(b: GraphBuilder, prog: &'p CheckedProgram, env: Vec<(Arc<str>, Val)>) -> Self {
        Tracer {
            b,
            dynamic: false,
            env,
            frame_base: 0,
            prog,
            target: Vec::new(),
            target_const: 0.0,
            propto: true,
            jacobian: true,
            rng: None,
            const_cache: HashMap::new(),
            in_lupdf: true,
            pending: Vec::new(),
            pending_norm: Vec::new(),
            norm_index: HashMap::new(),
            sources: None,
            locations: HashMap::new(),
            readable: Vec::new(),
            guards: Default::default(),
            function_depth: 0,
        }
    }

    /// The user-facing location of `span` (`None` without sources).
    pub fn location(&mut self, span: Span) -> Option<Arc<str>> {
        let sources = self.sources.as_ref()?;
        Some(
            self.locations
                .entry(span)
                .or_insert_with(|| Arc::from(sources.describe_range(span)))
                .clone(),
        )
    }

    /// Undoes every op and constant emitted since `m` (used when an attempt at vectorising a
    /// loop is abandoned, so no dead ops are left behind).
    pub fn rollback(&mut self, m: &crate::builder::BuilderMark) {
        self.b.rollback(m);
        let n_consts = self.b.graph.consts.len() as u32;
        self.const_cache
            .retain(|_, (_, a)| a.off + a.len <= n_consts);
    }

    pub fn take_env(&mut self) -> Vec<(Arc<str>, Val)> {
        std::mem::take(&mut self.env)
    }

    // ----- environment -----

    pub fn bind(&mut self, name: &str, v: Val) {
        self.env.push((Arc::from(name), v));
    }

    pub fn env_len(&self) -> usize {
        self.env.len()
    }
    pub fn truncate_env(&mut self, n: usize) {
        self.env.truncate(n);
    }
    pub fn env_val(&self, i: usize) -> &Val {
        &self.env[i].1
    }
    pub fn env_val_mut(&mut self, i: usize) -> &mut Val {
        &mut self.env[i].1
    }
    /// Hides the caller's variables (a user function sees only its arguments); returns the
    /// previous frame base.
    pub fn enter_frame(&mut self) -> usize {
        std::mem::replace(&mut self.frame_base, self.env.len())
    }
    pub fn leave_frame(&mut self, base: usize) {
        self.env.truncate(self.frame_base);
        self.frame_base = base;
    }

    pub fn lookup_index(&self, name: &str) -> Option<usize> {
        (self.frame_base..self.env.len())
            .rev()
            .find(|&i| &*self.env[i].0 == name)
    }

    pub fn lookup(&self, name: &str) -> Option<&Val> {
        self.lookup_index(name).map(|i| &self.env[i].1)
    }

    // ----- scalars and element runs as graph arguments -----

    pub fn sc_arg(&mut self, s: Sc) -> Arg {
        match s {
            Sc::V(o) => Arg::var(o as usize, 1),
            Sc::C(c) => self.b.scalar_const(c),
        }
    }

    pub fn elems_arg(&mut self, e: &Elems) -> Arg {
        match e {
            Elems::V(a) => *a,
            Elems::C(v) => {
                let key = Arc::as_ptr(v) as usize;
                if let Some((_, a)) = self.const_cache.get(&key) {
                    return *a;
                }
                let a = self.b.konst(v);
                self.const_cache.insert(key, (v.clone(), a));
                a
            }
            Elems::M(v) => {
                let args: Vec<Arg> = v
                    .iter()
                    .map(|s| match s {
                        Sc::V(o) => Arg::var(*o as usize, 1),
                        Sc::C(c) => self.b.scalar_const(*c),
                    })
                    .collect();
                self.b.pack(args)
            }
        }
    }

    /// Numeric value of a scalar, for control flow.
    pub fn value_of(&self, s: Sc, span: Span) -> R<f64> {
        match s {
            Sc::C(c) => Ok(c),
            Sc::V(o) => {
                if self.dynamic {
                    Ok(self.b.buf.vals[o as usize])
                } else if !self.readable.is_empty()
                    && super::fn_graph::depends_only_on(&self.b.graph, o, &self.readable)
                {
                    let v = self.b.buf.vals[o as usize];
                    self.guards
                        .borrow_mut()
                        .push(super::fn_graph::Guard::Value(o, v));
                    Ok(v)
                } else {
                    Err(TraceErr::Dynamic(span))
                }
            }
        }
    }

    pub fn real_value(&self, v: &Val, span: Span) -> R<f64> {
        match v {
            Val::Int(i) => Ok(*i as f64),
            Val::Real(s) => self.value_of(*s, span),
            _ => cerr(format!("expected a scalar, found {}", v.type_name()), span),
        }
    }

    pub fn as_int(&self, v: &Val, span: Span) -> R<i64> {
        match v {
            Val::Int(i) => Ok(*i),
            _ => cerr(format!("expected an int, found {}", v.type_name()), span),
        }
    }

    // ----- elementwise arithmetic (constant-folded when nothing varies) -----

    pub fn sc_unary(&mut self, f: UnaryFn, s: Sc) -> Sc {
        match s {
            Sc::C(c) => Sc::C(f.value(c)),
            Sc::V(o) => {
                if let Some(x) = self.log_of_exp(f, o) {
                    return x;
                }
                Sc::V(self.b.unary(f, Arg::var(o as usize, 1)).off)
            }
        }
    }

    /// `log(exp(x))` is `x`: when `f` is `log` and slot `o` is an element of an `exp` op's
    /// output, that element of the `exp`'s input. `log(softmax(v)[k])` in a categorical
    /// density becomes `v[k] − log_sum_exp(v)` this way, without the `exp` (the unread `exp`
    /// is removed after tracing, `Graph::eliminate_dead_ops`), and exactly where `exp`
    /// overflows or underflows.
    fn log_of_exp(&self, f: UnaryFn, o: u32) -> Option<Sc> {
        if !matches!(f, UnaryFn::Log) {
            return None;
        }
        let Some(&Op::Unary {
            f: UnaryFn::Exp,
            x,
            out,
        }) = self.b.producer(o)
        else {
            return None;
        };
        let i = (o - out.off) as usize;
        let xi = if x.len() == 1 { x } else { x.at(i) };
        Some(if xi.is_var() {
            Sc::V(xi.off)
        } else {
            Sc::C(self.b.value(xi)[0])
        })
    }

    pub fn sc_binary(&mut self, f: BinaryFn, a: Sc, b: Sc) -> Sc {
        match (a, b) {
            (Sc::C(x), Sc::C(y)) => Sc::C(f.value(x, y)),
            _ => {
                let aa = self.sc_arg(a);
                let ba = self.sc_arg(b);
                Sc::V(self.b.binary(f, aa, ba).off)
            }
        }
    }

    pub fn elems_unary(&mut self, f: UnaryFn, e: &Elems) -> Elems {
        if let Some(c) = e.consts() {
            return Elems::C(Arc::new(c.iter().map(|x| f.value(*x)).collect()));
        }
        if e.len() == 1 {
            return Elems::from_scalars(vec![self.sc_unary(f, e.get(0))]);
        }
        let a = self.elems_arg(e);
        Elems::V(self.b.unary(f, a))
    }

    /// The running sums of `e` (`cumulative_sum`), left to right.
    pub fn elems_cumsum(&mut self, e: &Elems) -> Elems {
        if let Some(c) = e.consts() {
            let mut acc = 0.0;
            return Elems::C(Arc::new(
                c.iter()
                    .map(|v| {
                        acc += v;
                        acc
                    })
                    .collect(),
            ));
        }
        let a = self.elems_arg(e);
        Elems::V(self.b.cumsum(a))
    }

    /// Elementwise binary with broadcasting of length-1 operands.
    pub fn elems_binary(&mut self, f: BinaryFn, a: &Elems, b: &Elems) -> Elems {
        let n = if a.len() == 1 { b.len() } else { a.len() };
        if let (Some(x), Some(y)) = (a.consts(), b.consts()) {
            let v = (0..n)
                .map(|i| {
                    f.value(
                        x[if x.len() == 1 { 0 } else { i }],
                        y[if y.len() == 1 { 0 } else { i }],
                    )
                })
                .collect();
            return Elems::C(Arc::new(v));
        }
        if n == 1 {
            return Elems::from_scalars(vec![self.sc_binary(f, a.get(0), b.get(0))]);
        }
        let aa = if a.len() == 1 {
            self.sc_arg(a.get(0))
        } else {
            self.elems_arg(a)
        };
        let ba = if b.len() == 1 {
            self.sc_arg(b.get(0))
        } else {
            self.elems_arg(b)
        };
        Elems::V(self.b.binary(f, aa, ba))
    }

    /// Applies `f` to every real in `v`, keeping its structure.
    pub fn map_unary(&mut self, f: UnaryFn, v: &Val, span: Span) -> R<Val> {
        Ok(match v {
            Val::Int(i) => Val::Real(self.sc_unary(f, Sc::C(*i as f64))),
            Val::Real(s) => Val::Real(self.sc_unary(f, *s)),
            Val::Vector(e) => Val::Vector(self.elems_unary(f, e)),
            Val::RowVector(e) => Val::RowVector(self.elems_unary(f, e)),
            Val::Matrix(r, c, e) => Val::Matrix(*r, *c, self.elems_unary(f, e)),
            Val::Array(xs) => {
                // Arrays of reals are mapped as one vector op.
                if xs.iter().all(|x| matches!(x, Val::Real(_) | Val::Int(_))) && xs.len() > 1 {
                    let mut sc = Vec::new();
                    v.flatten(&mut sc);
                    let e = self.elems_unary(f, &Elems::from_scalars(sc));
                    Val::array((0..e.len()).map(|i| Val::Real(e.get(i))).collect())
                } else {
                    Val::array(
                        xs.iter()
                            .map(|x| self.map_unary(f, x, span))
                            .collect::<R<_>>()?,
                    )
                }
            }
            Val::Tuple(_) => return cerr("function not defined for tuples", span),
            Val::Complex(_) => return cerr("a real function applied to a complex value", span),
        })
    }

    /// Elements of a scalar or vector-like value (arrays of reals flattened).
    pub fn to_elems(&self, v: &Val) -> Elems {
        match v {
            Val::Int(i) => Elems::C(Arc::new(vec![*i as f64])),
            Val::Real(s) => Elems::from_scalars(vec![*s]),
            Val::Vector(e) | Val::RowVector(e) | Val::Matrix(_, _, e) => e.clone(),
            Val::Array(_) | Val::Tuple(_) | Val::Complex(_) => {
                let mut sc = Vec::new();
                v.flatten(&mut sc);
                if sc.is_empty() {
                    return Elems::C(Arc::new(vec![]));
                }
                Elems::from_scalars(sc)
            }
        }
    }

    /// Rebuilds a value with the structure of `like` from elements.
    pub fn with_shape(like: &Val, e: Elems) -> Val {
        match like {
            Val::Int(_) | Val::Real(_) => Val::Real(e.get(0)),
            Val::Vector(_) => Val::Vector(e),
            Val::RowVector(_) => Val::RowVector(e),
            Val::Matrix(r, c, _) => Val::Matrix(*r, *c, e),
            Val::Array(_) | Val::Tuple(_) | Val::Complex(_) => {
                let mut pos = 0;
                rebuild(like, &e, &mut pos)
            }
        }
    }

    /// Elementwise binary on values of the same shape, or a scalar against any shape.
    pub fn map_binary(&mut self, f: BinaryFn, a: &Val, b: &Val, span: Span) -> R<Val> {
        let a_scalar = matches!(a, Val::Int(_) | Val::Real(_));
        let b_scalar = matches!(b, Val::Int(_) | Val::Real(_));
        if a_scalar && b_scalar {
            let x = self.to_elems(a).get(0);
            let y = self.to_elems(b).get(0);
            return Ok(Val::Real(self.sc_binary(f, x, y)));
        }
        // An int array beside a matrix (`bessel_first_kind(array[,] int, matrix)`): pair
        // elements by index, not by storage order (arrays are row-major, matrices column-major).
        let (a, b) = (&conform_to_matrices(b, a), &conform_to_matrices(a, b));
        let like = if a_scalar { b } else { a };
        let ea = self.to_elems(a);
        let eb = self.to_elems(b);
        if ea.len() != 1 && eb.len() != 1 && ea.len() != eb.len() {
            return eerr(
                format!(
                    "size mismatch in elementwise operation: {} vs {}",
                    ea.len(),
                    eb.len()
                ),
                span,
            );
        }
        if !a_scalar && !b_scalar && a.dims() != b.dims() {
            return eerr(
                format!("dimension mismatch: {:?} vs {:?}", a.dims(), b.dims()),
                span,
            );
        }
        let e = self.elems_binary(f, &ea, &eb);
        Ok(Self::with_shape(like, e))
    }

    // ----- target -----

    pub fn add_target_sc(&mut self, s: Sc) {
        match s {
            Sc::C(c) => self.target_const += c,
            Sc::V(o) => self.target.push(Arg::var(o as usize, 1)),
        }
    }

    pub fn add_target(&mut self, v: &Val) {
        let e = self.to_elems(v);
        if let Some(c) = e.consts() {
            self.target_const += crate::kernels::chunked_sum(crate::simd::Isa::Baseline, &c);
        } else if e.len() == 1 {
            self.add_target_sc(e.get(0));
        } else {
            let a = self.elems_arg(&e);
            let s = self.b.sum(a);
            self.target.push(s);
        }
    }

    /// Queues a scalar `~` term for batching; returns false when the term cannot be batched
    /// (a container argument, or nothing varies).
    pub fn queue_tilde(&mut self, kind: DistKind, args: &[Val], propto: bool) -> bool {
        if args.len() != kind.nargs() {
            return false;
        }
        let mut sc = Vec::with_capacity(args.len());
        let mut varying = 0u8;
        for (k, a) in args.iter().enumerate() {
            let s = match a {
                Val::Int(i) => Sc::C(*i as f64),
                Val::Real(s) => *s,
                _ => return false,
            };
            if !s.is_const() {
                varying |= 1 << k;
            }
            sc.push(s);
        }
        if varying == 0 {
            return false;
        }
        let batch = match self
            .pending
            .iter_mut()
            .position(|p| p.kind == kind && p.propto == propto && p.varying == varying)
        {
            Some(i) => &mut self.pending[i],
            None => {
                self.pending.push(PendingDist {
                    kind,
                    propto,
                    varying,
                    cols: vec![Vec::new(); args.len()],
                });
                self.pending.last_mut().expect("just pushed")
            }
        };
        for (col, s) in batch.cols.iter_mut().zip(sc) {
            col.push(s);
        }
        true
    }

    /// Queues the truncation normaliser of one scalar `~ … T[L, U]` statement; returns false
    /// (nothing queued) when the normaliser is a constant, which the caller folds and checks
    /// at once, or the cdf takes a different number of arguments.
    pub fn queue_truncation(
        &mut self,
        cdf: DistKind,
        lower: Option<Sc>,
        upper: Option<Sc>,
        params: &[Sc],
    ) -> bool {
        if params.len() + 1 != cdf.nargs()
            || (lower.is_none() && upper.is_none())
            || lower
                .into_iter()
                .chain(upper)
                .chain(params.iter().copied())
                .all(Sc::is_const)
        {
            return false;
        }
        let bits = |s: Option<Sc>| match s {
            None => [0, 0],
            Some(Sc::C(c)) => [1, c.to_bits()],
            Some(Sc::V(o)) => [2, o as u64],
        };
        let mut key: Vec<u64> = Vec::with_capacity(4 + 2 * params.len());
        key.extend(bits(lower));
        key.extend(bits(upper));
        for s in params {
            key.extend(bits(Some(*s)));
        }
        let entries = self.norm_index.entry(key).or_default();
        let pending = &mut self.pending_norm;
        if let Some(&i) = entries.iter().find(|&&i| pending[i].cdf == cdf) {
            pending[i].count += 1;
        } else {
            entries.push(pending.len());
            pending.push(PendingNorm {
                cdf,
                lower,
                upper,
                params: params.to_vec(),
                count: 1,
            });
        }
        true
    }

    /// Emits the queued truncation normalisers: `−count · log P(L ≤ y ≤ U)` each.
    fn flush_truncation(&mut self) {
        self.norm_index.clear();
        for p in std::mem::take(&mut self.pending_norm) {
            let cdf_at = |me: &mut Self, bound: Sc| {
                let mut argv = Vec::with_capacity(1 + p.params.len());
                argv.push(me.sc_arg(bound));
                for s in &p.params {
                    argv.push(me.sc_arg(*s));
                }
                Sc::V(me.b.dist(p.cdf, argv, false).off)
            };
            let log_p = match (p.lower, p.upper) {
                (Some(l), Some(u)) => {
                    let cu = cdf_at(self, u);
                    let cl = cdf_at(self, l);
                    self.sc_binary(BinaryFn::LogDiffExp, cu, cl)
                }
                (Some(b), None) | (None, Some(b)) => cdf_at(self, b),
                (None, None) => continue,
            };
            let total = if p.count > 1 {
                self.sc_binary(BinaryFn::Mul, log_p, Sc::C(p.count as f64))
            } else {
                log_p
            };
            let neg = self.sc_unary(UnaryFn::Neg, total);
            self.add_target_sc(neg);
        }
    }

    /// Emits the queued `~` terms and truncation normalisers (before `target()` is read and
    /// at the end of the model).
    pub fn flush_tilde(&mut self) {
        self.flush_truncation();
        for p in std::mem::take(&mut self.pending) {
            let mut args = Vec::with_capacity(p.cols.len());
            for (k, col) in p.cols.iter().enumerate() {
                // The variate keeps one entry per term, which sets the op's length; other
                // arguments shared by every term are broadcast.
                let a = if (k > 0 || col.len() == 1) && col.iter().all(|s| *s == col[0]) {
                    self.sc_arg(col[0])
                } else {
                    let e = Elems::from_scalars(col.clone());
                    self.elems_arg(&e)
                };
                args.push(a);
            }
            let out = self.b.dist(p.kind, args, p.propto);
            self.target.push(out);
        }
    }

    /// Sum of a univariate density over vectorised arguments; constant-folded when nothing
    /// varies (and dropped entirely under `propto`).
    pub fn dist_sum(&mut self, kind: DistKind, args: &[Val], propto: bool, span: Span) -> R<Sc> {
        if args.len() != kind.nargs() {
            return cerr(
                format!(
                    "{} takes {} arguments, found {}",
                    kind.name(),
                    kind.nargs(),
                    args.len()
                ),
                span,
            );
        }
        let elems: Vec<Elems> = args.iter().map(|a| self.to_elems(a)).collect();
        let mut n = 1;
        for (k, (e, a)) in elems.iter().zip(args).enumerate() {
            let scalar = matches!(a, Val::Int(_) | Val::Real(_));
            if !scalar {
                if n != 1 && e.len() != n {
                    return eerr(
                        format!(
                            "{}: size mismatch of argument {} ({} vs {n})",
                            kind.name(),
                            k + 1,
                            e.len()
                        ),
                        span,
                    );
                }
                n = e.len();
            }
        }
        if elems.iter().all(|e| e.is_const()) {
            if propto {
                return Ok(Sc::C(0.0));
            }
            let cs: Vec<Vec<f64>> = elems
                .iter()
                .map(|e| e.consts().unwrap_or_default())
                .collect();
            let refs: Vec<&[f64]> = cs.iter().map(|c| c.as_slice()).collect();
            return match crate::dists::eval_const(kind, &refs, false) {
                Ok(v) => Ok(Sc::C(v)),
                Err(m) => Err(TraceErr::Eval(EvalError::domain(m), span)),
            };
        }
        if elems.iter().any(|e| e.is_empty()) {
            return Ok(Sc::C(0.0));
        }
        let data_summand = if propto {
            None
        } else {
            self.integer_summand(kind, &elems, n)
        };
        let mut argv = Vec::with_capacity(elems.len());
        for e in &elems {
            let a = if e.len() == 1 {
                self.sc_arg(e.get(0))
            } else {
                self.elems_arg(e)
            };
            argv.push(a);
        }
        let Some(c) = data_summand else {
            let out = self.b.dist(kind, argv, propto);
            return Ok(Sc::V(out.off));
        };
        // The integer summand is data: the op evaluates the rest, which `propto` keeps (every
        // other summand reads an argument that varies).
        let out = self.b.dist(kind, argv, true);
        Ok(self.sc_binary(BinaryFn::Add, Sc::V(out.off), Sc::C(c)))
    }

    /// The sum over the `n` elements of `kind`'s summand of integer arguments alone (binomial's
    /// `log C(N, n)`), where the family has one, the arguments it reads are data and every
    /// element's counts are valid, and the others all vary; `None` otherwise. Computed once
    /// here, it is not recomputed at every evaluation (Stan Math recomputes it).
    fn integer_summand(&self, kind: DistKind, elems: &[Elems], n: usize) -> Option<f64> {
        let (reads, summand) = kind.integer_summand()?;
        let mut columns: [Vec<f64>; 4] = Default::default();
        for (k, e) in elems.iter().enumerate() {
            match (reads & (1 << k) != 0, e.consts()) {
                (true, Some(c)) => columns[k] = c,
                (true, None) => return None,
                // A constant among the other arguments: its summands are dropped by `propto`.
                (false, Some(_)) => return None,
                (false, None) => {}
            }
        }
        let mut total = 0.0;
        for i in 0..n {
            let mut x = [0.0; 4];
            for (xk, c) in x.iter_mut().zip(&columns) {
                if !c.is_empty() {
                    *xk = c[if c.len() == 1 { 0 } else { i }];
                }
            }
            total += summand(&x)?;
        }
        Some(total)
    }
}

/// `v` with every two-dimensional array of scalars that sits where `like` has a matrix of
/// the same size turned into that matrix (column-major); anything else unchanged.
fn conform_to_matrices(like: &Val, v: &Val) -> Val {
    match (like, v) {
        (Val::Matrix(r, c, _), Val::Array(rows)) if rows.len() == *r => {
            let mut sc = Vec::with_capacity(r * c);
            for j in 0..*c {
                for row in rows.iter() {
                    let Val::Array(row) = row else {
                        return v.clone();
                    };
                    match row.get(j) {
                        Some(Val::Int(i)) if row.len() == *c => sc.push(Sc::C(*i as f64)),
                        Some(Val::Real(x)) if row.len() == *c => sc.push(*x),
                        _ => return v.clone(),
                    }
                }
            }
            Val::Matrix(*r, *c, Elems::from_scalars(sc))
        }
        (Val::Array(ls), Val::Array(vs)) if ls.len() == vs.len() => Val::array(
            ls.iter()
                .zip(vs.iter())
                .map(|(l, x)| conform_to_matrices(l, x))
                .collect(),
        ),
        _ => v.clone(),
    }
}

fn rebuild(like: &Val, e: &Elems, pos: &mut usize) -> Val {
    match like {
        Val::Int(_) | Val::Real(_) => {
            let v = Val::Real(e.get(*pos));
            *pos += 1;
            v
        }
        Val::Vector(x) => {
            let v = Val::Vector(e.slice(*pos, *pos + x.len()));
            *pos += x.len();
            v
        }
        Val::RowVector(x) => {
            let v = Val::RowVector(e.slice(*pos, *pos + x.len()));
            *pos += x.len();
            v
        }
        Val::Matrix(r, c, x) => {
            let v = Val::Matrix(*r, *c, e.slice(*pos, *pos + x.len()));
            *pos += x.len();
            v
        }
        Val::Array(xs) => Val::array(xs.iter().map(|x| rebuild(x, e, pos)).collect()),
        Val::Tuple(xs) => Val::Tuple(Arc::new(xs.iter().map(|x| rebuild(x, e, pos)).collect())),
        Val::Complex(parts) => {
            let re = rebuild(&parts.0, e, pos);
            Val::complex(re, rebuild(&parts.1, e, pos))
        }
    }
}

// ----- indexing -----

impl<'p> Tracer<'p> {
    /// `v[ixs]` (all indices of one bracket, and further brackets flattened in).
    pub fn index(&mut self, v: &Val, ixs: &[Ix], span: Span) -> R<Val> {
        if ixs.is_empty() {
            return Ok(v.clone());
        }
        match v {
            Val::Complex(parts) => {
                let re = self.index(&parts.0, ixs, span)?;
                Ok(Val::complex(re, self.index(&parts.1, ixs, span)?))
            }
            Val::Array(xs) => {
                let pos = ixs[0].positions(xs.len(), span)?;
                if ixs[0].is_single() {
                    self.index(&xs[pos[0]], &ixs[1..], span)
                } else {
                    let items = pos
                        .iter()
                        .map(|&p| self.index(&xs[p], &ixs[1..], span))
                        .collect::<R<Vec<_>>>()?;
                    Ok(Val::array(items))
                }
            }
            Val::Vector(e) | Val::RowVector(e) => {
                if ixs.len() > 1 {
                    return cerr("too many indexes for a vector", span);
                }
                let pos = ixs[0].positions(e.len(), span)?;
                if ixs[0].is_single() {
                    return Ok(Val::Real(e.get(pos[0])));
                }
                let sel = self.select(e, &pos);
                Ok(if matches!(v, Val::Vector(_)) {
                    Val::Vector(sel)
                } else {
                    Val::RowVector(sel)
                })
            }
            Val::Matrix(r, c, e) => {
                let rows = ixs[0].positions(*r, span)?;
                let (cols, col_single) = if ixs.len() > 1 {
                    (ixs[1].positions(*c, span)?, ixs[1].is_single())
                } else {
                    ((0..*c).collect(), false)
                };
                if ixs.len() > 2 {
                    return cerr("too many indexes for a matrix", span);
                }
                let row_single = ixs[0].is_single();
                let mut sel = Vec::with_capacity(rows.len() * cols.len());
                for &j in &cols {
                    for &i in &rows {
                        sel.push(i + j * r);
                    }
                }
                let out = self.select(e, &sel);
                Ok(match (row_single, col_single) {
                    (true, true) => Val::Real(out.get(0)),
                    (true, false) => Val::RowVector(out),
                    (false, true) => Val::Vector(out),
                    (false, false) => Val::Matrix(rows.len(), cols.len(), out),
                })
            }
            _ => cerr(
                format!("cannot index a value of type {}", v.type_name()),
                span,
            ),
        }
    }

    /// Selected elements; a contiguous selection of a run stays a run, a long scattered
    /// selection of a run becomes one gather op.
    pub fn select(&mut self, e: &Elems, pos: &[usize]) -> Elems {
        if pos.is_empty() {
            return Elems::C(Arc::new(vec![]));
        }
        let contiguous = pos.windows(2).all(|w| w[1] == w[0] + 1);
        if contiguous {
            return e.slice(pos[0], pos[pos.len() - 1] + 1);
        }
        if let Elems::V(a) = e {
            if pos.len() > 4 {
                let idx = pos.iter().map(|&p| p as u32).collect();
                return Elems::V(self.b.gather(*a, idx));
            }
        }
        e.select(pos)
    }

    /// Assigns `rhs` at `ixs` inside `target`.
    pub fn assign_index(&mut self, target: &mut Val, ixs: &[Ix], rhs: Val, span: Span) -> R<()> {
        if ixs.is_empty() {
            *target = coerce_like(target, rhs);
            return Ok(());
        }
        // Into a complex container: the real and imaginary parts separately.
        if let Val::Complex(parts) = target {
            let (re, im) = complex_parts(rhs);
            let parts = Arc::make_mut(parts);
            self.assign_index(&mut parts.0, ixs, re, span)?;
            return self.assign_index(&mut parts.1, ixs, im, span);
        }
        match target {
            Val::Array(xs) => {
                let pos = ixs[0].positions(xs.len(), span)?;
                let xs = Arc::make_mut(xs);
                if ixs[0].is_single() {
                    return self.assign_index(&mut xs[pos[0]], &ixs[1..], rhs, span);
                }
                let items: Vec<Val> = match &rhs {
                    Val::Array(r) if r.len() == pos.len() => r.to_vec(),
                    _ => return eerr("size mismatch in multi-index assignment", span),
                };
                for (p, item) in pos.iter().zip(items) {
                    self.assign_index(&mut xs[*p], &ixs[1..], item, span)?;
                }
                Ok(())
            }
            Val::Vector(e) | Val::RowVector(e) => {
                let pos = ixs[0].positions(e.len(), span)?;
                let re = self.to_elems(&rhs);
                if re.len() != pos.len() {
                    return eerr(
                        format!("size mismatch in assignment: {} vs {}", pos.len(), re.len()),
                        span,
                    );
                }
                for (k, &p) in pos.iter().enumerate() {
                    e.set(p, re.get(k));
                }
                Ok(())
            }
            Val::Matrix(r, c, e) => {
                let rows = ixs[0].positions(*r, span)?;
                let cols = if ixs.len() > 1 {
                    ixs[1].positions(*c, span)?
                } else {
                    (0..*c).collect()
                };
                let re = self.to_elems(&rhs);
                if re.len() != rows.len() * cols.len() {
                    return eerr("size mismatch in matrix assignment", span);
                }
                // rhs elements: a row vector for a row, a column for a column, a matrix
                // (column-major) for a block.
                let mut k = 0;
                for &j in &cols {
                    for &i in &rows {
                        e.set(i + j * *r, re.get(k));
                        k += 1;
                    }
                }
                Ok(())
            }
            _ => cerr("cannot assign into this value by index", span),
        }
    }
}

/// An int assigned to a real variable becomes a real.
pub fn coerce_like(old: &Val, new: Val) -> Val {
    match (old, &new) {
        (Val::Complex(_), Val::Complex(_)) => new,
        (Val::Complex(_), _) => to_complex(new),
        (Val::Real(_), Val::Int(i)) => Val::real(*i as f64),
        (Val::Array(o), Val::Array(n)) if o.len() == n.len() && !o.is_empty() => {
            if o.iter().zip(n.iter()).any(|(a, b)| {
                matches!(
                    (a, b),
                    (Val::Real(_), Val::Int(_)) | (Val::Array(_), Val::Array(_))
                )
            }) {
                Val::array(
                    o.iter()
                        .zip(n.iter())
                        .map(|(a, b)| coerce_like(a, b.clone()))
                        .collect(),
                )
            } else {
                new
            }
        }
        _ => new,
    }
}

/// A real (or int) value as a complex one with a zero imaginary part; a complex value as is.
pub fn to_complex(v: Val) -> Val {
    match v {
        Val::Complex(_) => v,
        Val::Array(xs) => Val::array(xs.iter().map(|x| to_complex(x.clone())).collect()),
        other => {
            let re = match other {
                Val::Int(i) => Val::real(i as f64),
                re => re,
            };
            let im = zeros_like(&re);
            Val::complex(re, im)
        }
    }
}

/// The real and imaginary parts of a value (a real value has a zero imaginary part).
pub fn complex_parts(v: Val) -> (Val, Val) {
    match to_complex(v) {
        Val::Complex(parts) => Arc::unwrap_or_clone(parts),
        other => (other.clone(), zeros_like(&other)),
    }
}

/// Zeros of the shape of a real scalar, vector, row vector or matrix.
pub fn zeros_like(v: &Val) -> Val {
    let zeros = |n: usize| Elems::C(Arc::new(vec![0.0; n]));
    match v {
        Val::Vector(e) => Val::Vector(zeros(e.len())),
        Val::RowVector(e) => Val::RowVector(zeros(e.len())),
        Val::Matrix(r, c, _) => Val::Matrix(*r, *c, zeros(r * c)),
        Val::Array(xs) => Val::array(xs.iter().map(zeros_like).collect()),
        _ => Val::real(0.0),
    }
}

impl Tracer<'_> {
    /// The arguments of a density whose constants may be dropped (`~`, `_lupdf`), with Stan's
    /// rule for which of them vary: outside function bodies an argument is an autodiff value
    /// whenever its expression is not data-only by the checker's types (a transformed
    /// parameter or model-block local, a ternary or user call with a parameter argument), even
    /// when its value happens not to depend on the parameters. Such a constant is copied
    /// into the graph so that the density keeps the summands Stan keeps.
    pub fn stan_varying(&mut self, vals: Vec<Val>, exprs: &[&hazel_syntax::ast::Expr]) -> Vec<Val> {
        if self.function_depth > 0 || self.rng.is_some() {
            return vals;
        }
        vals.into_iter()
            .zip(exprs)
            .map(|(v, e)| {
                if v.is_const() && !self.prog.is_data_only(e.id) {
                    self.as_node(v)
                } else {
                    v
                }
            })
            .collect()
    }

    /// A constant real value (or container) as graph values.
    fn as_node(&mut self, v: Val) -> Val {
        // `Pack` copies one scalar per argument.
        let node = |tr: &mut Self, e: &Elems| -> Elems {
            let c = tr.elems_arg(e);
            let scalars = (0..c.len())
                .map(|i| Arg {
                    off: c.off + i as u32,
                    len: 1,
                    ..c
                })
                .collect();
            Elems::V(tr.b.pack(scalars))
        };
        match v {
            Val::Real(Sc::C(c)) => {
                let k = self.b.scalar_const(c);
                Val::Real(Sc::V(self.b.pack(vec![k]).off))
            }
            Val::Vector(e) if !e.is_empty() => Val::Vector(node(self, &e)),
            Val::RowVector(e) if !e.is_empty() => Val::RowVector(node(self, &e)),
            Val::Matrix(r, c, e) if !e.is_empty() => Val::Matrix(r, c, node(self, &e)),
            Val::Array(xs) => Val::array(xs.iter().map(|x| self.as_node(x.clone())).collect()),
            other => other,
        }
    }
}
