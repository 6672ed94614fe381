//! The reference model of one owner across tools, written apart from the policy, for the
//! property tests (`tests/tools_model.rs`) and the structure-aware fuzz target. Where the
//! policy reasons about the owners a write adds, keeps and removes, the model names who owns
//! the object before and after (nobody, one owner, a handover under way, or a contest) and
//! lists the moves between those states that are allowed.
//!
//! The settings it models (`settings`): three tools, `a` (labels a/kind, a/name; revision
//! annotation a/revision), `b` (annotation b/release) and `c` (label c/name); `a` and `b` are
//! aliases, a/name holding b/release's value; the handover annotation `h`.

use std::collections::{BTreeMap, BTreeSet};

pub const KEYS: [(usize, &str, bool); 4] = [
    (0, "a/kind", true),
    (0, "a/name", true),
    (1, "b/release", false),
    (2, "c/name", true),
];
pub const REVISION: &str = "a/revision";
/// Successors the generators pick from: of each tool, of two tools at once, malformed.
pub const SUCCESSORS: [&str; 10] = [
    "a/name=x",
    "a/name=y",
    "a/kind=x,a/name=y",
    "b/release=x",
    "b/release=y",
    "c/name=x",
    "c/name=y",
    "a/name=x,b/release=x",
    "c/name=x, c/name=y",
    "app=x",
];
pub const HANDOVER: &str = "h";

/// An object's labels and annotations.
pub type Meta = (BTreeMap<String, String>, BTreeMap<String, String>);
/// An owner: the tool, and the values of its keys in `KEYS` order.
pub type Owner = (usize, Vec<Option<String>>);

pub fn settings(adoption: bool, orphaning: bool) -> String {
    format!(
        r#"{{"schemes":[{{"name":"a","ownerLabels":["a/kind","a/name"],"revisionAnnotation":"{REVISION}"}},{{"name":"b","ownerAnnotations":["b/release"]}},{{"name":"c","ownerLabels":["c/name"]}}],"aliases":[{{"schemes":["a","b"],"keys":{{"a/name":"b/release"}}}}],"handoverAnnotation":"{HANDOVER}","allowAdoption":{adoption},"allowOrphaning":{orphaning}}}"#
    )
}

fn keys_of(tool: usize) -> impl Iterator<Item = &'static (usize, &'static str, bool)> {
    KEYS.iter().filter(move |(t, _, _)| *t == tool)
}

fn value(m: &Meta, key: &str, label: bool) -> Option<String> {
    if label { m.0.get(key) } else { m.1.get(key) }.cloned()
}

/// The values of every key the settings read: an UPDATE that changes none of them changes no
/// owner, and stands as it was judged.
fn markers(m: &Meta) -> Vec<Option<String>> {
    (KEYS.iter().map(|(_, k, l)| value(m, k, *l)))
        .chain([REVISION, HANDOVER].iter().map(|k| m.1.get(*k).cloned()))
        .collect()
}

/// The owners an object carries, by tool.
pub fn owners(m: &Meta) -> BTreeSet<Owner> {
    (0..3)
        .filter_map(|tool| {
            let values: Vec<_> = keys_of(tool).map(|(_, k, l)| value(m, k, *l)).collect();
            values.iter().any(Option::is_some).then_some((tool, values))
        })
        .collect()
}

/// Whether two owners are one: the same tool and values, or `a` and `b` agreeing on the name.
fn same(x: &Owner, y: &Owner) -> bool {
    match (x.0, y.0) {
        (p, q) if p == q => x.1 == y.1,
        (0, 1) => x.1[1] == y.1[0],
        (1, 0) => x.1[0] == y.1[1],
        _ => false,
    }
}

fn tools(set: &BTreeSet<Owner>) -> BTreeSet<usize> {
    set.iter().map(|o| o.0).collect()
}

fn one(set: &BTreeSet<Owner>) -> bool {
    set.iter().all(|x| set.iter().all(|y| same(x, y)))
}

fn revision(v: &str) -> Option<u64> {
    let digits = !v.is_empty() && v.chars().all(|c| c.is_ascii_digit());
    if digits && !(v.len() > 1 && v.starts_with('0')) {
        v.parse().ok()
    } else {
        None
    }
}

/// The successor the handover annotation names: `key=value` pairs of one tool's keys.
fn successor(v: &str) -> Option<Owner> {
    if v.is_empty() || v.chars().any(char::is_whitespace) {
        return None;
    }
    let mut tool = None;
    let mut values: BTreeMap<&str, String> = BTreeMap::new();
    for pair in v.split(',') {
        let (k, val) = pair.split_once('=')?;
        let (t, _, _) = KEYS.iter().find(|(_, key, _)| *key == k)?;
        if *tool.get_or_insert(*t) != *t || values.insert(k, val.to_string()).is_some() {
            return None;
        }
    }
    let tool = tool?;
    Some((
        tool,
        keys_of(tool)
            .map(|(_, k, _)| values.get(k).cloned())
            .collect(),
    ))
}

