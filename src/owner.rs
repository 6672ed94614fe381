//! The owner rules: who owns an object, the same-owner invariant with its two refinements
//! (revision fencing within one owner, and a handover the current owner authorizes), and
//! the scope rules.
//!
//! An object's owner is the tuple of the values of the configured owner keys (labels, then
//! annotations). Admission is where "one object, one owner" can be enforced without a race:
//! the API server re-runs validation against the exact stored `oldObject` on every write
//! attempt, so two reconcilers can never both take the same object, and a stale replica of
//! the same owner can never write over a newer revision.

use crate::identity::{Allowed, Bindings, Permit, WriterName};
use crate::json::Str;
use crate::message::{Part, Quoted, message, text};
use crate::request::{Metadata, Object, Payload, Request, Wanted};
use crate::settings::Settings;

/// The answer to one admission request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Accept {
        warnings: Vec<String>,
    },
    /// A rule refuses the write: answered 403 Forbidden.
    Reject {
        message: String,
    },
    /// The request cannot be read (a value the rules need is malformed, or an object the
    /// operation must carry is missing): rejected as a bad request.
    Unreadable {
        message: String,
    },
    /// The stamping policy adds owner keys: the new object, as JSON.
    Mutate {
        object: Vec<u8>,
    },
}

impl Verdict {
    fn accept() -> Verdict {
        Verdict::Accept {
            warnings: Vec::new(),
        }
    }

    fn warn(warning: String) -> Verdict {
        Verdict::Accept {
            warnings: vec![warning],
        }
    }
}

/// The values of the owner keys on one object, in settings order (labels, then
/// annotations); `None` where a key is absent.
#[derive(Debug, Clone)]
pub enum Owner<'m> {
    /// As read off an object.
    Read(&'m [Option<Str<'m>>]),
    /// As named by a handover annotation.
    Named(Vec<Option<&'m str>>),
}

impl Owner<'_> {
    fn len(&self) -> usize {
        match self {
            Owner::Read(values) => values.len(),
            Owner::Named(values) => values.len(),
        }
    }

    /// The value of the `i`th owner key (labels, then annotations).
    pub fn get(&self, i: usize) -> Option<&str> {
        match self {
            Owner::Read(values) => values.get(i)?.as_deref(),
            Owner::Named(values) => *values.get(i)?,
        }
    }

    fn values(&self) -> impl Iterator<Item = Option<&str>> {
        (0..self.len()).map(|i| self.get(i))
    }

    /// An object has an owner when at least one owner key is present (even with "").
    pub fn is_some(&self) -> bool {
        self.values().any(|v| v.is_some())
    }
}

impl PartialEq for Owner<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.values().eq(other.values())
    }
}

impl Eq for Owner<'_> {}

/// What the rules read off one object, with the keys the settings name: the owner keys'
/// values (labels, then annotations), then `ownerKindLabel`, `ownerNamespaceLabel`,
/// `revisionAnnotation` and `handoverAnnotation`. Only these strings are decoded, as the
/// object's metadata is read (`Payload::metadata`).
#[derive(Debug)]
pub struct Marks<'m> {
    values: &'m [Option<Str<'m>>],
}

/// Where the four extra keys are, after the owner keys.
const KIND: usize = 0;
const NAMESPACE: usize = 1;
const REVISION: usize = 2;
const SUCCESSOR: usize = 3;

/// The settings, with the keys the rules read worked out: a policy instance gets the same
/// settings with every request, so this is built once (see `admission`).
#[derive(Debug)]
pub struct Rules {
    pub settings: Settings,
    /// The identity rules' bindings, worked out.
    bindings: Bindings,
    /// Each label key the rules read, and the slot of `Marks` its value goes to.
    label_keys: Vec<(String, usize)>,
    /// Each annotation key the rules read, and its slot.
    annotation_keys: Vec<(String, usize)>,
}

