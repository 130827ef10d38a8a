//! Complex scalars, vectors and matrices. A complex value is its real and imaginary parts
//! ([`Val::Complex`]), two real values of the same shape, so every complex operation is
//! written with the real ops the graph already has: derivatives come from their rules, and a
//! complex expression of parameters stays on the static path.
//!
//! - Structural and linear functions (slicing, reshaping, `append_*`, `sum`, `+`, `-`, ...)
//!   run the real function on each part ([`Tracer::complex_partwise`]).
//! - Products (`*`, `.*`, `diag_*_multiply`, ...) are bilinear: (a + bi)(c + di) =
//!   (ac − bd) + (ad + bc)i with the real product for each term.
//! - Elementary functions use their textbook identities (`exp(a + bi) = eᵃ(cos b + i sin b)`,
//!   `log z = log|z| + i·atan2(b, a)`, principal branches as C++'s `std::complex`).
//! - `fft`/`inv_fft` are products with constant cosine and sine matrices (exact DFT sums),
//!   `fft2`/`inv_fft2` the same along columns then rows.

use super::trace::{cerr, complex_parts, to_complex, Tracer, R};
use super::value::{Elems, Val};
use crate::kernels::{BinaryFn, UnaryFn};
use hazel_syntax::ast::BinOp;
use hazel_syntax::Span;
use std::sync::Arc;

/// Functions that build complex values from real arguments.
const CONSTRUCTORS: [&str; 2] = ["to_complex", "polar"];

/// Functions whose result is the real function applied to each part, with every non-integer
/// argument promoted to complex (integers are sizes and indexes).
const PARTWISE: [&str; 27] = [
    "head",
    "tail",
    "segment",
    "reverse",
    "block",
    "col",
    "row",
    "sub_col",
    "sub_row",
    "to_vector",
    "to_row_vector",
    "to_matrix",
    "to_array_1d",
    "to_array_2d",
    "diag_matrix",
    "diagonal",
    "symmetrize_from_lower_tri",
    "cumulative_sum",
    "sum",
    "rep_vector",
    "rep_row_vector",
    "rep_matrix",
    "rep_array",
    "append_row",
    "append_col",
    "add_diag",
    "trace",
];

/// Functions of the shape only: run on the real part.
const SHAPE: [&str; 5] = ["rows", "cols", "size", "num_elements", "dims"];

/// Bilinear products: the real function applied to the four part combinations.
const BILINEAR: [&str; 2] = ["diag_pre_multiply", "diag_post_multiply"];

impl<'p> Tracer<'p> {
    /// Whether a call must run as a complex function: a complex argument, or a constructor.
    pub fn is_complex_call(name: &str, args: &[Val]) -> bool {
        CONSTRUCTORS.contains(&name)
            || super::complex_linalg::ALWAYS_COMPLEX.contains(&name)
            || args.iter().any(Val::holds_complex)
    }

