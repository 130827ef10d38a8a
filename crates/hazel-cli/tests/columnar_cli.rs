//! `hazel sample --format parquet|zarr` and `hazel summary` on those outputs. With the features
//! (`--features parquet,zarr`): one seed written as CSV, Parquet and Zarr gives the same summary
//! from `sample` and from `summary`. Without them: a clear error before any work.

mod common;
use common::*;

fn run_sample(dir: &std::path::Path, format: &str) -> std::process::Output {
    let args: Vec<String> = [
        "sample",
        &example("bernoulli", "model.stan"),
        "--data",
        &example("bernoulli", "data.json"),
        "--output-dir",
        dir.to_str().unwrap(),
        "--seed",
        "99",
        "--chains",
        "2",
        "--warmup",
        "100",
        "--draws",
        "60",
        "--quiet",
        "--format",
        format,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    hazel(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

#[cfg(all(feature = "parquet", feature = "zarr"))]
#[test]
fn the_three_formats_give_the_same_summary() {
    let base = scratch_dir("columnar");
    let mut tables = Vec::new();
    for format in ["csv", "parquet", "zarr"] {
        let dir = base.join(format);
        let output = run_sample(&dir, format);
        assert!(
            output.status.success(),
            "{format}: {}",
            text(&output.stderr)
        );
        let files: Vec<String> = match format {
            "zarr" => vec![dir.join("model.zarr").display().to_string()],
            _ => (1..=2)
                .map(|c| {
                    dir.join(format!("model-{c}.{format}"))
                        .display()
                        .to_string()
                })
                .collect(),
        };
        let mut args = vec!["summary"];
        args.extend(files.iter().map(String::as_str));
        let summary = hazel(&args);
        assert!(
            summary.status.success(),
            "{format}: {}",
            text(&summary.stderr)
        );
        assert_eq!(text(&output.stdout), text(&summary.stdout), "{format}");
        tables.push(text(&summary.stdout));
    }
    assert!(tables[0].contains("\ntheta "), "{}", tables[0]);
    assert_eq!(tables[0], tables[1], "parquet");
    assert_eq!(tables[0], tables[2], "zarr");
}

#[cfg(not(feature = "parquet"))]
#[test]
fn parquet_without_the_feature_is_a_clear_error() {
    let dir = scratch_dir("columnar-off");
    let output = run_sample(&dir, "parquet");
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("--features parquet"), "{stderr}");
    assert!(!dir.join("model-1.parquet").exists());
}
