//! The checker: one walk over the syntax tree that resolves names, enforces the block rules
//! and types every expression, filling the side tables of [`CheckedProgram`].
//!
//! Error handling: every problem becomes a [`Diagnostic`] and checking goes on. An expression
//! that already produced an error gets [`Type::Error`], which is compatible with everything,
//! so one mistake is reported once. Nothing here panics on any tree.
//!
//! Layout: this module holds the checker's state, scopes and declarations of names, and the
//! walk over the blocks; [`functions`] (the functions block), [`decls`] (types and variable
//! declarations), [`stmts`] (statements and the block rules), [`exprs`] (expression types)
//! and [`calls`] (overload resolution, call contexts, higher-order built-ins) the rest.

use std::collections::HashMap;

use hazel_syntax::ast::*;
use hazel_syntax::visit::for_each_subexpr;
use hazel_syntax::{Diagnostic, Span};

use crate::checked::*;
use crate::signatures::{closest, Pattern, ResolveError, SignatureTable};
use crate::types::{FunctionType, Type};

mod calls;
mod decls;
mod exprs;
mod functions;
mod stmts;

pub(crate) use decls::collect_sizes;
use decls::unsized_to_type;

/// Checks a parsed program. Returns the checked program when there are no errors (warnings
/// may still be present in the diagnostics).
pub fn check(program: &Program) -> (Option<CheckedProgram>, Vec<Diagnostic>) {
    let mut checker = Checker::new(program);
    checker.check_program(program);
    // Report in source order (the functions pass finds some problems early).
    checker.diags.sort_by_key(|d| (d.span.file, d.span.start));
    let has_errors = checker.diags.iter().any(|d| d.is_error());
    let Checker {
        diags,
        vars,
        functions,
        expr_types,
        data_only,
        var_refs,
        call_targets,
        declared,
        truncations,
        ..
    } = checker;
    if has_errors {
        return (None, diags);
    }
    let mut checked = CheckedProgram {
        program: program.clone(),
        variables: vars,
        functions,
        expr_types,
        data_only,
        parameter_free: Vec::new(),
        var_refs,
        call_targets,
        declared,
        truncations,
    };
    checked.parameter_free = crate::dataflow::parameter_free(&checked);
    (Some(checked), diags)
}

/// What kind of function body is being checked (for suffix rules).
#[derive(Clone, Debug)]
struct FunctionContext {
    name: String,
    ret: Type,
}

impl FunctionContext {
    fn is_rng(&self) -> bool {
        self.name.ends_with("_rng")
    }
    fn is_lp(&self) -> bool {
        self.name.ends_with("_lp")
    }
    fn is_density(&self) -> bool {
        self.name.ends_with("_lpdf") || self.name.ends_with("_lpmf")
    }
    fn is_jacobian(&self) -> bool {
        self.name.ends_with("_jacobian")
    }
}

struct Checker {
    table: &'static SignatureTable,
    diags: Vec<Diagnostic>,
    scopes: Vec<HashMap<String, VarId>>,
    vars: Vec<VariableInfo>,
    functions: Vec<UserFunction>,
    functions_by_name: HashMap<String, Vec<usize>>,
    expr_types: Vec<Type>,
    data_only: Vec<bool>,
    var_refs: Vec<Option<VarId>>,
    call_targets: Vec<Option<CallTarget>>,
    declared: Vec<Vec<VarId>>,
    truncations: Vec<Vec<CallTarget>>,
    /// The block being checked (`None` inside the functions block).
    block: Option<BlockKind>,
    function: Option<FunctionContext>,
    loop_depth: usize,
    /// True while checking the top-level declarations of a block (not nested statements).
    top_level: bool,
}

/// Names of the parameters in the `data`-only qualifier messages.
fn origin_word(origin: Origin) -> String {
    match origin {
        Origin::Block(BlockKind::Data) => "data".into(),
        Origin::Block(BlockKind::TransformedData) => "transformed data".into(),
        Origin::Block(BlockKind::Parameters) => "a parameter".into(),
        Origin::Block(BlockKind::TransformedParameters) => "a transformed parameter".into(),
        Origin::Block(BlockKind::Model) => "a model variable".into(),
        Origin::Block(BlockKind::GeneratedQuantities) => "a generated quantity".into(),
        Origin::Local(_) => "a local variable".into(),
        Origin::FunctionArg { .. } => "a function argument".into(),
        Origin::LoopVar(_) => "a loop variable".into(),
    }
}

fn block_phrase(block: Option<BlockKind>) -> String {
    match block {
        Some(b) => format!("the {} block", b.keyword()),
        None => "a function body".into(),
    }
}

