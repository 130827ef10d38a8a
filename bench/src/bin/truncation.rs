//! The cost of a truncated density: log density + gradient of the bundled truncated-normal
//! example (`y[n] ~ normal(mu, sigma) T[1, 2]` in a loop, which hazel batches into one density
//! op and one normaliser emitted once, times its count) against the same density with each
//! statement's normaliser written out by hand (`normal_lupdf` and
//! `-log_diff_exp(normal_lcdf(2 | …), normal_lcdf(1 | …))` per row), measured in the same run.
//! Both programs give the same log density (`crates/hazel-graph/tests/truncation.rs`); the
//! hand-written one is `crates/hazel-graph/tests/fixtures/truncated_normal_by_hand.stan`.
//!
//! Run: `cargo run --release -p hazel-bench --bin truncation`. Prints µs per gradient of each
//! form, the ratio hand-written / `T[L, U]`, and the op count of each static graph.

use hazel_bench::time_call;
use hazel_density::LogDensity;
use hazel_graph::{compile, CompileOptions, CompiledModel};

fn build(src: &str, data: &hazel_data::DataFile) -> CompiledModel {
    let parsed = hazel_check::check_source("model.stan", src);
    let program = parsed
        .checked
        .clone()
        .unwrap_or_else(|| panic!("check: {}", parsed.render_diagnostics()));
    compile(&program, data, &CompileOptions::default())
        .unwrap_or_else(|e| panic!("compile: {}", e.render(&parsed.sources)))
}

/// Median µs per log density + gradient, over points that differ in their last bits so
/// nothing can be cached between calls.
fn micros_per_gradient(m: &CompiledModel) -> f64 {
    let mut ws = m.new_workspace();
    let mut g = [0.0; 2];
    let mut i = 0usize;
    let mut sink = 0.0;
    let seconds = time_call(|| {
        let q = [1.4 + 1e-6 * (i % 7) as f64, -1.2];
        i += 1;
        sink += m
            .log_density_gradient(&mut ws, &q, &mut g)
            .expect("evaluates");
    });
    assert!(sink.is_finite());
    seconds * 1e6
}

fn read(path: &str) -> String {
    let path = hazel_testdata::repo_root().join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"))
}

fn main() {
    let data = hazel_data::DataFile::parse(&read("examples/truncated_normal/data.json"))
        .expect("example data");
    let truncated = build(&read("examples/truncated_normal/model.stan"), &data);
    let by_hand = build(
        &read("crates/hazel-graph/tests/fixtures/truncated_normal_by_hand.stan"),
        &data,
    );
    let ops = |m: &CompiledModel| {
        m.graph()
            .map_or("dynamic".to_string(), |g| g.ops.len().to_string())
    };
    let t = micros_per_gradient(&truncated);
    let h = micros_per_gradient(&by_hand);
    println!("truncated_normal example, log density + gradient (median of 5 batches):");
    println!(
        "  T[1, 2]               {t:8.3} µs  ({} ops)",
        ops(&truncated)
    );
    println!(
        "  normaliser by hand    {h:8.3} µs  ({} ops)",
        ops(&by_hand)
    );
    println!("  ratio by hand / T[L, U]: {:.2}", h / t);
}