    /// A built-in called with complex arguments (or a complex constructor).
    pub fn complex_call(&mut self, name: &str, args: Vec<Val>, span: Span) -> R<Val> {
        if let Some(result) = self.complex_linalg(name, &args, span) {
            return result;
        }
        if PARTWISE.contains(&name) {
            return self.complex_partwise(name, args, span);
        }
        if SHAPE.contains(&name) {
            let args = args.into_iter().map(|a| real_part(&a)).collect();
            return self.call(name, args, span);
        }
        if BILINEAR.contains(&name) && args.len() == 2 {
            let name = name.to_string();
            return self.bilinear(&args[0], &args[1], span, |tr, x, y, span| {
                tr.call(&name, vec![x.clone(), y.clone()], span)
            });
        }
        let one = |args: &[Val]| -> R<Val> {
            match args {
                [z] => Ok(z.clone()),
                _ => cerr(format!("{name} expects 1 argument"), span),
            }
        };
        match name {
            "to_complex" => {
                let re = match args.first() {
                    Some(v) => self.real_val(v),
                    None => Val::real(0.0),
                };
                let im = match args.get(1) {
                    Some(v) => self.real_val(v),
                    None => super::trace::zeros_like(&re),
                };
                Ok(Val::complex(re, im))
            }
            "polar" => {
                let [r, theta] = args.as_slice() else {
                    return cerr("polar expects 2 arguments", span);
                };
                let c = self.map_unary(UnaryFn::Cos, theta, span)?;
                let s = self.map_unary(UnaryFn::Sin, theta, span)?;
                let re = self.map_binary(BinaryFn::Mul, r, &c, span)?;
                Ok(Val::complex(
                    re,
                    self.map_binary(BinaryFn::Mul, r, &s, span)?,
                ))
            }
            "get_real" => Ok(real_part(&one(&args)?)),
            "get_imag" => Ok(imag_part(&one(&args)?)),
            "conj" => {
                let (re, im) = self.split(&one(&args)?);
                Ok(join(re, self.map_unary(UnaryFn::Neg, &im, span)?))
            }
            "proj" => one(&args),
            "abs" => {
                let (re, im) = self.split(&one(&args)?);
                self.map_binary(BinaryFn::Hypot, &re, &im, span)
            }
            "arg" => {
                let (re, im) = self.split(&one(&args)?);
                self.map_binary(BinaryFn::Atan2, &im, &re, span)
            }
            "norm" => {
                let (re, im) = self.split(&one(&args)?);
                let a = self.map_unary(UnaryFn::Square, &re, span)?;
                let b = self.map_unary(UnaryFn::Square, &im, span)?;
                self.map_binary(BinaryFn::Add, &a, &b, span)
            }
            "pow" => {
                let [z, w] = args.as_slice() else {
                    return cerr("pow expects 2 arguments", span);
                };
                self.complex_pow(z, w, span)
            }
            "prod" => {
                let z = one(&args)?;
                let (re, im) = self.split(&z);
                let (re, im) = (self.to_elems(&re), self.to_elems(&im));
                let mut acc = Val::complex(Val::real(1.0), Val::real(0.0));
                for k in 0..re.len() {
                    let zk = Val::complex(Val::Real(re.get(k)), Val::Real(im.get(k)));
                    acc = self.complex_binop(BinOp::Mul, &acc, &zk, span)?;
                }
                Ok(acc)
            }
            "fft" | "inv_fft" => {
                let z = to_complex(one(&args)?);
                self.dft_vector(&z, name == "inv_fft", span)
            }
            "fft2" | "inv_fft2" => {
                let z = to_complex(one(&args)?);
                self.dft_matrix(&z, name == "inv_fft2", span)
            }
            "matrix_power" => {
                let [m, n] = args.as_slice() else {
                    return cerr("matrix_power expects 2 arguments", span);
                };
                let Val::Int(n) = n else {
                    return cerr("matrix_power: the power must be an int", span);
                };
                let m = to_complex(m.clone());
                let rows = real_part(&m).dims().first().copied().unwrap_or(0);
                let identity = Val::Matrix(
                    rows,
                    rows,
                    Elems::C(Arc::new(
                        (0..rows * rows)
                            .map(|k| f64::from(u8::from(k % (rows + 1) == 0)))
                            .collect(),
                    )),
                );
                let mut acc = to_complex(identity);
                for _ in 0..(*n).max(0) {
                    acc = self.complex_binop(BinOp::Mul, &acc, &m, span)?;
                }
                Ok(acc)
            }
            _ => match args.as_slice() {
                [z] => match self.complex_elementary(name, z, span) {
                    Ok(result) => result,
                    Err(()) => cerr(format!("'{name}' of complex values is not supported"), span),
                },
                _ => cerr(format!("'{name}' of complex values is not supported"), span),
            },
        }
    }

