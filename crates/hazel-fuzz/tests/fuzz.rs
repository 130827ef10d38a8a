//! The fuzz targets on a fixed, seeded set of inputs, so that CI runs them without nightly
//! Rust or libFuzzer. Inputs are random bytes from a fixed seed; a panic anywhere during a run
//! (also one hazel catches and turns into an "internal error") fails the test with the input.

use std::sync::Mutex;

/// Panic messages seen since the last `take_panics` (a hook records even caught panics).
static PANICS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn record_panics() {
    std::panic::set_hook(Box::new(|info| {
        PANICS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(info.to_string());
    }));
}

fn take_panics() -> Vec<String> {
    std::mem::take(&mut *PANICS.lock().unwrap_or_else(|e| e.into_inner()))
}

/// splitmix64: fixed, seeded random bytes without a dependency.
struct Bytes(u64);

impl Bytes {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn input(&mut self, max_len: usize) -> Vec<u8> {
        let len = (self.next() % max_len as u64) as usize;
        (0..len).map(|_| self.next() as u8).collect()
    }
}

/// Runs `target` on `count` seeded inputs; fails with the first input that panicked.
/// Returns how many inputs the target accepted (`Ok`).
fn run_inputs(
    target: fn(&[u8]) -> Result<(), String>,
    seed: u64,
    count: usize,
    max_len: usize,
) -> usize {
    record_panics();
    let mut bytes = Bytes(seed);
    let mut accepted = 0;
    for i in 0..count {
        let input = bytes.input(max_len);
        let outcome = std::panic::catch_unwind(|| target(&input));
        let panics = take_panics();
        assert!(
            outcome.is_ok() && panics.is_empty(),
            "input {i} ({input:?}) panicked: {panics:?}"
        );
        accepted += usize::from(matches!(outcome, Ok(Ok(()))));
    }
    accepted
}

/// Both targets in one test (the panic hook is process-wide). Besides never panicking, the
/// generators must reach past the first error: some data files are read whole and most
/// generated runs sample to the end, or the targets would fuzz only the first checks.
#[test]
fn fuzz_targets_on_seeded_inputs() {
    let accepted = run_inputs(hazel_fuzz::data_reader, 11, 3000, 400);
    eprintln!("data_reader: {accepted} of 3000 data files read whole");
    assert!(
        accepted >= 30,
        "only {accepted} of 3000 data files were read whole"
    );
    let accepted = run_inputs(hazel_fuzz::sample_run, 12, 1000, 300);
    eprintln!("sample_run: {accepted} of 1000 generated runs sampled");
    assert!(
        accepted >= 250,
        "only {accepted} of 1000 generated runs sampled"
    );
}

/// Each data program reads data of its declared shapes (so the data target reaches every
/// kind of declaration), and the reader's errors name the variable.
#[test]
fn data_programs_read_good_data() {
    let good = [
        r#"{"N": 2, "y": [0, 1], "x": 0.5, "s": 2}"#,
        r#"{"K": 2, "v": [1, 2], "r": [3, 4], "m": [[1, 2], [3, 4]], "theta": [0.25, 0.75]}"#,
        r#"{"N": 1, "a": [[1, 2]], "b": [[0.5], [-0.5]], "S": [[2, 1], [1, 2]],
            "C": [[1, 0.5], [0.5, 1]], "L": [[1, 0], [0.5, 1]]}"#,
        r#"{"t": {"1": 3, "2": [1.5, 2.5]}, "at": [{"1": 1, "2": [1, 2]}, {"1": 2, "2": [3, 4]}],
            "z": [1, -1], "zv": [[1, 2], [3, 4]]}"#,
        r#"{"N": 2, "o": [1, 2], "po": [0.5, 3], "u": [0.6, 0.8], "sz": [1, -0.5, -0.5],
            "k": [-2, 7], "LC": [[1, 0], [0.6, 0.8]]}"#,
        r#"{"N": 2, "y": [1, 2], "w": [0, 3], "pts": [[1, 2], [3, 4]]}"#,
    ];
    assert_eq!(good.len(), hazel_fuzz::DATA_PROGRAMS.len());
    for (program, text) in good.iter().enumerate() {
        assert_eq!(
            hazel_fuzz::read_against(program, text),
            Ok(()),
            "program {program}"
        );
    }
    let error = hazel_fuzz::read_against(0, r#"{"N": 2, "y": [0, 2], "x": 0.5, "s": 2}"#);
    assert!(error.is_err_and(|e| e.contains("y[2]")));
}
