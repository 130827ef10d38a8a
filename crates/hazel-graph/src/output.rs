//! Output rows compiled once per data set (issue 14, item 4).
//!
//! The row of a draw is the constrained parameters, the transformed parameters and the
//! generated quantities. Re-tracing the program for every kept draw (the tracing interpreter
//! with every value a constant) costs allocations and interpretation; instead [`OutputPlan`]
//! traces the parameters and transformed parameters once into a forward-only graph over the
//! unconstrained point, and each row is one forward sweep of that graph into the workspace's
//! buffers plus a copy of the output slots:
//!
//! - **Static**: the generated quantities trace statically too (no `_rng` call, no `print`, no
//!   control flow reading parameter values): the whole row comes from the graph and writing it
//!   allocates nothing.
//! - **Split**: the generated quantities need values (`_rng` draws, `print`, a branch on a
//!   parameter): the parameters and transformed parameters come from the graph, then the
//!   generated quantities block alone is traced with those values bound as constants, drawing
//!   from the chain's stream exactly as before (transformed parameters draw nothing).
//! - No plan (the model's own output path, `CompiledModel::trace_output`): the transformed
//!   parameters need values (control flow reading parameters, `print`) or their static trace
//!   failed.
//!
//! Rows must be bit-identical to the re-traced ones: the graph's kernels are the functions the
//! tracer folds constants with, and [`OutputPlan::build`] checks the plan against the re-traced
//! row at two points when it is built (a plan that disagrees in any bit is dropped).

use crate::builder::GraphBuilder;
use crate::exec::{Buffers, Executor, SerialCpu};
use crate::ir::{Arg, Graph};
use crate::lower::trace::{TraceErr, Tracer};
use crate::lower::value::{Elems, Sc, Val};
use hazel_check::CheckedProgram;
use hazel_density::{EvalError, StreamRng};
use hazel_syntax::SourceMap;
use std::sync::Arc;

type Env = Vec<(Arc<str>, Val)>;

/// The compiled output path of a model.
pub(crate) struct OutputPlan {
    /// Forward-only graph over the unconstrained point (slots `0..dim`).
    pub graph: Graph,
    /// A constant of the graph, the scalar the executor's forward sweep returns.
    unit: Arg,
    /// Where each column the graph provides comes from: a constant or a slot of the graph.
    cols: Vec<Sc>,
    /// The generated quantities when they are re-traced: the parameters' and transformed
    /// parameters' values (slots of the graph) to bind before tracing the block.
    split: Option<Env>,
}

/// What building the plan needs from the model.
pub(crate) struct PlanInput<'a> {
    pub checked: &'a CheckedProgram,
    pub sources: Option<Arc<SourceMap>>,
    pub env: &'a Env,
    pub dim: usize,
    /// Output variables in order: (name, number of columns).
    pub outputs: &'a [(String, usize)],
    /// Number of output variables declared in the parameters and transformed parameters blocks.
    pub n_upper_vars: usize,
    pub check_bounds: fn(&mut Tracer, &Option<hazel_syntax::ast::Block>) -> Result<(), TraceErr>,
}

impl OutputPlan {
    /// Traces the output blocks statically; `None` when the transformed parameters need the
    /// dynamic path.
    pub fn build(input: &PlanInput) -> Option<OutputPlan> {
        let plan = Self::trace(input, true).or_else(|| Self::trace(input, false))?;
        Some(plan)
    }

