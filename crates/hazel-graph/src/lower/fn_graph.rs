//! A user function traced into a small sub-graph over a flat parameter slot, evaluated with
//! its value and Jacobian rows by reverse sweeps: the facility behind the ODE right-hand
//! sides, `integrate_1d` integrands, the algebraic solvers' systems and the DAE residuals.
//!
//! The function is called as `f(lead..., args...)`. The *leading* arguments are what the
//! solver varies (an ODE's `t` and `y`, a root finder's `x`); each is a real, a vector or an
//! array of reals whose scalars occupy consecutive positions of the slot. The remaining
//! arguments are the caller's values ([`Val`]s, e.g. Stan's variadic arguments): their
//! parameter-dependent scalars `p` ([`split_params`]) follow the leading scalars in the slot,
//! and their constant scalars are baked in. So the slot is `q = [lead scalars, p]`.
//!
//! A leading argument is *active* when the caller wants Jacobian columns for it (an ODE's
//! `y`), *passive* otherwise (an ODE's `t`). [`TracedFn::eval`] returns `f` and, on request,
//! `∂f/∂(active leads)` and `∂f/∂p`, row-major: one reverse sweep per output scalar, or, for
//! a fused trace the lanes take ([`FnGraph::lanes`]), one sweep with a lane per output.
//!
//! When the body's control flow does not read values, the first evaluation traces it once
//! into a [`FnGraph`] (owned, immutable, `Sync`) that every later evaluation replays;
//! otherwise every evaluation re-traces the body with values computed eagerly (passive
//! leading arguments as constants), as the dynamic model path does.

use super::trace::{eerr, TraceErr, Tracer};
use super::value::{Elems, Sc, Val};
use crate::builder::GraphBuilder;
use crate::exec::cpu::jacobian::{lane_width, LaneJacobian, MAX_LANES};
use crate::tape::{Arg, Buffers, Graph};
use hazel_density::EvalError;
use hazel_syntax::Span;
use std::sync::Arc;

/// The shape of a leading argument or of the function's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Real,
    Vector(usize),
    /// `array[n] real`.
    RealArray(usize),
}

impl Shape {
    /// Number of scalars.
    pub fn len(&self) -> usize {
        match self {
            Shape::Real => 1,
            Shape::Vector(n) | Shape::RealArray(n) => *n,
        }
    }
}

/// A leading argument: its shape, and whether Jacobian columns are wanted for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeadArg {
    pub shape: Shape,
    pub active: bool,
}

/// The parameter-dependent scalars of argument values, in `Val::flatten` order.
#[derive(Debug, Clone, Default)]
pub struct ParamSplit {
    /// Per flattened scalar: `Some(k)` for the `k`-th parameter-dependent scalar, `None` for a
    /// constant.
    pub param_of: Vec<Option<usize>>,
    /// Per flattened scalar: its value when constant (0 otherwise).
    pub consts: Vec<f64>,
    /// The parameter-dependent scalars (graph references of the calling trace).
    pub scalars: Vec<Sc>,
}

/// Splits `args` into constant and parameter-dependent scalars.
pub fn split_params(args: &[Val]) -> ParamSplit {
    let mut s = ParamSplit::default();
    for a in args {
        let mut flat = Vec::new();
        a.flatten(&mut flat);
        for sc in flat {
            match sc {
                Sc::C(c) => {
                    s.param_of.push(None);
                    s.consts.push(c);
                }
                Sc::V(_) => {
                    s.param_of.push(Some(s.scalars.len()));
                    s.consts.push(0.0);
                    s.scalars.push(sc);
                }
            }
        }
    }
    s
}

