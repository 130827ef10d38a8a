//! Formatter: canonical layout with comments kept.

use hazel_syntax::parse_str;

const SOURCE: &str = r#"// header comment
/* block
   comment */
data {
  int N; // trailing on N
  // leading for y
  vector[N] y;
  /* inline */ real z;
}
model {
  for (i in 1:N) { // after brace
    y[i] ~ normal(0, // inside call
                  1);
    // last in loop
  } // after loop
  if (N > 0) target += 1; // after if
  else target += 2;
  // end of model
}
// trailing file comment
"#;

const EXPECTED: &str = r#"// header comment
/* block
   comment */
data {
  int N; // trailing on N
  // leading for y
  vector[N] y;
  /* inline */
  real z;
}
model {
  for (i in 1:N) {
    // after brace
    y[i] ~ normal(0, 1);
    // inside call
    // last in loop
  } // after loop
  if (N > 0)
    target += 1; // after if
  else
    target += 2;
  // end of model
}
// trailing file comment
"#;

#[test]
fn comments_keep_their_places() {
    let result = parse_str("f.stan", SOURCE);
    let formatted = result.format().expect("parses");
    assert_eq!(formatted, EXPECTED);
    let again = parse_str("f.stan", &formatted).format().expect("parses");
    assert_eq!(again, formatted, "not idempotent");
}

#[test]
fn comment_after_closing_brace_stays_after_it() {
    let result = parse_str("g.stan", "model {\n  { target += 1; } // after block\n}\n");
    assert_eq!(
        result.format().unwrap(),
        "model {\n  {\n    target += 1;\n  } // after block\n}\n"
    );
}

#[test]
fn format_of_invalid_program_is_none() {
    assert!(parse_str("bad.stan", "model { x = ; }").format().is_none());
}

#[test]
fn without_comments_format_equals_print_program() {
    let text = "data { int N; } model { for (i in 1:N) { target += -i^2; } }";
    let result = parse_str("p.stan", text);
    let program = result.program.as_ref().unwrap();
    assert_eq!(
        result.format().unwrap(),
        hazel_syntax::pretty::print_program(program)
    );
}
