//! The Stan syntax tree (Stan 2.37 surface syntax, after `#include` expansion).
//!
//! Conventions:
//! - Every [`Expr`], [`Stmt`] and [`LValue`] carries a [`NodeId`] (unique within one parse,
//!   assigned in source order) and a [`Span`]. Later stages key side tables (types, graph nodes)
//!   by `NodeId`.
//! - The tree is purely syntactic: names are not resolved, and whether an index `a[i]` is a
//!   single index or a multi-index (`i` an `int` vs an `array[] int`) is decided by the checker.
//! - Parentheses written in the source are kept as [`ExprKind::Paren`], so the pretty-printer
//!   reproduces them and `parse(print(ast))` equals `ast` up to locations.
//! - Which statements and transforms a block allows (e.g. no constraints on locals, no
//!   statements in `data`) is enforced by the parser where purely syntactic (declarations-only
//!   blocks) and otherwise by the checker.

use crate::span::Span;

/// Identity of one expression, statement or lvalue within a parse. Ids are dense, starting at
/// 0, in the order the parser finishes nodes. [`Program::node_count`] bounds them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct NodeId(pub u32);

/// A name as written, with its location.
#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// A whole Stan program: the optional blocks in their fixed order.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Program {
    pub functions: Option<FunctionsBlock>,
    pub data: Option<Block>,
    pub transformed_data: Option<Block>,
    pub parameters: Option<Block>,
    pub transformed_parameters: Option<Block>,
    pub model: Option<Block>,
    pub generated_quantities: Option<Block>,
    /// One more than the largest [`NodeId`] used in this program.
    pub node_count: u32,
}

/// Which program block a [`Block`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockKind {
    Data,
    TransformedData,
    Parameters,
    TransformedParameters,
    Model,
    GeneratedQuantities,
}

impl BlockKind {
    /// The block's keyword(s) as written in Stan, e.g. `"transformed data"`.
    pub fn keyword(self) -> &'static str {
        match self {
            BlockKind::Data => "data",
            BlockKind::TransformedData => "transformed data",
            BlockKind::Parameters => "parameters",
            BlockKind::TransformedParameters => "transformed parameters",
            BlockKind::Model => "model",
            BlockKind::GeneratedQuantities => "generated quantities",
        }
    }

    /// Whether the block may contain only variable declarations without initial values
    /// (`data`, `parameters`); the parser enforces this.
    pub fn declarations_only(self) -> bool {
        matches!(self, BlockKind::Data | BlockKind::Parameters)
    }
}

/// A program block other than `functions`. In `data` and `parameters` every statement is a
/// [`StmtKind::VarDecl`] without initialisers.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    pub kind: BlockKind,
    /// From the block keyword to the closing brace.
    pub span: Span,
    pub stmts: Vec<Stmt>,
}

/// The `functions { ... }` block.
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionsBlock {
    pub span: Span,
    pub functions: Vec<FunDef>,
}

/// A user function definition, or a forward declaration when `body` is `None`.
#[derive(Clone, Debug, PartialEq)]
pub struct FunDef {
    pub span: Span,
    pub return_type: ReturnType,
    pub name: Ident,
    pub args: Vec<FunArg>,
    /// The body (always a [`StmtKind::Block`]), or `None` for `real f(real x);`.
    pub body: Option<Stmt>,
}

/// One formal argument: `data array[] real xs`.
#[derive(Clone, Debug, PartialEq)]
pub struct FunArg {
    pub span: Span,
    /// Whether the `data` qualifier was written.
    pub data_only: bool,
    pub ty: UnsizedType,
    pub name: Ident,
}

/// A function's return type.
#[derive(Clone, Debug, PartialEq)]
pub enum ReturnType {
    Void(Span),
    Type(UnsizedType),
}

