//! The compiled model: program + data lowered to a static graph (or, when control flow depends
//! on parameters, a program re-traced at every evaluation), implementing
//! `hazel_density::Model`.

use crate::builder::GraphBuilder;
use crate::exec::sharded::{ShardPlan, ShardedCpu, ShardedWorkspace};
use crate::exec::{BatchWorkspace, Buffers, CpuWorkspace, Executor, ExecutorKind, SerialCpu};
use crate::ir::{Arg, CheckKind, Graph};
use crate::lower::params::{declarations, Declared};
use crate::lower::trace::{TraceErr, Tracer};
use crate::lower::value::{Elems, Sc, Val};
use hazel_check::CheckedProgram;
use hazel_comm::Comm;
use hazel_data::{BaseType, Bound, Constraint, DataDecl, DataFile, DataType, Values};
use hazel_density::{DensityTerms, EvalError, LogDensity, Model, StreamRng};
use hazel_rng::Purpose;
use hazel_syntax::ast::{self, *};
use hazel_syntax::{SourceMap, Span};
use std::fmt;
use std::sync::Arc;

mod constrained;
pub use constrained::OutputColumns;

/// Settings of a model build.
#[derive(Debug, Clone)]
pub struct CompileOptions {
    /// The run's seed: `_rng` calls in transformed data draw from
    /// `StreamRng::new(seed, 0, Purpose::TransformedData)`.
    pub seed: u64,
    /// Which executor runs the static graph (`crate::exec`): serial (the default), threaded
    /// (`ExecutorKind::with_threads(n)`, the CLI's `--threads-per-chain n`) or batched.
    /// Results are bit-identical for every choice.
    pub executor: ExecutorKind,
    /// The program's sources, for naming the model line in evaluation errors (`None`: errors
    /// carry no location).
    pub sources: Option<Arc<hazel_syntax::SourceMap>>,
    /// Which instruction set the kernels use (`Auto`: the best this CPU has). Every level
    /// gives the same bits; forcing one the CPU lacks is a compile error.
    pub simd: crate::simd::SimdLevel,
    /// Densities besides the sampler's to compile as static graphs too, for the methods that
    /// evaluate them (`optimize` without the Jacobian, ADVI's and Pathfinder's ELBO with the
    /// constants kept). A density not listed here is re-traced at every evaluation
    /// ([`CompiledModel::log_density_with`]); listing the sampler's changes nothing.
    pub densities: Vec<DensityTerms>,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            seed: 1,
            executor: ExecutorKind::Serial,
            sources: None,
            simd: crate::simd::SimdLevel::Auto,
            densities: Vec::new(),
        }
    }
}

/// Why a program could not be lowered with its data.
#[derive(Debug, Clone, PartialEq)]
pub struct CompileError {
    pub message: String,
    /// Where in the model (absent for errors not tied to a place).
    pub span: Option<Span>,
    /// The data variable concerned, for data errors.
    pub variable: Option<String>,
}

impl CompileError {
    fn at(message: impl Into<String>, span: Span) -> Self {
        CompileError {
            message: message.into(),
            span: if span == Span::DUMMY {
                None
            } else {
                Some(span)
            },
            variable: None,
        }
    }
    /// The message, naming the data variable concerned unless it already does (data errors
    /// usually name it themselves: `` `y[17]` = -3 is below … ``).
    pub fn naming_variable(&self) -> String {
        match &self.variable {
            Some(variable) if !self.message.contains(&format!("`{variable}")) => {
                format!("variable `{variable}`: {}", self.message)
            }
            _ => self.message.clone(),
        }
    }

