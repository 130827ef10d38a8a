//! Corpus tests: every valid program parses and round-trips through the pretty-printer;
//! mutated programs never make the parser panic.

mod common;

use std::path::{Path, PathBuf};

use std::collections::BTreeSet;

use common::assert_round_trip;
use hazel_syntax::ast::*;
use hazel_syntax::parse_file;
use hazel_syntax::visit::{walk_program, Visitor};

fn stan_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "stan"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn valid_corpus() -> Vec<PathBuf> {
    stan_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/valid"))
}

/// `corpus/posteriordb/*/model.stan` at the workspace root (written separately; may be absent).
fn posteriordb_models() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/posteriordb");
    let mut files: Vec<PathBuf> = std::fs::read_dir(root)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path().join("model.stan")))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn check_parses_and_round_trips(path: &Path) {
    let result = parse_file(path, &[]).expect("readable");
    let name = path.display().to_string();
    let Some(program) = &result.program else {
        panic!("{name} does not parse:\n{}", result.render_diagnostics());
    };
    assert_round_trip(&name, program);
}

#[test]
fn valid_corpus_parses_and_round_trips() {
    let files = valid_corpus();
    assert!(files.len() >= 5, "corpus missing: {files:?}");
    for path in &files {
        check_parses_and_round_trips(path);
    }
}

/// The formatter keeps every comment, does not change the tree, and is idempotent.
fn check_format_keeps_comments(path: &Path) {
    let name = path.display().to_string();
    let result = parse_file(path, &[]).expect("readable");
    let formatted = result.format().expect("parses");
    for c in result
        .comments
        .iter()
        .filter(|c| c.span.file == result.main_file)
    {
        assert!(
            formatted.contains(c.text.trim_end()),
            "{name}: comment {:?} lost:\n{formatted}",
            c.text
        );
    }
    let again = hazel_syntax::parse_str(&name, &formatted);
    let program = again.program.as_ref().unwrap_or_else(|| {
        panic!(
            "{name}: formatted text does not parse:\n{}",
            again.render_diagnostics()
        )
    });
    assert!(
        program.same_structure(result.program.as_ref().unwrap()),
        "{name}: formatting changed the tree:\n{formatted}"
    );
    assert_eq!(
        again.comments.len(),
        result.comments.len(),
        "{name}: comment count changed"
    );
    let twice = again.format().expect("parses");
    assert_eq!(formatted, twice, "{name}: formatting is not idempotent");
}

#[test]
fn formatter_keeps_comments_and_is_idempotent() {
    for path in valid_corpus().iter().chain(posteriordb_models().iter()) {
        check_format_keeps_comments(path);
    }
}

#[test]
fn posteriordb_models_parse_and_round_trip() {
    for path in posteriordb_models() {
        check_parses_and_round_trips(&path);
    }
}

/// Records which syntactic constructs occur.
#[derive(Default)]
struct ConstructCensus {
    seen: BTreeSet<String>,
}

impl ConstructCensus {
    fn note(&mut self, name: impl Into<String>) {
        self.seen.insert(name.into());
    }
}

/// The variant name of a `Debug` rendering (`Foo { .. }` / `Foo(..)` / `Foo` → `Foo`).
fn variant<T: std::fmt::Debug>(value: &T) -> String {
    let text = format!("{value:?}");
    text.split(|c: char| !c.is_alphanumeric() && c != '_')
        .next()
        .unwrap_or("")
        .to_string()
}

impl Visitor for ConstructCensus {
    fn stmt(&mut self, stmt: &Stmt) {
        self.note(format!("stmt:{}", variant(&stmt.kind)));
        match &stmt.kind {
            StmtKind::Assign { op, lhs, .. } => {
                self.note(format!("assign:{op:?}"));
                self.note(format!("lvalue:{}", variant(&lhs.kind)));
            }
            StmtKind::Tilde {
                truncation: Some(t),
                ..
            } => self.note(format!(
                "truncation:{}{}",
                if t.lower.is_some() { "L" } else { "_" },
                if t.upper.is_some() { "U" } else { "_" }
            )),
            StmtKind::VarDecl(decl) => {
                if decl.declarators.len() > 1 {
                    self.note("decl:multiple");
                }
                if decl.declarators.iter().any(|d| d.init.is_some()) {
                    self.note("decl:define");
                }
            }
            _ => {}
        }
    }

    fn lvalue(&mut self, lv: &LValue) {
        self.note(format!("lvalue:{}", variant(&lv.kind)));
    }

