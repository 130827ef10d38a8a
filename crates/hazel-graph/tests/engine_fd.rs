//! The tape engine against central finite differences: graphs built by hand through the
//! builder, gradient from the backward sweep vs. (f(q+h) − f(q−h)) / 2h.

use hazel_graph::dists::DistKind;
use hazel_graph::kernels::{BinaryFn, UnaryFn};
use hazel_graph::{Arg, Buffers, Graph, GraphBuilder};

fn eval(g: &Graph, out: Arg, q: &[f64]) -> f64 {
    let mut b = Buffers::for_graph(g);
    g.forward(q, &mut b).expect("forward");
    g.scalar(out, &b)
}

fn check_fd(g: &Graph, out: Arg, q: &[f64], tol: f64) {
    let mut b = Buffers::for_graph(g);
    g.forward(q, &mut b).expect("forward");
    g.backward(out, &mut b);
    let grad = b.adj[..q.len()].to_vec();
    for i in 0..q.len() {
        let h = 1e-6 * q[i].abs().max(1.0);
        let mut qp = q.to_vec();
        qp[i] += h;
        let mut qm = q.to_vec();
        qm[i] -= h;
        let fd = (eval(g, out, &qp) - eval(g, out, &qm)) / (2.0 * h);
        let err = (fd - grad[i]).abs() / fd.abs().max(grad[i].abs()).max(1.0);
        assert!(
            err < tol,
            "component {i}: tape {} vs fd {fd} (rel err {err})",
            grad[i]
        );
    }
}

/// Reduces a vector result to a scalar with non-uniform weights so every element's adjoint
/// is exercised.
fn weighted_sum(b: &mut GraphBuilder, x: Arg) -> Arg {
    let w: Vec<f64> = (0..x.len()).map(|i| 0.3 + 0.7 * i as f64).collect();
    let wc = b.konst(&w);
    b.dot(x, wc)
}

#[test]
fn unary_functions_match_finite_differences() {
    let q = [0.31, 0.62, 0.17];
    let fns = [
        UnaryFn::Neg,
        UnaryFn::Exp,
        UnaryFn::Log,
        UnaryFn::Sqrt,
        UnaryFn::Square,
        UnaryFn::Inv,
        UnaryFn::Log1p,
        UnaryFn::Expm1,
        UnaryFn::Log1pExp,
        UnaryFn::InvLogit,
        UnaryFn::Logit,
        UnaryFn::LogInvLogit,
        UnaryFn::Log1mInvLogit,
        UnaryFn::Log1m,
        UnaryFn::Abs,
        UnaryFn::Sin,
        UnaryFn::Cos,
        UnaryFn::Tan,
        UnaryFn::Tanh,
        UnaryFn::Sinh,
        UnaryFn::Cosh,
        UnaryFn::Asin,
        UnaryFn::Acos,
        UnaryFn::Atan,
        UnaryFn::Log10,
        UnaryFn::Log2,
        UnaryFn::Exp2,
        UnaryFn::InvSqrt,
        UnaryFn::InvSquare,
        UnaryFn::Cbrt,
        UnaryFn::Lgamma,
        UnaryFn::Digamma,
        UnaryFn::Erf,
        UnaryFn::Erfc,
        UnaryFn::Phi,
        UnaryFn::PowConst(2.5),
        UnaryFn::Scale(-1.5),
    ];
    for f in fns {
        let mut b = GraphBuilder::new(&q);
        let y = b.unary(f, b.params());
        let out = weighted_sum(&mut b, y);
        let g = b.finish();
        check_fd(&g, out, &q, 1e-6);
    }
}

