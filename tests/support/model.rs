//! The reference model of the owner rules, written apart from the policy, for the property
//! tests (`tests/transition.rs`) and the structure-aware fuzz target
//! (`fuzz/fuzz_targets/validate_structured.rs`). The settings it models: owner labels
//! `OWNER_LABELS`, owner annotation `OWNER_ANNOTATION`, scope rules off, revision fencing on
//! `REVISION`, handover on `HANDOVER`, adoption and orphaning as given.

use std::collections::BTreeMap;

pub const OWNER_LABELS: [&str; 2] = ["owner/kind", "owner/name"];
pub const OWNER_ANNOTATION: &str = "owner/release";
pub const REVISION: &str = "owner/revision";
pub const HANDOVER: &str = "owner/handover-to";

/// An object's labels and annotations.
pub type Meta = (BTreeMap<String, String>, BTreeMap<String, String>);
pub type Tuple = Vec<Option<String>>;

/// The settings JSON of the model.
pub fn settings(adoption: bool, orphaning: bool) -> String {
    format!(
        r#"{{"ownerLabels":["{}","{}"],"ownerAnnotations":["{OWNER_ANNOTATION}"],"ownerKindLabel":"","revisionAnnotation":"{REVISION}","handoverAnnotation":"{HANDOVER}","allowAdoption":{adoption},"allowOrphaning":{orphaning}}}"#,
        OWNER_LABELS[0], OWNER_LABELS[1]
    )
}

/// The owner: the tuple, or None when no owner key is present.
pub fn owner(m: &Meta) -> Option<Tuple> {
    let mut t: Tuple = OWNER_LABELS.iter().map(|k| m.0.get(*k).cloned()).collect();
    t.push(m.1.get(OWNER_ANNOTATION).cloned());
    t.iter().any(Option::is_some).then_some(t)
}

/// A revision: digits only, no leading zero, fits in 64 bits.
fn revision(value: &str) -> Option<u64> {
    let digits = !value.is_empty() && value.chars().all(|c| c.is_ascii_digit());
    let leading_zero = value.len() > 1 && value.starts_with('0');
    if digits && !leading_zero {
        value.parse().ok()
    } else {
        None
    }
}

/// A successor: `key=value` pairs of the owner keys, each once, no whitespace.
fn successor(value: &str) -> Option<Tuple> {
    let keys = [OWNER_LABELS[0], OWNER_LABELS[1], OWNER_ANNOTATION];
    let mut t: Tuple = vec![None; 3];
    if value.is_empty() || value.chars().any(char::is_whitespace) {
        return None;
    }
    for pair in value.split(',') {
        let (k, v) = pair.split_once('=')?;
        let i = keys.iter().position(|key| *key == k)?;
        if t[i].replace(v.to_string()).is_some() {
            return None;
        }
    }
    Some(t)
}

/// The values of every key the settings read: an UPDATE that changes none of them changes no
/// owner, and stands as it was judged.
fn markers(m: &Meta) -> Vec<Option<&String>> {
    (OWNER_LABELS.iter().map(|k| m.0.get(*k)))
        .chain(
            [OWNER_ANNOTATION, REVISION, HANDOVER]
                .iter()
                .map(|k| m.1.get(*k)),
        )
        .collect()
}

/// Whether the policy accepts `operation` on these objects (None: null or absent).
pub fn accepts(
    operation: &str,
    old: Option<&Meta>,
    new: Option<&Meta>,
    adoption: bool,
    orphaning: bool,
) -> bool {
    let (old, new) = match (operation, old, new) {
        ("DELETE" | "CONNECT", _, _) => return true,
        ("CREATE" | "UPDATE", _, None) | ("UPDATE", None, _) => return false,
        ("CREATE", _, Some(new)) => (None, new),
        ("UPDATE", Some(old), Some(new)) if markers(old) == markers(new) => return true,
        ("UPDATE", Some(old), Some(new)) => (Some(old), new),
        _ => return false,
    };
    let new_revision = new.1.get(REVISION);
    if new_revision.is_some_and(|r| revision(r).is_none())
        || new.1.get(HANDOVER).is_some_and(|s| successor(s).is_none())
    {
        return false;
    }
    let Some(old) = old else {
        return true;
    };
    match (owner(old), owner(new)) {
        (None, None) => true,
        (None, Some(_)) => adoption,
        (Some(_), None) => orphaning,
        (Some(a), Some(b)) if a == b => {
            let stored = old.1.get(REVISION).and_then(|r| revision(r));
            match (stored, new_revision.and_then(|r| revision(r))) {
                (Some(_), None) => false,
                (Some(s), Some(w)) => w >= s,
                (None, _) => true,
            }
        }
        (Some(a), Some(b)) => {
            let named = old.1.get(HANDOVER).and_then(|s| successor(s));
            named.is_some_and(|n| n == b && n != a)
        }
    }
}
