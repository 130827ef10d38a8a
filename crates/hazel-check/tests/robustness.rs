//! The checker must never panic: check many mutated versions of the valid programs (words
//! swapped for other words of the same program, lines dropped). Mutants that still parse
//! reach the checker with unusual trees; the test passes when none of them panics and every
//! rejected mutant's diagnostics render.

use hazel_testdata::Xorshift;
use std::path::{Path, PathBuf};

fn corpus_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    if let Ok(entries) = std::fs::read_dir(root.join("corpus/posteriordb")) {
        for e in entries.flatten() {
            let m = e.path().join("model.stan");
            if m.is_file() {
                files.push(m);
            }
        }
    }
    if let Ok(entries) = std::fs::read_dir(root.join("crates/hazel-syntax/tests/corpus/valid")) {
        for e in entries.flatten() {
            if e.path().extension().is_some_and(|x| x == "stan") {
                files.push(e.path());
            }
        }
    }
    files.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/robustness_seed.stan"));
    files.sort();
    files
}

fn words(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push((start, i));
        } else {
            i += 1;
        }
    }
    out
}

fn mutate(text: &str, rng: &mut Xorshift) -> String {
    let ws = words(text);
    match rng.below(3) {
        0 | 1 if ws.len() > 1 => {
            let (s, e) = ws[rng.below(ws.len())];
            let (rs, re) = ws[rng.below(ws.len())];
            format!("{}{}{}", &text[..s], &text[rs..re], &text[e..])
        }
        _ => {
            let lines: Vec<&str> = text.lines().collect();
            let drop = rng.below(lines.len());
            lines
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != drop)
                .map(|(_, l)| *l)
                .collect::<Vec<_>>()
                .join("\n")
        }
    }
}

#[test]
fn mutated_programs_never_panic() {
    let mut rng = Xorshift(0x9E37_79B9_7F4A_7C15);
    let mut checked = 0;
    let mut rejected = 0;
    for file in corpus_files() {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for _ in 0..12 {
            let mut mutant = text.clone();
            for _ in 0..=rng.below(3) {
                mutant = mutate(&mutant, &mut rng);
            }
            let result = hazel_check::check_source("mutant.stan", &mutant);
            checked += 1;
            if result.has_errors() {
                rejected += 1;
                assert!(!result.render_diagnostics().is_empty());
            }
        }
    }
    assert!(checked > 0);
    // Most mutants are wrong; if none were rejected the mutation did nothing.
    assert!(rejected > checked / 4, "{rejected} of {checked} rejected");
}

#[test]
fn seed_program_is_valid() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/robustness_seed.stan");
    let text = std::fs::read_to_string(path).expect("seed exists");
    let result = hazel_check::check_source("robustness_seed.stan", &text);
    assert!(!result.has_errors(), "{}", result.render_diagnostics());
}
