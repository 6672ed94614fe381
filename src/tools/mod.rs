//! What the policy knows of each tool's own lifecycle: the rules by which a tool moves an
//! object from one owner to the next, names one owner in two tools' keys, or writes as an
//! identity of the owner's choosing. A scheme names its tool (`tool`), an alias its tool's
//! rule (`rule`); each rule lives in the module of its tool, with the tool's source it follows.
//!
//! Only what the objects do not carry is looked up (`cluster`); these modules read plain
//! values, not the policy's owner model, which uses them.

pub mod applyset;
pub mod argocd;
pub mod cluster;
pub mod crossplane;
pub mod flux_helm;
pub mod kapp;
pub mod olm_v0;
pub mod olm_v1;

/// The tools a scheme may name, with the owner keys their rules read (each must be one of
/// the scheme's owner keys) and what naming the tool does.
pub const TOOLS: [(&str, &[&str], &str); 10] = [
    (
        "olm-v1",
        &[olm_v1::OWNER_NAME],
        "bindings may name the ClusterExtension's installer (writers.installer)",
    ),
    (
        "olm-v0",
        &[olm_v0::OWNER, olm_v0::OWNER_NAMESPACE, olm_v0::OWNER_KIND],
        "an object moves to the ClusterServiceVersion whose replacement chain holds its owner",
    ),
    ("helm", &[], "no rule of its own"),
    (
        "argocd",
        &[argocd::TRACKING_ID],
        "the owner in a tracking id is its Application",
    ),
    ("flux", &[], "no rule of its own"),
    ("flux-helm", &[], "no rule of its own"),
    (
        "applyset",
        &[applyset::PART_OF],
        "the owner is the ApplySet its id names; a refusal says where the sets' parents are",
    ),
    (
        "kapp",
        &[kapp::APP],
        "the owner is the app its label value names; a refusal says where the apps' records are",
    ),
    ("timoni", &[], "no rule of its own"),
    (
        "crossplane",
        &[crossplane::COMPOSITE],
        "the controller ownerReference is part of the owner: it moves to another composite \
         resource only by a release",
    ),
];

/// What a refusal of an owner change adds for a tool whose owner key names no object by itself
/// (an ApplySet's id, a kapp app's label value): where the current and the new owner are found.
pub fn owners_hint(tool: &str, values: &[&str]) -> Option<String> {
    match tool {
        "applyset" => Some(applyset::parents_hint(values)),
        "kapp" => Some(kapp::apps_hint(values)),
        _ => None,
    }
}

/// The rules an alias may name: the owner keys of its first scheme, then of its second, that
/// the rule reads.
pub const ALIAS_RULES: [&str; 1] = ["helm-controller"];

/// The keys of the two schemes an alias rule relates.
pub fn alias_rule_keys(rule: &str) -> Option<(&'static [&'static str], &'static [&'static str])> {
    match rule {
        "helm-controller" => Some((
            &[flux_helm::NAME, flux_helm::NAMESPACE],
            &[flux_helm::RELEASE_NAME, flux_helm::RELEASE_NAMESPACE],
        )),
        _ => None,
    }
}

/// The tools whose owners name an installer (`writers.installer`).
pub const INSTALLER_TOOLS: [&str; 1] = ["olm-v1"];

/// Whether `tool` sets a controller ownerReference on the objects it owns: OLM v1 and
/// Crossplane do (OLM v0's references to a ClusterServiceVersion are not controllers; Helm,
/// Flux, Argo CD, kubectl, kapp and Timoni set none).
pub fn sets_controller(tool: &str) -> bool {
    matches!(tool, "olm-v1" | "crossplane")
}

/// Whether an object's controller reference of `api_version` and `kind` is the one `tool` sets:
/// OLM v1's names its own kinds; Crossplane's any kind (an XR's kind is the user's), so it is
/// Crossplane's on an object that carries Crossplane's owner key (`marked`), and an OLM v1
/// kind is never an XR.
pub fn controls(tool: &str, (api_version, kind): (&str, &str), marked: bool) -> bool {
    match tool {
        "olm-v1" => olm_v1::controls(api_version, kind),
        "crossplane" => marked && !olm_v1::controls(api_version, kind),
        _ => false,
    }
}
