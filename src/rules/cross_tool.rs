//! One owner across tools: an object owned under one scheme may not gain an owner under
//! another, and none is created carrying two. Only in a policy of several schemes; each
//! scheme's own rules (`same_owner`) have judged the owner under it already.
//!
//! Moving an object between tools is a handover in steps, each a write a tool or an admin
//! makes anyway: the current owner (or an admin) names the successor in the handover
//! annotation; the new tool adds its keys, and from then on the object is the successor's
//! (the old tool's keys are what is left of its former owner); the old tool's keys are
//! removed. While the annotation names a successor, no third owner can take the object, not
//! even when it has none. An owner and its aliases (`owners::Schemes::same_owner`) are one
//! owner on an object created with them all; a change of either, their keys coming or going
//! included, is a change of owner.

use crate::owners::{Marks, Owned, Related, Schemes};
use crate::rules::describe::{OwnerKeys, OwnerOf, Owners, Selector, Subject};
use crate::rules::message::{Part, message, text};
use crate::rules::verdict::Verdict;
use crate::settings::Settings;

/// Where an object stands across tools: the owners it carries, and the successor it names.
struct Across<'m> {
    owners: Vec<Owned<'m>>,
    successor: Option<Owned<'m>>,
}

impl<'m> Across<'m> {
    fn of(schemes: &Schemes, marks: &Marks<'m>) -> Across<'m> {
        Across {
            owners: marks.owners(schemes),
            successor: (marks.successor(schemes)).and_then(|v| schemes.parse_successor(v).ok()),
        }
    }

    fn carries(&self, owned: &Owned) -> bool {
        self.owners.contains(owned)
    }

    fn has_scheme(&self, scheme: usize) -> bool {
        self.owners.iter().any(|o| o.scheme == scheme)
    }

    /// A cross-tool handover under way: the successor named is one of the owners, and the
    /// others (what is left of the former owner) are one owner of other tools. Returns the
    /// successor's owners and the former owner's.
    fn handing_over(
        &self,
        schemes: &Schemes,
        related: &Related,
    ) -> Option<(Vec<Owned<'m>>, Vec<Owned<'m>>)> {
        let successor = self.successor.as_ref().filter(|s| self.carries(s))?;
        let (to, from): (Vec<_>, Vec<_>) = (self.owners.iter().cloned()).partition(|o| {
            schemes.same_owner(
                related,
                (o.scheme, &o.owner),
                (successor.scheme, &successor.owner),
            )
        });
        let other_tools = from.iter().all(|o| o.scheme != successor.scheme);
        (!from.is_empty() && other_tools && schemes.one_owner(related, &from)).then_some((to, from))
    }
}

/// The schemes whose owner on the stored object is what is left of its former owner in a
/// cross-tool handover: the object is the successor's, and the identity rules do not bind its
/// writes to the former owner's writers.
pub fn leftovers(schemes: &Schemes, related: &Related, old: &Marks) -> Vec<usize> {
    let stored = Across::of(schemes, old);
    match stored.handing_over(schemes, related) {
        Some((_, from)) => from.iter().map(|o| o.scheme).collect(),
        None => Vec::new(),
    }
}

/// Judges a CREATE (`old` None) or an UPDATE across tools, adoption and orphaning included.
pub fn judge(
    schemes: &Schemes,
    related: &Related,
    settings: &Settings,
    subject: &Subject,
    old: Option<&Marks>,
    new: &Marks,
) -> Verdict {
    let new = Across::of(schemes, new);
    let Some(old) = old else {
        return created(schemes, related, subject, &new);
    };
    let old = Across::of(schemes, old);
    let update = Update::new(schemes, related, settings, subject, old, new);
    match (&update.stored_handover, update.added.is_empty()) {
        (Some((to, from)), true) => update.during_handover(to, from),
        (None, true) => update.no_tool_added(),
        (_, false) if update.one_owner(&update.new.owners) => update.another_tools_owner(),
        (_, false) => update.second_owner(),
    }
}

/// A new object: one owner across tools (an owner and its aliases are one), or none.
fn created(schemes: &Schemes, related: &Related, subject: &Subject, new: &Across) -> Verdict {
    if schemes.one_owner(related, &new.owners) {
        return Verdict::accept();
    }
    Verdict::reject(message!(
        subject,
        " would be created with the owners of two tools, ",
        Owners(schemes, &new.owners),
        ": an object has one owner across tools, and two tools that both own it undo \
         each other's writes. Create it from one tool only: remove it from the other \
         tool's sources (if the two tools write one owner, relate their schemes with an \
         alias).",
    ))
}

/// An UPDATE across tools: where the stored object and the new one stand, and the new
/// object's owners under the tools the stored one has no owner under (`added`) or has
/// (`kept`).
struct Update<'c, 'm> {
    schemes: &'c Schemes,
    related: &'c Related,
    settings: &'c Settings,
    subject: &'c Subject<'c, 'c>,
    old: Across<'m>,
    new: Across<'m>,
    added: Vec<Owned<'m>>,
    kept: Vec<Owned<'m>>,
    /// A cross-tool handover under way on the stored object: the successor's owners and
    /// the former owner's (`Across::handing_over`).
    stored_handover: Option<(Vec<Owned<'m>>, Vec<Owned<'m>>)>,
}

impl<'c, 'm> Update<'c, 'm> {
    fn new(
        schemes: &'c Schemes,
        related: &'c Related,
        settings: &'c Settings,
        subject: &'c Subject<'c, 'c>,
        old: Across<'m>,
        new: Across<'m>,
    ) -> Self {
        let (kept, added) = (new.owners.iter().cloned()).partition(|o| old.has_scheme(o.scheme));
        let stored_handover = old.handing_over(schemes, related);
        Update {
            schemes,
            related,
            settings,
            subject,
            old,
            new,
            added,
            kept,
            stored_handover,
        }
    }

