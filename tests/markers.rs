//! The owner markers besides the keys (`src/rules/controller.rs`, `tools::argocd::INSTALLATION_ID`):
//! OLM v1's controller ownerReference must name the extension its labels name, boxcutter's
//! revisions looked up, and Argo CD's installation id tells two installations apart; the
//! tools' own writes of those markers pass. Through `admission::validate_in`, with the
//! presets' settings and a cluster of the tests.

use rstest::rstest;
use serde_json::{Value, json};
use single_owner_policy::admission::{self, FORBIDDEN};

#[path = "support/cluster.rs"]
mod cluster;
use cluster::Fake;

const ALL_TOOLS: &str = include_str!("support/all-tools.json");

fn olm_v1() -> Value {
    json!({"tool": "olm-v1"})
}

fn all_tools() -> Value {
    serde_json::from_str(ALL_TOOLS).unwrap()
}

fn argocd() -> Value {
    json!({"tool": "argocd", "ownerLabels": [], "ownerKindLabel": "", "revisionAnnotation": "",
        "ownerAnnotations": ["argocd.argoproj.io/tracking-id", "argocd.argoproj.io/installation-id"]})
}

/// A controller reference of `kind` (`ClusterExtension` or `ClusterObjectSet`) named `name`.
fn controller(kind: &str, name: &str) -> Value {
    json!({"apiVersion": "olm.operatorframework.io/v1", "kind": kind, "name": name,
        "uid": "u-1", "controller": true, "blockOwnerDeletion": true})
}

fn plain(kind: &str, name: &str) -> Value {
    json!({"apiVersion": "olm.operatorframework.io/v1", "kind": kind, "name": name,
        "uid": "u-0", "controller": false, "blockOwnerDeletion": true})
}

/// The metadata of an extension's CRD: labels (and Helm's annotations) for `extension`, and
/// `refs` as its ownerReferences.
fn extensions(extension: Option<&str>, refs: &[Value]) -> Value {
    let mut m = json!({"name": "widgets.example.com"});
    if let Some(e) = extension {
        m["labels"] = json!({"olm.operatorframework.io/owner-kind": "ClusterExtension",
            "olm.operatorframework.io/owner-name": e});
        m["annotations"] = json!({"meta.helm.sh/release-name": e,
            "meta.helm.sh/release-namespace": format!("{e}-system")});
    }
    if !refs.is_empty() {
        m["ownerReferences"] = Value::Array(refs.to_vec());
    }
    m
}

fn request(user: &str, old: Option<Value>, new: Value) -> Value {
    let object = |m: Value| {
        json!({"apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition", "metadata": m})
    };
    json!({"uid": "1", "kind": {"group": "apiextensions.k8s.io", "version": "v1",
        "kind": "CustomResourceDefinition"}, "name": "widgets.example.com",
        "operation": if old.is_some() { "UPDATE" } else { "CREATE" },
        "userInfo": {"username": user}, "object": object(new), "oldObject": old.map(object)})
}

const OPERATOR: &str = "system:serviceaccount:olmv1-system:operator-controller-controller-manager";
const GC: &str = "system:serviceaccount:kube-system:generic-garbage-collector";

/// Boxcutter's revisions: `<extension>-<n>`, each naming its extension in its label.
fn revisions() -> Fake {
    let revision = |name: &str, extension: &str| {
        json!({"metadata": {"name": name, "labels": {
            "olm.operatorframework.io/owner-name": extension}}})
    };
    Fake::default()
        .with("ClusterObjectSet", "a-1", None, revision("a-1", "a"))
        .with("ClusterObjectSet", "a-2", None, revision("a-2", "a"))
        .with("ClusterObjectSet", "a-1-2", None, revision("a-1-2", "a-1"))
        .with(
            "ClusterObjectSet",
            "orphan-1",
            None,
            json!({"metadata": {"name": "orphan-1"}}),
        )
}

fn judge(settings: &Value, request: Value, cluster: &Fake) -> (bool, u16, String) {
    let payload = json!({"request": request, "settings": settings}).to_string();
    let answer = admission::validate_in(payload.as_bytes(), cluster);
    (
        answer.accepted,
        answer.code.unwrap_or(200),
        answer.message.unwrap_or_default(),
    )
}

