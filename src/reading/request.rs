//! Reading the validation payload: only what the owner rules need.
//!
//! The host sends `{"request": AdmissionRequest, "settings": ...}`, and the objects in it can
//! be megabytes (CRDs with large schemas, ConfigMaps with long values). Instead of building a
//! `serde_json::Value` of the whole request, we read small views that keep the request's
//! identity and the objects' `metadata.{name,namespace,labels,annotations}`, borrow strings
//! from the payload where they hold no escapes, and skip every other value by its structure
//! (`json`), without recursion. The objects are read in two steps. With the request, each
//! object's top-level keys and its metadata's keys are read, to find where its `name`,
//! `namespace`, `labels` and `annotations` are (everything else in the metadata, such as
//! `managedFields`, is skipped once, there); of a DELETE or CONNECT, whose rules read no
//! object, everything in the request after the operation is skipped in one pass. Those four
//! fields are read only when the rules ask for them (CREATE and UPDATE): the label and
//! annotation keys are compared, as they are read, with the few the settings name (`Wanted`),
//! and only the values of those are decoded and checked, straight into the caller's slots, so
//! nothing is collected per entry.
//!
//! Anything that cannot be read is an error with a message saying what was wrong; the caller
//! rejects the request (fail closed). `null` and absent values both mean "none".

use crate::reading::json::{Reader, Result, Str, same_bytes};

/// The validation payload a Kubewarden host sends to `validate`.
#[derive(Debug, Default)]
pub struct Payload<'a> {
    pub request: Option<Request<'a>>,
    /// The settings as sent (JSON); `admission` parses them, once per distinct value.
    pub settings: Option<&'a [u8]>,
    /// The payload's bytes, to read the objects' metadata from.
    pub input: &'a [u8],
}

/// The label and annotation keys the rules read, each with the slot its value goes to (see
/// `owner::Rules`).
#[derive(Debug, Clone, Copy)]
pub struct Wanted<'k> {
    pub labels: &'k [(String, usize)],
    pub annotations: &'k [(String, usize)],
    /// The first of three slots for the controller ownerReference's `apiVersion`, `kind`
    /// and `name`, when a rule reads it (`controller`); `None`: `ownerReferences` is skipped.
    pub controller: Option<usize>,
}

/// The parts of an AdmissionRequest the rules look at.
#[derive(Debug, Default, Clone)]
pub struct Request<'a> {
    pub operation: Option<Str<'a>>,
    pub kind: Option<GroupVersionKind<'a>>,
    pub name: Option<Str<'a>>,
    pub namespace: Option<Str<'a>>,
    pub sub_resource: Option<Str<'a>>,
    pub object: Option<Object>,
    pub old_object: Option<Object>,
    /// Where `userInfo` is: read only when an identity rule needs the writer.
    user_info: Option<usize>,
    /// Of a DELETE or CONNECT, where the fields after the operation start: they are skipped
    /// with the request, and read (`Payload::rest_of_request`) only when bindings judge a
    /// DELETE.
    rest: Option<usize>,
    /// The fields read so far (see `Seen`).
    seen: Seen,
}

/// Who makes the request: its `userInfo`, as the identity rules see it (a user, or a service
/// account by its `system:serviceaccount:NAMESPACE:NAME` username).
#[derive(Debug, Default)]
pub struct Writer<'a> {
    pub username: Option<Str<'a>>,
    pub groups: Vec<Str<'a>>,
}

/// The prefix of a service account's username.
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

impl Writer<'_> {
    pub fn username(&self) -> &str {
        self.username.as_deref().unwrap_or("")
    }

    /// `(namespace, name)` when the writer is a service account.
    pub fn service_account(&self) -> Option<(&str, &str)> {
        let rest = self.username().strip_prefix(SERVICE_ACCOUNT_PREFIX)?;
        let (namespace, name) = split_at_byte(rest, b':')?;
        let valid = !namespace.is_empty() && !name.is_empty() && !name.bytes().any(|b| b == b':');
        valid.then_some((namespace, name))
    }
}

/// `s` split at the first `byte` (ASCII), without it. A loop over the bytes, not
/// `str::split_once`, whose searcher costs kilobytes of module.
pub fn split_at_byte(s: &str, byte: u8) -> Option<(&str, &str)> {
    let at = s.bytes().position(|b| b == byte)?;
    // An ASCII byte is a character boundary on both sides.
    Some((s.get(..at)?, s.get(at + 1..)?))
}