/// A type without sizes, as used for function arguments and returns: `array[,] vector`,
/// `tuple(real, array[] int)`.
#[derive(Clone, Debug, PartialEq)]
pub struct UnsizedType {
    pub span: Span,
    /// Number of array dimensions (`array[,] real` has 2); 0 for a non-array.
    pub array_dims: usize,
    pub elem: UnsizedElem,
}

/// The element type of an [`UnsizedType`].
#[derive(Clone, Debug, PartialEq)]
pub enum UnsizedElem {
    Int,
    Real,
    Complex,
    Vector,
    RowVector,
    Matrix,
    ComplexVector,
    ComplexRowVector,
    ComplexMatrix,
    Tuple(Vec<UnsizedType>),
}

/// A declared (sized) type, possibly an array: `array[N, M] vector<lower=0>[K]`.
#[derive(Clone, Debug, PartialEq)]
pub struct DeclType {
    pub span: Span,
    /// Array sizes, outermost first; empty for a non-array.
    pub array_dims: Vec<Expr>,
    pub elem: ElemType,
}

/// The element type of a [`DeclType`]: its shape, with the sizes as written, and its
/// constraint. Stan's type keywords are combinations of the two: `simplex[K]` is a
/// [`Shape::Vector`] with [`Constraint::Simplex`], `real<lower=0>` a [`Shape::Real`] with
/// [`Constraint::Bounds`] (the constrained keywords: [`CONSTRAINED_TYPES`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ElemType {
    pub shape: Shape,
    pub constraint: Constraint,
}

/// The shape of a declared element type, with its size expressions.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    Int,
    Real,
    Complex,
    Vector {
        size: Expr,
    },
    RowVector {
        size: Expr,
    },
    /// A real matrix. `cols` is `None` for the square constrained types written with one size
    /// (`corr_matrix[K]`, `cov_matrix[K]`, `cholesky_factor_corr[K]`, `cholesky_factor_cov[M]`):
    /// the matrix is `rows × rows`.
    Matrix {
        rows: Expr,
        cols: Option<Expr>,
    },
    ComplexVector {
        size: Expr,
    },
    ComplexRowVector {
        size: Expr,
    },
    ComplexMatrix {
        rows: Expr,
        cols: Expr,
    },
    /// `tuple(T1, T2, ...)`, at least two components; components may have constraints.
    Tuple(Vec<DeclType>),
}

impl Shape {
    /// The size expressions in written order (a square matrix written with one size has one).
    pub fn sizes(&self) -> Vec<&Expr> {
        match self {
            Shape::Int | Shape::Real | Shape::Complex | Shape::Tuple(_) => vec![],
            Shape::Vector { size }
            | Shape::RowVector { size }
            | Shape::ComplexVector { size }
            | Shape::ComplexRowVector { size } => vec![size],
            Shape::Matrix { rows, cols } => std::iter::once(rows).chain(cols.as_ref()).collect(),
            Shape::ComplexMatrix { rows, cols } => vec![rows, cols],
        }
    }

    /// The size expressions, mutably, in written order.
    pub fn sizes_mut(&mut self) -> Vec<&mut Expr> {
        match self {
            Shape::Int | Shape::Real | Shape::Complex | Shape::Tuple(_) => vec![],
            Shape::Vector { size }
            | Shape::RowVector { size }
            | Shape::ComplexVector { size }
            | Shape::ComplexRowVector { size } => vec![size],
            Shape::Matrix { rows, cols } => std::iter::once(rows).chain(cols.as_mut()).collect(),
            Shape::ComplexMatrix { rows, cols } => vec![rows, cols],
        }
    }

    /// Whether the elements are complex.
    pub fn is_complex(&self) -> bool {
        matches!(
            self,
            Shape::Complex
                | Shape::ComplexVector { .. }
                | Shape::ComplexRowVector { .. }
                | Shape::ComplexMatrix { .. }
        )
    }
}

