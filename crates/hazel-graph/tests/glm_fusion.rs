//! GLM fusion (issue 14): `MatVec → [Add α] → Dist` over a data matrix becomes one
//! `Op::Glm` that reads `X` once per gradient.
//!
//! - Graph level: the fused and unfused graphs give the same bits of log density and gradient
//!   (the fused op sums in the unfused kernels' shapes), for four families, with a varying,
//!   constant or absent intercept, at every SIMD level this CPU has; a linear predictor read
//!   twice is not fused.
//! - Program level: the Stan spellings (`y ~ family(X * beta + alpha)`, the `_glm`
//!   functions) compile to a graph holding `Op::Glm`, and the gradient matches central finite
//!   differences.
//!
//! Blind spot: the bit comparison is against hazel's own unfused kernels (their agreement
//! with stanli is covered by the library fixtures); the finite differences check at 1e-6.

mod common;

use common::Xorshift;
use hazel_density::LogDensity;
use hazel_graph::dists::DistKind;
use hazel_graph::kernels::BinaryFn;
use hazel_graph::{compile, Arg, Buffers, CompileOptions, Graph, GraphBuilder, Op, SimdLevel};

#[derive(Clone, Copy, Debug)]
enum Intercept {
    Varying,
    Constant,
    Absent,
}

/// `prior(beta) + family(y | X beta + alpha [, aux])` with `q = [alpha, beta, aux]`, or
/// `q = [alpha, beta, aux, X]` when `X` varies (`q.len() > k + 2`).
fn build(kind: DistKind, intercept: Intercept, n: usize, k: usize, q: &[f64]) -> (Graph, Arg) {
    let mut r = Xorshift(0x9e37_79b9_7f4a_7c15 ^ (n * 31 + k) as u64);
    let x: Vec<f64> = (0..n * k).map(|_| 2.0 * r.centred()).collect();
    let y: Vec<f64> = (0..n)
        .map(|_| match kind {
            DistKind::BernoulliLogit => (r.centred() > 0.0) as u8 as f64,
            DistKind::PoissonLog | DistKind::NegBinomial2Log => ((r.centred() + 0.5) * 6.0).floor(),
            _ => 3.0 * r.centred(),
        })
        .collect();
    let mut b = GraphBuilder::new(q);
    let alpha = Arg::var(0, 1);
    let beta = Arg::var(1, k);
    let aux = Arg::var(1 + k, 1);
    let xa = if q.len() > k + 2 {
        Arg::var(k + 2, n * k)
    } else {
        b.konst(&x)
    };
    let ya = b.konst(&y);
    let xb = b.matvec(xa, beta, n, k);
    let eta = match intercept {
        Intercept::Varying => b.binary(BinaryFn::Add, alpha, xb),
        Intercept::Constant => {
            let c = b.scalar_const(0.25);
            b.binary(BinaryFn::Add, xb, c)
        }
        Intercept::Absent => xb,
    };
    let zero = b.scalar_const(0.0);
    let one = b.scalar_const(1.0);
    let prior = b.dist(DistKind::Normal, vec![beta, zero, one], true);
    let aux_pos = b.unary(hazel_graph::kernels::UnaryFn::Exp, aux);
    let mut args = vec![ya, eta];
    if matches!(kind, DistKind::Normal | DistKind::NegBinomial2Log) {
        args.push(aux_pos);
    }
    let lik = b.dist(kind, args, true);
    let target = b.sum_scalars(vec![prior, lik]);
    (b.finish(), target)
}

fn eval(g: &Graph, out: Arg, q: &[f64], isa: hazel_graph::simd::Isa) -> (f64, Vec<f64>) {
    let mut buf = Buffers::for_graph(g);
    buf.isa = isa;
    g.forward(q, &mut buf).expect("evaluates");
    g.backward(out, &mut buf);
    (g.scalar(out, &buf), buf.adj[..g.dim].to_vec())
}

