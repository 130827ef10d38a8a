//! Errors and warnings about source text, shared by the parser and the checker, with a
//! deterministic rustc-style plain-text renderer.
//!
//! ```text
//! error: expected `;`, found `}`
//!  --> model.stan:3:12
//!   |
//! 3 |   real x = 1
//!   |            ^ expected `;` here
//!   = hint: end the statement with `;`
//! ```

use std::fmt::Write as _;

use crate::span::{SourceMap, Span};

/// How serious a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    /// Something that is not wrong but worth a look; never stops compilation.
    Warning,
    /// The program is rejected.
    Error,
}

impl Severity {
    fn word(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// A secondary location with a short message ("first declared here").
#[derive(Clone, Debug, PartialEq)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

/// One error or warning about the source.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub severity: Severity,
    /// Where the problem is.
    pub span: Span,
    /// One line saying what is wrong.
    pub message: String,
    /// Optional text printed next to the caret under the primary span.
    pub primary_label: Option<String>,
    /// Other relevant locations.
    pub labels: Vec<Label>,
    /// Optional advice on how to fix it.
    pub hint: Option<String>,
}

impl Diagnostic {
    /// An error at `span`.
    pub fn error(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            span,
            message: message.into(),
            primary_label: None,
            labels: Vec::new(),
            hint: None,
        }
    }

    /// A warning at `span`.
    pub fn warning(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(span, message)
        }
    }

    /// Adds the text shown next to the primary caret.
    pub fn with_primary_label(mut self, text: impl Into<String>) -> Diagnostic {
        self.primary_label = Some(text.into());
        self
    }

    /// Adds a secondary label.
    pub fn with_label(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.labels.push(Label {
            span,
            message: message.into(),
        });
        self
    }

    /// Sets the hint.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Diagnostic {
        self.hint = Some(hint.into());
        self
    }

    /// Whether this is an error (as opposed to a warning).
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// Renders without colour: header, `--> file:line:col`, the source line(s) with carets,
    /// labels, and the hint. Output depends only on the diagnostic and the source map.
    pub fn render_plain(&self, sources: &SourceMap) -> String {
        self.render(sources, false)
    }

    /// Renders, with ANSI colours when `color` is true.
    pub fn render(&self, sources: &SourceMap, color: bool) -> String {
        let paint = |code: &str, text: &str| -> String {
            if color {
                format!("\x1b[{code}m{text}\x1b[0m")
            } else {
                text.to_string()
            }
        };
        let severity_code = match self.severity {
            Severity::Error => "1;31",
            Severity::Warning => "1;33",
        };
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{}: {}",
            paint(severity_code, self.severity.word()),
            self.message
        );
        let mut snippets: Vec<(Span, Option<&str>, bool)> =
            vec![(self.span, self.primary_label.as_deref(), true)];
        for label in &self.labels {
            snippets.push((label.span, Some(label.message.as_str()), false));
        }
        // Width of the line-number gutter: the widest line number shown.
        let gutter = snippets
            .iter()
            .filter_map(|(span, _, _)| {
                sources
                    .get(span.file)
                    .map(|f| f.line_col(span.start).line.to_string().len())
            })
            .max()
            .unwrap_or(1);
        let pad = " ".repeat(gutter);
        for (i, (span, label, primary)) in snippets.iter().enumerate() {
            let Some(file) = sources.get(span.file) else {
                let _ = writeln!(out, "{pad}--> <unknown file {}>", span.file.0);
                continue;
            };
            let start = file.line_col(span.start);
            let arrow = if i == 0 { "-->" } else { ":::" };
            let _ = writeln!(out, "{pad}{arrow} {}:{}", file.name, start);
            let _ = writeln!(out, "{pad} |");
            let line_text = file.line_text(start.line).replace('\t', " ");
            let line_chars = line_text.chars().count();
            // A long (machine-generated) line is shown as a window from a little before the
            // span's start, with `…` where it was cut.
            let first = if line_chars > SHOWN_COLUMNS {
                (start.column - 1)
                    .saturating_sub(SHOWN_BEFORE)
                    .min(line_chars)
            } else {
                0
            };
            let last = (first + SHOWN_COLUMNS).min(line_chars);
            let (before, after) = (
                if first > 0 { "…" } else { "" },
                if last < line_chars { "…" } else { "" },
            );
            let shown: String = line_text.chars().skip(first).take(last - first).collect();
            let _ = writeln!(out, "{:>gutter$} | {before}{shown}{after}", start.line);
            // Caret run: from the start column to the span end, clipped to the shown part of
            // this line; at least one caret so empty spans (e.g. end of file) are still visible.
            let end = file.line_col(span.end);
            let last_col = if end.line == start.line {
                end.column
            } else {
                line_chars + 1
            };
            let last_col = last_col.min(last + 1);
            let width = last_col.saturating_sub(start.column).max(1);
            let marker = if *primary { "^" } else { "-" };
            let underline = marker.repeat(width);
            let underline = paint(if *primary { severity_code } else { "1;34" }, &underline);
            let label_text = label.map(|l| format!(" {l}")).unwrap_or_default();
            let _ = writeln!(
                out,
                "{pad} | {}{}{}",
                " ".repeat(start.column - 1 - first + before.chars().count()),
                underline,
                label_text
            );
        }
        for directive in sources.include_chain(self.span.file) {
            let _ = writeln!(
                out,
                "{pad} = note: included from {}",
                sources.describe(directive)
            );
        }
        if let Some(hint) = &self.hint {
            let _ = writeln!(out, "{pad} = hint: {hint}");
        }
        out
    }
}

