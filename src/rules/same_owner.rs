//! The same-owner invariant within one tool, with its two refinements: revision fencing within
//! one owner, and a handover the current owner authorizes.
//!
//! Admission is where "one object, one owner" can be enforced without a race: the API server
//! re-runs validation against the exact stored `oldObject` on every write attempt, so two
//! reconcilers can never both take the same object, and a stale replica of the same owner can
//! never write over a newer revision. The rule is `transition`; `judge` words its answer.
//!
//! A tool may move an object from one owner to the next by its own rule: OLM v0 upgrades an
//! operator by relabelling what the replaced ClusterServiceVersion owned (`tools::olm_v0`).
//! Where the scheme's tool has such a rule, a change of owner is looked up before it is
//! called one.

use crate::owners::{Marks, Owned, Owner, Scheme, Schemes};
use crate::rules::describe::{
    AllOwnerKeys, HandoverRoute, OwnerKeys, Pairs, SelectorExample, Subject, Tool,
};
use crate::rules::message::{Quoted, message};
use crate::rules::verdict::Verdict;
use crate::settings::Settings;
use crate::tools::cluster::Cluster;
use crate::tools::{self, olm_v0};

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

/// What the rules compare of one side of an UPDATE, under one scheme.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Side<'a> {
    pub owner: Owner<'a>,
    /// The revision, when fencing is on and the object carries a valid one.
    pub revision: Option<u64>,
    /// The successor the object names, when handover is on and it names one of this scheme
    /// other than its own owner (a successor of another tool is `cross_tool`'s).
    pub successor: Option<Owner<'a>>,
}

impl<'a> Side<'a> {
    pub fn of(schemes: &Schemes, s: usize, marks: &Marks<'a>) -> Side<'a> {
        let scheme = &schemes.list[s];
        let owner = marks.owner(scheme);
        let successor = (marks.successor(schemes))
            .and_then(|v| schemes.parse_successor(v).ok())
            .filter(|named| named.scheme == s && named.owner != owner)
            .map(|named| named.owner);
        Side {
            owner,
            revision: marks.revision(scheme).and_then(parse_revision),
            successor,
        }
    }
}

/// What an UPDATE does to the owner under one scheme.
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
    /// The owner changes by the tool's own rule: an OLM v0 upgrade to the ClusterServiceVersion
    /// that replaces it.
    Upgraded,
    /// The owner changes, but the stored object names another successor.
    NotTheSuccessor,
    Changed,
}

impl Transition {
    /// Whether the transition is refused whatever the settings say.
    pub fn refused(&self) -> bool {
        matches!(
            self,
            Transition::RolledBack { .. }
                | Transition::RevisionDropped { .. }
                | Transition::NotTheSuccessor
                | Transition::Changed
        )
    }
}