    /// The message prefixed with `file:line:col` when the error has a location.
    pub fn render(&self, sources: &SourceMap) -> String {
        match self.span {
            Some(s) => format!("{}: {}", sources.describe(s), self.message),
            None => self.message.clone(),
        }
    }
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CompileError {}

fn trace_to_compile(e: TraceErr, context: &str) -> CompileError {
    match e {
        TraceErr::Compile(m, s) => CompileError::at(m, s),
        TraceErr::Eval(e, s) => CompileError::at(format!("{context}: {}", e.message), s),
        TraceErr::Dynamic(s) => CompileError::at(
            format!("{context}: a value used for control flow depends on parameters"),
            s,
        ),
    }
}

type Env = Vec<(Arc<str>, Val)>;

/// Which output blocks a re-traced row covers.
enum OutputBlocks {
    /// Parameters, transformed parameters and generated quantities.
    All,
    /// Parameters and transformed parameters.
    Upper,
    /// Generated quantities alone, with the parameters and transformed parameters bound to
    /// these values.
    Generated(Env),
    /// Transformed parameters and generated quantities, with the parameters bound to these
    /// (constrained) values.
    FromParameters(Env),
}

/// A program lowered with its data.
pub struct CompiledModel {
    checked: CheckedProgram,
    /// For naming the model line in evaluation errors.
    sources: Option<Arc<hazel_syntax::SourceMap>>,
    env: Env,
    dim: usize,
    names: Vec<String>,
    /// Output variables in order: (name, number of columns).
    outputs: Vec<(String, usize)>,
    /// The static graph and its target scalar; `None` when the model is dynamic.
    graph: Option<(Graph, Arg)>,
    /// The other densities of `CompileOptions::densities` as static graphs (none for a
    /// dynamic model).
    variants: Vec<(DensityTerms, Graph, Arg)>,
    /// Why the model is dynamic (for diagnostics).
    dynamic_reason: Option<Span>,
    /// The graph always rejects (a data-only `reject` reached in the model block).
    always_reject: Option<EvalError>,
    executor: ExecutorKind,
    /// `CompileOptions::simd`, resolved for this CPU.
    isa: crate::simd::Isa,
    /// Output rows compiled once (`None`: every row re-traces the output blocks).
    output_plan: Option<crate::output::OutputPlan>,
    /// Output variables declared in the parameters and transformed parameters blocks (the
    /// first entries of `outputs`).
    n_upper_vars: usize,
    /// Chains' evaluations split over the ranks of a distributed run
    /// ([`CompiledModel::distribute_over`]); `None`: every evaluation runs here alone.
    sharding: Option<Sharding>,
    /// Whether transformed data called an `_rng` (so the model depends on the seed).
    transformed_data_random: bool,
}

/// The sharded executor and the ranks it splits evaluations over.
struct Sharding {
    exec: ShardedCpu,
    comm: Arc<dyn Comm>,
}

/// Per-chain buffers: the executor's workspace (for the static graph) and the dynamic path's
/// builder.
#[derive(Debug)]
pub struct Workspace {
    exec: Option<CpuWorkspace>,
    /// The batched executor's lanes, made at the first batch call of a static model.
    batch: Option<BatchWorkspace>,
    /// The dynamic path's builder (capacity reused across evaluations).
    dyn_builder: GraphBuilder,
    /// The output graph's values (rows of draws; the reference executor's buffers).
    out_buf: Buffers,
    /// A chain of a distributed run: the sharded executor's workspace, linked to the other
    /// ranks (made by `new_chain_workspace`).
    sharded: Option<ShardedWorkspace>,
    /// The executor's workspaces of the other densities' graphs (`CompiledModel::variants`).
    variant_exec: Vec<CpuWorkspace>,
}

fn data_type(tr: &mut Tracer, ty: &DeclType) -> Result<DataType, TraceErr> {
    // Sizes only: nothing of the declared size is allocated before the data match it.
    let shape = tr.decl_dims(ty)?;
    let base = match &ty.elem.shape {
        Shape::Int => BaseType::Int,
        shape if shape.is_complex() => BaseType::Complex,
        Shape::Tuple(items) => {
            let components = items
                .iter()
                .map(|item| data_type(tr, item))
                .collect::<Result<Vec<_>, _>>()?;
            let mut shape = Vec::with_capacity(ty.array_dims.len());
            for e in &ty.array_dims {
                shape.push(tr.int_expr(e)?.max(0) as usize);
            }
            return Ok(DataType::new(BaseType::Tuple(components), shape));
        }
        _ => BaseType::Real,
    };
    // `dims` of a row vector is its length; keep that, hazel_data accepts either for vectors.
    let mut dt = DataType::new(base, shape);
    let bound = |tr: &mut Tracer, e: &Expr| -> Result<Bound, TraceErr> {
        let v = tr.expr(e)?;
        Ok(match v {
            Val::Int(i) => Bound::Scalar(i as f64),
            Val::Real(Sc::C(c)) => Bound::Scalar(c),
            other => {
                let mut sc = Vec::new();
                other.flatten(&mut sc);
                Bound::PerElement(
                    sc.iter()
                        .map(|s| if let Sc::C(c) = s { *c } else { f64::NAN })
                        .collect(),
                )
            }
        })
    };
    if let Some(ast::Constraint::Bounds { lower, upper }) = ty.elem.angle_constraint() {
        if let Some(l) = lower {
            dt.lower = Some(bound(tr, l)?);
        }
        if let Some(u) = upper {
            dt.upper = Some(bound(tr, u)?);
        }
    }
    dt.constraint = match &ty.elem.constraint {
        ast::Constraint::Simplex => Constraint::Simplex,
        ast::Constraint::UnitVector => Constraint::UnitVector,
        ast::Constraint::SumToZero if matches!(ty.elem.shape, Shape::Vector { .. }) => {
            Constraint::SumToZeroVector
        }
        ast::Constraint::SumToZero => Constraint::SumToZeroMatrix,
        ast::Constraint::Ordered => Constraint::Ordered,
        ast::Constraint::PositiveOrdered => Constraint::PositiveOrdered,
        ast::Constraint::CholeskyFactorCorr => Constraint::CholeskyFactorCorr,
        ast::Constraint::CholeskyFactorCov => Constraint::CholeskyFactorCov,
        ast::Constraint::CorrMatrix => Constraint::CorrMatrix,
        ast::Constraint::CovMatrix => Constraint::CovMatrix,
        ast::Constraint::ColumnStochastic => Constraint::ColumnStochastic,
        ast::Constraint::RowStochastic => Constraint::RowStochastic,
        _ => Constraint::None,
    };
    Ok(dt)
}

/// Where [`fill_val`] is in a value's flat elements: one position, or one per tuple component
/// (tuple data are stored structure-of-arrays, each component with its own elements).
enum Cursor {
    Flat(usize),
    Tuple(Vec<Cursor>),
}

impl Cursor {
    fn for_values(values: &Values) -> Cursor {
        match values {
            Values::Tuple(components) => Cursor::Tuple(
                components
                    .iter()
                    .map(|c| Cursor::for_values(&c.values))
                    .collect(),
            ),
            _ => Cursor::Flat(0),
        }
    }
}

/// The structure of `blank` filled from a data value's elements, which are row-major (JSON
/// nesting order) throughout: matrices are read by rows and stored column-major, as the
/// graph keeps them.
fn fill_data(blank: &Val, values: &Values) -> Val {
    fill_val(blank, values, &mut Cursor::for_values(values))
}

fn fill_val(blank: &Val, values: &Values, cursor: &mut Cursor) -> Val {
    if let (Val::Tuple(slots), Values::Tuple(components), Cursor::Tuple(cursors)) =
        (blank, values, &mut *cursor)
    {
        return Val::Tuple(Arc::new(
            slots
                .iter()
                .zip(components)
                .zip(cursors.iter_mut())
                .map(|((slot, component), c)| fill_val(slot, &component.values, c))
                .collect(),
        ));
    }
    if let Val::Array(xs) = blank {
        return Val::array(xs.iter().map(|x| fill_val(x, values, cursor)).collect());
    }
    let Cursor::Flat(pos) = cursor else {
        return blank.clone();
    };
    match (blank, values) {
        (Val::Int(_), _) => {
            let v = match values {
                Values::Ints(v) => v.get(*pos).copied().unwrap_or(0),
                _ => 0,
            };
            *pos += 1;
            Val::Int(v)
        }
        // Complex elements are interleaved `re, im` pairs.
        (Val::Complex(parts), Values::Complex(v)) => {
            let start = *pos;
            let re = fill_real(&parts.0, |i| v.get(2 * i).copied(), pos);
            *pos = start;
            let im = fill_real(&parts.1, |i| v.get(2 * i + 1).copied(), pos);
            Val::complex(re, im)
        }
        (_, Values::Ints(v)) => fill_real(blank, |i| v.get(i).map(|&x| x as f64), pos),
        (_, Values::Reals(v)) => fill_real(blank, |i| v.get(i).copied(), pos),
        _ => blank.clone(),
    }
}

/// A real scalar, vector, row vector or matrix of `blank`'s shape from row-major elements
/// `get(pos..)` (a matrix is read by rows and stored column-major).
fn fill_real(blank: &Val, get: impl Fn(usize) -> Option<f64>, pos: &mut usize) -> Val {
    let get = |i: usize| get(i).unwrap_or(f64::NAN);
    match blank {
        Val::Vector(e) | Val::RowVector(e) => {
            let n = e.len();
            let el = Elems::C(Arc::new((*pos..*pos + n).map(get).collect()));
            *pos += n;
            match blank {
                Val::Vector(_) => Val::Vector(el),
                _ => Val::RowVector(el),
            }
        }
        Val::Matrix(r, c, _) => {
            let (r, c) = (*r, *c);
            let start = *pos;
            let column_major = (0..c)
                .flat_map(|j| (0..r).map(move |i| start + i * c + j))
                .map(get)
                .collect();
            *pos += r * c;
            Val::Matrix(r, c, Elems::C(Arc::new(column_major)))
        }
        _ => {
            let v = Val::real(get(*pos));
            *pos += 1;
            v
        }
    }
}

/// Checks declared bounds of block variables (transformed data, transformed parameters,
/// generated quantities): constants directly, parameter-dependent values with check ops.
pub(crate) fn check_bounds(tr: &mut Tracer, block: &Option<Block>) -> Result<(), TraceErr> {
    for d in declarations(block) {
        tr.check_bound_order(&d.name, &d.ty, false)?;
        let Some(ast::Constraint::Bounds { lower, upper }) = d.ty.elem.angle_constraint() else {
            continue;
        };
        let v = match tr.lookup(&d.name) {
            Some(v) => v.clone(),
            None => continue,
        };
        let e = tr.to_elems(&v);
        for (which, bexpr) in [(CheckKind::Lower, lower), (CheckKind::Upper, upper)] {
            let Some(bexpr) = bexpr else { continue };
            let bv = tr.expr(bexpr)?;
            let be = tr.to_elems(&bv);
            let word = if which == CheckKind::Lower {
                "greater than or equal to"
            } else {
                "less than or equal to"
            };
            match (e.consts(), be.consts()) {
                (Some(x), Some(b)) => {
                    for (i, &xv) in x.iter().enumerate() {
                        let bi = if b.len() == 1 { b[0] } else { b[i] };
                        let ok = if which == CheckKind::Lower {
                            xv >= bi
                        } else {
                            xv <= bi
                        };
                        if !ok {
                            let what = if x.len() == 1 {
                                d.name.clone()
                            } else {
                                format!("{}[{}]", d.name, i + 1)
                            };
                            return Err(TraceErr::Eval(
                                EvalError::new(
                                    hazel_density::EvalErrorKind::Constraint,
                                    format!("{what} is {xv}, but must be {word} {bi}"),
                                ),
                                d.ty.span,
                            ));
                        }
                    }
                }
                _ => {
                    let xa = tr.elems_arg(&e);
                    let ba = if be.len() == 1 {
                        tr.sc_arg(be.get(0))
                    } else {
                        tr.elems_arg(&be)
                    };
                    tr.b.check(
                        which,
                        xa,
                        ba,
                        format!("{} must be {word} its bound", d.name),
                    );
                }
            }
        }
    }
    Ok(())
}

/// Traces parameters, transformed parameters and the model block into `b`; returns the
/// builder and the target scalar. On error the builder is handed back too, so the dynamic
/// path keeps its buffers' capacity.
fn trace_density(
    model: &CompiledModel,
    b: GraphBuilder,
    dynamic: bool,
    jacobian: bool,
    propto: bool,
) -> Result<(GraphBuilder, Arg), Box<(GraphBuilder, TraceErr)>> {
    let program = &model.checked.program;
    let mut tr = Tracer::new(b, &model.checked, model.env.clone());
    tr.sources = model.sources.clone();
    tr.dynamic = dynamic;
    tr.jacobian = jacobian;
    tr.propto = propto;
    tr.in_lupdf = propto;
    let run = |tr: &mut Tracer| -> Result<(), TraceErr> {
        let q = Elems::V(tr.b.params());
        let q = if q.is_empty() {
            Elems::C(Arc::new(vec![]))
        } else {
            q
        };
        tr.read_params(&program.parameters, Some(&q))?;
        if let Some(tp) = &program.transformed_parameters {
            tr.block_stmts(&tp.stmts)?;
            check_bounds(tr, &program.transformed_parameters)?;
        }
        if let Some(m) = &program.model {
            tr.block_stmts(&m.stmts)?;
        }
        tr.flush_tilde();
        Ok(())
    };
    if let Err(e) = run(&mut tr) {
        return Err(Box::new((tr.b, e)));
    }
    let mut terms = std::mem::take(&mut tr.target);
    let c = tr.target_const;
    let mut b = tr.b;
    if c != 0.0 || terms.is_empty() {
        terms.push(b.scalar_const(c));
    }
    let out = b.sum_scalars(terms);
    Ok((b, out))
}

/// The message of a caught panic.
fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".into()
    }
}

