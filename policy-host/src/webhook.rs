//! `policy-host webhook`: the ValidatingWebhookConfiguration that kubewarden-controller makes
//! of a ClusterAdmissionPolicy or an AdmissionPolicy, and the policy-server `policies.yml`
//! entry it serves it with, so that a test cluster runs the manifests users apply
//! (`deploy/*.yaml`).
//!
//! As the controller writes it, 1.31 to 1.38 alike unless said
//! (`internal/controller/policy_subreconciler_webhook.go`): the configuration and its one
//! webhook are named after the policy's unique name, which is also its policy-server id and
//! the path it is served at (`/validate/<unique name>`): before 1.37.2 `clusterwide-<name>`, or
//! `namespaced-<namespace>-<name>`; from 1.37.2 `kw.cap.<name>`, or `kw.ap.<namespace>.<name>`
//! (its release notes: the old names could collide, GHSA-m5vp-9g65-pv6v); the webhook is
//! `<unique name>.kubewarden.admission`, labelled
//! `app.kubernetes.io/part-of: kubewarden` and annotated with the policy's name and namespace;
//! the rules, failurePolicy, matchPolicy (default Equivalent), objectSelector, sideEffects
//! (default None) and timeoutSeconds (default 10) of the spec; admissionReviewVersions v1; for
//! a ClusterAdmissionPolicy a namespaceSelector that leaves out Kubewarden's own namespace,
//! with the spec's matchExpressions added (from 1.36, the spec's own selector alone when
//! `allowInsideAdmissionControllerNamespace` is true), for an AdmissionPolicy its own
//! namespace; and the spec's matchConditions where the API server's OpenAPI v3 schema lists
//! `matchConditions` on ValidatingWebhook, which the controller checks once, at its start
//! (`internal/featuregates`): from Kubernetes 1.27 on (the field is in the schema whether or
//! not 1.27's alpha gate is on; off, the server drops the conditions it is given), and before
//! it the controller drops them with a log line. The controller points the webhook at the
//! policy-server Service; here it is a URL, since the backend runs on loopback. Its namespace
//! (`--deployments-namespace`: `kubewarden` as the chart installs it, `cattle-kubewarden-system`
//! under Rancher) is a parameter.
//!
//! The policies.yml entry carries, from 1.36 (`policyserver_controller_configmap.go`,
//! `hostCapabilitiesForPolicy`), the host capabilities the policy may call: `["*"]` for a
//! ClusterAdmissionPolicy, and for an AdmissionPolicy the PolicyServer's
//! `spec.namespacedPoliciesCapabilities`, `["*"]` where the PolicyServer does not set it.
//! policy-server 1.31 ignores the field and grants everything.

use anyhow::{Context, Result, bail, ensure};
use base64::Engine as _;
use serde_json::{Value, json};

use crate::deploy::MATCH_CONDITIONS_ON;

/// The namespace kubewarden-controller runs policy-servers in, as its chart installs it.
pub const KUBEWARDEN_NAMESPACE: &str = "kubewarden";

/// The first Kubernetes minor whose OpenAPI lists ValidatingWebhook.matchConditions: from it
/// on, the controller copies a policy's conditions into its webhook.
pub const MATCH_CONDITIONS_IN_SCHEMA: u32 = 27;

/// How kubewarden-controller names a policy's webhook and policy-server id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Naming {
    /// Before 1.37.2: `clusterwide-<name>`, `namespaced-<namespace>-<name>`.
    Before1372,
    /// From 1.37.2: `kw.cap.<name>`, `kw.ap.<namespace>.<name>`.
    From1372,
}

impl Naming {
    /// The naming of Kubewarden `version` (`1.36`, `1.37.2`, `v1.38.0`).
    pub fn of(version: &str) -> Result<Naming> {
        let parts: Vec<u32> = (version.trim_start_matches('v').split('.'))
            .map(|p| p.split('-').next().unwrap_or("").parse())
            .collect::<std::result::Result<_, _>>()
            .with_context(|| format!("{version:?} is not a Kubewarden version (1.36, 1.37.2)"))?;
        let at = |i: usize| parts.get(i).copied().unwrap_or(0);
        ensure!(at(0) == 1, "{version:?} is not a Kubewarden 1.x version");
        Ok(match (at(1), at(2)) {
            (minor, _) if minor > 37 => Naming::From1372,
            (37, patch) if patch >= 2 => Naming::From1372,
            _ => Naming::Before1372,
        })
    }
}

