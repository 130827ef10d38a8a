//! Where tests and benchmarks find the material that does not live in the repository.
//!
//! The posteriordb suite (data, reference draws, oracles) sits beside the checkout at
//! `../shared/posteriordb`, as CI provides it, or wherever `$HAZEL_POSTERIORDB` names. A user's
//! fresh clone has neither, so every test that needs the suite asks [`posteriordb`] and skips
//! with [`skip`]'s message when it is absent: the README's test command passes either way.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

/// The repository root (the workspace directory).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Where the posteriordb suite is expected: `$HAZEL_POSTERIORDB`, else `../shared/posteriordb`
/// beside the checkout. The directory may not exist; see [`posteriordb`].
pub fn posteriordb_location() -> PathBuf {
    match std::env::var_os("HAZEL_POSTERIORDB") {
        Some(dir) => PathBuf::from(dir),
        None => repo_root().join("../shared/posteriordb"),
    }
}

/// The posteriordb suite, if it is there.
pub fn posteriordb() -> Option<PathBuf> {
    let dir = posteriordb_location();
    dir.is_dir().then_some(dir)
}

/// A path that a corpus fixture names relative to the repository root, with the suite's own
/// prefix `../shared/posteriordb/` resolved through [`posteriordb_location`] (so
/// `$HAZEL_POSTERIORDB` moves it too).
pub fn resolve_fixture_path(relative: &str) -> PathBuf {
    match relative.strip_prefix("../shared/posteriordb/") {
        Some(rest) => posteriordb_location().join(rest),
        None => repo_root().join(relative),
    }
}

/// Prints the message a test gives when it skips for want of the suite.
pub fn skip(test: &str) {
    eprintln!(
        "SKIPPED {test}: the posteriordb suite is not at {} (CI provides ../shared beside the \
         checkout; set HAZEL_POSTERIORDB to run this test elsewhere)",
        posteriordb_location().display()
    );
}

/// Xorshift64 (Marsaglia's 13/7/17 triple): the small deterministic generator of test and
/// bench inputs, so data and fuzzed cases are the same on every machine and need no RNG crate.
/// Not a sampler's stream (those are `hazel_rng`'s).
#[derive(Debug, Clone)]
pub struct Xorshift(pub u64);

impl Xorshift {
    /// The next 64 random bits (the state must not start at 0).
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in [0, 1), from the top 53 bits.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [−½, ½).
    pub fn centred(&mut self) -> f64 {
        self.uniform() - 0.5
    }

    /// Uniform in `0..n` (0 when `n` is 0), by remainder.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixture_paths_outside_the_suite_stay_in_the_repository() {
        let p = resolve_fixture_path("examples/eight_schools/data.json");
        assert!(p.exists(), "{}", p.display());
    }

    #[test]
    fn fixture_paths_in_the_suite_follow_its_location() {
        let p = resolve_fixture_path("../shared/posteriordb/x/data.json");
        assert_eq!(p, posteriordb_location().join("x/data.json"));
    }
}
