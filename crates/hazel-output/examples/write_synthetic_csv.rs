//! Writes four chains of synthetic draws through the `DrawSink` interface, exactly as a
//! sampler run would, so external readers can be tried on hazel's CSV without a sampler:
//!
//!     cargo run -p hazel-output --example write_synthetic_csv -- OUT_DIR [--save-warmup]
//!     python scripts/read_with_cmdstanpy.py OUT_DIR/synthetic_*.csv
//!
//! The draws are AR(1) series (so ESS is below the draw count) around known means:
//! `mu` ≈ 1, `tau` ≈ exp(normal), `theta.1..3` ≈ −1, 0, 1.

use hazel_draws::{AdaptationInfo, Columns, Draw, DrawSink, InverseMetric, Timing};
use hazel_nuts::{DrawStats, RunConfig};
use hazel_output::{CsvHeaderInfo, StanCsvWriter};
use hazel_rng::{Purpose, StreamRng};
use std::path::PathBuf;
use std::time::Duration;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(out_dir) = args.first().map(PathBuf::from) else {
        return Err("usage: write_synthetic_csv OUT_DIR [--save-warmup]".into());
    };
    std::fs::create_dir_all(&out_dir)?;
    let mut run = RunConfig {
        seed: 2026,
        chains: 4,
        ..RunConfig::default()
    };
    run.sampler.num_warmup = 200;
    run.sampler.num_samples = 500;
    run.sampler.save_warmup = args.iter().any(|a| a == "--save-warmup");
    let names: Vec<String> = ["mu", "tau", "theta.1", "theta.2", "theta.3"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for chain in 0..run.chains {
        let path = out_dir.join(format!("synthetic_{}.csv", chain + 1));
        let header = CsvHeaderInfo::new(
            "synthetic",
            "",
            &path.display().to_string(),
            &run.info(),
            chain,
        );
        let mut sink = StanCsvWriter::create(&path, header)?;
        let mut rng = StreamRng::new(run.seed, chain as u64 + 1, Purpose::Sampler);
        let mut state = [0.0; 5];
        let mut step = |rng: &mut StreamRng| -> (DrawStats, Vec<f64>) {
            for s in state.iter_mut() {
                *s = 0.6 * *s + 0.8 * rng.normal();
            }
            let values = vec![
                1.0 + state[0],
                state[1].exp(),
                -1.0 + state[2],
                state[3],
                1.0 + state[4],
            ];
            let lp = -0.5 * state.iter().map(|s| s * s).sum::<f64>();
            let stats = DrawStats {
                lp,
                accept_stat: rng.uniform_range(0.7, 1.0),
                stepsize: 0.6,
                treedepth: 2,
                n_leapfrog: 3,
                divergent: false,
                energy: -lp + 0.5 * (rng.normal().powi(2) + rng.normal().powi(2)),
            };
            (stats, values)
        };
        sink.begin(&Columns {
            stats: DrawStats::columns(),
            values: &names,
        })?;
        for _ in 0..run.sampler.num_warmup {
            let (stats, values) = step(&mut rng);
            if run.sampler.save_warmup {
                sink.draw(&Draw {
                    warmup: true,
                    stats: &stats.values(),
                    values: &values,
                })?;
            }
        }
        sink.adaptation_done(&AdaptationInfo::Hmc {
            stepsize: 0.6,
            inv_metric: &InverseMetric::Diag(vec![1.0, 0.5, 1.0, 1.0, 1.0]),
        })?;
        for _ in 0..run.sampler.num_samples {
            let (stats, values) = step(&mut rng);
            sink.draw(&Draw {
                warmup: false,
                stats: &stats.values(),
                values: &values,
            })?;
        }
        sink.finish(&Timing {
            warmup: Duration::from_millis(12),
            sampling: Duration::from_millis(30),
        })?;
        println!("{}", path.display());
    }
    Ok(())
}
