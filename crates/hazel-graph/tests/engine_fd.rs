//! The op graph against central finite differences, with the list of what to check generated
//! from the op enums.
//!
//! Every case is a graph — built by hand through the builder, or compiled from a small Stan
//! program (for ops the lowering and the rewrites make) — whose gradient from the backward
//! sweep must match `(f(q + h) − f(q − h)) / 2h`. `every_op_has_a_finite_difference_case`
//! reads the variants of `Op` and of the descriptors ops name (`UnaryFn`, `BinaryFn`,
//! `DistKind`, `LinalgFn`) from the crate's source and fails, naming them, when a variant
//! appears in no case's graph: a new op, function, family or matrix function is not done
//! until it has a case in `cases()` below (or, if it has nothing to differentiate, a line in
//! `EXEMPT` saying why).

use hazel_density::LogDensity;
use hazel_graph::ir::ops::{MathBinary, MathUnary, Mode, TableDist};
use hazel_graph::ir::{BinaryFn, DistKind, UnaryFn};
use hazel_graph::{compile, Arg, Buffers, CompileOptions, CompiledModel, Graph, GraphBuilder, Op};
use std::collections::BTreeSet;
use std::path::Path;

/// The enums whose every variant must appear in a checked graph: `Op`, and for the ops that
/// name a descriptor, the descriptor's enum (see [`names_in`]).
const ENUMS: &[&str] = &["Op", "UnaryFn", "BinaryFn", "DistKind", "LinalgFn"];

/// Variants with nothing to differentiate, and why.
const EXEMPT: &[(&str, &str)] = &[(
    "Op::Reject",
    "always fails the evaluation: there is no value or gradient to compare",
)];

/// A graph whose gradient is checked against finite differences.
enum Case {
    /// Built through the builder: the gradient of `out` at `q`.
    Graph {
        name: String,
        graph: Graph,
        out: Arg,
        q: Vec<f64>,
        tol: f64,
    },
    /// A Stan program and its data, compiled to a static graph: the model's gradient at
    /// [`point`] (every coordinate of the unconstrained vector).
    Program {
        name: &'static str,
        src: &'static str,
        data: &'static str,
        tol: f64,
    },
}

impl Case {
    fn name(&self) -> &str {
        match self {
            Case::Graph { name, .. } => name,
            Case::Program { name, .. } => name,
        }
    }
}

fn eval(g: &Graph, out: Arg, q: &[f64]) -> f64 {
    let mut b = Buffers::for_graph(g);
    g.forward(q, &mut b).expect("forward");
    g.scalar(out, &b)
}

/// The largest relative difference between `grad` and central differences of `f` at `q`.
fn check_fd(name: &str, q: &[f64], grad: &[f64], mut f: impl FnMut(&[f64]) -> f64, tol: f64) {
    for i in 0..q.len() {
        let h = 1e-6 * q[i].abs().max(1.0);
        let mut qp = q.to_vec();
        qp[i] += h;
        let mut qm = q.to_vec();
        qm[i] -= h;
        let fd = (f(&qp) - f(&qm)) / (2.0 * h);
        let err = (fd - grad[i]).abs() / fd.abs().max(grad[i].abs()).max(1.0);
        assert!(
            err < tol,
            "{name}: component {i}: gradient {} vs finite difference {fd} (rel err {err})",
            grad[i]
        );
    }
}

/// A point for a program case: small, distinct, deterministic coordinates in (−0.5, 0.5).
fn point(dim: usize) -> Vec<f64> {
    (0..dim)
        .map(|i| 0.5 * (1.3 * i as f64 + 0.7).sin())
        .collect()
}

fn compile_program(name: &str, src: &str, data: &str) -> CompiledModel {
    let parsed = hazel_check::check_source("case.stan", src);
    let program = parsed
        .checked
        .clone()
        .unwrap_or_else(|| panic!("{name}: {}", parsed.render_diagnostics()));
    let data = hazel_data::DataFile::parse(data).expect("data");
    compile(&program, &data, &CompileOptions::default())
        .unwrap_or_else(|e| panic!("{name}: {}", e.render(&parsed.sources)))
}

