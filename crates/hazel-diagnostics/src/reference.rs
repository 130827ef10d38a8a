//! Comparing a run's draws with a posteriordb reference posterior summary (`reference.json` of
//! the suite in `../shared/posteriordb`), by the rule of the suite's README ("How to compare a
//! sampler's output with reference.json"):
//!
//! * **Convergence first.** Unless R-hat ≤ 1.01 and bulk ESS ≥ 400 for every compared quantity,
//!   the result is [`Verdict::Inconclusive`], never a pass.
//! * **mean**: |mean − mean_ref| ≤ 0.1·sd_ref + 3·√(mcse² + mcse_ref²), mcse = sd/√ESS_bulk.
//! * **sd**: |sd − sd_ref| ≤ max(0.2·sd_ref, 3·√(mcse_sd² + mcse_sd_ref²)), with the
//!   fourth-moment (delta method) mcse_sd = √((m₄ − sd⁴)/ESS_bulk) / (2·sd).
//! * **heavy tails** (reference excess kurtosis > 20): instead of the sd check, the width of
//!   the central 90% interval within ±20% and the median within
//!   0.1·s + 3·1.25·s·√(1/ESS + 1/ESS_ref), s = (q95 − q5)_ref / 3.29.
//! * **quantiles** (optional): |q − q_ref| ≤ 0.25·sd_ref + 3·f·sd_ref·√(1/ESS + 1/ESS_ref),
//!   f = 2.5 for q5 and q95, 1.25 for q50.
//!
//! A posterior passes when every quantity passes. Nothing here reads files: the caller gives
//! the reference quantities and a lookup of the run's draws by Stan CSV column name
//! ([`csv_column_name`] maps `beta[1]` to `beta.1`).

use crate::convergence::{ess_bulk, rhat_rank, ChainDraws};
use crate::stats::{mean, quantile_sorted, sorted, variance};

/// The largest R-hat for which a comparison is conclusive.
pub(crate) const MAX_RHAT: f64 = 1.01;
/// The smallest bulk ESS for which a comparison is conclusive.
pub(crate) const MIN_ESS_BULK: f64 = 400.0;
/// Reference excess kurtosis above which the sd check is replaced by the heavy-tail check.
pub(crate) const HEAVY_TAIL_KURTOSIS: f64 = 20.0;

/// One scalar of a reference posterior, as `reference.json` gives it. Entries that a
/// reference lacks (`mcycle_gp-accel_gp` has no quantiles) are `None`.
#[derive(Debug, Clone, PartialEq)]
pub struct ReferenceQuantity {
    /// posteriordb's flattened name (`beta[1]`, `Sigma[1,2]`).
    pub name: String,
    pub mean: f64,
    pub sd: f64,
    pub mcse_mean: f64,
    pub mcse_sd: Option<f64>,
    pub q5: Option<f64>,
    pub q50: Option<f64>,
    pub q95: Option<f64>,
    pub excess_kurtosis: Option<f64>,
    pub ess_bulk: f64,
}

/// The same statistics of the run being checked.
#[derive(Debug, Clone, PartialEq)]
pub struct RunQuantity {
    pub mean: f64,
    /// Standard deviation (`ddof = 1`).
    pub sd: f64,
    /// Fourth-moment (delta method) MCSE of the sd, as in `reference.json`.
    pub mcse_sd: f64,
    pub q5: f64,
    pub q50: f64,
    pub q95: f64,
    pub ess_bulk: f64,
    pub rhat: f64,
}

impl RunQuantity {
    /// Computes the statistics from the draws of every chain.
    pub fn from_draws(draws: &ChainDraws) -> Self {
        let values = draws.values();
        let center = mean(values);
        let sd = variance(values, 1).sqrt();
        let ess = ess_bulk(draws);
        let m4 = mean(
            &values
                .iter()
                .map(|v| (v - center).powi(4))
                .collect::<Vec<_>>(),
        );
        let ordered = sorted(values);
        RunQuantity {
            mean: center,
            sd,
            mcse_sd: fourth_moment_mcse_sd(m4, sd, ess),
            q5: quantile_sorted(&ordered, 0.05),
            q50: quantile_sorted(&ordered, 0.5),
            q95: quantile_sorted(&ordered, 0.95),
            ess_bulk: ess,
            rhat: rhat_rank(draws),
        }
    }
}

/// √((m₄ − sd⁴)/ESS) / (2·sd): the delta-method standard error of the sd.
pub(crate) fn fourth_moment_mcse_sd(m4: f64, sd: f64, ess: f64) -> f64 {
    ((m4 - sd.powi(4)).max(0.0) / ess).sqrt() / (2.0 * sd)
}

