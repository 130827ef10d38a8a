//! Shared by the stanli-fixture tests (`library_oracle`, `dist_library`, …): compile a program
//! and compare its log density and gradient with a fixture file's seeded points.
//!
//! A fixture file is `{"programs": [{name, program, data, n_unconstrained, points: [{q,
//! log_density, gradient, fd_gradient?}]}]}`, made by a script under `scripts/` that names
//! itself in the file's `generator` field.
#![allow(dead_code)] // each test binary uses its own subset

pub mod lanes_model;

use hazel_density::LogDensity;
use hazel_graph::{compile, CompileOptions, CompiledModel};
use serde_json::Value;

/// Relative tolerance against stanli's log density and gradient.
pub const TOL: f64 = 1e-8;
/// Against central differences of stanli's log density (`fd_gradient`, step 1e-6).
pub const FD_TOL: f64 = 1e-6;

/// The instructions of every scalar block of `g`, in order.
pub fn block_code(g: &hazel_graph::Graph) -> Vec<&hazel_graph::ir::scalar::ScalarInstr> {
    g.ops
        .iter()
        .filter_map(|op| match op {
            hazel_graph::Op::Scalars { block, .. } => Some(block.code()),
            _ => None,
        })
        .flatten()
        .collect()
}

/// Checks a program and compiles it with the data; errors rendered with their source lines.
pub fn build(src: &str, data: &str) -> Result<CompiledModel, String> {
    build_with(src, data, &CompileOptions::default())
}

/// [`build`] with other compile options.
pub fn build_with(
    src: &str,
    data: &str,
    options: &CompileOptions,
) -> Result<CompiledModel, String> {
    let parsed = hazel_check::check_source("model.stan", src);
    let program = parsed
        .checked
        .as_ref()
        .ok_or_else(|| format!("check error: {}", parsed.render_diagnostics()))?;
    let data = hazel_data::DataFile::parse(data).map_err(|e| format!("data: {e}"))?;
    compile(program, &data, options).map_err(|e| format!("compile: {}", e.render(&parsed.sources)))
}

/// [`build`] of a program that must compile.
pub fn compiled(src: &str, data: &str) -> CompiledModel {
    build(src, data).unwrap_or_else(|e| panic!("{e}"))
}

/// Log density and gradient at `q`, which must evaluate.
pub fn eval(m: &CompiledModel, q: &[f64]) -> (f64, Vec<f64>) {
    let mut ws = m.new_workspace();
    let mut g = vec![0.0; q.len()];
    let lp = m
        .log_density_gradient(&mut ws, q, &mut g)
        .unwrap_or_else(|e| panic!("evaluation at {q:?} failed: {e}"));
    (lp, g)
}

/// The tests' reproducible data (`centred()`: uniform on [-0.5, 0.5)).
#[allow(unused_imports)] // not every test file that includes this module uses it
pub use hazel_testdata::Xorshift;

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

/// The built-ins (resolved by hazel's checker) that calls, `~` statements and operators in
/// `stmts` name.
pub fn builtins_called<'s>(
    checked: &hazel_check::CheckedProgram,
    stmts: impl IntoIterator<Item = &'s hazel_syntax::ast::Stmt>,
    into: &mut std::collections::BTreeSet<String>,
) {
    use hazel_syntax::ast::{Expr, NodeId, Stmt};
    use hazel_syntax::visit::{walk_stmt, Visitor};
    struct Calls<'c> {
        checked: &'c hazel_check::CheckedProgram,
        found: &'c mut std::collections::BTreeSet<String>,
    }
    impl Calls<'_> {
        fn note(&mut self, id: NodeId) {
            if let Some(hazel_check::CallTarget::Builtin { name, .. }) =
                self.checked.call_target(id)
            {
                self.found.insert(name.clone());
            }
        }
    }
    impl Visitor for Calls<'_> {
        fn expr(&mut self, e: &Expr) {
            self.note(e.id);
        }
        fn stmt(&mut self, s: &Stmt) {
            self.note(s.id);
        }
    }
    let mut calls = Calls {
        checked,
        found: into,
    };
    for s in stmts {
        walk_stmt(s, &mut calls);
    }
}

/// A test file's blessed list `tests/fixtures/<stem>.checked.txt`: the functions whose
/// generated quantities its tests compare with exact values, moments or brute force
/// (`registry_coverage` reads every such list). `checks`: each such test's program and the
/// functions it compares; each must be called in that program's generated quantities.
/// `HAZEL_BLESS=1` rewrites the list; otherwise it must equal the union of the names.
pub fn checked_list(stem: &str, checks: &[(String, &[&str])]) {
    let mut names = std::collections::BTreeSet::new();
    for (src, functions) in checks {
        let parsed = hazel_check::check_source("model.stan", src);
        let checked = parsed
            .checked
            .as_ref()
            .unwrap_or_else(|| panic!("{}", parsed.render_diagnostics()));
        let mut gq = std::collections::BTreeSet::new();
        let stmts = checked.program.generated_quantities.iter();
        builtins_called(checked, stmts.flat_map(|b| &b.stmts), &mut gq);
        for f in *functions {
            assert!(
                gq.contains(*f),
                "{f} is not called in the generated quantities of {src}"
            );
            names.insert(f.to_string());
        }
    }
    let mut text = format!(
        "# The functions whose generated quantities tests/{stem}.rs compares with exact values,\n\
         # moments or brute force. Generated by `HAZEL_BLESS=1 cargo test -p hazel-graph --test {stem}`.\n"
    );
    for n in &names {
        text.push_str(n);
        text.push('\n');
    }
    let path = format!(
        "{}/tests/fixtures/{stem}.checked.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    if std::env::var_os("HAZEL_BLESS").is_some() {
        std::fs::write(&path, &text).expect("write the list");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        committed, text,
        "{path} is not what the tests check (HAZEL_BLESS=1 rewrites it)"
    );
}
