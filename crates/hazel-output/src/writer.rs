//! The Stan CSV writer: one file per chain in CmdStan's layout, written and flushed draw by draw.

use crate::number::write_number;
use hazel_draws::{
    AdaptationInfo, Columns, Draw, DrawSink, InverseMetric, RunInfo, SettingValue, StatColumn,
    StatKind, Timing, TimingBlock,
};
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

/// The Stan version hazel's files claim in `stan_version_*`: the language version whose
/// semantics hazel follows. Readers such as cmdstanpy look for these lines.
pub(crate) const STAN_VERSION: (u32, u32, u32) = (2, 36, 0);

/// Everything the CSV's configuration block says about the run, for one chain.
#[derive(Debug, Clone, PartialEq)]
pub struct CsvHeaderInfo {
    /// Model name (CmdStan: the executable's name, i.e. the Stan file's stem).
    pub model: String,
    /// The data file as given (empty when there is none).
    pub data_file: String,
    /// This chain's output file as written.
    pub output_file: String,
    /// This chain's id (CmdStan's `id`).
    pub chain_id: u64,
    /// The run as its algorithm describes it (method, settings, statistic columns, seed, init).
    pub run: RunInfo,
    /// CmdStan's `refresh` as the header records it (iterations between progress lines; 0:
    /// none).
    pub refresh: usize,
    /// CmdStan's `sig_figs`: significant digits of the numbers in the rows and the adaptation
    /// block, 1 to 18; -1 (the default) writes every number exactly (shortest round-trip).
    pub sig_figs: i32,
}

/// CmdStan's default `refresh`.
pub const DEFAULT_REFRESH: usize = 100;
/// The `sig_figs` that leaves numbers exact (CmdStan's default value of the setting).
pub const EXACT_SIG_FIGS: i32 = -1;

impl CsvHeaderInfo {
    /// Header information of chain `chain_index` (0-based) of `run`.
    pub fn new(
        model: &str,
        data_file: &str,
        output_file: &str,
        run: &RunInfo,
        chain_index: usize,
    ) -> Self {
        CsvHeaderInfo {
            model: model.to_string(),
            data_file: data_file.to_string(),
            output_file: output_file.to_string(),
            chain_id: run.chain_id(chain_index),
            run: run.clone(),
            refresh: DEFAULT_REFRESH,
            sig_figs: EXACT_SIG_FIGS,
        }
    }

    /// The algorithm's statistic columns (NUTS: seven; fixed_param: `lp__`, `accept_stat__`).
    /// Every output format writes exactly these before the model's columns.
    pub fn stat_columns(&self) -> &[StatColumn] {
        &self.run.stat_columns
    }

    /// The configuration block, every line starting with `#`, in CmdStan's order and
    /// indentation, with `(Default)` after values equal to CmdStan's defaults: the version
    /// lines, `method` with the algorithm's settings ([`RunInfo::settings`]) in its section,
    /// then the chain's id, data, init, seed and output.
    pub fn config_block(&self) -> String {
        let mut b = ConfigBlock::default();
        let (major, minor, patch) = STAN_VERSION;
        b.setting(0, "stan_version_major", major, false);
        b.setting(0, "stan_version_minor", minor, false);
        b.setting(0, "stan_version_patch", patch, false);
        b.setting(0, "hazel_version", env!("CARGO_PKG_VERSION"), false);
        b.setting(0, "model", &self.model, false);
        let method = &self.run.method;
        b.setting(0, "method", method, method == "sample");
        b.section(1, method);
        for setting in &self.run.settings {
            match &setting.value {
                Some(value) => b.setting(
                    setting.depth + 2,
                    &setting.key,
                    format_value(value),
                    setting.is_default,
                ),
                None => b.section(setting.depth + 2, &setting.key),
            }
        }
        b.setting(0, "id", self.chain_id, self.chain_id == 1);
        b.section(0, "data");
        b.setting(1, "file", &self.data_file, self.data_file.is_empty());
        let init = format_value(&self.run.init);
        b.setting(0, "init", &init, init == "2");
        b.section(0, "random");
        b.setting(1, "seed", self.run.seed, false);
        b.section(0, "output");
        b.setting(1, "file", &self.output_file, false);
        b.setting(1, "diagnostic_file", "", true);
        b.setting(1, "refresh", self.refresh, self.refresh == DEFAULT_REFRESH);
        b.setting(
            1,
            "sig_figs",
            self.sig_figs,
            self.sig_figs == EXACT_SIG_FIGS,
        );
        b.text
    }
}