    fn expr(&mut self, expr: &Expr) {
        self.note(format!("expr:{}", variant(&expr.kind)));
        match &expr.kind {
            ExprKind::Binary { op, .. } => self.note(format!("binop:{op:?}")),
            ExprKind::Unary { op, .. } => self.note(format!("unop:{op:?}")),
            ExprKind::Index { indices, .. } => {
                if indices.len() > 1 {
                    self.note("index:multiple");
                }
                for i in indices {
                    self.note(format!("index:{}", variant(i)));
                }
            }
            ExprKind::RealLit { text, .. } => {
                if text.contains(['e', 'E']) {
                    self.note("real:exponent");
                }
                if text.starts_with('.') {
                    self.note("real:leading-dot");
                }
                if text.ends_with('.') {
                    self.note("real:trailing-dot");
                }
            }
            _ => {}
        }
    }

    fn decl_type(&mut self, ty: &DeclType) {
        if !ty.array_dims.is_empty() {
            self.note("type:array");
        }
        self.note(format!("type:{}", ty.elem.keyword()));
        match ty.elem.angle_constraint() {
            Some(Constraint::Bounds { lower, upper }) => self.note(format!(
                "bounds:{}{}",
                lower.is_some() as u8,
                upper.is_some() as u8
            )),
            Some(Constraint::Affine { offset, multiplier }) => self.note(format!(
                "affine:{}{}",
                offset.is_some() as u8,
                multiplier.is_some() as u8
            )),
            _ => {}
        }
        if let (Constraint::CholeskyFactorCov, Shape::Matrix { cols, .. }) =
            (&ty.elem.constraint, &ty.elem.shape)
        {
            self.note(format!("cholesky_cov_sizes:{}", 1 + cols.is_some() as u8));
        }
    }

    fn unsized_type(&mut self, ty: &UnsizedType) {
        self.note(format!("argtype:{}", variant(&ty.elem)));
        if ty.array_dims > 1 {
            self.note("argtype:multi-dim-array");
        }
    }

    fn fundef(&mut self, f: &FunDef) {
        self.note(if f.body.is_some() {
            "fun:def"
        } else {
            "fun:forward"
        });
        if matches!(f.return_type, ReturnType::Void(_)) {
            self.note("fun:void");
        }
        if f.args.iter().any(|a| a.data_only) {
            self.note("fun:data-arg");
        }
    }
}

#[test]
fn valid_corpus_uses_every_construct() {
    let mut census = ConstructCensus::default();
    for path in valid_corpus() {
        let result = parse_file(&path, &[]).expect("readable");
        let program = result.program.expect("parses");
        for block in program.blocks() {
            census.note(format!("block:{:?}", block.kind));
        }
        if program.functions.is_some() {
            census.note("block:Functions");
        }
        walk_program(&program, &mut census);
    }
    let mut required: Vec<String> = [
        "block:Functions",
        "block:Data",
        "block:TransformedData",
        "block:Parameters",
        "block:TransformedParameters",
        "block:Model",
        "block:GeneratedQuantities",
        "fun:def",
        "fun:forward",
        "fun:void",
        "fun:data-arg",
        "argtype:multi-dim-array",
        "argtype:Tuple",
        "decl:multiple",
        "decl:define",
        "type:array",
        "bounds:10",
        "bounds:01",
        "bounds:11",
        "affine:11",
        "affine:01",
        "cholesky_cov_sizes:1",
        "cholesky_cov_sizes:2",
        "truncation:LU",
        "truncation:L_",
        "truncation:_U",
        "lvalue:Var",
        "lvalue:Index",
        "lvalue:TupleProj",
        "lvalue:Tuple",
        "index:All",
        "index:Single",
        "index:Lower",
        "index:Upper",
        "index:Range",
        "index:multiple",
        "real:exponent",
        "real:leading-dot",
        "real:trailing-dot",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // Every type keyword: the unconstrained ones and every constrained one.
    let keywords = [
        "int",
        "real",
        "complex",
        "vector",
        "row_vector",
        "matrix",
        "complex_vector",
        "complex_row_vector",
        "complex_matrix",
        "tuple",
    ];
    for elem in keywords
        .into_iter()
        .chain(CONSTRAINED_TYPES.iter().map(|t| t.keyword))
    {
        required.push(format!("type:{elem}"));
    }
    for stmt in [
        "VarDecl",
        "Assign",
        "Tilde",
        "TargetPlusAssign",
        "JacobianPlusAssign",
        "For",
        "Foreach",
        "While",
        "If",
        "Break",
        "Continue",
        "Return",
        "Print",
        "Reject",
        "FatalError",
        "Block",
        "Profile",
        "Call",
        "Empty",
    ] {
        required.push(format!("stmt:{stmt}"));
    }
    for op in ["Assign", "Add", "Sub", "Mul", "Div", "EltMul", "EltDiv"] {
        required.push(format!("assign:{op}"));
    }
    for expr in [
        "IntLit",
        "RealLit",
        "ImagLit",
        "Var",
        "Paren",
        "Binary",
        "Unary",
        "Transpose",
        "Ternary",
        "Call",
        "CondDistCall",
        "Target",
        "Index",
        "TupleProj",
        "Array",
        "RowVector",
        "Tuple",
    ] {
        required.push(format!("expr:{expr}"));
    }
    for op in [
        "Or", "And", "Eq", "Neq", "Lt", "Leq", "Gt", "Geq", "Add", "Sub", "Mul", "Div", "Mod",
        "EltMul", "EltDiv", "IntDiv", "LeftDiv", "Pow", "EltPow",
    ] {
        required.push(format!("binop:{op}"));
    }
    for op in ["Not", "Neg"] {
        required.push(format!("unop:{op}"));
    }
    let missing: Vec<&String> = required
        .iter()
        .filter(|r| !census.seen.contains(*r))
        .collect();
    assert!(
        missing.is_empty(),
        "constructs missing from tests/corpus/valid: {missing:?}"
    );
}

/// A small deterministic generator (SplitMix64) so the mutation test needs no dependency.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Tokens worth splicing into programs: they reach paths random bytes rarely do.
const SPLICES: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ";",
    ",",
    "<",
    ">",
    "<-",
    "~",
    "|",
    "?",
    ":",
    "'",
    ".",
    ".1",
    "T[",
    "array[",
    "tuple(",
    "real",
    "vector",
    "for (i in 1:N)",
    "if (",
    "else",
    "target +=",
    "#include x",
    "/*",
    "*/",
    "//",
    "\"",
    "1e",
    "2i",
    ".5",
    "^",
    "-",
    "!",
    "%/%",
    "\\",
    "=",
    "functions {",
    "model {",
    "data {",
    "increment_log_prob(",
    "get_lp()",
    "profile(\"p\")",
];

