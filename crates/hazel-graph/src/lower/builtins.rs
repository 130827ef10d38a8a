//! Built-in functions by name. Elementwise functions map over any container; everything is
//! constant-folded when its arguments are data, and otherwise emits ops (composite functions
//! like `sd` or `softmax` emit a few elementary vector ops).

use super::trace::{cerr, eerr, Flow, TraceErr, Tracer, R};
use super::value::{Elems, Sc, Val};
use crate::kernels::{BinaryFn, UnaryFn};
use crate::tape::CheckKind;
use hazel_check::{CallTarget, Type};
use hazel_syntax::Span;
use std::sync::Arc;

/// How deep user functions may call each other while a program is traced. Each call costs a
/// few KiB of stack (about 3 KiB measured); models are built and evaluated on threads with
/// `hazel_density::EVALUATION_STACK_BYTES` (1 GiB), so this leaves a wide margin.
pub const MAX_CALL_DEPTH: u32 = 100_000;

/// The elementwise op of a unary built-in (the graph's own kernels; other unary functions
/// run through `hazel_math::special`'s table).
pub(crate) fn unary_by_name(name: &str) -> Option<UnaryFn> {
    use UnaryFn::*;
    Some(match name {
        "exp" => Exp,
        "log" => Log,
        "sqrt" => Sqrt,
        "square" => Square,
        "inv" => Inv,
        "log1p" => Log1p,
        "expm1" => Expm1,
        "log1p_exp" => Log1pExp,
        "inv_logit" => InvLogit,
        "logit" => Logit,
        "log_inv_logit" => LogInvLogit,
        "log1m_inv_logit" => Log1mInvLogit,
        "log1m" => Log1m,
        "abs" => Abs,
        "sin" => Sin,
        "cos" => Cos,
        "tan" => Tan,
        "tanh" => Tanh,
        "sinh" => Sinh,
        "cosh" => Cosh,
        "asin" => Asin,
        "acos" => Acos,
        "atan" => Atan,
        "log10" => Log10,
        "log2" => Log2,
        "exp2" => Exp2,
        "inv_sqrt" => InvSqrt,
        "inv_square" => InvSquare,
        "cbrt" => Cbrt,
        "lgamma" => Lgamma,
        "digamma" => Digamma,
        "erf" => Erf,
        "erfc" => Erfc,
        "Phi" => Phi,
        "floor" => Floor,
        "ceil" => Ceil,
        "round" => Round,
        "trunc" => Trunc,
        _ => return None,
    })
}

fn binary_by_name(name: &str) -> Option<BinaryFn> {
    use BinaryFn::*;
    Some(match name {
        "pow" => Pow,
        "fmin" => Fmin,
        "fmax" => Fmax,
        "hypot" => Hypot,
        "atan2" => Atan2,
        "log_diff_exp" => LogDiffExp,
        "fdim" => Fdim,
        "lbeta" => Lbeta,
        "lchoose" | "binomial_coefficient_log" => Lchoose,
        _ => return None,
    })
}

impl<'p> Tracer<'p> {
    fn n_args(&self, name: &str, args: &[Val], n: usize, span: Span) -> R<()> {
        if args.len() != n {
            return cerr(
                format!("{name} expects {n} arguments, found {}", args.len()),
                span,
            );
        }
        Ok(())
    }

    pub(crate) fn sum_elems(&mut self, e: &Elems) -> Sc {
        if let Some(c) = e.consts() {
            return Sc::C(crate::kernels::chunked_sum(crate::simd::Isa::Baseline, &c));
        }
        if e.len() == 1 {
            return e.get(0);
        }
        let a = self.elems_arg(e);
        Sc::V(self.b.sum(a).off)
    }

    fn lse_elems(&mut self, e: &Elems) -> Sc {
        if let Some(c) = e.consts() {
            return Sc::C(crate::kernels::log_sum_exp(&c));
        }
        let a = self.elems_arg(e);
        Sc::V(self.b.log_sum_exp(a).off)
    }

    pub(crate) fn dot_elems(&mut self, a: &Elems, b: &Elems, span: Span) -> R<Sc> {
        if a.len() != b.len() {
            return eerr(
                format!("dot_product: size mismatch ({} vs {})", a.len(), b.len()),
                span,
            );
        }
        if let (Some(x), Some(y)) = (a.consts(), b.consts()) {
            return Ok(Sc::C(crate::kernels::dot(
                crate::simd::Isa::Baseline,
                &x,
                &y,
            )));
        }
        let xa = self.elems_arg(a);
        let ya = self.elems_arg(b);
        Ok(Sc::V(self.b.dot(xa, ya).off))
    }

    fn scalar_elems(&mut self, s: Sc) -> Elems {
        Elems::from_scalars(vec![s])
    }

    fn var_of(&mut self, e: &Elems, span: Span) -> R<Sc> {
        let n = e.len();
        if n < 2 {
            return eerr("variance/sd need at least two elements", span);
        }
        let s = self.sum_elems(e);
        let mean = self.sc_binary(BinaryFn::Mul, s, Sc::C(1.0 / n as f64));
        let me = self.scalar_elems(mean);
        let d = self.elems_binary(BinaryFn::Sub, e, &me);
        let ss = self.dot_elems(&d, &d, span)?;
        Ok(self.sc_binary(BinaryFn::Mul, ss, Sc::C(1.0 / (n - 1) as f64)))
    }

    fn int_arg(&self, v: &Val, span: Span) -> R<i64> {
        self.as_int(v, span)
    }

    fn size_arg(&self, v: &Val, span: Span) -> R<usize> {
        let n = self.as_int(v, span)?;
        if n < 0 {
            return eerr(format!("size must be non-negative, found {n}"), span);
        }
        Ok(n as usize)
    }

    fn scalar_sc(&self, v: &Val, name: &str, span: Span) -> R<Sc> {
        match v {
            Val::Int(i) => Ok(Sc::C(*i as f64)),
            Val::Real(s) => Ok(*s),
            _ => cerr(
                format!(
                    "{name}: expected a scalar argument, found {}",
                    v.type_name()
                ),
                span,
            ),
        }
    }

