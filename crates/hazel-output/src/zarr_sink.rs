//! Zarr output (feature `zarr`): one Zarr v3 store per run, laid out as ArviZ InferenceData so
//! that `xarray.open_datatree(path, engine="zarr")` and `arviz.InferenceData.from_datatree`
//! read it.
//!
//! ```text
//! <model>.zarr/                 root attributes: the CSV's settings (see crate::settings),
//!                               adaptation results per chain id
//!   posterior/                  attribute stan_columns: the CSV's model column names, in order
//!     chain, draw               coordinates (chain ids; 0-based draw index)
//!     theta                     f64 (chain, draw, theta_dim_0, …) in the declared shape
//!     theta_dim_0 …             coordinates (0-based, as ArviZ numbers them)
//!   sample_stats/               the algorithm's statistics under ArviZ's names
//!                               ([`crate::layout::arviz_stat_name`]), each (chain, draw): for
//!                               NUTS lp, acceptance_rate, step_size, energy (f64), tree_depth,
//!                               n_steps (i64), diverging (bool); attributes stan_columns (the
//!                               CSV's names) and stat_kinds (real, integer, flag)
//!   warmup_posterior/, warmup_sample_stats/   the same for saved warmup (`--save-warmup`)
//! ```
//!
//! Streamed: each chain buffers at most [`CHUNK_BYTES`] of draws (at least one) and writes them
//! as one chunk along `draw` (chunks are `1 × n × <whole variable>`, so chains never write the
//! same chunk). The variables' buffers are kept as the chunks' stored bytes (codec `bytes`,
//! little-endian, nothing else) and handed to the store without a copy, so a chain's writer
//! holds one chunk of draws, not one per encoding step. Arrays are sized for the run's draws up front; draws a stopped chain never made
//! keep the fill value (NaN, 0, false), and the reader ends a chain at its first NaN `lp`.
//! Variables' shapes come from the column names ([`crate::layout`]).

use crate::layout::{arviz_stat_name, variables, Variable};
use crate::reader::{CsvError, StanCsv};
use crate::settings::{
    adaptation_from_pairs, adaptation_info_pairs, config_from_pairs, settings_pairs,
};
use crate::writer::CsvHeaderInfo;
use hazel_draws::{AdaptationInfo, Columns, Draw, DrawSink, StatColumn, StatKind, Timing};
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use zarrs::array::codec::BytesCodec;
use zarrs::array::{data_type, Array, ArrayBuilder, FillValue};
use zarrs::filesystem::FilesystemStore;
use zarrs::group::Group;
use zarrs::storage::{Bytes, ReadableStorageTraits, StoreKey, WritableStorageTraits};

/// Target size of one chain's buffered draws (one chunk along `draw`).
pub(crate) const CHUNK_BYTES: usize = 8 << 20;

type Store = FilesystemStore;

/// One run's store, shared by its chains' writers.
pub struct ZarrRun {
    path: PathBuf,
    store: Arc<Store>,
    chain_ids: Vec<u64>,
    /// The algorithm's statistic columns (the CSV's), stored under ArviZ's names.
    stat_columns: Vec<StatColumn>,
    /// Draws per chain kept after warmup, and of warmup (0 unless saved).
    draws: u64,
    warmup_draws: u64,
    chunk_bytes: usize,
    shared: Mutex<Shared>,
}

/// Guarded by the run's mutex, which also orders the chains' updates of the root attributes
/// (read back from the store each time rather than kept: for wide models the adapted metrics
/// are large, and memory held for the whole run counts against the writer's bound).
struct Shared {
    /// Created by the first chain to begin; the others check their columns against it.
    layout: Option<Arc<Layout>>,
}

struct Layout {
    /// The model's column count and a hash of their names (the other chains must match; the
    /// names themselves are not kept: for wide models they cost more than a chunk).
    columns: usize,
    names_hash: u64,
    variables: Vec<Variable>,
    chunk_draws: u64,
}

