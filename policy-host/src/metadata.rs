//! Policy metadata: `kwctl annotate` and `kwctl inspect`.
//!
//! The metadata (from metadata.yml, with the protocol version asked of the module and the
//! README as usage) is stored as JSON in the wasm custom section `io.kubewarden.metadata`,
//! its fields in the order policy-evaluator's `Metadata` has them. As `kwctl annotate` 1.36
//! does, annotating compares the host capabilities the module calls with those metadata.yml
//! declares (`hostCapabilities`) and warns of each difference.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, Result, bail, ensure};
use serde::{Deserialize, Serialize};
use wasm_encoder::{CustomSection, RawSection};
use wasmparser::{Parser, Payload};

pub const METADATA_SECTION: &str = "io.kubewarden.metadata";
pub const USAGE_ANNOTATION: &str = "io.kubewarden.policy.usage";

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Metadata {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    pub rules: Vec<Rule>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    pub mutating: bool,
    #[serde(default = "yes")]
    pub background_audit: bool,
    #[serde(default = "wapc")]
    pub execution_mode: String,
    #[serde(default = "kubernetes")]
    pub policy_type: String,
    #[serde(default)]
    pub context_aware_resources: Vec<crate::capabilities::Resource>,
    /// The host capabilities the module calls (Kubewarden 1.36; kwctl 1.31 ignores the
    /// field), written only when declared, as kwctl writes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_capabilities: Option<BTreeSet<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum_kubewarden_version: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rule {
    pub api_groups: Vec<String>,
    pub api_versions: Vec<String>,
    pub resources: Vec<String>,
    pub operations: Vec<String>,
}

fn yes() -> bool {
    true
}
fn wapc() -> String {
    "kubewarden-wapc".into()
}
fn kubernetes() -> String {
    "kubernetes".into()
}

impl Metadata {
    pub fn from_yaml(text: &str) -> Result<Metadata> {
        let metadata: Metadata = serde_yaml::from_str(text).context("metadata.yml is invalid")?;
        metadata.validate()?;
        Ok(metadata)
    }

    fn validate(&self) -> Result<()> {
        ensure!(!self.rules.is_empty(), "metadata: rules must not be empty");
        for (i, rule) in self.rules.iter().enumerate() {
            for (field, values) in [
                ("apiGroups", &rule.api_groups),
                ("apiVersions", &rule.api_versions),
                ("resources", &rule.resources),
                ("operations", &rule.operations),
            ] {
                ensure!(!values.is_empty(), "metadata: rules[{i}].{field} is empty");
                ensure!(
                    values.len() == 1 || !values.iter().any(|v| v == "*"),
                    "metadata: rules[{i}].{field}: '*' must stand alone"
                );
            }
        }
        ensure!(
            self.execution_mode == "kubewarden-wapc",
            "metadata: executionMode {:?} is not supported by policy-host",
            self.execution_mode
        );
        Ok(())
    }
}

/// Returns `module` with `metadata` in its metadata section (replacing any earlier one).
pub fn annotate(module: &[u8], metadata: &Metadata) -> Result<Vec<u8>> {
    let json = serde_json::to_vec(metadata)?;
    let mut out = wasm_encoder::Module::new();
    for payload in Parser::new(0).parse_all(module) {
        let payload = payload.context("the policy is not a valid wasm module")?;
        if let Payload::CustomSection(section) = &payload
            && section.name() == METADATA_SECTION
        {
            continue;
        }
        if let Some((id, range)) = payload.as_section() {
            out.section(&RawSection {
                id,
                data: &module[range],
            });
        }
    }
    out.section(&CustomSection {
        name: Cow::Borrowed(METADATA_SECTION),
        data: Cow::Owned(json),
    });
    Ok(out.finish())
}

/// The metadata stored in a module, if it was annotated.
pub fn read(module: &[u8]) -> Result<Option<Metadata>> {
    for payload in Parser::new(0).parse_all(module) {
        if let Payload::CustomSection(section) = payload.context("not a valid wasm module")?
            && section.name() == METADATA_SECTION
        {
            return serde_json::from_slice(section.data())
                .map(Some)
                .context("the module's metadata section is not valid metadata JSON");
        }
    }
    Ok(None)
}

/// kwctl 1.36's warnings when the host capabilities `used` by the module and those the
/// metadata declares differ (none when they are the same).
pub fn capability_warnings(metadata: &Metadata, used: &BTreeSet<String>) -> Vec<String> {
    let declared = metadata.host_capabilities.clone().unwrap_or_default();
    let list = |set: Vec<&String>| {
        set.iter()
            .map(|c| c.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut warnings = Vec::new();
    let undeclared: Vec<&String> = used.difference(&declared).collect();
    if !undeclared.is_empty() {
        warnings.push(format!(
            "host capabilities used by the policy but not declared in metadata: {}",
            list(undeclared)
        ));
    }
    let unused: Vec<&String> = declared.difference(used).collect();
    if !unused.is_empty() {
        warnings.push(format!(
            "host capabilities declared in metadata but not detected in the policy: {}",
            list(unused)
        ));
    }
    warnings
}

/// Builds the annotated metadata as kwctl does: protocol version from the module, usage from
/// the README.
pub fn prepare(yaml: &str, usage: Option<String>, protocol_version: String) -> Result<Metadata> {
    let mut metadata = Metadata::from_yaml(yaml)?;
    if protocol_version != "v1" {
        bail!("the module speaks protocol {protocol_version:?}; only \"v1\" is supported");
    }
    metadata.protocol_version = Some(protocol_version);
    if let Some(usage) = usage {
        metadata.annotations.insert(USAGE_ANNOTATION.into(), usage);
    }
    Ok(metadata)
}
