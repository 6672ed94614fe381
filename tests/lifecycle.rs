//! The owner lifecycle: revision fencing within one owner, and the one-write handover. One
//! table row per numbered rule of the design (R = revision fencing, H = handover), through
//! `admission::validate` with real payload JSON.

use rstest::rstest;
use serde_json::{Map, Value, json};
use single_owner_policy::admission;

const KIND: &str = "olm.operatorframework.io/owner-kind";
const NAME: &str = "olm.operatorframework.io/owner-name";
const REV: &str = "olm.operatorframework.io/revision";
const HANDOVER: &str = "example.com/handover-to";

/// One side of a request: the owner's name (None: unowned), the revision annotation and the
/// handover annotation (None: absent).
#[derive(Clone, Copy)]
struct Side {
    owner: Option<&'static str>,
    revision: Option<&'static str>,
    handover: Option<&'static str>,
}

const fn side(
    owner: Option<&'static str>,
    revision: Option<&'static str>,
    handover: Option<&'static str>,
) -> Side {
    Side {
        owner,
        revision,
        handover,
    }
}

/// Owned by ClusterExtension `name`, at revision `rev`.
const fn at(name: &'static str, rev: &'static str) -> Side {
    side(Some(name), Some(rev), None)
}

const fn owned(name: &'static str) -> Side {
    side(Some(name), None, None)
}

const UNOWNED: Side = side(None, None, None);

fn object(s: Side) -> Value {
    let mut labels = Map::new();
    labels.insert("app".into(), json!("widgets"));
    if let Some(owner) = s.owner {
        labels.insert(KIND.into(), json!("ClusterExtension"));
        labels.insert(NAME.into(), json!(owner));
    }
    let mut annotations = Map::new();
    annotations.insert(
        "deployment.kubernetes.io/revision".into(),
        json!("12"), // not ours: never read
    );
    if let Some(rev) = s.revision {
        annotations.insert(REV.into(), json!(rev));
    }
    if let Some(h) = s.handover {
        annotations.insert(HANDOVER.into(), json!(h));
    }
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "widget-controller", "namespace": "widgets", "labels": labels, "annotations": annotations},
        "spec": {"replicas": 1}})
}

fn payload(op: &str, old: Option<Side>, new: Side, settings: Value) -> Vec<u8> {
    json!({
        "request": {
            "uid": "lifecycle",
            "kind": {"group": "apps", "version": "v1", "kind": "Deployment"},
            "resource": {"group": "apps", "version": "v1", "resource": "deployments"},
            "name": "widget-controller",
            "namespace": "widgets",
            "operation": op,
            "object": object(new),
            "oldObject": old.map(object),
        },
        "settings": settings,
    })
    .to_string()
    .into_bytes()
}

/// Ok(warning fragments; empty: no warning) or Err(message fragments).
type Expect = Result<&'static [&'static str], &'static [&'static str]>;

fn ok(warning: &'static [&'static str]) -> Expect {
    Ok(warning)
}

fn err(message: &'static [&'static str]) -> Expect {
    Err(message)
}

fn check(payload: &[u8], expected: Expect) {
    let r = admission::validate(payload);
    match expected {
        Ok(fragments) => {
            assert!(r.accepted, "expected acceptance, got {:?}", r.message);
            let warnings = r.warnings.unwrap_or_default();
            if fragments.is_empty() {
                assert!(warnings.is_empty(), "unexpected warnings {warnings:?}");
            } else {
                assert_eq!(warnings.len(), 1, "{warnings:?}");
                for f in fragments {
                    assert!(warnings[0].contains(f), "{:?} lacks {f:?}", warnings[0]);
                }
            }
        }
        Err(fragments) => {
            assert!(!r.accepted, "expected rejection");
            assert!(r.warnings.is_none());
            assert_eq!(r.code, Some(admission::FORBIDDEN), "a rule refusal is 403");
            let message = r.message.unwrap_or_default();
            for f in fragments {
                assert!(message.contains(f), "{message:?} lacks {f:?}");
            }
        }
    }
}

fn fencing() -> Value {
    json!({})
}

fn with_handover() -> Value {
    json!({"handoverAnnotation": HANDOVER})
}

const EXT_B: &str = "olm.operatorframework.io/owner-kind=ClusterExtension,olm.operatorframework.io/owner-name=ext-b";
const EXT_C: &str = "olm.operatorframework.io/owner-kind=ClusterExtension,olm.operatorframework.io/owner-name=ext-c";

