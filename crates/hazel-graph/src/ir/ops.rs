//! What the ops compute, as data: the elementwise functions, the univariate density
//! families and the matrix functions an [`crate::ir::Op`] names. Their value and gradient
//! rules are executor code (`crate::exec::cpu::kernels`, `dists`, `linalg_kernels`: `impl`
//! blocks on these types); the IR only names them.
//!
//! `Table` variants name an entry of `hazel_math`'s immutable function tables by a
//! `&'static` reference: an identity (its `name` is the key), never a pointer into a buffer.

use hazel_math::linalg::Factor;

/// A scalar function of hazel_math's table.
#[derive(Clone, Copy)]
pub struct MathUnary(pub &'static hazel_math::special::UnaryFn);

impl std::fmt::Debug for MathUnary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.name)
    }
}

/// A binary function of hazel_math's table.
#[derive(Clone, Copy)]
pub struct MathBinary(pub &'static hazel_math::special::BinaryFn);

impl std::fmt::Debug for MathBinary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.name)
    }
}

/// Elementwise unary functions: value `f(x)` and derivative `f'(x)` given `x` and `y = f(x)`.
#[derive(Debug, Clone, Copy)]
pub enum UnaryFn {
    Neg,
    Exp,
    Log,
    Sqrt,
    Square,
    Inv,
    Log1p,
    Expm1,
    Log1pExp,
    InvLogit,
    Logit,
    LogInvLogit,
    Log1mInvLogit,
    Log1m,
    Abs,
    Sin,
    Cos,
    Tan,
    Tanh,
    Sinh,
    Cosh,
    Asin,
    Acos,
    Atan,
    Log10,
    Log2,
    Exp2,
    InvSqrt,
    InvSquare,
    Cbrt,
    Lgamma,
    Digamma,
    Erf,
    Erfc,
    Phi,
    /// `x^c` with a constant exponent.
    PowConst(f64),
    /// `c * x`.
    Scale(f64),
    /// Zero-derivative step functions (floor, ceil, round, trunc, step).
    Floor,
    Ceil,
    Round,
    Trunc,
    /// Any other scalar function: value and derivative rules from hazel_math's table.
    Table(MathUnary),
}

/// Elementwise binary functions: value and both partial derivatives.
#[derive(Debug, Clone, Copy)]
pub enum BinaryFn {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Fmin,
    Fmax,
    Hypot,
    Atan2,
    LogSumExp,
    LogDiffExp,
    Fdim,
    Lbeta,
    Lchoose,
    /// Any other function: value and partials from hazel_math's table.
    Table(MathBinary),
}

/// What a table distribution op computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    Lpdf,
    Lcdf,
    Lccdf,
}

/// A distribution of `hazel_math::dist`'s table (evaluated through its function pointers).
#[derive(Clone, Copy)]
pub struct TableDist {
    pub dist: &'static hazel_math::dist::Distribution,
    pub mode: Mode,
}

impl std::fmt::Debug for TableDist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{:?}", self.dist.name, self.mode)
    }
}

impl PartialEq for TableDist {
    fn eq(&self, other: &Self) -> bool {
        self.dist.name == other.dist.name && self.mode == other.mode
    }
}
impl Eq for TableDist {}

/// By name, as [`PartialEq`] compares (a lane region's templates are told apart by their
/// densities' families).
impl std::hash::Hash for DistKind {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.name().hash(h);
        if let DistKind::Table(t) = self {
            t.mode.hash(h);
        }
    }
}

/// The univariate distributions: those with a `hazel_math::dist::kernel` (evaluated in a loop
/// monomorphised over the kernel) and, as `Table`, every other family and the cdfs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DistKind {
    Normal,
    StdNormal,
    Cauchy,
    StudentT,
    Lognormal,
    Exponential,
    Gamma,
    InvGamma,
    Beta,
    Uniform,
    DoubleExponential,
    Logistic,
    Weibull,
    ChiSquare,
    Poisson,
    PoissonLog,
    Bernoulli,
    BernoulliLogit,
    Binomial,
    BinomialLogit,
    NegBinomial2,
    NegBinomial2Log,
    /// Any other distribution (or a cdf) from `hazel_math::dist`.
    Table(TableDist),
}

/// Which function an [`Op::Linalg`] computes. `n` is the size of the square argument, `m`
/// the other dimension of the right-hand side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinalgFn {
    /// `A⁻¹` (`inverse`, or `inverse_spd` with `Factor::Spd`): `a` = A (`n × n`), `b` empty,
    /// `m = n`.
    Inverse(Factor),
    /// `A⁻¹ B`: `a` = A (`n × n`), `b` = B (`n × m`); `Factor::Spd` is `mdivide_left_spd`.
    MdivideLeft(Factor),
    /// `B A⁻¹`: `a` = B (`m × n`), `b` = A (`n × n`); `Factor::Spd` is `mdivide_right_spd`.
    MdivideRight(Factor),
    /// `B L⁻¹` for lower-triangular L: `a` = B (`m × n`), `b` = L (`n × n`).
    MdivideRightTriLow,
    /// `det A` (`a` = A, `b` empty).
    Determinant,
    /// `log |det A|`.
    LogDeterminant,
    /// `log det A` of a symmetric positive-definite A.
    LogDeterminantSpd,
    /// Eigenvalues of a symmetric A (`a` = A, `b` empty); the decomposition stays in scratch.
    EigenvaluesSym,
    /// Eigenvectors of a symmetric A.
    EigenvectorsSym,
    /// `matrix_exp(A)`.
    MatrixExp,
    /// Singular values of the `n × m` matrix `a` (here `n` is rows, `m` columns, `b` empty);
    /// the thin SVD stays in scratch.
    SingularValues,
    /// `svd_U` (`n × min(n, m)`).
    SvdU,
    /// `svd_V` (`m × min(n, m)`).
    SvdV,
    /// `qr_thin_Q` of the `n × m` matrix `a` (`n` rows, `m` columns): `n × min(n, m)`; the
    /// thin factors stay in scratch.
    QrThinQ,
    /// `qr_thin_R`: `min(n, m) × m`.
    QrThinR,
    /// `eigenvalues` (or `eigenvectors` when `vectors`) of a real non-symmetric `n × n`
    /// matrix `a` (`b` empty), or of the complex matrix with real part `a` and imaginary part
    /// `b` (`complex`): the output is the real parts then the imaginary parts (2n, or 2n²);
    /// values and eigenvectors stay in scratch.
    EigenGeneral { complex: bool, vectors: bool },
    /// `eigenvectors_sym` of the Hermitian matrix with real part `a` and imaginary part `b`
    /// (`n × n`): the real parts then the imaginary parts (2n²); values (as pairs) and vectors
    /// stay in scratch.
    EigenvectorsHermitian,
    /// `complex_schur_decompose_t` (or `_u` when `u`) of the real matrix `a` (`b` empty) or
    /// of the complex one with parts `a`, `b` (`complex`): real parts then imaginary parts
    /// (2n²); T and U stay in scratch.
    ComplexSchur { complex: bool, u: bool },
}