#[derive(Debug, Default, Clone)]
pub struct GroupVersionKind<'a> {
    pub group: Option<Str<'a>>,
    pub kind: Option<Str<'a>>,
}

/// A Kubernetes object, of which only the metadata is read (see `Payload::metadata`).
#[derive(Debug, Default, Clone)]
pub struct Object {
    /// Where its metadata's fields are, unless it has no metadata or it is null.
    pub(crate) metadata: Option<MetadataAt>,
    /// Where the object is in the payload (its `{` to after its `}`), and where its
    /// `metadata` value starts when there is one (an object or `null`): for stamping.
    pub(crate) span: (usize, usize),
    pub(crate) metadata_value: Option<usize>,
}

/// Where the fields of an object's metadata that the rules read start, found with the
/// request; what they hold is checked only when they are read.
#[derive(Debug, Default, Clone)]
pub(crate) struct MetadataAt {
    name: Option<usize>,
    namespace: Option<usize>,
    pub(crate) labels: Option<usize>,
    pub(crate) annotations: Option<usize>,
    owner_references: Option<usize>,
    /// The first of these fields found twice, and where: refused when the metadata is read
    /// (with a duplicate, the last value must not win silently).
    duplicate: Option<(&'static str, usize)>,
}

/// An object's name and namespace (its wanted labels and annotations go to the caller's
/// slots, see `Payload::metadata`).
#[derive(Debug, Default)]
pub struct Metadata<'a> {
    pub name: Option<Str<'a>>,
    pub namespace: Option<Str<'a>>,
}

/// Parses a validation payload.
pub fn parse_payload(payload: &[u8]) -> std::result::Result<Payload<'_>, String> {
    let mut out = Payload::default();
    read_payload(payload, &mut out).map(|()| out)
}

/// Parses a validation payload into `out`, in place (see `read_nullable`).
pub fn read_payload<'a>(
    payload: &'a [u8],
    out: &mut Payload<'a>,
) -> std::result::Result<(), String> {
    out.input = payload;
    let mut reader = Reader::new(payload);
    let mut seen = Seen::default();
    let read = reader
        .object("the validation payload", |r, key| match key {
            b"request" => {
                seen.once(r, 0, "request")?;
                read_nullable(r, &mut out.request, read_request)
            }
            b"settings" => {
                seen.once(r, 1, "settings")?;
                out.settings = Some(r.raw_value()?);
                Ok(())
            }
            _ => r.skip_value(),
        })
        .and_then(|()| reader.end());
    read.map_err(|e| format!("the admission request cannot be read: {e}"))
}

/// The fields of one object read so far, one bit each (the `n`th field read of an object
/// is bit `n`; an object has at most eight), to refuse a second occurrence of a field: with
/// duplicate keys, the last value must not win silently.
#[derive(Debug, Default, Clone, Copy)]
struct Seen(u8);

impl Seen {
    #[inline(always)]
    fn once(&mut self, r: &Reader, n: u8, field: &str) -> Result<()> {
        let bit = 1 << n;
        if self.0 & bit != 0 {
            return Err(r.error(format!("duplicate field `{field}`")));
        }
        self.0 |= bit;
        Ok(())
    }
}

/// Reads a value that may be `null` into `slot`, in place: the views are filled where they
/// live rather than returned and moved (moves of large values cost a `memory.copy` each in
/// WebAssembly).
fn read_nullable<'a, T: Default>(
    r: &mut Reader<'a>,
    slot: &mut Option<T>,
    read: impl FnOnce(&mut Reader<'a>, &mut T) -> Result<()>,
) -> Result<()> {
    if r.null()? {
        *slot = None;
        Ok(())
    } else {
        read(r, slot.insert(T::default()))
    }
}

fn string<'a>(r: &mut Reader<'a>, slot: &mut Option<Str<'a>>, what: &'static str) -> Result<()> {
    *slot = if r.null()? {
        None
    } else {
        Some(r.string_value(|| what.to_string())?)
    };
    Ok(())
}

fn read_request<'a>(r: &mut Reader<'a>, out: &mut Request<'a>) -> Result<()> {
    r.object("request", |r, key| request_field(r, key, out, true))
}

