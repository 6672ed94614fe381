//! `policy-host verify-manifest`: checks a ClusterAdmissionPolicy manifest the way a user
//! would before applying it, and validates its `settings` with the module's own
//! `validate_settings`.

use anyhow::{Context, Result, bail, ensure};
use serde_json::Value;

use crate::engine::{MatchCondition, Policy};

/// The names of the matchConditions the module generates from its settings (its `markers`):
/// a manifest carries the ones its settings generate, and no other of these names.
pub const GENERATED: [&str; 2] = ["ownership-change", "owned-object"];

/// The presets' break-glass condition: its members' writes bypass the policy by design.
pub const BREAK_GLASS: &str = "matchConditions not-break-glass is false";

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
    check_conditions(spec, &policy.match_conditions(&settings)?)?;
    Ok(spec.clone())
}

/// The manifest must carry the matchConditions its settings generate, as generated: a
/// condition left from other settings, or edited by hand, could keep from the policy a write
/// its module must judge.
fn check_conditions(spec: &Value, generated: &[MatchCondition]) -> Result<()> {
    let conditions = spec["matchConditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let find = |name: &str| conditions.iter().find(|c| c["name"] == name);
    const FIX: &str = "write it as generated: policy-host match-conditions --write MANIFEST MODULE";
    for g in generated {
        let Some(found) = find(&g.name) else {
            bail!(
                "spec.matchConditions lacks {:?}, which these settings generate: without it \
                 every write reaches the policy; {FIX}",
                g.name
            );
        };
        let expression = found["expression"].as_str().unwrap_or("");
        ensure!(
            same_expression(expression, &g.expression),
            "spec.matchConditions {:?} is not what these settings generate (a settings change \
             leaves it stale, and a stale one keeps from the policy writes it must judge); {FIX}",
            g.name
        );
    }
    for name in GENERATED {
        ensure!(
            find(name).is_none() || generated.iter().any(|g| g.name == name),
            "spec.matchConditions {name:?} is not one these settings generate (it selects the \
             writes of other settings); remove it, or {FIX}"
        );
    }
    Ok(())
}

/// Two expressions are the same where they differ only in white space (YAML folds a long
/// expression's lines; the generated ones hold no white space in string literals).
fn same_expression(a: &str, b: &str) -> bool {
    a.split_whitespace().eq(b.split_whitespace())
}

/// The manifest's text with the generated matchConditions in place of the ones it carries of
/// those names (and the comments before them), first in `spec.matchConditions`; the rest of
/// the text as it was, comments included, whatever its indentation.
pub fn with_conditions(manifest: &str, generated: &[MatchCondition]) -> Result<String> {
    let lines: Vec<&str> = manifest.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let key = |l: &str, k: &str| l.trim_start() == k && indent(l) > 0;
    let block = |items: usize| {
        let pad = " ".repeat(items);
        let mut out = Vec::new();
        for g in generated {
            out.push(format!(
                "{pad}# Generated from the settings (policy-host match-conditions): the writes \
                 the module judges."
            ));
            out.push(format!("{pad}- name: {}", g.name));
            out.push(format!("{pad}  expression: |-"));
            out.extend(g.expression.lines().map(|l| format!("{pad}    {l}")));
        }
        out
    };
    let owned = |l: &&str| l.to_string();
    let mut out: Vec<String> = Vec::new();
    match lines.iter().position(|l| key(l, "matchConditions:")) {
        Some(at) => {
            let level = indent(lines[at]);
            // The block ends at the next key of the spec (its items may be at the key's own
            // indentation: YAML's indentless sequences).
            let ends = |l: &str| {
                let t = l.trim_start();
                !t.is_empty()
                    && (indent(l) < level
                        || indent(l) == level && !t.starts_with("- ") && !t.starts_with('#'))
            };
            let end = (at + 1..lines.len())
                .find(|&i| ends(lines[i]))
                .unwrap_or(lines.len());
            let items = (at + 1..end)
                .map(|i| lines[i])
                .find(|l| l.trim_start().starts_with("- "))
                .map_or(level + 2, indent);
            let is_item = |l: &str| indent(l) == items && l.trim_start().starts_with("- ");
            let is_note = |l: &str| indent(l) == items && l.trim_start().starts_with('#');
            out.extend(lines[..=at].iter().map(owned));
            out.extend(block(items));
            let mut i = at + 1;
            while i < end {
                // An item: the comments before it, its first line, then its deeper lines.
                let start = i;
                while i < end && is_note(lines[i]) {
                    i += 1;
                }
                let item_end = (i + 1..end)
                    .find(|&j| is_item(lines[j]) || is_note(lines[j]))
                    .unwrap_or(end);
                let name = lines
                    .get(i)
                    .map(|l| l.trim_start().trim_start_matches("- ").trim_start())
                    .and_then(|l| l.strip_prefix("name:"))
                    .map(|n| n.trim().trim_matches('"'));
                // A name on a deeper line of the item (`- expression: ...` first).
                let name = name.or_else(|| {
                    (i + 1..item_end)
                        .filter_map(|j| lines[j].trim_start().strip_prefix("name:"))
                        .map(|n| n.trim().trim_matches('"'))
                        .next()
                });
                if !name.is_some_and(|n| GENERATED.contains(&n)) {
                    out.extend(lines[start..item_end].iter().map(owned));
                }
                i = item_end.max(i + 1);
            }
            out.extend(lines[end..].iter().map(owned));
        }
        None if generated.is_empty() => return Ok(manifest.to_string()),
        None => {
            let at = lines
                .iter()
                .position(|l| key(l, "settings:"))
                .context("the manifest has neither spec.matchConditions nor spec.settings")?;
            let level = indent(lines[at]);
            out.extend(lines[..at].iter().map(owned));
            out.push(format!("{}matchConditions:", " ".repeat(level)));
            out.extend(block(level + 2));
            out.extend(lines[at..].iter().map(owned));
        }
    }
    let mut text = out.join("\n");
    text.push('\n');
    Ok(text)
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

/// The first Kubernetes minor whose API server evaluates a webhook's matchConditions by
/// default (AdmissionWebhookMatchConditions beta, on): 1.27's alpha gate is off and its server
/// drops them, and before 1.27 kubewarden-controller does not copy them.
pub const MATCH_CONDITIONS_ON: u32 = 28;

/// The manifest as a webhook sees it before Kubernetes 1.28: without matchConditions (as
/// YAML; only `selects` reads it).
#[cfg(feature = "selects")]
pub fn without_match_conditions(manifest: &str) -> Result<String> {
    let mut doc: serde_yaml::Value =
        serde_yaml::from_str(manifest).context("the manifest is not YAML")?;
    if let Some(spec) = doc
        .get_mut("spec")
        .and_then(serde_yaml::Value::as_mapping_mut)
    {
        spec.remove("matchConditions");
    }
    Ok(serde_yaml::to_string(&doc)?)
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
