//! A JSON reader that borrows what it reads and skims what it does not need.
//!
//! The policy needs a few dozen bytes of metadata out of requests that can be megabytes
//! (CRD schemas, ConfigMap values). Building a tree costs allocations per value, and even
//! tokenizing every value costs nanoseconds per token. This reader parses the path to the
//! fields it reads strictly, as serde_json would (the fuzzer checks that), reads those
//! strings with their escapes and UTF-8 checked, and skips every other value by its
//! structure alone (`structural`): a skipped container must close, with its strings ended
//! and its brackets balanced, but what lies between them is not parsed. Nothing is built
//! and nothing recurses, however deep the skipped value.
//!
//! Strings are scanned sixteen bytes at a time (`simd`), skipped containers sixty-four
//! bytes at a time (`structural`).

mod simd;
mod structural;

pub use structural::{SkipError, skip_container};

use std::borrow::Cow;
use std::fmt;

/// An object key as found in the input: its bytes between the quotes, escapes not decoded.
#[derive(Debug, Clone, Copy)]
pub struct Key<'a> {
    pub raw: &'a [u8],
    /// Where its opening quote is, to decode it with `Reader::string_at`.
    pub at: usize,
    /// Whether it holds escape sequences (then `raw` is not its text).
    pub escaped: bool,
}

/// A string borrowed from the input when it holds no escape sequences.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Str<'a>(pub Cow<'a, str>);

impl std::ops::Deref for Str<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

/// Why the input could not be read, and where. Boxed, so that the `Result`s of the hot
/// paths stay one word wide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(Box<ErrorAt>);

#[derive(Debug, Clone, PartialEq, Eq)]
struct ErrorAt {
    message: String,
    line: usize,
    column: usize,
}

impl Error {
    /// The same error, its message prefixed with what was being read.
    pub fn context(mut self, what: impl fmt::Display) -> Error {
        self.0.message = format!("{what}: {}", self.0.message);
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "{} at line {} column {}",
            self.0.message, self.0.line, self.0.column
        )
    }
}

pub type Result<T> = std::result::Result<T, Error>;

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// Whether any byte of `word` is `"`, `\`, a control character (below 0x20) or not ASCII.
#[inline]
fn has_special(word: u64) -> bool {
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let below_space = word.wrapping_sub(0x20 * ONES) & !word & HIGH;
    (has_zero(word ^ (b'"' as u64 * ONES))
        | has_zero(word ^ (b'\\' as u64 * ONES))
        | below_space
        | (word & HIGH))
        != 0
}

/// Whether a string byte needs attention: it ends the string, starts an escape, is a
/// control character (which JSON forbids in strings) or starts a multi-byte character.
#[inline]
fn is_special(b: u8) -> bool {
    b == b'"' || b == b'\\' || !(0x20..0x80).contains(&b)
}