    /// `exp`, `log`, `sqrt`, trigonometric and hyperbolic functions and their inverses.
    fn complex_elementary(&mut self, name: &str, z: &Val, span: Span) -> Result<R<Val>, ()> {
        let one = Val::complex(Val::real(1.0), Val::real(0.0));
        let i = Val::complex(Val::real(0.0), Val::real(1.0));
        Ok(match name {
            "exp" => self.complex_exp(z, span),
            "log" => self.complex_log(z, span),
            "log10" => self.complex_log(z, span).and_then(|l| {
                let ln10 = Val::real(std::f64::consts::LN_10);
                self.complex_binop(BinOp::Div, &l, &ln10, span)
            }),
            "sqrt" => self.complex_pow(z, &Val::real(0.5), span),
            "sin" | "cos" | "sinh" | "cosh" => self.complex_trig(name, z, span),
            "tan" => self.complex_ratio("sin", "cos", z, span),
            "tanh" => self.complex_ratio("sinh", "cosh", z, span),
            // asin z = −i log(iz + √(1 − z²))
            "asin" => (|| {
                let z2 = self.complex_binop(BinOp::EltMul, z, z, span)?;
                let w = self.complex_binop(BinOp::Sub, &one, &z2, span)?;
                let root = self.complex_pow(&w, &Val::real(0.5), span)?;
                let iz = self.complex_binop(BinOp::Mul, &i, z, span)?;
                let sum = self.complex_binop(BinOp::Add, &iz, &root, span)?;
                let log = self.complex_log(&sum, span)?;
                let minus_i = Val::complex(Val::real(0.0), Val::real(-1.0));
                self.complex_binop(BinOp::Mul, &minus_i, &log, span)
            })(),
            // acos z = π/2 − asin z
            "acos" => self.complex_elementary("asin", z, span)?.and_then(|a| {
                let half_pi = Val::real(std::f64::consts::FRAC_PI_2);
                self.complex_binop(BinOp::Sub, &half_pi, &a, span)
            }),
            // atan z = (i/2)(log(1 − iz) − log(1 + iz))
            "atan" => (|| {
                let iz = self.complex_binop(BinOp::Mul, &i, z, span)?;
                let a = self.complex_binop(BinOp::Sub, &one, &iz, span)?;
                let b = self.complex_binop(BinOp::Add, &one, &iz, span)?;
                let la = self.complex_log(&a, span)?;
                let lb = self.complex_log(&b, span)?;
                let d = self.complex_binop(BinOp::Sub, &la, &lb, span)?;
                let half_i = Val::complex(Val::real(0.0), Val::real(0.5));
                self.complex_binop(BinOp::Mul, &half_i, &d, span)
            })(),
            // asinh z = log(z + √(z² + 1))
            "asinh" => (|| {
                let z2 = self.complex_binop(BinOp::EltMul, z, z, span)?;
                let w = self.complex_binop(BinOp::Add, &z2, &one, span)?;
                let root = self.complex_pow(&w, &Val::real(0.5), span)?;
                let sum = self.complex_binop(BinOp::Add, z, &root, span)?;
                self.complex_log(&sum, span)
            })(),
            // acosh z = log(z + √(z + 1)·√(z − 1))
            "acosh" => (|| {
                let p = self.complex_binop(BinOp::Add, z, &one, span)?;
                let m = self.complex_binop(BinOp::Sub, z, &one, span)?;
                let rp = self.complex_pow(&p, &Val::real(0.5), span)?;
                let rm = self.complex_pow(&m, &Val::real(0.5), span)?;
                let prod = self.complex_binop(BinOp::EltMul, &rp, &rm, span)?;
                let sum = self.complex_binop(BinOp::Add, z, &prod, span)?;
                self.complex_log(&sum, span)
            })(),
            // atanh z = (log(1 + z) − log(1 − z)) / 2
            "atanh" => (|| {
                let a = self.complex_binop(BinOp::Add, &one, z, span)?;
                let b = self.complex_binop(BinOp::Sub, &one, z, span)?;
                let la = self.complex_log(&a, span)?;
                let lb = self.complex_log(&b, span)?;
                let d = self.complex_binop(BinOp::Sub, &la, &lb, span)?;
                self.complex_binop(BinOp::Div, &d, &Val::real(2.0), span)
            })(),
            _ => return Err(()),
        })
    }

