//! `policy-host webhook`: the ValidatingWebhookConfiguration that kubewarden-controller 1.31
//! makes of a ClusterAdmissionPolicy, and the policy-server `policies.yml` entry it serves it
//! with, so that a test cluster runs the manifests users apply (`deploy/*.yaml`).
//!
//! As the controller writes it (`internal/controller/policy_subreconciler_webhook.go`): the
//! configuration and its one webhook are named after the policy's unique name
//! (`clusterwide-<name>`, the webhook `<unique name>.kubewarden.admission`); the rules,
//! failurePolicy, matchPolicy (default Equivalent), objectSelector, sideEffects (default
//! None) and timeoutSeconds (default 10) of the spec; admissionReviewVersions v1; a
//! namespaceSelector that leaves out Kubewarden's own namespace, with the spec's
//! matchExpressions added; and the spec's matchConditions only on Kubernetes 1.30 or newer
//! (older servers do not know them, and the controller drops them with a log line). The
//! controller points the webhook at the policy-server Service; here it is a URL, since the
//! backend runs on loopback.

use anyhow::{Context, Result, bail, ensure};
use base64::Engine as _;
use serde_json::{Value, json};

/// The namespace kubewarden-controller runs policy-servers in (its default).
const KUBEWARDEN_NAMESPACE: &str = "kubewarden";

/// A ClusterAdmissionPolicy, read from its manifest.
pub struct ClusterAdmissionPolicy {
    pub name: String,
    pub spec: Value,
}

impl ClusterAdmissionPolicy {
    pub fn read(manifest: &str) -> Result<ClusterAdmissionPolicy> {
        let doc: Value = serde_yaml::from_str(manifest).context("the manifest is not YAML")?;
        ensure!(
            doc["kind"] == "ClusterAdmissionPolicy",
            "kind must be ClusterAdmissionPolicy, not {}",
            doc["kind"]
        );
        let name = doc["metadata"]["name"]
            .as_str()
            .context("metadata.name is missing")?
            .to_string();
        Ok(ClusterAdmissionPolicy {
            name,
            spec: doc["spec"].clone(),
        })
    }

    /// The name kubewarden-controller gives its webhook configuration and policy-server id.
    pub fn unique_name(&self) -> String {
        format!("clusterwide-{}", self.name)
    }

