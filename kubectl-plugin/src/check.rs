//! `kubectl single-owner check`: is the policy deployed as its settings need? It reads the
//! cluster's ClusterAdmissionPolicies of this policy and the webhook configurations the
//! Kubewarden controller wrote for them, and says, one line each, what would make the
//! deployment cost or fail more than it should:
//!
//! - a policy that is not active (the controller has not written its webhook, or its policy
//!   server's pods are not Ready);
//! - a policy whose spec.matchConditions are not those its settings generate (the settings were
//!   edited without `policy-host match-conditions --write`: the writes only the new settings
//!   judge are skipped);
//! - a webhook without the conditions of its policy (the controller checks once, at its start,
//!   whether the API server has matchConditions; if that check failed it writes every webhook
//!   without them until it restarts);
//! - a webhook that sends every write under `failurePolicy: Fail` (rules `*`, no conditions,
//!   no objectSelector): every CREATE and UPDATE in the cluster waits for the policy server,
//!   and fails while it is down;
//! - a policy server, or the Service a webhook calls, that does not exist.
//!
//! The judging ([`judge`]) is plain: it sees the objects as JSON, and the cluster part
//! ([`check`]) only reads them.

use anyhow::{Context, Result};
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::ApiResource;
use serde_json::{Value, json};

const KUBEWARDEN_GROUP: &str = "policies.kubewarden.io";
/// The controller labels every webhook configuration it writes so, and annotates it with the
/// policy's name.
const PART_OF: &str = "app.kubernetes.io/part-of=kubewarden";
const POLICY_NAME_ANNOTATION: &str = "kubewardenPolicyName";

/// What the check read of the cluster.
#[derive(Debug, Default)]
pub struct Live {
    /// The ClusterAdmissionPolicies of this policy.
    pub policies: Vec<Value>,
    /// The controller's webhook configurations (validating and mutating).
    pub webhooks: Vec<Value>,
    /// The PolicyServers' names.
    pub policy_servers: Vec<String>,
    /// The Services that exist, as `namespace/name`.
    pub services: Vec<String>,
}

/// The matchConditions the module generates for `settings`, or why the settings are not valid.
fn generated(settings: &Value) -> std::result::Result<Vec<(String, String)>, String> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Answer {
        valid: bool,
        message: Option<String>,
        #[serde(default)]
        match_conditions: Vec<Condition>,
    }
    #[derive(serde::Deserialize)]
    struct Condition {
        name: String,
        expression: String,
    }
    let payload = serde_json::to_vec(settings).map_err(|e| e.to_string())?;
    let raw = single_owner_policy::admission::match_conditions(&payload);
    let answer: Answer = serde_json::from_slice(&raw).map_err(|e| e.to_string())?;
    if !answer.valid {
        return Err(answer.message.unwrap_or_default());
    }
    Ok(answer
        .match_conditions
        .into_iter()
        .map(|c| (c.name, c.expression.trim().to_string()))
        .collect())
}

/// A list of `{name, expression}` as pairs, the expressions trimmed (a YAML block scalar may
/// keep a trailing newline); absent: none.
fn conditions(list: &Value) -> Vec<(String, String)> {
    (list.as_array().into_iter().flatten())
        .map(|c| {
            let text = |k: &str| c[k].as_str().unwrap_or_default().trim().to_string();
            (text("name"), text("expression"))
        })
        .collect()
}

/// Whether a rule list covers every resource (`*` or `*/*`).
fn every_resource(rules: &Value) -> bool {
    (rules.as_array().into_iter().flatten()).any(|r| {
        (r["resources"].as_array().into_iter().flatten())
            .any(|x| matches!(x.as_str(), Some("*") | Some("*/*")))
    })
}

