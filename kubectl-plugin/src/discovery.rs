//! Which resource types the API server serves: core and every group (CRDs and aggregated
//! APIs included), at each group's preferred version, as kubectl discovers them.
//!
//! A group whose discovery fails (an aggregated API whose backend is down, a group the user
//! may not read) is reported and skipped: one broken APIService must not stop a scan of the
//! rest of the cluster. Only `/api` and `/apis` themselves failing is fatal.

use anyhow::{Context, Result};
use futures::stream::{self, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList;
use kube::Client;
use kube::core::ApiResource;
use serde::Serialize;

/// Something the scan could not look at, and why: never fatal, always reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, PartialOrd, Ord)]
pub struct Skipped {
    /// What was skipped: an API group version, a resource type, an owner to check.
    pub what: String,
    pub reason: String,
}

/// One resource type as discovery lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceType {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub singular: String,
    pub short_names: Vec<String>,
    pub namespaced: bool,
    pub verbs: Vec<String>,
}

impl ResourceType {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The type as kube-rs addresses it.
    pub fn api_resource(&self) -> ApiResource {
        ApiResource {
            group: self.group.clone(),
            version: self.version.clone(),
            api_version: self.api_version(),
            kind: self.kind.clone(),
            plural: self.plural.clone(),
        }
    }

    pub fn can(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }

    /// `plural.group` (`deployments.apps`), as kubectl and RBAC name a type.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// Whether `name` names this type as kubectl accepts it: kind, plural, singular or short
    /// name, case-insensitively, optionally qualified by the group (`deploy.apps`).
    pub fn is_named(&self, name: &str) -> bool {
        let name = name.to_ascii_lowercase();
        let (base, group) = match name.split_once('.') {
            Some((b, g)) => (b.to_string(), Some(g.to_string())),
            None => (name, None),
        };
        if group.is_some_and(|g| g != self.group) {
            return false;
        }
        base == self.kind.to_ascii_lowercase()
            || base == self.plural
            || base == self.singular
            || self.short_names.contains(&base)
    }
}

/// The served types, and the groups that could not be discovered.
#[derive(Debug, Clone, Default)]
pub struct Discovered {
    pub types: Vec<ResourceType>,
    pub skipped: Vec<Skipped>,
}

impl Discovered {
    /// The served type of `group` and `kind` (any version: the scan uses the preferred one).
    pub fn find(&self, group: &str, kind: &str) -> Option<&ResourceType> {
        self.types
            .iter()
            .find(|t| t.group == group && t.kind == kind)
    }

    /// The type `name` names (`deploy`, `Deployment`, `deployments.apps`); core first, then
    /// the order the API server lists its groups in (its preference), as kubectl resolves.
    pub fn resolve(&self, name: &str) -> Option<&ResourceType> {
        self.types
            .iter()
            .filter(|t| !t.plural.contains('/'))
            .find(|t| t.is_named(name))
    }

    /// The types a scan lists: those with `list`, subresources left out.
    pub fn listable(&self) -> impl Iterator<Item = &ResourceType> {
        self.types
            .iter()
            .filter(|t| !t.plural.contains('/') && t.can("list"))
    }
}

/// The resource types of one group version's list.
pub fn types_of(group: &str, list: &APIResourceList) -> Vec<ResourceType> {
    let version = match list.group_version.split_once('/') {
        Some((_, v)) => v.to_string(),
        None => list.group_version.clone(),
    };
    (list.resources.iter())
        .filter(|r| !r.name.contains('/'))
        .map(|r| ResourceType {
            group: group.to_string(),
            version: version.clone(),
            kind: r.kind.clone(),
            plural: r.name.clone(),
            singular: match r.singular_name.as_str() {
                "" => r.kind.to_ascii_lowercase(),
                s => s.to_string(),
            },
            short_names: r.short_names.clone().unwrap_or_default(),
            namespaced: r.namespaced,
            verbs: r.verbs.clone(),
        })
        .collect()
}

