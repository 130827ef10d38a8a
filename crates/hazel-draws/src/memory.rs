//! A chain's draws kept in memory, column by column.
//!
//! [`MemorySink`] is a [`DrawSink`] that stores what it receives in a [`ChainDraws`] behind a
//! shared handle ([`MemoryDraws`]), so the caller reads the draws after the run (or during it:
//! what a chain stopped by an error or an interruption drew is there too). Each column is one
//! contiguous `Vec<f64>` (column-major), the layout the summary, ArviZ and numpy want. Storage
//! for the run's draws is reserved at `begin`, so storing a draw does not allocate.

use crate::{
    AdaptationInfo, Columns, Draw, DrawSink, InverseMetric, KeptDraws, StatColumn, Timing,
};
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

/// Draws of one phase, column-major: `stats[k][i]` is statistic `k` of draw `i`, `values[j][i]`
/// output column `j` of draw `i`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DrawTable {
    pub stats: Vec<Vec<f64>>,
    pub values: Vec<Vec<f64>>,
}

impl DrawTable {
    /// Number of draws.
    pub fn len(&self) -> usize {
        self.stats
            .first()
            .or(self.values.first())
            .map_or(0, Vec::len)
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn with_columns(stats: usize, values: usize, capacity: usize) -> Self {
        DrawTable {
            stats: (0..stats).map(|_| Vec::with_capacity(capacity)).collect(),
            values: (0..values).map(|_| Vec::with_capacity(capacity)).collect(),
        }
    }

    /// Appends one draw; its widths must match the table's.
    pub fn push(&mut self, stats: &[f64], values: &[f64]) -> io::Result<()> {
        if stats.len() != self.stats.len() || values.len() != self.values.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a draw has {} statistics and {} values for {} and {} columns",
                    stats.len(),
                    values.len(),
                    self.stats.len(),
                    self.values.len()
                ),
            ));
        }
        for (column, &v) in self.stats.iter_mut().zip(stats) {
            column.push(v);
        }
        for (column, &v) in self.values.iter_mut().zip(values) {
            column.push(v);
        }
        Ok(())
    }
}

/// Everything one chain's [`MemorySink`] received.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChainDraws {
    /// The chain's id (CmdStan's `id`).
    pub chain_id: u64,
    pub stat_columns: Vec<StatColumn>,
    /// The model's output column names.
    pub names: Vec<String>,
    /// Saved warmup draws (empty unless the sink was asked to keep them).
    pub warmup: DrawTable,
    /// Draws after warmup.
    pub sampling: DrawTable,
    /// The step size and inverse metric an HMC run adapted.
    pub stepsize: Option<f64>,
    pub inv_metric: Option<InverseMetric>,
    /// The step-size scale an ADVI run used.
    pub eta: Option<f64>,
    /// Set by `finish`.
    pub timing: Option<Timing>,
}

impl ChainDraws {
    /// An empty chain with these columns (draws are then pushed into its tables).
    pub fn new(chain_id: u64, columns: &Columns<'_>) -> Self {
        ChainDraws {
            chain_id,
            stat_columns: columns.stats.to_vec(),
            names: columns.values.to_vec(),
            warmup: DrawTable::with_columns(columns.stats.len(), columns.values.len(), 0),
            sampling: DrawTable::with_columns(columns.stats.len(), columns.values.len(), 0),
            ..ChainDraws::default()
        }
    }

    /// The index of the statistic column called `name` (`divergent__`).
    pub fn stat_index(&self, name: &str) -> Option<usize> {
        self.stat_columns.iter().position(|c| c.name == name)
    }

    /// The post-warmup draws of the statistic called `name`.
    pub fn stat(&self, name: &str) -> Option<&[f64]> {
        self.stat_index(name).map(|k| &self.sampling.stats[k][..])
    }
}

/// The shared handle to a [`MemorySink`]'s draws.
#[derive(Debug, Clone, Default)]
pub struct MemoryDraws(Arc<Mutex<ChainDraws>>);

impl MemoryDraws {
    /// The draws received so far (a sink that panicked leaves what it had).
    pub fn lock(&self) -> MutexGuard<'_, ChainDraws> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
    /// Takes the draws out, leaving an empty chain.
    pub fn take(&self) -> ChainDraws {
        std::mem::take(&mut *self.lock())
    }
}

/// A [`DrawSink`] keeping one chain's draws in memory.
pub struct MemorySink {
    draws: MemoryDraws,
    keep_warmup: bool,
    kept: KeptDraws,
}

