//! `hazel._hazel`: the compiled half of the Python package. It builds a model the way the CLI's
//! front end does (check, unsupported calls, data, lowering) and exposes the model's log
//! density, gradient, constraining transforms and names over flat `float64` buffers; the
//! Python half (`hazel/__init__.py`) gives them BridgeStan's method names, argument handling
//! and array shapes.
//!
//! Every evaluation releases the GIL. Evaluations that re-trace the program (a dynamic model,
//! the constants-included or no-Jacobian densities, constraining without an output plan) run
//! on a thread with `EVALUATION_STACK_BYTES` of stack, as the CLI's do; a static model's
//! sampler density runs on the calling thread (its graph sweep does not recurse).

use hazel_data::DataFile;
use hazel_density::{EvalError, LogDensity, Model, StreamRng, EVALUATION_STACK_BYTES};
use hazel_graph::{CompileError, CompileOptions, CompiledModel, OutputColumns, Workspace};
use hazel_rng::Purpose;
use hazel_syntax::diagnostic::render_all_plain;
use hazel_syntax::{Diagnostic, SourceMap};
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1};
use pyo3::create_exception;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

mod sampling;

create_exception!(
    _hazel,
    HazelError,
    PyRuntimeError,
    "An error reported by hazel (a RuntimeError, as BridgeStan raises)."
);
create_exception!(
    _hazel,
    ModelError,
    HazelError,
    "The Stan program does not parse, check or build."
);
create_exception!(
    _hazel,
    DataError,
    HazelError,
    "The data (or constrained values) do not match the declarations; the message names the \
     variable."
);
create_exception!(
    _hazel,
    EvaluationError,
    HazelError,
    "The log density or the constrained values could not be computed at a point."
);

/// A float64 numpy array owned by Python.
type Array<'py> = Bound<'py, PyArray1<f64>>;

/// Points evaluated together by the batched executor: its lane count.
const BATCH: usize = hazel_graph::exec::DEFAULT_LANES;

/// Runs `f` on a thread with the evaluation stack (deep programs recurse while tracing).
fn on_deep_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("hazel-eval".into())
            .stack_size(EVALUATION_STACK_BYTES)
            .spawn_scoped(scope, f);
        match worker {
            Ok(handle) => match handle.join() {
                Ok(value) => value,
                Err(panic) => std::panic::resume_unwind(panic),
            },
            Err(e) => panic!("could not start an evaluation thread: {e}"),
        }
    })
}

/// A failure to build a model: which exception, and the message (rendered diagnostics).
enum BuildError {
    Model(String),
    Data(String),
}

impl BuildError {
    fn into_py(self) -> PyErr {
        match self {
            BuildError::Model(m) => ModelError::new_err(m),
            BuildError::Data(m) => DataError::new_err(m),
        }
    }
}

/// A compile error as the CLI reports it: the message (naming the data variable, after
/// `data_label`) at its place in the program when it has one.
fn render_compile_error(
    error: &CompileError,
    sources: &SourceMap,
    data_label: Option<&str>,
) -> BuildError {
    let message = match (&error.variable, data_label) {
        (Some(_), Some(label)) => format!("{label}: {}", error.naming_variable()),
        (Some(_), None) => format!(
            "{} (no data were given: pass data=…)",
            error.naming_variable()
        ),
        (None, _) => error.message.clone(),
    };
    let rendered = match error.span {
        Some(span) => {
            let label = if error.variable.is_some() {
                "declared here"
            } else {
                "here"
            };
            Diagnostic::error(span, message)
                .with_primary_label(label)
                .render_plain(sources)
        }
        None => format!("error: {message}"),
    };
    let rendered = rendered.trim_end().to_string();
    if error.variable.is_some() {
        BuildError::Data(rendered)
    } else {
        BuildError::Model(rendered)
    }
}

/// What `build` returns: the model, its sources and the warnings to show.
struct Built {
    model: CompiledModel,
    warnings: Vec<String>,
}

