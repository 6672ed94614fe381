//! The proof that no shipped manifest keeps from its policy a write the policy would refuse:
//! over generated changes of the owner markers (keys added, removed, changed in value and in
//! case, emptied; labels and annotations, the revision and handover annotations among them;
//! ownerReferences with a controller or none, of OLM v1's kinds, Crossplane XRs' and others),
//! every manifest's selection (its rules, objectSelector and matchConditions, as `selects`
//! evaluates them) must send each write that its module, with the manifest's settings, refuses. The module is the
//! rules crate itself, with every lookup failing, so that it refuses all it could refuse
//! whatever a cluster would answer. A matchCondition that fails to evaluate fails the proof
//! too: with `failurePolicy: Fail` the API server would refuse the write.
//!
//! The corpus and the e2e fixtures are proven the same way through the built module
//! (`selects --judge`, e2e-tests/skips.bats).

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use single_owner_policy::admission::{Answer, judge_in};
use single_owner_policy::tools::cluster::{Cluster, Get, List};

use crate::deploy::selects;

/// A cluster whose every lookup fails.
struct Unreachable;

impl Cluster for Unreachable {
    fn get(&self, _: &Get) -> Result<Vec<u8>, String> {
        Err("the lookup failed (the proof answers none)".into())
    }

    fn list(&self, _: &List) -> Result<Vec<u8>, String> {
        Err("the lookup failed (the proof answers none)".into())
    }
}

/// A shipped manifest: its text, settings and the keys its module reads.
struct Manifest {
    path: PathBuf,
    text: String,
    settings: Value,
    labels: Vec<String>,
    annotations: Vec<String>,
}

fn manifests() -> Vec<Manifest> {
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy");
    let mut paths = Vec::new();
    for dir in [deploy.clone(), deploy.join("identity")] {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "yaml") {
                paths.push(path);
            }
        }
    }
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let doc: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
            let settings = match serde_json::to_value(&doc["spec"]["settings"]).unwrap() {
                Value::Null => json!({}),
                s => s,
            };
            let parsed = single_owner_policy::settings::Settings::from_json(
                &serde_json::to_vec(&settings).unwrap(),
            )
            .unwrap();
            let schemes = single_owner_policy::owners::Schemes::new(&parsed);
            let names = |keys: &[(String, usize)]| {
                let mut out: Vec<String> = keys.iter().map(|(k, _)| k.clone()).collect();
                out.dedup();
                out
            };
            Manifest {
                labels: names(&schemes.label_keys),
                annotations: names(&schemes.annotation_keys),
                path,
                text,
                settings,
            }
        })
        .collect()
}

/// Keys no preset reads, and the read keys in another case: a write may change them freely.
const OTHER_LABELS: [&str; 3] = ["app", "app.kubernetes.io/managed-by", "OLM.owner"];
const OTHER_ANNOTATIONS: [&str; 2] = ["kubectl.kubernetes.io/last-applied-configuration", "note"];

/// One side's markers: labels, annotations, ownerReferences.
#[derive(Debug, Clone, Default)]
struct Markers {
    labels: Vec<(String, String)>,
    annotations: Vec<(String, String)>,
    references: Vec<Value>,
}

impl Markers {
    fn metadata(&self, name: &str, namespace: &str) -> Value {
        let map = |pairs: &[(String, String)]| {
            Value::Object(
                pairs
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                    .collect::<Map<_, _>>(),
            )
        };
        let mut m = json!({"name": name});
        if !namespace.is_empty() {
            m["namespace"] = json!(namespace);
        }
        if !self.labels.is_empty() {
            m["labels"] = map(&self.labels);
        }
        if !self.annotations.is_empty() {
            m["annotations"] = map(&self.annotations);
        }
        if !self.references.is_empty() {
            m["ownerReferences"] = Value::Array(self.references.clone());
        }
        m
    }
}

/// Whether a label may hold `v` (the API server refuses any other value before admission).
fn label_value(v: &str) -> bool {
    let ok = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
    v.is_empty()
        || v.len() <= 63
            && v.chars().all(ok)
            && v.starts_with(|c: char| c.is_ascii_alphanumeric())
            && v.ends_with(|c: char| c.is_ascii_alphanumeric())
}

