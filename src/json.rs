//! A validating JSON reader that borrows what it reads and skips what it does not need.
//!
//! The policy needs a few dozen bytes of metadata out of requests that can be megabytes
//! (CRD schemas, ConfigMap values). Building a tree costs allocations per value; even
//! serde_json's skipping walks strings a few bytes at a time. This reader checks every byte
//! of the input all the same (fail closed: truncated or malformed JSON is an error, and it
//! accepts exactly what serde_json accepts, which the fuzzer checks), but scans strings many
//! bytes at a time and skips nested values with an explicit stack, so unrelated fields nested
//! thousands of levels deep cost no recursion.
//!
//! UTF-8 is checked as strings are scanned (outside strings JSON is ASCII), so the input is
//! read once. Built for wasm32 with SIMD (see `.cargo/config.toml`), strings are scanned
//! sixteen bytes at a time; elsewhere (native tests, fuzzing) eight at a time.

use std::borrow::Cow;
use std::fmt;

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

pub struct Reader<'a> {
    input: &'a [u8],
    pos: usize,
    /// The open arrays and objects of the value being skipped.
    stack: Vec<u8>,
}

impl<'a> Reader<'a> {
    pub fn new(input: &'a [u8]) -> Self {
        Reader {
            input,
            pos: 0,
            stack: Vec::new(),
        }
    }