impl Rules {
    pub fn new(settings: Settings) -> Rules {
        let (labels, owners) = (settings.owner_labels.len(), settings.owner_key_count());
        let keys = |owned: &[String], first: usize, extra: [(&String, usize); 2]| {
            (owned.iter().cloned().zip(first..))
                .chain(extra.map(|(k, i)| (k.clone(), owners + i)))
                .filter(|(k, _)| !k.is_empty())
                .collect()
        };
        Rules {
            label_keys: keys(
                &settings.owner_labels,
                0,
                [
                    (&settings.owner_kind_label, KIND),
                    (&settings.owner_namespace_label, NAMESPACE),
                ],
            ),
            annotation_keys: keys(
                &settings.owner_annotations,
                labels,
                [
                    (&settings.revision_annotation, REVISION),
                    (&settings.handover_annotation, SUCCESSOR),
                ],
            ),
            bindings: Bindings::new(&settings),
            settings,
        }
    }

    /// How many values the rules read off one object: the owner keys and the four extra keys.
    fn slots(&self) -> usize {
        self.settings.owner_key_count() + 4
    }

    fn wanted(&self) -> Wanted<'_> {
        Wanted {
            labels: &self.label_keys,
            annotations: &self.annotation_keys,
        }
    }

    /// Judges one admission request.
    pub fn evaluate(&self, payload: &Payload) -> Verdict {
        match &payload.request {
            Some(request) => evaluate(request, payload, self),
            None => Verdict::Unreadable {
                message: "the validation payload has no admission request (\"request\" is \
                          missing or null)"
                    .into(),
            },
        }
    }
}

impl Marks<'_> {
    fn owner(&self) -> Owner<'_> {
        let owners = self.values.len().saturating_sub(4);
        Owner::Read(self.values.get(..owners).unwrap_or_default())
    }

    fn extra(&self, which: usize) -> Option<&str> {
        let owners = self.values.len().saturating_sub(4);
        self.values.get(owners + which)?.as_deref()
    }

    fn kind(&self) -> Option<&str> {
        self.extra(KIND)
    }

    fn namespace(&self) -> Option<&str> {
        self.extra(NAMESPACE)
    }

    fn revision(&self) -> Option<&str> {
        self.extra(REVISION)
    }

    fn successor(&self) -> Option<&str> {
        self.extra(SUCCESSOR)
    }
}

/// A revision: a canonical non-negative decimal integer that fits in 64 bits ("0", "17";
/// not "+1", "01", "1.0", " 3" or ""), as boxcutter writes it with `strconv.FormatInt`.
pub fn parse_revision(value: &str) -> Option<u64> {
    let canonical = match value.as_bytes() {
        [] => false,
        [b'0'] => true,
        [first, ..] => *first != b'0' && value.bytes().all(|b| b.is_ascii_digit()),
    };
    canonical.then(|| value.parse().ok()).flatten()
}

/// The owner a handover annotation names, in label-selector form: `key=value` pairs of the
/// owner keys, comma-separated, each key at most once, no spaces; keys not listed are absent
/// on the successor, and `key=` is present and empty.
pub fn parse_successor<'s>(value: &'s str, settings: &Settings) -> Result<Owner<'s>, String> {
    let keys: Vec<&String> = settings.owner_keys().collect();
    let mut values = vec![None; keys.len()];
    if value.is_empty() {
        return Err("it is empty".into());
    }
    if let Some(c) = value.chars().find(|c| c.is_whitespace()) {
        return Err(format!("it contains whitespace ({c:?})"));
    }
    for pair in value.split(',') {
        let Some((key, v)) = pair.split_once('=') else {
            return Err(format!("{pair:?} is not a key=value pair"));
        };
        let Some(i) = keys.iter().position(|k| *k == key) else {
            return Err(format!("{key:?} is not one of the owner keys"));
        };
        if values[i].replace(v).is_some() {
            return Err(format!("{key:?} is named twice"));
        }
    }
    Ok(Owner::Named(values))
}