fn count_glm(g: &Graph) -> usize {
    g.ops
        .iter()
        .filter(|op| matches!(op, Op::Glm { .. }))
        .count()
}

#[test]
fn fused_glm_gives_the_unfused_bits() {
    let kinds = [
        DistKind::BernoulliLogit,
        DistKind::PoissonLog,
        DistKind::Normal,
        DistKind::NegBinomial2Log,
    ];
    for kind in kinds {
        for intercept in [Intercept::Varying, Intercept::Constant, Intercept::Absent] {
            for (n, k, x_varies) in [
                (5003, 7, false),
                (2048, 20, false),
                (9, 1, false),
                (6, 3, false),
                (2100, 5, true),
            ] {
                let mut r = Xorshift(n as u64 + 17);
                let dim = if x_varies { k + 2 + n * k } else { k + 2 };
                let q: Vec<f64> = (0..dim).map(|_| 0.6 * r.centred()).collect();
                let (unfused, out) = build(kind, intercept, n, k, &q);
                let mut fused = unfused.clone();
                assert_eq!(fused.fuse_glm(out), 1, "{kind:?} {intercept:?} fused");
                assert_eq!(count_glm(&fused), 1);
                assert_eq!(count_glm(&unfused), 0);
                assert!(!fused.ops.iter().any(|op| matches!(op, Op::MatVec { .. })));
                let (lp0, g0) = eval(&unfused, out, &q, Default::default());
                assert!(lp0.is_finite());
                for level in SimdLevel::available() {
                    let isa = level.resolve().expect("available");
                    let (lp1, g1) = eval(&fused, out, &q, isa);
                    let what = format!(
                        "{kind:?} {intercept:?} n={n} k={k} X varies: {x_varies} {level:?}"
                    );
                    assert_eq!(lp1.to_bits(), lp0.to_bits(), "{what}: lp {lp1} vs {lp0}");
                    for i in 0..g0.len() {
                        assert_eq!(
                            g1[i].to_bits(),
                            g0[i].to_bits(),
                            "{what}: gradient {i}: {} vs {}",
                            g1[i],
                            g0[i]
                        );
                    }
                }
            }
        }
    }
}

/// The fused op's linear predictor (and the removed product's and sum's slots next to it) are
/// listed as adjoint-free, so a backward sweep does not clear them: whatever its adjoints
/// hold (NaN here) must not reach the gradient.
#[test]
fn a_backward_sweep_never_reads_the_linear_predictors_adjoint() {
    let (n, k) = (5003, 4);
    let mut r = Xorshift(11);
    let q: Vec<f64> = (0..k + 2).map(|_| 0.6 * r.centred()).collect();
    let (mut g, out) = build(DistKind::BernoulliLogit, Intercept::Varying, n, k, &q);
    assert_eq!(g.fuse_glm(out), 1);
    g.mark_adjoint_free(out);
    assert_eq!(g.adjoint.free.len(), 1);
    assert!(g.adjoint.free[0].len as usize >= n);
    let (lp0, g0) = eval(&g, out, &q, Default::default());
    let mut buf = Buffers::for_graph(&g);
    buf.adj.iter_mut().for_each(|a| *a = f64::NAN);
    g.forward(&q, &mut buf).expect("evaluates");
    g.backward(out, &mut buf);
    assert_eq!(g.scalar(out, &buf).to_bits(), lp0.to_bits());
    assert!(buf.adj[..g.dim]
        .iter()
        .zip(&g0)
        .all(|(a, b)| a.to_bits() == b.to_bits()));
    // Only the listed slots kept their NaNs.
    let free =
        g.adjoint.free[0].off as usize..(g.adjoint.free[0].off + g.adjoint.free[0].len) as usize;
    for (i, a) in buf.adj[..g.n_vals].iter().enumerate() {
        assert_eq!(a.is_nan(), free.contains(&i), "slot {i}");
    }
}

