//! The Stan CSV reader: sampler output of hazel or CmdStan, one file per chain.
//!
//! Layout understood (CmdStan's): comment lines with the configuration, the header line, the
//! saved warmup draws (if any), the adaptation block starting `# Adaptation terminated`, the
//! sampling draws, and the timing block; after it, hazel's exact factors of a low-rank metric
//! whose adaptation block holds only its diagonal (a model of more than
//! [`hazel_draws::LOW_RANK_DENSE_MAX_DIM`] dimensions), read back as that metric. Warmup rows are recognised as the rows before the
//! adaptation block; when the file has none (adaptation off, or a run killed during warmup)
//! the configuration's `save_warmup`, `num_warmup` and `thin` say how many leading rows are
//! warmup (`ceil(num_warmup / thin)`, as CmdStan writes them).
//!
//! A final row without a line end (a run killed mid-write) is dropped and reported in
//! [`StanCsv::truncated`]; any other malformed row is an error naming the file and line.

use crate::writer::{LOW_RANK_HEADING, LOW_RANK_SCALE, LOW_RANK_VALUES, LOW_RANK_VECTORS};
use hazel_draws::{ChainDraws, DrawTable, InverseMetric, StatColumn, StatKind, Timing};
use std::borrow::Cow;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A problem reading a Stan CSV file.
#[derive(Debug, Clone, PartialEq)]
pub struct CsvError {
    pub path: PathBuf,
    /// 1-based line number, when the problem is on one line.
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for CsvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.path.display(), self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

impl std::error::Error for CsvError {}

/// One `key = value` line of the configuration block.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigEntry {
    /// Enclosing sections, outermost first (`["data"]` for the data file's `file`).
    pub sections: Vec<String>,
    pub key: String,
    /// The value with any `(Default)` marker removed.
    pub value: String,
}

/// The adaptation results written after warmup.
#[derive(Debug, Clone, PartialEq)]
pub struct Adaptation {
    pub stepsize: f64,
    /// Absent for CmdStan's `unit_e` metric.
    pub inv_metric: Option<InverseMetric>,
}

/// One chain's file.
#[derive(Debug, Clone, PartialEq)]
pub struct StanCsv {
    pub path: PathBuf,
    pub config: Vec<ConfigEntry>,
    /// Every column: the sampler's `__` columns, then the model's.
    pub column_names: Vec<String>,
    /// Saved warmup rows that were left out of `draws`.
    pub warmup_rows: usize,
    /// Those rows (`column_names.len()` values each; empty where the format keeps them apart).
    pub warmup: Vec<Vec<f64>>,
    /// Post-warmup draws, one row per draw, `column_names.len()` values each.
    pub draws: Vec<Vec<f64>>,
    pub adaptation: Option<Adaptation>,
    /// Seconds of warmup and of sampling from the timing block (absent if the run was cut).
    pub elapsed_seconds: Option<(f64, f64)>,
    /// Whether an incomplete final row was dropped.
    pub truncated: bool,
}

impl StanCsv {
    /// The value of the first configuration entry called `key` (in any section).
    pub fn config_value(&self, key: &str) -> Option<&str> {
        self.config
            .iter()
            .find(|e| e.key == key)
            .map(|e| e.value.as_str())
    }

    /// The value of `key` directly inside section `section` (`("data", "file")`).
    pub fn config_value_in(&self, section: &str, key: &str) -> Option<&str> {
        self.config
            .iter()
            .find(|e| e.key == key && e.sections.last().map(String::as_str) == Some(section))
            .map(|e| e.value.as_str())
    }

    /// A configuration value parsed as an integer.
    pub fn config_int(&self, key: &str) -> Option<i64> {
        let value = self.config_value(key)?;
        match value {
            "true" => Some(1),
            "false" => Some(0),
            _ => value.parse().ok(),
        }
    }

