//! Every posteriordb program of the corpus against its stanli oracle: log density and gradient
//! at the fixture's unconstrained points within 1e-8 relative (ODE programs: 1e-6, see
//! `ODE_TOLERANCES`), the constrained parameters and
//! transformed parameters at the first point, and the gradient against central finite
//! differences.
//!
//! The data live beside the checkout (`../shared/posteriordb/<name>/data.json`); without them
//! the test prints a skip message. Programs that use features not lowered yet are listed in
//! `KNOWN_UNSUPPORTED`; any other failure fails the test, and a listed program that starts
//! passing is reported so the list can shrink.

use hazel_density::{LogDensity, Model, StreamRng};
use hazel_graph::{compile, CompileOptions};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Programs expected to fail for now, with the reason.
const KNOWN_UNSUPPORTED: &[(&str, &str)] = &[
    (
        "examples/truncated_normal",
        "stanli's normal_lcdf gradient is Stan Math's approximation (1.3e-5 relative off the central \
         difference of stanli's own log density); ours, from hazel_math, agrees with finite differences",
    ),
];

/// Programs that solve ODEs: (name, tolerance against the oracle, relative tolerance of the
/// finite-difference check, why). Adaptive solvers agree only to their step control: `ode_rk45`
/// reproduces Stan's step sequence (agreement is at rounding level unless a rounding
/// difference flips one accept/reject decision), `ode_bdf` is CVODES in Stan and
/// hazel's stiff SDIRK at tightened tolerances here. Forward sensitivities are the derivative of
/// the ODE solution, not of the discrete solver's output (whose step sizes move with the
/// parameters), so at loose solver tolerances a central difference of the log density differs
/// from both Stan's gradient and ours by about the solver's error over `h`.
const ODE_TOLERANCES: &[(&str, f64, f64, &str)] = &[
    (
        "hudson_lynx_hare-lotka_volterra",
        1e-6,
        2e-2,
        "ode_rk45_tol at rtol 1e-5, atol 1e-3: the finite difference sees the step control (0.9% off)",
    ),
    (
        "one_comp_mm_elim_abs-one_comp_mm_elim_abs",
        5e-5,
        1e-5,
        "ode_bdf_tol at 1e-6: the oracle's CVODES gradients are up to 1.44e-5 relative off the \
         converged solution (stanli itself at rtol = atol = 1e-12, BDF or RK45, agrees with ours \
         to about 1e-9)",
    ),
    (
        "sir-sir",
        1e-6,
        1e-4,
        "ode_rk45 at rtol = atol = 1e-6: the finite difference sees the step control (1.5e-5 off)",
    ),
    ("soil_carbon-soil_incubation", 1e-6, 1e-5, "ode_rk45"),
];

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(1.0)
}

use hazel_testdata::repo_root;