/// An outcome outside the support, or a bad scalar argument, is the same evaluation error
/// from the fused op as from the unfused graph, naming the same element, wherever it lies in
/// a block (the fused op runs a block in pieces of rows and, on a failed check, runs the
/// block again whole to name the element).
#[test]
fn fused_glm_errors_are_the_unfused_errors() {
    let (n, k) = (2100, 5);
    for (kind, bad_row, bad_aux) in [
        (DistKind::BernoulliLogit, Some(1500), false),
        (DistKind::BernoulliLogit, Some(2099), false),
        (DistKind::PoissonLog, Some(300), false),
        (DistKind::NegBinomial2Log, None, true),
    ] {
        let q = vec![0.1; k + 2];
        let mut b = GraphBuilder::new(&q);
        let x: Vec<f64> = (0..n * k).map(|i| (i % 7) as f64 * 0.1 - 0.3).collect();
        let mut y = vec![1.0; n];
        if let Some(r) = bad_row {
            y[r] = -1.0;
        }
        let xa = b.konst(&x);
        let ya = b.konst(&y);
        let eta = b.matvec(xa, Arg::var(1, k), n, k);
        let mut args = vec![ya, eta];
        if kind == DistKind::NegBinomial2Log {
            args.push(b.scalar_const(if bad_aux { -1.0 } else { 1.0 }));
        }
        let lik = b.dist(kind, args, true);
        let target = b.sum_scalars(vec![lik]);
        let unfused = b.finish();
        let mut fused = unfused.clone();
        assert_eq!(fused.fuse_glm(target), 1, "{kind:?}");
        let error = |g: &Graph| {
            let mut buf = Buffers::for_graph(g);
            buf.isa = SimdLevel::Auto.resolve().expect("auto");
            g.forward(&q, &mut buf).expect_err("fails").to_string()
        };
        let (e0, e1) = (error(&unfused), error(&fused));
        assert_eq!(e1, e0, "{kind:?}");
        if let Some(r) = bad_row {
            assert!(e0.contains(&format!("element {}", r + 1)), "{kind:?}: {e0}");
        }
    }
}

#[test]
fn a_linear_predictor_read_twice_is_not_fused() {
    let (n, k) = (100, 3);
    let q = vec![0.1; k + 2];
    let mut b = GraphBuilder::new(&q);
    let x: Vec<f64> = (0..n * k).map(|i| (i % 7) as f64 * 0.1).collect();
    let xa = b.konst(&x);
    let ya = b.konst(&vec![1.0; n]);
    let eta = b.matvec(xa, Arg::var(1, k), n, k);
    let lik = b.dist(DistKind::BernoulliLogit, vec![ya, eta], true);
    let extra = b.sum(eta);
    let target = b.sum_scalars(vec![lik, extra]);
    let mut g = b.finish();
    assert_eq!(g.fuse_glm(target), 0);
}

/// Central finite differences of the log density, relative to the gradient's scale.
fn check_program(name: &str, program: &str, data: &str) {
    let parsed = hazel_check::check_source("model.stan", program);
    let program = parsed
        .checked
        .unwrap_or_else(|| panic!("{name}: program checks"));
    let data = hazel_data::DataFile::parse(data).expect("data parses");
    let model = compile(&program, &data, &CompileOptions::default()).expect("compiles");
    let graph = model.graph().expect("static");
    assert_eq!(count_glm(graph), 1, "{name}: one fused GLM op");
    let dim = model.dim();
    let q: Vec<f64> = (0..dim).map(|i| 0.3 * ((i as f64) * 0.7).sin()).collect();
    let mut ws = model.new_workspace();
    let mut grad = vec![0.0; dim];
    model
        .log_density_gradient(&mut ws, &q, &mut grad)
        .expect("evaluates");
    let scale = grad.iter().fold(1.0f64, |m, g| m.max(g.abs()));
    for i in 0..dim {
        let h = 1e-5;
        let mut qp = q.clone();
        let mut qm = q.clone();
        qp[i] += h;
        qm[i] -= h;
        let mut scratch = vec![0.0; dim];
        let lp = model
            .log_density_gradient(&mut ws, &qp, &mut scratch)
            .unwrap();
        let lm = model
            .log_density_gradient(&mut ws, &qm, &mut scratch)
            .unwrap();
        let fd = (lp - lm) / (2.0 * h);
        assert!(
            (fd - grad[i]).abs() <= 1e-6 * scale,
            "{name}: component {i}: gradient {} vs finite difference {fd}",
            grad[i]
        );
    }
}