fn names_hash(names: &[String]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    names.hash(&mut hasher);
    hasher.finish()
}

/// A group's `zarr.json` as zarrs writes it. Serialized straight from borrowed attributes:
/// building them as a `serde_json::Value` for zarrs' `GroupBuilder` clones them several times,
/// and for wide models they are large (a posterior's `stan_columns`, the root's adapted
/// inverse metric): tens of MiB at 10⁵ columns, more than the chunks the writer holds.
#[derive(serde::Serialize)]
struct GroupJson<A> {
    zarr_format: u8,
    node_type: &'static str,
    attributes: A,
}

impl<A: serde::Serialize> GroupJson<A> {
    /// Writes `<path>zarr.json` (`path` empty for the root, else ending in `/`).
    fn store(store: &Store, path: &str, attributes: A) -> io::Result<()> {
        let json = serde_json::to_vec(&GroupJson {
            zarr_format: 3,
            node_type: "group",
            attributes,
        })
        .map_err(to_io)?;
        let key = StoreKey::new(format!("{path}zarr.json")).map_err(to_io)?;
        store.set(&key, Bytes::from(json)).map_err(to_io)
    }
}

#[derive(serde::Serialize)]
struct GroupAttributes<'a> {
    inference_library: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    stan_columns: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stat_kinds: Option<&'a [&'static str]>,
}

/// How a statistic's kind is named in the `stat_kinds` attribute.
fn kind_name(kind: StatKind) -> &'static str {
    match kind {
        StatKind::Real => "real",
        StatKind::Integer => "integer",
        StatKind::Flag => "flag",
    }
}

fn kind_from_name(name: &str) -> Option<StatKind> {
    match name {
        "real" => Some(StatKind::Real),
        "integer" => Some(StatKind::Integer),
        "flag" => Some(StatKind::Flag),
        _ => None,
    }
}

impl ZarrRun {
    /// Creates the store at `path` (replacing an earlier Zarr store there) with its settings,
    /// for the run's chains; `header` is chain 1's (its chain-specific lines are not kept).
    pub fn create(
        path: &Path,
        header: &CsvHeaderInfo,
        chain_ids: Vec<u64>,
    ) -> io::Result<Arc<Self>> {
        Self::with_chunk_bytes(path, header, chain_ids, CHUNK_BYTES)
    }

