//! Tokeniser: Stan source text to tokens, with comments skipped and `#include` expanded.
//!
//! Includes are expanded at the token level: the included file gets its own [`FileId`] and its
//! tokens are spliced into the stream where the directive was, so every span points into the
//! file the text came from.

use std::path::{Path, PathBuf};

use crate::diagnostic::Diagnostic;
use crate::span::{FileId, SourceMap, Span};

/// Maximum nesting of `#include` (a cycle is reported before this is reached).
pub(crate) const MAX_INCLUDE_DEPTH: usize = 32;

/// Token kinds. Keywords are lexed as [`TokenKind::Ident`]; the parser decides by context.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum TokenKind {
    Ident(String),
    /// Integer literal text (digits only).
    Int(String),
    /// Real literal text.
    Real(String),
    /// Imaginary literal text without the trailing `i`.
    Imag(String),
    /// String literal contents without the quotes.
    Str(String),
    LBrace,
    RBrace,
    LParen,
    RParen,
    LBracket,
    RBracket,
    Lt,
    Gt,
    Leq,
    Geq,
    EqEq,
    Neq,
    Comma,
    Semi,
    Assign,
    PlusAssign,
    MinusAssign,
    TimesAssign,
    DivideAssign,
    EltTimesAssign,
    EltDivideAssign,
    Tilde,
    Question,
    Colon,
    Bang,
    Bar,
    OrOr,
    AndAnd,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    IntDiv,
    Backslash,
    Hat,
    EltTimes,
    EltDivide,
    EltHat,
    Transpose,
    Dot,
    /// End of input (always the last token).
    Eof,
}

impl TokenKind {
    /// How the token is shown in messages.
    pub fn describe(&self) -> String {
        match self {
            TokenKind::Ident(s) => format!("`{s}`"),
            TokenKind::Int(s) | TokenKind::Real(s) => format!("number `{s}`"),
            TokenKind::Imag(s) => format!("imaginary number `{s}i`"),
            TokenKind::Str(_) => "a string".to_string(),
            TokenKind::Eof => "end of file".to_string(),
            other => format!("`{}`", other.symbol()),
        }
    }

    /// The spelling of a punctuation token (empty for tokens that carry text).
    pub fn symbol(&self) -> &'static str {
        match self {
            TokenKind::LBrace => "{",
            TokenKind::RBrace => "}",
            TokenKind::LParen => "(",
            TokenKind::RParen => ")",
            TokenKind::LBracket => "[",
            TokenKind::RBracket => "]",
            TokenKind::Lt => "<",
            TokenKind::Gt => ">",
            TokenKind::Leq => "<=",
            TokenKind::Geq => ">=",
            TokenKind::EqEq => "==",
            TokenKind::Neq => "!=",
            TokenKind::Comma => ",",
            TokenKind::Semi => ";",
            TokenKind::Assign => "=",
            TokenKind::PlusAssign => "+=",
            TokenKind::MinusAssign => "-=",
            TokenKind::TimesAssign => "*=",
            TokenKind::DivideAssign => "/=",
            TokenKind::EltTimesAssign => ".*=",
            TokenKind::EltDivideAssign => "./=",
            TokenKind::Tilde => "~",
            TokenKind::Question => "?",
            TokenKind::Colon => ":",
            TokenKind::Bang => "!",
            TokenKind::Bar => "|",
            TokenKind::OrOr => "||",
            TokenKind::AndAnd => "&&",
            TokenKind::Plus => "+",
            TokenKind::Minus => "-",
            TokenKind::Star => "*",
            TokenKind::Slash => "/",
            TokenKind::Percent => "%",
            TokenKind::IntDiv => "%/%",
            TokenKind::Backslash => "\\",
            TokenKind::Hat => "^",
            TokenKind::EltTimes => ".*",
            TokenKind::EltDivide => "./",
            TokenKind::EltHat => ".^",
            TokenKind::Transpose => "'",
            TokenKind::Dot => ".",
            _ => "",
        }
    }
}

/// A token and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Token {
    pub kind: TokenKind,
    pub span: Span,
}

/// A comment as written (`// ...` without the line break, or `/* ... */`), kept aside so a
/// formatter can put it back.
#[derive(Clone, Debug, PartialEq)]
pub struct Comment {
    pub span: Span,
    pub text: String,
}

/// Supplies the text of included files. Tests use an in-memory map; [`FsLoader`] reads disk.
pub trait FileLoader {
    /// Returns the text of `path`, or `None` if there is no such file.
    fn load(&self, path: &Path) -> Option<String>;
}

/// Reads files from the file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct FsLoader;

impl FileLoader for FsLoader {
    fn load(&self, path: &Path) -> Option<String> {
        std::fs::read_to_string(path).ok()
    }
}

