//! `policy-host scaffold artifacthub`: artifacthub-pkg.yml from metadata.yml, as
//! `kwctl scaffold artifacthub` writes it.

use std::collections::{BTreeMap, BTreeSet};

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
#[derive(Debug, PartialEq, Serialize)]
struct Maintainer {
    name: String,
    email: String,
}

const AUTHOR: &str = "io.kubewarden.policy.author";

/// The maintainers named by `io.kubewarden.policy.author`: comma-separated `Name <email>`
/// values, each email well formed, as `kwctl scaffold artifacthub` requires them (with its
/// error messages), so that Kubewarden's release workflow, which runs it, does not fail.
fn maintainers(author: &str) -> Result<Vec<Maintainer>> {
    let csv_error = || {
        anyhow::anyhow!(
            "annotation \"{AUTHOR}\" in policy metadata is malformed, must be csv values of \"name <email>\""
        )
    };
    let mut entries = Vec::new();
    let (mut start, mut quoted, mut bracketed) = (0, false, false);
    for (i, c) in author.char_indices() {
        match c {
            '"' if !bracketed => quoted = !quoted,
            '<' if !quoted => bracketed = true,
            '>' if !quoted => bracketed = false,
            ',' if !quoted && !bracketed => {
                entries.push(&author[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    entries.push(&author[start..]);
    entries
        .into_iter()
        .map(|entry| {
            let entry = entry.trim();
            let (name, rest) = entry.split_once('<').ok_or_else(csv_error)?;
            let email = rest.strip_suffix('>').ok_or_else(csv_error)?.trim();
            let email = email_address::EmailAddress::parse_with_options(
                email,
                email_address::Options::default(),
            )
            .map_err(|e| {
                anyhow::anyhow!(
                    "annotation \"{:?}\" in policy metadata must be a well formed email: {:?}",
                    AUTHOR,
                    e.to_string()
                )
            })?;
            Ok(Maintainer {
                name: name.trim().trim_matches('"').to_string(),
                email: email.to_string(),
            })
        })
        .collect()
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
    // As kwctl writes it: the kinds as a YAML list, sorted and without duplicates.
    if !metadata.context_aware_resources.is_empty() {
        let kinds: BTreeSet<_> = metadata.context_aware_resources.iter().collect();
        annotations.insert(
            "kubewarden/contextAwareResources".into(),
            serde_yaml::to_string(&kinds)?,
        );
    }
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
            "The policy can be obtained using [kwctl](https://docs.kubewarden.io/howtos/install-kwctl):\n\
             ```console\nkwctl pull {oci}:v{version}\n```\n\
             Then, generate the policy manifest and tune it to your liking. For example:\n\
             ```console\nkwctl scaffold manifest -t ClusterAdmissionPolicy registry://{oci}:v{version}\n```\n"
        ),
        maintainers: maintainers(&get(AUTHOR)?)?,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn maintainer(name: &str, email: &str) -> Maintainer {
        Maintainer {
            name: name.into(),
            email: email.into(),
        }
    }

    #[test]
    fn authors_are_csv_of_name_and_email() {
        assert_eq!(
            maintainers("Ana Dev <ana@example.com>").unwrap(),
            [maintainer("Ana Dev", "ana@example.com")]
        );
        assert_eq!(
            maintainers("Ana <ana@example.com>, \"Bo, Jr.\" <bo@example.com>").unwrap(),
            [
                maintainer("Ana", "ana@example.com"),
                maintainer("Bo, Jr.", "bo@example.com")
            ]
        );
        let e = maintainers("single-owner-policy developers").unwrap_err();
        assert_eq!(
            e.to_string(),
            "annotation \"io.kubewarden.policy.author\" in policy metadata is malformed, must be csv values of \"name <email>\""
        );
        let e = maintainers("Ana <not an email>").unwrap_err();
        assert!(e.to_string().contains("must be a well formed email"), "{e}");
    }
}
