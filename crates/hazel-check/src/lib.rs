//! Syntax tree to checked program: scopes, block rules, types, the built-in signature table.
//!
//! Entry points: [`check`] for a parsed [`hazel_syntax::ast::Program`] →
//! `(Option<CheckedProgram>, Vec<Diagnostic>)`; [`check_source`] / [`check_file`] parse and
//! check in one step and return a [`CheckResult`], which also carries the
//! [`hazel_syntax::SourceMap`] needed to render the diagnostics. [`CheckedProgram`] is the tree
//! plus side tables keyed by node id (types, resolved calls, variables, data-only and
//! parameter-free flags); see [`checked`] for how to look things up.
//!
//! Invariants: the checker never panics on any tree (errors become diagnostics, and an
//! expression that already failed gets [`Type::Error`] so it is reported once); a
//! `CheckedProgram` exists only when no error was reported; diagnostics come in source order.
//!
//! The built-in functions and distributions are data: `src/signatures.txt`, parsed once into
//! a [`SignatureTable`].

#![forbid(unsafe_code)]

pub mod checked;
mod checker;
mod dataflow;
pub mod signatures;
pub mod types;

pub use checked::{CallTarget, CheckedProgram, Origin, UserFunction, VarId, VariableInfo};
pub use checker::check;
pub use signatures::SignatureTable;
pub use types::Type;

use std::path::{Path, PathBuf};

use hazel_syntax::{Diagnostic, SourceMap};

/// Everything a parse + check of source text produces.
#[derive(Debug)]
pub struct CheckResult {
    /// Present only when there were no syntax or checking errors.
    pub checked: Option<CheckedProgram>,
    /// Parser diagnostics followed by checker diagnostics.
    pub diagnostics: Vec<Diagnostic>,
    /// The sources the diagnostics' spans point into (needed to render them).
    pub sources: SourceMap,
}

impl CheckResult {
    /// Whether any error was reported.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(|d| d.is_error())
    }

    /// All diagnostics rendered without colour (rustc style), separated by blank lines.
    pub fn render_diagnostics(&self) -> String {
        hazel_syntax::diagnostic::render_all_plain(&self.diagnostics, &self.sources)
    }
}

fn finish(parsed: hazel_syntax::ParseResult) -> CheckResult {
    let mut diagnostics = parsed.diagnostics;
    let checked = match &parsed.program {
        Some(program) => {
            let (checked, more) = check(program);
            diagnostics.extend(more);
            checked
        }
        None => None,
    };
    CheckResult {
        checked,
        diagnostics,
        sources: parsed.sources,
    }
}

/// Parses and checks in-memory Stan text named `name` (the name appears in messages).
pub fn check_source(name: &str, text: &str) -> CheckResult {
    finish(hazel_syntax::parse_str(name, text))
}

/// Reads, parses (resolving `#include` from `include_paths`) and checks a model file.
pub fn check_file(path: &Path, include_paths: &[PathBuf]) -> std::io::Result<CheckResult> {
    Ok(finish(hazel_syntax::parse_file(path, include_paths)?))
}

#[cfg(test)]
mod tests;