#[test]
fn binary_functions_broadcast_and_match_finite_differences() {
    let q = [0.8, 1.3, 0.45, 2.1];
    let fns = [
        BinaryFn::Add,
        BinaryFn::Sub,
        BinaryFn::Mul,
        BinaryFn::Div,
        BinaryFn::Pow,
        BinaryFn::Fmin,
        BinaryFn::Fmax,
        BinaryFn::Hypot,
        BinaryFn::Atan2,
        BinaryFn::LogSumExp,
        BinaryFn::Fdim,
        BinaryFn::Lbeta,
    ];
    for f in fns {
        let mut b = GraphBuilder::new(&q);
        let p = b.params();
        let v = Arg { len: 3, ..p };
        let s = p.at(3);
        let c = b.konst(&[0.7, 1.9, 0.2]);
        // vector ∘ vector, vector ∘ scalar, scalar ∘ vector, var ∘ const, const ∘ var
        let t1 = b.binary(f, v, c);
        let t2 = b.binary(f, v, s);
        let t3 = b.binary(f, s, v);
        let t4 = b.binary(f, c, v);
        let t5 = b.binary(f, s, s);
        let mut parts = vec![];
        for t in [t1, t2, t3, t4, t5] {
            parts.push(weighted_sum(&mut b, t));
        }
        let out = b.sum_scalars(parts);
        let g = b.finish();
        check_fd(&g, out, &q, 1e-6);
    }
    // log_diff_exp needs a > b.
    let mut b = GraphBuilder::new(&q);
    let t = b.binary(BinaryFn::LogDiffExp, b.params().at(3), b.params().at(0));
    let g = b.finish();
    check_fd(&g, t, &q, 1e-6);
}

#[test]
fn reductions_gather_pack_and_matrix_products() {
    let q: Vec<f64> = (0..6).map(|i| 0.1 * i as f64 - 0.2).collect();
    let mut b = GraphBuilder::new(&q);
    let p = b.params();
    let s = b.sum(p);
    let d = b.dot(p, p);
    let l = b.log_sum_exp(p);
    let gth = b.gather(p, vec![5, 0, 0, 3]);
    let gs = weighted_sum(&mut b, gth);
    let pk = b.pack(vec![p.at(2), p.at(2), p.at(4)]);
    let ps = weighted_sum(&mut b, pk);
    // data matrix (4 × 6) × parameter vector, parameter matrix (2 × 3) × data vector
    let m: Vec<f64> = (0..24).map(|i| ((i * 7) % 5) as f64 - 1.5).collect();
    let mc = b.konst(&m);
    let mv = b.matvec(mc, p, 4, 6);
    let mvs = weighted_sum(&mut b, mv);
    let vc = b.konst(&[0.5, -1.0, 2.0]);
    let pm = b.matvec(p, vc, 2, 3);
    let pms = weighted_sum(&mut b, pm);
    // parameter (2 × 3) × parameter (3 × 2) product
    let mm = b.matmul(p, p, 2, 3, 2);
    let mms = weighted_sum(&mut b, mm);
    let out = b.sum_scalars(vec![s, d, l, gs, ps, mvs, pms, mms]);
    let g = b.finish();
    check_fd(&g, out, &q, 1e-6);
}

