//! The Stan CSV writer: one file per chain in CmdStan's layout, written and flushed draw by draw.

use crate::number::write_number;
use hazel_nuts::{
    AdaptMethod, Algorithm, DrawSink, DrawStats, Init, InverseMetric, MetricKind, RunConfig,
    SamplerConfig, Timing,
};
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

/// The Stan version hazel's files claim in `stan_version_*`: the language version whose
/// semantics hazel follows. Readers such as cmdstanpy look for these lines.
pub const STAN_VERSION: (u32, u32, u32) = (2, 36, 0);

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
    pub seed: u64,
    /// The sampler settings of the run.
    pub sampler: SamplerConfig,
    /// What `init =` says: the radius, or the file the initial values came from.
    pub init: String,
    /// What `metric_file =` says: the file the initial inverse metric came from (empty: none).
    pub metric_file: String,
    /// CmdStan's `refresh`: iterations between progress lines (0: none).
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
    /// Header information of chain `chain_index` (0-based) of `run`. `init` is derived from
    /// the run's [`Init`]: its radius, or `user` for explicit values (pass the init file's name
    /// afterwards through the field when there is one).
    pub fn new(
        model: &str,
        data_file: &str,
        output_file: &str,
        run: &RunConfig,
        chain_index: usize,
    ) -> Self {
        let init = match &run.sampler.init {
            Init::Radius(radius) => format_setting(*radius),
            Init::Unconstrained(_) => "user".to_string(),
        };
        CsvHeaderInfo {
            model: model.to_string(),
            data_file: data_file.to_string(),
            output_file: output_file.to_string(),
            chain_id: run.first_chain_id + chain_index as u64,
            seed: run.seed,
            sampler: run.sampler.clone(),
            init,
            metric_file: String::new(),
            refresh: DEFAULT_REFRESH,
            sig_figs: EXACT_SIG_FIGS,
        }
    }

    /// Whether the run uses the fixed_param sampler.
    pub fn fixed_param(&self) -> bool {
        self.sampler.algorithm == Algorithm::FixedParam
    }

    /// The sampler's columns, as CmdStan writes them: two for fixed_param
    /// ([`DrawStats::FIXED_PARAM_NAMES`]), seven for NUTS ([`DrawStats::NAMES`]); the first
    /// of [`DrawStats::values`] in either case. Every output format writes exactly these.
    pub fn stat_columns(&self) -> &'static [&'static str] {
        if self.fixed_param() {
            &DrawStats::FIXED_PARAM_NAMES
        } else {
            &DrawStats::NAMES
        }
    }

    /// The configuration block, every line starting with `#`, in CmdStan's order and
    /// indentation, with `(Default)` after values equal to CmdStan's defaults.
    pub fn config_block(&self) -> String {
        let defaults = SamplerConfig::default();
        let s = &self.sampler;
        let a = &s.adapt;
        let d = &defaults.adapt;
        let mut b = ConfigBlock::default();
        let (major, minor, patch) = STAN_VERSION;
        b.setting(0, "stan_version_major", major, false);
        b.setting(0, "stan_version_minor", minor, false);
        b.setting(0, "stan_version_patch", patch, false);
        b.setting(0, "hazel_version", env!("CARGO_PKG_VERSION"), false);
        b.setting(0, "model", &self.model, false);
        b.setting(0, "method", "sample", true);
        b.section(1, "sample");
        b.setting(
            2,
            "num_samples",
            s.num_samples,
            s.num_samples == defaults.num_samples,
        );
        b.setting(
            2,
            "num_warmup",
            s.num_warmup,
            s.num_warmup == defaults.num_warmup,
        );
        b.setting(
            2,
            "save_warmup",
            u8::from(s.save_warmup),
            s.save_warmup == defaults.save_warmup,
        );
        b.setting(2, "thin", s.thin, s.thin == defaults.thin);
        b.section(2, "adapt");
        b.setting(3, "engaged", u8::from(a.engaged), a.engaged == d.engaged);
        b.setting(3, "gamma", format_setting(a.gamma), a.gamma == d.gamma);
        b.setting(3, "delta", format_setting(a.delta), a.delta == d.delta);
        b.setting(3, "kappa", format_setting(a.kappa), a.kappa == d.kappa);
        b.setting(3, "t0", format_setting(a.t0), a.t0 == d.t0);
        b.setting(
            3,
            "init_buffer",
            a.init_buffer,
            a.init_buffer == d.init_buffer,
        );
        b.setting(
            3,
            "term_buffer",
            a.term_buffer,
            a.term_buffer == d.term_buffer,
        );
        b.setting(3, "window", a.window, a.window == d.window);
        b.setting(3, "save_metric", 0, true);
        // hazel's: which method learns the metric (`--adaptation`).
        b.setting(
            3,
            "adaptation",
            adapt_method_name(a.method),
            a.method == d.method,
        );
        if s.algorithm == Algorithm::FixedParam {
            b.setting(2, "algorithm", "fixed_param", false);
        } else {
            b.setting(2, "algorithm", "hmc", true);
            self.hmc_settings(&mut b);
        }
        b.setting(2, "num_chains", 1, true);
        b.setting(0, "id", self.chain_id, self.chain_id == 1);
        b.section(0, "data");
        b.setting(1, "file", &self.data_file, self.data_file.is_empty());
        b.setting(0, "init", &self.init, self.init == "2");
        // hazel's: random starts screened per chain (`--init-candidates`).
        b.setting(
            0,
            "init_candidates",
            s.init_candidates,
            s.init_candidates == defaults.init_candidates,
        );
        b.section(0, "random");
        b.setting(1, "seed", self.seed, false);
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

    /// The `hmc` section of the configuration block (NUTS runs only).
    fn hmc_settings(&self, b: &mut ConfigBlock) {
        let s = &self.sampler;
        let defaults = SamplerConfig::default();
        b.section(3, "hmc");
        b.setting(4, "engine", "nuts", true);
        b.section(5, "nuts");
        b.setting(
            6,
            "max_depth",
            s.max_depth,
            s.max_depth == defaults.max_depth,
        );
        b.setting(
            4,
            "metric",
            metric_name(s.metric),
            s.metric == defaults.metric,
        );
        b.setting(
            4,
            "metric_file",
            &self.metric_file,
            self.metric_file.is_empty(),
        );
        b.setting(
            4,
            "stepsize",
            format_setting(s.stepsize),
            s.stepsize == defaults.stepsize,
        );
        b.setting(
            4,
            "stepsize_jitter",
            format_setting(s.stepsize_jitter),
            s.stepsize_jitter == defaults.stepsize_jitter,
        );
    }

    /// Writes `value` as the rows and adaptation block do: exact, or to `sig_figs` digits.
    fn write_value(&self, out: &mut String, value: f64) {
        write_number_to(out, value, self.sig_figs);
    }
}

