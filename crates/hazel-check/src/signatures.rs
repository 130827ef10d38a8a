//! The built-in signature table: `signatures.txt` (data) parsed once into a lookup table, and
//! overload resolution with Stan's promotions.
//!
//! The file format is documented at the top of `signatures.txt`. Patterns (`$reals`, `$R`,
//! `$T`, ...) keep the table small: Stan's vectorised functions accept every container shape
//! and listing each concrete combination would be tens of thousands of lines.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::types::{parse_type, split_top_level, Type};

/// What one argument position accepts.
#[derive(Debug, Clone, PartialEq)]
pub enum Pattern {
    /// A concrete type; arguments may promote to it.
    Exact(Type),
    /// `$reals`: int, real, vector, row_vector, array[] int, array[] real.
    Reals,
    /// `$ints`: int, array[] int.
    Ints,
    /// `$vectors`: vector, row_vector and 1-d arrays of them.
    Vectors,
    /// `$R`: any int/real type, vectorised (shape shared with the other `$R`/`$I` arguments).
    AnyReal,
    /// `$I`: int or any array of int, vectorised.
    AnyInt,
    /// `$any`: any type at all.
    Any,
    /// `$array`: any array.
    AnyArray,
    /// `$T` with `dims` array dimensions around it (`array[] $T` has dims 1).
    TypeVar { dims: usize },
    /// `$fn`: a function value.
    Function,
}

/// One argument of a signature.
#[derive(Debug, Clone, PartialEq)]
pub struct ArgSpec {
    /// The argument must be data-only (not depend on parameters).
    pub data_only: bool,
    pub pattern: Pattern,
}

/// How a signature's return type is computed from its arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum ReturnSpec {
    Exact(Type),
    /// Shape of the vectorised (`$R`/`$I`) arguments with a real base.
    VectorisedReal,
    /// Shape of the vectorised arguments with an int base.
    VectorisedInt,
    /// `array[dims] $T`.
    TypeVar {
        dims: usize,
    },
    /// `real` if every `$reals`/`$ints`/`$vectors` argument is a scalar, else `array[] real`.
    RngReal,
    /// `int` or `array[] int`, as for [`ReturnSpec::RngReal`].
    RngInt,
}

/// One built-in signature.
#[derive(Debug, Clone, PartialEq)]
pub struct Signature {
    pub name: String,
    pub args: Vec<ArgSpec>,
    /// Further arguments of any type follow (`...`).
    pub variadic: bool,
    pub ret: ReturnSpec,
    /// 1-based line in `signatures.txt`, for error messages about the table itself.
    pub line: usize,
}

impl Signature {
    /// Renders the signature as in the Functions Reference (`normal_lpdf(reals, reals, reals) => real`).
    pub fn render(&self) -> String {
        let mut out = format!("{}(", self.name);
        for (i, a) in self.args.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            if a.data_only {
                out.push_str("data ");
            }
            out.push_str(&pattern_text(&a.pattern));
        }
        if self.variadic {
            if !self.args.is_empty() {
                out.push_str(", ");
            }
            out.push_str("...");
        }
        out.push_str(") => ");
        out.push_str(&match &self.ret {
            ReturnSpec::Exact(t) => t.to_string(),
            ReturnSpec::VectorisedReal => "R".into(),
            ReturnSpec::VectorisedInt => "I".into(),
            ReturnSpec::TypeVar { dims } => with_dims(*dims, "T"),
            ReturnSpec::RngReal => "real or array[] real".into(),
            ReturnSpec::RngInt => "int or array[] int".into(),
        });
        out
    }
}

fn with_dims(dims: usize, inner: &str) -> String {
    if dims == 0 {
        inner.to_string()
    } else {
        format!("array[{}] {inner}", ",".repeat(dims - 1))
    }
}

fn pattern_text(p: &Pattern) -> String {
    match p {
        Pattern::Exact(t) => t.to_string(),
        Pattern::Reals => "reals".into(),
        Pattern::Ints => "ints".into(),
        Pattern::Vectors => "vectors".into(),
        Pattern::AnyReal => "R".into(),
        Pattern::AnyInt => "I".into(),
        Pattern::Any => "T".into(),
        Pattern::AnyArray => "array[] T".into(),
        Pattern::TypeVar { dims } => with_dims(*dims, "T"),
        Pattern::Function => "function".into(),
    }
}

/// The parsed signature table.
#[derive(Debug, Default)]
pub struct SignatureTable {
    pub signatures: Vec<Signature>,
    by_name: HashMap<String, Vec<usize>>,
}