fn run_case(case: &Case) {
    match case {
        Case::Graph {
            name,
            graph,
            out,
            q,
            tol,
        } => {
            let mut b = Buffers::for_graph(graph);
            graph.forward(q, &mut b).expect("forward");
            graph.backward(*out, &mut b);
            let grad = b.adj[..q.len()].to_vec();
            check_fd(name, q, &grad, |x| eval(graph, *out, x), *tol);
        }
        Case::Program {
            name,
            src,
            data,
            tol,
        } => {
            let m = compile_program(name, src, data);
            let q = point(m.dim());
            let mut ws = m.new_workspace();
            let mut grad = vec![0.0; q.len()];
            m.log_density_gradient(&mut ws, &q, &mut grad)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let mut g = vec![0.0; q.len()];
            check_fd(
                name,
                &q,
                &grad,
                |x| {
                    m.log_density_gradient(&mut ws, x, &mut g)
                        .expect("evaluates")
                },
                *tol,
            );
        }
    }
}

/// The variant name of a `Debug` rendering (`Foo { .. }`, `Foo(..)`, `Foo` → `Foo`).
fn variant<T: std::fmt::Debug>(value: &T) -> String {
    let text = format!("{value:?}");
    text.split(|c: char| !c.is_alphanumeric() && c != '_')
        .next()
        .unwrap_or("")
        .to_string()
}

/// `Enum::Variant` of every op of `g` and of the descriptor it names.
fn names_in(g: &Graph, out: &mut BTreeSet<String>) {
    for op in &g.ops {
        out.insert(format!("Op::{}", variant(op)));
        let descriptor = match op {
            Op::Unary { f, .. } => Some(format!("UnaryFn::{}", variant(f))),
            Op::Binary { f, .. } => Some(format!("BinaryFn::{}", variant(f))),
            Op::Dist { kind, .. } => Some(format!("DistKind::{}", variant(kind))),
            Op::Linalg { f, .. } => Some(format!("LinalgFn::{}", variant(f))),
            _ => None,
        };
        out.extend(descriptor);
    }
}

/// The variants of the enum called `name` in this crate's source, as `name::Variant`.
fn variants_of(name: &str) -> Vec<String> {
    fn collect(
        items: &[syn::Item],
        name: &str,
        path: &Path,
        found: &mut Vec<(String, Vec<String>)>,
    ) {
        for item in items {
            match item {
                syn::Item::Enum(e) if e.ident == name => found.push((
                    path.display().to_string(),
                    e.variants.iter().map(|v| v.ident.to_string()).collect(),
                )),
                syn::Item::Mod(m) => {
                    if let Some((_, inner)) = &m.content {
                        collect(inner, name, path, found);
                    }
                }
                _ => {}
            }
        }
    }
    fn walk(dir: &Path, name: &str, found: &mut Vec<(String, Vec<String>)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .expect("read src")
            .map(|e| e.expect("entry").path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, name, found);
            } else if path.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&path).expect("read source");
                let file =
                    syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                collect(&file.items, name, &path, found);
            }
        }
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    walk(&src, name, &mut found);
    assert!(
        found.len() == 1,
        "`enum {name}` should be defined once in hazel-graph's src/, found in {:?}: update \
         ENUMS and `names_in` in tests/engine_fd.rs if it was renamed or split",
        found.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    let (_, variants) = found.pop().expect("one");
    variants
        .into_iter()
        .map(|v| format!("{name}::{v}"))
        .collect()
}

/// Reduces a vector result to a scalar with non-uniform weights so every element's adjoint
/// is exercised.
fn weighted_sum(b: &mut GraphBuilder, x: Arg) -> Arg {
    let w: Vec<f64> = (0..x.len()).map(|i| 0.3 + 0.7 * i as f64).collect();
    let wc = b.konst(&w);
    b.dot(x, wc)
}

fn unary_cases() -> Vec<Case> {
    let table = |name: &str| {
        UnaryFn::Table(MathUnary(
            hazel_math::special::unary(name).expect("in hazel_math's table"),
        ))
    };
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
        // Step functions: derivative 0 away from their jumps (the points are not on one).
        UnaryFn::Floor,
        UnaryFn::Ceil,
        UnaryFn::Round,
        UnaryFn::Trunc,
        table("trigamma"),
        table("lambert_w0"),
    ];
    let q = vec![0.31, 0.62, 0.17];
    fns.into_iter()
        .map(|f| {
            let mut b = GraphBuilder::new(&q);
            let y = b.unary(f, b.params());
            let out = weighted_sum(&mut b, y);
            Case::Graph {
                name: format!("unary {f:?}"),
                graph: b.finish(),
                out,
                q: q.clone(),
                tol: 1e-6,
            }
        })
        .collect()
}

