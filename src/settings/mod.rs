//! The policy's settings: the whole schema in one struct, and its validation.
//!
//! `{}` (or no settings at all) means the OLM v1 defaults. Unknown keys are refused
//! rather than ignored: a typo such as `ownerLabel` would otherwise silently leave
//! the defaults in force and protect the wrong keys.
//!
//! Two forms. The one-tool form (every release before 0.4) names one tool's owner keys at the
//! top level. The several-tools form lists `schemes`, each a tool's owner keys and, where it
//! has them, its kind label, namespace label, revision annotation and bindings; `aliases`
//! declare where two schemes' keys name one owner (Flux's helm-controller writes its labels
//! and Helm's annotations for one HelmRelease). A setting that only the other form has is
//! refused with the form's place for it, so that a policy means one thing.

pub(crate) mod pattern;

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserializer, MapAccess, Visitor};

use crate::reading::request::split_at_byte;
use crate::settings::pattern::Pattern;
use crate::tools;

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

/// The settings. The one-tool form's owner keys are the top-level `Option`s (absent: the OLM
/// v1 defaults); the several-tools form's are in `schemes`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// Label keys whose values, together with `owner_annotations`, form the owner.
    pub owner_labels: Option<Vec<String>>,
    /// Annotation keys that are part of the owner (Helm keeps its release there).
    pub owner_annotations: Option<Vec<String>>,
    /// Label naming the owner's kind; empty turns the scope rules off.
    pub owner_kind_label: Option<String>,
    /// Owner kinds that may own cluster-scoped objects.
    pub cluster_scoped_owner_kinds: Option<Vec<String>>,
    /// Label naming a namespaced owner's namespace; empty turns namespace confinement off.
    pub owner_namespace_label: Option<String>,
    /// Annotation holding the owner's revision, a fencing token: within one owner, an
    /// UPDATE may not lower it. Empty turns revision fencing off.
    pub revision_annotation: Option<String>,
    /// The tool that writes the owner keys, whose own lifecycle rules then apply (`tools`).
    pub tool: Option<String>,
    /// Which writers may write the objects of which owners (see `identity`). Empty (the
    /// default) turns the identity rules off. In the several-tools form, each scheme's.
    pub bindings: Vec<Binding>,
    /// The tools' owner vocabularies, for one policy over several tools. Empty: the one-tool
    /// form, whose scheme is the top-level keys.
    pub schemes: Vec<Scheme>,
    /// Where two schemes' keys name one owner.
    pub aliases: Vec<Alias>,
    /// Whether an unowned object may gain an owner on UPDATE.
    pub allow_adoption: Option<bool>,
    /// Whether an owned object may lose its owner on UPDATE.
    pub allow_orphaning: Option<bool>,
    /// Annotation through which the current owner names its successor, so that the
    /// successor can take the object (in one write within a tool, or in steps from one tool
    /// to another). Empty (the default) turns handover off.
    pub handover_annotation: String,
    /// Writers that pass the identity rules: they delete or clean up what owners leave.
    pub exempt_writers: Option<Writers>,
    /// The stamping policy (a second, mutating policy): add the owner keys of the one owner a
    /// writer is bound to, where missing, and judge nothing else.
    pub stamp: bool,
}

/// One tool's owner vocabulary: what `Settings` holds at its top level in the one-tool form.
/// Every key is off unless given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Scheme {
    /// The tool's name in messages (`olm-v1`, `helm`, `argocd`): lowercase alphanumerics and
    /// '-'; empty only in the one-tool form, whose messages name no tool.
    pub name: String,
    pub owner_labels: Vec<String>,
    pub owner_annotations: Vec<String>,
    pub owner_kind_label: String,
    pub cluster_scoped_owner_kinds: Vec<String>,
    pub owner_namespace_label: String,
    pub revision_annotation: String,
    /// The tool that writes these keys, whose own lifecycle rules then apply (`tools`): ""
    /// (none), or one of `tools::TOOLS`.
    pub tool: String,
    pub bindings: Vec<Binding>,
}

