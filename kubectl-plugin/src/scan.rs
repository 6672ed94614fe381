//! `owners`: list, read owners, judge, look owners up, group. Every source is a parameter
//! (pages of metadata, the policy's lookups, owner lookups), so the whole scan runs in tests
//! on fakes.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use anyhow::{Context, Result};
use serde::Serialize;
use single_owner_policy::tools::cluster::Cluster;

use crate::discovery::{ResourceType, Skipped};
use crate::findings::{self, Finding, Judged};
use crate::listing::{Listed, MetadataSource, list_all};
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

/// Pages of objects with owners listed but not yet judged: the bound of the scan's memory
/// besides what it keeps of each owned object.
const PAGES_IN_FLIGHT: usize = crate::listing::CONCURRENCY;

/// What is kept of an object with owners once it is judged: its name and its owners, not
/// its metadata (memory is set by the pages in flight and these, not by the cluster).
struct Kept {
    r: owners::ObjectRef,
    /// Shared by every object with the same owners: most objects of a cluster have one of a
    /// few hundred owners, and an owner's keys are most of what an object would keep.
    owned: Arc<Owned>,
    /// Which of the scope's types it was listed as (an object served under two groups is
    /// kept as the first).
    ty: usize,
    /// What the rules said, but for an accepted object (most): a finding is rare, and large
    /// beside the rest.
    judged: Option<Box<Judged>>,
}

/// The owners objects carry, once for all the objects that carry them.
#[derive(Debug)]
struct Owned {
    carried: Vec<Carried>,
    /// The owner objects the keys name.
    named: Vec<OwnerRef>,
}

