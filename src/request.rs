//! Reading the validation payload: only what the owner rules need.
//!
//! The host sends `{"request": AdmissionRequest, "settings": ...}`, and the objects in it can
//! be megabytes (CRDs with large schemas, ConfigMaps with long values). Instead of building a
//! `serde_json::Value` of the whole request, we read small views that keep the request's
//! identity and the objects' `metadata.{name,namespace,labels,annotations}`, borrow strings
//! from the payload where they hold no escapes, and skip every other value with the
//! validating reader of `json.rs` (which needs no recursion, however deep the skipped value).
//!
//! Anything that cannot be read is an error with a message saying what was wrong; the caller
//! rejects the request (fail closed). `null` and absent values both mean "none".

use crate::json::{Reader, Result, Str};
use crate::settings::Settings;

/// The validation payload a Kubewarden host sends to `validate`.
#[derive(Debug)]
pub struct Payload<'a> {
    pub request: Option<Request<'a>>,
    pub settings: Option<Settings>,
}

/// The parts of an AdmissionRequest the rules look at.
#[derive(Debug, Default)]
pub struct Request<'a> {
    pub operation: Option<Str<'a>>,
    pub kind: Option<GroupVersionKind<'a>>,
    pub name: Option<Str<'a>>,
    pub namespace: Option<Str<'a>>,
    pub sub_resource: Option<Str<'a>>,
    pub object: Option<Object<'a>>,
    pub old_object: Option<Object<'a>>,
}

#[derive(Debug, Default)]
pub struct GroupVersionKind<'a> {
    pub group: Option<Str<'a>>,
    pub kind: Option<Str<'a>>,
}

/// A Kubernetes object, of which only the metadata is read.
#[derive(Debug, Default)]
pub struct Object<'a> {
    pub metadata: Option<Metadata<'a>>,
}

#[derive(Debug, Default)]
pub struct Metadata<'a> {
    pub name: Option<Str<'a>>,
    pub namespace: Option<Str<'a>>,
    pub labels: Option<StringMap<'a>>,
    pub annotations: Option<StringMap<'a>>,
}

/// Parses a validation payload; every string, skipped or read, must be valid UTF-8.
pub fn parse_payload(payload: &[u8]) -> std::result::Result<Payload<'_>, String> {
    let mut reader = Reader::new(payload);
    let mut request = None;
    let mut settings_json = None;
    let read = reader
        .object("the validation payload", |r, key| match &*key {
            "request" => once(r, &mut request, "request", |r| nullable(r, read_request)),
            "settings" => once(r, &mut settings_json, "settings", |r| r.raw_value()),
            _ => r.skip_value(),
        })
        .and_then(|()| reader.end());
    read.map_err(|e| format!("the admission request cannot be read: {e}"))?;
    let settings = match settings_json {
        Some(json) => {
            Some(Settings::from_json(json.as_bytes()).map_err(|e| format!("the policy {e}"))?)
        }
        None => None,
    };
    Ok(Payload {
        request: request.flatten(),
        settings,
    })
}

/// Reads a field's value into `slot`, refusing a second occurrence of the field: with
/// duplicate keys, the last value must not win silently.
fn once<'a, T>(
    r: &mut Reader<'a>,
    slot: &mut Option<T>,
    field: &str,
    read: impl FnOnce(&mut Reader<'a>) -> Result<T>,
) -> Result<()> {
    if slot.is_some() {
        return Err(r.error(format!("duplicate field `{field}`")));
    }
    *slot = Some(read(r)?);
    Ok(())
}

/// `null` is `None`; anything else is read by `read`.
fn nullable<'a, T>(
    r: &mut Reader<'a>,
    read: impl FnOnce(&mut Reader<'a>) -> Result<T>,
) -> Result<Option<T>> {
    if r.null()? {
        Ok(None)
    } else {
        read(r).map(Some)
    }
}

fn string<'a>(r: &mut Reader<'a>, what: &'static str) -> Result<Option<Str<'a>>> {
    nullable(r, |r| r.string_value(|| what.to_string()))
}

