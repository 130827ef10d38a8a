//! Invalid programs with their expected diagnostics: `tests/invalid/NAME.stan` must be
//! rejected and its rendered diagnostics must equal `tests/invalid/NAME.stderr`.
//! Run with `HAZEL_BLESS=1` to (re)write the `.stderr` snapshots after reviewing them.

use std::path::Path;

#[test]
fn invalid_programs_match_snapshots() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/invalid");
    let bless = std::env::var_os("HAZEL_BLESS").is_some_and(|v| v == "1");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/invalid exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "stan"))
        .collect();
    files.sort();
    assert!(files.len() >= 40, "only {} invalid programs", files.len());
    let mut failures = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("readable");
        let name = format!(
            "{}.stan",
            file.file_stem().and_then(|s| s.to_str()).unwrap_or("?")
        );
        let result = hazel_check::check_source(&name, &text);
        if !result.has_errors() {
            failures.push(format!("{name}: accepted, expected an error"));
            continue;
        }
        if result.checked.is_some() {
            failures.push(format!(
                "{name}: errors reported but a checked program returned"
            ));
        }
        let rendered = result.render_diagnostics();
        let snapshot = file.with_extension("stderr");
        if bless {
            std::fs::write(&snapshot, &rendered).expect("write snapshot");
            continue;
        }
        match std::fs::read_to_string(&snapshot) {
            Ok(expected) if expected == rendered => {}
            Ok(expected) => failures.push(format!(
                "{name}: diagnostics differ from {}\n--- expected\n{expected}\n--- found\n{rendered}",
                snapshot.display()
            )),
            Err(_) => failures.push(format!(
                "{name}: no snapshot {} (run with HAZEL_BLESS=1)\n{rendered}",
                snapshot.display()
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
