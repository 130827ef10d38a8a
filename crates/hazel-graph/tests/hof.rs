//! Higher-order functions and hidden Markov models (issue 8): reduce_sum, reduce_sum_static,
//! map_rect, hmm_marginal, hmm_hidden_state_prob, hmm_latent_rng (and integrate_1d where it
//! lowers). Oracles: stanli fixtures (`scripts/hof/make_fixtures.py` → `fixtures/hof.json`),
//! sums over every path of small hidden Markov models, and bit identity across grainsizes and
//! thread counts.

mod common;

use common::{build, eval, rel, FdRule};
use hazel_density::{LogDensity, Model};
use hazel_graph::{compile, CompileOptions, CompiledModel};
use hazel_rng::{Purpose, StreamRng};

const FIXTURES: &str = "hof.json";

fn compile_with(src: &str, data: &str, threads: usize) -> CompiledModel {
    let parsed = hazel_check::check_source("model.stan", src);
    let program = parsed
        .checked
        .as_ref()
        .unwrap_or_else(|| panic!("{}", parsed.render_diagnostics()));
    let data = hazel_data::DataFile::parse(data).expect("data");
    compile(
        program,
        &data,
        &CompileOptions {
            executor: hazel_graph::ExecutorKind::with_threads(threads),
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("{}", e.render(&parsed.sources)))
}

/// The build error, or else the error of evaluating the (3-parameter) model at 0.
fn error_at_origin(m: Result<CompiledModel, String>) -> String {
    match m {
        Ok(m) => {
            let mut ws = m.new_workspace();
            let mut g = vec![0.0; 3];
            m.log_density_gradient(&mut ws, &[0.0; 3], &mut g)
                .unwrap_err()
                .to_string()
        }
        Err(e) => e,
    }
}

#[test]
fn reduce_sum_matches_stanli() {
    common::run_group(FIXTURES, &["reduce_sum"], 7, FdRule::Both);
}

#[test]
fn map_rect_matches_stanli() {
    common::run_group(FIXTURES, &["map_rect"], 2, FdRule::Both);
}

#[test]
fn hmm_marginal_matches_the_forward_algorithm_written_in_stan() {
    // Includes posteriordb's hmm_example, hmm_drive_0 and hmm_gaussian rewritten with
    // hmm_marginal, against the original programs (hand-written forward algorithms).
    common::run_group(FIXTURES, &["hmm_marginal"], 5, FdRule::Both);
}

#[test]
fn hmm_marginal_reduce_sum_and_integrate_1d_models_stay_static() {
    // integrate_1d_uses_xc branches on x: guarded traces inside the op.
    for p in common::fixture_programs(FIXTURES) {
        let name = p["name"].as_str().unwrap();
        if !["hmm_marginal", "reduce_sum", "integrate_1d", "map_rect"]
            .iter()
            .any(|x| name.starts_with(x))
        {
            continue;
        }
        let m = build(p["program"].as_str().unwrap(), p["data"].as_str().unwrap()).unwrap();
        assert!(!m.is_dynamic(), "{name} is dynamic");
    }
}

const SLICED: &str = r#"
functions {
  real part(array[] real ys, int s, int e, real a, real b, real sigma, vector x) {
    return normal_lpdf(ys | a + b * x[s:e], sigma);
  }
}
data { int N; array[N] real y; vector[N] x; int grain; }
parameters { real a; real b; real<lower=0> sigma; }
model { target += reduce_sum(part, y, grain, a, b, sigma, x); }
"#;

fn sliced_data(grain: usize) -> String {
    let n = 70_000;
    let y: Vec<String> = (0..n)
        .map(|i| format!("{}", ((i * 7919) % 1000) as f64 / 250.0 - 2.0))
        .collect();
    let x: Vec<String> = (0..n)
        .map(|i| format!("{}", ((i * 7907) % 997) as f64 / 500.0 - 1.0))
        .collect();
    format!(
        r#"{{"N": {n}, "y": [{}], "x": [{}], "grain": {grain}}}"#,
        y.join(","),
        x.join(",")
    )
}

#[test]
fn reduce_sum_is_bit_identical_for_any_grainsize_and_thread_count() {
    let q = [0.3, -0.7, 0.2];
    let mut first: Option<(f64, Vec<f64>)> = None;
    for grain in [1, 13, 100_000] {
        for threads in [1, 2, 4] {
            let m = compile_with(SLICED, &sliced_data(grain), threads);
            assert!(!m.is_dynamic());
            let (lp, g) = eval(&m, &q);
            match &first {
                None => first = Some((lp, g)),
                Some((lp1, g1)) => {
                    assert_eq!(
                        lp.to_bits(),
                        lp1.to_bits(),
                        "grain {grain}, {threads} threads"
                    );
                    for (a, b) in g.iter().zip(g1) {
                        assert_eq!(a.to_bits(), b.to_bits(), "grain {grain}, {threads} threads");
                    }
                }
            }
        }
    }
    // Equal to the partial-sum function over the whole array, up to summation order.
    let whole = SLICED.replace(
        "reduce_sum(part, y, grain, a, b, sigma, x)",
        "part(y, 1, N, a, b, sigma, x)",
    );
    let m = compile_with(&whole, &sliced_data(1), 1);
    let (lp, g) = eval(&m, &q);
    let (lp1, g1) = first.unwrap();
    assert!(rel(lp, lp1) < 1e-12, "{lp} vs {lp1}");
    for (a, b) in g.iter().zip(&g1) {
        assert!(rel(*a, *b) < 1e-12, "{a} vs {b}");
    }
}

#[test]
fn reduce_sum_and_map_rect_argument_errors_name_the_function() {
    let m = build(
        SLICED,
        &sliced_data(1).replace("\"grain\": 1", "\"grain\": 0"),
    );
    let e = error_at_origin(m);
    assert!(e.contains("reduce_sum: grainsize is 0"), "{e}");

    let src = r#"
functions {
  vector job(vector phi, vector theta, data array[] real xr, data array[] int xi) {
    return [phi[1] + theta[1]]';
  }
}
data { int J; array[J, 1] real xr; array[J + 1, 1] int xi; }
parameters { vector[1] phi; array[J] vector[1] theta; }
model { target += sum(map_rect(job, phi, theta, xr, xi)); }
"#;
    let data = r#"{"J": 2, "xr": [[1.0], [2.0]], "xi": [[1], [2], [3]]}"#;
    let e = error_at_origin(build(src, data));
    assert!(
        e.contains("map_rect: size of job parameters (2) and size of int data (3)"),
        "{e}"
    );
}

// ---------------------------------------------------------------- hidden Markov models

const K: usize = 2;
const N: usize = 4;
const LOG_OMEGA: [[f64; N]; K] = [[-1.0, -0.2, -3.0, -0.5], [-0.4, -2.0, -0.1, -1.5]];
const GAMMA: [[f64; K]; K] = [[0.75, 0.25], [0.4, 0.6]];
const RHO: [f64; K] = [0.3, 0.7];

/// Joint probability (unnormalised posterior) of every path, indexed by the path's bits.
fn paths() -> Vec<(Vec<usize>, f64)> {
    (0..K.pow(N as u32))
        .map(|p| {
            let z: Vec<usize> = (0..N).map(|t| (p >> t) & 1).collect();
            let mut lp = RHO[z[0]].ln() + LOG_OMEGA[z[0]][0];
            for t in 1..N {
                lp += GAMMA[z[t - 1]][z[t]].ln() + LOG_OMEGA[z[t]][t];
            }
            (z, lp.exp())
        })
        .collect()
}

fn hmm_program(gq: &str) -> (String, String) {
    let src = format!(
        "data {{ matrix[{K}, {N}] lo; matrix[{K}, {K}] G; vector[{K}] rho; }}\n\
         parameters {{ real mu; }}\n\
         model {{ mu ~ normal(0, 1); }}\n\
         generated quantities {{ {gq} }}\n"
    );
    let m = |rows: &[&[f64]]| {
        let r: Vec<String> = rows.iter().map(|r| format!("{r:?}")).collect();
        format!("[{}]", r.join(","))
    };
    let lo: Vec<&[f64]> = LOG_OMEGA.iter().map(|r| &r[..]).collect();
    let g: Vec<&[f64]> = GAMMA.iter().map(|r| &r[..]).collect();
    let data = format!(r#"{{"lo": {}, "G": {}, "rho": {:?}}}"#, m(&lo), m(&g), RHO);
    (src, data)
}

const HIDDEN_STATE_PROB: &str =
    "matrix[2, 4] p = hmm_hidden_state_prob(lo, G, rho); real lm = hmm_marginal(lo, G, rho);";

#[test]
fn hmm_hidden_state_prob_is_the_posterior_over_paths() {
    let (src, data) = hmm_program(HIDDEN_STATE_PROB);
    let m = compile_with(&src, &data, 1);
    let names = m.output_names();
    let mut ws = m.new_workspace();
    let mut row = vec![0.0; names.len()];
    let mut rng = StreamRng::new(1, 1, Purpose::GeneratedQuantities);
    m.write_output(&mut ws, &[0.1], &mut rng, &mut row).unwrap();
    let ps = paths();
    let total: f64 = ps.iter().map(|(_, w)| w).sum();
    for k in 0..K {
        for t in 0..N {
            let want: f64 = ps
                .iter()
                .filter(|(z, _)| z[t] == k)
                .map(|(_, w)| w)
                .sum::<f64>()
                / total;
            let col = names
                .iter()
                .position(|c| *c == format!("p.{}.{}", k + 1, t + 1))
                .unwrap();
            assert!(
                (row[col] - want).abs() < 1e-12,
                "p[{k},{t}] {} vs {want}",
                row[col]
            );
        }
    }
    let col = names.iter().position(|c| c == "lm").unwrap();
    assert!((row[col] - total.ln()).abs() < 1e-12);
}

const LATENT_RNG: &str = "array[4] int z = hmm_latent_rng(lo, G, rho);";

#[test]
fn hmm_latent_rng_draws_paths_with_their_posterior_probabilities() {
    // Every one of the 16 paths' frequency within 5 standard errors of its posterior
    // probability (a multinomial check of the whole joint, not only the marginals).
    let (src, data) = hmm_program(LATENT_RNG);
    let m = compile_with(&src, &data, 1);
    let mut ws = m.new_workspace();
    let mut row = vec![0.0; m.output_names().len()];
    let mut rng = StreamRng::new(3, 1, Purpose::GeneratedQuantities);
    let draws = 20_000;
    let mut counts = vec![0usize; K.pow(N as u32)];
    for _ in 0..draws {
        m.write_output(&mut ws, &[0.1], &mut rng, &mut row).unwrap();
        let z = &row[row.len() - N..];
        let mut p = 0;
        for (t, v) in z.iter().enumerate() {
            assert!(*v == 1.0 || *v == 2.0, "state {v}");
            p |= ((*v as usize) - 1) << t;
        }
        counts[p] += 1;
    }
    let ps = paths();
    let total: f64 = ps.iter().map(|(_, w)| w).sum();
    for (p, (_, w)) in ps.iter().enumerate() {
        let pr = w / total;
        let f = counts[p] as f64 / draws as f64;
        let se = (pr * (1.0 - pr) / draws as f64).sqrt();
        assert!((f - pr).abs() < 5.0 * se, "path {p}: {f} vs {pr}");
    }
}

/// `tests/fixtures/hof.checked.txt` (read by `registry_coverage`): the functions the
/// brute-force path checks above compare.
#[test]
fn the_checked_list_is_what_these_tests_check() {
    common::checked_list(
        "hof",
        &[
            (
                hmm_program(HIDDEN_STATE_PROB).0,
                &["hmm_hidden_state_prob", "hmm_marginal"],
            ),
            (hmm_program(LATENT_RNG).0, &["hmm_latent_rng"]),
        ],
    );
}

#[test]
fn hmm_arguments_are_checked() {
    let (src, data) = hmm_program("real lm = hmm_marginal(lo, G, rho);");
    let bad = data.replace("[0.75, 0.25]", "[0.75, 0.35]");
    let m = compile_with(&src, &bad, 1);
    let mut ws = m.new_workspace();
    let mut row = vec![0.0; m.output_names().len()];
    let mut rng = StreamRng::new(1, 1, Purpose::GeneratedQuantities);
    let e = m
        .write_output(&mut ws, &[0.1], &mut rng, &mut row)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("hmm_marginal: Gamma[1, ] is not a valid simplex"),
        "{e}"
    );
}

// ---------------------------------------------------------------- integrate_1d

#[test]
fn integrate_1d_matches_stanli() {
    // Finite, half-infinite and infinite limits; a parameter upper and lower limit; the
    // default and explicit tolerances; the _double_exponential_tol and _gauss_kronrod_tol forms.
    common::run_group(FIXTURES, &["integrate_1d"], 6, FdRule::Both);
}

#[test]
fn integrate_1d_of_data_is_a_constant_and_errors_name_the_function() {
    let src = r#"
functions {
  real f(real x, real xc, array[] real th, array[] real xr, array[] int xi) { return exp(-th[1] * x); }
}
data { real lo; real hi; }
transformed data { real q = integrate_1d(f, lo, hi, {2.0}, {0.0}, {0}); }
parameters { real mu; }
model { mu ~ normal(q, 1); }
"#;
    let m = compile_with(src, r#"{"lo": 0, "hi": 1}"#, 1);
    assert!(!m.is_dynamic());
    let (lp, _) = eval(&m, &[0.0]);
    let q = (1.0 - (-2.0f64).exp()) / 2.0;
    assert!((lp - (-0.5 * q * q)).abs() < 1e-12, "{lp}");
    let e = build(src, r#"{"lo": 1, "hi": 0}"#).err().expect("fails");
    assert!(e.contains("integrate_1d: lower limit is 1"), "{e}");
}

#[test]
fn integrate_1d_with_an_integrand_branching_on_a_parameter_is_dynamic_and_exact() {
    // ∫_0^1 exp(-c x) dx = (1 − e^{−c}) / c with c = θ or 2θ depending on θ (a branch on a
    // parameter: the model re-traces); the limit b is a parameter too (∂/∂b = f(b)).
    let src = r#"
functions {
  real f(real x, real xc, array[] real th, array[] real xr, array[] int xi) {
    if (th[1] > 1) return exp(-th[1] * x);
    return exp(-2 * th[1] * x);
  }
}
parameters { real<lower=0> t; real<lower=0.5, upper=2> b; }
model { target += integrate_1d(f, 0.0, b, {t}, {0.0}, {0}); }
"#;
    let m = compile_with(src, "{}", 1);
    assert!(m.is_dynamic());
    let closed = |q: &[f64]| {
        let t = q[0].exp();
        let inv = 1.0 / (1.0 + (-q[1]).exp());
        let b = 0.5 + 1.5 * inv;
        let c = if t > 1.0 { t } else { 2.0 * t };
        // Jacobians: log t = q0; log(1.5 · inv · (1 − inv)).
        (1.0 - (-c * b).exp()) / c + q[0] + (1.5 * inv * (1.0 - inv)).ln()
    };
    for q in [[0.3, -0.4], [-0.5, 0.8]] {
        let (lp, g) = eval(&m, &q);
        assert!((lp - closed(&q)).abs() < 1e-10, "{lp} vs {}", closed(&q));
        for i in 0..2 {
            let h = 1e-6;
            let (mut a, mut b) = (q, q);
            a[i] += h;
            b[i] -= h;
            let fd = (closed(&a) - closed(&b)) / (2.0 * h);
            assert!((g[i] - fd).abs() < 1e-7, "gradient[{i}] {} vs {fd}", g[i]);
        }
    }
}
