//! Source locations: file ids, byte spans, and the map from file ids to names and text.

use std::fmt;

/// Identifies one source file in a [`SourceMap`]. The main model file and every file pulled in
/// by `#include` get their own id, so spans inside included text point at the included file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct FileId(pub u32);

/// A half-open byte range `start..end` into the text of file `file`.
///
/// Offsets are `u32` to keep nodes small; sources over 4 GiB are rejected by the loader.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub file: FileId,
    pub start: u32,
    pub end: u32,
}

impl Span {
    /// The span `start..end` in `file`.
    pub fn new(file: FileId, start: u32, end: u32) -> Span {
        Span { file, start, end }
    }

    /// A placeholder span (file 0, empty range at 0), used for synthesised nodes and by
    /// [`crate::ast::Program::strip_locations`].
    pub const DUMMY: Span = Span {
        file: FileId(0),
        start: 0,
        end: 0,
    };

    /// The smallest span covering both `self` and `other` when they are in the same file;
    /// otherwise `self` (a construct that straddles an `#include` boundary keeps its start).
    pub fn to(self, other: Span) -> Span {
        if self.file != other.file {
            return self;
        }
        Span {
            file: self.file,
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    /// Length in bytes.
    pub fn len(&self) -> u32 {
        self.end.saturating_sub(self.start)
    }

    /// Whether the span covers no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One loaded source file.
#[derive(Clone, Debug)]
pub struct SourceFile {
    /// Display name: the path as given or resolved, or a synthetic name for in-memory text.
    pub name: String,
    /// Full text.
    pub text: String,
    /// For a file pulled in by `#include`, the span of the directive that included it.
    pub included_from: Option<Span>,
    /// Byte offset of the first character of each line (always starts with 0).
    line_starts: Vec<u32>,
}

impl SourceFile {
    /// Creates a file record and indexes its line starts.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> SourceFile {
        let text = text.into();
        let mut line_starts = vec![0u32];
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                line_starts.push((i + 1) as u32);
            }
        }
        SourceFile {
            name: name.into(),
            text,
            included_from: None,
            line_starts,
        }
    }

    /// 1-based line and 1-based column (counted in characters) of byte `offset`.
    /// Offsets past the end are clamped to the end.
    pub fn line_col(&self, offset: u32) -> LineCol {
        let offset = (offset as usize).min(self.text.len()) as u32;
        let line_index = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let line_start = self.line_starts[line_index] as usize;
        let mut end = offset as usize;
        while end > line_start && !self.text.is_char_boundary(end) {
            end -= 1;
        }
        let column = self.text[line_start..end].chars().count() + 1;
        LineCol {
            line: line_index + 1,
            column,
        }
    }

    /// Text of 1-based line `line` without its line terminator, or `""` if out of range.
    pub fn line_text(&self, line: usize) -> &str {
        if line == 0 || line > self.line_starts.len() {
            return "";
        }
        let start = self.line_starts[line - 1] as usize;
        let end = self
            .line_starts
            .get(line)
            .map(|&e| e as usize)
            .unwrap_or(self.text.len());
        let s = &self.text[start..end];
        s.trim_end_matches(['\n', '\r'])
    }

    /// Number of lines (a file with no newline has one line).
    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// Byte offset at which 1-based `line` starts.
    pub fn line_start(&self, line: usize) -> u32 {
        self.line_starts
            .get(line.saturating_sub(1))
            .copied()
            .unwrap_or(self.text.len() as u32)
    }
}

/// A 1-based line and column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineCol {
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for LineCol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// All source files of one parse: the main file and any included files, indexed by [`FileId`].
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

impl SourceMap {
    /// An empty map.
    pub fn new() -> SourceMap {
        SourceMap::default()
    }

    /// Adds a file and returns its id (ids are assigned 0, 1, 2, ... in insertion order).
    pub fn add(&mut self, name: impl Into<String>, text: impl Into<String>) -> FileId {
        let id = FileId(self.files.len() as u32);
        self.files.push(SourceFile::new(name, text));
        id
    }

