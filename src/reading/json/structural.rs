//! Skipping a JSON array or object 64 bytes at a time, by its structure alone (or the rest
//! of one, from after one of its values).
//!
//! The values the policy skips (a CRD's schema, a ConfigMap's data, `managedFields`) are most
//! of every request. Tokenizing them costs a few nanoseconds per token, and dense JSON has a
//! token every few bytes; this module instead classifies 64 bytes at once into bit masks
//! (quotes, backslashes, opening and closing brackets), works out which bytes are inside
//! strings with a prefix XOR over the quote mask (the technique of simdjson's first stage),
//! and counts the brackets outside strings until the container closes.
//!
//! What it checks of a skipped container: that every string ends, and that its brackets
//! balance, as many `{` as `}` and as many `[` as `]`, the last one matching the first. It
//! does not check their order (`[[{]}]` passes) nor the grammar between them (commas,
//! colons, literals, numbers, escapes, control characters, UTF-8): a payload that policy-server
//! built with serde_json never lacks them, and what lies inside a skipped value cannot change
//! which fields are read, because strings and brackets delimit it exactly.

use super::simd::V16;

/// Bit `i` set for every odd position `i` of a block.
const ODD_BITS: u64 = 0xAAAA_AAAA_AAAA_AAAA;
const EVEN_BITS: u64 = !ODD_BITS;

/// The structural bytes of one 64-byte block, bit `i` for byte `i` (the tests' view of a
/// block; the skip classifies in two steps, see `skip_container`).
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Masks {
    pub quote: u64,
    pub backslash: u64,
    /// `{` or `[`.
    pub open: u64,
    /// `}` or `]`.
    pub close: u64,
    /// `{` or `}`: which of the brackets are braces.
    pub curly: u64,
}

/// Classifies a block: its string masks, then its bracket masks.
#[cfg(test)]
pub fn classify(block: &[u8; 64]) -> Masks {
    let (quote, backslash) = string_masks(block);
    let (open, close, curly) = bracket_masks(block);
    Masks {
        quote,
        backslash,
        open,
        close,
        curly,
    }
}

/// The quotes and backslashes of a block: all that matters of a block inside a string.
/// Most blocks hold no backslash: then one test of the four chunks stands for its mask.
#[inline(always)]
pub fn string_masks(block: &[u8; 64]) -> (u64, u64) {
    let (chunks, _) = block.as_chunks::<16>();
    let mut quote = 0;
    let mut backslashes = V16::load(&[0; 16]);
    for (i, chunk) in chunks.iter().enumerate() {
        let v = V16::load(chunk);
        quote |= u64::from(v.eq(b'"').mask()) << (16 * i);
        backslashes = backslashes.or(v.eq(b'\\'));
    }
    if !backslashes.any() {
        return (quote, 0);
    }
    let mut backslash = 0;
    for (i, chunk) in chunks.iter().enumerate() {
        backslash |= u64::from(V16::load(chunk).eq(b'\\').mask()) << (16 * i);
    }
    (quote, backslash)
}

/// The brackets of a block: opening (`{`, `[`), closing (`}`, `]`), and which are braces.
#[inline(always)]
pub fn bracket_masks(block: &[u8; 64]) -> (u64, u64, u64) {
    let (mut open, mut close, mut curly) = (0, 0, 0);
    for (i, chunk) in block.as_chunks::<16>().0.iter().enumerate() {
        let v = V16::load(chunk);
        // `[`/`{` and `]`/`}` differ only in bit 0x20, and no other byte maps onto them.
        let folded = v.with_bits(0x20);
        let at = 16 * i;
        open |= u64::from(folded.eq(b'{').mask()) << at;
        close |= u64::from(folded.eq(b'}').mask()) << at;
        curly |= u64::from(v.eq(b'{').or(v.eq(b'}')).mask()) << at;
    }
    (open, close, curly)
}