    /// exp(a + bi) = eᵃ cos b + i eᵃ sin b, elementwise.
    fn complex_exp(&mut self, z: &Val, span: Span) -> R<Val> {
        let (re, im) = self.split(z);
        let e = self.map_unary(UnaryFn::Exp, &re, span)?;
        let c = self.map_unary(UnaryFn::Cos, &im, span)?;
        let s = self.map_unary(UnaryFn::Sin, &im, span)?;
        let re = self.map_binary(BinaryFn::Mul, &e, &c, span)?;
        Ok(join(re, self.map_binary(BinaryFn::Mul, &e, &s, span)?))
    }

    /// log z = log|z| + i·atan2(b, a), elementwise (the principal branch).
    fn complex_log(&mut self, z: &Val, span: Span) -> R<Val> {
        let (re, im) = self.split(z);
        let r = self.map_binary(BinaryFn::Hypot, &re, &im, span)?;
        let log_r = self.map_unary(UnaryFn::Log, &r, span)?;
        Ok(join(
            log_r,
            self.map_binary(BinaryFn::Atan2, &im, &re, span)?,
        ))
    }

    /// zʷ = exp(w log z) (as `std::pow` for complex arguments).
    fn complex_pow(&mut self, z: &Val, w: &Val, span: Span) -> R<Val> {
        let log = self.complex_log(z, span)?;
        let product = self.complex_binop(BinOp::EltMul, &log, w, span)?;
        self.complex_exp(&product, span)
    }

    fn complex_trig(&mut self, name: &str, z: &Val, span: Span) -> R<Val> {
        let (a, b) = self.split(z);
        let (sin_a, cos_a) = (
            self.map_unary(UnaryFn::Sin, &a, span)?,
            self.map_unary(UnaryFn::Cos, &a, span)?,
        );
        let (sinh_b, cosh_b) = (
            self.map_unary(UnaryFn::Sinh, &b, span)?,
            self.map_unary(UnaryFn::Cosh, &b, span)?,
        );
        let (sinh_a, cosh_a) = (
            self.map_unary(UnaryFn::Sinh, &a, span)?,
            self.map_unary(UnaryFn::Cosh, &a, span)?,
        );
        let (sin_b, cos_b) = (
            self.map_unary(UnaryFn::Sin, &b, span)?,
            self.map_unary(UnaryFn::Cos, &b, span)?,
        );
        let mul = |tr: &mut Self, x: &Val, y: &Val| tr.map_binary(BinaryFn::Mul, x, y, span);
        let (re, im) = match name {
            // sin(a + bi) = sin a cosh b + i cos a sinh b
            "sin" => (mul(self, &sin_a, &cosh_b)?, mul(self, &cos_a, &sinh_b)?),
            // cos(a + bi) = cos a cosh b − i sin a sinh b
            "cos" => {
                let im = mul(self, &sin_a, &sinh_b)?;
                (
                    mul(self, &cos_a, &cosh_b)?,
                    self.map_unary(UnaryFn::Neg, &im, span)?,
                )
            }
            // sinh(a + bi) = sinh a cos b + i cosh a sin b
            "sinh" => (mul(self, &sinh_a, &cos_b)?, mul(self, &cosh_a, &sin_b)?),
            // cosh(a + bi) = cosh a cos b + i sinh a sin b
            _ => (mul(self, &cosh_a, &cos_b)?, mul(self, &sinh_a, &sin_b)?),
        };
        Ok(join(re, im))
    }

    fn complex_ratio(&mut self, num: &str, den: &str, z: &Val, span: Span) -> R<Val> {
        let n = self.complex_trig(num, z, span)?;
        let d = self.complex_trig(den, z, span)?;
        self.complex_binop(BinOp::EltDiv, &n, &d, span)
    }