/// The most characters of a source line a snippet shows, and how many of them come before the
/// span when the line is cut.
const SHOWN_COLUMNS: usize = 160;
const SHOWN_BEFORE: usize = 40;

/// Renders all diagnostics without colour, separated by blank lines.
pub fn render_all_plain(diagnostics: &[Diagnostic], sources: &SourceMap) -> String {
    diagnostics
        .iter()
        .map(|d| d.render_plain(sources))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Renders all diagnostics for printing to standard error: coloured only when stderr is a
/// terminal and `NO_COLOR` is unset, otherwise identical to [`render_all_plain`].
pub fn render_all_for_stderr(diagnostics: &[Diagnostic], sources: &SourceMap) -> String {
    use std::io::IsTerminal as _;
    let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    diagnostics
        .iter()
        .map(|d| d.render(sources, color))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether any diagnostic is an error.
pub fn has_errors(diagnostics: &[Diagnostic]) -> bool {
    diagnostics.iter().any(Diagnostic::is_error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::span::FileId;

    #[test]
    fn renders_labels_and_hint_deterministically() {
        let mut sources = SourceMap::new();
        let file = sources.add("a.stan", "data {\n  int N;\n  real N;\n}\n");
        let first = Span::new(file, 13, 14);
        let second = Span::new(file, 23, 24);
        let d = Diagnostic::error(second, "`N` is declared twice")
            .with_primary_label("second declaration")
            .with_label(first, "first declared here")
            .with_hint("rename one of them");
        let expected = "\
error: `N` is declared twice
 --> a.stan:3:8
  |
3 |   real N;
  |        ^ second declaration
 ::: a.stan:2:7
  |
2 |   int N;
  |       - first declared here
  = hint: rename one of them
";
        assert_eq!(d.render_plain(&sources), expected);
        assert_eq!(d.render_plain(&sources), d.render_plain(&sources));
        assert!(d.render(&sources, true).contains("\x1b["));
    }

    #[test]
    fn multi_line_and_out_of_range_spans_do_not_panic() {
        let mut sources = SourceMap::new();
        let file = sources.add("b.stan", "model {\n  x = 1;\n}");
        let whole = Span::new(file, 0, 20);
        let text = Diagnostic::warning(whole, "w").render_plain(&sources);
        assert!(text.starts_with("warning: w\n --> b.stan:1:1\n"));
        assert!(text.contains("^^^^^^^"));
        let past_end = Span::new(file, 999, 1000);
        let _ = Diagnostic::error(past_end, "e").render_plain(&sources);
        let other_file = Span::new(FileId(7), 0, 1);
        let text = Diagnostic::error(other_file, "e").render_plain(&sources);
        assert!(text.contains("unknown file 7"));
    }

    #[test]
    fn a_long_line_is_shown_as_a_window_around_the_span() {
        let mut sources = SourceMap::new();
        let line = format!("{}BAD{}", "a".repeat(600), "b".repeat(600));
        let file = sources.add("long.stan", &line);
        let text = Diagnostic::error(Span::new(file, 600, 603), "here").render_plain(&sources);
        let lines: Vec<&str> = text.lines().collect();
        let shown = lines[3].strip_prefix("1 | ").expect("source line");
        assert_eq!(shown.chars().count(), 1 + SHOWN_COLUMNS + 1, "{shown}");
        assert!(shown.starts_with('…') && shown.ends_with('…'), "{shown}");
        // The carets sit under `BAD`.
        let carets = lines[4].strip_prefix("  | ").expect("caret line");
        let column = carets.chars().position(|c| c == '^').expect("carets");
        assert_eq!(
            shown.chars().skip(column).take(3).collect::<String>(),
            "BAD"
        );
        assert_eq!(carets.matches('^').count(), 3);
    }
}