/// The bytes escaped by a backslash: the byte after each run of backslashes of odd length.
/// `carry` says whether the block's first byte is escaped (the previous block ended in such
/// a run) and is updated for the next block.
#[inline]
pub fn escaped(backslash: u64, carry: &mut u64) -> u64 {
    let first = *carry;
    // An escaped backslash starts no escape of its own.
    let backslash = backslash & !first;
    let starts = backslash & !(backslash << 1);
    // Adding a run's first bit to the run carries into the byte just after it; the run is odd
    // when that byte's position has the other parity than the start's.
    let (after_even, _) = backslash.overflowing_add(starts & EVEN_BITS);
    let (after_odd, overflow) = backslash.overflowing_add(starts & ODD_BITS);
    // A run that reaches the end of the block escapes the next block's first byte when it is
    // odd: starting on an odd position, it has 64 - start bytes.
    *carry = u64::from(overflow);
    ((after_even & !backslash & ODD_BITS) | (after_odd & !backslash & EVEN_BITS)) | first
}

/// Bit `i` set when an odd number of the bits `0..=i` of `x` are set: for the quote mask, the
/// bytes from an opening quote up to (not including) its closing quote.
#[inline]
pub fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

/// Why a container could not be skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipError {
    /// The input ended inside the container (truncated JSON).
    Truncated,
    /// The container closed with the other kind of bracket, at this offset.
    Mismatched(usize),
}

/// Skips the array or object that starts at `input[start]` (a `[` or `{`); returns the
/// offset just past its closing bracket.
pub fn skip_container(input: &[u8], start: usize) -> Result<usize, SkipError> {
    skip_open(input, start, input.get(start).copied(), 0, 0)
}

/// Skips to the end of the object the reader is inside, at `at` (outside any string, after
/// a value): returns the offset of its closing `}`.
pub fn skip_rest_of_object(input: &[u8], at: usize) -> Result<usize, SkipError> {
    skip_open(input, at, Some(b'{'), 1, 1).map(|end| end - 1)
}