enum Expect {
    Accept,
    Refuse(&'static [&'static str]),
}
use Expect::{Accept, Refuse};

impl Expect {
    /// Asserts the answer (`judge`'s) under `settings` is the expected one.
    fn check(&self, settings: &Value, (accepted, code, message): (bool, u16, String)) {
        match self {
            Accept => assert!(accepted, "{settings}: refused: {message}"),
            Refuse(fragments) => {
                assert!(!accepted && code == FORBIDDEN, "{settings}: accepted");
                for f in *fragments {
                    assert!(message.contains(f), "{settings}: {message:?} lacks {f:?}");
                }
            }
        }
    }
}

const TWO: &[&str] = &[
    "its owner keys name [olm.operatorframework.io/owner-kind=ClusterExtension, olm.operatorframework.io/owner-name=a]",
    "but its controller ownerReference names ClusterExtension \"b\"",
    "its keys and the controller the garbage collector follows must name the same one",
];

#[rstest]
// The three cases, and boxcutter's.
#[case::controller_moved(Some(extensions(Some("a"), &[controller("ClusterExtension", "a")])),
    extensions(Some("a"), &[controller("ClusterExtension", "b")]), Refuse(TWO), &[])]
#[case::created_naming_two(None,
    extensions(Some("a"), &[controller("ClusterExtension", "b")]), Refuse(TWO), &[])]
#[case::controller_added_for_another(Some(extensions(Some("a"), &[])),
    extensions(Some("a"), &[controller("ClusterExtension", "b")]), Refuse(TWO), &[])]
#[case::revision_of_another(Some(extensions(Some("a"), &[controller("ClusterObjectSet", "a-1")])),
    extensions(Some("a"), &[controller("ClusterObjectSet", "a-1-2")]),
    Refuse(&["ClusterObjectSet \"a-1-2\" (a revision of ClusterExtension \"a-1\")"]),
    &["ClusterObjectSet a-1-2"])]
// The tools' own writes.
#[case::helm_applier_install(None, extensions(Some("a"), &[controller("ClusterExtension", "a")]), Accept, &[])]
#[case::controller_added_for_the_keys_owner(Some(extensions(Some("a"), &[])),
    extensions(Some("a"), &[controller("ClusterExtension", "a")]), Accept, &[])]
#[case::boxcutter_install(None, extensions(Some("a"), &[controller("ClusterObjectSet", "a-1")]), Accept,
    &["ClusterObjectSet a-1"])]
#[case::boxcutter_next_revision(Some(extensions(Some("a"), &[controller("ClusterObjectSet", "a-1")])),
    extensions(Some("a"), &[plain("ClusterObjectSet", "a-1"), controller("ClusterObjectSet", "a-2")]), Accept,
    &["ClusterObjectSet a-2"])]
#[case::boxcutter_archives_the_old_revision(
    Some(extensions(Some("a"), &[plain("ClusterObjectSet", "a-1"), controller("ClusterObjectSet", "a-2")])),
    extensions(Some("a"), &[controller("ClusterObjectSet", "a-2")]), Accept, &[])]
#[case::helm_applier_to_boxcutter(Some(extensions(Some("a"), &[controller("ClusterExtension", "a")])),
    extensions(Some("a"), &[plain("ClusterExtension", "a"), controller("ClusterObjectSet", "a-1")]), Accept,
    &["ClusterObjectSet a-1"])]
#[case::unchanged_costs_no_lookup(Some(extensions(Some("a"), &[controller("ClusterObjectSet", "a-1")])),
    extensions(Some("a"), &[controller("ClusterObjectSet", "a-1")]), Accept, &[])]
#[case::another_kinds_controller(Some(extensions(Some("a"), &[])),
    extensions(Some("a"), &[json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "x",
        "uid": "u", "controller": true})]), Accept, &[])]
// Without keys, the controller alone names the owner.
#[case::keyless_controller_moved(Some(extensions(None, &[controller("ClusterExtension", "a")])),
    extensions(None, &[controller("ClusterExtension", "b")]),
    Refuse(&["'s controller ownerReference names ClusterExtension \"a\", and this UPDATE would make it ClusterExtension \"b\""]),
    &[])]
