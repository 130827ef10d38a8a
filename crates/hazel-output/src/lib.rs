//! Draws out: Stan CSV (always), Parquet and Zarr (features `parquet`, `zarr`), for every
//! algorithm (the sampler and CmdStan's other methods alike: each describes itself as a
//! [`hazel_draws::RunInfo`]).
//!
//! Every sink here is a [`hazel_draws::DrawSink`]; this crate depends on the draw contract and
//! on no algorithm. [`OutputConfig::open`] turns an output configuration (files of a format in
//! a directory, draws in memory, or both) into each chain's sink; `hazel sample` and the
//! library entry point use it.
//!
//! * [`StanCsvWriter`] is a [`hazel_draws::DrawSink`]: one file per chain with CmdStan's
//!   configuration block (built from a [`CsvHeaderInfo`]), header line, adaptation block, draws
//!   and timing block, so cmdstanpy, ArviZ and R's posterior read hazel's output unchanged.
//!   Numbers are exact (shortest round-trip decimal) rather than CmdStan's 6 significant digits.
//! * `chain_file::ChainCsvFile` is one chain's CSV on disk with atomic checkpoints beside it, and resumes
//!   an interrupted chain's file (see [`chain_file`] for the format).
//! * [`read_stan_csv`] reads any sampler Stan CSV (hazel's or CmdStan's, with or without saved
//!   warmup, possibly truncated by a killed run) into column names, post-warmup draws and the
//!   adaptation results, with errors that name the file and line.
//! * `parquet_sink::ParquetWriter` (one file per chain, the CSV's columns) and
//!   `zarr_sink::ZarrRun` (one store per run, ArviZ InferenceData layout) are the columnar
//!   sinks, each streamed in bounded chunks; [`read_draws`] reads any of the three formats
//!   into the CSV reader's [`StanCsv`], so the summary is computed one way.

#![deny(unsafe_code)]

pub mod chain_file;
pub mod layout;
pub mod number;
pub mod outputs;
#[cfg(feature = "parquet")]
pub mod parquet_sink;
pub(crate) mod reader;
#[cfg(any(feature = "parquet", feature = "zarr"))]
mod settings;
pub(crate) mod writer;
#[cfg(feature = "zarr")]
pub mod zarr_sink;

pub use chain_file::{checkpoint_path, read_checkpoint, StoredCheckpoint};
pub use outputs::{
    FileNaming, FileOutput, FileStart, HeaderNotes, MemoryOutput, OutputConfig, Outputs,
};
pub use reader::{read_stan_csv, read_stan_csvs, Adaptation, ConfigEntry, CsvError, StanCsv};
pub use writer::{CsvHeaderInfo, StanCsvWriter};

use std::path::{Path, PathBuf};

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    Parquet,
    Zarr,
}

impl Format {
    /// The format of an output path: a `.parquet` file, a `.zarr` store (or any directory with
    /// a `zarr.json`), else Stan CSV.
    pub fn of_path(path: &Path) -> Format {
        match path.extension().and_then(|e| e.to_str()) {
            Some("parquet") => Format::Parquet,
            Some("zarr") => Format::Zarr,
            _ if path.join("zarr.json").is_file() => Format::Zarr,
            _ => Format::Csv,
        }
    }

    /// Whether this build can write and read the format.
    pub fn is_available(self) -> bool {
        match self {
            Format::Csv => true,
            Format::Parquet => cfg!(feature = "parquet"),
            Format::Zarr => cfg!(feature = "zarr"),
        }
    }

    /// The error for a format this build leaves out.
    pub fn unavailable_message(self) -> String {
        let feature = match self {
            Format::Csv => "",
            Format::Parquet => "parquet",
            Format::Zarr => "zarr",
        };
        format!(
            "this hazel was built without {feature} support: rebuild with `cargo build --release --features {feature}`"
        )
    }
}

/// Reads the chains in `paths` — Stan CSV files, Parquet files, Zarr stores (each holding every
/// chain of its run), mixed freely — and checks that they all have the same columns.
pub fn read_draws(paths: &[PathBuf]) -> Result<Vec<StanCsv>, CsvError> {
    let mut chains: Vec<StanCsv> = Vec::with_capacity(paths.len());
    for path in paths {
        for chain in read_one(path)? {
            reader::push_chain(&mut chains, chain)?;
        }
    }
    Ok(chains)
}

fn read_one(path: &Path) -> Result<Vec<StanCsv>, CsvError> {
    match Format::of_path(path) {
        Format::Csv => Ok(vec![read_stan_csv(path)?]),
        #[cfg(feature = "parquet")]
        Format::Parquet => Ok(vec![parquet_sink::read_parquet(path)?]),
        #[cfg(feature = "zarr")]
        Format::Zarr => zarr_sink::read_zarr(path),
        #[allow(unreachable_patterns)]
        unavailable => Err(CsvError {
            path: path.to_path_buf(),
            line: None,
            message: unavailable.unavailable_message(),
        }),
    }
}