/// Reads one field of the request; with `skip_after_delete`, the fields after a DELETE's or
/// CONNECT's operation are skipped.
fn request_field<'a>(
    r: &mut Reader<'a>,
    key: &[u8],
    out: &mut Request<'a>,
    skip_after_delete: bool,
) -> Result<()> {
    let seen = &mut out.seen;
    match key {
        b"operation" => {
            seen.once(r, 0, "operation")?;
            string(r, &mut out.operation, "request.operation")?;
            // The label rules read nothing else of a DELETE or CONNECT: the rest of the
            // request is only skipped, by its structure (policy-server writes the objects
            // after the operation), and read again only when bindings judge a DELETE.
            if skip_after_delete && matches!(out.operation.as_deref(), Some("DELETE" | "CONNECT")) {
                out.rest = Some(r.position());
                r.skip_rest_of_object()?;
            }
            Ok(())
        }
        b"kind" => {
            seen.once(r, 1, "kind")?;
            read_nullable(r, &mut out.kind, read_gvk)
        }
        b"name" => {
            seen.once(r, 2, "name")?;
            string(r, &mut out.name, "request.name")
        }
        b"namespace" => {
            seen.once(r, 3, "namespace")?;
            string(r, &mut out.namespace, "request.namespace")
        }
        b"subResource" => {
            seen.once(r, 4, "subResource")?;
            string(r, &mut out.sub_resource, "request.subResource")
        }
        b"object" => {
            seen.once(r, 5, "object")?;
            read_nullable(r, &mut out.object, |r, o| {
                read_object(r, o, "request.object")
            })
        }
        b"oldObject" => {
            seen.once(r, 6, "oldObject")?;
            read_nullable(r, &mut out.old_object, |r, o| {
                read_object(r, o, "request.oldObject")
            })
        }
        b"userInfo" => {
            seen.once(r, 7, "userInfo")?;
            r.peek();
            out.user_info = Some(r.position());
            r.skip_value()
        }
        _ => r.skip_value(),
    }
}

fn read_user_info<'a>(r: &mut Reader<'a>, out: &mut Writer<'a>) -> Result<()> {
    let mut seen = Seen::default();
    r.object("request.userInfo", |r, key| match key {
        b"username" => {
            seen.once(r, 0, "username")?;
            string(r, &mut out.username, "request.userInfo.username")
        }
        b"groups" => {
            seen.once(r, 1, "groups")?;
            if r.null()? {
                return Ok(());
            }
            r.elements("request.userInfo.groups", |r| {
                let group = r.string_value(|| "each of request.userInfo.groups".into())?;
                out.groups.push(group);
                Ok(())
            })
        }
        _ => r.skip_value(),
    })
}

fn read_gvk<'a>(r: &mut Reader<'a>, out: &mut GroupVersionKind<'a>) -> Result<()> {
    let mut seen = Seen::default();
    r.object("request.kind", |r, key| match key {
        b"group" => {
            seen.once(r, 0, "group")?;
            string(r, &mut out.group, "request.kind.group")
        }
        b"kind" => {
            seen.once(r, 1, "kind")?;
            string(r, &mut out.kind, "request.kind.kind")
        }
        _ => r.skip_value(),
    })
}

/// Reads an object's top-level keys, and its metadata's: where the fields the rules read are.
/// Every other value is skipped.
fn read_object(r: &mut Reader, out: &mut Object, what: &'static str) -> Result<()> {
    let mut seen = Seen::default();
    r.peek();
    let start = r.position();
    r.object(what, |r, key| match key {
        b"metadata" => {
            seen.once(r, 0, "metadata")?;
            r.peek();
            out.metadata_value = Some(r.position());
            match r.peek() {
                Some(b'{') => locate_metadata(r, out.metadata.insert(MetadataAt::default())),
                Some(b'n') => r.null().map(drop),
                _ => {
                    let found = r.found();
                    Err(r.error(format!("metadata must be a JSON object, not {found}")))
                }
            }
        }
        _ => r.skip_value(),
    })?;
    out.span = (start, r.position());
    Ok(())
}

fn locate_metadata(r: &mut Reader, out: &mut MetadataAt) -> Result<()> {
    r.object("metadata", |r, key| {
        let (slot, field) = match key {
            b"name" => (&mut out.name, "name"),
            b"namespace" => (&mut out.namespace, "namespace"),
            b"labels" => (&mut out.labels, "labels"),
            b"annotations" => (&mut out.annotations, "annotations"),
            b"ownerReferences" => (&mut out.owner_references, "ownerReferences"),
            _ => return r.skip_value(),
        };
        r.peek();
        if slot.replace(r.position()).is_some() {
            out.duplicate.get_or_insert((field, r.position()));
        }
        r.skip_value()
    })
}

