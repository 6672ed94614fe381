//! Structure-aware AdmissionRequests: labels and annotations from a small alphabet so that
//! owners, revisions and successors often collide, unrelated nesting, objects present or
//! not, and now and then a malformation; and, with bindings, a writer in `userInfo` (before or
//! after the operation); or the keys of three tools, two of them aliases, with successors of
//! each. The oracle is the reference model of the rules in `tests/support/model.rs`, of the
//! rules across tools in `tests/support/tools_model.rs` and of the identity rules in
//! `tests/support/identity_model.rs`, written apart from the policy: every well-formed request
//! gets exactly the models' decision, every malformed one is rejected, and every rejection
//! says why.
#![no_main]

use std::collections::BTreeMap;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};
use single_owner_policy::admission;

#[path = "../../tests/support/identity_model.rs"]
mod identity_model;
#[path = "../../tests/support/model.rs"]
mod model;
#[path = "../../tests/support/tools_model.rs"]
mod tools_model;

use model::{HANDOVER, Meta, OWNER_ANNOTATION, OWNER_LABELS, REVISION};

const LABEL_KEYS: [&str; 4] = [OWNER_LABELS[0], OWNER_LABELS[1], "app", "tier"];
const ANNOTATION_KEYS: [&str; 4] = [OWNER_ANNOTATION, REVISION, HANDOVER, "note"];
/// The keys and values of the several-tools model.
const TOOL_LABEL_KEYS: [&str; 4] = ["a/kind", "a/name", "c/name", "app"];
const TOOL_ANNOTATION_KEYS: [&str; 4] = [
    "b/release",
    tools_model::REVISION,
    tools_model::HANDOVER,
    "note",
];
/// The several-tools model's values: owners' and revisions', then its successors.
const TOOL_VALUES: [&str; 6] = ["", "x", "y", "1", "2", "01"];
const VALUES: [&str; 20] = [
    "",
    "a",
    "b",
    "a\"b\\u00e9",
    "0",
    "1",
    "2",
    "10",
    "01",
    "+1",
    "18446744073709551616",
    "owner/name=a",
    "owner/name=b",
    "owner/kind=a,owner/name=b",
    "owner/name=b,owner/kind=a",
    "owner/release=b",
    "owner/name=b,owner/release=a",
    "owner/name=a,owner/name=b",
    "owner/name=b, owner/kind=a",
    "owner/name",
];

#[derive(Debug, Arbitrary)]
enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

#[derive(Debug, Arbitrary)]
struct Object {
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
    UnclosedSpec,
    Truncate(u16),
}

#[derive(Debug, Arbitrary)]
struct Input {
    operation: Operation,
    namespaced: bool,
    old: Option<Object>,
    new: Option<Object>,
    adoption: bool,
    orphaning: bool,
    malformation: Malformation,
    /// With bindings: the writer (an index into `identity_model::WRITERS`), and whether its
    /// `userInfo` comes before the operation.
    writer: Option<(u8, bool)>,
    /// The several-tools model's keys and settings instead (without bindings).
    tools: bool,
}

/// Owners', revisions' and successors' values of the several-tools model.
const TOOL_VALUES_ALL: [&str; 16] = {
    let mut all = [""; 16];
    let mut i = 0;
    while i < 16 {
        all[i] = if i < 6 {
            TOOL_VALUES[i]
        } else {
            tools_model::SUCCESSORS[i - 6]
        };
        i += 1;
    }
    all
};

fn map(pairs: &[(u8, u8)], keys: &[&str], values: &[&str]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| {
            let key = keys[*k as usize % keys.len()].to_string();
            (key, values[*v as usize % values.len()].to_string())
        })
        .collect()
}

fn meta(o: &Object, tools: bool) -> Meta {
    let (labels, annotations, values): (&[&str], &[&str], &[&str]) = match tools {
        true => (&TOOL_LABEL_KEYS, &TOOL_ANNOTATION_KEYS, &TOOL_VALUES_ALL),
        false => (&LABEL_KEYS, &ANNOTATION_KEYS, &VALUES),
    };
    (
        (o.labels.as_deref())
            .map(|l| map(l, labels, values))
            .unwrap_or_default(),
        (o.annotations.as_deref())
            .map(|a| map(a, annotations, values))
            .unwrap_or_default(),
    )
}

