//! The policy's behaviour, one table row per rule, through `admission::validate` with real
//! payload JSON (the same bytes the waPC `validate` entry point receives).

use rstest::rstest;
use serde_json::{Value, json};
use single_owner_policy::admission;

const KIND: &str = "olm.operatorframework.io/owner-kind";
const NAME: &str = "olm.operatorframework.io/owner-name";

fn object(name: &str, namespace: Option<&str>, labels: Value, annotations: Value) -> Value {
    let mut meta = json!({"name": name, "labels": labels, "annotations": annotations});
    if let Some(ns) = namespace {
        meta["namespace"] = json!(ns);
    }
    json!({"apiVersion": "v1", "metadata": meta, "spec": {"big": [1, 2, {"x": "y"}]}})
}

/// An admission payload for `kind` named `name` (cluster-scoped when `namespace` is None).
fn payload(
    operation: &str,
    kind: &str,
    namespace: Option<&str>,
    old_labels: Option<Value>,
    new_labels: Option<Value>,
    settings: Value,
) -> Vec<u8> {
    let name = "widgets.example.com";
    let obj = |labels: Option<Value>| labels.map(|l| object(name, namespace, l, json!(null)));
    let group = if kind == "CustomResourceDefinition" {
        "apiextensions.k8s.io"
    } else {
        ""
    };
    json!({
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "kind": {"group": group, "version": "v1", "kind": kind},
            "resource": {"group": group, "version": "v1", "resource": "things"},
            "name": name,
            "namespace": namespace.unwrap_or(""),
            "operation": operation,
            "userInfo": {"username": "system:serviceaccount:olmv1-system:operator-controller"},
            "object": obj(new_labels),
            "oldObject": obj(old_labels),
        },
        "settings": settings,
    })
    .to_string()
    .into_bytes()
}

fn olm(kind: &str, name: &str) -> Option<Value> {
    Some(json!({KIND: kind, NAME: name, "app": "x"}))
}

/// Expected: Ok(warning fragments) for an acceptance, Err(message fragments) for a rejection.
type Expect = Result<&'static [&'static str], &'static [&'static str]>;

fn ok(warnings: &'static [&'static str]) -> Expect {
    Ok(warnings)
}

fn err(fragments: &'static [&'static str]) -> Expect {
    Err(fragments)
}

fn check(payload: &[u8], expected: Expect) {
    let r = admission::validate(payload);
    match expected {
        Ok(warnings) => {
            assert!(r.accepted, "expected acceptance, got {:?}", r.message);
            let got = r.warnings.unwrap_or_default();
            if warnings.is_empty() {
                assert!(got.is_empty(), "unexpected warnings {got:?}");
            } else {
                assert_eq!(got.len(), 1, "{got:?}");
                for w in warnings {
                    assert!(got[0].contains(w), "warning {:?} lacks {w:?}", got[0]);
                }
            }
        }
        Err(fragments) => {
            assert!(!r.accepted, "expected rejection");
            assert!(r.warnings.is_none());
            assert_eq!(r.code, Some(admission::FORBIDDEN), "a rule refusal is 403");
            let msg = r.message.expect("a rejection carries a message");
            for f in fragments {
                assert!(msg.contains(f), "message {msg:?} lacks {f:?}");
            }
        }
    }
}

#[rstest]
// The same-owner invariant on UPDATE.
#[case::same_owner("UPDATE", olm("ClusterExtension", "a"), olm("ClusterExtension", "a"), json!({}), ok(&[]))]
#[case::owner_changed("UPDATE", olm("ClusterExtension", "ext-a"), olm("ClusterExtension", "ext-b"), json!({}),
    err(&["CustomResourceDefinition \"widgets.example.com\"", "owned by [olm.operatorframework.io/owner-name=ext-a]",
          "change its owner to [olm.operatorframework.io/owner-name=ext-b]", "must first release it", "then the new owner can adopt it"]))]
#[case::owner_changed_in_part("UPDATE", Some(json!({NAME: "a"})), olm("ClusterExtension", "a"), json!({}),
    err(&["[olm.operatorframework.io/owner-kind (unset)]", "[olm.operatorframework.io/owner-kind=ClusterExtension]"]))]
