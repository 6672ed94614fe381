//! Who owns an object, computed as the policy computes it, and the objects grouped by owner.
//!
//! The rules crate reads owners off an admission payload (`request::parse_payload`,
//! `Payload::metadata` into the slots `Schemes::wanted` names, `Marks::owners`): so each
//! object's metadata is written into a small synthetic payload and read back by that reader.
//! One owner model, not a second one: the same keys, Argo CD's tracking id cut at its `:`, the
//! installation id as a qualifier, the same absent-versus-empty rule.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde::Serialize;
use serde_json::{Value, json};
use single_owner_policy::owners::Marks;
use single_owner_policy::reading::request::parse_payload;
use single_owner_policy::tools::olm_v1;

use crate::listing::Listed;
use crate::preset::Model;

/// An object, as output names it; ordered by kind, namespace, name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(skip)]
    pub resource_version: String,
}

impl ObjectRef {
    /// `Kind "name" in namespace "ns"`, as the policy's messages name an object.
    pub fn described(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} {:?} in namespace {:?}", self.kind, self.name, ns),
            None => format!("{} {:?}", self.kind, self.name),
        }
    }
}

/// An owner: its tool (scheme) and the owner part of each of its keys present.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct OwnerId {
    pub tool: String,
    pub keys: BTreeMap<String, String>,
}

impl OwnerId {
    /// `key=value,...`, as a label selector (and the handover annotation) writes owners.
    pub fn selector(&self) -> String {
        (self.keys.iter())
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

impl std::fmt::Display for OwnerId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} [{}]", self.tool, self.selector())
    }
}

/// An owner an object carries: its identity, its scheme, and its keys' whole values.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Carried {
    pub id: OwnerId,
    pub scheme: usize,
    pub values: BTreeMap<String, String>,
    /// Under a tool whose owner is also the object's controller and whose keys do not name it
    /// (Crossplane: the label names the root composite, the controller the one that composes
    /// the object), that controller, whose existence is the owner's.
    pub controller: Option<Controller>,
}

/// An object's controller ownerReference, and the namespace it is looked for in (the
/// object's; a cluster-scoped owner is found without it).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Controller {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    pub namespace: Option<String>,
}

/// An object with what the rules read of it.
#[derive(Debug, Clone)]
pub struct Object {
    pub r: ObjectRef,
    pub group: String,
    pub version: String,
    pub plural: String,
    pub meta: ObjectMeta,
}

impl From<Listed> for Object {
    fn from(listed: Listed) -> Object {
        let ty = &listed.ty;
        let meta = listed.meta;
        Object {
            r: ObjectRef {
                kind: ty.kind.clone(),
                namespace: meta.namespace.clone().filter(|_| ty.namespaced),
                name: meta.name.clone().unwrap_or_default(),
                api_version: ty.api_version(),
                uid: meta.uid.clone().unwrap_or_default(),
                resource_version: meta.resource_version.clone().unwrap_or_default(),
            },
            group: ty.group.clone(),
            version: ty.version.clone(),
            plural: ty.plural.clone(),
            meta,
        }
    }
}

impl Object {
    pub fn of(listed: &Listed) -> Object {
        Object::from(listed.clone())
    }

    /// The object's controller ownerReference.
    pub fn controller(&self) -> Option<&OwnerReference> {
        (self.meta.owner_references.iter().flatten()).find(|r| r.controller == Some(true))
    }

    /// The object as an admission request carries it: what the rules read of its metadata.
    fn as_json(&self) -> Value {
        let refs: Vec<Value> = (self.meta.owner_references.iter().flatten())
            .map(|r| {
                json!({"apiVersion": r.api_version, "kind": r.kind, "name": r.name,
                       "uid": r.uid, "controller": r.controller})
            })
            .collect();
        json!({
            "apiVersion": self.r.api_version,
            "kind": self.r.kind,
            "metadata": {
                "name": self.r.name,
                "namespace": self.r.namespace,
                "labels": self.meta.labels,
                "annotations": self.meta.annotations,
                "ownerReferences": refs,
            }
        })
    }