    /// A binary operator with at least one complex operand.
    pub fn complex_binop(&mut self, op: BinOp, a: &Val, b: &Val, span: Span) -> R<Val> {
        use BinOp::*;
        match op {
            Add | Sub => {
                let (ar, ai) = self.split(a);
                let (br, bi) = self.split(b);
                let re = self.binop(op, &ar, &br, span)?;
                Ok(join(re, self.binop(op, &ai, &bi, span)?))
            }
            Mul | EltMul => self.bilinear(a, b, span, |tr, x, y, span| tr.binop(op, x, y, span)),
            Div | EltDiv => {
                // z / w = z·conj(w) / |w|², with |w|² real.
                let (br, bi) = self.split(b);
                let scalar = |v: &Val| {
                    matches!(v, Val::Real(_) | Val::Int(_) | Val::Complex(_)) && v.dims().is_empty()
                };
                if op == Div && !scalar(a) && !scalar(b) {
                    return cerr("division by a complex matrix is not supported", span);
                }
                let neg = self.map_unary(UnaryFn::Neg, &bi, span)?;
                let conj = join(br.clone(), neg);
                let num = self.bilinear(a, &conj, span, |tr, x, y, span| {
                    tr.binop(EltMul, x, y, span)
                })?;
                let br2 = self.map_unary(UnaryFn::Square, &br, span)?;
                let bi2 = self.map_unary(UnaryFn::Square, &bi, span)?;
                let den = self.map_binary(BinaryFn::Add, &br2, &bi2, span)?;
                let (nr, ni) = self.split(&num);
                let re = self.binop(EltDiv, &nr, &den, span)?;
                Ok(join(re, self.binop(EltDiv, &ni, &den, span)?))
            }
            Pow | EltPow => self.complex_pow(a, b, span),
            Eq | Neq => {
                let (ar, ai) = self.split(a);
                let (br, bi) = self.split(b);
                let same = self.real_value(&ar, span)? == self.real_value(&br, span)?
                    && self.real_value(&ai, span)? == self.real_value(&bi, span)?;
                Ok(Val::Int(i64::from(same == (op == Eq))))
            }
            _ => cerr(
                format!(
                    "operator `{}` is not defined for complex values",
                    op.symbol()
                ),
                span,
            ),
        }
    }

    /// −z.
    pub fn complex_neg(&mut self, z: &Val, span: Span) -> R<Val> {
        let (re, im) = self.split(z);
        let re = self.map_unary(UnaryFn::Neg, &re, span)?;
        Ok(join(re, self.map_unary(UnaryFn::Neg, &im, span)?))
    }

    /// zᵀ (Stan's `'` transposes a complex matrix without conjugating it).
    pub fn complex_transpose(&mut self, z: &Val, span: Span) -> R<Val> {
        let (re, im) = self.split(z);
        let re = self.transpose(&re, span)?;
        Ok(join(re, self.transpose(&im, span)?))
    }

    /// f(a + bi, c + di) for a real bilinear f: f(a, c) − f(b, d) + i(f(a, d) + f(b, c)).
    fn bilinear(
        &mut self,
        x: &Val,
        y: &Val,
        span: Span,
        mut f: impl FnMut(&mut Self, &Val, &Val, Span) -> R<Val>,
    ) -> R<Val> {
        let (a, b) = self.split(x);
        let (c, d) = self.split(y);
        let ac = f(self, &a, &c, span)?;
        let bd = f(self, &b, &d, span)?;
        let ad = f(self, &a, &d, span)?;
        let bc = f(self, &b, &c, span)?;
        let re = self.binop(BinOp::Sub, &ac, &bd, span)?;
        Ok(join(re, self.binop(BinOp::Add, &ad, &bc, span)?))
    }

    /// The real function `name` on each part, non-integer arguments promoted to complex.
    fn complex_partwise(&mut self, name: &str, args: Vec<Val>, span: Span) -> R<Val> {
        let mut re_args = Vec::with_capacity(args.len());
        let mut im_args = Vec::with_capacity(args.len());
        for a in args {
            if is_integer(&a) {
                re_args.push(a.clone());
                im_args.push(a);
            } else {
                let (re, im) = self.split(&a);
                re_args.push(re);
                im_args.push(im);
            }
        }
        let re = self.call(name, re_args, span)?;
        Ok(join(re, self.call(name, im_args, span)?))
    }