fn binary_cases() -> Vec<Case> {
    let table = |name: &str| {
        BinaryFn::Table(MathBinary(
            hazel_math::special::binary(name).expect("in hazel_math's table"),
        ))
    };
    let q = vec![0.8, 1.3, 0.45, 2.1];
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
        BinaryFn::Lchoose,
        table("owens_t"),
        table("gamma_p"),
    ];
    let mut cases: Vec<Case> = fns
        .into_iter()
        .map(|f| {
            let mut b = GraphBuilder::new(&q);
            let p = b.params();
            let v = Arg { len: 3, ..p };
            let s = p.at(3);
            let c = b.konst(&[0.7, 1.9, 0.2]);
            // vector ∘ vector, vector ∘ scalar, scalar ∘ vector, var ∘ const, const ∘ var
            // (lchoose(n, k) needs n − k > −1, which vector ∘ scalar breaks here)
            let mut pairs = vec![(v, c), (v, s), (s, v), (c, v), (s, s)];
            if matches!(f, BinaryFn::Lchoose) {
                pairs.remove(1);
            }
            let mut parts = vec![];
            for (x, y) in pairs {
                let t = b.binary(f, x, y);
                parts.push(weighted_sum(&mut b, t));
            }
            let out = b.sum_scalars(parts);
            Case::Graph {
                name: format!("binary {f:?}"),
                graph: b.finish(),
                out,
                q: q.clone(),
                tol: 1e-6,
            }
        })
        .collect();
    // log_diff_exp needs a > b.
    let mut b = GraphBuilder::new(&q);
    let out = b.binary(BinaryFn::LogDiffExp, b.params().at(3), b.params().at(0));
    cases.push(Case::Graph {
        name: "binary LogDiffExp".into(),
        graph: b.finish(),
        out,
        q,
        tol: 1e-6,
    });
    cases
}

fn reduction_cases() -> Vec<Case> {
    let q: Vec<f64> = (0..6).map(|i| 0.1 * i as f64 - 0.2).collect();
    let mut b = GraphBuilder::new(&q);
    let p = b.params();
    let s = b.sum(p);
    let d = b.dot(p, p);
    let l = b.log_sum_exp(p);
    let sd = b.sd(p);
    let cs = b.cumsum(p);
    let css = weighted_sum(&mut b, cs);
    let sorted = b.sort(p, true);
    let ss = weighted_sum(&mut b, sorted);
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
    let out = b.sum_scalars(vec![s, d, l, sd, css, ss, gs, ps, mvs, pms, mms]);
    vec![Case::Graph {
        name: "reductions, gather, pack, sort, matrix products".into(),
        graph: b.finish(),
        out,
        q,
        tol: 1e-6,
    }]
}

fn distribution_cases() -> Vec<Case> {
    let table = |name: &str, mode: Mode| {
        DistKind::Table(TableDist {
            dist: hazel_math::dist::distribution(name).expect("in hazel_math's table"),
            mode,
        })
    };
    // (kind, arguments: the first is the variate, all positive where needed)
    let continuous: Vec<(DistKind, Vec<f64>)> = vec![
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
        (table("gumbel", Mode::Lpdf), vec![0.3, -0.2, 1.4]),
        (table("normal", Mode::Lcdf), vec![0.3, -0.2, 1.4]),
        (table("logistic", Mode::Lccdf), vec![0.3, -0.2, 1.4]),
    ];
    let mut cases = Vec::new();
    for (kind, x) in &continuous {
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
            cases.push(Case::Graph {
                name: format!("{kind:?} (vector variate, propto {propto})"),
                graph: b.finish(),
                out,
                q: q.clone(),
                tol: 1e-6,
            });
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
        cases.push(Case::Graph {
            name: format!("{kind:?} (vector parameters)"),
            graph: b.finish(),
            out,
            q: q2,
            tol: 1e-6,
        });
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
        cases.push(Case::Graph {
            name: format!("{kind:?} (discrete)"),
            graph: b.finish(),
            out,
            q: params.clone(),
            tol: 1e-6,
        });
    }
    cases
}

/// Weights for reducing matrix results (data `W`, `W2`: 3 × 3; `w`: 3).
const WEIGHTS: &str = r#"{"W": [[0.3, -1.1, 0.7], [1.9, 0.4, -0.6], [-0.8, 1.2, 0.5]],
  "W2": [[1.1, 0.2, -0.9], [-0.4, 0.8, 1.6], [0.6, -1.3, 0.3]], "w": [0.9, -0.4, 1.7]}"#;