pub async fn scan<S, L, C>(
    model: Arc<Model>,
    source: &S,
    lookup: &L,
    cluster: Arc<C>,
    scope: &Scope<'_>,
    progress: &Progress,
) -> Result<Outcome>
where
    S: MetadataSource,
    L: Lookup,
    C: Cluster + Send + Sync + 'static,
{
    // Pages are judged as they arrive, on a blocking thread (the rules look up synchronously),
    // while the next pages are listed.
    let (tx, rx) = tokio::sync::mpsc::channel::<Vec<Listed>>(PAGES_IN_FLIGHT);
    // Each owner named for the first time goes to be looked up at once, while listing goes on.
    let (owners_tx, owners_rx) = tokio::sync::mpsc::unbounded_channel::<OwnerRef>();
    let judging = {
        let (model, filter) = (model.clone(), scope.filter.clone());
        let order: Vec<ResourceType> = scope.types.to_vec();
        let argocd = scope.argocd_namespace.to_string();
        tokio::task::spawn_blocking(move || {
            let judge = Judge {
                model: &model,
                filter: &filter,
                order: &order,
                argocd_namespace: &argocd,
                cluster: cluster.as_ref(),
            };
            judge.all(rx, owners_tx)
        })
    };
    let keep = |m: &_| owners::is_marked(&model, m);
    let listing = async {
        let skipped = list_all(source, scope.types, scope.namespace, &keep, &tx, progress).await;
        // The judging thread ends with the last page, and with it the owners to look up.
        drop(tx);
        skipped
    };
    let (mut skipped, found) = tokio::join!(listing, lookups::find_each(lookup, owners_rx));
    progress.finish();
    let (kept, mut findings) = judging.await.context("judging the objects failed")?;
    let mut split = Vec::with_capacity(kept.len());
    for k in &kept {
        split.push(false);
        match k.judged.as_deref() {
            None | Some(Judged::Accepted) => {}
            Some(Judged::Refused(f)) => {
                // Objects the rules found to carry two owners are listed under both.
                if let Some(last) = split.last_mut() {
                    *last = f.kind == findings::FindingKind::TwoOwners;
                }
                findings.push(f.clone());
            }
            Some(Judged::Unchecked(why)) => skipped.push(Skipped {
                what: k.r.described(),
                reason: format!("the policy's lookup failed, its owners cannot be checked: {why}"),
            }),
        }
        for r in &k.owned.named {
            if let Some(Found::Gone) = found.get(r) {
                findings.push(findings::gone(&k.r, &k.owned.carried, r));
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
    // The objects move into the groups; their owners stay shared until the groups are made.
    let owned: Vec<Arc<Owned>> = kept.iter().map(|k| k.owned.clone()).collect();
    let objects = (kept.into_iter().zip(split).zip(&owned))
        .map(|((k, split), o)| (k.r, listed_under(&model, &o.carried, split)));
    let groups = owners::group(objects, scope.filter);
    Ok(Outcome {
        owners: groups,
        findings,
        skipped,
    })
}

/// What judges the objects listed: the model, the scope, and the cluster the rules look up in.
struct Judge<'a> {
    model: &'a Model,
    filter: &'a Filter,
    order: &'a [ResourceType],
    argocd_namespace: &'a str,
    cluster: &'a dyn Cluster,
}

impl Judge<'_> {
    /// Reads the owners of each object listed and judges it, as the pages arrive; sends each
    /// owner object named for the first time to `owners`; returns the objects with owners,
    /// and the findings of unreadable metadata.
    fn all(
        &self,
        mut pages: tokio::sync::mpsc::Receiver<Vec<Listed>>,
        owners: tokio::sync::mpsc::UnboundedSender<OwnerRef>,
    ) -> (Vec<Kept>, Vec<Finding>) {
        let mut kept: Vec<Kept> = Vec::new();
        let mut findings = Vec::new();
        // One object served under two groups (Ingress under extensions/v1beta1 and
        // networking.k8s.io/v1 before Kubernetes 1.22; Events under core and events.k8s.io)
        // is listed twice, with one uid: it is kept once, as the first of the types (an
        // object listed again after an expired continue token, too).
        let mut by_uid: HashMap<String, usize> = HashMap::new();
        let mut asked: HashSet<OwnerRef> = HashSet::new();
        let mut shared: HashMap<Vec<Carried>, Arc<Owned>> = HashMap::new();
        while let Some(page) = pages.blocking_recv() {
            for l in page {
                let ty = (self.order.iter().position(|t| *t == *l.ty)).unwrap_or(usize::MAX);
                let uid = l.meta.uid.clone().filter(|u| !u.is_empty());
                let at = uid.as_ref().and_then(|u| by_uid.get(u).copied());
                if at.is_some_and(|i| kept.get(i).is_some_and(|k| k.ty <= ty)) {
                    continue;
                }
                let Some(k) = self.one(Object::from(l), ty, &mut shared, &mut findings) else {
                    continue;
                };
                for r in &k.owned.named {
                    if !asked.contains(r) {
                        asked.insert(r.clone());
                        let _ = owners.send(r.clone());
                    }
                }
                match at.and_then(|i| kept.get_mut(i)) {
                    Some(slot) => *slot = k,
                    None => {
                        if let Some(uid) = uid {
                            by_uid.insert(uid, kept.len());
                        }
                        kept.push(k);
                    }
                }
            }
        }
        (kept, findings)
    }

    /// One object: `None` when it has no owner the scope shows.
    fn one(
        &self,
        object: Object,
        ty: usize,
        shared: &mut HashMap<Vec<Carried>, Arc<Owned>>,
        findings: &mut Vec<Finding>,
    ) -> Option<Kept> {
        let carried = match owners::carried(self.model, &object) {
            Ok(c) => c,
            Err(e) => {
                // Unreadable metadata: the policy refuses every write of it.
                findings.push(Finding {
                    object: object.r.clone(),
                    kind: findings::FindingKind::RefusedOnOwnerChange,
                    owners: Vec::new(),
                    message: e,
                });
                return None;
            }
        };
        let ids: Vec<_> = carried.iter().map(|c| c.id.clone()).collect();
        if carried.is_empty() && object.controller().is_none() || !self.filter.shows(&ids) {
            return None;
        }
        let judged = match findings::judged(self.model, &object, &carried, self.cluster) {
            Judged::Accepted => None,
            other => Some(Box::new(other)),
        };
        let owned = match shared.get(&carried) {
            Some(o) => o.clone(),
            None => {
                let o = Arc::new(Owned {
                    named: lookups::named(&carried, self.argocd_namespace),
                    carried: carried.clone(),
                });
                shared.insert(carried, o.clone());
                o
            }
        };
        Some(Kept {
            r: object.r,
            owned,
            ty,
            judged,
        })
    }
}

/// The owners an object is listed under: each it carries, but where aliased schemes' keys
/// name one owner (the rules did not find two), only the alias's first scheme's.
fn listed_under<'a>(
    model: &'a Model,
    carried: &'a [Carried],
    split: bool,
) -> impl Iterator<Item = &'a owners::OwnerId> {
    (carried.iter())
        .filter(move |c| {
            split
                || !(carried.iter()).any(|lead| {
                    lead.scheme != c.scheme && model.schemes.leads(lead.scheme, c.scheme)
                })
        })
        .map(|c| &c.id)
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use crate::discovery::tests::ty;
    use crate::findings::FindingKind;
    use crate::listing::tests::{Fake, meta};
    use crate::lookups::OwnerKind;
    use crate::owners::tests::all_tools;
    use single_owner_policy::tools::cluster::Nowhere;

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
                // OLM v1's Helm applier: its release annotations name the same extension.
                annotated(
                    Some("apps"),
                    "olm-helm",
                    &olm("cm"),
                    &[
                        ("meta.helm.sh/release-name", "cm"),
                        ("meta.helm.sh/release-namespace", "apps"),
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
        // One Ingress under two groups, as before Kubernetes 1.22: one object, one uid.
        let mut ingress = annotated(Some("apps"), "web", &olm("cm"), &[]);
        ingress.uid = Some("ingress-uid".into());
        fake.objects.insert("ingresses".into(), vec![ingress]);
        let types = vec![
            ty("", "ConfigMap", "configmaps", true),
            ty("", "Namespace", "namespaces", false),
            ty("networking.k8s.io", "Ingress", "ingresses", true),
            ty("extensions", "Ingress", "ingresses", true),
        ];
        let r = |kind, name: &str, ns: Option<&str>| OwnerRef {
            kind,
            name: name.into(),
            namespace: ns.map(Into::into),
            controller: None,
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
        scan(
            Arc::new(all_tools()),
            &fake,
            &lookup,
            Arc::new(Nowhere),
            &scope,
            &Progress::hidden(),
        )
        .await
        .unwrap()
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
                ("bad-revision", FindingKind::RefusedOnOwnerChange.as_str()),
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

    #[tokio::test]
    async fn one_owner_under_aliased_schemes_is_listed_once_two_under_both() {
        let outcome = run(&Filter::default()).await;
        let under = |name: &str| -> Vec<String> {
            (outcome.owners.iter())
                .filter(|g| g.objects.iter().any(|o| o.name == name))
                .map(|g| format!("{} {:?}", g.tool, g.owner.values().collect::<Vec<_>>()))
                .collect()
        };
        // The ClusterExtension's, not also a Helm release's.
        assert_eq!(under("olm-helm"), [r#"olm-v1 ["ClusterExtension", "cm"]"#]);
        // Served under two groups, listed once.
        assert_eq!(under("web"), [r#"olm-v1 ["ClusterExtension", "cm"]"#]);
        let web = outcome
            .owners
            .iter()
            .flat_map(|g| &g.objects)
            .filter(|o| o.name == "web");
        assert_eq!(web.count(), 1);
        // Two owners: under both.
        assert_eq!(
            under("two"),
            [r#"argocd ["shop"]"#, r#"helm ["web", "apps"]"#]
        );
    }

    #[test]
    fn nothing_found_exits_zero() {
        assert_eq!(Outcome::default().exit_code(), 0);
    }
}
