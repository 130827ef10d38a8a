//! The data reader target: bytes → CmdStan JSON text → `DataFile::parse` → every variable of
//! a fixed program's data block read and checked by `hazel_graph::compile` (the path
//! `hazel sample --data` takes). Half the inputs are the raw bytes as text; the other half are
//! decoded into structure-aware JSON: the program's variable names with values of nearly the
//! declared shapes (sizes from the data, off by one, empty), NaN/Inf spellings, huge and tiny
//! numbers, tuples as objects, wrong kinds and deep nesting.

use crate::check_message;
use crate::choices::Choices;
use hazel_check::CheckedProgram;
use hazel_data::DataFile;
use hazel_graph::{compile, CompileOptions};
use std::fmt::Write as _;
use std::sync::OnceLock;

/// The programs data are read against, covering int/real/vector/matrix/array/tuple/complex
/// data, bounds and structural constraints, with sizes taken from the data.
pub const DATA_PROGRAMS: &[&str] = &[
    "data { int<lower=0> N; array[N] int<lower=0, upper=1> y; real x; real<lower=0> s; }
     parameters { real mu; } model { mu ~ normal(x, 1); }",
    "data { int<lower=1> K; vector[K] v; row_vector[K] r; matrix[K, 2] m; simplex[K] theta; }
     parameters { real mu; } model { mu ~ normal(0, 1); }",
    "data { int<lower=0> N; array[N, 2] real a; array[2] vector<lower=-1, upper=1>[N] b;
            cov_matrix[2] S; corr_matrix[2] C; cholesky_factor_cov[2] L; }
     parameters { real mu; } model { mu ~ normal(0, 1); }",
    "data { tuple(int, array[2] real) t; array[2] tuple(real, vector[2]) at; complex z;
            complex_vector[2] zv; }
     parameters { real mu; } model { mu ~ normal(0, 1); }",
    "data { int<lower=0> N; ordered[N] o; positive_ordered[N] po; unit_vector[2] u;
            sum_to_zero_vector[3] sz; array[N] int<lower=-2> k; cholesky_factor_corr[2] LC; }
     parameters { real mu; } model { mu ~ normal(0, 1); }",
    "data { int<lower=0> N; array[N] real<lower=0> y; vector<lower=0>[N] w;
            array[N] vector[2] pts; }
     transformed data { real m = N > 0 ? mean(y) : 0; }
     parameters { real mu; } model { mu ~ normal(m, 1); }",
];

/// What a variable's JSON value looks like, for generating nearly right values.
#[derive(Clone, Copy)]
enum Leaf {
    Int,
    Real,
    Complex,
    /// `tuple(int, array[2] real)`, `tuple(real, vector[2])`: objects with keys "1", "2".
    Tuple,
}

/// Size of one dimension: fixed, or the data's `N`/`K`.
#[derive(Clone, Copy)]
enum Dim {
    Fixed(usize),
    Size,
}

/// A data variable's name, dimensions and element kind.
type DataVar = (&'static str, Vec<Dim>, Leaf);

/// The variables of each program in [`DATA_PROGRAMS`] with their JSON shapes, after the name
/// of the size variable `Dim::Size` stands for (if any).
fn variables(program: usize) -> (Option<&'static str>, Vec<DataVar>) {
    use Dim::*;
    use Leaf::*;
    match program {
        0 => (
            Some("N"),
            vec![
                ("y", vec![Size], Int),
                ("x", vec![], Real),
                ("s", vec![], Real),
            ],
        ),
        1 => (
            Some("K"),
            vec![
                ("v", vec![Size], Real),
                ("r", vec![Size], Real),
                ("m", vec![Size, Fixed(2)], Real),
                ("theta", vec![Size], Real),
            ],
        ),
        2 => (
            Some("N"),
            vec![
                ("a", vec![Size, Fixed(2)], Real),
                ("b", vec![Fixed(2), Size], Real),
                ("S", vec![Fixed(2), Fixed(2)], Real),
                ("C", vec![Fixed(2), Fixed(2)], Real),
                ("L", vec![Fixed(2), Fixed(2)], Real),
            ],
        ),
        3 => (
            None,
            vec![
                ("t", vec![], Tuple),
                ("at", vec![Fixed(2)], Tuple),
                ("z", vec![], Complex),
                ("zv", vec![Fixed(2)], Complex),
            ],
        ),
        4 => (
            Some("N"),
            vec![
                ("o", vec![Size], Real),
                ("po", vec![Size], Real),
                ("u", vec![Fixed(2)], Real),
                ("sz", vec![Fixed(3)], Real),
                ("k", vec![Size], Int),
                ("LC", vec![Fixed(2), Fixed(2)], Real),
            ],
        ),
        _ => (
            Some("N"),
            vec![
                ("y", vec![Size], Real),
                ("w", vec![Size], Real),
                ("pts", vec![Size, Fixed(2)], Real),
            ],
        ),
    }
}

fn checked_programs() -> &'static [CheckedProgram] {
    static PROGRAMS: OnceLock<Vec<CheckedProgram>> = OnceLock::new();
    PROGRAMS.get_or_init(|| {
        DATA_PROGRAMS
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let result = hazel_check::check_source(&format!("data{i}.stan"), text);
                result
                    .checked
                    .unwrap_or_else(|| panic!("data program {i} does not check"))
            })
            .collect()
    })
}

/// The data reader target. Panics only on a broken promise (see the crate documentation).
pub fn data_reader(bytes: &[u8]) -> Result<(), String> {
    let mut choices = Choices::new(bytes);
    let program = choices.below(DATA_PROGRAMS.len());
    let text = if choices.below(2) == 0 {
        String::from_utf8_lossy(choices.rest()).into_owned()
    } else {
        structured_json(program, &mut choices)
    };
    read_against(program, &text)
}