    /// A function call used as an expression.
    /// A built-in function by the name of the signature the checker resolved (user-defined
    /// functions never come here: [`Tracer::call_target`] dispatches them by overload).
    pub fn call(&mut self, name: &str, args: Vec<Val>, span: Span) -> R<Val> {
        if Self::is_complex_call(name, &args) {
            return self.complex_call(name, args, span);
        }
        if let Some(v) = self.hmm_call(name, &args, span)? {
            return Ok(v);
        }
        for (suffix, propto) in [
            ("_lpdf", false),
            ("_lpmf", false),
            ("_lupdf", true),
            ("_lupmf", true),
        ] {
            if let Some(base) = name.strip_suffix(suffix) {
                let propto = propto && self.in_lupdf;
                return Ok(Val::Real(self.density(base, args, propto, span)?));
            }
        }
        if name.ends_with("_rng") {
            return self.rng_call(name, &args, span);
        }
        for (suffix, ccdf) in [
            ("_lcdf", Some(false)),
            ("_lccdf", Some(true)),
            ("_cdf", None),
        ] {
            if let Some(base) = name.strip_suffix(suffix) {
                if base == "poisson_binomial" {
                    let tail = if ccdf == Some(true) {
                        "_lccdf"
                    } else {
                        "_lcdf"
                    };
                    let family = format!("{base}{tail}");
                    let v = self.mv_density(&family, &args, false, span)?;
                    let v = v.unwrap_or(Sc::C(f64::NAN));
                    return Ok(Val::Real(if ccdf.is_none() {
                        self.sc_unary(UnaryFn::Exp, v)
                    } else {
                        v
                    }));
                }
                let Some(kind) = crate::dists::DistKind::cdf(base, ccdf.unwrap_or(false)) else {
                    return cerr(format!("function '{name}' is not supported"), span);
                };
                let v = self.dist_sum(kind, &args, false, span)?;
                return Ok(Val::Real(if ccdf.is_none() {
                    self.sc_unary(UnaryFn::Exp, v)
                } else {
                    v
                }));
            }
        }
        // `log10()` and `log2()` are constants (ln 10, ln 2), not the unary functions.
        match (name, args.len()) {
            ("log10", 0) => return Ok(Val::real(std::f64::consts::LN_10)),
            ("log2", 0) => return Ok(Val::real(std::f64::consts::LN_2)),
            _ => {}
        }
        let unary = unary_by_name(name).or_else(|| {
            hazel_math::special::unary(name).map(|t| UnaryFn::Table(crate::kernels::MathUnary(t)))
        });
        if let Some(f) = unary {
            self.n_args(name, &args, 1, span)?;
            if let Val::Int(i) = args[0] {
                if name == "abs" {
                    return Ok(Val::Int(i.abs()));
                }
            }
            return self.map_unary(f, &args[0], span);
        }
        let binary = binary_by_name(name).or_else(|| {
            if name == "log_sum_exp" || name == "fma" || name == "log_mix" {
                None
            } else {
                hazel_math::special::binary(name)
                    .map(|t| BinaryFn::Table(crate::kernels::MathBinary(t)))
            }
        });
        if let Some(f) = binary {
            self.n_args(name, &args, 2, span)?;
            return self.map_binary(f, &args[0], &args[1], span);
        }
        // `fma` and `log_mix` are compositions below.
        let nary = crate::nary::MathNary::lookup(name, args.len());
        if let Some(f) = nary.filter(|_| name != "fma" && name != "log_mix") {
            return self.map_nary(f, &args, span);
        }
        if let Some(v) = self.hypergeometric_call(name, &args, span)? {
            return Ok(v);
        }
        match name {
            "pi" => Ok(Val::real(std::f64::consts::PI)),
            "e" => Ok(Val::real(std::f64::consts::E)),
            "sqrt2" => Ok(Val::real(std::f64::consts::SQRT_2)),
            "not_a_number" => Ok(Val::real(f64::NAN)),
            "positive_infinity" => Ok(Val::real(f64::INFINITY)),
            "negative_infinity" => Ok(Val::real(f64::NEG_INFINITY)),
            "machine_precision" => Ok(Val::real(f64::EPSILON)),
            "log_sum_exp" => {
                if args.len() == 2 {
                    return self.map_binary(BinaryFn::LogSumExp, &args[0], &args[1], span);
                }
                self.n_args(name, &args, 1, span)?;
                let e = self.to_elems(&args[0]);
                Ok(Val::Real(self.lse_elems(&e)))
            }
            "sum" => {
                self.n_args(name, &args, 1, span)?;
                if let Val::Array(xs) = &args[0] {
                    if xs.iter().all(|x| matches!(x, Val::Int(_))) {
                        return Ok(Val::Int(
                            xs.iter()
                                .map(|x| if let Val::Int(i) = x { *i } else { 0 })
                                .sum(),
                        ));
                    }
                }
                let e = self.to_elems(&args[0]);
                Ok(Val::Real(self.sum_elems(&e)))
            }
            "mean" => {
                self.n_args(name, &args, 1, span)?;
                let e = self.to_elems(&args[0]);
                if e.is_empty() {
                    return eerr("mean of an empty container", span);
                }
                let s = self.sum_elems(&e);
                Ok(Val::Real(self.sc_binary(
                    BinaryFn::Div,
                    s,
                    Sc::C(e.len() as f64),
                )))
            }
            "variance" | "sd" => {
                self.n_args(name, &args, 1, span)?;
                let e = self.to_elems(&args[0]);
                if e.is_empty() {
                    return eerr(
                        format!("{name}: x has size 0, but must have a non-zero size"),
                        span,
                    );
                }
                if e.len() == 1 {
                    return Ok(Val::real(0.0));
                }
                if name == "sd" {
                    // One op: Stan Math's sd has its own gradient where all elements are equal.
                    if let Some(c) = e.consts() {
                        return Ok(Val::real(crate::kernels::sd_parts(&c).0));
                    }
                    let x = self.elems_arg(&e);
                    return Ok(Val::Real(Sc::V(self.b.sd(x).off)));
                }
                Ok(Val::Real(self.var_of(&e, span)?))
            }
            "dot_product" => {
                self.n_args(name, &args, 2, span)?;
                let a = self.to_elems(&args[0]);
                let b = self.to_elems(&args[1]);
                Ok(Val::Real(self.dot_elems(&a, &b, span)?))
            }
            "dot_self" | "squared_distance" | "distance" => {
                let d = if name == "dot_self" {
                    self.n_args(name, &args, 1, span)?;
                    self.to_elems(&args[0])
                } else {
                    self.n_args(name, &args, 2, span)?;
                    let a = self.to_elems(&args[0]);
                    let b = self.to_elems(&args[1]);
                    self.elems_binary(BinaryFn::Sub, &a, &b)
                };
                let s = self.dot_elems(&d, &d, span)?;
                Ok(Val::Real(if name == "distance" {
                    self.sc_unary(UnaryFn::Sqrt, s)
                } else {
                    s
                }))
            }
            "prod" => {
                self.n_args(name, &args, 1, span)?;
                let e = self.to_elems(&args[0]);
                let mut acc = Sc::C(1.0);
                for i in 0..e.len() {
                    acc = self.sc_binary(BinaryFn::Mul, acc, e.get(i));
                }
                if let Val::Array(xs) = &args[0] {
                    if xs.iter().all(|x| matches!(x, Val::Int(_))) {
                        if let Sc::C(c) = acc {
                            return Ok(Val::Int(c as i64));
                        }
                    }
                }
                Ok(Val::Real(acc))
            }
            "min" | "max" => {
                let f = if name == "min" {
                    BinaryFn::Fmin
                } else {
                    BinaryFn::Fmax
                };
                if args.len() == 2 {
                    if let (Val::Int(a), Val::Int(b)) = (&args[0], &args[1]) {
                        return Ok(Val::Int(if name == "min" { *a.min(b) } else { *a.max(b) }));
                    }
                    return self.map_binary(f, &args[0], &args[1], span);
                }
                self.n_args(name, &args, 1, span)?;
                if let Val::Array(xs) = &args[0] {
                    if !xs.is_empty() && xs.iter().all(|x| matches!(x, Val::Int(_))) {
                        let it = xs.iter().map(|x| if let Val::Int(i) = x { *i } else { 0 });
                        return Ok(Val::Int(if name == "min" {
                            it.min().unwrap_or(0)
                        } else {
                            it.max().unwrap_or(0)
                        }));
                    }
                }
                let e = self.to_elems(&args[0]);
                if e.is_empty() {
                    return Ok(Val::real(if name == "min" {
                        f64::INFINITY
                    } else {
                        f64::NEG_INFINITY
                    }));
                }
                let mut acc = e.get(0);
                for i in 1..e.len() {
                    acc = self.sc_binary(f, acc, e.get(i));
                }
                Ok(Val::Real(acc))
            }
            "num_elements" => {
                self.n_args(name, &args, 1, span)?;
                let mut sc = Vec::new();
                args[0].flatten(&mut sc);
                Ok(Val::Int(sc.len() as i64))
            }
            "size" => {
                self.n_args(name, &args, 1, span)?;
                Ok(Val::Int(match &args[0] {
                    Val::Array(xs) => xs.len(),
                    Val::Vector(e) | Val::RowVector(e) | Val::Matrix(_, _, e) => e.len(),
                    _ => 1,
                } as i64))
            }
            "rows" | "cols" => {
                self.n_args(name, &args, 1, span)?;
                let (r, c) = match &args[0] {
                    Val::Vector(e) => (e.len(), 1),
                    Val::RowVector(e) => (1, e.len()),
                    Val::Matrix(r, c, _) => (*r, *c),
                    _ => return cerr(format!("{name} of a non-matrix"), span),
                };
                Ok(Val::Int(if name == "rows" { r } else { c } as i64))
            }
            "dims" => {
                self.n_args(name, &args, 1, span)?;
                Ok(Val::array(
                    args[0].dims().iter().map(|&d| Val::Int(d as i64)).collect(),
                ))
            }
            "rep_vector" | "rep_row_vector" => {
                self.n_args(name, &args, 2, span)?;
                let s = self.scalar_sc(&args[0], name, span)?;
                let n = self.size_arg(&args[1], span)?;
                let e = Elems::from_scalars_or_empty(vec![s; n]);
                Ok(if name == "rep_vector" {
                    Val::Vector(e)
                } else {
                    Val::RowVector(e)
                })
            }
            "rep_matrix" => {
                if args.len() == 3 {
                    let s = self.scalar_sc(&args[0], name, span)?;
                    let r = self.size_arg(&args[1], span)?;
                    let c = self.size_arg(&args[2], span)?;
                    return Ok(Val::Matrix(
                        r,
                        c,
                        Elems::from_scalars_or_empty(vec![s; r * c]),
                    ));
                }
                self.n_args(name, &args, 2, span)?;
                let n = self.size_arg(&args[1], span)?;
                let e = self.to_elems(&args[0]);
                let m = e.len();
                match &args[0] {
                    Val::Vector(_) => {
                        let mut sc = Vec::with_capacity(m * n);
                        for _ in 0..n {
                            sc.extend(e.to_scalars());
                        }
                        Ok(Val::Matrix(m, n, Elems::from_scalars_or_empty(sc)))
                    }
                    Val::RowVector(_) => {
                        let mut sc = Vec::with_capacity(m * n);
                        for j in 0..m {
                            for _ in 0..n {
                                sc.push(e.get(j));
                            }
                        }
                        Ok(Val::Matrix(n, m, Elems::from_scalars_or_empty(sc)))
                    }
                    _ => cerr("rep_matrix of a non-vector", span),
                }
            }
            "rep_array" => {
                if args.len() < 2 || args.len() > 4 {
                    return cerr("rep_array expects 2 to 4 arguments", span);
                }
                let mut dims = Vec::new();
                for a in &args[1..] {
                    dims.push(self.size_arg(a, span)?);
                }
                Ok(super::exec::nest(&dims, &args[0]))
            }
            "to_vector" | "to_row_vector" => {
                self.n_args(name, &args, 1, span)?;
                // Matrices are read column-major, arrays in order.
                let e = self.to_elems(&args[0]);
                Ok(if name == "to_vector" {
                    Val::Vector(e)
                } else {
                    Val::RowVector(e)
                })
            }
            "to_array_1d" => {
                self.n_args(name, &args, 1, span)?;
                let mut sc = Vec::new();
                flatten_row_major_arrays(&args[0], &mut sc);
                if let Val::Array(_) = &args[0] {
                    let mut ints = true;
                    check_ints(&args[0], &mut ints);
                    if ints {
                        return Ok(Val::array(
                            sc.iter()
                                .map(|s| Val::Int(if let Sc::C(c) = s { *c as i64 } else { 0 }))
                                .collect(),
                        ));
                    }
                }
                Ok(Val::array(sc.into_iter().map(Val::Real).collect()))
            }
            "to_matrix" => {
                let e = self.to_elems(&args[0]);
                match args.len() {
                    1 => match &args[0] {
                        Val::Matrix(..) => Ok(args[0].clone()),
                        Val::Vector(e) => Ok(Val::Matrix(e.len(), 1, e.clone())),
                        Val::RowVector(e) => Ok(Val::Matrix(1, e.len(), e.clone())),
                        Val::Array(rows) => {
                            let r = rows.len();
                            let c = rows.first().map(|x| self.to_elems(x).len()).unwrap_or(0);
                            let mut sc = vec![Sc::C(0.0); r * c];
                            for (i, row) in rows.iter().enumerate() {
                                let re = self.to_elems(row);
                                for j in 0..c {
                                    sc[i + j * r] = re.get(j);
                                }
                            }
                            Ok(Val::Matrix(r, c, Elems::from_scalars_or_empty(sc)))
                        }
                        _ => cerr("to_matrix of a scalar", span),
                    },
                    3 => {
                        let r = self.size_arg(&args[1], span)?;
                        let c = self.size_arg(&args[2], span)?;
                        if r * c != e.len() {
                            return eerr("to_matrix: size mismatch", span);
                        }
                        Ok(Val::Matrix(r, c, e))
                    }
                    4 => self.reshape_to_matrix(&args, span),
                    _ => cerr("to_matrix with this many arguments is not supported", span),
                }
            }
            "append_row" | "append_col" => {
                self.n_args(name, &args, 2, span)?;
                self.append(name == "append_row", &args[0], &args[1], span)
            }
            "segment" | "head" | "tail" => {
                let (v, start, len) = match name {
                    "segment" => {
                        self.n_args(name, &args, 3, span)?;
                        (
                            &args[0],
                            self.int_arg(&args[1], span)?,
                            self.size_arg(&args[2], span)?,
                        )
                    }
                    _ => {
                        self.n_args(name, &args, 2, span)?;
                        let n = self.size_arg(&args[1], span)?;
                        let total = match &args[0] {
                            Val::Array(xs) => xs.len(),
                            other => self.to_elems(other).len(),
                        };
                        if n > total {
                            return eerr(format!("{name}: size {n} exceeds {total}"), span);
                        }
                        (
                            &args[0],
                            if name == "head" {
                                1
                            } else {
                                (total - n + 1) as i64
                            },
                            n,
                        )
                    }
                };
                if len == 0 {
                    return Ok(match v {
                        Val::Array(_) => Val::array(vec![]),
                        Val::RowVector(_) => Val::RowVector(Elems::C(Arc::new(vec![]))),
                        _ => Val::Vector(Elems::C(Arc::new(vec![]))),
                    });
                }
                let ix = super::trace::Ix::Range(start, start + len as i64 - 1);
                self.index(v, &[ix], span)
            }
            "cumulative_sum" => {
                self.n_args(name, &args, 1, span)?;
                let e = self.to_elems(&args[0]);
                let out = self.elems_cumsum(&e);
                Ok(match &args[0] {
                    Val::Array(xs) if xs.iter().all(|x| matches!(x, Val::Int(_))) => Val::array(
                        (0..out.len())
                            .map(|i| {
                                Val::Int(if let Sc::C(c) = out.get(i) {
                                    c as i64
                                } else {
                                    0
                                })
                            })
                            .collect(),
                    ),
                    other => Self::with_shape(other, out),
                })
            }
            "softmax" | "log_softmax" => {
                self.n_args(name, &args, 1, span)?;
                let e = self.to_elems(&args[0]);
                let l = self.lse_elems(&e);
                let le = self.scalar_elems(l);
                let d = self.elems_binary(BinaryFn::Sub, &e, &le);
                Ok(Val::Vector(if name == "softmax" {
                    self.elems_unary(UnaryFn::Exp, &d)
                } else {
                    d
                }))
            }
            "log_mix" if args.len() == 2 => self.log_mix_vectorised(&args, span),
            "log_mix" => {
                self.n_args(name, &args, 3, span)?;
                let th = self.scalar_sc(&args[0], name, span)?;
                let a = self.scalar_sc(&args[1], name, span)?;
                let b = self.scalar_sc(&args[2], name, span)?;
                let lt = self.sc_unary(UnaryFn::Log, th);
                let l1t = self.sc_unary(UnaryFn::Log1m, th);
                let x = self.sc_binary(BinaryFn::Add, lt, a);
                let y = self.sc_binary(BinaryFn::Add, l1t, b);
                Ok(Val::Real(self.sc_binary(BinaryFn::LogSumExp, x, y)))
            }
            "fma" => {
                self.n_args(name, &args, 3, span)?;
                let p = self.map_binary(BinaryFn::Mul, &args[0], &args[1], span)?;
                self.map_binary(BinaryFn::Add, &p, &args[2], span)
            }
            "lmultiply" => {
                self.n_args(name, &args, 2, span)?;
                let l = self.map_unary(UnaryFn::Log, &args[1], span)?;
                self.map_binary(BinaryFn::Mul, &args[0], &l, span)
            }
            "square_root" => cerr("unknown function square_root", span),
            "int_step" | "step" => {
                self.n_args(name, &args, 1, span)?;
                let x = self.real_value(&args[0], span)?;
                let v = if name == "int_step" {
                    x > 0.0
                } else {
                    x >= 0.0
                };
                Ok(if name == "int_step" {
                    Val::Int(v as i64)
                } else {
                    Val::real(v as i64 as f64)
                })
            }
            "is_inf" | "is_nan" => {
                self.n_args(name, &args, 1, span)?;
                let x = self.real_value(&args[0], span)?;
                Ok(Val::Int(if name == "is_inf" {
                    x.is_infinite()
                } else {
                    x.is_nan()
                } as i64))
            }
            "logical_negation" => Ok(Val::Int((self.real_value(&args[0], span)? == 0.0) as i64)),
            "diag_matrix" => {
                self.n_args(name, &args, 1, span)?;
                let e = self.to_elems(&args[0]);
                let n = e.len();
                let mut sc = vec![Sc::C(0.0); n * n];
                for i in 0..n {
                    sc[i + i * n] = e.get(i);
                }
                Ok(Val::Matrix(n, n, Elems::from_scalars_or_empty(sc)))
            }
            "identity_matrix" => {
                let n = self.size_arg(&args[0], span)?;
                let mut v = vec![0.0; n * n];
                for i in 0..n {
                    v[i + i * n] = 1.0;
                }
                Ok(Val::Matrix(n, n, Elems::C(Arc::new(v))))
            }
            "diag_pre_multiply" | "diag_post_multiply" => {
                self.n_args(name, &args, 2, span)?;
                let (d, m) = if name == "diag_pre_multiply" {
                    (&args[0], &args[1])
                } else {
                    (&args[1], &args[0])
                };
                let de = self.to_elems(d);
                let (r, c, me) = match m {
                    Val::Matrix(r, c, e) => (*r, *c, e.clone()),
                    _ => return cerr(format!("{name}: expected a matrix"), span),
                };
                let want = if name == "diag_pre_multiply" { r } else { c };
                if de.len() != want {
                    let (what, mname) = if name == "diag_pre_multiply" {
                        ("m1.size()", "m2.rows()")
                    } else {
                        ("m2.size()", "m1.cols()")
                    };
                    return eerr(
                        format!(
                            "{name}: {what} ({}) and {mname} ({want}) must match in size",
                            de.len()
                        ),
                        span,
                    );
                }
                // Broadcast the diagonal to every element: row scaling (pre) or column (post).
                let pos: Vec<usize> = (0..r * c)
                    .map(|k| {
                        if name == "diag_pre_multiply" {
                            k % r
                        } else {
                            k / r
                        }
                    })
                    .collect();
                let big = self.select_any(&de, &pos);
                Ok(Val::Matrix(
                    r,
                    c,
                    self.elems_binary(BinaryFn::Mul, &me, &big),
                ))
            }
            "add_diag" => {
                self.n_args(name, &args, 2, span)?;
                let (r, c, me) = match &args[0] {
                    Val::Matrix(r, c, e) => (*r, *c, e.clone()),
                    _ => return cerr("add_diag: expected a matrix", span),
                };
                let de = self.to_elems(&args[1]);
                let mut sc = me.to_scalars();
                for i in 0..r.min(c) {
                    let d = if de.len() == 1 { de.get(0) } else { de.get(i) };
                    sc[i + i * r] = self.sc_binary(BinaryFn::Add, sc[i + i * r], d);
                }
                Ok(Val::Matrix(r, c, Elems::from_scalars_or_empty(sc)))
            }
            "col" | "row" => {
                self.n_args(name, &args, 2, span)?;
                let k = self.int_arg(&args[1], span)?;
                let ix = if name == "col" {
                    vec![super::trace::Ix::All, super::trace::Ix::One(k)]
                } else {
                    vec![super::trace::Ix::One(k)]
                };
                self.index(&args[0], &ix, span)
            }
            "sub_col" | "sub_row" => {
                self.n_args(name, &args, 4, span)?;
                let i = self.int_arg(&args[1], span)?;
                let j = self.int_arg(&args[2], span)?;
                let n = self.int_arg(&args[3], span)?;
                use super::trace::Ix;
                if n == 0 {
                    return Ok(if name == "sub_col" {
                        Val::Vector(Elems::C(Arc::new(vec![])))
                    } else {
                        Val::RowVector(Elems::C(Arc::new(vec![])))
                    });
                }
                let ix = if name == "sub_col" {
                    [Ix::Range(i, i + n - 1), Ix::One(j)]
                } else {
                    [Ix::One(i), Ix::Range(j, j + n - 1)]
                };
                self.index(&args[0], &ix, span)
            }
            "block" => {
                self.n_args(name, &args, 5, span)?;
                let i = self.int_arg(&args[1], span)?;
                let j = self.int_arg(&args[2], span)?;
                let nr = self.int_arg(&args[3], span)?;
                let nc = self.int_arg(&args[4], span)?;
                use super::trace::Ix;
                self.index(
                    &args[0],
                    &[Ix::Range(i, i + nr - 1), Ix::Range(j, j + nc - 1)],
                    span,
                )
            }
            "reverse" => {
                self.n_args(name, &args, 1, span)?;
                match &args[0] {
                    Val::Array(xs) => Ok(Val::array(xs.iter().rev().cloned().collect())),
                    v => {
                        let e = self.to_elems(v);
                        let pos: Vec<usize> = (0..e.len()).rev().collect();
                        let sel = self.select_any(&e, &pos);
                        Ok(Self::with_shape(v, sel))
                    }
                }
            }
            "linspaced_vector" | "linspaced_array" | "linspaced_row_vector" => {
                self.n_args(name, &args, 3, span)?;
                let n = self.size_arg(&args[0], span)?;
                let lo = self.real_value(&args[1], span)?;
                let hi = self.real_value(&args[2], span)?;
                let v: Vec<f64> = (0..n)
                    .map(|i| {
                        if n == 1 {
                            hi
                        } else {
                            lo + (hi - lo) * i as f64 / (n - 1) as f64
                        }
                    })
                    .collect();
                Ok(match name {
                    "linspaced_vector" => Val::Vector(Elems::C(Arc::new(v))),
                    "linspaced_row_vector" => Val::RowVector(Elems::C(Arc::new(v))),
                    _ => Val::array(v.into_iter().map(Val::real).collect()),
                })
            }
            "sort_asc" | "sort_desc" | "sort_indices_asc" | "sort_indices_desc" | "rank" => {
                let e = self.to_elems(&args[0]);
                let mut c = match e.consts() {
                    Some(c) => c,
                    // Sorted parameters: one op that finds the permutation at every
                    // evaluation, so the model stays static and the gradient flows back
                    // through it.
                    None if matches!(name, "sort_asc" | "sort_desc") => {
                        let x = self.elems_arg(&e);
                        let sorted = self.b.sort(x, name == "sort_desc");
                        return Ok(Self::with_shape(&args[0], Elems::V(sorted)));
                    }
                    // Indices and ranks are integers, which the graph does not hold: the
                    // values are read while tracing, on the dynamic (re-traced) path.
                    None => (0..e.len())
                        .map(|i| self.value_of(e.get(i), span))
                        .collect::<R<Vec<f64>>>()?,
                };
                if name != "rank" && c.iter().any(|v| v.is_nan()) {
                    return eerr(
                        format!("{name}: the container argument is nan, but must not be nan!"),
                        span,
                    );
                }
                let ints = matches!(&args[0], Val::Array(xs) if xs.iter().all(|x| matches!(x, Val::Int(_))));
                match name {
                    "sort_asc" | "sort_desc" => {
                        c.sort_by(|a, b| a.total_cmp(b));
                        if name == "sort_desc" {
                            c.reverse();
                        }
                        if ints {
                            return Ok(Val::array(c.iter().map(|&x| Val::Int(x as i64)).collect()));
                        }
                        Ok(Self::with_shape(&args[0], Elems::C(Arc::new(c))))
                    }
                    "rank" => {
                        let s = self.int_arg(&args[1], span)? as usize;
                        if s < 1 || s > c.len() {
                            return eerr("rank: index out of range", span);
                        }
                        Ok(Val::Int(c.iter().filter(|&&x| x < c[s - 1]).count() as i64))
                    }
                    _ => {
                        let mut idx: Vec<usize> = (0..c.len()).collect();
                        idx.sort_by(|&a, &b| c[a].total_cmp(&c[b]));
                        if name == "sort_indices_desc" {
                            idx.sort_by(|&a, &b| c[b].total_cmp(&c[a]));
                        }
                        Ok(Val::array(
                            idx.into_iter().map(|i| Val::Int(i as i64 + 1)).collect(),
                        ))
                    }
                }
            }
            "tcrossprod" | "crossprod" | "multiply_lower_tri_self_transpose" => {
                self.n_args(name, &args, 1, span)?;
                let m = args[0].clone();
                let m = if name == "multiply_lower_tri_self_transpose" {
                    self.lower_tri(&m, span)?
                } else {
                    m
                };
                let t = self.transpose(&m, span)?;
                if name == "crossprod" {
                    self.matmul(&t, &m, span)
                } else {
                    self.matmul(&m, &t, span)
                }
            }
            "cholesky_decompose" => {
                self.n_args(name, &args, 1, span)?;
                self.cholesky(&args[0], span)
            }
            "mdivide_left_tri_low" => {
                self.n_args(name, &args, 2, span)?;
                self.tri_solve(&args[0], &args[1], span)
            }
            _ if super::gp::is_gp_cov(name) => self.gp_cov(name, &args, span),
            _ if super::containers::is_container_fn(name) => self.container_call(name, &args, span),
            _ if super::sparse::is_csr_fn(name) => self.csr_call(name, &args, span),
            _ if super::constraints::is_transform_fn(name) => {
                self.transform_call(name, &args, span)
            }
            "inverse"
            | "inverse_spd"
            | "chol2inv"
            | "determinant"
            | "log_determinant"
            | "log_determinant_spd"
            | "mdivide_left"
            | "mdivide_right"
            | "mdivide_left_spd"
            | "mdivide_right_spd"
            | "mdivide_right_tri_low"
            | "trace"
            | "diagonal"
            | "quad_form"
            | "quad_form_sym"
            | "trace_quad_form"
            | "trace_gen_quad_form"
            | "norm1"
            | "norm2"
            | "matrix_power"
            | "eigenvalues_sym"
            | "eigenvectors_sym"
            | "eigendecompose_sym"
            | "matrix_exp"
            | "quad_form_diag"
            | "rows_dot_product"
            | "columns_dot_product"
            | "rows_dot_self"
            | "columns_dot_self"
            | "generalized_inverse"
            | "matrix_exp_multiply"
            | "scale_matrix_exp_multiply"
            | "singular_values"
            | "svd_U"
            | "svd_V"
            | "svd"
            | "qr_thin_Q"
            | "qr_thin_R"
            | "qr_Q"
            | "qr_R"
            | "qr_thin"
            | "qr" => self.lower_linalg(name, &args, span),
            _ => cerr(format!("function '{name}' is not supported"), span),
        }
    }

