//! Fuzz target: any input must parse without panicking or overflowing the stack; every
//! diagnostic must render; any accepted program must round-trip through the pretty-printer,
//! and the comment-keeping formatter must not change the tree and must be idempotent.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let result = hazel_syntax::parse_str("fuzz.stan", &text);
    for d in &result.diagnostics {
        let _ = d.render_plain(&result.sources);
    }
    if let Some(program) = &result.program {
        let printed = hazel_syntax::pretty::print_program(program);
        let again = hazel_syntax::parse_str("printed.stan", &printed);
        let mut reparsed = again
            .program
            .unwrap_or_else(|| panic!("printed program does not parse:\n{printed}"));
        let mut original = program.clone();
        original.strip_locations();
        reparsed.strip_locations();
        assert!(
            original == reparsed,
            "round trip changed the tree:\n{printed}"
        );

        let formatted = result.format().expect("program parsed");
        let again = hazel_syntax::parse_str("formatted.stan", &formatted);
        let formatted_program = again
            .program
            .as_ref()
            .unwrap_or_else(|| panic!("formatted program does not parse:\n{formatted}"));
        assert!(
            formatted_program.same_structure(program),
            "formatting changed the tree:\n{formatted}"
        );
        assert_eq!(
            again.format().as_deref(),
            Some(formatted.as_str()),
            "formatting is not idempotent"
        );
    }
});