/// Lowers a checked program with `data`. Calls run what the checker resolved them to (see
/// `lower::builtins::Tracer::call_target`). Never panics: an internal error while lowering is
/// returned as a [`CompileError`].
pub fn compile(
    program: &CheckedProgram,
    data: &DataFile,
    options: &CompileOptions,
) -> Result<CompiledModel, CompileError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        compile_inner(program, data, options)
    }))
    .unwrap_or_else(|p| {
        Err(CompileError {
            message: format!(
                "internal error while lowering the program: {}",
                panic_message(p)
            ),
            span: None,
            variable: None,
        })
    })
}

fn compile_inner(
    checked: &CheckedProgram,
    data: &DataFile,
    options: &CompileOptions,
) -> Result<CompiledModel, CompileError> {
    let program = &checked.program;
    let mut tr = Tracer::new(GraphBuilder::new(&[]), checked, Vec::new());
    tr.sources = options.sources.clone();
    tr.rng = Some(StreamRng::new(options.seed, 0, Purpose::TransformedData));
    // data block
    for d in declarations(&program.data) {
        tr.check_bound_order(&d.name, &d.ty, false)
            .map_err(|e| trace_to_compile(e, "data declaration"))?;
        let dt = data_type(&mut tr, &d.ty).map_err(|e| trace_to_compile(e, "data declaration"))?;
        let decl = DataDecl::new(d.name.clone(), dt);
        let dv = hazel_data::read_var(data, &decl).map_err(|e| CompileError {
            message: e.to_string(),
            span: Some(d.ty.span),
            variable: Some(d.name.clone()),
        })?;
        let blank = tr
            .blank(&d.ty)
            .map_err(|e| trace_to_compile(e, "data declaration"))?;
        let v = fill_data(&blank, &dv.values);
        tr.bind(&d.name, v);
    }
    // transformed data
    if let Some(td) = &program.transformed_data {
        tr.block_stmts(&td.stmts)
            .map_err(|e| trace_to_compile(e, "transformed data"))?;
        check_bounds(&mut tr, &program.transformed_data)
            .map_err(|e| trace_to_compile(e, "transformed data"))?;
    }
    // Whether transformed data drew from the seed's stream (then the seed changes the model).
    let transformed_data_random = tr.rng.as_ref().is_some_and(|r| r.position() != 0);
    let env = tr.take_env();

    // dimension and output columns
    let mut tr = Tracer::new(GraphBuilder::new(&[]), checked, env.clone());
    tr.sources = options.sources.clone();
    let dim = tr
        .read_params(&program.parameters, None)
        .map_err(|e| trace_to_compile(e, "parameters"))?;
    let mut names = Vec::new();
    let mut outputs = Vec::new();
    let mut n_upper_vars = 0;
    for (k, block) in [
        &program.parameters,
        &program.transformed_parameters,
        &program.generated_quantities,
    ]
    .into_iter()
    .enumerate()
    {
        if k == 2 {
            n_upper_vars = outputs.len();
        }
        for d in declarations(block) {
            let blank = tr
                .blank(&d.ty)
                .map_err(|e| trace_to_compile(e, "declaration sizes"))?;
            let before = names.len();
            output_names(&d.name, &blank, &mut names);
            outputs.push((d.name.clone(), names.len() - before));
        }
    }

    let mut model = CompiledModel {
        checked: checked.clone(),
        sources: options.sources.clone(),
        env,
        dim,
        names,
        outputs,
        graph: None,
        variants: Vec::new(),
        dynamic_reason: None,
        always_reject: None,
        executor: options.executor,
        isa: options.simd.resolve().map_err(|m| CompileError {
            message: m,
            span: None,
            variable: None,
        })?,
        output_plan: None,
        n_upper_vars,
        sharding: None,
        transformed_data_random,
    };
    match static_density(&model, DensityTerms::SAMPLER) {
        Ok(graph) => model.graph = Some(graph),
        Err(TraceErr::Dynamic(span)) => model.dynamic_reason = Some(span),
        Err(TraceErr::Compile(m, s)) => return Err(CompileError::at(m, s)),
        Err(TraceErr::Eval(e, _)) => model.always_reject = Some(e),
    }
    if model.graph.is_some() {
        for &terms in &options.densities {
            let known = terms == DensityTerms::SAMPLER
                || model.variants.iter().any(|(t, _, _)| *t == terms);
            // The same program traced with other terms has the same control flow, so it is
            // static too; should it fail anyway, that density is re-traced per evaluation.
            if let (false, Ok((graph, out))) = (known, static_density(&model, terms)) {
                model.variants.push((terms, graph, out));
            }
        }
    }
    model.output_plan = model.build_output_plan();
    Ok(model)
}