    /// Index of a column by name.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.column_names.iter().position(|c| c == name)
    }

    /// All post-warmup values of column `index`.
    pub fn column(&self, index: usize) -> Vec<f64> {
        self.draws.iter().map(|row| row[index]).collect()
    }

    /// The post-warmup draws column by column, as a memory sink holds them: the leading
    /// columns whose names end in `__` are the statistics (kind [`StatKind::Real`]: a file
    /// does not record kinds), the rest the model's columns; the adaptation results too.
    pub fn to_chain_draws(&self) -> ChainDraws {
        let n_stats = self
            .column_names
            .iter()
            .take_while(|name| name.ends_with("__"))
            .count();
        let column = |index: usize| self.column(index);
        let warmup_column =
            |index: usize| -> Vec<f64> { self.warmup.iter().map(|row| row[index]).collect() };
        let (stepsize, inv_metric) = match &self.adaptation {
            Some(a) => (Some(a.stepsize), a.inv_metric.clone()),
            None => (None, None),
        };
        ChainDraws {
            chain_id: self
                .config_int("id")
                .and_then(|id| u64::try_from(id).ok())
                .unwrap_or(1),
            stat_columns: self.column_names[..n_stats]
                .iter()
                .map(|name| StatColumn {
                    name: Cow::Owned(name.clone()),
                    kind: StatKind::Real,
                })
                .collect(),
            names: self.column_names[n_stats..].to_vec(),
            warmup: if self.warmup.is_empty() {
                DrawTable::default()
            } else {
                DrawTable {
                    stats: (0..n_stats).map(warmup_column).collect(),
                    values: (n_stats..self.column_names.len())
                        .map(warmup_column)
                        .collect(),
                }
            },
            sampling: DrawTable {
                stats: (0..n_stats).map(column).collect(),
                values: (n_stats..self.column_names.len()).map(column).collect(),
            },
            stepsize,
            inv_metric,
            eta: None,
            timing: self.elapsed_seconds.map(|(warmup, sampling)| Timing {
                warmup: Duration::try_from_secs_f64(warmup).unwrap_or_default(),
                sampling: Duration::try_from_secs_f64(sampling).unwrap_or_default(),
            }),
        }
    }
}

