//! Metadata lists in the API server's protobuf encoding, and only the fields the scan reads.
//!
//! Asked for `PartialObjectMetadataList` in protobuf, the API server encodes a page of
//! metadata several times faster than in JSON (Go's reflective JSON encoder is most of a list's
//! cost on the server), for built-in types and custom resources alike: a CRD's own objects have
//! no protobuf form, but the metadata list the server makes of them is a meta.k8s.io type
//! (apiextensions-apiserver `customresource_handler.go` keeps protobuf in the serializer it
//! negotiates transformed responses with). client-go's metadata client asks for it the same way.
//! Here the page is decoded with `prost` into messages that name only the fields the scan reads,
//! so everything else of an object's metadata (its `managedFields`, often most of it) is
//! skipped on the wire, never built.
//!
//! The field numbers are those of k8s.io/apimachinery `pkg/apis/meta/v1/generated.proto` and
//! `pkg/runtime/generated.proto` (stable since 1.0 for these; the protobuf encoding never
//! renumbers). A body opens with the four bytes `k8s\0` and holds a `runtime.Unknown` whose
//! `raw` is the list (`runtime/serializer/protobuf`).

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use prost::Message;

/// The media type the API server answers a protobuf request with.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// What a metadata page is asked for as: protobuf first; JSON where a server cannot encode
/// protobuf (an aggregated API built otherwise), as kube-rs asks for it.
pub const ACCEPT: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json";

const MAGIC: &[u8] = b"k8s\0";

/// runtime.Unknown: the envelope of every protobuf body.
#[derive(Clone, PartialEq, Message)]
struct Unknown {
    #[prost(bytes = "bytes", tag = "2")]
    raw: Bytes,
}

/// meta.v1.PartialObjectMetadataList.
#[derive(Clone, PartialEq, Message)]
struct List {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ListMeta>,
    #[prost(message, repeated, tag = "2")]
    items: Vec<Item>,
}

/// meta.v1.ListMeta: the continue token only.
#[derive(Clone, PartialEq, Message)]
struct ListMeta {
    #[prost(string, tag = "3")]
    continue_: String,
}

/// meta.v1.PartialObjectMetadata.
#[derive(Clone, PartialEq, Message)]
struct Item {
    #[prost(message, optional, tag = "1")]
    metadata: Option<Meta>,
}

/// meta.v1.ObjectMeta: what the owner model and the output read.
#[derive(Clone, PartialEq, Message)]
struct Meta {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(string, optional, tag = "3")]
    namespace: Option<String>,
    #[prost(string, optional, tag = "5")]
    uid: Option<String>,
    #[prost(string, optional, tag = "6")]
    resource_version: Option<String>,
    #[prost(btree_map = "string, string", tag = "11")]
    labels: BTreeMap<String, String>,
    #[prost(btree_map = "string, string", tag = "12")]
    annotations: BTreeMap<String, String>,
    #[prost(message, repeated, tag = "13")]
    owner_references: Vec<Ref>,
}

/// meta.v1.OwnerReference.
#[derive(Clone, PartialEq, Message)]
struct Ref {
    #[prost(string, tag = "5")]
    api_version: String,
    #[prost(string, tag = "1")]
    kind: String,
    #[prost(string, tag = "3")]
    name: String,
    #[prost(string, tag = "4")]
    uid: String,
    #[prost(bool, optional, tag = "6")]
    controller: Option<bool>,
    #[prost(bool, optional, tag = "7")]
    block_owner_deletion: Option<bool>,
}

/// meta.v1.Status: what a refusal says.
#[derive(Clone, PartialEq, Message)]
struct Status {
    #[prost(string, tag = "3")]
    message: String,
    #[prost(string, tag = "4")]
    reason: String,
    #[prost(int32, tag = "6")]
    code: i32,
}

fn unwrap(body: Bytes) -> Result<Bytes> {
    let Some(rest) = body.strip_prefix(MAGIC) else {
        bail!("the body does not open with the protobuf envelope's k8s\\0");
    };
    let rest = body.slice(body.len() - rest.len()..);
    Ok(Unknown::decode(rest)
        .context("the protobuf envelope (runtime.Unknown) cannot be decoded")?
        .raw)
}

/// A page: its objects' metadata and the continue token of the next page.
pub fn page(body: Bytes) -> Result<(Vec<ObjectMeta>, Option<String>)> {
    let list = List::decode(unwrap(body)?)
        .context("the PartialObjectMetadataList cannot be decoded from protobuf")?;
    let next = list.metadata.map(|m| m.continue_).filter(|t| !t.is_empty());
    let items = (list.items.into_iter())
        .map(|i| meta(i.metadata.unwrap_or_default()))
        .collect();
    Ok((items, next))
}

/// What a protobuf Status body says: `reason: message`, or `None` when it is none.
pub fn status(body: Bytes) -> Option<String> {
    let s = Status::decode(unwrap(body).ok()?).ok()?;
    (s.code != 0 || !s.message.is_empty()).then(|| format!("{}: {}", s.reason, s.message))
}