#[rstest]
// R1: where the new object carries the revision annotation, it must be a canonical decimal.
#[case::r1_zero("CREATE", None, at("ext-a", "0"), fencing(), ok(&[]))]
#[case::r1_seventeen("CREATE", None, at("ext-a", "17"), fencing(), ok(&[]))]
#[case::r1_u64_max("UPDATE", Some(at("ext-a", "1")), at("ext-a", "18446744073709551615"), fencing(), ok(&[]))]
#[case::r1_plus("CREATE", None, at("ext-a", "+1"), fencing(),
    err(&["Deployment \"widget-controller\" in namespace \"widgets\"", "olm.operatorframework.io/revision=\"+1\"",
          "not a revision", "non-negative decimal integer that fits in 64 bits"]))]
#[case::r1_leading_zero("CREATE", None, at("ext-a", "01"), fencing(), err(&["olm.operatorframework.io/revision=\"01\"", "leading zeros"]))]
#[case::r1_fraction("UPDATE", Some(at("ext-a", "1")), at("ext-a", "1.0"), fencing(), err(&["=\"1.0\"", "not a revision"]))]
#[case::r1_space("UPDATE", Some(at("ext-a", "3")), at("ext-a", " 3"), fencing(), err(&["=\" 3\"", "not a revision"]))]
#[case::r1_empty("UPDATE", Some(at("ext-a", "3")), at("ext-a", ""), fencing(), err(&["=\"\"", "not a revision"]))]
#[case::r1_overflow("CREATE", None, at("ext-a", "18446744073709551616"), fencing(), err(&["fits in 64 bits"]))]
#[case::r1_unowned_too("CREATE", None, side(None, Some("x"), None), fencing(), err(&["=\"x\"", "not a revision"]))]
#[case::r1_off("CREATE", None, at("ext-a", "+1"), json!({"revisionAnnotation": ""}), ok(&[]))]
#[case::r1_other_key("CREATE", None, at("ext-a", "+1"), json!({"revisionAnnotation": "example.com/rev"}), ok(&[]))]
// R2: within one owner, a stored revision cannot go down or disappear.
#[case::r2_lower("UPDATE", Some(at("ext-a", "3")), at("ext-a", "2"), fencing(),
    err(&["Deployment \"widget-controller\" in namespace \"widgets\" is owned by [olm.operatorframework.io/owner-kind=ClusterExtension, olm.operatorframework.io/owner-name=ext-a]",
          "at revision 3 (olm.operatorframework.io/revision)", "would write revision 2",
          "a stale writer (an older revision or replica of the same owner) cannot roll the object back",
          "To roll back deliberately, write the older content as a new revision above 3"]))]
#[case::r2_lower_numerically_not_lexically("UPDATE", Some(at("ext-a", "10")), at("ext-a", "9"), fencing(), err(&["at revision 10", "revision 9"]))]
#[case::r2_equal("UPDATE", Some(at("ext-a", "3")), at("ext-a", "3"), fencing(), ok(&[]))]
#[case::r2_higher("UPDATE", Some(at("ext-a", "3")), at("ext-a", "4"), fencing(), ok(&[]))]
#[case::r2_higher_by_digits("UPDATE", Some(at("ext-a", "9")), at("ext-a", "10"), fencing(), ok(&[]))]
#[case::r2_dropped("UPDATE", Some(at("ext-a", "3")), owned("ext-a"), fencing(),
    err(&["at revision 3", "drops the olm.operatorframework.io/revision annotation", "a writer that does not stamp revisions is a stale one",
          "remove the owner keys (label olm.operatorframework.io/owner-kind, label olm.operatorframework.io/owner-name) as well"]))]
#[case::r2_old_unstamped("UPDATE", Some(owned("ext-a")), at("ext-a", "1"), fencing(), ok(&[]))]
#[case::r2_old_invalid("UPDATE", Some(at("ext-a", "v7")), at("ext-a", "2"), fencing(), ok(&[]))]
#[case::r2_old_invalid_dropped("UPDATE", Some(at("ext-a", "v7")), owned("ext-a"), fencing(), ok(&[]))]
#[case::r2_old_invalid_new_invalid("UPDATE", Some(at("ext-a", "v7")), at("ext-a", "v8"), fencing(), err(&["=\"v8\"", "not a revision"]))]
#[case::r2_neither("UPDATE", Some(owned("ext-a")), owned("ext-a"), fencing(), ok(&[]))]
#[case::r2_off("UPDATE", Some(at("ext-a", "3")), at("ext-a", "2"), json!({"revisionAnnotation": ""}), ok(&[]))]
// R3: revisions count within one owner only.
#[case::r3_adoption("UPDATE", Some(side(None, Some("9"), None)), at("ext-b", "1"), fencing(), ok(&["adopted by owner", "owner-name=ext-b"]))]
#[case::r3_orphaning("UPDATE", Some(at("ext-a", "9")), side(None, Some("1"), None), fencing(), ok(&["orphaned", "owner-name=ext-a"]))]
#[case::r3_orphaning_drops("UPDATE", Some(at("ext-a", "9")), UNOWNED, fencing(), ok(&["orphaned"]))]
#[case::r3_unowned("UPDATE", Some(side(None, Some("9"), None)), side(None, Some("1"), None), fencing(), ok(&[]))]
#[case::r3_handover("UPDATE", Some(side(Some("ext-a"), Some("9"), Some(EXT_B))), at("ext-b", "1"), with_handover(), ok(&["handed over"]))]
#[case::r3_change_is_still_refused("UPDATE", Some(at("ext-a", "1")), at("ext-b", "9"), fencing(), err(&["would change its owner"]))]
fn revision_fencing(
    #[case] op: &str,
    #[case] old: Option<Side>,
    #[case] new: Side,
    #[case] settings: Value,
    #[case] expected: Expect,
) {
    check(&payload(op, old, new, settings), expected);
}

