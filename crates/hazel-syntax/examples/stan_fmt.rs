//! Prints a Stan file in canonical form, or its diagnostics: `cargo run --example stan_fmt -- model.stan`.
fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: stan_fmt <model.stan>");
        std::process::exit(2);
    };
    match hazel_syntax::parse_file(std::path::Path::new(&path), &[]) {
        Err(e) => {
            eprintln!("cannot read {path}: {e}");
            std::process::exit(2);
        }
        Ok(result) => {
            eprint!("{}", result.render_diagnostics());
            match result.format() {
                Some(text) => print!("{text}"),
                None => std::process::exit(1),
            }
        }
    }
}