    /// As [`ZarrRun::create`] with another chunk size (tests use tiny chunks).
    pub fn with_chunk_bytes(
        path: &Path,
        header: &CsvHeaderInfo,
        chain_ids: Vec<u64>,
        chunk_bytes: usize,
    ) -> io::Result<Arc<Self>> {
        if path.exists() {
            if !path.join("zarr.json").is_file() {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!(
                        "{} exists and is not a Zarr store: not replacing it",
                        path.display()
                    ),
                ));
            }
            std::fs::remove_dir_all(path)?;
        }
        std::fs::create_dir_all(path).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot create {}: {e}", path.display()))
        })?;
        let store = Arc::new(Store::new(path).map_err(to_io)?);
        let mut root_attributes = Map::new();
        root_attributes.insert("inference_library".into(), json!("hazel"));
        root_attributes.insert(
            "inference_library_version".into(),
            json!(env!("CARGO_PKG_VERSION")),
        );
        let settings: Map<String, Value> = settings_pairs(header)
            .into_iter()
            .filter(|(key, _)| key != "id" && key != "output.file")
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        root_attributes.insert("settings".into(), Value::Object(settings));
        let kept = header.run.kept;
        let run = Arc::new(ZarrRun {
            path: path.to_path_buf(),
            store,
            chain_ids,
            stat_columns: header.stat_columns().to_vec(),
            draws: kept.sampling as u64,
            warmup_draws: kept.warmup as u64,
            chunk_bytes,
            shared: Mutex::new(Shared { layout: None }),
        });
        run.store_root(&root_attributes)?;
        Ok(run)
    }

    /// The writer of chain `chain_index` (0-based within the run).
    pub fn chain_writer(self: &Arc<Self>, chain_index: usize) -> ZarrChainWriter {
        ZarrChainWriter {
            run: Arc::clone(self),
            chain_index,
            phases: Vec::new(),
            layout: None,
            stats: vec![Vec::new(); self.stat_columns.len()],
            values: Vec::new(),
            rows: 0,
            buffered_warmup: false,
            written: [0, 0],
        }
    }

    /// The store's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock(&self) -> io::Result<std::sync::MutexGuard<'_, Shared>> {
        self.shared
            .lock()
            .map_err(|_| io::Error::other("another chain's Zarr writer panicked"))
    }

    fn store_root(&self, attributes: &Map<String, Value>) -> io::Result<()> {
        GroupJson::store(&self.store, "", attributes)
    }

    /// The groups `(draws, posterior group, sample_stats group)` of each phase written.
    fn phases(&self) -> Vec<(bool, u64, &'static str, &'static str)> {
        let mut phases = Vec::new();
        if self.warmup_draws > 0 {
            phases.push((
                true,
                self.warmup_draws,
                "warmup_posterior",
                "warmup_sample_stats",
            ));
        }
        phases.push((false, self.draws, "posterior", "sample_stats"));
        phases
    }

    /// Creates every group and array for the model's columns `names`.
    fn create_layout(&self, names: &[String]) -> io::Result<Layout> {
        let width = (self.stat_columns.len() + names.len()) as u64;
        let chunk_draws = (self.chunk_bytes as u64 / (8 * width)).max(1);
        let layout = Layout {
            columns: names.len(),
            names_hash: names_hash(names),
            variables: variables(names),
            chunk_draws,
        };
        let chains = self.chain_ids.len() as u64;
        for (_, draws, posterior, sample_stats) in self.phases() {
            self.create_group(posterior, Some(names), None)?;
            let stat_names: Vec<String> = self
                .stat_columns
                .iter()
                .map(|c| c.name.to_string())
                .collect();
            let stat_kinds: Vec<&str> = self
                .stat_columns
                .iter()
                .map(|c| kind_name(c.kind))
                .collect();
            self.create_group(sample_stats, Some(&stat_names), Some(&stat_kinds))?;
            for group in [posterior, sample_stats] {
                let chain_ids: Vec<i64> = self.chain_ids.iter().map(|&id| id as i64).collect();
                self.create_coordinate(group, "chain", &chain_ids)?;
                self.create_coordinate(group, "draw", &(0..draws as i64).collect::<Vec<_>>())?;
            }
            for column in &self.stat_columns {
                let stat = arviz_stat_name(&column.name);
                let array = match column.kind {
                    StatKind::Real => ArrayBuilder::new(
                        vec![chains, draws],
                        vec![1, chunk_draws],
                        data_type::float64(),
                        f64::NAN,
                    ),
                    StatKind::Integer => ArrayBuilder::new(
                        vec![chains, draws],
                        vec![1, chunk_draws],
                        data_type::int64(),
                        0i64,
                    ),
                    StatKind::Flag => ArrayBuilder::new(
                        vec![chains, draws],
                        vec![1, chunk_draws],
                        data_type::bool(),
                        FillValue::from(false),
                    ),
                }
                .dimension_names(Some(["chain", "draw"]))
                .build(self.store.clone(), &format!("/{sample_stats}/{stat}"))
                .map_err(to_io)?;
                array.store_metadata().map_err(to_io)?;
            }
            for variable in &layout.variables {
                let mut shape = vec![chains, draws];
                shape.extend(&variable.shape);
                let mut chunk = vec![1, chunk_draws];
                chunk.extend(&variable.shape);
                let mut dims = vec!["chain".to_string(), "draw".to_string()];
                for (k, &extent) in variable.shape.iter().enumerate() {
                    let dim = format!("{}_dim_{k}", variable.name);
                    self.create_coordinate(
                        posterior,
                        &dim,
                        &(0..extent as i64).collect::<Vec<_>>(),
                    )?;
                    dims.push(dim);
                }
                // Little-endian `bytes` only: the writer stores its buffers as encoded chunks.
                let array = ArrayBuilder::new(shape, chunk, data_type::float64(), f64::NAN)
                    .array_to_bytes_codec(Arc::new(BytesCodec::little()))
                    .dimension_names(Some(dims))
                    .build(
                        self.store.clone(),
                        &format!("/{posterior}/{}", variable.name),
                    )
                    .map_err(to_io)?;
                array.store_metadata().map_err(to_io)?;
            }
        }
        Ok(layout)
    }

    /// Creates the group `name`, listing the CSV's columns it holds (`stan_columns`) and, for
    /// statistics, their kinds.
    fn create_group(
        &self,
        name: &str,
        stan_columns: Option<&[String]>,
        stat_kinds: Option<&[&'static str]>,
    ) -> io::Result<()> {
        let attributes = GroupAttributes {
            inference_library: "hazel",
            stan_columns,
            stat_kinds,
        };
        GroupJson::store(&self.store, &format!("{name}/"), attributes)
    }

    fn create_coordinate(&self, group: &str, name: &str, values: &[i64]) -> io::Result<()> {
        let len = values.len() as u64;
        let array = ArrayBuilder::new(vec![len], vec![len.max(1)], data_type::int64(), 0i64)
            .dimension_names(Some([name]))
            .build(self.store.clone(), &format!("/{group}/{name}"))
            .map_err(to_io)?;
        array.store_metadata().map_err(to_io)?;
        if len > 0 {
            array
                .store_array_subset(&std::slice::from_ref(&(0..len)), values)
                .map_err(to_io)?;
        }
        Ok(())
    }
}