/// Judges one admission request: CREATE and UPDATE by the rules, DELETE by the identity
/// rules when there are bindings, CONNECT accepted. The stamping policy only stamps.
fn evaluate(request: &Request, payload: &Payload, rules: &Rules) -> Verdict {
    let settings = &rules.settings;
    let operation = request.operation();
    let identity_rules = !rules.bindings.is_empty() && !settings.stamp;
    match operation {
        "CREATE" | "UPDATE" => {}
        "DELETE" if identity_rules => return judge_delete(request, payload, rules),
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
        (_, None, _) => return unreadable(operation, "request.object"),
        ("UPDATE", _, None) => return unreadable(operation, "request.oldObject"),
        ("CREATE", Some(new), _) => (new, None),
        (_, Some(new), old) => (new, old.as_ref()),
    };
    // The marks of both objects, in one allocation.
    let slots = rules.slots();
    let mut values = vec![None; 2 * slots];
    let (new_values, old_values) = values.split_at_mut(slots);
    let wanted = rules.wanted();
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
    if settings.stamp {
        return stamp(request, payload, rules, new, &new_marks, old.as_ref());
    }
    let new = new_marks;
    let subject = Subject::new(request, &new_meta, old_meta.as_ref());
    let checked = check_scope(request, settings, &subject, &new)
        .and_then(|()| check_stamps(settings, &subject, &new));
    if let Err(message) = checked {
        return reject(message);
    }
    let verdict = match &old {
        None => Verdict::accept(),
        Some(old) => judge_update(settings, &subject, old, &new),
    };
    if !identity_rules || !matches!(verdict, Verdict::Accept { .. }) {
        return verdict;
    }
    // The write keeps to the label rules; now who makes it.
    match judge_writer(request, payload, rules, &subject, old.as_ref(), &new) {
        Ok(()) => verdict,
        Err(refusal) => refusal,
    }
}

/// The identity rules of a CREATE or UPDATE the label rules accept. The owner the writer must
/// be bound to: the stored one while it stays or goes, the new one when it comes (a CREATE,
/// an adoption, a handover).
fn judge_writer(
    request: &Request,
    payload: &Payload,
    rules: &Rules,
    subject: &Subject,
    old: Option<&Marks>,
    new: &Marks,
) -> Result<(), Verdict> {
    let (old_owner, new_owner) = (old.map(Marks::owner), new.owner());
    let (act, owner) = match old_owner.filter(Owner::is_some) {
        None if !new_owner.is_some() => return Ok(()),
        None if old.is_none() => (Act::Create, new_owner),
        None => (Act::Adopt, new_owner),
        Some(old_owner) if !new_owner.is_some() => (Act::Release, old_owner),
        Some(old_owner) if old_owner == new_owner => (Act::Change, old_owner),
        Some(_) => (Act::TakeOver, new_owner),
    };
    check_writer(request, payload, rules, subject, act, &owner)
}

