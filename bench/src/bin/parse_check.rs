//! Front-end speed: parse + check of a generated ~2,000-line Stan model.
//!
//! Run: `cargo run --release -p hazel-bench --bin parse_check [-- RUNS]`.
//! Prints the line count, the best and median wall time of parse + check over RUNS runs
//! (default 30), and the split between parsing and checking. Target: under 10 ms.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// A model with many declarations, loops, expressions and `~` statements, built from `groups`
/// repetitions of a block of related code (each group adds ~10 lines per block).
fn generate_model(groups: usize) -> String {
    let mut data = String::new();
    let mut tdata = String::new();
    let mut params = String::new();
    let mut tparams = String::new();
    let mut model = String::new();
    let mut gq = String::new();
    let mut functions = String::new();
    writeln!(data, "  int<lower=1> N;\n  int<lower=1> K;").unwrap();
    for g in 0..groups {
        writeln!(
            functions,
            "  real f{g}(real a, vector b) {{\n    real acc = a;\n    for (i in 1:rows(b)) {{\n      acc += b[i] * {g}.5;\n    }}\n    return acc;\n  }}"
        )
        .unwrap();
        writeln!(
            data,
            "  vector[N] y{g};\n  matrix[N, K] X{g};\n  array[N] int<lower=0> n{g};"
        )
        .unwrap();
        writeln!(
            tdata,
            "  real mean_y{g} = mean(y{g});\n  vector[N] centred{g} = (y{g} - mean_y{g}) / sd(y{g});\n  array[N] real logn{g};\n  for (i in 1:N) {{\n    logn{g}[i] = log1p(n{g}[i]);\n  }}"
        )
        .unwrap();
        writeln!(
            params,
            "  real mu{g};\n  real<lower=0> sigma{g};\n  vector[K] beta{g};\n  vector<lower=-1, upper=1>[N] z{g};"
        )
        .unwrap();
        writeln!(
            tparams,
            "  vector[N] eta{g} = X{g} * beta{g} + mu{g};\n  real s{g} = f{g}(mu{g}, beta{g});"
        )
        .unwrap();
        writeln!(
            model,
            "  mu{g} ~ normal(0, 5);\n  sigma{g} ~ student_t(3, 0, 2.5);\n  beta{g} ~ normal(0, 1);\n  centred{g} ~ normal(eta{g}, sigma{g});\n  n{g} ~ poisson_log(eta{g} * 0.1);\n  for (i in 1:N) {{\n    if (z{g}[i] > 0 && i % 2 == 0) {{\n      target += -0.5 * square(z{g}[i] - logn{g}[i]) + log_sum_exp(eta{g}[i], s{g});\n    }} else {{\n      z{g}[i] ~ normal(eta{g}[i] / (1 + exp(-mu{g})), sigma{g} + 1e-3);\n    }}\n  }}"
        )
        .unwrap();
        writeln!(
            gq,
            "  array[N] real yrep{g} = normal_rng(eta{g}, sigma{g});\n  real lp{g} = normal_lpdf(centred{g} | eta{g}, sigma{g});"
        )
        .unwrap();
    }
    format!(
        "functions {{\n{functions}}}\ndata {{\n{data}}}\ntransformed data {{\n{tdata}}}\nparameters {{\n{params}}}\ntransformed parameters {{\n{tparams}}}\nmodel {{\n{model}}}\ngenerated quantities {{\n{gq}}}\n"
    )
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(30)
        .max(1);
    let mut groups = 1;
    let mut text = generate_model(groups);
    while text.lines().count() < 2000 {
        groups += 1;
        text = generate_model(groups);
    }
    let lines = text.lines().count();

    // One validated run first: the benchmark measures a program that checks clean.
    let result = hazel_check::check_source("bench.stan", &text);
    if result.has_errors() {
        eprintln!(
            "generated model does not check:\n{}",
            result.render_diagnostics()
        );
        std::process::exit(1);
    }

    let mut totals = Vec::with_capacity(runs);
    let mut parses = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        let parsed = hazel_syntax::parse_str("bench.stan", &text);
        let parsed_at = Instant::now();
        let program = parsed.program.expect("generated model parses");
        let (checked, diags) = hazel_check::check(&program);
        let end = Instant::now();
        assert!(checked.is_some() && diags.iter().all(|d| !d.is_error()));
        parses.push(parsed_at - start);
        totals.push(end - start);
    }
    totals.sort();
    parses.sort();
    let best = totals[0];
    let median = totals[runs / 2];
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "parse_check: {lines} lines, {} bytes, {runs} runs: best {:.3} ms, median {:.3} ms \
         (best parse {:.3} ms, check ≈ {:.3} ms); target < 10 ms",
        text.len(),
        ms(best),
        ms(median),
        ms(parses[0]),
        ms(best) - ms(parses[0]),
    );
}