fn mutate(rng: &mut SplitMix, source: &[u8]) -> Vec<u8> {
    let mut bytes = source.to_vec();
    let edits = 1 + rng.below(4);
    for _ in 0..edits {
        let len = bytes.len();
        match rng.below(6) {
            0 if len > 0 => {
                let i = rng.below(len);
                bytes[i] ^= 1 << rng.below(8);
            }
            1 => {
                bytes.truncate(rng.below(len + 1));
            }
            2 if len > 0 => {
                let i = rng.below(len);
                let j = (i + 1 + rng.below(32)).min(len);
                bytes.drain(i..j);
            }
            3 => {
                let i = rng.below(len + 1);
                let s = SPLICES[rng.below(SPLICES.len())].as_bytes();
                bytes.splice(i..i, s.iter().copied());
            }
            4 if len > 0 => {
                // Duplicate a slice (creates unbalanced nesting).
                let i = rng.below(len);
                let j = (i + 1 + rng.below(64)).min(len);
                let chunk: Vec<u8> = bytes[i..j].to_vec();
                let k = rng.below(len + 1);
                bytes.splice(k..k, chunk);
            }
            _ if len > 0 => {
                let i = rng.below(len);
                bytes[i] = rng.next() as u8;
            }
            _ => {}
        }
    }
    bytes
}

#[test]
fn mutated_corpus_never_panics() {
    let sources: Vec<Vec<u8>> = valid_corpus()
        .iter()
        .chain(posteriordb_models().iter())
        .map(|p| std::fs::read(p).expect("readable"))
        .collect();
    let mut rng = SplitMix(0x5eed_0f5a_1100);
    let mut parsed_ok = 0usize;
    let mut rejected = 0usize;
    const ROUNDS: usize = 10_000;
    for round in 0..ROUNDS {
        let source = &sources[round % sources.len()];
        let mutated = mutate(&mut rng, source);
        let text = String::from_utf8_lossy(&mutated);
        let result = hazel_syntax::parse_str("mutant.stan", &text);
        // Every diagnostic renders and every span lies inside its file.
        for d in &result.diagnostics {
            let file = result.sources.get(d.span.file).expect("span file exists");
            assert!(d.span.start <= d.span.end && d.span.end as usize <= file.text.len());
            let _ = d.render_plain(&result.sources);
        }
        match &result.program {
            Some(program) => {
                parsed_ok += 1;
                assert_round_trip("mutant", program);
                let formatted = result.format().expect("parsed");
                let again = hazel_syntax::parse_str("formatted.stan", &formatted);
                let reparsed = again.program.as_ref().unwrap_or_else(|| {
                    panic!("formatted mutant does not parse:\n{formatted}\n--- mutant ---\n{text}")
                });
                assert!(
                    reparsed.same_structure(program),
                    "format changed tree:\n{text}"
                );
                assert_eq!(
                    again.format().expect("parsed"),
                    formatted,
                    "format not idempotent for:\n{text}"
                );
            }
            None => {
                assert!(result.has_errors());
                rejected += 1;
            }
        }
    }
    // The oracle is "no panic, and anything accepted round-trips"; both outcomes must occur
    // or the mutator is not exercising the parser.
    assert!(
        parsed_ok > 0 && rejected > 0,
        "ok {parsed_ok}, rejected {rejected}"
    );
}