/// One phase's open arrays: the statistics', then the variables'.
struct PhaseArrays {
    warmup: bool,
    stats: Vec<Array<Store>>,
    variables: Vec<Array<Store>>,
}

/// A [`DrawSink`] writing one chain's slice of a [`ZarrRun`].
pub struct ZarrChainWriter {
    run: Arc<ZarrRun>,
    chain_index: usize,
    phases: Vec<PhaseArrays>,
    layout: Option<Arc<Layout>>,
    /// Buffered draws of one phase. The variables' are already each chunk's stored bytes
    /// (little-endian f64, draw-major, then the variable's elements in C order), handed to the
    /// store as they are: at most one chunk of draws is held, and no copy of it is made.
    stats: Vec<Vec<f64>>,
    values: Vec<Vec<u8>>,
    rows: usize,
    buffered_warmup: bool,
    /// Draws already written: warmup, post-warmup.
    written: [u64; 2],
}

impl ZarrChainWriter {
    /// Draws per chunk along `draw` (known after `begin`).
    pub fn chunk_draws(&self) -> Option<u64> {
        self.layout.as_ref().map(|l| l.chunk_draws)
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let layout = self.layout.clone().ok_or_else(not_begun)?;
        let phase = self
            .phases
            .iter()
            .find(|p| p.warmup == self.buffered_warmup)
            .ok_or_else(|| io::Error::other("a warmup draw in a run that does not save warmup"))?;
        let start = self.written[usize::from(!self.buffered_warmup)];
        let rows = self.rows as u64;
        let chain = self.chain_index as u64;
        let range = [chain..chain + 1, start..start + rows];
        for ((k, array), values) in phase.stats.iter().enumerate().zip(&self.stats) {
            match self.run.stat_columns[k].kind {
                StatKind::Real => array.store_array_subset(&range, &values[..]),
                StatKind::Integer => array.store_array_subset(
                    &range,
                    values.iter().map(|&v| v as i64).collect::<Vec<_>>(),
                ),
                StatKind::Flag => array.store_array_subset(
                    &range,
                    values.iter().map(|&v| v != 0.0).collect::<Vec<_>>(),
                ),
            }
            .map_err(to_io)?;
        }
        let chunk_draws = layout.chunk_draws;
        for ((variable, array), buffer) in layout
            .variables
            .iter()
            .zip(&phase.variables)
            .zip(&mut self.values)
        {
            let chunk_len = chunk_draws as usize * variable.columns.len() * 8;
            let mut bytes = std::mem::take(buffer);
            if start.is_multiple_of(chunk_draws) {
                // One whole chunk; a phase's last, partial one is padded with the fill value.
                bytes.resize(chunk_len, 0);
                for pad in bytes[rows as usize * variable.columns.len() * 8..].chunks_exact_mut(8) {
                    pad.copy_from_slice(&f64::NAN.to_le_bytes());
                }
                let mut indices = vec![chain, start / chunk_draws];
                indices.extend(variable.shape.iter().map(|_| 0));
                // SAFETY: the array's codecs are exactly `bytes` little-endian (`create_layout`),
                // whose encoding of a chunk is its f64 elements' little-endian bytes in C order.
                #[allow(unsafe_code)] // the crate denies unsafe code; this is its one use
                unsafe { array.store_encoded_chunk(&indices, Bytes::from(bytes)) }
                    .map_err(to_io)?;
            } else {
                // Not reached by `draw` (chunks stay aligned); kept correct all the same.
                let values: Vec<f64> = bytes
                    .chunks_exact(8)
                    .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")))
                    .collect();
                let mut subset = range.to_vec();
                subset.extend(variable.shape.iter().map(|&extent| 0..extent));
                array
                    .store_array_subset(&subset, &values[..])
                    .map_err(to_io)?;
            }
            *buffer = Vec::with_capacity(chunk_len);
        }
        self.written[usize::from(!self.buffered_warmup)] += rows;
        self.rows = 0;
        self.stats.iter_mut().for_each(Vec::clear);
        Ok(())
    }
}