/// Reads one sampler Stan CSV file.
pub fn read_stan_csv(path: &Path) -> Result<StanCsv, CsvError> {
    let error = |line: Option<usize>, message: String| CsvError {
        path: path.to_path_buf(),
        line,
        message,
    };
    let bytes =
        std::fs::read(path).map_err(|e| error(None, format!("cannot read the file: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|e| error(None, format!("not UTF-8 text: {e}")))?;
    parse(path, &text)
}

/// Reads the files of several chains and checks that they have the same columns.
pub fn read_stan_csvs(paths: &[PathBuf]) -> Result<Vec<StanCsv>, CsvError> {
    let mut chains: Vec<StanCsv> = Vec::with_capacity(paths.len());
    for path in paths {
        push_chain(&mut chains, read_stan_csv(path)?)?;
    }
    Ok(chains)
}

/// Appends `chain` to `chains` if it has the same columns as the first.
pub(crate) fn push_chain(chains: &mut Vec<StanCsv>, chain: StanCsv) -> Result<(), CsvError> {
    if let Some(first) = chains.first() {
        if first.column_names != chain.column_names {
            return Err(CsvError {
                path: chain.path.clone(),
                line: None,
                message: format!("its columns differ from those of {}", first.path.display()),
            });
        }
    }
    chains.push(chain);
    Ok(())
}

/// The low-rank factors' block ([`crate::writer`]'s `low_rank_factors_block`) as it is read.
#[derive(Default)]
struct LowRankRows {
    /// The section the next number rows belong to: 0 scale, 1 eigenvalues, 2 eigenvectors.
    section: Option<usize>,
    scale: Vec<f64>,
    values: Vec<f64>,
    vectors: Vec<f64>,
    /// Rows that did not fit the block (then it is not used).
    malformed: bool,
}

impl LowRankRows {
    fn line(&mut self, content: &str) {
        let section = match content {
            LOW_RANK_SCALE => Some(0),
            LOW_RANK_VALUES => Some(1),
            LOW_RANK_VECTORS => Some(2),
            _ => None,
        };
        if section.is_some() {
            self.section = section;
            return;
        }
        if content.is_empty() {
            // The eigenvalue row of a metric without eigen-directions is empty.
            return;
        }
        let row: Result<Vec<f64>, _> = content
            .split(',')
            .map(|v| v.trim().parse::<f64>())
            .collect();
        match (self.section, row) {
            (Some(0), Ok(row)) if self.scale.is_empty() => self.scale = row,
            (Some(1), Ok(row)) if self.values.is_empty() => self.values = row,
            (Some(2), Ok(row)) => self.vectors.extend(row),
            _ => self.malformed = true,
        }
    }

    /// The metric, when the block is whole and fits a diagonal of `dim` entries (a file cut
    /// inside the block keeps its diagonal, which is CmdStan's own form).
    fn factors(self, dim: usize) -> Option<InverseMetric> {
        let whole = !self.malformed
            && self.scale.len() == dim
            && self.vectors.len() == self.values.len() * dim;
        whole.then_some(InverseMetric::LowRank {
            scale: self.scale,
            values: self.values,
            vectors: self.vectors,
        })
    }
}

/// Where the parser is in the file.
#[derive(PartialEq)]
enum Part {
    Config,
    /// Rows after the header, before any adaptation block.
    Draws,
    /// Inside the adaptation block, expecting metric rows.
    Adaptation,
}

fn parse(path: &Path, text: &str) -> Result<StanCsv, CsvError> {
    let error = |line: usize, message: String| CsvError {
        path: path.to_path_buf(),
        line: Some(line),
        message,
    };
    let mut csv = StanCsv {
        path: path.to_path_buf(),
        config: Vec::new(),
        column_names: Vec::new(),
        warmup_rows: 0,
        warmup: Vec::new(),
        draws: Vec::new(),
        adaptation: None,
        elapsed_seconds: None,
        truncated: false,
    };
    let mut section_stack: Vec<(usize, String)> = Vec::new();
    let mut part = Part::Config;
    let mut rows_before_adaptation: Option<usize> = None;
    let mut metric_rows: Vec<Vec<f64>> = Vec::new();
    let mut metric_is_dense = false;
    // The exact factors of a low-rank metric written after the timing block.
    let mut low_rank: Option<LowRankRows> = None;
    let mut stepsize: Option<f64> = None;
    let mut warmup_seconds: Option<f64> = None;
    let mut sampling_seconds: Option<f64> = None;

    let ends_with_newline = text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    for (index, raw_line) in lines.iter().enumerate() {
        let line_number = index + 1;
        let is_last_unterminated = index + 1 == lines.len() && !ends_with_newline;
        let line = raw_line.trim_end_matches('\r');
        if let Some(comment) = line.strip_prefix('#') {
            if part == Part::Config {
                parse_config_line(comment, &mut section_stack, &mut csv.config);
                continue;
            }
            let content = comment.trim();
            if content.starts_with("Adaptation terminated") {
                rows_before_adaptation.get_or_insert(csv.draws.len());
                part = Part::Adaptation;
            } else if let Some(rest) = content.strip_prefix("Step size") {
                let value = rest.trim_start().trim_start_matches('=').trim();
                stepsize = Some(
                    value
                        .parse()
                        .map_err(|_| error(line_number, format!("invalid step size `{value}`")))?,
                );
            } else if content.starts_with("Diagonal elements of inverse mass matrix") {
                metric_is_dense = false;
            } else if content.starts_with("Elements of inverse mass matrix") {
                metric_is_dense = true;
            } else if let Some(rest) = content.strip_prefix("Elapsed Time:") {
                warmup_seconds = parse_seconds(rest);
                part = Part::Draws;
            } else if content.ends_with("seconds (Sampling)") {
                sampling_seconds = parse_seconds(content);
            } else if content.starts_with(LOW_RANK_HEADING) {
                low_rank = Some(LowRankRows::default());
            } else if let Some(rows) = &mut low_rank {
                rows.line(content);
            } else if part == Part::Adaptation {
                // Metric rows; other comments in the block (CmdStan's `No free parameters for
                // unit metric`) are not numbers and carry nothing needed here.
                let row: Result<Vec<f64>, _> = content
                    .split(',')
                    .map(|v| v.trim().parse::<f64>())
                    .collect();
                if let Ok(row) = row {
                    metric_rows.push(row);
                }
            }
            continue;
        }
        if part == Part::Config {
            if line.trim().is_empty() {
                continue;
            }
            csv.column_names = line
                .split(',')
                .map(|name| name.trim().to_string())
                .collect();
            part = Part::Draws;
            continue;
        }
        if part == Part::Adaptation {
            part = Part::Draws;
        }
        if line.trim().is_empty() {
            continue;
        }
        if is_last_unterminated {
            // A killed run can leave a partial last row; even one that happens to parse may
            // have lost digits, so an unterminated last row is never trusted.
            csv.truncated = true;
            continue;
        }
        let row = parse_row(line, csv.column_names.len())
            .map_err(|message| error(line_number, message))?;
        csv.draws.push(row);
    }
    if csv.column_names.is_empty() {
        return Err(CsvError {
            path: path.to_path_buf(),
            line: None,
            message: "no header line found".into(),
        });
    }
    if let Some(stepsize) = stepsize {
        let inv_metric = if metric_rows.is_empty() {
            None
        } else if metric_is_dense {
            let dim = metric_rows.len();
            if metric_rows.iter().any(|r| r.len() != dim) {
                return Err(CsvError {
                    path: path.to_path_buf(),
                    line: None,
                    message: "the dense inverse metric is not square".into(),
                });
            }
            Some(InverseMetric::Dense {
                dim,
                values: metric_rows.concat(),
            })
        } else {
            let diagonal = metric_rows.concat();
            Some(
                match low_rank.and_then(|rows| rows.factors(diagonal.len())) {
                    Some(exact) => exact,
                    None => InverseMetric::Diag(diagonal),
                },
            )
        };
        csv.adaptation = Some(Adaptation {
            stepsize,
            inv_metric,
        });
    }
    if let (Some(w), Some(s)) = (warmup_seconds, sampling_seconds) {
        csv.elapsed_seconds = Some((w, s));
    }
    csv.warmup_rows = match rows_before_adaptation {
        Some(rows) => rows,
        None => {
            let save_warmup = csv.config_int("save_warmup").unwrap_or(0) == 1;
            let num_warmup = csv.config_int("num_warmup").unwrap_or(0).max(0) as usize;
            let thin = csv.config_int("thin").unwrap_or(1).max(1) as usize;
            if save_warmup {
                num_warmup.div_ceil(thin).min(csv.draws.len())
            } else {
                0
            }
        }
    };
    csv.warmup = csv.draws.drain(..csv.warmup_rows).collect();
    Ok(csv)
}

/// The entries of a configuration block (comment lines as [`crate::CsvHeaderInfo::config_block`]
/// writes them), to carry the same settings as columnar files' metadata.
#[cfg(any(feature = "parquet", feature = "zarr"))]
pub(crate) fn parse_config_block(text: &str) -> Vec<ConfigEntry> {
    let mut sections = Vec::new();
    let mut config = Vec::new();
    for line in text.lines() {
        if let Some(comment) = line.strip_prefix('#') {
            parse_config_line(comment, &mut sections, &mut config);
        }
    }
    config
}

/// Parses one configuration comment (without its `#`), keeping track of the sections the
/// indentation puts it in.
fn parse_config_line(
    comment: &str,
    sections: &mut Vec<(usize, String)>,
    config: &mut Vec<ConfigEntry>,
) {
    let body = comment.trim_end();
    let content = body.trim_start();
    if content.is_empty() {
        return;
    }
    let indent = body.len() - content.len();
    while sections.last().is_some_and(|(depth, _)| *depth >= indent) {
        sections.pop();
    }
    match content.split_once('=') {
        Some((key, value)) => {
            let key = key.trim().to_string();
            let value = value.trim();
            let value = value
                .strip_suffix("(Default)")
                .unwrap_or(value)
                .trim()
                .to_string();
            config.push(ConfigEntry {
                sections: sections.iter().map(|(_, s)| s.clone()).collect(),
                key: key.clone(),
                value,
            });
            // `method = sample`, `algorithm = hmc`: a setting can open a section named by its key.
            sections.push((indent, key));
        }
        None => sections.push((indent, content.to_string())),
    }
}

fn parse_seconds(text: &str) -> Option<f64> {
    text.split_whitespace().next()?.parse().ok()
}

fn parse_row(line: &str, columns: usize) -> Result<Vec<f64>, String> {
    let mut row = Vec::with_capacity(columns);
    for (i, field) in line.split(',').enumerate() {
        let field = field.trim();
        let value = field
            .parse::<f64>()
            .map_err(|_| format!("column {}: `{field}` is not a number", i + 1))?;
        row.push(value);
    }
    if row.len() != columns {
        return Err(format!("{} values for {columns} columns", row.len()));
    }
    Ok(row)
}