    fn bytes(&self) -> &'a [u8] {
        self.input
    }

    /// The text of `start..end`, which the reader has checked to be UTF-8.
    fn text(&self, start: usize, end: usize) -> Result<&'a str> {
        let bytes = self.input.get(start..end).unwrap_or_default();
        std::str::from_utf8(bytes).map_err(|_| self.error("invalid UTF-8 in a string"))
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

    /// Skips whitespace; returns the next byte without consuming it.
    pub fn peek(&mut self) -> Option<u8> {
        while let Some(&b) = self.bytes().get(self.pos) {
            if !matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
                return Some(b);
            }
            self.pos += 1;
        }
        None
    }

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
    /// must consume the value. `what` names the object in errors.
    pub fn object(
        &mut self,
        what: &str,
        mut field: impl FnMut(&mut Self, Str<'a>) -> Result<()>,
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
            if self.peek() != Some(b'"') {
                return Err(match self.peek() {
                    None => self.eof(),
                    Some(_) => self.error(format!("expected a string key in {what}")),
                });
            }
            let key = self.string()?;
            self.eat(b':', "':' after an object key")?;
            field(self, key)?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(_) => return Err(self.error(format!("expected ',' or '}}' in {what}"))),
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
        let (start, end, escaped) = self.skip_string()?;
        let raw = self.text(start, end)?;
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

    /// Advances over string bytes that need no attention: eight at a time, then one by one.
    #[inline]
    fn skip_plain(&mut self) {
        let bytes = self.bytes();
        let mut rest = bytes.get(self.pos..).unwrap_or_default();
        #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
        {
            use core::arch::wasm32::{
                i8x16_lt, i8x16_splat, u8x16_bitmask, u8x16_eq, u8x16_splat, v128_load, v128_or,
            };
            let (quote, backslash, space) =
                (u8x16_splat(b'"'), u8x16_splat(b'\\'), i8x16_splat(0x20));
            while let Some((chunk, tail)) = rest.split_first_chunk::<16>() {
                // SAFETY: `chunk` is 16 readable bytes, and v128_load needs no alignment.
                let v = unsafe { v128_load(chunk.as_ptr().cast()) };
                // As signed bytes, both control characters and non-ASCII bytes are below 0x20.
                let special = v128_or(
                    v128_or(u8x16_eq(v, quote), u8x16_eq(v, backslash)),
                    i8x16_lt(v, space),
                );
                let mask = u8x16_bitmask(special);
                if mask != 0 {
                    self.pos = bytes.len() - rest.len() + mask.trailing_zeros() as usize;
                    return;
                }
                rest = tail;
            }
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
    fn skip_string(&mut self) -> Result<(usize, usize, bool)> {
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

    /// Skips one value of any kind and depth, without recursion.
    pub fn skip_value(&mut self) -> Result<()> {
        self.stack.clear();
        loop {
            // A value.
            match self.peek() {
                Some(b'"') => {
                    self.skip_string()?;
                }
                Some(b'{') => {
                    self.pos += 1;
                    if self.peek() == Some(b'}') {
                        self.pos += 1;
                    } else {
                        self.stack.push(b'}');
                        self.key()?;
                        continue;
                    }
                }
                Some(b'[') => {
                    self.pos += 1;
                    if self.peek() == Some(b']') {
                        self.pos += 1;
                    } else {
                        self.stack.push(b']');
                        continue;
                    }
                }
                Some(b't') => self.literal(b"true")?,
                Some(b'f') => self.literal(b"false")?,
                Some(b'n') => self.literal(b"null")?,
                Some(b'-' | b'0'..=b'9') => self.skip_number()?,
                Some(_) => return Err(self.error("expected a JSON value")),
                None => return Err(self.eof()),
            }
            // After a value: close containers, or go on to the next element.
            loop {
                let Some(&close) = self.stack.last() else {
                    return Ok(());
                };
                match self.peek() {
                    Some(b',') => {
                        self.pos += 1;
                        if close == b'}' {
                            self.key()?;
                        }
                        break;
                    }
                    Some(b) if b == close => {
                        self.pos += 1;
                        self.stack.pop();
                    }
                    Some(_) if close == b'}' => return Err(self.error("expected ',' or '}'")),
                    Some(_) => return Err(self.error("expected ',' or ']'")),
                    None => return Err(self.eof()),
                }
            }
        }
    }

    /// Skips an object key and its colon.
    fn key(&mut self) -> Result<()> {
        match self.peek() {
            Some(b'"') => {
                self.skip_string()?;
            }
            Some(_) => return Err(self.error("expected a string key")),
            None => return Err(self.eof()),
        }
        self.eat(b':', "':' after an object key")
    }

    /// Skips a value and returns its text.
    pub fn raw_value(&mut self) -> Result<&'a str> {
        self.peek();
        let start = self.pos;
        self.skip_value()?;
        // A skipped value is ASCII outside its strings, whose characters were checked.
        self.text(start, self.pos)
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

    #[test]
    fn accepts_what_serde_json_accepts() {
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
        ] {
            assert!(skip(text).is_ok(), "{text}");
            assert!(serde_json::from_str::<serde_json::Value>(text).is_ok());
        }
    }

    #[test]
    fn refuses_what_serde_json_refuses() {
        for text in [
            "",
            "01",
            "1.",
            "-",
            "1e",
            "+1",
            "tru",
            "nul",
            "[1,]",
            "{\"a\":1,}",
            "{\"a\"}",
            "{1:2}",
            "[1 2]",
            "\"abc",
            "\"\\x\"",
            "\"\\ud800\"",
            "\"\\udc00\"",
            "\"a\u{1}b\"",
            "[",
            "{\"a\":",
            "}",
            "]",
            "[1]]",
            "\"\\u12\"",
        ] {
            assert!(skip(text).is_err(), "{text:?}");
            assert!(
                serde_json::from_str::<serde_json::Value>(text).is_err(),
                "{text:?}"
            );
        }
    }

    #[test]
    fn deep_nesting_needs_no_recursion() {
        let deep = "[".repeat(200_000) + &"]".repeat(200_000);
        assert!(skip(&deep).is_ok());
        assert!(skip(&deep[1..]).is_err());
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
    fn strings_are_checked_for_utf8() {
        for bad in [
            &b"\"0123456789abcdef0123\xff\""[..],
            b"\"ab\xc3\x28\"",
            b"\"\xed\xa0\x80\"",
            b"\"\xc0\xaf\"",
            b"\"\xe9\"",
        ] {
            let mut r = Reader::new(bad);
            assert!(r.skip_value().is_err(), "{bad:?}");
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
    fn errors_say_where() {
        let e = skip("{\n  \"a\": tru}").unwrap_err();
        assert_eq!(e.to_string(), "expected a JSON value at line 2 column 8");
    }
}