/// A successful overload resolution.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Resolved {
    /// Index into [`SignatureTable::signatures`].
    pub signature: usize,
    pub ret: Type,
    /// Total promotion steps used.
    pub cost: u32,
}

/// Why a call could not be resolved.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ResolveError {
    UnknownFunction,
    /// The function exists but no signature accepts these argument types.
    NoMatch,
    /// Several signatures accept the arguments with the same (least) promotion and they
    /// disagree on the result.
    Ambiguous(Vec<usize>),
}

impl SignatureTable {
    /// The table of Stan's built-ins, parsed once from the embedded `signatures.txt`.
    pub fn builtin() -> &'static SignatureTable {
        static TABLE: OnceLock<SignatureTable> = OnceLock::new();
        TABLE.get_or_init(|| {
            // The embedded table is part of this crate and a unit test parses it, so an error
            // here is a bug in the file caught before release; skip bad lines rather than panic.
            let (table, _errors) = SignatureTable::parse(include_str!("signatures.txt"));
            table
        })
    }

    /// Parses a table in the `signatures.txt` format; returns the table and the lines that
    /// could not be parsed (with their 1-based line numbers).
    pub fn parse(text: &str) -> (SignatureTable, Vec<(usize, String)>) {
        let mut table = SignatureTable::default();
        let mut errors = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line_no = i + 1;
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Err(e) = table.parse_line(line, line_no) {
                errors.push((line_no, format!("{e}: {line}")));
            }
        }
        (table, errors)
    }

    fn push(&mut self, sig: Signature) {
        self.by_name
            .entry(sig.name.clone())
            .or_default()
            .push(self.signatures.len());
        self.signatures.push(sig);
    }

    fn parse_line(&mut self, line: &str, line_no: usize) -> Result<(), String> {
        let (keyword, rest) = line.split_once(' ').ok_or("missing keyword")?;
        let rest = rest.trim();
        match keyword {
            "fn" => {
                let (name, args, variadic, after) = parse_call(rest)?;
                let ret_text = after
                    .trim()
                    .strip_prefix("=>")
                    .ok_or("expected `=>` and a return type")?;
                let ret = parse_return(ret_text.trim())?;
                self.push(Signature {
                    name,
                    args,
                    variadic,
                    ret,
                    line: line_no,
                });
            }
            "unary" => {
                for name in rest.split_whitespace() {
                    self.push(Signature {
                        name: name.to_string(),
                        args: vec![arg(Pattern::AnyReal)],
                        variadic: false,
                        ret: ReturnSpec::VectorisedReal,
                        line: line_no,
                    });
                }
            }
            "binary" => {
                for name in rest.split_whitespace() {
                    self.push(Signature {
                        name: name.to_string(),
                        args: vec![arg(Pattern::AnyReal), arg(Pattern::AnyReal)],
                        variadic: false,
                        ret: ReturnSpec::VectorisedReal,
                        line: line_no,
                    });
                }
            }
            "complex_unary" => {
                for name in rest.split_whitespace() {
                    for t in [
                        Type::Complex,
                        Type::ComplexVector,
                        Type::ComplexRowVector,
                        Type::ComplexMatrix,
                    ] {
                        self.push(Signature {
                            name: name.to_string(),
                            args: vec![arg(Pattern::Exact(t.clone()))],
                            variadic: false,
                            ret: ReturnSpec::Exact(t),
                            line: line_no,
                        });
                    }
                }
            }
            "dist" => {
                let open = rest.find('(').ok_or("expected `(`")?;
                let close = rest.rfind(')').ok_or("expected `)`")?;
                let family = rest[..open].trim().to_string();
                let inside = &rest[open + 1..close];
                let (variate, params) = inside.split_once('|').ok_or("expected `|`")?;
                let variate = parse_arg(variate.trim())?;
                let mut params_spec = Vec::new();
                for p in split_top_level(params) {
                    if !p.is_empty() {
                        params_spec.push(parse_arg(p)?);
                    }
                }
                let forms: Vec<&str> = rest[close + 1..].split_whitespace().collect();
                if forms.is_empty() {
                    return Err("a distribution needs at least one form".into());
                }
                let discrete = forms.contains(&"lpmf");
                for form in forms {
                    let mut full_args = vec![variate.clone()];
                    full_args.extend(params_spec.iter().cloned());
                    let real = ReturnSpec::Exact(Type::Real);
                    let (suffixes, args, ret): (&[&str], _, _) = match form {
                        "lpdf" => (&["_lpdf", "_lupdf"], full_args, real),
                        "lpmf" => (&["_lpmf", "_lupmf"], full_args, real),
                        "cdf" => (&["_cdf"], full_args, real),
                        "lcdf" => (&["_lcdf"], full_args, real),
                        "lccdf" => (&["_lccdf"], full_args, real),
                        "rng" => (
                            &["_rng"],
                            params_spec.clone(),
                            if discrete {
                                ReturnSpec::RngInt
                            } else {
                                ReturnSpec::RngReal
                            },
                        ),
                        other => return Err(format!("unknown distribution form `{other}`")),
                    };
                    for suffix in suffixes {
                        self.push(Signature {
                            name: format!("{family}{suffix}"),
                            args: args.clone(),
                            variadic: false,
                            ret: ret.clone(),
                            line: line_no,
                        });
                    }
                }
            }
            other => return Err(format!("unknown line kind `{other}`")),
        }
        Ok(())
    }

    /// Indices of every signature with this exact name.
    pub fn candidates(&self, name: &str) -> &[usize] {
        self.by_name.get(name).map(|v| v.as_slice()).unwrap_or(&[])
    }

    pub fn contains(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// Every distinct function name in the table (for "did you mean" hints).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(|s| s.as_str())
    }

    /// True if `family` has a density (`family_lpdf` or `family_lpmf`).
    pub fn has_distribution(&self, family: &str) -> bool {
        self.contains(&format!("{family}_lpdf")) || self.contains(&format!("{family}_lpmf"))
    }

    /// Resolves a call of `name` with arguments of the given types, choosing the signature
    /// that needs the fewest promotions.
    pub(crate) fn resolve(&self, name: &str, args: &[Type]) -> Result<Resolved, ResolveError> {
        let candidates = self.candidates(name);
        if candidates.is_empty() {
            return Err(ResolveError::UnknownFunction);
        }
        let mut best: Vec<Resolved> = Vec::new();
        for &idx in candidates {
            if let Some((cost, ret)) = match_signature(&self.signatures[idx], args) {
                match best.first() {
                    Some(b) if cost > b.cost => {}
                    Some(b) if cost < b.cost => {
                        best.clear();
                        best.push(Resolved {
                            signature: idx,
                            ret,
                            cost,
                        })
                    }
                    _ => best.push(Resolved {
                        signature: idx,
                        ret,
                        cost,
                    }),
                }
            }
        }
        match best.len() {
            0 => Err(ResolveError::NoMatch),
            1 => Ok(best.remove(0)),
            _ => {
                // Overlapping patterns (e.g. `abs(int)` and `abs($I)`) tie with the same
                // result; only a disagreement about the result type is a real ambiguity.
                if best.iter().all(|r| r.ret == best[0].ret) {
                    Ok(best.remove(0))
                } else {
                    Err(ResolveError::Ambiguous(
                        best.iter().map(|r| r.signature).collect(),
                    ))
                }
            }
        }
    }
}

