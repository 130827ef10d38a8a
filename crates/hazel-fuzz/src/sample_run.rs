//! The whole-run target: bytes → a small Stan program, its data and sampler settings →
//! `hazel sample` (the CLI's own `sample::run_to`: check, read data, compile, NUTS with one
//! chain, CSV files, read back, summary).
//!
//! Programs always have a scalar parameter first (a program without parameters is the
//! fixed_param case, handled elsewhere), data `N`, `y`, `x`, parameters of every constraint
//! kind with literal or data sizes, transformed parameters (sometimes constrained), a model
//! block of `~` statements over 20 families, `target +=`, loops over the data and branches
//! on parameters (dynamic models), and generated quantities with `_rng` calls. Expressions
//! are drawn from ~30 common functions and operators; arguments outside a function's domain
//! are allowed and must give errors or rejections, never panics. Iteration counts and the
//! tree depth are small so that a run takes about a millisecond.

use crate::check_message;
use crate::choices::Choices;
use clap::Parser;
use hazel_cli::sample::{run_to, SampleArgs};
use std::fmt::Write as _;
use std::path::PathBuf;

/// `hazel sample`'s arguments on their own, parsed by clap as the binary parses them.
#[derive(Parser)]
struct SampleCommand {
    #[command(flatten)]
    args: SampleArgs,
}

/// A generated `hazel sample` run.
#[derive(Debug)]
pub(crate) struct GeneratedRun {
    pub program: String,
    pub data: String,
    pub args: SampleArgs,
}

/// What a parameter (or transformed parameter) is, for building expressions over it.
#[derive(Clone)]
struct Var {
    name: String,
    kind: Kind,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// A real; `positive`: > 0; `unit`: in (0, 1).
    Real { positive: bool, unit: bool },
    /// vector, row_vector or array of reals, with its (possibly data) size, positive elements.
    Vector {
        size: Size,
        positive: bool,
        simplex: bool,
    },
    /// K × K: a correlation/covariance matrix or Cholesky factor (`which` says), or free.
    Matrix { k: usize, which: MatrixKind },
}

#[derive(Clone, Copy, PartialEq)]
enum Size {
    Literal(usize),
    DataN,
}

#[derive(Clone, Copy, PartialEq)]
enum MatrixKind {
    Free,
    CorrCholesky,
    Corr,
    Cov,
    CovCholesky,
}

/// Decodes `bytes` into a program, its data and the sampler settings (`dir` holds the files).
pub(crate) fn generate_run(bytes: &[u8], dir: &std::path::Path) -> GeneratedRun {
    let mut c = Choices::new(bytes);
    let n = c.pick(&[3usize, 2, 1, 0, 4]);
    let mut g = Generator {
        c: &mut c,
        vars: Vec::new(),
        n,
    };
    let program = g.program();
    let data = g.data();
    let warmup = g.c.pick(&[5usize, 10, 0, 15, 1, 3]);
    let draws = g.c.pick(&[5usize, 10, 1, 3]);
    // The settings go through the CLI's own argument parser, so every option keeps the
    // default `hazel sample` gives it and new options need no change here.
    let mut argv: Vec<String> = vec![
        "sample".into(),
        dir.join("model.stan").display().to_string(),
        "--data".into(),
        dir.join("data.json").display().to_string(),
        "--output-dir".into(),
        dir.join("out").display().to_string(),
        "--quiet".into(),
    ];
    let mut option = |name: &str, value: String| argv.extend([format!("--{name}"), value]);
    option("chains", "1".into());
    option("threads", "1".into());
    option("threads-per-chain", "1".into());
    option("warmup", warmup.to_string());
    option("draws", draws.to_string());
    option("thin", g.c.pick(&[1u64, 1, 2, 3]).to_string());
    option("seed", (g.c.u64() % 1000).to_string());
    option("adapt-delta", g.c.pick(&[0.8, 0.5, 0.95]).to_string());
    option("max-depth", g.c.pick(&[3u32, 2, 1, 4]).to_string());
    let metric = if g.c.one_in(4) { "dense" } else { "diag" };
    option("metric", metric.into());
    option("init", g.c.pick(&["2", "0", "0.5", "20"]).to_string());
    if g.c.one_in(3) {
        argv.push("--save-warmup".into());
    }
    let args = SampleCommand::try_parse_from(&argv)
        .unwrap_or_else(|e| panic!("generated arguments {argv:?} do not parse: {e}"))
        .args;
    GeneratedRun {
        program,
        data,
        args,
    }
}

