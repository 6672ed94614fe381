//! One validation payload in, one answer out: parse, check the settings, apply the rules.
//!
//! Plain Rust, no waPC: `lib.rs` only serializes what these functions return. Every input
//! gets an answer; what cannot be read is rejected (fail closed), never an `Err` or a panic,
//! which policy-server would turn into a 500 for every write the policy sees.

use kubewarden_policy_sdk::response::ValidationResponse;
use kubewarden_policy_sdk::settings::SettingsValidationResponse;

use crate::owner::{self, Verdict};
use crate::request::parse_payload;
use crate::settings::Settings;

/// HTTP status for a request the policy cannot read.
const BAD_REQUEST: u16 = 400;

/// Answers the `validate` call.
pub fn validate(payload: &[u8]) -> ValidationResponse {
    let payload = match parse_payload(payload) {
        Ok(payload) => payload,
        Err(message) => return rejection(message, Some(BAD_REQUEST)),
    };
    let Some(request) = payload.request else {
        return rejection(
            "the validation payload has no admission request (\"request\" is missing or null)"
                .into(),
            Some(BAD_REQUEST),
        );
    };
    let settings = payload.settings.unwrap_or_default();
    if let Err(e) = settings.validate() {
        return rejection(format!("the policy settings are not valid: {e}"), None);
    }
    match owner::evaluate(&request, &settings) {
        Verdict::Accept { warnings } => ValidationResponse {
            accepted: true,
            message: None,
            code: None,
            mutated_object: None,
            audit_annotations: None,
            warnings: (!warnings.is_empty()).then_some(warnings),
        },
        Verdict::Reject { message } => rejection(message, None),
    }
}

/// Answers the `validate_settings` call.
pub fn validate_settings(payload: &[u8]) -> SettingsValidationResponse {
    match Settings::from_json(payload).and_then(|s| s.validate()) {
        Ok(()) => SettingsValidationResponse {
            valid: true,
            message: None,
        },
        Err(message) => SettingsValidationResponse {
            valid: false,
            message: Some(message),
        },
    }
}

fn rejection(message: String, code: Option<u16>) -> ValidationResponse {
    ValidationResponse {
        accepted: false,
        message: Some(message),
        code,
        mutated_object: None,
        audit_annotations: None,
        warnings: None,
    }
}