/// Rebuilds `v` with its scalars (in `Val::flatten` order) taken from `it`.
pub(crate) fn rebuild(v: &Val, it: &mut impl Iterator<Item = Sc>) -> Val {
    let mut take = |n: usize| -> Vec<Sc> {
        (0..n)
            .map(|_| it.next().unwrap_or(Sc::C(f64::NAN)))
            .collect()
    };
    match v {
        Val::Int(i) => {
            take(1);
            Val::Int(*i)
        }
        Val::Real(_) => Val::Real(take(1)[0]),
        Val::Vector(e) => Val::Vector(Elems::from_scalars_or_empty(take(e.len()))),
        Val::RowVector(e) => Val::RowVector(Elems::from_scalars_or_empty(take(e.len()))),
        Val::Matrix(r, c, e) => Val::Matrix(*r, *c, Elems::from_scalars_or_empty(take(e.len()))),
        Val::Array(xs) => Val::array(xs.iter().map(|x| rebuild(x, it)).collect()),
        Val::Tuple(xs) => Val::Tuple(Arc::new(xs.iter().map(|x| rebuild(x, it)).collect())),
        Val::Complex(parts) => {
            let re = rebuild(&parts.0, it);
            Val::complex(re, rebuild(&parts.1, it))
        }
    }
}

/// Whether value slot `o` of `graph` is computed from the parameter slots marked in
/// `readable` alone (constants aside).
pub fn depends_only_on(graph: &Graph, o: u32, readable: &[bool]) -> bool {
    let dim = graph.dim;
    let mut stack = vec![o as usize];
    let mut seen = std::collections::HashSet::new();
    while let Some(s) = stack.pop() {
        if s < dim {
            if !readable.get(s).copied().unwrap_or(false) {
                return false;
            }
            continue;
        }
        // The op whose output holds `s` (outputs are allocated in op order).
        let mut i = graph.ops.partition_point(|op| (op.out().off as usize) <= s);
        let op = loop {
            if i == 0 {
                return false;
            }
            i -= 1;
            if graph.ops[i].out().range().contains(&s) {
                break &graph.ops[i];
            }
            if (graph.ops[i].out().off as usize) + (graph.ops[i].out().len as usize) <= s
                && graph.ops[i].out().len > 0
            {
                return false;
            }
        };
        if !seen.insert(i) {
            continue;
        }
        for a in op.inputs() {
            if a.is_var() {
                stack.extend(a.range());
            }
        }
    }
    true
}

/// A static trace of the function: a graph over the slot `[lead scalars, p]` and its outputs.
/// Immutable once made; evaluate it with per-caller [`Buffers`].
#[derive(Debug, Clone)]
pub struct FnGraph {
    pub graph: Graph,
    /// The result's scalars: graph values or constants.
    pub out: Vec<Sc>,
    /// Slot positions of the active leading scalars (their Jacobian columns, in order).
    pub active_slots: Vec<usize>,
    /// Slot position of the first parameter-dependent scalar.
    pub p_offset: usize,
    /// Number of parameter-dependent scalars.
    pub n_params: usize,
    /// Values control flow read while tracing (a guarded trace, see
    /// [`TracedFn::set_guarded`]): (value slot, value). The trace is valid where each slot
    /// still holds its value.
    pub guards: Vec<Guard>,
    /// Set when the graph's Jacobian rows can be taken in one sweep with a lane per output
    /// (`exec::cpu::jacobian`); else one reverse sweep per output.
    pub lanes: Option<LaneJacobian>,
}

/// What a guarded trace assumed about the values control flow read.
#[derive(Debug, Clone, Copy)]
pub enum Guard {
    /// Value slot `.0` held `.1` (bit for bit).
    Value(u32, f64),
    /// `cmp(a, b)` was `outcome` (a comparison in a condition: `if (t > 0)`).
    Compare {
        cmp: fn(f64, f64) -> bool,
        a: Sc,
        b: Sc,
        outcome: bool,
    },
}

impl Guard {
    fn holds(&self, vals: &[f64]) -> bool {
        let at = |s: Sc| match s {
            Sc::C(c) => c,
            Sc::V(o) => vals[o as usize],
        };
        match *self {
            Guard::Value(o, v) => vals[o as usize].to_bits() == v.to_bits(),
            Guard::Compare { cmp, a, b, outcome } => cmp(at(a), at(b)) == outcome,
        }
    }
}

