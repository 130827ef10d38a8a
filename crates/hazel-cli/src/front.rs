//! What `check`, `format`, `sample` and `log-density` share: reading and checking a Stan
//! program, reading its data, and lowering both into a [`CompiledModel`], with every failure
//! turned into a message for the user (rustc-style diagnostics for the program).

use hazel_check::CheckedProgram;
use hazel_data::DataFile;
use hazel_graph::{
    compile, unsupported_call_diagnostics, CompileError, CompileOptions, CompiledModel,
};
use hazel_syntax::ast::Program;
use hazel_syntax::diagnostic::render_all_for_stderr;
use hazel_syntax::{Diagnostic, SourceMap};
use std::fmt;
use std::path::{Path, PathBuf};

/// A failure whose details were already printed to stderr (rendered diagnostics); the value
/// is the closing line, e.g. "could not compile model.stan (2 errors)".
#[derive(Debug)]
pub(crate) struct Reported(pub(crate) String);

impl fmt::Display for Reported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Reported {}

/// A failure that another process reports: a rank of a distributed run other than rank 0,
/// where rank 0 prints what went wrong for every rank. Exits with status 1, printing nothing.
#[derive(Debug)]
pub struct Silent;

impl fmt::Display for Silent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(reported by rank 0)")
    }
}

impl std::error::Error for Silent {}

/// A failure that must exit with a particular status (`hazel compare`: 2 = inconclusive).
#[derive(Debug)]
pub struct ExitWith {
    pub code: u8,
    pub message: String,
}

impl ExitWith {
    pub fn new(code: u8, message: impl Into<String>) -> Self {
        ExitWith {
            code,
            message: message.into(),
        }
    }
}

impl fmt::Display for ExitWith {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ExitWith {}

/// A program that parsed and checked without errors, and whose every built-in call lowers.
pub(crate) struct CheckedSource {
    pub checked: CheckedProgram,
    /// The sources spans point into (for rendering later errors).
    pub sources: SourceMap,
}

/// A program that parsed without errors (for `format`).
pub(crate) struct ParsedSource {
    pub program: Program,
}

/// Prints diagnostics to stderr (coloured on a terminal).
fn print_diagnostics(diagnostics: &[Diagnostic], sources: &SourceMap) {
    if !diagnostics.is_empty() {
        eprintln!("{}", render_all_for_stderr(diagnostics, sources).trim_end());
    }
}

/// The closing line after `errors` rendered errors.
fn aborting(path: &Path, what: &str, errors: usize) -> Reported {
    let plural = if errors == 1 { "" } else { "s" };
    Reported(format!(
        "could not {what} {} ({errors} error{plural})",
        path.display()
    ))
}

/// Reads, parses and checks `path`, then asks the lowering whether it can run every built-in
/// call (a call it cannot run is an error here, at its line, never first when sampling).
/// Warnings are printed to stderr; errors are printed and returned as [`Reported`].
pub(crate) fn check_program(
    path: &Path,
    include_paths: &[PathBuf],
) -> Result<CheckedSource, Box<dyn std::error::Error>> {
    check_program_as(path, include_paths, true)
}

/// [`check_program`], printing the diagnostics only if `speak` (under mpirun every rank checks
/// the program, and rank 0 speaks for all).
pub(crate) fn check_program_as(
    path: &Path,
    include_paths: &[PathBuf],
    speak: bool,
) -> Result<CheckedSource, Box<dyn std::error::Error>> {
    let mut result = hazel_check::check_file(path, include_paths)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if let Some(checked) = &result.checked {
        result
            .diagnostics
            .extend(unsupported_call_diagnostics(checked));
    }
    if speak {
        print_diagnostics(&result.diagnostics, &result.sources);
    }
    let errors = result.diagnostics.iter().filter(|d| d.is_error()).count();
    match result.checked {
        Some(checked) if errors == 0 => Ok(CheckedSource {
            checked,
            sources: result.sources,
        }),
        _ => Err(aborting(path, "check", errors.max(1)).into()),
    }
}

/// Reads and parses `path` without checking it (for `format`).
pub(crate) fn parse_program(
    path: &Path,
    include_paths: &[PathBuf],
) -> Result<ParsedSource, Box<dyn std::error::Error>> {
    let parsed = hazel_syntax::parse_file(path, include_paths)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    print_diagnostics(&parsed.diagnostics, &parsed.sources);
    let errors = parsed.diagnostics.iter().filter(|d| d.is_error()).count();
    match parsed.program {
        Some(program) if errors == 0 => Ok(ParsedSource { program }),
        _ => Err(aborting(path, "parse", errors.max(1)).into()),
    }
}

/// Reads a CmdStan JSON data file; no file means a model without data.
pub(crate) fn read_data(path: Option<&Path>) -> Result<DataFile, Box<dyn std::error::Error>> {
    let Some(path) = path else {
        return Ok(DataFile::empty());
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read data file {}: {e}", path.display()))?;
    DataFile::parse(&text).map_err(|e| format!("data file {}: {e}", path.display()).into())
}

/// Lowers a checked program with its data. A data error names the variable and points at its
/// declaration; other errors point at the place in the model.
pub(crate) fn compile_model(
    source: &CheckedSource,
    data: &DataFile,
    data_path: Option<&Path>,
    options: &CompileOptions,
) -> Result<CompiledModel, Box<dyn std::error::Error>> {
    compile_model_as(source, data, data_path, options, true)
}

/// [`compile_model`], printing the error only if `speak`.
pub(crate) fn compile_model_as(
    source: &CheckedSource,
    data: &DataFile,
    data_path: Option<&Path>,
    options: &CompileOptions,
    speak: bool,
) -> Result<CompiledModel, Box<dyn std::error::Error>> {
    // Evaluation errors name the model line.
    let options = CompileOptions {
        sources: Some(std::sync::Arc::new(source.sources.clone())),
        ..options.clone()
    };
    compile(&source.checked, data, &options).map_err(|error| {
        if speak {
            print_compile_error(&error, &source.sources, data_path);
        }
        Reported("could not build the model".to_string()).into()
    })
}

fn print_compile_error(error: &CompileError, sources: &SourceMap, data_path: Option<&Path>) {
    let message = match (&error.variable, data_path) {
        (Some(_), Some(path)) => {
            format!("data file {}: {}", path.display(), error.naming_variable())
        }
        (Some(_), None) => format!(
            "{} (no data file was given: pass one with --data)",
            error.naming_variable()
        ),
        (None, _) => error.message.clone(),
    };
    match error.span {
        Some(span) => {
            let label = if error.variable.is_some() {
                "declared here"
            } else {
                "here"
            };
            let diagnostic = Diagnostic::error(span, message).with_primary_label(label);
            print_diagnostics(&[diagnostic], sources);
        }
        None => eprintln!("error: {message}"),
    }
}

/// The model's name: the file stem (CmdStan names the executable, and so the model, this way).
pub(crate) fn model_name(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".to_string())
}