/// A setting's value as the configuration block writes it.
fn format_value(value: &SettingValue) -> String {
    match value {
        SettingValue::Real(v) => format_setting(*v),
        SettingValue::Integer(v) => v.to_string(),
        SettingValue::Text(text) => text.to_string(),
    }
}

impl CsvHeaderInfo {
    /// Writes `value` as the rows and adaptation block do: exact, or to `sig_figs` digits.
    fn write_value(&self, out: &mut String, value: f64) {
        write_number_to(out, value, self.sig_figs);
    }

    /// The run's metric is the identity (CmdStan's `unit_e`), whose adaptation block has no
    /// matrix.
    fn unit_metric(&self) -> bool {
        matches!(self.run.setting("metric"), Some(SettingValue::Text(name)) if name == "unit_e")
    }
}

/// `value` with `sig_figs` significant digits (CmdStan's `sig_figs`: C++ stream precision, so
/// no trailing zeros), or exact (shortest round-trip) for -1 and for 17 or more digits, which
/// always round-trip.
pub fn write_number_to(out: &mut String, value: f64, sig_figs: i32) {
    if !(1..17).contains(&sig_figs) || !value.is_finite() {
        write_number(out, value);
        return;
    }
    // Rounded to the requested digits; the shortest spelling of the rounded value has at most
    // that many digits.
    let mut rounded = String::new();
    let _ = write!(rounded, "{:.*e}", (sig_figs - 1) as usize, value);
    let value = rounded.parse::<f64>().unwrap_or(value);
    write_number(out, value);
}

/// Builds comment lines `# <indent>key = value[ (Default)]` and `# <indent>section`.
#[derive(Default)]
struct ConfigBlock {
    text: String,
}

impl ConfigBlock {
    fn section(&mut self, indent: usize, name: &str) {
        let _ = writeln!(self.text, "# {}{name}", "  ".repeat(indent));
    }
    fn setting(
        &mut self,
        indent: usize,
        key: &str,
        value: impl std::fmt::Display,
        is_default: bool,
    ) {
        let default = if is_default { " (Default)" } else { "" };
        let _ = writeln!(
            self.text,
            "# {}{key} = {value}{default}",
            "  ".repeat(indent)
        );
    }
}

/// A setting's value: exact shortest round-trip digits, integers without a decimal point
/// (CmdStan writes `t0 = 10`, `stepsize = 1`).
fn format_setting(value: f64) -> String {
    let mut text = String::new();
    write_number(&mut text, value);
    text
}

/// A [`DrawSink`] writing one chain's Stan CSV.
///
/// Numbers are written with the shortest decimal representation that parses back to the same
/// `f64` (CmdStan rounds to 6 significant digits by default; hazel's files are exact, so a
/// reader gets bit-identical draws). Each block (the header, a row, the adaptation block, the
/// timing block) is formatted whole into a buffer and handed to the writer with one
/// `write_all`, then flushed: give it an unbuffered writer (a [`File`]) so that no buffer ever
/// splits a row, and a run that is killed leaves every finished draw readable (a kill inside
/// the system call can still leave one torn last row; readers drop it, and a resume cuts it).
pub struct StanCsvWriter<W: Write + Send> {
    out: W,
    header: CsvHeaderInfo,
    /// Column names after the `__` columns, once the header is written.
    names: Option<Vec<String>>,
    row: String,
    /// Bytes written so far (the file's length for a file written from its start).
    bytes: u64,
    /// The exact factors of a low-rank metric whose adaptation block holds only its diagonal
    /// ([`low_rank_factors_block`]), written after the timing block at `finish`.
    trailer: String,
}

impl StanCsvWriter<File> {
    /// Creates (truncates) the file at `path`.
    pub fn create(path: &Path, header: CsvHeaderInfo) -> io::Result<Self> {
        let file = File::create(path).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot create {}: {e}", path.display()))
        })?;
        Ok(Self::new(file, header))
    }
}

impl<W: Write + Send> StanCsvWriter<W> {
    /// Writes to any byte sink (a file, a `Vec<u8>` in tests).
    pub fn new(out: W, header: CsvHeaderInfo) -> Self {
        StanCsvWriter {
            out,
            header,
            names: None,
            row: String::new(),
            bytes: 0,
            trailer: String::new(),
        }
    }

    /// Continues a file that already holds `bytes` bytes of this chain's output, header
    /// included (a resumed run): `out` must be positioned at its end.
    pub fn continuing(out: W, header: CsvHeaderInfo, names: &[String], bytes: u64) -> Self {
        StanCsvWriter {
            out,
            header,
            names: Some(names.to_vec()),
            row: String::new(),
            bytes,
            trailer: String::new(),
        }
    }

