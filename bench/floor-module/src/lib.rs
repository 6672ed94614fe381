//! The floor of any policy that keeps this one's guarantees: the waPC call and the payload
//! copy (the null module), plus the one check no byte of the payload escapes. A truncated
//! payload, or one whose brackets do not balance, must be rejected, and brackets inside
//! strings do not count, so every byte is classified at least once: its quotes, backslashes
//! and brackets. This module runs exactly the policy's own structural pass
//! (`src/reading/json/structural.rs`, included by path, not copied) over the whole payload, then
//! answers a constant. It reads no field: what `make bench` shows above this floor is the
//! cost of reading the request and applying the rules.
//!
//! With the `index` feature it is instead the first stage of a simdjson-style reader, the
//! design that walks keys by an index rather than scanning for them: the same classification
//! of every byte, with the position of every unescaped quote and of every bracket outside
//! strings written to an index (eight at a time, unconditionally, as simdjson writes them).
//! `make bench` builds it into `target/index-floor/` and shows it as the "structural index"
//! beside the floor: what such a reader costs before it has read a single key.

// `structural` finds `simd` as its parent's module, as in the policy's `json` module.
#[allow(dead_code)]
#[path = "../../../src/reading/json/simd.rs"]
mod simd;
#[allow(dead_code)]
#[path = "../../../src/reading/json/structural.rs"]
mod structural;

use wapc_guest::{CallResult, register_function};

#[unsafe(no_mangle)]
pub extern "C" fn wapc_init() {
    register_function("validate", validate);
    register_function("validate_settings", validate_settings);
    register_function("protocol_version", protocol_version);
}

/// The payload must be one JSON object (or array) that closes at its end, but for whitespace.
#[cfg(not(feature = "index"))]
fn well_formed(payload: &[u8]) -> bool {
    let start = payload
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(payload.len());
    structural::skip_container(payload, start).is_ok_and(|end| {
        payload
            .get(end..)
            .unwrap_or_default()
            .iter()
            .all(u8::is_ascii_whitespace)
    })
}

/// With the index: the payload's structural index is built (and its length checked, so that
/// the work is not optimized away); the bracket check is left out, which only favours it.
#[cfg(feature = "index")]
fn well_formed(payload: &[u8]) -> bool {
    INDEX.with_borrow_mut(|index| structural_index(payload, index) > 0)
}

#[cfg(feature = "index")]
thread_local! {
    static INDEX: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Writes the offsets of the payload's structural characters to `index`; returns how many.
#[cfg(feature = "index")]
fn structural_index(payload: &[u8], index: &mut Vec<u32>) -> usize {
    // Room for one entry per byte, and a block's worth past the end for the unconditional
    // writes of the last block; kept from one call to the next, as a reader would keep it.
    if index.len() < payload.len() + 64 {
        index.resize(payload.len() + 64, 0);
    }
    let (mut in_string, mut escape_carry, mut count) = (0u64, 0u64, 0usize);
    let mut padded;
    for (n, at) in (0..payload.len()).step_by(64).enumerate() {
        let block: &[u8; 64] = match payload.get(at..).and_then(|r| r.first_chunk::<64>()) {
            Some(block) => block,
            None => {
                let rest = payload.get(at..).unwrap_or_default();
                padded = [b' '; 64];
                padded[..rest.len()].copy_from_slice(rest);
                &padded
            }
        };
        let (quote, backslash) = structural::string_masks(block);
        let (open, close, _) = structural::bracket_masks(block);
        let quotes = if backslash | escape_carry == 0 {
            quote
        } else {
            quote & !structural::escaped(backslash, &mut escape_carry)
        };
        let inside = structural::prefix_xor(quotes) ^ in_string;
        in_string = ((inside as i64) >> 63) as u64;
        let mut bits = quotes | ((open | close) & !inside);
        let Some(slots) = index.get_mut(count..count + 64) else {
            break;
        };
        count += bits.count_ones() as usize;
        for eight in slots.chunks_exact_mut(8) {
            if bits == 0 {
                break;
            }
            for slot in eight {
                *slot = (64 * n) as u32 + bits.trailing_zeros();
                bits &= bits.wrapping_sub(1);
            }
        }
    }
    count
}

fn validate(payload: &[u8]) -> CallResult {
    Ok(if well_formed(payload) {
        br#"{"accepted":true,"message":null,"code":null,"mutated_object":null,"audit_annotations":null,"warnings":null}"#.to_vec()
    } else {
        br#"{"accepted":false,"message":"the admission request cannot be read","code":400}"#
            .to_vec()
    })
}

fn validate_settings(_payload: &[u8]) -> CallResult {
    Ok(br#"{"valid":true}"#.to_vec())
}

fn protocol_version(_payload: &[u8]) -> CallResult {
    Ok(br#""v1""#.to_vec())
}