/// The constraint of a declared element type: nothing, bounds or an affine transform written
/// in `<...>` after `int`, `real`, `vector`, `row_vector` or `matrix`, or the constraint of a
/// constrained type keyword. The parser accepts `<...>` on any of those five shapes; the
/// checker rejects misplaced ones (e.g. constraints on local variables, `offset` on `int`).
#[derive(Clone, Debug, PartialEq, Default)]
pub enum Constraint {
    /// No `<...>`, no constrained keyword.
    #[default]
    None,
    /// `<lower=L>`, `<upper=U>` or `<lower=L, upper=U>` (at least one is `Some`).
    Bounds {
        lower: Option<Expr>,
        upper: Option<Expr>,
    },
    /// `<offset=O>`, `<multiplier=M>` or both, in either written order (at least one `Some`).
    Affine {
        offset: Option<Expr>,
        multiplier: Option<Expr>,
    },
    Simplex,
    UnitVector,
    /// `sum_to_zero_vector` (a vector shape) or `sum_to_zero_matrix` (a matrix shape).
    SumToZero,
    Ordered,
    PositiveOrdered,
    CholeskyFactorCorr,
    CholeskyFactorCov,
    CorrMatrix,
    CovMatrix,
    ColumnStochastic,
    RowStochastic,
}

impl Constraint {
    /// Whether nothing is constrained.
    pub fn is_none(&self) -> bool {
        matches!(self, Constraint::None)
    }

    /// Whether the constraint is written in `<...>` (or absent), rather than being the
    /// constraint of a constrained type keyword.
    pub fn is_written_in_angles(&self) -> bool {
        matches!(
            self,
            Constraint::None | Constraint::Bounds { .. } | Constraint::Affine { .. }
        )
    }

    /// The expressions of a `<...>` constraint in written order (`lower` before `upper`,
    /// `offset` before `multiplier`).
    pub fn exprs(&self) -> Vec<&Expr> {
        match self {
            Constraint::Bounds { lower, upper } => lower.iter().chain(upper).collect(),
            Constraint::Affine { offset, multiplier } => offset.iter().chain(multiplier).collect(),
            _ => vec![],
        }
    }

    /// The expressions of a `<...>` constraint, mutably, in written order.
    pub fn exprs_mut(&mut self) -> Vec<&mut Expr> {
        match self {
            Constraint::Bounds { lower, upper } => lower.iter_mut().chain(upper).collect(),
            Constraint::Affine { offset, multiplier } => {
                offset.iter_mut().chain(multiplier).collect()
            }
            _ => vec![],
        }
    }
}

/// How the sizes of a constrained type keyword are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeForm {
    /// `[K]`: a vector of K.
    Vector,
    /// `[R, C]`: an R × C matrix.
    Matrix,
    /// `[K]`: a K × K matrix.
    Square,
    /// `[M]` (M × M) or `[M, N]`.
    SquareOrMatrix,
}

/// A constrained type keyword: the constraint it declares and how its sizes are written.
#[derive(Debug)]
pub struct ConstrainedType {
    pub keyword: &'static str,
    pub constraint: Constraint,
    pub sizes: SizeForm,
}