/// The same-owner invariant: an owner may appear or disappear, never change, not even in
/// part, unless the stored object names the new owner as its successor. Within one owner
/// the revision never goes down, and once stamped it stays. Two owners are the same only
/// when every key is absent on both sides or present on both with the same value.
pub fn transition(old: &Side, new: &Side) -> Transition {
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

/// The transition of an UPDATE under scheme `s`, and its answer with the messages that say
/// what to do. A change of owner is first put to the tool's own rule, if it has one.
pub fn judge(
    schemes: &Schemes,
    s: usize,
    settings: &Settings,
    subject: &Subject,
    (old, new): (&Marks, &Marks),
    cluster: &dyn Cluster,
) -> (Transition, Verdict) {
    let (old, new) = (Side::of(schemes, s, old), Side::of(schemes, s, new));
    let mut t = transition(&old, &new);
    let mut why = None;
    let hint = (t == Transition::Changed)
        .then(|| {
            // An owner key that names no object by itself: say where both owners are.
            let values: Vec<&str> = [&old.owner, &new.owner]
                .into_iter()
                .filter_map(|o| o.get(0))
                .collect();
            tools::owners_hint(&schemes.list[s].tool, &values)
        })
        .flatten();
    if hint.is_some() {
        why = hint;
    } else if t == Transition::Changed {
        let scheme = &schemes.list[s];
        match by_tool(schemes, s, &old.owner, &new.owner, cluster) {
            Ok(None) => {}
            Ok(Some(olm_v0::Chain::Holds)) => t = Transition::Upgraded,
            Ok(Some(olm_v0::Chain::Without(chain))) => {
                why = Some(format!(
                    " The new owner does not replace the current one by {}'s upgrade rule (its \
                     replacement chain: {}).",
                    scheme.tool,
                    chain.trim_end_matches('.')
                ))
            }
            Err(e) => {
                why = Some(format!(
                    " Whether the new owner replaces the current one by {}'s upgrade rule could \
                     not be checked, and the policy refuses what it cannot check: {}. {}",
                    scheme.tool,
                    e.trim_end_matches('.'),
                    crate::tools::cluster::Failure::of(&e).remedy()
                ))
            }
        }
    }
    let verdict = answer(
        schemes,
        s,
        settings,
        subject,
        (&old, &new),
        &t,
        why.as_deref(),
    );
    (t, verdict)
}

/// A change of owner by the scheme's tool's rule: `None` when it has no rule for this change,
/// else what the rule found (`Err`: a lookup failed).
fn by_tool(
    schemes: &Schemes,
    s: usize,
    old: &Owner,
    new: &Owner,
    cluster: &dyn Cluster,
) -> Result<Option<olm_v0::Chain>, String> {
    let scheme = &schemes.list[s];
    if scheme.tool != "olm-v0" {
        return Ok(None);
    }
    let (from, to) = (csv(scheme, old), csv(scheme, new));
    if !olm_v0::is_candidate(from, to) {
        return Ok(None);
    }
    olm_v0::replaces(cluster, from, to).map(Some)
}

/// An owner under OLM v0's keys.
fn csv<'o>(scheme: &Scheme, owner: &'o Owner) -> olm_v0::Csv<'o> {
    let key = |k| scheme.key_index(k).and_then(|i| owner.get(i));
    olm_v0::Csv {
        name: key(olm_v0::OWNER),
        namespace: key(olm_v0::OWNER_NAMESPACE),
        kind: key(olm_v0::OWNER_KIND),
    }
}

fn answer(
    schemes: &Schemes,
    s: usize,
    settings: &Settings,
    subject: &Subject,
    (old, new): (&Side, &Side),
    t: &Transition,
    why: Option<&str>,
) -> Verdict {
    let scheme = &schemes.list[s];
    let tool = Tool(schemes, s);
    let keys = OwnerKeys(scheme);
    let revision = scheme.revision_annotation.as_str();
    // How the two revision rejections start: the owner and the stored revision.
    let at_revision = |stored: u64| {
        message!(
            subject,
            " is owned by ",
            Pairs::all(scheme, &old.owner),
            tool,
            " at revision ",
            stored,
            " (",
            revision,
            ")",
        )
    };
    let new_owned = Owned {
        scheme: s,
        owner: new.owner.clone(),
    };
    match t {
        Transition::Unowned | Transition::Kept | Transition::Upgraded => Verdict::accept(),
        Transition::Changed => {
            let current = Pairs::differing(scheme, &old.owner, &new.owner);
            let requested = Pairs::differing(scheme, &new.owner, &old.owner);
            Verdict::reject(message!(
                subject,
                " is owned by ",
                current,
                tool,
                ", and this UPDATE would change its owner to ",
                requested,
                ". An object has a single owner: the current owner must first release it by \
                 removing its owner keys (",
                keys,
                "), then the new owner can adopt it.",
                HandoverRoute(schemes, &new_owned),
                why,
            ))
        }
        Transition::NotTheSuccessor => Verdict::reject(message!(
            subject,
            " is owned by ",
            Pairs::all(scheme, &old.owner),
            tool,
            ", which handed it over to ",
            old.successor.as_ref().map(|o| Pairs::all(scheme, o)),
            " (",
            schemes.handover_annotation,
            " on the stored object), not to ",
            Pairs::all(scheme, &new.owner),
            ": only the successor the current owner named can take it in one write.",
        )),
        Transition::HandedOver => Verdict::warn(message!(
            subject,
            " handed over from owner ",
            Pairs::all(scheme, &old.owner),
            " to owner ",
            Pairs::all(scheme, &new.owner),
            tool,
            ", the successor its owner named in ",
            schemes.handover_annotation,
        )),
        Transition::RolledBack { stored, written } => Verdict::reject(message!(
            at_revision(*stored),
            ", and this UPDATE would write revision ",
            *written,
            ": a stale writer (an older revision or replica of the same owner) cannot roll \
             the object back. To roll back deliberately, write the older content as a new \
             revision above ",
            *stored,
            ".",
        )),
        Transition::RevisionDropped { stored } => Verdict::reject(message!(
            at_revision(*stored),
            ", and this UPDATE keeps the owner but drops the ",
            revision,
            " annotation: a writer that does not stamp revisions is a stale one. Stamp a \
             revision of at least ",
            *stored,
            "; to release the object, remove the owner keys (",
            keys,
            ") as well.",
        )),
        Transition::Adopted if !settings.allow_adoption() => Verdict::reject(message!(
            subject,
            " has no owner, and this UPDATE would give it the owner ",
            Pairs::all(scheme, &new.owner),
            tool,
            ", but adoption is disabled (allowAdoption: false): an object's owner must \
             create it.",
        )),
        Transition::Orphaned if !settings.allow_orphaning() => Verdict::reject(message!(
            subject,
            " is owned by ",
            Pairs::all(scheme, &old.owner),
            tool,
            ", and this UPDATE would remove its owner keys, but orphaning is disabled \
             (allowOrphaning: false): keep the owner keys (",
            keys,
            "), or delete the object.",
        )),
        Transition::Adopted => Verdict::warn(message!(
            subject,
            " adopted by owner ",
            Pairs::all(scheme, &new.owner),
            tool,
        )),
        Transition::Orphaned => Verdict::warn(message!(
            subject,
            " orphaned: it no longer has owner ",
            Pairs::all(scheme, &old.owner),
            tool,
        )),
    }
}

