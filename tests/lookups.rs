//! The tools' own rules that look something up (`src/tools/`), through `admission::validate_in`
//! with a cluster of the tests: what each decides, that a failed lookup is a clear 403 refusal
//! (never an acceptance), and that a rule looks up only where the object cannot decide.

use rstest::rstest;
use serde_json::{Value, json};
use single_owner_policy::admission::{self, FORBIDDEN};
use single_owner_policy::tools::cluster::Nowhere;

#[path = "support/cluster.rs"]
mod cluster;
use cluster::Fake;

const ALL_TOOLS: &str = include_str!("support/all-tools.json");

fn all_tools() -> Value {
    serde_json::from_str(ALL_TOOLS).unwrap()
}

fn request(
    op: &str,
    (kind, namespace): (&str, Option<&str>),
    user: &str,
    old: Option<Value>,
    new: Option<Value>,
) -> Value {
    let object = |m: Value| json!({"metadata": m});
    let mut r = json!({"uid": "1", "kind": {"group": "", "version": "v1", "kind": kind},
        "name": "x", "operation": op, "userInfo": {"username": user},
        "object": new.map(object), "oldObject": old.map(object)});
    if let Some(ns) = namespace {
        r["namespace"] = json!(ns);
    }
    r
}

fn judge(settings: &Value, request: Value, cluster: &Fake) -> admission_result::R {
    let payload = json!({"request": request, "settings": settings}).to_string();
    admission_result::R(admission::validate_in(payload.as_bytes(), cluster))
}

mod admission_result {
    use kubewarden_policy_sdk::response::ValidationResponse;
    pub struct R(pub ValidationResponse);

    impl R {
        pub fn accepted(&self, warning: &[&str]) {
            assert!(self.0.accepted, "refused: {:?}", self.0.message);
            let got = self.0.warnings.clone().unwrap_or_default().join("\n");
            for w in warning {
                assert!(got.contains(w), "warnings {got:?} lack {w:?}");
            }
            if warning.is_empty() {
                assert!(got.is_empty(), "unexpected warnings {got:?}");
            }
        }

        pub fn refused(&self, fragments: &[&str]) {
            assert!(!self.0.accepted, "accepted: {:?}", self.0.warnings);
            assert_eq!(self.0.code, Some(super::FORBIDDEN));
            let m = self.0.message.clone().unwrap_or_default();
            for f in fragments {
                assert!(m.contains(f), "message {m:?} lacks {f:?}");
            }
        }
    }
}

// --- OLM v0: an object moves to the CSV whose replacement chain holds its owner.

fn csv_labels(csv: &str) -> Value {
    json!({"labels": {"olm.owner": csv, "olm.owner.kind": "ClusterServiceVersion",
        "olm.owner.namespace": "cert-manager"}})
}

fn csv(name: &str, replaces: Option<&str>) -> Value {
    json!({"metadata": {"name": name, "namespace": "cert-manager"}, "spec": {"replaces": replaces}})
}

fn csvs() -> Fake {
    Fake::default()
        .with(
            "ClusterServiceVersion",
            "cm.v1",
            Some("cert-manager"),
            csv("cm.v1", None),
        )
        .with(
            "ClusterServiceVersion",
            "cm.v2",
            Some("cert-manager"),
            csv("cm.v2", Some("cm.v1")),
        )
        .with(
            "ClusterServiceVersion",
            "cm.v3",
            Some("cert-manager"),
            csv("cm.v3", Some("cm.v2")),
        )
        .with(
            "ClusterServiceVersion",
            "other.v2",
            Some("cert-manager"),
            csv("other.v2", Some("other.v1")),
        )
        .with(
            "ClusterServiceVersion",
            "fresh.v1",
            Some("cert-manager"),
            csv("fresh.v1", None),
        )
}

const OLM: &str = "system:serviceaccount:olm:olm-operator-serviceaccount";

