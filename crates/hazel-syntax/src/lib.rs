//! Stan source to syntax tree: lexer, parser with error recovery, pretty-printer.
//!
//! Entry points: [`parse_str`] for in-memory text without includes, [`parse_with_loader`]
//! when `#include` must be served by a [`FileLoader`] (tests use an in-memory map),
//! [`parse_file`] for a model file on disk, and the lower-level [`parse`] over an existing
//! [`SourceMap`]. The program is returned only when there were no syntax errors; every
//! diagnostic is returned either way. [`ParseResult::format`] is the formatter (canonical
//! layout, comments kept); [`pretty::print_program`] prints a tree without comments.

#![forbid(unsafe_code)]

pub mod ast;
pub mod diagnostic;
pub(crate) mod lexer;
mod parser;
pub mod pretty;
pub mod span;
pub mod visit;

use std::path::{Path, PathBuf};

pub use diagnostic::{Diagnostic, Label, Severity};
pub use lexer::{Comment, FileLoader, FsLoader, IncludeContext};
pub use parser::{MAX_CHAIN_OPERATORS, MAX_NESTING, MAX_TYPE_NESTING};
pub use span::{FileId, LineCol, SourceFile, SourceMap, Span};

use ast::Program;

/// Everything a parse produces.
#[derive(Debug)]
pub struct ParseResult {
    /// The program, present only when no error was reported.
    pub program: Option<Program>,
    /// Errors and warnings, in the order found.
    pub diagnostics: Vec<Diagnostic>,
    /// The main file and every included file; spans index into this.
    pub sources: SourceMap,
    /// Id of the main file in `sources`.
    pub main_file: FileId,
    /// Comments of all files, for the formatter ([`ParseResult::format`]).
    pub comments: Vec<Comment>,
}

impl ParseResult {
    /// Whether any error was reported.
    pub fn has_errors(&self) -> bool {
        diagnostic::has_errors(&self.diagnostics)
    }

    /// The program in canonical layout with the main file's comments kept, or `None` if the
    /// program did not parse. Comments inside a statement move to the line after it.
    pub fn format(&self) -> Option<String> {
        let program = self.program.as_ref()?;
        Some(pretty::print_program_with_comments(
            program,
            &self.comments,
            &self.sources,
            self.main_file,
        ))
    }

    /// All diagnostics rendered without colour.
    pub fn render_diagnostics(&self) -> String {
        diagnostic::render_all_plain(&self.diagnostics, &self.sources)
    }
}

/// Parses file `file` of `sources`, expanding `#include` through `includes` (an include with
/// `None` is an error). Included files are added to `sources`.
pub fn parse(
    sources: &mut SourceMap,
    file: FileId,
    includes: Option<&IncludeContext<'_>>,
) -> (Option<Program>, Vec<Diagnostic>) {
    let (program, diagnostics, _) = parse_keeping_comments(sources, file, includes);
    (program, diagnostics)
}

/// As [`parse`], also returning the comments of all files.
pub(crate) fn parse_keeping_comments(
    sources: &mut SourceMap,
    file: FileId,
    includes: Option<&IncludeContext<'_>>,
) -> (Option<Program>, Vec<Diagnostic>, Vec<Comment>) {
    let mut diagnostics = Vec::new();
    let too_large = sources
        .get(file)
        .map(|f| f.text.len() > (u32::MAX / 2) as usize)
        .unwrap_or(false);
    if too_large {
        diagnostics.push(Diagnostic::error(
            Span::new(file, 0, 0),
            "source file is too large (over 2 GiB)",
        ));
        return (None, diagnostics, Vec::new());
    }
    let (tokens, comments) =
        lexer::tokenize_with_comments(sources, file, includes, &mut diagnostics);
    let mut parser = parser::Parser::new(&tokens, sources);
    let program = parser.parse_program();
    diagnostics.extend(parser.diagnostics);
    // Lexer and parser diagnostics interleave by position for readable output.
    diagnostics.sort_by_key(|d| (d.span.file, d.span.start));
    let program = if diagnostic::has_errors(&diagnostics) {
        None
    } else {
        Some(program)
    };
    (program, diagnostics, comments)
}

/// Parses in-memory text named `name` (used in messages). `#include` is reported as an error.
pub fn parse_str(name: &str, text: &str) -> ParseResult {
    parse_text(name, text, None)
}

/// Parses text named `name`, resolving `#include "f"` against the directory of the including
/// file, then each of `include_paths` in order, loading through `loader`.
pub fn parse_with_loader(
    name: &str,
    text: &str,
    include_paths: &[PathBuf],
    loader: &dyn FileLoader,
) -> ParseResult {
    let ctx = IncludeContext {
        include_paths,
        loader,
    };
    parse_text(name, text, Some(&ctx))
}

/// Parses `text` as the first file of a new source map, with includes served by `ctx`.
fn parse_text(name: &str, text: &str, ctx: Option<&IncludeContext>) -> ParseResult {
    let mut sources = SourceMap::new();
    let main_file = sources.add(name, text);
    let (program, diagnostics, comments) = parse_keeping_comments(&mut sources, main_file, ctx);
    ParseResult {
        program,
        diagnostics,
        sources,
        main_file,
        comments,
    }
}

/// Reads and parses a model file from disk, resolving includes from the file system.
pub fn parse_file(path: &Path, include_paths: &[PathBuf]) -> std::io::Result<ParseResult> {
    let text = std::fs::read_to_string(path)?;
    Ok(parse_with_loader(
        &path.to_string_lossy(),
        &text,
        include_paths,
        &FsLoader,
    ))
}
