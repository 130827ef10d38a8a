//! Fuzz target bodies, in ordinary code so that `cargo test` runs them on a fixed, seeded set
//! of inputs (`tests/fuzz.rs`) and the cargo-fuzz targets in `fuzz/` run them on what
//! libFuzzer makes (`fuzz/fuzz_targets/data_reader.rs`, `sample_run.rs`).
//!
//! Each function takes arbitrary bytes and panics only when hazel broke one of its promises:
//! a panic anywhere (also one caught and turned into an "internal error"), or an error without
//! a message; otherwise they return `Ok` or the error hazel gave. The caller decides what a panic means: libFuzzer's hook aborts on every panic,
//! even a caught one, and the test installs a hook that records them.

#![forbid(unsafe_code)]

mod choices;
mod data_reader;
mod sample_run;

pub use data_reader::{data_reader, read_against, DATA_PROGRAMS};
pub use sample_run::sample_run;

/// Fails (panics) if an error message is empty or says that hazel caught its own panic;
/// otherwise returns the message as the target's `Err` (a clean failure on bad input).
fn check_message(context: &str, message: &str) -> Result<(), String> {
    assert!(
        !message.trim().is_empty(),
        "{context}: error without a message"
    );
    assert!(
        !message.contains("internal error") && !message.contains("panicked"),
        "{context}: {message}"
    );
    Err(message.to_string())
}
