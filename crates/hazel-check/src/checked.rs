//! The result of checking: the syntax tree plus side tables keyed by [`NodeId`].
//!
//! How to look things up (what `hazel-graph` needs when it lowers the program):
//!
//! | question | lookup |
//! |---|---|
//! | type of expression `e` | [`CheckedProgram::expr_type`]`(e.id)` |
//! | does `e` depend on parameters? | [`CheckedProgram::is_data_only`]`(e.id)` (Stan's rule, see below) |
//! | which variable does `Var` expr / `Var` lvalue `n` name? | [`CheckedProgram::variable_of`]`(n.id)` → [`VarId`] → [`CheckedProgram::variable`] |
//! | which function does a call run? | [`CheckedProgram::call_target`]`(id)` for `Call`/`CondDistCall` expressions, `Call` statements, `~` statements (the density), and operator expressions (`Binary`, `Unary`, `Transpose`: the resolved operator signature) |
//! | which variables does a declaration statement declare? | [`CheckedProgram::declared_vars`]`(stmt.id)` (one per declarator, in order) |
//! | the loop variable of a `for`/`foreach` | [`CheckedProgram::declared_vars`]`(stmt.id)[0]` |
//! | is index `a[i]` single or multi? | the type of `i`: `int` = single, `array[] int` = multi |
//! | a function argument's variable | [`UserFunction::arg_vars`] |
//! | the function passed to a higher-order built-in (`ode_rk45(f, ...)`) | [`CheckedProgram::call_target`]`(arg.id)` on the `Var` argument: [`CallTarget::User`] |
//! | the CDFs of a truncated `~` | [`CheckedProgram::truncation_targets`]`(stmt.id)` |
//! | the operator of a compound assignment `x += e` | [`CheckedProgram::call_target`]`(stmt.id)` |
//!
//! Data-only follows stanc's rule: an expression is data-only when every variable it reads is
//! data-only, where int-valued variables are always data-only (ints are never differentiated)
//! and real-valued ones are data-only when declared in `data`, `transformed data` or
//! `generated quantities` or as a `data` function argument. `target()` and calls of `_lp`
//! functions are never data-only; an `_rng` call is data-only when its arguments are. Note that an `int` local of the model block computed from a parameter
//! (`int k = theta > 0;`) is data-only by this rule although its value changes with the
//! parameters: do not hoist a computation out of the per-evaluation graph on this flag alone;
//! use [`CheckedProgram::is_parameter_free`], which is computed by dataflow over variables.

use hazel_syntax::ast::{BlockKind, NodeId, Program};
use hazel_syntax::Span;

use crate::signatures::{Signature, SignatureTable};
use crate::types::Type;

/// Index into [`CheckedProgram::variables`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VarId(pub u32);

/// Where a variable was declared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Origin {
    /// A top-level declaration of a program block.
    Block(BlockKind),
    /// A local variable inside a block's statements (`None`: inside a function body).
    Local(Option<BlockKind>),
    /// A function argument (`data`-qualified or not).
    FunctionArg { data_only: bool },
    /// The variable of a `for` or `foreach` loop.
    LoopVar(Option<BlockKind>),
}

/// One declared variable.
#[derive(Clone, Debug, PartialEq)]
pub struct VariableInfo {
    pub name: String,
    pub ty: Type,
    pub origin: Origin,
    /// The span of the name at the declaration.
    pub span: Span,
    /// The statement that declares it (`None` for function arguments).
    pub decl_stmt: Option<NodeId>,
    /// Stan's data-only status of the variable (see the module docs).
    pub data_only: bool,
}

/// A user-defined function (definition or forward declaration merged with its definition).
#[derive(Clone, Debug, PartialEq)]
pub struct UserFunction {
    pub name: String,
    /// (data-only qualifier, type) for each argument.
    pub args: Vec<(bool, Type)>,
    pub ret: Type,
    /// Index into `program.functions.functions` of the definition with a body (or of the
    /// declaration if no body exists, which is an error already reported).
    pub def_index: usize,
    /// Variables of the arguments in the definition's body scope.
    pub arg_vars: Vec<VarId>,
    pub span: Span,
}

