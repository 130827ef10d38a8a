//! Outputs selected by configuration: the one place that turns an [`OutputConfig`] into each
//! chain's sink.
//!
//! A run writes files ([`FileOutput`]: Stan CSV with checkpoints, Parquet, or one Zarr store),
//! keeps its draws in memory ([`MemoryOutput`]), or both: each chain's sink is then a
//! [`FanOut`] of its file sink and its [`MemorySink`]. The memory sinks are what the summary
//! printed after `hazel sample` is computed from (the files are never read back, except that a
//! resumed chain's earlier draws are read from its CSV), and what the Python package returns.

use crate::chain_file::ChainCsvFile;
use crate::reader::read_stan_csv;
use crate::writer::CsvHeaderInfo;
use crate::Format;
use hazel_draws::{DrawSink, FanOut, MemoryDraws, MemorySink, RunInfo, SettingValue};
use std::io;
use std::path::{Path, PathBuf};

/// Where a run's draws go.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OutputConfig {
    /// Files on disk (`None`: no files).
    pub files: Option<FileOutput>,
    /// Draws kept in memory (`None`: not kept).
    pub memory: Option<MemoryOutput>,
}

/// Files on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct FileOutput {
    pub format: Format,
    /// The output directory (it must exist).
    pub dir: PathBuf,
    /// The model's name: it starts every file's name (see [`FileNaming`]) and is the CSV
    /// header's `model`.
    pub model: String,
    /// The data file as the CSV header names it (empty when there is none).
    pub data_file: String,
    /// What the CSV header says of the command line beyond the run's own settings.
    pub header: HeaderNotes,
    /// How the files are named.
    pub naming: FileNaming,
}

/// What a CSV header records of the command line that the run's settings do not hold: the
/// input files each chain read (CmdStan writes their names) and the output options.
#[derive(Debug, Clone, PartialEq)]
pub struct HeaderNotes {
    /// Per chain (in chain order), what `init` says in place of the run's own setting (which
    /// for given points is `user`): the init file the chain read, or `pathfinder`; `None`: the
    /// run's `init` as it is.
    pub inits: Vec<Option<String>>,
    /// Per chain, the metric file it read (`metric_file`); `None`: none.
    pub metric_files: Vec<Option<String>>,
    /// CmdStan's `refresh`.
    pub refresh: usize,
    /// CmdStan's `sig_figs` (-1: exact numbers), which the CSV's numbers follow.
    pub sig_figs: i32,
}

impl Default for HeaderNotes {
    fn default() -> Self {
        HeaderNotes {
            inits: Vec::new(),
            metric_files: Vec::new(),
            refresh: crate::writer::DEFAULT_REFRESH,
            sig_figs: crate::writer::EXACT_SIG_FIGS,
        }
    }
}

/// How a run's files are named (`<ext>`: `csv` or `parquet`; Zarr keeps one store per run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FileNaming {
    /// `<model>-<chain id>.<ext>` per chain, the store `<model>.zarr` (`hazel sample`).
    #[default]
    ChainIds,
    /// `<model>-<method>.<ext>` for a method's one output (`<model>-optimize.csv`), the store
    /// `<model>-<method>.zarr`.
    Method,
    /// `<model>-<method>-<chain id>.<ext>` per chain (a Pathfinder path's own draws,
    /// generated quantities per fitted file), the store `<model>-<method>-<first id>.zarr`.
    MethodChainIds,
}

/// Draws kept in memory, one [`hazel_draws::ChainDraws`] per chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemoryOutput {
    /// Also keep the saved warmup draws (when the run saves them).
    pub keep_warmup: bool,
}

/// How a chain's output files start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileStart {
    /// New files (replacing earlier ones).
    Fresh,
    /// An interrupted chain's CSV, cut back to the `csv_bytes` its checkpoint recorded and
    /// continued there (the CSV format only).
    Continue { csv_bytes: u64 },
    /// A chain that had finished: its file is left as it is and its sink receives nothing.
    Finished,
}

/// Each chain's sink, with what the caller needs after the run.
pub struct Outputs {
    /// One sink per chain, in chain order.
    pub sinks: Vec<Box<dyn DrawSink>>,
    /// The files written: one per chain, or the one Zarr store (empty without files).
    pub paths: Vec<PathBuf>,
    /// One handle per chain when draws are kept in memory (else empty). A continued or
    /// finished chain's handle starts with its post-warmup draws read back from its CSV.
    pub memory: Vec<MemoryDraws>,
}

impl FileOutput {
    /// The files a run writes: one per chain (CSV, Parquet), or the one Zarr store.
    pub fn paths(&self, run: &RunInfo) -> Vec<PathBuf> {
        let stem = |id: u64| match self.naming {
            FileNaming::ChainIds => format!("{}-{id}", self.model),
            FileNaming::Method => format!("{}-{}", self.model, run.method),
            FileNaming::MethodChainIds => format!("{}-{}-{id}", self.model, run.method),
        };
        let per_chain = |extension: &str| {
            run.chain_ids()
                .iter()
                .map(|&id| self.dir.join(format!("{}.{extension}", stem(id))))
                .collect()
        };
        match (self.format, self.naming) {
            (Format::Csv, _) => per_chain("csv"),
            (Format::Parquet, _) => per_chain("parquet"),
            (Format::Zarr, FileNaming::ChainIds) => {
                vec![self.dir.join(format!("{}.zarr", self.model))]
            }
            (Format::Zarr, _) => vec![self.dir.join(format!("{}.zarr", stem(run.first_chain_id)))],
        }
    }

