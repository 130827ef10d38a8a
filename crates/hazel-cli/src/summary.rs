//! `hazel summary`: the summary table of sampler output (Stan CSV files, Parquet files, Zarr
//! stores) and the sampler diagnostics.

use crate::CliResult;
use clap::{Args, ValueEnum};
use hazel_diagnostics::{ColumnSummary, DiagnosticReport, SamplerStats, Thresholds, Warning};
use hazel_draws::ChainDraws;
use hazel_output::{read_draws, StanCsv};
use serde_json::{json, Map, Value};
use std::fmt::Write as _;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct SummaryArgs {
    /// Stan CSV or Parquet files (one per chain) or Zarr stores (`.zarr`, every chain of a run).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = SummaryFormat::Table)]
    pub format: SummaryFormat,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SummaryFormat {
    /// A table like CmdStan's `stansummary`, then the diagnostics.
    Table,
    /// A JSON object keyed by CmdStan column name; diagnostics go to stderr.
    Json,
}

/// Everything computed from the files.
pub(crate) struct Summary {
    pub model: String,
    pub chains: usize,
    pub draws_per_chain: usize,
    /// `lp__` then the model's columns.
    pub columns: Vec<ColumnSummary>,
    /// Absent when the files have no sampler columns (fixed_param runs).
    pub report: Option<DiagnosticReport>,
    pub max_depth: u32,
    /// Notes about the input (truncated files, unequal chain lengths).
    pub notes: Vec<String>,
}

pub fn run(args: &SummaryArgs) -> CliResult {
    let chains = read_draws(&args.files)?;
    let summary = summarize(&chains)?;
    for note in &summary.notes {
        eprintln!("note: {note}");
    }
    let out = match args.format {
        SummaryFormat::Table => table_with_warnings(&summary),
        SummaryFormat::Json => {
            for warning in &warnings(&summary) {
                eprintln!("{}\n", warning.message);
            }
            serde_json::to_string_pretty(&to_json(&summary))? + "\n"
        }
    };
    write_stdout(&out)
}

/// The sampler diagnostics' warnings (none for files without sampler columns).
fn warnings(summary: &Summary) -> Vec<Warning> {
    summary
        .report
        .as_ref()
        .map(|r| r.warnings(summary.max_depth))
        .unwrap_or_default()
}

/// The table, then each warning of the sampler diagnostics or the all-clear line.
pub(crate) fn table_with_warnings(summary: &Summary) -> String {
    let mut out = table(summary);
    out.push('\n');
    let warnings = warnings(summary);
    if warnings.is_empty() {
        out.push_str("Processing complete, no problems detected.\n");
    } else {
        for warning in &warnings {
            let _ = writeln!(out, "{}\n", warning.message);
        }
    }
    out
}

/// Writes to stdout; a reader that went away (`hazel summary … | head`) is not an error.
pub(crate) fn write_stdout(text: &str) -> CliResult {
    write_output(&mut std::io::stdout().lock(), text)
}

/// Writes `text` to `out` and flushes it; a closed pipe (`| head`) is not an error.
pub(crate) fn write_output(out: &mut dyn std::io::Write, text: &str) -> CliResult {
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// Computes the summary of every column of chains read from files: chains without
/// post-warmup draws are left out (as long as another has some), with notes about them and
/// about truncated files.
pub(crate) fn summarize(all_chains: &[StanCsv]) -> Result<Summary, Box<dyn std::error::Error>> {
    let first = all_chains.first().ok_or("no files given")?;
    let mut notes = Vec::new();
    // A file with a header and no draws is a chain that had not started sampling when its run
    // stopped (or was killed): it is left out, as long as another file has draws.
    let (chains, empty): (Vec<&StanCsv>, Vec<&StanCsv>) =
        all_chains.iter().partition(|c| !c.draws.is_empty());
    if !chains.is_empty() {
        for chain in &empty {
            notes.push(format!(
                "{} has no post-warmup draws (its chain had not reached sampling): left out",
                chain.path.display()
            ));
        }
    }
    let chains: Vec<&StanCsv> = if chains.is_empty() { empty } else { chains };
    let first = chains.first().copied().unwrap_or(first);
    for chain in &chains {
        if chain.truncated {
            notes.push(format!(
                "{}: the last line is incomplete (a run cut short?) and was left out",
                chain.path.display()
            ));
        }
    }
    if chains.iter().any(|c| c.draws.is_empty()) {
        return Err(format!("{} has no post-warmup draws", first.path.display()).into());
    }
    let max_depth = first
        .config_int("max_depth")
        .and_then(|d| u32::try_from(d).ok())
        .unwrap_or(10);
    let model = first.config_value("model").unwrap_or("(unknown)");
    let draws: Vec<ChainDraws> = chains.iter().map(|c| c.to_chain_draws()).collect();
    summarize_draws(model, max_depth, &draws.iter().collect::<Vec<_>>(), notes)
}

/// Computes the summary of every column of chains held in memory (`hazel sample` keeps its
/// draws as they stream; [`summarize`] reads files into the same form): `lp__`, then the
/// model's columns, each over the first `n` post-warmup draws of every chain, `n` the shortest
/// chain's length (with a note when they differ). `max_depth` is the run's NUTS tree depth,
/// for the diagnostics' warnings; `notes` are passed on.
pub(crate) fn summarize_draws(
    model: &str,
    max_depth: u32,
    chains: &[&ChainDraws],
    mut notes: Vec<String>,
) -> Result<Summary, Box<dyn std::error::Error>> {
    let first = chains.first().ok_or("no chains with draws")?;
    let draws_per_chain = chains.iter().map(|c| c.sampling.len()).min().unwrap_or(0);
    if chains.iter().any(|c| c.sampling.len() != draws_per_chain) {
        let lengths: Vec<String> = chains
            .iter()
            .map(|c| c.sampling.len().to_string())
            .collect();
        notes.push(format!(
            "the chains have different numbers of draws ({}); using the first {draws_per_chain} of each",
            lengths.join(", ")
        ));
    }
    if draws_per_chain == 0 {
        return Err("no post-warmup draws".into());
    }
    let across = |column: &dyn Fn(&ChainDraws) -> &[f64]| -> Vec<Vec<f64>> {
        chains
            .iter()
            .map(|c| column(c)[..draws_per_chain].to_vec())
            .collect()
    };
    let mut columns = Vec::new();
    // `lp__` of the statistics, then every model column (CmdStan's summary rows).
    if let Some(k) = first.stat_index("lp__") {
        let draws = hazel_diagnostics::ChainDraws::new(&across(&|c| &c.sampling.stats[k]))?;
        columns.push(ColumnSummary::new("lp__", &draws));
    }
    for (j, name) in first.names.iter().enumerate() {
        if name.ends_with("__") {
            continue;
        }
        let draws = hazel_diagnostics::ChainDraws::new(&across(&|c| &c.sampling.values[j]))?;
        columns.push(ColumnSummary::new(name.clone(), &draws));
    }
    let stat = |name: &str| {
        first
            .stat_index(name)
            .map(|k| across(&|c| &c.sampling.stats[k]))
    };
    let report = match (stat("divergent__"), stat("treedepth__"), stat("energy__")) {
        (Some(divergent), Some(treedepth), Some(energy)) => {
            let stats = SamplerStats {
                divergent,
                treedepth,
                energy,
                max_depth,
            };
            Some(DiagnosticReport::new(
                &stats,
                &columns,
                Thresholds::default(),
            ))
        }
        _ => None,
    };
    Ok(Summary {
        model: model.to_string(),
        chains: chains.len(),
        draws_per_chain,
        columns,
        report,
        max_depth,
        notes,
    })
}

/// The summary as text, in `stansummary`'s layout.
pub(crate) fn table(summary: &Summary) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Inference for Stan model: {}", summary.model);
    let _ = writeln!(
        out,
        "{} chains: each with {} post-warmup draws; {} draws in all.\n",
        summary.chains,
        summary.draws_per_chain,
        summary.chains * summary.draws_per_chain
    );
    let name_width = summary
        .columns
        .iter()
        .map(|c| c.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let headers = [
        "Mean", "MCSE", "StdDev", "5%", "50%", "95%", "ESS_bulk", "ESS_tail", "R_hat",
    ];
    let _ = write!(out, "{:name_width$}", "");
    for header in headers {
        let _ = write!(out, " {header:>9}");
    }
    out.push('\n');
    for c in &summary.columns {
        let _ = write!(out, "{:name_width$}", c.name);
        for value in [c.mean, c.mcse_mean, c.sd, c.q5, c.q50, c.q95] {
            let _ = write!(out, " {:>9}", significant(value, 3));
        }
        let _ = write!(
            out,
            " {:>9} {:>9} {:>9}",
            fixed(c.ess_bulk, 0),
            fixed(c.ess_tail, 0),
            fixed(c.r_hat, 3)
        );
        out.push('\n');
    }
    out
}

/// `value` with `digits` significant digits, in plain notation where that stays short.
fn significant(value: f64, digits: usize) -> String {
    if !value.is_finite() {
        return format!("{value}");
    }
    if value == 0.0 {
        return "0".into();
    }
    let magnitude = value.abs().log10().floor() as i32;
    if !(-4..6).contains(&magnitude) {
        return format!("{:.*e}", digits - 1, value);
    }
    let decimals = (digits as i32 - 1 - magnitude).max(0) as usize;
    format!("{value:.decimals$}")
}

fn fixed(value: f64, decimals: usize) -> String {
    if value.is_finite() {
        format!("{value:.decimals$}")
    } else {
        format!("{value}")
    }
}

/// The summary as a JSON object keyed by column name (non-finite values are `null`).
pub(crate) fn to_json(summary: &Summary) -> Value {
    let mut object = Map::new();
    for c in &summary.columns {
        object.insert(
            c.name.clone(),
            json!({
                "mean": c.mean,
                "sd": c.sd,
                "mcse_mean": c.mcse_mean,
                "mcse_sd": c.mcse_sd,
                "q5": c.q5,
                "q50": c.q50,
                "q95": c.q95,
                "ess_bulk": c.ess_bulk,
                "ess_tail": c.ess_tail,
                "r_hat": c.r_hat,
            }),
        );
    }
    Value::Object(object)
}

#[cfg(test)]
mod tests {
    use super::significant;

    #[test]
    fn significant_digits() {
        assert_eq!(significant(-3.97306, 3), "-3.97");
        assert_eq!(significant(0.0662475, 3), "0.0662");
        assert_eq!(significant(1234.4, 3), "1234");
        assert_eq!(significant(1.5e-7, 3), "1.50e-7");
        assert_eq!(significant(f64::NAN, 3), "NaN");
    }
}