#[derive(Clone)]
pub struct Reader<'a> {
    input: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(input: &'a [u8]) -> Self {
        Reader { input, pos: 0 }
    }

    fn bytes(&self) -> &'a [u8] {
        self.input
    }

    /// The text of `start..end`, which the reader has checked to be UTF-8.
    fn text(&self, start: usize, end: usize) -> &'a str {
        let bytes = self.input.get(start..end).unwrap_or_default();
        debug_assert!(std::str::from_utf8(bytes).is_ok());
        // SAFETY: `scan_string` let through only ASCII bytes (printable ones, and escape
        // sequences made of them) and multi-byte characters that `multibyte` checked with
        // `str::from_utf8`, so the span is valid UTF-8. Checking it again cost a fifth of
        // the time of a small request.
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }

    /// Checks the multi-byte character at the current position and steps over it.
    fn multibyte(&mut self) -> Result<()> {
        let width = match self.bytes().get(self.pos) {
            Some(0xC2..=0xDF) => 2,
            Some(0xE0..=0xEF) => 3,
            Some(0xF0..=0xF4) => 4,
            _ => 0,
        };
        let valid = width > 0
            && self
                .bytes()
                .get(self.pos..self.pos + width)
                .is_some_and(|c| std::str::from_utf8(c).is_ok());
        if !valid {
            return Err(self.error("the payload is not valid UTF-8 (in a string)"));
        }
        self.pos += width;
        Ok(())
    }

    /// An error at the current position.
    #[cold]
    #[inline(never)]
    pub fn error(&self, message: impl Into<String>) -> Error {
        let end = self.pos.min(self.input.len());
        let before = &self.bytes()[..end];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let column = end
            - before
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1)
            + 1;
        Error(Box::new(ErrorAt {
            message: message.into(),
            line,
            column,
        }))
    }

    fn eof(&self) -> Error {
        self.error("unexpected end of input (truncated JSON)")
    }

    /// The whole input.
    pub fn input(&self) -> &'a [u8] {
        self.input
    }

    /// Moves the reader to `pos`.
    pub fn seek(&mut self, pos: usize) {
        self.pos = pos;
    }

    /// Where the reader is: the offset of the next byte.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Skips whitespace; returns the next byte without consuming it.
    #[inline]
    pub fn peek(&mut self) -> Option<u8> {
        match self.input.get(self.pos) {
            // No byte above the space is whitespace: the common case, one comparison.
            Some(&b) if b > b' ' => Some(b),
            _ => self.peek_after_whitespace(),
        }
    }

    #[cold]
    fn peek_after_whitespace(&mut self) -> Option<u8> {
        while let Some(&b) = self.bytes().get(self.pos) {
            if !matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
                return Some(b);
            }
            self.pos += 1;
        }
        None
    }

    #[inline]
    fn eat(&mut self, byte: u8, what: &str) -> Result<()> {
        match self.peek() {
            Some(b) if b == byte => {
                self.pos += 1;
                Ok(())
            }
            Some(_) => Err(self.error(format!("expected {what}"))),
            None => Err(self.eof()),
        }
    }

    /// Names the kind of value that starts at the next byte, for error messages.
    pub fn found(&mut self) -> &'static str {
        match self.peek() {
            Some(b'{') => "an object",
            Some(b'[') => "an array",
            Some(b'"') => "a string",
            Some(b'-' | b'0'..=b'9') => "a number",
            Some(b't' | b'f') => "a boolean",
            Some(b'n') => "null",
            Some(_) => "invalid JSON",
            None => "the end of the input",
        }
    }

    /// Consumes `null` if it comes next.
    #[inline]
    pub fn null(&mut self) -> Result<bool> {
        if self.peek() == Some(b'n') {
            self.literal(b"null")?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    /// The input must end here (but for whitespace).
    pub fn end(&mut self) -> Result<()> {
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(self.error("trailing characters after the JSON value")),
        }
    }

    /// Reads an object, calling `field` for each key with the reader at its value; `field`
    /// must consume the value. The key is passed as its bytes, escapes decoded. `what`
    /// names the object in errors.
    #[inline(always)]
    pub fn object(
        &mut self,
        what: &str,
        mut field: impl FnMut(&mut Self, &[u8]) -> Result<()>,
    ) -> Result<()> {
        self.entries(what, |r, key| {
            if key.escaped {
                let decoded = r.string_at(key.at)?;
                field(r, decoded.as_bytes())
            } else {
                field(r, key.raw)
            }
        })
    }

    /// Reads an object, calling `field` for each key, as found in the input, with the
    /// reader at its value; `field` must consume the value. A key is only located here: a
    /// key that is compared needs no other check, and one with escapes is decoded (and
    /// checked) by whoever needs its text.
    #[inline(always)]
    pub fn entries(
        &mut self,
        what: &str,
        mut field: impl FnMut(&mut Self, Key<'a>) -> Result<()>,
    ) -> Result<()> {
        match self.peek() {
            Some(b'{') => {}
            Some(_) => {
                let found = self.found();
                return Err(self.error(format!("{what} must be a JSON object, not {found}")));
            }
            None => return Err(self.eof()),
        }
        self.pos += 1;
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.expect_key(what)?;
            let at = self.pos;
            let escaped = self.skip_string_span()?;
            let key = Key {
                raw: self.input.get(at + 1..self.pos - 1).unwrap_or_default(),
                at,
                escaped,
            };
            self.eat(b':', "':' after an object key")?;
            field(self, key)?;
            if !self.next_entry(what)? {
                return Ok(());
            }
        }
    }

    /// The next byte must open an object's key.
    #[inline(always)]
    fn expect_key(&mut self, what: &str) -> Result<()> {
        match self.peek() {
            Some(b'"') => Ok(()),
            None => Err(self.eof()),
            Some(_) => Err(self.error(format!("expected a string key in {what}"))),
        }
    }

    /// After an entry's value: whether another entry follows (its `,` is consumed), or the
    /// object ends (its `}` is consumed).
    #[inline(always)]
    fn next_entry(&mut self, what: &str) -> Result<bool> {
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                Ok(true)
            }
            Some(b'}') => {
                self.pos += 1;
                Ok(false)
            }
            Some(_) => Err(self.error(format!("expected ',' or '}}' in {what}"))),
            None => Err(self.eof()),
        }
    }

    /// Reads the rest of an object whose first entries were read before and that was left
    /// just after a value (`skip_rest_of_object` leaves it there too); as `object`, with keys
    /// decoded.
    pub fn rest_of_object(
        &mut self,
        what: &str,
        mut field: impl FnMut(&mut Self, &[u8]) -> Result<()>,
    ) -> Result<()> {
        while self.next_entry(what)? {
            self.expect_key(what)?;
            let key = self.string()?;
            self.eat(b':', "':' after an object key")?;
            field(self, key.as_bytes())?;
        }
        Ok(())
    }

    /// Reads an array, calling `item` with the reader at each element; `item` must consume
    /// it. `what` names the array in errors.
    pub fn elements(
        &mut self,
        what: &str,
        mut item: impl FnMut(&mut Self) -> Result<()>,
    ) -> Result<()> {
        match self.peek() {
            Some(b'[') => self.pos += 1,
            Some(_) => {
                let found = self.found();
                return Err(self.error(format!("{what} must be a JSON array, not {found}")));
            }
            None => return Err(self.eof()),
        }
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            item(self)?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(_) => return Err(self.error(format!("expected ',' or ']' in {what}"))),
                None => return Err(self.eof()),
            }
        }
    }

    /// Reads a string value; `what` names it in the error when something else comes.
    pub fn string_value(&mut self, what: impl FnOnce() -> String) -> Result<Str<'a>> {
        match self.peek() {
            Some(b'"') => self.string(),
            Some(_) => {
                let found = self.found();
                Err(self.error(format!("{} must be a string, not {found}", what())))
            }
            None => Err(self.eof()),
        }
    }

    /// Reads the string that starts at the next byte (a `"`), borrowing it unless it holds
    /// escapes.
    fn string(&mut self) -> Result<Str<'a>> {
        let (start, end, escaped) = self.scan_string()?;
        let raw = self.text(start, end);
        if !escaped {
            return Ok(Str(Cow::Borrowed(raw)));
        }
        // The escapes were checked while skipping; decode them.
        let mut out = String::with_capacity(raw.len());
        let mut inner = Reader::new(raw.as_bytes());
        while let Some(backslash) = raw.get(inner.pos..).and_then(|r| r.find('\\')) {
            out.push_str(
                raw.get(inner.pos..inner.pos + backslash)
                    .unwrap_or_default(),
            );
            inner.pos += backslash + 1;
            out.push(inner.escape()?);
        }
        out.push_str(raw.get(inner.pos..).unwrap_or_default());
        Ok(Str(Cow::Owned(out)))
    }

    /// Advances over string bytes that need no attention: sixteen at a time, then (near the
    /// end of the input) eight, then one by one.
    #[inline]
    fn skip_plain(&mut self) {
        let bytes = self.bytes();
        let mut rest = bytes.get(self.pos..).unwrap_or_default();
        while let Some((chunk, tail)) = rest.split_first_chunk::<16>() {
            let mask = simd::special(chunk);
            if mask != 0 {
                self.pos = bytes.len() - rest.len() + mask.trailing_zeros() as usize;
                return;
            }
            rest = tail;
        }
        while let Some((word, tail)) = rest.split_first_chunk::<8>() {
            if has_special(u64::from_le_bytes(*word)) {
                break;
            }
            rest = tail;
        }
        let mut pos = bytes.len() - rest.len();
        while bytes.get(pos).is_some_and(|&b| !is_special(b)) {
            pos += 1;
        }
        self.pos = pos;
    }

    /// Decodes one escape; the reader is just past the backslash.
    fn escape(&mut self) -> Result<char> {
        let Some(&b) = self.bytes().get(self.pos) else {
            return Err(self.eof());
        };
        self.pos += 1;
        Ok(match b {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let high = self.hex4()?;
                if (0xDC00..0xE000).contains(&high) {
                    return Err(self.error("invalid \\u escape: a lone low surrogate"));
                }
                if (0xD800..0xDC00).contains(&high) {
                    let low = match self.bytes().get(self.pos..self.pos + 2) {
                        Some(b"\\u") => {
                            self.pos += 2;
                            self.hex4()?
                        }
                        _ => return Err(self.error("invalid \\u escape: a lone high surrogate")),
                    };
                    if !(0xDC00..0xE000).contains(&low) {
                        return Err(self.error("invalid \\u escape: a lone high surrogate"));
                    }
                    let c = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                    return char::from_u32(c)
                        .ok_or_else(|| self.error("invalid \\u escape sequence"));
                }
                char::from_u32(high).ok_or_else(|| self.error("invalid \\u escape sequence"))?
            }
            _ => return Err(self.error("invalid escape sequence in a string")),
        })
    }

    fn hex4(&mut self) -> Result<u32> {
        let digits = self
            .bytes()
            .get(self.pos..self.pos + 4)
            .ok_or_else(|| self.eof())?;
        let mut value = 0;
        for &d in digits {
            let v = (d as char)
                .to_digit(16)
                .ok_or_else(|| self.error("invalid \\u escape: expected four hex digits"))?;
            value = value * 16 + v;
        }
        self.pos += 4;
        Ok(value)
    }

    /// Skips a string, checking its escapes and characters; the reader is at the opening
    /// quote. Returns the span of the contents, and whether they hold escapes.
    fn scan_string(&mut self) -> Result<(usize, usize, bool)> {
        self.pos += 1;
        let start = self.pos;
        let mut escaped = false;
        loop {
            self.skip_plain();
            match self.bytes().get(self.pos) {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok((start, self.pos - 1, escaped));
                }
                Some(b'\\') => {
                    self.pos += 1;
                    self.escape()?;
                    escaped = true;
                }
                Some(0x80..) => self.multibyte()?,
                Some(_) => {
                    return Err(self.error("control character in a string (it must be escaped)"));
                }
                None => return Err(self.eof()),
            }
        }
    }

    fn literal(&mut self, word: &[u8]) -> Result<()> {
        if self.bytes().get(self.pos..self.pos + word.len()) == Some(word) {
            self.pos += word.len();
            Ok(())
        } else if self.pos + word.len() > self.input.len() {
            Err(self.eof())
        } else {
            Err(self.error("expected a JSON value"))
        }
    }

    /// Skips a number, checking JSON's grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    fn skip_number(&mut self) -> Result<()> {
        let bytes = self.bytes();
        let digits = |pos: &mut usize| {
            let start = *pos;
            while bytes.get(*pos).is_some_and(u8::is_ascii_digit) {
                *pos += 1;
            }
            *pos > start
        };
        let mut pos = self.pos;
        if bytes.get(pos) == Some(&b'-') {
            pos += 1;
        }
        let ok = match bytes.get(pos) {
            Some(b'0') => {
                pos += 1;
                true
            }
            Some(b'1'..=b'9') => digits(&mut pos),
            _ => false,
        } && (bytes.get(pos) != Some(&b'.') || {
            pos += 1;
            digits(&mut pos)
        }) && (!matches!(bytes.get(pos), Some(b'e' | b'E')) || {
            pos += 1;
            if matches!(bytes.get(pos), Some(b'+' | b'-')) {
                pos += 1;
            }
            digits(&mut pos)
        });
        self.pos = pos;
        if ok {
            Ok(())
        } else if pos >= bytes.len() {
            Err(self.eof())
        } else {
            Err(self.error("invalid number"))
        }
    }

    /// Skips one value of any kind and depth, without recursion. Strings, numbers and
    /// literals are checked as they are read; of an array or object only the structure is
    /// checked (see `structural`).
    #[inline]
    pub fn skip_value(&mut self) -> Result<()> {
        match self.peek() {
            Some(b'"') => self.skip_string_span().map(drop),
            Some(b'{' | b'[') => self.skip_container(),
            _ => self.skip_scalar(),
        }
    }

    /// Skips the array or object at the next byte.
    #[inline(never)]
    fn skip_container(&mut self) -> Result<()> {
        match self.peek() {
            // An empty array or object, as `settings: {}` often is.
            Some(open @ (b'{' | b'[')) if self.input.get(self.pos + 1) == Some(&(open + 2)) => {
                self.pos += 2;
                Ok(())
            }
            _ => {
                let skipped = skip_container(self.input, self.pos);
                self.skipped(skipped)
            }
        }
    }

    /// Skips the rest of the object the reader is in, after one of its values, by its
    /// structure alone (as a skipped value is: see `structural`), leaving the reader at its
    /// closing `}`: for a request whose other fields the rules never read.
    #[inline(never)]
    pub fn skip_rest_of_object(&mut self) -> Result<()> {
        let skipped = structural::skip_rest_of_object(self.input, self.pos);
        self.skipped(skipped)
    }

    fn skipped(&mut self, skipped: std::result::Result<usize, SkipError>) -> Result<()> {
        match skipped {
            Ok(end) => {
                self.pos = end;
                Ok(())
            }
            Err(SkipError::Truncated) => {
                self.pos = self.input.len();
                Err(self.eof())
            }
            Err(SkipError::Mismatched(at)) => {
                self.pos = at;
                Err(self.error(
                    "mismatched brackets: a skipped value has unpaired brackets of one \
                     kind, or closes with the other kind",
                ))
            }
        }
    }

    /// Skips the number or literal at the next byte, checking it.
    #[inline(never)]
    fn skip_scalar(&mut self) -> Result<()> {
        match self.peek() {
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.skip_number(),
            Some(_) => Err(self.error("expected a JSON value")),
            None => Err(self.eof()),
        }
    }

    /// Skips the string that starts at the next byte (a `"`), looking only for its end, to
    /// read it later with `string_at` if it is needed; returns whether it holds escapes.
    #[inline(always)]
    pub fn skip_string_span(&mut self) -> Result<bool> {
        let bytes = self.bytes();
        let mut pos = self.pos + 1;
        let mut escaped = false;
        loop {
            pos = next_quote_or_backslash(bytes, pos);
            match bytes.get(pos) {
                Some(b'"') => {
                    self.pos = pos + 1;
                    return Ok(escaped);
                }
                // The escaped byte cannot end the string, whatever it is.
                Some(_) => {
                    pos += 2;
                    escaped = true;
                }
                None => {
                    self.pos = bytes.len();
                    return Err(self.eof());
                }
            }
        }
    }

    /// Reads, with its escapes and characters checked, the string whose opening quote is at
    /// `start`.
    pub fn string_at(&self, start: usize) -> Result<Str<'a>> {
        let mut r = Reader {
            input: self.input,
            pos: start,
        };
        r.string()
    }

    /// Skips a value and returns its bytes.
    pub fn raw_value(&mut self) -> Result<&'a [u8]> {
        self.peek();
        let start = self.pos;
        self.skip_value()?;
        Ok(self.input.get(start..self.pos).unwrap_or_default())
    }
}