fn build(
    name: &str,
    path: Option<PathBuf>,
    code: Option<String>,
    data_json: Option<String>,
    data_label: Option<String>,
    seed: u64,
    include_paths: Vec<PathBuf>,
) -> Result<Built, BuildError> {
    let mut result = match (&path, &code) {
        (Some(path), _) => hazel_check::check_file(path, &include_paths)
            .map_err(|e| BuildError::Model(format!("cannot read {}: {e}", path.display())))?,
        (None, Some(code)) => hazel_check::check_source(&format!("{name}.stan"), code),
        (None, None) => return Err(BuildError::Model("give a Stan file or code=".into())),
    };
    if let Some(checked) = &result.checked {
        let unsupported = hazel_graph::unsupported_call_diagnostics(checked);
        result.diagnostics.extend(unsupported);
    }
    let (errors, warnings): (Vec<Diagnostic>, Vec<Diagnostic>) =
        result.diagnostics.into_iter().partition(|d| d.is_error());
    let warnings = warnings
        .iter()
        .map(|w| w.render_plain(&result.sources).trim_end().to_string())
        .collect();
    let checked = match result.checked {
        Some(checked) if errors.is_empty() => checked,
        _ => {
            let n = errors.len().max(1);
            let plural = if n == 1 { "" } else { "s" };
            let what = path
                .as_ref()
                .map_or_else(|| format!("{name}.stan"), |p| p.display().to_string());
            return Err(BuildError::Model(format!(
                "{}\ncould not check {what} ({n} error{plural})",
                render_all_plain(&errors, &result.sources).trim_end()
            )));
        }
    };
    let data = match &data_json {
        Some(text) => DataFile::parse(text).map_err(|e| {
            BuildError::Data(format!("{}: {e}", data_label.as_deref().unwrap_or("data")))
        })?,
        None => DataFile::empty(),
    };
    let sources = Arc::new(result.sources);
    let options = CompileOptions {
        seed,
        sources: Some(sources.clone()),
        ..CompileOptions::default()
    };
    let model = hazel_graph::compile(&checked, &data, &options)
        .map_err(|e| render_compile_error(&e, &sources, data_label.as_deref()))?;
    Ok(Built { model, warnings })
}

/// Builds a model from a Stan file (`path`) or program text (`code`) and CmdStan JSON data;
/// returns it with the checker's warnings. `data_label` names the data in messages
/// (`data file d.json`, or `data`).
#[pyfunction]
#[pyo3(signature = (name, path=None, code=None, data=None, data_label=None, seed=1, include_paths=Vec::new()))]
#[allow(clippy::too_many_arguments)]
fn compile(
    py: Python<'_>,
    name: String,
    path: Option<PathBuf>,
    code: Option<String>,
    data: Option<String>,
    data_label: Option<String>,
    seed: u64,
    include_paths: Vec<PathBuf>,
) -> PyResult<(CompiledStan, Vec<String>)> {
    let built = py
        .detach(|| {
            on_deep_stack(|| build(&name, path, code, data, data_label, seed, include_paths))
        })
        .map_err(BuildError::into_py)?;
    let model = built.model;
    let unconstrained_names = model
        .unconstrained_names()
        .map_err(|e| ModelError::new_err(e.message))?;
    Ok((
        CompiledStan {
            columns: model.output_columns(),
            output_names: model.output_names(),
            unconstrained_names,
            model: Arc::new(model),
            pool: Mutex::new(Vec::new()),
        },
        built.warnings,
    ))
}

/// A random stream for generated quantities (BridgeStan's `StanRNG`): hazel's stream for
/// `(seed, chain 0, generated quantities)`, advanced by every use.
#[pyclass(module = "hazel._hazel", name = "Rng", frozen)]
struct Rng {
    stream: Mutex<StreamRng>,
    seed: u64,
}

#[pymethods]
impl Rng {
    #[new]
    fn new(seed: u64) -> Self {
        Rng {
            stream: Mutex::new(StreamRng::new(seed, 0, Purpose::GeneratedQuantities)),
            seed,
        }
    }
    fn __repr__(&self) -> String {
        format!("hazel.Rng(seed={})", self.seed)
    }
}

/// A compiled model over flat buffers (the Python class `hazel.Model` wraps it).
#[pyclass(module = "hazel._hazel", frozen)]
pub(crate) struct CompiledStan {
    pub(crate) model: Arc<CompiledModel>,
    columns: OutputColumns,
    output_names: Vec<String>,
    unconstrained_names: Vec<String>,
    /// Workspaces between calls (one per point of a batch).
    pool: Mutex<Vec<Workspace>>,
}