/// The whole-run target. Panics only on a broken promise (see the crate documentation).
pub fn sample_run(bytes: &[u8]) -> Result<(), String> {
    let dir = run_dir();
    let run = generate_run(bytes, &dir);
    let model = run
        .args
        .model
        .as_ref()
        .expect("a generated run names its program");
    std::fs::write(model, &run.program).expect("write the generated program");
    std::fs::write(run.args.data.as_ref().expect("data path"), &run.data)
        .expect("write the generated data");
    let mut summary = Vec::new();
    match run_to(&run.args, &mut summary) {
        Ok(()) => Ok(()),
        Err(error) => check_message(
            &format!("hazel sample on\n{}\n{}", run.program, run.data),
            &error.to_string(),
        ),
    }
}

/// A directory of this thread's own (runs in parallel test threads must not share files),
/// in memory where the system has `/dev/shm`: rewriting files on a disk file system costs a
/// write-back per run, most of a run's time.
fn run_dir() -> PathBuf {
    thread_local! {
        static DIR: PathBuf = {
            let shm = std::path::Path::new("/dev/shm");
            let base = if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() };
            let dir = base.join(format!(
                "hazel-fuzz-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ).replace(['(', ')'], ""));
            std::fs::create_dir_all(&dir).expect("create the fuzz run directory");
            dir
        };
    }
    DIR.with(|d| d.clone())
}

struct Generator<'c, 'b> {
    c: &'c mut Choices<'b>,
    vars: Vec<Var>,
    /// The data's `N`.
    n: usize,
}

const UNARY: &[&str] = &[
    "exp",
    "log",
    "log1p",
    "sqrt",
    "square",
    "inv_logit",
    "logit",
    "abs",
    "lgamma",
    "tanh",
    "sin",
    "cos",
    "Phi",
    "expm1",
    "cbrt",
    "inv",
    "log1m",
    "atan",
    "erf",
];
const BINARY_FN: &[&str] = &[
    "fmin",
    "fmax",
    "pow",
    "log_sum_exp",
    "hypot",
    "atan2",
    "fdim",
];
const LITERALS: &[&str] = &[
    "0.5", "1", "2", "-1", "0", "1e300", "1e-300", "3.5", "-0.25",
];

impl Generator<'_, '_> {
    fn program(&mut self) -> String {
        let mut p =
            String::from("data {\n  int<lower=0> N;\n  vector[N] y;\n  real x;\n}\nparameters {\n");
        let count = 1 + self.c.below(3);
        for i in 0..count {
            let decl = self.parameter(i);
            let _ = writeln!(p, "  {decl};");
        }
        p.push_str("}\n");
        if self.c.one_in(3) {
            p.push_str("transformed parameters {\n");
            let constraint = self.c.pick(&["", "", "<lower=0>", "<upper=10>"]);
            let e = self.expr(2);
            let _ = writeln!(p, "  real{constraint} tp = {e};");
            p.push_str("}\n");
            self.vars.push(Var {
                name: "tp".into(),
                kind: Kind::Real {
                    positive: constraint == "<lower=0>",
                    unit: false,
                },
            });
        }
        p.push_str("model {\n");
        for _ in 0..1 + self.c.below(4) {
            let s = self.statement();
            let _ = writeln!(p, "  {s}");
        }
        p.push_str("}\n");
        if self.c.one_in(3) {
            p.push_str("generated quantities {\n");
            for i in 0..1 + self.c.below(2) {
                let s = self.generated(i);
                let _ = writeln!(p, "  {s}");
            }
            p.push_str("}\n");
        }
        p
    }

    /// Data matching the program's data block, now and then not.
    fn data(&mut self) -> String {
        let len = if self.c.one_in(20) {
            self.n + 1
        } else {
            self.n
        };
        let y: Vec<String> = (0..len)
            .map(|_| format!("{}", (self.c.byte() as f64 - 128.0) / 32.0))
            .collect();
        let x = self
            .c
            .pick(&["0.5", "-2", "0", "1e10", "\"NaN\"", "\"inf\""]);
        format!(
            "{{\"N\": {}, \"y\": [{}], \"x\": {x}}}",
            self.n,
            y.join(", ")
        )
    }

    /// The `i`th parameter's declaration; the first is always a real, so no program is
    /// parameter-free.
    fn parameter(&mut self, i: usize) -> String {
        let name = format!("p{i}");
        let choice = if i == 0 {
            self.c.below(7)
        } else {
            self.c.below(22)
        };
        let size = if self.c.one_in(4) {
            Size::DataN
        } else {
            Size::Literal(1 + self.c.below(3))
        };
        let size_text = match size {
            Size::DataN => "N".to_string(),
            Size::Literal(k) => k.to_string(),
        };
        let k = 2 + self.c.below(2);
        let real = |positive, unit| Kind::Real { positive, unit };
        let vector = |positive, simplex| Kind::Vector {
            size,
            positive,
            simplex,
        };
        let (decl, kind) = match choice {
            0 => ("real".to_string(), real(false, false)),
            1 => ("real<lower=0>".to_string(), real(true, false)),
            2 => ("real<lower=0, upper=1>".to_string(), real(true, true)),
            3 => ("real<lower=-3>".to_string(), real(false, false)),
            4 => ("real<upper=2>".to_string(), real(false, false)),
            5 => (
                "real<offset=1, multiplier=2>".to_string(),
                real(false, false),
            ),
            6 => ("real<lower=-1, upper=5>".to_string(), real(false, false)),
            7 => (format!("vector[{size_text}]"), vector(false, false)),
            8 => (format!("vector<lower=0>[{size_text}]"), vector(true, false)),
            9 => (format!("simplex[{size_text}]"), vector(true, true)),
            10 => (format!("ordered[{size_text}]"), vector(false, false)),
            11 => (
                format!("positive_ordered[{size_text}]"),
                vector(true, false),
            ),
            12 => (
                format!("unit_vector[{k}]"),
                Kind::Vector {
                    size: Size::Literal(k),
                    positive: false,
                    simplex: false,
                },
            ),
            13 => (
                format!("sum_to_zero_vector[{k}]"),
                Kind::Vector {
                    size: Size::Literal(k),
                    positive: false,
                    simplex: false,
                },
            ),
            14 => (format!("array[{size_text}] real"), vector(false, false)),
            15 => (
                format!("array[{size_text}] real<lower=0>"),
                vector(true, false),
            ),
            16 => (format!("row_vector[{size_text}]"), vector(false, false)),
            17 => (
                format!("cholesky_factor_corr[{k}]"),
                Kind::Matrix {
                    k,
                    which: MatrixKind::CorrCholesky,
                },
            ),
            18 => (
                format!("corr_matrix[{k}]"),
                Kind::Matrix {
                    k,
                    which: MatrixKind::Corr,
                },
            ),
            19 => (
                format!("cov_matrix[{k}]"),
                Kind::Matrix {
                    k,
                    which: MatrixKind::Cov,
                },
            ),
            20 => (
                format!("cholesky_factor_cov[{k}]"),
                Kind::Matrix {
                    k,
                    which: MatrixKind::CovCholesky,
                },
            ),
            _ => (
                format!("matrix[{k}, {k}]"),
                Kind::Matrix {
                    k,
                    which: MatrixKind::Free,
                },
            ),
        };
        self.vars.push(Var {
            name: name.clone(),
            kind,
        });
        format!("{decl} {name}")
    }

    /// A real-valued expression of at most `depth` levels.
    fn expr(&mut self, depth: usize) -> String {
        if depth == 0 || self.c.exhausted() {
            return self.leaf();
        }
        match self.c.below(8) {
            0 | 1 => self.leaf(),
            2 => {
                let f = self.c.pick(UNARY);
                let a = self.expr(depth - 1);
                format!("{f}({a})")
            }
            3 => {
                let f = self.c.pick(BINARY_FN);
                let (a, b) = (self.expr(depth - 1), self.expr(depth - 1));
                format!("{f}({a}, {b})")
            }
            4 => {
                let a = self.expr(depth - 1);
                format!("-{a}")
            }
            5 => {
                let (a, b) = (self.expr(depth - 1), self.expr(depth - 1));
                format!("({a} > {b} ? {a} : {b})")
            }
            _ => {
                let op = self.c.pick(&["+", "-", "*", "/", "^"]);
                let (a, b) = (self.expr(depth - 1), self.expr(depth - 1));
                format!("({a} {op} {b})")
            }
        }
    }

    /// A positive expression (a scale), now and then any expression.
    fn positive(&mut self) -> String {
        if self.c.one_in(8) {
            return self.expr(2);
        }
        match self.c.below(4) {
            0 => self.c.pick(&["1", "0.5", "2", "10"]).to_string(),
            1 => {
                let e = self.expr(1);
                format!("exp({e})")
            }
            2 => {
                let e = self.expr(1);
                format!("(square({e}) + 0.1)")
            }
            _ => {
                let pos: Vec<String> = self
                    .vars
                    .iter()
                    .filter(|v| matches!(v.kind, Kind::Real { positive: true, .. }))
                    .map(|v| v.name.clone())
                    .collect();
                if pos.is_empty() {
                    "1".to_string()
                } else {
                    pos[self.c.below(pos.len())].clone()
                }
            }
        }
    }

    fn leaf(&mut self) -> String {
        let choice = self.c.below(6);
        if choice == 0 || self.vars.is_empty() {
            return self.c.pick(LITERALS).to_string();
        }
        if choice == 1 {
            return self
                .c
                .pick(&["x", "N", "sum(y)", "y[1]", "mean(y)"])
                .to_string();
        }
        let var = self.vars[self.c.below(self.vars.len())].clone();
        match var.kind {
            Kind::Real { .. } => var.name,
            Kind::Vector { size, .. } => {
                let bound = match size {
                    Size::Literal(k) => k,
                    Size::DataN => self.n.max(1),
                };
                match self.c.below(5) {
                    0 => format!("sum({})", var.name),
                    1 => format!("max({})", var.name),
                    2 if self.c.one_in(8) => format!("{}[{}]", var.name, bound + 1),
                    _ => format!("{}[{}]", var.name, 1 + self.c.below(bound)),
                }
            }
            Kind::Matrix { k, .. } => match self.c.below(3) {
                0 => format!("sum({})", var.name),
                1 => format!("log_determinant({})", var.name),
                _ => format!(
                    "{}[{}, {}]",
                    var.name,
                    1 + self.c.below(k),
                    1 + self.c.below(k)
                ),
            },
        }
    }

    fn statement(&mut self) -> String {
        let var = self.vars[self.c.below(self.vars.len())].clone();
        match self.c.below(10) {
            0 => {
                let e = self.expr(3);
                format!("target += {e};")
            }
            1 => {
                let (e, s) = (self.expr(2), self.positive());
                format!("y ~ normal({e}, {s});")
            }
            2 => {
                let (e, s) = (self.expr(2), self.positive());
                let f = self
                    .c
                    .pick(&["normal", "student_t(4, ", "cauchy", "logistic"]);
                if f == "student_t(4, " {
                    format!("for (n in 1:N) y[n] ~ student_t(4, {e} + y[n] / 10, {s});")
                } else {
                    format!("for (n in 1:N) y[n] ~ {f}({e} * y[n], {s});")
                }
            }
            3 => {
                let (cond, a, b) = (self.expr(2), self.expr(2), self.expr(2));
                format!("if ({cond} > 0) target += {a}; else target += {b};")
            }
            _ => self.density_of(&var),
        }
    }

    /// A `~` statement for a parameter, fitting its kind (mostly).
    fn density_of(&mut self, var: &Var) -> String {
        let name = &var.name;
        match var.kind {
            Kind::Real { positive, unit } => {
                let (e, s, t) = (self.expr(2), self.positive(), self.positive());
                let family = match (unit, positive, self.c.below(8)) {
                    (true, _, 0..=3) => format!("beta({s}, {t})"),
                    (true, _, 4) => "uniform(0, 1)".to_string(),
                    (_, true, 0) => format!("exponential({s})"),
                    (_, true, 1) => format!("gamma({s}, {t})"),
                    (_, true, 2) => format!("lognormal({e}, {s})"),
                    (_, true, 3) => format!("weibull({s}, {t})"),
                    (_, true, 4) => format!("inv_gamma({s}, {t})"),
                    (_, true, 5) => format!("chi_square({s})"),
                    (_, _, 0) => format!("student_t({t}, {e}, {s})"),
                    (_, _, 1) => format!("cauchy({e}, {s})"),
                    (_, _, 2) => format!("double_exponential({e}, {s})"),
                    (_, _, 3) => format!("gumbel({e}, {s})"),
                    (_, _, 4) => format!("logistic({e}, {s})"),
                    (_, _, 5) => "std_normal()".to_string(),
                    _ => format!("normal({e}, {s})"),
                };
                let truncation = if !unit && self.c.one_in(10) {
                    " T[-5, 5]"
                } else {
                    ""
                };
                format!("{name} ~ {family}{truncation};")
            }
            Kind::Vector { simplex, size, .. } => {
                if simplex && self.c.below(2) == 0 {
                    let len = match size {
                        Size::Literal(k) => k.to_string(),
                        Size::DataN => "N".to_string(),
                    };
                    let a = self.positive();
                    return format!("{name} ~ dirichlet(rep_vector({a}, {len}));");
                }
                match self.c.below(3) {
                    0 => format!("target += -0.5 * dot_self(to_vector({name}));"),
                    1 => "target += 0;".to_string(),
                    _ => {
                        let (e, s) = (self.expr(2), self.positive());
                        format!("{name} ~ normal({e}, {s});")
                    }
                }
            }
            Kind::Matrix { k, which } => match which {
                MatrixKind::CorrCholesky => {
                    let eta = self.positive();
                    format!("{name} ~ lkj_corr_cholesky({eta});")
                }
                MatrixKind::Corr => {
                    let eta = self.positive();
                    format!("{name} ~ lkj_corr({eta});")
                }
                MatrixKind::Cov => {
                    format!("{name} ~ wishart({}, identity_matrix({k}));", k + 1)
                }
                MatrixKind::CovCholesky | MatrixKind::Free => {
                    let s = self.positive();
                    format!("to_vector({name}) ~ normal(0, {s});")
                }
            },
        }
    }

    fn generated(&mut self, i: usize) -> String {
        let (e, s) = (self.expr(2), self.positive());
        match self.c.below(5) {
            0 => format!("real g{i} = normal_rng({e}, {s});"),
            1 => format!("int g{i} = poisson_rng({s});"),
            2 => format!("int g{i} = bernoulli_logit_rng({e});"),
            3 => format!("vector[N] g{i} = y * {e};"),
            _ => format!("real g{i} = {e};"),
        }
    }
}