#[rstest]
#[case::replaces("cm.v1", "cm.v2", true, &["ClusterServiceVersion cm.v2"])]
#[case::two_steps("cm.v1", "cm.v3", true, &["ClusterServiceVersion cm.v3", "ClusterServiceVersion cm.v2"])]
#[case::another_operator("cm.v1", "other.v2", false, &["ClusterServiceVersion other.v2", "ClusterServiceVersion other.v1"])]
#[case::a_fresh_install("cm.v1", "fresh.v1", false, &["ClusterServiceVersion fresh.v1"])]
#[case::backwards("cm.v2", "cm.v1", false, &["ClusterServiceVersion cm.v1"])]
fn olm_v0_moves_an_object_along_the_replacement_chain(
    #[case] from: &str,
    #[case] to: &str,
    #[case] upgrade: bool,
    #[case] asked: &[&str],
) {
    let cluster = csvs();
    let r = request(
        "UPDATE",
        ("Deployment", Some("cert-manager")),
        OLM,
        Some(csv_labels(from)),
        Some(csv_labels(to)),
    );
    let answer = judge(&all_tools(), r, &cluster);
    if upgrade {
        answer.accepted(&[]);
    } else {
        answer.refused(&[
            "(olm-v0), and this UPDATE would change its owner to",
            "does not replace the current one by olm-v0's upgrade rule",
        ]);
    }
    assert_eq!(cluster.asked(), asked);
}

#[test]
fn olm_v0_refuses_an_upgrade_it_cannot_check() {
    let cluster = Fake::default().failing("cm.v2");
    let r = request(
        "UPDATE",
        ("Deployment", Some("cert-manager")),
        OLM,
        Some(csv_labels("cm.v1")),
        Some(csv_labels("cm.v2")),
    );
    judge(&all_tools(), r, &cluster).refused(&[
        "could not be checked, and the policy refuses what it cannot check",
        "the lookup of ClusterServiceVersion \"cm.v2\" in namespace \"cert-manager\" (operators.coreos.com/v1alpha1) failed: Callback evaluation failure: connection refused",
        "Let the policy server read the kind (get and list for its service account: deploy/rbac/lookups.yaml)",
    ]);
    let r = request(
        "UPDATE",
        ("Deployment", Some("cert-manager")),
        OLM,
        Some(csv_labels("cm.v1")),
        Some(csv_labels("cm.v2")),
    );
    let payload = json!({"request": r, "settings": all_tools()}).to_string();
    let answer = admission::validate_in(payload.as_bytes(), &Nowhere);
    assert!(!answer.accepted && answer.code == Some(FORBIDDEN));
}

#[test]
fn olm_v0_finds_a_bundle_roles_csv_by_name_when_no_namespace_is_named() {
    let list = json!({"items": [{"metadata": {"name": "cm.v3", "namespace": "cert-manager"}, "spec": {"replaces": "cm.v2"}}]});
    let cluster = Fake::default().listing("metadata.name=cm.v3", list);
    let only = |csv: &str| json!({"labels": {"olm.owner": csv, "olm.managed": "true"}});
    let r = request(
        "UPDATE",
        ("ClusterRole", None),
        OLM,
        Some(only("cm.v2")),
        Some(only("cm.v3")),
    );
    judge(&all_tools(), r, &cluster).accepted(&[]);
    assert_eq!(
        cluster.asked(),
        ["list ClusterServiceVersion metadata.name=cm.v3"]
    );
}

#[test]
fn olm_v0_looks_nothing_up_but_for_a_change_of_owner() {
    let cluster = csvs();
    for (op, old) in [("CREATE", None), ("UPDATE", Some(csv_labels("cm.v1")))] {
        let r = request(
            op,
            ("Deployment", Some("cert-manager")),
            OLM,
            old,
            Some(csv_labels("cm.v1")),
        );
        judge(&all_tools(), r, &cluster).accepted(&[]);
    }
    // An OperatorGroup's role is no CSV's: no upgrade rule, no lookup.
    let og = json!({"labels": {"olm.owner": "og", "olm.owner.kind": "OperatorGroup", "olm.owner.namespace": "cert-manager"}});
    let r = request(
        "UPDATE",
        ("ClusterRole", None),
        OLM,
        Some(og),
        Some(csv_labels("cm.v2")),
    );
    judge(&all_tools(), r, &cluster).refused(&["would change its owner to"]);
    assert!(cluster.asked().is_empty(), "{:?}", cluster.asked());
}

// --- Flux helm-controller: the release a HelmRelease installs.

fn flux_helm(hr: &str, hr_ns: &str, release: &str, release_ns: &str) -> Value {
    json!({"labels": {"helm.toolkit.fluxcd.io/name": hr, "helm.toolkit.fluxcd.io/namespace": hr_ns},
        "annotations": {"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": release_ns}})
}

