//! One chain's output on disk with checkpoints beside it, for runs that can be resumed.
//!
//! [`ChainCsvFile`] is a [`StanCsvWriter`] on a file plus the chain's checkpoint file
//! `<stem>.checkpoint.json` next to the CSV ([`checkpoint_path`]). The CSV gets its full header
//! when it is created, before the chain starts, so it is never empty. A checkpoint is
//! written atomically: the CSV's data are synced first, then the checkpoint goes to a
//! temporary file that is synced and renamed over the previous one (and the directory synced),
//! so at every moment the checkpoint on disk describes a prefix of the CSV that is on disk.
//!
//! # Checkpoint format (version 1)
//!
//! A JSON object `{"format": "hazel-checkpoint", "version": 1, "csv_bytes": N, "chain": C}`:
//! `N` is the CSV's length when the checkpoint was taken and `C` the algorithm's checkpoint as
//! it serialises itself (for NUTS a `hazel_nuts::ChainCheckpoint`: the chain's state — every
//! `f64` as its IEEE bit pattern, the random streams as word positions — and the runner's
//! counters; no state once the chain has finished). This crate never names that type: the
//! sink receives it as `&dyn erased_serde::Serialize`, and [`read_checkpoint`] reads it back
//! as whatever type its caller asks for. Resuming ([`ChainCsvFile::resume`]) cuts the CSV back to `N` bytes, which also
//! removes a row torn by a kill, and appends from there.

use crate::writer::{CsvHeaderInfo, StanCsvWriter};
use hazel_draws::{erased_serde, AdaptationInfo, Columns, Draw, DrawSink, Timing};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Seek, SeekFrom};
use std::path::{Path, PathBuf};

const FORMAT: &str = "hazel-checkpoint";
const VERSION: u32 = 1;

/// A checkpoint as stored on disk; `C` is the algorithm's checkpoint type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredCheckpoint<C> {
    pub format: String,
    pub version: u32,
    /// The CSV's length in bytes when the checkpoint was taken.
    pub csv_bytes: u64,
    pub chain: C,
}

/// What [`ChainCsvFile::checkpoint`] writes: [`StoredCheckpoint`] with the algorithm's
/// checkpoint as it was handed over.
#[derive(Serialize)]
struct CheckpointToStore<'a> {
    format: &'static str,
    version: u32,
    csv_bytes: u64,
    chain: &'a dyn erased_serde::Serialize,
}

/// The checkpoint file of the chain whose CSV is `csv`: `dir/m-1.csv` → `dir/m-1.checkpoint.json`.
pub fn checkpoint_path(csv: &Path) -> PathBuf {
    csv.with_extension("checkpoint.json")
}

/// Reads a checkpoint file, its chain checkpoint as `C`; `Ok(None)` when there is none.
pub fn read_checkpoint<C: DeserializeOwned>(
    path: &Path,
) -> Result<Option<StoredCheckpoint<C>>, String> {
    let text = match std::fs::read(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let stored: StoredCheckpoint<C> = serde_json::from_slice(&text)
        .map_err(|e| format!("{} is not a hazel checkpoint: {e}", path.display()))?;
    if stored.format != FORMAT || stored.version != VERSION {
        return Err(format!(
            "{}: unsupported checkpoint format {} version {} (this hazel writes {FORMAT} {VERSION})",
            path.display(),
            stored.format,
            stored.version
        ));
    }
    Ok(Some(stored))
}

/// One chain's CSV file and its checkpoints.
pub(crate) struct ChainCsvFile {
    csv: StanCsvWriter<File>,
    checkpoint_path: PathBuf,
}

impl ChainCsvFile {
    /// Creates (truncates) the CSV at `path` and writes its header with the model's output
    /// column `names` at once; removes a checkpoint left by an earlier run into the same file.
    pub fn create(path: &Path, header: CsvHeaderInfo, names: &[String]) -> io::Result<Self> {
        let checkpoint_path = checkpoint_path(path);
        remove_if_present(&checkpoint_path)?;
        let stats = header.stat_columns().to_vec();
        let mut csv = StanCsvWriter::create(path, header)?;
        csv.begin(&Columns {
            stats: &stats,
            values: names,
        })?;
        Ok(ChainCsvFile {
            csv,
            checkpoint_path,
        })
    }

    /// Opens the CSV of an interrupted run at `path`, cuts it to `csv_bytes` (the length its
    /// checkpoint recorded) and continues writing there.
    pub fn resume(
        path: &Path,
        header: CsvHeaderInfo,
        names: &[String],
        csv_bytes: u64,
    ) -> io::Result<Self> {
        let context = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
        let mut file = OpenOptions::new().write(true).open(path).map_err(context)?;
        let length = file.metadata().map_err(context)?.len();
        if length < csv_bytes {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{} has {length} bytes, fewer than the {csv_bytes} its checkpoint recorded: \
                     it was changed after the run stopped",
                    path.display()
                ),
            ));
        }
        file.set_len(csv_bytes).map_err(context)?;
        file.seek(SeekFrom::End(0)).map_err(context)?;
        Ok(ChainCsvFile {
            csv: StanCsvWriter::continuing(file, header, names, csv_bytes),
            checkpoint_path: checkpoint_path(path),
        })
    }
}

