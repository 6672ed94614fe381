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
    let stamps = spec["settings"]["stamp"] == true;
    match (&spec["mutating"], stamps) {
        (Value::Bool(false), false) | (Value::Bool(true), true) => {}
        (Value::Bool(false), true) => bail!(
            "spec.mutating must be true for a stamping policy (settings.stamp: true): the API \
             server applies no patch from a validating webhook"
        ),
        (Value::Bool(true), false) => bail!(
            "spec.mutating must be false: only the stamping policy (settings.stamp: true) \
             mutates; the owner rules belong in a validating policy, which runs after every \
             mutation"
        ),
        _ => bail!("spec.mutating must be true or false"),
    }
    ensure!(
        spec["rules"].as_array().is_some_and(|r| !r.is_empty()),
        "spec.rules must not be empty"
    );
    // Kubewarden audits by default; its audit scanner sends every object as a CREATE made by
    // one fixed identity (Kubewarden's docs, audit-scanner limitations).
    let audited = spec["backgroundAudit"] != false;
    let binds = |s: &Value| s["bindings"].as_array().is_some_and(|b| !b.is_empty());
    let schemes = spec["settings"]["schemes"].as_array();
    if audited && (binds(&spec["settings"]) || schemes.is_some_and(|l| l.iter().any(binds))) {
        bail!(
            "spec.backgroundAudit must be false with bindings: the audit scanner sends every \
             object as written by one fixed identity, so a policy with bindings would report \
             every owned object as written by the wrong writer (backgroundAudit is true when \
             absent)"
        );
    }
    let settings = match &spec["settings"] {
        Value::Null => serde_json::json!({}),
        s => s.clone(),
    };
    let granted = spec["contextAwareResources"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for (field, (api_version, kind)) in lookups(&settings) {
        let listed = granted
            .iter()
            .any(|r| r["apiVersion"] == api_version && r["kind"] == kind);
        ensure!(
            listed,
            "spec.contextAwareResources must list {{apiVersion: {api_version}, kind: {kind}}}: \
             settings {field} looks it up (and the policy server's service account must be \
             allowed to get and list it)"
        );
    }
    let answer = policy.validate_settings(&settings)?;
    if !answer.valid {
        bail!(
            "spec.settings are not valid: {}",
            answer.message.unwrap_or_default()
        );
    }
    Ok(spec.clone())
}

/// The kinds the policy's rules look up with these settings (the tools' own rules,
/// `src/tools/`), each with the setting that needs it.
fn lookups(settings: &Value) -> Vec<(String, (&'static str, &'static str))> {
    const CSV: (&str, &str) = ("operators.coreos.com/v1alpha1", "ClusterServiceVersion");
    const HELM_RELEASE: (&str, &str) = ("helm.toolkit.fluxcd.io/v2", "HelmRelease");
    const EXTENSION: (&str, &str) = ("olm.operatorframework.io/v1", "ClusterExtension");
    const REVISION: (&str, &str) = ("olm.operatorframework.io/v1", "ClusterObjectSet");
    let mut out = Vec::new();
    let one_tool = [settings.clone()];
    let schemes = settings["schemes"]
        .as_array()
        .map_or(&one_tool[..], Vec::as_slice);
    let several = settings["schemes"].is_array();
    for (i, scheme) in schemes.iter().enumerate() {
        let at = if several {
            format!("schemes[{i}].")
        } else {
            String::new()
        };
        match scheme["tool"].as_str() {
            Some("olm-v0") => out.push((format!("{at}tool: olm-v0"), CSV)),
            Some("olm-v1") => {
                // The extension of a boxcutter revision a controller ownerReference names.
                out.push((format!("{at}tool: olm-v1"), REVISION));
                let installer = (scheme["bindings"].as_array().into_iter().flatten())
                    .any(|b| b["writers"]["installer"] == true);
                if installer {
                    out.push((format!("{at}bindings[].writers.installer"), EXTENSION));
                }
            }
            _ => {}
        }
    }
    for (i, alias) in (settings["aliases"].as_array().into_iter().flatten()).enumerate() {
        if alias["rule"] == "helm-controller" {
            out.push((format!("aliases[{i}].rule: helm-controller"), HELM_RELEASE));
        }
    }
    out
}

