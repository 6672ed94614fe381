//! One validation payload in, one answer out: parse, check the settings, apply the rules.
//!
//! Plain Rust, no waPC: `lib.rs` only hands over the bytes. Every input gets an answer; what
//! cannot be read is rejected (fail closed), never an `Err` or a panic, which policy-server
//! would turn into a 500 for every write the policy sees.
//!
//! Two things are done once, not per call: the settings, which arrive with every call but
//! are the same for a policy instance, are parsed and validated once per distinct value;
//! and the answer of a quiet acceptance, the most common one, is a constant.

use std::cell::RefCell;
use std::rc::Rc;

use kubewarden_policy_sdk::response::ValidationResponse;
use kubewarden_policy_sdk::settings::SettingsValidationResponse;

use crate::reading::json::same_bytes;
use crate::reading::request::{Payload, read_payload};
use crate::rules::Rules;
use crate::rules::verdict::Verdict;
use crate::settings::Settings;
use crate::tools::cluster::{Cluster, Host};

/// HTTP status for a request the policy cannot read: the client has to fix the request.
pub const BAD_REQUEST: u16 = 400;

/// HTTP status for a write that a rule refuses, as PodSecurity admission and Gatekeeper
/// answer: the request is understood and not allowed, so retrying it unchanged is pointless.
/// The API server answers the write with it (client-go's `IsForbidden` holds); kubectl prints
/// no `(Forbidden)`, since policy-server passes on the code and no reason.
pub const FORBIDDEN: u16 = 403;

/// The answer of a quiet acceptance, as the SDK serializes it (a test checks this).
pub const QUIET_ACCEPT: &[u8] = br#"{"accepted":true,"message":null,"code":null,"mutated_object":null,"audit_annotations":null,"warnings":null}"#;

/// The outcome of one `validate` call, before serialization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Accept {
        warnings: Vec<String>,
    },
    /// Accepted, with the object to write instead (the stamping policy), as JSON.
    Mutate {
        object: Vec<u8>,
    },
    Reject {
        message: String,
        code: Option<u16>,
    },
}

/// Judges a validation payload, looking up what a tool's rule needs through the host.
pub fn judge(payload: &[u8]) -> Answer {
    judge_in(payload, &Host)
}

/// Judges a validation payload, looking up what a tool's rule needs in `cluster`.
pub fn judge_in(payload: &[u8], cluster: &dyn Cluster) -> Answer {
    // Read in place: moving the views costs a `memory.copy` call each in WebAssembly.
    let mut parsed = Payload::default();
    if let Err(message) = read_payload(payload, &mut parsed) {
        return bad_request(message);
    }
    if parsed.request.is_none() {
        return bad_request(
            "the validation payload has no admission request (\"request\" is missing or null)"
                .into(),
        );
    }
    let rules = cached_rules(parsed.settings.unwrap_or(b"null"));
    let rules = match rules.as_ref() {
        Ok(rules) => rules,
        Err(rejection) => return rejection.clone(),
    };
    match rules.evaluate(&parsed, cluster) {
        Verdict::Accept { warnings } => Answer::Accept { warnings },
        Verdict::Reject { message } => Answer::Reject {
            message,
            code: Some(FORBIDDEN),
        },
        Verdict::Unreadable { message } => bad_request(message),
        Verdict::Mutate { object } => Answer::Mutate { object },
    }
}

/// What the object of a validation payload breaks as it stands (`Rules::standing`): the
/// refusal its next ownership change will meet, or `None`. Settings that are not valid
/// answer with their refusal.
pub fn standing(payload: &[u8]) -> Option<String> {
    let mut parsed = Payload::default();
    if let Err(message) = read_payload(payload, &mut parsed) {
        return Some(message);
    }
    let rules = cached_rules(parsed.settings.unwrap_or(b"null"));
    match rules.as_ref() {
        Ok(rules) => rules.standing(&parsed).err(),
        Err(Answer::Reject { message, .. }) => Some(message.clone()),
        Err(_) => Some("the settings are not valid".into()),
    }
}