/// What a call (or operator, or `~` statement) resolved to.
#[derive(Clone, Debug, PartialEq)]
pub enum CallTarget {
    /// A built-in: index into [`SignatureTable::builtin`]`().signatures`, and the full name
    /// (`normal_lpdf` for `y ~ normal(...)`, `operator+` for `a + b`).
    Builtin { signature: usize, name: String },
    /// Index into [`CheckedProgram::functions`].
    User { function: usize },
}

/// A program that passed checking, with its side tables.
#[derive(Clone, Debug)]
pub struct CheckedProgram {
    pub program: Program,
    pub variables: Vec<VariableInfo>,
    pub functions: Vec<UserFunction>,
    pub(crate) expr_types: Vec<Type>,
    pub(crate) data_only: Vec<bool>,
    pub(crate) parameter_free: Vec<bool>,
    pub(crate) var_refs: Vec<Option<VarId>>,
    pub(crate) call_targets: Vec<Option<CallTarget>>,
    pub(crate) declared: Vec<Vec<VarId>>,
    pub(crate) truncations: Vec<Vec<CallTarget>>,
}

impl CheckedProgram {
    /// The type of expression `id` ([`Type::Error`] if `id` is not an expression).
    pub fn expr_type(&self, id: NodeId) -> &Type {
        self.expr_types.get(id.0 as usize).unwrap_or(&Type::Error)
    }

    /// Stan's data-only status of expression `id` (see the module docs).
    pub fn is_data_only(&self, id: NodeId) -> bool {
        self.data_only.get(id.0 as usize).copied().unwrap_or(false)
    }

    /// True if the value of expression `id` cannot change when the parameters change (no
    /// variable it reads is assigned, directly or under a parameter-dependent condition, from
    /// parameters; no `_rng` call; no `target()`). Safe to compute once per data set.
    pub fn is_parameter_free(&self, id: NodeId) -> bool {
        self.parameter_free
            .get(id.0 as usize)
            .copied()
            .unwrap_or(false)
    }

    /// The variable a `Var` expression or `Var` lvalue refers to.
    pub fn variable_of(&self, id: NodeId) -> Option<VarId> {
        self.var_refs.get(id.0 as usize).copied().flatten()
    }

    pub fn variable(&self, id: VarId) -> &VariableInfo {
        &self.variables[id.0 as usize]
    }

    /// The function a call expression, call statement, `~` statement or operator expression
    /// resolved to.
    pub fn call_target(&self, id: NodeId) -> Option<&CallTarget> {
        self.call_targets
            .get(id.0 as usize)
            .and_then(|c| c.as_ref())
    }

    /// The built-in signature for a [`CallTarget::Builtin`].
    pub fn builtin_signature(&self, target: &CallTarget) -> Option<&'static Signature> {
        match target {
            CallTarget::Builtin { signature, .. } => {
                SignatureTable::builtin().signatures.get(*signature)
            }
            CallTarget::User { .. } => None,
        }
    }

    /// Variables declared by a declaration statement (one per declarator) or a loop statement.
    pub fn declared_vars(&self, stmt: NodeId) -> &[VarId] {
        self.declared
            .get(stmt.0 as usize)
            .map(|v| v.as_slice())
            .unwrap_or(&[])
    }

    /// The CDF functions of a truncated `~` statement: `[lccdf(L)]` for `T[L, ]`,
    /// `[lcdf(U)]` for `T[, U]`, `[lcdf(L), lcdf(U)]` for `T[L, U]`; empty otherwise.
    pub fn truncation_targets(&self, stmt: NodeId) -> &[CallTarget] {
        self.truncations
            .get(stmt.0 as usize)
            .map(|v| v.as_slice())
            .unwrap_or(&[])
    }

    /// The top-level variables of one block, in declaration order.
    pub fn block_variables(&self, kind: BlockKind) -> impl Iterator<Item = (VarId, &VariableInfo)> {
        self.variables
            .iter()
            .enumerate()
            .filter(move |(_, v)| v.origin == Origin::Block(kind))
            .map(|(i, v)| (VarId(i as u32), v))
    }
}