fn arg(pattern: Pattern) -> ArgSpec {
    ArgSpec {
        data_only: false,
        pattern,
    }
}

/// Parses `name(a, b, ...)` and returns (name, args, variadic, text after the `)`).
fn parse_call(text: &str) -> Result<(String, Vec<ArgSpec>, bool, &str), String> {
    let open = text.find('(').ok_or("expected `(`")?;
    let name = text[..open].trim().to_string();
    // Find the matching close parenthesis (argument types may contain `tuple(...)`).
    let mut depth = 0;
    let mut close = None;
    for (i, c) in text[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(open + i);
                    break;
                }
            }
            _ => {}
        }
    }
    let close = close.ok_or("unbalanced parentheses")?;
    let mut args = Vec::new();
    let mut variadic = false;
    for piece in split_top_level(&text[open + 1..close]) {
        if piece == "..." {
            variadic = true;
        } else if variadic {
            return Err("`...` must come last".into());
        } else {
            args.push(parse_arg(piece)?);
        }
    }
    Ok((name, args, variadic, &text[close + 1..]))
}

fn parse_arg(text: &str) -> Result<ArgSpec, String> {
    let (data_only, rest) = match text.strip_prefix("data ") {
        Some(r) => (true, r.trim()),
        None => (false, text),
    };
    let pattern = match rest {
        "$reals" => Pattern::Reals,
        "$ints" => Pattern::Ints,
        "$vectors" => Pattern::Vectors,
        "$R" => Pattern::AnyReal,
        "$I" => Pattern::AnyInt,
        "$any" => Pattern::Any,
        "$array" => Pattern::AnyArray,
        "$fn" => Pattern::Function,
        other => {
            if let Some(dims) = type_var_dims(other) {
                Pattern::TypeVar { dims }
            } else {
                Pattern::Exact(parse_type(other).ok_or_else(|| format!("bad type `{other}`"))?)
            }
        }
    };
    Ok(ArgSpec { data_only, pattern })
}