impl DrawSink for ZarrChainWriter {
    fn begin(&mut self, columns: &Columns<'_>) -> io::Result<()> {
        if columns.stats != self.run.stat_columns {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the algorithm's statistic columns differ from the run's description",
            ));
        }
        let names = columns.values;
        let layout = {
            let mut shared = self.run.lock()?;
            match &shared.layout {
                Some(layout)
                    if layout.columns != names.len() || layout.names_hash != names_hash(names) =>
                {
                    return Err(io::Error::other(
                        "this chain's columns differ from the other chains' in the Zarr store",
                    ))
                }
                Some(layout) => layout.clone(),
                None => {
                    let layout = Arc::new(self.run.create_layout(names)?);
                    shared.layout = Some(layout.clone());
                    layout
                }
            }
        };
        let open = |path: String| Array::open(self.run.store.clone(), &path).map_err(to_io);
        for (warmup, _, posterior, sample_stats) in self.run.phases() {
            self.phases.push(PhaseArrays {
                warmup,
                stats: self
                    .run
                    .stat_columns
                    .iter()
                    .map(|c| open(format!("/{sample_stats}/{}", arviz_stat_name(&c.name))))
                    .collect::<Result<_, _>>()?,
                variables: layout
                    .variables
                    .iter()
                    .map(|v| open(format!("/{posterior}/{}", v.name)))
                    .collect::<Result<_, _>>()?,
            });
        }
        let rows = layout.chunk_draws as usize;
        self.values = layout
            .variables
            .iter()
            .map(|v| Vec::with_capacity(rows * v.columns.len() * 8))
            .collect();
        self.layout = Some(layout);
        Ok(())
    }

    fn adaptation_done(&mut self, adaptation: &AdaptationInfo<'_>) -> io::Result<()> {
        let pairs: Map<String, Value> = adaptation_info_pairs(adaptation)
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        let chain_id = self.run.chain_ids[self.chain_index].to_string();
        let _shared = self.run.lock()?;
        let root = self
            .run
            .store
            .get(&StoreKey::new("zarr.json").map_err(to_io)?)
            .map_err(to_io)?
            .ok_or_else(|| io::Error::other("the Zarr store lost its root zarr.json"))?;
        let mut root: Value = serde_json::from_slice(&root).map_err(to_io)?;
        let Some(Value::Object(mut attributes)) = root.get_mut("attributes").map(Value::take)
        else {
            return Err(io::Error::other("the Zarr store's root has no attributes"));
        };
        let adaptation = attributes
            .entry("adaptation")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(by_chain) = adaptation {
            by_chain.insert(chain_id, Value::Object(pairs));
        }
        self.run.store_root(&attributes)
    }

    fn draw(&mut self, draw: &Draw<'_>) -> io::Result<()> {
        let (warmup, values) = (draw.warmup, draw.values);
        let layout = self.layout.as_ref().ok_or_else(not_begun)?;
        let (columns, chunk_draws) = (layout.columns, layout.chunk_draws as usize);
        if values.len() != columns || draw.stats.len() != self.stats.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a draw has {} values for {} columns", values.len(), columns),
            ));
        }
        if self.rows > 0 && warmup != self.buffered_warmup {
            self.flush()?;
        }
        let phase_draws = if warmup {
            self.run.warmup_draws
        } else {
            self.run.draws
        };
        let next = self.written[usize::from(!warmup)] + self.rows as u64;
        if next >= phase_draws {
            return Err(io::Error::other(format!(
                "more {} draws than the {phase_draws} the Zarr store was sized for",
                if warmup { "warmup" } else { "post-warmup" }
            )));
        }
        self.buffered_warmup = warmup;
        for (buffer, &v) in self.stats.iter_mut().zip(draw.stats) {
            buffer.push(v);
        }
        let layout = self.layout.as_ref().ok_or_else(not_begun)?;
        for (buffer, variable) in self.values.iter_mut().zip(&layout.variables) {
            for &c in &variable.columns {
                buffer.extend_from_slice(&values[c].to_le_bytes());
            }
        }
        self.rows += 1;
        // Chunks stay aligned: a phase's draws start at chunk 0, and each flush but a phase's last
        // writes whole chunks.
        if self.rows == chunk_draws {
            self.flush()?;
        }
        Ok(())
    }

    fn finish(&mut self, _timing: &Timing) -> io::Result<()> {
        self.flush()?;
        self.values = Vec::new();
        Ok(())
    }
}

