//! The identity rules (bindings) and stamping, through the policy's entry points: each rule
//! by example with its message, the whole decision against the reference model in
//! `support/identity_model.rs`, and the stamped object compared with the one sent.

use std::collections::BTreeMap;

use proptest::prelude::*;
use rstest::rstest;
use serde_json::{Value, json};
use single_owner_policy::admission::{self, Answer};

#[path = "support/identity_model.rs"]
mod identity_model;
#[path = "support/model.rs"]
mod model;

use model::{HANDOVER, Meta, OWNER_ANNOTATION, OWNER_LABELS, REVISION};

const FLUX_NAME: &str = "kustomize.toolkit.fluxcd.io/name";
const FLUX_NS: &str = "kustomize.toolkit.fluxcd.io/namespace";

/// Flux tenants: each tenant's service account writes the objects of its own namespace's
/// Kustomizations; the platform group writes the flux-system ones.
fn flux_settings() -> Value {
    json!({
        "ownerLabels": [FLUX_NAME, FLUX_NS],
        "ownerKindLabel": "",
        "revisionAnnotation": "",
        "bindings": [
            {"writers": {"serviceAccounts": ["*/*"]}, "owner": {FLUX_NS: "{serviceAccount.namespace}"}},
            {"writers": {"groups": ["platform"]}, "owner": {FLUX_NS: "flux-system"}}
        ]
    })
}

fn flux_owner(name: &str, ns: &str) -> Value {
    json!({FLUX_NAME: name, FLUX_NS: ns})
}

fn object(labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "cm", "namespace": "apps", "labels": labels}, "data": {"k": "v"}})
}

fn user(username: &str, groups: &[&str]) -> Value {
    json!({"username": username, "uid": "u", "groups": groups})
}

fn sa(ns: &str, name: &str) -> Value {
    user(
        &format!("system:serviceaccount:{ns}:{name}"),
        &[
            "system:serviceaccounts",
            &format!("system:serviceaccounts:{ns}"),
        ],
    )
}

fn judge(
    settings: &Value,
    operation: &str,
    old: Option<Value>,
    new: Option<Value>,
    who: Value,
) -> Answer {
    let payload = json!({"request": {"uid": "1", "operation": operation, "namespace": "apps",
        "name": "cm", "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
        "userInfo": who, "object": new, "oldObject": old}, "settings": settings});
    admission::judge(payload.to_string().as_bytes())
}

fn refused(answer: &Answer) -> Option<&str> {
    match answer {
        Answer::Reject {
            message,
            code: Some(admission::FORBIDDEN),
        } => Some(message),
        Answer::Reject { .. } => panic!("a rule's refusal is a 403: {answer:?}"),
        _ => None,
    }
}

