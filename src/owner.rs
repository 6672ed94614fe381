//! The owner rules: who owns an object, the same-owner invariant, and the scope rules.
//!
//! An object's owner is the tuple of the values of the configured owner keys (labels, then
//! annotations). Admission is where "one object, one owner" can be enforced without a race:
//! the API server re-runs validation against the exact stored `oldObject` on every write
//! attempt, so two reconcilers can never both take the same object.

use std::fmt;

use crate::request::{Object, Request};
use crate::settings::Settings;

/// The answer to one admission request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Accept { warnings: Vec<String> },
    Reject { message: String },
}

impl Verdict {
    fn accept() -> Verdict {
        Verdict::Accept {
            warnings: Vec::new(),
        }
    }
}

/// The values of the owner keys on one object, in settings order; `None` where a key is absent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner<'a> {
    values: Vec<Option<&'a str>>,
}

impl<'a> Owner<'a> {
    pub fn of(settings: &Settings, object: Option<&'a Object<'a>>) -> Owner<'a> {
        let mut values = Vec::with_capacity(settings.owner_key_count());
        match object {
            Some(o) => {
                let (labels, annotations) = (o.labels(), o.annotations());
                values.extend(settings.owner_labels.iter().map(|k| labels.get(k)));
                values.extend(
                    settings
                        .owner_annotations
                        .iter()
                        .map(|k| annotations.get(k)),
                );
            }
            None => values.resize(settings.owner_key_count(), None),
        }
        Owner { values }
    }

    /// An object has an owner when at least one owner key is present (even with "").
    pub fn is_some(&self) -> bool {
        self.values.iter().any(Option::is_some)
    }
}

/// What an UPDATE does to the owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    Unowned,
    Kept,
    Adopted,
    Orphaned,
    Changed,
}

/// The same-owner invariant: an owner may appear or disappear, never change, not even in
/// part. Two owners are the same only when every key is absent on both sides or present
/// on both with the same value.
pub fn transition(old: &Owner, new: &Owner) -> Transition {
    match (old.is_some(), new.is_some()) {
        (false, false) => Transition::Unowned,
        (false, true) => Transition::Adopted,
        (true, false) => Transition::Orphaned,
        (true, true) if old == new => Transition::Kept,
        (true, true) => Transition::Changed,
    }
}

/// Judges one CREATE or UPDATE (other operations are accepted).
pub fn evaluate(request: &Request, settings: &Settings) -> Verdict {
    let operation = request.operation();
    match operation {
        "CREATE" | "UPDATE" => {}
        "DELETE" | "CONNECT" => return Verdict::accept(),
        "" => return reject("the admission request has no operation".into()),
        other => {
            return reject(format!(
                "the admission request has an unknown operation {other:?} \
                 (expected CREATE, UPDATE, DELETE or CONNECT)"
            ));
        }
    }
    let subject = Subject(request);
    if let Err(message) = check_scope(request, settings, &subject) {
        return reject(message);
    }
    if operation == "CREATE" {
        return Verdict::accept();
    }
    // The owners are only compared on UPDATE.
    let new = Owner::of(settings, request.object.as_ref());
    let old = Owner::of(settings, request.old_object.as_ref());
    let keys = OwnerKeys(settings);
    match transition(&old, &new) {
        Transition::Unowned | Transition::Kept => Verdict::accept(),
        Transition::Changed => reject(format!(
            "{subject} is owned by {current}, and this UPDATE would change its owner to \
             {requested}. An object has a single owner: the current owner must first release \
             it by removing its owner keys ({keys}), then the new owner can adopt it.",
            current = Pairs::differing(settings, &old, &new),
            requested = Pairs::differing(settings, &new, &old),
        )),
        Transition::Adopted if !settings.allow_adoption => reject(format!(
            "{subject} has no owner, and this UPDATE would give it the owner {owner}, but \
             adoption is disabled (allowAdoption: false): an object's owner must create it.",
            owner = Pairs::all(settings, &new),
        )),
        Transition::Orphaned if !settings.allow_orphaning => reject(format!(
            "{subject} is owned by {owner}, and this UPDATE would remove its owner keys, but \
             orphaning is disabled (allowOrphaning: false): keep the owner keys ({keys}), or \
             delete the object.",
            owner = Pairs::all(settings, &old),
        )),
        Transition::Adopted => Verdict::Accept {
            warnings: vec![format!(
                "{subject} adopted by owner {}",
                Pairs::all(settings, &new)
            )],
        },
        Transition::Orphaned => Verdict::Accept {
            warnings: vec![format!(
                "{subject} orphaned: it no longer has owner {}",
                Pairs::all(settings, &old)
            )],
        },
    }
}