impl CompiledStan {
    /// `n` workspaces from the pool (made as needed); give them back with `put`.
    fn take(&self, n: usize) -> Vec<Workspace> {
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        let keep = pool.len().saturating_sub(n);
        let mut taken = pool.split_off(keep);
        drop(pool);
        while taken.len() < n {
            taken.push(self.model.new_workspace());
        }
        taken
    }

    fn put(&self, workspaces: Vec<Workspace>) {
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        pool.extend(workspaces);
        pool.truncate(BATCH);
    }

    /// Whether the density with these terms re-traces the program at every evaluation.
    fn retraces(&self, propto: bool, jacobian: bool) -> bool {
        self.model.is_dynamic() || !(propto && jacobian)
    }

    /// Log densities and gradients of the `qs.len() / dim` points in `qs` (row-major), the
    /// sampler's density through the batched executor in groups of [`BATCH`], the others
    /// point by point. The first failing point's error, with its (0-based) index.
    fn evaluate(
        &self,
        qs: &[f64],
        propto: bool,
        jacobian: bool,
        lps: &mut [f64],
        grads: &mut [f64],
    ) -> Result<(), (usize, EvalError)> {
        let d = self.model.dim();
        let n = lps.len();
        if !self.retraces(propto, jacobian) && n > 1 {
            let mut ws = self.take(BATCH.min(n));
            let mut results: Vec<Result<f64, EvalError>> = vec![Ok(0.0); BATCH];
            let mut failure = None;
            for start in (0..n).step_by(BATCH) {
                let k = BATCH.min(n - start);
                let out = &mut results[..k];
                self.model.log_density_gradient_batch(
                    &mut ws[..k],
                    &qs[start * d..(start + k) * d],
                    &mut grads[start * d..(start + k) * d],
                    out,
                );
                for (i, r) in out.iter().enumerate() {
                    match r {
                        Ok(lp) => lps[start + i] = *lp,
                        Err(e) => {
                            lps[start + i] = f64::NAN;
                            failure.get_or_insert_with(|| (start + i, e.clone()));
                        }
                    }
                }
                if failure.is_some() {
                    break;
                }
            }
            self.put(ws);
            return failure.map_or(Ok(()), Err);
        }
        let mut run = || {
            let mut ws = self.take(1);
            let mut result = Ok(());
            for i in 0..n {
                let q = &qs[i * d..(i + 1) * d];
                let g = &mut grads[i * d..(i + 1) * d];
                match self
                    .model
                    .log_density_with(&mut ws[0], q, g, jacobian, propto)
                {
                    Ok(lp) => lps[i] = lp,
                    Err(e) => {
                        result = Err((i, e));
                        break;
                    }
                }
            }
            self.put(ws);
            result
        };
        if self.retraces(propto, jacobian) {
            on_deep_stack(run)
        } else {
            run()
        }
    }
}

/// An evaluation error as a Python exception: the message with the model line, and the
/// point's number when several were evaluated.
fn eval_error(index: usize, n: usize, error: &EvalError) -> PyErr {
    if n > 1 {
        EvaluationError::new_err(format!("point {} of {n}: {error}", index + 1))
    } else {
        EvaluationError::new_err(error.to_string())
    }
}

/// Checks that a flat buffer holds `n` rows of `width`.
fn check_len(what: &str, len: usize, n: usize, width: usize) -> PyResult<()> {
    if len != n * width {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "{what} has {len} values, expected {n} × {width}"
        )));
    }
    Ok(())
}

#[pymethods]
impl CompiledStan {
    /// Number of unconstrained parameters.
    fn dim(&self) -> usize {
        self.model.dim()
    }

    /// Output columns (CmdStan's `a.1.2` names): parameters, transformed parameters,
    /// generated quantities.
    fn output_names(&self) -> Vec<String> {
        self.output_names.clone()
    }

    /// Columns per block: (parameters, transformed parameters, generated quantities).
    fn output_columns(&self) -> (usize, usize, usize) {
        let c = self.columns;
        (
            c.parameters,
            c.transformed_parameters,
            c.generated_quantities,
        )
    }

    /// The output variables in order, each with its number of columns.
    fn output_variables(&self) -> Vec<(String, usize)> {
        self.model.output_variables().to_vec()
    }

    fn unconstrained_names(&self) -> Vec<String> {
        self.unconstrained_names.clone()
    }