    /// A selection that may repeat positions (broadcasts), for any storage.
    fn select_any(&mut self, e: &Elems, pos: &[usize]) -> Elems {
        if pos.is_empty() {
            return Elems::C(Arc::new(vec![]));
        }
        if let Elems::V(a) = e {
            if pos.len() > 4 {
                let idx = pos.iter().map(|&p| p as u32).collect();
                return Elems::V(self.b.gather(*a, idx));
            }
        }
        e.select(pos)
    }

    fn append(&mut self, rows: bool, a: &Val, b: &Val, span: Span) -> R<Val> {
        let shape = |v: &Val| -> Option<(usize, usize)> {
            match v {
                Val::Int(_) | Val::Real(_) => Some((1, 1)),
                Val::Vector(e) => Some((e.len(), 1)),
                Val::RowVector(e) => Some((1, e.len())),
                Val::Matrix(r, c, _) => Some((*r, *c)),
                _ => None,
            }
        };
        let (Some((ar, ac)), Some((br, bc))) = (shape(a), shape(b)) else {
            return cerr("append of non-matrix values", span);
        };
        let ea = self.to_elems(a);
        let eb = self.to_elems(b);
        if rows {
            if ac != bc {
                return eerr("append_row: column counts differ", span);
            }
            let r = ar + br;
            let mut sc = Vec::with_capacity(r * ac);
            for j in 0..ac {
                for i in 0..ar {
                    sc.push(ea.get(i + j * ar));
                }
                for i in 0..br {
                    sc.push(eb.get(i + j * br));
                }
            }
            let e = Elems::from_scalars_or_empty(sc);
            Ok(
                if ac == 1 && !matches!(a, Val::Matrix(..)) && !matches!(b, Val::Matrix(..)) {
                    Val::Vector(e)
                } else {
                    Val::Matrix(r, ac, e)
                },
            )
        } else {
            if ar != br {
                return eerr("append_col: row counts differ", span);
            }
            let mut sc = ea.to_scalars();
            sc.extend(eb.to_scalars());
            let e = Elems::from_scalars_or_empty(sc);
            Ok(
                if ar == 1 && !matches!(a, Val::Matrix(..)) && !matches!(b, Val::Matrix(..)) {
                    Val::RowVector(e)
                } else {
                    Val::Matrix(ar, ac + bc, e)
                },
            )
        }
    }

