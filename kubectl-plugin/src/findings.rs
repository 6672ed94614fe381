//! What is wrong with an object, in the policy's words where the policy has them.
//!
//! - two owners: the policy's CREATE of the object refuses it (two tools' keys that are not
//!   one owner; OLM v1's labels and its controller ownerReference naming two extensions; ...):
//!   the rules judge a synthetic CREATE of the object's metadata, with lookups through the
//!   API server, and the finding is their refusal;
//! - refused on an owner change: what the object breaks as it stands (a cluster-scoped object
//!   of a namespaced owner kind, a revision annotation that is not a revision, an unreadable
//!   handover annotation; the rules crate's `standing`). The policy judges ownership changes,
//!   so the object's tool keeps writing it as it is, but its next write that changes an owner
//!   marker, or its creation again, is refused with that message;
//! - owner gone: the owner object the keys name does not exist (`lookups`).

use std::cell::RefCell;

use serde::Serialize;
use single_owner_policy::admission::{standing, validate_in};
use single_owner_policy::tools::cluster::{Cluster, Failure, Get, List};

use crate::lookups::OwnerRef;
use crate::owners::{Carried, Object, ObjectRef, OwnerId};
use crate::preset::Model;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FindingKind {
    TwoOwners,
    OwnerGone,
    RefusedOnOwnerChange,
}

impl FindingKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FindingKind::TwoOwners => "two-owners",
            FindingKind::OwnerGone => "owner-gone",
            FindingKind::RefusedOnOwnerChange => "refused-on-owner-change",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Finding {
    pub object: ObjectRef,
    pub kind: FindingKind,
    pub owners: Vec<OwnerId>,
    /// What is wrong and what to do.
    pub message: String,
}

/// What the rules said of an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judged {
    Accepted,
    Refused(Finding),
    /// Refused because a lookup failed for another reason than a missing object (forbidden,
    /// a kind not served): the policy refuses what it cannot check, but that is no finding
    /// of the object's; reported as skipped, with the lookup's words.
    Unchecked(String),
}

/// Remembers the lookups that failed for another reason than a missing object.
struct Recording<'c> {
    cluster: &'c dyn Cluster,
    failed: RefCell<Vec<String>>,
}

impl Recording<'_> {
    fn record(&self, answer: Result<Vec<u8>, String>) -> Result<Vec<u8>, String> {
        if let Err(e) = &answer
            && Failure::of(e) != Failure::NotFound
        {
            self.failed.borrow_mut().push(e.clone());
        }
        answer
    }
}

impl Cluster for Recording<'_> {
    fn get(&self, what: &Get) -> Result<Vec<u8>, String> {
        self.record(self.cluster.get(what))
    }

    fn list(&self, what: &List) -> Result<Vec<u8>, String> {
        self.record(self.cluster.list(what))
    }
}

/// What the rules refuse of the object: what it breaks as it stands first (its next owner
/// change meets it), else its CREATE (two owners).
pub fn judged(
    model: &Model,
    object: &Object,
    carried: &[Carried],
    cluster: &dyn Cluster,
) -> Judged {
    let owners: Vec<OwnerId> = carried.iter().map(|c| c.id.clone()).collect();
    let recording = Recording {
        cluster,
        failed: RefCell::new(Vec::new()),
    };
    let create = object.payload("CREATE", &model.judging);
    let (kind, message) = match standing(&create) {
        Some(message) => (FindingKind::RefusedOnOwnerChange, on_owner_change(&message)),
        None => {
            let answer = validate_in(&create, &recording);
            if answer.accepted {
                return Judged::Accepted;
            }
            let message = answer.message.unwrap_or_else(|| "refused".into());
            (FindingKind::TwoOwners, message)
        }
    };
    if let Some(failed) = recording.failed.borrow().first() {
        return Judged::Unchecked(failed.clone());
    }
    Judged::Refused(Finding {
        object: object.r.clone(),
        kind,
        owners,
        message,
    })
}

