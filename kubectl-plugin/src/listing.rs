//! Listing every object of every listable type, metadata only, page by page.
//!
//! Only metadata is read (`PartialObjectMetadataList`: the API server strips specs and
//! statuses, so a scan of Secrets and large CRs moves names and labels, not payloads; in
//! protobuf, see `protobuf`), in pages
//! (`limit`/`continue`), several types at once up to a bound. A type that cannot be listed
//! (forbidden, an aggregated API that fails, an expired continue token) is reported and
//! skipped. The source of pages is a trait, so that the scan runs in tests without a cluster.

use std::future::Future;
use std::sync::Arc;

use anyhow::{Context, Result};
use futures::stream::{self, StreamExt};
use http::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta};
use kube::Resource;
use kube::api::{DynamicObject, ListParams};

use crate::discovery::{ResourceType, Skipped};
use crate::progress::Progress;
use crate::protobuf;

/// Objects per page: the API server's own default page for kubectl is 500.
pub const PAGE_SIZE: u32 = 500;
/// Types listed at once.
pub const CONCURRENCY: usize = 8;

/// One page of a type's objects.
#[derive(Debug, Clone, Default)]
pub struct Page {
    pub items: Vec<ObjectMeta>,
    /// The continue token of the next page; `None`: this was the last.
    pub next: Option<String>,
}

/// The API server forgot a continue token (410 Gone: the list's snapshot was compacted away
/// during a long scan): the type is listed again from its first page.
#[derive(Debug)]
pub struct Expired;

impl std::fmt::Display for Expired {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the continue token expired (410 Gone)")
    }
}

impl std::error::Error for Expired {}

/// How many times a type is listed again after its continue token expired.
const RELISTS: usize = 2;

/// Lists metadata of one type, page by page.
pub trait MetadataSource: Sync {
    fn page(
        &self,
        ty: &ResourceType,
        namespace: Option<&str>,
        token: Option<&str>,
        limit: u32,
    ) -> impl Future<Output = Result<Page>> + Send;
}

/// The API server, through kube-rs's client: the request `Api::list_metadata` makes, asking
/// for protobuf first (`crate::protobuf`), JSON where a server only has that.
pub struct Kube(pub kube::Client);

impl MetadataSource for Kube {
    async fn page(
        &self,
        ty: &ResourceType,
        namespace: Option<&str>,
        token: Option<&str>,
        limit: u32,
    ) -> Result<Page> {
        let ar = ty.api_resource();
        let ns = namespace.filter(|_| ty.namespaced);
        let mut params = ListParams::default().limit(limit);
        if let Some(token) = token {
            params = params.continue_token(token);
        }
        let mut request =
            kube::core::Request::new(DynamicObject::url_path(&ar, ns)).list_metadata(&params)?;
        (request.headers_mut()).insert(ACCEPT, HeaderValue::from_static(protobuf::ACCEPT));
        let response = self.0.send(request.map(kube::client::Body::from)).await?;
        let status = response.status();
        let is_protobuf = (response.headers().get(CONTENT_TYPE))
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with(protobuf::MEDIA_TYPE));
        let body = response.into_body().collect_bytes().await?;
        answer(status, is_protobuf, body, token.is_some())
    }
}

/// A page from the API server's answer: its status, whether the body is protobuf, the body,
/// and whether the request carried a continue token (a 410 then is an expired token).
fn answer(
    status: http::StatusCode,
    is_protobuf: bool,
    body: bytes::Bytes,
    continued: bool,
) -> Result<Page> {
    if !status.is_success() {
        if status.as_u16() == 410 && continued {
            return Err(Expired.into());
        }
        let said = match is_protobuf {
            true => protobuf::status(body),
            false => serde_json::from_slice::<kube::core::Status>(&body)
                .ok()
                .map(|s| format!("{}: {}", s.reason, s.message)),
        };
        anyhow::bail!(
            "the API server answered {status}{}",
            said.map(|s| format!(" ({s})")).unwrap_or_default()
        );
    }
    let (items, next) = match is_protobuf {
        true => protobuf::page(body)?,
        false => {
            let list: JsonPage = serde_json::from_slice(&body)
                .context("the PartialObjectMetadataList cannot be decoded from JSON")?;
            let items = list.items.into_iter().map(|i| i.metadata).collect();
            (items, list.metadata.continue_)
        }
    };
    Ok(Page {
        items,
        next: next.filter(|t| !t.is_empty()),
    })
}

