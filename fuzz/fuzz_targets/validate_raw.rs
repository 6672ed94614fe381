//! Raw bytes into `validate`: always an answer, never a panic; what is not JSON is rejected
//! with a message. The JSON reader is checked against two references:
//!
//! - serde_json: every document serde_json reads, the reader reads too (no false refusals);
//! - a byte-by-byte skeleton check written here: every document the reader (or the policy)
//!   accepts has its strings closed and its brackets balanced, the last matching the first.
//!   Inside a skipped container the reader checks nothing more (see `json::structural`), so
//!   this is exactly what it promises: truncation and unbalanced nesting are always refused.
#![no_main]

use libfuzzer_sys::fuzz_target;
use single_owner_policy::{admission, reading::json::Reader};

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

/// Where the string or container that starts `t` ends, byte by byte: a backslash escapes a
/// quote or backslash after it, brackets outside strings are counted, and the closing
/// bracket must match the opening one.
fn skeleton_end(t: &[u8]) -> Option<usize> {
    let (mut depth, mut in_string, mut escaped) = (0u32, false, false);
    for (i, &b) in t.iter().enumerate() {
        if std::mem::take(&mut escaped) && matches!(b, b'"' | b'\\') {
            continue;
        }
        match (in_string, b) {
            (_, b'\\') => escaped = true,
            (true, b'"') if depth == 0 => return Some(i + 1),
            (true, b'"') => in_string = false,
            (true, _) => {}
            (false, b'"') => in_string = true,
            (false, b'{' | b'[') => depth += 1,
            (false, b'}' | b']') => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    let pair = (t[0], b);
                    return matches!(pair, (b'{', b'}') | (b'[', b']')).then_some(i + 1);
                }
            }
            (false, _) => {}
        }
    }
    None
}

/// Whether `data` is one JSON value by its skeleton: a closed string or a balanced
/// container, or else (a number or literal) what serde_json accepts (or may accept).
fn skeleton(data: &[u8], serde_ok: Option<bool>) -> bool {
    let start = data.iter().position(|&b| !is_ws(b)).unwrap_or(data.len());
    let t = &data[start..];
    match t.first() {
        Some(b'"' | b'{' | b'[') => {
            skeleton_end(t).is_some_and(|end| t[end..].iter().all(|&b| is_ws(b)))
        }
        _ => serde_ok != Some(false),
    }
}

fuzz_target!(|data: &[u8]| {
    let answer = admission::validate(data);
    if !answer.accepted {
        assert!(
            answer.message.as_deref().is_some_and(|m| !m.is_empty()),
            "rejection without a message"
        );
        assert!(answer.warnings.is_none());
    }
    // The bytes the waPC entry point returns are JSON, and say the same.
    let bytes: serde_json::Value =
        serde_json::from_slice(&admission::answer(data)).expect("the answer is JSON");
    assert_eq!(bytes["accepted"], serde_json::json!(answer.accepted));

    let mut reader = Reader::new(data);
    let ours = reader.skip_value().and_then(|()| reader.end());
    let serde_ok = match serde_json::from_slice::<serde_json::Value>(data) {
        Ok(_) => Some(true),
        // Where serde_json stops early, on syntax JSON allows: nesting deeper than its limit,
        // numbers too large for an f64 (JSON has no range). It says nothing of the rest.
        Err(e)
            if e.to_string().contains("recursion limit")
                || e.to_string().contains("number out of range") =>
        {
            None
        }
        Err(_) => Some(false),
    };
    if serde_ok == Some(true) {
        assert!(
            ours.is_ok(),
            "serde_json reads it, the reader refuses: {ours:?}"
        );
    }
    if !skeleton(data, serde_ok) {
        assert!(
            ours.is_err(),
            "the reader accepts what is not one JSON value"
        );
        assert!(
            !answer.accepted,
            "accepted a payload that is not one JSON value"
        );
    }
});