/// Two schemes whose keys name one owner: `keys` maps owner keys of the first scheme to owner
/// keys of the second, whose values must then be equal (`{}` makes any owner of the one and
/// any owner of the other on one object one owner); or `rule` names the tool's own rule that
/// relates them (`tools::ALIAS_RULES`: `helm-controller`, the Helm release a Flux HelmRelease
/// installs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Alias {
    pub schemes: Vec<String>,
    pub keys: Option<OwnerValues>,
    pub rule: Option<String>,
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
    /// The identity the owner names as its installer, looked up on the owner (a scheme with
    /// `tool: olm-v1`: the ClusterExtension's `spec.serviceAccount`, see `tools::olm_v1`).
    pub installer: bool,
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

/// A map of keys to strings in the order written (a binding's owner, an alias's keys). A key
/// given twice is refused: with a duplicate, the last value must not win silently.
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
                            "the owner key {key:?} is given twice in a binding or an alias"
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

/// The top-level keys of the one-tool form, for messages.
const ONE_TOOL_FIELDS: [&str; 8] = [
    "ownerLabels",
    "ownerAnnotations",
    "ownerKindLabel",
    "clusterScopedOwnerKinds",
    "ownerNamespaceLabel",
    "revisionAnnotation",
    "tool",
    "bindings",
];

impl Settings {
    /// Parses settings JSON as the host sends it; `null` means the defaults.
    pub fn from_json(json: &[u8]) -> Result<Settings, String> {
        let text =
            std::str::from_utf8(json).map_err(|e| format!("settings are not valid UTF-8: {e}"))?;
        serde_json::from_str::<Option<ObjectOnly<Settings>>>(text)
            .map(|s| s.map(|ObjectOnly(s)| s).unwrap_or_default())
            .map_err(|e| format!("settings cannot be read: {e}"))
    }

    /// The schemes the rules apply: `schemes`, or the one-tool form's one, unnamed, with the
    /// OLM v1 defaults where a key is absent.
    pub fn schemes(&self) -> Vec<Scheme> {
        if !self.schemes.is_empty() {
            return self.schemes.clone();
        }
        let or = |v: &Option<Vec<String>>, d: &[&str]| {
            v.clone()
                .unwrap_or_else(|| d.iter().map(|s| s.to_string()).collect())
        };
        let or_key = |v: &Option<String>, d: &str| v.clone().unwrap_or_else(|| d.to_string());
        vec![Scheme {
            name: String::new(),
            owner_labels: or(
                &self.owner_labels,
                &[OLM_OWNER_KIND_LABEL, OLM_OWNER_NAME_LABEL],
            ),
            owner_annotations: or(&self.owner_annotations, &[]),
            owner_kind_label: or_key(&self.owner_kind_label, OLM_OWNER_KIND_LABEL),
            cluster_scoped_owner_kinds: or(&self.cluster_scoped_owner_kinds, &["ClusterExtension"]),
            owner_namespace_label: or_key(&self.owner_namespace_label, ""),
            revision_annotation: or_key(&self.revision_annotation, OLM_REVISION_ANNOTATION),
            tool: or_key(&self.tool, ""),
            bindings: self.bindings.clone(),
        }]
    }

    pub fn allow_adoption(&self) -> bool {
        self.allow_adoption.unwrap_or(true)
    }

    pub fn allow_orphaning(&self) -> bool {
        self.allow_orphaning.unwrap_or(true)
    }

    /// The exempt writers: as given, or the garbage collector and namespace controller.
    pub fn exempt_writers(&self) -> Writers {
        self.exempt_writers.clone().unwrap_or_else(|| Writers {
            service_accounts: DEFAULT_EXEMPT_SERVICE_ACCOUNTS.map(String::from).to_vec(),
            ..Writers::default()
        })
    }

    /// Whether any scheme has bindings (the identity rules are on).
    pub fn has_bindings(&self) -> bool {
        self.schemes().iter().any(|s| !s.bindings.is_empty())
    }

