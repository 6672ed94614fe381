//! The policy settings a scan judges with: a preset manifest's `spec.settings` (the
//! ClusterAdmissionPolicy of `deploy/`), a settings file, or `{}` (the OLM v1 defaults), read
//! and validated by the policy's own `Settings`, so a scan means what the policy means.
//!
//! The findings judge objects, not writers: the synthetic writes the plugin hands to the rules
//! name no writer, so the identity rules (bindings) are turned off for them (a binding would
//! refuse every synthetic write), and a stamping preset is judged as the validating policy
//! (stamping only adds keys). `who-owns` still shows the bindings.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::Value;
use single_owner_policy::owners::Schemes;
use single_owner_policy::settings::Settings;

/// The owner model of one policy.
#[derive(Debug)]
pub struct Model {
    /// The policy's name, for reports: the preset's `metadata.name`, or what was read.
    pub name: String,
    pub settings: Settings,
    pub schemes: Schemes,
    /// The settings the synthetic writes are judged with (JSON): bindings and stamping off.
    pub judging: Vec<u8>,
}

/// The name of the OLM v1 defaults, `{}`.
pub const DEFAULTS: &str = "single-owner-olm-v1-defaults";

impl Model {
    /// The model of settings given as JSON (or YAML) text.
    pub fn from_value(name: &str, settings: Value) -> Result<Model> {
        let bytes = serde_json::to_vec(&settings)?;
        let parsed = Settings::from_json(&bytes).map_err(anyhow::Error::msg)?;
        parsed
            .validate()
            .map_err(|e| anyhow::anyhow!("the policy settings are not valid: {e}"))?;
        let judging = serde_json::to_vec(&judging(settings))?;
        Ok(Model {
            name: name.to_string(),
            schemes: Schemes::new(&parsed),
            settings: parsed,
            judging,
        })
    }

    pub fn defaults() -> Model {
        Model::from_value(DEFAULTS, Value::Object(Default::default()))
            .unwrap_or_else(|e| unreachable!("the policy's defaults are valid: {e}"))
    }

    /// A scheme's name in output: its name, or in the one-tool form its tool, else `owner`.
    pub fn scheme_name(&self, s: usize) -> String {
        let Some(scheme) = self.schemes.list.get(s) else {
            return "owner".into();
        };
        [&scheme.name, &scheme.tool]
            .into_iter()
            .find(|n| !n.is_empty())
            .cloned()
            .unwrap_or_else(|| "owner".into())
    }
}

/// The presets the project ships (`deploy/`), built in, so that a plugin installed alone (with
/// krew) can name one: `--preset all-tools`.
pub const SHIPPED: [(&str, &str); 16] = [
    ("olm-v1", include_str!("../../deploy/olm-v1.yaml")),
    ("olm-v0", include_str!("../../deploy/olm-v0.yaml")),
    ("helm", include_str!("../../deploy/helm.yaml")),
    ("argocd", include_str!("../../deploy/argocd.yaml")),
    (
        "argocd-label-tracking",
        include_str!("../../deploy/argocd-label-tracking.yaml"),
    ),
    ("flux", include_str!("../../deploy/flux.yaml")),
    ("applyset", include_str!("../../deploy/applyset.yaml")),
    ("kapp", include_str!("../../deploy/kapp.yaml")),
    ("timoni", include_str!("../../deploy/timoni.yaml")),
    ("crossplane", include_str!("../../deploy/crossplane.yaml")),
    ("all-tools", include_str!("../../deploy/all-tools.yaml")),
    (
        "identity/olm-v1-operator",
        include_str!("../../deploy/identity/olm-v1-operator.yaml"),
    ),
    (
        "identity/flux-tenants",
        include_str!("../../deploy/identity/flux-tenants.yaml"),
    ),
    (
        "identity/argocd-impersonation",
        include_str!("../../deploy/identity/argocd-impersonation.yaml"),
    ),
    (
        "identity/helm-per-install",
        include_str!("../../deploy/identity/helm-per-install.yaml"),
    ),
    (
        "identity/helm-per-install-stamp",
        include_str!("../../deploy/identity/helm-per-install-stamp.yaml"),
    ),
];

/// A preset's text: the file at `path`, else the shipped preset of that name (`all-tools`,
/// `all-tools.yaml`, `deploy/all-tools.yaml`).
fn preset_text(path: &Path) -> Result<String> {
    if path.exists() {
        return read(path);
    }
    let name = path.to_string_lossy();
    let name = name.trim_start_matches("deploy/").trim_end_matches(".yaml");
    match SHIPPED.iter().find(|(n, _)| *n == name) {
        Some((_, text)) => Ok(text.to_string()),
        None => bail!(
            "{} is no file, nor a preset the plugin ships ({})",
            path.display(),
            SHIPPED.map(|(n, _)| n).join(", ")
        ),
    }
}

/// Loads `--preset FILE` (a manifest whose policy's `spec.settings` are the settings, or the
/// name of a shipped one) or `--settings FILE` (the settings, JSON or YAML); neither: the
/// defaults.
pub fn load(preset: Option<&Path>, settings: Option<&Path>) -> Result<Model> {
    match (preset, settings) {
        (Some(_), Some(_)) => bail!("give --preset or --settings, not both"),
        (Some(path), None) => {
            let text = preset_text(path)?;
            let (name, settings) =
                preset_settings(&text).with_context(|| format!("reading {}", path.display()))?;
            Model::from_value(&name, settings)
                .with_context(|| format!("the settings of {}", path.display()))
        }
        (None, Some(path)) => {
            let text = read(path)?;
            let settings: Value = serde_yaml::from_str(&text)
                .with_context(|| format!("{} is not JSON or YAML", path.display()))?;
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "settings".into());
            Model::from_value(&name, settings)
                .with_context(|| format!("the settings in {}", path.display()))
        }
        (None, None) => Ok(Model::defaults()),
    }
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

