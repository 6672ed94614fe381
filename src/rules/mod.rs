//! The rules of a policy, and the order they judge a request in.
//!
//! CREATE, and an UPDATE that changes an owner marker (`markers`; one that changes none
//! stands as it was judged): the new object's annotations must be readable, then the scope
//! rules, then under each scheme the same-owner invariant (UPDATE), then across schemes (a
//! policy of several tools), then the controller ownerReference against the keys
//! (`controller`). Then, on every CREATE and UPDATE, who writes (bindings). DELETE: who
//! writes, when there are bindings.
//! CONNECT: accepted. The stamping policy only stamps. What a tool's rule needs and the object
//! does not carry is looked up in `cluster`, only where the rule is reached.

mod controller;
mod cross_tool;
pub(crate) mod describe;
pub(crate) mod message;
mod same_owner;
mod scope;
mod stamping;
pub mod verdict;
pub(crate) mod writers;

use crate::owners::markers;
use crate::owners::{Marks, Related, Schemes};
use crate::reading::request::{Payload, Request};
use crate::rules::describe::Subject;
use crate::rules::message::message;
use crate::rules::verdict::Verdict;
use crate::rules::writers::bindings::Identities;
use crate::settings::Settings;
use crate::tools::cluster::{Cluster, Remembered};
use same_owner::Transition;
use writers::Judging;

/// The settings, with the keys the rules read worked out: a policy instance gets the same
/// settings with every request, so this is built once (see `admission`).
#[derive(Debug)]
pub struct Rules {
    pub settings: Settings,
    pub schemes: Schemes,
    identities: Identities,
}

impl Rules {
    pub fn new(settings: Settings) -> Rules {
        Rules {
            schemes: Schemes::new(&settings),
            identities: Identities::new(&settings),
            settings,
        }
    }

    /// Judges one admission request, looking up in `cluster` what a tool's rule needs.
    pub fn evaluate(&self, payload: &Payload, cluster: &dyn Cluster) -> Verdict {
        match &payload.request {
            Some(request) => self.judge(request, payload, &Remembered::new(cluster)),
            None => Verdict::Unreadable {
                message: "the validation payload has no admission request (\"request\" is \
                          missing or null)"
                    .into(),
            },
        }
    }

    fn judge(&self, request: &Request, payload: &Payload, cluster: &dyn Cluster) -> Verdict {
        let operation = request.operation();
        let identity_rules = !self.identities.is_empty() && !self.settings.stamp;
        let both = (&self.schemes, &self.identities);
        match operation {
            "CREATE" | "UPDATE" => {}
            "DELETE" if identity_rules => {
                let judging = Judging {
                    schemes: &self.schemes,
                    identities: &self.identities,
                    related: &Related::default(),
                    cluster,
                };
                return writers::judge_delete(request, payload, &judging);
            }
            "DELETE" | "CONNECT" => return Verdict::accept(),
            "" => {
                return Verdict::Unreadable {
                    message: "the admission request has no operation".into(),
                };
            }
            other => {
                return Verdict::Unreadable {
                    message: format!(
                        "the admission request has an unknown operation {other:?} \
                         (expected CREATE, UPDATE, DELETE or CONNECT)"
                    ),
                };
            }
        }
        let (new, old) = match (operation, &request.object, &request.old_object) {
            (_, None, _) => return Verdict::missing(operation, "request.object"),
            ("UPDATE", _, None) => return Verdict::missing(operation, "request.oldObject"),
            ("CREATE", Some(new), _) => (new, None),
            (_, Some(new), old) => (new, old.as_ref()),
        };
        // The marks of both objects, in one allocation.
        let slots = self.schemes.slots();
        let mut values = vec![None; 2 * slots];
        let (new_values, old_values) = values.split_at_mut(slots);
        let wanted = self.schemes.wanted();
        let new_meta = match payload.metadata(new, wanted, new_values) {
            Ok(metadata) => metadata,
            Err(message) => return Verdict::Unreadable { message },
        };
        let old_meta = match old.map(|o| payload.metadata(o, wanted, old_values)) {
            None => None,
            Some(Ok(metadata)) => Some(metadata),
            Some(Err(message)) => return Verdict::Unreadable { message },
        };
        let new_marks = Marks { values: new_values };
        let old = old_meta.is_some().then_some(Marks { values: old_values });
        if self.settings.stamp {
            return stamping::stamp(request, payload, both, new, &new_marks, old.as_ref());
        }
        let new = new_marks;
        let subject = Subject::new(request, &new_meta, old_meta.as_ref());
        // An UPDATE that leaves every marker as stored changes no owner: it stands as its
        // object was judged when the markers were written (`markers`). Who writes is judged
        // on every write.
        let unchanged = old
            .as_ref()
            .is_some_and(|old| !markers::changed(&self.schemes, old, &new));
        if unchanged && !identity_rules {
            return Verdict::accept();
        }
        let (verdict, related) = if unchanged {
            match self.schemes.relate(cluster, old.as_ref(), &new) {
                Ok(related) => (Verdict::accept(), related),
                Err(message) => return Verdict::reject(cannot_relate(&subject, &message)),
            }
        } else {
            self.ownership_rules(request, payload, &subject, old.as_ref(), &new, cluster)
        };
        if !identity_rules || !matches!(verdict, Verdict::Accept { .. }) {
            return verdict;
        }
        // The write keeps to the label rules; now who makes it.
        let judging = Judging {
            schemes: &self.schemes,
            identities: &self.identities,
            related: &related,
            cluster,
        };
        match writers::judge(request, payload, &judging, &subject, old.as_ref(), &new) {
            Ok(()) => verdict,
            Err(refusal) => refusal,
        }
    }