#[rstest]
// CREATE: only a writer bound to the object's owner.
#[case::create_by_the_tenant("CREATE", None, Some(("apps", "team-a")), sa("team-a", "kustomize"), true)]
#[case::create_for_another_tenant("CREATE", None, Some(("apps", "team-b")), sa("team-a", "kustomize"), false)]
#[case::create_by_a_human("CREATE", None, Some(("apps", "team-a")), user("alice", &[]), false)]
#[case::create_unowned_by_anyone("CREATE", None, None, user("alice", &[]), true)]
#[case::create_by_the_platform_group("CREATE", None, Some(("infra", "flux-system")), user("ops", &["platform"]), true)]
// UPDATE: only a writer bound to the stored owner.
#[case::edit_by_the_tenant("UPDATE", Some(("apps", "team-a")), Some(("apps", "team-a")), sa("team-a", "kustomize"), true)]
#[case::edit_by_another_tenant("UPDATE", Some(("apps", "team-a")), Some(("apps", "team-a")), sa("team-b", "kustomize"), false)]
#[case::kubectl_edit_by_a_human("UPDATE", Some(("apps", "team-a")), Some(("apps", "team-a")), user("alice", &["system:authenticated"]), false)]
#[case::edit_unowned("UPDATE", None, None, user("alice", &[]), true)]
// Adoption by the new owner's writer; orphaning by the old owner's.
#[case::adoption_by_the_tenant("UPDATE", None, Some(("apps", "team-a")), sa("team-a", "kustomize"), true)]
#[case::adoption_for_another_tenant("UPDATE", None, Some(("apps", "team-a")), sa("team-b", "kustomize"), false)]
#[case::orphaning_by_the_tenant("UPDATE", Some(("apps", "team-a")), None, sa("team-a", "kustomize"), true)]
#[case::orphaning_by_another_tenant("UPDATE", Some(("apps", "team-a")), None, sa("team-b", "kustomize"), false)]
// DELETE: only a writer bound to the stored owner, or an exempt one.
#[case::delete_by_the_tenant("DELETE", Some(("apps", "team-a")), None, sa("team-a", "kustomize"), true)]
#[case::delete_by_another_tenant("DELETE", Some(("apps", "team-a")), None, sa("team-b", "kustomize"), false)]
#[case::delete_by_the_garbage_collector("DELETE", Some(("apps", "team-a")), None, sa("kube-system", "generic-garbage-collector"), true)]
#[case::delete_by_the_namespace_controller("DELETE", Some(("apps", "team-a")), None, sa("kube-system", "namespace-controller"), true)]
#[case::delete_unowned("DELETE", None, None, user("alice", &[]), true)]
// The garbage collector also removes finalizers and owner references.
#[case::gc_update("UPDATE", Some(("apps", "team-a")), Some(("apps", "team-a")), sa("kube-system", "generic-garbage-collector"), true)]
fn each_rule(
    #[case] operation: &str,
    #[case] old: Option<(&str, &str)>,
    #[case] new: Option<(&str, &str)>,
    #[case] who: Value,
    #[case] accepted: bool,
) {
    let labels =
        |o: Option<(&str, &str)>| o.map_or(json!({"app": "x"}), |(n, ns)| flux_owner(n, ns));
    let new_object = match operation {
        "DELETE" => None,
        _ => Some(object(labels(new))),
    };
    let old_object = match operation {
        "CREATE" => None,
        _ => Some(object(labels(old))),
    };
    let answer = judge(
        &flux_settings(),
        operation,
        old_object,
        new_object,
        who.clone(),
    );
    assert_eq!(refused(&answer).is_none(), accepted, "{answer:?}");
    if let Some(message) = refused(&answer) {
        // The object, its owner, the writer, and who may write it.
        assert!(
            message.starts_with("ConfigMap \"cm\" in namespace \"apps\": "),
            "{message}"
        );
        let owner = old.or(new).unwrap();
        assert!(
            message.contains(&format!("{FLUX_NAME}={}", owner.0)),
            "{message}"
        );
        let username = who["username"].as_str().unwrap();
        let writer = match username.strip_prefix("system:serviceaccount:") {
            Some(sa) => format!("service account {}", sa.replacen(':', "/", 1)),
            None => format!("user {username:?}"),
        };
        assert!(message.contains(&writer), "{message}");
        assert!(
            message.contains("bindings[0] (serviceAccounts */*, where"),
            "{message}"
        );
    }
}

#[test]
fn the_messages_read_as_a_sentence() {
    let answer = judge(
        &flux_settings(),
        "UPDATE",
        Some(object(flux_owner("apps", "team-a"))),
        Some(object(flux_owner("apps", "team-a"))),
        sa("team-b", "kustomize"),
    );
    assert_eq!(
        refused(&answer),
        Some(
            "ConfigMap \"cm\" in namespace \"apps\": service account team-b/kustomize may not \
             change it: only writers bound to owner [kustomize.toolkit.fluxcd.io/name=apps, \
             kustomize.toolkit.fluxcd.io/namespace=team-a] may write its objects: bindings[0] \
             (serviceAccounts */*, where kustomize.toolkit.fluxcd.io/namespace=\
             {serviceAccount.namespace}). Make the write as one of them, or bind service \
             account team-b/kustomize to that owner in the policy's bindings."
        )
    );
}

#[test]
fn the_label_rules_still_apply_on_top() {
    // A bound writer cannot change the owner to another one it is bound to either.
    let settings = flux_settings();
    let answer = judge(
        &settings,
        "UPDATE",
        Some(object(flux_owner("apps", "team-a"))),
        Some(object(flux_owner("other", "team-a"))),
        sa("team-a", "kustomize"),
    );
    assert!(
        refused(&answer).unwrap().contains("would change its owner"),
        "{answer:?}"
    );
}