    /// Calls what the checker resolved call `id` (a call expression, call statement or `~`
    /// statement) to: the exact user-function overload, or the built-in `name` otherwise
    /// (`name` is the callee as written; for a built-in it is the resolved signature's name).
    /// `Ok(None)`: a user function returning `void`.
    pub fn call_target(
        &mut self,
        id: hazel_syntax::ast::NodeId,
        name: &str,
        args: Vec<Val>,
        span: Span,
    ) -> R<Option<Val>> {
        match self.prog.call_target(id) {
            Some(CallTarget::User { function }) => {
                let function = *function;
                // A user density called as `_lpdf` keeps its constants inside; as `_lupdf`
                // (or through `~`) it drops them when the caller does.
                let saved = self.in_lupdf;
                if name.ends_with("_lpdf") || name.ends_with("_lpmf") {
                    self.in_lupdf = false;
                }
                let r = self.call_user(function, args, span);
                self.in_lupdf = saved;
                r
            }
            Some(CallTarget::Builtin { name, .. }) => {
                let name = name.clone();
                self.call(&name, args, span).map(Some)
            }
            None => cerr(format!("'{name}' was not resolved by the checker"), span),
        }
    }

    /// Calls user function `function` (an index into the checked program's functions: the
    /// overload the checker resolved) by tracing its body with the arguments bound, each
    /// promoted to the declared argument type (int → real, also inside arrays).
    pub fn call_user(&mut self, function: usize, args: Vec<Val>, span: Span) -> R<Option<Val>> {
        let prog = self.prog;
        let uf = &prog.functions[function];
        let def = prog
            .program
            .functions
            .as_ref()
            .and_then(|fb| fb.functions.get(uf.def_index));
        let Some(def) = def else {
            return cerr(format!("function '{}' has no definition", uf.name), span);
        };
        let Some(body) = &def.body else {
            return cerr(format!("function '{}' has no body", uf.name), span);
        };
        if def.args.len() != args.len() {
            return cerr(
                format!(
                    "'{}' takes {} arguments, found {}",
                    uf.name,
                    def.args.len(),
                    args.len()
                ),
                span,
            );
        }
        if self.function_depth >= MAX_CALL_DEPTH {
            // Tracing recurses per call: stop with the function's name before the stack runs
            // out (Stan itself would crash).
            return eerr(
                format!(
                    "user function '{}' recursed more than {MAX_CALL_DEPTH} calls deep",
                    uf.name
                ),
                span,
            );
        }
        let saved = self.enter_frame();
        for ((formal, (_, ty)), v) in def.args.iter().zip(&uf.args).zip(args) {
            self.bind(&formal.name.name, promote(ty, v));
        }
        self.function_depth += 1;
        let flow = self.stmt(body);
        self.function_depth -= 1;
        self.leave_frame(saved);
        match flow? {
            Flow::Return(v) => Ok(v.map(|v| promote(&uf.ret, v))),
            _ => Ok(None),
        }
    }