fn glm_data(n: usize, k: usize, counts: bool) -> String {
    let mut r = Xorshift(5);
    let rows: Vec<String> = (0..n)
        .map(|_| {
            let v: Vec<String> = (0..k).map(|_| format!("{:.6}", r.centred())).collect();
            format!("[{}]", v.join(","))
        })
        .collect();
    let y: Vec<String> = (0..n)
        .map(|_| {
            if counts {
                (((r.centred() + 0.5) * 5.0).floor() as i64).to_string()
            } else {
                ((r.centred() > 0.0) as i64).to_string()
            }
        })
        .collect();
    let w: Vec<String> = (0..n)
        .map(|_| format!("{:.6}", 2.0 * r.centred()))
        .collect();
    format!(
        r#"{{"N": {n}, "K": {k}, "X": [{}], "y": [{}], "w": [{}]}}"#,
        rows.join(","),
        y.join(","),
        w.join(",")
    )
}

const HEAD: &str = "data { int N; int K; matrix[N, K] X; array[N] int<lower=0> y; vector[N] w; }
parameters { real alpha; vector[K] beta; real<lower=0> aux; }\n";

#[test]
fn stan_glm_spellings_compile_to_the_fused_op() {
    let cases = [
        (
            "bernoulli_logit",
            "y ~ bernoulli_logit(X * beta + alpha);",
            false,
        ),
        (
            "bernoulli_logit_glm",
            "y ~ bernoulli_logit_glm(X, alpha, beta);",
            false,
        ),
        ("poisson_log", "y ~ poisson_log(alpha + X * beta);", true),
        (
            "poisson_log_glm",
            "target += poisson_log_glm_lpmf(y | X, alpha, beta);",
            true,
        ),
        (
            "normal_id_glm",
            "w ~ normal_id_glm(X, alpha, beta, aux);",
            true,
        ),
        ("normal", "w ~ normal(X * beta + alpha, aux);", true),
        (
            "neg_binomial_2_log_glm",
            "y ~ neg_binomial_2_log_glm(X, alpha, beta, aux);",
            true,
        ),
        (
            "loop bernoulli_logit",
            "for (n in 1:N) y[n] ~ bernoulli_logit(alpha + X[n] * beta);",
            false,
        ),
        (
            "loop poisson_log",
            "for (n in 1:N) y[n] ~ poisson_log(X[n] * beta);",
            true,
        ),
        (
            "loop normal",
            "for (n in 1:N) w[n] ~ normal(X[n] * beta + alpha, aux);",
            true,
        ),
        (
            "neg_binomial_2_log",
            "y ~ neg_binomial_2_log(X * beta + alpha, aux);",
            true,
        ),
    ];
    for (name, statement, counts) in cases {
        let program = format!(
            "{HEAD}model {{ alpha ~ normal(0, 1); beta ~ normal(0, 1); aux ~ exponential(1); {statement} }}"
        );
        check_program(name, &program, &glm_data(2100, 6, counts));
    }
}