/// Who owns an object.
#[derive(Debug, PartialEq)]
enum State {
    Nobody,
    One(BTreeSet<Owner>),
    /// A handover under way: the successor's owners, and what is left of the former owner.
    Handing(BTreeSet<Owner>, BTreeSet<Owner>),
    Contested(BTreeSet<Owner>),
}

fn state(m: &Meta) -> State {
    let all = owners(m);
    if all.is_empty() {
        return State::Nobody;
    }
    if one(&all) {
        return State::One(all);
    }
    if let Some(s) =
        m.1.get(HANDOVER)
            .and_then(|v| successor(v))
            .filter(|s| all.contains(s))
    {
        let (to, from): (BTreeSet<_>, BTreeSet<_>) = all.iter().cloned().partition(|o| same(o, &s));
        if one(&from) && from.iter().all(|o| o.0 != s.0) {
            return State::Handing(to, from);
        }
    }
    State::Contested(all)
}

/// Whether the policy accepts `operation` on these objects (None: null or absent).
pub fn accepts(
    operation: &str,
    old: Option<&Meta>,
    new: Option<&Meta>,
    adoption: bool,
    orphaning: bool,
) -> bool {
    let (old, new) = match (operation, old, new) {
        ("DELETE" | "CONNECT", _, _) => return true,
        ("CREATE" | "UPDATE", _, None) | ("UPDATE", None, _) => return false,
        ("CREATE", _, Some(new)) => (None, new),
        ("UPDATE", Some(old), Some(new)) if markers(old) == markers(new) => return true,
        ("UPDATE", Some(old), Some(new)) => (Some(old), new),
        _ => return false,
    };
    // Readable annotations.
    if new.1.get(REVISION).is_some_and(|r| revision(r).is_none())
        || new.1.get(HANDOVER).is_some_and(|h| successor(h).is_none())
    {
        return false;
    }
    let Some(old) = old else {
        return one(&owners(new));
    };
    let named = old.1.get(HANDOVER).and_then(|v| successor(v));
    let (po, pn) = (owners(old), owners(new));
    // Each tool's own rules: an owner kept stays, unless the stored object names the new one
    // (a handover within the tool); a's revision never goes down within one owner.
    for x in &po {
        if let Some(y) = pn.iter().find(|y| y.0 == x.0) {
            if x != y && named.as_ref() != Some(y) {
                return false;
            }
            if x == y && x.0 == 0 {
                let stored = old.1.get(REVISION).and_then(|r| revision(r));
                let written = new.1.get(REVISION).and_then(|r| revision(r));
                if stored.is_some_and(|s| written.is_none_or(|w| w < s)) {
                    return false;
                }
            }
        }
    }
    let is_named = |set: &BTreeSet<Owner>| {
        named
            .as_ref()
            .is_some_and(|s| set.contains(s) && set.iter().all(|o| same(o, s)))
    };
    let still_named = |to: &BTreeSet<Owner>| {
        new.1
            .get(HANDOVER)
            .and_then(|v| successor(v))
            .is_some_and(|s| to.contains(&s))
    };
    match (state(old), state(new)) {
        (State::Nobody, State::Nobody) => true,
        (State::Nobody, State::One(g)) => (named.is_none() || is_named(&g)) && adoption,
        (_, State::Nobody) => orphaning,
        // The same tools (each tool's owner kept, or handed over within it, checked above),
        // or the named successor in one write.
        (State::One(g), State::One(h)) => {
            tools(&g) == tools(&h) || (g.is_disjoint(&h) && is_named(&h))
        }
        (State::One(g), State::Handing(to, from)) => is_named(&to) && from == g && still_named(&to),
        (State::Handing(to, from), State::Handing(to2, from2)) => {
            to == to2 && from2.is_subset(&from) && still_named(&to)
        }
        (State::Handing(to, _), State::One(h)) => h == to,
        // Two owners stored (from before the policy): a write may drop tools, and change an
        // owner as its tool's rules allow (checked above), but not add a tool. Naming one of
        // the owners the successor settles the contest in its favour.
        // The named successor takes the object in one write, whoever else owned it.
        (State::Contested(p), State::One(h)) if p.is_disjoint(&h) && is_named(&h) => true,
        (State::Contested(p), State::Contested(q) | State::One(q)) => {
            tools(&q).is_subset(&tools(&p))
        }
        (State::Contested(p), State::Handing(to, from)) => tools(&to)
            .union(&tools(&from))
            .all(|t| tools(&p).contains(t)),
        _ => false,
    }
}
