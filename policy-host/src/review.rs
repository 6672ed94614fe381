//! AdmissionReview plumbing: reading request files as kwctl does, and turning the guest's
//! answer into the AdmissionResponse that policy-server returns to the API server.

use std::path::Path;

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
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

/// The AdmissionResponse policy-server returns (and `kwctl run` prints): the same fields, in
/// the same order, with the same ones left out or written as `null`, so that a script reading
/// one reads the other.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionResponse {
    pub uid: String,
    pub allowed: bool,
    /// "JSONPatch" when there is a patch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<String>,
    /// The RFC 6902 patch from the request's object to the guest's `mutated_object`, base64.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    pub audit_annotations: Option<Map<String, Value>>,
    pub warnings: Option<Vec<String>>,
}

#[derive(Debug, Serialize)]
pub struct Status {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
}

/// Whether a policy may mutate, as policy-server and kwctl decide it: kwctl run always lets
/// it; policy-server, as its policies.yml says (`allowedToMutate`, from the
/// ClusterAdmissionPolicy's `spec.mutating`).
#[derive(Debug, Clone, Copy)]
pub struct Mutation<'a> {
    pub allowed: bool,
    /// The policy's id, for policy-server's refusal of a mutation it does not allow.
    pub policy_id: &'a str,
}

/// The AdmissionResponse for a guest answer; a trap or guest error becomes a 500, as in
/// policy-server. The status is there when the guest gave a message or a code, accepted or not.
/// A `mutated_object` becomes a JSONPatch from the request's `object` (in `request`, the
/// AdmissionRequest's text), as policy-evaluator computes it (`json_patch::diff`), or the
/// refusals it answers: a mutation of a DELETE's null object, and a mutation by a policy that
/// may not mutate (in protect mode).
pub fn admission_response(
    uid: &str,
    answer: Result<ValidationResponse>,
    request: &str,
    mutation: Mutation,
) -> AdmissionResponse {
    let refuse = |message: String, code: Option<u16>| AdmissionResponse {
        uid: uid.to_string(),
        allowed: false,
        patch_type: None,
        patch: None,
        status: Some(Status {
            message: Some(message),
            code,
        }),
        audit_annotations: None,
        warnings: None,
    };
    let answer = match answer {
        Err(e) => return refuse(format!("internal server error: {e:#}"), Some(500)),
        Ok(answer) => answer,
    };
    let patch = match &answer.mutated_object {
        None => None,
        Some(mutated) => {
            #[derive(Deserialize)]
            struct Object {
                object: Option<Value>,
            }
            let object = serde_json::from_str::<Object>(request)
                .ok()
                .and_then(|r| r.object);
            let Some(object) = object else {
                return refuse(
                    "Incoming object is null, which happens only with DELETE operations, but \
                     the policy is attempting a mutation. This is not allowed"
                        .into(),
                    None,
                );
            };
            let diff = json_patch::diff(&object, mutated);
            (!diff.0.is_empty()).then(|| {
                let text = serde_json::to_string(&diff).unwrap_or_default();
                base64::engine::general_purpose::STANDARD.encode(text)
            })
        }
    };
    if patch.is_some() && !mutation.allowed {
        // policy-evaluator's AdmissionResponseHandler, in protect mode (in monitor mode the
        // caller lets everything through anyway).
        return AdmissionResponse {
            warnings: answer.warnings,
            audit_annotations: answer.audit_annotations,
            ..refuse(
                format!(
                    "Request rejected by policy {}. The policy attempted to mutate the \
                     request, but it is currently configured to not allow mutations.",
                    mutation.policy_id
                ),
                None,
            )
        };
    }
    let status = (answer.message.is_some() || answer.code.is_some()).then_some(Status {
        message: answer.message,
        code: answer.code,
    });
    AdmissionResponse {
        uid: uid.to_string(),
        allowed: answer.accepted,
        patch_type: patch.as_ref().map(|_| "JSONPatch".to_string()),
        patch,
        status,
        audit_annotations: answer.audit_annotations,
        warnings: answer.warnings,
    }
}