    fn one_owner(&self, owners: &[Owned]) -> bool {
        self.schemes.one_owner(self.related, owners)
    }

    fn same_owner(&self, a: &Owned, b: &Owned) -> bool {
        (self.schemes).same_owner(self.related, (a.scheme, &a.owner), (b.scheme, &b.owner))
    }

    /// Whether the tool whose keys are added takes the object over from the tool that owns
    /// it, by the rule of an alias that lets it (a Flux HelmRelease adopting the Helm release
    /// it installs under the same name): the stored owners kept as they are, the added ones of
    /// one tool, and all of them one owner by the rule.
    fn takes_over(&self) -> bool {
        let (Some(driver), Some(driven)) = (self.added.first(), self.kept.first()) else {
            return false;
        };
        (self.added.iter()).all(|o| o.scheme == driver.scheme)
            && (self.kept.iter()).all(|o| o.scheme == driven.scheme)
            && self.kept.iter().all(|o| self.old.carries(o))
            && self.old.owners.len() == self.kept.len()
            && self.schemes.takes_over(driver.scheme, driven.scheme)
            && self.one_owner(&self.new.owners)
    }

    /// The successor the stored object names, when it is an owner other than the stored one.
    fn named(&self) -> Option<&Owned<'m>> {
        self.old.successor.as_ref().filter(|s| !self.old.carries(s))
    }