#[test]
fn a_handover_is_taken_only_by_the_successors_writer() {
    let mut settings = flux_settings();
    settings["handoverAnnotation"] = json!("example.com/handover-to");
    let mut stored = object(flux_owner("apps", "team-a"));
    stored["metadata"]["annotations"] = json!({"example.com/handover-to":
        format!("{FLUX_NAME}=apps,{FLUX_NS}=team-b")});
    let taken = object(flux_owner("apps", "team-b"));
    let by = |who| {
        judge(
            &settings,
            "UPDATE",
            Some(stored.clone()),
            Some(taken.clone()),
            who,
        )
    };
    assert!(
        matches!(by(sa("team-b", "kustomize")), Answer::Accept { ref warnings } if warnings[0].contains("handed over"))
    );
    let refusal = by(sa("team-a", "kustomize"));
    assert!(
        refused(&refusal).unwrap().contains("may not take it over"),
        "{refusal:?}"
    );
}

#[test]
fn subresources_and_uncovered_owners_are_not_writer_checked() {
    let settings = flux_settings();
    let status = json!({"request": {"operation": "UPDATE", "namespace": "apps", "name": "cm",
        "subResource": "status", "kind": {"kind": "ConfigMap"}, "userInfo": user("kcm", &[]),
        "object": object(flux_owner("apps", "team-a")), "oldObject": object(flux_owner("apps", "team-a"))},
        "settings": settings});
    assert_eq!(
        admission::judge(status.to_string().as_bytes()),
        Answer::Accept { warnings: vec![] }
    );
    // Settings whose only binding names another owner value: this owner is not covered.
    let narrow = json!({"ownerLabels": [FLUX_NAME, FLUX_NS], "ownerKindLabel": "", "revisionAnnotation": "",
        "bindings": [{"writers": {"users": ["x"]}, "owner": {FLUX_NS: "flux-system"}}]});
    let answer = judge(
        &narrow,
        "UPDATE",
        Some(object(flux_owner("apps", "team-a"))),
        Some(object(flux_owner("apps", "team-a"))),
        user("alice", &[]),
    );
    assert_eq!(answer, Answer::Accept { warnings: vec![] });
}

#[rstest]
#[case::no_user_info(Value::Null, false)]
#[case::groups_not_an_array(json!({"username": "alice", "groups": "platform"}), true)]
#[case::group_not_a_string(json!({"username": "alice", "groups": [7]}), true)]
#[case::username_number(json!({"username": 7}), true)]
fn unreadable_writers_fail_closed(#[case] who: Value, #[case] bad_request: bool) {
    let answer = judge(
        &flux_settings(),
        "UPDATE",
        Some(object(flux_owner("apps", "team-a"))),
        Some(object(flux_owner("apps", "team-a"))),
        who,
    );
    match answer {
        Answer::Reject { code, message } => {
            let expected = if bad_request {
                admission::BAD_REQUEST
            } else {
                admission::FORBIDDEN
            };
            assert_eq!(code, Some(expected), "{message}");
            if !bad_request {
                assert!(
                    message.contains("an anonymous writer may not change it"),
                    "{message}"
                );
            }
        }
        other => panic!("accepted: {other:?}"),
    }
}

#[test]
fn a_delete_needs_its_stored_object_when_bindings_judge_it() {
    let answer = judge(&flux_settings(), "DELETE", None, None, user("alice", &[]));
    assert!(
        matches!(answer, Answer::Reject { code: Some(admission::BAD_REQUEST), ref message }
        if message.contains("request.oldObject is missing")),
        "{answer:?}"
    );
    // Without bindings, a DELETE is not read past its operation.
    let plain = json!({"ownerLabels": [FLUX_NAME]});
    assert_eq!(
        judge(&plain, "DELETE", None, None, user("alice", &[])),
        Answer::Accept { warnings: vec![] }
    );
}