/// Ops made by the lowering and the rewrites, from Stan programs.
/// `Op::MulAdd` and `Op::MulAddChain` as their own ops: a compiled model packs scalar ops into
/// `Op::Scalars` blocks (the program cases), so these are fused here by hand, as `compile`
/// fuses them before it builds the blocks.
fn fused_cases() -> Vec<Case> {
    let q = vec![0.3, -0.7, 1.1, 0.4, -1.3];
    let mut b = GraphBuilder::new(&q);
    let p = b.params();
    let [x0, x1, x2, x3, x4] = [0, 1, 2, 3, 4].map(|i| p.at(i));
    // x0 x1 + x2: one MulAdd.
    let product = b.binary(BinaryFn::Mul, x0, x1);
    let m = b.binary(BinaryFn::Add, product, x2);
    // (x2 + x0 x3) + x1 x4: two MulAdds, one feeding the other, merged into a chain.
    let first = b.binary(BinaryFn::Mul, x0, x3);
    let partial = b.binary(BinaryFn::Add, x2, first);
    let second = b.binary(BinaryFn::Mul, x1, x4);
    let n = b.binary(BinaryFn::Add, partial, second);
    let m2 = b.binary(BinaryFn::Mul, m, m);
    let n2 = b.binary(BinaryFn::Mul, n, n);
    let out = b.sum_scalars(vec![m2, n2]);
    let mut graph = b.finish();
    graph.fuse_mul_add(out);
    graph.fuse_mul_add_chains(out);
    let mut names = BTreeSet::new();
    names_in(&graph, &mut names);
    assert!(
        names.contains("Op::MulAdd") && names.contains("Op::MulAddChain"),
        "the by-hand fusion no longer makes both ops: {names:?}"
    );
    vec![Case::Graph {
        name: "multiply-add fusion (MulAdd, MulAddChain)".into(),
        graph,
        out,
        q,
        tol: 1e-6,
    }]
}

