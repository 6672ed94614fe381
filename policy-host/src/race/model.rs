//! The invariant, judged apart from the policy: a small reference model of owners, revisions
//! and successors over the OLM v1 keys, applied to every committed transition of every object.

use serde_json::Value;

pub const OWNER_KIND: &str = "olm.operatorframework.io/owner-kind";
pub const OWNER_NAME: &str = "olm.operatorframework.io/owner-name";
pub const REVISION: &str = "olm.operatorframework.io/revision";
pub const HANDOVER: &str = "single-owner.kubewarden.io/handover-to";

/// An owner: the values of the two owner labels, None where absent.
pub type Owner = [Option<String>; 2];

pub fn label<'v>(object: &'v Value, key: &str) -> Option<&'v str> {
    object["metadata"]["labels"][key].as_str()
}

pub fn annotation<'v>(object: &'v Value, key: &str) -> Option<&'v str> {
    object["metadata"]["annotations"][key].as_str()
}

/// The owner of an object, or None when it has none of the owner labels.
pub fn owner(object: &Value) -> Option<Owner> {
    let o = [label(object, OWNER_KIND), label(object, OWNER_NAME)].map(|v| v.map(String::from));
    o.iter().any(Option::is_some).then_some(o)
}

/// A revision: digits, no leading zero, 64 bits.
pub fn revision(object: &Value) -> Option<u64> {
    let v = annotation(object, REVISION)?;
    let ok = !v.is_empty()
        && v.bytes().all(|b| b.is_ascii_digit())
        && !(v.len() > 1 && v.starts_with('0'));
    if ok { v.parse().ok() } else { None }
}

/// The successor an object names: `key=value` pairs of the owner keys.
pub fn successor(object: &Value) -> Option<Owner> {
    let v = annotation(object, HANDOVER)?;
    let mut o: Owner = [None, None];
    for pair in v.split(',') {
        let (k, val) = pair.split_once('=')?;
        let i = [OWNER_KIND, OWNER_NAME].iter().position(|key| *key == k)?;
        if o[i].replace(val.to_string()).is_some() {
            return None;
        }
    }
    o.iter().any(Option::is_some).then_some(o)
}

pub fn show(owner: &Option<Owner>) -> String {
    match owner {
        None => "(none)".into(),
        Some([kind, name]) => format!(
            "{}/{}",
            kind.as_deref().unwrap_or("-"),
            name.as_deref().unwrap_or("-")
        ),
    }
}

/// What is wrong with the committed transition `before` -> `after`, if anything: an owner
/// changed to another without the stored object naming it as successor, or a revision of the
/// same owner went down.
pub fn violation(before: &Value, after: &Value) -> Option<String> {
    let (a, b) = (owner(before), owner(after));
    match (&a, &b) {
        (Some(x), Some(y)) if x != y => {
            if successor(before).as_ref() == Some(y) {
                None
            } else {
                Some(format!("owner changed from {} to {}", show(&a), show(&b)))
            }
        }
        (Some(_), Some(_)) => match (revision(before), revision(after)) {
            (Some(r0), Some(r1)) if r1 < r0 => Some(format!(
                "revision of {} went down from {r0} to {r1}",
                show(&a)
            )),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(name: Option<&str>, rev: Option<&str>, to: Option<&str>) -> Value {
        let mut o = json!({"metadata": {"labels": {}, "annotations": {}}});
        if let Some(n) = name {
            o["metadata"]["labels"][OWNER_KIND] = json!("ClusterExtension");
            o["metadata"]["labels"][OWNER_NAME] = json!(n);
        }
        if let Some(r) = rev {
            o["metadata"]["annotations"][REVISION] = json!(r);
        }
        if let Some(t) = to {
            o["metadata"]["annotations"][HANDOVER] =
                json!(format!("{OWNER_KIND}=ClusterExtension,{OWNER_NAME}={t}"));
        }
        o
    }

    #[test]
    fn transitions_are_judged() {
        assert!(violation(&obj(Some("a"), None, None), &obj(Some("b"), None, None)).is_some());
        assert!(
            violation(
                &obj(Some("a"), None, Some("b")),
                &obj(Some("b"), None, None)
            )
            .is_none()
        );
        assert!(
            violation(
                &obj(Some("a"), None, Some("c")),
                &obj(Some("b"), None, None)
            )
            .is_some()
        );
        assert!(violation(&obj(None, None, None), &obj(Some("b"), None, None)).is_none());
        assert!(violation(&obj(Some("a"), None, None), &obj(None, None, None)).is_none());
        assert!(
            violation(
                &obj(Some("a"), Some("5"), None),
                &obj(Some("a"), Some("4"), None)
            )
            .is_some()
        );
        assert!(
            violation(
                &obj(Some("a"), Some("4"), None),
                &obj(Some("a"), Some("5"), None)
            )
            .is_none()
        );
        assert!(
            violation(
                &obj(Some("a"), Some("9"), None),
                &obj(Some("a"), Some("10"), None)
            )
            .is_none()
        );
    }
}