    /// Checks everything the rules rely on; the message names the field and what to fix.
    pub fn validate(&self) -> Result<(), String> {
        let several = !self.schemes.is_empty();
        if several {
            self.check_one_form()?;
        }
        let schemes = self.schemes();
        let mut names: Vec<&str> = Vec::new();
        for (i, scheme) in schemes.iter().enumerate() {
            let at = if several {
                format!("schemes[{i}].")
            } else {
                String::new()
            };
            if several {
                check_scheme_name(&at, &scheme.name, &names)?;
                names.push(&scheme.name);
            }
            scheme.check(&at, &self.handover_annotation)?;
            scheme.check_bindings(&at)?;
        }
        check_no_key_twice(&schemes)?;
        self.check_handover(&schemes)?;
        self.check_aliases(&schemes)?;
        let exempt = self.exempt_writers();
        exempt.check("exemptWriters")?;
        if exempt.installer {
            return Err(
                "exemptWriters.installer is true, but an installer is an owner's own \
                        writer: bind it in a binding (writers.installer) instead"
                    .into(),
            );
        }
        if self.stamp && !self.has_bindings() {
            return Err(
                "stamp is true but there are no bindings: stamping adds the owner keys of the \
                 owner a writer is bound to, so list bindings (the same as the validating \
                 policy's)"
                    .into(),
            );
        }
        Ok(())
    }

    /// With `schemes`, the one-tool form's keys are refused: each belongs to a scheme.
    fn check_one_form(&self) -> Result<(), String> {
        let set = [
            self.owner_labels.is_some(),
            self.owner_annotations.is_some(),
            self.owner_kind_label.is_some(),
            self.cluster_scoped_owner_kinds.is_some(),
            self.owner_namespace_label.is_some(),
            self.revision_annotation.is_some(),
            self.tool.is_some(),
            !self.bindings.is_empty(),
        ];
        match ONE_TOOL_FIELDS.iter().zip(set).find(|(_, set)| *set) {
            Some((field, _)) => Err(format!(
                "{field} is set at the top level, but so is schemes: with schemes, each tool's \
                 keys and bindings belong to its scheme; move {field} into the scheme it \
                 describes (schemes[i].{field})"
            )),
            None => Ok(()),
        }
    }

    /// The handover annotation: off, or a qualified name of its own.
    fn check_handover(&self, schemes: &[Scheme]) -> Result<(), String> {
        let key = self.handover_annotation.as_str();
        if key.is_empty() {
            return Ok(());
        }
        check_qualified_name(key).map_err(|e| format!("handoverAnnotation {key:?}: {e}"))?;
        for (i, scheme) in schemes.iter().enumerate() {
            let at = scheme_prefix(schemes, i);
            if let Some((list, j)) = scheme.owner_key_position(key) {
                return Err(format!(
                    "handoverAnnotation {key:?} is also an owner key ({at}{list}[{j}]): the \
                     successor it names cannot be part of the owner; use a key of its own, or \
                     \"\" to turn it off"
                ));
            }
            if key == scheme.revision_annotation {
                return Err(format!(
                    "handoverAnnotation and {at}revisionAnnotation are both {key:?}: one \
                     annotation cannot hold both a revision and a successor, use two keys"
                ));
            }
        }
        Ok(())
    }

