//! The inlined density kernels against hazel_math's reference implementations (which mirror
//! Stan Math, quirks included): value and partials for every combination of `propto` and
//! varying arguments.

use hazel_graph::dists::{DistKind, Inc};

#[test]
fn inlined_kernels_match_hazel_math() {
    let cases: Vec<(DistKind, Vec<[f64; 4]>)> = vec![
        (
            DistKind::Normal,
            vec![[0.3, -0.2, 1.4, 0.0], [-2.0, 1.0, 0.5, 0.0]],
        ),
        (DistKind::StdNormal, vec![[0.3, 0.0, 0.0, 0.0]]),
        (DistKind::Cauchy, vec![[0.3, -0.2, 1.4, 0.0]]),
        (DistKind::StudentT, vec![[0.3, 3.5, -0.2, 1.4]]),
        (DistKind::Lognormal, vec![[1.3, -0.2, 0.7, 0.0]]),
        (DistKind::Exponential, vec![[1.3, 0.6, 0.0, 0.0]]),
        (DistKind::Gamma, vec![[1.3, 2.2, 0.6, 0.0]]),
        (DistKind::InvGamma, vec![[1.3, 2.2, 0.6, 0.0]]),
        (DistKind::Beta, vec![[0.3, 2.2, 1.6, 0.0]]),
        (DistKind::Uniform, vec![[0.3, -1.0, 2.0, 0.0]]),
        (DistKind::DoubleExponential, vec![[0.3, -0.2, 1.4, 0.0]]),
        (DistKind::Logistic, vec![[0.3, -0.2, 1.4, 0.0]]),
        (DistKind::Weibull, vec![[1.3, 2.2, 0.6, 0.0]]),
        (DistKind::ChiSquare, vec![[1.3, 2.2, 0.0, 0.0]]),
        (
            DistKind::Poisson,
            vec![[3.0, 2.5, 0.0, 0.0], [0.0, 2.5, 0.0, 0.0]],
        ),
        (DistKind::PoissonLog, vec![[3.0, 0.5, 0.0, 0.0]]),
        (
            DistKind::Bernoulli,
            vec![[1.0, 0.3, 0.0, 0.0], [0.0, 0.3, 0.0, 0.0]],
        ),
        (
            DistKind::BernoulliLogit,
            vec![[1.0, 0.3, 0.0, 0.0], [0.0, -1.3, 0.0, 0.0]],
        ),
        (DistKind::Binomial, vec![[3.0, 7.0, 0.3, 0.0]]),
        (DistKind::BinomialLogit, vec![[3.0, 7.0, 0.3, 0.0]]),
        (
            DistKind::NegBinomial2,
            vec![[3.0, 2.5, 1.7, 0.0], [0.0, 2.5, 1.7, 0.0]],
        ),
        (DistKind::NegBinomial2Log, vec![[3.0, 0.5, 1.7, 0.0]]),
    ];
    let mut failures = Vec::new();
    for (kind, points) in &cases {
        let d = hazel_math::dist::distribution(kind.name())
            .expect("hazel_math has every inlined family");
        let n = kind.nargs();
        let int_args = d.integer_args;
        for x in points {
            for propto in [false, true] {
                for varying in 0u8..(1 << n) {
                    // integer arguments never vary
                    if (varying as u32) & int_args != 0 {
                        continue;
                    }
                    let inc = Inc {
                        all: !propto,
                        varying,
                    };
                    let ours = kind.elem(x, &inc);
                    let mut g = [0.0; 4];
                    let theirs = (d.lpdf)(
                        &x[..n],
                        hazel_math::dist::Terms {
                            propto,
                            varying: varying as u32,
                        },
                        &mut g[..n],
                    );
                    match (ours, theirs) {
                        (Ok((v, dv)), Ok(w)) => {
                            let close = |a: f64, b: f64| {
                                (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0)
                            };
                            if !close(v, w) {
                                failures.push(format!("{} {x:?} propto={propto} varying={varying:b}: value {v} vs {w}", kind.name()));
                            }
                            for k in 0..n {
                                if varying & (1 << k) != 0 && !close(dv[k], g[k]) {
                                    failures.push(format!(
                                        "{} {x:?} varying={varying:b}: partial {k} {} vs {}",
                                        kind.name(),
                                        dv[k],
                                        g[k]
                                    ));
                                }
                            }
                        }
                        (Err(_), Err(_)) => {}
                        (a, b) => failures.push(format!(
                            "{} {x:?}: {:?} vs {:?}",
                            kind.name(),
                            a.map(|v| v.0),
                            b
                        )),
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
