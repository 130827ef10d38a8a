//! Which expressions can change when the parameters change: a flow-insensitive taint
//! analysis over variables, iterated to a fixed point.
//!
//! A variable is tainted when it is a parameter, a non-`data` function argument, or when any
//! assignment to it (initialiser, `=`, compound assignment, loop variable binding) has a
//! tainted right-hand side or index, or happens under a tainted condition (`if`, `while`,
//! loop bounds). A loop whose body can `break`/`continue`/`return` under a tainted condition
//! taints everything assigned in it. An expression is parameter-free when it reads no tainted
//! variable and contains no `_rng` call (outside transformed data), `_lp` call or `target()`.

use hazel_syntax::ast::*;

use crate::checked::{CheckedProgram, Origin};

struct Flow<'a> {
    checked: &'a CheckedProgram,
    tainted: Vec<bool>,
    changed: bool,
    block: Option<BlockKind>,
}

/// Computes the parameter-free flag of every expression, indexed by node id.
pub(crate) fn parameter_free(checked: &CheckedProgram) -> Vec<bool> {
    let tainted: Vec<bool> = checked
        .variables
        .iter()
        .map(|v| match v.origin {
            Origin::Block(BlockKind::Parameters) => true,
            Origin::FunctionArg { data_only } => !data_only,
            _ => false,
        })
        .collect();
    let mut flow = Flow {
        checked,
        tainted,
        changed: true,
        block: None,
    };
    let program = &checked.program;
    // Each round taints at least one more variable or stops, so this terminates.
    let mut rounds = 0;
    while flow.changed && rounds <= checked.variables.len() + 1 {
        flow.changed = false;
        rounds += 1;
        flow.walk_program(program, &mut None);
    }
    let mut free = vec![false; program.node_count as usize];
    flow.walk_program(program, &mut Some(&mut free));
    free
}

