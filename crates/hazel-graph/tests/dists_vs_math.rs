//! The vectorised density loop (`dists::forward`: broadcasting of scalar arguments, hoisting
//! of their derived quantities, chunking, partials to scratch) against one scalar call per
//! element of the same `hazel_math` kernel. The formulas themselves are shared, so what this
//! can catch is the loop: a scalar argument prepared with the wrong value, a partial written to
//! the wrong slot or summed into the wrong argument, a chunk boundary, the term mask. Each
//! layout also runs at every SIMD level the CPU has (the vectorised loops of the families with
//! branch-free kernels), which must give the same bits.

use hazel_graph::dists::{self, DistKind, Inc, NO_SCRATCH};
use hazel_graph::kernels::CHUNK;
use hazel_graph::{Arg, SimdLevel};

/// Element `i` of an argument drawn from a family's support.
#[derive(Clone, Copy)]
enum Domain {
    Real,
    Positive,
    /// Strictly inside (0, 1).
    Unit,
    /// Integers 0..=4.
    Count,
    /// Integers 5..=7 (a population size at least any `Count`).
    Population,
    /// 0 or 1.
    Binary,
    /// Inside (-1, 1), for uniform's variate.
    Inner,
    /// Inside [-3, -1], for uniform's lower bound.
    Low,
    /// Inside [1, 3], for uniform's upper bound.
    High,
}

impl Domain {
    fn at(self, i: usize, k: usize) -> f64 {
        // A deterministic scatter with a period coprime to CHUNK, different per argument.
        let u = ((i * 7919 + k * 104_729) % 1009) as f64 / 1009.0; // in [0, 1)
        match self {
            Domain::Real => 4.0 * u - 2.0,
            Domain::Positive => 0.2 + 3.0 * u,
            Domain::Unit => 0.02 + 0.96 * u,
            Domain::Count => ((i + k) % 5) as f64,
            Domain::Population => 5.0 + ((i + 2 * k) % 3) as f64,
            Domain::Binary => ((i / 3 + k) % 2) as f64,
            Domain::Inner => 1.8 * u - 0.9,
            Domain::Low => -3.0 + 2.0 * u,
            Domain::High => 1.0 + 2.0 * u,
        }
    }

    fn integer(self) -> bool {
        matches!(self, Domain::Count | Domain::Population | Domain::Binary)
    }
}

fn families() -> Vec<(DistKind, Vec<Domain>)> {
    use Domain::*;
    vec![
        (DistKind::Normal, vec![Real, Real, Positive]),
        (DistKind::StdNormal, vec![Real]),
        (DistKind::Cauchy, vec![Real, Real, Positive]),
        (DistKind::StudentT, vec![Real, Positive, Real, Positive]),
        (DistKind::Lognormal, vec![Positive, Real, Positive]),
        (DistKind::Exponential, vec![Positive, Positive]),
        (DistKind::Gamma, vec![Positive, Positive, Positive]),
        (DistKind::InvGamma, vec![Positive, Positive, Positive]),
        (DistKind::Beta, vec![Unit, Positive, Positive]),
        (DistKind::Uniform, vec![Inner, Low, High]),
        (DistKind::DoubleExponential, vec![Real, Real, Positive]),
        (DistKind::Logistic, vec![Real, Real, Positive]),
        (DistKind::Weibull, vec![Positive, Positive, Positive]),
        (DistKind::ChiSquare, vec![Positive, Positive]),
        (DistKind::Poisson, vec![Count, Positive]),
        (DistKind::PoissonLog, vec![Count, Real]),
        (DistKind::Bernoulli, vec![Binary, Unit]),
        (DistKind::BernoulliLogit, vec![Binary, Real]),
        (DistKind::Binomial, vec![Count, Population, Unit]),
        (DistKind::BinomialLogit, vec![Count, Population, Real]),
        (DistKind::NegBinomial2, vec![Count, Positive, Positive]),
        (DistKind::NegBinomial2Log, vec![Count, Real, Positive]),
        // A table distribution goes through the same broadcasting by function pointers.
        (
            DistKind::lookup("gumbel").unwrap(),
            vec![Real, Real, Positive],
        ),
    ]
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1.0)
}

/// How argument `k` is passed: a broadcast scalar or a vector, a parameter or data.
#[derive(Clone, Copy, Debug)]
struct Shape {
    vector: bool,
    var: bool,
}

