//! Shared pieces of the sampler's integration tests: test densities, an in-memory sink, and a
//! self-contained effective sample size estimator (Geyer's initial positive and monotone
//! sequence), so these tests do not depend on `hazel-diagnostics`.
// Each test file uses a different subset.
#![allow(dead_code, unused_imports)]

pub use hazel_density::IndependentNormal;
use hazel_density::{EvalError, LogDensity, Unconstrained};
use hazel_draws::{AdaptationInfo, Columns};
use hazel_nuts::{DrawSink, DrawStats, InverseMetric, Progress, RunConfig, RunReport, Timing};
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Neal's funnel in `dim` dimensions: v ~ N(0, 3), x_i | v ~ N(0, exp(v/2)), i = 1..dim−1;
/// divergent in warmup and after. With `reject_above`, a rejection where v exceeds it (errors
/// on trajectories).
pub struct Funnel {
    pub dim: usize,
    pub reject_above: Option<f64>,
}

/// The 10-dimensional funnel without rejections.
pub const FUNNEL: Funnel = Funnel {
    dim: 10,
    reject_above: None,
};

impl LogDensity for Funnel {
    type Workspace = ();
    fn dim(&self) -> usize {
        self.dim
    }
    fn new_workspace(&self) {}
    fn log_density_gradient(&self, _: &mut (), q: &[f64], g: &mut [f64]) -> Result<f64, EvalError> {
        let v = q[0];
        if self.reject_above.is_some_and(|limit| v > limit) {
            return Err(EvalError::reject("v too large"));
        }
        // The log normalising constants of the x_i: −(dim − 1)/2 · v.
        let half_count = (self.dim - 1) as f64 / 2.0;
        let mut lp = -v * v / 18.0 - half_count * v;
        g[0] = -v / 9.0 - half_count;
        let precision = (-v).exp();
        for i in 1..self.dim {
            lp -= 0.5 * q[i] * q[i] * precision;
            g[i] = -q[i] * precision;
            g[0] += 0.5 * q[i] * q[i] * precision;
        }
        Ok(lp)
    }
}

/// A bivariate normal with means `mean`, standard deviations `sd` and correlation `rho`.
pub struct Bivariate {
    pub mean: [f64; 2],
    pub sd: [f64; 2],
    pub rho: f64,
}

impl LogDensity for Bivariate {
    type Workspace = ();
    fn dim(&self) -> usize {
        2
    }
    fn new_workspace(&self) {}
    fn log_density_gradient(&self, _: &mut (), q: &[f64], g: &mut [f64]) -> Result<f64, EvalError> {
        let a = (q[0] - self.mean[0]) / self.sd[0];
        let b = (q[1] - self.mean[1]) / self.sd[1];
        let c = 1.0 - self.rho * self.rho;
        let lp = -0.5 * (a * a - 2.0 * self.rho * a * b + b * b) / c;
        g[0] = -(a - self.rho * b) / (c * self.sd[0]);
        g[1] = -(b - self.rho * a) / (c * self.sd[1]);
        Ok(lp)
    }
}

/// One kept draw.
#[derive(Debug, Clone, PartialEq)]
pub struct Draw {
    pub warmup: bool,
    pub stats: DrawStats,
    pub values: Vec<f64>,
}

impl Draw {
    /// The draw as bits (NaN-safe equality): its statistics, the phase, its values.
    pub fn bits(&self) -> Vec<u64> {
        let s = self.stats;
        let mut v = vec![
            s.lp.to_bits(),
            s.accept_stat.to_bits(),
            s.stepsize.to_bits(),
            s.treedepth as u64,
            s.n_leapfrog as u64,
            s.divergent as u64,
            s.energy.to_bits(),
            self.warmup as u64,
        ];
        v.extend(self.values.iter().map(|x| x.to_bits()));
        v
    }
}

/// Everything one chain's sink received.
#[derive(Debug, Default, Clone)]
pub struct Received {
    /// The statistic columns' names (`lp__`, …).
    pub stat_names: Vec<String>,
    pub names: Vec<String>,
    pub draws: Vec<Draw>,
    pub adaptation: Option<(f64, InverseMetric)>,
    pub finished: bool,
}

impl Received {
    /// Records the calls of the draw contract (shared by the tests' sinks).
    pub fn begin(&mut self, columns: &Columns<'_>) {
        self.stat_names = columns.stats.iter().map(|c| c.name.to_string()).collect();
        self.names = columns.values.to_vec();
    }
    pub fn adaptation_done(&mut self, adaptation: &AdaptationInfo<'_>) {
        let AdaptationInfo::Hmc {
            stepsize,
            inv_metric,
        } = *adaptation
        else {
            panic!("NUTS reports HMC adaptation");
        };
        self.adaptation = Some((stepsize, inv_metric.clone()));
    }
    pub fn draw(&mut self, draw: &hazel_draws::Draw<'_>) {
        assert_eq!(draw.stats.len(), self.stat_names.len());
        self.draws.push(Draw {
            warmup: draw.warmup,
            stats: DrawStats::from_values(draw.stats),
            values: draw.values.to_vec(),
        });
    }
}

/// A sink that stores what it receives behind a shared handle.
pub struct MemorySink(pub Arc<Mutex<Received>>);