/// `$T` → 0, `array[] $T` → 1, `array[,] $T` → 2.
fn type_var_dims(text: &str) -> Option<usize> {
    if text == "$T" {
        return Some(0);
    }
    let rest = text.strip_prefix("array[")?;
    let close = rest.find(']')?;
    if rest[close + 1..].trim() != "$T" || !rest[..close].chars().all(|c| c == ',') {
        return None;
    }
    Some(close + 1)
}

fn parse_return(text: &str) -> Result<ReturnSpec, String> {
    Ok(match text {
        "$R" => ReturnSpec::VectorisedReal,
        "$I" => ReturnSpec::VectorisedInt,
        "$rngR" => ReturnSpec::RngReal,
        "$rngI" => ReturnSpec::RngInt,
        other => {
            if let Some(dims) = type_var_dims(other) {
                ReturnSpec::TypeVar { dims }
            } else {
                ReturnSpec::Exact(parse_type(other).ok_or_else(|| format!("bad type `{other}`"))?)
            }
        }
    })
}

/// Shape class used to check that vectorised arguments agree: array dims plus the kind of
/// element (scalar / vector / row_vector / matrix), ignoring int vs real.
fn shape_key(t: &Type) -> (usize, u8) {
    let elem = match t.array_element() {
        Type::Int | Type::Real => 0,
        Type::Vector => 1,
        Type::RowVector => 2,
        Type::Matrix => 3,
        _ => 4,
    };
    (t.array_dims(), elem)
}

/// Dimensions of a container counting a vector's one and a matrix's two: stanc matches an
/// int array (`$I`) with any real container of as many (`bessel_second_kind(array[] int,
/// vector)`, `falling_factorial(matrix, array[,] int)`).
fn flat_dims(t: &Type) -> usize {
    let inner = match t.array_element() {
        Type::Vector | Type::RowVector => 1,
        Type::Matrix => 2,
        _ => 0,
    };
    t.array_dims() + inner
}

/// Tries one signature: `Some((promotion cost, return type))` if the arguments fit.
pub(crate) fn match_signature(sig: &Signature, args: &[Type]) -> Option<(u32, Type)> {
    if args.len() < sig.args.len() || (!sig.variadic && args.len() != sig.args.len()) {
        return None;
    }
    let mut cost = 0u32;
    let mut type_var: Option<Type> = None;
    // The non-scalar shape shared by the vectorised arguments, if any.
    let mut vector_shape: Option<Type> = None;
    // Whether that shape is a `$I` argument's (an int array).
    let mut shape_from_int = false;
    let mut rng_container = false;
    for (spec, actual) in sig.args.iter().zip(args) {
        if *actual == Type::Error {
            continue;
        }
        match &spec.pattern {
            Pattern::Exact(t) => cost += actual.promotion_cost(t)?,
            Pattern::Reals => match actual {
                Type::Real | Type::Vector | Type::RowVector => {
                    rng_container |= !actual.is_scalar();
                }
                Type::Int => cost += 1,
                Type::Array(1, e) if **e == Type::Real => rng_container = true,
                Type::Array(1, e) if **e == Type::Int => {
                    rng_container = true;
                    cost += 1
                }
                _ => return None,
            },
            Pattern::Ints => match actual {
                Type::Int => {}
                Type::Array(1, e) if **e == Type::Int => rng_container = true,
                _ => return None,
            },
            Pattern::Vectors => match actual {
                Type::Vector | Type::RowVector => {}
                Type::Array(1, e) if matches!(**e, Type::Vector | Type::RowVector) => {
                    rng_container = true
                }
                _ => return None,
            },
            Pattern::AnyReal | Pattern::AnyInt => {
                let ok = if spec.pattern == Pattern::AnyInt {
                    actual.is_int_based()
                } else {
                    actual.is_int_based() || actual.is_real_based()
                };
                if !ok {
                    return None;
                }
                if spec.pattern == Pattern::AnyReal && actual.is_int_based() {
                    cost += 1;
                }
                if !actual.is_scalar() {
                    let int_pattern = spec.pattern == Pattern::AnyInt;
                    match &vector_shape {
                        None => {
                            vector_shape = Some(actual.clone());
                            shape_from_int = int_pattern;
                        }
                        Some(s) => {
                            let agree = if int_pattern || shape_from_int {
                                flat_dims(s) == flat_dims(actual)
                            } else {
                                shape_key(s) == shape_key(actual)
                            };
                            if !agree {
                                return None;
                            }
                            if s.is_int_based() && !actual.is_int_based() {
                                vector_shape = Some(actual.clone());
                                shape_from_int = int_pattern;
                            }
                        }
                    }
                }
            }
            Pattern::Any => {}
            Pattern::AnyArray => {
                if actual.array_dims() == 0 {
                    return None;
                }
            }
            Pattern::TypeVar { dims } => {
                if actual.array_dims() < *dims {
                    return None;
                }
                let inner = strip_dims(actual, *dims);
                match &type_var {
                    None => type_var = Some(inner),
                    Some(bound) => {
                        if let Some(c) = inner.promotion_cost(bound) {
                            cost += c;
                        } else if let Some(c) = bound.promotion_cost(&inner) {
                            cost += c;
                            type_var = Some(inner);
                        } else {
                            return None;
                        }
                    }
                }
            }
            Pattern::Function => {
                if !matches!(actual, Type::Function(_)) {
                    return None;
                }
            }
        }
    }
    let ret = match &sig.ret {
        ReturnSpec::Exact(t) => t.clone(),
        ReturnSpec::VectorisedReal => match &vector_shape {
            Some(s) => s.with_real_base(),
            None => Type::Real,
        },
        ReturnSpec::VectorisedInt => match &vector_shape {
            Some(s) => s.with_int_base()?,
            None => Type::Int,
        },
        ReturnSpec::TypeVar { dims } => Type::array(*dims, type_var.unwrap_or(Type::Error)),
        ReturnSpec::RngReal => {
            if rng_container {
                Type::array(1, Type::Real)
            } else {
                Type::Real
            }
        }
        ReturnSpec::RngInt => {
            if rng_container {
                Type::array(1, Type::Int)
            } else {
                Type::Int
            }
        }
    };
    Some((cost, ret))
}