/// One line per fault found, in the policies' order.
pub fn judge(live: &Live) -> Vec<String> {
    let mut faults = Vec::new();
    for policy in &live.policies {
        let name = policy["metadata"]["name"].as_str().unwrap_or_default();
        let spec = &policy["spec"];
        let status = policy["status"]["policyStatus"]
            .as_str()
            .unwrap_or("unknown");
        if status != "active" {
            faults.push(format!(
                "policy {name}: not active (status {status}): the controller writes its webhook once every pod of its policy server's newest ReplicaSet is Ready"
            ));
        }
        let server = spec["policyServer"].as_str().unwrap_or("default");
        if !live.policy_servers.iter().any(|s| s == server) {
            faults.push(format!(
                "policy {name}: its PolicyServer {server} does not exist"
            ));
        }
        // No settings are the policy's defaults, as policy-server hands the module `{}`.
        let settings = match &spec["settings"] {
            Value::Null => json!({}),
            s => s.clone(),
        };
        let wanted = match generated(&settings) {
            Ok(wanted) => wanted,
            Err(message) => {
                faults.push(format!(
                    "policy {name}: its settings are not valid: {message}"
                ));
                continue;
            }
        };
        let declared = conditions(&spec["matchConditions"]);
        // The generated ones, and any the user added (break glass is one of them).
        let missing: Vec<&str> = (wanted.iter())
            .filter(|w| !declared.contains(w))
            .map(|(n, _)| n.as_str())
            .collect();
        if !missing.is_empty() {
            faults.push(format!(
                "policy {name}: spec.matchConditions lack what its settings generate ({}): regenerate them (policy-host match-conditions --manifest FILE --write), or the writes only the current settings judge are skipped",
                missing.join(", ")
            ));
        }
        let Some(webhook) = live.webhooks.iter().find(|w| {
            w["metadata"]["annotations"][POLICY_NAME_ANNOTATION] == name
                && w["metadata"]["annotations"]["kubewardenPolicyNamespace"]
                    .as_str()
                    .unwrap_or_default()
                    .is_empty()
        }) else {
            if status == "active" {
                faults.push(format!("policy {name}: no webhook configuration names it"));
            }
            continue;
        };
        let config = webhook["metadata"]["name"].as_str().unwrap_or_default();
        let hook = &webhook["webhooks"][0];
        let live_conditions = conditions(&hook["matchConditions"]);
        if live_conditions.is_empty() && !declared.is_empty() {
            faults.push(format!(
                "webhook {config}: has none of policy {name}'s matchConditions: the controller dropped them (its one check at start found no matchConditions in the API server's OpenAPI): restart it"
            ));
        } else if live_conditions != declared {
            faults.push(format!(
                "webhook {config}: its matchConditions are not policy {name}'s spec.matchConditions"
            ));
        }
        let failure = hook["failurePolicy"].as_str().unwrap_or("Fail");
        let selector_empty = match &hook["objectSelector"] {
            Value::Null => true,
            s => s == &json!({}),
        };
        if failure == "Fail"
            && live_conditions.is_empty()
            && selector_empty
            && every_resource(&hook["rules"])
        {
            faults.push(format!(
                "webhook {config}: sends every write under failurePolicy Fail (rules *, no matchConditions, no objectSelector): while the policy server is down every CREATE and UPDATE in the cluster fails"
            ));
        }
        let service = &hook["clientConfig"]["service"];
        if let (Some(ns), Some(svc)) = (service["namespace"].as_str(), service["name"].as_str())
            && !live.services.iter().any(|s| *s == format!("{ns}/{svc}"))
        {
            faults.push(format!(
                "webhook {config}: calls Service {ns}/{svc}, which does not exist (the policy server's namespace or name is not the controller's)"
            ));
        }
    }
    faults
}

/// Whether a ClusterAdmissionPolicy is this policy's: named in `names`, or, with none named,
/// its module a `single-owner` artifact or file.
pub fn is_ours(policy: &Value, names: &[String]) -> bool {
    if !names.is_empty() {
        return (policy["metadata"]["name"].as_str()).is_some_and(|n| names.iter().any(|m| m == n));
    }
    let module = policy["spec"]["module"].as_str().unwrap_or_default();
    let last = module.rsplit('/').next().unwrap_or_default();
    last.contains("single-owner") || last.contains("single_owner")
}

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: if group.is_empty() {
            version.into()
        } else {
            format!("{group}/{version}")
        },
        kind: kind.into(),
        plural: plural.into(),
    }
}

async fn list(client: &kube::Client, ar: &ApiResource, params: &ListParams) -> Result<Vec<Value>> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), ar);
    let list = (api.list(params).await).with_context(|| format!("listing {}", ar.plural))?;
    list.items
        .into_iter()
        .map(|o| serde_json::to_value(o).context("an object that is not JSON"))
        .collect()
}