impl DrawSink for MemorySink {
    fn begin(&mut self, columns: &Columns<'_>) -> io::Result<()> {
        self.0.lock().unwrap().begin(columns);
        Ok(())
    }
    fn adaptation_done(&mut self, adaptation: &AdaptationInfo<'_>) -> io::Result<()> {
        self.0.lock().unwrap().adaptation_done(adaptation);
        Ok(())
    }
    fn draw(&mut self, draw: &hazel_draws::Draw<'_>) -> io::Result<()> {
        self.0.lock().unwrap().draw(draw);
        Ok(())
    }
    fn finish(&mut self, _: &Timing) -> io::Result<()> {
        self.0.lock().unwrap().finished = true;
        Ok(())
    }
}

/// Counts progress calls and keeps the messages.
#[derive(Default)]
pub struct RecordingProgress {
    pub iterations: AtomicUsize,
    pub messages: Mutex<Vec<(usize, String)>>,
}

impl Progress for RecordingProgress {
    fn iteration(&self, _: usize, _: usize, _: bool, _: usize) {
        self.iterations.fetch_add(1, Ordering::Relaxed);
    }
    fn message(&self, chain: usize, message: &str) {
        self.messages
            .lock()
            .unwrap()
            .push((chain, message.to_string()));
    }
}

/// Runs `model` with `config` into memory sinks; returns the report and each chain's output.
pub fn run_in_memory<D: LogDensity>(
    density: D,
    config: &RunConfig,
    progress: &dyn Progress,
) -> (RunReport, Vec<Received>) {
    let model = Unconstrained::new(density, "x");
    let handles: Vec<Arc<Mutex<Received>>> = (0..config.chains).map(|_| Arc::default()).collect();
    let sinks: Vec<Box<dyn DrawSink>> = handles
        .iter()
        .map(|h| Box::new(MemorySink(h.clone())) as Box<dyn DrawSink>)
        .collect();
    let report = hazel_nuts::run(&model, config, sinks, progress).expect("run starts");
    let received = handles.iter().map(|h| h.lock().unwrap().clone()).collect();
    (report, received)
}

/// Post-warmup values of column `col`, one vector per chain.
pub fn column(chains: &[Received], col: usize) -> Vec<Vec<f64>> {
    chains
        .iter()
        .map(|c| {
            c.draws
                .iter()
                .filter(|d| !d.warmup)
                .map(|d| d.values[col])
                .collect()
        })
        .collect()
}

/// Effective sample size of one chain by Geyer's initial positive sequence with the initial
/// monotone sequence adjustment (the estimator Stan used before rank normalisation).
pub fn ess_one_chain(x: &[f64]) -> f64 {
    let n = x.len();
    let mean = x.iter().sum::<f64>() / n as f64;
    let autocov = |lag: usize| -> f64 {
        (0..n - lag)
            .map(|i| (x[i] - mean) * (x[i + lag] - mean))
            .sum::<f64>()
            / n as f64
    };
    let c0 = autocov(0);
    if c0 == 0.0 {
        return n as f64;
    }
    let mut sum_pairs = 0.0;
    let mut previous_pair = f64::INFINITY;
    let mut k = 0;
    while 2 * k + 1 < n {
        let pair = (autocov(2 * k) + autocov(2 * k + 1)) / c0;
        if pair <= 0.0 {
            break;
        }
        let pair = pair.min(previous_pair);
        sum_pairs += pair;
        previous_pair = pair;
        k += 1;
    }
    let tau = (-1.0 + 2.0 * sum_pairs).max(1.0 / (n as f64).log10());
    n as f64 / tau
}

/// Mean, its Monte Carlo standard error (pooled sd over the summed per-chain ESS), and the ESS.
pub fn mean_and_mcse(chains: &[Vec<f64>]) -> (f64, f64, f64) {
    let all: Vec<f64> = chains.iter().flatten().copied().collect();
    let n = all.len() as f64;
    let mean = all.iter().sum::<f64>() / n;
    let var = all.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
    let ess: f64 = chains.iter().map(|c| ess_one_chain(c)).sum();
    (mean, (var / ess).sqrt(), ess)
}

/// Checks E[x] = `true_mean` within `z_mean` MCSEs and E[(x − true_mean)²] = `true_var` within
/// `z_var` MCSEs; returns a description of the first failure.
pub fn check_moments(
    chains: &[Vec<f64>],
    true_mean: f64,
    true_var: f64,
    z_mean: f64,
    z_var: f64,
    label: &str,
) -> Result<(), String> {
    let (mean, mcse, ess) = mean_and_mcse(chains);
    if (mean - true_mean).abs() > z_mean * mcse {
        return Err(format!(
            "{label}: mean {mean} vs {true_mean}, mcse {mcse}, ess {ess}"
        ));
    }
    let squares: Vec<Vec<f64>> = chains
        .iter()
        .map(|c| {
            c.iter()
                .map(|x| (x - true_mean) * (x - true_mean))
                .collect()
        })
        .collect();
    let (var, var_mcse, var_ess) = mean_and_mcse(&squares);
    if (var - true_var).abs() > z_var * var_mcse {
        return Err(format!(
            "{label}: variance {var} vs {true_var}, mcse {var_mcse}, ess {var_ess}"
        ));
    }
    Ok(())
}

/// A sink that fails at its 10th draw (the count starts at the field's value).
pub struct FailingSink(pub usize);

impl DrawSink for FailingSink {
    fn begin(&mut self, _: &Columns<'_>) -> io::Result<()> {
        Ok(())
    }
    fn draw(&mut self, _: &hazel_draws::Draw<'_>) -> io::Result<()> {
        self.0 += 1;
        if self.0 == 10 {
            return Err(io::Error::other("disk full"));
        }
        Ok(())
    }
    fn finish(&mut self, _: &Timing) -> io::Result<()> {
        Ok(())
    }
}