/// What a write does, for the identity rules' messages.
#[derive(Debug, Clone, Copy)]
enum Act {
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

/// The identity rules: where a binding covers `owner`, only a writer bound to it (or an
/// exempt one) may write its objects. A write to a subresource (status, scale) is not
/// checked: the API server's own controllers write those for every owner.
fn check_writer(
    request: &Request,
    payload: &Payload,
    rules: &Rules,
    subject: &Subject,
    act: Act,
    owner: &Owner,
) -> Result<(), Verdict> {
    if request.sub_resource().is_some() || !rules.bindings.covers(owner) {
        return Ok(());
    }
    let writer = payload
        .user_info(request)
        .map_err(|message| Verdict::Unreadable { message })?;
    let covering = match rules.bindings.permit(owner, &writer) {
        Permit::Bound | Permit::Exempt => return Ok(()),
        Permit::Refused { covering } => covering,
    };
    let settings = &rules.settings;
    Err(reject(message!(
        subject,
        ": ",
        WriterName(&writer),
        " may not ",
        act,
        ": only writers bound to owner ",
        Pairs::all(settings, owner),
        " may write its objects: ",
        Allowed(settings, &covering),
        ". Make the write as one of them, or bind ",
        WriterName(&writer),
        " to that owner in the policy's bindings.",
    )))
}

/// A DELETE, when there are bindings: only a writer bound to the stored owner, or an exempt
/// one, may delete an object a binding covers. Its fields after the operation, skipped with
/// the request, are read now.
fn judge_delete(request: &Request, payload: &Payload, rules: &Rules) -> Verdict {
    let request = match payload.rest_of_request(request) {
        Ok(request) => request,
        Err(message) => return Verdict::Unreadable { message },
    };
    let Some(old) = &request.old_object else {
        return unreadable("DELETE", "request.oldObject");
    };
    let mut values = vec![None; rules.slots()];
    let meta = match payload.metadata(old, rules.wanted(), &mut values) {
        Ok(meta) => meta,
        Err(message) => return Verdict::Unreadable { message },
    };
    let old = Marks { values: &values };
    let subject = Subject::new(&request, &meta, None);
    match check_writer(
        &request,
        payload,
        rules,
        &subject,
        Act::Delete,
        &old.owner(),
    ) {
        Ok(()) => Verdict::accept(),
        Err(refusal) => refusal,
    }
}

/// The stamping policy: on CREATE, and on UPDATE of an unowned object, a writer bound to
/// exactly one owner gets that owner's missing keys added to the object. Present keys are
/// never changed (the validating policy judges them), and nothing else is judged.
fn stamp(
    request: &Request,
    payload: &Payload,
    rules: &Rules,
    object: &Object,
    new: &Marks,
    old: Option<&Marks>,
) -> Verdict {
    if request.sub_resource().is_some() || old.is_some_and(|old| old.owner().is_some()) {
        return Verdict::accept();
    }
    let writer = match payload.user_info(request) {
        Ok(writer) => writer,
        Err(message) => return Verdict::Unreadable { message },
    };
    let Some(values) = rules.bindings.stamp(&writer) else {
        return Verdict::accept();
    };
    let (owner, settings) = (new.owner(), &rules.settings);
    let keys: Vec<&String> = settings.owner_keys().collect();
    let labels = settings.owner_labels.len();
    let (mut add_labels, mut add_annotations) = (Vec::new(), Vec::new());
    for (slot, value) in &values {
        if owner.get(*slot).is_some() {
            continue;
        }
        let Some(key) = keys.get(*slot) else { continue };
        let list = if *slot < labels {
            &mut add_labels
        } else {
            &mut add_annotations
        };
        list.push((key.as_str(), value.as_str()));
    }
    if add_labels.is_empty() && add_annotations.is_empty() {
        return Verdict::accept();
    }
    Verdict::Mutate {
        object: crate::stamp::stamped(payload, object, &add_labels, &add_annotations),
    }
}

/// What the rules compare of one side of an UPDATE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp<'a> {
    pub owner: Owner<'a>,
    /// The revision, when fencing is on and the object carries a valid one.
    pub revision: Option<u64>,
    /// The successor the object names, when handover is on and it names one other than its
    /// own owner.
    pub successor: Option<Owner<'a>>,
}

impl<'a> Stamp<'a> {
    fn of(marks: &'a Marks, settings: &Settings) -> Stamp<'a> {
        let owner = marks.owner();
        let successor = (marks.successor())
            .and_then(|s| parse_successor(s, settings).ok())
            .filter(|s| *s != owner);
        Stamp {
            owner,
            revision: marks.revision().and_then(parse_revision),
            successor,
        }
    }
}

/// What an UPDATE does to the owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transition {
    Unowned,
    Kept,
    Adopted,
    Orphaned,
    /// The owner is kept, but the revision goes down: a stale writer.
    RolledBack {
        stored: u64,
        written: u64,
    },
    /// The owner is kept, but the revision annotation is dropped.
    RevisionDropped {
        stored: u64,
    },
    /// The owner changes to the successor the stored object names.
    HandedOver,
    /// The owner changes, but the stored object names another successor.
    NotTheSuccessor,
    Changed,
}

/// The same-owner invariant: an owner may appear or disappear, never change, not even in
/// part, unless the stored object names the new owner as its successor. Within one owner
/// the revision never goes down, and once stamped it stays. Two owners are the same only
/// when every key is absent on both sides or present on both with the same value.
pub fn transition(old: &Stamp, new: &Stamp) -> Transition {
    match (old.owner.is_some(), new.owner.is_some()) {
        (false, false) => Transition::Unowned,
        (false, true) => Transition::Adopted,
        (true, false) => Transition::Orphaned,
        (true, true) if old.owner == new.owner => match (old.revision, new.revision) {
            (Some(stored), Some(written)) if written < stored => {
                Transition::RolledBack { stored, written }
            }
            (Some(stored), None) => Transition::RevisionDropped { stored },
            _ => Transition::Kept,
        },
        (true, true) => match &old.successor {
            Some(successor) if *successor == new.owner => Transition::HandedOver,
            Some(_) => Transition::NotTheSuccessor,
            None => Transition::Changed,
        },
    }
}