fn to_io(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("zarr: {e}"))
}

fn not_begun() -> io::Error {
    io::Error::other("the Zarr writer was used before `begin`")
}

/// Reads the post-warmup draws of every chain in a store written by [`ZarrRun`], one
/// [`StanCsv`] per chain with the CSV's columns.
pub(crate) fn read_zarr(path: &Path) -> Result<Vec<StanCsv>, CsvError> {
    let error = |message: String| CsvError {
        path: path.to_path_buf(),
        line: None,
        message,
    };
    let store = Arc::new(Store::new(path).map_err(|e| error(format!("cannot open: {e}")))?);
    let root = Group::open(store.clone(), "/")
        .map_err(|e| error(format!("not a readable Zarr store: {e}")))?;
    let attributes = root.attributes();
    let string_pairs = |value: Option<&Value>| -> Vec<(String, String)> {
        value
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default()
    };
    let settings = string_pairs(attributes.get("settings"));
    let strings = |group: &str, attribute: &str| -> Result<Vec<String>, CsvError> {
        let group = Group::open(store.clone(), &format!("/{group}"))
            .map_err(|e| error(format!("no readable `{group}` group: {e}")))?;
        group
            .attributes()
            .get(attribute)
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .ok_or_else(|| error(format!("`{group}` has no `{attribute}` attribute")))
    };
    let names = strings("posterior", "stan_columns")?;
    let stat_names = strings("sample_stats", "stan_columns")?;
    let stat_kinds = strings("sample_stats", "stat_kinds")?;
    let stat_columns: Vec<StatColumn> = stat_names
        .into_iter()
        .zip(&stat_kinds)
        .map(|(name, kind)| {
            kind_from_name(kind)
                .map(|kind| StatColumn {
                    name: Cow::Owned(name),
                    kind,
                })
                .ok_or_else(|| error(format!("`sample_stats`: unknown statistic kind `{kind}`")))
        })
        .collect::<Result<_, _>>()?;
    let open = |name: String| {
        Array::open(store.clone(), &name).map_err(|e| error(format!("array {name}: {e}")))
    };
    let chain_array = open("/posterior/chain".to_string())?;
    let chain_ids: Vec<i64> = chain_array
        .retrieve_array_subset(&std::slice::from_ref(&(0..store_len(&chain_array))))
        .map_err(|e| error(format!("array /posterior/chain: {e}")))?;
    let draws = store_len(&open("/posterior/draw".to_string())?);
    let layout = variables(&names);
    let stats = stat_columns.len();
    let width = stats + names.len();
    let mut chains = Vec::with_capacity(chain_ids.len());
    for (index, &chain_id) in chain_ids.iter().enumerate() {
        let chain = index as u64;
        let range = [chain..chain + 1, 0..draws];
        let mut rows = vec![vec![0.0; width]; draws as usize];
        for (k, column) in stat_columns.iter().enumerate() {
            let name = format!("/sample_stats/{}", arviz_stat_name(&column.name));
            let array = open(name.clone())?;
            let read_error = |e: zarrs::array::ArrayError| error(format!("array {name}: {e}"));
            let values: Vec<f64> = match column.kind {
                StatKind::Real => array.retrieve_array_subset(&range).map_err(read_error)?,
                StatKind::Integer => array
                    .retrieve_array_subset::<Vec<i64>>(&range)
                    .map_err(read_error)?
                    .into_iter()
                    .map(|v| v as f64)
                    .collect(),
                StatKind::Flag => array
                    .retrieve_array_subset::<Vec<bool>>(&range)
                    .map_err(read_error)?
                    .into_iter()
                    .map(|v| f64::from(u8::from(v)))
                    .collect(),
            };
            for (row, v) in rows.iter_mut().zip(values) {
                row[k] = v;
            }
        }
        for variable in &layout {
            let name = format!("/posterior/{}", variable.name);
            let array = open(name.clone())?;
            let mut subset = range.to_vec();
            subset.extend(variable.shape.iter().map(|&extent| 0..extent));
            let values: Vec<f64> = array
                .retrieve_array_subset(&subset)
                .map_err(|e| error(format!("array {name}: {e}")))?;
            let elements = variable.columns.len();
            for (row, draw) in rows.iter_mut().zip(values.chunks_exact(elements)) {
                for (&column, &v) in variable.columns.iter().zip(draw) {
                    row[stats + column] = v;
                }
            }
        }
        // Draws a stopped chain never made still hold the fill value.
        let made = rows
            .iter()
            .position(|row| row[0].is_nan())
            .unwrap_or(rows.len());
        rows.truncate(made);
        let adaptation_pairs = attributes
            .get("adaptation")
            .and_then(|a| a.get(chain_id.to_string()));
        let adaptation_pairs = string_pairs(adaptation_pairs);
        let adaptation = adaptation_from_pairs(
            adaptation_pairs
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str())),
        )
        .map_err(error)?;
        let mut config = config_from_pairs(settings.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        config.push(crate::reader::ConfigEntry {
            sections: Vec::new(),
            key: "id".to_string(),
            value: chain_id.to_string(),
        });
        let mut column_names: Vec<String> =
            stat_columns.iter().map(|c| c.name.to_string()).collect();
        column_names.extend(names.iter().cloned());
        chains.push(StanCsv {
            path: path.to_path_buf(),
            config,
            column_names,
            warmup_rows: 0,
            warmup: Vec::new(),
            draws: rows,
            adaptation,
            elapsed_seconds: None,
            truncated: false,
        });
    }
    Ok(chains)
}

fn store_len(array: &Array<Store>) -> u64 {
    array.shape().first().copied().unwrap_or(0)
}
