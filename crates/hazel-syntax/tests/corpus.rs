//! Corpus tests: every valid program parses and round-trips through the pretty-printer;
//! mutated programs never make the parser panic.

mod common;

use std::path::{Path, PathBuf};

use common::assert_round_trip;
use hazel_syntax::parse_file;

fn stan_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "stan"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn valid_corpus() -> Vec<PathBuf> {
    stan_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/valid"))
}

/// `corpus/posteriordb/*/model.stan` at the workspace root (written separately; may be absent).
fn posteriordb_models() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/posteriordb");
    let mut files: Vec<PathBuf> = std::fs::read_dir(root)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path().join("model.stan")))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn check_parses_and_round_trips(path: &Path) {
    let result = parse_file(path, &[]).expect("readable");
    let name = path.display().to_string();
    let Some(program) = &result.program else {
        panic!("{name} does not parse:\n{}", result.render_diagnostics());
    };
    assert_round_trip(&name, program);
}

#[test]
fn valid_corpus_parses_and_round_trips() {
    let files = valid_corpus();
    assert!(files.len() >= 5, "corpus missing: {files:?}");
    for path in &files {
        check_parses_and_round_trips(path);
    }
}

#[test]
fn posteriordb_models_parse_and_round_trip() {
    for path in posteriordb_models() {
        check_parses_and_round_trips(&path);
    }
}

/// A small deterministic generator (SplitMix64) so the mutation test needs no dependency.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Tokens worth splicing into programs: they reach paths random bytes rarely do.
const SPLICES: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ";",
    ",",
    "<",
    ">",
    "<-",
    "~",
    "|",
    "?",
    ":",
    "'",
    ".",
    ".1",
    "T[",
    "array[",
    "tuple(",
    "real",
    "vector",
    "for (i in 1:N)",
    "if (",
    "else",
    "target +=",
    "#include x",
    "/*",
    "*/",
    "//",
    "\"",
    "1e",
    "2i",
    ".5",
    "^",
    "-",
    "!",
    "%/%",
    "\\",
    "=",
    "functions {",
    "model {",
    "data {",
    "increment_log_prob(",
    "get_lp()",
    "profile(\"p\")",
];

fn mutate(rng: &mut SplitMix, source: &[u8]) -> Vec<u8> {
    let mut bytes = source.to_vec();
    let edits = 1 + rng.below(4);
    for _ in 0..edits {
        let len = bytes.len();
        match rng.below(6) {
            0 if len > 0 => {
                let i = rng.below(len);
                bytes[i] ^= 1 << rng.below(8);
            }
            1 => {
                bytes.truncate(rng.below(len + 1));
            }
            2 if len > 0 => {
                let i = rng.below(len);
                let j = (i + 1 + rng.below(32)).min(len);
                bytes.drain(i..j);
            }
            3 => {
                let i = rng.below(len + 1);
                let s = SPLICES[rng.below(SPLICES.len())].as_bytes();
                bytes.splice(i..i, s.iter().copied());
            }
            4 if len > 0 => {
                // Duplicate a slice (creates unbalanced nesting).
                let i = rng.below(len);
                let j = (i + 1 + rng.below(64)).min(len);
                let chunk: Vec<u8> = bytes[i..j].to_vec();
                let k = rng.below(len + 1);
                bytes.splice(k..k, chunk);
            }
            _ if len > 0 => {
                let i = rng.below(len);
                bytes[i] = rng.next() as u8;
            }
            _ => {}
        }
    }
    bytes
}

#[test]
fn mutated_corpus_never_panics() {
    let sources: Vec<Vec<u8>> = valid_corpus()
        .iter()
        .chain(posteriordb_models().iter())
        .map(|p| std::fs::read(p).expect("readable"))
        .collect();
    let mut rng = SplitMix(0x5eed_0f5a_1100);
    let mut parsed_ok = 0usize;
    let mut rejected = 0usize;
    const ROUNDS: usize = 10_000;
    for round in 0..ROUNDS {
        let source = &sources[round % sources.len()];
        let mutated = mutate(&mut rng, source);
        let text = String::from_utf8_lossy(&mutated);
        let result = hazel_syntax::parse_str("mutant.stan", &text);
        // Every diagnostic renders and every span lies inside its file.
        for d in &result.diagnostics {
            let file = result.sources.get(d.span.file).expect("span file exists");
            assert!(d.span.start <= d.span.end && d.span.end as usize <= file.text.len());
            let _ = d.render_plain(&result.sources);
        }
        match &result.program {
            Some(program) => {
                parsed_ok += 1;
                assert_round_trip("mutant", program);
            }
            None => {
                assert!(result.has_errors());
                rejected += 1;
            }
        }
    }
    // The oracle is "no panic, and anything accepted round-trips"; both outcomes must occur
    // or the mutator is not exercising the parser.
    assert!(
        parsed_ok > 0 && rejected > 0,
        "ok {parsed_ok}, rejected {rejected}"
    );
}