/// Stan's constrained type keywords, the one table the parser reads them with and the printer
/// writes them from.
pub const CONSTRAINED_TYPES: &[ConstrainedType] = &[
    ConstrainedType {
        keyword: "simplex",
        constraint: Constraint::Simplex,
        sizes: SizeForm::Vector,
    },
    ConstrainedType {
        keyword: "unit_vector",
        constraint: Constraint::UnitVector,
        sizes: SizeForm::Vector,
    },
    ConstrainedType {
        keyword: "sum_to_zero_vector",
        constraint: Constraint::SumToZero,
        sizes: SizeForm::Vector,
    },
    ConstrainedType {
        keyword: "sum_to_zero_matrix",
        constraint: Constraint::SumToZero,
        sizes: SizeForm::Matrix,
    },
    ConstrainedType {
        keyword: "ordered",
        constraint: Constraint::Ordered,
        sizes: SizeForm::Vector,
    },
    ConstrainedType {
        keyword: "positive_ordered",
        constraint: Constraint::PositiveOrdered,
        sizes: SizeForm::Vector,
    },
    ConstrainedType {
        keyword: "cholesky_factor_corr",
        constraint: Constraint::CholeskyFactorCorr,
        sizes: SizeForm::Square,
    },
    ConstrainedType {
        keyword: "cholesky_factor_cov",
        constraint: Constraint::CholeskyFactorCov,
        sizes: SizeForm::SquareOrMatrix,
    },
    ConstrainedType {
        keyword: "corr_matrix",
        constraint: Constraint::CorrMatrix,
        sizes: SizeForm::Square,
    },
    ConstrainedType {
        keyword: "cov_matrix",
        constraint: Constraint::CovMatrix,
        sizes: SizeForm::Square,
    },
    ConstrainedType {
        keyword: "column_stochastic_matrix",
        constraint: Constraint::ColumnStochastic,
        sizes: SizeForm::Matrix,
    },
    ConstrainedType {
        keyword: "row_stochastic_matrix",
        constraint: Constraint::RowStochastic,
        sizes: SizeForm::Matrix,
    },
];

impl ElemType {
    /// An element type without a constraint.
    pub fn plain(shape: Shape) -> ElemType {
        ElemType {
            shape,
            constraint: Constraint::None,
        }
    }

    /// The constrained type keyword this element type is written with (`None` for the
    /// unconstrained keywords, which take `<...>`).
    pub fn constrained_type(&self) -> Option<&'static ConstrainedType> {
        if self.constraint.is_written_in_angles() {
            return None;
        }
        let is_vector = matches!(self.shape, Shape::Vector { .. });
        CONSTRAINED_TYPES
            .iter()
            .find(|t| t.constraint == self.constraint && (t.sizes == SizeForm::Vector) == is_vector)
    }

    /// The Stan type keyword this element type is written with (`simplex`, `real`, `tuple`).
    pub fn keyword(&self) -> &'static str {
        if let Some(constrained) = self.constrained_type() {
            return constrained.keyword;
        }
        match self.shape {
            Shape::Int => "int",
            Shape::Real => "real",
            Shape::Complex => "complex",
            Shape::Vector { .. } => "vector",
            Shape::RowVector { .. } => "row_vector",
            Shape::Matrix { .. } => "matrix",
            Shape::ComplexVector { .. } => "complex_vector",
            Shape::ComplexRowVector { .. } => "complex_row_vector",
            Shape::ComplexMatrix { .. } => "complex_matrix",
            Shape::Tuple(_) => "tuple",
        }
    }

    /// The bounds or affine transform written in `<...>` on a real or integer shape (`int`,
    /// `real`, `vector`, `row_vector`, `matrix`), possibly [`Constraint::None`]; `None` for
    /// complex shapes, tuples and constrained type keywords.
    pub fn angle_constraint(&self) -> Option<&Constraint> {
        let real_shape = matches!(
            self.shape,
            Shape::Int
                | Shape::Real
                | Shape::Vector { .. }
                | Shape::RowVector { .. }
                | Shape::Matrix { .. }
        );
        (real_shape && self.constraint.is_written_in_angles()).then_some(&self.constraint)
    }
}

/// One declarator of a declaration statement: the name and the optional `= init`.
#[derive(Clone, Debug, PartialEq)]
pub struct Declarator {
    pub name: Ident,
    pub init: Option<Expr>,
}

/// `real<lower=0> x = 1, y;` — one type, one or more declarators (Stan allows several names
/// per declaration; the type, and so its size expressions, is written once).
#[derive(Clone, Debug, PartialEq)]
pub struct VarDecl {
    pub ty: DeclType,
    pub declarators: Vec<Declarator>,
}