impl Checker {
    fn new(program: &Program) -> Checker {
        let n = program.node_count as usize;
        Checker {
            table: SignatureTable::builtin(),
            diags: Vec::new(),
            scopes: vec![HashMap::new()],
            vars: Vec::new(),
            functions: Vec::new(),
            functions_by_name: HashMap::new(),
            expr_types: vec![Type::Error; n],
            data_only: vec![false; n],
            var_refs: vec![None; n],
            call_targets: vec![None; n],
            declared: vec![Vec::new(); n],
            truncations: vec![Vec::new(); n],
            block: None,
            function: None,
            loop_depth: 0,
            top_level: false,
        }
    }

    fn error(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    fn slot<T: Clone>(table: &mut Vec<T>, id: NodeId, fill: T) -> &mut T {
        let i = id.0 as usize;
        if i >= table.len() {
            table.resize(i + 1, fill);
        }
        &mut table[i]
    }

    fn set_call(&mut self, id: NodeId, target: CallTarget) {
        *Self::slot(&mut self.call_targets, id, None) = Some(target);
    }

    // ------------------------------------------------------------------ scopes

    fn lookup(&self, name: &str) -> Option<VarId> {
        self.scopes
            .iter()
            .rev()
            .find_map(|scope| scope.get(name).copied())
    }

    fn declare(
        &mut self,
        name: &Ident,
        ty: Type,
        origin: Origin,
        decl_stmt: Option<NodeId>,
    ) -> VarId {
        if let Some(existing) = self.lookup(&name.name) {
            let prev = self.vars[existing.0 as usize].span;
            self.error(
                Diagnostic::error(name.span, format!("`{}` is already declared", name.name))
                    .with_primary_label("declared again here")
                    .with_label(prev, "first declared here")
                    .with_hint("Stan does not allow shadowing: choose a different name"),
            );
        } else if self.functions_by_name.contains_key(&name.name) {
            self.error(
                Diagnostic::error(
                    name.span,
                    format!(
                        "`{}` is the name of a user-defined function and cannot name a variable",
                        name.name
                    ),
                )
                .with_primary_label("variable declared here"),
            );
        }
        let data_only = ty.is_int_based()
            || match origin {
                Origin::Block(b) | Origin::Local(Some(b)) | Origin::LoopVar(Some(b)) => matches!(
                    b,
                    BlockKind::Data | BlockKind::TransformedData | BlockKind::GeneratedQuantities
                ),
                Origin::FunctionArg { data_only } => data_only,
                Origin::Local(None) | Origin::LoopVar(None) => false,
            };
        let id = VarId(self.vars.len() as u32);
        self.vars.push(VariableInfo {
            name: name.name.clone(),
            ty,
            origin,
            span: name.span,
            decl_stmt,
            data_only,
        });
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name.name.clone(), id);
        }
        if let Some(stmt) = decl_stmt {
            Self::slot(&mut self.declared, stmt, Vec::new()).push(id);
        }
        id
    }

    fn push_scope(&mut self) {
        self.scopes.push(HashMap::new());
    }

    fn pop_scope(&mut self) {
        if self.scopes.len() > 1 {
            self.scopes.pop();
        }
    }

    // ------------------------------------------------------------------ program

    fn check_program(&mut self, program: &Program) {
        if let Some(fb) = &program.functions {
            self.collect_functions(fb);
            self.check_function_bodies(fb);
        }
        for block in program.blocks() {
            self.block = Some(block.kind);
            self.function = None;
            self.top_level = true;
            // Model-block variables are local to the model block: generated quantities
            // cannot see them (and may reuse their names).
            let own_scope = block.kind == BlockKind::Model;
            if own_scope {
                self.push_scope();
            }
            for stmt in &block.stmts {
                self.check_stmt(stmt);
            }
            if own_scope {
                self.pop_scope();
            }
            self.top_level = false;
        }
    }

    /// "available signatures: ..." for a hint (at most 6 shown).
    fn signature_list(&self, names: &[String]) -> String {
        let mut lines = Vec::new();
        for name in names {
            for &i in self.table.candidates(name) {
                lines.push(self.table.signatures[i].render());
            }
            if let Some(fids) = self.functions_by_name.get(name) {
                for &f in fids {
                    let f = &self.functions[f];
                    let args: Vec<String> = f.args.iter().map(|(_, t)| t.to_string()).collect();
                    lines.push(format!("{}({}) => {}", f.name, args.join(", "), f.ret));
                }
            }
        }
        let total = lines.len();
        lines.truncate(6);
        let mut text = format!("available signatures: {}", lines.join("; "));
        if total > 6 {
            text.push_str(&format!("; ... ({} more)", total - 6));
        }
        text
    }
}