#[test]
fn distributions_match_finite_differences_in_every_argument() {
    // (kind, arguments: the first is the variate, all positive where needed)
    let cases: Vec<(DistKind, Vec<f64>)> = vec![
        (DistKind::Normal, vec![0.3, -0.2, 1.4]),
        (DistKind::StdNormal, vec![0.3]),
        (DistKind::Cauchy, vec![0.3, -0.2, 1.4]),
        (DistKind::StudentT, vec![0.3, 3.5, -0.2, 1.4]),
        (DistKind::Lognormal, vec![1.3, -0.2, 0.7]),
        (DistKind::Exponential, vec![1.3, 0.6]),
        (DistKind::Gamma, vec![1.3, 2.2, 0.6]),
        (DistKind::InvGamma, vec![1.3, 2.2, 0.6]),
        (DistKind::Beta, vec![0.3, 2.2, 1.6]),
        (DistKind::Uniform, vec![0.3, -1.0, 2.0]),
        (DistKind::DoubleExponential, vec![0.3, -0.2, 1.4]),
        (DistKind::Logistic, vec![0.3, -0.2, 1.4]),
        (DistKind::Weibull, vec![1.3, 2.2, 0.6]),
        (DistKind::ChiSquare, vec![1.3, 2.2]),
    ];
    for (kind, x) in &cases {
        // every argument a parameter: vector variate (length 3) and scalar parameters
        let n = 3;
        let mut q: Vec<f64> = (0..n).map(|i| x[0] * (1.0 + 0.1 * i as f64)).collect();
        q.extend_from_slice(&x[1..]);
        for propto in [false, true] {
            let mut b = GraphBuilder::new(&q);
            let p = b.params();
            let mut args = vec![Arg { len: n as u32, ..p }];
            for k in 1..x.len() {
                args.push(p.at(n + k - 1));
            }
            let out = b.dist(*kind, args, propto);
            let g = b.finish();
            check_fd(&g, out, &q, 1e-6);
        }
        // vector parameters broadcasting against a scalar variate
        let q2: Vec<f64> = x[1..].iter().flat_map(|&v| [v, v * 1.1]).collect();
        let mut b = GraphBuilder::new(&q2);
        let p = b.params();
        let y = b.scalar_const(x[0]);
        let mut args = vec![y];
        for k in 0..x.len() - 1 {
            args.push(Arg {
                off: p.off + 2 * k as u32,
                len: 2,
                ..p
            });
        }
        let out = b.dist(*kind, args, false);
        let g = b.finish();
        check_fd(&g, out, &q2, 1e-6);
    }
    // discrete: integer variates are data
    let discrete: Vec<(DistKind, Vec<f64>, Vec<f64>)> = vec![
        (DistKind::Poisson, vec![3.0], vec![2.5]),
        (DistKind::PoissonLog, vec![3.0], vec![0.5]),
        (DistKind::Bernoulli, vec![1.0], vec![0.3]),
        (DistKind::BernoulliLogit, vec![0.0], vec![0.3]),
        (DistKind::Binomial, vec![3.0, 7.0], vec![0.3]),
        (DistKind::BinomialLogit, vec![3.0, 7.0], vec![0.3]),
        (DistKind::NegBinomial2, vec![3.0], vec![2.5, 1.7]),
        (DistKind::NegBinomial2Log, vec![3.0], vec![0.5, 1.7]),
    ];
    for (kind, data, params) in &discrete {
        let mut b = GraphBuilder::new(params);
        let mut args: Vec<Arg> = data.iter().map(|&v| b.scalar_const(v)).collect();
        let p = b.params();
        for k in 0..params.len() {
            args.push(p.at(k));
        }
        let out = b.dist(*kind, args, true);
        let g = b.finish();
        check_fd(&g, out, params, 1e-6);
    }
}

#[test]
fn propto_drops_exactly_the_constant_summands() {
    // normal(y | mu, sigma) with y, sigma data and mu a parameter: only −z²/2 remains.
    let q = [0.4];
    let mut b = GraphBuilder::new(&q);
    let y = b.konst(&[1.0, 2.0]);
    let sigma = b.scalar_const(2.0);
    let full = b.dist(DistKind::Normal, vec![y, b.params(), sigma], false);
    let prop = b.dist(DistKind::Normal, vec![y, b.params(), sigma], true);
    let g = b.finish();
    let full_v = eval(&g, full, &q);
    let prop_v = eval(&g, prop, &q);
    let z2 = ((1.0f64 - 0.4) / 2.0).powi(2) + ((2.0f64 - 0.4) / 2.0).powi(2);
    assert!((prop_v - (-0.5 * z2)).abs() < 1e-14);
    let expected_full = -0.5 * z2 - 2.0 * (0.5 * (2.0 * std::f64::consts::PI).ln() + 2.0f64.ln());
    assert!((full_v - expected_full).abs() < 1e-13);
}

#[test]
fn domain_errors_are_returned_not_panics() {
    let q = [-1.0];
    let mut b = GraphBuilder::new(&q);
    let y = b.scalar_const(0.0);
    let mu = b.scalar_const(0.0);
    let out = b.dist(DistKind::Normal, vec![y, mu, b.params()], true);
    assert!(b.eager_error.is_some());
    let g = b.finish();
    let mut buf = Buffers::for_graph(&g);
    let err = g.forward(&q, &mut buf).unwrap_err();
    assert_eq!(err.kind, hazel_density::EvalErrorKind::Domain);
    let _ = out;
}

#[test]
fn op_stays_small() {
    // The sweeps stream through the op list; a compact op keeps loop-heavy graphs in cache.
    let size = std::mem::size_of::<hazel_graph::Op>();
    assert!(size <= 64, "Op is {size} bytes");
}
