//! Reading draws back and comparing runs: what the sampling tests share.

use hazel_diagnostics::ChainDraws;
use hazel_output::StanCsv;
use std::path::Path;

/// All post-warmup draws of one column, chain by chain.
pub fn column_draws(chains: &[StanCsv], column: &str) -> ChainDraws {
    let per_chain: Vec<Vec<f64>> = chains
        .iter()
        .map(|chain| {
            let index = chain
                .column_index(column)
                .unwrap_or_else(|| panic!("no column {column} in {}", chain.path.display()));
            chain.column(index)
        })
        .collect();
    ChainDraws::new(&per_chain).expect("chains of equal length")
}

pub fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

pub fn sd(values: &[f64]) -> f64 {
    let m = mean(values);
    let ss: f64 = values.iter().map(|v| (v - m) * (v - m)).sum();
    (ss / (values.len() as f64 - 1.0)).sqrt()
}

/// A chain's file with what legitimately differs between identical runs removed: the timing
/// block (wall-clock seconds) and the directory the file was written to (the output file's
/// name is part of the configuration block).
pub fn without_timing(text: &str, output_dir: &Path) -> String {
    text.lines()
        .filter(|line| !is_timing_line(line))
        .map(|line| line.replace(&output_dir.display().to_string(), "<output-dir>"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The file at `path` without CmdStan's timing lines (the only wall-clock-dependent content).
pub fn file_without_timing(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|line| !is_timing_line(line))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `line` is one of the timing block's lines (wall-clock seconds).
fn is_timing_line(line: &str) -> bool {
    line.starts_with('#') && line.contains(" seconds (")
}

/// The first line where two texts differ, for a readable failure message.
pub fn first_difference(a: &str, b: &str) -> String {
    for (number, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        if x != y {
            return format!("line {}:\n  {x}\n  {y}", number + 1);
        }
    }
    format!(
        "one text is a prefix of the other ({} vs {} lines)",
        a.lines().count(),
        b.lines().count()
    )
}

/// Asserts `|estimate − reference| ≤ z·mcse` with a message naming the quantity.
pub fn assert_within_mcse(what: &str, estimate: f64, reference: f64, mcse: f64, z: f64) {
    assert!(
        mcse.is_finite() && mcse > 0.0,
        "{what}: MCSE {mcse} is not a positive number"
    );
    let error = (estimate - reference).abs();
    eprintln!(
        "{what}: hazel {estimate:.5} reference {reference:.5} ({:.2} MCSE)",
        error / mcse
    );
    assert!(
        error <= z * mcse,
        "{what}: hazel {estimate:.6} vs reference {reference:.6}: off by {error:.3e} = {:.2} MCSE \
         (MCSE {mcse:.3e}, bound {z} MCSE)",
        error / mcse
    );
}

/// Every line of a chain file has the header's number of fields (no torn row).
pub fn assert_whole_rows(path: &Path) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        text.ends_with('\n'),
        "{}: ends inside a line",
        path.display()
    );
    let mut width = None;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let n = line.split(',').count();
        assert_eq!(
            *width.get_or_insert(n),
            n,
            "{}: torn row {line:?}",
            path.display()
        );
    }
}

/// The chain files `model-1.csv` … `model-<chains>.csv` of `other` equal those of `reference`
/// but for their timing lines.
pub fn assert_same_files(reference: &Path, other: &Path, chains: usize, what: &str) {
    for id in 1..=chains {
        let read = |dir: &Path| {
            let text = std::fs::read_to_string(dir.join(format!("model-{id}.csv")))
                .unwrap_or_else(|e| panic!("{what}: chain {id}: {e}"));
            without_timing(&text, dir)
        };
        let (a, b) = (read(reference), read(other));
        assert!(
            a == b,
            "{what}: chain {id} differs from the plain run; first difference at {}",
            first_difference(&a, &b)
        );
    }
}