    /// Whether every evaluation re-traces the program (control flow reads parameters).
    fn is_dynamic(&self) -> bool {
        self.model.is_dynamic()
    }

    /// Starts sampling on a thread of its own and returns the running job
    /// (`sampling::SampleRun`).
    #[pyo3(signature = (*, chains, warmup, draws, seed, threads, adapt_delta, max_depth, thin, metric, adaptation, init, inits, save_warmup, algorithm))]
    #[allow(clippy::too_many_arguments)]
    fn sample(
        &self,
        chains: usize,
        warmup: usize,
        draws: usize,
        seed: u64,
        threads: usize,
        adapt_delta: f64,
        max_depth: u32,
        thin: usize,
        metric: Option<&str>,
        adaptation: Option<&str>,
        init: Option<&str>,
        inits: Option<Vec<String>>,
        save_warmup: bool,
        algorithm: &str,
    ) -> PyResult<sampling::SampleRun> {
        self.start_sampling(
            chains,
            warmup,
            draws,
            seed,
            threads,
            adapt_delta,
            max_depth,
            thin,
            metric,
            adaptation,
            init,
            inits,
            save_warmup,
            algorithm,
        )
    }

    /// Whether transformed data drew random numbers (another seed builds another model).
    fn transformed_data_is_random(&self) -> bool {
        self.model.transformed_data_is_random()
    }