// A revision that names no extension, or cannot be looked up: refused, saying why.
#[case::revision_without_extension(None, extensions(Some("a"), &[controller("ClusterObjectSet", "orphan-1")]),
    Refuse(&["ClusterObjectSet \"orphan-1\" (olm.operatorframework.io/v1) names no ClusterExtension",
        "the policy refuses what it cannot check"]), &["ClusterObjectSet orphan-1"])]
#[case::revision_not_found(None, extensions(Some("a"), &[controller("ClusterObjectSet", "a-9")]),
    Refuse(&["names no ClusterExtension: ClusterObjectSet \"a-9\" (olm.operatorframework.io/v1) does not exist. Write the controller reference"]),
    &["ClusterObjectSet a-9"])]
fn the_controller_names_the_owner_the_keys_name(
    #[case] old: Option<Value>,
    #[case] new: Value,
    #[case] expected: Expect,
    #[case] asked: &[&str],
) {
    for settings in [olm_v1(), all_tools()] {
        let cluster = revisions();
        let answer = judge(
            &settings,
            request(OPERATOR, old.clone(), new.clone()),
            &cluster,
        );
        expected.check(&settings, answer);
        assert_eq!(cluster.asked(), asked, "{settings}");
    }
}

#[test]
fn the_garbage_collector_orphans_an_object_whatever_orphaning_allows() {
    let old = Some(extensions(
        Some("a"),
        &[controller("ClusterExtension", "a")],
    ));
    let new = extensions(Some("a"), &[]);
    let strict = json!({"tool": "olm-v1", "allowOrphaning": false});
    let cluster = Fake::default();
    let (accepted, ..) = judge(&strict, request(GC, old.clone(), new.clone()), &cluster);
    assert!(accepted, "the garbage collector's orphaning refused");
    let (accepted, code, message) = judge(&strict, request(OPERATOR, old, new), &cluster);
    assert!(!accepted && code == FORBIDDEN);
    assert!(
        message.contains(
            "removes its controller ownerReference ClusterExtension \"a\", and orphaning is off"
        ),
        "{message}"
    );
    let (accepted, ..) = judge(
        &olm_v1(),
        request(
            OPERATOR,
            Some(extensions(
                Some("a"),
                &[controller("ClusterExtension", "a")],
            )),
            extensions(Some("a"), &[]),
        ),
        &cluster,
    );
    assert!(accepted, "orphaning is on by default");
}

#[test]
fn a_policy_without_olm_v1_reads_no_owner_reference() {
    // The Helm preset's settings: a controller to another extension is not its business.
    let helm = json!({"tool": "helm", "ownerLabels": [], "ownerKindLabel": "", "revisionAnnotation": "",
        "ownerAnnotations": ["meta.helm.sh/release-name", "meta.helm.sh/release-namespace"]});
    let old = Some(extensions(
        Some("a"),
        &[controller("ClusterExtension", "a")],
    ));
    let new = extensions(Some("a"), &[controller("ClusterExtension", "b")]);
    let (accepted, ..) = judge(&helm, request(OPERATOR, old, new), &Fake::default());
    assert!(accepted);
}

fn tracked(installation: Option<&str>, app: &str) -> Value {
    let mut annotations = json!({"argocd.argoproj.io/tracking-id":
        format!("{app}:apps/Deployment:prod/web")});
    if let Some(id) = installation {
        annotations["argocd.argoproj.io/installation-id"] = json!(id);
    }
    json!({"name": "web", "annotations": annotations})
}

#[rstest]
#[case::first_configured(None, Some("prod-east"), "guestbook", Accept)]
#[case::kept(Some("prod-east"), Some("prod-east"), "guestbook", Accept)]
#[case::unset_again(Some("prod-east"), None, "guestbook", Accept)]
#[case::another_installation(Some("prod-east"), Some("prod-west"), "guestbook",
    Refuse(&["is owned by [argocd.argoproj.io/installation-id=prod-east]",
        "would change its owner to [argocd.argoproj.io/installation-id=prod-west]"]))]
#[case::another_application(Some("prod-east"), Some("prod-east"), "other",
    Refuse(&["would change its owner to [argocd.argoproj.io/tracking-id=other:apps/Deployment:prod/web]"]))]
