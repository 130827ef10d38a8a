//! Parquet output (feature `parquet`): one file per chain with exactly the CSV's columns and
//! rows (`lp__`, `accept_stat__`, …, then the model's columns, all `DOUBLE`, saved warmup rows
//! first), and the CSV's configuration block and adaptation results as key-value metadata
//! (see [`crate::settings`]; also `hazel.warmup_rows`).
//!
//! Streamed: draws are buffered column by column in one row group of [`ROW_GROUP_BYTES`] (at
//! least one draw) and written when it fills, so memory does not grow with the run's length.
//! parquet's writer keeps every column chunk's metadata until the footer
//! ([`METADATA_BYTES_PER_COLUMN_CHUNK`] each, even with statistics, page indexes and
//! dictionaries off); for very wide models the run is written in fewer, larger row groups so
//! that this metadata stays within three quarters of a group ([`rows_per_group`]) and the
//! writer's memory within two row groups. Written with parquet's low-level column writer (no
//! arrow, no compression codecs: sampled f64 values barely compress, and the build stays small).
//! Unlike the CSV, a file is readable only once `finish` has written its footer.

use crate::reader::{CsvError, StanCsv};
use crate::settings::{
    adaptation_from_pairs, adaptation_info_pairs, config_from_pairs, settings_pairs,
};
use crate::writer::CsvHeaderInfo;
use hazel_draws::{AdaptationInfo, Columns, Draw, DrawSink, Timing};
use parquet::basic::{Repetition, Type as PhysicalType};
use parquet::column::reader::ColumnReader;
use parquet::data_type::DoubleType;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Target size of one row group's values (the writer's buffer).
pub(crate) const ROW_GROUP_BYTES: usize = 32 << 20;
/// Memory parquet's writer keeps per column chunk until the footer, measured with
/// `bench/src/bin/columnar_memory.rs` and heaptrack at 10⁵ columns (parquet 60.1): its
/// `ColumnChunkMetaData` (424 B) and one slot each in its per-row-group column-index (232 B),
/// offset-index and bloom-filter vectors, which exist even with all three disabled. For wide
/// models this, times columns × row groups, outgrows the row-group buffer, so row groups grow
/// ([`rows_per_group`]).
pub const METADATA_BYTES_PER_COLUMN_CHUNK: usize = 720;
/// Key of the number of leading rows that are saved warmup.
pub(crate) const WARMUP_ROWS_KEY: &str = "hazel.warmup_rows";

/// A [`DrawSink`] writing one chain's Parquet file.
pub struct ParquetWriter {
    path: PathBuf,
    header: CsvHeaderInfo,
    row_group_bytes: usize,
    /// Grow row groups of wide tables so that retained metadata does not outgrow the buffer.
    balance_metadata: bool,
    /// Rows per row group, from `row_group_bytes` once `begin` knows the width.
    rows_per_group: usize,
    writer: Option<SerializedFileWriter<BufWriter<File>>>,
    /// The row group being filled, column-major: column `c`'s rows start at `c * rows_per_group`.
    buffer: Vec<f64>,
    columns: usize,
    /// The algorithm's statistic columns among them (the CSV's: 2 for fixed_param, 7 for NUTS).
    stats: usize,
    rows: usize,
    warmup_rows: usize,
    metadata: Vec<(String, String)>,
}

impl ParquetWriter {
    /// Creates (truncates) the file at `path`, so that a bad path fails before sampling.
    pub fn create(path: &Path, header: CsvHeaderInfo) -> io::Result<Self> {
        let mut writer = Self::with_row_group_bytes(path, header, ROW_GROUP_BYTES)?;
        writer.balance_metadata = true;
        Ok(writer)
    }

    /// As [`ParquetWriter::create`] with row groups of exactly `row_group_bytes` (at least one
    /// row), not grown to balance the retained metadata (tests use tiny groups).
    pub fn with_row_group_bytes(
        path: &Path,
        header: CsvHeaderInfo,
        row_group_bytes: usize,
    ) -> io::Result<Self> {
        File::create(path).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot create {}: {e}", path.display()))
        })?;
        Ok(ParquetWriter {
            path: path.to_path_buf(),
            header,
            row_group_bytes,
            balance_metadata: false,
            rows_per_group: 1,
            writer: None,
            buffer: Vec::new(),
            columns: 0,
            stats: 0,
            rows: 0,
            warmup_rows: 0,
            metadata: Vec::new(),
        })
    }

    /// Rows per row group (known after `begin`).
    pub fn rows_per_group(&self) -> usize {
        self.rows_per_group
    }

    fn write_row_group(&mut self) -> io::Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let writer = self.writer.as_mut().ok_or_else(not_begun)?;
        let mut group = writer.next_row_group().map_err(to_io)?;
        for column in 0..self.columns {
            let start = column * self.rows_per_group;
            let values = &self.buffer[start..start + self.rows];
            let mut column_writer = group
                .next_column()
                .map_err(to_io)?
                .ok_or_else(|| io::Error::other("parquet schema has fewer columns than a row"))?;
            column_writer
                .typed::<DoubleType>()
                .write_batch(values, None, None)
                .map_err(to_io)?;
            column_writer.close().map_err(to_io)?;
        }
        group.close().map_err(to_io)?;
        self.rows = 0;
        Ok(())
    }
}

