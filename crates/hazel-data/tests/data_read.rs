//! Parsing and validation of CmdStan JSON data.

use hazel_data::{
    read_var, BaseType, Bound, Constraint, DataDecl, DataError, DataFile, DataType, DataValue,
    Values,
};

fn parse(text: &str) -> DataFile {
    DataFile::parse(text).unwrap_or_else(|e| panic!("parse failed: {e}"))
}

fn read(text: &str, decl: DataDecl) -> Result<DataValue, DataError> {
    read_var(&parse(text), &decl)
}

fn err(text: &str, decl: DataDecl) -> String {
    match read(text, decl) {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn scalars_ints_and_reals() {
    let f = parse(r#"{"N": 3, "x": 2.5, "y": -1e-3, "z": 4}"#);
    assert_eq!(
        read_var(&f, &DataDecl::new("N", DataType::int(vec![])))
            .unwrap()
            .values,
        Values::Ints(vec![3])
    );
    assert_eq!(
        read_var(&f, &DataDecl::new("x", DataType::real(vec![])))
            .unwrap()
            .values,
        Values::Reals(vec![2.5])
    );
    assert_eq!(
        read_var(&f, &DataDecl::new("y", DataType::real(vec![])))
            .unwrap()
            .values,
        Values::Reals(vec![-1e-3])
    );
    // An integer literal is a valid real.
    assert_eq!(
        read_var(&f, &DataDecl::new("z", DataType::real(vec![])))
            .unwrap()
            .values,
        Values::Reals(vec![4.0])
    );
}

#[test]
fn special_strings_are_numbers() {
    let f = parse(r#"{"a": ["inf", "-inf", "Infinity", "-Infinity", "NaN", 1]}"#);
    let v = read_var(&f, &DataDecl::new("a", DataType::real(vec![6]))).unwrap();
    let Values::Reals(x) = v.values else {
        panic!("not reals")
    };
    assert_eq!(x[0], f64::INFINITY);
    assert_eq!(x[1], f64::NEG_INFINITY);
    assert_eq!(x[2], f64::INFINITY);
    assert_eq!(x[3], f64::NEG_INFINITY);
    assert!(x[4].is_nan());
    assert_eq!(x[5], 1.0);
}

#[test]
fn matrices_are_lists_of_rows_row_major() {
    let text = r#"{"X": [[1, 2, 3], [4, 5, 6.5]]}"#;
    let v = read(text, DataDecl::new("X", DataType::real(vec![2, 3]))).unwrap();
    assert_eq!(v.dims, vec![2, 3]);
    assert_eq!(v.values, Values::Reals(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.5]));
    let c = v.to_column_major();
    assert_eq!(c.values, Values::Reals(vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.5]));
}

#[test]
fn nested_arrays_of_matrices() {
    let text = r#"{"A": [[[1, 2], [3, 4]], [[5, 6], [7, 8]], [[9, 10], [11, 12]]]}"#;
    let v = read(text, DataDecl::new("A", DataType::int(vec![3, 2, 2]))).unwrap();
    assert_eq!(v.values, Values::Ints((1..=12).collect()));
    let c = v.to_column_major();
    assert_eq!(
        c.values,
        Values::Ints(vec![1, 3, 2, 4, 5, 7, 6, 8, 9, 11, 10, 12])
    );
}

#[test]
fn empty_containers() {
    let f = parse(r#"{"e": [], "m": [[], []]}"#);
    assert_eq!(
        read_var(&f, &DataDecl::new("e", DataType::real(vec![0])))
            .unwrap()
            .values,
        Values::Reals(vec![])
    );
    assert_eq!(
        read_var(&f, &DataDecl::new("e", DataType::int(vec![0, 3])))
            .unwrap()
            .values,
        Values::Ints(vec![])
    );
    assert_eq!(
        read_var(&f, &DataDecl::new("m", DataType::real(vec![2, 0])))
            .unwrap()
            .dims,
        vec![2, 0]
    );
    // A non-empty declaration does not accept an empty array.
    assert_eq!(
        err(r#"{"e": []}"#, DataDecl::new("e", DataType::real(vec![2]))),
        "`e` should be an array of 2 numbers, found an array of 0 numbers"
    );
}

#[test]
fn complex_numbers_are_pairs() {
    let f = parse(r#"{"z": [1.5, -2], "zs": [[1, 2], [3, 4], [5, 6]]}"#);
    let z = read_var(
        &f,
        &DataDecl::new("z", DataType::new(BaseType::Complex, vec![])),
    )
    .unwrap();
    assert_eq!(z.values, Values::Complex(vec![1.5, -2.0]));
    let zs = read_var(
        &f,
        &DataDecl::new("zs", DataType::new(BaseType::Complex, vec![3])),
    )
    .unwrap();
    assert_eq!(zs.dims, vec![3]);
    assert_eq!(
        zs.values,
        Values::Complex(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    );
}

#[test]
fn tuples_and_arrays_of_tuples() {
    let pair = DataType::new(
        BaseType::Tuple(vec![DataType::real(vec![]), DataType::int(vec![2])]),
        vec![],
    );
    let v = read(
        r#"{"t": {"1": 0.5, "2": [3, 4]}}"#,
        DataDecl::new("t", pair.clone()),
    )
    .unwrap();
    assert_eq!(
        v.values,
        Values::Tuple(vec![
            DataValue {
                dims: vec![],
                values: Values::Reals(vec![0.5])
            },
            DataValue {
                dims: vec![2],
                values: Values::Ints(vec![3, 4])
            },
        ])
    );
    let mut arr = pair.clone();
    arr.shape = vec![2];
    let v = read(
        r#"{"t": [{"1": 0.5, "2": [3, 4]}, {"2": [5, 6], "1": 1}]}"#,
        DataDecl::new("t", arr.clone()),
    )
    .unwrap();
    assert_eq!(
        v.values,
        Values::Tuple(vec![
            DataValue {
                dims: vec![2],
                values: Values::Reals(vec![0.5, 1.0])
            },
            DataValue {
                dims: vec![2, 2],
                values: Values::Ints(vec![3, 4, 5, 6])
            },
        ])
    );
    // Errors inside a tuple name the element and the component.
    assert_eq!(
        err(
            r#"{"t": [{"1": 0.5, "2": [3, 4]}, {"1": 1}]}"#,
            DataDecl::new("t", arr.clone())
        ),
        "variable `t[2].2` is missing from the data"
    );
    assert_eq!(
        err(
            r#"{"t": [{"1": 0.5, "2": [3, 4]}, {"1": 1, "2": [1.5, 2]}]}"#,
            DataDecl::new("t", arr)
        ),
        "`t[2].2[1]` = 1.5 is not an integer, but the variable is declared int"
    );
}

#[test]
fn nested_tuples() {
    let inner = DataType::new(
        BaseType::Tuple(vec![DataType::int(vec![]), DataType::real(vec![2])]),
        vec![],
    );
    let outer = DataType::new(
        BaseType::Tuple(vec![DataType::real(vec![]), inner]),
        vec![2],
    );
    let text = r#"{"t": [{"1": 1, "2": {"1": 7, "2": [0.1, 0.2]}}, {"1": 2, "2": {"1": 8, "2": [0.3, 0.4]}}]}"#;
    let v = read(text, DataDecl::new("t", outer)).unwrap();
    let Values::Tuple(cs) = v.values else {
        panic!("not a tuple")
    };
    assert_eq!(
        cs[0],
        DataValue {
            dims: vec![2],
            values: Values::Reals(vec![1.0, 2.0])
        }
    );
    let Values::Tuple(inner_cs) = &cs[1].values else {
        panic!("inner not a tuple")
    };
    assert_eq!(
        inner_cs[0],
        DataValue {
            dims: vec![2],
            values: Values::Ints(vec![7, 8])
        }
    );
    assert_eq!(
        inner_cs[1],
        DataValue {
            dims: vec![2, 2],
            values: Values::Reals(vec![0.1, 0.2, 0.3, 0.4])
        }
    );
}

#[test]
fn undeclared_fields_are_ignored_but_must_be_json() {
    let f = parse(r#"{"N": 2, "junk": {"a": [1, "x", null, true]}, "s": "hello"}"#);
    assert_eq!(
        read_var(&f, &DataDecl::new("N", DataType::int(vec![])))
            .unwrap()
            .values,
        Values::Ints(vec![2])
    );
}

#[test]
fn error_messages_name_variable_index_and_bound() {
    assert_eq!(
        err(r#"{"M": 1}"#, DataDecl::new("N", DataType::int(vec![]))),
        "variable `N` is missing from the data"
    );
    let y: String = format!(
        "{{\"y\": [{}]}}",
        (1..=20)
            .map(|i| if i == 17 {
                "-3".to_string()
            } else {
                i.to_string()
            })
            .collect::<Vec<_>>()
            .join(",")
    );
    assert_eq!(
        err(
            &y,
            DataDecl::new("y", DataType::int(vec![20]).with_lower(0.0))
        ),
        "`y[17]` = -3 is below its lower bound 0"
    );
    assert_eq!(
        err(
            r#"{"p": [0.5, 1.5]}"#,
            DataDecl::new("p", DataType::real(vec![2]).with_lower(0.0).with_upper(1.0))
        ),
        "`p[2]` = 1.5 is above its upper bound 1"
    );
    assert_eq!(
        err(
            r#"{"p": [0.5, "NaN"]}"#,
            DataDecl::new("p", DataType::real(vec![2]).with_lower(0.0))
        ),
        "`p[2]` = NaN is not a number, but must be at least its lower bound 0"
    );
    let x = format!("{{\"X\": [{}]}}", vec!["[1.0, 2.0]"; 434].join(","));
    assert_eq!(
        err(&x, DataDecl::new("X", DataType::real(vec![434, 3]))),
        "`X` should be 434 × 3 (numbers), found 434 × 2"
    );
    assert_eq!(
        err(r#"{"N": 2.5}"#, DataDecl::new("N", DataType::int(vec![]))),
        "`N` = 2.5 is not an integer, but the variable is declared int"
    );
    assert_eq!(
        err(r#"{"N": 2.0}"#, DataDecl::new("N", DataType::int(vec![]))),
        "`N` = 2.0 is not an integer, but the variable is declared int"
    );
    assert_eq!(
        err(
            r#"{"k": [[1, 2], [3, 4.5]]}"#,
            DataDecl::new("k", DataType::int(vec![2, 2]))
        ),
        "`k[2, 2]` = 4.5 is not an integer, but the variable is declared int"
    );
    assert_eq!(
        err(
            r#"{"N": 3000000000}"#,
            DataDecl::new("N", DataType::int(vec![]))
        ),
        "`N` = 3000000000 is outside the range of a Stan int (32 bits)"
    );
    assert_eq!(
        err(
            r#"{"N": [1, 2]}"#,
            DataDecl::new("N", DataType::int(vec![]))
        ),
        "`N` should be a single number, found an array of 2 numbers"
    );
    assert_eq!(
        err(r#"{"v": 1}"#, DataDecl::new("v", DataType::real(vec![3]))),
        "`v` should be an array of 3 numbers, found a single number"
    );
    assert_eq!(
        err(r#"{"X": [[1, 2], [3]]}"#, DataDecl::new("X", DataType::real(vec![2, 2]))),
        "`X` should be 2 × 2 (numbers), found an array of 2 elements that is not a rectangular array of numbers"
    );
    assert_eq!(
        err(
            r#"{"s": "abc"}"#,
            DataDecl::new("s", DataType::real(vec![]))
        ),
        "`s` should be a single number, found the string \"abc\""
    );
    // Per-element bounds.
    let mut ty = DataType::real(vec![3]);
    ty.upper = Some(Bound::PerElement(vec![1.0, 2.0, 3.0]));
    assert_eq!(
        err(r#"{"v": [1, 2.5, 3]}"#, DataDecl::new("v", ty)),
        "`v[2]` = 2.5 is above its upper bound 2"
    );
    let mut ty = DataType::real(vec![3]);
    ty.lower = Some(Bound::PerElement(vec![1.0, 2.0]));
    assert_eq!(
        err(r#"{"v": [1, 2.5, 3]}"#, DataDecl::new("v", ty)),
        "`v` has 3 elements, but its lower bound has 2"
    );
}

#[test]
fn syntax_errors_have_positions() {
    let e = DataFile::parse("{\n  \"a\": [1, 2,, 3]\n}").unwrap_err();
    assert_eq!(
        e,
        DataError::Syntax {
            line: 2,
            column: 14,
            message: "expected a value, found ','".to_string()
        }
    );
    assert!(matches!(
        DataFile::parse("[1, 2]"),
        Err(DataError::Syntax { .. })
    ));
    assert!(matches!(
        DataFile::parse("{\"a\": 1} x"),
        Err(DataError::Syntax { .. })
    ));
    assert_eq!(
        DataFile::parse("{\"a\": 1, \"a\": 2}")
            .unwrap_err()
            .to_string(),
        "variable `a` appears more than once in the data"
    );
    let deep = format!("{{\"a\": {}{}}}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(matches!(
        DataFile::parse(&deep),
        Err(DataError::Syntax { .. })
    ));
}

#[test]
fn structural_constraints() {
    let simplex = |t: &str| {
        read(
            t,
            DataDecl::new(
                "p",
                DataType::real(vec![3]).with_constraint(Constraint::Simplex),
            ),
        )
    };
    assert!(simplex(r#"{"p": [0.2, 0.3, 0.5]}"#).is_ok());
    assert_eq!(
        simplex(r#"{"p": [0.2, 0.3, 0.6]}"#)
            .unwrap_err()
            .to_string(),
        "`p` is not a valid simplex: its elements sum to 1.1, but should sum to 1"
    );
    assert_eq!(
        simplex(r#"{"p": [-0.2, 0.7, 0.5]}"#)
            .unwrap_err()
            .to_string(),
        "`p` is not a valid simplex: `p[1]` = -0.2 is negative"
    );

    let ordered = DataDecl::new(
        "o",
        DataType::real(vec![2, 3]).with_constraint(Constraint::Ordered),
    );
    assert!(read(r#"{"o": [[1, 2, 3], [-1, 0, 5]]}"#, ordered.clone()).is_ok());
    assert_eq!(
        read(r#"{"o": [[1, 2, 3], [-1, 0, 0]]}"#, ordered)
            .unwrap_err()
            .to_string(),
        "`o` is not a valid ordered: `o[2][3]` = 0 is not greater than `o[2][2]` = 0"
    );

    let cov = DataDecl::new(
        "S",
        DataType::real(vec![2, 2]).with_constraint(Constraint::CovMatrix),
    );
    assert!(read(r#"{"S": [[2, 1], [1, 2]]}"#, cov.clone()).is_ok());
    assert_eq!(
        read(r#"{"S": [[1, 2], [2, 1]]}"#, cov.clone())
            .unwrap_err()
            .to_string(),
        "`S` is not a valid cov_matrix: it is not positive definite"
    );
    assert!(read(r#"{"S": [[2, 1], [1.1, 2]]}"#, cov)
        .unwrap_err()
        .to_string()
        .contains("not symmetric"));

    let corr = DataDecl::new(
        "R",
        DataType::real(vec![2, 2]).with_constraint(Constraint::CorrMatrix),
    );
    assert!(read(r#"{"R": [[1, 0.5], [0.5, 1]]}"#, corr.clone()).is_ok());
    assert!(read(r#"{"R": [[1, 0.5], [0.5, 2]]}"#, corr).is_err());

    let l = DataDecl::new(
        "L",
        DataType::real(vec![2, 2]).with_constraint(Constraint::CholeskyFactorCorr),
    );
    assert!(read(r#"{"L": [[1, 0], [0.6, 0.8]]}"#, l.clone()).is_ok());
    assert!(read(r#"{"L": [[1, 0.1], [0.6, 0.8]]}"#, l.clone())
        .unwrap_err()
        .to_string()
        .contains("above the diagonal"));
    assert!(read(r#"{"L": [[1, 0], [0.6, 0.9]]}"#, l).is_err());

    let stz = DataDecl::new(
        "z",
        DataType::real(vec![3]).with_constraint(Constraint::SumToZeroVector),
    );
    assert!(read(r#"{"z": [1, -0.5, -0.5]}"#, stz.clone()).is_ok());
    assert!(read(r#"{"z": [1, -0.5, -0.4]}"#, stz).is_err());

    let rs = DataDecl::new(
        "P",
        DataType::real(vec![2, 2]).with_constraint(Constraint::RowStochastic),
    );
    assert!(read(r#"{"P": [[0.1, 0.9], [0.5, 0.5]]}"#, rs.clone()).is_ok());
    assert!(read(r#"{"P": [[0.1, 0.5], [0.9, 0.5]]}"#, rs).is_err());
    let cs = DataDecl::new(
        "P",
        DataType::real(vec![2, 2]).with_constraint(Constraint::ColumnStochastic),
    );
    assert!(read(r#"{"P": [[0.1, 0.5], [0.9, 0.5]]}"#, cs).is_ok());
}

#[test]
fn unicode_and_escapes_in_names() {
    let f = parse(r#"{"na\u00efve": 1, "tab\tname": 2, "\ud83d\ude00": 3}"#);
    assert!(f.get("naïve").is_some());
    assert!(f.get("tab\tname").is_some());
    assert!(f.get("😀").is_some());
}

/// Flattens a serde_json value the way the data reader does: rectangular numeric arrays into
/// (dims, values), for comparison.
fn flatten(v: &serde_json::Value, dims: &mut Vec<usize>, out: &mut Vec<f64>, depth: usize) -> bool {
    match v {
        serde_json::Value::Number(n) => {
            out.push(n.as_f64().unwrap());
            true
        }
        serde_json::Value::Array(items) => {
            if dims.len() == depth {
                dims.push(items.len());
            } else if dims[depth] != items.len() {
                return false;
            }
            items.iter().all(|i| flatten(i, dims, out, depth + 1))
        }
        _ => false,
    }
}

#[test]
fn every_posteriordb_data_file_agrees_with_serde_json() {
    let Some(dir) = hazel_testdata::posteriordb() else {
        return hazel_testdata::skip("every_posteriordb_data_file_agrees_with_serde_json");
    };
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path().join("data.json");
        if !path.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let ours = DataFile::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let reference: serde_json::Value = serde_json::from_str(&text).unwrap();
        for (name, value) in reference.as_object().unwrap() {
            let mut dims = Vec::new();
            let mut expected = Vec::new();
            if !flatten(value, &mut dims, &mut expected, 0) {
                continue;
            }
            let ty = DataType::real(dims.clone());
            let got = read_var(&ours, &DataDecl::new(name.as_str(), ty))
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let Values::Reals(got) = got.values else {
                panic!("not reals")
            };
            assert_eq!(got.len(), expected.len());
            for (a, b) in got.iter().zip(&expected) {
                assert_eq!(
                    a.to_bits(),
                    b.to_bits(),
                    "{}: `{name}` {a} vs {b}",
                    path.display()
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 300, "only {checked} variables checked");
}

#[test]
fn large_file_parses_quickly() {
    let Some(dir) = hazel_testdata::posteriordb() else {
        return hazel_testdata::skip("large_file_parses_quickly");
    };
    let path = dir.join("prostate-logistic_regression_rhs/data.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let start = std::time::Instant::now();
    let f = DataFile::parse(&text).unwrap();
    let elapsed = start.elapsed();
    eprintln!("parsed {} bytes in {elapsed:?}", text.len());
    let x = read_var(&f, &DataDecl::new("x", DataType::real(vec![102, 5966]))).unwrap();
    assert_eq!(x.len(), 102 * 5966);
    // ~11 MB; about 0.1 s here at opt-level 1. The bound leaves room for a loaded CI machine
    // but catches a tree-per-number design (several times slower).
    assert!(elapsed.as_secs_f64() < 3.0, "parse took {elapsed:?}");
}

/// A tiny deterministic generator (SplitMix64) for the mutation test.
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
        (self.next() % n as u64) as usize
    }
}

#[test]
fn mutated_inputs_never_panic() {
    let seeds = [
        r#"{"N": 3, "y": [1, 2, -3], "X": [[1.5, 2], [3, 4]], "t": {"1": 2.5, "2": [1, 2]}, "z": [1, 2], "s": "inf"}"#,
        r#"{"e": [], "m": [[], []], "p": [0.2, 0.3, 0.5], "a": [[[1, 2], [3, 4]]], "u": "\u00e9"}"#,
    ];
    let pair = DataType::new(
        BaseType::Tuple(vec![DataType::real(vec![]), DataType::int(vec![2])]),
        vec![],
    );
    let decls = [
        DataDecl::new("N", DataType::int(vec![]).with_lower(0.0)),
        DataDecl::new("y", DataType::int(vec![3])),
        DataDecl::new(
            "X",
            DataType::real(vec![2, 2]).with_constraint(Constraint::CovMatrix),
        ),
        DataDecl::new("t", pair),
        DataDecl::new("z", DataType::new(BaseType::Complex, vec![])),
        DataDecl::new(
            "p",
            DataType::real(vec![3]).with_constraint(Constraint::Simplex),
        ),
        DataDecl::new("m", DataType::real(vec![2, 0])),
        DataDecl::new(
            "a",
            DataType::int(vec![1, 2, 2]).with_constraint(Constraint::CholeskyFactorCorr),
        ),
    ];
    let alphabet = b"[]{}\",:0123456789.-+eE tfnulaINa\\";
    let mut rng = SplitMix(12345);
    let mut parsed_ok = 0;
    for round in 0..4000 {
        let mut bytes = seeds[round % seeds.len()].as_bytes().to_vec();
        for _ in 0..1 + rng.below(4) {
            let pos = rng.below(bytes.len() + 1);
            match rng.below(3) {
                0 if pos < bytes.len() => {
                    bytes.remove(pos);
                }
                1 => bytes.insert(pos, alphabet[rng.below(alphabet.len())]),
                _ if pos < bytes.len() => bytes[pos] = alphabet[rng.below(alphabet.len())],
                _ => {}
            }
        }
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        if let Ok(file) = DataFile::parse(&text) {
            parsed_ok += 1;
            for d in &decls {
                // Any result is fine; a panic fails the test.
                let _ = read_var(&file, d).map(|v| v.to_column_major());
            }
        }
    }
    // The mutations must leave a fair share of valid JSON, or the validator is not exercised.
    assert!(parsed_ok > 250, "only {parsed_ok} mutated files parsed");
}

/// Declared sizes come from the data and may multiply past `usize::MAX`; an empty container
/// of such a shape is read, a non-empty one is a shape error, never an overflow (found by the
/// `data_reader` fuzz target).
#[test]
fn huge_declared_shapes_do_not_overflow() {
    let huge = usize::MAX / 2;
    let f = parse(r#"{"e": [], "t": [], "x": [1, 2]}"#);
    let value = read_var(&f, &DataDecl::new("e", DataType::real(vec![huge, huge, 0]))).unwrap();
    assert_eq!(value.len(), 0);
    assert_eq!(value.values, Values::Reals(vec![]));
    let tuple = DataType::new(
        BaseType::Tuple(vec![DataType::real(vec![])]),
        vec![huge, huge, 0],
    );
    assert!(read_var(&f, &DataDecl::new("t", tuple)).is_ok());
    let simplices = DataType::real(vec![0, huge, huge]).with_constraint(Constraint::CorrMatrix);
    assert!(read_var(&f, &DataDecl::new("e", simplices)).is_ok());
    assert!(err(
        r#"{"x": [1, 2]}"#,
        DataDecl::new("x", DataType::real(vec![huge, huge]))
    )
    .contains("should be"));
}