fn the_installation_id_tells_two_argo_cd_installations_apart(
    #[case] from: Option<&str>,
    #[case] to: Option<&str>,
    #[case] app: &str,
    #[case] expected: Expect,
) {
    let argocd_request = |old: Value, new: Value| {
        let object =
            |m: Value| json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": m});
        json!({"uid": "1", "kind": {"group": "apps", "version": "v1", "kind": "Deployment"},
            "name": "web", "namespace": "prod", "operation": "UPDATE",
            "userInfo": {"username": "system:serviceaccount:argocd:argocd-application-controller"},
            "object": object(new), "oldObject": object(old)})
    };
    for settings in [argocd(), all_tools()] {
        let r = argocd_request(tracked(from, "guestbook"), tracked(to, app));
        let answer = judge(&settings, r, &Fake::default());
        expected.check(&settings, answer);
    }
}

#[test]
fn an_installation_id_alone_names_no_owner() {
    let object = |m: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": m});
    let r = json!({"uid": "1", "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
        "name": "c", "namespace": "prod", "operation": "UPDATE", "userInfo": {"username": "alice"},
        "object": object(json!({"name": "c", "annotations": {"argocd.argoproj.io/installation-id": "x"}})),
        "oldObject": object(json!({"name": "c", "annotations": {"argocd.argoproj.io/installation-id": "y"}}))});
    let (accepted, ..) = judge(&argocd(), r, &Fake::default());
    assert!(
        accepted,
        "an installation id without a tracking id is no owner"
    );
}

// --- Crossplane: the composite label and the XR that controls the object (`tools::crossplane`).

fn crossplane() -> Value {
    json!({"tool": "crossplane", "ownerLabels": ["crossplane.io/composite"], "ownerKindLabel": "",
        "revisionAnnotation": "", "handoverAnnotation": "single-owner.kubewarden.io/handover-to"})
}

const CROSSPLANE: &str = "system:serviceaccount:crossplane-system:crossplane";

/// An XR's controller reference: `api_version`, `kind`, `name`, `uid`.
fn xr(api_version: &str, kind: &str, name: &str, uid: &str) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "name": name, "uid": uid,
        "controller": true, "blockOwnerDeletion": true})
}

/// A composed object's metadata: `composite` as its label (none: `None`), `refs` as its
/// ownerReferences, and `extra` labels.
fn composed(composite: Option<&str>, refs: &[Value], extra: &[(&str, &str)]) -> Value {
    let mut m = json!({"name": "widgets.example.com", "labels": {},
        "annotations": {"crossplane.io/composition-resource-name": "crd"}});
    if let Some(c) = composite {
        m["labels"]["crossplane.io/composite"] = json!(c);
    }
    for (k, v) in extra {
        m["labels"][*k] = json!(v);
    }
    if !refs.is_empty() {
        m["ownerReferences"] = Value::Array(refs.to_vec());
    }
    m
}

fn app(name: &str) -> Value {
    xr("example.org/v1", "XApp", name, &format!("uid-{name}"))
}

const MOVED: &[&str] = &[
    "'s controller ownerReference names XApp \"n1\", and this UPDATE would make it XApp \"n2\"",
    "crossplane/crossplane#5035",
];

#[rstest]
// composition_render.go RenderComposedResourceMetadata, composition_functions.go Compose
// @ crossplane/crossplane 2d040d2: what Crossplane itself writes.
#[case::composed(None, composed(Some("my-app"), &[app("my-app")], &[]), Accept)]
#[case::nested_composed_carries_the_roots_name(None,
    composed(Some("platform"), &[xr("example.org/v1", "XNetwork", "platform-45d209b69be0", "uid-n")], &[]), Accept)]
#[case::applied_again(Some(composed(Some("my-app"), &[app("my-app")], &[])),
    composed(Some("my-app"), &[app("my-app")], &[]), Accept)]
#[case::xrd_version_bump(Some(composed(Some("my-app"), &[app("my-app")], &[])),
    composed(Some("my-app"), &[xr("example.org/v2", "XApp", "my-app", "uid-my-app")], &[]), Accept)]