    /// `<family>_rng(params...)`: one draw, or an array of draws when a parameter is a
    /// container (Stan's vectorised rngs).
    fn rng_call(&mut self, name: &str, args: &[Val], span: Span) -> R<Val> {
        if self.rng.is_none() {
            return cerr(
                format!("{name} is only allowed in transformed data and generated quantities"),
                span,
            );
        }
        let base = name.strip_suffix("_rng").unwrap_or(name);
        if let Some(v) = self.multivariate_rng(base, args, span)? {
            return Ok(v);
        }
        let Some(d) = hazel_math::dist::distribution(base) else {
            return cerr(format!("function '{name}' is not supported"), span);
        };
        let Some(rng_fn) = d.rng else {
            return cerr(format!("function '{name}' is not supported"), span);
        };
        let vector = args
            .iter()
            .any(|a| !matches!(a, Val::Int(_) | Val::Real(_)));
        let mut cols: Vec<Vec<f64>> = Vec::with_capacity(args.len());
        let mut n = 1;
        for a in args {
            let e = self.to_elems(a);
            let mut v = Vec::with_capacity(e.len());
            for i in 0..e.len() {
                v.push(self.value_of(e.get(i), span)?);
            }
            if v.len() != 1 {
                n = v.len();
            }
            cols.push(v);
        }
        let discrete = d.kind == hazel_math::dist::Kind::Discrete;
        let rng = self.rng.as_mut().expect("checked above");
        let mut draws = Vec::with_capacity(n);
        let mut params = vec![0.0; cols.len()];
        for i in 0..n {
            for (p, c) in params.iter_mut().zip(&cols) {
                *p = if c.len() == 1 { c[0] } else { c[i] };
            }
            let v = rng_fn(&params, rng)
                .map_err(|e| TraceErr::Eval(hazel_density::EvalError::domain(e.message), span))?;
            draws.push(if discrete {
                Val::Int(v as i64)
            } else {
                Val::real(v)
            });
        }
        if vector {
            Ok(Val::array(draws))
        } else {
            Ok(draws.pop().unwrap_or(Val::real(f64::NAN)))
        }
    }