    /// The rules the new object's markers keep as they stand, whatever they replace: its
    /// revision and handover annotations must be readable, and it keeps to the scope rules.
    fn object_rules(
        &self,
        request: &Request,
        subject: &Subject,
        new: &Marks,
    ) -> Result<(), String> {
        same_owner::check_annotations(&self.schemes, subject, new)
            .and_then(|()| scope::check(request, &self.schemes, subject, new))
    }

    /// What the object of a CREATE or UPDATE breaks as it stands (`object_rules`): an object
    /// written so before the policy judged it keeps being written, but its next ownership
    /// change, or its creation again, is refused with this message (`kubectl single-owner`
    /// reports it).
    pub fn standing(&self, payload: &Payload) -> Result<(), String> {
        let Some(request) = &payload.request else {
            return Ok(());
        };
        let Some(object) = &request.object else {
            return Ok(());
        };
        let mut values = vec![None; self.schemes.slots()];
        let meta = payload.metadata(object, self.schemes.wanted(), &mut values)?;
        let new = Marks { values: &values };
        let subject = Subject::new(request, &meta, None);
        self.object_rules(request, &subject, &new)
    }

    /// The rules of a write that creates an object with its markers or changes them: the
    /// annotations must be readable, then the scope rules, the owner rules and the controller
    /// ownerReference against the keys.
    fn ownership_rules(
        &self,
        request: &Request,
        payload: &Payload,
        subject: &Subject,
        old: Option<&Marks>,
        new: &Marks,
        cluster: &dyn Cluster,
    ) -> (Verdict, Related) {
        if let Err(message) = self.object_rules(request, subject, new) {
            return (Verdict::reject(message), Related::default());
        }
        let (verdict, related) = self.owner_rules(subject, old, new, cluster);
        let Verdict::Accept { mut warnings } = verdict else {
            return (verdict, related);
        };
        let exempt = || {
            (payload.user_info(request)).is_ok_and(|writer| {
                crate::rules::writers::bindings::is_one_of(&self.settings.exempt_writers(), &writer)
            })
        };
        let controller = controller::Judging {
            schemes: &self.schemes,
            settings: &self.settings,
            related: &related,
            cluster,
            exempt: &exempt,
        };
        match controller::judge(&controller, subject, old, new) {
            Verdict::Accept { warnings: w } => warnings.extend(w),
            refusal => return (refusal, related),
        }
        (Verdict::Accept { warnings }, related)
    }

    /// The owner rules of a CREATE (`old` None) or an UPDATE: under each scheme, then, with
    /// several, across them. In a one-tool policy the scheme's transition is the answer; with
    /// several, adoption and orphaning are the object's (an alias's keys coming or going, or a
    /// handover's steps, are not), and `cross_tool` judges them.
    ///
    /// What the aliases by a tool's rule relate (`Related`, which may need a lookup) is worked
    /// out only once every scheme has accepted the write: a write one tool's rules refuse
    /// needs no lookup, and is refused in that tool's words.
    fn owner_rules(
        &self,
        subject: &Subject,
        old: Option<&Marks>,
        new: &Marks,
        cluster: &dyn Cluster,
    ) -> (Verdict, Related) {
        let schemes = &self.schemes;
        let mut warnings = Vec::new();
        if let Some(old) = old {
            for s in 0..schemes.list.len() {
                let (t, verdict) =
                    same_owner::judge(schemes, s, &self.settings, subject, (old, new), cluster);
                let counts =
                    !schemes.several() || t.refused() || matches!(t, Transition::HandedOver);
                match verdict {
                    Verdict::Accept { warnings: w } if counts => warnings.extend(w),
                    Verdict::Accept { .. } => {}
                    refusal if counts => return (refusal, Related::default()),
                    _ => {}
                }
            }
        }
        let related = match schemes.relate(cluster, old, new) {
            Ok(related) => related,
            Err(message) => {
                let refusal = Verdict::reject(cannot_relate(subject, &message));
                return (refusal, Related::default());
            }
        };
        if schemes.several() {
            match cross_tool::judge(schemes, &related, &self.settings, subject, old, new) {
                Verdict::Accept { warnings: w } => warnings.extend(w),
                refusal => return (refusal, related),
            }
        }
        (Verdict::Accept { warnings }, related)
    }
}

/// The refusal of a write whose owners a tool's rule could not relate: a lookup failed.
fn cannot_relate(subject: &Subject, why: &str) -> String {
    if crate::tools::cluster::Failure::of(why) == crate::tools::cluster::Failure::NotFound {
        return message!(
            subject,
            " carries the keys of two tools that one tool's rule relates, and they name two \
             owners: ",
            why.trim_end_matches('.'),
            ", so no release of the tool's is named by its keys. Write the object once that \
             owner exists (helm-controller installs a HelmRelease's release after it is \
             created), or with one tool's keys.",
        );
    }
    message!(
        subject,
        " carries the keys of two tools that one tool's rule relates, and whether they name one \
         owner cannot be decided: ",
        why.trim_end_matches('.'),
        ". The policy refuses what it cannot check. ",
        crate::tools::cluster::Failure::of(why).remedy(),
    )
}