fn read_request<'a>(r: &mut Reader<'a>) -> Result<Request<'a>> {
    // `Option<Option<_>>`: the outer level records that the field was seen.
    let (mut op, mut kind, mut name, mut ns, mut sub, mut obj, mut old) =
        (None, None, None, None, None, None, None);
    r.object("request", |r, key| match &*key {
        "operation" => once(r, &mut op, "operation", |r| string(r, "request.operation")),
        "kind" => once(r, &mut kind, "kind", |r| nullable(r, read_gvk)),
        "name" => once(r, &mut name, "name", |r| string(r, "request.name")),
        "namespace" => once(r, &mut ns, "namespace", |r| string(r, "request.namespace")),
        "subResource" => once(r, &mut sub, "subResource", |r| {
            string(r, "request.subResource")
        }),
        "object" => once(r, &mut obj, "object", |r| {
            nullable(r, |r| read_object(r, "request.object"))
        }),
        "oldObject" => once(r, &mut old, "oldObject", |r| {
            nullable(r, |r| read_object(r, "request.oldObject"))
        }),
        _ => r.skip_value(),
    })?;
    Ok(Request {
        operation: op.flatten(),
        kind: kind.flatten(),
        name: name.flatten(),
        namespace: ns.flatten(),
        sub_resource: sub.flatten(),
        object: obj.flatten(),
        old_object: old.flatten(),
    })
}

fn read_gvk<'a>(r: &mut Reader<'a>) -> Result<GroupVersionKind<'a>> {
    let (mut group, mut kind) = (None, None);
    r.object("request.kind", |r, key| match &*key {
        "group" => once(r, &mut group, "group", |r| string(r, "request.kind.group")),
        "kind" => once(r, &mut kind, "kind", |r| string(r, "request.kind.kind")),
        _ => r.skip_value(),
    })?;
    Ok(GroupVersionKind {
        group: group.flatten(),
        kind: kind.flatten(),
    })
}

fn read_object<'a>(r: &mut Reader<'a>, what: &'static str) -> Result<Object<'a>> {
    let mut metadata = None;
    r.object(what, |r, key| match &*key {
        "metadata" => once(r, &mut metadata, "metadata", |r| nullable(r, read_metadata)),
        _ => r.skip_value(),
    })?;
    Ok(Object {
        metadata: metadata.flatten(),
    })
}

fn read_metadata<'a>(r: &mut Reader<'a>) -> Result<Metadata<'a>> {
    let (mut name, mut ns, mut labels, mut annotations) = (None, None, None, None);
    r.object("metadata", |r, key| match &*key {
        "name" => once(r, &mut name, "name", |r| string(r, "metadata.name")),
        "namespace" => once(r, &mut ns, "namespace", |r| string(r, "metadata.namespace")),
        "labels" => once(r, &mut labels, "labels", |r| {
            nullable(r, |r| read_string_map(r, "metadata.labels"))
        }),
        "annotations" => once(r, &mut annotations, "annotations", |r| {
            nullable(r, |r| read_string_map(r, "metadata.annotations"))
        }),
        _ => r.skip_value(),
    })?;
    Ok(Metadata {
        name: name.flatten(),
        namespace: ns.flatten(),
        labels: labels.flatten(),
        annotations: annotations.flatten(),
    })
}

/// A label or annotation map: every value a string, every key once.
fn read_string_map<'a>(r: &mut Reader<'a>, what: &'static str) -> Result<StringMap<'a>> {
    if !matches!(r.peek(), Some(b'{') | None) {
        let found = r.found();
        return Err(r.error(format!(
            "{what} must be a map of strings to strings, not {found}"
        )));
    }
    let mut entries: Vec<(Str<'a>, Str<'a>)> = Vec::new();
    r.object(what, |r, key| {
        let value = r.string_value(|| format!("{what} {:?}", &*key))?;
        entries.push((key, value));
        Ok(())
    })?;
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    if let Some(pair) = entries.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(r.error(format!(
            "{what} has the key {:?} more than once",
            &*pair[0].0
        )));
    }
    Ok(StringMap(entries))
}