    /// Log densities and gradients at `n` points (`qs` row-major `n × dim`): `(lps, grads)`.
    fn log_density_gradient<'py>(
        &self,
        py: Python<'py>,
        qs: PyReadonlyArray1<'py, f64>,
        n: usize,
        propto: bool,
        jacobian: bool,
    ) -> PyResult<(Array<'py>, Array<'py>)> {
        let d = self.model.dim();
        let qs = qs.as_slice()?.to_vec();
        check_len("theta_unc", qs.len(), n, d)?;
        let (lps, grads, result) = py.detach(|| {
            let mut lps = vec![0.0; n];
            let mut grads = vec![0.0; n * d];
            let result = self.evaluate(&qs, propto, jacobian, &mut lps, &mut grads);
            (lps, grads, result)
        });
        result.map_err(|(i, e)| eval_error(i, n, &e))?;
        Ok((PyArray1::from_vec(py, lps), PyArray1::from_vec(py, grads)))
    }

    /// Log density, gradient and Hessian (row-major) at one point, the Hessian by central
    /// differences of gradients as Stan Math's `finite_diff_hessian_auto` (BridgeStan's
    /// default): step `ε_i = ∛machine-ε · max(1, |q_i|)` in coordinate `i`, and
    /// `H_ij = (g_j(q + ε_i e_i) − g_j(q − ε_i e_i)) / 4ε_i + (g_i(q + ε_j e_j) − g_i(q − ε_j
    /// e_j)) / 4ε_j`, symmetric by construction. The 2·dim gradients are one batch.
    fn log_density_hessian<'py>(
        &self,
        py: Python<'py>,
        q: PyReadonlyArray1<'py, f64>,
        propto: bool,
        jacobian: bool,
    ) -> PyResult<(f64, Array<'py>, Array<'py>)> {
        let d = self.model.dim();
        let q = q.as_slice()?.to_vec();
        check_len("theta_unc", q.len(), 1, d)?;
        let outcome = py.detach(|| -> Result<(f64, Vec<f64>, Vec<f64>), EvalError> {
            let mut lp = [0.0];
            let mut grad = vec![0.0; d];
            self.evaluate(&q, propto, jacobian, &mut lp, &mut grad)
                .map_err(|(_, e)| e)?;
            let eps: Vec<f64> = q
                .iter()
                .map(|x| f64::EPSILON.cbrt() * x.abs().max(1.0))
                .collect();
            // Rows 0..d: q + ε_i e_i; rows d..2d: q − ε_i e_i.
            let mut points = Vec::with_capacity(2 * d * d);
            for sign in [1.0, -1.0] {
                for i in 0..d {
                    let mut p = q.clone();
                    p[i] += sign * eps[i];
                    points.extend_from_slice(&p);
                }
            }
            let mut lps = vec![0.0; 2 * d];
            let mut grads = vec![0.0; 2 * d * d];
            self.evaluate(&points, propto, jacobian, &mut lps, &mut grads)
                .map_err(|(_, e)| e)?;
            let g_plus = |i: usize, j: usize| grads[i * d + j];
            let g_minus = |i: usize, j: usize| grads[(d + i) * d + j];
            let mut hess = vec![0.0; d * d];
            for i in 0..d {
                for j in i..d {
                    let h = (g_plus(j, i) - g_minus(j, i)) / (4.0 * eps[j])
                        + (g_plus(i, j) - g_minus(i, j)) / (4.0 * eps[i]);
                    hess[j * d + i] = h;
                    hess[i * d + j] = h;
                }
            }
            Ok((lp[0], grad, hess))
        });
        let (lp, grad, hess) = outcome.map_err(|e| eval_error(0, 1, &e))?;
        Ok((
            lp,
            PyArray1::from_vec(py, grad),
            PyArray1::from_vec(py, hess),
        ))
    }

    /// Log density and Hessian-vector product at one point, by central differences of
    /// gradients along `v` as Stan Math's `finite_diff_hessian_times_vector_auto` (BridgeStan's
    /// default): `ε = √machine-ε · (1 + ‖q‖) / ‖v‖`, `Hv = (g(q + εv) − g(q − εv)) / 2ε`.
    fn log_density_hessian_vector_product<'py>(
        &self,
        py: Python<'py>,
        q: PyReadonlyArray1<'py, f64>,
        v: PyReadonlyArray1<'py, f64>,
        propto: bool,
        jacobian: bool,
    ) -> PyResult<(f64, Array<'py>)> {
        let d = self.model.dim();
        let q = q.as_slice()?.to_vec();
        let v = v.as_slice()?.to_vec();
        check_len("theta_unc", q.len(), 1, d)?;
        check_len("v", v.len(), 1, d)?;
        let outcome = py.detach(|| -> Result<(f64, Vec<f64>), EvalError> {
            let norm = |x: &[f64]| x.iter().map(|a| a * a).sum::<f64>().sqrt();
            let eps = f64::EPSILON.sqrt() * (1.0 + norm(&q)) / norm(&v);
            // The point itself, then q + εv and q − εv, as one batch.
            let mut points = q.clone();
            for sign in [1.0, -1.0] {
                points.extend(q.iter().zip(&v).map(|(x, vi)| x + sign * eps * vi));
            }
            let mut lps = vec![0.0; 3];
            let mut grads = vec![0.0; 3 * d];
            self.evaluate(&points, propto, jacobian, &mut lps, &mut grads)
                .map_err(|(_, e)| e)?;
            let hv = (0..d)
                .map(|j| (grads[d + j] - grads[2 * d + j]) / (2.0 * eps))
                .collect();
            Ok((lps[0], hv))
        });
        let (lp, hv) = outcome.map_err(|e| eval_error(0, 1, &e))?;
        Ok((lp, PyArray1::from_vec(py, hv)))
    }

    /// Constrained values at `n` unconstrained points (row-major): parameters, then the
    /// transformed parameters and/or generated quantities when asked (`rng` needed for them).
    #[pyo3(signature = (qs, n, include_tp, include_gq, rng=None))]
    fn constrain<'py>(
        &self,
        py: Python<'py>,
        qs: PyReadonlyArray1<'py, f64>,
        n: usize,
        include_tp: bool,
        include_gq: bool,
        rng: Option<&Rng>,
    ) -> PyResult<Array<'py>> {
        let d = self.model.dim();
        let qs = qs.as_slice()?.to_vec();
        check_len("theta_unc", qs.len(), n, d)?;
        if include_gq && rng.is_none() {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "must specify rng when including generated quantities",
            ));
        }
        let width = self.columns.count(include_tp, include_gq);
        let outcome = py.detach(|| {
            on_deep_stack(|| -> Result<Vec<f64>, (usize, EvalError)> {
                let mut ws = self.take(1);
                let mut out = vec![0.0; n * width];
                let mut stream = rng.map(|r| r.stream.lock().unwrap_or_else(|e| e.into_inner()));
                let mut result = Ok(());
                for i in 0..n {
                    if let Err(e) = self.model.write_constrained(
                        &mut ws[0],
                        &qs[i * d..(i + 1) * d],
                        include_tp,
                        include_gq,
                        stream.as_deref_mut(),
                        &mut out[i * width..(i + 1) * width],
                    ) {
                        result = Err((i, e));
                        break;
                    }
                }
                drop(stream);
                self.put(ws);
                result.map(|()| out)
            })
        });
        let out = outcome.map_err(|(i, e)| eval_error(i, n, &e))?;
        Ok(PyArray1::from_vec(py, out))
    }

    /// Unconstrained points of `n` rows of constrained parameter values (the parameters'
    /// output columns, row-major).
    fn unconstrain<'py>(
        &self,
        py: Python<'py>,
        thetas: PyReadonlyArray1<'py, f64>,
        n: usize,
    ) -> PyResult<Array<'py>> {
        let p = self.columns.parameters;
        let thetas = thetas.as_slice()?.to_vec();
        check_len("theta", thetas.len(), n, p)?;
        let outcome = py.detach(|| {
            on_deep_stack(|| -> Result<Vec<f64>, (usize, CompileError)> {
                let mut out = Vec::with_capacity(n * self.model.dim());
                for i in 0..n {
                    let q = self
                        .model
                        .unconstrain_columns(&thetas[i * p..(i + 1) * p])
                        .map_err(|e| (i, e))?;
                    out.extend(q);
                }
                Ok(out)
            })
        });
        let out = outcome.map_err(|(i, e)| {
            let message = e.naming_variable();
            DataError::new_err(if n > 1 {
                format!("point {} of {n}: {message}", i + 1)
            } else {
                message
            })
        })?;
        Ok(PyArray1::from_vec(py, out))
    }

    /// A starting point (BridgeStan's `param_initialize`): the parameters `text` (CmdStan JSON,
    /// possibly empty) gives, the others uniform in (−radius, radius) on the unconstrained scale
    /// from `rng`, retried up to `max_tries` times until the log density and its gradient are
    /// finite.
    fn initialize<'py>(
        &self,
        py: Python<'py>,
        rng: &Rng,
        text: Option<String>,
        radius: f64,
        max_tries: usize,
        jacobian: bool,
    ) -> PyResult<Array<'py>> {
        let outcome = py.detach(|| {
            on_deep_stack(|| -> Result<Vec<f64>, PyErr> {
                let values = match &text {
                    Some(text) => {
                        DataFile::parse(text).map_err(|e| DataError::new_err(e.to_string()))?
                    }
                    None => DataFile::empty(),
                };
                let mut stream = rng.stream.lock().unwrap_or_else(|e| e.into_inner());
                let mut ws = self.take(1);
                let mut grad = vec![0.0; self.model.dim()];
                let mut last = String::from("no attempt was made");
                for _ in 0..max_tries.max(1) {
                    let q = self
                        .model
                        .unconstrain_inits(&values, || stream.uniform_range(-radius, radius))
                        .map_err(|e| DataError::new_err(e.naming_variable()))?;
                    match self
                        .model
                        .log_density_with(&mut ws[0], &q, &mut grad, jacobian, true)
                    {
                        Ok(lp) if lp.is_finite() && grad.iter().all(|g| g.is_finite()) => {
                            self.put(ws);
                            return Ok(q);
                        }
                        Ok(lp) => {
                            last = format!("the log density is {lp} or its gradient is not finite")
                        }
                        Err(e) => last = e.to_string(),
                    }
                }
                self.put(ws);
                Err(EvaluationError::new_err(format!(
                    "no finite starting point in {max_tries} tries: {last}"
                )))
            })
        });
        Ok(PyArray1::from_vec(py, outcome?))
    }

    /// The unconstrained point of constrained parameter values in CmdStan JSON.
    fn unconstrain_json<'py>(&self, py: Python<'py>, text: String) -> PyResult<Array<'py>> {
        let outcome = py.detach(|| {
            on_deep_stack(|| -> Result<Vec<f64>, String> {
                let values = DataFile::parse(&text).map_err(|e| e.to_string())?;
                self.model
                    .unconstrain_json(&values)
                    .map_err(|e| e.naming_variable())
            })
        });
        let q = outcome.map_err(DataError::new_err)?;
        Ok(PyArray1::from_vec(py, q))
    }
}

