//! Property tests of the whole UPDATE decision over random labels and annotations, against a
//! small reference model written here, apart from the policy: the same-owner invariant,
//! adoption and orphaning, revision fencing and the one-write handover.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::json;
use single_owner_policy::admission;

#[path = "support/model.rs"]
mod model;

use model::{HANDOVER, Meta, OWNER_ANNOTATION, OWNER_LABELS, REVISION};

/// Maps over a small alphabet of keys and values, so that owners often collide.
fn label_map() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map(
        prop::sample::select(vec!["owner/kind", "owner/name", "app", "tier"])
            .prop_map(String::from),
        prop::sample::select(vec!["", "a", "b"]).prop_map(String::from),
        0..4,
    )
}

/// Revisions, valid and not, and successors, well-formed and not, often naming a or b.
fn annotation_map() -> impl Strategy<Value = BTreeMap<String, String>> {
    let value = prop_oneof![
        prop::sample::select(vec!["", "a", "b"]),
        prop::sample::select(vec!["0", "1", "2", "10", "01", "+1", " 2", "x"]),
        prop::sample::select(vec![
            "owner/name=a",
            "owner/name=b",
            "owner/kind=a,owner/name=b",
            "owner/name=b,owner/kind=a",
            "owner/kind=,owner/name=a",
            "owner/release=b",
            "owner/name=b,owner/release=a",
            "owner/name=a,owner/name=b",
            "owner/name=b, owner/kind=a",
            "app=b",
            "owner/name",
        ]),
    ];
    prop::collection::btree_map(
        prop::sample::select(vec![OWNER_ANNOTATION, REVISION, HANDOVER, "note"])
            .prop_map(String::from),
        value.prop_map(String::from),
        0..4,
    )
}

fn accepted(old: &Meta, new: &Meta, adoption: bool, orphaning: bool) -> bool {
    let obj = |m: &Meta| json!({"metadata": {"name": "o", "labels": m.0, "annotations": m.1}});
    let settings: serde_json::Value =
        serde_json::from_str(&model::settings(adoption, orphaning)).unwrap();
    let payload = json!({"request": {"operation": "UPDATE", "namespace": "ns", "name": "o",
        "kind": {"kind": "ConfigMap"}, "object": obj(new), "oldObject": obj(old)},
        "settings": settings});
    let answer = admission::validate(payload.to_string().as_bytes());
    if !answer.accepted {
        // Every request here is well-formed: a refusal is a rule's, 403.
        assert_eq!(
            answer.code,
            Some(admission::FORBIDDEN),
            "{:?}",
            answer.message
        );
    }
    answer.accepted
}

fn expected(old: &Meta, new: &Meta, adoption: bool, orphaning: bool) -> bool {
    model::accepts("UPDATE", Some(old), Some(new), adoption, orphaning)
}

fn without_owner_keys(m: &Meta) -> Meta {
    let mut m = m.clone();
    m.0.retain(|k, _| !OWNER_LABELS.contains(&k.as_str()));
    m.1.retain(|k, _| ![OWNER_ANNOTATION, REVISION, HANDOVER].contains(&k.as_str()));
    m
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn update_decision_matches_the_reference_model(
        old in (label_map(), annotation_map()),
        new in (label_map(), annotation_map()),
        adoption in any::<bool>(),
        orphaning in any::<bool>(),
    ) {
        prop_assert_eq!(
            accepted(&old, &new, adoption, orphaning),
            expected(&old, &new, adoption, orphaning),
            "old {:?} new {:?} adoption {} orphaning {}", old, new, adoption, orphaning
        );
    }

    #[test]
    fn decision_never_depends_on_other_keys(
        old in (label_map(), annotation_map()), new in (label_map(), annotation_map()),
        noise_old in (label_map(), annotation_map()), noise_new in (label_map(), annotation_map()),
    ) {
        // Replace the keys the rules do not read, on both sides, with unrelated noise.
        let read = |k: &str| OWNER_LABELS.contains(&k) || [OWNER_ANNOTATION, REVISION, HANDOVER].contains(&k);
        let mix = |m: &Meta, noise: &Meta| {
            let mut out = without_owner_keys(noise);
            out.0.extend(m.0.iter().filter(|(k, _)| read(k)).map(|(k, v)| (k.clone(), v.clone())));
            out.1.extend(m.1.iter().filter(|(k, _)| read(k)).map(|(k, v)| (k.clone(), v.clone())));
            out
        };
        prop_assert_eq!(
            accepted(&old, &new, true, true),
            accepted(&mix(&old, &noise_old), &mix(&new, &noise_new), true, true)
        );
    }
}
