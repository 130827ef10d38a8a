//! What writing draws costs against sampling (issue 14, item 4), on the non-centred
//! varying-intercept-and-slope regression of posteriordb's radon (85 groups, 900 observations,
//! 175 parameters, 170 transformed parameters; the data generated as in `gradient_vs_jax`).
//!
//! Usage: `cargo run --release -p hazel-bench --bin output_rows`.
//!
//! One chain (1000 warmup + 1000 draws, seed 1, one thread) gives the sampling time and the
//! mean number of leapfrog steps per iteration. Then, at the chain's last draw, in-process:
//! the cost of one output row on the compiled path (`Model::write_output`: one forward sweep
//! of the output graph) and on the re-traced path (`write_output_retraced`, what every row did
//! before), and of formatting a CSV row with the fast formatter (`write_number`) and with
//! `std::fmt` (`write_number_std`, the old one; same text), alternating, fastest of 20 rounds
//! of 200 rows. The table gives each per row and
//! the share of the chain's sampling time that 1000 rows (`--thin 1`) and 100 rows
//! (`--thin 10`) take.

use hazel_bench::time_call;
use hazel_density::{LogDensity, Model};
use hazel_draws::{Columns, Draw, DrawSink, Progress, Timing};
use hazel_graph::{compile, CompileOptions};
use hazel_nuts::{DrawStats, RunConfig, SamplerConfig};
use hazel_output::number::{write_number, write_number_std};
use hazel_rng::{Purpose, StreamRng};
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Instant;

fn radon_data(j: usize, n: usize, rng: &mut StreamRng) -> String {
    let a: Vec<f64> = (0..j).map(|_| 1.5 + 0.3 * rng.normal()).collect();
    let b: Vec<f64> = (0..j).map(|_| -0.6 + 0.2 * rng.normal()).collect();
    let (mut idx, mut floor, mut lr) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        let g = if i < j {
            i
        } else {
            ((rng.uniform() * j as f64) as usize).min(j - 1)
        };
        let f = if rng.bernoulli(0.2) { 1.0 } else { 0.0 };
        let v = a[g] + b[g] * f + 0.7 * rng.normal();
        idx.push((g + 1).to_string());
        floor.push(format!("{f}"));
        lr.push(format!("{}", (v * 1e4).round() / 1e4));
    }
    format!(
        "{{\"J\":{j},\"N\":{n},\"county_idx\":[{}],\"floor_measure\":[{}],\"log_radon\":[{}]}}",
        idx.join(","),
        floor.join(","),
        lr.join(",")
    )
}

#[derive(Default)]
struct Record {
    leapfrogs: u64,
    draws: u64,
    sampling_s: f64,
    last: Vec<f64>,
}

struct Sink(Arc<Mutex<Record>>);

impl DrawSink for Sink {
    fn begin(&mut self, _columns: &Columns<'_>) -> io::Result<()> {
        Ok(())
    }
    fn draw(&mut self, draw: &Draw<'_>) -> io::Result<()> {
        if !draw.warmup {
            let mut r = self.0.lock().expect("record");
            r.leapfrogs += u64::from(DrawStats::from_values(draw.stats).n_leapfrog);
            r.draws += 1;
            r.last = draw.values.to_vec();
        }
        Ok(())
    }
    fn finish(&mut self, timing: &Timing) -> io::Result<()> {
        self.0.lock().expect("record").sampling_s = timing.sampling.as_secs_f64();
        Ok(())
    }
}

struct Quiet;
impl Progress for Quiet {
    fn iteration(&self, _chain: usize, _iteration: usize, _warmup: bool, _divergences: usize) {}
}