/// A statement.
#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub id: NodeId,
    pub span: Span,
    pub kind: StmtKind,
}

/// Assignment operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AssignOp {
    /// `=`
    Assign,
    /// `+=`
    Add,
    /// `-=`
    Sub,
    /// `*=`
    Mul,
    /// `/=`
    Div,
    /// `.*=`
    EltMul,
    /// `./=`
    EltDiv,
}

impl AssignOp {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            AssignOp::Assign => "=",
            AssignOp::Add => "+=",
            AssignOp::Sub => "-=",
            AssignOp::Mul => "*=",
            AssignOp::Div => "/=",
            AssignOp::EltMul => ".*=",
            AssignOp::EltDiv => "./=",
        }
    }

    /// The binary operator a compound assignment applies (`None` for plain `=`).
    pub fn binary_op(self) -> Option<BinOp> {
        match self {
            AssignOp::Assign => None,
            AssignOp::Add => Some(BinOp::Add),
            AssignOp::Sub => Some(BinOp::Sub),
            AssignOp::Mul => Some(BinOp::Mul),
            AssignOp::Div => Some(BinOp::Div),
            AssignOp::EltMul => Some(BinOp::EltMul),
            AssignOp::EltDiv => Some(BinOp::EltDiv),
        }
    }
}

/// Truncation bounds of a `~` statement: `T[L, U]`, `T[L, ]`, `T[, U]` (and `T[, ]`, which
/// has neither).
#[derive(Clone, Debug, PartialEq)]
pub struct Truncation {
    pub span: Span,
    pub lower: Option<Expr>,
    pub upper: Option<Expr>,
}

/// One argument of `print`, `reject` or `fatal_error`.
#[derive(Clone, Debug, PartialEq)]
pub enum Printable {
    /// A string literal; `value` is the text between the quotes exactly as written (Stan has
    /// no escape sequences).
    Str {
        value: String,
        span: Span,
    },
    Expr(Expr),
}

/// Statement kinds.
#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// A local or block-level variable declaration.
    VarDecl(VarDecl),
    /// `lhs op rhs;`
    Assign {
        lhs: LValue,
        op: AssignOp,
        rhs: Expr,
    },
    /// `lhs ~ dist(args) T[...];`. `dist` is the distribution name as written (no suffix).
    Tilde {
        lhs: Expr,
        dist: Ident,
        args: Vec<Expr>,
        truncation: Option<Truncation>,
    },
    /// `target += e;`
    TargetPlusAssign(Expr),
    /// `jacobian += e;` (Stan 2.36+, transformed parameters and `_jacobian` functions).
    JacobianPlusAssign(Expr),
    /// `for (var in lower:upper) body`
    For {
        var: Ident,
        lower: Expr,
        upper: Expr,
        body: Box<Stmt>,
    },
    /// `for (var in container) body`
    Foreach {
        var: Ident,
        iterable: Expr,
        body: Box<Stmt>,
    },
    /// `while (cond) body`
    While {
        cond: Expr,
        body: Box<Stmt>,
    },
    /// `if (cond) then_branch else else_branch`
    If {
        cond: Expr,
        then_branch: Box<Stmt>,
        else_branch: Option<Box<Stmt>>,
    },
    Break,
    Continue,
    /// `return;` or `return e;`
    Return(Option<Expr>),
    /// `print(...);`
    Print(Vec<Printable>),
    /// `reject(...);`
    Reject(Vec<Printable>),
    /// `fatal_error(...);`
    FatalError(Vec<Printable>),
    /// `{ ... }`
    Block(Vec<Stmt>),
    /// `profile("name") { ... }`
    Profile {
        name: String,
        body: Vec<Stmt>,
    },
    /// A function call used as a statement: `f(x);`
    Call {
        name: Ident,
        args: Vec<Expr>,
    },
    /// A lone `;`.
    Empty,
}

