//! Fuzz target: any bytes, as CmdStan JSON data (raw or decoded into nearly right JSON), read
//! against fixed programs' data blocks: an error with a message, never a panic or an abort.
//! The body is `hazel_fuzz::data_reader` (also run by `cargo test -p hazel-fuzz`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = hazel_fuzz::data_reader(data);
});