fn program_cases() -> Vec<Case> {
    vec![
        Case::Program {
            name: "an ICAR prior's dot_self of a difference of gathers (DotSelfGatherDiff)",
            src: "data { int N; int E; array[E] int n1; array[E] int n2; }
                  parameters { vector[N] phi; }
                  model { target += -0.5 * dot_self(phi[n1] - phi[n2]);
                          target += -0.5 * dot_self(phi) + sum(phi); }",
            data: r#"{"N": 12, "E": 20, "n1": [1,1,2,2,3,3,4,4,5,5,6,6,7,7,8,8,9,9,10,11], "n2": [2,4,3,5,4,6,5,7,6,8,7,9,8,10,9,11,10,12,11,12]}"#,
            tol: 1e-6,
        },
        Case::Program {
            name: "multiply-add fusion inside a scalar block (Scalars)",
            src: "parameters { real a; real b; real c; real d; real e; }
                  model { real m = a * b + c; real n = c + a * d + b * e;
                          target += -0.5 * square(m) - 0.5 * square(n); }",
            data: "{}",
            tol: 1e-6,
        },
        Case::Program {
            name: "structured parameter (Constrain) and a bounded transformed parameter (Check)",
            src: "parameters { simplex[4] s; real a; }
                  transformed parameters { real<lower=0> e = exp(a); }
                  model { target += dot_product(s, [0.1, 0.7, -0.3, 1.2]') - e; }",
            data: "{}",
            tol: 1e-6,
        },
        Case::Program {
            name: "Cholesky factor and triangular solve",
            src: "parameters { matrix[3, 3] A; vector[3] b; }
                  model { matrix[3, 3] S = crossprod(A) + diag_matrix([1, 3, 6]');
                          matrix[3, 3] L = cholesky_decompose(S);
                          target += sum(L) + sum(mdivide_left_tri_low(L, b)); }",
            data: "{}",
            tol: 1e-6,
        },
        Case::Program {
            name: "solves, inverses and determinants (Linalg)",
            src: "data { matrix[3, 3] W; matrix[3, 3] W2; vector[3] w; }
                  parameters { matrix[3, 3] A; matrix[3, 3] C; }
                  model {
                    matrix[3, 3] B = A + diag_matrix([1, 3, 6]');
                    matrix[3, 3] S = crossprod(A) + diag_matrix([1, 3, 6]');
                    matrix[3, 3] L = cholesky_decompose(S);
                    target += sum(inverse(B) .* W) + sum(inverse_spd(S) .* W2);
                    target += sum((B \\ C) .* W) + sum(mdivide_left_spd(S, C) .* W2);
                    target += sum((C / B) .* W) + sum(mdivide_right_spd(C, S) .* W2);
                    target += sum(mdivide_right_tri_low(C, L) .* W);
                    target += determinant(B) + log_determinant(B) + log_determinant_spd(S);
                  }",
            data: WEIGHTS,
            tol: 1e-6,
        },
        Case::Program {
            name: "symmetric eigendecomposition and matrix exponential (Linalg)",
            src: "data { matrix[3, 3] W; matrix[3, 3] W2; vector[3] w; }
                  parameters { matrix[3, 3] A; }
                  model {
                    matrix[3, 3] S = crossprod(A) + diag_matrix([1, 3, 6]');
                    target += dot_product(eigenvalues_sym(S), w);
                    target += sum(eigenvectors_sym(S) .* W);
                    target += sum(matrix_exp(A) .* W2);
                  }",
            data: WEIGHTS,
            tol: 1e-6,
        },
        Case::Program {
            name: "SVD and thin QR (Linalg)",
            src: "data { matrix[3, 3] W; matrix[3, 3] W2; vector[3] w; }
                  parameters { matrix[3, 2] A; }
                  model {
                    matrix[3, 2] B = A + [[2, 0], [0, 1], [0.5, 0]];
                    target += dot_product(singular_values(B), w[1:2]);
                    target += sum(svd_U(B) .* W[:, 1:2]) + sum(svd_V(B) .* W2[1:2, 1:2]);
                    target += sum(qr_thin_Q(B) .* W[:, 1:2]) + sum(qr_thin_R(B) .* W2[1:2, 1:2]);
                  }",
            data: WEIGHTS,
            tol: 1e-6,
        },
        Case::Program {
            name: "general and Hermitian eigendecompositions, complex Schur (Linalg)",
            src: "data { matrix[3, 3] W; matrix[3, 3] W2; vector[3] w; }
                  parameters { matrix[3, 3] A; matrix[3, 3] C; }
                  model {
                    matrix[3, 3] B = A + diag_matrix([1, 3, 6]');
                    complex_matrix[3, 3] Z = to_complex(B, 0.3 * C);
                    complex_matrix[3, 3] H = to_complex(crossprod(A) + diag_matrix([1, 3, 6]'),
                                                        0.3 * (C - C'));
                    complex_vector[3] ev = eigenvalues(B);
                    complex_matrix[3, 3] V = eigenvectors(B);
                    complex_vector[3] zv = eigenvalues(Z);
                    complex_matrix[3, 3] ZV = eigenvectors(Z);
                    complex_matrix[3, 3] HV = eigenvectors_sym(H);
                    target += dot_product(get_real(ev), w) + dot_product(get_imag(ev), w);
                    target += sum(get_real(V) .* W) + sum(get_imag(V) .* W2);
                    target += dot_product(get_real(zv), w) + dot_product(get_imag(zv), w);
                    target += sum(get_real(ZV) .* W) + sum(get_imag(ZV) .* W2);
                    target += sum(get_real(HV) .* W) + sum(get_imag(HV) .* W2);
                    for (T in {complex_schur_decompose_t(B), complex_schur_decompose_u(B),
                               complex_schur_decompose_t(Z), complex_schur_decompose_u(Z)}) {
                      target += sum(get_real(T) .* W) + sum(get_imag(T) .* W2);
                    }
                  }",
            data: WEIGHTS,
            tol: 1e-5,
        },
        Case::Program {
            name: "multivariate densities (MvDist; multi_normal is a composition)",
            src: "data { vector[3] w; }
                  parameters { vector[3] mu; matrix[3, 3] A; real nu; }
                  model {
                    matrix[3, 3] S = crossprod(A) + diag_matrix([1, 3, 6]');
                    w ~ multi_normal(mu, S);
                    w ~ multi_student_t(3 + exp(nu), mu, S);
                  }",
            data: r#"{"w": [0.9, -0.4, 1.7]}"#,
            tol: 1e-6,
        },
        Case::Program {
            name: "elementwise function of three arguments (Nary)",
            src: "parameters { vector[3] a; real b; real x; }
                  model { target += sum(inc_beta(exp(a), exp(b), inv_logit(x))); }",
            data: "{}",
            tol: 1e-6,
        },
        Case::Program {
            name: "fused GLM likelihood (Glm)",
            src: "data { int N; matrix[N, 2] X; array[N] int y; }
                  parameters { vector[2] beta; real alpha; }
                  model { y ~ bernoulli_logit(X * beta + alpha); }",
            data: r#"{"N": 4, "X": [[0.5, -1.2], [1.1, 0.3], [-0.7, 0.8], [0.2, 1.5]],
                      "y": [1, 0, 1, 1]}"#,
            tol: 1e-6,
        },
        Case::Program {
            name: "algebraic solver (Solve)",
            src: "functions { vector f(vector x, vector th) { return x + x .* x .* x - th; } }
                  parameters { vector[2] th; }
                  model { target += dot_product(solve_newton(f, [0.5, 0.5]', th), [0.3, 0.7]'); }",
            data: "{}",
            tol: 1e-6,
        },
        Case::Program {
            name: "ODE (Ode)",
            src: "functions { vector rhs(real t, vector y, vector k) { return -k .* y; } }
                  parameters { vector[2] k; vector[2] y0; }
                  model {
                    array[2] vector[2] ys = ode_rk45(rhs, y0, 0, {0.5, 1.0}, exp(k));
                    target += dot_product(ys[1], [0.3, 0.7]') + dot_product(ys[2], [1.1, -0.4]');
                  }",
            data: "{}",
            tol: 1e-5,
        },
        Case::Program {
            name: "DAE (Dae)",
            src: "functions {
                    vector res(real t, vector yy, vector yp, real k) {
                      return [yp[1] + k * yy[1], yy[2] - 2 * yy[1]]';
                    }
                  }
                  parameters { real k; real y0; }
                  model {
                    array[2] vector[2] ys = dae(res, [exp(y0), 2 * exp(y0)]',
                                                [-exp(k) * exp(y0), -2 * exp(k) * exp(y0)]',
                                                0, {0.5, 1.0}, exp(k));
                    target += dot_product(ys[1], [0.3, 0.7]') + dot_product(ys[2], [1.1, -0.4]');
                  }",
            data: "{}",
            tol: 1e-4,
        },
        Case::Program {
            name: "integrate_1d (Integrate)",
            src: "functions {
                    real f(real x, real xc, array[] real th, array[] real xr, array[] int xi) {
                      return exp(-th[1] * square(x));
                    }
                  }
                  parameters { real t; }
                  model { target += integrate_1d(f, 0, 1, {exp(t)}, {0.0}, {0}); }",
            data: "{}",
            tol: 1e-6,
        },
    ]
}

fn cases() -> Vec<Case> {
    let mut all = unary_cases();
    all.extend(binary_cases());
    all.extend(reduction_cases());
    all.extend(distribution_cases());
    all.extend(fused_cases());
    all.extend(program_cases());
    all
}

#[test]
fn every_case_matches_finite_differences() {
    for case in cases() {
        run_case(&case);
    }
}

#[test]
fn every_op_has_a_finite_difference_case() {
    let mut covered = BTreeSet::new();
    for case in cases() {
        match &case {
            Case::Graph { graph, .. } => names_in(graph, &mut covered),
            Case::Program { src, data, .. } => {
                let m = compile_program(case.name(), src, data);
                let g = m
                    .graph()
                    .unwrap_or_else(|| panic!("{}: must compile to a static graph", case.name()));
                names_in(g, &mut covered);
            }
        }
    }
    let exempt: BTreeSet<&str> = EXEMPT.iter().map(|(name, _)| *name).collect();
    let mut missing = Vec::new();
    for name in ENUMS {
        for v in variants_of(name) {
            if !covered.contains(&v) && !exempt.contains(v.as_str()) {
                missing.push(v);
            }
        }
    }
    assert!(
        missing.is_empty(),
        "no finite-difference case makes a graph with {missing:?}: add a case to `cases()` in \
         crates/hazel-graph/tests/engine_fd.rs (a graph built with the builder, or a Stan \
         program whose static graph has the op), or list it in EXEMPT with the reason"
    );
    // An exemption that is no longer a variant is stale.
    let all: BTreeSet<String> = ENUMS.iter().flat_map(|n| variants_of(n)).collect();
    for (name, _) in EXEMPT {
        assert!(
            all.contains(*name),
            "EXEMPT names {name}, which is no variant"
        );
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