/// Writes `s` as a JSON string, as serde_json writes it (the tests compare): `"` and `\\`
/// escaped, control characters as `\\n`-style or `\\u00XX` escapes, everything else as is.
/// Sixteen bytes at a time: a chunk without such characters, nearly all of a message, is
/// copied whole; in the others only the bytes the mask marks are looked at one by one.
pub fn write_string(out: &mut Vec<u8>, s: &str) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    let (chunks, rest) = s.as_bytes().as_chunks::<16>();
    for chunk in chunks {
        // `special` also marks non-ASCII bytes, which `write_chunk` copies as they are. A copy
        // of a constant size compiles to two moves; one of a length known only at run time
        // is `memory.copy`, a call out of WebAssembly.
        if simd::special(chunk) == 0 {
            out.extend_from_slice(chunk);
        } else {
            write_chunk(out, chunk, chunk.len());
        }
    }
    if !rest.is_empty() {
        // The last, partial chunk, padded with spaces, which need no escape.
        let mut padded = [b' '; 16];
        padded[..rest.len()].copy_from_slice(rest);
        write_chunk(out, &padded, rest.len());
    }
    out.push(b'"');
}

/// Writes the first `len` bytes of `chunk`, escaped.
fn write_chunk(out: &mut Vec<u8>, chunk: &[u8; 16], len: usize) {
    let mut mask = simd::special(chunk) & (u32::MAX >> (32 - len)) as u16;
    if mask == 0 {
        out.extend_from_slice(chunk.get(..len).unwrap_or_default());
        return;
    }
    let mut start = 0;
    while mask != 0 {
        let at = mask.trailing_zeros() as usize;
        out.extend_from_slice(chunk.get(start..at).unwrap_or_default());
        if let Some(&b) = chunk.get(at) {
            write_byte(out, b);
        }
        start = at + 1;
        mask &= mask - 1;
    }
    out.extend_from_slice(chunk.get(start..len).unwrap_or_default());
}