/// Judges an UPDATE by its transition, with the messages that say what to do.
fn judge_update(settings: &Settings, subject: &Subject, old: &Marks, new: &Marks) -> Verdict {
    let (old, new) = (Stamp::of(old, settings), Stamp::of(new, settings));
    let keys = OwnerKeys(settings);
    let revision = settings.revision_annotation.as_str();
    // How the two revision rejections start: the owner and the stored revision.
    let at_revision = |stored: u64| {
        message!(
            subject,
            " is owned by ",
            Pairs::all(settings, &old.owner),
            " at revision ",
            stored,
            " (",
            revision,
            ")",
        )
    };
    match transition(&old, &new) {
        Transition::Unowned | Transition::Kept => Verdict::accept(),
        Transition::Changed => {
            let current = Pairs::differing(settings, &old.owner, &new.owner);
            let requested = Pairs::differing(settings, &new.owner, &old.owner);
            reject(message!(
                subject,
                " is owned by ",
                current,
                ", and this UPDATE would change its owner to ",
                requested,
                ". An object has a single owner: the current owner must first release it by \
                 removing its owner keys (",
                keys,
                "), then the new owner can adopt it.",
                HandoverRoute(settings, &new.owner),
            ))
        }
        Transition::NotTheSuccessor => reject(message!(
            subject,
            " is owned by ",
            Pairs::all(settings, &old.owner),
            ", which handed it over to ",
            old.successor.as_ref().map(|s| Pairs::all(settings, s)),
            " (",
            settings.handover_annotation,
            " on the stored object), not to ",
            Pairs::all(settings, &new.owner),
            ": only the successor the current owner named can take it in one write.",
        )),
        Transition::HandedOver => Verdict::warn(message!(
            subject,
            " handed over from owner ",
            Pairs::all(settings, &old.owner),
            " to owner ",
            Pairs::all(settings, &new.owner),
            ", the successor its owner named in ",
            settings.handover_annotation,
        )),
        Transition::RolledBack { stored, written } => reject(message!(
            at_revision(stored),
            ", and this UPDATE would write revision ",
            written,
            ": a stale writer (an older revision or replica of the same owner) cannot roll \
             the object back. To roll back deliberately, write the older content as a new \
             revision above ",
            stored,
            ".",
        )),
        Transition::RevisionDropped { stored } => reject(message!(
            at_revision(stored),
            ", and this UPDATE keeps the owner but drops the ",
            revision,
            " annotation: a writer that does not stamp revisions is a stale one. Stamp a \
             revision of at least ",
            stored,
            "; to release the object, remove the owner keys (",
            keys,
            ") as well.",
        )),
        Transition::Adopted if !settings.allow_adoption => reject(message!(
            subject,
            " has no owner, and this UPDATE would give it the owner ",
            Pairs::all(settings, &new.owner),
            ", but adoption is disabled (allowAdoption: false): an object's owner must \
             create it.",
        )),
        Transition::Orphaned if !settings.allow_orphaning => reject(message!(
            subject,
            " is owned by ",
            Pairs::all(settings, &old.owner),
            ", and this UPDATE would remove its owner keys, but orphaning is disabled \
             (allowOrphaning: false): keep the owner keys (",
            keys,
            "), or delete the object.",
        )),
        Transition::Adopted => Verdict::warn(message!(
            subject,
            " adopted by owner ",
            Pairs::all(settings, &new.owner),
        )),
        Transition::Orphaned => Verdict::warn(message!(
            subject,
            " orphaned: it no longer has owner ",
            Pairs::all(settings, &old.owner),
        )),
    }
}