    /// A synthetic admission payload: a CREATE of the object, judged with `settings`. No
    /// writer is named.
    pub fn payload(&self, operation: &str, settings: &[u8]) -> Vec<u8> {
        let object = self.as_json();
        let request = json!({
            "uid": "kubectl-single-owner",
            "operation": operation,
            "kind": {"group": self.group, "version": self.version, "kind": self.r.kind},
            "resource": {"group": self.group, "version": self.version, "resource": self.plural},
            "name": self.r.name,
            "namespace": self.r.namespace,
            "userInfo": {},
            "object": object,
        });
        // The settings' bytes as they are (JSON the model wrote): read once per scan by the
        // rules' cache, never parsed again here.
        let mut out = Vec::with_capacity(512 + settings.len());
        out.extend_from_slice(b"{\"request\":");
        if serde_json::to_writer(&mut out, &request).is_err() {
            return Vec::new();
        }
        out.extend_from_slice(b",\"settings\":");
        out.extend_from_slice(if settings.is_empty() {
            b"null"
        } else {
            settings
        });
        out.push(b'}');
        out
    }
}

/// The owners an object carries under the model's schemes, in scheme order (`Err`: its
/// metadata cannot be read, in the reader's words).
pub fn carried(model: &Model, object: &Object) -> Result<Vec<Carried>, String> {
    let bytes = object.payload("CREATE", b"{}");
    let payload = parse_payload(&bytes)?;
    let Some(new) = payload.request.as_ref().and_then(|r| r.object.as_ref()) else {
        return Ok(Vec::new());
    };
    let mut values = vec![None; model.schemes.slots()];
    payload.metadata(new, model.schemes.wanted(), &mut values)?;
    let marks = Marks { values: &values };
    let mut out = Vec::new();
    for owned in marks.owners(&model.schemes) {
        let Some(scheme) = model.schemes.list.get(owned.scheme) else {
            continue;
        };
        let (mut keys, mut whole) = (BTreeMap::new(), BTreeMap::new());
        for (i, key) in scheme.keys.iter().enumerate() {
            if let (Some(part), Some(value)) = (owned.owner.key(i), owned.owner.get(i)) {
                keys.insert(key.clone(), part.to_string());
                whole.insert(key.clone(), value.to_string());
            }
        }
        out.push(Carried {
            id: OwnerId {
                tool: model.scheme_name(owned.scheme),
                keys,
            },
            scheme: owned.scheme,
            values: whole,
            controller: (scheme.tool == "crossplane")
                .then(|| object.controller())
                .flatten()
                .map(|r| Controller {
                    api_version: r.api_version.clone(),
                    kind: r.kind.clone(),
                    name: r.name.clone(),
                    uid: r.uid.clone(),
                    namespace: object.r.namespace.clone(),
                }),
        });
    }
    Ok(out)
}

/// Whether an object carries any key the rules read (the others are not listed further).
pub fn is_marked(model: &Model, meta: &ObjectMeta) -> bool {
    let has = |map: &Option<BTreeMap<String, String>>, keys: &[(String, usize)]| {
        map.as_ref()
            .is_some_and(|m| keys.iter().any(|(k, _)| m.contains_key(k)))
    };
    has(&meta.labels, &model.schemes.label_keys)
        || has(&meta.annotations, &model.schemes.annotation_keys)
        || (!model.schemes.controlled.is_empty()
            && (meta.owner_references.iter().flatten())
                .any(|r| r.controller == Some(true) && olm_v1::controls(&r.api_version, &r.kind)))
}

/// Which owners a scan shows: `--tool`, and `--owner KEY=VALUE` (all of them, on one owner).
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub tool: Option<String>,
    pub keys: Vec<(String, String)>,
}

impl Filter {
    pub fn is_empty(&self) -> bool {
        self.tool.is_none() && self.keys.is_empty()
    }

    pub fn matches(&self, owner: &OwnerId) -> bool {
        self.tool.as_ref().is_none_or(|t| *t == owner.tool)
            && (self.keys.iter()).all(|(k, v)| owner.keys.get(k) == Some(v))
    }

    /// Whether an object with these owners is shown.
    pub fn shows(&self, owners: &[OwnerId]) -> bool {
        self.is_empty() || owners.iter().any(|o| self.matches(o))
    }
}

/// One owner and its objects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OwnerGroup {
    pub tool: String,
    pub owner: BTreeMap<String, String>,
    pub objects: Vec<ObjectRef>,
}

