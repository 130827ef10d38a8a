//! Shared by the stanli-fixture tests (`library_oracle`, `dist_library`, …): compile a program
//! and compare its log density and gradient with a fixture file's seeded points.
//!
//! A fixture file is `{"programs": [{name, program, data, n_unconstrained, points: [{q,
//! log_density, gradient, fd_gradient?}]}]}`, made by a script under `scripts/` that names
//! itself in the file's `generator` field.
#![allow(dead_code)] // each test binary uses its own subset

use hazel_density::LogDensity;
use hazel_graph::{compile, CompileOptions, CompiledModel};
use serde_json::Value;

/// Relative tolerance against stanli's log density and gradient.
pub const TOL: f64 = 1e-8;
/// Against central differences of stanli's log density (`fd_gradient`, step 1e-6).
pub const FD_TOL: f64 = 1e-6;

/// Checks a program and compiles it with the data; errors rendered with their source lines.
pub fn build(src: &str, data: &str) -> Result<CompiledModel, String> {
    let parsed = hazel_check::check_source("model.stan", src);
    let program = parsed
        .checked
        .as_ref()
        .ok_or_else(|| format!("check error: {}", parsed.render_diagnostics()))?;
    let data = hazel_data::DataFile::parse(data).map_err(|e| format!("data: {e}"))?;
    compile(program, &data, &CompileOptions::default())
        .map_err(|e| format!("compile: {}", e.render(&parsed.sources)))
}

/// `|a − b|` relative to the larger magnitude, absolute below 1.
pub fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(1.0)
}

pub fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

/// The programs of `tests/fixtures/<file>`.
pub fn fixture_programs(file: &str) -> Vec<Value> {
    let path = format!("{}/tests/fixtures/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let v: Value = serde_json::from_str(&text).expect("fixture json");
    v["programs"].as_array().expect("programs").clone()
}

/// How a program's gradient is judged where the fixture carries `fd_gradient`.
#[derive(Clone, Copy)]
pub enum FdRule {
    /// Within `FD_TOL` of the finite differences *and* within `TOL` of stanli.
    Both,
    /// Stan's own gradient is approximate there: within `FD_TOL` of the finite differences
    /// and within this looser tolerance of stanli.
    ApproximateStan(f64),
}

/// Compares one fixture program at each of its points.
pub fn check_program(p: &Value, fd_rule: FdRule) -> Result<(), String> {
    let model = build(
        p["program"].as_str().expect("program"),
        p["data"].as_str().expect("data"),
    )?;
    let n = p["n_unconstrained"].as_u64().expect("dim") as usize;
    if model.dim() != n {
        return Err(format!("dimension {} vs stanli {n}", model.dim()));
    }
    let mut ws = model.new_workspace();
    let mut grad = vec![0.0; n];
    for (k, pt) in p["points"].as_array().expect("points").iter().enumerate() {
        let q = floats(&pt["q"]);
        let lp_ref = pt["log_density"].as_f64().expect("lp");
        let g_ref = floats(&pt["gradient"]);
        let lp = model
            .log_density_gradient(&mut ws, &q, &mut grad)
            .map_err(|e| format!("point {k}: {e}"))?;
        if rel(lp, lp_ref) > TOL {
            return Err(format!("point {k}: log density {lp} vs stanli {lp_ref}"));
        }
        let fd = pt.get("fd_gradient").map(floats);
        let stan_tol = match (&fd, fd_rule) {
            (Some(_), FdRule::ApproximateStan(t)) => t,
            _ => TOL,
        };
        for i in 0..n {
            if let Some(fd) = &fd {
                if rel(grad[i], fd[i]) > FD_TOL {
                    return Err(format!(
                        "point {k}: gradient[{i}] {} vs finite difference {}",
                        grad[i], fd[i]
                    ));
                }
            }
            if rel(grad[i], g_ref[i]) > stan_tol {
                return Err(format!(
                    "point {k}: gradient[{i}] {} vs stanli {}",
                    grad[i], g_ref[i]
                ));
            }
        }
    }
    Ok(())
}

/// Checks every program of `file` whose name starts with one of `prefixes` (all of them when
/// `prefixes` is empty), failing with every mismatch; at least `min` must be present.
pub fn run_group(file: &str, prefixes: &[&str], min: usize, fd_rule: FdRule) {
    let progs: Vec<Value> = fixture_programs(file)
        .into_iter()
        .filter(|p| {
            let name = p["name"].as_str().unwrap_or("");
            prefixes.is_empty() || prefixes.iter().any(|x| name.starts_with(x))
        })
        .collect();
    assert!(progs.len() >= min, "{file} has {} programs", progs.len());
    let mut failures = Vec::new();
    for p in &progs {
        let name = p["name"].as_str().unwrap_or("?");
        match check_program(p, fd_rule) {
            Ok(()) => println!("{name}: ok"),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