fn helm_releases() -> Fake {
    let hr = |name: &str, ns: &str, spec: Value| json!({"metadata": {"name": name, "namespace": ns}, "spec": spec});
    Fake::default()
        .with(
            "HelmRelease",
            "podinfo",
            Some("flux-system"),
            hr(
                "podinfo",
                "flux-system",
                json!({"releaseName": "podinfo", "targetNamespace": "apps"}),
            ),
        )
        .with(
            "HelmRelease",
            "frontend",
            Some("apps"),
            hr("frontend", "apps", json!({"releaseName": "web"})),
        )
        .with(
            "HelmRelease",
            "plain",
            Some("apps"),
            hr("plain", "apps", json!({})),
        )
}

const HC: &str = "system:serviceaccount:flux-system:helm-controller";

#[rstest]
#[case::own_namespace(flux_helm("podinfo", "apps", "podinfo", "apps"), true, &[])]
#[case::target_namespace(flux_helm("podinfo", "flux-system", "apps-podinfo", "apps"), true, &[])]
#[case::target_namespace_its_own(flux_helm("podinfo", "apps", "apps-podinfo", "apps"), true, &[])]
#[case::shortened(flux_helm("kube-prometheus-stack", "flux-system", "observability-production-eu-west-1-kube--3bcade80b604", "observability-production-eu-west-1"), true, &[])]
#[case::release_name(flux_helm("podinfo", "flux-system", "podinfo", "apps"), true, &["HelmRelease podinfo"])]
#[case::release_name_own_namespace(flux_helm("frontend", "apps", "web", "apps"), true, &["HelmRelease frontend"])]
#[case::another_release(flux_helm("plain", "apps", "web", "apps"), false, &["HelmRelease plain"])]
#[case::no_such_helm_release(flux_helm("gone", "apps", "web", "apps"), false, &["HelmRelease gone"])]
fn helm_controller_names_the_release(
    #[case] keys: Value,
    #[case] one: bool,
    #[case] asked: &[&str],
) {
    let cluster = helm_releases();
    let r = request("CREATE", ("ConfigMap", Some("apps")), HC, None, Some(keys));
    let answer = judge(&all_tools(), r, &cluster);
    match (one, asked.first()) {
        (true, _) => answer.accepted(&[]),
        (false, Some(&"HelmRelease gone")) => answer.refused(&[
            // Not found is an answer: the HelmRelease does not exist, so they are two.
            "and they name two owners: HelmRelease \"gone\" in namespace \"apps\" \
             (helm.toolkit.fluxcd.io/v2) does not exist, so no release of the tool's is named",
        ]),
        (false, _) => answer.refused(&[
            "would be created with the owners of two tools",
            "(flux-helm)",
            "(helm)",
        ]),
    }
    assert_eq!(cluster.asked(), asked);
}

#[test]
fn helm_controller_looks_nothing_up_when_the_keys_stay() {
    let cluster = Fake::default();
    let keys = flux_helm("podinfo", "flux-system", "podinfo", "apps");
    let r = request(
        "UPDATE",
        ("ConfigMap", Some("apps")),
        HC,
        Some(keys.clone()),
        Some(keys),
    );
    judge(&all_tools(), r, &cluster).accepted(&[]);
    assert!(cluster.asked().is_empty());
}

#[test]
fn helm_controller_takes_over_a_cli_release_it_installs() {
    let cluster = helm_releases();
    let cli = json!({"annotations": {"meta.helm.sh/release-name": "web", "meta.helm.sh/release-namespace": "apps"}});
    let r = request(
        "UPDATE",
        ("ConfigMap", Some("apps")),
        HC,
        Some(cli.clone()),
        Some(flux_helm("frontend", "apps", "web", "apps")),
    );
    judge(&all_tools(), r, &cluster).accepted(&[
        "adopted by owner [helm.toolkit.fluxcd.io/name=frontend",
        "which manages its owner [meta.helm.sh/release-name=web",
    ]);
    let r = request(
        "UPDATE",
        ("ConfigMap", Some("apps")),
        HC,
        Some(cli),
        Some(flux_helm("plain", "apps", "web", "apps")),
    );
    judge(&all_tools(), r, &cluster).refused(&["would give it a second owner"]);
}

// --- OLM v1: the installer a ClusterExtension names.

fn identity_settings() -> Value {
    json!({"tool": "olm-v1", "bindings": [{"writers": {
        "serviceAccounts": ["olmv1-system/operator-controller-controller-manager"], "installer": true},
        "owner": {"olm.operatorframework.io/owner-kind": "ClusterExtension"}}],
        "exemptWriters": {"serviceAccounts": ["kube-system/*"]}})
}

