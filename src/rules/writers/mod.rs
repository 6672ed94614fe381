//! The identity rules applied: where a scheme's bindings cover an object's owner, only a writer
//! bound to it (or an exempt one) may create, change, adopt, release, take over or delete the
//! object. A write to a subresource (status, scale) is not checked: the API server's own
//! controllers write those for every owner.

pub(crate) mod bindings;

use crate::owners::{Marks, Owned, Owner, Related, Schemes};
use crate::reading::request::Writer;
use crate::reading::request::{Payload, Request};
use crate::rules::cross_tool;
use crate::rules::describe::{OwnerOf, Subject};
use crate::rules::message::{Part, message, text};
use crate::rules::verdict::Verdict;
use crate::tools::cluster::Cluster;
use crate::tools::olm_v1;
use bindings::{Allowed, Identities, Permit, WriterName};

/// What the identity rules judge with: the policy's schemes and bindings, what the request
/// decided of its aliases, and the cluster to look up an installer in.
pub struct Judging<'j> {
    pub schemes: &'j Schemes,
    pub identities: &'j Identities,
    pub related: &'j Related,
    pub cluster: &'j dyn Cluster,
}

/// What a write does, for the identity rules' messages.
#[derive(Debug, Clone, Copy)]
pub enum Act {
    Create,
    Change,
    Adopt,
    Release,
    TakeOver,
    Delete,
}

impl Part for Act {
    fn write_to(&self, out: &mut String) {
        text(
            out,
            match self {
                Act::Create => "create it",
                Act::Change => "change it",
                Act::Adopt => "adopt it",
                Act::Release => "release it (remove its owner keys)",
                Act::TakeOver => "take it over",
                Act::Delete => "delete it",
            },
        );
    }
}

/// The identity rules of a CREATE or UPDATE the label rules accept, under each scheme with
/// bindings. The owner the writer must be bound to: the stored one while it stays or goes, the
/// new one when it comes (a CREATE, an adoption, a handover). What is left of a former owner
/// after a cross-tool handover binds no one: the object is the successor's.
pub fn judge(
    request: &Request,
    payload: &Payload,
    judging: &Judging,
    subject: &Subject,
    old: Option<&Marks>,
    new: &Marks,
) -> Result<(), Verdict> {
    let (schemes, identities, related) = (judging.schemes, judging.identities, judging.related);
    // What is left of a former owner, on the stored object or on the new one (the write
    // that starts a handover, which the label rules accepted), binds no one.
    let leftovers = match old {
        Some(old) if schemes.several() => {
            let mut l = cross_tool::leftovers(schemes, related, old);
            l.extend(cross_tool::leftovers(schemes, related, new));
            l
        }
        _ => Vec::new(),
    };
    for (s, scheme) in schemes.list.iter().enumerate() {
        if identities.of(s).is_empty() || leftovers.contains(&s) {
            continue;
        }
        let (old_owner, new_owner) = (old.map(|m| m.owner(scheme)), new.owner(scheme));
        let (act, owner) = match old_owner.filter(Owner::is_some) {
            None if !new_owner.is_some() => continue,
            None if old.is_none() => (Act::Create, new_owner),
            None => (Act::Adopt, new_owner),
            Some(old_owner) if !new_owner.is_some() => (Act::Release, old_owner),
            Some(old_owner) if old_owner == new_owner => (Act::Change, old_owner),
            Some(_) => (Act::TakeOver, new_owner),
        };
        let owned = Owned { scheme: s, owner };
        check(request, payload, judging, subject, act, &owned)?;
    }
    Ok(())
}

