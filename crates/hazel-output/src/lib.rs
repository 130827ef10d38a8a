//! Stan CSV: writer (CmdStan layout, flushed per draw) and reader.
//!
//! * [`StanCsvWriter`] is a [`hazel_nuts::DrawSink`]: one file per chain with CmdStan's
//!   configuration block (built from a [`CsvHeaderInfo`]), header line, adaptation block, draws
//!   and timing block, so cmdstanpy, ArviZ and R's posterior read hazel's output unchanged.
//!   Numbers are exact (shortest round-trip decimal) rather than CmdStan's 6 significant digits.
//! * [`ChainCsvFile`] is one chain's CSV on disk with atomic checkpoints beside it, and resumes
//!   an interrupted chain's file (see [`chain_file`] for the format).
//! * [`read_stan_csv`] reads any sampler Stan CSV (hazel's or CmdStan's, with or without saved
//!   warmup, possibly truncated by a killed run) into column names, post-warmup draws and the
//!   adaptation results, with errors that name the file and line.

pub mod chain_file;
pub mod number;
pub mod reader;
pub mod writer;

pub use chain_file::{checkpoint_path, read_checkpoint, ChainCsvFile, StoredCheckpoint};
pub use reader::{read_stan_csv, read_stan_csvs, Adaptation, ConfigEntry, CsvError, StanCsv};
pub use writer::{CsvHeaderInfo, StanCsvWriter, STAN_VERSION};
