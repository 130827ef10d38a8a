//! Lowering of the elementwise special functions of three or more arguments
//! (`crate::nary::MathNary`: `inc_beta`, `inv_inc_beta`, …): Stan's vectorised forms take
//! scalars and containers of one shape, scalars broadcast; the call is one
//! [`crate::tape::Op::Nary`], or a constant when every argument is data.

use super::trace::{eerr, TraceErr, Tracer, R};
use super::value::{Elems, Val};
use crate::nary::MathNary;
use hazel_density::EvalError;
use hazel_syntax::Span;
use std::sync::Arc;

impl<'p> Tracer<'p> {
    /// `f(args…)` elementwise.
    pub fn map_nary(&mut self, f: MathNary, args: &[Val], span: Span) -> R<Val> {
        let name = f.name();
        let like = args
            .iter()
            .find(|a| !matches!(a, Val::Int(_) | Val::Real(_)))
            .cloned()
            .unwrap_or(Val::real(0.0));
        let elems: Vec<Elems> = args.iter().map(|a| self.to_elems(a)).collect();
        let n = elems.iter().map(|e| e.len()).max().unwrap_or(1);
        for (k, (a, e)) in args.iter().zip(&elems).enumerate() {
            let scalar = matches!(a, Val::Int(_) | Val::Real(_));
            if !scalar && a.dims() != like.dims() {
                return eerr(
                    format!(
                        "{name}: argument {} has dimensions {:?}, argument 1 of the vectorised call {:?}",
                        k + 1,
                        a.dims(),
                        like.dims()
                    ),
                    span,
                );
            }
            if e.len() != 1 && e.len() != n {
                return eerr(format!("{name}: size mismatch of argument {}", k + 1), span);
            }
        }
        if n == 0 {
            return Ok(Self::with_shape(&like, Elems::C(Arc::new(Vec::new()))));
        }
        if elems.iter().all(|e| e.is_const()) {
            let cs: Vec<Vec<f64>> = elems
                .iter()
                .map(|e| e.consts().unwrap_or_default())
                .collect();
            let mut out = vec![0.0; n];
            // The same rule as the op: evaluate through the op's forward function on constants.
            let consts: Vec<f64> = cs.iter().flatten().copied().collect();
            let mut off = 0;
            let cargs: Vec<crate::tape::Arg> = cs
                .iter()
                .map(|c| {
                    let a = crate::tape::Arg::konst(off, c.len());
                    off += c.len();
                    a
                })
                .collect();
            crate::nary::forward(f, &cargs, &[], &consts, &mut out)
                .map_err(|e: EvalError| TraceErr::Eval(e, span))?;
            return Ok(Self::with_shape(&like, Elems::C(Arc::new(out))));
        }
        let argv: Vec<crate::tape::Arg> = elems
            .iter()
            .map(|e| {
                if e.len() == 1 {
                    self.sc_arg(e.get(0))
                } else {
                    self.elems_arg(e)
                }
            })
            .collect();
        let out = self.b.nary(f, argv);
        Ok(Self::with_shape(&like, Elems::V(out)))
    }
}