/// Groups objects by owner (tool, then keys), each owner's objects by kind, namespace, name.
/// An object with two owners is under both. The objects are taken, not copied (an object is
/// copied only for its second owner): at the end of a scan they are most of its memory.
pub fn group<'a, O>(
    objects: impl IntoIterator<Item = (ObjectRef, O)>,
    filter: &Filter,
) -> Vec<OwnerGroup>
where
    O: IntoIterator<Item = &'a OwnerId>,
{
    let mut by: BTreeMap<&OwnerId, Vec<ObjectRef>> = BTreeMap::new();
    for (object, owners) in objects {
        let mut shown = owners.into_iter().filter(|o| filter.matches(o)).peekable();
        while let Some(owner) = shown.next() {
            let entry = by.entry(owner).or_default();
            if shown.peek().is_some() {
                entry.push(object.clone());
            } else {
                entry.push(object);
                break;
            }
        }
    }
    by.into_iter()
        .map(|(owner, mut objects)| {
            objects.sort();
            objects.dedup();
            OwnerGroup {
                tool: owner.tool.clone(),
                owner: owner.keys.clone(),
                objects,
            }
        })
        .collect()
}

#[cfg(test)]
pub mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::discovery::tests::ty;
    use crate::listing::tests::meta;
    use rstest::rstest;

    pub fn all_tools() -> Model {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../deploy/all-tools.yaml"
        ))
        .unwrap();
        let (name, settings) = crate::preset::preset_settings(&text).unwrap();
        Model::from_value(&name, settings).unwrap()
    }

    pub fn object(
        kind: &str,
        ns: Option<&str>,
        name: &str,
        labels: &[(&str, &str)],
        annotations: &[(&str, &str)],
    ) -> Object {
        let mut m = meta(ns, name, labels);
        m.annotations = Some(
            (annotations.iter())
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        let plural = format!("{}s", kind.to_ascii_lowercase());
        Object::of(&Listed {
            ty: Arc::new(ty("", kind, &plural, ns.is_some())),
            meta: m,
        })
    }

    fn ids(model: &Model, o: &Object) -> Vec<String> {
        carried(model, o)
            .unwrap()
            .into_iter()
            .map(|c| c.id.to_string())
            .collect()
    }

    #[rstest]
    #[case::olm_v1(
        &[("olm.operatorframework.io/owner-kind", "ClusterExtension"), ("olm.operatorframework.io/owner-name", "cm")],
        &[],
        &["olm-v1 [olm.operatorframework.io/owner-kind=ClusterExtension,olm.operatorframework.io/owner-name=cm]"]
    )]
    #[case::argocd_application_only(
        &[],
        &[("argocd.argoproj.io/tracking-id", "shop:apps/Deployment:shop/web")],
        &["argocd [argocd.argoproj.io/tracking-id=shop]"]
    )]
    #[case::helm_and_flux_helm(
        &[("helm.toolkit.fluxcd.io/name", "podinfo"), ("helm.toolkit.fluxcd.io/namespace", "apps")],
        &[("meta.helm.sh/release-name", "podinfo"), ("meta.helm.sh/release-namespace", "apps")],
        &["helm [meta.helm.sh/release-name=podinfo,meta.helm.sh/release-namespace=apps]",
          "flux-helm [helm.toolkit.fluxcd.io/name=podinfo,helm.toolkit.fluxcd.io/namespace=apps]"]
    )]
    #[case::empty_value_is_an_owner(&[("olm.owner", "")], &[], &["olm-v0 [olm.owner=]"])]
    #[case::none(&[("app", "x")], &[("note", "y")], &[])]
    fn owners_are_read_as_the_policy_reads_them(
        #[case] labels: &[(&str, &str)],
        #[case] annotations: &[(&str, &str)],
        #[case] expected: &[&str],
    ) {
        let model = all_tools();
        let o = object("ConfigMap", Some("apps"), "x", labels, annotations);
        assert_eq!(ids(&model, &o), expected);
    }

    #[test]
    fn objects_are_grouped_by_owner_then_kind_namespace_name() {
        let model = all_tools();
        let helm = |ns, name, release| {
            object(
                "ConfigMap",
                Some(ns),
                name,
                &[],
                &[
                    ("meta.helm.sh/release-name", release),
                    ("meta.helm.sh/release-namespace", "apps"),
                ],
            )
        };
        let objects = [
            helm("b", "z", "r1"),
            helm("a", "y", "r1"),
            helm("a", "x", "r2"),
        ];
        let owned: Vec<(ObjectRef, Vec<OwnerId>)> = (objects.iter())
            .map(|o| {
                let ids = carried(&model, o).unwrap().into_iter().map(|c| c.id);
                (o.r.clone(), ids.collect())
            })
            .collect();
        let groups = group(
            owned.iter().map(|(r, ids)| (r.clone(), ids)),
            &Filter::default(),
        );
        let shown: Vec<(String, Vec<String>)> = (groups.iter())
            .map(|g| {
                let name = g.owner["meta.helm.sh/release-name"].clone();
                (name, g.objects.iter().map(ObjectRef::described).collect())
            })
            .collect();
        assert_eq!(
            shown,
            [
                (
                    "r1".to_string(),
                    vec![
                        r#"ConfigMap "y" in namespace "a""#.to_string(),
                        r#"ConfigMap "z" in namespace "b""#.to_string()
                    ]
                ),
                (
                    "r2".to_string(),
                    vec![r#"ConfigMap "x" in namespace "a""#.to_string()]
                ),
            ]
        );
        let only = Filter {
            tool: None,
            keys: vec![("meta.helm.sh/release-name".into(), "r2".into())],
        };
        let groups = group(owned.iter().map(|(r, ids)| (r.clone(), ids)), &only);
        assert_eq!(groups.len(), 1);
    }

    #[test]
    fn an_object_without_the_policys_keys_is_not_marked() {
        let model = all_tools();
        assert!(!is_marked(&model, &meta(Some("a"), "x", &[("app", "x")])));
        assert!(is_marked(
            &model,
            &meta(Some("a"), "x", &[("olm.owner", "x")])
        ));
    }

    #[rstest]
    #[case(None, &[], true)]
    #[case(Some("helm"), &[], true)]
    #[case(Some("argocd"), &[], false)]
    #[case(None, &[("meta.helm.sh/release-name", "web")], true)]
    #[case(None, &[("meta.helm.sh/release-name", "web"), ("meta.helm.sh/release-namespace", "b")], false)]
    #[case(Some("helm"), &[("meta.helm.sh/release-name", "db")], false)]
    fn a_filter_shows_an_owner_by_tool_and_keys(
        #[case] tool: Option<&str>,
        #[case] keys: &[(&str, &str)],
        #[case] shown: bool,
    ) {
        let owner = OwnerId {
            tool: "helm".into(),
            keys: [
                ("meta.helm.sh/release-name", "web"),
                ("meta.helm.sh/release-namespace", "a"),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        };
        let filter = Filter {
            tool: tool.map(Into::into),
            keys: keys
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        assert_eq!(filter.shows(std::slice::from_ref(&owner)), shown);
        assert!(Filter::default().shows(&[]));
    }
}

#[cfg(test)]
mod composite_tests {
    use super::tests::{all_tools, object};
    use super::*;

    #[test]
    fn a_composed_objects_owner_is_looked_up_by_its_controller() {
        let mut o = object(
            "Secret",
            Some("infra"),
            "platform-ebb21f2dacc9",
            &[("crossplane.io/composite", "platform")],
            &[],
        );
        o.meta.owner_references = Some(vec![OwnerReference {
            api_version: "example.org/v1".into(),
            kind: "XNetwork".into(),
            name: "platform-45d209b69be0".into(),
            uid: "uid-n".into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }]);
        let c = carried(&all_tools(), &o).unwrap();
        assert_eq!(c.len(), 1);
        assert_eq!(
            c[0].id.to_string(),
            "crossplane [crossplane.io/composite=platform]"
        );
        assert_eq!(
            c[0].controller,
            Some(Controller {
                api_version: "example.org/v1".into(),
                kind: "XNetwork".into(),
                name: "platform-45d209b69be0".into(),
                uid: "uid-n".into(),
                namespace: Some("infra".into()),
            })
        );
        let named = crate::lookups::named(&c, "argocd");
        assert_eq!(named.len(), 1);
        assert_eq!(
            named[0].to_string(),
            "composite resource XNetwork \"platform-45d209b69be0\" in namespace \"infra\" \
             (example.org/v1, uid uid-n)"
        );
        // Another tool's keys with a controller: no composite to look up.
        let mut helm = object(
            "Secret",
            Some("infra"),
            "x",
            &[],
            &[
                ("meta.helm.sh/release-name", "web"),
                ("meta.helm.sh/release-namespace", "infra"),
            ],
        );
        helm.meta.owner_references = o.meta.owner_references.clone();
        let c = carried(&all_tools(), &helm).unwrap();
        assert!(c.iter().all(|c| c.controller.is_none()));
    }
}