    /// Whether `owners` are the named successor (and its aliases).
    fn is_successor(&self, owners: &[Owned<'m>]) -> bool {
        self.named()
            .is_some_and(|s| owners.contains(s) && owners.iter().all(|o| self.same_owner(o, s)))
    }

    /// No tool's keys added while a handover between tools is under way on the stored object
    /// (`to`: the successor's owners, `from`: what is left of the former owner's): the
    /// handover goes on or is finished, and the former owner cannot take the object back.
    fn during_handover(&self, to: &[Owned<'m>], from: &[Owned<'m>]) -> Verdict {
        let (schemes, subject) = (self.schemes, self.subject);
        let handover = &schemes.handover_annotation;
        if self.new.owners.is_empty() {
            // Both the successor's keys and the former owner's go: the object is released.
            return released(schemes, self.settings, subject, &self.old.owners);
        }
        if !to.iter().all(|o| self.new.carries(o)) {
            return Verdict::reject(message!(
                subject,
                " was handed over to ",
                Owners(schemes, to),
                " (",
                handover,
                "), and this UPDATE would remove its keys and leave those of its former \
                 owner, ",
                Owners(schemes, from),
                ": the former owner cannot take it back. Remove the former owner's keys to \
                 finish the handover, or have the successor hand it back (name the former \
                 owner in ",
                handover,
                ").",
            ));
        }
        if self.one_owner(&self.new.owners) {
            return Verdict::warn(message!(
                subject,
                " released by its former owner ",
                Owners(schemes, from),
                ": the handover to ",
                Owners(schemes, to),
                " is finished",
            ));
        }
        let same_successor =
            (self.new.handing_over(schemes, self.related)).is_some_and(|(to2, _)| to2 == to);
        if !same_successor {
            return Verdict::reject(message!(
                subject,
                " is owned by ",
                Owners(schemes, to),
                ", the successor named in ",
                handover,
                ", and still carries the keys of its former owner ",
                Owners(schemes, from),
                ": this UPDATE would remove or change the annotation but keep both, \
                 leaving two owners. Remove the former owner's keys (",
                KeysOf(schemes, from),
                ") first, or in the same write.",
            ));
        }
        Verdict::warn(message!(
            subject,
            " is owned by ",
            Owners(schemes, to),
            ", the successor named in ",
            handover,
            "; the owner keys of its former owner ",
            Owners(schemes, from),
            " are left: remove them (",
            KeysOf(schemes, from),
            ") to finish the handover",
        ))
    }

    /// No tool's keys added, no handover between tools under way: the owners are kept,
    /// released, or changed within their tools, where an aliased owner's keys change together.
    fn no_tool_added(&self) -> Verdict {
        let (schemes, subject) = (self.schemes, self.subject);
        let (old, new) = (&self.old.owners, &self.new.owners);
        if new.is_empty() && !old.is_empty() {
            return released(schemes, self.settings, subject, old);
        }
        if new.len() < old.len() && self.one_owner(old) && !self.is_successor(new) {
            // An aliased owner loses one tool's keys and keeps another's.
            return Verdict::reject(message!(
                subject,
                " is owned by ",
                Owners(schemes, old),
                ", one owner under aliased tools, and this UPDATE would keep only ",
                Owners(schemes, new),
                ": that changes its owner. Keep every tool's keys, or remove them all.",
            ));
        }
        if !self.one_owner(new) && self.one_owner(old) {
            return Verdict::reject(message!(
                subject,
                " is owned by ",
                Owners(schemes, old),
                ", one owner under aliased tools, and this UPDATE would give them different \
                 owners, ",
                Owners(schemes, new),
                ": that gives the object two owners. Change every tool's keys together (a \
                 handover), or none.",
            ));
        }
        if !self.one_owner(new) {
            return Verdict::warn(message!(
                subject,
                " carries the owners of two tools, ",
                Owners(schemes, new),
                ", which this policy refuses on new objects and on writes that add an \
                 owner: remove one tool's keys",
            ));
        }
        Verdict::accept()
    }

    /// Another tool's keys added, and one owner after the write: an adoption (only the named
    /// successor's, while one is named), the named successor taking the object in one write,
    /// an aliased tool's keys added to an owned object, or another tool's owner instead of
    /// the stored one.
    fn another_tools_owner(&self) -> Verdict {
        let (schemes, subject) = (self.schemes, self.subject);
        let handover = &schemes.handover_annotation;
        let (old, added, kept) = (&self.old.owners, &self.added, &self.kept);
        if !kept.is_empty() {
            let disjoint = !self.new.owners.iter().any(|o| self.old.carries(o));
            if disjoint && self.is_successor(&self.new.owners) {
                // A handover within a tool (judged there) to a successor stamped by its aliases.
                return Verdict::accept();
            }
            if self.takes_over() {
                return Verdict::warn(message!(
                    subject,
                    " adopted by owner ",
                    Owners(schemes, added),
                    ", which manages its owner ",
                    Owners(schemes, kept),
                ));
            }
            // An aliased tool's keys are one owner with the others' on an object created
            // with them all; added to an owned object, they change its owner.
            return Verdict::reject(message!(
                subject,
                " is owned by ",
                Owners(schemes, kept),
                ", and this UPDATE would add ",
                Owners(schemes, added),
                ": keys of aliased tools are one owner on an object created with them all; \
                 added to an owned object, they are a second tool's claim on it, and two tools \
                 that both own it undo each other's writes. Keep it in one tool: remove it \
                 from the other tool's sources.",
            ));
        }
        if old.is_empty() {
            if self.named().is_some() && !self.is_successor(added) {
                return Verdict::reject(message!(
                    subject,
                    " has no owner and is reserved for the successor ",
                    self.named().map(|s| OwnerOf(schemes, s)),
                    " named in ",
                    handover,
                    ", and this UPDATE would give it to ",
                    Owners(schemes, added),
                    ": only the named successor can take it. Let the successor take it, or \
                     change or remove the ",
                    handover,
                    " annotation.",
                ));
            }
            return adopted(schemes, self.settings, subject, &self.new.owners);
        }
        if self.is_successor(added) {
            return Verdict::warn(handed_over(schemes, subject, old, added, None));
        }
        Verdict::reject(message!(
            subject,
            " is owned by ",
            Owners(schemes, old),
            ", and this UPDATE would give it to ",
            Owners(schemes, added),
            " instead: an object has one owner across tools, and two tools that both own it \
             undo each other's writes.",
            Advice(schemes, old, added),
        ))
    }

    /// Another tool's keys added beside the stored owner's: a second owner, refused, unless
    /// the named successor adds its keys (the first step of a handover between tools, whose
    /// last removes the former owner's).
    fn second_owner(&self) -> Verdict {
        let (schemes, subject) = (self.schemes, self.subject);
        let (old, added) = (&self.old.owners, &self.added);
        // The new object still names the successor (or one of its aliases).
        let same_successor = (self.new.successor.as_ref())
            .is_some_and(|n| (self.named()).is_some_and(|s| self.same_owner(n, s)));
        if self.stored_handover.is_none()
            && self.one_owner(old)
            && same_successor
            && self.is_successor(added)
            && self.new.handing_over(schemes, self.related).is_some()
            && old.iter().all(|o| self.new.carries(o))
        {
            let finish = Some(KeysOf(schemes, old));
            return Verdict::warn(handed_over(schemes, subject, old, added, finish));
        }
        let current = if self.kept.is_empty() {
            old
        } else {
            &self.kept
        };
        Verdict::reject(message!(
            subject,
            " is owned by ",
            Owners(schemes, current),
            ", and this UPDATE would give it a second owner, ",
            Owners(schemes, added),
            ": an object has one owner across tools, and two tools that both own it undo each \
             other's writes.",
            Advice(schemes, current, added),
        ))
    }
}

/// The warning of a handover between tools: done in one write, or (with the former owner's
/// keys still to remove) started.
fn handed_over(
    schemes: &Schemes,
    subject: &Subject,
    from: &[Owned],
    to: &[Owned],
    finish: Option<KeysOf>,
) -> String {
    message!(
        subject,
        " handed over from owner ",
        Owners(schemes, from),
        " to owner ",
        Owners(schemes, to),
        ", the successor its owner named in ",
        schemes.handover_annotation,
        finish
            .as_ref()
            .map(|_| ": remove the former owner's keys ("),
        finish,
        finish.as_ref().map(|_| ") to finish"),
    )
}

/// An unowned object gains an owner: accepted with a warning, unless adoption is off.
fn adopted(schemes: &Schemes, settings: &Settings, subject: &Subject, owners: &[Owned]) -> Verdict {
    if settings.allow_adoption() {
        return Verdict::warn(message!(
            subject,
            " adopted by owner ",
            Owners(schemes, owners)
        ));
    }
    Verdict::reject(message!(
        subject,
        " has no owner, and this UPDATE would give it the owner ",
        Owners(schemes, owners),
        ", but adoption is disabled (allowAdoption: false): an object's owner must create it.",
    ))
}

/// An owned object loses every owner: accepted with a warning, unless orphaning is off.
fn released(
    schemes: &Schemes,
    settings: &Settings,
    subject: &Subject,
    owners: &[Owned],
) -> Verdict {
    if settings.allow_orphaning() {
        return Verdict::warn(message!(
            subject,
            " orphaned: it no longer has owner ",
            Owners(schemes, owners),
        ));
    }
    Verdict::reject(message!(
        subject,
        " is owned by ",
        Owners(schemes, owners),
        ", and this UPDATE would remove its owner keys, but orphaning is disabled \
         (allowOrphaning: false): keep the owner keys (",
        KeysOf(schemes, owners),
        "), or delete the object.",
    ))
}

/// The owner keys of the schemes of `owners`: `label a, annotation b`.
struct KeysOf<'s, 'o, 'a>(&'s Schemes, &'o [Owned<'a>]);

