//! The controller ownerReference in the owner model: the owner Kubernetes' garbage collector
//! follows.
//!
//! A tool that sets a controller ownerReference on what it owns marks the owner twice: in its
//! owner keys, and in the reference whose deletion deletes the object. Both must name one
//! owner, or the object has two: the one its keys name, and the one whose deletion deletes it
//! (the state the race of two installs leaves behind without the policy). So:
//!
//! - the owner the controller names must be one with every owner the keys name, on a CREATE
//!   and on an UPDATE that changes either (the rules judge only those: `markers`);
//! - where no keys name an owner, the controller moves to another owner only as keys do:
//!   released first (orphaning), then adopted;
//! - adding a controller where there was none is adoption (`allowAdoption`) unless the keys
//!   name its owner, the tool's own write; removing it while the keys stay is orphaning
//!   (`allowOrphaning`), and so is the garbage collector's removal of a deleted owner's
//!   reference (`propagationPolicy: Orphan`), which the exempt writers may always make.
//!
//! Which owner a controller names is the tool's rule (`tools::olm_v1::extension_of`: a
//! ClusterExtension, or the extension of a boxcutter revision, looked up). OLM v1 and
//! Crossplane set controller references on the objects they own; OLM v0's references to a
//! ClusterServiceVersion are not controllers, and Helm, Flux, Argo CD, kubectl, kapp and Timoni
//! set none (docs/tools.md). Crossplane's label names the root of a tree of composite resources
//! and its controller the one that composes the object, so they are not paired: the controller
//! is held to one composite across writes (`crossplane_controller`).

use crate::owners::{Marks, Owned, Reference, Related, Schemes};
use crate::rules::describe::{Owners, Subject};
use crate::rules::message::{Part, Quoted, message, text};
use crate::rules::verdict::Verdict;
use crate::settings::{OLM_OWNER_KIND_LABEL, Settings};
use crate::tools::cluster::Cluster;
use crate::tools::{crossplane, olm_v1};

/// `ClusterExtension "x"`, as the messages name a reference.
impl Part for Reference<'_> {
    fn write_to(&self, out: &mut String) {
        text(
            out,
            if self.kind.is_empty() {
                "object"
            } else {
                self.kind
            },
        );
        text(out, " ");
        Quoted(self.name).write_to(out);
    }
}

/// The owner a reference names, as the messages say it: the reference, and for a revision
/// the extension it belongs to.
struct Named<'r, 'm>(&'r Reference<'m>, &'r str);

impl Part for Named<'_, '_> {
    fn write_to(&self, out: &mut String) {
        self.0.write_to(out);
        if self.0.kind != olm_v1::KIND {
            text(out, " (a revision of ClusterExtension ");
            Quoted(self.1).write_to(out);
            text(out, ")");
        }
    }
}

/// What the rules judge a controller with.
pub struct Judging<'j> {
    pub schemes: &'j Schemes,
    pub settings: &'j Settings,
    pub related: &'j Related,
    pub cluster: &'j dyn Cluster,
    /// Whether the writer is one of the exempt writers (read only where it decides).
    pub exempt: &'j dyn Fn() -> bool,
}

/// The controller rules of a CREATE (`old` None) or an UPDATE the owner rules accepted: of
/// each controlled scheme's tool, OLM v1's then Crossplane's.
pub fn judge(j: &Judging, subject: &Subject, old: Option<&Marks>, new: &Marks) -> Verdict {
    type Rule = fn(&Judging, usize, &Subject, Option<&Marks>, &Marks) -> Verdict;
    let rules: [(&str, Rule); 2] = [
        ("olm-v1", olm_v1_controller),
        ("crossplane", crossplane_controller),
    ];
    let mut warnings = Vec::new();
    for (tool, rule) in rules {
        let Some(s) = j.schemes.controlled_by(tool) else {
            continue;
        };
        match rule(j, s, subject, old, new) {
            Verdict::Accept { warnings: w } => warnings.extend(w),
            refusal => return refusal,
        }
    }
    Verdict::Accept { warnings }
}

/// Crossplane's controller (`tools::crossplane`): on an UPDATE of an object that was
/// Crossplane's (it carried the label and a controller), the controller stays the same
/// composite resource or goes (a release: the label with it, or, while the label stays, an
/// orphaning). A CREATE, and a controller added where there was none, are the keys' to judge:
/// the label and the XR that composes it are not paired (a nested XR's objects carry the root's
/// name).
fn crossplane_controller(
    j: &Judging,
    s: usize,
    subject: &Subject,
    old: Option<&Marks>,
    new: &Marks,
) -> Verdict {
    let Some((_, stored)) = old
        .and_then(|old| j.schemes.tools_controller(old))
        .filter(|(scheme, _)| *scheme == s)
    else {
        return Verdict::accept();
    };
    fn key<'m>(r: &Reference<'m>) -> (&'m str, &'m str, &'m str) {
        (r.api_version, r.kind, r.name)
    }
    match new.controller(j.schemes) {
        Some(written) if crossplane::same_composite(key(&stored), key(&written)) => {
            Verdict::accept()
        }
        Some(written) => Verdict::reject(message!(
            subject,
            "'s controller ownerReference names ",
            stored,
            ", and this UPDATE would make it ",
            written,
            ": an object has a single owner, and Crossplane's is the composite resource that \
             controls it (two composites composing one object take it back and forth: \
             crossplane/crossplane#5035). The current composite must first release it (drop \
             it from its composition, or be deleted with --cascade=orphan), then the new one \
             can adopt it.",
        )),
        None if !new.owner(&j.schemes.list[s]).is_some()
            || j.settings.allow_orphaning()
            || (j.exempt)() =>
        {
            Verdict::accept()
        }
        None => Verdict::reject(message!(
            subject,
            ": this UPDATE removes its controller ownerReference ",
            stored,
            " and keeps its ",
            crossplane::COMPOSITE,
            " label, and orphaning is off (allowOrphaning: false). A composite releases an \
             object by removing its labels; only the exempt writers (the garbage collector) \
             remove the reference alone.",
        )),
    }
}