/// The scope rules, on the new object: a cluster-scoped object may be owned only by a
/// cluster-scoped owner kind, and (optionally) a namespaced owner only owns objects in its
/// own namespace. An empty `ownerKindLabel` turns both off.
fn check_scope(request: &Request, settings: &Settings, subject: &Subject) -> Result<(), String> {
    let kind_label = settings.owner_kind_label.as_str();
    let Some(object) = request.object.as_ref() else {
        return Ok(());
    };
    if kind_label.is_empty() {
        return Ok(());
    }
    let labels = object.labels();
    let owner_kind = labels.get(kind_label);
    let allowed = AllowedKinds(settings);
    if request.is_cluster_scoped() {
        return match owner_kind {
            Some(kind) if !settings.is_cluster_scoped_owner_kind(kind) => Err(format!(
                "{subject} is cluster-scoped, but its owner kind {kind_label}={kind} is not \
                 a cluster-scoped owner kind ({allowed}): a namespaced owner cannot own \
                 cluster-scoped objects. Manage it from a cluster-scoped owner, or remove the \
                 {kind_label} label."
            )),
            _ => Ok(()),
        };
    }
    let ns_label = settings.owner_namespace_label.as_str();
    if ns_label.is_empty() || owner_kind.is_some_and(|k| settings.is_cluster_scoped_owner_kind(k)) {
        return Ok(());
    }
    match labels.get(ns_label) {
        Some(owner_ns) if owner_ns != request.namespace() => Err(format!(
            "{subject} is owned by a namespaced owner ({kind_label}={kind}) in namespace \
             {owner_ns:?} ({ns_label}={owner_ns}): a namespaced owner may own only objects in \
             its own namespace. Create the object in namespace {owner_ns:?}, or manage it from \
             a cluster-scoped owner ({allowed}).",
            kind = owner_kind.unwrap_or("<unset>"),
        )),
        _ => Ok(()),
    }
}

fn reject(message: String) -> Verdict {
    Verdict::Reject { message }
}

/// Names the object as kubectl would: kind, name, namespace, subresource.
struct Subject<'r, 'a>(&'r Request<'a>);

impl fmt::Display for Subject<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let r = self.0;
        let kind = match r.kind() {
            "" => "object",
            kind => kind,
        };
        write!(f, "{kind} {:?}", r.object_name())?;
        if !r.is_cluster_scoped() {
            write!(f, " in namespace {:?}", r.namespace())?;
        }
        match r.sub_resource.as_deref() {
            Some(sub) if !sub.is_empty() => write!(f, " (subresource {sub})"),
            _ => Ok(()),
        }
    }
}

/// Owner keys written as `key=value` pairs; an absent key as `key (unset)`.
struct Pairs<'s, 'o, 'a> {
    settings: &'s Settings,
    owner: &'o Owner<'a>,
    other: Option<&'o Owner<'a>>,
}

impl<'s, 'o, 'a> Pairs<'s, 'o, 'a> {
    /// The pairs of `owner` whose values differ from `other`.
    fn differing(settings: &'s Settings, owner: &'o Owner<'a>, other: &'o Owner<'a>) -> Self {
        Pairs {
            settings,
            owner,
            other: Some(other),
        }
    }

    /// The keys present on `owner`.
    fn all(settings: &'s Settings, owner: &'o Owner<'a>) -> Self {
        Pairs {
            settings,
            owner,
            other: None,
        }
    }
}

impl fmt::Display for Pairs<'_, '_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let keys = self
            .settings
            .owner_labels
            .iter()
            .chain(&self.settings.owner_annotations);
        let mut first = true;
        for (i, (key, value)) in keys.zip(&self.owner.values).enumerate() {
            let shown = match self.other {
                Some(other) => other.values.get(i) != Some(value),
                None => value.is_some(),
            };
            if !shown {
                continue;
            }
            f.write_str(if first { "[" } else { ", " })?;
            first = false;
            match value {
                Some(v) => write!(f, "{key}={v}")?,
                None => write!(f, "{key} (unset)")?,
            }
        }
        f.write_str(if first { "[]" } else { "]" })
    }
}

/// The owner keys, for "remove these" advice.
struct OwnerKeys<'s>(&'s Settings);

impl fmt::Display for OwnerKeys<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let labels = self.0.owner_labels.iter().map(|k| ("label", k));
        let annotations = self.0.owner_annotations.iter().map(|k| ("annotation", k));
        for (i, (what, key)) in labels.chain(annotations).enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{what} {key}")?;
        }
        Ok(())
    }
}

struct AllowedKinds<'s>(&'s Settings);

impl fmt::Display for AllowedKinds<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self.0.cluster_scoped_owner_kinds.as_slice() {
            [] => f.write_str("no owner kind is allowed on cluster-scoped objects"),
            kinds => write!(f, "allowed: {}", kinds.join(", ")),
        }
    }
}
