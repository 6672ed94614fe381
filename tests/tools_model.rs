//! Property tests of the decision across tools (CREATE and UPDATE over random labels and
//! annotations of three tools, two of them aliases, with handovers) against the reference
//! model in `support/tools_model.rs`, written apart from the policy. The last test breaks the
//! model on purpose and checks that the property then fails: the generator reaches the cases
//! that tell a right model from a wrong one.

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::json;
use single_owner_policy::admission;

#[path = "support/tools_model.rs"]
mod model;

use model::{HANDOVER, Meta, REVISION};

/// One key's value: absent half the time, else one of `values`.
fn key(values: &'static [&'static str]) -> impl Strategy<Value = Option<String>> {
    prop::option::weighted(0.5, prop::sample::select(values).prop_map(String::from))
}

/// An object of the three tools: each tool's keys often present, over a small alphabet so
/// that owners often collide, a's revision, and a successor of any tool, well-formed or not.
fn meta() -> impl Strategy<Value = Meta> {
    let labels = (
        key(&["", "x"]),
        key(&["x", "y"]),
        key(&["x", "y"]),
        key(&["1"]),
    );
    let annotations = (
        key(&["x", "y"]),
        key(&["1", "2", "01"]),
        key(&model::SUCCESSORS),
    );
    (labels, annotations).prop_map(|((kind, name, c, app), (release, revision, handover))| {
        let mut m: Meta = Default::default();
        let put = |map: &mut BTreeMap<String, String>, k: &str, v: Option<String>| {
            if let Some(v) = v {
                map.insert(k.to_string(), v);
            }
        };
        put(&mut m.0, "a/kind", kind);
        put(&mut m.0, "a/name", name);
        put(&mut m.0, "c/name", c);
        put(&mut m.0, "app", app);
        put(&mut m.1, "b/release", release);
        put(&mut m.1, REVISION, revision);
        put(&mut m.1, HANDOVER, handover);
        m
    })
}

fn accepted(old: Option<&Meta>, new: &Meta, adoption: bool, orphaning: bool) -> bool {
    let obj = |m: &Meta| json!({"metadata": {"name": "o", "labels": m.0, "annotations": m.1}});
    let settings: serde_json::Value =
        serde_json::from_str(&model::settings(adoption, orphaning)).unwrap();
    let payload = json!({"request": {"operation": if old.is_some() { "UPDATE" } else { "CREATE" },
        "namespace": "ns", "name": "o", "kind": {"kind": "ConfigMap"}, "object": obj(new),
        "oldObject": old.map(obj)}, "settings": settings});
    let answer = admission::validate(payload.to_string().as_bytes());
    if !answer.accepted {
        assert_eq!(
            answer.code,
            Some(admission::FORBIDDEN),
            "{:?}",
            answer.message
        );
    }
    answer.accepted
}

type Model = fn(&str, Option<&Meta>, Option<&Meta>, bool, bool) -> bool;

/// The property: the policy decides as `model` does, on CREATE and UPDATE.
fn holds(model: Model, cases: u32) -> Result<(), String> {
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (
        prop::option::of(meta()),
        meta(),
        any::<bool>(),
        any::<bool>(),
    );
    runner
        .run(&strategy, |(old, new, adoption, orphaning)| {
            let op = if old.is_some() { "UPDATE" } else { "CREATE" };
            prop_assert_eq!(
                accepted(old.as_ref(), &new, adoption, orphaning),
                model(op, old.as_ref(), Some(&new), adoption, orphaning),
                "old {:?} new {:?} adoption {} orphaning {}",
                old,
                new,
                adoption,
                orphaning
            );
            Ok(())
        })
        .map_err(|e| e.to_string())
}

#[test]
fn the_decision_across_tools_matches_the_reference_model() {
    if let Err(e) = holds(model::accepts, 16384) {
        panic!("{e}");
    }
}

/// The model without aliases: a's and b's keys for one owner are two owners.
fn without_aliases(op: &str, old: Option<&Meta>, new: Option<&Meta>, a: bool, o: bool) -> bool {
    let both = |m: &Meta| m.0.contains_key("a/name") && m.1.contains_key("b/release");
    if op == "CREATE" && new.is_some_and(both) {
        return false;
    }
    model::accepts(op, old, new, a, o)
}

/// The model without the handover's reservation: an unowned object that names a successor
/// may be adopted by anyone.
fn without_reservation(op: &str, old: Option<&Meta>, new: Option<&Meta>, a: bool, o: bool) -> bool {
    let strip = |m: &Meta| {
        let mut m = m.clone();
        m.1.remove(HANDOVER);
        m
    };
    let unowned = old.is_some_and(|m| model::owners(m).is_empty());
    if op == "UPDATE" && unowned {
        let (old, new) = (old.map(strip), new.map(strip));
        return model::accepts(op, old.as_ref(), new.as_ref(), a, o);
    }
    model::accepts(op, old, new, a, o)
}

/// The model without handovers across tools: a second tool's keys are refused even when the
/// stored object names that tool's owner.
fn without_cross_tool_handover(
    op: &str,
    old: Option<&Meta>,
    new: Option<&Meta>,
    a: bool,
    o: bool,
) -> bool {
    let (Some(old_m), Some(new_m)) = (old, new) else {
        return model::accepts(op, old, new, a, o);
    };
    let tools = |m: &Meta| model::owners(m).iter().map(|o| o.0).collect::<Vec<_>>();
    let gains_a_tool = tools(new_m).iter().any(|t| !tools(old_m).contains(t));
    if !model::owners(old_m).is_empty() && gains_a_tool {
        return false;
    }
    model::accepts(op, old, new, a, o)
}

#[test]
fn a_broken_model_fails_the_property() {
    for (name, broken) in [
        ("without aliases", without_aliases as Model),
        ("without the reservation", without_reservation as Model),
        (
            "without handovers across tools",
            without_cross_tool_handover as Model,
        ),
    ] {
        assert!(
            holds(broken, 4096).is_err(),
            "the property holds with the model {name}: the generator misses what tells it apart"
        );
    }
}