impl MemorySink {
    /// A sink for chain `chain_id` that expects up to `kept` draws per phase (storage is
    /// reserved for them at `begin`); warmup draws are kept only when `keep_warmup`.
    pub fn new(chain_id: u64, kept: KeptDraws, keep_warmup: bool) -> (MemorySink, MemoryDraws) {
        Self::continuing(
            ChainDraws {
                chain_id,
                ..ChainDraws::default()
            },
            kept,
            keep_warmup,
        )
    }

    /// A sink that continues `draws` (a resumed chain whose earlier draws were read back):
    /// later draws are appended to them.
    pub fn continuing(
        draws: ChainDraws,
        kept: KeptDraws,
        keep_warmup: bool,
    ) -> (MemorySink, MemoryDraws) {
        let handle = MemoryDraws(Arc::new(Mutex::new(draws)));
        let sink = MemorySink {
            draws: handle.clone(),
            keep_warmup,
            kept,
        };
        (sink, handle)
    }
}

impl DrawSink for MemorySink {
    fn begin(&mut self, columns: &Columns<'_>) -> io::Result<()> {
        let mut chain = self.draws.lock();
        let (stats, values) = (columns.stats.len(), columns.values.len());
        let warmup = if self.keep_warmup {
            self.kept.warmup
        } else {
            0
        };
        *chain = ChainDraws {
            warmup: DrawTable::with_columns(stats, values, warmup),
            sampling: DrawTable::with_columns(stats, values, self.kept.sampling),
            ..ChainDraws::new(chain.chain_id, columns)
        };
        Ok(())
    }

    fn adaptation_done(&mut self, adaptation: &AdaptationInfo<'_>) -> io::Result<()> {
        let mut chain = self.draws.lock();
        match adaptation {
            AdaptationInfo::Hmc {
                stepsize,
                inv_metric,
            } => {
                chain.stepsize = Some(*stepsize);
                chain.inv_metric = Some((*inv_metric).clone());
            }
            AdaptationInfo::Advi { eta } => chain.eta = Some(*eta),
        }
        Ok(())
    }

    /// A resumed chain's handle started from its CSV, which holds a large low-rank metric only
    /// as its diagonal until the run finishes: the exact metric replaces it.
    fn adaptation_resumed(&mut self, adaptation: &AdaptationInfo<'_>) -> io::Result<()> {
        self.adaptation_done(adaptation)
    }

    fn draw(&mut self, draw: &Draw<'_>) -> io::Result<()> {
        if draw.warmup && !self.keep_warmup {
            return Ok(());
        }
        let mut chain = self.draws.lock();
        let table = if draw.warmup {
            &mut chain.warmup
        } else {
            &mut chain.sampling
        };
        table.push(draw.stats, draw.values)
    }

    fn finish(&mut self, timing: &Timing) -> io::Result<()> {
        self.draws.lock().timing = Some(*timing);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StatColumn;

    #[test]
    fn draws_are_stored_column_by_column_and_warmup_only_when_asked() {
        let stats = [StatColumn::real("lp__"), StatColumn::flag("divergent__")];
        let names = vec!["a".to_string(), "b.1".to_string(), "b.2".to_string()];
        let columns = Columns {
            stats: &stats,
            values: &names,
        };
        for keep_warmup in [false, true] {
            let kept = KeptDraws {
                warmup: 1,
                sampling: 2,
            };
            let (mut sink, handle) = MemorySink::new(7, kept, keep_warmup);
            sink.begin(&columns).unwrap();
            let mut draw = |warmup, i: f64| {
                sink.draw(&Draw {
                    warmup,
                    stats: &[-i, 0.0],
                    values: &[i, 10.0 * i, 100.0 * i],
                })
                .unwrap()
            };
            draw(true, 0.5);
            draw(false, 1.0);
            draw(false, 2.0);
            let error = sink
                .draw(&Draw {
                    warmup: false,
                    stats: &[0.0, 0.0],
                    values: &[1.0],
                })
                .unwrap_err();
            assert!(error.to_string().contains("for 2 and 3 columns"), "{error}");
            sink.finish(&Timing::default()).unwrap();
            let chain = handle.take();
            assert_eq!(chain.chain_id, 7);
            assert_eq!(chain.names, names);
            assert_eq!(chain.sampling.values[1], [10.0, 20.0]);
            assert_eq!(chain.stat("lp__"), Some(&[-1.0, -2.0][..]));
            assert_eq!(chain.sampling.len(), 2);
            assert_eq!(chain.warmup.len(), usize::from(keep_warmup));
            assert!(chain.timing.is_some());
        }
    }
}