/// Parses `text` and reads it against the data block of `DATA_PROGRAMS[program]`.
pub fn read_against(program: usize, text: &str) -> Result<(), String> {
    let data = match DataFile::parse(text) {
        Ok(data) => data,
        Err(error) => return check_message("parse", &error.to_string()),
    };
    let options = CompileOptions::default();
    match compile(&checked_programs()[program], &data, &options) {
        Ok(_) => Ok(()),
        Err(error) => check_message("read", &error.message),
    }
}

const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "3",
    "0.5",
    "-0.5",
    "1e308",
    "-1e308",
    "1e309",
    "1e-320",
    "-0",
    "2147483647",
    "2147483648",
    "-2147483649",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551616",
    "1.0",
    "1e2",
    "3.0e0",
    "0.999999999999",
    "4503599627370497",
    "\"NaN\"",
    "\"nan\"",
    "\"inf\"",
    "\"-inf\"",
    "\"Infinity\"",
    "\"-Infinity\"",
    "NaN",
    "Infinity",
    "-Infinity",
    "\"1\"",
    "\"\"",
    "true",
    "null",
    "{}",
    "[]",
    "1.",
    ".5",
    "01",
    "-",
    "1e",
    "+1",
];

/// A JSON text for program `program`'s variables, nearly right in shape.
fn structured_json(program: usize, choices: &mut Choices) -> String {
    let (size_name, vars) = variables(program);
    let size = choices.pick(&[0usize, 1, 2, 3, 2, 1, 4]);
    let mut out = String::from("{");
    let mut first = true;
    let mut member = |out: &mut String, name: &str| {
        if !first {
            out.push(',');
        }
        first = false;
        let _ = write!(out, "\"{name}\":");
    };
    if let Some(name) = size_name {
        if !choices.one_in(16) {
            member(&mut out, name);
            if choices.one_in(8) {
                out.push_str(choices.pick(NUMBERS));
            } else {
                let _ = write!(out, "{size}");
            }
        }
    }
    for (name, dims, leaf) in vars {
        if choices.one_in(16) {
            continue; // missing
        }
        member(&mut out, name);
        if choices.one_in(16) {
            // Deep nesting, balanced or not.
            let depth = 1 + choices.below(3000);
            out.push_str(&"[".repeat(depth));
            if !choices.one_in(4) {
                out.push_str(&"]".repeat(depth));
            }
            continue;
        }
        let sizes: Vec<usize> = dims
            .iter()
            .map(|d| {
                let n = match d {
                    Dim::Fixed(n) => *n,
                    Dim::Size => size,
                };
                if choices.one_in(10) {
                    choices.pick(&[0, n + 1, n.saturating_sub(1), 5])
                } else {
                    n
                }
            })
            .collect();
        // Sometimes one dimension too many or too few.
        let sizes = match choices.below(12) {
            0 => sizes[..sizes.len().saturating_sub(1)].to_vec(),
            1 => [sizes.as_slice(), &[2]].concat(),
            _ => sizes,
        };
        array(&mut out, &sizes, leaf, choices);
    }
    if choices.one_in(8) {
        // A name given twice, or an extra one.
        member(&mut out, choices.pick(&["N", "x", "extra", "y"]));
        out.push_str(choices.pick(NUMBERS));
    }
    if !choices.one_in(32) {
        out.push('}');
    }
    out
}

fn array(out: &mut String, sizes: &[usize], leaf: Leaf, choices: &mut Choices) {
    match sizes.split_first() {
        None => value(out, leaf, choices),
        Some((&n, rest)) => {
            out.push('[');
            for i in 0..n {
                if i > 0 {
                    out.push(',');
                }
                array(out, rest, leaf, choices);
            }
            out.push(']');
        }
    }
}

fn value(out: &mut String, leaf: Leaf, choices: &mut Choices) {
    if choices.one_in(6) {
        out.push_str(choices.pick(NUMBERS));
        return;
    }
    let real = |choices: &mut Choices| -> String {
        match choices.below(4) {
            0 => format!("{}", choices.below(5)),
            1 => format!("{}", (choices.byte() as f64 - 128.0) / 37.0),
            2 => format!("{}", choices.byte() as f64 / 256.0),
            _ => choices.pick(NUMBERS).to_string(),
        }
    };
    match leaf {
        Leaf::Int => {
            let _ = write!(out, "{}", choices.below(4) as i64 - 1);
        }
        Leaf::Real => out.push_str(&real(choices)),
        Leaf::Complex => {
            let (re, im) = (real(choices), real(choices));
            match choices.below(4) {
                0 => out.push_str(&re),
                1 => {
                    let _ = write!(out, "[{re}]");
                }
                _ => {
                    let _ = write!(out, "[{re},{im}]");
                }
            }
        }
        Leaf::Tuple => {
            let keys = match choices.below(6) {
                0 => &["1"][..],
                1 => &["2", "1"][..],
                2 => &["1", "2", "3"][..],
                3 => &["a", "2"][..],
                _ => &["1", "2"][..],
            };
            out.push('{');
            for (i, key) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let _ = write!(out, "\"{key}\":");
                if i == 0 {
                    out.push_str(&real(choices));
                } else {
                    let n = choices.pick(&[2, 2, 2, 1, 3, 0]);
                    array(out, &[n], Leaf::Real, choices);
                }
            }
            out.push('}');
        }
    }
}
