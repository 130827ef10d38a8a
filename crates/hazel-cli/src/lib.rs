//! The `hazel` command line as a library: each subcommand lives in its own module with an
//! `Args` struct (clap derive) and a `run(&Args) -> CliResult`; what several subcommands share
//! (reading, checking and compiling a program with its data) is in [`front`].
//!
//! The binary (`main.rs`) only parses the command line and dispatches. The library exists so
//! that other code can run exactly what `hazel sample` runs: the fuzz targets of `hazel-fuzz`
//! call [`sample::run_to`].

#![forbid(unsafe_code)]

pub mod check;
pub mod compare;
pub mod front;
pub mod generate_quantities;
pub mod laplace;
pub mod log_density;
pub mod method;
pub mod optimize;
pub mod pathfinder;
mod progress;
mod run_dir;
pub mod sample;
pub mod summary;
pub mod variational;

/// What a subcommand returns: errors are printed as `error: …` and exit with status 1.
pub type CliResult = Result<(), Box<dyn std::error::Error>>;
