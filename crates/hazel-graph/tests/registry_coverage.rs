//! Which functions of the checker's registry have a differential test, computed from the
//! committed fixture files themselves; the ones that have none are exactly the names in
//! `tests/untested_functions.txt` (`HAZEL_BLESS=1` rewrites it; the test fails when the list
//! and the computed set disagree either way). Names all of whose signatures are in
//! `tests/unsupported_signatures.txt` (nothing lowers) are left out of the check.
//!
//! A name counts as tested when
//! - a stanli-fixture program calls it outside generated quantities (generated quantities
//!   are not compared by those oracles): `tests/fixtures/*.json` of this crate with
//!   `programs[].program` (or `.code`), `tests/<dir>/oracle.json` beside its `.stan` files
//!   (`fixtures[].program`: the integrate_ode fixtures), the corpus and example oracles
//!   (`corpus/posteriordb/*/oracle.json`, `examples/*/oracle*.json`) and the difftest
//!   fixtures (`crates/hazel-cli/tests/fixtures/difftest/*/model.stan`). Calls are found by
//!   hazel's own checker (the resolved built-in of every call, `~` statement and operator);
//!   `y ~ fam(…)` counts for `fam_lpdf`/`fam_lpmf` and their `_lupdf`/`_lupmf` forms, an
//!   explicit `fam_lpdf(…)` for `fam_lupdf` too and the other way round (one kernel, the
//!   `propto` mask aside, which `dist_terms` checks);
//! - a numpy fixture (`tests/fixtures/*.json` with one `program` and `expected`:
//!   `complex.json`, `complex_linalg.json`) calls it outside generated quantities or in the
//!   declaration of a generated quantity its test compares (`expected` has a column of it,
//!   `name` or `name.index…`, or `invariants` names it);
//! - a test of this crate compares generated quantities that call it with exact values,
//!   moments or brute force: the blessed lists `tests/fixtures/<test>.checked.txt`, which
//!   that test file checks against the programs its tests evaluate
//!   (`common::checked_list`);
//! - a hazel-math mpmath fixture has a row for it: `special_{unary,binary,ternary}.json`
//!   by function name; `dist_lpdf.json` by family (`fam_lpdf`/`fam_lpmf` and the `lu`
//!   forms: the kernel takes the variate as a real, so the row's family is the function
//!   whichever suffix the registry has); `dist_cdf.json` by family (`fam_lcdf`, `fam_lccdf`;
//!   `fam_cdf` is not compared there);
//! - an rng moment test draws from it: the blessed lists
//!   `crates/hazel-math/tests/fixtures/rng_tested.txt` (`dist_rng`) and
//!   `mv_rng_tested.txt` (`dist_mv_rng`), which those tests check against what they draw;
//! - a coverage fixture rng case (`tests/fixtures/coverage.json`, `rng[].functions`, tested
//!   by `tests/coverage.rs`) draws from it.

mod common;

use hazel_check::SignatureTable;
use hazel_syntax::ast::{Stmt, StmtKind};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn list_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/untested_functions.txt")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&read(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Sorted entries of a directory.
fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    out.sort();
    out
}

/// Which generated quantities count.
enum Generated<'a> {
    /// None (the stanli oracles compare log densities only).
    Skip,
    /// The top-level declarations of these variables (the ones a test compares).
    Compared(&'a BTreeSet<String>),
}

/// The built-in names a program calls (every block but generated quantities, and the
/// generated quantities `generated` says).
fn called(label: &str, src: &str, generated: Generated, into: &mut BTreeSet<String>) {
    let result = hazel_check::check_source(label, src);
    let Some(checked) = &result.checked else {
        panic!("{label} does not check: {}", result.render_diagnostics());
    };
    let p = &checked.program;
    let blocks = [
        &p.data,
        &p.transformed_data,
        &p.parameters,
        &p.transformed_parameters,
        &p.model,
    ];
    let mut stmts: Vec<&Stmt> = blocks
        .into_iter()
        .flatten()
        .flat_map(|b| &b.stmts)
        .collect();
    if let Some(functions) = &p.functions {
        stmts.extend(functions.functions.iter().filter_map(|f| f.body.as_ref()));
    }
    if let (Generated::Compared(names), Some(block)) = (generated, &p.generated_quantities) {
        for s in &block.stmts {
            if let StmtKind::VarDecl(d) = &s.kind {
                if d.declarators.iter().any(|d| names.contains(&d.name.name)) {
                    stmts.push(s);
                }
            }
        }
    }
    common::builtins_called(checked, stmts, into);
}

fn blessed_list(path: &Path) -> Vec<String> {
    read(path)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect()
}

