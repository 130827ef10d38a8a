//! Helpers shared by the tests that run the `hazel` binary.
// Each test file uses a different subset.
#![allow(dead_code)]

pub mod draws;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The path of a file of a bundled example, `examples/<name>/<file>`.
pub fn example(name: &str, file: &str) -> String {
    repo()
        .join("examples")
        .join(name)
        .join(file)
        .to_string_lossy()
        .into_owned()
}

/// Runs `hazel` with `args` from the current directory, without colour.
pub fn hazel(args: &[&str]) -> Output {
    hazel_in(Path::new("."), args)
}

/// Runs `hazel` with `args` from `dir`, without colour.
pub fn hazel_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hazel"))
        .current_dir(dir)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run hazel")
}

/// A fresh, empty directory for one test (unique per test process).
pub fn scratch_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hazel-{}-{test}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// Program output as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A logistic regression of 4,500 rows (three chunks: `data` mode splits it).
pub fn logistic_files(dir: &Path) -> (String, String) {
    let program = dir.join("model.stan");
    std::fs::write(
        &program,
        "data { int N; int K; matrix[N, K] X; array[N] int<lower=0, upper=1> y; }\n\
         parameters { real alpha; vector[K] beta; }\n\
         model { alpha ~ normal(0, 2); beta ~ normal(0, 1); y ~ bernoulli_logit(X * beta + alpha); }\n",
    )
    .unwrap();
    let (n, k) = (4_500, 3);
    let mut rng = hazel_testdata::Xorshift(0x9e37_79b9_7f4a_7c15);
    let mut next = move || rng.centred();
    let beta = [1.0, -0.5, 0.25];
    let mut rows = Vec::new();
    let mut ys = Vec::new();
    for _ in 0..n {
        let x: Vec<f64> = (0..k).map(|_| (4.0 * next() * 1e4).round() / 1e4).collect();
        let eta: f64 = 0.3 + x.iter().zip(beta).map(|(a, b)| a * b).sum::<f64>();
        ys.push(u8::from(next() + 0.5 < 1.0 / (1.0 + (-eta).exp())).to_string());
        rows.push(format!(
            "[{}]",
            x.iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ));
    }
    let data = dir.join("data.json");
    std::fs::write(
        &data,
        format!(
            r#"{{"N": {n}, "K": {k}, "X": [{}], "y": [{}]}}"#,
            rows.join(","),
            ys.join(",")
        ),
    )
    .unwrap();
    (program.display().to_string(), data.display().to_string())
}
