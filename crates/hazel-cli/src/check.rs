//! `hazel check` (parse and check a program) and `hazel format` (print it in canonical form).

use crate::front::{check_program, parse_program};
use crate::summary::write_stdout;
use crate::CliResult;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The Stan program.
    pub model: PathBuf,
    /// Directories searched for `#include` files after the including file's own directory.
    #[arg(short = 'I', long = "include-path")]
    pub include_paths: Vec<PathBuf>,
}

/// Exit status 0 and nothing on stdout for a valid program (warnings go to stderr); status 1
/// with the rendered diagnostics on stderr otherwise.
pub fn run_check(args: &CheckArgs) -> CliResult {
    check_program(&args.model, &args.include_paths)?;
    Ok(())
}

#[derive(Args, Debug)]
pub struct FormatArgs {
    /// The Stan program.
    pub model: PathBuf,
    /// Directories searched for `#include` files after the including file's own directory
    /// (included text is printed in place).
    #[arg(short = 'I', long = "include-path")]
    pub include_paths: Vec<PathBuf>,
}

/// Prints the program in canonical layout to stdout. Comments are not part of the syntax tree
/// and are not printed.
pub fn run_format(args: &FormatArgs) -> CliResult {
    let source = parse_program(&args.model, &args.include_paths)?;
    write_stdout(&hazel_syntax::pretty::print_program(&source.program))
}
