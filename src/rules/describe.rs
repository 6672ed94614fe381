//! How messages name objects, owners and keys: the parts every rule family's messages share.
//! In a policy of one tool, owners are shown as before schemes (`[key=value, ...]`); with
//! several, each is followed by its tool's name (`[...] (helm)`).

use crate::owners::{Owned, Owner, Scheme, Schemes};
use crate::reading::request::{Metadata, Request};
use crate::rules::message::{Part, Quoted, text};

/// Names the object as kubectl would: kind, name, namespace, subresource.
pub struct Subject<'r, 'a> {
    request: &'r Request<'a>,
    name: &'r str,
}

impl<'r, 'a> Subject<'r, 'a> {
    /// The name is the request's, else the new or old object's (CREATE with `generateName`
    /// has none yet).
    pub fn new(request: &'r Request<'a>, new: &'r Metadata, old: Option<&'r Metadata>) -> Self {
        let name = [
            Some(request.name()),
            new.name.as_deref(),
            old.and_then(|o| o.name.as_deref()),
        ]
        .into_iter()
        .flatten()
        .find(|n| !n.is_empty())
        .unwrap_or("");
        Subject { request, name }
    }
}

impl Part for Subject<'_, '_> {
    fn write_to(&self, out: &mut String) {
        let r = self.request;
        let kind = match r.kind() {
            "" => "object",
            kind => kind,
        };
        text(out, kind);
        text(out, " ");
        Quoted(self.name).write_to(out);
        if !r.is_cluster_scoped() {
            text(out, " in namespace ");
            Quoted(r.namespace()).write_to(out);
        }
        if let Some(sub) = r.sub_resource() {
            text(out, " (subresource ");
            text(out, sub);
            text(out, ")");
        }
    }
}

/// Owner keys written as `key=value` pairs; an absent key as `key (unset)`.
pub struct Pairs<'s, 'o, 'a> {
    scheme: &'s Scheme,
    owner: &'o Owner<'a>,
    other: Option<&'o Owner<'a>>,
}

impl<'s, 'o, 'a> Pairs<'s, 'o, 'a> {
    /// The pairs of `owner` whose values differ from `other`.
    pub fn differing(scheme: &'s Scheme, owner: &'o Owner<'a>, other: &'o Owner<'a>) -> Self {
        Pairs {
            scheme,
            owner,
            other: Some(other),
        }
    }

    /// The keys present on `owner`.
    pub fn all(scheme: &'s Scheme, owner: &'o Owner<'a>) -> Self {
        Pairs {
            scheme,
            owner,
            other: None,
        }
    }
}

impl Part for Pairs<'_, '_, '_> {
    fn write_to(&self, out: &mut String) {
        let mut first = true;
        for (i, (key, value)) in self.scheme.keys.iter().zip(self.owner.values()).enumerate() {
            let shown = match self.other {
                Some(other) => other.get(i) != value,
                None => value.is_some(),
            };
            if !shown {
                continue;
            }
            text(out, if first { "[" } else { ", " });
            first = false;
            text(out, key);
            match value {
                Some(v) => {
                    text(out, "=");
                    text(out, v);
                }
                None => text(out, " (unset)"),
            }
        }
        text(out, if first { "[]" } else { "]" });
    }
}

/// An owner with its tool: `[key=value, ...] (helm)`; without the tool in a one-tool policy.
pub struct OwnerOf<'s, 'o, 'a>(pub &'s Schemes, pub &'o Owned<'a>);

impl Part for OwnerOf<'_, '_, '_> {
    fn write_to(&self, out: &mut String) {
        let OwnerOf(schemes, owned) = self;
        let Some(scheme) = schemes.list.get(owned.scheme) else {
            return;
        };
        Pairs::all(scheme, &owned.owner).write_to(out);
        Tool(schemes, owned.scheme).write_to(out);
    }
}

/// ` (helm)`, the tool of scheme `i`, in a policy of several tools.
pub struct Tool<'s>(pub &'s Schemes, pub usize);

impl Part for Tool<'_> {
    fn write_to(&self, out: &mut String) {
        if let (true, Some(scheme)) = (self.0.several(), self.0.list.get(self.1)) {
            text(out, " (");
            text(out, &scheme.name);
            text(out, ")");
        }
    }
}

