//! The policy's lookups (`single_owner_policy::tools::cluster::Cluster`), answered by the API server
//! through kube-rs: what the tool rules read when the object alone cannot decide (the
//! HelmRelease of a release named otherwise, a boxcutter revision's extension, a CSV's
//! replacement chain).
//!
//! The rules call lookups synchronously; this client is async, so the rules run on a blocking
//! thread (`tokio::task::spawn_blocking`) and each lookup blocks on the runtime's handle.
//! Errors are in the words policy-server's host capability uses (`Cannot find <apiVersion>/
//! <kind> named '<name>' inside of namespace '<Some("ns") or None>'`), so the rules' refusals
//! say what they say in a cluster. Answers are remembered for the whole scan: many objects
//! of one owner ask the same question.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kube::api::{Api, DynamicObject, ListParams};
use single_owner_policy::tools::cluster::{Cluster, Get, List};
use tokio::runtime::Handle;

use crate::discovery::Discovered;

pub struct KubeCluster {
    client: kube::Client,
    handle: Handle,
    discovered: Arc<Discovered>,
    answers: Mutex<HashMap<String, Result<Vec<u8>, String>>>,
}

impl KubeCluster {
    /// Must be made on the runtime, and used off it (a blocking thread).
    pub fn new(client: kube::Client, discovered: Arc<Discovered>) -> KubeCluster {
        KubeCluster {
            client,
            handle: Handle::current(),
            discovered,
            answers: Mutex::new(HashMap::new()),
        }
    }

    fn api(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
    ) -> Result<Api<DynamicObject>, String> {
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        let Some(ty) = self.discovered.find(group, kind) else {
            return Err(format!(
                "Cannot find resource {kind} of {api_version}: the API server does not serve it"
            ));
        };
        let mut ar = ty.api_resource();
        // The version the rule asks for, with the plural discovery found.
        ar.version = api_version
            .rsplit_once('/')
            .map_or(api_version, |(_, v)| v)
            .to_string();
        ar.api_version = api_version.to_string();
        Ok(match namespace {
            Some(ns) if ty.namespaced => Api::namespaced_with(self.client.clone(), ns, &ar),
            _ => Api::all_with(self.client.clone(), &ar),
        })
    }

    fn remembered(
        &self,
        key: String,
        answer: impl FnOnce() -> Result<Vec<u8>, String>,
    ) -> Result<Vec<u8>, String> {
        if let Some(found) = self.answers.lock().ok().and_then(|a| a.get(&key).cloned()) {
            return found;
        }
        let found = answer();
        if let Ok(mut answers) = self.answers.lock() {
            answers.insert(key, found.clone());
        }
        found
    }
}

impl Cluster for KubeCluster {
    fn get(&self, what: &Get) -> Result<Vec<u8>, String> {
        let key = format!(
            "get {} {} {:?} {}",
            what.api_version, what.kind, what.namespace, what.name
        );
        self.remembered(key, || {
            let api = self.api(what.api_version, what.kind, what.namespace)?;
            match self.handle.block_on(api.get_opt(what.name)) {
                Ok(Some(found)) => serde_json::to_vec(&found).map_err(|e| e.to_string()),
                Ok(None) => Err(format!(
                    "Cannot find {}/{} named '{}' inside of namespace '{:?}'",
                    what.api_version, what.kind, what.name, what.namespace
                )),
                Err(e) => Err(format!("Callback evaluation failure: {e}")),
            }
        })
    }

    fn list(&self, what: &List) -> Result<Vec<u8>, String> {
        let key = format!(
            "list {} {} {:?} {:?}",
            what.api_version, what.kind, what.label_selector, what.field_selector
        );
        self.remembered(key, || {
            let api = self.api(what.api_version, what.kind, None)?;
            // The cache, not etcd (resourceVersion 0), as policy-server's lookups (lookups.rs).
            let mut params = ListParams::default().at("0");
            if let Some(l) = what.label_selector {
                params = params.labels(l);
            }
            if let Some(f) = what.field_selector {
                params = params.fields(f);
            }
            match self.handle.block_on(api.list(&params)) {
                Ok(list) => serde_json::to_vec(&serde_json::json!({"items": list.items}))
                    .map_err(|e| e.to_string()),
                Err(e) => Err(format!("Callback evaluation failure: {e}")),
            }
        })
    }
}