/// Reads the cluster and judges it: the faults, and how many policies were checked.
pub async fn check(client: &kube::Client, names: &[String]) -> Result<(Vec<String>, usize)> {
    let caps = resource(
        KUBEWARDEN_GROUP,
        "v1",
        "ClusterAdmissionPolicy",
        "clusteradmissionpolicies",
    );
    let all = list(client, &caps, &ListParams::default())
        .await
        .context("is Kubewarden installed (its CRDs)?")?;
    let policies: Vec<Value> = all.into_iter().filter(|p| is_ours(p, names)).collect();
    let labelled = ListParams::default().labels(PART_OF);
    let mut webhooks = list(
        client,
        &resource(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
        ),
        &labelled,
    )
    .await?;
    webhooks.extend(
        list(
            client,
            &resource(
                "admissionregistration.k8s.io",
                "v1",
                "MutatingWebhookConfiguration",
                "mutatingwebhookconfigurations",
            ),
            &labelled,
        )
        .await?,
    );
    let policy_servers = list(
        client,
        &resource(KUBEWARDEN_GROUP, "v1", "PolicyServer", "policyservers"),
        &ListParams::default(),
    )
    .await?
    .iter()
    .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_string))
    .collect();
    let services = list(
        client,
        &resource("", "v1", "Service", "services"),
        &ListParams::default(),
    )
    .await?
    .iter()
    .map(|s| {
        format!(
            "{}/{}",
            s["metadata"]["namespace"].as_str().unwrap_or_default(),
            s["metadata"]["name"].as_str().unwrap_or_default()
        )
    })
    .collect();
    let live = Live {
        policies,
        webhooks,
        policy_servers,
        services,
    };
    Ok((judge(&live), live.policies.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// The helm preset as applied, and the webhook the controller writes of it.
    fn healthy() -> Live {
        let manifest = include_str!("../../deploy/helm.yaml");
        let doc: serde_yaml::Value = serde_yaml::from_str(manifest).unwrap();
        let mut policy: Value = serde_json::to_value(doc).unwrap();
        policy["status"] = json!({"policyStatus": "active"});
        let webhook = json!({
            "metadata": {"name": "clusterwide-single-owner-helm",
                "annotations": {"kubewardenPolicyName": "single-owner-helm", "kubewardenPolicyNamespace": ""}},
            "webhooks": [{
                "rules": policy["spec"]["rules"],
                "failurePolicy": "Fail",
                "objectSelector": {},
                "matchConditions": policy["spec"]["matchConditions"],
                "clientConfig": {"service": {"namespace": "kubewarden", "name": "policy-server-default"}},
            }],
        });
        Live {
            policies: vec![policy],
            webhooks: vec![webhook],
            policy_servers: vec!["default".into()],
            services: vec!["kubewarden/policy-server-default".into()],
        }
    }

    #[test]
    fn a_healthy_deployment_has_no_fault() {
        assert_eq!(judge(&healthy()), Vec::<String>::new());
    }

    #[rstest]
    #[case::not_active(|l: &mut Live| l.policies[0]["status"]["policyStatus"] = json!("pending"), "not active (status pending)")]
    #[case::conditions_dropped(|l: &mut Live| { l.webhooks[0]["webhooks"][0].as_object_mut().unwrap().remove("matchConditions"); },
        "has none of policy single-owner-helm's matchConditions")]
    #[case::every_write_under_fail(|l: &mut Live| { l.webhooks[0]["webhooks"][0].as_object_mut().unwrap().remove("matchConditions"); },
        "sends every write under failurePolicy Fail")]
    #[case::settings_edited(|l: &mut Live| l.policies[0]["spec"]["settings"]["ownerAnnotations"] = json!(["example.com/owner"]),
        "spec.matchConditions lack what its settings generate (ownership-change)")]
    #[case::webhook_differs(|l: &mut Live| l.webhooks[0]["webhooks"][0]["matchConditions"][1]["expression"] = json!("true"),
        "its matchConditions are not policy single-owner-helm's spec.matchConditions")]
    #[case::no_service(|l: &mut Live| l.services.clear(), "calls Service kubewarden/policy-server-default, which does not exist")]
    #[case::no_policy_server(|l: &mut Live| l.policy_servers.clear(), "its PolicyServer default does not exist")]
    #[case::no_webhook(|l: &mut Live| l.webhooks.clear(), "no webhook configuration names it")]
    #[case::bad_settings(|l: &mut Live| l.policies[0]["spec"]["settings"] = json!({"ownerLabel": 1}), "its settings are not valid")]
    fn each_fault_is_found(#[case] plant: fn(&mut Live), #[case] wanted: &str) {
        let mut live = healthy();
        plant(&mut live);
        let faults = judge(&live);
        assert!(
            faults.iter().any(|f| f.contains(wanted)),
            "{wanted:?} not in {faults:#?}"
        );
    }

    #[rstest]
    #[case("registry://ghcr.io/single-owner-policy/policies/single-owner:v0.6.0", &[], true)]
    #[case("registry://ghcr.io/kubewarden/policies/safe-labels:v1.0.0", &[], false)]
    #[case("file:///x/annotated-policy.wasm", &["single-owner-helm"], true)]
    #[case("registry://ghcr.io/single-owner-policy/policies/single-owner:v0.6.0", &["other"], false)]
    fn which_policies_are_ours(#[case] module: &str, #[case] names: &[&str], #[case] ours: bool) {
        let policy = json!({"metadata": {"name": "single-owner-helm"}, "spec": {"module": module}});
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        assert_eq!(is_ours(&policy, &names), ours);
    }
}