/// A metadata page in JSON (a server without protobuf).
#[derive(serde::Deserialize)]
struct JsonPage {
    #[serde(default)]
    metadata: ListMeta,
    #[serde(default)]
    items: Vec<JsonItem>,
}

#[derive(serde::Deserialize)]
struct JsonItem {
    #[serde(default)]
    metadata: ObjectMeta,
}

/// An object listed: its type and metadata.
#[derive(Debug, Clone)]
pub struct Listed {
    pub ty: Arc<ResourceType>,
    pub meta: ObjectMeta,
}

/// Where the objects of each page go as it arrives. A bounded channel to the judging thread
/// (the scan): listing waits while it is full, so the pages in flight bound the memory.
pub trait Sink: Sync {
    fn take(&self, page: Vec<Listed>) -> impl Future<Output = ()> + Send;
}

impl Sink for tokio::sync::mpsc::Sender<Vec<Listed>> {
    async fn take(&self, page: Vec<Listed>) {
        // A closed channel: the scan stopped judging; nothing more is wanted.
        let _ = self.send(page).await;
    }
}

/// Lists all objects of `types` (in `namespace`, or everywhere; cluster-scoped types are
/// left out when a namespace is given), page by page, and hands each object `keep` wants to
/// `sink` as its page arrives (nothing of a page is kept here). Returns what could not be
/// listed. A type listed again after its continue token expired hands its objects over again
/// (the sink sees them twice, with the same uid); a type that fails part way has handed over
/// the pages before, and is reported.
pub async fn list_all<S: MetadataSource>(
    source: &S,
    types: &[ResourceType],
    namespace: Option<&str>,
    keep: &(dyn Fn(&ObjectMeta) -> bool + Sync),
    sink: &impl Sink,
    progress: &Progress,
) -> Vec<Skipped> {
    let types: Vec<Arc<ResourceType>> = (types.iter())
        .filter(|t| namespace.is_none() || t.namespaced)
        .cloned()
        .map(Arc::new)
        .collect();
    progress.types(types.len());
    let mut results: Vec<_> = stream::iter(types.into_iter().enumerate())
        .map(|(i, ty)| async move {
            let listed = list_type(source, &ty, namespace, keep, sink, progress).await;
            progress.type_done();
            (i, ty, listed)
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    results.sort_by_key(|(i, ..)| *i);
    (results.into_iter())
        .filter_map(|(_, ty, listed)| {
            listed.err().map(|e| Skipped {
                what: ty.qualified(),
                reason: format!("cannot be listed: {e:#}"),
            })
        })
        .collect()
}

async fn list_type<S: MetadataSource>(
    source: &S,
    ty: &Arc<ResourceType>,
    namespace: Option<&str>,
    keep: &(dyn Fn(&ObjectMeta) -> bool + Sync),
    sink: &impl Sink,
    progress: &Progress,
) -> Result<()> {
    let mut relists = 0;
    'list: loop {
        let mut token: Option<String> = None;
        loop {
            let page = match source
                .page(ty, namespace, token.as_deref(), PAGE_SIZE)
                .await
            {
                Ok(page) => page,
                Err(e) if e.is::<Expired>() && relists < RELISTS => {
                    relists += 1;
                    continue 'list;
                }
                Err(e) => return Err(e),
            };
            progress.objects(page.items.len());
            let kept: Vec<Listed> = (page.items.into_iter())
                .filter(|m| keep(m))
                .map(|meta| Listed {
                    ty: ty.clone(),
                    meta: slim(meta),
                })
                .collect();
            if !kept.is_empty() {
                sink.take(kept).await;
            }
            match page.next {
                Some(next) => token = Some(next),
                None => return Ok(()),
            }
        }
    }
}

/// What the scan reads of a kept object's metadata, and nothing else: its `managedFields`,
/// often most of the metadata, would otherwise stay in memory with every owned object.
fn slim(meta: ObjectMeta) -> ObjectMeta {
    ObjectMeta {
        name: meta.name,
        namespace: meta.namespace,
        uid: meta.uid,
        resource_version: meta.resource_version,
        labels: meta.labels,
        annotations: meta.annotations,
        owner_references: meta.owner_references,
        ..ObjectMeta::default()
    }
}

#[cfg(test)]
pub mod tests {
    use std::collections::BTreeMap;

    use super::*;

    struct Collect(std::sync::Mutex<Vec<Listed>>);

    impl Sink for Collect {
        async fn take(&self, page: Vec<Listed>) {
            self.0.lock().unwrap().extend(page);
        }
    }

    /// Lists into a vector.
    async fn collect<S: MetadataSource>(
        source: &S,
        types: &[ResourceType],
        namespace: Option<&str>,
    ) -> (Vec<Listed>, Vec<Skipped>) {
        let out = Collect(Default::default());
        let skipped = list_all(
            source,
            types,
            namespace,
            &|_| true,
            &out,
            &Progress::hidden(),
        )
        .await;
        (out.0.into_inner().unwrap(), skipped)
    }
    use crate::discovery::tests::ty;

    /// Pages of objects by type plural; a type listed in `failing` answers with an error.
    #[derive(Default)]
    pub struct Fake {
        pub objects: BTreeMap<String, Vec<ObjectMeta>>,
        pub failing: Vec<String>,
        pub page_size: usize,
        /// How many continue tokens expire before one is honoured.
        pub expiring: std::sync::atomic::AtomicUsize,
    }

    impl MetadataSource for Fake {
        async fn page(
            &self,
            ty: &ResourceType,
            namespace: Option<&str>,
            token: Option<&str>,
            _limit: u32,
        ) -> Result<Page> {
            if self.failing.contains(&ty.plural) {
                anyhow::bail!("{} is forbidden", ty.plural);
            }
            let all: Vec<ObjectMeta> = (self.objects.get(&ty.plural).into_iter().flatten())
                .filter(|m| namespace.is_none() || m.namespace.as_deref() == namespace)
                .cloned()
                .collect();
            use std::sync::atomic::Ordering;
            if token.is_some()
                && (self.expiring)
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_ok()
            {
                return Err(Expired.into());
            }
            let start: usize = token.map(|t| t.parse()).transpose()?.unwrap_or(0);
            let size = self.page_size.max(1);
            let end = (start + size).min(all.len());
            Ok(Page {
                items: all.get(start..end).unwrap_or_default().to_vec(),
                next: (end < all.len()).then(|| end.to_string()),
            })
        }
    }

    pub fn meta(ns: Option<&str>, name: &str, labels: &[(&str, &str)]) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.into()),
            namespace: ns.map(Into::into),
            uid: Some(format!("uid-{}-{name}", ns.unwrap_or(""))),
            labels: Some(
                (labels.iter())
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn a_json_answer_is_read_as_a_protobuf_one_is() {
        let body = br#"{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1",
            "metadata":{"continue":"next"},"items":[{"metadata":{"name":"a","namespace":"x",
            "labels":{"olm.owner":"c.v1"},"managedFields":[{"manager":"m"}]}}]}"#;
        let page = answer(
            http::StatusCode::OK,
            false,
            bytes::Bytes::from_static(body),
            false,
        )
        .unwrap();
        assert_eq!(page.next.as_deref(), Some("next"));
        assert_eq!(page.items[0].name.as_deref(), Some("a"));
        assert_eq!(page.items[0].labels.as_ref().unwrap()["olm.owner"], "c.v1");
        let last = br#"{"metadata":{"continue":""},"items":[]}"#;
        let page = answer(
            http::StatusCode::OK,
            false,
            bytes::Bytes::from_static(last),
            true,
        )
        .unwrap();
        assert_eq!((page.items.len(), page.next), (0, None));
    }

    #[test]
    fn a_refusal_says_what_the_api_server_said_and_a_410_after_a_token_is_an_expiry() {
        let body = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden",
            "message":"secrets is forbidden: User \"x\" cannot list resource \"secrets\"","code":403}"#;
        let e = answer(
            http::StatusCode::FORBIDDEN,
            false,
            bytes::Bytes::from_static(body),
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("403") && e.contains("Forbidden: secrets is forbidden"),
            "{e}"
        );
        let gone = bytes::Bytes::from_static(b"{}");
        assert!(
            answer(http::StatusCode::GONE, false, gone.clone(), true)
                .unwrap_err()
                .is::<Expired>()
        );
        assert!(
            !answer(http::StatusCode::GONE, false, gone, false)
                .unwrap_err()
                .is::<Expired>()
        );
        // Not a page: an error, not a panic.
        assert!(
            answer(
                http::StatusCode::OK,
                false,
                bytes::Bytes::from_static(b"[1"),
                false
            )
            .is_err()
        );
        assert!(
            answer(
                http::StatusCode::OK,
                true,
                bytes::Bytes::from_static(b"k8s"),
                false
            )
            .is_err()
        );
    }

    #[tokio::test]
    async fn every_page_is_read_and_a_failing_type_is_skipped() {
        let mut fake = Fake {
            page_size: 2,
            failing: vec!["secrets".into()],
            ..Fake::default()
        };
        let cms = (0..5)
            .map(|i| meta(Some("a"), &format!("cm{i}"), &[]))
            .collect();
        fake.objects.insert("configmaps".into(), cms);
        let types = [
            ty("", "ConfigMap", "configmaps", true),
            ty("", "Secret", "secrets", true),
        ];
        let (objects, skipped) = collect(&fake, &types, None).await;
        assert_eq!(objects.len(), 5);
        assert_eq!(skipped.len(), 1);
        assert_eq!(skipped[0].what, "secrets");
        assert!(skipped[0].reason.contains("forbidden"), "{:?}", skipped[0]);
    }

    #[tokio::test]
    async fn a_namespace_leaves_cluster_scoped_types_out() {
        let mut fake = Fake::default();
        fake.objects
            .insert("namespaces".into(), vec![meta(None, "a", &[])]);
        fake.objects.insert(
            "configmaps".into(),
            vec![meta(Some("a"), "x", &[]), meta(Some("b"), "y", &[])],
        );
        let types = [
            ty("", "Namespace", "namespaces", false),
            ty("", "ConfigMap", "configmaps", true),
        ];
        let (objects, _) = collect(&fake, &types, Some("a")).await;
        let names: Vec<_> = objects.iter().filter_map(|o| o.meta.name.clone()).collect();
        assert_eq!(names, ["x"]);
    }

    #[tokio::test]
    async fn an_expired_continue_token_lists_the_type_again() {
        let mut fake = Fake {
            page_size: 2,
            expiring: 1.into(),
            ..Fake::default()
        };
        let cms = (0..5)
            .map(|i| meta(Some("a"), &format!("cm{i}"), &[]))
            .collect();
        fake.objects.insert("configmaps".into(), cms);
        let types = [ty("", "ConfigMap", "configmaps", true)];
        let (objects, skipped) = collect(&fake, &types, None).await;
        // The first page was handed over twice (the scan keeps one per uid), every object once more.
        let names: std::collections::BTreeSet<_> =
            objects.iter().filter_map(|o| o.meta.name.clone()).collect();
        assert_eq!((objects.len(), names.len(), skipped.len()), (7, 5, 0));
        fake.expiring = 10.into();
        let (_, skipped) = collect(&fake, &types, None).await;
        assert!(skipped[0].reason.contains("410"), "{:?}", skipped);
    }
}