#[test]
fn fields_before_the_operation_count_for_a_delete() {
    // policy-server writes the name and namespace before the operation, userInfo and the
    // objects after; kubectl-made files may put anything anywhere.
    let settings = flux_settings();
    let old = object(flux_owner("apps", "team-a"));
    let payload = json!({"settings": settings}).to_string();
    for request in [
        format!(
            r#"{{"userInfo":{},"oldObject":{old},"operation":"DELETE","name":"cm","namespace":"apps","kind":{{"kind":"ConfigMap"}}}}"#,
            sa("team-b", "x")
        ),
        format!(
            r#"{{"name":"cm","namespace":"apps","kind":{{"kind":"ConfigMap"}},"operation":"DELETE","userInfo":{},"oldObject":{old}}}"#,
            sa("team-b", "x")
        ),
    ] {
        let payload = format!(r#"{{"request":{request},{}"#, &payload[1..]);
        let answer = admission::judge(payload.as_bytes());
        assert!(
            refused(&answer).is_some_and(|m| m.contains("may not delete it")),
            "{answer:?}"
        );
    }
    // A field twice, one before and one after the operation, is refused.
    let payload = format!(
        r#"{{"request":{{"userInfo":{{}},"operation":"DELETE","userInfo":{},"oldObject":{old}}},"settings":{settings}}}"#,
        sa("team-a", "x")
    );
    let answer = admission::judge(payload.as_bytes());
    assert!(
        matches!(answer, Answer::Reject { code: Some(admission::BAD_REQUEST), ref message }
        if message.contains("duplicate field `userInfo`")),
        "{answer:?}"
    );
}

#[rstest]
#[case::writers_empty(json!([{"owner": {FLUX_NS: "x"}}]), "bindings[0].writers is empty")]
#[case::owner_empty(json!([{"writers": {"users": ["a"]}}]), "bindings[0].owner is empty")]
#[case::not_an_owner_key(json!([{"writers": {"users": ["a"]}, "owner": {"app": "x"}}]), "bindings[0].owner \"app\" is not an owner key")]
#[case::unknown_key(json!([{"writers": {"users": ["a"]}, "owner": {FLUX_NS: "x"}, "ownr": {}}]), "unknown field `ownr`")]
#[case::unknown_writer_key(json!([{"writers": {"serviceAccount": ["a/b"]}, "owner": {FLUX_NS: "x"}}]), "unknown field `serviceAccount`")]
#[case::sa_without_slash(json!([{"writers": {"serviceAccounts": ["deployer"]}, "owner": {FLUX_NS: "x"}}]), "is not namespace/name")]
#[case::sa_bad_name(json!([{"writers": {"serviceAccounts": ["team-a/De ployer"]}, "owner": {FLUX_NS: "x"}}]), "the name \"De ployer\" is not a Kubernetes name")]
#[case::empty_user(json!([{"writers": {"users": [""]}, "owner": {FLUX_NS: "x"}}]), "bindings[0].writers.users[0] is empty")]
#[case::bad_placeholder(json!([{"writers": {"users": ["a"]}, "owner": {FLUX_NS: "{namespace}"}}]), "unknown placeholder")]
#[case::star_inside(json!([{"writers": {"users": ["a"]}, "owner": {FLUX_NS: "a*b"}}]), "'*' may only end")]
#[case::sa_part_for_users(json!([{"writers": {"users": ["a"]}, "owner": {FLUX_NS: "{serviceAccount.namespace}"}}]), "takes a part of a service account")]
fn malformed_bindings_are_refused(#[case] bindings: Value, #[case] expected: &str) {
    let settings =
        json!({"ownerLabels": [FLUX_NAME, FLUX_NS], "ownerKindLabel": "", "bindings": bindings});
    let answer = admission::validate_settings(settings.to_string().as_bytes());
    assert!(!answer.valid);
    let message = answer.message.unwrap();
    assert!(message.contains(expected), "{message}");
}

#[test]
fn an_owner_key_given_twice_in_a_binding_is_refused() {
    let settings = format!(
        r#"{{"ownerLabels":["{FLUX_NAME}","{FLUX_NS}"],"bindings":[{{"writers":{{"users":["a"]}},"owner":{{"{FLUX_NS}":"x","{FLUX_NS}":"y"}}}}]}}"#
    );
    let answer = admission::validate_settings(settings.as_bytes());
    let message = answer.message.unwrap();
    assert!(
        message.contains(&format!(
            "the owner key {FLUX_NS:?} is given twice in a binding"
        )),
        "{message}"
    );
}

#[test]
fn stamping_without_bindings_is_refused() {
    let answer = admission::validate_settings(br#"{"stamp":true}"#);
    assert!(
        answer
            .message
            .unwrap()
            .contains("stamp is true but there are no bindings")
    );
    let answer =
        admission::validate_settings(br#"{"exemptWriters":{"serviceAccounts":["kube-system"]}}"#);
    assert!(
        answer
            .message
            .unwrap()
            .contains("exemptWriters.serviceAccounts[0]")
    );
}

// --- Stamping -------------------------------------------------------------------------------

fn stamp_settings() -> Value {
    let mut s = flux_settings();
    // A per-install service account: its name is the Kustomization's.
    s["bindings"] = json!([
        {"writers": {"serviceAccounts": ["*/*"]}, "owner": {FLUX_NAME: "{serviceAccount.name}", FLUX_NS: "{serviceAccount.namespace}"}}
    ]);
    s["stamp"] = json!(true);
    s
}

/// The stamped object, when the policy stamps one.
fn stamped(
    settings: &Value,
    operation: &str,
    old: Option<&str>,
    new: &str,
    who: Value,
) -> Option<String> {
    let old = old.map_or("null".to_string(), str::to_string);
    let payload = format!(
        r#"{{"request":{{"operation":"{operation}","namespace":"apps","name":"cm","kind":{{"kind":"ConfigMap"}},"userInfo":{who},"object":{new},"oldObject":{old}}},"settings":{settings}}}"#
    );
    let answer = admission::answer(payload.as_bytes());
    let out: Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(out["accepted"], true, "{out}");
    out["mutated_object"].as_object()?;
    // The object as the module wrote it, not as serde_json would write it again.
    let object = answer
        .strip_prefix(
            br#"{"accepted":true,"message":null,"code":null,"mutated_object":"#.as_slice(),
        )
        .and_then(|rest| {
            rest.strip_suffix(br#","audit_annotations":null,"warnings":null}"#.as_slice())
        })
        .expect("a stamped answer is the object between the answer's other fields");
    Some(String::from_utf8(object.to_vec()).unwrap())
}

/// The bytes `stamped` differs from `sent` by: one place where the stamp went in (and, for a
/// `null` map or metadata, what it replaced), as (removed, added).
fn splice<'a>(sent: &'a str, stamped: &'a str) -> (&'a str, &'a str) {
    let (a, b) = (sent.as_bytes(), stamped.as_bytes());
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let room = a.len().min(b.len()) - prefix;
    let suffix = (a.iter().rev().zip(b.iter().rev()))
        .take(room)
        .take_while(|(x, y)| x == y)
        .count();
    (
        &sent[prefix..a.len() - suffix],
        &stamped[prefix..b.len() - suffix],
    )
}

fn without_metadata_maps(mut v: Value) -> Value {
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("labels");
        m.remove("annotations");
        if m.is_empty() {
            v.as_object_mut().unwrap().remove("metadata");
        }
    } else if let Some(o) = v.as_object_mut() {
        o.remove("metadata");
    }
    v
}

#[rstest]
#[case::labels_present(
    r#"{"kind":"ConfigMap","metadata":{"name":"cm","labels":{"app":"x"}},"data":{"k":"v"}}"#
)]
#[case::labels_empty(
    r#"{"kind":"ConfigMap","metadata":{"name":"cm","labels":{ }},"data":{"k":"v"}}"#
)]
#[case::labels_null(r#"{"kind":"ConfigMap","metadata":{"name":"cm","labels":null}}"#)]
#[case::no_labels(r#"{"kind":"ConfigMap","metadata":{"name":"cm","annotations":{"a":"b"}}}"#)]
#[case::empty_metadata(r#"{"kind":"ConfigMap","metadata":{}}"#)]
#[case::metadata_null(r#"{"kind":"ConfigMap","metadata":null}"#)]
#[case::no_metadata(r#"{"kind":"ConfigMap","data":{"big":"\u00e9\"x"}}"#)]
#[case::empty_object(r#"{}"#)]
#[case::pretty(
    "{\n  \"kind\": \"ConfigMap\",\n  \"metadata\": {\n    \"labels\": {\n      \"app\": \"x\"\n    }\n  }\n}"
)]
fn stamping_adds_the_owner_keys_and_nothing_else(#[case] new: &str) {
    let out = stamped(
        &stamp_settings(),
        "CREATE",
        None,
        new,
        json!({"username": "system:serviceaccount:team-a:web"}),
    )
    .expect("stamped");
    let (sent, back): (Value, Value) = (
        serde_json::from_str(new).unwrap(),
        serde_json::from_str(&out).unwrap(),
    );
    assert_eq!(back["metadata"]["labels"][FLUX_NAME], "web", "{out}");
    assert_eq!(back["metadata"]["labels"][FLUX_NS], "team-a", "{out}");
    // The labels the object had are kept, and the rest of the object is as sent.
    let sent_labels = sent["metadata"]["labels"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut back_labels = back["metadata"]["labels"].as_object().cloned().unwrap();
    back_labels.remove(FLUX_NAME);
    back_labels.remove(FLUX_NS);
    assert_eq!(sent_labels, back_labels);
    assert_eq!(
        sent["metadata"]["annotations"],
        back["metadata"]["annotations"]
    );
    assert_eq!(without_metadata_maps(sent), without_metadata_maps(back));
    // Byte for byte: the stamped text is the sent text with the stamp inserted in one place
    // (replacing a `null`), and the insert holds the two labels and their JSON only.
    let (removed, added) = splice(new, &out);
    assert!(
        removed.is_empty() || removed == "null",
        "{removed:?} was removed: {out}"
    );
    let mut rest = added.to_string();
    // The namespace key first: the name key is a prefix of it.
    for word in [FLUX_NS, FLUX_NAME, "web", "team-a", "labels", "metadata"] {
        rest = rest.replace(word, "");
    }
    assert!(
        rest.bytes().all(|b| b"\"{}:,".contains(&b)),
        "{added:?} inserted: {out}"
    );
}

#[test]
fn stamping_keeps_present_keys_and_stamps_annotations_too() {
    // Helm-like owner keys in annotations, half present.
    let settings = json!({"ownerLabels": [], "ownerAnnotations": ["meta.helm.sh/release-name", "meta.helm.sh/release-namespace"],
        "ownerKindLabel": "", "revisionAnnotation": "", "stamp": true,
        "bindings": [{"writers": {"serviceAccounts": ["*/*"]}, "owner": {"meta.helm.sh/release-name": "{serviceAccount.name}", "meta.helm.sh/release-namespace": "{serviceAccount.namespace}"}}]});
    let valid = admission::validate_settings(settings.to_string().as_bytes());
    assert!(valid.valid, "{:?}", valid.message);
    let new = r#"{"metadata":{"name":"job","annotations":{"meta.helm.sh/release-name":"mine"}}}"#;
    let out = stamped(
        &settings,
        "CREATE",
        None,
        new,
        json!({"username": "system:serviceaccount:shop:helm-shop"}),
    )
    .unwrap();
    let back: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        back["metadata"]["annotations"]["meta.helm.sh/release-name"],
        "mine"
    );
    assert_eq!(
        back["metadata"]["annotations"]["meta.helm.sh/release-namespace"],
        "shop"
    );
    assert!(back["metadata"].get("labels").is_none());
}