    /// Bytes written so far, counting those a continued file already had.
    pub fn bytes_written(&self) -> u64 {
        self.bytes
    }

    /// The underlying writer.
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// The underlying writer (e.g. the bytes written to a `Vec<u8>`).
    pub fn into_inner(self) -> W {
        self.out
    }

    /// One whole block with one `write_all`, then a flush.
    fn write_block(&mut self, block: &[u8]) -> io::Result<()> {
        self.out.write_all(block)?;
        self.out.flush()?;
        self.bytes += block.len() as u64;
        Ok(())
    }
}

impl<W: Write + Send> DrawSink for StanCsvWriter<W> {
    /// Writes the configuration block and the header line. Writing the header before the
    /// chain starts (`hazel sample` does, so no file is ever empty) makes the runner's own call
    /// a no-op; other columns than the header's are an error.
    fn begin(&mut self, columns: &Columns<'_>) -> io::Result<()> {
        if columns.stats != self.header.stat_columns() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the algorithm's statistic columns differ from the run's description",
            ));
        }
        let names = columns.values;
        if let Some(written) = &self.names {
            if written.as_slice() == names {
                return Ok(());
            }
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the header was written with other column names",
            ));
        }
        let mut text = self.header.config_block();
        let stats_empty = self.header.stat_columns().is_empty();
        for (k, column) in self.header.stat_columns().iter().enumerate() {
            if k > 0 {
                text.push(',');
            }
            text.push_str(&column.name);
        }
        for (k, name) in names.iter().enumerate() {
            if k > 0 || !stats_empty {
                text.push(',');
            }
            text.push_str(name);
        }
        text.push('\n');
        self.names = Some(names.to_vec());
        self.write_block(text.as_bytes())
    }

    fn adaptation_done(&mut self, adaptation: &AdaptationInfo<'_>) -> io::Result<()> {
        let (stepsize, inv_metric) = match *adaptation {
            AdaptationInfo::Hmc {
                stepsize,
                inv_metric,
            } => (stepsize, inv_metric),
            // CmdStan's `variational` writes the adapted eta between the header and the rows.
            AdaptationInfo::Advi { eta } => {
                let mut text = String::from("# Stepsize adaptation complete.\n# eta = ");
                write_number(&mut text, eta);
                text.push('\n');
                return self.write_block(text.as_bytes());
            }
            _ => return Ok(()),
        };
        let mut text = String::from("# Adaptation terminated\n# Step size = ");
        self.header.write_value(&mut text, stepsize);
        text.push('\n');
        let sig_figs = self.header.sig_figs;
        if self.header.unit_metric() {
            text_push_line(&mut text, "# No free parameters for unit metric");
        } else {
            match inv_metric.to_stan_form().as_ref() {
                InverseMetric::Diag(values) => {
                    text_push_line(&mut text, "# Diagonal elements of inverse mass matrix:");
                    write_row_into(&mut text, values, sig_figs);
                }
                InverseMetric::Dense { dim, values } => {
                    text_push_line(&mut text, "# Elements of inverse mass matrix:");
                    for row in values.chunks((*dim).max(1)) {
                        write_row_into(&mut text, row, sig_figs);
                    }
                }
                InverseMetric::LowRank { .. } => unreachable!("to_stan_form is diag or dense"),
            }
            self.trailer = low_rank_factors_block(inv_metric);
        }
        self.write_block(text.as_bytes())
    }

    /// The block is in the file already; only the factors written at `finish` are owed.
    fn adaptation_resumed(&mut self, adaptation: &AdaptationInfo<'_>) -> io::Result<()> {
        if let AdaptationInfo::Hmc { inv_metric, .. } = *adaptation {
            if !self.header.unit_metric() {
                self.trailer = low_rank_factors_block(inv_metric);
            }
        }
        Ok(())
    }

    fn draw(&mut self, draw: &Draw<'_>) -> io::Result<()> {
        let columns = self.names.as_ref().map_or(0, Vec::len);
        let stats = self.header.stat_columns();
        if draw.values.len() != columns || draw.stats.len() != stats.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a draw has {} statistics and {} values for {} and {columns} columns",
                    draw.stats.len(),
                    draw.values.len(),
                    stats.len()
                ),
            ));
        }
        let sig_figs = self.header.sig_figs;
        // The row buffer is reused across draws (no allocation per draw with exact numbers).
        let mut row = std::mem::take(&mut self.row);
        row.clear();
        for (k, (column, &v)) in stats.iter().zip(draw.stats).enumerate() {
            if k > 0 {
                row.push(',');
            }
            match column.kind {
                StatKind::Real => write_number_to(&mut row, v, sig_figs),
                StatKind::Integer => {
                    let _ = write!(row, "{}", v as i64);
                }
                StatKind::Flag => row.push(if v != 0.0 { '1' } else { '0' }),
            }
        }
        for &v in draw.values {
            if !row.is_empty() {
                row.push(',');
            }
            write_number_to(&mut row, v, sig_figs);
        }
        row.push('\n');
        let written = self.write_block(row.as_bytes());
        self.row = row;
        written
    }

    fn finish(&mut self, timing: &Timing) -> io::Result<()> {
        let mut text = timing_block(self.header.run.timing, timing);
        text.push_str(&std::mem::take(&mut self.trailer));
        if text.is_empty() {
            return Ok(());
        }
        self.write_block(text.as_bytes())
    }
}