#[rstest]
// H1: a handover annotation on the new object must name a successor.
#[case::h1_valid_on_create("CREATE", None, side(Some("ext-a"), None, Some(EXT_B)), ok(&[]))]
#[case::h1_name_only("UPDATE", Some(owned("ext-a")), side(Some("ext-a"), None, Some("olm.operatorframework.io/owner-name=ext-b")), ok(&[]))]
#[case::h1_empty_value("UPDATE", Some(owned("ext-a")), side(Some("ext-a"), None, Some("olm.operatorframework.io/owner-name=")), ok(&[]))]
#[case::h1_spaces("UPDATE", Some(owned("ext-a")), side(Some("ext-a"), None, Some("olm.operatorframework.io/owner-kind=ClusterExtension, olm.operatorframework.io/owner-name=ext-b")),
    err(&["example.com/handover-to=", "does not name a successor", "whitespace",
          "Expected comma-separated key=value pairs of the owner keys (olm.operatorframework.io/owner-kind, olm.operatorframework.io/owner-name)",
          "e.g. olm.operatorframework.io/owner-kind=ClusterExtension,olm.operatorframework.io/owner-name=new-owner"]))]
#[case::h1_unknown_key("CREATE", None, side(Some("ext-a"), None, Some("app=ext-b")), err(&["\"app\" is not one of the owner keys"]))]
#[case::h1_twice("CREATE", None, side(Some("ext-a"), None, Some("olm.operatorframework.io/owner-name=a,olm.operatorframework.io/owner-name=b")), err(&["named twice"]))]
#[case::h1_no_pair("CREATE", None, side(Some("ext-a"), None, Some("ext-b")), err(&["\"ext-b\" is not a key=value pair"]))]
#[case::h1_empty("CREATE", None, side(Some("ext-a"), None, Some("")), err(&["it is empty"]))]
#[case::h1_unowned_too("CREATE", None, side(None, None, Some("nonsense")), err(&["does not name a successor"]))]
// H2: the owner changes to the successor the stored object names, with a warning.
#[case::h2_handover("UPDATE", Some(side(Some("ext-a"), None, Some(EXT_B))), owned("ext-b"),
    ok(&["Deployment \"widget-controller\" in namespace \"widgets\" handed over from owner",
         "[olm.operatorframework.io/owner-kind=ClusterExtension, olm.operatorframework.io/owner-name=ext-a]",
         "to owner [olm.operatorframework.io/owner-kind=ClusterExtension, olm.operatorframework.io/owner-name=ext-b]"]))]
#[case::h2_new_keeps_annotation("UPDATE", Some(side(Some("ext-a"), None, Some(EXT_B))), side(Some("ext-b"), None, Some(EXT_B)), ok(&["handed over"]))]
#[case::h2_naming_the_current_owner_has_no_effect("UPDATE", Some(side(Some("ext-b"), None, Some(EXT_B))), owned("ext-c"),
    err(&["would change its owner to", "owner-name=ext-c"]))]
#[case::h2_exactly("UPDATE", Some(side(Some("ext-a"), None, Some("olm.operatorframework.io/owner-name=ext-b"))), owned("ext-b"),
    err(&["handed it over to [olm.operatorframework.io/owner-name=ext-b]", "not to [olm.operatorframework.io/owner-kind=ClusterExtension, olm.operatorframework.io/owner-name=ext-b]"]))]
#[case::h2_next_handover_in_the_same_write("UPDATE", Some(side(Some("ext-a"), None, Some(EXT_B))), side(Some("ext-b"), None, Some(EXT_C)), ok(&["handed over"]))]
// H3: another successor, or none.
#[case::h3_other_successor("UPDATE", Some(side(Some("ext-a"), None, Some(EXT_C))), owned("ext-b"),
    err(&["is owned by [olm.operatorframework.io/owner-kind=ClusterExtension, olm.operatorframework.io/owner-name=ext-a]",
          "which handed it over to [olm.operatorframework.io/owner-kind=ClusterExtension, olm.operatorframework.io/owner-name=ext-c]",
          "not to [olm.operatorframework.io/owner-kind=ClusterExtension, olm.operatorframework.io/owner-name=ext-b]"]))]
