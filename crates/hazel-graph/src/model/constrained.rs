//! Constrained values in and out of a compiled model: what BridgeStan's model interface offers
//! on top of the log density (output columns by block, constraining a point with a choice of
//! blocks, unconstraining flat values or CmdStan JSON, names of the unconstrained
//! coordinates). The Python package (`python/`) is built on these.

use super::{trace_to_compile, CompiledModel, OutputBlocks, Workspace};
use crate::builder::GraphBuilder;
use crate::lower::params::declarations;
use crate::lower::trace::Tracer;
use hazel_data::DataFile;
use hazel_density::{EvalError, Model, StreamRng};

use super::CompileError;

/// How many output columns each block writes (the order of [`Model::output_names`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputColumns {
    pub parameters: usize,
    pub transformed_parameters: usize,
    pub generated_quantities: usize,
}

impl OutputColumns {
    /// Columns of the parameters, with the transformed parameters and/or generated quantities
    /// when asked (BridgeStan's `param_num(include_tp, include_gq)`).
    pub fn count(&self, include_tp: bool, include_gq: bool) -> usize {
        self.parameters
            + if include_tp {
                self.transformed_parameters
            } else {
                0
            }
            + if include_gq {
                self.generated_quantities
            } else {
                0
            }
    }
}

impl CompiledModel {
    /// Output columns per block.
    pub fn output_columns(&self) -> OutputColumns {
        let n_parameters = declarations(&self.checked.program.parameters).len();
        let sum = |vars: &[(String, usize)]| vars.iter().map(|(_, n)| n).sum();
        OutputColumns {
            parameters: sum(&self.outputs[..n_parameters]),
            transformed_parameters: sum(&self.outputs[n_parameters..self.n_upper_vars]),
            generated_quantities: sum(&self.outputs[self.n_upper_vars..]),
        }
    }

    /// The output variables in order, each with its number of columns.
    pub fn output_variables(&self) -> &[(String, usize)] {
        &self.outputs
    }

    /// Names of the unconstrained coordinates, as Stan's `unconstrained_param_names` (and so
    /// BridgeStan's `param_unc_names`) spells them; see
    /// [`Tracer::unconstrained_names`](crate::lower::trace::Tracer).
    pub fn unconstrained_names(&self) -> Result<Vec<String>, CompileError> {
        let mut tr = Tracer::new(GraphBuilder::new(&[]), &self.checked, self.env.clone());
        tr.sources = self.sources.clone();
        let mut names = Vec::with_capacity(self.dim);
        for d in declarations(&self.checked.program.parameters) {
            tr.unconstrained_names(&d.name, &d.ty, &mut names)
                .map_err(|e| trace_to_compile(e, "parameters"))?;
        }
        Ok(names)
    }

    /// The constrained parameters at the unconstrained point `q`, followed by the transformed
    /// parameters and/or the generated quantities when asked (BridgeStan's `param_constrain`;
    /// `out` has [`OutputColumns::count`] values). Generated quantities draw from `rng`, which
    /// they need; without them `rng` is not touched (transformed parameters draw nothing).
    pub fn write_constrained(
        &self,
        ws: &mut Workspace,
        q: &[f64],
        include_tp: bool,
        include_gq: bool,
        rng: Option<&mut StreamRng>,
        out: &mut [f64],
    ) -> Result<(), EvalError> {
        let columns = self.output_columns();
        let expected = columns.count(include_tp, include_gq);
        if q.len() != self.dim || out.len() != expected {
            return Err(EvalError::reject(format!(
                "expected {} unconstrained values and room for {expected} constrained ones, got \
                 {} and {}",
                self.dim,
                q.len(),
                out.len()
            )));
        }
        let (n_p, n_tp) = (columns.parameters, columns.transformed_parameters);
        let n_upper = n_p + n_tp;
        let row = if include_gq {
            let rng = rng.ok_or_else(|| {
                EvalError::reject("generated quantities need a random number generator")
            })?;
            let mut row = vec![0.0; self.names.len()];
            self.write_output(ws, q, rng, &mut row)?;
            row
        } else {
            self.upper_row(ws, q)?
        };
        out[..n_p].copy_from_slice(&row[..n_p]);
        let mut at = n_p;
        if include_tp {
            out[at..at + n_tp].copy_from_slice(&row[n_p..n_upper]);
            at += n_tp;
        }
        if include_gq {
            out[at..].copy_from_slice(&row[n_upper..]);
        }
        Ok(())
    }

    /// The parameters' and transformed parameters' columns at `q`, without running the
    /// generated quantities: from the compiled output plan where it has them, else re-traced.
    fn upper_row(&self, ws: &mut Workspace, q: &[f64]) -> Result<Vec<f64>, EvalError> {
        let columns = self.output_columns();
        let n_upper = columns.parameters + columns.transformed_parameters;
        if let Some(plan) = &self.output_plan {
            let mut row = vec![0.0; self.names.len()];
            // A plan's graph may hold deterministic generated quantities too; if one of them
            // fails the row is re-traced without them.
            if let Ok(n) = plan.write_static(&mut ws.out_buf, q, &mut row) {
                if n >= n_upper {
                    row.truncate(n_upper);
                    return Ok(row);
                }
            }
        }
        let mut placeholder = crate::output::placeholder_rng();
        self.trace_output_blocks(q, &mut placeholder, OutputBlocks::Upper)
    }

    /// The unconstrained point of constrained parameter values given flat, in the order of
    /// the parameters' output columns (BridgeStan's `param_unconstrain`). Values outside a
    /// parameter's support are an error naming it.
    pub fn unconstrain_columns(&self, theta: &[f64]) -> Result<Vec<f64>, CompileError> {
        let expected = self.output_columns().parameters;
        if theta.len() != expected {
            return Err(CompileError {
                message: format!(
                    "expected {expected} constrained parameter values, got {}",
                    theta.len()
                ),
                span: None,
                variable: None,
            });
        }
        let mut offset = 0;
        let mut index = 0;
        self.unconstrain_each(
            |tr, d| {
                let n = self.outputs[index].1;
                index += 1;
                let values = &theta[offset..offset + n];
                offset += n;
                let blank = tr
                    .blank(&d.ty)
                    .map_err(|e| trace_to_compile(e, "parameters"))?;
                blank
                    .with_output_columns(values)
                    .map(Some)
                    .ok_or_else(|| CompileError {
                        message: format!("`{}` has {n} output columns but another shape", d.name),
                        span: Some(d.ty.span),
                        variable: Some(d.name.clone()),
                    })
            },
            || f64::NAN,
            "constrained values",
        )
    }

    /// The unconstrained point of constrained parameter values in CmdStan JSON (BridgeStan's
    /// `param_unconstrain_json`): every parameter must be given; transformed parameters,
    /// generated quantities and `…__` entries are ignored, other names are refused as for
    /// initial values.
    pub fn unconstrain_json(&self, values: &DataFile) -> Result<Vec<f64>, CompileError> {
        for d in declarations(&self.checked.program.parameters) {
            if values.get(&d.name).is_none() {
                return Err(CompileError {
                    message: format!("parameter `{}` is missing", d.name),
                    span: Some(d.ty.span),
                    variable: Some(d.name.clone()),
                });
            }
        }
        self.unconstrain_inits(values, || f64::NAN)
    }
}
