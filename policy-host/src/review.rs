//! AdmissionReview plumbing: reading request files as kwctl does, and turning the guest's
//! answer into the AdmissionResponse that policy-server returns to the API server.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value, json};

use crate::engine::ValidationResponse;

/// Reads a bare AdmissionRequest, or a whole AdmissionReview (then its `request` is used).
pub fn read_request(path: &Path) -> Result<Value> {
    let text = std::fs::read(path)
        .with_context(|| format!("cannot read the request file {}", path.display()))?;
    let value: Value = serde_json::from_slice(&text)
        .with_context(|| format!("the request file {} is not JSON", path.display()))?;
    let is_review = value.get("kind").and_then(Value::as_str) == Some("AdmissionReview")
        || (value.get("request").is_some_and(Value::is_object) && value.get("uid").is_none());
    let request = if is_review {
        value["request"].clone()
    } else {
        value
    };
    if !request.is_object() {
        bail!("{} holds no AdmissionRequest object", path.display());
    }
    Ok(request)
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
    Ok(if settings.is_null() { json!({}) } else { settings })
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
                eprintln!("policy-host: the guest returned a mutated object; patches are not computed");
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