impl Part for KeysOf<'_, '_, '_> {
    fn write_to(&self, out: &mut String) {
        for (i, owned) in self.1.iter().enumerate() {
            text(out, if i == 0 { "" } else { ", " });
            if let Some(scheme) = self.0.list.get(owned.scheme) {
                OwnerKeys(scheme).write_to(out);
            }
        }
    }
}

/// What to do about a second tool's owner: keep the object in one tool, or move it in steps.
struct Advice<'s, 'o, 'a>(&'s Schemes, &'o [Owned<'a>], &'o [Owned<'a>]);

impl Part for Advice<'_, '_, '_> {
    fn write_to(&self, out: &mut String) {
        let Advice(schemes, current, new) = self;
        text(
            out,
            " Keep it in one tool: remove it from the other tool's sources. Or move it to the \
             new tool: ",
        );
        match new.first() {
            Some(successor) if !schemes.handover_annotation.is_empty() => {
                text(out, "the current owner names the successor (");
                text(out, &schemes.handover_annotation);
                text(out, "=");
                Selector(schemes, successor).write_to(out);
                text(
                    out,
                    "), the new tool adds its keys, then the old tool's keys (",
                );
                KeysOf(schemes, current).write_to(out);
                text(out, ") are removed.");
            }
            _ => {
                text(out, "remove the old tool's keys (");
                KeysOf(schemes, current).write_to(out);
                text(out, ") first, then the new tool can adopt it.");
            }
        }
    }
}