impl DrawSink for ParquetWriter {
    fn begin(&mut self, columns: &Columns<'_>) -> io::Result<()> {
        if columns.stats != self.header.stat_columns() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the algorithm's statistic columns differ from the run's description",
            ));
        }
        self.stats = columns.stats.len();
        let fields: Vec<Arc<Type>> = columns
            .stats
            .iter()
            .map(|c| c.name.as_ref())
            .chain(columns.values.iter().map(String::as_str))
            .map(|name| {
                Type::primitive_type_builder(name, PhysicalType::DOUBLE)
                    .with_repetition(Repetition::REQUIRED)
                    .build()
                    .map(Arc::new)
            })
            .collect::<Result<_, _>>()
            .map_err(to_io)?;
        self.columns = fields.len();
        let schema = Type::group_type_builder("schema")
            .with_fields(fields)
            .build()
            .map_err(to_io)?;
        let settings = settings_pairs(&self.header)
            .into_iter()
            .map(|(k, v)| KeyValue::new(k, v))
            .collect();
        // No statistics, page indexes or dictionaries: per-column metadata is kept in memory
        // until the footer, and for wide models it would dominate the writer's memory.
        let properties = WriterProperties::builder()
            .set_key_value_metadata(Some(settings))
            .set_statistics_enabled(EnabledStatistics::None)
            .set_offset_index_disabled(true)
            .set_dictionary_enabled(false)
            .build();
        let file = File::create(&self.path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot create {}: {e}", self.path.display()),
            )
        })?;
        let writer =
            SerializedFileWriter::new(BufWriter::new(file), Arc::new(schema), properties.into())
                .map_err(to_io)?;
        self.writer = Some(writer);
        let kept = self.header.run.kept;
        let expected_rows = kept.sampling + kept.warmup;
        let by_bytes = (self.row_group_bytes / (8 * self.columns)).max(1);
        self.rows_per_group = if self.balance_metadata {
            rows_per_group(by_bytes, expected_rows)
        } else {
            by_bytes
        };
        self.buffer = vec![0.0; self.rows_per_group * self.columns];
        Ok(())
    }

    fn adaptation_done(&mut self, adaptation: &AdaptationInfo<'_>) -> io::Result<()> {
        self.metadata = adaptation_info_pairs(adaptation);
        Ok(())
    }

    fn draw(&mut self, draw: &Draw<'_>) -> io::Result<()> {
        let (warmup, values) = (draw.warmup, draw.values);
        if values.len() + self.stats != self.columns || draw.stats.len() != self.stats {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a draw has {} values for {} columns",
                    values.len(),
                    self.columns.saturating_sub(self.stats)
                ),
            ));
        }
        let row = self.rows;
        let stride = self.rows_per_group;
        for (column, &v) in draw.stats.iter().chain(values).enumerate() {
            self.buffer[column * stride + row] = v;
        }
        self.rows += 1;
        if warmup {
            self.warmup_rows += 1;
        }
        if self.rows == self.rows_per_group {
            self.write_row_group()?;
        }
        Ok(())
    }

    fn finish(&mut self, timing: &Timing) -> io::Result<()> {
        self.write_row_group()?;
        let mut writer = self.writer.take().ok_or_else(not_begun)?;
        let mut pairs = std::mem::take(&mut self.metadata);
        pairs.push((WARMUP_ROWS_KEY.to_string(), self.warmup_rows.to_string()));
        pairs.push((
            "hazel.elapsed_seconds".to_string(),
            format!(
                "{},{}",
                timing.warmup.as_secs_f64(),
                timing.sampling.as_secs_f64()
            ),
        ));
        for (key, value) in pairs {
            writer.append_key_value_metadata(KeyValue::new(key, value));
        }
        writer.close().map_err(to_io)?;
        self.buffer = Vec::new();
        Ok(())
    }
}