    fn const_vec(&self, v: &Val, span: Span) -> R<Vec<f64>> {
        let e = self.to_elems(v);
        (0..e.len())
            .map(|i| self.value_of(e.get(i), span))
            .collect()
    }

    /// Random draws of the multivariate families (generated quantities only, all arguments
    /// known).
    fn multivariate_rng(&mut self, base: &str, args: &[Val], span: Span) -> R<Option<Val>> {
        match base {
            _ if super::multivariate::has_mv_rng(base) => self.mv_rng(base, args, span),
            _ if super::glm::has_glm_rng(base) => self.glm_rng(base, args, span),
            "poisson_binomial" => {
                if args.len() != 1 {
                    return cerr("poisson_binomial_rng takes 1 argument", span);
                }
                let theta = self.const_vec(&args[0], span)?;
                let rng = self.rng.as_mut().expect("checked by caller");
                let k = hazel_math::dist::poisson_binomial::poisson_binomial_rng(&theta, rng)
                    .map_err(|e| {
                        TraceErr::Eval(hazel_density::EvalError::domain(e.message), span)
                    })?;
                Ok(Some(Val::Int(k as i64)))
            }
            "categorical" | "categorical_logit" => {
                if args.len() != 1 {
                    return cerr(format!("{base}_rng takes 1 argument"), span);
                }
                let mut p = self.const_vec(&args[0], span)?;
                if base == "categorical_logit" {
                    let l = crate::kernels::log_sum_exp(&p);
                    p.iter_mut().for_each(|x| *x = (*x - l).exp());
                }
                let rng = self.rng.as_mut().expect("checked by caller");
                let u = rng.uniform();
                let mut acc = 0.0;
                for (i, pi) in p.iter().enumerate() {
                    acc += pi;
                    if u < acc {
                        return Ok(Some(Val::Int(i as i64 + 1)));
                    }
                }
                Ok(Some(Val::Int(p.len() as i64)))
            }
            "multi_normal" | "multi_normal_cholesky" => {
                if args.len() != 2 {
                    return cerr(format!("{base}_rng takes 2 arguments"), span);
                }
                let l = if base == "multi_normal" {
                    let c = self.call("cholesky_decompose", vec![args[1].clone()], span)?;
                    self.const_vec(&c, span)?
                } else {
                    self.const_vec(&args[1], span)?
                };
                // One location, or an array of them (one draw each, an array of vectors).
                let (locations, many) = match &args[0] {
                    Val::Array(xs) => (xs.to_vec(), true),
                    v => (vec![v.clone()], false),
                };
                let mut draws = Vec::with_capacity(locations.len());
                for location in &locations {
                    let mu = self.const_vec(location, span)?;
                    let k = mu.len();
                    if l.len() != k * k {
                        return eerr(
                            format!(
                                "{base}_rng: the location has size {k}, the matrix {} entries",
                                l.len()
                            ),
                            span,
                        );
                    }
                    let rng = self.rng.as_mut().expect("checked by caller");
                    let z: Vec<f64> = (0..k).map(|_| rng.normal()).collect();
                    let x: Vec<f64> = (0..k)
                        .map(|i| mu[i] + (0..=i).map(|j| l[i + j * k] * z[j]).sum::<f64>())
                        .collect();
                    draws.push(Val::Vector(Elems::C(Arc::new(x))));
                }
                if many {
                    Ok(Some(Val::Array(draws.into())))
                } else {
                    Ok(Some(draws.pop().expect("one location")))
                }
            }
            "dirichlet" => {
                let alpha = self.const_vec(&args[0], span)?;
                let gamma = hazel_math::dist::distribution("gamma").and_then(|d| d.rng);
                let Some(gamma) = gamma else {
                    return cerr("dirichlet_rng needs gamma_rng", span);
                };
                let rng = self.rng.as_mut().expect("checked by caller");
                let mut g = Vec::with_capacity(alpha.len());
                for a in &alpha {
                    g.push(gamma(&[*a, 1.0], rng).map_err(|e| {
                        TraceErr::Eval(hazel_density::EvalError::domain(e.message), span)
                    })?);
                }
                let s: f64 = g.iter().sum();
                Ok(Some(Val::Vector(Elems::C(Arc::new(
                    g.iter().map(|x| x / s).collect(),
                )))))
            }
            _ => Ok(None),
        }
    }

