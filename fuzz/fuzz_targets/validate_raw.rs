//! Raw bytes into `validate`: always an answer, never a panic; what is not JSON is rejected
//! with a message.
#![no_main]

use libfuzzer_sys::fuzz_target;
use single_owner_policy::admission;

fuzz_target!(|data: &[u8]| {
    let answer = admission::validate(data);
    if !answer.accepted {
        assert!(answer.message.as_deref().is_some_and(|m| !m.is_empty()), "rejection without a message");
        assert!(answer.warnings.is_none());
    }
    let is_json = std::str::from_utf8(data).is_ok()
        && serde_json::from_slice::<serde::de::IgnoredAny>(data).is_ok();
    if !is_json {
        assert!(!answer.accepted, "accepted a payload that is not JSON: {data:?}");
    }
    // The answer serializes, as the waPC entry point does.
    serde_json::to_vec(&answer).expect("the answer serializes");
});