/// One byte of a JSON string's text, escaped if it must be.
#[inline]
fn write_byte(out: &mut Vec<u8>, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match b {
        b'"' => out.extend_from_slice(b"\\\""),
        b'\\' => out.extend_from_slice(b"\\\\"),
        b'\n' => out.extend_from_slice(b"\\n"),
        b'\r' => out.extend_from_slice(b"\\r"),
        b'\t' => out.extend_from_slice(b"\\t"),
        0x08 => out.extend_from_slice(b"\\b"),
        0x0c => out.extend_from_slice(b"\\f"),
        0..0x20 => out.extend_from_slice(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[usize::from(b >> 4)],
            HEX[usize::from(b & 0xf)],
        ]),
        _ => out.push(b),
    }
}

/// Byte-string equality, eight bytes at a time: WebAssembly's `memcmp` goes byte by byte,
/// and label keys are long and share their prefixes (`olm.operatorframework.io/owner-kind`,
/// `.../owner-name`), so the last eight bytes are compared first.
pub fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    if let (Some(x), Some(y)) = (a.last_chunk::<8>(), b.last_chunk::<8>())
        && u64::from_ne_bytes(*x) != u64::from_ne_bytes(*y)
    {
        return false;
    }
    let (mut a, mut b) = (a, b);
    while let (Some((x, a_rest)), Some((y, b_rest))) =
        (a.split_first_chunk::<8>(), b.split_first_chunk::<8>())
    {
        if u64::from_ne_bytes(*x) != u64::from_ne_bytes(*y) {
            return false;
        }
        (a, b) = (a_rest, b_rest);
    }
    a.iter().zip(b).all(|(x, y)| x == y)
}