fn object_json(o: &Object, tools: bool) -> String {
    let (labels, annotations) = meta(o, tools);
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!("o"));
    if o.labels.is_some() {
        metadata.insert("labels".into(), json!(labels));
    }
    if o.annotations.is_some() {
        metadata.insert("annotations".into(), json!(annotations));
    }
    let depth = o.nesting as usize * 4;
    let spec = format!("{}{}{}", "[{\"x\":".repeat(depth), "1", "}]".repeat(depth));
    let metadata = Value::Object(metadata).to_string();
    if o.spec_first {
        format!(r#"{{"spec":{spec},"metadata":{metadata}}}"#)
    } else {
        format!(r#"{{"metadata":{metadata},"spec":{spec}}}"#)
    }
}

fuzz_target!(|input: Input| {
    let operation = match input.operation {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
        Operation::Connect => "CONNECT",
    };
    let tools = input.tools && input.writer.is_none();
    let object = (input.new.as_ref()).map_or("null".to_string(), |o| object_json(o, tools));
    let old = (input.old.as_ref()).map_or("null".to_string(), |o| object_json(o, tools));
    let namespace = if input.namespaced {
        r#""namespace":"team-a","#
    } else {
        ""
    };
    let writer = input
        .writer
        .map(|(w, first)| (w as usize % identity_model::WRITERS.len(), first));
    let settings = match (writer, tools) {
        (Some(_), _) => identity_model::settings(input.adoption, input.orphaning),
        (None, true) => tools_model::settings(input.adoption, input.orphaning),
        (None, false) => model::settings(input.adoption, input.orphaning),
    };
    let user_info = writer.map_or(String::new(), |(w, _)| {
        let (username, groups) = identity_model::WRITERS[w];
        format!(
            r#""userInfo":{},"#,
            json!({"username": username, "groups": groups})
        )
    });
    let (before, after) = match writer {
        Some((_, true)) => (user_info.as_str(), ""),
        _ => ("", user_info.as_str()),
    };
    let payload = format!(
        r#"{{"request":{{"uid":"u",{before}"operation":"{operation}",{after}{namespace}"kind":{{"group":"","kind":"ConfigMap"}},"name":"o","object":{object},"oldObject":{old}}},"settings":{settings}}}"#
    );
    // Each malformation edits the first `metadata` object, if there is one (objects may be
    // null); an edit that found nothing leaves a well-formed request.
    let insert = |payload: &str, text: &str| payload.replacen(r#""metadata":{"#, text, 1);
    let edited = match input.malformation {
        Malformation::None => payload.clone(),
        Malformation::LabelValueNumber => insert(&payload, r#""metadata":{"labels":{"n":1},"#),
        Malformation::DuplicateOwnerLabel if tools => insert(
            &payload,
            r#""metadata":{"labels":{"a/name":"a","a/name":"a"},"#,
        ),
        Malformation::DuplicateOwnerLabel => insert(
            &payload,
            r#""metadata":{"labels":{"owner/name":"a","owner/name":"a"},"#,
        ),
        Malformation::LabelsArray => insert(&payload, r#""metadata":{"labels":[],"#),
        Malformation::MetadataString => insert(&payload, r#""metadata":"o","x":{"#),
        Malformation::UnclosedSpec => insert(&payload, r#""spec":[{"#),
        Malformation::Truncate(n) => payload[..n as usize % payload.len()].to_string(),
    };
    // A DELETE or CONNECT is accepted without reading the objects, which come after the
    // operation here (as policy-server writes them) and are only skipped by their structure,
    // so what an edit breaks inside them (a label's type, a duplicate key, `labels` an array
    // or twice, `metadata` a string) is not seen; broken brackets and truncation are refused
    // whatever the operation.
    let ignored = matches!(
        input.malformation,
        Malformation::LabelValueNumber
            | Malformation::DuplicateOwnerLabel
            | Malformation::LabelsArray
            | Malformation::MetadataString
    ) && matches!(input.operation, Operation::Delete | Operation::Connect);
    let malformed = edited != payload && !ignored;
    let answer = admission::validate(edited.as_bytes());
    if !answer.accepted {
        assert!(answer.message.as_deref().is_some_and(|m| !m.is_empty()));
    }
    // With bindings a DELETE's objects are read after all (what an edit broke in them may be
    // seen or not, depending on which object it hit): any clean answer will do.
    if ignored && writer.is_some() && matches!(input.operation, Operation::Delete) {
        let code = answer.code;
        assert!(
            answer.accepted
                || code == Some(admission::BAD_REQUEST)
                || code == Some(admission::FORBIDDEN)
        );
        return;
    }
    if malformed {
        assert!(!answer.accepted, "accepted malformed input: {edited}");
        assert_eq!(answer.code, Some(admission::BAD_REQUEST), "{edited}");
        return;
    }
    if ignored {
        assert!(answer.accepted, "{edited} -> {:?}", answer.message);
        return;
    }
    let meta = |o: &Object| meta(o, tools);
    let (old, new) = (input.old.as_ref().map(meta), input.new.as_ref().map(meta));
    let rules = match tools {
        true => tools_model::accepts,
        false => model::accepts,
    };
    // With bindings, a DELETE must carry its stored object.
    let delete_without_old =
        writer.is_some() && matches!(input.operation, Operation::Delete) && input.old.is_none();
    let expected = !delete_without_old
        && rules(
            operation,
            old.as_ref(),
            new.as_ref(),
            input.adoption,
            input.orphaning,
        )
        && writer.is_none_or(|(w, _)| {
            let (old, new) = match input.operation {
                Operation::Create => (None, new.as_ref()),
                Operation::Delete => (old.as_ref(), None),
                _ => (old.as_ref(), new.as_ref()),
            };
            identity_model::permits(operation, old, new, w)
        });
    assert_eq!(
        answer.accepted, expected,
        "{payload} -> {:?}",
        answer.message
    );
    if !answer.accepted {
        // A CREATE or UPDATE without the objects it must carry cannot be read (400); any other
        // refusal of a well-formed request is a rule's (403).
        let missing = match input.operation {
            Operation::Create => input.new.is_none(),
            Operation::Update => input.new.is_none() || input.old.is_none(),
            Operation::Delete => delete_without_old,
            Operation::Connect => false,
        };
        let code = if missing {
            admission::BAD_REQUEST
        } else {
            admission::FORBIDDEN
        };
        assert_eq!(answer.code, Some(code), "{payload}");
    }
});