/// The density with `terms` traced once into a static graph, with the rewrites every static
/// graph gets.
fn static_density(model: &CompiledModel, terms: DensityTerms) -> Result<(Graph, Arg), TraceErr> {
    let zeros = vec![0.0; model.dim];
    let (b, out) = trace_density(
        model,
        GraphBuilder::new(&zeros),
        false,
        terms.jacobian,
        terms.propto,
    )
    .map_err(|boxed| boxed.1)?;
    let mut graph = b.finish();
    graph.eliminate_dead_ops(out);
    graph.eliminate_common_subexpressions(out);
    graph.narrow_partly_read(out);
    graph.fuse_mul_add(out);
    graph.fuse_mul_add_chains(out);
    graph.fuse_glm(out);
    graph.packs_as_gathers();
    graph.fuse_matmul_bias(out);
    graph.fuse_gather_diff_dot_self(out);
    graph.fuse_scalar_blocks();
    graph.lane_scalar_blocks(out);
    graph.mark_adjoint_free(out);
    Ok((graph, out))
}

/// Stan's CSV column names of one variable: every index column-major (first fastest); tuple
/// slots after a colon (`b:1`, `b:2.3`), each tuple of an array whole before the next
/// (`a.1:1, a.1:2, a.2:1`). The order is [`Val::flatten_output`]'s.
fn output_names(name: &str, blank: &Val, out: &mut Vec<String>) {
    if let Val::Tuple(slots) = blank {
        for (j, slot) in slots.iter().enumerate() {
            output_names(&format!("{name}:{}", j + 1), slot, out);
        }
        return;
    }
    let dims = blank.dims();
    let complex = blank.holds_complex();
    let parts = |base: &str, out: &mut Vec<String>| {
        if complex {
            out.push(format!("{base}.real"));
            out.push(format!("{base}.imag"));
        } else {
            out.push(base.to_string());
        }
    };
    if dims.is_empty() {
        parts(name, out);
        return;
    }
    if blank.holds_tuples() {
        let total: usize = dims.iter().product();
        let mut idx = vec![0usize; dims.len()];
        for _ in 0..total {
            let parts: Vec<String> = idx.iter().map(|i| (i + 1).to_string()).collect();
            output_names(
                &format!("{name}.{}", parts.join(".")),
                blank.at_path(&idx),
                out,
            );
            for (k, d) in dims.iter().enumerate() {
                idx[k] += 1;
                if idx[k] < *d {
                    break;
                }
                idx[k] = 0;
            }
        }
        return;
    }
    let total: usize = dims.iter().product();
    let mut idx = vec![0usize; dims.len()];
    for _ in 0..total {
        let index: Vec<String> = idx.iter().map(|i| (i + 1).to_string()).collect();
        parts(&format!("{name}.{}", index.join(".")), out);
        for (k, d) in dims.iter().enumerate() {
            idx[k] += 1;
            if idx[k] < *d {
                break;
            }
            idx[k] = 0;
        }
    }
}

/// Column name → position.
fn column_index(names: &[String]) -> std::collections::HashMap<&str, usize> {
    names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect()
}

fn finish_eval(lp: f64, grad: &[f64]) -> Result<f64, EvalError> {
    if !lp.is_finite() {
        return Err(EvalError::non_finite(format!("log density is {lp}")));
    }
    if let Some(i) = grad.iter().position(|g| !g.is_finite()) {
        return Err(EvalError::non_finite(format!(
            "gradient component {} is {}",
            i + 1,
            grad[i]
        )));
    }
    Ok(lp)
}

/// Copies a traced output row into `out`, which must be as long.
fn copy_row(v: &[f64], out: &mut [f64]) -> Result<(), EvalError> {
    if v.len() != out.len() {
        return Err(EvalError::reject(format!(
            "output row has {} values, expected {}",
            v.len(),
            out.len()
        )));
    }
    out.copy_from_slice(v);
    Ok(())
}

impl CompiledModel {
    /// The executor's workspace for the static graph, its kernels set to this model's
    /// instruction set.
    fn new_exec_workspace(&self, g: &Graph) -> CpuWorkspace {
        let mut w = self.executor.executor().new_workspace(g);
        w.set_isa(self.isa);
        w
    }

