//! Compressed-sparse-row functions: `csr_extract_w/_v/_u`, `csr_extract`,
//! `csr_to_dense_matrix`, `csr_matrix_times_vector`.
//!
//! The sparsity pattern (`v`, `u`) is integer data, so products are fixed gathers: the
//! matrix × vector product is one elementwise product of `w` with the gathered `b` and one
//! constant 0/1 row-sum matrix × vector op. Extracting from a parameter matrix reads which
//! entries are non-zero, a value, so it takes the dynamic path (as Stan's result size
//! depends on the values).

use super::trace::{cerr, eerr, Tracer, R};
use super::value::{Elems, Sc, Val};
use crate::kernels::BinaryFn;
use hazel_syntax::Span;
use std::sync::Arc;

pub(crate) fn is_csr_fn(name: &str) -> bool {
    name.starts_with("csr_")
}

impl<'p> Tracer<'p> {
    pub(crate) fn csr_call(&mut self, name: &str, args: &[Val], span: Span) -> R<Val> {
        match name {
            "csr_extract_w" | "csr_extract_v" | "csr_extract_u" | "csr_extract" => {
                let Some(Val::Matrix(r, c, e)) = args.first() else {
                    return cerr(format!("{name}: expected a matrix"), span);
                };
                let (r, c) = (*r, *c);
                let mut w = Vec::new();
                let mut v = Vec::new();
                let mut u = vec![1i64];
                for i in 0..r {
                    for j in 0..c {
                        let s = e.get(i + j * r);
                        if self.value_of(s, span)? != 0.0 {
                            w.push(s);
                            v.push(Val::Int(j as i64 + 1));
                        }
                    }
                    u.push(w.len() as i64 + 1);
                }
                let w = Val::Vector(Elems::from_scalars_or_empty(w));
                let v = Val::array(v);
                let u = Val::array(u.into_iter().map(Val::Int).collect());
                Ok(match name {
                    "csr_extract_w" => w,
                    "csr_extract_v" => v,
                    "csr_extract_u" => u,
                    _ => Val::Tuple(Arc::new(vec![w, v, u])),
                })
            }
            "csr_to_dense_matrix" | "csr_matrix_times_vector" => {
                let m = self.as_int(&args[0], span)?;
                let n = self.as_int(&args[1], span)?;
                let w = self.to_elems(&args[2]);
                let v = self.int_list(&args[3], span)?;
                let u = self.int_list(&args[4], span)?;
                let (m, n) = self.check_csr(name, m, n, &w, &v, &u, span)?;
                if name == "csr_to_dense_matrix" {
                    let mut sc = vec![Sc::C(0.0); m * n];
                    for i in 0..m {
                        let row = (u[i] - 1) as usize..(u[i + 1] - 1) as usize;
                        for (k, &j) in v.iter().enumerate().take(row.end).skip(row.start) {
                            sc[i + (j - 1) as usize * m] = w.get(k);
                        }
                    }
                    return Ok(Val::Matrix(m, n, Elems::from_scalars_or_empty(sc)));
                }
                let b = self.to_elems(&args[5]);
                if b.len() != n {
                    return eerr(
                        format!(
                            "{name}: b has size {}, but must have n = {n} elements",
                            b.len()
                        ),
                        span,
                    );
                }
                let nnz = w.len();
                if nnz == 0 {
                    return Ok(Val::Vector(Elems::C(Arc::new(vec![0.0; m]))));
                }
                // w .* b[v], then row sums through a constant m × nnz 0/1 matrix.
                let gathered = b.select(&v.iter().map(|&j| (j - 1) as usize).collect::<Vec<_>>());
                let prod = self.elems_binary(BinaryFn::Mul, &w, &gathered);
                let mut rows = vec![0.0; m * nnz];
                for i in 0..m {
                    for k in (u[i] - 1) as usize..(u[i + 1] - 1) as usize {
                        rows[i + k * m] = 1.0;
                    }
                }
                let out = self.matmul(
                    &Val::Matrix(m, nnz, Elems::C(Arc::new(rows))),
                    &Val::Vector(prod),
                    span,
                )?;
                Ok(out)
            }
            _ => cerr(format!("function '{name}' is not supported"), span),
        }
    }

    fn int_list(&self, v: &Val, span: Span) -> R<Vec<i64>> {
        match v {
            Val::Array(xs) => xs.iter().map(|x| self.as_int(x, span)).collect(),
            _ => cerr("expected an array of integers", span),
        }
    }

    /// Stan's checks of a CSR triple for an `m × n` matrix.
    #[allow(clippy::too_many_arguments)]
    fn check_csr(
        &self,
        name: &str,
        m: i64,
        n: i64,
        w: &Elems,
        v: &[i64],
        u: &[i64],
        span: Span,
    ) -> R<(usize, usize)> {
        if m < 1 || n < 1 {
            return eerr(
                format!("{name}: m and n must be positive, found {m} and {n}"),
                span,
            );
        }
        if u.len() != m as usize + 1 {
            return eerr(
                format!(
                    "{name}: u has size {}, but must have m + 1 = {} elements",
                    u.len(),
                    m + 1
                ),
                span,
            );
        }
        if v.len() != w.len() {
            return eerr(
                format!(
                    "{name}: v has size {} and w has size {}, but they must match",
                    v.len(),
                    w.len()
                ),
                span,
            );
        }
        if u[0] != 1 || u[m as usize] - 1 != w.len() as i64 || u.windows(2).any(|p| p[1] < p[0]) {
            return eerr(
                format!(
                    "{name}: u must start at 1, not decrease and end at size(w) + 1 = {}",
                    w.len() + 1
                ),
                span,
            );
        }
        if let Some(j) = v.iter().find(|&&j| j < 1 || j > n) {
            return eerr(
                format!("{name}: column index {j} is out of range [1, {n}]"),
                span,
            );
        }
        Ok((m as usize, n as usize))
    }
}
