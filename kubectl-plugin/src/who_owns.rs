//! `who-owns KIND/NAME`: one object's owner under each scheme, whether each exists, its
//! ownerReferences and controller chain, a handover in progress, the writers bound to its
//! owner, and its findings.

use std::collections::BTreeMap;
use std::future::Future;

use anyhow::Result;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DynamicObject};
use serde::Serialize;
use single_owner_policy::settings::Writers;

use crate::discovery::Discovered;
use crate::findings::Finding;
use crate::lookups::{self, Found, Lookup};
use crate::owners::{Carried, Object, ObjectRef, OwnerId};
use crate::preset::Model;

/// How many controllers up the chain is followed (a Pod, its ReplicaSet, its Deployment, an
/// operator's CR...).
pub const CHAIN_DEPTH: usize = 5;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WhoOwns {
    pub object: ObjectRef,
    pub owners: Vec<OwnerView>,
    pub owner_references: Vec<Reference>,
    pub controller_chain: Vec<Link>,
    pub handover: Option<Handover>,
    pub bindings: Vec<BindingView>,
    pub findings: Vec<Finding>,
}

#[derive(Debug, Clone, Serialize)]
pub struct OwnerView {
    pub owner: OwnerId,
    /// The keys' whole values (an Argo CD tracking id with its object part).
    pub values: BTreeMap<String, String>,
    pub checked: Vec<Checked>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Checked {
    pub owner: String,
    /// `exists`, `gone`, or `cannot check: ...`.
    pub found: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Reference {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub controller: bool,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Link {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub namespace: Option<String>,
    pub found: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Handover {
    pub annotation: String,
    pub value: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct BindingView {
    pub tool: String,
    /// The binding's owner patterns.
    pub owner: BTreeMap<String, String>,
    pub writers: String,
}

pub fn found_text(f: &Found) -> String {
    match f {
        Found::Exists => "exists".into(),
        Found::Gone => "gone".into(),
        Found::Unknown(why) => format!("cannot check: {why}"),
    }
}

/// Reads an object's metadata by apiVersion and kind (the controller chain).
pub trait Getter: Sync {
    fn get(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> impl Future<Output = Result<Option<(ObjectMeta, bool)>>> + Send;
}

/// The API server: the type found by discovery; `(metadata, namespaced)`.
pub struct KubeGetter<'a> {
    pub client: kube::Client,
    pub discovered: &'a Discovered,
}

impl Getter for KubeGetter<'_> {
    async fn get(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<(ObjectMeta, bool)>> {
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        let Some(ty) = self.discovered.find(group, kind) else {
            anyhow::bail!("{kind} ({api_version}) is not served");
        };
        let ar = ty.api_resource();
        let api: Api<DynamicObject> = match namespace {
            Some(ns) if ty.namespaced => Api::namespaced_with(self.client.clone(), ns, &ar),
            _ => Api::all_with(self.client.clone(), &ar),
        };
        Ok(api
            .get_metadata_opt(name)
            .await?
            .map(|m| (m.metadata, ty.namespaced)))
    }
}

/// Follows controller ownerReferences up from `meta`.
pub async fn chain<G: Getter>(getter: &G, meta: &ObjectMeta) -> Vec<Link> {
    let mut out = Vec::new();
    let mut at = meta.clone();
    for _ in 0..CHAIN_DEPTH {
        let Some(r) = (at.owner_references.iter().flatten())
            .find(|r| r.controller == Some(true))
            .cloned()
        else {
            break;
        };
        // Owner references name owners in the object's namespace (or cluster-scoped ones).
        let ns = at.namespace.clone();
        let got = getter
            .get(&r.api_version, &r.kind, ns.as_deref(), &r.name)
            .await;
        let (found, next) = match got {
            Ok(Some((m, namespaced))) => {
                let uid_ok = m.uid.as_deref().is_none_or(|u| u == r.uid);
                let found = if uid_ok {
                    "exists"
                } else {
                    "gone (another object of that name, another uid)"
                };
                (found.to_string(), Some((m, namespaced)))
            }
            Ok(None) => ("gone".into(), None),
            Err(e) => (format!("cannot check: {e:#}"), None),
        };
        out.push(Link {
            api_version: r.api_version.clone(),
            kind: r.kind.clone(),
            name: r.name.clone(),
            namespace: next.as_ref().filter(|(_, n)| *n).and(ns.clone()),
            found,
        });
        match next {
            Some((m, _)) => at = m,
            None => break,
        }
    }
    out
}

/// Whether `value` matches a binding's owner pattern: `*` is any rest, and a placeholder
/// (`{serviceAccount.namespace}`) any part, since it depends on the writer. A pattern with a
/// placeholder matches where some writer's identity would make it match.
pub fn pattern_matches(pattern: &str, value: &str) -> bool {
    // The pattern's literal parts, in order, with wildcards between them.
    let mut parts: Vec<&str> = Vec::new();
    let mut rest = pattern;
    let mut wild_end = false;
    loop {
        let next = rest.find(['*', '{']);
        match next {
            None => {
                parts.push(rest);
                break;
            }
            Some(at) => {
                parts.push(rest.get(..at).unwrap_or_default());
                let after = if rest.get(at..at + 1) == Some("*") {
                    rest.get(at + 1..)
                } else {
                    rest.get(at..)
                        .and_then(|r| r.find('}'))
                        .and_then(|end| rest.get(at + end + 1..))
                };
                rest = after.unwrap_or_default();
                if rest.is_empty() {
                    wild_end = true;
                    break;
                }
            }
        }
    }
    let Some((first, others)) = parts.split_first() else {
        return true;
    };
    let Some(mut at) = value.strip_prefix(first) else {
        return false;
    };
    if others.is_empty() {
        return wild_end || at.is_empty();
    }
    for (i, part) in others.iter().enumerate() {
        let last = i + 1 == others.len();
        if last && !wild_end {
            return at.ends_with(part);
        }
        match at.find(part) {
            Some(p) => at = at.get(p + part.len()..).unwrap_or_default(),
            None => return false,
        }
    }
    true
}

fn writers_text(w: &Writers) -> String {
    let mut parts = Vec::new();
    for (what, list) in [
        ("users", &w.users),
        ("groups", &w.groups),
        ("serviceAccounts", &w.service_accounts),
    ] {
        if !list.is_empty() {
            parts.push(format!("{what} {}", list.join(", ")));
        }
    }
    if w.installer {
        parts.push("the owner's installer".into());
    }
    if parts.is_empty() {
        "no writers".into()
    } else {
        parts.join("; ")
    }
}

/// The bindings whose owner patterns match an owner the object carries.
pub fn bindings(model: &Model, carried: &[Carried]) -> Vec<BindingView> {
    let schemes = model.settings.schemes();
    let mut out = Vec::new();
    for c in carried {
        let Some(scheme) = schemes.get(c.scheme) else {
            continue;
        };
        for b in &scheme.bindings {
            let matches = b
                .owner
                .iter()
                .all(|(k, p)| c.values.get(k).is_some_and(|v| pattern_matches(p, v)));
            if matches {
                out.push(BindingView {
                    tool: c.id.tool.clone(),
                    owner: b
                        .owner
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                    writers: writers_text(&b.writers),
                });
            }
        }
    }
    out
}

/// Everything but the lookups and findings, which the caller adds.
pub async fn describe<L: Lookup, G: Getter>(
    model: &Model,
    object: &Object,
    carried: &[Carried],
    lookup: &L,
    getter: &G,
    argocd_namespace: &str,
) -> WhoOwns {
    let mut owners = Vec::new();
    for c in carried {
        let mut checked = Vec::new();
        for r in lookups::named(std::slice::from_ref(c), argocd_namespace) {
            let found = lookup.find(&r).await;
            checked.push(Checked {
                owner: r.to_string(),
                found: found_text(&found),
            });
        }
        owners.push(OwnerView {
            owner: c.id.clone(),
            values: c.values.clone(),
            checked,
        });
    }
    let annotation = &model.settings.handover_annotation;
    let handover = (!annotation.is_empty())
        .then(|| object.meta.annotations.as_ref()?.get(annotation))
        .flatten()
        .map(|v| Handover {
            annotation: annotation.clone(),
            value: v.clone(),
        });
    WhoOwns {
        object: object.r.clone(),
        owners,
        owner_references: (object.meta.owner_references.iter().flatten())
            .map(|r| Reference {
                api_version: r.api_version.clone(),
                kind: r.kind.clone(),
                name: r.name.clone(),
                controller: r.controller == Some(true),
            })
            .collect(),
        controller_chain: chain(getter, &object.meta).await,
        handover,
        bindings: bindings(model, carried),
        findings: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::owners::carried;
    use crate::owners::tests::object;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use rstest::rstest;

    #[rstest]
    #[case("team-a-*", "team-a-web", true)]
    #[case("team-a-*", "team-b-web", false)]
    #[case("web", "web", true)]
    #[case("web", "web2", false)]
    #[case("{serviceAccount.namespace}-app", "shop-app", true)]
    #[case("{serviceAccount.namespace}-app", "shop-db", false)]
    #[case("*", "", true)]
    #[case("", "", true)]
    #[case("", "x", false)]
    fn binding_patterns(#[case] pattern: &str, #[case] value: &str, #[case] matches: bool) {
        assert_eq!(pattern_matches(pattern, value), matches);
    }

    #[test]
    fn the_bindings_of_the_owner_are_shown() {
        let model = Model::from_value(
            "x",
            serde_json::json!({"ownerAnnotations": ["meta.helm.sh/release-name"], "ownerLabels": [],
              "ownerKindLabel": "", "revisionAnnotation": "",
              "bindings": [
                {"owner": {"meta.helm.sh/release-name": "team-a-*"}, "writers": {"serviceAccounts": ["team-a/helm"]}},
                {"owner": {"meta.helm.sh/release-name": "team-b-*"}, "writers": {"users": ["bob"]}}]}),
        )
        .unwrap();
        let o = object(
            "ConfigMap",
            Some("a"),
            "x",
            &[],
            &[("meta.helm.sh/release-name", "team-a-web")],
        );
        let c = carried(&model, &o).unwrap();
        let b = bindings(&model, &c);
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].writers, "serviceAccounts team-a/helm");
    }

    struct Chain;
    impl Getter for Chain {
        async fn get(
            &self,
            _: &str,
            kind: &str,
            ns: Option<&str>,
            name: &str,
        ) -> Result<Option<(ObjectMeta, bool)>> {
            Ok(match kind {
                "ReplicaSet" => Some((
                    ObjectMeta {
                        name: Some(name.into()),
                        namespace: ns.map(Into::into),
                        owner_references: Some(vec![OwnerReference {
                            api_version: "apps/v1".into(),
                            kind: "Deployment".into(),
                            name: "web".into(),
                            uid: "d".into(),
                            controller: Some(true),
                            block_owner_deletion: None,
                        }]),
                        ..ObjectMeta::default()
                    },
                    true,
                )),
                _ => None,
            })
        }
    }

    #[tokio::test]
    async fn the_controller_chain_is_followed_up() {
        let meta = ObjectMeta {
            namespace: Some("a".into()),
            owner_references: Some(vec![OwnerReference {
                api_version: "apps/v1".into(),
                kind: "ReplicaSet".into(),
                name: "web-1".into(),
                uid: "r".into(),
                controller: Some(true),
                block_owner_deletion: None,
            }]),
            ..ObjectMeta::default()
        };
        let links = chain(&Chain, &meta).await;
        let shown: Vec<(String, String)> = links
            .iter()
            .map(|l| (l.kind.clone(), l.found.clone()))
            .collect();
        assert_eq!(
            shown,
            [
                ("ReplicaSet".to_string(), "exists".to_string()),
                ("Deployment".to_string(), "gone".to_string())
            ]
        );
    }

    #[tokio::test]
    async fn an_object_is_described_with_its_owners_checked_and_its_handover() {
        let model = crate::owners::tests::all_tools();
        let o = object(
            "ConfigMap",
            Some("apps"),
            "x",
            &[],
            &[
                ("meta.helm.sh/release-name", "web"),
                ("meta.helm.sh/release-namespace", "apps"),
                (
                    "single-owner.kubewarden.io/handover-to",
                    "argocd.argoproj.io/tracking-id=shop",
                ),
            ],
        );
        let c = carried(&model, &o).unwrap();
        let lookup = crate::lookups::tests::Fake::default();
        let w = describe(&model, &o, &c, &lookup, &Chain, "argocd").await;
        assert_eq!(w.owners.len(), 1);
        assert_eq!(w.owners[0].checked[0].found, "gone");
        let h = w.handover.clone().expect("a handover");
        assert_eq!(h.value, "argocd.argoproj.io/tracking-id=shop");
        assert!(w.controller_chain.is_empty());
        let text = crate::output::who_owns_table(&w);
        assert!(text.contains("(in progress)"), "{text}");
    }
}