    /// Which ops of the static graph a distributed run splits over ranks (`None` for a
    /// dynamic model, which every rank evaluates in full).
    pub fn shard_plan(&self) -> Option<ShardPlan> {
        self.graph.as_ref().map(|(g, _)| ShardPlan::new(g))
    }

    /// The model's data-parallel work: elements the split ops touch per evaluation
    /// ([`ShardPlan::work`]; 0 for a dynamic model).
    pub fn data_parallel_work(&self) -> u64 {
        self.shard_plan().map_or(0, |p| p.work())
    }

    /// Splits every chain's evaluations over the ranks of `comm` (`--distribute data`): each
    /// rank computes its own chunks of the large ops, and results are folded rank by rank in
    /// chunk order, so every rank gets [`crate::exec::SerialCpu`]'s bits for any number of
    /// ranks. Every rank must call this on a model compiled from the same program and data,
    /// and run the same chains (a chain's workspace from [`LogDensity::new_chain_workspace`]
    /// talks to the same chain on the other ranks).
    pub fn distribute_over(&mut self, comm: Arc<dyn Comm>) {
        self.sharding = self.graph.as_ref().map(|(g, _)| Sharding {
            exec: ShardedCpu {
                plan: Arc::new(ShardPlan::new(g)),
            },
            comm,
        });
    }

    /// Whether evaluation re-traces the program (control flow depends on parameters).
    pub fn is_dynamic(&self) -> bool {
        self.graph.is_none() && self.always_reject.is_none()
    }

    /// Whether transformed data drew random numbers, so that another seed builds another
    /// model (a run's seed is the model's seed, as in CmdStan).
    pub fn transformed_data_is_random(&self) -> bool {
        self.transformed_data_random
    }

    /// Where the dynamic path was needed.
    pub fn dynamic_reason(&self) -> Option<Span> {
        self.dynamic_reason
    }

    /// The static graph, if the model has one.
    pub fn graph(&self) -> Option<&Graph> {
        self.graph.as_ref().map(|(g, _)| g)
    }

    /// The argument of [`CompiledModel::graph`] holding the log density (a backward sweep's
    /// seed).
    pub fn graph_output(&self) -> Option<Arg> {
        self.graph.as_ref().map(|(_, out)| *out)
    }

    /// Log density with a choice of terms: `jacobian` adds the transforms' log-Jacobians,
    /// `propto` drops the constant summands of `~` and `_lupdf` (the sampler's density is
    /// `jacobian = true, propto = true`). The sampler's density and those compiled by
    /// `CompileOptions::densities` run their static graphs; any other is re-traced.
    pub fn log_density_with(
        &self,
        ws: &mut Workspace,
        q: &[f64],
        grad: &mut [f64],
        jacobian: bool,
        propto: bool,
    ) -> Result<f64, EvalError> {
        let terms = DensityTerms { jacobian, propto };
        if terms == DensityTerms::SAMPLER {
            return self.log_density_gradient(ws, q, grad);
        }
        if let Some(e) = &self.always_reject {
            return Err(e.clone());
        }
        let Some(k) = self.variants.iter().position(|(t, _, _)| *t == terms) else {
            return self.eval_traced(ws, q, grad, jacobian, propto);
        };
        self.check_dims(q, grad)?;
        let (_, g, out) = &self.variants[k];
        if ws.variant_exec.len() != self.variants.len() {
            ws.variant_exec = self.new_variant_workspaces();
        }
        let lp = self
            .executor
            .executor()
            .gradient(g, *out, q, &mut ws.variant_exec[k], grad)?;
        finish_eval(lp, grad)
    }

    /// The densities compiled as static graphs besides the sampler's.
    pub fn compiled_densities(&self) -> Vec<DensityTerms> {
        self.variants.iter().map(|(t, _, _)| *t).collect()
    }

    fn new_variant_workspaces(&self) -> Vec<CpuWorkspace> {
        self.variants
            .iter()
            .map(|(_, g, _)| self.new_exec_workspace(g))
            .collect()
    }

    fn check_dims(&self, q: &[f64], grad: &[f64]) -> Result<(), EvalError> {
        if q.len() != self.dim || grad.len() != self.dim {
            return Err(EvalError::reject(format!(
                "expected {} unconstrained values, got {}",
                self.dim,
                q.len()
            )));
        }
        Ok(())
    }

