//! The policy's settings: the whole schema in one struct, and its validation.
//!
//! `{}` (or no settings at all) means the OLM v1 defaults. Unknown keys are refused
//! rather than ignored: a typo such as `ownerLabel` would otherwise silently leave
//! the defaults in force and protect the wrong keys.

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserializer, MapAccess, Visitor};

/// OLM v1 (operator-controller) stamps these labels on every object a
/// `ClusterExtension` manages.
pub const OLM_OWNER_KIND_LABEL: &str = "olm.operatorframework.io/owner-kind";
pub const OLM_OWNER_NAME_LABEL: &str = "olm.operatorframework.io/owner-name";
/// OLM v1's boxcutter applier stamps this annotation with the revision number of the
/// ClusterExtension revision that wrote the object (a decimal that only grows).
pub const OLM_REVISION_ANNOTATION: &str = "olm.operatorframework.io/revision";
/// The service accounts of kube-controller-manager's garbage collector and namespace
/// controller (with `--use-service-account-credentials`, as kubeadm and most distributions run
/// it): they delete, and remove finalizers and owner references from, what owners leave.
pub const DEFAULT_EXEMPT_SERVICE_ACCOUNTS: [&str; 2] = [
    "kube-system/generic-garbage-collector",
    "kube-system/namespace-controller",
];

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// Label keys whose values, together with `owner_annotations`, form the owner.
    pub owner_labels: Vec<String>,
    /// Annotation keys that are part of the owner (Helm keeps its release there).
    pub owner_annotations: Vec<String>,
    /// Label naming the owner's kind; empty turns the scope rules off.
    pub owner_kind_label: String,
    /// Owner kinds that may own cluster-scoped objects.
    pub cluster_scoped_owner_kinds: Vec<String>,
    /// Label naming a namespaced owner's namespace; empty turns namespace confinement off.
    pub owner_namespace_label: String,
    /// Whether an unowned object may gain an owner on UPDATE.
    pub allow_adoption: bool,
    /// Whether an owned object may lose its owner on UPDATE.
    pub allow_orphaning: bool,
    /// Annotation holding the owner's revision, a fencing token: within one owner, an
    /// UPDATE may not lower it. Empty turns revision fencing off.
    pub revision_annotation: String,
    /// Annotation through which the current owner names its successor, so that the
    /// successor can take the object in one write. Empty (the default) turns handover off.
    pub handover_annotation: String,
    /// Which writers may write the objects of which owners (see `identity`). Empty (the
    /// default) turns the identity rules off.
    pub bindings: Vec<Binding>,
    /// Writers that pass the identity rules: they delete or clean up what owners leave.
    pub exempt_writers: Writers,
    /// The stamping policy (a second, mutating policy): add the owner keys of the one owner a
    /// writer is bound to, where missing, and judge nothing else.
    pub stamp: bool,
}

/// Who writes: API server identities, as a request's `userInfo` names them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Writers {
    /// Usernames, exactly (`alice`, `system:kube-controller-manager`).
    pub users: Vec<String>,
    /// Groups, exactly (`system:serviceaccounts:team-a`).
    pub groups: Vec<String>,
    /// Service accounts as `namespace/name`; `*` for any namespace or any name.
    pub service_accounts: Vec<String>,
}

/// One binding: these writers may write the objects of the owners `owner` describes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Binding {
    pub writers: Writers,
    /// Owner keys and their values; a key not listed may have any value. A value may end in
    /// `*` (any rest) and take parts of the writer's identity: `{serviceAccount.namespace}`,
    /// `{serviceAccount.name}`, `{username}`.
    pub owner: OwnerValues,
}

/// A binding's owner keys and values, in the order written. A key given twice is refused:
/// with a duplicate, the last value must not win silently.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OwnerValues(pub Vec<(String, String)>);

