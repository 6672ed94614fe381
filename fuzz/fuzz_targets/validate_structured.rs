//! Structure-aware AdmissionRequests: labels and annotations from a small alphabet so that
//! owners often collide, unrelated nesting, and now and then a malformation. The oracle is a
//! reference model of the rules written here, apart from the policy: with the scope rules off
//! and adoption/orphaning allowed, an UPDATE is rejected exactly when both owner tuples are
//! present and differ; every other well-formed request is accepted.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};
use single_owner_policy::admission;

const OWNER_LABELS: [&str; 2] = ["example.com/owner-kind", "example.com/owner-name"];
const OWNER_ANNOTATION: &str = "example.com/release";
const KEYS: [&str; 5] = ["example.com/owner-kind", "example.com/owner-name", "app", "tier", "example.com/release"];
const VALUES: [&str; 4] = ["", "a", "b", "a\"b\\u00e9"];

#[derive(Debug, Arbitrary)]
enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

#[derive(Debug, Arbitrary)]
struct Meta {
    labels: Option<Vec<(u8, u8)>>,
    annotations: Option<Vec<(u8, u8)>>,
    /// Depth of an unrelated nested field.
    nesting: u8,
    /// Put `spec` before or after `metadata`.
    spec_first: bool,
}

#[derive(Debug, Arbitrary)]
enum Malformation {
    None,
    LabelValueNumber,
    DuplicateOwnerLabel,
    LabelsArray,
    MetadataString,
    Truncate(u16),
}

#[derive(Debug, Arbitrary)]
struct Input {
    operation: Operation,
    namespaced: bool,
    old: Option<Meta>,
    new: Option<Meta>,
    malformation: Malformation,
}

fn map(pairs: &[(u8, u8)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| (KEYS[*k as usize % KEYS.len()].to_string(), json!(VALUES[*v as usize % VALUES.len()])))
        .collect()
}

fn object_json(meta: &Meta) -> String {
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!("o"));
    if let Some(l) = &meta.labels {
        metadata.insert("labels".into(), Value::Object(map(l)));
    }
    if let Some(a) = &meta.annotations {
        metadata.insert("annotations".into(), Value::Object(map(a)));
    }
    let depth = meta.nesting as usize * 4;
    let spec = format!("{}{}{}", "[{\"x\":".repeat(depth), "1", "}]".repeat(depth));
    let metadata = Value::Object(metadata).to_string();
    if meta.spec_first {
        format!(r#"{{"spec":{spec},"metadata":{metadata}}}"#)
    } else {
        format!(r#"{{"metadata":{metadata},"spec":{spec}}}"#)
    }
}

/// The reference owner: None when no owner key is present.
fn owner(meta: Option<&Meta>) -> Option<Vec<Option<String>>> {
    let meta = meta?;
    let labels = meta.labels.as_deref().map(map).unwrap_or_default();
    let annotations = meta.annotations.as_deref().map(map).unwrap_or_default();
    let get = |m: &Map<String, Value>, k: &str| m.get(k).and_then(Value::as_str).map(String::from);
    let mut tuple: Vec<_> = OWNER_LABELS.iter().map(|k| get(&labels, k)).collect();
    tuple.push(get(&annotations, OWNER_ANNOTATION));
    tuple.iter().any(Option::is_some).then_some(tuple)
}

fuzz_target!(|input: Input| {
    let operation = match input.operation {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
        Operation::Connect => "CONNECT",
    };
    let object = input.new.as_ref().map_or("null".to_string(), object_json);
    let old = input.old.as_ref().map_or("null".to_string(), object_json);
    let namespace = if input.namespaced { r#""namespace":"team-a","# } else { "" };
    let settings = json!({"ownerLabels": OWNER_LABELS, "ownerAnnotations": [OWNER_ANNOTATION], "ownerKindLabel": ""});
    let payload = format!(
        r#"{{"request":{{"uid":"u","operation":"{operation}",{namespace}"kind":{{"group":"","kind":"ConfigMap"}},"name":"o","object":{object},"oldObject":{old}}},"settings":{settings}}}"#
    );
    // Each malformation edits the first `metadata` object, if there is one (objects may be
    // null); an edit that found nothing leaves a well-formed request.
    let insert = |payload: &str, text: &str| payload.replacen(r#""metadata":{"#, text, 1);
    let edited = match input.malformation {
        Malformation::None => payload.clone(),
        Malformation::LabelValueNumber => insert(&payload, r#""metadata":{"labels":{"n":1},"#),
        Malformation::DuplicateOwnerLabel => insert(
            &payload,
            r#""metadata":{"labels":{"example.com/owner-name":"a","example.com/owner-name":"a"},"#,
        ),
        Malformation::LabelsArray => insert(&payload, r#""metadata":{"labels":[],"#),
        Malformation::MetadataString => insert(&payload, r#""metadata":"o","x":{"#),
        Malformation::Truncate(n) => payload[..n as usize % payload.len()].to_string(),
    };
    let malformed = edited != payload;
    let answer = admission::validate(edited.as_bytes());
    if !answer.accepted {
        assert!(answer.message.as_deref().is_some_and(|m| !m.is_empty()));
    }
    if malformed {
        assert!(!answer.accepted, "accepted malformed input: {edited}");
        return;
    }
    let expected = match input.operation {
        Operation::Update => match (owner(input.old.as_ref()), owner(input.new.as_ref())) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        },
        _ => true,
    };
    assert_eq!(answer.accepted, expected, "{payload} -> {:?}", answer.message);
});