    fn eval_traced(
        &self,
        ws: &mut Workspace,
        q: &[f64],
        grad: &mut [f64],
        jacobian: bool,
        propto: bool,
    ) -> Result<f64, EvalError> {
        self.check_dims(q, grad)?;
        let mut b = std::mem::take(&mut ws.dyn_builder);
        b.reset(q);
        let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            trace_density(self, b, true, jacobian, propto)
        }))
        .unwrap_or_else(|p| {
            Err(Box::new((
                GraphBuilder::default(),
                TraceErr::Eval(
                    EvalError::reject(format!("internal error: {}", panic_message(p))),
                    Span::DUMMY,
                ),
            )))
        });
        let (mut b, out) = match res {
            Ok(x) => x,
            Err(boxed) => {
                let (b, e) = *boxed;
                let err = b.eager_error.clone();
                ws.dyn_builder = b;
                return Err(err.unwrap_or(match e {
                    TraceErr::Eval(e, _) => e,
                    TraceErr::Compile(m, _) => EvalError::reject(m),
                    TraceErr::Dynamic(_) => {
                        EvalError::reject("internal: dynamic trace needed a value")
                    }
                }));
            }
        };
        if let Some(e) = b.eager_error.take() {
            ws.dyn_builder = b;
            return Err(e);
        }
        b.buf.adj.resize(b.graph.n_vals, 0.0);
        b.graph.backward(out, &mut b.buf);
        let lp = b.graph.scalar(out, &b.buf);
        grad.copy_from_slice(&b.buf.adj[..self.dim]);
        ws.dyn_builder = b;
        finish_eval(lp, grad)
    }

    /// Refuses names in an initial-values file that are neither a parameter nor a variable the
    /// model writes out.
    fn check_init_names(&self, inits: &DataFile) -> Result<(), CompileError> {
        let program = &self.checked.program;
        let parameters: Vec<String> = declarations(&program.parameters)
            .into_iter()
            .map(|d| d.name)
            .collect();
        let written: Vec<String> = [
            &program.transformed_parameters,
            &program.generated_quantities,
        ]
        .into_iter()
        .flat_map(declarations)
        .map(|d| d.name)
        .collect();
        let mut names: Vec<&str> = inits.names().collect();
        names.sort_unstable();
        for name in names {
            let known = parameters.iter().chain(&written).any(|p| p == name);
            if known || name.ends_with("__") {
                continue;
            }
            let mut message = format!("`{name}` is not a parameter of the model");
            match hazel_check::signatures::closest(name, parameters.iter().map(String::as_str)) {
                Some(best) => message.push_str(&format!(" (did you mean `{best}`?)")),
                None if parameters.is_empty() => message.push_str(" (it has no parameters)"),
                None => message.push_str(&format!(" (its parameters: {})", parameters.join(", "))),
            }
            return Err(CompileError {
                message: format!("initial values: {message}"),
                span: None,
                variable: Some(name.to_string()),
            });
        }
        Ok(())
    }

    /// The unconstrained point for user-supplied initial values (CmdStan JSON with constrained
    /// parameter values). Parameters absent from `inits` get `fill()` for each of their
    /// unconstrained coordinates (CmdStan's partial inits). A name that is no variable of the
    /// model is an error naming the parameters (a misspelt parameter would otherwise start
    /// at random without a word); transformed parameters and generated quantities, as in a
    /// previous run's output, and sampler columns (`lp__`) are ignored.
    pub fn unconstrain_inits(
        &self,
        inits: &DataFile,
        fill: impl FnMut() -> f64,
    ) -> Result<Vec<f64>, CompileError> {
        self.check_init_names(inits)?;
        self.unconstrain_each(
            |tr, d| {
                if inits.get(&d.name).is_none() {
                    return Ok(None);
                }
                let ctx = |e: TraceErr| trace_to_compile(e, "initial values");
                let dt = data_type(tr, &d.ty).map_err(ctx)?;
                let dv = hazel_data::read_var(inits, &DataDecl::new(d.name.clone(), dt)).map_err(
                    |e| CompileError {
                        message: format!("initial values: {e}"),
                        span: Some(d.ty.span),
                        variable: Some(d.name.clone()),
                    },
                )?;
                let blank = tr.blank(&d.ty).map_err(ctx)?;
                Ok(Some(fill_data(&blank, &dv.values)))
            },
            fill,
            "initial values",
        )
    }

    /// The unconstrained point, parameter by parameter in declaration order: `value_of` gives
    /// a parameter's constrained value (`None`: its coordinates are `fill()`ed), which Stan's
    /// inverse transform maps to its unconstrained coordinates.
    fn unconstrain_each(
        &self,
        mut value_of: impl FnMut(&mut Tracer, &Declared) -> Result<Option<Val>, CompileError>,
        mut fill: impl FnMut() -> f64,
        context: &str,
    ) -> Result<Vec<f64>, CompileError> {
        let mut tr = Tracer::new(GraphBuilder::new(&[]), &self.checked, self.env.clone());
        tr.sources = self.sources.clone();
        tr.dynamic = true;
        tr.jacobian = false;
        let mut q = Vec::with_capacity(self.dim);
        let ctx = |e: TraceErr| trace_to_compile(e, context);
        for d in declarations(&self.checked.program.parameters) {
            let start = q.len();
            if let Some(v) = value_of(&mut tr, &d)? {
                q.extend(tr.unconstrain_param(&d, &v).map_err(ctx)?);
            }
            // Count this parameter's coordinates, then bind its constrained value, which later
            // bounds may use.
            let mut n = 0;
            tr.read_declared_param(&d, None, &mut n).map_err(ctx)?;
            if q.len() == start {
                q.extend((0..n).map(|_| fill()));
            } else if q.len() - start != n {
                return Err(CompileError::at(
                    format!(
                        "initial value of {} has {} unconstrained values, expected {n}",
                        d.name,
                        q.len() - start
                    ),
                    d.ty.span,
                ));
            }
            let u = Elems::C(Arc::new(q[start..].to_vec()));
            tr.read_declared_param(&d, Some(&u), &mut 0).map_err(ctx)?;
        }
        Ok(q)
    }

    /// A parameter's constrained value from a row of output columns (`index`: column name →
    /// position in `row`), tuples and complex values included.
    fn parameter_from_row(
        tr: &mut Tracer,
        d: &Declared,
        index: &std::collections::HashMap<&str, usize>,
        row: &[f64],
    ) -> Result<Val, CompileError> {
        let blank = tr
            .blank(&d.ty)
            .map_err(|e| trace_to_compile(e, "parameter columns"))?;
        let mut columns = Vec::new();
        output_names(&d.name, &blank, &mut columns);
        let values = columns
            .iter()
            .map(|c| {
                index
                    .get(c.as_str())
                    .map(|&i| row[i])
                    .ok_or_else(|| CompileError {
                        message: format!("no column `{c}` for parameter `{}`", d.name),
                        span: Some(d.ty.span),
                        variable: Some(d.name.clone()),
                    })
            })
            .collect::<Result<Vec<f64>, _>>()?;
        blank
            .with_output_columns(&values)
            .ok_or_else(|| CompileError {
                message: format!("the columns of `{}` do not fit its shape", d.name),
                span: Some(d.ty.span),
                variable: Some(d.name.clone()),
            })
    }

    /// The unconstrained point of the parameter values in a row of output columns (CmdStan's
    /// names as a Stan CSV row holds them, `names[i]` naming `row[i]`; columns that are no
    /// parameter's are ignored), tuples and complex values included. Every parameter's
    /// columns must be there.
    pub fn unconstrain_output_row(
        &self,
        names: &[String],
        row: &[f64],
    ) -> Result<Vec<f64>, CompileError> {
        let index = column_index(names);
        self.unconstrain_each(
            |tr, d| Self::parameter_from_row(tr, d, &index, row).map(Some),
            || f64::NAN,
            "parameter columns",
        )
    }

    /// The output row recomputed from the parameter values in a row of output columns (as
    /// [`Self::unconstrain_output_row`] reads them): the parameters as given, the transformed
    /// parameters and generated quantities computed from those values, the generated
    /// quantities drawing from `rng` (CmdStan's standalone generated quantities). The values
    /// are never unconstrained and constrained again, so a row of exact values (hazel's CSV,
    /// Parquet, Zarr, memory) gives the row the sampler wrote, bit for bit, with the same
    /// stream.
    pub fn write_output_from_row(
        &self,
        names: &[String],
        row: &[f64],
        rng: &mut StreamRng,
        out: &mut [f64],
    ) -> Result<(), EvalError> {
        let index = column_index(names);
        let mut tr = Tracer::new(GraphBuilder::new(&[]), &self.checked, self.env.clone());
        tr.sources = self.sources.clone();
        let mut bound: Env = Vec::new();
        for d in declarations(&self.checked.program.parameters) {
            let v = Self::parameter_from_row(&mut tr, &d, &index, row)
                .map_err(|e| EvalError::reject(e.message))?;
            tr.bind(&d.name, v.clone());
            bound.push((Arc::from(d.name.as_str()), v));
        }
        let v = self.trace_output_blocks(&[], rng, OutputBlocks::FromParameters(bound))?;
        copy_row(&v, out)
    }

    /// Whether output rows come from a compiled graph: `Some(false)` when the whole row does,
    /// `Some(true)` when the generated quantities are still re-traced per row (they need
    /// values: `_rng` draws, `print`, branches on parameters), `None` when every row re-traces
    /// the transformed parameters too.
    pub fn output_plan_split(&self) -> Option<bool> {
        self.output_plan.as_ref().map(|p| p.is_split())
    }

    /// The output row by re-tracing the parameters, transformed parameters and generated
    /// quantities with the draw's values (the path every row took before the output plan, and
    /// still takes without one): the reference the compiled rows are tested against.
    pub fn write_output_retraced(
        &self,
        q: &[f64],
        rng: &mut StreamRng,
        out: &mut [f64],
    ) -> Result<(), EvalError> {
        let v = self.trace_output(q, rng)?;
        copy_row(&v, out)
    }

    /// Builds the output plan and checks it against the re-traced rows at two points (the
    /// origin and a fixed point in (-2, 2)^dim); a plan that disagrees in any bit, or one that
    /// no point confirms, is dropped. A split plan is checked on the graph's columns only (the
    /// values its generated quantities are traced with), so the check never runs the
    /// generated quantities' `print`s or rngs.
    fn build_output_plan(&self) -> Option<crate::output::OutputPlan> {
        let plan = crate::output::OutputPlan::build(&crate::output::PlanInput {
            checked: &self.checked,
            sources: self.sources.clone(),
            env: &self.env,
            dim: self.dim,
            outputs: &self.outputs,
            n_upper_vars: self.n_upper_vars,
            check_bounds,
        })?;
        // The fixed point: a stream of its own (no run's seed), uniform in (-2, 2).
        let mut point_rng = StreamRng::new(0x2545_F491_4F6C_DD1D, 0, Purpose::Init);
        let mut uniform = move || point_rng.uniform_range(-2.0, 2.0);
        let points = [
            vec![0.0; self.dim],
            (0..self.dim).map(|_| uniform()).collect(),
        ];
        let mut buf = Buffers::for_graph(&plan.graph);
        let mut confirmed = false;
        for q in &points {
            let mut rng_a = crate::output::placeholder_rng();
            let mut rng_b = crate::output::placeholder_rng();
            let mut row = vec![0.0; self.names.len()];
            let (reference, planned) = if plan.is_split() {
                let reference = self.trace_output_blocks(q, &mut rng_a, OutputBlocks::Upper);
                let planned = plan.write_static(&mut buf, q, &mut row).map(|n| {
                    row.truncate(n);
                });
                (reference, planned)
            } else {
                let reference = self.trace_output(q, &mut rng_a);
                let planned = self.planned_row(&plan, &mut buf, q, &mut rng_b, &mut row);
                (reference, planned)
            };
            match (reference, planned) {
                (Ok(r), Ok(())) if crate::output::same_row(&r, &row) => confirmed = true,
                (Err(_), Err(_)) => {}
                _ => return None,
            }
        }
        confirmed.then_some(plan)
    }

    fn write_planned(
        &self,
        plan: &crate::output::OutputPlan,
        ws: &mut Workspace,
        q: &[f64],
        rng: &mut StreamRng,
        out: &mut [f64],
    ) -> Result<(), EvalError> {
        if q.len() != self.dim || out.len() != self.names.len() {
            return Err(EvalError::reject(format!(
                "output row has {} values, expected {}",
                out.len(),
                self.names.len()
            )));
        }
        self.planned_row(plan, &mut ws.out_buf, q, rng, out)
    }

    /// One row through `plan`: the graph's columns, then (split plan) the generated
    /// quantities traced with the graph's values.
    fn planned_row(
        &self,
        plan: &crate::output::OutputPlan,
        buf: &mut Buffers,
        q: &[f64],
        rng: &mut StreamRng,
        out: &mut [f64],
    ) -> Result<(), EvalError> {
        let n = plan.write_static(buf, q, out)?;
        let Some(env) = plan.split_env(buf) else {
            return Ok(());
        };
        let gq = self.trace_output_blocks(q, rng, OutputBlocks::Generated(env))?;
        if gq.len() != out.len() - n {
            return Err(EvalError::reject(format!(
                "generated quantities have {} values, expected {}",
                gq.len(),
                out.len() - n
            )));
        }
        out[n..].copy_from_slice(&gq);
        Ok(())
    }

    /// Constrained values of the parameters, transformed parameters and generated quantities.
    fn trace_output(&self, q: &[f64], rng: &mut StreamRng) -> Result<Vec<f64>, EvalError> {
        self.trace_output_blocks(q, rng, OutputBlocks::All)
    }

    /// [`Self::trace_output`] for some of the output blocks (see [`OutputBlocks`]).
    fn trace_output_blocks(
        &self,
        q: &[f64],
        rng: &mut StreamRng,
        blocks: OutputBlocks,
    ) -> Result<Vec<f64>, EvalError> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.trace_output_inner(q, rng, blocks)
        }))
        .unwrap_or_else(|p| {
            Err(EvalError::reject(format!(
                "internal error while writing output: {}",
                panic_message(p)
            )))
        })
    }

    fn trace_output_inner(
        &self,
        q: &[f64],
        rng: &mut StreamRng,
        blocks: OutputBlocks,
    ) -> Result<Vec<f64>, EvalError> {
        let mut env = self.env.clone();
        let (upper, generated, given_parameters) = match blocks {
            OutputBlocks::All => (true, true, false),
            OutputBlocks::Upper => (true, false, false),
            OutputBlocks::Generated(bound) => {
                env.extend(bound);
                (false, true, false)
            }
            OutputBlocks::FromParameters(bound) => {
                env.extend(bound);
                (true, true, true)
            }
        };
        let mut tr = Tracer::new(GraphBuilder::new(&[]), &self.checked, env);
        tr.sources = self.sources.clone();
        tr.dynamic = true;
        tr.jacobian = false;
        let placeholder = StreamRng::new(0, 0, Purpose::Init);
        tr.rng = Some(std::mem::replace(rng, placeholder));
        let program = &self.checked.program;
        let run = |tr: &mut Tracer| -> Result<(), TraceErr> {
            if upper {
                if !given_parameters {
                    let qe = Elems::C(Arc::new(q.to_vec()));
                    tr.read_params(&program.parameters, Some(&qe))?;
                }
                if let Some(tp) = &program.transformed_parameters {
                    tr.block_stmts(&tp.stmts)?;
                    check_bounds(tr, &program.transformed_parameters)?;
                }
            }
            if let Some(gq) = program.generated_quantities.as_ref().filter(|_| generated) {
                // Generated quantities may not see the model block's locals, only the blocks
                // above; `~`/target are not allowed there.
                tr.block_stmts(&gq.stmts)?;
                check_bounds(tr, &program.generated_quantities)?;
            }
            Ok(())
        };
        let res = run(&mut tr);
        if let Some(r) = tr.rng.take() {
            *rng = r;
        }
        res.map_err(|e| match e {
            TraceErr::Eval(e, _) => e,
            TraceErr::Compile(m, _) => EvalError::reject(m),
            TraceErr::Dynamic(_) => {
                EvalError::reject("internal: output trace needed a parameter value")
            }
        })?;
        let mut out = Vec::with_capacity(self.names.len());
        let first = if upper { 0 } else { self.n_upper_vars };
        let last = if generated {
            self.outputs.len()
        } else {
            self.n_upper_vars
        };
        for (name, n) in &self.outputs[first..last] {
            let v = tr.lookup(name).cloned().unwrap_or(Val::real(f64::NAN));
            let mut sc = Vec::new();
            v.flatten_output(&mut sc);
            if sc.len() != *n {
                return Err(EvalError::reject(format!(
                    "{name} has {} values, expected {n}",
                    sc.len()
                )));
            }
            for s in sc {
                out.push(match s {
                    Sc::C(c) => c,
                    Sc::V(_) => f64::NAN,
                });
            }
        }
        Ok(out)
    }
}

