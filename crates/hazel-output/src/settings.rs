//! The run's settings and adaptation results as flat `key = value` pairs, for the columnar
//! formats' metadata (Parquet key-value metadata, Zarr attributes).
//!
//! The settings are exactly the CSV's configuration block, flattened: each entry's sections and
//! key joined by `.` (`sample.adapt.delta = 0.8`, `random.seed = 7`), so the three formats
//! carry the same information and [`config_from_pairs`] rebuilds the CSV reader's entries.

use crate::reader::{parse_config_block, Adaptation, ConfigEntry};
use crate::writer::CsvHeaderInfo;
use hazel_draws::{AdaptationInfo, InverseMetric};

/// Key of the adapted step size.
pub(crate) const STEP_SIZE_KEY: &str = "adaptation.step_size";
/// Key of the adapted inverse metric: comma-separated values, row-major for a dense metric.
pub(crate) const INV_METRIC_KEY: &str = "adaptation.inv_metric";
/// Key of the metric's kind: `diag` or `dense`.
pub(crate) const METRIC_KIND_KEY: &str = "adaptation.metric";
/// Keys of the exact factors of a low-rank metric that [`INV_METRIC_KEY`] holds only as its
/// diagonal (kind `diag`, more than [`hazel_draws::LOW_RANK_DENSE_MAX_DIM`] dimensions), as
/// the CSV writes them after its timing block: the scale, the eigenvalues, and the
/// eigenvectors one after the other (the dimension's count each), comma-separated.
pub(crate) const LOW_RANK_SCALE_KEY: &str = "adaptation.low_rank.scale";
pub(crate) const LOW_RANK_VALUES_KEY: &str = "adaptation.low_rank.eigenvalues";
pub(crate) const LOW_RANK_VECTORS_KEY: &str = "adaptation.low_rank.eigenvectors";
/// Key of ADVI's step-size scale.
pub(crate) const ETA_KEY: &str = "adaptation.eta";
/// Prefix of keys that are not CSV configuration entries.
const NON_CONFIG_PREFIXES: [&str; 2] = ["adaptation.", "hazel."];

/// The configuration block of `header` as flat pairs, in the block's order.
pub(crate) fn settings_pairs(header: &CsvHeaderInfo) -> Vec<(String, String)> {
    parse_config_block(&header.config_block())
        .into_iter()
        .map(|entry| {
            let mut key = entry.sections.join(".");
            if !key.is_empty() {
                key.push('.');
            }
            key.push_str(&entry.key);
            (key, entry.value)
        })
        .collect()
}

/// The CSV reader's configuration entries from flat pairs (other keys are skipped).
pub(crate) fn config_from_pairs<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<ConfigEntry> {
    pairs
        .into_iter()
        .filter(|(key, _)| !NON_CONFIG_PREFIXES.iter().any(|p| key.starts_with(p)))
        .map(|(key, value)| {
            let mut parts: Vec<String> = key.split('.').map(str::to_string).collect();
            let key = parts.pop().unwrap_or_default();
            ConfigEntry {
                sections: parts,
                key,
                value: value.to_string(),
            }
        })
        .collect()
}

/// What an algorithm tuned, as flat pairs.
pub(crate) fn adaptation_info_pairs(adaptation: &AdaptationInfo<'_>) -> Vec<(String, String)> {
    match *adaptation {
        AdaptationInfo::Hmc {
            stepsize,
            inv_metric,
        } => adaptation_pairs(stepsize, inv_metric),
        AdaptationInfo::Advi { eta } => vec![(ETA_KEY.to_string(), format_number(eta))],
        // A variant this version does not know has nothing to record here.
        _ => Vec::new(),
    }
}