/// Skips from `at`, with `depth` brackets already open (`braces` of them braces), the
/// outermost being `opening`, to just past the bracket that closes the outermost.
fn skip_open(
    input: &[u8],
    start: usize,
    opening: Option<u8>,
    mut depth: u32,
    mut braces: i64,
) -> Result<usize, SkipError> {
    let mut at = start;
    let mut in_string: u64 = 0;
    let mut escape_carry: u64 = 0;
    let mut padded;
    let count = |mask: u64| i64::from(mask.count_ones());
    while at < input.len() {
        let block: &[u8; 64] = match input.get(at..).and_then(|r| r.first_chunk::<64>()) {
            Some(block) => block,
            None => {
                // The last, partial block: spaces are not structural.
                let rest = input.get(at..).unwrap_or_default();
                padded = [b' '; 64];
                padded[..rest.len()].copy_from_slice(rest);
                &padded
            }
        };
        let (quote, backslash) = string_masks(block);
        if in_string != 0 && quote == 0 {
            // Inside a long string (a ConfigMap's data, a description), a block without
            // quotes cannot end it, so nothing in it is structural: its brackets need not be
            // classified. Its backslashes (a ConfigMap's `\n`) only decide whether the next
            // block's first byte is escaped.
            if backslash | escape_carry != 0 {
                escaped(backslash, &mut escape_carry);
            }
            at += 64;
            continue;
        }
        let (open, close, curly) = bracket_masks(block);
        // Without a backslash in the block or one escaping its first byte, no quote is escaped.
        let quotes = if backslash | escape_carry == 0 {
            quote
        } else {
            quote & !escaped(backslash, &mut escape_carry)
        };
        let inside = prefix_xor(quotes) ^ in_string;
        in_string = ((inside as i64) >> 63) as u64;
        let opens = open & !inside;
        let closes = close & !inside;
        if depth <= closes.count_ones() {
            // The container may close within this block: follow its brackets in order.
            let mut bits = opens | closes;
            while bits != 0 {
                let i = bits.trailing_zeros();
                if opens & (1 << i) != 0 {
                    depth += 1;
                } else {
                    depth -= 1;
                    if depth == 0 {
                        let end = at + i as usize;
                        let upto = u64::MAX >> (63 - i);
                        braces += count(opens & curly & upto) - count(closes & curly & upto);
                        let pair = (opening, input.get(end).copied());
                        let matching =
                            matches!(pair, (Some(b'{'), Some(b'}')) | (Some(b'['), Some(b']')));
                        return if matching && braces == 0 {
                            Ok(end + 1)
                        } else {
                            Err(SkipError::Mismatched(end))
                        };
                    }
                }
                bits &= bits - 1;
            }
        } else {
            depth = depth + opens.count_ones() - closes.count_ones();
        }
        braces += count(opens & curly) - count(closes & curly);
        at += 64;
    }
    Err(SkipError::Truncated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The reference: a backslash escapes the next byte, whatever it is. Only escaped bytes
    /// that are not backslashes are compared: `escaped` marks the byte after each odd run.
    fn naive_escaped(bytes: &[u8]) -> Vec<bool> {
        let mut out = vec![false; bytes.len()];
        let mut escape_next = false;
        for (i, &b) in bytes.iter().enumerate() {
            if escape_next {
                out[i] = b != b'\\';
                escape_next = false;
            } else if b == b'\\' {
                escape_next = true;
            }
        }
        out
    }

    fn blockwise_escaped(bytes: &[u8]) -> Vec<bool> {
        let mut carry = 0;
        let mut out = Vec::new();
        for chunk in bytes.chunks(64) {
            let mut block = [b' '; 64];
            block[..chunk.len()].copy_from_slice(chunk);
            let e = escaped(classify(&block).backslash, &mut carry);
            out.extend((0..chunk.len()).map(|i| e & (1 << i) != 0 && chunk[i] != b'\\'));
        }
        out
    }

    /// The reference skip: byte by byte. A backslash escapes the next quote or backslash
    /// anywhere (outside strings it is not JSON at all, and only quotes matter).
    fn naive_skip(input: &[u8], start: usize) -> Result<usize, SkipError> {
        let mut depth = 0u32;
        let mut braces = 0i64;
        let mut in_string = false;
        let mut escape_next = false;
        for (i, &b) in input.iter().enumerate().skip(start) {
            if std::mem::take(&mut escape_next) && matches!(b, b'"' | b'\\') {
                continue;
            }
            if b == b'\\' {
                escape_next = true;
                continue;
            }
            if in_string {
                in_string = b != b'"';
                continue;
            }
            match b {
                b'"' => in_string = true,
                b'{' | b'[' => {
                    depth += 1;
                    braces += i64::from(b == b'{');
                }
                b'}' | b']' => {
                    depth -= 1;
                    braces -= i64::from(b == b'}');
                    if depth == 0 {
                        let pair = (input[start], b);
                        return if matches!(pair, (b'{', b'}') | (b'[', b']')) && braces == 0 {
                            Ok(i + 1)
                        } else {
                            Err(SkipError::Mismatched(i))
                        };
                    }
                }
                _ => {}
            }
        }
        Err(SkipError::Truncated)
    }

    fn json_ish() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(prop::sample::select(b"{}[]\"\\\\\\ax:,".to_vec()), 0..300)
    }

    /// Like `json_ish`, with long runs of plain bytes: blocks wholly inside a string.
    fn long_strings() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            prop::sample::select(b"{}[]\"\\\\\\ax:,".to_vec()).prop_map(|b| vec![b]),
            (0usize..300).prop_map(|n| vec![b'a'; n]),
        ];
        prop::collection::vec(piece, 0..40).prop_map(|p| p.concat())
    }

    /// Long strings full of escapes, as a ConfigMap's data is (`\n` every line): blocks
    /// inside a string with backslashes and no quote, runs of backslashes across blocks.
    fn escaped_long_strings() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            prop::sample::select(vec![
                &b"\\n"[..],
                b"\\\\",
                b"\\\"",
                b"\"",
                b"{",
                b"}",
                b"[",
                b"]",
                b"\\"
            ])
            .prop_map(|p| p.to_vec()),
            (0usize..100).prop_map(|n| vec![b'a'; n]),
        ];
        prop::collection::vec(piece, 0..60).prop_map(|p| p.concat())
    }

    proptest! {
        #[test]
        fn skipping_escaped_long_strings_matches_the_reference(body in escaped_long_strings(), open in prop::bool::ANY) {
            let mut input = vec![if open { b'{' } else { b'[' }];
            input.extend(body);
            prop_assert_eq!(skip_container(&input, 0), naive_skip(&input, 0));
        }

        #[test]
        fn skipping_long_strings_matches_the_reference(body in long_strings(), open in prop::bool::ANY) {
            let mut input = vec![if open { b'{' } else { b'[' }];
            input.extend(body);
            prop_assert_eq!(skip_container(&input, 0), naive_skip(&input, 0));
        }

        #[test]
        fn skipping_the_rest_of_an_object_matches_the_reference(body in prop_oneof![json_ish(), long_strings()]) {
            // `{"k":1` then the body: the skip starts after the first value, one brace open;
            // it ends at the closing `}`, where the reference's skip of the whole ends after it.
            let mut input = br#"{"k":1"#.to_vec();
            input.extend(body);
            let expected = naive_skip(&input, 0).map(|end| end - 1);
            prop_assert_eq!(skip_rest_of_object(&input, 6), expected);
        }

        #[test]
        fn escapes_match_the_byte_by_byte_reference(bytes in json_ish()) {
            prop_assert_eq!(blockwise_escaped(&bytes), naive_escaped(&bytes));
        }

        #[test]
        fn skipping_matches_the_byte_by_byte_reference(body in json_ish(), open in prop::bool::ANY) {
            let mut input = vec![if open { b'{' } else { b'[' }];
            input.extend(body);
            prop_assert_eq!(skip_container(&input, 0), naive_skip(&input, 0));
        }
    }

    proptest! {
        #[test]
        fn classify_marks_the_structural_bytes(bytes in prop::collection::vec(any::<u8>(), 64)) {
            let block: [u8; 64] = bytes.try_into().unwrap();
            let mask = |f: &dyn Fn(u8) -> bool| {
                block.iter().enumerate().fold(0u64, |m, (i, &b)| m | (u64::from(f(b)) << i))
            };
            let expected = Masks {
                quote: mask(&|b| b == b'"'),
                backslash: mask(&|b| b == b'\\'),
                open: mask(&|b| b == b'{' || b == b'['),
                close: mask(&|b| b == b'}' || b == b']'),
                curly: mask(&|b| b == b'{' || b == b'}'),
            };
            prop_assert_eq!(classify(&block), expected);
        }
    }

    #[test]
    fn runs_of_backslashes_across_blocks() {
        for run in 0..130 {
            for offset in 0..70 {
                let mut s = vec![b'a'; offset];
                s.extend(std::iter::repeat_n(b'\\', run));
                s.extend(b"\"x");
                assert_eq!(
                    blockwise_escaped(&s),
                    naive_escaped(&s),
                    "run {run} at {offset}"
                );
            }
        }
    }

    #[test]
    fn skips_real_json() {
        let doc = br#"{"a":[1,{"b":"}]\"["},"\\"],"c":{}} tail"#;
        assert_eq!(skip_container(doc, 0), Ok(doc.len() - 5));
        assert_eq!(skip_container(b"[[]", 0), Err(SkipError::Truncated));
        assert_eq!(skip_container(b"[\"]\"", 0), Err(SkipError::Truncated));
        assert_eq!(skip_container(b"{]", 0), Err(SkipError::Mismatched(1)));
        assert_eq!(
            skip_container(b"{\"x\":[1}}", 0),
            Err(SkipError::Mismatched(8))
        );
        assert_eq!(skip_container(b"[{]}", 0), Err(SkipError::Mismatched(3)));
        // Brackets balanced per kind but interleaved wrongly are not detected.
        assert_eq!(skip_container(b"[[{]}]", 0), Ok(6));
        assert_eq!(skip_rest_of_object(br#"{"a":1,"b":[{}]} x"#, 6), Ok(15));
        assert_eq!(skip_rest_of_object(br#"{"a":1}"#, 6), Ok(6));
        assert_eq!(
            skip_rest_of_object(br#"{"a":1,"b":["#, 6),
            Err(SkipError::Truncated)
        );
        assert_eq!(
            skip_rest_of_object(br#"{"a":1]"#, 6),
            Err(SkipError::Mismatched(6))
        );
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(skip_container(deep.as_bytes(), 0), Ok(200_000));
    }
}