impl LogDensity for CompiledModel {
    type Workspace = Workspace;

    fn dim(&self) -> usize {
        self.dim
    }

    fn new_workspace(&self) -> Workspace {
        Workspace {
            exec: self.graph.as_ref().map(|(g, _)| self.new_exec_workspace(g)),
            batch: None,
            dyn_builder: {
                let mut b = GraphBuilder::default();
                b.buf.isa = self.isa;
                b
            },
            variant_exec: self.new_variant_workspaces(),
            out_buf: {
                // Every instruction set gives the same bits, so rows match the re-traced ones.
                let mut buf = self
                    .output_plan
                    .as_ref()
                    .map_or_else(Buffers::default, |p| SerialCpu.new_workspace(&p.graph));
                buf.isa = self.isa;
                buf
            },
            sharded: None,
        }
    }

    /// A chain of a distributed run ([`CompiledModel::distribute_over`]) gets the sharded
    /// executor's workspace on the chain's own tag; otherwise the ordinary workspace.
    fn new_chain_workspace(&self, chain_id: u64) -> Workspace {
        let mut ws = self.new_workspace();
        if let (Some(sharding), Some((g, _)), None) =
            (&self.sharding, &self.graph, &self.always_reject)
        {
            if let Some(tag) = hazel_comm::chain_tag(chain_id) {
                let mut w = sharding
                    .exec
                    .linked_workspace(g, sharding.comm.clone(), tag);
                w.set_isa(self.isa);
                ws.sharded = Some(w);
            }
        }
        ws
    }