/// A value for a key, from the few that mean something to the rules: owners, owner kinds,
/// revisions (valid and not), successors, Argo CD tracking ids, and each in another case;
/// for a label, those a label may hold.
fn value(keys: Vec<String>, label: bool) -> impl Strategy<Value = String> {
    let mut pool: Vec<String> = [
        "a",
        "A",
        "b",
        "",
        "ClusterExtension",
        "Extension",
        "ClusterServiceVersion",
        "ns",
        "other",
        "1",
        "2",
        "10",
        "01",
        "x",
        "shop:/ConfigMap:shop/x",
        "other:/ConfigMap:shop/x",
        "shop_app:apps/Deployment:shop/web",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for key in keys.iter().take(6) {
        pool.push(format!("{key}=b"));
        pool.push(format!("{key}=a"));
    }
    if keys.len() >= 2 {
        pool.push(format!("{}=a,{}=ns", keys[0], keys[1]));
    }
    if label {
        pool.retain(|v| label_value(v));
    }
    proptest::sample::select(pool)
}

fn reference() -> impl Strategy<Value = Value> {
    (
        proptest::sample::select(vec![
            ("olm.operatorframework.io/v1", "ClusterExtension"),
            ("olm.operatorframework.io/v1", "ClusterObjectSet"),
            ("operators.coreos.com/v1alpha1", "ClusterServiceVersion"),
            ("apps/v1", "Deployment"),
            // Crossplane's XRs, of the user's kinds, across an XRD version bump.
            ("example.org/v1", "XApp"),
            ("example.org/v2", "XApp"),
            ("example.org/v1", "XNet"),
        ]),
        proptest::sample::select(vec!["a", "b", "a-1"]),
        proptest::sample::select(vec![Some(true), Some(false), None]),
        // An XR recreated under its name has a new uid.
        proptest::sample::select(vec!["", "-recreated"]),
    )
        .prop_map(|((api_version, kind), name, controller, uid)| {
            let mut r = json!({"apiVersion": api_version, "kind": kind, "name": name,
                "uid": format!("uid-{name}{uid}")});
            if let Some(c) = controller {
                r["controller"] = json!(c);
            }
            r
        })
}

/// The API server allows one controller reference.
fn at_most_one_controller(mut refs: Vec<Value>) -> Vec<Value> {
    let mut seen = false;
    for r in &mut refs {
        if r["controller"] == true {
            if seen {
                r["controller"] = json!(false);
            }
            seen = true;
        }
    }
    refs
}

fn pairs(
    keys: Vec<String>,
    values: Vec<String>,
    label: bool,
) -> impl Strategy<Value = Vec<(String, String)>> {
    proptest::collection::vec((proptest::sample::select(keys), value(values, label)), 0..4)
        .prop_map(|mut pairs| {
            // One value per key, as in a map.
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            pairs.dedup_by(|a, b| a.0 == b.0);
            pairs
        })
}

fn markers(labels: Vec<String>, annotations: Vec<String>) -> impl Strategy<Value = Markers> {
    let owner_keys: Vec<String> = labels.iter().chain(&annotations).cloned().collect();
    let with = |mut read: Vec<String>, other: &[&str]| {
        read.extend(other.iter().map(|s| s.to_string()));
        read
    };
    (
        pairs(
            with(labels.clone(), &OTHER_LABELS),
            owner_keys.clone(),
            true,
        ),
        pairs(
            with(annotations.clone(), &OTHER_ANNOTATIONS),
            owner_keys.clone(),
            false,
        ),
        proptest::collection::vec(reference(), 0..3).prop_map(at_most_one_controller),
    )
        .prop_map(|(labels, annotations, references)| Markers {
            labels,
            annotations,
            references,
        })
}

/// One change of a marker: added, removed, changed in value or in case, emptied.
#[derive(Debug, Clone)]
enum Change {
    Set(bool, String, String),
    Remove(bool, String),
    Upper(bool, String),
    Empty(bool, String),
    References(Vec<Value>),
}

fn changes(labels: Vec<String>, annotations: Vec<String>) -> impl Strategy<Value = Vec<Change>> {
    let keys: Vec<(bool, String)> = (labels.iter().map(|k| (true, k.clone())))
        .chain(annotations.iter().map(|k| (false, k.clone())))
        .chain(OTHER_LABELS.iter().map(|k| (true, k.to_string())))
        .chain(OTHER_ANNOTATIONS.iter().map(|k| (false, k.to_string())))
        .collect();
    let values: Vec<String> = labels.iter().chain(&annotations).cloned().collect();
    let of = |label: bool| -> Vec<String> {
        (keys.iter().filter(|(l, _)| *l == label))
            .map(|(_, k)| k.clone())
            .collect()
    };
    let (label_keys, annotation_keys) = (of(true), of(false));
    let key = proptest::sample::select(keys);
    let change = prop_oneof![
        (
            proptest::sample::select(label_keys),
            value(values.clone(), true)
        )
            .prop_map(|(k, v)| Change::Set(true, k, v)),
        (
            proptest::sample::select(annotation_keys),
            value(values, false)
        )
            .prop_map(|(k, v)| Change::Set(false, k, v)),
        key.clone().prop_map(|(l, k)| Change::Remove(l, k)),
        key.clone().prop_map(|(l, k)| Change::Upper(l, k)),
        key.prop_map(|(l, k)| Change::Empty(l, k)),
        proptest::collection::vec(reference(), 0..3)
            .prop_map(|r| Change::References(at_most_one_controller(r))),
    ];
    proptest::collection::vec(change, 0..3)
}

fn apply(old: &Markers, changes: &[Change]) -> Markers {
    let mut new = old.clone();
    for change in changes {
        let map = |new: &mut Markers, label: bool| {
            if label {
                std::mem::take(&mut new.labels)
            } else {
                std::mem::take(&mut new.annotations)
            }
        };
        let put = |new: &mut Markers, label: bool, m: Vec<(String, String)>| {
            if label {
                new.labels = m;
            } else {
                new.annotations = m;
            }
        };
        match change {
            Change::Set(l, k, v) => {
                let mut m = map(&mut new, *l);
                m.retain(|(key, _)| key != k);
                m.push((k.clone(), v.clone()));
                put(&mut new, *l, m);
            }
            Change::Remove(l, k) => {
                let mut m = map(&mut new, *l);
                m.retain(|(key, _)| key != k);
                put(&mut new, *l, m);
            }
            Change::Upper(l, k) | Change::Empty(l, k) => {
                let mut m = map(&mut new, *l);
                for (key, v) in &mut m {
                    if key == k {
                        *v = match change {
                            Change::Upper(..) => v.to_uppercase(),
                            _ => String::new(),
                        };
                    }
                }
                put(&mut new, *l, m);
            }
            Change::References(r) => new.references = r.clone(),
        }
    }
    new
}

/// A write the API server could send: its operation, the object's kind and scope, the writer,
/// and whether it writes the object's status (a Deployment's /status keeps only its labels).
#[derive(Debug, Clone)]
struct Write {
    create: bool,
    status: bool,
    cluster_scoped: bool,
    writer: &'static str,
    old: Markers,
    new: Markers,
}

impl Write {
    fn request(&self) -> Value {
        let (kind, resource, group, namespace) = match self.cluster_scoped {
            true => (
                "ClusterRole",
                "clusterroles",
                "rbac.authorization.k8s.io",
                "",
            ),
            false => ("ConfigMap", "configmaps", "", "shop"),
        };
        let version = "v1";
        let object = |m: &Markers| json!({"apiVersion": "v1", "kind": kind, "metadata": m.metadata("x", namespace)});
        let mut r = json!({
            "uid": "proof",
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": resource},
            "name": "x",
            "operation": if self.create { "CREATE" } else { "UPDATE" },
            "userInfo": {"username": self.writer, "groups": ["system:authenticated"]},
            "object": object(&self.new),
            "oldObject": if self.create { Value::Null } else { object(&self.old) },
        });
        if !namespace.is_empty() {
            r["namespace"] = json!(namespace);
        }
        if self.status && !self.create {
            r["subResource"] = json!("status");
        }
        r
    }
}

fn writes(m: &Manifest) -> impl Strategy<Value = Write> + use<> {
    let (labels, annotations) = (m.labels.clone(), m.annotations.clone());
    (
        any::<bool>(),
        proptest::bool::weighted(0.2),
        any::<bool>(),
        proptest::sample::select(vec![
            "alice",
            "system:serviceaccount:shop:helm-shop",
            "system:serviceaccount:olmv1-system:operator-controller-controller-manager",
            "system:serviceaccount:kube-system:generic-garbage-collector",
        ]),
        markers(labels.clone(), annotations.clone()),
        changes(labels, annotations),
    )
        .prop_map(|(create, status, cluster_scoped, writer, old, changes)| {
            let new = apply(&old, &changes);
            Write {
                create,
                status,
                cluster_scoped,
                writer,
                old,
                new,
            }
        })
}

/// The proof for one manifest: `Err` names the write.
fn check(m: &Manifest, write: &Write) -> Result<(), TestCaseError> {
    let request = write.request();
    let sent = selects(&m.text, &request)
        .map_err(|e| TestCaseError::fail(format!("{}: {e:#}", m.path.display())))?;
    if sent.is_ok() {
        return Ok(());
    }
    let payload = serde_json::to_vec(&json!({"request": request, "settings": m.settings})).unwrap();
    match judge_in(&payload, &Unreachable) {
        Answer::Reject { message, .. } => Err(TestCaseError::fail(format!(
            "{} does not send a write its module refuses ({}): {message}\nrequest: {request}",
            m.path.display(),
            sent.unwrap_err(),
        ))),
        _ => Ok(()),
    }
}

#[test]
fn no_manifest_skips_a_write_its_module_refuses() {
    let manifests = manifests();
    assert!(
        manifests.len() >= 12,
        "the shipped manifests: {}",
        manifests.len()
    );
    for m in &manifests {
        let config = ProptestConfig {
            cases: 1500,
            failure_persistence: None,
            ..ProptestConfig::default()
        };
        let mut runner = proptest::test_runner::TestRunner::new(config);
        if let Err(e) = runner.run(&writes(m), |w| check(m, &w)) {
            panic!("{e}");
        }
    }
}

#[test]
fn ordinary_writes_of_owned_objects_stay_in_the_api_server() {
    // An UPDATE of an owned object that changes its data and no marker: not sent by the
    // one-tool and all-tools presets (the identity presets judge who writes on every write).
    let olm = Markers {
        labels: vec![
            (
                "olm.operatorframework.io/owner-kind".into(),
                "ClusterExtension".into(),
            ),
            ("olm.operatorframework.io/owner-name".into(), "a".into()),
        ],
        annotations: vec![("olm.operatorframework.io/revision".into(), "2".into())],
        references: vec![json!({"apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterExtension", "name": "a", "uid": "u", "controller": true})],
    };
    let crossplane = Markers {
        labels: vec![("crossplane.io/composite".into(), "a".into())],
        annotations: vec![],
        references: vec![json!({"apiVersion": "example.org/v1",
            "kind": "XApp", "name": "a", "uid": "u", "controller": true})],
    };
    for owned in [olm, crossplane] {
        let write = Write {
            create: false,
            status: false,
            cluster_scoped: false,
            writer: "alice",
            old: owned.clone(),
            new: owned,
        };
        for m in manifests() {
            let name = m.path.file_name().unwrap().to_string_lossy().to_string();
            if m.path.parent().is_some_and(|p| p.ends_with("identity")) {
                continue;
            }
            let sent = selects(&m.text, &write.request()).unwrap();
            assert!(
                sent.is_err(),
                "{name} sends an ordinary write of an owned object"
            );
        }
    }
}

/// Writes the generated writes of every shipped manifest as AdmissionRequest files, for the
/// suites that send them through a real API server (e2e-tests/cluster/selection.py): into
/// `$PROOF_WRITES_DIR/<manifest>/<n>.json`, `$PROOF_WRITES_COUNT` each (default 60), from a
/// fixed seed. Run by those suites: `cargo test -p policy-host proof::write -- --ignored`.
#[test]
#[ignore]
fn write_the_generated_writes() {
    use proptest::strategy::ValueTree;
    let dir = PathBuf::from(std::env::var("PROOF_WRITES_DIR").expect("PROOF_WRITES_DIR"));
    let count: usize = std::env::var("PROOF_WRITES_COUNT").map_or(60, |c| c.parse().unwrap());
    for m in manifests() {
        let stem = m.path.file_stem().unwrap().to_string_lossy().to_string();
        let out = dir.join(&stem);
        std::fs::create_dir_all(&out).unwrap();
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let strategy = writes(&m);
        for n in 0..count {
            let write = strategy.new_tree(&mut runner).unwrap().current();
            let mut request = write.request();
            request["uid"] = json!(format!("proof-{stem}-{n}"));
            std::fs::write(out.join(format!("{n}.json")), request.to_string()).unwrap();
        }
    }
}