/// Runs `forward` on one layout of the arguments and compares value and partials against the
/// per-element scalar calls; returns the mismatches.
fn check_layout(kind: DistKind, domains: &[Domain], shapes: &[Shape], propto: bool) -> Vec<String> {
    let len = CHUNK + 3; // two chunks, the second short
    let mut vals = Vec::new(); // the "lo" buffer: parameters
    let mut consts = Vec::new();
    let mut args = Vec::new();
    let mut sc = Vec::new();
    let mut scratch_len = 0usize;
    let mut columns: Vec<Vec<f64>> = Vec::new();
    for (k, (dom, sh)) in domains.iter().zip(shapes).enumerate() {
        let n = if sh.vector { len } else { 1 };
        // A broadcast scalar takes the element-0 value.
        let column: Vec<f64> = (0..n).map(|i| dom.at(i, k)).collect();
        if sh.var {
            args.push(Arg::var(vals.len(), n));
            vals.extend_from_slice(&column);
            sc.push(scratch_len as u32);
            scratch_len += n;
        } else {
            args.push(Arg::konst(consts.len(), n));
            consts.extend_from_slice(&column);
            sc.push(NO_SCRATCH);
        }
        columns.push(column);
    }
    // Every instruction set this CPU has: the same bits (value and every partial).
    let mut runs = SimdLevel::available().into_iter().map(|level| {
        let isa = level.resolve().expect("available");
        let mut scratch = vec![f64::NAN; scratch_len];
        let total = dists::forward(
            kind,
            &args,
            propto,
            len,
            &sc,
            &vals,
            &consts,
            &mut scratch,
            isa,
        )
        .unwrap_or_else(|e| panic!("{} {shapes:?}: {e:?}", kind.name()));
        (level, total, scratch)
    });
    let (_, total, scratch) = runs.next().expect("the baseline level");
    let mut failures = Vec::new();
    for (level, other, other_scratch) in runs {
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        if other.to_bits() != total.to_bits() || bits(&other_scratch) != bits(&scratch) {
            failures.push(format!(
                "{} {shapes:?} propto={propto}: {level:?} gives other bits ({other} vs {total})",
                kind.name()
            ));
        }
    }

    let mut varying = 0u8;
    for (k, sh) in shapes.iter().enumerate() {
        if sh.var {
            varying |= 1 << k;
        }
    }
    let inc = Inc {
        all: !propto,
        varying,
    };
    let mut want_total = 0.0;
    let mut want_scalar = [0.0; 4];
    for i in 0..len {
        let mut x = [0.0; 4];
        for (k, column) in columns.iter().enumerate() {
            x[k] = if column.len() == 1 {
                column[0]
            } else {
                column[i]
            };
        }
        let (lp, g) = kind
            .elem(&x, &inc)
            .unwrap_or_else(|e| panic!("{} {x:?}: {}", kind.name(), e.message));
        want_total += lp;
        for (k, sh) in shapes.iter().enumerate() {
            if !sh.var {
                continue;
            }
            if sh.vector {
                let got = scratch[sc[k] as usize + i];
                if got != g[k] {
                    failures.push(format!(
                        "{} {shapes:?} propto={propto}: element {i} partial {k}: {got} vs {}",
                        kind.name(),
                        g[k]
                    ));
                }
            } else {
                want_scalar[k] += g[k];
            }
        }
    }
    // Sums are in a different order (per chunk, then across chunks) from the reference loop.
    if !close(total, want_total, 1e-12) {
        failures.push(format!(
            "{} {shapes:?} propto={propto}: value {total} vs {want_total}",
            kind.name()
        ));
    }
    for (k, sh) in shapes.iter().enumerate() {
        if sh.var && !sh.vector && !close(scratch[sc[k] as usize], want_scalar[k], 1e-12) {
            failures.push(format!(
                "{} {shapes:?} propto={propto}: summed partial {k}: {} vs {}",
                kind.name(),
                scratch[sc[k] as usize],
                want_scalar[k]
            ));
        }
    }
    failures
}