/// Several owners, each with its tool, joined by " and ".
pub struct Owners<'s, 'o, 'a>(pub &'s Schemes, pub &'o [Owned<'a>]);

impl Part for Owners<'_, '_, '_> {
    fn write_to(&self, out: &mut String) {
        for (i, owned) in self.1.iter().enumerate() {
            text(out, if i == 0 { "" } else { " and " });
            OwnerOf(self.0, owned).write_to(out);
        }
    }
}

/// The handover route, in one sentence, when handover is on: the annotation the current
/// owner would set to name `successor`.
pub struct HandoverRoute<'s, 'o, 'a>(pub &'s Schemes, pub &'o Owned<'a>);

impl Part for HandoverRoute<'_, '_, '_> {
    fn write_to(&self, out: &mut String) {
        let HandoverRoute(schemes, successor) = self;
        if schemes.handover_annotation.is_empty() {
            return;
        }
        text(
            out,
            " Or, in one write, the current owner hands it over by setting the annotation ",
        );
        text(out, &schemes.handover_annotation);
        text(out, "=");
        Selector(schemes, successor).write_to(out);
        text(out, ", and then the new owner can take it.");
    }
}

/// An owner in the handover annotation's form: `key=value,key=value`.
pub struct Selector<'s, 'o, 'a>(pub &'s Schemes, pub &'o Owned<'a>);

impl Part for Selector<'_, '_, '_> {
    fn write_to(&self, out: &mut String) {
        let Selector(schemes, owned) = self;
        let Some(scheme) = schemes.list.get(owned.scheme) else {
            return;
        };
        let present = scheme.keys.iter().zip(owned.owner.values());
        for (i, (key, value)) in present.filter_map(|(k, v)| Some((k, v?))).enumerate() {
            if i > 0 {
                text(out, ",");
            }
            text(out, key);
            text(out, "=");
            text(out, value);
        }
    }
}

/// An example handover value for a scheme's owner keys.
pub struct SelectorExample<'s>(pub &'s Scheme);

impl Part for SelectorExample<'_> {
    fn write_to(&self, out: &mut String) {
        let scheme = self.0;
        for (i, key) in scheme.keys.iter().enumerate() {
            if i > 0 {
                text(out, ",");
            }
            let value = if *key == scheme.kind_label {
                (scheme.cluster_scoped_owner_kinds.first()).map_or("Kind", String::as_str)
            } else {
                "new-owner"
            };
            text(out, key);
            text(out, "=");
            text(out, value);
        }
    }
}

/// A scheme's owner keys, for "remove these" advice: `label a, annotation b`.
pub struct OwnerKeys<'s>(pub &'s Scheme);

impl Part for OwnerKeys<'_> {
    fn write_to(&self, out: &mut String) {
        for (i, key) in self.0.keys.iter().enumerate() {
            if i > 0 {
                text(out, ", ");
            }
            text(
                out,
                if self.0.is_label(i) {
                    "label "
                } else {
                    "annotation "
                },
            );
            text(out, key);
        }
    }
}

/// Every scheme's owner keys, for the malformed-successor message: `a, b` in one tool,
/// `olm-v1: a, b; helm: c, d` with several.
pub struct AllOwnerKeys<'s>(pub &'s Schemes);

impl Part for AllOwnerKeys<'_> {
    fn write_to(&self, out: &mut String) {
        let schemes = self.0;
        for (n, scheme) in schemes.list.iter().enumerate() {
            text(out, if n == 0 { "" } else { "; " });
            if schemes.several() {
                text(out, &scheme.name);
                text(out, ": ");
            }
            text(out, &scheme.keys.join(", "));
        }
    }
}

/// The owner kinds a scheme allows on cluster-scoped objects.
pub struct AllowedKinds<'s>(pub &'s Scheme);

impl Part for AllowedKinds<'_> {
    fn write_to(&self, out: &mut String) {
        match self.0.cluster_scoped_owner_kinds.as_slice() {
            [] => text(out, "no owner kind is allowed on cluster-scoped objects"),
            kinds => {
                text(out, "allowed: ");
                text(out, &kinds.join(", "));
            }
        }
    }
}