#[rstest]
#[case::exempt(
    "system:serviceaccount:kube-system:generic-garbage-collector",
    "CREATE",
    None,
    true
)]
#[case::unbound_user("alice", "CREATE", None, true)]
#[case::owned_update(
    "system:serviceaccount:team-a:web",
    "UPDATE",
    Some(r#"{"metadata":{"labels":{"kustomize.toolkit.fluxcd.io/name":"x"}}}"#),
    true
)]
#[case::unowned_update(
    "system:serviceaccount:team-a:web",
    "UPDATE",
    Some(r#"{"metadata":{"labels":{"app":"x"}}}"#),
    false
)]
#[case::already_owned_create("system:serviceaccount:team-a:web", "CREATE", None, false)]
fn who_and_when_is_stamped(
    #[case] username: &str,
    #[case] operation: &str,
    #[case] old: Option<&str>,
    #[case] unchanged: bool,
) {
    let new = r#"{"metadata":{"name":"cm","labels":{"app":"x"}}}"#;
    let out = stamped(
        &stamp_settings(),
        operation,
        old,
        new,
        json!({"username": username}),
    );
    assert_eq!(out.is_none(), unchanged, "{out:?}");
    // An object that carries every owner key already is never changed.
    let full = r#"{"metadata":{"labels":{"kustomize.toolkit.fluxcd.io/name":"other","kustomize.toolkit.fluxcd.io/namespace":"x"}}}"#;
    assert_eq!(
        stamped(
            &stamp_settings(),
            "CREATE",
            None,
            full,
            json!({"username": username})
        ),
        None
    );
}