/// The revision annotations and the handover annotation of the new object (CREATE and
/// UPDATE), where present, must be readable: a malformed fencing token or successor is
/// refused, not ignored.
pub fn check_annotations(schemes: &Schemes, subject: &Subject, new: &Marks) -> Result<(), String> {
    for scheme in &schemes.list {
        if let Some(value) = new.revision(scheme)
            && parse_revision(value).is_none()
        {
            return Err(message!(
                subject,
                " carries the annotation ",
                scheme.revision_annotation,
                "=",
                Quoted(value),
                ", which is not a revision: expected a non-negative decimal integer that fits \
                 in 64 bits, without sign, spaces or leading zeros (e.g. \"17\").",
            ));
        }
    }
    if let Some(value) = new.successor(schemes)
        && let Err(why) = schemes.parse_successor(value)
    {
        return Err(message!(
            subject,
            " carries the annotation ",
            schemes.handover_annotation,
            "=",
            Quoted(value),
            ", which does not name a successor: ",
            why,
            ". Expected comma-separated key=value pairs of the owner keys",
            if schemes.several() {
                " of one tool"
            } else {
                ""
            },
            " (",
            AllOwnerKeys(schemes),
            "), each at most once and without spaces, e.g. ",
            schemes.list.first().map(SelectorExample),
            ".",
        ));
    }
    Ok(())
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

    fn olm() -> Schemes {
        Schemes::new(&Settings::default())
    }

    #[rstest]
    #[case("olm.operatorframework.io/owner-kind=ClusterExtension,olm.operatorframework.io/owner-name=ext-b", &[Some("ClusterExtension"), Some("ext-b")])]
    #[case("olm.operatorframework.io/owner-name=ext-b", &[None, Some("ext-b")])]
    #[case("olm.operatorframework.io/owner-name=", &[None, Some("")])]
    #[case("olm.operatorframework.io/owner-name=a=b", &[None, Some("a=b")])]
    fn successors_parse(#[case] value: &str, #[case] expected: &[Option<&str>]) {
        let successor = olm().parse_successor(value).unwrap();
        assert_eq!(successor.owner.values().collect::<Vec<_>>(), expected);
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
        let e = olm().parse_successor(value).unwrap_err();
        assert!(e.contains(why), "{e:?} lacks {why:?}");
    }
}
