//! Every valid program must check clean: the syntax crate's valid corpus and the posteriordb
//! models written by the corpus engineer (globbed at test time; whichever exist).

use std::path::{Path, PathBuf};

fn stan_files(dir: &Path, nested_model: bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let p = entry.path();
        if nested_model {
            let m = p.join("model.stan");
            if m.is_file() {
                out.push(m);
            }
        } else if p.extension().is_some_and(|e| e == "stan") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// Corpus programs that Stan itself rejects, with the reason and a fragment of the expected
/// diagnostic. They must keep being rejected for that reason (reported upstream to the
/// corpus owners).
const KNOWN_INVALID: &[(&str, &str, &str)] = &[(
    "tuples_complex.stan",
    "`to_int(data real)` needs a data-only argument (Functions Reference, casting \
     functions); `x` is a non-data function argument",
    "argument 1 of `to_int` must be data-only",
)];

fn check_all(files: &[PathBuf]) -> Vec<String> {
    let mut failures = Vec::new();
    for f in files {
        let file_name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if let Some((_, why, expected)) = KNOWN_INVALID.iter().find(|k| k.0 == file_name) {
            let rendered = hazel_check::check_file(f, &[])
                .map(|r| r.render_diagnostics())
                .unwrap_or_default();
            if !rendered.contains(expected) {
                failures.push(format!(
                    "{}: known invalid ({why}) but not rejected with `{expected}`:\n{rendered}",
                    f.display()
                ));
            }
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap_or_default();
        let include_dir = f
            .parent()
            .map(|p| p.to_path_buf())
            .into_iter()
            .collect::<Vec<_>>();
        let result = match hazel_check::check_file(f, &include_dir) {
            Ok(r) => r,
            Err(e) => {
                failures.push(format!("{}: cannot read: {e}", f.display()));
                continue;
            }
        };
        let _ = text;
        if result.has_errors() {
            failures.push(format!("{}:\n{}", f.display(), result.render_diagnostics()));
        }
    }
    failures
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn syntax_valid_corpus_checks_clean() {
    let files = stan_files(
        &workspace_root().join("crates/hazel-syntax/tests/corpus/valid"),
        false,
    );
    eprintln!("checking {} syntax-corpus programs", files.len());
    let failures = check_all(&files);
    assert!(
        failures.is_empty(),
        "{} of {} valid programs rejected:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[test]
fn posteriordb_models_check_clean() {
    let files = stan_files(&workspace_root().join("corpus/posteriordb"), true);
    eprintln!("checking {} posteriordb models", files.len());
    let failures = check_all(&files);
    assert!(
        failures.is_empty(),
        "{} of {} posteriordb models rejected:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}
