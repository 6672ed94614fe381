//! `owners`: list, read owners, judge, look owners up, group. Every source is a parameter
//! (pages of metadata, the policy's lookups, owner lookups), so the whole scan runs in tests
//! on fakes.

use std::collections::BTreeSet;
use std::sync::Arc;

use anyhow::{Context, Result};
use serde::Serialize;
use single_owner_policy::cluster::Cluster;

use crate::discovery::{ResourceType, Skipped};
use crate::findings::{self, Finding, Judged};
use crate::listing::{MetadataSource, list_all};
use crate::lookups::{self, Found, Lookup, OwnerRef};
use crate::owners::{self, Carried, Filter, Object, OwnerGroup};
use crate::preset::Model;
use crate::progress::Progress;

/// What a scan found: printed as one object by `-o json` and `-o yaml`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Outcome {
    pub owners: Vec<OwnerGroup>,
    pub findings: Vec<Finding>,
    pub skipped: Vec<Skipped>,
}

impl Outcome {
    /// The exit code: 0 when nothing was found, 1 with findings.
    pub fn exit_code(&self) -> u8 {
        if self.findings.is_empty() { 0 } else { 1 }
    }
}

/// Where and what a scan looks at.
pub struct Scope<'a> {
    pub types: &'a [ResourceType],
    pub namespace: Option<&'a str>,
    pub filter: &'a Filter,
    pub argocd_namespace: &'a str,
}

/// An object with its owners, as judged.
pub struct Scanned {
    pub object: Object,
    pub carried: Vec<Carried>,
}