/// An in-memory loader: exact path → text.
impl FileLoader for std::collections::HashMap<PathBuf, String> {
    fn load(&self, path: &Path) -> Option<String> {
        self.get(path).cloned()
    }
}

/// Where to look for included files.
pub struct IncludeContext<'a> {
    /// Directories searched, in order, after the including file's own directory.
    pub include_paths: &'a [PathBuf],
    pub loader: &'a dyn FileLoader,
}

/// Tokenises file `file` of `sources` (which must already be added), expanding includes into
/// further files of `sources`; also returns every comment (from all files, in lexing order).
/// Always ends the token list with [`TokenKind::Eof`].
pub(crate) fn tokenize_with_comments(
    sources: &mut SourceMap,
    file: FileId,
    includes: Option<&IncludeContext<'_>>,
    diagnostics: &mut Vec<Diagnostic>,
) -> (Vec<Token>, Vec<Comment>) {
    let mut tokens = Vec::new();
    let mut comments = Vec::new();
    let mut stack = vec![file];
    lex_file(
        sources,
        file,
        includes,
        &mut stack,
        &mut tokens,
        &mut comments,
        diagnostics,
    );
    let len = sources.get(file).map(|f| f.text.len()).unwrap_or(0) as u32;
    let eof_span = Span::new(file, len, len);
    tokens.push(Token {
        kind: TokenKind::Eof,
        span: eof_span,
    });
    (tokens, comments)
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic()
}