/// Every registry name with a differential oracle.
fn tested_names() -> BTreeSet<String> {
    let root = root();
    let mut tested = BTreeSet::new();
    // Stanli fixture programs of this crate.
    let fixtures = root.join("crates/hazel-graph/tests/fixtures");
    for path in entries(&fixtures) {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.ends_with(".checked.txt") {
            tested.extend(blessed_list(&path));
            continue;
        }
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let v = json(&path);
        let label = path.display().to_string();
        if let Some(programs) = v["programs"].as_array() {
            for p in programs {
                let src = p["program"].as_str().or(p["code"].as_str());
                let src = src.unwrap_or_else(|| panic!("{label}: a program without code"));
                called(&label, src, Generated::Skip, &mut tested);
            }
        } else if let (Some(src), Some(expected)) =
            (v["program"].as_str(), v["expected"].as_object())
        {
            // A numpy fixture (`complex.json`, `complex_linalg.json`): its test compares the
            // generated quantities `expected` has columns for (`name` or `name.index…`) and
            // those `invariants` names.
            let mut compared: BTreeSet<String> = expected
                .keys()
                .map(|k| k.split('.').next().unwrap_or(k).to_string())
                .collect();
            for n in v["invariants"].as_array().into_iter().flatten() {
                compared.insert(n.as_str().expect("invariant name").into());
            }
            called(&label, src, Generated::Compared(&compared), &mut tested);
        }
        if let Some(cases) = v["rng"].as_array() {
            for c in cases {
                for f in c["functions"].as_array().expect("rng case functions") {
                    tested.insert(f.as_str().expect("function name").into());
                }
            }
        }
    }
    // Stanli oracles kept beside their `.stan` files (`tests/<dir>/oracle.json` with
    // `fixtures[].program` naming a file of that directory: the integrate_ode fixtures).
    for sub in entries(&root.join("crates/hazel-graph/tests")) {
        let oracle = sub.join("oracle.json");
        if !sub.is_dir() || !oracle.exists() {
            continue;
        }
        for f in json(&oracle)["fixtures"].as_array().expect("fixtures") {
            let file = sub.join(f["program"].as_str().expect("fixture program"));
            called(
                &file.display().to_string(),
                &read(&file),
                Generated::Skip,
                &mut tested,
            );
        }
    }
    // Corpus and example oracles.
    for dir in ["corpus/posteriordb", "examples"] {
        for sub in entries(&root.join(dir)) {
            if !sub.is_dir() {
                continue;
            }
            for f in entries(&sub) {
                let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
                if name.starts_with("oracle") && name.ends_with(".json") {
                    let v = json(&f);
                    let program = v["program"].as_str().expect("oracle program");
                    // The program's path from the repository root, or its text.
                    let src = if program.contains('{') {
                        program.to_string()
                    } else {
                        read(&root.join(program))
                    };
                    called(&f.display().to_string(), &src, Generated::Skip, &mut tested);
                }
            }
        }
    }
    // Difftest fixtures.
    for sub in entries(&root.join("crates/hazel-cli/tests/fixtures/difftest")) {
        let model = sub.join("model.stan");
        if model.exists() {
            called(
                &model.display().to_string(),
                &read(&model),
                Generated::Skip,
                &mut tested,
            );
        }
    }
    // `~ fam` resolves to `fam_lpdf`/`fam_lpmf`; the `lu` forms share the kernel.
    for name in tested.clone() {
        for (a, b) in [
            ("_lpdf", "_lupdf"),
            ("_lpmf", "_lupmf"),
            ("_lupdf", "_lpdf"),
            ("_lupmf", "_lpmf"),
        ] {
            if let Some(family) = name.strip_suffix(a) {
                tested.insert(format!("{family}{b}"));
            }
        }
    }
    // hazel-math mpmath fixtures.
    let math = root.join("crates/hazel-math/tests/fixtures");
    for file in [
        "special_unary.json",
        "special_binary.json",
        "special_ternary.json",
    ] {
        for row in json(&math.join(file)).as_array().expect("rows") {
            tested.insert(row["name"].as_str().expect("name").into());
        }
    }
    for row in json(&math.join("dist_lpdf.json")).as_array().expect("rows") {
        let family = row["name"].as_str().expect("name");
        for suffix in ["_lpdf", "_lupdf", "_lpmf", "_lupmf"] {
            tested.insert(format!("{family}{suffix}"));
        }
    }
    for row in json(&math.join("dist_cdf.json")).as_array().expect("rows") {
        let family = row["name"].as_str().expect("name");
        for suffix in ["_lcdf", "_lccdf"] {
            tested.insert(format!("{family}{suffix}"));
        }
    }
    // Rng moment tests.
    for file in ["rng_tested.txt", "mv_rng_tested.txt"] {
        tested.extend(blessed_list(&math.join(file)));
    }
    tested
}

#[test]
fn untested_functions_are_exactly_the_listed_ones() {
    let table = SignatureTable::builtin();
    let unsupported: BTreeSet<String> = blessed_list(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/unsupported_signatures.txt"),
    )
    .into_iter()
    .collect();
    // Names with at least one signature that lowers.
    let names: BTreeSet<String> = table
        .signatures
        .iter()
        .filter(|s| !unsupported.contains(&s.render()))
        .map(|s| s.name.clone())
        .collect();
    assert!(names.len() > 500, "{} registry names", names.len());
    let tested = tested_names();
    let untested: Vec<&String> = names.iter().filter(|n| !tested.contains(*n)).collect();
    let mut text = String::from(
        "# Registry functions (with a signature that lowers) that no differential test calls.\n\
         # Generated by `HAZEL_BLESS=1 cargo test -p hazel-graph --test registry_coverage`;\n\
         # the test fails when this list and the fixtures disagree.\n",
    );
    for n in &untested {
        text.push_str(n);
        text.push('\n');
    }
    let path = list_path();
    if std::env::var_os("HAZEL_BLESS").is_some() {
        std::fs::write(&path, &text).expect("write the list");
        return;
    }
    let listed = blessed_list(&path);
    let now_tested: Vec<&String> = listed.iter().filter(|l| !untested.contains(l)).collect();
    let not_listed: Vec<&&String> = untested.iter().filter(|n| !listed.contains(**n)).collect();
    assert!(
        now_tested.is_empty() && not_listed.is_empty(),
        "the fixtures and tests/untested_functions.txt disagree \
         (HAZEL_BLESS=1 rewrites the list).\nnow tested (or no longer lowered/registered): \
         {now_tested:#?}\nuntested and not listed: {not_listed:#?}"
    );
}