#[case::xr_recreated_under_its_name(Some(composed(Some("my-app"), &[app("my-app")], &[])),
    composed(Some("my-app"), &[xr("example.org/v1", "XApp", "my-app", "uid-new")], &[]), Accept)]
#[case::garbage_collection_strips_the_labels(
    Some(composed(Some("my-db"), &[app("my-db")], &[("crossplane.io/claim-name", "db"), ("crossplane.io/claim-namespace", "dev")])),
    composed(None, &[app("my-db")], &[]), Accept)]
#[case::claim_bound_later(Some(composed(Some("my-db"), &[app("my-db")], &[("crossplane.io/claim-name", "")])),
    composed(Some("my-db"), &[app("my-db")], &[("crossplane.io/claim-name", "db")]), Accept)]
#[case::usage_marks_it_in_use(Some(composed(Some("my-app"), &[app("my-app")], &[])),
    composed(Some("my-app"), &[app("my-app")], &[("crossplane.io/in-use", "true")]), Accept)]
#[case::adopted_after_an_orphaning(Some(composed(Some("my-app"), &[], &[])),
    composed(Some("my-app"), &[app("my-app")], &[]), Accept)]
#[case::unlabelled_object_adopted(Some(composed(None, &[], &[])),
    composed(Some("my-app"), &[app("my-app")], &[]), Accept)]
// Two composites, one object: before v1.15 (one field manager for all XRs) they took it back and
// forth each reconcile (crossplane/crossplane#5035, 86d9846).
#[case::two_roots_take_it_back_and_forth(Some(composed(Some("xuser-2"), &[app("xuser-2")], &[])),
    composed(Some("xuser-1"), &[app("xuser-1")], &[]),
    Refuse(&["crossplane.io/composite=xuser-2", "crossplane.io/composite=xuser-1"]))]
#[case::two_nested_composites_of_one_root(Some(composed(Some("platform"), &[app("n1")], &[])),
    composed(Some("platform"), &[app("n2")], &[]), Refuse(MOVED))]
#[case::controller_to_another_kind(Some(composed(Some("platform"), &[app("n1")], &[])),
    composed(Some("platform"), &[xr("example.org/v1", "XNet", "n1", "uid-n1")], &[]),
    Refuse(&["names XApp \"n1\", and this UPDATE would make it XNet \"n1\""]))]
fn crossplanes_owner_is_its_label_and_its_controller(
    #[case] old: Option<Value>,
    #[case] new: Value,
    #[case] expected: Expect,
) {
    for settings in [crossplane(), all_tools()] {
        let cluster = Fake::default();
        let answer = judge(
            &settings,
            request(CROSSPLANE, old.clone(), new.clone()),
            &cluster,
        );
        expected.check(&settings, answer);
        assert!(cluster.asked().is_empty(), "{settings}: looked up");
    }
}

#[test]
fn a_composites_controller_goes_alone_only_where_orphaning_is_on() {
    let old = Some(composed(Some("my-app"), &[app("my-app")], &[]));
    let new = composed(Some("my-app"), &[], &[]);
    let cluster = Fake::default();
    let (accepted, ..) = judge(
        &crossplane(),
        request(GC, old.clone(), new.clone()),
        &cluster,
    );
    assert!(accepted, "orphaning is on by default");
    let mut strict = crossplane();
    strict["allowOrphaning"] = json!(false);
    let (accepted, ..) = judge(&strict, request(GC, old.clone(), new.clone()), &cluster);
    assert!(accepted, "the garbage collector's orphaning refused");
    let (accepted, code, message) = judge(&strict, request(CROSSPLANE, old, new), &cluster);
    assert!(!accepted && code == FORBIDDEN);
    assert!(
        message.contains("removes its controller ownerReference XApp \"my-app\" and keeps its crossplane.io/composite label, and orphaning is off"),
        "{message}"
    );
}

#[test]
fn an_extensions_controller_on_a_composed_object_is_two_owners() {
    let new = composed(Some("my-app"), &[controller("ClusterExtension", "a")], &[]);
    let (accepted, code, message) =
        judge(&all_tools(), request(OPERATOR, None, new), &Fake::default());
    assert!(!accepted && code == FORBIDDEN, "{message}");
    assert!(
        message.contains("crossplane.io/composite=my-app"),
        "{message}"
    );
}
