//! `policy-host verify-manifest`: checks a ClusterAdmissionPolicy manifest the way a user
//! would before applying it, and validates its `settings` with the module's own
//! `validate_settings`.

use anyhow::{Context, Result, bail, ensure};
use serde_json::Value;

use crate::engine::Policy;

/// Returns the manifest's spec (as JSON) once it checks out.
pub fn verify(manifest: &str, policy: &Policy) -> Result<Value> {
    let doc: Value = serde_yaml::from_str(manifest).context("the manifest is not YAML")?;
    ensure!(
        doc["apiVersion"] == "policies.kubewarden.io/v1",
        "apiVersion must be policies.kubewarden.io/v1, not {}",
        doc["apiVersion"]
    );
    ensure!(
        doc["kind"] == "ClusterAdmissionPolicy",
        "kind must be ClusterAdmissionPolicy, not {}",
        doc["kind"]
    );
    let spec = &doc["spec"];
    ensure!(
        spec["module"]
            .as_str()
            .is_some_and(|m| m.starts_with("registry://")),
        "spec.module must be a registry:// reference"
    );
    ensure!(
        matches!(spec["mode"].as_str(), Some("protect" | "monitor")),
        "spec.mode must be protect or monitor"
    );
    ensure!(spec["mutating"] == false, "spec.mutating must be false");
    ensure!(
        spec["rules"].as_array().is_some_and(|r| !r.is_empty()),
        "spec.rules must not be empty"
    );
    let settings = match &spec["settings"] {
        Value::Null => serde_json::json!({}),
        s => s.clone(),
    };
    let answer = policy.validate_settings(&settings)?;
    if !answer.valid {
        bail!(
            "spec.settings are not valid: {}",
            answer.message.unwrap_or_default()
        );
    }
    Ok(spec.clone())
}