#[case::empty_value_is_an_owner("UPDATE", Some(json!({NAME: ""})), Some(json!({NAME: "a"})), json!({}),
    err(&["owner-name=]", "owner-name=a]"]))]
#[case::adoption_warns("UPDATE", Some(json!({"app": "x"})), olm("ClusterExtension", "ext-b"), json!({}),
    ok(&["CustomResourceDefinition \"widgets.example.com\" adopted by owner", "owner-kind=ClusterExtension", "owner-name=ext-b"]))]
#[case::adoption_refused("UPDATE", Some(json!({})), olm("ClusterExtension", "ext-b"), json!({"allowAdoption": false}),
    err(&["has no owner", "owner-name=ext-b", "allowAdoption: false"]))]
#[case::orphaning_warns("UPDATE", olm("ClusterExtension", "ext-a"), Some(json!({})), json!({}),
    ok(&["CustomResourceDefinition \"widgets.example.com\" orphaned", "owner-name=ext-a"]))]
#[case::orphaning_refused("UPDATE", olm("ClusterExtension", "ext-a"), Some(json!({"app": "y"})), json!({"allowOrphaning": false}),
    err(&["owned by [", "owner-name=ext-a", "allowOrphaning: false"]))]
#[case::unowned_stays_unowned("UPDATE", Some(json!({"app": "x"})), Some(json!({"app": "y"})), json!({"allowAdoption": false, "allowOrphaning": false}), ok(&[]))]
#[case::other_labels_do_not_matter("UPDATE", olm("ClusterExtension", "a"), Some(json!({KIND: "ClusterExtension", NAME: "a", "app": "changed", "new": "1"})), json!({}), ok(&[]))]
#[case::create_owned("CREATE", None, olm("ClusterExtension", "a"), json!({"allowAdoption": false}), ok(&[]))]
// The cluster-scope rule, CREATE and UPDATE.
#[case::cluster_scoped_namespaced_owner("CREATE", None, olm("Extension", "a"), json!({}),
    err(&["CustomResourceDefinition \"widgets.example.com\" is cluster-scoped", "owner-kind=Extension", "allowed: ClusterExtension"]))]
#[case::cluster_scoped_namespaced_owner_adopted("UPDATE", Some(json!({"app": "x"})), olm("Extension", "a"), json!({}),
    err(&["is cluster-scoped", "owner-kind=Extension"]))]
// An UPDATE that changes no owner marker stands as its object was judged: one written before
// the policy was installed, against a rule, may still be written (ratcheting, KEP-4008).
#[case::cluster_scoped_namespaced_owner_kept("UPDATE", olm("Extension", "a"), olm("Extension", "a"), json!({}), ok(&[]))]
#[case::cluster_scoped_without_kind("CREATE", None, Some(json!({NAME: "a"})), json!({}), ok(&[]))]
#[case::cluster_scoped_custom_kinds("CREATE", None, olm("Extension", "a"), json!({"clusterScopedOwnerKinds": ["ClusterExtension", "Extension"]}), ok(&[]))]
#[case::scope_rules_off("CREATE", None, olm("Extension", "a"), json!({"ownerKindLabel": ""}), ok(&[]))]
// DELETE and CONNECT.
#[case::delete("DELETE", olm("ClusterExtension", "a"), None, json!({"allowOrphaning": false}), ok(&[]))]
#[case::connect("CONNECT", None, None, json!({}), ok(&[]))]
fn cluster_scoped_crd(
    #[case] op: &str,
    #[case] old: Option<Value>,
    #[case] new: Option<Value>,
    #[case] settings: Value,
    #[case] expected: Expect,
) {
    check(
        &payload(op, "CustomResourceDefinition", None, old, new, settings),
        expected,
    );
}

const NS: &str = "example.com/owner-namespace";

