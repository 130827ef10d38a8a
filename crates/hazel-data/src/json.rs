//! A small JSON parser specialised for CmdStan data files.
//!
//! Numeric arrays are collapsed while parsing into rectangular [`NumBlock`]s (one flat buffer
//! per variable, outermost index first), so a 10 MB data file costs one allocation per
//! variable rather than one tree node per number. Anything that is not a rectangular numeric
//! array (ragged arrays, arrays of tuples, objects) stays a general [`Node`].

use crate::DataError;

/// Nesting deeper than this is rejected rather than risking the stack on hostile input.
const MAX_DEPTH: usize = 128;

/// The numbers of a rectangular block, in row-major (outermost index first) order.
#[derive(Debug, Clone, PartialEq)]
pub enum Numbers {
    /// Every element was written as an integer literal that fits in an `i64`.
    Ints(Vec<i64>),
    /// At least one element was a real literal, a special string (`"inf"`, `"NaN"`, …) or an
    /// integer too large for `i64`.
    Reals(Vec<f64>),
}

impl Numbers {
    pub fn len(&self) -> usize {
        match self {
            Numbers::Ints(v) => v.len(),
            Numbers::Reals(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element at flat index `i` as an `f64`.
    pub fn get_f64(&self, i: usize) -> f64 {
        match self {
            Numbers::Ints(v) => v[i] as f64,
            Numbers::Reals(v) => v[i],
        }
    }

    fn into_reals(self) -> Vec<f64> {
        match self {
            Numbers::Ints(v) => v.into_iter().map(|x| x as f64).collect(),
            Numbers::Reals(v) => v,
        }
    }
}

/// A number or a rectangular (possibly empty, possibly nested) array of numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct NumBlock {
    /// Sizes, outermost first; empty for a single number.
    pub dims: Vec<usize>,
    pub numbers: Numbers,
    /// Flat index of the first element that was not written as an integer literal
    /// (needed to report the offending element when an `int` is declared).
    pub first_non_int: Option<usize>,
}

/// A parsed JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// A number or a rectangular numeric array.
    Block(NumBlock),
    /// A string that is not one of the special numeric spellings.
    Str(String),
    Bool(bool),
    Null,
    /// An array that is not a rectangular numeric block: ragged, or holding objects/strings.
    List(Vec<Node>),
    /// An object, members in file order.
    Object(Vec<(String, Node)>),
}

impl Node {
    /// A short description of what this node is, for error messages.
    pub fn describe(&self) -> String {
        match self {
            Node::Block(b) if b.dims.is_empty() => "a single number".to_string(),
            Node::Block(b) => format!("an array of size {}", crate::format_dims(&b.dims)),
            Node::Str(s) => format!("the string \"{}\"", truncate(s, 40)),
            Node::Bool(_) => "a boolean".to_string(),
            Node::Null => "null".to_string(),
            Node::List(items) => {
                format!(
                    "an array of {} elements that is not a rectangular array of numbers",
                    items.len()
                )
            }
            Node::Object(_) => "an object".to_string(),
        }
    }
}

fn truncate(s: &str, max_chars: usize) -> String {
    if s.chars().count() <= max_chars {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max_chars).collect();
        t.push('…');
        t
    }
}

/// The numeric value of a special string, if it is one CmdStan accepts.
fn special_number(s: &str) -> Option<f64> {
    match s {
        "inf" | "+inf" | "Inf" | "+Inf" | "Infinity" | "+Infinity" | "infinity" => {
            Some(f64::INFINITY)
        }
        "-inf" | "-Inf" | "-Infinity" | "-infinity" => Some(f64::NEG_INFINITY),
        "NaN" | "nan" | "-NaN" | "-nan" => Some(f64::NAN),
        _ => None,
    }
}

pub(crate) struct Parser<'a> {
    bytes: &'a [u8],
    pos: usize,
    depth: usize,
}