/// Checks one posterior; `Err` says what went wrong.
fn check_posterior(
    program_path: &Path,
    oracle: &Value,
    data_path: &Path,
) -> Result<String, String> {
    let src = std::fs::read_to_string(program_path)
        .map_err(|e| format!("{}: {e}", program_path.display()))?;
    let parsed = hazel_check::check_source("model.stan", &src);
    let program = parsed
        .checked
        .as_ref()
        .ok_or_else(|| format!("parse error: {}", parsed.render_diagnostics()))?;
    let data_text = std::fs::read_to_string(data_path).map_err(|e| format!("data: {e}"))?;
    let data = hazel_data::DataFile::parse(&data_text).map_err(|e| format!("data: {e}"))?;
    let (tol, fd_tol) = ODE_TOLERANCES
        .iter()
        .find(|(n, ..)| Some(*n) == oracle["name"].as_str())
        .map_or((1e-8, 1e-5), |&(_, tol, fd_tol, _)| (tol, fd_tol));
    let model = compile(program, &data, &CompileOptions::default())
        .map_err(|e| format!("compile: {}", e.render(&parsed.sources)))?;
    let n = oracle["n_unconstrained"].as_u64().unwrap_or(0) as usize;
    if model.dim() != n {
        return Err(format!("dimension {} vs oracle {n}", model.dim()));
    }
    let mut ws = model.new_workspace();
    let mut grad = vec![0.0; n];
    let mut worst = 0.0f64;
    let points = oracle["points"].as_array().ok_or("no points")?;
    for (k, p) in points.iter().enumerate() {
        let q: Vec<f64> = p["q"]
            .as_array()
            .ok_or("no q")?
            .iter()
            .map(|v| v.as_f64().unwrap_or(f64::NAN))
            .collect();
        let lp_ref = p["log_density"].as_f64().ok_or("no log_density")?;
        let g_ref: Vec<f64> = p["gradient"]
            .as_array()
            .ok_or("no gradient")?
            .iter()
            .map(|v| v.as_f64().unwrap_or(f64::NAN))
            .collect();
        let lp = model
            .log_density_gradient(&mut ws, &q, &mut grad)
            .map_err(|e| format!("point {k}: evaluation failed: {e}"))?;
        let r = rel(lp, lp_ref);
        worst = worst.max(r);
        if r > tol {
            return Err(format!(
                "point {k}: log density {lp} vs oracle {lp_ref} (rel {r:.2e})"
            ));
        }
        for i in 0..n {
            let r = rel(grad[i], g_ref[i]);
            worst = worst.max(r);
            if r > tol {
                return Err(format!(
                    "point {k}: gradient[{i}] {} vs oracle {} (rel {r:.2e})",
                    grad[i], g_ref[i]
                ));
            }
        }
    }
    // Finite differences at the first point, on up to 10 coordinates.
    let q0: Vec<f64> = points[0]["q"]
        .as_array()
        .ok_or("no q")?
        .iter()
        .map(|v| v.as_f64().unwrap_or(f64::NAN))
        .collect();
    model
        .log_density_gradient(&mut ws, &q0, &mut grad)
        .map_err(|e| e.to_string())?;
    let g0 = grad.clone();
    let mut scratch = vec![0.0; n];
    for i in (0..n).step_by((n / 10).max(1)) {
        let h = 1e-6;
        let mut qp = q0.clone();
        qp[i] += h;
        let mut qm = q0.clone();
        qm[i] -= h;
        let fp = model
            .log_density_gradient(&mut ws, &qp, &mut scratch)
            .map_err(|e| e.to_string())?;
        let fm = model
            .log_density_gradient(&mut ws, &qm, &mut scratch)
            .map_err(|e| e.to_string())?;
        let fd = (fp - fm) / (2.0 * h);
        let scale = fp.abs().max(1.0);
        // The central difference's error is about h² f''' + ε |f| / h.
        if (fd - g0[i]).abs() > fd_tol * scale.max(g0[i].abs()) {
            return Err(format!(
                "finite differences: gradient[{i}] {} vs {fd}",
                g0[i]
            ));
        }
    }
    // Constrained parameters and transformed parameters at the first point.
    let names = model.output_names();
    let mut out = vec![0.0; names.len()];
    let mut rng = StreamRng::new(1, 0, hazel_rng::Purpose::GeneratedQuantities);
    let constrained = &oracle["constrained_at_first_point"];
    match model.write_output(&mut ws, &q0, &mut rng, &mut out) {
        Ok(()) => {
            for section in ["parameters", "transformed_parameters"] {
                // Fixtures spell a section as {name: value}, as a list in the order of
                // `constrained_names`, or as {names: [...], values: [...]} (possibly truncated).
                let sec = &constrained[section];
                let pairs: Vec<(String, f64)> = if let Some(list) = sec.as_array() {
                    let names_ref = oracle["constrained_names"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default();
                    names_ref
                        .iter()
                        .zip(list)
                        .filter_map(|(n, v)| Some((n.as_str()?.to_string(), v.as_f64()?)))
                        .collect()
                } else if let (Some(ns), Some(vs)) =
                    (sec["names"].as_array(), sec["values"].as_array())
                {
                    ns.iter()
                        .zip(vs)
                        .filter_map(|(n, v)| Some((n.as_str()?.to_string(), v.as_f64()?)))
                        .collect()
                } else if let Some(obj) = sec.as_object() {
                    obj.iter()
                        .filter_map(|(n, v)| Some((n.clone(), v.as_f64()?)))
                        .collect()
                } else {
                    vec![]
                };
                for (name, reference) in pairs {
                    let Some(j) = names.iter().position(|x| *x == name) else {
                        return Err(format!("output column {name} missing"));
                    };
                    if rel(out[j], reference) > tol {
                        return Err(format!("output {name}: {} vs oracle {reference}", out[j]));
                    }
                }
            }
        }
        Err(e) => return Err(format!("write_output: {e}")),
    }
    let shape = match model.graph() {
        Some(g) => format!("{} ops, {} values", g.ops.len(), g.n_vals),
        None => "dynamic".to_string(),
    };
    Ok(format!("max rel diff {worst:.1e}, {shape}"))
}

/// Every oracle fixture: `corpus/posteriordb/*/oracle.json` and `examples/*/oracle*.json`.
fn fixtures(root: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for (dir, prefix) in [
        (root.join("corpus/posteriordb"), ""),
        (root.join("examples"), "examples/"),
    ] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.filter_map(|e| e.ok()) {
            let sub = e.path();
            let Ok(files) = std::fs::read_dir(&sub) else {
                continue;
            };
            for f in files.filter_map(|f| f.ok()) {
                let fname = f.file_name().to_string_lossy().to_string();
                if fname.starts_with("oracle") && fname.ends_with(".json") {
                    let name = sub
                        .file_name()
                        .map(|n| n.to_string_lossy().to_string())
                        .unwrap_or_default();
                    let label = if fname == "oracle.json" {
                        format!("{prefix}{name}")
                    } else {
                        format!("{prefix}{name}/{fname}")
                    };
                    out.push((label, f.path()));
                }
            }
        }
    }
    out.sort();
    out
}