impl<'p> Tracer<'p> {
    /// A comparison of scalars in a guarded trace whose varying operands are computed from
    /// readable slots alone: its outcome, recorded as a [`Guard::Compare`]. `None` when this
    /// is not such a trace or such a comparison (the caller reads the values as usual).
    pub fn guarded_compare(&self, cmp: fn(f64, f64) -> bool, a: &Val, b: &Val) -> Option<bool> {
        if self.dynamic || self.readable.is_empty() {
            return None;
        }
        let sc = |v: &Val| match v {
            Val::Int(i) => Some(Sc::C(*i as f64)),
            Val::Real(s) => Some(*s),
            _ => None,
        };
        let (a, b) = (sc(a)?, sc(b)?);
        let mut varying = false;
        for s in [a, b] {
            if let Sc::V(o) = s {
                if !depends_only_on(&self.b.graph, o, &self.readable) {
                    return None;
                }
                varying = true;
            }
        }
        if !varying {
            return None;
        }
        let at = |s: Sc| match s {
            Sc::C(c) => c,
            Sc::V(o) => self.b.buf.vals[o as usize],
        };
        let outcome = cmp(at(a), at(b));
        self.guards
            .borrow_mut()
            .push(Guard::Compare { cmp, a, b, outcome });
        Some(outcome)
    }
}

/// A function of its leading arguments at fixed parameters, with its Jacobians: the ODE
/// solvers' right-hand side and the DAE solvers' residual, a [`FnGraph`] replayed
/// ([`Replay`]) or a [`TracedFn`].
pub(crate) trait LeadFn {
    /// The value at `lead` into `out`; with `jac`, the Jacobian rows `(∂f/∂active, ∂f/∂p)`,
    /// row-major.
    fn eval(
        &mut self,
        lead: &[f64],
        out: &mut [f64],
        jac: Option<(&mut [f64], &mut [f64])>,
    ) -> Result<(), String>;
}

impl<F: LeadFn + ?Sized> LeadFn for &mut F {
    fn eval(
        &mut self,
        lead: &[f64],
        out: &mut [f64],
        jac: Option<(&mut [f64], &mut [f64])>,
    ) -> Result<(), String> {
        (**self).eval(lead, out, jac)
    }
}

impl LeadFn for TracedFn<'_, '_> {
    fn eval(
        &mut self,
        lead: &[f64],
        out: &mut [f64],
        jac: Option<(&mut [f64], &mut [f64])>,
    ) -> Result<(), String> {
        TracedFn::eval(self, lead, out, jac)
    }
}

/// A static trace replayed at fixed parameters: its buffers, whose value buffer holds the
/// slot `[lead, p]` in place.
pub(crate) struct Replay<'g> {
    f: &'g FnGraph,
    buf: Buffers,
}

impl<'g> Replay<'g> {
    pub(crate) fn new(f: &'g FnGraph, p: &[f64]) -> Self {
        let mut buf = Buffers::for_graph(&f.graph);
        // No op writes below `dim`: `p` stays where it is for every call.
        buf.vals[f.p_offset..f.p_offset + p.len()].copy_from_slice(p);
        Replay { f, buf }
    }
}

impl LeadFn for Replay<'_> {
    fn eval(
        &mut self,
        lead: &[f64],
        out: &mut [f64],
        jac: Option<(&mut [f64], &mut [f64])>,
    ) -> Result<(), String> {
        // `FnGraph::forward` at `[lead, p]`, with `p` already in place and the buffers
        // already fitted: thousands of calls per solve, each a few dozen values of work.
        self.buf.vals[..lead.len()].copy_from_slice(lead);
        self.f
            .graph
            .forward_from(0, &mut self.buf)
            .map_err(|e| e.message)?;
        self.f.read(&mut self.buf, out, jac);
        Ok(())
    }
}

impl FnGraph {
    /// Runs the graph at `q` (`buf` is fitted to the graph first).
    pub fn forward(&self, q: &[f64], buf: &mut Buffers) -> Result<(), EvalError> {
        buf.fit(&self.graph);
        self.graph.forward(q, buf)
    }

    /// Whether the guards hold after [`FnGraph::forward`].
    pub fn guards_hold(&self, buf: &Buffers) -> bool {
        self.guards.iter().all(|g| g.holds(&buf.vals))
    }