#[case::h3_no_annotation("UPDATE", Some(owned("ext-a")), owned("ext-b"),
    err(&["would change its owner to [olm.operatorframework.io/owner-name=ext-b]", "the current owner must first release it",
          "Or, in one write, the current owner hands it over by setting the annotation example.com/handover-to=olm.operatorframework.io/owner-kind=ClusterExtension,olm.operatorframework.io/owner-name=ext-b"]))]
#[case::h3_unreadable_old_annotation("UPDATE", Some(side(Some("ext-a"), None, Some("ext-b"))), owned("ext-b"), err(&["would change its owner"]))]
// H5: setting the annotation is an ordinary write that keeps the owner.
#[case::h5_set("UPDATE", Some(owned("ext-a")), side(Some("ext-a"), None, Some(EXT_B)), ok(&[]))]
#[case::h5_change("UPDATE", Some(side(Some("ext-a"), None, Some(EXT_C))), side(Some("ext-a"), None, Some(EXT_B)), ok(&[]))]
#[case::h5_withdraw("UPDATE", Some(side(Some("ext-a"), None, Some(EXT_B))), owned("ext-a"), ok(&[]))]
fn handover(
    #[case] op: &str,
    #[case] old: Option<Side>,
    #[case] new: Side,
    #[case] expected: Expect,
) {
    check(&payload(op, old, new, with_handover()), expected);
}

/// H4: a handover is neither an adoption nor an orphaning.
#[rstest]
fn h4_handover_whatever_adoption_and_orphaning_say(
    #[values(true, false)] adoption: bool,
    #[values(true, false)] orphaning: bool,
) {
    let settings = json!({"handoverAnnotation": HANDOVER, "allowAdoption": adoption, "allowOrphaning": orphaning});
    let old = side(Some("ext-a"), Some("4"), Some(EXT_B));
    check(
        &payload("UPDATE", Some(old), at("ext-b", "1"), settings),
        Ok(&["handed over"]),
    );
}

/// With handover off (the default), the annotation is an ordinary annotation: never read.
#[test]
fn handover_off_by_default() {
    let old = side(Some("ext-a"), None, Some(EXT_B));
    check(
        &payload("UPDATE", Some(old), owned("ext-b"), json!({})),
        Err(&["would change its owner"]),
    );
    let message = admission::validate(&payload("UPDATE", Some(old), owned("ext-b"), json!({})))
        .message
        .unwrap_or_default();
    assert!(!message.contains("hands it over"), "{message}");
    check(
        &payload(
            "CREATE",
            None,
            side(Some("ext-a"), None, Some("nonsense")),
            json!({}),
        ),
        Ok(&[]),
    );
}

/// Helm: the release (annotations) is the owner; a handover names the new release.
#[test]
fn helm_release_handover() {
    let settings = json!({"ownerLabels": [], "ownerAnnotations": ["meta.helm.sh/release-name", "meta.helm.sh/release-namespace"],
        "ownerKindLabel": "", "revisionAnnotation": "", "handoverAnnotation": HANDOVER});
    let obj = |release: &str, handover: Option<&str>| {
        let mut annotations = json!({"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": "infra"});
        if let Some(h) = handover {
            annotations[HANDOVER] = json!(h);
        }
        json!({"metadata": {"name": "widget-editor", "labels": {"app.kubernetes.io/managed-by": "Helm"}, "annotations": annotations}})
    };
    let request = |old: Value, new: Value| {
        json!({"request": {"operation": "UPDATE", "kind": {"group": "rbac.authorization.k8s.io", "kind": "ClusterRole"},
            "name": "widget-editor", "object": new, "oldObject": old}, "settings": settings})
        .to_string()
    };
    let to_b = "meta.helm.sh/release-name=widgets-b,meta.helm.sh/release-namespace=infra";
    check(
        request(obj("widgets-a", Some(to_b)), obj("widgets-b", None)).as_bytes(),
        Ok(&[
            "ClusterRole \"widget-editor\" handed over from owner [meta.helm.sh/release-name=widgets-a, meta.helm.sh/release-namespace=infra]",
            "to owner [meta.helm.sh/release-name=widgets-b, meta.helm.sh/release-namespace=infra]",
        ]),
    );
    check(
        request(obj("widgets-a", None), obj("widgets-b", None)).as_bytes(),
        Err(&[
            "example.com/handover-to=meta.helm.sh/release-name=widgets-b,meta.helm.sh/release-namespace=infra",
        ]),
    );
}