#[test]
fn a_binding_that_leaves_an_owner_key_out_does_not_stamp() {
    let mut settings = stamp_settings();
    settings["bindings"] = json!([{"writers": {"users": ["ci"]}, "owner": {FLUX_NS: "x"}}]);
    let new = r#"{"metadata":{"name":"cm"}}"#;
    assert_eq!(
        stamped(&settings, "CREATE", None, new, json!({"username": "ci"})),
        None
    );
}

#[test]
fn a_writer_bound_to_two_owners_is_not_stamped() {
    let mut settings = stamp_settings();
    settings["bindings"] = json!([
        {"writers": {"users": ["ci"]}, "owner": {FLUX_NAME: "a", FLUX_NS: "x"}},
        {"writers": {"groups": ["deployers"]}, "owner": {FLUX_NAME: "b", FLUX_NS: "x"}},
        {"writers": {"users": ["wild"]}, "owner": {FLUX_NAME: "b*", FLUX_NS: "x"}}
    ]);
    let new = r#"{"metadata":{"name":"cm"}}"#;
    assert!(stamped(&settings, "CREATE", None, new, json!({"username": "ci"})).is_some());
    assert_eq!(
        stamped(
            &settings,
            "CREATE",
            None,
            new,
            json!({"username": "ci", "groups": ["deployers"]})
        ),
        None
    );
    assert_eq!(
        stamped(&settings, "CREATE", None, new, json!({"username": "wild"})),
        None
    );
}