/// The output variables of CmdStan-style column names, as `hazel summary` and the Zarr
/// writer group them: `(name, shape, columns)` with each element's column in C order.
#[pyfunction]
fn variables(names: Vec<String>) -> Vec<(String, Vec<u64>, Vec<usize>)> {
    hazel_output::layout::variables(&names)
        .into_iter()
        .map(|v| (v.name, v.shape, v.columns))
        .collect()
}

/// One chain's draws as the Python half reads them (`hazel/_inference.py`): a dict with
/// `chain_id`, `stat_names`, `names`, `warmup_stats`, `warmup_values`, `sampling_stats`,
/// `sampling_values` (2-D arrays, columns × draws), `stepsize` and `inv_metric` (a vector for
/// a diagonal metric, a matrix for a dense one, or None).
pub(crate) struct ChainTables<'a> {
    pub chain_id: u64,
    pub stat_names: Vec<String>,
    pub names: &'a [String],
    /// (statistics, values), each a list of columns.
    pub warmup: (&'a [Vec<f64>], &'a [Vec<f64>]),
    pub sampling: (&'a [Vec<f64>], &'a [Vec<f64>]),
    pub stepsize: Option<f64>,
    /// (values, dimension when dense).
    pub inv_metric: Option<(&'a [f64], Option<usize>)>,
}

