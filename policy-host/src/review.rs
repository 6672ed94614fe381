//! AdmissionReview plumbing: reading request files as kwctl does, and turning the guest's
//! answer into the AdmissionResponse that policy-server returns to the API server.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::engine::ValidationResponse;

/// An AdmissionRequest kept as the exact JSON text of the file: it is passed on to the guest
/// without being rebuilt, and at any nesting depth (serde_json skips raw values without
/// recursion), so deep objects reach the guest as they would from the API server.
pub struct AdmissionRequest {
    pub raw: Box<RawValue>,
    pub uid: String,
}

/// Reads a bare AdmissionRequest, or a whole AdmissionReview (then its `request` is used).
pub fn read_request(path: &Path) -> Result<AdmissionRequest> {
    #[derive(Deserialize)]
    struct Envelope {
        kind: Option<Box<RawValue>>,
        uid: Option<Box<RawValue>>,
        request: Option<Box<RawValue>>,
    }
    #[derive(Deserialize)]
    struct Uid {
        uid: Option<String>,
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the request file {}", path.display()))?;
    let envelope: Envelope = serde_json::from_str(&text)
        .with_context(|| format!("the request file {} is not a JSON object", path.display()))?;
    let is_object = |raw: &RawValue| raw.get().trim_start().starts_with('{');
    let is_review = envelope
        .kind
        .as_deref()
        .is_some_and(|k| k.get() == "\"AdmissionReview\"")
        || (envelope.uid.is_none() && envelope.request.as_deref().is_some_and(is_object));
    let raw = if is_review {
        match envelope.request {
            Some(request) if is_object(&request) => request,
            _ => bail!(
                "the AdmissionReview in {} has no request object",
                path.display()
            ),
        }
    } else {
        RawValue::from_string(text)?
    };
    let uid = serde_json::from_str::<Uid>(raw.get())
        .ok()
        .and_then(|u| u.uid)
        .unwrap_or_default();
    Ok(AdmissionRequest { raw, uid })
}

/// Settings from `--settings-json` or a YAML/JSON file; none means `{}`.
pub fn read_settings(json: Option<&str>, path: Option<&Path>) -> Result<Value> {
    let settings = match (json, path) {
        (Some(_), Some(_)) => bail!("use either --settings-json or --settings-path, not both"),
        (Some(json), None) => serde_json::from_str(json).context("--settings-json is not JSON")?,
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read settings file {}", path.display()))?;
            serde_yaml::from_str(&text)
                .with_context(|| format!("settings file {} is not YAML/JSON", path.display()))?
        }
        (None, None) => Value::Null,
    };
    Ok(if settings.is_null() {
        json!({})
    } else {
        settings
    })
}

/// The AdmissionResponse for a guest answer; a trap or guest error becomes a 500, as in
/// policy-server.
pub fn admission_response(uid: &str, answer: Result<ValidationResponse>) -> Value {
    let mut response = Map::new();
    response.insert("uid".into(), json!(uid));
    match answer {
        Err(e) => {
            response.insert("allowed".into(), json!(false));
            response.insert(
                "status".into(),
                json!({"message": format!("internal server error: {e:#}"), "code": 500}),
            );
        }
        Ok(answer) => {
            response.insert("allowed".into(), json!(answer.accepted));
            if !answer.accepted {
                let mut status = Map::new();
                if let Some(message) = answer.message {
                    status.insert("message".into(), json!(message));
                }
                if let Some(code) = answer.code {
                    status.insert("code".into(), json!(code));
                }
                response.insert("status".into(), Value::Object(status));
            }
            if answer.mutated_object.is_some() {
                eprintln!(
                    "policy-host: the guest returned a mutated object; patches are not computed"
                );
            }
            if let Some(annotations) = answer.audit_annotations {
                response.insert("auditAnnotations".into(), Value::Object(annotations));
            }
            if let Some(warnings) = answer.warnings {
                response.insert("warnings".into(), json!(warnings));
            }
        }
    }
    Value::Object(response)
}