    /// One static trace: with the generated quantities (`with_gq`) or without (split plan).
    fn trace(input: &PlanInput, with_gq: bool) -> Option<OutputPlan> {
        let program = &input.checked.program;
        let zeros = vec![0.0; input.dim];
        let mut tr = Tracer::new(GraphBuilder::new(&zeros), input.checked, input.env.clone());
        tr.sources = input.sources.clone();
        tr.jacobian = false;
        let q = if input.dim == 0 {
            Elems::C(Arc::new(vec![]))
        } else {
            Elems::V(tr.b.params())
        };
        let run = |tr: &mut Tracer| -> Result<(), TraceErr> {
            tr.read_params(&program.parameters, Some(&q))?;
            if let Some(tp) = &program.transformed_parameters {
                tr.block_stmts(&tp.stmts)?;
                (input.check_bounds)(tr, &program.transformed_parameters)?;
            }
            if with_gq {
                if let Some(gq) = &program.generated_quantities {
                    tr.block_stmts(&gq.stmts)?;
                    (input.check_bounds)(tr, &program.generated_quantities)?;
                }
            }
            Ok(())
        };
        // Any failure (a value read, an `_rng` call without a stream, an error) leaves the
        // block to the path that traces with values, which reports it as before.
        run(&mut tr).ok()?;
        // An eager error at the origin (a unit vector's zero free vector) says nothing
        // about other points: the op is recorded and fails at run time where it must.
        let n_vars = if with_gq {
            input.outputs.len()
        } else {
            input.n_upper_vars
        };
        let mut cols = Vec::new();
        let mut split = Env::new();
        for (name, n) in &input.outputs[..n_vars] {
            let v = tr.lookup(name)?.clone();
            let before = cols.len();
            v.flatten_output(&mut cols);
            if cols.len() - before != *n {
                return None;
            }
            if !with_gq {
                split.push((Arc::from(name.as_str()), v));
            }
        }
        let unit = tr.b.scalar_const(0.0);
        let graph = tr.b.finish();
        Some(OutputPlan {
            graph,
            unit,
            cols,
            split: (!with_gq).then_some(split),
        })
    }

    /// Whether the generated quantities are re-traced per row.
    pub fn is_split(&self) -> bool {
        self.split.is_some()
    }

    /// Runs the graph at `q` and writes the columns it provides into `out`; returns how many.
    pub fn write_static(
        &self,
        buf: &mut Buffers,
        q: &[f64],
        out: &mut [f64],
    ) -> Result<usize, EvalError> {
        // The reference executor: its workspace is the value buffer the columns are read from.
        // The scalar it returns (a constant the plan holds for the purpose) is not needed.
        SerialCpu.forward(&self.graph, self.unit, q, buf)?;
        let n = self.cols.len();
        if out.len() < n {
            return Err(EvalError::reject(format!(
                "output row has {} values, expected at least {n}",
                out.len()
            )));
        }
        for (o, c) in out[..n].iter_mut().zip(&self.cols) {
            *o = match *c {
                Sc::C(v) => v,
                Sc::V(s) => buf.vals[s as usize],
            };
        }
        Ok(n)
    }

    /// The split plan's bindings with the values of the last [`write_static`] run.
    pub fn split_env(&self, buf: &Buffers) -> Option<Env> {
        let vars = self.split.as_ref()?;
        Some(
            vars.iter()
                .map(|(n, v)| (n.clone(), constant(v, &buf.vals)))
                .collect(),
        )
    }
}

/// `v` with every graph slot replaced by its value in `vals`.
fn constant(v: &Val, vals: &[f64]) -> Val {
    let sc = |s: Sc| match s {
        Sc::C(c) => c,
        Sc::V(o) => vals[o as usize],
    };
    let elems = |e: &Elems| match e {
        Elems::C(_) => e.clone(),
        Elems::V(a) => Elems::C(Arc::new(
            vals[a.off as usize..(a.off + a.len) as usize].to_vec(),
        )),
        Elems::M(xs) => Elems::C(Arc::new(xs.iter().map(|&s| sc(s)).collect())),
    };
    match v {
        Val::Int(i) => Val::Int(*i),
        Val::Real(s) => Val::Real(Sc::C(sc(*s))),
        Val::Vector(e) => Val::Vector(elems(e)),
        Val::RowVector(e) => Val::RowVector(elems(e)),
        Val::Matrix(r, c, e) => Val::Matrix(*r, *c, elems(e)),
        Val::Array(xs) => Val::array(xs.iter().map(|x| constant(x, vals)).collect()),
        Val::Tuple(xs) => Val::Tuple(Arc::new(xs.iter().map(|x| constant(x, vals)).collect())),
        Val::Complex(parts) => Val::complex(constant(&parts.0, vals), constant(&parts.1, vals)),
    }
}

/// Identical rows: same bits, or both NaN.
pub(crate) fn same_row(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

/// Unused-rng placeholder for tracing without a stream.
pub(crate) fn placeholder_rng() -> StreamRng {
    StreamRng::new(0, 0, hazel_rng::Purpose::Init)
}
