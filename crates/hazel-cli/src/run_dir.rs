//! The output directory of `hazel sample` as a unit: the lock that gives one run at a time the
//! directory, and the run's settings stored there so that `--resume DIR` can continue it.
//!
//! * `DIR/.hazel.lock` holds the PID of the run using the directory, locked with the OS's
//!   advisory file lock for as long as the run lasts. The OS drops the lock when the process
//!   dies, however it dies, so a lock file left by a killed run never blocks the next one.
//! * `DIR/hazel-run.json` ([`RunSettings`]) holds the `hazel sample` arguments as given, the
//!   directory they were given in, the seed actually used and content hashes (XXH3-64) of the
//!   program (every file it includes too), the data, the initial values and the metric file,
//!   so a resumed run is the same run, and a changed input is a clear error instead of a
//!   mixed file.

use hazel_output::chain_file::write_atomically;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// The name of the settings file in the output directory.
pub const RUN_SETTINGS: &str = "hazel-run.json";
const LOCK_FILE: &str = ".hazel.lock";
const FORMAT: &str = "hazel-run";
const VERSION: u32 = 1;

/// Holds the output directory for this process until dropped.
pub struct OutputLock {
    _file: File,
}

impl OutputLock {
    /// Takes the directory's lock, or says which process holds it.
    pub fn acquire(dir: &Path) -> Result<Self, String> {
        let path = dir.join(LOCK_FILE);
        let cannot = |e: std::io::Error| format!("cannot lock {}: {e}", path.display());
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(cannot)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = match holder.trim() {
                    "" => "another process".to_string(),
                    pid => format!("process {pid}"),
                };
                return Err(format!(
                    "{} is in use by another hazel run ({holder}, lock file {}); wait for it to \
                     end or choose another --output-dir",
                    dir.display(),
                    path.display()
                ));
            }
            Err(TryLockError::Error(e)) => return Err(cannot(e)),
        }
        file.set_len(0).map_err(cannot)?;
        file.rewind().map_err(cannot)?;
        writeln!(file, "{}", std::process::id()).map_err(cannot)?;
        file.flush().map_err(cannot)?;
        Ok(OutputLock { _file: file })
    }
}

/// Content hash of a run input, as hex text.
pub fn content_hash(parts: &[&[u8]]) -> String {
    let mut hasher = twox_hash::XxHash3_64::with_seed(0);
    for part in parts {
        // Length-prefixed, so that moving bytes between parts changes the hash.
        std::hash::Hasher::write(&mut hasher, &(part.len() as u64).to_le_bytes());
        std::hash::Hasher::write(&mut hasher, part);
    }
    format!("{:016x}", std::hash::Hasher::finish(&hasher))
}

/// An input file of the run with its content hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Input {
    pub path: PathBuf,
    pub xxh3: String,
}

/// Everything needed to run `hazel sample` again exactly as it was started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSettings {
    pub format: String,
    pub version: u32,
    pub hazel_version: String,
    /// The arguments after `hazel sample`, as given.
    pub arguments: Vec<String>,
    /// Where they were given (relative paths in them are relative to it).
    pub working_directory: PathBuf,
    /// The seed used (drawn from the clock when no `--seed` was given).
    pub seed: u64,
    /// The program (hash over it and every file it includes), the data and the init file.
    pub model: Input,
    pub data: Option<Input>,
    pub init: Option<Input>,
    /// The `--metric-file` (all per-chain files it stands for, hashed together).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<Input>,
}

impl RunSettings {
    pub fn new(
        arguments: Vec<String>,
        seed: u64,
        model: Input,
        data: Option<Input>,
        init: Option<Input>,
    ) -> Result<Self, String> {
        let working_directory = std::env::current_dir()
            .map_err(|e| format!("cannot read the working directory: {e}"))?;
        Ok(RunSettings {
            metric: None,
            format: FORMAT.to_string(),
            version: VERSION,
            hazel_version: env!("CARGO_PKG_VERSION").to_string(),
            arguments,
            working_directory,
            seed,
            model,
            data,
            init,
        })
    }

    pub fn write(&self, dir: &Path) -> Result<(), String> {
        let path = dir.join(RUN_SETTINGS);
        write_atomically(&path, |out| {
            serde_json::to_writer_pretty(&mut *out, self).map_err(std::io::Error::other)?;
            out.write_all(b"\n")
        })
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    pub fn read(dir: &Path) -> Result<Self, String> {
        let path = dir.join(RUN_SETTINGS);
        let text = std::fs::read(&path).map_err(|e| {
            format!(
                "cannot resume from {}: cannot read {} ({e}); it is written by `hazel sample` \
                 into its --output-dir",
                dir.display(),
                path.display()
            )
        })?;
        let settings: RunSettings = serde_json::from_slice(&text)
            .map_err(|e| format!("{} is not a hazel run settings file: {e}", path.display()))?;
        if settings.format != FORMAT || settings.version != VERSION {
            return Err(format!(
                "{}: unsupported format {} version {}",
                path.display(),
                settings.format,
                settings.version
            ));
        }
        Ok(settings)
    }

    /// An error naming every input whose content differs from the stored run's, or the other
    /// hazel version (whose sampler may draw differently).
    pub fn check_same_inputs(&self, now: &RunSettings) -> Result<(), String> {
        if self.hazel_version != now.hazel_version {
            return Err(format!(
                "cannot resume: the run was started by hazel {}, this is hazel {}",
                self.hazel_version, now.hazel_version
            ));
        }
        let mut changed = Vec::new();
        let mut compare = |what: &str, stored: &Option<Input>, current: &Option<Input>| {
            if stored.as_ref().map(|i| &i.xxh3) != current.as_ref().map(|i| &i.xxh3) {
                let path = stored.as_ref().or(current.as_ref()).map(|i| &i.path);
                changed.push(match path {
                    Some(path) => format!("the {what} ({})", path.display()),
                    None => format!("the {what}"),
                });
            }
        };
        compare(
            "program",
            &Some(self.model.clone()),
            &Some(now.model.clone()),
        );
        compare("data", &self.data, &now.data);
        compare("initial values", &self.init, &now.init);
        compare("metric file", &self.metric, &now.metric);
        if changed.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "cannot resume: {} changed since the run started; start a new run instead",
                changed.join(" and ")
            ))
        }
    }
}

/// Removes a previous run's settings from `dir` (a new run is starting there).
pub fn remove_run_settings(dir: &Path) -> Result<(), String> {
    let path = dir.join(RUN_SETTINGS);
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(format!("cannot remove {}: {e}", path.display()))
        }
        _ => Ok(()),
    }
}