/// Columns × draws as a 2-D array (`n_rows` draws when there are no columns).
fn columns_array<'py>(
    py: Python<'py>,
    columns: &[Vec<f64>],
    n_rows: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let n = columns.first().map_or(n_rows, Vec::len);
    let mut flat = Vec::with_capacity(columns.len() * n);
    for column in columns {
        flat.extend_from_slice(&column[..n.min(column.len())]);
        flat.extend(std::iter::repeat_n(
            f64::NAN,
            n.saturating_sub(column.len()),
        ));
    }
    Ok(PyArray1::from_vec(py, flat)
        .reshape([columns.len(), n])?
        .into_any())
}

impl ChainTables<'_> {
    pub(crate) fn to_dict<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        use pyo3::types::PyDict;
        let dict = PyDict::new(py);
        dict.set_item("chain_id", self.chain_id)?;
        dict.set_item("stat_names", &self.stat_names)?;
        dict.set_item("names", self.names)?;
        let rows = |table: (&[Vec<f64>], &[Vec<f64>])| {
            table.0.first().or(table.1.first()).map_or(0, Vec::len)
        };
        for (label, table) in [("warmup", self.warmup), ("sampling", self.sampling)] {
            let n = rows(table);
            dict.set_item(format!("{label}_stats"), columns_array(py, table.0, n)?)?;
            dict.set_item(format!("{label}_values"), columns_array(py, table.1, n)?)?;
        }
        dict.set_item("stepsize", self.stepsize)?;
        match self.inv_metric {
            None => dict.set_item("inv_metric", py.None())?,
            Some((values, None)) => {
                dict.set_item("inv_metric", PyArray1::from_slice(py, values))?
            }
            Some((values, Some(dim))) => dict.set_item(
                "inv_metric",
                PyArray1::from_slice(py, values).reshape([dim, dim])?,
            )?,
        }
        Ok(dict)
    }
}

/// The chains of Stan CSV files, read as `hazel summary` reads them (saved warmup draws
/// included).
#[pyfunction]
fn read_csv<'py>(
    py: Python<'py>,
    paths: Vec<PathBuf>,
) -> PyResult<Vec<Bound<'py, pyo3::types::PyDict>>> {
    let chains = py
        .detach(|| hazel_output::read_draws(&paths))
        .map_err(|e| HazelError::new_err(e.to_string()))?;
    chains
        .iter()
        .map(|chain| sampling::chain_dict(py, &chain.to_chain_draws()))
        .collect()
}

#[pymodule]
fn _hazel(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_function(wrap_pyfunction!(variables, m)?)?;
    m.add_function(wrap_pyfunction!(read_csv, m)?)?;
    m.add_class::<CompiledStan>()?;
    m.add_class::<Rng>()?;
    m.add_class::<sampling::SampleRun>()?;
    let py = m.py();
    m.add("HazelError", py.get_type::<HazelError>())?;
    m.add("ModelError", py.get_type::<ModelError>())?;
    m.add("DataError", py.get_type::<DataError>())?;
    m.add("EvaluationError", py.get_type::<EvaluationError>())?;
    Ok(())
}