/// CmdStan's name of a metric. A low-rank metric is a dense one (`D (I + U (Λ − I) Uᵀ) D`),
/// and its adaptation block holds that dense matrix, so readers see `dense_e`.
pub fn metric_name(kind: MetricKind) -> &'static str {
    match kind {
        MetricKind::Unit => "unit_e",
        MetricKind::Diag => "diag_e",
        MetricKind::Dense | MetricKind::LowRank => "dense_e",
    }
}

/// The `--adaptation` value of a method, as the header writes it.
pub fn adapt_method_name(method: AdaptMethod) -> &'static str {
    match method {
        AdaptMethod::Stan => "stan",
        AdaptMethod::DiagGrad => "diag-grad",
        AdaptMethod::LowRank => "low-rank",
    }
}

/// `value` with `sig_figs` significant digits (CmdStan's `sig_figs`: C++ stream precision, so
/// no trailing zeros), or exact (shortest round-trip) for -1 and for 17 or more digits, which
/// always round-trip.
pub fn write_number_to(out: &mut String, value: f64, sig_figs: i32) {
    if sig_figs < 1 || sig_figs >= 17 || !value.is_finite() {
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
        }
    }

    fn fixed_param(&self) -> bool {
        self.header.fixed_param()
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
    /// a no-op; other names than the header's are an error.
    fn begin(&mut self, names: &[String]) -> io::Result<()> {
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
        text.push_str(&self.header.stat_columns().join(","));
        for name in names {
            text.push(',');
            text.push_str(name);
        }
        text.push('\n');
        self.names = Some(names.to_vec());
        self.write_block(text.as_bytes())
    }

    fn adaptation_done(&mut self, stepsize: f64, inv_metric: &InverseMetric) -> io::Result<()> {
        if self.fixed_param() {
            // CmdStan's fixed_param files have no adaptation block: nothing was adapted.
            return Ok(());
        }
        let mut text = String::from("# Adaptation terminated\n# Step size = ");
        self.header.write_value(&mut text, stepsize);
        text.push('\n');
        let sig_figs = self.header.sig_figs;
        if self.header.sampler.metric == MetricKind::Unit {
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
                InverseMetric::LowRank { .. } => unreachable!("to_stan_form is dense"),
            }
        }
        self.write_block(text.as_bytes())
    }

    fn draw(&mut self, _warmup: bool, stats: &DrawStats, values: &[f64]) -> io::Result<()> {
        let columns = self.names.as_ref().map_or(0, Vec::len);
        if values.len() != columns {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a draw has {} values for {columns} columns", values.len()),
            ));
        }
        let fixed_param = self.fixed_param();
        if self.header.sig_figs != EXACT_SIG_FIGS {
            return self.draw_rounded(stats, values);
        }
        // The row buffer is reused across draws (no allocation per draw).
        let mut row = std::mem::take(&mut self.row);
        let row_ref = &mut row;
        row_ref.clear();
        write_number(row_ref, stats.lp);
        row_ref.push(',');
        write_number(row_ref, stats.accept_stat);
        if !fixed_param {
            row_ref.push(',');
            write_number(row_ref, stats.stepsize);
            let _ = write!(
                row_ref,
                ",{},{},{},",
                stats.treedepth,
                stats.n_leapfrog,
                u8::from(stats.divergent)
            );
            write_number(row_ref, stats.energy);
        }
        for &v in values {
            row_ref.push(',');
            write_number(row_ref, v);
        }
        row_ref.push('\n');
        let written = self.write_block(row.as_bytes());
        self.row = row;
        written
    }

    fn finish(&mut self, timing: &Timing) -> io::Result<()> {
        let warmup = timing.warmup.as_secs_f64();
        let sampling = timing.sampling.as_secs_f64();
        // CmdStan's timing block; fixed-point seconds because cmdstanpy's parser expects them.
        let text = format!(
            "# \n#  Elapsed Time: {warmup:.3} seconds (Warm-up)\n#                {sampling:.3} seconds (Sampling)\n\
             #                {:.3} seconds (Total)\n# \n",
            warmup + sampling
        );
        self.write_block(text.as_bytes())
    }
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

impl<W: Write + Send> StanCsvWriter<W> {
    /// A row with `sig_figs` digits (the exact path, [`DrawSink::draw`], avoids the rounding).
    fn draw_rounded(&mut self, stats: &DrawStats, values: &[f64]) -> io::Result<()> {
        let sig_figs = self.header.sig_figs;
        let mut row = std::mem::take(&mut self.row);
        row.clear();
        let stat_values = stats.values();
        let stat_count = self.header.stat_columns().len();
        for (i, &v) in stat_values[..stat_count].iter().enumerate() {
            if i > 0 {
                row.push(',');
            }
            // Integers (tree depth, leapfrog steps, divergence) are written whole.
            if (3..6).contains(&i) {
                let _ = write!(row, "{}", v as u64);
            } else {
                write_number_to(&mut row, v, sig_figs);
            }
        }
        for &v in values {
            row.push(',');
            write_number_to(&mut row, v, sig_figs);
        }
        row.push('\n');
        let written = self.write_block(row.as_bytes());
        self.row = row;
        written
    }
}
