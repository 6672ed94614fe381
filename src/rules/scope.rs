//! The scope rules, on the new object of a CREATE or UPDATE, under each scheme that has a kind
//! label: a cluster-scoped object may be owned only by a cluster-scoped owner kind (a
//! namespaced `Extension` cannot own a CRD), and, where a namespace label is set, a namespaced
//! owner owns only objects in its own namespace.

use crate::owners::{Marks, Schemes};
use crate::reading::request::Request;
use crate::rules::describe::{AllowedKinds, Subject, Tool};
use crate::rules::message::{Quoted, message};

/// The first scope rule the new object breaks, under any scheme.
pub fn check(
    request: &Request,
    schemes: &Schemes,
    subject: &Subject,
    new: &Marks,
) -> Result<(), String> {
    (0..schemes.list.len()).try_for_each(|s| check_scheme(request, schemes, s, subject, new))
}

fn check_scheme(
    request: &Request,
    schemes: &Schemes,
    s: usize,
    subject: &Subject,
    new: &Marks,
) -> Result<(), String> {
    let scheme = &schemes.list[s];
    let kind_label = scheme.kind_label.as_str();
    if kind_label.is_empty() {
        return Ok(());
    }
    let owner_kind = new.kind(scheme);
    let allowed = AllowedKinds(scheme);
    if request.is_cluster_scoped() {
        return match owner_kind {
            Some(kind) if !scheme.is_cluster_scoped_owner_kind(kind) => Err(message!(
                subject,
                " is cluster-scoped, but its owner kind ",
                kind_label,
                "=",
                kind,
                Tool(schemes, s),
                " is not a cluster-scoped owner kind (",
                allowed,
                "): a namespaced owner cannot own cluster-scoped objects. Manage it from a \
                 cluster-scoped owner, or remove the ",
                kind_label,
                " label.",
            )),
            _ => Ok(()),
        };
    }
    let ns_label = scheme.namespace_label.as_str();
    if ns_label.is_empty() || owner_kind.is_some_and(|k| scheme.is_cluster_scoped_owner_kind(k)) {
        return Ok(());
    }
    match new.namespace(scheme) {
        Some(owner_ns) if owner_ns != request.namespace() => Err(message!(
            subject,
            " is owned by a namespaced owner (",
            kind_label,
            "=",
            owner_kind.unwrap_or("<unset>"),
            Tool(schemes, s),
            ") in namespace ",
            Quoted(owner_ns),
            " (",
            ns_label,
            "=",
            owner_ns,
            "): a namespaced owner may own only objects in its own namespace. Create the \
             object in namespace ",
            Quoted(owner_ns),
            ", or manage it from a cluster-scoped owner (",
            allowed,
            ").",
        )),
        _ => Ok(()),
    }
}