/// A label or annotation map (or `null`): every value a string. For each `(key, i)` of
/// `keys`, `values[i]` gets the value of `key`, its escapes decoded and its characters
/// checked; the other values are only skipped. A key the rules read must be there once: with
/// a duplicate, the last value must not win silently.
fn read_string_map<'a>(
    r: &mut Reader<'a>,
    what: &'static str,
    keys: &[(String, usize)],
    values: &mut [Option<Str<'a>>],
) -> Result<()> {
    match r.peek() {
        Some(b'{') => {}
        Some(b'n') => return r.null().map(drop),
        _ => {
            let found = r.found();
            return Err(r.error(format!(
                "{what} must be a map of strings to strings, not {found}"
            )));
        }
    }
    r.entries(what, |r, key| {
        if r.peek() != Some(b'"') {
            if r.peek().is_none() {
                return Err(r.error("unexpected end of input (truncated JSON)"));
            }
            let found = r.found();
            let key = String::from_utf8_lossy(key.raw);
            return Err(r.error(format!("{what} {key:?} must be a string, not {found}")));
        }
        let decoded;
        let name = if key.escaped {
            decoded = r.string_at(key.at)?;
            decoded.as_bytes()
        } else {
            key.raw
        };
        // A key may fill more than one slot (the owner kind label is often an owner label
        // too); its value is read once, and a value no slot wants is only skipped.
        let mut value = None;
        for (wanted, i) in keys {
            if !same_bytes(name, wanted.as_bytes()) {
                continue;
            }
            let Some(slot) = values.get_mut(*i) else {
                continue;
            };
            if slot.is_some() {
                return Err(r.error(format!("{what} has the key {wanted:?} more than once")));
            }
            if value.is_none() {
                let read = r.string_value(String::new);
                value = Some(read.map_err(|e| e.context(format_args!("{what} {wanted:?}")))?);
            }
            *slot = value.clone();
        }
        if value.is_none() {
            r.skip_string_span()?;
        }
        Ok(())
    })
}

impl<'a> Payload<'a> {
    /// Reads who makes the request; a request without `userInfo` names no one.
    pub fn user_info(&self, request: &Request) -> std::result::Result<Writer<'a>, String> {
        let mut out = Writer::default();
        if let Some(at) = request.user_info {
            let mut r = Reader::new(self.input);
            r.seek(at);
            let read = match r.null() {
                Ok(true) => Ok(()),
                Ok(false) => read_user_info(&mut r, &mut out),
                Err(e) => Err(e),
            };
            read.map_err(|e| format!("the admission request cannot be read: {e}"))?;
        }
        Ok(out)
    }

    /// The whole request of a DELETE or CONNECT, whose fields after the operation were
    /// skipped with the request: `request` with those fields read too.
    pub fn rest_of_request(
        &self,
        request: &Request<'a>,
    ) -> std::result::Result<Request<'a>, String> {
        let mut full = request.clone();
        if let Some(at) = full.rest.take() {
            let mut r = Reader::new(self.input);
            r.seek(at);
            r.rest_of_object("request", |r, key| request_field(r, key, &mut full, false))
                .map_err(|e| format!("the admission request cannot be read: {e}"))?;
        }
        Ok(full)
    }

    /// Reads an object's metadata: its name and namespace, and into `values` the values of
    /// the `wanted` labels and annotations. Only the rules of CREATE and UPDATE need it. An
    /// object without metadata has none of it.
    pub fn metadata(
        &self,
        object: &Object,
        wanted: Wanted,
        values: &mut [Option<Str<'a>>],
    ) -> std::result::Result<Metadata<'a>, String> {
        let mut metadata = Metadata::default();
        if let Some(at) = &object.metadata {
            read_metadata(
                &mut Reader::new(self.input),
                at,
                &mut metadata,
                wanted,
                values,
            )
            .map_err(|e| format!("the admission request cannot be read: {e}"))?;
        }
        Ok(metadata)
    }
}