#[test]
fn posteriordb_programs_match_the_stanli_oracle() {
    let root = repo_root();
    if hazel_testdata::posteriordb().is_none() {
        return hazel_testdata::skip("posteriordb_programs_match_the_stanli_oracle");
    }
    let filter = std::env::var("HAZEL_ORACLE_FILTER").ok();
    let mut unexpected = Vec::new();
    let mut passed = 0;
    for (name, path) in fixtures(&root) {
        if let Some(f) = &filter {
            if !name.contains(f.as_str()) {
                continue;
            }
        }
        let oracle: Value = match std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
        {
            Some(v) => v,
            None => {
                unexpected.push(format!("{name}: unreadable {}", path.display()));
                continue;
            }
        };
        let tier = oracle["tier"]
            .as_u64()
            .map(|t| t.to_string())
            .unwrap_or_else(|| "-".into());
        let (Some(program), Some(data)) = (oracle["program"].as_str(), oracle["data"].as_str())
        else {
            unexpected.push(format!("{name}: fixture names no program or data"));
            continue;
        };
        let program_path = root.join(program);
        let data_path = hazel_testdata::resolve_fixture_path(data);
        let known = KNOWN_UNSUPPORTED.iter().find(|(n, _)| *n == name);
        let started = std::time::Instant::now();
        let result =
            std::panic::catch_unwind(|| check_posterior(&program_path, &oracle, &data_path))
                .unwrap_or_else(|_| Err("PANIC".into()));
        let result = result.map(|m| format!("{m} [{:.2} s]", started.elapsed().as_secs_f64()));
        match (&result, known) {
            (Ok(msg), None) => {
                passed += 1;
                println!("PASS tier {tier} {name}: {msg}");
            }
            (Ok(msg), Some(_)) => {
                passed += 1;
                println!("PASS tier {tier} {name}: {msg} (listed as unsupported: remove it from KNOWN_UNSUPPORTED)");
            }
            (Err(e), Some((_, why))) => println!("KNOWN tier {tier} {name}: {e} [{why}]"),
            (Err(e), None) => {
                println!("FAIL tier {tier} {name}: {e}");
                unexpected.push(format!("tier {tier} {name}: {e}"));
            }
        }
    }
    println!(
        "{passed} passed, {} known unsupported, {} unexpected failures",
        KNOWN_UNSUPPORTED.len(),
        unexpected.len()
    );
    assert!(
        unexpected.is_empty(),
        "unexpected failures:\n{}",
        unexpected.join("\n")
    );
}