/// Rows per row group for a run of `expected_rows` rows: at least `by_bytes` (the byte budget),
/// and few enough groups that the metadata parquet keeps until the footer — per column, one
/// [`METADATA_BYTES_PER_COLUMN_CHUNK`] for each group written plus one for the group being
/// closed — stays within three quarters of a group's buffer (8 bytes per row per column). The
/// writer's memory then stays under two row groups, the rest of the second one covering the
/// schema (a few hundred bytes per column). Groups are made equal (the run's rows split evenly).
pub fn rows_per_group(by_bytes: usize, expected_rows: usize) -> usize {
    let by_bytes = by_bytes.max(1);
    if expected_rows <= by_bytes {
        return by_bytes;
    }
    let mut groups = expected_rows.div_ceil(by_bytes);
    loop {
        let rows = expected_rows.div_ceil(groups);
        let retained = (groups + 1) * METADATA_BYTES_PER_COLUMN_CHUNK;
        if groups == 1 || 4 * retained <= 3 * 8 * rows {
            return rows.max(by_bytes);
        }
        groups -= 1;
    }
}

fn to_io(e: parquet::errors::ParquetError) -> io::Error {
    io::Error::other(format!("parquet: {e}"))
}

fn not_begun() -> io::Error {
    io::Error::other("the parquet writer was used before `begin`")
}

/// Reads a chain's Parquet file (as [`ParquetWriter`] writes it) into the CSV reader's form.
pub(crate) fn read_parquet(path: &Path) -> Result<StanCsv, CsvError> {
    let error = |message: String| CsvError {
        path: path.to_path_buf(),
        line: None,
        message,
    };
    let file = File::open(path).map_err(|e| error(format!("cannot read the file: {e}")))?;
    let reader = SerializedFileReader::new(file)
        .map_err(|e| error(format!("not a readable Parquet file: {e}")))?;
    let metadata = reader.metadata();
    let pairs: Vec<(&str, &str)> = metadata
        .file_metadata()
        .key_value_metadata()
        .map(|kv| {
            kv.iter()
                .map(|e| (e.key.as_str(), e.value.as_deref().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    let column_names: Vec<String> = metadata
        .file_metadata()
        .schema_descr()
        .columns()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    let rows = usize::try_from(metadata.file_metadata().num_rows()).unwrap_or(0);
    let mut draws = vec![Vec::with_capacity(column_names.len()); rows];
    let mut first_row = 0;
    let mut values = Vec::new();
    for group_index in 0..reader.num_row_groups() {
        let group = reader
            .get_row_group(group_index)
            .map_err(|e| error(format!("row group {group_index}: {e}")))?;
        let group_rows = usize::try_from(group.metadata().num_rows()).unwrap_or(0);
        if first_row + group_rows > rows {
            return Err(error("row groups hold more rows than the file".to_string()));
        }
        for (column, name) in column_names.iter().enumerate() {
            let ColumnReader::DoubleColumnReader(mut column_reader) = group
                .get_column_reader(column)
                .map_err(|e| error(format!("column `{name}`: {e}")))?
            else {
                return Err(error(format!("column `{name}` is not DOUBLE")));
            };
            values.clear();
            let (records, _, _) = column_reader
                .read_records(group_rows, None, None, &mut values)
                .map_err(|e| error(format!("column `{name}`: {e}")))?;
            if records != group_rows || values.len() != group_rows {
                return Err(error(format!(
                    "column `{name}` has {} of {group_rows} values in row group {group_index}",
                    values.len()
                )));
            }
            for (row, &v) in draws[first_row..first_row + group_rows]
                .iter_mut()
                .zip(&values)
            {
                row.push(v);
            }
        }
        first_row += group_rows;
    }
    let find = |key: &str| pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
    let warmup_rows = match find(WARMUP_ROWS_KEY) {
        Some(v) => v
            .parse::<usize>()
            .map_err(|_| error(format!("{WARMUP_ROWS_KEY} `{v}` is not a count")))?
            .min(rows),
        None => 0,
    };
    let elapsed_seconds = find("hazel.elapsed_seconds").and_then(|v| {
        let (w, s) = v.split_once(',')?;
        Some((w.parse().ok()?, s.parse().ok()?))
    });
    let adaptation = adaptation_from_pairs(pairs.iter().copied()).map_err(error)?;
    let warmup = draws.drain(..warmup_rows).collect();
    Ok(StanCsv {
        path: path.to_path_buf(),
        config: config_from_pairs(pairs.iter().copied()),
        column_names,
        warmup_rows,
        warmup,
        draws,
        adaptation,
        elapsed_seconds,
        truncated: false,
    })
}