impl OwnerValues {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &String)> {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

impl<'de> Deserialize<'de> for OwnerValues {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct PairsVisitor;
        impl<'de> Visitor<'de> for PairsVisitor {
            type Value = OwnerValues;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of owner keys to values")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OwnerValues, A::Error> {
                let mut pairs: Vec<(String, String)> = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, String>()? {
                    if pairs.iter().any(|(k, _)| *k == key) {
                        return Err(serde::de::Error::custom(format!(
                            "the owner key {key:?} is given twice in a binding"
                        )));
                    }
                    pairs.push((key, value));
                }
                Ok(OwnerValues(pairs))
            }
        }
        d.deserialize_map(PairsVisitor)
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            owner_labels: vec![OLM_OWNER_KIND_LABEL.into(), OLM_OWNER_NAME_LABEL.into()],
            owner_annotations: Vec::new(),
            owner_kind_label: OLM_OWNER_KIND_LABEL.into(),
            cluster_scoped_owner_kinds: vec!["ClusterExtension".into()],
            owner_namespace_label: String::new(),
            allow_adoption: true,
            allow_orphaning: true,
            revision_annotation: OLM_REVISION_ANNOTATION.into(),
            handover_annotation: String::new(),
            bindings: Vec::new(),
            exempt_writers: Writers {
                service_accounts: DEFAULT_EXEMPT_SERVICE_ACCOUNTS.map(String::from).to_vec(),
                ..Writers::default()
            },
            stamp: false,
        }
    }
}

impl Settings {
    /// Parses settings JSON as the host sends it; `null` means the defaults.
    pub fn from_json(json: &[u8]) -> Result<Settings, String> {
        let text =
            std::str::from_utf8(json).map_err(|e| format!("settings are not valid UTF-8: {e}"))?;
        serde_json::from_str::<Option<ObjectOnly<Settings>>>(text)
            .map(|s| s.map(|ObjectOnly(s)| s).unwrap_or_default())
            .map_err(|e| format!("settings cannot be read: {e}"))
    }

    /// Checks everything the rules rely on; the message names the field and what to fix.
    pub fn validate(&self) -> Result<(), String> {
        if self.owner_labels.is_empty() && self.owner_annotations.is_empty() {
            return Err(
                "no owner keys: set ownerLabels and/or ownerAnnotations to the keys \
                        that name an object's owner"
                    .into(),
            );
        }
        check_key_list("ownerLabels", &self.owner_labels)?;
        check_key_list("ownerAnnotations", &self.owner_annotations)?;
        if let Some((i, key)) =
            (self.owner_annotations.iter().enumerate()).find(|(_, k)| self.owner_labels.contains(k))
        {
            return Err(format!(
                "ownerAnnotations[{i}] {key:?} is also listed in ownerLabels: an owner key is \
                 either a label or an annotation, list it once"
            ));
        }
        self.check_annotation_setting(
            "revisionAnnotation",
            &self.revision_annotation,
            "the revision changes with every rollout, so it cannot be part of the owner",
        )?;
        self.check_annotation_setting(
            "handoverAnnotation",
            &self.handover_annotation,
            "the successor it names cannot be part of the owner",
        )?;
        if !self.handover_annotation.is_empty()
            && self.handover_annotation == self.revision_annotation
        {
            return Err(format!(
                "handoverAnnotation and revisionAnnotation are both {:?}: one annotation \
                 cannot hold both a revision and a successor, use two keys",
                self.handover_annotation
            ));
        }
        if !self.owner_kind_label.is_empty() {
            check_qualified_name(&self.owner_kind_label)
                .map_err(|e| format!("ownerKindLabel {:?}: {e}", self.owner_kind_label))?;
        }
        if !self.owner_namespace_label.is_empty() {
            check_qualified_name(&self.owner_namespace_label).map_err(|e| {
                format!("ownerNamespaceLabel {:?}: {e}", self.owner_namespace_label)
            })?;
            if self.owner_kind_label.is_empty() {
                return Err(
                    "ownerNamespaceLabel is set but ownerKindLabel is empty, which \
                            turns the scope rules off: set ownerKindLabel, or leave \
                            ownerNamespaceLabel empty"
                        .into(),
                );
            }
        }
        for (i, kind) in self.cluster_scoped_owner_kinds.iter().enumerate() {
            if kind.is_empty() {
                return Err(format!(
                    "clusterScopedOwnerKinds[{i}] is empty: list owner kinds such as \
                     \"ClusterExtension\", or remove the empty entry"
                ));
            }
            check_label_value(kind)
                .map_err(|e| format!("clusterScopedOwnerKinds[{i}] {kind:?} {e}"))?;
        }
        self.check_bindings()
    }