fn read_metadata<'a>(
    r: &mut Reader<'a>,
    at: &MetadataAt,
    out: &mut Metadata<'a>,
    wanted: Wanted,
    values: &mut [Option<Str<'a>>],
) -> Result<()> {
    if let Some((field, pos)) = at.duplicate {
        r.seek(pos);
        return Err(r.error(format!("duplicate field `{field}`")));
    }
    if let Some(pos) = at.name {
        r.seek(pos);
        string(r, &mut out.name, "metadata.name")?;
    }
    if let Some(pos) = at.namespace {
        r.seek(pos);
        string(r, &mut out.namespace, "metadata.namespace")?;
    }
    if let Some(pos) = at.labels {
        r.seek(pos);
        read_string_map(r, "metadata.labels", wanted.labels, values)?;
    }
    if let Some(pos) = at.annotations {
        r.seek(pos);
        read_string_map(r, "metadata.annotations", wanted.annotations, values)?;
    }
    if let (Some(pos), Some(first)) = (at.owner_references, wanted.controller) {
        r.seek(pos);
        read_controller(r, first, values)?;
    }
    Ok(())
}

/// The `apiVersion`, `kind` and `name` of the ownerReference with `controller: true` (the
/// API server allows one) into `values[first..first + 3]`; the other references are only
/// skipped, and so is every other field.
fn read_controller<'a>(
    r: &mut Reader<'a>,
    first: usize,
    values: &mut [Option<Str<'a>>],
) -> Result<()> {
    const WHAT: &str = "metadata.ownerReferences";
    if r.null()? {
        return Ok(());
    }
    let mut found = false;
    r.elements(WHAT, |r| {
        let mut fields: [Option<Str<'a>>; 3] = Default::default();
        let mut controller = false;
        r.object(WHAT, |r, key| {
            let i = match key {
                b"apiVersion" => 0,
                b"kind" => 1,
                b"name" => 2,
                b"controller" => {
                    controller = match r.raw_value()? {
                        b"true" => true,
                        b"false" | b"null" => false,
                        _ => return Err(r.error(format!("{WHAT}[].controller must be a boolean"))),
                    };
                    return Ok(());
                }
                _ => return r.skip_value(),
            };
            let value = r.string_value(|| format!("{WHAT}[] field"))?;
            fields[i] = Some(value);
            Ok(())
        })?;
        if !controller {
            return Ok(());
        }
        if std::mem::replace(&mut found, true) {
            return Err(r.error(format!("{WHAT} has more than one controller")));
        }
        for (i, field) in fields.into_iter().enumerate() {
            if let Some(slot) = values.get_mut(first + i) {
                *slot = field;
            }
        }
        Ok(())
    })
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

    /// The subresource written (`status`, `scale`), if any.
    pub fn sub_resource(&self) -> Option<&str> {
        self.sub_resource.as_deref().filter(|s| !s.is_empty())
    }

    /// The request's name of the object (empty for a CREATE with `generateName`).
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads the new object's metadata with `labels` wanted, into slots `0..labels.len()`.
    fn labels<'a>(
        p: &Payload<'a>,
        labels: &[&str],
    ) -> std::result::Result<(Metadata<'a>, Vec<Option<Str<'a>>>), String> {
        let object = p.request.as_ref().and_then(|r| r.object.as_ref()).unwrap();
        let keys: Vec<(String, usize)> = labels.iter().map(|k| k.to_string()).zip(0..).collect();
        let mut values = vec![None; labels.len()];
        let wanted = Wanted {
            labels: &keys,
            annotations: &[],
            controller: None,
        };
        let metadata = p.metadata(object, wanted, &mut values)?;
        Ok((metadata, values))
    }

    /// A label of the request's new object.
    fn label<'a>(p: &Payload<'a>, key: &str) -> std::result::Result<Option<Str<'a>>, String> {
        Ok(labels(p, &[key])?.1.pop().flatten())
    }

    #[test]
    fn reads_only_what_it_needs_and_borrows() {
        let payload = br#"{"settings":{},"request":{"uid":"1","operation":"UPDATE",
            "kind":{"group":"","version":"v1","kind":"ConfigMap"},"namespace":"ns","name":"cm",
            "object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","labels":
            {"b":"2","a":"1"},"managedFields":[{"x":[[[{"y":1.5e3}]]]}]},"data":{"k":"v\n"}},
            "oldObject":null,"dryRun":false}}"#;
        let p = parse_payload(payload).unwrap();
        let r = p.request.as_ref().unwrap();
        assert_eq!(r.operation(), "UPDATE");
        assert_eq!(r.kind(), "ConfigMap");
        assert!(!r.is_cluster_scoped());
        assert_eq!(label(&p, "a").unwrap().as_deref(), Some("1"));
        assert_eq!(label(&p, "b").unwrap().as_deref(), Some("2"));
        assert_eq!(label(&p, "c").unwrap(), None);
        let (metadata, both) = labels(&p, &["b", "c", "a"]).unwrap();
        assert_eq!(metadata.name.as_deref(), Some("cm"));
        assert_eq!(
            both.into_iter()
                .map(|v| v.map(|s| s.to_string()))
                .collect::<Vec<_>>(),
            [Some("2".into()), None, Some("1".into())]
        );
        assert!(matches!(
            label(&p, "a").unwrap().unwrap().0,
            std::borrow::Cow::Borrowed(_)
        ));
        // An annotation wanted, on an object without annotations.
        let keys = [("a".to_string(), 0)];
        let mut values = [None];
        let wanted = Wanted {
            labels: &[],
            annotations: &keys,
            controller: None,
        };
        p.metadata(r.object.as_ref().unwrap(), wanted, &mut values)
            .unwrap();
        assert_eq!(values, [None]);
        assert!(r.old_object.is_none());
        assert_eq!(p.settings, Some(&b"{}"[..]));
    }

    #[test]
    fn escaped_strings_are_decoded() {
        let p =
            parse_payload(br#"{"request":{"object":{"metadata":{"labels":{"k\u0041":"v\"1"}}}}}"#)
                .unwrap();
        assert_eq!(label(&p, "kA").unwrap().as_deref(), Some("v\"1"));
    }

    #[test]
    fn a_value_is_checked_when_it_is_read() {
        let p = parse_payload(
            br#"{"request":{"object":{"metadata":{"labels":{"a":"\ud800","b":"ok","c":"x","c":"y"}}}}}"#,
        )
        .unwrap();
        assert_eq!(label(&p, "b").unwrap().as_deref(), Some("ok"));
        let e = label(&p, "a").unwrap_err();
        assert!(
            e.contains(r#"metadata.labels "a": invalid \u escape: a lone high surrogate"#),
            "{e}"
        );
        let e = label(&p, "c").unwrap_err();
        assert!(
            e.contains(r#"metadata.labels has the key "c" more than once"#),
            "{e}"
        );
    }

    #[test]
    fn metadata_is_read_only_when_asked() {
        // Labels that are not strings: found when the metadata is read, not before.
        let p =
            parse_payload(br#"{"request":{"object":{"metadata":{"labels":{"d":7}}}}}"#).unwrap();
        assert!(
            labels(&p, &[])
                .unwrap_err()
                .contains(r#"metadata.labels "d" must be a string, not a number"#)
        );
        // The object's own structure, and where its metadata is, are read with the request.
        let e = parse_payload(br#"{"request":{"object":{"metadata":"x"}}}"#).unwrap_err();
        assert!(
            e.contains("metadata must be a JSON object, not a string"),
            "{e}"
        );
        let e =
            parse_payload(br#"{"request":{"object":{"metadata":{},"metadata":{}}}}"#).unwrap_err();
        assert!(e.contains("duplicate field `metadata`"), "{e}");
        let e = parse_payload(br#"{"request":{"object":{"metadata":{"labels":[}}}}"#).unwrap_err();
        assert!(e.contains("mismatched brackets"), "{e}");
    }

    #[test]
    fn metadata_fields_are_located_with_the_request_and_checked_when_read() {
        // A field twice: found with the request, refused when the metadata is read.
        let p = parse_payload(
            br#"{"request":{"object":{"metadata":{"labels":{},"uid":"u","labels":{"a":"b"}}}}}"#,
        )
        .unwrap();
        let e = labels(&p, &["a"]).unwrap_err();
        assert!(e.contains("duplicate field `labels`"), "{e}");
        // What the rules do not read in the metadata is skipped with the request, once.
        let p = parse_payload(
            br#"{"request":{"object":{"metadata":{"managedFields":[{"f:x":{".":{}}}],
            "name":7,"labels":{"a":"b"}}}}}"#,
        )
        .unwrap();
        let e = labels(&p, &["a"]).unwrap_err();
        assert!(
            e.contains("metadata.name must be a string, not a number"),
            "{e}"
        );
        let e = parse_payload(br#"{"request":{"object":{"metadata":{"managedFields":[}}}}"#)
            .unwrap_err();
        assert!(e.contains("mismatched brackets"), "{e}");
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
        assert_eq!(label(&p, "a").unwrap().as_deref(), Some("b"));
    }
}