fn is_ident_continue(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn lex_file(
    sources: &mut SourceMap,
    file: FileId,
    includes: Option<&IncludeContext<'_>>,
    stack: &mut Vec<FileId>,
    tokens: &mut Vec<Token>,
    comments: &mut Vec<Comment>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    // Clone the text so that included files can be added to `sources` while lexing.
    let Some(source) = sources.get(file) else {
        return;
    };
    let text = source.text.clone();
    let file_name = source.name.clone();
    let bytes = text.as_bytes();
    let n = bytes.len();
    // Skip a UTF-8 byte-order mark.
    let mut i = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let span = |a: usize, b: usize| Span::new(file, a as u32, b as u32);
    // Whether the previous token can be followed by `.k` tuple projection.
    let projectable = |tokens: &Vec<Token>, file: FileId| -> bool {
        match tokens.last() {
            Some(t) if t.span.file == file => {
                matches!(
                    t.kind,
                    TokenKind::Ident(_) | TokenKind::RParen | TokenKind::RBracket
                ) || (matches!(t.kind, TokenKind::Int(_))
                    && tokens.len() >= 2
                    && tokens[tokens.len() - 2].kind == TokenKind::Dot)
            }
            _ => false,
        }
    };
    while i < n {
        let c = bytes[i];
        let start = i;
        // Whitespace.
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        // Comments.
        if c == b'/' && i + 1 < n && bytes[i + 1] == b'/' {
            while i < n && bytes[i] != b'\n' {
                i += 1;
            }
            let end = if i > start && bytes[i - 1] == b'\r' {
                i - 1
            } else {
                i
            };
            comments.push(Comment {
                span: span(start, end),
                text: text[start..end].to_string(),
            });
            continue;
        }
        if c == b'/' && i + 1 < n && bytes[i + 1] == b'*' {
            i += 2;
            let mut closed = false;
            while i + 1 < n {
                if bytes[i] == b'*' && bytes[i + 1] == b'/' {
                    i += 2;
                    closed = true;
                    break;
                }
                i += 1;
            }
            if !closed {
                diagnostics.push(
                    Diagnostic::error(span(start, start + 2), "unterminated block comment")
                        .with_hint("close the comment with `*/`"),
                );
                i = n;
            }
            comments.push(Comment {
                span: span(start, i),
                text: text[start..i].to_string(),
            });
            continue;
        }
        if c == b'#' {
            let line_end = text[i..].find('\n').map(|k| i + k).unwrap_or(n);
            if text[i..line_end].starts_with("#include") {
                let arg = text[i + "#include".len()..line_end].trim();
                handle_include(
                    sources,
                    includes,
                    stack,
                    tokens,
                    comments,
                    diagnostics,
                    span(start, line_end),
                    &file_name,
                    arg,
                );
            } else {
                diagnostics.push(
                    Diagnostic::error(
                        span(start, start + 1),
                        "`#` comments were removed from Stan in version 2.33",
                    )
                    .with_hint("use `//` for a line comment"),
                );
            }
            i = line_end;
            continue;
        }
        // Identifiers and keywords.
        if is_ident_start(c) {
            while i < n && is_ident_continue(bytes[i]) {
                i += 1;
            }
            tokens.push(Token {
                kind: TokenKind::Ident(text[start..i].to_string()),
                span: span(start, i),
            });
            continue;
        }
        // Tuple projection `x.1`: a dot followed by digits after something projectable.
        if c == b'.' && i + 1 < n && bytes[i + 1].is_ascii_digit() && projectable(tokens, file) {
            tokens.push(Token {
                kind: TokenKind::Dot,
                span: span(i, i + 1),
            });
            i += 1;
            let digits_start = i;
            while i < n && bytes[i].is_ascii_digit() {
                i += 1;
            }
            tokens.push(Token {
                kind: TokenKind::Int(text[digits_start..i].to_string()),
                span: span(digits_start, i),
            });
            continue;
        }
        // Numbers.
        if c.is_ascii_digit() || (c == b'.' && i + 1 < n && bytes[i + 1].is_ascii_digit()) {
            let mut is_real = false;
            while i < n && bytes[i].is_ascii_digit() {
                i += 1;
            }
            if i < n && bytes[i] == b'.' {
                // As in stanc, the dot joins the number: `2.*x` is `2.` times `x`.
                is_real = true;
                i += 1;
                while i < n && bytes[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if i < n && (bytes[i] == b'e' || bytes[i] == b'E') {
                let mut j = i + 1;
                if j < n && (bytes[j] == b'+' || bytes[j] == b'-') {
                    j += 1;
                }
                if j < n && bytes[j].is_ascii_digit() {
                    while j < n && bytes[j].is_ascii_digit() {
                        j += 1;
                    }
                    i = j;
                    is_real = true;
                }
            }
            let number = text[start..i].to_string();
            if i < n && bytes[i] == b'i' && !(i + 1 < n && is_ident_continue(bytes[i + 1])) {
                i += 1;
                tokens.push(Token {
                    kind: TokenKind::Imag(number),
                    span: span(start, i),
                });
                continue;
            }
            if i < n && is_ident_continue(bytes[i]) {
                diagnostics.push(Diagnostic::error(
                    span(start, i + 1),
                    format!(
                        "invalid number: `{}` is followed directly by a letter",
                        &text[start..i]
                    ),
                ));
            }
            tokens.push(Token {
                kind: if is_real {
                    TokenKind::Real(number)
                } else {
                    TokenKind::Int(number)
                },
                span: span(start, i),
            });
            continue;
        }
        // Strings.
        if c == b'"' {
            i += 1;
            while i < n && bytes[i] != b'"' && bytes[i] != b'\n' {
                i += 1;
            }
            if i < n && bytes[i] == b'"' {
                tokens.push(Token {
                    kind: TokenKind::Str(text[start + 1..i].to_string()),
                    span: span(start, i + 1),
                });
                i += 1;
            } else {
                diagnostics.push(
                    Diagnostic::error(span(start, i), "unterminated string literal")
                        .with_hint("strings must end with `\"` on the same line"),
                );
            }
            continue;
        }
        // Punctuation, longest match first.
        let next = |k: usize| bytes.get(i + k).copied().unwrap_or(0);
        let punct = match c {
            b'.' => match (next(1), next(2)) {
                (b'*', b'=') => Some((3, TokenKind::EltTimesAssign)),
                (b'/', b'=') => Some((3, TokenKind::EltDivideAssign)),
                (b'*', _) => Some((2, TokenKind::EltTimes)),
                (b'/', _) => Some((2, TokenKind::EltDivide)),
                (b'^', _) => Some((2, TokenKind::EltHat)),
                _ => Some((1, TokenKind::Dot)),
            },
            b'%' if next(1) == b'/' && next(2) == b'%' => Some((3, TokenKind::IntDiv)),
            b'%' => Some((1, TokenKind::Percent)),
            b'+' if next(1) == b'=' => Some((2, TokenKind::PlusAssign)),
            b'+' => Some((1, TokenKind::Plus)),
            b'-' if next(1) == b'=' => Some((2, TokenKind::MinusAssign)),
            b'-' => Some((1, TokenKind::Minus)),
            b'*' if next(1) == b'=' => Some((2, TokenKind::TimesAssign)),
            b'*' => Some((1, TokenKind::Star)),
            b'/' if next(1) == b'=' => Some((2, TokenKind::DivideAssign)),
            b'/' => Some((1, TokenKind::Slash)),
            b'<' if next(1) == b'=' => Some((2, TokenKind::Leq)),
            b'<' => Some((1, TokenKind::Lt)),
            b'>' if next(1) == b'=' => Some((2, TokenKind::Geq)),
            b'>' => Some((1, TokenKind::Gt)),
            b'=' if next(1) == b'=' => Some((2, TokenKind::EqEq)),
            b'=' => Some((1, TokenKind::Assign)),
            b'!' if next(1) == b'=' => Some((2, TokenKind::Neq)),
            b'!' => Some((1, TokenKind::Bang)),
            b'|' if next(1) == b'|' => Some((2, TokenKind::OrOr)),
            b'|' => Some((1, TokenKind::Bar)),
            b'&' if next(1) == b'&' => Some((2, TokenKind::AndAnd)),
            b'{' => Some((1, TokenKind::LBrace)),
            b'}' => Some((1, TokenKind::RBrace)),
            b'(' => Some((1, TokenKind::LParen)),
            b')' => Some((1, TokenKind::RParen)),
            b'[' => Some((1, TokenKind::LBracket)),
            b']' => Some((1, TokenKind::RBracket)),
            b',' => Some((1, TokenKind::Comma)),
            b';' => Some((1, TokenKind::Semi)),
            b'~' => Some((1, TokenKind::Tilde)),
            b'?' => Some((1, TokenKind::Question)),
            b':' => Some((1, TokenKind::Colon)),
            b'\\' => Some((1, TokenKind::Backslash)),
            b'^' => Some((1, TokenKind::Hat)),
            b'\'' => Some((1, TokenKind::Transpose)),
            _ => None,
        };
        if let Some((len, kind)) = punct {
            i += len;
            tokens.push(Token {
                kind,
                span: span(start, i),
            });
            continue;
        }
        // Anything else: report once per run of unexpected characters.
        let ch = text[i..].chars().next().unwrap_or('\u{fffd}');
        let mut end = i + ch.len_utf8();
        while end < n {
            let b = bytes[end];
            if b.is_ascii_whitespace() || b.is_ascii_alphanumeric() || b.is_ascii_punctuation() {
                break;
            }
            end += text[end..]
                .chars()
                .next()
                .map(|c| c.len_utf8())
                .unwrap_or(1);
        }
        diagnostics.push(Diagnostic::error(
            span(start, end),
            format!("unexpected character `{}`", ch.escape_debug()),
        ));
        i = end;
    }
}

#[allow(clippy::too_many_arguments)]
fn handle_include(
    sources: &mut SourceMap,
    includes: Option<&IncludeContext<'_>>,
    stack: &mut Vec<FileId>,
    tokens: &mut Vec<Token>,
    comments: &mut Vec<Comment>,
    diagnostics: &mut Vec<Diagnostic>,
    directive: Span,
    including_name: &str,
    arg: &str,
) {
    // `#include "name"`, `#include <name>` or `#include name`; anything after the name (e.g. a
    // `//` comment) is ignored.
    let name = if let Some(rest) = arg.strip_prefix('"') {
        rest.split('"').next().unwrap_or("")
    } else if let Some(rest) = arg.strip_prefix('<') {
        rest.split('>').next().unwrap_or("")
    } else {
        arg.split_whitespace().next().unwrap_or("")
    }
    .trim();
    if name.is_empty() {
        diagnostics.push(
            Diagnostic::error(directive, "`#include` without a file name")
                .with_hint("write `#include \"file.stan\"`"),
        );
        return;
    }
    let Some(ctx) = includes else {
        diagnostics.push(Diagnostic::error(
            directive,
            format!("cannot include `{name}`: no include loader was given"),
        ));
        return;
    };
    if stack.len() > MAX_INCLUDE_DEPTH {
        diagnostics.push(Diagnostic::error(
            directive,
            format!("includes nested more than {MAX_INCLUDE_DEPTH} deep"),
        ));
        return;
    }
    let mut candidates: Vec<PathBuf> = Vec::new();
    let requested = Path::new(name);
    if requested.is_absolute() {
        candidates.push(requested.to_path_buf());
    } else {
        let including_dir = Path::new(including_name)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        candidates.push(including_dir.join(requested));
        for dir in ctx.include_paths {
            candidates.push(dir.join(requested));
        }
    }
    for candidate in &candidates {
        let Some(text) = ctx.loader.load(candidate) else {
            continue;
        };
        let display = candidate.to_string_lossy().into_owned();
        let cyclic = stack
            .iter()
            .any(|id| sources.get(*id).map(|f| f.name == display).unwrap_or(false));
        if cyclic {
            diagnostics.push(Diagnostic::error(
                directive,
                format!("`{display}` includes itself (directly or through other files)"),
            ));
            return;
        }
        if text.len() > u32::MAX as usize / 2 {
            diagnostics.push(Diagnostic::error(
                directive,
                format!("`{display}` is too large"),
            ));
            return;
        }
        let id = sources.add_included(display, text, directive);
        stack.push(id);
        lex_file(sources, id, includes, stack, tokens, comments, diagnostics);
        stack.pop();
        return;
    }
    let searched: Vec<String> = candidates
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    diagnostics.push(
        Diagnostic::error(directive, format!("cannot find included file `{name}`"))
            .with_hint(format!("looked in: {}", searched.join(", "))),
    );
}