/// Each `_glm` function is its base density at `alpha + X * beta` (the base densities'
/// values are covered by the stanli fixtures): the same bits of log density and gradient.
/// (`neg_binomial_2_log_glm` under `~` keeps other constant terms than its base family, as in
/// Stan Math, so only its full `_lpmf` is compared.)
#[test]
fn glm_functions_equal_their_expanded_form() {
    let pairs = [
        (
            "y ~ bernoulli_logit_glm(X, alpha, beta);",
            "y ~ bernoulli_logit(X * beta + alpha);",
            false,
        ),
        (
            "y ~ poisson_log_glm(X, alpha, beta);",
            "y ~ poisson_log(X * beta + alpha);",
            true,
        ),
        (
            "w ~ normal_id_glm(X, alpha, beta, aux);",
            "w ~ normal(X * beta + alpha, aux);",
            true,
        ),
        (
            "target += neg_binomial_2_log_glm_lpmf(y | X, alpha, beta, aux);",
            "target += neg_binomial_2_log_lpmf(y | X * beta + alpha, aux);",
            true,
        ),
    ];
    let eval = |statement: &str, data: &str| {
        let program = format!("{HEAD}model {{ beta ~ normal(0, 1); {statement} }}");
        let parsed = hazel_check::check_source("model.stan", &program);
        let program = parsed.checked.expect("program checks");
        let data = hazel_data::DataFile::parse(data).expect("data parses");
        let model = compile(&program, &data, &CompileOptions::default()).expect("compiles");
        let q: Vec<f64> = (0..model.dim()).map(|i| 0.1 * i as f64 - 0.2).collect();
        let mut ws = model.new_workspace();
        let mut grad = vec![0.0; q.len()];
        let lp = model
            .log_density_gradient(&mut ws, &q, &mut grad)
            .expect("evaluates");
        (lp, grad)
    };
    for (glm, expanded, counts) in pairs {
        let data = glm_data(301, 4, counts);
        let (a, ga) = eval(glm, &data);
        let (b, gb) = eval(expanded, &data);
        assert_eq!(a.to_bits(), b.to_bits(), "{glm}: {a} vs {b}");
        assert!(
            ga.iter().zip(&gb).all(|(x, y)| x.to_bits() == y.to_bits()),
            "{glm}: gradient {ga:?} vs {gb:?}"
        );
    }
}

/// A loop over rows (`X[n] * beta` per row, packed by the tracer) fuses too; with more than 8
/// columns its row sums differ from the per-row dot products by rounding only.
#[test]
fn loops_over_rows_match_the_vector_form() {
    let pairs = [
        (
            "for (n in 1:N) y[n] ~ bernoulli_logit(alpha + X[n] * beta);",
            "y ~ bernoulli_logit(X * beta + alpha);",
            false,
        ),
        (
            "for (n in 1:N) w[n] ~ normal(X[n] * beta + alpha, aux);",
            "w ~ normal(X * beta + alpha, aux);",
            true,
        ),
    ];
    for k in [3, 11] {
        for (looped, vector, counts) in pairs {
            let data = glm_data(700, k, counts);
            let eval = |statement: &str| {
                let program = format!("{HEAD}model {{ beta ~ normal(0, 1); {statement} }}");
                let parsed = hazel_check::check_source("model.stan", &program);
                let program = parsed.checked.expect("program checks");
                let data = hazel_data::DataFile::parse(&data).expect("data parses");
                let model = compile(&program, &data, &CompileOptions::default()).expect("compiles");
                assert_eq!(count_glm(model.graph().expect("static")), 1, "{statement}");
                let q: Vec<f64> = (0..model.dim()).map(|i| 0.1 * i as f64 - 0.2).collect();
                let mut ws = model.new_workspace();
                let mut grad = vec![0.0; q.len()];
                let lp = model
                    .log_density_gradient(&mut ws, &q, &mut grad)
                    .expect("evaluates");
                (lp, grad)
            };
            let (a, ga) = eval(looped);
            let (b, gb) = eval(vector);
            let close = |x: f64, y: f64| (x - y).abs() <= 1e-12 * x.abs().max(y.abs()).max(1.0);
            assert!(close(a, b), "{looped} (K = {k}): {a} vs {b}");
            for (i, (x, y)) in ga.iter().zip(&gb).enumerate() {
                assert!(
                    close(*x, *y),
                    "{looped} (K = {k}): gradient {i}: {x} vs {y}"
                );
            }
        }
    }
}