    /// Bindings name owner keys, writers that exist, and values that can match; stamping
    /// needs bindings to stamp from.
    fn check_bindings(&self) -> Result<(), String> {
        for (i, binding) in self.bindings.iter().enumerate() {
            let at = format!("bindings[{i}]");
            binding.writers.check(&format!("{at}.writers"))?;
            if binding.writers.is_empty() {
                return Err(format!(
                    "{at}.writers is empty: list the users, groups or serviceAccounts that may \
                     write this owner's objects"
                ));
            }
            if binding.owner.is_empty() {
                return Err(format!(
                    "{at}.owner is empty: name at least one owner key and its value (a binding \
                     on no key would cover every owned object)"
                ));
            }
            for (key, value) in binding.owner.iter() {
                if !self.owner_keys().any(|k| k == key) {
                    return Err(format!(
                        "{at}.owner {key:?} is not an owner key: bind owner keys only ({})",
                        self.owner_keys()
                            .map(String::as_str)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                let pattern = crate::identity::Pattern::parse(value)
                    .map_err(|e| format!("{at}.owner {key:?} value {value:?}: {e}"))?;
                if pattern.needs_service_account()
                    && !(binding.writers.users.is_empty() && binding.writers.groups.is_empty())
                {
                    return Err(format!(
                        "{at}.owner {key:?} value {value:?} takes a part of a service account, \
                         which users and groups do not have: list only serviceAccounts in \
                         {at}.writers, or use a binding of their own for the users and groups"
                    ));
                }
            }
        }
        self.exempt_writers.check("exemptWriters")?;
        if self.stamp && self.bindings.is_empty() {
            return Err(
                "stamp is true but there are no bindings: stamping adds the owner keys of the \
                 owner a writer is bound to, so list bindings (the same as the validating \
                 policy's)"
                    .into(),
            );
        }
        Ok(())
    }

    /// A key setting other than the owner keys: empty (off), or a qualified name that is
    /// not one of the owner keys.
    fn check_annotation_setting(&self, field: &str, key: &str, why: &str) -> Result<(), String> {
        if key.is_empty() {
            return Ok(());
        }
        check_qualified_name(key).map_err(|e| format!("{field} {key:?}: {e}"))?;
        let (list, i) = match (
            self.owner_labels.iter().position(|k| k == key),
            self.owner_annotations.iter().position(|k| k == key),
        ) {
            (Some(i), _) => ("ownerLabels", i),
            (None, Some(i)) => ("ownerAnnotations", i),
            (None, None) => return Ok(()),
        };
        Err(format!(
            "{field} {key:?} is also an owner key ({list}[{i}]): {why}; use a key of its own, \
             or \"\" to turn it off"
        ))
    }

    /// How many keys make up an owner: the labels, then the annotations.
    pub fn owner_key_count(&self) -> usize {
        self.owner_labels.len() + self.owner_annotations.len()
    }

    /// The owner keys, in owner order: the labels, then the annotations.
    pub fn owner_keys(&self) -> impl Iterator<Item = &String> {
        self.owner_labels.iter().chain(&self.owner_annotations)
    }

    pub fn is_cluster_scoped_owner_kind(&self, kind: &str) -> bool {
        self.cluster_scoped_owner_kinds.iter().any(|k| k == kind)
    }
}

impl Writers {
    pub fn is_empty(&self) -> bool {
        self.users.is_empty() && self.groups.is_empty() && self.service_accounts.is_empty()
    }

    fn check(&self, at: &str) -> Result<(), String> {
        for (field, list) in [("users", &self.users), ("groups", &self.groups)] {
            for (i, name) in list.iter().enumerate() {
                if name.is_empty() {
                    return Err(format!("{at}.{field}[{i}] is empty: remove it"));
                }
            }
        }
        for (i, sa) in self.service_accounts.iter().enumerate() {
            let Some((namespace, name)) = crate::identity::split_at_byte(sa, b'/') else {
                return Err(format!(
                    "{at}.serviceAccounts[{i}] {sa:?} is not namespace/name (e.g. \
                     \"team-a/deployer\", \"team-a/*\" or \"*/flux-reconciler\")"
                ));
            };
            let part = |what: &str, value: &str, max: usize| {
                if value == "*" || (value.len() <= max && is_dns_subdomain(value.as_bytes())) {
                    Ok(())
                } else {
                    Err(format!(
                        "{at}.serviceAccounts[{i}] {sa:?}: the {what} {value:?} is not a \
                         Kubernetes name (lowercase alphanumerics, '-' and '.') or \"*\""
                    ))
                }
            };
            part("namespace", namespace, 63)?;
            part("name", name, 253)?;
        }
        Ok(())
    }
}

/// Deserializes settings from a JSON object only. serde's derive also builds structs from
/// arrays, field by field in order; settings given as an array are a mistake to report.
struct ObjectOnly<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for ObjectOnly<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ObjectVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
            type Value = T;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(ObjectVisitor(PhantomData))
            .map(ObjectOnly)
    }
}

fn check_key_list(field: &str, keys: &[String]) -> Result<(), String> {
    for (i, key) in keys.iter().enumerate() {
        check_qualified_name(key).map_err(|e| format!("{field}[{i}] {key:?}: {e}"))?;
        if keys[..i].contains(key) {
            return Err(format!(
                "{field}[{i}] {key:?} is listed twice: remove the duplicate"
            ));
        }
    }
    Ok(())
}

/// A Kubernetes qualified name (label and annotation keys): an optional DNS-subdomain
/// prefix of at most 253 characters and a `/`, then a name of at most 63 characters.
///
/// policy-server 1.31 serves every request on a fresh instance, so there the settings are
/// validated with every request (see `admission`): each part is checked in one loop over its
/// bytes, without `str::split` (a searcher per part in WebAssembly).
pub fn check_qualified_name(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.bytes().position(|c| c == b'/') {
        // '/' is ASCII, so both sides are on character boundaries.
        Some(slash) => (key.get(..slash), key.get(slash + 1..).unwrap_or_default()),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        if prefix.is_empty() {
            return Err("the prefix before '/' is empty: write prefix/name, or name alone".into());
        }
        check_dns_subdomain(prefix).map_err(|e| format!("prefix {prefix:?} {e}"))?;
    }
    if name.is_empty() {
        return Err("the name part is empty: a key needs a name such as \"owner-name\"".into());
    }
    if name.len() > 63 {
        return Err(format!(
            "the name part is {} characters long, at most 63 are allowed",
            name.len()
        ));
    }
    if !is_name_part(name) {
        return Err(
            "the name part must consist of alphanumerics, '-', '_' or '.', and start \
                    and end with an alphanumeric (e.g. \"owner-name\"; only one '/' is allowed)"
                .into(),
        );
    }
    Ok(())
}

/// A label value: empty, or a name part of at most 63 characters.
fn check_label_value(value: &str) -> Result<(), String> {
    if value.len() > 63 || !is_name_part(value) {
        return Err(
            "is not a valid label value: at most 63 alphanumerics, '-', '_' or '.', \
                    starting and ending with an alphanumeric"
                .into(),
        );
    }
    Ok(())
}

fn is_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

fn check_dns_subdomain(s: &str) -> Result<(), String> {
    if s.len() > 253 {
        return Err(format!(
            "is {} characters long, at most 253 are allowed",
            s.len()
        ));
    }
    if is_dns_subdomain(s.as_bytes()) {
        Ok(())
    } else {
        Err(
            "is not a DNS subdomain: lowercase alphanumerics, '-' and '.', each dot-separated \
             part starting and ending with an alphanumeric (e.g. \"example.com\")"
                .into(),
        )
    }
}

/// Dot-separated labels of lowercase alphanumerics and '-', each starting and ending with
/// an alphanumeric: the first and last bytes are lowercase alphanumerics, and so is the byte
/// before each '.'; the byte after a '.' is then checked as the one before the next '.' or as
/// the last, and a '-' may not follow a '.'.
fn is_dns_subdomain(b: &[u8]) -> bool {
    let (Some(&first), Some(&last)) = (b.first(), b.last()) else {
        return false;
    };
    let mut prev = first;
    is_lower_alnum(first)
        && is_lower_alnum(last)
        && b.iter().skip(1).all(|&c| {
            let ok = match c {
                b'-' => prev != b'.',
                b'.' => is_lower_alnum(prev),
                c => is_lower_alnum(c),
            };
            prev = c;
            ok
        })
}

fn is_lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[test]
    fn empty_settings_are_the_olm_defaults() {
        let s = Settings::from_json(b"{}").unwrap();
        assert_eq!(s, Settings::default());
        assert_eq!(Settings::from_json(b"null").unwrap(), Settings::default());
        assert_eq!(s.owner_labels, [OLM_OWNER_KIND_LABEL, OLM_OWNER_NAME_LABEL]);
        assert_eq!(s.owner_kind_label, OLM_OWNER_KIND_LABEL);
        assert_eq!(s.cluster_scoped_owner_kinds, ["ClusterExtension"]);
        assert!(s.owner_annotations.is_empty() && s.owner_namespace_label.is_empty());
        assert!(s.allow_adoption && s.allow_orphaning);
        assert_eq!(s.revision_annotation, OLM_REVISION_ANNOTATION);
        assert!(s.handover_annotation.is_empty());
        assert!(s.validate().is_ok());
    }