    /// Adds a file that was pulled in by the `#include` directive at `directive`.
    pub fn add_included(
        &mut self,
        name: impl Into<String>,
        text: impl Into<String>,
        directive: Span,
    ) -> FileId {
        let id = self.add(name, text);
        if let Some(file) = self.files.last_mut() {
            file.included_from = Some(directive);
        }
        id
    }

    /// The chain of `#include` directives that led to `file`, innermost first (empty for the
    /// main file). Bounded by the number of files, so a malformed chain cannot loop.
    pub fn include_chain(&self, file: FileId) -> Vec<Span> {
        let mut chain = Vec::new();
        let mut current = file;
        while let Some(directive) = self.get(current).and_then(|f| f.included_from) {
            if chain.len() >= self.files.len() {
                break;
            }
            chain.push(directive);
            current = directive.file;
        }
        chain
    }

    /// The file with id `id`, if any.
    pub fn get(&self, id: FileId) -> Option<&SourceFile> {
        self.files.get(id.0 as usize)
    }

    /// Number of files.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether no file has been added.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Iterates over `(id, file)` pairs.
    pub fn iter(&self) -> impl Iterator<Item = (FileId, &SourceFile)> {
        self.files
            .iter()
            .enumerate()
            .map(|(i, f)| (FileId(i as u32), f))
    }

    /// The source text covered by `span`, or `""` if the span does not fit its file.
    pub fn snippet(&self, span: Span) -> &str {
        self.get(span.file)
            .and_then(|f| f.text.get(span.start as usize..span.end as usize))
            .unwrap_or("")
    }

    /// `'name', line L, column C to column D` (or `to line M, column D` across lines): where a
    /// runtime error happened, in the words CmdStan uses.
    pub fn describe_range(&self, span: Span) -> String {
        match self.get(span.file) {
            Some(f) => {
                let a = f.line_col(span.start);
                let b = f.line_col(span.end);
                if a.line == b.line {
                    format!(
                        "'{}', line {}, column {} to column {}",
                        f.name, a.line, a.column, b.column
                    )
                } else {
                    format!(
                        "'{}', line {}, column {} to line {}, column {}",
                        f.name, a.line, a.column, b.line, b.column
                    )
                }
            }
            None => format!("<unknown file {}>", span.file.0),
        }
    }

    /// `name:line:col` of the start of `span`.
    pub fn describe(&self, span: Span) -> String {
        match self.get(span.file) {
            Some(f) => format!("{}:{}", f.name, f.line_col(span.start)),
            None => format!("<unknown file {}>:{}", span.file.0, span.start),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_from_one_in_characters() {
        let f = SourceFile::new("x", "ab\ncé d\n\nz");
        assert_eq!(f.line_col(0), LineCol { line: 1, column: 1 });
        assert_eq!(f.line_col(2), LineCol { line: 1, column: 3 });
        assert_eq!(f.line_col(3), LineCol { line: 2, column: 1 });
        // `é` is two bytes but one column.
        assert_eq!(f.line_col(6), LineCol { line: 2, column: 3 });
        assert_eq!(f.line_col(5), LineCol { line: 2, column: 2 });
        assert_eq!(f.line_col(9), LineCol { line: 3, column: 1 });
        assert_eq!(f.line_col(10), LineCol { line: 4, column: 1 });
        assert_eq!(f.line_col(1000), LineCol { line: 4, column: 2 });
        assert_eq!(f.line_text(2), "cé d");
        assert_eq!(f.line_text(3), "");
        assert_eq!(f.line_text(99), "");
        assert_eq!(f.line_count(), 4);
    }

    #[test]
    fn span_join_and_snippet() {
        let mut map = SourceMap::new();
        let a = map.add("a", "hello world");
        let b = map.add("b", "other");
        let s = Span::new(a, 0, 5).to(Span::new(a, 6, 11));
        assert_eq!(map.snippet(s), "hello world");
        assert_eq!(
            Span::new(a, 0, 5).to(Span::new(b, 0, 1)),
            Span::new(a, 0, 5)
        );
        assert_eq!(map.snippet(Span::new(b, 3, 99)), "");
        assert_eq!(map.describe(Span::new(a, 6, 7)), "a:1:7");
    }
}