fn extension(name: &str) -> Value {
    json!({"labels": {"olm.operatorframework.io/owner-kind": "ClusterExtension", "olm.operatorframework.io/owner-name": name}})
}

fn extensions() -> Fake {
    let ce = |name: &str, sa: Value| json!({"metadata": {"name": name}, "spec": {"namespace": format!("{name}-system"), "serviceAccount": sa}});
    Fake::default()
        .with(
            "ClusterExtension",
            "argocd",
            None,
            ce("argocd", json!({"name": "installer"})),
        )
        .with(
            "ClusterExtension",
            "synthetic",
            None,
            ce("synthetic", json!({"name": "olm.synthetic-user"})),
        )
        .with(
            "ClusterExtension",
            "modern",
            None,
            json!({"metadata": {"name": "modern"}, "spec": {"namespace": "modern-system"}}),
        )
}

#[rstest]
#[case::operator_controller("argocd", "system:serviceaccount:olmv1-system:operator-controller-controller-manager", true, &[])]
#[case::its_installer("argocd", "system:serviceaccount:argocd-system:installer", true, &["ClusterExtension argocd"])]
#[case::the_synthetic_user("synthetic", "olm:clusterextension:synthetic", true, &["ClusterExtension synthetic"])]
#[case::another_installer("argocd", "system:serviceaccount:other-system:installer", false, &["ClusterExtension argocd"])]
#[case::another_extensions_synthetic_user("argocd", "olm:clusterextension:synthetic", false, &["ClusterExtension argocd"])]
#[case::none_named("modern", "system:serviceaccount:modern-system:installer", false, &["ClusterExtension modern"])]
#[case::garbage_collector("argocd", "system:serviceaccount:kube-system:generic-garbage-collector", true, &[])]
fn olm_v1_binds_the_extensions_installer(
    #[case] ext: &str,
    #[case] user: &str,
    #[case] bound: bool,
    #[case] asked: &[&str],
) {
    for (op, old, new) in [
        ("CREATE", None, Some(extension(ext))),
        ("UPDATE", Some(extension(ext)), Some(extension(ext))),
        ("DELETE", Some(extension(ext)), None),
    ] {
        let cluster = extensions();
        let r = request(
            op,
            ("ServiceAccount", Some("argocd-system")),
            user,
            old,
            new,
        );
        let answer = judge(&identity_settings(), r, &cluster);
        if bound {
            answer.accepted(&[]);
        } else {
            answer.refused(&["may not", "the owner's installer"]);
        }
        assert_eq!(cluster.asked(), asked, "{op}");
    }
}

#[test]
fn olm_v1_refuses_an_installer_it_cannot_look_up() {
    let cluster = Fake::default().failing("argocd");
    let r = request(
        "CREATE",
        ("ServiceAccount", Some("argocd-system")),
        "system:serviceaccount:argocd-system:installer",
        None,
        Some(extension("argocd")),
    );
    judge(&identity_settings(), r, &cluster).refused(&[
        "service account argocd-system/installer may not create it",
        "The owner's installer could not be looked up, and the policy refuses what it cannot check: the lookup of ClusterExtension \"argocd\" (olm.operatorframework.io/v1) failed",
    ]);
}

// --- Argo CD: the Application in a tracking id is the owner.

#[rstest]
#[case::destination_namespace(
    "guestbook:rbac.authorization.k8s.io/ClusterRole:prod/viewer",
    "guestbook:rbac.authorization.k8s.io/ClusterRole:staging/viewer",
    true
)]
#[case::api_group(
    "guestbook:extensions/Ingress:prod/web",
    "guestbook:networking.k8s.io/Ingress:prod/web",
    true
)]
#[case::another_application(
    "guestbook:apps/Deployment:prod/web",
    "guestbook-2:apps/Deployment:prod/web",
    false
)]
#[case::another_namespace_application(
    "team-a_web:/ConfigMap:prod/c",
    "team-b_web:/ConfigMap:prod/c",
    false
)]
fn argocd_owners_are_applications(#[case] old: &str, #[case] new: &str, #[case] same: bool) {
    let keys = |id: &str| json!({"annotations": {"argocd.argoproj.io/tracking-id": id}});
    let argocd = json!({"tool": "argocd", "ownerLabels": [], "ownerAnnotations": ["argocd.argoproj.io/tracking-id"], "ownerKindLabel": "", "revisionAnnotation": ""});
    for settings in [argocd, all_tools()] {
        let r = request(
            "UPDATE",
            ("ClusterRole", None),
            "system:serviceaccount:argocd:argocd-application-controller",
            Some(keys(old)),
            Some(keys(new)),
        );
        let answer = judge(&settings, r, &Fake::default());
        if same {
            answer.accepted(&[]);
        } else {
            answer.refused(&["would change its owner to"]);
        }
    }
}