impl<'a> Parser<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Parser {
            bytes: text.as_bytes(),
            pos: 0,
            depth: 0,
        }
    }

    fn error(&self, message: impl Into<String>) -> DataError {
        let consumed = &self.bytes[..self.pos.min(self.bytes.len())];
        let line = consumed.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = consumed
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1);
        // Columns count characters, not bytes.
        let column = String::from_utf8_lossy(&consumed[line_start..])
            .chars()
            .count()
            + 1;
        DataError::Syntax {
            line,
            column,
            message: message.into(),
        }
    }

    fn skip_whitespace(&mut self) {
        while let Some(&b) = self.bytes.get(self.pos) {
            if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn expect(&mut self, byte: u8) -> Result<(), DataError> {
        self.skip_whitespace();
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.error(format!(
                "expected '{}', found {}",
                byte as char,
                self.found()
            )))
        }
    }

    fn found(&self) -> String {
        match self.peek() {
            None => "the end of the file".to_string(),
            Some(_) => {
                let rest = &self.bytes[self.pos..];
                let c = String::from_utf8_lossy(&rest[..rest.len().min(4)])
                    .chars()
                    .next()
                    .unwrap_or('?');
                format!("'{c}'")
            }
        }
    }

    /// Parses a whole document: one value and nothing after it but whitespace.
    pub(crate) fn parse_document(&mut self) -> Result<Node, DataError> {
        let node = self.parse_value()?;
        self.skip_whitespace();
        if self.pos < self.bytes.len() {
            return Err(self.error(format!(
                "unexpected {} after the end of the data",
                self.found()
            )));
        }
        Ok(node)
    }

    fn parse_value(&mut self) -> Result<Node, DataError> {
        self.skip_whitespace();
        match self.peek() {
            None => Err(self.error("expected a value, found the end of the file")),
            Some(b'{') => self.nested(Self::parse_object),
            Some(b'[') => self.nested(Self::parse_array),
            Some(b'"') => {
                let s = self.parse_string()?;
                Ok(match special_number(&s) {
                    Some(x) => Node::Block(NumBlock {
                        dims: vec![],
                        numbers: Numbers::Reals(vec![x]),
                        first_non_int: Some(0),
                    }),
                    None => Node::Str(s),
                })
            }
            Some(b't') => self.keyword("true", Node::Bool(true)),
            Some(b'f') => self.keyword("false", Node::Bool(false)),
            Some(b'n') => self.keyword("null", Node::Null),
            Some(b'-' | b'0'..=b'9') => self.parse_number(),
            // Non-standard bare spellings some writers produce.
            Some(b'N') => self.keyword("NaN", real_node(f64::NAN)),
            Some(b'I') => self.keyword("Infinity", real_node(f64::INFINITY)),
            Some(_) => Err(self.error(format!("expected a value, found {}", self.found()))),
        }
    }

    fn nested(&mut self, f: fn(&mut Self) -> Result<Node, DataError>) -> Result<Node, DataError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.error(format!("nesting deeper than {MAX_DEPTH} levels")));
        }
        self.depth += 1;
        let result = f(self);
        self.depth -= 1;
        result
    }

    fn keyword(&mut self, word: &str, node: Node) -> Result<Node, DataError> {
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(node)
        } else {
            Err(self.error(format!("expected a value, found {}", self.found())))
        }
    }

    fn parse_number(&mut self) -> Result<Node, DataError> {
        Ok(match self.parse_number_raw()? {
            Scalar::Int(i) => Node::Block(NumBlock {
                dims: vec![],
                numbers: Numbers::Ints(vec![i]),
                first_non_int: None,
            }),
            Scalar::Real(x) => real_node(x),
        })
    }

    fn expect_word(&mut self, word: &str) -> Result<(), DataError> {
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(self.error(format!("expected a value, found {}", self.found())))
        }
    }

    /// A number literal (or bare `-Infinity` / `-NaN`), without building a node: the hot path
    /// of large numeric arrays.
    fn parse_number_raw(&mut self) -> Result<Scalar, DataError> {
        let start = self.pos;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.pos += 1;
            // "-Infinity" / "-NaN" written bare.
            if self.peek() == Some(b'I') {
                self.expect_word("Infinity")?;
                return Ok(Scalar::Real(f64::NEG_INFINITY));
            }
            if self.peek() == Some(b'N') {
                self.expect_word("NaN")?;
                return Ok(Scalar::Real(f64::NAN));
            }
        }
        let digits_start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        if self.pos == digits_start {
            return Err(self.error(format!("expected a digit, found {}", self.found())));
        }
        let mut is_integer = true;
        if self.peek() == Some(b'.') {
            is_integer = false;
            self.pos += 1;
            let frac_start = self.pos;
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                self.pos += 1;
            }
            if self.pos == frac_start {
                return Err(self.error(format!(
                    "expected a digit after '.', found {}",
                    self.found()
                )));
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            is_integer = false;
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            let exp_start = self.pos;
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                self.pos += 1;
            }
            if self.pos == exp_start {
                return Err(self.error(format!(
                    "expected a digit in the exponent, found {}",
                    self.found()
                )));
            }
        }
        let text = &self.bytes[start..self.pos];
        // The slice holds only ASCII digits, signs, '.', 'e': valid UTF-8.
        let text = std::str::from_utf8(text).map_err(|_| self.error("invalid number"))?;
        if is_integer {
            if let Ok(i) = text.parse::<i64>() {
                return Ok(Scalar::Int(i));
            }
        }
        match text.parse::<f64>() {
            Ok(x) => Ok(Scalar::Real(x)),
            Err(_) => Err(self.error(format!("invalid number {text}"))),
        }
    }

    fn parse_string(&mut self) -> Result<String, DataError> {
        // Caller has seen the opening quote.
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            let Some(b) = self.peek() else {
                return Err(self.error("unterminated string"));
            };
            self.pos += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    let Some(e) = self.peek() else {
                        return Err(self.error("unterminated string"));
                    };
                    self.pos += 1;
                    match e {
                        b'"' => out.push(b'"'),
                        b'\\' => out.push(b'\\'),
                        b'/' => out.push(b'/'),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let c = self.parse_unicode_escape()?;
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                        }
                        _ => return Err(self.error("invalid escape in string")),
                    }
                }
                b if b < 0x20 => return Err(self.error("control character in string")),
                b => out.push(b),
            }
        }
        // The input is a &str, and escapes produce valid UTF-8, so this cannot fail; map the
        // error anyway rather than unwrap.
        String::from_utf8(out).map_err(|_| self.error("invalid UTF-8 in string"))
    }

    fn parse_hex4(&mut self) -> Result<u32, DataError> {
        let Some(hex) = self.bytes.get(self.pos..self.pos + 4) else {
            return Err(self.error("truncated \\u escape"));
        };
        let mut v = 0u32;
        for &h in hex {
            let d = (h as char)
                .to_digit(16)
                .ok_or_else(|| self.error("invalid \\u escape"))?;
            v = v * 16 + d;
        }
        self.pos += 4;
        Ok(v)
    }

    fn parse_unicode_escape(&mut self) -> Result<char, DataError> {
        let first = self.parse_hex4()?;
        let code = if (0xD800..0xDC00).contains(&first) {
            if !self.bytes[self.pos..].starts_with(b"\\u") {
                return Err(self.error("unpaired surrogate in \\u escape"));
            }
            self.pos += 2;
            let second = self.parse_hex4()?;
            if !(0xDC00..0xE000).contains(&second) {
                return Err(self.error("unpaired surrogate in \\u escape"));
            }
            0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
        } else {
            first
        };
        char::from_u32(code).ok_or_else(|| self.error("invalid \\u escape"))
    }

    fn parse_object(&mut self) -> Result<Node, DataError> {
        self.pos += 1; // '{'
        let mut members: Vec<(String, Node)> = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Node::Object(members));
        }
        loop {
            self.skip_whitespace();
            if self.peek() != Some(b'"') {
                return Err(self.error(format!("expected a quoted name, found {}", self.found())));
            }
            let key = self.parse_string()?;
            self.expect(b':')?;
            let value = self.parse_value()?;
            members.push((key, value));
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Node::Object(members));
                }
                _ => {
                    return Err(self.error(format!("expected ',' or '}}', found {}", self.found())))
                }
            }
        }
    }

    fn parse_array(&mut self) -> Result<Node, DataError> {
        self.pos += 1; // '['
        self.skip_whitespace();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Node::Block(NumBlock {
                dims: vec![0],
                numbers: Numbers::Ints(Vec::new()),
                first_non_int: None,
            }));
        }
        // Fast path: a flat array of numbers appends straight into one buffer.
        let mut items: Vec<Node> = Vec::new();
        let mut flat = FlatNumbers::default();
        let mut all_scalars = true;
        loop {
            if all_scalars {
                self.skip_whitespace();
                if matches!(self.peek(), Some(b'-' | b'0'..=b'9')) {
                    match self.parse_number_raw()? {
                        Scalar::Int(i) => flat.push_int(i),
                        Scalar::Real(x) => flat.push_real(x),
                    }
                    self.skip_whitespace();
                    match self.peek() {
                        Some(b',') => {
                            self.pos += 1;
                            continue;
                        }
                        Some(b']') => {
                            self.pos += 1;
                            break;
                        }
                        _ => {
                            return Err(
                                self.error(format!("expected ',' or ']', found {}", self.found()))
                            )
                        }
                    }
                }
            }
            let item = self.parse_value()?;
            if all_scalars {
                match item {
                    Node::Block(b) if b.dims.is_empty() => flat.push_scalar(b),
                    other => {
                        all_scalars = false;
                        items = flat.take_as_nodes();
                        items.push(other);
                    }
                }
            } else {
                items.push(item);
            }
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    break;
                }
                _ => return Err(self.error(format!("expected ',' or ']', found {}", self.found()))),
            }
        }
        if all_scalars {
            return Ok(Node::Block(flat.into_block()));
        }
        Ok(stack_blocks(items))
    }
}