/// The left-hand side of an assignment.
#[derive(Clone, Debug, PartialEq)]
pub struct LValue {
    pub id: NodeId,
    pub span: Span,
    pub kind: LValueKind,
}

/// Left-hand side kinds.
#[derive(Clone, Debug, PartialEq)]
pub enum LValueKind {
    /// `x`
    Var(Ident),
    /// `x[i, j]`, `x[i][2:]` (nested indexing is nested `Index` nodes).
    Index {
        base: Box<LValue>,
        indices: Vec<Index>,
    },
    /// `x.2` (1-based component as written).
    TupleProj { base: Box<LValue>, index: usize },
    /// `(a, b.1, c[2]) = ...` tuple unpacking (Stan 2.36+).
    Tuple(Vec<LValue>),
}

/// An expression.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub id: NodeId,
    pub span: Span,
    pub kind: ExprKind,
}

/// Binary operators, loosest-binding first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `||`
    Or,
    /// `&&`
    And,
    /// `==`
    Eq,
    /// `!=`
    Neq,
    /// `<`
    Lt,
    /// `<=`
    Leq,
    /// `>`
    Gt,
    /// `>=`
    Geq,
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Mod,
    /// `.*`
    EltMul,
    /// `./`
    EltDiv,
    /// `%/%` integer division
    IntDiv,
    /// `\` left division
    LeftDiv,
    /// `^`
    Pow,
    /// `.^`
    EltPow,
}

impl BinOp {
    /// Every binary operator.
    pub const ALL: [BinOp; 19] = [
        BinOp::Or,
        BinOp::And,
        BinOp::Eq,
        BinOp::Neq,
        BinOp::Lt,
        BinOp::Leq,
        BinOp::Gt,
        BinOp::Geq,
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::Div,
        BinOp::Mod,
        BinOp::IntDiv,
        BinOp::EltMul,
        BinOp::EltDiv,
        BinOp::LeftDiv,
        BinOp::Pow,
        BinOp::EltPow,
    ];

    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Or => "||",
            BinOp::And => "&&",
            BinOp::Eq => "==",
            BinOp::Neq => "!=",
            BinOp::Lt => "<",
            BinOp::Leq => "<=",
            BinOp::Gt => ">",
            BinOp::Geq => ">=",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Mod => "%",
            BinOp::IntDiv => "%/%",
            BinOp::EltMul => ".*",
            BinOp::EltDiv => "./",
            BinOp::LeftDiv => "\\",
            BinOp::Pow => "^",
            BinOp::EltPow => ".^",
        }
    }

    /// Binding strength: higher binds tighter. Levels, loosest first (the ternary `?:` is
    /// below all of them, prefix operators sit between `\` and `^`, postfix `'` and
    /// indexing above `^`):
    /// `||` 1, `&&` 2, `== !=` 3, `< <= > >=` 4, `+ -` 5, `* / % .* ./` 6, `\ %/%` 7,
    /// `^ .^` 9 (right-associative). All others are left-associative.
    ///
    /// This is what stanc 2.37 implements (and what programs rely on): `.*` and `./` bind like
    /// `*` (stan-dev/docs#27 records the manual's older table listing them tighter than `\`),
    /// and `%/%` binds like `\`, tighter than `*`.
    pub fn precedence(self) -> u8 {
        match self {
            BinOp::Or => 1,
            BinOp::And => 2,
            BinOp::Eq | BinOp::Neq => 3,
            BinOp::Lt | BinOp::Leq | BinOp::Gt | BinOp::Geq => 4,
            BinOp::Add | BinOp::Sub => 5,
            BinOp::Mul | BinOp::Div | BinOp::Mod | BinOp::EltMul | BinOp::EltDiv => 6,
            BinOp::LeftDiv | BinOp::IntDiv => 7,
            BinOp::Pow | BinOp::EltPow => 9,
        }
    }

    /// Whether the operator groups to the right (`a^b^c` = `a^(b^c)`).
    pub fn is_right_assoc(self) -> bool {
        matches!(self, BinOp::Pow | BinOp::EltPow)
    }
}