// --- The settings of the tools' rules.

#[rstest]
#[case::unknown_tool(json!({"tool": "olm-v2"}), "tool \"olm-v2\": not a tool this policy knows")]
#[case::tool_without_its_keys(json!({"tool": "olm-v0"}), "the tool's rules read the owner key \"olm.owner\"")]
#[case::installer_without_tool(json!({"bindings": [{"writers": {"installer": true}, "owner": {"olm.operatorframework.io/owner-name": "a"}}]}), "writers.installer is true, but an installer is found on the owner by its tool's rule")]
#[case::exempt_installer(json!({"exemptWriters": {"installer": true}}), "exemptWriters.installer is true")]
#[case::unknown_rule(json!({"schemes": [{"name": "a", "ownerLabels": ["a"]}, {"name": "b", "ownerLabels": ["b"]}], "aliases": [{"schemes": ["a", "b"], "rule": "x"}]}), "aliases[0].rule \"x\": not a rule this policy knows")]
#[case::rule_without_its_keys(json!({"schemes": [{"name": "a", "ownerLabels": ["a"]}, {"name": "b", "ownerLabels": ["b"]}], "aliases": [{"schemes": ["a", "b"], "rule": "helm-controller"}]}), "\"helm.toolkit.fluxcd.io/name\" is not an owner key of scheme \"a\"")]
#[case::keys_and_rule(json!({"schemes": [{"name": "a", "ownerLabels": ["a"]}, {"name": "b", "ownerLabels": ["b"]}], "aliases": [{"schemes": ["a", "b"], "keys": {}, "rule": "helm-controller"}]}), "has both keys and rule")]
fn the_tools_settings_say_what_to_fix(#[case] settings: Value, #[case] message: &str) {
    let answer = admission::validate_settings(settings.to_string().as_bytes());
    assert!(!answer.valid);
    let got = answer.message.unwrap_or_default();
    assert!(got.contains(message), "{got:?} lacks {message:?}");
}

// --- A lookup that finds nothing is an answer (the owner does not exist, and what that means
// for the write); only a lookup that fails says the policy could not check, and what to grant.

#[rstest]
#[case::olm_v0_no_such_csv(
    all_tools(),
    request("UPDATE", ("Deployment", Some("cert-manager")), OLM, Some(csv_labels("cm.v1")), Some(csv_labels("some-other.v1.0.0"))),
    "The new owner does not replace the current one by olm-v0's upgrade rule (its replacement chain: \
     ClusterServiceVersion \"some-other.v1.0.0\" in namespace \"cert-manager\" (operators.coreos.com/v1alpha1) does not exist)"
)]
#[case::helm_controller_no_such_helm_release(
    all_tools(),
    request("CREATE", ("ConfigMap", Some("apps")), HC, None, Some(flux_helm("gone", "apps", "web", "apps"))),
    "they name two owners: HelmRelease \"gone\" in namespace \"apps\" (helm.toolkit.fluxcd.io/v2) does not exist"
)]
#[case::olm_v1_no_such_extension(
    identity_settings(),
    request("CREATE", ("ServiceAccount", Some("gone-system")), "system:serviceaccount:gone-system:installer", None, Some(extension("gone"))),
    "The owner names no installer: ClusterExtension \"gone\" (olm.operatorframework.io/v1) does not exist. \
     While it does not exist, only the writers the bindings name may write its objects."
)]
fn a_lookup_that_finds_nothing_says_the_owner_does_not_exist(
    #[case] settings: Value,
    #[case] r: Value,
    #[case] says: &str,
) {
    let cluster = csvs();
    let answer = judge(&settings, r, &cluster);
    answer.refused(&[says]);
    let message = answer.0.message.unwrap_or_default();
    for asks in ["could not be checked", "Grant", "deploy/rbac/lookups.yaml"] {
        assert!(
            !message.contains(asks),
            "{message:?} asks for a grant ({asks:?})"
        );
    }
}