/// A ClusterAdmissionPolicy or an AdmissionPolicy, read from its manifest.
pub struct ClusterAdmissionPolicy {
    pub name: String,
    /// An AdmissionPolicy's namespace; `None` for a ClusterAdmissionPolicy.
    pub namespace: Option<String>,
    pub spec: Value,
}

impl ClusterAdmissionPolicy {
    pub fn read(manifest: &str) -> Result<ClusterAdmissionPolicy> {
        let doc: Value = serde_yaml::from_str(manifest).context("the manifest is not YAML")?;
        let name = doc["metadata"]["name"]
            .as_str()
            .context("metadata.name is missing")?
            .to_string();
        let namespace = match doc["kind"].as_str() {
            Some("ClusterAdmissionPolicy") => None,
            Some("AdmissionPolicy") => Some(
                doc["metadata"]["namespace"]
                    .as_str()
                    .filter(|ns| !ns.is_empty())
                    .context("an AdmissionPolicy needs metadata.namespace")?
                    .to_string(),
            ),
            _ => bail!(
                "kind must be ClusterAdmissionPolicy or AdmissionPolicy, not {}",
                doc["kind"]
            ),
        };
        Ok(ClusterAdmissionPolicy {
            name,
            namespace,
            spec: doc["spec"].clone(),
        })
    }

    /// The name kubewarden-controller gives its webhook configuration and policy-server id.
    pub fn unique_name(&self, naming: Naming) -> String {
        match (&self.namespace, naming) {
            (None, Naming::Before1372) => format!("clusterwide-{}", self.name),
            (Some(ns), Naming::Before1372) => format!("namespaced-{ns}-{}", self.name),
            (None, Naming::From1372) => format!("kw.cap.{}", self.name),
            (Some(ns), Naming::From1372) => format!("kw.ap.{ns}.{}", self.name),
        }
    }

    /// The namespaces the webhook sends: all but Kubewarden's for a cluster-wide policy (the
    /// spec's selector alone where it allows Kubewarden's namespace), its own for a namespaced
    /// one.
    fn namespace_selector(&self, kubewarden_namespace: &str) -> Value {
        if let Some(ns) = &self.namespace {
            return json!({"matchLabels": {"kubernetes.io/metadata.name": ns}});
        }
        if self.spec["allowInsideAdmissionControllerNamespace"] == true {
            return self.spec["namespaceSelector"].clone();
        }
        let mut expressions = vec![json!({"key": "kubernetes.io/metadata.name",
            "operator": "NotIn", "values": [kubewarden_namespace]})];
        if let Some(more) = self.spec["namespaceSelector"]["matchExpressions"].as_array() {
            expressions.extend(more.iter().cloned());
        }
        json!({"matchExpressions": expressions})
    }

