//! Parse throughput: parses the given Stan files (or a generated program) repeatedly.
//! `cargo run --release -p hazel-syntax --example parse_speed -- corpus/posteriordb/*/model.stan`
use std::time::Instant;

fn generated_program(statements: usize) -> String {
    let mut s = String::from(
        "data { int N; vector[N] x; }\nparameters { real mu; real<lower=0> sigma; }\nmodel {\n",
    );
    for i in 0..statements {
        s.push_str(&format!(
            "  target += normal_lpdf(x[{i} % N + 1] | mu + {i}.5 * sigma ^ 2, sigma) - log1p(exp(-mu * {i}));\n"
        ));
    }
    s.push_str("}\n");
    s
}

fn main() {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    let sources: Vec<(String, String)> = if paths.is_empty() {
        vec![("generated.stan".to_string(), generated_program(20_000))]
    } else {
        paths
            .iter()
            .filter_map(|p| std::fs::read_to_string(p).ok().map(|t| (p.clone(), t)))
            .collect()
    };
    let bytes: usize = sources.iter().map(|(_, t)| t.len()).sum();
    let repeats = (20_000_000 / bytes.max(1)).clamp(1, 1000);
    let start = Instant::now();
    let mut errors = 0;
    for _ in 0..repeats {
        for (name, text) in &sources {
            let result = hazel_syntax::parse_str(name, text);
            errors += result.has_errors() as usize;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let total = (bytes * repeats) as f64;
    println!(
        "{} files, {} bytes, {} repeats: {:.3} s, {:.1} MB/s, {:.1} µs per file parse ({} with errors)",
        sources.len(),
        bytes,
        repeats,
        secs,
        total / secs / 1e6,
        secs * 1e6 / (repeats * sources.len()) as f64,
        errors / repeats
    );
}