    /// Reads the result after [`FnGraph::forward`] into `out` and, when `jac` is given, the
    /// Jacobian rows `(∂f/∂active, ∂f/∂p)`, row-major: by one reverse sweep with a lane per
    /// output when [`FnGraph::lanes`] is set, else one reverse sweep per output (the same
    /// bits either way).
    pub fn read(&self, buf: &mut Buffers, out: &mut [f64], jac: Option<(&mut [f64], &mut [f64])>) {
        match (self.lanes, jac) {
            (Some(lanes), Some((ja, jp))) => {
                read_values(buf, &self.out, out);
                self.read_lanes(lanes, buf, ja, jp);
            }
            (_, jac) => read_outputs(
                &self.graph,
                buf,
                &self.out,
                &self.active_slots,
                self.p_offset,
                self.n_params,
                out,
                jac,
            ),
        }
    }

    /// The Jacobian rows by [`LaneJacobian::backward`], up to [`MAX_LANES`] rows per sweep
    /// (in `buf.adj`, grown to the lanes).
    fn read_lanes(&self, lanes: LaneJacobian, buf: &mut Buffers, ja: &mut [f64], jp: &mut [f64]) {
        let (na, m) = (self.active_slots.len(), self.n_params);
        for (group, outs) in self.out.chunks(MAX_LANES).enumerate() {
            // Each output's slot seeds its lane; a constant output seeds none.
            let mut seeds = [None; MAX_LANES];
            for (seed, o) in seeds.iter_mut().zip(outs) {
                *seed = match o {
                    Sc::V(o) => Some(*o),
                    Sc::C(_) => None,
                };
            }
            let seeds = &seeds[..outs.len()];
            let width = lane_width(seeds.len());
            let len = self.graph.n_vals * width;
            if buf.adj.len() < len {
                buf.adj.resize(len, 0.0);
            }
            lanes.backward(&self.graph, &buf.vals, &mut buf.adj, seeds);
            for (l, seed) in seeds.iter().enumerate() {
                let i = group * MAX_LANES + l;
                let (ja, jp) = (&mut ja[i * na..(i + 1) * na], &mut jp[i * m..(i + 1) * m]);
                if seed.is_none() {
                    // A constant output: a zero row (its lane saw only zero adjoints, but
                    // `0 × ∞` would not be zero).
                    ja.iter_mut().chain(jp.iter_mut()).for_each(|x| *x = 0.0);
                    continue;
                }
                for (dst, &slot) in ja.iter_mut().zip(&self.active_slots) {
                    *dst = buf.adj[slot * width + l];
                }
                for (k, dst) in jp.iter_mut().enumerate() {
                    *dst = buf.adj[(self.p_offset + k) * width + l];
                }
            }
        }
    }
}

/// The result's values after a forward sweep.
fn read_values(buf: &Buffers, out: &[Sc], values: &mut [f64]) {
    for (d, s) in values.iter_mut().zip(out) {
        *d = match s {
            Sc::C(c) => *c,
            Sc::V(o) => buf.vals[*o as usize],
        };
    }
}

/// Reads `f` off a traced function and, when `jac` is given, its Jacobian rows.
#[allow(clippy::too_many_arguments)]
fn read_outputs(
    graph: &Graph,
    buf: &mut Buffers,
    out: &[Sc],
    active_slots: &[usize],
    p_offset: usize,
    m: usize,
    values: &mut [f64],
    jac: Option<(&mut [f64], &mut [f64])>,
) {
    read_values(buf, out, values);
    let Some((ja, jp)) = jac else {
        return;
    };
    if buf.adj.len() < graph.n_vals {
        buf.adj.resize(graph.n_vals, 0.0);
    }
    let na = active_slots.len();
    for (i, s) in out.iter().enumerate() {
        match s {
            Sc::C(_) => {
                ja[i * na..(i + 1) * na].iter_mut().for_each(|x| *x = 0.0);
                jp[i * m..(i + 1) * m].iter_mut().for_each(|x| *x = 0.0);
            }
            Sc::V(o) => {
                graph.backward(Arg::var(*o as usize, 1), buf);
                for (dst, &slot) in ja[i * na..(i + 1) * na].iter_mut().zip(active_slots) {
                    *dst = buf.adj[slot];
                }
                jp[i * m..(i + 1) * m].copy_from_slice(&buf.adj[p_offset..p_offset + m]);
            }
        }
    }
}