    /// The ValidatingWebhookConfiguration (a MutatingWebhookConfiguration for a policy with
    /// `spec.mutating: true`, otherwise the same, as the controller writes it), calling
    /// `base_url` + `/validate/<unique name>` and trusting `ca_pem`, for an API server of minor
    /// version `server_minor` (1.x), named as `naming`, of a controller installed in
    /// `kubewarden_namespace`.
    pub fn webhook_configuration(
        &self,
        base_url: &str,
        ca_pem: &[u8],
        server_minor: u32,
        naming: Naming,
        kubewarden_namespace: &str,
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
        let unique = self.unique_name(naming);
        let or = |field: &str, default: Value| match &spec[field] {
            Value::Null => default,
            v => v.clone(),
        };
        let mut webhook = json!({
            "name": format!("{unique}.kubewarden.admission"),
            "clientConfig": {
                "url": format!("{}/validate/{unique}", base_url.trim_end_matches('/')),
                "caBundle": base64::engine::general_purpose::STANDARD.encode(ca_pem),
            },
            "rules": spec["rules"],
            "failurePolicy": or("failurePolicy", json!("Fail")),
            "matchPolicy": or("matchPolicy", json!("Equivalent")),
            "namespaceSelector": self.namespace_selector(kubewarden_namespace),
            "objectSelector": or("objectSelector", json!({})),
            "sideEffects": or("sideEffects", json!("None")),
            "timeoutSeconds": or("timeoutSeconds", json!(10)),
            "admissionReviewVersions": ["v1"],
        });
        if server_minor >= MATCH_CONDITIONS_IN_SCHEMA && spec["matchConditions"].is_array() {
            webhook["matchConditions"] = spec["matchConditions"].clone();
            if server_minor < MATCH_CONDITIONS_ON {
                eprintln!(
                    "policy-host webhook: {}: matchConditions kept, as kubewarden-controller \
                     keeps them on Kubernetes 1.{server_minor}, whose API server drops them \
                     unless its AdmissionWebhookMatchConditions gate is on (off by default)",
                    self.name
                );
            }
        } else if spec["matchConditions"].is_array() {
            eprintln!(
                "policy-host webhook: {}: matchConditions dropped, as kubewarden-controller \
                 drops them on Kubernetes 1.{server_minor} (its OpenAPI has them from 1.27)",
                self.name
            );
        }
        Ok(json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": kind,
            "metadata": {
                "name": unique,
                "labels": {"app.kubernetes.io/part-of": "kubewarden"},
                "annotations": {"kubewardenPolicyName": self.name,
                    "kubewardenPolicyNamespace": self.namespace.as_deref().unwrap_or("")},
            },
            "webhooks": [webhook],
        }))
    }

    /// The policies.yml entry policy-server serves this policy with, from `module`, as the
    /// controller writes it into the policy-server's ConfigMap (the spec's
    /// contextAwareResources included), with the host capabilities kubewarden-controller 1.36
    /// grants it: all to a cluster-wide policy, and to a namespaced one what the PolicyServer
    /// (`namespaced_capabilities`, its `spec.namespacedPoliciesCapabilities`) allows.
    pub fn policies_entry(
        &self,
        module: &str,
        namespaced_capabilities: Option<&[String]>,
    ) -> Value {
        let host_capabilities = match (&self.namespace, namespaced_capabilities) {
            (Some(_), Some(listed)) => json!(listed),
            _ => json!(["*"]),
        };
        let mut entry = json!({
            "module": module,
            "settings": match &self.spec["settings"] { Value::Null => json!({}), s => s.clone() },
            "allowedToMutate": self.spec["mutating"] == true,
            "policyMode": self.spec["mode"].as_str().unwrap_or("protect"),
            "hostCapabilities": host_capabilities,
        });
        if let Some(kinds) = self.spec["contextAwareResources"].as_array()
            && !kinds.is_empty()
        {
            entry["contextAwareResources"] = Value::Array(kinds.clone());
        }
        entry
    }
}

