//! The `hazel` command-line program.
//!
//! Each subcommand lives in its own module with an `Args` struct (clap derive) and a
//! `run(&Args) -> CliResult`; adding one is a module, a variant of [`Command`] and a match arm.

mod progress;
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
    /// Summarise the draws in Stan CSV files (hazel's or CmdStan's) and check sampler diagnostics.
    Summary(summary::SummaryArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Summary(args) => summary::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