#[test]
fn the_stamped_answer_is_what_the_sdk_writes() {
    let payload = json!({"request": {"operation": "CREATE", "namespace": "apps", "kind": {"kind": "ConfigMap"},
        "userInfo": {"username": "system:serviceaccount:team-a:web"},
        "object": {"metadata": {"name": "cm"}, "data": {"a": "b"}}}, "settings": stamp_settings()});
    let bytes = payload.to_string();
    let ours: Value = serde_json::from_slice(&admission::answer(bytes.as_bytes())).unwrap();
    let sdk = serde_json::to_value(admission::validate(bytes.as_bytes())).unwrap();
    assert_eq!(ours, sdk);
    assert!(sdk["mutated_object"].is_object());
}

// --- The whole decision against the reference model ----------------------------------------

fn label_map() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map(
        prop::sample::select(vec![OWNER_LABELS[0], OWNER_LABELS[1], "app"]).prop_map(String::from),
        prop::sample::select(vec!["", "a", "b", "shared", "team-a", "team-b"])
            .prop_map(String::from),
        0..3,
    )
}

fn annotation_map() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map(
        prop::sample::select(vec![OWNER_ANNOTATION, REVISION, HANDOVER]).prop_map(String::from),
        prop::sample::select(vec![
            "b",
            "bx",
            "a",
            "1",
            "2",
            "owner/name=team-a",
            "owner/name=team-b",
        ])
        .prop_map(String::from),
        0..3,
    )
}

fn meta() -> impl Strategy<Value = Meta> {
    (label_map(), annotation_map())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn identity_rules_match_the_model(
        operation in prop::sample::select(vec!["CREATE", "UPDATE", "DELETE"]),
        old in meta(),
        new in meta(),
        writer in 0..identity_model::WRITERS.len(),
        adoption: bool,
        orphaning: bool,
    ) {
        let (username, groups) = identity_model::WRITERS[writer];
        let obj = |m: &Meta| json!({"metadata": {"name": "o", "labels": m.0, "annotations": m.1}});
        let settings: Value = serde_json::from_str(&identity_model::settings(adoption, orphaning)).unwrap();
        let (old_object, new_object) = match operation {
            "CREATE" => (Value::Null, obj(&new)),
            "DELETE" => (obj(&old), Value::Null),
            _ => (obj(&old), obj(&new)),
        };
        let payload = json!({"request": {"operation": operation, "namespace": "ns", "name": "o",
            "kind": {"kind": "ConfigMap"}, "userInfo": {"username": username, "groups": groups},
            "object": new_object, "oldObject": old_object}, "settings": settings});
        let answer = admission::validate(payload.to_string().as_bytes());
        let (old_meta, new_meta) = match operation {
            "CREATE" => (None, Some(&new)),
            "DELETE" => (Some(&old), None),
            _ => (Some(&old), Some(&new)),
        };
        let expected = model::accepts(operation, old_meta, new_meta, adoption, orphaning)
            && identity_model::permits(operation, old_meta, new_meta, writer);
        prop_assert_eq!(answer.accepted, expected, "{:?}", answer.message);
        if !answer.accepted {
            prop_assert_eq!(answer.code, Some(admission::FORBIDDEN));
        }
    }
}
