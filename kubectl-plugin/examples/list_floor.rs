//! The floor of `kubectl single-owner owners` (bench/owners.py, `make bench-owners`): the same
//! metadata-only lists of every listable type, with the same page size and the same number of
//! types at once, through the same client, and nothing else done (no owner read, no rule run,
//! no lookup). What a scan costs above this is the plugin's own work.
//!
//! usage: list_floor [--kubeconfig FILE]   (prints `types objects` on stdout)

use std::process::ExitCode;

use anyhow::{Context, Result};
use futures::stream::{self, StreamExt};
use kube::api::{Api, DynamicObject, ListParams};
use kube::discovery::{Discovery, verbs};

/// As the plugin's listing (kubectl-plugin/src/listing.rs).
const PAGE_SIZE: u32 = 500;
const CONCURRENCY: usize = 8;

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
            let api: Api<DynamicObject> = Api::all_with(client.clone(), ar);
            async move {
                let mut n = 0;
                let mut params = ListParams::default().limit(PAGE_SIZE);
                loop {
                    let Ok(page) = api.list_metadata(&params).await else {
                        return n;
                    };
                    n += page.items.len();
                    match page.metadata.continue_.filter(|t| !t.is_empty()) {
                        Some(token) => params = params.continue_token(&token),
                        None => return n,
                    }
                }
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    Ok((types.len(), counts.iter().sum()))
}
