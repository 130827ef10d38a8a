//! Fuzz target: bytes decoded into a small Stan program, data and settings, run through
//! `hazel sample`'s own code (one chain, a few iterations): an error with a message or draws,
//! never a panic (libFuzzer's hook aborts on caught panics too), an abort or a hang.
//! The body is `hazel_fuzz::sample_run` (also run by `cargo test -p hazel-fuzz`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = hazel_fuzz::sample_run(data);
});
