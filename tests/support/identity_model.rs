//! The reference model of the identity rules (bindings), written apart from the policy, for
//! the property tests (`tests/identity.rs`) and the fuzz oracle. It models the settings of
//! `model.rs` plus the bindings of `BINDINGS` and the default exempt writers.

use super::model::{self, Meta, Tuple};

/// The bindings, as settings JSON: deployers write their namespace's owner name; alice and
/// the ops group write owner kind "a" named "shared"; bob writes releases starting with "b".
pub const BINDINGS: &str = r#"[
  {"writers": {"serviceAccounts": ["*/deployer"]}, "owner": {"owner/name": "{serviceAccount.namespace}"}},
  {"writers": {"users": ["alice"], "groups": ["ops"]}, "owner": {"owner/kind": "a", "owner/name": "shared"}},
  {"writers": {"users": ["bob"]}, "owner": {"owner/release": "b*"}}
]"#;

/// Writers the model knows: (username, groups).
pub const WRITERS: [(&str, &[&str]); 7] = [
    (
        "system:serviceaccount:team-a:deployer",
        &["system:serviceaccounts"],
    ),
    (
        "system:serviceaccount:team-b:deployer",
        &["system:serviceaccounts"],
    ),
    (
        "system:serviceaccount:team-a:other",
        &["system:serviceaccounts"],
    ),
    ("alice", &[]),
    ("carol", &["ops"]),
    ("bob", &["dev"]),
    (
        "system:serviceaccount:kube-system:generic-garbage-collector",
        &[],
    ),
];

/// The settings JSON: `model::settings` with the bindings.
pub fn settings(adoption: bool, orphaning: bool) -> String {
    let base = model::settings(adoption, orphaning);
    format!(
        "{},\"bindings\":{BINDINGS}}}",
        base.strip_suffix('}').unwrap_or(&base)
    )
}

fn namespace_of(username: &str) -> Option<&str> {
    let rest = username.strip_prefix("system:serviceaccount:")?;
    let (ns, name) = rest.split_once(':')?;
    (!name.contains(':')).then_some(ns)
}

/// Owner slots: 0 owner/kind, 1 owner/name, 2 owner/release.
fn covered(o: &Tuple) -> bool {
    o[1].is_some()
        || (o[0].as_deref() == Some("a") && o[1].as_deref() == Some("shared"))
        || o[2].as_deref().is_some_and(|r| r.starts_with('b'))
}

fn bound(writer: usize, o: &Tuple) -> bool {
    let (user, groups) = WRITERS[writer];
    let deployer = user.ends_with(":deployer") && user.starts_with("system:serviceaccount:");
    (deployer && o[1].as_deref() == namespace_of(user))
        || ((user == "alice" || groups.contains(&"ops"))
            && o[0].as_deref() == Some("a")
            && o[1].as_deref() == Some("shared"))
        || (user == "bob" && o[2].as_deref().is_some_and(|r| r.starts_with('b')))
}

fn exempt(writer: usize) -> bool {
    WRITERS[writer].0 == "system:serviceaccount:kube-system:generic-garbage-collector"
}

fn may_write(writer: usize, owner: Option<Tuple>) -> bool {
    match owner {
        Some(o) if covered(&o) => bound(writer, &o) || exempt(writer),
        _ => true,
    }
}

/// Whether the identity rules let `writer` make the write (the label rules are `model`'s).
pub fn permits(operation: &str, old: Option<&Meta>, new: Option<&Meta>, writer: usize) -> bool {
    let (old_owner, new_owner) = (old.and_then(model::owner), new.and_then(model::owner));
    match operation {
        "CREATE" => may_write(writer, new_owner),
        "DELETE" => may_write(writer, old_owner),
        "UPDATE" => match (old_owner, new_owner) {
            (None, None) => true,
            (None, adopted) => may_write(writer, adopted),
            (released, None) => may_write(writer, released),
            // Kept: the stored owner; handed over: the successor.
            (Some(a), Some(b)) if a == b => may_write(writer, Some(a)),
            (Some(_), taken) => may_write(writer, taken),
        },
        _ => true,
    }
}