/// The position of the first `"` or `\` at or after `pos`, or the input's length.
#[inline]
fn next_quote_or_backslash(bytes: &[u8], pos: usize) -> usize {
    let mut rest = bytes.get(pos..).unwrap_or_default();
    while let Some((chunk, tail)) = rest.split_first_chunk::<16>() {
        let mask = simd::quote_or_backslash(chunk);
        if mask != 0 {
            return bytes.len() - rest.len() + mask.trailing_zeros() as usize;
        }
        rest = tail;
    }
    match rest.iter().position(|&b| b == b'"' || b == b'\\') {
        Some(i) => bytes.len() - rest.len() + i,
        None => bytes.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skip(text: &str) -> Result<()> {
        let mut r = Reader::new(text.as_bytes());
        r.skip_value()?;
        r.end()
    }

    /// Reads `text` the strict way: as an object whose values are all strings.
    fn read_strings(text: &str) -> Result<Vec<(String, String)>> {
        let mut r = Reader::new(text.as_bytes());
        let mut out = Vec::new();
        r.object("test", |r, key| {
            let value = r.string_value(|| "test".into())?;
            out.push((String::from_utf8_lossy(key).into_owned(), value.to_string()));
            Ok(())
        })?;
        r.end()?;
        Ok(out)
    }

    #[test]
    fn skips_what_serde_json_accepts() {
        for text in [
            "0",
            "-0.5e+10",
            "1E3",
            "true",
            "null",
            r#""a\"b\\c\/\b\f\n\r\t\u00e9\ud83d\ude00""#,
            r#"{"a":[1,{"b":[]},{}],"c":"d"}"#,
            " [ 1 , 2 ] ",
            "\"0123456789abcdefghij\"",
            r#"{"k":"v \"}\" ]","x":["\\",{}]}"#,
        ] {
            assert!(skip(text).is_ok(), "{text}");
            assert!(serde_json::from_str::<serde_json::Value>(text).is_ok());
        }
    }

    #[test]
    fn strict_reads_refuse_what_serde_json_refuses() {
        for text in [
            "",
            "{",
            r#"{"a":"b",}"#,
            r#"{"a"}"#,
            r#"{1:"2"}"#,
            r#"{"a":"b" "c":"d"}"#,
            r#"{"a":"\x"}"#,
            r#"{"a":"\ud800"}"#,
            r#"{"a":"\udc00"}"#,
            "{\"a\":\"a\u{1}b\"}",
            r#"{"a":"\u12"}"#,
            r#"{"a":"b"}}"#,
            r#"{"a":1}"#,
        ] {
            assert!(read_strings(text).is_err(), "{text:?}");
            assert!(
                serde_json::from_str::<std::collections::BTreeMap<String, String>>(text).is_err(),
                "{text:?}"
            );
        }
    }

    #[test]
    fn skipped_scalars_are_checked() {
        for text in ["01", "1.", "-", "1e", "+1", "tru", "nul", "\"abc", "x"] {
            assert!(skip(text).is_err(), "{text:?}");
        }
    }

    #[test]
    fn skipped_containers_must_close_with_strings_ended() {
        for text in [
            "[",
            "{\"a\":",
            "}",
            "]",
            "[1]]",
            "[\"]",
            "{\"a\":\"}\"",
            "{]",
            "[}",
            "[\"\\\"]",
        ] {
            assert!(skip(text).is_err(), "{text:?}");
        }
    }

    #[test]
    fn skipped_containers_are_not_parsed_inside() {
        // What serde_json refuses, but policy-server, which serializes every payload with
        // serde_json, can never send: inside a skipped container only the structure counts.
        for text in [
            "[1,]",
            "{\"a\"}",
            "{1:2}",
            "[1 2]",
            "[tru]",
            "[\"\\x\"]",
            "[[{]}]",
        ] {
            assert!(skip(text).is_ok(), "{text:?}");
            assert!(serde_json::from_str::<serde_json::Value>(text).is_err());
        }
    }

    #[test]
    fn deep_nesting_needs_no_recursion() {
        let deep = "[".repeat(200_000) + &"]".repeat(200_000);
        assert!(skip(&deep).is_ok());
        assert!(skip(&deep[1..]).is_err());
        assert!(skip(&deep[..deep.len() - 1]).is_err());
    }

    #[test]
    fn strings_borrow_unless_escaped() {
        let mut r = Reader::new(br#""plain text, long enough for words" "esc\naped""#);
        assert!(matches!(
            r.string_value(String::new).unwrap().0,
            Cow::Borrowed(_)
        ));
        let s = r.string_value(String::new).unwrap();
        assert_eq!(&*s, "esc\naped");
        assert!(matches!(s.0, Cow::Owned(_)));
    }

    #[test]
    fn string_spans_are_read_later() {
        let text = br#" "a\"b\u00e9" "c" "#;
        let mut r = Reader::new(text);
        r.peek();
        let first = r.pos;
        assert!(r.skip_string_span().unwrap());
        r.peek();
        let second = r.pos;
        assert!(!r.skip_string_span().unwrap());
        assert!(r.end().is_ok());
        assert_eq!(&*r.string_at(first).unwrap(), "a\"b\u{e9}");
        assert_eq!(&*r.string_at(second).unwrap(), "c");
        let mut r = Reader::new(br#""abc\""#);
        assert!(r.skip_string_span().is_err());
    }

    #[test]
    fn strings_are_checked_for_utf8() {
        for bad in [
            &b"\"0123456789abcdef0123\xff\""[..],
            b"\"ab\xc3\x28\"",
            b"\"\xed\xa0\x80\"",
            b"\"\xc0\xaf\"",
            b"\"\xe9\"",
        ] {
            let mut r = Reader::new(bad);
            assert!(r.string_value(String::new).is_err(), "{bad:?}");
        }
        let good = "\"0123456789abcdef0123456789é😀\\n ü\"";
        assert!(skip(good).is_ok());
        let mut r = Reader::new(good.as_bytes());
        assert_eq!(
            &*r.string_value(String::new).unwrap(),
            "0123456789abcdef0123456789é😀\n ü"
        );
        assert!(skip("\u{e9}").is_err());
    }

    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        let mut all: String = (0u8..0x80).map(char::from).collect();
        all.push_str("é😀 \"quoted\" back\\slash and a long enough run of plain text");
        for s in [
            all.as_str(),
            "",
            "plain",
            "\u{7f}\u{1f}\u{0}",
            "0123456789abcdef\"x",
        ] {
            let mut ours = Vec::new();
            write_string(&mut ours, s);
            assert_eq!(
                String::from_utf8(ours).unwrap(),
                serde_json::to_string(s).unwrap()
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn any_string_is_written_as_serde_json_writes_it(s in ".*", control in "[\\x00-\\x1f\"\\\\a-z]{0,40}") {
            for s in [s.as_str(), control.as_str()] {
                let mut ours = Vec::new();
                write_string(&mut ours, s);
                proptest::prop_assert_eq!(String::from_utf8(ours).unwrap(), serde_json::to_string(s).unwrap());
            }
        }
    }

    #[test]
    fn bytes_compare_in_words() {
        assert!(same_bytes(b"", b""));
        assert!(same_bytes(
            b"olm.operatorframework.io/owner-kind",
            b"olm.operatorframework.io/owner-kind"
        ));
        assert!(!same_bytes(
            b"olm.operatorframework.io/owner-kind",
            b"olm.operatorframework.io/owner-name"
        ));
        assert!(!same_bytes(b"abcdefgh1", b"abcdefgh2"));
        assert!(!same_bytes(b"abc", b"abcd"));
    }

    #[test]
    fn errors_say_where() {
        let e = skip("[\n  1, 2").unwrap_err();
        assert_eq!(
            e.to_string(),
            "unexpected end of input (truncated JSON) at line 2 column 7"
        );
        let e = read_strings("{\n  \"a\": tru}").unwrap_err();
        assert_eq!(
            e.to_string(),
            "test must be a string, not a boolean at line 2 column 8"
        );
    }
}