fn real_node(x: f64) -> Node {
    Node::Block(NumBlock {
        dims: vec![],
        numbers: Numbers::Reals(vec![x]),
        first_non_int: Some(0),
    })
}

/// One number as written.
enum Scalar {
    Int(i64),
    Real(f64),
}

/// Accumulates a flat array of scalars, staying in `i64` until a real appears.
#[derive(Default)]
struct FlatNumbers {
    ints: Vec<i64>,
    reals: Option<Vec<f64>>,
    first_non_int: Option<usize>,
}

impl FlatNumbers {
    fn len(&self) -> usize {
        self.reals.as_ref().map_or(self.ints.len(), |r| r.len())
    }

    fn push_int(&mut self, i: i64) {
        match &mut self.reals {
            Some(r) => r.push(i as f64),
            None => self.ints.push(i),
        }
    }

    fn push_real(&mut self, x: f64) {
        let index = self.len();
        if self.first_non_int.is_none() {
            self.first_non_int = Some(index);
        }
        let reals = self.reals.get_or_insert_with(|| {
            std::mem::take(&mut self.ints)
                .into_iter()
                .map(|i| i as f64)
                .collect()
        });
        reals.push(x);
    }

    fn push_scalar(&mut self, block: NumBlock) {
        match block.numbers {
            Numbers::Ints(v) => self.push_int(v[0]),
            // Scalar real blocks come from real literals and special strings.
            Numbers::Reals(v) => self.push_real(v[0]),
        }
    }

