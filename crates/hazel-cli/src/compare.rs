//! `hazel compare`: a run's Stan CSV files against a posteriordb `reference.json`, by the rule
//! in `hazel_diagnostics::reference`. Exit status 0 on a pass, 1 on a failure, 2 when the run
//! did not converge well enough to judge (R-hat > 1.01 or bulk ESS < 400 somewhere).

use crate::front::ExitWith;
use crate::summary::write_stdout;
use crate::CliResult;
use clap::Args;
use hazel_diagnostics::reference::{compare, CompareOptions, ReferenceQuantity, Verdict};
use hazel_diagnostics::ChainDraws;
use hazel_output::read_stan_csvs;
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The reference posterior summary (`reference.json` of the posteriordb suite).
    pub reference: PathBuf,
    /// Stan CSV files, one per chain.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Also compare the 5%, 50% and 95% quantiles (the rule's optional, stricter check).
    #[arg(long)]
    pub quantiles: bool,
}

/// Reads the `parameters` of a posteriordb `reference.json`.
pub fn read_reference(path: &Path) -> Result<Vec<ReferenceQuantity>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let root: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let parameters = root["parameters"]
        .as_array()
        .ok_or_else(|| format!("{}: no `parameters` list", path.display()))?;
    parameters
        .iter()
        .map(|p| {
            let name = p["name"]
                .as_str()
                .ok_or_else(|| format!("{}: a parameter without a name", path.display()))?;
            let required = |key: &str| {
                p[key]
                    .as_f64()
                    .ok_or_else(|| format!("{}: `{name}` has no number `{key}`", path.display()))
            };
            Ok(ReferenceQuantity {
                name: name.to_string(),
                mean: required("mean")?,
                sd: required("sd")?,
                mcse_mean: required("mcse_mean")?,
                ess_bulk: required("ess_bulk")?,
                mcse_sd: p["mcse_sd"].as_f64(),
                q5: p["q5"].as_f64(),
                q50: p["q50"].as_f64(),
                q95: p["q95"].as_f64(),
                excess_kurtosis: p["excess_kurtosis"].as_f64(),
            })
        })
        .collect()
}

pub fn run(args: &CompareArgs) -> CliResult {
    let reference = read_reference(&args.reference)?;
    let chains = read_stan_csvs(&args.files)?;
    let draws_per_chain = chains.iter().map(|c| c.draws.len()).min().unwrap_or(0);
    if draws_per_chain == 0 {
        return Err("the files have no post-warmup draws".into());
    }
    let draws_of = |name: &str| -> Option<ChainDraws> {
        let index = chains[0].column_index(name)?;
        let columns: Vec<Vec<f64>> = chains
            .iter()
            .map(|c| c.column(index)[..draws_per_chain].to_vec())
            .collect();
        ChainDraws::new(&columns).ok()
    };
    let options = CompareOptions {
        quantiles: args.quantiles,
    };
    let comparison = compare(&reference, draws_of, options);

    let width = reference
        .iter()
        .map(|r| r.name.len())
        .max()
        .unwrap_or(4)
        .max(8);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:width$} {:>12} {:>12} {:>12} {:>12} {:>7} {:>8}  checks (|ours - ref| / bound)",
        "quantity", "mean", "ref mean", "sd", "ref sd", "R_hat", "ESS_bulk"
    );
    for (q, r) in comparison.quantities.iter().zip(&reference) {
        let Some(run) = &q.run else {
            let _ = writeln!(out, "{:width$} missing from the output: fail", q.name);
            continue;
        };
        let checks: Vec<String> = q
            .checks
            .iter()
            .map(|c| {
                let mark = if c.passed { "ok" } else { "FAIL" };
                format!("{} {:.2} {mark}", c.statistic, c.ratio())
            })
            .collect();
        let _ = writeln!(
            out,
            "{:width$} {:>12.5e} {:>12.5e} {:>12.5e} {:>12.5e} {:>7.3} {:>8.0}  {}{}",
            q.name,
            run.mean,
            r.mean,
            run.sd,
            r.sd,
            run.rhat,
            run.ess_bulk,
            checks.join(", "),
            if q.converged { "" } else { " (not converged)" }
        );
    }
    let failed = comparison.failures().count();
    let unconverged = comparison
        .quantities
        .iter()
        .filter(|q| !q.converged && q.run.is_some())
        .count();
    let _ = writeln!(
        out,
        "verdict: {} ({} quantities, {failed} failed, {unconverged} not converged)",
        comparison.verdict.word(),
        comparison.quantities.len()
    );
    write_stdout(&out)?;
    match comparison.verdict {
        Verdict::Pass => Ok(()),
        Verdict::Fail => Err(ExitWith::new(
            1,
            format!("{failed} of {} quantities differ from the reference", reference.len()),
        )
        .into()),
        Verdict::Inconclusive => Err(ExitWith::new(
            2,
            format!(
                "inconclusive: {unconverged} quantities have R-hat > 1.01 or bulk ESS < 400 (run longer)"
            ),
        )
        .into()),
    }
}
