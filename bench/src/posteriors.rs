//! The posteriors the sampler benchmarks run: posteriordb's tiers (those with a program in
//! `corpus/posteriordb/` and a reference) and the bundled examples, each compiled in process.

use hazel_diagnostics::reference::ReferenceQuantity;
use std::path::{Path, PathBuf};

/// A posterior to run.
pub struct Target {
    /// posteriordb's name (`arma-arma11`), or `examples/<name>`.
    pub name: String,
    pub program: PathBuf,
    pub data: Option<PathBuf>,
    /// posteriordb's reference quantities (none for an example).
    pub reference: Option<Vec<ReferenceQuantity>>,
    /// The reference run's `adapt_delta` and `max_treedepth`, when it changed them.
    pub adapt_delta: Option<f64>,
    pub max_depth: Option<u32>,
}

/// The repository's root (this crate's parent).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// posteriordb's posteriors of `tiers` (found through `HAZEL_POSTERIORDB` or `../shared`), then
/// the bundled examples when `examples`.
pub fn targets(repo: &Path, tiers: &[u64], examples: bool) -> Result<Vec<Target>, String> {
    let mut out = Vec::new();
    let suite = hazel_testdata::posteriordb_location();
    if suite.join("suite.json").exists() {
        let read = |p: &Path| -> Result<serde_json::Value, String> {
            let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))
        };
        let index = read(&suite.join("suite.json"))?;
        for entry in index["posteriors"].as_array().into_iter().flatten() {
            let (Some(name), Some(tier)) = (entry["posterior"].as_str(), entry["tier"].as_u64())
            else {
                continue;
            };
            let program = repo
                .join("corpus/posteriordb")
                .join(name)
                .join("model.stan");
            let reference_path = suite.join(name).join("reference.json");
            if !tiers.contains(&tier) || !program.exists() || !reference_path.exists() {
                continue;
            }
            let info = read(&suite.join(name).join("info.json"))?;
            let control = &info["reference"]["method_arguments"]["control"];
            out.push(Target {
                name: name.to_string(),
                program,
                data: Some(suite.join(name).join("data.json")),
                reference: Some(hazel_cli::compare::read_reference(&reference_path)?),
                adapt_delta: control["adapt_delta"].as_f64(),
                max_depth: control["max_treedepth"].as_u64().map(|d| d as u32),
            });
        }
    } else {
        eprintln!(
            "posteriordb not found at {} (set HAZEL_POSTERIORDB): examples only",
            suite.display()
        );
    }
    if examples {
        let dir = repo.join("examples");
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .filter_map(|e| e.ok())
            .filter(|e| e.path().join("model.stan").exists())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for name in names {
            let data = dir.join(&name).join("data.json");
            out.push(Target {
                name: format!("examples/{name}"),
                program: dir.join(&name).join("model.stan"),
                data: data.exists().then_some(data),
                reference: None,
                adapt_delta: None,
                max_depth: None,
            });
        }
    }
    Ok(out)
}

/// Checks and compiles a target's program with its data (default compile options).
pub fn compile_target(target: &Target) -> Result<hazel_graph::CompiledModel, String> {
    let checked = hazel_check::check_file(&target.program, &[])
        .map_err(|e| e.to_string())?
        .checked
        .ok_or("the program does not check")?;
    let data = match &target.data {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
            hazel_data::DataFile::parse(&text).map_err(|e| e.to_string())?
        }
        None => hazel_data::DataFile::empty(),
    };
    hazel_graph::compile(&checked, &data, &hazel_graph::CompileOptions::default())
        .map_err(|e| format!("{e:?}"))
}

/// The output columns a target is judged on: its reference quantities' CSV names, or every
/// output column of an example.
pub fn judged_columns(target: &Target, names: &[String]) -> Vec<String> {
    match &target.reference {
        Some(reference) => reference
            .iter()
            .map(|r| hazel_diagnostics::reference::csv_column_name(&r.name))
            .collect(),
        None => names.to_vec(),
    }
}