fn main() {
    let root = hazel_testdata::repo_root();
    let src =
        std::fs::read_to_string(root.join(
            "corpus/posteriordb/radon_mn-radon_variable_intercept_slope_noncentered/model.stan",
        ))
        .expect("radon program");
    let data = radon_data(
        85,
        900,
        &mut StreamRng::new(20_251_125, 4, Purpose::TransformedData),
    );
    let parsed = hazel_check::check_source("model.stan", &src);
    let program = parsed.checked.as_ref().expect("radon checks");
    let data = hazel_data::DataFile::parse(&data).expect("data");
    let model = compile(program, &data, &CompileOptions::default()).expect("compile");
    assert_eq!(
        model.output_plan_split(),
        Some(false),
        "radon rows should be static"
    );

    let record = Arc::new(Mutex::new(Record::default()));
    let config = RunConfig {
        seed: 1,
        chains: 1,
        threads: 1,
        sampler: SamplerConfig::default(),
        ..RunConfig::default()
    };
    hazel_nuts::run(
        &model,
        &config,
        vec![Box::new(Sink(record.clone()))],
        &Quiet,
    )
    .expect("sampling");
    let r = record.lock().expect("record");
    let mean_leapfrog = r.leapfrogs as f64 / r.draws.max(1) as f64;

    // The chain's last row is a constrained point; its unconstrained point is read back
    // through the inits path (the parameters' columns come first).
    let names = model.output_names();
    let inits: Vec<String> = {
        let mut by_var: Vec<(String, Vec<f64>)> = Vec::new();
        for (name, v) in names.iter().zip(&r.last) {
            let var = name.split('.').next().unwrap_or(name).to_string();
            match by_var.last_mut() {
                Some((n, xs)) if *n == var => xs.push(*v),
                _ => by_var.push((var, vec![*v])),
            }
        }
        by_var
            .into_iter()
            .map(|(n, xs)| {
                let body: Vec<String> = xs.iter().map(|x| format!("{x:e}")).collect();
                if xs.len() == 1 && !names.iter().any(|c| c.starts_with(&format!("{n}."))) {
                    format!("\"{n}\":{}", body[0])
                } else {
                    format!("\"{n}\":[{}]", body.join(","))
                }
            })
            .collect()
    };
    let init_file =
        hazel_data::DataFile::parse(&format!("{{{}}}", inits.join(","))).expect("inits");
    let q = model
        .unconstrain_inits(&init_file, || 0.0)
        .expect("unconstrain");

    let mut ws = model.new_workspace();
    let mut grad = vec![0.0; model.dim()];
    let t_grad = time_call(|| {
        model
            .log_density_gradient(&mut ws, &q, &mut grad)
            .expect("gradient");
    });
    let mut rng = StreamRng::new(1, 1, Purpose::GeneratedQuantities);
    let mut out = vec![0.0; names.len()];
    model
        .write_output(&mut ws, &q, &mut rng, &mut out)
        .expect("row");
    let row = out.clone();
    let mut text = String::with_capacity(1 << 16);
    // The four row paths in turn, 20 rounds of 200 rows each; the fastest round of each (the
    // machine may be shared: alternating keeps the comparison fair).
    let mut best = [f64::INFINITY; 5];
    for _ in 0..20 {
        for (k, best) in best.iter_mut().enumerate() {
            let t0 = Instant::now();
            for _ in 0..200 {
                match k {
                    0 => model
                        .write_output_retraced(&q, &mut rng, &mut out)
                        .expect("row"),
                    1 => model
                        .write_output(&mut ws, &q, &mut rng, &mut out)
                        .expect("row"),
                    4 => {
                        // zmij's own text, for reference (not hazel's spelling).
                        text.clear();
                        let mut b = zmij::Buffer::new();
                        for &v in &row {
                            text.push(',');
                            text.push_str(b.format(v));
                        }
                    }
                    _ => {
                        text.clear();
                        for &v in &row {
                            text.push(',');
                            if k == 2 {
                                write_number_std(&mut text, v);
                            } else {
                                write_number(&mut text, v);
                            }
                        }
                    }
                }
            }
            *best = best.min(t0.elapsed().as_secs_f64() / 200.0);
        }
    }
    let [t_row_old, t_row_new, t_fmt_old, t_fmt_new, t_zmij] = best;
    let sampling = r.sampling_s;
    println!(
        "radon: {} parameters, {} columns; one chain: {} draws, sampling {:.3} s, {:.1} leapfrog steps per iteration, gradient {:.2} µs",
        model.dim(),
        names.len(),
        r.draws,
        sampling,
        mean_leapfrog,
        t_grad * 1e6
    );
    println!(
        "{:<34} {:>10} {:>14} {:>14}",
        "per row", "µs", "share thin 1", "share thin 10"
    );
    let rows = r.draws as f64;
    for (label, t) in [
        ("model row, re-traced (before)", t_row_old),
        ("model row, compiled (after)", t_row_new),
        ("CSV text, std::fmt (before)", t_fmt_old),
        ("CSV text, zmij (after)", t_fmt_new),
        ("(zmij's own text, reference)", t_zmij),
        ("both, before", t_row_old + t_fmt_old),
        ("both, after", t_row_new + t_fmt_new),
    ] {
        println!(
            "{label:<34} {:>10.2} {:>13.2}% {:>13.2}%",
            t * 1e6,
            100.0 * t * rows / sampling,
            100.0 * t * rows / 10.0 / sampling
        );
    }

    // The same model with posterior predictive draws in generated quantities (a split plan:
    // transformed parameters from the graph, the generated quantities re-traced per row).
    let src_gq = src.replace(
        "model {",
        "generated quantities {\n  array[N] real y_rep = normal_rng(alpha[county_idx] + floor_measure .* beta[county_idx], sigma_y);\n}\nmodel {",
    );
    let src_gq = {
        // generated quantities must come last
        let (head, rest) = src_gq.split_once("generated quantities {").expect("gq");
        let (gq, tail) = rest.split_once("}\n").expect("gq end");
        format!("{head}{tail}\ngenerated quantities {{{gq}}}\n")
    };
    let parsed = hazel_check::check_source("model.stan", &src_gq);
    let program = parsed
        .checked
        .as_ref()
        .unwrap_or_else(|| panic!("{}", parsed.render_diagnostics()));
    let model = compile(program, &data, &CompileOptions::default()).expect("compile");
    assert_eq!(
        model.output_plan_split(),
        Some(true),
        "y_rep needs a split plan"
    );
    let mut ws = model.new_workspace();
    let mut out = vec![0.0; model.output_names().len()];
    let mut best = [f64::INFINITY; 2];
    for _ in 0..20 {
        for (k, best) in best.iter_mut().enumerate() {
            let t0 = Instant::now();
            for _ in 0..50 {
                if k == 0 {
                    model
                        .write_output_retraced(&q, &mut rng, &mut out)
                        .expect("row");
                } else {
                    model
                        .write_output(&mut ws, &q, &mut rng, &mut out)
                        .expect("row");
                }
            }
            *best = best.min(t0.elapsed().as_secs_f64() / 50.0);
        }
    }
    println!(
        "with y_rep (900 normal_rng in generated quantities, {} columns): model row re-traced {:.2} µs, split plan {:.2} µs",
        out.len(),
        best[0] * 1e6,
        best[1] * 1e6
    );
}