    /// Multivariate densities composed from vector ops.
    pub fn multivariate_density(
        &mut self,
        name: &str,
        args: &[Val],
        propto: bool,
        span: Span,
    ) -> R<Option<Sc>> {
        match name {
            _ if super::multivariate::mv_family(name).is_some() => {
                self.mv_density(name, args, propto, span)
            }
            _ if super::glm::is_glm(name) => self.glm_density(name, args, propto, span),
            _ if super::dist2::is_composed_matrix_density(name) => {
                self.composed_matrix_density(name, args, propto, span)
            }
            "multi_normal_cholesky" => {
                if args.len() != 3 {
                    return cerr("multi_normal_cholesky takes 3 arguments", span);
                }
                // Only the lower triangle of L is read.
                let l = args[2].clone();
                // One or many variates (array of vectors) against one or many locations.
                let ys: Vec<Val> = match &args[0] {
                    Val::Array(xs) => xs.to_vec(),
                    v => vec![v.clone()],
                };
                let mus: Vec<Val> = match &args[1] {
                    Val::Array(xs) => xs.to_vec(),
                    v => vec![v.clone()],
                };
                let n = ys.len().max(mus.len());
                let k = match &l {
                    Val::Matrix(r, c, _) if r == c => *r,
                    _ => return cerr("multi_normal_cholesky: L must be a square matrix", span),
                };
                let all_const = args.iter().all(|a| a.is_const());
                if propto && all_const {
                    return Ok(Some(Sc::C(0.0)));
                }
                // All residuals as the columns of one k × n matrix: one triangular solve.
                let mut cols = Vec::with_capacity(n * k);
                for i in 0..n {
                    let y = self.to_elems(&ys[if ys.len() == 1 { 0 } else { i }]);
                    let mu = self.to_elems(&mus[if mus.len() == 1 { 0 } else { i }]);
                    if y.len() != k || (mu.len() != k && mu.len() != 1) {
                        return eerr("multi_normal_cholesky: size mismatch", span);
                    }
                    let d = self.elems_binary(BinaryFn::Sub, &y, &mu);
                    cols.push(d);
                }
                let d = if cols.len() == 1 {
                    cols.pop().expect("one column")
                } else {
                    Elems::from_scalars_or_empty(cols.iter().flat_map(|c| c.to_scalars()).collect())
                };
                let z = self.tri_solve(&l, &Val::Matrix(k, n, d), span)?;
                let ze = self.to_elems(&z);
                let q = self.dot_elems(&ze, &ze, span)?;
                let mut total = self.sc_binary(BinaryFn::Mul, q, Sc::C(-0.5));
                let l_const = args[2].is_const();
                if !propto || !l_const {
                    let le = self.to_elems(&l);
                    let diag: Vec<Sc> = (0..k).map(|i| le.get(i + i * k)).collect();
                    let de = Elems::from_scalars_or_empty(diag);
                    let logd = self.elems_unary(UnaryFn::Log, &de);
                    let s = self.sum_elems(&logd);
                    let s = self.sc_binary(BinaryFn::Mul, s, Sc::C(-(n as f64)));
                    total = self.sc_binary(BinaryFn::Add, total, s);
                }
                if !propto {
                    total = self.sc_binary(
                        BinaryFn::Add,
                        total,
                        Sc::C(-0.918_938_533_204_672_8 * (n * k) as f64),
                    );
                }
                Ok(Some(total))
            }
            "dirichlet" => {
                if args.len() != 2 {
                    return cerr("dirichlet takes 2 arguments", span);
                }
                let thetas: Vec<Val> = match &args[0] {
                    Val::Array(xs) => xs.to_vec(),
                    v => vec![v.clone()],
                };
                let alphas: Vec<Val> = match &args[1] {
                    Val::Array(xs) => xs.to_vec(),
                    v => vec![v.clone()],
                };
                let alpha_var = !args[1].is_const();
                if propto && args.iter().all(|a| a.is_const()) {
                    return Ok(Some(Sc::C(0.0)));
                }
                let mut total = Sc::C(0.0);
                for i in 0..thetas.len().max(alphas.len()) {
                    let th = self.to_elems(&thetas[if thetas.len() == 1 { 0 } else { i }]);
                    let al = self.to_elems(&alphas[if alphas.len() == 1 { 0 } else { i }]);
                    if th.len() != al.len() {
                        return eerr("dirichlet: size mismatch", span);
                    }
                    // lgamma(Σα) − Σ lgamma(α) + Σ (α − 1) log θ
                    if !propto || alpha_var {
                        let sa = self.sum_elems(&al);
                        let lsa = self.sc_unary(UnaryFn::Lgamma, sa);
                        let lga = self.elems_unary(UnaryFn::Lgamma, &al);
                        let slga = self.sum_elems(&lga);
                        let c = self.sc_binary(BinaryFn::Sub, lsa, slga);
                        total = self.sc_binary(BinaryFn::Add, total, c);
                    }
                    let one = Elems::C(Arc::new(vec![1.0]));
                    let am1 = self.elems_binary(BinaryFn::Sub, &al, &one);
                    let lt = self.elems_unary(UnaryFn::Log, &th);
                    let d = self.dot_elems(&am1, &lt, span)?;
                    total = self.sc_binary(BinaryFn::Add, total, d);
                }
                Ok(Some(total))
            }
            "categorical" | "categorical_logit" => {
                if args.len() != 2 {
                    return cerr(format!("{name} takes 2 arguments"), span);
                }
                let ys: Vec<i64> = match &args[0] {
                    Val::Int(i) => vec![*i],
                    Val::Array(xs) => xs.iter().map(|x| self.as_int(x, span)).collect::<R<_>>()?,
                    _ => return cerr(format!("{name}: outcome must be int or int array"), span),
                };
                let th = self.to_elems(&args[1]);
                if propto && args[1].is_const() {
                    return Ok(Some(Sc::C(0.0)));
                }
                let mut pos = Vec::with_capacity(ys.len());
                for &y in &ys {
                    if y < 1 || y as usize > th.len() {
                        return eerr(
                            format!("{name}: outcome {y} out of support 1..{}", th.len()),
                            span,
                        );
                    }
                    pos.push(y as usize - 1);
                }
                let picked = self.select_any(&th, &pos);
                if name == "categorical" {
                    let l = self.elems_unary(UnaryFn::Log, &picked);
                    Ok(Some(self.sum_elems(&l)))
                } else {
                    let s = self.sum_elems(&picked);
                    let lse = self.lse_elems(&th);
                    let t = self.sc_binary(BinaryFn::Mul, lse, Sc::C(ys.len() as f64));
                    Ok(Some(self.sc_binary(BinaryFn::Sub, s, t)))
                }
            }
            "multi_normal" => {
                if args.len() != 3 {
                    return cerr("multi_normal takes 3 arguments", span);
                }
                let l = self.cholesky(&args[2], span)?;
                let mut a2 = args.to_vec();
                a2[2] = l;
                // The covariance may be data while its factor is then data too: same rule.
                self.multivariate_density("multi_normal_cholesky", &a2, propto, span)
            }
            _ => Ok(None),
        }
    }

