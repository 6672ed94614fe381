//! The floor of `kubectl single-owner owners` (bench/owners.py, `make bench-owners`): the same
//! metadata-only lists of every listable type, with the same page size, the same number of
//! types at once and the same encoding (protobuf, as kubectl-plugin/src/protobuf.rs asks for
//! it), through the same client, and nothing else done: no object decoded (a page is read for
//! its continue token and counted), no owner read, no rule run, no lookup. What a scan costs
//! above this is the plugin's own work.
//!
//! usage: list_floor [--kubeconfig FILE]   (prints `types objects` on stdout)

use std::process::ExitCode;

use anyhow::{Context, Result};
use bytes::Bytes;
use futures::stream::{self, StreamExt};
use kube::Resource;
use kube::api::{DynamicObject, ListParams};
use kube::discovery::{Discovery, verbs};
use prost::Message;

/// As the plugin's listing (kubectl-plugin/src/listing.rs).
const PAGE_SIZE: u32 = 500;
const CONCURRENCY: usize = 8;
const ACCEPT: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json";

/// runtime.Unknown, whose `raw` is the list.
#[derive(Clone, PartialEq, Message)]
struct Unknown {
    #[prost(bytes = "bytes", tag = "2")]
    raw: Bytes,
}

/// meta.v1.PartialObjectMetadataList with its items left undecoded.
#[derive(Clone, PartialEq, Message)]
struct List {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ListMeta>,
    #[prost(bytes = "bytes", repeated, tag = "2")]
    items: Vec<Bytes>,
}

#[derive(Clone, PartialEq, Message)]
struct ListMeta {
    #[prost(string, tag = "3")]
    continue_: String,
}

/// One page: how many objects, and the next page's token. `None`: the type cannot be listed
/// (or is not served in protobuf), and is left, as the plugin skips it.
async fn page(client: &kube::Client, url: &str, params: &ListParams) -> Option<(usize, String)> {
    let mut request = kube::core::Request::new(url).list_metadata(params).ok()?;
    (request.headers_mut()).insert(http::header::ACCEPT, http::HeaderValue::from_static(ACCEPT));
    let response = client
        .send(request.map(kube::client::Body::from))
        .await
        .ok()?;
    if !response.status().is_success() {
        return None;
    }
    let body = response.into_body().collect_bytes().await.ok()?;
    if !body.starts_with(b"k8s\0") {
        return None;
    }
    let raw = Unknown::decode(body.slice(4..)).ok()?.raw;
    let list = List::decode(raw).ok()?;
    Some((
        list.items.len(),
        list.metadata.map(|m| m.continue_).unwrap_or_default(),
    ))
}

fn main() -> ExitCode {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("list_floor: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(run()) {
        Ok((types, objects)) => {
            println!("{types} {objects}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("list_floor: {e:#}");
            ExitCode::from(2)
        }
    }
}

async fn client() -> Result<kube::Client> {
    let args: Vec<String> = std::env::args().collect();
    let config = match args.iter().position(|a| a == "--kubeconfig") {
        Some(i) => {
            let path = args.get(i + 1).context("--kubeconfig needs a file")?;
            let kc = kube::config::Kubeconfig::read_from(path)?;
            kube::Config::from_custom_kubeconfig(kc, &Default::default()).await?
        }
        None => kube::Config::infer().await?,
    };
    Ok(kube::Client::try_from(config)?)
}

async fn run() -> Result<(usize, usize)> {
    let client = client().await?;
    let discovery = Discovery::new(client.clone()).run().await?;
    let types: Vec<_> = (discovery.groups())
        .flat_map(|g| g.recommended_resources())
        .filter(|(ar, caps)| caps.supports_operation(verbs::LIST) && !ar.plural.contains('/'))
        .map(|(ar, _)| ar)
        .collect();
    let counts: Vec<usize> = stream::iter(types.iter())
        .map(|ar| {
            let (client, url) = (client.clone(), DynamicObject::url_path(ar, None));
            async move {
                let mut n = 0;
                let mut params = ListParams::default().limit(PAGE_SIZE);
                loop {
                    let Some((items, token)) = page(&client, &url, &params).await else {
                        return n;
                    };
                    n += items;
                    match token.is_empty() {
                        false => params = params.continue_token(&token),
                        true => return n,
                    }
                }
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    Ok((types.len(), counts.iter().sum()))
}