    /// The ValidatingWebhookConfiguration (a MutatingWebhookConfiguration for a policy with
    /// `spec.mutating: true`, otherwise the same, as the controller writes it), calling `base_url` + `/validate/<unique name>` and
    /// trusting `ca_pem`, for an API server of minor version `server_minor` (1.x).
    pub fn webhook_configuration(
        &self,
        base_url: &str,
        ca_pem: &[u8],
        server_minor: u32,
    ) -> Result<Value> {
        let spec = &self.spec;
        let kind = match &spec["mutating"] {
            Value::Bool(true) => "MutatingWebhookConfiguration",
            Value::Bool(false) | Value::Null => "ValidatingWebhookConfiguration",
            other => bail!(
                "{}: spec.mutating must be true or false, not {other}",
                self.name
            ),
        };
        let unique = self.unique_name();
        let or = |field: &str, default: Value| match &spec[field] {
            Value::Null => default,
            v => v.clone(),
        };
        let mut expressions = vec![json!({"key": "kubernetes.io/metadata.name",
            "operator": "NotIn", "values": [KUBEWARDEN_NAMESPACE]})];
        if let Some(more) = spec["namespaceSelector"]["matchExpressions"].as_array() {
            expressions.extend(more.iter().cloned());
        }
        let mut webhook = json!({
            "name": format!("{unique}.kubewarden.admission"),
            "clientConfig": {
                "url": format!("{}/validate/{unique}", base_url.trim_end_matches('/')),
                "caBundle": base64::engine::general_purpose::STANDARD.encode(ca_pem),
            },
            "rules": spec["rules"],
            "failurePolicy": or("failurePolicy", json!("Fail")),
            "matchPolicy": or("matchPolicy", json!("Equivalent")),
            "namespaceSelector": {"matchExpressions": expressions},
            "objectSelector": or("objectSelector", json!({})),
            "sideEffects": or("sideEffects", json!("None")),
            "timeoutSeconds": or("timeoutSeconds", json!(10)),
            "admissionReviewVersions": ["v1"],
        });
        if server_minor >= 30 && spec["matchConditions"].is_array() {
            webhook["matchConditions"] = spec["matchConditions"].clone();
        } else if spec["matchConditions"].is_array() {
            eprintln!(
                "policy-host webhook: {}: matchConditions dropped, as kubewarden-controller \
                 drops them on Kubernetes 1.{server_minor} (they need 1.30)",
                self.name
            );
        }
        Ok(json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": kind,
            "metadata": {
                "name": unique,
                "labels": {"app.kubernetes.io/part-of": "kubewarden", "kubewardenPolicyScope": "cluster"},
                "annotations": {"kubewardenPolicyName": self.name, "kubewardenPolicyNamespace": ""},
            },
            "webhooks": [webhook],
        }))
    }

    /// The policies.yml entry policy-server serves this policy with, from `module`.
    /// policy-server's entry for the policy, as the controller writes it into the
    /// policy-server's ConfigMap (the spec's contextAwareResources included).
    pub fn policies_entry(&self, module: &str) -> Value {
        let mut entry = json!({
            "module": module,
            "settings": match &self.spec["settings"] { Value::Null => json!({}), s => s.clone() },
            "allowedToMutate": self.spec["mutating"] == true,
            "policyMode": self.spec["mode"].as_str().unwrap_or("protect"),
        });
        if let Some(kinds) = self.spec["contextAwareResources"].as_array()
            && !kinds.is_empty()
        {
            entry["contextAwareResources"] = Value::Array(kinds.clone());
        }
        entry
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = r#"
apiVersion: policies.kubewarden.io/v1
kind: ClusterAdmissionPolicy
metadata: {name: p}
spec:
  module: registry://example/p:v1
  mode: protect
  mutating: false
  rules: [{apiGroups: ["*"], apiVersions: ["*"], resources: ["*"], operations: [CREATE]}]
  objectSelector: {matchExpressions: [{key: owner, operator: Exists}]}
  namespaceSelector: {matchExpressions: [{key: team, operator: In, values: [a]}]}
  matchConditions: [{name: c, expression: "true"}]
  settings: {allowAdoption: false}
"#;

    #[test]
    fn the_webhook_is_what_the_controller_writes() {
        let policy = ClusterAdmissionPolicy::read(MANIFEST).unwrap();
        let config = policy
            .webhook_configuration("https://127.0.0.1:9443/", b"CA", 29)
            .unwrap();
        assert_eq!(config["metadata"]["name"], "clusterwide-p");
        let webhook = &config["webhooks"][0];
        assert_eq!(webhook["name"], "clusterwide-p.kubewarden.admission");
        assert_eq!(
            webhook["clientConfig"]["url"],
            "https://127.0.0.1:9443/validate/clusterwide-p"
        );
        assert_eq!(webhook["clientConfig"]["caBundle"], "Q0E=");
        assert_eq!(webhook["failurePolicy"], "Fail");
        assert_eq!(webhook["matchPolicy"], "Equivalent");
        assert_eq!(webhook["sideEffects"], "None");
        assert_eq!(webhook["timeoutSeconds"], 10);
        assert_eq!(
            webhook["objectSelector"]["matchExpressions"][0]["key"],
            "owner"
        );
        let ns = &webhook["namespaceSelector"]["matchExpressions"];
        assert_eq!(ns[0]["values"][0], "kubewarden");
        assert_eq!(ns[1]["key"], "team");
        assert!(webhook.get("matchConditions").is_none(), "1.29 has none");
        let newer = policy
            .webhook_configuration("https://h", b"CA", 30)
            .unwrap();
        assert_eq!(newer["webhooks"][0]["matchConditions"][0]["name"], "c");
        let entry = policy.policies_entry("file:///p.wasm");
        assert_eq!(entry["settings"]["allowAdoption"], false);
        assert_eq!(entry["policyMode"], "protect");
    }
}
