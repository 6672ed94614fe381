//! `policy-host scaffold artifacthub`: artifacthub-pkg.yml from metadata.yml, as
//! `kwctl scaffold artifacthub` writes it.

use std::collections::BTreeMap;

use anyhow::{Context, Result, ensure};
use serde::Serialize;

use crate::metadata::Metadata;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Package {
    version: String,
    name: String,
    display_name: String,
    created_at: String,
    description: String,
    license: String,
    #[serde(rename = "homeURL")]
    home_url: String,
    containers_images: Vec<Named>,
    keywords: Vec<String>,
    links: Vec<Link>,
    install: String,
    maintainers: Vec<Maintainer>,
    provider: Provider,
    recommendations: Vec<Url>,
    annotations: BTreeMap<String, String>,
}

#[derive(Serialize)]
struct Named {
    name: String,
    image: String,
}
#[derive(Serialize)]
struct Link {
    name: String,
    url: String,
}
#[derive(Serialize)]
struct Maintainer {
    name: String,
}
#[derive(Serialize)]
struct Provider {
    name: String,
}
#[derive(Serialize)]
struct Url {
    url: String,
}

/// Renders artifacthub-pkg.yml. `created_at` is kept from the previous file while the version
/// is unchanged, so that regenerating an up-to-date file changes nothing.
pub fn scaffold(
    metadata: &Metadata,
    questions: Option<&str>,
    previous: Option<&str>,
    now: &str,
) -> Result<String> {
    let get = |key: &str| -> Result<String> {
        metadata
            .annotations
            .get(key)
            .cloned()
            .with_context(|| format!("metadata.yml lacks the annotation {key}"))
    };
    let version = get("io.kubewarden.policy.version")?;
    ensure!(
        version.split('.').count() == 3 && version.split('.').all(|p| p.parse::<u64>().is_ok()),
        "io.kubewarden.policy.version {version:?} is not a semantic version"
    );
    let oci = get("io.kubewarden.policy.ociUrl")?;
    let source = get("io.kubewarden.policy.source")?;
    let created_at = previous
        .and_then(|p| serde_yaml::from_str::<serde_yaml::Value>(p).ok())
        .filter(|p| p["version"].as_str() == Some(version.as_str()))
        .and_then(|p| p["createdAt"].as_str().map(String::from))
        .unwrap_or_else(|| now.to_string());
    let mut annotations = BTreeMap::new();
    annotations.insert("kubewarden/mutation".into(), metadata.mutating.to_string());
    if let Some(resources) = metadata.annotations.get("io.artifacthub.resources") {
        annotations.insert("kubewarden/resources".into(), resources.clone());
    }
    annotations.insert(
        "kubewarden/rules".into(),
        serde_yaml::to_string(&metadata.rules)?,
    );
    if let Some(questions) = questions {
        annotations.insert("kubewarden/questions-ui".into(), questions.to_string());
    }
    let package = Package {
        version: version.clone(),
        name: get("io.kubewarden.policy.title")?,
        display_name: get("io.artifacthub.displayName")?,
        created_at,
        description: get("io.kubewarden.policy.description")?,
        license: get("io.kubewarden.policy.license")?,
        home_url: get("io.kubewarden.policy.url")?,
        containers_images: vec![Named {
            name: "policy".into(),
            image: format!("{oci}:v{version}"),
        }],
        keywords: get("io.artifacthub.keywords")?
            .split(',')
            .map(|k| k.trim().to_string())
            .filter(|k| !k.is_empty())
            .collect(),
        links: vec![
            Link {
                name: "policy".into(),
                url: format!("{source}/releases/download/v{version}/policy.wasm"),
            },
            Link {
                name: "source".into(),
                url: source.clone(),
            },
        ],
        install: format!(
            "The policy can be obtained using [`kwctl`](https://github.com/kubewarden/kwctl):\n\
             ```console\nkwctl pull {oci}:v{version}\n```\n\
             Then, generate the policy manifest and tune it to your liking. For example:\n\
             ```console\nkwctl scaffold manifest -t ClusterAdmissionPolicy registry://{oci}:v{version}\n```\n"
        ),
        maintainers: vec![Maintainer {
            name: get("io.kubewarden.policy.author")?,
        }],
        provider: Provider {
            name: "kubewarden".into(),
        },
        recommendations: vec![Url {
            url: "https://artifacthub.io/packages/helm/kubewarden/kubewarden-controller".into(),
        }],
        annotations,
    };
    Ok(format!(
        "# Kubewarden Artifacthub Package config\n#\n\
         # Generated from metadata.yml by `make artifacthub-pkg.yml`; do not edit.\n{}",
        serde_yaml::to_string(&package)?
    ))
}