impl Request<'_> {
    pub fn operation(&self) -> &str {
        self.operation.as_deref().unwrap_or("")
    }

    pub fn kind(&self) -> &str {
        self.kind
            .as_ref()
            .and_then(|k| k.kind.as_deref())
            .unwrap_or("")
    }

    /// The request's namespace; empty for cluster-scoped objects.
    pub fn namespace(&self) -> &str {
        self.namespace.as_deref().unwrap_or("")
    }

    /// Namespaces are cluster-scoped, but the API server fills `namespace` with the
    /// namespace's own name on requests for an existing Namespace.
    pub fn is_cluster_scoped(&self) -> bool {
        let core_namespace = self.kind.as_ref().is_some_and(|k| {
            k.group.as_deref().unwrap_or("").is_empty() && k.kind.as_deref() == Some("Namespace")
        });
        self.namespace().is_empty() || core_namespace
    }

    /// The object's name: the request's, else the new or old object's (CREATE with
    /// `generateName` has none yet).
    pub fn object_name(&self) -> &str {
        fn meta_name<'r>(o: &'r Option<Object>) -> Option<&'r str> {
            o.as_ref()?.metadata.as_ref()?.name.as_deref()
        }
        self.name
            .as_deref()
            .filter(|n| !n.is_empty())
            .or_else(|| meta_name(&self.object))
            .or_else(|| meta_name(&self.old_object))
            .unwrap_or("")
    }
}

impl<'a> Object<'a> {
    pub fn labels(&self) -> &StringMap<'a> {
        self.metadata
            .as_ref()
            .and_then(|m| m.labels.as_ref())
            .unwrap_or(&EMPTY)
    }

    pub fn annotations(&self) -> &StringMap<'a> {
        self.metadata
            .as_ref()
            .and_then(|m| m.annotations.as_ref())
            .unwrap_or(&EMPTY)
    }
}

static EMPTY: StringMap<'static> = StringMap(Vec::new());

/// A label or annotation map, sorted by key for lookups. Every value must be a string and
/// every key unique: a duplicate owner key must not let the last value win silently.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct StringMap<'a>(Vec<(Str<'a>, Str<'a>)>);

impl StringMap<'_> {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .binary_search_by(|(k, _)| (**k).cmp(key))
            .ok()
            .map(|i| &*self.0[i].1)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_only_what_it_needs_and_borrows() {
        let payload = br#"{"settings":{},"request":{"uid":"1","operation":"UPDATE",
            "kind":{"group":"","version":"v1","kind":"ConfigMap"},"namespace":"ns","name":"cm",
            "object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","labels":
            {"b":"2","a":"1"},"managedFields":[{"x":[[[{"y":1.5e3}]]]}]},"data":{"k":"v\n"}},
            "oldObject":null,"dryRun":false}}"#;
        let p = parse_payload(payload).unwrap();
        let r = p.request.unwrap();
        assert_eq!(r.operation(), "UPDATE");
        assert_eq!(r.kind(), "ConfigMap");
        assert!(!r.is_cluster_scoped());
        let object = r.object.as_ref().unwrap();
        assert_eq!(object.labels().get("a"), Some("1"));
        assert_eq!(object.labels().get("b"), Some("2"));
        assert_eq!(object.labels().get("c"), None);
        assert!(matches!(
            object.labels().0[0].1.0,
            std::borrow::Cow::Borrowed(_)
        ));
        assert!(object.annotations().is_empty());
        assert!(r.old_object.is_none());
        assert_eq!(p.settings, Some(Settings::default()));
    }

    #[test]
    fn escaped_strings_are_decoded() {
        let p =
            parse_payload(br#"{"request":{"object":{"metadata":{"labels":{"k\u0041":"v\"1"}}}}}"#)
                .unwrap();
        let r = p.request.unwrap();
        assert_eq!(r.object.unwrap().labels().get("kA"), Some("v\"1"));
    }

    #[test]
    fn namespace_requests_are_cluster_scoped() {
        let p = parse_payload(
            br#"{"request":{"kind":{"group":"","kind":"Namespace"},"namespace":"team-a","name":"team-a"}}"#,
        )
        .unwrap();
        assert!(p.request.unwrap().is_cluster_scoped());
    }

    #[test]
    fn deep_unrelated_nesting_is_skipped() {
        let deep = format!("{}1{}", "[".repeat(5000), "]".repeat(5000));
        let payload = format!(
            r#"{{"request":{{"object":{{"spec":{deep},"metadata":{{"labels":{{"a":"b"}}}}}}}}}}"#
        );
        let p = parse_payload(payload.as_bytes()).unwrap();
        assert_eq!(
            p.request.unwrap().object.unwrap().labels().get("a"),
            Some("b")
        );
    }

    #[test]
    fn object_name_falls_back_to_metadata() {
        let p = parse_payload(br#"{"request":{"name":"","object":{"metadata":{"name":"x"}}}}"#)
            .unwrap();
        assert_eq!(p.request.unwrap().object_name(), "x");
    }
}
