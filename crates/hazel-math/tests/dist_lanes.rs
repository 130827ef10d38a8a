//! The branch-free forms of the kernels (`prepare_lanes`, `element_lanes`, which the graph's
//! vectorised density loops use) against the checked forms (`prepare`, `element`, which name
//! the failing argument): the same pass/fail outcome and the same bits, on valid and invalid
//! arguments alike, for every family that has them and every choice of dropped terms.

use hazel_math::dist::kernel::{
    Bernoulli, BernoulliLogit, BinomialLogit, NegBinomial2Log, Normal, PoissonLog, StdNormal,
    StudentT, UnivariateKernel,
};
use hazel_math::dist::Terms;

/// Argument values: ordinary, boundary and invalid (NaN, ±∞, negative, non-integer, huge).
const VALUES: [f64; 22] = [
    0.0,
    -0.0,
    1.0,
    2.0,
    3.0,
    0.5,
    -1.0,
    -2.5,
    1e-300,
    5e-324,
    7.25,
    40.0,
    -40.0,
    710.0,
    -750.0,
    1e10,
    3e9,
    -3e9,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    f64::MAX,
];

fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn check<K: UnivariateKernel>() {
    assert!(K::LANES, "{} has branch-free forms", K::FUNCTION);
    let masks: Vec<Terms> = std::iter::once(Terms::FULL)
        .chain((0..1u32 << K::ARITY).map(Terms::propto))
        .collect();
    let mut checked = 0;
    for terms in masks {
        let kernel = K::new(terms);
        // Each argument alone.
        for k in 0..K::ARITY {
            for &x in &VALUES {
                let (passes, derived) = kernel.prepare_lanes(k, x);
                match kernel.prepare(k, x) {
                    Ok(d) => {
                        assert!(passes, "{} arg {k} = {x}: lanes form fails", K::FUNCTION);
                        for (a, b) in d.iter().zip(&derived) {
                            assert!(same(*a, *b), "{} arg {k} = {x}: {a} vs {b}", K::FUNCTION);
                        }
                    }
                    Err(_) => assert!(!passes, "{} arg {k} = {x}: lanes form passes", K::FUNCTION),
                }
            }
        }
        // Whole elements over a grid of argument tuples that pass `prepare`.
        let n = VALUES.len();
        for code in 0..n.pow(K::ARITY as u32) {
            let mut x = [0.0; 4];
            let mut c = code;
            for xk in x.iter_mut().take(K::ARITY) {
                *xk = VALUES[c % n];
                c /= n;
            }
            let mut d = [[0.0; 3]; 4];
            let mut ok = true;
            for k in 0..K::ARITY {
                match kernel.prepare(k, x[k]) {
                    Ok(dk) => d[k] = dk,
                    Err(_) => ok = false,
                }
            }
            if !ok {
                continue;
            }
            let (passes, (lp, g)) = kernel.element_lanes(&x, &d);
            // The split form: the same outcome and partials, and the value less `ln(d)`.
            let (passes_f, (lp_f, g_f), factor) = kernel.element_lanes_factored(&x, &d);
            assert_eq!(
                passes,
                passes_f,
                "{} at {x:?}: factored outcome",
                K::FUNCTION
            );
            if passes {
                let name = K::FUNCTION;
                assert!(
                    K::LOG_FACTOR || factor == 1.0,
                    "{name} at {x:?}: d = {factor}"
                );
                assert!(
                    (1.0..=2.0).contains(&factor),
                    "{name} at {x:?}: d = {factor}"
                );
                let joined = lp_f - hazel_math::vmath::ln(factor);
                assert!(
                    same(joined, lp),
                    "{name} at {x:?}: {lp_f} − ln {factor} vs {lp}"
                );
                for (a, b) in g.iter().zip(&g_f) {
                    assert!(same(*a, *b), "{name} at {x:?}: factored partial {a} vs {b}");
                }
            }
            match kernel.element(&x, &d) {
                Ok((lp2, g2)) => {
                    assert!(passes, "{} at {x:?}: lanes form fails", K::FUNCTION);
                    assert!(same(lp, lp2), "{} at {x:?}: lp {lp} vs {lp2}", K::FUNCTION);
                    for (a, b) in g.iter().zip(&g2) {
                        assert!(same(*a, *b), "{} at {x:?}: partial {a} vs {b}", K::FUNCTION);
                    }
                }
                Err(_) => assert!(!passes, "{} at {x:?}: lanes form passes", K::FUNCTION),
            }
            checked += 1;
        }
    }
    assert!(checked > 0, "{}: no valid element in the grid", K::FUNCTION);
}

#[test]
fn normal() {
    check::<Normal>();
}

#[test]
fn std_normal() {
    check::<StdNormal>();
}

#[test]
fn poisson_log() {
    check::<PoissonLog>();
}

#[test]
fn bernoulli() {
    check::<Bernoulli>();
}

#[test]
fn bernoulli_logit() {
    check::<BernoulliLogit>();
}

#[test]
fn binomial_logit() {
    check::<BinomialLogit>();
}

#[test]
fn neg_binomial_2_log() {
    check::<NegBinomial2Log>();
}

#[test]
fn student_t() {
    check::<StudentT>();
}