#[test]
fn vectorised_loop_matches_per_element_calls_for_every_layout() {
    let mut failures = Vec::new();
    for (kind, domains) in families() {
        let n = domains.len();
        assert_eq!(n, kind.nargs(), "{}", kind.name());
        // Each argument: scalar or vector, data or parameter (integers are always data).
        for code in 0..(1usize << (2 * n)) {
            let shapes: Vec<Shape> = (0..n)
                .map(|k| Shape {
                    vector: code >> (2 * k) & 1 == 1,
                    var: code >> (2 * k + 1) & 1 == 1,
                })
                .collect();
            if shapes
                .iter()
                .zip(&domains)
                .any(|(s, d)| s.var && d.integer())
            {
                continue;
            }
            if shapes.iter().all(|s| !s.vector) {
                continue; // one element: no loop to test
            }
            for propto in [false, true] {
                failures.extend(check_layout(kind, &domains, &shapes, propto));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn invalid_element_reports_stans_message_and_element_number() {
    for level in SimdLevel::available() {
        invalid_element_at(level.resolve().expect("available"));
    }
}

/// The message at one SIMD level (the vectorised loop finds a failing check, then the checked
/// loop names it).
fn invalid_element_at(isa: hazel_graph::simd::Isa) {
    let len = CHUNK + 3;
    let mut sigma = vec![1.5; len];
    sigma[CHUNK + 1] = -1.0;
    let y = vec![0.25; len];
    let mu = [0.0];
    let consts: Vec<f64> = y.iter().chain(&mu).chain(&sigma).copied().collect();
    let args = [
        Arg::konst(0, len),
        Arg::konst(len, 1),
        Arg::konst(len + 1, len),
    ];
    let sc = [NO_SCRATCH; 3];
    let err = dists::forward(
        DistKind::Normal,
        &args,
        false,
        len,
        &sc,
        &[],
        &consts,
        &mut [],
        isa,
    )
    .unwrap_err();
    let message = format!("{err:?}");
    assert!(
        message.contains(&format!(
            "normal_lpdf: Scale parameter is -1, but must be positive! (element {})",
            CHUNK + 2
        )),
        "{message}"
    );
    // A bad broadcast scalar is reported without an element number.
    let consts: Vec<f64> = y.iter().chain(&mu).chain(&[0.0]).copied().collect();
    let args = [
        Arg::konst(0, len),
        Arg::konst(len, 1),
        Arg::konst(len + 1, 1),
    ];
    let err = dists::forward(
        DistKind::Normal,
        &args,
        false,
        len,
        &sc,
        &[],
        &consts,
        &mut [],
        isa,
    )
    .unwrap_err();
    let message = format!("{err:?}");
    assert!(
        message.contains("normal_lpdf: Scale parameter is 0, but must be positive!")
            && !message.contains("element"),
        "{message}"
    );
}

#[test]
fn single_element_errors_carry_stans_full_message() {
    let inc = Inc {
        all: true,
        varying: 0,
    };
    let err = DistKind::Normal
        .elem(&[0.0, 0.0, -1.0, 0.0], &inc)
        .unwrap_err();
    assert_eq!(
        err.message,
        "normal_lpdf: Scale parameter is -1, but must be positive!"
    );
    // A mass function is named as one (the old prefix-adding path said `poisson_lpdf`).
    let err = DistKind::Poisson
        .elem(&[1.0, -1.0, 0.0, 0.0], &inc)
        .unwrap_err();
    assert!(err.message.starts_with("poisson_lpmf: "), "{}", err.message);
}

/// `bernoulli_logit`'s chunk sums take the terms' `log(1 + e⁻|η|)` parts as one logarithm of
/// a product per lane (`UnivariateKernel::LOG_FACTOR`). Against a compensated sum of each
/// element's softplus (`vmath::log1p_exp`, within 1 ulp): as accurate as summing the terms,
/// including where every term is tiny (a separated data set at a large coefficient: each
/// `1 + e` rounds to 1, and the terms live in the rounding corrections), and at every
/// instruction set.
#[test]
fn logistic_sums_by_products_are_as_accurate_as_summed_terms() {
    let len = 2 * CHUNK + 5;
    // Measured: at most 1.8e-16 relative.
    let tol = 1e-15;
    for (scale, shift) in [(1.0, 0.0), (30.0, 0.0), (0.5, 40.0), (3.0, 400.0)] {
        let eta: Vec<f64> = (0..len)
            .map(|i| shift + scale * (((i * 7919) % 1009) as f64 / 1009.0 - 0.5))
            .collect();
        let y: Vec<f64> = (0..len)
            .map(|i| {
                if shift > 0.0 || (i / 3) % 2 == 0 {
                    1.0
                } else {
                    0.0
                }
            })
            .collect();
        // Compensated (Neumaier) sum of −softplus(−s η).
        let (mut sum, mut comp) = (0.0f64, 0.0f64);
        for (&yi, &e) in y.iter().zip(&eta) {
            let t = -hazel_math::vmath::log1p_exp(-(2.0 * yi - 1.0) * e);
            let s = sum + t;
            comp += if sum.abs() >= t.abs() {
                (sum - s) + t
            } else {
                (t - s) + sum
            };
            sum = s;
        }
        let want = sum + comp;
        let args = [Arg::konst(0, len), Arg::var(0, len)];
        let sc = [NO_SCRATCH, 0];
        let mut totals = Vec::new();
        for level in SimdLevel::available() {
            let isa = level.resolve().expect("available");
            let mut scratch = vec![f64::NAN; len];
            let total = dists::forward(
                DistKind::BernoulliLogit,
                &args,
                false,
                len,
                &sc,
                &eta,
                &y,
                &mut scratch,
                isa,
            )
            .expect("evaluates");
            totals.push(total.to_bits());
            assert!(
                (total - want).abs() <= tol * want.abs(),
                "η = {shift} + {scale}·u: {total} vs {want} (relative {:.1e})",
                ((total - want) / want).abs()
            );
        }
        totals.dedup();
        assert_eq!(totals.len(), 1, "every instruction set gives the same bits");
    }
}