    #[rstest]
    #[case::helm(r#"{"ownerLabels":[],"ownerAnnotations":["meta.helm.sh/release-name","meta.helm.sh/release-namespace"],"ownerKindLabel":""}"#)]
    #[case::argo(r#"{"ownerLabels":["app.kubernetes.io/instance"],"ownerKindLabel":""}"#)]
    #[case::flux(r#"{"ownerLabels":["kustomize.toolkit.fluxcd.io/name","kustomize.toolkit.fluxcd.io/namespace"],"ownerKindLabel":""}"#)]
    #[case::confinement(r#"{"ownerNamespaceLabel":"example.com/owner-namespace","allowAdoption":false,"allowOrphaning":false}"#)]
    #[case::revision_and_handover(
        r#"{"revisionAnnotation":"example.com/revision","handoverAnnotation":"example.com/handover-to"}"#
    )]
    #[case::fencing_off(r#"{"revisionAnnotation":"","handoverAnnotation":""}"#)]
    #[case::long_prefix_ok(&format!(r#"{{"ownerLabels":["{}/n"]}}"#, ["a".repeat(63), "b".repeat(63), "c".repeat(63), "d".repeat(61)].join(".")))]
    fn valid_settings(#[case] json: &str) {
        let s = Settings::from_json(json.as_bytes()).unwrap();
        assert_eq!(s.validate(), Ok(()));
    }

    #[rstest]
    #[case::unknown_field(r#"{"ownerLabel":["a"]}"#, "unknown field `ownerLabel`")]
    #[case::wrong_type(r#"{"ownerLabels":"a"}"#, "invalid type: string")]
    #[case::bool_type(r#"{"allowAdoption":"yes"}"#, "invalid type: string")]
    #[case::not_an_object(r#"[1]"#, "settings cannot be read")]
    #[case::not_json(r#"owner"#, "settings cannot be read")]
    #[case::no_keys(r#"{"ownerLabels":[]}"#, "no owner keys")]
    #[case::space(
        r#"{"ownerLabels":["owner name"]}"#,
        "ownerLabels[0] \"owner name\": the name part"
    )]
    #[case::two_slashes(r#"{"ownerLabels":["a/b/c"]}"#, "ownerLabels[0] \"a/b/c\"")]
    #[case::empty_key(
        r#"{"ownerLabels":[""]}"#,
        "ownerLabels[0] \"\": the name part is empty"
    )]
    #[case::empty_prefix(r#"{"ownerLabels":["/name"]}"#, "the prefix before '/' is empty")]
    #[case::upper_prefix(
        r#"{"ownerAnnotations":["Example.com/name"]}"#,
        "ownerAnnotations[0] \"Example.com/name\": prefix \"Example.com\" is not a DNS subdomain"
    )]
    #[case::long_name(&format!(r#"{{"ownerLabels":["{}"]}}"#, "n".repeat(64)), "64 characters long, at most 63")]
    #[case::long_prefix(&format!(r#"{{"ownerLabels":["{}/n"]}}"#, "a.".repeat(127) + "a"), "255 characters long, at most 253")]
    #[case::bad_end(r#"{"ownerLabels":["name-"]}"#, "start and end with an alphanumeric")]
    #[case::duplicate(
        r#"{"ownerLabels":["a","b","a"]}"#,
        "ownerLabels[2] \"a\" is listed twice"
    )]
    #[case::duplicate_annotation(
        r#"{"ownerLabels":[],"ownerAnnotations":["x","x"]}"#,
        "ownerAnnotations[1] \"x\" is listed twice"
    )]
    #[case::bad_kind_label(r#"{"ownerKindLabel":"kind!"}"#, "ownerKindLabel \"kind!\"")]
    #[case::bad_ns_label(r#"{"ownerNamespaceLabel":"a b"}"#, "ownerNamespaceLabel \"a b\"")]
    #[case::ns_without_kind(
        r#"{"ownerKindLabel":"","ownerNamespaceLabel":"ns"}"#,
        "ownerKindLabel is empty"
    )]
    #[case::empty_kind(
        r#"{"clusterScopedOwnerKinds":["ClusterExtension",""]}"#,
        "clusterScopedOwnerKinds[1] is empty"
    )]
    #[case::same_key_label_and_annotation(
        r#"{"ownerLabels":["owner"],"ownerAnnotations":["owner"]}"#,
        "ownerAnnotations[0] \"owner\" is also listed in ownerLabels"
    )]
    #[case::revision_is_owner_annotation(
        r#"{"ownerAnnotations":["olm.operatorframework.io/revision"]}"#,
        "revisionAnnotation \"olm.operatorframework.io/revision\" is also an owner key (ownerAnnotations[0])"
    )]
    #[case::handover_is_owner_label(
        r#"{"handoverAnnotation":"olm.operatorframework.io/owner-name"}"#,
        "handoverAnnotation \"olm.operatorframework.io/owner-name\" is also an owner key (ownerLabels[1])"
    )]
    #[case::handover_is_revision(
        r#"{"handoverAnnotation":"olm.operatorframework.io/revision"}"#,
        "handoverAnnotation and revisionAnnotation are both \"olm.operatorframework.io/revision\""
    )]
    #[case::bad_revision_key(
        r#"{"revisionAnnotation":"rev ision"}"#,
        "revisionAnnotation \"rev ision\""
    )]
    #[case::bad_handover_key(
        r#"{"handoverAnnotation":"/x"}"#,
        "handoverAnnotation \"/x\": the prefix"
    )]
    #[case::bad_kind(
        r#"{"clusterScopedOwnerKinds":["Cluster Extension"]}"#,
        "clusterScopedOwnerKinds[0] \"Cluster Extension\" is not a valid label value"
    )]
    fn invalid_settings(#[case] json: &str, #[case] expected: &str) {
        let err = Settings::from_json(json.as_bytes()).and_then(|s| s.validate());
        let msg = err.expect_err("settings must be refused");
        assert!(
            msg.contains(expected),
            "{msg:?} should contain {expected:?}"
        );
    }

    proptest::proptest! {
        /// The one-pass check says what splitting at the dots says.
        #[test]
        fn dns_subdomains_are_checked_as_split_labels(s in "[a-z0-9.A_/é -]{0,12}") {
            let by_labels = !s.is_empty()
                && s.split('.').all(|l| {
                    let b = l.as_bytes();
                    match (b.first(), b.last()) {
                        (Some(&f), Some(&l)) => {
                            is_lower_alnum(f)
                                && is_lower_alnum(l)
                                && b.iter().all(|&c| is_lower_alnum(c) || c == b'-')
                        }
                        _ => false,
                    }
                });
            proptest::prop_assert_eq!(is_dns_subdomain(s.as_bytes()), by_labels, "{:?}", s);
        }
    }

    #[test]
    fn invalid_utf8_settings_are_refused() {
        let err = Settings::from_json(b"{\"ownerLabels\":[\"\xff\"]}").unwrap_err();
        assert!(err.contains("not valid UTF-8"), "{err}");
    }
}
