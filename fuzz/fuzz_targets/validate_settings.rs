//! Raw bytes into `validate_settings`: always valid or not with a message, never a panic.
//! Settings it calls valid must then work in `validate` (no "settings are not valid").
#![no_main]

use libfuzzer_sys::fuzz_target;
use single_owner_policy::admission;

fuzz_target!(|data: &[u8]| {
    let answer = admission::validate_settings(data);
    assert_eq!(answer.valid, answer.message.is_none(), "{answer:?}");
    if answer.message.as_deref() == Some("") {
        panic!("an empty message");
    }
    let is_json = std::str::from_utf8(data).is_ok()
        && serde_json::from_slice::<serde::de::IgnoredAny>(data).is_ok();
    if !is_json {
        assert!(!answer.valid, "valid settings that are not JSON");
    }
    if answer.valid {
        let settings = std::str::from_utf8(data).expect("valid settings are UTF-8");
        let payload = format!(
            r#"{{"request":{{"operation":"UPDATE","name":"x","object":{{}},"oldObject":{{}}}},"settings":{settings}}}"#
        );
        let verdict = admission::validate(payload.as_bytes());
        assert!(
            verdict.accepted,
            "valid settings {settings} refused in validate: {:?}",
            verdict.message
        );
    }
});