#[rstest]
#[case::namespaced_owner_of_namespaced_object(Some(json!({KIND: "Extension", NAME: "a"})), json!({}), ok(&[]))]
#[case::confinement_same_namespace(Some(json!({KIND: "Extension", NAME: "a", NS: "team-a"})), json!({"ownerNamespaceLabel": NS}), ok(&[]))]
#[case::confinement_other_namespace(Some(json!({KIND: "Extension", NAME: "a", NS: "team-b"})), json!({"ownerNamespaceLabel": NS}),
    err(&["ConfigMap \"widgets.example.com\" in namespace \"team-a\"", "namespace \"team-b\"", "owner-kind=Extension", "example.com/owner-namespace=team-b", "only objects in its own namespace"]))]
#[case::confinement_kind_absent(Some(json!({NAME: "a", NS: "team-b"})), json!({"ownerNamespaceLabel": NS}), err(&["owner-kind=<unset>"]))]
#[case::confinement_cluster_owner(Some(json!({KIND: "ClusterExtension", NAME: "a", NS: "team-b"})), json!({"ownerNamespaceLabel": NS}), ok(&[]))]
#[case::confinement_no_label(Some(json!({KIND: "Extension", NAME: "a"})), json!({"ownerNamespaceLabel": NS}), ok(&[]))]
#[case::confinement_off(Some(json!({KIND: "Extension", NAME: "a", NS: "team-b"})), json!({}), ok(&[]))]
fn namespaced_configmap(
    #[case] new: Option<Value>,
    #[case] settings: Value,
    #[case] expected: Expect,
) {
    check(
        &payload(
            "CREATE",
            "ConfigMap",
            Some("team-a"),
            None,
            new.clone(),
            settings.clone(),
        ),
        expected,
    );
    // An UPDATE that changes a marker (here the namespace label, which the confinement
    // settings read) judges the new object the same way...
    let moved = new.clone().map(|mut labels| {
        labels[NS] = json!("moved");
        labels
    });
    check(
        &payload(
            "UPDATE",
            "ConfigMap",
            Some("team-a"),
            moved,
            new.clone(),
            settings.clone(),
        ),
        expected,
    );
    // ...and one that changes none stands as it was judged.
    check(
        &payload(
            "UPDATE",
            "ConfigMap",
            Some("team-a"),
            new.clone(),
            new,
            settings,
        ),
        ok(&[]),
    );
}

#[test]
fn owner_change_in_namespace_names_the_namespace() {
    let p = payload(
        "UPDATE",
        "ConfigMap",
        Some("team-a"),
        olm("Extension", "a"),
        olm("Extension", "b"),
        json!({}),
    );
    check(
        &p,
        err(&["ConfigMap \"widgets.example.com\" in namespace \"team-a\" is owned by"]),
    );
}

#[test]
fn helm_annotations_are_an_owner() {
    let settings = json!({"ownerLabels": [], "ownerAnnotations": ["meta.helm.sh/release-name", "meta.helm.sh/release-namespace"], "ownerKindLabel": ""});
    let obj = |release: &str| {
        object(
            "admin",
            None,
            json!({"app.kubernetes.io/managed-by": "Helm"}),
            json!({"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": "infra"}),
        )
    };
    let p = json!({"request": {"operation": "UPDATE", "kind": {"group": "rbac.authorization.k8s.io", "kind": "ClusterRole"},
        "name": "admin", "object": obj("second"), "oldObject": obj("first")}, "settings": settings});
    check(
        p.to_string().as_bytes(),
        err(&[
            "ClusterRole \"admin\" is owned by [meta.helm.sh/release-name=first]",
            "[meta.helm.sh/release-name=second]",
            "annotation meta.helm.sh/release-name, annotation meta.helm.sh/release-namespace",
        ]),
    );
}

#[test]
fn status_subresource_follows_the_same_rules() {
    let mut p: Value = serde_json::from_slice(&payload(
        "UPDATE",
        "CustomResourceDefinition",
        None,
        olm("ClusterExtension", "a"),
        olm("ClusterExtension", "b"),
        json!({}),
    ))
    .unwrap();
    p["request"]["subResource"] = json!("status");
    check(
        p.to_string().as_bytes(),
        err(&["\"widgets.example.com\" (subresource status) is owned by"]),
    );
}

