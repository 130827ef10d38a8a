//! Helpers shared by the tests that run the `hazel` binary.
// Each test file uses a different subset.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The path of a file of a bundled example, `examples/<name>/<file>`.
pub fn example(name: &str, file: &str) -> String {
    repo()
        .join("examples")
        .join(name)
        .join(file)
        .to_string_lossy()
        .into_owned()
}

/// Runs `hazel` with `args` from the current directory, without colour.
pub fn hazel(args: &[&str]) -> Output {
    hazel_in(Path::new("."), args)
}

/// Runs `hazel` with `args` from `dir`, without colour.
pub fn hazel_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hazel"))
        .current_dir(dir)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run hazel")
}

/// A fresh, empty directory for one test (unique per test process).
pub fn scratch_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hazel-{}-{test}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// Program output as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