fn strip_dims(t: &Type, dims: usize) -> Type {
    match t {
        Type::Array(d, e) if *d > dims => Type::Array(d - dims, e.clone()),
        Type::Array(d, e) if *d == dims => (**e).clone(),
        other => other.clone(),
    }
}

/// Levenshtein distance, for "did you mean" hints.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The closest name to `name` among `names` within a distance that scales with its length.
pub fn closest<'a>(name: &str, names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).clamp(1, 3);
    let mut best: Option<(usize, &str)> = None;
    for candidate in names {
        if candidate == name || candidate.starts_with("operator") || candidate.contains('!') {
            continue;
        }
        let d = edit_distance(name, candidate);
        if d <= limit && best.is_none_or(|(bd, bn)| d < bd || (d == bd && candidate < bn)) {
            best = Some((d, candidate));
        }
    }
    best.map(|(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Type {
        parse_type(s).unwrap()
    }

    fn ret(name: &str, args: &[&str]) -> Result<Type, ResolveError> {
        let args: Vec<Type> = args.iter().map(|a| t(a)).collect();
        SignatureTable::builtin()
            .resolve(name, &args)
            .map(|r| r.ret)
    }

    #[test]
    fn embedded_table_parses_without_errors() {
        let (table, errors) = SignatureTable::parse(include_str!("signatures.txt"));
        assert!(errors.is_empty(), "{errors:#?}");
        assert!(table.signatures.len() > 900, "{}", table.signatures.len());
    }

    #[test]
    fn distributions_have_their_forms() {
        let table = SignatureTable::builtin();
        for name in [
            "normal_lpdf",
            "normal_lupdf",
            "normal_cdf",
            "normal_lcdf",
            "normal_lccdf",
            "normal_rng",
            "poisson_lpmf",
            "poisson_lupmf",
            "multi_normal_cholesky_lpdf",
            "lkj_corr_cholesky_lpdf",
        ] {
            assert!(table.contains(name), "{name}");
        }
        assert!(!table.contains("bernoulli_logit_lcdf"));
        assert!(table.has_distribution("normal"));
        assert!(!table.has_distribution("norml"));
    }

    #[test]
    fn vectorised_distributions() {
        assert_eq!(
            ret("normal_lpdf", &["vector", "real", "real"]),
            Ok(Type::Real)
        );
        assert_eq!(
            ret("normal_lpdf", &["array[] int", "int", "vector"]),
            Ok(Type::Real)
        );
        assert_eq!(
            ret("normal_lpdf", &["matrix", "real", "real"]),
            Err(ResolveError::NoMatch)
        );
        assert_eq!(
            ret("poisson_lpmf", &["array[] int", "vector"]),
            Ok(Type::Real)
        );
        assert_eq!(
            ret("poisson_lpmf", &["real", "real"]),
            Err(ResolveError::NoMatch)
        );
        assert_eq!(ret("normal_rng", &["real", "real"]), Ok(Type::Real));
        assert_eq!(
            ret("normal_rng", &["vector", "real"]),
            Ok(t("array[] real"))
        );
        assert_eq!(ret("poisson_rng", &["vector"]), Ok(t("array[] int")));
        assert_eq!(ret("poisson_rng", &["real"]), Ok(Type::Int));
    }

    #[test]
    fn elementwise_unary_functions_keep_shape() {
        assert_eq!(ret("exp", &["int"]), Ok(Type::Real));
        assert_eq!(ret("exp", &["array[,] int"]), Ok(t("array[,] real")));
        assert_eq!(ret("log", &["array[] vector"]), Ok(t("array[] vector")));
        assert_eq!(ret("inv_logit", &["matrix"]), Ok(Type::Matrix));
        assert_eq!(ret("exp", &["complex"]), Ok(Type::Complex));
        assert_eq!(ret("abs", &["int"]), Ok(Type::Int));
        assert_eq!(ret("abs", &["array[] int"]), Ok(t("array[] int")));
        assert_eq!(ret("abs", &["vector"]), Ok(Type::Vector));
    }

    #[test]
    fn binary_vectorisation_needs_matching_shapes() {
        assert_eq!(ret("pow", &["vector", "real"]), Ok(Type::Vector));
        assert_eq!(ret("pow", &["int", "int"]), Ok(Type::Real));
        assert_eq!(ret("pow", &["vector", "vector"]), Ok(Type::Vector));
        assert_eq!(
            ret("pow", &["vector", "row_vector"]),
            Err(ResolveError::NoMatch)
        );
        assert_eq!(ret("choose", &["int", "int"]), Ok(Type::Int));
        // An int array (`$I`) matches a real container of as many dimensions, a vector
        // counting one and a matrix two (stanc 2.37 accepts these); the result has the real
        // container's shape.
        assert_eq!(
            ret("falling_factorial", &["vector", "array[] int"]),
            Ok(Type::Vector)
        );
        assert_eq!(
            ret("falling_factorial", &["real", "array[] int"]),
            Ok(t("array[] real"))
        );
        assert_eq!(
            ret("falling_factorial", &["array[] vector", "array[,] int"]),
            Ok(t("array[] vector"))
        );
        assert_eq!(
            ret("bessel_second_kind", &["array[] int", "vector"]),
            Ok(Type::Vector)
        );
        assert_eq!(
            ret("bessel_second_kind", &["array[,] int", "matrix"]),
            Ok(Type::Matrix)
        );
        assert_eq!(
            ret("lmgamma", &["array[,] int", "array[] row_vector"]),
            Ok(t("array[] row_vector"))
        );
        // … and nothing else: dimensions must agree, and `$R` pairs keep their exact shape.
        for (f, a, b) in [
            ("falling_factorial", "vector", "array[,] int"),
            ("falling_factorial", "matrix", "array[] int"),
            ("bessel_second_kind", "array[] int", "array[] vector"),
            ("bessel_second_kind", "array[,] int", "vector"),
            ("pow", "vector", "array[] int"),
            ("pow", "array[] real", "vector"),
            ("fmax", "matrix", "array[,] real"),
        ] {
            assert_eq!(ret(f, &[a, b]), Err(ResolveError::NoMatch), "{f}({a}, {b})");
        }
    }

    #[test]
    fn least_promotion_wins() {
        assert_eq!(ret("operator+", &["int", "int"]), Ok(Type::Int));
        assert_eq!(ret("operator+", &["int", "real"]), Ok(Type::Real));
        assert_eq!(ret("operator+", &["real", "complex"]), Ok(Type::Complex));
        assert_eq!(ret("operator*", &["row_vector", "vector"]), Ok(Type::Real));
        assert_eq!(ret("operator*", &["matrix", "vector"]), Ok(Type::Vector));
        assert_eq!(ret("operator/", &["int", "int"]), Ok(Type::Int));
        assert_eq!(ret("max", &["int", "int"]), Ok(Type::Int));
        assert_eq!(ret("max", &["int", "real"]), Ok(Type::Real));
        assert_eq!(ret("sum", &["array[] int"]), Ok(Type::Int));
    }

    #[test]
    fn signatures_checked_against_stanc() {
        // Facts from stanc3's signature generator (stan_math_signatures/Generate.ml).
        assert_eq!(ret("operator^", &["vector", "int"]), Ok(Type::Vector));
        assert_eq!(ret("operator^", &["int", "int"]), Ok(Type::Real));
        assert_eq!(ret("operator/", &["real", "vector"]), Ok(Type::Vector));
        assert_eq!(
            ret("eigendecompose_sym", &["matrix"]),
            Ok(t("tuple(matrix, vector)"))
        );
        assert_eq!(
            ret("eigendecompose", &["matrix"]),
            Ok(t("tuple(complex_matrix, complex_vector)"))
        );
        assert_eq!(ret("to_int", &["array[,] real"]), Ok(t("array[,] int")));
        assert_eq!(ret("to_int", &["vector"]), Err(ResolveError::NoMatch));
        assert_eq!(ret("log_sum_exp", &["vector", "vector"]), Ok(Type::Vector));
        assert_eq!(ret("log_sum_exp", &["vector"]), Ok(Type::Real));
        assert_eq!(ret("falling_factorial", &["int", "int"]), Ok(Type::Int));
        // step is scalar only (stanc 2.37: step(vector) is an error).
        assert_eq!(ret("step", &["real"]), Ok(Type::Real));
        assert_eq!(ret("step", &["int"]), Ok(Type::Real));
        for a in ["vector", "array[] real", "matrix"] {
            assert_eq!(ret("step", &[a]), Err(ResolveError::NoMatch), "step({a})");
        }
        // poisson_binomial's probabilities: one vector, row_vector or array[] real.
        for theta in ["vector", "row_vector", "array[] real"] {
            for y in ["int", "array[] int"] {
                for f in ["poisson_binomial_lpmf", "poisson_binomial_lcdf"] {
                    assert_eq!(ret(f, &[y, theta]), Ok(Type::Real), "{f}({y}, {theta})");
                }
            }
            assert_eq!(ret("poisson_binomial_rng", &[theta]), Ok(Type::Int));
        }
        for theta in ["array[] vector", "array[,] real", "real"] {
            assert_eq!(
                ret("poisson_binomial_lpmf", &["array[] int", theta]),
                Err(ResolveError::NoMatch),
                "{theta}"
            );
        }
        assert_eq!(ret("prefix-", &["array[,] int"]), Ok(t("array[,] int")));
        assert_eq!(ret("sum", &["real"]), Err(ResolveError::NoMatch));
        assert_eq!(
            ret("cumulative_sum", &["matrix"]),
            Err(ResolveError::NoMatch)
        );
    }

    #[test]
    fn type_variables() {
        assert_eq!(
            ret("rep_array", &["vector", "int"]),
            Ok(t("array[] vector"))
        );
        assert_eq!(
            ret("rep_array", &["int", "int", "int"]),
            Ok(t("array[,] int"))
        );
        assert_eq!(
            ret("append_array", &["array[] int", "array[] real"]),
            Ok(t("array[] real"))
        );
        assert_eq!(
            ret("append_array", &["array[] int", "array[] vector"]),
            Err(ResolveError::NoMatch)
        );
        assert_eq!(ret("size", &["array[,] real"]), Ok(Type::Int));
        assert_eq!(ret("dims", &["matrix"]), Ok(t("array[] int")));
    }

    #[test]
    fn ambiguity_is_reported() {
        let (table, errors) = SignatureTable::parse(
            "fn f(int, real) => int\nfn f(real, int) => real\nfn g(real) => real\n",
        );
        assert!(errors.is_empty());
        assert!(matches!(
            table.resolve("f", &[Type::Int, Type::Int]),
            Err(ResolveError::Ambiguous(_))
        ));
        assert_eq!(
            table.resolve("f", &[Type::Int, Type::Real]).map(|r| r.ret),
            Ok(Type::Int)
        );
        assert_eq!(
            table.resolve("h", &[]).map(|r| r.ret),
            Err(ResolveError::UnknownFunction)
        );
    }

    #[test]
    fn bad_lines_are_reported_not_panicked_on() {
        let (_, errors) = SignatureTable::parse("fn f(wibble) => int\nfoo bar\nfn g(int)\n");
        assert_eq!(errors.len(), 3, "{errors:?}");
    }

    #[test]
    fn hints() {
        let table = SignatureTable::builtin();
        assert_eq!(closest("norml_lpdf", table.names()), Some("normal_lpdf"));
        assert_eq!(closest("xyzzy_quux", table.names()), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}

#[cfg(test)]
mod distribution_inventory {
    use super::SignatureTable;

    /// Every distribution family of Stan's math library with its forms: (family, density
    /// suffix, has `_rng`, has `_lcdf`/`_lccdf`). From `stanc --dump-stan-math-distributions`
    /// plus the families added since (beta_neg_binomial, dirichlet_multinomial,
    /// binomial_logit_glm).
    const FAMILIES: &[(&str, &str, bool, bool)] = &[
        ("beta_binomial", "lpmf", true, true),
        ("beta", "lpdf", true, true),
        ("beta_proportion", "lpdf", true, true),
        ("bernoulli", "lpmf", true, true),
        ("bernoulli_logit", "lpmf", true, false),
        ("bernoulli_logit_glm", "lpmf", false, false),
        ("binomial", "lpmf", true, true),
        ("binomial_logit", "lpmf", false, false),
        ("binomial_logit_glm", "lpmf", false, false),
        ("categorical", "lpmf", true, false),
        ("categorical_logit", "lpmf", true, false),
        ("categorical_logit_glm", "lpmf", false, false),
        ("cauchy", "lpdf", true, true),
        ("chi_square", "lpdf", true, true),
        ("dirichlet", "lpdf", true, false),
        ("dirichlet_multinomial", "lpmf", true, false),
        ("discrete_range", "lpmf", true, true),
        ("double_exponential", "lpdf", true, true),
        ("exp_mod_normal", "lpdf", true, true),
        ("exponential", "lpdf", true, true),
        ("frechet", "lpdf", true, true),
        ("gamma", "lpdf", true, true),
        ("gaussian_dlm_obs", "lpdf", false, false),
        ("gumbel", "lpdf", true, true),
        ("hypergeometric", "lpmf", true, false),
        ("inv_chi_square", "lpdf", true, true),
        ("inv_gamma", "lpdf", true, true),
        ("inv_wishart_cholesky", "lpdf", true, false),
        ("inv_wishart", "lpdf", true, false),
        ("lkj_corr", "lpdf", true, false),
        ("lkj_corr_cholesky", "lpdf", true, false),
        ("lkj_cov", "lpdf", false, false),
        ("logistic", "lpdf", true, true),
        ("loglogistic", "lpdf", true, false),
        ("lognormal", "lpdf", true, true),
        ("multi_gp", "lpdf", false, false),
        ("multi_gp_cholesky", "lpdf", false, false),
        ("multinomial", "lpmf", true, false),
        ("multinomial_logit", "lpmf", true, false),
        ("multi_normal", "lpdf", true, false),
        ("multi_normal_cholesky", "lpdf", true, false),
        ("multi_normal_prec", "lpdf", false, false),
        ("multi_student_t", "lpdf", true, false),
        ("multi_student_t_cholesky", "lpdf", true, false),
        ("neg_binomial", "lpmf", true, true),
        ("neg_binomial_2", "lpmf", true, true),
        ("neg_binomial_2_log", "lpmf", true, false),
        ("neg_binomial_2_log_glm", "lpmf", false, false),
        ("normal", "lpdf", true, true),
        ("normal_id_glm", "lpdf", false, false),
        ("ordered_logistic", "lpmf", true, false),
        ("ordered_logistic_glm", "lpmf", false, false),
        ("ordered_probit", "lpmf", true, false),
        ("pareto", "lpdf", true, true),
        ("pareto_type_2", "lpdf", true, true),
        ("poisson", "lpmf", true, true),
        ("poisson_log", "lpmf", true, false),
        ("poisson_log_glm", "lpmf", false, false),
        ("rayleigh", "lpdf", true, true),
        ("scaled_inv_chi_square", "lpdf", true, true),
        ("skew_normal", "lpdf", true, true),
        ("skew_double_exponential", "lpdf", true, true),
        ("student_t", "lpdf", true, true),
        ("std_normal", "lpdf", true, true),
        ("uniform", "lpdf", true, true),
        ("von_mises", "lpdf", true, true),
        ("weibull", "lpdf", true, true),
        ("wiener", "lpdf", false, false),
        ("wishart_cholesky", "lpdf", true, false),
        ("wishart", "lpdf", true, false),
        ("beta_neg_binomial", "lpmf", true, true),
    ];

    #[test]
    fn every_family_has_its_forms() {
        let table = SignatureTable::builtin();
        let mut missing = Vec::new();
        for &(family, density, rng, cdfs) in FAMILIES {
            let unnormalised = if density == "lpdf" { "lupdf" } else { "lupmf" };
            let mut needed = vec![
                format!("{family}_{density}"),
                format!("{family}_{unnormalised}"),
            ];
            if rng {
                needed.push(format!("{family}_rng"));
            }
            if cdfs {
                needed.push(format!("{family}_lcdf"));
                needed.push(format!("{family}_lccdf"));
            }
            for name in needed {
                if !table.contains(&name) {
                    missing.push(name);
                }
            }
        }
        assert!(missing.is_empty(), "missing: {missing:?}");
    }
}