/// Stan CSV's spelling of a posteriordb name: `beta[1]` → `beta.1`, `Sigma[1,2]` →
/// `Sigma.1.2`; names without indices are unchanged.
pub fn csv_column_name(reference_name: &str) -> String {
    match reference_name.split_once('[') {
        Some((base, rest)) => {
            let indices = rest.trim_end_matches(']');
            let parts: Vec<&str> = indices.split(',').map(str::trim).collect();
            format!("{base}.{}", parts.join("."))
        }
        None => reference_name.to_string(),
    }
}

/// Which checks to make beyond mean and sd.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CompareOptions {
    /// Also check q5, q50 and q95 (check 4 of the rule).
    pub quantiles: bool,
}

/// The outcome of a comparison (or of one quantity).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    Pass,
    /// The run did not converge well enough to judge (R-hat or ESS).
    Inconclusive,
    Fail,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Fail => "fail",
        }
    }
}

/// One check of one quantity: |ours − reference| against its bound.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// `mean`, `sd`, `q90_width`, `median`, `q5`, `q50`, `q95`.
    pub statistic: &'static str,
    pub ours: f64,
    pub reference: f64,
    /// The largest allowed |ours − reference|.
    pub bound: f64,
    pub passed: bool,
}

impl Check {
    fn new(statistic: &'static str, ours: f64, reference: f64, bound: f64) -> Self {
        // A NaN on either side fails (a comparison with NaN is false).
        let passed = (ours - reference).abs() <= bound;
        Check {
            statistic,
            ours,
            reference,
            bound,
            passed,
        }
    }

    /// |ours − reference| as a multiple of the bound (> 1 fails).
    pub fn ratio(&self) -> f64 {
        (self.ours - self.reference).abs() / self.bound
    }
}

/// The checks of one reference quantity.
#[derive(Debug, Clone, PartialEq)]
pub struct QuantityResult {
    /// The reference's name (`beta[1]`).
    pub name: String,
    /// Absent when the run has no such column.
    pub run: Option<RunQuantity>,
    /// Whether R-hat and bulk ESS allow a conclusion.
    pub converged: bool,
    pub checks: Vec<Check>,
    pub verdict: Verdict,
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub quantities: Vec<QuantityResult>,
    /// Fail if any quantity fails or is missing; otherwise inconclusive if any quantity did not
    /// converge; otherwise pass.
    pub verdict: Verdict,
}

impl Comparison {
    /// The quantities that failed a check or are missing from the run.
    pub fn failures(&self) -> impl Iterator<Item = &QuantityResult> {
        self.quantities
            .iter()
            .filter(|q| q.verdict == Verdict::Fail)
    }
}

/// Applies the rule to one quantity.
pub(crate) fn compare_quantity(
    reference: &ReferenceQuantity,
    run: &RunQuantity,
    options: CompareOptions,
) -> QuantityResult {
    let converged = run.rhat <= MAX_RHAT && run.ess_bulk >= MIN_ESS_BULK;
    let r = reference;
    let mut checks = Vec::new();
    let mcse = run.sd / run.ess_bulk.sqrt();
    checks.push(Check::new(
        "mean",
        run.mean,
        r.mean,
        0.1 * r.sd + 3.0 * (mcse * mcse + r.mcse_mean * r.mcse_mean).sqrt(),
    ));
    let ess_term = (1.0 / run.ess_bulk + 1.0 / r.ess_bulk).sqrt();
    let heavy = r.excess_kurtosis.is_some_and(|k| k > HEAVY_TAIL_KURTOSIS);
    match (heavy, r.q5, r.q50, r.q95) {
        (true, Some(q5), Some(q50), Some(q95)) => {
            let width = q95 - q5;
            checks.push(Check::new(
                "q90_width",
                run.q95 - run.q5,
                width,
                0.2 * width,
            ));
            let s = width / 3.29;
            checks.push(Check::new(
                "median",
                run.q50,
                q50,
                0.1 * s + 3.0 * 1.25 * s * ess_term,
            ));
        }
        _ => {
            let mcse_sd_ref = r.mcse_sd.unwrap_or(0.0);
            let noise = 3.0 * (run.mcse_sd * run.mcse_sd + mcse_sd_ref * mcse_sd_ref).sqrt();
            checks.push(Check::new("sd", run.sd, r.sd, (0.2 * r.sd).max(noise)));
        }
    }
    if options.quantiles {
        for (statistic, ours, reference, factor) in [
            ("q5", run.q5, r.q5, 2.5),
            ("q50", run.q50, r.q50, 1.25),
            ("q95", run.q95, r.q95, 2.5),
        ] {
            if let Some(reference) = reference {
                let bound = 0.25 * r.sd + 3.0 * factor * r.sd * ess_term;
                checks.push(Check::new(statistic, ours, reference, bound));
            }
        }
    }
    let verdict = if !converged {
        Verdict::Inconclusive
    } else if checks.iter().all(|c| c.passed) {
        Verdict::Pass
    } else {
        Verdict::Fail
    };
    QuantityResult {
        name: r.name.clone(),
        run: Some(run.clone()),
        converged,
        checks,
        verdict,
    }
}