    fn into_block(self) -> NumBlock {
        let n = self.len();
        let numbers = match self.reals {
            Some(r) => Numbers::Reals(r),
            None => Numbers::Ints(self.ints),
        };
        NumBlock {
            dims: vec![n],
            numbers,
            first_non_int: self.first_non_int,
        }
    }

    /// The scalars so far as separate nodes (when the array turns out not to be flat).
    fn take_as_nodes(&mut self) -> Vec<Node> {
        let taken = std::mem::take(self);
        let non_int_from = taken.first_non_int;
        match taken.reals {
            None => taken
                .ints
                .into_iter()
                .map(|i| {
                    Node::Block(NumBlock {
                        dims: vec![],
                        numbers: Numbers::Ints(vec![i]),
                        first_non_int: None,
                    })
                })
                .collect(),
            Some(r) => r
                .into_iter()
                .enumerate()
                .map(|(k, x)| {
                    // Elements before the first real literal were integer literals.
                    let was_int = non_int_from.is_some_and(|f| k < f);
                    if was_int {
                        Node::Block(NumBlock {
                            dims: vec![],
                            numbers: Numbers::Ints(vec![x as i64]),
                            first_non_int: None,
                        })
                    } else {
                        // Which later elements were integer literals is not recorded; treating
                        // them as reals only matters for an int-declared variable, which is an
                        // error either way (its first non-integer is still reported first).
                        real_node(x)
                    }
                })
                .collect(),
        }
    }
}

/// Stacks the elements of an array into one block when they are all blocks of one shape;
/// otherwise keeps them as a list.
fn stack_blocks(items: Vec<Node>) -> Node {
    let rectangular = match items.first() {
        Some(Node::Block(first)) => items
            .iter()
            .all(|n| matches!(n, Node::Block(b) if b.dims == first.dims)),
        _ => false,
    };
    if !rectangular {
        return Node::List(items);
    }
    let inner_dims = match &items[0] {
        Node::Block(b) => b.dims.clone(),
        _ => return Node::List(items),
    };
    let inner_len: usize = inner_dims.iter().product();
    let any_real = items.iter().any(|n| {
        matches!(
            n,
            Node::Block(NumBlock {
                numbers: Numbers::Reals(_),
                ..
            })
        )
    });
    let mut dims = Vec::with_capacity(inner_dims.len() + 1);
    dims.push(items.len());
    dims.extend_from_slice(&inner_dims);
    let mut first_non_int = None;
    let numbers = if any_real {
        let mut out = Vec::with_capacity(items.len() * inner_len);
        for (k, item) in items.into_iter().enumerate() {
            if let Node::Block(b) = item {
                if first_non_int.is_none() {
                    first_non_int = b.first_non_int.map(|f| k * inner_len + f);
                }
                out.extend(b.numbers.into_reals());
            }
        }
        Numbers::Reals(out)
    } else {
        let mut out = Vec::with_capacity(items.len() * inner_len);
        for item in items {
            if let Node::Block(NumBlock {
                numbers: Numbers::Ints(v),
                ..
            }) = item
            {
                out.extend(v);
            }
        }
        Numbers::Ints(out)
    };
    Node::Block(NumBlock {
        dims,
        numbers,
        first_non_int,
    })
}
