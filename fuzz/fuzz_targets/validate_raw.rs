//! Raw bytes into `validate`: always an answer, never a panic; what is not JSON is rejected
//! with a message. The JSON reader is also checked against serde_json: both accept exactly
//! the same documents (serde_json decoding strings, as the reader checks them).
#![no_main]

use libfuzzer_sys::fuzz_target;
use single_owner_policy::{admission, json::Reader};

fuzz_target!(|data: &[u8]| {
    let answer = admission::validate(data);
    if !answer.accepted {
        assert!(answer.message.as_deref().is_some_and(|m| !m.is_empty()), "rejection without a message");
        assert!(answer.warnings.is_none());
    }
    // The answer serializes, as the waPC entry point does.
    serde_json::to_vec(&answer).expect("the answer serializes");

    let mut reader = Reader::new(data);
    let ours = reader.skip_value().and_then(|()| reader.end());
    match serde_json::from_slice::<serde_json::Value>(data) {
        Ok(_) => assert!(ours.is_ok(), "serde_json reads it, the reader refuses: {ours:?}"),
        // Syntax the reader rightly accepts: nesting deeper than serde_json allows, and numbers
        // too large for an f64 (JSON has no range).
        Err(e) if e.to_string().contains("recursion limit") || e.to_string().contains("number out of range") => {}
        Err(e) => {
            assert!(ours.is_err(), "the reader accepts what serde_json refuses: {e}");
            assert!(!answer.accepted, "accepted a payload that is not JSON: {e}");
        }
    }
});