/// Answers the `validate` call with the JSON the host reads: the SDK's `ValidationResponse`,
/// written here rather than through its `Serialize` (which would bring serde_json's number
/// formatting into the module for a field this policy never sets).
pub fn answer(payload: &[u8]) -> Vec<u8> {
    let (accepted, message, code, warnings) = match judge(payload) {
        Answer::Accept { warnings } if warnings.is_empty() => return QUIET_ACCEPT.to_vec(),
        Answer::Accept { warnings } => (true, None, None, Some(warnings)),
        Answer::Reject { message, code } => (false, Some(message), code, None),
        Answer::Mutate { object } => {
            let mut out = Vec::with_capacity(object.len() + 120);
            out.extend_from_slice(
                br#"{"accepted":true,"message":null,"code":null,"mutated_object":"#,
            );
            out.extend_from_slice(&object);
            out.extend_from_slice(br#","audit_annotations":null,"warnings":null}"#);
            return out;
        }
    };
    let mut out = Vec::with_capacity(160 + message.as_ref().map_or(0, String::len));
    out.extend_from_slice(if accepted {
        br#"{"accepted":true,"message":"#
    } else {
        br#"{"accepted":false,"message":"#
    });
    json_string_or_null(&mut out, message.as_deref());
    out.extend_from_slice(br#","code":"#);
    match code {
        Some(FORBIDDEN) => out.extend_from_slice(b"403"),
        Some(BAD_REQUEST) => out.extend_from_slice(b"400"),
        Some(code) => out.extend_from_slice(code.to_string().as_bytes()),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(br#","mutated_object":null,"audit_annotations":null,"warnings":"#);
    match warnings {
        None => out.extend_from_slice(b"null"),
        Some(warnings) => {
            for (i, warning) in warnings.iter().enumerate() {
                out.push(if i == 0 { b'[' } else { b',' });
                json_string_or_null(&mut out, Some(warning));
            }
            out.extend_from_slice(if warnings.is_empty() { b"[]" } else { b"]" });
        }
    }
    out.push(b'}');
    out
}

/// A JSON string, or `null`.
fn json_string_or_null(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => crate::reading::json::write_string(out, s),
        None => out.extend_from_slice(b"null"),
    }
}

/// Answers the `validate` call as the SDK's response.
pub fn validate(payload: &[u8]) -> ValidationResponse {
    response(judge(payload))
}

/// `validate`, looking up what a tool's rule needs in `cluster`.
pub fn validate_in(payload: &[u8], cluster: &dyn Cluster) -> ValidationResponse {
    response(judge_in(payload, cluster))
}

fn response(answer: Answer) -> ValidationResponse {
    let mut mutated_object = None;
    let (accepted, message, code, warnings) = match answer {
        Answer::Mutate { object } => {
            // Not on the hot path (`answer` writes the bytes as they are).
            mutated_object = serde_json::from_slice(&object).ok();
            (true, None, None, None)
        }
        Answer::Accept { warnings } => {
            (true, None, None, (!warnings.is_empty()).then_some(warnings))
        }
        Answer::Reject { message, code } => (false, Some(message), code, None),
    };
    ValidationResponse {
        accepted,
        message,
        code,
        mutated_object,
        audit_annotations: None,
        warnings,
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

/// Answers the `match_conditions` call, which is no Kubewarden host's (`policy-host
/// verify-manifest` and `policy-host match-conditions` make it): the webhook's
/// matchConditions these settings need (`markers`), as JSON, or why the settings are not
/// valid (`{"valid":false,"message":...}`).
pub fn match_conditions(payload: &[u8]) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Condition<'c> {
        name: &'c str,
        expression: &'c str,
    }
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Answer<'c> {
        valid: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        match_conditions: Vec<Condition<'c>>,
    }
    let settings = Settings::from_json(payload).and_then(|s| s.validate().map(|()| s));
    let condition = settings
        .as_ref()
        .ok()
        .and_then(crate::owners::markers::condition);
    let answer = Answer {
        valid: settings.is_ok(),
        message: settings.as_ref().err().cloned(),
        match_conditions: (condition.iter())
            .map(|c| Condition {
                name: c.name,
                expression: &c.expression,
            })
            .collect(),
    };
    serde_json::to_vec(&answer).unwrap_or_else(|_| br#"{"valid":false}"#.to_vec())
}

/// The rules for the settings, or the rejection every request gets when they are not valid.
type Checked = Rc<Result<Rules, Answer>>;

thread_local! {
    /// The last settings seen, by their bytes. A policy instance always gets the same ones.
    static SETTINGS: RefCell<Option<(Vec<u8>, Checked)>> = const { RefCell::new(None) };
}

fn cached_rules(json: &[u8]) -> Checked {
    SETTINGS.with_borrow_mut(|cache| match cache {
        Some((bytes, checked)) if same_bytes(bytes, json) => checked.clone(),
        _ => {
            let checked = Rc::new(check_settings(json));
            *cache = Some((json.to_vec(), checked.clone()));
            checked
        }
    })
}

fn check_settings(json: &[u8]) -> Result<Rules, Answer> {
    let settings = Settings::from_json(json).map_err(|e| bad_request(format!("the policy {e}")))?;
    settings.validate().map_err(|e| Answer::Reject {
        message: format!("the policy settings are not valid: {e}"),
        code: None,
    })?;
    Ok(Rules::new(settings))
}

fn bad_request(message: String) -> Answer {
    Answer::Reject {
        message,
        code: Some(BAD_REQUEST),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quiet_accept_constant_is_what_the_sdk_writes() {
        let sdk = serde_json::to_vec(&response(Answer::Accept {
            warnings: Vec::new(),
        }))
        .unwrap();
        assert_eq!(QUIET_ACCEPT, sdk.as_slice());
    }

    #[test]
    fn answers_are_what_the_sdk_writes() {
        let cases = [
            br#"{"request":{"operation":"PATCH"}}"#.to_vec(),
            b"not json".to_vec(),
            br#"{"request":{"operation":"UPDATE","name":"q\"x","object":{"metadata":{"labels":{"olm.operatorframework.io/owner-name":"b"}}},"oldObject":{"metadata":{}}}}"#.to_vec(),
            br#"{"request":{"operation":"UPDATE","object":{"metadata":{}},"oldObject":{"metadata":{}}}}"#.to_vec(),
        ];
        for payload in cases {
            let ours: serde_json::Value = serde_json::from_slice(&answer(&payload)).unwrap();
            let sdk = serde_json::to_value(validate(&payload)).unwrap();
            assert_eq!(ours, sdk);
        }
    }

    #[test]
    fn settings_are_parsed_once_per_value() {
        let a = cached_rules(br#"{"allowAdoption":false}"#);
        let b = cached_rules(br#"{"allowAdoption":false}"#);
        assert!(Rc::ptr_eq(&a, &b));
        let c = cached_rules(b"{}");
        assert!(!Rc::ptr_eq(&a, &c));
        assert_eq!(
            c.as_ref().as_ref().ok().map(|r| &r.settings),
            Some(&Settings::default())
        );
        let bad = cached_rules(br#"{"ownerLabels":[]}"#);
        assert!(
            matches!(bad.as_ref(), Err(Answer::Reject { message, .. }) if message.contains("no owner keys"))
        );
    }
}