/// The adaptation results as flat pairs: the metric in CmdStan's form, as the CSV's block
/// holds it ([`InverseMetric::to_stan_form`]), and the factors that form leaves out.
pub(crate) fn adaptation_pairs(stepsize: f64, inv_metric: &InverseMetric) -> Vec<(String, String)> {
    let stan_form = inv_metric.to_stan_form();
    let (kind, values) = match stan_form.as_ref() {
        InverseMetric::Diag(values) => ("diag", values),
        InverseMetric::Dense { values, .. } | InverseMetric::LowRank { values, .. } => {
            ("dense", values)
        }
    };
    let mut pairs = vec![
        (STEP_SIZE_KEY.to_string(), format_number(stepsize)),
        (METRIC_KIND_KEY.to_string(), kind.to_string()),
        (INV_METRIC_KEY.to_string(), number_list(values)),
    ];
    if let Some(factors) = inv_metric.factors_beyond_stan_form() {
        pairs.extend([
            (LOW_RANK_SCALE_KEY.to_string(), number_list(factors.scale)),
            (LOW_RANK_VALUES_KEY.to_string(), number_list(factors.values)),
            (
                LOW_RANK_VECTORS_KEY.to_string(),
                number_list(factors.vectors),
            ),
        ]);
    }
    pairs
}

/// Comma-separated exact numbers.
fn number_list(values: &[f64]) -> String {
    let mut list = String::new();
    for (i, &v) in values.iter().enumerate() {
        if i > 0 {
            list.push(',');
        }
        crate::number::write_number(&mut list, v);
    }
    list
}

/// A comma-separated list of numbers (empty for none).
fn parse_list(key: &str, list: Option<&str>) -> Result<Vec<f64>, String> {
    match list {
        None | Some("") => Ok(Vec::new()),
        Some(list) => list
            .split(',')
            .map(|v| {
                v.trim()
                    .parse()
                    .map_err(|_| format!("{key}: `{v}` is not a number"))
            })
            .collect(),
    }
}

/// The adaptation results from flat pairs (`None` when the step size is absent).
pub(crate) fn adaptation_from_pairs<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str)> + Clone,
) -> Result<Option<Adaptation>, String> {
    let find = |wanted: &str| {
        pairs
            .clone()
            .into_iter()
            .find(|(key, _)| *key == wanted)
            .map(|(_, value)| value)
    };
    let Some(stepsize) = find(STEP_SIZE_KEY) else {
        return Ok(None);
    };
    let stepsize: f64 = stepsize
        .parse()
        .map_err(|_| format!("{STEP_SIZE_KEY} `{stepsize}` is not a number"))?;
    let values = parse_list(INV_METRIC_KEY, find(INV_METRIC_KEY))?;
    let inv_metric = match find(METRIC_KIND_KEY) {
        Some("dense") => {
            let dim = (values.len() as f64).sqrt().round() as usize;
            if dim * dim != values.len() {
                return Err(format!(
                    "{INV_METRIC_KEY}: a dense metric needs a square number of values, not {}",
                    values.len()
                ));
            }
            Some(InverseMetric::Dense { dim, values })
        }
        Some("diag") if find(LOW_RANK_SCALE_KEY).is_some() => {
            let scale = parse_list(LOW_RANK_SCALE_KEY, find(LOW_RANK_SCALE_KEY))?;
            let eigenvalues = parse_list(LOW_RANK_VALUES_KEY, find(LOW_RANK_VALUES_KEY))?;
            let vectors = parse_list(LOW_RANK_VECTORS_KEY, find(LOW_RANK_VECTORS_KEY))?;
            if scale.len() != values.len() || vectors.len() != eigenvalues.len() * scale.len() {
                return Err(format!(
                    "the low-rank factors ({} scales, {} eigenvalues, {} eigenvector entries) \
                     do not fit a diagonal of {} entries",
                    scale.len(),
                    eigenvalues.len(),
                    vectors.len(),
                    values.len()
                ));
            }
            Some(InverseMetric::LowRank {
                scale,
                values: eigenvalues,
                vectors,
            })
        }
        Some("diag") => Some(InverseMetric::Diag(values)),
        _ => None,
    };
    Ok(Some(Adaptation {
        stepsize,
        inv_metric,
    }))
}

fn format_number(value: f64) -> String {
    let mut text = String::new();
    crate::number::write_number(&mut text, value);
    text
}
