//! The floor of any policy that keeps this one's guarantees: the waPC call and the payload
//! copy (the null module), plus the one check no byte of the payload escapes. A truncated
//! payload, or one whose brackets do not balance, must be rejected, and brackets inside
//! strings do not count, so every byte is classified at least once: its quotes, backslashes
//! and brackets. This module runs exactly the policy's own structural pass
//! (`src/json/structural.rs`, included by path, not copied) over the whole payload, then
//! answers a constant. It reads no field: what `make bench` shows above this floor is the
//! cost of reading the request and applying the rules.

// `structural` finds `simd` as its parent's module, as in the policy's `json` module.
#[allow(dead_code)]
#[path = "../../../src/json/simd.rs"]
mod simd;
#[allow(dead_code)]
#[path = "../../../src/json/structural.rs"]
mod structural;

use wapc_guest::{CallResult, register_function};

#[unsafe(no_mangle)]
pub extern "C" fn wapc_init() {
    register_function("validate", validate);
    register_function("validate_settings", validate_settings);
    register_function("protocol_version", protocol_version);
}

/// The payload must be one JSON object (or array) that closes at its end, but for whitespace.
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