#[test]
fn namespace_objects_are_cluster_scoped_even_with_a_request_namespace() {
    // The API server sets `namespace` to the Namespace's own name on UPDATE.
    let p = payload(
        "UPDATE",
        "Namespace",
        Some("team-a"),
        Some(json!({"app": "x"})),
        olm("Extension", "a"),
        json!({}),
    );
    check(
        &p,
        err(&["Namespace \"widgets.example.com\" is cluster-scoped"]),
    );
}

#[rstest]
#[case::null_metadata(
    r#"{"request":{"operation":"UPDATE","object":{"metadata":null},"oldObject":{}}}"#
)]
#[case::null_maps(r#"{"request":{"operation":"UPDATE","object":{"metadata":{"labels":null,"annotations":null}},"oldObject":{"metadata":{}}}}"#)]
fn absent_means_none(#[case] json: &str) {
    check(json.as_bytes(), ok(&[]));
}

/// No API server sends an UPDATE without both objects, or a CREATE without the new one: a
/// fail-closed policy must not judge such a request as an adoption or an orphaning.
#[rstest]
#[case::update_null_objects(
    r#"{"request":{"operation":"UPDATE","object":null,"oldObject":null},"settings":null}"#,
    "request.object is missing or null, but every UPDATE request carries it"
)]
#[case::update_absent_objects(
    r#"{"request":{"operation":"UPDATE"}}"#,
    "request.object is missing or null"
)]
#[case::update_without_old(
    r#"{"request":{"operation":"UPDATE","object":{"metadata":{"labels":{"olm.operatorframework.io/owner-name":"a"}}},"oldObject":null}}"#,
    "request.oldObject is missing or null, but every UPDATE request carries it"
)]
#[case::update_absent_old(
    r#"{"request":{"operation":"UPDATE","object":{"metadata":{}}}}"#,
    "request.oldObject is missing or null"
)]
#[case::update_without_new(
    r#"{"request":{"operation":"UPDATE","object":null,"oldObject":{"metadata":{"labels":{"olm.operatorframework.io/owner-name":"a"}}}}}"#,
    "request.object is missing or null"
)]
#[case::create_without_object(
    r#"{"request":{"operation":"CREATE","object":null}}"#,
    "request.object is missing or null, but every CREATE request carries it"
)]
fn missing_objects_are_unreadable(#[case] json: &str, #[case] expected: &str) {
    let r = admission::validate(json.as_bytes());
    assert!(!r.accepted);
    assert_eq!(r.code, Some(400));
    let msg = r.message.unwrap();
    assert!(msg.contains(expected), "{msg:?} lacks {expected:?}");
}

#[rstest]
#[case::not_json(&b"hello"[..], "the validation payload must be a JSON object, not invalid JSON")]
#[case::truncated(&br#"{"request":{"operation":"UPDATE","object":{"metadata":{"labels":{"a":"#[..], "unexpected end of input (truncated JSON)")]
#[case::trailing_garbage(&br#"{"request":{"operation":"CREATE"}} x"#[..], "trailing characters")]
#[case::no_request(&br#"{"settings":{}}"#[..], "has no admission request")]
#[case::null_request(&br#"{"request":null}"#[..], "has no admission request")]
#[case::payload_array(&b"[]"[..], "the validation payload must be a JSON object, not an array")]
#[case::request_array(&br#"{"request":["CREATE"]}"#[..], "request must be a JSON object, not an array")]
#[case::metadata_array(&br#"{"request":{"operation":"CREATE","object":{"metadata":[null,null,{"a":"b"}]}}}"#[..], "metadata must be a JSON object, not an array")]
#[case::settings_array(&br#"{"request":{"operation":"CREATE"},"settings":[]}"#[..], "expected a JSON object")]
#[case::labels_array(&br#"{"request":{"operation":"CREATE","object":{"metadata":{"labels":["a"]}}}}"#[..], "metadata.labels must be a map of strings to strings, not an array")]
#[case::label_number(&br#"{"request":{"operation":"CREATE","object":{"metadata":{"labels":{"olm.operatorframework.io/owner-name":1}}}}}"#[..], "metadata.labels \"olm.operatorframework.io/owner-name\" must be a string, not a number")]
#[case::label_null(&br#"{"request":{"operation":"CREATE","object":{"metadata":{"labels":{"olm.operatorframework.io/owner-kind":null}}}}}"#[..], "metadata.labels \"olm.operatorframework.io/owner-kind\" must be a string, not null")]
#[case::other_label_not_a_string(&br#"{"request":{"operation":"CREATE","object":{"metadata":{"labels":{"app":7}}}}}"#[..], "metadata.labels \"app\" must be a string, not a number")]
#[case::annotation_object(&br#"{"request":{"operation":"CREATE","object":{"metadata":{"annotations":{"olm.operatorframework.io/revision":{}}}}}}"#[..], "metadata.annotations \"olm.operatorframework.io/revision\" must be a string, not an object")]
#[case::metadata_string(&br#"{"request":{"operation":"CREATE","object":{"metadata":"x"}}}"#[..], "metadata must be a JSON object, not a string")]
#[case::object_number(&br#"{"request":{"operation":"CREATE","object":7}}"#[..], "request.object must be a JSON object, not a number")]
#[case::duplicate_label(&br#"{"request":{"operation":"UPDATE","object":{"metadata":{"labels":{"olm.operatorframework.io/owner-name":"a","olm.operatorframework.io/owner-name":"b"}}},"oldObject":{}}}"#[..],
    "metadata.labels has the key \"olm.operatorframework.io/owner-name\" more than once")]
