//! Stan CSV for CmdStan's other methods (`optimize`, `laplace`, `variational`, `pathfinder`,
//! `generate_quantities`): the configuration block with the method's own section, the header
//! (the method's `__` columns, then the model's), rows, the comment lines some methods put
//! between rows (ADVI's adapted eta) and a timing block. Numbers are written exactly as in the
//! sampler's files ([`crate::number::write_number`]); every block is one `write_all`, flushed.

use crate::number::write_number;
use crate::writer::STAN_VERSION;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

/// One line of the method's section: a setting (`Some(value)`) or a sub-section title.
#[derive(Debug, Clone, PartialEq)]
pub struct MethodSetting {
    /// Depth inside the method's section (0 = directly inside it).
    pub depth: usize,
    pub key: String,
    pub value: Option<String>,
    pub is_default: bool,
}

impl MethodSetting {
    pub fn value(depth: usize, key: &str, value: impl std::fmt::Display, is_default: bool) -> Self {
        MethodSetting {
            depth,
            key: key.to_string(),
            value: Some(value.to_string()),
            is_default,
        }
    }
    /// A real-valued setting, written exactly (`0.001`, `1e-12`, `10000`).
    pub fn real(depth: usize, key: &str, value: f64, default: f64) -> Self {
        Self::value(depth, key, format_real(value), value == default)
    }
    pub fn section(depth: usize, key: &str) -> Self {
        MethodSetting {
            depth,
            key: key.to_string(),
            value: None,
            is_default: false,
        }
    }
}

/// A real number as the configuration block writes it.
pub fn format_real(value: f64) -> String {
    let mut s = String::new();
    write_number(&mut s, value);
    s
}

/// What the configuration block says about a run of a method.
#[derive(Debug, Clone, PartialEq)]
pub struct MethodHeader {
    pub model: String,
    /// CmdStan's method name (`optimize`, `generate_quantities`, …).
    pub method: String,
    pub settings: Vec<MethodSetting>,
    pub id: u64,
    pub data_file: String,
    /// `init =`: the radius or the init file.
    pub init: String,
    pub seed: u64,
    pub output_file: String,
}

impl MethodHeader {
    /// The configuration block, in CmdStan's order and indentation.
    pub fn config_block(&self) -> String {
        let mut t = String::new();
        let mut line = |indent: usize, key: &str, value: Option<&str>, default: bool| {
            let pad = "  ".repeat(indent);
            match value {
                Some(v) => {
                    let mark = if default { " (Default)" } else { "" };
                    let _ = writeln!(t, "# {pad}{key} = {v}{mark}");
                }
                None => {
                    let _ = writeln!(t, "# {pad}{key}");
                }
            }
        };
        let (major, minor, patch) = STAN_VERSION;
        line(0, "stan_version_major", Some(&major.to_string()), false);
        line(0, "stan_version_minor", Some(&minor.to_string()), false);
        line(0, "stan_version_patch", Some(&patch.to_string()), false);
        line(0, "hazel_version", Some(env!("CARGO_PKG_VERSION")), false);
        line(0, "model", Some(&self.model), false);
        line(0, "method", Some(&self.method), false);
        line(1, &self.method, None, false);
        for s in &self.settings {
            line(s.depth + 2, &s.key, s.value.as_deref(), s.is_default);
        }
        line(0, "id", Some(&self.id.to_string()), self.id == 1);
        line(0, "data", None, false);
        line(1, "file", Some(&self.data_file), self.data_file.is_empty());
        line(0, "init", Some(&self.init), self.init == "2");
        line(0, "random", None, false);
        line(1, "seed", Some(&self.seed.to_string()), false);
        line(0, "output", None, false);
        line(1, "file", Some(&self.output_file), false);
        line(1, "diagnostic_file", Some(""), true);
        line(1, "refresh", Some("100"), true);
        line(1, "sig_figs", Some("-1"), true);
        t
    }
}

/// One method's CSV file.
pub struct MethodCsv {
    out: File,
    columns: usize,
    row: String,
}

impl MethodCsv {
    /// Creates the file with its configuration block and header line.
    pub fn create(
        path: &Path,
        header: &MethodHeader,
        stat_columns: &[&str],
        names: &[String],
    ) -> io::Result<Self> {
        let out = File::create(path).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot create {}: {e}", path.display()))
        })?;
        let mut text = header.config_block();
        let all: Vec<&str> = stat_columns
            .iter()
            .copied()
            .chain(names.iter().map(String::as_str))
            .collect();
        text.push_str(&all.join(","));
        text.push('\n');
        let mut csv = MethodCsv {
            out,
            columns: all.len(),
            row: String::new(),
        };
        csv.write(text.as_bytes())?;
        Ok(csv)
    }

    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.out.flush()
    }

    /// A comment line (`# text`).
    pub fn comment(&mut self, text: &str) -> io::Result<()> {
        let line = format!("# {text}\n");
        self.write(line.as_bytes())
    }

    /// One row: the method's statistics, then the model's values.
    pub fn row(&mut self, stats: &[f64], values: &[f64]) -> io::Result<()> {
        if stats.len() + values.len() != self.columns {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a row has {} values for {} columns",
                    stats.len() + values.len(),
                    self.columns
                ),
            ));
        }
        let mut row = std::mem::take(&mut self.row);
        row.clear();
        for (i, v) in stats.iter().chain(values).enumerate() {
            if i > 0 {
                row.push(',');
            }
            write_number(&mut row, *v);
        }
        row.push('\n');
        let result = self.write(row.as_bytes());
        self.row = row;
        result
    }

    /// CmdStan's timing block: `Elapsed Time: S seconds (label)` per phase, aligned.
    pub fn timing(&mut self, phases: &[(f64, &str)]) -> io::Result<()> {
        let mut text = String::from("# \n");
        for (i, (seconds, label)) in phases.iter().enumerate() {
            let lead = if i == 0 {
                " Elapsed Time: "
            } else {
                "               "
            };
            let _ = writeln!(text, "#{lead}{seconds:.3} seconds ({label})");
        }
        text.push_str("# \n");
        self.write(text.as_bytes())
    }
}
