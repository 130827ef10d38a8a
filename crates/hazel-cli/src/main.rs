//! The `hazel` command-line program.
//!
//! Each subcommand lives in its own module with an `Args` struct (clap derive) and a
//! `run(&Args) -> CliResult`; adding one is a module, a variant of [`Command`] and a match arm.
//! What several subcommands share (reading, checking and compiling a program with its data)
//! is in [`front`].

mod check;
mod compare;
mod front;
mod log_density;
mod progress;
mod run_dir;
mod sample;
mod summary;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// What a subcommand returns: errors are printed as `error: …` and exit with status 1.
pub type CliResult = Result<(), Box<dyn std::error::Error>>;

#[derive(Parser)]
#[command(
    name = "hazel",
    version,
    about = "Bayesian inference for Stan programs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Draw from the posterior of a Stan program with NUTS (one Stan CSV file per chain).
    Sample(sample::SampleArgs),
    /// Parse and check a Stan program: no output and exit status 0 when it is valid.
    Check(check::CheckArgs),
    /// Print a Stan program in canonical layout (comments are not kept).
    Format(check::FormatArgs),
    /// Evaluate the log density and its gradient at unconstrained points.
    LogDensity(log_density::LogDensityArgs),
    /// Compare the draws in Stan CSV files with a posteriordb reference posterior summary.
    Compare(compare::CompareArgs),
    /// Summarise the draws in Stan CSV files (hazel's or CmdStan's) and check sampler diagnostics.
    Summary(summary::SummaryArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Sample(args) => sample::run(args),
        Command::Check(args) => check::run_check(args),
        Command::Format(args) => check::run_format(args),
        Command::LogDensity(args) => log_density::run(args),
        Command::Summary(args) => summary::run(args),
        Command::Compare(args) => compare::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            match error.downcast_ref::<front::ExitWith>() {
                Some(exit) => ExitCode::from(exit.code),
                None => ExitCode::FAILURE,
            }
        }
    }
}