    /// `log_mix(theta, lambda)`: log Σ_k θ_k exp(λ_k), summed over the elements of `lambda`
    /// when it is an array of vectors (Stan's vectorised form).
    fn log_mix_vectorised(&mut self, args: &[Val], span: Span) -> R<Val> {
        let theta = self.to_elems(&args[0]);
        match theta.consts() {
            Some(c) => {
                if let Some(t) = c.iter().find(|t| !(0.0..=1.0).contains(*t)) {
                    return eerr(
                        format!("log_mix: theta is {t}, but must be in the interval [0, 1]"),
                        span,
                    );
                }
            }
            None => {
                let x = self.elems_arg(&theta);
                let (lo, hi) = (self.b.scalar_const(0.0), self.b.scalar_const(1.0));
                let message = "log_mix: theta must be in the interval [0, 1]".to_string();
                self.b.check(CheckKind::Lower, x, lo, message.clone());
                self.b.check(CheckKind::Upper, x, hi, message);
            }
        }
        let log_theta = self.elems_unary(UnaryFn::Log, &theta);
        let lambdas: Vec<Elems> = match &args[1] {
            Val::Array(items)
                if items
                    .iter()
                    .any(|x| !matches!(x, Val::Int(_) | Val::Real(_))) =>
            {
                items.iter().map(|x| self.to_elems(x)).collect()
            }
            other => vec![self.to_elems(other)],
        };
        let mut terms = Vec::with_capacity(lambdas.len());
        for lambda in &lambdas {
            if lambda.len() != theta.len() {
                return eerr(
                    format!(
                        "log_mix: theta (size {}) and lambda (size {}) must match in size",
                        theta.len(),
                        lambda.len()
                    ),
                    span,
                );
            }
            let x = self.elems_binary(BinaryFn::Add, &log_theta, lambda);
            terms.push(self.lse_elems(&x));
        }
        Ok(Val::Real(
            self.sum_elems(&Elems::from_scalars_or_empty(terms)),
        ))
    }

    /// Lower triangle of a square matrix (upper part zeroed).
    fn lower_tri(&mut self, m: &Val, span: Span) -> R<Val> {
        let (r, c, e) = match m {
            Val::Matrix(r, c, e) => (*r, *c, e.clone()),
            _ => return cerr("expected a matrix", span),
        };
        let mut sc = e.to_scalars();
        for j in 0..c {
            for i in 0..j.min(r) {
                sc[i + j * r] = Sc::C(0.0);
            }
        }
        Ok(Val::Matrix(r, c, Elems::from_scalars_or_empty(sc)))
    }

    /// Cholesky factor: computed directly for data, one op otherwise.
    fn cholesky(&mut self, m: &Val, span: Span) -> R<Val> {
        let (n, c, e) = match m {
            Val::Matrix(r, c, e) => (*r, *c, e.clone()),
            _ => return cerr("cholesky_decompose: expected a matrix", span),
        };
        if n != c {
            return eerr("cholesky_decompose: matrix is not square", span);
        }
        if let Some(a) = e.consts() {
            let mut l = vec![0.0; n * n];
            hazel_math::linalg::cholesky_decompose(&a, n, &mut l)
                .map_err(|er| TraceErr::Eval(hazel_density::EvalError::domain(er.message), span))?;
            return Ok(Val::Matrix(n, n, Elems::C(Arc::new(l))));
        }
        let a = self.elems_arg(&e);
        Ok(Val::Matrix(n, n, Elems::V(self.b.cholesky(a, n))))
    }

    /// `L \ b` for lower-triangular `L` and a vector or matrix `b`.
    fn tri_solve(&mut self, l: &Val, b: &Val, span: Span) -> R<Val> {
        let (n, le) = match l {
            Val::Matrix(r, c, e) if r == c => (*r, e.clone()),
            _ => return cerr("mdivide_left_tri_low: expected a square matrix", span),
        };
        let (br, bc, be) = match b {
            Val::Vector(e) => (e.len(), 1, e.clone()),
            Val::Matrix(r, c, e) => (*r, *c, e.clone()),
            _ => return cerr("mdivide_left_tri_low: expected a vector or matrix", span),
        };
        if br != n {
            return eerr("mdivide_left_tri_low: size mismatch", span);
        }
        let out = match (le.consts(), be.consts()) {
            (Some(lv), Some(bv)) => {
                let mut o = vec![0.0; n * bc];
                hazel_math::linalg::mdivide_left_tri_low(&lv, n, &bv, bc, &mut o);
                Elems::C(Arc::new(o))
            }
            _ => {
                let la = self.elems_arg(&le);
                let ba = self.elems_arg(&be);
                Elems::V(self.b.tri_solve(la, ba, n, bc))
            }
        };
        Ok(if bc == 1 && matches!(b, Val::Vector(_)) {
            Val::Vector(out)
        } else {
            Val::Matrix(n, bc, out)
        })
    }
}

fn check_ints(v: &Val, ints: &mut bool) {
    match v {
        Val::Int(_) => {}
        Val::Array(xs) => xs.iter().for_each(|x| check_ints(x, ints)),
        _ => *ints = false,
    }
}

/// `to_array_1d` order: arrays row-major, matrices column-major.
fn flatten_row_major_arrays(v: &Val, out: &mut Vec<Sc>) {
    v.flatten(out);
}

impl Elems {
    /// Like `from_scalars`, accepting an empty list.
    pub fn from_scalars_or_empty(v: Vec<Sc>) -> Elems {
        if v.is_empty() {
            Elems::C(Arc::new(vec![]))
        } else {
            Elems::from_scalars(v)
        }
    }
}

impl From<TraceErr> for String {
    fn from(e: TraceErr) -> String {
        match e {
            TraceErr::Compile(m, _) => m,
            TraceErr::Eval(e, _) => e.message,
            TraceErr::Dynamic(_) => "control flow depends on parameters".into(),
        }
    }
}

/// `v` as a value of Stan type `ty`: ints become reals where `ty` has a real base (Stan's
/// promotion of arguments, returns and ternary branches); anything else is returned as is.
pub fn promote(ty: &Type, v: Val) -> Val {
    match (ty, v) {
        (Type::Real, Val::Int(i)) => Val::real(i as f64),
        (Type::Complex | Type::ComplexVector | Type::ComplexRowVector | Type::ComplexMatrix, v)
            if !matches!(v, Val::Complex(_)) =>
        {
            super::trace::to_complex(v)
        }
        (Type::Array(dims, elem), Val::Array(xs))
            if needs_promotion(elem) && holds_promotable(elem, &xs) =>
        {
            let inner = Type::array(dims - 1, (**elem).clone());
            Val::array(xs.iter().map(|x| promote(&inner, x.clone())).collect())
        }
        (Type::Tuple(tys), Val::Tuple(xs)) if tys.len() == xs.len() => Val::Tuple(Arc::new(
            tys.iter()
                .zip(xs.iter())
                .map(|(t, x)| promote(t, x.clone()))
                .collect(),
        )),
        (_, v) => v,
    }
}

/// Whether the leaves of an array of element type `elem` need promoting: ints where `elem`
/// is real, reals where it is complex (arrays are homogeneous: the first leaf decides).
fn holds_promotable(elem: &Type, xs: &[Val]) -> bool {
    match (elem, xs.first()) {
        (_, Some(Val::Array(inner))) => holds_promotable(elem, inner),
        (Type::Real, Some(Val::Int(_))) => true,
        (Type::Tuple(_), Some(Val::Tuple(_))) => true,
        (
            Type::Complex | Type::ComplexVector | Type::ComplexRowVector | Type::ComplexMatrix,
            Some(v),
        ) => !matches!(v, Val::Complex(_)),
        _ => false,
    }
}

fn needs_promotion(ty: &Type) -> bool {
    match ty {
        Type::Real
        | Type::Complex
        | Type::ComplexVector
        | Type::ComplexRowVector
        | Type::ComplexMatrix => true,
        Type::Array(_, e) => needs_promotion(e),
        Type::Tuple(ts) => ts.iter().any(needs_promotion),
        _ => false,
    }
}