/// The revision and handover annotations of the new object (CREATE and UPDATE), where
/// present, must be readable: a malformed fencing token or successor is refused, not ignored.
fn check_stamps(settings: &Settings, subject: &Subject, new: &Marks) -> Result<(), String> {
    if let Some(value) = new.revision()
        && parse_revision(value).is_none()
    {
        return Err(message!(
            subject,
            " carries the annotation ",
            settings.revision_annotation,
            "=",
            Quoted(value),
            ", which is not a revision: expected a non-negative decimal integer that fits in \
             64 bits, without sign, spaces or leading zeros (e.g. \"17\").",
        ));
    }
    if let Some(value) = new.successor()
        && let Err(why) = parse_successor(value, settings)
    {
        return Err(message!(
            subject,
            " carries the annotation ",
            settings.handover_annotation,
            "=",
            Quoted(value),
            ", which does not name a successor: ",
            why,
            ". Expected comma-separated key=value pairs of the owner keys (",
            settings
                .owner_keys()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join(", "),
            "), each at most once and without spaces, e.g. ",
            SelectorExample(settings),
            ".",
        ));
    }
    Ok(())
}

/// The scope rules, on the new object: a cluster-scoped object may be owned only by a
/// cluster-scoped owner kind, and (optionally) a namespaced owner only owns objects in its
/// own namespace. An empty `ownerKindLabel` turns both off.
fn check_scope(
    request: &Request,
    settings: &Settings,
    subject: &Subject,
    new: &Marks,
) -> Result<(), String> {
    let kind_label = settings.owner_kind_label.as_str();
    if kind_label.is_empty() {
        return Ok(());
    }
    let owner_kind = new.kind();
    let allowed = AllowedKinds(settings);
    if request.is_cluster_scoped() {
        return match owner_kind {
            Some(kind) if !settings.is_cluster_scoped_owner_kind(kind) => Err(message!(
                subject,
                " is cluster-scoped, but its owner kind ",
                kind_label,
                "=",
                kind,
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
    let ns_label = settings.owner_namespace_label.as_str();
    if ns_label.is_empty() || owner_kind.is_some_and(|k| settings.is_cluster_scoped_owner_kind(k)) {
        return Ok(());
    }
    match new.namespace() {
        Some(owner_ns) if owner_ns != request.namespace() => Err(message!(
            subject,
            " is owned by a namespaced owner (",
            kind_label,
            "=",
            owner_kind.unwrap_or("<unset>"),
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

fn reject(message: String) -> Verdict {
    Verdict::Reject { message }
}

fn unreadable(operation: &str, field: &str) -> Verdict {
    Verdict::Unreadable {
        message: format!(
            "the admission request cannot be read: {field} is missing or null, but every \
             {operation} request carries it"
        ),
    }
}

/// Names the object as kubectl would: kind, name, namespace, subresource.
struct Subject<'r, 'a> {
    request: &'r Request<'a>,
    name: &'r str,
}

impl<'r, 'a> Subject<'r, 'a> {
    /// The name is the request's, else the new or old object's (CREATE with `generateName`
    /// has none yet).
    fn new(request: &'r Request<'a>, new: &'r Metadata, old: Option<&'r Metadata>) -> Self {
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
struct Pairs<'s, 'o, 'a> {
    settings: &'s Settings,
    owner: &'o Owner<'a>,
    other: Option<&'o Owner<'a>>,
}

impl<'s, 'o, 'a> Pairs<'s, 'o, 'a> {
    /// The pairs of `owner` whose values differ from `other`.
    fn differing(settings: &'s Settings, owner: &'o Owner<'a>, other: &'o Owner<'a>) -> Self {
        Pairs {
            settings,
            owner,
            other: Some(other),
        }
    }

    /// The keys present on `owner`.
    fn all(settings: &'s Settings, owner: &'o Owner<'a>) -> Self {
        Pairs {
            settings,
            owner,
            other: None,
        }
    }
}

impl Part for Pairs<'_, '_, '_> {
    fn write_to(&self, out: &mut String) {
        let mut first = true;
        for (i, (key, value)) in self
            .settings
            .owner_keys()
            .zip(self.owner.values())
            .enumerate()
        {
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

/// The handover route, in one sentence, when handover is on: the annotation the current
/// owner would set to name `successor`.
struct HandoverRoute<'s, 'o, 'a>(&'s Settings, &'o Owner<'a>);

impl Part for HandoverRoute<'_, '_, '_> {
    fn write_to(&self, out: &mut String) {
        let (settings, successor) = (self.0, self.1);
        if settings.handover_annotation.is_empty() {
            return;
        }
        text(
            out,
            " Or, in one write, the current owner hands it over by setting the annotation ",
        );
        text(out, &settings.handover_annotation);
        text(out, "=");
        Selector(settings, successor).write_to(out);
        text(out, ", and then the new owner can take it.");
    }
}

/// An owner in the handover annotation's form: `key=value,key=value`.
struct Selector<'s, 'o, 'a>(&'s Settings, &'o Owner<'a>);

impl Part for Selector<'_, '_, '_> {
    fn write_to(&self, out: &mut String) {
        let present = self.0.owner_keys().zip(self.1.values());
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

/// An example handover value for the settings' owner keys.
struct SelectorExample<'s>(&'s Settings);

impl Part for SelectorExample<'_> {
    fn write_to(&self, out: &mut String) {
        for (i, key) in self.0.owner_keys().enumerate() {
            if i > 0 {
                text(out, ",");
            }
            let value = if *key == self.0.owner_kind_label {
                self.0
                    .cluster_scoped_owner_kinds
                    .first()
                    .map_or("Kind", String::as_str)
            } else {
                "new-owner"
            };
            text(out, key);
            text(out, "=");
            text(out, value);
        }
    }
}

/// The owner keys, for "remove these" advice.
struct OwnerKeys<'s>(&'s Settings);

impl Part for OwnerKeys<'_> {
    fn write_to(&self, out: &mut String) {
        let labels = self.0.owner_labels.iter().map(|k| ("label ", k));
        let annotations = self.0.owner_annotations.iter().map(|k| ("annotation ", k));
        for (i, (what, key)) in labels.chain(annotations).enumerate() {
            if i > 0 {
                text(out, ", ");
            }
            text(out, what);
            text(out, key);
        }
    }
}

struct AllowedKinds<'s>(&'s Settings);

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

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("0", Some(0))]
    #[case("17", Some(17))]
    #[case("18446744073709551615", Some(u64::MAX))]
    #[case("18446744073709551616", None)]
    #[case("+1", None)]
    #[case("-1", None)]
    #[case("01", None)]
    #[case("00", None)]
    #[case("1.0", None)]
    #[case(" 3", None)]
    #[case("3 ", None)]
    #[case("", None)]
    #[case("1e3", None)]
    #[case("٣", None)]
    fn revisions_are_canonical_decimals(#[case] value: &str, #[case] expected: Option<u64>) {
        assert_eq!(parse_revision(value), expected);
    }

    fn olm() -> Settings {
        Settings::default()
    }

    #[rstest]
    #[case("olm.operatorframework.io/owner-kind=ClusterExtension,olm.operatorframework.io/owner-name=ext-b", &[Some("ClusterExtension"), Some("ext-b")])]
    #[case("olm.operatorframework.io/owner-name=ext-b", &[None, Some("ext-b")])]
    #[case("olm.operatorframework.io/owner-name=", &[None, Some("")])]
    #[case("olm.operatorframework.io/owner-name=a=b", &[None, Some("a=b")])]
    fn successors_parse(#[case] value: &str, #[case] expected: &[Option<&str>]) {
        let successor = parse_successor(value, &olm()).unwrap();
        assert_eq!(successor.values().collect::<Vec<_>>(), expected);
    }

    #[rstest]
    #[case("", "it is empty")]
    #[case(
        "olm.operatorframework.io/owner-name=a, olm.operatorframework.io/owner-kind=b",
        "whitespace"
    )]
    #[case("olm.operatorframework.io/owner-name", "is not a key=value pair")]
    #[case(
        "olm.operatorframework.io/owner-name=a,",
        "\"\" is not a key=value pair"
    )]
    #[case("app=x", "\"app\" is not one of the owner keys")]
    #[case(
        "olm.operatorframework.io/owner-name=a,olm.operatorframework.io/owner-name=b",
        "named twice"
    )]
    fn malformed_successors_say_why(#[case] value: &str, #[case] why: &str) {
        let e = parse_successor(value, &olm()).unwrap_err();
        assert!(e.contains(why), "{e:?} lacks {why:?}");
    }
}