/// The name and `spec.settings` of the first policy in a manifest (one or more YAML
/// documents); a policy without settings has `{}`.
pub fn preset_settings(text: &str) -> Result<(String, Value)> {
    for doc in serde_yaml::Deserializer::from_str(text) {
        let value: Value = serde::Deserialize::deserialize(doc).context("not YAML")?;
        let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
        if !kind.ends_with("AdmissionPolicy") {
            continue;
        }
        let name = (value.pointer("/metadata/name").and_then(Value::as_str))
            .unwrap_or("single-owner")
            .to_string();
        let settings = (value.pointer("/spec/settings").cloned())
            .filter(|v| !v.is_null())
            .unwrap_or_else(|| Value::Object(Default::default()));
        return Ok((name, settings));
    }
    bail!("no ClusterAdmissionPolicy or AdmissionPolicy in it")
}

/// The settings for judging objects: without bindings (top level and per scheme) and
/// without stamping.
fn judging(mut settings: Value) -> Value {
    if let Some(top) = settings.as_object_mut() {
        top.remove("bindings");
        top.remove("stamp");
        if let Some(Value::Array(schemes)) = top.get_mut("schemes") {
            for scheme in schemes.iter_mut().filter_map(Value::as_object_mut) {
                scheme.remove("bindings");
            }
        }
    }
    settings
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[test]
    fn every_shipped_preset_is_built_in_and_a_name_finds_it() {
        let deploy = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy");
        let mut on_disk: Vec<String> = Vec::new();
        for dir in [deploy.to_string(), format!("{deploy}/identity")] {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().is_some_and(|e| e == "yaml") {
                    let rel = path.strip_prefix(deploy).unwrap().to_string_lossy();
                    on_disk.push(rel.trim_end_matches(".yaml").to_string());
                }
            }
        }
        on_disk.sort();
        let mut built_in: Vec<String> = SHIPPED.iter().map(|(n, _)| n.to_string()).collect();
        built_in.sort();
        assert_eq!(built_in, on_disk);
        for name in ["all-tools", "all-tools.yaml", "deploy/all-tools.yaml"] {
            let model = load(Some(Path::new(name)), None).unwrap();
            assert_eq!(model.name, "single-owner-all-tools", "{name}");
        }
        let e = load(Some(Path::new("no-such")), None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("nor a preset the plugin ships (olm-v1, olm-v0"),
            "{e}"
        );
    }

    #[test]
    fn a_preset_is_read_for_its_settings() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../deploy/all-tools.yaml"
        ))
        .unwrap();
        let (name, settings) = preset_settings(&text).unwrap();
        assert_eq!(name, "single-owner-all-tools");
        let model = Model::from_value(&name, settings).unwrap();
        assert!(model.schemes.several());
        assert_eq!(model.scheme_name(0), "olm-v1");
    }

    #[rstest]
    #[case(r#"{"bindings":[{"owner":{"a":"b"}}],"stamp":true}"#, r#"{}"#)]
    #[case(
        r#"{"schemes":[{"name":"x","bindings":[]}],"aliases":[]}"#,
        r#"{"schemes":[{"name":"x"}],"aliases":[]}"#
    )]
    fn the_findings_judge_without_bindings_or_stamping(#[case] given: &str, #[case] judged: &str) {
        let given: Value = serde_json::from_str(given).unwrap();
        let judged: Value = serde_json::from_str(judged).unwrap();
        assert_eq!(judging(given), judged);
    }

    #[test]
    fn settings_the_policy_refuses_are_refused() {
        let e = Model::from_value("x", serde_json::json!({"ownerLabel": ["a"]})).unwrap_err();
        assert!(format!("{e:#}").contains("ownerLabel"), "{e:#}");
    }

    #[test]
    fn the_defaults_are_olm_v1() {
        let m = Model::defaults();
        assert!(!m.schemes.several());
        assert_eq!(m.scheme_name(0), "owner");
    }

    #[rstest]
    #[case("kind: ConfigMap\n", false, "")]
    #[case(
        "kind: Namespace\n---\nkind: ClusterAdmissionPolicy\nmetadata: {name: p}\nspec: {}\n",
        true,
        "p"
    )]
    fn a_manifest_needs_a_policy(#[case] text: &str, #[case] read: bool, #[case] name: &str) {
        match preset_settings(text) {
            Ok((n, settings)) => {
                assert!(read);
                assert_eq!(n, name);
                assert_eq!(settings, serde_json::json!({}));
            }
            Err(e) => assert!(!read, "{e}"),
        }
    }

    #[test]
    fn a_settings_file_is_json_or_yaml() {
        let dir = std::env::temp_dir().join(format!("kubectl-single-owner-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("helm.yaml");
        std::fs::write(
            &path,
            "ownerLabels: []\nownerAnnotations: [meta.helm.sh/release-name]\nownerKindLabel: \"\"\n",
        )
        .unwrap();
        let m = load(None, Some(&path)).unwrap();
        assert_eq!(m.name, "helm");
        assert_eq!(m.schemes.list[0].keys, ["meta.helm.sh/release-name"]);
        assert!(load(Some(&path), Some(&path)).is_err());
        assert!(load(None, Some(&dir.join("missing.json"))).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
