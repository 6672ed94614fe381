//! Property tests of the same-owner transition rule over random label maps.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::json;
use single_owner_policy::admission;

const OWNER_LABELS: [&str; 2] = ["owner/kind", "owner/name"];
const OWNER_ANNOTATION: &str = "owner/release";

fn settings() -> serde_json::Value {
    json!({"ownerLabels": OWNER_LABELS, "ownerAnnotations": [OWNER_ANNOTATION], "ownerKindLabel": ""})
}

/// Maps over a small alphabet of keys and values, so that owners often collide.
fn label_map() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map(
        prop::sample::select(vec!["owner/kind", "owner/name", "app", "tier"])
            .prop_map(String::from),
        prop::sample::select(vec!["", "a", "b"]).prop_map(String::from),
        0..4,
    )
}

fn annotation_map() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map(
        prop::sample::select(vec![OWNER_ANNOTATION, "note"]).prop_map(String::from),
        prop::sample::select(vec!["", "a", "b"]).prop_map(String::from),
        0..2,
    )
}

type Meta = (BTreeMap<String, String>, BTreeMap<String, String>);

fn accepted(old: &Meta, new: &Meta) -> bool {
    let obj = |m: &Meta| json!({"metadata": {"name": "o", "labels": m.0, "annotations": m.1}});
    let payload = json!({"request": {"operation": "UPDATE", "namespace": "ns", "name": "o",
        "kind": {"kind": "ConfigMap"}, "object": obj(new), "oldObject": obj(old)}, "settings": settings()});
    admission::validate(payload.to_string().as_bytes()).accepted
}

/// The reference model: the owner tuple, or None when no owner key is present.
fn owner(m: &Meta) -> Option<Vec<Option<String>>> {
    let mut t: Vec<Option<String>> = OWNER_LABELS.iter().map(|k| m.0.get(*k).cloned()).collect();
    t.push(m.1.get(OWNER_ANNOTATION).cloned());
    t.iter().any(Option::is_some).then_some(t)
}

fn without_owner_keys(m: &Meta) -> Meta {
    let mut m = m.clone();
    m.0.retain(|k, _| !OWNER_LABELS.contains(&k.as_str()));
    m.1.retain(|k, _| k != OWNER_ANNOTATION);
    m
}

proptest! {
    #[test]
    fn accept_iff_one_side_unowned_or_owners_equal(old in (label_map(), annotation_map()), new in (label_map(), annotation_map())) {
        let expected = match (owner(&old), owner(&new)) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        };
        prop_assert_eq!(accepted(&old, &new), expected);
    }

    #[test]
    fn decision_never_depends_on_other_keys(
        old in (label_map(), annotation_map()), new in (label_map(), annotation_map()),
        noise_old in (label_map(), annotation_map()), noise_new in (label_map(), annotation_map()),
    ) {
        // Replace the non-owner keys of both sides with unrelated noise: same decision.
        let mix = |m: &Meta, noise: &Meta| {
            let mut out = without_owner_keys(noise);
            out.0.extend(m.0.iter().filter(|(k, _)| OWNER_LABELS.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())));
            out.1.extend(m.1.iter().filter(|(k, _)| k.as_str() == OWNER_ANNOTATION).map(|(k, v)| (k.clone(), v.clone())));
            out
        };
        prop_assert_eq!(accepted(&old, &new), accepted(&mix(&old, &noise_old), &mix(&new, &noise_new)));
    }
}