    /// Aliases name two known schemes, once per pair, and owner keys of each.
    fn check_aliases(&self, schemes: &[Scheme]) -> Result<(), String> {
        let known = || {
            schemes
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut pairs: Vec<(usize, usize)> = Vec::new();
        for (i, alias) in self.aliases.iter().enumerate() {
            let at = format!("aliases[{i}]");
            if self.schemes.is_empty() {
                return Err(format!(
                    "{at}: aliases relate the keys of two schemes, and there are no schemes: \
                     list the tools in schemes, or remove aliases"
                ));
            }
            let [a, b] = alias.schemes.as_slice() else {
                return Err(format!(
                    "{at}.schemes must name two schemes (the first's keys, then the second's), \
                     not {}",
                    alias.schemes.len()
                ));
            };
            let find = |name: &String| {
                schemes.iter().position(|s| s.name == *name).ok_or_else(|| {
                    format!(
                        "{at}.schemes names {name:?}, which is not a scheme (schemes: {})",
                        known()
                    )
                })
            };
            let (ia, ib) = (find(a)?, find(b)?);
            if ia == ib {
                return Err(format!(
                    "{at}.schemes names {a:?} twice: an alias relates two different schemes"
                ));
            }
            let pair = (ia.min(ib), ia.max(ib));
            if pairs.contains(&pair) {
                return Err(format!(
                    "{at} relates {a:?} and {b:?}, which an earlier alias relates already: \
                     list their keys in one alias"
                ));
            }
            pairs.push(pair);
            let keys = match (&alias.keys, &alias.rule) {
                (Some(_), Some(_)) => {
                    return Err(format!(
                        "{at} has both keys and rule: relate the two schemes by equal values \
                         (keys) or by a tool's rule (rule), not both"
                    ));
                }
                (None, Some(rule)) => {
                    check_alias_rule(rule, &schemes[ia], &schemes[ib])
                        .map_err(|e| format!("{at}.rule {rule:?}: {e}"))?;
                    continue;
                }
                (Some(keys), None) => keys,
                (None, None) => {
                    return Err(format!(
                        "{at}.keys is missing: map owner keys of {a:?} to the owner keys of \
                         {b:?} that hold the same value, give {{}} to make any owner of the two \
                         one owner, or name a tool's rule (rule: {})",
                        tools::ALIAS_RULES.join(", ")
                    ));
                }
            };
            let mut seen: Vec<&String> = Vec::new();
            for (ka, kb) in keys.iter() {
                for (scheme, key) in [(&schemes[ia], ka), (&schemes[ib], kb)] {
                    if scheme.owner_key_position(key).is_none() {
                        return Err(format!(
                            "{at}.keys {ka:?}: {key:?} is not an owner key of scheme {:?} ({})",
                            scheme.name,
                            scheme.owner_keys().cloned().collect::<Vec<_>>().join(", ")
                        ));
                    }
                }
                if seen.contains(&kb) {
                    return Err(format!(
                        "{at}.keys maps two keys to {kb:?}: each key of {b:?} corresponds to one \
                         of {a:?}"
                    ));
                }
                seen.push(kb);
            }
        }
        Ok(())
    }
}

impl Scheme {
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

    /// Where `key` is among the owner keys: the list's field name and the index in it.
    fn owner_key_position(&self, key: &str) -> Option<(&'static str, usize)> {
        match (
            self.owner_labels.iter().position(|k| k == key),
            self.owner_annotations.iter().position(|k| k == key),
        ) {
            (Some(i), _) => Some(("ownerLabels", i)),
            (None, Some(i)) => Some(("ownerAnnotations", i)),
            (None, None) => None,
        }
    }

    /// The scheme's own keys and kinds; `at` is its place in the settings (`schemes[2].`).
    fn check(&self, at: &str, handover: &str) -> Result<(), String> {
        if self.owner_labels.is_empty() && self.owner_annotations.is_empty() {
            return Err(if at.is_empty() {
                "no owner keys: set ownerLabels and/or ownerAnnotations to the keys \
                 that name an object's owner"
                    .into()
            } else {
                format!(
                    "{at}ownerLabels and {at}ownerAnnotations are both empty: scheme {:?} has no \
                     owner keys; list the keys that name an object's owner under this tool",
                    self.name
                )
            });
        }
        check_key_list(&format!("{at}ownerLabels"), &self.owner_labels)?;
        check_key_list(&format!("{at}ownerAnnotations"), &self.owner_annotations)?;
        if let Some((i, key)) =
            (self.owner_annotations.iter().enumerate()).find(|(_, k)| self.owner_labels.contains(k))
        {
            return Err(format!(
                "{at}ownerAnnotations[{i}] {key:?} is also listed in {at}ownerLabels: an owner \
                 key is either a label or an annotation, list it once"
            ));
        }
        self.check_annotation_setting(
            &format!("{at}revisionAnnotation"),
            &self.revision_annotation,
            "the revision changes with every rollout, so it cannot be part of the owner",
            at,
        )?;
        if !self.revision_annotation.is_empty() && self.revision_annotation == handover {
            return Err(format!(
                "handoverAnnotation and {at}revisionAnnotation are both {:?}: one annotation \
                 cannot hold both a revision and a successor, use two keys",
                handover
            ));
        }
        if !self.owner_kind_label.is_empty() {
            check_qualified_name(&self.owner_kind_label)
                .map_err(|e| format!("{at}ownerKindLabel {:?}: {e}", self.owner_kind_label))?;
        }
        if !self.owner_namespace_label.is_empty() {
            check_qualified_name(&self.owner_namespace_label).map_err(|e| {
                format!(
                    "{at}ownerNamespaceLabel {:?}: {e}",
                    self.owner_namespace_label
                )
            })?;
            if self.owner_kind_label.is_empty() {
                return Err(format!(
                    "{at}ownerNamespaceLabel is set but {at}ownerKindLabel is empty, which \
                     turns the scope rules off: set {at}ownerKindLabel, or leave \
                     {at}ownerNamespaceLabel empty"
                ));
            }
        }
        check_tool(self).map_err(|e| format!("{at}tool {:?}: {e}", self.tool))?;
        for (i, kind) in self.cluster_scoped_owner_kinds.iter().enumerate() {
            if kind.is_empty() {
                return Err(format!(
                    "{at}clusterScopedOwnerKinds[{i}] is empty: list owner kinds such as \
                     \"ClusterExtension\", or remove the empty entry"
                ));
            }
            check_label_value(kind)
                .map_err(|e| format!("{at}clusterScopedOwnerKinds[{i}] {kind:?} {e}"))?;
        }
        Ok(())
    }

