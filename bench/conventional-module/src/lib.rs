//! The same owner rules, the conventional way: `ValidationRequest::new` deserializes the whole
//! request (objects as `serde_json::Value` trees), and the labels are read out of the tree.

use kubewarden_policy_sdk::request::ValidationRequest;
use kubewarden_policy_sdk::{accept_request, protocol_version_guest, reject_request};
use serde::Deserialize;
use serde_json::Value;
use wapc_guest::{CallResult, register_function};

#[unsafe(no_mangle)]
pub extern "C" fn wapc_init() {
    register_function("validate", validate);
    register_function(
        "validate_settings",
        kubewarden_policy_sdk::validate_settings::<Settings>,
    );
    register_function("protocol_version", protocol_version_guest);
}

/// The policy's settings schema, as a conventional policy declares it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
struct Settings {
    owner_labels: Vec<String>,
    owner_annotations: Vec<String>,
    owner_kind_label: String,
    cluster_scoped_owner_kinds: Vec<String>,
    owner_namespace_label: String,
    allow_adoption: bool,
    allow_orphaning: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            owner_labels: vec![
                "olm.operatorframework.io/owner-kind".into(),
                "olm.operatorframework.io/owner-name".into(),
            ],
            owner_annotations: Vec::new(),
            owner_kind_label: "olm.operatorframework.io/owner-kind".into(),
            cluster_scoped_owner_kinds: vec!["ClusterExtension".into()],
            owner_namespace_label: String::new(),
            allow_adoption: true,
            allow_orphaning: true,
        }
    }
}

impl kubewarden_policy_sdk::settings::Validatable for Settings {
    fn validate(&self) -> Result<(), String> {
        if self.owner_labels.is_empty() && self.owner_annotations.is_empty() {
            return Err("no owner keys".into());
        }
        Ok(())
    }
}

fn owner<'a>(settings: &Settings, object: &'a Value) -> Option<Vec<Option<&'a str>>> {
    let meta = &object["metadata"];
    let labels = settings
        .owner_labels
        .iter()
        .map(|k| meta["labels"][k].as_str());
    let annotations = settings
        .owner_annotations
        .iter()
        .map(|k| meta["annotations"][k].as_str());
    let tuple: Vec<_> = labels.chain(annotations).collect();
    tuple.iter().any(Option::is_some).then_some(tuple)
}

fn validate(payload: &[u8]) -> CallResult {
    let request = ValidationRequest::<Settings>::new(payload)?;
    let settings = &request.settings;
    let req = &request.request;
    if req.operation != "CREATE" && req.operation != "UPDATE" {
        return accept_request();
    }
    let kind_label = settings.owner_kind_label.as_str();
    let owner_kind = req.object["metadata"]["labels"][kind_label].as_str();
    if !kind_label.is_empty()
        && req.namespace.is_empty()
        && let Some(kind) = owner_kind
        && !settings
            .cluster_scoped_owner_kinds
            .iter()
            .any(|k| k == kind)
    {
        let message = format!(
            "{} {:?} is cluster-scoped, but its owner kind {kind} is not a cluster-scoped owner kind",
            req.kind.kind, req.name
        );
        return reject_request(Some(message), None, None, None);
    }
    if req.operation == "UPDATE"
        && let (Some(old), Some(new)) = (
            owner(settings, &req.old_object),
            owner(settings, &req.object),
        )
        && old != new
    {
        let message = format!(
            "{} {:?} is owned by {old:?}, and this UPDATE would change its owner to {new:?}",
            req.kind.kind, req.name
        );
        return reject_request(Some(message), None, None, None);
    }
    accept_request()
}