/// Discovers every group's preferred version, several groups at once.
pub async fn discover(client: &Client) -> Result<Discovered> {
    let core = client
        .list_core_api_versions()
        .await
        .context("discovery of the core API (/api) failed")?;
    let groups = client
        .list_api_groups()
        .await
        .context("discovery of the API groups (/apis) failed")?;
    let mut wanted: Vec<(String, String)> = (core.versions.iter())
        .filter(|v| v.as_str() == "v1")
        .map(|v| (String::new(), v.clone()))
        .collect();
    for g in &groups.groups {
        if let Some(v) = g.preferred_version.as_ref().or_else(|| g.versions.first()) {
            wanted.push((g.name.clone(), v.group_version.clone()));
        }
    }
    let results: Vec<_> = stream::iter(wanted.into_iter().enumerate())
        .map(|(i, (group, gv))| async move {
            let list = if group.is_empty() {
                client.list_core_api_resources(&gv).await
            } else {
                client.list_api_group_resources(&gv).await
            };
            (i, group, gv, list)
        })
        .buffer_unordered(8)
        .collect()
        .await;
    let mut results = results;
    results.sort_by_key(|(i, ..)| *i);
    let mut out = Discovered::default();
    for (_, group, gv, list) in results {
        match list {
            Ok(list) => out.types.extend(types_of(&group, &list)),
            Err(e) => out.skipped.push(Skipped {
                what: format!("API {}", if group.is_empty() { "v1" } else { &gv }),
                reason: format!("discovery failed: {e}"),
            }),
        }
    }
    Ok(out)
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use rstest::rstest;

    pub fn ty(group: &str, kind: &str, plural: &str, namespaced: bool) -> ResourceType {
        ResourceType {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            plural: plural.into(),
            singular: kind.to_ascii_lowercase(),
            short_names: Vec::new(),
            namespaced,
            verbs: vec!["get".into(), "list".into()],
        }
    }

    #[rstest]
    #[case("deploy", true)]
    #[case("Deployment", true)]
    #[case("deployments", true)]
    #[case("deployment", true)]
    #[case("deployments.apps", true)]
    #[case("deployments.extensions", false)]
    #[case("pods", false)]
    fn a_type_is_named_as_kubectl_names_it(#[case] name: &str, #[case] named: bool) {
        let mut t = ty("apps", "Deployment", "deployments", true);
        t.short_names = vec!["deploy".into()];
        assert_eq!(t.is_named(name), named);
    }

    #[test]
    fn subresources_and_unlistable_types_are_not_scanned() {
        let mut status = ty("apps", "Deployment", "deployments/status", true);
        status.verbs = vec!["get".into(), "list".into()];
        let mut review = ty(
            "authorization.k8s.io",
            "SelfSubjectReview",
            "selfsubjectreviews",
            false,
        );
        review.verbs = vec!["create".into()];
        let d = Discovered {
            types: vec![ty("", "ConfigMap", "configmaps", true), status, review],
            skipped: Vec::new(),
        };
        let listed: Vec<_> = d.listable().map(|t| t.plural.as_str()).collect();
        assert_eq!(listed, ["configmaps"]);
    }

    #[test]
    fn a_group_versions_list_gives_its_types_and_kubectl_resolves_names_in_order() {
        let list: APIResourceList = serde_json::from_value(serde_json::json!({
            "groupVersion": "apps/v1",
            "resources": [
                {"name": "deployments", "singularName": "deployment", "namespaced": true, "kind": "Deployment",
                 "verbs": ["get", "list"], "shortNames": ["deploy"]},
                {"name": "deployments/status", "singularName": "", "namespaced": true, "kind": "Deployment", "verbs": ["get"]},
            ]
        }))
        .unwrap();
        let types = types_of("apps", &list);
        assert_eq!(types.len(), 1);
        assert_eq!(types[0].api_version(), "apps/v1");
        assert_eq!(types[0].qualified(), "deployments.apps");
        let mut core_events = ty("", "Event", "events", true);
        core_events.short_names = vec!["ev".into()];
        let d = Discovered {
            types: vec![
                core_events,
                ty("events.k8s.io", "Event", "events", true),
                types[0].clone(),
            ],
            skipped: Vec::new(),
        };
        assert_eq!(d.resolve("events").map(|t| t.group.as_str()), Some(""));
        assert_eq!(
            d.resolve("events.events.k8s.io").map(|t| t.group.as_str()),
            Some("events.k8s.io")
        );
        assert_eq!(
            d.resolve("deploy").map(|t| t.kind.as_str()),
            Some("Deployment")
        );
        assert!(d.resolve("nothing").is_none());
        assert!(d.find("apps", "Deployment").is_some());
    }
}
