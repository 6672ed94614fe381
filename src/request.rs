//! Reading the validation payload: only what the owner rules need.
//!
//! The host sends `{"request": AdmissionRequest, "settings": ...}`, and the objects in it can
//! be megabytes (CRDs with large schemas, ConfigMaps with long values). Instead of building a
//! `serde_json::Value` of the whole request, we deserialize into small views that keep the
//! request's identity and the objects' `metadata.{name,namespace,labels,annotations}`, borrow
//! strings from the payload where they hold no escapes, and let serde_json skip every other
//! value. serde_json skips ignored values with an explicit stack, not recursion, so unrelated
//! fields nested far deeper than its 128-level limit are skipped without risk to the stack.
//!
//! Anything that cannot be read is an error with a message saying what was wrong; the caller
//! rejects the request (fail closed).

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};

use crate::json::{ObjectOnly, Str, optional_object};
use crate::settings::Settings;

/// The validation payload a Kubewarden host sends to `validate`.
#[derive(Debug, Deserialize)]
pub struct Payload<'a> {
    #[serde(borrow, default, deserialize_with = "optional_object")]
    pub request: Option<Request<'a>>,
    #[serde(default, deserialize_with = "optional_object")]
    pub settings: Option<Settings>,
}

/// The parts of an AdmissionRequest the rules look at.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Request<'a> {
    #[serde(borrow, default)]
    pub operation: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "optional_object")]
    pub kind: Option<GroupVersionKind<'a>>,
    #[serde(borrow, default)]
    pub name: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub namespace: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub sub_resource: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "optional_object")]
    pub object: Option<Object<'a>>,
    #[serde(borrow, default, deserialize_with = "optional_object")]
    pub old_object: Option<Object<'a>>,
}

#[derive(Debug, Default, Deserialize)]
pub struct GroupVersionKind<'a> {
    #[serde(borrow, default)]
    pub group: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub kind: Option<Str<'a>>,
}

/// A Kubernetes object, of which only the metadata is read.
#[derive(Debug, Default, Deserialize)]
pub struct Object<'a> {
    #[serde(borrow, default, deserialize_with = "optional_object")]
    pub metadata: Option<Metadata<'a>>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Metadata<'a> {
    #[serde(borrow, default)]
    pub name: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub namespace: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub labels: Option<Labels<'a>>,
    #[serde(borrow, default)]
    pub annotations: Option<Annotations<'a>>,
}

/// Parses a validation payload. Invalid UTF-8 is refused up front, so that serde_json also
/// checks the strings it skips; `null` and absent values both mean "none".
pub fn parse_payload(payload: &[u8]) -> Result<Payload<'_>, String> {
    let text = std::str::from_utf8(payload).map_err(|e| {
        format!(
            "the validation payload is not valid UTF-8 (invalid byte at offset {})",
            e.valid_up_to()
        )
    })?;
    serde_json::from_str(text)
        .map(|ObjectOnly(payload)| payload)
        .map_err(|e| format!("the admission request cannot be read: {e}"))
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
            .map_or(&EMPTY, |l| &l.0)
    }

    pub fn annotations(&self) -> &StringMap<'a> {
        self.metadata
            .as_ref()
            .and_then(|m| m.annotations.as_ref())
            .map_or(&EMPTY, |a| &a.0)
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

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[derive(Debug, Default)]
pub struct Labels<'a>(pub StringMap<'a>);
#[derive(Debug, Default)]
pub struct Annotations<'a>(pub StringMap<'a>);

impl<'de: 'a, 'a> Deserialize<'de> for Labels<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(StringMapVisitor("metadata.labels"))
            .map(Labels)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Annotations<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(StringMapVisitor("metadata.annotations"))
            .map(Annotations)
    }
}

struct StringMapVisitor(&'static str);

impl<'de> Visitor<'de> for StringMapVisitor {
    type Value = StringMap<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{} to be a map of strings to strings", self.0)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut entries: Vec<(Str<'de>, Str<'de>)> =
            Vec::with_capacity(map.size_hint().unwrap_or(8).min(64));
        while let Some(key) = map.next_key::<Str<'de>>()? {
            let value = map.next_value::<Option<Str<'de>>>().map_err(|e| {
                de::Error::custom(format_args!(
                    "{} {:?} must have a string value: {e}",
                    self.0, &*key
                ))
            })?;
            let value = value.ok_or_else(|| {
                de::Error::custom(format_args!(
                    "{} {:?} must have a string value, not null",
                    self.0, &*key
                ))
            })?;
            entries.push((key, value));
        }
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        if let Some(pair) = entries.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(de::Error::custom(format_args!(
                "{} has the key {:?} more than once",
                self.0, &*pair[0].0
            )));
        }
        Ok(StringMap(entries))
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