impl DrawSink for ChainCsvFile {
    fn begin(&mut self, columns: &Columns<'_>) -> io::Result<()> {
        self.csv.begin(columns)
    }
    fn adaptation_done(&mut self, adaptation: &AdaptationInfo<'_>) -> io::Result<()> {
        self.csv.adaptation_done(adaptation)
    }
    fn adaptation_resumed(&mut self, adaptation: &AdaptationInfo<'_>) -> io::Result<()> {
        self.csv.adaptation_resumed(adaptation)
    }
    fn draw(&mut self, draw: &Draw<'_>) -> io::Result<()> {
        self.csv.draw(draw)
    }
    fn finish(&mut self, timing: &Timing) -> io::Result<()> {
        self.csv.finish(timing)
    }

    fn checkpoint(&mut self, checkpoint: &dyn erased_serde::Serialize) -> io::Result<()> {
        // The CSV first: the checkpoint must never point past what is on disk.
        self.csv.get_ref().sync_data()?;
        let stored = CheckpointToStore {
            format: FORMAT,
            version: VERSION,
            csv_bytes: self.csv.bytes_written(),
            chain: checkpoint,
        };
        write_atomically(&self.checkpoint_path, |out| {
            serde_json::to_writer(out, &stored).map_err(io::Error::other)
        })
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot write checkpoint {}: {e}",
                    self.checkpoint_path.display()
                ),
            )
        })
    }
}

/// Writes `path` through a temporary file beside it: written, synced, renamed over `path`,
/// and the directory synced, so `path` is always either the old or the new content.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> io::Result<()> {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    let temporary = PathBuf::from(temporary);
    let mut out = BufWriter::new(File::create(&temporary)?);
    write(&mut out)?;
    let file = out.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&temporary, path)?;
    if let Some(dir) = path.parent() {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        // Makes the rename durable; not every platform can open a directory, which is fine.
        if let Ok(dir) = File::open(dir) {
            let _ = dir.sync_all();
        }
    }
    Ok(())
}

fn remove_if_present(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io::Error::new(
            e.kind(),
            format!("cannot remove {}: {e}", path.display()),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hazel_nuts::{ChainCheckpoint, ChainCounters, DrawStats, RunConfig};

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("hazel-chain-file-{}-{name}", std::process::id()));
        std::fs::remove_dir_all(&dir).ok();
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn header(path: &Path) -> CsvHeaderInfo {
        CsvHeaderInfo::new(
            "m",
            "",
            &path.display().to_string(),
            &RunConfig::default().info(),
            0,
        )
    }

    fn draw(file: &mut ChainCsvFile, lp: f64, x: f64) {
        file.draw(&Draw {
            warmup: false,
            stats: &stats(lp).values(),
            values: &[x],
        })
        .unwrap()
    }

    fn stats(lp: f64) -> DrawStats {
        DrawStats {
            lp,
            accept_stat: 0.9,
            stepsize: 0.5,
            treedepth: 2,
            n_leapfrog: 3,
            divergent: false,
            energy: 1.0,
        }
    }

    /// The header is on disk at creation; a checkpoint records the length written so far;
    /// resuming cuts what came after it (here a whole row and half of another).
    #[test]
    fn checkpoint_records_the_length_and_resume_cuts_back_to_it() {
        let dir = scratch("cut");
        let path = dir.join("m-1.csv");
        let names = vec!["x".to_string()];
        let mut file = ChainCsvFile::create(&path, header(&path), &names).unwrap();
        let header_len = std::fs::metadata(&path).unwrap().len();
        assert!(header_len > 0, "the header is written at creation");
        draw(&mut file, -1.0, 0.25);
        let checkpoint = ChainCheckpoint {
            state: None,
            counters: ChainCounters::default(),
        };
        file.checkpoint(&checkpoint).unwrap();
        let at_checkpoint = std::fs::read(&path).unwrap();
        draw(&mut file, -2.0, 0.5);
        drop(file);
        let mut torn = std::fs::read(&path).unwrap();
        torn.extend_from_slice(b"-3.5,0.1");
        std::fs::write(&path, torn).unwrap();

        let stored = read_checkpoint::<ChainCheckpoint>(&checkpoint_path(&path))
            .unwrap()
            .unwrap();
        assert_eq!(stored.csv_bytes, at_checkpoint.len() as u64);
        assert_eq!(stored.chain, checkpoint);
        let mut file =
            ChainCsvFile::resume(&path, header(&path), &names, stored.csv_bytes).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), at_checkpoint);
        draw(&mut file, -2.0, 0.5);
        let text = String::from_utf8(std::fs::read(&path).unwrap()).unwrap();
        assert!(text.ends_with("\n-2,0.9,0.5,2,3,0,1,0.5\n"), "{text}");
    }

    #[test]
    fn bad_checkpoints_and_shortened_files_are_clear_errors() {
        let dir = scratch("bad");
        let path = dir.join("m-1.csv");
        assert_eq!(
            read_checkpoint::<ChainCheckpoint>(&checkpoint_path(&path)),
            Ok(None)
        );
        std::fs::write(checkpoint_path(&path), "{\"format\": 1").unwrap();
        let error = read_checkpoint::<ChainCheckpoint>(&checkpoint_path(&path)).unwrap_err();
        assert!(error.contains("is not a hazel checkpoint"), "{error}");
        std::fs::write(&path, "# short\n").unwrap();
        let error = match ChainCsvFile::resume(&path, header(&path), &[], 100) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("a file shorter than its checkpoint is refused"),
        };
        assert!(
            error.contains("fewer than the 100 its checkpoint recorded"),
            "{error}"
        );
    }
}