fn meta(m: Meta) -> ObjectMeta {
    let map = |m: BTreeMap<String, String>| (!m.is_empty()).then_some(m);
    let refs: Vec<OwnerReference> = (m.owner_references.into_iter())
        .map(|r| OwnerReference {
            api_version: r.api_version,
            kind: r.kind,
            name: r.name,
            uid: r.uid,
            controller: r.controller,
            block_owner_deletion: r.block_owner_deletion,
        })
        .collect();
    ObjectMeta {
        name: m.name,
        namespace: m.namespace,
        uid: m.uid,
        resource_version: m.resource_version,
        labels: map(m.labels),
        annotations: map(m.annotations),
        owner_references: (!refs.is_empty()).then_some(refs),
        ..ObjectMeta::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A full ObjectMeta as the API server encodes it, with fields the scan skips
    /// (generateName, generation, finalizers, managedFields).
    #[derive(Clone, PartialEq, Message)]
    struct FullMeta {
        #[prost(string, optional, tag = "1")]
        name: Option<String>,
        #[prost(string, optional, tag = "2")]
        generate_name: Option<String>,
        #[prost(string, optional, tag = "3")]
        namespace: Option<String>,
        #[prost(string, optional, tag = "5")]
        uid: Option<String>,
        #[prost(string, optional, tag = "6")]
        resource_version: Option<String>,
        #[prost(int64, optional, tag = "7")]
        generation: Option<i64>,
        #[prost(btree_map = "string, string", tag = "11")]
        labels: BTreeMap<String, String>,
        #[prost(btree_map = "string, string", tag = "12")]
        annotations: BTreeMap<String, String>,
        #[prost(message, repeated, tag = "13")]
        owner_references: Vec<Ref>,
        #[prost(string, repeated, tag = "14")]
        finalizers: Vec<String>,
        #[prost(bytes = "vec", repeated, tag = "17")]
        managed_fields: Vec<Vec<u8>>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct FullItem {
        #[prost(message, optional, tag = "1")]
        metadata: Option<FullMeta>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct FullList {
        #[prost(message, optional, tag = "1")]
        metadata: Option<ListMeta>,
        #[prost(message, repeated, tag = "2")]
        items: Vec<FullItem>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct Envelope {
        #[prost(bytes = "vec", tag = "2")]
        raw: Vec<u8>,
        #[prost(string, tag = "4")]
        content_type: String,
    }

    fn body(raw: Vec<u8>) -> Bytes {
        let mut out = MAGIC.to_vec();
        Envelope {
            raw,
            content_type: String::new(),
        }
        .encode(&mut out)
        .unwrap();
        Bytes::from(out)
    }

    #[test]
    fn a_page_keeps_what_the_scan_reads_and_skips_the_rest() {
        let item = FullMeta {
            name: Some("cm".into()),
            generate_name: Some("cm-".into()),
            namespace: Some("apps".into()),
            uid: Some("u1".into()),
            resource_version: Some("42".into()),
            generation: Some(3),
            labels: [("olm.owner".to_string(), "x.v1".to_string())].into(),
            annotations: [("a".to_string(), "b".to_string())].into(),
            owner_references: vec![Ref {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: "o".into(),
                uid: "u0".into(),
                controller: Some(true),
                block_owner_deletion: None,
            }],
            finalizers: vec!["f".into()],
            managed_fields: vec![vec![1, 2, 3]],
        };
        let list = FullList {
            metadata: Some(ListMeta {
                continue_: "token".into(),
            }),
            items: vec![
                FullItem {
                    metadata: Some(item),
                },
                FullItem { metadata: None },
            ],
        };
        let (items, next) = page(body(list.encode_to_vec())).unwrap();
        assert_eq!(next.as_deref(), Some("token"));
        assert_eq!(items.len(), 2);
        let m = &items[0];
        assert_eq!(
            (m.name.as_deref(), m.namespace.as_deref(), m.uid.as_deref()),
            (Some("cm"), Some("apps"), Some("u1"))
        );
        assert_eq!(m.resource_version.as_deref(), Some("42"));
        assert_eq!(m.labels.as_ref().unwrap()["olm.owner"], "x.v1");
        assert_eq!(m.annotations.as_ref().unwrap()["a"], "b");
        let r = &m.owner_references.as_ref().unwrap()[0];
        assert_eq!((r.kind.as_str(), r.controller), ("ConfigMap", Some(true)));
        assert_eq!(
            (
                m.generate_name.as_ref(),
                m.finalizers.as_ref(),
                m.managed_fields.as_ref()
            ),
            (None, None, None)
        );
        assert_eq!(items[1], ObjectMeta::default());
    }

    #[test]
    fn the_last_page_has_no_token() {
        let list = FullList {
            metadata: Some(ListMeta {
                continue_: String::new(),
            }),
            items: vec![],
        };
        assert_eq!(page(body(list.encode_to_vec())).unwrap(), (vec![], None));
    }

    #[test]
    fn what_is_not_a_page_is_an_error_not_a_panic() {
        for bad in [
            Bytes::from_static(b""),
            Bytes::from_static(b"{\"kind\":\"Status\"}"),
            Bytes::from_static(b"k8s\0\x12\xff\xff"),
            body(vec![0x12, 0x05, 0x01]),
        ] {
            assert!(page(bad).is_err());
        }
    }

    #[test]
    fn a_status_reads_as_its_reason_and_message() {
        let s = Status {
            message: "configmaps is forbidden".into(),
            reason: "Forbidden".into(),
            code: 403,
        };
        assert_eq!(
            status(body(s.encode_to_vec())).as_deref(),
            Some("Forbidden: configmaps is forbidden")
        );
        assert_eq!(status(Bytes::from_static(b"not protobuf")), None);
    }
}