    fn log_density_gradient(
        &self,
        ws: &mut Workspace,
        q: &[f64],
        grad: &mut [f64],
    ) -> Result<f64, EvalError> {
        if let Some(e) = &self.always_reject {
            return Err(e.clone());
        }
        let Some((g, out)) = &self.graph else {
            return self.eval_traced(ws, q, grad, true, true);
        };
        self.check_dims(q, grad)?;
        if let (Some(w), Some(sharding)) = (&mut ws.sharded, &self.sharding) {
            let lp = sharding.exec.gradient(g, *out, q, w, grad)?;
            return finish_eval(lp, grad);
        }
        let exec = self.executor.executor();
        let w = ws.exec.get_or_insert_with(|| self.new_exec_workspace(g));
        let lp = exec.gradient(g, *out, q, w, grad)?;
        finish_eval(lp, grad)
    }

    fn log_density_gradient_with(
        &self,
        ws: &mut Workspace,
        q: &[f64],
        grad: &mut [f64],
        terms: hazel_density::DensityTerms,
    ) -> Result<f64, EvalError> {
        if let Some(e) = &self.always_reject {
            return Err(e.clone());
        }
        self.log_density_with(ws, q, grad, terms.jacobian, terms.propto)
    }

    /// Static models run the batch op-major on the batched executor (its lanes live in the
    /// first workspace), unless the model's executor is the threaded one; dynamic models and
    /// the threaded executor go point by point. Bit for bit the single-point results.
    fn log_density_gradient_batch(
        &self,
        ws: &mut [Workspace],
        qs: &[f64],
        grads: &mut [f64],
        out: &mut [Result<f64, EvalError>],
    ) {
        let d = self.dim;
        let batched = match (
            &self.graph,
            self.executor.batch_executor(),
            &self.always_reject,
        ) {
            (Some((g, o)), Some(b), None) if !ws.is_empty() => Some((g, *o, b)),
            _ => None,
        };
        if qs.len() != out.len() * d || grads.len() != out.len() * d || ws.len() < out.len() {
            let e = EvalError::reject(format!(
                "a batch of {} points needs {} unconstrained values, gradient values and {} \
                 workspaces; got {}, {} and {}",
                out.len(),
                out.len() * d,
                out.len(),
                qs.len(),
                grads.len(),
                ws.len()
            ));
            out.iter_mut().for_each(|r| *r = Err(e.clone()));
            return;
        }
        let Some((g, o, exec)) = batched else {
            for (i, ((w, r), gr)) in ws
                .iter_mut()
                .zip(out.iter_mut())
                .zip(grads.chunks_mut(d.max(1)))
                .enumerate()
            {
                *r = self.log_density_gradient(w, &qs[i * d..(i + 1) * d], gr);
            }
            return;
        };
        let w = ws[0].batch.get_or_insert_with(|| {
            let mut w = exec.new_workspace(g);
            w.isa = self.isa;
            w
        });
        exec.gradient_batch(g, o, qs, w, out, grads);
        for (r, gr) in out.iter_mut().zip(grads.chunks(d.max(1))) {
            if let Ok(lp) = *r {
                *r = finish_eval(lp, gr);
            }
        }
    }
}

impl Model for CompiledModel {
    fn output_names(&self) -> Vec<String> {
        self.names.clone()
    }

    fn write_output(
        &self,
        ws: &mut Workspace,
        q: &[f64],
        rng: &mut StreamRng,
        out: &mut [f64],
    ) -> Result<(), EvalError> {
        if let Some(plan) = &self.output_plan {
            return self.write_planned(plan, ws, q, rng, out);
        }
        self.write_output_retraced(q, rng, out)
    }
}