#[cfg(feature = "selects")]
/// Whether the API server would send `request` to the policy of `manifest`, and why not:
/// its rules, its objectSelector (matched against the new and the old object, either
/// suffices) and every matchConditions expression (CEL, over `object`, `oldObject` and
/// `request`), as the API server selects requests for a validating webhook.
pub fn selects(manifest: &str, request: &Value) -> Result<std::result::Result<(), String>> {
    let doc: Value = serde_yaml::from_str(manifest).context("the manifest is not YAML")?;
    let spec = &doc["spec"];
    ensure!(
        spec["namespaceSelector"].is_null(),
        "namespaceSelector needs the namespace's labels, which a request does not carry"
    );
    if !spec["rules"]
        .as_array()
        .is_some_and(|rules| rules.iter().any(|rule| rule_matches(rule, request)))
    {
        return Ok(Err("no rule matches the operation and resource".into()));
    }
    let selector = &spec["objectSelector"];
    if !selector.is_null() {
        let labels = |o: &str| request[o]["metadata"]["labels"].clone();
        let objects = ["object", "oldObject"].map(|o| !request[o].is_null());
        let either = (objects[0] && label_selector_matches(selector, &labels("object"))?)
            || (objects[1] && label_selector_matches(selector, &labels("oldObject"))?);
        if !either {
            return Ok(Err("the objectSelector matches neither object".into()));
        }
    }
    for condition in spec["matchConditions"].as_array().into_iter().flatten() {
        let name = condition["name"].as_str().unwrap_or("");
        let expression = condition["expression"]
            .as_str()
            .with_context(|| format!("matchConditions {name} has no expression"))?;
        let program = cel::Program::compile(expression)
            .map_err(|e| anyhow::anyhow!("matchConditions {name}: {e}"))?;
        let mut context = cel::Context::default();
        for (variable, value) in [
            ("object", &request["object"]),
            ("oldObject", &request["oldObject"]),
            ("request", request),
        ] {
            let value = cel::to_value(value).map_err(|e| anyhow::anyhow!("{variable}: {e}"))?;
            context.add_variable_from_value(variable, value);
        }
        match program.execute(&context) {
            Ok(cel::Value::Bool(true)) => {}
            Ok(cel::Value::Bool(false)) => {
                return Ok(Err(format!("matchConditions {name} is false")));
            }
            Ok(other) => bail!("matchConditions {name} gave {other:?}, not a boolean"),
            Err(e) => bail!("matchConditions {name} fails on this request: {e}"),
        }
    }
    Ok(Ok(()))
}

#[cfg(feature = "selects")]
fn rule_matches(rule: &Value, request: &Value) -> bool {
    let any = |list: &Value, wanted: &str| {
        list.as_array()
            .is_some_and(|l| l.iter().any(|v| v == "*" || v == wanted))
    };
    let resource = &request["resource"];
    let sub = request["subResource"].as_str().unwrap_or("");
    let name = resource["resource"].as_str().unwrap_or("");
    let resources = rule["resources"].as_array().into_iter().flatten();
    // "*" is every resource but no subresource; "*/*" everything; "r/s" one subresource.
    let resource_ok = resources
        .filter_map(Value::as_str)
        .any(|r| match r.split_once('/') {
            None => sub.is_empty() && (r == "*" || r == name),
            Some((res, s)) => (res == "*" || res == name) && (s == "*" || s == sub),
        });
    any(
        &rule["operations"],
        request["operation"].as_str().unwrap_or(""),
    ) && any(&rule["apiGroups"], resource["group"].as_str().unwrap_or(""))
        && any(
            &rule["apiVersions"],
            resource["version"].as_str().unwrap_or(""),
        )
        && resource_ok
}

/// A Kubernetes label selector (matchLabels and matchExpressions) against a label map.
#[cfg(feature = "selects")]
fn label_selector_matches(selector: &Value, labels: &Value) -> Result<bool> {
    let get = |key: &str| labels.get(key).and_then(Value::as_str);
    for (key, value) in selector["matchLabels"].as_object().into_iter().flatten() {
        if get(key) != value.as_str() {
            return Ok(false);
        }
    }
    for expression in selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let key = expression["key"].as_str().unwrap_or("");
        let values: Vec<&str> = (expression["values"].as_array().into_iter().flatten())
            .filter_map(Value::as_str)
            .collect();
        let ok = match expression["operator"].as_str() {
            Some("Exists") => get(key).is_some(),
            Some("DoesNotExist") => get(key).is_none(),
            Some("In") => get(key).is_some_and(|v| values.contains(&v)),
            Some("NotIn") => get(key).is_none_or(|v| !values.contains(&v)),
            other => bail!("unknown label selector operator {other:?}"),
        };
        if !ok {
            return Ok(false);
        }
    }
    Ok(true)
}