/// A PolicyServer's `spec.namespacedPoliciesCapabilities`, checked as policy-evaluator 1.36
/// checks a pattern; `None` where it is not set.
pub fn namespaced_capabilities(manifest: &str) -> Result<Option<Vec<String>>> {
    let doc: Value = serde_yaml::from_str(manifest).context("the manifest is not YAML")?;
    ensure!(
        doc["kind"] == "PolicyServer",
        "kind must be PolicyServer, not {}",
        doc["kind"]
    );
    let listed = &doc["spec"]["namespacedPoliciesCapabilities"];
    if listed.is_null() {
        return Ok(None);
    }
    let listed: Vec<String> = serde_json::from_value(listed.clone())
        .context("spec.namespacedPoliciesCapabilities must be a list of strings")?;
    crate::host_capabilities::HostCapabilities::new(&listed)
        .context("spec.namespacedPoliciesCapabilities")?;
    Ok(Some(listed))
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

    /// The configuration of `policy` for a 1.36 server, at `https://h`, in Kubewarden's
    /// default namespace.
    fn webhook_of(policy: &ClusterAdmissionPolicy, naming: Naming) -> Value {
        policy
            .webhook_configuration("https://h", b"CA", 36, naming, KUBEWARDEN_NAMESPACE)
            .unwrap()
    }

    #[test]
    fn the_webhook_is_what_the_controller_writes() {
        let policy = ClusterAdmissionPolicy::read(MANIFEST).unwrap();
        let config = policy
            .webhook_configuration(
                "https://127.0.0.1:9443/",
                b"CA",
                26,
                Naming::Before1372,
                KUBEWARDEN_NAMESPACE,
            )
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
        assert!(webhook.get("matchConditions").is_none(), "1.26 has none");
        let newer = policy
            .webhook_configuration("https://h", b"CA", 27, Naming::Before1372, "kubewarden")
            .unwrap();
        assert_eq!(
            newer["webhooks"][0]["matchConditions"][0]["name"], "c",
            "1.27's schema lists the field: the controller copies it"
        );
        let rancher = policy
            .webhook_configuration(
                "https://h",
                b"CA",
                37,
                Naming::Before1372,
                "cattle-kubewarden-system",
            )
            .unwrap();
        assert_eq!(
            rancher["webhooks"][0]["namespaceSelector"]["matchExpressions"][0]["values"][0],
            "cattle-kubewarden-system"
        );
        let entry = policy.policies_entry("file:///p.wasm", Some(&["oci/*".into()]));
        assert_eq!(entry["settings"]["allowAdoption"], false);
        assert_eq!(entry["policyMode"], "protect");
        assert_eq!(entry["hostCapabilities"], json!(["*"]), "cluster-wide: all");
    }

    #[test]
    fn kubewarden_1_37_2_names_policies_kw_cap_and_kw_ap() {
        let policy = ClusterAdmissionPolicy::read(MANIFEST).unwrap();
        for (version, name) in [
            ("1.31", "clusterwide-p"),
            ("1.36.0-beta.1", "clusterwide-p"),
            ("v1.37.1", "clusterwide-p"),
            ("1.37.2", "kw.cap.p"),
            ("1.38", "kw.cap.p"),
        ] {
            let naming = Naming::of(version).unwrap();
            let config = webhook_of(&policy, naming);
            assert_eq!(config["metadata"]["name"], name, "{version}");
            assert_eq!(
                config["webhooks"][0]["name"],
                format!("{name}.kubewarden.admission")
            );
            assert_eq!(
                config["webhooks"][0]["clientConfig"]["url"],
                format!("https://h/validate/{name}")
            );
        }
        assert!(Naming::of("2.0").is_err());
        assert!(Naming::of("latest").is_err());
    }

    #[test]
    fn a_namespaced_policy_is_granted_what_its_policy_server_allows() {
        let manifest = MANIFEST
            .replace("kind: ClusterAdmissionPolicy", "kind: AdmissionPolicy")
            .replace(
                "metadata: {name: p}",
                "metadata: {name: p, namespace: team-a}",
            );
        let policy = ClusterAdmissionPolicy::read(&manifest).unwrap();
        assert_eq!(
            policy.unique_name(Naming::Before1372),
            "namespaced-team-a-p"
        );
        assert_eq!(policy.unique_name(Naming::From1372), "kw.ap.team-a.p");
        let config = webhook_of(&policy, Naming::From1372);
        assert_eq!(
            config["webhooks"][0]["namespaceSelector"],
            json!({"matchLabels": {"kubernetes.io/metadata.name": "team-a"}})
        );
        assert_eq!(
            config["metadata"]["annotations"]["kubewardenPolicyNamespace"],
            "team-a"
        );
        let listed = ["kubernetes/get_resource".to_string()];
        let entry = policy.policies_entry("file:///p.wasm", Some(&listed));
        assert_eq!(
            entry["hostCapabilities"],
            json!(["kubernetes/get_resource"])
        );
        let unset = policy.policies_entry("file:///p.wasm", None);
        assert_eq!(
            unset["hostCapabilities"],
            json!(["*"]),
            "the controller's default"
        );
    }

    #[test]
    fn a_policy_allowed_inside_kubewardens_namespace_keeps_its_own_selector() {
        let manifest = MANIFEST.replace(
            "  mode: protect",
            "  mode: protect\n  allowInsideAdmissionControllerNamespace: true",
        );
        let policy = ClusterAdmissionPolicy::read(&manifest).unwrap();
        let config = webhook_of(&policy, Naming::From1372);
        let ns = &config["webhooks"][0]["namespaceSelector"]["matchExpressions"];
        assert_eq!(ns.as_array().map(Vec::len), Some(1));
        assert_eq!(ns[0]["key"], "team");
    }
}