/// Where a binding of the scheme covers `owned`, only a writer bound to it (or an exempt one)
/// may write its objects.
fn check(
    request: &Request,
    payload: &Payload,
    judging: &Judging,
    subject: &Subject,
    act: Act,
    owned: &Owned,
) -> Result<(), Verdict> {
    let (schemes, identities) = (judging.schemes, judging.identities);
    let bindings = identities.of(owned.scheme);
    if request.sub_resource().is_some() || !bindings.covers(&owned.owner) {
        return Ok(());
    }
    let writer = payload
        .user_info(request)
        .map_err(|message| Verdict::Unreadable { message })?;
    let covering = match bindings.permit(&owned.owner, &writer) {
        Permit::Bound | Permit::Exempt => return Ok(()),
        Permit::Refused { covering } => covering,
    };
    // The owner's installer, when a binding names it: looked up only now, for a writer no
    // binding names.
    let mut looked_up = None;
    if bindings.installer_may(&owned.owner, &writer) {
        match installer(schemes, owned, &writer, judging.cluster) {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => looked_up = Some(e),
        }
    }
    let at = if schemes.several() {
        format!("schemes[{}].", owned.scheme)
    } else {
        String::new()
    };
    let configured = identities.configured(owned.scheme);
    Err(Verdict::reject(message!(
        subject,
        ": ",
        WriterName(&writer),
        " may not ",
        act,
        ": only writers bound to owner ",
        OwnerOf(schemes, owned),
        " may write its objects: ",
        Allowed(&at, configured, &covering),
        ". Make the write as one of them, or bind ",
        WriterName(&writer),
        " to that owner in the policy's bindings.",
        looked_up.as_deref().map(installer_missed),
        looked_up.as_deref().map(|e| e.trim_end_matches('.')),
        looked_up.as_ref().map(|_| ". "),
        looked_up.as_deref().map(installer_remedy),
    )))
}

/// How a refusal introduces an installer lookup that did not answer: an owner that does not
/// exist names no installer (an answer); any other failure is one to check.
fn installer_missed(e: &str) -> &'static str {
    match crate::tools::cluster::Failure::of(e) {
        crate::tools::cluster::Failure::NotFound => " The owner names no installer: ",
        _ => {
            " The owner's installer could not be looked up, and the policy refuses what it \
             cannot check: "
        }
    }
}

fn installer_remedy(e: &str) -> &'static str {
    match crate::tools::cluster::Failure::of(e) {
        crate::tools::cluster::Failure::NotFound => {
            "While it does not exist, only the writers the bindings name may write its objects."
        }
        failure => failure.remedy(),
    }
}

/// Whether `writer` is the installer the owner names, by its scheme's tool (`Err`: the lookup
/// failed, or the tool names none).
fn installer(
    schemes: &Schemes,
    owned: &Owned,
    writer: &Writer,
    cluster: &dyn Cluster,
) -> Result<bool, String> {
    let scheme = &schemes.list[owned.scheme];
    let extension = (scheme.key_index(olm_v1::OWNER_NAME))
        .and_then(|i| owned.owner.get(i))
        .filter(|n| !n.is_empty());
    match (scheme.tool.as_str(), extension) {
        ("olm-v1", Some(extension)) => {
            let installer = olm_v1::installer(cluster, extension)?;
            Ok(installer.username().is_some_and(|u| u == writer.username()))
        }
        ("olm-v1", None) => Err(format!("the owner names no {}", olm_v1::KIND)),
        (tool, _) => Err(format!("tool {tool:?} names no installer")),
    }
}

/// A DELETE, when there are bindings: only a writer bound to the stored owner, or an exempt
/// one, may delete an object a binding covers, under each scheme. Its fields after the
/// operation, skipped with the request, are read now.
pub fn judge_delete(request: &Request, payload: &Payload, judging: &Judging) -> Verdict {
    let (schemes, identities) = (judging.schemes, judging.identities);
    let request = match payload.rest_of_request(request) {
        Ok(request) => request,
        Err(message) => return Verdict::Unreadable { message },
    };
    let Some(old) = &request.old_object else {
        return Verdict::missing("DELETE", "request.oldObject");
    };
    let mut values = vec![None; schemes.slots()];
    let meta = match payload.metadata(old, schemes.wanted(), &mut values) {
        Ok(meta) => meta,
        Err(message) => return Verdict::Unreadable { message },
    };
    let old = Marks { values: &values };
    let subject = Subject::new(&request, &meta, None);
    let leftovers = match schemes.several() {
        true => cross_tool::leftovers(schemes, judging.related, &old),
        false => Vec::new(),
    };
    for (s, scheme) in schemes.list.iter().enumerate() {
        if identities.of(s).is_empty() || leftovers.contains(&s) {
            continue;
        }
        let owned = Owned {
            scheme: s,
            owner: old.owner(scheme),
        };
        if let Err(refusal) = check(&request, payload, judging, &subject, Act::Delete, &owned) {
            return refusal;
        }
    }
    Verdict::accept()
}