    /// A key setting other than the owner keys: empty (off), or a qualified name that is
    /// not one of the owner keys.
    fn check_annotation_setting(
        &self,
        field: &str,
        key: &str,
        why: &str,
        at: &str,
    ) -> Result<(), String> {
        if key.is_empty() {
            return Ok(());
        }
        check_qualified_name(key).map_err(|e| format!("{field} {key:?}: {e}"))?;
        match self.owner_key_position(key) {
            Some((list, i)) => Err(format!(
                "{field} {key:?} is also an owner key ({at}{list}[{i}]): {why}; use a key of its \
                 own, or \"\" to turn it off"
            )),
            None => Ok(()),
        }
    }

    /// Bindings name owner keys of this scheme, writers that exist, and values that can match.
    fn check_bindings(&self, at: &str) -> Result<(), String> {
        for (i, binding) in self.bindings.iter().enumerate() {
            let at = format!("{at}bindings[{i}]");
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
            if binding.writers.installer {
                check_installer(self)
                    .map_err(|e| format!("{at}.writers.installer is true, but {e}"))?;
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
                let pattern = Pattern::parse(value)
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
        Ok(())
    }

    /// Every key the scheme reads, with the field it comes from (a list's name and index, or
    /// a single key's name with no index).
    fn keys_read(&self) -> Vec<(&'static str, Option<usize>, &String)> {
        let mut out: Vec<(&'static str, Option<usize>, &String)> = Vec::new();
        for (field, list) in [
            ("ownerLabels", &self.owner_labels),
            ("ownerAnnotations", &self.owner_annotations),
        ] {
            out.extend((list.iter().enumerate()).map(|(i, k)| (field, Some(i), k)));
        }
        for (field, key) in [
            ("ownerKindLabel", &self.owner_kind_label),
            ("ownerNamespaceLabel", &self.owner_namespace_label),
            ("revisionAnnotation", &self.revision_annotation),
        ] {
            // A scheme's kind and namespace labels may be its own owner labels.
            if !key.is_empty() && !out.iter().any(|(_, _, k)| *k == key) {
                out.push((field, None, key));
            }
        }
        out
    }
}

/// A scheme's tool: none, or one the policy knows, whose rules' keys are owner keys.
fn check_tool(scheme: &Scheme) -> Result<(), String> {
    if scheme.tool.is_empty() {
        return Ok(());
    }
    let Some((_, keys, _)) = tools::TOOLS.iter().find(|(name, ..)| *name == scheme.tool) else {
        return Err(format!(
            "not a tool this policy knows: name one of {}, or leave it empty",
            tools::TOOLS.map(|(name, ..)| name).join(", ")
        ));
    };
    match keys.iter().find(|k| scheme.owner_key_position(k).is_none()) {
        Some(missing) => Err(format!(
            "the tool's rules read the owner key {missing:?}, which is not one of this \
             scheme's owner keys: add it to ownerLabels or ownerAnnotations, or leave tool \
             empty"
        )),
        None => Ok(()),
    }
}

/// An alias's rule: one the policy knows, whose keys are owner keys of the two schemes.
fn check_alias_rule(rule: &str, first: &Scheme, second: &Scheme) -> Result<(), String> {
    let Some((a, b)) = tools::alias_rule_keys(rule) else {
        return Err(format!(
            "not a rule this policy knows: name one of {}",
            tools::ALIAS_RULES.join(", ")
        ));
    };
    for (scheme, keys) in [(first, a), (second, b)] {
        if let Some(missing) = keys.iter().find(|k| scheme.owner_key_position(k).is_none()) {
            return Err(format!(
                "the rule reads {} of the first scheme and {} of the second, and {missing:?} is \
                 not an owner key of scheme {:?}",
                a.join(", "),
                b.join(", "),
                scheme.name
            ));
        }
    }
    Ok(())
}

/// A binding that names the owner's installer: its scheme's tool says where to find it.
fn check_installer(scheme: &Scheme) -> Result<(), String> {
    if tools::INSTALLER_TOOLS.contains(&scheme.tool.as_str()) {
        return Ok(());
    }
    Err(format!(
        "an installer is found on the owner by its tool's rule, and this scheme's tool is {:?}: \
         set tool to one of {}, or list the writers by name",
        scheme.tool,
        tools::INSTALLER_TOOLS.join(", ")
    ))
}

/// `ownerLabels[3]`, or `revisionAnnotation`.
fn field_name(field: &str, index: Option<usize>) -> String {
    match index {
        Some(i) => format!("{field}[{i}]"),
        None => field.to_string(),
    }
}

/// The place of scheme `i` in messages: `schemes[i].`, or nothing in the one-tool form.
fn scheme_prefix(schemes: &[Scheme], i: usize) -> String {
    if schemes.len() == 1 && schemes[0].name.is_empty() {
        String::new()
    } else {
        format!("schemes[{i}].")
    }
}

/// A scheme's name: a DNS label, given once.
fn check_scheme_name(at: &str, name: &str, earlier: &[&str]) -> Result<(), String> {
    let b = name.as_bytes();
    let valid = !b.is_empty()
        && b.len() <= 63
        && b.iter().all(|c| is_lower_alnum(*c) || *c == b'-')
        && b.first().is_some_and(|c| is_lower_alnum(*c))
        && b.last().is_some_and(|c| is_lower_alnum(*c));
    if !valid {
        return Err(format!(
            "{at}name {name:?} is not a scheme name: the tool's name in messages, at most 63 \
             lowercase alphanumerics and '-' (e.g. \"helm\", \"olm-v1\")"
        ));
    }
    if earlier.contains(&name) {
        return Err(format!(
            "{at}name {name:?} is the name of an earlier scheme: give each tool one scheme"
        ));
    }
    Ok(())
}

/// No key is read by two schemes: an owner key names the owner of one tool only, and a
/// kind, namespace or revision key is one tool's.
fn check_no_key_twice(schemes: &[Scheme]) -> Result<(), String> {
    if schemes.len() < 2 {
        return Ok(());
    }
    let read: Vec<_> = schemes.iter().map(Scheme::keys_read).collect();
    for (i, keys) in read.iter().enumerate() {
        for (field, index, key) in keys {
            for (j, earlier) in read.iter().enumerate().take(i) {
                if let Some((other, other_index, _)) = earlier.iter().find(|(_, _, k)| k == key) {
                    return Err(format!(
                        "schemes[{i}].{} {key:?} is also schemes[{j}].{} ({:?}): a key belongs \
                         to one tool's scheme; two tools that write the same key for one owner \
                         are one scheme, or two schemes related by an alias",
                        field_name(field, *index),
                        field_name(other, *other_index),
                        schemes[j].name,
                    ));
                }
            }
        }
    }
    Ok(())
}

impl Writers {
    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
            && self.groups.is_empty()
            && self.service_accounts.is_empty()
            && !self.installer
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
            let Some((namespace, name)) = split_at_byte(sa, b'/') else {
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
        let [scheme] = s.schemes().try_into().unwrap();
        assert_eq!(scheme.name, "");
        assert_eq!(
            scheme.owner_labels,
            [OLM_OWNER_KIND_LABEL, OLM_OWNER_NAME_LABEL]
        );
        assert_eq!(scheme.owner_kind_label, OLM_OWNER_KIND_LABEL);
        assert_eq!(scheme.cluster_scoped_owner_kinds, ["ClusterExtension"]);
        assert!(scheme.owner_annotations.is_empty() && scheme.owner_namespace_label.is_empty());
        assert!(s.allow_adoption() && s.allow_orphaning());
        assert_eq!(scheme.revision_annotation, OLM_REVISION_ANNOTATION);
        assert!(s.handover_annotation.is_empty());
        assert_eq!(
            s.exempt_writers().service_accounts,
            DEFAULT_EXEMPT_SERVICE_ACCOUNTS
        );
        assert!(s.validate().is_ok());
    }

    #[test]
    fn the_one_tool_form_is_one_unnamed_scheme_of_its_keys() {
        let s = Settings::from_json(
            br#"{"ownerLabels":[],"ownerAnnotations":["meta.helm.sh/release-name"],"ownerKindLabel":"","revisionAnnotation":""}"#,
        )
        .unwrap();
        let [scheme] = s.schemes().try_into().unwrap();
        assert_eq!(
            scheme,
            Scheme {
                owner_annotations: vec!["meta.helm.sh/release-name".into()],
                // Absent keys keep the OLM v1 defaults, as before schemes.
                cluster_scoped_owner_kinds: vec!["ClusterExtension".into()],
                ..Scheme::default()
            }
        );
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

    const TWO: &str = r#""schemes":[{"name":"helm","ownerAnnotations":["meta.helm.sh/release-name"]},{"name":"argocd","ownerAnnotations":["argocd.argoproj.io/tracking-id"]}]"#;

    #[rstest]
    #[case::two_tools(&format!("{{{TWO}}}"))]
    #[case::alias(&format!(r#"{{{TWO},"aliases":[{{"schemes":["helm","argocd"],"keys":{{"meta.helm.sh/release-name":"argocd.argoproj.io/tracking-id"}}}}]}}"#))]
    #[case::alias_any_values(&format!(r#"{{{TWO},"aliases":[{{"schemes":["argocd","helm"],"keys":{{}}}}]}}"#))]
    #[case::handover_across(&format!(r#"{{{TWO},"handoverAnnotation":"example.com/handover-to","allowAdoption":false}}"#))]
    #[case::scheme_bindings(r#"{"schemes":[{"name":"flux","ownerLabels":["kustomize.toolkit.fluxcd.io/namespace"],"bindings":[{"writers":{"serviceAccounts":["*/*"]},"owner":{"kustomize.toolkit.fluxcd.io/namespace":"{serviceAccount.namespace}"}}]}]}"#)]
    fn valid_several_tools_settings(#[case] json: &str) {
        let s = Settings::from_json(json.as_bytes()).unwrap();
        assert_eq!(s.validate(), Ok(()));
    }

    #[rstest]
    #[case::top_level_keys_with_schemes(&format!(r#"{{{TWO},"ownerLabels":["a"]}}"#),
        "ownerLabels is set at the top level, but so is schemes")]
    #[case::top_level_bindings_with_schemes(&format!(r#"{{{TWO},"bindings":[{{"writers":{{"users":["a"]}},"owner":{{"meta.helm.sh/release-name":"x"}}}}]}}"#),
        "bindings is set at the top level, but so is schemes")]
    #[case::scheme_without_keys(
        r#"{"schemes":[{"name":"helm"}]}"#,
        "schemes[0].ownerLabels and schemes[0].ownerAnnotations are both empty: scheme \"helm\" has no owner keys"
    )]
    #[case::scheme_without_name(
        r#"{"schemes":[{"ownerLabels":["a"]}]}"#,
        "schemes[0].name \"\" is not a scheme name"
    )]
    #[case::scheme_name_twice(
        r#"{"schemes":[{"name":"a","ownerLabels":["x"]},{"name":"a","ownerLabels":["y"]}]}"#,
        "schemes[1].name \"a\" is the name of an earlier scheme"
    )]
    #[case::same_key_two_schemes(r#"{"schemes":[{"name":"a","ownerLabels":["x","y"]},{"name":"b","ownerAnnotations":["y"]}]}"#,
        "schemes[1].ownerAnnotations[0] \"y\" is also schemes[0].ownerLabels[1] (\"a\")")]
    #[case::revision_of_one_is_key_of_other(r#"{"schemes":[{"name":"a","ownerLabels":["x"],"revisionAnnotation":"r"},{"name":"b","ownerAnnotations":["r"]}]}"#,
        "schemes[1].ownerAnnotations[0] \"r\" is also schemes[0].revisionAnnotation (\"a\")")]
    #[case::bad_key_in_scheme(
        r#"{"schemes":[{"name":"a","ownerLabels":["a b"]}]}"#,
        "schemes[0].ownerLabels[0] \"a b\": the name part"
    )]
    #[case::unknown_field_in_scheme(
        r#"{"schemes":[{"name":"a","ownerLabel":["x"]}]}"#,
        "unknown field `ownerLabel`"
    )]
    #[case::alias_unknown_scheme(&format!(r#"{{{TWO},"aliases":[{{"schemes":["helm","flux"],"keys":{{}}}}]}}"#),
        "aliases[0].schemes names \"flux\", which is not a scheme (schemes: helm, argocd)")]
    #[case::alias_one_scheme(&format!(r#"{{{TWO},"aliases":[{{"schemes":["helm"],"keys":{{}}}}]}}"#), "aliases[0].schemes must name two schemes")]
    #[case::alias_same_scheme_twice(&format!(r#"{{{TWO},"aliases":[{{"schemes":["helm","helm"],"keys":{{}}}}]}}"#), "names \"helm\" twice")]
    #[case::alias_without_keys(&format!(r#"{{{TWO},"aliases":[{{"schemes":["helm","argocd"]}}]}}"#), "aliases[0].keys is missing")]
    #[case::alias_key_of_other_scheme(&format!(r#"{{{TWO},"aliases":[{{"schemes":["helm","argocd"],"keys":{{"argocd.argoproj.io/tracking-id":"meta.helm.sh/release-name"}}}}]}}"#),
        "aliases[0].keys \"argocd.argoproj.io/tracking-id\": \"argocd.argoproj.io/tracking-id\" is not an owner key of scheme \"helm\"")]
    #[case::alias_twice(&format!(r#"{{{TWO},"aliases":[{{"schemes":["helm","argocd"],"keys":{{}}}},{{"schemes":["argocd","helm"],"keys":{{}}}}]}}"#),
        "aliases[1] relates \"argocd\" and \"helm\", which an earlier alias relates already")]
    #[case::aliases_without_schemes(
        r#"{"aliases":[{"schemes":["a","b"],"keys":{}}]}"#,
        "aliases[0]: aliases relate the keys of two schemes, and there are no schemes"
    )]
    #[case::binding_key_of_scheme(r#"{"schemes":[{"name":"helm","ownerAnnotations":["meta.helm.sh/release-name"],"bindings":[{"writers":{"users":["a"]},"owner":{"argocd.argoproj.io/tracking-id":"x"}}]}]}"#,
        "schemes[0].bindings[0].owner \"argocd.argoproj.io/tracking-id\" is not an owner key")]
    #[case::handover_is_key_of_a_scheme(&format!(r#"{{{TWO},"handoverAnnotation":"argocd.argoproj.io/tracking-id"}}"#),
        "handoverAnnotation \"argocd.argoproj.io/tracking-id\" is also an owner key (schemes[1].ownerAnnotations[0])")]
    fn invalid_several_tools_settings(#[case] json: &str, #[case] expected: &str) {
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