/// A user function `f(lead..., args...)` ready to be evaluated at many leading values (see
/// the module docs).
pub struct TracedFn<'a, 'p> {
    prog: &'p hazel_check::CheckedProgram,
    /// An index into the checked program's user functions.
    function: usize,
    span: Span,
    /// What the function is, for messages ("the ODE right-hand side").
    role: &'static str,
    lead: Vec<LeadArg>,
    result: Shape,
    args: &'a [Val],
    split: ParamSplit,
    p: Vec<f64>,
    q: Vec<f64>,
    active_slots: Vec<usize>,
    n_lead: usize,
    /// The static trace, once made, and its buffers.
    replay: Option<(FnGraph, Buffers)>,
    /// The body's control flow reads values: re-trace every call.
    retrace: bool,
    /// Guarded traces ([`TracedFn::set_guarded`]) made so far, with their buffers.
    variants: Option<Vec<(FnGraph, Buffers)>>,
}

impl<'a, 'p> TracedFn<'a, 'p> {
    /// `f` (`function`, an index into `prog`'s user functions) called with the leading
    /// arguments `lead` and then `args`; `p` are the current values of `args`'s
    /// parameter-dependent scalars ([`split_params`]); `result` the shape `f` must return.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        prog: &'p hazel_check::CheckedProgram,
        function: usize,
        span: Span,
        role: &'static str,
        lead: Vec<LeadArg>,
        result: Shape,
        args: &'a [Val],
        p: Vec<f64>,
    ) -> Self {
        let split = split_params(args);
        let mut active_slots = Vec::new();
        let mut pos = 0;
        for l in &lead {
            let len = l.shape.len();
            if l.active {
                active_slots.extend(pos..pos + len);
            }
            pos += len;
        }
        TracedFn {
            prog,
            function,
            span,
            role,
            lead,
            result,
            args,
            split,
            p,
            q: Vec::new(),
            active_slots,
            n_lead: pos,
            replay: None,
            retrace: false,
            variants: None,
        }
    }

    /// From now on evaluations use *guarded* static traces: the passive leading scalars are
    /// slot values whose values control flow may read (an ODE right-hand side branching on
    /// `t`); each trace records the values read and is replayed wherever they are the same,
    /// and a new trace is made where none applies. Control flow reading any other value fails
    /// the evaluation.
    pub fn set_guarded(&mut self) {
        self.variants = Some(Vec::new());
        self.replay = None;
        self.retrace = false;
    }

    /// A guarded trace at `lead` (see [`TracedFn::set_guarded`]): `Ok(None)` when control
    /// flow reads a value other than the passive leading scalars'.
    pub fn trace_guarded(&mut self, lead: &[f64]) -> Result<Option<FnGraph>, TraceErr> {
        self.fill_q(lead);
        match self.trace_with(true, true) {
            Ok((b, out, guards)) => Ok(Some(self.fn_graph(b.graph, out, guards))),
            Err(TraceErr::Dynamic(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn fn_graph(&self, mut graph: Graph, out: Vec<Sc>, guards: Vec<Guard>) -> FnGraph {
        // Solvers run the function many times per evaluation: its scalar arithmetic as
        // blocks (same values and bits; every slot the outputs and guards read is still
        // written).
        graph.fuse_scalar_blocks();
        FnGraph {
            // One row gains nothing from lanes.
            lanes: LaneJacobian::of(&graph).filter(|_| out.len() > 1),
            graph,
            out,
            active_slots: self.active_slots.clone(),
            p_offset: self.n_lead,
            n_params: self.p.len(),
            guards,
        }
    }

    /// The static trace, when one was made (after a first [`TracedFn::eval`]); `None` when
    /// the body's control flow reads values.
    pub fn static_graph(&self) -> Option<&FnGraph> {
        self.replay.as_ref().map(|(g, _)| g)
    }

    fn fill_q(&mut self, lead: &[f64]) {
        self.q.clear();
        self.q.extend_from_slice(lead);
        self.q.extend_from_slice(&self.p);
    }

    /// Traces the call over the slot `q`; `static_trace`: every leading scalar is a slot value
    /// and control flow may not read values, else passive leading scalars are constants.
    fn trace(&self, static_trace: bool) -> Result<(GraphBuilder, Vec<Sc>), TraceErr> {
        self.trace_with(static_trace, false)
            .map(|(b, out, _)| (b, out))
    }

    /// [`TracedFn::trace`]; `guarded`: control flow may read the passive leading scalars
    /// (and what is computed from them alone), the reads returned as guards.
    #[allow(clippy::type_complexity)]
    fn trace_with(
        &self,
        static_trace: bool,
        guarded: bool,
    ) -> Result<(GraphBuilder, Vec<Sc>, Vec<Guard>), TraceErr> {
        let mut sub = Tracer::new(GraphBuilder::new(&self.q), self.prog, Vec::new());
        sub.dynamic = !static_trace;
        if guarded {
            let mut readable = vec![false; self.q.len()];
            let mut pos = 0;
            for l in &self.lead {
                if !l.active {
                    readable[pos..pos + l.shape.len()]
                        .iter_mut()
                        .for_each(|r| *r = true);
                }
                pos += l.shape.len();
            }
            sub.readable = readable;
        }
        let mut call_args = Vec::with_capacity(self.lead.len() + self.args.len());
        let mut pos = 0usize;
        for l in &self.lead {
            let var = static_trace || l.active;
            let sc = |i: usize| {
                if var {
                    Sc::V(i as u32)
                } else {
                    Sc::C(self.q[i])
                }
            };
            call_args.push(match l.shape {
                Shape::Real => Val::Real(sc(pos)),
                Shape::Vector(n) => {
                    if var {
                        Val::Vector(Elems::V(Arg::var(pos, n)))
                    } else {
                        Val::Vector(Elems::from_scalars_or_empty(
                            (pos..pos + n).map(sc).collect(),
                        ))
                    }
                }
                Shape::RealArray(n) => {
                    Val::array((pos..pos + n).map(|i| Val::Real(sc(i))).collect())
                }
            });
            pos += l.shape.len();
        }
        let n_lead = self.n_lead;
        let mut scalars =
            self.split
                .param_of
                .iter()
                .zip(&self.split.consts)
                .map(|(k, c)| match k {
                    Some(k) => Sc::V((n_lead + k) as u32),
                    None => Sc::C(*c),
                });
        for a in self.args {
            call_args.push(rebuild(a, &mut scalars));
        }
        let out = sub.call_user(self.function, call_args, self.span)?;
        sub.flush_tilde();
        let n = self.result.len();
        let out = match (out, self.result) {
            (Some(Val::Real(s)), Shape::Real) => vec![s],
            (Some(Val::Vector(e)), Shape::Vector(_)) if e.len() == n => e.to_scalars(),
            (Some(Val::Array(xs)), Shape::RealArray(_))
                if xs.len() == n && xs.iter().all(|x| matches!(x, Val::Real(_) | Val::Int(_))) =>
            {
                let mut flat = Vec::with_capacity(n);
                xs.iter().for_each(|x| x.flatten(&mut flat));
                flat
            }
            (other, _) => {
                let what = other.map_or("nothing".to_string(), |v| {
                    format!("a {} of shape {:?}", v.type_name(), v.dims())
                });
                let expected = match self.result {
                    Shape::Real => "a real".to_string(),
                    Shape::Vector(n) => format!("a vector of {n}"),
                    Shape::RealArray(n) => format!("an array of {n}"),
                };
                return eerr(
                    format!(
                        "{} {} returned {what}; expected {expected}",
                        self.role, self.prog.functions[self.function].name
                    ),
                    self.span,
                );
            }
        };
        let guards = sub.guards.take();
        Ok((sub.b, out, guards))
    }

    fn eval_guarded(
        &mut self,
        variants: &mut Vec<(FnGraph, Buffers)>,
        out: &mut [f64],
        jac: Option<(&mut [f64], &mut [f64])>,
    ) -> Result<(), String> {
        // At most one variant's guards hold at a point (each records the values that chose
        // its path through the body), so the order they are tried in changes no result. The
        // one that held last is tried first and moved to the front when another holds: a
        // solver's consecutive calls mostly take the same branch (a dosing switch `if (t > 0)`
        // is false only at `t0`), and each miss costs a forward sweep.
        for k in 0..variants.len() {
            let (g, buf) = &mut variants[k];
            g.forward(&self.q, buf).map_err(|e| e.message)?;
            if g.guards_hold(buf) {
                g.read(buf, out, jac);
                variants[..=k].rotate_right(1);
                return Ok(());
            }
        }
        let (b, res, guards) = self.trace_with(true, true).map_err(|e| match e {
            TraceErr::Dynamic(_) => format!(
                "control flow in {} {} reads a value that depends on the parameters or the \
                 solver's state here, which a static model cannot follow",
                self.role, self.prog.functions[self.function].name
            ),
            e => String::from(e),
        })?;
        if let Some(e) = b.eager_error {
            return Err(e.message);
        }
        let g = self.fn_graph(b.graph, res, guards);
        let mut buf = b.buf;
        g.read(&mut buf, out, jac);
        variants.insert(0, (g, buf));
        Ok(())
    }

    /// Makes the static trace (the slot's values `[lead, p]` drive only its eager run, whose
    /// errors are dropped: they come back when the graph is evaluated) unless it exists or
    /// the body's control flow reads values (`Ok(None)`, and later evaluations re-trace).
    /// Errors in the body that no value causes (a wrong result shape, say) are returned.
    pub fn trace_static(&mut self, lead: &[f64]) -> Result<Option<&FnGraph>, TraceErr> {
        if self.replay.is_none() && !self.retrace {
            self.fill_q(lead);
            match self.trace(true) {
                Ok((b, out)) => {
                    let g = self.fn_graph(b.graph, out, Vec::new());
                    self.replay = Some((g, b.buf));
                }
                Err(TraceErr::Dynamic(_)) => self.retrace = true,
                Err(e) => return Err(e),
            }
        }
        Ok(self.static_graph())
    }

    /// `f(lead, args)` into `out` (`n_out`), and when `jac` is given the Jacobian rows
    /// `∂f/∂(active leads)` (`n_out × n_active`) and `∂f/∂p` (`n_out × n_params`), row-major.
    pub fn eval(
        &mut self,
        lead: &[f64],
        out: &mut [f64],
        jac: Option<(&mut [f64], &mut [f64])>,
    ) -> Result<(), String> {
        self.fill_q(lead);
        if let Some(mut variants) = self.variants.take() {
            let r = self.eval_guarded(&mut variants, out, jac);
            self.variants = Some(variants);
            return r;
        }
        if self.replay.is_none() && !self.retrace {
            match self.trace(true) {
                Ok((b, out)) => {
                    if let Some(e) = b.eager_error {
                        return Err(e.message);
                    }
                    let g = self.fn_graph(b.graph, out, Vec::new());
                    self.replay = Some((g, b.buf));
                }
                Err(TraceErr::Dynamic(_)) => self.retrace = true,
                Err(e) => return Err(String::from(e)),
            }
        } else if let Some((g, buf)) = &mut self.replay {
            g.forward(&self.q, buf).map_err(|e| e.message)?;
        }
        if let Some((g, buf)) = &mut self.replay {
            g.read(buf, out, jac);
            return Ok(());
        }
        let (mut b, res) = self.trace(false).map_err(String::from)?;
        if let Some(e) = b.eager_error.take() {
            return Err(e.message);
        }
        read_outputs(
            &b.graph,
            &mut b.buf,
            &res,
            &self.active_slots,
            self.n_lead,
            self.p.len(),
            out,
            jac,
        );
        Ok(())
    }
}