pub async fn scan<S, L, C>(
    model: Arc<Model>,
    source: &S,
    lookup: &L,
    cluster: Arc<C>,
    scope: &Scope<'_>,
    progress: &Progress,
) -> Result<(Outcome, Vec<Scanned>)>
where
    S: MetadataSource,
    L: Lookup,
    C: Cluster + Send + Sync + 'static,
{
    let keep = |m: &_| owners::is_marked(&model, m);
    let (listed, mut skipped) =
        list_all(source, scope.types, scope.namespace, &keep, progress).await;
    progress.finish();
    let mut scanned = Vec::new();
    let mut findings = Vec::new();
    for l in &listed {
        let object = Object::of(l);
        let carried = match owners::carried(&model, &object) {
            Ok(c) => c,
            Err(e) => {
                // Unreadable metadata: the policy refuses every write of it.
                findings.push(Finding {
                    object: object.r.clone(),
                    kind: findings::FindingKind::RefusedOnNextWrite,
                    owners: Vec::new(),
                    message: e,
                });
                continue;
            }
        };
        let ids: Vec<_> = carried.iter().map(|c| c.id.clone()).collect();
        if carried.is_empty() && object.controller().is_none() || !scope.filter.shows(&ids) {
            continue;
        }
        scanned.push(Scanned { object, carried });
    }
    // The rules look up synchronously: judge on a blocking thread.
    let judged = {
        let model = model.clone();
        let work: Vec<(Object, Vec<Carried>)> = (scanned.iter())
            .map(|s| (s.object.clone(), s.carried.clone()))
            .collect();
        tokio::task::spawn_blocking(move || {
            (work.iter())
                .map(|(o, c)| {
                    (
                        o.r.clone(),
                        findings::judged(&model, o, c, cluster.as_ref()),
                    )
                })
                .collect::<Vec<_>>()
        })
        .await
        .context("judging the objects failed")?
    };
    for (object, judged) in judged {
        match judged {
            Judged::Accepted => {}
            Judged::Refused(f) => findings.push(f),
            Judged::Unchecked(why) => skipped.push(Skipped {
                what: object.described(),
                reason: format!("the policy's lookup failed, its owners cannot be checked: {why}"),
            }),
        }
    }
    let named: Vec<Vec<OwnerRef>> = (scanned.iter())
        .map(|s| lookups::named(&s.carried, scope.argocd_namespace))
        .collect();
    let all: BTreeSet<OwnerRef> = named.iter().flatten().cloned().collect();
    let found = lookups::find_all(lookup, all).await;
    for (s, refs) in scanned.iter().zip(&named) {
        for r in refs {
            if let Some(Found::Gone) = found.get(r) {
                findings.push(findings::gone(&s.object.r, &s.carried, r));
            }
        }
    }
    for (r, f) in &found {
        if let Found::Unknown(why) = f {
            skipped.push(Skipped {
                what: format!("owner {r}"),
                reason: format!("cannot check: {why}"),
            });
        }
    }
    findings.sort();
    findings.dedup();
    skipped.sort();
    skipped.dedup();
    let owned: Vec<(owners::ObjectRef, Vec<owners::OwnerId>)> = (scanned.iter())
        .map(|s| {
            (
                s.object.r.clone(),
                s.carried.iter().map(|c| c.id.clone()).collect(),
            )
        })
        .collect();
    let groups = owners::group(
        owned.iter().map(|(r, ids)| (r, ids.as_slice())),
        scope.filter,
    );
    Ok((
        Outcome {
            owners: groups,
            findings,
            skipped,
        },
        scanned,
    ))
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use crate::discovery::tests::ty;
    use crate::findings::FindingKind;
    use crate::listing::tests::{Fake, meta};
    use crate::lookups::OwnerKind;
    use crate::owners::tests::all_tools;
    use single_owner_policy::cluster::Nowhere;

    fn annotated(
        ns: Option<&str>,
        name: &str,
        labels: &[(&str, &str)],
        annotations: &[(&str, &str)],
    ) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        let mut m = meta(ns, name, labels);
        m.annotations = Some(
            annotations
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        m
    }

    /// A cluster of several tools' objects with one finding of each kind planted.
    pub fn planted() -> (Fake, Vec<ResourceType>, lookups::tests::Fake) {
        let mut fake = Fake {
            page_size: 2,
            ..Fake::default()
        };
        fn olm(name: &str) -> [(&'static str, &str); 2] {
            [
                ("olm.operatorframework.io/owner-kind", "ClusterExtension"),
                ("olm.operatorframework.io/owner-name", name),
            ]
        }
        fake.objects.insert(
            "configmaps".into(),
            vec![
                annotated(Some("apps"), "olm-ok", &olm("cm"), &[]),
                annotated(Some("apps"), "plain", &[("app", "x")], &[]),
                annotated(
                    Some("apps"),
                    "helm-ok",
                    &[],
                    &[
                        ("meta.helm.sh/release-name", "web"),
                        ("meta.helm.sh/release-namespace", "apps"),
                    ],
                ),
                annotated(
                    Some("apps"),
                    "two",
                    &[],
                    &[
                        ("meta.helm.sh/release-name", "web"),
                        ("meta.helm.sh/release-namespace", "apps"),
                        ("argocd.argoproj.io/tracking-id", "shop:/ConfigMap:apps/two"),
                    ],
                ),
                annotated(Some("apps"), "orphan", &olm("gone"), &[]),
                annotated(
                    Some("apps"),
                    "bad-revision",
                    &olm("cm"),
                    &[("olm.operatorframework.io/revision", "x")],
                ),
            ],
        );
        fake.objects
            .insert("namespaces".into(), vec![meta(None, "apps", &[])]);
        let types = vec![
            ty("", "ConfigMap", "configmaps", true),
            ty("", "Namespace", "namespaces", false),
        ];
        let r = |kind, name: &str, ns: Option<&str>| OwnerRef {
            kind,
            name: name.into(),
            namespace: ns.map(Into::into),
        };
        let lookup = lookups::tests::Fake {
            exists: vec![
                r(OwnerKind::ClusterExtension, "cm", None),
                r(OwnerKind::HelmReleaseStorage, "web", Some("apps")),
            ],
            unserved: vec![OwnerKind::Application],
            ..Default::default()
        };
        (fake, types, lookup)
    }

    pub async fn run(filter: &Filter) -> Outcome {
        let (fake, types, lookup) = planted();
        let scope = Scope {
            types: &types,
            namespace: None,
            filter,
            argocd_namespace: "argocd",
        };
        let (outcome, _) = scan(
            Arc::new(all_tools()),
            &fake,
            &lookup,
            Arc::new(Nowhere),
            &scope,
            &Progress::hidden(),
        )
        .await
        .unwrap();
        outcome
    }

    #[tokio::test]
    async fn every_planted_finding_is_found_and_nothing_else() {
        let outcome = run(&Filter::default()).await;
        let found: Vec<(&str, &str)> = (outcome.findings.iter())
            .map(|f| (f.object.name.as_str(), f.kind.as_str()))
            .collect();
        assert_eq!(
            found,
            [
                ("bad-revision", FindingKind::RefusedOnNextWrite.as_str()),
                ("orphan", FindingKind::OwnerGone.as_str()),
                ("two", FindingKind::TwoOwners.as_str()),
            ]
        );
        assert_eq!(outcome.exit_code(), 1);
        // Argo CD's Application is not served: its owner cannot be checked, not a finding.
        assert!(
            outcome
                .skipped
                .iter()
                .any(|s| s.what.contains("Application") && s.reason.contains("not served")),
            "{:?}",
            outcome.skipped
        );
        let tools: Vec<&str> = outcome.owners.iter().map(|g| g.tool.as_str()).collect();
        assert_eq!(tools, ["argocd", "helm", "olm-v1", "olm-v1"]);
    }

    #[tokio::test]
    async fn a_filter_keeps_one_tools_objects() {
        let filter = Filter {
            tool: Some("helm".into()),
            keys: Vec::new(),
        };
        let outcome = run(&filter).await;
        assert!(outcome.owners.iter().all(|g| g.tool == "helm"));
        let found: Vec<&str> = outcome
            .findings
            .iter()
            .map(|f| f.object.name.as_str())
            .collect();
        assert_eq!(found, ["two"]);
    }

    #[test]
    fn nothing_found_exits_zero() {
        assert_eq!(Outcome::default().exit_code(), 0);
    }
}