/// CmdStan's timing block for `layout` (empty for none); fixed-point seconds because
/// cmdstanpy's parser expects them.
fn timing_block(layout: TimingBlock, timing: &Timing) -> String {
    let (first, second) = (timing.warmup.as_secs_f64(), timing.sampling.as_secs_f64());
    match layout {
        TimingBlock::None => String::new(),
        TimingBlock::Phases {
            first: first_label,
            second: second_label,
        } => format!(
            "# \n#  Elapsed Time: {first:.3} seconds ({first_label})\n\
             #                {second:.3} seconds ({second_label})\n\
             #                {:.3} seconds (Total)\n# \n",
            first + second
        ),
        TimingBlock::Total { label } => format!(
            "# \n#  Elapsed Time: {:.3} seconds ({label})\n# \n",
            first + second
        ),
    }
}

/// First words of the line that opens the low-rank factors' block (the reader looks for it).
pub(crate) const LOW_RANK_HEADING: &str = "Low-rank inverse metric";
/// Line before the scale row.
pub(crate) const LOW_RANK_SCALE: &str = "Scale s:";
/// Line before the eigenvalue row.
pub(crate) const LOW_RANK_VALUES: &str = "Eigenvalues L:";
/// Line before the eigenvector rows.
pub(crate) const LOW_RANK_VECTORS: &str = "Eigenvectors U (columns, one per line):";

/// The exact factors of a low-rank metric that the adaptation block holds only as its
/// diagonal ([`InverseMetric::factors_beyond_stan_form`]), as comment lines; empty for any
/// other metric. Every number is exact (shortest round-trip, whatever `sig_figs`): the block
/// exists to rebuild the metric.
///
/// The file writes them after the timing block, at the end, because every reader of CmdStan's
/// files skips comments there, while lines inside the adaptation block break them: cmdstanpy
/// ≤ 1.2 counts the draws up to the first comment line after the metric row, and cmdstanpy
/// 1.3 parses every non-empty comment line from the metric's heading to `Elapsed Time` as
/// matrix rows. The wording avoids what ArviZ's `from_cmdstan` acts on in any comment
/// ("inverse mass matrix", whose next line it parses as the metric; `key = value`; "seconds");
/// ASCII only.
fn low_rank_factors_block(inv_metric: &InverseMetric) -> String {
    let Some(factors) = inv_metric.factors_beyond_stan_form() else {
        return String::new();
    };
    let dim = factors.scale.len();
    let mut text = format!(
        "# {LOW_RANK_HEADING} diag(s) (I + U (L - I) U^T) diag(s), exactly (the diag_e block \
         above holds its diagonal): {dim} dimensions, rank {}\n",
        factors.values.len()
    );
    text_push_line(&mut text, &format!("# {LOW_RANK_SCALE}"));
    write_row_into(&mut text, factors.scale, EXACT_SIG_FIGS);
    text_push_line(&mut text, &format!("# {LOW_RANK_VALUES}"));
    write_row_into(&mut text, factors.values, EXACT_SIG_FIGS);
    text_push_line(&mut text, &format!("# {LOW_RANK_VECTORS}"));
    for column in factors.vectors.chunks_exact(dim.max(1)) {
        write_row_into(&mut text, column, EXACT_SIG_FIGS);
    }
    text
}

fn text_push_line(text: &mut String, line: &str) {
    text.push_str(line);
    text.push('\n');
}

fn write_row_into(text: &mut String, values: &[f64], sig_figs: i32) {
    text.push_str("# ");
    for (i, &v) in values.iter().enumerate() {
        if i > 0 {
            text.push_str(", ");
        }
        write_number_to(text, v, sig_figs);
    }
    text.push('\n');
}
