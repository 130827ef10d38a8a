//! The `hazel` command-line program: parses the command line and runs a subcommand of the
//! `hazel_cli` library. Adding a subcommand is a module there, a variant of [`Command`] and a
//! match arm.

#![forbid(unsafe_code)]

use clap::{Parser, Subcommand};
use hazel_cli::{
    check, compare, front, generate_quantities, laplace, log_density, optimize, pathfinder, sample,
    summary, variational,
};
use std::process::ExitCode;

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
    /// The posterior mode or penalised maximum likelihood (L-BFGS, BFGS or Newton), as
    /// CmdStan's `optimize`.
    Optimize(optimize::OptimizeArgs),
    /// Draws from the normal approximation at a mode, as CmdStan's `laplace`.
    Laplace(laplace::LaplaceArgs),
    /// ADVI (mean-field or full-rank), as CmdStan's `variational`.
    Variational(variational::VariationalArgs),
    /// Pathfinder (single- or multi-path with PSIS resampling), as CmdStan's `pathfinder`.
    Pathfinder(pathfinder::PathfinderArgs),
    /// Re-run generated quantities over the draws of fitted Stan CSV files.
    GenerateQuantities(generate_quantities::GenerateQuantitiesArgs),
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
    // Checking, building and evaluating a program recurse per level of its syntax tree and per
    // user-function call: run them on a thread with a deep stack, so that deep (often
    // machine-generated) programs run instead of overflowing the main thread's 8 MiB.
    let worker = std::thread::Builder::new()
        .name("hazel-main".to_string())
        .stack_size(hazel_density::EVALUATION_STACK_BYTES)
        .spawn(move || run_command(&cli));
    match worker.map(|handle| handle.join()) {
        Ok(Ok(code)) => code,
        // A panic (a bug): its message was printed; exit as an uncaught panic would.
        Ok(Err(_)) => ExitCode::from(101),
        // No thread with a deep stack: run here, with the main thread's stack.
        Err(_) => run_command(&Cli::parse()),
    }
}

fn run_command(cli: &Cli) -> ExitCode {
    let result = match &cli.command {
        Command::Sample(args) => sample::run(args),
        Command::Optimize(args) => optimize::run(args),
        Command::Laplace(args) => laplace::run(args),
        Command::Variational(args) => variational::run(args),
        Command::Pathfinder(args) => pathfinder::run(args),
        Command::GenerateQuantities(args) => generate_quantities::run(args),
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