#[case::duplicate_escaped_label(&br#"{"request":{"operation":"CREATE","object":{"metadata":{"labels":{"olm.operatorframework.io/owner-name":"a","olm.operatorframework.io\/owner-name":"b"}}}}}"#[..],
    "metadata.labels has the key \"olm.operatorframework.io/owner-name\" more than once")]
#[case::duplicate_annotation(&br#"{"request":{"operation":"CREATE","object":{"metadata":{"annotations":{"olm.operatorframework.io/revision":"1","olm.operatorframework.io/revision":"1"}}}}}"#[..], "metadata.annotations has the key \"olm.operatorframework.io/revision\" more than once")]
#[case::duplicate_labels_field(&br#"{"request":{"operation":"UPDATE","object":{"metadata":{"labels":{},"labels":{"a":"b"}}},"oldObject":{}}}"#[..], "duplicate field `labels`")]
#[case::duplicate_metadata(&br#"{"request":{"operation":"UPDATE","object":{"metadata":{},"metadata":{}}}}"#[..], "duplicate field `metadata`")]
#[case::invalid_utf8(&b"{\"request\":{\"operation\":\"CREATE\",\"object\":{\"metadata\":{\"labels\":{\"olm.operatorframework.io/owner-name\":\"\xc3\x28\"}}}}}"[..], "metadata.labels \"olm.operatorframework.io/owner-name\": the payload is not valid UTF-8 (in a string) at line 1 column")]
#[case::bad_escape(&br#"{"request":{"operation":"CREATE","object":{"metadata":{"labels":{"olm.operatorframework.io/owner-kind":"\q"}}}}}"#[..], "invalid escape")]
#[case::truncated_skipped_value(&br#"{"request":{"operation":"CREATE","object":{"spec":{"a":[1,2}"#[..], "truncated")]
#[case::mismatched_skipped_value(&br#"{"request":{"operation":"CREATE","object":{"spec":[1,2}}}}"#[..], "mismatched brackets")]
#[case::unbalanced_skipped_value(&br#"{"request":{"operation":"CREATE","object":{"spec":{"a":[1,2}}}}"#[..], "mismatched brackets")]
#[case::delete_truncated(&br#"{"request":{"operation":"DELETE","oldObject":{"metadata":{"#[..], "truncated")]
#[case::delete_mismatched(&br#"{"request":{"operation":"DELETE","oldObject":{"spec":[1}}},"settings":{}}"#[..], "mismatched brackets")]
#[case::connect_unbalanced(&br#"{"request":{"operation":"CONNECT","object":{"a":[]]},"settings":{}}"#[..], "mismatched brackets")]
#[case::delete_then_garbage(&br#"{"request":{"operation":"DELETE"}} x"#[..], "trailing characters")]
#[case::delete_invalid_settings(&br#"{"request":{"operation":"DELETE","oldObject":{}},"settings":{"ownerLabels":[]}}"#[..], "the policy settings are not valid: no owner keys")]
#[case::no_operation(&br#"{"request":{}}"#[..], "has no operation")]
#[case::unknown_operation(&br#"{"request":{"operation":"PATCH"}}"#[..], "unknown operation \"PATCH\"")]
#[case::operation_number(&br#"{"request":{"operation":1}}"#[..], "request.operation must be a string, not a number")]
#[case::bad_settings(&br#"{"request":{"operation":"CREATE"},"settings":{"ownerLabel":["x"]}}"#[..], "unknown field `ownerLabel`")]
#[case::invalid_settings(&br#"{"request":{"operation":"CREATE"},"settings":{"ownerLabels":[]}}"#[..], "the policy settings are not valid: no owner keys")]
fn malformed_input_is_rejected(#[case] payload: &[u8], #[case] expected: &str) {
    let r = admission::validate(payload);
    assert!(!r.accepted);
    let msg = r.message.unwrap();
    assert!(msg.contains(expected), "{msg:?} lacks {expected:?}");
    // Unreadable input is a bad request; settings that fail validation keep no code (they
    // never reach a request in policy-server, which refuses to load them).
    let code = if msg.contains("the policy settings are not valid") {
        None
    } else {
        Some(admission::BAD_REQUEST)
    };
    assert_eq!(r.code, code, "{msg}");
}