/// The words of a standing refusal: what the next owner change meets.
fn on_owner_change(refusal: &str) -> String {
    format!(
        "The policy judges ownership changes: the object is written as it is, but its next \
         write that changes an owner marker, or its creation again, is refused: {refusal}"
    )
}

/// The finding of an owner object that does not exist.
pub fn gone(object: &ObjectRef, carried: &[Carried], owner: &OwnerRef) -> Finding {
    let owners: Vec<OwnerId> = carried.iter().map(|c| c.id.clone()).collect();
    let keys = owners
        .iter()
        .map(|o| o.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    Finding {
        object: object.clone(),
        kind: FindingKind::OwnerGone,
        message: format!(
            "{} is owned by {keys}, but its owner {owner} does not exist: nothing manages the \
             object any more, and whoever recreates the owner takes it over. Delete the object \
             if its owner was removed on purpose; otherwise restore the owner, or hand the \
             object over to an owner that exists (the handover annotation), or remove its \
             owner keys (orphaning).",
            object.described(),
        ),
        owners,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::owners::carried;
    use crate::owners::tests::{all_tools, object};
    use rstest::rstest;
    use single_owner_policy::tools::cluster::Nowhere;

    /// A cluster whose HelmReleases have no `spec.releaseName`: helm-controller's release is
    /// the one its name gives.
    struct Empty;
    impl Cluster for Empty {
        fn get(&self, what: &Get) -> Result<Vec<u8>, String> {
            Ok(format!(r#"{{"metadata":{{"name":"{}"}},"spec":{{}}}}"#, what.name).into_bytes())
        }
        fn list(&self, _: &List) -> Result<Vec<u8>, String> {
            Ok(br#"{"items":[]}"#.to_vec())
        }
    }

    const OLM_KIND: &str = "olm.operatorframework.io/owner-kind";
    const OLM_NAME: &str = "olm.operatorframework.io/owner-name";
    const REVISION: &str = "olm.operatorframework.io/revision";
    const RELEASE: &str = "meta.helm.sh/release-name";
    const RELEASE_NS: &str = "meta.helm.sh/release-namespace";
    const TRACKING: &str = "argocd.argoproj.io/tracking-id";

    #[rstest]
    #[case::one_owner("ConfigMap", Some("apps"), &[(OLM_KIND, "ClusterExtension"), (OLM_NAME, "cm")], &[], None)]
    #[case::olm_v1_and_its_helm_release(
        "ConfigMap", Some("apps"), &[(OLM_KIND, "ClusterExtension"), (OLM_NAME, "cm")],
        &[(RELEASE, "cm"), (RELEASE_NS, "apps")], None)]
    #[case::olm_v1_and_another_helm_release(
        "ConfigMap", Some("apps"), &[(OLM_KIND, "ClusterExtension"), (OLM_NAME, "cm")],
        &[(RELEASE, "other"), (RELEASE_NS, "apps")], Some((FindingKind::TwoOwners, "would be created with the owners of two tools")))]
    #[case::helm_and_argocd(
        "ConfigMap", Some("apps"), &[], &[(RELEASE, "web"), (RELEASE_NS, "apps"), (TRACKING, "shop:/ConfigMap:apps/x")],
        Some((FindingKind::TwoOwners, "would be created with the owners of two tools")))]
    #[case::flux_helm_and_its_release(
        "ConfigMap", Some("apps"), &[("helm.toolkit.fluxcd.io/name", "web"), ("helm.toolkit.fluxcd.io/namespace", "apps")],
        &[(RELEASE, "web"), (RELEASE_NS, "apps")], None)]
    #[case::bad_revision(
        "ConfigMap", Some("apps"), &[(OLM_KIND, "ClusterExtension"), (OLM_NAME, "cm")], &[(REVISION, "01")],
        Some((FindingKind::RefusedOnOwnerChange, "which is not a revision")))]
    #[case::cluster_scoped_for_a_namespaced_owner_kind(
        "ClusterRole", None, &[(OLM_KIND, "Extension"), (OLM_NAME, "cm")], &[],
        Some((FindingKind::RefusedOnOwnerChange, "is cluster-scoped, but its owner kind")))]
    fn the_policy_judges_the_object(
        #[case] kind: &str,
        #[case] ns: Option<&str>,
        #[case] labels: &[(&str, &str)],
        #[case] annotations: &[(&str, &str)],
        #[case] expected: Option<(FindingKind, &str)>,
    ) {
        let model = all_tools();
        let o = object(kind, ns, "x", labels, annotations);
        let c = carried(&model, &o).unwrap();
        let found = match judged(&model, &o, &c, &Empty) {
            Judged::Refused(f) => Some(f),
            Judged::Accepted => None,
            Judged::Unchecked(why) => panic!("unchecked: {why}"),
        };
        match (found, expected) {
            (None, None) => {}
            (Some(f), Some((kind, words))) => {
                assert_eq!(f.kind, kind, "{}", f.message);
                assert!(f.message.contains(words), "{}", f.message);
                assert_eq!(f.owners.len(), c.len());
            }
            (found, expected) => panic!("found {found:?}, expected {expected:?}"),
        }
    }

    #[test]
    fn labels_and_controller_naming_two_extensions_are_two_owners() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
        let model = all_tools();
        let mut o = object(
            "ConfigMap",
            Some("apps"),
            "x",
            &[(OLM_KIND, "ClusterExtension"), (OLM_NAME, "cm")],
            &[],
        );
        o.meta.owner_references = Some(vec![OwnerReference {
            api_version: "olm.operatorframework.io/v1".into(),
            kind: "ClusterExtension".into(),
            name: "cm-copy".into(),
            uid: "u".into(),
            controller: Some(true),
            block_owner_deletion: None,
        }]);
        let c = carried(&model, &o).unwrap();
        let Judged::Refused(f) = judged(&model, &o, &c, &Empty) else {
            panic!("no finding");
        };
        assert_eq!(f.kind, FindingKind::TwoOwners);
        assert!(f.message.contains("cm-copy"), "{}", f.message);
    }

    #[test]
    fn an_owner_gone_names_the_object_its_owner_and_what_to_do() {
        let model = all_tools();
        let o = object(
            "ConfigMap",
            Some("apps"),
            "x",
            &[(OLM_KIND, "ClusterExtension"), (OLM_NAME, "cm")],
            &[],
        );
        let c = carried(&model, &o).unwrap();
        let owner = OwnerRef {
            kind: crate::lookups::OwnerKind::ClusterExtension,
            name: "cm".into(),
            namespace: None,
            controller: None,
        };
        let f = gone(&o.r, &c, &owner);
        assert_eq!(f.kind, FindingKind::OwnerGone);
        assert!(
            f.message
                .starts_with(r#"ConfigMap "x" in namespace "apps" is owned by olm-v1"#),
            "{}",
            f.message
        );
        assert!(
            f.message
                .contains(r#"ClusterExtension "cm" (olm.operatorframework.io/v1) does not exist"#),
            "{}",
            f.message
        );
    }

    #[test]
    fn a_lookup_that_fails_is_no_finding_but_unchecked() {
        let model = all_tools();
        // A release named otherwise than its HelmRelease: the rule looks the HelmRelease up.
        let o = object(
            "ConfigMap",
            Some("apps"),
            "x",
            &[
                ("helm.toolkit.fluxcd.io/name", "web"),
                ("helm.toolkit.fluxcd.io/namespace", "apps"),
            ],
            &[(RELEASE, "renamed"), (RELEASE_NS, "apps")],
        );
        let c = carried(&model, &o).unwrap();
        match judged(&model, &o, &c, &Nowhere) {
            Judged::Unchecked(why) => assert!(why.contains("no cluster"), "{why}"),
            other => panic!("{other:?}"),
        }
    }
}
