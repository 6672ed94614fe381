//! The stamping policy: on CREATE, and on UPDATE of an object that has no owner under any
//! scheme, a writer bound to exactly one owner gets that owner's missing keys added to the
//! object. Present keys are never changed (the validating policy judges them), and nothing
//! else is judged.

use crate::owners::{Marks, Schemes};
use crate::reading::request::{Object, Payload, Request};
use crate::reading::splice;
use crate::rules::verdict::Verdict;
use crate::rules::writers::bindings::Identities;

pub fn stamp(
    request: &Request,
    payload: &Payload,
    (schemes, identities): (&Schemes, &Identities),
    object: &Object,
    new: &Marks,
    old: Option<&Marks>,
) -> Verdict {
    let owned = |m: &Marks| schemes.list.iter().any(|s| m.owner(s).is_some());
    if request.sub_resource().is_some() || old.is_some_and(owned) {
        return Verdict::accept();
    }
    let writer = match payload.user_info(request) {
        Ok(writer) => writer,
        Err(message) => return Verdict::Unreadable { message },
    };
    let Some((s, values)) = identities.stamp(&writer) else {
        return Verdict::accept();
    };
    let scheme = &schemes.list[s];
    let owner = new.owner(scheme);
    let (mut labels, mut annotations) = (Vec::new(), Vec::new());
    for (i, value) in &values {
        if owner.get(*i).is_some() {
            continue;
        }
        let Some(key) = scheme.keys.get(*i) else {
            continue;
        };
        let list = if scheme.is_label(*i) {
            &mut labels
        } else {
            &mut annotations
        };
        list.push((key.as_str(), value.as_str()));
    }
    if labels.is_empty() && annotations.is_empty() {
        return Verdict::accept();
    }
    Verdict::Mutate {
        object: splice::stamped(payload, object, &labels, &annotations),
    }
}