/// What a skipped value (everything but the request's identity and the objects' metadata
/// that the rules read) may hold without being refused: only its structure is checked.
/// policy-server serializes every payload with serde_json, so it never sends these.
#[rstest]
#[case::invalid_utf8_in_spec(&b"{\"request\":{\"operation\":\"CREATE\",\"object\":{\"data\":\"\xc3\x28\"}}}"[..])]
#[case::bad_escape_in_spec(&br#"{"request":{"operation":"CREATE","object":{"data":"\q"}}}"#[..])]
#[case::grammar_in_spec(&br#"{"request":{"operation":"CREATE","object":{"spec":{"a" 1,,:[tru,]}}}}"#[..])]
#[case::other_label_twice(&br#"{"request":{"operation":"CREATE","object":{"metadata":{"labels":{"app":"a","app":"b"}}}}}"#[..])]
// Of a DELETE or CONNECT, everything in the request after the operation.
#[case::delete_grammar_after_operation(&br#"{"request":{"operation":"DELETE","userInfo":{"a" 1},"dryRun":flase,,"oldObject":7},"settings":{}}"#[..])]
#[case::connect_fields_twice_after_operation(&br#"{"request":{"operation":"CONNECT","operation":"CREATE","object":{"metadata":{"labels":[1]}}}}"#[..])]
fn skipped_values_are_checked_for_structure_only(#[case] payload: &[u8]) {
    check(payload, ok(&[]));
}

#[test]
fn deep_unrelated_nesting_is_judged_by_labels() {
    let deep = format!(
        "{}{}",
        "{\"a\":".repeat(1000),
        "1".to_string() + &"}".repeat(1000)
    );
    let obj = |owner: &str| {
        format!(r#"{{"metadata":{{"labels":{{"{NAME}":"{owner}"}}}},"spec":{deep}}}"#)
    };
    let p = format!(
        r#"{{"request":{{"operation":"UPDATE","namespace":"ns","object":{},"oldObject":{}}}}}"#,
        obj("b"),
        obj("a")
    );
    check(p.as_bytes(), err(&["owner-name=a", "owner-name=b"]));
}

#[test]
fn settings_validation_answers_every_input() {
    assert!(admission::validate_settings(b"{}").valid);
    assert!(admission::validate_settings(b"null").valid);
    for bad in [&b"\xff"[..], b"", b"{", b"[]", br#"{"ownerLabel":[]}"#] {
        let r = admission::validate_settings(bad);
        assert!(!r.valid && r.message.is_some_and(|m| !m.is_empty()));
    }
}