/// Compares every reference quantity with the run; `draws_of` returns the draws of a Stan CSV
/// column (`beta.1`), or `None` when the run has no such column (that quantity fails).
pub fn compare(
    reference: &[ReferenceQuantity],
    mut draws_of: impl FnMut(&str) -> Option<ChainDraws>,
    options: CompareOptions,
) -> Comparison {
    let quantities: Vec<QuantityResult> = reference
        .iter()
        .map(|r| match draws_of(&csv_column_name(&r.name)) {
            Some(draws) => compare_quantity(r, &RunQuantity::from_draws(&draws), options),
            None => QuantityResult {
                name: r.name.clone(),
                run: None,
                converged: false,
                checks: Vec::new(),
                verdict: Verdict::Fail,
            },
        })
        .collect();
    let verdict = overall_verdict(&quantities);
    Comparison {
        quantities,
        verdict,
    }
}

/// A run is judged only when every quantity converged; a quantity missing from the run fails
/// regardless.
fn overall_verdict(quantities: &[QuantityResult]) -> Verdict {
    if quantities.iter().any(|q| q.run.is_none()) {
        Verdict::Fail
    } else if quantities.iter().any(|q| !q.converged) {
        Verdict::Inconclusive
    } else if quantities.iter().all(|q| q.verdict == Verdict::Pass) {
        Verdict::Pass
    } else {
        Verdict::Fail
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::normal_quantile;

    /// `chains` chains of `n` draws from N(mean, sd²), made from a deterministic low-discrepancy
    /// sequence (normal quantiles of shuffled uniform grid points), so they are close to
    /// independent draws without a random number generator.
    fn normal_draws(mean: f64, sd: f64, chains: usize, n: usize) -> ChainDraws {
        let total = chains * n;
        let golden = 0.618_033_988_749_894_9;
        let values: Vec<Vec<f64>> = (0..chains)
            .map(|c| {
                (0..n)
                    .map(|i| {
                        let k = c * n + i;
                        let u = ((k as f64 + 0.5) * golden).fract();
                        let u = (u * total as f64).floor() / total as f64 + 0.5 / total as f64;
                        mean + sd * normal_quantile(u)
                    })
                    .collect()
            })
            .collect();
        ChainDraws::new(&values).expect("equal chains")
    }

    /// A reference for N(mean, sd²) as posteriordb would give it (10 000 independent draws).
    fn normal_reference(name: &str, mean: f64, sd: f64) -> ReferenceQuantity {
        let ess: f64 = 10_000.0;
        ReferenceQuantity {
            name: name.to_string(),
            mean,
            sd,
            mcse_mean: sd / ess.sqrt(),
            // Normal: m4 = 3 sd⁴, so mcse_sd = sd·√2 / (2·√ESS).
            mcse_sd: Some(fourth_moment_mcse_sd(3.0 * sd.powi(4), sd, ess)),
            q5: Some(mean + sd * normal_quantile(0.05)),
            q50: Some(mean),
            q95: Some(mean + sd * normal_quantile(0.95)),
            excess_kurtosis: Some(0.0),
            ess_bulk: ess,
        }
    }

    fn run_of(draws: &ChainDraws) -> RunQuantity {
        RunQuantity::from_draws(draws)
    }

    const ALL: CompareOptions = CompareOptions { quantiles: true };

    #[test]
    fn column_names_follow_stan_csv() {
        assert_eq!(csv_column_name("beta[1]"), "beta.1");
        assert_eq!(csv_column_name("Sigma[1,2]"), "Sigma.1.2");
        assert_eq!(csv_column_name("sigma"), "sigma");
    }

    #[test]
    fn draws_from_the_reference_distribution_pass() {
        let draws = normal_draws(2.0, 3.0, 4, 1000);
        let run = run_of(&draws);
        assert!(run.rhat < 1.01 && run.ess_bulk > 400.0, "{run:?}");
        let result = compare_quantity(&normal_reference("mu", 2.0, 3.0), &run, ALL);
        assert_eq!(result.verdict, Verdict::Pass, "{result:?}");
        assert_eq!(result.checks.len(), 5, "mean, sd and three quantiles");
    }

    #[test]
    fn a_mean_shifted_by_half_an_sd_fails() {
        let draws = normal_draws(2.0 + 0.5 * 3.0, 3.0, 4, 1000);
        let result = compare_quantity(
            &normal_reference("mu", 2.0, 3.0),
            &run_of(&draws),
            CompareOptions::default(),
        );
        assert_eq!(result.verdict, Verdict::Fail);
        let mean = &result.checks[0];
        assert_eq!(mean.statistic, "mean");
        assert!(!mean.passed && mean.ratio() > 2.0, "{mean:?}");
        assert!(result.checks[1].passed, "the sd is right");
    }

    #[test]
    fn an_sd_inflated_by_half_fails() {
        let draws = normal_draws(2.0, 1.5 * 3.0, 4, 1000);
        let result = compare_quantity(
            &normal_reference("mu", 2.0, 3.0),
            &run_of(&draws),
            CompareOptions::default(),
        );
        assert_eq!(result.verdict, Verdict::Fail);
        let sd = &result.checks[1];
        assert_eq!(sd.statistic, "sd");
        assert!(!sd.passed, "{sd:?}");
        assert!(result.checks[0].passed, "the mean is right");
    }

    #[test]
    fn the_bounds_are_the_rules_formulas() {
        let reference = normal_reference("mu", 0.0, 1.0);
        let run = RunQuantity {
            mean: 0.0,
            sd: 1.0,
            mcse_sd: 0.02,
            q5: -1.6,
            q50: 0.0,
            q95: 1.6,
            ess_bulk: 1600.0,
            rhat: 1.0,
        };
        let result = compare_quantity(&reference, &run, ALL);
        let bound = |name: &str| {
            result
                .checks
                .iter()
                .find(|c| c.statistic == name)
                .unwrap()
                .bound
        };
        let mcse_ref: f64 = 1.0 / 100.0;
        let expected_mean = 0.1 + 3.0 * (1.0f64 / 1600.0 + mcse_ref * mcse_ref).sqrt();
        assert!((bound("mean") - expected_mean).abs() < 1e-15);
        assert!(
            (bound("sd") - 0.2).abs() < 1e-15,
            "±20% dominates small MCSEs"
        );
        let ess_term = (1.0f64 / 1600.0 + 1.0 / 10_000.0).sqrt();
        assert!((bound("q5") - (0.25 + 7.5 * ess_term)).abs() < 1e-15);
        assert!((bound("q50") - (0.25 + 3.75 * ess_term)).abs() < 1e-15);
    }

    #[test]
    fn poor_convergence_is_inconclusive_not_a_pass() {
        // Four chains stuck at different levels: R-hat far above 1.01.
        let chains: Vec<Vec<f64>> = (0..4)
            .map(|c| normal_draws(c as f64 * 2.0, 1.0, 1, 500).values().to_vec())
            .collect();
        let draws = ChainDraws::new(&chains).unwrap();
        let reference = [normal_reference("mu", 3.0, 2.3)];
        let comparison = compare(
            &reference,
            |_| Some(draws.clone()),
            CompareOptions::default(),
        );
        assert_eq!(comparison.verdict, Verdict::Inconclusive);
        assert!(!comparison.quantities[0].converged);
    }

    #[test]
    fn heavy_tails_use_the_interval_and_the_median() {
        let draws = normal_draws(0.0, 1.0, 4, 1000);
        let mut reference = normal_reference("V_m", 0.0, 1.0);
        // A wildly different sd that the heavy-tail rule must not look at.
        reference.sd = 5.0;
        reference.mcse_sd = Some(0.01);
        reference.excess_kurtosis = Some(500.0);
        let result = compare_quantity(&reference, &run_of(&draws), CompareOptions::default());
        let statistics: Vec<&str> = result.checks.iter().map(|c| c.statistic).collect();
        assert_eq!(statistics, ["mean", "q90_width", "median"]);
        assert!(
            result.checks[1].passed && result.checks[2].passed,
            "{result:?}"
        );
        // A 50% wider interval fails.
        let wide = normal_draws(0.0, 1.5, 4, 1000);
        let result = compare_quantity(&reference, &run_of(&wide), CompareOptions::default());
        assert!(!result.checks[1].passed);
    }

    #[test]
    fn a_missing_column_fails_the_comparison() {
        let draws = normal_draws(0.0, 1.0, 4, 1000);
        let reference = [
            normal_reference("mu", 0.0, 1.0),
            normal_reference("theta[2]", 0.0, 1.0),
        ];
        let mut asked = Vec::new();
        let comparison = compare(
            &reference,
            |name| {
                asked.push(name.to_string());
                (name == "mu").then(|| draws.clone())
            },
            CompareOptions::default(),
        );
        assert_eq!(asked, ["mu", "theta.2"]);
        assert_eq!(comparison.verdict, Verdict::Fail);
        assert_eq!(
            comparison
                .failures()
                .map(|q| q.name.as_str())
                .collect::<Vec<_>>(),
            ["theta[2]"]
        );
    }
}