impl Flow<'_> {
    fn walk_program(&mut self, program: &Program, out: &mut Option<&mut Vec<bool>>) {
        if let Some(fb) = &program.functions {
            self.block = None;
            for f in &fb.functions {
                if let Some(body) = &f.body {
                    self.stmt(body, false, out);
                }
            }
        }
        for b in program.blocks() {
            self.block = Some(b.kind);
            for s in &b.stmts {
                self.stmt(s, false, out);
            }
        }
    }

    fn taint(&mut self, v: crate::checked::VarId) {
        let slot = &mut self.tainted[v.0 as usize];
        if !*slot {
            *slot = true;
            self.changed = true;
        }
    }

    /// Returns whether `e` is parameter-free, recording sub-results when `out` is given.
    fn expr(&self, e: &Expr, out: &mut Option<&mut Vec<bool>>) -> bool {
        let free = match &e.kind {
            ExprKind::IntLit(_) | ExprKind::RealLit { .. } | ExprKind::ImagLit { .. } => true,
            ExprKind::Var(_) => match self.checked.variable_of(e.id) {
                Some(v) => !self.tainted[v.0 as usize],
                None => true, // a function name used as a value
            },
            ExprKind::Target => false,
            ExprKind::Paren(x) | ExprKind::Unary { operand: x, .. } | ExprKind::Transpose(x) => {
                self.expr(x, out)
            }
            ExprKind::TupleProj { base, .. } => self.expr(base, out),
            ExprKind::Binary { lhs, rhs, .. } => {
                let a = self.expr(lhs, out);
                let b = self.expr(rhs, out);
                a && b
            }
            ExprKind::Ternary {
                cond,
                then_expr,
                else_expr,
            } => {
                let a = self.expr(cond, out);
                let b = self.expr(then_expr, out);
                let c = self.expr(else_expr, out);
                a && b && c
            }
            ExprKind::Call { name, args } | ExprKind::CondDistCall { name, args } => {
                let mut all = true;
                for a in args {
                    all &= self.expr(a, out);
                }
                let rng_ok =
                    !name.name.ends_with("_rng") || self.block == Some(BlockKind::TransformedData);
                all && rng_ok && !name.name.ends_with("_lp")
            }
            ExprKind::Array(items) | ExprKind::RowVector(items) | ExprKind::Tuple(items) => {
                let mut all = true;
                for a in items {
                    all &= self.expr(a, out);
                }
                all
            }
            ExprKind::Index { base, indices } => {
                let mut all = self.expr(base, out);
                for i in indices {
                    all &= self.index(i, out);
                }
                all
            }
        };
        if let Some(out) = out {
            if let Some(slot) = out.get_mut(e.id.0 as usize) {
                *slot = free;
            }
        }
        free
    }

    fn index(&self, i: &Index, out: &mut Option<&mut Vec<bool>>) -> bool {
        match i {
            Index::All => true,
            Index::Single(x) | Index::Lower(x) | Index::Upper(x) => self.expr(x, out),
            Index::Range(a, b) => {
                let x = self.expr(a, out);
                let y = self.expr(b, out);
                x && y
            }
        }
    }

    /// Taints the variables written by an lvalue if `dirty`; returns whether its indexes are
    /// parameter-free.
    fn lvalue(&mut self, lv: &LValue, dirty: bool, out: &mut Option<&mut Vec<bool>>) -> bool {
        match &lv.kind {
            LValueKind::Var(_) => {
                if dirty {
                    if let Some(v) = self.checked.variable_of(lv.id) {
                        self.taint(v);
                    }
                }
                true
            }
            LValueKind::Index { base, indices } => {
                let mut free = true;
                for i in indices {
                    free &= self.index(i, out);
                }
                self.lvalue(base, dirty || !free, out) && free
            }
            LValueKind::TupleProj { base, .. } => self.lvalue(base, dirty, out),
            LValueKind::Tuple(parts) => {
                let mut free = true;
                for p in parts {
                    free &= self.lvalue(p, dirty, out);
                }
                free
            }
        }
    }

    fn stmt(&mut self, s: &Stmt, control: bool, out: &mut Option<&mut Vec<bool>>) {
        match &s.kind {
            StmtKind::VarDecl(decl) => {
                for d in &decl.ty.array_dims {
                    self.expr(d, out);
                }
                self.decl_exprs(&decl.ty.elem, out);
                let vars = self.checked.declared_vars(s.id).to_vec();
                for (d, v) in decl.declarators.iter().zip(vars) {
                    if let Some(init) = &d.init {
                        let free = self.expr(init, out);
                        if !free || control {
                            self.taint(v);
                        }
                    }
                }
            }
            StmtKind::Assign { lhs, op, rhs } => {
                let free = self.expr(rhs, out);
                // A compound assignment reads the lhs too, which is already tainted or not.
                let _ = op;
                self.lvalue(lhs, !free || control, out);
            }
            StmtKind::Tilde {
                lhs,
                args,
                truncation,
                ..
            } => {
                self.expr(lhs, out);
                for a in args {
                    self.expr(a, out);
                }
                if let Some(t) = truncation {
                    for b in [&t.lower, &t.upper].into_iter().flatten() {
                        self.expr(b, out);
                    }
                }
            }
            StmtKind::TargetPlusAssign(e) | StmtKind::JacobianPlusAssign(e) => {
                self.expr(e, out);
            }
            StmtKind::For {
                lower, upper, body, ..
            } => {
                let a = self.expr(lower, out);
                let b = self.expr(upper, out);
                let inner = control || !(a && b) || self.escapes_under_taint(body);
                if inner {
                    if let Some(&v) = self.checked.declared_vars(s.id).first() {
                        self.taint(v);
                    }
                }
                self.stmt(body, inner, out);
            }
            StmtKind::Foreach { iterable, body, .. } => {
                let free = self.expr(iterable, out);
                let inner = control || !free || self.escapes_under_taint(body);
                if inner {
                    if let Some(&v) = self.checked.declared_vars(s.id).first() {
                        self.taint(v);
                    }
                }
                self.stmt(body, inner, out);
            }
            StmtKind::While { cond, body } => {
                let free = self.expr(cond, out);
                let inner = control || !free || self.escapes_under_taint(body);
                self.stmt(body, inner, out);
            }
            StmtKind::If {
                cond,
                then_branch,
                else_branch,
            } => {
                let free = self.expr(cond, out);
                let inner = control || !free;
                self.stmt(then_branch, inner, out);
                if let Some(e) = else_branch {
                    self.stmt(e, inner, out);
                }
            }
            StmtKind::Return(Some(e)) => {
                self.expr(e, out);
            }
            StmtKind::Print(items) | StmtKind::Reject(items) | StmtKind::FatalError(items) => {
                for i in items {
                    if let Printable::Expr(e) = i {
                        self.expr(e, out);
                    }
                }
            }
            StmtKind::Block(stmts) | StmtKind::Profile { body: stmts, .. } => {
                for st in stmts {
                    self.stmt(st, control, out);
                }
            }
            StmtKind::Call { args, .. } => {
                for a in args {
                    self.expr(a, out);
                }
            }
            StmtKind::Return(None) | StmtKind::Break | StmtKind::Continue | StmtKind::Empty => {}
        }
    }

    fn decl_exprs(&self, elem: &ElemType, out: &mut Option<&mut Vec<bool>>) {
        let mut exprs: Vec<&Expr> = elem
            .angle_constraint()
            .map(Constraint::exprs)
            .unwrap_or_default();
        let mut sizes = Vec::new();
        crate::checker::collect_sizes(elem, &mut sizes);
        exprs.extend(sizes);
        for e in exprs {
            self.expr(e, out);
        }
    }

    /// Whether the loop body can leave an iteration early under a tainted condition, which
    /// makes the number of iterations (and so every assignment in the loop) depend on it.
    fn escapes_under_taint(&self, body: &Stmt) -> bool {
        fn visit(flow: &Flow<'_>, s: &Stmt, under_taint: bool) -> bool {
            match &s.kind {
                StmtKind::Break | StmtKind::Continue | StmtKind::Return(_) => under_taint,
                StmtKind::Block(ss) | StmtKind::Profile { body: ss, .. } => {
                    ss.iter().any(|x| visit(flow, x, under_taint))
                }
                StmtKind::If {
                    cond,
                    then_branch,
                    else_branch,
                } => {
                    let t = under_taint || !flow.expr(cond, &mut None);
                    visit(flow, then_branch, t)
                        || else_branch.as_deref().is_some_and(|e| visit(flow, e, t))
                }
                StmtKind::While { body, .. }
                | StmtKind::For { body, .. }
                | StmtKind::Foreach { body, .. } => visit(flow, body, under_taint),
                _ => false,
            }
        }
        visit(self, body, false)
    }
}