    fn header(&self, run: &RunInfo, index: usize, path: &Path) -> CsvHeaderInfo {
        let mut header = CsvHeaderInfo::new(
            &self.model,
            &self.data_file,
            &path.display().to_string(),
            run,
            index,
        );
        let notes = &self.header;
        if let Some(Some(init)) = notes.inits.get(index) {
            header.run.init = SettingValue::Text(init.clone().into());
        }
        if let Some(Some(file)) = notes.metric_files.get(index) {
            header.run.set_setting(
                "metric_file",
                SettingValue::Text(file.clone().into()),
                false,
            );
        }
        header.refresh = notes.refresh;
        header.sig_figs = notes.sig_figs;
        header
    }

    /// One file sink per chain (`None` for a finished chain).
    fn open(
        &self,
        run: &RunInfo,
        names: &[String],
        starts: &[FileStart],
    ) -> io::Result<Vec<Option<Box<dyn DrawSink>>>> {
        if !self.format.is_available() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                self.format.unavailable_message(),
            ));
        }
        let paths = self.paths(run);
        if self.format != Format::Csv && starts.iter().any(|s| *s != FileStart::Fresh) {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "only Stan CSV output can be continued",
            ));
        }
        match self.format {
            Format::Csv => paths
                .iter()
                .zip(starts)
                .enumerate()
                .map(|(index, (path, start))| {
                    let header = self.header(run, index, path);
                    Ok(match *start {
                        FileStart::Fresh => {
                            Some(Box::new(ChainCsvFile::create(path, header, names)?) as _)
                        }
                        FileStart::Continue { csv_bytes } => Some(Box::new(ChainCsvFile::resume(
                            path, header, names, csv_bytes,
                        )?) as _),
                        FileStart::Finished => None,
                    })
                })
                .collect(),
            #[cfg(feature = "parquet")]
            Format::Parquet => paths
                .iter()
                .enumerate()
                .map(|(index, path)| {
                    let writer = crate::parquet_sink::ParquetWriter::create(
                        path,
                        self.header(run, index, path),
                    )?;
                    Ok(Some(Box::new(writer) as Box<dyn DrawSink>))
                })
                .collect(),
            #[cfg(feature = "zarr")]
            Format::Zarr => {
                let store = crate::zarr_sink::ZarrRun::create(
                    &paths[0],
                    &self.header(run, 0, &paths[0]),
                    run.chain_ids(),
                )?;
                Ok((0..run.chains)
                    .map(|index| Some(Box::new(store.chain_writer(index)) as Box<dyn DrawSink>))
                    .collect())
            }
            #[allow(unreachable_patterns)]
            _ => unreachable!("checked by is_available"),
        }
    }
}

impl OutputConfig {
    /// Creates every chain's sink for `run`, whose model writes the output columns `names`.
    /// `starts` says how each chain's files start (empty: all fresh). Files are created (or
    /// cut back) here, before any sampling, so a bad path fails early and no file is ever
    /// empty.
    pub fn open(
        &self,
        run: &RunInfo,
        names: &[String],
        starts: &[FileStart],
    ) -> io::Result<Outputs> {
        let fresh = vec![FileStart::Fresh; run.chains];
        let starts = if starts.is_empty() {
            &fresh[..]
        } else {
            starts
        };
        if starts.len() != run.chains {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} chains need {} starts, got {}",
                    run.chains,
                    run.chains,
                    starts.len()
                ),
            ));
        }
        let (mut files, paths) = match &self.files {
            Some(files) => (files.open(run, names, starts)?, files.paths(run)),
            None => ((0..run.chains).map(|_| None).collect(), Vec::new()),
        };
        let mut sinks = Vec::with_capacity(run.chains);
        let mut memory = Vec::new();
        for (index, start) in starts.iter().enumerate() {
            let mut parts: Vec<Box<dyn DrawSink>> = files[index].take().into_iter().collect();
            if let Some(keep) = self.memory {
                let (sink, handle) = match start {
                    FileStart::Fresh => {
                        MemorySink::new(run.chain_id(index), run.kept, keep.keep_warmup)
                    }
                    // Only CSV files are continued (checked above), so `paths` has the chain's.
                    FileStart::Continue { .. } | FileStart::Finished => {
                        let read = read_stan_csv(&paths[index]).map_err(|e| {
                            io::Error::new(io::ErrorKind::InvalidData, e.to_string())
                        })?;
                        let mut draws = read.to_chain_draws();
                        draws.chain_id = run.chain_id(index);
                        draws.stat_columns = run.stat_columns.clone();
                        MemorySink::continuing(draws, run.kept, keep.keep_warmup)
                    }
                };
                memory.push(handle);
                if *start != FileStart::Finished {
                    parts.push(Box::new(sink));
                }
            }
            // A finished chain's sink receives nothing: an empty fan-out.
            sinks.push(match parts.len() {
                1 => parts.pop().expect("one sink"),
                _ => Box::new(FanOut(parts)),
            });
        }
        Ok(Outputs {
            sinks,
            paths,
            memory,
        })
    }
}