/// Precedence of prefix operators (`!`, `-`, `+`), between `\` and `^`: `-a^b` is `-(a^b)`
/// and `-a * b` is `(-a) * b`.
pub(crate) const PREFIX_PRECEDENCE: u8 = 8;

/// Prefix operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `!`
    Not,
    /// `-`
    Neg,
    /// `+`
    Plus,
}

impl UnaryOp {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            UnaryOp::Not => "!",
            UnaryOp::Neg => "-",
            UnaryOp::Plus => "+",
        }
    }
}

/// One index inside `[...]`.
#[derive(Clone, Debug, PartialEq)]
pub enum Index {
    /// `:` — everything.
    All,
    /// `e` — a single index if `e` is `int`, a multi-index if `e` is `array[] int`.
    Single(Expr),
    /// `lo:`
    Lower(Expr),
    /// `:hi`
    Upper(Expr),
    /// `lo:hi`
    Range(Expr, Expr),
}

/// Expression kinds.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// Integer literal. Values above `i32::MAX` are reported as errors by the parser and
    /// stored saturated.
    IntLit(i64),
    /// Real literal: `1.5`, `1e-3`, `.5`, `2.`. `text` is the spelling as written.
    RealLit { value: f64, text: String },
    /// Imaginary literal: `2i`, `1.5i`. `value` is the imaginary part; `text` excludes the `i`.
    ImagLit { value: f64, text: String },
    /// A variable reference.
    Var(Ident),
    /// `(e)` as written.
    Paren(Box<Expr>),
    /// `lhs op rhs`
    Binary {
        op: BinOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// `op operand`
    Unary { op: UnaryOp, operand: Box<Expr> },
    /// Postfix `'`.
    Transpose(Box<Expr>),
    /// `cond ? then_expr : else_expr`
    Ternary {
        cond: Box<Expr>,
        then_expr: Box<Expr>,
        else_expr: Box<Expr>,
    },
    /// `f(args)`
    Call { name: Ident, args: Vec<Expr> },
    /// `f(first | rest...)` — the conditional-bar call for `_lpdf`/`_lpmf`/`_lcdf`/... ;
    /// `args[0]` is the expression before the bar.
    CondDistCall { name: Ident, args: Vec<Expr> },
    /// `target()`
    Target,
    /// `base[indices]`
    Index {
        base: Box<Expr>,
        indices: Vec<Index>,
    },
    /// `base.k` tuple component (1-based as written).
    TupleProj { base: Box<Expr>, index: usize },
    /// `{ e1, e2, ... }` array expression (at least one element).
    Array(Vec<Expr>),
    /// `[ e1, e2, ... ]` row-vector (or, of row vectors, matrix) expression; may be empty.
    RowVector(Vec<Expr>),
    /// `(e1, e2, ...)` tuple expression (at least two elements).
    Tuple(Vec<Expr>),
}

impl Program {
    /// The non-function blocks that are present, in program order.
    pub fn blocks(&self) -> impl Iterator<Item = &Block> {
        [
            &self.data,
            &self.transformed_data,
            &self.parameters,
            &self.transformed_parameters,
            &self.model,
            &self.generated_quantities,
        ]
        .into_iter()
        .filter_map(|b| b.as_ref())
    }

    /// Sets every span to [`Span::DUMMY`] and every node id to 0, so that two programs can be
    /// compared for structural equality regardless of where they came from.
    pub fn strip_locations(&mut self) {
        crate::visit::strip_locations(self);
    }

    /// Structural equality ignoring spans and node ids (e.g. `parse(print(p))` vs `p`).
    pub fn same_structure(&self, other: &Program) -> bool {
        let mut a = self.clone();
        let mut b = other.clone();
        a.strip_locations();
        b.strip_locations();
        a == b
    }
}