    /// The real and imaginary parts of a complex value or an array of them (arrays are split
    /// into an array of real parts and an array of imaginary parts).
    pub fn split(&mut self, v: &Val) -> (Val, Val) {
        match v {
            Val::Array(xs) if v.holds_complex() || !is_integer(v) => {
                let (re, im): (Vec<Val>, Vec<Val>) = xs.iter().map(|x| self.split(x)).unzip();
                (Val::array(re), Val::array(im))
            }
            other => complex_parts(other.clone()),
        }
    }

    fn real_val(&self, v: &Val) -> Val {
        match v {
            Val::Int(i) => Val::real(*i as f64),
            Val::Array(xs) => Val::array(xs.iter().map(|x| self.real_val(x)).collect()),
            other => other.clone(),
        }
    }

    /// The DFT of a complex vector: X_k = Σⱼ xⱼ e^{∓2πi jk/n} (÷ n for the inverse).
    fn dft_vector(&mut self, z: &Val, inverse: bool, span: Span) -> R<Val> {
        let (re, _) = self.split(z);
        let n = match re {
            Val::Vector(e) | Val::RowVector(e) => e.len(),
            _ => return cerr("fft expects a complex vector", span),
        };
        let f = dft_matrix(n, inverse);
        self.complex_binop(BinOp::Mul, &f, z, span)
    }

    /// The 2-D DFT of a complex matrix: F_rows · Z · F_colsᵀ (the DFT matrix is symmetric).
    fn dft_matrix(&mut self, z: &Val, inverse: bool, span: Span) -> R<Val> {
        let (re, _) = self.split(z);
        let Val::Matrix(rows, cols, _) = re else {
            return cerr("fft2 expects a complex matrix", span);
        };
        let left = dft_matrix(rows, inverse);
        let right = dft_matrix(cols, inverse);
        let partial = self.complex_binop(BinOp::Mul, &left, z, span)?;
        self.complex_binop(BinOp::Mul, &partial, &right, span)
    }
}

/// The n × n DFT matrix e^{∓2πi jk/n} (÷ n for the inverse), as a complex constant. The angle
/// uses jk mod n so that large products keep their precision.
fn dft_matrix(n: usize, inverse: bool) -> Val {
    let sign = if inverse { 1.0 } else { -1.0 };
    let scale = if inverse { 1.0 / n as f64 } else { 1.0 };
    let mut re = vec![0.0; n * n];
    let mut im = vec![0.0; n * n];
    for j in 0..n {
        for k in 0..n {
            let angle = sign * 2.0 * std::f64::consts::PI * ((j * k) % n) as f64 / n as f64;
            // column-major: row k, column j
            re[k + j * n] = scale * angle.cos();
            im[k + j * n] = scale * angle.sin();
        }
    }
    Val::complex(
        Val::Matrix(n, n, Elems::C(Arc::new(re))),
        Val::Matrix(n, n, Elems::C(Arc::new(im))),
    )
}

fn is_integer(v: &Val) -> bool {
    match v {
        Val::Int(_) => true,
        Val::Array(xs) => xs.first().is_some_and(is_integer),
        _ => false,
    }
}

fn real_part(v: &Val) -> Val {
    match v {
        Val::Complex(parts) => parts.0.clone(),
        Val::Array(xs) => Val::array(xs.iter().map(real_part).collect()),
        other => other.clone(),
    }
}

fn imag_part(v: &Val) -> Val {
    match v {
        Val::Complex(parts) => parts.1.clone(),
        Val::Array(xs) => Val::array(xs.iter().map(imag_part).collect()),
        other => super::trace::zeros_like(other),
    }
}

/// A complex value (or an array of them) from its parts (arrays of parts are zipped).
fn join(re: Val, im: Val) -> Val {
    match (re, im) {
        (Val::Array(rs), Val::Array(is)) => Val::array(
            rs.iter()
                .zip(is.iter())
                .map(|(r, i)| join(r.clone(), i.clone()))
                .collect(),
        ),
        (re, im) => Val::complex(re, im),
    }
}