/// OLM v1's controller (`tools::olm_v1`), of scheme `s`.
fn olm_v1_controller(
    j: &Judging,
    s: usize,
    subject: &Subject,
    old: Option<&Marks>,
    new: &Marks,
) -> Verdict {
    let written = new.controller(j.schemes);
    let stored = old.and_then(|m| m.controller(j.schemes));
    if written.is_none() && stored.is_none() {
        return Verdict::accept();
    }
    let owners = new.owners(j.schemes);
    let extension = |r: &Reference| {
        olm_v1::extension_of(j.cluster, (r.api_version, r.kind, r.name)).map_err(|e| {
            if crate::tools::cluster::Failure::of(&e) == crate::tools::cluster::Failure::NotFound {
                return Verdict::reject(message!(
                    subject,
                    ": its controller ownerReference ",
                    *r,
                    " names no ClusterExtension: ",
                    e.trim_end_matches('.'),
                    ". Write the controller reference of the extension the keys name, or of \
                     one of its revisions that exists.",
                ));
            }
            Verdict::reject(message!(
                subject,
                ": which ClusterExtension its controller ownerReference ",
                *r,
                " names could not be checked, and the policy refuses what it cannot check: ",
                e.trim_end_matches('.'),
                ". ",
                crate::tools::cluster::Failure::of(&e).remedy(),
            ))
        })
    };
    let new_extension = match written.as_ref().map(extension).transpose() {
        Ok(e) => e.flatten(),
        Err(refusal) => return refusal,
    };
    match (new_extension, old) {
        (Some(ext), _) => {
            let Some(written) = written else {
                return Verdict::accept();
            };
            let named = j.schemes.named(
                s,
                &[
                    (olm_v1::OWNER_NAME, ext.as_str()),
                    (OLM_OWNER_KIND_LABEL, olm_v1::KIND),
                ],
            );
            let controller = Owned {
                scheme: s,
                owner: named,
            };
            if let Some(other) = (owners.iter()).find(|o| !names(j, &controller, o)) {
                return two_owners(j.schemes, subject, other, &written, &ext);
            }
            let Some(old) = old else {
                return Verdict::accept();
            };
            if !owners.is_empty() {
                return Verdict::accept();
            }
            // No keys: the controller alone names the owner.
            let before = match stored.as_ref().map(extension).transpose() {
                Ok(e) => e.flatten(),
                Err(refusal) => return refusal,
            };
            match (before, stored) {
                (Some(before), Some(stored)) if before != ext => Verdict::reject(message!(
                    subject,
                    "'s controller ownerReference names ",
                    Named(&stored, &before),
                    ", and this UPDATE would make it ",
                    Named(&written, &ext),
                    ": an object has a single owner, and the controller is the one the \
                         garbage collector follows. The current owner must first release it \
                         (remove its controller ownerReference), then the new owner can adopt it.",
                )),
                (None, _) if !j.settings.allow_adoption() && old.owners(j.schemes).is_empty() => {
                    Verdict::reject(message!(
                        subject,
                        " has no owner, and this UPDATE adds a controller ownerReference to ",
                        Named(&written, &ext),
                        ": adoption is off (allowAdoption: false). Create the object with its \
                         owner instead.",
                    ))
                }
                _ => Verdict::accept(),
            }
        }
        (None, Some(_)) => {
            let Some(stored) = stored else {
                return Verdict::accept();
            };
            let was_tools = olm_v1::controls(stored.api_version, stored.kind);
            if !was_tools || j.settings.allow_orphaning() || (j.exempt)() {
                return Verdict::accept();
            }
            Verdict::reject(message!(
                subject,
                ": this UPDATE removes its controller ownerReference ",
                stored,
                ", and orphaning is off (allowOrphaning: false). The owner releases an object \
                 by removing its owner keys and its controller reference; only the exempt \
                 writers (the garbage collector) remove the reference alone.",
            ))
        }
        (None, None) => Verdict::accept(),
    }
}

/// Whether the owner the controller names (`controller`, of the controlling scheme) is one
/// with `owned`, an owner the keys name: under its own scheme the keys it has must agree
/// (some of OLM v1's writes carry `owner-name` alone), under another as an alias relates them.
fn names(j: &Judging, controller: &Owned, owned: &Owned) -> bool {
    if owned.scheme != controller.scheme {
        return j.schemes.same_owner(
            j.related,
            (controller.scheme, &controller.owner),
            (owned.scheme, &owned.owner),
        );
    }
    let scheme = &j.schemes.list[owned.scheme];
    [olm_v1::OWNER_NAME, OLM_OWNER_KIND_LABEL]
        .into_iter()
        .filter_map(|key| scheme.key_index(key))
        .all(|i| match owned.owner.key(i) {
            None => true,
            value => value == controller.owner.key(i),
        })
}

fn two_owners(
    schemes: &Schemes,
    subject: &Subject,
    other: &Owned,
    written: &Reference,
    extension: &str,
) -> Verdict {
    Verdict::reject(message!(
        subject,
        ": its owner keys name ",
        Owners(schemes, std::slice::from_ref(other)),
        ", but its controller ownerReference names ",
        Named(written, extension),
        ": an object has a single owner, and its keys and the controller the garbage \
         collector follows must name the same one. Write the controller reference of the \
         owner the keys name; to move the object to another owner, hand it over (keys and \
         controller together).",
    ))
}
